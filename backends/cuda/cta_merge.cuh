// Fine-grained scheduling inside one tile (DeviceMerge / CTABlocksortPass in
// seeds/000): the tile's inputs are staged in shared memory, each thread finds
// its own start with the merge-path search and merges VT outputs serially into
// registers. Merge, merge sort and sorted search differ only in how a tile
// finds its ranges and what it writes at the end.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../../libmerge/search_tags.hpp"
#include "merge_path.hpp"

namespace libmerge::detail::cuda_backend {

// Offsets into a tile are 16-bit: launch_box caps a tile at 65535 elements.
using tile_offset = std::uint16_t;

constexpr std::size_t align_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

// Loads a[0, na) followed by b[0, count - na) into dst[0, count), striped over
// the CTA so every access is coalesced. All VT loads are issued before the
// first store to shared memory, so each thread keeps VT requests in flight.
// Full tiles skip the bounds checks.
template <int NT, int VT, bool Full, class T, class AIt, class BIt>
__device__ __forceinline__ void load_tile(AIt a, int na, BIt b, int count, T* dst) {
  T x[VT];
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    const int j = NT * i + static_cast<int>(threadIdx.x);
    if (Full || j < count) x[i] = j < na ? static_cast<T>(a[j]) : static_cast<T>(b[j - na]);
  }
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    const int j = NT * i + static_cast<int>(threadIdx.x);
    if (Full || j < count) dst[j] = x[i];
  }
}

// Merges VT outputs from keys[a, a_end) and keys[b, b_end) (SerialMerge in
// seeds/003): merged[i] is the i-th output and src[i] its tile offset. A key is
// read only at an in-range offset (keys[0] stands in once a side is exhausted).
template <int VT, class K, class Comp>
__device__ __forceinline__ void serial_merge(const K* keys, int a, int a_end, int b, int b_end, K (&merged)[VT],
                                             int (&src)[VT], Comp& comp) {
  K a_key = keys[a < a_end ? a : 0];
  K b_key = keys[b < b_end ? b : 0];
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    const bool take_a = b >= b_end || (a < a_end && !comp(b_key, a_key));
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
// shared memory, visible to all threads. Thread t produces outputs
// VT*t .. VT*t + VT-1 of the tile in registers: the keys and their tile offsets
// (the caller keeps whichever it needs; the compiler drops the other).
template <int NT, int VT, class K, class Comp>
__device__ __forceinline__ void cta_merge(const K* keys, int na, int count, K (&merged)[VT], int (&src)[VT],
                                          Comp& comp) {
  const int tid = static_cast<int>(threadIdx.x);
  const int diag = VT * tid < count ? VT * tid : count;
  const int a = merge_path<bounds::lower, int>(keys, na, keys + na, count - na, diag, comp);
  serial_merge<VT>(keys, a, na, na + diag - a, count, merged, src, comp);
}

// Writes each thread's VT consecutive outputs (tile positions VT*tid + i) to
// out[0, count) with coalesced stores, transposing within each warp through
// `scratch` (VT*NT elements no other warp is using): a warp's outputs are one
// contiguous run, so only the warp needs to synchronize. Odd VT keeps both the
// blocked writes and the striped reads free of bank conflicts.
template <int VT, bool Full, class T, class Out>
__device__ __forceinline__ void store_warp_striped(const T (&x)[VT], T* scratch, Out out, int count) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp_base = (static_cast<int>(threadIdx.x) / 32) * 32 * VT;
#pragma unroll
  for (int i = 0; i < VT; ++i) scratch[warp_base + VT * lane + i] = x[i];
  __syncwarp();
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    const int j = warp_base + 32 * i + lane;
    if (Full || j < count) out[j] = scratch[j];
  }
}

}  // namespace libmerge::detail::cuda_backend
