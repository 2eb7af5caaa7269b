// Built several times for different architecture lists (test/gpu/CMakeLists.txt
// passes the two listed, LIBMERGE_TEST_ARCH_LO and _HI, e.g. 80 and 90): the tuning line and programmatic
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

#if !defined(LIBMERGE_TEST_ARCH_LO) || !defined(LIBMERGE_TEST_ARCH_HI)
#error "LIBMERGE_TEST_ARCH_LO and LIBMERGE_TEST_ARCH_HI must name the compiled architectures, e.g. 80 and 90"
#endif

namespace {

int expected_arch(int cc) {
  const std::vector<int> archs = {LIBMERGE_TEST_ARCH_LO, LIBMERGE_TEST_ARCH_HI};
  int best = 0;
  for (int a : archs) {
    if (a <= cc && a > best) best = a;
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
      cb::merge_kernel<box, G, int*, lm::detail::no_values, lm::less<>>);
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
