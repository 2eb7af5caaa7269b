// Built for several architecture lists (test/gpu/CMakeLists.txt; nvcc names
// them in __CUDA_ARCH_LIST__, e.g. 800,900,1000): the tuning line and programmatic
// dependent launch follow the architecture each kernel was compiled for,
// which is the newest listed one the device can run (PTX of an older one is
// compiled for the device at load time and keeps its own architecture).
#define BOOST_TEST_MODULE cuda_arch_choice
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_test_support.cuh"

namespace lm = libmerge;
namespace cb = internals::cuda;

#if !defined(__CUDA_ARCH_LIST__)
#error "nvcc names the compiled architectures in __CUDA_ARCH_LIST__ (CUDA 11.5 on)"
#endif

namespace {

int expected_arch(int cc) {
  const std::vector<int> archs = {__CUDA_ARCH_LIST__};
  int best = 0;
  for (int a : archs) {
    if (a / 10 <= cc && a / 10 > best) best = a / 10;
  }
  return best;
}

}  // namespace

BOOST_AUTO_TEST_CASE(kernels_report_the_architecture_they_were_built_for) {
  const auto& dev = cb::current_device("test");
  const int expected = expected_arch(dev.cc);
  BOOST_TEST_MESSAGE("device sm_" << dev.cc << ", expecting kernels for sm_" << expected);
  using G = cb::single_merge<const int*, const int*, lm::detail::no_values, lm::detail::no_values>;
  using box = lm::launch_box<128, 5>;
  const void* merge_kernel = reinterpret_cast<const void*>(
      cb::merge_kernel<box, false, G, int*, lm::detail::no_values, lm::less<>>);
  BOOST_CHECK_EQUAL(cb::kernel_arch(merge_kernel, dev, "test"), expected);
  const void* sort_kernel = reinterpret_cast<const void*>(
      cb::block_sort_kernel<box, int, char, false, false, char*, lm::less<>>);
  BOOST_CHECK_EQUAL(cb::kernel_arch(sort_kernel, dev, "test"), expected);

  // The tuned merge tile is the table line of that architecture.
  const int line = lm::tuning::entry_for(expected);
  BOOST_REQUIRE_GE(line, 0);
  const auto& tuned = lm::tuning::merge[line];
  const long long large_from = 1LL << tuned.small_log2;
  BOOST_CHECK_EQUAL(cuda_test::tuned_merge_large_from<int>(), large_from);
  BOOST_CHECK_EQUAL(cuda_test::tuned_merge_nv<int>(large_from), static_cast<long long>(tuned.nt) * tuned.vt_keys);
  if (large_from > 1) {
    BOOST_CHECK_EQUAL(cuda_test::tuned_merge_nv<int>(large_from - 1),
                      static_cast<long long>(tuned.small_nt) * tuned.small_vt_keys);
  }
}

BOOST_AUTO_TEST_CASE(merge_and_sort_work) {
  std::mt19937 rng(3);
  std::vector<int> keys(300001);
  for (auto& k : keys) k = static_cast<int>(rng() % 1000);
  std::vector<int> expected = keys;
  std::stable_sort(expected.begin(), expected.end());
  auto d = cuda_test::to_device(keys);
  lm::merge_sort(lm::cuda::par, d.begin(), d.end());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  test_support::check_same(cuda_test::to_host(d), expected, "merge_sort");

  std::vector<int> a(expected.begin(), expected.begin() + 100000), b(expected.begin() + 100000, expected.end());
  std::vector<int> merged(keys.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), merged.begin());
  auto da = cuda_test::to_device(a), db = cuda_test::to_device(b);
  thrust::device_vector<int> out(keys.size());
  lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), out.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  test_support::check_same(cuda_test::to_host(out), merged, "merge");
}

