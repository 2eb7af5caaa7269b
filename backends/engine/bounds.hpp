// The bound search every backend's searches end in (plain C++, host and
// device): the CUDA sparse search's probes (cuda/sorted_search.cuh), the
// OpenMP backend's gallop (omp/sequential.hpp) and the sort across GPUs'
// counts of a candidate in a run (nccl/splitters.cuh).
#pragma once

#include "../../libmerge/detail/config.hpp"

namespace libmerge::detail {

// First position in hay[lo, hi) whose element is not before x (Upper: is
// after x), or hi. Every probe lies in [lo, hi), whatever comp does. Index:
// index_t, or int where the caller's positions fit (fewer instructions a
// step on the GPU).
template <bool Upper, class Hay, class Index, class T, class Comp>
LIBMERGE_HOST_DEVICE inline Index bound_within(Hay hay, Index lo, Index hi, const T& x, Comp& comp) {
  while (lo < hi) {
    const Index mid = lo + (hi - lo) / 2;
    const bool before = Upper ? !comp(x, hay[mid]) : comp(hay[mid], x);
    if (before) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace libmerge::detail
