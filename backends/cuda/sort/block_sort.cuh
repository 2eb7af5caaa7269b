// Stage 2 of the merge sort: tiles sorted in shared memory by
// cub::BlockMergeSort.
#pragma once

#include "state.cuh"

namespace libmerge::detail::cuda_backend {

// 2. Block sort: tile t = keys[t * nv, ...) by cub::BlockMergeSort (stable), warp-transposing loads and
// stores. With Indices, values are not read: they are the positions base + i.
template <class Box, class K, class V, bool WithValues, bool Indices>
struct block_sort_types {
  static constexpr int nv = Box::nv;
  using value_type = std::conditional_t<WithValues, V, cub::NullType>;
  using sort = cub::BlockMergeSort<K, Box::nt, Box::vt, value_type>;
  using load_keys = cub::BlockLoad<K, Box::nt, Box::vt, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using store_keys = cub::BlockStore<K, Box::nt, Box::vt, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using load_vals = cub::BlockLoad<V, Box::nt, Box::vt, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using store_vals = cub::BlockStore<V, Box::nt, Box::vt, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  union temp_storage {
    typename sort::TempStorage sort;
    typename load_keys::TempStorage load_keys;
    typename store_keys::TempStorage store_keys;
    typename load_vals::TempStorage load_vals;
    typename store_vals::TempStorage store_vals;
  };
};

// Are this thread's `mine` keys of the tile in order, and its last before the
// next thread's first (read again from global memory, where it is cached)?
template <class Box, class K, class Comp>
__device__ __forceinline__ bool keys_in_order(const K (&keys)[Box::vt], int mine, int valid, const K* tile,
                                              Comp& comp) {
  const int tid = static_cast<int>(threadIdx.x);
  bool in_order = true;
#pragma unroll
  for (int i = 1; i < Box::vt; ++i) {
    if (i < mine) in_order &= !comp(keys[i], keys[i - 1]);
  }
  if (mine == Box::vt && Box::vt * (tid + 1) < valid) {
    in_order &= !comp(tile[Box::vt * (tid + 1)], keys[Box::vt - 1]);
  }
  return in_order;
}

// A tile whose sort lost or repeated an element (the guard), to `dest` as read. Not inlined: inlined, it made
// the 1024x17 int32 pairs block sort spill 80 bytes (ptxas, sm_90).
template <int NT, bool WithValues, bool Indices, class K, class V, class ValsIn>
__device__ __noinline__ void store_tile_as_read(const sort_buffers<K, V> buf, ValsIn vals_in, index_t base, int valid,
                                                int dest, K* samples) {
  for (int j = static_cast<int>(threadIdx.x); j < valid; j += NT) {
    const K k = buf.keys(0)[base + j];
    if (dest != 0) buf.keys(dest)[base + j] = k;
    if (samples != nullptr && (base + j) % sample_every == 0) samples[(base + j) / sample_every] = k;
    if constexpr (Indices) {
      buf.vals(dest)[base + j] = static_cast<V>(base + j);
    } else if constexpr (WithValues) {
      if (dest != 0) buf.vals(dest)[base + j] = vals_in[base + j];
    }
  }
}

// One block-sort tile as thread tid sees it.
struct block_tile {
  index_t base;
  int valid, tid;
};

// The positions of merge_sort_indices for a tile that stays where it is.
template <int NT, bool Indices, class V>
__device__ __forceinline__ void write_positions(V* out, const block_tile& t) {
  if constexpr (Indices) {
    for (int j = t.tid; j < t.valid; j += NT) out[t.base + j] = static_cast<V>(t.base + j);
  }
}

// The input's value at tile position j (the positions, for indices).
template <bool WithValues, bool Indices, class V, class ValsIn>
__device__ __forceinline__ V input_value(ValsIn vals_in, index_t base, int j) {
  if constexpr (Indices) return static_cast<V>(base + j);
  else if constexpr (WithValues) return vals_in[base + j];
  else return V{};
}

// The guard (state.cuh) in a block-sort tile: this thread's elements' fingerprints (i < mine),
template <int VT, bool WithValues, class K, class W>
__device__ __forceinline__ unsigned long long blocked_prints(const K (&k)[VT], const W (&v)[VT], int mine) {
  unsigned long long h = 0;
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    if (i < mine) {
      h += key_print(k[i]);
      if constexpr (WithValues) h += value_print(v[i]);
    }
  }
  return h;
}
// and the tile's (each thread's part: in) into the CTA's tally and the input's sum (all threads call it).
__device__ __forceinline__ void tally_tile(const sort_flags& flags, int tid, unsigned long long in) {
  if (tid == 0) cta_tally() = 0;
  __syncthreads();
  tally_add(in);
  __syncthreads();
  if (tid == 0) atomicAdd(&flags.input_hash(), cta_tally());
}

