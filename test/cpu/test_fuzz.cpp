// A differential fuzzer over the CPU backends: random sizes (0 .. 2^16 here,
// biased to powers of two and their neighbours), every fundamental key type
// (test/support/fuzz_inputs.hpp), distributions (runs, duplicates, sorted,
// reversed, all equal; NaN and both zeros for floating point), comparators
// (less, greater, one with wide ties) and algorithms: the three sorts, both
// merges (keys and values compared), sorted_search with both bounds and every
// search type on both sides, sorted_equality_count. lm::serial against the
// standard library (std::stable_sort, std::merge, std::lower_bound and
// upper_bound loops below), and lm::omp::par on teams of 1 to 8 threads
// against the same references (what lm::serial gave), element for element.
//
//   LIBMERGE_FUZZ_SECONDS  time budget (default 15: CI runs it on every push)
//   LIBMERGE_FUZZ_SEED     first seed (default 1); each case prints its seed
//                          on failure, and that seed alone reproduces it
#define BOOST_TEST_MODULE libmerge_cpu_fuzz
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <libmerge/libmerge.hpp>

#include "fuzz_inputs.hpp"
#include "fuzz_paths.hpp"

namespace lm = libmerge;

namespace {

using fuzz::make_keys;
using fuzz::pick_size;
using fuzz::same;

template <class F>
void each_policy(std::mt19937_64& g, F&& f) {
  f(lm::serial, "serial");
#if defined(_OPENMP)
  const int threads = 1 + static_cast<int>(g() % 8);
  f(lm::omp::par.threads(threads), "omp");
#else
  (void)g;
#endif
}

// merge_sort, merge_sort_by_key, merge_sort_indices against std::stable_sort
// of the positions (keys compared bit for bit: -0 and +0 keep their order).
template <class T, class Comp>
void sort_case(std::mt19937_64& g, Comp comp, const std::string& what) {
  const auto keys = make_keys<T>(g, pick_size(g));
  std::vector<std::int64_t> perm(keys.size());
  std::iota(perm.begin(), perm.end(), std::int64_t(0));
  std::stable_sort(perm.begin(), perm.end(), [&](std::int64_t a, std::int64_t b) {
    return comp(keys[static_cast<std::size_t>(a)], keys[static_cast<std::size_t>(b)]);
  });
  std::vector<T> want(keys.size());
  for (std::size_t i = 0; i < perm.size(); ++i) want[i] = keys[static_cast<std::size_t>(perm[i])];
  const std::string n = " n=" + std::to_string(keys.size());
  each_policy(g, [&](const auto& policy, const char* name) {
    auto k = keys;
    lm::merge_sort(policy, k.begin(), k.end(), comp);
    BOOST_TEST_REQUIRE(same(k, want), what << " merge_sort on " << name << n);
    k = keys;
    std::vector<std::int64_t> v(keys.size());
    std::iota(v.begin(), v.end(), std::int64_t(0));
    lm::merge_sort_by_key(policy, k.begin(), k.end(), v.begin(), comp);
    BOOST_TEST_REQUIRE((same(k, want) && v == perm), what << " merge_sort_by_key on " << name << n);
    std::vector<std::int32_t> idx(keys.size(), -1);
    k = keys;
    lm::merge_sort_indices(policy, k.begin(), k.end(), idx.begin(), comp);
    BOOST_TEST_REQUIRE((same(k, want) && std::equal(idx.begin(), idx.end(), perm.begin())),
                       what << " merge_sort_indices on " << name << n);
  });
}

// merge and merge_by_key against std::merge of (key, position) pairs: keys
// and values both compared.
template <class T, class Comp>
void merge_case(std::mt19937_64& g, const std::vector<T>& a, const std::vector<T>& b, Comp comp,
                const std::string& what) {
  std::vector<std::int64_t> av(a.size()), bv(b.size());
  std::iota(av.begin(), av.end(), std::int64_t(0));
  std::iota(bv.begin(), bv.end(), static_cast<std::int64_t>(a.size()));
  std::vector<std::pair<T, std::int64_t>> pa, pb, pw(a.size() + b.size());
  for (std::size_t i = 0; i < a.size(); ++i) pa.emplace_back(a[i], av[i]);
  for (std::size_t i = 0; i < b.size(); ++i) pb.emplace_back(b[i], bv[i]);
  std::merge(pa.begin(), pa.end(), pb.begin(), pb.end(), pw.begin(),
             [&](const auto& x, const auto& y) { return comp(x.first, y.first); });
  std::vector<T> want_k(pw.size());
  std::vector<std::int64_t> want_v(pw.size());
  for (std::size_t i = 0; i < pw.size(); ++i) {
    want_k[i] = pw[i].first;
    want_v[i] = pw[i].second;
  }
  const std::string sizes = " |A|=" + std::to_string(a.size()) + " |B|=" + std::to_string(b.size());
  each_policy(g, [&](const auto& policy, const char* name) {
    std::vector<T> k(want_k.size());
    lm::merge(policy, a.begin(), a.end(), b.begin(), b.end(), k.begin(), comp);
    BOOST_TEST_REQUIRE(same(k, want_k), what << " merge on " << name << sizes);
    std::vector<std::int64_t> v(want_k.size(), -1);
    k.assign(want_k.size(), T{});
    lm::merge_by_key(policy, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), k.begin(), v.begin(),
                     comp);
    BOOST_TEST_REQUIRE((same(k, want_k) && v == want_v), what << " merge_by_key on " << name << sizes);
  });
}

