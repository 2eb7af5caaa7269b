// The OpenMP backend: lm::omp::par (policies/omp.hpp). Compiled with OpenMP
// (-fopenmp) it implements every algorithm; without it, every algorithm is
// "not available" and a call says which flag is missing.
#pragma once

#include "../../libmerge/detail/checked.hpp"
#include "../../libmerge/detail/config.hpp"

#if defined(_OPENMP)

#include "merge.hpp"
#include "merge_sort.hpp"
#include "precondition.hpp"
#include "sorted_search.hpp"

#else

namespace libmerge::detail {

template <class Algorithm>
struct backend_impl<Algorithm, backend::omp> {
  static constexpr bool available = false;
  template <auto..., class... Args>
  static void run(Args&&...) {
    static_assert(always_false<Args...>,
                  "libmerge: lm::omp::par needs OpenMP, and this file was compiled without it: compile with "
                  "-fopenmp (CMake: target_link_libraries(<target> PRIVATE OpenMP::OpenMP_CXX))");
  }
  // A checked call's scans (libmerge/detail/checked.hpp) say the same.
  template <class... Args>
  static index_t sorted_until(Args&&... args) {
    run(args...);
    return 0;
  }
  template <class... Args>
  static sample_violation bad_sample(Args&&... args) {
    run(args...);
    return {};
  }
};

}  // namespace libmerge::detail

#endif
