// What the differential fuzzers (test/cpu/test_fuzz.cpp, test/gpu/cuda_fuzz.cu)
// feed the backends: sizes biased to powers of two and tile boundaries, key
// shapes (random with NaNs for floating point, few distinct, ascending,
// descending, all equal, sorted runs), and a comparator with wide ties.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <libmerge/functional.hpp>

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

template <class T>
T value_of(std::mt19937_64& g, int shape, std::int64_t i, std::int64_t n) {
  switch (shape) {
    case 0:  // random
      if constexpr (std::is_floating_point_v<T>) {
        return g() % 11 == 0 ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(static_cast<int>(g() % 2001) - 1000);
      } else {
        return static_cast<T>(g());
      }
    case 1:  // few distinct
      return static_cast<T>(g() % 4);
    case 2:  // ascending
      return static_cast<T>(i);
    case 3:  // descending
      return static_cast<T>(n - i);
    case 4:  // all equal
      return static_cast<T>(7);
    default:  // sorted runs of 100
      return static_cast<T>((i % 100) * 3 + static_cast<std::int64_t>(g() % 3));
  }
}

template <class T>
std::vector<T> make_keys(std::mt19937_64& g, std::int64_t n) {
  const int shape = static_cast<int>(g() % 6);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value_of<T>(g, shape, i, n);
  return v;
}

// Equal element for element, NaN equal to NaN.
template <class T>
bool same(const std::vector<T>& x, const std::vector<T>& y) {
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
    } else {
      if (x[i] != y[i]) return false;
    }
  }
  return true;
}

// The key type and comparator of the case a seed stands for: f(g, key, comp,
// what) with g the seed's generator (the case draws its inputs from it), key
// a value of the type, and what naming the seed, the type and the comparator.
template <class F>
void with_seed(std::uint64_t seed, F&& f) {
  std::mt19937_64 g(seed);
  const std::string what = "seed " + std::to_string(seed) + ":";
  switch (g() % 7) {
    case 0: f(g, std::int32_t{}, lm::less<>(), what + " int32 less"); break;
    case 1: f(g, std::int32_t{}, lm::greater<>(), what + " int32 greater"); break;
    case 2: f(g, std::int64_t{}, coarse_less(), what + " int64 coarse"); break;
    case 3: f(g, std::uint8_t{}, lm::less<>(), what + " uint8 less"); break;
    case 4: f(g, double{}, lm::less<>(), what + " double (NaN) less"); break;
    case 5: f(g, float{}, lm::greater<>(), what + " float (NaN) greater"); break;
    default: f(g, double{}, coarse_less_double(), what + " double coarse"); break;
  }
}

}  // namespace fuzz
