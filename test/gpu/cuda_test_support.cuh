// Helpers for the GPU tests: host/device copies and the tuned tile size.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "check.hpp"
#include "internals.cuh"
#include "test_support.hpp"

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/version.h>

#include <libmerge/libmerge.hpp>

namespace cuda_test {

// Thrust's comparators, as users of the toolkit's CCCL (3.0) write them. From
// CCCL 3.1 thrust::less and thrust::greater are deprecated aliases of
// cuda::std's, which the tests then name directly (a deprecation warning is
// an error in this build).
#if THRUST_VERSION >= 300100
template <class T>
using thrust_less = ::cuda::std::less<T>;
template <class T>
using thrust_greater = ::cuda::std::greater<T>;
#else
template <class T>
using thrust_less = thrust::less<T>;
template <class T>
using thrust_greater = thrust::greater<T>;
#endif

using test_support::record;

template <class T>
thrust::device_vector<T> to_device(const std::vector<T>& v) {
  return thrust::device_vector<T>(v.begin(), v.end());
}

template <class T>
std::vector<T> to_host(const thrust::device_vector<T>& v) {
  std::vector<T> h(v.size());
  thrust::copy(v.begin(), v.end(), h.begin());
  return h;
}

// The types of a plain merge of keys K and values V (void: keys only) from
// raw pointers, for the helpers below that ask the backend's tuning about it.
// (Test helpers over the CUDA backend's internals: they live here, not in the
// backend.)
template <class K, class V>
struct plain_merge {
  static constexpr bool pairs = !std::is_void_v<V>;
  using vals_in = std::conditional_t<pairs, const std::conditional_t<pairs, V, char>*,
                                     libmerge::detail::no_values>;
  using geometry = internals::cuda::single_merge<const K*, const K*, vals_in, vals_in>;
  using vals_out =
      std::conditional_t<pairs, std::conditional_t<pairs, V, char>*, libmerge::detail::no_values>;
  using kernel_of = internals::cuda::merge_kernel_of<geometry, K*, vals_out, libmerge::less<>>;
};

// Elements per tile of the tuned merge launch box on this device for a merge
// of n elements of keys K and values V (void: keys only): merges below
// tuned_merge_large_from() take the line's small tiles. Tests use it to put
// sizes on tile boundaries.
template <class K, class V = void>
long long tuned_merge_nv(long long n = 1) {
  namespace cb = internals::cuda;
  using M = plain_merge<K, V>;
  long long nv = 0;
  cb::with_merge_box<libmerge::cuda::policy<>, K, V, typename M::geometry, K*, typename M::vals_out,
                     libmerge::less<>>(cb::current_device("test"), "test", n,
                                       [&](auto box, auto...) { nv = decltype(box)::nv; });
  return nv;
}

// CTAs in one wave of the kernel of a tuned merge of n elements of keys K and
// values V: the unit of the merge's self_ends_waves_all and _first.
template <class K, class V = void>
long long tuned_merge_wave(long long n = 1) {
  namespace cb = internals::cuda;
  using M = plain_merge<K, V>;
  long long wave = 0;
  const auto& dev = cb::current_device("test");
  cb::with_merge_box<libmerge::cuda::policy<>, K, V, typename M::geometry, K*, typename M::vals_out,
                     libmerge::less<>>(dev, "test", n, [&](auto box, auto self_ends) {
    using Box = decltype(box);
    auto kernel = cb::merge_kernel<Box, decltype(self_ends)::value, typename M::geometry, K*, typename M::vals_out,
                                   libmerge::less<>>;
    const std::size_t smem = cb::merge_tile_layout<typename M::geometry, Box::nv>::bytes;
    cb::prepare_shared_memory(kernel, smem, dev, Box::nt, Box::vt, "test");
    wave = cb::wave_ctas(kernel, Box::nt, smem, dev, "test");
  });
  return wave;
}
// The size from which tuned merges take the large tiles (2^small_log2 of the
// entry for this device).
template <class K, class V = void>
long long tuned_merge_large_from() {
  namespace cb = internals::cuda;
  long long from = 0;
  cb::with_tuned_boxes<cb::merge_table<K, V>>(cb::current_device("test"), "test",
                                              typename plain_merge<K, V>::kernel_of{},
                                              [&](auto boxes) { from = 1LL << decltype(boxes)::small_log2; });
  return from;
}

// Total sizes that put the last tile at every boundary case of nv, plus
// powers of two +-1 and a size of many tiles.
inline std::vector<long long> tile_boundary_sizes(long long nv) {
  std::vector<long long> sizes = {1, 2, 3, nv - 1, nv, nv + 1, 2 * nv - 1, 2 * nv, 2 * nv + 1, 7 * nv + 5};
  for (int k : {10, 16, 20}) {
    const long long p = 1LL << k;
    sizes.insert(sizes.end(), {p - 1, p, p + 1});
  }
  sizes.push_back(1000003);
  return sizes;
}

// Sorted search's tuning on this device, from the tuning table as the
// backend reads it: the tuned tile (nt * vt elements) for keys TA and TB,
// and the rules that send a one-sided search per needle.
struct search_tuning {
  long long nv;            // merge-path tile
  long long needle_nv;     // per-needle search: needles a block
  int ratio;               // per-needle from |B| / |A| = ratio on
  int quaternary;          // 4-ary per-needle search below |B| / |A| = quaternary
  int small_log2_bytes;    // a haystack under 2^small_log2_bytes bytes (0: none) is small:
  int small_ratio;         // per-needle (4-ary) from |B| / |A| = small_ratio on,
  int small_needles_log2;  // and at any density below 2^small_needles_log2 needles (0: never)
  bool small(long long hay_keys, std::size_t bytes) const {
    return small_log2_bytes > 0 &&
           static_cast<double>(hay_keys) * static_cast<double>(bytes) < std::ldexp(1.0, small_log2_bytes);
  }
  // The ratio from which a search with a haystack of `keys` keys of `bytes`
  // bytes each goes per needle.
  int ratio_for(long long keys, std::size_t bytes) const { return small(keys, bytes) ? small_ratio : ratio; }
  // Whether a tuned one-sided search of `needles` needles in a haystack of
  // `hay_keys` keys of `bytes` bytes goes per needle (the backend's
  // launch_search).
  bool per_needle(long long needles, long long hay_keys, std::size_t bytes) const {
    const bool few = small(hay_keys, bytes) && small_needles_log2 > 0 && needles < (1LL << small_needles_log2);
    return few || static_cast<double>(needles) * ratio_for(hay_keys, bytes) <= static_cast<double>(hay_keys);
  }
  // The fewest keys of `bytes` bytes a haystack that is not small has.
  long long large_hay(std::size_t bytes = 4) const {
    return small_log2_bytes > 0 ? (1LL << small_log2_bytes) / static_cast<long long>(bytes) : 1;
  }
};
template <class TA, class TB = TA>
search_tuning tuned_search() {
  namespace cb = internals::cuda;
  const int line = libmerge::tuning::entry_for(cb::current_device("test").cc);
  const auto& l =
      libmerge::tuning::search[line < 0 ? std::size(libmerge::tuning::search) - 1 : static_cast<std::size_t>(line)];
  const int vt = cb::search_table<TA, TB>::vt_of(l);
  return {static_cast<long long>(cb::search_table<TA, TB>::nt(l.nt, vt)) * vt,
          static_cast<long long>(l.needle_nt) * l.needle_vt,
          l.sparse_ratio,
          l.quaternary_below,
          l.small_hay_log2_bytes,
          l.small_sparse_ratio,
          l.small_needles_log2};
}

// The sm_90 line's dense search tile for keys TA and TB (every line from
// sm_80 to sm_120 has sm_90's settings, tuning::architectures). A caller's
// box turns the needle-count rule off, so a policy with this box runs the
// tuned merge-path kernels wherever the ratios allow tiles: tests of that
// tile below 2^small_needles_log2 needles, where a tuned call goes per
// needle.
template <class TA, class TB = TA>
using sm90_search_tile = typename decltype(internals::cuda::search_table<TA, TB>::template boxes<
                                           static_cast<std::size_t>(libmerge::tuning::entry_for(90))>())::dense;
template <class TA, class TB = TA>
auto dense_tile_policy() {
  return libmerge::cuda::par.with(sm90_search_tile<TA, TB>{});
}

// Checks that `kernel` uses no local memory (no register spills, no stack),
// and reports its register count.
template <class Kernel>
void check_no_local_memory(Kernel kernel, const std::string& name) {
  cudaFuncAttributes a{};
  BOOST_REQUIRE_EQUAL(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(kernel)), cudaSuccess);
  BOOST_TEST_MESSAGE(name << ": " << a.numRegs << " registers, " << a.localSizeBytes << " B local");
  BOOST_CHECK_MESSAGE(a.localSizeBytes == 0, name << " uses " << a.localSizeBytes << " bytes of local memory");
}

