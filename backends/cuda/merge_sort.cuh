// CUDA merge_sort, merge_sort_by_key, merge_sort_indices: one code path (keys only: no values; indices:
// values 0, 1, 2, ...), the stages in docs/cuda-merge-sort.md ("How a sort runs"):
//   1. sortedness_kernel (sort/block_sort.cuh): the descents; sorted input skips the rest, sorted runs of
//      W >= a block-sort tile the block sort and the passes below W.
//   2. block_sort_kernel (sort/block_sort.cuh): cub::BlockMergeSort tiles in place.
//   3. sample_kernel, pass_partition_kernel (partition.cuh) over sort/pass.cuh's tilings, pass_kernel
//      (sort/pass.cuh): 2- or 4-way passes.
//   4. copy_back_kernel (sort/pass.cuh): back to the caller's range if the data ended in scratch.
//   5. Small sorts: one_kernel_sort_kernel (below), made of the stages' tiles.
// Tuning and plan: sort/state.cuh; the sort across GPUs: shard_sort.cuh.
// Passes alternate between the caller's buffers and one scratch copy; whether one has work is decided on
// the device, from flags (sort/state.cuh), so the host never waits. This file picks the boxes and launches.
#pragma once

#include <optional>
#include <vector>

#include "sort/block_sort.cuh"
#include "sort/pass.cuh"
#include "sort/state.cuh"

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

// The passes of a sort of n keys (plan_passes) and the block sort's grid; for
// two runs (into->two_runs), the last level is left out where that saves a pass.
struct sort_shape {
  std::vector<pass_plan> passes;
  int levels = 0;        // merge levels the passes make
  int num_passes = 0;
  int final_buffer = 0;  // 1: the data ends in `into`, the runs buffer
  int first_buffer = 0;  // where the block sort writes (plan_passes)
  int max_ways = 2;
  index_t block_tiles = 0, max_tiles = 0;
};

template <class BsBox, class Box, int MaxWays, int FourWayLog2, class K, class V>
sort_shape shape_sort(index_t n, const runs_target<K, V>* into, const char* algorithm) {
  sort_shape s;
  s.max_ways = MaxWays == 4 && n >= (index_t(1) << FourWayLog2) ? 4 : 2;
  s.block_tiles = (n + BsBox::nv - 1) / BsBox::nv;
  s.final_buffer = into != nullptr ? 1 : 0;
  const int all_levels = merge_levels(n, BsBox::nv);
  s.passes = plan_passes(n, BsBox::nv, Box::nv, s.max_ways, all_levels, s.final_buffer);
  s.levels = all_levels;
  if (into != nullptr && into->two_runs && all_levels > 0) {
    std::vector<pass_plan> fewer = plan_passes(n, BsBox::nv, Box::nv, s.max_ways, all_levels - 1, s.final_buffer);
    if (fewer.size() < s.passes.size()) {
      s.passes.swap(fewer);
      s.levels = all_levels - 1;
    }
  }
  s.num_passes = static_cast<int>(s.passes.size());
  s.first_buffer = (s.num_passes + s.final_buffer) % 2;
  for (const auto& p : s.passes) s.max_tiles = std::max(s.max_tiles, p.launch_tiles);
  if (s.block_tiles > max_grid_ctas || s.max_tiles > max_grid_ctas / 32) {
    throw std::invalid_argument(std::string("libmerge::") + algorithm +
                                ": input too large for one grid with this launch box");
  }
  return s;
}

// The sort's one allocation (scratch, flags, descriptors, samples), taken before anything runs, so a failed
// allocation leaves the caller's data as it was.
template <class Allocator, class K, class V>
struct sort_memory {
  std::size_t bytes = 0;
  index_t max_samples = 0;  // pair samples (4-way passes)
  std::optional<temporary_storage<Allocator>> temp;
  sort_buffers<K, V> buf{};
  sort_flags flags{};
  void* descs = nullptr;
  index_t* samples = nullptr;
  K* sample_keys = nullptr;
  K* run_samples = nullptr;
};

