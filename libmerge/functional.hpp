// Comparators usable on the host and on the device, and the tie rule of a merge of two sides.
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

// a < b, except that NaN comes after every number and NaNs are equivalent:
// a strict weak ordering of floating-point keys (plain < is none once a NaN is
// among them). So NaNs sort stably to the end under lm::less, to the front
// under lm::greater. Other types: a < b.
template <class A, class B>
LIBMERGE_HOST_DEVICE constexpr bool ordered_less(const A& a, const B& b) {
  if constexpr (is_floating_v<A> || is_floating_v<B>) {
    return (a < b) | ((b != b) & (a == a));  // b is NaN and a is not
  } else {
    return a < b;
  }
}
}  // namespace detail

// lm::less<> is transparent; lm::less<T> fixes the argument type, like
// std::less. Both work in device code, which std::less does not.
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

// Which side goes first on ties, in a merge and in a search of two sides:
// bounds::lower: each A gets its lower bound into B, each B its upper bound into A.
// bounds::upper: the reverse. Either way the pair describes one merge of A and B
// (lower: A first on ties; upper: B first), which is why one search pass yields both.
enum class bounds { lower, upper };

}  // namespace libmerge
