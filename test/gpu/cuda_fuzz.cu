// The differential fuzzer on the GPU: lm::cuda::par against lm::serial (the
// oracle, itself fuzzed against the standard library by test/cpu/test_fuzz)
// on the inputs of test/support/fuzz_inputs.hpp: every fundamental type as
// keys of the sort (keys only) and the merge; the three sorts, both merges,
// sorted_search (both bounds, every search type on each side) and
// sorted_equality_count on a set of key types and comparators (NaN and both
// zeros among floating-point keys). Sizes up to 2^27 (2^28 for the large
// sorts' tiles, 1-byte keys), log-uniform with a third at the sort plan's
// edges (a tile, a size class, +-1).
//
// Every sort case prints the path each sort took, named from the backend's
// own host-side planning (internals::cuda::sort_choice_of) and what the
// sortedness read finds in its input (test/support/fuzz_paths.hpp). Every
// other seed aims at one of those paths in turn (round_length seeds take
// them all); the run ends with the table of paths taken, and fails when a
// run of a whole round missed one.
//
// Sorts are checked in O(n), which is what lets 2^27 keys through: the
// by-key sort of keys with their positions must be a stable sorted
// permutation (exactly lm::serial's result), keys only and indices must
// match it; (types sorted by key alone) sorted, and the same multiset of keys.
// Up to 2^18 keys, lm::serial's result too.
//
//   libmerge_cuda_fuzz [--seed S] [--seconds T] [--max-log2 K]
//
// Prints the seed range it covered; a failing case prints its seed, and
// `--seed S --seconds 0` runs that case alone. Exit code 1 on a mismatch or
// a missed path; 30 s by default, at least one round (CTest runs it so where
// a GPU is present).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/sequence.h>

#include <libmerge/libmerge.hpp>

#include "fuzz_inputs.hpp"
#include "fuzz_paths.hpp"
#include "internals.cuh"

namespace lm = libmerge;

namespace {

int max_log2 = 27;
bool failed = false;
fuzz::coverage paths;

// (bool through thrust::host_vector: std::vector<bool> is packed bits.)
template <class T>
thrust::device_vector<T> dev(const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return thrust::device_vector<T>(thrust::host_vector<T>(v.begin(), v.end()));
  } else {
    return thrust::device_vector<T>(v.begin(), v.end());
  }
}
template <class T>
std::vector<T> host(const thrust::device_vector<T>& d) {
  if constexpr (std::is_same_v<T, bool>) {
    const thrust::host_vector<T> h = d;
    return std::vector<T>(h.begin(), h.end());
  } else {
    std::vector<T> v(d.size());
    thrust::copy(d.begin(), d.end(), v.begin());
    return v;
  }
}

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("MISMATCH %s\n", what.c_str());
    failed = true;
  }
}

// The key types and comparators (with_combo): every fundamental type under
// lm::less; some under lm::greater and the coarse comparators too. "Full"
// ones run every algorithm; the others the sort of keys and the merge.
struct combo {
  int type;  // fuzz::with_key_type
  int comp;  // 0 less, 1 greater, 2 coarse
  bool full;
};
constexpr combo combos[] = {
    {0, 0, false},  {1, 0, false},  {2, 0, true},  {3, 0, false},  {4, 0, false}, {5, 0, true},
    {6, 0, false},  {7, 0, false},  {8, 0, false}, {9, 0, true},   {10, 0, true}, {11, 0, false},
    {12, 0, true},  {13, 0, true},  {14, 0, false}, {15, 0, false}, {16, 0, false}, {5, 1, true},
    {12, 1, true},  {13, 1, true},  {9, 2, true},  {13, 2, true},  {5, 2, true}};
constexpr int combo_count = static_cast<int>(sizeof(combos) / sizeof(combos[0]));
enum : int { int_less = 5, uchar_less = 2, float_less = 12, int_greater = 17, float_greater = 18, int_coarse = 22 };

