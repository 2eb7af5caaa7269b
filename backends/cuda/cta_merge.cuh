// Fine-grained scheduling inside one tile (DeviceMerge / CTABlocksortPass in
// seeds/000): the tile's inputs are staged in shared memory, each thread finds
// its own start with the merge-path search and merges VT outputs serially into
// registers. Merge, merge sort and sorted search differ only in how a tile
// finds its ranges and what it writes at the end.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cub/block/block_load.cuh>
#include <cub/warp/warp_store.cuh>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/search_tags.hpp"
#include "merge_path.hpp"

namespace libmerge::detail::cuda_backend {

// Offsets into a tile are 16-bit: launch_box caps a tile at 65535 elements.
using tile_offset = std::uint16_t;

LIBMERGE_HOST_DEVICE constexpr std::size_t align_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}

// a[0, na) followed by b: a tile's two input ranges as one sequence, read as
// T, for cub::LoadDirectStriped.
template <class T, class AIt, class BIt>
struct two_ranges {
  AIt a;
  int na;
  BIt b;
  __device__ __forceinline__ T operator[](int j) const {
    return j < na ? static_cast<T>(a[j]) : static_cast<T>(b[j - na]);
  }
};

// Loads a[0, na) followed by b[0, count - na) into dst[0, count), striped over
// the NT threads of the CTA (tid is the caller's thread index) so every access
// is coalesced: cub::LoadDirectStriped into registers (every load in flight
// before the first store to shared memory), then one store each. Full tiles
// skip the bounds checks. (Measured on an H100 against the hand-written loop
// it replaced, with cub::WarpStore below: merge 2^20..2^28 within +-1.3%, sort
// and search at 2^28 within 0.5%; and merge_kernel at 512x19 keys and 512x9
// int64 no longer spills: 0 B of local memory, was 8 and 16 B.) Direct: a
// partial tile stores each element as it comes instead (the merge-sort pass
// kernel at 512x15 spilled holding VT checked values; the merge and search
// kernels spill the other way round, so each caller picks).
template <int NT, int VT, bool Full, bool Direct = false, class T, class AIt, class BIt>
__device__ __forceinline__ void load_tile(AIt a, int na, BIt b, int count, T* dst, int tid) {
  if constexpr (!Full && Direct) {
#pragma unroll
    for (int i = 0; i < VT; ++i) {
      const int j = NT * i + tid;
      if (j < count) dst[j] = j < na ? static_cast<T>(a[j]) : static_cast<T>(b[j - na]);
    }
  } else {
    T x[VT];
    const two_ranges<T, AIt, BIt> in{a, na, b};
    if constexpr (Full) {
      cub::LoadDirectStriped<NT>(tid, in, x);
    } else {
      cub::LoadDirectStriped<NT>(tid, in, x, count);
    }
#pragma unroll
    for (int i = 0; i < VT; ++i) {
      const int j = NT * i + tid;
      if (Full || j < count) dst[j] = x[i];
    }
  }
}

// load_tile for four runs r[0..3]: tile element j comes from run k, the last
// with prefix[k] <= j (prefix[0] = 0), at offset j - prefix[k]. (Four base
// pointers and 32-bit offsets, like load_tile: one 64-bit index per element
// costs registers that spill. Hand-written: the same loads through
// cub::LoadDirectStriped and a four-run sequence took 26.52 ms against 25.11
// for by-key sorts of 2^28 int32 pairs, H100.)
template <int NT, int VT, bool Full, class T, class It>
__device__ __forceinline__ void load_four_runs(const It (&r)[4], const int (&prefix)[4], int count, T* dst, int tid) {
  T x[VT];
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    const int j = NT * i + tid;
    if (Full || j < count) {
      x[i] = j < prefix[2] ? (j < prefix[1] ? r[0][j] : r[1][j - prefix[1]])
                           : (j < prefix[3] ? r[2][j - prefix[2]] : r[3][j - prefix[3]]);
    }
  }
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    const int j = NT * i + tid;
    if (Full || j < count) dst[j] = x[i];
  }
}

// Merges VT outputs from keys[a, a_end) and keys[b, b_end) (SerialMerge in
// seeds/003): merged[i] is the i-th output and src[i] its tile offset. A key is
// read only at an in-range offset (keys[0] stands in once a side is exhausted).
// From output `next_at` on (never, by default) it merges the next problem,
// keys[next_a, next_a_end) with keys[next_a_end, next_b_end), from its start.
template <int VT, bounds Bounds = bounds::lower, class K, class Comp>
__device__ __forceinline__ void serial_merge(const K* keys, int a, int a_end, int b, int b_end, K (&merged)[VT],
                                             int (&src)[VT], Comp& comp, int next_at = VT, int next_a = 0,
                                             int next_a_end = 0, int next_b_end = 0) {
  K a_key = keys[a < a_end ? a : 0];
  K b_key = keys[b < b_end ? b : 0];
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    if (i == next_at) {
      a = next_a;
      a_end = next_a_end;
      b = next_a_end;
      b_end = next_b_end;
      a_key = keys[a < a_end ? a : 0];
      b_key = keys[b < b_end ? b : 0];
    }
    const bool take_a = b >= b_end || (a < a_end && a_goes_first<Bounds>(a_key, b_key, comp));
    merged[i] = take_a ? a_key : b_key;
    src[i] = take_a ? a : b;
    if (take_a) {
      ++a;
      a_key = keys[a < a_end ? a : 0];
    } else {
      ++b;
      b_key = keys[b < b_end ? b : 0];
    }
  }
}

