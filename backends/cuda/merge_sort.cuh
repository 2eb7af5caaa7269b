// CUDA merge_sort, merge_sort_by_key, merge_sort_indices (one code path; keys
// only = no values, indices = values counting 0, 1, 2, ...):
//
//   1. sortedness_kernel  one read of the keys: where are the descents? None:
//                         sorted input skips everything below. All of them
//                         at multiples of some W >= a block-sort tile: the
//                         input is sorted runs of W, and the block sort and
//                         every pass below W are skipped. Random input stops
//                         the read early.
//   2. block_sort_kernel  cub::BlockMergeSort sorts tiles of bs_nt * bs_vt
//                         keys in place (a tile found already sorted is not
//                         written at all).
//   3. merge passes       each pass merges pairs of sorted runs (or, where
//                         the tuning says so, groups of 4): pass_partition_kernel finds
//                         where every output tile starts in its group's runs
//                         (partition.cuh: group_split) and whether the group
//                         needs merging at all; pass_kernel loads a tile's
//                         pieces of the runs into shared memory and merges
//                         them in two levels (cta_merge.cuh).
//   4. copy_back_kernel   if the data ended in the scratch buffer, back to
//                         the caller's range (for the sort across GPUs,
//                         sort_to_runs: into the runs buffer it was given,
//                         which is then buffer 1, and the caller's range the
//                         scratch).
//
// Passes alternate between the caller's buffers and one scratch copy of keys
// and values. Whether a pass has work is decided on the device (a pass whose
// every group is already in order is skipped, data stays where it is), so the
// host never waits: each kernel reads which buffer holds the data from a small
// flags array written by the kernels before it.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <cub/block/block_load.cuh>
#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_store.cuh>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/detail/counting.hpp"
#include "../../libmerge/detail/dispatch.hpp"
#include "../../policies/cuda.hpp"
#include "cta_merge.cuh"
#include "device.cuh"
#include "error.hpp"
#include "iterators.cuh"
#include "launch.cuh"
#include "memory.cuh"
#include "merge.cuh"
#include "partition.cuh"

namespace libmerge::detail::cuda_backend {

// ---------------------------------------------------------------------------
// A merge pass merges groups of `ways` runs of `width` keys; each group's
// output is cut into tiles of nv, tiles_per_group per group (the last group
// may have fewer), one CTA per tile.
// (Tile counts are 32-bit: the host refuses grids of 2^31 / 32 tiles or more,
// and 32-bit divisions keep the pass kernel inside its registers.)
struct pass_shape {
  index_t width;
  int tiles_per_group;
  int num_tiles;
};

// Device-side bookkeeping of one sort, all zero to begin with. runs: the
// greatest common divisor of the positions i + 1 where keys[i + 1] < keys[i]
// (set by sortedness_kernel; 0: no descent, the input is sorted; W: the input
// is sorted runs [kW, kW + W)). For pass p: shapes[p], its shape (written by
// its partition kernel: it depends on runs); f[2p], the buffer (0: the
// caller's, 1: scratch or sort_to_runs' target) holding the data when the
// pass starts; f[2p + 1],
// whether the pass has any group to merge.
struct sort_flags {
  unsigned long long* runs;
  pass_shape* shapes;
  int* f;
  static sort_flags at(void* memory, int passes) {
    auto* m = static_cast<unsigned char*>(memory);
    return {reinterpret_cast<unsigned long long*>(m), reinterpret_cast<pass_shape*>(m + 8),
            reinterpret_cast<int*>(m + 8 + sizeof(pass_shape) * static_cast<std::size_t>(passes))};
  }
  static std::size_t bytes(int passes) { return 8 + (sizeof(pass_shape) + 2 * sizeof(int)) * passes; }
  __device__ bool unsorted() const { return *runs != 0; }
  // Runs of at least a block-sort tile (bs_nv keys) need no block sort, and
  // the passes start at their width.
  __device__ bool skips_block_sort(index_t bs_nv) const {
    return *runs == 0 || *runs >= static_cast<unsigned long long>(bs_nv);
  }
  __device__ index_t first_width(index_t bs_nv) const {
    return *runs >= static_cast<unsigned long long>(bs_nv) ? static_cast<index_t>(*runs) : bs_nv;
  }
  __device__ int& source(int pass) const { return f[2 * pass]; }
  __device__ int& has_work(int pass) const { return f[2 * pass + 1]; }
};

// Which buffer holds the data when pass `pass` starts (pass == number of
// passes: at the end). Reads only what kernels before it wrote. first_buffer:
// where the block sort puts unsorted data (bs_nv keys a tile).
__device__ __forceinline__ int buffer_before_pass(const sort_flags& flags, int pass, int first_buffer,
                                                  index_t bs_nv) {
  if (pass == 0) return flags.skips_block_sort(bs_nv) ? 0 : first_buffer;
  return flags.source(pass - 1) ^ flags.has_work(pass - 1);
}

// The two buffers of keys and values (char stands for no values). Chosen with
// a select, not an index: a kernel parameter array indexed at run time would
// be copied to local memory.
template <class K, class V>
struct sort_buffers {
  K* keys0;
  K* keys1;
  V* vals0;
  V* vals1;
  __device__ K* keys(int i) const { return i ? keys1 : keys0; }
  __device__ V* vals(int i) const { return i ? vals1 : vals0; }
};

// ---------------------------------------------------------------------------
// Run samples: element p of the data with p % sample_every == 0 is also kept
// at samples[p / sample_every], written by the kernel that last wrote (or, for
// sorted runs, read) the data before a 4-way pass. That pass's partition
// searches them (32 times fewer keys, mostly in L2) and then each run only in
// a window of 32 keys: about 10 scattered sectors a tile instead of 180
// (pass_partition_kernel). 32: a warp's striped stores put one sample in
// each store of one lane (store_warp_striped_sampled).
inline constexpr int sample_every = 32;

// A thread's keys in blocked order, keys[i] at position first + i (i < count).
template <int VT, class K>
__device__ __forceinline__ void sample_blocked(const K (&keys)[VT], index_t first, int count, K* samples) {
  if (samples == nullptr) return;
  const int i0 = static_cast<int>((sample_every - first % sample_every) % sample_every);
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    if (i < count && ((i - i0) & (sample_every - 1)) == 0) samples[(first + i) / sample_every] = keys[i];
  }
}

// ---------------------------------------------------------------------------
// 1. Where are the descents? sort_flags::runs becomes the gcd of the positions
// i + 1 with keys[i + 1] < keys[i]. Blocks stride over the keys; all of them
// stop as soon as the gcd is below `useful` (a block-sort tile), where it
// could save nothing: random input costs a fraction of one read, sorted
// input and sorted runs one read.
__device__ __forceinline__ unsigned long long gcd64(unsigned long long a, unsigned long long b) {
  if (a == 0 || b == 0) return a | b;  // gcd(0, x) = x: 0 is "no descent yet"
  const int shift = __ffsll(static_cast<long long>(a | b)) - 1;  // Stein's: shifts, no division
  a >>= __ffsll(static_cast<long long>(a)) - 1;
  do {
    b >>= __ffsll(static_cast<long long>(b)) - 1;
    if (a > b) {
      const unsigned long long t = a;
      a = b;
      b = t;
    }
    b -= a;
  } while (b != 0);
  return a << shift;
}

struct gcd_op {
  __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const { return gcd64(a, b); }
};

// Keys a thread reads a chunk: 64 bytes' worth, at most 16 (2^28 int32 keys
// in sorted runs, H100, 8 blocks of 256 an SM: 16 keys 0.436 ms, 8 keys
// 0.468, 32 keys at 4 blocks 0.444; whole 16-byte vectors, 0.408), so that
// larger keys keep the registers of a full SM.
template <class K>
inline constexpr int sortedness_vt = sizeof(K) >= 64 ? 1 : (64 / sizeof(K) < 16 ? int(64 / sizeof(K)) : 16);

template <int NT, class K, class Comp>
__global__ void __launch_bounds__(NT)
    sortedness_kernel(const K* keys, index_t n, index_t useful, sort_flags flags, Comp comp, K* samples) {
  using reduce = cub::BlockReduce<unsigned long long, NT>;
  __shared__ typename reduce::TempStorage temp;
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  // Samples of sorted runs, which skip the block sort (it writes them
  // otherwise): the loop below reads every key but the last.
  if (samples != nullptr && blockIdx.x == 0 && threadIdx.x == 0 && (n - 1) % sample_every == 0) {
    samples[(n - 1) / sample_every] = keys[n - 1];
  }
  constexpr int vt = sortedness_vt<K>;
  static_assert(NT * vt % sample_every == 0 && vt <= 32, "chunks of whole samples; mask bits");
  const unsigned long long limit = static_cast<unsigned long long>(useful);
  volatile unsigned long long* runs = flags.runs;
  auto update = [&](unsigned long long g) {  // runs = gcd(runs, g), atomically
    unsigned long long seen = *runs, want;
    while ((want = gcd64(seen, g)) != seen) {
      const unsigned long long was = atomicCAS(const_cast<unsigned long long*>(runs), seen, want);
      if (was == seen) break;
      seen = was;
    }
  };
  // Two descents closer than `useful` make the gcd smaller than that: when a
  // chunk (NT * vt keys) is shorter than `useful`, a chunk with two descents
  // ends the search without any gcd (random input: in the first chunk).
  const bool short_chunks = NT * vt < useful;
  for (index_t base = static_cast<index_t>(blockIdx.x) * NT * vt; base < n - 1;
       base += static_cast<index_t>(gridDim.x) * NT * vt) {
    // The look at the gcd so far (an L2 round trip) goes out with the
    // chunk's loads: waited for before them, it held every chunk's loads
    // back (2^28 int32 keys in sorted runs of 2^16, H100: 0.46 against 0.51
    // ms; with a full SM of blocks, launch_sortedness, 0.42).
    const unsigned long long seen = threadIdx.x == 0 ? *runs : 0;
    // All loads and comparisons first, branch-free, so that every load is in
    // flight at once; then the few descents. Thread t holds keys first + i
    // (blocked: whole 16-byte vectors when the keys are aligned to them);
    // the key after its last comes from the next lane.
    const index_t first = base + static_cast<index_t>(threadIdx.x) * vt;
    K x[vt];
    if (base + NT * vt <= n && reinterpret_cast<std::uintptr_t>(keys) % 16 == 0) {
      cub::LoadDirectBlockedVectorized(static_cast<int>(threadIdx.x), const_cast<K*>(keys) + base, x);
    } else {
#pragma unroll
      for (int i = 0; i < vt; ++i) x[i] = first + i < n ? keys[first + i] : K{};
    }
    K after = cub::ShuffleDown<32>(x[0], 1, 31, 0xffffffffu);
    if (threadIdx.x % 32 == 31 && first + vt < n) after = keys[first + vt];
    unsigned mask = 0;
#pragma unroll
    for (int i = 0; i < vt; ++i) {
      const K next = i + 1 < vt ? x[(i + 1) % vt] : after;
      if (first + i < n - 1 && comp(next, x[i])) mask |= 1u << i;
    }
    if (__syncthreads_or(seen != 0 && seen < limit)) return;  // the same answer for all
    // The chunk's samples, from the threads holding them (the chunk starts
    // at a multiple of 32 keys, so the test below finds every 32nd key for
    // any vt).
    if (samples != nullptr) {
#pragma unroll
      for (int i = 0; i < vt; ++i) {
        if ((threadIdx.x * vt + i) % sample_every == 0 && first + i < n - 1) {
          samples[(first + i) / sample_every] = x[i];
        }
      }
    }
    const int descents = __popc(mask);
    auto position = [&](int i) { return static_cast<unsigned long long>(first + i + 1); };
    unsigned long long g = mask ? position(__ffs(mask) - 1) : 0;
    if (short_chunks) {
      const int with_one = __syncthreads_count(descents == 1);
      if (__syncthreads_or(descents > 1) || with_one > 1) {
        if (threadIdx.x == 0) atomicExch(const_cast<unsigned long long*>(runs), 1ull);  // 1: gcd(1, x) = 1
        return;
      }
      if (descents == 1) update(g);  // the chunk's only descent
    } else {
      // Two descents in one thread lie less than vt apart: closer than
      // `useful`, so the search ends here too (random input, in its first
      // chunk; without this the pairs of the one-kernel class, whose tiles
      // are shorter than a chunk, spent 16 us instead of 4 on the read at
      // 2^16, H100).
      if (__syncthreads_or(descents > 1 && vt <= useful)) {
        if (threadIdx.x == 0) atomicExch(const_cast<unsigned long long*>(runs), 1ull);
        return;
      }
      for (unsigned m = mask & (mask - 1); m; m &= m - 1) g = gcd64(g, position(__ffs(m) - 1));
      // One update per block: all threads updating one word would serialize.
      g = reduce(temp).Reduce(g, gcd_op{});
      if (threadIdx.x == 0 && g != 0) update(g);
      __syncthreads();  // temp is reused by the next chunk
    }
  }
}

