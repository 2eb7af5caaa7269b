// What the differential fuzzers (test/cpu/test_fuzz.cpp, test/gpu/cuda_fuzz.cu)
// feed the backends: sizes biased to powers of two and tile boundaries, key
// shapes (random with NaNs and both zeros for floating point, few distinct,
// ascending, descending, all equal, short sorted runs, sorted runs of a given
// width), sorted inputs of any size, and a comparator with wide ties.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <libmerge/functional.hpp>
#include <libmerge/search_tags.hpp>

namespace fuzz {

namespace lm = libmerge;

// Orders by value / 16: long runs of equivalent keys (stability shows).
struct coarse_less {
  template <class T>
  LIBMERGE_HOST_DEVICE bool operator()(const T& a, const T& b) const {
    return static_cast<long long>(a) / 16 < static_cast<long long>(b) / 16;
  }
};
struct coarse_less_double {
  LIBMERGE_HOST_DEVICE bool operator()(double a, double b) const { return lm::less<>()(floor(a / 16), floor(b / 16)); }
};

inline std::int64_t pick_size(std::mt19937_64& g, int max_log2 = 16) {
  switch (g() % 4) {
    case 0:
      return static_cast<std::int64_t>(g() % 5);  // 0 .. 4
    case 1: {
      const std::int64_t p = std::int64_t(1) << (g() % static_cast<std::uint64_t>(max_log2 + 1));
      return std::max<std::int64_t>(0, p + static_cast<std::int64_t>(g() % 3) - 1);  // 2^k - 1 .. 2^k + 1
    }
    case 2: {
      // Around a multiple of a GPU tile (512 x 15, 512 x 17, 256 x 11 and
      // the 16896-key block-sort tile).
      const std::int64_t tiles[] = {7680, 8704, 2816, 16896};
      const std::int64_t t = tiles[g() % 4] * static_cast<std::int64_t>(1 + g() % 4);
      return std::max<std::int64_t>(0, t + static_cast<std::int64_t>(g() % 3) - 1);
    }
    default:
      return static_cast<std::int64_t>(g() % (std::uint64_t(1) << (4 + g() % static_cast<std::uint64_t>(max_log2 - 3))));
  }
}

// A value of T from a small integer (bool: odd or even; floating point: the
// integer, exact up to 2^24 and monotone beyond).
template <class T>
T from_int(std::int64_t v) {
  if constexpr (std::is_same_v<T, bool>) {
    return (v & 1) != 0;
  } else {
    return static_cast<T>(v);
  }
}

// A random key; floating point: one in 11 a NaN, one in 13 a zero of either
// sign (NaN and -0 reach every path: the sort's numeric 4-way passes compare
// them in registers, past a side's end included).
template <class T>
T random_key(std::mt19937_64& g) {
  if constexpr (std::is_floating_point_v<T>) {
    if (g() % 11 == 0) return std::numeric_limits<T>::quiet_NaN();
    if (g() % 13 == 0) return g() % 2 ? T(-0.0) : T(0.0);
    return static_cast<T>(static_cast<int>(g() % 2001) - 1000);
  } else if constexpr (std::is_same_v<T, bool>) {
    return (g() & 1) != 0;
  } else {
    return static_cast<T>(g());
  }
}

enum shape : int { random_keys, few_distinct, ascending, descending, all_equal, runs_of_100, runs_of_width, shapes };

template <class T>
T value_of(std::mt19937_64& g, int s, std::int64_t i, std::int64_t n, std::int64_t width) {
  switch (s) {
    case random_keys: return random_key<T>(g);
    case few_distinct: return from_int<T>(static_cast<std::int64_t>(g() % 4));
    case ascending: return from_int<T>(i);
    case descending: return from_int<T>(n - i);
    case all_equal: return from_int<T>(7);
    case runs_of_100: return from_int<T>((i % 100) * 3 + static_cast<std::int64_t>(g() % 3));
    default: return from_int<T>(i % width);  // each run ascending; a descent where the next starts
  }
}

// Keys of a shape; runs_of_width: sorted runs of `width` keys (the sort
// skips the passes below a width of a block-sort tile or more). Types of few
// values (bool, 8 bits) wrap: their runs are not sorted past 256 keys.
template <class T>
std::vector<T> make_keys(std::mt19937_64& g, std::int64_t n, int s, std::int64_t width = 1) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value_of<T>(g, s, i, n, width);
  return v;
}
template <class T>
std::vector<T> make_keys(std::mt19937_64& g, std::int64_t n) {
  const int s = static_cast<int>(g() % runs_of_width);
  return make_keys<T>(g, n, s);
}

