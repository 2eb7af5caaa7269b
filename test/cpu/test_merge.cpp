// merge and merge_by_key with lm::serial against std::merge: both inputs
// sorted, (|A|, |B|) crossing the standard sizes (empty sides and very unequal
// sides included), every key type, distribution and comparator, returned end
// iterators, no write past the end, and mixed iterator types.
//
// Each pair runs with B drawn independently of A and with B drawn from A's
// random stream (shared keys). Runtime limit: pairs with a side of 10^6 run
// only with lm::less<> and then only for distribution::random (both pairings)
// and distribution::all_equal (shared pairing: equal keys across A and B);
// every other pair runs with every comparator, distribution and pairing.
#define BOOST_TEST_MODULE libmerge_cpu_merge
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <algorithm>
#include <functional>
#include <type_traits>
#include <vector>

#include "cpu_test_helpers.hpp"

namespace lm = libmerge;
using cpu_test::check_same;
using cpu_test::comp_name;
using cpu_test::for_each_comparator;
using cpu_test::inputs;
using cpu_test::mix_seed;
using cpu_test::pairing;
using cpu_test::same_element;
using cpu_test::type_name;
using test_support::distribution;
using test_support::key_types;
using test_support::record;
using test_support::record_less;

using cpu_test::sentinel;

namespace {

// merge and merge_by_key of one (a, b) pair, checked against std::merge and
// the reference merge_by_key (values: A's position i, B's |A| + j).
template <class T, class Comp>
void check_merge_pair(const std::vector<T>& a, const std::vector<T>& b, Comp comp) {
  const std::size_t n = a.size() + b.size();
  const auto expected = test_support::reference_merge(a, b, comp);

  // keys only, vector iterators; one extra element must stay untouched
  std::vector<T> out(n + 1, sentinel<T>());
  const auto end = lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), out.begin(), comp);
  BOOST_TEST((end - out.begin()) == static_cast<std::ptrdiff_t>(n), "merge returned end");
  BOOST_TEST(same_element(out.back(), sentinel<T>()), "merge wrote past the end of its output");
  out.pop_back();
  check_same(out, expected, "merge keys");

  // by key
  std::vector<std::int64_t> av(a.size()), bv(b.size());
  for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<std::int64_t>(i);
  for (std::size_t j = 0; j < bv.size(); ++j) bv[j] = static_cast<std::int64_t>(a.size() + j);
  const auto expected_kv = test_support::reference_merge_by_key(a, b, av, bv, comp);
  std::vector<T> keys_out(n + 1, sentinel<T>());
  std::vector<std::int64_t> vals_out(n + 1, -5);
  const auto [k_end, v_end] = lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), av.begin(),
                                               bv.begin(), keys_out.begin(), vals_out.begin(), comp);
  BOOST_TEST((k_end - keys_out.begin()) == static_cast<std::ptrdiff_t>(n), "merge_by_key returned keys end");
  BOOST_TEST((v_end - vals_out.begin()) == static_cast<std::ptrdiff_t>(n), "merge_by_key returned values end");
  BOOST_TEST(same_element(keys_out.back(), sentinel<T>()), "merge_by_key wrote past the end of keys_out");
  BOOST_TEST(vals_out.back() == -5, "merge_by_key wrote past the end of vals_out");
  keys_out.pop_back();
  vals_out.pop_back();
  check_same(keys_out, expected_kv.first, "merge_by_key keys");
  check_same(vals_out, expected_kv.second, "merge_by_key values (origin of each output)");
}

}  // namespace

// The full sweep: every key type x comparator x distribution x (|A|, |B|) x
// pairing. all_equal with shared pairing puts the same key on both sides, so
// the A-first tie rule decides the whole output (records and values show it).
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_and_merge_by_key_equal_std_merge, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    for (auto d : test_support::all_distributions) {
      inputs<T, Comp> in(d, comp, sizeof(T) * 10 + (std::is_same_v<Comp, lm::greater<>> ? 1 : 0));
      for (auto p : {pairing::independent, pairing::shared}) {
        const bool with_million = std::is_same_v<Comp, lm::less<>> &&
                                  (d == distribution::random || (d == distribution::all_equal && p == pairing::shared));
        for (auto [na, nb] : cpu_test::size_pairs(with_million)) {
          BOOST_TEST_CONTEXT("key " << type_name<T>() << ", comp " << comp_name<Comp>() << ", dist "
                                    << test_support::name(d) << ", pairing " << cpu_test::name(p) << ", |A| " << na
                                    << " (seed " << in.seed_a() << "), |B| " << nb << " (seed " << in.seed_b(p)
                                    << ")") {
            check_merge_pair(in.a(na), in.b(nb, p), comp);
          }
        }
      }
    }
  });
}

