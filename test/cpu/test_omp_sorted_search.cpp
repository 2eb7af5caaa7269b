// sorted_search and sorted_equality_count with lm::omp::par against
// lm::serial, the oracle, with teams of 1, 2, 3 and 8 threads:
//   - both bounds x all 16 (TypeA, TypeB) combinations on moderate inputs,
//     through pointers (`none` outputs also as nullptr) and through
//     bounds-checked iterators;
//   - the key type x size x distribution x comparator sweep with index_match
//     on both sides, and with the simple form (an index into a contiguous
//     output: the backend's dense walk, or its gallop for sparse needles);
//   - output value types (the match flag at each type's top bit), bool
//     match outputs, sorted_equality_count.
// Every output buffer has a guard element past the end that must stay as it was.
//
// Runtime limit (every call runs on four teams): in the sweeps, int32 and
// record keys run every comparator, distribution and pairing, the other key
// types lm::less<> with random, few-distinct and all-equal keys; the sizes are
// fewer than the serial suite's (size_pairs below). Pairs with a side of 10^6
// run only with lm::less<>, random keys (independent pairing) and few distinct
// keys (shared pairing).
#define BOOST_TEST_MODULE libmerge_cpu_omp_sorted_search
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <tuple>
#include <type_traits>
#include <utility>
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
using cpu_test::type_name;
using lm::bounds;
using lm::search_type;
using test_support::distribution;
using test_support::key_types;
using test_support::record;
using test_support::record_less;

using cpu_test::checked_out;
using cpu_test::checked_range_maker;
using cpu_test::out_sentinel;
using cpu_test::pointer_out;
using cpu_test::pointer_range;

namespace {

using test_support::name;


// One search of the general form on every team, against lm::serial: both
// outputs (guards included) and the match counts; a `none` side is repeated
// with nullptr for its output.
template <bounds Bounds, search_type TA, search_type TB, class OutA, class OutB, class T, class Comp,
          class MakeIn = pointer_range, class MakeOut = pointer_out>
void check_search(const std::vector<T>& a, const std::vector<T>& b, Comp comp, MakeIn make_in = {},
                  MakeOut make_out = {}) {
  BOOST_TEST_CONTEXT("bounds " << name(Bounds) << ", TypeA " << name(TA) << " (" << type_name<OutA>()
                               << "), TypeB " << name(TB) << " (" << type_name<OutB>() << ")") {
    std::vector<OutA> expected_a(a.size() + 1, out_sentinel<OutA>());
    std::vector<OutB> expected_b(b.size() + 1, out_sentinel<OutB>());
    const lm::match_counts expected = lm::sorted_search<Bounds, TA, TB>(
        lm::serial, a.data(), a.data() + a.size(), b.data(), b.data() + b.size(), expected_a.data(),
        expected_b.data(), comp);
    auto [a_first, a_last] = make_in(a);
    auto [b_first, b_last] = make_in(b);
    for_each_team([&](const auto& policy) {
      std::vector<OutA> a_out(a.size() + 1, out_sentinel<OutA>());
      std::vector<OutB> b_out(b.size() + 1, out_sentinel<OutB>());
      const lm::match_counts m =
          lm::sorted_search<Bounds, TA, TB>(policy, a_first, a_last, b_first, b_last, make_out(a_out), make_out(b_out), comp);
      check_same(a_out, expected_a, "A's output");
      check_same(b_out, expected_b, "B's output");
      BOOST_TEST(m.a == expected.a, "match_counts.a");
      BOOST_TEST(m.b == expected.b, "match_counts.b");
      if constexpr (TA == search_type::none) {
        std::fill(b_out.begin(), b_out.end(), out_sentinel<OutB>());
        const auto m2 =
            lm::sorted_search<Bounds, TA, TB>(policy, a_first, a_last, b_first, b_last, nullptr, make_out(b_out), comp);
        check_same(b_out, expected_b, "B's output (a_out nullptr)");
        BOOST_TEST((m2 == expected), "match_counts with a_out nullptr");
      }
      if constexpr (TB == search_type::none) {
        std::fill(a_out.begin(), a_out.end(), out_sentinel<OutA>());
        const auto m2 =
            lm::sorted_search<Bounds, TA, TB>(policy, a_first, a_last, b_first, b_last, make_out(a_out), nullptr, comp);
        check_same(a_out, expected_a, "A's output (b_out nullptr)");
        BOOST_TEST((m2 == expected), "match_counts with b_out nullptr");
      }
    });
  }
}

constexpr search_type all_types[] = {search_type::none, search_type::index, search_type::match,
                                     search_type::index_match};

template <bounds Bounds, class T, class Comp, class MakeIn, class MakeOut, std::size_t... I>
void all_combinations(const std::vector<T>& a, const std::vector<T>& b, Comp comp, MakeIn make_in, MakeOut make_out,
                      std::index_sequence<I...>) {
  (check_search<Bounds, all_types[I / 4], all_types[I % 4], std::int32_t, std::int64_t>(a, b, comp, make_in,
                                                                                        make_out),
   ...);
}

const std::vector<std::pair<std::int64_t, std::int64_t>> moderate_pairs = {
    {0, 0}, {0, 5}, {5, 0}, {1, 1}, {37, 100}, {1000, 1000}, {300, 4097}, {20000, 20001}};

template <class T, class Comp, class MakeIn, class MakeOut>
void combinations_on_moderate_inputs(distribution d, Comp comp, MakeIn make_in, MakeOut make_out) {
  inputs<T, Comp> in(d, comp, sizeof(T) + 40);
  for (auto [na, nb] : moderate_pairs) {
    BOOST_TEST_CONTEXT("key " << type_name<T>() << ", comp " << comp_name<Comp>() << ", dist "
                              << test_support::name(d) << ", |A| " << na << " (seed " << in.seed_a() << "), |B| "
                              << nb << " (seed " << in.seed_b(pairing::shared) << ")") {
      const auto& a = in.a(na);
      const auto& b = in.b(nb, pairing::shared);
      all_combinations<bounds::lower>(a, b, comp, make_in, make_out, std::make_index_sequence<16>{});
      all_combinations<bounds::upper>(a, b, comp, make_in, make_out, std::make_index_sequence<16>{});
    }
  }
}

}  // namespace

