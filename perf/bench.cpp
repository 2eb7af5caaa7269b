// libmerge benchmark driver. Prints a table and writes JSON (perf/plot.py turns
// it into PNG plots for docs/).
//
//   libmerge_bench [--cpu] [--gpu] [--tune] [--tune-small] [--profile [--profile-log2 K]] [--json FILE]
//                  [--runs R] [--quick] [--sizes 20,24,28]
//
// --tune times libmerge with a range of launch boxes against CUB instead of the
// tuned box against CUB and Thrust (at 2^20, 2^24, 2^28); --tune-small does the
// same with smaller tiles at 2^20 .. 2^23, where a launch is one partial wave.
//
// CPU rows: the serial backend against the standard library on 10^7 int32 keys.
// GPU rows (built by nvcc, run on a GPU): lm::merge / lm::merge_by_key against
// cub::DeviceMerge and thrust::merge(_by_key) in the same run, with a cold L2
// before every timed run, temporary storage allocated outside the timing, CUDA
// events, the median of many runs, and every output verified once.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <libmerge/libmerge.hpp>

#include "bench_meta.hpp"

#if LIBMERGE_HAS_CUDA
#include <cub/device/device_merge.cuh>
#include <thrust/version.h>
#include "gpu_bench_support.cuh"
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/merge.h>
#include <thrust/sort.h>
#include <thrust/equal.h>
#include <thrust/random.h>
#include <thrust/transform.h>
#include <thrust/iterator/counting_iterator.h>
#endif

namespace lm = libmerge;

namespace {

struct options {
  bool cpu = false, gpu = false, quick = false, tune = false, tune_small = false, profile = false;
  int runs = 0;  // 0: default per section
  int profile_log2 = 26;
  std::vector<int> sizes;  // --sizes: log2 of the GPU sizes (default 20 to 28)
  std::string json = "libmerge_bench.json";
};

// One measured implementation of one benchmark case.
struct result {
  std::string section, algorithm, type, impl;
  long long n = 0;
  double ms = 0, bytes = 0;
};

std::vector<result> results;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) o += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return o;
}

// ---------------------------------------------------------------------------
// CPU: serial backend vs std::

template <class Setup, class Run>
double cpu_ms(int runs, Setup&& setup, Run&& run) {
  std::vector<double> t;
  for (int i = 0; i <= runs; ++i) {  // the first run warms up
    setup();
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0) t.push_back(ms);
  }
  return median(t);
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("benchmark output check failed: " + what);
}

void add_cpu(const char* algorithm, long long n, const char* impl, double ms) {
  results.push_back({"cpu", algorithm, "int32", impl, n, ms, 0});
}

