// merge and merge_sort beyond 2^31 elements (1-byte keys) with lm::omp::par
// on OpenMP's default team: every position, share boundary and merge-path
// search must be 64-bit. Results are verified by linear checks (sortedness,
// per-value counts, the A-first order of equal keys), not against a second sort.
//
// Kept lean for CI (2 cores): at most 6.5 GB at once (merge_sort: 2.1 GB of
// keys and two scratch buffers of the same size; merge: 4.3 GB). Each case
// reports its time and team with BOOST_TEST_MESSAGE (shown by default).
#define BOOST_TEST_MODULE libmerge_cpu_omp_large
#include <boost/test/unit_test.hpp>
#include <boost/test/unit_test_parameters.hpp>  // runtime_config: the log level given

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>

#include "cpu_test_helpers.hpp"

namespace lm = libmerge;
using cpu_test::stopwatch;

namespace {

struct log_messages_by_default {
  log_messages_by_default() {
    using namespace boost::unit_test;
    const auto configured = runtime_config::get<log_level>(runtime_config::btrt_log_level);
    if (configured > log_messages) unit_test_log.set_threshold_level(log_messages);
  }
};

constexpr std::int64_t two_pow(int k) { return std::int64_t{1} << k; }

// An uninitialized buffer (std::vector would spend seconds zeroing gigabytes).
template <class T>
struct big_array {
  explicit big_array(std::int64_t n) : size(n), data(new T[static_cast<std::size_t>(n)]) {}
  T* begin() const { return data.get(); }
  T* end() const { return data.get() + size; }
  std::int64_t size;
  std::unique_ptr<T[]> data;
};

// Per-value counts of int8 keys, indexed by value + 128.
using histogram = std::array<std::int64_t, 256>;

std::size_t slot(std::int8_t v) { return static_cast<std::size_t>(static_cast<int>(v) + 128); }

histogram count_values(const std::int8_t* p, std::int64_t n) {
  histogram h{};
#pragma omp parallel
  {
    histogram local{};
#pragma omp for
    for (std::int64_t i = 0; i < n; ++i) ++local[slot(p[i])];
#pragma omp critical
    for (std::size_t s = 0; s < 256; ++s) h[s] += local[s];
  }
  return h;
}

struct splitmix64 {
  std::uint64_t state;
  std::uint64_t operator()() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

// A sorted int8 array: value v occurs counts[slot(v)] times.
big_array<std::int8_t> sorted_from_counts(const histogram& counts) {
  std::int64_t n = 0;
  for (auto c : counts) n += c;
  big_array<std::int8_t> a(n);
  std::int64_t pos = 0;
  for (std::size_t s = 0; s < 256; ++s) {
    std::memset(a.begin() + pos, static_cast<int>(s) - 128, static_cast<std::size_t>(counts[s]));
    pos += counts[s];
  }
  return a;
}

// Random per-value counts summing to n.
histogram random_counts(std::int64_t n, std::uint64_t seed) {
  splitmix64 rng{seed};
  histogram c{};
  std::int64_t assigned = 0;
  for (std::size_t s = 0; s < 256; ++s) {
    c[s] = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(2 * n / 256));
    assigned += c[s];
  }
  while (assigned > n) {  // trim, then top up value 0, so the total is exactly n
    for (std::size_t s = 0; s < 256 && assigned > n; ++s) {
      const std::int64_t cut = std::min(c[s], assigned - n);
      c[s] -= cut;
      assigned -= cut;
    }
  }
  c[slot(0)] += n - assigned;
  return c;
}

void check_sorted_with_counts(const std::int8_t* p, std::int64_t n, const histogram& expected, const char* what) {
  BOOST_TEST(std::is_sorted(p, p + n), what << ": output not sorted");
  const auto got = count_values(p, n);
  int wrong = 0;
  for (std::size_t s = 0; s < 256; ++s) wrong += got[s] != expected[s];
  BOOST_TEST(wrong == 0, what << ": " << wrong << " values with wrong counts");
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(log_messages_by_default);

// merge of two sorted int8 inputs of 2^30 + 2^20 each into 2^31 + 2^21
// outputs: sorted, with the inputs' per-value counts added up.
BOOST_AUTO_TEST_CASE(merge_beyond_2_pow_31) {
  const std::int64_t na = two_pow(30) + two_pow(20), nb = two_pow(30) + two_pow(20);
  const auto ca = random_counts(na, 1), cb = random_counts(nb, 2);
  histogram sum{};
  for (std::size_t s = 0; s < 256; ++s) sum[s] = ca[s] + cb[s];
  const auto a = sorted_from_counts(ca);
  const auto b = sorted_from_counts(cb);
  big_array<std::int8_t> out(na + nb);
  stopwatch t;
  std::int8_t* end = lm::merge(lm::omp::par, a.begin(), a.end(), b.begin(), b.end(), out.begin());
  BOOST_TEST_MESSAGE("lm::omp::par (" << omp_get_max_threads() << " threads) merge of 2 x (2^30 + 2^20) int8 keys: "
                                      << t.seconds() << " s");
  BOOST_TEST(end - out.begin() == na + nb);
  check_sorted_with_counts(out.begin(), na + nb, sum, "merge");
}

// merge_sort of 2^31 + 2^20 random int8 keys: sorted, same per-value counts.
BOOST_AUTO_TEST_CASE(merge_sort_beyond_2_pow_31) {
  const std::int64_t n = two_pow(31) + two_pow(20);
  big_array<std::int8_t> keys(n);
  splitmix64 rng{12346};
  for (std::int64_t i = 0; i + 8 <= n; i += 8) {
    const std::uint64_t r = rng();
    std::memcpy(keys.begin() + i, &r, 8);
  }
  const auto before = count_values(keys.begin(), n);
  stopwatch t;
  lm::merge_sort(lm::omp::par, keys.begin(), keys.end());
  BOOST_TEST_MESSAGE("lm::omp::par (" << omp_get_max_threads() << " threads) merge_sort of 2^31 + 2^20 random int8 keys: "
                                      << t.seconds() << " s");
  check_sorted_with_counts(keys.begin(), n, before, "merge_sort");
}
