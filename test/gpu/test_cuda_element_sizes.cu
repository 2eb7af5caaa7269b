// The element-size ladder: every algorithm on elements of 1 to 1024 bytes
// (the CUDA backend's limit) with the tuned launch boxes, which shrink for
// large elements, against the standard library: merge and merge_sort of them
// as keys, merge_by_key, merge_sort_by_key and merge_sort_indices with them
// as values (or keys), dense and sparse sorted_search (lower and upper) and
// sorted_equality_count with them as needles and haystack. 4 and 8 KB elements are
// refused with std::invalid_argument (test_cuda_errors).
#define BOOST_TEST_MODULE cuda_element_sizes
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cuda_test_support.cuh"

namespace lm = libmerge;
using cuda_test::to_device;
using cuda_test::to_host;
using test_support::check_same;

namespace {

// Bytes-sized element ordered by `key`; the rest carries the element's
// original position, so a misplaced or unstable move is seen.
template <int Bytes>
struct blob {
  std::int32_t key;
  std::int32_t origin;
  unsigned char rest[Bytes - 8];
};
template <>
struct blob<8> {
  std::int32_t key;
  std::int32_t origin;
};
template <int Bytes>
bool operator==(const blob<Bytes>& x, const blob<Bytes>& y) {
  return std::memcmp(&x, &y, sizeof x) == 0;
}
template <int Bytes>
bool operator!=(const blob<Bytes>& x, const blob<Bytes>& y) {
  return !(x == y);
}
template <int Bytes>
std::ostream& operator<<(std::ostream& os, const blob<Bytes>& b) {
  return os << "{" << b.key << "," << b.origin << "}";
}
struct by_key {
  template <class T>
  LIBMERGE_HOST_DEVICE bool operator()(const T& x, const T& y) const {
    if constexpr (std::is_arithmetic_v<T>) {
      return x < y;
    } else {
      return x.key < y.key;
    }
  }
};

template <class T>
T element(std::uint64_t bits, std::int32_t origin) {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<T>(bits % 97);
  } else {
    T t;
    t.key = static_cast<std::int32_t>(bits % 97);
    t.origin = origin;
    if constexpr (sizeof(T) > 8) {
      for (std::size_t i = 0; i < sizeof(T) - 8; ++i) t.rest[i] = static_cast<unsigned char>(origin * 31 + i);
    }
    return t;
  }
}

template <class T, class DA, class DB>
void check_as_values(const std::vector<T>& keys, const std::vector<T>& a, const std::vector<T>& b, DA& da, DB& db,
                     const std::string& what);
template <class T, class DB>
void check_search(const std::vector<T>& a, const std::vector<T>& b, DB& db, const std::string& what);

template <class T>
void check_size(long long n) {
  std::mt19937_64 rng(sizeof(T));
  std::vector<T> keys;
  for (long long i = 0; i < n; ++i) keys.push_back(element<T>(rng(), static_cast<std::int32_t>(i)));
  const std::string what = std::to_string(sizeof(T)) + "-byte elements, n=" + std::to_string(n);

  std::vector<T> expected = keys;
  std::stable_sort(expected.begin(), expected.end(), by_key());
  auto d = to_device(keys);
  lm::merge_sort(lm::cuda::par, d.begin(), d.end(), by_key());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(d), expected, what + ": merge_sort");

  std::vector<T> a(keys.begin(), keys.begin() + n / 3), b(keys.begin() + n / 3, keys.end());
  std::stable_sort(a.begin(), a.end(), by_key());
  std::stable_sort(b.begin(), b.end(), by_key());
  std::vector<T> merged(keys.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), merged.begin(), by_key());
  auto da = to_device(a), db = to_device(b);
  thrust::device_vector<T> out(keys.size());
  lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), out.begin(), by_key());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(out), merged, what + ": merge");

  // The same elements as values: merge_by_key, merge_sort_by_key and
  // merge_sort_indices carry them (int32 keys) or sort them (int64 indices),
  // where key and value together stay within the 1024-byte limit.
  if constexpr (sizeof(T) + 8 <= 1024) check_as_values(keys, a, b, da, db, what);
  check_search(a, b, db, what);
}

