// Comparators usable on the host and on the device.
#pragma once

#include <type_traits>

#include "detail/config.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace libmerge {

namespace detail {
// Floating-point types, CUDA's 16-bit ones included where nvcc compiles.
template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T>
#if defined(__CUDACC__)
                                      || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>
#endif
    ;

// a < b, except that a NaN comes after every number and NaNs are equivalent
// to each other: a strict weak ordering of floating-point keys (plain < is
// none once a NaN is among them, and merge-based algorithms then give
// unspecified output). NaN keys therefore sort stably to the end under
// lm::less and to the front under lm::greater, and merges and searches agree
// with the sorts. The same for __half and __nv_bfloat16 under nvcc. Other
// types: a < b.
template <class A, class B>
LIBMERGE_HOST_DEVICE constexpr bool ordered_less(const A& a, const B& b) {
  if constexpr (is_floating_v<A> || is_floating_v<B>) {
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
