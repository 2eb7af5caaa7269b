// lm::sort and lm::sort_by_key on the CUDA backend against std::stable_sort:
// integer keys under lm::less and lm::greater (the merge sort below 2^22, 2^20
// by key for 4-byte keys; the radix sort without a look up to 2^27 bytes, then
// after the look: nothing for sorted keys, the merge sort for long sorted runs,
// a reversal for keys in reverse order), random, sorted, reversed,
// runs, nearly sorted and few-distinct input; floating-point keys with and
// without NaNs (the merge sort or the radix sort), -0.0 among 0.0, and a comparator of
// the caller's own (the merge sort). By key the values are the positions: the
// stable permutation. (Graph capture: test_cuda_graph_capture.)
#define BOOST_TEST_MODULE cuda_sort
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <thrust/sequence.h>

#include "cuda_test_support.cuh"

namespace lm = libmerge;
using cuda_test::to_device;
using cuda_test::to_host;

namespace {

template <class T>
std::vector<T> make_keys(std::size_t n, int shape, std::mt19937_64& g) {
  std::vector<T> k(n);
  for (T& x : k) x = static_cast<T>(shape == 5 ? g() % 5 : g());
  if (shape == 1 || shape == 2 || shape == 4) std::sort(k.begin(), k.end());
  if (shape == 2) std::reverse(k.begin(), k.end());
  if (shape == 3) {
    for (std::size_t i = 0; i < n; i += 4096) std::sort(k.begin() + i, k.begin() + std::min(n, i + 4096));
  }
  if (shape == 4) {
    for (std::size_t i = 0; i < n / 100; ++i) std::swap(k[g() % n], k[g() % n]);
  }
  if (shape == 7) {  // few distinct keys in reverse order: ties, so by key no reversal
    for (T& x : k) x = static_cast<T>(g() % 5);
    std::sort(k.rbegin(), k.rend());
  }
  if (shape == 8) {  // sorted, then blocks of 64 rotated: few pairs fall, each with 32 keys out of place around it
    std::sort(k.begin(), k.end());
    for (std::size_t r = 0; r + 64 <= n && r < n / 128; ++r) {
      const std::size_t at = g() % (n - 64);
      std::rotate(k.begin() + at, k.begin() + at + 32, k.begin() + at + 64);
    }
  }
  if (shape == 6) {  // 16 sorted runs: long enough for the merge sort after the look
    const std::size_t run = (n + 15) / 16;
    for (std::size_t i = 0; i < n; i += run) std::sort(k.begin() + i, k.begin() + std::min(n, i + run));
  }
  return k;
}

// lm::sort and lm::sort_by_key of `input` under comp against std::stable_sort.
template <class T, class Comp>
void check_sort(const std::vector<T>& input, Comp comp, const std::string& what) {
  std::vector<std::int64_t> perm(input.size());
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  std::stable_sort(perm.begin(), perm.end(), [&](std::int64_t a, std::int64_t b) { return comp(input[a], input[b]); });
  std::vector<T> want(input.size());
  for (std::size_t i = 0; i < perm.size(); ++i) want[i] = input[static_cast<std::size_t>(perm[i])];
  const auto same = [](const std::vector<T>& a, const std::vector<T>& b) {  // (bits: NaNs and zeros too)
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(T) * a.size()) == 0;
  };
  thrust::device_vector<T> keys = to_device(input);
  lm::sort(lm::cuda::par, keys.begin(), keys.end(), comp);
  BOOST_TEST(same(to_host(keys), want), what << " keys");
  keys = to_device(input);
  thrust::device_vector<std::int64_t> vals(input.size());
  thrust::sequence(vals.begin(), vals.end(), std::int64_t{0});
  lm::sort_by_key(lm::cuda::par, keys.begin(), keys.end(), vals.begin(), comp);
  BOOST_TEST(same(to_host(keys), want), what << " by_key keys");
  BOOST_TEST((to_host(vals) == perm), what << " by_key values");
}

template <class T>
void integer_cases(std::mt19937_64& g) {
  for (std::size_t n : {std::size_t(1000), (std::size_t(1) << 16) + 5, (std::size_t(1) << 20) + 3}) {
    for (int shape = 0; shape < 6; ++shape) {
      const std::string what = std::to_string(sizeof(T)) + "-byte n " + std::to_string(n) + " shape " +
                               std::to_string(shape);
      const auto keys = make_keys<T>(n, shape, g);
      check_sort(keys, lm::less<>(), what + " less");
      check_sort(keys, lm::greater<>(), what + " greater");
    }
  }
}