// A tile inside a sorted run of a tile or more: nothing moves; merge_sort_indices' positions, and under the
// guard the tile's fingerprint (the passes compare with it).
template <int NT, bool WithValues, bool Indices, bool Guarded, class K, class V, class ValsIn>
__device__ __forceinline__ void skip_tile(const sort_buffers<K, V>& buf, ValsIn vals_in, const sort_flags& flags,
                                          const block_tile& t) {
  write_positions<NT, Indices>(buf.vals(0), t);
  if constexpr (Guarded) {
    if (flags.unsorted()) {
      unsigned long long h = 0;
      for (int j = t.tid; j < t.valid; j += NT) {
        h += key_print(buf.keys(0)[t.base + j]);
        if constexpr (WithValues) h += value_print(input_value<WithValues, Indices, V>(vals_in, t.base, j));
      }
      tally_tile(flags, t.tid, h);
    }
  }
}

// The values of the tile into registers (the positions, for indices).
template <class Types, int VT, bool WithValues, bool Indices, class W, class ValsIn>
__device__ __forceinline__ void load_values(typename Types::temp_storage& temp, ValsIn vals_in, W (&vals)[VT],
                                            const block_tile& t) {
  if constexpr (WithValues) {
    if constexpr (Indices) {
#pragma unroll
      for (int i = 0; i < VT; ++i) vals[i] = static_cast<W>(t.base + VT * t.tid + i);
    } else {
      __syncthreads();
      typename Types::load_vals(temp.load_vals).Load(vals_in + t.base, vals, t.valid);
    }
  }
}

template <class Types, int VT, bool WithValues, class K, class W, class Comp>
__device__ __forceinline__ void sort_tile(typename Types::temp_storage& temp, K (&keys)[VT], W (&vals)[VT], int valid,
                                          int mine, Comp& comp) {
  __syncthreads();
  if (valid == Types::nv) {  // CUB's full-tile sort: no bounds to check
    if constexpr (WithValues) {
      typename Types::sort(temp.sort).StableSort(keys, vals, comp);
    } else {
      typename Types::sort(temp.sort).StableSort(keys, comp);
    }
  } else {
    // CUB pads a partial tile with the key it is given; it must not sort
    // before any real key, so each thread passes its own largest.
    K largest = keys[0];
#pragma unroll
    for (int i = 1; i < VT; ++i) {
      if (i < mine && comp(largest, keys[i])) largest = keys[i];
    }
    if constexpr (WithValues) {
      typename Types::sort(temp.sort).StableSort(keys, vals, comp, valid, largest);
    } else {
      typename Types::sort(temp.sort).StableSort(keys, comp, valid, largest);
    }
  }
}

// The sorted tile to buffer `dest`, and every 32nd key as a run sample.
template <class Types, int VT, bool WithValues, class K, class V, class W>
__device__ __forceinline__ void store_tile(typename Types::temp_storage& temp, const sort_buffers<K, V>& buf, int dest,
                                           const block_tile& t, K (&keys)[VT], W (&vals)[VT], K* samples) {
  __syncthreads();
  typename Types::store_keys(temp.store_keys).Store(buf.keys(dest) + t.base, keys, t.valid);
  if (samples != nullptr) {  // the store left each warp's keys striped (warp_base + 32 i + lane)
    const int warp_base = (t.tid / 32) * 32 * VT;
    const int holder = static_cast<int>((32 - (t.base + warp_base) % 32) % 32);
    const int left = (t.valid - warp_base < 32 * VT ? t.valid - warp_base : 32 * VT) - holder;
    write_warp_samples(keys, holder, (t.base + warp_base + holder) / 32, left <= 0 ? 0 : (left + 31) / 32, samples);
  }
  if constexpr (WithValues) {
    __syncthreads();
    typename Types::store_vals(temp.store_vals).Store(buf.vals(dest) + t.base, vals, t.valid);
  }
}