template <class T, class DA, class DB>
void check_as_values(const std::vector<T>& keys, const std::vector<T>& a, const std::vector<T>& b, DA& da, DB& db,
                     const std::string& what) {
  std::vector<std::int32_t> ka(a.size()), kb(b.size()), ks(keys.size());
  for (std::size_t i = 0; i < a.size(); ++i) ka[i] = static_cast<std::int32_t>(i / 3);
  for (std::size_t i = 0; i < b.size(); ++i) kb[i] = static_cast<std::int32_t>(i / 5);
  for (std::size_t i = 0; i < keys.size(); ++i) ks[i] = static_cast<std::int32_t>((i * 7919) % 1009);
  {
    std::vector<std::pair<std::int32_t, T>> pa, pb, pm(keys.size());
    for (std::size_t i = 0; i < a.size(); ++i) pa.push_back({ka[i], a[i]});
    for (std::size_t i = 0; i < b.size(); ++i) pb.push_back({kb[i], b[i]});
    auto first_less = [](const auto& x, const auto& y) { return x.first < y.first; };
    std::merge(pa.begin(), pa.end(), pb.begin(), pb.end(), pm.begin(), first_less);
    std::vector<T> want(keys.size());
    for (std::size_t i = 0; i < pm.size(); ++i) want[i] = pm[i].second;
    auto dka = to_device(ka), dkb = to_device(kb);
    thrust::device_vector<std::int32_t> kout(keys.size());
    thrust::device_vector<T> vout(keys.size());
    lm::merge_by_key(lm::cuda::par, dka.begin(), dka.end(), dkb.begin(), dkb.end(), da.begin(), db.begin(),
                     kout.begin(), vout.begin());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(vout), want, what + ": merge_by_key values");

    std::vector<std::pair<std::int32_t, T>> ps;
    for (std::size_t i = 0; i < keys.size(); ++i) ps.push_back({ks[i], keys[i]});
    std::stable_sort(ps.begin(), ps.end(), first_less);
    for (std::size_t i = 0; i < ps.size(); ++i) want[i] = ps[i].second;
    auto dks = to_device(ks);
    auto dv = to_device(keys);
    lm::merge_sort_by_key(lm::cuda::par, dks.begin(), dks.end(), dv.begin());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(dv), want, what + ": merge_sort_by_key values");
  }
  {
    // merge_sort_indices of these keys: the original positions of the
    // stable order.
    std::vector<std::int64_t> want(keys.size());
    std::iota(want.begin(), want.end(), std::int64_t(0));
    std::stable_sort(want.begin(), want.end(), [&](std::int64_t x, std::int64_t y) {
      return by_key()(keys[static_cast<std::size_t>(x)], keys[static_cast<std::size_t>(y)]);
    });
    auto dk = to_device(keys);
    thrust::device_vector<std::int64_t> idx(keys.size());
    lm::merge_sort_indices(lm::cuda::par, dk.begin(), dk.end(), idx.begin(), by_key());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(idx), want, what + ": merge_sort_indices");
  }
}

// Sorted search of these elements as keys, dense (needles as many as the
// haystack) and sparse (a needle every 64), and the equality count.
template <class T, class DB>
void check_search(const std::vector<T>& a, const std::vector<T>& b, DB& db, const std::string& what) {
  for (std::size_t every : {std::size_t(1), std::size_t(64)}) {
    std::vector<T> needles;
    for (std::size_t i = 0; i < a.size(); i += every) needles.push_back(a[i]);
    std::vector<std::int64_t> lower(needles.size()), upper(needles.size()), count(needles.size());
    for (std::size_t i = 0; i < needles.size(); ++i) {
      lower[i] = std::lower_bound(b.begin(), b.end(), needles[i], by_key()) - b.begin();
      upper[i] = std::upper_bound(b.begin(), b.end(), needles[i], by_key()) - b.begin();
      count[i] = upper[i] - lower[i];
    }
    auto dn = to_device(needles);
    thrust::device_vector<std::int64_t> got(needles.size());
    auto run = [&](const auto& policy, const std::string& how) {
      lm::sorted_search<lm::bounds::lower>(policy, dn.begin(), dn.end(), db.begin(), db.end(), got.begin(), by_key());
      BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
      check_same(to_host(got), lower, how + ": sorted_search lower");
      lm::sorted_search<lm::bounds::upper>(policy, dn.begin(), dn.end(), db.begin(), db.end(), got.begin(), by_key());
      BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
      check_same(to_host(got), upper, how + ": sorted_search upper");
      lm::sorted_equality_count(policy, dn.begin(), dn.end(), db.begin(), db.end(), got.begin(), by_key());
      BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
      check_same(to_host(got), count, how + ": sorted_equality_count");
    };
    // A tuned call of fewer than 2^small_needles_log2 needles goes per
    // needle at any density; the dense calls run again with the tuned tile
    // as the caller's box, which takes the merge path.
    run(lm::cuda::par, what + (every == 1 ? ", dense" : ", sparse"));
    if (every == 1) run(cuda_test::dense_tile_policy<T>(), what + ", dense, the tuned tile as the caller's box");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_to_sixteen_bytes) {
  check_size<std::int8_t>(300001);
  check_size<std::int16_t>(300001);
  check_size<std::int32_t>(300001);
  check_size<blob<8>>(300001);
  check_size<blob<16>>(200001);
}

BOOST_AUTO_TEST_CASE(sixty_four_bytes_to_one_kilobyte) {
  check_size<blob<64>>(100001);
  check_size<blob<256>>(20001);
  check_size<blob<1024>>(5001);
}
