// Helpers shared by the CPU test executables (test/cpu only): type names for
// failure context, a vector comparison that reports the first mismatch instead
// of dumping a million elements, input pairs for two-input algorithms, a
// bounds-checked iterator, and a decoder for index/match outputs.
//
// Include after <boost/test/unit_test.hpp>.
#pragma once

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <libmerge/libmerge.hpp>

#include "check.hpp"
#include "test_support.hpp"

namespace cpu_test {

namespace lm = libmerge;
using test_support::check_same;
using test_support::printable;
using test_support::same_element;
using test_support::distribution;
using test_support::record;
using test_support::record_less;

// ---------------------------------------------------------------------------
// Names for failure context.

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, std::int8_t>) return "int8";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "uint8";
  else if constexpr (std::is_same_v<T, std::int16_t>) return "int16";
  else if constexpr (std::is_same_v<T, std::uint16_t>) return "uint16";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, std::uint64_t>) return "uint64";
  else if constexpr (std::is_same_v<T, float>) return "float";
  else if constexpr (std::is_same_v<T, double>) return "double";
  else if constexpr (std::is_same_v<T, record>) return "record";
  else if constexpr (std::is_same_v<T, std::string>) return "std::string";
  else return "?";
}

template <class C>
const char* comp_name() {
  if constexpr (std::is_same_v<C, lm::less<>>) return "lm::less<>";
  else if constexpr (std::is_same_v<C, lm::greater<>>) return "lm::greater<>";
  else if constexpr (std::is_same_v<C, record_less>) return "record_less";
  else return "custom";
}

// Calls f(comp) for every comparator a key type is tested with: lm::less<>,
// lm::greater<>, and record_less for records.
template <class T, class F>
void for_each_comparator(F&& f) {
  f(lm::less<>{});
  f(lm::greater<>{});
  if constexpr (std::is_same_v<T, record>) f(record_less{});
}

// A reproducible seed from the parameters of one case.
inline std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0, std::uint64_t d = 0) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  for (std::uint64_t x : {a, b, c, d}) {
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return h;
}

// ---------------------------------------------------------------------------
// Inputs for merge and sorted search.

// How the second input relates to the first.
//   independent: drawn with its own seed (ties only where the key type or the
//                distribution makes them likely: int8, record, few_distinct).
//   shared:      drawn from the same random stream as A, so the shorter input's
//                keys all occur in the longer one; all_equal inputs then hold
//                the same key on both sides.
enum class pairing { independent, shared };
inline const char* name(pairing p) { return p == pairing::independent ? "independent" : "shared"; }

// A sorted input of n keys for side 0 (A) or 1 (B). Records from B get tags
// offset by 2^30 so that output records show which input they came from.
template <class T, class Comp>
std::vector<T> sorted_input(std::int64_t n, distribution d, std::uint64_t seed, Comp comp, int side) {
  auto v = test_support::generate_sorted<T>(n, d, seed, comp);
  if constexpr (std::is_same_v<T, record>) {
    if (side == 1) {
      for (auto& r : v) r.tag += 1 << 30;
    }
  }
  (void)side;
  return v;
}

// Sorted inputs for one (key type, comparator, distribution), generated once
// per size and shared by the cases that need them: A, B independent of A, and
// B from A's random stream.
template <class T, class Comp>
class inputs {
 public:
  inputs(distribution d, Comp comp, std::uint64_t salt)
      : d_(d), comp_(comp), seed_a_(mix_seed(salt, static_cast<std::uint64_t>(d), 1)),
        seed_b_(mix_seed(salt, static_cast<std::uint64_t>(d), 2)) {}

  const std::vector<T>& a(std::int64_t n) { return get(a_, n, seed_a_, 0); }
  const std::vector<T>& b(std::int64_t n, pairing p) {
    return p == pairing::independent ? get(b_ind_, n, seed_b_, 1) : get(b_shared_, n, seed_a_, 1);
  }
  std::uint64_t seed_a() const { return seed_a_; }
  std::uint64_t seed_b(pairing p) const { return p == pairing::independent ? seed_b_ : seed_a_; }

 private:
  const std::vector<T>& get(std::map<std::int64_t, std::vector<T>>& cache, std::int64_t n, std::uint64_t seed,
                            int side) {
    auto it = cache.find(n);
    if (it == cache.end()) it = cache.emplace(n, sorted_input<T>(n, d_, seed, comp_, side)).first;
    return it->second;
  }
  distribution d_;
  Comp comp_;
  std::uint64_t seed_a_, seed_b_;
  std::map<std::int64_t, std::vector<T>> a_, b_ind_, b_shared_;
};

// (|A|, |B|) pairs crossing the standard sizes: every pair up to 4097, and
// pairs with one big side (65535 .. 10^6) against small, equal or big partners.
// with_million: include the pairs that have a side of 10^6.
inline std::vector<std::pair<std::int64_t, std::int64_t>> size_pairs(bool with_million) {
  std::vector<std::int64_t> small, big;
  for (auto n : test_support::standard_sizes()) (n <= 4097 ? small : big).push_back(n);
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  for (auto x : small)
    for (auto y : small) pairs.emplace_back(x, y);
  for (auto b : big) {
    if (b >= 1000000 && !with_million) continue;
    for (std::int64_t p : {std::int64_t{0}, std::int64_t{1}, std::int64_t{33}, std::int64_t{4097}}) {
      pairs.emplace_back(b, p);
      pairs.emplace_back(p, b);
    }
    pairs.emplace_back(b, b);
  }
  pairs.emplace_back(65536, 65535);
  if (with_million) pairs.emplace_back(65537, 1000000);
  return pairs;
}

