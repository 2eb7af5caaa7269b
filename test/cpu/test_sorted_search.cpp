// sorted_search and sorted_equality_count with lm::serial against
// std::lower_bound / std::upper_bound / std::equal_range:
//   - both bounds x all 16 (TypeA, TypeB) combinations on a moderate set of
//     inputs, with `none` outputs as nullptr and as untouched buffers, and
//     again through bounds-checked iterators;
//   - the full key type x size x distribution x comparator sweep with
//     index_match on both sides (int64 output for A, uint32 for B);
//   - output value types (the match flag is the top bit of each type);
//   - match_counts, the simple form's return value, sorted_equality_count.
//
// Runtime limit: in the sweep, pairs with a side of 10^6 run only with
// lm::less<>, for distribution::random (independent pairing) and
// distribution::few_distinct (shared pairing); sorted_equality_count runs them
// with lm::less<> and few_distinct keys. Every other pair runs every
// comparator, distribution and pairing.
#define BOOST_TEST_MODULE libmerge_cpu_sorted_search
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu_test_helpers.hpp"

namespace lm = libmerge;
using cpu_test::check_same;
using cpu_test::comp_name;
using cpu_test::decode_index_match;
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

// Reference results for one side (needles searched in a haystack): the lower
// and upper bound of every needle (std::lower_bound, std::upper_bound); a
// needle has a match when its equal range is not empty (upper > lower).
struct side_bounds {
  std::vector<std::int64_t> lower, upper;
  std::vector<bool> match;
  std::int64_t matches = 0;
};

template <class T, class Comp>
side_bounds reference_side(const std::vector<T>& needles, const std::vector<T>& hay, Comp comp) {
  side_bounds r;
  r.lower = test_support::reference_bounds(needles, hay, false, comp);
  r.upper = test_support::reference_bounds(needles, hay, true, comp);
  for (std::size_t i = 0; i < needles.size(); ++i) r.match.push_back(r.upper[i] > r.lower[i]);
  r.matches = std::count(r.match.begin(), r.match.end(), true);
  return r;
}

// What one side of a search must produce: the bound it asks for, and matches.
struct side_reference {
  const std::vector<std::int64_t>& bound;
  const std::vector<bool>& match;
  std::int64_t matches;
};
inline side_reference select(const side_bounds& r, bool upper) {
  return {upper ? r.upper : r.lower, r.match, r.matches};
}

// What a side of type Type must hold, given the reference. The output vector
// has one extra element at the end that must keep the sentinel.
template <search_type Type, class Out>
void check_side(const std::vector<Out>& out, const side_reference& ref, const char* side) {
  const std::size_t n = ref.bound.size();
  BOOST_TEST_REQUIRE(out.size() == n + 1);
  BOOST_TEST(out[n] == out_sentinel<Out>(), side << ": written past the end");
  std::size_t wrong = 0, first = n;
  for (std::size_t i = 0; i < n; ++i) {
    bool ok = true;
    if constexpr (Type == search_type::none) {
      ok = out[i] == out_sentinel<Out>();
    } else if constexpr (Type == search_type::index) {
      ok = static_cast<std::int64_t>(out[i]) == ref.bound[i];
    } else if constexpr (Type == search_type::match) {
      ok = out[i] == static_cast<Out>(ref.match[i] ? 1 : 0);
    } else {
      const auto dec = decode_index_match(out[i]);
      ok = dec.bound == static_cast<std::uint64_t>(ref.bound[i]) && dec.match == ref.match[i];
    }
    if (!ok && wrong++ == 0) first = i;
  }
  BOOST_TEST(wrong == 0u, side << " (" << name(Type) << ", " << type_name<Out>() << "): " << wrong << " of " << n
                                << " wrong; first at [" << first << "]: got "
                                << (first < n ? static_cast<long long>(out[first]) : 0LL) << ", expected bound "
                                << (first < n ? ref.bound[first] : 0) << " match "
                                << (first < n ? static_cast<int>(ref.match[first]) : 0));
}

constexpr std::int64_t expected_count(search_type t, const side_reference& r) {
  return lm::detail::writes_match(t) ? r.matches : 0;
}

// One call of the general form with outputs of types OutA and OutB, results and
// match counts checked; when a side is `none`, the call is repeated with
// nullptr for that output. make_in/make_out turn vectors into the iterators
// under test (plain pointers or bounds-checked iterators).
template <bounds Bounds, search_type TA, search_type TB, class OutA, class OutB, class T, class Comp, class MakeIn,
          class MakeOut>
