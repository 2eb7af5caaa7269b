// The sorts of the Python module (ops.hpp).
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
// (checked=True: the inputs of merges and searches; searchsorted's look at
// its needles): the scan checked calls make, on the OpenMP team.
i64 sorted_until(int tag, bool descending, const void* keys, i64 n) {
  if (n < 2) return n;
  i64 at = n;
  with_type(tag, descending, [&](auto* t, auto comp) {
    using T = std::remove_pointer_t<decltype(t)>;
    using scan = lm::detail::impl_for<lm::algo::precondition, lm::omp::policy>;
    at = scan::sorted_until(lm::omp::par, static_cast<const T*>(keys), n, comp, "sorted_until", "a");
  });
  return at;
}

}  // namespace lmpy