// ---------------------------------------------------------------------------
// Index / match outputs.

// What an index_match output holds, decoded with the flag at the most
// significant bit of the output's value type (bit 31 for 32-bit, 63 for 64-bit).
struct decoded {
  std::uint64_t bound;
  bool match;
};

template <class Out>
decoded decode_index_match(Out v) {
  constexpr unsigned msb = CHAR_BIT * sizeof(Out) - 1;
  const auto u = static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<Out>>(v));
  return {u & ~(std::uint64_t{1} << msb), ((u >> msb) & 1u) != 0};
}

// ---------------------------------------------------------------------------
// A random-access iterator over [base, base + size) that throws
// std::out_of_range instead of touching anything outside: used to show that an
// algorithm stays in range (unsorted input, bad comparators, match probes).

struct out_of_range_access : std::out_of_range {
  using std::out_of_range::out_of_range;
};

template <class T>
class checked_iterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = std::remove_const_t<T>;
  using difference_type = std::ptrdiff_t;
  using pointer = T*;
  using reference = T&;

  checked_iterator() = default;
  checked_iterator(T* base, std::ptrdiff_t size, std::ptrdiff_t pos = 0) : base_(base), size_(size), pos_(pos) {}

  reference operator*() const { return at(pos_); }
  pointer operator->() const { return &at(pos_); }
  reference operator[](difference_type i) const { return at(pos_ + i); }

  checked_iterator& operator++() { ++pos_; return *this; }
  checked_iterator operator++(int) { auto t = *this; ++pos_; return t; }
  checked_iterator& operator--() { --pos_; return *this; }
  checked_iterator operator--(int) { auto t = *this; --pos_; return t; }
  checked_iterator& operator+=(difference_type n) { pos_ += n; return *this; }
  checked_iterator& operator-=(difference_type n) { pos_ -= n; return *this; }
  friend checked_iterator operator+(checked_iterator it, difference_type n) { return it += n; }
  friend checked_iterator operator+(difference_type n, checked_iterator it) { return it += n; }
  friend checked_iterator operator-(checked_iterator it, difference_type n) { return it -= n; }
  friend difference_type operator-(const checked_iterator& x, const checked_iterator& y) { return x.pos_ - y.pos_; }
  friend bool operator==(const checked_iterator& x, const checked_iterator& y) { return x.pos_ == y.pos_; }
  friend bool operator!=(const checked_iterator& x, const checked_iterator& y) { return x.pos_ != y.pos_; }
  friend bool operator<(const checked_iterator& x, const checked_iterator& y) { return x.pos_ < y.pos_; }
  friend bool operator>(const checked_iterator& x, const checked_iterator& y) { return x.pos_ > y.pos_; }
  friend bool operator<=(const checked_iterator& x, const checked_iterator& y) { return x.pos_ <= y.pos_; }
  friend bool operator>=(const checked_iterator& x, const checked_iterator& y) { return x.pos_ >= y.pos_; }

  std::ptrdiff_t position() const { return pos_; }

 private:
  reference at(std::ptrdiff_t i) const {
    if (i < 0 || i >= size_) {
      throw out_of_range_access("access at " + std::to_string(i) + " outside [0, " + std::to_string(size_) + ")");
    }
    return base_[i];
  }
  T* base_ = nullptr;
  std::ptrdiff_t size_ = 0;
  std::ptrdiff_t pos_ = 0;
};

// [begin, end) of a vector as checked iterators.
template <class V>
auto checked_range(V& v) {
  using T = std::remove_reference_t<decltype(*v.data())>;
  const auto n = static_cast<std::ptrdiff_t>(v.size());
  return std::make_pair(checked_iterator<T>(v.data(), n, 0), checked_iterator<T>(v.data(), n, n));
}

// Iterator makers for the search suites: plain pointers, or checked
// iterators (an output's checked range ends before its guard element).
struct pointer_range {
  template <class T>
  std::pair<const T*, const T*> operator()(const std::vector<T>& v) const {
    return {v.data(), v.data() + v.size()};
  }
};
struct pointer_out {
  template <class Out>
  Out* operator()(std::vector<Out>& v) const {
    return v.data();
  }
};
struct checked_range_maker {
  template <class T>
  auto operator()(const std::vector<T>& v) const {
    return checked_range(v);
  }
};
struct checked_out {
  template <class Out>
  checked_iterator<Out> operator()(std::vector<Out>& v) const {
    return checked_iterator<Out>(v.data(), static_cast<std::ptrdiff_t>(v.size()) - 1);
  }
};

// A value no correct merge writes past the end of its output.
template <class T>
T sentinel() {
  if constexpr (std::is_same_v<T, test_support::record>) {
    return test_support::record{-999999, -1, -1};
  } else {
    return static_cast<T>(-3);
  }
}

// What a search output holds before the call: no bound, flag or count
// written by a correct search has this pattern.
template <class Out>
constexpr Out out_sentinel() {
  return static_cast<Out>(0x5a5a5a5a5a5a5a5aull);
}

// ---------------------------------------------------------------------------
// Wall-clock timing for the messages of the large test.
class stopwatch {
 public:
  stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace cpu_test
