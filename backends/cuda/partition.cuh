// Coarse-grained scheduling, shared by merge and sorted search: one partition
// kernel finds where the merge path crosses every tile boundary, so that each
// CTA of the next kernel knows its input ranges without searching global
// memory itself (MergePathPartitions in seeds/000).
//
// A "geometry" says which merge problem a diagonal belongs to: merge has one
// problem covering both inputs; a merge-sort pass has one per pair of sorted
// runs. Tiles never straddle two problems.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <iterator>
#include <type_traits>
#include <utility>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/detail/dispatch.hpp"
#include "../../libmerge/search_tags.hpp"
#include "device.cuh"
#include "error.hpp"
#include "launch.cuh"
#include "../engine/merge_path.hpp"

namespace libmerge::detail::cuda_backend {

// One merge: a[a_begin, a_begin + na) with b[b_begin, b_begin + nb), whose
// output starts at diagonal diag_begin.
struct merge_problem {
  index_t a_begin, na, b_begin, nb, diag_begin;
};

template <class It>
using value_of = std::remove_cv_t<typename std::iterator_traits<std::decay_t<It>>::value_type>;

// Reads keys as the merge's key type K (A's value type, as in CUB and Thrust),
// so that the partitions compare exactly what the tiles compare.
template <class K, class It>
struct keys_as {
  It it;
  LIBMERGE_HOST_DEVICE K operator[](index_t i) const { return static_cast<K>(it[i]); }
};

// The value type moved by a merge; keys-only merges move none (char stands in
// and occupies no shared memory).
template <class ValIt>
using merge_value_t = typename std::conditional_t<has_values<ValIt>, std::iterator_traits<std::decay_t<ValIt>>,
                                                  std::iterator_traits<char*>>::value_type;

// The geometry of merge and merge_by_key: a single problem. It also names the
// merge's element types, which every stage takes from here.
template <class AKeys, class BKeys, class AVals, class BVals>
struct single_merge {
  using key_type = value_of<AKeys>;
  using value_type = merge_value_t<AVals>;
  static constexpr bool with_values = has_values<AVals>;
  AKeys a_keys;
  BKeys b_keys;
  AVals a_vals;
  BVals b_vals;
  index_t na, nb;

  LIBMERGE_HOST_DEVICE index_t size() const { return na + nb; }
  LIBMERGE_HOST_DEVICE merge_problem problem_at(index_t) const { return {0, na, 0, nb, 0}; }
  // What the partition searches: both inputs read as the key type.
  LIBMERGE_HOST_DEVICE keys_as<key_type, AKeys> a_view(index_t i) const { return {a_keys + i}; }
  LIBMERGE_HOST_DEVICE keys_as<key_type, BKeys> b_view(index_t i) const { return {b_keys + i}; }
};

// Partitions of a single problem (merge, sorted search) found a thread each
// come 128 to a block.
inline constexpr int partition_block = 128;

// Up to this many partitions are found a warp each (partition_kernel with
// Lanes 32): few partitions leave most of the GPU idle, and each is then a
// chain of log2(n) dependent loads; a warp's 32 probes a round make it
// log32(n). Above it, a thread each (Lanes 1): the chain is hidden by the
// number of threads, and the warps' 32 times as many loads are not. H200,
// warps against threads: merge of 2^20 int32 keys (109 partitions) 0.0134
// against 0.0200 ms, 2^24 (1725) 0.0581 against 0.0606, but 2^24 pairs and
// int64 keys (3641) 0.0951 and 0.0991 against 0.0924 and 0.0940.
inline constexpr index_t warp_partitions_max = 3072;
// Partitions a block when each is found by a warp (1024 threads).
inline constexpr int partition_warps = 32;

// How the partitions of a single problem are found: a warp or a thread each,
// and in how many blocks. With the order check, neighbouring blocks share a
// partition (each block's last is the next one's first), so that no thread
// makes a second search to check its pair: that search doubled the kernel's
// chain of dependent loads (2^20 keys: 40 instead of 20).
struct partition_plan {
  bool warps;
  index_t blocks;  // also the bytes of out_of_order, when checked
};
inline partition_plan plan_partitions(index_t num_partitions, bool checked) {
  const bool warps = num_partitions <= warp_partitions_max;
  const index_t per_block = (warps ? partition_warps : partition_block) - (checked ? 1 : 0);
  const index_t spans = checked ? num_partitions - 1 : num_partitions;
  return {warps, spans <= 0 ? 1 : (spans + per_block - 1) / per_block};
}

// merge_path (Bounds::lower: A wins ties) by one warp, for a CTA that finds
// its own tile's split where no partition kernel ran before it, and for the
// partition kernel when it has few partitions to find: 32 probes a round
// instead of one, so the chain of dependent loads is log32 of the range long
// (4 rounds for runs of 2^19, where a binary search makes 19). Each lane tests
// one point of the range; the first lane whose A key does not go first ends
// the true prefix, and the range narrows to the gap around it. Every probe is
// in range whatever comp does (as in merge_path); all lanes return the answer.
template <bounds Bounds = bounds::lower, class AIt, class BIt, class Comp>
__device__ __forceinline__ index_t warp_merge_path(AIt a, index_t na, BIt b, index_t nb, index_t diag, Comp& comp) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  index_t lo = diag > nb ? diag - nb : 0;
  index_t hi = diag < na ? diag : na;
  while (lo < hi) {
    const index_t span = hi - lo;
    const index_t p = lo + span * lane / 32;  // p < hi; diag - 1 - p < nb
    const unsigned first = __ballot_sync(~0u, a_goes_first<Bounds>(a[p], b[diag - 1 - p], comp));
    const int c = ~first ? __ffs(static_cast<int>(~first)) - 1 : 32;  // lanes below c: A goes first
    const index_t next_lo = c == 0 ? lo : lo + span * (c - 1) / 32 + 1;
    hi = c == 32 ? hi : lo + span * c / 32;
    lo = next_lo;
  }
  return lo;
}