// LIBMERGE_TEST_QUICK=1 (used under compute-sanitizer) keeps every test case
// and every tile-boundary kind (partial, full, one past) but drops the large
// sizes and most splits.
inline bool quick() {
  const char* v = std::getenv("LIBMERGE_TEST_QUICK");
  return v != nullptr && *v != '\0' && *v != '0';
}

// LIBMERGE_TEST_SHARD=i/k (0 <= i < k): the longest cases' sweeps run only
// their checks number i, i + k, i + 2k, ... (counted as they come), so that
// scripts/sanitize-cases.sh can run such a case as k processes side by side
// under racecheck (whole, several took more than 7 minutes each). Unset:
// every check. (One counter a process: sanitize-cases.sh runs one case a
// process, whose checks come in the same order in every shard; what a case
// does outside its sweeps runs in every shard.)
struct test_shard {
  long index = 0, count = 1;
  test_shard() {
    const char* v = std::getenv("LIBMERGE_TEST_SHARD");
    long i = 0, k = 1;
    if (v != nullptr && std::sscanf(v, "%ld/%ld", &i, &k) == 2 && k > 0 && i >= 0 && i < k) {
      index = i;
      count = k;
    }
  }
};
inline bool in_shard() {
  static const test_shard shard;
  static long counter = 0;
  return counter++ % shard.count == shard.index;
}

