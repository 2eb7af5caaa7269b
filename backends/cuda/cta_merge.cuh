// Scheduling inside one tile: inputs staged in shared memory (through registers or by bulk copies, below),
// each thread finds its start by merge path and merges VT outputs serially into registers. Merge, merge sort
// and sorted search differ in how a tile finds its ranges and writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cub/block/block_load.cuh>
#include <cub/util_ptx.cuh>
#include <cub/warp/warp_store.cuh>
#include <cuda/ptx>
#include <cuda/std/functional>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/functional.hpp"
#include "../../policies/cuda.hpp"
#include "../engine/search.hpp"

namespace libmerge::detail::cuda_backend {

// ---------------------------------------------------------------------------
// Tile loads by the copy engine (sm_90 on): cp.async.bulk into shared memory,
// as CUB 3.6's BlockLoadToShared (not in CCCL 3.0); one mbarrier. Copies move
// whole 16-byte lines, so a range lands at its source's offset in a line.

// Stageable: It is a plain T* and T tiles a 16-byte line (hand-copied ends are whole elements).
template <class T, class It>
inline constexpr bool bulk_loadable =
    std::is_pointer_v<It> && std::is_same_v<std::remove_cv_t<std::remove_pointer_t<It>>, T> &&
    (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16) &&
    alignof(T) == sizeof(T);

// Shared memory for `ranges` ranges of n elements of T in all: each starts up
// to 16 - sizeof(T) bytes into a fresh line.
template <class T>
constexpr std::size_t bulk_ranges_bytes(std::size_t n, int ranges) {
  return (n * sizeof(T) + 15) / 16 * 16 + static_cast<std::size_t>(2 * ranges - 1) * 16;
}
template <class T>
constexpr std::size_t bulk_pair_bytes(std::size_t n) {
  return bulk_ranges_bytes<T>(n, 2);
}

// Where stage_pair put two ranges: a[0, na) at a, b[0, nb) at a + b_at.
template <class T>
struct staged_pair {
  T* a;
  int b_at;
};

// A CTA's bulk copies on one mbarrier, once a kernel. Every thread constructs
// it, stages the same ranges and waits; a last-warp thread issues (as CUB).
template <int NT>
class bulk_loader {
 public:
  __device__ __forceinline__ bulk_loader(std::uint64_t* barrier, int tid)
      : barrier_(barrier), tid_(tid), elected_(tid == NT - 32) {
    static_assert(NT % 32 == 0, "bulk_loader: whole warps");
    if (elected_) {
      ::cuda::ptx::mbarrier_init(barrier_, 1);
      // The initialization visible to the copy engine (the async proxy), as CUB does.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared);
    }
    __syncthreads();  // initialized before any thread uses it (as CUB's BlockLoadToShared does)
  }

  // Stages src[0, n) at dst + (src's offset in its line); dst 16-byte aligned
  // with room for n elements and 15 bytes. Returns where src[0] lands.
  template <class T>
  __device__ __forceinline__ T* stage(const T* src, int n, unsigned char* dst) {
    constexpr int size = static_cast<int>(sizeof(T));
    const int lead = static_cast<int>(reinterpret_cast<std::uintptr_t>(src) % 16);
    T* out = reinterpret_cast<T*>(dst + lead);
    const int head = min(n, (16 - lead) % 16 / size);
    const int body = (n - head) * size / 16 * 16 / size;
    if (elected_ && body > 0) {
      // The CTA's shared memory as the destination from PTX ISA 8.6 (CUDA 12.8);
      // before, the same address in the cluster's.
#if __cccl_ptx_isa >= 860
      constexpr auto destination = ::cuda::ptx::space_shared;
#else
      constexpr auto destination = ::cuda::ptx::space_cluster;
#endif
      ::cuda::ptx::cp_async_bulk(destination, ::cuda::ptx::space_global, out + head, src + head,
                                 static_cast<std::uint32_t>(body * size), barrier_);
      bytes_ += static_cast<std::uint32_t>(body * size);
    }
    const int by_hand = n - body;  // head, then the tail after the body
    for (int i = tid_; i < by_hand; i += NT) {
      const int j = i < head ? i : i + body;
      out[j] = src[j];
    }
    return out;
  }

