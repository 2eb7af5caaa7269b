// The paths of the CUDA merge sort (backends/cuda/merge_sort.cuh) as the GPU
// fuzzer (test/gpu/cuda_fuzz.cu) names and counts them: the planning facts
// of one sort (filled by internals::cuda::sort_choice_of from the backend's
// own host-side planning) and of its input (read on the host), the names of
// the paths they take, the paths a fuzzing run must take, the sizes it
// draws. Plain C++: test/cpu/test_fuzz.cpp checks it without a GPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace fuzz {

// Which kernels a sort of n keys runs (sort_with_boxes, launch_one_kernel_sort).
enum class engine { trivial, one_tile, one_kernel, one_kernel_after_block_sort, separate };

struct sort_plan {
  std::int64_t n = 0;
  engine how = engine::trivial;
  std::vector<int> ways;  // separate kernels: the ways of each merge pass (plan_passes)
  int box = 0;            // separate kernels: the passes' tiles, 0 base, 1 mid-sized sorts', 2 large sorts'
  bool numbers = false;   // keys that are numbers under their natural order (orders_numbers_v)
  std::int64_t bs_nv = 0;  // the block-sort tile: sorted runs this wide skip it
  std::vector<std::int64_t> edges;  // the sizes where the plan changes, for draw_size
};

// What the sortedness read will find (sort_flags::runs: the gcd of the
// positions i + 1 where key i + 1 comes before key i, 0 for none), and
// whether NaN and both zeros are among the keys.
struct input_facts {
  std::uint64_t descent_gcd = 0;
  bool nan = false, zeros = false;
};

template <class T, class Comp>
input_facts describe(const std::vector<T>& keys, Comp comp) {
  input_facts f;
  bool pos = false, neg = false;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i + 1 < keys.size() && comp(keys[i + 1], keys[i])) f.descent_gcd = std::gcd(f.descent_gcd, std::uint64_t(i + 1));
    if constexpr (std::is_floating_point_v<T>) {
      f.nan |= std::isnan(keys[i]);
      pos |= keys[i] == 0 && !std::signbit(keys[i]);
      neg |= keys[i] == 0 && std::signbit(keys[i]);
    }
  }
  f.zeros = pos && neg;
  return f;
}

inline const char* engine_name(const sort_plan& p) {
  switch (p.how) {
    case engine::trivial: return "fewer than 2 keys";
    case engine::one_tile: return "one tile";
    case engine::one_kernel: return "one kernel";
    case engine::one_kernel_after_block_sort: return "one kernel after block_sort_kernel";
    default: break;
  }
  const bool four = std::count(p.ways.begin(), p.ways.end(), 4) > 0;
  if (p.ways.empty()) return "block sort only";
  if (!four) return "2-way passes";
  return p.ways.back() == 2 ? "4-way passes + 2-way last" : "4-way passes";
}

// The names of the paths a sort takes: "<kind>: <path>", kind the call
// (keys, by_key, indices); one for the kernels, and one for each of the
// passes' larger tiles, an input the sortedness read cuts short (sorted, or
// sorted runs of a block-sort tile or more), the numeric 4-way passes on
// NaN and both zeros, the 4-way passes of any other comparator.
inline std::vector<std::string> path_names(const std::string& kind, const sort_plan& p, const input_facts& in) {
  std::vector<std::string> names{kind + ": " + engine_name(p)};
  auto add = [&](const std::string& s) { names.push_back(kind + ": " + s); };
  if (p.how == engine::trivial || p.how == engine::one_tile) return names;
  const bool separate = p.how == engine::separate;
  const std::string where = separate ? " (separate kernels)" : " (one kernel)";
  if (separate && p.box == 1) add("mid-size tiles");
  if (separate && p.box == 2) add("large tiles");
  if (in.descent_gcd == 0) add("presorted" + where);
  if (in.descent_gcd >= static_cast<std::uint64_t>(p.bs_nv)) add("sorted runs" + where);
  const bool four = separate && std::count(p.ways.begin(), p.ways.end(), 4) > 0;
  if (four && p.numbers && in.nan && in.zeros) add("4-way numeric, NaN and +-0");
  if (four && !p.numbers) add("4-way, any comparator");
  return names;
}

// The paths a run of the default length takes (test/gpu/cuda_fuzz.cu aims
// a case at each in turn): on sm_90 every one is reachable.
inline std::vector<std::string> required_paths() {
  std::vector<std::string> r;
  for (const char* k : {"keys", "by_key", "indices"}) {
    for (const char* p : {"one tile", "one kernel", "2-way passes", "4-way passes", "4-way passes + 2-way last",
                          "presorted (one kernel)", "presorted (separate kernels)", "sorted runs (one kernel)",
                          "sorted runs (separate kernels)", "4-way numeric, NaN and +-0", "4-way, any comparator"}) {
      r.push_back(std::string(k) + ": " + p);
    }
  }
  // Keys only: the block sort before the one-kernel passes, and the passes'
  // larger tiles (the tuning has them for keys alone).
  for (const char* p : {"one kernel after block_sort_kernel", "mid-size tiles", "large tiles"}) {
    r.push_back(std::string("keys: ") + p);
  }
  return r;
}

// Cases per path, and the paths a run missed.
struct coverage {
  std::map<std::string, std::int64_t> count;
  void add(const std::vector<std::string>& names) {
    for (const auto& s : names) ++count[s];
  }
  std::vector<std::string> missed() const {
    std::vector<std::string> m;
    for (const auto& s : required_paths()) {
      if (count.find(s) == count.end()) m.push_back(s);
    }
    return m;
  }
  void print() const {
    std::printf("sort paths taken (cases):\n");
    for (const auto& s : required_paths()) {
      const auto it = count.find(s);
      std::printf("  %8lld  %s\n", static_cast<long long>(it == count.end() ? 0 : it->second), s.c_str());
    }
    for (const auto& [s, c] : count) {
      const auto r = required_paths();
      if (std::find(r.begin(), r.end(), s) == r.end()) std::printf("  %8lld  %s (not required)\n", static_cast<long long>(c), s.c_str());
    }
  }
};

// A size in [lo, hi]: one draw in 32 of the smallest three, a third at a
// plan edge (one below, on, one above), the rest log-uniform.
inline std::int64_t draw_size(std::mt19937_64& g, std::int64_t lo, std::int64_t hi, const std::vector<std::int64_t>& edges) {
  if (g() % 32 == 0) return std::min<std::int64_t>(hi, lo + static_cast<std::int64_t>(g() % 3));
  std::vector<std::int64_t> near;
  for (std::int64_t e : edges) {
    for (std::int64_t d = -1; d <= 1; ++d) {
      if (e + d >= lo && e + d <= hi) near.push_back(e + d);
    }
  }
  if (!near.empty() && g() % 3 == 0) return near[g() % near.size()];
  const double l = std::log2(static_cast<double>(std::max<std::int64_t>(lo, 1)));
  const double h = std::log2(static_cast<double>(hi) + 1);
  const double x = l + (h - l) * static_cast<double>(g() >> 11) / 9007199254740992.0;
  return std::clamp(static_cast<std::int64_t>(std::exp2(x)), lo, hi);
}

}  // namespace fuzz