void check_search(const std::vector<T>& a, const std::vector<T>& b, const side_bounds& refs_a,
                  const side_bounds& refs_b, Comp comp, MakeIn make_in, MakeOut make_out) {
  BOOST_TEST_CONTEXT("bounds " << name(Bounds) << ", TypeA " << name(TA) << " (" << type_name<OutA>()
                               << "), TypeB " << name(TB) << " (" << type_name<OutB>() << ")") {
    // lower: A gets its lower bound into B, B its upper bound into A; upper: the reverse
    const side_reference ref_a = select(refs_a, Bounds == bounds::upper);
    const side_reference ref_b = select(refs_b, Bounds == bounds::lower);
    const lm::match_counts expected{expected_count(TA, ref_a), expected_count(TB, ref_b)};

    std::vector<OutA> a_out(a.size() + 1, out_sentinel<OutA>());
    std::vector<OutB> b_out(b.size() + 1, out_sentinel<OutB>());
    auto [a_first, a_last] = make_in(a);
    auto [b_first, b_last] = make_in(b);
    const lm::match_counts m = lm::sorted_search<Bounds, TA, TB>(lm::serial, a_first, a_last, b_first, b_last,
                                                                 make_out(a_out), make_out(b_out), comp);
    check_side<TA>(a_out, ref_a, "A");
    check_side<TB>(b_out, ref_b, "B");
    BOOST_TEST(m.a == expected.a, "match_counts.a");
    BOOST_TEST(m.b == expected.b, "match_counts.b");

    // The form that writes the counts through a pointer instead.
    std::fill(a_out.begin(), a_out.end(), out_sentinel<OutA>());
    std::fill(b_out.begin(), b_out.end(), out_sentinel<OutB>());
    lm::match_counts written{-1, -1};
    lm::sorted_search<Bounds, TA, TB>(lm::serial, a_first, a_last, b_first, b_last, make_out(a_out), make_out(b_out),
                                      &written, comp);
    check_side<TA>(a_out, ref_a, "A (counts form)");
    check_side<TB>(b_out, ref_b, "B (counts form)");
    BOOST_TEST((written == expected), "match_counts written through counts_out");

    if constexpr (TA == search_type::none) {
      std::fill(b_out.begin(), b_out.end(), out_sentinel<OutB>());
      const auto m2 = lm::sorted_search<Bounds, TA, TB>(lm::serial, a_first, a_last, b_first, b_last, nullptr,
                                                        make_out(b_out), comp);
      check_side<TB>(b_out, ref_b, "B (a_out nullptr)");
      BOOST_TEST((m2 == expected), "match_counts with a_out nullptr");
    }
    if constexpr (TB == search_type::none) {
      std::fill(a_out.begin(), a_out.end(), out_sentinel<OutA>());
      const auto m2 = lm::sorted_search<Bounds, TA, TB>(lm::serial, a_first, a_last, b_first, b_last,
                                                        make_out(a_out), nullptr, comp);
      check_side<TA>(a_out, ref_a, "A (b_out nullptr)");
      BOOST_TEST((m2 == expected), "match_counts with b_out nullptr");
    }
  }
}

// The same, computing the references first.
template <bounds Bounds, search_type TA, search_type TB, class OutA, class OutB, class T, class Comp, class MakeIn,
          class MakeOut>
void check_search(const std::vector<T>& a, const std::vector<T>& b, Comp comp, MakeIn make_in, MakeOut make_out) {
  check_search<Bounds, TA, TB, OutA, OutB>(a, b, reference_side(a, b, comp), reference_side(b, a, comp), comp,
                                           make_in, make_out);
}

constexpr search_type all_types[] = {search_type::none, search_type::index, search_type::match,
                                     search_type::index_match};

template <bounds Bounds, class T, class Comp, class MakeIn, class MakeOut, std::size_t... I>
void all_combinations(const std::vector<T>& a, const std::vector<T>& b, const side_bounds& refs_a,
                      const side_bounds& refs_b, Comp comp, MakeIn make_in, MakeOut make_out,
                      std::index_sequence<I...>) {
  (check_search<Bounds, all_types[I / 4], all_types[I % 4], std::int32_t, std::int64_t>(a, b, refs_a, refs_b, comp,
                                                                                        make_in, make_out),
   ...);
}



