// The dense sorted search's tile (sorted_search.cuh has the host side): a
// merge of the tile whose walk records bounds and matches instead of keys,
// with a halo element on each side, and search_kernel.
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

#include "../../../libmerge/detail/config.hpp"
#include "../../../libmerge/search_tags.hpp"
#include "../../../policies/cuda.hpp"
#include "../../engine/search.hpp"
#include "../cta_merge.cuh"
#include "../memory.cuh"
#include "../partition.cuh"
#include "../runtime.cuh"

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

// What a search reports in device memory besides its outputs: the matched
// elements of A and of B.
struct search_reports {
  unsigned long long* a;
  unsigned long long* b;
};
// A part that also says whether a tile found A or B out of order (Python's searchsorted need not read its
// needles first). Apart: compiled into every tile, the check cost int64 searches 7% (H100, 2^28 index/index).
struct descent_reports : search_reports {
  unsigned* descents;
};
template <class Reports>
inline constexpr bool reports_descents = std::is_same_v<Reports, descent_reports>;

// Search tile's shared memory: A's halo, A, B (aligned), B's halo; then, unless
// InKeys, an int a position (bound, match flag in bit 31). Bulk: ranges keep
// their 16-byte line offsets (A from byte 16); the copies' barrier last.
template <class TA, class TB, int NV, bool Bulk = false, bool InKeys = false>
struct search_layout {
  static constexpr std::size_t elem = sizeof(TA) > sizeof(TB) ? sizeof(TA) : sizeof(TB);
  static constexpr std::size_t results =
      Bulk ? align_up(16 + NV * elem + 64, 16) : align_up((NV + 2) * elem + alignof(TB), 16);
  static constexpr std::size_t barrier = results + (InKeys ? 0 : align_up(NV * sizeof(int), 16));
  static constexpr std::size_t bytes = barrier + (Bulk ? 16 : 0);
  // Byte offset of B's range when A's holds na elements (after A's halo).
  __device__ static std::size_t b_offset(int na) { return align_up((1 + na) * sizeof(TA), alignof(TB)); }
};

// Whether tiles are staged by bulk copies (cta_merge.cuh): the dense search is
// issue-bound and a staged tile issues no load or shared store an element.
// H200, int32 2^24..2^28: 0.86x-0.93x the time (docs/cuda-sorted-search.md).
template <class AIt, class BIt>
inline constexpr bool search_bulk_of = sizeof(value_of<AIt>) <= 8 && sizeof(value_of<BIt>) <= 8 &&
                                       bulk_loadable<value_of<AIt>, AIt> && bulk_loadable<value_of<BIt>, BIt>;

// Whether each result (an int) overwrites its key's slot once read: keys of
// one 4-byte type. Halves the tile's shared memory (search_line::vt_in_keys);
// 8-byte keys lost (bank conflicts, not shared-memory bound).
// H200, 2^28 int32 lower bounds: 0.90x the time at 256x19, 0.79x at 256x31 (docs/cuda-sorted-search.md).
template <class TA, class TB>
inline constexpr bool results_in_key_slots =
    std::is_same_v<TA, TB> && sizeof(TA) == sizeof(int) && alignof(TA) >= alignof(int);

template <class AIt, class BIt, int NV>
using search_tile_layout = search_layout<value_of<AIt>, value_of<BIt>, NV, search_bulk_of<AIt, BIt>,
                                         results_in_key_slots<value_of<AIt>, value_of<BIt>>>;

// A tile position's result: its key's slot (InKeys) or the results array.
template <class TA, class TB, bool InKeys>
struct result_slots {
  TA* as;
  TB* bs;
  int* results;
  int na;
  __device__ int& a(int k) const {
    if constexpr (InKeys) return *reinterpret_cast<int*>(as + k);
    else return results[k];
  }
  __device__ int& b(int k) const {
    if constexpr (InKeys) return *reinterpret_cast<int*>(bs + k);
    else return results[na + k];
  }
  __device__ int& operator[](int j) const { return j < na ? a(j) : b(j - na); }
};

constexpr int match_flag = int(0x80000000u);

// load_tile for two key types: each side into its own array.
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

// Upper bound of x in hay[0, n) given hay[from] == x: galloping, 2 log2(k)
// probes for a run of k equal elements, all in [from, n).
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

