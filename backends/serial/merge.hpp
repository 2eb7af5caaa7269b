// Serial reference merge: the two-finger loop of std::merge (seeds/004). It
// shares no code with the other backends, so tests comparing them catch a bug
// in either.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../libmerge/detail/as_type.hpp"
#include "../../libmerge/detail/config.hpp"

namespace libmerge::detail::serial {

// Stable: on ties A comes first. Move: the inputs are merge sort's scratch.
// *out, ++out, not out[i]: g++ 12 -O3 warns (-Wstringop-overflow) otherwise.
template <bool Move = false, class AKeys, class BKeys, class AVals, class BVals, class KeysOut, class ValsOut,
          class Comp>
void merge_into(AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals, KeysOut out,
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
  index_t i = 0, j = 0;
  auto take_a = [&] {
    *out = pass(a[i]);
    ++out;
    if constexpr (with_values) {
      *vals_out = pass(a_vals[i]);
      ++vals_out;
    }
    ++i;
  };
  auto take_b = [&] {
    *out = as_type<K>(pass(b[j]));
    ++out;
    if constexpr (with_values) {
      using V = typename std::iterator_traits<AVals>::value_type;
      *vals_out = as_type<V>(pass(b_vals[j]));
      ++vals_out;
    }
    ++j;
  };
  while (i < na && j < nb) {
    if (comp(as_type<K>(b[j]), a[i])) {
      take_b();
    } else {
      take_a();
    }
  }
  while (i < na) take_a();
  while (j < nb) take_b();
}

// K-way reference merge: a heap of the runs' heads; of equal keys the lowest
// run's goes first (stable). Runs: detail::sorted_run.
template <class Run, class KeysOut, class ValsOut, class Comp>
void multiway_merge_into(const std::vector<Run>& runs, KeysOut out, ValsOut vals_out, Comp& comp) {
  struct head {
    std::size_t run;
    index_t at;
  };
  // The heap's "less": a is taken after b.
  const auto after = [&](const head& a, const head& b) {
    const auto& ka = runs[a.run].first[a.at];
    const auto& kb = runs[b.run].first[b.at];
    if (comp(kb, ka)) return true;
    if (comp(ka, kb)) return false;
    return a.run > b.run;
  };
  std::vector<head> heap;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].n > 0) heap.push_back({k, 0});
  }
  std::make_heap(heap.begin(), heap.end(), after);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    head& h = heap.back();
    const Run& r = runs[h.run];
    *out = r.first[h.at];
    ++out;
    if constexpr (has_values<ValsOut>) {
      *vals_out = r.vals[h.at];
      ++vals_out;
    }
    if (++h.at < r.n) {
      std::push_heap(heap.begin(), heap.end(), after);
    } else {
      heap.pop_back();
    }
  }
}

}  // namespace libmerge::detail::serial

namespace libmerge::detail {

template <>
struct backend_impl<algo::merge, backend::serial> {
  static constexpr bool available = true;

  template <class Policy, class AKeys, class BKeys, class AVals, class BVals, class KeysOut,
            class ValsOut, class Comp>
  static void run(const Policy&, AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals,
                  KeysOut keys_out, ValsOut vals_out, Comp comp) {
    serial::merge_into(a, na, b, nb, a_vals, b_vals, keys_out, vals_out, comp);
  }
};

template <>
struct backend_impl<algo::multiway_merge, backend::serial> {
  static constexpr bool available = true;

  template <class Policy, class Run, class KeysOut, class ValsOut, class Comp>
  static void run(const Policy&, const std::vector<Run>& runs, index_t, KeysOut keys_out, ValsOut vals_out,
                  Comp comp) {
    serial::multiway_merge_into(runs, keys_out, vals_out, comp);
  }
};

}  // namespace libmerge::detail
