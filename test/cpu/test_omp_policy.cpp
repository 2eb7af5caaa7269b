// lm::omp::par as a policy: its team size, exceptions thrown inside its
// parallel regions, comparators that are no strict weak ordering, calls from
// inside a user's parallel region, and Thrust's
// host policies (thrust::omp::par, thrust::cpp::par) as drop-ins, built when
// Thrust's headers are found (LIBMERGE_TEST_THRUST_POLICIES).
//
// Exceptions: a comparator that throws on its k-th call, for k from the first
// call to the last, on teams of 1, 2, 3 and 8 threads. The exception reaches
// the caller as the same type with the same message, and a sort leaves the
// caller's keys and values exactly as they were.
#define BOOST_TEST_MODULE libmerge_cpu_omp_policy
#include <boost/test/unit_test.hpp>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu_test_helpers.hpp"
#include "omp_test_helpers.hpp"
#if LIBMERGE_TEST_THRUST_POLICIES
// thrust::omp::par and thrust::cpp::par themselves, where g++ can include
// them: Thrust's public headers need CUDA's vector types, so the policy
// objects' own headers (detail/par.h up to CCCL 3.5; from 3.6 the objects
// are in detail/execution_policy.h, which libmerge includes).
#if __has_include(<thrust/system/omp/detail/par.h>)
#include <thrust/system/cpp/detail/par.h>
#include <thrust/system/omp/detail/par.h>
#endif
#endif
#include "demo/demonstrations.hpp"

namespace lm = libmerge;
using omp_test::for_each_team;
using cpu_test::check_same;
using lm::bounds;
using lm::search_type;
using test_support::distribution;

namespace {

struct comparator_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// lm::less<> that counts its calls, across every copy and thread, and throws
// comparator_failure on call number throw_at (never when negative).
struct throwing_less {
  std::shared_ptr<std::atomic<std::int64_t>> calls = std::make_shared<std::atomic<std::int64_t>>(0);
  std::int64_t throw_at = -1;

  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    const std::int64_t call = calls->fetch_add(1, std::memory_order_relaxed);
    if (call == throw_at) throw comparator_failure("comparator failed at call " + std::to_string(call));
    return a < b;
  }
};

