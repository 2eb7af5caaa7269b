// lm::omp::par: run on a team of OpenMP threads with the OpenMP backend
// (backends/omp/). Thrust's host policies select libmerge's host backends, so
// libmerge calls are drop-ins for Thrust's there too:
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

// ---------------------------------------------------------------------------
// Thrust's host policies, when Thrust's headers are on the include path (nvcc
// always has them; for g++ add CUDA's include/cccl). Only the policy tags'
// base classes are included (what is_base_of below needs), which compile with
// g++ alone: detail/execution_policy.h is in every CCCL from the toolkit's
// 3.0 to the newest (3.6, where detail/par.h, included here before, is gone
// and thrust::omp::par support silently disappeared). The public
// execution_policy.h headers pull in every algorithm of the system. Define
// LIBMERGE_NO_THRUST_POLICIES to leave Thrust out entirely.
#if !defined(LIBMERGE_NO_THRUST_POLICIES) && __has_include(<thrust/system/omp/detail/execution_policy.h>)
#include <thrust/detail/execute_with_allocator_fwd.h>
#include <thrust/system/cpp/detail/execution_policy.h>
#include <thrust/system/omp/detail/execution_policy.h>
#include <thrust/system/tbb/detail/execution_policy.h>

namespace libmerge::detail {

// Thrust's host systems derive from one another (omp's and tbb's policies are
// cpp policies too), so "cpp" means a cpp policy that is neither.
template <class P>
inline constexpr bool is_thrust_omp_policy = std::is_base_of_v<thrust::system::omp::detail::execution_policy<P>, P>;
template <class P>
inline constexpr bool is_thrust_cpp_policy =
    std::is_base_of_v<thrust::system::cpp::detail::execution_policy<P>, P> && !is_thrust_omp_policy<P> &&
    !std::is_base_of_v<thrust::system::tbb::detail::execution_policy<P>, P>;

// thrust::omp::par(alloc) and thrust::cpp::par(alloc) carry an allocator for
// Thrust's temporary storage; libmerge would silently ignore it, so they are refused.
template <class P>
struct is_thrust_host_policy_with_allocator : std::false_type {};
template <class A, template <class> class Base>
struct is_thrust_host_policy_with_allocator<thrust::detail::execute_with_allocator<A, Base>> : std::true_type {};

template <class P>
struct policy_adapter<P, std::enable_if_t<is_thrust_omp_policy<P>>> {
  static_assert(!is_thrust_host_policy_with_allocator<P>::value,
                "libmerge: Thrust policies that carry their own allocator (thrust::omp::par(alloc)) are not "
                "supported; pass lm::omp::par instead");
  static constexpr bool is_policy = true;
  // Thrust's OpenMP system has no team size of its own: OpenMP's default, as in Thrust.
  static libmerge::omp::policy adapt(const P&) { return libmerge::omp::par; }
};

template <class P>
struct policy_adapter<P, std::enable_if_t<is_thrust_cpp_policy<P>>> {
  static_assert(!is_thrust_host_policy_with_allocator<P>::value,
                "libmerge: Thrust policies that carry their own allocator (thrust::cpp::par(alloc)) are not "
                "supported; pass lm::serial instead");
  static constexpr bool is_policy = true;
  static const serial_policy& adapt(const P&) { return libmerge::serial; }
};

}  // namespace libmerge::detail
#endif