// A value no generator produces, so an unwritten output cannot pass.
template <class T>
T poison() {
  if constexpr (std::is_same_v<T, record>) {
    return record{-12345, -1, -1};
  } else if constexpr (std::is_floating_point_v<T>) {
    return T(-7777.125);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(0x5a5a5a5a5a5a5a5aull);
  } else {
    T t{};
    std::memset(static_cast<void*>(&t), 0x5a, sizeof(T));
    return t;
  }
}

// An allocator that counts its calls and the blocks it has out, and the
// largest request.
struct counting_allocator {
  std::atomic<int>* live;
  std::atomic<int>* calls;
  std::atomic<std::size_t>* largest = nullptr;
  void* allocate(std::size_t bytes, cudaStream_t stream) {
    void* p = nullptr;
    if (largest != nullptr && bytes > largest->load()) largest->store(bytes);
    if (cudaMallocAsync(&p, bytes, stream) != cudaSuccess) throw std::bad_alloc();
    ++*live;
    ++*calls;
    return p;
  }
  void deallocate(void* p, std::size_t, cudaStream_t stream) noexcept {
    cudaFreeAsync(p, stream);
    --*live;
  }
};

// A kernel that holds its stream until the host raises a flag (or ~2 s pass).
static __global__ void hold_stream(volatile int* flag, int* timed_out, long long max_cycles) {
  const long long start = clock64();
  while (*flag == 0) {
    if (clock64() - start > max_cycles) {
      *timed_out = 1;
      return;
    }
  }
}

struct stream_gate {
  int* host = nullptr;   // [0] flag, [1] timed out
  int* device = nullptr;
  stream_gate() {
    BOOST_REQUIRE_EQUAL(cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped), cudaSuccess);
    host[0] = host[1] = 0;
    BOOST_REQUIRE_EQUAL(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), host, 0), cudaSuccess);
  }
  ~stream_gate() { cudaFreeHost(host); }
  void close(cudaStream_t s) { hold_stream<<<1, 1, 0, s>>>(device, device + 1, 4000000000LL); }
  void open() { *reinterpret_cast<volatile int*>(host) = 1; }
  bool timed_out() const { return host[1] != 0; }
};

// Keys 7000 + 7 i (i < 2^24) alone are inputs of the tests that take this
// comparator; it flags any other key it is given (a merge or a sort that
// reads shared memory nothing staged, or a stand-in that is no input).
struct input_keys_only_less {
  int* seen_other;
  __host__ __device__ static bool input(std::int32_t x) { return x >= 7000 && x < 7000 + 7 * (1 << 24) && x % 7 == 0; }
  __host__ __device__ bool operator()(std::int32_t x, std::int32_t y) const {
#ifdef __CUDA_ARCH__
    if (!input(x) || !input(y)) atomicExch(seen_other, 1);
#endif
    return x < y;
  }
};

// Comparators that are no strict weak ordering (as the CPU tests' kinds),
// for the merge and sort tests of bad comparators.
struct bad_comp {
  int kind;  // 0 coin flip, 1 <=, 2 always true, 3 always false
  LIBMERGE_HOST_DEVICE bool operator()(std::int32_t a, std::int32_t b) const {
    switch (kind) {
      case 0:
        return ((static_cast<std::uint32_t>(a) * 2654435761u ^ static_cast<std::uint32_t>(b) * 40503u) >> 7) & 1u;
      case 1:
        return a <= b;
      case 2:
        return true;
      default:
        return false;
    }
  }
};

}  // namespace cuda_test
