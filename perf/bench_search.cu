// GPU sorted search benchmark: lm::sorted_search and lm::sorted_equality_count
// against Thrust's vectorized binary searches (and CUB's device-wide ones when
// the installed CCCL has them), all in the same run.
//
//   libmerge_search_bench [--quick] [--tune] [--sparse] [--runs R] [--sizes L1,L2,...]
//                         [--densities K1,K2,...] [--spin-us U] [--json FILE]
//
// Cases, for int32 and int64 keys, N = |A| + |B| = 2^20 ... 2^28, and three
// densities (|A| = |B|, |A| = |B|/64, |A| = |B|/4096):
//   search<lower,index,none>   A's lower bounds into B    vs thrust::lower_bound
//   search<upper,index,none>   A's upper bounds into B    vs thrust::upper_bound
//   search<lower,index,index>  bounds both ways, no match   vs thrust::lower_bound
//                              + thrust::upper_bound (two calls, timed together)
//   search<lower,ixm,ixm>      index_match both ways      vs thrust::lower_bound
//                              + a match transform for A, thrust::upper_bound +
//                              a match transform for B (four calls, timed together)
//   equality_count             lm::sorted_equality_count  vs thrust::upper_bound
//                              - thrust::lower_bound (two searches and a
//                              transform, timed together: thrust::equal_range
//                              written out)
// plus, for search<lower,index,none>, lm's common form
// (lm::sorted_search<lm::bounds::lower>(policy, a, a_last, b, b_last, out)),
// which waits for its stream to return the match counts; and, for the two
// index searches, cub::DeviceFind::LowerBound/UpperBound (a binary search a
// needle, CCCL 3.3+) and LowerBoundSortedValues/UpperBoundSortedValues (merge
// path, later CCCL) where the installed CCCL has them, detected from their
// signatures; CCCL 3.0 (CUDA 13.0) has neither, and the program says so.
// Every output is std::uint32_t (bounds, counts, and index_match with the match
// flag in bit 31): the largest bound, 2^28, fits.
//
// Method: keys are sorted random integers generated on the device, uniform in
// [-|B|, |B|) (int64 keys scaled by 4294967311 to use the upper bits), so about
// 40% of A matches in B and duplicates occur. Every timed call reads and writes
// a fresh replica of its inputs and outputs (replicas rotated, enough of them
// that the others' bytes exceed 3x the L2 between two uses of one replica), so
// its data is not in L2. A spin kernel of --spin-us microseconds runs before
// each timed call, so that the host's launch overhead is hidden as it is in a
// busy stream (--spin-us 0 times it too). CUDA events around the call; the
// median of R runs after two warm-ups. Temporary storage comes from
// preallocated arenas: no timed call allocates. lm's output is verified once
// per row against the peer's, bit for bit (for index_match also the match
// counts); at 2^20 the peer itself is checked against std::lower_bound and
// std::upper_bound on the host. The program exits with 1 on any mismatch.
//
// %copy: a cudaMemcpy (device to device) moving the same bytes as the row,
// timed the same way, divided by the row's time. The bytes of a row are
// |A| * sizeof(key) + |B| * sizeof(key) + outputs * 4, what the merge-path
// search reads and writes; sparse rows use the same definition (the per-needle
// path reads less of B, so it can exceed 100%).
//
// --quick: 2^20 and 2^24, 7 runs. --tune (15 runs): (a) lm with several
// launch boxes on the dense path (|A| = |B|, int32, N = 2^26 and 2^28) for the
// lower-index, index_match and equality-count searches; (b) the sparse
// crossover: at |B| = 2^22, 2^26 and 2^28 (int32; int64 at 2^26) and
// |A| = |B|/k, the dense merge-path search and the per-needle search, each
// forced through internals::cuda::launch_search (sparse_ratio INT_MAX: never
// sparse; 1: always) with the sm_90 line's box, the per-needle search also
// with smaller boxes (128x1, 256x1, 256x4), beside lm's public call and
// Thrust; it prints the smallest k from which the per-needle path wins, for
// tuning::search's sparse_ratio. --sizes replaces the mode's log2 sizes (N for
// the search rows and the box sweep, |B| for the crossover). --sparse: the
// per-needle search with binary (bounds_in_lockstep), 4-ary
// (bounds_in_lockstep_4) and interpolating (interpolation_bound, from 4 to 32
// needle spacings) probes against Thrust and the dense path, |B| = 2^26 and
// 2^28 (or --sizes), |A| = |B|/4 .. /4096 (or --densities), int32; int64 and
// int32 keys in steps (runs of about 2048 equal keys) at /64 and /4096.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <cub/version.cuh>
#include <thrust/binary_search.h>
#include <thrust/count.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/mismatch.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/version.h>

#if defined(__has_include)
#if __has_include(<cub/device/device_find.cuh>)
// cub::DeviceFind: LowerBound / UpperBound (CCCL 3.3+), LowerBoundSortedValues
// / UpperBoundSortedValues (later); which of them exist is detected below.
#include <cub/device/device_find.cuh>
#define LIBMERGE_BENCH_DEVICE_FIND 1
#endif
#endif

#include <libmerge/libmerge.hpp>

#include "bench_meta.hpp"
#include "gpu_bench_support.cuh"
#include <test/support/internals.cuh>

namespace lm = libmerge;
namespace cb = internals::cuda;