template <class BsBox, class Box, bool WithValues, bool Guard, class Policy, class K, class V>
void allocate_sort(sort_memory<typename Policy::allocator_type, K, V>& m, const Policy& policy, const sort_shape& s,
                   K* keys, index_t n, V* vals, const runs_target<K, V>* into, const char* algorithm) {
  const bool four = s.max_ways == 4;
  const std::size_t scratch_keys = s.num_passes > 0 && into == nullptr ? bytes_of<K>(n) : 0;
  const std::size_t scratch_vals = s.num_passes > 0 && into == nullptr && WithValues ? bytes_of<V>(n) : 0;
  const std::size_t flag_bytes = align_up(sort_flags::bytes(s.num_passes, Guard), 256);
  // Tile descriptors: one for every CTA of the largest pass grid.
  const std::size_t desc_bytes =
      align_up((four ? sizeof(tile_desc<4>) : sizeof(tile_desc<2>)) * static_cast<std::size_t>(s.max_tiles), 256);
  // 4-way passes: groups * 2 * (ceil(2w / p) + 1) pair samples (pair_samples_of), at most 5 n / p + n / bs_nv
  // + 4 for any w from a block-sort tile (+ 8: rounding; p in samples over run samples); and the run samples.
  const index_t pair_keys =
      partitions_on_samples(sample_every, Box::nv) ? sample_every * pair_spacing_on_samples(n, Box::nv) : Box::nv;
  m.max_samples = four ? 5 * ((n + pair_keys - 1) / pair_keys) + (n + BsBox::nv - 1) / BsBox::nv + 8 : 0;
  const std::size_t sample_bytes = align_up(sizeof(index_t) * static_cast<std::size_t>(m.max_samples), 256);
  const std::size_t sample_key_bytes = align_up(2 * sizeof(K) * static_cast<std::size_t>(m.max_samples), 256);
  const index_t run_sample_count = four ? run_samples_of(n) : 0;
  const std::size_t run_sample_bytes = align_up(sizeof(K) * static_cast<std::size_t>(run_sample_count), 256);
  m.bytes = scratch_keys + scratch_vals + flag_bytes + desc_bytes + sample_bytes + sample_key_bytes + run_sample_bytes;
  m.temp.emplace(policy.allocator(), policy.stream(), m.bytes, algorithm);
  unsigned char* t = m.temp->template as<unsigned char>();
  m.buf = into != nullptr ? sort_buffers<K, V>{keys, into->keys, vals, into->vals}
                          : sort_buffers<K, V>{keys, reinterpret_cast<K*>(t), vals,
                                               reinterpret_cast<V*>(t + scratch_keys)};
  t += scratch_keys + scratch_vals;
  m.flags = sort_flags::at(t, s.num_passes, Guard);
  m.descs = t + flag_bytes;
  m.samples = reinterpret_cast<index_t*>(t + flag_bytes + desc_bytes);
  m.sample_keys = reinterpret_cast<K*>(t + flag_bytes + desc_bytes + sample_bytes);
  m.run_samples = four ? reinterpret_cast<K*>(t + flag_bytes + desc_bytes + sample_bytes + sample_key_bytes) : nullptr;
}

