// OpenMP merge and merge_by_key: Merge Path (Odeh et al. 2012). The output is
// cut into one equal share per thread; a binary search along each cut's
// cross-diagonal (merge_path, shared with the CUDA backend) finds where the
// cut falls in A and in B, and each thread merges its two input ranges into
// its share on its own. Every thread writes exactly (na + nb) / p outputs,
// however the keys interleave.
#pragma once

#include <iterator>
#include <vector>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/detail/dispatch.hpp"
#include "sequential.hpp"
#include "team.hpp"

namespace libmerge::detail::omp_backend {

template <class Policy, class AKeys, class BKeys, class AVals, class BVals, class KeysOut, class ValsOut, class Comp>
void merge(const Policy& policy, AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals,
           KeysOut keys_out, ValsOut vals_out, Comp& comp) {
  using K = typename std::iterator_traits<AKeys>::value_type;
  const index_t n = na + nb;
  const int threads = packs_bits<KeysOut> || packs_bits<ValsOut> ? 1 : team_size(policy, n);
  std::vector<index_t> cross(static_cast<std::size_t>(threads) + 1);
  const auto b_keys = view_as<K>(b);
  parallel(threads, [&](const team& t) {
    const int p = t.size(), r = t.rank();
    auto diag = [&](int k) { return share_begin(n, p, k); };
    t.run([&] { cross[r] = path_crossing<bounds::lower>(a, na, b_keys, nb, diag(r), comp); });
    t.barrier();
    t.run([&] {
      const merge_share s = share_of(cross.data(), 0, p, r, na, nb, diag);
      merge_sequential<false>(a + s.a_begin, s.a_end - s.a_begin, b + s.b_begin, s.b_end - s.b_begin,
                              advanced(a_vals, s.a_begin), advanced(b_vals, s.b_begin), keys_out + diag(r),
                              advanced(vals_out, diag(r)), comp);
    });
  });
}

}  // namespace libmerge::detail::omp_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::merge, backend::omp> {
  static constexpr bool available = true;

  template <class Policy, class AKeys, class BKeys, class AVals, class BVals, class KeysOut, class ValsOut,
            class Comp>
  static void run(const Policy& policy, AKeys a, index_t na, BKeys b, index_t nb, AVals a_vals, BVals b_vals,
                  KeysOut keys_out, ValsOut vals_out, Comp comp) {
    omp_backend::merge(policy, a, na, b, nb, a_vals, b_vals, keys_out, vals_out, comp);
  }
};

}  // namespace libmerge::detail
