// The sorts of the Python module (ops.hpp).
#include <algorithm>

#include "ops.hpp"

namespace lmpy {

void sort(int tag, bool descending, void* keys, i64 n) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    using T = std::remove_pointer_t<decltype(t)>;
    T* k = static_cast<T*>(keys);
    lm::merge_sort(lm::omp::par, k, k + n, comp);
  });
}

void argsort(int tag, bool descending, void* keys, i64 n, i64* indices) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    using T = std::remove_pointer_t<decltype(t)>;
    T* k = static_cast<T*>(keys);
    lm::merge_sort_indices(lm::omp::par, k, k + n, indices, comp);
  });
}

// The first position i with keys[i] before keys[i - 1] in the order, or n
// (checked=True: the inputs of merges and searches).
i64 sorted_until(int tag, bool descending, const void* keys, i64 n) {
  i64 at = n;
  with_type(tag, descending, [&](auto* t, auto comp) {
    using T = std::remove_pointer_t<decltype(t)>;
    const T* k = static_cast<const T*>(keys);
    at = std::is_sorted_until(k, k + n, comp) - k;
  });
  return at;
}

}  // namespace lmpy
