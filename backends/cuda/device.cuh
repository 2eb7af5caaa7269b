// What the backend needs to know about a device, looked up once and cached.
// (The architecture a kernel was compiled for is asked of each kernel: launch.cuh.) Namespace gpu:
// the runtime layer (device, launch, memory, iterators) that the CUDA and NCCL backends share.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "error.hpp"

namespace libmerge::detail::gpu {

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

}  // namespace libmerge::detail::gpu

namespace libmerge::detail::cuda_backend {
using namespace gpu;
}  // namespace libmerge::detail::cuda_backend