// Step 3: for each pass its partition (a 4-way pass's pair samples first),
// then its pass kernel (Guard: the permutation guard, sort/state.cuh).
template <class Box, int MaxWays, bool Guard, class K, class V, bool WithValues, class Allocator, class Comp>
void launch_passes(const sort_shape& s, const sort_memory<Allocator, K, V>& m, index_t n, Comp comp,
                   cudaStream_t stream, const device_info& dev, const char* algorithm) {
  constexpr std::size_t pass_smem = pass_layout<Box, K, V, WithValues>::bytes;
  const sort_buffers<K, char> key_buf{m.buf.keys0, m.buf.keys1, nullptr, nullptr};
  // Each 4-way pass samples its output for the next (the first's: block sort or sortedness read); a skipped
  // pass leaves those of the data it did not move. A 2-way pass writes none (the code made int64 2-way
  // kernels spill) and needs none: plan_passes puts it last.
  const bool sampled = s.num_passes > 0 && s.passes[0].ways == 4;
  for (int p = 0; p < s.num_passes; ++p) {
    const pass_plan& pass = s.passes[static_cast<std::size_t>(p)];
    const bool next_four = p + 1 < s.num_passes && s.passes[static_cast<std::size_t>(p) + 1].ways == 4;
    K* next_samples = sampled && next_four ? m.run_samples : nullptr;
    const K* my_samples = sampled ? m.run_samples : nullptr;
    const index_t part_blocks = (pass.launch_tiles + partition_tiles - 1) / partition_tiles;
    const auto nv = static_cast<index_t>(Box::nv);
    if (pass.ways == 2) {
      auto* d = static_cast<tile_desc<2>*>(m.descs);
      launch(pass_partition_kernel<2, sort_tiling<K>, Comp>, part_blocks, partition_tiles + 1, 0, stream, true, dev,
             algorithm, "pass_partition_kernel",
             sort_tiling<K>{{key_buf, n, pass, nv, p, m.flags, nullptr}, nullptr, nullptr}, d, comp);
      launch(pass_kernel<Box, 2, sort_pass<K, V, WithValues, Guard>, Comp>, pass.launch_tiles, Box::nt, pass_smem,
             stream, true, dev, algorithm, "pass_kernel", sort_pass<K, V, WithValues, Guard>{m.buf, p, m.flags, nullptr},
             static_cast<const tile_desc<2>*>(d), comp);
    } else if constexpr (MaxWays == 4) {
      auto* d = static_cast<tile_desc<4>*>(m.descs);
      // The pair samples of the planned width (the kernel strides over more).
      const index_t width = pass.scale * pass.bs_nv;
      const sort_sampling<K> sampling{key_buf, n, pass, nv, p, m.flags, my_samples};
      const index_t pair_count = pair_samples_of(pass, n, width, nv, sampling.sampled(width)).count;
      launch(sample_kernel<sort_sampling<K>, Comp>, (pair_count + sample_threads - 1) / sample_threads,
             sample_threads, 0, stream, true, dev, algorithm, "sample_kernel", sampling, m.samples,
             m.sample_keys, comp);
      launch(pass_partition_kernel<4, sort_tiling<K>, Comp>, part_blocks, partition_tiles + 1, 0, stream, true, dev,
             algorithm, "pass_partition_kernel", sort_tiling<K>{sampling, m.samples, m.sample_keys}, d, comp);
      launch(pass_kernel<Box, 4, sort_pass<K, V, WithValues, Guard>, Comp>, pass.launch_tiles, Box::nt, pass_smem,
             stream, true, dev, algorithm, "pass_kernel",
             sort_pass<K, V, WithValues, Guard>{m.buf, p, m.flags, next_samples}, static_cast<const tile_desc<4>*>(d),
             comp);
    }
  }
}

