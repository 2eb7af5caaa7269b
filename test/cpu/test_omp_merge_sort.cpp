// merge_sort, merge_sort_by_key and merge_sort_indices with lm::omp::par
// against lm::serial, the oracle: bit for bit equal results for every key
// type, size and distribution, several comparators, value and index types and
// iterator kinds, each with teams of 1, 2, 3 and 8 threads (8 is more threads
// than CI's cores, and more than the elements of the small sizes: empty blocks).
//
// The sizes cross the backend's own boundaries: runs of 16, chunks of 8192 to
// 32768 elements (by element size), blocks of n / threads.
//
// Runtime limit (every call runs on four teams): int32 and record keys run
// every comparator and distribution, the other key types lm::less<> with all
// but sorted keys. The 10^6 size runs only with
//   keys only:        lm::less<> with random, reversed and few_distinct keys,
//                     lm::greater<> with random ones;
//   by_key, indices:  lm::less<> with random and few_distinct keys.
#define BOOST_TEST_MODULE libmerge_cpu_omp_merge_sort
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu_test_helpers.hpp"
#include "omp_test_helpers.hpp"

namespace lm = libmerge;
using omp_test::for_each_team;
using cpu_test::check_same;
using cpu_test::comp_name;
using cpu_test::for_each_comparator;
using cpu_test::mix_seed;
using cpu_test::type_name;
using test_support::distribution;
using test_support::key_types;
using test_support::record;
using test_support::record_less;

namespace {

constexpr std::int64_t million = 1000000;
template <class Comp>
bool keys_million_runs(distribution d) {
  if (std::is_same_v<Comp, lm::less<>>) {
    return d == distribution::random || d == distribution::reversed || d == distribution::few_distinct;
  }
  return std::is_same_v<Comp, lm::greater<>> && d == distribution::random;
}
template <class Comp>
bool pairs_million_runs(distribution d) {
  return std::is_same_v<Comp, lm::less<>> && (d == distribution::random || d == distribution::few_distinct);
}

// The sweeps' combinations: int32 and record keys run every comparator and
// distribution (records with record_less and lm::greater<>: record_less
// orders them as lm::less<> does); the other key types lm::less<> with random,
// reversed, few-distinct and all-equal keys.
template <class T, class Comp>
bool runs(distribution d) {
  constexpr bool less = std::is_same_v<Comp, lm::less<>>;
  if (std::is_same_v<T, record>) return !less;
  if (std::is_same_v<T, std::int32_t>) return true;
  return less && d != distribution::sorted;
}

// Runs f(n, d, seed) for every (size, distribution) of the sweep, inside a
// failure context naming the key type, comparator, size, distribution and seed.
template <class T, class Comp, class F>
void sweep(bool (*million_runs)(distribution), F&& f) {
  for (auto n : test_support::standard_sizes()) {
    for (auto d : test_support::all_distributions) {
      if (!runs<T, Comp>(d) || (n >= million && !million_runs(d))) continue;
      const auto seed = mix_seed(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(d), sizeof(T),
                                 std::is_same_v<Comp, lm::greater<>> ? 12 : std::is_same_v<Comp, record_less> ? 13 : 11);
      BOOST_TEST_CONTEXT("key " << type_name<T>() << ", comp " << comp_name<Comp>() << ", n " << n << ", dist "
                                << test_support::name(d) << ", seed " << seed) {
        f(n, d, seed);
      }
    }
  }
}

}  // namespace

// Keys only: the same output as lm::serial, bit for bit (records compare every
// field, so a reordering of equal keys fails; floats compare as bits).
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_sort_keys_equals_serial, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    sweep<T, Comp>(keys_million_runs<Comp>, [&](std::int64_t n, distribution d, std::uint64_t seed) {
      const auto input = test_support::generate<T>(n, d, seed, comp);
      auto expected = input;
      lm::merge_sort(lm::serial, expected.begin(), expected.end(), comp);
      for_each_team([&](const auto& policy) {
        auto keys = input;
        lm::merge_sort(policy, keys.begin(), keys.end(), comp);
        check_same(keys, expected, "merge_sort keys");
      });
    });
  });
}

