// The bound searches, on search.hpp's loop: a needle's lower or upper bound
// (bound_within), its rank in one sequence of a k-way merge (rank_in_run), and
// K needles at once, branch-free (bounds_in_lockstep, bounds_in_lockstep_4).
// Plain C++, host and device.
#pragma once

#include "../../libmerge/detail/config.hpp"
#include "search.hpp"

namespace libmerge::detail {

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

}  // namespace libmerge::detail
