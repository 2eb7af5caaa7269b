// Every fundamental type in every algorithm on the GPU (issue 24: 16-bit keys
// broke the GPU search while the 8-, 32- and 64-bit ones passed, because no
// test searched a 16-bit key). Each type is the key, and the value beside
// itself as key, of: merge, merge_by_key, merge_sort, merge_sort_by_key,
// merge_sort_indices, sorted_search (lower and upper bounds; index, match and
// index_match outputs; dense and sparse needles) and sorted_equality_count,
// ascending and (merge, search, sort by key) descending. Every result is
// checked against the standard library on the host, values bit for bit (a
// stable sort and a stable merge have one answer).
//
// One source, two binaries (LIBMERGE_TYPES_PART 1: the sorts, 2: merge and
// search), so that the build compiles them side by side, for
// CMAKE_CUDA_ARCHITECTURES like the other tests.
//
// bool, wchar_t, char16_t, char32_t and long are among the types (bool keys
// take 2-way passes and no interpolation: they are no numbers to the
// backend, cta_merge.cuh). char8_t is C++20's: the project is C++17, so it is
// tested only where a build makes it a type (__cpp_char8_t).
//
// Floating-point keys (__half and __nv_bfloat16 too) hold both zeros,
// infinities and NaNs: lm::less and lm::greater order NaNs after (before)
// every number, equivalent to each other (docs/api.md).
#define BOOST_TEST_MODULE cuda_fundamental_types
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <thrust/fill.h>

#include "cuda_test_support.cuh"

namespace lm = libmerge;
using cuda_test::to_device;
using cuda_test::to_host;

namespace {

using types = std::tuple<bool, char, signed char, unsigned char,
#ifdef __cpp_char8_t
                         char8_t,
#endif
                         wchar_t, char16_t, char32_t, short, unsigned short, int, unsigned, long, long long,
                         unsigned long long, float, double, __half, __nv_bfloat16>;

template <class T>
constexpr bool is_half_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// For messages.
template <class T>
double as_double(T x) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(x);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(x);
  } else {
    return static_cast<double>(x);
  }
}

// Random keys with repeats: integers over their whole range (1-byte types
// repeat by themselves) or, when `few`, over a narrow one; floating-point
// numbers with both zeros (equivalent under <, so the sorts' stability shows),
// infinities and NaNs among them.
template <class T>
T random_value(std::mt19937_64& g, bool few) {
  const std::uint64_t r = g();
  if constexpr (std::is_same_v<T, bool>) {
    return (r & 1) != 0;  // a bool's byte holds 0 or 1, nothing else
  } else if constexpr (std::is_integral_v<T>) {
    if (few) return static_cast<T>(r % 64);
    T x;
    std::memcpy(&x, &r, sizeof(T));
    return x;
  } else {
    const int span = few ? 64 : 2000;
    const int k = static_cast<int>(r % (2 * span + 1)) - span;
    float f = static_cast<float>(k) / 4;
    if (r % 97 == 0) f = -0.0f;
    if (r % 89 == 0) f = 0.0f;
    if (r % 211 == 0) f = std::numeric_limits<float>::infinity();
    if (r % 223 == 0) f = -std::numeric_limits<float>::infinity();
    if (r % 101 == 0) f = std::numeric_limits<float>::quiet_NaN();
    if constexpr (std::is_same_v<T, __half>) {
      return __float2half(f);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      return __float2bfloat16(f);
    } else {
      return static_cast<T>(f);
    }
  }
}

template <class T>
std::vector<T> random_values(std::mt19937_64& g, std::size_t n, bool few) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = random_value<T>(g, few);  // (std::vector<bool> has no T&)
  return v;
}

template <class T>
bool same_bits(const T& x, const T& y) {
  return std::memcmp(&x, &y, sizeof(T)) == 0;
}

// Keys agree when equivalent under the comparator (-0 and +0), values bit for bit.
template <class K, class V, class Comp>
void expect_pairs(const char* what, const std::vector<K>& got_k, const std::vector<V>* got_v,
                  const std::vector<std::pair<K, V>>& want, Comp comp) {
  BOOST_REQUIRE_EQUAL(got_k.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const bool key_ok = !comp(got_k[i], want[i].first) && !comp(want[i].first, got_k[i]);
    if (!key_ok || (got_v && !same_bits((*got_v)[i], want[i].second))) {
      BOOST_FAIL(what << ", n " << want.size() << ", position " << i << ": got key " << as_double(got_k[i])
                      << (got_v ? ", value " : "") << (got_v ? as_double((*got_v)[i]) : 0.0) << ", expected key "
                      << as_double(want[i].first) << (got_v ? ", value " : "")
                      << (got_v ? as_double(want[i].second) : 0.0));
    }
  }
}

