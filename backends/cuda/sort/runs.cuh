// For the sort across GPUs (backends/nccl/merge_sort.cuh): a rank's local
// sort into runs, and the 4-way merge of the pieces it receives.
#pragma once

#include "../merge_sort.cuh"

namespace libmerge::detail::cuda_backend {

template <int = 0>
__global__ void store_width_kernel(long long* width, long long n) {
  *width = n;
}

// Sorts keys[0, n) (and vals) into into.keys (into.vals), the caller's
// buffers left as scratch: one sorted run or two (runs_target). The kernels
// are the single-GPU sort's, so one run is exactly what lm::merge_sort makes
// of the shard. The one-kernel class sorts in place and is copied: one run.
template <class Policy, class K, class V, bool WithValues, class Comp>
void sort_to_runs(const Policy& policy, K* keys, V* vals, index_t n, const runs_target<K, V>& into, Comp comp,
                  const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  const device_info& dev = current_device(algorithm, stream);
  if (n == 0) {
    launch_with(nullptr, store_width_kernel<>, 1, 1, 0, stream, algorithm, "launch of store_width_kernel", into.width,
                0LL);
    return;
  }
  constexpr std::size_t bytes = sizeof(K) + (WithValues ? sizeof(V) : 0);
  if constexpr (bytes > max_element_bytes) {
    throw_element_too_large(algorithm, bytes);  // as merge_sort: no box holds such elements
  } else if (sort_with_boxes<Policy, K, V, WithValues, false>(policy, dev, keys, n, vals, vals, comp, algorithm,
                                                              &into)) {
    check_cuda(cudaMemcpyAsync(into.keys, keys, sizeof(K) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice,
                               stream),
               algorithm, "cudaMemcpyAsync (the sorted shard)");
    if constexpr (WithValues) {
      check_cuda(cudaMemcpyAsync(into.vals, vals, sizeof(V) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice,
                                 stream),
                 algorithm, "cudaMemcpyAsync (the sorted shard)");
    }
    launch_with(nullptr, store_width_kernel<>, 1, 1, 0, stream, algorithm, "launch of store_width_kernel",
                into.width, static_cast<long long>(n));
  }
}

// What a sort of n elements would make with its boxes (shape_sort), or that
// it sorts in one kernel.
struct sort_outline {
  index_t bs_nv = 0;
  int levels = 0, all_levels = 0, passes = 0, ways = 0;
  bool one_kernel = false;
};
template <class Policy, class K, class V, bool WithValues, class Comp>
sort_outline outline_sort(const device_info& dev, index_t n, bool two_runs, const char* algorithm) {
  sort_outline o;
  with_sort_boxes<Policy, K, V, WithValues, false, V*, Comp>(
      dev, algorithm, n, [&](auto bs_box, auto box, auto ways, auto four_way_log2, auto one_kernel) {
        using BsBox = decltype(bs_box);
        if constexpr (decltype(one_kernel)::log2 > 0) {
          if (n < (index_t(1) << decltype(one_kernel)::log2)) {
            o.one_kernel = true;
            return;
          }
        }
        const runs_target<K, V> into{nullptr, nullptr, two_runs, nullptr};
        const sort_shape s = shape_sort<BsBox, decltype(box), decltype(ways)::value, decltype(four_way_log2)::value>(
            n, &into, algorithm);
        o = sort_outline{BsBox::nv, s.levels, merge_levels(n, BsBox::nv), s.num_passes, s.max_ways, false};
      });
  return o;
}

// W, where the runs of a two-run sort of n elements meet (the block-sort tile
// times 2^levels, the last level left out), if leaving that level out saves a
// pass and [0, W) and [W, n) sorted apart make no more passes than the
// two-run sort; else 0. The sort across 2 GPUs then sorts the two runs in
// turn, the first run's pieces travelling while the second sorts (NCCL
// backend: early_round; elements of up to 4 bytes only from first runs of
// 2^27: nccl/plan.cuh, min_early_small; docs/multi-gpu-sort.md).
template <class Policy, class K, class V, bool WithValues, class Comp>
index_t two_run_width(const device_info& dev, index_t n, const char* algorithm) {
  if constexpr (sizeof(K) + (WithValues ? sizeof(V) : 0) > max_element_bytes) {
    return 0;
  } else {
    const sort_outline two = outline_sort<Policy, K, V, WithValues, Comp>(dev, n, true, algorithm);
    if (two.one_kernel || two.levels >= two.all_levels) return 0;
    const index_t w = two.bs_nv << two.levels;
    if (w <= 0 || w >= n) return 0;
    const sort_outline a = outline_sort<Policy, K, V, WithValues, Comp>(dev, w, false, algorithm);
    const sort_outline b = outline_sort<Policy, K, V, WithValues, Comp>(dev, n - w, false, algorithm);
    const bool same = !a.one_kernel && !b.one_kernel && a.passes <= two.passes && b.passes <= two.passes;
    return same ? w : 0;
  }
}

// Whether merge_four can merge (K, V) on this device: the tuning gives its
// sort 4-way passes (not keys of 8 bytes or more without values).
template <class Policy, class K, class V, bool WithValues, class Comp>
bool four_way_available(const device_info& dev, index_t n, const char* algorithm) {
  if constexpr (sizeof(K) + (WithValues ? sizeof(V) : 0) > max_element_bytes) return false;
  bool four = false;
  with_sort_boxes<Policy, K, V, WithValues, false, V*, Comp>(
      dev, algorithm, n, [&](auto, auto, auto ways, auto, auto) { four = decltype(ways)::value == 4; });
  return four;
}

// Up to four sorted pieces in one buffer: piece k is keys[at[k], at[k] +
// len[k]) and its values vals[at[k], ...) (the same offsets in both arrays).
template <class K>
struct four_pieces {
  const K* keys;
  index_t at[4];
  index_t len[4];
};

// The halves of merge_four's merge: pieces 0 and 1, pieces 2 and 3.
template <class K>
__device__ __forceinline__ run_half<4, K> piece_half(const four_pieces<K>& p, int h) {
  return {p.keys + p.at[2 * h], p.len[2 * h], p.keys + p.at[2 * h + 1], p.len[2 * h + 1]};
}

// merge_four's pair samples, as pair_sample_kernel's: for half h and j <
// stride, the half's inner split at rank j * nv (clamped to its size) at
// samples[h * stride + j], its elements of ranks j * nv and j * nv - 1 at
// sample_keys[2 (h * stride + j)] and [.. + 1]; a 2-way search a thread. They
// start each tile's 4-way search inside one tile of each piece.
// 2 H100s, 2^29 int32: 4.1 ms without, 1.6 for lm::merge of two (docs/cuda-merge-sort.md)
template <class K, class Comp>
__global__ void __launch_bounds__(sample_threads)
    pieces_sample_kernel(four_pieces<K> p, index_t nv, index_t stride, index_t* samples, K* sample_keys, Comp comp) {
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  const index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= 2 * stride) return;
  const run_half<4, K> half = piece_half(p, static_cast<int>(i / stride));
  const index_t size = half.size();
  const index_t rank = (i % stride) * nv < size ? (i % stride) * nv : size;
  sample_half(half, rank, samples + i, sample_keys + 2 * i, comp);
}

