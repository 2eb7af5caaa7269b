// Helpers for the GPU tests: host/device copies and the tuned tile size.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "check.hpp"

#include <thrust/copy.h>
#include <thrust/device_vector.h>

#include <libmerge/libmerge.hpp>

namespace cuda_test {

template <class T>
thrust::device_vector<T> to_device(const std::vector<T>& v) {
  return thrust::device_vector<T>(v.begin(), v.end());
}

template <class T>
std::vector<T> to_host(const thrust::device_vector<T>& v) {
  std::vector<T> h(v.size());
  thrust::copy(v.begin(), v.end(), h.begin());
  return h;
}

// Elements per tile of the tuned merge launch box on this device for keys K
// and values V (void: keys only).
template <class K, class V = void>
long long tuned_merge_nv() {
  return libmerge::detail::cuda_backend::tuned_merge_tile<K, V>("test");
}

// Total sizes that put the last tile at every boundary case of nv, plus
// powers of two +-1 and a size of many tiles.
inline std::vector<long long> tile_boundary_sizes(long long nv) {
  std::vector<long long> sizes = {1, 2, 3, nv - 1, nv, nv + 1, 2 * nv - 1, 2 * nv, 2 * nv + 1, 7 * nv + 5};
  for (int k : {10, 16, 20}) {
    const long long p = 1LL << k;
    sizes.insert(sizes.end(), {p - 1, p, p + 1});
  }
  sizes.push_back(1000003);
  return sizes;
}

}  // namespace cuda_test
