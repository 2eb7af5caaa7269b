// lm::cuda::par: run on the current CUDA device, on a stream, with the CUDA
// backend (Thrust's CUDA policies too: policies/thrust.hpp). A policy is plain
// data: this file includes nothing from backends/.
//
//   lm::cuda::par                          default stream, tuned launch boxes,
//                                          stream-ordered temporary storage
//   lm::cuda::par.on(stream)               another stream
//   lm::cuda::par.with(lm::launch_box<64, 3>{})   one call's own launch box
//   lm::cuda::par.with(box1, box2)         merge_sort: block-sort box, merge box
//   lm::cuda::par.with_allocator(alloc)    temporary storage from alloc
//
// An allocator is any copyable object with
//   void* allocate(std::size_t bytes, cudaStream_t stream);
//   void deallocate(void* p, std::size_t bytes, cudaStream_t stream) noexcept;
// Memory it returns must be usable by work on `stream` in stream order.
//
// LaunchBox: CUDA launch shapes as data. A box is (nt threads per block, vt
// values per thread); nv = nt * vt elements make one tile. Each algorithm keeps
// a table with one line per GPU architecture; the CUDA backend picks the line of
// the architecture the running kernels were compiled for, and a caller can pass
// its own box for one call: lm::cuda::par.with(lm::launch_box<64, 3>{}).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <iterator>
#include <type_traits>

#include "../libmerge/detail/checked.hpp"
#include "../libmerge/detail/config.hpp"

