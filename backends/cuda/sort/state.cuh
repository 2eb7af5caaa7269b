// The merge sort's shared state (backends/cuda/merge_sort.cuh says how the
// stages fit): the shape of a merge pass, the flags the kernels pass on to
// each other on the device, the two buffers, and the run samples.
#pragma once

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
// pass starts; f[2p + 1], whether the pass has any group to merge. The
// permutation guard (below): hashes[0], the input's fingerprint (summed by
// the block sort's tiles), hashes[1 + hash_slots p, ...], pass p's output's
// in hash_slots parts (each warp adds to one: one word would serialize
// hundreds of thousands of atomics a pass). hashes is null without the
// guard (plain sorts, merge_four of the sort across GPUs).
struct sort_flags {
  static constexpr int max_levels = 64;  // passes of any one sort (n < 2^63)
  static constexpr int hash_slots = 16;
  unsigned long long* runs;
  unsigned long long* hashes;
  pass_shape* shapes;
  int* f;
  // The sums come last, so that a sort without the guard neither keeps nor
  // zeroes their 8 KB (zeroed, they cost the one-kernel sorts of 2^16 to
  // 2^22 keys 1% to 4%, H200). guard: whether memory has them (else hashes
  // is null).
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
  // (The sums are read volatile: atomics of other SMs wrote them, which a
  // line already in this SM's L1 would not show.)
  __device__ unsigned long long& input_hash() const { return hashes[0]; }
  __device__ unsigned long long input_print() const { return *static_cast<volatile unsigned long long*>(hashes); }
  __device__ unsigned long long* pass_slots(int pass) const { return hashes + 1 + hash_slots * pass; }
  __device__ unsigned long long pass_print(int pass) const {
    const volatile unsigned long long* slots = pass_slots(pass);
    unsigned long long sum = 0;
    for (int i = 0; i < hash_slots; ++i) sum += slots[i];
    return sum;
  }
  // Did pass `pass` (finished) move the data: it had work, and wrote every
  // element once (the guard's sums agree; for types without the guard both
  // stay 0)? A pass that lost or repeated one is undone: the data is where
  // it read it, which it did not write.
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
// sample check of the comparator can miss what the sort then meets; always
// on, it cost plain sorts 13% to 27% at 2^28 on an H200: see
// docs/cuda-merge-sort.md). Under a comparator that is no strict weak ordering
// the merge-path walks of neighbouring threads (and the splits of
// neighbouring tiles) need not meet, and a merge may then write one element
// twice and another not at all. Checking the walks themselves cost every
// valid sort 8% to 34% (docs/cuda-merge-sort.md); instead each stage sums a
// fingerprint of every element it writes, which any loss or repetition
// changes, and compares it with the input's: the block sort tile by tile
// before it stores (a tile that fails is stored as it was read), a merge
// pass once it has finished (sort_flags::kept, read by the kernels after it;
// a pass that fails is undone: its source buffer, untouched, still holds the
// data, and the passes after it do nothing). A valid comparator moves every
// element exactly once, so the sums agree exactly and the guard never
// fires. An invalid one is caught unless what was lost and what was
// repeated have equal sums: never for one element of up to 4 bytes lost and
// another repeated (distinct words, distinct squares); for larger elements,
// pairs, or several at once, only where the sums happen to agree. The output
// is then a permutation of the input, sorted as far as the last pass that
// kept every element.
//
// The fingerprint of an element of bits w (in 32-bit words): t = the words
// folded by multiply-add (one word: a bijection), t * t in 64 bits: distinct
// words give distinct squares, and a sum of squares is no linear function
// of the keys, whose losses and repeats could cancel (losing 1 and 4 and
// repeating 2 and 3). Only for types whose bits are all value (no padding,
// which copies need not keep): other types have no guard.
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

// An element's fingerprint: key and value each (a value always moves with
// its key, so the pair is known by the sum).
template <class K>
__device__ __forceinline__ unsigned long long key_print(const K& k) {
  return fingerprint<0x2545F491u>(k);
}
template <class V>
__device__ __forceinline__ unsigned long long value_print(const V& v) {
  return fingerprint<0x68E31DA4u>(v);
}

// The permutation guard's running sum of one CTA, in shared memory (so that
// no register holds it across a sort or a merge: cub::BlockReduce of the
// sums, and sums kept in registers, held the 512x33 block sort at 112
// registers instead of 58 and made the one-kernel sort spill; ptxas, sm_90).
// Zeroed by thread 0 (a barrier before the first tally_add), added to by
// every thread (one shared atomic a warp), read after a barrier.
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
// A warp's fingerprints straight into a pass's sum, in one of its slots:
// no shared memory, no barrier (the CTA tally's reset and barrier made the
// 4-way int32 pass kernel spill at its 32 registers).
__device__ __forceinline__ void pass_add(unsigned long long* slots, unsigned long long x) {
  x = warp_sum(x);
  const unsigned warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) atomicAdd(slots + warp % sort_flags::hash_slots, x);
}