namespace {

using out_t = std::uint32_t;

struct options {
  bool quick = false, tune = false, sparse = false;
  int runs = 0;  // 0: 25, or 7 with --quick
  int spin_us = 200;
  std::vector<int> sizes;  // log2 N; empty: the mode's
  std::vector<long long> densities;  // --sparse's |B| / |A|; empty: 4, 8, 16, 64, 256, 4096
  std::string json = "libmerge_search_bench.json";
};

// What a row measures.
enum class op { lower_index, upper_index, index_match, index_both, equal_count };
// Both sides write results (A's bounds into B and B's into A).
constexpr bool both_sides(op o) { return o == op::index_match || o == op::index_both; }
const char* name(op o) {
  switch (o) {
    case op::lower_index: return "search<lower,index,none>";
    case op::upper_index: return "search<upper,index,none>";
    case op::index_match: return "search<lower,ixm,ixm>";
    case op::index_both: return "search<lower,index,index>";
    case op::equal_count: return "equality_count";
  }
  return "?";
}
const char* peer_name(op o) {
  switch (o) {
    case op::lower_index: return "thrust::lower_bound";
    case op::upper_index: return "thrust::upper_bound";
    case op::index_match: return "thrust lb+ub+2 match xforms";
    case op::index_both: return "thrust lb+ub";
    case op::equal_count: return "thrust ub-lb (2 search+xform)";
  }
  return "?";
}
// Outputs a row writes (4 bytes each).
long long outputs(op o, long long na, long long nb) { return both_sides(o) ? na + nb : na; }

template <class K>
const char* type_name() {
  return sizeof(K) == 4 ? "int32" : "int64";
}
std::string density_name(long long k) { return k == 1 ? "|A|=|B|" : "|A|=|B|/" + std::to_string(k); }
int log2_of(long long n) {
  int lg = 0;
  while ((1LL << lg) < n) ++lg;
  return lg;
}

struct result {
  std::string section, op, type, density;
  long long n, na, nb;
  std::string impl;
  double ms, bytes, copy_ms;
  std::string check;  // "ok", "FAIL", or "" for a peer
};
std::vector<result> results;
int failures = 0;

// A key from its position: splitmix64, reduced to [-range/2, range/2); with
// `steps`, rounded down to a multiple of 4096 (runs of about 2048 equal keys,
// the keys an interpolating search guesses worst: --sparse's "steps" rows).
template <class K>
struct random_key {
  std::uint64_t seed, range;
  bool steps = false;
  __host__ __device__ K operator()(long long i) const {
    std::uint64_t x = (static_cast<std::uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xD1B54A32D192ED03ull;
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    long long v = static_cast<long long>(x % range) - static_cast<long long>(range / 2);
    if (steps) v = (v >= 0 ? v : v - 4095) / 4096 * 4096;
    if constexpr (sizeof(K) == 8) {
      return static_cast<K>(v * 4294967311LL);
    } else {
      return static_cast<K>(v);
    }
  }
};

// index_match from a bound: A's lower bound into B is a match when B there is
// not after a; B's upper bound into A when A before it is not before b.
template <class K>
struct flag_lower {
  const K* needles;
  const K* hay;
  long long nh;
  const out_t* bound;
  __host__ __device__ out_t operator()(long long i) const {
    const out_t p = bound[i];
    const bool m = p < static_cast<unsigned long long>(nh) && !(needles[i] < hay[p]);
    return p | (m ? 0x80000000u : 0u);
  }
};
template <class K>
struct flag_upper {
  const K* needles;
  const K* hay;
  const out_t* bound;
  __host__ __device__ out_t operator()(long long i) const {
    const out_t p = bound[i];
    const bool m = p > 0 && !(hay[p - 1] < needles[i]);
    return p | (m ? 0x80000000u : 0u);
  }
};
struct difference {
  __host__ __device__ out_t operator()(out_t upper, out_t lower) const { return upper - lower; }
};
struct has_flag {
  __host__ __device__ bool operator()(out_t x) const { return (x & 0x80000000u) != 0; }
};
struct key_less {
  template <class A, class B>
  __host__ __device__ bool operator()(const A& a, const B& b) const {
    return a < b;
  }
};

// CUB's device-wide searches, where the installed CCCL has them: a search is
// Search(temp, bytes, range, range_n, values, values_n, out, comp, stream).
// Detected from the call's signature, as the names came in different releases.
enum class cub_search { lower, upper, lower_sorted, upper_sorted };
const char* name(cub_search c) {
  switch (c) {
    case cub_search::lower: return "cub::DeviceFind::LowerBound";
    case cub_search::upper: return "cub::DeviceFind::UpperBound";
    case cub_search::lower_sorted: return "cub::DeviceFind::LowerBoundSortedValues";
    case cub_search::upper_sorted: return "cub::DeviceFind::UpperBoundSortedValues";
  }
  return "?";
}
template <cub_search C, class D, class K>
auto call_cub(void* temp, std::size_t& bytes, const K* range, long long nr, const K* values, long long nv, out_t* out,
              cudaStream_t s) -> decltype(D::LowerBound(temp, bytes, range, nr, values, nv, out, key_less{}, s)) {
  if constexpr (C == cub_search::lower) return D::LowerBound(temp, bytes, range, nr, values, nv, out, key_less{}, s);
  else if constexpr (C == cub_search::upper) return D::UpperBound(temp, bytes, range, nr, values, nv, out, key_less{}, s);
  else if constexpr (C == cub_search::lower_sorted) {
    return D::LowerBoundSortedValues(temp, bytes, range, nr, values, nv, out, key_less{}, s);
  } else {
    return D::UpperBoundSortedValues(temp, bytes, range, nr, values, nv, out, key_less{}, s);
  }
}
template <cub_search C, class D, class K, class = void>
struct has_cub : std::false_type {};
#define LIBMERGE_BENCH_CUB_CALL(F)                                                                              \
  decltype(D::F(std::declval<void*>(), std::declval<std::size_t&>(), std::declval<const K*>(), 0LL,           \
                std::declval<const K*>(), 0LL, std::declval<out_t*>(), key_less{}, cudaStream_t{}))
template <class D, class K>
struct has_cub<cub_search::lower, D, K, std::void_t<LIBMERGE_BENCH_CUB_CALL(LowerBound)>> : std::true_type {};
template <class D, class K>
struct has_cub<cub_search::upper, D, K, std::void_t<LIBMERGE_BENCH_CUB_CALL(UpperBound)>> : std::true_type {};
template <class D, class K>
struct has_cub<cub_search::lower_sorted, D, K, std::void_t<LIBMERGE_BENCH_CUB_CALL(LowerBoundSortedValues)>>
    : std::true_type {};
template <class D, class K>
struct has_cub<cub_search::upper_sorted, D, K, std::void_t<LIBMERGE_BENCH_CUB_CALL(UpperBoundSortedValues)>>
    : std::true_type {};
#undef LIBMERGE_BENCH_CUB_CALL
#if LIBMERGE_BENCH_DEVICE_FIND
using device_find = cub::DeviceFind;
#else
struct device_find {};  // no cub/device/device_find.cuh: nothing detected
#endif
template <cub_search C, class K>
inline constexpr bool have_cub = has_cub<C, device_find, K>::value;

// Keeps the GPU busy while the host enqueues the timed work.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

struct bench {
  options opt;
  int runs = 25;
  cudaStream_t s{};
  cudaEvent_t e0{}, e1{};
  std::size_t l2 = 0;
  thrust_arena thrust_temp{};
  arena cub_temp{};
  lm::match_counts* counts = nullptr;  // device memory
  char* copy_buf = nullptr;
  std::size_t copy_cap = 0;
  std::map<long long, double> copy_cache;

  // As users call it: the default allocator (libmerge's pool).
  auto lm_policy() { return lm::cuda::par.on(s); }
  auto thrust_policy() { return thrust::cuda::par_nosync(thrust_temp).on(s); }

  // Median ms of f() (which picks its own replica).
  template <class F>
  double median_ms(F&& f) {
    std::vector<float> t;
    for (int i = 0; i < runs + 2; ++i) {
      if (opt.spin_us > 0) {
        spin_kernel<<<1, 1, 0, s>>>(static_cast<unsigned long long>(opt.spin_us) * 1000ull);
        cuda_check(cudaGetLastError(), "spin kernel");
      }
      cuda_check(cudaEventRecord(e0, s), "record");
      f();
      cuda_check(cudaEventRecord(e1, s), "record");
      cuda_check(cudaEventSynchronize(e1), "sync");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
      if (i >= 2) t.push_back(ms);
    }
    cuda_check(cudaGetLastError(), "timed work");
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }

  // Replicas so that, between two uses of one, the others move 3x the L2.
  int replicas(double bytes) const {
    const double c = std::ceil(3.0 * static_cast<double>(l2) / bytes) + 1;
    return static_cast<int>(std::min(64.0, std::max(2.0, c)));
  }

