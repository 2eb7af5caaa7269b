// The engine's one search loop, over a predicate that says whether position i
// lies before the answer (a thread's binary search, two in lockstep, and a
// warp's 33-ary search), and the searches made of it: bounds, ranks in a run,
// and the merge path. Plain C++, host and device (the warp form: device only).
#pragma once

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/search_tags.hpp"

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

// The bound searches, on the loop above: a needle's lower or upper bound
// (bound_within), its rank in one sequence of a k-way merge (rank_in_run), and
// K needles at once, branch-free (bounds_in_lockstep, bounds_in_lockstep_4).
// Plain C++, host and device.

// First position in hay[lo, hi) whose element is not before x (Upper: is
// after x), or hi. Every probe lies in [lo, hi), whatever comp does. Index may
// be int where the caller's positions fit (fewer instructions on the GPU).
template <bool Upper, class Hay, class Index, class T, class Comp>
LIBMERGE_HOST_DEVICE inline Index bound_within(Hay hay, Index lo, Index hi, const T& x, Comp& comp) {
  return first_not_before(lo, hi, [&](Index mid) { return Upper ? !comp(x, hay[mid]) : comp(hay[mid], x); });
}

// How many of run[lo, hi) come before x in a stable merge of several sorted
// sequences, x from another one. Ties go to the earlier sequence: x's upper
// bound in run when run_is_earlier, else its lower bound. The k-way probe: the
// element of rank R splits each sequence at rank_in_run, and those add up to R.
template <class Run, class Index, class T, class Comp>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE Index rank_in_run(Run run, Index lo, Index hi, const T& x, bool run_is_earlier,
                                                            Comp& comp) {
  return first_not_before(lo, hi, [&](Index mid) { return run_is_earlier ? !comp(x, run[mid]) : comp(run[mid], x); });
}

// K bound searches in lockstep: pos[k] as bound_within for x[k]. Branch-free,
// every needle halves the same length, so the K loads of a step are in flight
// together (a plain binary search has one load in flight a thread).
template <bool Upper, int K, class Index, class Hay, class T, class Comp>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE void bounds_in_lockstep(Hay hay, Index lo, Index hi, const T (&x)[K],
                                                                  Index (&pos)[K], Comp& comp) {
  const auto before = [&](Index p, const T& v) { return Upper ? !comp(v, hay[p]) : comp(hay[p], v); };
  LIBMERGE_UNROLL
  for (int k = 0; k < K; ++k) pos[k] = lo;
  Index n = hi - lo;
  if (n <= 0) return;
  while (n > 1) {
    const Index half = n / 2;
    LIBMERGE_UNROLL
    for (int k = 0; k < K; ++k) pos[k] = before(pos[k] + half, x[k]) ? pos[k] + half : pos[k];
    n -= half;
  }
  LIBMERGE_UNROLL
  for (int k = 0; k < K; ++k) pos[k] += before(pos[k], x[k]) ? 1 : 0;
}

// The same, 4-ary (three probes a step): half the chain of dependent loads for
// 1.5 times the loads. Invariant: pos[k]'s answer lies in
// [pos[k], pos[k] + len[k]]; every probe lies in [lo, hi).
template <bool Upper, int K, class Index, class Hay, class T, class Comp>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE void bounds_in_lockstep_4(Hay hay, Index lo, Index hi, const T (&x)[K],
                                                                    Index (&pos)[K], Comp& comp) {
  const auto before = [&](Index p, const T& v) { return Upper ? !comp(v, hay[p]) : comp(hay[p], v); };
  Index len[K];
  LIBMERGE_UNROLL
  for (int k = 0; k < K; ++k) {
    pos[k] = lo;
    len[k] = hi - lo;
  }
  if (hi <= lo) return;
  Index longest = hi - lo;
  while (longest > 3) {
    longest = 0;
    LIBMERGE_UNROLL
    for (int k = 0; k < K; ++k) {
      const Index q = len[k] / 4;
      if (q > 0) {
        const int c = int(before(pos[k] + q, x[k])) + int(before(pos[k] + 2 * q, x[k])) +
                      int(before(pos[k] + 3 * q, x[k]));
        pos[k] += c * q;
        len[k] = c == 3 ? len[k] - 3 * q : q;
      }
      longest = len[k] > longest ? len[k] : longest;
    }
  }
  LIBMERGE_UNROLL
  for (int k = 0; k < K; ++k) {
    while (len[k] > 1) {
      const Index half = len[k] / 2;
      pos[k] = before(pos[k] + half, x[k]) ? pos[k] + half : pos[k];
      len[k] -= half;
    }
    if (len[k] == 1) pos[k] += before(pos[k], x[k]) ? 1 : 0;
  }
}

