// CUDA sorted_search and sorted_equality_count (SortedSearch in seeds/003).
//
// A search with bounds::lower is a merge of A and B in which A wins ties: the
// number of B elements that precede a_i in that merge is a_i's lower bound in
// B, and the number of A elements that precede b_j is b_j's upper bound in A.
// So the dense path is the merge's own machinery with a different ending:
//   1. partition_kernel (partition.cuh) finds where the merge path crosses
//      every tile boundary, and whether those crossings are in order (they
//      are unless the input is unsorted or the comparator broken);
//   2. search_kernel loads a tile's ranges of A and B into shared memory (plus
//      one halo element on each side, for the match tests that need the
//      neighbour of a range), walks the tile's merge per thread and, instead of
//      keys, records each element's bound and match flag; the tile then writes
//      them with coalesced stores and adds its match counts (cub::BlockReduce,
//      one atomic per tile) to two device counters.
// bounds::upper is the same search with A and B swapped (A's upper bound into
// B and B's lower bound into A are what lower bounds give for (B, A)).
//
// Sparse searches stream a long side for a few results; when only one side
// writes and the other is sparse_ratio times longer, needle_search_kernel
// instead searches each needle in the whole other side (one needle a thread in
// the tuned line). Keys that are numbers in their natural order are searched
// binary down to a window a few needles wide, then by interpolation, a 64-byte
// block a probe (interpolation_bound); other keys with a 4-ary search while
// the needles are dense enough to share lines (below quaternary_below), else
// a binary one, as thrust::lower_bound does.
#pragma once

#include <cuda_runtime_api.h>

#include <cub/block/block_reduce.cuh>
#include <cuda/std/functional>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/detail/dispatch.hpp"
#include "../../libmerge/search_tags.hpp"
#include "../../policies/cuda.hpp"
#include "../engine/bounds.hpp"
#include "cta_merge.cuh"
#include "device.cuh"
#include "error.hpp"
#include "iterators.cuh"
#include "launch.cuh"
#include "memory.cuh"
#include "partition.cuh"

