// The CUDA module's operations (tagged.hpp) for one dtype tag, LMPY_TAG: the
// build compiles this file once a tag, so that it spreads over cores.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>
#include <thrust/system/cuda/execution_policy.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "../calls.hpp"
#include "tagged.hpp"

#ifndef LMPY_TAG
#error "ops.cu is compiled once a dtype tag: define LMPY_TAG"
#endif

namespace lmpy::gpu {
namespace {

// The CUDA backend for calls.hpp, on one stream.
struct gpu_backend {
  cudaStream_t stream;
  lm::cuda::policy<> policy() const { return lm::cuda::par.on(stream); }
  static thrust::counting_iterator<i64> counting(i64 start) { return thrust::counting_iterator<i64>(start); }
  void iota(i64* p, i64 n) const {
    if (n > 0) thrust::sequence(thrust::cuda::par_nosync.on(stream), p, p + n);
  }
  // The runs' positions as device arrays (pointers: the k-way merge's one-pass kernels take no other
  // value iterators), freed in stream order after the merge.
  struct run_starts {
    i64* positions = nullptr;
    cudaStream_t stream = nullptr;
    std::vector<const i64*> at;
    run_starts() = default;
    run_starts(run_starts&& o) noexcept : positions(o.positions), stream(o.stream), at(std::move(o.at)) {
      o.positions = nullptr;
    }
    run_starts& operator=(run_starts&&) = delete;
    ~run_starts() {
      if (positions != nullptr) cudaFreeAsync(positions, stream);
    }
    auto begin() const { return at.begin(); }
  };
  run_starts starts(const i64* lengths, i64 k) const {
    run_starts s;
    s.stream = stream;
    i64 total = 0;
    for (i64 i = 0; i < k; ++i) total += lengths[i];
    if (total > 0) {
      const cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&s.positions), sizeof(i64) * total, stream);
      if (e != cudaSuccess) {
        cudaGetLastError();
        throw out_of_memory("libmerge.multiway_merge_by_key: the positions (" + std::to_string(8 * total) +
                            " bytes): " + cudaGetErrorString(e));
      }
      iota(s.positions, total);
    }
    for (i64 i = 0, at = 0; i < k; at += lengths[i], ++i) s.at.push_back(s.positions + at);
    return s;
  }
};

// searchsorted's search of needles whose order is not known, queued whole: the merge-path search, whose
// tiles (which read every needle anyway) report a descent (descent_reports), then a grid that searches
// each needle alone where they did and returns at once where they did not. No read of the needles first, and
// no wait for the report (H200, 2^24 int32 each: 0.107 ms a call, 0.138 waiting for the report, 0.094 told sorted).
template <bool Upper, class T, class Comp>
__global__ void search_each_if_reported(const unsigned* descents, const T* v, i64 nv, const T* a, i64 na, i64* out,
                                        Comp comp) {
  if (*descents == 0) return;
  const i64 stride = static_cast<i64>(gridDim.x) * blockDim.x;
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < nv; i += stride) {
    out[i] = lm::detail::bound_within<Upper>(a, i64{0}, na, v[i], comp);
  }
}

template <bool Upper, class T, class Comp>
void search_queued(const gpu_backend& be, const T* v, i64 nv, const T* a, i64 na, i64* out, Comp comp) {
  namespace cb = lm::detail::cuda_backend;
  using st = lm::search_type;
  constexpr lm::bounds bounds = Upper ? lm::bounds::upper : lm::bounds::lower;
  const auto policy = be.policy();
  cb::temporary_storage<lm::cuda::pool_allocator> flag(policy.allocator(), be.stream, sizeof(unsigned),
                                                       "searchsorted");
  unsigned* descents = flag.template as<unsigned>();
  cb::sorted_search<bounds, st::index, st::none, cb::a_writes::search, cb::counts_to::nowhere>(
      policy, v, nv, a, na, out, nullptr, nullptr, comp, descents);
  const cb::device_info& dev = cb::current_device("searchsorted", be.stream);
  constexpr int threads = 256;
  const i64 blocks = std::min<i64>((nv + threads - 1) / threads, static_cast<i64>(dev.sms) * 8);
  search_each_if_reported<Upper><<<static_cast<unsigned>(blocks), threads, 0, be.stream>>>(descents, v, nv, a, na,
                                                                                          out, comp);
  lm::detail::check_cuda(cudaGetLastError(), "searchsorted", "launch of search_each_if_reported");
}

