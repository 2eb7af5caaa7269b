// The vocabulary of sorted search (Modern GPU, seeds/003): which bound each side
// gets, what each side writes, and the match totals a search returns.
#pragma once

#include <limits>
#include <type_traits>

#include "detail/config.hpp"
#include "functional.hpp"

namespace libmerge {

// bounds (lower, upper): functional.hpp, with the orders (merges and sorts take it too).

// What one side of a search writes for each of its elements:
//   none        - nothing; the output iterator is never touched (nullptr is fine).
//   index       - the bound into the other side.
//   match       - 1 if the other side holds an equal element, else 0.
//   index_match - the bound, with the most significant bit of the output's value
//                 type set when there is a match (bit 31 for 32-bit outputs).
enum class search_type { none, index, match, index_match };

// Number of elements of A with an equal element in B (a), and of B in A (b).
// A side whose search_type reports no matches (none, index) counts zero.
struct match_counts {
  index_t a = 0;
  index_t b = 0;
  friend bool operator==(const match_counts& x, const match_counts& y) {
    return x.a == y.a && x.b == y.b;
  }
  friend bool operator!=(const match_counts& x, const match_counts& y) { return !(x == y); }
};

namespace detail {
LIBMERGE_HOST_DEVICE constexpr bool writes_index(search_type t) {
  return t == search_type::index || t == search_type::index_match;
}
LIBMERGE_HOST_DEVICE constexpr bool writes_match(search_type t) {
  return t == search_type::match || t == search_type::index_match;
}
LIBMERGE_HOST_DEVICE constexpr bool writes_output(search_type t) { return t != search_type::none; }

// What one search_type writes for a bound and a match flag (every backend).
template <search_type Type, class Out>
LIBMERGE_HOST_DEVICE Out encode_search_result(index_t bound, bool match) {
  if constexpr (Type == search_type::match) {
    return static_cast<Out>(match ? 1 : 0);
  } else if constexpr (Type == search_type::index) {
    return static_cast<Out>(bound);
  } else {
    using U = std::make_unsigned_t<Out>;
    constexpr U flag = U(1) << (std::numeric_limits<U>::digits - 1);
    return static_cast<Out>(static_cast<U>(bound) | (match ? flag : U(0)));
  }
}
}  // namespace detail

}  // namespace libmerge