void run_cpu(const options& opt) {
  const long long n = opt.quick ? 1000000 : 10000000;
  const int runs = opt.runs ? opt.runs : (opt.quick ? 3 : 7);
  std::mt19937 rng(2026);
  std::vector<int> keys(n);
  for (auto& x : keys) x = static_cast<int>(rng());
  std::vector<int> a(n / 2), b(n - n / 2);
  for (auto& x : a) x = static_cast<int>(rng());
  for (auto& x : b) x = static_cast<int>(rng());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<int> work, vals, out(n), ref(n);
  std::vector<long long> idx(n);

  std::printf("\nCPU: serial backend vs std:: (%lld int32 keys, median of %d)\n", n, runs);

  // merge_sort vs std::stable_sort
  add_cpu("merge_sort", n, "std::stable_sort", cpu_ms(runs, [&] { work = keys; }, [&] { std::stable_sort(work.begin(), work.end()); }));
  ref = work;
  add_cpu("merge_sort", n, "libmerge serial", cpu_ms(runs, [&] { work = keys; }, [&] { lm::merge_sort(lm::serial, work.begin(), work.end()); }));
  check(work == ref, "merge_sort");

  // merge_sort_by_key vs std::stable_sort of (key, value) pairs by key
  std::vector<std::pair<int, int>> pairs;
  add_cpu("merge_sort_by_key", n, "std::stable_sort (pairs)", cpu_ms(runs, [&] {
            pairs.resize(n);
            for (long long i = 0; i < n; ++i) pairs[i] = {keys[i], static_cast<int>(i)};
          }, [&] { std::stable_sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) { return x.first < y.first; }); }));
  add_cpu("merge_sort_by_key", n, "libmerge serial", cpu_ms(runs, [&] {
            work = keys;
            vals.resize(n);
            for (long long i = 0; i < n; ++i) vals[i] = static_cast<int>(i);
          }, [&] { lm::merge_sort_by_key(lm::serial, work.begin(), work.end(), vals.begin()); }));
  for (long long i = 0; i < n; ++i) check(pairs[i].first == work[i] && pairs[i].second == vals[i], "merge_sort_by_key");

  // merge vs std::merge (two sorted halves of n)
  add_cpu("merge", n, "std::merge", cpu_ms(runs, [] {}, [&] { std::merge(a.begin(), a.end(), b.begin(), b.end(), ref.begin()); }));
  add_cpu("merge", n, "libmerge serial", cpu_ms(runs, [] {}, [&] { lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), out.begin()); }));
  check(out == ref, "merge");

  // sorted_search<lower> vs a std::lower_bound loop (n/2 sorted needles into n/2)
  std::vector<long long> ref_idx(a.size());
  add_cpu("sorted_search<lower>", n, "std::lower_bound loop", cpu_ms(runs, [] {}, [&] {
            for (std::size_t i = 0; i < a.size(); ++i) ref_idx[i] = std::lower_bound(b.begin(), b.end(), a[i]) - b.begin();
          }));
  add_cpu("sorted_search<lower>", n, "libmerge serial", cpu_ms(runs, [] {}, [&] {
            lm::sorted_search<lm::bounds::lower>(lm::serial, a.begin(), a.end(), b.begin(), b.end(), idx.begin());
          }));
  check(std::equal(ref_idx.begin(), ref_idx.end(), idx.begin()), "sorted_search");

  // sorted_equality_count vs a std::equal_range loop
  add_cpu("sorted_equality_count", n, "std::equal_range loop", cpu_ms(runs, [] {}, [&] {
            for (std::size_t i = 0; i < a.size(); ++i) {
              auto r = std::equal_range(b.begin(), b.end(), a[i]);
              ref_idx[i] = r.second - r.first;
            }
          }));
  add_cpu("sorted_equality_count", n, "libmerge serial", cpu_ms(runs, [] {}, [&] {
            lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), idx.begin());
          }));
  check(std::equal(ref_idx.begin(), ref_idx.end(), idx.begin()), "sorted_equality_count");

  std::printf("%-24s %-26s %12s %10s\n", "algorithm", "implementation", "ms", "vs std");
  for (const result& r : results) {
    if (r.section != "cpu") continue;
    double peer = 0;
    for (const result& p : results) {
      if (p.section == "cpu" && p.algorithm == r.algorithm && p.impl.rfind("std::", 0) == 0) peer = p.ms;
    }
    std::printf("%-24s %-26s %12.2f %9.2fx\n", r.algorithm.c_str(), r.impl.c_str(), r.ms, r.ms / peer);
  }
}

#if LIBMERGE_HAS_CUDA
// ---------------------------------------------------------------------------
// GPU: lm vs CUB vs Thrust

struct gpu_timer {
  cudaStream_t stream;
  cudaEvent_t start, stop;
  char* flush = nullptr;
  std::size_t flush_bytes = 0;
  int runs = 25;

