// Pieces both GPU benchmark drivers use: a CUDA error check and arenas that
// hand out preallocated memory, so that no timed call allocates.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Hands out one preallocated block, so that no timed call allocates.
struct arena {
  char* base = nullptr;
  std::size_t capacity = 0;
  void* allocate(std::size_t bytes, cudaStream_t) const {
    if (bytes > capacity) throw std::runtime_error("benchmark arena too small");
    return base;
  }
  void deallocate(void*, std::size_t, cudaStream_t) const noexcept {}
};

// The same for Thrust's temporary allocations (thrust::cuda::par_nosync(alloc)):
// a bump allocator, in case one call holds several blocks at once.
struct thrust_arena {
  using value_type = char;
  char* base = nullptr;
  std::size_t capacity = 0;
  std::size_t used = 0;
  int live = 0;
  char* allocate(std::ptrdiff_t bytes) {
    const std::size_t at = (used + 255) / 256 * 256;
    if (at + static_cast<std::size_t>(bytes) > capacity) throw std::runtime_error("thrust arena too small");
    used = at + static_cast<std::size_t>(bytes);
    ++live;
    return base + at;
  }
  void deallocate(char*, std::size_t) {
    if (--live == 0) used = 0;
  }
};

}  // namespace
