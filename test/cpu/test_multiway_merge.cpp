// lm::multiway_merge and multiway_merge_by_key on lm::serial (the oracle)
// and lm::omp::par (teams of 1, 2, 3 and 8 threads) against an independent
// reference: std::stable_sort of the ranges concatenated in order, which is
// exactly the stable k-way merge (ties: the lower range, then the earlier
// position). K = 0, 1, 2, 3, 8, 9 and 1000, empty ranges among them, random,
// few-distinct and all-equal keys, lm::less and lm::greater; the values tag
// each element with its range and position, so stability shows. Bad input:
// overlapping outputs, reversed ranges, unsorted ranges under .checked().
#define BOOST_TEST_MODULE libmerge_cpu_multiway_merge
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <libmerge/libmerge.hpp>

namespace lm = libmerge;

namespace {

using ranges_t = std::vector<std::pair<std::vector<int>::const_iterator, std::vector<int>::const_iterator>>;

// K sorted runs of random lengths (a third of them empty when `empties`),
// keys drawn from [0, span).
std::vector<std::vector<int>> make_runs(std::mt19937_64& g, int k, int max_len, int span, bool empties, bool greater) {
  std::vector<std::vector<int>> runs(static_cast<std::size_t>(k));
  for (auto& r : runs) {
    const bool empty = empties && g() % 3 == 0;
    r.resize(empty ? 0 : static_cast<std::size_t>(g() % static_cast<std::uint64_t>(max_len + 1)));
    for (int& x : r) x = static_cast<int>(g() % static_cast<std::uint64_t>(span));
    if (greater) {
      std::sort(r.begin(), r.end(), std::greater<int>());
    } else {
      std::sort(r.begin(), r.end());
    }
  }
  return runs;
}

ranges_t ranges_of(const std::vector<std::vector<int>>& runs) {
  ranges_t r;
  for (const auto& v : runs) r.push_back({v.begin(), v.end()});
  return r;
}

// The reference: (key, tag) of every element, stably sorted by key; tag =
// range * 2^20 + position.
template <class Comp>
std::vector<std::pair<int, std::int64_t>> expected(const std::vector<std::vector<int>>& runs, Comp comp) {
  std::vector<std::pair<int, std::int64_t>> all;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    for (std::size_t i = 0; i < runs[k].size(); ++i) all.push_back({runs[k][i], std::int64_t(k) << 20 | std::int64_t(i)});
  }
  std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return comp(a.first, b.first); });
  return all;
}

template <class Policy, class Comp>
void check_case(const Policy& policy, const std::vector<std::vector<int>>& runs, Comp comp, const std::string& what) {
  const auto want = expected(runs, comp);
  const ranges_t ranges = ranges_of(runs);
  std::vector<int> keys(want.size() + 1, -7);  // one slot past the end: nothing is written there
  const auto end = lm::multiway_merge(policy, ranges.begin(), ranges.end(), keys.begin(), comp);
  BOOST_TEST_REQUIRE((end == keys.begin() + static_cast<std::ptrdiff_t>(want.size())), what);
  BOOST_TEST_REQUIRE(keys.back() == -7, what);
  for (std::size_t i = 0; i < want.size(); ++i) BOOST_TEST_REQUIRE(keys[i] == want[i].first, what << " key " << i);

  std::vector<std::vector<std::int64_t>> tags(runs.size());
  std::vector<std::vector<std::int64_t>::const_iterator> vals;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    for (std::size_t i = 0; i < runs[k].size(); ++i) tags[k].push_back(std::int64_t(k) << 20 | std::int64_t(i));
    vals.push_back(tags[k].begin());
  }
  std::vector<int> k_out(want.size());
  std::vector<std::int64_t> v_out(want.size(), -1);
  const auto ends = lm::multiway_merge_by_key(policy, ranges.begin(), ranges.end(), vals.begin(), k_out.begin(),
                                              v_out.begin(), comp);
  BOOST_TEST_REQUIRE((ends.first == k_out.end() && ends.second == v_out.end()), what);
  for (std::size_t i = 0; i < want.size(); ++i) {
    BOOST_TEST_REQUIRE((k_out[i] == want[i].first && v_out[i] == want[i].second), what << " pair " << i);
  }
}

// Every policy under test: the oracle, then OpenMP teams of 1, 2, 3 and 8.
template <class F>
void each_policy(F&& f) {
  f(lm::serial, "serial");
#if defined(_OPENMP)
  for (int t : {1, 2, 3, 8}) f(lm::omp::par.threads(t), ("omp x" + std::to_string(t)).c_str());
#endif
}

}  // namespace

