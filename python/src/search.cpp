// The searches of the Python module (ops.hpp).
#include "ops.hpp"

namespace lmpy {

template <lm::bounds Bounds, class T, class Comp>
void search_form(int form, const T* a, i64 na, const T* b, i64 nb, i64* a_out, i64* b_out, Comp comp) {
  using st = lm::search_type;
  switch (form) {
    case a_index:
      lm::sorted_search<Bounds, st::index, st::none>(lm::omp::par, a, a + na, b, b + nb, a_out, nullptr, comp);
      return;
    case a_index_match:
      lm::sorted_search<Bounds, st::index_match, st::none>(lm::omp::par, a, a + na, b, b + nb, a_out, nullptr, comp);
      return;
    case both_index_match:
      lm::sorted_search<Bounds, st::index_match, st::index_match>(lm::omp::par, a, a + na, b, b + nb, a_out, b_out,
                                                                  comp);
      return;
    default: throw std::invalid_argument("libmerge.sorted_search: unknown form " + std::to_string(form));
  }
}

void sorted_search(int tag, bool descending, bool upper, int form, const void* a, i64 na, const void* b, i64 nb,
                   i64* a_out, i64* b_out) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    using T = std::remove_pointer_t<decltype(t)>;
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    if (upper) {
      search_form<lm::bounds::upper>(form, pa, na, pb, nb, a_out, b_out, comp);
    } else {
      search_form<lm::bounds::lower>(form, pa, na, pb, nb, a_out, b_out, comp);
    }
  });
}

void equality_count(int tag, bool descending, const void* a, i64 na, const void* b, i64 nb, i64* counts) {
  with_type(tag, descending, [&](auto* t, auto comp) {
    using T = std::remove_pointer_t<decltype(t)>;
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    lm::sorted_equality_count(lm::omp::par, pa, pa + na, pb, pb + nb, counts, comp);
  });
}

}  // namespace lmpy