// The merge-path search (Odeh et al., "Merge Path - Parallel Merging Made
// Simple", 2012; the co-rank function of seeds/004; MergePath in seeds/000),
// as the loop above over a_goes_first. Plain C++ for host and device, so
// the CPU tests check it against a brute-force co-rank.

// Does a_key come before b_key in the merge? lower: A wins ties (a stable
// merge, lower-bound searches of A); upper: B wins ties.
template <bounds Bounds, class AKey, class BKey, class Comp>
LIBMERGE_HOST_DEVICE bool a_goes_first(const AKey& a_key, const BKey& b_key, Comp& comp) {
  if constexpr (Bounds == bounds::lower) {
    return !comp(b_key, a_key);
  } else {
    return comp(a_key, b_key);
  }
}

// The splits diagonal diag of merging na elements of A with nb of B can have:
// [max(0, diag - nb), min(diag, na)] elements of A. Every search along the
// diagonal starts from it, so each probe is in range whatever comp does.
template <class Index>
struct split_range {
  Index lo, hi;
  // [lo, hi] narrowed to a bracket the caller knows. A bracket that misses the
  // range (only when comp is not a strict weak order) leaves the whole range.
  LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE split_range narrowed(Index from, Index to) const {
    split_range r{from > lo ? from : lo, to < hi ? to : hi};
    if (r.lo > r.hi) r = *this;
    return r;
  }
};

template <class Index>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE split_range<Index> diagonal_range(Index na, Index nb, Index diag) {
  return {diag > nb ? diag - nb : Index(0), diag < na ? diag : na};
}

// merge_path (below) when the answer is known to lie in [lo, hi]: fewer steps.
template <bounds Bounds, class Index, class AIt, class BIt, class Comp>
LIBMERGE_HOST_DEVICE Index merge_path_within(AIt a, Index na, BIt b, Index nb, Index diag, Index lo, Index hi,
                                             Comp& comp) {
  const split_range<Index> r = diagonal_range(na, nb, diag).narrowed(lo, hi);
  return first_not_before(r.lo, r.hi,
                          [&](Index mid) { return a_goes_first<Bounds>(a[mid], b[diag - 1 - mid], comp); });
}

// How many of the first `diag` outputs of merging a[0, na) and b[0, nb) come
// from A. A binary search along the cross-diagonal: every probe is in range
// (a[mid] with mid < min(diag, na), b[diag - 1 - mid] with diag - 1 - mid < nb),
// and it ends after log2(min(na, nb) + 1) steps whatever comp does.
// Index is int inside a tile (cheaper on the GPU) and index_t across the input.
// H200, partition kernel, 2^20 keys: 0.0208 ms against 0.0246 for a 4-way search (docs/cuda-merge.md)
template <bounds Bounds, class Index, class AIt, class BIt, class Comp>
LIBMERGE_HOST_DEVICE Index merge_path(AIt a, Index na, BIt b, Index nb, Index diag, Comp comp) {
  return merge_path_within<Bounds>(a, na, b, nb, diag, Index(0), diag, comp);
}

#if defined(__CUDACC__)
// merge_path by a whole warp (32 probes a round), where few splits are to be
// found. Every lane passes the same arguments; all return the answer.
template <bounds Bounds = bounds::lower, class AIt, class BIt, class Comp>
__device__ __forceinline__ index_t warp_merge_path(AIt a, index_t na, BIt b, index_t nb, index_t diag, Comp& comp) {
  const split_range<index_t> r = diagonal_range(na, nb, diag);
  return warp_first_not_before(r.lo, r.hi,
                               [&](index_t p) { return a_goes_first<Bounds>(a[p], b[diag - 1 - p], comp); });
}
#endif

}  // namespace libmerge::detail
