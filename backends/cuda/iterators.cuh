// Iterators on their way into kernels: Thrust's contiguous iterators become raw
// pointers, each checked to be memory the device can reach, so that a host
// pointer is an exception naming the argument instead of a crash in a kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <thrust/iterator/reverse_iterator.h>
#include <thrust/type_traits/unwrap_contiguous_iterator.h>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/detail/disjoint.hpp"
#include "../../libmerge/detail/dispatch.hpp"
#include "device.cuh"
#include "error.hpp"

namespace libmerge::detail::gpu {

// The pointer a kernel on the current device may use for `p` (mapped pinned host memory: its device alias),
// or std::invalid_argument for host memory it cannot reach or another device's (peer access is not relied on).
template <class T>
T* device_pointer(T* p, const device_info& dev, const char* algorithm, const char* name) {
  // Messages built only to throw: no heap allocation on the small calls' host path.
  const auto where = [&] { return std::string("libmerge::") + algorithm + ": " + name; };
  if (p == nullptr) throw std::invalid_argument(where() + " is a null pointer");
  cudaPointerAttributes attr{};
  const cudaError_t e = cudaPointerGetAttributes(&attr, p);
  if (e != cudaSuccess) check_cuda(e, algorithm, (std::string("cudaPointerGetAttributes(") + name + ")").c_str());
  switch (attr.type) {
    case cudaMemoryTypeManaged:
      return p;
    case cudaMemoryTypeDevice:
      if (attr.device != dev.device) {
        throw std::invalid_argument(where() + " points to memory of device " + std::to_string(attr.device) +
                                    ", but the call runs on device " + std::to_string(dev.device));
      }
      return p;
    case cudaMemoryTypeHost:
      if (attr.devicePointer != nullptr) return static_cast<T*>(attr.devicePointer);
      break;
    case cudaMemoryTypeUnregistered:
      if (dev.pageable_access) return p;
      break;
  }
  throw std::invalid_argument(where() +
                              " points to host memory the GPU cannot access; the CUDA backend needs device memory "
                              "(cudaMalloc, thrust::device_vector), managed or mapped host memory");
}

template <class It, class = void>
struct has_base : std::false_type {};
template <class It>
struct has_base<It, std::void_t<decltype(std::declval<const It&>().base())>> : std::true_type {};

template <class It>
struct is_reverse : std::false_type {};
template <class It>
struct is_reverse<thrust::reverse_iterator<It>> : std::true_type {};
template <class It>
struct is_reverse<std::reverse_iterator<It>> : std::true_type {};

// The memory under an adaptor: base() down to a contiguous iterator (checked) or no memory (a counting
// iterator). Not seen: iterators without base() (zip, permutation) and a functor's own pointers (docs/api.md).
template <class It>
void check_adapted(const It& it, const device_info& dev, const char* algorithm, const std::string& name) {
  if constexpr (has_base<It>::value) {
    using B = std::decay_t<decltype(it.base())>;
    if constexpr (std::is_pointer_v<B> || std::is_class_v<B>) {
      B b = it.base();
      if constexpr (is_reverse<It>::value) --b;  // a reverse range ends before its base
      auto raw = thrust::try_unwrap_contiguous_iterator(b);
      if constexpr (std::is_pointer_v<decltype(raw)>) {
        device_pointer(raw, dev, algorithm, name.c_str());
      } else {
        check_adapted(b, dev, algorithm, name);
      }
    }
  }
}

// The iterator a kernel receives for a user's iterator over `length` elements.
// An empty range is never read: its pointer may be anything (even null).
template <class It>
auto to_device(It it, index_t length, const device_info& dev, const char* algorithm, const char* name) {
  if constexpr (std::is_same_v<It, no_values>) {
    return it;
  } else {
    auto raw = thrust::try_unwrap_contiguous_iterator(it);
    if constexpr (std::is_pointer_v<decltype(raw)>) {
      if (length > 0) raw = device_pointer(raw, dev, algorithm, name);
    } else {
      if (length > 0) check_adapted(it, dev, algorithm, std::string(name) + " (the memory under its iterator)");
    }
    return raw;
  }
}

// byte_range, range_of, check_disjoint: libmerge/detail/disjoint.hpp (rerun on Thrust's unwrapped iterators).

}  // namespace libmerge::detail::gpu

namespace libmerge::detail::cuda_backend {
using namespace gpu;
}  // namespace libmerge::detail::cuda_backend
