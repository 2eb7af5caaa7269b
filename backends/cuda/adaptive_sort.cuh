// lm::sort on the GPU: cub::DeviceRadixSort (stable) for integer and floating-point keys under lm::less /
// lm::greater (and cuda::std's). A look at the keys may find them sorted (nothing moves) or in reverse order
// (turned around); runs long enough for few merge passes and, among floats, a NaN (the radix sort orders NaNs
// by their bits; lm::less puts them last in input order) take the merge sort.
#pragma once

#include <cub/device/device_for.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cuda/std/functional>
#include <cuda/std/utility>

#include "merge_sort.cuh"
#include "precondition.cuh"

namespace libmerge::detail::cuda_backend {

// Keys the radix sort orders as Comp does: numbers (not bool) in their order
// or its reverse; floating-point ones once the look finds no NaN.
template <class Comp, class K>
inline constexpr bool radix_sortable_v = orders_numbers_v<Comp, K> && sizeof(K) <= 8;

template <class Comp>
struct descending_order : std::false_type {};
template <class T>
struct descending_order<libmerge::greater<T>> : std::true_type {};
template <class T>
struct descending_order<::cuda::std::greater<T>> : std::true_type {};

// Below this the merge sort (no wait for the host) is taken without a look at the keys; for keys of 4 bytes or
// more it is ahead of the radix sort there (H100, 2^20 int32: 0.079 ms against 0.085), but not for 4-byte
// integers with values (2^20 int32 pairs: 0.108 against 0.100).
template <class K, bool WithValues>
inline constexpr index_t radix_from =
    index_t(1) << (sizeof(K) == 4 && WithValues && std::is_integral_v<K> ? 20 : (sizeof(K) >= 4 ? 22 : 16));
// Integer keys take the radix sort without a look below 2^27 bytes: the look's wait for the host cost more
// than 5% there (H100, 2^24 int32: 0.453 ms against the radix sort's 0.429). Floating-point keys always look.
template <class K>
inline constexpr index_t look_from = std::is_floating_point_v<K> ? 0 : (index_t(1) << 27) / index_t(sizeof(K));
// Sorted runs of at least n / merge_sort_runs_max keys (at most 256 runs: four
// 4-way passes, under a radix sort's time for 4-byte keys) take the merge sort.
inline constexpr index_t merge_sort_runs_max = 256;

// Odd floats by the bits: a NaN (the radix sort orders NaNs by their bits, lm::less last in input order), a -0.0
// (the radix sort keeps it with 0.0 in input order, as lm::less, but a reversal of equal keys would swap them).
inline constexpr unsigned long long odd_nan = 1, odd_minus_zero = 2;
template <class K>
struct odd_float {
  __device__ unsigned long long operator()(K x) const {
    using bits_t = std::conditional_t<sizeof(K) == 8, unsigned long long, unsigned>;
    const bits_t sign = bits_t(1) << (8 * sizeof(K) - 1), inf = sizeof(K) == 8 ? 0x7ffull << 52 : 0xffu << 23;
    bits_t b;
    memcpy(&b, &x, sizeof b);
    return (b & ~sign) > inf ? odd_nan : (b == sign ? odd_minus_zero : 0);
  }
};

// Keys in reverse order (Strict: no ties either): a rise is a descent under it, which sorted_until finds.
template <bool Strict, class Comp>
struct falling {
  Comp comp;
  template <class K>
  __device__ bool operator()(const K& a, const K& b) const { return Strict ? !comp(a, b) : comp(b, a); }
};

// 1 where the pair at p(s) = s * (n - 1) / count rises (falling<Strict>): `count` evenly spaced pairs.
template <bool Strict, class K, class Comp>
struct rise_at {
  const K* keys;
  index_t n, count;
  falling<Strict, Comp> order;
  __device__ unsigned long long operator()(index_t s) const {
    const auto p = static_cast<index_t>(static_cast<unsigned long long>(s) * (n - 1) / count);
    return order(keys[p + 1], keys[p]);
  }
};

// Rises summed, odd floats' bits or-ed (Op) by CUB's reduction into out[0] (temp null: its storage's size to bytes).
template <class Op, class It>
void reduce_into(void* temp, std::size_t& bytes, It in, index_t n, unsigned long long* out, cudaStream_t stream,
                 const char* algorithm) {
  check_cuda(cub::DeviceReduce::Reduce(temp, bytes, in, out, n, Op{}, 0ull, stream), algorithm, "cub::DeviceReduce");
}

// What the look at the keys found: the gcd of the positions where keys[i + 1] comes before keys[i] (0:
// sorted; its read stops early once it is below `useful`); of rise_samples pairs evenly spaced (rise_at), how
// many rise; for floating-point keys which odd floats (odd_float's bits) are among them. Waited for.
inline constexpr index_t rise_samples = 1024;
struct key_look {
  unsigned long long runs, rises, odd;
};
template <bool Strict, class Policy, class K, class Comp>
key_look look_at_keys(const Policy& policy, const device_info& dev, const K* keys, index_t n, index_t useful,
                      Comp comp, const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  constexpr bool floating = std::is_floating_point_v<K>;
  const auto odd = thrust::make_transform_iterator(keys, odd_float<K>{});
  const index_t samples = std::min(rise_samples, n - 1);
  const auto rises = thrust::make_transform_iterator(thrust::counting_iterator<index_t>(0),
                                                     rise_at<Strict, K, Comp>{keys, n, samples, {comp}});
  std::size_t odd_bytes = 0, rise_bytes = 0;  // (the reductions' storage in front of the look's words)
  if constexpr (floating) reduce_into<::cuda::std::bit_or<>>(nullptr, odd_bytes, odd, n, nullptr, stream, algorithm);
  reduce_into<::cuda::std::plus<>>(nullptr, rise_bytes, rises, samples, nullptr, stream, algorithm);
  const std::size_t at = align_up(std::max(odd_bytes, rise_bytes), 16);
  temporary_storage<typename Policy::allocator_type> temp(policy.allocator(), stream, at + sizeof(key_look), algorithm);
  auto* found = reinterpret_cast<unsigned long long*>(temp.template as<unsigned char>() + at);
  launch_sortedness(keys, n, useful, sort_flags::at(found, 0, false), 0, comp, stream, dev, algorithm);
  void* const storage = temp.template as<void>();
  reduce_into<::cuda::std::plus<>>(storage, rise_bytes, rises, samples, found + 1, stream, algorithm);
  if constexpr (floating) reduce_into<::cuda::std::bit_or<>>(storage, odd_bytes, odd, n, found + 2, stream, algorithm);
  key_look look{0, 0, 0};
  check_cuda(cudaMemcpyAsync(&look, found, (floating ? 3 : 2) * sizeof *found, cudaMemcpyDeviceToHost, stream),
             algorithm, "cudaMemcpyAsync (the look at the keys)");
  check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (the look at the keys)");
  return look;
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
  const auto back = [&](void* to, const void* from, std::size_t size, const char* what) {
    const std::size_t bytes = size * static_cast<std::size_t>(n);
    if (from != to) check_cuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream), algorithm, what);
  };
  back(keys, k.Current(), sizeof(K), "cudaMemcpyAsync (the sorted keys)");
  if (WithValues) back(vals, v.Current(), sizeof(V), "cudaMemcpyAsync (the sorted values)");
}