// The output a search type writes into: bounds into int64, match flags into
// bool, bounds with the match in the top bit into uint64.
template <lm::search_type S>
using out_t = std::conditional_t<S == lm::search_type::match, bool,
                                 std::conditional_t<S == lm::search_type::index_match, std::uint64_t, std::int64_t>>;

// What a side of a search should hold: for each needle, its bound in the
// haystack (lower or upper) and whether an equal key is there, encoded as S
// says; `matches` counts the needles with one (when S reports matches).
template <lm::search_type S, class T, class Comp>
std::vector<out_t<S>> expected_side(const std::vector<T>& needles, const std::vector<T>& hay, bool lower, Comp comp,
                                    std::int64_t& matches) {
  std::vector<out_t<S>> want(needles.size());
  matches = 0;
  for (std::size_t i = 0; i < needles.size(); ++i) {
    const auto lo = std::lower_bound(hay.begin(), hay.end(), needles[i], comp);
    const auto hi = std::upper_bound(hay.begin(), hay.end(), needles[i], comp);
    const auto bound = static_cast<std::uint64_t>((lower ? lo : hi) - hay.begin());
    const bool match = lo != hi;
    if (S == lm::search_type::match) want[i] = static_cast<out_t<S>>(match);
    if (S == lm::search_type::index) want[i] = static_cast<out_t<S>>(bound);
    if (S == lm::search_type::index_match) want[i] = static_cast<out_t<S>>(bound | (match ? 1ull << 63 : 0));
    if (lm::detail::writes_match(S)) matches += match;
  }
  return want;
}

// One search: bounds::lower gives A lower bounds into B and B upper bounds
// into A, bounds::upper the reverse; a side of type none is never written.
template <lm::bounds Bounds, lm::search_type TA, lm::search_type TB, class T, class Comp>
void search_case(std::mt19937_64& g, const std::vector<T>& a, const std::vector<T>& b, Comp comp,
                 const std::string& what) {
  constexpr bool lower = Bounds == lm::bounds::lower;
  std::int64_t ma = 0, mb = 0;
  const auto want_a = expected_side<TA>(a, b, lower, comp, ma);
  const auto want_b = expected_side<TB>(b, a, !lower, comp, mb);
  const bool in_place = g() % 2 == 0;  // the form with counts_out, or the returning one
  each_policy(g, [&](const auto& policy, const char* name) {
    // Arrays, not vectors: std::vector<bool> has no data().
    std::unique_ptr<out_t<TA>[]> ga(new out_t<TA>[a.size()]());
    std::unique_ptr<out_t<TB>[]> gb(new out_t<TB>[b.size()]());
    auto* pa = TA == lm::search_type::none ? nullptr : ga.get();
    auto* pb = TB == lm::search_type::none ? nullptr : gb.get();
    lm::match_counts m{-1, -1};
    if (in_place) {
      lm::sorted_search<Bounds, TA, TB>(policy, a.begin(), a.end(), b.begin(), b.end(), pa, pb, &m, comp);
    } else {
      m = lm::sorted_search<Bounds, TA, TB>(policy, a.begin(), a.end(), b.begin(), b.end(), pa, pb, comp);
    }
    const bool ok_a = TA == lm::search_type::none || std::equal(want_a.begin(), want_a.end(), ga.get());
    const bool ok_b = TB == lm::search_type::none || std::equal(want_b.begin(), want_b.end(), gb.get());
    BOOST_TEST_REQUIRE((ok_a && ok_b && m.a == ma && m.b == mb),
                       what << " sorted_search<" << (lower ? "lower" : "upper") << ", " << int(TA) << ", " << int(TB)
                            << "> on " << name << " |A|=" << a.size() << " |B|=" << b.size());
  });
}