// LIBMERGE_DEBUG=1: the plan of a sort, on stderr.
template <class BsBox, class Box, class Policy, class BsKernel, class PassKernel>
void print_sort_plan(const device_info& dev, const char* algorithm, const sort_shape& s, std::size_t temp_bytes,
                     BsKernel bs_kernel, std::size_t bs_smem, PassKernel pass_kernel, std::size_t pass_smem) {
  const bool tuned = std::is_same_v<typename Policy::box_type, tuned_launch_box>;
  print_plan<BsBox>(dev, algorithm, "block sort", kernel_arch(reinterpret_cast<const void*>(bs_kernel), dev, algorithm),
                    tuned, s.block_tiles, temp_bytes, bs_smem);
  if (s.num_passes == 0) return;
  std::fprintf(stderr, "libmerge::%s: %d merge passes:", algorithm, s.num_passes);
  for (const auto& p : s.passes) {
    std::fprintf(stderr, " %d-way of width %lld,", p.ways, static_cast<long long>(p.scale * BsBox::nv));
  }
  std::fprintf(stderr, " (widths from the block-sort tile; sorted runs of more start the passes at their width)");
  std::fprintf(stderr, "\n");
  print_plan<Box>(dev, algorithm, "merge passes", kernel_arch(reinterpret_cast<const void*>(pass_kernel), dev, algorithm),
                  tuned, s.max_tiles, temp_bytes, pass_smem);
}

// The sort, stage by stage (top of this file). MaxWays = 4: 4-way passes for n >= 2^FourWayLog2.
template <class BsBox, class Box, int MaxWays, int FourWayLog2, class Policy, class K, class V, bool WithValues,
          bool Indices, class ValsIn, class Comp>
void launch_merge_sort(const Policy& policy, const device_info& dev, K* keys, index_t n, ValsIn vals_in, V* vals,
                       Comp comp, const char* algorithm, const runs_target<K, V>* into = nullptr) {
  static_assert((BsBox::nt & (BsBox::nt - 1)) == 0,
                "libmerge::merge_sort: the block-sort launch box needs a power-of-two nt (cub::BlockMergeSort)");
  // Checked calls sort with the permutation guard (sort/state.cuh).
  constexpr bool guard = is_checked_v<Policy>;
  const sort_shape s = shape_sort<BsBox, Box, MaxWays, FourWayLog2>(n, into, algorithm);
  auto bs_kernel = block_sort_kernel<BsBox, K, V, WithValues, Indices, ValsIn, Comp, guard>;
  // Without 4-way passes the 2-way kernel stands in (never launched as such).
  auto pass2 = pass_kernel<Box, 2, sort_pass<K, V, WithValues, guard>, Comp>;
  auto pass4 = pass_kernel<Box, MaxWays, sort_pass<K, V, WithValues, guard>, Comp>;
  const std::size_t bs_smem = sizeof(typename block_sort_types<BsBox, K, V, WithValues, Indices>::temp_storage);
  constexpr std::size_t pass_smem = pass_layout<Box, K, V, WithValues>::bytes;
  prepare_shared_memory(bs_kernel, bs_smem, dev, BsBox::nt, BsBox::vt, algorithm);
  if (s.num_passes > 0) {
    prepare_shared_memory(pass2, pass_smem, dev, Box::nt, Box::vt, algorithm);
    if constexpr (MaxWays == 4) prepare_shared_memory(pass4, pass_smem, dev, Box::nt, Box::vt, algorithm);
  }
  const cudaStream_t stream = policy.stream();
  sort_memory<typename Policy::allocator_type, K, V> m;
  allocate_sort<BsBox, Box, WithValues, guard>(m, policy, s, keys, n, vals, into, algorithm);

  launch_sortedness(static_cast<const K*>(keys), n, static_cast<index_t>(BsBox::nv), m.flags, s.num_passes, comp,
                    stream, dev, algorithm, m.run_samples);
  launch(bs_kernel, s.block_tiles, BsBox::nt, bs_smem, stream, true, dev, algorithm, "block_sort_kernel", m.buf,
         vals_in, n, s.first_buffer, m.flags, comp, m.run_samples);
  launch_passes<Box, MaxWays, guard, K, V, WithValues>(s, m, n, comp, stream, dev, algorithm);
  if (s.num_passes > 0 || into != nullptr) {
    launch(copy_back_kernel<K, V, WithValues>, std::min<index_t>((n + copy_threads - 1) / copy_threads, 8 * dev.sms),
           copy_threads, 0, stream, true, dev, algorithm, "copy_back_kernel", m.buf, n, s.num_passes, s.first_buffer,
           static_cast<index_t>(BsBox::nv), m.flags, s.final_buffer, index_t(1) << s.levels,
           into != nullptr ? into->width : nullptr);
  }
  if (policy.synchronizes()) {
    check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (a synchronous Thrust policy)");
  }
  if (debug_enabled()) {  // the plan costs lookups; only for LIBMERGE_DEBUG=1
    print_sort_plan<BsBox, Box, Policy>(dev, algorithm, s, m.bytes, bs_kernel, bs_smem, pass4, pass_smem);
  }
}