// Runs call(comp) once with a counting comparator to learn how many
// comparisons it makes, then again with the comparator throwing at the first,
// a middle and the last of them; after each failed call check() verifies the
// state the caller sees. reset() restores the caller's state before each call.
template <class Reset, class Call, class Check>
void throw_at_every_stage(Reset&& reset, Call&& call, Check&& check) {
  reset();
  throwing_less counting;
  call(counting);
  const std::int64_t total = counting.calls->load();
  BOOST_TEST_REQUIRE(total > 0);
  for (std::int64_t k : {std::int64_t{0}, total / 3, 2 * total / 3, total - 1}) {
    BOOST_TEST_CONTEXT("throwing at comparison " << k << " of " << total) {
      reset();
      throwing_less comp;
      comp.throw_at = k;
      try {
        call(comp);
        BOOST_ERROR("no exception reached the caller");
      } catch (const comparator_failure& e) {
        BOOST_TEST(std::string(e.what()) == "comparator failed at call " + std::to_string(k));
      }
      check();
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(team_size_of_the_policy) {
  BOOST_TEST(lm::omp::par.threads() == 0);
  BOOST_TEST(lm::omp::par.threads(3).threads() == 3);
  BOOST_TEST(lm::omp::par.threads(3).threads(0).threads() == 0);
  BOOST_CHECK_THROW(lm::omp::par.threads(-1), std::invalid_argument);
  static_assert(std::is_same_v<lm::omp::policy::backend_tag, lm::backend::omp>);
  static_assert(lm::is_available<lm::algo::merge, lm::omp::policy>);
  static_assert(lm::is_available<lm::algo::merge_sort, lm::omp::policy>);
  static_assert(lm::is_available<lm::algo::sorted_search, lm::omp::policy>);
  static_assert(lm::is_available<lm::algo::sorted_equality_count, lm::omp::policy>);
}

// The default team (OpenMP's, trimmed for small inputs) and an explicit one
// with more threads than elements give lm::serial's results.
BOOST_AUTO_TEST_CASE(default_team_and_more_threads_than_elements) {
  for (std::int64_t n : {2, 5, 3000, 300000}) {
    BOOST_TEST_CONTEXT("n " << n) {
      const auto input = test_support::generate<std::int32_t>(n, distribution::random, 77 + static_cast<std::uint64_t>(n));
      auto expected = input;
      lm::merge_sort(lm::serial, expected.begin(), expected.end());
      for (const auto& policy : {lm::omp::par, lm::omp::par.threads(0), lm::omp::par.threads(64)}) {
        BOOST_TEST_CONTEXT("policy threads() " << policy.threads()) {
          auto keys = input;
          lm::merge_sort(policy, keys.begin(), keys.end());
          check_same(keys, expected, "merge_sort");
          std::vector<std::int32_t> out(2 * keys.size());
          lm::merge(policy, expected.begin(), expected.end(), expected.begin(), expected.end(), out.begin());
          std::vector<std::int32_t> expected_out(out.size());
          lm::merge(lm::serial, expected.begin(), expected.end(), expected.begin(), expected.end(),
                    expected_out.begin());
          check_same(out, expected_out, "merge");
        }
      }
    }
  }
}

// Called from inside a user's parallel region, each call gets the team
// OpenMP grants there (one thread unless nesting is on) and still works.
BOOST_AUTO_TEST_CASE(calls_from_inside_a_parallel_region) {
  const auto input = test_support::generate<std::int64_t>(50000, distribution::random, 5);
  auto expected = input;
  lm::merge_sort(lm::serial, expected.begin(), expected.end());
  std::vector<std::vector<std::int64_t>> results(4, input);
#pragma omp parallel for num_threads(4)
  for (int i = 0; i < 4; ++i) {
    lm::merge_sort(lm::omp::par.threads(4), results[static_cast<std::size_t>(i)].begin(),
                   results[static_cast<std::size_t>(i)].end());
  }
  for (const auto& r : results) check_same(r, expected, "merge_sort inside a parallel region");
}

// Sorts: the caller's keys and values are untouched when the comparator throws.
BOOST_AUTO_TEST_CASE(sorts_leave_the_range_unchanged_when_the_comparator_throws) {
  for (std::int64_t n : {50, 100000}) {
    const auto input = test_support::generate<std::int32_t>(n, distribution::random, 31 + static_cast<std::uint64_t>(n));
    std::vector<std::int64_t> positions(input.size());
    std::iota(positions.begin(), positions.end(), std::int64_t{0});
    BOOST_TEST_CONTEXT("n " << n) {
      for_each_team([&](const auto& policy) {
        std::vector<std::int32_t> keys;
        std::vector<std::int64_t> vals;
        std::vector<std::int32_t> indices;
        auto reset = [&] {
          keys = input;
          vals = positions;
          indices.assign(input.size(), -1);
        };
        auto unchanged = [&] {
          check_same(keys, input, "keys after the exception");
          check_same(vals, positions, "values after the exception");
          BOOST_TEST(std::all_of(indices.begin(), indices.end(), [](std::int32_t i) { return i == -1; }),
                     "indices written despite the exception");
        };
        BOOST_TEST_CONTEXT("merge_sort") {
          throw_at_every_stage(
              reset, [&](throwing_less comp) { lm::merge_sort(policy, keys.begin(), keys.end(), comp); }, unchanged);
        }
        BOOST_TEST_CONTEXT("merge_sort_by_key") {
          throw_at_every_stage(
              reset,
              [&](throwing_less comp) { lm::merge_sort_by_key(policy, keys.begin(), keys.end(), vals.begin(), comp); },
              unchanged);
        }
        BOOST_TEST_CONTEXT("merge_sort_indices") {
          throw_at_every_stage(
              reset,
              [&](throwing_less comp) {
                lm::merge_sort_indices(policy, keys.begin(), keys.end(), indices.begin(), comp);
              },
              unchanged);
        }
      });
    }
  }
}

// merge, sorted_search, sorted_equality_count: the comparator's exception
// reaches the caller (inputs are never modified).
BOOST_AUTO_TEST_CASE(merges_and_searches_pass_the_comparator_exception_on) {
  const auto a = test_support::generate_sorted<std::int32_t>(60000, distribution::few_distinct, 8);
  const auto b = test_support::generate_sorted<std::int32_t>(45001, distribution::random, 9);
  for_each_team([&](const auto& policy) {
    std::vector<std::int32_t> out(a.size() + b.size()), vals_out(out.size());
    std::vector<std::int64_t> a_out(a.size());
    std::vector<std::uint32_t> b_out(b.size());
    auto nothing = [] {};
    BOOST_TEST_CONTEXT("merge") {
      throw_at_every_stage(
          nothing, [&](throwing_less comp) { lm::merge(policy, a.begin(), a.end(), b.begin(), b.end(), out.begin(), comp); },
          nothing);
    }
    BOOST_TEST_CONTEXT("merge_by_key") {
      throw_at_every_stage(
          nothing, [&](throwing_less comp) {
            lm::merge_by_key(policy, a.begin(), a.end(), b.begin(), b.end(), a.begin(), b.begin(), out.begin(),
                             vals_out.begin(), comp);
          },
          nothing);
    }
    BOOST_TEST_CONTEXT("sorted_search") {
      throw_at_every_stage(
          nothing, [&](throwing_less comp) {
            lm::sorted_search<bounds::upper, search_type::index_match, search_type::match>(
                policy, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin(), comp);
          },
          nothing);
      throw_at_every_stage(
          nothing, [&](throwing_less comp) {
            lm::sorted_search<bounds::lower>(policy, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), comp);
          },
          nothing);
    }
    BOOST_TEST_CONTEXT("sorted_equality_count") {
      throw_at_every_stage(
          nothing, [&](throwing_less comp) {
            lm::sorted_equality_count(policy, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), comp);
          },
          nothing);
    }
  });
}

// An exception from an iterator (any type, not only the comparator's) also
// reaches the caller: a bounds-checked output one element too short.
BOOST_AUTO_TEST_CASE(an_iterator_exception_reaches_the_caller) {
  const auto a = test_support::generate_sorted<std::int32_t>(10000, distribution::random, 10);
  std::vector<std::int32_t> out(2 * a.size());
  for_each_team([&](const auto& policy) {
    cpu_test::checked_iterator<std::int32_t> short_out(out.data(), static_cast<std::ptrdiff_t>(out.size()) - 1);
    BOOST_CHECK_THROW(lm::merge(policy, a.begin(), a.end(), a.begin(), a.end(), short_out),
                      cpu_test::out_of_range_access);
  });
}

// ---------------------------------------------------------------------------
// Comparators that are no strict weak ordering, and unsorted input: every
// call returns, stays inside every range (bounds-checked iterators), and a
// sort's output is a permutation of its input, whatever the thread shares.

struct comparator_budget_exceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Answers x <= y, a pseudo-random bit, always true or always false; safe to
// call from several threads (the call counter is atomic). Past `budget`
// calls it throws, which turns a hang into a failure.
struct bad_comparator {
  enum kind { less_equal, random, always_true, always_false } k;
  std::shared_ptr<std::atomic<std::int64_t>> calls = std::make_shared<std::atomic<std::int64_t>>(0);
  std::int64_t budget;

  bad_comparator(kind kk, std::int64_t n)
      : k(kk), budget(64 * (n + 16) * (static_cast<std::int64_t>(std::log2(static_cast<double>(n) + 2)) + 2)) {}

  bool operator()(std::int32_t x, std::int32_t y) const {
    const std::int64_t call = calls->fetch_add(1, std::memory_order_relaxed);
    if (call > budget) throw comparator_budget_exceeded("comparator called more than " + std::to_string(budget) + " times");
    switch (k) {
      case less_equal: return x <= y;
      case random: return (cpu_test::mix_seed(static_cast<std::uint64_t>(call), static_cast<std::uint64_t>(x)) & 1) != 0;
      case always_true: return true;
      case always_false: return false;
    }
    return false;
  }
};

const bad_comparator::kind bad_kinds[] = {bad_comparator::less_equal, bad_comparator::random,
                                          bad_comparator::always_true, bad_comparator::always_false};

template <class F>
void expect_returns_in_range(F&& f) {
  try {
    f();
  } catch (const cpu_test::out_of_range_access& e) {
    BOOST_ERROR("access outside a range: " << e.what());
  } catch (const comparator_budget_exceeded& e) {
    BOOST_ERROR("does not terminate: " << e.what());
  }
}

template <class T>
std::vector<T> sorted_copy(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

BOOST_AUTO_TEST_CASE(bad_comparators_sorts_return_a_permutation) {
  for (auto kind : bad_kinds) {
    for (std::int64_t n : {0, 1, 2, 17, 100, 4097, 30001}) {
      BOOST_TEST_CONTEXT("comparator kind " << static_cast<int>(kind) << ", n " << n) {
        const auto input = test_support::generate<std::int32_t>(n, distribution::few_distinct, 41 + static_cast<std::uint64_t>(n));
        std::vector<std::int64_t> identity(input.size());
        std::iota(identity.begin(), identity.end(), std::int64_t{0});
        for_each_team([&](const auto& policy) {
          auto keys = input;
          auto [first, last] = cpu_test::checked_range(keys);
          expect_returns_in_range([&] { lm::merge_sort(policy, first, last, bad_comparator(kind, n)); });
          BOOST_TEST((sorted_copy(keys) == sorted_copy(input)), "merge_sort output is not a permutation of its input");

          keys = input;
          auto vals = identity;
          auto vfirst = cpu_test::checked_range(vals).first;
          expect_returns_in_range([&] { lm::merge_sort_by_key(policy, first, last, vfirst, bad_comparator(kind, n)); });
          BOOST_TEST((sorted_copy(keys) == sorted_copy(input)), "merge_sort_by_key keys not a permutation");
          BOOST_TEST((sorted_copy(vals) == identity), "merge_sort_by_key values not a permutation");
        });
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_comparators_and_unsorted_input_merges_and_searches_stay_in_range) {
  for (auto kind : bad_kinds) {
    for (std::int64_t na : {0, 1, 17, 1000, 20001}) {
      for (std::int64_t nb : {0, 3, 1000, 9999}) {
        BOOST_TEST_CONTEXT("comparator kind " << static_cast<int>(kind) << ", |A| " << na << ", |B| " << nb) {
          auto a = test_support::generate<std::int32_t>(na, distribution::few_distinct, 43);  // unsorted
          auto b = test_support::generate<std::int32_t>(nb, distribution::random, 44);        // unsorted
          std::vector<std::int32_t> out(a.size() + b.size()), vals_out(out.size());
          std::vector<std::int64_t> a_out(a.size()), b_out(b.size());
          auto [a0, a1] = cpu_test::checked_range(a);
          auto [b0, b1] = cpu_test::checked_range(b);
          auto [o0, o1] = cpu_test::checked_range(out);
          auto [v0, v1] = cpu_test::checked_range(vals_out);
          auto ao = cpu_test::checked_range(a_out).first;
          auto bo = cpu_test::checked_range(b_out).first;
          const std::int64_t n = na + nb;
          for_each_team([&](const auto& policy) {
            expect_returns_in_range([&] {
              BOOST_TEST((lm::merge(policy, a0, a1, b0, b1, o0, bad_comparator(kind, n)) == o1));
              BOOST_TEST((lm::merge(policy, a0, a1, b0, b1, o0, lm::less<>{}) == o1));  // unsorted only
              auto ends = lm::merge_by_key(policy, a0, a1, b0, b1, a0, b0, o0, v0, bad_comparator(kind, n));
              BOOST_TEST((ends.first == o1));
              BOOST_TEST((ends.second == v1));
              lm::sorted_search<bounds::lower, search_type::index_match, search_type::index_match>(
                  policy, a0, a1, b0, b1, ao, bo, bad_comparator(kind, n));
              lm::sorted_search<bounds::upper, search_type::match, search_type::index>(policy, a0, a1, b0, b1, ao, bo,
                                                                                       lm::less<>{});
              lm::sorted_search<bounds::lower>(policy, a0, a1, b0, b1, ao, bad_comparator(kind, n));
              lm::sorted_equality_count(policy, a0, a1, b0, b1, ao, bad_comparator(kind, n));
              lm::sorted_equality_count(policy, a0, a1, b0, b1, ao, lm::less<>{});
            });
          });
        }
      }
    }
  }
}

// The demo's demonstrations (the seeds' Modern GPU examples) print the same
// on lm::omp::par as on lm::serial, whose printout test_demo_output holds to
// the seeds' (and without a "not in this backend" note: all run on OpenMP).
BOOST_AUTO_TEST_CASE(demonstrations_print_the_same_as_on_serial) {
  std::ostringstream serial_out;
  demo::run_demonstrations(serial_out, lm::serial);
  for_each_team([&](const auto& policy) {
    std::ostringstream omp_out;
    demo::run_demonstrations(omp_out, policy);
    BOOST_TEST(omp_out.str() == serial_out.str());
  });
}

#if LIBMERGE_TEST_THRUST_POLICIES
// thrust::omp::par runs the OpenMP backend and thrust::cpp::par the serial
// one, as drop-ins: the same results as lm::serial for every algorithm.
BOOST_AUTO_TEST_CASE(thrust_host_policies_are_drop_ins) {
  static_assert(std::is_same_v<lm::detail::resolved_policy_t<decltype(thrust::omp::par)>, lm::omp::policy>);
  static_assert(std::is_same_v<lm::detail::resolved_policy_t<decltype(thrust::cpp::par)>, lm::serial_policy>);
  static_assert(std::is_same_v<lm::detail::resolved_policy_t<thrust::system::cpp::detail::par_t>, lm::serial_policy>);
  static_assert(lm::is_available<lm::algo::merge_sort, decltype(thrust::omp::par)>);

  const auto input = test_support::generate<std::int32_t>(100001, distribution::random, 3);
  const auto a = test_support::generate_sorted<std::int32_t>(50000, distribution::few_distinct, 4);
  const auto b = test_support::generate_sorted<std::int32_t>(30001, distribution::few_distinct, 5);
  auto expected_keys = input;
  std::vector<std::int64_t> expected_idx(input.size());
  lm::merge_sort_indices(lm::serial, expected_keys.begin(), expected_keys.end(), expected_idx.begin());
  std::vector<std::int32_t> expected_merge(a.size() + b.size());
  lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected_merge.begin());
  std::vector<std::int64_t> expected_bounds(a.size()), expected_counts(a.size());
  lm::sorted_search<bounds::upper>(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected_bounds.begin());
  lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected_counts.begin());

  auto run = [&](const auto& policy, const char* name) {
    BOOST_TEST_CONTEXT(name) {
      auto keys = input;
      lm::merge_sort(policy, keys.begin(), keys.end());
      check_same(keys, expected_keys, "merge_sort");
      keys = input;
      std::vector<std::int64_t> idx(input.size());
      lm::merge_sort_indices(policy, keys.begin(), keys.end(), idx.begin());
      check_same(idx, expected_idx, "merge_sort_indices");
      std::vector<std::int32_t> merged(expected_merge.size());
      lm::merge(policy, a.begin(), a.end(), b.begin(), b.end(), merged.begin());
      check_same(merged, expected_merge, "merge");
      std::vector<std::int64_t> bounds_out(a.size()), counts(a.size());
      lm::sorted_search<bounds::upper>(policy, a.begin(), a.end(), b.begin(), b.end(), bounds_out.begin());
      check_same(bounds_out, expected_bounds, "sorted_search");
      lm::sorted_equality_count(policy, a.begin(), a.end(), b.begin(), b.end(), counts.begin());
      check_same(counts, expected_counts, "sorted_equality_count");
    }
  };
  run(thrust::omp::par, "thrust::omp::par");
  run(thrust::cpp::par, "thrust::cpp::par");
}
#endif

// The check survives a modifier set after it: .checked().threads(t) checks
// as .threads(t).checked() does (it once returned an unchecked policy).
BOOST_AUTO_TEST_CASE(checked_then_threads_still_checks) {
  std::vector<std::int32_t> a = {1, 5, 3}, b = {2, 4}, out(5, -1);
  const auto checked = lm::omp::par.checked().threads(2);
  static_assert(lm::detail::is_checked_v<decltype(checked)>);
  BOOST_CHECK_THROW(lm::merge(checked, a.begin(), a.end(), b.begin(), b.end(), out.begin()), std::invalid_argument);
  BOOST_CHECK((out == std::vector<std::int32_t>(5, -1)));
  BOOST_CHECK_EQUAL(checked.threads(), 2);
}

// Checked calls on a team (lm::omp::par.threads(t).checked()): the same first
// bad position as the serial check for every team size, a comparator's
// exception passed on from the worker threads, and sorted inputs accepted.
BOOST_AUTO_TEST_CASE(checked_calls_find_the_first_bad_position_on_every_team) {
  std::vector<std::int64_t> a(300001), b(1000);
  std::iota(a.begin(), a.end(), 0);
  std::iota(b.begin(), b.end(), 5);
  a[250000] = -1;  // the first descent: element 250000
  a[280000] = -2;
  std::vector<std::int64_t> out(a.size() + b.size(), -1);
  for (int t : {1, 2, 3, 8}) {
    BOOST_TEST_CONTEXT("threads " << t) {
      const auto checked = lm::omp::par.threads(t).checked();
      try {
        lm::merge(checked, b.begin(), b.end(), a.begin(), a.end(), out.begin());
        BOOST_ERROR("unsorted input accepted");
      } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("[b_first, b_last) is not sorted by the comparator: element 250000 ") !=
                   std::string::npos, e.what());
      }
      BOOST_TEST(std::all_of(out.begin(), out.end(), [](std::int64_t x) { return x == -1; }));
      auto keys = a;
      try {
        lm::merge_sort(checked, keys.begin(), keys.end(), [](std::int64_t x, std::int64_t y) { return x <= y; });
        BOOST_ERROR("<= accepted");
      } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("comp(x, x) is true") != std::string::npos, e.what());
      }
      BOOST_TEST((keys == a));
      // A throwing comparator reaches the caller.
      BOOST_CHECK_THROW(lm::merge(checked, b.begin(), b.end(), b.begin(), b.end(), out.begin(),
                                  [](std::int64_t, std::int64_t) -> bool { throw std::runtime_error("boom"); }),
                        std::runtime_error);
      // Sorted: accepted, and merged.
      std::vector<std::int64_t> c(a.begin(), a.begin() + 250000);
      std::vector<std::int64_t> merged(c.size() + b.size());
      lm::merge(checked, c.begin(), c.end(), b.begin(), b.end(), merged.begin());
      BOOST_TEST(std::is_sorted(merged.begin(), merged.end()));
    }
  }
}