#if LIBMERGE_TYPES_PART == 1

std::vector<std::size_t> sort_sizes() {
  // One element, one tile, several tiles, and enough for the 4-way passes.
  if (cuda_test::quick()) return {1, 1000, 100003};
  return {1, 1000, 100003, (std::size_t(1) << 21) + 3};
}

template <class T, class Comp>
void check_sort_by_key(std::size_t n, bool few, Comp comp, std::mt19937_64& g) {
  const auto keys = random_values<T>(g, n, few);
  const auto vals = random_values<T>(g, n, false);
  std::vector<std::pair<T, T>> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = {keys[i], vals[i]};
  std::stable_sort(want.begin(), want.end(), [&](const auto& x, const auto& y) { return comp(x.first, y.first); });
  auto dk = to_device(keys);
  auto dv = to_device(vals);
  lm::merge_sort_by_key(lm::cuda::par, dk.begin(), dk.end(), dv.begin(), comp);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto got_k = to_host(dk);
  const auto got_v = to_host(dv);
  expect_pairs("merge_sort_by_key", got_k, &got_v, want, comp);
}

template <class T>
void check_sorts(std::size_t n, bool few, std::mt19937_64& g) {
  const lm::less<> comp;
  const auto keys = random_values<T>(g, n, few);
  std::vector<std::pair<T, int>> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = {keys[i], static_cast<int>(i)};
  std::stable_sort(want.begin(), want.end(), [&](const auto& x, const auto& y) { return comp(x.first, y.first); });

  auto dk = to_device(keys);
  lm::merge_sort(lm::cuda::par, dk.begin(), dk.end());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  expect_pairs("merge_sort", to_host(dk), static_cast<const std::vector<int>*>(nullptr), want, comp);

  // The indices are the original positions in stable order.
  auto dk2 = to_device(keys);
  thrust::device_vector<int> idx(n);
  lm::merge_sort_indices(lm::cuda::par, dk2.begin(), dk2.end(), idx.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto got_idx = to_host(idx);
  expect_pairs("merge_sort_indices", to_host(dk2), &got_idx, want, comp);

  check_sort_by_key<T>(n, few, comp, g);
  check_sort_by_key<T>(n, few, lm::greater<>(), g);
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(sorts_of_every_type, T, types) {
  std::mt19937_64 g(2401 + sizeof(T));
  for (std::size_t n : sort_sizes()) {
    for (bool few : {false, true}) {
      BOOST_TEST_CONTEXT("n " << n << ", few distinct keys " << few) { check_sorts<T>(n, few, g); }
    }
  }
}

#else  // LIBMERGE_TYPES_PART == 2

template <class T, class Comp>
std::vector<T> sorted_values(std::mt19937_64& g, std::size_t n, Comp comp) {
  auto v = random_values<T>(g, n, true);
  // Through T: std::vector<bool>'s elements are proxies, whose conversion
  // to bool the comparator (host and device) cannot call.
  std::stable_sort(v.begin(), v.end(), [&](const T& x, const T& y) { return comp(x, y); });
  return v;
}

template <class T, class Comp>
void check_merge(std::size_t na, std::size_t nb, Comp comp, std::mt19937_64& g) {
  const auto a = sorted_values<T>(g, na, comp);
  const auto b = sorted_values<T>(g, nb, comp);
  const auto av = random_values<T>(g, na, false);
  const auto bv = random_values<T>(g, nb, false);
  // std::merge is stable: A's element first among equivalent ones.
  std::vector<std::pair<T, T>> pa(na), pb(nb), want(na + nb);
  for (std::size_t i = 0; i < na; ++i) pa[i] = {a[i], av[i]};
  for (std::size_t i = 0; i < nb; ++i) pb[i] = {b[i], bv[i]};
  std::merge(pa.begin(), pa.end(), pb.begin(), pb.end(), want.begin(),
             [&](const auto& x, const auto& y) { return comp(x.first, y.first); });

  auto da = to_device(a), db = to_device(b), dav = to_device(av), dbv = to_device(bv);
  thrust::device_vector<T> out(na + nb), out_v(na + nb);
  lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), out.begin(), comp);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  expect_pairs("merge", to_host(out), static_cast<const std::vector<T>*>(nullptr), want, comp);
  thrust::fill(out.begin(), out.end(), T{});
  lm::merge_by_key(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), dav.begin(), dbv.begin(), out.begin(),
                   out_v.begin(), comp);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto got_v = to_host(out_v);
  expect_pairs("merge_by_key", to_host(out), &got_v, want, comp);
}