  // Stages a[0, na) at dst and b[0, nb) from the line after a's last (dst:
  // bulk_pair_bytes<T>(na + nb)). The first slot must hold an input key (the
  // stand-in past a side's end): with A empty, B's first is copied there by hand.
  // Not a select of the pair's start: H200 int32 1.07x the time (docs/cuda-merge-sort.md).
  template <class T>
  __device__ __forceinline__ staged_pair<T> stage_pair(const T* a, int na, const T* b, int nb, unsigned char* dst) {
    T* at = stage(a, na, dst);
    const auto a_end = reinterpret_cast<std::uintptr_t>(at + na) - reinterpret_cast<std::uintptr_t>(dst);
    T* bt = stage(b, nb, dst + (a_end + 15) / 16 * 16);
    if (na == 0 && nb > 0 && bt != at && tid_ == 0) at[0] = b[0];
    return {at, static_cast<int>(bt - at)};
  }

  // Stages R ranges from dst (bulk_ranges_bytes<T>(sum of n, R)), each from the
  // line after the last; at[k]: range k's start in elements. The first slot gets
  // an input key by hand, as in stage_pair.
  template <int R, class T>
  __device__ __forceinline__ void stage_ranges(const T* const (&src)[R], const int (&n)[R], unsigned char* dst,
                                               int (&at)[R]) {
    T* const base = reinterpret_cast<T*>(dst);
    unsigned char* next = dst;
    int first_at = -1;
    const T* first_src = nullptr;
#pragma unroll
    for (int k = 0; k < R; ++k) {
      T* out = stage(src[k], n[k], next);
      at[k] = static_cast<int>(out - base);
      if (first_at < 0 && n[k] > 0) {
        first_at = at[k];
        first_src = src[k];
      }
      const auto end = reinterpret_cast<std::uintptr_t>(out + n[k]) - reinterpret_cast<std::uintptr_t>(dst);
      next = dst + (end + 15) / 16 * 16;
    }
    if (first_at > 0 && tid_ == 0) base[0] = first_src[0];
  }

  // Waits until every staged element is in shared memory.
  __device__ __forceinline__ void wait() {
    if (elected_) {
      (void)::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta,
                                                 ::cuda::ptx::space_shared, barrier_, bytes_);
    }
    __syncthreads();  // the elements copied by hand
    while (!::cuda::ptx::mbarrier_try_wait_parity(barrier_, 0u)) {
    }
  }

 private:
  std::uint64_t* barrier_;
  int tid_;
  bool elected_;
  std::uint32_t bytes_ = 0;
};

// Tile stores by the copy engine (sm_90 on): src (at dst's line offset) to dst.
// Every thread calls it once its part is written; src must not be written
// again until the CTA ends (the issuer waits for the copy to read it).
// H200, 2^28 int32 sort: 0.93x the time of cub::WarpStore's transpose (docs/cuda-merge-sort.md)
template <int NT, class T>
__device__ __forceinline__ void bulk_store(const T* src, int n, T* dst, int tid) {
  constexpr int size = static_cast<int>(sizeof(T));
  ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared);
  __syncthreads();
  const int lead = static_cast<int>(reinterpret_cast<std::uintptr_t>(dst) % 16);
  const int head = min(n, (16 - lead) % 16 / size);
  const int body = (n - head) * size / 16 * 16 / size;
  const bool elected = tid == NT - 32 && body > 0;  // (the last warp, as bulk_loader)
  if (elected) {
    ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_global, ::cuda::ptx::space_shared, dst + head, src + head,
                               static_cast<std::uint32_t>(body * size));
    ::cuda::ptx::cp_async_bulk_commit_group();
  }
  const int by_hand = n - body;
  for (int i = tid; i < by_hand; i += NT) {
    const int j = i < head ? i : i + body;
    dst[j] = src[j];
  }
  if (elected) ::cuda::ptx::cp_async_bulk_wait_group_read(::cuda::ptx::n32_t<0>{});
}