const std::vector<std::pair<std::int64_t, std::int64_t>> moderate_pairs = {
    {0, 0}, {0, 5}, {5, 0}, {1, 1}, {37, 100}, {100, 37}, {1000, 1000}, {4097, 300}, {300, 4097}};

template <class T, class Comp, class MakeIn, class MakeOut>
void combinations_on_moderate_inputs(distribution d, pairing p, Comp comp, MakeIn make_in, MakeOut make_out) {
  inputs<T, Comp> in(d, comp, sizeof(T));
  for (auto [na, nb] : moderate_pairs) {
    BOOST_TEST_CONTEXT("key " << type_name<T>() << ", comp " << comp_name<Comp>() << ", dist "
                              << test_support::name(d) << ", pairing " << cpu_test::name(p) << ", |A| " << na
                              << " (seed " << in.seed_a() << "), |B| " << nb << " (seed " << in.seed_b(p) << ")") {
      const auto& a = in.a(na);
      const auto& b = in.b(nb, p);
      const auto refs_a = reference_side(a, b, comp), refs_b = reference_side(b, a, comp);
      // the matches derived from the bounds agree with std::equal_range
      BOOST_TEST((refs_a.match == test_support::reference_matches(a, b, comp)));
      BOOST_TEST((refs_b.match == test_support::reference_matches(b, a, comp)));
      all_combinations<bounds::lower>(a, b, refs_a, refs_b, comp, make_in, make_out, std::make_index_sequence<16>{});
      all_combinations<bounds::upper>(a, b, refs_a, refs_b, comp, make_in, make_out, std::make_index_sequence<16>{});
    }
  }
}

template <class MakeIn, class MakeOut>
void all_combinations_suite(MakeIn make_in, MakeOut make_out) {
  for (auto p : {pairing::independent, pairing::shared}) {
    for (auto d : {distribution::random, distribution::few_distinct, distribution::all_equal}) {
      combinations_on_moderate_inputs<std::int32_t>(d, p, lm::less<>{}, make_in, make_out);
      combinations_on_moderate_inputs<std::int32_t>(d, p, lm::greater<>{}, make_in, make_out);
      combinations_on_moderate_inputs<record>(d, p, record_less{}, make_in, make_out);
      combinations_on_moderate_inputs<double>(d, p, lm::greater<>{}, make_in, make_out);
    }
  }
}

}  // namespace

// Both bounds x all 16 (TypeA, TypeB) combinations, int32 output for A and
// int64 for B: each side holds exactly what its type asks for (none: nothing
// written, also with nullptr), and match_counts count matches only for match
// and index_match sides.
BOOST_AUTO_TEST_CASE(all_search_type_combinations) {
  all_combinations_suite(pointer_range{}, pointer_out{});
}

// The same through bounds-checked iterators (inputs and outputs): no probe,
// match test included, reads or writes outside the ranges.
BOOST_AUTO_TEST_CASE(all_search_type_combinations_stay_in_range) {
  try {
    all_combinations_suite(checked_range_maker{}, checked_out{});
  } catch (const cpu_test::out_of_range_access& e) {
    BOOST_ERROR("sorted_search accessed outside a range: " << e.what());
  }
}

// The full sweep with index_match on both sides (which covers index and
// match): every key type x comparator x distribution x (|A|, |B|) x pairing,
// both bounds; A's output is int64 (flag bit 63), B's uint32 (flag bit 31).
BOOST_AUTO_TEST_CASE_TEMPLATE(index_match_sweep, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    for (auto d : test_support::all_distributions) {
      inputs<T, Comp> in(d, comp, sizeof(T) * 10 + (std::is_same_v<Comp, lm::greater<>> ? 1 : 0));
      for (auto p : {pairing::independent, pairing::shared}) {
        const bool with_million =
            std::is_same_v<Comp, lm::less<>> &&
            ((d == distribution::random && p == pairing::independent) ||
             (d == distribution::few_distinct && p == pairing::shared));
        for (auto [na, nb] : cpu_test::size_pairs(with_million)) {
          BOOST_TEST_CONTEXT("key " << type_name<T>() << ", comp " << comp_name<Comp>() << ", dist "
                                    << test_support::name(d) << ", pairing " << cpu_test::name(p) << ", |A| " << na
                                    << " (seed " << in.seed_a() << "), |B| " << nb << " (seed " << in.seed_b(p)
                                    << ")") {
            const auto& a = in.a(na);
            const auto& b = in.b(nb, p);
            const auto refs_a = reference_side(a, b, comp), refs_b = reference_side(b, a, comp);
            check_search<bounds::lower, search_type::index_match, search_type::index_match, std::int64_t,
                         std::uint32_t>(a, b, refs_a, refs_b, comp, pointer_range{}, pointer_out{});
            check_search<bounds::upper, search_type::index_match, search_type::index_match, std::int64_t,
                         std::uint32_t>(a, b, refs_a, refs_b, comp, pointer_range{}, pointer_out{});
          }
        }
      }
    }
  });
}

