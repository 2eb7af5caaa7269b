// The merge sort's tuning and plan: launch boxes for each key and value
// type, the passes a sort of n keys makes, and where a sort for the sort
// across GPUs leaves its data.
#pragma once

#include "state.cuh"

namespace libmerge::detail::cuda_backend {

// Tuning: boxes for keys K and values V (void: keys only). Large elements get
// fewer values per thread (scale_vt), and fewer threads when even that would
// not fit tuning::tile_smem_portable (96 KB; the tuned 4-byte block sorts
// take 68 KB; with the bound at 100 KB, boxes of 99 to 100 KB, such as the
// 1024x11 block sort of 2-byte keys with 9-byte values, were refused on
// sm_86, sm_89 and sm_120, which give a block 99 KB); the block sort keeps a
// power of two (cub::BlockMergeSort), the passes a multiple of 32.
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
  // The passes of large or mid-sized sorts: vt from the line's field for keys
  // and for pairs (wide keys have no such passes and keep vt).
  static constexpr int pass_vt(const tuning::merge_sort_line& l, int vt_keys, int vt_pairs) {
    if (wide) return vt(l);
    return pairs ? tuning::scale_vt(vt_pairs, 8, element_bytes) : tuning::scale_vt(vt_keys, 4, sizeof(K));
  }
  static constexpr int shrink(int nt, int vt, std::size_t bytes_per_element, bool power_of_two) {
    return tuning::fit_threads(nt, vt, bytes_per_element, tuning::tile_smem_portable, power_of_two);
  }
  // Line I's boxes: the block sort's, the passes', the ways and the size
  // (log2) from which passes are 4-way; then the passes' box of large sorts
  // and the size (log2) from which it is used (0: never); the one-kernel
  // class; the size from which passes are 4-way for keys that are numbers
  // under their natural order (with_sort_boxes picks one of the two sizes);
  // the passes' box of mid-sized sorts and the size (log2) from which it is
  // used, below the large ones (0: never).
  template <std::size_t I>
  static constexpr auto boxes() {
    constexpr auto l = lines[I];
    constexpr int bs_vt_ = bs_vt(l), vt_ = vt(l), large_vt_ = pass_vt(l, l.large_vt_keys, l.large_vt_pairs),
                  mid_vt_ = pass_vt(l, l.mid_vt_keys, l.mid_vt_pairs);
    constexpr std::size_t bs_bytes = sizeof(K) > element_bytes - sizeof(K) ? sizeof(K) : element_bytes - sizeof(K);
    constexpr std::size_t pass_bytes = element_bytes + (pairs ? sizeof(tile_offset) : 0);
    constexpr int bs_nt = wide ? l.wide_nt : (pairs ? l.bs_nt_pairs : l.bs_nt_keys);
    constexpr int nt = wide ? l.wide_nt : l.nt;
    constexpr int large_log2 = wide ? 0 : (pairs ? l.large_log2_pairs : l.large_log2_keys);
    constexpr int mid_log2 = wide ? 0 : (pairs ? l.mid_log2_pairs : l.mid_log2_keys);
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
                      launch_box<shrink(l.large_nt, large_vt_, pass_bytes, false), large_vt_>,
                      std::integral_constant<int, large_log2>,
                      one_kernel_class<launch_box<l.small_nt, small_vt>,
                                       pairs ? l.small_ctas_pairs : l.small_ctas_keys, small_log2,
                                       pairs ? 0 : l.small_separate_log2_keys>,
                      std::integral_constant<int, pairs ? l.numbers_four_way_log2_pairs : l.numbers_four_way_log2>,
                      launch_box<shrink(l.mid_nt, mid_vt_, pass_bytes, false), mid_vt_>,
                      std::integral_constant<int, mid_log2>>{};
  }
};

// How the passes go for n keys after a block sort of tiles of `first_width`:
// `levels` 2-way merge levels (merge_levels(n, bs_nv) for one sorted run),
// as 2-way passes or, with max_ways = 4, 4-way passes and, when the number of
// levels is odd, one 2-way pass last: the 4-way passes then start from the
// block sort's run samples (a 2-way pass writes none, so a 2-way first pass
// left every 4-way pass to partition on the runs: 2^25 int32 keys on an
// H200, 1.55 ms against 1.42 for 2-way passes alone).
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
    const int ways = max_ways == 2 || left == 1 ? 2 : 4;
    const index_t groups = (n + width * ways - 1) / (width * ways);
    passes.push_back({width / bs_nv, ways, bs_nv, 0, (n + nv - 1) / nv + groups, pair_spacing_on_samples(n, nv)});
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

}  // namespace libmerge::detail::cuda_backend
