// CUDA merge and merge_by_key: partition once (partition.cuh), then one CTA per
// tile of nv outputs loads its ranges of A and B, merges them in shared memory
// (cta_merge.cuh) and writes the tile with coalesced stores. Small merges'
// first tiles find their own ends instead (merge_kernel, self_ends_waves_all).
#pragma once

#include <cuda_runtime_api.h>

#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/functional.hpp"
#include "../../policies/cuda.hpp"
#include "cta_merge.cuh"
#include "memory.cuh"
#include "partition.cuh"
#include "runtime.cuh"

namespace libmerge::detail::cuda_backend {

// Whether tiles' keys are staged by bulk copies (cta_merge.cuh): keys-only, <= 4 bytes.
// H200, int32 keys 2^24..2^28: 0.89-0.91x the time of register loads; int64
// and pairs lost (docs/cuda-merge.md, "Tiles staged by bulk copies").
template <class Geometry>
inline constexpr bool bulk_keys_of = !Geometry::with_values && sizeof(typename Geometry::key_type) <= 4 &&
                                     bulk_loadable<typename Geometry::key_type, decltype(Geometry::a_keys)> &&
                                     bulk_loadable<typename Geometry::key_type, decltype(Geometry::b_keys)>;

template <class Geometry, int NV>
using merge_tile_layout = merge_layout<typename Geometry::key_type, typename Geometry::value_type,
                                       Geometry::with_values, NV, bulk_keys_of<Geometry> ? 2 : 0>;

// The merge is bound by loads in flight: ask for a full SM (32 registers a
// thread on sm_80/90/100); none for elements over 16 bytes (they would spill).
template <class Box, std::size_t ElementBytes>
inline constexpr int min_ctas_per_sm = [] {
  if (ElementBytes > 16 || sm_max_threads == 0 || Box::nt >= sm_max_threads) return 1;
  const int cap = sm_here.ctas;
  return sm_max_threads / Box::nt < cap ? sm_max_threads / Box::nt : cap;
}();

// One tile: load its ranges of A and B, merge them in shared memory, write it.
template <class Box, bool Full, class Geometry, class KeysOut, class ValsOut, class Comp>
__device__ __forceinline__ void merge_tile(const Geometry& g, const tile_range& r, index_t out0, unsigned char* smem,
                                           KeysOut keys_out, ValsOut vals_out, Comp& comp) {
  using K = typename Geometry::key_type;
  using V = typename Geometry::value_type;
  constexpr bool with_values = Geometry::with_values;
  using layout = merge_tile_layout<Geometry, Box::nv>;

  const int na = static_cast<int>(r.a1 - r.a0);
  const int count = r.count();
  const int nb = count - na;
  const index_t a_at = r.problem.a_begin + r.a0;
  const index_t b_at = r.problem.b_begin + r.b0;
  const int tid = static_cast<int>(threadIdx.x);
  // A at keys[0, na), B at keys[kb, kb + nb) (a gap where staged).
  K* keys = reinterpret_cast<K*>(smem + layout::keys);
  int kb = na;
  constexpr bool bulk = tuning::here.merge.loads == tuning::tile_loads::bulk_copies && bulk_keys_of<Geometry>;
  if constexpr (bulk) {
    bulk_loader<Box::nt> loader(reinterpret_cast<std::uint64_t*>(smem + layout::barrier), tid);
    const auto staged = loader.stage_pair(g.a_keys + a_at, na, g.b_keys + b_at, nb, smem + layout::keys);
    keys = staged.a;
    kb = staged.b_at;
    loader.wait();
  } else {
    load_tile<Box::nt, Box::vt, Full>(g.a_keys + a_at, na, g.b_keys + b_at, count, keys, tid);
    if constexpr (with_values) {
      // Values load with the keys: twice the bytes in flight, no second trip.
      V* vals = reinterpret_cast<V*>(smem + layout::vals);
      load_tile<Box::nt, Box::vt, Full>(g.a_vals + a_at, na, g.b_vals + b_at, count, vals, tid);
    }
    __syncthreads();
  }

  K merged[Box::vt];
  int src[Box::vt];
  cta_merge<Box::vt, bounds::lower, walks_past_end>(keys, na, kb, nb, tid, merged, src, comp);

  if constexpr (!with_values) {
    // Keys only: out through the key buffer once every thread has read it.
    __syncthreads();
    // Transpose even where staged: bulk_store took 1.04x-1.08x the time below
    // 2^24 (H200; docs/cuda-merge.md, "Tried and dropped").
    store_warp_striped<Box::vt, Full>(merged, reinterpret_cast<K*>(smem + layout::keys), keys_out + out0, count,
                                      tid);
  } else {
    // Keys and values: gather both through each output's published source offset.
    const V* vals = reinterpret_cast<const V*>(smem + layout::vals);
    tile_offset* sources = reinterpret_cast<tile_offset*>(smem + layout::sources);
#pragma unroll
    for (int i = 0; i < Box::vt; ++i) {
      if (Full || Box::vt * tid + i < count) sources[Box::vt * tid + i] = static_cast<tile_offset>(src[i]);
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < Box::vt; ++i) {
      const int j = Box::nt * i + tid;
      if (Full || j < count) {
        const int s = sources[j];
        keys_out[out0 + j] = keys[s];
        vals_out[out0 + j] = vals[s];
      }
    }
  }
}

template <class Geometry>
inline constexpr std::size_t element_bytes =
    sizeof(typename Geometry::key_type) + (Geometry::with_values ? sizeof(typename Geometry::value_type) : 0);

// One CTA per tile. SelfEnds: the first `self_tiles` tiles find their ends by
// warp_merge_path while the partition kernel (if `partitioned`) finds the rest;
// it allows launch only after its own wait, so they may read inputs at once.
// Without a strict weak order find_tile_range keeps accesses in range.
// Small tiles only (self_ends_waves_all): in the large tiles' kernel it cost
// up to 1.04x the time (H200; docs/cuda-merge.md).
template <class Box, bool SelfEnds, class Geometry, class KeysOut, class ValsOut, class Comp>
__global__ void __launch_bounds__(Box::nt, min_ctas_per_sm<Box, element_bytes<Geometry>>)
    merge_kernel(Geometry g, const index_t* mp, index_t self_tiles, bool partitioned, KeysOut keys_out,
                 ValsOut vals_out, Comp comp) {
  extern __shared__ __align__(16) unsigned char smem[];
  const index_t tile = blockIdx.x;
  tile_range r;
  if constexpr (!SelfEnds) {
    (void)self_tiles;
    (void)partitioned;
    wait_for_prerequisite_grid();  // the partitions are complete from here on
    r = find_tile_range(g, tile, Box::nv, mp[tile], mp[tile + 1]);
  } else {
    index_t begin, end;
    if (tile < self_tiles) {
      __shared__ index_t ends[2];
      if (!partitioned) wait_for_prerequisite_grid();
      // End k by warp k (a one-warp box finds both).
      for (int k = static_cast<int>(threadIdx.x / 32); k < 2; k += Box::nt / 32) {
        const index_t s = partition_at<bounds::lower, 32>(g, tile + k, Box::nv, comp);
        if (threadIdx.x % 32 == 0) ends[k] = s;
      }
      __syncthreads();
      begin = ends[0];
      end = ends[1];
    } else {
      wait_for_prerequisite_grid();  // the partitions are complete from here on
      begin = mp[tile];
      end = mp[tile + 1];
    }
    r = find_tile_range(g, tile, Box::nv, begin, end);
  }
  if (r.count() == Box::nv) {
    merge_tile<Box, true>(g, r, tile * Box::nv, smem, keys_out, vals_out, comp);
  } else {
    merge_tile<Box, false>(g, r, tile * Box::nv, smem, keys_out, vals_out, comp);
  }
}

// Which small tiles find their own ends: the partition kernel's launch and load
// chain idle the GPU below a wave or two, hide behind it above (docs/tuning.md).

template <class Box, bool SelfEnds, class Policy, class Geometry, class KeysOut, class ValsOut, class Comp>
void launch_merge(const Policy& policy, const device_info& dev, const Geometry& g, KeysOut keys_out,
                  ValsOut vals_out, Comp comp, const char* algorithm) {
  const std::size_t smem = merge_tile_layout<Geometry, Box::nv>::bytes;

  // Everything that can refuse the call does so before anything is launched.
  const index_t num_tiles = (g.size() + Box::nv - 1) / Box::nv;
  if (num_tiles > max_grid_ctas) throw_too_many_tiles(algorithm);
  auto kernel = merge_kernel<Box, SelfEnds, Geometry, KeysOut, ValsOut, Comp>;
  prepare_shared_memory(kernel, smem, dev, Box::nt, Box::vt, algorithm);
  index_t self_tiles = 0;
  if constexpr (SelfEnds) {
    const index_t wave = wave_ctas(kernel, Box::nt, smem, dev, algorithm);
    const tuning::merge_line& line = entry_of(dev).merge;
    self_tiles = num_tiles <= line.self_ends_waves_all * wave ? num_tiles : line.self_ends_waves_first * wave;
  }
  const bool partitioned = self_tiles < num_tiles;

  const cudaStream_t stream = policy.stream();
  // The partitions (mp[self_tiles, num_tiles]), where a partition kernel runs.
  const std::size_t temp_bytes = partitioned ? sizeof(index_t) * static_cast<std::size_t>(num_tiles + 1) : 0;
  std::optional<temporary_storage<typename Policy::allocator_type>> temp;
  index_t* mp = nullptr;
  if (partitioned) {
    temp.emplace(policy.allocator(), stream, temp_bytes, algorithm);
    mp = temp->template as<index_t>();
    launch_partitions<bounds::lower>(g, Box::nv, num_tiles, mp, comp, stream, dev, algorithm, nullptr, self_tiles);
  }
  launch(kernel, num_tiles, Box::nt, smem, stream, true, dev, algorithm, "merge_kernel", g,
         static_cast<const index_t*>(mp), self_tiles, partitioned, keys_out, vals_out, comp);
  if (policy.synchronizes()) {
    check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (a synchronous Thrust policy)");
  }
  if (debug_enabled()) {
    print_plan<Box>(dev, algorithm, "merge", kernel_arch(reinterpret_cast<const void*>(kernel), dev, algorithm),
                    std::is_same_v<typename Policy::box_type, tuned_launch_box>, num_tiles, temp_bytes, smem);
  }
}

template <class V>
inline constexpr std::size_t value_tile_bytes = sizeof(V) + sizeof(tile_offset);
template <>
inline constexpr std::size_t value_tile_bytes<void> = 0;

// A merge line's boxes (merge_table::boxes): large tiles, small ones, and the log2 size from which large.
template <class Large, class Small, int SmallLog2>
struct merge_boxes {
  using large = Large;
  using small = Small;
  static constexpr int small_log2 = SmallLog2;
};

// The merge tuning table for keys K and values V (void: keys only).
template <class K, class V>
struct merge_table {
  static constexpr const auto& lines = tuning::merge;
  // Shared memory an element: key, and for merge_by_key value and source offset.
  static constexpr std::size_t tile_bytes = sizeof(K) + value_tile_bytes<V>;

