// Helpers shared by the OpenMP backend's tests (test/cpu/test_omp_*.cpp):
// the teams every case runs on, and the two-input sweeps' sizes and
// combinations. Include after cpu_test_helpers.hpp.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu_test_helpers.hpp"

namespace omp_test {

namespace lm = libmerge;

// Teams of 1, 2, 3 and 8 threads: one thread, an even and an odd split, and
// more threads than CI's cores.
inline constexpr int team_sizes[] = {1, 2, 3, 8};

template <class F>
void for_each_team(F&& f) {
  for (int threads : team_sizes) {
    BOOST_TEST_CONTEXT("lm::omp::par.threads(" << threads << ")") { f(lm::omp::par.threads(threads)); }
  }
}

// (|A|, |B|) pairs for the two-input sweeps: every pair of the small sizes
// (empty, tiny, around a 16-element run, a few thread shares), and the large
// sizes against small, equal and large partners (for searches: sparse needles
// in a large haystack, and the reverse). Fewer than the serial suite's pairs:
// every pair runs on four teams, and a team costs a parallel region per call.
inline std::vector<std::pair<std::int64_t, std::int64_t>> size_pairs(bool with_million) {
  const std::int64_t small[] = {0, 1, 2, 7, 33, 257, 4097};
  std::vector<std::int64_t> big = {65535, 65537};
  if (with_million) big.push_back(1000000);
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  for (auto x : small)
    for (auto y : small) pairs.emplace_back(x, y);
  for (auto b : big) {
    for (std::int64_t p : {0, 1, 33, 4097}) {
      pairs.emplace_back(b, p);
      pairs.emplace_back(p, b);
    }
    pairs.emplace_back(b, b);
  }
  return pairs;
}

// The sweeps' combinations: int32 and record keys run every comparator,
// distribution and pairing (records with record_less and lm::greater<>:
// record_less orders them as lm::less<> does); the other key types lm::less<>
// with random, few distinct and all-equal keys, B drawn from A's stream.
template <class T, class Comp>
bool runs(test_support::distribution d, cpu_test::pairing p) {
  using test_support::distribution;
  constexpr bool less = std::is_same_v<Comp, lm::less<>>;
  if (std::is_same_v<T, test_support::record>) return !less;
  if (std::is_same_v<T, std::int32_t>) return true;
  return less && p == cpu_test::pairing::shared && d != distribution::sorted && d != distribution::reversed;
}

}  // namespace omp_test
