// Device memory: a call's temporary storage, from the policy's allocator in
// stream order (no device-wide synchronization, except without memory pools),
// and the caller's ranges as checked device pointers (below).
#pragma once

#include <cuda.h>  // CUresult, CUcontext (context_id; no link to libcuda)
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <thrust/iterator/reverse_iterator.h>
#include <thrust/type_traits/unwrap_contiguous_iterator.h>

#include "../../libmerge/detail/checked.hpp"
#include "../../libmerge/detail/config.hpp"
#include "../../policies/cuda.hpp"
#include "runtime.cuh"

namespace libmerge::detail::gpu {

// What libmerge's pool keeps reserved (lm::cuda::set_pool_keep): a large sort's
// scratch given back every call is mapped again at the next.
// H200, 2^28 sorted keys: 2.16 ms given back, 0.62 kept (issue 26; docs/cuda-merge-sort.md)
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

// The current context's id (cuCtxGetId via the runtime's driver entry points,
// no libcuda link); 0 where unknown.
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

// LIBMERGE_NO_MEMORY_POOLS=1: no pools; =create: the pool cannot be made (tests).
inline const char* no_memory_pools_setting() {
  const char* off = std::getenv("LIBMERGE_NO_MEMORY_POOLS");
  return off != nullptr && *off != '\0' && *off != '0' ? off : nullptr;
}
inline bool refuses_pool_creation(const char* setting) {
  return setting != nullptr && std::strcmp(setting, "create") == 0;
}

// Relaxes the thread's capture mode while it lives: pool creation and
// cudaMemGetInfo are refused under capture but queue no work, so this is safe.
class relaxed_capture_mode {
 public:
  relaxed_capture_mode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~relaxed_capture_mode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  relaxed_capture_mode(const relaxed_capture_mode&) = delete;
  relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

// libmerge's pool per (device, context), made on first use: no reuse through
// internal dependencies (which serialize independent streams) and the release
// threshold above; by context since cudaDeviceReset. Null: use cudaMalloc.
inline cudaMemPool_t memory_pool(int device) {
  static std::mutex mutex;
  static std::map<std::pair<int, unsigned long long>, cudaMemPool_t> pools;  // (device, context) -> pool, or null
  std::lock_guard<std::mutex> lock(mutex);
  const unsigned long long before = context_id();
  auto it = pools.find({device, before});
  if (it != pools.end()) return it->second;
  relaxed_capture_mode relaxed;  // the first call may come inside a capture (not every call: two runtime calls)
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
  // Creating the pool may have made the context current: key it by that context.
  pools[{device, before != 0 ? before : context_id()}] = pool;
  return pool;
}

// Whether a device has stream-ordered memory pools (or LIBMERGE_NO_MEMORY_POOLS says not).
inline bool has_memory_pools(int device) {
  const char* off = no_memory_pools_setting();
  if (off != nullptr && !refuses_pool_creation(off)) return false;
  int supported = 0;
  check_cuda(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device), "temporary storage",
             "cudaDeviceGetAttribute(MemoryPoolsSupported)");
  return supported != 0;
}

// lm::cuda::pool_allocator: the stream's device's pool, in stream order; without
// pools, cudaMalloc and cudaFree, which synchronize the device.
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
    // Built only to throw: no heap allocation on the normal path.
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

// Iterators on their way into kernels: Thrust's contiguous iterators become raw
// pointers, each checked to be memory the device can reach, so that a host
// pointer is an exception naming the argument instead of a crash in a kernel.

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

// byte_range, range_of, check_disjoint: libmerge/detail/checked.hpp (rerun on Thrust's unwrapped iterators).

}  // namespace libmerge::detail::gpu

namespace libmerge::detail::cuda_backend {
using namespace gpu;
}  // namespace libmerge::detail::cuda_backend

namespace libmerge::cuda {

// The most memory libmerge's pool of the current device keeps reserved between
// calls (default: a quarter of the device's memory); freed memory above it goes
// back to the driver at the next synchronization. Applies to the current
// device's pool and every pool made from now on; 0 gives everything back.
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

// The bound as the current device's pool applies it (a pool made before the
// setting gets it only from set_pool_keep on its own device).
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

// Gives what libmerge's pool of the current device holds unused back to the
// driver now. Memory of calls still running is not freed: synchronize the
// streams libmerge ran on first.
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