// Stability spelled out: A and B hold only equal keys, so the output must be
// all of A (in order) followed by all of B, for both merge (records carry
// their origin in the tag) and merge_by_key (values carry it).
BOOST_AUTO_TEST_CASE(all_equal_keys_put_a_first) {
  for (std::int64_t na : {std::int64_t{0}, std::int64_t{1}, std::int64_t{5}, std::int64_t{1000}}) {
    for (std::int64_t nb : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{999}}) {
      BOOST_TEST_CONTEXT("|A| " << na << ", |B| " << nb) {
        std::vector<record> a(static_cast<std::size_t>(na)), b(static_cast<std::size_t>(nb));
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = record{42, 7, static_cast<std::int32_t>(i)};
        for (std::size_t j = 0; j < b.size(); ++j) b[j] = record{42, 7, static_cast<std::int32_t>(100000 + j)};
        std::vector<record> expected = a;
        expected.insert(expected.end(), b.begin(), b.end());
        std::vector<record> out(a.size() + b.size());
        lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), out.begin(), record_less{});
        check_same(out, expected, "merge of equal keys");
        out.assign(out.size(), record{});
        lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), out.begin(), lm::greater<>{});
        check_same(out, expected, "merge of equal keys, lm::greater<>");

        std::vector<int> ka(a.size(), 3), kb(b.size(), 3), ko(a.size() + b.size());
        std::vector<int> va(a.size()), vb(b.size()), vo(a.size() + b.size()), expected_vals;
        for (std::size_t i = 0; i < va.size(); ++i) expected_vals.push_back(va[i] = static_cast<int>(i));
        for (std::size_t j = 0; j < vb.size(); ++j) expected_vals.push_back(vb[j] = -1 - static_cast<int>(j));
        lm::merge_by_key(lm::serial, ka.begin(), ka.end(), kb.begin(), kb.end(), va.begin(), vb.begin(), ko.begin(),
                         vo.begin());
        check_same(vo, expected_vals, "merge_by_key values of equal keys");
      }
    }
  }
}

// A, B and the outputs of different iterator types: std::vector, std::deque,
// raw pointers and const iterators, in several combinations; the returned end
// iterators have the output's type and point one past the last element.
BOOST_AUTO_TEST_CASE(mixed_iterator_types) {
  for (std::int64_t na : {std::int64_t{0}, std::int64_t{3}, std::int64_t{1000}}) {
    for (std::int64_t nb : {std::int64_t{0}, std::int64_t{2}, std::int64_t{777}}) {
      const auto seed = mix_seed(static_cast<std::uint64_t>(na), static_cast<std::uint64_t>(nb), 31);
      BOOST_TEST_CONTEXT("|A| " << na << ", |B| " << nb << ", seed " << seed) {
        const auto a = test_support::generate_sorted<double>(na, distribution::few_distinct, seed);
        const auto b = test_support::generate_sorted<double>(nb, distribution::few_distinct, seed + 1);
        const auto expected = test_support::reference_merge(a, b, lm::less<>{});
        const std::deque<double> b_deque(b.begin(), b.end());
        const std::size_t n = a.size() + b.size();

        // vector A, deque B, pointer out
        std::vector<double> out(n);
        double* p_end = lm::merge(lm::serial, a.begin(), a.end(), b_deque.begin(), b_deque.end(), out.data());
        BOOST_TEST(p_end == out.data() + n);
        check_same(out, expected, "merge(vector, deque) -> pointer");

        // pointer A, const vector iterator B, deque out
        std::deque<double> out_deque(n);
        auto d_end = lm::merge(lm::serial, a.data(), a.data() + a.size(), b.cbegin(), b.cend(), out_deque.begin());
        BOOST_TEST((d_end == out_deque.end()));
        check_same(std::vector<double>(out_deque.begin(), out_deque.end()), expected,
                   "merge(pointer, const_iterator) -> deque");

        // merge_by_key: deque A keys, pointer B keys, vector/deque values, deque and pointer outputs
        std::vector<std::int32_t> av(a.size()), bv(b.size());
        for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<std::int32_t>(i);
        for (std::size_t j = 0; j < bv.size(); ++j) bv[j] = static_cast<std::int32_t>(a.size() + j);
        const std::deque<double> a_deque(a.begin(), a.end());
        const std::deque<std::int32_t> bv_deque(bv.begin(), bv.end());
        const auto expected_kv = test_support::reference_merge_by_key(a, b, av, bv, lm::less<>{});
        std::deque<double> keys_out(n);
        std::vector<std::int32_t> vals_out(n);
        auto [k_end, v_end] = lm::merge_by_key(lm::serial, a_deque.begin(), a_deque.end(), b.data(),
                                               b.data() + b.size(), av.cbegin(), bv_deque.begin(), keys_out.begin(),
                                               vals_out.data());
        BOOST_TEST((k_end == keys_out.end()));
        BOOST_TEST(v_end == vals_out.data() + n);
        check_same(std::vector<double>(keys_out.begin(), keys_out.end()), expected_kv.first,
                   "merge_by_key(deque, pointer) keys");
        check_same(vals_out, expected_kv.second, "merge_by_key(deque, pointer) values");
      }
    }
  }
}