struct by_low_byte {  // a comparator of the caller's own: the merge sort
  __host__ __device__ bool operator()(int a, int b) const { return (a & 255) < (b & 255); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(integer_keys_match_stable_sort) {
  std::mt19937_64 g(1);
  integer_cases<std::int32_t>(g);
  integer_cases<std::uint64_t>(g);
  integer_cases<std::int8_t>(g);
  integer_cases<std::uint16_t>(g);
}

// Past radix_from (2^22 keys of 4 bytes or more; by key integer_cases' int32 at 2^20 + 3 reach it already): the
// radix sort without a look; from 2^27 bytes (2^24 keys of 8 bytes) the look decides: random, sorted (nothing
// moves), reversed (turned around), 16 long runs (the merge sort), few distinct keys in reverse (turned
// around, by key the radix sort), 1% of keys swapped and blocks of 64 rotated (a few pairs fall among many
// that rise: the radix sort).
BOOST_AUTO_TEST_CASE(large_integer_keys_match_stable_sort) {
  std::mt19937_64 g(4);
  for (int shape : {0, 1, 2, 4, 6, 7, 8}) {
    const std::string what = " shape " + std::to_string(shape);
    const auto keys32 = make_keys<std::int32_t>((std::size_t(1) << 22) + 3, shape, g);
    check_sort(keys32, lm::less<>(), "int32 2^22" + what + " less");
    check_sort(keys32, lm::greater<>(), "int32 2^22" + what + " greater");
    const auto keys64 = make_keys<std::uint64_t>((std::size_t(1) << 24) + 3, shape, g);
    check_sort(keys64, lm::less<>(), "uint64 2^24" + what + " less");
    check_sort(keys64, lm::greater<>(), "uint64 2^24" + what + " greater");
  }
}

// Floating-point keys from 2^22: the radix sort when the look finds no NaN (numbers of both signs, 0.0 and
// -0.0, infinities), the merge sort when it finds one NaN anywhere, nothing when they are sorted, a reversal
// when they fall (by key only strictly: the radix sort here, with ties; not with a -0.0 among equal zeros);
// nearly sorted, the radix sort.
template <class T>
void floating_cases(std::mt19937_64& g) {
  const std::size_t n = (std::size_t(1) << 22) + 1;
  const std::string type = sizeof(T) == 4 ? "float" : "double";
  std::vector<T> keys(n);
  for (T& x : keys) x = static_cast<T>(static_cast<std::int64_t>(g() % 4000001) - 2000000) / T(64);
  keys[7] = std::numeric_limits<T>::infinity();
  keys[n / 3] = -std::numeric_limits<T>::infinity();
  keys[n / 2] = T(0);
  check_sort(keys, lm::less<>(), type + " numbers less");
  check_sort(keys, lm::greater<>(), type + " numbers greater");
  std::vector<T> sorted = keys;
  std::stable_sort(sorted.begin(), sorted.end(), lm::less<>());
  check_sort(sorted, lm::less<>(), type + " sorted less");
  std::vector<T> nearly = sorted;  // 1% of keys swapped
  for (std::size_t i = 0; i < n / 100; ++i) std::swap(nearly[g() % n], nearly[g() % n]);
  check_sort(nearly, lm::less<>(), type + " nearly sorted less");
  check_sort(sorted, lm::greater<>(), type + " reversed greater");
  std::reverse(sorted.begin(), sorted.end());
  check_sort(sorted, lm::less<>(), type + " reversed less");
  for (const T odd : {-T(0), std::numeric_limits<T>::quiet_NaN(), -std::numeric_limits<T>::quiet_NaN()}) {
    std::vector<T> with = keys;
    with[n - 1] = odd;
    with[n / 4] = T(0);
    check_sort(with, lm::less<>(), type + " one odd key less");
    check_sort(with, lm::greater<>(), type + " one odd key greater");
    std::stable_sort(with.begin(), with.end(), lm::greater<>());  // falling, but odd: no reversal
    check_sort(with, lm::less<>(), type + " one odd key falling less");
  }
  std::vector<T> zeros = keys;  // a third zeros of either sign, no NaN: the radix sort, zeros in input order
  for (std::size_t i = 0; i < n; i += 3) zeros[i] = (g() & 1) ? -T(0) : T(0);
  check_sort(zeros, lm::less<>(), type + " zeros of both signs less");
  check_sort(zeros, lm::greater<>(), type + " zeros of both signs greater");
}

BOOST_AUTO_TEST_CASE(large_floating_point_keys_match_stable_sort) {
  std::mt19937_64 g(5);
  floating_cases<float>(g);
  floating_cases<double>(g);
}

BOOST_AUTO_TEST_CASE(floats_with_nans_and_zeros_match_stable_sort) {
  std::mt19937_64 g(2);
  std::vector<float> keys((std::size_t(1) << 18) + 1);
  for (float& x : keys) {
    const auto r = g() % 8;
    x = r == 0 ? std::numeric_limits<float>::quiet_NaN()
               : (r == 1 ? -std::numeric_limits<float>::quiet_NaN()
                         : (r == 2 ? -0.0f : (r == 3 ? 0.0f : static_cast<float>(static_cast<int>(g() % 2001) - 1000))));
  }
  check_sort(keys, lm::less<>(), "float less");
  check_sort(keys, lm::greater<>(), "float greater");
}

BOOST_AUTO_TEST_CASE(a_comparator_of_the_callers_own) {
  std::mt19937_64 g(3);
  check_sort(make_keys<int>((std::size_t(1) << 18) + 7, 0, g), by_low_byte(), "by_low_byte");
}