// ---------------------------------------------------------------------------
// 2. Block sort: tile t = keys[t * nv, ...) sorted by cub::BlockMergeSort
// (stable: an odd-even sort in each thread's registers, then merge-path
// merges in shared memory), read and written with CUB's warp-transposing
// block loads and stores. With Indices, values are not read: they are the
// positions base + i.
template <class Box, class K, class V, bool WithValues, bool Indices>
struct block_sort_types {
  using value_type = std::conditional_t<WithValues, V, cub::NullType>;
  using sort = cub::BlockMergeSort<K, Box::nt, Box::vt, value_type>;
  using load_keys = cub::BlockLoad<K, Box::nt, Box::vt, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using store_keys = cub::BlockStore<K, Box::nt, Box::vt, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using load_vals = cub::BlockLoad<V, Box::nt, Box::vt, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using store_vals = cub::BlockStore<V, Box::nt, Box::vt, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  union temp_storage {
    typename sort::TempStorage sort;
    typename load_keys::TempStorage load_keys;
    typename store_keys::TempStorage store_keys;
    typename load_vals::TempStorage load_vals;
    typename store_vals::TempStorage store_vals;
  };
};

// Tile `tile` of the block sort, by the whole CTA; smem holds
// block_sort_types::temp_storage.
template <class Box, class K, class V, bool WithValues, bool Indices, class ValsIn, class Comp>
__device__ __forceinline__ void block_sort_tile(const sort_buffers<K, V>& buf, ValsIn vals_in, index_t n, int dest,
                                                const sort_flags& flags, Comp& comp, index_t tile,
                                                unsigned char* smem, K* samples = nullptr) {
  using types = block_sort_types<Box, K, V, WithValues, Indices>;
  auto& temp = *reinterpret_cast<typename types::temp_storage*>(smem);
  const int tid = static_cast<int>(threadIdx.x);
  const index_t base = tile * Box::nv;
  const int valid = static_cast<int>(n - base < Box::nv ? n - base : Box::nv);

  auto write_positions = [&](V* out) {  // merge_sort_indices of an unmoved tile
    if constexpr (Indices) {
      for (int j = tid; j < valid; j += Box::nt) out[base + j] = static_cast<V>(base + j);
    }
  };
  if (flags.skips_block_sort(Box::nv)) {  // sorted, or sorted runs of a tile or more
    write_positions(buf.vals(0));
    return;
  }

  K keys[Box::vt];
  typename types::load_keys(temp.load_keys).Load(buf.keys(0) + base, keys, valid, K{});
  // Is the tile sorted already? Each thread checks its own keys and the first
  // key of the next thread (read again from global memory, where it is cached).
  bool in_order = true;
  int mine = valid - Box::vt * tid;  // keys of this thread in the tile
  mine = mine < 0 ? 0 : (mine > Box::vt ? Box::vt : mine);
#pragma unroll
  for (int i = 1; i < Box::vt; ++i) {
    if (i < mine) in_order &= !comp(keys[i], keys[i - 1]);
  }
  if (mine == Box::vt && Box::vt * (tid + 1) < valid) {
    in_order &= !comp(buf.keys(0)[base + Box::vt * (tid + 1)], keys[Box::vt - 1]);
  }
  const bool tile_sorted = __syncthreads_and(in_order);
  if (tile_sorted && dest == 0) {
    sample_blocked(keys, base + Box::vt * tid, mine, samples);
    write_positions(buf.vals(0));
    return;
  }

  typename types::value_type vals[Box::vt];
  if constexpr (WithValues) {
    if constexpr (Indices) {
#pragma unroll
      for (int i = 0; i < Box::vt; ++i) vals[i] = static_cast<V>(base + Box::vt * tid + i);
    } else {
      __syncthreads();
      typename types::load_vals(temp.load_vals).Load(vals_in + base, vals, valid);
    }
  }
  if (!tile_sorted) {
    __syncthreads();
    if (valid == Box::nv) {  // CUB's full-tile sort: no bounds to check
      if constexpr (WithValues) {
        typename types::sort(temp.sort).StableSort(keys, vals, comp);
      } else {
        typename types::sort(temp.sort).StableSort(keys, comp);
      }
    } else {
      // CUB pads a partial tile with the key it is given; it must not sort
      // before any real key, so each thread passes its own largest.
      K largest = keys[0];
#pragma unroll
      for (int i = 1; i < Box::vt; ++i) {
        if (i < mine && comp(largest, keys[i])) largest = keys[i];
      }
      if constexpr (WithValues) {
        typename types::sort(temp.sort).StableSort(keys, vals, comp, valid, largest);
      } else {
        typename types::sort(temp.sort).StableSort(keys, comp, valid, largest);
      }
    }
  }
  __syncthreads();
  typename types::store_keys(temp.store_keys).Store(buf.keys(dest) + base, keys, valid);
  if (samples != nullptr) {  // the store left each warp's keys striped (warp_base + 32 i + lane)
    const int warp_base = (tid / 32) * 32 * Box::vt;
    const int holder = static_cast<int>((32 - (base + warp_base) % 32) % 32);
    const int left = (valid - warp_base < 32 * Box::vt ? valid - warp_base : 32 * Box::vt) - holder;
    write_warp_samples(keys, holder, (base + warp_base + holder) / 32, left <= 0 ? 0 : (left + 31) / 32, samples);
  }
  if constexpr (WithValues) {
    __syncthreads();
    typename types::store_vals(temp.store_vals).Store(buf.vals(dest) + base, vals, valid);
  }
}

template <class Box, class K, class V, bool WithValues, bool Indices, class ValsIn, class Comp>
__global__ void __launch_bounds__(Box::nt, 1)
    block_sort_kernel(sort_buffers<K, V> buf, ValsIn vals_in, index_t n, int dest, sort_flags flags, Comp comp,
                      K* samples) {
  extern __shared__ __align__(16) unsigned char smem[];
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  block_sort_tile<Box, K, V, WithValues, Indices>(buf, vals_in, n, dest, flags, comp, blockIdx.x, smem, samples);
}

// ---------------------------------------------------------------------------
// 3. Merge passes.

__device__ __forceinline__ pass_shape make_pass_shape(index_t n, index_t width, int ways, index_t nv) {
  const index_t group = width * ways;
  const index_t groups = (n + group - 1) / group;
  const index_t tiles_per_group = (group + nv - 1) / nv;
  const index_t last = n - (groups - 1) * group;
  return {width, static_cast<int>(tiles_per_group),
          static_cast<int>((groups - 1) * tiles_per_group + (last + nv - 1) / nv)};
}

// What the host knows of a pass before anything runs: its run width as a
// multiple (scale) of the first width, which is a block-sort tile (bs_nv)
// unless the input turns out to be sorted runs of more; first_buffer: where
// the block sort puts its output. The kernels work out the pass's shape on the
// device (pass_shape_of); the host launches a grid for the most tiles any
// first width can give (launch_tiles).
struct pass_plan {
  index_t scale;
  int ways;
  index_t bs_nv;
  int first_buffer;
  index_t launch_tiles;
};

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

// Samples for a 4-way pass's partition: for each group, the split of each
// pair of runs (0 1 and 2 3) at every multiple of nv of the pair's merge,
// samples[(group * 2 + pair) * stride + j] for rank j * nv (clamped to the
// pair's size), stride = ceil(2 * width / nv) + 1, and beside it the keys of
// the pair's merge at ranks j * nv and j * nv - 1 (sample_keys[2i], [2i + 1];
// unwritten where there is none), so that the partition's coarse search reads
// these small arrays alone. One thread a sample: a plain merge-path search,
// as in a 2-way pass's partition.
__device__ __forceinline__ index_t sample_stride(index_t width, index_t nv) { return (2 * width + nv - 1) / nv + 1; }

// A 4-way pass partitions on run samples when its runs start at multiples of
// sample_every (every width from a block-sort tile of such a size; sorted runs
// of other widths take the search over the runs) and its tiles hold 8
// samples' worth or more (its tiles start at multiples of sample_every, so
// a tile's diagonal is a whole number of samples).
LIBMERGE_HOST_DEVICE inline bool partitions_on_samples(index_t width, index_t nv) {
  return width % sample_every == 0 && nv % sample_every == 0 && nv >= 8 * sample_every;
}

// One pair sample (pair_sample_kernel, pieces_sample_kernel): the half's
// inner split at `rank` into *split, and its elements of ranks rank and
// rank - 1 into keys[0] and keys[1] (unwritten where there is none).
template <class K, class Comp>
__device__ __forceinline__ void sample_half(const run_half<4, K>& half, index_t rank, index_t* split, K* keys,
                                            Comp& comp) {
  const index_t s = merge_path<bounds::lower>(half.x, half.nx, half.y, half.ny, rank, comp);
  *split = s;
  if (rank < half.size()) keys[0] = half.at(rank, s, comp);
  if (rank > 0) keys[1] = last_before(half, rank, s, comp);
}