// Lower bounds of A in B (index) and upper bounds of B in A (index_match),
// then the reverse bounds with match flags (into bool) and indices, and the
// equality counts: each against std::lower_bound / std::upper_bound.
template <class T, class Comp>
void check_search(std::size_t na, std::size_t nb, Comp comp, std::mt19937_64& g) {
  const auto a = sorted_values<T>(g, na, comp);
  const auto b = sorted_values<T>(g, nb, comp);
  auto da = to_device(a), db = to_device(b);
  auto lower_in = [&](const std::vector<T>& v, const T& x) {
    return std::lower_bound(v.begin(), v.end(), x, comp) - v.begin();
  };
  auto upper_in = [&](const std::vector<T>& v, const T& x) {
    return std::upper_bound(v.begin(), v.end(), x, comp) - v.begin();
  };
  constexpr unsigned flag = 1u << 31;

  thrust::device_vector<long long> a_index(na);
  thrust::device_vector<unsigned> b_index_match(nb);
  const lm::match_counts lower_counts =
      lm::sorted_search<lm::bounds::lower, lm::search_type::index, lm::search_type::index_match>(
          lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), a_index.begin(), b_index_match.begin(), comp);
  thrust::device_vector<bool> a_match(na);
  thrust::device_vector<int> b_index(nb);
  const lm::match_counts upper_counts =
      lm::sorted_search<lm::bounds::upper, lm::search_type::match, lm::search_type::index>(
          lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), a_match.begin(), b_index.begin(), comp);
  // The counts of a tuned call (per needle below 2^small_needles_log2
  // needles) and on the merge path (the tuned tile as the caller's box).
  thrust::device_vector<long long> counts(na), tile_counts(na);
  lm::sorted_equality_count(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), counts.begin(), comp);
  lm::sorted_equality_count(cuda_test::dense_tile_policy<T>(), da.begin(), da.end(), db.begin(), db.end(),
                            tile_counts.begin(), comp);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);

  const auto got_ai = to_host(a_index);
  const auto got_bim = to_host(b_index_match);
  const auto got_am = to_host(a_match);
  const auto got_bi = to_host(b_index);
  const auto got_c = to_host(counts);
  const auto got_tc = to_host(tile_counts);
  long long b_matched = 0, a_matched = 0;
  for (std::size_t i = 0; i < na; ++i) {
    const long long lo = lower_in(b, a[i]), hi = upper_in(b, a[i]);
    a_matched += hi > lo;
    if (got_ai[i] != lo || bool(got_am[i]) != (hi > lo) || got_c[i] != hi - lo || got_tc[i] != hi - lo) {
      BOOST_FAIL("A[" << i << "] = " << as_double(a[i]) << " (na " << na << ", nb " << nb << "): lower bound "
                      << got_ai[i] << ", match " << bool(got_am[i]) << ", count " << got_c[i] << " (merge path "
                      << got_tc[i] << "); expected " << lo << ", " << (hi > lo) << ", " << hi - lo);
    }
  }
  for (std::size_t i = 0; i < nb; ++i) {
    // bounds::lower: B gets its upper bound into A; bounds::upper: its lower bound.
    const long long up = upper_in(a, b[i]), lo = lower_in(a, b[i]);
    const bool match = up > lo;
    b_matched += match;
    const unsigned want_im = static_cast<unsigned>(up) | (match ? flag : 0u);
    if (got_bim[i] != want_im || got_bi[i] != lo) {
      BOOST_FAIL("B[" << i << "] = " << as_double(b[i]) << " (na " << na << ", nb " << nb << "): upper bound|match "
                      << got_bim[i] << ", lower bound " << got_bi[i] << "; expected " << want_im << ", " << lo);
    }
  }
  BOOST_TEST(lower_counts.a == 0);  // an index side reports no matches
  BOOST_TEST(lower_counts.b == b_matched);
  BOOST_TEST(upper_counts.a == a_matched);
  BOOST_TEST(upper_counts.b == 0);
}

template <class T, class Comp>
void check_merge_and_search(Comp comp) {
  std::mt19937_64 g(2402 + sizeof(T));
  const std::size_t big = cuda_test::quick() ? 100003 : (std::size_t(1) << 21) + 3;
  const std::pair<std::size_t, std::size_t> shapes[] = {
      {1, 1}, {1, 1000}, {1000, 777}, {100003, 90001}, {big, big - 5}, {0, 5}, {5, 0},
      {2000, 2000 * 64 + 5},  // sparse needles: a search per needle
  };
  for (const auto& [na, nb] : shapes) {
    BOOST_TEST_CONTEXT("na " << na << ", nb " << nb) {
      check_merge<T>(na, nb, comp, g);
      check_search<T>(na, nb, comp, g);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(merge_and_search_of_every_type, T, types) {
  check_merge_and_search<T>(lm::less<>());
  check_merge_and_search<T>(lm::greater<>());
}

#endif
