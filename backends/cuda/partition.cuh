// The partition family (MergePathPartitions in seeds/000): each tile's start, found before the tiles merge so
// no CTA searches global memory for its ranges; every form searches with the engine (backends/engine/):
//   boundary form  partition_kernel: mp[p], where a single problem's merge path crosses p * nv, a thread or
//                  a warp each (merge, the dense sorted search).
//   tile form      partition_tile_block: consecutive tiles' starts in a group of 2 or 4 runs, each ending
//                  where the next starts (pass_partition_kernel: sort_tiling, multiway.cuh's runs_tiling).
//   sample form    sample_kernel (sample_half): pair samples that start the tile form's 4-way searches
//                  (and the k-way merge's run samples, which its sampled_cut searches first).
//   in-kernel      warp_merge_path, a warp a tile end: the one-kernel sort, a merge's first small tiles
//                  (merge.cuh: merge_kernel, partition_at), where the partition kernel finds only the rest.
// A "geometry" says which merge problem a diagonal belongs to; tiles never straddle two problems.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <iterator>
#include <type_traits>
#include <utility>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/functional.hpp"
#include "../engine/search.hpp"
#include "runtime.cuh"

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

// The geometry of merge and merge_by_key: a single problem; every stage takes the element types from here.
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
  // The partition reads both inputs as the key type.
  LIBMERGE_HOST_DEVICE keys_as<key_type, AKeys> a_view(index_t i) const { return {a_keys + i}; }
  LIBMERGE_HOST_DEVICE keys_as<key_type, BKeys> b_view(index_t i) const { return {b_keys + i}; }
};

// Partitions of a single problem (merge, sorted search) found a thread each: 128 to a block.
inline constexpr int partition_block = 128;

// Up to the entry's warp_partitions_max, a warp each (log32(n) rounds, not log2(n) dependent loads), 32 to a
// block; above, a thread each (docs/tuning.md).
inline constexpr int partition_warps = 32;

// A single problem's partitions: a warp or a thread each, in how many blocks. Checked, neighbouring blocks
// share a partition: no thread searches twice for its pair (2^20 keys: 40 dependent loads instead of 20).
struct partition_plan {
  bool warps;
  index_t blocks;  // also the bytes of out_of_order, when checked
};
inline partition_plan plan_partitions(index_t num_partitions, bool checked, const device_info& dev) {
  const bool warps = num_partitions <= entry_of(dev).merge.warp_partitions_max;
  const index_t per_block = (warps ? partition_warps : partition_block) - (checked ? 1 : 0);
  const index_t spans = checked ? num_partitions - 1 : num_partitions;
  return {warps, spans <= 0 ? 1 : (spans + per_block - 1) / per_block};
}

// Partitions a block of partition_kernel finds, with Lanes threads each.
template <int Lanes>
inline constexpr int partitions_per_block = Lanes == 1 ? partition_block : partition_warps;

// The partition at diagonal p * nv (clamped): how many elements of A precede it, by a thread (merge_path) or
// a warp (warp_merge_path: every lane passes the same p and all return the answer).
template <bounds Bounds, int Lanes, class Geometry, class Comp>
__device__ __forceinline__ index_t partition_at(const Geometry& g, index_t p, index_t nv, Comp& comp) {
  static_assert(Lanes == 1 || Lanes == 32, "a partition is found by a thread or by a whole warp");
  const index_t diag = p * nv < g.size() ? p * nv : g.size();
  const merge_problem q = g.problem_at(diag);
  if constexpr (Lanes == 1) {
    return merge_path<Bounds, index_t>(g.a_view(q.a_begin), q.na, g.b_view(q.b_begin), q.nb, diag - q.diag_begin,
                                       comp);
  } else {
    return warp_merge_path<Bounds>(g.a_view(q.a_begin), q.na, g.b_view(q.b_begin), q.nb, diag - q.diag_begin, comp);
  }
}