// f(a key, the comparator, the name, std::bool_constant<full>) for combo id:
// only the 23 combos are compiled, and the non-full ones without the
// algorithms they skip.
template <std::size_t I, class F>
void combo_call(F& f) {
  constexpr combo c = combos[I];
  using T = std::tuple_element_t<c.type, fuzz::key_type_list>;
  const std::string name = fuzz::key_type_names[c.type];
  using full = std::bool_constant<c.full>;
  if constexpr (c.comp == 0) {
    f(T{}, lm::less<>(), name + " less", full{});
  } else if constexpr (c.comp == 1) {
    f(T{}, lm::greater<>(), name + " greater", full{});
  } else if constexpr (std::is_same_v<T, double>) {
    f(T{}, fuzz::coarse_less_double(), name + " coarse", full{});
  } else {
    f(T{}, fuzz::coarse_less(), name + " coarse", full{});
  }
}
template <class F, std::size_t... I>
void with_combo(int id, F&& f, std::index_sequence<I...>) {
  ((id == static_cast<int>(I) ? combo_call<I>(f) : void()), ...);
}
template <class F>
void with_combo(int id, F&& f) {
  with_combo(id, f, std::make_index_sequence<combo_count>{});
}

// A path to aim a case at (fuzz_paths.hpp's names, for every kind of sort
// it can be taken by), with a combo, a size range and a shape that reach it
// on sm_90; the size is drawn until the plan takes the path.
struct aim {
  const char* path;
  int combo;
  std::int64_t lo, hi;
  int shape;
};
constexpr std::int64_t k2(int k) { return std::int64_t(1) << k; }
const aim aims[] = {
    {"one tile", int_less, 2, 2048, fuzz::random_keys},
    {"one kernel", int_less, 5000, k2(21) - 1, fuzz::random_keys},
    {"one kernel after block_sort_kernel", float_less, k2(22), k2(23) - 1, fuzz::random_keys},
    {"2-way passes", int_coarse, k2(23), k2(24) - 1, fuzz::random_keys},
    {"4-way passes", int_less, k2(23), k2(25), fuzz::few_distinct},
    {"4-way passes + 2-way last", float_greater, k2(23), k2(25), fuzz::random_keys},
    {"presorted (one kernel)", int_less, 5000, k2(21) - 1, fuzz::ascending},
    {"presorted (separate kernels)", int_less, k2(23), k2(25), fuzz::ascending},
    {"sorted runs (one kernel)", int_less, k2(14), k2(21) - 1, fuzz::runs_of_width},
    {"sorted runs (separate kernels)", float_less, k2(23), k2(25), fuzz::runs_of_width},
    {"4-way numeric, NaN and +-0", float_less, k2(23), k2(25), fuzz::random_keys},
    {"4-way, any comparator", int_coarse, k2(26), k2(27), fuzz::random_keys},
    {"mid-size tiles", float_greater, k2(26), k2(27), fuzz::runs_of_100},
    {"large tiles", uchar_less, k2(28), k2(28) + k2(20), fuzz::random_keys},
};
constexpr int aim_count = static_cast<int>(sizeof(aims) / sizeof(aims[0]));
// Every other seed aims: a round of consecutive seeds aims at every path.
constexpr std::uint64_t round_length = 2 * aim_count;

// Sorts beyond 2^27 keys run keys only (memory, and the by-key check's time).
constexpr std::int64_t pairs_max = std::int64_t(1) << 27;


// The plan of one kind of sort of n keys (fewer than 2: the public entry
// returns, but for merge_sort_indices of one key).
template <class K, class V, bool WithValues, bool Indices, class Comp>
fuzz::sort_plan plan_of(std::int64_t n) {
  fuzz::sort_plan p;
  p.n = n;
  const auto c = internals::cuda::sort_choice_of<K, V, WithValues, Indices, Comp>(std::max<std::int64_t>(n, 2));
  const int log2s[] = {c.separate_log2, c.one_kernel_log2, c.four_way_log2, c.mid_log2, c.large_log2};
  for (int log2 : log2s) {
    if (log2 > 0) p.edges.push_back(std::int64_t(1) << log2);
  }
  const long long tiles[] = {c.one_kernel_nv, c.bs_nv, 2 * c.bs_nv};
  for (long long e : tiles) p.edges.push_back(e);
  if (n < 2 && !(Indices && n == 1)) return p;
  using fuzz::engine;
  p.how = c.one_tile ? engine::one_tile
          : c.block_sort_first ? engine::one_kernel_after_block_sort
          : c.one_kernel ? engine::one_kernel : engine::separate;
  p.ways = c.ways;
  p.box = c.box;
  p.numbers = c.numbers;
  p.bs_nv = c.bs_nv;
  return p;
}