namespace libmerge {

template <int NT, int VT>
struct launch_box {
  static_assert(NT >= 32 && NT <= 1024 && NT % 32 == 0,
                "libmerge::launch_box: threads per block (nt) must be a multiple of 32 in [32, 1024]");
  static_assert(VT >= 1 && VT <= 64, "libmerge::launch_box: values per thread (vt) must be in [1, 64]");
  // Tiles address their elements with 16-bit offsets in shared memory.
  static_assert(NT * VT <= 65535, "libmerge::launch_box: a tile (nt * vt) must hold at most 65535 elements");
  static constexpr int nt = NT;
  static constexpr int vt = VT;
  static constexpr int nv = NT * VT;
};

// Marker for "use the tuned table": the default of every CUDA policy.
struct tuned_launch_box {};

// Two boxes for one call: merge_sort's block-sort stage takes the first, its
// merge passes (and every other algorithm) the second:
// lm::cuda::par.with(lm::launch_box<256, 15>{}, lm::launch_box<512, 11>{}).
// Ways: how many sorted runs a merge-sort pass merges at once (2 or 4).
template <class BlockSortBox, class MergeBox, int Ways = 2>
struct launch_boxes {
  static_assert(Ways == 2 || Ways == 4, "libmerge::launch_boxes: a merge pass merges 2 or 4 runs");
  using block_sort = BlockSortBox;
  using merge = MergeBox;
  static constexpr int ways = Ways;
};

namespace tuning {

// Values per thread for element_bytes from a line tuned for base_bytes: fewer
// for larger elements so a tile's shared memory and registers stay about the
// same; odd counts keep the shared-memory exchanges free of bank conflicts.
constexpr int scale_vt(int base_vt, std::size_t base_bytes, std::size_t element_bytes) {
  const std::size_t bytes = element_bytes < base_bytes ? base_bytes : element_bytes;
  int vt = static_cast<int>((static_cast<std::size_t>(base_vt) * base_bytes + bytes / 2) / bytes);
  if (vt > 1 && vt % 2 == 0) --vt;
  return vt < 1 ? 1 : vt;
}

// Shared memory a tile may take before the tables halve its threads: fits the
// 99 KB a block gets on sm_86/89/120 and leaves every tuned 4- and 8-byte box
// as it is. The merge stays within 48 KB (its 512x9 int32 pairs take 45 KB).
inline constexpr std::size_t tile_smem_portable = 96 * 1024;
// A block's limit without opting in (cudaFuncSetAttribute), since sm_30.
inline constexpr std::size_t smem_without_opt_in = 48 * 1024;
inline constexpr std::size_t tile_smem_merge = smem_without_opt_in;

// nt halved (in whole warps; power_of_two: exactly, for cub::BlockMergeSort)
// while a tile of vt elements of element_bytes a thread exceeds limit bytes.
constexpr int fit_threads(int nt, int vt, std::size_t element_bytes, std::size_t limit, bool power_of_two = false) {
  while (nt > 32 && static_cast<std::size_t>(nt) * static_cast<std::size_t>(vt) * element_bytes > limit) {
    nt = power_of_two ? nt / 2 : (nt / 2 + 31) / 32 * 32;
  }
  return nt;
}

// How a tile reaches shared memory: through registers, or by bulk copies
// (cp.async.bulk, sm_90+; backends/cuda/cta_merge.cuh).
enum class tile_loads { registers, bulk_copies };

// One algorithm's settings for one architecture entry. vt_keys / vt_pairs
// count 4-byte keys / pairs, scaled by scale_vt; a log2 of 0 turns its rule
// off. Measurements behind the sm_90 values: docs/tuning.md.

// merge and merge_by_key.
struct merge_line {
  int arch;
  tile_loads loads;  // keys-only merges of keys up to 4 bytes (cuda/merge.cuh bulk_keys_of)
  // Up to self_ends_waves_all waves of tiles find their own ends; above, the
  // first self_ends_waves_first waves do, a partition kernel the rest (cuda/merge.cuh).
  int self_ends_waves_all;
  int self_ends_waves_first;
  // Up to this many partitions of a merge or search are found a warp each,
  // above it a thread each (cuda/partition.cuh plan_partitions).
  int warp_partitions_max;
  int nt;
  int vt_keys;
  int vt_pairs;
  // Below 2^small_log2 elements the large tiles make one partial wave and
  // leave SMs idle: small_nt x small_vt_keys / small_vt_pairs instead.
  int small_log2;
  int small_nt;
  int small_vt_keys;
  int small_vt_pairs;
};

// merge_sort: a block sort (cub::BlockMergeSort over tiles of bs_nt x bs_vt;
// bs_nt a power of two), then merge passes in tiles of nt x vt outputs.
struct merge_sort_line {
  int arch;
  tile_loads pass_loads;  // passes of keys up to 4 bytes, no values (cuda/sort/pass.cuh staged_pass)
  int pieces_in_flight;   // loads a thread has in flight at once in a pass tile (cuda/cta_merge.cuh load_pieces)
  // The k-way merge's tiles search the runs' samples first where a tile holds
  // this many (0: never), spaced as sparsely as that allows (cuda/multiway.cuh).
  int runs_tile_samples;
  // The k-way merge's pass box for pairs (cuda/multiway.cuh; kway_nt_pairs 0:
  // the sort's): its partitions and run samples cost more a tile than the sort's.
  int kway_nt_pairs;
  int kway_vt_pairs;
  // Pass kernels' register budget in threads an SM (cuda/sort/pass.cuh
  // pass_ctas_per_sm; which pass gets which: docs/tuning.md).
  int pass_two_way_quarters;
  int pass_threads_wide;
  int pass_threads_long;
  int pass_long_vt;
  int bs_nt_keys;
  int bs_vt_keys;
  int bs_nt_pairs;
  int bs_vt_pairs;
  int nt;
  int vt_keys;
  int vt_pairs;
  // Runs a pass merges: 2, or 4 from 2^four_way_log2 keys (_pairs), from
  // 2^numbers_four_way_log2(_pairs) for numbers in natural order, whose
  // comparison is one instruction. Keys of 8 bytes or more without values take 2.
  int ways;
  int four_way_log2;
  int four_way_log2_pairs;
  int numbers_four_way_log2;
  int numbers_four_way_log2_pairs;
  // Keys of 8 bytes or more without values: wide_nt threads in both stages,
  // bs_vt_wide and vt_wide 8-byte keys a thread (scaled for larger ones).
  int wide_nt;
  int bs_vt_wide;
  int vt_wide;
  // From 2^large_log2_keys (_pairs): large_nt x large_vt_* pass tiles, to
  // spread a tile's partition search and fixed work over more keys.
  int large_nt;
  int large_vt_keys;
  int large_vt_pairs;
  int large_log2_keys;
  int large_log2_pairs;
  // From 2^mid_log2_keys (_pairs) up to the large ones: mid_nt x mid_vt_*.
  int mid_nt;
  int mid_vt_keys;
  int mid_vt_pairs;
  int mid_log2_keys;
  int mid_log2_pairs;
  // Below 2^small_log2_keys (_pairs), elements up to 8 bytes sort in one
  // cooperative kernel (small_nt x small_vt_*, small_ctas_* CTAs an SM); from
  // 2^small_separate_log2_keys its block sort is a kernel of its own. Keys of
  // 9 to 16 bytes take the one kernel below 2^small_log2_wide.
  int small_nt;
  int small_vt_keys;
  int small_vt_pairs;
  int small_ctas_keys;
  int small_ctas_pairs;
  int small_log2_keys;
  int small_log2_pairs;
  int small_separate_log2_keys;
  int small_log2_wide;
};

// sorted_search and sorted_equality_count.
struct search_line {
  int arch;
  tile_loads loads;  // dense tiles whose needles and haystack can be staged (cuda/search/dense.cuh)
  // Dense search kernel's register budget in threads an SM (at a full SM's
  // 32 registers the match modes spill).
  int sm_threads;
  // Dense tiles nt x vt (vt scaled for the larger type); vt_in_keys for keys
  // of one 4-byte type (cuda/search/dense.cuh results_in_key_slots).
  int nt;
  int vt;
  int vt_in_keys;
  // One-sided searches against a side sparse_ratio times longer search each
  // needle alone: 4-ary under quaternary_below times longer, binary above.
  int needle_nt;
  int needle_vt;
  int sparse_ratio;
  int quaternary_below;
  // Numbers in natural order: binary down to interpolate_from times the
  // needles' spacing, then up to interpolation_probes interpolated probes
  // (bounding what skewed keys waste), then binary again.
  int interpolate_from;
  int interpolation_probes;
  // A haystack under 2^small_hay_log2_bytes goes 4-ary per needle from
  // small_sparse_ratio on, and below 2^small_needles_log2 needles at any
  // density (off under a caller's .with(box)).
  int small_hay_log2_bytes;
  int small_sparse_ratio;
  int small_needles_log2;
};

// ---------------------------------------------------------------------------
// The architectures, newest first; a kernel takes the first entry whose arch
// is not above its own (LIBMERGE_DEBUG=1 notes a fallback).
// What one SM holds, for the kernels' __launch_bounds__ (cuda/merge.cuh
// min_ctas_per_sm, cuda/sort/pass.cuh pass_ctas_per_sm); threads 0: no request.
struct sm_limits {
  int threads;  // resident threads an SM
  int ctas;     // resident CTAs an SM
};

struct architecture {
  int arch;  // compute capability x 10
  merge_line merge;
  merge_sort_line sort;
  search_line search;
  sm_limits sm;
};

// sm_90 (H100, H200): the decisive figure beside a value, the rest in docs/tuning.md.
constexpr architecture sm_90() {
  architecture a{};
  a.arch = 90;
  a.sm = {2048, 32};
  merge_line& m = a.merge;
  m.loads = tile_loads::bulk_copies;  // H200, int32 keys 2^24..2^28: 0.89-0.91x the time of loads through registers
  m.self_ends_waves_all = 2;          // H200, 2^20 int32 keys: 0.87x the time of a partition kernel first
  m.self_ends_waves_first = 1;
  m.warp_partitions_max = 3072;       // H200, 2^20 int32 merge: 0.0134 ms by warps against 0.0200 by threads
  m.nt = 512;  // beats CUB on both the H100 and the H200 (docs/cuda-merge.md)
  m.vt_keys = 19;
  m.vt_pairs = 9;
  m.small_log2 = 24;
  m.small_nt = 256;  // H100, 2^22 int32: 256x15 1.08x CUB, 512x19 0.95x
  m.small_vt_keys = 15;
  m.small_vt_pairs = 7;
  merge_sort_line& s = a.sort;
  s.pass_loads = tile_loads::bulk_copies;  // H200, 2^28 int32 keys: 9.68 against 9.85 ms through registers
  s.pieces_in_flight = 5;                  // the most at which no tuned 4-way kernel spills (H100, nvcc 13.0)
  // H100, 2^28 int32 keys, K = 4: every 512th key (23 a tile) 0.830 ms, every 256th 0.845, none 0.986
  s.runs_tile_samples = 20;
  s.kway_nt_pairs = 512;  // H100, 2^28 int32 pairs, K = 64: 5.80 ms against 6.45 at the sort's 128x9
  s.kway_vt_pairs = 9;
  s.pass_two_way_quarters = 3;             // H100, 2^24 int32: a full SM was no faster (0.837 against 0.829 ms)
  s.pass_threads_wide = 1024;
  // At 1024 threads, 4-way int32/int64 pairs at 21+ values a thread merge their
  // last tile out of order (nvcc 13.0, H200; cause not found): 512 is right.
  s.pass_threads_long = 512;
  s.pass_long_vt = 19;
  s.bs_nt_keys = 512;  // tiles past 16384 keys: 14 levels at 2^28 instead of 16
  s.bs_vt_keys = 33;
  s.bs_nt_pairs = 1024;
  s.bs_vt_pairs = 17;
  s.nt = 128;  // H200, 2^24 int32: 4-way 128x17 0.703 ms against 0.761 for 2-way 256x17
  s.vt_keys = 17;
  s.vt_pairs = 9;
  s.ways = 4;
  s.four_way_log2 = 26;  // H200, strings by index at 2^24: 2-way 26.2 ms, 4-way 29.5
  s.four_way_log2_pairs = 24;
  s.numbers_four_way_log2 = 23;
  s.numbers_four_way_log2_pairs = 22;
  s.wide_nt = 256;  // H100, int64 at 2^28: 1.17x CUB, 1.05x with the 4-byte line scaled
  s.bs_vt_wide = 19;
  s.vt_wide = 11;
  s.large_nt = 512;  // H200, 2^28 int32: 512x23 9.85 ms against 10.32 for 512x17
  s.large_vt_keys = 23;
  s.large_vt_pairs = 9;
  s.large_log2_keys = 28;
  s.large_log2_pairs = 0;
  s.mid_nt = 256;  // H200, sorted input at 2^27: 0.393 ms against 0.733 for 128x17
  s.mid_vt_keys = 23;
  s.mid_vt_pairs = 9;
  s.mid_log2_keys = 26;
  s.mid_log2_pairs = 0;
  s.small_nt = 256;  // H100, 2^20 int32: 0.079 ms against CUB's 0.098
  s.small_vt_keys = 17;
  s.small_vt_pairs = 11;
  s.small_ctas_keys = 4;
  s.small_ctas_pairs = 3;
  s.small_log2_keys = 23;
  s.small_log2_pairs = 21;
  s.small_separate_log2_keys = 22;  // H100, 2^22 int32: 0.208 ms against 0.233 in one kernel
  s.small_log2_wide = 19;  // H100, 16-byte keys at 2^18: 0.109 ms against 0.168 separate
  search_line& q = a.search;
  q.loads = tile_loads::bulk_copies;
  q.sm_threads = 1536;
  q.nt = 256;
  q.vt = 19;          // H200, 2^28 int32 lower bounds: 0.6025 ms against 0.6176 at 512x15
  q.vt_in_keys = 31;  // H200, 2^28 int32 lower bounds: 0.4758 ms against 0.5442 at 256x19
  q.needle_nt = 128;
  q.needle_vt = 1;
  q.sparse_ratio = 12;  // H100: the merge-path search ahead at |A| = |B| / 8
  q.quaternary_below = 64;
  q.interpolate_from = 8;
  q.interpolation_probes = 3;  // as good as 4 on uniform keys (simulated: docs/cuda-sorted-search.md)
  q.small_hay_log2_bytes = 25;  // 32 MiB: 2^23 int32 keys
  q.small_sparse_ratio = 4;  // H200, 2^24 keys at |B| / 4: 4-ary 0.0374 ms, dense 0.0425
  q.small_needles_log2 = 20;  // H200, 2^15 int32 each: 4-ary 0.0048 ms, dense 0.0107
  return a;
}

// For architectures without bulk copies (before sm_90).
constexpr architecture registers_only(architecture a) {
  a.merge.loads = tile_loads::registers;
  a.sort.pass_loads = tile_loads::registers;
  a.search.loads = tile_loads::registers;
  return a;
}

// Before sm_80 (sm_75 and older): smaller, conservative shapes, untuned; 2-way
// passes only, no one-kernel class.
constexpr architecture before_sm_80() {
  architecture a = registers_only(sm_90());
  a.arch = 0;
  a.merge.nt = 256;
  a.merge.vt_keys = 15;
  a.merge.vt_pairs = 7;
  a.merge.small_log2 = 0;
  merge_sort_line& s = a.sort;
  s.bs_nt_keys = 256;
  s.bs_vt_keys = 11;
  s.bs_nt_pairs = 256;
  s.bs_vt_pairs = 11;
  s.nt = 256;
  s.vt_keys = 11;
  s.vt_pairs = 7;
  s.ways = 2;
  s.four_way_log2 = 0;
  s.four_way_log2_pairs = 0;
  s.numbers_four_way_log2 = 0;
  s.numbers_four_way_log2_pairs = 0;
  s.wide_nt = 256;
  s.bs_vt_wide = 11;
  s.vt_wide = 7;
  s.large_nt = 256;
  s.large_vt_keys = 11;
  s.large_vt_pairs = 7;
  s.large_log2_keys = 0;
  s.large_log2_pairs = 0;
  s.mid_nt = 256;
  s.mid_vt_keys = 11;
  s.mid_vt_pairs = 7;
  s.mid_log2_keys = 0;
  s.mid_log2_pairs = 0;
  s.small_nt = 256;
  s.small_vt_keys = 11;
  s.small_vt_pairs = 7;
  s.small_ctas_keys = 1;
  s.small_ctas_pairs = 1;
  s.small_log2_keys = 0;
  s.small_log2_pairs = 0;
  s.small_separate_log2_keys = 0;
  s.small_log2_wide = 0;
  a.search.nt = 256;
  a.search.vt = 15;
  a.search.vt_in_keys = 15;
  a.sm = {0, 0};  // sm_70 (2048 threads an SM) and sm_75 (1024) differ: no request
  return a;
}

// Another architecture's settings under this one's number and SM limits, until measured.
constexpr architecture untuned_as(int arch, architecture a, sm_limits sm) {
  a.arch = arch;
  a.sm = sm;
  return a;
}

inline constexpr architecture architectures[] = {
    untuned_as(120, sm_90(), {1536, 16}),  // sm_120, sm_121
    untuned_as(110, sm_90(), {0, 0}),      // sm_110: no CTA request (its limits not checked here)
    untuned_as(103, sm_90(), {2048, 32}),  // sm_103
    untuned_as(101, sm_90(), {0, 0}),      // sm_101 (CUDA 12's name for sm_110)
    untuned_as(100, sm_90(), {2048, 32}),  // sm_100
    sm_90(),
    untuned_as(86, registers_only(sm_90()), {1536, 16}),  // sm_86, sm_87, sm_89
    untuned_as(80, registers_only(sm_90()), {2048, 32}),  // sm_80
    untuned_as(75, before_sm_80(), {1024, 16}),  // sm_75
    before_sm_80(),
};

// Index of the entry (and table line) serving kernels compiled for `arch`
// (compute capability x 10); -1 before the oldest.
constexpr int entry_for(int arch) {
  for (std::size_t i = 0; i < std::size(architectures); ++i) {
    if (architectures[i].arch <= arch) return static_cast<int>(i);
  }
  return -1;
}

// One algorithm's table, in the order of `architectures`.
template <class Line, Line architecture::*Field>
constexpr std::array<Line, std::size(architectures)> lines_of() {
  std::array<Line, std::size(architectures)> lines{};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    lines[i] = architectures[i].*Field;
    lines[i].arch = architectures[i].arch;
  }
  return lines;
}
// This compilation pass's entry; host code gets the oldest and never decides by it.
#ifdef __CUDA_ARCH__
inline constexpr architecture here = architectures[entry_for(__CUDA_ARCH__ / 10)];
#else
inline constexpr architecture here = architectures[std::size(architectures) - 1];
#endif

inline constexpr auto merge = lines_of<merge_line, &architecture::merge>();
inline constexpr auto merge_sort = lines_of<merge_sort_line, &architecture::sort>();
inline constexpr auto search = lines_of<search_line, &architecture::search>();

}  // namespace tuning
}  // namespace libmerge

