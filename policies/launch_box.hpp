// LaunchBox: CUDA launch shapes as data. A box is (nt threads per block, vt
// values per thread); nv = nt * vt elements make one tile. Each algorithm keeps
// a table with one line per GPU architecture; the CUDA backend picks the line of
// the architecture the running kernels were compiled for, and a caller can pass
// its own box for one call: lm::cuda::par.with(lm::launch_box<64, 3>{}).
#pragma once

#include <array>
#include <cstddef>
#include <iterator>

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

// Values per thread for elements of element_bytes, from a line tuned for
// elements of base_bytes: larger elements get proportionally fewer, so that a
// tile's shared memory and registers stay about the same (smaller ones keep
// the base count). Odd counts keep the blocked/striped exchanges in shared
// memory free of bank conflicts.
constexpr int scale_vt(int base_vt, std::size_t base_bytes, std::size_t element_bytes) {
  const std::size_t bytes = element_bytes < base_bytes ? base_bytes : element_bytes;
  int vt = static_cast<int>((static_cast<std::size_t>(base_vt) * base_bytes + bytes / 2) / bytes);
  if (vt > 1 && vt % 2 == 0) --vt;
  return vt < 1 ? 1 : vt;
}

// Shared memory a tile may take before the tables give it fewer threads
// (halving in whole warps). Every line serves several architectures (sm_86,
// sm_89 and sm_120 take the sm_80 and sm_100 lines but give a block 99 KB, not
// 163 or 227), so the bound is one that fits them all with room for the
// kernels' static shared memory, and leaves every tuned 4- and 8-byte box as
// it is. The merge keeps its tiles within the 48 KB a launch gets without
// opting in (its largest tuned tile, 512x9 int32 pairs with their 2-byte
// sources, takes 45 KB).
inline constexpr std::size_t tile_smem_portable = 96 * 1024;
// What a kernel's block may take without cudaFuncSetAttribute(
// MaxDynamicSharedMemorySize), on every architecture since sm_30.
inline constexpr std::size_t smem_without_opt_in = 48 * 1024;
inline constexpr std::size_t tile_smem_merge = smem_without_opt_in;

// The threads a tile of vt elements of element_bytes a thread may have
// within limit bytes: nt, halved while the tile is larger, in whole warps
// (power_of_two: halved exactly, as cub::BlockMergeSort needs), down to one
// warp. The merge, sort and search tables shrink their boxes with it.
constexpr int fit_threads(int nt, int vt, std::size_t element_bytes, std::size_t limit, bool power_of_two = false) {
  while (nt > 32 && static_cast<std::size_t>(nt) * static_cast<std::size_t>(vt) * element_bytes > limit) {
    nt = power_of_two ? nt / 2 : (nt / 2 + 31) / 32 * 32;
  }
  return nt;
}

// merge and merge_by_key: from `arch` (compute capability x 10) upward, until
// the next line, nt threads per CTA and, per thread, vt_keys 4-byte keys
// (merge) or vt_pairs pairs of 4-byte keys and values (merge_by_key), scaled by
// scale_vt for other sizes. Merges of fewer than 2^small_log2 elements in all
// take the smaller tiles small_nt x small_vt_keys / small_vt_pairs instead:
// there the large tiles make one partial wave and leave SMs idle. Newest
// architecture first: the backend takes the first line whose arch is not
// above the architecture the kernels were compiled for. sm_90 was tuned on an
// H100 and an H200 (the best shapes differ a little between the two; this one
// beats CUB on both, docs/cuda-merge.md); its small tiles on an H100, where
// 512x19 keys ran 0.95x CUB at 2^22 and 256x15 1.08x (pairs 256x7: 1.17x
// against 1.16x, int64 256x7: 1.06x against 1.04x); sm_80 and sm_100 start
// from the same shapes until measured on their own hardware.
struct merge_line {
  int arch;
  int nt;
  int vt_keys;
  int vt_pairs;
  int small_log2;
  int small_nt;
  int small_vt_keys;
  int small_vt_pairs;
};