// The plans of the three sorts of a case: keys only, by key (int32 values),
// indices (int32); by key and indices for full combos up to pairs_max.
struct case_plans {
  std::vector<std::pair<std::string, fuzz::sort_plan>> kinds;
  std::int64_t widest_tile() const {
    std::int64_t w = 1;
    for (const auto& k : kinds) w = std::max(w, k.second.bs_nv);
    return w;
  }
};
template <class T, class Comp, bool Full>
case_plans plans_of(std::int64_t n) {
  case_plans c;
  c.kinds.emplace_back("keys", plan_of<T, char, false, false, Comp>(n));
  if constexpr (Full) {
    if (n > pairs_max) return c;
    c.kinds.emplace_back("by_key", plan_of<T, std::int32_t, true, false, Comp>(n));
    c.kinds.emplace_back("indices", plan_of<T, std::int32_t, true, true, Comp>(n));
  }
  return c;
}

// What the sortedness read should find in a shape (for aiming; the case
// counts what describe() finds in the keys).
fuzz::input_facts predicted(int shape, std::int64_t n, std::int64_t width, bool floating) {
  fuzz::input_facts f;
  const bool sorted = shape == fuzz::ascending || shape == fuzz::all_equal || (shape == fuzz::runs_of_width && n <= width);
  f.descent_gcd = sorted ? 0 : (shape == fuzz::runs_of_width ? static_cast<std::uint64_t>(width) : 1);
  f.nan = f.zeros = floating && shape == fuzz::random_keys;
  return f;
}

// Sorted runs as wide as a block-sort tile or more (1 to 3 tiles, or the
// power of two above), or now and then narrower ones (no skip).
std::int64_t run_width(std::mt19937_64& g, std::int64_t tile) {
  switch (g() % 4) {
    case 0: return 1 + static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(tile));
    case 1: {
      std::int64_t w = 1;
      while (w < tile) w *= 2;
      return w;
    }
    default: return tile * static_cast<std::int64_t>(1 + g() % 3);
  }
}

// The size (and run width) of a case aimed at a path: drawn until every
// kind of sort of the case takes it, or the most of them in 400 draws.
template <class T, class Comp, bool Full>
std::int64_t aimed_size(std::mt19937_64& g, const aim& a, std::int64_t& width) {
  const auto edges = plans_of<T, Comp, false>(a.lo).kinds[0].second.edges;
  std::int64_t best = a.lo, best_width = 1;
  int best_hits = -1;
  for (int t = 0; t < 400; ++t) {
    const std::int64_t n = fuzz::draw_size(g, a.lo, a.hi, edges);
    const case_plans c = plans_of<T, Comp, Full>(n);
    const std::int64_t w = c.widest_tile() * static_cast<std::int64_t>(1 + g() % 2);
    const auto facts = predicted(a.shape, n, w, std::is_floating_point_v<T>);
    int hits = 0;
    for (const auto& [kind, plan] : c.kinds) {
      const auto names = fuzz::path_names(kind, plan, facts);
      hits += std::count(names.begin(), names.end(), kind + ": " + a.path) > 0;
    }
    if (hits > best_hits) best = n, best_width = w, best_hits = hits;
    if (hits == static_cast<int>(c.kinds.size())) break;
  }
  width = best_width;
  return best;
}

// Whether keys k and values v are the stable sort of `in` under comp with
// values its positions (what lm::serial gives): a permutation whose keys are
// the input's, in order, equivalent keys in input order. One pass, any size.
template <class T, class V, class Comp>
bool stable_sort_of(const std::vector<T>& in, const std::vector<T>& k, const std::vector<V>& v, Comp comp) {
  const std::size_t n = in.size();
  if (k.size() != n || v.size() != n) return false;
  std::vector<bool> seen(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto j = static_cast<std::size_t>(v[i]);
    if (v[i] < 0 || j >= n || seen[j]) return false;
    seen[j] = true;
    if (!fuzz::same_key(k[i], in[j])) return false;
    if (i > 0 && (comp(k[i], k[i - 1]) || (!comp(k[i - 1], k[i]) && v[i - 1] > v[i]))) return false;
  }
  return true;
}

// Sorted under comp, and the same multiset of keys as `in` (a sum of their
// mixed bits): the sort of keys under an order whose equivalent keys are
// equal (lm::less, lm::greater on integers and bool).
template <class T, class Comp>
bool sorted_permutation(const std::vector<T>& in, const std::vector<T>& k, Comp comp) {
  auto mix = [](const T& x) {
    std::uint64_t z = 0;
    std::memcpy(&z, &x, sizeof(T) < 8 ? sizeof(T) : 8);
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  if (k.size() != in.size()) return false;
  std::uint64_t a = 0, b = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    a += mix(in[i]);
    b += mix(k[i]);
    if (i > 0 && comp(k[i], k[i - 1])) return false;
  }
  return a == b;
}

