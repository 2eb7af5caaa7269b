// The scans of a checked call (libmerge/detail/checked.hpp) on the OpenMP
// team: the same answers as the serial backend's (the smallest bad position),
// each thread scanning its share; a comparator's exception is rethrown.
#pragma once

#include <algorithm>
#include <vector>

#include "../../libmerge/detail/checked.hpp"
#include "../../libmerge/detail/config.hpp"
#include "team.hpp"

namespace libmerge::detail {

template <>
struct backend_impl<algo::precondition, backend::omp> {
  static constexpr bool available = true;

  template <class Policy, class It, class Comp>
  static index_t sorted_until(const Policy& policy, It first, index_t n, Comp comp, const char*, const char*) {
    // Positions 1 .. n-1, in shares.
    return smallest(omp_backend::team_size(policy, n), n - 1, [&](index_t k) { return comp(first[k + 1], first[k]); }) +
           1;
  }

  template <class Policy, class It, class Comp>
  static sample_violation bad_sample(const Policy& policy, It first, index_t n, Comp comp, const char*,
                                     const char*) {
    const index_t m = sample_count(n);
    const index_t j = smallest(omp_backend::team_size(policy, m), m, [&](index_t k) {
      return comparator_violation(first, n, k, comp) != 0;
    });
    if (j == m) return {};
    return {j, comparator_violation(first, n, j, comp)};  // the rule, for the message
  }

 private:
  // The smallest k in [0, count) with bad(k), or count: each thread scans
  // its share up to its first hit.
  template <class Bad>
  static index_t smallest(int threads, index_t count, Bad&& bad) {
    std::vector<index_t> found(static_cast<std::size_t>(threads > 0 ? threads : 1), count);
    omp_backend::parallel(threads, [&](const omp_backend::team& t) {
      t.run([&] {
        const index_t begin = omp_backend::share_begin(count, t.size(), t.rank());
        const index_t end = omp_backend::share_begin(count, t.size(), t.rank() + 1);
        for (index_t k = begin; k < end; ++k) {
          if (bad(k)) {
            found[static_cast<std::size_t>(t.rank())] = k;
            return;
          }
        }
      });
    });
    return *std::min_element(found.begin(), found.end());
  }
};

}  // namespace libmerge::detail
