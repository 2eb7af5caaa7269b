// Bad and edge-case arguments with lm::serial:
//   - reversed ranges: std::invalid_argument naming the algorithm and the
//     argument pair, nothing written;
//   - index/match/count outputs too narrow for the largest value they could
//     receive: std::invalid_argument naming the output, nothing written; the
//     widest allowed size for each narrow type works and gives right results;
//   - empty ranges: no writes, the documented return values;
//   - outputs that share memory with an input or with each other (pointers
//     and std::vector iterators): std::invalid_argument naming both, nothing
//     written;
//   - unsorted input and comparators that are no strict weak ordering: every
//     call returns, never touches anything outside its ranges (bounds-checked
//     iterators), and merge_sort outputs a permutation of its input.
#define BOOST_TEST_MODULE libmerge_cpu_arguments
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu_test_helpers.hpp"

namespace lm = libmerge;
using cpu_test::check_same;
using cpu_test::checked_iterator;
using cpu_test::checked_range;
using cpu_test::type_name;
using lm::bounds;
using lm::search_type;
using test_support::distribution;

namespace {

// Runs f, which must throw std::invalid_argument whose message contains every
// string of `present` and none of `absent`.
template <class F>
void expect_invalid_argument(F&& f, std::vector<std::string> present, std::vector<std::string> absent = {}) {
  try {
    f();
    BOOST_ERROR("no exception thrown; expected std::invalid_argument naming " << present.back());
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    for (const auto& s : present) BOOST_TEST(what.find(s) != std::string::npos, "message \"" << what << "\" lacks \"" << s << "\"");
    for (const auto& s : absent) BOOST_TEST(what.find(s) == std::string::npos, "message \"" << what << "\" names \"" << s << "\"");
  } catch (const std::exception& e) {
    BOOST_ERROR("wrong exception type: " << e.what());
  }
}

template <class T>
std::vector<T> iota_vector(std::size_t n, T start = T(0)) {
  std::vector<T> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// All elements still equal to the fill value?
template <class T>
bool untouched(const std::vector<T>& v, T fill) {
  return std::all_of(v.begin(), v.end(), [&](const T& x) { return x == fill; });
}

}  // namespace

// ---------------------------------------------------------------------------
// Outputs overlapping inputs or each other: checked in the front-ends, so
// every backend rejects them alike (the GPU's own case: test_cuda_errors).

BOOST_AUTO_TEST_CASE(outputs_overlapping_inputs_are_rejected) {
  std::vector<int> both = iota_vector(3400, 2);
  int* a = both.data();
  int* b = a + 1000;
  int* free_space = a + 1700;  // 1700 ints nobody reads
  const auto before = both;
  expect_invalid_argument([&] { lm::merge(lm::serial, a, a + 1000, b, b + 700, a); },
                          {"libmerge::merge", "out overlaps a_first"});
  expect_invalid_argument([&] { lm::merge(lm::serial, a, a + 1000, b, b + 700, b - 5); }, {"out overlaps"});
  // Through std::vector iterators too.
  expect_invalid_argument(
      [&] { lm::merge(lm::serial, both.begin(), both.begin() + 10, both.begin() + 10, both.begin() + 20, both.begin() + 19); },
      {"out overlaps b_first"});
  expect_invalid_argument(
      [&] { lm::merge_by_key(lm::serial, a, a + 10, b, b + 10, a, b, free_space, free_space + 19); },
      {"libmerge::merge_by_key", "keys_out overlaps vals_out"});
  expect_invalid_argument([&] { lm::merge_sort_by_key(lm::serial, a, a + 1000, a + 999); },
                          {"libmerge::merge_sort_by_key", "keys_first overlaps values_first"});
  expect_invalid_argument([&] { lm::merge_sort_by_key(lm::serial, both.begin(), both.begin() + 10, both.begin()); },
                          {"keys_first overlaps values_first"});
  expect_invalid_argument([&] { lm::merge_sort_indices(lm::serial, a, a + 100, a + 50); },
                          {"libmerge::merge_sort_indices", "keys_first overlaps indices_first"});
  long long* as_long = reinterpret_cast<long long*>(free_space);
  expect_invalid_argument(
      [&] { lm::sorted_search<bounds::lower>(lm::serial, a, a + 1000, b, b + 700, reinterpret_cast<long long*>(a) + 100); },
      {"libmerge::sorted_search", "a_out overlaps a_first"});
  expect_invalid_argument(
      [&] {
        lm::sorted_search<bounds::lower, search_type::index, search_type::index>(lm::serial, a, a + 10, b, b + 10,
                                                                                  as_long, as_long + 5);
      },
      {"a_out overlaps b_out"});
  lm::match_counts* counts_inside = reinterpret_cast<lm::match_counts*>(free_space);
  expect_invalid_argument(
      [&] {
        lm::sorted_search<bounds::lower, search_type::index, search_type::none>(lm::serial, a, a + 10, b, b + 10,
                                                                                 as_long, nullptr, counts_inside);
      },
      {"a_out overlaps counts_out"});
  expect_invalid_argument([&] { lm::sorted_equality_count(lm::serial, a, a + 1000, b, b + 700, a); },
                          {"libmerge::sorted_equality_count", "counts_out overlaps a_first"});
  BOOST_TEST((both == before), "data untouched after the errors");

  // Adjacent ranges, inputs sharing memory, and outputs of the unused side:
  // fine, and right.
  lm::merge(lm::serial, a, a + 500, a, a + 500, free_space);  // A merged with itself
  std::vector<int> want(1000);
  std::merge(before.begin(), before.begin() + 500, before.begin(), before.begin() + 500, want.begin());
  BOOST_TEST(std::equal(want.begin(), want.end(), free_space));
  lm::sorted_search<bounds::lower, search_type::index, search_type::none>(lm::serial, a, a + 10, b, b + 10,
                                                                            as_long, a, counts_inside + 10);
  for (int i = 0; i < 10; ++i) BOOST_TEST(as_long[i] == 0);
}

// ---------------------------------------------------------------------------
// Reversed ranges.

// merge_sort, merge_sort_by_key, merge_sort_indices: a reversed key range
// throws std::invalid_argument naming [first, last) / [keys_first, keys_last);
// keys, values and indices are unchanged.
BOOST_AUTO_TEST_CASE(reversed_ranges_sorts) {
  const auto input = test_support::generate<std::int32_t>(50, distribution::random, 1);
  auto keys = input;
  std::vector<std::int64_t> vals(50, -1), indices(50, -1);
  int* p = keys.data();

  expect_invalid_argument([&] { lm::merge_sort(lm::serial, p + 10, p + 3); },
                          {"libmerge::merge_sort", "[first, last)"});
  expect_invalid_argument([&] { lm::merge_sort(lm::serial, keys.end(), keys.begin(), lm::greater<>{}); },
                          {"libmerge::merge_sort", "[first, last)"});
  expect_invalid_argument([&] { lm::merge_sort_by_key(lm::serial, p + 1, p, vals.begin()); },
                          {"libmerge::merge_sort_by_key", "keys_first", "keys_last"});
  expect_invalid_argument([&] { lm::merge_sort_indices(lm::serial, p + 50, p, indices.data()); },
                          {"libmerge::merge_sort_indices", "keys_first", "keys_last"});
  BOOST_TEST((keys == input), "keys changed by a call that threw");
  BOOST_TEST(untouched(vals, std::int64_t{-1}));
  BOOST_TEST(untouched(indices, std::int64_t{-1}));
}

// merge and merge_by_key: a reversed A or B throws naming that pair (and not
// the other); the outputs are untouched.
BOOST_AUTO_TEST_CASE(reversed_ranges_merge) {
  const auto a = test_support::generate_sorted<std::int32_t>(40, distribution::random, 2);
  const auto b = test_support::generate_sorted<std::int32_t>(30, distribution::random, 3);
  const auto av = iota_vector<std::int32_t>(40), bv = iota_vector<std::int32_t>(30, 40);
  std::vector<std::int32_t> out(70, -1), vals_out(70, -1);
  const int* pa = a.data();
  const int* pb = b.data();

  expect_invalid_argument([&] { lm::merge(lm::serial, pa + 40, pa, pb, pb + 30, out.begin()); },
                          {"libmerge::merge", "[a_first, a_last)"}, {"b_first"});
  expect_invalid_argument([&] { lm::merge(lm::serial, pa, pa + 40, pb + 2, pb + 1, out.begin()); },
                          {"libmerge::merge", "[b_first, b_last)"}, {"a_first"});
  expect_invalid_argument([&] { lm::merge(lm::serial, a.end(), a.begin(), b.end(), b.begin(), out.data()); },
                          {"libmerge::merge", "reversed range"});
  expect_invalid_argument(
      [&] {
        lm::merge_by_key(lm::serial, pa + 40, pa, pb, pb + 30, av.begin(), bv.begin(), out.begin(),
                         vals_out.begin());
      },
      {"libmerge::merge_by_key", "[a_keys_first, a_keys_last)"}, {"b_keys"});
  expect_invalid_argument(
      [&] {
        lm::merge_by_key(lm::serial, pa, pa + 40, pb + 30, pb, av.begin(), bv.begin(), out.begin(),
                         vals_out.begin());
      },
      {"libmerge::merge_by_key", "[b_keys_first, b_keys_last)"}, {"a_keys"});
  BOOST_TEST(untouched(out, -1));
  BOOST_TEST(untouched(vals_out, -1));
}

// sorted_search (general and simple form) and sorted_equality_count: a
// reversed A or B throws naming that pair; outputs untouched.
BOOST_AUTO_TEST_CASE(reversed_ranges_search) {
  const auto a = test_support::generate_sorted<std::int32_t>(40, distribution::few_distinct, 4);
  const auto b = test_support::generate_sorted<std::int32_t>(30, distribution::few_distinct, 5);
  std::vector<std::int32_t> a_out(40, -1), b_out(30, -1);
  const int* pa = a.data();
  const int* pb = b.data();

  expect_invalid_argument(
      [&] {
        lm::sorted_search<bounds::lower, search_type::index_match, search_type::index_match>(
            lm::serial, pa + 40, pa, pb, pb + 30, a_out.begin(), b_out.begin());
      },
      {"libmerge::sorted_search", "[a_first, a_last)"}, {"b_first"});
  expect_invalid_argument(
      [&] {
        lm::sorted_search<bounds::upper, search_type::match, search_type::none>(lm::serial, pa, pa + 40, pb + 30, pb,
                                                                               a_out.begin(), nullptr);
      },
      {"libmerge::sorted_search", "[b_first, b_last)"}, {"a_first"});
  expect_invalid_argument(
      [&] { lm::sorted_search<bounds::lower>(lm::serial, pa + 1, pa, pb, pb + 30, a_out.begin()); },
      {"libmerge::sorted_search", "[a_first, a_last)"});
  expect_invalid_argument(
      [&] { lm::sorted_search<bounds::upper>(lm::serial, a.begin(), a.end(), b.end(), b.begin(), a_out.begin()); },
      {"libmerge::sorted_search", "[b_first, b_last)"});
  expect_invalid_argument(
      [&] { lm::sorted_equality_count(lm::serial, pa + 40, pa, pb, pb + 30, a_out.begin()); },
      {"libmerge::sorted_equality_count", "[a_first, a_last)"}, {"b_first"});
  expect_invalid_argument(
      [&] { lm::sorted_equality_count(lm::serial, pa, pa + 40, pb + 30, pb, a_out.begin()); },
      {"libmerge::sorted_equality_count", "[b_first, b_last)"}, {"a_first"});
  BOOST_TEST(untouched(a_out, -1));
  BOOST_TEST(untouched(b_out, -1));
}

// ---------------------------------------------------------------------------
// Too-narrow outputs.

// merge_sort_indices: the index type must hold n - 1. int8 indices for 300
// keys throw (naming indices_first) before anything is written; at each narrow
// type's limit (int8: 128 keys, uint8: 256, int16: 32768, uint16: 65536) the
// call works and one more key throws.
BOOST_AUTO_TEST_CASE(narrow_index_types_merge_sort_indices) {
  {
    const auto input = test_support::generate<std::int32_t>(300, distribution::random, 6);
    auto keys = input;
    std::vector<std::int8_t> indices(300, std::int8_t{-1});
    expect_invalid_argument([&] { lm::merge_sort_indices(lm::serial, keys.begin(), keys.end(), indices.begin()); },
                            {"libmerge::merge_sort_indices", "indices_first", "299"});
    BOOST_TEST((keys == input), "keys changed by a call that threw");
    BOOST_TEST(untouched(indices, std::int8_t{-1}));
  }
  auto limit_case = [](auto index_tag, std::int64_t largest_ok) {
    using I = decltype(index_tag);
    BOOST_TEST_CONTEXT("index type " << type_name<I>() << ", n " << largest_ok << " and " << largest_ok + 1) {
      const auto input = test_support::generate<std::int16_t>(largest_ok + 1, distribution::few_distinct, 7);
      auto keys = input;
      std::vector<I> indices(input.size(), I(0));
      lm::merge_sort_indices(lm::serial, keys.begin(), keys.end(), indices.begin());
      const auto perm = test_support::reference_permutation(input, lm::less<>{});
      check_same(indices, std::vector<I>(perm.begin(), perm.end()), "indices at the type's limit");

      auto more = test_support::generate<std::int16_t>(largest_ok + 2, distribution::few_distinct, 8);
      const auto more_input = more;
      std::vector<I> more_indices(more.size(), I(0));
      expect_invalid_argument(
          [&] { lm::merge_sort_indices(lm::serial, more.begin(), more.end(), more_indices.begin()); },
          {"indices_first", std::to_string(largest_ok + 1)});
      BOOST_TEST((more == more_input));
      BOOST_TEST(untouched(more_indices, I(0)));
    }
  };
  limit_case(std::int8_t{}, 127);
  limit_case(std::uint8_t{}, 255);
  limit_case(std::int16_t{}, 32767);
  limit_case(std::uint16_t{}, 65535);
}

namespace {

// sorted_search with a_out of type Out and search type TA, B absent from the
// output side (none); |B| = nb. Throws or not as `ok` says; when it works, the
// bounds are checked against std::lower_bound.
template <search_type TA, class Out>
void search_a_side_limit(std::int64_t nb, bool ok) {
  BOOST_TEST_CONTEXT("a_out " << type_name<Out>() << ", |B| " << nb << ", expect " << (ok ? "success" : "throw")) {
    // B: 0, 1, ..., nb - 1; A: needles every nb / 4 from below B to beyond it,
    // so some fall between B's elements (no match) and the largest bound nb occurs
    const auto b = iota_vector<std::int64_t>(static_cast<std::size_t>(nb));
    std::vector<std::int64_t> a;
    for (std::int64_t x = -5; x < nb + 7; x += nb / 4) a.push_back(x);
    a.push_back(nb + 7);
    std::vector<Out> a_out(a.size(), Out(3));
    auto call = [&] {
      return lm::sorted_search<bounds::lower, TA, search_type::none>(lm::serial, a.begin(), a.end(), b.begin(),
                                                                    b.end(), a_out.begin(), nullptr);
    };
    if (!ok) {
      expect_invalid_argument(call, {"libmerge::sorted_search", "a_out", std::to_string(nb)}, {"b_out"});
      BOOST_TEST(untouched(a_out, Out(3)));
      return;
    }
    call();
    const auto lb = test_support::reference_bounds(a, b, false, lm::less<>{});
    const auto match = test_support::reference_matches(a, b, lm::less<>{});
    for (std::size_t i = 0; i < a.size(); ++i) {
      if constexpr (TA == search_type::index) {
        BOOST_TEST(static_cast<std::int64_t>(a_out[i]) == lb[i]);
      } else if constexpr (TA == search_type::match) {
        BOOST_TEST(static_cast<int>(a_out[i]) == (match[i] ? 1 : 0));
      } else {
        const auto d = cpu_test::decode_index_match(a_out[i]);
        BOOST_TEST(d.bound == static_cast<std::uint64_t>(lb[i]));
        BOOST_TEST(d.match == match[i]);
      }
    }
  }
}

}  // namespace

// sorted_search: an index output must hold the other side's length, an
// index_match output that plus the flag bit (so half the range), a match
// output only 1. Checked at each narrow type's limit and one past it.
BOOST_AUTO_TEST_CASE(narrow_output_types_sorted_search) {
  search_a_side_limit<search_type::index, std::int8_t>(127, true);
  search_a_side_limit<search_type::index, std::int8_t>(128, false);
  search_a_side_limit<search_type::index, std::uint8_t>(255, true);
  search_a_side_limit<search_type::index, std::uint8_t>(256, false);
  search_a_side_limit<search_type::index_match, std::int8_t>(127, true);
  search_a_side_limit<search_type::index_match, std::int8_t>(128, false);
  search_a_side_limit<search_type::index_match, std::uint8_t>(127, true);
  search_a_side_limit<search_type::index_match, std::uint8_t>(128, false);
  search_a_side_limit<search_type::index, std::int16_t>(32767, true);
  search_a_side_limit<search_type::index, std::int16_t>(32768, false);
  search_a_side_limit<search_type::index_match, std::uint16_t>(32767, true);
  search_a_side_limit<search_type::index_match, std::uint16_t>(32768, false);
  search_a_side_limit<search_type::match, std::int8_t>(100000, true);
  search_a_side_limit<search_type::match, std::uint8_t>(100000, true);
}

// The width each output needs comes from the other side's length: with
// |A| = 1000 and |B| = 100, an int8 index a_out is fine but an int8 b_out is
// not; the error names b_out and a_out is not written either. A narrow output
// whose type is none is never checked (nor written). The simple form checks
// its a_out too.
BOOST_AUTO_TEST_CASE(narrow_output_uses_the_other_sides_length) {
  const auto a = test_support::generate_sorted<std::int32_t>(1000, distribution::random, 9);
  const auto b = test_support::generate_sorted<std::int32_t>(100, distribution::random, 10);
  std::vector<std::int8_t> a_out(1000, std::int8_t{-2}), b_out(100, std::int8_t{-2});
  expect_invalid_argument(
      [&] {
        lm::sorted_search<bounds::lower, search_type::index, search_type::index>(
            lm::serial, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin());
      },
      {"libmerge::sorted_search", "b_out", "1000"}, {"a_out"});
  BOOST_TEST(untouched(a_out, std::int8_t{-2}));
  BOOST_TEST(untouched(b_out, std::int8_t{-2}));

  // B writes nothing: its int8 output is not checked and stays untouched
  lm::sorted_search<bounds::lower, search_type::index, search_type::none>(lm::serial, a.begin(), a.end(), b.begin(),
                                                                         b.end(), a_out.begin(), b_out.begin());
  const auto lb = test_support::reference_bounds(a, b, false, lm::less<>{});
  check_same(a_out, std::vector<std::int8_t>(lb.begin(), lb.end()), "int8 a_out with |B| = 100");
  BOOST_TEST(untouched(b_out, std::int8_t{-2}));

  // the simple form: int8 a_out with |B| = 1000
  std::vector<std::int8_t> b_side(100, std::int8_t{-2});
  expect_invalid_argument(
      [&] { lm::sorted_search<bounds::upper>(lm::serial, b.begin(), b.end(), a.begin(), a.end(), b_side.begin()); },
      {"libmerge::sorted_search", "a_out", "1000"});
  BOOST_TEST(untouched(b_side, std::int8_t{-2}));
}

// sorted_equality_count: the count type must hold |B| (int8: 127, uint8: 255).
BOOST_AUTO_TEST_CASE(narrow_count_types_sorted_equality_count) {
  for (std::int64_t nb : {127, 128, 255, 256}) {
    BOOST_TEST_CONTEXT("|B| " << nb) {
      const std::vector<std::int32_t> b(static_cast<std::size_t>(nb), 7);  // all equal: the count is |B|
      const std::vector<std::int32_t> a = {3, 7, 7, 9};
      const std::vector<std::int64_t> expected = {0, nb, nb, 0};
      std::vector<std::int8_t> c8(4, std::int8_t{-1});
      std::vector<std::uint8_t> cu8(4, std::uint8_t{200});
      if (nb <= 127) {
        lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), c8.begin());
        check_same(c8, std::vector<std::int8_t>(expected.begin(), expected.end()), "int8 counts");
      } else {
        expect_invalid_argument(
            [&] { lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), c8.begin()); },
            {"libmerge::sorted_equality_count", "counts_out", std::to_string(nb)});
        BOOST_TEST(untouched(c8, std::int8_t{-1}));
      }
      if (nb <= 255) {
        lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), cu8.begin());
        check_same(cu8, std::vector<std::uint8_t>(expected.begin(), expected.end()), "uint8 counts");
      } else {
        expect_invalid_argument(
            [&] { lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), cu8.begin()); },
            {"libmerge::sorted_equality_count", "counts_out", std::to_string(nb)});
        BOOST_TEST(untouched(cu8, std::uint8_t{200}));
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Empty ranges.