// Where a bulk_store tile puts its outputs: at out's line offset (room + 15 bytes).
template <class T>
__device__ __forceinline__ T* bulk_store_slots(unsigned char* tile, const T* out) {
  return reinterpret_cast<T*>(tile + reinterpret_cast<std::uintptr_t>(out) % 16);
}

// ---------------------------------------------------------------------------
// Which comparators order numbers as numbers: traits the CTA merges below and
// the sort's and search's launch choices ask.

// Comparators that order numbers as numbers (or in reverse): one instruction a comparison. Under them the
// search interpolates, the sort takes 4-way passes from a smaller size, and the CTA merges compare whatever
// a slot past a side's end holds (side_key). Thrust's less and greater are cuda::std's.
template <class Comp>
struct numeric_order : std::false_type {};
template <class T>
struct numeric_order<libmerge::less<T>> : std::true_type {};
template <class T>
struct numeric_order<libmerge::greater<T>> : std::true_type {};
template <class T>
struct numeric_order<::cuda::std::less<T>> : std::true_type {};
template <class T>
struct numeric_order<::cuda::std::greater<T>> : std::true_type {};

template <class T>
inline constexpr bool is_number_v = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

// Keys that are numbers under numeric_order.
template <class Comp, class K>
inline constexpr bool orders_numbers_v = numeric_order<Comp>::value && is_number_v<K>;

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

// Loads a[0, na) then b[0, count - na) into dst[0, count), striped over NT
// threads, every load in flight before the first shared store. Direct: a
// partial tile stores each element as it comes (which variant spills depends
// on the kernel, so each caller picks).
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

// Where a 4-way merge-sort tile's elements come from: tile element j is
// src[j + delta[k]] for the last piece k with start[k] <= j (start[0] = 0).
template <int Ways>
struct piece_map {
  int start[Ways];
  index_t delta[Ways];
  __device__ __forceinline__ index_t operator()(int j) const {
    return j < start[2] ? (j < start[1] ? delta[0] : delta[1]) : (j < start[3] ? delta[2] : delta[3]);
  }
};

// Tile slot j of a 4-way tile read from one buffer: src[j + delta] (piece_map).
template <int Ways, class T>
struct mapped_reader {
  const T* src;
  piece_map<Ways> pieces;
  __device__ __forceinline__ T operator()(int j) const { return src[pieces(j) + j]; }
};

// load_tile for a 4-way merge-sort tile: slot j read by read(j) (mapped_reader,
// runs_reader), pieces_in_flight loads at a time: all at once spill at the
// pass kernels' 32 registers (docs/tuning.md).
// Hand-written: cub::LoadDirectStriped over a four-run sequence took 1.06x, H100.
template <int NT, int VT, bool Full, class T, class Read>
__device__ __forceinline__ void load_pieces(const Read& read, int count, T* dst, int tid) {
  constexpr int in_flight = tuning::here.sort.pieces_in_flight;
  constexpr int group = in_flight < VT ? in_flight : VT;
#pragma unroll
  for (int first = 0; first < VT; first += group) {
    T x[group];
#pragma unroll
    for (int i = 0; i < group; ++i) {
      const int j = NT * (first + i) + tid;
      if (first + i < VT && (Full || j < count)) x[i] = read(j);
    }
#pragma unroll
    for (int i = 0; i < group; ++i) {
      const int j = NT * (first + i) + tid;
      if (first + i < VT && (Full || j < count)) dst[j] = x[i];
    }
  }
}

// A thread's share of a CTA merge: up to VT steps (Full: exactly VT) from A's
// offset a and B's b. a_first is asked at every step, so read_a/read_b must
// give a key past a side's end too. next_a/next_b step over gaps (cta_merge_pieces).
// OneRead: both sides read by read_a, so a step loads one key, not one a side.
// H200, int32 sort at 2^28: 0.96x the time, 8.21 against 8.54 ms (docs/cuda-merge.md).
template <int VT, bool Full, bool OneRead = false, class ReadA, class ReadB, class AFirst, class Step, class NextA,
          class NextB>