  explicit gpu_timer(cudaStream_t s, int r) : stream(s), runs(r) {
    cuda_check(cudaEventCreate(&start), "event");
    cuda_check(cudaEventCreate(&stop), "event");
    int device = 0, l2 = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
    flush_bytes = 4 * static_cast<std::size_t>(l2);
    cuda_check(cudaMalloc(&flush, flush_bytes), "flush buffer");
  }
  ~gpu_timer() {
    cudaFree(flush);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  // Median ms of f() on a cold L2: a write of 4x the L2 size precedes each run.
  template <class F>
  double median_ms(F&& f) {
    for (int i = 0; i < 3; ++i) f();  // warm-up
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) {
      cuda_check(cudaMemsetAsync(flush, i & 0xff, flush_bytes, stream), "flush");
      cuda_check(cudaEventRecord(start, stream), "record");
      f();
      cuda_check(cudaEventRecord(stop, stream), "record");
      cuda_check(cudaEventSynchronize(stop), "sync");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
      t.push_back(ms);
    }
    cuda_check(cudaGetLastError(), "timed work");
    return median(t);
  }
};

template <class T>
struct random_key {
  std::uint64_t seed;
  __host__ __device__ T operator()(long long i) const {
    thrust::default_random_engine e(static_cast<unsigned>(seed * 1000003u + static_cast<unsigned long long>(i)));
    e.discard(3);
    const std::uint64_t hi = e(), lo = e();
    return static_cast<T>((hi << 32) ^ lo ^ (static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull));
  }
};

template <class T>
thrust::device_vector<T> sorted_random(long long n, std::uint64_t seed) {
  thrust::device_vector<T> v(n);
  thrust::transform(thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(n), v.begin(),
                    random_key<T>{seed});
  thrust::sort(v.begin(), v.end());
  return v;
}

template <class T>
std::vector<T> host_copy(const thrust::device_vector<T>& d) {
  std::vector<T> h(d.size());
  cuda_check(cudaMemcpy(h.data(), thrust::raw_pointer_cast(d.data()), d.size() * sizeof(T), cudaMemcpyDeviceToHost), "copy");
  return h;
}

// One (type, size) case, keys-only when V is void, else pairs: sorted random
// inputs on the device, the host reference (std::merge), and one runner per
// implementation. Every runner's output is verified once before timing.
template <class K, class V>
struct merge_case {
  static constexpr bool pairs = !std::is_void_v<V>;
  using Val = std::conditional_t<pairs, V, int>;
  long long n, na, nb;
  const char* type_name;
  cudaStream_t s;
  thrust_arena* thrust_temp;
  char* cub_temp;
  std::size_t cub_capacity;
  thrust::device_vector<K> a, b, out;
  thrust::device_vector<Val> av, bv, vout;
  std::vector<K> ref_keys;
  std::vector<Val> ref_vals;

  merge_case(long long n_, const char* type, cudaStream_t stream, thrust_arena* th, char* cub, std::size_t cap)
      : n(n_), na(n_ / 2), nb(n_ - n_ / 2), type_name(type), s(stream), thrust_temp(th), cub_temp(cub),
        cub_capacity(cap), a(sorted_random<K>(na, 11)), b(sorted_random<K>(nb, 12)), out(n), av(pairs ? na : 0),
        bv(pairs ? nb : 0), vout(pairs ? n : 0) {
    std::vector<K> ha = host_copy(a), hb = host_copy(b);
    ref_keys.resize(n);
    if constexpr (pairs) {
      thrust::transform(thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(na), av.begin(), random_key<Val>{13});
      thrust::transform(thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(nb), bv.begin(), random_key<Val>{14});
      std::vector<Val> hav = host_copy(av), hbv = host_copy(bv);
      std::vector<std::pair<K, Val>> x(na), y(nb), z(n);
      for (long long i = 0; i < na; ++i) x[i] = {ha[i], hav[i]};
      for (long long i = 0; i < nb; ++i) y[i] = {hb[i], hbv[i]};
      std::merge(x.begin(), x.end(), y.begin(), y.end(), z.begin(), [](const auto& p, const auto& q) { return p.first < q.first; });
      ref_vals.resize(n);
      for (long long i = 0; i < n; ++i) {
        ref_keys[i] = z[i].first;
        ref_vals[i] = z[i].second;
      }
    } else {
      std::merge(ha.begin(), ha.end(), hb.begin(), hb.end(), ref_keys.begin());
    }
  }