// One atomic a counter a tile; both sums fit 16 bits (tiles <= 65535), one BlockReduce.
template <int NT, bool CountA, bool CountB>
__device__ __forceinline__ void add_matches(unsigned matches_a, unsigned matches_b, search_reports reports, int tid) {
  if constexpr (CountA || CountB) {
    using reduce = cub::BlockReduce<unsigned, NT>;
    __shared__ typename reduce::TempStorage storage;
    const unsigned total = reduce(storage).Sum(matches_a | (matches_b << 16));
    if (tid == 0) {
      if (CountA && (total & 0xffff) != 0) atomicAdd(reports.a, static_cast<unsigned long long>(total & 0xffff));
      if (CountB && (total >> 16) != 0) atomicAdd(reports.b, static_cast<unsigned long long>(total >> 16));
    }
  }
}

// B at global position k: from the tile's copy (from b0) where it has one.
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

// Coalesced stores of the results ([0, na) A's, then B's); matches counted here.
template <class Box, bool Full, search_type TypeA, search_type TypeB, a_writes AWrites, class AIt, class BIt,
          class Slots, class AOut, class BOut, class Comp>
__device__ __forceinline__ void store_search_tile(const search_merge<AIt, BIt>& g, const tile_range& r,
                                                  const value_of<AIt>* as, int na, const value_of<BIt>* bs, int nb,
                                                  int count, int b_valid, const Slots& results, AOut a_out,
                                                  BOut b_out, search_reports reports, Comp& comp, int tid) {
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
    // The clamp keeps bounds within the tile for unsorted input or a
    // comparator that is no strict weak order (results unspecified then).
    const int other = j < na ? nb : na;
    const int local = (res & ~match_flag) < other ? (res & ~match_flag) : other;
    if (j < na) {
      if constexpr (AWrites == a_writes::equal_count) {
        // The run of equal B elements may go on past the tile (global memory).
        const index_t lb = r.b0 + local;
        index_t n_equal = 0;
        if (m && lb < g.nb) {
          const tile_or_global<TB, BIt> hay{bs, b_valid, r.b0, g.b_keys};
          // A's key, or (its slot holds its result) the equal B element it matched.
          if constexpr (results_in_key_slots<value_of<AIt>, TB>) {
            n_equal = upper_bound_from(hay, lb, g.nb, bs[local], comp) - lb;
          } else {
            n_equal = upper_bound_from(hay, lb, g.nb, as[j], comp) - lb;
          }
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
  add_matches<Box::nt, writes_match(TypeA), writes_match(TypeB)>(matches_a, matches_b, reports, tid);
}

// Loaders of a search tile: A at as[0] (halo as[-1]), B at bs[0] (halo bs[nb]);
// they return past a barrier. Through registers:
struct register_search_loader {
  template <class Box, bool Full, class Layout, class AIt, class BIt, class TA, class TB>
  static __device__ __forceinline__ void load(const search_merge<AIt, BIt>& g, const tile_range& r, int na, int nb,
                                              int count, bool halo_a, bool halo_b, unsigned char*, TA*& as, TB*& bs,
                                              int tid) {
    if (tid == 0 && halo_a) as[-1] = g.a_keys[r.a0 - 1];
    if (tid == Box::nt - 1 && halo_b) bs[nb] = g.b_keys[r.b1];
    load_search_tile<Box::nt, Box::vt, Full>(g.a_keys + r.a0, na, g.b_keys + r.b0, count, as, bs, tid);
    __syncthreads();
  }
};
// by bulk copies; the halo elements lie outside the copies: threads store them.
struct bulk_search_loader {
  template <class Box, bool Full, class Layout, class AIt, class BIt, class TA, class TB>
  static __device__ __forceinline__ void load(const search_merge<AIt, BIt>& g, const tile_range& r, int na, int nb,
                                              int, bool halo_a, bool halo_b, unsigned char* smem, TA*& as, TB*& bs,
                                              int tid) {
    bulk_loader<Box::nt> loader(reinterpret_cast<std::uint64_t*>(smem + Layout::barrier), tid);
    as = loader.stage(g.a_keys + r.a0, na, smem + 16);
    const auto a_end = reinterpret_cast<std::uintptr_t>(as + na) - reinterpret_cast<std::uintptr_t>(smem);
    bs = loader.stage(g.b_keys + r.b0, nb, smem + (a_end + 15) / 16 * 16);
    if (tid == 0 && halo_a) as[-1] = g.a_keys[r.a0 - 1];
    if (tid == Box::nt - 1 && halo_b) bs[nb] = g.b_keys[r.b1];
    loader.wait();
  }
};

// Where the caller asks (descent_reports), 1 at `descents` if the tile's A or B descends between neighbours (the
// first against the element before the tile): read from shared memory before the walk overwrites it. A
// comparator that cannot compare a side with itself (mixed key types) reports nothing.
template <class Box, class AIt, class BIt, class Comp>
__device__ __forceinline__ void report_descents(const search_merge<AIt, BIt>& g, const tile_range& r,
                                                const value_of<AIt>* as, int na, const value_of<BIt>* bs, int count,
                                                unsigned* descents, Comp& comp, int tid) {
  using TA = value_of<AIt>;
  using TB = value_of<BIt>;
  if constexpr (std::is_invocable_r_v<bool, Comp&, const TA&, const TA&> &&
                std::is_invocable_r_v<bool, Comp&, const TB&, const TB&>) {
    bool descends = false;
    for (int j = tid; j < count; j += Box::nt) {
      if (j < na) {
        descends |= j > 0 ? comp(as[j], as[j - 1]) : r.a0 > 0 && comp(as[0], static_cast<TA>(g.a_keys[r.a0 - 1]));
      } else {
        const int k = j - na;
        descends |= k > 0 ? comp(bs[k], bs[k - 1]) : r.b0 > 0 && comp(bs[0], static_cast<TB>(g.b_keys[r.b0 - 1]));
      }
    }
    if (__syncthreads_or(descends) && tid == 0) atomicOr(descents, 1u);
  }
}

// The tile's merge walk (A first on ties): A's element records its bound in B
// (and match_flag), B's its bound in A. Each walk ends where the next thread
// starts, so positions are covered exactly once whatever the comparator does;
// starts out of order write bound 0, no match. InKeys: neighbours' keys are
// read before the walks overwrite them.
template <class Box, bool Full, search_type TypeA, search_type TypeB, a_writes AWrites, bool InKeys, class TA,
          class TB, class Comp>
__device__ __forceinline__ void walk_search_tile(const TA* as, TB* bs, int na, int nb, int count, int b_valid,
                                                 bool halo_a, const result_slots<TA, TB, InKeys>& results, Comp& comp,
                                                 int tid) {
  constexpr bool a_writes_any = writes_output(TypeA) || AWrites == a_writes::equal_count;
  constexpr bool a_needs_match = writes_match(TypeA) || AWrites == a_writes::equal_count;
  constexpr bool b_needs_match = writes_match(TypeB);
  // The next thread's first B element, saved before InKeys walks overwrite it.
  constexpr bool b_overwritten = InKeys && writes_output(TypeB);
  __shared__ __align__(16) unsigned char first_b_bytes[b_overwritten ? Box::nt * sizeof(TB) : 1];
  TB* const first_b = reinterpret_cast<TB*>(first_b_bytes);
  const int diag = Box::vt * tid < count ? Box::vt * tid : count;
  const int diag_end = Box::vt * (tid + 1) < count ? Box::vt * (tid + 1) : count;
  int a = merge_path<bounds::lower, int>(as, na, bs, nb, diag, comp);
  int b = diag - a;
  TA prev_a = as[a - 1];
  __shared__ int starts[Box::nt];
  starts[tid] = a;
  if constexpr (b_overwritten) first_b[tid] = bs[b < b_valid ? b : 0];
  __syncthreads();
  const int a_end = tid + 1 < Box::nt ? starts[tid + 1] : na;
  const int b_end = diag_end - a_end;
  // The key the walk sees at b_end (A's last elements' match test).
  TB b_last{};
  if constexpr (b_overwritten) b_last = tid + 1 < Box::nt ? first_b[tid + 1] : bs[b_end];  // the halo (or unread)
  if (__syncthreads_or(a_end < a || b_end < b)) {
    for (int j = tid; j < count; j += Box::nt) results[j] = 0;
    return;
  }
  // Each step records the element's bound and match instead of the key.
  merge_walk<Box::vt, Full>(
      a, a_end, b, b_end, diag_end - diag, [&](int k) { return as[k < a_end ? k : -1]; },
      [&](int k) {
        if constexpr (b_overwritten) return k < b_end ? bs[k] : b_last;
        else return bs[k < b_valid ? k : 0];
      },
      [&](int, int, const TA& a_key, const TB& b_key) { return a_goes_first<bounds::lower>(a_key, b_key, comp); },
      [&](int, bool from_a, int a_at, int b_at, const TA& a_key, const TB& b_key) {
        if (from_a) {
          if constexpr (a_writes_any) {
            const bool m = a_needs_match && b_at < b_valid && !comp(a_key, b_key);
            results.a(a_at) = b_at | (m ? match_flag : 0);
          }
          prev_a = a_key;
        } else if constexpr (writes_output(TypeB)) {
          const bool m = b_needs_match && (a_at > 0 || halo_a) && !comp(prev_a, b_key);
          results.b(b_at) = a_at | (m ? match_flag : 0);
        }
      });
}

// The dense search of one tile: A's lower bounds into B, B's upper bounds into A.
template <class Box, bool Full, search_type TypeA, search_type TypeB, a_writes AWrites, class AIt, class BIt,
          class AOut, class BOut, class Reports, class Comp>
__device__ __forceinline__ void search_tile(const search_merge<AIt, BIt>& g, const tile_range& r, bool ordered,
                                            unsigned char* smem, AOut a_out, BOut b_out, Reports reports,
                                            Comp& comp) {
  using TA = value_of<AIt>;
  using TB = value_of<BIt>;
  using layout = search_tile_layout<AIt, BIt, Box::nv>;
  constexpr bool staged = tuning::here.search.loads == tuning::tile_loads::bulk_copies;
  using loader = std::conditional_t<staged && search_bulk_of<AIt, BIt>, bulk_search_loader, register_search_loader>;
  constexpr bool a_needs_match = writes_match(TypeA) || AWrites == a_writes::equal_count;
  constexpr bool b_needs_match = writes_match(TypeB);
  constexpr bool in_keys = results_in_key_slots<TA, TB>;
  const int tid = static_cast<int>(threadIdx.x);
  const int na = static_cast<int>(r.a1 - r.a0);
  const int count = r.count();
  const int nb = count - na;
  // Halos decide the matches of A's last and B's first elements.
  const int halo_a = b_needs_match && r.a0 > 0 ? 1 : 0;
  const int halo_b = a_needs_match && r.b1 < g.nb ? 1 : 0;
  TA* as = reinterpret_cast<TA*>(smem) + 1;
  TB* bs = reinterpret_cast<TB*>(smem + layout::b_offset(na));
  int* const results_array = reinterpret_cast<int*>(smem + layout::results);
  const int b_valid = nb + halo_b;  // B's elements a match test may read
  if (!ordered) {
    const result_slots<TA, TB, in_keys> results{as, bs, results_array, na};
    for (int j = tid; j < count; j += Box::nt) results[j] = 0;
    if constexpr (reports_descents<Reports>) {
      if (tid == 0) atomicOr(reports.descents, 1u);
    }
  } else {
    loader::template load<Box, Full, layout>(g, r, na, nb, count, halo_a, halo_b, smem, as, bs, tid);
    if constexpr (reports_descents<Reports>) report_descents<Box>(g, r, as, na, bs, count, reports.descents, comp, tid);
    walk_search_tile<Box, Full, TypeA, TypeB, AWrites>(as, bs, na, nb, count, b_valid, halo_a,
                                                       result_slots<TA, TB, in_keys>{as, bs, results_array, na}, comp,
                                                       tid);
  }
  __syncthreads();
  store_search_tile<Box, Full, TypeA, TypeB, AWrites>(g, r, as, na, bs, nb, count, b_valid,
                                                      result_slots<TA, TB, in_keys>{as, bs, results_array, na},
                                                      a_out, b_out, reports, comp, tid);
}

// CTAs an SM for the register budget, tiles up to 512 threads.
template <class Box>
inline constexpr int search_ctas_per_sm = Box::nt <= 512 ? tuning::here.search.sm_threads / Box::nt : 1;

template <class Box, search_type TypeA, search_type TypeB, a_writes AWrites, class AIt, class BIt, class AOut,
          class BOut, class Comp, class Reports = search_reports>
__global__ void __launch_bounds__(Box::nt, search_ctas_per_sm<Box>)
    search_kernel(search_merge<AIt, BIt> g, const index_t* mp, const unsigned char* out_of_order, int order_blocks,
                  AOut a_out, BOut b_out, Reports reports, match_counts* zero, Comp comp) {
  extern __shared__ __align__(16) unsigned char smem[];
  wait_for_prerequisite_grid();  // the partitions are complete from here on
  const index_t tile = blockIdx.x;
  if (zero != nullptr && tile == 0 && threadIdx.x == 0) *zero = match_counts{};  // counts of a search without matches
  // Partitions out of order (unsorted input, no strict weak order): tile t
  // takes outputs [t * nv, (t + 1) * nv) so each is written once, in range.
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
    search_tile<Box, true, TypeA, TypeB, AWrites>(g, r, ordered, smem, a_out, b_out, reports, comp);
  } else {
    search_tile<Box, false, TypeA, TypeB, AWrites>(g, r, ordered, smem, a_out, b_out, reports, comp);
  }
}

}  // namespace libmerge::detail::cuda_backend
