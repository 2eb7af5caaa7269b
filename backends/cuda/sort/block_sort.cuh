// Stages 1 and 2 of the merge sort, the reads of the unsorted input: where the
// descents are (one read of the keys), then tiles sorted in shared memory by
// cub::BlockMergeSort.
#pragma once

#include "state.cuh"

namespace libmerge::detail::cuda_backend {

// 1. sort_flags::runs becomes the gcd of the positions i + 1 with keys[i + 1] < keys[i]. Blocks stop once it
// is below `useful` (a block-sort tile), where it saves nothing: random input costs a fraction of one read.
__device__ __forceinline__ unsigned long long gcd64(unsigned long long a, unsigned long long b) {
  if (a == 0 || b == 0) return a | b;  // gcd(0, x) = x: 0 is "no descent yet"
  const int shift = __ffsll(static_cast<long long>(a | b)) - 1;  // Stein's: shifts, no division
  a >>= __ffsll(static_cast<long long>(a)) - 1;
  do {
    b >>= __ffsll(static_cast<long long>(b)) - 1;
    if (a > b) {
      const unsigned long long t = a;
      a = b;
      b = t;
    }
    b -= a;
  } while (b != 0);
  return a << shift;
}

struct gcd_op {
  __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const { return gcd64(a, b); }
};

// Keys a thread reads a chunk: 64 bytes' worth, at most 16 (larger keys keep a full SM's registers).
// H100, 2^28 int32 in sorted runs: 16 keys 0.436 ms, 8 keys 0.468 (docs/cuda-merge-sort.md)
template <class K>
inline constexpr int sortedness_vt = sizeof(K) >= 64 ? 1 : (64 / sizeof(K) < 16 ? int(64 / sizeof(K)) : 16);

// One chunk: keys first + i (i < VT) into x; bit i set where key first + i + 1 precedes key first + i.
// Branch-free, so every load is in flight at once; the key after a thread's last comes from the next lane.
template <int NT, int VT, class K, class Comp>
__device__ __forceinline__ unsigned chunk_descents(const K* keys, index_t n, index_t base, index_t first, K (&x)[VT],
                                                   Comp& comp) {
  if (base + NT * VT <= n && reinterpret_cast<std::uintptr_t>(keys) % 16 == 0) {
    cub::LoadDirectBlockedVectorized(static_cast<int>(threadIdx.x), const_cast<K*>(keys) + base, x);
  } else {
#pragma unroll
    for (int i = 0; i < VT; ++i) x[i] = first + i < n ? keys[first + i] : K{};
  }
  K after = cub::ShuffleDown<32>(x[0], 1, 31, 0xffffffffu);
  if (threadIdx.x % 32 == 31 && first + VT < n) after = keys[first + VT];
  unsigned mask = 0;
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    const K next = i + 1 < VT ? x[(i + 1) % VT] : after;
    if (first + i < n - 1 && comp(next, x[i])) mask |= 1u << i;
  }
  return mask;
}

