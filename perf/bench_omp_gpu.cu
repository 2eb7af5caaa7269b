// The GPU column of the OpenMP benchmark (bench_omp.cpp): the CUDA backend on
// the same inputs, for the CPU-vs-GPU table. Each timing is the median of
// `runs` calls, measured two ways: with the data already on the GPU (CUDA
// events around the call), and with the copies in and out included (wall
// clock, from pageable host memory as a CPU caller would have it). An
// algorithm the CUDA backend does not implement yet returns no time: the
// column fills in when it does (lm::is_available).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>

#include <libmerge/libmerge.hpp>

#include "bench_omp_common.hpp"

namespace omp_bench {

namespace {

namespace lm = libmerge;
using cuda_policy = std::decay_t<decltype(lm::cuda::par)>;

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("GPU benchmark: ") + what + ": " + cudaGetErrorString(e));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median ms of call() with its data on the device: CUDA events on the default
// stream around call() alone; setup() (restoring a sort's input) runs before.
template <class Setup, class F>
double device_ms(int runs, Setup&& setup, F&& call) {
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "event");
  cuda_check(cudaEventCreate(&stop), "event");
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    setup();
    cuda_check(cudaEventRecord(start), "record");
    call();
    cuda_check(cudaEventRecord(stop), "record");
    cuda_check(cudaEventSynchronize(stop), "synchronize");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    t.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(t);
}

// Median wall-clock ms of call() (which copies in, runs and copies out), to its end on the GPU.
template <class F>
double wall_ms(int runs, F&& call) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    cuda_check(cudaDeviceSynchronize(), "synchronize");
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

template <class T>
void to_device(const T* host, std::int64_t n, thrust::device_vector<T>& d) {
  cuda_check(cudaMemcpy(thrust::raw_pointer_cast(d.data()), host, static_cast<std::size_t>(n) * sizeof(T),
                        cudaMemcpyHostToDevice),
             "copy to the GPU");
}

template <class T>
void to_host(const thrust::device_vector<T>& d, std::vector<T>& host) {
  host.resize(d.size());
  cuda_check(cudaMemcpy(host.data(), thrust::raw_pointer_cast(d.data()), d.size() * sizeof(T), cudaMemcpyDeviceToHost),
             "copy from the GPU");
}

template <class T>
void check_same(const thrust::device_vector<T>& d, const T* expected, const char* what) {
  std::vector<T> host;
  to_host(d, host);
  if (!std::equal(host.begin(), host.end(), expected)) {
    throw std::runtime_error(std::string("GPU benchmark: wrong result from the CUDA backend's ") + what);
  }
}

}  // namespace

std::string gpu_name() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return {};
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  return prop.name;
}

template <class T>
gpu_time gpu_merge_sort(const T* keys, std::int64_t n, const T* expected, int runs) {
  if constexpr (!lm::is_available<lm::algo::merge_sort, cuda_policy>) {
    (void)keys, (void)n, (void)expected, (void)runs;
    return {};
  } else {
    thrust::device_vector<T> input(n), d(n);
    std::vector<T> out;
    to_device(keys, n, input);
    auto restore = [&] { thrust::copy(input.begin(), input.end(), d.begin()); };
    auto sort = [&] { lm::merge_sort(lm::cuda::par, d.begin(), d.end(), less_than{}); };
    restore();
    sort();
    check_same(d, expected, "merge_sort");
    gpu_time g;
    g.device = device_ms(runs, restore, sort);
    g.with_copies = wall_ms(runs, [&] {
      to_device(keys, n, d);
      sort();
      to_host(d, out);
    });
    return g;
  }
}