// Threads a block of the small kernels around the passes: the sample
// kernels (a sample a thread) and the copy back (a grid-stride copy). The
// launches below use the same constants as the kernels' launch bounds.
inline constexpr int sample_threads = 128;
inline constexpr int copy_threads = 256;

template <class K, class Comp>
__global__ void __launch_bounds__(sample_threads)
    pair_sample_kernel(sort_buffers<K, char> buf, index_t n, pass_plan plan, index_t nv, int pass, sort_flags flags,
                       index_t* samples, K* sample_keys, const K* run_samples, Comp comp) {
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  if (!flags.unsorted()) return;
  const int src = buffer_before_pass(flags, pass, plan.first_buffer, plan.bs_nv);
  const index_t width = pass_shape_of(plan, flags, n, nv).width;
  // On run samples (partitions_on_samples): the same, over the samples, the
  // runs' width and the tile in samples.
  const bool sampled = run_samples != nullptr && partitions_on_samples(width, nv);
  const K* keys = sampled ? run_samples : buf.keys(src);
  const index_t keys_n = sampled ? (n + sample_every - 1) / sample_every : n;
  const index_t w = sampled ? width / sample_every : width;
  if (sampled) nv /= sample_every;
  const index_t stride = sample_stride(w, nv);
  const index_t pairs = 2 * ((n + 4 * width - 1) / (4 * width));
  const index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= pairs * stride) return;
  // The pairs of a 4-way pass are the groups of a 2-way pass of the same width.
  const index_t j = i % stride;
  const run_group<2, K> g = group_at<2>(keys, keys_n, w, i / stride);
  const index_t size = group_size(g);
  const index_t rank = j * nv < size ? j * nv : size;
  sample_half(run_half<4, K>{g.keys, g.len[0], g.keys + w, g.len[1]}, rank, samples + i, sample_keys + 2 * i, comp);
}

// The tile's piece of each run: [start[k], end[k]). A tile of a sorted input
// ends where the next tile starts; whatever comp does, the pieces are clamped
// to their runs and to exactly `count` keys in all, so every output position
// is written once and every read is in range.
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

// What a pass tile needs, worked out by its partition kernel so that the pass
// kernel's threads do none of the group's 64-bit geometry (that was a fifth
// of a 4-way pass kernel's instructions, each thread of the CTA doing it all):
// piece k is [at[k], at[k] + size[k]) of the source buffers, the output
// starts at out, and the pieces are already clamped (clamp_pieces).
template <int Ways>
struct alignas(16) tile_desc {
  index_t at[Ways];
  index_t out;
  std::uint16_t size[Ways];  // a tile holds at most 65535 elements (launch_box)
};

// Tile [d0, d1) of group `group` (runs g): its pieces [start[k], end[k]) of
// the runs, clamped (clamp_pieces), as a descriptor.
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

// Tiles a partition block describes: its 128 threads find where 128
// consecutive tiles start, and each tile but the last ends where the next
// starts, so one search a block is spent on the next block's first tile.
inline constexpr int partition_tiles = 127;

// The cut of a 4-way group at sample diagonal D (partitions_on_samples): the
// 4-way search over the runs' samples (sg; with the pair samples hs over
// them), then the splitter, the last sample left of that split in the merge's
// order (ties: the later run), and in each other run the end of what precedes
// it, searched between the samples around it (32 keys): upper bound in runs
// before the splitter's, lower bound after (stable). Every probe is in range
// whatever comp does.
template <class K, class Comp>
__device__ __forceinline__ run_split<4> sampled_cut(const run_group<4, K>& g, const run_group<4, K>& sg, index_t d,
                                                    const half_samples<K>& hs, Comp& comp) {
  run_split<4> cut{{0, 0, 0, 0}};
  if (d == 0) return cut;
  const index_t target = d * sample_every;
  const run_split<4> c = group_split(sg, d, comp, hs);
  int rs = -1;
  K x{};
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    if (c.s[r] == 0) continue;
    const K k = sg.keys[r * sg.width + c.s[r] - 1];
    if (rs < 0 || !comp(k, x)) {
      rs = r;
      x = k;
    }
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const index_t taken = c.s[r];
    if (r == rs) {
      cut.s[r] = sample_every * (taken - 1) + 1;
    } else if (taken > 0) {
      const K* run = g.keys + r * g.width;
      index_t lo = sample_every * (taken - 1) + 1;
      index_t hi = sample_every * taken < g.len[r] ? sample_every * taken : g.len[r];
      lo = lo < hi ? lo : hi;
      while (lo < hi) {
        const index_t mid = lo + (hi - lo) / 2;
        if (r < rs ? !comp(x, run[mid]) : comp(run[mid], x)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      cut.s[r] = lo;
    }
  }
  // Then along the merge to the tile's diagonal, `target` outputs (at most
  // 4 (sample_every - 1) further for a strict weak order, in the sectors the
  // window searches just read), so that tiles hold exactly nv outputs, as
  // with group_split, and start at multiples of nv: full tiles and 32-aligned
  // stores in the pass kernel (cuts anywhere near the samples' diagonals made
  // tiles partial and their stores straddle segments: 9% more pass-kernel
  // time at 2^28 int32 keys, H100). k outputs left: the key q = ceil(k / 4)
  // into each run, and the first of those in the merge's order (ties: the
  // earlier run) has at most 4 q - 4 < k keys before it, so its run's q keys
  // are taken at once: a few rounds of four independent loads instead of k
  // dependent steps (a serial merge took 0.08 ms of a 0.15 ms partition at
  // 2^28, H100). Bounded, so that any comp ends; clamp_pieces then keeps the
  // pieces within the tile.
  index_t done = 0;
#pragma unroll
  for (int r = 0; r < 4; ++r) done += cut.s[r];
  for (index_t k = target - done < 4 * sample_every ? target - done : 4 * sample_every; k > 0;) {
    const index_t q = (k + 3) / 4;
    int pick = -1;
    index_t take = 0;
    K first{};
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const index_t left = g.len[r] - cut.s[r];
      if (left <= 0) continue;
      const index_t p = left < q ? left : q;
      const K e = g.keys[r * g.width + cut.s[r] + p - 1];
      if (pick < 0 || comp(e, first)) {
        pick = r;
        first = e;
        take = p;
      }
    }
    if (pick < 0) break;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      if (r == pick) cut.s[r] += take;
    }
    k -= take;
  }
  return cut;
}

// Where every tile of a pass starts in its group's runs (partition.cuh:
// group_split), then each tile's descriptor. The thread of a group's first
// tile also checks whether the group is in order already (each run's first
// key not below the previous run's last), and thread 0 records which buffer
// the pass reads. 4-way passes with run_samples (partitions_on_samples) find
// the same cuts through sampled_cut. (The minimum of blocks: without one,
// ptxas held the 16-byte keys' 4-way kernel to 80 registers and spilled.)
template <int Ways, class K, class Comp>
__global__ void __launch_bounds__(partition_tiles + 1, 4)
    pass_partition_kernel(sort_buffers<K, char> buf, index_t n, pass_plan plan, index_t nv, int pass,
                          sort_flags flags, tile_desc<Ways>* descs, const index_t* samples, const K* sample_keys,
                          const K* run_samples, Comp comp) {
  __shared__ run_split<Ways> starts[partition_tiles + 1];
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  const int src = buffer_before_pass(flags, pass, plan.first_buffer, plan.bs_nv);
  const index_t tile = static_cast<index_t>(blockIdx.x) * partition_tiles + threadIdx.x;
  if (!flags.unsorted()) {
    if (tile == 0) flags.source(pass) = src;
    return;
  }
  const pass_shape shape = pass_shape_of(plan, flags, n, nv);
  const bool sampled = Ways == 4 && run_samples != nullptr && partitions_on_samples(shape.width, nv);
  if (tile == 0) {
    flags.source(pass) = src;
    flags.shapes[pass] = shape;  // the pass kernel's tile count
  }
  const bool mine = tile < shape.num_tiles;
  const int group = static_cast<int>(mine ? tile : 0) / shape.tiles_per_group;
  const int local = static_cast<int>(mine ? tile : 0) % shape.tiles_per_group;
  const run_group<Ways, K> g = group_at<Ways>(buf.keys(src), n, shape.width, group);
  const index_t snv = nv / sample_every;  // a tile in samples (sampled)
  if (mine) {
    if (local == 0) {
      bool in_order = true;
#pragma unroll
      for (int k = 1; k < Ways; ++k) {
        if (g.len[k] > 0) in_order &= !comp(g.keys[k * shape.width], g.keys[k * shape.width - 1]);
      }
      if (!in_order) flags.has_work(pass) = 1;
    }
    // 4-way passes: the group's pair samples, over the runs or their samples.
    half_samples<K> hs{{nullptr, nullptr}, {nullptr, nullptr}, sampled ? snv : nv};
    if (samples != nullptr) {
      const index_t stride =
          sampled ? sample_stride(shape.width / sample_every, snv) : sample_stride(shape.width, nv);
      const index_t first = static_cast<index_t>(group) * 2 * stride;
      hs.s[0] = samples + first;
      hs.s[1] = hs.s[0] + stride;
      hs.keys[0] = sample_keys + 2 * first;
      hs.keys[1] = hs.keys[0] + 2 * stride;
    }
    if constexpr (Ways == 4) {
      if (sampled) {
        const run_group<4, K> sg = group_at<4>(run_samples, (n + sample_every - 1) / sample_every,
                                               shape.width / sample_every, group);
        starts[threadIdx.x] = sampled_cut(g, sg, static_cast<index_t>(local) * snv, hs, comp);
      } else {
        starts[threadIdx.x] = group_split(g, static_cast<index_t>(local) * nv, comp, hs);
      }
    } else {
      starts[threadIdx.x] = group_split(g, static_cast<index_t>(local) * nv, comp, hs);
    }
  }
  __syncthreads();
  if (!mine || threadIdx.x == partition_tiles) return;
  const index_t size = group_size(g);
  const index_t d0 = static_cast<index_t>(local) * nv;
  const index_t d1 = d0 + nv < size ? d0 + nv : size;
  index_t start[Ways], end[Ways];
#pragma unroll
  for (int k = 0; k < Ways; ++k) {
    start[k] = starts[threadIdx.x].s[k];
    end[k] = d1 == size ? g.len[k] : starts[threadIdx.x + 1].s[k];
  }
  descs[tile] = describe_tile(g, group, start, end, d0, d1);
}

