// The searches of the CPU module (ops.hpp).
#include "ops.hpp"

namespace lmpy {

void sorted_search(int tag, bool descending, bool upper, int form, const void* a, i64 na, const void* b, i64 nb,
                   i64* a_out, i64* b_out) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    calls<cpu_backend, std::remove_pointer_t<decltype(t)>, decltype(comp)>::sorted_search({}, upper, form, a, na, b,
                                                                                         nb, a_out, b_out, comp);
  });
}

void equality_count(int tag, bool descending, const void* a, i64 na, const void* b, i64 nb, i64* counts) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    calls<cpu_backend, std::remove_pointer_t<decltype(t)>, decltype(comp)>::equality_count({}, a, na, b, nb, counts,
                                                                                          comp);
  });
}

}  // namespace lmpy
