// A checked call's scans (libmerge/detail/checked.hpp) on the call's stream: a
// kernel for the input's first descent, and Thrust's find_if over the
// comparator's samples. Both wait: a checked call is synchronous up to the check.
#pragma once

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <thrust/find.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>

#include "../../libmerge/detail/checked.hpp"
#include "../../libmerge/detail/config.hpp"
#include "memory.cuh"
#include "runtime.cuh"

namespace libmerge::detail {

namespace cuda_backend {
// The first i in [1, n) with first[i] before first[i - 1], into *at (starting at the largest value): one
// grid-stride read (element i - 1 is the neighbour lane's i, a cache hit), each thread to its first descent.
// H100, 2^27 int32: under a ms, where Thrust's is_sorted_until took 29 (docs/cuda-merge-sort.md)
inline constexpr int scan_threads = 256;

// Elements a thread compares a step, all loaded first: 32 bytes in flight a thread (one int32: latency-bound).
// H200, checked merge of 2^28 int32: 1.50x the plain one, from 1.76x (docs/cuda-merge-sort.md)
template <class T>
inline constexpr int scan_items = sizeof(T) >= 32 ? 1 : (sizeof(T) >= 8 ? static_cast<int>(32 / sizeof(T)) : 8);
// Elements a CTA compares a step (the stride unit and the launch's divisor).
template <class T>
inline constexpr index_t scan_tile = static_cast<index_t>(scan_threads) * scan_items<T>;

template <class It, class Comp>
__global__ void __launch_bounds__(scan_threads)
    first_descent_kernel(It first, index_t n, Comp comp, unsigned long long* at) {
  using T = typename std::iterator_traits<It>::value_type;
  constexpr int items = scan_items<T>;
  constexpr index_t tile = scan_tile<T>;
  for (index_t base = static_cast<index_t>(blockIdx.x) * tile; base < n;
       base += static_cast<index_t>(gridDim.x) * tile) {
    // Element k: base + k x scan_threads + threadIdx.x, a coalesced read a warp.
    bool descends[items];
#pragma unroll
    for (int k = 0; k < items; ++k) {
      const index_t i = base + static_cast<index_t>(k) * scan_threads + threadIdx.x;
      descends[k] = i >= 1 && i < n && comp(first[i], first[i - 1]);
    }
#pragma unroll
    for (int k = 0; k < items; ++k) {
      if (descends[k]) {
        atomicMin(at, static_cast<unsigned long long>(base + static_cast<index_t>(k) * scan_threads + threadIdx.x));
        return;
      }
    }
  }
}

template <class It, class Comp>
struct breaks_ordering {
  It first;
  index_t n;
  Comp comp;
  __host__ __device__ bool operator()(index_t j) const {
    Comp c = comp;
    return comparator_violation(first, n, j, c) != 0;
  }
};

// A checked call waits for its checks' answer, which a capture cannot give.
inline constexpr const char* checked_capture_refusal =
    "a checked call (.checked()) cannot be captured into a CUDA graph: it reads its checks' answer back to the host; "
    "capture the unchecked call";
}  // namespace cuda_backend

template <>
struct backend_impl<algo::precondition, backend::cuda> {
  static constexpr bool available = true;

  template <class Policy, class It, class Comp>
  static index_t sorted_until(const Policy& policy, It first, index_t n, Comp comp, const char* algorithm,
                              const char* name) {
    using namespace cuda_backend;
    const cudaStream_t stream = policy.stream();
    refuse_capture(stream, algorithm, checked_capture_refusal);
    const device_info& dev = current_device(algorithm, stream);
    const auto d = to_device(first, n, dev, algorithm, name);  // checked like the algorithm's own arguments
    temporary_storage<typename Policy::allocator_type> at(policy.allocator(), stream, sizeof(unsigned long long),
                                                          algorithm);
    unsigned long long* d_at = at.template as<unsigned long long>();
    check_cuda(cudaMemsetAsync(d_at, 0xff, sizeof(unsigned long long), stream), algorithm,
               "cudaMemsetAsync (the checked call's scan)");
    using D = std::decay_t<decltype(d)>;
    const index_t tile = scan_tile<typename std::iterator_traits<D>::value_type>;
    const index_t blocks = std::min<index_t>((n + tile - 1) / tile, static_cast<index_t>(dev.sms) * 8);
    launch_with(nullptr, first_descent_kernel<D, Comp>, blocks, scan_threads, 0, stream,
                algorithm, "launch of the checked call's sortedness scan", d, n, comp, d_at);
    unsigned long long until = 0;
    check_cuda(cudaMemcpyAsync(&until, d_at, sizeof until, cudaMemcpyDeviceToHost, stream), algorithm,
               "cudaMemcpyAsync (the checked call's scan)");
    check_cuda(cudaStreamSynchronize(stream), algorithm, "waiting for the checked call's scan");
    return until < static_cast<unsigned long long>(n) ? static_cast<index_t>(until) : n;
  }

  template <class Policy, class It, class Comp>
  // The rule broken is not reported: the keys are device memory.
  static sample_violation bad_sample(const Policy& policy, It first, index_t n, Comp comp, const char* algorithm,
                                     const char* name) {
    using namespace cuda_backend;
    refuse_capture(policy.stream(), algorithm, checked_capture_refusal);
    const auto d = to_device(first, n, current_device(algorithm, policy.stream()), algorithm, name);
    const index_t m = sample_count(n);
    const thrust::counting_iterator<index_t> samples(0);
    try {
      const index_t j = *thrust::find_if(thrust::cuda::par.on(policy.stream()), samples, samples + m,
                                         breaks_ordering<decltype(d), Comp>{d, n, comp});
      if (j == m) return {};
      return {j, 0};
    } catch (const thrust::system_error& e) {
      throw cuda_error(static_cast<cudaError_t>(e.code().value()), algorithm, "the checked call's comparator scan");
    }
  }
};

}  // namespace libmerge::detail
