// k-way merge path (search.hpp's merge path), host and device: 2 or 4 runs
// (group_split, halves_split) and any number (multiway_split).
#pragma once

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/search_tags.hpp"
#include "search.hpp"

namespace libmerge::detail {

// A 4-way merge is the merge of (R0 R1) and (R2 R3): a merge-path search whose
// probes are merge-path searches, both lower bounds, so the pass is stable.
// H100, 2^28: a warp-wide 33-ary outer search took 0.5 to 4.6 ms a pass (docs/cuda-merge-sort.md)

// Where a diagonal of a group's merge falls: s[k] elements of run k precede it.
template <int Ways>
struct run_split {
  index_t s[Ways];
};

// One half of a group: a run (Ways = 2) or two runs merged (Ways = 4).
template <int Ways, class K>
struct run_half {
  const K* x;  // first run of the half
  index_t nx;
  const K* y;  // second run (Ways = 4)
  index_t ny;
  LIBMERGE_HOST_DEVICE index_t size() const { return Ways == 4 ? nx + ny : nx; }
  template <class Comp>
  LIBMERGE_HOST_DEVICE K at(index_t i, index_t split, Comp& comp) const {
    if constexpr (Ways == 2) {
      return x[i];
    } else {
      const index_t j = i - split;
      const bool take_x = split < nx && (j >= ny || a_goes_first<bounds::lower>(x[split], y[j], comp));
      return take_x ? x[split] : y[j];
    }
  }
};

// A group's runs: run k is keys[k * width, ...) of the group, len[k] long.
template <int Ways, class K>
struct run_group {
  const K* keys;
  index_t width;
  index_t len[Ways];
  LIBMERGE_HOST_DEVICE const K* run(int k) const { return keys + k * width; }
  LIBMERGE_HOST_DEVICE const K& key(int k, index_t i) const { return keys[k * width + i]; }
  // Half h of a 4-way group: runs 2h and 2h + 1.
  LIBMERGE_HOST_DEVICE run_half<4, K> half(int h) const {
    return {run(2 * h), len[2 * h], run(2 * h + 1), len[2 * h + 1]};
  }
};

// A known inner split (rank c splits at s), bracketing the next search.
struct known_split {
  index_t c, s;
};

// Both halves' inner splits (ranks c0, c1), bracketed; the two binary searches
// run in lockstep so their loads are in flight together.
template <int Ways, class K, class Comp>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE void inner_splits(const run_half<Ways, K>& h0, index_t c0, known_split lo0, known_split hi0,
                                             const run_half<Ways, K>& h1, index_t c1, known_split lo1,
                                             known_split hi1, index_t& s0, index_t& s1, Comp& comp) {
  if constexpr (Ways == 2) {
    s0 = c0;
    s1 = c1;
  } else {
    auto bracket = [](const run_half<Ways, K>& h, index_t c, known_split lo, known_split hi, index_t& from,
                      index_t& to) {
      from = lo.s > c - (hi.c - hi.s) ? lo.s : c - (hi.c - hi.s);
      to = hi.s < lo.s + (c - lo.c) ? hi.s : lo.s + (c - lo.c);
      // Clamped: probes stay in range even when comp is no strict weak order.
      const split_range<index_t> ok = diagonal_range(h.nx, h.ny, c);
      from = from > ok.lo ? from : ok.lo;
      to = to < ok.hi ? to : ok.hi;
      if (from > to) {
        from = ok.lo;
        to = ok.hi;
      }
    };
    index_t b0, b1;
    bracket(h0, c0, lo0, hi0, s0, b0);
    bracket(h1, c1, lo1, hi1, s1, b1);
    first_not_before_both(
        s0, b0, [&](index_t mid) { return a_goes_first<bounds::lower>(h0.x[mid], h0.y[c0 - 1 - mid], comp); },
        s1, b1, [&](index_t mid) { return a_goes_first<bounds::lower>(h1.x[mid], h1.y[c1 - 1 - mid], comp); });
  }
}

// The element of rank r - 1 of a half whose split at rank r is s: the later,
// in the merge's order, of x[s - 1] and y[r - s - 1].
template <class K, class Comp>
LIBMERGE_HOST_DEVICE LIBMERGE_FORCEINLINE K last_before(const run_half<4, K>& h, index_t r, index_t s, Comp& comp) {
  const index_t t = r - s;
  if (s == 0) return h.y[t - 1];
  if (t == 0) return h.x[s - 1];
  return a_goes_first<bounds::lower>(h.x[s - 1], h.y[t - 1], comp) ? h.y[t - 1] : h.x[s - 1];
}

// Samples of the halves' inner splits at multiples of nv (s[h][j];
// sample_kernel) with the keys of ranks j * nv and j * nv - 1: searching
// them first brackets each inner search to one tile. By value (a pointer puts
// it in local memory); s[0] null for none.
template <class K>
struct half_samples {
  const index_t* s[2];
  const K* keys[2];
  index_t nv;
};

// The split of a 4-way merge at diagonal d (h0: runs 0, 1; h1: runs 2, 3).
// Bracketing inner searches by earlier outer probes halves the loads
// (log2(w)^2 / 2); samples (d a multiple of samples.nv) start in one interval.
template <class K, class Comp>
LIBMERGE_HOST_DEVICE run_split<4> halves_split(const run_half<4, K>& h0, const run_half<4, K>& h1, index_t d,
                                               Comp& comp,
                                               half_samples<K> samples = {{nullptr, nullptr}, {nullptr, nullptr}, 1}) {
  run_split<4> r;
  const index_t n0 = h0.size(), n1 = h1.size();
  index_t lo = d > n1 ? d - n1 : 0;
  index_t hi = d < n0 ? d : n0;
  known_split k0_lo{0, 0}, k0_hi{n0, h0.nx}, k1_lo{0, 0}, k1_hi{n1, h1.nx};
  if (samples.s[0] != nullptr && lo < hi) {
    // Outer probes at m = j * nv read sample keys of j and L - j.
    const index_t nv = samples.nv, L = d / nv;
    const index_t* s0 = samples.s[0];
    const index_t* s1 = samples.s[1];
    const index_t first = (lo + nv - 1) / nv, last = (hi - 1) / nv + 1;  // j with lo <= j * nv < hi
    const index_t a = first_not_before(first, last, [&](index_t j) {
      return a_goes_first<bounds::lower>(samples.keys[0][2 * j], samples.keys[1][2 * (L - j) + 1], comp);
    });
    if (a > first) {  // the split is past (a - 1) * nv
      const index_t j = a - 1;
      lo = j * nv + 1;
      k0_lo = {j * nv, s0[j]};
      k1_hi = {(L - j) * nv, s1[L - j]};
    }
    if (a < last) {  // and not past a * nv
      hi = a * nv;
      k0_hi = {a * nv, s0[a]};
      k1_lo = {(L - a) * nv, s1[L - a]};
    }
  }
  // Each answer narrows the brackets of the inner searches after it.
  lo = first_not_before(lo, hi, [&](index_t mid) {
    const index_t e = d - 1 - mid;
    index_t s0, s1;
    inner_splits(h0, mid, k0_lo, k0_hi, h1, e, k1_lo, k1_hi, s0, s1, comp);
    const bool first = a_goes_first<bounds::lower>(h0.at(mid, s0, comp), h1.at(e, s1, comp), comp);
    if (first) {
      k0_lo = {mid, s0};
      k1_hi = {e, s1};
    } else {
      k0_hi = {mid, s0};
      k1_lo = {e, s1};
    }
    return first;
  });
  index_t s0, s1;
  inner_splits(h0, lo, k0_lo, k0_hi, h1, d - lo, k1_lo, k1_hi, s0, s1, comp);
  r.s[0] = s0;
  r.s[1] = lo - s0;
  r.s[2] = s1;
  r.s[3] = d - lo - s1;
  return r;
}

// The split of a group's merge at diagonal d (halves_split for 4 ways).
template <int Ways, class K, class Comp>
LIBMERGE_HOST_DEVICE run_split<Ways> group_split(const run_group<Ways, K>& g, index_t d, Comp& comp,
                                       half_samples<K> samples = {{nullptr, nullptr}, {nullptr, nullptr}, 1}) {
  if constexpr (Ways == 2) {
    (void)samples;
    run_split<Ways> r;
    const index_t a = merge_path<bounds::lower>(g.keys, g.len[0], g.keys + g.width, g.len[1], d, comp);
    r.s[0] = a;
    r.s[1] = d - a;
    return r;
  } else {
    return halves_split(g.half(0), g.half(1), d, comp, samples);
  }
}

// Where diagonal d of the stable merge of k runs falls: lo[r] of run r's
// elements precede it at the end (lo, hi, count: k slots each). Each step
// counts, within every bracket, the elements before the widest bracket's middle
// (rank_in_run) and raises floors or lowers ceilings; at most k log2(n) steps.
template <class Run, class Comp>
LIBMERGE_HOST_DEVICE void multiway_split(const Run* runs, int k, index_t d, index_t* lo, index_t* hi, index_t* count,
                                         Comp& comp) {
  index_t total = 0;
  for (int r = 0; r < k; ++r) total += runs[r].n;
  for (int r = 0; r < k; ++r) {
    const index_t others = total - runs[r].n;
    lo[r] = d > others ? d - others : 0;
    hi[r] = d < runs[r].n ? d : runs[r].n;
  }
  for (;;) {
    int j = -1;
    index_t widest = 0;
    for (int r = 0; r < k; ++r) {
      if (hi[r] - lo[r] > widest) {
        widest = hi[r] - lo[r];
        j = r;
      }
    }
    if (j < 0) return;
    const index_t m = lo[j] + widest / 2;
    const auto x = runs[j].first[m];
    index_t before = 0;
    for (int r = 0; r < k; ++r) {
      count[r] = r == j ? m : rank_in_run(runs[r].first, lo[r], hi[r], x, r < j, comp);
      before += count[r];
    }
    const bool x_is_before = before < d;
    for (int r = 0; r < k; ++r) (x_is_before ? lo[r] : hi[r]) = count[r];
    if (x_is_before) lo[j] = m + 1;
  }
}

}  // namespace libmerge::detail
