// GPU merge sort benchmark: lm::merge_sort / merge_sort_by_key against
// cub::DeviceMergeSort (SortKeys / SortPairs), thrust::sort(_by_key) with a
// custom comparator (which runs CUB's merge sort) and, as the
// non-comparison reference, cub::DeviceRadixSort, all in the same run.
//
//   libmerge_sort_bench [--quick] [--tune] [--tune-small] [--tune-wide] [--launch] [--profile] [--profile-log2 K] [--profile-pairs-log2 K] [--log2 K]... [--runs R] [--json FILE]
//
// Method: every timed run sorts a fresh copy of the same input (copied in,
// then a write of 4x the L2 size, both outside the timing), timed with CUDA
// events; the median of R runs after two warm-ups. Temporary storage is
// allocated outside the timing for every implementation. lm's output is
// checked once against CUB's (both sorts are stable, so they must be equal).
// --tune times several launch boxes of lm against CUB at 2^24 and 2^28,
// --tune-small smaller boxes at 2^16 to 2^22, --tune-wide 256-thread boxes
// for 16- and 8-byte keys and pairs at 2^24 and 2^28; --launch prints, at
// 2^16 to 2^22, how long the host takes to enqueue one sort (the call with
// nothing timed on the GPU: when it is close to the GPU time, the GPU waits
// for the host) beside the GPU time, and the GPU time of the same sort
// replayed from a CUDA graph (no host work between kernels), for lm and
// CUB; --profile runs one sort
// of 2^28 int32 keys of each implementation, for ncu (--profile-log2 K: 2^K;
// --profile-pairs-log2 K: one of 2^K int32/int32 pairs).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <thrust/device_vector.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/random.h>
#include <thrust/reverse.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/version.h>

#include <libmerge/libmerge.hpp>

#include "bench_meta.hpp"
#include "gpu_bench_support.cuh"

namespace lm = libmerge;

