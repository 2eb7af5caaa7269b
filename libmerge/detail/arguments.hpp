// Argument checks shared by every front-end. They run before any backend, so
// every backend rejects bad input alike and nothing has been touched on a throw.
#pragma once

#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "config.hpp"

namespace libmerge::detail {

template <class It, class = void>
struct is_random_access : std::false_type {};
template <class It>
struct is_random_access<
    It, std::void_t<decltype(std::declval<It&>() - std::declval<It&>()),
                    decltype(std::declval<It&>() + index_t{}), decltype(std::declval<It&>()[index_t{}])>>
    : std::bool_constant<std::is_integral_v<decltype(std::declval<It&>() - std::declval<It&>())>> {};

[[noreturn]] inline void throw_invalid(const char* algorithm, const std::string& what) {
  throw std::invalid_argument(std::string("libmerge::") + algorithm + ": " + what);
}

// Length of [first, last) as a 64-bit count; a reversed range is an error that
// names the argument pair, e.g. "reversed range [a_first, a_last)".
template <class It>
index_t checked_length(It first, It last, const char* algorithm, const char* first_name,
                       const char* last_name) {
  static_assert(is_random_access<It>::value,
                "libmerge: input ranges need random-access iterators");
  const auto n = static_cast<index_t>(last - first);
  if (n < 0) {
    throw_invalid(algorithm, std::string("reversed range [") + first_name + ", " + last_name + "): " +
                                 last_name + " precedes " + first_name);
  }
  return n;
}

// The integer type written through an output iterator of indices or counts.
template <class OutIt>
using output_value_t = typename std::iterator_traits<OutIt>::value_type;

// Index, match and count outputs must hold the largest value they can receive
// (a narrower type would wrap silently); index_match also needs the top bit.
template <class OutIt>
void check_output_range(index_t largest, bool needs_flag_bit, const char* algorithm,
                        const char* out_name) {
  using T = output_value_t<OutIt>;
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                "libmerge: index, match and count outputs need an integral value type");
  using U = std::make_unsigned_t<T>;
  // Signed types and index_match lose the most significant bit.
  constexpr unsigned bits = std::numeric_limits<U>::digits;
  const unsigned usable = (std::is_signed_v<T> || needs_flag_bit) ? bits - 1 : bits;
  const unsigned long long limit = usable >= 64 ? ~0ull : (1ull << usable) - 1;
  if (largest > 0 && static_cast<unsigned long long>(largest) > limit) {
    throw_invalid(algorithm, std::string("the value type of ") + out_name + " cannot hold " +
                                 std::to_string(largest) + (needs_flag_bit ? " with the match bit free" : "") +
                                 "; use a wider integer type");
  }
}

// A read-only sequence 0, 1, 2, ... of type T: the values merge_sort_indices
// sorts alongside the keys, so that it is merge_sort_by_key in every backend.
template <class T>
struct counting_values {
  index_t start = 0;
  LIBMERGE_HOST_DEVICE T operator[](index_t i) const { return static_cast<T>(start + i); }
  LIBMERGE_HOST_DEVICE counting_values operator+(index_t i) const { return {start + i}; }
};

}  // namespace libmerge::detail