LIBMERGE_HOST_DEVICE __forceinline__ void merge_walk(int a, int a_end, int b, int b_end, int steps, ReadA&& read_a,
                                                     ReadB&& read_b, AFirst&& a_first, Step&& step, NextA&& next_a,
                                                     NextB&& next_b) {
  auto a_key = read_a(a);
  auto b_key = read_b(b);
LIBMERGE_UNROLL
  for (int i = 0; i < VT; ++i) {
    if (!Full && i >= steps) break;
    const bool first = a_first(a, b, a_key, b_key);
    const bool from_a = b >= b_end || (a < a_end && first);
    step(i, from_a, a, b, a_key, b_key);
    if constexpr (OneRead) {
      a = from_a ? next_a(a) : a;
      b = from_a ? b : next_b(b);
      const auto key = read_a(from_a ? a : b);
      a_key = from_a ? key : a_key;
      b_key = from_a ? b_key : key;
    } else {
      if (from_a) {
        a = next_a(a);
        a_key = read_a(a);
      } else {
        b = next_b(b);
        b_key = read_b(b);
      }
    }
  }
}

template <int VT, bool Full, bool OneRead = false, class ReadA, class ReadB, class AFirst, class Step>
LIBMERGE_HOST_DEVICE __forceinline__ void merge_walk(int a, int a_end, int b, int b_end, int steps, ReadA&& read_a,
                                                     ReadB&& read_b, AFirst&& a_first, Step&& step) {
  const auto next = [](int k) { return k + 1; };
  merge_walk<VT, Full, OneRead>(a, a_end, b, b_end, steps, read_a, read_b, a_first, step, next, next);
}

// The key a walk holds for a side at offset k. Past the end it is compared but
// never taken; a comparator may dereference it, so keys[0] stands in. PastEnd
// numbers read keys[k] itself, one slot past at most (merge_layout leaves room).
// H200: int32 sorts 0.94x-0.97x the time from 2^24 (docs/cuda-merge-sort.md).
// Host code (the CPU tests' vectors hold exactly their keys) always clamps.
template <class Comp, bool PastEnd, class K>
inline constexpr bool reads_past_end_v =
#ifdef __CUDA_ARCH__
    PastEnd && orders_numbers_v<Comp, K>;
#else
    false;
#endif

template <class Comp, bool PastEnd, class K>
LIBMERGE_HOST_DEVICE __forceinline__ K side_key(const K* keys, int k, int end) {
  if constexpr (reads_past_end_v<Comp, PastEnd, K>) {
    return keys[k];
  } else {
    return keys[k < end ? k : 0];
  }
}

// Whether walks may read past a side's end (side_key's PastEnd): the slot after
// the keys is padding or the values' first, which always holds some number.
// H200, int32 pair sorts 0.974x-0.993x the time (docs/cuda-merge-sort.md).
inline constexpr bool walks_past_end = true;

// Merges VT outputs of keys[a, a_end) and keys[b, b_end): merged[i] and its
// tile offset src[i]. Grouped: offsets from a_split / b_split form a second
// group after the first, so one walk merges two pairs back to back (cta_merge_pairs).
template <int VT, bounds Bounds = bounds::lower, bool Grouped = false, bool PastEnd = false, class K, class Comp>
LIBMERGE_HOST_DEVICE __forceinline__ void serial_merge(const K* keys, int a, int a_end, int b, int b_end, K (&merged)[VT],
                                             int (&src)[VT], Comp& comp, int a_split = 0, int b_split = 0) {
  const auto a_first = [&](int a_at, int b_at, const K& a_key, const K& b_key) {
    if constexpr (Grouped) {
      const bool a_later = a_at >= a_split, b_later = b_at >= b_split;
      return a_later == b_later ? a_goes_first<Bounds>(a_key, b_key, comp) : b_later;
    } else {
      (void)a_at;
      (void)b_at;
      return a_goes_first<Bounds>(a_key, b_key, comp);
    }
  };
  const auto step = [&](int i, bool from_a, int a_at, int b_at, const K& a_key, const K& b_key) {
    merged[i] = from_a ? a_key : b_key;
    src[i] = from_a ? a_at : b_at;
  };
  // (4-byte keys at most: with int64 keys the 2-way pass kernels spilled.)
  if constexpr (reads_past_end_v<Comp, PastEnd, K> && sizeof(K) <= 4) {
    const auto read = [&](int k) { return keys[k]; };
    merge_walk<VT, true, true>(a, a_end, b, b_end, VT, read, read, a_first, step);
  } else {
    merge_walk<VT, true>(
        a, a_end, b, b_end, VT, [&](int k) { return side_key<Comp, PastEnd>(keys, k, a_end); },
        [&](int k) { return side_key<Comp, PastEnd>(keys, k, b_end); }, a_first, step);
  }
}