// by_key with the original position as the value (int64 through vector
// iterators; int32 through pointers below 10^6): keys and values equal lm::serial's.
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_sort_by_key_equals_serial, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    sweep<T, Comp>(pairs_million_runs<Comp>, [&](std::int64_t n, distribution d, std::uint64_t seed) {
      const auto input = test_support::generate<T>(n, d, seed, comp);
      std::vector<std::int64_t> positions(input.size());
      std::iota(positions.begin(), positions.end(), std::int64_t{0});
      auto expected_keys = input;
      auto expected_vals = positions;
      lm::merge_sort_by_key(lm::serial, expected_keys.begin(), expected_keys.end(), expected_vals.begin(), comp);
      const std::vector<std::int32_t> expected_vals32(expected_vals.begin(), expected_vals.end());
      for_each_team([&](const auto& policy) {
        auto keys = input;
        auto vals = positions;
        lm::merge_sort_by_key(policy, keys.begin(), keys.end(), vals.begin(), comp);
        check_same(keys, expected_keys, "merge_sort_by_key keys (int64 values)");
        check_same(vals, expected_vals, "merge_sort_by_key int64 values");

        if (n >= million) return;
        keys = input;
        std::vector<std::int32_t> vals32(positions.begin(), positions.end());
        lm::merge_sort_by_key(policy, keys.data(), keys.data() + keys.size(), vals32.data(), comp);
        check_same(keys, expected_keys, "merge_sort_by_key keys (int32 values)");
        check_same(vals32, expected_vals32, "merge_sort_by_key int32 values");
      });
    });
  });
}

// indices into int64 outputs (uint32 for random keys, int16 for few distinct
// ones where the size fits), filled with a sentinel first so that an unwritten
// index fails (n == 1 too).
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_sort_indices_equals_serial, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    sweep<T, Comp>(pairs_million_runs<Comp>, [&](std::int64_t n, distribution d, std::uint64_t seed) {
      const auto input = test_support::generate<T>(n, d, seed, comp);
      auto run = [&](auto index_tag) {
        using I = decltype(index_tag);
        BOOST_TEST_CONTEXT("index type " << type_name<I>()) {
          auto expected_keys = input;
          std::vector<I> expected(input.size(), static_cast<I>(-7));
          lm::merge_sort_indices(lm::serial, expected_keys.begin(), expected_keys.end(), expected.begin(), comp);
          for_each_team([&](const auto& policy) {
            auto keys = input;
            std::vector<I> indices(input.size(), static_cast<I>(-7));
            lm::merge_sort_indices(policy, keys.begin(), keys.end(), indices.begin(), comp);
            check_same(keys, expected_keys, "merge_sort_indices keys");
            check_same(indices, expected, "merge_sort_indices indices");
          });
        }
      };
      run(std::int64_t{});
      if (n < million && d == distribution::random) run(std::uint32_t{});
      if (n <= 32768 && d == distribution::few_distinct) run(std::int16_t{});
    });
  });
}

// Thrust 3.0's host and OpenMP stable_sort with the default comparator put
// negative int keys after the positive ones. Here, spelled out: int32 keys of
// both signs (and the extremes) come out in numeric order, against
// std::stable_sort, for every team size. (The sweeps above use such keys too.)
BOOST_AUTO_TEST_CASE(negative_int_keys_sort_before_positive_ones) {
  std::mt19937_64 rng(2024);
  for (std::int64_t n : {2, 17, 1000, 65537, 300001}) {
    BOOST_TEST_CONTEXT("n " << n << ", seed 2024") {
      std::vector<std::int32_t> input(static_cast<std::size_t>(n));
      for (auto& x : input) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));
      input[0] = std::numeric_limits<std::int32_t>::max();
      input[1] = std::numeric_limits<std::int32_t>::min();
      const auto expected = test_support::reference_sort(input, lm::less<>{});
      BOOST_TEST_REQUIRE(expected.front() < 0);
      std::vector<std::int64_t> positions(input.size());
      std::iota(positions.begin(), positions.end(), std::int64_t{0});
      const auto perm = test_support::reference_permutation(input, lm::less<>{});
      for_each_team([&](const auto& policy) {
        auto keys = input;
        lm::merge_sort(policy, keys.begin(), keys.end());
        check_same(keys, expected, "merge_sort of signed int32 keys, default comparator");
        keys = input;
        auto vals = positions;
        lm::merge_sort_by_key(policy, keys.begin(), keys.end(), vals.begin());
        check_same(vals, perm, "merge_sort_by_key of signed int32 keys, default comparator");
      });
    }
  }
}

// NaN keys under lm::less: after every number and equivalent, so the team's
// stable sort gives the serial permutation (test_merge_sort checks that one
// against std::stable_sort).
BOOST_AUTO_TEST_CASE(nan_keys_sort_after_every_number) {
  std::mt19937_64 rng(2026);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> input(200001);
  for (auto& x : input) x = rng() % 7 == 0 ? nan : static_cast<float>(rng() % 1001);
  std::vector<std::int64_t> positions(input.size());
  std::iota(positions.begin(), positions.end(), std::int64_t{0});
  const auto perm = test_support::reference_permutation(input, lm::less<>{});
  for_each_team([&](const auto& policy) {
    auto keys = input;
    auto vals = positions;
    lm::merge_sort_by_key(policy, keys.begin(), keys.end(), vals.begin());
    check_same(vals, perm, "merge_sort_by_key of float keys with NaNs");
  });
}

