// Thrust's CUDA execution policies as libmerge policies. This is the one file
// that uses Thrust's detail:: names: Thrust has no public way to ask a policy
// for its stream or whether it synchronizes, and libmerge must honour both to
// be a drop-in for thrust::merge(thrust::device, ...).
#pragma once

#include <type_traits>

#include <thrust/detail/execute_with_allocator_fwd.h>
#include <thrust/system/cuda/detail/util.h>
#include <thrust/system/cuda/execution_policy.h>

#include "../../libmerge/detail/dispatch.hpp"
#include "../../policies/cuda.hpp"

namespace libmerge::detail {

template <class P>
struct is_thrust_policy_with_allocator : std::false_type {};
template <class A, template <class> class Base>
struct is_thrust_policy_with_allocator<thrust::detail::execute_with_allocator<A, Base>> : std::true_type {};

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