// A null pointer the compiler cannot see as a constant. With a literal
// nullptr, g++ 12 -O3 reports -Wnonnull inside the (unreachable) scratch-copy
// code of the serial merge_sort, which -Werror turns into a build failure.
template <class T>
T* runtime_null() {
  static T* volatile p = nullptr;
  return p;
}

// Sorts of empty ranges (empty vectors, null pointers, an empty range inside
// a buffer) do nothing; merge_sort_indices writes no index.
BOOST_AUTO_TEST_CASE(empty_ranges_sorts) {
  std::vector<double> none;
  lm::merge_sort(lm::serial, none.begin(), none.end());
  lm::merge_sort(lm::serial, runtime_null<double>(), runtime_null<double>(), lm::greater<>{});
  std::vector<double> buffer = {3, 2, 1};
  std::vector<std::int32_t> vals = {7, 8, 9};
  lm::merge_sort(lm::serial, buffer.data() + 1, buffer.data() + 1);
  lm::merge_sort_by_key(lm::serial, buffer.data() + 1, buffer.data() + 1, vals.data());
  lm::merge_sort_indices(lm::serial, buffer.data() + 1, buffer.data() + 1, vals.data());
  lm::merge_sort_indices(lm::serial, runtime_null<int>(), runtime_null<int>(), runtime_null<std::int32_t>());
  BOOST_TEST((buffer == std::vector<double>{3, 2, 1}));
  BOOST_TEST((vals == std::vector<std::int32_t>{7, 8, 9}));
}

