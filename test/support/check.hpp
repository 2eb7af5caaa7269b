// Result comparison shared by the CPU and GPU suites: element by element, and
// on failure the size, the first mismatch and how many differ, instead of a
// dump of a million elements. Include after Boost.Test's unit_test header.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "test_support.hpp"

namespace test_support {

// int8 keys print as numbers, not characters.
template <class T>
auto printable(const T& x) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<long long>(x);
  } else {
    return x;
  }
}

// Equality a sort or merge must preserve exactly: bitwise for trivially
// copyable types, operator== (every field) for records and the rest.
template <class T>
bool same_element(const T& x, const T& y) {
  if constexpr (std::is_same_v<T, record> || !std::is_trivially_copyable_v<T>) {
    return x == y;
  } else {
    return std::memcmp(&x, &y, sizeof(T)) == 0;
  }
}

// Checks actual == expected element by element (bitwise for arithmetic types,
// so -0.0 and 0.0 differ; all fields for records) and on failure reports the
// size, the first mismatch and the number of mismatches.
template <class T>
bool check_same(const std::vector<T>& actual, const std::vector<T>& expected, const std::string& what) {
  BOOST_TEST(actual.size() == expected.size(),
             what << ": size " << actual.size() << " != expected " << expected.size());
  if (actual.size() != expected.size()) return false;
  std::size_t first = actual.size(), mismatches = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (!same_element(actual[i], expected[i])) {
      if (mismatches++ == 0) first = i;
    }
  }
  if (mismatches == 0) {
    BOOST_TEST(mismatches == 0u);
    return true;
  }
  BOOST_TEST(mismatches == 0u, what << ": " << mismatches << " of " << actual.size()
                                    << " elements differ; first at [" << first << "]: got "
                                    << printable(actual[first]) << ", expected " << printable(expected[first]));
  return false;
}

}  // namespace test_support
