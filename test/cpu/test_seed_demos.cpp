// The Modern GPU demonstrations of seeds/000 (merge sort) and seeds/003
// (sorted search) reproduced with lm::serial: the inputs and the printed
// results are transcribed in demo/seed_data.hpp. Each result is also checked
// against a std:: reference, so a transcription error would show up too.
#define BOOST_TEST_MODULE libmerge_cpu_seed_demos
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <vector>

#include <demo/seed_data.hpp>

#include "cpu_test_helpers.hpp"

namespace lm = libmerge;
using cpu_test::check_same;

namespace {

template <class T, std::size_t N>
std::vector<T> to_vector(const std::array<T, N>& a) {
  return std::vector<T>(a.begin(), a.end());
}

}  // namespace

// seeds/000 "SORT KEYS DEMONSTRATION": 100 keys sorted with lm::less<>.
BOOST_AUTO_TEST_CASE(sort_keys_demonstration) {
  auto keys = to_vector(seed_data::sort_keys_input);
  lm::merge_sort(lm::serial, keys.begin(), keys.end());
  check_same(keys, to_vector(seed_data::sort_keys_sorted), "sorted keys vs the printout");
  check_same(keys, test_support::reference_sort(to_vector(seed_data::sort_keys_input), lm::less<>{}),
             "sorted keys vs std::stable_sort");
}

// seeds/000 sort pairs demonstration: keys with values 0..99, sorted stably by
// key; the values are the printed permutation. merge_sort_indices on the same
// keys gives the same permutation.
BOOST_AUTO_TEST_CASE(sort_pairs_demonstration) {
  const auto input = to_vector(seed_data::sort_pairs_keys_input);
  auto keys = input;
  std::vector<int> values(keys.size());
  std::iota(values.begin(), values.end(), 0);
  lm::merge_sort_by_key(lm::serial, keys.begin(), keys.end(), values.begin(), lm::less<int>{});
  check_same(keys, to_vector(seed_data::sort_pairs_keys_sorted), "sorted keys vs the printout");
  check_same(values, to_vector(seed_data::sort_pairs_values_sorted), "sorted values vs the printout");

  const auto perm = test_support::reference_permutation(input, lm::less<>{});
  check_same(values, std::vector<int>(perm.begin(), perm.end()), "sorted values vs the stable permutation");

  keys = input;
  std::vector<std::int32_t> indices(keys.size(), -1);
  lm::merge_sort_indices(lm::serial, keys.data(), keys.data() + keys.size(), indices.data());
  check_same(keys, to_vector(seed_data::sort_pairs_keys_sorted), "merge_sort_indices keys vs the printout");
  check_same(indices, to_vector(seed_data::sort_pairs_values_sorted), "merge_sort_indices vs the printout");
}

// seeds/003 "SORTED SEARCH DEMONSTRATION": lower bound of each needle into the
// haystack, written over the needles array as in the demo (an int output).
BOOST_AUTO_TEST_CASE(sorted_search_lower_bound_demonstration) {
  const auto needles = to_vector(seed_data::search_needles);
  const auto haystack = to_vector(seed_data::search_haystack);
  std::vector<int> out(needles.size(), -1);
  auto end = lm::sorted_search<lm::bounds::lower>(lm::serial, needles.begin(), needles.end(), haystack.begin(),
                                                  haystack.end(), out.begin());
  BOOST_TEST((end == out.end()));
  check_same(out, to_vector(seed_data::search_lower_bounds), "lower bounds vs the printout");
  const auto ref = test_support::reference_bounds(needles, haystack, false, lm::less<>{});
  check_same(out, std::vector<int>(ref.begin(), ref.end()), "lower bounds vs std::lower_bound");
}

// seeds/003 "SORTED SEARCH DEMONSTRATION (2)": bounds::lower with index_match
// on both sides into uint32 outputs: A's lower bound into B and B's upper
// bound into A, bit 31 set on a match. The match counts equal the number of
// starred entries of the printout.
BOOST_AUTO_TEST_CASE(sorted_search_index_match_demonstration) {
  const auto a = to_vector(seed_data::search2_a);
  const auto b = to_vector(seed_data::search2_b);
  std::vector<std::uint32_t> a_out(a.size()), b_out(b.size());
  const auto m = lm::sorted_search<lm::bounds::lower, lm::search_type::index_match, lm::search_type::index_match>(
      lm::serial, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_out.begin());
  const auto expected_a = to_vector(seed_data::search2_a_lower_index_match);
  const auto expected_b = to_vector(seed_data::search2_b_upper_index_match);
  check_same(a_out, expected_a, "A: lower bound into B | match bit 31, vs the printout");
  check_same(b_out, expected_b, "B: upper bound into A | match bit 31, vs the printout");

  auto starred = [](const std::vector<std::uint32_t>& v) {
    return std::count_if(v.begin(), v.end(), [](std::uint32_t x) { return (x >> 31) != 0; });
  };
  BOOST_TEST(m.a == starred(expected_a));
  BOOST_TEST(m.b == starred(expected_b));

  // std:: reference: bound | (match << 31)
  const auto lb = test_support::reference_bounds(a, b, false, lm::less<>{});
  const auto ub = test_support::reference_bounds(b, a, true, lm::less<>{});
  const auto ma = test_support::reference_matches(a, b, lm::less<>{});
  const auto mb = test_support::reference_matches(b, a, lm::less<>{});
  std::vector<std::uint32_t> ref_a, ref_b;
  for (std::size_t i = 0; i < a.size(); ++i) ref_a.push_back(static_cast<std::uint32_t>(lb[i]) | (ma[i] ? 0x80000000u : 0u));
  for (std::size_t j = 0; j < b.size(); ++j) ref_b.push_back(static_cast<std::uint32_t>(ub[j]) | (mb[j] ? 0x80000000u : 0u));
  check_same(a_out, ref_a, "A vs std::lower_bound / std::equal_range");
  check_same(b_out, ref_b, "B vs std::upper_bound / std::equal_range");
  BOOST_TEST(m.a == std::count(ma.begin(), ma.end(), true));
  BOOST_TEST(m.b == std::count(mb.begin(), mb.end(), true));
}