// merge of two empty ranges returns out unchanged (also a null out); with one
// side empty the output is a copy of the other; merge_by_key likewise.
BOOST_AUTO_TEST_CASE(empty_ranges_merge) {
  const std::vector<std::int32_t> empty, x = {1, 4, 4, 9};
  const std::vector<std::int32_t> xv = {10, 11, 12, 13};
  std::int32_t* null_out = nullptr;
  BOOST_TEST(lm::merge(lm::serial, empty.begin(), empty.end(), empty.begin(), empty.end(), null_out) == null_out);
  const auto kv_null = lm::merge_by_key(lm::serial, empty.begin(), empty.end(), empty.begin(), empty.end(),
                                        empty.begin(), empty.begin(), null_out, static_cast<double*>(nullptr));
  BOOST_TEST(kv_null.first == null_out);
  BOOST_TEST(kv_null.second == static_cast<double*>(nullptr));

  for (int side = 0; side < 2; ++side) {
    BOOST_TEST_CONTEXT("empty side " << (side == 0 ? "A" : "B")) {
      const auto& a = side == 0 ? empty : x;
      const auto& b = side == 0 ? x : empty;
      std::vector<std::int32_t> out(5, -1), vals(5, -1);
      auto end = lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), out.begin());
      BOOST_TEST((end == out.begin() + 4));
      BOOST_TEST((out == std::vector<std::int32_t>{1, 4, 4, 9, -1}));
      out.assign(5, -1);
      auto [k_end, v_end] =
          lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), side == 0 ? empty.begin() : xv.begin(),
                           side == 0 ? xv.begin() : empty.begin(), out.begin(), vals.begin());
      BOOST_TEST((k_end == out.begin() + 4));
      BOOST_TEST((v_end == vals.begin() + 4));
      BOOST_TEST((out == std::vector<std::int32_t>{1, 4, 4, 9, -1}));
      BOOST_TEST((vals == std::vector<std::int32_t>{10, 11, 12, 13, -1}));
    }
  }
}

