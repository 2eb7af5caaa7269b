// 16-bit keys in the GPU sorted search (issue 24: every call with `short`
// keys threw cudaErrorInvalidValue at the launch of search_kernel, through
// lm::cuda::par and thrust::device, ascending and descending). The tile's
// dynamic shared memory for 2-byte keys (46,096 bytes at 512x15) stayed under
// 48 KB, so the launch never raised the kernel's limit, but with the kernel's
// static shared memory the block needed more than 48 KB. Each call here is
// checked against std::lower_bound / std::upper_bound on the host: one
// element, tile boundaries, dense and sparse needles (the per-needle search
// with interpolation), lm::less and thrust::greater, lower and upper bounds,
// index, match and equality counts.
#define BOOST_TEST_MODULE cuda_key_types
#include <boost/test/included/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include <thrust/execution_policy.h>
#include <thrust/functional.h>

#include "cuda_test_support.cuh"

namespace lm = libmerge;
using cuda_test::to_device;
using cuda_test::to_host;

namespace {

template <class K>
std::vector<K> sorted_keys(std::mt19937_64& g, std::size_t n, bool descending) {
  std::uniform_int_distribution<long long> d(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
  std::vector<K> v(n);
  for (auto& x : v) x = static_cast<K>(d(g) / 8);  // repeats across A and B
  std::sort(v.begin(), v.end());
  if (descending) std::reverse(v.begin(), v.end());
  return v;
}

// The bound of every element of A in B (and of B in A), index form, on the
// GPU, against the host.
template <class K>
void check_search(std::size_t na, std::size_t nb, bool descending, bool through_thrust, std::mt19937_64& g) {
  const auto a = sorted_keys<K>(g, na, descending);
  const auto b = sorted_keys<K>(g, nb, descending);
  auto da = to_device(a);
  auto db = to_device(b);
  thrust::device_vector<long long> lower(na), upper(nb);
  thrust::device_vector<long long> counts(na);
  auto run = [&](auto comp) {
    if (through_thrust) {
      lm::sorted_search<lm::bounds::lower>(thrust::device, da.begin(), da.end(), db.begin(), db.end(), lower.begin(),
                                           comp);
      lm::sorted_search<lm::bounds::upper>(thrust::device, db.begin(), db.end(), da.begin(), da.end(), upper.begin(),
                                           comp);
      lm::sorted_equality_count(thrust::device, da.begin(), da.end(), db.begin(), db.end(), counts.begin(), comp);
    } else {
      lm::sorted_search<lm::bounds::lower>(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), lower.begin(),
                                           comp);
      lm::sorted_search<lm::bounds::upper>(lm::cuda::par, db.begin(), db.end(), da.begin(), da.end(), upper.begin(),
                                           comp);
      lm::sorted_equality_count(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), counts.begin(), comp);
    }
    const auto got_lower = to_host(lower);
    const auto got_upper = to_host(upper);
    const auto got_counts = to_host(counts);
    for (std::size_t i = 0; i < na; ++i) {
      const long long want = std::lower_bound(b.begin(), b.end(), a[i], comp) - b.begin();
      const long long want_count = (std::upper_bound(b.begin(), b.end(), a[i], comp) - b.begin()) - want;
      if (got_lower[i] != want || got_counts[i] != want_count) {
        BOOST_FAIL("lower bound / count of A[" << i << "] = " << +a[i] << ": got " << got_lower[i] << " / "
                                               << got_counts[i] << ", expected " << want << " / " << want_count);
      }
    }
    for (std::size_t i = 0; i < nb; ++i) {
      const long long want = std::upper_bound(a.begin(), a.end(), b[i], comp) - a.begin();
      if (got_upper[i] != want) {
        BOOST_FAIL("upper bound of B[" << i << "] = " << +b[i] << ": got " << got_upper[i] << ", expected " << want);
      }
    }
  };
  if (descending) {
    run(thrust::greater<K>());
  } else {
    run(lm::less<>());
  }
}

template <class K>
void check_type() {
  std::mt19937_64 g(24);
  const long long nv = 512 * 15;  // the sm_90 dense tile
  for (bool descending : {false, true}) {
    for (bool through_thrust : {false, true}) {
      BOOST_TEST_CONTEXT("descending " << descending << " thrust " << through_thrust) {
        check_search<K>(1, 1, descending, through_thrust, g);
        check_search<K>(1, 1000, descending, through_thrust, g);
        for (long long n : {nv - 1, nv, nv + 1, 3 * nv + 7}) {
          check_search<K>(static_cast<std::size_t>(n), static_cast<std::size_t>(n), descending, through_thrust, g);
        }
        check_search<K>(100003, 90001, descending, through_thrust, g);
        check_search<K>(2000, 2000 * 64 + 5, descending, through_thrust, g);  // sparse: per-needle search
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(short_keys) { check_type<short>(); }
BOOST_AUTO_TEST_CASE(unsigned_short_keys) { check_type<unsigned short>(); }
