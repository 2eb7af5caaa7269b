// The Python modules' dtype tags (libmerge/_arrays.py numbers them the same):
// each tag's element type and comparators, and the dispatch from a tag known
// at run time. Light (no backend): the CUDA module's host-compiled bindings
// include it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <libmerge/functional.hpp>

namespace lmpy {
namespace lm = libmerge;
using i64 = std::int64_t;

enum dtype_tag : int { t_bool, t_i8, t_i16, t_i32, t_i64, t_u8, t_u16, t_u32, t_u64, t_f16, t_bf16, t_f32, t_f64 };

// float16 and bfloat16 travel as their bits (C++17 has no such types) and
// compare as numbers in NumPy's order: NaN after everything, -0 equal to +0.
// Magnitudes above the exponent mask are NaNs; below it the bits grow with
// the value, so sign and magnitude give the order.
template <int ExponentMask>
LIBMERGE_HOST_DEVICE inline int half_rank(std::uint16_t x) {
  const int magnitude = x & 0x7fff;
  if (magnitude > ExponentMask) return 1 << 16;
  return (x & 0x8000) != 0 ? -magnitude : magnitude;
}
template <int ExponentMask>
struct half_less {
  LIBMERGE_HOST_DEVICE bool operator()(std::uint16_t a, std::uint16_t b) const {
    return half_rank<ExponentMask>(a) < half_rank<ExponentMask>(b);
  }
};
template <int ExponentMask>
struct half_greater {
  LIBMERGE_HOST_DEVICE bool operator()(std::uint16_t a, std::uint16_t b) const {
    return half_rank<ExponentMask>(b) < half_rank<ExponentMask>(a);
  }
};

// A tag's element type and its comparators in each order (lm::less / lm::greater put NaNs last / first, as
// NumPy's sort does).
template <class T, class Less = lm::less<>, class Greater = lm::greater<>>
struct typed {
  using type = T;
  using ascending = Less;
  using descending = Greater;
};
template <int Tag>
struct tag_type;
template <> struct tag_type<t_bool> : typed<bool> {};
template <> struct tag_type<t_i8> : typed<std::int8_t> {};
template <> struct tag_type<t_i16> : typed<std::int16_t> {};
template <> struct tag_type<t_i32> : typed<std::int32_t> {};
template <> struct tag_type<t_i64> : typed<std::int64_t> {};
template <> struct tag_type<t_u8> : typed<std::uint8_t> {};
template <> struct tag_type<t_u16> : typed<std::uint16_t> {};
template <> struct tag_type<t_u32> : typed<std::uint32_t> {};
template <> struct tag_type<t_u64> : typed<std::uint64_t> {};
template <> struct tag_type<t_f16> : typed<std::uint16_t, half_less<0x7c00>, half_greater<0x7c00>> {};
template <> struct tag_type<t_bf16> : typed<std::uint16_t, half_less<0x7f80>, half_greater<0x7f80>> {};
template <> struct tag_type<t_f32> : typed<float> {};
template <> struct tag_type<t_f64> : typed<double> {};

// Calls f(T* tag, comp) with the element type and comparator of tag Tag in the order asked.
template <int Tag, class F>
void with_tag(bool descending, F&& f) {
  using T = typename tag_type<Tag>::type;
  if (descending) {
    f(static_cast<T*>(nullptr), typename tag_type<Tag>::descending());
  } else {
    f(static_cast<T*>(nullptr), typename tag_type<Tag>::ascending());
  }
}

// Calls f(std::integral_constant<int, Tag>) for a tag known at run time.
template <class F>
void dispatch_tag(int tag, F&& f) {
  using std::integral_constant;
  switch (tag) {
    case t_bool: return f(integral_constant<int, t_bool>());
    case t_i8: return f(integral_constant<int, t_i8>());
    case t_i16: return f(integral_constant<int, t_i16>());
    case t_i32: return f(integral_constant<int, t_i32>());
    case t_i64: return f(integral_constant<int, t_i64>());
    case t_u8: return f(integral_constant<int, t_u8>());
    case t_u16: return f(integral_constant<int, t_u16>());
    case t_u32: return f(integral_constant<int, t_u32>());
    case t_u64: return f(integral_constant<int, t_u64>());
    case t_f16: return f(integral_constant<int, t_f16>());
    case t_bf16: return f(integral_constant<int, t_bf16>());
    case t_f32: return f(integral_constant<int, t_f32>());
    case t_f64: return f(integral_constant<int, t_f64>());
    default: throw std::invalid_argument("libmerge: unknown dtype tag " + std::to_string(tag));
  }
}

// Calls f(T* tag, comp) with the element type and comparator of a dtype tag.
template <class F>
void with_type(int tag, bool descending, F&& f) {
  dispatch_tag(tag, [&](auto t) { with_tag<decltype(t)::value>(descending, f); });
}

// The bytes an element of a tag takes.
inline std::size_t tag_bytes(int tag) {
  std::size_t bytes = 0;
  with_type(tag, false, [&](auto* t, auto) { bytes = sizeof(*t); });
  return bytes;
}

// sorted_search's forms: 0 a's index only, 1 a's index_match only, 2 both
// sides' index_match; index_match outputs carry the match in bit 63.
enum search_form : int { a_index, a_index_match, both_index_match };

}  // namespace lmpy
