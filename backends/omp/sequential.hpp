// One thread's share: merge, short-run sorts, galloping search, and a merge's
// partition among threads. Shares no loops with the serial backend, the tests'
// oracle; merge path is the common one (backends/engine/search.hpp).
#pragma once

#include <algorithm>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../libmerge/detail/as_type.hpp"
#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/search_tags.hpp"
#include "../engine/search.hpp"

namespace libmerge::detail::omp_backend {

// ---------------------------------------------------------------------------
// Keys and values

// B's keys seen as A's key type, for the merge-path search.
template <class K, class It>
struct keys_as {
  It it;
  K operator[](index_t i) const { return static_cast<K>(it[i]); }
};

template <class K, class It>
auto view_as(It it) {
  if constexpr (std::is_same_v<typename std::iterator_traits<It>::value_type, K>) {
    return it;
  } else {
    return keys_as<K, It>{it};
  }
}

// it + k, where keys-only calls pass no_values for the value iterators.
template <class It>
It advanced(It it, index_t k) {
  if constexpr (has_values<It>) {
    return it + k;
  } else {
    (void)k;
    return it;
  }
}

// std::vector<bool> packs bits: threads writing neighbours would race, so one thread.
template <class It>
inline constexpr bool packs_bits =
    std::is_same_v<It, std::vector<bool>::iterator> || std::is_same_v<It, std::vector<bool>::const_iterator>;

// ---------------------------------------------------------------------------
// Sequential merge

// A key with its value, moved as one element: arrays in step were 3x slower
// (g++ branches on the second select; docs/omp-benchmark.md).
template <class K, class V>
struct keyed {
  K key;
  V value;
};

// The comparator on scratch elements: keys, or the keys of keyed pairs.
template <bool WithValues, class Comp>
struct key_order {
  Comp& comp;
  template <class T>
  bool operator()(const T& x, const T& y) const {
    if constexpr (WithValues) {
      return comp(x.key, y.key);
    } else {
      return comp(x, y);
    }
  }
};

// Contiguous ranges merge through pointers, so the source is a conditional move.
template <class It, class = void>
struct is_vector_iterator : std::false_type {};
template <class It>
struct is_vector_iterator<It, std::enable_if_t<!std::is_same_v<typename std::iterator_traits<It>::value_type, bool>>>
    : std::bool_constant<
          std::is_same_v<It, typename std::vector<typename std::iterator_traits<It>::value_type>::iterator> ||
          std::is_same_v<It, typename std::vector<typename std::iterator_traits<It>::value_type>::const_iterator>> {};

template <class It>
inline constexpr bool is_contiguous = std::is_pointer_v<It> || is_vector_iterator<It>::value;

// &it[0] of a contiguous range, null when empty (end must not be dereferenced).
template <class It>
auto to_pointer(It it, index_t n) {
  if constexpr (std::is_pointer_v<It>) {
    (void)n;
    return it;
  } else {
    return n > 0 ? &*it : static_cast<decltype(&*it)>(nullptr);
  }
}

// Stable merge of a[0, na) and b[0, nb) into out, values alongside (Move: the
// inputs are scratch). ~2x the textbook loop: a conditional-move source and
// both ends at once (two chains). Rounds bounded by the shorter input keep
// cursors in range whatever the comparator answers.
template <bool Move, bool WithValues, class KA, class KB, class VA, class VB, class K, class V, class Comp>
void merge_pointers(KA* a, index_t na, KB* b, index_t nb, VA* a_vals, VB* b_vals, K* out, V* vals_out,
                    Comp& comp) {
  // Moving only matters for types that own resources.
  auto take = [](auto* p) -> decltype(auto) {
    if constexpr (Move && !std::is_trivially_copyable_v<std::remove_cv_t<std::remove_pointer_t<decltype(p)>>>) {
      return std::move(*p);
    } else {
      return *p;
    }
  };
  KA* a_back = a + na;  // back cursors: one past the last element not yet taken
  KB* b_back = b + nb;
  K* out_back = out + (na + nb);
  VA* av_back = nullptr;
  VB* bv_back = nullptr;
  V* vals_back = nullptr;
  if constexpr (WithValues) {
    av_back = a_vals + na;
    bv_back = b_vals + nb;
    vals_back = vals_out + (na + nb);
  }
  auto front = [&] {
    const bool from_b = comp(*b, *a);
    *out++ = take(from_b ? b : a);
    if constexpr (WithValues) {
      *vals_out++ = take(from_b ? b_vals : a_vals);
      a_vals += !from_b;
      b_vals += from_b;
    }
    a += !from_b;
    b += from_b;
  };
  auto back = [&] {
    const bool from_a = comp(b_back[-1], a_back[-1]);
    *--out_back = take(from_a ? a_back - 1 : b_back - 1);
    if constexpr (WithValues) {
      *--vals_back = take(from_a ? av_back - 1 : bv_back - 1);
      av_back -= from_a;
      bv_back -= !from_a;
    }
    a_back -= from_a;
    b_back -= !from_a;
  };
  // A round of k steps takes at most 2k elements from either input.
  for (index_t k; (k = std::min(a_back - a, b_back - b) / 2) > 0;) {
    for (; k > 0; --k) {
      front();
      back();
    }
  }
  for (index_t k; (k = std::min(a_back - a, b_back - b)) > 0;) {
    for (; k > 0; --k) front();
  }
  for (; a < a_back; ++a) {
    *out++ = take(a);
    if constexpr (WithValues) *vals_out++ = take(a_vals++);
  }
  for (; b < b_back; ++b) {
    *out++ = take(b);
    if constexpr (WithValues) *vals_out++ = take(b_vals++);
  }
}

// The same merge for any random-access iterators and mixed types (B converted
// to A's): a branch, but proxies and conversions work.
template <bool Move, class AKeys, class BKeys, class AVals, class BVals, class KeysOut, class ValsOut, class Comp>
void merge_iterators(AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals, KeysOut out,
                     ValsOut vals_out, Comp& comp) {
  constexpr bool with_values = has_values<AVals>;
  using K = typename std::iterator_traits<AKeys>::value_type;
  auto pass = [](auto&& x) -> decltype(auto) {
    if constexpr (Move) {
      return std::move(x);
    } else {
      return std::forward<decltype(x)>(x);
    }
  };
  // Writes output o from b[j] (from_b) or a[i].
  auto put = [&](index_t o, bool from_b, index_t i, index_t j) {
    out[o] = pass(from_b ? as_type<K>(b[j]) : a[i]);
    if constexpr (with_values) {
      using V = typename std::iterator_traits<AVals>::value_type;
      vals_out[o] = pass(from_b ? as_type<V>(b_vals[j]) : a_vals[i]);
    }
  };
  index_t i = 0, j = 0, o = 0;                      // front cursors
  index_t i_end = na, j_end = nb, o_end = na + nb;  // back cursors, one past
  for (index_t k; (k = std::min(i_end - i, j_end - j) / 2) > 0;) {
    for (; k > 0; --k) {
      const bool from_b = comp(as_type<K>(b[j]), a[i]);
      put(o++, from_b, i, j);
      i += !from_b;
      j += from_b;
      const bool from_a = comp(as_type<K>(b[j_end - 1]), a[i_end - 1]);
      put(--o_end, !from_a, i_end - 1, j_end - 1);
      i_end -= from_a;
      j_end -= !from_a;
    }
  }
  for (index_t k; (k = std::min(i_end - i, j_end - j)) > 0;) {
    for (; k > 0; --k) {
      const bool from_b = comp(as_type<K>(b[j]), a[i]);
      put(o++, from_b, i, j);
      i += !from_b;
      j += from_b;
    }
  }
  for (; i < i_end; ++i) put(o++, false, i, j);
  for (; j < j_end; ++j) put(o++, true, i, j);
}

// merge_pointers when every range is contiguous and A and B hold the same
// types, else merge_iterators.
template <bool Move, class AKeys, class BKeys, class AVals, class BVals, class KeysOut, class ValsOut, class Comp>
void merge_sequential(AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals, KeysOut out,
                      ValsOut vals_out, Comp& comp) {
  constexpr bool with_values = has_values<AVals>;
  using K = typename std::iterator_traits<AKeys>::value_type;
  constexpr bool keys_direct = is_contiguous<AKeys> && is_contiguous<BKeys> && is_contiguous<KeysOut> &&
                               std::is_same_v<typename std::iterator_traits<BKeys>::value_type, K> &&
                               std::is_same_v<typename std::iterator_traits<KeysOut>::value_type, K>;
  constexpr bool values_direct = [] {
    if constexpr (!with_values) {
      return true;
    } else {
      using V = typename std::iterator_traits<AVals>::value_type;
      return is_contiguous<AVals> && is_contiguous<BVals> && is_contiguous<ValsOut> &&
             std::is_same_v<typename std::iterator_traits<BVals>::value_type, V> &&
             std::is_same_v<typename std::iterator_traits<ValsOut>::value_type, V>;
    }
  }();
  if constexpr (keys_direct && values_direct) {
    const index_t n = na + nb;
    if constexpr (with_values) {
      merge_pointers<Move, true>(to_pointer(a, na), na, to_pointer(b, nb), nb, to_pointer(a_vals, na),
                                 to_pointer(b_vals, nb), to_pointer(out, n), to_pointer(vals_out, n), comp);
    } else {
      using V = unsigned char;
      merge_pointers<Move, false>(to_pointer(a, na), na, to_pointer(b, nb), nb, static_cast<const V*>(nullptr),
                                  static_cast<const V*>(nullptr), to_pointer(out, n), static_cast<V*>(nullptr), comp);
    }
  } else {
    merge_iterators<Move>(a, na, b, nb, a_vals, b_vals, out, vals_out, comp);
  }
}

// ---------------------------------------------------------------------------
// Insertion sort

// Stable insertion sort; the j > 0 guard keeps it in range for any comparator.
template <class T, class Comp>
void insertion_sort(T* x, index_t n, const Comp& comp) {
  for (index_t i = 1; i < n; ++i) {
    if (!comp(x[i], x[i - 1])) continue;  // already in place: the common case of sorted input
    T item = std::move(x[i]);
    index_t j = i;
    for (; j > 0 && comp(item, x[j - 1]); --j) x[j] = std::move(x[j - 1]);
    x[j] = std::move(item);
  }
}

// Sorts x[0, 4) stably without a branch: a bubble network swapping neighbours
// only when the second is strictly smaller (conditional moves for small types).
template <class T, class Comp>
void sort4(T* x, const Comp& comp) {
  auto exchange = [&](T& a, T& b) {
    const bool swap = comp(b, a);
    const T lo = swap ? b : a;
    const T hi = swap ? a : b;
    a = lo;
    b = hi;
  };
  exchange(x[0], x[1]);
  exchange(x[2], x[3]);
  exchange(x[1], x[2]);
  exchange(x[0], x[1]);
  exchange(x[2], x[3]);
  exchange(x[1], x[2]);
}

// Host-only wrappers of the __host__ __device__ engine: silence nvcc's
// #20011-D/#20014-D for host-only iterators and comparators here alone.
#if defined(__CUDACC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20011, 20014
#endif
template <class It>
struct host_range {
  It it;
  LIBMERGE_HOST_DEVICE decltype(auto) operator[](index_t i) const { return it[i]; }
};

template <class Comp>
struct host_comparator {
  Comp& comp;
  template <class A, class B>
  LIBMERGE_HOST_DEVICE bool operator()(const A& a, const B& b) const {
    return comp(a, b);
  }
};
#if defined(__CUDACC__)
#pragma nv_diagnostic pop
#endif

// ---------------------------------------------------------------------------
// Bound search

// The first position in [pos, end) not before the needle (lower / upper), galloping from pos (the engine's
// gallop_within); probes stay in [pos, end).
template <bool Upper, class Hay, class Needle, class Comp>
index_t gallop(Hay hay, index_t pos, index_t end, const Needle& needle, Comp& comp) {
  host_comparator<Comp> host_comp{comp};
  return gallop_within<Upper>(host_range<Hay>{hay}, pos, end, needle, host_comp);
}

// ---------------------------------------------------------------------------
// Merge Path partition

// How many of the first `diag` outputs of merging a[0, na) and b[0, nb) come
// from A, with Bounds' tie rule (merge_path, on the host).
template <bounds Bounds, class AIt, class BIt, class Comp>
index_t path_crossing(AIt a, index_t na, BIt b, index_t nb, index_t diag, Comp& comp) {
  return merge_path<Bounds>(host_range<AIt>{a}, na, host_range<BIt>{b}, nb, diag, host_comparator<Comp>{comp});
}

// One thread's share of a merge: a[a_begin, a_end) and b[b_begin, b_end),
// whose merge is outputs [a_begin + b_begin, a_end + b_end).
struct merge_share {
  index_t a_begin, a_end, b_begin, b_end;
};

// Threads first .. last - 1 share one merge of a[0, na) and b[0, nb); thread k
// writes outputs [diag(k), diag(k + 1)), diag(first) = 0, diag(last) = na + nb;
// cross[k] is merge_path's answer for diag(k).
// Every thread clamps the crossings alike, so shares tile both inputs exactly
// even under a comparator that is no strict weak ordering.
template <class Diag>
merge_share share_of(const index_t* cross, int first, int last, int rank, index_t na, index_t nb, Diag&& diag) {
  index_t a = 0, a_begin = 0;
  for (int k = first + 1; k <= rank + 1; ++k) {
    if (k == rank + 1) a_begin = a;
    if (k == last) {
      a = na;
    } else {
      const index_t d = diag(k), step = d - diag(k - 1);
      a = std::clamp(cross[k], std::max(a, d - nb), std::min(a + step, na));
    }
  }
  const index_t a_end = a;
  return {a_begin, a_end, diag(rank) - a_begin, diag(rank + 1) - a_end};
}

}  // namespace libmerge::detail::omp_backend