template <int NT, class K, class Comp>
__global__ void __launch_bounds__(NT)
    sortedness_kernel(const K* keys, index_t n, index_t useful, sort_flags flags, Comp comp, K* samples) {
  using reduce = cub::BlockReduce<unsigned long long, NT>;
  __shared__ typename reduce::TempStorage temp;
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  // Samples of sorted runs, which skip the block sort; the loop misses the last key.
  if (samples != nullptr && blockIdx.x == 0 && threadIdx.x == 0 && (n - 1) % sample_every == 0) {
    samples[(n - 1) / sample_every] = keys[n - 1];
  }
  constexpr int vt = sortedness_vt<K>;
  static_assert(NT * vt % sample_every == 0 && vt <= 32, "chunks of whole samples; mask bits");
  const unsigned long long limit = static_cast<unsigned long long>(useful);
  volatile unsigned long long* runs = flags.runs;
  auto update = [&](unsigned long long g) {  // runs = gcd(runs, g), atomically
    unsigned long long seen = *runs, want;
    while ((want = gcd64(seen, g)) != seen) {
      const unsigned long long was = atomicCAS(const_cast<unsigned long long*>(runs), seen, want);
      if (was == seen) break;
      seen = was;
    }
  };
  // Two descents closer than `useful` make the gcd smaller: with chunks shorter
  // than `useful`, a chunk with two descents ends the search.
  const bool short_chunks = NT * vt < useful;
  for (index_t base = static_cast<index_t>(blockIdx.x) * NT * vt; base < n - 1;
       base += static_cast<index_t>(gridDim.x) * NT * vt) {
    // The look at the gcd so far (an L2 round trip) goes out with the chunk's
    // loads, not before them (H100, 2^28 int32 runs: 0.46 against 0.51 ms).
    const unsigned long long seen = threadIdx.x == 0 ? *runs : 0;
    const index_t first = base + static_cast<index_t>(threadIdx.x) * vt;
    K x[vt];
    const unsigned mask = chunk_descents<NT>(keys, n, base, first, x, comp);
    if (__syncthreads_or(seen != 0 && seen < limit)) return;  // the same answer for all
    // The chunk starts at a multiple of 32 keys: the test finds every 32nd key for any vt.
    if (samples != nullptr) {
#pragma unroll
      for (int i = 0; i < vt; ++i) {
        if ((threadIdx.x * vt + i) % sample_every == 0 && first + i < n - 1) {
          samples[(first + i) / sample_every] = x[i];
        }
      }
    }
    const int descents = __popc(mask);
    auto position = [&](int i) { return static_cast<unsigned long long>(first + i + 1); };
    unsigned long long g = mask ? position(__ffs(mask) - 1) : 0;
    if (short_chunks) {
      const int with_one = __syncthreads_count(descents == 1);
      if (__syncthreads_or(descents > 1) || with_one > 1) {
        if (threadIdx.x == 0) atomicExch(const_cast<unsigned long long*>(runs), 1ull);  // 1: gcd(1, x) = 1
        return;
      }
      if (descents == 1) update(g);  // the chunk's only descent
    } else {
      // Two descents in one thread lie under vt apart, closer than `useful`:
      // the search ends here too (H100, one-kernel pairs at 2^16: 4 us against 16).
      if (__syncthreads_or(descents > 1 && vt <= useful)) {
        if (threadIdx.x == 0) atomicExch(const_cast<unsigned long long*>(runs), 1ull);
        return;
      }
      for (unsigned m = mask & (mask - 1); m; m &= m - 1) g = gcd64(g, position(__ffs(m) - 1));
      // One update per block: all threads updating one word would serialize.
      g = reduce(temp).Reduce(g, gcd_op{});
      if (threadIdx.x == 0 && g != 0) update(g);
      __syncthreads();  // temp is reused by the next chunk
    }
  }
}

// Zeroes the flags (of `passes` passes) and launches sortedness_kernel (useful: the block-sort tile).
template <class K, class Comp>
void launch_sortedness(const K* keys, index_t n, index_t useful, const sort_flags& flags, int passes, Comp comp,
                       cudaStream_t stream, const device_info& dev, const char* algorithm, K* samples = nullptr) {
  check_cuda(cudaMemsetAsync(flags.runs, 0, sort_flags::bytes(passes, flags.hashes != nullptr), stream), algorithm,
             "cudaMemsetAsync");
  constexpr int check_nt = 256;
  // A full SM of blocks (8 of 256): the more loads in flight the better (docs/cuda-merge-sort.md).
  const index_t chunk = check_nt * sortedness_vt<K>;
  const index_t check_blocks = std::min<index_t>((n + chunk - 1) / chunk, 8 * dev.sms);
  launch(sortedness_kernel<check_nt, K, Comp>, check_blocks, check_nt, 0, stream, false, dev, algorithm,
         "sortedness_kernel", keys, n, useful, flags, comp, samples);
}

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
