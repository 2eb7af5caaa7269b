// Comparators usable on the host and on the device.
#pragma once

#include <type_traits>

#include "detail/config.hpp"

namespace libmerge {

namespace detail {
// a < b, except that a NaN comes after every number and NaNs are equivalent
// to each other: a strict weak ordering of floating-point keys (plain < is
// none once a NaN is among them, and merge-based algorithms then give
// unspecified output). NaN keys therefore sort stably to the end under
// lm::less and to the front under lm::greater, and merges and searches agree
// with the sorts. Other types: a < b.
template <class A, class B>
LIBMERGE_HOST_DEVICE constexpr bool ordered_less(const A& a, const B& b) {
  if constexpr (std::is_floating_point_v<A> || std::is_floating_point_v<B>) {
    return (a < b) | ((b != b) & (a == a));  // b is NaN and a is not
  } else {
    return a < b;
  }
}
}  // namespace detail

// lm::less<> is transparent (compares any two types with <); lm::less<T> fixes
// the argument type, like std::less. Both are usable from device code, which
// std::less is not. Floating-point NaN orders after every number (above).
template <class T = void>
struct less {
  LIBMERGE_HOST_DEVICE constexpr bool operator()(const T& a, const T& b) const { return detail::ordered_less(a, b); }
};

template <>
struct less<void> {
  template <class A, class B>
  LIBMERGE_HOST_DEVICE constexpr bool operator()(const A& a, const B& b) const {
    return detail::ordered_less(a, b);
  }
};

// lm::less reversed: NaN before every number.
template <class T = void>
struct greater {
  LIBMERGE_HOST_DEVICE constexpr bool operator()(const T& a, const T& b) const { return detail::ordered_less(b, a); }
};

template <>
struct greater<void> {
  template <class A, class B>
  LIBMERGE_HOST_DEVICE constexpr bool operator()(const A& a, const B& b) const {
    return detail::ordered_less(b, a);
  }
};

}  // namespace libmerge
