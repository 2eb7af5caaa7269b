// The sorts of the CPU module (ops.hpp).
#include "ops.hpp"

namespace lmpy {

void sort(int tag, bool descending, void* keys, i64 n) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    calls<cpu_backend, std::remove_pointer_t<decltype(t)>, decltype(comp)>::sort({}, keys, n, comp);
  });
}

void argsort(int tag, bool descending, void* keys, i64 n, i64* indices) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    calls<cpu_backend, std::remove_pointer_t<decltype(t)>, decltype(comp)>::argsort({}, keys, n, indices, comp);
  });
}

i64 sorted_until(int tag, bool descending, const void* keys, i64 n) {
  i64 at = n;
  with_type(tag, descending, [&](auto* t, auto comp) {
    at = calls<cpu_backend, std::remove_pointer_t<decltype(t)>, decltype(comp)>::sorted_until({}, keys, n, comp);
  });
  return at;
}

}  // namespace lmpy
