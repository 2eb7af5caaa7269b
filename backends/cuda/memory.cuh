// Temporary storage for one call, taken from the policy's allocator on the
// call's stream and given back in stream order: no device-wide synchronization
// (except on GPUs without stream-ordered memory pools, below).
#pragma once

#include <cuda.h>  // CUresult, CUcontext (context_id; no link to libcuda)
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "../../policies/cuda.hpp"
#include "device.cuh"
#include "error.hpp"

namespace libmerge::detail::cuda_backend {

// What libmerge's pool of a device keeps reserved after its calls: freed
// memory above this goes back to the driver at the next synchronization of a
// stream, event or the device. A large sort's scratch is as large as its
// input; given back after every call, it was mapped again at the next (a
// 2^28-key sort of sorted input on an H200: 2.16 ms with the scratch given
// back, 0.62 ms with it kept; issue 26). So the pool keeps up to a quarter of
// the device's memory unless told otherwise (lm::cuda::set_pool_keep below),
// and lm::cuda::release_pool_memory gives what is unused back at once.
inline constexpr std::uint64_t pool_keep_default = ~std::uint64_t(0);  // a quarter of the device's memory
inline std::atomic<std::uint64_t>& pool_keep_setting() {
  static std::atomic<std::uint64_t> bytes{pool_keep_default};
  return bytes;
}
inline std::uint64_t pool_keep_bytes() {
  const std::uint64_t set = pool_keep_setting().load();
  if (set != pool_keep_default) return set;
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return std::uint64_t(64) << 20;  // the device cannot say: the bound the pool had before issue 26
  }
  return total_bytes / 4;
}

// The unique id of the calling thread's current context (cuCtxGetId, CUDA
// 12.0 on, reached through the runtime's driver entry points: no link to
// libcuda); 0 where there is none yet or the driver cannot tell.
inline unsigned long long context_id() {
  using current_fn = CUresult (*)(CUcontext*);
  using id_fn = CUresult (*)(CUcontext, unsigned long long*);
  static const auto fns = [] {
    void* current = nullptr;
    void* id = nullptr;
#if CUDART_VERSION >= 12050
    cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &current, 12000, cudaEnableDefault, nullptr);
    cudaGetDriverEntryPointByVersion("cuCtxGetId", &id, 12000, cudaEnableDefault, nullptr);
#else
    cudaGetDriverEntryPoint("cuCtxGetCurrent", &current, cudaEnableDefault, nullptr);
    cudaGetDriverEntryPoint("cuCtxGetId", &id, cudaEnableDefault, nullptr);
#endif
    cudaGetLastError();  // a symbol the driver lacks leaves no stale error
    return std::make_pair(reinterpret_cast<current_fn>(current), reinterpret_cast<id_fn>(id));
  }();
  if (fns.first == nullptr || fns.second == nullptr) return 0;
  CUcontext ctx = nullptr;
  unsigned long long id = 0;
  if (fns.first(&ctx) != CUDA_SUCCESS || ctx == nullptr || fns.second(ctx, &id) != CUDA_SUCCESS) return 0;
  return id;
}

// LIBMERGE_NO_MEMORY_POOLS=1 pretends the device has no memory pools;
// LIBMERGE_NO_MEMORY_POOLS=create, that it has them but libmerge's pool cannot
// be made (cudaMemPoolCreate fails). Tests use them to cover the fallbacks.
// (Read at every allocation: one getenv, no string built.)
inline const char* no_memory_pools_setting() {
  const char* off = std::getenv("LIBMERGE_NO_MEMORY_POOLS");
  return off != nullptr && *off != '\0' && *off != '0' ? off : nullptr;
}
inline bool refuses_pool_creation(const char* setting) {
  return setting != nullptr && std::strcmp(setting, "create") == 0;
}

// Makes the calling thread's stream-capture mode relaxed while it lives.
// Creating a pool and cudaMemGetInfo are "potentially unsafe" calls that a
// global or thread-local capture refuses (and is invalidated by); they queue
// no stream work, so a first call inside a capture makes them relaxed, as the
// CUDA guide advises libraries to (cudaThreadExchangeStreamCaptureMode).
class relaxed_capture_mode {
 public:
  relaxed_capture_mode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~relaxed_capture_mode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  relaxed_capture_mode(const relaxed_capture_mode&) = delete;
  relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

// libmerge's own stream-ordered memory pool, one per device and context, made
// on first use. It differs from the device's default pool in two ways: no
// reuse through internal dependencies (the default pool may hand a call on
// stream 2 a block still pending free on stream 1 and make stream 2 wait for
// stream 1, which would serialize independent streams), and the release
// threshold above. A pool dies with its context: after
// cudaDeviceReset the device's new context gets a new pool (a pool cached by
// device alone was a dangling handle then). Null where the pool cannot be
// made although the device reports pools (the caller falls back to
// cudaMalloc, as on devices without pools).
inline cudaMemPool_t memory_pool(int device) {
  relaxed_capture_mode relaxed;  // the first call may come inside a capture
  static std::mutex mutex;
  static std::map<std::pair<int, unsigned long long>, cudaMemPool_t> pools;  // (device, context) -> pool, or null
  std::lock_guard<std::mutex> lock(mutex);
  const unsigned long long before = context_id();
  auto it = pools.find({device, before});
  if (it != pools.end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool{};
  int no = 0;
  std::uint64_t keep = pool_keep_bytes();
  if (refuses_pool_creation(no_memory_pools_setting()) || cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
    cudaGetLastError();
    pool = nullptr;
  } else if (cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no) != cudaSuccess ||
             cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess) {
    cudaGetLastError();
    cudaMemPoolDestroy(pool);
    pool = nullptr;
  }
  // Creating the pool may have made the context current (the first call on
  // a device): the key is the context it lives in.
  pools[{device, before != 0 ? before : context_id()}] = pool;
  return pool;
}

// Whether a device has stream-ordered memory pools (LIBMERGE_NO_MEMORY_POOLS
// above).
inline bool has_memory_pools(int device) {
  const char* off = no_memory_pools_setting();
  if (off != nullptr && !refuses_pool_creation(off)) return false;
  int supported = 0;
  check_cuda(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device), "temporary storage",
             "cudaDeviceGetAttribute(MemoryPoolsSupported)");
  return supported != 0;
}

