// lm::omp::par: run on a team of OpenMP threads with the OpenMP backend.
//
//   lm::omp::par                 OpenMP's default team (omp_get_max_threads()),
//                                fewer for inputs too small to share
//   lm::omp::par.threads(n)      a team of n threads for every call (OpenMP may
//                                grant fewer, e.g. inside another parallel region)
//
// The policy compiles everywhere; without -fopenmp lm::is_available is false
// for it and a call is a compile-time error that names the missing flag.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

#include "../libmerge/detail/checked.hpp"
#include "../libmerge/detail/config.hpp"
#include "serial.hpp"

namespace libmerge::omp {

class policy {
 public:
  using backend_tag = backend::omp;

  constexpr policy() = default;

  // A team of n threads; 0 restores OpenMP's default. More than the cores is
  // allowed (and tested); it only costs time.
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

  // Every call's preconditions checked first; set it last.
  constexpr checked_policy<policy> checked() const { return checked_policy<policy>(*this); }

 private:
  int threads_ = 0;
};

// The policy object users pass: lm::merge_sort(lm::omp::par.threads(8), first, last).
inline constexpr policy par{};

}  // namespace libmerge::omp