// merge_sort_by_key and merge_sort_indices on the GPU, checked in one pass
// (and against lm::serial up to 2^18 keys): the sorted keys, for the sort of
// keys only.
template <class T, class Comp>
std::vector<T> check_pair_sorts(const std::vector<T>& keys, Comp comp, const std::string& what) {
  const auto n = static_cast<std::int64_t>(keys.size());
  auto dk = dev(keys);
  thrust::device_vector<std::int32_t> dv(keys.size());
  thrust::sequence(dv.begin(), dv.end(), std::int32_t(0));
  lm::merge_sort_by_key(lm::cuda::par, dk.begin(), dk.end(), dv.begin(), comp);
  const auto k = host(dk);
  const auto v = host(dv);
  expect(stable_sort_of(keys, k, v, comp), what + " merge_sort_by_key");
  if (n <= k2(18)) {
    auto wk = keys;
    std::vector<std::int32_t> wv(keys.size());
    std::iota(wv.begin(), wv.end(), std::int32_t(0));
    lm::merge_sort_by_key(lm::serial, wk.begin(), wk.end(), wv.begin(), comp);
    expect(fuzz::same(k, wk) && v == wv, what + " merge_sort_by_key against lm::serial");
  }
  dk = dev(keys);
  thrust::device_vector<std::int32_t> idx(keys.size(), -1);
  lm::merge_sort_indices(lm::cuda::par, dk.begin(), dk.end(), idx.begin(), comp);
  expect(fuzz::same(host(dk), k) && host(idx) == v, what + " merge_sort_indices");
  return k;
}

template <class T, class Comp, bool Full>
void check_sorts(const std::vector<T>& keys, Comp comp, bool pairs, const std::string& what) {
  std::vector<T> want;
  if constexpr (Full) {
    if (pairs) want = check_pair_sorts(keys, comp, what);
  }
  auto dk = dev(keys);
  lm::merge_sort(lm::cuda::par, dk.begin(), dk.end(), comp);
  const auto got = host(dk);
  if (pairs) {
    expect(fuzz::same(got, want), what + " merge_sort (keys only) against merge_sort_by_key's keys");
  } else {
    expect(sorted_permutation(keys, got, comp), what + " merge_sort (keys only)");
  }
  if (keys.size() <= static_cast<std::size_t>(k2(18))) {
    auto w = keys;
    lm::merge_sort(lm::serial, w.begin(), w.end(), comp);
    expect(fuzz::same(got, w), what + " merge_sort (keys only) against lm::serial");
  }
}

// A sort case: its size, shape and run width (aimed at a path, or drawn),
// the paths its sorts take (printed and counted), then the sorts.
template <class T, class Comp, bool Full>
void sort_case(std::mt19937_64& g, Comp comp, const std::string& what, const aim* a) {
  std::int64_t n = 0, width = 1;
  int shape = 0;
  if (a != nullptr) {
    shape = a->shape;
    n = aimed_size<T, Comp, Full>(g, *a, width);
  } else {
    shape = static_cast<int>(g() % fuzz::shapes);
    const auto edges = plans_of<T, Comp, false>(2).kinds[0].second.edges;
    n = fuzz::draw_size(g, 0, k2(max_log2), edges);
    width = run_width(g, std::max<std::int64_t>(plans_of<T, Comp, false>(n).kinds[0].second.bs_nv, 2));
  }
  const auto keys = fuzz::make_keys<T>(g, n, shape, width);
  const fuzz::input_facts facts = fuzz::describe(keys, comp);
  const case_plans plans = plans_of<T, Comp, Full>(n);
  std::string line = what + " sort n=" + std::to_string(n) + " shape " + std::to_string(shape) +
                     (shape == fuzz::runs_of_width ? " width " + std::to_string(width) : "") + ":";
  for (const auto& [kind, plan] : plans.kinds) {
    const auto names = fuzz::path_names(kind, plan, facts);
    paths.add(names);
    for (const auto& s : names) line += " [" + s + "]";
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  check_sorts<T, Comp, Full>(keys, comp, plans.kinds.size() > 1, what + " n=" + std::to_string(n));
}

// A sorted input: a random shape sorted on the host while that is cheap,
// else a sorted walk (fuzz::make_sorted), descending under lm::greater.
template <class T, class Comp>
std::vector<T> sorted_input(std::mt19937_64& g, std::int64_t n, Comp comp) {
  if (n <= k2(16)) {
    auto v = fuzz::make_keys<T>(g, n);
    lm::merge_sort(lm::serial, v.begin(), v.end(), comp);
    return v;
  }
  return fuzz::make_sorted<T>(g, n, std::is_same_v<Comp, lm::greater<>>);
}

// merge_by_key on the GPU against lm::serial's keys and values.
template <class T, class Comp>
void merge_by_key_check(const thrust::device_vector<T>& da, const thrust::device_vector<T>& db,
                        const std::vector<std::int64_t>& av, const std::vector<std::int64_t>& bv,
                        const std::vector<T>& want_k, const std::vector<std::int64_t>& want_v, Comp comp,
                        const std::string& what) {
  thrust::device_vector<T> k(want_k.size());
  auto dav = dev(av), dbv = dev(bv);
  thrust::device_vector<std::int64_t> v(want_v.size(), -1);
  lm::merge_by_key(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), dav.begin(), dbv.begin(), k.begin(),
                   v.begin(), comp);
  expect(fuzz::same(host(k), want_k) && host(v) == want_v, what + " merge_by_key");
}

