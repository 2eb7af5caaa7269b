// merge_sort, merge_sort_by_key and merge_sort_indices with lm::serial against
// std::stable_sort: every key type, size and distribution, several
// comparators, value and index types, and iterator kinds.
//
// Runtime limit (about 25 s in Release on 2 cores): the 10^6 size runs for
// every key type but not for every (distribution, comparator) pair:
//   keys only:        lm::less<> with every distribution, lm::greater<> with
//                     random and reversed, record_less with random;
//   by_key, indices:  lm::less<> with random and few_distinct, lm::greater<>
//                     with random.
// Every other size runs every distribution with every comparator.
#define BOOST_TEST_MODULE libmerge_cpu_merge_sort
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu_test_helpers.hpp"

namespace lm = libmerge;
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

// The 10^6 combinations that run (see the comment at the top).
template <class Comp>
bool keys_million_runs(distribution d) {
  if (std::is_same_v<Comp, lm::less<>>) return true;
  if (std::is_same_v<Comp, lm::greater<>>) return d == distribution::random || d == distribution::reversed;
  return d == distribution::random;
}
template <class Comp>
bool pairs_million_runs(distribution d) {
  if (std::is_same_v<Comp, lm::less<>>) return d == distribution::random || d == distribution::few_distinct;
  if (std::is_same_v<Comp, lm::greater<>>) return d == distribution::random;
  return false;
}

template <class T, class Comp>
std::uint64_t case_seed(std::int64_t n, distribution d) {
  return mix_seed(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(d), sizeof(T),
                  std::is_same_v<Comp, lm::greater<>> ? 2 : std::is_same_v<Comp, record_less> ? 3 : 1);
}

// keys[perm[i]] for every i: the reference sorted keys from the reference permutation.
template <class T>
std::vector<T> gather(const std::vector<T>& keys, const std::vector<std::int64_t>& perm) {
  std::vector<T> out;
  out.reserve(perm.size());
  for (auto p : perm) out.push_back(keys[static_cast<std::size_t>(p)]);
  return out;
}

template <class V>
std::vector<V> perm_as(const std::vector<std::int64_t>& perm) {
  return std::vector<V>(perm.begin(), perm.end());
}

// Runs f(n, d, seed) for every (size, distribution) of the sweep, inside a
// failure context naming the key type, comparator, size, distribution and seed.
template <class T, class Comp, class F>
void sweep(bool (*million_runs)(distribution), F&& f) {
  for (auto n : test_support::standard_sizes()) {
    for (auto d : test_support::all_distributions) {
      if (n >= million && !million_runs(d)) continue;
      const auto seed = case_seed<T, Comp>(n, d);
      BOOST_TEST_CONTEXT("key " << type_name<T>() << ", comp " << comp_name<Comp>() << ", n " << n << ", dist "
                                << test_support::name(d) << ", seed " << seed) {
        f(n, d, seed);
      }
    }
  }
}

}  // namespace

// Keys only, through std::vector iterators: the result equals std::stable_sort
// bit for bit (records compare all fields, so a reordering of equal keys fails).
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_sort_keys_equals_stable_sort, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    sweep<T, Comp>(keys_million_runs<Comp>, [&](std::int64_t n, distribution d, std::uint64_t seed) {
      auto keys = test_support::generate<T>(n, d, seed, comp);
      const auto expected = test_support::reference_sort(keys, comp);
      lm::merge_sort(lm::serial, keys.begin(), keys.end(), comp);
      check_same(keys, expected, "merge_sort keys");
    });
  });
}

// Keys only, through raw pointers (an empty vector gives null pointers), and
// with a typed comparator lm::less<T>.
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_sort_keys_raw_pointers, T, key_types) {
  for (auto n : test_support::standard_sizes()) {
    if (n >= million) continue;
    for (auto d : test_support::all_distributions) {
      const auto seed = mix_seed(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(d), 77);
      BOOST_TEST_CONTEXT("key " << type_name<T>() << ", n " << n << ", dist " << test_support::name(d) << ", seed "
                                << seed) {
        auto keys = test_support::generate<T>(n, d, seed);
        const auto expected = test_support::reference_sort(keys, lm::less<T>{});
        lm::merge_sort(lm::serial, keys.data(), keys.data() + keys.size(), lm::less<T>{});
        check_same(keys, expected, "merge_sort keys (pointers, lm::less<T>)");
        // the default comparator is lm::less<>: sort a reversed copy again
        auto again = test_support::reference_sort(keys, lm::greater<>{});
        lm::merge_sort(lm::serial, again.data(), again.data() + again.size());
        check_same(again, expected, "merge_sort keys (default comparator)");
      }
    }
  }
}