  const char* algorithm() const { return pairs ? "merge_by_key" : "merge"; }
  double bytes() const { return 2.0 * static_cast<double>(n) * (sizeof(K) + (pairs ? sizeof(Val) : 0)); }
  const K* pa() const { return thrust::raw_pointer_cast(a.data()); }
  const K* pb() const { return thrust::raw_pointer_cast(b.data()); }
  K* po() { return thrust::raw_pointer_cast(out.data()); }
  const Val* pav() const { return thrust::raw_pointer_cast(av.data()); }
  const Val* pbv() const { return thrust::raw_pointer_cast(bv.data()); }
  Val* pvo() { return thrust::raw_pointer_cast(vout.data()); }

  void verify(const std::string& impl) {
    cuda_check(cudaStreamSynchronize(s), "sync");
    check(host_copy(out) == ref_keys, impl + " " + algorithm() + " keys, n=" + std::to_string(n));
    if constexpr (pairs) check(host_copy(vout) == ref_vals, impl + " " + algorithm() + " values, n=" + std::to_string(n));
    cuda_check(cudaMemsetAsync(po(), 0, n * sizeof(K), s), "clear");
    if constexpr (pairs) cuda_check(cudaMemsetAsync(pvo(), 0, n * sizeof(Val), s), "clear");
  }

  // As users call it: the default allocator (libmerge's pool; a merge's
  // temporaries are its tile partitions, a few KB to MB).
  template <class Box = lm::tuned_launch_box>
  void run_lm() {
    auto policy = lm::cuda::par.on(s);
    if constexpr (pairs) {
      if constexpr (std::is_same_v<Box, lm::tuned_launch_box>) {
        lm::merge_by_key(policy, pa(), pa() + na, pb(), pb() + nb, pav(), pbv(), po(), pvo());
      } else {
        lm::merge_by_key(policy.with(Box{}), pa(), pa() + na, pb(), pb() + nb, pav(), pbv(), po(), pvo());
      }
    } else {
      if constexpr (std::is_same_v<Box, lm::tuned_launch_box>) {
        lm::merge(policy, pa(), pa() + na, pb(), pb() + nb, po());
      } else {
        lm::merge(policy.with(Box{}), pa(), pa() + na, pb(), pb() + nb, po());
      }
    }
  }
  // The checked call (.checked()): one sortedness read of each input, a wait
  // for its answer, then the merge.
  void run_lm_checked() {
    auto policy = lm::cuda::par.on(s).checked();
    if constexpr (pairs) {
      lm::merge_by_key(policy, pa(), pa() + na, pb(), pb() + nb, pav(), pbv(), po(), pvo());
    } else {
      lm::merge(policy, pa(), pa() + na, pb(), pb() + nb, po());
    }
  }
  void run_cub() {
    std::size_t bytes_in = 0;
    for (void* temp : {static_cast<void*>(nullptr), static_cast<void*>(cub_temp)}) {
      if (temp && bytes_in > cub_capacity) throw std::runtime_error("cub temporary storage too small");
      if constexpr (pairs) {
        cuda_check(cub::DeviceMerge::MergePairs(temp, bytes_in, pa(), pav(), na, pb(), pbv(), nb, po(), pvo(), lm::less<>(), s), "cub");
      } else {
        cuda_check(cub::DeviceMerge::MergeKeys(temp, bytes_in, pa(), na, pb(), nb, po(), lm::less<>(), s), "cub");
      }
    }
  }
  void run_thrust() {
    auto policy = thrust::cuda::par_nosync(*thrust_temp).on(s);
    if constexpr (pairs) {
      thrust::merge_by_key(policy, pa(), pa() + na, pb(), pb() + nb, pav(), pbv(), po(), pvo());
    } else {
      thrust::merge(policy, pa(), pa() + na, pb(), pb() + nb, po());
    }
  }

