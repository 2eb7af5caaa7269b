// Compiler switches and the one index type shared by every part of libmerge.
#pragma once

#include <cstdint>

// Under g++ LIBMERGE_HOST_DEVICE is nothing, so the CPU backends need no CUDA.
#if defined(__CUDACC__)
#define LIBMERGE_HOST_DEVICE __host__ __device__
#define LIBMERGE_HAS_CUDA 1
#else
#define LIBMERGE_HOST_DEVICE
#define LIBMERGE_HAS_CUDA 0
#endif

// The engine's searches run in the kernels' inner loops, where a call would
// cost registers spilled across it.
#if defined(__CUDACC__)
#define LIBMERGE_FORCEINLINE __forceinline__
#else
#define LIBMERGE_FORCEINLINE inline
#endif

// `#pragma unroll` for loops in code that host and device share: nvcc's
// device pass reads it, the host compiler would warn of an unknown pragma.
#if defined(__CUDA_ARCH__)
#define LIBMERGE_UNROLL _Pragma("unroll")
#else
#define LIBMERGE_UNROLL
#endif

namespace libmerge {

// Counts and positions are 64-bit everywhere: inputs beyond 2^31 elements are
// a supported case, not an overflow waiting to happen.
using index_t = std::int64_t;

}  // namespace libmerge