// The registers a merge-pass thread may use: like the merge kernel, many
// threads per multiprocessor (the passes are bound by loads in flight).
// 4-way passes of elements up to 8 bytes with keys under 8 (which alone
// take 4-way passes; 8-byte keys spilled) fill the SM (32 registers; their
// loads go out a few at a time, load_pieces): 11.60 against 12.85 ms for
// 2^28 int32 keys, 20.51 against 21.52 for int32 pairs, where 1024 threads
// (64 registers) had been the most that did not spill, and 1536 (40
// registers) took 12.44 and 20.93 (H100). 2-way passes ask for three
// quarters of a full SM (about 40 registers; a full SM was no faster: 0.837
// against 0.829 ms at 2^24 int32 keys), other 4-way passes and 16-byte
// elements (whose keys take four registers each: 256x5 spilled at 40) for at
// least 1024 threads (64). Larger elements get no limit.
template <class Box, int Ways, std::size_t KeyBytes, std::size_t ElementBytes>
inline constexpr int pass_ctas_per_sm = [] {
  if (ElementBytes > 16 || sm_max_threads == 0 || Box::nt >= sm_max_threads) return 1;
  const int threads = Ways == 4 ? (ElementBytes <= 8 && KeyBytes < 8 ? sm_max_threads : 1024)
                                : (ElementBytes < 16 ? sm_max_threads * 3 / 4 : 1024);
  const int ctas = threads / Box::nt;
  const int cap = sm_max_threads == 2048 ? 32 : 16;  // CTAs an SM holds
  return ctas < 1 ? 1 : (ctas > cap ? cap : ctas);
}();

// A 4-way tile's pieces side by side in shared memory in the order 0 2 | 1 3,
// so that level 1 is a single CTA merge of (0 2) with (1 3)
// (cta_merge_pairs) whose output is merge(0, 1) followed by merge(2, 3), and
// level 2 merges those two halves. (2-way tiles hold run 0's piece, then run
// 1's.)
__device__ __forceinline__ piece_map<4> pieces_of(const tile_desc<4>& d) {
  piece_map<4> m;
  m.start[0] = 0;
  m.start[1] = d.size[0];
  m.start[2] = m.start[1] + d.size[2];
  m.start[3] = m.start[2] + d.size[1];
  m.delta[0] = d.at[0];
  m.delta[1] = d.at[2] - m.start[1];
  m.delta[2] = d.at[1] - m.start[2];
  m.delta[3] = d.at[3] - m.start[3];
  return m;
}

template <int Ways>
__device__ __forceinline__ int count_of(const tile_desc<Ways>& d) {
  int count = 0;
#pragma unroll
  for (int k = 0; k < Ways; ++k) count += d.size[k];
  return count;
}

// One tile of a pass, described by d (in global or shared memory): its pieces into
// shared memory, merged in one or two levels and stored in the other
// buffers. The output position is read from the descriptor (in L1) only at
// the end: kept in registers through both merge levels, it made the 4-way
// int32 kernel spill at its 64-register budget (ptxas -v, sm_90).
template <class Box, int Ways, bool Full, class K, class V, bool WithValues, class Comp>
__device__ __forceinline__ void pass_tile(const sort_buffers<K, V>& buf, int src, const tile_desc<Ways>& d, int count,
                                          unsigned char* smem, Comp& comp, K* samples = nullptr) {
  using layout = merge_layout<K, V, WithValues, Box::nv>;
  K* keys = reinterpret_cast<K*>(smem + layout::keys);
  V* vals = reinterpret_cast<V*>(smem + layout::vals);
  tile_offset* sources = reinterpret_cast<tile_offset*>(smem + layout::sources);
  const int tid = static_cast<int>(threadIdx.x);
  // Level 1's three offsets (4 ways), then nothing of the descriptor but its
  // sizes: registers are tight here.
  int a_split = 0, na = 0, b_split = 0;
  if constexpr (Ways == 2) {
    // Keys only: a partial tile loads direct (held in registers, its checked
    // values made the 512x15 kernel spill once the pass shape came from
    // device memory; ptxas -v, sm_90). Pairs spill the other way round.
    load_tile<Box::nt, Box::vt, Full, !WithValues>(buf.keys(src) + d.at[0], d.size[0], buf.keys(src) + d.at[1], count,
                                                   keys, tid);
    if constexpr (WithValues) {
      load_tile<Box::nt, Box::vt, Full>(buf.vals(src) + d.at[0], d.size[0], buf.vals(src) + d.at[1], count, vals, tid);
    }
  } else {
    const piece_map<Ways> pieces = pieces_of(d);
    load_pieces<Box::nt, Box::vt, Full>(buf.keys(src), pieces, count, keys, tid);
    if constexpr (WithValues) load_pieces<Box::nt, Box::vt, Full>(buf.vals(src), pieces, count, vals, tid);
    a_split = pieces.start[1];
    na = pieces.start[2];
    b_split = pieces.start[3];
  }
  __syncthreads();

  K merged[Box::vt];
  int from[Box::vt];
  if constexpr (Ways == 4) {
    // Level 1, written back over the tile; each output's tile offset goes to
    // `sources`.
    cta_merge_pairs<Box::vt>(keys, na, a_split, b_split, count, tid, merged, from, comp);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < Box::vt; ++i) {
      const int j = Box::vt * tid + i;
      if (Full || j < count) {
        keys[j] = merged[i];
        if constexpr (WithValues) sources[j] = static_cast<tile_offset>(from[i]);
      }
    }
    __syncthreads();
  }
  // The last level: the two halves.
  cta_merge<Box::vt>(keys, Ways == 4 ? d.size[0] + d.size[1] : d.size[0], count, tid, merged, from, comp);
  if constexpr (WithValues) {
    // Each output's value sits at the tile offset its key came from (through
    // level 1's offsets for 4 ways).
    int origin[Box::vt];
#pragma unroll
    for (int i = 0; i < Box::vt; ++i) origin[i] = Ways == 4 ? sources[from[i] < count ? from[i] : 0] : from[i];
    __syncthreads();
#pragma unroll
    for (int i = 0; i < Box::vt; ++i) {
      const int j = Box::vt * tid + i;
      if (Full || j < count) sources[j] = static_cast<tile_offset>(origin[i]);
    }
  } else {
    __syncthreads();
  }
  const index_t out_at = d.out;
  if constexpr (Ways == 4) {
    store_warp_striped_sampled<Box::vt, Full>(merged, keys, buf.keys(1 - src) + out_at, count, tid, samples, out_at);
  } else {
    store_warp_striped<Box::vt, Full>(merged, keys, buf.keys(1 - src) + out_at, count, tid);
  }
  if constexpr (WithValues) {
    __syncthreads();
    V* out_vals = buf.vals(1 - src) + out_at;
#pragma unroll
    for (int i = 0; i < Box::vt; ++i) {
      const int j = Box::nt * i + tid;
      if (Full || j < count) out_vals[j] = vals[sources[j]];
    }
  }
}

template <class Box, int Ways, class K, class V, bool WithValues, class Comp>
__global__ void __launch_bounds__(Box::nt, pass_ctas_per_sm<Box, Ways, sizeof(K), sizeof(K) + (WithValues ? sizeof(V) : 0)>)
    pass_kernel(sort_buffers<K, V> buf, int pass, sort_flags flags, const tile_desc<Ways>* descs, Comp comp,
                K* samples) {
  extern __shared__ __align__(16) unsigned char smem[];
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  const int tile = static_cast<int>(blockIdx.x);
  const int work = flags.has_work(pass);
  const int src = flags.source(pass);
  const int num_tiles = flags.shapes[pass].num_tiles;
  if (!work || tile >= num_tiles) return;
  // Read in place, each field where it is used: a copy of the whole
  // descriptor in registers made the 2-way pairs kernels spill (ptxas -v, sm_90).
  const tile_desc<Ways>& d = descs[tile];
  const int count = count_of(d);
  // Only 4-way passes sample their output (launch_merge_sort): the code is
  // left out of the 2-way kernels.
  K* const sample_to = Ways == 4 ? samples : nullptr;
  if (count == Box::nv) {
    pass_tile<Box, Ways, true, K, V, WithValues>(buf, src, d, count, smem, comp, sample_to);
  } else {
    pass_tile<Box, Ways, false, K, V, WithValues>(buf, src, d, count, smem, comp, sample_to);
  }
}

// ---------------------------------------------------------------------------
// 4. Back to the caller's buffers when the passes left the data in scratch
// (or, for a sort into a buffer of the sort across GPUs, to that buffer).
template <bool WithValues, class K, class V>
__device__ __forceinline__ void copy_to_buffer(const sort_buffers<K, V>& buf, int to, index_t n) {
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    buf.keys(to)[i] = buf.keys(1 - to)[i];
    if constexpr (WithValues) buf.vals(to)[i] = buf.vals(1 - to)[i];
  }
}

// final_buffer: where the data must end (0: the caller's). width (sort into
// runs, sort_to_runs): the length of the first run the passes left, runs of
// first_width * final_scale (n when the input was sorted or that is all).
template <class K, class V, bool WithValues>
__global__ void __launch_bounds__(copy_threads)
    copy_back_kernel(sort_buffers<K, V> buf, index_t n, int passes, int first_buffer, index_t bs_nv,
                     sort_flags flags, int final_buffer, index_t final_scale, long long* width) {
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  if (width != nullptr && blockIdx.x == 0 && threadIdx.x == 0) {
    const index_t base = flags.first_width(bs_nv);
    *width = !flags.unsorted() || base > (n - 1) / final_scale ? n : base * final_scale;
  }
  if (buffer_before_pass(flags, passes, first_buffer, bs_nv) == final_buffer) return;
  copy_to_buffer<WithValues>(buf, final_buffer, n);
}

// 2-way merge levels from runs of `width` to one run of n.
inline int merge_levels(index_t n, index_t width) {
  int levels = 0;
  for (index_t w = width; w < n; w *= 2) ++levels;
  return levels;
}

// Zeroes the flags (of `passes` passes) and launches sortedness_kernel, which
// records in them where the descents of keys[0, n) are (useful: the
// block-sort tile).
template <class K, class Comp>
void launch_sortedness(const K* keys, index_t n, index_t useful, const sort_flags& flags, int passes, Comp comp,
                       cudaStream_t stream, const device_info& dev, const char* algorithm, K* samples = nullptr) {
  check_cuda(cudaMemsetAsync(flags.runs, 0, sort_flags::bytes(passes), stream), algorithm, "cudaMemsetAsync");
  constexpr int check_nt = 256;
  // A full SM of blocks (8 of 256 threads): one read of the keys is all the
  // kernel does, so the more loads in flight the better (above).
  const index_t chunk = check_nt * sortedness_vt<K>;
  const index_t check_blocks = std::min<index_t>((n + chunk - 1) / chunk, 8 * dev.sms);
  launch(sortedness_kernel<check_nt, K, Comp>, check_blocks, check_nt, 0, stream, false, dev, algorithm,
         "sortedness_kernel", keys, n, useful, flags, comp, samples);
}

// Bytes of n elements of T in temporary storage, each array 256-byte aligned.
template <class T>
std::size_t bytes_of(index_t n) {
  return align_up(sizeof(T) * static_cast<std::size_t>(n), 256);
}

