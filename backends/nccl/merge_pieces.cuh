// Step 5 of the NCCL sort (merge_sort.cuh): a rank merges the pieces of a
// chunk into its place in the shard once the chunk has arrived, by the
// library's own k-way merge.
#pragma once

#include "exchange.cuh"

namespace libmerge::detail::nccl_backend {

// Step 5 for one rank and chunk c: its pieces of the chunk (in rank and run
// order, so that ties stay stable) merged into the chunk's place in its shard,
// on the rank's stream once the chunk has arrived, by lm::multiway_merge (one
// 4-way pass for 3 or 4 pieces where the types have it; a copy for one).
template <bool WithValues, class K, class V, class Comp>
void merge_pieces(rank_state<K, V>& s, const call_plan& plan, const piece_plan& pp, int c, Comp comp,
                  const char* algorithm) {
  check_cuda(cudaEventRecord(s.events[static_cast<std::size_t>(c) + 1], s.exchange_stream), algorithm,
             "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(s.stream, s.events[static_cast<std::size_t>(c) + 1], 0), algorithm,
             "cudaStreamWaitEvent");
  std::vector<std::pair<const K*, const K*>> pieces;
  std::vector<const V*> vals;
  for (std::size_t u = pp.index(c, 0, 0); u < pp.index(c + 1, 0, 0); ++u) {
    if (pp.n[u] == 0) continue;
    pieces.emplace_back(s.keys + pp.at[u], s.keys + pp.at[u] + pp.n[u]);
    vals.push_back(WithValues ? s.vals + pp.at[u] : nullptr);
  }
  if (c + 1 == plan.chunks) fail_point(s.fault, fault_at::merge, algorithm);
  const local_policy par = cuda::par.on(s.stream);
  const long long first = pp.out[static_cast<std::size_t>(c)];
  if constexpr (WithValues) {
    libmerge::multiway_merge_by_key(par, pieces.begin(), pieces.end(), vals.begin(), s.shard.keys + first,
                                    s.shard.vals + first, comp);
  } else {
    libmerge::multiway_merge(par, pieces.begin(), pieces.end(), s.shard.keys + first, comp);
  }
}

}  // namespace libmerge::detail::nccl_backend