  void record(const std::string& impl, double ms) { results.push_back({"gpu", algorithm(), type_name, impl, n, ms, bytes()}); }
};

// libmerge (tuned), CUB and Thrust, interleaved over three rounds so that drifts
// in clock or temperature hit all three alike.
template <class K, class V>
void gpu_case(gpu_timer& timer, merge_case<K, V>& c) {
  c.run_lm();
  c.verify("libmerge");
  c.run_cub();
  c.verify("cub");
  c.run_thrust();
  c.verify("thrust");
  c.run_lm_checked();
  c.verify("libmerge checked");
  std::vector<double> t_lm, t_cub, t_thrust, t_checked;
  for (int r = 0; r < 3; ++r) {
    t_lm.push_back(timer.median_ms([&] { c.run_lm(); }));
    t_cub.push_back(timer.median_ms([&] { c.run_cub(); }));
    t_thrust.push_back(timer.median_ms([&] { c.run_thrust(); }));
    t_checked.push_back(timer.median_ms([&] { c.run_lm_checked(); }));
  }
  c.record("libmerge", median(t_lm));
  c.record("cub::DeviceMerge", median(t_cub));
  c.record("thrust", median(t_thrust));
  c.record("libmerge checked", median(t_checked));
}

// --tune: libmerge with each of Boxes against CUB, in the same run.
template <class K, class V, class... Boxes>
void tune_case(gpu_timer& timer, merge_case<K, V>& c) {
  c.run_cub();
  c.verify("cub");
  c.record("cub::DeviceMerge", timer.median_ms([&] { c.run_cub(); }));
  auto one = [&](auto box) {
    using Box = decltype(box);
    c.template run_lm<Box>();
    c.verify("libmerge box");
    const std::string name = "libmerge " + std::to_string(Box::nt) + "x" + std::to_string(Box::vt);
    c.record(name, timer.median_ms([&] { c.template run_lm<Box>(); }));
  };
  (one(Boxes{}), ...);
  c.record("cub::DeviceMerge", timer.median_ms([&] { c.run_cub(); }));
}

double copy_rate_gbs(gpu_timer& timer) {
  const std::size_t bytes = std::size_t(1) << 30;
  char *src = nullptr, *dst = nullptr;
  cuda_check(cudaMalloc(&src, bytes), "copy src");
  cuda_check(cudaMalloc(&dst, bytes), "copy dst");
  cuda_check(cudaMemset(src, 1, bytes), "memset");
  const double ms = timer.median_ms([&] { cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, timer.stream), "copy"); });
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * static_cast<double>(bytes) / (ms * 1e6);  // read + write
}