// Explicit custom comparator (a lambda) with many ties: int keys ordered by
// x / 8 only; std::merge with the same lambda is the reference.
BOOST_AUTO_TEST_CASE(custom_lambda_comparator) {
  auto by_eighth = [](std::int32_t x, std::int32_t y) { return x / 8 < y / 8; };
  for (auto [na, nb] : cpu_test::size_pairs(false)) {
    const auto seed = mix_seed(static_cast<std::uint64_t>(na), static_cast<std::uint64_t>(nb), 8);
    BOOST_TEST_CONTEXT("|A| " << na << ", |B| " << nb << ", seed " << seed) {
      auto a = test_support::generate<std::int32_t>(na, distribution::random, seed);
      auto b = test_support::generate<std::int32_t>(nb, distribution::random, seed + 1);
      for (auto& x : a) x %= 1000;
      for (auto& x : b) x %= 1000;
      std::stable_sort(a.begin(), a.end(), by_eighth);
      std::stable_sort(b.begin(), b.end(), by_eighth);
      check_merge_pair(a, b, by_eighth);
    }
  }
}

// A merge's key type is A's: B's keys are converted to it before they are
// compared and written (as CUB and Thrust do), so the result is std::merge of
// A and the converted B. Here B's doubles truncate onto A's ints, making ties
// across the inputs that must keep A first; values follow the same rule.
BOOST_AUTO_TEST_CASE(keys_of_b_are_converted_to_the_key_type_of_a) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<int> a(static_cast<std::size_t>(rng() % 300));
    std::vector<double> b(static_cast<std::size_t>(rng() % 300));
    for (auto& x : a) x = static_cast<int>(rng() % 50) - 25;
    for (auto& x : b) x = static_cast<double>(static_cast<int>(rng() % 100) - 50) / 2.0;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end(), [](double x, double y) { return static_cast<int>(x) < static_cast<int>(y); });
    std::vector<long long> av(a.size()), bv(b.size());
    for (std::size_t i = 0; i < a.size(); ++i) av[i] = static_cast<long long>(i);
    for (std::size_t i = 0; i < b.size(); ++i) bv[i] = 1000 + static_cast<long long>(i);
    const std::vector<int> b_as_int(b.begin(), b.end());
    const auto expected = test_support::reference_merge_by_key(a, b_as_int, av, bv, lm::less<>{});

    std::vector<int> keys(a.size() + b.size());
    std::vector<long long> vals(keys.size());
    lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), keys.begin(),
                     vals.begin());
    check_same(keys, expected.first, "int A, double B: keys");
    check_same(vals, expected.second, "int A, double B: values");
    std::vector<int> only_keys(keys.size());
    lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), only_keys.begin());
    check_same(only_keys, expected.first, "int A, double B: merge");
  }
}

// The algorithms take part in overload resolution only with an execution
// policy first: an unqualified merge that also finds lm::merge through a
// libmerge comparator (argument-dependent lookup) still means std::merge.
BOOST_AUTO_TEST_CASE(unqualified_std_merge_with_a_libmerge_comparator) {
  const std::vector<int> a = {9, 5, 1}, b = {8, 5, 2};
  std::vector<int> out(6), expected(6);
  using std::merge;
  merge(a.begin(), a.end(), b.begin(), b.end(), out.begin(), lm::greater<>());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), expected.begin(), std::greater<>());
  check_same(out, expected, "unqualified merge with lm::greater<>");
}
