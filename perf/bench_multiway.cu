// The k-way merge benchmark: lm::multiway_merge(_by_key), called as users
// call it (default allocator), against what a CUB user does today: a tree of
// cub::DeviceMerge::MergeKeys / MergePairs calls (neighbours merged level by
// level, scratch preallocated) and cub::DeviceMergeSort::SortKeysCopy /
// SortPairsCopy of the concatenation; and the device-to-device copy of the
// same bytes (the ceiling: one read and one write of every element).
//
//   libmerge_multiway_bench [--log2 N] [--runs R] [--k K]... [--json FILE] [--tune]
//
// --tune times lm with several 4-way pass boxes (a policy's launch_boxes)
// instead of the peers.
//
// int32 keys (and int32 values), uniform random, 2^N in all (default 28)
// split evenly over K = 4, 8, 64, 1024 (or the --k values) sorted ranges of one buffer. Cold L2
// before every timed run, CUDA events, the median of R runs; every output is
// compared with CUB's merge tree once.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cub/device/device_merge.cuh>
#include <cub/device/device_merge_sort.cuh>
#include <thrust/device_vector.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/random.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/version.h>

#include <libmerge/libmerge.hpp>

#include "bench_meta.hpp"
#include "gpu_bench_support.cuh"

namespace lm = libmerge;

namespace {

struct hash_key {
  __host__ __device__ int operator()(long long i) const {
    thrust::default_random_engine e(static_cast<unsigned>(i * 2654435761ull + 12345));
    e.discard(2);
    return static_cast<int>(e() ^ (static_cast<unsigned>(i) * 0x9E3779B9u));
  }
};

// Median ms of f() on a cold L2 (a write of 4x its size before each run).
struct timer {
  cudaStream_t s;
  int runs;
  char* flush = nullptr;
  std::size_t flush_bytes = 0;
  cudaEvent_t a, b;
  timer(cudaStream_t stream, int r) : s(stream), runs(r) {
    int dev = 0, l2 = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    flush_bytes = 4 * static_cast<std::size_t>(l2);
    cuda_check(cudaMalloc(&flush, flush_bytes), "flush");
    cuda_check(cudaEventCreate(&a), "event");
    cuda_check(cudaEventCreate(&b), "event");
  }
  template <class F>
  double median_ms(F&& f) {
    for (int i = 0; i < 2; ++i) f();
    std::vector<float> t;
    for (int i = 0; i < runs; ++i) {
      cuda_check(cudaMemsetAsync(flush, i & 0xff, flush_bytes, s), "flush");
      cuda_check(cudaEventRecord(a, s), "record");
      f();
      cuda_check(cudaEventRecord(b, s), "record");
      cuda_check(cudaEventSynchronize(b), "sync");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, a, b), "elapsed");
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

struct row {
  std::string impl, type;
  int k;
  long long n;
  double ms;
};

// One K: the ranges [k * n / K, (k + 1) * n / K) of keys (and vals), each sorted.
template <bool Pairs>
struct kway_case {
  long long n;
  int k;
  cudaStream_t s;
  thrust::device_vector<int> keys, vals, out_k, out_v, ref_k, ref_v, tmp_k[2], tmp_v[2];
  std::vector<long long> at;
  char* cub_temp;
  std::size_t cub_capacity;

  kway_case(long long n_, int k_, cudaStream_t stream, char* temp, std::size_t cap)
      : n(n_), k(k_), s(stream), keys(n_), vals(Pairs ? n_ : 0), out_k(n_), out_v(Pairs ? n_ : 0), cub_temp(temp),
        cub_capacity(cap) {
    thrust::transform(thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(n), keys.begin(),
                      hash_key{});
    if (Pairs) thrust::sequence(vals.begin(), vals.end());
    for (int r = 0; r <= k; ++r) at.push_back(n * r / k);
    for (int r = 0; r < k; ++r) {
      if (Pairs) {
        thrust::stable_sort_by_key(keys.begin() + at[r], keys.begin() + at[r + 1], vals.begin() + at[r]);
      } else {
        thrust::sort(keys.begin() + at[r], keys.begin() + at[r + 1]);
      }
    }
    for (auto& t : tmp_k) t.resize(n);
    if (Pairs) {
      for (auto& t : tmp_v) t.resize(n);
    }
  }
  const int* key(long long i) const { return thrust::raw_pointer_cast(keys.data()) + i; }
  const int* val(long long i) const { return Pairs ? thrust::raw_pointer_cast(vals.data()) + i : nullptr; }

