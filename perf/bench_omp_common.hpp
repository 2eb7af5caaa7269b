// Shared by the OpenMP benchmark driver (bench_omp.cpp, g++) and its GPU part
// (bench_omp_gpu.cu, nvcc): the key types, and the GPU timings' interface.
#pragma once

#include <cstdint>
#include <string>

#include <libmerge/detail/config.hpp>

namespace omp_bench {

// The 16-byte struct key, ordered by (major, minor).
struct struct16 {
  std::int64_t major;
  std::int64_t minor;
};
// Written without || and &&: a short-circuit is a branch on the comparison's
// outcome, which costs any sort about one misprediction per element on random
// keys; branch-free, the comparison costs none (lm::omp::par's sort of 10^7
// on one thread: 1.17 s with ||, 0.62 s without). Every implementation gets
// this same comparator.
LIBMERGE_HOST_DEVICE inline bool operator<(const struct16& x, const struct16& y) {
  return (x.major < y.major) | ((x.major == y.major) & (x.minor < y.minor));
}
inline bool operator==(const struct16& x, const struct16& y) { return x.major == y.major && x.minor == y.minor; }

// The comparator every implementation gets (x < y). For Thrust it is a custom
// comparator, which keeps its stable_sort off the radix sort that Thrust 3.0
// runs for the default comparator and that puts negative int keys after the
// positive ones.
struct less_than {
  template <class T>
  LIBMERGE_HOST_DEVICE bool operator()(const T& x, const T& y) const {
    return x < y;
  }
};

// GPU timings (bench_omp_gpu.cu; built by nvcc). Each returns the median
// milliseconds of the CUDA backend on device copies of the inputs (`device`)
// and of the same call with the copies to and from the GPU included
// (`with_copies`), after checking the GPU's result against `expected`; both
// are negative when the CUDA backend does not implement the algorithm yet.
struct gpu_time {
  double device = -1;
  double with_copies = -1;
};

// Name of GPU 0, or empty when there is none (or no CUDA build).
std::string gpu_name();

template <class T>
gpu_time gpu_merge_sort(const T* keys, std::int64_t n, const T* expected, int runs);
template <class T>
gpu_time gpu_merge_sort_by_key(const T* keys, const std::int32_t* values, std::int64_t n,
                               const std::int32_t* expected_values, int runs);
template <class T>
gpu_time gpu_merge(const T* a, std::int64_t na, const T* b, std::int64_t nb, const T* expected, int runs);
template <class T>
gpu_time gpu_sorted_search(const T* needles, std::int64_t na, const T* haystack, std::int64_t nb,
                           const std::int64_t* expected, int runs);

}  // namespace omp_bench
