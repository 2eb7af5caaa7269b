// The sparse sorted search's kernel (host side: sorted_search.cuh).
#pragma once

#include "../runtime.cuh"
#include "dense.cuh"

namespace libmerge::detail::cuda_backend {

// bounds_in_lockstep and bounds_in_lockstep_4 are the engine's (backends/engine/search.hpp).

// Interpolation needs numbers under a numeric order (numeric_order, cta_merge.cuh).
template <class Comp, class Needle, class Hay>
inline constexpr bool interpolable_v = orders_numbers_v<Comp, Needle> && is_number_v<Hay>;

// b - a as a float, for a guess: integers subtracted unsigned (no overflow),
// floating point in its own type (infinity only spoils the guess).
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

// x's lower (Upper: upper) bound in hay[0, nh): binary down to `window`, then
// up to interpolation_probes guesses, each reading one 64-byte block's ends (one
// DRAM fetch), then binary (L1 hits). Skewed keys only cost probes.
// Invariant: the bound lies in [lo, hi]; hay[lo - 1] (vlo, if lo > 0) is before
// x and hay[hi] (vhi, if hi < nh) is not. Every load lies in [0, nh), sorted or not.
template <bool Upper, class Index, class Hay, class T, class Comp>
__device__ __forceinline__ Index interpolation_bound(Hay hay, Index nh, const T& x, Index window, int phase,
                                                     Comp& comp) {
  using H = value_of<Hay>;
  // Keys a 64-byte block and the haystack's phase: a probe's loads share a fetch.
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
    for (int probe = 0; probe < tuning::here.search.interpolation_probes && lo < hi; ++probe) {
      // x is f of the way from lo - 1 to hi; NaN (unordered keys, overflow) is 0.
      float f = __fdividef(key_distance(vlo, x), key_distance(vlo, vhi));
      const bool at_end = !(f > 0.0f && f < 1.0f);
      // Equal to an end's key: x's run may fill the window, so binary.
      if (at_end && probe == 0) break;
      f = f > 0.0f ? (f < 1.0f ? f : 1.0f) : 0.0f;
      Index g = lo + static_cast<Index>(f * static_cast<float>(hi - lo));
      g = g < hi ? g : hi - 1;
      // The block around g within [lo, hi) (sums stay under nh + 2 * block).
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

// The haystack's offset from a 64-byte boundary in keys (0 if unknown).
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

enum class needle_probe { binary, quaternary, interpolation };

// A needle box may fix the probe (perf/bench_search.cu's sweeps): static
// `probe_4ary = true` or `interpolate_from` (0: never); else the line decides.
template <class Box, class = void>
struct box_probes_4ary : std::false_type {};
template <class Box>
struct box_probes_4ary<Box, std::void_t<decltype(Box::probe_4ary)>> : std::bool_constant<Box::probe_4ary> {};
template <class Box, class = void>
struct box_interpolates_from : std::integral_constant<int, -1> {};  // -1: the line's
template <class Box>
struct box_interpolates_from<Box, std::void_t<decltype(Box::interpolate_from)>>
    : std::integral_constant<int, Box::interpolate_from> {};

// The sparse search, each needle in the whole haystack: a thread's vt
// consecutive needles in lockstep (binary or 4-ary; neighbours share lines),
// or one after another by interpolation_bound. Index: int below 2^31 keys.
// H100: bracketing each tile's needles first lost, 0.16 vs thrust::lower_bound's 0.033 ms (docs/cuda-sorted-search.md)
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
    // Lanes past the needles repeat the last one to stay in step, writing nothing.
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
  add_matches<Box::nt, writes_match(Type), false>(found, 0, search_reports{matches, nullptr}, tid);
}

}  // namespace libmerge::detail::cuda_backend