  template <class Policy = lm::cuda::policy<>>
  void run_lm(const Policy& policy = lm::cuda::par) {
    std::vector<std::pair<const int*, const int*>> ranges;
    std::vector<const int*> v;
    for (int r = 0; r < k; ++r) {
      ranges.push_back({key(at[r]), key(at[r + 1])});
      v.push_back(val(at[r]));
    }
    if constexpr (Pairs) {
      lm::multiway_merge_by_key(policy.on(s), ranges.begin(), ranges.end(), v.begin(), out_k.begin(),
                                out_v.begin());
    } else {
      lm::multiway_merge(policy.on(s), ranges.begin(), ranges.end(), out_k.begin());
    }
  }
  // Neighbours merged level by level (the lower range first: stable), the
  // last level into the output; an odd range out is copied.
  void run_cub_tree() {
    std::vector<long long> bounds = at;
    const int* src_k = key(0);
    const int* src_v = val(0);
    int levels = 0;
    while ((1 << levels) < k) ++levels;
    for (int l = 1; l <= levels; ++l) {
      int* dk = l == levels ? thrust::raw_pointer_cast(out_k.data()) : thrust::raw_pointer_cast(tmp_k[l % 2].data());
      int* dv = Pairs ? (l == levels ? thrust::raw_pointer_cast(out_v.data()) : thrust::raw_pointer_cast(tmp_v[l % 2].data()))
                      : nullptr;
      std::vector<long long> next;
      for (std::size_t r = 0; r + 1 < bounds.size(); r += 2) {
        const long long b0 = bounds[r], b1 = bounds[r + 1], b2 = r + 2 < bounds.size() ? bounds[r + 2] : b1;
        if (b2 == b1) {
          cuda_check(cudaMemcpyAsync(dk + b0, src_k + b0, (b1 - b0) * sizeof(int), cudaMemcpyDeviceToDevice, s), "copy");
          if (Pairs) cuda_check(cudaMemcpyAsync(dv + b0, src_v + b0, (b1 - b0) * sizeof(int), cudaMemcpyDeviceToDevice, s), "copy");
        } else {
          std::size_t bytes = 0;
          for (void* temp : {static_cast<void*>(nullptr), static_cast<void*>(cub_temp)}) {
            if (temp && bytes > cub_capacity) throw std::runtime_error("cub temporary storage too small");
            if constexpr (Pairs) {
              cuda_check(cub::DeviceMerge::MergePairs(temp, bytes, src_k + b0, src_v + b0, b1 - b0, src_k + b1,
                                                      src_v + b1, b2 - b1, dk + b0, dv + b0, lm::less<>(), s),
                         "cub merge");
            } else {
              cuda_check(cub::DeviceMerge::MergeKeys(temp, bytes, src_k + b0, b1 - b0, src_k + b1, b2 - b1, dk + b0,
                                                     lm::less<>(), s),
                         "cub merge");
            }
          }
        }
        next.push_back(b0);
      }
      next.push_back(n);
      bounds.swap(next);
      src_k = dk;
      src_v = dv;
    }
  }
  void run_cub_sort() {
    std::size_t bytes = 0;
    for (void* temp : {static_cast<void*>(nullptr), static_cast<void*>(cub_temp)}) {
      if (temp && bytes > cub_capacity) throw std::runtime_error("cub temporary storage too small");
      if constexpr (Pairs) {
        cuda_check(cub::DeviceMergeSort::SortPairsCopy(temp, bytes, key(0), val(0), thrust::raw_pointer_cast(out_k.data()),
                                                       thrust::raw_pointer_cast(out_v.data()), n, lm::less<>(), s),
                   "cub sort");
      } else {
        cuda_check(cub::DeviceMergeSort::SortKeysCopy(temp, bytes, key(0), thrust::raw_pointer_cast(out_k.data()), n,
                                                      lm::less<>(), s),
                   "cub sort");
      }
    }
  }
  // The first output (CUB's tree) is the reference of the others; the
  // outputs are cleared after each check, so that each is its own call's.
  void verify(const char* impl) {
    cuda_check(cudaStreamSynchronize(s), "sync");
    if (ref_k.empty()) {
      ref_k = out_k;
      ref_v = out_v;
    } else {
      const bool ok = thrust::equal(out_k.begin(), out_k.end(), ref_k.begin()) &&
                      (!Pairs || thrust::equal(out_v.begin(), out_v.end(), ref_v.begin()));
      if (!ok) {
        throw std::runtime_error(std::string(impl) + ": output differs from CUB's merge tree, K=" + std::to_string(k));
      }
    }
    thrust::fill(out_k.begin(), out_k.end(), -1);
    thrust::fill(out_v.begin(), out_v.end(), -1);
  }
};

template <bool Pairs>
void run_k(timer& t, long long n, int k, char* temp, std::size_t cap, std::vector<row>& rows) {
  kway_case<Pairs> c(n, k, t.s, temp, cap);
  const char* type = Pairs ? "int32/int32" : "int32";
  c.run_cub_tree();
  c.verify("cub tree");
  c.run_lm();
  c.verify("lm");
  c.run_cub_sort();
  c.verify("cub sort");
  for (int round = 0; round < 2; ++round) {
    rows.push_back({"lm::multiway_merge", type, k, n, t.median_ms([&] { c.run_lm(); })});
    rows.push_back({"cub::DeviceMerge tree", type, k, n, t.median_ms([&] { c.run_cub_tree(); })});
    rows.push_back({"cub::DeviceMergeSort", type, k, n, t.median_ms([&] { c.run_cub_sort(); })});
  }
}

// lm with the default boxes and with a policy's 4-way pass box of each Box.
template <bool Pairs, class... Boxes>
void tune_k(timer& t, long long n, int k, char* temp, std::size_t cap, std::vector<row>& rows) {
  kway_case<Pairs> c(n, k, t.s, temp, cap);
  const char* type = Pairs ? "int32/int32" : "int32";
  c.run_lm();
  c.verify("lm");
  auto one = [&](auto box) {
    using B = decltype(box);
    const auto policy = lm::cuda::par.with(lm::launch_boxes<lm::launch_box<64, 3>, B, 4>{});
    c.run_lm(policy);
    c.verify("lm tuned");
    rows.push_back({"lm " + std::to_string(B::nt) + "x" + std::to_string(B::vt), type, k, n,
                    t.median_ms([&] { c.run_lm(policy); })});
  };
  for (int round = 0; round < 2; ++round) {
    rows.push_back({"lm::multiway_merge", type, k, n, t.median_ms([&] { c.run_lm(); })});
    (one(Boxes{}), ...);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int log2n = 28, runs = 15;
  std::vector<int> ks;
  std::string json = "libmerge_multiway_bench.json";
  bool tune = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--log2" && i + 1 < argc) log2n = std::atoi(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else if (a == "--k" && i + 1 < argc) ks.push_back(std::atoi(argv[++i]));
    else if (a == "--tune") tune = true;
    else {
      std::fprintf(stderr, "usage: libmerge_multiway_bench [--log2 N] [--runs R] [--k K]... [--json FILE] [--tune]\n");
      return 2;
    }
  }
  try {
    cudaStream_t s;
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    timer t(s, runs);
    const long long n = 1LL << log2n;
    const std::size_t cap = std::size_t(4) << 30;  // DeviceMergeSort of 2^28 pairs takes about 2 GB
    char* temp = nullptr;
    cuda_check(cudaMalloc(&temp, cap), "cub temp");
    std::vector<row> rows;
    {
      thrust::device_vector<int> x(n), y(n);
      for (int round = 0; round < 2; ++round) {
        rows.push_back({"copy (read + write)", "int32", 1, n, t.median_ms([&] {
                          cuda_check(cudaMemcpyAsync(thrust::raw_pointer_cast(y.data()), thrust::raw_pointer_cast(x.data()),
                                                     n * sizeof(int), cudaMemcpyDeviceToDevice, s),
                                     "copy");
                        })});
      }
    }
    for (int k : ks.empty() ? std::vector<int>{4, 8, 64, 1024} : ks) {
      std::fprintf(stderr, "K = %d\n", k);
      if (tune) {
        using lm::launch_box;
        tune_k<false, launch_box<256, 23>, launch_box<512, 19>>(t, n, k, temp, cap, rows);
        tune_k<true, launch_box<256, 9>, launch_box<512, 9>, launch_box<512, 7>, launch_box<256, 13>>(t, n, k, temp,
                                                                                                   cap, rows);
        continue;
      }
      run_k<false>(t, n, k, temp, cap, rows);
      run_k<true>(t, n, k, temp, cap, rows);
    }
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "properties");
    std::printf("%s, 2^%d elements in all, cold L2, median of %d runs (best of 2 rounds); CUB %s\n", prop.name, log2n,
                runs, bench_meta::cccl_version(CUB_VERSION).c_str());
    std::ofstream f(json);
    f << "{\n  \"device\": \"" << prop.name << "\",\n  \"date\": \"" << bench_meta::iso_date()
      << "\",\n  \"cub_version\": \"" << bench_meta::cccl_version(CUB_VERSION) << "\",\n  \"thrust_version\": \""
      << bench_meta::cccl_version(THRUST_VERSION) << "\",\n  \"allocator\": \"default (lm::cuda::pool_allocator)\",\n  \"results\": [\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const row& r = rows[i];
      std::printf("%-24s %-12s K=%-5d %9.3f ms\n", r.impl.c_str(), r.type.c_str(), r.k, r.ms);
      f << "    {\"impl\": \"" << r.impl << "\", \"type\": \"" << r.type << "\", \"k\": " << r.k << ", \"n\": " << r.n
        << ", \"ms\": " << r.ms << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
    cudaFree(temp);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libmerge_multiway_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