namespace libmerge::detail::cuda_backend {

// The geometry of a search: one merge of A with B, each read as its own type,
// so the comparator sees exactly the arguments the serial backend gives it
// (int32 needles in an int64 haystack are not narrowed).
template <class AIt, class BIt>
struct search_merge {
  AIt a_keys;
  BIt b_keys;
  index_t na, nb;
  LIBMERGE_HOST_DEVICE index_t size() const { return na + nb; }
  LIBMERGE_HOST_DEVICE merge_problem problem_at(index_t) const { return {0, na, 0, nb, 0}; }
  LIBMERGE_HOST_DEVICE AIt a_view(index_t i) const { return a_keys + i; }
  LIBMERGE_HOST_DEVICE BIt b_view(index_t i) const { return b_keys + i; }
};

// What A's results are: its search_type's encoding of bound and match, or
// (sorted_equality_count) the number of equal elements in B.
enum class a_writes { search, equal_count };

// Counters of matched elements of A and of B, in device memory.
struct match_counters {
  unsigned long long* a;
  unsigned long long* b;
};

// Shared memory of a search tile: slot 0 for A's halo (the element before the
// tile's range of A), A's range, then B's range (aligned for its type) and
// B's halo (the element after the range). Then one int a tile position holding
// the local bound, with the match flag in bit 31. (Results written over the
// dead keys, which halves the shared memory, need the walk's steps kept in
// registers until a barrier: at 512x15 that spilled with 42 registers.)
template <class TA, class TB, int NV>
struct search_layout {
  static constexpr std::size_t elem = sizeof(TA) > sizeof(TB) ? sizeof(TA) : sizeof(TB);
  static constexpr std::size_t results = align_up((NV + 2) * elem + alignof(TB), 16);
  static constexpr std::size_t bytes = results + align_up(NV * sizeof(int), 16);
  // Byte offset of B's range when A's holds na elements (after A's halo).
  __device__ static std::size_t b_offset(int na) { return align_up((1 + na) * sizeof(TA), alignof(TB)); }
};

constexpr int match_flag = int(0x80000000u);

// Loads a[0, na) and b[0, count - na) striped over the CTA, every load issued
// before the first store. One type: the two ranges are contiguous in shared
// memory and load_tile does it; two types: each side into its own array.
template <int NT, int VT, bool Full, class TA, class TB, class AIt, class BIt>
__device__ __forceinline__ void load_search_tile(AIt a, int na, BIt b, int count, TA* as, TB* bs, int tid) {
  if constexpr (std::is_same_v<TA, TB>) {
    load_tile<NT, VT, Full>(a, na, b, count, as, tid);
  } else {
    TA xa[VT];
    TB xb[VT];
#pragma unroll
    for (int i = 0; i < VT; ++i) {
      const int j = NT * i + tid;
      if (j < na) {
        xa[i] = a[j];
      } else if (Full || j < count) {
        xb[i] = b[j - na];
      }
    }
#pragma unroll
    for (int i = 0; i < VT; ++i) {
      const int j = NT * i + tid;
      if (j < na) {
        as[j] = xa[i];
      } else if (Full || j < count) {
        bs[j - na] = xb[i];
      }
    }
  }
}

// The upper bound of x in hay[0, n), given that hay[from] is equal to x (so
// the bound is past it): galloping, so a run of k equal elements costs
// 2 log2(k) probes. Every probe lies in [from, n).
template <class Hay, class T, class Comp>
__device__ index_t upper_bound_from(Hay hay, index_t from, index_t n, const T& x, Comp& comp) {
  index_t lo = from + 1, step = 1, hi = lo;
  while (hi < n && !comp(x, hay[hi])) {
    lo = hi + 1;
    step *= 2;
    hi = lo + step - 1;
  }
  return bound_within<true>(hay, lo, hi < n ? hi : n, x, comp);
}

// Adds a tile's match counts to the counters, one atomic per counter a tile.
// A tile holds at most 65535 elements, so both sums fit 16 bits of one
// unsigned int and one BlockReduce does both.
template <int NT, bool CountA, bool CountB>
__device__ __forceinline__ void add_matches(unsigned matches_a, unsigned matches_b, match_counters counters, int tid) {
  if constexpr (CountA || CountB) {
    using reduce = cub::BlockReduce<unsigned, NT>;
    __shared__ typename reduce::TempStorage storage;
    const unsigned total = reduce(storage).Sum(matches_a | (matches_b << 16));
    if (tid == 0) {
      if (CountA && (total & 0xffff) != 0) atomicAdd(counters.a, static_cast<unsigned long long>(total & 0xffff));
      if (CountB && (total >> 16) != 0) atomicAdd(counters.b, static_cast<unsigned long long>(total >> 16));
    }
  }
}

// B read at global position k: from the tile's copy where it has one (its
// range and halo start at global position b0), else from global memory.
template <class TB, class BIt>
struct tile_or_global {
  const TB* tile;
  int valid;
  index_t b0;
  BIt global;
  __device__ TB operator[](index_t k) const { return k - b0 < valid ? tile[k - b0] : static_cast<TB>(global[k]); }
};

template <class It>
using out_value_t = typename std::iterator_traits<It>::value_type;

// Coalesced stores of the tile's results: positions [0, na) are A's,
// [na, count) B's. Matches are counted here, once a position.
template <class Box, bool Full, search_type TypeA, search_type TypeB, a_writes AWrites, class AIt, class BIt,
          class AOut, class BOut, class Comp>
__device__ __forceinline__ void store_search_tile(const search_merge<AIt, BIt>& g, const tile_range& r,
                                                  const value_of<AIt>* as, int na, const value_of<BIt>* bs, int nb,
                                                  int count, int b_valid, const int* results, AOut a_out,
                                                  BOut b_out, match_counters counters, Comp& comp, int tid) {
  using TB = value_of<BIt>;
  constexpr bool a_writes_any = writes_output(TypeA) || AWrites == a_writes::equal_count;
  unsigned matches_a = 0, matches_b = 0;
#pragma unroll
  for (int i = 0; i < Box::vt; ++i) {
    const int j = Box::nt * i + tid;
    if (!Full && j >= count) break;
    if (j < na ? !a_writes_any : !writes_output(TypeB)) continue;  // a side that writes nothing
    const int res = results[j];
    const bool m = res < 0;
    // For sorted input every position was written once. The clamp is for
    // input that is not sorted (or a comparator that is not a strict weak
    // order), where the threads' paths may miss or overlap positions: the
    // results are then unspecified but every bound stays within the tile.
    const int other = j < na ? nb : na;
    const int local = (res & ~match_flag) < other ? (res & ~match_flag) : other;
    if (j < na) {
      if constexpr (AWrites == a_writes::equal_count) {
        // Equal elements of B start at the lower bound; the run may go on past
        // the tile, where the search reads global memory.
        const index_t lb = r.b0 + local;
        index_t n_equal = 0;
        if (m && lb < g.nb) {
          const tile_or_global<TB, BIt> hay{bs, b_valid, r.b0, g.b_keys};
          n_equal = upper_bound_from(hay, lb, g.nb, as[j], comp) - lb;
        }
        a_out[r.a0 + j] = static_cast<out_value_t<AOut>>(n_equal);
      } else if constexpr (writes_output(TypeA)) {
        a_out[r.a0 + j] = encode_search_result<TypeA, out_value_t<AOut>>(r.b0 + local, m);
        matches_a += m;
      }
    } else if constexpr (writes_output(TypeB)) {
      b_out[r.b0 + (j - na)] = encode_search_result<TypeB, out_value_t<BOut>>(r.a0 + local, m);
      matches_b += m;
    }
  }
  add_matches<Box::nt, writes_match(TypeA), writes_match(TypeB)>(matches_a, matches_b, counters, tid);
}

// The dense search of one tile: A's lower bounds into B, B's upper bounds
// into A: the tile (and its halo) into shared memory, the merge walk, the
// stores (store_search_tile).
template <class Box, bool Full, search_type TypeA, search_type TypeB, a_writes AWrites, class AIt, class BIt,
          class AOut, class BOut, class Comp>
__device__ __forceinline__ void search_tile(const search_merge<AIt, BIt>& g, const tile_range& r, bool ordered,
                                            unsigned char* smem, AOut a_out, BOut b_out, match_counters counters,
                                            Comp& comp) {
  using TA = value_of<AIt>;
  using TB = value_of<BIt>;
  using layout = search_layout<TA, TB, Box::nv>;
  constexpr bool a_writes_any = writes_output(TypeA) || AWrites == a_writes::equal_count;
  constexpr bool a_needs_match = writes_match(TypeA) || AWrites == a_writes::equal_count;
  constexpr bool b_needs_match = writes_match(TypeB);
  const int tid = static_cast<int>(threadIdx.x);

  const int na = static_cast<int>(r.a1 - r.a0);
  const int count = r.count();
  const int nb = count - na;
  // Halo elements: B's element after the range decides the match of the last
  // A elements, A's element before the range that of the first B elements.
  const int halo_a = b_needs_match && r.a0 > 0 ? 1 : 0;
  const int halo_b = a_needs_match && r.b1 < g.nb ? 1 : 0;
  TA* as = reinterpret_cast<TA*>(smem) + 1;
  TB* bs = reinterpret_cast<TB*>(smem + layout::b_offset(na));
  int* results = reinterpret_cast<int*>(smem + layout::results);

  const int b_valid = nb + halo_b;  // B's elements a match test may read
  if (!ordered) {
    for (int j = tid; j < count; j += Box::nt) results[j] = 0;
  } else {
    if (tid == 0 && halo_a) as[-1] = g.a_keys[r.a0 - 1];
    if (tid == Box::nt - 1 && halo_b) bs[nb] = g.b_keys[r.b1];
    load_search_tile<Box::nt, Box::vt, Full>(g.a_keys + r.a0, na, g.b_keys + r.b0, count, as, bs, tid);
    __syncthreads();

    // The tile's merge (A first on ties): results[a] = b (and match_flag)
    // for A's element a, results[na + b] = a for B's element b. Each thread
    // walks its VT steps, bounded by where the next thread starts: the walks
    // then cover the tile's positions exactly once whatever the comparator
    // does. Starts out of order (unsorted input) make the tile write no match
    // and bound 0 instead. Keys are read only at in-range offsets; as[-1]
    // stands in where A has no element before. (Inline here: as a function of
    // its own, with `starts` in it, nvcc 13.0 compiled 60 of the search
    // kernels differently.)
    const int diag = Box::vt * tid < count ? Box::vt * tid : count;
    const int diag_end = Box::vt * (tid + 1) < count ? Box::vt * (tid + 1) : count;
    int a = merge_path<bounds::lower, int>(as, na, bs, nb, diag, comp);
    int b = diag - a;
    __shared__ int starts[Box::nt];
    starts[tid] = a;
    __syncthreads();
    const int a_end = tid + 1 < Box::nt ? starts[tid + 1] : na;
    const int b_end = diag_end - a_end;
    if (__syncthreads_or(a_end < a || b_end < b)) {
      for (int j = tid; j < count; j += Box::nt) results[j] = 0;
    } else {
      TA a_key = as[a < na ? a : -1];
      TB b_key = bs[b < b_valid ? b : 0];
      TA prev_a = as[a - 1];
#pragma unroll
      for (int i = 0; i < Box::vt; ++i) {
        if (!Full && diag + i >= diag_end) break;
        const bool take_a = b >= b_end || (a < a_end && !comp(b_key, a_key));
        if (take_a) {
          if constexpr (a_writes_any) {
            const bool m = a_needs_match && b < b_valid && !comp(a_key, b_key);
            results[a] = b | (m ? match_flag : 0);
          }
          prev_a = a_key;
          ++a;
          a_key = as[a < na ? a : -1];
        } else {
          if constexpr (writes_output(TypeB)) {
            const bool m = b_needs_match && (a > 0 || halo_a) && !comp(prev_a, b_key);
            results[na + b] = a | (m ? match_flag : 0);
          }
          ++b;
          b_key = bs[b < b_valid ? b : 0];
        }
      }
    }
  }
  __syncthreads();
  store_search_tile<Box, Full, TypeA, TypeB, AWrites>(g, r, as, na, bs, nb, count, b_valid, results, a_out, b_out,
                                                      counters, comp, tid);
}

// Registers decide how many CTAs share an SM: three quarters of a full SM, as
// many as the shared memory of a 512x15 tile allows (at a full SM's 32
// registers the match modes spill).
template <class Box>
inline constexpr int search_ctas_per_sm = Box::nt <= 512 ? 1536 / Box::nt : 1;

template <class Box, search_type TypeA, search_type TypeB, a_writes AWrites, class AIt, class BIt, class AOut,
          class BOut, class Comp>
__global__ void __launch_bounds__(Box::nt, search_ctas_per_sm<Box>)
    search_kernel(search_merge<AIt, BIt> g, const index_t* mp, const unsigned char* out_of_order, int order_blocks,
                  AOut a_out, BOut b_out, match_counters counters, match_counts* zero, Comp comp) {
  extern __shared__ __align__(16) unsigned char smem[];
  wait_for_prerequisite_grid();  // the partitions are complete from here on
  const index_t tile = blockIdx.x;
  if (zero != nullptr && tile == 0 && threadIdx.x == 0) *zero = match_counts{};  // counts of a search without matches
  // Partitions out of order (unsorted input, or a comparator that is no
  // strict weak order) make tiles overlap and leave gaps. Then tile t takes
  // positions [t * nv, (t + 1) * nv) of A's outputs followed by B's and writes
  // no match and the bound of its first position: every output is written
  // once, with a value in range, whatever the comparator did.
  int bad = 0;
  for (int i = static_cast<int>(threadIdx.x); i < order_blocks; i += Box::nt) bad |= out_of_order[i];
  const bool ordered = !__syncthreads_or(bad);
  tile_range r;
  if (ordered) {
    r = find_tile_range(g, tile, Box::nv, mp[tile], mp[tile + 1]);
  } else {
    const index_t d0 = tile * Box::nv, d1 = d0 + Box::nv < g.na + g.nb ? d0 + Box::nv : g.na + g.nb;
    r.a0 = d0 < g.na ? d0 : g.na;
    r.a1 = d1 < g.na ? d1 : g.na;
    r.b0 = d0 - r.a0;
    r.b1 = d1 - r.a1;
  }
  if (r.count() == Box::nv) {
    search_tile<Box, true, TypeA, TypeB, AWrites>(g, r, ordered, smem, a_out, b_out, counters, comp);
  } else {
    search_tile<Box, false, TypeA, TypeB, AWrites>(g, r, ordered, smem, a_out, b_out, counters, comp);
  }
}

// K searches in lockstep: pos[k] becomes the first position in hay[lo, hi)
// whose element is not before x[k] (Upper: is after x[k]), or hi. The
// branch-free form halves the same length for every needle, so the K loads of
// a step are independent and in flight together (a plain binary search per
// needle has one load in flight a thread).
template <bool Upper, int K, class Index, class Hay, class T, class Comp>
__device__ __forceinline__ void bounds_in_lockstep(Hay hay, Index lo, Index hi, const T (&x)[K], Index (&pos)[K],
                                                   Comp& comp) {
  const auto before = [&](Index p, const T& v) { return Upper ? !comp(v, hay[p]) : comp(hay[p], v); };
#pragma unroll
  for (int k = 0; k < K; ++k) pos[k] = lo;
  Index n = hi - lo;
  if (n <= 0) return;
  while (n > 1) {
    const Index half = n / 2;
#pragma unroll
    for (int k = 0; k < K; ++k) pos[k] = before(pos[k] + half, x[k]) ? pos[k] + half : pos[k];
    n -= half;
  }
#pragma unroll
  for (int k = 0; k < K; ++k) pos[k] += before(pos[k], x[k]) ? 1 : 0;
}

// The same with three probes a step (a 4-ary search): a quarter of the length
// is left after each step, so the chain of dependent loads is half as long,
// for 1.5 times the loads. Invariant: pos[k]'s answer lies in
// [pos[k], pos[k] + len[k]]; every probe lies in [lo, hi).
template <bool Upper, int K, class Index, class Hay, class T, class Comp>
__device__ __forceinline__ void bounds_in_lockstep_4(Hay hay, Index lo, Index hi, const T (&x)[K],
                                                     Index (&pos)[K], Comp& comp) {
  const auto before = [&](Index p, const T& v) { return Upper ? !comp(v, hay[p]) : comp(hay[p], v); };
  Index len[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    pos[k] = lo;
    len[k] = hi - lo;
  }
  if (hi <= lo) return;
  Index longest = hi - lo;
  while (longest > 3) {
    longest = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const Index q = len[k] / 4;
      if (q > 0) {
        const int c = int(before(pos[k] + q, x[k])) + int(before(pos[k] + 2 * q, x[k])) +
                      int(before(pos[k] + 3 * q, x[k]));
        pos[k] += c * q;
        len[k] = c == 3 ? len[k] - 3 * q : q;
      }
      longest = len[k] > longest ? len[k] : longest;
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    while (len[k] > 1) {
      const Index half = len[k] / 2;
      pos[k] = before(pos[k] + half, x[k]) ? pos[k] + half : pos[k];
      len[k] -= half;
    }
    if (len[k] == 1) pos[k] += before(pos[k], x[k]) ? 1 : 0;
  }
}

// Interpolation needs keys that are numbers and a comparator that orders them
// as numbers (or in reverse): then where x falls between two keys of the
// haystack says roughly where its bound is. (Thrust's less and greater are
// cuda::std's.)
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

template <class Comp, class Needle, class Hay>
inline constexpr bool interpolable_v = numeric_order<Comp>::value && is_number_v<Needle> && is_number_v<Hay>;

// Probes of the interpolation phase before the search falls back to binary.
// Three find the bound of uniform int32 keys in as many 64-byte blocks as
// four (simulated: 1.31 blocks a needle at |A| = |B|/64, against 2.34 for a
// binary search) and bound what skewed keys can waste.
inline constexpr int interpolation_probes = 3;

// The first position in hay[0, nh) whose element is not before x (Upper: is
// after x), or nh: a binary search down to a window of `window` positions,
// then up to interpolation_probes probes where interpolation between the
// window's end keys puts the bound, each reading the two ends of the 64-byte
// block around that guess (one DRAM fetch), then a binary search of what is
// left (inside the block: L1 hits).
// Why: at |A| = |B|/64 a binary search reads about 2.3 blocks of 64 bytes a
// needle, and DRAM's random-access rate bounds it (thrust::lower_bound ties
// the streaming search there); on keys spread evenly the guess lands in or
// beside the right block. The levels above the window are shared by
// neighbouring needles (their blocks are read once, for all of them).
// Skewed keys only cost probes: a probe that misses still moves one end of
// the window, the guess is clamped inside it, and a needle equal to the key at
// the window's end (a run of equal keys the guess cannot see into) is searched
// binary from there (after one probe, if that end came from a probe). Invariant: the bound lies in [lo, hi]; hay[lo
// - 1] (vlo, if lo > 0) is before x and hay[hi] (vhi, if hi < nh) is not.
// Every load lies in [0, nh) whatever the keys, sorted or not.
// b - a as a float, for a guess: integers are subtracted in their common
// type made unsigned (no difference overflows; int64 keys near 2^62 that
// differ by 1 give 1), floating point in its own type (an overflow to
// infinity only spoils the guess).
template <class A, class B>
__device__ __forceinline__ float key_distance(const A& a, const B& b) {
  using C = std::common_type_t<A, B>;
  const C ca = static_cast<C>(a), cb = static_cast<C>(b);
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return cb >= ca ? static_cast<float>(static_cast<U>(static_cast<U>(cb) - static_cast<U>(ca)))
                    : -static_cast<float>(static_cast<U>(static_cast<U>(ca) - static_cast<U>(cb)));
  } else {
    return static_cast<float>(cb - ca);
  }
}