using output_types = std::tuple<std::int16_t, std::uint16_t, std::int32_t, std::uint32_t, std::int64_t, std::uint64_t>;

// Output value types: index, match and index_match into 16-, 32- and 64-bit,
// signed and unsigned outputs. The match flag is the type's top bit, spelled
// out per width (15, 31, 63), and nothing else is set above the bound: a
// 64-bit output never carries the flag at bit 31.
BOOST_AUTO_TEST_CASE_TEMPLATE(output_value_types_place_the_flag_at_the_top_bit, Out, output_types) {
  constexpr unsigned flag_bit = sizeof(Out) == 2 ? 15 : sizeof(Out) == 4 ? 31 : 63;
  for (auto [na, nb] : moderate_pairs) {
    for (auto bnd : {bounds::lower, bounds::upper}) {
      const auto seed = mix_seed(static_cast<std::uint64_t>(na), static_cast<std::uint64_t>(nb), 3);
      BOOST_TEST_CONTEXT("output " << type_name<Out>() << ", bounds " << name(bnd) << ", |A| " << na << ", |B| "
                                   << nb << ", seed " << seed) {
        // few distinct keys on both sides: plenty of matches and non-matches
        auto a = test_support::generate_sorted<std::int32_t>(na, distribution::random, seed);
        auto b = test_support::generate_sorted<std::int32_t>(nb, distribution::random, seed + 1);
        for (auto& x : a) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) % 50u);
        for (auto& x : b) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) % 70u);
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        const auto refs_a = reference_side(a, b, lm::less<>{}), refs_b = reference_side(b, a, lm::less<>{});
        const side_reference ref_a = select(refs_a, bnd == bounds::upper);
        const side_reference ref_b = select(refs_b, bnd == bounds::lower);

        std::vector<Out> a_out(a.size() + 1, out_sentinel<Out>()), b_out(b.size() + 1, out_sentinel<Out>());
        lm::match_counts m;
        if (bnd == bounds::lower) {
          m = lm::sorted_search<bounds::lower, search_type::index_match, search_type::index_match>(
              lm::serial, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin());
        } else {
          m = lm::sorted_search<bounds::upper, search_type::index_match, search_type::index_match>(
              lm::serial, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin());
        }
        BOOST_TEST(m.a == ref_a.matches);
        BOOST_TEST(m.b == ref_b.matches);
        auto check_raw = [&](const std::vector<Out>& out, const side_reference& ref, const char* side) {
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < ref.bound.size(); ++i) {
            const auto u = static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<Out>>(out[i]));
            const std::uint64_t expected =
                static_cast<std::uint64_t>(ref.bound[i]) | (ref.match[i] ? std::uint64_t{1} << flag_bit : 0);
            wrong += u != expected;
          }
          BOOST_TEST(wrong == 0u, side << ": " << wrong << " index_match values differ from bound | match << "
                                       << flag_bit);
          BOOST_TEST(out.back() == out_sentinel<Out>());
        };
        check_raw(a_out, ref_a, "A");
        check_raw(b_out, ref_b, "B");

        // index and match alone into the same type
        std::fill(a_out.begin(), a_out.end(), out_sentinel<Out>());
        std::fill(b_out.begin(), b_out.end(), out_sentinel<Out>());
        if (bnd == bounds::lower) {
          m = lm::sorted_search<bounds::lower, search_type::index, search_type::match>(
              lm::serial, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin());
        } else {
          m = lm::sorted_search<bounds::upper, search_type::index, search_type::match>(
              lm::serial, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin());
        }
        check_side<search_type::index>(a_out, ref_a, "A index");
        check_side<search_type::match>(b_out, ref_b, "B match");
        BOOST_TEST(m.a == 0);
        BOOST_TEST(m.b == ref_b.matches);
      }
    }
  }
}