// Both bounds x all 16 (TypeA, TypeB) combinations, int32 output for A and
// int64 for B, shared keys (plenty of matches), through pointers.
BOOST_AUTO_TEST_CASE(all_search_type_combinations) {
  for (auto d : {distribution::random, distribution::all_equal}) {
    combinations_on_moderate_inputs<std::int32_t>(d, lm::less<>{}, pointer_range{}, pointer_out{});
    combinations_on_moderate_inputs<std::int32_t>(d, lm::greater<>{}, pointer_range{}, pointer_out{});
    combinations_on_moderate_inputs<record>(d, record_less{}, pointer_range{}, pointer_out{});
    combinations_on_moderate_inputs<double>(d, lm::greater<>{}, pointer_range{}, pointer_out{});
  }
}

// The same through bounds-checked iterators: no probe, match tests included,
// reads or writes outside the ranges, whatever the thread shares.
BOOST_AUTO_TEST_CASE(all_search_type_combinations_stay_in_range) {
  try {
    combinations_on_moderate_inputs<std::int32_t>(distribution::random, lm::less<>{}, checked_range_maker{},
                                                  checked_out{});
    combinations_on_moderate_inputs<record>(distribution::few_distinct, record_less{}, checked_range_maker{},
                                            checked_out{});
  } catch (const cpu_test::out_of_range_access& e) {
    BOOST_ERROR("sorted_search accessed outside a range: " << e.what());
  }
}