template <bool Upper, class Index, class Hay, class T, class Comp>
__device__ __forceinline__ Index interpolation_bound(Hay hay, Index nh, const T& x, Index window, int phase,
                                                     Comp& comp) {
  using H = value_of<Hay>;
  // Keys a 64-byte block; phase: the haystack's offset from a block boundary
  // in keys, so that a probe's two loads share one DRAM fetch.
  constexpr Index block = sizeof(H) <= 64 && 64 % sizeof(H) == 0 ? Index(64 / sizeof(H)) : Index(1);
  const auto before = [&](const H& v) { return Upper ? !comp(x, v) : comp(v, x); };
  Index lo = 0, hi = nh;
  H vlo{}, vhi{};
  while (hi - lo >= window) {
    const Index mid = lo + (hi - lo) / 2;
    const H v = hay[mid];
    if (before(v)) {
      lo = mid + 1;
      vlo = v;
    } else {
      hi = mid;
      vhi = v;
    }
  }
  if (lo > 0 && hi < nh) {
    for (int probe = 0; probe < interpolation_probes && lo < hi; ++probe) {
      // x lies between the keys at lo - 1 and hi: f of the way (a float is
      // exact enough for a guess). f is 0 or 1 where x equals an end's key
      // (its run may go on past the guess), and NaN (unordered keys, a span
      // that overflowed) is taken as 0.
      float f = __fdividef(key_distance(vlo, x), key_distance(vlo, vhi));
      const bool at_end = !(f > 0.0f && f < 1.0f);
      // Equal to an end's key before any probe: the binary phase ended in
      // x's run, which may fill the window (keys in long runs); binary.
      if (at_end && probe == 0) break;
      f = f > 0.0f ? (f < 1.0f ? f : 1.0f) : 0.0f;
      Index g = lo + static_cast<Index>(f * static_cast<float>(hi - lo));
      g = g < hi ? g : hi - 1;
      // The block around g, within [lo, hi): its first and last key. (No
      // sum here exceeds nh + 2 * block: int positions are used below 2^31 -
      // 256 keys.)
      const Index b0 = g - (g % block + phase) % block;
      const Index s = b0 > lo ? b0 : lo;
      const Index e = (b0 + block < hi ? b0 + block : hi) - 1;
      const H vs = hay[s];
      const H ve = hay[e];
      if (!before(vs)) {
        hi = s;
        vhi = vs;
      } else if (before(ve)) {
        lo = e + 1;
        vlo = ve;
      } else {
        lo = s + 1;  // the bound is in (s, e]: binary search there
        hi = e;
        break;
      }
      if (at_end) break;
    }
  }
  return bound_within<Upper>(hay, lo, hi, x, comp);
}

