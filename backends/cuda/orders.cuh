// Which comparators order numbers as numbers: traits the launch choices
// (launch.cuh) and the CTA merges (cta_merge.cuh) both ask.
#pragma once

#include <type_traits>

#include <cuda/std/functional>

#include "../../libmerge/functional.hpp"

namespace libmerge::detail::cuda_backend {

// Comparators that order numbers as numbers (or in reverse): one instruction a comparison. Under them the
// search interpolates, the sort takes 4-way passes from a smaller size, and the CTA merges compare whatever
// a slot past a side's end holds (side_key). Thrust's less and greater are cuda::std's.
template <class Comp>
struct numeric_order : std::false_type {};
template <class T>
struct numeric_order<libmerge::less<T>> : std::true_type {};
template <class T>
struct numeric_order<libmerge::greater<T>> : std::true_type {};
template <class T>
struct numeric_order<::cuda::std::less<T>> : std::true_type {};
template <class T>
struct numeric_order<::cuda::std::greater<T>> : std::true_type {};

template <class T>
inline constexpr bool is_number_v = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

// Keys that are numbers under numeric_order.
template <class Comp, class K>
inline constexpr bool orders_numbers_v = numeric_order<Comp>::value && is_number_v<K>;

}  // namespace libmerge::detail::cuda_backend
