// The runtime layer (namespace gpu) that the CUDA and NCCL backends share, and
// cuda_backend sees whole: every CUDA error as an lm::cuda_error naming the
// algorithm and the step; what the backend needs to know about a device,
// looked up once and cached; and every launch: the box a call uses (the
// policy's, or the tuned line of the kernel's compiled architecture, asked of
// each kernel), PDL where available, debug printout. (memory.cuh: storage.)
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <cuda/std/functional>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/functional.hpp"
#include "../../policies/cuda.hpp"

namespace libmerge {

class cuda_error : public std::runtime_error {
 public:
  cuda_error(cudaError_t code, const std::string& algorithm, const std::string& what)
      : std::runtime_error("libmerge::" + algorithm + ": " + what + ": " + cudaGetErrorName(code) + " (" +
                           cudaGetErrorString(code) + ")"),
        code_(code),
        algorithm_(algorithm) {}

  cudaError_t code() const noexcept { return code_; }
  const std::string& algorithm() const noexcept { return algorithm_; }

 protected:
  // For failures that are not a CUDA runtime call's (NCCL's, in nccl_error):
  // the message as given.
  struct preformatted {};
  cuda_error(preformatted, cudaError_t code, const std::string& algorithm, const std::string& message)
      : std::runtime_error(message), code_(code), algorithm_(algorithm) {}

 private:
  cudaError_t code_;
  std::string algorithm_;
};

namespace detail {

// Throws for a failed call, first taking the error off the thread's last-error
// slot, so neither a later check nor the caller's next CUDA call trips over it;
// sticky errors (a fault inside a kernel) stay, as they must.
inline void check_cuda(cudaError_t code, const char* algorithm, const char* what) {
  if (code != cudaSuccess) {
    cudaGetLastError();
    throw cuda_error(code, algorithm, what);
  }
}

}  // namespace detail
}  // namespace libmerge

namespace libmerge::detail::gpu {

// ---------------------------------------------------------------------------
// The device.

struct device_info {
  int device = 0;
  int cc = 0;            // the device's compute capability x 10
  int smem_optin = 0;    // largest dynamic shared memory a block may opt into
  int sms = 0;           // multiprocessors
  bool pageable_access = false;  // can kernels read ordinary host memory (HMM/ATS)?
  bool cooperative = false;      // can it launch cooperative kernels (grid-wide barriers)?
};

inline device_info query_device(int device, const char* algorithm) {
  device_info info;
  info.device = device;
  int major = 0, minor = 0, pageable = 0;
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), algorithm,
             "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), algorithm,
             "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&info.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
             algorithm, "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, device), algorithm,
             "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&info.sms, cudaDevAttrMultiProcessorCount, device), algorithm,
             "cudaDeviceGetAttribute");
  int cooperative = 0;
  check_cuda(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device), algorithm,
             "cudaDeviceGetAttribute");
  info.cooperative = cooperative != 0;
  info.cc = major * 10 + minor;
  info.pageable_access = pageable != 0;
  return info;
}

// The current device's facts, cached: a call costs one cudaGetDevice.
inline const device_info& current_device(const char* algorithm) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), algorithm, "cudaGetDevice");
  static std::mutex mutex;
  static std::map<int, device_info> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(device);
  if (it == cache.end()) it = cache.emplace(device, query_device(device, algorithm)).first;
  return it->second;
}

// The device a stream's work runs on: cudaStreamGetDevice, or the current device for the default streams
// and a capturing stream, where it fails (cudaErrorStreamCaptureUnsupported).
inline int stream_device(cudaStream_t stream, const char* algorithm) {
  int device = 0;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  const bool own = stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread;
  if (own) check_cuda(cudaStreamIsCapturing(stream, &capture), algorithm, "cudaStreamIsCapturing");
  if (own && capture == cudaStreamCaptureStatusNone) {
    check_cuda(cudaStreamGetDevice(stream, &device), algorithm, "cudaStreamGetDevice");
  } else {
    check_cuda(cudaGetDevice(&device), algorithm, "cudaGetDevice");
  }
  return device;
}

// Whether `stream` is capturing a CUDA graph (the legacy default stream cannot be).
inline bool is_capturing(cudaStream_t stream, const char* algorithm) {
  if (stream == nullptr || stream == cudaStreamLegacy) return false;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(stream, &capture), algorithm, "cudaStreamIsCapturing");
  return capture != cudaStreamCaptureStatusNone;
}