// Keys (and values) in reverse: what a stable sort of keys in reverse order does (WithValues: strictly).
template <class K, class V, bool WithValues>
struct swap_ends {
  K* keys;
  V* vals;
  index_t n;
  __device__ void operator()(index_t i) const {
    ::cuda::std::swap(keys[i], keys[n - 1 - i]);
    if constexpr (WithValues) ::cuda::std::swap(vals[i], vals[n - 1 - i]);
  }
};

// What lm::sort does with the keys: integer keys below look_from take the radix sort without a look, the rest
// after a look at them, unless capturing a graph (no wait there: integers the radix sort, floating-point keys
// the merge sort). Keys in reverse order (every sample falls, then every pair; ties only without values and
// odd floats) are turned around.
enum class sort_method { merge, radix, nothing, reverse };
template <bool WithValues, class Policy, class K, class Comp>
sort_method pick_method(const Policy& policy, const device_info& dev, const K* keys, index_t n, Comp comp,
                        const char* algorithm) {
  if (n < radix_from<K, WithValues>) return sort_method::merge;
  if (is_capturing(policy.stream(), algorithm)) {
    return std::is_floating_point_v<K> ? sort_method::merge : sort_method::radix;
  }
  if (n < look_from<K>) return sort_method::radix;
  const index_t long_runs = (n + merge_sort_runs_max - 1) / merge_sort_runs_max;
  const key_look look = look_at_keys<WithValues>(policy, dev, keys, n, long_runs, comp, algorithm);
  if (look.runs == 0) return sort_method::nothing;  // a stable sort of sorted keys moves nothing
  // Every sample falls (without values ties may: equal keys have equal bits, once no float is odd): the checked
  // calls' scan for a first descent reads the rest.
  using scan = backend_impl<algo::precondition, backend::cuda>;
  const bool falls = look.rises == 0 && (WithValues || look.odd == 0);
  if (falls && scan::sorted_until(policy, keys, n, falling<WithValues, Comp>{comp}, algorithm, "first") == n) {
    return sort_method::reverse;
  }
  const bool long_sorted_runs = look.runs >= static_cast<unsigned long long>(long_runs);
  return long_sorted_runs || (look.odd & odd_nan) != 0 ? sort_method::merge : sort_method::radix;
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
    using V = std::conditional_t<with_values, std::remove_pointer_t<decltype(d_vals)>, char>;
    V* v = nullptr;
    if constexpr (with_values) v = d_vals;
    const sort_method method = pick_method<with_values>(policy, dev, d_keys, n, comp, algorithm);
    if (method == sort_method::radix) {
      radix_sort<descending_order<Comp>::value, Policy, K, V, with_values>(policy, d_keys, v, n, algorithm);
    } else if (method == sort_method::reverse) {
      check_cuda(cub::DeviceFor::Bulk(n / 2, swap_ends<K, V, with_values>{d_keys, v, n}, policy.stream()), algorithm,
                 "cub::DeviceFor::Bulk (keys in reverse)");
    }
    if (method != sort_method::merge) {
      if (policy.synchronizes() && method != sort_method::nothing) {
        check_cuda(cudaStreamSynchronize(policy.stream()), algorithm,
                   "cudaStreamSynchronize (a synchronous Thrust policy)");
      }
      return;
    }
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
