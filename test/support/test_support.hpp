// Shared by the CPU and GPU test suites: key types, seeded input generators,
// sizes and std:: reference results. Host-only code.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <libmerge/libmerge.hpp>

namespace test_support {

// Names of the search vocabulary, for test messages.
inline const char* name(libmerge::search_type t) {
  switch (t) {
    case libmerge::search_type::none: return "none";
    case libmerge::search_type::index: return "index";
    case libmerge::search_type::match: return "match";
    case libmerge::search_type::index_match: return "index_match";
  }
  return "?";
}
inline const char* name(libmerge::bounds b) { return b == libmerge::bounds::lower ? "lower" : "upper"; }


// The 16-byte struct key: ordered by (major, minor) only, so `tag` can tell
// equal keys apart and expose instability.
struct record {
  std::int64_t major;
  std::int32_t minor;
  std::int32_t tag;
};
static_assert(sizeof(record) == 16, "record must be 16 bytes");

// Its own comparator, usable on host and device.
struct record_less {
  LIBMERGE_HOST_DEVICE bool operator()(const record& x, const record& y) const {
    return x.major < y.major || (x.major == y.major && x.minor < y.minor);
  }
};
// operator< lets lm::less<> and lm::greater<> order records the same way.
LIBMERGE_HOST_DEVICE inline bool operator<(const record& x, const record& y) { return record_less{}(x, y); }
// Full equality (tag included): outputs must match the reference exactly.
inline bool operator==(const record& x, const record& y) {
  return x.major == y.major && x.minor == y.minor && x.tag == y.tag;
}
inline bool operator!=(const record& x, const record& y) { return !(x == y); }
inline std::ostream& operator<<(std::ostream& os, const record& r) {
  return os << "{" << r.major << "," << r.minor << "," << r.tag << "}";
}

// Key types every algorithm is tested with.
using key_types = std::tuple<std::int8_t, std::int32_t, std::uint32_t, std::int64_t, float, double, record>;

enum class distribution { random, sorted, reversed, all_equal, few_distinct };
inline const distribution all_distributions[] = {distribution::random, distribution::sorted,
                                                 distribution::reversed, distribution::all_equal,
                                                 distribution::few_distinct};
inline const char* name(distribution d) {
  switch (d) {
    case distribution::random: return "random";
    case distribution::sorted: return "sorted";
    case distribution::reversed: return "reversed";
    case distribution::all_equal: return "all_equal";
    case distribution::few_distinct: return "few_distinct";
  }
  return "?";
}

// Sizes: empty, tiny, small odd, around powers of two, and 10^6.
inline std::vector<std::int64_t> standard_sizes() {
  std::vector<std::int64_t> sizes = {0, 1, 2, 3, 7, 31, 33, 127};
  for (int k : {8, 10, 12, 16}) {
    const std::int64_t p = std::int64_t(1) << k;
    sizes.insert(sizes.end(), {p - 1, p, p + 1});
  }
  sizes.push_back(1000000);
  return sizes;
}

// A key of type T from a random 64-bit draw; `range` > 0 limits the number of
// distinct keys (few_distinct).
template <class T>
T make_key(std::uint64_t bits, std::uint64_t range) {
  if (range) bits %= range;
  if constexpr (std::is_same_v<T, record>) {
    // few distinct (major, minor) pairs, so equal keys are common
    const std::uint64_t r = range ? bits : bits % 4096;
    return record{static_cast<std::int64_t>(r / 8) - 256, static_cast<std::int32_t>(r % 8), 0};
  } else if constexpr (std::is_floating_point_v<T>) {
    if (range) return static_cast<T>(bits);
    // spread over negative and positive values, with repeats
    return static_cast<T>(static_cast<std::int64_t>(bits % 2000001) - 1000000) / T(8);
  } else {
    return static_cast<T>(bits);
  }
}

// n keys drawn with a fixed seed; sorted/reversed use comp's order. Records get
// tag = position so every element is distinguishable.
template <class T, class Comp = libmerge::less<>>
std::vector<T> generate(std::int64_t n, distribution d, std::uint64_t seed, Comp comp = Comp()) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(static_cast<std::size_t>(n));
  const std::uint64_t range = d == distribution::few_distinct ? 5 : 0;
  const T constant = make_key<T>(rng(), 0);
  for (auto& x : v) x = d == distribution::all_equal ? constant : make_key<T>(rng(), range);
  if (d == distribution::sorted) std::stable_sort(v.begin(), v.end(), comp);
  if (d == distribution::reversed) std::stable_sort(v.begin(), v.end(), [&](const T& x, const T& y) { return comp(y, x); });
  if constexpr (std::is_same_v<T, record>) {
    for (std::size_t i = 0; i < v.size(); ++i) v[i].tag = static_cast<std::int32_t>(i);
  }
  return v;
}