void run_gpu(const options& opt, std::string& device_name, double& copy_gbs) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    std::printf("\nGPU: no CUDA device, GPU rows skipped\n");
    return;
  }
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "properties");
  device_name = prop.name;
  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  gpu_timer timer(s, opt.runs ? opt.runs : 25);
  copy_gbs = copy_rate_gbs(timer);

  const std::size_t temp_bytes = std::size_t(64) << 20;
  char *cub_buf = nullptr, *thrust_buf = nullptr;
  cuda_check(cudaMalloc(&cub_buf, temp_bytes), "temp");
  cuda_check(cudaMalloc(&thrust_buf, temp_bytes), "temp");
  thrust_arena thrust_temp{thrust_buf, temp_bytes, 0, 0};

  if (opt.profile) {
    // One call of each on 2^26 (--profile-log2) int32 keys and pairs, for a
    // profiler (ncu) or compute-sanitizer to look at.
    const long long n = 1LL << opt.profile_log2;
    merge_case<std::int32_t, void> keys(n, "int32", s, &thrust_temp, cub_buf, temp_bytes);
    merge_case<std::int32_t, std::int32_t> pairs(n, "int32/int32", s, &thrust_temp, cub_buf, temp_bytes);
    keys.run_lm();
    keys.run_cub();
    pairs.run_lm();
    pairs.run_cub();
    cuda_check(cudaStreamSynchronize(s), "profile");
    return;
  }
  // Every power of two: the keys-only margin over CUB is thin and must hold
  // at each size (2^22 is one partial wave of tiles).
  std::vector<int> log2n = opt.quick ? std::vector<int>{20, 24} : std::vector<int>{20, 21, 22, 23, 24, 25, 26, 27, 28};
  if (opt.tune) log2n = {20, 24, 28};
  if (opt.tune_small) log2n = {20, 21, 22, 23};
  if (!opt.sizes.empty()) log2n = opt.sizes;
  for (int k : log2n) {
    const long long n = 1LL << k;
    std::fprintf(stderr, "gpu cases at 2^%d\n", k);
    merge_case<std::int32_t, void> keys(n, "int32", s, &thrust_temp, cub_buf, temp_bytes);
    merge_case<std::int32_t, std::int32_t> pairs(n, "int32/int32", s, &thrust_temp, cub_buf, temp_bytes);
    merge_case<std::int64_t, void> wide(n, "int64", s, &thrust_temp, cub_buf, temp_bytes);
    if (opt.tune_small) {
      // Smaller tiles give more CTAs where the tuned tile leaves SMs idle.
      using lm::launch_box;
      tune_case<std::int32_t, void, launch_box<128, 15>, launch_box<256, 11>, launch_box<256, 15>, launch_box<256, 19>,
                launch_box<512, 7>, launch_box<512, 11>, launch_box<512, 15>, launch_box<512, 19>>(timer, keys);
      tune_case<std::int32_t, std::int32_t, launch_box<256, 7>, launch_box<256, 9>, launch_box<512, 5>,
                launch_box<512, 7>, launch_box<512, 9>>(timer, pairs);
      tune_case<std::int64_t, void, launch_box<256, 7>, launch_box<256, 9>, launch_box<512, 5>, launch_box<512, 7>,
                launch_box<512, 9>>(timer, wide);
    } else if (opt.tune) {
      // The shapes around each tuned line (policies/cuda.hpp).
      using lm::launch_box;
      tune_case<std::int32_t, void, launch_box<256, 23>, launch_box<384, 19>, launch_box<384, 23>, launch_box<512, 15>,
                launch_box<512, 17>, launch_box<512, 19>, launch_box<512, 21>, launch_box<512, 23>>(timer, keys);
      tune_case<std::int32_t, std::int32_t, launch_box<256, 9>, launch_box<384, 9>, launch_box<512, 7>, launch_box<512, 9>,
                launch_box<512, 11>>(timer, pairs);
      tune_case<std::int64_t, void, launch_box<256, 11>, launch_box<384, 9>, launch_box<512, 7>, launch_box<512, 9>,
                launch_box<512, 11>>(timer, wide);
    } else {
      gpu_case(timer, keys);
      gpu_case(timer, pairs);
      gpu_case(timer, wide);
    }
  }
  cudaFree(cub_buf);
  cudaFree(thrust_buf);
  cudaStreamDestroy(s);

  std::printf("\nGPU: %s, device-to-device copy %.0f GB/s (read + write), cold L2, median of %d runs x 3 rounds; CUB %d.%d.%d\n",
              device_name.c_str(), copy_gbs, timer.runs, CUB_VERSION / 100000, CUB_VERSION / 100 % 1000,
              CUB_VERSION % 100);
  std::printf("%-13s %-12s %6s %-17s %9s %8s %8s %7s %8s %9s\n", "algorithm", "type", "log2n", "implementation",
              "ms", "Gkeys/s", "GB/s", "%copy", "vs cub", "vs thrust");
  for (const result& r : results) {
    if (r.section != "gpu") continue;
    double cub = 0, thr = 0;
    for (const result& p : results) {
      if (p.section != "gpu" || p.algorithm != r.algorithm || p.type != r.type || p.n != r.n) continue;
      if (p.impl == "cub::DeviceMerge") cub = p.ms;
      if (p.impl == "thrust") thr = p.ms;
    }
    int lg = 0;
    while ((1LL << lg) < r.n) ++lg;
    const double gbs = r.bytes / (r.ms * 1e6);
    std::printf("%-13s %-12s %6d %-17s %9.4f %8.2f %8.0f %6.1f%% %7.3fx %8.3fx\n", r.algorithm.c_str(), r.type.c_str(), lg,
                r.impl.c_str(), r.ms, static_cast<double>(r.n) / (r.ms * 1e6), gbs, 100.0 * gbs / copy_gbs, cub / r.ms,
                thr / r.ms);
  }
}
#endif