// The CTA merge: keys[0, na) and keys[na, count) are two sorted ranges in
// shared memory, visible to the group of threads merging them; the caller's
// thread tid (0-based within that group) produces outputs VT*tid .. VT*tid +
// VT-1 of the merge in registers: the keys and their tile offsets (the caller
// keeps whichever it needs; the compiler drops the other). Bounds picks who
// wins ties: lower, A (a stable merge); upper, B.
template <int VT, bounds Bounds = bounds::lower, class K, class Comp>
__device__ __forceinline__ void cta_merge(const K* keys, int na, int count, int tid, K (&merged)[VT], int (&src)[VT],
                                          Comp& comp) {
  const int diag = VT * tid < count ? VT * tid : count;
  const int a = merge_path<Bounds, int>(keys, na, keys + na, count - na, diag, comp);
  serial_merge<VT, Bounds>(keys, a, na, na + diag - a, count, merged, src, comp);
}

// Two CTA merges side by side, the first level of a 4-way merge: outputs
// [0, p2) merge keys[0, p1) with keys[p1, p2), outputs [p2, count) merge
// keys[p2, p3) with keys[p3, count). A thread whose VT outputs straddle p2
// finishes the first merge and starts the second at its diagonal 0, so every
// thread does exactly VT outputs whatever the sizes.
template <int VT, class K, class Comp>
__device__ __forceinline__ void cta_merge_two(const K* keys, int p1, int p2, int p3, int count, int tid,
                                              K (&merged)[VT], int (&src)[VT], Comp& comp) {
  const int j0 = VT * tid < count ? VT * tid : count;
  const bool second = j0 >= p2;
  const int lo = second ? p2 : 0;
  const int a_end = second ? p3 : p1;
  const int b_end = second ? count : p2;
  const int diag = j0 - lo;
  const int a = lo + merge_path<bounds::lower, int>(keys + lo, a_end - lo, keys + a_end, b_end - a_end, diag, comp);
  serial_merge<VT>(keys, a, a_end, a_end + diag - (a - lo), b_end, merged, src, comp, second ? VT : p2 - j0, p2, p3,
                   count);
}

// Writes each thread's VT consecutive outputs (tile positions VT*tid + i) to
// out[0, count) with coalesced stores: cub::WarpStore's transpose, through
// `scratch` (the warp's VT*32 elements of the tile's key buffer, which no
// other warp uses then, instead of a TempStorage of its own: a second buffer
// would cost occupancy). A warp's outputs are one contiguous run, so only the
// warp synchronizes. Odd VT keeps the exchange free of bank conflicts (the
// tuned boxes all have odd VT). For power-of-two VT above 4, CUB pads its
// exchange against bank conflicts, which does not fit the slice: those boxes
// (a caller's) transpose through the slice directly.
template <int VT, bool Full, class T, class Out>
__device__ __forceinline__ void store_warp_striped(const T (&x)[VT], T* scratch, Out out, int count, int tid) {
  using store = cub::WarpStore<T, VT, cub::WARP_STORE_TRANSPOSE>;
  const int warp_base = (tid / 32) * 32 * VT;
  // CUB's unpadded storage declares one element more than the exchange
  // touches (32 * VT + 1); only the first 32 * VT, the warp's slice, are used.
  if constexpr (sizeof(typename store::TempStorage) <= (32 * VT + 1) * sizeof(T)) {
    auto& temp = *reinterpret_cast<typename store::TempStorage*>(scratch + warp_base);
    T y[VT];  // WarpStore transposes in place
#pragma unroll
    for (int i = 0; i < VT; ++i) y[i] = x[i];
    if constexpr (Full) {
      store(temp).Store(out + warp_base, y);
    } else {
      store(temp).Store(out + warp_base, y, count - warp_base);
    }
  } else {
    const int lane = tid % 32;
#pragma unroll
    for (int i = 0; i < VT; ++i) scratch[warp_base + VT * lane + i] = x[i];
    __syncwarp();
#pragma unroll
    for (int i = 0; i < VT; ++i) {
      const int j = warp_base + 32 * i + lane;
      if (Full || j < count) out[j] = scratch[j];
    }
  }
}

}  // namespace libmerge::detail::cuda_backend
