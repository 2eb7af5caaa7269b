// The CUDA module's operations, as plain C++ (module.cpp, compiled by the host
// compiler, binds them; ops.cu, compiled once a dtype tag, defines them): the
// operations of ../ops.hpp on device pointers, on the stream given (a
// cudaStream_t as an integer), on the current device. They return once the
// work is queued, except sorted_until, which reads its answer back.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace lmpy::gpu {

using i64 = std::int64_t;
using stream_t = std::uintptr_t;

// A CUDA allocation that failed (the module raises MemoryError for it).
struct out_of_memory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Defined for each tag in its own translation unit (ops.cu with LMPY_TAG).
template <int Tag>
struct tagged {
  static void sort(bool descending, void* keys, i64 n, stream_t s);
  static void argsort(bool descending, void* keys, i64 n, i64* indices, stream_t s);
  static i64 sorted_until(bool descending, const void* keys, i64 n, stream_t s);
  static void merge(bool descending, const void* a, i64 na, const void* b, i64 nb, void* out, i64* positions,
                    stream_t s);
  static void multiway_merge(bool descending, const void* const* firsts, const i64* lengths, i64 k, void* out,
                             i64* positions, stream_t s);
  static void sorted_search(bool descending, bool upper, int form, const void* a, i64 na, const void* b, i64 nb,
                            i64* a_out, i64* b_out, stream_t s);
  // The needles' bounds in the haystack, needles in any order: by the merge path, and one at a time where
  // it found them out of order.
  static void search_any_order(bool descending, bool upper, const void* needles, i64 nn, const void* haystack,
                               i64 nh, i64* out, stream_t s);
  static void equality_count(bool descending, const void* a, i64 na, const void* b, i64 nb, i64* counts,
                             stream_t s);
};

}  // namespace lmpy::gpu