// The CTA merge of keys[0, na) and keys[b_at, b_at + nb) (b_at >= na: a gap
// where bulk copies staged the tile): thread tid produces outputs VT*tid on in
// registers with their offsets. Ties: bounds::lower takes A (stable), upper B.
template <int VT, bounds Bounds = bounds::lower, bool PastEnd = false, class K, class Comp>
LIBMERGE_HOST_DEVICE __forceinline__ void cta_merge(const K* keys, int na, int b_at, int nb, int tid, K (&merged)[VT],
                                                    int (&src)[VT], Comp& comp) {
  const int count = na + nb;
  const int diag = VT * tid < count ? VT * tid : count;
  const int a = merge_path<Bounds, int>(keys, na, keys + b_at, nb, diag, comp);
  serial_merge<VT, Bounds, false, PastEnd>(keys, a, na, b_at + diag - a, b_at + nb, merged, src, comp);
}

// Whether tid's warp holds the thread straddling the end of a 4-way tile's
// first pair: only that warp needs the grouped walk (a warp-uniform branch).
// H200, 2^24 reversed int32 keys: 0.96x the sort's time (docs/cuda-merge.md).
template <int VT>
LIBMERGE_HOST_DEVICE __forceinline__ bool straddling_warp(int tid, int first) {
  return tid / 32 == first / VT / 32;
}

// Level 1 of a 4-way merge as one CTA merge: keys[0, na) holds pieces 0 and 2
// (from a_split), keys[na, count) pieces 1 and 3 (from b_split); ordered by
// (pair, key) they give merge(0, 1) then merge(2, 3), each stable.
template <int VT, bool PastEnd = false, class K, class Comp>
LIBMERGE_HOST_DEVICE __forceinline__ void cta_merge_pairs(const K* keys, int na, int a_split, int b_split, int count, int tid,
                                                K (&merged)[VT], int (&src)[VT], Comp& comp) {
  const int diag = VT * tid < count ? VT * tid : count;
  const int first = a_split + (b_split - na);  // outputs of the first pair
  const bool second = diag >= first;
  const int a0 = second ? a_split : 0, a1 = second ? na : a_split;
  const int b0 = second ? b_split : na, b1 = second ? count : b_split;
  const int d = diag - (second ? first : 0);
  const int a = a0 + merge_path<bounds::lower, int>(keys + a0, a1 - a0, keys + b0, b1 - b0, d, comp);
  const int b = b0 + (d - (a - a0));
  if (straddling_warp<VT>(tid, first)) {
    serial_merge<VT, bounds::lower, true, PastEnd>(keys, a, na, b, count, merged, src, comp, a_split, b_split);
  } else {
    serial_merge<VT, bounds::lower, false, PastEnd>(keys, a, a1, b, b1, merged, src, comp);
  }
}

// A 4-way pass's pieces in shared memory: piece k is keys[at[k], at[k] + size[k]),
// order 0 2 | 1 3, with a gap under 16 bytes after each if bulk-staged (cta_merge.cuh).
struct piece_spans {
  int at[4];
  int size[4];
};