// The simple form sorted_search<Bounds>(policy, A, B, a_out [, comp]) writes
// each A's bound into B and returns a_out + |A|; nothing past the end.
BOOST_AUTO_TEST_CASE_TEMPLATE(simple_form_writes_bounds_and_returns_end, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    for (auto d : test_support::all_distributions) {
      inputs<T, Comp> in(d, comp, sizeof(T) * 7);
      for (auto [na, nb] : cpu_test::size_pairs(false)) {
        BOOST_TEST_CONTEXT("key " << type_name<T>() << ", comp " << comp_name<Comp>() << ", dist "
                                  << test_support::name(d) << ", |A| " << na << " (seed " << in.seed_a() << "), |B| "
                                  << nb << " (seed " << in.seed_b(pairing::shared) << ")") {
          const auto& a = in.a(na);
          const auto& b = in.b(nb, pairing::shared);
          std::vector<std::int64_t> out(a.size() + 1, -9);
          auto end = lm::sorted_search<bounds::lower>(lm::serial, a.begin(), a.end(), b.begin(), b.end(),
                                                      out.begin(), comp);
          BOOST_TEST((end - out.begin()) == na);
          BOOST_TEST(out.back() == -9);
          out.pop_back();
          check_same(out, test_support::reference_bounds(a, b, false, comp), "simple form, lower bounds");

          std::vector<std::uint32_t> out32(a.size() + 1, 12345u);
          auto end32 = lm::sorted_search<bounds::upper>(lm::serial, a.data(), a.data() + a.size(), b.data(),
                                                        b.data() + b.size(), out32.data(), comp);
          BOOST_TEST(end32 == out32.data() + na);
          BOOST_TEST(out32.back() == 12345u);
          out32.pop_back();
          const auto ub = test_support::reference_bounds(a, b, true, comp);
          check_same(out32, std::vector<std::uint32_t>(ub.begin(), ub.end()), "simple form, upper bounds");
        }
      }
    }
  });
}

// The simple form with the default comparator (lm::less<>).
BOOST_AUTO_TEST_CASE(simple_form_default_comparator) {
  const auto a = test_support::generate_sorted<std::int64_t>(3000, distribution::few_distinct, 17);
  const auto b = test_support::generate_sorted<std::int64_t>(2000, distribution::few_distinct, 18);
  std::vector<std::int32_t> out(a.size());
  auto end = lm::sorted_search<bounds::upper>(lm::serial, a.begin(), a.end(), b.begin(), b.end(), out.begin());
  BOOST_TEST((end == out.end()));
  const auto ub = test_support::reference_bounds(a, b, true, lm::less<>{});
  check_same(out, std::vector<std::int32_t>(ub.begin(), ub.end()), "simple form, default comparator");
}

// sorted_equality_count: for each A, the width of its std::equal_range in B,
// into int64, int32 and uint32 counts; returns counts_out + |A|.
BOOST_AUTO_TEST_CASE_TEMPLATE(sorted_equality_count_equals_equal_range_width, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    for (auto d : test_support::all_distributions) {
      inputs<T, Comp> in(d, comp, sizeof(T) * 13);
      for (auto p : {pairing::independent, pairing::shared}) {
        const bool with_million = std::is_same_v<Comp, lm::less<>> && d == distribution::few_distinct;
        for (auto [na, nb] : cpu_test::size_pairs(with_million)) {
          BOOST_TEST_CONTEXT("key " << type_name<T>() << ", comp " << comp_name<Comp>() << ", dist "
                                    << test_support::name(d) << ", pairing " << cpu_test::name(p) << ", |A| " << na
                                    << " (seed " << in.seed_a() << "), |B| " << nb << " (seed " << in.seed_b(p)
                                    << ")") {
            const auto& a = in.a(na);
            const auto& b = in.b(nb, p);
            std::vector<std::int64_t> expected;
            for (const auto& x : a) {
              const auto r = std::equal_range(b.begin(), b.end(), x, comp);
              expected.push_back(r.second - r.first);
            }
            std::vector<std::int64_t> c64(a.size() + 1, -1);
            auto end = lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), c64.begin(), comp);
            BOOST_TEST((end - c64.begin()) == na);
            BOOST_TEST(c64.back() == -1);
            c64.pop_back();
            check_same(c64, expected, "sorted_equality_count int64");

            std::vector<std::int32_t> c32(a.size());
            auto end32 = lm::sorted_equality_count(lm::serial, a.data(), a.data() + a.size(), b.data(),
                                                   b.data() + b.size(), c32.data(), comp);
            BOOST_TEST(end32 == c32.data() + na);
            check_same(c32, std::vector<std::int32_t>(expected.begin(), expected.end()), "sorted_equality_count int32");

            std::vector<std::uint32_t> cu32(a.size());
            lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), cu32.begin(), comp);
            check_same(cu32, std::vector<std::uint32_t>(expected.begin(), expected.end()),
                       "sorted_equality_count uint32");
          }
        }
      }
    }
  });
}