// sorted_search: both sides empty returns {0, 0} and writes nothing (null
// outputs are fine); with A empty, B gets bound 0 and no match; with B empty,
// A gets bound 0 and no match. The simple form returns a_out + |A|.
// sorted_equality_count: empty A returns counts_out, empty B counts 0.
// The counts form: a null counts_out is refused before anything is written;
// empty inputs still write zero counts.
BOOST_AUTO_TEST_CASE(search_counts_out) {
  const std::vector<std::int32_t> a = {1, 4, 4, 9}, b = {4, 9, 10}, empty;
  std::vector<std::int32_t> a_out(4, -1);
  expect_invalid_argument(
      [&] {
        lm::sorted_search<bounds::lower, search_type::index_match, search_type::none>(
            lm::serial, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), nullptr,
            static_cast<lm::match_counts*>(nullptr));
      },
      {"libmerge::sorted_search", "counts_out"});
  BOOST_TEST(untouched(a_out, -1));
  lm::match_counts m{-1, -1};
  lm::sorted_search<bounds::lower, search_type::match, search_type::none>(lm::serial, empty.begin(), empty.end(),
                                                                          empty.begin(), empty.end(), a_out.begin(),
                                                                          nullptr, &m);
  BOOST_TEST(m.a == 0);
  BOOST_TEST(m.b == 0);
  lm::sorted_search<bounds::lower, search_type::match, search_type::none>(lm::serial, a.begin(), a.end(), b.begin(),
                                                                          b.end(), a_out.begin(), nullptr, &m);
  BOOST_TEST(m.a == 3);  // 4, 4 and 9 are in B
  BOOST_TEST(m.b == 0);
}