// cta_merge_pairs over staged pieces, with a gap between each side's two pieces
// (an offset at a first piece's end jumps to the second's start). keys[0] holds
// an input key (stage_ranges), the stand-in past a side's end.
template <int VT, bool PastEnd = false, class K, class Comp>
LIBMERGE_HOST_DEVICE __forceinline__ void cta_merge_pieces(const K* keys, const piece_spans& p, int tid,
                                                           K (&merged)[VT], int (&src)[VT], Comp& comp) {
  const int first = p.size[0] + p.size[1];  // outputs of the first pair
  const int count = first + p.size[2] + p.size[3];
  const int diag = VT * tid < count ? VT * tid : count;
  const bool second = diag >= first;
  const int a0 = second ? p.at[2] : p.at[0], na = second ? p.size[2] : p.size[0];
  const int b0 = second ? p.at[3] : p.at[1], nb = second ? p.size[3] : p.size[1];
  const int d = diag - (second ? first : 0);
  const int m = merge_path<bounds::lower, int>(keys + a0, na, keys + b0, nb, d, comp);
  const int a_jump = p.at[0] + p.size[0], a_later = p.at[2], a_end = p.at[2] + p.size[2];
  const int b_jump = p.at[1] + p.size[1], b_later = p.at[3], b_end = p.at[3] + p.size[3];
  if (!straddling_warp<VT>(tid, first)) {
    // Within one pair: a plain walk of its two pieces, to their ends.
    serial_merge<VT, bounds::lower, false, PastEnd>(keys, a0 + m, a0 + na, b0 + d - m, b0 + nb, merged, src, comp);
    return;
  }
  const int a = a0 + m == a_jump ? a_later : a0 + m;
  const int b = b0 + d - m == b_jump ? b_later : b0 + d - m;
  merge_walk<VT, true>(
      a, a_end, b, b_end, VT, [&](int k) { return side_key<Comp, PastEnd>(keys, k, a_end); },
      [&](int k) { return side_key<Comp, PastEnd>(keys, k, b_end); },
      [&](int a_at, int b_at, const K& a_key, const K& b_key) {
        const bool a_second = a_at >= a_later, b_second = b_at >= b_later;
        return a_second == b_second ? a_goes_first<bounds::lower>(a_key, b_key, comp) : b_second;
      },
      [&](int i, bool from_a, int a_at, int b_at, const K& a_key, const K& b_key) {
        merged[i] = from_a ? a_key : b_key;
        src[i] = from_a ? a_at : b_at;
      },
      [&](int k) { return k + 1 == a_jump ? a_later : k + 1; },
      [&](int k) { return k + 1 == b_jump ? b_later : k + 1; });
}

// A warp's samples, held by lane `holder` in y[0, VT), to samples[first,
// first + count), one coalesced store a 32 of them. All lanes of the warp call it.
// H100, 2^28 int32: one lane's single-word stores cost a 4-way pass 0.13 ms.
template <int VT, class T>
__device__ __forceinline__ void write_warp_samples(const T (&y)[VT], int holder, index_t first, int count, T* samples) {
  const int lane = static_cast<int>(threadIdx.x % 32);
#pragma unroll
  for (int from = 0; from < VT; from += 32) {
    T v{};
#pragma unroll
    for (int i = from; i < VT && i < from + 32; ++i) {
      const T w = cub::ShuffleIndex<32>(y[i], holder, 0xffffffffu);
      if (lane == i - from) v = w;
    }
    if (from + lane < count) samples[first + from + lane] = v;
  }
}

// CUB's WarpStore transpose fits a warp's slice of a tile (32 * VT elements): its unpadded storage declares one
// element more than the exchange touches. CUB pads power-of-two VT above 4, which overflows: by hand then.
template <class T, int VT>
inline constexpr bool warp_store_fits =
    sizeof(typename cub::WarpStore<T, VT, cub::WARP_STORE_TRANSPOSE>::TempStorage) <= (32 * VT + 1) * sizeof(T);

// The warp's VT outputs a thread to out + warp_base, coalesced by WarpStore's transpose through the warp's
// slice of `scratch` (own TempStorage would cost occupancy).
template <int VT, bool Full, class T, class Out>
__device__ __forceinline__ void warp_store_transposed(const T (&x)[VT], T* scratch, Out out, int count,
                                                      int warp_base) {
  using store = cub::WarpStore<T, VT, cub::WARP_STORE_TRANSPOSE>;
  auto& temp = *reinterpret_cast<typename store::TempStorage*>(scratch + warp_base);
  T y[VT];  // WarpStore transposes in place
#pragma unroll
  for (int i = 0; i < VT; ++i) y[i] = x[i];
  if constexpr (Full) {
    store(temp).Store(out + warp_base, y);
  } else {
    store(temp).Store(out + warp_base, y, count - warp_base);
  }
}

