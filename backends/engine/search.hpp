// The one search loop of the engine, in the three forms the algorithms need:
// a thread's binary search (first_not_before), two of them in lockstep
// (first_not_before_both: their loads in flight together) and a warp's
// 33-ary search (warp_first_not_before: 32 probes a round). Every search of
// libmerge is one of these over a predicate that says whether position i
// lies before the answer: the merge path (merge_path.hpp), the bound
// searches (bounds.hpp) and the k-way splits (multiway.hpp). Plain C++, host
// and device (the warp form is device code only).
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
// a thread has both loads in flight at once (the 4-way split's two inner
// searches). lo0 and lo1 become the answers.
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
// first_not_before by a whole warp (every lane calls it with the same range
// and predicate; all return the answer): each lane tests one of 32 evenly
// spaced points of the range, the first lane whose point is not before ends
// the true prefix, and the range narrows to the gap around it. So the chain
// of dependent loads is log32 of the range long (4 rounds for 2^19, where a
// binary search makes 19), for 32 times the loads: for searches too few to
// hide a thread's chain (partition.cuh: warp_partitions_max). Every probe lies
// in [lo, hi).
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