template <class T>
gpu_time gpu_merge_sort_by_key(const T* keys, const std::int32_t* values, std::int64_t n,
                               const std::int32_t* expected_values, int runs) {
  if constexpr (!lm::is_available<lm::algo::merge_sort, cuda_policy>) {
    (void)keys, (void)values, (void)n, (void)expected_values, (void)runs;
    return {};
  } else {
    thrust::device_vector<T> keys_in(n), dk(n);
    thrust::device_vector<std::int32_t> values_in(n), dv(n);
    std::vector<T> out_keys;
    std::vector<std::int32_t> out_values;
    to_device(keys, n, keys_in);
    to_device(values, n, values_in);
    auto restore = [&] {
      thrust::copy(keys_in.begin(), keys_in.end(), dk.begin());
      thrust::copy(values_in.begin(), values_in.end(), dv.begin());
    };
    auto sort = [&] { lm::merge_sort_by_key(lm::cuda::par, dk.begin(), dk.end(), dv.begin(), less_than{}); };
    restore();
    sort();
    check_same(dv, expected_values, "merge_sort_by_key");
    gpu_time g;
    g.device = device_ms(runs, restore, sort);
    g.with_copies = wall_ms(runs, [&] {
      to_device(keys, n, dk);
      to_device(values, n, dv);
      sort();
      to_host(dk, out_keys);
      to_host(dv, out_values);
    });
    return g;
  }
}

template <class T>
gpu_time gpu_merge(const T* a, std::int64_t na, const T* b, std::int64_t nb, const T* expected, int runs) {
  if constexpr (!lm::is_available<lm::algo::merge, cuda_policy>) {
    (void)a, (void)na, (void)b, (void)nb, (void)expected, (void)runs;
    return {};
  } else {
    thrust::device_vector<T> da(na), db(nb), out(na + nb);
    std::vector<T> host_out;
    auto load = [&] {
      to_device(a, na, da);
      to_device(b, nb, db);
    };
    auto merge = [&] { lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), out.begin(), less_than{}); };
    load();
    merge();
    check_same(out, expected, "merge");
    gpu_time g;
    merge();  // warm-up
    g.device = device_ms(runs, [] {}, merge);
    g.with_copies = wall_ms(runs, [&] {
      load();
      merge();
      to_host(out, host_out);
    });
    return g;
  }
}

template <class T>
gpu_time gpu_sorted_search(const T* needles, std::int64_t na, const T* haystack, std::int64_t nb,
                           const std::int64_t* expected, int runs) {
  if constexpr (!lm::is_available<lm::algo::sorted_search, cuda_policy>) {
    (void)needles, (void)na, (void)haystack, (void)nb, (void)expected, (void)runs;
    return {};
  } else {
    thrust::device_vector<T> da(na), db(nb);
    thrust::device_vector<std::int64_t> out(na);
    std::vector<std::int64_t> host_out;
    auto load = [&] {
      to_device(needles, na, da);
      to_device(haystack, nb, db);
    };
    auto search = [&] {
      lm::sorted_search<lm::bounds::lower>(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), out.begin(),
                                           less_than{});
    };
    load();
    search();
    check_same(out, expected, "sorted_search");
    gpu_time g;
    search();  // warm-up
    g.device = device_ms(runs, [] {}, search);
    g.with_copies = wall_ms(runs, [&] {
      load();
      search();
      to_host(out, host_out);
    });
    return g;
  }
}

#define LIBMERGE_BENCH_INSTANTIATE(T)                                                                           \
  template gpu_time gpu_merge_sort<T>(const T*, std::int64_t, const T*, int);                                  \
  template gpu_time gpu_merge_sort_by_key<T>(const T*, const std::int32_t*, std::int64_t, const std::int32_t*, \
                                             int);                                                              \
  template gpu_time gpu_merge<T>(const T*, std::int64_t, const T*, std::int64_t, const T*, int);               \
  template gpu_time gpu_sorted_search<T>(const T*, std::int64_t, const T*, std::int64_t, const std::int64_t*, int);

LIBMERGE_BENCH_INSTANTIATE(std::int32_t)
LIBMERGE_BENCH_INSTANTIATE(std::int64_t)
LIBMERGE_BENCH_INSTANTIATE(struct16)

}  // namespace omp_bench
