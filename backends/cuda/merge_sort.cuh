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
//
// Files: sort/state.cuh (what the kernels share), sort/sortedness.cuh (1),
// sort/block_sort.cuh (2), sort/pass_partition.cuh and sort/pass.cuh (3, 4),
// sort/one_kernel.cuh (small sorts), sort/plan.cuh (tuning, pass plan);
// this file launches them (launch_merge_sort) and picks the boxes;
// sort/runs.cuh serves the sort across GPUs.
#pragma once

#include "sort/plan.cuh"

namespace libmerge::detail::cuda_backend {

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