// by_key with the original position as the value (int64 and int32 values):
// keys equal the stable sort, values equal the stable sorting permutation.
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_sort_by_key_values_follow_the_stable_permutation, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    sweep<T, Comp>(pairs_million_runs<Comp>, [&](std::int64_t n, distribution d, std::uint64_t seed) {
      const auto input = test_support::generate<T>(n, d, seed, comp);
      const auto perm = test_support::reference_permutation(input, comp);
      const auto expected_keys = gather(input, perm);

      auto keys = input;
      std::vector<std::int64_t> vals64(input.size());
      std::iota(vals64.begin(), vals64.end(), std::int64_t{0});
      lm::merge_sort_by_key(lm::serial, keys.begin(), keys.end(), vals64.begin(), comp);
      check_same(keys, expected_keys, "merge_sort_by_key keys (int64 values)");
      check_same(vals64, perm, "merge_sort_by_key int64 values");

      keys = input;
      std::vector<std::int32_t> vals32(input.size());
      std::iota(vals32.begin(), vals32.end(), std::int32_t{0});
      lm::merge_sort_by_key(lm::serial, keys.data(), keys.data() + keys.size(), vals32.data(), comp);
      check_same(keys, expected_keys, "merge_sort_by_key keys (int32 values)");
      check_same(vals32, perm_as<std::int32_t>(perm), "merge_sort_by_key int32 values");
    });
  });
}

// by_key with double values (value = position + 0.25), sizes up to 65537.
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_sort_by_key_double_values, T, key_types) {
  for (auto n : test_support::standard_sizes()) {
    if (n >= million) continue;
    for (auto d : {distribution::random, distribution::few_distinct, distribution::all_equal}) {
      const auto seed = mix_seed(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(d), 55);
      BOOST_TEST_CONTEXT("key " << type_name<T>() << ", n " << n << ", dist " << test_support::name(d) << ", seed "
                                << seed) {
        auto keys = test_support::generate<T>(n, d, seed);
        const auto perm = test_support::reference_permutation(keys, lm::less<>{});
        const auto expected_keys = gather(keys, perm);
        std::vector<double> vals(keys.size()), expected_vals;
        for (std::size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<double>(i) + 0.25;
        for (auto p : perm) expected_vals.push_back(static_cast<double>(p) + 0.25);
        lm::merge_sort_by_key(lm::serial, keys.begin(), keys.end(), vals.begin());
        check_same(keys, expected_keys, "merge_sort_by_key keys (double values)");
        check_same(vals, expected_vals, "merge_sort_by_key double values");
      }
    }
  }
}

// indices: keys sorted in place, indices[i] = original position of the i-th
// sorted key, for int32, uint32 and int64 index outputs (and int16 where the
// size fits). The index outputs start filled with a sentinel, so an index that
// is never written (n == 1 included) fails.
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_sort_indices_equals_reference_permutation, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    using Comp = decltype(comp);
    sweep<T, Comp>(pairs_million_runs<Comp>, [&](std::int64_t n, distribution d, std::uint64_t seed) {
      const auto input = test_support::generate<T>(n, d, seed, comp);
      const auto perm = test_support::reference_permutation(input, comp);
      const auto expected_keys = gather(input, perm);

      auto run = [&](auto index_type_tag) {
        using I = decltype(index_type_tag);
        BOOST_TEST_CONTEXT("index type " << type_name<I>()) {
          auto keys = input;
          std::vector<I> indices(input.size(), static_cast<I>(-7));
          lm::merge_sort_indices(lm::serial, keys.begin(), keys.end(), indices.begin(), comp);
          check_same(keys, expected_keys, "merge_sort_indices keys");
          check_same(indices, perm_as<I>(perm), "merge_sort_indices indices");
        }
      };
      run(std::int32_t{});
      run(std::uint32_t{});
      run(std::int64_t{});
      if (n <= 32768) run(std::int16_t{});
    });
  });
}

