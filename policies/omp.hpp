// lm::omp::par: run on a team of OpenMP threads with the OpenMP backend
// (backends/omp/). Thrust's host policies select libmerge's host backends
// (policies/thrust.hpp), so libmerge calls are drop-ins for Thrust's there too:
//
//   lm::omp::par                 OpenMP's default team (omp_get_max_threads(),
//                                i.e. OMP_NUM_THREADS or one per core), fewer
//                                for inputs too small to share
//   lm::omp::par.threads(n)      a team of n threads for every call (OpenMP may
//                                grant fewer, e.g. inside another parallel region)
//   thrust::omp::par             lm::omp::par
//   thrust::cpp::par, thrust::host   lm::serial
//
// The policy compiles everywhere; the backend needs OpenMP (g++ -fopenmp, in
// CMake `target_link_libraries(app PRIVATE OpenMP::OpenMP_CXX)`). Without it
// lm::is_available<algorithm, decltype(lm::omp::par)> is false and a call is a
// compile-time error that says which flag is missing.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

#include "../libmerge/detail/checked.hpp"
#include "../libmerge/detail/dispatch.hpp"
#include "serial.hpp"

namespace libmerge::omp {

class policy {
 public:
  using backend_tag = backend::omp;

  constexpr policy() = default;

  // The same policy with a team of n threads; 0 restores OpenMP's default.
  // More threads than cores is allowed (and tested); it only costs time.
  policy threads(int n) const {
    if (n < 0) {
      throw std::invalid_argument("libmerge::omp::par.threads: the thread count must be >= 0, got " +
                                  std::to_string(n));
    }
    policy p = *this;
    p.threads_ = n;
    return p;
  }

  // The team size asked for; 0: OpenMP's default.
  constexpr int threads() const { return threads_; }

  // The same policy with every call's preconditions checked first
  // (libmerge/detail/checked.hpp); set it last.
  constexpr checked_policy<policy> checked() const { return checked_policy<policy>(*this); }

 private:
  int threads_ = 0;
};

// The policy object users pass: lm::merge_sort(lm::omp::par.threads(8), first, last).
inline constexpr policy par{};

}  // namespace libmerge::omp
