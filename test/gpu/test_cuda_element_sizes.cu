// The element-size ladder: merge and merge_sort of elements of 1 to 1024
// bytes (the CUDA backend's limit) with the tuned launch boxes, which shrink
// for large elements, against the standard library. 4 and 8 KB elements are
// refused with std::invalid_argument (test_cuda_errors).
#define BOOST_TEST_MODULE cuda_element_sizes
#include <boost/test/included/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
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
