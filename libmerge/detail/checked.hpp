// Argument checks shared by every front-end, which run before any backend, so
// every backend rejects bad input alike and nothing has been touched on a throw:
// iterator categories, range lengths, output types (below), and
// checked calls (policy.checked()): the preconditions an algorithm takes on
// trust are verified first, and a violation is an std::invalid_argument naming
// the input and the first bad position, with nothing written. Each backend
// implements the two scans (backend_impl<algo::precondition, B>):
//   sorted_until  merges and searches: both inputs sorted, one read of each
//   bad_sample    sorts: the comparator a strict weak ordering over every
//                 ordering of each three consecutive samples of the keys
// A checked call waits for the scans: the answer decides whether it runs.
// Every call, checked or not, also refuses outputs that overlap its inputs
// or each other (check_disjoint, below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "config.hpp"

namespace libmerge {

// The policy it wraps in every other way; the wrapped policy's modifiers keep
// the check: .checked().on(s) checks as .on(s).checked() does.
template <class Policy>
struct checked_policy : Policy {
  constexpr explicit checked_policy(const Policy& p) : Policy(p) {}

  template <class... A, class P = Policy>
  auto on(A&&... a) const {
    return rewrap(P::on(std::forward<A>(a)...));
  }
  template <class... A, class P = Policy>
  auto with(A&&... a) const {
    return rewrap(P::with(std::forward<A>(a)...));
  }
  template <class A, class P = Policy>
  auto with_allocator(A&& a) const {
    return rewrap(P::with_allocator(std::forward<A>(a)));
  }
  // threads(n) rewraps; threads() is the team size of the wrapped policy.
  template <class... A, class P = Policy>
  auto threads(A&&... a) const {
    if constexpr (sizeof...(A) == 0) {
      return P::threads();
    } else {
      return rewrap(P::threads(std::forward<A>(a)...));
    }
  }

 private:
  template <class Other>
  static checked_policy<Other> rewrap(const Other& p) {
    return checked_policy<Other>(p);
  }
};

namespace detail {

template <class P>
struct is_checked : std::false_type {};
template <class P>
struct is_checked<checked_policy<P>> : std::true_type {};
template <class P>
inline constexpr bool is_checked_v = is_checked<std::decay_t<P>>::value;

// Keys the comparator check samples (evenly spaced over the input).
inline constexpr index_t comparator_samples = 1024;

LIBMERGE_HOST_DEVICE inline index_t sample_count(index_t n) { return n < comparator_samples ? n : comparator_samples; }
LIBMERGE_HOST_DEVICE inline index_t sample_position(index_t j, index_t n) {
  return j * (n / sample_count(n)) + (j < n % sample_count(n) ? j : n % sample_count(n));
}

// 0 when the comparator behaves as a strict weak ordering on the keys at
// samples j, j + 1 and j + 2 (cyclically); else what it broke:
// 1 irreflexivity, 2 asymmetry, 3 transitivity, 4 transitivity of equivalence.
template <class It, class Comp>
LIBMERGE_HOST_DEVICE int comparator_violation(It first, index_t n, index_t j, Comp& comp) {
  const index_t m = sample_count(n);
  const auto x = first[sample_position(j, n)];
  const auto y = first[sample_position((j + 1) % m, n)];
  const auto z = first[sample_position((j + 2) % m, n)];
  if (comp(x, x)) return 1;
  if (comp(x, y) && comp(y, x)) return 2;
  auto equivalent = [&](const auto& a, const auto& b) { return !comp(a, b) && !comp(b, a); };
  auto triple = [&](const auto& a, const auto& b, const auto& c) {
    if (comp(a, b) && comp(b, c) && !comp(a, c)) return 3;
    if (equivalent(a, b) && equivalent(b, c) && !equivalent(a, c)) return 4;
    return 0;
  };
  int v = triple(x, y, z);
  if (v == 0) v = triple(x, z, y);
  if (v == 0) v = triple(y, x, z);
  if (v == 0) v = triple(y, z, x);
  if (v == 0) v = triple(z, x, y);
  if (v == 0) v = triple(z, y, x);
  return v;
}

// The first sample where the comparator breaks a rule (sample -1: none), and
// which rule (0 where the backend cannot tell: its keys are device memory).
struct sample_violation {
  index_t sample = -1;
  int rule = 0;
};

inline const char* violation_name(int v) {
  switch (v) {
    case 1:
      return "comp(x, x) is true";
    case 2:
      return "comp(x, y) and comp(y, x) are both true";
    case 3:
      return "comp(x, y) and comp(y, z) but not comp(x, z)";
    default:
      return "x ~ y and y ~ z (neither before the other) but not x ~ z";
  }
}

// Input [first, first + n) of a checked call must be sorted.
template <class Policy, class It, class Comp>
void checked_sorted(const Policy& policy, It first, index_t n, Comp comp, const char* algorithm, const char* name) {
  if (n < 2) return;
  const index_t until = impl_for<algo::precondition, Policy>::sorted_until(policy, first, n, comp, algorithm, name);
  if (until < n) {
    throw std::invalid_argument(std::string("libmerge::") + algorithm + " (checked): " + name +
                                " is not sorted by the comparator: element " + std::to_string(until) +
                                " comes before element " + std::to_string(until - 1));
  }
}

// The keys of a checked sort: the comparator on a sample of them.
template <class Policy, class It, class Comp>
void checked_comparator(const Policy& policy, It first, index_t n, Comp comp, const char* algorithm,
                        const char* name) {
  if (n < 1) return;
  const sample_violation bad =
      impl_for<algo::precondition, Policy>::bad_sample(policy, first, n, comp, algorithm, name);
  if (bad.sample >= 0) {
    const index_t j = bad.sample, m = sample_count(n);
    throw std::invalid_argument(std::string("libmerge::") + algorithm + " (checked): the comparator is not a strict " +
                                "weak ordering on the keys of " + name + " at positions " +
                                std::to_string(sample_position(j, n)) + ", " +
                                std::to_string(sample_position((j + 1) % m, n)) + " and " +
                                std::to_string(sample_position((j + 2) % m, n)) +
                                (bad.rule != 0 ? std::string(" (") + violation_name(bad.rule) + ")" : std::string()));
  }
}

// What the front-ends call: nothing for an unchecked policy.
template <class Policy, class AIt, class BIt, class Comp>
void check_sorted_inputs(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, const Comp& comp,
                         const char* algorithm, const char* a_name, const char* b_name) {
  if constexpr (is_checked_v<Policy>) {
    checked_sorted(policy, a, na, comp, algorithm, a_name);
    checked_sorted(policy, b, nb, comp, algorithm, b_name);
  }
}
template <class Policy, class It, class Comp>
void check_sort_comparator(const Policy& policy, It first, index_t n, const Comp& comp, const char* algorithm,
                           const char* name) {
  if constexpr (is_checked_v<Policy>) checked_comparator(policy, first, n, comp, algorithm, name);
}

}  // namespace detail
}  // namespace libmerge

// ---------------------------------------------------------------------------
// Arguments: iterator categories, range lengths, output types.
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

// ---------------------------------------------------------------------------
// Outputs that share memory with an input or with each other: an
// std::invalid_argument naming both, on every backend, before anything runs.
// No algorithm has a defined result then (the GPU reads and writes tiles in
// parallel; the CPU merge overwrites input it has not read yet), and a call
// must not work on one backend and corrupt data on another. The check sees
// pointers and std::vector / std::string iterators; the CUDA backend runs it
// again on what Thrust's iterators unwrap to. Fancy iterators: the caller's.

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
