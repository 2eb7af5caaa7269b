// OpenMP merge and merge_by_key: Merge Path (Odeh et al. 2012). The output is
// cut into one equal share per thread; merge_path (shared with the CUDA
// backend) finds where each cut falls in A and in B, and each thread merges
// its ranges on its own: (na + nb) / p outputs each, however keys interleave.
#pragma once

#include <algorithm>
#include <iterator>
#include <type_traits>
#include <vector>

#include "../../libmerge/detail/config.hpp"
#include "../engine/search.hpp"
#include "../serial/merge.hpp"
#include "sequential.hpp"
#include "team.hpp"

namespace libmerge::detail::omp_backend {

// Outputs per tile of merge_pairs: three tiles of pairs stay in L1/L2.
inline constexpr index_t pair_tile = 1024;

// merge_by_key of one thread's share, for contiguous trivially copyable keys
// and values: separate arrays cost the branch-free merge its edge
// (sequential.hpp: keyed), so each tile of outputs has its inputs (found by
// merge_path within the rest of the share) packed into pairs, merged, unpacked.
// One thread, 10^7 int32 keys and values: 26 vs 52 ms merging the arrays in step (docs/omp-benchmark.md)
template <class K, class V, class Comp>
void merge_pairs(const K* a, const V* a_vals, index_t na, const K* b, const V* b_vals, index_t nb, K* out,
                 V* vals_out, Comp& comp) {
  using item = keyed<K, V>;
  std::vector<item> buffer(3 * static_cast<std::size_t>(pair_tile));
  item* const pa = buffer.data();
  item* const pb = pa + pair_tile;
  item* const po = pb + pair_tile;
  const key_order<true, Comp> order{comp};
  index_t i = 0, j = 0;  // taken from A and B so far
  while (i + j < na + nb) {
    const index_t o = i + j, count = std::min(pair_tile, na + nb - o);
    // Searched within what is left, the split is in range whatever comp says.
    const index_t ta = path_crossing<bounds::lower>(a + i, na - i, b + j, nb - j, count, comp), tb = count - ta;
    for (index_t k = 0; k < ta; ++k) pa[k] = item{a[i + k], a_vals[i + k]};
    for (index_t k = 0; k < tb; ++k) pb[k] = item{b[j + k], b_vals[j + k]};
    merge_pointers<false, false>(pa, ta, pb, tb, static_cast<const unsigned char*>(nullptr),
                                 static_cast<const unsigned char*>(nullptr), po, static_cast<unsigned char*>(nullptr),
                                 order);
    for (index_t k = 0; k < count; ++k) {
      out[o + k] = po[k].key;
      vals_out[o + k] = po[k].value;
    }
    i += ta;
    j += tb;
  }
}

// Whether merge_pairs takes a merge_by_key.
template <class AKeys, class BKeys, class AVals, class BVals, class KeysOut, class ValsOut>
constexpr bool pairs_merge() {
  if constexpr (!has_values<AVals>) {
    return false;
  } else {
    using K = typename std::iterator_traits<AKeys>::value_type;
    using V = typename std::iterator_traits<AVals>::value_type;
    return is_contiguous<AKeys> && is_contiguous<BKeys> && is_contiguous<KeysOut> && is_contiguous<AVals> &&
           is_contiguous<BVals> && is_contiguous<ValsOut> &&
           std::is_same_v<typename std::iterator_traits<BKeys>::value_type, K> &&
           std::is_same_v<typename std::iterator_traits<KeysOut>::value_type, K> &&
           std::is_same_v<typename std::iterator_traits<BVals>::value_type, V> &&
           std::is_same_v<typename std::iterator_traits<ValsOut>::value_type, V> &&
           std::is_trivially_copyable_v<K> && std::is_trivially_copyable_v<V>;
  }
}

template <class Policy, class AKeys, class BKeys, class AVals, class BVals, class KeysOut, class ValsOut, class Comp>
void merge(const Policy& policy, AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals,
           KeysOut keys_out, ValsOut vals_out, Comp& comp) {
  using K = typename std::iterator_traits<AKeys>::value_type;
  const index_t n = na + nb;
  const int threads = packs_bits<KeysOut> || packs_bits<ValsOut> ? 1 : team_size(policy, n);
  std::vector<index_t> cross(static_cast<std::size_t>(threads) + 1);
  const auto b_keys = view_as<K>(b);
  parallel(threads, [&](const team& t) {
    const int p = t.size(), r = t.rank();
    auto diag = [&](int k) { return share_begin(n, p, k); };
    t.run([&] { cross[r] = path_crossing<bounds::lower>(a, na, b_keys, nb, diag(r), comp); });
    t.barrier();
    t.run([&] {
      const merge_share s = share_of(cross.data(), 0, p, r, na, nb, diag);
      const index_t sa = s.a_end - s.a_begin, sb = s.b_end - s.b_begin, o = diag(r);
      if constexpr (pairs_merge<AKeys, BKeys, AVals, BVals, KeysOut, ValsOut>()) {
        merge_pairs(to_pointer(a + s.a_begin, sa), to_pointer(a_vals + s.a_begin, sa), sa,
                    to_pointer(b + s.b_begin, sb), to_pointer(b_vals + s.b_begin, sb), sb,
                    to_pointer(keys_out + o, sa + sb), to_pointer(vals_out + o, sa + sb), comp);
      } else {
        merge_sequential<false>(a + s.a_begin, sa, b + s.b_begin, sb, advanced(a_vals, s.a_begin),
                                advanced(b_vals, s.b_begin), keys_out + o, advanced(vals_out, o), comp);
      }
    });
  });
}

// lm::multiway_merge: one equal share of the output per thread, as merge
// cuts it; multiway_split (engine/search.hpp) finds each cut in every run,
// and each thread merges its pieces with the serial backend's k-way merge.
template <class Policy, class Run, class KeysOut, class ValsOut, class Comp>
void multiway_merge(const Policy& policy, const std::vector<Run>& runs, index_t total, KeysOut keys_out,
                    ValsOut vals_out, Comp& comp) {
  const std::size_t k = runs.size();
  const int threads = packs_bits<KeysOut> || packs_bits<ValsOut> ? 1 : team_size(policy, total);
  std::vector<index_t> cuts(static_cast<std::size_t>(threads) * k);  // cut c in run r: cuts[c * k + r]
  parallel(threads, [&](const team& t) {
    const int p = t.size(), r = t.rank();
    index_t* const mine = cuts.data() + static_cast<std::size_t>(r) * k;
    t.run([&] {
      std::vector<index_t> hi(k), count(k);
      multiway_split(runs.data(), static_cast<int>(k), share_begin(total, p, r), mine, hi.data(), count.data(), comp);
    });
    t.barrier();
    t.run([&] {
      // Each run's cuts made non-decreasing: the same cuts for sorted input
      // and a strict weak ordering, and for any other input still pieces that
      // cover each run once, so no element is read or written by two threads.
      std::vector<Run> pieces(k);
      index_t o = 0;
      for (std::size_t i = 0; i < k; ++i) {
        index_t begin = 0, end = runs[i].n;
        for (int c = 0; c <= r; ++c) begin = std::max(begin, cuts[static_cast<std::size_t>(c) * k + i]);
        if (r + 1 < p) end = std::max(begin, cuts[static_cast<std::size_t>(r + 1) * k + i]);
        o += begin;
        pieces[i] = {runs[i].first + begin, end - begin, advanced(runs[i].vals, begin)};
      }
      serial::multiway_merge_into(pieces, keys_out + o, advanced(vals_out, o), comp);
    });
  });
}

}  // namespace libmerge::detail::omp_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::merge, backend::omp> {
  static constexpr bool available = true;

  template <class Policy, class AKeys, class BKeys, class AVals, class BVals, class KeysOut, class ValsOut,
            class Comp>
  static void run(const Policy& policy, AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals,
                  KeysOut keys_out, ValsOut vals_out, Comp comp) {
    omp_backend::merge(policy, a, na, b, nb, a_vals, b_vals, keys_out, vals_out, comp);
  }
};

template <>
struct backend_impl<algo::multiway_merge, backend::omp> {
  static constexpr bool available = true;

  template <class Policy, class Run, class KeysOut, class ValsOut, class Comp>
  static void run(const Policy& policy, const std::vector<Run>& runs, index_t total, KeysOut keys_out,
                  ValsOut vals_out, Comp comp) {
    omp_backend::multiway_merge(policy, runs, total, keys_out, vals_out, comp);
  }
};

}  // namespace libmerge::detail