// ---------------------------------------------------------------------------
// 5. Small sorts in one kernel. Below about 2^23 keys a sort of separate
// kernels is a chain of short ones, a wave or less each, and their launches
// and partitions cost more than the bytes they move (2^20 int32 keys: a
// 25 us block sort, then 6 passes of 15 us, where CUB's passes take 10).
// one_kernel_sort_kernel does it all with CTAs that are resident together
// (a cooperative launch): each CTA block-sorts tiles, then in every 2-way
// pass finds its own tiles' splits (warp_merge_path: two warps, the tile's
// start and end) and merges them with pass_tile, with a grid-wide barrier
// between passes. 2^20 int32 keys take 0.079 ms against CUB's 0.098 (H100).
// Sortedness comes from sortedness_kernel, as in the large sorts: sorted
// input skips everything, sorted runs of W start the passes at W. At the
// top of the class (2^22 keys on sm_90) block_sort_kernel sorts first, in
// the larger tiles of the block-sort box (two passes fewer), and the
// cooperative kernel makes the passes only.
template <class Box, class K, class V, bool WithValues, class Comp>
__device__ __forceinline__ void one_kernel_pass_tile(const sort_buffers<K, V>& buf, int src, index_t n,
                                                     index_t width, const pass_shape& shape, int tile,
                                                     tile_desc<2>& desc, index_t (&split)[2], unsigned char* smem,
                                                     Comp& comp) {
  const int group = tile / shape.tiles_per_group;
  const index_t d0 = static_cast<index_t>(tile % shape.tiles_per_group) * Box::nv;
  const run_group<2, K> g = group_at<2>(buf.keys(src), n, width, group);
  const index_t d1 = d0 + Box::nv < g.len[0] + g.len[1] ? d0 + Box::nv : g.len[0] + g.len[1];
  const int warp = static_cast<int>(threadIdx.x / 32);
  if (warp < 2) {
    const index_t s = warp_merge_path(g.keys, g.len[0], g.keys + width, g.len[1], warp == 0 ? d0 : d1, comp);
    if (threadIdx.x % 32 == 0) split[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    index_t start[2] = {split[0], d0 - split[0]}, end[2] = {split[1], d1 - split[1]};
    desc = describe_tile(g, group, start, end, d0, d1);
  }
  __syncthreads();
  const int count = static_cast<int>(d1 - d0);
  if (count == Box::nv) {
    pass_tile<Box, 2, true, K, V, WithValues>(buf, src, desc, count, smem, comp);
  } else {
    pass_tile<Box, 2, false, K, V, WithValues>(buf, src, desc, count, smem, comp);
  }
  __syncthreads();  // desc, split and the tile's shared memory are the next tile's
}

// Ctas: the CTAs an SM is to hold (the register budget); the grid is at most
// what the device holds at once (resident_ctas).
template <class Box, int Ctas, class K, class V, bool WithValues, bool Indices, class ValsIn, class Comp>
__global__ void __launch_bounds__(Box::nt, Ctas)
    one_kernel_sort_kernel(sort_buffers<K, V> buf, ValsIn vals_in, index_t n, int first_buffer, sort_flags flags,
                           bool one_tile, index_t bs_nv, bool block_sorted, Comp comp) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ tile_desc<2> desc;
  __shared__ index_t split[2];
  wait_for_prerequisite_grid();
  if (one_tile) {  // no sortedness_kernel ran: "unsorted", and the block sort checks its tile
    if (threadIdx.x == 0) *flags.runs = 1;
    __syncthreads();
  }
  // Block sort (which also writes merge_sort_indices' positions of tiles it
  // skips), unless the input is sorted or block_sort_kernel did it (tiles of
  // bs_nv); then the passes.
  if (!block_sorted && (Indices || flags.unsorted())) {
    const index_t tiles = (n + Box::nv - 1) / Box::nv;
    for (index_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      block_sort_tile<Box, K, V, WithValues, Indices>(buf, vals_in, n, first_buffer, flags, comp, t, smem);
      __syncthreads();
    }
  }
  if (!flags.unsorted()) return;  // every CTA alike: no barrier waits on one gone
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  grid.sync();
  int src = flags.skips_block_sort(bs_nv) ? 0 : first_buffer;
  for (index_t width = flags.first_width(bs_nv); width < n; width *= 2) {
    const pass_shape shape = make_pass_shape(n, width, 2, Box::nv);
    for (int tile = static_cast<int>(blockIdx.x); tile < shape.num_tiles; tile += static_cast<int>(gridDim.x)) {
      one_kernel_pass_tile<Box, K, V, WithValues>(buf, src, n, width, shape, tile, desc, split, smem, comp);
    }
    grid.sync();
    src ^= 1;
  }
  if (src == 1) copy_to_buffer<WithValues>(buf, 0, n);
}

// The one-kernel sort of a size class, or false when the device cannot hold
// a cooperative grid of it, for the caller to sort with separate kernels
// instead. From 2^OneKernel::separate_log2 on, block_sort_kernel sorts
// tiles of BsBox first and the cooperative kernel makes the passes only.
template <class OneKernel, class BsBox, class Policy, class K, class V, bool WithValues, bool Indices, class ValsIn,
          class Comp>
bool launch_one_kernel_sort(const Policy& policy, const device_info& dev, K* keys, index_t n, ValsIn vals_in, V* vals,
                            Comp comp, const char* algorithm) {
  using Box = typename OneKernel::box;
  using types = block_sort_types<Box, K, V, WithValues, Indices>;
  using layout = merge_layout<K, V, WithValues, Box::nv>;
  auto kernel = one_kernel_sort_kernel<Box, OneKernel::ctas, K, V, WithValues, Indices, ValsIn, Comp>;
  const std::size_t smem = std::max(sizeof(typename types::temp_storage), layout::bytes);
  prepare_shared_memory(kernel, smem, dev, Box::nt, Box::vt, algorithm);
  const int resident = resident_ctas(kernel, Box::nt, smem, dev, algorithm);
  if (resident == 0) return false;
  const bool separate = OneKernel::separate_log2 > 0 && n >= (index_t(1) << OneKernel::separate_log2);
  const index_t bs_nv = separate ? BsBox::nv : Box::nv;
  const index_t tiles = (n + Box::nv - 1) / Box::nv;
  // Where the block sort writes: the last pass ends in the caller's range.
  const int first_buffer = merge_levels(n, bs_nv) % 2;
  using bs_types = block_sort_types<BsBox, K, V, WithValues, Indices>;
  auto bs_kernel = block_sort_kernel<BsBox, K, V, WithValues, Indices, ValsIn, Comp>;
  if (separate) {
    prepare_shared_memory(bs_kernel, sizeof(typename bs_types::temp_storage), dev, BsBox::nt, BsBox::vt, algorithm);
  }

  // Scratch keys and values, then the flags (no passes recorded: sort_flags::bytes(0)).
  const cudaStream_t stream = policy.stream();
  const std::size_t scratch_keys = bytes_of<K>(n);
  const std::size_t scratch_vals = WithValues ? bytes_of<V>(n) : 0;
  const std::size_t temp_bytes = scratch_keys + scratch_vals + sort_flags::bytes(0);
  temporary_storage<typename Policy::allocator_type> temp(policy.allocator(), stream, temp_bytes, algorithm);
  unsigned char* t = temp.template as<unsigned char>();
  const sort_buffers<K, V> buf{keys, reinterpret_cast<K*>(t), vals, reinterpret_cast<V*>(t + scratch_keys)};
  const sort_flags flags = sort_flags::at(t + scratch_keys + scratch_vals, 0);
  // One tile: the block sort alone, which finds a sorted tile itself (two
  // launches fewer: 2^12 int32 keys took 0.021 ms against CUB's 0.014 with them).
  const bool one_tile = tiles == 1 && !separate;
  if (!one_tile) launch_sortedness(static_cast<const K*>(keys), n, bs_nv, flags, 0, comp, stream, dev, algorithm);
  if (separate) {
    launch(bs_kernel, (n + bs_nv - 1) / bs_nv, BsBox::nt, sizeof(typename bs_types::temp_storage), stream, true, dev,
           algorithm, "block_sort_kernel", buf, vals_in, n, first_buffer, flags, comp, static_cast<K*>(nullptr));
  }
  launch_cooperative(kernel, std::min<index_t>(tiles, resident), Box::nt, smem, stream, algorithm,
                     "one_kernel_sort_kernel", buf, vals_in, n, first_buffer, flags, one_tile, bs_nv, separate, comp);
  if (policy.synchronizes()) {
    check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (a synchronous Thrust policy)");
  }
  if (debug_enabled()) {
    const char* stage =
        separate ? "one-kernel passes (after block_sort_kernel)" : "one-kernel sort (block sort and 2-way passes)";
    print_plan<Box>(dev, algorithm, stage, kernel_arch(reinterpret_cast<const void*>(kernel), dev, algorithm), true,
                    tiles, temp_bytes, smem);
  }
  return true;
}

// The tuning line's one-kernel size class: sorts of fewer than 2^Log2 elements
// go through one_kernel_sort_kernel with Box, its registers sized for Ctas
// CTAs an SM, the block sort a kernel of its own from 2^SeparateLog2 on.
// Log2 = 0: none; SeparateLog2 = 0: never separate.
template <class Box, int Ctas, int Log2, int SeparateLog2>
struct one_kernel_class {
  using box = Box;
  static constexpr int ctas = Ctas;
  static constexpr int log2 = Log2;
  static constexpr int separate_log2 = SeparateLog2;
};

using no_one_kernel = one_kernel_class<launch_box<32, 1>, 1, 0, 0>;

// ---------------------------------------------------------------------------
// Tuning: boxes for keys K and values V (void: keys only). Large elements get
// fewer values per thread (scale_vt), and fewer threads when even that would
// not fit 96 KB of shared memory (the tuned 4-byte block sorts take 68 KB;
// a block may opt in to 163 KB on sm_80, 227 KB on sm_90 and sm_100, but
// only 99 KB on sm_86, sm_89 and sm_120, which take the sm_80 and sm_100
// lines: with the bound at 100 KB, boxes of 99 to 100 KB, such as the
// 1024x11 block sort of 2-byte keys with 9-byte values, were refused there;
// 96 KB leaves room for the kernels' static shared memory and changes no
// tuned 4- and 8-byte box); the block sort keeps a power of two
// (cub::BlockMergeSort), the passes a multiple of 32.
template <class K, class V>
struct merge_sort_table {
  static constexpr const auto& lines = tuning::merge_sort;
  static constexpr bool pairs = !std::is_void_v<V>;
  static constexpr std::size_t element_bytes = sizeof(K) + (pairs ? sizeof(std::conditional_t<pairs, V, char>) : 0);

  // Keys of 8 bytes or more, without values: the line's wide boxes.
  static constexpr bool wide = !pairs && sizeof(K) >= 8;

