// Stage 5 of the merge sort: small sorts in one cooperative kernel.
#pragma once

#include "block_sort.cuh"
#include "pass.cuh"
#include "pass_partition.cuh"

namespace libmerge::detail::cuda_backend {

// 5. Small sorts (below about 2^23 keys separate kernels' launches cost more than they move) in one
// cooperative kernel: each CTA block-sorts tiles, then in every 2-way pass finds its tiles' ends
// (warp_merge_path, a warp each) and merges them (merge_tile_of_parts), grid.sync() between passes.
// H100, 2^20 int32 keys: 0.079 ms against CUB's 0.098 (docs/cuda-merge-sort.md)
// At the top of the class (2^22 keys on sm_90) block_sort_kernel sorts first in larger tiles (two passes
// fewer). No permutation guard: checked sorts take separate kernels (sort_with_boxes).
template <class Box, class K, class V, bool WithValues, class Comp>
__device__ __forceinline__ void one_kernel_pass_tile(const sort_buffers<K, V>& buf, int src, index_t n,
                                                     index_t width, const pass_shape& shape, int tile,
                                                     tile_desc<2>& desc, index_t (&split)[2], unsigned char* smem,
                                                     Comp& comp) {
  const int group = tile / shape.tiles_per_group;
  const index_t d0 = static_cast<index_t>(tile % shape.tiles_per_group) * Box::nv;
  const run_group<2, K> g = group_at<2>(buf.keys(src), n, width, group);
  const index_t d1 = d0 + Box::nv < g.len[0] + g.len[1] ? d0 + Box::nv : g.len[0] + g.len[1];
  const int warp = static_cast<int>(threadIdx.x / 32);
  if (warp < 2) {
    const index_t s = warp_merge_path(g.keys, g.len[0], g.keys + width, g.len[1], warp == 0 ? d0 : d1, comp);
    if (threadIdx.x % 32 == 0) split[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    index_t start[2] = {split[0], d0 - split[0]}, end[2] = {split[1], d1 - split[1]};
    desc = describe_tile(g, group, start, end, d0, d1);
  }
  __syncthreads();
  const int count = static_cast<int>(d1 - d0);
  // Through registers: staged loads need pass_layout's memory to themselves.
  using parts = pass_parts<2, false>;
  const buffer_io<K, V> io{buf, src};
  if (count == Box::nv) {
    merge_tile_of_parts<Box, 2, true, parts, WithValues, false>(io, desc, count, smem, comp, static_cast<K*>(nullptr));
  } else {
    merge_tile_of_parts<Box, 2, false, parts, WithValues, false>(io, desc, count, smem, comp, static_cast<K*>(nullptr));
  }
  __syncthreads();  // desc, split and the tile's shared memory are the next tile's
}

// Ctas: the CTAs an SM is to hold (the register budget); the grid is at most
// what the device holds at once (resident_ctas).
template <class Box, int Ctas, class K, class V, bool WithValues, bool Indices, class ValsIn, class Comp>
__global__ void __launch_bounds__(Box::nt, Ctas)
    one_kernel_sort_kernel(sort_buffers<K, V> buf, ValsIn vals_in, index_t n, int first_buffer, sort_flags flags,
                           bool one_tile, index_t bs_nv, bool block_sorted, Comp comp) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ tile_desc<2> desc;
  __shared__ index_t split[2];
  wait_for_prerequisite_grid();
  if (one_tile) {  // no sortedness_kernel ran: "unsorted", and the block sort checks its tile
    if (threadIdx.x == 0) *flags.runs = 1;
    __syncthreads();
  }
  // Block sort (which also writes merge_sort_indices' positions of tiles it
  // skips), unless the input is sorted or block_sort_kernel did it.
  if (!block_sorted && (Indices || flags.unsorted())) {
    const index_t tiles = (n + Box::nv - 1) / Box::nv;
    for (index_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      block_sort_tile<Box, K, V, WithValues, Indices>(buf, vals_in, n, first_buffer, flags, comp, t, smem);
      __syncthreads();
    }
  }
  if (!flags.unsorted()) return;  // every CTA alike: no barrier waits on one gone
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  grid.sync();
  int src = flags.skips_block_sort(bs_nv) ? 0 : first_buffer;
  for (index_t width = flags.first_width(bs_nv); width < n; width *= 2) {
    const pass_shape shape = make_pass_shape(n, width, 2, Box::nv);
    for (int tile = static_cast<int>(blockIdx.x); tile < shape.num_tiles; tile += static_cast<int>(gridDim.x)) {
      one_kernel_pass_tile<Box, K, V, WithValues>(buf, src, n, width, shape, tile, desc, split, smem, comp);
    }
    grid.sync();
    src ^= 1;
  }
  if (src == 1) copy_to_buffer<WithValues>(buf, 0, n);
}

// The one-kernel sort, or false where the device cannot hold its cooperative grid (then separate kernels).
// From 2^OneKernel::separate_log2 on, block_sort_kernel sorts BsBox tiles first.
template <class OneKernel, class BsBox, class Policy, class K, class V, bool WithValues, bool Indices, class ValsIn,
          class Comp>
bool launch_one_kernel_sort(const Policy& policy, const device_info& dev, K* keys, index_t n, ValsIn vals_in, V* vals,
                            Comp comp, const char* algorithm) {
  using Box = typename OneKernel::box;
  using types = block_sort_types<Box, K, V, WithValues, Indices>;
  using layout = merge_layout<K, V, WithValues, Box::nv>;
  auto kernel = one_kernel_sort_kernel<Box, OneKernel::ctas, K, V, WithValues, Indices, ValsIn, Comp>;
  const std::size_t smem = std::max(sizeof(typename types::temp_storage), layout::bytes);
  prepare_shared_memory(kernel, smem, dev, Box::nt, Box::vt, algorithm);
  const int resident = resident_ctas(kernel, Box::nt, smem, dev, algorithm);
  if (resident == 0) return false;
  const bool separate = OneKernel::separate_log2 > 0 && n >= (index_t(1) << OneKernel::separate_log2);
  const index_t bs_nv = separate ? BsBox::nv : Box::nv;
  const index_t tiles = (n + Box::nv - 1) / Box::nv;
  // Where the block sort writes: the last pass ends in the caller's range.
  const int first_buffer = merge_levels(n, bs_nv) % 2;
  using bs_types = block_sort_types<BsBox, K, V, WithValues, Indices>;
  auto bs_kernel = block_sort_kernel<BsBox, K, V, WithValues, Indices, ValsIn, Comp>;
  if (separate) {
    prepare_shared_memory(bs_kernel, sizeof(typename bs_types::temp_storage), dev, BsBox::nt, BsBox::vt, algorithm);
  }

  // Scratch keys and values, then the flags (no passes recorded, no guard).
  const cudaStream_t stream = policy.stream();
  const std::size_t scratch_keys = bytes_of<K>(n);
  const std::size_t scratch_vals = WithValues ? bytes_of<V>(n) : 0;
  const std::size_t temp_bytes = scratch_keys + scratch_vals + sort_flags::bytes(0, false);
  temporary_storage<typename Policy::allocator_type> temp(policy.allocator(), stream, temp_bytes, algorithm);
  unsigned char* t = temp.template as<unsigned char>();
  const sort_buffers<K, V> buf{keys, reinterpret_cast<K*>(t), vals, reinterpret_cast<V*>(t + scratch_keys)};
  const sort_flags flags = sort_flags::at(t + scratch_keys + scratch_vals, 0, false);
  // One tile: the block sort alone, which finds a sorted tile itself (two
  // launches fewer; docs/cuda-merge-sort.md).
  const bool one_tile = tiles == 1 && !separate;
  if (!one_tile) launch_sortedness(static_cast<const K*>(keys), n, bs_nv, flags, 0, comp, stream, dev, algorithm);
  if (separate) {
    launch(bs_kernel, (n + bs_nv - 1) / bs_nv, BsBox::nt, sizeof(typename bs_types::temp_storage), stream, true, dev,
           algorithm, "block_sort_kernel", buf, vals_in, n, first_buffer, flags, comp, static_cast<K*>(nullptr));
  }
  launch_cooperative(kernel, std::min<index_t>(tiles, resident), Box::nt, smem, stream, algorithm,
                     "one_kernel_sort_kernel", buf, vals_in, n, first_buffer, flags, one_tile, bs_nv, separate, comp);
  if (policy.synchronizes()) {
    check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (a synchronous Thrust policy)");
  }
  if (debug_enabled()) {
    const char* stage =
        separate ? "one-kernel passes (after block_sort_kernel)" : "one-kernel sort (block sort and 2-way passes)";
    print_plan<Box>(dev, algorithm, stage, kernel_arch(reinterpret_cast<const void*>(kernel), dev, algorithm), true,
                    tiles, temp_bytes, smem);
  }
  return true;
}

}  // namespace libmerge::detail::cuda_backend
