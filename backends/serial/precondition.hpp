// The scans of a checked call (libmerge/detail/checked.hpp): the reference
// the other backends' scans are tested against.
#pragma once

#include "../../libmerge/detail/checked.hpp"
#include "../../libmerge/detail/config.hpp"

namespace libmerge::detail {

template <>
struct backend_impl<algo::precondition, backend::serial> {
  static constexpr bool available = true;

  // The first i with first[i] before first[i - 1], or n.
  template <class Policy, class It, class Comp>
  static index_t sorted_until(const Policy&, It first, index_t n, Comp comp, const char*, const char*) {
    for (index_t i = 1; i < n; ++i) {
      if (comp(first[i], first[i - 1])) return i;
    }
    return n;
  }

  // The first sample where the comparator breaks a rule, and the rule.
  template <class Policy, class It, class Comp>
  static sample_violation bad_sample(const Policy&, It first, index_t n, Comp comp, const char*, const char*) {
    for (index_t j = 0; j < sample_count(n); ++j) {
      if (const int rule = comparator_violation(first, n, j, comp)) return {j, rule};
    }
    return {};
  }
};

}  // namespace libmerge::detail