// A sorted input of n keys ascending under lm::less (or `descending`: under
// lm::greater) without sorting: a random walk of steps 0..2 over T's values
// from below zero (both zeros where it crosses it), NaNs at the end under
// lm::less (the start under lm::greater) for floating point. Ascending is
// also sorted under the coarse comparators (value / 16 is monotone).
template <class T>
std::vector<T> make_sorted(std::mt19937_64& g, std::int64_t n, bool descending) {
  std::vector<T> v(static_cast<std::size_t>(n));
  const std::int64_t lo = std::is_signed_v<T> ? -std::min<std::int64_t>(n, 100) : 0;
  std::int64_t hi = std::numeric_limits<std::int64_t>::max() / 2;  // 8-byte types and floating point
  if constexpr (std::is_same_v<T, bool>) {
    hi = 1;
  } else if constexpr (std::is_integral_v<T> && sizeof(T) < 8) {
    hi = static_cast<std::int64_t>(std::numeric_limits<T>::max());
  }
  std::int64_t x = lo;
  const std::int64_t nans = std::is_floating_point_v<T> && g() % 2 ? static_cast<std::int64_t>(g() % (n / 8 + 1)) : 0;
  for (std::int64_t i = 0; i < n; ++i) {
    T t = from_int<T>(x);
    if constexpr (std::is_floating_point_v<T>) {
      if (x == 0 && g() % 2) t = T(-0.0);
      if (i >= n - nans) t = std::numeric_limits<T>::quiet_NaN();
    }
    v[static_cast<std::size_t>(i)] = t;
    x = std::min(hi, x + static_cast<std::int64_t>(g() % 3));
  }
  if (descending) std::reverse(v.begin(), v.end());
  return v;
}

template <class T>
bool same_key(const T& x, const T& y) {
  return std::memcmp(&x, &y, sizeof(T)) == 0;
}

// Equal element for element, bit for bit: -0 is not +0 (a stable result puts
// each where the input order says), and the one NaN the inputs hold is itself.
template <class T>
bool same(const std::vector<T>& x, const std::vector<T>& y) {
  if (x.size() != y.size()) return false;
  if constexpr (std::is_same_v<T, bool>) {
    return x == y;
  } else {
    return x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
  }
}

// The key types: every fundamental type the library sorts (bool, the
// character types, signed and unsigned 8 to 64 bits, float, double).
using key_type_list = std::tuple<char, signed char, unsigned char, short, unsigned short, int, unsigned, long,
                                 unsigned long, long long, unsigned long long, bool, float, double, wchar_t, char16_t,
                                 char32_t>;
inline constexpr int key_types = static_cast<int>(std::tuple_size_v<key_type_list>);
inline constexpr const char* key_type_names[] = {
    "char",  "signed char",        "unsigned char", "short", "unsigned short", "int",     "unsigned", "long",
    "unsigned long", "long long", "unsigned long long", "bool", "float",       "double", "wchar_t", "char16_t",
    "char32_t"};

template <class F, std::size_t... I>
void with_key_type(int which, F&& f, std::index_sequence<I...>) {
  ((which == static_cast<int>(I) ? f(std::tuple_element_t<I, key_type_list>{}, key_type_names[I]) : void()), ...);
}
// f(a value of key type `which`, its name).
template <class F>
void with_key_type(int which, F&& f) {
  with_key_type(which, f, std::make_index_sequence<key_types>{});
}

// The key type and comparator of the case a seed stands for: f(g, key, comp,
// what) with g the seed's generator (the case draws its inputs from it), key
// a value of the type, and what naming the seed, the type and the comparator.
// Every type under lm::less; unsigned char, int, long long, float and double
// under lm::greater too (NaN first); the coarse comparators (wide ties) on
// int64 and double. (Fewer greater ones: each pair is compiled for every
// algorithm and policy.)
template <class F>
void with_seed(std::uint64_t seed, F&& f) {
  std::mt19937_64 g(seed);
  const std::string what = "seed " + std::to_string(seed) + ":";
  const int pick = static_cast<int>(g() % (key_types + 7));
  const lm::greater<> greater{};
  switch (pick - key_types) {
    case 0: f(g, static_cast<unsigned char>(0), greater, what + " unsigned char greater"); break;
    case 1: f(g, int{}, greater, what + " int greater"); break;
    case 2: f(g, 0ll, greater, what + " long long greater"); break;
    case 3: f(g, 0.0f, greater, what + " float greater"); break;
    case 4: f(g, 0.0, greater, what + " double greater"); break;
    case 5: f(g, std::int64_t{}, coarse_less(), what + " int64 coarse"); break;
    case 6: f(g, double{}, coarse_less_double(), what + " double coarse"); break;
    default:
      with_key_type(pick, [&](auto key, const char* name) { f(g, key, lm::less<>(), what + " " + name + " less"); });
  }
}

// One of four pairs of search types (A's, B's) that between them put every
// type on each side: calls f(ta, tb) with integral_constants of
// lm::search_type. Both fuzzers draw their searches here.
template <class F>
void with_search_pair(std::mt19937_64& g, F&& f) {
  using st = lm::search_type;
  using none = std::integral_constant<st, st::none>;
  using index = std::integral_constant<st, st::index>;
  using match = std::integral_constant<st, st::match>;
  using both = std::integral_constant<st, st::index_match>;
  switch (g() % 4) {
    case 0: f(index{}, none{}); break;
    case 1: f(match{}, index{}); break;
    case 2: f(both{}, match{}); break;
    default: f(none{}, both{}); break;
  }
}

}  // namespace fuzz