// Explicit custom comparators (lambdas) with heavy ties, where only a stable
// sort gives the reference result: int keys ordered by their low 4 bits, and
// an indirect sort of positions by the keys they point to (a stateful lambda).
BOOST_AUTO_TEST_CASE(custom_lambda_comparators) {
  auto by_low_bits = [](std::int32_t x, std::int32_t y) { return (x & 15) < (y & 15); };
  for (auto n : test_support::standard_sizes()) {
    const auto seed = mix_seed(static_cast<std::uint64_t>(n), 99);
    BOOST_TEST_CONTEXT("n " << n << ", seed " << seed) {
      const auto input = test_support::generate<std::int32_t>(n, distribution::random, seed);
      auto keys = input;
      lm::merge_sort(lm::serial, keys.begin(), keys.end(), by_low_bits);
      check_same(keys, test_support::reference_sort(input, by_low_bits), "merge_sort, low-bits lambda");

      keys = input;
      std::vector<std::int64_t> indices(input.size(), -1);
      lm::merge_sort_indices(lm::serial, keys.begin(), keys.end(), indices.begin(), by_low_bits);
      check_same(indices, test_support::reference_permutation(input, by_low_bits),
                 "merge_sort_indices, low-bits lambda");

      // Positions sorted by the key they point to (descending), via a lambda
      // that captures the key vector.
      std::vector<std::int32_t> positions(input.size());
      std::iota(positions.begin(), positions.end(), 0);
      auto expected = positions;
      auto indirect = [&input](std::int32_t i, std::int32_t j) {
        return input[static_cast<std::size_t>(j)] < input[static_cast<std::size_t>(i)];
      };
      std::stable_sort(expected.begin(), expected.end(), indirect);
      lm::merge_sort(lm::serial, positions.begin(), positions.end(), indirect);
      check_same(positions, expected, "merge_sort, indirect lambda");
    }
  }
}

// Iterators other than std::vector's and pointers: std::deque for keys and
// values, and a mix (deque keys, pointer values).
BOOST_AUTO_TEST_CASE(deque_iterators) {
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{33}, std::int64_t{4097}, std::int64_t{65537}}) {
    for (auto d : {distribution::random, distribution::few_distinct}) {
      const auto seed = mix_seed(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(d), 5);
      BOOST_TEST_CONTEXT("n " << n << ", dist " << test_support::name(d) << ", seed " << seed) {
        const auto input = test_support::generate<record>(n, d, seed);
        const auto perm = test_support::reference_permutation(input, record_less{});
        const auto expected_keys = gather(input, perm);

        std::deque<record> keys(input.begin(), input.end());
        lm::merge_sort(lm::serial, keys.begin(), keys.end(), record_less{});
        check_same(std::vector<record>(keys.begin(), keys.end()), expected_keys, "merge_sort (deque)");

        keys.assign(input.begin(), input.end());
        std::deque<std::int64_t> vals(input.size());
        std::iota(vals.begin(), vals.end(), std::int64_t{0});
        lm::merge_sort_by_key(lm::serial, keys.begin(), keys.end(), vals.begin(), record_less{});
        check_same(std::vector<record>(keys.begin(), keys.end()), expected_keys, "merge_sort_by_key keys (deque)");
        check_same(std::vector<std::int64_t>(vals.begin(), vals.end()), perm, "merge_sort_by_key values (deque)");

        keys.assign(input.begin(), input.end());
        std::vector<std::uint32_t> indices(input.size(), 0xdeadbeefu);
        lm::merge_sort_indices(lm::serial, keys.begin(), keys.end(), indices.data(), record_less{});
        check_same(std::vector<record>(keys.begin(), keys.end()), expected_keys, "merge_sort_indices keys (deque)");
        check_same(indices, perm_as<std::uint32_t>(perm), "merge_sort_indices (deque keys, pointer indices)");
      }
    }
  }
}

// Keys and values that are not trivially copyable (std::string): the sort
// moves elements correctly and stays stable.
BOOST_AUTO_TEST_CASE(string_keys_and_values) {
  std::mt19937_64 rng(4242);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{1000}, std::size_t{5000}}) {
    BOOST_TEST_CONTEXT("n " << n << ", seed 4242") {
      std::vector<std::string> input(n);
      for (auto& s : input) s = std::string(1 + rng() % 3, static_cast<char>('a' + rng() % 4));
      auto keys = input;
      lm::merge_sort(lm::serial, keys.begin(), keys.end());
      check_same(keys, test_support::reference_sort(input, lm::less<>{}), "merge_sort std::string keys");

      // int keys with string values: the values follow the stable permutation.
      std::vector<int> ikeys(n);
      for (auto& k : ikeys) k = static_cast<int>(rng() % 7);
      std::vector<std::string> vals(n), expected_vals;
      for (std::size_t i = 0; i < n; ++i) vals[i] = "value-" + std::to_string(i);
      for (auto p : test_support::reference_permutation(ikeys, lm::less<>{})) {
        expected_vals.push_back("value-" + std::to_string(p));
      }
      lm::merge_sort_by_key(lm::serial, ikeys.begin(), ikeys.end(), vals.begin());
      check_same(vals, expected_vals, "merge_sort_by_key std::string values");
      BOOST_TEST(std::is_sorted(ikeys.begin(), ikeys.end()));
    }
  }
}