BOOST_AUTO_TEST_CASE(empty_ranges_search) {
  const std::vector<std::int32_t> empty, x = {1, 4, 4, 9};
  std::int32_t* null32 = nullptr;
  std::int64_t* null64 = nullptr;
  auto m = lm::sorted_search<bounds::lower, search_type::index_match, search_type::match>(
      lm::serial, empty.begin(), empty.end(), empty.begin(), empty.end(), null32, null64);
  BOOST_TEST(m.a == 0);
  BOOST_TEST(m.b == 0);
  BOOST_TEST(lm::sorted_search<bounds::upper>(lm::serial, empty.begin(), empty.end(), x.begin(), x.end(), null32) ==
             null32);

  for (auto bnd : {bounds::lower, bounds::upper}) {
    BOOST_TEST_CONTEXT("bounds " << (bnd == bounds::lower ? "lower" : "upper")) {
      std::vector<std::int32_t> a_out(4, -1), b_out(4, -1);
      auto search = [&](const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
        return bnd == bounds::lower
                   ? lm::sorted_search<bounds::lower, search_type::index_match, search_type::index_match>(
                         lm::serial, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin())
                   : lm::sorted_search<bounds::upper, search_type::index_match, search_type::index_match>(
                         lm::serial, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin());
      };
      m = search(empty, x);  // A empty
      BOOST_TEST(m.a == 0);
      BOOST_TEST(m.b == 0);
      BOOST_TEST(untouched(a_out, -1));
      BOOST_TEST((b_out == std::vector<std::int32_t>{0, 0, 0, 0}));
      b_out.assign(4, -1);
      m = search(x, empty);  // B empty
      BOOST_TEST(m.a == 0);
      BOOST_TEST(m.b == 0);
      BOOST_TEST((a_out == std::vector<std::int32_t>{0, 0, 0, 0}));
      BOOST_TEST(untouched(b_out, -1));
    }
  }

  std::vector<std::int64_t> counts(4, -1);
  BOOST_TEST((lm::sorted_equality_count(lm::serial, empty.begin(), empty.end(), x.begin(), x.end(),
                                        counts.begin()) == counts.begin()));
  BOOST_TEST(untouched(counts, std::int64_t{-1}));
  BOOST_TEST((lm::sorted_equality_count(lm::serial, x.begin(), x.end(), empty.begin(), empty.end(),
                                        counts.begin()) == counts.end()));
  BOOST_TEST((counts == std::vector<std::int64_t>{0, 0, 0, 0}));
  BOOST_TEST(lm::sorted_equality_count(lm::serial, empty.begin(), empty.end(), empty.begin(), empty.end(), null64) ==
             null64);
}

