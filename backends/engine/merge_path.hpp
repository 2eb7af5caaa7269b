// The merge-path search (Odeh et al., "Merge Path - Parallel Merging Made
// Simple", 2012; the co-rank function of seeds/004; MergePath in seeds/000),
// as search.hpp's loop over a_goes_first. Plain C++ for host and device, so
// the CPU tests check it against a brute-force co-rank.
#pragma once

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/search_tags.hpp"
#include "search.hpp"

namespace libmerge::detail {

// Does a_key come before b_key in the merge? lower: A wins ties (a stable
// merge, lower-bound searches of A); upper: B wins ties.
template <bounds Bounds, class AKey, class BKey, class Comp>
LIBMERGE_HOST_DEVICE bool a_goes_first(const AKey& a_key, const BKey& b_key, Comp& comp) {
  if constexpr (Bounds == bounds::lower) {
    return !comp(b_key, a_key);
  } else {
    return comp(a_key, b_key);
  }
}

// The splits diagonal diag of merging na elements of A with nb of B can have:
// [max(0, diag - nb), min(diag, na)] elements of A. Every search along the
// diagonal starts from it, so each probe is in range whatever comp does.
template <class Index>
struct split_range {
  Index lo, hi;
  // [lo, hi] narrowed to a bracket the caller knows. A bracket that misses the
  // range (only when comp is not a strict weak order) leaves the whole range.
  LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE split_range narrowed(Index from, Index to) const {
    split_range r{from > lo ? from : lo, to < hi ? to : hi};
    if (r.lo > r.hi) r = *this;
    return r;
  }
};

template <class Index>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE split_range<Index> diagonal_range(Index na, Index nb, Index diag) {
  return {diag > nb ? diag - nb : Index(0), diag < na ? diag : na};
}

// merge_path (below) when the answer is known to lie in [lo, hi]: fewer steps.
template <bounds Bounds, class Index, class AIt, class BIt, class Comp>
LIBMERGE_HOST_DEVICE Index merge_path_within(AIt a, Index na, BIt b, Index nb, Index diag, Index lo, Index hi,
                                             Comp& comp) {
  const split_range<Index> r = diagonal_range(na, nb, diag).narrowed(lo, hi);
  return first_not_before(r.lo, r.hi,
                          [&](Index mid) { return a_goes_first<Bounds>(a[mid], b[diag - 1 - mid], comp); });
}

// How many of the first `diag` outputs of merging a[0, na) and b[0, nb) come
// from A. A binary search along the cross-diagonal: every probe is in range
// (a[mid] with mid < min(diag, na), b[diag - 1 - mid] with diag - 1 - mid < nb),
// and it ends after log2(min(na, nb) + 1) steps whatever comp does.
// Index is int inside a tile (cheaper on the GPU) and index_t across the input.
// H200, partition kernel, 2^20 keys: 0.0208 ms against 0.0246 for a 4-way search (docs/cuda-merge.md)
template <bounds Bounds, class Index, class AIt, class BIt, class Comp>
LIBMERGE_HOST_DEVICE Index merge_path(AIt a, Index na, BIt b, Index nb, Index diag, Comp comp) {
  return merge_path_within<Bounds>(a, na, b, nb, diag, Index(0), diag, comp);
}

#if defined(__CUDACC__)
// merge_path by a whole warp (32 probes a round), where few splits are to be
// found. Every lane passes the same arguments; all return the answer.
template <bounds Bounds = bounds::lower, class AIt, class BIt, class Comp>
__device__ __forceinline__ index_t warp_merge_path(AIt a, index_t na, BIt b, index_t nb, index_t diag, Comp& comp) {
  const split_range<index_t> r = diagonal_range(na, nb, diag);
  return warp_first_not_before(r.lo, r.hi,
                               [&](index_t p) { return a_goes_first<Bounds>(a[p], b[diag - 1 - p], comp); });
}
#endif

}  // namespace libmerge::detail