  static constexpr int bs_vt(const tuning::merge_sort_line& l) {
    if (wide) return tuning::scale_vt(l.bs_vt_wide, 8, sizeof(K));
    return pairs ? tuning::scale_vt(l.bs_vt_pairs, 8, element_bytes) : tuning::scale_vt(l.bs_vt_keys, 4, sizeof(K));
  }
  static constexpr int vt(const tuning::merge_sort_line& l) {
    if (wide) return tuning::scale_vt(l.vt_wide, 8, sizeof(K));
    return pairs ? tuning::scale_vt(l.vt_pairs, 8, element_bytes) : tuning::scale_vt(l.vt_keys, 4, sizeof(K));
  }
  static constexpr int shrink(int nt, int vt, std::size_t bytes_per_element, bool power_of_two) {
    while (nt > 32 && static_cast<std::size_t>(nt) * static_cast<std::size_t>(vt) * bytes_per_element > 96 * 1024) {
      nt = power_of_two ? nt / 2 : (nt / 2 + 31) / 32 * 32;
    }
    return nt;
  }
  // Line I's boxes: the block sort's, the passes', the ways and the size
  // (log2) from which passes are 4-way; then the passes' box of large sorts
  // and the size (log2) from which it is used (0: never).
  template <std::size_t I>
  static constexpr auto boxes() {
    constexpr auto l = lines[I];
    constexpr int bs_vt_ = bs_vt(l), vt_ = vt(l);
    constexpr std::size_t bs_bytes = sizeof(K) > element_bytes - sizeof(K) ? sizeof(K) : element_bytes - sizeof(K);
    constexpr std::size_t pass_bytes = element_bytes + (pairs ? sizeof(tile_offset) : 0);
    constexpr int bs_nt = wide ? l.wide_nt : (pairs ? l.bs_nt_pairs : l.bs_nt_keys);
    constexpr int nt = wide ? l.wide_nt : l.nt;
    constexpr int large_log2 = wide ? 0 : (pairs ? l.large_log2_pairs : l.large_log2_keys);
    // The one-kernel class: elements of up to 8 bytes (int64 keys: 256x9)
    // and keys of up to 16 bytes, whose vt scales from the 8-byte keys' (16
    // bytes: 256x5, where scaling from 4-byte keys gives 256x3).
    constexpr int small_vt = pairs  ? tuning::scale_vt(l.small_vt_pairs, 8, element_bytes)
                             : wide ? tuning::scale_vt(tuning::scale_vt(l.small_vt_keys, 4, 8), 8, sizeof(K))
                                    : tuning::scale_vt(l.small_vt_keys, 4, sizeof(K));
    constexpr int small_log2 = element_bytes <= 8 ? (pairs ? l.small_log2_pairs : l.small_log2_keys)
                               : (wide && sizeof(K) <= 16 ? l.small_log2_wide : 0);
    return std::tuple<launch_box<shrink(bs_nt, bs_vt_, bs_bytes, true), bs_vt_>,
                      launch_box<shrink(nt, vt_, pass_bytes, false), vt_>, std::integral_constant<int, wide ? 2 : l.ways>,
                      std::integral_constant<int, pairs ? l.four_way_log2_pairs : l.four_way_log2>,
                      launch_box<shrink(l.large_nt, vt_, pass_bytes, false), vt_>,
                      std::integral_constant<int, large_log2>,
                      one_kernel_class<launch_box<l.small_nt, small_vt>,
                                       pairs ? l.small_ctas_pairs : l.small_ctas_keys, small_log2,
                                       pairs ? 0 : l.small_separate_log2_keys>>{};
  }
};

// How the passes go for n keys after a block sort of tiles of `first_width`:
// `levels` 2-way merge levels (merge_levels(n, bs_nv) for one sorted run),
// as 2-way passes or, with max_ways = 4, one 2-way pass when the number of
// levels is odd, then 4-way passes.
// The grids are sized for a first width of bs_nv, the most tiles a pass can
// have: with runs of W >= bs_nv a pass has fewer groups, and a pass's tiles
// number at most n / nv plus one a group. The passes alternate buffers and
// must end in final_buffer (0: the caller's): so the block sort writes there
// for an even count of passes, the other buffer for an odd one
// (first_buffer), and a sort whose every pass has work needs no copy back.
inline std::vector<pass_plan> plan_passes(index_t n, index_t bs_nv, index_t nv, int max_ways, int levels,
                                          int final_buffer = 0) {
  std::vector<pass_plan> passes;
  index_t width = bs_nv;
  for (int left = levels; left > 0;) {
    const int ways = max_ways == 2 || left % 2 == 1 ? 2 : 4;
    const index_t groups = (n + width * ways - 1) / (width * ways);
    passes.push_back({width / bs_nv, ways, bs_nv, 0, (n + nv - 1) / nv + groups});
    width *= ways;
    left -= ways == 2 ? 1 : 2;
  }
  for (auto& p : passes) p.first_buffer = static_cast<int>((passes.size() + final_buffer) % 2);
  return passes;
}

// Where a sort of the sort across GPUs leaves its data (sort_to_runs): in
// keys/vals, the caller's buffers serving as the other buffer of the passes;
// with two_runs, as two sorted runs [0, W) and [W, n) when leaving out the
// last merge level saves a pass (an odd number of levels with 4-way passes,
// any with 2-way ones): the rank that receives the pieces merges them 4 ways
// (merge_four), which makes that level inside the merge it makes anyway. W is
// written to *width on the device (n for one run).
template <class K, class V>
struct runs_target {
  K* keys = nullptr;
  V* vals = nullptr;
  bool two_runs = false;
  long long* width = nullptr;
};

// MaxWays = 4: 4-way passes for n >= 2^FourWayLog2 (2-way ones below).
template <class BsBox, class Box, int MaxWays, int FourWayLog2, class Policy, class K, class V, bool WithValues,
          bool Indices, class ValsIn, class Comp>
void launch_merge_sort(const Policy& policy, const device_info& dev, K* keys, index_t n, ValsIn vals_in, V* vals,
                       Comp comp, const char* algorithm, const runs_target<K, V>* into = nullptr) {
  const int max_ways = MaxWays == 4 && n >= (index_t(1) << FourWayLog2) ? 4 : 2;
  static_assert((BsBox::nt & (BsBox::nt - 1)) == 0,
                "libmerge::merge_sort: the block-sort launch box needs a power-of-two nt (cub::BlockMergeSort)");
  const index_t block_tiles = (n + BsBox::nv - 1) / BsBox::nv;
  const int final_buffer = into != nullptr ? 1 : 0;
  const int all_levels = merge_levels(n, BsBox::nv);
  std::vector<pass_plan> passes = plan_passes(n, BsBox::nv, Box::nv, max_ways, all_levels, final_buffer);
  int levels = all_levels;
  if (into != nullptr && into->two_runs && all_levels > 0) {
    std::vector<pass_plan> fewer = plan_passes(n, BsBox::nv, Box::nv, max_ways, all_levels - 1, final_buffer);
    if (fewer.size() < passes.size()) {
      passes.swap(fewer);
      levels = all_levels - 1;
    }
  }
  const int num_passes = static_cast<int>(passes.size());
  const int first_buffer = (num_passes + final_buffer) % 2;  // where the block sort writes (plan_passes)
  index_t max_tiles = 0;
  for (const auto& p : passes) max_tiles = std::max(max_tiles, p.launch_tiles);
  if (block_tiles > max_grid_ctas || max_tiles > max_grid_ctas / 32) {
    throw std::invalid_argument(std::string("libmerge::") + algorithm +
                                ": input too large for one grid with this launch box");
  }

  using types = block_sort_types<BsBox, K, V, WithValues, Indices>;
  using layout = merge_layout<K, V, WithValues, Box::nv>;
  auto bs_kernel = block_sort_kernel<BsBox, K, V, WithValues, Indices, ValsIn, Comp>;
  auto pass2 = pass_kernel<Box, 2, K, V, WithValues, Comp>;
  // Without 4-way passes the 2-way kernel stands in (never launched as such).
  auto pass4 = pass_kernel<Box, MaxWays, K, V, WithValues, Comp>;
  const std::size_t bs_smem = sizeof(typename types::temp_storage);
  prepare_shared_memory(bs_kernel, bs_smem, dev, BsBox::nt, BsBox::vt, algorithm);
  constexpr std::size_t pass_smem = layout::bytes;
  if (num_passes > 0) {
    prepare_shared_memory(pass2, pass_smem, dev, Box::nt, Box::vt, algorithm);
    if constexpr (MaxWays == 4) prepare_shared_memory(pass4, pass_smem, dev, Box::nt, Box::vt, algorithm);
  }

  // One allocation: the scratch copy of keys and values, the flags, the tile
  // descriptors of the largest pass and the pair samples. Taken before anything runs, so a failed
  // allocation leaves the caller's data as it was.
  const cudaStream_t stream = policy.stream();
  const std::size_t scratch_keys = num_passes > 0 && into == nullptr ? bytes_of<K>(n) : 0;
  const std::size_t scratch_vals = num_passes > 0 && into == nullptr && WithValues ? bytes_of<V>(n) : 0;
  const std::size_t flag_bytes = align_up(sort_flags::bytes(num_passes), 256);
  // Tile descriptors: one for every CTA of the largest pass grid.
  const std::size_t desc_bytes =
      align_up((max_ways == 4 ? sizeof(tile_desc<4>) : sizeof(tile_desc<2>)) * static_cast<std::size_t>(max_tiles), 256);
  // 4-way passes: the pair samples, groups * 2 * (ceil(2w / nv) + 1) of them
  // for runs of w, which is at most 5 n / nv + n / bs_nv + 4 for any w from a
  // block-sort tile up (+ 8: the rounding of both quotients; over run
  // samples as many), and the run samples, every sample_every-th key.
  const index_t max_samples =
      max_ways == 4 ? 5 * ((n + Box::nv - 1) / Box::nv) + (n + BsBox::nv - 1) / BsBox::nv + 8 : 0;
  const std::size_t sample_bytes = align_up(sizeof(index_t) * static_cast<std::size_t>(max_samples), 256);
  const std::size_t sample_key_bytes = align_up(2 * sizeof(K) * static_cast<std::size_t>(max_samples), 256);
  const index_t run_sample_count = max_ways == 4 ? (n + sample_every - 1) / sample_every : 0;
  const std::size_t run_sample_bytes = align_up(sizeof(K) * static_cast<std::size_t>(run_sample_count), 256);
  const std::size_t temp_bytes =
      scratch_keys + scratch_vals + flag_bytes + desc_bytes + sample_bytes + sample_key_bytes + run_sample_bytes;
  temporary_storage<typename Policy::allocator_type> temp(policy.allocator(), stream, temp_bytes, algorithm);
  unsigned char* t = temp.template as<unsigned char>();
  const sort_buffers<K, V> buf = into != nullptr
                                     ? sort_buffers<K, V>{keys, into->keys, vals, into->vals}
                                     : sort_buffers<K, V>{keys, reinterpret_cast<K*>(t), vals,
                                                          reinterpret_cast<V*>(t + scratch_keys)};
  unsigned char* flag_memory = t + scratch_keys + scratch_vals;
  const sort_flags flags = sort_flags::at(flag_memory, num_passes);
  void* descs = t + scratch_keys + scratch_vals + flag_bytes;
  auto* samples = reinterpret_cast<index_t*>(t + scratch_keys + scratch_vals + flag_bytes + desc_bytes);
  auto* sample_keys = reinterpret_cast<K*>(t + scratch_keys + scratch_vals + flag_bytes + desc_bytes + sample_bytes);
  K* run_samples = max_ways == 4 ? reinterpret_cast<K*>(t + scratch_keys + scratch_vals + flag_bytes + desc_bytes +
                                                        sample_bytes + sample_key_bytes)
                                 : nullptr;

  launch_sortedness(static_cast<const K*>(keys), n, static_cast<index_t>(BsBox::nv), flags, num_passes, comp, stream,
                    dev, algorithm, run_samples);
  launch(bs_kernel, block_tiles, BsBox::nt, bs_smem, stream, true, dev, algorithm, "block_sort_kernel", buf, vals_in,
         n, first_buffer, flags, comp, run_samples);
  const sort_buffers<K, char> key_buf{buf.keys0, buf.keys1, nullptr, nullptr};
  for (int p = 0; p < num_passes; ++p) {
    const pass_plan& s = passes[p];
    // Each 4-way pass samples its output for the next pass's partition (the
    // last one has none to feed); the first pass's samples come from the
    // block sort or the sortedness read. A 2-way pass writes none (the sample
    // code made the 2-way kernels of int64 keys spill), and a pass skipped on
    // the device leaves the samples of the data it did not move: so after a
    // 2-way first pass (an odd level count) no pass partitions on samples,
    // or a 4-way pass after a skipped one would read the block sort's.
    const bool sampled = passes[0].ways == 4;
    K* next_samples = sampled && p + 1 < num_passes ? run_samples : nullptr;
    const K* my_samples = sampled ? run_samples : nullptr;
    const index_t part_blocks = (s.launch_tiles + partition_tiles - 1) / partition_tiles;
    if (s.ways == 2) {
      auto* d = static_cast<tile_desc<2>*>(descs);
      launch(pass_partition_kernel<2, K, Comp>, part_blocks, partition_tiles + 1, 0, stream, true, dev, algorithm,
             "pass_partition_kernel", key_buf, n, s, static_cast<index_t>(Box::nv), p, flags, d,
             static_cast<const index_t*>(nullptr), static_cast<const K*>(nullptr), static_cast<const K*>(nullptr),
             comp);
      launch(pass2, s.launch_tiles, Box::nt, pass_smem, stream, true, dev, algorithm, "pass_kernel", buf, p, flags,
             static_cast<const tile_desc<2>*>(d), comp, static_cast<K*>(nullptr));
    } else if constexpr (MaxWays == 4) {
      auto* d = static_cast<tile_desc<4>*>(descs);
      launch(pair_sample_kernel<K, Comp>, (max_samples + sample_threads - 1) / sample_threads, sample_threads, 0,
             stream, true, dev, algorithm, "pair_sample_kernel", key_buf, n, s, static_cast<index_t>(Box::nv), p,
             flags, samples, sample_keys, my_samples, comp);
      launch(pass_partition_kernel<4, K, Comp>, part_blocks, partition_tiles + 1, 0, stream, true, dev, algorithm,
             "pass_partition_kernel", key_buf, n, s, static_cast<index_t>(Box::nv), p, flags, d,
             static_cast<const index_t*>(samples), static_cast<const K*>(sample_keys), my_samples, comp);
      launch(pass4, s.launch_tiles, Box::nt, pass_smem, stream, true, dev, algorithm, "pass_kernel", buf, p, flags,
             static_cast<const tile_desc<4>*>(d), comp, next_samples);
    }
  }
  if (num_passes > 0 || into != nullptr) {
    launch(copy_back_kernel<K, V, WithValues>, std::min<index_t>((n + copy_threads - 1) / copy_threads, 8 * dev.sms),
           copy_threads, 0, stream, true, dev, algorithm, "copy_back_kernel", buf, n, num_passes, first_buffer,
           static_cast<index_t>(BsBox::nv), flags, final_buffer, index_t(1) << levels,
           into != nullptr ? into->width : nullptr);
  }
  if (policy.synchronizes()) {
    check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (a synchronous Thrust policy)");
  }
  if (!debug_enabled()) return;  // the plan below costs lookups; only for LIBMERGE_DEBUG=1
  const bool tuned = std::is_same_v<typename Policy::box_type, tuned_launch_box>;
  print_plan<BsBox>(dev, algorithm, "block sort", kernel_arch(reinterpret_cast<const void*>(bs_kernel), dev, algorithm),
                    tuned, block_tiles, temp_bytes, bs_smem);
  if (num_passes > 0) {
    std::fprintf(stderr, "libmerge::%s: %d merge passes:", algorithm, num_passes);
    for (const auto& s : passes) {
      std::fprintf(stderr, " %d-way of width %lld,", s.ways, static_cast<long long>(s.scale * BsBox::nv));
    }
    std::fprintf(stderr, " (widths from the block-sort tile; sorted runs of more start the passes at their width)");
    std::fprintf(stderr, "\n");
    print_plan<Box>(dev, algorithm, "merge passes", kernel_arch(reinterpret_cast<const void*>(pass4), dev, algorithm),
                    tuned, max_tiles, temp_bytes, pass_smem);
  }
}