// The haystack's offset from a 64-byte boundary, in keys (0 for iterators
// that are no pointer, or keys whose size does not divide 64).
template <class Hay>
__device__ __forceinline__ int block_phase(Hay hay) {
  using H = value_of<Hay>;
  if constexpr (std::is_pointer_v<Hay> && sizeof(H) <= 64 && 64 % sizeof(H) == 0) {
    const auto address = reinterpret_cast<std::uintptr_t>(hay);
    return address % sizeof(H) == 0 ? static_cast<int>(address % 64 / sizeof(H)) : 0;
  } else {
    return 0;
  }
}

// How the per-needle search probes.
enum class needle_probe { binary, quaternary, interpolation };

// A needle box may fix how its searches probe, whatever the tuning line
// says (perf/bench_search.cu's sweeps compare the probes by such boxes): a
// static member `probe_4ary = true` (always 4-ary, bounds_in_lockstep_4) or
// `interpolate_from` (interpolation from that many needle spacings on; 0:
// never). A plain launch_box leaves both to the line.
template <class Box, class = void>
struct box_probes_4ary : std::false_type {};
template <class Box>
struct box_probes_4ary<Box, std::void_t<decltype(Box::probe_4ary)>> : std::bool_constant<Box::probe_4ary> {};
template <class Box, class = void>
struct box_interpolates_from : std::integral_constant<int, -1> {};  // -1: the line's
template <class Box>
struct box_interpolates_from<Box, std::void_t<decltype(Box::interpolate_from)>>
    : std::integral_constant<int, Box::interpolate_from> {};

