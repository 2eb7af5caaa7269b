// merge and merge_by_key with lm::omp::par against lm::serial, the oracle:
// (|A|, |B|) crossing the standard sizes (empty and very unequal sides
// included), every key type, distribution and comparator, B drawn
// independently of A and from A's random stream (shared keys), each with teams
// of 1, 2, 3 and 8 threads. Also: returned ends, no write past the end, mixed
// iterator types, B's keys converted to A's type.
//
// Runtime limit (every call runs on four teams): int32 and record keys run
// every comparator, distribution and pairing, the other key types lm::less<>
// with random, few-distinct and all-equal keys; the sizes are fewer than the
// serial suite's (omp_test::size_pairs). Pairs with a side of 10^6 run only with
// lm::less<>, for random keys and for all-equal keys on both sides (the
// A-first tie rule then decides every output across thread shares).
#define BOOST_TEST_MODULE libmerge_cpu_omp_merge
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <type_traits>
#include <vector>

#include "cpu_test_helpers.hpp"
#include "omp_test_helpers.hpp"

namespace lm = libmerge;
using omp_test::for_each_team;
using omp_test::runs;
using omp_test::size_pairs;
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

// merge and merge_by_key of one (a, b) pair on every team, against lm::serial.
// Values mark their origin (A: i, B: |A| + j), so a tie resolved the wrong way
// shows even where the keys are equal.
template <class T, class Comp>
void check_merge_pair(const std::vector<T>& a, const std::vector<T>& b, Comp comp) {
  const std::size_t n = a.size() + b.size();
  std::vector<T> expected(n);
  lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected.begin(), comp);
  std::vector<std::int64_t> av(a.size()), bv(b.size());
  for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<std::int64_t>(i);
  for (std::size_t j = 0; j < bv.size(); ++j) bv[j] = static_cast<std::int64_t>(a.size() + j);
  std::vector<T> expected_keys(n);
  std::vector<std::int64_t> expected_vals(n);
  lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), expected_keys.begin(),
                   expected_vals.begin(), comp);

  for_each_team([&](const auto& policy) {
    std::vector<T> out(n + 1, sentinel<T>());
    const auto end = lm::merge(policy, a.begin(), a.end(), b.begin(), b.end(), out.begin(), comp);
    BOOST_TEST((end - out.begin()) == static_cast<std::ptrdiff_t>(n), "merge returned end");
    BOOST_TEST(same_element(out.back(), sentinel<T>()), "merge wrote past the end of its output");
    out.pop_back();
    check_same(out, expected, "merge keys");

    std::vector<T> keys_out(n + 1, sentinel<T>());
    std::vector<std::int64_t> vals_out(n + 1, -5);
    const auto [k_end, v_end] = lm::merge_by_key(policy, a.data(), a.data() + a.size(), b.data(),
                                                 b.data() + b.size(), av.data(), bv.data(), keys_out.data(),
                                                 vals_out.data(), comp);
    BOOST_TEST((k_end - keys_out.data()) == static_cast<std::ptrdiff_t>(n), "merge_by_key returned keys end");
    BOOST_TEST((v_end - vals_out.data()) == static_cast<std::ptrdiff_t>(n), "merge_by_key returned values end");
    BOOST_TEST(same_element(keys_out.back(), sentinel<T>()), "merge_by_key wrote past the end of keys_out");
    BOOST_TEST(vals_out.back() == -5, "merge_by_key wrote past the end of vals_out");
    keys_out.pop_back();
    vals_out.pop_back();
    check_same(keys_out, expected_keys, "merge_by_key keys");
    check_same(vals_out, expected_vals, "merge_by_key values (origin of each output)");
  });
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(merge_and_merge_by_key_equal_serial, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    for (auto d : test_support::all_distributions) {
      inputs<T, Comp> in(d, comp, sizeof(T) * 10 + (std::is_same_v<Comp, lm::greater<>> ? 3 : 2));
      for (auto p : {pairing::independent, pairing::shared}) {
        if (!runs<T, Comp>(d, p)) continue;
        const bool with_million = std::is_same_v<Comp, lm::less<>> &&
                                  (d == distribution::random || (d == distribution::all_equal && p == pairing::shared));
        for (auto [na, nb] : size_pairs(with_million)) {
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

// Stability across thread shares: A and B hold only equal keys, so the output
// is all of A, then all of B, however the shares cut it.
BOOST_AUTO_TEST_CASE(all_equal_keys_put_a_first) {
  for (std::int64_t na : {0, 1, 5, 1000, 30001}) {
    for (std::int64_t nb : {0, 1, 7, 999, 20000}) {
      BOOST_TEST_CONTEXT("|A| " << na << ", |B| " << nb) {
        std::vector<record> a(static_cast<std::size_t>(na)), b(static_cast<std::size_t>(nb));
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = record{42, 7, static_cast<std::int32_t>(i)};
        for (std::size_t j = 0; j < b.size(); ++j) b[j] = record{42, 7, static_cast<std::int32_t>(100000 + j)};
        std::vector<record> expected = a;
        expected.insert(expected.end(), b.begin(), b.end());
        for_each_team([&](const auto& policy) {
          std::vector<record> out(a.size() + b.size());
          lm::merge(policy, a.begin(), a.end(), b.begin(), b.end(), out.begin(), record_less{});
          check_same(out, expected, "merge of equal keys");
          out.assign(out.size(), record{});
          lm::merge(policy, a.begin(), a.end(), b.begin(), b.end(), out.begin(), lm::greater<>{});
          check_same(out, expected, "merge of equal keys, lm::greater<>");
        });
      }
    }
  }
}

// Inputs and outputs of different iterator kinds (std::deque, pointers, const
// iterators, bounds-checked iterators): the generic merge path of the backend.
BOOST_AUTO_TEST_CASE(mixed_iterator_types) {
  for (std::int64_t na : {0, 3, 1000, 40000}) {
    for (std::int64_t nb : {0, 2, 777, 50001}) {
      const auto seed = mix_seed(static_cast<std::uint64_t>(na), static_cast<std::uint64_t>(nb), 131);
      BOOST_TEST_CONTEXT("|A| " << na << ", |B| " << nb << ", seed " << seed) {
        const auto a = test_support::generate_sorted<double>(na, distribution::few_distinct, seed);
        const auto b = test_support::generate_sorted<double>(nb, distribution::few_distinct, seed + 1);
        const std::size_t n = a.size() + b.size();
        std::vector<std::int32_t> av(a.size()), bv(b.size());
        for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<std::int32_t>(i);
        for (std::size_t j = 0; j < bv.size(); ++j) bv[j] = static_cast<std::int32_t>(a.size() + j);
        std::vector<double> expected(n), expected_keys(n);
        std::vector<std::int32_t> expected_vals(n);
        lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected.begin());
        lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(),
                         expected_keys.begin(), expected_vals.begin());
        const std::deque<double> a_deque(a.begin(), a.end()), b_deque(b.begin(), b.end());
        const std::deque<std::int32_t> bv_deque(bv.begin(), bv.end());
        for_each_team([&](const auto& policy) {
          std::vector<double> out(n);
          double* p_end = lm::merge(policy, a.begin(), a.end(), b_deque.begin(), b_deque.end(), out.data());
          BOOST_TEST(p_end == out.data() + n);
          check_same(out, expected, "merge(vector, deque) -> pointer");

          std::deque<double> out_deque(n);
          auto d_end = lm::merge(policy, a.data(), a.data() + a.size(), b.cbegin(), b.cend(), out_deque.begin());
          BOOST_TEST((d_end == out_deque.end()));
          check_same(std::vector<double>(out_deque.begin(), out_deque.end()), expected,
                     "merge(pointer, const_iterator) -> deque");

          std::deque<double> keys_out(n);
          std::vector<std::int32_t> vals_out(n);
          auto [k_end, v_end] = lm::merge_by_key(policy, a_deque.begin(), a_deque.end(), b.data(),
                                                 b.data() + b.size(), av.cbegin(), bv_deque.begin(),
                                                 keys_out.begin(), vals_out.data());
          BOOST_TEST((k_end == keys_out.end()));
          BOOST_TEST(v_end == vals_out.data() + n);
          check_same(std::vector<double>(keys_out.begin(), keys_out.end()), expected_keys,
                     "merge_by_key(deque, pointer) keys");
          check_same(vals_out, expected_vals, "merge_by_key(deque, pointer) values");

          std::vector<double> checked_out(n);
          try {
            auto [a0, a1] = cpu_test::checked_range(a);
            auto [b0, b1] = cpu_test::checked_range(b);
            auto [o0, o1] = cpu_test::checked_range(checked_out);
            (void)o1;
            lm::merge(policy, a0, a1, b0, b1, o0);
          } catch (const cpu_test::out_of_range_access& e) {
            BOOST_ERROR("merge accessed outside a range: " << e.what());
          }
          check_same(checked_out, expected, "merge (checked iterators)");
        });
      }
    }
  }
}

// A merge's key type is A's: B's keys (doubles truncating onto A's ints) are
// converted before they are compared and written, on every team.
BOOST_AUTO_TEST_CASE(keys_of_b_are_converted_to_the_key_type_of_a) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 20; ++round) {
    std::vector<int> a(static_cast<std::size_t>(rng() % 3000));
    std::vector<double> b(static_cast<std::size_t>(rng() % 3000));
    for (auto& x : a) x = static_cast<int>(rng() % 50) - 25;
    for (auto& x : b) x = static_cast<double>(static_cast<int>(rng() % 100) - 50) / 2.0;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end(), [](double x, double y) { return static_cast<int>(x) < static_cast<int>(y); });
    std::vector<long long> av(a.size()), bv(b.size());
    for (std::size_t i = 0; i < a.size(); ++i) av[i] = static_cast<long long>(i);
    for (std::size_t i = 0; i < b.size(); ++i) bv[i] = 100000 + static_cast<long long>(i);
    std::vector<int> expected_keys(a.size() + b.size());
    std::vector<long long> expected_vals(expected_keys.size());
    lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(),
                     expected_keys.begin(), expected_vals.begin());
    BOOST_TEST_CONTEXT("round " << round << ", |A| " << a.size() << ", |B| " << b.size()) {
      for_each_team([&](const auto& policy) {
        std::vector<int> keys(expected_keys.size());
        std::vector<long long> vals(keys.size());
        lm::merge_by_key(policy, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), keys.begin(),
                         vals.begin());
        check_same(keys, expected_keys, "int A, double B: keys");
        check_same(vals, expected_vals, "int A, double B: values");
        std::vector<int> only_keys(keys.size());
        lm::merge(policy, a.begin(), a.end(), b.begin(), b.end(), only_keys.begin());
        check_same(only_keys, expected_keys, "int A, double B: merge");
      });
    }
  }
}

// A custom lambda with many ties (keys equal when x / 8 agrees).
BOOST_AUTO_TEST_CASE(custom_lambda_comparator) {
  auto by_eighth = [](std::int32_t x, std::int32_t y) { return x / 8 < y / 8; };
  for (auto [na, nb] : size_pairs(false)) {
    const auto seed = mix_seed(static_cast<std::uint64_t>(na), static_cast<std::uint64_t>(nb), 108);
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
