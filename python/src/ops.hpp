// The CPU module's operations: each takes a dtype tag (dtypes.hpp), the
// order, and raw pointers to contiguous 1-D arrays, and makes the library
// calls of calls.hpp on the OpenMP backend. Three translation units (sort.cpp,
// merge.cpp, search.cpp) instantiate them for every tag, so that the build
// spreads over cores; module.cpp binds them. The CUDA module: cuda/.
#pragma once

#include <iterator>
#include <vector>

#include "calls.hpp"

namespace lmpy {

// start, start + 1, ...: the positions merges and sorts carry beside the keys
// (the values a by-key call moves are then gathered by them, so the module
// needs no instantiation per value type).
class counting_iterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = i64;
  using difference_type = std::ptrdiff_t;
  using pointer = const i64*;
  using reference = i64;
  counting_iterator() = default;
  explicit counting_iterator(i64 start) : v_(start) {}
  i64 operator*() const { return v_; }
  i64 operator[](difference_type i) const { return v_ + i; }
  counting_iterator& operator++() { ++v_; return *this; }
  counting_iterator operator++(int) { counting_iterator t = *this; ++v_; return t; }
  counting_iterator& operator--() { --v_; return *this; }
  counting_iterator operator--(int) { counting_iterator t = *this; --v_; return t; }
  counting_iterator& operator+=(difference_type i) { v_ += i; return *this; }
  counting_iterator& operator-=(difference_type i) { v_ -= i; return *this; }
  friend counting_iterator operator+(counting_iterator it, difference_type i) { return it += i; }
  friend counting_iterator operator+(difference_type i, counting_iterator it) { return it += i; }
  friend counting_iterator operator-(counting_iterator it, difference_type i) { return it -= i; }
  friend difference_type operator-(counting_iterator a, counting_iterator b) { return a.v_ - b.v_; }
  friend bool operator==(counting_iterator a, counting_iterator b) { return a.v_ == b.v_; }
  friend bool operator!=(counting_iterator a, counting_iterator b) { return a.v_ != b.v_; }
  friend bool operator<(counting_iterator a, counting_iterator b) { return a.v_ < b.v_; }
  friend bool operator>(counting_iterator a, counting_iterator b) { return a.v_ > b.v_; }
  friend bool operator<=(counting_iterator a, counting_iterator b) { return a.v_ <= b.v_; }
  friend bool operator>=(counting_iterator a, counting_iterator b) { return a.v_ >= b.v_; }

 private:
  i64 v_ = 0;
};

// The OpenMP backend for calls.hpp (the CPU module).
struct cpu_backend {
  static const auto& policy() { return lm::omp::par; }
  static counting_iterator counting(i64 start) { return counting_iterator(start); }
  static void iota(i64* p, i64 n) {
#pragma omp parallel for schedule(static)
    for (i64 i = 0; i < n; ++i) p[i] = i;
  }
  static std::vector<counting_iterator> starts(const i64* lengths, i64 k) {
    std::vector<counting_iterator> s;
    i64 at = 0;
    for (i64 i = 0; i < k; ++i) {
      s.emplace_back(at);
      at += lengths[i];
    }
    return s;
  }
};

// sort.cpp
void sort(int tag, bool descending, void* keys, i64 n);
void argsort(int tag, bool descending, void* keys, i64 n, i64* indices);
i64 sorted_until(int tag, bool descending, const void* keys, i64 n);

// merge.cpp (positions: where each output element was, in a then b, or in
// the arrays one after another)
void merge(int tag, bool descending, const void* a, i64 na, const void* b, i64 nb, void* out, i64* positions);
void multiway_merge(int tag, bool descending, const void* const* firsts, const i64* lengths, i64 k, void* out,
                    i64* positions);

// search.cpp (form: dtypes.hpp's search_form)
void sorted_search(int tag, bool descending, bool upper, int form, const void* a, i64 na, const void* b, i64 nb,
                   i64* a_out, i64* b_out);
void equality_count(int tag, bool descending, const void* a, i64 na, const void* b, i64 nb, i64* counts);

}  // namespace lmpy