  static constexpr int vt(int vt_keys, int vt_pairs) {
    if constexpr (std::is_void_v<V>) {
      return tuning::scale_vt(vt_keys, 4, sizeof(K));
    } else {
      return tuning::scale_vt(vt_pairs, 8, sizeof(K) + sizeof(V));
    }
  }
  // Elements too large for tuning::tile_smem_merge get fewer threads (fit_threads).
  static constexpr int nt(int line_nt, int vt) {
    return tuning::fit_threads(line_nt, vt, tile_bytes, tuning::tile_smem_merge);
  }
  template <std::size_t I>
  static constexpr auto boxes() {
    constexpr tuning::merge_line line = lines[I];
    constexpr int large_vt = vt(line.vt_keys, line.vt_pairs);
    constexpr int small_vt = vt(line.small_vt_keys, line.small_vt_pairs);
    return merge_boxes<launch_box<nt(line.nt, large_vt), large_vt>, launch_box<nt(line.small_nt, small_vt), small_vt>,
                       line.small_log2>{};
  }
};

// The merge kernel for a geometry and comparator; with_tuned_boxes asks it
// which architecture it was compiled for.
template <class Geometry, class KeysOut, class ValsOut, class Comp>
struct merge_kernel_of {
  template <class Boxes>
  auto operator()(Boxes) const {
    return merge_kernel<typename Boxes::large, false, Geometry, KeysOut, ValsOut, Comp>;
  }
};

// Calls f(box) with the box of a merge of n elements: the policy's, or the
// tuned line's large or small tiles.
template <class Policy, class K, class V, class Geometry, class KeysOut, class ValsOut, class Comp, class F>
void with_merge_box(const device_info& dev, const char* algorithm, index_t n, F&& f) {
  using Box = typename Policy::box_type;
  if constexpr (std::is_same_v<Box, tuned_launch_box>) {
    with_tuned_boxes<merge_table<K, V>>(dev, algorithm, merge_kernel_of<Geometry, KeysOut, ValsOut, Comp>{},
                                        [&](auto boxes) {
                                          using B = decltype(boxes);
                                          if (n < (index_t(1) << B::small_log2)) {
                                            f(typename B::small{}, std::true_type{});
                                          } else {
                                            f(typename B::large{}, std::false_type{});
                                          }
                                        });
  } else {
    f(typename merge_box_of<Box>::type{}, std::false_type{});
  }
}

template <class Policy, class AKeys, class BKeys, class AVals, class BVals, class KeysOut, class ValsOut,
          class Comp>
void merge(const Policy& policy, AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals,
           KeysOut keys_out, ValsOut vals_out, Comp comp) {
  constexpr bool with_values = has_values<AVals>;
  const char* algorithm = with_values ? "merge_by_key" : "merge";
  const device_info& dev = current_device(algorithm, policy.stream());
  // Names as the caller wrote them, so an error points at the right argument.
  const auto d_a = to_device(a, na, dev, algorithm, with_values ? "a_keys_first" : "a_first");
  const auto d_b = to_device(b, nb, dev, algorithm, with_values ? "b_keys_first" : "b_first");
  const auto d_av = to_device(a_vals, na, dev, algorithm, "a_vals_first");
  const auto d_bv = to_device(b_vals, nb, dev, algorithm, "b_vals_first");
  const auto d_keys_out = to_device(keys_out, na + nb, dev, algorithm, with_values ? "keys_out" : "out");
  const auto d_vals_out = to_device(vals_out, na + nb, dev, algorithm, "vals_out");
  check_disjoint(algorithm,
                 {range_of(with_values ? "keys_out" : "out", d_keys_out, na + nb),
                  range_of("vals_out", d_vals_out, na + nb)},
                 {range_of(with_values ? "a_keys_first" : "a_first", d_a, na),
                  range_of(with_values ? "b_keys_first" : "b_first", d_b, nb), range_of("a_vals_first", d_av, na),
                  range_of("b_vals_first", d_bv, nb)});
  using G = single_merge<std::decay_t<decltype(d_a)>, std::decay_t<decltype(d_b)>, std::decay_t<decltype(d_av)>,
                         std::decay_t<decltype(d_bv)>>;
  const G g{d_a, d_b, d_av, d_bv, na, nb};
  using K = typename G::key_type;
  using V = typename G::value_type;
  static_assert(std::is_trivially_copyable_v<K> && std::is_default_constructible_v<K>,
                "libmerge (CUDA backend): keys must be trivially copyable and default-constructible");
  static_assert(!with_values || (std::is_trivially_copyable_v<V> && std::is_default_constructible_v<V>),
                "libmerge (CUDA backend): values must be trivially copyable and default-constructible");

  using DKeysOut = std::decay_t<decltype(d_keys_out)>;
  using DValsOut = std::decay_t<decltype(d_vals_out)>;
  constexpr std::size_t bytes = element_bytes<G>;
  if constexpr (bytes > max_element_bytes) {
    throw_element_too_large(algorithm, bytes);
  } else {
    with_merge_box<Policy, K, std::conditional_t<with_values, V, void>, G, DKeysOut, DValsOut, Comp>(
        dev, algorithm, na + nb,
        [&](auto box, auto self_ends) {
          launch_merge<decltype(box), decltype(self_ends)::value>(policy, dev, g, d_keys_out, d_vals_out, comp,
                                                                 algorithm);
        });
  }
}

}  // namespace libmerge::detail::cuda_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::merge, backend::cuda> {
  static constexpr bool available = true;

  template <class Policy, class... Args>
  static void run(const Policy& policy, Args... args) {
    cuda_backend::merge(policy, args...);
  }
};

}  // namespace libmerge::detail
