// The merge sort's shared state (stages: backends/cuda/merge_sort.cuh): pass
// shapes, the flags the kernels pass on, the two buffers, the run samples.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <cub/block/block_load.cuh>
#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_store.cuh>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../../../libmerge/detail/checked.hpp"
#include "../../../libmerge/detail/config.hpp"
#include "../../../libmerge/detail/counting.hpp"
#include "../../../libmerge/detail/dispatch.hpp"
#include "../../../policies/cuda.hpp"
#include "../cta_merge.cuh"
#include "../device.cuh"
#include "../error.hpp"
#include "../iterators.cuh"
#include "../launch.cuh"
#include "../memory.cuh"
#include "../merge.cuh"
#include "../partition.cuh"

namespace libmerge::detail::cuda_backend {

// ---------------------------------------------------------------------------
// A pass merges groups of `ways` runs of `width` keys; a group's output is
// tiles_per_group tiles of nv (the last group may have fewer), a CTA each.
// 32-bit counts: the host refuses 2^31 / 32 tiles or more, and 32-bit
// divisions keep the pass kernel inside its registers.
struct pass_shape {
  index_t width;
  int tiles_per_group;
  int num_tiles;
};

// Device-side bookkeeping of one sort, zeroed first. runs: gcd of the
// positions i + 1 where keys[i + 1] < keys[i] (sortedness_kernel; 0: sorted;
// W: sorted runs [kW, kW + W)). Pass p: shapes[p] (its partition kernel
// writes it: it depends on runs); f[2p], the buffer holding the data when it
// starts (0: the caller's, 1: scratch or sort_to_runs' target); f[2p + 1],
// whether it has a group to merge. Permutation guard (below): hashes[0], the
// input's fingerprint; hashes[1 + hash_slots p, ...], pass p's output's in
// hash_slots parts (one word would serialize hundreds of thousands of
// atomics a pass). hashes is null without the guard (plain sorts, merge_four).
struct sort_flags {
  static constexpr int max_levels = 64;  // passes of any one sort (n < 2^63)
  static constexpr int hash_slots = 16;
  unsigned long long* runs;
  unsigned long long* hashes;
  pass_shape* shapes;
  int* f;
  // The sums come last, so a sort without the guard neither keeps nor zeroes
  // their 8 KB (small sorts 1% to 4%, H200). guard: whether memory has them.
  static std::size_t bytes(int passes, bool guard) {
    const std::size_t head = align_up(8 + (sizeof(pass_shape) + 2 * sizeof(int)) * static_cast<std::size_t>(passes), 8);
    return head + (guard ? 8 * (1 + hash_slots * max_levels) : 0);
  }
  static sort_flags at(void* memory, int passes, bool guard) {
    auto* m = static_cast<unsigned char*>(memory);
    unsigned char* shapes = m + 8;
    return {reinterpret_cast<unsigned long long*>(m),
            guard ? reinterpret_cast<unsigned long long*>(m + bytes(passes, false)) : nullptr,
            reinterpret_cast<pass_shape*>(shapes),
            reinterpret_cast<int*>(shapes + sizeof(pass_shape) * static_cast<std::size_t>(passes))};
  }
  __device__ bool unsorted() const { return *runs != 0; }
  // Runs of at least a block-sort tile need no block sort; passes start at their width.
  __device__ bool skips_block_sort(index_t bs_nv) const {
    return *runs == 0 || *runs >= static_cast<unsigned long long>(bs_nv);
  }
  __device__ index_t first_width(index_t bs_nv) const {
    return *runs >= static_cast<unsigned long long>(bs_nv) ? static_cast<index_t>(*runs) : bs_nv;
  }
  __device__ int& source(int pass) const { return f[2 * pass]; }
  __device__ int& has_work(int pass) const { return f[2 * pass + 1]; }
  // Read volatile: other SMs' atomics wrote the sums, which a line in this SM's L1 would hide.
  __device__ unsigned long long& input_hash() const { return hashes[0]; }
  __device__ unsigned long long input_print() const { return *static_cast<volatile unsigned long long*>(hashes); }
  __device__ unsigned long long* pass_slots(int pass) const { return hashes + 1 + hash_slots * pass; }
  __device__ unsigned long long pass_print(int pass) const {
    const volatile unsigned long long* slots = pass_slots(pass);
    unsigned long long sum = 0;
    for (int i = 0; i < hash_slots; ++i) sum += slots[i];
    return sum;
  }
  // Did finished pass `pass` move the data: it had work and wrote every
  // element once (the sums agree; both stay 0 without the guard)? Otherwise it
  // is undone: the data stays in the buffer it read, which it did not write.
  __device__ bool kept(int pass) const {
    return has_work(pass) && (hashes == nullptr || pass_print(pass) == input_print());
  }
  // Was a pass before `pass` undone? Then no pass after it merges.
  __device__ bool undone_before(int pass) const {
    for (int q = 0; q < pass; ++q) {
      if (has_work(q) && !kept(q)) return true;
    }
    return false;
  }
};

// ---------------------------------------------------------------------------
// The permutation guard, in checked calls (lm::cuda::par.checked(), whose
// sample check can miss a bad comparator). Under a comparator that is no
// strict weak ordering neighbouring merge-path walks (and tile splits) need
// not meet, and a merge may write one element twice and lose another. Each
// stage sums a fingerprint of what it writes and compares it with the
// input's: the block sort tile by tile before it stores (a failing tile is
// stored as read), a pass once finished (sort_flags::kept; a failing pass is
// undone: its untouched source holds the data, later passes do nothing). A
// valid comparator moves every element once: the guard never fires. One
// element of up to 4 bytes lost and another repeated is always caught;
// larger or several, unless the sums happen to agree. The output is then a
// permutation, sorted up to the last pass that kept every element. Not on
// for plain calls: it cost them 13% to 27% at 2^28 (H200), checking the
// walks instead 8% to 34% (docs/cuda-merge-sort.md).
//
// Fingerprint: the 32-bit words folded by multiply-add (one word: a
// bijection), then t * t in 64 bits: distinct words, distinct squares, and
// unlike a sum of keys losses and repeats cannot cancel (lose 1 and 4, repeat
// 2 and 3). Only for types whose bits are all value (no padding, which
// copies need not keep).
template <class T>
inline constexpr bool fingerprinted_v = std::has_unique_object_representations_v<T> || std::is_floating_point_v<T>;

template <class K, class V, bool WithValues>
inline constexpr bool guarded_v = fingerprinted_v<K> && (!WithValues || fingerprinted_v<V>);

template <unsigned Seed, class T>
__device__ __forceinline__ unsigned long long fingerprint(const T& x) {
  constexpr int words = static_cast<int>((sizeof(T) + 3) / 4);
  unsigned w[words];
  w[words - 1] = 0;
  memcpy(w, &x, sizeof(T));
  unsigned t = Seed;
#pragma unroll 8
  for (int i = 0; i < words; ++i) t = (t ^ w[i]) * 0x9E3779B1u + 0x7F4A7C15u;
  return static_cast<unsigned long long>(t) * t;
}

// Key and value are fingerprinted apart: a value always moves with its key.
template <class K>
__device__ __forceinline__ unsigned long long key_print(const K& k) {
  return fingerprint<0x2545F491u>(k);
}
template <class V>
__device__ __forceinline__ unsigned long long value_print(const V& v) {
  return fingerprint<0x68E31DA4u>(v);
}

// The guard's running sum of one CTA, in shared memory: in registers (or by
// cub::BlockReduce) it took the 512x33 block sort from 58 to 112 registers and
// made the one-kernel sort spill (ptxas, sm_90). Thread 0 zeroes it (a
// barrier before the first tally_add); read after a barrier.
__device__ __forceinline__ unsigned long long& cta_tally() {
  __shared__ unsigned long long tally;
  return tally;
}
__device__ __forceinline__ unsigned long long warp_sum(unsigned long long x) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ __forceinline__ void tally_add(unsigned long long x) {
  x = warp_sum(x);
  if (threadIdx.x % 32 == 0) atomicAdd(&cta_tally(), x);
}
// A warp's fingerprints straight into one of a pass's slots: the CTA tally's
// reset and barrier made the 4-way int32 pass kernel spill at 32 registers.
__device__ __forceinline__ void pass_add(unsigned long long* slots, unsigned long long x) {
  x = warp_sum(x);
  const unsigned warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) atomicAdd(slots + warp % sort_flags::hash_slots, x);
}