  // A device-to-device copy moving `bytes` (half read, half written), timed
  // like the rows; cached per byte count.
  double copy_ms(double bytes) {
    const long long key = static_cast<long long>(bytes);
    auto it = copy_cache.find(key);
    if (it != copy_cache.end()) return it->second;
    const std::size_t half = (static_cast<std::size_t>(bytes / 2) + 255) / 256 * 256;
    const int c = replicas(bytes);
    const std::size_t need = static_cast<std::size_t>(c) * 2 * half;
    if (need > copy_cap) {
      cudaFree(copy_buf);
      copy_buf = nullptr;
      copy_cap = 0;
      cuda_check(cudaMalloc(&copy_buf, need), "copy buffer");
      copy_cap = need;
    }
    int k = 0;
    const double ms = median_ms([&] {
      char* src = copy_buf + static_cast<std::size_t>(k++ % c) * 2 * half;
      cuda_check(cudaMemcpyAsync(src + half, src, half, cudaMemcpyDeviceToDevice, s), "copy");
    });
    copy_cache.emplace(key, ms);
    return ms;
  }
  void release_copy_buffer() {
    cudaFree(copy_buf);
    copy_buf = nullptr;
    copy_cap = 0;
  }
};

// Sorted A and B, `copies` replicas of them and of the outputs, and the
// reference outputs of a verification.
template <class K>
struct dataset {
  long long na, nb;
  int copies = 1;
  K* keys = nullptr;     // copies x (A, B)
  out_t* outs = nullptr;  // copies x (A's results, B's results, a temporary for |A|)
  out_t* ref = nullptr;   // A's then B's reference results
  int next = 0;