// mp[p] = partition_at(p) for p in [first, num_partitions), Lanes threads each (the merge's first tiles find
// their own). With `out_of_order` (sorted search; first 0) out_of_order[block] = 1 where A's or B's positions
// decrease between partitions (never for sorted input and a strict weak order), so the search writes defined
// outputs instead of leaving positions no tile covers.
template <bounds Bounds, int Lanes, class Geometry, class Comp>
__global__ void __launch_bounds__(partitions_per_block<Lanes> * Lanes)
    partition_kernel(Geometry g, index_t nv, index_t first, index_t num_partitions, index_t* mp, Comp comp,
                     unsigned char* out_of_order) {
  constexpr int slots = partitions_per_block<Lanes>;
  wait_for_prerequisite_grid();
  // The inputs are complete: the next kernel may start and read them (the merge kernel's first tiles do;
  // keep the two calls in this order).
  allow_dependent_launch();
  const bool checked = out_of_order != nullptr;
  const int slot = static_cast<int>(threadIdx.x) / Lanes;  // the block's partition this thread helps find
  const bool leader = threadIdx.x % Lanes == 0;
  const index_t per_block = checked ? slots - 1 : slots;
  const index_t p = first + static_cast<index_t>(blockIdx.x) * per_block + slot;
  const auto diag_of = [&](index_t k) { return k * nv < g.size() ? k * nv : g.size(); };
  index_t a = 0;
  if (p < num_partitions) a = partition_at<Bounds, Lanes>(g, p, nv, comp);  // the same for all Lanes threads
  // Checked, a block's last partition is written by the next block (its first), unless it is the last of all.
  const bool last = slot + 1 == slots;
  if (leader && p < num_partitions && (!checked || !last || p + 1 == num_partitions)) mp[p] = a;
  if (!checked) return;
  __shared__ index_t found[slots];
  if (leader) found[slot] = a;
  __syncthreads();
  // Each pair of neighbours within the block; the next block checks the pair after its first.
  const bool paired = leader && !last && p + 1 < num_partitions;
  const index_t next = paired ? found[slot + 1] : 0;
  const bool bad = paired && (next < a || diag_of(p + 1) - next < diag_of(p) - a);
  const int any = __syncthreads_or(bad);
  if (threadIdx.x == 0) out_of_order[blockIdx.x] = any ? 1 : 0;
}

// Fills mp[first, num_tiles] for tiles of nv (and out_of_order, a byte a block of plan_partitions, unless
// null; first is 0 then).
template <bounds Bounds, class Geometry, class Comp>
void launch_partitions(const Geometry& g, index_t nv, index_t num_tiles, index_t* mp, Comp comp,
                       cudaStream_t stream, const device_info& dev, const char* algorithm,
                       unsigned char* out_of_order = nullptr, index_t first = 0) {
  const index_t num_partitions = num_tiles + 1;
  const partition_plan plan = plan_partitions(num_partitions - first, out_of_order != nullptr, dev);
  auto run = [&](auto lanes) {
    constexpr int L = decltype(lanes)::value;
    launch(partition_kernel<Bounds, L, Geometry, Comp>, plan.blocks, partitions_per_block<L> * L, 0, stream, false,
           dev, algorithm, "partition_kernel", g, nv, first, num_partitions, mp, comp, out_of_order);
  };
  if (plan.warps) {
    run(std::integral_constant<int, 32>{});
  } else {
    run(std::integral_constant<int, 1>{});
  }
}

// The tile form: a block of partition_tiles + 1 threads finds tiles' starts (start(tile)), each tile ending
// where the next starts (the extra thread: the next block's first), then describe(tile, start, end) below
// num_tiles. `starts` is declared in the kernel, so a kernel's shared memory reads in the kernel.
inline constexpr int partition_tiles = 127;