// Partitions a block of partition_kernel finds, with Lanes threads each.
template <int Lanes>
inline constexpr int partitions_per_block = Lanes == 1 ? partition_block : partition_warps;

// mp[p] = how many elements of A precede diagonal p * nv of its problem, each
// found by Lanes threads: one (merge_path) or a warp (warp_merge_path, for
// few partitions: plan_partitions). With `out_of_order` (sorted search), the
// block also checks that its partitions are consistent, each to the next: A's
// and B's positions both non-decreasing. They always are for sorted input and
// a strict weak order; when not, out_of_order[block] = 1 (else 0), and the
// search writes defined outputs instead of leaving positions no tile covers
// (the tiles' ranges overlap and leave gaps then).
template <bounds Bounds, int Lanes, class Geometry, class Comp>
__global__ void __launch_bounds__(partitions_per_block<Lanes> * Lanes)
    partition_kernel(Geometry g, index_t nv, index_t num_partitions, index_t* mp, Comp comp,
                     unsigned char* out_of_order) {
  static_assert(Lanes == 1 || Lanes == 32, "a partition is found by a thread or by a whole warp");
  constexpr int slots = partitions_per_block<Lanes>;
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  const bool checked = out_of_order != nullptr;
  const int slot = static_cast<int>(threadIdx.x) / Lanes;  // the block's partition this thread helps find
  const bool leader = threadIdx.x % Lanes == 0;
  const index_t per_block = checked ? slots - 1 : slots;
  const index_t p = static_cast<index_t>(blockIdx.x) * per_block + slot;
  const auto diag_of = [&](index_t k) { return k * nv < g.size() ? k * nv : g.size(); };
  index_t a = 0;
  if (p < num_partitions) {  // the same for all Lanes threads of a partition
    const index_t diag = diag_of(p);
    const merge_problem q = g.problem_at(diag);
    if constexpr (Lanes == 1) {
      a = merge_path<Bounds, index_t>(g.a_view(q.a_begin), q.na, g.b_view(q.b_begin), q.nb, diag - q.diag_begin,
                                      comp);
    } else {
      a = warp_merge_path<Bounds>(g.a_view(q.a_begin), q.na, g.b_view(q.b_begin), q.nb, diag - q.diag_begin, comp);
    }
  }
  // Checked, a block's last partition is written by the next block (its
  // first), unless it is the last of all.
  const bool last = slot + 1 == slots;
  if (leader && p < num_partitions && (!checked || !last || p + 1 == num_partitions)) mp[p] = a;
  if (!checked) return;
  __shared__ index_t found[slots];
  if (leader) found[slot] = a;
  __syncthreads();
  // Each pair of neighbours within the block; the block's last partition is
  // the next block's first, which checks the pair after it.
  const bool paired = leader && !last && p + 1 < num_partitions;
  const index_t next = paired ? found[slot + 1] : 0;
  const bool bad = paired && (next < a || diag_of(p + 1) - next < diag_of(p) - a);
  const int any = __syncthreads_or(bad);
  if (threadIdx.x == 0) out_of_order[blockIdx.x] = any ? 1 : 0;
}