  dataset(const dataset&) = delete;
  dataset& operator=(const dataset&) = delete;
  dataset(bench& b, long long a_count, long long b_count, std::uint64_t seed, bool steps = false)
      : na(a_count), nb(b_count) {
    const double set_bytes = static_cast<double>(na + nb) * sizeof(K) + static_cast<double>(2 * na + nb) * sizeof(out_t);
    copies = b.replicas(static_cast<double>(na + nb) * sizeof(K));
    std::size_t free_bytes = 0, total = 0;
    cuda_check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
    while (copies > 1 && copies * set_bytes > 0.6 * static_cast<double>(free_bytes)) --copies;
    if (copies * set_bytes + static_cast<double>(na + nb) * sizeof(out_t) > 0.9 * static_cast<double>(free_bytes)) {
      throw std::runtime_error("not enough device memory for " + std::to_string(na + nb) + " keys");
    }
    cuda_check(cudaMalloc(&keys, static_cast<std::size_t>(copies) * (na + nb) * sizeof(K)), "keys");
    cuda_check(cudaMalloc(&outs, static_cast<std::size_t>(copies) * (2 * na + nb) * sizeof(out_t)), "outputs");
    cuda_check(cudaMalloc(&ref, static_cast<std::size_t>(na + nb) * sizeof(out_t)), "reference");
    const std::uint64_t range = 2 * static_cast<std::uint64_t>(nb > 0 ? nb : 1);
    auto fill = [&](K* dst, long long n, std::uint64_t sd) {
      thrust::transform(thrust::cuda::par.on(b.s), thrust::counting_iterator<long long>(0),
                        thrust::counting_iterator<long long>(n), dst, random_key<K>{sd, range, steps});
      thrust::sort(thrust::cuda::par.on(b.s), dst, dst + n);
    };
    fill(keys, na, seed);
    fill(keys + na, nb, seed ^ 0x5555);
    for (int i = 1; i < copies; ++i) {
      cuda_check(cudaMemcpyAsync(keys + static_cast<std::size_t>(i) * (na + nb), keys, (na + nb) * sizeof(K),
                                 cudaMemcpyDeviceToDevice, b.s),
                 "replica");
    }
    cuda_check(cudaMemsetAsync(outs, 0, static_cast<std::size_t>(copies) * (2 * na + nb) * sizeof(out_t), b.s),
               "outputs");
    cuda_check(cudaStreamSynchronize(b.s), "dataset");
  }
  ~dataset() {
    cudaFree(keys);
    cudaFree(outs);
    cudaFree(ref);
  }
  const K* a(int i) const { return keys + static_cast<std::size_t>(i) * (na + nb); }
  const K* b(int i) const { return a(i) + na; }
  out_t* oa(int i) const { return outs + static_cast<std::size_t>(i) * (2 * na + nb); }
  out_t* ob(int i) const { return oa(i) + na; }
  out_t* tmp(int i) const { return ob(i) + nb; }
  int take() {
    const int i = next;
    next = (next + 1) % copies;
    return i;
  }
  double bytes(op o) const { return static_cast<double>(na + nb) * sizeof(K) + static_cast<double>(outputs(o, na, nb)) * sizeof(out_t); }
};

// lm's call of one row, on replica i, with policy p.
template <op O, class K, class Policy>
void run_lm(const Policy& p, const dataset<K>& d, int i, lm::match_counts* counts) {
  const K* a = d.a(i);
  const K* b = d.b(i);
  if constexpr (O == op::lower_index) {
    lm::sorted_search<lm::bounds::lower, lm::search_type::index, lm::search_type::none>(p, a, a + d.na, b, b + d.nb,
                                                                                     d.oa(i), nullptr, counts);
  } else if constexpr (O == op::upper_index) {
    lm::sorted_search<lm::bounds::upper, lm::search_type::index, lm::search_type::none>(p, a, a + d.na, b, b + d.nb,
                                                                                     d.oa(i), nullptr, counts);
  } else if constexpr (O == op::index_match) {
    lm::sorted_search<lm::bounds::lower, lm::search_type::index_match, lm::search_type::index_match>(
        p, a, a + d.na, b, b + d.nb, d.oa(i), d.ob(i), counts);
  } else if constexpr (O == op::index_both) {
    lm::sorted_search<lm::bounds::lower, lm::search_type::index, lm::search_type::index>(
        p, a, a + d.na, b, b + d.nb, d.oa(i), d.ob(i), counts);
  } else {
    lm::sorted_equality_count(p, a, a + d.na, b, b + d.nb, d.oa(i));
  }
}

// The common form: returns the end of the output, waits for the stream.
template <class K, class Policy>
void run_lm_common(const Policy& p, const dataset<K>& d, int i) {
  const K* a = d.a(i);
  const K* b = d.b(i);
  lm::sorted_search<lm::bounds::lower>(p, a, a + d.na, b, b + d.nb, d.oa(i));
}

// The peer of one row (Thrust), on replica i.
template <op O, class K, class Policy>
void run_peer(const Policy& p, const dataset<K>& d, int i) {
  const K* a = d.a(i);
  const K* b = d.b(i);
  if constexpr (O == op::lower_index) {
    thrust::lower_bound(p, b, b + d.nb, a, a + d.na, d.oa(i));
  } else if constexpr (O == op::upper_index) {
    thrust::upper_bound(p, b, b + d.nb, a, a + d.na, d.oa(i));
  } else if constexpr (O == op::index_match) {
    thrust::lower_bound(p, b, b + d.nb, a, a + d.na, d.oa(i));
    thrust::transform(p, thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(d.na), d.oa(i),
                      flag_lower<K>{a, b, d.nb, d.oa(i)});
    thrust::upper_bound(p, a, a + d.na, b, b + d.nb, d.ob(i));
    thrust::transform(p, thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(d.nb), d.ob(i),
                      flag_upper<K>{b, a, d.ob(i)});
  } else if constexpr (O == op::index_both) {
    thrust::lower_bound(p, b, b + d.nb, a, a + d.na, d.oa(i));
    thrust::upper_bound(p, a, a + d.na, b, b + d.nb, d.ob(i));
  } else {
    thrust::lower_bound(p, b, b + d.nb, a, a + d.na, d.tmp(i));
    thrust::upper_bound(p, b, b + d.nb, a, a + d.na, d.oa(i));
    thrust::transform(p, d.oa(i), d.oa(i) + d.na, d.tmp(i), d.oa(i), difference{});
  }
}

// One of CUB's searches: A's bounds into B. The temporary storage is sized
// outside the timing (by the first call, the verification).
template <cub_search C, class K, class D = device_find>
void run_cub(bench& bn, const dataset<K>& d, int i) {
  std::size_t bytes = 0;
  cuda_check(call_cub<C, D>(nullptr, bytes, d.b(i), d.nb, d.a(i), d.na, d.oa(i), bn.s), name(C));
  if (bytes > bn.cub_temp.capacity) throw std::runtime_error(std::string(name(C)) + ": temporary storage too large");
  cuda_check(call_cub<C, D>(bn.cub_temp.base, bytes, d.b(i), d.nb, d.a(i), d.na, d.oa(i), bn.s), name(C));
}

// The peer's results on the host, for a small row: checks the reconstruction.
template <op O, class K>
bool host_check(const dataset<K>& d) {
  std::vector<K> a(d.na), b(d.nb);
  std::vector<out_t> ref(d.na + d.nb);
  cuda_check(cudaMemcpy(a.data(), d.a(0), d.na * sizeof(K), cudaMemcpyDeviceToHost), "host check");
  cuda_check(cudaMemcpy(b.data(), d.b(0), d.nb * sizeof(K), cudaMemcpyDeviceToHost), "host check");
  cuda_check(cudaMemcpy(ref.data(), d.ref, (d.na + d.nb) * sizeof(out_t), cudaMemcpyDeviceToHost), "host check");
  for (long long i = 0; i < d.na; ++i) {
    const auto lo = static_cast<out_t>(std::lower_bound(b.begin(), b.end(), a[i]) - b.begin());
    const auto hi = static_cast<out_t>(std::upper_bound(b.begin(), b.end(), a[i]) - b.begin());
    out_t want = 0;
    if constexpr (O == op::lower_index) want = lo;
    else if constexpr (O == op::upper_index) want = hi;
    else if constexpr (O == op::equal_count) want = hi - lo;
    else if constexpr (O == op::index_both) want = lo;
    else want = lo | (hi > lo ? 0x80000000u : 0u);
    if (ref[i] != want) return false;
  }
  if constexpr (both_sides(O)) {
    for (long long j = 0; j < d.nb; ++j) {
      const auto lo = static_cast<out_t>(std::lower_bound(a.begin(), a.end(), b[j]) - a.begin());
      const auto hi = static_cast<out_t>(std::upper_bound(a.begin(), a.end(), b[j]) - a.begin());
      const out_t flag = O == op::index_match && hi > lo ? 0x80000000u : 0u;
      if (ref[d.na + j] != (hi | flag)) return false;
    }
  }
  return true;
}

// Compares out[0, n) with ref[0, n) on the device; prints the first difference.
bool same(bench& bn, const out_t* out, const out_t* ref, long long n, const std::string& what) {
  const auto p = thrust::cuda::par.on(bn.s);
  if (thrust::equal(p, out, out + n, ref)) return true;
  const auto m = thrust::mismatch(p, out, out + n, ref);
  const long long at = m.first - out;
  out_t x = 0, y = 0;
  cuda_check(cudaMemcpy(&x, out + at, sizeof x, cudaMemcpyDeviceToHost), "mismatch");
  cuda_check(cudaMemcpy(&y, ref + at, sizeof y, cudaMemcpyDeviceToHost), "mismatch");
  std::fprintf(stderr, "MISMATCH %s: first difference at %lld: lm %u, reference %u\n", what.c_str(), at, x, y);
  return false;
}

// Runs the peer on replica 0 into d.ref. For a small row, checks it on the host.
template <op O, class K>
void make_reference(bench& bn, dataset<K>& d, const std::string& what) {
  run_peer<O>(bn.thrust_policy(), d, 0);
  cuda_check(cudaMemcpyAsync(d.ref, d.oa(0), d.na * sizeof(out_t), cudaMemcpyDeviceToDevice, bn.s), "reference");
  if constexpr (both_sides(O)) {
    cuda_check(cudaMemcpyAsync(d.ref + d.na, d.ob(0), d.nb * sizeof(out_t), cudaMemcpyDeviceToDevice, bn.s),
               "reference");
  }
  cuda_check(cudaStreamSynchronize(bn.s), "reference");
  if (d.na + d.nb <= (1LL << 20) && !host_check<O>(d)) {
    throw std::runtime_error("the Thrust reference differs from std::lower_bound/upper_bound: " + what);
  }
}

// Checks what `call` (one lm call on replica 0) writes against d.ref.
template <op O, class K, class Call>
bool verify(bench& bn, dataset<K>& d, Call&& call, const std::string& what) {
  cuda_check(cudaMemsetAsync(d.oa(0), 0xab, (d.na + d.nb) * sizeof(out_t), bn.s), "poison");
  call();
  cuda_check(cudaStreamSynchronize(bn.s), what.c_str());
  bool ok = same(bn, d.oa(0), d.ref, d.na, what + " (A)");
  if constexpr (both_sides(O)) ok = same(bn, d.ob(0), d.ref + d.na, d.nb, what + " (B)") && ok;
  if constexpr (O == op::index_match) {
    lm::match_counts c{};
    cuda_check(cudaMemcpy(&c, bn.counts, sizeof c, cudaMemcpyDeviceToHost), "counts");
    const auto p = thrust::cuda::par.on(bn.s);
    const long long ca = thrust::count_if(p, d.ref, d.ref + d.na, has_flag{});
    const long long cb_ = thrust::count_if(p, d.ref + d.na, d.ref + d.na + d.nb, has_flag{});
    if (c.a != ca || c.b != cb_) {
      std::fprintf(stderr, "MISMATCH %s: match counts (%lld, %lld), reference (%lld, %lld)\n", what.c_str(),
                   static_cast<long long>(c.a), static_cast<long long>(c.b), ca, cb_);
      ok = false;
    }
  }
  if (!ok) ++failures;
  return ok;
}

template <class K>
void record(const char* section, op o, const dataset<K>& d, const std::string& density, const std::string& impl,
            double ms, double copy_ms, const std::string& check) {
  results.push_back({section, name(o), type_name<K>(), density, d.na + d.nb, d.na, d.nb, impl, ms, d.bytes(o), copy_ms,
                     check});
}

// One row: verify lm, then time lm, the peer (and CUB, the common form).
template <op O, class K>
void time_row(bench& bn, dataset<K>& d, const std::string& density) {
  const std::string what = std::string(name(O)) + " " + type_name<K>() + " " + density + " N=2^" +
                           std::to_string(log2_of(d.na + d.nb));
  make_reference<O>(bn, d, what);
  const bool ok = verify<O>(bn, d, [&] { run_lm<O>(bn.lm_policy(), d, 0, bn.counts); }, what);
  const double copy = bn.copy_ms(d.bytes(O));
  record("search", O, d, density, "lm", bn.median_ms([&] { run_lm<O>(bn.lm_policy(), d, d.take(), bn.counts); }),
         copy, ok ? "ok" : "FAIL");
  record("search", O, d, density, peer_name(O),
         bn.median_ms([&] { run_peer<O>(bn.thrust_policy(), d, d.take()); }), copy, "");
  if constexpr (O == op::lower_index) {
    const bool ok2 = verify<O>(bn, d, [&] { run_lm_common(bn.lm_policy(), d, 0); }, what + " (common form)");
    record("search", O, d, density, "lm common form (waits)",
           bn.median_ms([&] { run_lm_common(bn.lm_policy(), d, d.take()); }), copy, ok2 ? "ok" : "FAIL");
  }
  auto cub_row = [&](auto c) {
    constexpr cub_search C = decltype(c)::value;
    if constexpr (have_cub<C, K>) {
      run_cub<C>(bn, d, 0);
      cuda_check(cudaStreamSynchronize(bn.s), name(C));
      const bool ok3 = same(bn, d.oa(0), d.ref, d.na, what + " (" + name(C) + " against Thrust)");
      if (!ok3) ++failures;
      record("search", O, d, density, name(C), bn.median_ms([&] { run_cub<C>(bn, d, d.take()); }), copy,
             ok3 ? "ok" : "FAIL");
    }
  };
  if constexpr (O == op::lower_index) {
    cub_row(std::integral_constant<cub_search, cub_search::lower>{});
    cub_row(std::integral_constant<cub_search, cub_search::lower_sorted>{});
  } else if constexpr (O == op::upper_index) {
    cub_row(std::integral_constant<cub_search, cub_search::upper>{});
    cub_row(std::integral_constant<cub_search, cub_search::upper_sorted>{});
  }
}

template <class K>
void search_cases(bench& bn, int lg, long long k) {
  const long long n = 1LL << lg;
  const long long na = k == 1 ? n / 2 : static_cast<long long>(std::llround(static_cast<double>(n) / (k + 1)));
  const std::string density = density_name(k);
  std::fprintf(stderr, "search cases: %s N=2^%d %s\n", type_name<K>(), lg, density.c_str());
  dataset<K> d(bn, na, n - na, 1000 + 10 * lg + static_cast<std::uint64_t>(k));
  time_row<op::lower_index>(bn, d, density);
  time_row<op::upper_index>(bn, d, density);
  time_row<op::index_match>(bn, d, density);
  time_row<op::index_both>(bn, d, density);
  time_row<op::equal_count>(bn, d, density);
}

// --tune (a): lm with box Box on one row.
template <op O, class Box, class K>
void tune_box(bench& bn, dataset<K>& d, const std::string& density, double copy) {
  char label[48];
  std::snprintf(label, sizeof label, "lm %dx%d", Box::nt, Box::vt);
  const std::string what = std::string(name(O)) + " " + label;
  const auto p = bn.lm_policy().with(Box{});
  const bool ok = verify<O>(bn, d, [&] { run_lm<O>(p, d, 0, bn.counts); }, what);
  record("tune", O, d, density, label, bn.median_ms([&] { run_lm<O>(p, d, d.take(), bn.counts); }), copy,
         ok ? "ok" : "FAIL");
}

template <op O, class K, class... Boxes>
void tune_row(bench& bn, dataset<K>& d) {
  const std::string density = density_name(1);
  make_reference<O>(bn, d, std::string(name(O)) + " tune");
  const double copy = bn.copy_ms(d.bytes(O));
  record("tune", O, d, density, peer_name(O), bn.median_ms([&] { run_peer<O>(bn.thrust_policy(), d, d.take()); }),
         copy, "");
  const bool ok = verify<O>(bn, d, [&] { run_lm<O>(bn.lm_policy(), d, 0, bn.counts); }, "lm tuned");
  record("tune", O, d, density, "lm tuned",
         bn.median_ms([&] { run_lm<O>(bn.lm_policy(), d, d.take(), bn.counts); }), copy, ok ? "ok" : "FAIL");
  (tune_box<O, Boxes>(bn, d, density, copy), ...);
}

template <class K, class... Boxes>
void tune_boxes(bench& bn, int lg) {
  const long long n = 1LL << lg;
  std::fprintf(stderr, "tune boxes: %s N=2^%d\n", type_name<K>(), lg);
  dataset<K> d(bn, n / 2, n / 2, 7000 + lg);
  tune_row<op::lower_index, K, Boxes...>(bn, d);
  tune_row<op::index_match, K, Boxes...>(bn, d);
  tune_row<op::equal_count, K, Boxes...>(bn, d);
}

// The tuned sm_90 box of a search of K and its sparse ratio.
template <class K>
struct sm90 {
  using table = cb::search_table<K, K>;
  static constexpr int line = lm::tuning::entry_for(90);
  using boxes = decltype(table::template boxes<static_cast<std::size_t>(line)>());
  using box = typename boxes::dense;
  using needle_box = typename boxes::needle;
  static constexpr int ratio = boxes::line.sparse_ratio;
  static constexpr int interpolate_from = boxes::line.interpolate_from;
};

// Needle boxes that fix the probe (cb::box_probes_4ary,
// cb::box_interpolates_from): always 4-ary, or interpolating from From times
// the needles' spacing (0: binary all the way).
template <int NT, int VT>
struct needle_box_4 : lm::launch_box<NT, VT> {
  static constexpr bool probe_4ary = true;
};
template <int NT, int VT, int From>
struct needle_box_interpolating : lm::launch_box<NT, VT> {
  static constexpr int interpolate_from = From;
};

// --tune (b): dense (merge-path) against per-needle search (the line's: binary
// down to interpolate_from needle spacings, then interpolation; a
// needle_box_4 searches 4-ary, a needle_box_interpolating interpolates from
// its own multiple, 0: binary), forced through
// launch_search with box Box: sparse_ratio INT_MAX never takes the per-needle
// path, 1 always does (|A| <= |B|); the rule for small haystacks is off, so
// that each row is the path it names at every size. The counts are zeroed on
// the stream as in the public call; the index search counts nothing, the
// equality count has no counts (nullptr).
template <op O, class Box, class K, class NeedleBox = typename sm90<K>::needle_box>
void crossover_run(bench& bn, const dataset<K>& d, int i, int ratio) {
  const auto& dev = cb::current_device("sorted_search");
  auto* ca = reinterpret_cast<unsigned long long*>(&bn.counts->a);
  auto* cbp = reinterpret_cast<unsigned long long*>(&bn.counts->b);
  if constexpr (O == op::lower_index) {
    cb::launch_search<Box, NeedleBox, lm::search_type::index, lm::search_type::none, cb::a_writes::search,
                      sm90<K>::interpolate_from>(
        bn.lm_policy(), dev, d.a(i), d.na, d.b(i), d.nb, d.oa(i), nullptr, cb::search_reports{ca, cbp}, bn.counts,
        cb::needle_rules{ratio, 0, 0, 0, 0}, lm::less<>{}, "sorted_search");
  } else {
    static_assert(O == op::equal_count, "crossover: lower_index or equal_count");
    cb::launch_search<Box, NeedleBox, lm::search_type::none, lm::search_type::none, cb::a_writes::equal_count,
                      sm90<K>::interpolate_from>(
        bn.lm_policy(), dev, d.a(i), d.na, d.b(i), d.nb, d.oa(i), nullptr, cb::search_reports{nullptr, nullptr},
        nullptr, cb::needle_rules{ratio, 0, 0, 0, 0}, lm::less<>{}, "sorted_equality_count");
  }
}

template <class Box>
std::string box_label(const char* prefix) {
  return std::string(prefix) + " " + std::to_string(Box::nt) + "x" + std::to_string(Box::vt);
}

// The per-needle path with another needle box (nt threads, vt needles each).
template <op O, class NeedleBox, class K>
void crossover_needle_box(bench& bn, dataset<K>& d, const std::string& density, double copy, const std::string& what) {
  using Box = typename sm90<K>::box;
  constexpr int from = cb::box_interpolates_from<NeedleBox>::value;
  const std::string label =
      cb::box_probes_4ary<NeedleBox>::value ? box_label<NeedleBox>("per-needle 4-ary")
      : from == 0                          ? box_label<NeedleBox>("per-needle binary")
      : from > 0 ? box_label<NeedleBox>(("per-needle interp " + std::to_string(from) + "x").c_str())
                 : box_label<NeedleBox>("per-needle");
  const bool ok =
      verify<O>(bn, d, [&] { crossover_run<O, Box, K, NeedleBox>(bn, d, 0, 1); }, what + " " + label);
  record("crossover", O, d, density, label,
         bn.median_ms([&] { crossover_run<O, Box, K, NeedleBox>(bn, d, d.take(), 1); }), copy, ok ? "ok" : "FAIL");
}

template <op O, class K, class... NeedleBoxes>
void crossover_row(bench& bn, dataset<K>& d, const std::string& density) {
  using Box = typename sm90<K>::box;
  const std::string what = std::string(name(O)) + " crossover " + type_name<K>() + " " + density;
  make_reference<O>(bn, d, what);
  const double copy = bn.copy_ms(d.bytes(O));
  const bool ok1 = verify<O>(bn, d, [&] { crossover_run<O, Box>(bn, d, 0, INT_MAX); }, what + " dense");
  const bool ok2 = verify<O>(bn, d, [&] { crossover_run<O, Box>(bn, d, 0, 1); }, what + " per-needle");
  const bool ok3 = verify<O>(bn, d, [&] { run_lm<O>(bn.lm_policy(), d, 0, bn.counts); }, what + " public");
  record("crossover", O, d, density, "dense path",
         bn.median_ms([&] { crossover_run<O, Box>(bn, d, d.take(), INT_MAX); }), copy, ok1 ? "ok" : "FAIL");
  record("crossover", O, d, density, "per-needle path",
         bn.median_ms([&] { crossover_run<O, Box>(bn, d, d.take(), 1); }), copy, ok2 ? "ok" : "FAIL");
  (crossover_needle_box<O, NeedleBoxes>(bn, d, density, copy, what), ...);
  record("crossover", O, d, density, "lm (public)",
         bn.median_ms([&] { run_lm<O>(bn.lm_policy(), d, d.take(), bn.counts); }), copy, ok3 ? "ok" : "FAIL");
  record("crossover", O, d, density, peer_name(O),
         bn.median_ms([&] { run_peer<O>(bn.thrust_policy(), d, d.take()); }), copy, "");
}

// Needle boxes tried beside the tuned one: smaller tiles give more CTAs.
template <class K>
void crossover(bench& bn, int lg_b, const std::vector<long long>& ks) {
  using lm::launch_box;
  const long long nb = 1LL << lg_b;
  for (long long k : ks) {
    std::fprintf(stderr, "crossover: %s |B|=2^%d k=%lld\n", type_name<K>(), lg_b, k);
    dataset<K> d(bn, nb / k, nb, 9000 + lg_b + static_cast<std::uint64_t>(k));
    crossover_row<op::lower_index, K, launch_box<128, 1>, launch_box<128, 2>, launch_box<128, 4>,
                  launch_box<256, 4>, launch_box<64, 8>, launch_box<128, 8>>(bn, d, density_name(k));
    crossover_row<op::equal_count, K, launch_box<128, 1>, launch_box<128, 2>, launch_box<128, 4>,
                  launch_box<256, 4>, launch_box<64, 8>, launch_box<128, 8>>(bn, d, density_name(k));
  }
}

// ---------------------------------------------------------------------------
// Output

const result* find_row(const result& r, const std::string& section, const std::string& impl) {
  for (const result& p : results) {
    if (p.section == section && p.op == r.op && p.type == r.type && p.density == r.density && p.n == r.n &&
        p.impl == impl) {
      return &p;
    }
  }
  return nullptr;
}

void print_rows(const std::string& section, const char* peer_column) {
  std::printf("%-24s %-5s %-14s %5s %10s %10s %-30s %9s %8s %7s %8s %5s\n", "case", "type", "density", "log2N", "|A|",
              "|B|", "implementation", "ms", "GB/s", "%copy", peer_column, "check");
  std::string last;
  for (const result& r : results) {
    if (r.section != section) continue;
    const std::string group = r.op + "|" + r.type + "|" + r.density + "|" + std::to_string(r.n);
    if (!last.empty() && group != last) std::printf("\n");
    last = group;
    // The peer of the row's group: Thrust's call of the same case.
    double peer = 0;
    for (const result& p : results) {
      if (p.section == r.section && p.op == r.op && p.type == r.type && p.density == r.density && p.n == r.n &&
          p.check.empty()) {
        peer = p.ms;
      }
    }
    std::printf("%-24s %-5s %-14s %5d %10lld %10lld %-30s %9.4f %8.0f %6.1f%% %7.2fx %5s\n", r.op.c_str(),
                r.type.c_str(), r.density.c_str(), log2_of(r.n), r.na, r.nb, r.impl.c_str(), r.ms,
                r.bytes / (r.ms * 1e6), 100.0 * r.copy_ms / r.ms, peer > 0 ? peer / r.ms : 0.0,
                r.check.empty() ? "-" : r.check.c_str());
  }
}

// The crossover table: one line per k, and the smallest k from which the
// per-needle path is faster at every larger k measured (with the tuned box,
// and with the best box of each k).
void print_crossover() {
  std::vector<std::string> keys;
  auto key_of = [](const result& r) {
    const bool steps = r.density.find("steps") != std::string::npos;
    return r.op + "|" + r.type + "|" + std::to_string(r.nb) + (steps ? "|steps" : "");
  };
  for (const result& r : results) {
    if (r.section == "crossover" && std::find(keys.begin(), keys.end(), key_of(r)) == keys.end()) {
      keys.push_back(key_of(r));
    }
  }
  for (const std::string& key : keys) {
    std::vector<const result*> dense;
    for (const result& r : results) {
      if (r.section == "crossover" && key_of(r) == key && r.impl == "dense path") dense.push_back(&r);
    }
    if (dense.empty()) continue;
    const result& first = *dense.front();
    std::printf("\nsparse crossover: %s %s%s, |B| = 2^%d; dense and per-needle forced with the sm_90 line's box,\n"
                "'best needle' over the needle boxes tried; the public call uses sparse_ratio %d\n",
                first.op.c_str(), first.type.c_str(),
                first.density.find("steps") != std::string::npos ? " (keys in steps)" : "", log2_of(first.nb),
                first.type == "int32" ? sm90<std::int32_t>::ratio : sm90<std::int64_t>::ratio);
    std::printf("%6s %10s %10s %10s %10s %-18s %10s %10s %7s %7s\n", "k", "|A|", "dense ms", "needle ms", "best ms",
                "best needle box", "public ms", "thrust ms", "d/n", "d/best");
    // The fastest per-needle row of r's group.
    auto best_needle = [](const result& r) {
      const result* best = nullptr;
      for (const result& p : results) {
        if (p.section == "crossover" && p.op == r.op && p.type == r.type && p.density == r.density && p.n == r.n &&
            p.impl.rfind("per-needle", 0) == 0 && (best == nullptr || p.ms < best->ms)) {
          best = &p;
        }
      }
      return best;
    };
    long long from_tuned = -1, from_best = -1;
    bool tuned_run = true, best_run = true;
    for (auto it = dense.rbegin(); it != dense.rend(); ++it) {  // largest k first
      const result* nd = find_row(**it, "crossover", "per-needle path");
      const result* bt = best_needle(**it);
      tuned_run = tuned_run && nd != nullptr && nd->ms < (*it)->ms;
      best_run = best_run && bt != nullptr && bt->ms < (*it)->ms;
      if (tuned_run) from_tuned = (*it)->nb / (*it)->na;
      if (best_run) from_best = (*it)->nb / (*it)->na;
    }
    for (const result* r : dense) {
      const result* nd = find_row(*r, "crossover", "per-needle path");
      const result* bt = best_needle(*r);
      const result* pub = find_row(*r, "crossover", "lm (public)");
      double thr = 0;
      for (const result& p : results) {
        if (p.section == "crossover" && p.op == r->op && p.type == r->type && p.density == r->density &&
            p.n == r->n && p.check.empty()) {
          thr = p.ms;
        }
      }
      const double needle = nd ? nd->ms : 0, best = bt ? bt->ms : 0;
      const std::string best_box = bt ? (bt->impl == "per-needle path" ? std::string("tuned") : bt->impl.substr(11))
                                      : std::string("-");
      std::printf("%6lld %10lld %10.4f %10.4f %10.4f %-18s %10.4f %10.4f %6.2fx %6.2fx\n", r->nb / r->na, r->na, r->ms,
                  needle, best, best_box.c_str(), pub ? pub->ms : 0.0, thr, needle > 0 ? r->ms / needle : 0.0,
                  best > 0 ? r->ms / best : 0.0);
    }
    if (from_tuned > 0) std::printf("per-needle (tuned box) wins from k = %lld on\n", from_tuned);
    else std::printf("per-needle (tuned box) does not win at the largest k measured\n");
    if (from_best > 0) std::printf("per-needle (best box) wins from k = %lld on\n", from_best);
    else std::printf("per-needle (best box) does not win at the largest k measured\n");
  }
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

void write_json(const std::string& path, const std::string& device, double copy_gbs, const options& opt, int runs) {
  std::ofstream f(path);
  f << "{\n  \"device\": \"" << json_escape(device) << "\",\n  \"copy_gbs\": " << copy_gbs
    << ",\n  \"mode\": \"" << (opt.sparse ? "sparse" : opt.tune ? "tune" : opt.quick ? "quick" : "full") << "\",\n  \"runs\": " << runs
    << ",\n  \"spin_us\": " << opt.spin_us << ",\n  \"output_type\": \"uint32\""
    // The run's date and the peers' versions (scripts/readme_tables.py names them).
    << ",\n  \"date\": \"" << bench_meta::iso_date() << "\",\n  \"cub_version\": \""
    << bench_meta::cccl_version(CUB_VERSION) << "\",\n  \"thrust_version\": \"" << bench_meta::cccl_version(THRUST_VERSION)
    << "\",\n  \"allocator\": \"default (lm::cuda::pool_allocator)\",\n  \"cub_device_find\": "
    << (have_cub<cub_search::lower, std::int32_t> ? "true" : "false") << ",\n  \"cub_sorted_values\": "
    << (have_cub<cub_search::lower_sorted, std::int32_t> ? "true" : "false") << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const result& r = results[i];
    f << "    {\"section\": \"" << r.section << "\", \"op\": \"" << r.op << "\", \"type\": \"" << r.type
      << "\", \"density\": \"" << r.density << "\", \"n\": " << r.n << ", \"na\": " << r.na << ", \"nb\": " << r.nb
      << ", \"impl\": \"" << json_escape(r.impl) << "\", \"ms\": " << r.ms << ", \"bytes\": " << r.bytes
      << ", \"copy_ms\": " << r.copy_ms << ", \"check\": \"" << r.check << "\"}"
      << (i + 1 < results.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
}

std::vector<long long> parse_densities(const std::string& s) {
  std::vector<long long> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    const long long k = std::atoll(item.c_str());
    if (k < 1 || k > (1LL << 20)) throw std::invalid_argument("--densities: |B| / |A| must be in [1, 2^20]");
    v.push_back(k);
  }
  return v;
}

std::vector<int> parse_sizes(const std::string& s) {
  std::vector<int> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    const int lg = std::atoi(item.c_str());
    if (lg < 10 || lg > 30) throw std::invalid_argument("--sizes: log2 N must be in [10, 30]");
    v.push_back(lg);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--quick") opt.quick = true;
      else if (a == "--tune") opt.tune = true;
      else if (a == "--sparse") opt.sparse = true;
      else if (a == "--runs" && i + 1 < argc) opt.runs = std::atoi(argv[++i]);
      else if (a == "--sizes" && i + 1 < argc) opt.sizes = parse_sizes(argv[++i]);
      else if (a == "--densities" && i + 1 < argc) opt.densities = parse_densities(argv[++i]);
      else if (a == "--spin-us" && i + 1 < argc) opt.spin_us = std::atoi(argv[++i]);
      else if (a == "--json" && i + 1 < argc) opt.json = argv[++i];
      else throw std::invalid_argument("unknown argument " + a);
    }
    if (opt.runs < 0 || opt.spin_us < 0) throw std::invalid_argument("--runs and --spin-us must not be negative");
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "%s\nusage: libmerge_search_bench [--quick] [--tune] [--sparse] [--runs R] [--sizes L1,L2,...] [--densities K1,...] [--spin-us U] "
                 "[--json FILE]\n",
                 e.what());
    return 2;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device: nothing to measure\n");
    return 0;
  }
  bench bn;
  bn.opt = opt;
  bn.runs = opt.runs > 0 ? opt.runs : opt.quick ? 7 : opt.tune ? 15 : 25;
  cudaDeviceProp prop{};
  double copy_gbs = 0;
  char *thrust_buf = nullptr, *cub_buf = nullptr;
  bool aborted = false;
  try {
    cuda_check(cudaGetDeviceProperties(&prop, 0), "properties");
    cuda_check(cudaStreamCreateWithFlags(&bn.s, cudaStreamNonBlocking), "stream");
    cuda_check(cudaEventCreate(&bn.e0), "event");
    cuda_check(cudaEventCreate(&bn.e1), "event");
    bn.l2 = static_cast<std::size_t>(prop.l2CacheSize);
    const std::size_t temp_bytes = std::size_t(256) << 20;
    cuda_check(cudaMalloc(&thrust_buf, temp_bytes), "temp");
    cuda_check(cudaMalloc(&cub_buf, temp_bytes), "temp");
    bn.thrust_temp = thrust_arena{thrust_buf, temp_bytes};
    bn.cub_temp = arena{cub_buf, temp_bytes};
    cuda_check(cudaMalloc(&bn.counts, sizeof(lm::match_counts)), "counts");
    {
      const double gb = 1 << 30;
      copy_gbs = 2 * gb / (bn.copy_ms(2 * gb) * 1e6);
      bn.release_copy_buffer();
      bn.copy_cache.clear();
    }
    std::printf("GPU: %s (sm_%d%d), L2 %zu MB, device-to-device copy %.0f GB/s (read + write)\n", prop.name,
                prop.major, prop.minor, bn.l2 >> 20, copy_gbs);
    if (prop.major * 10 + prop.minor != 90 && opt.tune) {
      std::printf("note: --tune forces the boxes of the sm_90 line; this device is sm_%d%d\n", prop.major, prop.minor);
    }
    std::printf("CUB %d.%d.%d: cub::DeviceFind::LowerBound/UpperBound (one binary search a needle) %s; "
                "LowerBoundSortedValues/UpperBoundSortedValues (merge path) %s\n",
                CUB_VERSION / 100000, CUB_VERSION / 100 % 1000, CUB_VERSION % 100,
                have_cub<cub_search::lower, std::int32_t> ? "timed" : "absent, no rows",
                have_cub<cub_search::lower_sorted, std::int32_t> ? "timed" : "absent, no rows");
    std::fflush(stdout);

    const std::vector<long long> densities = {1, 64, 4096};
    auto guarded = [&](auto&& f) {  // one dataset's rows; a failure is reported and the run goes on
      if (aborted) return;
      try {
        f();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "libmerge_search_bench: %s\n", e.what());
        ++failures;
        // A sticky error (a kernel fault) ends the run; the rows so far are still printed.
        if (cudaDeviceSynchronize() != cudaSuccess) aborted = true;
        cudaGetLastError();
      }
    };
    if (opt.sparse) {
      // The per-needle search with binary, 4-ary and interpolating probes
      // (binary down to 4 to 32 needle spacings), at sparse densities; the
      // uniform keys of every row, then int64 keys and keys in runs of about
      // 2048 equal ones ("steps", where interpolation guesses worst).
      for (int lg : opt.sizes.empty() ? std::vector<int>{26, 28} : opt.sizes) {
        for (long long k : opt.densities.empty() ? std::vector<long long>{4, 8, 16, 64, 256, 4096} : opt.densities) {
          guarded([&] {
            std::fprintf(stderr, "sparse: |B|=2^%d k=%lld\n", lg, k);
            dataset<std::int32_t> d(bn, (1LL << lg) / k, 1LL << lg, 9500 + lg + static_cast<std::uint64_t>(k));
            crossover_row<op::lower_index, std::int32_t, needle_box_interpolating<128, 1, 0>,
                          needle_box_interpolating<128, 1, 4>, needle_box_interpolating<128, 1, 16>,
                          needle_box_interpolating<128, 1, 32>, needle_box_interpolating<256, 1, 8>,
                          needle_box_4<128, 1>>(bn, d, density_name(k));
          });
        }
        for (long long k : {64LL, 4096LL}) {
          guarded([&] {
            std::fprintf(stderr, "sparse: int64 |B|=2^%d k=%lld\n", lg, k);
            dataset<std::int64_t> d(bn, (1LL << lg) / k, 1LL << lg, 9600 + lg + static_cast<std::uint64_t>(k));
            crossover_row<op::lower_index, std::int64_t, needle_box_interpolating<128, 1, 0>,
                          needle_box_interpolating<128, 1, 4>, needle_box_interpolating<128, 1, 16>>(bn, d,
                                                                                                   density_name(k));
          });
          guarded([&] {
            std::fprintf(stderr, "sparse: steps |B|=2^%d k=%lld\n", lg, k);
            dataset<std::int32_t> d(bn, (1LL << lg) / k, 1LL << lg, 9700 + lg + static_cast<std::uint64_t>(k), true);
            crossover_row<op::lower_index, std::int32_t, needle_box_interpolating<128, 1, 0>,
                          needle_box_interpolating<128, 1, 4>, needle_box_interpolating<128, 1, 16>>(
                bn, d, density_name(k) + " steps");
          });
        }
        bn.release_copy_buffer();
      }
    } else if (opt.tune) {
      using lm::launch_box;
      const std::vector<int> box_sizes = opt.sizes.empty() ? std::vector<int>{26, 28} : opt.sizes;
      for (int lg : box_sizes) {
        guarded([&] {
          tune_boxes<std::int32_t, launch_box<256, 19>, launch_box<256, 23>, launch_box<256, 27>,
                     launch_box<256, 31>, launch_box<256, 35>, launch_box<384, 23>, launch_box<512, 23>,
                     launch_box<128, 39>>(bn, lg);
        });
        bn.release_copy_buffer();
      }
      // The crossover at |B| = 2^26 and 2^28 (and 2^22, for small inputs) for
      // int32 and at 2^26 for int64; with --sizes, at those |B|.
      const std::vector<long long> ks = {2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096};
      const std::vector<int> cross_sizes = opt.sizes.empty() ? std::vector<int>{22, 26, 28} : opt.sizes;
      for (int lg : cross_sizes) {
        guarded([&] { crossover<std::int32_t>(bn, lg, ks); });
        bn.release_copy_buffer();
      }
      guarded([&] { crossover<std::int64_t>(bn, opt.sizes.empty() ? 26 : opt.sizes.front(), ks); });
    } else {
      const std::vector<int> sizes =
          !opt.sizes.empty() ? opt.sizes : opt.quick ? std::vector<int>{20, 24} : std::vector<int>{20, 22, 24, 26, 28};
      for (int lg : sizes) {
        for (long long k : densities) guarded([&] { search_cases<std::int32_t>(bn, lg, k); });
        for (long long k : densities) guarded([&] { search_cases<std::int64_t>(bn, lg, k); });
        bn.release_copy_buffer();
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libmerge_search_bench: %s\n", e.what());
    ++failures;
    aborted = true;
  }

  std::printf("\nlm vs Thrust, %s: cold L2 (rotated replicas), %d us spin before each call, median of %d runs\n",
              prop.name, opt.spin_us, bn.runs);
  std::printf("outputs std::uint32_t; GB/s and %%copy count |A|*key + |B|*key + outputs*4 bytes (also for sparse rows);\n"
              "%%copy = a cudaMemcpy of those bytes / the row; 'vs peer' = Thrust's ms / the row's ms.\n"
              "Peers: index_match = thrust::lower_bound + match transform (A) and thrust::upper_bound + match transform"
              " (B), 4 calls, no match counts;\n"
              "equality_count = thrust::lower_bound + thrust::upper_bound + transform (3 calls).\n\n");
  if (opt.sparse) {
    print_rows("crossover", "vs peer");
    print_crossover();
  } else if (opt.tune) {
    std::printf("launch boxes on the dense path (|A| = |B|):\n");
    print_rows("tune", "vs peer");
    print_crossover();
  } else {
    print_rows("search", "vs peer");
  }
  write_json(opt.json, prop.name, copy_gbs, opt, bn.runs);
  std::printf("\nJSON: %s\n", opt.json.c_str());
  if (failures > 0) std::printf("%d FAILURE(S): see stderr\n", failures);
  else std::printf("all outputs verified\n");
  cudaFree(thrust_buf);
  cudaFree(cub_buf);
  cudaFree(bn.counts);
  bn.release_copy_buffer();
  return failures > 0 || aborted ? 1 : 0;
}