namespace {

struct options {
  bool quick = false, tune = false, tune_small = false, tune_wide = false, launch = false, profile = false,
       profile_pairs = false;
  int runs = 15;
  int profile_log2 = 28;
  std::vector<int> sizes;  // --log2 K (repeatable): only these sizes
  std::string json = "libmerge_sort_bench.json";
};

struct record {  // the 16-byte struct key of the tests
  std::int64_t major;
  std::int32_t minor;
  std::int32_t tag;
};
struct record_less {
  __host__ __device__ bool operator()(const record& x, const record& y) const {
    return x.major < y.major || (x.major == y.major && x.minor < y.minor);
  }
};
struct int_less {  // a custom comparator: keeps Thrust on its merge sort
  template <class T>
  __host__ __device__ bool operator()(const T& a, const T& b) const {
    return a < b;
  }
};
struct string_less {
  const char* chars;
  __host__ __device__ bool operator()(std::uint32_t a, std::uint32_t b) const {
    const char* x = chars + a;
    const char* y = chars + b;
    while (*x != '\0' && *x == *y) {
      ++x;
      ++y;
    }
    return static_cast<unsigned char>(*x) < static_cast<unsigned char>(*y);
  }
};

template <class T>
struct random_key {
  std::uint64_t seed;
  __host__ __device__ T operator()(long long i) const {
    thrust::default_random_engine e(static_cast<unsigned>(seed * 1000003u + static_cast<unsigned long long>(i)));
    e.discard(3);
    const std::uint64_t bits = (static_cast<std::uint64_t>(e()) << 32) ^ e() ^ (static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull);
    if constexpr (std::is_same_v<T, record>) {
      return record{static_cast<std::int64_t>(bits % 100000), static_cast<std::int32_t>((bits >> 40) % 8), static_cast<std::int32_t>(i)};
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(static_cast<std::int64_t>(bits)) / T(1 << 20);  // both signs, no NaN, no -0.0
    } else {
      return static_cast<T>(bits);
    }
  }
};

// Input shapes of the issue's table.
enum class shape { random, sorted, reversed, runs16, nearly };
const char* name(shape s) {
  switch (s) {
    case shape::random: return "random";
    case shape::sorted: return "sorted";
    case shape::reversed: return "reversed";
    case shape::runs16: return "runs2^16";
    case shape::nearly: return "nearly";
  }
  return "?";
}

struct result {
  std::string type, shape, impl;
  long long n;
  double ms, bytes;
};
std::vector<result> results;

// Median time of sort() on a fresh copy of the input each run.
struct sort_timer {
  cudaStream_t stream;
  cudaEvent_t start, stop;
  char* flush = nullptr;
  std::size_t flush_bytes = 0;
  int runs;
  sort_timer(cudaStream_t s, int r) : stream(s), runs(r) {
    cuda_check(cudaEventCreate(&start), "event");
    cuda_check(cudaEventCreate(&stop), "event");
    int device = 0, l2 = 0;
    cuda_check(cudaGetDevice(&device), "device");
    cuda_check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "l2");
    flush_bytes = 4 * static_cast<std::size_t>(l2);
    cuda_check(cudaMalloc(&flush, flush_bytes), "flush");
  }
  ~sort_timer() {
    cudaFree(flush);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  template <class Setup, class Sort>
  double median_ms(Setup&& setup, Sort&& sort) {
    std::vector<double> t;
    for (int i = 0; i < runs + 2; ++i) {
      setup();
      cuda_check(cudaMemsetAsync(flush, i & 0xff, flush_bytes, stream), "flush");
      cuda_check(cudaEventRecord(start, stream), "record");
      sort();
      cuda_check(cudaEventRecord(stop, stream), "record");
      cuda_check(cudaEventSynchronize(stop), "sync");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
      if (i >= 2) t.push_back(ms);
    }
    cuda_check(cudaGetLastError(), "timed work");
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

struct context {
  cudaStream_t stream;
  sort_timer* timer;
  arena temp;  // lm and CUB
  thrust_arena* thrust_temp;
};

// One case: keys K (values V, void for keys only) of one shape.
template <class K, class V, class Comp>
struct sort_case {
  context& ctx;
  std::string type;
  shape s;
  long long n;
  Comp comp;
  thrust::device_vector<K> input, keys, cub_keys;
  thrust::device_vector<std::conditional_t<std::is_void_v<V>, char, V>> vinput, vals, cub_vals;
  static constexpr bool pairs = !std::is_void_v<V>;
  using VV = std::conditional_t<pairs, V, char>;

  sort_case(context& c, std::string t, shape sh, long long count, Comp cmp, thrust::device_vector<K> in)
      : ctx(c), type(std::move(t)), s(sh), n(count), comp(cmp), input(std::move(in)), keys(n), cub_keys(n) {
    if constexpr (pairs) {
      vinput.resize(n);
      thrust::transform(thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(n), vinput.begin(),
                        random_key<V>{17});
      vals.resize(n);
      cub_vals.resize(n);
    }
  }
  K* k() { return thrust::raw_pointer_cast(keys.data()); }
  VV* v() { return thrust::raw_pointer_cast(vals.data()); }
  void setup() {
    cuda_check(cudaMemcpyAsync(k(), thrust::raw_pointer_cast(input.data()), n * sizeof(K), cudaMemcpyDeviceToDevice, ctx.stream), "copy");
    if constexpr (pairs) {
      cuda_check(cudaMemcpyAsync(v(), thrust::raw_pointer_cast(vinput.data()), n * sizeof(VV), cudaMemcpyDeviceToDevice, ctx.stream), "copy");
    }
  }
  // int_less keeps Thrust on its merge sort and is CUB's comparator; lm is
  // called as its users call it, with its default comparator (lm::less),
  // except in run_lm_with_comp.
  template <class Policy>
  void run_lm(const Policy& p) {
    if constexpr (std::is_same_v<Comp, int_less>) {
      if constexpr (pairs) {
        lm::merge_sort_by_key(p, k(), k() + n, v());
      } else {
        lm::merge_sort(p, k(), k() + n);
      }
    } else {
      run_lm_with_comp(p);
    }
  }
  template <class Policy>
  void run_lm_with_comp(const Policy& p) {
    if constexpr (pairs) {
      lm::merge_sort_by_key(p, k(), k() + n, v(), comp);
    } else {
      lm::merge_sort(p, k(), k() + n, comp);
    }
  }
  void run_cub() {
    std::size_t bytes = ctx.temp.capacity;
    if constexpr (pairs) {
      cuda_check(cub::DeviceMergeSort::SortPairs(ctx.temp.base, bytes, k(), v(), n, comp, ctx.stream), "cub");
    } else {
      cuda_check(cub::DeviceMergeSort::SortKeys(ctx.temp.base, bytes, k(), n, comp, ctx.stream), "cub");
    }
  }
  void run_thrust() {
    auto policy = thrust::cuda::par_nosync(*ctx.thrust_temp).on(ctx.stream);
    if constexpr (pairs) {
      thrust::sort_by_key(policy, k(), k() + n, v(), comp);
    } else {
      thrust::sort(policy, k(), k() + n, comp);
    }
  }
  // lm::sort and thrust::sort as their users call them for numbers in their
  // natural order (Thrust: its radix sort).
  template <class Policy>
  void run_lm_sort(const Policy& p) {
    if constexpr (pairs) {
      lm::sort_by_key(p, k(), k() + n, v());
    } else {
      lm::sort(p, k(), k() + n);
    }
  }
  void run_thrust_natural() {
    auto policy = thrust::cuda::par_nosync(*ctx.thrust_temp).on(ctx.stream);
    if constexpr (pairs) {
      thrust::sort_by_key(policy, k(), k() + n, v());
    } else {
      thrust::sort(policy, k(), k() + n);
    }
  }
  void run_radix() {
    if constexpr (std::is_integral_v<K>) {
      std::size_t bytes = ctx.temp.capacity;
      // In place through DoubleBuffer: the alternate buffer is cub_keys.
      cub::DoubleBuffer<K> db(k(), thrust::raw_pointer_cast(cub_keys.data()));
      if constexpr (pairs) {
        cub::DoubleBuffer<VV> dv(v(), thrust::raw_pointer_cast(cub_vals.data()));
        cuda_check(cub::DeviceRadixSort::SortPairs(ctx.temp.base, bytes, db, dv, n, 0, sizeof(K) * 8, ctx.stream), "radix");
      } else {
        cuda_check(cub::DeviceRadixSort::SortKeys(ctx.temp.base, bytes, db, n, 0, sizeof(K) * 8, ctx.stream), "radix");
      }
    }
  }
  double bytes() const { return 2.0 * n * (sizeof(K) + (pairs ? sizeof(VV) : 0)); }
  void record(const std::string& impl, double ms) { results.push_back({type, name(s), impl, n, ms, bytes()}); }

  // lm's output equals CUB's (both stable).
  void verify() {
    setup();
    run_cub();
    cuda_check(cudaStreamSynchronize(ctx.stream), "cub");
    thrust::copy(keys.begin(), keys.end(), cub_keys.begin());
    if constexpr (pairs) thrust::copy(vals.begin(), vals.end(), cub_vals.begin());
    setup();
    run_lm(lm::cuda::par.on(ctx.stream).with_allocator(ctx.temp));
    cuda_check(cudaStreamSynchronize(ctx.stream), "lm");
    bool ok = thrust::equal(keys.begin(), keys.end(), cub_keys.begin(), [] __device__(const K& a, const K& b) {
      const auto* x = reinterpret_cast<const unsigned char*>(&a);
      const auto* y = reinterpret_cast<const unsigned char*>(&b);
      for (std::size_t i = 0; i < sizeof(K); ++i) {
        if (x[i] != y[i]) return false;
      }
      return true;
    });
    if constexpr (pairs) ok = ok && thrust::equal(vals.begin(), vals.end(), cub_vals.begin());
    if (!ok) throw std::runtime_error("lm::merge_sort differs from cub::DeviceMergeSort: " + type + " " + name(s));
    if constexpr (std::is_same_v<Comp, int_less>) {  // lm::sort's too (both stable)
      setup();
      run_lm_sort(lm::cuda::par.on(ctx.stream));
      cuda_check(cudaStreamSynchronize(ctx.stream), "lm::sort");
      ok = thrust::equal(keys.begin(), keys.end(), cub_keys.begin());
      if constexpr (pairs) ok = ok && thrust::equal(vals.begin(), vals.end(), cub_vals.begin());
      if (!ok) throw std::runtime_error("lm::sort differs from cub::DeviceMergeSort: " + type + " " + name(s));
    }
  }

  void time_all(bool radix) {
    verify();
    auto su = [&] { setup(); };
    // "lm": as users call it, with the default allocator (libmerge's pool);
    // "lm, caching allocator": the scratch from the benchmark's arena.
    record("lm", ctx.timer->median_ms(su, [&] { run_lm(lm::cuda::par.on(ctx.stream)); }));
    record("lm, caching allocator",
           ctx.timer->median_ms(su, [&] { run_lm(lm::cuda::par.on(ctx.stream).with_allocator(ctx.temp)); }));
    if (std::is_same_v<Comp, int_less> && s == shape::random) {
      // The same keys under a comparator of the caller's own (int_less):
      // the tuning table's passes for any comparator (policies/cuda.hpp).
      record("lm, custom comparator", ctx.timer->median_ms(su, [&] { run_lm_with_comp(lm::cuda::par.on(ctx.stream)); }));
    }
    if constexpr (std::is_same_v<Comp, int_less>) {
      // "lm, checked": the comparator's sample check (the call waits for
      // it) and the permutation guard (docs/cuda-merge-sort.md).
      if (s == shape::random) {
        record("lm, checked", ctx.timer->median_ms(su, [&] { run_lm(lm::cuda::par.on(ctx.stream).checked()); }));
      }
    }
    record("cub::DeviceMergeSort", ctx.timer->median_ms(su, [&] { run_cub(); }));
    record("thrust::sort", ctx.timer->median_ms(su, [&] { run_thrust(); }));
    if constexpr (std::is_same_v<Comp, int_less>) {
      record("lm::sort", ctx.timer->median_ms(su, [&] { run_lm_sort(lm::cuda::par.on(ctx.stream)); }));
      record("thrust::sort, natural order", ctx.timer->median_ms(su, [&] { run_thrust_natural(); }));
    }
    if (radix && std::is_integral_v<K>) record("cub::DeviceRadixSort", ctx.timer->median_ms(su, [&] { run_radix(); }));
  }

  template <class... Boxes>
  void tune(Boxes...) {
    verify();
    auto su = [&] { setup(); };
    record("cub::DeviceMergeSort", ctx.timer->median_ms(su, [&] { run_cub(); }));
    auto one = [&](auto boxes) {
      using B = decltype(boxes);
      const auto p = lm::cuda::par.on(ctx.stream).with_allocator(ctx.temp).with(B{});
      char label[96];
      std::snprintf(label, sizeof label, "lm %dx%d / %dx%d %d-way", B::block_sort::nt, B::block_sort::vt, B::merge::nt,
                    B::merge::vt, B::ways);
      record(label, ctx.timer->median_ms(su, [&] { run_lm(p); }));
    };
    record("lm tuned", ctx.timer->median_ms(su, [&] { run_lm(lm::cuda::par.on(ctx.stream).with_allocator(ctx.temp)); }));
    (one(Boxes{}), ...);
  }
};

// Strings by index: offsets of random strings (4 to 15 of 8 letters) in one
// character buffer.
struct string_input {
  thrust::device_vector<char> chars;
  thrust::device_vector<std::uint32_t> offsets;
};
string_input make_strings(long long n) {
  std::vector<char> chars;
  std::vector<std::uint32_t> offsets(n);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (long long i = 0; i < n; ++i) {
    offsets[i] = static_cast<std::uint32_t>(chars.size());
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const int len = 4 + static_cast<int>((x >> 60) % 12);
    for (int c = 0; c < len; ++c) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      chars.push_back(static_cast<char>('a' + (x >> 59) % 8));
    }
    chars.push_back('\0');
  }
  return {thrust::device_vector<char>(chars.begin(), chars.end()),
          thrust::device_vector<std::uint32_t>(offsets.begin(), offsets.end())};
}

template <class K>
thrust::device_vector<K> make_keys(long long n, shape s, std::uint64_t seed) {
  thrust::device_vector<K> v(n);
  thrust::transform(thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(n), v.begin(),
                    random_key<K>{seed});
  auto less = [] __device__(const K& a, const K& b) {
    if constexpr (std::is_same_v<K, record>) return record_less{}(a, b);
    else return a < b;
  };
  if (s == shape::sorted || s == shape::nearly) thrust::stable_sort(v.begin(), v.end(), less);
  if (s == shape::reversed) {
    thrust::stable_sort(v.begin(), v.end(), less);
    thrust::reverse(v.begin(), v.end());
  }
  if (s == shape::runs16) {
    // Sorted runs of 2^16: sort by (position / 2^16, key).
    const long long run = 1 << 16;
    thrust::device_vector<long long> seg(n);
    thrust::transform(thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(n), seg.begin(),
                      [=] __device__(long long i) { return i / run; });
    thrust::stable_sort_by_key(v.begin(), v.end(), seg.begin(), less);
    thrust::stable_sort_by_key(seg.begin(), seg.end(), v.begin());
  }
  if (s == shape::nearly) {
    // 1% of positions swapped with random partners.
    std::vector<K> h(n);
    thrust::copy(v.begin(), v.end(), h.begin());
    std::uint64_t x = 88172645463325252ull;
    auto next = [&] { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x; };
    for (long long i = 0; i < n / 100; ++i) std::swap(h[next() % n], h[next() % n]);
    thrust::copy(h.begin(), h.end(), v.begin());
  }
  return v;
}

double copy_rate_gbs(cudaStream_t s) {
  const std::size_t bytes = std::size_t(1) << 30;
  char *src = nullptr, *dst = nullptr;
  cuda_check(cudaMalloc(&src, bytes), "copy");
  cuda_check(cudaMalloc(&dst, bytes), "copy");
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  for (int i = 0; i < 12; ++i) {
    cudaEventRecord(a, s);
    cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "copy");
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (i >= 2) t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * bytes / (t[t.size() / 2] * 1e6);
}

void print_table(const std::string& device, double copy_gbs, int runs) {
  std::printf("\nGPU: %s, device-to-device copy %.0f GB/s (read + write), cold L2, median of %d runs; CUB %d.%d.%d\n",
              device.c_str(), copy_gbs, runs, CUB_VERSION / 100000, CUB_VERSION / 100 % 1000, CUB_VERSION % 100);
  std::printf("%-12s %-9s %5s %-28s %10s %9s %7s %9s %9s %9s\n", "type", "shape", "log2n", "implementation", "ms",
              "Gkeys/s", "%copy", "vs cub", "vs thrust", "vs radix");
  for (const result& r : results) {
    double cub = 0, thr = 0, radix = 0;  // radix: thrust::sort in the natural order
    for (const result& p : results) {
      if (p.type != r.type || p.shape != r.shape || p.n != r.n) continue;
      if (p.impl == "cub::DeviceMergeSort") cub = p.ms;
      if (p.impl == "thrust::sort") thr = p.ms;
      if (p.impl == "thrust::sort, natural order") radix = p.ms;
    }
    int lg = 0;
    while ((1LL << lg) < r.n) ++lg;
    // %copy: one read and one write of the data, what a single pass would cost.
    const double pass_ms = r.bytes / (copy_gbs * 1e6);
    std::printf("%-12s %-9s %5d %-28s %10.4f %9.3f %6.1f%% %8.3fx %8.3fx %8.3fx\n", r.type.c_str(), r.shape.c_str(),
                lg, r.impl.c_str(), r.ms, r.n / (r.ms * 1e6), 100.0 * pass_ms / r.ms, cub > 0 ? cub / r.ms : 0.0,
                thr > 0 ? thr / r.ms : 0.0, radix > 0 ? radix / r.ms : 0.0);
  }
}

void write_json(const std::string& path, const std::string& device, double copy_gbs) {
  std::ofstream f(path);
  // The run's date and the peers' versions (scripts/readme_tables.py names
  // them); "lm" rows use the default allocator, "lm, caching allocator" an arena.
  f << "{\n  \"device\": \"" << device << "\",\n  \"copy_gbs\": " << copy_gbs << ",\n  \"date\": \""
    << bench_meta::iso_date() << "\",\n  \"cub_version\": \"" << bench_meta::cccl_version(CUB_VERSION)
    << "\",\n  \"thrust_version\": \"" << bench_meta::cccl_version(THRUST_VERSION)
    << "\",\n  \"allocator\": \"default (lm::cuda::pool_allocator)\",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const result& r = results[i];
    f << "    {\"type\": \"" << r.type << "\", \"shape\": \"" << r.shape << "\", \"impl\": \"" << r.impl
      << "\", \"n\": " << r.n << ", \"ms\": " << r.ms << ", \"bytes\": " << r.bytes << "}"
      << (i + 1 < results.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") opt.quick = true;
    else if (a == "--tune") opt.tune = true;
    else if (a == "--tune-small") opt.tune_small = true;
    else if (a == "--tune-wide") opt.tune_wide = true;
    else if (a == "--launch") opt.launch = true;
    else if (a == "--log2" && i + 1 < argc) opt.sizes.push_back(std::atoi(argv[++i]));
    else if (a == "--profile") opt.profile = true;
    else if (a == "--profile-log2" && i + 1 < argc) opt.profile = true, opt.profile_log2 = std::atoi(argv[++i]);
    else if (a == "--profile-pairs-log2" && i + 1 < argc) opt.profile_pairs = true, opt.profile_log2 = std::atoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) opt.runs = std::atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc) opt.json = argv[++i];
    else {
      std::fprintf(stderr, "usage: libmerge_sort_bench [--quick] [--tune] [--tune-small] [--tune-wide] [--launch] [--profile] [--profile-log2 K] [--profile-pairs-log2 K] [--log2 K]... [--runs R] [--json FILE]\n");
      return 2;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device: nothing to measure\n");
    return 0;
  }
  try {
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "properties");
    cudaStream_t s;
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    sort_timer timer(s, opt.runs);
    const double copy_gbs = copy_rate_gbs(s);
    const std::size_t temp_bytes = std::size_t(5) << 30;
    char *temp = nullptr, *thrust_buf = nullptr;
    cuda_check(cudaMalloc(&temp, temp_bytes), "temp");
    cuda_check(cudaMalloc(&thrust_buf, temp_bytes), "temp");
    thrust_arena tt{thrust_buf, temp_bytes};
    context ctx{s, &timer, arena{temp, temp_bytes}, &tt};

    // --profile, --profile-pairs-log2: one sort by each library, for ncu.
    const auto profile_once = [&](auto& c) {
      c.setup();
      c.run_lm(lm::cuda::par.on(s).with_allocator(ctx.temp));
      c.setup();
      c.run_cub();
      cuda_check(cudaStreamSynchronize(s), "profile");
      return 0;
    };
    if (opt.profile_pairs) {
      const long long n = 1LL << opt.profile_log2;
      sort_case<std::int32_t, std::int32_t, int_less> c(ctx, "int32/int32", shape::random, n, int_less{},
                                                        make_keys<std::int32_t>(n, shape::random, 2));
      return profile_once(c);
    }
    if (opt.profile) {
      const long long n = 1LL << opt.profile_log2;
      sort_case<std::int32_t, void, int_less> c(ctx, "int32", shape::random, n, int_less{}, make_keys<std::int32_t>(n, shape::random, 1));
      return profile_once(c);
    }
    if (opt.launch) {
      std::printf("%-12s %5s %-22s %12s %12s %12s\n", "type", "log2n", "implementation", "enqueue us", "GPU ms",
                  "graph ms");
      for (int lg : opt.sizes.empty() ? std::vector<int>{16, 18, 20, 22} : opt.sizes) {
        const long long n = 1LL << lg;
        sort_case<std::int32_t, void, int_less> c(ctx, "int32", shape::random, n, int_less{},
                                                  make_keys<std::int32_t>(n, shape::random, 1));
        auto enqueue_us = [&](auto&& sort) {  // median host time of the call alone
          std::vector<double> t;
          for (int i = 0; i < 30; ++i) {
            c.setup();
            cuda_check(cudaStreamSynchronize(s), "sync");
            const auto t0 = std::chrono::steady_clock::now();
            sort();
            const auto t1 = std::chrono::steady_clock::now();
            cuda_check(cudaStreamSynchronize(s), "sync");
            if (i >= 5) t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          }
          std::sort(t.begin(), t.end());
          return t[t.size() / 2];
        };
        // The same sort captured in a CUDA graph and replayed: GPU time with
        // no host work between the kernels.
        auto graph_ms = [&](auto&& sort) {
          cudaGraph_t graph;
          cudaGraphExec_t exec;
          cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
          sort();
          cuda_check(cudaStreamEndCapture(s, &graph), "capture");
          cuda_check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
          const double ms = timer.median_ms([&] { c.setup(); }, [&] { cuda_check(cudaGraphLaunch(exec, s), "graph"); });
          cudaGraphExecDestroy(exec);
          cudaGraphDestroy(graph);
          return ms;
        };
        auto su = [&] { c.setup(); };
        auto lm_sort = [&] { c.run_lm(lm::cuda::par.on(s).with_allocator(ctx.temp)); };
        auto cub_sort = [&] { c.run_cub(); };
        std::printf("%-12s %5d %-22s %12.1f %12.4f %12.4f\n", "int32", lg, "lm", enqueue_us(lm_sort),
                    timer.median_ms(su, lm_sort), graph_ms(lm_sort));
        std::printf("%-12s %5d %-22s %12.1f %12.4f %12.4f\n", "int32", lg, "cub::DeviceMergeSort", enqueue_us(cub_sort),
                    timer.median_ms(su, cub_sort), graph_ms(cub_sort));
      }
      return 0;
    }
    std::vector<int> sizes = opt.quick ? std::vector<int>{16, 20, 24} : std::vector<int>{16, 18, 20, 22, 24, 26, 28};
    if (opt.tune) sizes = {24, 28};
    if (opt.tune_small) sizes = {16, 18, 20, 22};
    if (opt.tune_wide) sizes = {24, 28};
    if (!opt.sizes.empty()) sizes = opt.sizes;
    for (int lg : sizes) {
      const long long n = 1LL << lg;
      std::fprintf(stderr, "sort cases at 2^%d\n", lg);
      if (opt.tune_wide) {
        using lm::launch_box;
        using lm::launch_boxes;
        sort_case<record, void, record_less> r(ctx, "record16", shape::random, n, record_less{}, make_keys<record>(n, shape::random, 4));
        r.tune(launch_boxes<launch_box<512, 3>, launch_box<512, 3>>{}, launch_boxes<launch_box<512, 5>, launch_box<512, 5>>{},
               launch_boxes<launch_box<256, 5>, launch_box<256, 5>>{}, launch_boxes<launch_box<256, 7>, launch_box<256, 7>>{},
               launch_boxes<launch_box<512, 5>, launch_box<512, 3>>{}, launch_boxes<launch_box<256, 7>, launch_box<512, 5>>{},
               launch_boxes<launch_box<256, 9>, launch_box<256, 5>>{}, launch_boxes<launch_box<512, 4>, launch_box<512, 3>>{},
               launch_boxes<launch_box<256, 11>, launch_box<256, 5>>{}, launch_boxes<launch_box<256, 9>, launch_box<256, 7>>{},
               launch_boxes<launch_box<256, 9>, launch_box<256, 5>, 4>{}, launch_boxes<launch_box<256, 9>, launch_box<128, 5>, 4>{});
        sort_case<std::int64_t, void, int_less> w(ctx, "int64", shape::random, n, int_less{}, make_keys<std::int64_t>(n, shape::random, 3));
        // 2-way passes (the entry's box) and 4-way passes of several boxes.
        w.tune(launch_boxes<launch_box<256, 19>, launch_box<256, 11>>{}, launch_boxes<launch_box<256, 19>, launch_box<256, 11>, 4>{},
               launch_boxes<launch_box<256, 19>, launch_box<128, 11>, 4>{}, launch_boxes<launch_box<256, 19>, launch_box<256, 9>, 4>{},
               launch_boxes<launch_box<256, 19>, launch_box<256, 13>, 4>{}, launch_boxes<launch_box<256, 19>, launch_box<128, 15>, 4>{},
               launch_boxes<launch_box<256, 19>, launch_box<512, 11>, 4>{});
        sort_case<std::int32_t, std::int32_t, int_less> p(ctx, "int32/int32", shape::random, n, int_less{}, make_keys<std::int32_t>(n, shape::random, 2));
        p.tune(launch_boxes<launch_box<256, 17>, launch_box<256, 9>>{}, launch_boxes<launch_box<256, 17>, launch_box<256, 11>>{},
               launch_boxes<launch_box<256, 13>, launch_box<256, 9>>{}, launch_boxes<launch_box<256, 17>, launch_box<256, 7>>{});
        continue;
      }
      if (opt.tune_small) {
        using lm::launch_box;
        using lm::launch_boxes;
        sort_case<std::int32_t, void, int_less> k(ctx, "int32", shape::random, n, int_less{}, make_keys<std::int32_t>(n, shape::random, 1));
        k.tune(launch_boxes<launch_box<1024, 19>, launch_box<256, 17>>{}, launch_boxes<launch_box<1024, 17>, launch_box<256, 17>>{},
               launch_boxes<launch_box<256, 15>, launch_box<256, 15>>{}, launch_boxes<launch_box<256, 17>, launch_box<256, 15>>{},
               launch_boxes<launch_box<128, 15>, launch_box<128, 15>>{}, launch_boxes<launch_box<256, 15>, launch_box<128, 15>>{},
               launch_boxes<launch_box<128, 17>, launch_box<256, 11>>{}, launch_boxes<launch_box<256, 11>, launch_box<256, 11>>{},
               launch_boxes<launch_box<512, 15>, launch_box<256, 15>>{}, launch_boxes<launch_box<128, 11>, launch_box<128, 11>>{});
        sort_case<std::int32_t, std::int32_t, int_less> p(ctx, "int32/int32", shape::random, n, int_less{}, make_keys<std::int32_t>(n, shape::random, 2));
        p.tune(launch_boxes<launch_box<128, 17>, launch_box<256, 9>>{}, launch_boxes<launch_box<256, 9>, launch_box<256, 9>>{},
               launch_boxes<launch_box<128, 9>, launch_box<128, 9>>{}, launch_boxes<launch_box<256, 17>, launch_box<256, 9>>{},
               launch_boxes<launch_box<128, 17>, launch_box<128, 9>>{});
        sort_case<std::int64_t, void, int_less> w(ctx, "int64", shape::random, n, int_less{}, make_keys<std::int64_t>(n, shape::random, 3));
        w.tune(launch_boxes<launch_box<256, 15>, launch_box<256, 15>>{}, launch_boxes<launch_box<128, 15>, launch_box<128, 15>>{},
               launch_boxes<launch_box<256, 11>, launch_box<256, 11>>{});
        continue;
      }
      if (opt.tune) {
        using lm::launch_box;
        using lm::launch_boxes;
        sort_case<std::int32_t, void, int_less> k(ctx, "int32", shape::random, n, int_less{}, make_keys<std::int32_t>(n, shape::random, 1));
        // The block sort's tuned box (512x33: 14 levels at 2^28), 2-way passes
        // and 4-way passes of several boxes (7 at 2^28; an odd level count
        // ends in one 2-way pass).
        k.tune(launch_boxes<launch_box<512, 33>, launch_box<256, 17>>{}, launch_boxes<launch_box<512, 33>, launch_box<128, 15>, 4>{},
               launch_boxes<launch_box<512, 33>, launch_box<128, 17>, 4>{}, launch_boxes<launch_box<512, 33>, launch_box<128, 19>, 4>{},
               launch_boxes<launch_box<512, 33>, launch_box<128, 23>, 4>{}, launch_boxes<launch_box<512, 33>, launch_box<256, 15>, 4>{},
               launch_boxes<launch_box<512, 33>, launch_box<256, 17>, 4>{}, launch_boxes<launch_box<512, 33>, launch_box<256, 19>, 4>{},
               launch_boxes<launch_box<512, 33>, launch_box<256, 23>, 4>{}, launch_boxes<launch_box<512, 33>, launch_box<512, 17>, 4>{});
        sort_case<std::int32_t, std::int32_t, int_less> p(ctx, "int32/int32", shape::random, n, int_less{}, make_keys<std::int32_t>(n, shape::random, 2));
        p.tune(launch_boxes<launch_box<1024, 17>, launch_box<256, 9>>{}, launch_boxes<launch_box<1024, 17>, launch_box<128, 9>, 4>{},
               launch_boxes<launch_box<1024, 17>, launch_box<128, 11>, 4>{}, launch_boxes<launch_box<1024, 17>, launch_box<256, 9>, 4>{},
               launch_boxes<launch_box<1024, 17>, launch_box<512, 9>, 4>{});
        if (lg >= 26) {  // the large sorts' boxes, random and sorted keys (a pass with nothing to merge
                         // still launches a CTA a tile)
          for (shape sh : {shape::random, shape::sorted}) {
            sort_case<std::int32_t, void, int_less> q(ctx, "int32", sh, n, int_less{}, make_keys<std::int32_t>(n, sh, 5));
            q.tune(launch_boxes<launch_box<512, 33>, launch_box<256, 23>, 4>{}, launch_boxes<launch_box<512, 33>, launch_box<512, 17>, 4>{},
                   launch_boxes<launch_box<512, 33>, launch_box<512, 23>, 4>{}, launch_boxes<launch_box<512, 33>, launch_box<512, 21>, 4>{},
                   launch_boxes<launch_box<512, 33>, launch_box<384, 23>, 4>{}, launch_boxes<launch_box<512, 33>, launch_box<256, 25>, 4>{});
          }
        }
        if (lg == 20 || lg == 24) {  // a costly comparator: each key a string
          const string_input in = make_strings(n);
          sort_case<std::uint32_t, void, string_less> st(ctx, "strings", shape::random, n,
                                                         string_less{thrust::raw_pointer_cast(in.chars.data())},
                                                         in.offsets);
          st.tune(launch_boxes<launch_box<512, 33>, launch_box<256, 17>>{}, launch_boxes<launch_box<512, 33>, launch_box<128, 17>>{},
                  launch_boxes<launch_box<512, 33>, launch_box<256, 17>, 4>{}, launch_boxes<launch_box<512, 33>, launch_box<128, 17>, 4>{});
        }
        continue;
      }
      const shape shapes[] = {shape::random, shape::sorted, shape::reversed, shape::runs16, shape::nearly};
      for (shape sh : shapes) {
        if (sh == shape::runs16 && n <= (1LL << 16)) continue;
        sort_case<std::int32_t, void, int_less>(ctx, "int32", sh, n, int_less{}, make_keys<std::int32_t>(n, sh, 1)).time_all(sh == shape::random);
      }
      sort_case<std::int32_t, std::int32_t, int_less>(ctx, "int32/int32", shape::random, n, int_less{}, make_keys<std::int32_t>(n, shape::random, 2)).time_all(true);
      sort_case<std::int64_t, void, int_less>(ctx, "int64", shape::random, n, int_less{}, make_keys<std::int64_t>(n, shape::random, 3)).time_all(true);
      sort_case<float, void, int_less>(ctx, "float", shape::random, n, int_less{}, make_keys<float>(n, shape::random, 6)).time_all(false);
      sort_case<record, void, record_less>(ctx, "record16", shape::random, n, record_less{}, make_keys<record>(n, shape::random, 4)).time_all(false);
      if (lg == 20 || lg == 24) {
        const string_input in = make_strings(n);
        sort_case<std::uint32_t, void, string_less>(ctx, "strings", shape::random, n,
                                                    string_less{thrust::raw_pointer_cast(in.chars.data())}, in.offsets)
            .time_all(false);
      }
    }
    print_table(prop.name, copy_gbs, opt.runs);
    write_json(opt.json, prop.name, copy_gbs);
    cudaFree(temp);
    cudaFree(thrust_buf);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libmerge_sort_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