// merge (every combo) and merge_by_key (full ones) against lm::serial's
// merge_by_key: keys and values, the values saying where each key came from.
template <class T, class Comp, bool Full>
void merge_case(const std::vector<T>& a, const std::vector<T>& b, Comp comp, const std::string& what) {
  std::vector<std::int64_t> av(a.size()), bv(b.size());
  std::iota(av.begin(), av.end(), std::int64_t(0));
  std::iota(bv.begin(), bv.end(), static_cast<std::int64_t>(a.size()));
  std::vector<T> want_k(a.size() + b.size());
  std::vector<std::int64_t> want_v(a.size() + b.size());
  lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), want_k.begin(),
                   want_v.begin(), comp);
  auto da = dev(a), db = dev(b);
  thrust::device_vector<T> k(want_k.size());
  lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), k.begin(), comp);
  expect(fuzz::same(host(k), want_k), what + " merge");
  if constexpr (Full) {
    merge_by_key_check(da, db, av, bv, want_k, want_v, comp, what);
  }
}

// The output a search type writes into: bounds into int64, match flags into
// bool, bounds with the match in the top bit into uint64.
template <lm::search_type S>
using out_t = std::conditional_t<S == lm::search_type::match, bool,
                                 std::conditional_t<S == lm::search_type::index_match, std::uint64_t, std::int64_t>>;

// One search on the GPU against lm::serial, the counts returned or (every
// other time) written to device memory; a side of type none is not compared.
template <lm::bounds Bounds, lm::search_type TA, lm::search_type TB, class T, class Comp>
void search_one(std::mt19937_64& g, const std::vector<T>& a, const std::vector<T>& b, Comp comp,
                const std::string& what) {
  thrust::host_vector<out_t<TA>> wa(a.size());
  thrust::host_vector<out_t<TB>> wb(b.size());
  const lm::match_counts wm = lm::sorted_search<Bounds, TA, TB>(lm::serial, a.begin(), a.end(), b.begin(), b.end(),
                                                                wa.data(), wb.data(), comp);
  auto da = dev(a), db = dev(b);
  thrust::device_vector<out_t<TA>> ga(a.size());
  thrust::device_vector<out_t<TB>> gb(b.size());
  lm::match_counts m{};
  if (g() % 2) {
    m = lm::sorted_search<Bounds, TA, TB>(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), ga.begin(),
                                          gb.begin(), comp);
  } else {
    thrust::device_vector<lm::match_counts> gm(1);
    lm::sorted_search<Bounds, TA, TB>(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), ga.begin(),
                                      gb.begin(), thrust::raw_pointer_cast(gm.data()), comp);
    m = gm[0];
  }
  const thrust::host_vector<out_t<TA>> ha = ga;
  const thrust::host_vector<out_t<TB>> hb = gb;
  const bool ok_a = TA == lm::search_type::none || ha == wa;
  const bool ok_b = TB == lm::search_type::none || hb == wb;
  expect(ok_a && ok_b && m == wm, what + " sorted_search<" + (Bounds == lm::bounds::lower ? "lower" : "upper") + ", " +
                                      std::to_string(int(TA)) + ", " + std::to_string(int(TB)) + ">");
}