// Which buffer holds the data when pass `pass` starts (pass == passes: at the
// end), from what earlier kernels wrote; first_buffer: where the block sort
// writes. Take it once a block (block_buffer_before_pass): under the guard it
// reads 17 sums, a read a thread cost the copy back 40 us (2^28 int32, H200).
__device__ __forceinline__ int buffer_before_pass(const sort_flags& flags, int pass, int first_buffer,
                                                  index_t bs_nv) {
  if (pass == 0) return flags.skips_block_sort(bs_nv) ? 0 : first_buffer;
  return flags.source(pass - 1) ^ static_cast<int>(flags.kept(pass - 1));
}

// All threads call it.
__device__ __forceinline__ int block_buffer_before_pass(const sort_flags& flags, int pass, int first_buffer,
                                                        index_t bs_nv) {
  __shared__ int buffer;
  if (threadIdx.x == 0) buffer = buffer_before_pass(flags, pass, first_buffer, bs_nv);
  __syncthreads();
  return buffer;
}

// The two buffers (V = char: no values), picked by a select: a parameter
// array indexed at run time would be copied to local memory.
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
// Run samples: samples[p / sample_every] = data[p] for p % sample_every == 0,
// written by the kernel that last wrote (sorted runs: read) the data before a
// 4-way pass, whose partition searches them (in L2), then each run in a
// 32-key window: about 10 scattered sectors a tile instead of 180. 32: one
// sample in each store of one lane (store_warp_striped_sampled).
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