// Fills mp[0, num_tiles] for tiles of nv elements (and out_of_order, one byte
// a block of plan_partitions, unless it is null).
template <bounds Bounds, class Geometry, class Comp>
void launch_partitions(const Geometry& g, index_t nv, index_t num_tiles, index_t* mp, Comp comp,
                       cudaStream_t stream, const device_info& dev, const char* algorithm,
                       unsigned char* out_of_order = nullptr) {
  const index_t num_partitions = num_tiles + 1;
  const partition_plan plan = plan_partitions(num_partitions, out_of_order != nullptr);
  auto run = [&](auto lanes) {
    constexpr int L = decltype(lanes)::value;
    launch(partition_kernel<Bounds, L, Geometry, Comp>, plan.blocks, partitions_per_block<L> * L, 0, stream, false,
           dev, algorithm, "partition_kernel", g, nv, num_partitions, mp, comp, out_of_order);
  };
  if (plan.warps) {
    run(std::integral_constant<int, 32>{});
  } else {
    run(std::integral_constant<int, 1>{});
  }
}

// ---------------------------------------------------------------------------
// Merge sort's passes merge Ways sorted runs at a time (Ways = 2 or 4). A
// 4-way merge is the merge of two 2-way merges, (R0 R1) and (R2 R3), so the
// place where output diagonal d of a group falls is a merge-path search over
// those two halves whose probes are themselves merge-path searches (the
// element of rank i of R0 merged with R1). Both searches take the lower bound
// (ties go to the earlier run), so the pass is stable. (A warp-wide 33-ary
// version of the outer search was measured first: its 32 lanes' inner
// searches fetched 32 times the sectors and made the partition kernel
// DRAM-bound, 0.5 to 4.6 ms a pass at 2^28 on an H100.)

// A group's runs: run k is keys[k * width, ...) of the group, len[k] long.
template <int Ways, class K>
struct run_group {
  const K* keys;
  index_t width;
  index_t len[Ways];
};

// Where a diagonal of a group's merge falls: s[k] elements of run k precede it.
template <int Ways>
struct run_split {
  index_t s[Ways];
};

// One half of a group: a run (Ways = 2) or two runs merged (Ways = 4), with
// the element of rank i given the split of rank i between its runs.
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

// A known point of a half's inner split (rank c has split s), used to bracket
// the next search: the split and the rank minus the split both grow with rank.
struct known_split {
  index_t c, s;
};

// The inner splits of both halves at once (half 0 at rank c0, half 1 at
// rank c1), each bracketed by known points below and above its rank. The two
// binary searches advance in lockstep so that their loads are in flight
// together.
template <int Ways, class K, class Comp>
LIBMERGE_HOST_DEVICE __forceinline__ void inner_splits(const run_half<Ways, K>& h0, index_t c0, known_split lo0, known_split hi0,
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
      // The valid range whatever the bracket says (it can miss only when comp
      // is not a strict weak order): every probe stays in range.
      const index_t lo_ok = c > h.ny ? c - h.ny : 0, hi_ok = c < h.nx ? c : h.nx;
      from = from > lo_ok ? from : lo_ok;
      to = to < hi_ok ? to : hi_ok;
      if (from > to) {
        from = lo_ok;
        to = hi_ok;
      }
    };
    index_t a0, b0, a1, b1;
    bracket(h0, c0, lo0, hi0, a0, b0);
    bracket(h1, c1, lo1, hi1, a1, b1);
    while (a0 < b0 || a1 < b1) {
      if (a0 < b0) {
        const index_t mid = a0 + (b0 - a0) / 2;
        if (a_goes_first<bounds::lower>(h0.x[mid], h0.y[c0 - 1 - mid], comp)) a0 = mid + 1; else b0 = mid;
      }
      if (a1 < b1) {
        const index_t mid = a1 + (b1 - a1) / 2;
        if (a_goes_first<bounds::lower>(h1.x[mid], h1.y[c1 - 1 - mid], comp)) a1 = mid + 1; else b1 = mid;
      }
    }
    s0 = a0;
    s1 = a1;
  }
}

// The element of rank r - 1 of a half whose split at rank r is s: the later,
// in the merge's order, of x[s - 1] and y[r - s - 1].
template <class K, class Comp>
LIBMERGE_HOST_DEVICE __forceinline__ K last_before(const run_half<4, K>& h, index_t r, index_t s, Comp& comp) {
  const index_t t = r - s;
  if (s == 0) return h.y[t - 1];
  if (t == 0) return h.x[s - 1];
  return a_goes_first<bounds::lower>(h.x[s - 1], h.y[t - 1], comp) ? h.y[t - 1] : h.x[s - 1];
}

