// Key types on the GPU. NaN keys under lm::less / lm::greater (below): one
// defined order in every algorithm.
//
// 16-bit keys in the GPU sorted search (issue 24: every call with `short`
// keys threw cudaErrorInvalidValue at the launch of search_kernel, through
// lm::cuda::par and thrust::device, ascending and descending). The tuned tile
// was 512x15 then: its dynamic shared memory for 2-byte keys (46,096 bytes
// then, 46,176 with today's room for bulk copies) stays under 48 KB, so the
// launch did not raise the kernel's limit, but with the kernel's static
// shared memory (its `starts` array, 2 KB at 512 threads in each of its two
// tile forms) the block needed more. Commit 70bd903 fixed it: the launch
// (prepare_shared_memory, backends/cuda/runtime.cuh) counts the kernel's
// static bytes with the tile's before deciding to raise the limit. sm_90
// now tunes 16-bit keys to 256x19, far from the line, so the searches below
// force the 512x15 box through the policy (box_512x15): without the fix,
// each of them throws. Each call here is checked against std::lower_bound /
// std::upper_bound on the host: one element, tile boundaries, dense and
// sparse needles (the per-needle search, 4-ary in a small haystack, with
// interpolation in a large one; dense calls below 2^20 needles through
// lm::cuda::par with the tuned tile or the 512x15 box as its box, the merge
// path, and through thrust::device, per needle), lm::less and
// thrust::greater, lower and upper bounds, index, match and equality counts.
#define BOOST_TEST_MODULE cuda_key_types
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <utility>
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
template <class K, class Policy>
void check_search(std::size_t na, std::size_t nb, bool descending, const Policy& policy, std::mt19937_64& g) {
  const auto a = sorted_keys<K>(g, na, descending);
  const auto b = sorted_keys<K>(g, nb, descending);
  auto da = to_device(a);
  auto db = to_device(b);
  thrust::device_vector<long long> lower(na), upper(nb);
  thrust::device_vector<long long> counts(na);
  auto run = [&](auto comp) {
    lm::sorted_search<lm::bounds::lower>(policy, da.begin(), da.end(), db.begin(), db.end(), lower.begin(), comp);
    lm::sorted_search<lm::bounds::upper>(policy, db.begin(), db.end(), da.begin(), da.end(), upper.begin(), comp);
    lm::sorted_equality_count(policy, da.begin(), da.end(), db.begin(), db.end(), counts.begin(), comp);
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
    run(cuda_test::thrust_greater<K>());
  } else {
    run(lm::less<>());
  }
}

// The box of issue 24's failure: 512x15 tiles of 2-byte keys need 46,176
// bytes of dynamic shared memory, under 48 KB; the search kernel's static
// bytes carry the block over it (see the top of this file).
using box_512x15 = lm::launch_box<512, 15>;

// Calls through `policy` whose merge-path tiles hold nv elements: tile
// boundaries, then dense and sparse needles.
template <class K, class Policy>
void check_policy(const Policy& policy, long long nv, bool descending, std::mt19937_64& g) {
  check_search<K>(1, 1, descending, policy, g);
  check_search<K>(1, 1000, descending, policy, g);
  for (long long n : {nv - 1, nv, nv + 1, 3 * nv + 7}) {
    check_search<K>(static_cast<std::size_t>(n), static_cast<std::size_t>(n), descending, policy, g);
  }
  check_search<K>(100003, 90001, descending, policy, g);
  check_search<K>(2000, 2000 * 64 + 5, descending, policy, g);  // sparse: per-needle, 4-ary (small)
  // A haystack that is not small: the per-needle search interpolates.
  const long long large = std::max(cuda_test::tuned_search<K>().large_hay(sizeof(K)), 1LL << 17);
  check_search<K>(static_cast<std::size_t>(large / 64), static_cast<std::size_t>(large), descending, policy, g);
}

