// Beyond 2^31 elements: 64-bit counts all the way through the CUDA merge.
// 1-byte keys keep it fast; the serial backend is the reference.
#define BOOST_TEST_MODULE cuda_large
#include <boost/test/included/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>

#include "cuda_test_support.cuh"

namespace lm = libmerge;

namespace {

// n sorted int8 keys with random multiplicities, built without sorting.
std::vector<std::int8_t> sorted_bytes(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> weight(256);
  double total = 0;
  for (auto& w : weight) total += (w = 0.5 + static_cast<double>(rng() % 1000));
  std::vector<std::int8_t> v;
  v.reserve(static_cast<std::size_t>(n));
  for (int k = 0; k < 256 && static_cast<std::int64_t>(v.size()) < n; ++k) {
    const auto run = static_cast<std::int64_t>(static_cast<double>(n) * weight[k] / total) + 1;
    v.insert(v.end(), static_cast<std::size_t>(std::min(run, n - static_cast<std::int64_t>(v.size()))),
             static_cast<std::int8_t>(k - 128));
  }
  v.resize(static_cast<std::size_t>(n), static_cast<std::int8_t>(127));
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

BOOST_AUTO_TEST_CASE(merge_beyond_2_pow_31) {
  const std::int64_t na = (std::int64_t(1) << 30) + 12345, nb = (std::int64_t(1) << 30) + (1 << 20) + 7;
  const std::int64_t n = na + nb;
  BOOST_REQUIRE_GT(n, std::int64_t(1) << 31);
  const auto a = sorted_bytes(na, 1), b = sorted_bytes(nb, 2);

  auto t0 = std::chrono::steady_clock::now();
  thrust::device_vector<std::int8_t> da(a.begin(), a.end()), db(b.begin(), b.end()), dout(n, 0);
  lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), dout.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = cuda_test::to_host(dout);
  BOOST_TEST_MESSAGE("GPU merge of " << n << " keys and copies: " << seconds_since(t0) << " s");

  std::vector<std::int8_t> expected(static_cast<std::size_t>(n));
  lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected.begin());
  BOOST_CHECK(std::memcmp(got.data(), expected.data(), expected.size()) == 0);
}

// Values are each element's 64-bit origin (A: i, B: |A| + j), so every value
// above 2^31 must land where the stable merge puts it.
BOOST_AUTO_TEST_CASE(merge_by_key_beyond_2_pow_31) {
  const std::int64_t na = (std::int64_t(1) << 30) + 999, nb = (std::int64_t(1) << 30) + (1 << 21) + 1;
  const std::int64_t n = na + nb;
  const auto a = sorted_bytes(na, 3), b = sorted_bytes(nb, 4);

  auto t0 = std::chrono::steady_clock::now();
  thrust::device_vector<std::int8_t> da(a.begin(), a.end()), db(b.begin(), b.end()), dkeys(n, 0);
  thrust::device_vector<std::int64_t> dvals(n, -1);
  lm::merge_by_key(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(),
                   thrust::counting_iterator<std::int64_t>(0), thrust::counting_iterator<std::int64_t>(na),
                   dkeys.begin(), dvals.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto keys = cuda_test::to_host(dkeys);
  const auto vals = cuda_test::to_host(dvals);
  BOOST_TEST_MESSAGE("GPU merge_by_key of " << n << " pairs and copies: " << seconds_since(t0) << " s");

  std::vector<std::int8_t> expected_keys(static_cast<std::size_t>(n));
  std::vector<std::int64_t> expected_vals(static_cast<std::size_t>(n));
  lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), thrust::counting_iterator<std::int64_t>(0),
                   thrust::counting_iterator<std::int64_t>(na), expected_keys.begin(), expected_vals.begin());
  BOOST_CHECK(std::memcmp(keys.data(), expected_keys.data(), expected_keys.size()) == 0);
  BOOST_CHECK(std::memcmp(vals.data(), expected_vals.data(), expected_vals.size() * sizeof(std::int64_t)) == 0);
}

// merge_sort beyond 2^31 keys: 1-byte keys, keys only and by key. The expected
// result comes from a stable counting sort on the host; by key, the values
// are each key's original position modulo 2^16 (checked as a sequence per key
// value, which a non-stable or 32-bit-indexed sort would get wrong).
BOOST_AUTO_TEST_CASE(merge_sort_beyond_2_pow_31) {
  const std::int64_t n = (std::int64_t(1) << 31) + (1 << 20) + 13;
  std::vector<std::int8_t> keys(static_cast<std::size_t>(n));
  std::mt19937_64 rng(5);
  for (auto& k : keys) k = static_cast<std::int8_t>(rng() >> 56);
  std::vector<std::int64_t> count(256, 0);
  for (auto k : keys) ++count[static_cast<std::uint8_t>(k) ^ 0x80];  // signed order

  auto t0 = std::chrono::steady_clock::now();
  {
    thrust::device_vector<std::int8_t> d(keys.begin(), keys.end());
    lm::merge_sort(lm::cuda::par, d.begin(), d.end());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    const auto got = cuda_test::to_host(d);
    BOOST_TEST_MESSAGE("GPU merge_sort of " << n << " keys and copies: " << seconds_since(t0) << " s");
    std::int64_t at = 0;
    bool ok = true;
    for (int b = 0; b < 256 && ok; ++b) {
      const auto value = static_cast<std::int8_t>(b ^ 0x80);
      for (std::int64_t i = 0; i < count[b]; ++i) ok &= got[static_cast<std::size_t>(at + i)] == value;
      at += count[b];
    }
    BOOST_CHECK_MESSAGE(ok, "merge_sort beyond 2^31: wrong keys");
  }
  t0 = std::chrono::steady_clock::now();
  {
    thrust::device_vector<std::int8_t> d(keys.begin(), keys.end());
    thrust::device_vector<std::uint16_t> v(static_cast<std::size_t>(n));
    thrust::sequence(v.begin(), v.end());  // position mod 2^16
    lm::merge_sort_by_key(lm::cuda::par, d.begin(), d.end(), v.begin());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    const auto got_keys = cuda_test::to_host(d);
    const auto got_vals = cuda_test::to_host(v);
    BOOST_TEST_MESSAGE("GPU merge_sort_by_key of " << n << " pairs and copies: " << seconds_since(t0) << " s");
    std::vector<std::int64_t> start(256, 0);
    for (int b = 1; b < 256; ++b) start[b] = start[b - 1] + count[b - 1];
    bool ok = true;
    for (std::int64_t i = 0; i < n && ok; ++i) {  // stable: each key's positions in input order
      const int b = static_cast<std::uint8_t>(keys[static_cast<std::size_t>(i)]) ^ 0x80;
      const std::int64_t at = start[b]++;
      ok &= got_keys[static_cast<std::size_t>(at)] == keys[static_cast<std::size_t>(i)] &&
            got_vals[static_cast<std::size_t>(at)] == static_cast<std::uint16_t>(i);
    }
    BOOST_CHECK_MESSAGE(ok, "merge_sort_by_key beyond 2^31: wrong keys or values");
  }
}