BOOST_AUTO_TEST_CASE(k_way_merges_match_a_stable_sort_of_the_concatenation) {
  std::mt19937_64 g(20261205);
  const int ks[] = {0, 1, 2, 3, 8, 9, 1000};
  for (int k : ks) {
    for (int shape = 0; shape < 6; ++shape) {
      const int span = shape % 3 == 0 ? 1 << 30 : (shape % 3 == 1 ? 5 : 1);  // random, few distinct, all equal
      const bool greater = shape >= 3;
      const int max_len = k >= 1000 ? 40 : 3000;
      const auto runs = make_runs(g, k, max_len, span, shape % 2 == 0, greater);
      const std::string what = "K=" + std::to_string(k) + " shape " + std::to_string(shape);
      each_policy([&](const auto& policy, const char* name) {
        if (greater) {
          check_case(policy, runs, lm::greater<>(), what + " greater on " + name);
        } else {
          check_case(policy, runs, lm::less<>(), what + " less on " + name);
        }
      });
    }
  }
}

BOOST_AUTO_TEST_CASE(one_long_run_among_empty_ones) {
  std::vector<std::vector<int>> runs(7);
  runs[3].resize(100000);
  for (std::size_t i = 0; i < runs[3].size(); ++i) runs[3][i] = static_cast<int>(i / 3);
  each_policy([&](const auto& policy, const char* name) { check_case(policy, runs, lm::less<>(), name); });
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused_with_nothing_written) {
  std::vector<int> a = {1, 3, 5}, b = {2, 4}, c = {9, 0};  // c is not sorted
  std::vector<int> out(8, -1);
  const std::vector<int> untouched = out;
  each_policy([&](const auto& policy, const char* name) {
    BOOST_TEST_CONTEXT(name) {
      // The output over an input.
      std::vector<std::pair<int*, int*>> over = {{a.data(), a.data() + 3}, {b.data(), b.data() + 2}};
      BOOST_CHECK_EXCEPTION(lm::multiway_merge(policy, over.begin(), over.end(), b.data() + 1), std::invalid_argument,
                            [](const std::invalid_argument& e) {
                              return std::string(e.what()).find("out overlaps ranges[1]") != std::string::npos;
                            });
      // A reversed range.
      std::vector<std::pair<int*, int*>> reversed = {{a.data(), a.data() + 3}, {b.data() + 2, b.data()}};
      BOOST_CHECK_EXCEPTION(lm::multiway_merge(policy, reversed.begin(), reversed.end(), out.begin()),
                            std::invalid_argument, [](const std::invalid_argument& e) {
                              return std::string(e.what()).find("reversed range [ranges[1].first") != std::string::npos;
                            });
      // An unsorted range under .checked(); unchecked, the call runs.
      std::vector<std::pair<int*, int*>> unsorted = {{a.data(), a.data() + 3}, {b.data(), b.data() + 2},
                                                     {c.data(), c.data() + 2}};
      BOOST_CHECK_EXCEPTION(lm::multiway_merge(policy.checked(), unsorted.begin(), unsorted.end(), out.begin()),
                            std::invalid_argument, [](const std::invalid_argument& e) {
                              return std::string(e.what()).find("ranges[2] is not sorted") != std::string::npos;
                            });
      BOOST_TEST(out == untouched, boost::test_tools::per_element());
      // Values over the key output.
      std::vector<int> va = {0, 0, 0}, vb = {0, 0};
      std::vector<int*> vals = {va.data(), vb.data()};
      std::vector<int> keys(5);
      std::vector<std::pair<int*, int*>> ok = {{a.data(), a.data() + 3}, {b.data(), b.data() + 2}};
      BOOST_CHECK_THROW(lm::multiway_merge_by_key(policy, ok.begin(), ok.end(), vals.begin(), keys.begin(), va.begin()),
                        std::invalid_argument);
    }
  });
}

// Unsorted ranges under an unchecked policy break the precondition: the
// output is unspecified, but every element lands exactly once (each team's
// shares still cover every range once) and nothing past the output is
// written.
BOOST_AUTO_TEST_CASE(unsorted_input_unchecked_writes_each_element_once) {
  std::mt19937_64 g(77);
  for (int iter = 0; iter < 40; ++iter) {
    const int k = 2 + static_cast<int>(g() % 7);
    std::vector<std::vector<int>> runs(static_cast<std::size_t>(k));
    std::vector<int> all;
    for (auto& r : runs) {
      r.resize(g() % 2000);
      for (int& x : r) x = static_cast<int>(g() % 100);  // not sorted
      all.insert(all.end(), r.begin(), r.end());
    }
    std::sort(all.begin(), all.end());
    const ranges_t ranges = ranges_of(runs);
    each_policy([&](const auto& policy, const char* name) {
      std::vector<int> out(all.size() + 1, -7);
      lm::multiway_merge(policy, ranges.begin(), ranges.end(), out.begin());
      BOOST_TEST_REQUIRE(out.back() == -7, name);
      out.pop_back();
      std::sort(out.begin(), out.end());
      BOOST_TEST_REQUIRE((out == all), "case " << iter << " on " << name);
    });
  }
}