// The boxes of this call: the policy's (one for both stages, or two, and
// then always separate kernels), else the tuning table's line for the
// architecture the block sort was compiled for, with the large sorts' pass
// box from its size on and its one-kernel class.
template <class Policy, class K, class V, bool WithValues, bool Indices, class ValsIn, class Comp, class F>
void with_sort_boxes(const device_info& dev, const char* algorithm, index_t n, F&& f) {
  using Box = typename Policy::box_type;
  if constexpr (std::is_same_v<Box, tuned_launch_box>) {
    using table = merge_sort_table<K, std::conditional_t<WithValues, V, void>>;
    with_tuned_boxes<table>(dev, algorithm,
                            [](auto bs_box, auto...) {
                              return block_sort_kernel<decltype(bs_box), K, V, WithValues, Indices, ValsIn, Comp>;
                            },
                            [&](auto bs_box, auto box, auto ways, auto four_way_log2, auto large_box, auto large_log2,
                                auto one_kernel) {
                              constexpr int from = decltype(large_log2)::value;
                              if constexpr (from > 0) {
                                if (n >= (index_t(1) << from)) return f(bs_box, large_box, ways, four_way_log2, one_kernel);
                              }
                              f(bs_box, box, ways, four_way_log2, one_kernel);
                            });
  } else if constexpr (std::is_same_v<Box, typename merge_box_of<Box>::type>) {
    f(Box{}, Box{}, std::integral_constant<int, 2>{}, std::integral_constant<int, 0>{}, no_one_kernel{});
  } else {
    f(typename Box::block_sort{}, typename Box::merge{}, std::integral_constant<int, Box::ways>{},
      std::integral_constant<int, 0>{}, no_one_kernel{});
  }
}

// The sort with the call's boxes: the one-kernel class below its size
// (true: done in place), else separate kernels (false), into the caller's
// buffers or, with `into`, into a runs_target.
template <class Policy, class K, class V, bool WithValues, bool Indices, class ValsIn, class Comp>
bool sort_with_boxes(const Policy& policy, const device_info& dev, K* keys, index_t n, ValsIn vals_in, V* vals,
                     Comp comp, const char* algorithm, const runs_target<K, V>* into = nullptr) {
  bool in_one_kernel = false;
  with_sort_boxes<Policy, K, V, WithValues, Indices, ValsIn, Comp>(
      dev, algorithm, n, [&](auto bs_box, auto box, auto ways, auto four_way_log2, auto one_kernel) {
        using OneKernel = decltype(one_kernel);
        if constexpr (OneKernel::log2 > 0) {
          if (n < (index_t(1) << OneKernel::log2) &&
              launch_one_kernel_sort<OneKernel, decltype(bs_box), Policy, K, V, WithValues, Indices>(
                  policy, dev, keys, n, vals_in, vals, comp, algorithm)) {
            in_one_kernel = true;
            return;
          }
        }
        launch_merge_sort<decltype(bs_box), decltype(box), decltype(ways)::value, decltype(four_way_log2)::value,
                          Policy, K, V, WithValues, Indices>(policy, dev, keys, n, vals_in, vals, comp, algorithm,
                                                             into);
      });
  return in_one_kernel;
}

template <class Policy, class KeysIt, class ValsIn, class ValsOut, class Comp>
void merge_sort(const Policy& policy, KeysIt keys, index_t n, ValsIn vals_in, ValsOut vals_out, Comp comp) {
  constexpr bool with_values = has_values<ValsOut>;
  constexpr bool indices = !std::is_same_v<ValsIn, ValsOut>;
  const char* algorithm = indices ? "merge_sort_indices" : (with_values ? "merge_sort_by_key" : "merge_sort");
  const device_info& dev = current_device(algorithm, policy.stream());
  auto d_keys = to_device(keys, n, dev, algorithm, with_values ? "keys_first" : "first");
  auto d_vals = to_device(vals_out, n, dev, algorithm, indices ? "indices_first" : "values_first");
  check_disjoint(algorithm,
                 {range_of(with_values ? "keys_first" : "first", d_keys, n),
                  range_of(indices ? "indices_first" : "values_first", d_vals, n)},
                 {});
  static_assert(std::is_pointer_v<decltype(d_keys)>,
                "libmerge::merge_sort (CUDA backend): keys must be contiguous device memory (a raw pointer, "
                "thrust::device_ptr or a thrust::device_vector iterator)");
  static_assert(!with_values || std::is_pointer_v<decltype(d_vals)>,
                "libmerge::merge_sort (CUDA backend): values and indices must be contiguous device memory (a raw "
                "pointer, thrust::device_ptr or a thrust::device_vector iterator)");
  using K = std::remove_pointer_t<decltype(d_keys)>;
  using V = std::conditional_t<with_values, std::remove_pointer_t<decltype(d_vals)>, char>;
  static_assert(!std::is_const_v<K> && !std::is_const_v<V>, "libmerge::merge_sort: the ranges must be writable");
  static_assert(std::is_trivially_copyable_v<K> && std::is_default_constructible_v<K>,
                "libmerge (CUDA backend): keys must be trivially copyable and default-constructible");
  static_assert(std::is_trivially_copyable_v<V> && std::is_default_constructible_v<V>,
                "libmerge (CUDA backend): values must be trivially copyable and default-constructible");
  V* vals = nullptr;
  if constexpr (with_values) vals = d_vals;
  // Values read by the block sort: the caller's (by key) or positions (indices).
  auto d_vals_in = [&] {
    if constexpr (indices) return vals_in;
    else return vals;
  }();
  using ValsInD = decltype(d_vals_in);
  constexpr std::size_t bytes = sizeof(K) + (with_values ? sizeof(V) : 0);
  if constexpr (bytes > max_element_bytes) {
    throw_element_too_large(algorithm, bytes);
  } else {
    sort_with_boxes<Policy, K, V, with_values, indices, ValsInD>(policy, dev, d_keys, n, d_vals_in, vals, comp,
                                                                 algorithm);
  }
}