// The sparse search: each needle is searched in the whole haystack, as
// thrust::lower_bound does, with the match flags, counts and equality runs of
// sorted search. A thread takes vt consecutive needles and searches them in
// lockstep, binary or 4-ary: sorted needles that are neighbours take the same
// path through the haystack until its last levels, so one thread's vt loads
// of a step mostly fall in the same cache line, and the loads of different
// steps overlap; or (needle_probe::interpolation) one after the other with
// interpolation_bound, binary down to `window` positions. (Bracketing each
// tile's needles first, with a global search for its first and last needle,
// was measured slower on an H100: that search is a chain of dependent loads in
// front of the tile's own; tiles of 7680 needles, 2^28 int32 keys with 1/4096
// of them needles: 0.16 ms, thrust::lower_bound 0.033 ms.)
// Index is int when the haystack is shorter than 2^31 (a third fewer
// instructions a search step than 64-bit positions).
template <class Box, needle_probe Probe, bool Upper, search_type Type, a_writes Writes, class Index, class NIt,
          class HIt, class Out, class Comp>
__global__ void __launch_bounds__(Box::nt)
    needle_search_kernel(NIt needles, index_t nn, HIt hay, Index nh, Index window, Out out,
                         unsigned long long* matches, match_counts* zero, Comp comp) {
  using T = value_of<NIt>;
  const int tid = static_cast<int>(threadIdx.x);
  if (zero != nullptr && blockIdx.x == 0 && tid == 0) *zero = match_counts{};  // counts of a search without matches
  const index_t base = static_cast<index_t>(blockIdx.x) * Box::nv + static_cast<index_t>(tid) * Box::vt;
  T x[Box::vt];
#pragma unroll
  for (int k = 0; k < Box::vt; ++k) {
    // Past the needles, a lane searches the last needle again: lanes stay in
    // step, nothing is written for them.
    const index_t j = base + k;
    x[k] = static_cast<T>(needles[j < nn ? j : nn - 1]);
  }
  Index p[Box::vt];
  if constexpr (Probe == needle_probe::interpolation) {
    const int phase = block_phase(hay);
#pragma unroll
    for (int k = 0; k < Box::vt; ++k) p[k] = interpolation_bound<Upper>(hay, nh, x[k], window, phase, comp);
  } else if constexpr (Probe == needle_probe::quaternary) {
    bounds_in_lockstep_4<Upper>(hay, Index(0), nh, x, p, comp);
  } else {
    bounds_in_lockstep<Upper>(hay, Index(0), nh, x, p, comp);
  }
  unsigned found = 0;
#pragma unroll
  for (int k = 0; k < Box::vt; ++k) {
    const index_t j = base + k;
    if (j >= nn) break;
    if constexpr (Writes == a_writes::equal_count) {
      const bool m = p[k] < nh && !comp(x[k], hay[p[k]]);
      out[j] = static_cast<out_value_t<Out>>(m ? upper_bound_from(hay, p[k], nh, x[k], comp) - p[k] : 0);
    } else {
      bool m = false;
      if constexpr (writes_match(Type)) {
        m = Upper ? p[k] > 0 && !comp(hay[p[k] - 1], x[k]) : p[k] < nh && !comp(x[k], hay[p[k]]);
        found += m;
      }
      out[j] = encode_search_result<Type, out_value_t<Out>>(p[k], m);
    }
  }
  add_matches<Box::nt, writes_match(Type), false>(found, 0, match_counters{matches, nullptr}, tid);
}

// The counts start at zero. Where tiles add matches to them, a memset must
// come first; a search that reports no matches has zero counts, which its
// one kernel writes instead (block 0): a memset is a launch of its own, the
// larger part of a small sparse search (H200, 256 needles in 2^20 keys:
// 0.0136 ms with it, against 0.0079 for the form without counts). Returns
// what the kernel of `grid` blocks must zero (null: nothing).
template <search_type TypeA, search_type TypeB>
match_counts* counts_to_zero(match_counts* counts, index_t grid, cudaStream_t stream, const char* algorithm) {
  constexpr bool counts_matches = writes_match(TypeA) || writes_match(TypeB);
  if (counts == nullptr) return nullptr;  // sorted_equality_count counts no matches
  if (!counts_matches && grid > 0) return counts;
  check_cuda(cudaMemsetAsync(counts, 0, sizeof(match_counts), stream), algorithm, "cudaMemsetAsync(counts)");
  return nullptr;
}