// A sorted input for merge and search tests.
template <class T, class Comp = libmerge::less<>>
std::vector<T> generate_sorted(std::int64_t n, distribution d, std::uint64_t seed, Comp comp = Comp()) {
  auto v = generate<T>(n, d, seed, comp);
  std::stable_sort(v.begin(), v.end(), comp);
  return v;
}

// Reference results from the standard library.

template <class T, class Comp>
std::vector<T> reference_sort(std::vector<T> keys, Comp comp) {
  std::stable_sort(keys.begin(), keys.end(), comp);
  return keys;
}

// The stable sorting permutation: perm[i] = input position of the i-th output.
template <class T, class Comp>
std::vector<std::int64_t> reference_permutation(const std::vector<T>& keys, Comp comp) {
  std::vector<std::int64_t> perm(keys.size());
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  std::stable_sort(perm.begin(), perm.end(),
                   [&](std::int64_t i, std::int64_t j) { return comp(keys[std::size_t(i)], keys[std::size_t(j)]); });
  return perm;
}

template <class T, class Comp>
std::vector<T> reference_merge(const std::vector<T>& a, const std::vector<T>& b, Comp comp) {
  std::vector<T> out(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin(), comp);
  return out;
}

// merge_by_key reference: values tag their origin (A: i, B: a.size() + j), and
// std::merge on (key, value) pairs compared by key alone is stable, A first.
template <class T, class V, class Comp>
std::pair<std::vector<T>, std::vector<V>> reference_merge_by_key(const std::vector<T>& a, const std::vector<T>& b,
                                                                 const std::vector<V>& av, const std::vector<V>& bv,
                                                                 Comp comp) {
  std::vector<std::pair<T, V>> pa, pb, po(a.size() + b.size());
  for (std::size_t i = 0; i < a.size(); ++i) pa.emplace_back(a[i], av[i]);
  for (std::size_t i = 0; i < b.size(); ++i) pb.emplace_back(b[i], bv[i]);
  std::merge(pa.begin(), pa.end(), pb.begin(), pb.end(), po.begin(),
             [&](const std::pair<T, V>& x, const std::pair<T, V>& y) { return comp(x.first, y.first); });
  std::pair<std::vector<T>, std::vector<V>> out;
  for (auto& p : po) {
    out.first.push_back(p.first);
    out.second.push_back(p.second);
  }
  return out;
}

// Bounds of every needle into the haystack with std::lower_bound/upper_bound.
template <class T, class Comp>
std::vector<std::int64_t> reference_bounds(const std::vector<T>& needles, const std::vector<T>& haystack,
                                           bool upper, Comp comp) {
  std::vector<std::int64_t> out;
  for (const T& x : needles) {
    auto it = upper ? std::upper_bound(haystack.begin(), haystack.end(), x, comp)
                    : std::lower_bound(haystack.begin(), haystack.end(), x, comp);
    out.push_back(it - haystack.begin());
  }
  return out;
}

// Does the haystack hold an element equal to each needle (std::equal_range)?
template <class T, class Comp>
std::vector<bool> reference_matches(const std::vector<T>& needles, const std::vector<T>& haystack, Comp comp) {
  std::vector<bool> out;
  for (const T& x : needles) {
    auto r = std::equal_range(haystack.begin(), haystack.end(), x, comp);
    out.push_back(r.first != r.second);
  }
  return out;
}

}  // namespace test_support
