// Serial reference merge: the textbook two-finger loop of std::merge and of the
// sequential merge in seeds/004. It shares no code with the GPU backend, so the
// tests that compare the two can catch a bug in either.
#pragma once

#include <iterator>
#include <type_traits>
#include <utility>

#include "../../libmerge/detail/as_type.hpp"
#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/detail/dispatch.hpp"

namespace libmerge::detail::serial {

// Merges a[0, na) and b[0, nb) into out; on ties A comes first (stable).
// Values, when present, move with their keys. Move: the inputs are scratch
// buffers (merge sort passes) whose elements may be moved from. Outputs are
// written as *out, ++out: g++ 12 at -O3 takes the indexed form for a write
// past the end of a small output (-Wstringop-overflow).
template <bool Move = false, class AKeys, class BKeys, class AVals, class BVals, class KeysOut, class ValsOut,
          class Comp>
void merge_into(AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals, KeysOut out,
                ValsOut vals_out, Comp& comp) {
  constexpr bool with_values = has_values<AVals>;
  using K = typename std::iterator_traits<AKeys>::value_type;
  auto pass = [](auto&& x) -> decltype(auto) {
    if constexpr (Move) {
      return std::move(x);
    } else {
      return std::forward<decltype(x)>(x);
    }
  };
  index_t i = 0, j = 0;
  auto take_a = [&] {
    *out = pass(a[i]);
    ++out;
    if constexpr (with_values) {
      *vals_out = pass(a_vals[i]);
      ++vals_out;
    }
    ++i;
  };
  auto take_b = [&] {
    *out = as_type<K>(pass(b[j]));
    ++out;
    if constexpr (with_values) {
      using V = typename std::iterator_traits<AVals>::value_type;
      *vals_out = as_type<V>(pass(b_vals[j]));
      ++vals_out;
    }
    ++j;
  };
  while (i < na && j < nb) {
    // Take B only when it is strictly smaller: equal keys keep A first.
    if (comp(as_type<K>(b[j]), a[i])) {
      take_b();
    } else {
      take_a();
    }
  }
  while (i < na) take_a();
  while (j < nb) take_b();
}

}  // namespace libmerge::detail::serial

namespace libmerge::detail {

template <>
struct backend_impl<algo::merge, backend::serial> {
  static constexpr bool available = true;

  template <class Policy, class AKeys, class BKeys, class AVals, class BVals, class KeysOut,
            class ValsOut, class Comp>
  static void run(const Policy&, AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals,
                  KeysOut keys_out, ValsOut vals_out, Comp comp) {
    serial::merge_into(a, na, b, nb, a_vals, b_vals, keys_out, vals_out, comp);
  }
};

}  // namespace libmerge::detail
