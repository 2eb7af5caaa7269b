// Outputs that share memory with an input or with each other: an
// std::invalid_argument naming both, on every backend, before anything runs.
// No algorithm has a defined result then (the GPU reads and writes tiles in
// parallel; the CPU merge overwrites input it has not read yet), and a call
// must not work on one backend and corrupt data on another. The check sees
// pointers and std::vector / std::string iterators; the CUDA backend runs it
// again on what Thrust's iterators unwrap to. Fancy iterators: the caller's.
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
#include "dispatch.hpp"

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

// The ranges of a k-way merge (runs: detail::sorted_run, named ranges[k] and
// vals[k]) against its outputs. seen(name, iterator, n) is the byte_range of
// an argument as the caller sees its memory: range_of on the host; the CUDA
// backend checks the pointer under that name first.
template <class Run, class KeysOut, class ValsOut, class Seen>
void check_runs_disjoint(const char* algorithm, const std::vector<Run>& runs, index_t total, KeysOut keys_out,
                         ValsOut vals_out, Seen&& seen) {
  constexpr bool with_values = has_values<ValsOut>;
  std::vector<std::string> names;  // byte_ranges point into them
  for (std::size_t k = 0; k < runs.size(); ++k) names.push_back("ranges[" + std::to_string(k) + "]");
  for (std::size_t k = 0; k < runs.size(); ++k) names.push_back("vals[" + std::to_string(k) + "]");
  std::vector<byte_range> inputs;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    inputs.push_back(seen(names[k].c_str(), runs[k].first, runs[k].n));
    if constexpr (with_values) inputs.push_back(seen(names[runs.size() + k].c_str(), runs[k].vals, runs[k].n));
  }
  const char* keys_name = with_values ? "keys_out" : "out";
  const byte_range outputs[2] = {seen(keys_name, keys_out, total), seen("vals_out", vals_out, total)};
  check_disjoint(algorithm, outputs, with_values ? 2 : 1, inputs.data(), inputs.size());
}

}  // namespace libmerge::detail
