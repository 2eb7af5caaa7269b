// lm::multiway_merge and lm::multiway_merge_by_key: argument checks, then the
// policy's backend. The ranges come as in __gnu_parallel::multiway_merge: a
// host sequence of (first, last) pairs (anything with .first and .second), all
// of one iterator type, so K is known before anything runs and the ranges may
// lie anywhere (why: docs/api.md). Preconditions as merge's.
#pragma once

#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/checked.hpp"
#include "detail/config.hpp"
#include "functional.hpp"

namespace libmerge {
namespace detail {

// The value iterator of a run: what vals_firsts holds, or no_values.
template <class ValsIt, bool = has_values<ValsIt>>
struct run_values {
  using type = no_values;
};
template <class ValsIt>
struct run_values<ValsIt, true> {
  using type = std::decay_t<decltype(*std::declval<ValsIt&>())>;
};

// The ranges as runs (vals: the value iterators, in the same order, or
// no_values), each range's length checked; "ranges[k]" names range k.
template <class RangeIt, class ValsIt>
auto runs_of(RangeIt ranges_first, RangeIt ranges_last, ValsIt vals, const char* algorithm) {
  using KeyIt = std::decay_t<decltype(ranges_first->first)>;
  static_assert(std::is_same_v<KeyIt, std::decay_t<decltype(ranges_first->second)>>,
                "libmerge::multiway_merge: each range's first and last must be iterators of one type");
  using ValIt = typename run_values<ValsIt>::type;
  std::vector<sorted_run<KeyIt, ValIt>> runs;
  for (; ranges_first != ranges_last; ++ranges_first) {
    const std::string name = "ranges[" + std::to_string(runs.size()) + "]";
    const index_t n = checked_length(ranges_first->first, ranges_first->second, algorithm,
                                     (name + ".first").c_str(), (name + ".second").c_str());
    if constexpr (has_values<ValsIt>) {
      runs.push_back({ranges_first->first, n, *vals});
      ++vals;
    } else {
      runs.push_back({ranges_first->first, n, no_values{}});
    }
  }
  return runs;
}

// Overlap and (checked calls) sortedness checks, then the backend. Returns
// the elements in all.
template <class Policy, class Run, class KeysOut, class ValsOut, class Comp>
index_t multiway_merge_runs(const Policy& policy, const std::vector<Run>& runs, KeysOut keys_out, ValsOut vals_out,
                            Comp comp, const char* algorithm) {
  index_t total = 0;
  for (const Run& r : runs) total += r.n;
  if (total == 0) return 0;
  check_runs_disjoint(algorithm, runs, total, keys_out, vals_out,
                      [](const char* name, auto it, index_t n) { return range_of(name, it, n); });
  if constexpr (is_checked_v<Policy>) {
    for (std::size_t k = 0; k < runs.size(); ++k) {
      checked_sorted(policy, runs[k].first, runs[k].n, comp, algorithm, ("ranges[" + std::to_string(k) + "]").c_str());
    }
  }
  const auto& exec = resolve_policy(policy);
  impl_for<algo::multiway_merge, Policy>::run(exec, runs, total, keys_out, vals_out, comp);
  return total;
}

}  // namespace detail

// Merges the sorted ranges [ranges_first, ranges_last) into out. Stable: of
// equal keys, an earlier range's come first. Returns out's end.
template <class Policy, class RangeIt, class OutIt, class Comp = less<>, class = detail::require_policy<Policy>>
OutIt multiway_merge(const Policy& policy, RangeIt ranges_first, RangeIt ranges_last, OutIt out, Comp comp = Comp()) {
  const auto runs = detail::runs_of(ranges_first, ranges_last, detail::no_values{}, "multiway_merge");
  return out + detail::multiway_merge_runs(policy, runs, out, detail::no_values{}, comp, "multiway_merge");
}

// multiway_merge with values alongside: range k's values start at
// vals_firsts[k] (an iterator over K value iterators). Returns both outputs' ends.
template <class Policy, class RangeIt, class ValsFirstsIt, class KeyOutIt, class ValOutIt, class Comp = less<>,
          class = detail::require_policy<Policy>>
std::pair<KeyOutIt, ValOutIt> multiway_merge_by_key(const Policy& policy, RangeIt key_ranges_first,
                                                    RangeIt key_ranges_last, ValsFirstsIt vals_firsts,
                                                    KeyOutIt keys_out, ValOutIt vals_out, Comp comp = Comp()) {
  const auto runs = detail::runs_of(key_ranges_first, key_ranges_last, vals_firsts, "multiway_merge_by_key");
  const index_t total = detail::multiway_merge_runs(policy, runs, keys_out, vals_out, comp, "multiway_merge_by_key");
  return {keys_out + total, vals_out + total};
}

}  // namespace libmerge
