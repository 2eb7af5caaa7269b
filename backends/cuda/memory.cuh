// Temporary storage for one call, taken from the policy's allocator on the
// call's stream and given back in stream order: no device-wide synchronization.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "error.hpp"

namespace libmerge::detail::cuda_backend {

// libmerge's own stream-ordered memory pool, one per device, made on first use
// and kept for the life of the process. Two settings differ from the device's
// default pool:
//  - no reuse through internal dependencies: the default pool may hand a call
//    on stream 2 a block still pending free on stream 1 and make stream 2 wait
//    for stream 1, which would serialize independent streams;
//  - freed blocks stay in the pool (release threshold = max), so repeated calls
//    do not map and unmap memory. Temporary buffers are small (8 bytes per tile).
inline cudaMemPool_t memory_pool(int device) {
  static std::mutex mutex;
  static std::map<int, cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = pools.find(device);
  if (it != pools.end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool{};
  check_cuda(cudaMemPoolCreate(&pool, &props), "temporary storage", "cudaMemPoolCreate");
  int no = 0;
  std::uint64_t keep = ~std::uint64_t{0};
  check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no), "temporary storage",
             "cudaMemPoolSetAttribute");
  check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "temporary storage",
             "cudaMemPoolSetAttribute");
  pools.emplace(device, pool);
  return pool;
}

template <class Allocator>
class temporary_storage {
 public:
  temporary_storage(const Allocator& allocator, cudaStream_t stream, std::size_t bytes, const char* algorithm)
      : allocator_(allocator), stream_(stream), bytes_(bytes) {
    const std::string what = "allocating " + std::to_string(bytes) + " bytes of temporary storage";
    try {
      ptr_ = allocator_.allocate(bytes_, stream_);
    } catch (const cuda_error& e) {
      throw cuda_error(e.code(), algorithm, what);  // name the algorithm, keep the CUDA error
    }
    if (ptr_ == nullptr) throw cuda_error(cudaErrorMemoryAllocation, algorithm, what + " (allocator returned null)");
  }
  ~temporary_storage() {
    if (ptr_ != nullptr) allocator_.deallocate(ptr_, bytes_, stream_);
  }
  temporary_storage(const temporary_storage&) = delete;
  temporary_storage& operator=(const temporary_storage&) = delete;

  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  Allocator allocator_;
  cudaStream_t stream_;
  std::size_t bytes_;
  void* ptr_ = nullptr;
};

}  // namespace libmerge::detail::cuda_backend
