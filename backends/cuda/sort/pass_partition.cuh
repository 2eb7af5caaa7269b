// Stage 3a of the merge sort: where each tile of a merge pass starts in its
// group's runs (pass_partition_kernel), from the run samples.
#pragma once

#include "../partition.cuh"
#include "state.cuh"
#include "../../engine/search.hpp"

namespace libmerge::detail::cuda_backend {

// 3. Merge passes.

__device__ __forceinline__ pass_shape make_pass_shape(index_t n, index_t width, int ways, index_t nv) {
  const index_t group = width * ways;
  const index_t groups = (n + group - 1) / group;
  const index_t tiles_per_group = (group + nv - 1) / nv;
  const index_t last = n - (groups - 1) * group;
  return {width, static_cast<int>(tiles_per_group),
          static_cast<int>((groups - 1) * tiles_per_group + (last + nv - 1) / nv)};
}

__device__ __forceinline__ pass_shape pass_shape_of(const pass_plan& p, const sort_flags& flags, index_t n,
                                                    index_t nv) {
  const index_t base = flags.first_width(p.bs_nv);
  // Runs as long as the input: one run, nothing to merge (and no overflow).
  const index_t width = base > (n - 1) / p.scale ? n : base * p.scale;
  return make_pass_shape(n, width, p.ways, nv);
}

template <int Ways, class K>
__device__ __forceinline__ run_group<Ways, K> group_at(const K* keys, index_t n, index_t width, index_t group) {
  run_group<Ways, K> g;
  const index_t begin = group * Ways * width;
  g.keys = keys + begin;
  g.width = width;
#pragma unroll
  for (int k = 0; k < Ways; ++k) {
    const index_t left = n - begin - k * width;
    g.len[k] = left <= 0 ? 0 : (left < width ? left : width);
  }
  return g;
}

template <int Ways, class K>
__device__ __forceinline__ index_t group_size(const run_group<Ways, K>& g) {
  index_t total = 0;
#pragma unroll
  for (int k = 0; k < Ways; ++k) total += g.len[k];
  return total;
}

// A 4-way pass's pair samples: samples[(group * 2 + pair) * stride + j], the split of pair (0 1 or 2 3) at
// rank j * p of its merge (clamped), stride = ceil(2 * width / p) + 1, and its keys at ranks j * p and
// j * p - 1 (sample_keys[2i], [2i + 1]), so the partition's coarse search reads these small arrays alone.
LIBMERGE_HOST_DEVICE inline index_t sample_stride(index_t width, index_t p) { return (2 * width + p - 1) / p + 1; }

// A 4-way pass partitions on run samples (every `every` keys) when its runs and tiles start at multiples of
// `every` (other sorted-run widths search the runs) and its tiles hold 8 samples or more.
LIBMERGE_HOST_DEVICE inline bool partitions_on_samples(index_t width, index_t nv, index_t every = sample_every) {
  return width % every == 0 && nv % every == 0 && nv >= 8 * every;
}

// A 4-way pass's pair samples over runs of `width`: spacing (a tile in keys, or `sampled`, in run samples),
// stride (a pair's) and count (in all).
struct pair_sample_grid {
  index_t spacing, stride, count;
};

LIBMERGE_HOST_DEVICE inline pair_sample_grid pair_samples_of(const pass_plan& plan, index_t n, index_t width,
                                                             index_t nv, bool sampled) {
  const index_t spacing = sampled ? plan.pair_spacing : nv;
  const index_t stride = sample_stride(sampled ? width / sample_every : width, spacing);
  // The pairs of a 4-way pass are the groups of a 2-way pass of the same width.
  const index_t pairs = 2 * ((n + 4 * width - 1) / (4 * width));
  return {spacing, stride, pairs * stride};
}

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

// One run sample: a run's key at a multiple of sample_every, to sample_keys[i]
// (multiway.cuh's runs_key_sampling; the sort's come from its kernels' outputs).
template <class K>
struct run_sample {
  const K* key;
  template <class Comp>
  __device__ __forceinline__ void write(index_t i, index_t*, K* sample_keys, Comp&) const {
    sample_keys[i] = *key;
  }
};

// What sample_kernel samples: the sort's 4-way pass (below) or multiway.cuh's runs_sampling (pair samples)
// and runs_key_sampling (run samples); view() gives the count (0: nothing) and at(i), sample i to write.
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

// The sort's pass p: its pairs of runs in the buffer it reads, or over the run samples
// (partitions_on_samples), on pair_samples_of's grid.
template <class K>
struct sort_sampling {
  using key_type = K;
  sort_buffers<K, char> buf;
  index_t n;
  pass_plan plan;
  index_t nv;
  int pass;
  sort_flags flags;
  const K* run_samples;
  struct pairs {
    const K* keys;
    index_t keys_n, w;
    pair_sample_grid grid;
    index_t count;
    __device__ __forceinline__ pair_sample<K> at(index_t i) const {
      const run_group<2, K> g = group_at<2>(keys, keys_n, w, i / grid.stride);
      const index_t size = group_size(g);
      const index_t j = i % grid.stride;
      return {{g.keys, g.len[0], g.keys + w, g.len[1]}, j * grid.spacing < size ? j * grid.spacing : size};
    }
  };
  __device__ __forceinline__ pairs view() const {
    if (!flags.unsorted()) return {nullptr, 0, 1, {1, 1, 0}, 0};
    const int src = block_buffer_before_pass(flags, pass, plan.first_buffer, plan.bs_nv);
    const index_t width = pass_shape_of(plan, flags, n, nv).width;
    const bool sampled = run_samples != nullptr && partitions_on_samples(width, nv);
    const pair_sample_grid grid = pair_samples_of(plan, n, width, nv, sampled);
    return {sampled ? run_samples : buf.keys(src), sampled ? run_samples_of(n) : n,
            sampled ? width / sample_every : width, grid, grid.count};
  }
};

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
template <class Runs, class K, class Comp, class Rate = sort_sample_rate>
__device__ __forceinline__ run_split<4> sampled_cut(const Runs& g, const Runs& sg, index_t d,
                                                    const half_samples<K>& hs, Comp& comp, Rate rate = {}) {
  if (d == 0) return run_split<4>{{0, 0, 0, 0}};
  return sampled_split<4>(g, sg, group_split(sg, d, comp, hs), d, rate, comp);
}

// Each tile's start and descriptor (partition.cuh's tile form) for a tiling: the sort's pass (below) or
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

// The sort's pass p. A group's first tile also checks whether the group is in order already (has_work), tile
// 0 records the buffer read; 4-way passes on run samples cut through sampled_cut.
template <class K>
struct sort_tiling {
  sort_buffers<K, char> buf;
  index_t n;
  pass_plan plan;
  index_t nv;
  int pass;
  sort_flags flags;
  const index_t* samples;  // 4-way passes: the pair samples
  const K* sample_keys;
  const K* run_samples;