void write_json(const std::string& path, const std::string& device, double copy_gbs) {
  std::ofstream f(path);
  f << "{\n  \"device\": \"" << json_escape(device) << "\",\n  \"copy_gbs\": " << copy_gbs;
  // The run's date and the peers' versions (scripts/readme_tables.py names them).
  f << ",\n  \"date\": \"" << bench_meta::iso_date() << "\",\n  \"cpu\": \"" << json_escape(bench_meta::cpu_model())
    << "\",\n  \"compiler\": \"" << json_escape(bench_meta::compiler()) << "\"";
#if LIBMERGE_HAS_CUDA
  f << ",\n  \"cub_version\": \"" << bench_meta::cccl_version(CUB_VERSION) << "\",\n  \"thrust_version\": \""
    << bench_meta::cccl_version(THRUST_VERSION) << "\",\n  \"allocator\": \"default (lm::cuda::pool_allocator)\"";
#endif
  f << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const result& r = results[i];
    f << "    {\"section\": \"" << r.section << "\", \"algorithm\": \"" << json_escape(r.algorithm) << "\", \"type\": \""
      << r.type << "\", \"impl\": \"" << json_escape(r.impl) << "\", \"n\": " << r.n << ", \"ms\": " << r.ms
      << ", \"bytes\": " << r.bytes << "}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
  std::printf("\nwrote %s\n", path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cpu") opt.cpu = true;
    else if (a == "--gpu") opt.gpu = true;
    else if (a == "--quick") opt.quick = true;
    else if (a == "--tune") opt.tune = opt.gpu = true;
    else if (a == "--tune-small") opt.tune_small = opt.gpu = true;
    else if (a == "--profile") opt.profile = opt.gpu = true;
    else if (a == "--profile-log2" && i + 1 < argc) opt.profile_log2 = std::atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc) opt.json = argv[++i];
    else if (a == "--runs" && i + 1 < argc) opt.runs = std::atoi(argv[++i]);
    else if (a == "--sizes" && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string lg; std::getline(list, lg, ',');) opt.sizes.push_back(std::atoi(lg.c_str()));
    } else {
      std::fprintf(stderr, "usage: libmerge_bench [--cpu] [--gpu] [--tune] [--tune-small] [--profile [--profile-log2 K]] [--json FILE] [--runs R] [--quick] [--sizes 20,24,28]\n");
      return 2;
    }
  }
  if (!opt.cpu && !opt.gpu) opt.cpu = opt.gpu = true;
  std::string device = "cpu only";
  double copy_gbs = 0;
  try {
    if (opt.cpu) run_cpu(opt);
#if LIBMERGE_HAS_CUDA
    if (opt.gpu) run_gpu(opt, device, copy_gbs);
#else
    if (opt.gpu) std::printf("\nGPU: built without CUDA, GPU rows skipped\n");
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libmerge_bench: %s\n", e.what());
    return 1;
  }
  write_json(opt.json, device, copy_gbs);
  return 0;
}