template <class Split, class Start, class Describe>
__device__ __forceinline__ void partition_tile_block(Split (&starts)[partition_tiles + 1], index_t num_tiles,
                                                     Start&& start, Describe&& describe) {
  const index_t tile = static_cast<index_t>(blockIdx.x) * partition_tiles + threadIdx.x;
  const bool mine = tile < num_tiles;
  if (mine) starts[threadIdx.x] = start(tile);
  __syncthreads();
  if (!mine || threadIdx.x == partition_tiles) return;
  describe(tile, starts[threadIdx.x], starts[threadIdx.x + 1]);
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
  // Unsorted input may give non-monotonic partitions: clamping keeps the tile within nv and its inputs
  // (the output is then unspecified, but no access goes out of range).
  if (r.a1 < r.a0) r.a1 = r.a0;
  if (r.a1 > r.a0 + (local1 - local0)) r.a1 = r.a0 + (local1 - local0);
  r.b0 = local0 - r.a0;
  r.b1 = local1 - r.a1 < q.nb ? local1 - r.a1 : q.nb;
  return r;
}

// ---------------------------------------------------------------------------
// The tile form over groups of 2 or 4 runs (the sort's passes, the k-way merge's levels): tile descriptors,
// the pair and run samples that start their searches (sample_kernel), and pass_partition_kernel.

// A pass tile from its partition kernel, so pass threads do no 64-bit group geometry (a fifth of a 4-way pass
// kernel's instructions): piece k is [at[k], at[k] + size[k]), clamped (clamp_pieces); output at out.
template <int Ways>
struct alignas(16) tile_desc {
  index_t at[Ways];
  index_t out;
  std::uint16_t size[Ways];  // a tile holds at most 65535 elements (launch_box)
};

// Run samples every 2^log2 keys: the sort's every sample_every (its stores write them), the k-way merge's
// as runs_sample_rate picks (a read of the runs, so sparser: fewer bytes read, a longer walk a tile).
struct sample_rate {
  int log2;
  LIBMERGE_HOST_DEVICE index_t every() const { return index_t{1} << log2; }
  LIBMERGE_HOST_DEVICE index_t of(index_t len) const { return (len + every() - 1) >> log2; }
};

// Threads a block of the sample kernels (launches and launch bounds).
inline constexpr int sample_threads = 128;

// One pair sample: the half's split at `rank` into *split, its elements of ranks rank and rank - 1 into
// keys[0] and keys[1] (unwritten where there is none).
template <class K, class Comp>
__device__ __forceinline__ void sample_half(const run_half<4, K>& half, index_t rank, index_t* split, K* keys,
                                            Comp& comp) {
  const index_t s = merge_path<bounds::lower>(half.x, half.nx, half.y, half.ny, rank, comp);
  *split = s;
  if (rank < half.size()) keys[0] = half.at(rank, s, comp);
  if (rank > 0) keys[1] = last_before(half, rank, s, comp);
}

// One pair sample to take: the pair's merge and the rank in it.
template <class K>
struct pair_sample {
  run_half<4, K> half;
  index_t rank;
  template <class Comp>
  __device__ __forceinline__ void write(index_t i, index_t* samples, K* sample_keys, Comp& comp) const {
    sample_half(half, rank, samples + i, sample_keys + 2 * i, comp);
  }
};

// One run sample: a run's key at a multiple of its sample rate, to sample_keys[i]
// (multiway.cuh's runs_key_sampling; the sort's come from its kernels' outputs).
template <class K>
struct run_sample {
  const K* key;
  template <class Comp>
  __device__ __forceinline__ void write(index_t i, index_t*, K* sample_keys, Comp&) const {
    sample_keys[i] = *key;
  }
};

// What sample_kernel samples: the sort's 4-way pass (sort/pass.cuh's sort_sampling) or multiway.cuh's
// runs_sampling (pair samples) and runs_key_sampling (run samples); view() gives the count (0: nothing) and
// at(i), sample i to write.
template <class Sampling, class Comp, class K = typename Sampling::key_type>
__global__ void __launch_bounds__(sample_threads)
    sample_kernel(Sampling sampling, index_t* samples, K* sample_keys, Comp comp) {
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  const auto v = sampling.view();
  // Grid-stride: the grid fits the planned width (sorted input samples nothing); longer sorted runs need more.
  const index_t step = static_cast<index_t>(gridDim.x) * blockDim.x;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < v.count; i += step) {
    v.at(i).write(i, samples, sample_keys, comp);
  }
}