// Both bounds over one pair of search types (fuzz::with_search_pair), then
// sorted_equality_count.
template <class T, class Comp>
void search_case(std::mt19937_64& g, const std::vector<T>& a, const std::vector<T>& b, Comp comp,
                 const std::string& what) {
  fuzz::with_search_pair(g, [&](auto ta, auto tb) {
    search_one<lm::bounds::lower, decltype(ta)::value, decltype(tb)::value>(g, a, b, comp, what);
    search_one<lm::bounds::upper, decltype(ta)::value, decltype(tb)::value>(g, a, b, comp, what);
  });
  std::vector<std::int64_t> want(a.size());
  lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), want.begin(), comp);
  auto da = dev(a), db = dev(b);
  thrust::device_vector<std::int64_t> got(a.size(), -1);
  lm::sorted_equality_count(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), got.begin(), comp);
  expect(host(got) == want, what + " sorted_equality_count");
}

// One seed: a combo (aimed seeds: the aim's), then a sort case, or a merge
// or search case on two sorted inputs (searches: full combos).
void one_seed(std::uint64_t seed) {
  std::mt19937_64 g(seed);
  const aim* a = seed % 2 == 0 ? &aims[(seed / 2) % aim_count] : nullptr;
  const int id = a != nullptr ? a->combo : static_cast<int>(g() % combo_count);
  std::string what;
  with_combo(id, [&](auto key, auto comp, const std::string& name, auto full) {
    using T = decltype(key);
    constexpr bool Full = decltype(full)::value;
    what = "seed " + std::to_string(seed) + ": " + name;
    const int algorithm = a != nullptr ? 0 : static_cast<int>(g() % (Full ? 3 : 2));
    if (algorithm == 0) return sort_case<T, decltype(comp), Full>(g, comp, what, a);
    const auto na = fuzz::draw_size(g, 0, k2(max_log2 - 1), {});
    const auto nb = fuzz::draw_size(g, 0, k2(max_log2 - 1), {});
    const auto va = sorted_input<T>(g, na, comp);
    const auto vb = sorted_input<T>(g, nb, comp);
    what += " |A|=" + std::to_string(na) + " |B|=" + std::to_string(nb);
    if (algorithm == 1) return merge_case<T, decltype(comp), Full>(va, vb, comp, what);
    if constexpr (Full) search_case(g, va, vb, comp, what);
  });
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::printf("CUDA ERROR %s after %s\n", cudaGetErrorString(e), what.c_str());
    std::exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  double seconds = 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--max-log2")) max_log2 = std::atoi(argv[i + 1]);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("libmerge_cuda_fuzz: no GPU, skipped\n");
    return 77;
  }
  std::printf("libmerge_cuda_fuzz: first seed %llu, %.0f s, sizes to 2^%d\n", static_cast<unsigned long long>(seed),
              seconds, max_log2);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const std::uint64_t first = seed;
  // Past the time, until a whole round has aimed at every path (--seconds 0: one seed).
  do {
    one_seed(seed++);
  } while (elapsed() < seconds || (seconds > 0 && seed - first < round_length));
  paths.print();
  const auto missed = paths.missed();
  // Before sm_80 the tuning has no 4-way passes, one-kernel sorts or larger
  // tiles (policies/cuda.hpp): the table is printed, not enforced.
  int device = 0, major = 0;
  const bool tuned = cudaGetDevice(&device) == cudaSuccess &&
                     cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                     major >= 8;
  const bool whole_round = seed - first >= round_length && tuned;
  if (whole_round && !missed.empty()) {
    std::printf("MISSED PATHS (a whole round of %llu seeds aims at each):", static_cast<unsigned long long>(round_length));
    for (const auto& s : missed) std::printf(" [%s]", s.c_str());
    std::printf("\n");
  }
  std::printf("libmerge_cuda_fuzz: seeds %llu .. %llu in %.0f s, max size 2^%d: %s\n",
              static_cast<unsigned long long>(first), static_cast<unsigned long long>(seed - 1), elapsed(), max_log2,
              failed ? "MISMATCHES" : "all agree");
  return failed || (whole_round && !missed.empty()) ? 1 : 0;
}
