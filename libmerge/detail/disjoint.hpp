// Outputs that share memory with an input or with each other: an
// std::invalid_argument naming both, on every backend, before anything runs.
// No algorithm here has a defined result then (the GPU reads and writes tiles
// in parallel; the CPU merge overwrites input it has not read yet), and the
// same call must not work on one backend and corrupt data on another.
//
// The check sees memory where an iterator is a pointer (std::array's too) or
// a std::vector / std::string iterator (contiguous by the standard); the CUDA
// backend runs it again on what Thrust's iterators unwrap to. Fancy
// iterators are the caller's to keep apart (docs/api.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "config.hpp"

namespace libmerge::detail {

// A range as the check sees it: its bytes, or none (memory it cannot see).
struct byte_range {
  const char* name;
  const void* p = nullptr;
  std::size_t bytes = 0;
};

template <class It, class = void>
struct is_contiguous_std_iterator : std::false_type {};
template <class It>
struct is_contiguous_std_iterator<It, std::void_t<typename std::iterator_traits<It>::value_type>> {
  using T = typename std::iterator_traits<It>::value_type;
  static constexpr bool value = !std::is_same_v<T, bool> && (std::is_same_v<It, typename std::vector<T>::iterator> ||
                                                             std::is_same_v<It, typename std::vector<T>::const_iterator> ||
                                                             std::is_same_v<It, typename std::basic_string<T>::iterator> ||
                                                             std::is_same_v<It, typename std::basic_string<T>::const_iterator>);
};

template <class It>
byte_range range_of(const char* name, It it, index_t n) {
  if constexpr (std::is_pointer_v<It>) {
    return {name, static_cast<const void*>(it), static_cast<std::size_t>(n) * sizeof(*it)};
  } else if constexpr (is_contiguous_std_iterator<It>::value) {
    if (n <= 0) return {name};
    return {name, static_cast<const void*>(std::addressof(*it)), static_cast<std::size_t>(n) * sizeof(*it)};
  } else {
    return {name};
  }
}

// Throws when an output overlaps an input or another output (not even an
// output equal to its input is allowed). Inputs may overlap each other.
inline void check_disjoint(const char* algorithm, const byte_range* outputs, std::size_t num_outputs,
                           const byte_range* inputs, std::size_t num_inputs) {
  auto overlap = [](const byte_range& x, const byte_range& y) {
    if (x.bytes == 0 || y.bytes == 0) return false;
    const auto a = reinterpret_cast<std::uintptr_t>(x.p), b = reinterpret_cast<std::uintptr_t>(y.p);
    return a < b + y.bytes && b < a + x.bytes;
  };
  auto fail = [&](const byte_range& o, const byte_range& r) {
    throw std::invalid_argument(std::string("libmerge::") + algorithm + ": " + o.name + " overlaps " + r.name +
                                " (outputs must not share memory with the inputs or with each other)");
  };
  for (std::size_t o = 0; o < num_outputs; ++o) {
    for (std::size_t i = 0; i < num_inputs; ++i) {
      if (overlap(outputs[o], inputs[i])) fail(outputs[o], inputs[i]);
    }
    for (std::size_t q = o + 1; q < num_outputs; ++q) {
      if (overlap(outputs[o], outputs[q])) fail(outputs[o], outputs[q]);
    }
  }
}

inline void check_disjoint(const char* algorithm, std::initializer_list<byte_range> outputs,
                           std::initializer_list<byte_range> inputs) {
  check_disjoint(algorithm, outputs.begin(), outputs.size(), inputs.begin(), inputs.size());
}

}  // namespace libmerge::detail
