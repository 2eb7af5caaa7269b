// lm::merge and lm::merge_by_key: argument checks, then the policy's backend.
//
// Preconditions (checked only by a .checked() policy; violating them gives
// unspecified output, never an out-of-range access or a hang): both inputs
// sorted by comp, comp a strict weak ordering. Outputs that overlap the inputs
// or each other are an std::invalid_argument (detail/checked.hpp).
#pragma once

#include <utility>

#include "detail/checked.hpp"
#include "detail/config.hpp"
#include "functional.hpp"

namespace libmerge {

// Merges sorted [a_first, a_last) and [b_first, b_last) into out. Stable: of
// equal keys, A's come first, each input keeping its order. Returns out's end.
template <class Policy, class AIt, class BIt, class OutIt, class Comp = less<>, class = detail::require_policy<Policy>>
OutIt merge(const Policy& policy, AIt a_first, AIt a_last, BIt b_first, BIt b_last, OutIt out,
            Comp comp = Comp()) {
  const index_t na = detail::checked_length(a_first, a_last, "merge", "a_first", "a_last");
  const index_t nb = detail::checked_length(b_first, b_last, "merge", "b_first", "b_last");
  if (na + nb == 0) return out;
  detail::check_disjoint("merge", {detail::range_of("out", out, na + nb)},
                         {detail::range_of("a_first", a_first, na), detail::range_of("b_first", b_first, nb)});
  const auto& exec = detail::resolve_policy(policy);
  detail::check_sorted_inputs(exec, a_first, na, b_first, nb, comp, "merge", "[a_first, a_last)", "[b_first, b_last)");
  detail::impl_for<algo::merge, Policy>::run(exec, a_first, na, b_first, nb, detail::no_values{},
                                             detail::no_values{}, out, detail::no_values{}, comp);
  return out + (na + nb);
}

// merge with values moving alongside the keys. Returns both outputs' ends.
template <class Policy, class AKeyIt, class BKeyIt, class AValIt, class BValIt, class KeyOutIt,
          class ValOutIt, class Comp = less<>, class = detail::require_policy<Policy>>
std::pair<KeyOutIt, ValOutIt> merge_by_key(const Policy& policy, AKeyIt a_keys_first,
                                           AKeyIt a_keys_last, BKeyIt b_keys_first,
                                           BKeyIt b_keys_last, AValIt a_vals_first,
                                           BValIt b_vals_first, KeyOutIt keys_out,
                                           ValOutIt vals_out, Comp comp = Comp()) {
  const index_t na =
      detail::checked_length(a_keys_first, a_keys_last, "merge_by_key", "a_keys_first", "a_keys_last");
  const index_t nb =
      detail::checked_length(b_keys_first, b_keys_last, "merge_by_key", "b_keys_first", "b_keys_last");
  if (na + nb == 0) return {keys_out, vals_out};
  detail::check_disjoint(
      "merge_by_key", {detail::range_of("keys_out", keys_out, na + nb), detail::range_of("vals_out", vals_out, na + nb)},
      {detail::range_of("a_keys_first", a_keys_first, na), detail::range_of("b_keys_first", b_keys_first, nb),
       detail::range_of("a_vals_first", a_vals_first, na), detail::range_of("b_vals_first", b_vals_first, nb)});
  const auto& exec = detail::resolve_policy(policy);
  detail::check_sorted_inputs(exec, a_keys_first, na, b_keys_first, nb, comp, "merge_by_key",
                              "[a_keys_first, a_keys_last)", "[b_keys_first, b_keys_last)");
  detail::impl_for<algo::merge, Policy>::run(exec, a_keys_first, na, b_keys_first, nb, a_vals_first,
                                             b_vals_first, keys_out, vals_out, comp);
  return {keys_out + (na + nb), vals_out + (na + nb)};
}

}  // namespace libmerge