// ---------------------------------------------------------------------------
// Unsorted input and bad comparators.

namespace {

struct comparator_budget_exceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Comparators that are no strict weak ordering. Each call is counted; past
// `budget` calls the comparator throws, which turns a hang into a failure.
// The budget is far above what any sensible O(n log n) sort or O(n) merge or
// search needs.
struct bad_comparator {
  enum kind { less_equal, random, always_true, always_false } k;
  std::shared_ptr<std::mt19937_64> rng;
  std::shared_ptr<std::int64_t> calls;
  std::int64_t budget;

  bad_comparator(kind kk, std::uint64_t seed, std::int64_t n)
      : k(kk), rng(std::make_shared<std::mt19937_64>(seed)), calls(std::make_shared<std::int64_t>(0)),
        budget(64 * (n + 16) * (static_cast<std::int64_t>(std::log2(static_cast<double>(n) + 2)) + 2)) {}

  bool operator()(std::int32_t x, std::int32_t y) const {
    if (++*calls > budget) throw comparator_budget_exceeded("comparator called more than " + std::to_string(budget) + " times");
    switch (k) {
      case less_equal: return x <= y;
      case random: return ((*rng)() & 1) != 0;
      case always_true: return true;
      case always_false: return false;
    }
    return false;
  }
};

const char* name(bad_comparator::kind k) {
  switch (k) {
    case bad_comparator::less_equal: return "<=";
    case bad_comparator::random: return "random";
    case bad_comparator::always_true: return "always true";
    case bad_comparator::always_false: return "always false";
  }
  return "?";
}

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

const bad_comparator::kind bad_kinds[] = {bad_comparator::less_equal, bad_comparator::random,
                                          bad_comparator::always_true, bad_comparator::always_false};
const std::int64_t bad_sizes[] = {0, 1, 2, 15, 16, 17, 100, 1000, 4097};

}  // namespace

// merge_sort / by_key / indices with bad comparators, through bounds-checked
// iterators: they return, stay in range, and the keys end up a permutation of
// the input (values and indices a permutation of 0 .. n-1).
BOOST_AUTO_TEST_CASE(bad_comparators_sorts) {
  for (auto kind : bad_kinds) {
    for (auto n : bad_sizes) {
      const auto seed = cpu_test::mix_seed(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(kind), 21);
      BOOST_TEST_CONTEXT("comparator " << name(kind) << ", n " << n << ", seed " << seed) {
        const auto input = test_support::generate<std::int32_t>(n, distribution::few_distinct, seed);
        const auto identity = iota_vector<std::int64_t>(static_cast<std::size_t>(n));

        auto keys = input;
        const auto first = checked_range(keys).first;
        const auto last = checked_range(keys).second;
        expect_returns_in_range([&] { lm::merge_sort(lm::serial, first, last, bad_comparator(kind, seed, n)); });
        BOOST_TEST((sorted_copy(keys) == sorted_copy(input)), "merge_sort output is not a permutation of its input");

        keys = input;
        auto vals = identity;
        const auto vfirst = checked_range(vals).first;
        const auto vlast = checked_range(vals).second;
        expect_returns_in_range(
            [&] { lm::merge_sort_by_key(lm::serial, first, last, vfirst, bad_comparator(kind, seed, n)); });
        BOOST_TEST((sorted_copy(keys) == sorted_copy(input)), "merge_sort_by_key keys not a permutation");
        BOOST_TEST((sorted_copy(vals) == identity), "merge_sort_by_key values not a permutation");

        keys = input;
        std::vector<std::int64_t> indices(static_cast<std::size_t>(n), -1);
        const auto ifirst = checked_range(indices).first;
        const auto ilast = checked_range(indices).second;
        expect_returns_in_range(
            [&] { lm::merge_sort_indices(lm::serial, first, last, ifirst, bad_comparator(kind, seed, n)); });
        BOOST_TEST((sorted_copy(keys) == sorted_copy(input)), "merge_sort_indices keys not a permutation");
        BOOST_TEST((sorted_copy(indices) == identity), "merge_sort_indices indices not a permutation of 0..n-1");
        (void)vlast;
        (void)ilast;
      }
    }
  }
}