// The call's boxes: the policy's (then always separate kernels), else the tuning line of the block sort's
// compiled architecture: large and mid-sized pass boxes from their sizes on, one-kernel class, and 4-way
// size for numbers under their natural order (orders_numbers_v) or any comparator. f(block-sort box, pass
// box, ways, 4-way log2, one-kernel class, the k-way merge's pass box).
template <class Policy, class K, class V, bool WithValues, bool Indices, class ValsIn, class Comp, class F>
void with_sort_boxes(const device_info& dev, const char* algorithm, index_t n, F&& f) {
  using Box = typename Policy::box_type;
  if constexpr (std::is_same_v<Box, tuned_launch_box>) {
    using table = merge_sort_table<K, std::conditional_t<WithValues, V, void>>;
    with_tuned_boxes<table>(
        dev, algorithm,
        [](auto boxes) {
          return block_sort_kernel<typename decltype(boxes)::block_sort, K, V, WithValues, Indices, ValsIn, Comp>;
        },
        [&](auto boxes) {
          using B = decltype(boxes);
          using bs = typename B::block_sort;
          using ways = std::integral_constant<int, B::ways>;
          using four_way_log2 =
              std::integral_constant<int, orders_numbers_v<Comp, K> ? B::numbers_four_way_log2 : B::four_way_log2>;
          using one_kernel = typename B::one_kernel;
          const auto with_pass = [&](auto pass) {
            using kway = std::conditional_t<std::is_void_v<typename B::kway_pass>, decltype(pass), typename B::kway_pass>;
            f(bs{}, pass, ways{}, four_way_log2{}, one_kernel{}, kway{});
          };
          if constexpr (B::large_log2 > 0) {
            if (n >= (index_t(1) << B::large_log2)) return with_pass(typename B::large_pass{});
          }
          if constexpr (B::mid_log2 > 0) {
            if (n >= (index_t(1) << B::mid_log2)) return with_pass(typename B::mid_pass{});
          }
          with_pass(typename B::pass{});
        });
  } else if constexpr (std::is_same_v<Box, typename merge_box_of<Box>::type>) {
    f(Box{}, Box{}, std::integral_constant<int, 2>{}, std::integral_constant<int, 0>{}, no_one_kernel{}, Box{});
  } else {
    f(typename Box::block_sort{}, typename Box::merge{}, std::integral_constant<int, Box::ways>{},
      std::integral_constant<int, 0>{}, no_one_kernel{}, typename Box::merge{});
  }
}

// The one-kernel class below its size (true: done in place), else separate kernels (false; `into`: sort_into_runs).
template <class Policy, class K, class V, bool WithValues, bool Indices, class ValsIn, class Comp>
bool sort_with_boxes(const Policy& policy, const device_info& dev, K* keys, index_t n, ValsIn vals_in, V* vals,
                     Comp comp, const char* algorithm, const runs_target<K, V>* into = nullptr) {
  bool in_one_kernel = false;
  with_sort_boxes<Policy, K, V, WithValues, Indices, ValsIn, Comp>(
      dev, algorithm, n, [&](auto bs_box, auto box, auto ways, auto four_way_log2, auto one_kernel, auto) {
        using OneKernel = decltype(one_kernel);
        // Checked calls take separate kernels: the one-kernel sort has no guard.
        if constexpr (OneKernel::log2 > 0 && !is_checked_v<Policy>) {
          if (n < (index_t(1) << OneKernel::log2) &&
              launch_one_kernel_sort<OneKernel, decltype(bs_box), Policy, K, V, WithValues, Indices>(
                  policy, dev, keys, n, vals_in, vals, comp, algorithm)) {
            in_one_kernel = true;
            return;
          }
        }
        launch_merge_sort<decltype(bs_box), decltype(box), decltype(ways)::value, decltype(four_way_log2)::value,
                          Policy, K, V, WithValues, Indices>(policy, dev, keys, n, vals_in, vals, comp, algorithm,
                                                             into);
      });
  return in_one_kernel;
}

