// Comparators usable on the host and on the device.
#pragma once

#include "detail/config.hpp"

namespace libmerge {

// lm::less<> is transparent (compares any two types with <); lm::less<T> fixes
// the argument type, like std::less. Both are usable from device code, which
// std::less is not.
template <class T = void>
struct less {
  LIBMERGE_HOST_DEVICE constexpr bool operator()(const T& a, const T& b) const { return a < b; }
};

template <>
struct less<void> {
  template <class A, class B>
  LIBMERGE_HOST_DEVICE constexpr bool operator()(const A& a, const B& b) const {
    return a < b;
  }
};

template <class T = void>
struct greater {
  LIBMERGE_HOST_DEVICE constexpr bool operator()(const T& a, const T& b) const { return b < a; }
};

template <>
struct greater<void> {
  template <class A, class B>
  LIBMERGE_HOST_DEVICE constexpr bool operator()(const A& a, const B& b) const {
    return b < a;
  }
};

}  // namespace libmerge