// merge_four's partition, as pass_partition_kernel's (partition_tile_block): a
// thread a tile finds its start (halves_split over the pair samples, stable:
// ties in piece order); a tile ends where the next starts. Tile 0 records the
// one pass for pass_kernel (data in buffer 0, work to do).
template <class K, class Comp>
__global__ void __launch_bounds__(partition_tiles + 1)
    pieces_partition_kernel(four_pieces<K> p, index_t nv, int num_tiles, index_t stride, const index_t* samples,
                            const K* sample_keys, sort_flags flags, tile_desc<4>* descs, Comp comp) {
  __shared__ run_split<4> starts[partition_tiles + 1];
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  const index_t tile = static_cast<index_t>(blockIdx.x) * partition_tiles + threadIdx.x;
  const index_t size = p.len[0] + p.len[1] + p.len[2] + p.len[3];
  if (tile == 0) {
    flags.source(0) = 0;
    flags.has_work(0) = 1;
    flags.shapes[0] = pass_shape{size, num_tiles, num_tiles};
  }
  const auto start = [&](index_t t) {
    const half_samples<K> hs{{samples, samples + stride}, {sample_keys, sample_keys + 2 * stride}, nv};
    return halves_split(piece_half(p, 0), piece_half(p, 1), t * nv, comp, hs);
  };
  const auto describe = [&](index_t t, const run_split<4>& first, const run_split<4>& next) {
    const index_t d0 = t * nv;
    const index_t d1 = d0 + nv < size ? d0 + nv : size;
    index_t begin[4], end[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      begin[k] = first.s[k];
      end[k] = d1 == size ? p.len[k] : next.s[k];
    }
    clamp_pieces(p.len, begin, end, d1 - d0);
    tile_desc<4> d;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      d.at[k] = p.at[k] + begin[k];
      d.size[k] = static_cast<std::uint16_t>(end[k] - begin[k]);
    }
    d.out = d0;
    descs[t] = d;
  };
  partition_tile_block(starts, static_cast<index_t>(num_tiles), start, describe);
}

