// The Python module's operations: each takes a dtype tag (libmerge/_dtypes.py
// numbers them), the order, and raw pointers to contiguous 1-D arrays, and
// calls the library on the OpenMP backend. Three translation units
// (sort.cpp, merge.cpp, search.cpp) instantiate them for every tag, so that
// the build spreads over cores; module.cpp binds them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>

#include <libmerge/libmerge.hpp>

namespace lmpy {
namespace lm = libmerge;
using i64 = std::int64_t;

enum dtype_tag : int { t_bool, t_i8, t_i16, t_i32, t_i64, t_u8, t_u16, t_u32, t_u64, t_f16, t_bf16, t_f32, t_f64 };

// float16 and bfloat16 travel as their bits (C++17 has no such types) and
// compare as numbers in NumPy's order: NaN after everything, -0 equal to +0.
// Magnitudes above the exponent mask are NaNs; below it the bits grow with
// the value, so sign and magnitude give the order.
template <int ExponentMask>
inline int half_rank(std::uint16_t x) {
  const int magnitude = x & 0x7fff;
  if (magnitude > ExponentMask) return 1 << 16;
  return (x & 0x8000) != 0 ? -magnitude : magnitude;
}
template <int ExponentMask>
struct half_less {
  bool operator()(std::uint16_t a, std::uint16_t b) const {
    return half_rank<ExponentMask>(a) < half_rank<ExponentMask>(b);
  }
};
template <int ExponentMask>
struct half_greater {
  bool operator()(std::uint16_t a, std::uint16_t b) const {
    return half_rank<ExponentMask>(b) < half_rank<ExponentMask>(a);
  }
};

template <class T, class F>
void with_order(bool descending, F& f) {
  if (descending) {
    f(static_cast<T*>(nullptr), lm::greater<>());
  } else {
    f(static_cast<T*>(nullptr), lm::less<>());
  }
}
template <int Mask, class F>
void with_half_order(bool descending, F& f) {
  if (descending) {
    f(static_cast<std::uint16_t*>(nullptr), half_greater<Mask>());
  } else {
    f(static_cast<std::uint16_t*>(nullptr), half_less<Mask>());
  }
}

// Calls f(T* tag, comp) with the element type and comparator of a dtype tag
// (lm::less / lm::greater put NaNs last / first, as NumPy's sort does).
template <class F>
void with_type(int tag, bool descending, F&& f) {
  switch (tag) {
    case t_bool: return with_order<bool>(descending, f);
    case t_i8: return with_order<std::int8_t>(descending, f);
    case t_i16: return with_order<std::int16_t>(descending, f);
    case t_i32: return with_order<std::int32_t>(descending, f);
    case t_i64: return with_order<std::int64_t>(descending, f);
    case t_u8: return with_order<std::uint8_t>(descending, f);
    case t_u16: return with_order<std::uint16_t>(descending, f);
    case t_u32: return with_order<std::uint32_t>(descending, f);
    case t_u64: return with_order<std::uint64_t>(descending, f);
    case t_f16: return with_half_order<0x7c00>(descending, f);
    case t_bf16: return with_half_order<0x7f80>(descending, f);
    case t_f32: return with_order<float>(descending, f);
    case t_f64: return with_order<double>(descending, f);
    default: throw std::invalid_argument("libmerge: unknown dtype tag " + std::to_string(tag));
  }
}

// The bytes an element of a tag takes.
inline std::size_t tag_bytes(int tag) {
  std::size_t bytes = 0;
  with_type(tag, false, [&](auto* t, auto) { bytes = sizeof(*t); });
  return bytes;
}

// start, start + 1, ...: the positions merges and sorts carry beside the keys
// (the values a by-key call moves are then gathered by them, so the module
// needs no instantiation per value type).
class counting_iterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = i64;
  using difference_type = std::ptrdiff_t;
  using pointer = const i64*;
  using reference = i64;
  counting_iterator() = default;
  explicit counting_iterator(i64 start) : v_(start) {}
  i64 operator*() const { return v_; }
  i64 operator[](difference_type i) const { return v_ + i; }
  counting_iterator& operator++() { ++v_; return *this; }
  counting_iterator operator++(int) { counting_iterator t = *this; ++v_; return t; }
  counting_iterator& operator--() { --v_; return *this; }
  counting_iterator operator--(int) { counting_iterator t = *this; --v_; return t; }
  counting_iterator& operator+=(difference_type i) { v_ += i; return *this; }
  counting_iterator& operator-=(difference_type i) { v_ -= i; return *this; }
  friend counting_iterator operator+(counting_iterator it, difference_type i) { return it += i; }
  friend counting_iterator operator+(difference_type i, counting_iterator it) { return it += i; }
  friend counting_iterator operator-(counting_iterator it, difference_type i) { return it -= i; }
  friend difference_type operator-(counting_iterator a, counting_iterator b) { return a.v_ - b.v_; }
  friend bool operator==(counting_iterator a, counting_iterator b) { return a.v_ == b.v_; }
  friend bool operator!=(counting_iterator a, counting_iterator b) { return a.v_ != b.v_; }
  friend bool operator<(counting_iterator a, counting_iterator b) { return a.v_ < b.v_; }
  friend bool operator>(counting_iterator a, counting_iterator b) { return a.v_ > b.v_; }
  friend bool operator<=(counting_iterator a, counting_iterator b) { return a.v_ <= b.v_; }
  friend bool operator>=(counting_iterator a, counting_iterator b) { return a.v_ >= b.v_; }

 private:
  i64 v_ = 0;
};

// sort.cpp
void sort(int tag, bool descending, void* keys, i64 n);
void argsort(int tag, bool descending, void* keys, i64 n, i64* indices);
i64 sorted_until(int tag, bool descending, const void* keys, i64 n);

// merge.cpp (positions: where each output element was, in a then b, or in
// the arrays one after another)
void merge(int tag, bool descending, const void* a, i64 na, const void* b, i64 nb, void* out, i64* positions);
void multiway_merge(int tag, bool descending, const void* const* firsts, const i64* lengths, i64 k, void* out,
                    i64* positions);

// search.cpp. Forms: 0 a's index only, 1 a's index_match only, 2 both sides'
// index_match; index_match outputs carry the match in bit 63.
enum search_form : int { a_index, a_index_match, both_index_match };
void sorted_search(int tag, bool descending, bool upper, int form, const void* a, i64 na, const void* b, i64 nb,
                   i64* a_out, i64* b_out);
void equality_count(int tag, bool descending, const void* a, i64 na, const void* b, i64 nb, i64* counts);

}  // namespace lmpy
