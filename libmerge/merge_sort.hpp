// lm::merge_sort, lm::merge_sort_by_key, lm::merge_sort_indices: argument
// checks, then the policy's backend. All three sort in place and are stable.
// Precondition (checked only by a .checked() policy): comp is a strict weak
// ordering; if not, the order is unspecified, but no access leaves the range
// and the call returns.
#pragma once

#include <iterator>

#include "detail/checked.hpp"
#include "detail/config.hpp"
#include "functional.hpp"

namespace libmerge {

template <class Policy, class KeyIt, class Comp = less<>, class = detail::require_policy<Policy>>
void merge_sort(const Policy& policy, KeyIt first, KeyIt last, Comp comp = Comp()) {
  const index_t n = detail::checked_length(first, last, "merge_sort", "first", "last");
  if (n < 2 && !detail::is_collective_v<Policy>) return;
  const auto& exec = detail::resolve_policy(policy);
  detail::check_sort_comparator(exec, first, n, comp, "merge_sort", "[first, last)");
  detail::impl_for<algo::merge_sort, Policy>::run(exec, first, n, detail::no_values{},
                                                  detail::no_values{}, comp);
}

// Sorts keys and applies the same permutation to values_first[0, n).
template <class Policy, class KeyIt, class ValIt, class Comp = less<>, class = detail::require_policy<Policy>>
void merge_sort_by_key(const Policy& policy, KeyIt keys_first, KeyIt keys_last, ValIt values_first,
                       Comp comp = Comp()) {
  const index_t n =
      detail::checked_length(keys_first, keys_last, "merge_sort_by_key", "keys_first", "keys_last");
  if (n < 2 && !detail::is_collective_v<Policy>) return;
  // Keys and values must not share memory. A collective policy checks it in
  // its failure protocol (every rank must hear of one rank's bad arguments).
  if constexpr (!detail::is_collective_v<Policy>) {
    detail::check_disjoint("merge_sort_by_key", {detail::range_of("keys_first", keys_first, n),
                                                 detail::range_of("values_first", values_first, n)},
                           {});
  }
  const auto& exec = detail::resolve_policy(policy);
  detail::check_sort_comparator(exec, keys_first, n, comp, "merge_sort_by_key", "[keys_first, keys_last)");
  detail::impl_for<algo::merge_sort, Policy>::run(exec, keys_first, n, values_first, values_first,
                                                  comp);
}

// Sorts keys; indices_first[i] receives the original position of the i-th
// sorted key. The index type must hold n - 1.
template <class Policy, class KeyIt, class IndexIt, class Comp = less<>, class = detail::require_policy<Policy>>
void merge_sort_indices(const Policy& policy, KeyIt keys_first, KeyIt keys_last,
                        IndexIt indices_first, Comp comp = Comp()) {
  const index_t n =
      detail::checked_length(keys_first, keys_last, "merge_sort_indices", "keys_first", "keys_last");
  detail::check_output_range<IndexIt>(n - 1, false, "merge_sort_indices", "indices_first");
  // n == 1 still goes to the backend: indices_first may be device memory that
  // only the backend can write.
  if (n == 0) return;
  detail::check_disjoint("merge_sort_indices",
                         {detail::range_of("keys_first", keys_first, n), detail::range_of("indices_first", indices_first, n)},
                         {});
  using index_type = typename std::iterator_traits<IndexIt>::value_type;
  const auto& exec = detail::resolve_policy(policy);
  detail::check_sort_comparator(exec, keys_first, n, comp, "merge_sort_indices", "[keys_first, keys_last)");
  detail::impl_for<algo::merge_sort, Policy>::run(exec, keys_first, n,
                                                  detail::counting_values<index_type>{}, indices_first,
                                                  comp);
}

}  // namespace libmerge