template <class K>
void check_type() {
  std::mt19937_64 g(24);
  for (bool descending : {false, true}) {
    BOOST_TEST_CONTEXT("descending " << descending << ", the tuned tile as the box") {
      // The tuned tile as the caller's box: the merge path wherever the
      // ratios allow it (a tuned call of fewer than 2^small_needles_log2
      // needles goes per needle, as the thrust::device calls do).
      check_policy<K>(cuda_test::dense_tile_policy<K>(), cuda_test::sm90_search_tile<K>::nv, descending, g);
    }
    BOOST_TEST_CONTEXT("descending " << descending << ", thrust::device") {
      check_policy<K>(thrust::device, cuda_test::sm90_search_tile<K>::nv, descending, g);
    }
    BOOST_TEST_CONTEXT("descending " << descending << ", box 512x15") {
      check_policy<K>(lm::cuda::par.with(box_512x15{}), box_512x15::nv, descending, g);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(short_keys) { check_type<short>(); }
BOOST_AUTO_TEST_CASE(unsigned_short_keys) { check_type<unsigned short>(); }

namespace {

// Keys with NaNs among them (about one in eight, and runs of them), against
// the order docs/api.md writes down, not against the comparator itself
// (test_cuda_fundamental_types runs every algorithm and type against the
// standard library with lm::less / lm::greater; this checks what those
// comparators promise): under lm::less the numbers ascend and the NaNs come
// after every number (+infinity included), equivalent to each other, so in
// their input order where the sort is stable; under lm::greater the NaNs come
// first and the numbers descend. Merge and search agree.
template <class F, class Comp>
void check_nan(std::size_t n, Comp comp, bool nan_first, std::mt19937_64& g) {
  const F nan = std::numeric_limits<F>::quiet_NaN();
  std::vector<F> keys(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = g();
    keys[i] = r % 8 == 0 || (i / 1000) % 7 == 3 ? nan : static_cast<F>(static_cast<int>(r % 2001) - 1000) / 8;
  }
  keys[0] = std::numeric_limits<F>::infinity();
  std::vector<int> vals(n);
  for (std::size_t i = 0; i < n; ++i) vals[i] = static_cast<int>(i);
  // The documented order, written out: x before y.
  auto before = [nan_first](F x, F y) {
    const bool nx = std::isnan(x), ny = std::isnan(y);
    if (nx || ny) return nan_first ? nx && !ny : !nx && ny;
    return nan_first ? x > y : x < y;
  };
  std::vector<std::pair<F, int>> ref(n);
  for (std::size_t i = 0; i < n; ++i) ref[i] = {keys[i], vals[i]};
  std::stable_sort(ref.begin(), ref.end(), [&](const auto& x, const auto& y) { return before(x.first, y.first); });
  auto same_key = [&](F x, F y) { return !before(x, y) && !before(y, x); };

  auto dk = to_device(keys);
  auto dv = to_device(vals);
  lm::merge_sort_by_key(lm::cuda::par, dk.begin(), dk.end(), dv.begin(), comp);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto got_k = to_host(dk);
  const auto got_v = to_host(dv);
  for (std::size_t i = 0; i < n; ++i) {
    if (!same_key(got_k[i], ref[i].first) || got_v[i] != ref[i].second) {
      BOOST_FAIL("merge_sort_by_key with NaNs, n " << n << ", position " << i << ": got (" << got_k[i] << ", "
                                                   << got_v[i] << "), expected (" << ref[i].first << ", "
                                                   << ref[i].second << ")");
    }
  }
  // Merge of two sorted halves, and the bounds of one in the other.
  std::vector<F> a, b;
  for (std::size_t i = 0; i < n; ++i) (i % 3 == 0 ? a : b).push_back(keys[i]);
  std::stable_sort(a.begin(), a.end(), before);
  std::stable_sort(b.begin(), b.end(), before);
  std::vector<F> want(n);
  std::merge(a.begin(), a.end(), b.begin(), b.end(), want.begin(), before);
  auto da = to_device(a), db = to_device(b);
  thrust::device_vector<F> out(n);
  lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), out.begin(), comp);
  // The bounds per needle (a tuned call this small) and on the merge path
  // (the tuned tile as the caller's box).
  thrust::device_vector<long long> lower(a.size()), lower_tiles(a.size());
  lm::sorted_search<lm::bounds::lower>(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), lower.begin(), comp);
  lm::sorted_search<lm::bounds::lower>(cuda_test::dense_tile_policy<F>(), da.begin(), da.end(), db.begin(), db.end(),
                                       lower_tiles.begin(), comp);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto got_m = to_host(out);
  for (std::size_t i = 0; i < n; ++i) {
    if (!same_key(got_m[i], want[i])) {
      BOOST_FAIL("merge with NaNs, position " << i << ": got " << got_m[i] << ", expected " << want[i]);
    }
  }
  const auto got_l = to_host(lower);
  const auto got_lt = to_host(lower_tiles);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const long long w = std::lower_bound(b.begin(), b.end(), a[i], before) - b.begin();
    if (got_l[i] != w) BOOST_FAIL("lower bound of " << a[i] << " with NaNs: got " << got_l[i] << ", expected " << w);
    if (got_lt[i] != w) {
      BOOST_FAIL("lower bound of " << a[i] << " with NaNs, merge path: got " << got_lt[i] << ", expected " << w);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(nan_keys_have_one_defined_order) {
  std::mt19937_64 g(25);
  for (std::size_t n : {std::size_t(1), std::size_t(100), std::size_t(7681), std::size_t(300001)}) {
    BOOST_TEST_CONTEXT("n " << n) {
      check_nan<float>(n, lm::less<>(), false, g);
      check_nan<float>(n, lm::greater<>(), true, g);
      check_nan<double>(n, lm::less<>(), false, g);
      check_nan<double>(n, lm::greater<double>(), true, g);
    }
  }
}
