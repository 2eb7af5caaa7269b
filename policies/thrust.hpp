// Thrust's execution policies as libmerge policies: the one file that uses
// Thrust's detail:: names (Thrust has no public way to ask a policy for its
// stream, whether it synchronizes, or which host system it is):
//
//   thrust::omp::par                           lm::omp::par
//   thrust::cpp::par, thrust::host             lm::serial
//   thrust::device, thrust::cuda::par(.on(s))  lm::cuda::par on the policy's stream, waiting
//                                              for it at the end as Thrust does
//   thrust::cuda::par_nosync                   the same without the wait
//
// The host part needs Thrust's headers on the include path (nvcc always has
// them; for g++ add CUDA's include/cccl); define LIBMERGE_NO_THRUST_POLICIES
// to leave it out. The CUDA part comes with every nvcc build.
#pragma once

#include <type_traits>

#include "../libmerge/detail/config.hpp"
#include "omp.hpp"
#include "serial.hpp"

// Only the host policies' base classes, which compile with g++ alone
// (detail/execution_policy.h is in CCCL 3.0 to 3.6; the public headers pull in every algorithm).
#if !defined(LIBMERGE_NO_THRUST_POLICIES) && __has_include(<thrust/system/omp/detail/execution_policy.h>)
#define LIBMERGE_THRUST_HOST_POLICIES 1
#else
#define LIBMERGE_THRUST_HOST_POLICIES 0
#endif

#if LIBMERGE_THRUST_HOST_POLICIES || LIBMERGE_HAS_CUDA
#include <thrust/detail/execute_with_allocator_fwd.h>

namespace libmerge::detail {

// Thrust policies carrying an allocator are refused: libmerge would silently ignore it.
template <class P>
struct is_thrust_policy_with_allocator : std::false_type {};
template <class A, template <class> class Base>
struct is_thrust_policy_with_allocator<thrust::detail::execute_with_allocator<A, Base>> : std::true_type {};

}  // namespace libmerge::detail
#endif

#if LIBMERGE_THRUST_HOST_POLICIES
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

template <class P>
struct policy_adapter<P, std::enable_if_t<is_thrust_omp_policy<P>>> {
  static_assert(!is_thrust_policy_with_allocator<P>::value,
                "libmerge: Thrust policies that carry their own allocator (thrust::omp::par(alloc)) are not "
                "supported; pass lm::omp::par instead");
  static constexpr bool is_policy = true;
  // Thrust's OpenMP system has no team size of its own: OpenMP's default, as in Thrust.
  static libmerge::omp::policy adapt(const P&) { return libmerge::omp::par; }
};

template <class P>
struct policy_adapter<P, std::enable_if_t<is_thrust_cpp_policy<P>>> {
  static_assert(!is_thrust_policy_with_allocator<P>::value,
                "libmerge: Thrust policies that carry their own allocator (thrust::cpp::par(alloc)) are not "
                "supported; pass lm::serial instead");
  static constexpr bool is_policy = true;
  static const serial_policy& adapt(const P&) { return libmerge::serial; }
};

}  // namespace libmerge::detail
#endif  // Thrust's host headers

// The CUDA policies, wherever nvcc compiles (as every CUDA build has Thrust).
#if LIBMERGE_HAS_CUDA
#include <thrust/system/cuda/detail/util.h>
#include <thrust/system/cuda/execution_policy.h>

#include "cuda.hpp"

namespace libmerge::detail {

// thrust::device and thrust::cuda::par wait for the stream at the end of an
// algorithm, thrust::cuda::par_nosync does not, and libmerge does the same.
template <class P>
struct policy_adapter<P, std::enable_if_t<std::is_base_of_v<thrust::cuda_cub::execution_policy<P>, P>>> {
  static_assert(!is_thrust_policy_with_allocator<P>::value,
                "libmerge: Thrust policies that carry their own allocator (thrust::cuda::par(alloc)) are not "
                "supported; pass lm::cuda::par.on(stream).with_allocator(a) instead");
  static constexpr bool is_policy = true;
  static cuda::policy<> adapt(const P& p) {
    P copy = p;  // thrust's accessors take a non-const reference
    return cuda::policy<>(thrust::cuda_cub::stream(copy), cuda::pool_allocator{},
                          thrust::cuda_cub::must_perform_optional_synchronization(copy));
  }
};

}  // namespace libmerge::detail
#endif  // LIBMERGE_HAS_CUDA
