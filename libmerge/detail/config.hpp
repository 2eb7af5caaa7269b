// What every part of libmerge sees: compiler switches, the one index type, and
// the second hop of every call: a front-end resolves the policy, takes its
// backend tag and calls backend_impl<algorithm, backend>::run. A new backend
// specializes backend_impl, its tag declared beside its policy.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

// Under g++ LIBMERGE_HOST_DEVICE is nothing, so the CPU backends need no CUDA.
#if defined(__CUDACC__)
#define LIBMERGE_HOST_DEVICE __host__ __device__
#define LIBMERGE_HAS_CUDA 1
#else
#define LIBMERGE_HOST_DEVICE
#define LIBMERGE_HAS_CUDA 0
#endif

// The engine's searches run in the kernels' inner loops, where a call would
// cost registers spilled across it.
#if defined(__CUDACC__)
#define LIBMERGE_FORCEINLINE __forceinline__
#else
#define LIBMERGE_FORCEINLINE inline
#endif

// `#pragma unroll` for loops in code that host and device share: nvcc's
// device pass reads it, the host compiler would warn of an unknown pragma.
#if defined(__CUDA_ARCH__)
#define LIBMERGE_UNROLL _Pragma("unroll")
#else
#define LIBMERGE_UNROLL
#endif

namespace libmerge {

// Counts and positions are 64-bit everywhere: inputs beyond 2^31 elements are
// a supported case, not an overflow waiting to happen.
using index_t = std::int64_t;

// Backend tags of every build (NCCL's: policies/nccl.hpp); a policy's `backend_tag`.
namespace backend {
struct serial {};
struct cuda {};
struct omp {};
}  // namespace backend

// One tag per algorithm family; by_key and indices variants share their
// family's implementation (keys-only calls pass detail::no_values).
namespace algo {
struct merge {};
struct multiway_merge {};
struct merge_sort {};
// lm::sort: a backend's fastest stable sort (without one, its merge_sort).
struct sort {};
struct sorted_search {};
struct sorted_equality_count {};
// A checked call's scans (detail/checked.hpp): sorted_until and bad_sample.
struct precondition {};
}  // namespace algo

namespace detail {

template <class...>
inline constexpr bool always_false = false;

// Stands in for the value iterators of keys-only calls, so that one
// implementation serves keys and key-value pairs (the Modern GPU idiom).
struct no_values {};

template <class It>
inline constexpr bool has_values = !std::is_same_v<std::decay_t<It>, no_values>;

// One input of a k-way merge (lm::multiway_merge hands the backends a
// std::vector of them): keys first[0, n), values vals[0, n) or no_values.
template <class KeyIt, class ValIt>
struct sorted_run {
  KeyIt first;
  index_t n;
  ValIt vals;
};

// Backends specialize it with `available = true` and a static run(policy, ...).
template <class Algorithm, class Backend>
struct backend_impl {
  static constexpr bool available = false;
  // auto... also swallows explicit template arguments (sorted_search passes
  // its bounds and search types), so the message below is what users see.
  template <auto..., class... Args>
  static void run(Args&&...) {
    static_assert(always_false<Args...>,
                  "libmerge: this algorithm is not implemented for the backend the policy selects");
  }
};

template <class T, class = void>
struct has_backend_tag : std::false_type {};
template <class T>
struct has_backend_tag<T, std::void_t<typename T::backend_tag>> : std::true_type {};

// Maps a policy onto one of libmerge's own (specialized for Thrust's). Non-policies
// leave overload resolution, so ADL-found lm::merge never clashes with std::merge.
template <class Policy, class = void>
struct policy_adapter {
  static constexpr bool is_policy = false;
};

template <class Policy>
struct policy_adapter<Policy, std::enable_if_t<has_backend_tag<Policy>::value>> {
  static constexpr bool is_policy = true;
  static const Policy& adapt(const Policy& p) { return p; }
};

template <class Policy>
inline constexpr bool is_execution_policy = policy_adapter<std::decay_t<Policy>>::is_policy;

// A collective policy (NCCL's): a rank with an empty or one-element range must
// still take part, so front-ends do not return early.
template <class Policy, class = void>
struct is_collective : std::false_type {};
template <class Policy>
struct is_collective<Policy, std::enable_if_t<Policy::collective>> : std::true_type {};
template <class Policy>
inline constexpr bool is_collective_v = is_collective<std::decay_t<Policy>>::value;

// A defaulted template parameter of every algorithm: only policies match.
template <class Policy>
using require_policy = std::enable_if_t<is_execution_policy<Policy>>;

template <class Policy>
decltype(auto) resolve_policy(const Policy& p) {
  return policy_adapter<Policy>::adapt(p);
}

template <class Policy>
using resolved_policy_t = std::decay_t<decltype(resolve_policy(std::declval<const Policy&>()))>;

template <class Algorithm, class Policy>
using impl_for = backend_impl<Algorithm, typename resolved_policy_t<Policy>::backend_tag>;

}  // namespace detail

// True when the policy's backend implements the algorithm family, so generic
// code can pick a fallback without a compile error.
template <class Algorithm, class Policy>
inline constexpr bool is_available = detail::impl_for<Algorithm, Policy>::available;
}  // namespace libmerge
