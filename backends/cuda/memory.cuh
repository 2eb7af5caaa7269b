// Temporary storage for one call, taken from the policy's allocator on the
// call's stream and given back in stream order: no device-wide synchronization
// (except on GPUs without stream-ordered memory pools, below).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

#include "../../policies/cuda.hpp"
#include "error.hpp"

namespace libmerge::detail::cuda_backend {

// What libmerge's pool keeps for reuse after a call: freed blocks above this
// are returned to the driver at the next synchronization of the stream,
// event or device (merge sort's scratch is as large as its input, and must
// not stay reserved for the life of the process). Small temporaries (merge
// and search partitions) stay cached.
inline constexpr std::uint64_t pool_release_threshold = std::uint64_t(64) << 20;

// libmerge's own stream-ordered memory pool, one per device, made on first use
// and kept for the life of the process. It differs from the device's default
// pool in two ways: no reuse through internal dependencies (the default pool
// may hand a call on stream 2 a block still pending free on stream 1 and make
// stream 2 wait for stream 1, which would serialize independent streams), and
// the bounded release threshold above.
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
  std::uint64_t keep = pool_release_threshold;
  check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no), "temporary storage",
             "cudaMemPoolSetAttribute");
  check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "temporary storage",
             "cudaMemPoolSetAttribute");
  pools.emplace(device, pool);
  return pool;
}

// The device whose memory a stream's work uses: the stream's own device (the
// legacy and per-thread default streams belong to the current device).
inline int stream_device(cudaStream_t stream) {
  int device = 0;
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    check_cuda(cudaGetDevice(&device), "temporary storage", "cudaGetDevice");
  } else {
    check_cuda(cudaStreamGetDevice(stream, &device), "temporary storage", "cudaStreamGetDevice");
  }
  return device;
}

// Whether a device has stream-ordered memory pools; LIBMERGE_NO_MEMORY_POOLS=1
// pretends it has none (tests use it to cover the fallback).
inline bool has_memory_pools(int device) {
  const char* off = std::getenv("LIBMERGE_NO_MEMORY_POOLS");
  if (off != nullptr && *off != '\0' && *off != '0') return false;
  int supported = 0;
  check_cuda(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device), "temporary storage",
             "cudaDeviceGetAttribute(MemoryPoolsSupported)");
  return supported != 0;
}

// lm::cuda::pool_allocator: from the pool of the stream's device, in stream
// order. Without memory pools (old drivers, some virtualized GPUs): cudaMalloc
// and cudaFree, which synchronize the device, the only way left to allocate.
struct pool_storage {
  static void* allocate(std::size_t bytes, cudaStream_t stream, bool& pooled) {
    const int device = stream_device(stream);
    void* p = nullptr;
    pooled = has_memory_pools(device);
    if (pooled) {
      check_cuda(cudaMallocFromPoolAsync(&p, bytes, memory_pool(device), stream), "temporary storage",
                 "cudaMallocFromPoolAsync");
    } else {
      check_cuda(cudaMalloc(&p, bytes), "temporary storage", "cudaMalloc");
    }
    return p;
  }
  static void deallocate(void* p, cudaStream_t stream, bool pooled) noexcept {
    if (pooled) {
      cudaFreeAsync(p, stream);
    } else {
      cudaFree(p);  // waits for the work that uses p
    }
  }
};

template <class Allocator>
class temporary_storage {
 public:
  temporary_storage(const Allocator& allocator, cudaStream_t stream, std::size_t bytes, const char* algorithm)
      : allocator_(allocator), stream_(stream), bytes_(bytes) {
    const std::string what = "allocating " + std::to_string(bytes) + " bytes of temporary storage";
    try {
      if constexpr (std::is_same_v<Allocator, cuda::pool_allocator>) {
        ptr_ = pool_storage::allocate(bytes_, stream_, pooled_);
      } else {
        ptr_ = allocator_.allocate(bytes_, stream_);
      }
    } catch (const cuda_error& e) {
      throw cuda_error(e.code(), algorithm, what);  // name the algorithm, keep the CUDA error
    }
    if (ptr_ == nullptr) throw cuda_error(cudaErrorMemoryAllocation, algorithm, what + " (allocator returned null)");
  }
  ~temporary_storage() {
    if (ptr_ == nullptr) return;
    if constexpr (std::is_same_v<Allocator, cuda::pool_allocator>) {
      pool_storage::deallocate(ptr_, stream_, pooled_);
    } else {
      allocator_.deallocate(ptr_, bytes_, stream_);
    }
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
  bool pooled_ = false;
};

}  // namespace libmerge::detail::cuda_backend