// lm::cuda::pool_allocator: from the pool of the stream's device, in stream
// order. Without memory pools (old drivers, some virtualized GPUs, a pool that
// cannot be made): cudaMalloc and cudaFree, which synchronize the device, the
// only way left to allocate.
struct pool_storage {
  static void* allocate(std::size_t bytes, cudaStream_t stream, bool& pooled) {
    const int device = stream_device(stream, "temporary storage");
    void* p = nullptr;
    const cudaMemPool_t pool = has_memory_pools(device) ? memory_pool(device) : nullptr;
    pooled = pool != nullptr;
    if (pooled) {
      check_cuda(cudaMallocFromPoolAsync(&p, bytes, pool, stream), "temporary storage", "cudaMallocFromPoolAsync");
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
    // (Built only to throw: a string at every call was a heap allocation.)
    const auto what = [bytes] { return "allocating " + std::to_string(bytes) + " bytes of temporary storage"; };
    try {
      if constexpr (std::is_same_v<Allocator, cuda::pool_allocator>) {
        ptr_ = pool_storage::allocate(bytes_, stream_, pooled_);
      } else {
        ptr_ = allocator_.allocate(bytes_, stream_);
      }
    } catch (const cuda_error& e) {
      throw cuda_error(e.code(), algorithm, what());  // name the algorithm, keep the CUDA error
    }
    if (ptr_ == nullptr) throw cuda_error(cudaErrorMemoryAllocation, algorithm, what() + " (allocator returned null)");
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

namespace libmerge::cuda {

// The most memory libmerge's pool of the current device keeps reserved
// between calls (by default a quarter of the device's memory): a call's
// temporary storage comes from it without mapping memory again, and freed
// memory above the bound goes back to the driver at the next
// synchronization. Applies to the current device's pool and to every pool
// made from now on. 0 gives everything back at each synchronization.
inline void set_pool_keep(std::size_t bytes) {
  namespace cb = detail::cuda_backend;
  int device = 0;
  detail::check_cuda(cudaGetDevice(&device), "set_pool_keep", "cudaGetDevice");
  cb::pool_keep_setting().store(static_cast<std::uint64_t>(bytes));
  if (!cb::has_memory_pools(device)) return;
  std::uint64_t keep = bytes;
  if (const cudaMemPool_t pool = cb::memory_pool(device)) {
    detail::check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "set_pool_keep",
                   "cudaMemPoolSetAttribute(ReleaseThreshold)");
  }
}

// The bound above as the current device's pool applies it (the setting
// reaches a pool made before it only through set_pool_keep on that device).
inline std::size_t pool_keep() {
  namespace cb = detail::cuda_backend;
  int device = 0;
  detail::check_cuda(cudaGetDevice(&device), "pool_keep", "cudaGetDevice");
  if (cb::has_memory_pools(device)) {
    if (const cudaMemPool_t pool = cb::memory_pool(device)) {
      std::uint64_t keep = 0;
      detail::check_cuda(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "pool_keep",
                         "cudaMemPoolGetAttribute(ReleaseThreshold)");
      return static_cast<std::size_t>(keep);
    }
  }
  cb::relaxed_capture_mode relaxed;  // cudaMemGetInfo
  return static_cast<std::size_t>(cb::pool_keep_bytes());
}

// Gives the memory that libmerge's pool of the current device holds unused
// back to the driver now (cudaMemPoolTrimTo). Memory of calls still running
// is not freed: synchronize the streams libmerge ran on first to give back
// everything.
inline void release_pool_memory() {
  namespace cb = detail::cuda_backend;
  int device = 0;
  detail::check_cuda(cudaGetDevice(&device), "release_pool_memory", "cudaGetDevice");
  if (!cb::has_memory_pools(device)) return;
  if (const cudaMemPool_t pool = cb::memory_pool(device)) {
    detail::check_cuda(cudaMemPoolTrimTo(pool, 0), "release_pool_memory", "cudaMemPoolTrimTo");
  }
}

}  // namespace libmerge::cuda
