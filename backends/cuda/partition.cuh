// Coarse-grained scheduling, shared by merge (and later merge sort and sorted
// search): one partition kernel finds where the merge path crosses every tile
// boundary, so that each CTA of the next kernel knows its input ranges without
// searching global memory itself (MergePathPartitions in seeds/000).
//
// A "geometry" says which merge problem a diagonal belongs to: merge has one
// problem covering both inputs; a merge-sort pass has one per pair of sorted
// runs. Tiles never straddle two problems.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <iterator>
#include <type_traits>
#include <utility>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/detail/dispatch.hpp"
#include "../../libmerge/search_tags.hpp"
#include "device.cuh"
#include "error.hpp"
#include "merge_path.hpp"

namespace libmerge::detail::cuda_backend {

// One merge: a[a_begin, a_begin + na) with b[b_begin, b_begin + nb), whose
// output starts at diagonal diag_begin.
struct merge_problem {
  index_t a_begin, na, b_begin, nb, diag_begin;
};

template <class It>
using value_of = std::remove_cv_t<typename std::iterator_traits<std::decay_t<It>>::value_type>;

// Reads keys as the merge's key type K (A's value type, as in CUB and Thrust),
// so that the partitions compare exactly what the tiles compare.
template <class K, class It>
struct keys_as {
  It it;
  LIBMERGE_HOST_DEVICE K operator[](index_t i) const { return static_cast<K>(it[i]); }
};

// The value type moved by a merge; keys-only merges move none (char stands in
// and occupies no shared memory).
template <class ValIt>
using merge_value_t = typename std::conditional_t<has_values<ValIt>, std::iterator_traits<std::decay_t<ValIt>>,
                                                  std::iterator_traits<char*>>::value_type;

// The geometry of merge and merge_by_key: a single problem. It also names the
// merge's element types, which every stage takes from here.
template <class AKeys, class BKeys, class AVals, class BVals>
struct single_merge {
  using key_type = value_of<AKeys>;
  using value_type = merge_value_t<AVals>;
  static constexpr bool with_values = has_values<AVals>;
  AKeys a_keys;
  BKeys b_keys;
  AVals a_vals;
  BVals b_vals;
  index_t na, nb;

  LIBMERGE_HOST_DEVICE index_t size() const { return na + nb; }
  LIBMERGE_HOST_DEVICE merge_problem problem_at(index_t) const { return {0, na, 0, nb, 0}; }
};

// Programmatic dependent launch (sm_90+): the kernel after the partitions may
// be scheduled while they are still being computed, hiding its launch latency;
// it waits here, before its first read of them.
__device__ __forceinline__ void allow_dependent_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_prerequisite_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// mp[p] = how many elements of A precede diagonal p * nv of its problem.
template <bounds Bounds, class Geometry, class Comp>
__global__ void partition_kernel(Geometry g, index_t nv, index_t num_partitions, index_t* mp, Comp comp) {
  allow_dependent_launch();
  const index_t p = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= num_partitions) return;
  const index_t diag = p * nv < g.size() ? p * nv : g.size();
  const merge_problem q = g.problem_at(diag);
  using K = typename Geometry::key_type;
  mp[p] = merge_path<Bounds, index_t>(keys_as<K, decltype(g.a_keys)>{g.a_keys + q.a_begin}, q.na,
                                      keys_as<K, decltype(g.b_keys)>{g.b_keys + q.b_begin}, q.nb,
                                      diag - q.diag_begin, comp);
}

// Launches `kernel` on `stream`; launch errors come back from
// cudaLaunchKernelEx itself, so no check reads the thread's last-error slot
// (where an earlier, unrelated failure may still sit). With `after_partitions`
// and kernels compiled for sm_90+, a programmatic dependent launch: its CTAs
// may be scheduled while the partition kernel before it runs, and wait in
// wait_for_prerequisite_grid(). (The compiled architecture decides, not the
// device's: code built for sm_80 has no griddepcontrol instructions to wait.)
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), index_t grid, int nt, std::size_t smem, cudaStream_t stream,
            bool after_partitions, const device_info& dev, const char* algorithm, const char* kernel_name,
            Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(grid));
  config.blockDim = dim3(static_cast<unsigned>(nt));
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = after_partitions && dev.arch >= 90 ? 1 : 0;
  check_cuda(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), algorithm,
             (std::string("launch of ") + kernel_name).c_str());
}

// Fills mp[0, num_tiles] for tiles of nv elements.
template <bounds Bounds, class Geometry, class Comp>
void launch_partitions(const Geometry& g, index_t nv, index_t num_tiles, index_t* mp, Comp comp,
                       cudaStream_t stream, const device_info& dev, const char* algorithm) {
  constexpr int nt = 128;
  const index_t num_partitions = num_tiles + 1;
  launch(partition_kernel<Bounds, Geometry, Comp>, (num_partitions + nt - 1) / nt, nt, 0, stream, false, dev,
         algorithm, "partition_kernel", g, nv, num_partitions, mp, comp);
}

// A tile's input ranges, from the partitions at its two ends.
struct tile_range {
  index_t a0, a1, b0, b1;  // within the tile's problem
  merge_problem problem;
  LIBMERGE_HOST_DEVICE int count() const { return static_cast<int>((a1 - a0) + (b1 - b0)); }
};

// mp_begin, mp_end: the partitions at the tile's two ends (mp[tile], mp[tile + 1]).
template <class Geometry>
LIBMERGE_HOST_DEVICE tile_range find_tile_range(const Geometry& g, index_t tile, index_t nv, index_t mp_begin,
                                                index_t mp_end) {
  const index_t d0 = tile * nv;
  tile_range r;
  r.problem = g.problem_at(d0);
  const merge_problem& q = r.problem;
  const index_t local0 = d0 - q.diag_begin;
  const index_t local1 = local0 + nv < q.na + q.nb ? local0 + nv : q.na + q.nb;
  r.a0 = mp_begin;
  // At the end of its problem a tile ends at the problem's end; the partition
  // stored there belongs to the next problem (merge sort) or is the same value.
  r.a1 = local1 == q.na + q.nb ? q.na : mp_end;
  // Partitions are monotonic for sorted input. For unsorted input they may not
  // be; clamping keeps the tile within its nv elements and within its inputs
  // (the output is then unspecified, but no access goes out of range).
  if (r.a1 < r.a0) r.a1 = r.a0;
  if (r.a1 > r.a0 + (local1 - local0)) r.a1 = r.a0 + (local1 - local0);
  r.b0 = local0 - r.a0;
  r.b1 = local1 - r.a1 < q.nb ? local1 - r.a1 : q.nb;
  return r;
}

}  // namespace libmerge::detail::cuda_backend