namespace libmerge::cuda {

// The default allocator: stream-ordered, from libmerge's pool of the stream's
// device, so temporary storage never synchronizes the device (docs/api.md).
// A tag: backends/cuda/memory.cuh does the work.
struct pool_allocator {};

template <class Box = tuned_launch_box, class Allocator = pool_allocator>
class policy {
 public:
  using backend_tag = backend::cuda;
  using box_type = Box;
  using allocator_type = Allocator;

  constexpr policy() = default;
  constexpr policy(cudaStream_t stream, Allocator allocator, bool synchronize = false)
      : stream_(stream), allocator_(allocator), synchronize_(synchronize) {}

  policy on(cudaStream_t stream) const { return policy(stream, allocator_, synchronize_); }

  // A fixed launch box for every kernel of the call.
  template <int NT, int VT>
  policy<launch_box<NT, VT>, Allocator> with(launch_box<NT, VT>) const {
    return {stream_, allocator_, synchronize_};
  }

  // merge_sort's block-sort box and merge-pass box (other algorithms: the second).
  template <int NT1, int VT1, int NT2, int VT2>
  policy<launch_boxes<launch_box<NT1, VT1>, launch_box<NT2, VT2>>, Allocator> with(launch_box<NT1, VT1>,
                                                                                  launch_box<NT2, VT2>) const {
    return {stream_, allocator_, synchronize_};
  }
  // The same with the merge passes' way count: .with(lm::launch_boxes<B1, B2, 4>{}).
  template <class B1, class B2, int Ways>
  policy<launch_boxes<B1, B2, Ways>, Allocator> with(launch_boxes<B1, B2, Ways>) const {
    return {stream_, allocator_, synchronize_};
  }

  template <class A>
  policy<Box, A> with_allocator(A allocator) const {
    return {stream_, allocator, synchronize_};
  }

  // Every call's preconditions checked first (a wait for the answer); set it last.
  checked_policy<policy> checked() const { return checked_policy<policy>(*this); }

  cudaStream_t stream() const { return stream_; }
  const Allocator& allocator() const { return allocator_; }
  // Whether a call waits for its stream before returning: only for Thrust's
  // synchronous policies (thrust::device, thrust::cuda::par).
  bool synchronizes() const { return synchronize_; }

 private:
  cudaStream_t stream_ = nullptr;
  Allocator allocator_{};
  bool synchronize_ = false;
};

inline constexpr policy<> par{};

}  // namespace libmerge::cuda