// A call that must wait for its stream (to read an answer back to the host)
// cannot be captured: refused before anything is queued, the capture intact.
inline void refuse_capture(cudaStream_t stream, const char* algorithm, const char* why) {
  if (is_capturing(stream, algorithm)) {
    throw std::invalid_argument(std::string("libmerge::") + algorithm + ": " + why);
  }
}

// The current device's facts for a call on `stream`, which must belong to it (pointer checks and launches
// use the current device, temporary storage the stream's): else std::invalid_argument.
inline const device_info& current_device(const char* algorithm, cudaStream_t stream) {
  const device_info& dev = current_device(algorithm);
  const int device = stream_device(stream, algorithm);
  if (device != dev.device) {
    throw std::invalid_argument(std::string("libmerge::") + algorithm + ": the policy's stream belongs to device " +
                                std::to_string(device) + ", but the call runs on the current device " +
                                std::to_string(dev.device) + " (cudaSetDevice to the stream's device first)");
  }
  return dev;
}

// LIBMERGE_DEBUG=1 in the environment prints each launch plan to stderr.
inline bool debug_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("LIBMERGE_DEBUG");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  return enabled;
}

// ---------------------------------------------------------------------------
// Launches.

// A kernel's attributes (PTX target, static shared memory), cached per
// (device, kernel); a missing image is told in words.
inline const cudaFuncAttributes& kernel_attributes(const void* kernel, const device_info& dev,
                                                   const char* algorithm) {
  static std::mutex mutex;
  static std::map<std::pair<int, const void*>, cudaFuncAttributes> cache;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(dev.device, kernel);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;  // std::map: references stay valid
  cudaFuncAttributes attr{};
  const cudaError_t e = cudaFuncGetAttributes(&attr, kernel);
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) {
    cudaGetLastError();  // not sticky: leave no stale error behind
    throw cuda_error(e, algorithm,
                     "this program has no kernel image for device " + std::to_string(dev.device) + " (sm_" +
                         std::to_string(dev.cc) +
                         "); rebuild with its architecture in CMAKE_CUDA_ARCHITECTURES (nvcc -gencode)");
  }
  check_cuda(e, algorithm, "cudaFuncGetAttributes");
  return cache.emplace(key, attr).first->second;
}

// The architecture (x 10) `kernel` was compiled for (its PTX target); asked a
// kernel, since translation units may target different architectures.
inline int kernel_arch(const void* kernel, const device_info& dev, const char* algorithm) {
  return kernel_attributes(kernel, dev, algorithm).ptxVersion;
}

// The tuning entry of the GPU a call runs on, for the decisions the host
// makes (the kernels take their own: tuning::here).
inline const tuning::architecture& entry_of(const device_info& dev) {
  const int i = tuning::entry_for(dev.cc);
  return tuning::architectures[i < 0 ? std::size(tuning::architectures) - 1 : static_cast<std::size_t>(i)];
}

template <class F, std::size_t... I>
void for_each_index(F& f, std::index_sequence<I...>) {
  (f(std::integral_constant<std::size_t, I>{}), ...);
}

// The box of a call's merge kernels: the policy's box, or the second of two.
template <class Box>
struct merge_box_of {
  using type = Box;
};
template <class B1, class B2, int Ways>
struct merge_box_of<launch_boxes<B1, B2, Ways>> {
  using type = B2;
};

// Whether line `index` can serve this translation unit's kernels, by
// __CUDA_ARCH_LIST__ (every line without it): with_tuned_boxes leaves the
// others uninstantiated, so the pre-sm_80 line does not double sm_80+ builds.
constexpr bool line_compiled(std::size_t index) {
#ifdef __CUDA_ARCH_LIST__
  for (int arch : {__CUDA_ARCH_LIST__}) {
    if (tuning::entry_for(arch / 10) == static_cast<int>(index)) return true;
  }
  return false;
#else
  (void)index;
  return true;
#endif
}