// merge / merge_by_key on unsorted inputs with good and bad comparators: they
// return the documented end iterators and stay inside every range.
BOOST_AUTO_TEST_CASE(unsorted_input_and_bad_comparators_merge) {
  for (auto kind : bad_kinds) {
    for (auto na : bad_sizes) {
      for (std::int64_t nb : {0, 3, 1000}) {
        const auto seed = cpu_test::mix_seed(static_cast<std::uint64_t>(na), static_cast<std::uint64_t>(nb),
                                             static_cast<std::uint64_t>(kind), 22);
        BOOST_TEST_CONTEXT("comparator " << name(kind) << ", |A| " << na << ", |B| " << nb << ", seed " << seed) {
          auto a = test_support::generate<std::int32_t>(na, distribution::few_distinct, seed);      // unsorted
          auto b = test_support::generate<std::int32_t>(nb, distribution::random, seed + 1);        // unsorted
          auto av = iota_vector<std::int32_t>(a.size()), bv = iota_vector<std::int32_t>(b.size());
          const auto n = static_cast<std::ptrdiff_t>(a.size() + b.size());
          std::vector<std::int32_t> out(static_cast<std::size_t>(n)), vals_out(static_cast<std::size_t>(n));
          const auto a_first = checked_range(a).first;
        const auto a_last = checked_range(a).second;
          const auto b_first = checked_range(b).first;
        const auto b_last = checked_range(b).second;
          const auto o_first = checked_range(out).first;
        const auto o_last = checked_range(out).second;
          const auto av_first = checked_range(av).first;
        const auto av_last = checked_range(av).second;
          const auto bv_first = checked_range(bv).first;
        const auto bv_last = checked_range(bv).second;
          const auto vo_first = checked_range(vals_out).first;
        const auto vo_last = checked_range(vals_out).second;
          expect_returns_in_range([&] {
            auto end = lm::merge(lm::serial, a_first, a_last, b_first, b_last, o_first, bad_comparator(kind, seed, n));
            BOOST_TEST((end == o_last));
            end = lm::merge(lm::serial, a_first, a_last, b_first, b_last, o_first, lm::less<>{});  // unsorted only
            BOOST_TEST((end == o_last));
            auto ends = lm::merge_by_key(lm::serial, a_first, a_last, b_first, b_last, av_first, bv_first, o_first,
                                         vo_first, bad_comparator(kind, seed, n));
            BOOST_TEST((ends.first == o_last));
            BOOST_TEST((ends.second == vo_last));
          });
          (void)av_last;
          (void)bv_last;
        }
      }
    }
  }
}