// bool keys and values: scratch buffers must not be std::vector<bool>.
BOOST_AUTO_TEST_CASE(bool_keys_and_values) {
  std::mt19937_64 rng(11);
  for (std::int64_t n : {0, 1, 2, 17, 1000, 4097}) {
    std::vector<int> keys(static_cast<std::size_t>(n));
    std::deque<bool> flags(keys.size());
    std::unique_ptr<bool[]> bkeys(new bool[keys.size() + 1]);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      keys[i] = static_cast<int>(rng() % 7);
      flags[i] = (rng() & 1) != 0;
      bkeys[i] = (rng() & 1) != 0;
    }
    // by key, bool values: the reference permutation applied to the flags
    const auto perm = test_support::reference_permutation(keys, lm::less<>{});
    std::vector<bool> expected_flags;
    for (auto p : perm) expected_flags.push_back(flags[static_cast<std::size_t>(p)]);
    lm::merge_sort_by_key(lm::serial, keys.begin(), keys.end(), flags.begin());
    BOOST_TEST(std::equal(flags.begin(), flags.end(), expected_flags.begin(), expected_flags.end()));
    // bool keys
    std::vector<bool> expected_keys(bkeys.get(), bkeys.get() + n);
    std::stable_sort(expected_keys.begin(), expected_keys.end());
    lm::merge_sort(lm::serial, bkeys.get(), bkeys.get() + n);
    BOOST_TEST(std::equal(bkeys.get(), bkeys.get() + n, expected_keys.begin(), expected_keys.end()));
  }
}

// NaN keys under lm::less and lm::greater: a NaN orders after every number
// (before, under greater), NaNs are equivalent, so the sort is stable over
// them: the values' permutation is std::stable_sort's with the same
// comparator. (Keys compare through the values: NaN != NaN.)
BOOST_AUTO_TEST_CASE(nan_keys_sort_after_every_number) {
  std::mt19937_64 rng(2025);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::int64_t n : {1, 2, 1000, 65537}) {
    std::vector<double> input(static_cast<std::size_t>(n));
    for (auto& x : input) x = rng() % 5 == 0 ? nan : static_cast<double>(rng() % 101) - 50.0;
    input[0] = nan;
    std::vector<std::int64_t> positions(input.size());
    std::iota(positions.begin(), positions.end(), std::int64_t{0});
    auto run = [&](auto comp, const char* name) {
      auto keys = input;
      auto vals = positions;
      lm::merge_sort_by_key(lm::serial, keys.begin(), keys.end(), vals.begin(), comp);
      check_same(vals, test_support::reference_permutation(input, comp), std::string("NaN keys, ") + name);
      const auto first_nan = std::find_if(keys.begin(), keys.end(), [](double x) { return x != x; });
      const auto numbers = std::count_if(input.begin(), input.end(), [](double x) { return x == x; });
      BOOST_CHECK_MESSAGE(std::string(name) == "greater" || first_nan - keys.begin() == numbers,
                          "n " << n << ": NaNs not after the numbers");
    };
    BOOST_TEST_CONTEXT("n " << n) {
      run(lm::less<>(), "less");
      run(lm::greater<>(), "greater");
    }
  }
}

// lm::sort and lm::sort_by_key (the serial backend's: its merge sort) equal
// std::stable_sort and its permutation, under every comparator.
BOOST_AUTO_TEST_CASE_TEMPLATE(sort_equals_stable_sort, T, key_types) {
  for_each_comparator<T>([](auto comp) {
    for (std::int64_t n : {0, 1, 2, 17, 1000, 65537}) {
      for (auto d : test_support::all_distributions) {
        const auto seed = mix_seed(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(d), 5);
        const auto input = test_support::generate<T>(n, d, seed, comp);
        auto keys = input;
        lm::sort(lm::serial, keys.begin(), keys.end(), comp);
        check_same(keys, test_support::reference_sort(input, comp), "sort keys");
        const auto perm = test_support::reference_permutation(input, comp);
        keys = input;
        std::vector<std::int64_t> vals(input.size());
        std::iota(vals.begin(), vals.end(), std::int64_t{0});
        lm::sort_by_key(lm::serial, keys.begin(), keys.end(), vals.begin(), comp);
        check_same(keys, gather(input, perm), "sort_by_key keys");
        check_same(vals, perm, "sort_by_key values");
      }
    }
  });
}