// How the per-needle search probes: numbers in their natural order binary
// down to a window of interpolate_from needle spacings, then by
// interpolation. Otherwise denser needles share more of each other's lines:
// a 4-ary search there halves the chain of dependent loads (a box with
// probe_4ary: always 4-ary). Interpolation pays from quaternary_below on
// (H200, 2^28 int32 keys: 0.181 against 0.246 ms for 4-ary at |B|/64, 0.53
// against 0.42 at |B|/16, where needles share their blocks); it replaces the
// binary search, whose kernel is then not instantiated (Interpolate).
struct needle_plan {
  needle_probe probe;
  index_t window;  // the binary phase runs while the window holds more keys
};
template <class NeedleBox, int From, bool Interpolate>
needle_plan plan_needles(index_t needles, index_t hay_size, int quaternary_below) {
  const double ratio = static_cast<double>(hay_size) / static_cast<double>(needles);
  const bool forced = box_probes_4ary<NeedleBox>::value || box_interpolates_from<NeedleBox>::value >= 0;
  const needle_probe probe = box_probes_4ary<NeedleBox>::value || (!forced && ratio < quaternary_below)
                                 ? needle_probe::quaternary
                             : Interpolate ? needle_probe::interpolation
                                           : needle_probe::binary;
  // The window: at least 64 keys (a block of the narrowest keys is 16), and
  // never 0.
  const double wanted = static_cast<double>(From) * ratio;
  const index_t window = wanted < 64.0 ? 64 : wanted > static_cast<double>(hay_size) ? hay_size + 1
                                                                                      : static_cast<index_t>(wanted);
  return {probe, window};
}

// The sparse search: one thread a needle (the side that writes; B's results
// are upper bounds into A), a search of the other side each.
template <class NeedleBox, search_type TypeA, search_type TypeB, a_writes AWrites, int InterpolateFrom, bool ASide,
          class AIt, class BIt, class AOut, class BOut, class Comp>
void launch_needle_search(const device_info& dev, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                          match_counters counters, match_counts* counts, int quaternary_below, Comp comp,
                          cudaStream_t stream, const char* algorithm) {
  const index_t needles = ASide ? na : nb;
  const index_t tiles = (needles + NeedleBox::nv - 1) / NeedleBox::nv;
  if (tiles > max_grid_ctas) throw_too_many_tiles(algorithm);
  match_counts* const zero = counts_to_zero<TypeA, TypeB>(counts, tiles, stream, algorithm);
  const index_t hay_size = ASide ? nb : na;
  using NeedleKey = value_of<std::conditional_t<ASide, AIt, BIt>>;
  using HayKey = value_of<std::conditional_t<ASide, BIt, AIt>>;
  constexpr int from =
      box_interpolates_from<NeedleBox>::value >= 0 ? box_interpolates_from<NeedleBox>::value : InterpolateFrom;
  constexpr bool interpolate =
      interpolable_v<Comp, NeedleKey, HayKey> && !box_probes_4ary<NeedleBox>::value && from > 0;
  const needle_plan plan = plan_needles<NeedleBox, from, interpolate>(needles, hay_size, quaternary_below);
  auto run = [&](auto index, auto how) {
    using Index = decltype(index);
    constexpr needle_probe P = decltype(how)::value;
    const Index w = static_cast<Index>(plan.window);
    if constexpr (ASide) {
      launch(needle_search_kernel<NeedleBox, P, false, TypeA, AWrites, Index, AIt, BIt, AOut, Comp>, tiles,
             NeedleBox::nt, 0, stream, false, dev, algorithm, "needle_search_kernel", a, na, b,
             static_cast<Index>(nb), w, a_out, counters.a, zero, comp);
    } else {
      launch(needle_search_kernel<NeedleBox, P, true, TypeB, a_writes::search, Index, BIt, AIt, BOut, Comp>, tiles,
             NeedleBox::nt, 0, stream, false, dev, algorithm, "needle_search_kernel", b, nb, a,
             static_cast<Index>(na), w, b_out, counters.b, zero, comp);
    }
  };
  auto run_probe = [&](auto index) {
    if (plan.probe == needle_probe::quaternary) {
      run(index, std::integral_constant<needle_probe, needle_probe::quaternary>{});
    } else if constexpr (interpolate) {
      run(index, std::integral_constant<needle_probe, needle_probe::interpolation>{});
    } else {
      run(index, std::integral_constant<needle_probe, needle_probe::binary>{});
    }
  };
  // int positions (a third fewer instructions a search step) below 2^31
  // keys, less a margin for the interpolation's block arithmetic.
  if (hay_size < 0x7fffff00) {
    run_probe(int{});
  } else {
    run_probe(index_t{});
  }
  if (debug_enabled()) {
    std::fprintf(stderr, "libmerge::%s: per-needle %s search of %lld needles in %lld, nt=%d vt=%d", algorithm,
                 plan.probe == needle_probe::interpolation ? "interpolation"
                 : plan.probe == needle_probe::quaternary  ? "4-ary"
                                                           : "binary",
                 static_cast<long long>(needles), static_cast<long long>(hay_size), NeedleBox::nt, NeedleBox::vt);
    if (plan.probe == needle_probe::interpolation) {
      std::fprintf(stderr, ", binary down to %lld keys", static_cast<long long>(plan.window));
    }
    std::fprintf(stderr, "\n");
  }
}

// The dense search: Merge Path partitions, then a tile of both inputs a CTA
// (search_kernel).
template <class Box, search_type TypeA, search_type TypeB, a_writes AWrites, class Policy, class AIt, class BIt,
          class AOut, class BOut, class Comp>
void launch_tile_search(const Policy& policy, const device_info& dev, AIt a, index_t na, BIt b, index_t nb,
                        AOut a_out, BOut b_out, match_counters counters, match_counts* counts, Comp comp,
                        const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  using G = search_merge<AIt, BIt>;
  const G g{a, b, na, nb};
  const index_t num_tiles = (na + nb + Box::nv - 1) / Box::nv;
  if (num_tiles > max_grid_ctas) throw_too_many_tiles(algorithm);
  auto kernel = search_kernel<Box, TypeA, TypeB, AWrites, AIt, BIt, AOut, BOut, Comp>;
  const std::size_t smem = search_layout<value_of<AIt>, value_of<BIt>, Box::nv>::bytes;
  prepare_shared_memory(kernel, smem, dev, Box::nt, Box::vt, algorithm);
  // The partitions, then one byte a block of partitions: out of order?
  const index_t order_blocks = plan_partitions(num_tiles + 1, true).blocks;
  const std::size_t temp_bytes =
      sizeof(index_t) * static_cast<std::size_t>(num_tiles + 1) + static_cast<std::size_t>(order_blocks);
  temporary_storage<typename Policy::allocator_type> temp(policy.allocator(), stream, temp_bytes, algorithm);
  index_t* mp = temp.template as<index_t>();
  unsigned char* out_of_order = reinterpret_cast<unsigned char*>(mp + num_tiles + 1);
  match_counts* const zero = counts_to_zero<TypeA, TypeB>(counts, num_tiles, stream, algorithm);
  launch_partitions<bounds::lower>(g, Box::nv, num_tiles, mp, comp, stream, dev, algorithm, out_of_order);
  launch(kernel, num_tiles, Box::nt, smem, stream, true, dev, algorithm, "search_kernel", g,
         static_cast<const index_t*>(mp), static_cast<const unsigned char*>(out_of_order),
         static_cast<int>(order_blocks), a_out, b_out, counters, zero, comp);
  if (debug_enabled()) {
    print_plan<Box>(dev, algorithm, "merge-path search",
                    kernel_arch(reinterpret_cast<const void*>(kernel), dev, algorithm),
                    std::is_same_v<typename Policy::box_type, tuned_launch_box>, num_tiles, temp_bytes, smem);
  }
}