// sorted_search (index_match both sides, both bounds) and
// sorted_equality_count on unsorted inputs with good and bad comparators:
// they return and stay inside every range.
BOOST_AUTO_TEST_CASE(unsorted_input_and_bad_comparators_search) {
  for (auto kind : bad_kinds) {
    for (auto na : bad_sizes) {
      for (std::int64_t nb : {0, 3, 1000}) {
        const auto seed = cpu_test::mix_seed(static_cast<std::uint64_t>(na), static_cast<std::uint64_t>(nb),
                                             static_cast<std::uint64_t>(kind), 23);
        BOOST_TEST_CONTEXT("comparator " << name(kind) << ", |A| " << na << ", |B| " << nb << ", seed " << seed) {
          auto a = test_support::generate<std::int32_t>(na, distribution::few_distinct, seed);
          auto b = test_support::generate<std::int32_t>(nb, distribution::few_distinct, seed + 1);
          std::vector<std::int64_t> a_out(a.size()), b_out(b.size());
          const auto a_first = checked_range(a).first;
        const auto a_last = checked_range(a).second;
          const auto b_first = checked_range(b).first;
        const auto b_last = checked_range(b).second;
          const auto ao_first = checked_range(a_out).first;
        const auto ao_last = checked_range(a_out).second;
          const auto bo_first = checked_range(b_out).first;
        const auto bo_last = checked_range(b_out).second;
          const std::int64_t n = na + nb;
          expect_returns_in_range([&] {
            lm::sorted_search<bounds::lower, search_type::index_match, search_type::index_match>(
                lm::serial, a_first, a_last, b_first, b_last, ao_first, bo_first, bad_comparator(kind, seed, n));
            lm::sorted_search<bounds::upper, search_type::index_match, search_type::index_match>(
                lm::serial, a_first, a_last, b_first, b_last, ao_first, bo_first, bad_comparator(kind, seed, n));
            lm::sorted_search<bounds::upper, search_type::match, search_type::index>(
                lm::serial, a_first, a_last, b_first, b_last, ao_first, bo_first, lm::less<>{});
            auto end = lm::sorted_search<bounds::lower>(lm::serial, a_first, a_last, b_first, b_last, ao_first,
                                                        bad_comparator(kind, seed, n));
            BOOST_TEST((end == ao_last));
            end = lm::sorted_equality_count(lm::serial, a_first, a_last, b_first, b_last, ao_first,
                                            bad_comparator(kind, seed, n));
            BOOST_TEST((end == ao_last));
            lm::sorted_equality_count(lm::serial, a_first, a_last, b_first, b_last, ao_first, lm::less<>{});
          });
          (void)bo_last;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Exception safety of the serial backend (backends/serial/merge_sort.hpp: the
// caller's range is written only at the end): a comparator that throws midway
// leaves keys and values as they were.
BOOST_AUTO_TEST_CASE(throwing_comparator_leaves_input_unchanged) {
  struct thrown {};
  for (std::int64_t n : {17, 100, 5000}) {
    for (std::int64_t throw_at : {std::int64_t{1}, n / 2, 10 * n}) {
      BOOST_TEST_CONTEXT("n " << n << ", throw at call " << throw_at) {
        const auto input = test_support::generate<std::int32_t>(n, distribution::random, 31);
        auto keys = input;
        auto vals = iota_vector<std::int32_t>(static_cast<std::size_t>(n));
        std::int64_t calls = 0;
        auto comp = [&](std::int32_t x, std::int32_t y) {
          if (++calls == throw_at) throw thrown{};
          return x < y;
        };
        bool threw = false;
        try {
          lm::merge_sort_by_key(lm::serial, keys.begin(), keys.end(), vals.begin(), comp);
        } catch (const thrown&) {
          threw = true;
        }
        if (threw) {
          BOOST_TEST((keys == input), "keys changed by a sort that threw");
          BOOST_TEST((vals == iota_vector<std::int32_t>(static_cast<std::size_t>(n))),
                     "values changed by a sort that threw");
        } else {
          // the sort finished before call throw_at: it must be right
          BOOST_TEST(throw_at > n);
          BOOST_TEST((keys == test_support::reference_sort(input, lm::less<>{})));
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Checked calls (lm::serial.checked()): the preconditions verified first, a
// violation an std::invalid_argument naming the input and the first bad
// position, nothing written; inputs that meet them give the unchecked result.

BOOST_AUTO_TEST_CASE(checked_calls_reject_unsorted_inputs) {
  const auto checked = lm::serial.checked();
  std::vector<std::int32_t> a = iota_vector<std::int32_t>(100), b = iota_vector<std::int32_t>(50, 7);
  std::swap(a[40], a[41]);  // a[41] = 40 comes before a[40] = 41
  std::vector<std::int32_t> out(150, -1), vals(150, -1), counts(100, -1);
  std::vector<std::int64_t> lower(100, -1);
  expect_invalid_argument([&] { lm::merge(checked, a.begin(), a.end(), b.begin(), b.end(), out.begin()); },
                          {"libmerge::merge (checked)", "[a_first, a_last) is not sorted", "element 41 comes before "
                                                                                            "element 40"});
  expect_invalid_argument(
      [&] {
        lm::merge_by_key(checked, b.begin(), b.end(), a.begin(), a.end(), b.begin(), a.begin(), out.begin(),
                         vals.begin());
      },
      {"libmerge::merge_by_key (checked)", "[b_keys_first, b_keys_last)", "element 41"});
  expect_invalid_argument(
      [&] { lm::sorted_search<bounds::lower>(checked, b.begin(), b.end(), a.begin(), a.end(), lower.begin()); },
      {"libmerge::sorted_search (checked)", "[b_first, b_last)", "element 41"});
  expect_invalid_argument(
      [&] { lm::sorted_equality_count(checked, a.begin(), a.end(), b.begin(), b.end(), counts.begin()); },
      {"libmerge::sorted_equality_count (checked)", "[a_first, a_last)"});
  BOOST_TEST(untouched(out, -1));
  BOOST_TEST(untouched(vals, -1));
  BOOST_TEST(untouched(counts, -1));
  BOOST_TEST(untouched(lower, std::int64_t(-1)));

  std::swap(a[40], a[41]);  // sorted again: the checked call is the plain one
  lm::merge(checked, a.begin(), a.end(), b.begin(), b.end(), out.begin());
  check_same(out, test_support::reference_merge(a, b, lm::less<>{}), "checked merge of sorted inputs");
  lm::sorted_search<bounds::lower>(checked, a.begin(), a.end(), b.begin(), b.end(), lower.begin());
  for (std::size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST(lower[i] == std::lower_bound(b.begin(), b.end(), a[i]) - b.begin());
  }
}

BOOST_AUTO_TEST_CASE(checked_sorts_reject_comparators_that_are_no_ordering) {
  const auto checked = lm::serial.checked();
  const auto input = test_support::generate<std::int32_t>(5000, distribution::random, 77);
  for (auto kind : {bad_comparator::less_equal, bad_comparator::random, bad_comparator::always_true}) {
    BOOST_TEST_CONTEXT("comparator " << name(kind)) {
      auto keys = input;
      expect_invalid_argument(
          [&] { lm::merge_sort(checked, keys.begin(), keys.end(), bad_comparator(kind, 5, 5000)); },
          {"libmerge::merge_sort (checked)", "not a strict weak ordering", "[first, last) at positions"});
      BOOST_TEST((keys == input), "keys changed by a rejected sort");
      auto vals = iota_vector<std::int64_t>(keys.size());
      expect_invalid_argument(
          [&] { lm::merge_sort_by_key(checked, keys.begin(), keys.end(), vals.begin(), bad_comparator(kind, 5, 5000)); },
          {"libmerge::merge_sort_by_key (checked)", "[keys_first, keys_last)"});
      BOOST_TEST((vals == iota_vector<std::int64_t>(keys.size())), "values changed by a rejected sort");
    }
  }
  // Everything equivalent is an ordering: accepted.
  auto keys = input;
  lm::merge_sort(checked, keys.begin(), keys.end(), bad_comparator(bad_comparator::always_false, 5, 5000));
  BOOST_TEST((keys == input), "a stable sort under which all keys are equal keeps the input");
  // NaN keys: plain < is no ordering (a NaN is equivalent to 1 and to 2, which
  // are not equivalent); lm::less orders NaN last, and passes.
  std::vector<double> d(2000);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = i % 3 == 1 ? std::nan("") : static_cast<double>(i % 17);
  auto dk = d;
  expect_invalid_argument(
      [&] { lm::merge_sort(checked, dk.begin(), dk.end(), [](double x, double y) { return x < y; }); },
      {"not a strict weak ordering", "neither before the other"});
  lm::merge_sort(checked, dk.begin(), dk.end());
  BOOST_TEST(std::isnan(dk.back()));
  BOOST_TEST(!std::isnan(dk.front()));
}
