// OpenMP sorted search and equality count: a merge of A and B that keeps only
// positions (Modern GPU's SortedSearch, seeds/003). With bounds::lower, A's lower bound into
// B counts the B elements before it in the merge that puts A first on ties, B's
// upper bound into A the A elements before it; bounds::upper puts B first. So
// the Merge Path partition (merge.hpp) gives each thread a share in which every
// bound lies inside the other input's part, walked forward, side by side.
#pragma once

#include <iterator>
#include <limits>
#include <type_traits>
#include <vector>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/search_tags.hpp"
#include "sequential.hpp"
#include "team.hpp"

namespace libmerge::detail::omp_backend {

// A share walks its haystack step by step while that is at most this many
// times longer than its needles; sparser needles gallop.
inline constexpr index_t dense_ratio = 4;

// One side of a search within a thread's share: needles[begin, end) get their
// bound into hay, which lies in [hay_begin, hay_end]; nh (the whole haystack's
// length) bounds the match test. Returns the number of matched needles.
// Dense needles into a contiguous index output walk branch-free (the bound is
// stored at every step; the last store for a needle stands); others gallop
// from the previous bound, log2 of the gap between needles.
template <bool Upper, search_type Type, class Needles, class Hay, class Out, class Comp>
index_t search_share(Needles needles, index_t begin, index_t end, Hay hay, index_t hay_begin, index_t hay_end,
                     index_t nh, Out out, Comp& comp) {
  if constexpr (Type == search_type::none) {
    return 0;
  } else {
    using T = typename std::iterator_traits<Out>::value_type;
    index_t pos = hay_begin;
    if constexpr (Type == search_type::index && is_contiguous<Out>) {
      if (hay_end - hay_begin <= dense_ratio * (end - begin)) {
        index_t i = begin;
        for (index_t k; (k = std::min(end - i, hay_end - pos)) > 0;) {
          for (; k > 0; --k) {
            bool skip;  // the haystack element comes before the needle
            if constexpr (Upper) {
              skip = !comp(needles[i], hay[pos]);
            } else {
              skip = comp(hay[pos], needles[i]);
            }
            out[i] = static_cast<T>(pos);
            i += !skip;
            pos += skip;
          }
        }
        for (; i < end; ++i) out[i] = static_cast<T>(pos);
        return 0;
      }
    }
    index_t matches = 0;
    for (index_t i = begin; i < end; ++i) {
      const auto& needle = needles[i];
      pos = gallop<Upper>(hay, pos, hay_end, needle, comp);
      bool match = false;
      if constexpr (writes_match(Type)) {
        // An equal element can only be next to the bound: hay[pos] for a
        // lower bound, hay[pos - 1] for an upper one.
        if constexpr (Upper) {
          match = pos > 0 && !comp(hay[pos - 1], needle);
        } else {
          match = pos < nh && !comp(needle, hay[pos]);
        }
        matches += match;
      }
      out[i] = encode_search_result<Type, T>(pos, match);
    }
    return matches;
  }
}

template <bounds Bounds, search_type TypeA, search_type TypeB, class Policy, class AIt, class BIt, class AOut,
          class BOut, class Comp>
match_counts sorted_search(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                           Comp& comp) {
  constexpr bool a_upper = Bounds == bounds::upper;
  const index_t n = na + nb;
  const int threads = packs_bits<AOut> || packs_bits<BOut> ? 1 : team_size(policy, n);
  std::vector<index_t> cross(static_cast<std::size_t>(threads) + 1);
  std::vector<match_counts> counts(static_cast<std::size_t>(threads));
  parallel(threads, [&](const team& t) {
    const int p = t.size(), r = t.rank();
    auto diag = [&](int k) { return share_begin(n, p, k); };
    t.run([&] { cross[r] = path_crossing<Bounds>(a, na, b, nb, diag(r), comp); });
    t.barrier();
    t.run([&] {
      const merge_share s = share_of(cross.data(), 0, p, r, na, nb, diag);
      match_counts& m = counts[static_cast<std::size_t>(r)];
      m.a = search_share<a_upper, TypeA>(a, s.a_begin, s.a_end, b, s.b_begin, s.b_end, nb, a_out, comp);
      m.b = search_share<!a_upper, TypeB>(b, s.b_begin, s.b_end, a, s.a_begin, s.a_end, na, b_out, comp);
    });
  });
  match_counts total;
  for (const match_counts& m : counts) {
    total.a += m.a;
    total.b += m.b;
  }
  return total;
}

// For each element of A: its upper bound into B minus its lower bound. The
// lower bounds walk the share of B as in sorted_search; the upper bound of an
// element may lie past the share (a long run of equal keys in B), so that
// cursor gallops on to the end of B: a run costs log2 of its length, once.
template <class Policy, class AIt, class BIt, class CountsOut, class Comp>
void sorted_equality_count(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, CountsOut counts_out,
                           Comp& comp) {
  using T = typename std::iterator_traits<CountsOut>::value_type;
  const index_t n = na + nb;
  const int threads = packs_bits<CountsOut> ? 1 : team_size(policy, n);
  std::vector<index_t> cross(static_cast<std::size_t>(threads) + 1);
  parallel(threads, [&](const team& t) {
    const int p = t.size(), r = t.rank();
    auto diag = [&](int k) { return share_begin(n, p, k); };
    t.run([&] { cross[r] = path_crossing<bounds::lower>(a, na, b, nb, diag(r), comp); });
    t.barrier();
    t.run([&] {
      const merge_share s = share_of(cross.data(), 0, p, r, na, nb, diag);
      index_t lower = s.b_begin, upper = s.b_begin;
      for (index_t i = s.a_begin; i < s.a_end; ++i) {
        const auto& needle = a[i];
        lower = gallop<false>(b, lower, s.b_end, needle, comp);
        upper = gallop<true>(b, std::max(lower, upper), nb, needle, comp);
        counts_out[i] = static_cast<T>(upper - lower);
      }
    });
  });
}

}  // namespace libmerge::detail::omp_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::sorted_search, backend::omp> {
  static constexpr bool available = true;

  template <bounds Bounds, search_type TypeA, search_type TypeB, class Policy, class AIt, class BIt, class AOut,
            class BOut, class Comp>
  static match_counts run(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                          Comp comp) {
    return omp_backend::sorted_search<Bounds, TypeA, TypeB>(policy, a, na, b, nb, a_out, b_out, comp);
  }
};

template <>
struct backend_impl<algo::sorted_equality_count, backend::omp> {
  static constexpr bool available = true;

  template <class Policy, class AIt, class BIt, class CountsOut, class Comp>
  static void run(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, CountsOut counts, Comp comp) {
    omp_backend::sorted_equality_count(policy, a, na, b, nb, counts, comp);
  }
};

}  // namespace libmerge::detail