// merge_sort: a block-sort stage (cub::BlockMergeSort over tiles of
// bs_nt * bs_vt keys; bs_nt a power of two) and merge passes (tiles of
// nt * vt outputs). `ways` sorted runs are merged per pass: 2, or 4 (with one
// 2-way pass last where the level count is odd) for inputs of 2^four_way_log2 keys
// or more, 2^four_way_log2_pairs with values; keys that are numbers under
// their natural order (lm::less, lm::greater, Thrust's less and greater),
// whose comparison is one instruction, from 2^numbers_four_way_log2 (keys)
// and 2^numbers_four_way_log2_pairs: a 4-way pass spends more comparisons a
// key than the two 2-way passes it replaces save in bytes when a comparison
// reads memory of its own. Keys of 8 bytes or more always take 2. Values
// per thread count 4-byte keys (vt_keys) or pairs of 4-byte keys and values
// (vt_pairs) and scale with scale_vt. Keys of 8 bytes or more
// (no values) have boxes of their own: wide_nt threads in both stages, per
// thread bs_vt_wide and vt_wide 8-byte keys, scaled for larger ones. Sorts of
// 2^large_log2_keys keys or more (2^large_log2_pairs with values; 0: none)
// merge in tiles of large_nt threads, large_vt_keys / large_vt_pairs values
// a thread (scaled like vt_keys / vt_pairs): every pass tile costs a search
// in the pass's partition and a tile's fixed work, which larger tiles spread
// over more keys at the largest sizes; sorts from 2^mid_log2_keys keys
// (2^mid_log2_pairs with values; 0: none) up to the large ones take tiles of
// mid_nt threads, mid_vt_keys / mid_vt_pairs values a thread: a pass with
// nothing to merge (sorted input) still launches a CTA a tile, which costs
// the small tiles most at the sizes where their merges are not yet ahead.
// Sorts of fewer than 2^small_log2_keys keys
// (2^small_log2_pairs with values; 0: none) of elements up to 8 bytes run
// in one cooperative kernel of small_nt-thread CTAs, vt small_vt_keys /
// small_vt_pairs (scaled), registers for small_ctas_keys / small_ctas_pairs
// CTAs an SM: there separate kernels cost more in launches and partitions
// than in bytes moved. sm_90: 256x17 keys at 4 CTAs an SM (2^20 int32:
// 0.079 ms against CUB's 0.098; 512x17 at 2 tied, 1 CTA an SM 0.105; int64
// scaled to 256x9: 0.114 against 0.148), 256x11 pairs at 3 (2^20: 0.111
// against 0.125; 256x9 at 1 CTA 0.184). From 2^small_separate_log2_keys
// keys (0: never) the block sort is a kernel of its own with the line's
// block-sort box and the cooperative kernel makes the passes: sm_90 from 2^22
// (int32 0.208 ms against CUB's 0.221, where one kernel took 0.233 and
// separate kernels 0.225; int64 0.449 against 0.492); from 2^23 keys and
// 2^21 pairs separate kernels win (2^23 int32 0.459 against 0.465 ms).
// Keys of 9 to 16 bytes (no values) take the class below
// 2^small_log2_wide, vt scaled from the 8-byte keys' (16-byte keys: 256x5
// at 4 CTAs an SM; sm_90 below 2^19: 2^16 0.076 ms against CUB's 0.078 and
// 0.091 for separate kernels, 2^18 0.109 against 0.128 and 0.168; at 2^20
// separate kernels win, 0.296 against 0.327).
// sm_90 was tuned on an H100 and its passes retuned on an H200
// (docs/cuda-merge-sort.md); the other lines are untuned copies.
struct merge_sort_line {
  int arch;
  int bs_nt_keys;
  int bs_vt_keys;
  int bs_nt_pairs;
  int bs_vt_pairs;
  int nt;
  int vt_keys;
  int vt_pairs;
  int ways;
  int four_way_log2;
  int four_way_log2_pairs;
  int numbers_four_way_log2;
  int numbers_four_way_log2_pairs;
  int wide_nt;
  int bs_vt_wide;
  int vt_wide;
  int large_nt;
  int large_vt_keys;
  int large_vt_pairs;
  int large_log2_keys;
  int large_log2_pairs;
  int mid_nt;
  int mid_vt_keys;
  int mid_vt_pairs;
  int mid_log2_keys;
  int mid_log2_pairs;
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

// sm_90, measured on an H100 at 2^16 to 2^28 (docs/cuda-merge-sort.md):
// block-sort tiles past 16384 keys (512x33 for keys, 1024x17 for pairs) make
// 14 levels at 2^28 instead of 16. Passes retuned on an H200 (2026-11-28,
// int32, lm::less) once 4-way passes partitioned on run samples and an odd
// level count made its 2-way pass last: 4-way passes of 128x17 tiles from
// 2^23 keys (2^23 0.406 ms against 0.441 for 2-way 256x17; 2^24 0.703
// against 0.761; 2^25 1.283 against 1.429; 2^26 2.470, 2^27 4.968), 512x23
// at 2^28 (9.85 ms against 10.32 for the 512x17 tiles before; 256x23 9.77,
// but already sorted input 0.745 against 0.544 for 512x23: a pass with
// nothing to merge still launches a CTA a tile; at 2^26 512x23 lost to
// 128x17, about 2.52 against 2.47 ms); 256x23 from 2^26 (2^26 2.441, 2^27
// 4.840 ms; already sorted 0.197 and 0.393 against 0.344 and 0.733 for
// 128x17); pairs in 128x9 4-way tiles from 2^22 (2^22 0.333 against 0.372 for 2-way
// 256x9; 2^26 4.21 against 4.43 for 512x9, 2^28 17.48 against 18.17).
// Comparators other than the natural order of numbers keep 4-way passes from
// 2^26 keys and 2^24 pairs: strings by index at 2^24 sort in 26.2 ms with
// 2-way 128x17 passes, 29.5 with 4-way ones. Wide keys: 256x19 / 256x11 for
// int64 (1.17x CUB at 2^28 on an H100, against 1.05x with the 4-byte line
// scaled to 512x7), which scales to 256x9 / 256x5 for 16-byte keys (1.45x,
// against 1.14x at 512x3).

// sorted_search and sorted_equality_count: tiles of nt * vt needles and
// haystack elements (vt counts 4-byte keys, scaled by scale_vt for the larger
// of the two types); vt_in_keys for keys of one 4-byte type, whose results
// take their keys' slots in shared memory (cuda/search/dense.cuh,
// results_in_key_slots), which leaves room for longer tiles. When only one
// side writes results and the other side is at least sparse_ratio times
// longer, each needle is searched on its own instead of streaming the long
// side: needle_nt threads a block, needle_vt needles a thread, with a 4-ary
// search (three probes a step) while the other side is less than
// quaternary_below times longer, a binary one from there.
// Where the keys are numbers in their natural order (lm::less, lm::greater,
// Thrust's less and greater), the per-needle search is binary only down to a
// window of interpolate_from times the needles' spacing (|B| / |A|), then
// probes where interpolation between the window's end keys puts the needle,
// a 64-byte block at a time (0: never). A haystack of fewer than
// 2^small_hay_log2_bytes bytes (0: no such rule) is searched 4-ary per
// needle from small_sparse_ratio on: there a search's cost is its chain of
// dependent loads, which the 4-ary search halves, more than the DRAM blocks
// it reads (H200, sorted_search int32, 2^17 to 2^23 keys, |A| = |B|/4 to
// |B|/4096: 4-ary 1.11x-1.99x Thrust, against 0.81x-1.86x for the dense
// or interpolating search the larger calls take; at 2^24 keys and |B|/4
// the dense search wins, 0.0374 against 0.0425 ms). sm_90 measured on an
// H100 (docs/cuda-sorted-search.md: 4-ary 1.14x Thrust at |A| = |B|/16,
// binary 0.98x; at /256 binary 1.0x, 4-ary 0.90x; the merge-path search
// ahead at /8, where an H200 has the 4-ary one ahead at every size, 0.342
// against 0.366 ms at 2^28 int32 keys: the line keeps 12); the small rule on
// an H200 only; the other lines are untuned copies. Below
// 2^small_needles_log2 needles (0: no such rule) a one-sided search of a
// small haystack goes 4-ary per needle at any density: there the dense
// path's two kernels in a row (partitions, then tiles) cost more than one
// kernel of short chains (H200, int32 |A| = |B|: 2^15 keys each, the
// dense path 0.0107 ms, the 4-ary search 0.0048, Thrust 0.0078; 2^19 each
// 0.0150 against 0.0124 and 0.0176; at |B| / 2 alike). A caller's .with(box)
// replaces the tile box and turns the needle-count rule off (a caller who
// names a tile gets tiles wherever the ratios allow them); the needle box
// and the ratios stay the line's.
struct search_line {
  int arch;
  int nt;
  int vt;
  int vt_in_keys;
  int needle_nt;
  int needle_vt;
  int sparse_ratio;
  int quaternary_below;
  int interpolate_from;
  int small_hay_log2_bytes;
  int small_sparse_ratio;
  int small_needles_log2;
};

// ---------------------------------------------------------------------------
// The architectures: one entry each, newest first, every setting by name
// (the fields are explained with each line type above). For each kernel the
// backend takes the first entry whose arch is not above the architecture the
// kernel was compiled for; an architecture without an entry takes the nearest
// older one's (a one-time notice under LIBMERGE_DEBUG=1 says so). Adding an
// architecture is adding its entry to `architectures`.
// What one multiprocessor of an architecture holds. The kernels ask for as
// many CTAs an SM as their registers allow within these (__launch_bounds__:
// cuda/merge.cuh min_ctas_per_sm, cuda/sort/pass.cuh pass_ctas_per_sm);
// threads 0: they ask for none.
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

// sm_90, measured on an H100 and an H200 (the figures are with the line types
// above).
constexpr architecture sm_90() {
  architecture a{};
  a.arch = 90;
  a.sm = {2048, 32};
  merge_line& m = a.merge;
  m.nt = 512;
  m.vt_keys = 19;
  m.vt_pairs = 9;
  m.small_log2 = 24;
  m.small_nt = 256;
  m.small_vt_keys = 15;
  m.small_vt_pairs = 7;
  merge_sort_line& s = a.sort;
  s.bs_nt_keys = 512;
  s.bs_vt_keys = 33;
  s.bs_nt_pairs = 1024;
  s.bs_vt_pairs = 17;
  s.nt = 128;
  s.vt_keys = 17;
  s.vt_pairs = 9;
  s.ways = 4;
  s.four_way_log2 = 26;
  s.four_way_log2_pairs = 24;
  s.numbers_four_way_log2 = 23;
  s.numbers_four_way_log2_pairs = 22;
  s.wide_nt = 256;
  s.bs_vt_wide = 19;
  s.vt_wide = 11;
  s.large_nt = 512;
  s.large_vt_keys = 23;
  s.large_vt_pairs = 9;
  s.large_log2_keys = 28;
  s.large_log2_pairs = 0;
  s.mid_nt = 256;
  s.mid_vt_keys = 23;
  s.mid_vt_pairs = 9;
  s.mid_log2_keys = 26;
  s.mid_log2_pairs = 0;
  s.small_nt = 256;
  s.small_vt_keys = 17;
  s.small_vt_pairs = 11;
  s.small_ctas_keys = 4;
  s.small_ctas_pairs = 3;
  s.small_log2_keys = 23;
  s.small_log2_pairs = 21;
  s.small_separate_log2_keys = 22;
  s.small_log2_wide = 19;
  search_line& q = a.search;
  // 256x19 (8-byte keys: 256x9) since tiles are staged by bulk copies
  // (H200, 2^28 int32 lower bounds 0.6025 ms against 0.6176 at 512x15);
  // 256x31 for keys of one 4-byte type, their results in the keys' slots
  // (H200, 2^28 int32: lower bounds, index_match both ways and equality
  // counts 0.4758, 0.7432, 0.9823 ms against 0.5442, 0.8442, 1.0551 at
  // 256x19; 256x27 0.4722, 0.7637, 1.0025; 256x35 0.4539, 0.7612, 1.0054;
  // at 2^20, where tiles are few, 256x19 was 1.09x-1.20x faster).
  q.nt = 256;
  q.vt = 19;
  q.vt_in_keys = 31;
  q.needle_nt = 128;
  q.needle_vt = 1;
  q.sparse_ratio = 12;
  q.quaternary_below = 64;
  q.interpolate_from = 8;
  q.small_hay_log2_bytes = 25;  // 32 MiB: 2^23 int32 keys
  q.small_sparse_ratio = 4;
  q.small_needles_log2 = 20;
  return a;
}

// Before sm_80 (sm_75 and older): smaller, conservative shapes, untuned; 2-way
// passes only, no one-kernel class.
constexpr architecture before_sm_80() {
  architecture a = sm_90();
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

// Another architecture's settings under this one's number, until measured on
// its own hardware, with its own multiprocessor's limits.
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
    untuned_as(86, sm_90(), {1536, 16}),        // sm_86, sm_87, sm_89
    untuned_as(80, sm_90(), {2048, 32}),        // sm_80
    untuned_as(75, before_sm_80(), {1024, 16}),  // sm_75
    before_sm_80(),
};

// The entry of `architectures` (and the line of each table below, which
// follow its order) that serves kernels compiled for `arch` (compute
// capability x 10): the first, newest first, whose arch is not above it; -1
// before the oldest. The CUDA backend picks each call's boxes by it, and
// tests and benchmarks read "the tuned line" of an architecture from it.
constexpr int entry_for(int arch) {
  for (std::size_t i = 0; i < std::size(architectures); ++i) {
    if (architectures[i].arch <= arch) return static_cast<int>(i);
  }
  return -1;
}

// Each algorithm's table, newest first: the backend's view of
// `architectures`, one line type a table, each line with its entry's arch.
template <class Line, Line architecture::*Field>
constexpr std::array<Line, std::size(architectures)> lines_of() {
  std::array<Line, std::size(architectures)> lines{};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    lines[i] = architectures[i].*Field;
    lines[i].arch = architectures[i].arch;
  }
  return lines;
}
inline constexpr auto merge = lines_of<merge_line, &architecture::merge>();
inline constexpr auto merge_sort = lines_of<merge_sort_line, &architecture::sort>();
inline constexpr auto search = lines_of<search_line, &architecture::search>();

}  // namespace tuning
}  // namespace libmerge
