// Step 5 of the NCCL sort (merge_sort.cuh): a rank merges the pieces of a
// chunk into its place in the shard once the chunk has arrived, in one 4-way
// pass or by a tree of merges.
#pragma once

#include "exchange.cuh"

namespace libmerge::detail::nccl_backend {

// A sorted run the merge tree reads: its keys and values, and where its
// elements go in the output.
template <class K, class V>
struct run {
  const K* keys;
  const V* vals;
  long long out, n;
};

// Merges runs (in rank order, each sorted) into st.shard: a level merges
// neighbours (the lower as A, which wins ties: stability) and copies an odd
// one out; levels alternate between the shard and st.tmp, ending in the
// shard. The first level reads the runs where they are (the received slots).
template <bool WithValues, class K, class V, class Comp>
void merge_runs(rank_state<K, V>& st, std::vector<run<K, V>> runs, Comp comp, const char* algorithm) {
  const auto par = cuda::par.on(st.stream);
  int levels = 0;
  while ((std::size_t(1) << levels) < runs.size()) ++levels;
  auto copy = [&](K* to_k, V* to_v, const run<K, V>& r) {
    check_cuda(cudaMemcpyAsync(to_k + r.out, r.keys, static_cast<std::size_t>(r.n) * sizeof(K),
                               cudaMemcpyDeviceToDevice, st.stream),
               algorithm, "cudaMemcpyAsync (merging the received pieces)");
    if constexpr (WithValues) {
      check_cuda(cudaMemcpyAsync(to_v + r.out, r.vals, static_cast<std::size_t>(r.n) * sizeof(V),
                                 cudaMemcpyDeviceToDevice, st.stream),
                 algorithm, "cudaMemcpyAsync (merging the received pieces)");
    }
  };
  if (levels == 0) {  // one piece (or none): it is the result
    for (const run<K, V>& r : runs) copy(st.shard.keys, st.shard.vals, r);
    return;
  }
  for (int level = 1; level <= levels; ++level) {
    K* to_k = (levels - level) % 2 == 0 ? st.shard.keys : st.tmp_keys;
    V* to_v = (levels - level) % 2 == 0 ? st.shard.vals : st.tmp_vals;
    std::vector<run<K, V>> next;
    for (std::size_t i = 0; i < runs.size(); i += 2) {
      const run<K, V>& a = runs[i];
      if (i + 1 == runs.size()) {
        copy(to_k, to_v, a);
      } else {
        const run<K, V>& b = runs[i + 1];
        if constexpr (WithValues) {
          libmerge::merge_by_key(par, a.keys, a.keys + a.n, b.keys, b.keys + b.n, a.vals, b.vals, to_k + a.out,
                                 to_v + a.out, comp);
        } else {
          libmerge::merge(par, a.keys, a.keys + a.n, b.keys, b.keys + b.n, to_k + a.out, comp);
        }
      }
      const long long n = a.n + (i + 1 < runs.size() ? runs[i + 1].n : 0);
      next.push_back({to_k + a.out, WithValues ? to_v + a.out : nullptr, a.out, n});
    }
    runs.swap(next);
  }
}

// Step 5 for one rank and chunk c: its pieces of the chunk (in rank and run
// order, so that ties stay stable) merged into the chunk's place in its
// shard, on the rank's stream once the chunk has arrived: in one 4-way pass
// (merge_four) where there are 3 or 4 of them and the types have it, else by
// merge_runs (a copy, one merge, or a tree).
template <bool WithValues, class K, class V, class Comp>
void merge_pieces(rank_state<K, V>& s, const call_plan& plan, const piece_plan& pp, int c, Comp comp,
                  const char* algorithm) {
  check_cuda(cudaEventRecord(s.events[static_cast<std::size_t>(c) + 1], s.exchange_stream), algorithm,
             "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(s.stream, s.events[static_cast<std::size_t>(c) + 1], 0), algorithm,
             "cudaStreamWaitEvent");
  std::vector<run<K, V>> runs;
  index_t at[4] = {0, 0, 0, 0}, len[4] = {0, 0, 0, 0};
  const long long first = pp.out[static_cast<std::size_t>(c)];
  long long out = first;
  for (std::size_t u = pp.index(c, 0, 0); u < pp.index(c + 1, 0, 0); ++u) {
    if (pp.n[u] == 0) continue;
    if (runs.size() < 4) {
      at[runs.size()] = pp.at[u];
      len[runs.size()] = pp.n[u];
    }
    runs.push_back({s.keys + pp.at[u], WithValues ? s.vals + pp.at[u] : nullptr, out, pp.n[u]});
    out += pp.n[u];
  }
  if (c + 1 == plan.chunks) fail_point(s.fault, fault_at::merge, algorithm);
  if (plan.four_way && runs.size() >= 3 && runs.size() <= 4) {
    cuda_backend::merge_four<local_policy, K, V, WithValues>(cuda::par.on(s.stream), s.keys, s.vals, at, len,
                                                             s.shard.keys + first,
                                                             WithValues ? s.shard.vals + first : nullptr, comp,
                                                             algorithm);
  } else {
    merge_runs<WithValues>(s, std::move(runs), comp, algorithm);
  }
}

}  // namespace libmerge::detail::nccl_backend