// Samples of both halves' inner splits at every multiple of nv (rank j * nv
// of half h splits at s[h][j]; pair_sample_kernel writes them) and the
// half's elements around each: keys[h][2j] of rank j * nv, keys[h][2j + 1]
// of rank j * nv - 1. A 4-way tile starts at a multiple of nv, so probes of
// the outer search at multiples of nv need only samples: a first search over
// those (small arrays, in L2) finds the nv ranks the split lies in, and
// brackets every inner search after it to one tile's worth of each run.
// (Passed by value, s[0] null for none: a pointer to it would put it in
// local memory.)
template <class K>
struct half_samples {
  const index_t* s[2];
  const K* keys[2];
  index_t nv;
};

// The split of a 4-way merge at diagonal d: a merge-path search over the
// two halves (h0: runs 0 and 1, h1: runs 2 and 3) whose probes are the
// halves' elements of ranks c and d - 1 - c, each found by an inner search
// bracketed by the probes before it (so the inner searches shrink with the
// outer one: about log2(w)^2 / 2 loads for runs of w, instead of
// log2(w)^2). With samples (d a multiple of samples.nv), the search starts
// inside one sample interval. The runs may lie anywhere (merge_four's
// pieces); group_split's lie side by side.
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
    // Outer probes at m = j * nv: half 0's element of rank m and half 1's of
    // rank d - 1 - m, which are sample keys of j and L - j.
    const index_t nv = samples.nv, L = d / nv;
    const index_t* s0 = samples.s[0];
    const index_t* s1 = samples.s[1];
    index_t a = (lo + nv - 1) / nv, b = (hi - 1) / nv + 1;  // j with lo <= j * nv < hi
    const index_t first = a, last = b;
    while (a < b) {
      const index_t j = a + (b - a) / 2;
      if (a_goes_first<bounds::lower>(samples.keys[0][2 * j], samples.keys[1][2 * (L - j) + 1], comp)) {
        a = j + 1;
      } else {
        b = j;
      }
    }
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
  while (lo < hi) {
    const index_t mid = lo + (hi - lo) / 2;
    const index_t e = d - 1 - mid;
    index_t s0, s1;
    inner_splits(h0, mid, k0_lo, k0_hi, h1, e, k1_lo, k1_hi, s0, s1, comp);
    if (a_goes_first<bounds::lower>(h0.at(mid, s0, comp), h1.at(e, s1, comp), comp)) {
      lo = mid + 1;
      k0_lo = {mid, s0};
      k1_hi = {e, s1};
    } else {
      hi = mid;
      k0_hi = {mid, s0};
      k1_lo = {e, s1};
    }
  }
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
    const run_half<Ways, K> h0{g.keys, g.len[0], g.keys + g.width, g.len[1]};
    const run_half<Ways, K> h1{g.keys + 2 * g.width, g.len[2], g.keys + 3 * g.width, g.len[3]};
    return halves_split(h0, h1, d, comp, samples);
  }
}

// A tile's input ranges, from the partitions at its two ends.
struct tile_range {
  index_t a0, a1, b0, b1;  // within the tile's problem
  merge_problem problem;
  LIBMERGE_HOST_DEVICE int count() const { return static_cast<int>((a1 - a0) + (b1 - b0)); }
};

// mp_begin, mp_end: the partitions at the tile's two ends (mp[tile], mp[tile + 1]).
template <class Geometry>
LIBMERGE_HOST_DEVICE tile_range find_tile_range(const Geometry& g, index_t tile, index_t nv, index_t mp_begin,
                                                index_t mp_end) {
  const index_t d0 = tile * nv;
  tile_range r;
  r.problem = g.problem_at(d0);
  const merge_problem& q = r.problem;
  const index_t local0 = d0 - q.diag_begin;
  const index_t local1 = local0 + nv < q.na + q.nb ? local0 + nv : q.na + q.nb;
  r.a0 = mp_begin;
  // At the end of its problem a tile ends at the problem's end; the partition
  // stored there belongs to the next problem (merge sort) or is the same value.
  r.a1 = local1 == q.na + q.nb ? q.na : mp_end;
  // Partitions are monotonic for sorted input. For unsorted input they may not
  // be; clamping keeps the tile within its nv elements and within its inputs
  // (the output is then unspecified, but no access goes out of range).
  if (r.a1 < r.a0) r.a1 = r.a0;
  if (r.a1 > r.a0 + (local1 - local0)) r.a1 = r.a0 + (local1 - local0);
  r.b0 = local0 - r.a0;
  r.b1 = local1 - r.a1 < q.nb ? local1 - r.a1 : q.nb;
  return r;
}

}  // namespace libmerge::detail::cuda_backend
