// A merge's key type is A's, and its value type A's values' (as in CUB and
// Thrust, and on every backend): B's elements are compared and written as
// those types. The CPU backends convert through as_type; the same object comes
// back by reference when no conversion is needed.
#pragma once

#include <type_traits>
#include <utility>

namespace libmerge::detail {

template <class T, class X>
decltype(auto) as_type(X&& x) {
  if constexpr (std::is_same_v<std::decay_t<X>, T>) {
    return std::forward<X>(x);
  } else {
    return static_cast<T>(std::forward<X>(x));
  }
}

}  // namespace libmerge::detail
