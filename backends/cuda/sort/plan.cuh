// The merge sort's tuning and plan: boxes per key and value type, the passes
// of a sort of n keys, and where a sort for the sort across GPUs leaves its data.
#pragma once

#include "state.cuh"

namespace libmerge::detail::cuda_backend {

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
  // Line I's boxes, in order: block sort, passes, ways, 4-way log2 size; large sorts' pass box and log2 size
  // (0: never); the one-kernel class; the 4-way log2 size for numbers under their natural order
  // (with_sort_boxes picks one); mid-sized sorts' pass box and log2 size (0: never).
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
    // One-kernel class: elements of up to 8 bytes, and keys of up to 16 whose
    // vt scales from the 8-byte keys' (16 bytes: 256x5; from 4-byte keys, 256x3).
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
