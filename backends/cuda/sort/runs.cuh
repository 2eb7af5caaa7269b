// For the sort across GPUs (backends/nccl/merge_sort.cuh): a rank's local
// sort into runs, and the 4-way merge of the pieces it receives.
#pragma once

#include "../multiway.cuh"

namespace libmerge::detail::cuda_backend {

template <int = 0>
__global__ void store_width_kernel(long long* width, long long n) {
  *width = n;
}

// Sorts keys[0, n) (and vals) into into.keys (into.vals), the caller's buffers as scratch: one sorted run or
// two (runs_target), by the single-GPU sort's kernels. The one-kernel class sorts in place and is copied.
template <class Policy, class K, class V, bool WithValues, class Comp>
void sort_to_runs(const Policy& policy, K* keys, V* vals, index_t n, const runs_target<K, V>& into, Comp comp,
                  const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  const device_info& dev = current_device(algorithm, stream);
  if (n == 0) {
    launch_with(nullptr, store_width_kernel<>, 1, 1, 0, stream, algorithm, "launch of store_width_kernel", into.width,
                0LL);
    return;
  }
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
    launch_with(nullptr, store_width_kernel<>, 1, 1, 0, stream, algorithm, "launch of store_width_kernel",
                into.width, static_cast<long long>(n));
  }
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
      dev, algorithm, n, [&](auto bs_box, auto box, auto ways, auto four_way_log2, auto one_kernel) {
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

// Whether merge_four can merge (K, V) on this device: the tuning gives its
// sort 4-way passes (not keys of 8 bytes or more without values).
template <class Policy, class K, class V, bool WithValues, class Comp>
bool four_way_available(const device_info& dev, index_t n, const char* algorithm) {
  return with_four_way_box<Policy, K, V, WithValues, Comp>(dev, n, algorithm, [](auto) {});
}

// Merges four pieces (keys[at[k], at[k] + len[k]), values at the same offsets; empty allowed) into out_keys
// (out_vals), stable in piece order, in one 4-way pass (merge_groups): the receiving rank's merge of the sort
// across GPUs, in place of two 2-way levels.
template <class Policy, class K, class V, bool WithValues, class Comp>
void merge_four(const Policy& policy, const K* keys, const V* vals, const index_t (&at)[4], const index_t (&len)[4],
                K* out_keys, V* out_vals, Comp comp, const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  const device_info& dev = current_device(algorithm, stream);
  const index_t n = len[0] + len[1] + len[2] + len[3];
  if (n == 0) return;
  std::vector<run_group_job<K, V>> job(1, run_group_job<K, V>{{}, 0});
  for (int k = 0; k < 4; ++k) {
    job[0].runs.keys[k] = keys + at[k];
    job[0].runs.vals[k] = WithValues ? vals + at[k] : nullptr;
    job[0].runs.len[k] = len[k];
  }
  const bool four = with_four_way_box<Policy, K, V, WithValues, Comp>(dev, n, algorithm, [&](auto box) {
    using Box = decltype(box);
    temporary_storage<typename Policy::allocator_type> temp(policy.allocator(), stream,
                                                            run_groups_scratch<Box, K>(n).bytes, algorithm);
    merge_groups<Box, K, V, WithValues>(job, out_keys, out_vals, comp, temp.template as<unsigned char>(), stream, dev,
                                        algorithm);
  });
  if (!four) throw std::logic_error(std::string("libmerge::") + algorithm + ": no 4-way merge for these types");
}

}  // namespace libmerge::detail::cuda_backend
