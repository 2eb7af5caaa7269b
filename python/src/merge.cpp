// The merges of the Python module (ops.hpp).
#include <vector>

#include "ops.hpp"

namespace lmpy {

void merge(int tag, bool descending, const void* a, i64 na, const void* b, i64 nb, void* out, i64* positions) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    using T = std::remove_pointer_t<decltype(t)>;
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    T* o = static_cast<T*>(out);
    if (positions == nullptr) {
      lm::merge(lm::omp::par, pa, pa + na, pb, pb + nb, o, comp);
    } else {
      lm::merge_by_key(lm::omp::par, pa, pa + na, pb, pb + nb, counting_iterator(0), counting_iterator(na), o,
                       positions, comp);
    }
  });
}

void multiway_merge(int tag, bool descending, const void* const* firsts, const i64* lengths, i64 k, void* out,
                    i64* positions) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    using T = std::remove_pointer_t<decltype(t)>;
    std::vector<std::pair<const T*, const T*>> ranges(static_cast<std::size_t>(k));
    std::vector<counting_iterator> starts(static_cast<std::size_t>(k));
    i64 at = 0;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const T* f = static_cast<const T*>(firsts[i]);
      ranges[i] = {f, f + lengths[i]};
      starts[i] = counting_iterator(at);
      at += lengths[i];
    }
    T* o = static_cast<T*>(out);
    if (positions == nullptr) {
      lm::multiway_merge(lm::omp::par, ranges.begin(), ranges.end(), o, comp);
    } else {
      lm::multiway_merge_by_key(lm::omp::par, ranges.begin(), ranges.end(), starts.begin(), o, positions, comp);
    }
  });
}

}  // namespace lmpy
