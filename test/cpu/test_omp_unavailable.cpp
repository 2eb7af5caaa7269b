// Built without OpenMP: lm::omp::par still compiles as a policy, reports its
// backend as not available, and everything else works. Compiled again with
// LIBMERGE_TEST_CALL_OMP (test omp_unavailable_message), a call on
// lm::omp::par must stop the build with a message naming -fopenmp.
#if defined(_OPENMP)
#error "test_omp_unavailable must be compiled without OpenMP"
#endif

#if defined(LIBMERGE_TEST_CALL_OMP)

#include <libmerge/libmerge.hpp>

#include <vector>

int main() {
  std::vector<int> keys = {3, 1, 2};
  libmerge::merge_sort(libmerge::omp::par, keys.begin(), keys.end());
  return keys[0];
}

#else

#define BOOST_TEST_MODULE libmerge_cpu_omp_unavailable
#include <boost/test/unit_test.hpp>

#include <vector>

#include "cpu_test_helpers.hpp"

namespace lm = libmerge;

static_assert(!lm::is_available<lm::algo::merge, lm::omp::policy>);
static_assert(!lm::is_available<lm::algo::merge_sort, lm::omp::policy>);
static_assert(!lm::is_available<lm::algo::sorted_search, lm::omp::policy>);
static_assert(!lm::is_available<lm::algo::sorted_equality_count, lm::omp::policy>);
static_assert(lm::is_available<lm::algo::merge_sort, lm::serial_policy>);

BOOST_AUTO_TEST_CASE(the_serial_backend_works_without_openmp) {
  std::vector<int> keys = {5, -3, 9, 1, -3};
  lm::merge_sort(lm::serial, keys.begin(), keys.end());
  BOOST_TEST((keys == std::vector<int>{-3, -3, 1, 5, 9}));
  BOOST_TEST(lm::omp::par.threads(4).threads() == 4);  // the policy itself is plain C++
}

#endif
