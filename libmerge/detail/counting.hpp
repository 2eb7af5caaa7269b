// A read-only sequence 0, 1, 2, ... of type T: the values merge_sort_indices
// sorts alongside the keys, so that it is merge_sort_by_key in every backend.
#pragma once

#include "config.hpp"

namespace libmerge::detail {

template <class T>
struct counting_values {
  index_t start = 0;
  LIBMERGE_HOST_DEVICE T operator[](index_t i) const { return static_cast<T>(start + i); }
  LIBMERGE_HOST_DEVICE counting_values operator+(index_t i) const { return {start + i}; }
};

}  // namespace libmerge::detail