// Tile `tile` of the block sort, by the whole CTA (smem: block_sort_types::temp_storage). With Guard
// (guarded_v types) it adds the tile's fingerprint to the input's and stores a failing tile as read.
template <class Box, class K, class V, bool WithValues, bool Indices, bool Guard = false, class ValsIn, class Comp>
__device__ __forceinline__ void block_sort_tile(const sort_buffers<K, V>& buf, ValsIn vals_in, index_t n, int dest,
                                                const sort_flags& flags, Comp& comp, index_t tile,
                                                unsigned char* smem, K* samples = nullptr) {
  using types = block_sort_types<Box, K, V, WithValues, Indices>;
  constexpr bool guarded = Guard && guarded_v<K, V, WithValues>;
  constexpr int VT = Box::vt;
  auto& temp = *reinterpret_cast<typename types::temp_storage*>(smem);
  const int tid = static_cast<int>(threadIdx.x);
  const index_t base = tile * Box::nv;
  const block_tile t{base, static_cast<int>(n - base < Box::nv ? n - base : Box::nv), tid};
  if (flags.skips_block_sort(Box::nv)) {  // sorted, or sorted runs of a tile or more
    skip_tile<Box::nt, WithValues, Indices, guarded>(buf, vals_in, flags, t);
    return;
  }
  K keys[VT];
  typename types::load_keys(temp.load_keys).Load(buf.keys(0) + base, keys, t.valid, K{});
  int mine = t.valid - VT * tid;  // keys of this thread in the tile
  mine = mine < 0 ? 0 : (mine > VT ? VT : mine);
  const bool tile_sorted = __syncthreads_and(keys_in_order<Box>(keys, mine, t.valid, buf.keys(0) + base, comp));
  typename types::value_type vals[VT];
  if (tile_sorted && dest == 0) {
    sample_blocked(keys, base + VT * tid, mine, samples);
    write_positions<Box::nt, Indices>(buf.vals(0), t);
    if constexpr (guarded) {
      if constexpr (WithValues) {
#pragma unroll
        for (int i = 0; i < VT; ++i) vals[i] = i < mine ? input_value<WithValues, Indices, V>(vals_in, base, VT * tid + i) : V{};
      }
      tally_tile(flags, tid, blocked_prints<VT, WithValues>(keys, vals, mine));
    }
    return;
  }
  load_values<types, VT, WithValues, Indices>(temp, vals_in, vals, t);
  if constexpr (guarded) tally_tile(flags, tid, blocked_prints<VT, WithValues>(keys, vals, mine));
  if (!tile_sorted) sort_tile<types, VT, WithValues>(temp, keys, vals, t.valid, mine, comp);
  if constexpr (guarded) {
    // The tally less the sort's output: 0 unless the sort lost or repeated an element.
    if (!tile_sorted) tally_add(0ull - blocked_prints<VT, WithValues>(keys, vals, mine));
    __syncthreads();
    if (!tile_sorted && cta_tally() != 0) {
      store_tile_as_read<Box::nt, WithValues, Indices>(buf, vals_in, base, t.valid, dest, samples);
      return;
    }
  }
  store_tile<types, VT, WithValues>(temp, buf, dest, t, keys, vals, samples);
}

template <class Box, class K, class V, bool WithValues, bool Indices, class ValsIn, class Comp, bool Guard = false>
__global__ void __launch_bounds__(Box::nt, 1)
    block_sort_kernel(sort_buffers<K, V> buf, ValsIn vals_in, index_t n, int dest, sort_flags flags, Comp comp,
                      K* samples) {
  extern __shared__ __align__(16) unsigned char smem[];
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  block_sort_tile<Box, K, V, WithValues, Indices, Guard>(buf, vals_in, n, dest, flags, comp, blockIdx.x, smem, samples);
}

}  // namespace libmerge::detail::cuda_backend