// Launches one search (bounds::lower; the caller swaps the sides for upper)
// with launch box Box: sparse (a thread a needle) where only one side writes
// and the other is sparse_ratio times longer, else dense (tiles). counts
// (device memory) receives the match counts; it is zeroed on the stream only
// once nothing can fail before the kernels run.
template <class Box, class NeedleBox, search_type TypeA, search_type TypeB, a_writes AWrites, int InterpolateFrom,
          class Policy, class AIt, class BIt, class AOut, class BOut, class Comp>
void launch_search(const Policy& policy, const device_info& dev, AIt a, index_t na, BIt b, index_t nb, AOut a_out,
                   BOut b_out, match_counters counters, match_counts* counts, int sparse_ratio,
                   int quaternary_below, Comp comp, const char* algorithm) {
  constexpr bool a_side = writes_output(TypeA) || AWrites == a_writes::equal_count;
  constexpr bool b_side = writes_output(TypeB);
  if constexpr (!a_side && !b_side) {
    counts_to_zero<TypeA, TypeB>(counts, 0, policy.stream(), algorithm);
  } else {
    const bool sparse_a = a_side && !b_side && static_cast<double>(na) * sparse_ratio <= static_cast<double>(nb);
    const bool sparse_b = !a_side && b_side && static_cast<double>(nb) * sparse_ratio <= static_cast<double>(na);
    if (sparse_a || sparse_b) {
      launch_needle_search<NeedleBox, TypeA, TypeB, AWrites, InterpolateFrom, a_side>(
          dev, a, na, b, nb, a_out, b_out, counters, counts, quaternary_below, comp, policy.stream(), algorithm);
    } else {
      launch_tile_search<Box, TypeA, TypeB, AWrites>(policy, dev, a, na, b, nb, a_out, b_out, counters, counts, comp,
                                                     algorithm);
    }
  }
}

// The tuning table of sorted search: line I's box and sparse ratio.
template <class TA, class TB>
struct search_table {
  static constexpr const auto& lines = tuning::search;
  static constexpr std::size_t elem = sizeof(TA) > sizeof(TB) ? sizeof(TA) : sizeof(TB);
  // Keys so large that even one a thread overflows the tile's shared memory
  // (search_layout: the key and an int result an element) get fewer threads
  // too, halving in whole warps, within tuning::tile_smem_portable.
  // (Before, keys above about 448 bytes threw invalid_argument on H100.)
  static constexpr int nt(int line_nt, int vt) {
    int nt = line_nt;
    while (nt > 32 && static_cast<std::size_t>(nt) * static_cast<std::size_t>(vt) * (elem + sizeof(int)) >
                          tuning::tile_smem_portable) {
      nt = (nt / 2 + 31) / 32 * 32;
    }
    return nt;
  }
  template <std::size_t I>
  static constexpr auto boxes() {
    constexpr int vt = tuning::scale_vt(lines[I].vt, 4, elem);
    return std::tuple<launch_box<nt(lines[I].nt, vt), vt>,
                      launch_box<lines[I].needle_nt, lines[I].needle_vt>,
                      std::integral_constant<int, lines[I].sparse_ratio>,
                      std::integral_constant<int, lines[I].quaternary_below>,
                      std::integral_constant<int, lines[I].interpolate_from>>{};
  }
};

template <search_type TypeA, search_type TypeB, a_writes AWrites, class AIt, class BIt, class AOut, class BOut,
          class Comp>
struct search_kernel_of {
  template <class Box, class NeedleBox, class Ratio, class Quaternary, class Interpolate>
  auto operator()(Box, NeedleBox, Ratio, Quaternary, Interpolate) const {
    return search_kernel<Box, TypeA, TypeB, AWrites, AIt, BIt, AOut, BOut, Comp>;
  }
};

// The search with bounds::lower on device iterators: the policy's box (with
// the tuned sparse ratio of the device's architecture) or the tuned line.
template <search_type TypeA, search_type TypeB, a_writes AWrites, class Policy, class AIt, class BIt, class AOut,
          class BOut, class Comp>
void search_lower(const Policy& policy, const device_info& dev, AIt a, index_t na, BIt b, index_t nb, AOut a_out,
                  BOut b_out, match_counters counters, match_counts* counts, Comp comp, const char* algorithm) {
  using TA = value_of<AIt>;
  using TB = value_of<BIt>;
  static_assert(std::is_trivially_copyable_v<TA> && std::is_default_constructible_v<TA> &&
                    std::is_trivially_copyable_v<TB> && std::is_default_constructible_v<TB>,
                "libmerge (CUDA backend): search keys must be trivially copyable and default-constructible");
  using table = search_table<TA, TB>;
  // The tuned line for the architecture the search kernel was compiled for;
  // a caller's box replaces its dense tile box.
  using Box = typename Policy::box_type;
  auto run = [&](auto box, auto needle_box, auto ratio, auto quaternary_below, auto interpolate_from) {
    using Dense = std::conditional_t<std::is_same_v<Box, tuned_launch_box>, decltype(box),
                                     typename merge_box_of<Box>::type>;
    launch_search<Dense, decltype(needle_box), TypeA, TypeB, AWrites, decltype(interpolate_from)::value>(
        policy, dev, a, na, b, nb, a_out, b_out, counters, counts, decltype(ratio)::value,
        decltype(quaternary_below)::value, comp, algorithm);
  };
  if constexpr (table::elem > max_element_bytes) {
    throw_element_too_large(algorithm, table::elem);
  } else {
    with_tuned_boxes<table>(dev, algorithm, search_kernel_of<TypeA, TypeB, AWrites, AIt, BIt, AOut, BOut, Comp>{},
                            run);
  }
}

