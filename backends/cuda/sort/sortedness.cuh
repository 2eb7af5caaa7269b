// Stage 1 of the merge sort: one read of the keys, where are the descents?
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

}  // namespace libmerge::detail::cuda_backend