// Both bounds over one pair of search types (fuzz::with_search_pair), then
// sorted_equality_count.
template <class T, class Comp>
void searches(std::mt19937_64& g, const std::vector<T>& a, const std::vector<T>& b, Comp comp, const std::string& w) {
  fuzz::with_search_pair(g, [&](auto ta, auto tb) {
    search_case<lm::bounds::lower, decltype(ta)::value, decltype(tb)::value>(g, a, b, comp, w);
    search_case<lm::bounds::upper, decltype(ta)::value, decltype(tb)::value>(g, a, b, comp, w);
  });
  std::vector<std::int64_t> want(a.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    want[k] = std::upper_bound(b.begin(), b.end(), a[k], comp) - std::lower_bound(b.begin(), b.end(), a[k], comp);
  }
  each_policy(g, [&](const auto& policy, const char* name) {
    std::vector<std::int64_t> got(a.size(), -1);
    lm::sorted_equality_count(policy, a.begin(), a.end(), b.begin(), b.end(), got.begin(), comp);
    BOOST_TEST_REQUIRE((got == want), w << " sorted_equality_count on " << name);
  });
}

template <class T, class Comp>
void one_case(std::mt19937_64& g, Comp comp, const std::string& what) {
  const int algorithm = static_cast<int>(g() % 3);
  if (algorithm == 0) return sort_case<T>(g, comp, what);
  auto a = make_keys<T>(g, pick_size(g));
  auto b = make_keys<T>(g, pick_size(g));
  std::stable_sort(a.begin(), a.end(), comp);
  std::stable_sort(b.begin(), b.end(), comp);
  if (algorithm == 1) return merge_case(g, a, b, comp, what);
  searches(g, a, b, comp, what);
}

// A plan as the CUDA sort makes it (fuzz_paths.hpp), for the checks below.
fuzz::sort_plan plan(fuzz::engine how, std::vector<int> ways = {}, int box = 0, bool numbers = true) {
  fuzz::sort_plan p;
  p.n = 1 << 20;
  p.how = how;
  p.ways = std::move(ways);
  p.box = box;
  p.numbers = numbers;
  p.bs_nv = 16896;
  return p;
}

bool has(const std::vector<std::string>& names, const std::string& s) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

void one_seed(std::uint64_t seed) {
  fuzz::with_seed(seed, [](std::mt19937_64& g, auto key, auto comp, const std::string& what) {
    one_case<decltype(key)>(g, comp, what);
  });
}

double env_or(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atof(v) : fallback;
}

}  // namespace

BOOST_AUTO_TEST_CASE(cpu_backends_against_the_standard_library) {
  const double seconds = env_or("LIBMERGE_FUZZ_SECONDS", 15);
  const auto first = static_cast<std::uint64_t>(env_or("LIBMERGE_FUZZ_SEED", 1));
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t seed = first;
  for (; std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds; ++seed) {
    one_seed(seed);
  }
  BOOST_TEST_MESSAGE("fuzzed seeds " << first << " .. " << seed - 1 << " in " << seconds << " s");
  BOOST_TEST(seed > first);
}