// What the host (plan.cuh) knows of a pass before anything runs: its width as
// a multiple (scale) of the first, a block-sort tile (bs_nv) unless the input
// is sorted runs of more (the kernels work out the shape: pass_shape_of);
// first_buffer: where the block sort writes; launch_tiles: the most tiles any
// first width gives; pair_spacing: in run samples (pair_spacing_on_samples).
struct pass_plan {
  index_t scale;
  int ways;
  index_t bs_nv;
  int first_buffer;
  index_t launch_tiles;
  index_t pair_spacing;
};

// A pass tile, worked out by its partition kernel so that the pass kernel's
// threads do none of the 64-bit group geometry (a fifth of a 4-way pass
// kernel's instructions): piece k is [at[k], at[k] + size[k]) of the source,
// already clamped (clamp_pieces); the output starts at out.
template <int Ways>
struct alignas(16) tile_desc {
  index_t at[Ways];
  index_t out;
  std::uint16_t size[Ways];  // a tile holds at most 65535 elements (launch_box)
};

// Threads a block of the sample kernels and the copy back; launches and
// launch bounds share them.
inline constexpr int sample_threads = 128;
inline constexpr int copy_threads = 256;

// The pair samples' spacing, in run samples, of a pass that partitions on
// them: a tile (a tile's start is then a sample's rank), or up to
// quarter_spaced_tiles tiles a pass a quarter tile (the largest divisor of
// the tile up to a quarter), which leaves the nested searches a quarter tile.
// Worked out once on the host (plan_passes).
// H200 int32: 0.953x the sort's time at 2^24; denser at 2^28 lost (docs/cuda-merge-sort.md)
inline constexpr index_t quarter_spaced_tiles = 8192;

inline index_t pair_spacing_on_samples(index_t n, index_t nv) {
  const index_t snv = nv / sample_every;
  if (snv < 4 || (n + nv - 1) / nv > quarter_spaced_tiles) return snv > 1 ? snv : 1;
  for (index_t p = snv / 4; p > 1; --p) {
    if (snv % p == 0) return p;
  }
  return 1;
}

// The one-kernel size class: below 2^Log2 elements one_kernel_sort_kernel with
// Box, registers sized for Ctas CTAs an SM, the block sort a kernel of its own
// from 2^SeparateLog2 on. Log2 = 0: none; SeparateLog2 = 0: never separate.
template <class Box, int Ctas, int Log2, int SeparateLog2>
struct one_kernel_class {
  using box = Box;
  static constexpr int ctas = Ctas;
  static constexpr int log2 = Log2;
  static constexpr int separate_log2 = SeparateLog2;
};

using no_one_kernel = one_kernel_class<launch_box<32, 1>, 1, 0, 0>;

}  // namespace libmerge::detail::cuda_backend
