// lm::sort on the GPU: cub::DeviceRadixSort (stable) for integer keys under lm::less / lm::greater (and
// cuda::std's), unless sortedness_kernel finds them sorted or in runs long enough for few merge passes;
// the rest take the merge sort. Floating-point keys too: the radix sort orders NaNs by their bits, lm::less
// puts them last in input order.
#pragma once

#include <cub/device/device_radix_sort.cuh>

#include "merge_sort.cuh"

namespace libmerge::detail::cuda_backend {

// Keys the radix sort orders as Comp does: integers (not bool) in their order
// or its reverse.
template <class Comp, class K>
inline constexpr bool radix_sortable_v = orders_numbers_v<Comp, K> && std::is_integral_v<K>;

template <class Comp>
struct descending_order : std::false_type {};
template <class T>
struct descending_order<libmerge::greater<T>> : std::true_type {};
template <class T>
struct descending_order<::cuda::std::greater<T>> : std::true_type {};

// Below this the merge sort (no wait for the host) is taken without a look at the keys; for keys of 4 bytes or
// more it is ahead of the radix sort there even before the wait (H100, 2^20 int32: 0.079 ms against 0.085).
template <class K>
inline constexpr index_t radix_from = index_t(1) << (sizeof(K) >= 4 ? 22 : 16);
// Sorted runs of at least n / merge_sort_runs_max keys (at most 256 runs: four
// 4-way passes, under a radix sort's time for 4-byte keys) take the merge sort.
inline constexpr index_t merge_sort_runs_max = 256;

// The gcd of the positions where keys[i + 1] comes before keys[i] (0: sorted),
// read back to the host; the read stops early once it is below `useful`.
template <class Policy, class K, class Comp>
unsigned long long descent_gcd(const Policy& policy, const device_info& dev, const K* keys, index_t n, index_t useful,
                               Comp comp, const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  temporary_storage<typename Policy::allocator_type> temp(policy.allocator(), stream, sort_flags::bytes(0, false),
                                                          algorithm);
  const sort_flags flags = sort_flags::at(temp.template as<unsigned char>(), 0, false);
  launch_sortedness(keys, n, useful, flags, 0, comp, stream, dev, algorithm);
  unsigned long long runs = 0;
  check_cuda(cudaMemcpyAsync(&runs, flags.runs, sizeof runs, cudaMemcpyDeviceToHost, stream), algorithm,
             "cudaMemcpyAsync (the sortedness read)");
  check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (the sortedness read)");
  return runs;
}

// keys[0, n) (and vals) sorted by CUB's radix sort, through a second buffer of
// the policy's allocator; the result copied back where CUB leaves it there.
template <bool Descending, class Policy, class K, class V, bool WithValues>
void radix_sort(const Policy& policy, K* keys, V* vals, index_t n, const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  const std::size_t key_bytes = bytes_of<K>(n), val_bytes = WithValues ? bytes_of<V>(n) : 0;
  cub::DoubleBuffer<K> k(keys, nullptr);
  cub::DoubleBuffer<V> v(vals, nullptr);
  constexpr int bits = static_cast<int>(sizeof(K) * 8);
  const auto run = [&](void* temp, std::size_t& bytes) {
    if constexpr (WithValues && Descending) {
      return cub::DeviceRadixSort::SortPairsDescending(temp, bytes, k, v, n, 0, bits, stream);
    } else if constexpr (WithValues) {
      return cub::DeviceRadixSort::SortPairs(temp, bytes, k, v, n, 0, bits, stream);
    } else if constexpr (Descending) {
      return cub::DeviceRadixSort::SortKeysDescending(temp, bytes, k, n, 0, bits, stream);
    } else {
      return cub::DeviceRadixSort::SortKeys(temp, bytes, k, n, 0, bits, stream);
    }
  };
  std::size_t cub_bytes = 0;
  check_cuda(run(nullptr, cub_bytes), algorithm, "cub::DeviceRadixSort (temporary storage size)");
  temporary_storage<typename Policy::allocator_type> temp(policy.allocator(), stream,
                                                          key_bytes + val_bytes + cub_bytes, algorithm);
  unsigned char* t = temp.template as<unsigned char>();
  k = cub::DoubleBuffer<K>(keys, reinterpret_cast<K*>(t));
  if constexpr (WithValues) v = cub::DoubleBuffer<V>(vals, reinterpret_cast<V*>(t + key_bytes));
  check_cuda(run(t + key_bytes + val_bytes, cub_bytes), algorithm, "cub::DeviceRadixSort");
  if (k.Current() != keys) {
    check_cuda(cudaMemcpyAsync(keys, k.Current(), sizeof(K) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice,
                               stream),
               algorithm, "cudaMemcpyAsync (the sorted keys)");
  }
  if (WithValues && v.Current() != vals) {
    check_cuda(cudaMemcpyAsync(vals, v.Current(), sizeof(V) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice,
                               stream),
               algorithm, "cudaMemcpyAsync (the sorted values)");
  }
}

// Whether lm::sort takes the radix sort: a look at the keys first, unless capturing a graph (no wait there:
// the radix sort, whatever the keys). *sorted: the look found them sorted.
template <class Policy, class K, class Comp>
bool radix_pays(const Policy& policy, const device_info& dev, const K* keys, index_t n, Comp comp, bool* sorted,
                const char* algorithm) {
  if (n < radix_from<K>) return false;
  if (is_capturing(policy.stream(), algorithm)) return true;
  const index_t long_runs = (n + merge_sort_runs_max - 1) / merge_sort_runs_max;
  const unsigned long long runs = descent_gcd(policy, dev, keys, n, long_runs, comp, algorithm);
  *sorted = runs == 0;
  return runs != 0 && runs < static_cast<unsigned long long>(long_runs);
}

template <class Policy, class KeysIt, class ValsIt, class Comp>
void sort(const Policy& policy, KeysIt keys, index_t n, ValsIt vals, Comp comp) {
  constexpr bool with_values = has_values<ValsIt>;
  const char* algorithm = with_values ? "sort_by_key" : "sort";
  const device_info& dev = current_device(algorithm, policy.stream());
  const auto d_keys = to_device(keys, n, dev, algorithm, with_values ? "keys_first" : "first");
  const auto d_vals = to_device(vals, n, dev, algorithm, "values_first");
  using K = std::remove_pointer_t<decltype(d_keys)>;
  if constexpr (std::is_pointer_v<decltype(d_keys)> && radix_sortable_v<Comp, K> && !std::is_const_v<K> &&
                (!with_values || std::is_pointer_v<decltype(d_vals)>)) {
    bool sorted = false;
    if (radix_pays(policy, dev, d_keys, n, comp, &sorted, algorithm)) {
      using V = std::conditional_t<with_values, std::remove_pointer_t<decltype(d_vals)>, char>;
      V* v = nullptr;
      if constexpr (with_values) v = d_vals;
      radix_sort<descending_order<Comp>::value, Policy, K, V, with_values>(policy, d_keys, v, n, algorithm);
      if (policy.synchronizes()) {
        check_cuda(cudaStreamSynchronize(policy.stream()), algorithm,
                   "cudaStreamSynchronize (a synchronous Thrust policy)");
      }
      return;
    }
    if (sorted) return;  // a stable sort of sorted keys moves nothing
  }
  merge_sort(policy, keys, n, vals, vals, comp);
}

}  // namespace libmerge::detail::cuda_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::sort, backend::cuda> {
  static constexpr bool available = true;

  template <class Policy, class... Args>
  static void run(const Policy& policy, Args... args) {
    cuda_backend::sort(policy, args...);
  }
};

}  // namespace libmerge::detail
