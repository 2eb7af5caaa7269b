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
#include <type_traits>
#include <vector>

#include "../../../libmerge/detail/checked.hpp"
#include "../../../libmerge/detail/config.hpp"
#include "../../../policies/cuda.hpp"
#include "../cta_merge.cuh"
#include "../memory.cuh"
#include "../runtime.cuh"

namespace libmerge::detail::cuda_backend {

// ---------------------------------------------------------------------------
// A pass merges groups of `ways` runs of `width`: tiles_per_group tiles of nv a group, a CTA each.
// 32-bit counts (the host refuses 2^31 / 32 tiles): 32-bit divisions keep the pass kernel in its registers.
struct pass_shape {
  index_t width;
  int tiles_per_group;
  int num_tiles;
};

// Device-side bookkeeping of one sort, zeroed first. runs: gcd of the positions i + 1 where keys[i + 1] <
// keys[i] (sortedness_kernel; 0: sorted; W: sorted runs of W). Pass p: shapes[p] (from its partition kernel);
// f[2p], the buffer it reads (0: the caller's, 1: scratch or sort_into_runs' target); f[2p + 1], whether it has
// work. Guard (below): hashes[0], the input's fingerprint, then hash_slots words a pass (one word would
// serialize the atomics); null without the guard (plain sorts, the k-way merge).
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
  // Did finished pass `pass` move the data (work, and sums that agree; both 0 without the guard)?
  // Otherwise it is undone: the data stays in the buffer it read.
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
// The permutation guard, checked calls only: under a comparator that is no strict weak ordering a merge may
// write one element twice and lose another, so each stage sums fingerprints of what it writes against the
// input's; a failing block-sort tile is stored as read, a failing pass undone (sort_flags::kept); a valid
// comparator never fails. One element of up to 4 bytes lost, another repeated: always caught
// (docs/cuda-merge-sort.md, "the guard").
// Off for plain calls: it cost them 13% to 27% at 2^28 (H200).
// Fingerprint: words folded by multiply-add, then t * t in 64 bits (a sum of keys could cancel); only for
// types whose bits are all value (no padding, which copies need not keep).
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

// The guard's CTA sum, in shared memory: in registers (or cub::BlockReduce) the 512x33 block sort took 112
// registers, not 58, and the one-kernel sort spilled (ptxas, sm_90). Thread 0 zeroes it; barriers around.
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

// Which buffer holds the data when pass `pass` starts (passes: at the end); first_buffer: the block sort's.
// Once a block (block_buffer_before_pass): a thread each reading the 17 sums cost 40 us (2^28 int32, H200).
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
// Run samples: samples[p / 32] = data[p], written by the kernel that last wrote (sorted runs: read) the data
// before a 4-way pass; its partition searches them, then a 32-key window a run (10 sectors a tile, not 180).
// 32: one sample in each store of one lane (store_warp_striped_sampled).
inline constexpr int sample_every = 32;

// The run samples of len keys (the last one's run may be shorter than sample_every).
LIBMERGE_HOST_DEVICE inline index_t run_samples_of(index_t len) { return (len + sample_every - 1) / sample_every; }

// The sort's, as a sample rate whose spacing is a constant (sampled_cut).
struct sort_sample_rate {
  static constexpr LIBMERGE_HOST_DEVICE int every() { return sample_every; }
};

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

// A pass as the host plans it (plan_passes): width = scale x the first width (bs_nv, or longer sorted runs:
// pass_shape_of); first_buffer: where the block sort writes; launch_tiles: the most any first width gives;
// pair_spacing: in run samples (pair_spacing_on_samples).
struct pass_plan {
  index_t scale;
  int ways;
  index_t bs_nv;
  int first_buffer;
  index_t launch_tiles;
  index_t pair_spacing;
};

// Threads a block of the copy back (launches and launch bounds).
inline constexpr int copy_threads = 256;

// A pass's geometry: its shape, a group's runs, its pair samples' grid.
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

// A 4-way pass partitions on run samples (every `every` keys) when its runs and tiles start at multiples of
// `every` (other sorted-run widths search the runs) and its tiles hold 8 samples or more.
LIBMERGE_HOST_DEVICE inline bool partitions_on_samples(index_t width, index_t nv, index_t every = sample_every) {
  return width % every == 0 && nv % every == 0 && nv >= 8 * every;
}

// A 4-way pass's pair samples: samples[(group * 2 + pair) * stride + j], the split of pair (0 1 or 2 3) at
// rank j * p of its merge (clamped), stride = ceil(2 * width / p) + 1, and its keys at ranks j * p and
// j * p - 1 (sample_keys[2i], [2i + 1]), so the partition's coarse search reads these small arrays alone.
LIBMERGE_HOST_DEVICE inline index_t sample_stride(index_t width, index_t p) { return (2 * width + p - 1) / p + 1; }

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

// The pair samples' spacing in run samples (host, plan_passes): a tile, or up to quarter_spaced_tiles tiles
// a quarter tile (its largest divisor up to a quarter), leaving the nested searches a quarter tile.
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

// The one-kernel class: below 2^Log2 one_kernel_sort_kernel with Box at Ctas CTAs an SM, the block sort a
// kernel of its own from 2^SeparateLog2. Log2 = 0: none; SeparateLog2 = 0: never separate.
template <class Box, int Ctas, int Log2, int SeparateLog2>
struct one_kernel_class {
  using box = Box;
  static constexpr int ctas = Ctas;
  static constexpr int log2 = Log2;
  static constexpr int separate_log2 = SeparateLog2;
};

using no_one_kernel = one_kernel_class<launch_box<32, 1>, 1, 0, 0>;

// A sort line's boxes (merge_sort_table::boxes), by name: the block sort's; the passes', their way count and
// the log2 sizes from which they merge 4 ways (any comparator; numbers in their natural order); mid-sized and
// large sorts' pass boxes from their log2 sizes (0: never); the one-kernel class; the k-way merge's pass box
// (void: the sort's pass box for the size).
template <class BlockSort, class Pass, int Ways, int FourWayLog2, int NumbersFourWayLog2, class MidPass, int MidLog2,
          class LargePass, int LargeLog2, class OneKernel, class KwayPass>
struct sort_boxes {
  using block_sort = BlockSort;
  using pass = Pass;
  static constexpr int ways = Ways;
  static constexpr int four_way_log2 = FourWayLog2;
  static constexpr int numbers_four_way_log2 = NumbersFourWayLog2;
  using mid_pass = MidPass;
  static constexpr int mid_log2 = MidLog2;
  using large_pass = LargePass;
  static constexpr int large_log2 = LargeLog2;
  using one_kernel = OneKernel;
  using kway_pass = KwayPass;
};

// The merge sort's tuning and plan: boxes per key and value type, the passes
// of a sort of n keys, and where a sort for the sort across GPUs leaves its data.

// Boxes for keys K and values V (void: keys only): large elements get fewer values a thread (scale_vt), and
// fewer threads where even that would not fit tuning::tile_smem_portable (96 KB: sm_86, sm_89 and sm_120 give
// a block 99 KB); the block sort keeps a power of two (cub::BlockMergeSort), the passes a multiple of 32.
template <class K, class V>
struct merge_sort_table {
  static constexpr const auto& lines = tuning::merge_sort;
  static constexpr bool pairs = !std::is_void_v<V>;
  static constexpr std::size_t element_bytes = sizeof(K) + (pairs ? sizeof(std::conditional_t<pairs, V, char>) : 0);