// The other kernel families, so that each architecture of this binary
// compiles and runs them all: the sort and merge of pairs, the dense sorted
// search (merge path), the per-needle one (few needles) and the equality
// count. Without a GPU, CI builds the other targets for sm_90 only
// (scripts/test.sh): these binaries are where sm_80 and sm_100 code compiles.
BOOST_AUTO_TEST_CASE(pairs_and_searches_work) {
  std::mt19937 rng(5);
  const std::size_t n = 300001;
  std::vector<int> keys(n), vals(n);
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = static_cast<int>(rng() % 5000);
    vals[i] = static_cast<int>(i);
  }
  std::vector<std::pair<int, int>> ref(n);
  for (std::size_t i = 0; i < n; ++i) ref[i] = {keys[i], vals[i]};
  std::stable_sort(ref.begin(), ref.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<int> sorted_keys(n), sorted_vals(n);
  for (std::size_t i = 0; i < n; ++i) std::tie(sorted_keys[i], sorted_vals[i]) = ref[i];

  auto dk = cuda_test::to_device(keys), dv = cuda_test::to_device(vals);
  lm::merge_sort_by_key(lm::cuda::par, dk.begin(), dk.end(), dv.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  test_support::check_same(cuda_test::to_host(dk), sorted_keys, "merge_sort_by_key keys");
  test_support::check_same(cuda_test::to_host(dv), sorted_vals, "merge_sort_by_key values");

  // Merge the sorted pairs' two halves back together: A's values first on ties.
  const std::size_t half = n / 2;
  std::vector<int> ak(sorted_keys.begin(), sorted_keys.begin() + half), bk(sorted_keys.begin() + half, sorted_keys.end());
  std::vector<int> av(sorted_vals.begin(), sorted_vals.begin() + half), bv(sorted_vals.begin() + half, sorted_vals.end());
  std::vector<std::pair<int, int>> ra(half), rb(n - half), merged(n);
  for (std::size_t i = 0; i < half; ++i) ra[i] = {ak[i], av[i]};
  for (std::size_t i = half; i < n; ++i) rb[i - half] = {bk[i - half], bv[i - half]};
  std::merge(ra.begin(), ra.end(), rb.begin(), rb.end(), merged.begin(),
             [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<int> merged_keys(n), merged_vals(n);
  for (std::size_t i = 0; i < n; ++i) std::tie(merged_keys[i], merged_vals[i]) = merged[i];
  auto dak = cuda_test::to_device(ak), dbk = cuda_test::to_device(bk);
  auto dav = cuda_test::to_device(av), dbv = cuda_test::to_device(bv);
  thrust::device_vector<int> ok(n), ov(n);
  lm::merge_by_key(lm::cuda::par, dak.begin(), dak.end(), dbk.begin(), dbk.end(), dav.begin(), dbv.begin(),
                   ok.begin(), ov.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  test_support::check_same(cuda_test::to_host(ok), merged_keys, "merge_by_key keys");
  test_support::check_same(cuda_test::to_host(ov), merged_vals, "merge_by_key values");

  // Lower bounds of A's keys in B: |A| = |B| (the dense tile) and 1000 needles
  // (per needle); how often each of A's keys is in B.
  thrust::device_vector<std::int64_t> lb(half);
  lm::sorted_search<lm::bounds::lower>(lm::cuda::par, dak.begin(), dak.end(), dbk.begin(), dbk.end(), lb.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  test_support::check_same(cuda_test::to_host(lb), test_support::reference_bounds(ak, bk, false, lm::less<>()),
                           "sorted_search, |A| = |B|");
  std::vector<int> few(ak.begin(), ak.begin() + 1000);
  std::sort(few.begin(), few.end());
  auto dfew = cuda_test::to_device(few);
  thrust::device_vector<std::int64_t> lb_few(few.size());
  lm::sorted_search<lm::bounds::lower>(lm::cuda::par, dfew.begin(), dfew.end(), dbk.begin(), dbk.end(),
                                       lb_few.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  test_support::check_same(cuda_test::to_host(lb_few), test_support::reference_bounds(few, bk, false, lm::less<>()),
                           "sorted_search, 1000 needles");

  std::vector<long long> counts(half);
  for (std::size_t i = 0; i < half; ++i) {
    const auto r = std::equal_range(bk.begin(), bk.end(), ak[i]);
    counts[i] = r.second - r.first;
  }
  thrust::device_vector<long long> dcounts(half);
  lm::sorted_equality_count(lm::cuda::par, dak.begin(), dak.end(), dbk.begin(), dbk.end(), dcounts.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  test_support::check_same(cuda_test::to_host(dcounts), counts, "sorted_equality_count");
}