// Each thread's VT consecutive outputs to out[0, count), coalesced (warp_store_transposed, else by hand).
template <int VT, bool Full, class T, class Out>
__device__ __forceinline__ void store_warp_striped(const T (&x)[VT], T* scratch, Out out, int count, int tid) {
  const int warp_base = (tid / 32) * 32 * VT;
  if constexpr (warp_store_fits<T, VT>) {
    warp_store_transposed<VT, Full>(x, scratch, out, count, warp_base);
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

// store_warp_striped that also samples: out[0] is output element `at`; element
// p with p % 32 == 0 goes to samples[p / 32] (samples may be null). Misaligned
// warps store along 32-aligned segments (straddling: +0.14 ms a 4-way pass at
// 2^28, H100); apart since it slowed the other callers (docs/cuda-merge-sort.md).
template <int VT, bool Full, class T, class Out>
__device__ __forceinline__ void store_warp_striped_sampled(const T (&x)[VT], T* scratch, Out out, int count, int tid,
                                                           T* samples, index_t at) {
  const int warp_base = (tid / 32) * 32 * VT;
  const int lane = tid % 32;
  const int lead = static_cast<int>((at + warp_base) % 32);
  if constexpr (warp_store_fits<T, VT>) {
    if (lead == 0) warp_store_transposed<VT, Full>(x, scratch, out, count, warp_base);
  }
  if (lead != 0 || !warp_store_fits<T, VT>) {
    // By hand, along 32-aligned segments.
#pragma unroll
    for (int i = 0; i < VT; ++i) scratch[warp_base + VT * lane + i] = x[i];
    __syncwarp();
#pragma unroll
    for (int k = 0; k <= VT; ++k) {
      const int p = 32 * k + lane - lead;  // in the warp's outputs
      const int j = warp_base + p;
      if (p >= 0 && p < 32 * VT && (Full || j < count)) out[j] = scratch[j];
    }
  }
  if (samples != nullptr) {
    // The slice holds the warp's outputs in order: sample s is element 32 s + first.
    const int first = (32 - lead) % 32;
    const int left = (Full || count - warp_base >= 32 * VT ? 32 * VT : count - warp_base) - first;
    const int taken = left <= 0 ? 0 : (left + 31) / 32;
    __syncwarp();
    for (int k = lane; k < taken; k += 32) {
      samples[(at + warp_base + first) / 32 + k] = scratch[warp_base + 32 * k + first];
    }
  }
}

// A merge tile's shared memory (merge, the sort's passes): keys, and for merge_by_key values and source
// offsets. Bulk-staged keys keep their 16-byte line offsets (bulk_ranges_bytes),
// barrier last. Keys-only: NV + 1 slots for side_key's read past the end; with
// values, NV (walks_past_end; NV + 1 made pair passes spill, docs/cuda-merge-sort.md).
template <class K, class V, bool WithValues, int NV, int StagedRanges = 0>
struct merge_layout {
  static constexpr bool with_values = WithValues;
  static constexpr std::size_t keys = 0;
  static constexpr std::size_t vals =
      StagedRanges > 0 ? bulk_ranges_bytes<K>(NV, StagedRanges)
                       : align_up((NV + (WithValues ? 0 : 1)) * sizeof(K), 16);
  static constexpr std::size_t sources = vals + (WithValues ? align_up(NV * sizeof(V), 16) : 0);
  static constexpr std::size_t barrier = align_up(sources + (WithValues ? NV * sizeof(tile_offset) : 0), 16);
  static constexpr std::size_t bytes = barrier + (StagedRanges > 0 ? 16 : 0);
};

// This compilation pass's SM limits (policies/cuda.hpp).
inline constexpr tuning::sm_limits sm_here = tuning::here.sm;
inline constexpr int sm_max_threads = sm_here.threads;

}  // namespace libmerge::detail::cuda_backend