// Merges the four pieces (empty ones allowed) into out_keys (out_vals), stable
// in piece order, with the sort's 4-way pass kernel: the receiving rank's one
// merge of the sort across GPUs, in place of two levels of 2-way merges.
template <class Policy, class K, class V, bool WithValues, class Comp>
void merge_four(const Policy& policy, const K* keys, const V* vals, const index_t (&at)[4], const index_t (&len)[4],
                K* out_keys, V* out_vals, Comp comp, const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  const device_info& dev = current_device(algorithm, stream);
  const index_t n = len[0] + len[1] + len[2] + len[3];
  if (n == 0) return;
  if constexpr (sizeof(K) + (WithValues ? sizeof(V) : 0) > max_element_bytes) {
    throw_element_too_large(algorithm, sizeof(K) + (WithValues ? sizeof(V) : 0));
  } else {
    with_sort_boxes<Policy, K, V, WithValues, false, V*, Comp>(dev, algorithm, n, [&](auto, auto box, auto ways, auto,
                                                                                     auto) {
      using Box = decltype(box);
      if constexpr (decltype(ways)::value != 4) {
        throw std::logic_error(std::string("libmerge::") + algorithm + ": no 4-way merge for these types");
      } else {
        const index_t tiles = (n + Box::nv - 1) / Box::nv;
        if (tiles > max_grid_ctas / 32) {
          throw std::invalid_argument(std::string("libmerge::") + algorithm + ": too many elements for one rank");
        }
        auto pass4 = pass_kernel<Box, 4, K, V, WithValues, Comp>;
        using layout = pass_layout<Box, K, V, WithValues>;
        prepare_shared_memory(pass4, layout::bytes, dev, Box::nt, Box::vt, algorithm);
        // Pair samples of each half at every multiple of nv.
        const index_t stride = (std::max(len[0] + len[1], len[2] + len[3]) + Box::nv - 1) / Box::nv + 1;
        const std::size_t flag_bytes = align_up(sort_flags::bytes(1, false), 256);
        const std::size_t desc_bytes = align_up(sizeof(tile_desc<4>) * static_cast<std::size_t>(tiles), 256);
        const std::size_t sample_bytes = align_up(sizeof(index_t) * 2 * static_cast<std::size_t>(stride), 256);
        const std::size_t sample_key_bytes = align_up(sizeof(K) * 4 * static_cast<std::size_t>(stride), 256);
        temporary_storage<typename Policy::allocator_type> temp(
            policy.allocator(), stream, flag_bytes + desc_bytes + sample_bytes + sample_key_bytes, algorithm);
        unsigned char* t = temp.template as<unsigned char>();
        // (No permutation guard: these flags are not zeroed.)
        const sort_flags flags = sort_flags::at(t, 1, false);
        auto* descs = reinterpret_cast<tile_desc<4>*>(t + flag_bytes);
        auto* samples = reinterpret_cast<index_t*>(t + flag_bytes + desc_bytes);
        auto* sample_keys = reinterpret_cast<K*>(t + flag_bytes + desc_bytes + sample_bytes);
        four_pieces<K> p{keys, {at[0], at[1], at[2], at[3]}, {len[0], len[1], len[2], len[3]}};
        launch(pieces_sample_kernel<K, Comp>, (2 * stride + sample_threads - 1) / sample_threads, sample_threads, 0,
               stream, true, dev, algorithm, "pieces_sample_kernel", p, static_cast<index_t>(Box::nv), stride, samples,
               sample_keys, comp);
        launch(pieces_partition_kernel<K, Comp>, (tiles + partition_tiles - 1) / partition_tiles, partition_tiles + 1,
               0, stream, true, dev, algorithm, "pieces_partition_kernel", p, static_cast<index_t>(Box::nv),
               static_cast<int>(tiles), stride, static_cast<const index_t*>(samples),
               static_cast<const K*>(sample_keys), flags, descs, comp);
        const sort_buffers<K, V> buf{const_cast<K*>(keys), out_keys, const_cast<V*>(vals), out_vals};
        launch(pass4, tiles, Box::nt, layout::bytes, stream, true, dev, algorithm, "pass_kernel", buf, 0, flags,
               static_cast<const tile_desc<4>*>(descs), comp, static_cast<K*>(nullptr));
      }
    });
  }
}

}  // namespace libmerge::detail::cuda_backend