// The sweep: index_match on both sides (int64 for A, uint32 for B) and the
// simple form (an int64 index for A through vector iterators, so the backend's
// dense walk and its gallop both run), against lm::serial. B drawn from A's
// stream runs index_match with bounds::lower and the simple form with
// bounds::upper; B drawn on its own the other way round.
BOOST_AUTO_TEST_CASE_TEMPLATE(index_match_and_simple_form_sweep, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    for (auto d : test_support::all_distributions) {
      inputs<T, Comp> in(d, comp, sizeof(T) * 10 + (std::is_same_v<Comp, lm::greater<>> ? 5 : 4));
      for (auto p : {pairing::independent, pairing::shared}) {
        if (!runs<T, Comp>(d, p)) continue;
        const bool with_million =
            std::is_same_v<Comp, lm::less<>> && ((d == distribution::random && p == pairing::independent) ||
                                                 (d == distribution::few_distinct && p == pairing::shared));
        for (auto [na, nb] : size_pairs(with_million)) {
          BOOST_TEST_CONTEXT("key " << type_name<T>() << ", comp " << comp_name<Comp>() << ", dist "
                                    << test_support::name(d) << ", pairing " << cpu_test::name(p) << ", |A| " << na
                                    << " (seed " << in.seed_a() << "), |B| " << nb << " (seed " << in.seed_b(p)
                                    << ")") {
            const auto& a = in.a(na);
            const auto& b = in.b(nb, p);
            const bool upper_simple = p == pairing::shared;
            if (upper_simple) {
              check_search<bounds::lower, search_type::index_match, search_type::index_match, std::int64_t,
                           std::uint32_t>(a, b, comp);
            } else {
              check_search<bounds::upper, search_type::index_match, search_type::index_match, std::int64_t,
                           std::uint32_t>(a, b, comp);
            }
            std::vector<std::int64_t> expected(a.size());
            if (upper_simple) {
              lm::sorted_search<bounds::upper>(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected.begin(),
                                               comp);
            } else {
              lm::sorted_search<bounds::lower>(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected.begin(),
                                               comp);
            }
            for_each_team([&](const auto& policy) {
              std::vector<std::int64_t> out(a.size() + 1, -9);
              auto end = upper_simple ? lm::sorted_search<bounds::upper>(policy, a.begin(), a.end(), b.begin(),
                                                                         b.end(), out.begin(), comp)
                                      : lm::sorted_search<bounds::lower>(policy, a.begin(), a.end(), b.begin(),
                                                                         b.end(), out.begin(), comp);
              BOOST_TEST((end - out.begin()) == na);
              BOOST_TEST(out.back() == -9, "simple form wrote past the end");
              out.pop_back();
              check_same(out, expected, upper_simple ? "simple form, upper bounds" : "simple form, lower bounds");
            });
          }
        }
      }
    }
  });
}

using output_types = std::tuple<std::int16_t, std::uint16_t, std::int32_t, std::uint32_t, std::int64_t, std::uint64_t>;

// index_match, index and match into 16-, 32- and 64-bit outputs: the same bits
// as lm::serial (the flag at the type's top bit).
BOOST_AUTO_TEST_CASE_TEMPLATE(output_value_types, Out, output_types) {
  for (auto [na, nb] : moderate_pairs) {
    const auto seed = mix_seed(static_cast<std::uint64_t>(na), static_cast<std::uint64_t>(nb), 103);
    BOOST_TEST_CONTEXT("output " << type_name<Out>() << ", |A| " << na << ", |B| " << nb << ", seed " << seed) {
      auto a = test_support::generate_sorted<std::int32_t>(na, distribution::random, seed);
      auto b = test_support::generate_sorted<std::int32_t>(nb, distribution::random, seed + 1);
      for (auto& x : a) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) % 50u);
      for (auto& x : b) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) % 70u);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      check_search<bounds::lower, search_type::index_match, search_type::index_match, Out, Out>(a, b, lm::less<>{});
      check_search<bounds::upper, search_type::index_match, search_type::index_match, Out, Out>(a, b, lm::less<>{});
      check_search<bounds::lower, search_type::index, search_type::match, Out, Out>(a, b, lm::less<>{});
      check_search<bounds::upper, search_type::match, search_type::index, Out, Out>(a, b, lm::less<>{});
    }
  }
}

