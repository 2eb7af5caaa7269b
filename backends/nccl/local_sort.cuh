// Step 2 of the NCCL sort (merge_sort.cuh): the local sort into runs, and
// restore_shard for later failures.
#pragma once

#include "plan.cuh"

namespace libmerge::detail::nccl_backend {

template <int = 0>
__global__ void store_width_kernel(long long* width, long long n) {
  *width = n;
}

// The first run's length W, where the splitter search reads it (the local sort's
// kernels write it when W is known only on the device; sort_into_runs).
template <class K, class V>
void store_width(rank_state<K, V>& s, long long w, const char* algorithm) {
  gpu::launch_with(nullptr, store_width_kernel<>, 1, 1, 0, s.stream, algorithm, "launch of store_width_kernel",
                   s.search.width, w);
}

// The local sort (scratch: the caller's shard) and the exchange's buffers; a
// failure becomes the rank's status (check_cuts). Early round: first run only.
template <bool WithValues, class K, class V, class Comp>
long long sort_rank(rank_state<K, V>& s, int world, const header* all, const call_plan& plan, Comp comp,
                    const char* algorithm) {
  try {
    check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
    const local_policy par = cuda::par.on(s.stream);
    if (s.shard.n > 0) {
      // The runs and the slots with margins (plan_pieces; early: layout_early).
      const std::size_t n = static_cast<std::size_t>(s.shard.n);
      const std::size_t margin = slot_margin<K, V, WithValues>();
      std::size_t received = n;
      if (plan.early) {
        const early_layout e = layout_early(s.rank, all, world, margin);
        s.mirror = e.mirror;
        s.slots = e.slots;
        s.half = all[s.rank].half;
        received = static_cast<std::size_t>(e.slots - static_cast<long long>(n) + e.slot_room);
      }
      const std::size_t elements = n + received + static_cast<std::size_t>(plan.pieces(world)) *
                                                      static_cast<std::size_t>(plan.chunks) * (2 * margin + 16);
      const std::size_t keys = align_wire(elements * sizeof(K)), vals = WithValues ? align_wire(elements * sizeof(V)) : 0;
      fail_point(s.fault, fault_at::big, algorithm);
      s.big.emplace(cuda::pool_allocator{}, s.stream, keys + vals, algorithm);
      char* p = s.big->template as<char>();
      s.keys = reinterpret_cast<K*>(p);
      if constexpr (WithValues) s.vals = reinterpret_cast<V*>(p + keys);
    }
    fail_point(s.fault, fault_at::local_sort, algorithm);
    const long long width = cuda_backend::sort_into_runs<local_policy, K, V, WithValues>(
        par, s.shard.keys, s.shard.vals, plan.early ? s.half : s.shard.n,
        cuda_backend::runs_target<K, V>{s.keys, s.vals, !plan.early && plan.runs == 2, s.search.width}, comp,
        algorithm);
    if (width >= 0) store_width(s, width, algorithm);
    (plan.early ? s.first_sorted : s.sorted) = true;
    // Made now, while the GPU sorts: after host wait 2 they delay the first round.
    open_exchange(s, plan, algorithm);
    return 0;
  } catch (...) {
    s.error = std::current_exception();
    return 1;
  }
}

// The early round's second sort of [W, n), then W as the first run's length.
template <bool WithValues, class K, class V, class Comp>
long long sort_second(rank_state<K, V>& s, Comp comp, const char* algorithm) {
  if (s.error) return 1;
  try {
    check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
    const long long w = s.half;
    cuda_backend::sort_into_runs<local_policy, K, V, WithValues>(
        cuda::par.on(s.stream), s.shard.keys + w, WithValues ? s.shard.vals + w : s.shard.vals, s.shard.n - w,
        cuda_backend::runs_target<K, V>{s.keys + w, WithValues ? s.vals + w : s.vals, false, nullptr}, comp,
        algorithm);
    store_width(s, w, algorithm);
    s.sorted = true;
    check_cuda(cudaEventRecord(s.events[0], s.stream), algorithm, "cudaEventRecord");
    return 0;
  } catch (...) {
    s.error = std::current_exception();
    return 1;
  }
}

// restore_shard where the early round's second sort failed: the first run
// back into [0, W) of the shard (its scratch), then the shard sorted.
template <bool WithValues, class K, class V, class Comp>
void restore_first_run(rank_state<K, V>& s, Comp comp) noexcept {
  try {
    cudaSetDevice(s.device);
    if (s.exchange_stream != nullptr) cudaStreamSynchronize(s.exchange_stream);
    cudaGetLastError();
    const std::size_t w = static_cast<std::size_t>(s.half);
    if (cudaMemcpyAsync(s.shard.keys, s.keys, sizeof(K) * w, cudaMemcpyDeviceToDevice, s.stream) != cudaSuccess) return;
    if constexpr (WithValues) {
      if (cudaMemcpyAsync(s.shard.vals, s.vals, sizeof(V) * w, cudaMemcpyDeviceToDevice, s.stream) != cudaSuccess) {
        return;
      }
    }
    const local_policy par = cuda::par.on(s.stream);
    if constexpr (WithValues) {
      libmerge::merge_sort_by_key(par, s.shard.keys, s.shard.keys + s.shard.n, s.shard.vals, comp);
    } else {
      libmerge::merge_sort(par, s.shard.keys, s.shard.keys + s.shard.n, comp);
    }
    cudaStreamSynchronize(s.stream);
  } catch (...) {
    cudaGetLastError();
  }
}

// Puts a rank's own elements back into its shard, sorted, after a failure
// (best effort: a failed device cannot be helped).
template <bool WithValues, class K, class V, class Comp>
void restore_shard(rank_state<K, V>& s, Comp comp) noexcept {
  if (s.shard.n == 0) return;
  if (!s.sorted && s.first_sorted) return restore_first_run<WithValues>(s, comp);
  if (!s.sorted) return;
  try {
    cudaSetDevice(s.device);
    if (s.exchange_stream != nullptr) cudaStreamSynchronize(s.exchange_stream);
    long long w = s.shard.n;
    if (cudaMemcpyAsync(&w, s.search.width, sizeof(w), cudaMemcpyDeviceToHost, s.stream) != cudaSuccess ||
        cudaStreamSynchronize(s.stream) != cudaSuccess) {
      return;
    }
    w = std::clamp<long long>(w, 0, s.shard.n);
    const local_policy par = cuda::par.on(s.stream);
    const K* k = s.keys;
    try {
      if constexpr (WithValues) {
        libmerge::merge_by_key(par, k, k + w, k + w, k + s.shard.n, s.vals, s.vals + w, s.shard.keys, s.shard.vals,
                               comp);
      } else {
        libmerge::merge(par, k, k + w, k + w, k + s.shard.n, s.shard.keys, comp);
      }
    } catch (...) {
      // The merge could not start: copy the two sorted runs back as they are.
      cudaGetLastError();
      cudaMemcpyAsync(s.shard.keys, s.keys, sizeof(K) * static_cast<std::size_t>(s.shard.n), cudaMemcpyDeviceToDevice,
                      s.stream);
      if constexpr (WithValues) {
        cudaMemcpyAsync(s.shard.vals, s.vals, sizeof(V) * static_cast<std::size_t>(s.shard.n),
                        cudaMemcpyDeviceToDevice, s.stream);
      }
    }
    cudaStreamSynchronize(s.stream);
  } catch (...) {
  }
}

}  // namespace libmerge::detail::nccl_backend
