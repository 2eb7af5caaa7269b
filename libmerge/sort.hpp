// lm::sort and lm::sort_by_key: a stable sort by the fastest method the
// backend has for the keys and the input. The CUDA backend takes CUB's radix
// sort for numbers in their natural order (or its reverse) unless one read of
// the keys finds them sorted or in long sorted runs, where the merge sort
// gains (backends/cuda/adaptive_sort.cuh); other backends, other keys and
// comparators take the backend's merge sort. lm::merge_sort stays what it says.
#pragma once

#include "merge_sort.hpp"

namespace libmerge {
namespace detail {

template <class Policy, class KeyIt, class ValIt, class Comp>
void sort_by(const Policy& policy, KeyIt first, index_t n, ValIt vals, Comp comp) {
  const auto& exec = resolve_policy(policy);
  if constexpr (impl_for<algo::sort, Policy>::available) {
    impl_for<algo::sort, Policy>::run(exec, first, n, vals, comp);
  } else {
    impl_for<algo::merge_sort, Policy>::run(exec, first, n, vals, vals, comp);
  }
}

}  // namespace detail

// Sorts [first, last) in place, stable (equal keys keep their order).
template <class Policy, class KeyIt, class Comp = less<>, class = detail::require_policy<Policy>>
void sort(const Policy& policy, KeyIt first, KeyIt last, Comp comp = Comp()) {
  const index_t n = detail::checked_length(first, last, "sort", "first", "last");
  if (n < 2 && !detail::is_collective_v<Policy>) return;
  detail::check_sort_comparator(detail::resolve_policy(policy), first, n, comp, "sort", "[first, last)");
  detail::sort_by(policy, first, n, detail::no_values{}, comp);
}

// Sorts keys, stable, and applies the same permutation to values_first[0, n).
template <class Policy, class KeyIt, class ValIt, class Comp = less<>, class = detail::require_policy<Policy>>
void sort_by_key(const Policy& policy, KeyIt keys_first, KeyIt keys_last, ValIt values_first, Comp comp = Comp()) {
  const index_t n = detail::checked_length(keys_first, keys_last, "sort_by_key", "keys_first", "keys_last");
  if (n < 2 && !detail::is_collective_v<Policy>) return;
  if constexpr (!detail::is_collective_v<Policy>) {
    detail::check_disjoint("sort_by_key", {detail::range_of("keys_first", keys_first, n),
                                           detail::range_of("values_first", values_first, n)},
                           {});
  }
  detail::check_sort_comparator(detail::resolve_policy(policy), keys_first, n, comp, "sort_by_key",
                                "[keys_first, keys_last)");
  detail::sort_by(policy, keys_first, n, values_first, comp);
}

}  // namespace libmerge