// bool match outputs: std::deque<bool> (one byte each) and std::vector<bool>
// (packed bits: written by one thread).
BOOST_AUTO_TEST_CASE(match_outputs_of_bool) {
  const auto a = test_support::generate_sorted<std::int32_t>(3000, distribution::few_distinct, 21);
  auto b = test_support::generate_sorted<std::int32_t>(5000, distribution::random, 22);
  for (auto& x : b) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) % 3u);
  std::sort(b.begin(), b.end());
  std::deque<bool> expected_a(a.size()), expected_b(b.size());
  const auto expected = lm::sorted_search<bounds::upper, search_type::match, search_type::match>(
      lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected_a.begin(), expected_b.begin());
  for_each_team([&](const auto& policy) {
    std::deque<bool> a_out(a.size(), false), b_out(b.size(), true);
    const auto m = lm::sorted_search<bounds::upper, search_type::match, search_type::match>(
        policy, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin());
    BOOST_TEST((a_out == expected_a));
    BOOST_TEST((b_out == expected_b));
    BOOST_TEST((m == expected));
    std::vector<bool> packed_a(a.size(), false), packed_b(b.size(), true);
    const auto m2 = lm::sorted_search<bounds::upper, search_type::match, search_type::match>(
        policy, a.begin(), a.end(), b.begin(), b.end(), packed_a.begin(), packed_b.begin());
    BOOST_TEST(std::equal(packed_a.begin(), packed_a.end(), expected_a.begin(), expected_a.end()));
    BOOST_TEST(std::equal(packed_b.begin(), packed_b.end(), expected_b.begin(), expected_b.end()));
    BOOST_TEST((m2 == expected));
  });
}

// sorted_equality_count into int64 counts (and uint32 for few distinct keys),
// against lm::serial.
// all_equal and few_distinct keys put long runs of equal keys across thread
// shares (the upper bound gallops past its share).
BOOST_AUTO_TEST_CASE_TEMPLATE(sorted_equality_count_equals_serial, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    for (auto d : test_support::all_distributions) {
      inputs<T, Comp> in(d, comp, sizeof(T) * 13 + 1);
      for (auto p : {pairing::independent, pairing::shared}) {
        if (!runs<T, Comp>(d, p)) continue;
        const bool with_million = std::is_same_v<Comp, lm::less<>> && d == distribution::few_distinct;
        for (auto [na, nb] : size_pairs(with_million)) {
          BOOST_TEST_CONTEXT("key " << type_name<T>() << ", comp " << comp_name<Comp>() << ", dist "
                                    << test_support::name(d) << ", pairing " << cpu_test::name(p) << ", |A| " << na
                                    << " (seed " << in.seed_a() << "), |B| " << nb << " (seed " << in.seed_b(p)
                                    << ")") {
            const auto& a = in.a(na);
            const auto& b = in.b(nb, p);
            std::vector<std::int64_t> expected(a.size() + 1, -1);
            lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected.begin(), comp);
            for_each_team([&](const auto& policy) {
              std::vector<std::int64_t> c64(a.size() + 1, -1);
              auto end = lm::sorted_equality_count(policy, a.begin(), a.end(), b.begin(), b.end(), c64.begin(), comp);
              BOOST_TEST((end - c64.begin()) == na);
              check_same(c64, expected, "sorted_equality_count int64 (guard included)");
              if (na < 1000000 && d == distribution::few_distinct) {
                std::vector<std::uint32_t> cu32(a.size());
                lm::sorted_equality_count(policy, a.data(), a.data() + a.size(), b.data(), b.data() + b.size(),
                                          cu32.data(), comp);
                expected.pop_back();
                check_same(cu32, std::vector<std::uint32_t>(expected.begin(), expected.end()),
                           "sorted_equality_count uint32");
                expected.push_back(-1);
              }
            });
          }
        }
      }
    }
  });
}
