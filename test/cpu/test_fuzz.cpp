// A differential fuzzer over the CPU backends: random sizes (0 .. 2^16 here,
// biased to powers of two and their neighbours), key types, distributions
// (runs, duplicates, sorted, reversed, all equal), comparators (less, greater,
// one with wide ties) and algorithms; lm::serial against the standard library,
// and lm::omp::par on teams of 1 to 8 threads against lm::serial, element for
// element (values and indices too: stability).
//
//   LIBMERGE_FUZZ_SECONDS  time budget (default 15: CI runs it on every push)
//   LIBMERGE_FUZZ_SEED     first seed (default 1); each case prints its seed
//                          on failure, and that seed alone reproduces it
#define BOOST_TEST_MODULE libmerge_cpu_fuzz
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <libmerge/libmerge.hpp>

#include "fuzz_inputs.hpp"

namespace lm = libmerge;

namespace {

using fuzz::make_keys;
using fuzz::pick_size;
using fuzz::same;

template <class F>
void each_policy(std::mt19937_64& g, F&& f) {
  f(lm::serial, "serial");
#if defined(_OPENMP)
  const int threads = 1 + static_cast<int>(g() % 8);
  f(lm::omp::par.threads(threads), "omp");
#else
  (void)g;
#endif
}

// One case: an algorithm on random inputs, every policy against the
// reference (the standard library; for the OpenMP team, lm::serial's result
// is the same by construction of the reference).
template <class T, class Comp>
void one_case(std::mt19937_64& g, Comp comp, const std::string& what) {
  const int algorithm = static_cast<int>(g() % 4);
  if (algorithm == 0) {  // merge_sort, merge_sort_by_key, merge_sort_indices
    const auto keys = make_keys<T>(g, pick_size(g));
    std::vector<std::int64_t> perm(keys.size());
    std::iota(perm.begin(), perm.end(), std::int64_t(0));
    std::stable_sort(perm.begin(), perm.end(), [&](std::int64_t a, std::int64_t b) {
      return comp(keys[static_cast<std::size_t>(a)], keys[static_cast<std::size_t>(b)]);
    });
    std::vector<T> want(keys.size());
    for (std::size_t i = 0; i < perm.size(); ++i) want[i] = keys[static_cast<std::size_t>(perm[i])];
    each_policy(g, [&](const auto& policy, const char* name) {
      auto k = keys;
      std::vector<std::int64_t> v(keys.size());
      std::iota(v.begin(), v.end(), std::int64_t(0));
      lm::merge_sort_by_key(policy, k.begin(), k.end(), v.begin(), comp);
      BOOST_TEST_REQUIRE((same(k, want) && v == perm), what << " merge_sort_by_key on " << name);
      std::vector<std::int64_t> idx(keys.size(), -1);
      k = keys;
      lm::merge_sort_indices(policy, k.begin(), k.end(), idx.begin(), comp);
      BOOST_TEST_REQUIRE((same(k, want) && idx == perm), what << " merge_sort_indices on " << name);
    });
    return;
  }
  auto a = make_keys<T>(g, pick_size(g));
  auto b = make_keys<T>(g, pick_size(g));
  std::stable_sort(a.begin(), a.end(), comp);
  std::stable_sort(b.begin(), b.end(), comp);
  if (algorithm == 1) {  // merge_by_key: values say where each key came from
    std::vector<std::int64_t> av(a.size()), bv(b.size());
    std::iota(av.begin(), av.end(), std::int64_t(0));
    std::iota(bv.begin(), bv.end(), static_cast<std::int64_t>(a.size()));
    std::vector<std::int64_t> want_v(a.size() + b.size());
    std::merge(av.begin(), av.end(), bv.begin(), bv.end(), want_v.begin(), [&](std::int64_t x, std::int64_t y) {
      const T& kx = x < static_cast<std::int64_t>(a.size()) ? a[static_cast<std::size_t>(x)]
                                                            : b[static_cast<std::size_t>(x) - a.size()];
      const T& ky = y < static_cast<std::int64_t>(a.size()) ? a[static_cast<std::size_t>(y)]
                                                            : b[static_cast<std::size_t>(y) - a.size()];
      return comp(kx, ky);
    });
    each_policy(g, [&](const auto& policy, const char* name) {
      std::vector<T> k(a.size() + b.size());
      std::vector<std::int64_t> v(a.size() + b.size(), -1);
      lm::merge_by_key(policy, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), k.begin(), v.begin(),
                       comp);
      BOOST_TEST_REQUIRE((v == want_v), what << " merge_by_key on " << name);
    });
    return;
  }
  // sorted_search (both sides, index_match: the bound, and the output's top
  // bit set on a match) and sorted_equality_count.
  const std::uint64_t top = std::uint64_t(1) << 63;
  std::vector<std::uint64_t> want_a(a.size()), want_b(b.size());
  std::vector<std::int64_t> count(a.size());
  std::uint64_t matches_a = 0, matches_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lo = std::lower_bound(b.begin(), b.end(), a[i], comp);
    const auto hi = std::upper_bound(b.begin(), b.end(), a[i], comp);
    want_a[i] = static_cast<std::uint64_t>(lo - b.begin()) | (lo != hi ? top : 0);
    count[i] = hi - lo;
    matches_a += lo != hi;
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto hi = std::upper_bound(a.begin(), a.end(), b[i], comp);
    const bool match = std::binary_search(a.begin(), a.end(), b[i], comp);
    want_b[i] = static_cast<std::uint64_t>(hi - a.begin()) | (match ? top : 0);
    matches_b += match;
  }
  each_policy(g, [&](const auto& policy, const char* name) {
    std::vector<std::uint64_t> ga(a.size()), gb(b.size());
    const lm::match_counts m =
        lm::sorted_search<lm::bounds::lower, lm::search_type::index_match, lm::search_type::index_match>(
            policy, a.begin(), a.end(), b.begin(), b.end(), ga.begin(), gb.begin(), comp);
    BOOST_TEST_REQUIRE((ga == want_a && gb == want_b && static_cast<std::uint64_t>(m.a) == matches_a &&
                        static_cast<std::uint64_t>(m.b) == matches_b),
                       what << " sorted_search on " << name);
    std::vector<std::int64_t> c(a.size(), -1);
    lm::sorted_equality_count(policy, a.begin(), a.end(), b.begin(), b.end(), c.begin(), comp);
    BOOST_TEST_REQUIRE((c == count), what << " sorted_equality_count on " << name);
  });
}

void one_seed(std::uint64_t seed) {
  fuzz::with_seed(seed, [](std::mt19937_64& g, auto key, auto comp, const std::string& what) {
    one_case<decltype(key)>(g, comp, what);
  });
}

double env_or(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atof(v) : fallback;
}

}  // namespace

BOOST_AUTO_TEST_CASE(cpu_backends_against_the_standard_library) {
  const double seconds = env_or("LIBMERGE_FUZZ_SECONDS", 15);
  const auto first = static_cast<std::uint64_t>(env_or("LIBMERGE_FUZZ_SEED", 1));
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t seed = first;
  for (; std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds; ++seed) {
    one_seed(seed);
  }
  BOOST_TEST_MESSAGE("fuzzed seeds " << first << " .. " << seed - 1 << " in " << seconds << " s");
  BOOST_TEST(seed > first);
}