  template <int Ways>
  struct tile_of {
    bool active, undone, sampled;
    pass_shape shape;
    int group, local;
    run_group<Ways, K> g;
    index_t num_tiles;
  };

  template <int Ways, class Comp>
  __device__ __forceinline__ run_split<Ways> start(const tile_of<Ways>& v, Comp& comp) const {
    const run_group<Ways, K>& g = v.g;
    const index_t width = v.shape.width;
    if (v.local == 0) {
      bool in_order = true;
#pragma unroll
      for (int k = 1; k < Ways; ++k) {
        if (g.len[k] > 0) in_order &= !comp(g.keys[k * width], g.keys[k * width - 1]);
      }
      if (!in_order && !v.undone) flags.has_work(pass) = 1;
    }
    // 4-way passes: the group's pair samples, over the runs or their samples.
    half_samples<K> hs{{nullptr, nullptr}, {nullptr, nullptr}, 1};
    if (samples != nullptr) {
      const pair_sample_grid ps = pair_samples_of(plan, n, width, nv, v.sampled);
      const index_t first = static_cast<index_t>(v.group) * 2 * ps.stride;
      hs = {{samples + first, samples + first + ps.stride},
            {sample_keys + 2 * first, sample_keys + 2 * (first + ps.stride)},
            ps.spacing};
    }
    if constexpr (Ways == 4) {
      if (v.sampled) {
        const run_group<4, K> sg = group_at<4>(run_samples, run_samples_of(n), width / sample_every, v.group);
        return sampled_cut(g, sg, static_cast<index_t>(v.local) * (nv / sample_every), hs, comp);
      }
    }
    return group_split(g, static_cast<index_t>(v.local) * nv, comp, hs);
  }
  template <int Ways>
  __device__ __forceinline__ tile_desc<Ways> describe(const tile_of<Ways>& v, const run_split<Ways>& first,
                                                      const run_split<Ways>& next) const {
    const run_group<Ways, K>& g = v.g;
    const index_t size = group_size(g);
    const index_t d0 = static_cast<index_t>(v.local) * nv;
    const index_t d1 = d0 + nv < size ? d0 + nv : size;
    index_t begin[Ways], end[Ways];
#pragma unroll
    for (int k = 0; k < Ways; ++k) {
      begin[k] = first.s[k];
      end[k] = d1 == size ? g.len[k] : next.s[k];
    }
    return describe_tile(g, v.group, begin, end, d0, d1);
  }

  template <int Ways>
  __device__ __forceinline__ tile_of<Ways> at(index_t tile) const {
    // A pass before undone by the guard: this one merges nothing. (Read once a
    // block: every thread's own look held the kernel at 64 registers instead
    // of 40.)
    __shared__ bool undone;
    if (threadIdx.x == 0) undone = flags.undone_before(pass);
    __syncthreads();
    const int src = block_buffer_before_pass(flags, pass, plan.first_buffer, plan.bs_nv);
    tile_of<Ways> v{flags.unsorted(), undone, false, {}, 0, 0, {}, 0};
    if (!v.active) {
      if (tile == 0) flags.source(pass) = src;
      return v;
    }
    v.shape = pass_shape_of(plan, flags, n, nv);
    v.sampled = Ways == 4 && run_samples != nullptr && partitions_on_samples(v.shape.width, nv);
    if (tile == 0) {
      flags.source(pass) = src;
      flags.shapes[pass] = v.shape;  // the pass kernel's tile count
    }
    const bool mine = tile < v.shape.num_tiles;
    v.group = static_cast<int>(mine ? tile : 0) / v.shape.tiles_per_group;
    v.local = static_cast<int>(mine ? tile : 0) % v.shape.tiles_per_group;
    v.g = group_at<Ways>(buf.keys(src), n, v.shape.width, v.group);
    v.num_tiles = v.shape.num_tiles;
    return v;
  }
};

} // namespace libmerge::detail::cuda_backend
