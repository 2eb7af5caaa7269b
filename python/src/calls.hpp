// The library calls behind the Python modules' operations, written once for
// every backend: calls<B, T, Comp> for one element type and order, where the
// backend B gives
//   B::policy()           the execution policy (lm::omp::par, lm::cuda::par.on(stream))
//   B::counting(i)        an iterator over i, i + 1, ... that its kernels can read
//   B::iota(p, n)         p[0, n) = 0, 1, ..., n - 1
//   B::starts(lengths, k) the value iterators of k runs holding the positions at, at + 1, ...
//                         (at: the elements of the runs before), as .begin()
// Positions are where each output element was: in a then b, or in the arrays
// one after another; the module gathers values by them (no instantiation per
// value type).
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <libmerge/libmerge.hpp>

#include "dtypes.hpp"

namespace lmpy {

template <class B, class T, class Comp>
struct calls {
  using value_type = T;

  static void sort(const B& be, void* keys, i64 n, Comp comp) {
    T* k = static_cast<T*>(keys);
    lm::sort(be.policy(), k, k + n, comp);
  }

  static void argsort(const B& be, void* keys, i64 n, i64* indices, Comp comp) {
    T* k = static_cast<T*>(keys);
    be.iota(indices, n);
    lm::sort_by_key(be.policy(), k, k + n, indices, comp);
  }

  // The first position i with keys[i] before keys[i - 1], or n: the scan that checked calls make.
  static i64 sorted_until(const B& be, const void* keys, i64 n, Comp comp) {
    if (n < 2) return n;
    using scan = lm::detail::impl_for<lm::algo::precondition, std::decay_t<decltype(be.policy())>>;
    return scan::sorted_until(be.policy(), static_cast<const T*>(keys), n, comp, "sorted_until", "a");
  }

  static void merge(const B& be, const void* a, i64 na, const void* b, i64 nb, void* out, i64* positions,
                    Comp comp) {
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    T* o = static_cast<T*>(out);
    if (positions == nullptr) {
      lm::merge(be.policy(), pa, pa + na, pb, pb + nb, o, comp);
    } else {
      lm::merge_by_key(be.policy(), pa, pa + na, pb, pb + nb, be.counting(0), be.counting(na), o, positions, comp);
    }
  }

  static void multiway_merge(const B& be, const void* const* firsts, const i64* lengths, i64 k, void* out,
                             i64* positions, Comp comp) {
    std::vector<std::pair<const T*, const T*>> ranges(static_cast<std::size_t>(k));
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const T* f = static_cast<const T*>(firsts[i]);
      ranges[i] = {f, f + lengths[i]};
    }
    T* o = static_cast<T*>(out);
    if (positions == nullptr) {
      lm::multiway_merge(be.policy(), ranges.begin(), ranges.end(), o, comp);
    } else {
      const auto starts = be.starts(lengths, k);
      lm::multiway_merge_by_key(be.policy(), ranges.begin(), ranges.end(), starts.begin(), o, positions, comp);
    }
  }

  // Forms (ops.hpp's search_form): a's index, a's index_match, both sides' index_match.
  template <lm::bounds Bounds>
  static void search(const B& be, int form, const T* a, i64 na, const T* b, i64 nb, i64* a_out, i64* b_out,
                     Comp comp) {
    using st = lm::search_type;
    switch (form) {
      case a_index:
        lm::sorted_search<Bounds, st::index, st::none>(be.policy(), a, a + na, b, b + nb, a_out, nullptr, comp);
        return;
      case a_index_match:
        lm::sorted_search<Bounds, st::index_match, st::none>(be.policy(), a, a + na, b, b + nb, a_out, nullptr,
                                                             comp);
        return;
      case both_index_match:
        lm::sorted_search<Bounds, st::index_match, st::index_match>(be.policy(), a, a + na, b, b + nb, a_out,
                                                                    b_out, comp);
        return;
      default: throw std::invalid_argument("libmerge.sorted_search: unknown form " + std::to_string(form));
    }
  }

  static void sorted_search(const B& be, bool upper, int form, const void* a, i64 na, const void* b, i64 nb,
                            i64* a_out, i64* b_out, Comp comp) {
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    if (upper) {
      search<lm::bounds::upper>(be, form, pa, na, pb, nb, a_out, b_out, comp);
    } else {
      search<lm::bounds::lower>(be, form, pa, na, pb, nb, a_out, b_out, comp);
    }
  }

  static void equality_count(const B& be, const void* a, i64 na, const void* b, i64 nb, i64* counts, Comp comp) {
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    lm::sorted_equality_count(be.policy(), pa, pa + na, pb, pb + nb, counts, comp);
  }
};

}  // namespace lmpy