// Custom lambdas with heavy ties, where only a stable sort gives the serial
// result: int keys ordered by their low 4 bits, and an indirect sort of
// positions by the keys they point to (a lambda capturing the key vector).
BOOST_AUTO_TEST_CASE(custom_lambda_comparators) {
  auto by_low_bits = [](std::int32_t x, std::int32_t y) { return (x & 15) < (y & 15); };
  for (auto n : test_support::standard_sizes()) {
    const auto seed = mix_seed(static_cast<std::uint64_t>(n), 199);
    BOOST_TEST_CONTEXT("n " << n << ", seed " << seed) {
      const auto input = test_support::generate<std::int32_t>(n, distribution::random, seed);
      auto expected = input;
      lm::merge_sort(lm::serial, expected.begin(), expected.end(), by_low_bits);
      std::vector<std::int32_t> positions(input.size());
      std::iota(positions.begin(), positions.end(), 0);
      auto indirect = [&input](std::int32_t i, std::int32_t j) {
        return input[static_cast<std::size_t>(j)] < input[static_cast<std::size_t>(i)];
      };
      auto expected_positions = positions;
      lm::merge_sort(lm::serial, expected_positions.begin(), expected_positions.end(), indirect);
      for_each_team([&](const auto& policy) {
        auto keys = input;
        lm::merge_sort(policy, keys.begin(), keys.end(), by_low_bits);
        check_same(keys, expected, "merge_sort, low-bits lambda");
        auto p = positions;
        lm::merge_sort(policy, p.begin(), p.end(), indirect);
        check_same(p, expected_positions, "merge_sort, indirect lambda");
      });
    }
  }
}

// Iterators other than std::vector's and pointers: std::deque keys and values,
// pointer index outputs, and bounds-checked iterators (any access outside the
// ranges throws, and the exception would reach the test).
BOOST_AUTO_TEST_CASE(deque_and_checked_iterators) {
  for (std::int64_t n : {0, 1, 33, 4097, 65537}) {
    for (auto d : {distribution::random, distribution::few_distinct}) {
      const auto seed = mix_seed(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(d), 105);
      BOOST_TEST_CONTEXT("n " << n << ", dist " << test_support::name(d) << ", seed " << seed) {
        const auto input = test_support::generate<record>(n, d, seed);
        auto expected_keys = input;
        std::vector<std::int64_t> expected_vals(input.size());
        std::iota(expected_vals.begin(), expected_vals.end(), std::int64_t{0});
        lm::merge_sort_by_key(lm::serial, expected_keys.begin(), expected_keys.end(), expected_vals.begin(),
                              record_less{});
        for_each_team([&](const auto& policy) {
          std::deque<record> keys(input.begin(), input.end());
          std::deque<std::int64_t> vals(input.size());
          std::iota(vals.begin(), vals.end(), std::int64_t{0});
          lm::merge_sort_by_key(policy, keys.begin(), keys.end(), vals.begin(), record_less{});
          check_same(std::vector<record>(keys.begin(), keys.end()), expected_keys, "merge_sort_by_key keys (deque)");
          check_same(std::vector<std::int64_t>(vals.begin(), vals.end()), expected_vals,
                     "merge_sort_by_key values (deque)");

          keys.assign(input.begin(), input.end());
          std::vector<std::uint32_t> indices(input.size(), 0xdeadbeefu);
          lm::merge_sort_indices(policy, keys.begin(), keys.end(), indices.data(), record_less{});
          check_same(indices, std::vector<std::uint32_t>(expected_vals.begin(), expected_vals.end()),
                     "merge_sort_indices (deque keys, pointer indices)");

          auto checked = input;
          try {
            auto [first, last] = cpu_test::checked_range(checked);
            lm::merge_sort(policy, first, last, record_less{});
          } catch (const cpu_test::out_of_range_access& e) {
            BOOST_ERROR("merge_sort accessed outside the range: " << e.what());
          }
          check_same(checked, expected_keys, "merge_sort (checked iterators)");
        });
      }
    }
  }
}

