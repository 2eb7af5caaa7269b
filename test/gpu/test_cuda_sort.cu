// lm::sort and lm::sort_by_key on the CUDA backend against std::stable_sort:
// integer keys under lm::less and lm::greater (the radix sort, or nothing for
// sorted keys, or the merge sort for long sorted runs), random, sorted,
// reversed, runs of 2^12, nearly sorted and few-distinct input; float keys
// with NaNs and both zeros, and a comparator of the caller's own (the merge
// sort). By key the values are the positions: the stable permutation. (Graph
// capture: test_cuda_graph_capture.)
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