// Calls f(boxes) with the tuned line's boxes for the kernels' compiled
// architecture. Table: static `lines` (policies/cuda.hpp) and boxes<I>(),
// a struct whose members name the boxes and sizes; kernel_of(boxes) names a
// kernel whose architecture picks it.
template <class Table, class KernelOf, class F>
void with_tuned_boxes(const device_info& dev, const char* algorithm, KernelOf&& kernel_of, F&& f) {
  constexpr std::size_t n = std::size(Table::lines);
  bool done = false;
  int compiled_for = 0;
  const void* asked = nullptr;  // the kernel compiled_for is of
  auto try_line = [&](auto index) {
    constexpr std::size_t I = decltype(index)::value;
    if constexpr (line_compiled(I)) {
      if (done) return;
      auto boxes = Table::template boxes<I>();
      const void* kernel = reinterpret_cast<const void*>(kernel_of(boxes));
      if (kernel != asked) {
        compiled_for = kernel_arch(kernel, dev, algorithm);
        asked = kernel;
      }
      const int line_arch = Table::lines[I].arch;
      if (static_cast<int>(I) == tuning::entry_for(compiled_for)) {
        done = true;
        if (line_arch != compiled_for && debug_enabled()) {
          // Once for each kind of call (this instantiation) and architecture, not at every call.
          static std::atomic<int> told{-1};
          if (told.exchange(compiled_for) != compiled_for) {
            std::fprintf(stderr,
                         "libmerge::%s: no tuning entry for sm_%d (policies/cuda.hpp, tuning::architectures); "
                         "using sm_%d's\n",
                         algorithm, compiled_for, line_arch);
          }
        }
        f(boxes);
      }
    }
  };
  for_each_index(try_line, std::make_index_sequence<n>{});
  if (!done) {
    throw std::runtime_error(std::string("libmerge::") + algorithm + ": no tuning for sm_" +
                             std::to_string(compiled_for) + "; the CUDA backend supports sm_" +
                             std::to_string(Table::lines[n - 1].arch) + " and newer");
  }
}

// Programmatic dependent launch (sm_90+) hides launch latency: a kernel waits
// in wait_for_prerequisite_grid() before reading its predecessor's output.
// Both are no-ops without PDL or on older architectures.
__device__ __forceinline__ void allow_dependent_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_prerequisite_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// A grid holds 2^31-1 CTAs in x (maxGridSize[0] since sm_30), one tile each.
inline constexpr index_t max_grid_ctas = 0x7fffffff;

[[noreturn]] inline void throw_too_many_tiles(const char* algorithm) {
  throw std::invalid_argument(std::string("libmerge::") + algorithm +
                              ": input too large for one grid with this launch box (more than 2^31-1 tiles)");
}

// Launches with `attribute` (none when null). Errors come from
// cudaLaunchKernelEx itself, not the last-error slot; the message is built
// only on failure (saving small calls a heap allocation).
template <class... Params, class... Args>
void launch_named(const cudaLaunchAttribute* attribute, void (*kernel)(Params...), index_t grid, int nt,
                  std::size_t smem, cudaStream_t stream, const char* algorithm, const char* what_prefix,
                  const char* what, Args&&... args) {
  if (grid <= 0) return;
  if (grid > max_grid_ctas) throw_too_many_tiles(algorithm);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(grid));
  config.blockDim = dim3(static_cast<unsigned>(nt));
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute copy[1];
  if (attribute != nullptr) copy[0] = *attribute;
  config.attrs = copy;
  config.numAttrs = attribute != nullptr ? 1 : 0;
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) check_cuda(e, algorithm, (std::string(what_prefix) + what).c_str());
}

// launch_named with `what` alone.
template <class... Params, class... Args>
void launch_with(const cudaLaunchAttribute* attribute, void (*kernel)(Params...), index_t grid, int nt,
                 std::size_t smem, cudaStream_t stream, const char* algorithm, const char* what, Args&&... args) {
  launch_named(attribute, kernel, grid, nt, smem, stream, algorithm, "", what, std::forward<Args>(args)...);
}

// Launches `kernel`; with `dependent` and a kernel compiled for sm_90+, by PDL:
// it must call wait_for_prerequisite_grid() before reading earlier work (only
// the predecessor's output where that one allows launch after its own wait, as
// partition_kernel does; merge_kernel's first tiles rely on it).
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), index_t grid, int nt, std::size_t smem, cudaStream_t stream, bool dependent,
            const device_info& dev, const char* algorithm, const char* kernel_name, Args&&... args) {
  if (grid <= 0) return;
  cudaLaunchAttribute pdl{};
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  const bool use_pdl = dependent && kernel_arch(reinterpret_cast<const void*>(kernel), dev, algorithm) >= 90;
  launch_named(use_pdl ? &pdl : nullptr, kernel, grid, nt, smem, stream, algorithm, "launch of ", kernel_name,
               std::forward<Args>(args)...);
}