// Keys and values that are not trivially copyable (std::string): moved, not
// copied, through the scratch buffers, and stable.
BOOST_AUTO_TEST_CASE(string_keys_and_values) {
  std::mt19937_64 rng(4243);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{1000}, std::size_t{40000}}) {
    BOOST_TEST_CONTEXT("n " << n << ", seed 4243") {
      std::vector<std::string> input(n);
      for (auto& s : input) s = std::string(1 + rng() % 3, static_cast<char>('a' + rng() % 4)) + "-long-enough-to-allocate";
      auto expected = input;
      lm::merge_sort(lm::serial, expected.begin(), expected.end());
      std::vector<int> ikeys(n);
      for (auto& k : ikeys) k = static_cast<int>(rng() % 7);
      std::vector<std::string> vals(n);
      for (std::size_t i = 0; i < n; ++i) vals[i] = "value-" + std::to_string(i) + "-long-enough-to-allocate";
      auto expected_ikeys = ikeys;
      auto expected_vals = vals;
      lm::merge_sort_by_key(lm::serial, expected_ikeys.begin(), expected_ikeys.end(), expected_vals.begin());
      for_each_team([&](const auto& policy) {
        auto keys = input;
        lm::merge_sort(policy, keys.begin(), keys.end());
        check_same(keys, expected, "merge_sort std::string keys");
        auto k = ikeys;
        auto v = vals;
        lm::merge_sort_by_key(policy, k.begin(), k.end(), v.begin());
        check_same(k, expected_ikeys, "merge_sort_by_key int keys (string values)");
        check_same(v, expected_vals, "merge_sort_by_key std::string values");
      });
    }
  }
}

// bool keys and values: bytes in scratch; a std::vector<bool> output (which
// packs bits, so neighbours share a word) is written by one thread.
BOOST_AUTO_TEST_CASE(bool_keys_and_values) {
  std::mt19937_64 rng(12);
  for (std::int64_t n : {0, 1, 2, 17, 1000, 70001}) {
    BOOST_TEST_CONTEXT("n " << n << ", seed 12") {
      std::vector<int> keys(static_cast<std::size_t>(n));
      std::vector<bool> flags(keys.size()), bkeys(keys.size());
      for (std::size_t i = 0; i < keys.size(); ++i) {
        keys[i] = static_cast<int>(rng() % 7);
        flags[i] = (rng() & 1) != 0;
        bkeys[i] = (rng() & 1) != 0;
      }
      auto expected_keys = keys;
      std::deque<bool> expected_flags(flags.begin(), flags.end());
      lm::merge_sort_by_key(lm::serial, expected_keys.begin(), expected_keys.end(), expected_flags.begin());
      std::deque<bool> expected_bkeys(bkeys.begin(), bkeys.end());
      lm::merge_sort(lm::serial, expected_bkeys.begin(), expected_bkeys.end());
      for_each_team([&](const auto& policy) {
        auto k = keys;
        std::deque<bool> f(flags.begin(), flags.end());
        lm::merge_sort_by_key(policy, k.begin(), k.end(), f.begin());
        BOOST_TEST((f == expected_flags), "merge_sort_by_key, std::deque<bool> values");
        k = keys;
        auto packed = flags;
        lm::merge_sort_by_key(policy, k.begin(), k.end(), packed.begin());
        BOOST_TEST(std::equal(packed.begin(), packed.end(), expected_flags.begin(), expected_flags.end()),
                   "merge_sort_by_key, std::vector<bool> values");
        std::unique_ptr<bool[]> raw(new bool[bkeys.size() + 1]);
        std::copy(bkeys.begin(), bkeys.end(), raw.get());
        lm::merge_sort(policy, raw.get(), raw.get() + n);
        BOOST_TEST(std::equal(raw.get(), raw.get() + n, expected_bkeys.begin(), expected_bkeys.end()),
                   "merge_sort, bool keys");
      });
    }
  }
}

// lm::sort and lm::sort_by_key (the OpenMP backend's: its merge sort) equal
// lm::serial's merge sort.
BOOST_AUTO_TEST_CASE_TEMPLATE(sort_equals_serial, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    for (std::int64_t n : {0, 1, 1000, 100003}) {
      const auto input = test_support::generate<T>(n, distribution::random, 9, comp);
      auto expected = input;
      std::vector<std::int64_t> expected_vals(input.size());
      std::iota(expected_vals.begin(), expected_vals.end(), std::int64_t{0});
      lm::merge_sort_by_key(lm::serial, expected.begin(), expected.end(), expected_vals.begin(), comp);
      for_each_team([&](const auto& policy) {
        auto keys = input;
        lm::sort(policy, keys.begin(), keys.end(), comp);
        check_same(keys, expected, "sort keys");
        keys = input;
        std::vector<std::int64_t> vals(input.size());
        std::iota(vals.begin(), vals.end(), std::int64_t{0});
        lm::sort_by_key(policy, keys.begin(), keys.end(), vals.begin(), comp);
        check_same(keys, expected, "sort_by_key keys");
        check_same(vals, expected_vals, "sort_by_key values");
      });
    }
  });
}