// ---------------------------------------------------------------------------
// 6. For the sort across GPUs (backends/nccl/merge_sort.cuh): a rank's local
// sort into a buffer of its own, and the merge of the pieces it receives.

template <int = 0>
__global__ void store_width_kernel(long long* width, long long n) {
  *width = n;
}

// Sorts keys[0, n) (and vals) into into.keys (into.vals), the caller's
// buffers left as scratch: as one sorted run, or two (runs_target). The
// kernels are the single-GPU sort's (the same instantiations), so one run is
// exactly what lm::merge_sort makes of the shard. A size of the one-kernel
// class sorts in place and is copied: one run.
template <class Policy, class K, class V, bool WithValues, class Comp>
void sort_to_runs(const Policy& policy, K* keys, V* vals, index_t n, const runs_target<K, V>& into, Comp comp,
                  const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  const device_info& dev = current_device(algorithm, stream);
  if (n == 0) {
    launch_with(nullptr, store_width_kernel<>, 1, 1, 0, stream, algorithm, "launch of store_width_kernel", into.width,
                0LL);
    return;
  }
  constexpr std::size_t bytes = sizeof(K) + (WithValues ? sizeof(V) : 0);
  if constexpr (bytes > max_element_bytes) {
    throw_element_too_large(algorithm, bytes);  // as merge_sort: no box holds such elements
  } else if (sort_with_boxes<Policy, K, V, WithValues, false>(policy, dev, keys, n, vals, vals, comp, algorithm,
                                                              &into)) {
    check_cuda(cudaMemcpyAsync(into.keys, keys, sizeof(K) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice,
                               stream),
               algorithm, "cudaMemcpyAsync (the sorted shard)");
    if constexpr (WithValues) {
      check_cuda(cudaMemcpyAsync(into.vals, vals, sizeof(V) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice,
                                 stream),
                 algorithm, "cudaMemcpyAsync (the sorted shard)");
    }
    launch_with(nullptr, store_width_kernel<>, 1, 1, 0, stream, algorithm, "launch of store_width_kernel",
                into.width, static_cast<long long>(n));
  }
}

// Whether merge_four can merge (K, V) on this device: the tuning gives its
// sort 4-way passes (not so for keys of 8 bytes or more without values).
template <class Policy, class K, class V, bool WithValues, class Comp>
bool four_way_available(const device_info& dev, index_t n, const char* algorithm) {
  if constexpr (sizeof(K) + (WithValues ? sizeof(V) : 0) > max_element_bytes) return false;
  bool four = false;
  with_sort_boxes<Policy, K, V, WithValues, false, V*, Comp>(
      dev, algorithm, n, [&](auto, auto, auto ways, auto, auto) { four = decltype(ways)::value == 4; });
  return four;
}

// Up to four sorted pieces in one buffer: piece k is keys[at[k], at[k] +
// len[k]) and its values vals[at[k], ...) (the same offsets in both arrays).
template <class K>
struct four_pieces {
  const K* keys;
  index_t at[4];
  index_t len[4];
};

// The halves of merge_four's merge: pieces 0 and 1, pieces 2 and 3.
template <class K>
__device__ __forceinline__ run_half<4, K> piece_half(const four_pieces<K>& p, int h) {
  return {p.keys + p.at[2 * h], p.len[2 * h], p.keys + p.at[2 * h + 1], p.len[2 * h + 1]};
}

// merge_four's pair samples, as pair_sample_kernel's for a 4-way pass: for
// each half h and j < stride, the half's inner split at rank j * nv (clamped
// to its size) at samples[h * stride + j], and its elements of ranks j * nv
// and j * nv - 1 at sample_keys[2 (h * stride + j)] and [.. + 1]. One 2-way
// merge-path search a thread. With them the partition's 4-way search starts
// inside one tile's worth of each piece: without, each tile's search read
// about 400 scattered sectors, and the merge of 2^29 int32 keys in four
// pieces took 4.1 ms against 1.6 for lm::merge of two (2 H100s).
template <class K, class Comp>
__global__ void __launch_bounds__(sample_threads)
    pieces_sample_kernel(four_pieces<K> p, index_t nv, index_t stride, index_t* samples, K* sample_keys, Comp comp) {
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  const index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= 2 * stride) return;
  const run_half<4, K> half = piece_half(p, static_cast<int>(i / stride));
  const index_t size = half.size();
  const index_t rank = (i % stride) * nv < size ? (i % stride) * nv : size;
  sample_half(half, rank, samples + i, sample_keys + 2 * i, comp);
}

// merge_four's partition, as pass_partition_kernel's: a thread a tile finds
// where its tile starts in the pieces (halves_split over the pair samples,
// stable: ties in piece order), and each tile ends where the next starts.
// Thread 0 also records the pass for pass_kernel (one pass: data in buffer
// 0, work to do).
template <class K, class Comp>
__global__ void __launch_bounds__(partition_tiles + 1)
    pieces_partition_kernel(four_pieces<K> p, index_t nv, int num_tiles, index_t stride, const index_t* samples,
                            const K* sample_keys, sort_flags flags, tile_desc<4>* descs, Comp comp) {
  __shared__ run_split<4> starts[partition_tiles + 1];
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  const index_t tile = static_cast<index_t>(blockIdx.x) * partition_tiles + threadIdx.x;
  const index_t size = p.len[0] + p.len[1] + p.len[2] + p.len[3];
  if (tile == 0) {
    flags.source(0) = 0;
    flags.has_work(0) = 1;
    flags.shapes[0] = pass_shape{size, num_tiles, num_tiles};
  }
  const bool mine = tile < num_tiles;
  if (mine) {
    const half_samples<K> hs{{samples, samples + stride}, {sample_keys, sample_keys + 2 * stride}, nv};
    starts[threadIdx.x] = halves_split(piece_half(p, 0), piece_half(p, 1), tile * nv, comp, hs);
  }
  __syncthreads();
  if (!mine || threadIdx.x == partition_tiles) return;
  const index_t d0 = tile * nv;
  const index_t d1 = d0 + nv < size ? d0 + nv : size;
  index_t start[4], end[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    start[k] = starts[threadIdx.x].s[k];
    end[k] = d1 == size ? p.len[k] : starts[threadIdx.x + 1].s[k];
  }
  clamp_pieces(p.len, start, end, d1 - d0);
  tile_desc<4> d;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    d.at[k] = p.at[k] + start[k];
    d.size[k] = static_cast<std::uint16_t>(end[k] - start[k]);
  }
  d.out = d0;
  descs[tile] = d;
}

// Merges the four pieces (four_pieces; empty ones allowed) into out_keys
// (out_vals), stable in piece order, with the sort's 4-way pass kernel: the
// receiving rank's one merge of the sort across GPUs, in place of a tree of
// 2-way merges (two levels for four pieces).
template <class Policy, class K, class V, bool WithValues, class Comp>
void merge_four(const Policy& policy, const K* keys, const V* vals, const index_t (&at)[4], const index_t (&len)[4],
                K* out_keys, V* out_vals, Comp comp, const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  const device_info& dev = current_device(algorithm, stream);
  const index_t n = len[0] + len[1] + len[2] + len[3];
  if (n == 0) return;
  if constexpr (sizeof(K) + (WithValues ? sizeof(V) : 0) > max_element_bytes) {
    throw_element_too_large(algorithm, sizeof(K) + (WithValues ? sizeof(V) : 0));
  } else {
    with_sort_boxes<Policy, K, V, WithValues, false, V*, Comp>(dev, algorithm, n, [&](auto, auto box, auto ways, auto,
                                                                                     auto) {
      using Box = decltype(box);
      if constexpr (decltype(ways)::value != 4) {
        throw std::logic_error(std::string("libmerge::") + algorithm + ": no 4-way merge for these types");
      } else {
        const index_t tiles = (n + Box::nv - 1) / Box::nv;
        if (tiles > max_grid_ctas / 32) {
          throw std::invalid_argument(std::string("libmerge::") + algorithm + ": too many elements for one rank");
        }
        auto pass4 = pass_kernel<Box, 4, K, V, WithValues, Comp>;
        using layout = merge_layout<K, V, WithValues, Box::nv>;
        prepare_shared_memory(pass4, layout::bytes, dev, Box::nt, Box::vt, algorithm);
        // Pair samples of each half at every multiple of nv up to its size.
        const index_t stride = (std::max(len[0] + len[1], len[2] + len[3]) + Box::nv - 1) / Box::nv + 1;
        const std::size_t flag_bytes = align_up(sort_flags::bytes(1), 256);
        const std::size_t desc_bytes = align_up(sizeof(tile_desc<4>) * static_cast<std::size_t>(tiles), 256);
        const std::size_t sample_bytes = align_up(sizeof(index_t) * 2 * static_cast<std::size_t>(stride), 256);
        const std::size_t sample_key_bytes = align_up(sizeof(K) * 4 * static_cast<std::size_t>(stride), 256);
        temporary_storage<typename Policy::allocator_type> temp(
            policy.allocator(), stream, flag_bytes + desc_bytes + sample_bytes + sample_key_bytes, algorithm);
        unsigned char* t = temp.template as<unsigned char>();
        const sort_flags flags = sort_flags::at(t, 1);
        auto* descs = reinterpret_cast<tile_desc<4>*>(t + flag_bytes);
        auto* samples = reinterpret_cast<index_t*>(t + flag_bytes + desc_bytes);
        auto* sample_keys = reinterpret_cast<K*>(t + flag_bytes + desc_bytes + sample_bytes);
        four_pieces<K> p{keys, {at[0], at[1], at[2], at[3]}, {len[0], len[1], len[2], len[3]}};
        launch(pieces_sample_kernel<K, Comp>, (2 * stride + sample_threads - 1) / sample_threads, sample_threads, 0,
               stream, true, dev, algorithm, "pieces_sample_kernel", p, static_cast<index_t>(Box::nv), stride, samples,
               sample_keys, comp);
        launch(pieces_partition_kernel<K, Comp>, (tiles + partition_tiles - 1) / partition_tiles, partition_tiles + 1,
               0, stream, true, dev, algorithm, "pieces_partition_kernel", p, static_cast<index_t>(Box::nv),
               static_cast<int>(tiles), stride, static_cast<const index_t*>(samples),
               static_cast<const K*>(sample_keys), flags, descs, comp);
        const sort_buffers<K, V> buf{const_cast<K*>(keys), out_keys, const_cast<V*>(vals), out_vals};
        launch(pass4, tiles, Box::nt, layout::bytes, stream, true, dev, algorithm, "pass_kernel", buf, 0, flags,
               static_cast<const tile_desc<4>*>(descs), comp, static_cast<K*>(nullptr));
      }
    });
  }
}

}  // namespace libmerge::detail::cuda_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::merge_sort, backend::cuda> {
  static constexpr bool available = true;

  template <class Policy, class... Args>
  static void run(const Policy& policy, Args... args) {
    cuda_backend::merge_sort(policy, args...);
  }
};

}  // namespace libmerge::detail