// CTAs of `kernel` resident at once (one wave), cached per (device, kernel);
// raise the shared-memory limit first.
template <class Kernel>
int wave_ctas(Kernel kernel, int nt, std::size_t smem, const device_info& dev, const char* algorithm) {
  static std::mutex mutex;
  static std::map<std::pair<int, const void*>, int> cache;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(dev.device, reinterpret_cast<const void*>(kernel));
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  int per_sm = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, nt, smem), algorithm,
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return cache.emplace(key, per_sm * dev.sms).first->second;
}

// wave_ctas, or 0 without cooperative launch: a grid this size is fully
// resident, so its grid barriers cannot wait on an unstarted CTA.
template <class Kernel>
int resident_ctas(Kernel kernel, int nt, std::size_t smem, const device_info& dev, const char* algorithm) {
  return dev.cooperative ? wave_ctas(kernel, nt, smem, dev, algorithm) : 0;
}

// Launches a cooperative grid (may call this_grid().sync()); grid <= resident_ctas().
template <class... Params, class... Args>
void launch_cooperative(void (*kernel)(Params...), index_t grid, int nt, std::size_t smem, cudaStream_t stream,
                        const char* algorithm, const char* kernel_name, Args&&... args) {
  cudaLaunchAttribute cooperative{};
  cooperative.id = cudaLaunchAttributeCooperative;
  cooperative.val.cooperative = 1;
  launch_named(&cooperative, kernel, grid, nt, smem, stream, algorithm, "cooperative launch of ", kernel_name,
               std::forward<Args>(args)...);
}

// Raises a kernel's dynamic shared memory limit past 48 KB when needed, or
// says clearly that the device cannot give that much.
template <class Kernel>
void prepare_shared_memory(Kernel kernel, std::size_t bytes, const device_info& dev, int nt, int vt,
                           const char* algorithm) {
  // Static __shared__ bytes count against the same limit.
  const std::size_t fixed = kernel_attributes(reinterpret_cast<const void*>(kernel), dev, algorithm).sharedSizeBytes;
  if (bytes + fixed > static_cast<std::size_t>(dev.smem_optin)) {
    throw std::invalid_argument(std::string("libmerge::") + algorithm + ": launch box nt=" + std::to_string(nt) +
                                " vt=" + std::to_string(vt) + " needs " + std::to_string(bytes) +
                                " bytes of shared memory per block, and the kernel " + std::to_string(fixed) +
                                " more of its own; device " + std::to_string(dev.device) + " allows " +
                                std::to_string(dev.smem_optin) +
                                " in all (use a smaller launch box, or smaller elements)");
  }
  if (bytes + fixed > tuning::smem_without_opt_in) {
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
               algorithm, "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  }
}

// The largest element (key plus value) the CUDA backend takes, in bytes: 4 KB
// elements took minutes to compile and ran from local memory.
inline constexpr std::size_t max_element_bytes = 1024;

[[noreturn]] inline void throw_element_too_large(const char* algorithm, std::size_t bytes) {
  throw std::invalid_argument(std::string("libmerge::") + algorithm + ": elements of " + std::to_string(bytes) +
                              " bytes (key plus value) are too large for the CUDA backend's shared-memory tiles; "
                              "the limit is " + std::to_string(max_element_bytes) +
                              " bytes (sort indices or pointers to large elements instead)");
}

// LIBMERGE_DEBUG=1 prints each kernel's launch plan to stderr.
template <class Box>
void print_plan(const device_info& dev, const char* algorithm, const char* stage, int arch, bool tuned,
                long long tiles, std::size_t temp_bytes, std::size_t smem_bytes) {
  if (!debug_enabled()) return;
  std::fprintf(stderr,
               "libmerge::%s %s: device %d sm_%d (kernels for sm_%d), launch box nt=%d vt=%d (%s), "
               "%lld tiles, %zu B temporary, %zu B shared per block\n",
               algorithm, stage, dev.device, dev.cc, arch, Box::nt, Box::vt, tuned ? "tuned" : "caller's", tiles,
               temp_bytes, smem_bytes);
}
}  // namespace libmerge::detail::gpu

namespace libmerge::detail::cuda_backend {
using namespace gpu;
}  // namespace libmerge::detail::cuda_backend
