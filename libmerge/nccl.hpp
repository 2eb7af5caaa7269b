// libmerge's sort across GPUs over NCCL (needs NCCL; CMake target
// libmerge::nccl from find_package(libmerge COMPONENTS nccl)). Include this
// header instead of, or after, libmerge.hpp. Semantics: policies/nccl.hpp.
//
//   lm::merge_sort(lm::nccl::par(comm, stream), d_keys, d_keys + n);   // one process a GPU
//
//   std::vector<lm::nccl::shard<int>> shards = {{comm0, stream0, keys0, n0}, {comm1, stream1, keys1, n1}};
//   lm::nccl::merge_sort(shards);   // one process, all its GPUs (ncclCommInitAll)
#pragma once

#include <vector>

#include "libmerge.hpp"

#if LIBMERGE_HAS_CUDA
#include "../policies/nccl.hpp"
#include "../backends/nccl/merge_sort.cuh"

namespace libmerge::nccl {

// One local rank's part of a call that drives several GPUs.
template <class K, class V = void>
struct shard {
  ncclComm_t comm;
  cudaStream_t stream;
  K* keys;
  index_t n;
  V* values = nullptr;  // merge_sort_by_key only
};

namespace detail_ {
template <bool WithValues, class K, class V, class Comp>
void sort_all(const std::vector<shard<K, V>>& shards, Comp comp, double timeout_s, const char* algorithm) {
  namespace nb = libmerge::detail::nccl_backend;
  using Vs = std::conditional_t<WithValues, V, char>;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<nb::shard_view<K, Vs>> views;
  for (const auto& s : shards) {
    comms.push_back(s.comm);
    streams.push_back(s.stream);
    if constexpr (WithValues) {
      views.push_back({s.keys, s.values, s.n});
    } else {
      views.push_back({s.keys, nullptr, s.n});
    }
  }
  if (shards.empty()) return;
  nb::nccl_transport t(comms, streams, timeout_s, algorithm);
  nb::sort_shards<WithValues, K, Vs>(t, views, comp, algorithm);
}
}  // namespace detail_

// Sorts the keys of every shard as one sequence.
template <class K, class Comp = less<>>
void merge_sort(const std::vector<shard<K>>& shards, Comp comp = Comp(), double timeout_s = default_timeout_s) {
  detail_::sort_all<false>(shards, comp, timeout_s, "merge_sort");
}

template <class K, class V, class Comp = less<>>
void merge_sort_by_key(const std::vector<shard<K, V>>& shards, Comp comp = Comp(),
                       double timeout_s = default_timeout_s) {
  detail_::sort_all<true>(shards, comp, timeout_s, "merge_sort_by_key");
}

}  // namespace libmerge::nccl
#else
#error "libmerge/nccl.hpp needs nvcc: the NCCL backend runs on the CUDA backend"
#endif