// A custom lambda comparator (keys equal when x / 8 agrees) and std::deque
// inputs and outputs mixed with pointers.
BOOST_AUTO_TEST_CASE(custom_comparator_and_mixed_iterators) {
  auto by_eighth = [](std::int32_t x, std::int32_t y) { return x / 8 < y / 8; };
  for (auto [na, nb] : cpu_test::size_pairs(false)) {
    const auto seed = mix_seed(static_cast<std::uint64_t>(na), static_cast<std::uint64_t>(nb), 88);
    BOOST_TEST_CONTEXT("|A| " << na << ", |B| " << nb << ", seed " << seed) {
      auto a = test_support::generate<std::int32_t>(na, distribution::random, seed);
      auto b = test_support::generate<std::int32_t>(nb, distribution::random, seed + 1);
      for (auto& x : a) x %= 2000;
      for (auto& x : b) x %= 2000;
      std::sort(a.begin(), a.end(), by_eighth);
      std::sort(b.begin(), b.end(), by_eighth);
      check_search<bounds::lower, search_type::index_match, search_type::match, std::int64_t, std::int8_t>(
          a, b, by_eighth, pointer_range{}, pointer_out{});
      check_search<bounds::upper, search_type::match, search_type::index, std::uint8_t, std::int64_t>(
          a, b, by_eighth, pointer_range{}, pointer_out{});

      const std::deque<std::int32_t> a_deque(a.begin(), a.end());
      std::deque<std::int64_t> a_out(a.size());
      std::vector<std::uint32_t> b_out(b.size());
      const auto m = lm::sorted_search<bounds::lower, search_type::index, search_type::index_match>(
          lm::serial, a_deque.begin(), a_deque.end(), b.data(), b.data() + b.size(), a_out.begin(), b_out.data(),
          by_eighth);
      check_same(std::vector<std::int64_t>(a_out.begin(), a_out.end()),
                 test_support::reference_bounds(a, b, false, by_eighth), "deque A, lower bounds");
      const auto refs_b = reference_side(b, a, by_eighth);
      const side_reference ref_b = select(refs_b, true);
      std::vector<std::uint32_t> expected_b;
      for (std::size_t j = 0; j < b.size(); ++j) {
        expected_b.push_back(static_cast<std::uint32_t>(ref_b.bound[j]) | (ref_b.match[j] ? 0x80000000u : 0u));
      }
      check_same(b_out, expected_b, "pointer B, upper bounds with match bit 31");
      BOOST_TEST(m.a == 0);
      BOOST_TEST(m.b == ref_b.matches);
    }
  }
}

// A `match` output may be bool: 0/1 flags need no wider type.
BOOST_AUTO_TEST_CASE(match_output_of_bool) {
  const std::vector<int> a = {1, 3, 3, 5, 8, 13}, b = {0, 3, 4, 5, 5, 9, 13, 21};
  std::deque<bool> a_out(a.size(), false), b_out(b.size(), true);
  const auto counts = lm::sorted_search<bounds::upper, search_type::match, search_type::match>(
      lm::serial, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin());
  std::vector<bool> a_expected, b_expected;
  for (int x : a) a_expected.push_back(std::binary_search(b.begin(), b.end(), x));
  for (int x : b) b_expected.push_back(std::binary_search(a.begin(), a.end(), x));
  BOOST_CHECK_EQUAL_COLLECTIONS(a_out.begin(), a_out.end(), a_expected.begin(), a_expected.end());
  BOOST_CHECK_EQUAL_COLLECTIONS(b_out.begin(), b_out.end(), b_expected.begin(), b_expected.end());
  BOOST_CHECK_EQUAL(counts.a, std::count(a_expected.begin(), a_expected.end(), true));
  BOOST_CHECK_EQUAL(counts.b, std::count(b_expected.begin(), b_expected.end(), true));
}
