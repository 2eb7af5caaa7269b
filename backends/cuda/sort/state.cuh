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
#include <iterator>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

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

}  // namespace libmerge::detail::cuda_backend
