// The merges of the CPU module (ops.hpp).
#include "ops.hpp"

namespace lmpy {

void merge(int tag, bool descending, const void* a, i64 na, const void* b, i64 nb, void* out, i64* positions) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    calls<cpu_backend, std::remove_pointer_t<decltype(t)>, decltype(comp)>::merge({}, a, na, b, nb, out, positions,
                                                                                 comp);
  });
}

void multiway_merge(int tag, bool descending, const void* const* firsts, const i64* lengths, i64 k, void* out,
                    i64* positions) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    calls<cpu_backend, std::remove_pointer_t<decltype(t)>, decltype(comp)>::multiway_merge({}, firsts, lengths, k,
                                                                                          out, positions, comp);
  });
}

}  // namespace lmpy