template <class Policy, class KeysIt, class ValsIn, class ValsOut, class Comp>
void merge_sort(const Policy& policy, KeysIt keys, index_t n, ValsIn vals_in, ValsOut vals_out, Comp comp) {
  constexpr bool with_values = has_values<ValsOut>;
  constexpr bool indices = !std::is_same_v<ValsIn, ValsOut>;
  const char* algorithm = indices ? "merge_sort_indices" : (with_values ? "merge_sort_by_key" : "merge_sort");
  const device_info& dev = current_device(algorithm, policy.stream());
  auto d_keys = to_device(keys, n, dev, algorithm, with_values ? "keys_first" : "first");
  auto d_vals = to_device(vals_out, n, dev, algorithm, indices ? "indices_first" : "values_first");
  check_disjoint(algorithm,
                 {range_of(with_values ? "keys_first" : "first", d_keys, n),
                  range_of(indices ? "indices_first" : "values_first", d_vals, n)},
                 {});
  static_assert(std::is_pointer_v<decltype(d_keys)>,
                "libmerge::merge_sort (CUDA backend): keys must be contiguous device memory (a raw pointer, "
                "thrust::device_ptr or a thrust::device_vector iterator)");
  static_assert(!with_values || std::is_pointer_v<decltype(d_vals)>,
                "libmerge::merge_sort (CUDA backend): values and indices must be contiguous device memory (a raw "
                "pointer, thrust::device_ptr or a thrust::device_vector iterator)");
  using K = std::remove_pointer_t<decltype(d_keys)>;
  using V = std::conditional_t<with_values, std::remove_pointer_t<decltype(d_vals)>, char>;
  static_assert(!std::is_const_v<K> && !std::is_const_v<V>, "libmerge::merge_sort: the ranges must be writable");
  static_assert(std::is_trivially_copyable_v<K> && std::is_default_constructible_v<K>,
                "libmerge (CUDA backend): keys must be trivially copyable and default-constructible");
  static_assert(std::is_trivially_copyable_v<V> && std::is_default_constructible_v<V>,
                "libmerge (CUDA backend): values must be trivially copyable and default-constructible");
  V* vals = nullptr;
  if constexpr (with_values) vals = d_vals;
  // Values read by the block sort: the caller's (by key) or positions (indices).
  auto d_vals_in = [&] {
    if constexpr (indices) return vals_in;
    else return vals;
  }();
  using ValsInD = decltype(d_vals_in);
  constexpr std::size_t bytes = sizeof(K) + (with_values ? sizeof(V) : 0);
  if constexpr (bytes > max_element_bytes) {
    throw_element_too_large(algorithm, bytes);
  } else {
    sort_with_boxes<Policy, K, V, with_values, indices, ValsInD>(policy, dev, d_keys, n, d_vals_in, vals, comp,
                                                                 algorithm);
  }
}

}  // namespace libmerge::detail::cuda_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::merge_sort, backend::cuda> {
  static constexpr bool available = true;

  template <class Policy, class... Args>
  static void run(const Policy& policy, Args... args) {
    cuda_backend::merge_sort(policy, args...);
  }
};

}  // namespace libmerge::detail