  // Keys of 8 bytes or more without values.
  static constexpr bool wide = !pairs && sizeof(K) >= 8;

  static constexpr int bs_vt(const tuning::merge_sort_line& l) {
    if (wide) return tuning::scale_vt(l.bs_vt_wide, 8, sizeof(K));
    return pairs ? tuning::scale_vt(l.bs_vt_pairs, 8, element_bytes) : tuning::scale_vt(l.bs_vt_keys, 4, sizeof(K));
  }
  static constexpr int vt(const tuning::merge_sort_line& l) {
    if (wide) return tuning::scale_vt(l.vt_wide, 8, sizeof(K));
    return pairs ? tuning::scale_vt(l.vt_pairs, 8, element_bytes) : tuning::scale_vt(l.vt_keys, 4, sizeof(K));
  }
  // Large or mid-sized sorts' passes (wide keys have none and keep vt).
  static constexpr int pass_vt(const tuning::merge_sort_line& l, int vt_keys, int vt_pairs) {
    if (wide) return vt(l);
    return pairs ? tuning::scale_vt(vt_pairs, 8, element_bytes) : tuning::scale_vt(vt_keys, 4, sizeof(K));
  }
  static constexpr int shrink(int nt, int vt, std::size_t bytes_per_element, bool power_of_two) {
    return tuning::fit_threads(nt, vt, bytes_per_element, tuning::tile_smem_portable, power_of_two);
  }
  template <std::size_t I>
  static constexpr auto boxes() {
    constexpr auto l = lines[I];
    constexpr int bs_vt_ = bs_vt(l), vt_ = vt(l), large_vt_ = pass_vt(l, l.large_vt_keys, l.large_vt_pairs),
                  mid_vt_ = pass_vt(l, l.mid_vt_keys, l.mid_vt_pairs),
                  kway_vt_ = tuning::scale_vt(l.kway_vt_pairs, 8, element_bytes);
    constexpr std::size_t bs_bytes = sizeof(K) > element_bytes - sizeof(K) ? sizeof(K) : element_bytes - sizeof(K);
    constexpr std::size_t pass_bytes = element_bytes + (pairs ? sizeof(tile_offset) : 0);
    constexpr int bs_nt = wide ? l.wide_nt : (pairs ? l.bs_nt_pairs : l.bs_nt_keys);
    constexpr int nt = wide ? l.wide_nt : l.nt;
    constexpr int large_log2 = wide ? 0 : (pairs ? l.large_log2_pairs : l.large_log2_keys);
    constexpr int mid_log2 = wide ? 0 : (pairs ? l.mid_log2_pairs : l.mid_log2_keys);
    constexpr bool kway = pairs && l.kway_nt_pairs > 0;
    using kway_box = launch_box<shrink(kway ? l.kway_nt_pairs : l.nt, kway_vt_, pass_bytes, false), kway_vt_>;
    // One-kernel class: elements of up to 8 bytes, and keys of up to 16 whose
    // vt scales from the 8-byte keys' (16 bytes: 256x5; from 4-byte keys, 256x3).
    constexpr int small_vt = pairs  ? tuning::scale_vt(l.small_vt_pairs, 8, element_bytes)
                             : wide ? tuning::scale_vt(tuning::scale_vt(l.small_vt_keys, 4, 8), 8, sizeof(K))
                                    : tuning::scale_vt(l.small_vt_keys, 4, sizeof(K));
    constexpr int small_log2 = element_bytes <= 8 ? (pairs ? l.small_log2_pairs : l.small_log2_keys)
                               : (wide && sizeof(K) <= 16 ? l.small_log2_wide : 0);
    return sort_boxes<launch_box<shrink(bs_nt, bs_vt_, bs_bytes, true), bs_vt_>,
                      launch_box<shrink(nt, vt_, pass_bytes, false), vt_>, wide ? 2 : l.ways,
                      pairs ? l.four_way_log2_pairs : l.four_way_log2,
                      pairs ? l.numbers_four_way_log2_pairs : l.numbers_four_way_log2,
                      launch_box<shrink(l.mid_nt, mid_vt_, pass_bytes, false), mid_vt_>, mid_log2,
                      launch_box<shrink(l.large_nt, large_vt_, pass_bytes, false), large_vt_>, large_log2,
                      one_kernel_class<launch_box<l.small_nt, small_vt>,
                                       pairs ? l.small_ctas_pairs : l.small_ctas_keys, small_log2,
                                       pairs ? 0 : l.small_separate_log2_keys>,
                      std::conditional_t<kway, kway_box, void>>{};
  }
};

// The passes for `levels` 2-way merge levels above bs_nv-key tiles: 2-way, or 4-way plus for an odd count
// one 2-way pass last, as a 2-way pass writes no run samples for the 4-way ones.
// H200, 2^25 int32: a 2-way pass first took 1.55 ms (docs/cuda-merge-sort.md)
// Grids fit a first width of bs_nv (the most tiles). first_buffer by the pass count's parity, so a sort
// whose every pass has work ends in final_buffer (0: the caller's) without a copy back.
inline std::vector<pass_plan> plan_passes(index_t n, index_t bs_nv, index_t nv, int max_ways, int levels,
                                          int final_buffer = 0) {
  std::vector<pass_plan> passes;
  index_t width = bs_nv;
  for (int left = levels; left > 0;) {
    const int ways = max_ways == 2 || left == 1 ? 2 : 4;
    const index_t groups = (n + width * ways - 1) / (width * ways);
    passes.push_back({width / bs_nv, ways, bs_nv, 0, (n + nv - 1) / nv + groups, pair_spacing_on_samples(n, nv)});
    width *= ways;
    left -= ways == 2 ? 1 : 2;
  }
  for (auto& p : passes) p.first_buffer = static_cast<int>((passes.size() + final_buffer) % 2);
  return passes;
}

// Where sort_into_runs (shard_sort.cuh) leaves its data: in keys/vals, the caller's buffers as the passes'
// other buffer; with two_runs as sorted runs [0, W) and [W, n) where leaving out the last level saves a pass
// (the receiving rank's 4-way merge makes it anyway). W goes to *width on the device (when not null).
template <class K, class V>
struct runs_target {
  K* keys = nullptr;
  V* vals = nullptr;
  bool two_runs = false;
  long long* width = nullptr;
};

}  // namespace libmerge::detail::cuda_backend
