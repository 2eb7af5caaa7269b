// lm::cuda::par: run on the current CUDA device, on a stream, with the CUDA
// backend (Thrust's CUDA policies too: policies/thrust.hpp). A policy is plain
// data: this file includes nothing from backends/.
//
//   lm::cuda::par                          default stream, tuned launch boxes,
//                                          stream-ordered temporary storage
//   lm::cuda::par.on(stream)               another stream
//   lm::cuda::par.with(lm::launch_box<64, 3>{})   one call's own launch box
//   lm::cuda::par.with(box1, box2)         merge_sort: block-sort box, merge box
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

#include "../libmerge/detail/checked.hpp"
#include "../libmerge/detail/config.hpp"
#include "launch_box.hpp"

namespace libmerge::cuda {

// The default allocator: stream-ordered, from libmerge's pool of the stream's
// device, so temporary storage never synchronizes the device (docs/api.md).
// A tag: backends/cuda/memory.cuh does the work.
struct pool_allocator {};

template <class Box = tuned_launch_box, class Allocator = pool_allocator>
class policy {
 public:
  using backend_tag = backend::cuda;
  using box_type = Box;
  using allocator_type = Allocator;

  constexpr policy() = default;
  constexpr policy(cudaStream_t stream, Allocator allocator, bool synchronize = false)
      : stream_(stream), allocator_(allocator), synchronize_(synchronize) {}

  policy on(cudaStream_t stream) const { return policy(stream, allocator_, synchronize_); }

  // A fixed launch box for every kernel of the call.
  template <int NT, int VT>
  policy<launch_box<NT, VT>, Allocator> with(launch_box<NT, VT>) const {
    return {stream_, allocator_, synchronize_};
  }

  // merge_sort's block-sort box and merge-pass box (other algorithms: the second).
  template <int NT1, int VT1, int NT2, int VT2>
  policy<launch_boxes<launch_box<NT1, VT1>, launch_box<NT2, VT2>>, Allocator> with(launch_box<NT1, VT1>,
                                                                                  launch_box<NT2, VT2>) const {
    return {stream_, allocator_, synchronize_};
  }
  // The same with the merge passes' way count: .with(lm::launch_boxes<B1, B2, 4>{}).
  template <class B1, class B2, int Ways>
  policy<launch_boxes<B1, B2, Ways>, Allocator> with(launch_boxes<B1, B2, Ways>) const {
    return {stream_, allocator_, synchronize_};
  }

  template <class A>
  policy<Box, A> with_allocator(A allocator) const {
    return {stream_, allocator, synchronize_};
  }

  // Every call's preconditions checked first (a wait for the answer); set it last.
  checked_policy<policy> checked() const { return checked_policy<policy>(*this); }

  cudaStream_t stream() const { return stream_; }
  const Allocator& allocator() const { return allocator_; }
  // Whether a call waits for its stream before returning: only for Thrust's
  // synchronous policies (thrust::device, thrust::cuda::par).
  bool synchronizes() const { return synchronize_; }

 private:
  cudaStream_t stream_ = nullptr;
  Allocator allocator_{};
  bool synchronize_ = false;
};

inline constexpr policy<> par{};

}  // namespace libmerge::cuda
