// Serial reference merge sort: insertion sort of short runs, then bottom-up
// merge passes between two scratch buffers. The caller's range is written only
// at the end: a throwing allocation or comparator leaves it as it was (a
// throwing key or value assignment there may leave it partly written).
#pragma once

#include <algorithm>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../libmerge/detail/config.hpp"
#include "merge.hpp"

namespace libmerge::detail::serial {

// Runs this short are sorted by insertion, which beats merging them.
inline constexpr index_t insertion_run = 16;

// Stable; the j > lo guard keeps it in range for any comparator.
template <bool WithValues, class K, class V, class Comp>
void insertion_sort(K* keys, V* vals, index_t lo, index_t hi, Comp& comp) {
  for (index_t i = lo + 1; i < hi; ++i) {
    K key = std::move(keys[i]);
    index_t j = i;
    if constexpr (WithValues) {
      V val = std::move(vals[i]);
      for (; j > lo && comp(key, keys[j - 1]); --j) {
        keys[j] = std::move(keys[j - 1]);
        vals[j] = std::move(vals[j - 1]);
      }
      vals[j] = std::move(val);
    } else {
      for (; j > lo && comp(key, keys[j - 1]); --j) keys[j] = std::move(keys[j - 1]);
    }
    keys[j] = std::move(key);
  }
}

// std::vector<bool> has no data(): scratch keeps bools as bytes.
template <class T>
using scratch_t = std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>;

// vals_in is read once, vals_out written once: merge_sort_by_key passes the
// same iterator for both, merge_sort_indices counting_values and the output.
template <class KeysIt, class ValsIn, class ValsOut, class Comp>
void merge_sort(KeysIt keys, index_t n, ValsIn vals_in, ValsOut vals_out, Comp& comp) {
  constexpr bool with_values = has_values<ValsOut>;
  using K = typename std::iterator_traits<KeysIt>::value_type;
  using V = typename std::conditional_t<with_values, std::iterator_traits<ValsOut>,
                                        std::iterator_traits<char*>>::value_type;
  using SK = scratch_t<K>;
  using SV = scratch_t<V>;

  // Not vector(first, last): g++ 12 warns (-Wnonnull) on a null empty range.
  std::vector<SK> src;
  std::vector<SV> vsrc;
  src.reserve(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) src.push_back(static_cast<SK>(keys[i]));
  if constexpr (with_values) {
    vsrc.reserve(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) vsrc.push_back(static_cast<SV>(vals_in[i]));
  }
  // Copies: sized without needing a default constructor.
  std::vector<SK> dst(src);
  std::vector<SV> vdst(vsrc);

  for (index_t lo = 0; lo < n; lo += insertion_run) {
    insertion_sort<with_values>(src.data(), vsrc.data(), lo, std::min(n, lo + insertion_run), comp);
  }

  for (index_t width = insertion_run; width < n; width *= 2) {
    for (index_t lo = 0; lo < n; lo += 2 * width) {
      const index_t mid = std::min(n, lo + width);
      const index_t hi = std::min(n, lo + 2 * width);
      if constexpr (with_values) {
        merge_into<true>(src.data() + lo, mid - lo, src.data() + mid, hi - mid, vsrc.data() + lo,
                         vsrc.data() + mid, dst.data() + lo, vdst.data() + lo, comp);
      } else {
        merge_into<true>(src.data() + lo, mid - lo, src.data() + mid, hi - mid, no_values{}, no_values{},
                         dst.data() + lo, no_values{}, comp);
      }
    }
    src.swap(dst);
    vsrc.swap(vdst);
  }

  for (index_t i = 0; i < n; ++i) keys[i] = static_cast<K>(std::move(src[static_cast<std::size_t>(i)]));
  if constexpr (with_values) {
    for (index_t i = 0; i < n; ++i) vals_out[i] = static_cast<V>(std::move(vsrc[static_cast<std::size_t>(i)]));
  }
}

}  // namespace libmerge::detail::serial

namespace libmerge::detail {

template <>
struct backend_impl<algo::merge_sort, backend::serial> {
  static constexpr bool available = true;

  template <class Policy, class KeysIt, class ValsIn, class ValsOut, class Comp>
  static void run(const Policy&, KeysIt keys, index_t n, ValsIn vals_in, ValsOut vals_out, Comp comp) {
    serial::merge_sort(keys, n, vals_in, vals_out, comp);
  }
};

}  // namespace libmerge::detail
