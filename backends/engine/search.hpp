// The engine's one search loop, over a predicate that says whether position i
// lies before the answer (a thread's binary search, two in lockstep, and a
// warp's 33-ary search), and the searches made of it: bounds, ranks in a run,
// the merge path, and the k-way merge path (2 or 4 runs: group_split,
// halves_split; from a split of run samples: sampled_split; any number:
// multiway_split). Plain C++, host and device (the warp form: device only).
#pragma once

#include <type_traits>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/functional.hpp"

namespace libmerge::detail {

// The first i in [lo, hi) for which before(i) is false, or hi, when before
// is true and then false over [lo, hi) (a partition point). Every probe lies
// in [lo, hi) and it ends after log2(hi - lo + 1) probes whatever before
// answers. before is called once a probe, in order, so a caller may narrow
// state of its own from each answer (halves_split does).
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

// first_not_before galloping from lo: probes lo, lo + 1, lo + 3, lo + 7, ... until one is not before, then
// first_not_before in that gap; about 2 log2(d) probes for an answer d past lo (a binary search takes
// log2(hi - lo)), every one in [lo, hi). For answers likely near lo: runs of equal keys, dense cursors.
template <class Index, class Before>
LIBMERGE_HOST_DEVICE Index gallop_first_not_before(Index lo, Index hi, Before&& before) {
  for (Index step = 1; lo < hi; step = step <= (hi - lo) / 2 ? 2 * step : hi - lo) {  // (never past hi)
    const Index probe = lo + (step < hi - lo ? step : hi - lo) - 1;
    if (!before(probe)) return first_not_before(lo, probe, before);
    lo = probe + 1;
  }
  return lo;
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

// bound_within by gallop_first_not_before: from lo, where the answer is likely near.
template <bool Upper, class Hay, class Index, class T, class Comp>
LIBMERGE_HOST_DEVICE inline Index gallop_within(Hay hay, Index lo, Index hi, const T& x, Comp& comp) {
  return gallop_first_not_before(lo, hi, [&](Index mid) { return Upper ? !comp(x, hay[mid]) : comp(hay[mid], x); });
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

// ---------------------------------------------------------------------------
// The k-way merge path.

// A 4-way merge is the merge of (R0 R1) and (R2 R3): a merge-path search whose
// probes are merge-path searches, both lower bounds, so the pass is stable.
// H100, 2^28: a warp-wide 33-ary outer search took 0.5 to 4.6 ms a pass (docs/cuda-merge-sort.md)

// Where a diagonal of a group's merge falls: s[k] elements of run k precede it.
template <int Ways>
struct run_split {
  index_t s[Ways];
};

// One half of a group: a run (Ways = 2) or two runs merged (Ways = 4).
template <int Ways, class K>
struct run_half {
  const K* x;  // first run of the half
  index_t nx;
  const K* y;  // second run (Ways = 4)
  index_t ny;
  LIBMERGE_HOST_DEVICE index_t size() const { return Ways == 4 ? nx + ny : nx; }
  template <class Comp>
  LIBMERGE_HOST_DEVICE K at(index_t i, index_t split, Comp& comp) const {
    if constexpr (Ways == 2) {
      return x[i];
    } else {
      const index_t j = i - split;
      const bool take_x = split < nx && (j >= ny || a_goes_first<bounds::lower>(x[split], y[j], comp));
      return take_x ? x[split] : y[j];
    }
  }
};

// A group's runs: run k is keys[k * width, ...) of the group, len[k] long.
template <int Ways, class K>
struct run_group {
  const K* keys;
  index_t width;
  index_t len[Ways];
  LIBMERGE_HOST_DEVICE const K* run(int k) const { return keys + k * width; }
  LIBMERGE_HOST_DEVICE const K& key(int k, index_t i) const { return keys[k * width + i]; }
  // Half h of a 4-way group: runs 2h and 2h + 1.
  LIBMERGE_HOST_DEVICE run_half<4, K> half(int h) const {
    return {run(2 * h), len[2 * h], run(2 * h + 1), len[2 * h + 1]};
  }
};

// A known inner split (rank c splits at s), bracketing the next search.
struct known_split {
  index_t c, s;
};

// Both halves' inner splits (ranks c0, c1), bracketed; the two binary searches
// run in lockstep so their loads are in flight together.
template <int Ways, class K, class Comp>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE void inner_splits(const run_half<Ways, K>& h0, index_t c0, known_split lo0, known_split hi0,
                                             const run_half<Ways, K>& h1, index_t c1, known_split lo1,
                                             known_split hi1, index_t& s0, index_t& s1, Comp& comp) {
  if constexpr (Ways == 2) {
    s0 = c0;
    s1 = c1;
  } else {
    auto bracket = [](const run_half<Ways, K>& h, index_t c, known_split lo, known_split hi, index_t& from,
                      index_t& to) {
      from = lo.s > c - (hi.c - hi.s) ? lo.s : c - (hi.c - hi.s);
      to = hi.s < lo.s + (c - lo.c) ? hi.s : lo.s + (c - lo.c);
      // Clamped: probes stay in range even when comp is no strict weak order.
      const split_range<index_t> ok = diagonal_range(h.nx, h.ny, c);
      from = from > ok.lo ? from : ok.lo;
      to = to < ok.hi ? to : ok.hi;
      if (from > to) {
        from = ok.lo;
        to = ok.hi;
      }
    };
    index_t b0, b1;
    bracket(h0, c0, lo0, hi0, s0, b0);
    bracket(h1, c1, lo1, hi1, s1, b1);
    first_not_before_both(
        s0, b0, [&](index_t mid) { return a_goes_first<bounds::lower>(h0.x[mid], h0.y[c0 - 1 - mid], comp); },
        s1, b1, [&](index_t mid) { return a_goes_first<bounds::lower>(h1.x[mid], h1.y[c1 - 1 - mid], comp); });
  }
}

// The element of rank r - 1 of a half whose split at rank r is s: the later,
// in the merge's order, of x[s - 1] and y[r - s - 1].
template <class K, class Comp>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE K last_before(const run_half<4, K>& h, index_t r, index_t s, Comp& comp) {
  const index_t t = r - s;
  if (s == 0) return h.y[t - 1];
  if (t == 0) return h.x[s - 1];
  return a_goes_first<bounds::lower>(h.x[s - 1], h.y[t - 1], comp) ? h.y[t - 1] : h.x[s - 1];
}

// Samples of the halves' inner splits at multiples of nv (s[h][j];
// sample_kernel) with the keys of ranks j * nv and j * nv - 1: searching
// them first brackets each inner search to one tile. By value (a pointer puts
// it in local memory); s[0] null for none.
template <class K>
struct half_samples {
  const index_t* s[2];
  const K* keys[2];
  index_t nv;
};

// The split of a 4-way merge at diagonal d (h0: runs 0, 1; h1: runs 2, 3).
// Bracketing inner searches by earlier outer probes halves the loads
// (log2(w)^2 / 2); samples (d a multiple of samples.nv) start in one interval.
template <class K, class Comp>
LIBMERGE_HOST_DEVICE run_split<4> halves_split(const run_half<4, K>& h0, const run_half<4, K>& h1, index_t d,
                                               Comp& comp,
                                               half_samples<K> samples = {{nullptr, nullptr}, {nullptr, nullptr}, 1}) {
  run_split<4> r;
  const index_t n0 = h0.size(), n1 = h1.size();
  index_t lo = d > n1 ? d - n1 : 0;
  index_t hi = d < n0 ? d : n0;
  known_split k0_lo{0, 0}, k0_hi{n0, h0.nx}, k1_lo{0, 0}, k1_hi{n1, h1.nx};
  if (samples.s[0] != nullptr && lo < hi) {
    // Outer probes at m = j * nv read sample keys of j and L - j.
    const index_t nv = samples.nv, L = d / nv;
    const index_t* s0 = samples.s[0];
    const index_t* s1 = samples.s[1];
    const index_t first = (lo + nv - 1) / nv, last = (hi - 1) / nv + 1;  // j with lo <= j * nv < hi
    const index_t a = first_not_before(first, last, [&](index_t j) {
      return a_goes_first<bounds::lower>(samples.keys[0][2 * j], samples.keys[1][2 * (L - j) + 1], comp);
    });
    if (a > first) {  // the split is past (a - 1) * nv
      const index_t j = a - 1;
      lo = j * nv + 1;
      k0_lo = {j * nv, s0[j]};
      k1_hi = {(L - j) * nv, s1[L - j]};
    }
    if (a < last) {  // and not past a * nv
      hi = a * nv;
      k0_hi = {a * nv, s0[a]};
      k1_lo = {(L - a) * nv, s1[L - a]};
    }
  }
  // Each answer narrows the brackets of the inner searches after it.
  lo = first_not_before(lo, hi, [&](index_t mid) {
    const index_t e = d - 1 - mid;
    index_t s0, s1;
    inner_splits(h0, mid, k0_lo, k0_hi, h1, e, k1_lo, k1_hi, s0, s1, comp);
    const bool first = a_goes_first<bounds::lower>(h0.at(mid, s0, comp), h1.at(e, s1, comp), comp);
    if (first) {
      k0_lo = {mid, s0};
      k1_hi = {e, s1};
    } else {
      k0_hi = {mid, s0};
      k1_lo = {e, s1};
    }
    return first;
  });
  index_t s0, s1;
  inner_splits(h0, lo, k0_lo, k0_hi, h1, d - lo, k1_lo, k1_hi, s0, s1, comp);
  r.s[0] = s0;
  r.s[1] = lo - s0;
  r.s[2] = s1;
  r.s[3] = d - lo - s1;
  return r;
}

// The split of a group's merge at diagonal d (halves_split for 4 ways).
template <int Ways, class K, class Comp>
LIBMERGE_HOST_DEVICE run_split<Ways> group_split(const run_group<Ways, K>& g, index_t d, Comp& comp,
                                       half_samples<K> samples = {{nullptr, nullptr}, {nullptr, nullptr}, 1}) {
  if constexpr (Ways == 2) {
    (void)samples;
    run_split<Ways> r;
    const index_t a = merge_path<bounds::lower>(g.keys, g.len[0], g.keys + g.width, g.len[1], d, comp);
    r.s[0] = a;
    r.s[1] = d - a;
    return r;
  } else {
    return halves_split(g.half(0), g.half(1), d, comp, samples);
  }
}

// W runs as a group gives them (len[r], key(r, i), run(r): run_group, the k-way merge's four_runs).
// From a cut of the runs' samples to the cut at diagonal d * rate.every() of the runs: c.s[r] of run r's
// samples (sample j: its key j * rate.every(), in sg) precede sample diagonal d. The splitter, the last
// sample taken in the merge's order (ties: the later run), is found in each other run between its two
// samples (upper bound before the splitter's run, lower after: stable); then on to the target, fewer than
// W samples' spacing on, in steps that take, of the keys q = ceil(k / W) into each run, the first's q at
// once (fewer than k precede it): W independent loads a round, not k dependent steps. Bounded, so any comp
// ends; every probe is in range.
template <int W, class Runs, class SampleRuns, class Rate, class Comp>
LIBMERGE_HOST_DEVICE run_split<W> sampled_split(const Runs& g, const SampleRuns& sg, const run_split<W>& c, index_t d,
                                                Rate rate, Comp& comp) {
  run_split<W> cut;
  LIBMERGE_UNROLL
  for (int r = 0; r < W; ++r) cut.s[r] = 0;
  if (d == 0) return cut;
  using K = std::decay_t<decltype(g.key(0, 0))>;
  const auto every = rate.every();
  int rs = -1;
  K x{};
  LIBMERGE_UNROLL
  for (int r = 0; r < W; ++r) {
    if (c.s[r] == 0) continue;
    const auto k = sg.key(r, c.s[r] - 1);
    if (rs < 0 || !comp(k, x)) {
      rs = r;
      x = k;
    }
  }
  LIBMERGE_UNROLL
  for (int r = 0; r < W; ++r) {
    const index_t taken = c.s[r];
    if (r == rs) {
      cut.s[r] = every * (taken - 1) + 1;
    } else if (taken > 0) {
      const index_t hi = every * taken < g.len[r] ? every * taken : g.len[r];
      const index_t lo = every * (taken - 1) + 1 < hi ? every * (taken - 1) + 1 : hi;
      cut.s[r] = rank_in_run(g.run(r), lo, hi, x, r < rs, comp);
    }
  }
  index_t done = 0;
  LIBMERGE_UNROLL
  for (int r = 0; r < W; ++r) done += cut.s[r];
  const index_t target = d * every;
  for (index_t k = target - done < W * every ? target - done : W * every; k > 0;) {
    const index_t q = (k + W - 1) / W;
    int pick = -1;
    index_t take = 0;
    K first{};
    LIBMERGE_UNROLL
    for (int r = 0; r < W; ++r) {
      const index_t left = g.len[r] - cut.s[r];
      if (left <= 0) continue;
      const index_t p = left < q ? left : q;
      const auto e = g.key(r, cut.s[r] + p - 1);
      if (pick < 0 || comp(e, first)) {
        pick = r;
        first = e;
        take = p;
      }
    }
    if (pick < 0) break;
    LIBMERGE_UNROLL
    for (int r = 0; r < W; ++r) {
      if (r == pick) cut.s[r] += take;
    }
    k -= take;
  }
  return cut;
}

// Where diagonal d of the stable merge of k runs falls: lo[r] of run r's
// elements precede it at the end (lo, hi, count: k slots each). Each step
// counts, within every bracket, the elements before the widest bracket's middle
// (rank_in_run) and raises floors or lowers ceilings; at most k log2(n) steps.
template <class Run, class Comp>
LIBMERGE_HOST_DEVICE void multiway_split(const Run* runs, int k, index_t d, index_t* lo, index_t* hi, index_t* count,
                                         Comp& comp) {
  index_t total = 0;
  for (int r = 0; r < k; ++r) total += runs[r].n;
  for (int r = 0; r < k; ++r) {
    const index_t others = total - runs[r].n;
    lo[r] = d > others ? d - others : 0;
    hi[r] = d < runs[r].n ? d : runs[r].n;
  }
  for (;;) {
    int j = -1;
    index_t widest = 0;
    for (int r = 0; r < k; ++r) {
      if (hi[r] - lo[r] > widest) {
        widest = hi[r] - lo[r];
        j = r;
      }
    }
    if (j < 0) return;
    const index_t m = lo[j] + widest / 2;
    const auto x = runs[j].first[m];
    index_t before = 0;
    for (int r = 0; r < k; ++r) {
      count[r] = r == j ? m : rank_in_run(runs[r].first, lo[r], hi[r], x, r < j, comp);
      before += count[r];
    }
    const bool x_is_before = before < d;
    for (int r = 0; r < k; ++r) (x_is_before ? lo[r] : hi[r]) = count[r];
    if (x_is_before) lo[j] = m + 1;
  }
}

}  // namespace libmerge::detail