// An output the search writes, as a kernel receives it; one it does not
// write is passed on untouched (it may be nullptr or a discard_iterator).
template <bool Written, class It>
auto output_to_device(It it, index_t length, const device_info& dev, const char* algorithm, const char* name) {
  if constexpr (Written) {
    return to_device(it, length, dev, algorithm, name);
  } else {
    return it;
  }
}

// Where a call's match counts go: back to the caller (through a small
// temporary and a wait for the stream), to the caller's device memory, or
// nowhere (sorted_equality_count).
enum class counts_to { caller, device_memory, nowhere };

// Every public form ends here.
template <bounds Bounds, search_type TypeA, search_type TypeB, a_writes AWrites, counts_to Counts, class Policy,
          class AIt, class BIt, class AOut, class BOut, class Comp>
match_counts sorted_search(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                           match_counts* counts, Comp comp) {
  const char* algorithm = AWrites == a_writes::equal_count ? "sorted_equality_count" : "sorted_search";
  const device_info& dev = current_device(algorithm, policy.stream());
  const auto d_a = to_device(a, na, dev, algorithm, "a_first");
  const auto d_b = to_device(b, nb, dev, algorithm, "b_first");
  const auto d_a_out = output_to_device<writes_output(TypeA) || AWrites == a_writes::equal_count>(
      a_out, na, dev, algorithm, AWrites == a_writes::equal_count ? "counts_out" : "a_out");
  const auto d_b_out = output_to_device<writes_output(TypeB)>(b_out, nb, dev, algorithm, "b_out");
  match_counts* d_counts = nullptr;
  if constexpr (Counts == counts_to::device_memory) d_counts = device_pointer(counts, dev, algorithm, "counts_out");
  {
    constexpr bool a_written = writes_output(TypeA) || AWrites == a_writes::equal_count;
    byte_range ra{AWrites == a_writes::equal_count ? "counts_out" : "a_out"}, rb{"b_out"}, rc{"counts_out"};
    if constexpr (a_written) ra = range_of(ra.name, d_a_out, na);
    if constexpr (writes_output(TypeB)) rb = range_of(rb.name, d_b_out, nb);
    if constexpr (Counts == counts_to::device_memory) rc = range_of(rc.name, d_counts, 1);
    check_disjoint(algorithm, {ra, rb, rc}, {range_of("a_first", d_a, na), range_of("b_first", d_b, nb)});
  }
  // The returning form counts in a temporary (taken before anything is
  // written, so a failed allocation leaves the outputs untouched).
  std::optional<temporary_storage<typename Policy::allocator_type>> temp;
  if constexpr (Counts == counts_to::caller) {
    temp.emplace(policy.allocator(), policy.stream(), sizeof(match_counts), algorithm);
    d_counts = temp->template as<match_counts>();
  }
  auto* ca = d_counts ? reinterpret_cast<unsigned long long*>(&d_counts->a) : nullptr;
  auto* cb = d_counts ? reinterpret_cast<unsigned long long*>(&d_counts->b) : nullptr;
  if constexpr (Bounds == bounds::lower) {
    search_lower<TypeA, TypeB, AWrites>(policy, dev, d_a, na, d_b, nb, d_a_out, d_b_out, match_counters{ca, cb},
                                        d_counts, comp, algorithm);
  } else {
    // Upper bounds of A into B and lower bounds of B into A: the lower search
    // of (B, A).
    search_lower<TypeB, TypeA, AWrites>(policy, dev, d_b, nb, d_a, na, d_b_out, d_a_out, match_counters{cb, ca},
                                        d_counts, comp, algorithm);
  }
  match_counts result{};
  const cudaStream_t stream = policy.stream();
  if constexpr (Counts == counts_to::caller) {
    check_cuda(cudaMemcpyAsync(&result, d_counts, sizeof(match_counts), cudaMemcpyDeviceToHost, stream), algorithm,
               "cudaMemcpyAsync(match counts)");
    check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (returning the match counts)");
  } else if (policy.synchronizes()) {
    check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (a synchronous Thrust policy)");
  }
  return result;
}

}  // namespace libmerge::detail::cuda_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::sorted_search, backend::cuda> {
  static constexpr bool available = true;
  static constexpr bool counts_in_place = true;

  // Returns the counts: waits for the stream, unless no side counts matches
  // (the counts are then zero without asking the device).
  template <bounds Bounds, search_type TypeA, search_type TypeB, class Policy, class AIt, class BIt, class AOut,
            class BOut, class Comp>
  static match_counts run(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                          Comp comp) {
    using namespace cuda_backend;
    if constexpr (!writes_match(TypeA) && !writes_match(TypeB)) {
      return sorted_search<Bounds, TypeA, TypeB, a_writes::search, counts_to::nowhere>(policy, a, na, b, nb, a_out,
                                                                                      b_out, nullptr, comp);
    } else {
      return sorted_search<Bounds, TypeA, TypeB, a_writes::search, counts_to::caller>(policy, a, na, b, nb, a_out,
                                                                                   b_out, nullptr, comp);
    }
  }
  // Writes the counts to device memory, in stream order: no wait.
  template <bounds Bounds, search_type TypeA, search_type TypeB, class Policy, class AIt, class BIt, class AOut,
            class BOut, class Comp>
  static void run_to(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                     match_counts* counts, Comp comp) {
    using namespace cuda_backend;
    sorted_search<Bounds, TypeA, TypeB, a_writes::search, counts_to::device_memory>(policy, a, na, b, nb, a_out,
                                                                                   b_out, counts, comp);
  }
};

template <>
struct backend_impl<algo::sorted_equality_count, backend::cuda> {
  static constexpr bool available = true;

  // One pass: each A's lower bound from the merge-path search, then the run
  // of equal elements of B that starts there. Asynchronous, like merge.
  template <class Policy, class AIt, class BIt, class CountsOut, class Comp>
  static void run(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, CountsOut counts, Comp comp) {
    using namespace cuda_backend;
    sorted_search<bounds::lower, search_type::none, search_type::none, a_writes::equal_count, counts_to::nowhere>(
        policy, a, na, b, nb, counts, nullptr, nullptr, comp);
  }
};

}  // namespace libmerge::detail