// The tile's pieces [start[k], end[k]), clamped to their runs and to exactly `count` keys whatever comp
// does, so every output position is written once and every read is in range.
template <int Ways>
__device__ __forceinline__ void clamp_pieces(const index_t (&len)[Ways], const index_t (&start)[Ways],
                                             index_t (&end)[Ways], index_t count) {
  index_t total = 0;
#pragma unroll
  for (int k = 0; k < Ways; ++k) {
    end[k] = end[k] < start[k] ? start[k] : (end[k] > len[k] ? len[k] : end[k]);
    total += end[k] - start[k];
  }
#pragma unroll
  for (int k = Ways - 1; k >= 0; --k) {  // too many: trim from the last run
    const index_t cut = total - count < end[k] - start[k] ? total - count : end[k] - start[k];
    if (cut > 0) {
      end[k] -= cut;
      total -= cut;
    }
  }
#pragma unroll
  for (int k = 0; k < Ways; ++k) {  // too few: extend from the first
    const index_t add = count - total < len[k] - end[k] ? count - total : len[k] - end[k];
    if (add > 0) {
      end[k] += add;
      total += add;
    }
  }
}

// Tile [d0, d1) of group `group` (runs g) as a descriptor, its pieces clamped (clamp_pieces).
template <int Ways, class K>
__device__ __forceinline__ tile_desc<Ways> describe_tile(const run_group<Ways, K>& g, index_t group,
                                                         index_t (&start)[Ways], index_t (&end)[Ways], index_t d0,
                                                         index_t d1) {
  clamp_pieces(g.len, start, end, d1 - d0);
  const index_t group_begin = group * Ways * g.width;
  tile_desc<Ways> d;
#pragma unroll
  for (int k = 0; k < Ways; ++k) {
    d.at[k] = group_begin + k * g.width + start[k];
    d.size[k] = static_cast<std::uint16_t>(end[k] - start[k]);
  }
  d.out = group_begin + d0;
  return d;
}

// The cut of a 4-way group at sample diagonal d: the search over the run samples (sg, pair samples hs), then
// on to the tile's diagonal in the runs (sampled_split), so tiles hold exactly nv and stay aligned (H100, 2^28
// int32: cuts near the samples' diagonals cost the pass kernel 9%; docs/cuda-merge-sort.md). Runs: run_group
// (the sort's runs side by side) or four_runs (the k-way merge's, anywhere); sample j of run k is run k's key
// j * every (rate).
template <class Runs, class K, class Comp, class Rate>
__device__ __forceinline__ run_split<4> sampled_cut(const Runs& g, const Runs& sg, index_t d,
                                                    const half_samples<K>& hs, Comp& comp, Rate rate) {
  if (d == 0) return run_split<4>{{0, 0, 0, 0}};
  return sampled_split<4>(g, sg, group_split(sg, d, comp, hs), d, rate, comp);
}

// Each tile's start and descriptor (the tile form above) for a tiling: the sort's pass (sort/pass.cuh) or
// multiway.cuh's runs_tiling; tiling.at<Ways>(tile) gives the thread's tile (active, num_tiles), which
// tiling.start and tiling.describe take.
// (The minimum of blocks: without it ptxas held the 16-byte keys' 4-way kernel to 80 registers and spilled.)
template <int Ways, class Tiling, class Comp>
__global__ void __launch_bounds__(partition_tiles + 1, 4)
    pass_partition_kernel(Tiling tiling, tile_desc<Ways>* descs, Comp comp) {
  __shared__ run_split<Ways> starts[partition_tiles + 1];
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  const index_t tile = static_cast<index_t>(blockIdx.x) * partition_tiles + threadIdx.x;
  // (The tile's state holds no reference to the parameter: one made ptxas copy
  // it to a 160-byte stack frame.)
  const auto t = tiling.template at<Ways>(tile);
  if (!t.active) return;
  partition_tile_block(
      starts, t.num_tiles, [&](index_t) { return tiling.start(t, comp); },
      [&](index_t, const run_split<Ways>& first, const run_split<Ways>& next) {
        descs[tile] = tiling.describe(t, first, next);
      });
}

}  // namespace libmerge::detail::cuda_backend
