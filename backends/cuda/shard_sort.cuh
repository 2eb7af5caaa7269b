// The CUDA backend's entry point for the sort across GPUs (backends/nccl):
// outline_runs (what sorting a shard into runs makes) and sort_into_runs (the
// single-GPU sort's kernels into the caller's buffers). Nothing else of the
// CUDA backend is named there; the receiver merges with lm::multiway_merge.
#pragma once

#include "multiway.cuh"

namespace libmerge::detail::cuda_backend {

// Sorts keys[0, n) (and vals) into into.keys (into.vals), the caller's buffers as scratch: one sorted run or
// two (runs_target), by the single-GPU sort's kernels. Returns the first run's length where the host knows it
// (n: empty, or the one-kernel class, which sorts in place and is copied), else -1: the sort wrote it to
// *into.width on the device.
template <class Policy, class K, class V, bool WithValues, class Comp>
long long sort_into_runs(const Policy& policy, K* keys, V* vals, index_t n, const runs_target<K, V>& into, Comp comp,
                         const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  const device_info& dev = current_device(algorithm, stream);
  if (n == 0) return 0;
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
    return n;
  }
  return -1;
}

// What a sort of n elements would make with its boxes (shape_sort), or that it sorts in one kernel.
struct sort_outline {
  index_t bs_nv = 0;
  int levels = 0, all_levels = 0, passes = 0, ways = 0;
  bool one_kernel = false;
};
template <class Policy, class K, class V, bool WithValues, class Comp>
sort_outline outline_sort(const device_info& dev, index_t n, bool two_runs, const char* algorithm) {
  sort_outline o;
  with_sort_boxes<Policy, K, V, WithValues, false, V*, Comp>(
      dev, algorithm, n, [&](auto bs_box, auto box, auto ways, auto four_way_log2, auto one_kernel, auto) {
        using BsBox = decltype(bs_box);
        if constexpr (decltype(one_kernel)::log2 > 0) {
          if (n < (index_t(1) << decltype(one_kernel)::log2)) {
            o.one_kernel = true;
            return;
          }
        }
        const runs_target<K, V> into{nullptr, nullptr, two_runs, nullptr};
        const sort_shape s = shape_sort<BsBox, decltype(box), decltype(ways)::value, decltype(four_way_log2)::value>(
            n, &into, algorithm);
        o = sort_outline{BsBox::nv, s.levels, merge_levels(n, BsBox::nv), s.num_passes, s.max_ways, false};
      });
  return o;
}

// W, where a two-run sort's runs meet (block-sort tile x 2^levels), if leaving the last level out saves a pass
// and [0, W) and [W, n) sorted apart make no more passes; else 0. The sort across 2 GPUs then sends the first
// run's pieces while the second sorts (early_round; nccl/plan.cuh: min_early_small; docs/multi-gpu-sort.md).
template <class Policy, class K, class V, bool WithValues, class Comp>
index_t two_run_width(const device_info& dev, index_t n, const char* algorithm) {
  if constexpr (sizeof(K) + (WithValues ? sizeof(V) : 0) > max_element_bytes) {
    return 0;
  } else {
    const sort_outline two = outline_sort<Policy, K, V, WithValues, Comp>(dev, n, true, algorithm);
    if (two.one_kernel || two.levels >= two.all_levels) return 0;
    const index_t w = two.bs_nv << two.levels;
    if (w <= 0 || w >= n) return 0;
    const sort_outline a = outline_sort<Policy, K, V, WithValues, Comp>(dev, w, false, algorithm);
    const sort_outline b = outline_sort<Policy, K, V, WithValues, Comp>(dev, n - w, false, algorithm);
    const bool same = !a.one_kernel && !b.one_kernel && a.passes <= two.passes && b.passes <= two.passes;
    return same ? w : 0;
  }
}

// What sorting a shard of n elements into runs makes: whether lm::multiway_merge takes four runs in one pass
// for these types (the sort's 4-way pass box: not keys of 8 bytes or more without values), and two_run_width
// (0: one run; asked only where two runs may pay).
struct runs_outline {
  bool four_way_merge = false;
  index_t two_run_width = 0;
};
template <class Policy, class K, class V, bool WithValues, class Comp>
runs_outline outline_runs(const device_info& dev, index_t n, bool two_runs, const char* algorithm) {
  runs_outline o;
  o.four_way_merge = with_four_way_box<Policy, K, V, WithValues, Comp>(dev, std::max<index_t>(n, 1), algorithm,
                                                                      [](auto) {});
  if (two_runs) o.two_run_width = two_run_width<Policy, K, V, WithValues, Comp>(dev, n, algorithm);
  return o;
}

}  // namespace libmerge::detail::cuda_backend