// Which buffer holds the data when pass `pass` starts (pass == number of
// passes: at the end). Reads only what kernels before it wrote. first_buffer:
// where the block sort puts unsorted data (bs_nv keys a tile). Kernels of
// many threads take it once a block (block_buffer_before_pass): with the
// permutation guard it reads 17 sums, and every thread's own read of them
// cost the copy back 40 us at 2^28 int32 keys (H200).
__device__ __forceinline__ int buffer_before_pass(const sort_flags& flags, int pass, int first_buffer,
                                                  index_t bs_nv) {
  if (pass == 0) return flags.skips_block_sort(bs_nv) ? 0 : first_buffer;
  return flags.source(pass - 1) ^ static_cast<int>(flags.kept(pass - 1));
}

// buffer_before_pass, read by thread 0 for its block (all threads call it).
__device__ __forceinline__ int block_buffer_before_pass(const sort_flags& flags, int pass, int first_buffer,
                                                        index_t bs_nv) {
  __shared__ int buffer;
  if (threadIdx.x == 0) buffer = buffer_before_pass(flags, pass, first_buffer, bs_nv);
  __syncthreads();
  return buffer;
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

// The host's and the kernels' shared descriptions of the sort's stages
// (plan.cuh plans with them, the stages' kernels read them).

// What the host knows of a pass before anything runs: its run width as a
// multiple (scale) of the first width, which is a block-sort tile (bs_nv)
// unless the input turns out to be sorted runs of more; first_buffer: where
// the block sort puts its output. The kernels work out the pass's shape on the
// device (pass_shape_of); the host launches a grid for the most tiles any
// first width can give (launch_tiles). pair_spacing: a 4-way pass's pair
// samples' spacing, in run samples, when it partitions on them
// (pair_spacing_on_samples below).
struct pass_plan {
  index_t scale;
  int ways;
  index_t bs_nv;
  int first_buffer;
  index_t launch_tiles;
  index_t pair_spacing;
};

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

// Threads a block of the small kernels around the passes: the sample
// kernels (a sample a thread) and the copy back (a grid-stride copy). The
// launches below use the same constants as the kernels' launch bounds.
inline constexpr int sample_threads = 128;
inline constexpr int copy_threads = 256;

// The pair samples' spacing, in run samples, of a pass that partitions on
// them: a tile (nv / sample_every samples), so that a tile's start is a
// sample's rank, or for sorts of at most quarter_spaced_tiles tiles a pass
// a quarter tile (the largest divisor of the tile up to a quarter of it), so
// that the partition's search over the samples leaves its nested searches a
// quarter tile: H200, int32 keys, 0.953x the sort's time at 2^24 and 0.99x
// at 2^26 (partition 28.8 to 25.7 us a pass at 2^24); at 2^28 (22795
// tiles) half-tile samples took 1.008x, their kernel's added time (12-24 to
// 31-37 us a pass) more than the partition's gain. The host works it out
// once (plan_passes), so the kernels do not.
inline constexpr index_t quarter_spaced_tiles = 8192;

inline index_t pair_spacing_on_samples(index_t n, index_t nv) {
  const index_t snv = nv / sample_every;
  if (snv < 4 || (n + nv - 1) / nv > quarter_spaced_tiles) return snv > 1 ? snv : 1;
  for (index_t p = snv / 4; p > 1; --p) {
    if (snv % p == 0) return p;
  }
  return 1;
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

}  // namespace libmerge::detail::cuda_backend
