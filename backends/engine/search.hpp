// The engine's one search loop, over a predicate that says whether position i
// lies before the answer: a thread's binary search, two in lockstep, and a
// warp's 33-ary search. Plain C++, host and device (the warp form: device only).
#pragma once

#include "../../libmerge/detail/config.hpp"

namespace libmerge::detail {

// The first i in [lo, hi) for which before(i) is false, or hi, when before
// is true and then false over [lo, hi) (a partition point). Every probe lies
// in [lo, hi) and it ends after log2(hi - lo + 1) probes whatever before
// answers. before is called once a probe, in order, so a caller may narrow
// state of its own from each answer (multiway.hpp's halves_split does).
template <class Index, class Before>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE Index first_not_before(Index lo, Index hi, Before&& before) {
  while (lo < hi) {
    const Index mid = lo + (hi - lo) / 2;
    if (before(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Two independent first_not_before searches, a step of each in turn, so that
// a thread has both loads in flight at once. lo0 and lo1 become the answers.
template <class Index, class Before0, class Before1>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE void first_not_before_both(Index& lo0, Index hi0, Before0&& before0,
                                                                    Index& lo1, Index hi1, Before1&& before1) {
  while (lo0 < hi0 || lo1 < hi1) {
    if (lo0 < hi0) {
      const Index mid = lo0 + (hi0 - lo0) / 2;
      if (before0(mid)) lo0 = mid + 1; else hi0 = mid;
    }
    if (lo1 < hi1) {
      const Index mid = lo1 + (hi1 - lo1) / 2;
      if (before1(mid)) lo1 = mid + 1; else hi1 = mid;
    }
  }
}

#if defined(__CUDACC__)
// first_not_before by a whole warp (every lane passes the same range and
// predicate; all return the answer): each lane tests one of 32 evenly spaced
// points, and the range narrows to the gap around the first that is not
// before. A chain of log32 dependent loads for 32 times the loads: for searches
// too few to hide a thread's chain (warp_partitions_max). Every probe lies in
// [lo, hi).
template <class Index, class Before>
__device__ __forceinline__ Index warp_first_not_before(Index lo, Index hi, Before&& before) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  while (lo < hi) {
    const Index span = hi - lo;
    const Index p = lo + span * lane / 32;  // p < hi
    const unsigned first = __ballot_sync(~0u, before(p));
    const int c = ~first ? __ffs(static_cast<int>(~first)) - 1 : 32;  // lanes below c: before
    const Index next_lo = c == 0 ? lo : lo + span * (c - 1) / 32 + 1;
    hi = c == 32 ? hi : lo + span * c / 32;
    lo = next_lo;
  }
  return lo;
}
#endif

}  // namespace libmerge::detail
