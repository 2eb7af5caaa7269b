// Serial reference sorted search and equality count: for sorted needles the
// bound never moves backwards, so one forward walk finds every bound
// (CPUSortedSearch in seeds/003). Each side is its own walk, not derived from
// the other, which keeps each obviously right.
#pragma once

#include <iterator>
#include <limits>
#include <type_traits>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/search_tags.hpp"

namespace libmerge::detail::serial {

// lower skips haystack elements less than the needle, upper those not greater;
// bounded by the haystack's length whatever the comparator does.
template <bool Upper>
struct bound_cursor {
  index_t pos = 0;

  template <class Hay, class Needle, class Comp>
  index_t advance(Hay hay, index_t n, const Needle& needle, Comp& comp) {
    if constexpr (Upper) {
      while (pos < n && !comp(needle, hay[pos])) ++pos;
    } else {
      while (pos < n && comp(hay[pos], needle)) ++pos;
    }
    return pos;
  }

  // An equal element can only be hay[pos] (lower) or hay[pos - 1] (upper).
  template <class Hay, class Needle, class Comp>
  bool matched(Hay hay, index_t n, const Needle& needle, Comp& comp) const {
    if constexpr (Upper) {
      return pos > 0 && !comp(hay[pos - 1], needle);
    } else {
      return pos < n && !comp(needle, hay[pos]);
    }
  }
};

// Writes one side's results and returns how many of its elements matched.
template <bool Upper, search_type Type, class Needles, class Hay, class Out, class Comp>
index_t search_side(Needles needles, index_t nn, Hay hay, index_t nh, Out out, Comp& comp) {
  if constexpr (Type == search_type::none) {
    return 0;
  } else {
    using T = typename std::iterator_traits<Out>::value_type;
    bound_cursor<Upper> cursor;
    index_t matches = 0;
    // *out, ++out, not out[i]: g++ 12 -O3 warns (-Wstringop-overflow) otherwise.
    for (index_t i = 0; i < nn; ++i, ++out) {
      const auto& needle = needles[i];
      const index_t bound = cursor.advance(hay, nh, needle, comp);
      bool match = false;
      if constexpr (writes_match(Type)) {
        match = cursor.matched(hay, nh, needle, comp);
        matches += match;
      }
      *out = encode_search_result<Type, T>(bound, match);
    }
    return matches;
  }
}

}  // namespace libmerge::detail::serial

namespace libmerge::detail {

template <>
struct backend_impl<algo::sorted_search, backend::serial> {
  static constexpr bool available = true;

  // lower: A gets its lower bound into B, B its upper bound into A; upper: reverse.
  template <bounds Bounds, search_type TypeA, search_type TypeB, class Policy, class AIt, class BIt,
            class AOut, class BOut, class Comp>
  static match_counts run(const Policy&, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                          Comp comp) {
    constexpr bool a_upper = Bounds == bounds::upper;
    match_counts m;
    m.a = serial::search_side<a_upper, TypeA>(a, na, b, nb, a_out, comp);
    m.b = serial::search_side<!a_upper, TypeB>(b, nb, a, na, b_out, comp);
    return m;
  }
};

template <>
struct backend_impl<algo::sorted_equality_count, backend::serial> {
  static constexpr bool available = true;

  // For each A: (upper bound into B) - (lower bound into B), two forward walks.
  template <class Policy, class AIt, class BIt, class CountsOut, class Comp>
  static void run(const Policy&, AIt a, index_t na, BIt b, index_t nb, CountsOut counts, Comp comp) {
    using T = typename std::iterator_traits<CountsOut>::value_type;
    serial::bound_cursor<false> lower;
    serial::bound_cursor<true> upper;
    for (index_t i = 0; i < na; ++i, ++counts) {
      const auto& needle = a[i];
      const index_t lo = lower.advance(b, nb, needle, comp);
      const index_t hi = upper.advance(b, nb, needle, comp);
      // The guard: unsorted input must not write negative counts.
      *counts = static_cast<T>(hi > lo ? hi - lo : 0);
    }
  }
};

}  // namespace libmerge::detail
