// lm::cuda::par: run on the current CUDA device, on a stream, with the CUDA
// backend. Thrust's CUDA policies (thrust::device, thrust::cuda::par.on(s))
// select the same backend, so libmerge calls are drop-ins for Thrust's.
//
//   lm::cuda::par                          default stream, tuned launch boxes,
//                                          stream-ordered temporary storage
//   lm::cuda::par.on(stream)               another stream
//   lm::cuda::par.with(lm::launch_box<64, 3>{})   one call's own launch box
//   lm::cuda::par.with_allocator(alloc)    temporary storage from alloc
//
// An allocator is any copyable object with
//   void* allocate(std::size_t bytes, cudaStream_t stream);
//   void deallocate(void* p, std::size_t bytes, cudaStream_t stream) noexcept;
// Memory it returns must be usable by work on `stream` in stream order.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include <thrust/detail/execute_with_allocator_fwd.h>
#include <thrust/system/cuda/detail/util.h>
#include <thrust/system/cuda/execution_policy.h>

#include "../backends/cuda/error.hpp"
#include "../backends/cuda/memory.cuh"
#include "../libmerge/detail/dispatch.hpp"
#include "launch_box.hpp"

namespace libmerge::cuda {

// The default: stream-ordered allocation (cudaMallocFromPoolAsync /
// cudaFreeAsync on the call's stream) from libmerge's pool for the current
// device, so that temporary storage never synchronizes the device and calls on
// different streams never wait for each other (backends/cuda/memory.cuh).
struct async_allocator {
  void* allocate(std::size_t bytes, cudaStream_t stream) const {
    int device = 0;
    detail::check_cuda(cudaGetDevice(&device), "temporary storage", "cudaGetDevice");
    void* p = nullptr;
    detail::check_cuda(cudaMallocFromPoolAsync(&p, bytes, detail::cuda_backend::memory_pool(device), stream),
                       "temporary storage", "cudaMallocFromPoolAsync");
    return p;
  }
  void deallocate(void* p, std::size_t, cudaStream_t stream) const noexcept {
    cudaFreeAsync(p, stream);
  }
};

template <class Box = tuned_launch_box, class Allocator = async_allocator>
class policy {
 public:
  using backend_tag = backend::cuda;
  using box_type = Box;
  using allocator_type = Allocator;

  constexpr policy() = default;
  constexpr policy(cudaStream_t stream, Allocator allocator, bool synchronize = false)
      : stream_(stream), allocator_(allocator), synchronize_(synchronize) {}

  // The same policy on another stream.
  policy on(cudaStream_t stream) const { return policy(stream, allocator_, synchronize_); }

  // The same policy with a fixed launch box for every kernel of the call.
  template <int NT, int VT>
  policy<launch_box<NT, VT>, Allocator> with(launch_box<NT, VT>) const {
    return {stream_, allocator_, synchronize_};
  }

  // The same policy taking temporary storage from `allocator`.
  template <class A>
  policy<Box, A> with_allocator(A allocator) const {
    return {stream_, allocator, synchronize_};
  }

  cudaStream_t stream() const { return stream_; }
  const Allocator& allocator() const { return allocator_; }
  // Whether a call waits for its stream before returning: false for
  // lm::cuda::par (calls are asynchronous), true when the policy stands for
  // one of Thrust's synchronous policies (thrust::device, thrust::cuda::par).
  bool synchronizes() const { return synchronize_; }

 private:
  cudaStream_t stream_ = nullptr;
  Allocator allocator_{};
  bool synchronize_ = false;
};

inline constexpr policy<> par{};

}  // namespace libmerge::cuda

namespace libmerge::detail {

template <class P>
struct is_thrust_policy_with_allocator : std::false_type {};
template <class A, template <class> class Base>
struct is_thrust_policy_with_allocator<thrust::detail::execute_with_allocator<A, Base>> : std::true_type {};

// Thrust's CUDA policies run on the CUDA backend with their stream and their
// synchronization: thrust::device and thrust::cuda::par wait for the stream at
// the end of an algorithm, thrust::cuda::par_nosync does not, and libmerge
// does the same, so lm::merge(thrust::device, ...) is a drop-in for
// thrust::merge(thrust::device, ...).
template <class P>
struct policy_adapter<P, std::enable_if_t<std::is_base_of_v<thrust::cuda_cub::execution_policy<P>, P>>> {
  static_assert(!is_thrust_policy_with_allocator<P>::value,
                "libmerge: Thrust policies that carry their own allocator (thrust::cuda::par(alloc)) are not "
                "supported; pass lm::cuda::par.on(stream).with_allocator(a) instead");
  static constexpr bool is_policy = true;
  static cuda::policy<> adapt(const P& p) {
    P copy = p;  // thrust's accessors take a non-const reference
    return cuda::policy<>(thrust::cuda_cub::stream(copy), cuda::async_allocator{},
                          thrust::cuda_cub::must_perform_optional_synchronization(copy));
  }
};

}  // namespace libmerge::detail