// The GPU fuzzer's path names (test/gpu/cuda_fuzz.cu), checked here where
// they can run: each plan and input gets the names it should, and every
// path the GPU run must take has a plan and an input that take it.
BOOST_AUTO_TEST_CASE(gpu_sort_paths_are_named_and_reachable) {
  using fuzz::engine;
  fuzz::input_facts random{1, false, false}, sorted{0, false, false}, runs{3 * 16896, false, false};
  fuzz::input_facts nan_zeros{1, true, true};
  auto names = fuzz::path_names("keys", plan(engine::separate, {4, 4, 2}, 1), nan_zeros);
  BOOST_TEST(has(names, "keys: 4-way passes + 2-way last"));
  BOOST_TEST(has(names, "keys: mid-size tiles"));
  BOOST_TEST(has(names, "keys: 4-way numeric, NaN and +-0"));
  BOOST_TEST(!has(names, "keys: 4-way, any comparator"));
  names = fuzz::path_names("by_key", plan(engine::separate, {2, 2}, 0, false), runs);
  BOOST_TEST(has(names, "by_key: 2-way passes"));
  BOOST_TEST(has(names, "by_key: sorted runs (separate kernels)"));
  BOOST_TEST(!has(names, "by_key: 4-way, any comparator"));  // 2-way passes only
  names = fuzz::path_names("indices", plan(engine::one_kernel), sorted);
  BOOST_TEST((names == std::vector<std::string>{"indices: one kernel", "indices: presorted (one kernel)"}));
  BOOST_TEST(fuzz::path_names("keys", plan(engine::one_tile), sorted).size() == 1u);  // the block sort alone
  // Every required path, from the plans and inputs a GPU run can meet.
  fuzz::coverage c;
  for (const char* kind : {"keys", "by_key", "indices"}) {
    for (const auto& p : {plan(engine::one_tile), plan(engine::one_kernel_after_block_sort), plan(engine::one_kernel),
                          plan(engine::separate, {2, 2}), plan(engine::separate, {4, 4}, 1),
                          plan(engine::separate, {4, 2}, 2), plan(engine::separate, {4}, 0, false)}) {
      for (const auto& in : {random, sorted, runs, nan_zeros}) c.add(fuzz::path_names(kind, p, in));
    }
  }
  BOOST_TEST(c.missed().empty());
  BOOST_TEST(fuzz::coverage().missed().size() == fuzz::required_paths().size());
}

BOOST_AUTO_TEST_CASE(gpu_fuzz_inputs) {
  std::mt19937_64 g(7);
  // What the sortedness read finds: sorted runs of their width, none in sorted input.
  auto runs = fuzz::make_keys<int>(g, 10 * 17000 + 5, fuzz::runs_of_width, 17000);
  BOOST_TEST(fuzz::describe(runs, lm::less<>()).descent_gcd == 17000u);
  BOOST_TEST(fuzz::describe(fuzz::make_keys<int>(g, 1000, fuzz::ascending), lm::less<>()).descent_gcd == 0u);
  BOOST_TEST(fuzz::describe(fuzz::make_keys<int>(g, 1000, fuzz::descending), lm::less<>()).descent_gcd == 1u);
  const auto f = fuzz::describe(fuzz::make_keys<float>(g, 100000, fuzz::random_keys), lm::less<>());
  BOOST_TEST((f.nan && f.zeros && f.descent_gcd == 1u));
  // Sizes: inside the range, a share at each edge and its neighbours.
  const std::vector<std::int64_t> edges{4352, std::int64_t(1) << 23};
  int at_edges = 0;
  for (int i = 0; i < 30000; ++i) {
    const std::int64_t n = fuzz::draw_size(g, 2, std::int64_t(1) << 27, edges);
    BOOST_TEST_REQUIRE((n >= 2 && n <= (std::int64_t(1) << 27)));
    at_edges += std::abs(n - edges[0]) <= 1 || std::abs(n - edges[1]) <= 1;
  }
  BOOST_TEST((at_edges > 8000 && at_edges < 12000));
  // Sorted inputs without a sort, both orders, every type.
  for (int t = 0; t < fuzz::key_types; ++t) {
    fuzz::with_key_type(t, [&](auto key, const char* name) {
      using T = decltype(key);
      const auto up = fuzz::make_sorted<T>(g, 100000, false);
      const auto down = fuzz::make_sorted<T>(g, 100000, true);
      BOOST_TEST(std::is_sorted(up.begin(), up.end(), lm::less<>()), name);
      BOOST_TEST(std::is_sorted(down.begin(), down.end(), lm::greater<>()), name);
    });
  }
}