// Runs f with the tag's type and order on the stream; a failed allocation becomes out_of_memory.
template <class F>
void on_tag(bool descending, stream_t s, F&& f) {
  try {
    with_tag<LMPY_TAG>(descending, [&](auto* t, auto comp) {
      using ops = calls<gpu_backend, std::remove_pointer_t<decltype(t)>, decltype(comp)>;
      f(ops{}, gpu_backend{reinterpret_cast<cudaStream_t>(s)}, comp);
    });
  } catch (const lm::cuda_error& e) {
    if (e.code() == cudaErrorMemoryAllocation) throw out_of_memory(e.what());
    throw;
  }
}

}  // namespace

template <int Tag>
void tagged<Tag>::sort(bool descending, void* keys, i64 n, stream_t s) {
  on_tag(descending, s, [&](auto ops, const auto& be, auto comp) { ops.sort(be, keys, n, comp); });
}

template <int Tag>
void tagged<Tag>::argsort(bool descending, void* keys, i64 n, i64* indices, stream_t s) {
  on_tag(descending, s, [&](auto ops, const auto& be, auto comp) { ops.argsort(be, keys, n, indices, comp); });
}

template <int Tag>
i64 tagged<Tag>::sorted_until(bool descending, const void* keys, i64 n, stream_t s) {
  i64 at = n;
  on_tag(descending, s, [&](auto ops, const auto& be, auto comp) { at = ops.sorted_until(be, keys, n, comp); });
  return at;
}

template <int Tag>
void tagged<Tag>::merge(bool descending, const void* a, i64 na, const void* b, i64 nb, void* out, i64* positions,
                        stream_t s) {
  on_tag(descending, s,
         [&](auto ops, const auto& be, auto comp) { ops.merge(be, a, na, b, nb, out, positions, comp); });
}

template <int Tag>
void tagged<Tag>::multiway_merge(bool descending, const void* const* firsts, const i64* lengths, i64 k, void* out,
                                 i64* positions, stream_t s) {
  on_tag(descending, s, [&](auto ops, const auto& be, auto comp) {
    ops.multiway_merge(be, firsts, lengths, k, out, positions, comp);
  });
}

template <int Tag>
void tagged<Tag>::sorted_search(bool descending, bool upper, int form, const void* a, i64 na, const void* b, i64 nb,
                                i64* a_out, i64* b_out, stream_t s) {
  on_tag(descending, s, [&](auto ops, const auto& be, auto comp) {
    ops.sorted_search(be, upper, form, a, na, b, nb, a_out, b_out, comp);
  });
}

template <int Tag>
void tagged<Tag>::search_any_order(bool descending, bool upper, const void* needles, i64 nn, const void* haystack,
                                   i64 nh, i64* out, stream_t s) {
  if (nn == 0) return;
  on_tag(descending, s, [&](auto ops, const auto& be, auto comp) {
    using T = typename decltype(ops)::value_type;
    const T* v = static_cast<const T*>(needles);
    const T* a = static_cast<const T*>(haystack);
    if (upper) {
      search_queued<true>(be, v, nn, a, nh, out, comp);
    } else {
      search_queued<false>(be, v, nn, a, nh, out, comp);
    }
  });
}

template <int Tag>
void tagged<Tag>::equality_count(bool descending, const void* a, i64 na, const void* b, i64 nb, i64* counts,
                                 stream_t s) {
  on_tag(descending, s,
         [&](auto ops, const auto& be, auto comp) { ops.equality_count(be, a, na, b, nb, counts, comp); });
}

template struct tagged<LMPY_TAG>;

}  // namespace lmpy::gpu
