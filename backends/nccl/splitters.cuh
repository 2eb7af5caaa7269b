// The exact splitters: a distributed co-rank search (Merge Path across ranks).
// Boundary s cuts rank q's sorted shard at S_q(s), q's elements among the first
// G_s of the order (key, rank, position). Candidate c = (x, q, p) counts
// L_r(c) = p (r == q), lower_bound(x) (q < r) or upper_bound(x) (q > r) on rank
// r; the all-reduce gives R(c), which narrows every interval. Every rank sees
// the same candidates, so all agree without a host round trip. Runs: the
// search is over sequences v = rank * runs + j. Chunk cuts: chunk_cuts.cuh.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include <cub/block/block_reduce.cuh>

#include "../../libmerge/detail/config.hpp"
#include "../cuda/runtime.cuh"
#include "../engine/search.hpp"
#include "chunk_cuts.cuh"

namespace libmerge::detail::nccl_backend {

// Proposals a rank an interval a round: more mean fewer (latency-bound) rounds.
// Runs of 2^28: 3 rounds with 1023, 5 with 127; 2^32: 4 (docs/multi-gpu-sort.md)
inline constexpr int proposals = 1023;

inline std::size_t align16(std::size_t x) { return (x + 15) / 16 * 16; }

// Rounds of the search for shards of at most `longest` elements.
inline int splitter_rounds(long long longest) {
  int rounds = 0;
  long long m = longest;
  while (m > 0) {
    ++rounds;
    if (m <= proposals) break;
    m = (m + proposals) / (proposals + 1);
  }
  return rounds;
}

// Kernels of the search (a thread a candidate: a few thousand).

// Run j of a rank's shard of n elements whose first run is `width` long.
struct run_of {
  long long begin, n;
};
// Clamped: a failed rank has no width but must still read in range.
__device__ __forceinline__ run_of run_at(int j, int runs, long long width, long long n) {
  if (runs == 1) return {0, n};
  const long long w = width < 0 ? 0 : (width > n ? n : width);
  return j == 0 ? run_of{0, w} : run_of{w, n - w};
}

// Interval t = j * boundaries + b (run j, boundary b + 1)'s first bounds
// and global target G: S_v(b) lies in [max(0, G - (N - n_v)), min(n_v, G)].
template <int = 0>
__global__ void init_intervals_kernel(const long long* lengths, int stride, int world, int rank, int runs,
                                      const long long* width, long long* lo, long long* hi, long long* target) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int boundaries = world - 1;
  if (t >= runs * boundaries) return;
  const int j = t / boundaries, b = t % boundaries;
  const long long g = rank_start(lengths, stride, world, b + 1);
  const long long total = rank_start(lengths, stride, world, world);
  const long long n = run_at(j, runs, *width, lengths[rank * stride]).n;
  const long long others = total - n;
  lo[t] = g - others > 0 ? g - others : 0;
  hi[t] = g < n ? g : n;
  target[t] = g;
}

// `proposals` evenly spaced positions of each [lo, hi) in its run (-1: none).
template <class K>
__global__ void propose_kernel(const K* keys, long long n, int runs, const long long* width, const long long* lo,
                               const long long* hi, int intervals, int boundaries, long long* cand_pos,
                               K* cand_keys) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= intervals * proposals) return;
  const int t = c / proposals, j = c % proposals;
  const long long l = lo[t], m = hi[t] - l;
  long long p = -1;
  if (m > proposals) {
    p = l + static_cast<long long>((static_cast<unsigned long long>(j + 1) * static_cast<unsigned long long>(m)) /
                                   (proposals + 1));
  } else if (j < m) {
    p = l + j;
  }
  cand_pos[c] = p;
  if (p >= 0) cand_keys[c] = keys[run_at(t / boundaries, runs, *width, n).begin + p];
}

// This rank's counts of every candidate: local[j * total + c] = L_v(c) for run
// j, sum[c] their sum (all-reduced). `block`: positions, then keys at key_offset.
template <class K, class Comp>
__global__ void count_kernel(const K* keys, long long n, int rank, int world, int runs, const long long* width,
                             int per_run, const char* all, std::size_t block, std::size_t key_offset,
                             unsigned long long* local, unsigned long long* sum, Comp comp) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int per_rank = runs * per_run;
  const int total = world * per_rank;
  if (c >= total) return;
  const int q = c / per_rank, i = c % per_rank;
  const int vc = q * runs + i / per_run;  // the candidate's sequence
  const char* from = all + static_cast<std::size_t>(q) * block;
  const long long p = reinterpret_cast<const long long*>(from)[i];
  unsigned long long all_runs = 0;
  for (int j = 0; j < runs; ++j) {
    unsigned long long count = 0;
    const int v = rank * runs + j;
    if (p >= 0 && v == vc) {
      count = static_cast<unsigned long long>(p);
    } else if (p >= 0) {
      const K x = reinterpret_cast<const K*>(from + key_offset)[i];
      const run_of r = run_at(j, runs, *width, n);
      const K* run = keys + r.begin;
      // (Equal keys of an earlier sequence come before the candidate, of a
      // later one after it: the engine's k-way probe.)
      count = static_cast<unsigned long long>(rank_in_run(run, 0LL, r.n, x, v < vc, comp));
    }
    local[static_cast<std::size_t>(j) * static_cast<std::size_t>(total) + static_cast<std::size_t>(c)] = count;
    all_runs += count;
  }
  sum[c] = all_runs;
}

// Narrows each interval by every candidate's global position, a block an
// interval (a block reduction; a thread a boundary was latency-bound).
// 4 H200s: about 0.1 ms a round with a thread a boundary (docs/multi-gpu-sort.md)
inline constexpr int narrow_threads = 256;

struct max_of {
  __device__ long long operator()(long long a, long long b) const { return a > b ? a : b; }
};
struct min_of {
  __device__ long long operator()(long long a, long long b) const { return a < b ? a : b; }
};

template <int NT = narrow_threads>
__global__ void __launch_bounds__(NT)
    narrow_kernel(int world, int rank, int runs, int boundaries, int per_run, const char* all, std::size_t block,
                  const unsigned long long* local, const unsigned long long* global, const long long* target,
                  long long* lo, long long* hi) {
  using reduce = cub::BlockReduce<long long, NT>;
  __shared__ typename reduce::TempStorage low_storage, high_storage;
  const int t = static_cast<int>(blockIdx.x);
  const int v = rank * runs + t / boundaries;  // the interval's sequence
  const int per_rank = runs * per_run;
  const int total = world * per_rank;
  long long l = lo[t], h = hi[t];
  const unsigned long long g = static_cast<unsigned long long>(target[t]);
  const unsigned long long* mine = local + static_cast<std::size_t>(t / boundaries) * static_cast<std::size_t>(total);
  for (int c = static_cast<int>(threadIdx.x); c < total; c += NT) {
    const int q = c / per_rank, i = c % per_rank;
    const long long p = reinterpret_cast<const long long*>(all + static_cast<std::size_t>(q) * block)[i];
    if (p < 0) continue;
    const long long count = static_cast<long long>(mine[c]);
    if (global[c] < g) {
      const long long at_least = count + (q * runs + i / per_run == v ? 1 : 0);
      l = at_least > l ? at_least : l;
    } else {
      h = count < h ? count : h;
    }
  }
  l = reduce(low_storage).Reduce(l, max_of());
  h = reduce(high_storage).Reduce(h, min_of());
  // A comparator that is no strict weak ordering can cross the bounds; the
  // host's check of the cuts reports it.
  if (threadIdx.x == 0) {
    lo[t] = l;
    hi[t] = h > l ? h : l;
  }
}

// The rank's record: each run's cuts (world x chunks + 1 words; cut s x chunks
// + c starts chunk c of rank s's output, exact at c = 0, snapped sub cuts
// clamped between), then its status (non-zero: failed), then the width W.
template <int = 0>
__global__ void splits_kernel(const long long* lo, const long long* sub, int world, int chunks, int runs, long long n,
                              const long long* width, long long status, long long* splits) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int B = world * chunks;
  const int cuts = runs * (B + 1);
  if (x >= cuts + 2) return;
  const long long w = runs == 1 ? n : run_at(0, runs, *width, n).n;
  if (x >= cuts) {
    splits[x] = x == cuts ? status : w;
    return;
  }
  const int j = x / (B + 1), b = x % (B + 1);
  const int s = b / chunks, c = b % chunks;
  const long long len = runs == 1 ? n : (j == 0 ? w : n - w);
  auto exact = [&](int rank) { return rank == 0 ? 0 : (rank == world ? len : lo[j * (world - 1) + rank - 1]); };
  if (c == 0) {
    splits[x] = exact(s);
    return;
  }
  const long long low = exact(s), high = exact(s + 1);
  const long long v = sub[j * world * (chunks - 1) + s * (chunks - 1) + c - 1];
  splits[x] = v < low ? low : (v > high ? high : v);
}

// Two runs only on 2 ranks, merged 2 x 2 in one 4-way pass (plan_call).
inline int most_runs(int world) { return world == 2 ? 2 : 1; }
// The most chunks the exchange of a call can go in (plan_call).
inline constexpr int max_chunks = 16;

// One rank's device buffers of the search, carved from one allocation (bytes()).
template <class K>
struct splitter_buffers {
  int world = 0;
  int runs = 1;
  int chunks = 1;
  double taper = 1.0;  // each chunk's length over the one before (chunk_target)
  char* cand = nullptr;
  char* cand_all = nullptr;
  unsigned long long* counts = nullptr;      // runs x all_candidates(): this rank's, run by run
  unsigned long long* counts_sum = nullptr;  // their sum over the runs (all-reduced)
  unsigned long long* counts_all = nullptr;  // every candidate's global position
  long long *lo = nullptr, *hi = nullptr, *target = nullptr;  // an interval a run and boundary
  long long* width = nullptr;                                  // the first run's length (the local sort's)
  long long* sub = nullptr;  // the chunks' snapped cuts: runs x world x (chunks - 1) (snap_kernel)
  long long* splits = nullptr;                                 // split_words()
  long long* splits_all = nullptr;                             // world x split_words()

  int boundaries() const { return world - 1; }
  int intervals() const { return runs * boundaries(); }
  int per_run() const { return boundaries() * proposals; }
  int per_rank() const { return runs * per_run(); }
  std::size_t key_offset() const { return align16(static_cast<std::size_t>(per_rank()) * sizeof(long long)); }
  std::size_t block() const { return align16(key_offset() + static_cast<std::size_t>(per_rank()) * sizeof(K)); }
  std::size_t all_candidates() const { return static_cast<std::size_t>(world) * static_cast<std::size_t>(per_rank()); }
  std::size_t split_words() const { return record_words(runs, world, chunks); }
  static std::size_t record_words(int runs, int world, int chunks) {
    return static_cast<std::size_t>(runs) * (static_cast<std::size_t>(world) * static_cast<std::size_t>(chunks) + 1) +
           2;
  }
  std::size_t sub_words() const {
    return static_cast<std::size_t>(runs) * static_cast<std::size_t>(world) * static_cast<std::size_t>(chunks - 1);
  }

  // Carved before the headers say how many runs and chunks the call takes:
  // sized for the most it can (most_runs, max_chunks).
  std::vector<std::size_t> sizes() const {
    const std::size_t r = static_cast<std::size_t>(most_runs(world));
    const std::size_t cands = static_cast<std::size_t>(world) * r * static_cast<std::size_t>(per_run());
    const std::size_t rank_block = align16(align16(r * static_cast<std::size_t>(per_run()) * 8) +
                                           r * static_cast<std::size_t>(per_run()) * sizeof(K));
    const std::size_t words = record_words(most_runs(world), world, max_chunks);
    return {rank_block, static_cast<std::size_t>(world) * rank_block, r * cands * 8, cands * 8, cands * 8,
            static_cast<std::size_t>(boundaries()) * r * 8 * 3 + 8, words * 8,
            static_cast<std::size_t>(world) * words * 8,
            r * static_cast<std::size_t>(world) * static_cast<std::size_t>(max_chunks - 1) * 8};
  }
  std::size_t bytes() const {
    std::size_t total = 0;
    for (std::size_t b : sizes()) total += align16(b);
    return total;
  }
  void carve(char* p) {
    const std::vector<std::size_t> s = sizes();
    auto take = [&](std::size_t i) {
      char* q = p;
      p += align16(s[i]);
      return q;
    };
    cand = take(0);
    cand_all = take(1);
    counts = reinterpret_cast<unsigned long long*>(take(2));
    counts_sum = reinterpret_cast<unsigned long long*>(take(3));
    counts_all = reinterpret_cast<unsigned long long*>(take(4));
    lo = reinterpret_cast<long long*>(take(5));
    hi = lo + most_runs(world) * boundaries();
    target = hi + most_runs(world) * boundaries();
    width = target + most_runs(world) * boundaries();
    splits = reinterpret_cast<long long*>(take(6));
    splits_all = reinterpret_cast<long long*>(take(7));
    sub = reinterpret_cast<long long*>(take(8));
  }
};

// The search's small kernels: blocks of small_threads, enough for `threads`.
inline constexpr int small_threads = 128;
template <class... Params, class... Args>
void launch_small(void (*kernel)(Params...), int threads, cudaStream_t stream, const char* algorithm,
                  const char* what, Args&&... args) {
  gpu::launch_with(nullptr, kernel, static_cast<index_t>((threads + small_threads - 1) / small_threads),
                            small_threads, 0, stream, algorithm, what, std::forward<Args>(args)...);
}

// The search over every local rank of t (keys[i]: local rank i's runs), then
// every rank's cuts and status all-gathered into splits_all. all_lengths[i]:
// the lengths on local rank i's device, one every `stride` words.
template <class K, class Transport, class Comp, class SetDevice>
void find_splitters(Transport& t, std::vector<splitter_buffers<K>>& bufs, const std::vector<const K*>& keys,
                    const std::vector<long long>& lengths, const std::vector<long long>& status,
                    const std::vector<const long long*>& all_lengths, int stride, long long longest, Comp comp,
                    SetDevice&& set_device, const char* algorithm) {
  const int local = t.local_count();
  const int world = t.world();
  const int boundaries = world - 1;
  for (int i = 0; i < local; ++i) {
    splitter_buffers<K>& b = bufs[static_cast<std::size_t>(i)];
    set_device(i);
    launch_small(init_intervals_kernel<>, b.intervals(), t.local(i).stream, algorithm,
                 "launch of init_intervals_kernel", all_lengths[static_cast<std::size_t>(i)], stride, world,
                 t.local(i).rank, b.runs, b.width, b.lo, b.hi, b.target);
    if (b.chunks > 1) {  // (-1: no cut found, so the chunk's lower exact cut)
      check_cuda(cudaMemsetAsync(b.sub, 0xff, b.sub_words() * sizeof(long long), t.local(i).stream), algorithm,
                 "cudaMemsetAsync");
    }
  }
  const int rounds = splitter_rounds(longest);
  for (int round = 0; round < rounds; ++round) {
    std::vector<const void*> send;
    std::vector<void*> recv;
    for (int i = 0; i < local; ++i) {
      splitter_buffers<K>& b = bufs[static_cast<std::size_t>(i)];
      set_device(i);
      launch_small(propose_kernel<K>, b.per_rank(), t.local(i).stream, algorithm, "launch of propose_kernel",
                   keys[static_cast<std::size_t>(i)], lengths[static_cast<std::size_t>(i)], b.runs, b.width, b.lo,
                   b.hi, b.intervals(), boundaries, reinterpret_cast<long long*>(b.cand),
                   reinterpret_cast<K*>(b.cand + b.key_offset()));
      send.push_back(b.cand);
      recv.push_back(b.cand_all);
    }
    t.allgather(send, recv, bufs.front().block());
    std::vector<const unsigned long long*> csend;
    std::vector<unsigned long long*> crecv;
    for (int i = 0; i < local; ++i) {
      splitter_buffers<K>& b = bufs[static_cast<std::size_t>(i)];
      set_device(i);
      launch_small(count_kernel<K, Comp>, static_cast<int>(b.all_candidates()), t.local(i).stream, algorithm,
                   "launch of count_kernel", keys[static_cast<std::size_t>(i)], lengths[static_cast<std::size_t>(i)],
                   t.local(i).rank, world, b.runs, b.width, b.per_run(), b.cand_all, b.block(), b.key_offset(),
                   b.counts, b.counts_sum, comp);
      csend.push_back(b.counts_sum);
      crecv.push_back(b.counts_all);
    }
    t.allreduce_sum(csend, crecv, bufs.front().all_candidates());
    for (int i = 0; i < local; ++i) {
      splitter_buffers<K>& b = bufs[static_cast<std::size_t>(i)];
      set_device(i);
      if (round == 0 && b.chunks > 1) {
        gpu::launch_with(nullptr, snap_kernel<>, world * (b.chunks - 1), snap_threads, 0, t.local(i).stream,
                                  algorithm, "launch of snap_kernel", world, b.runs, b.chunks, b.taper, b.per_run(), b.cand_all,
                                  b.block(), b.counts, b.counts_all, all_lengths[static_cast<std::size_t>(i)], stride,
                                  b.sub);
      }
      gpu::launch_with(nullptr, narrow_kernel<>, b.intervals(), narrow_threads, 0, t.local(i).stream,
                                algorithm, "launch of narrow_kernel", world, t.local(i).rank, b.runs, boundaries,
                                b.per_run(), b.cand_all, b.block(), b.counts, b.counts_all, b.target, b.lo, b.hi);
    }
  }
  std::vector<const void*> send;
  std::vector<void*> recv;
  for (int i = 0; i < local; ++i) {
    splitter_buffers<K>& b = bufs[static_cast<std::size_t>(i)];
    set_device(i);
    launch_small(splits_kernel<>, static_cast<int>(b.split_words()), t.local(i).stream, algorithm,
                 "launch of splits_kernel", b.lo, b.sub, world, b.chunks, b.runs, lengths[static_cast<std::size_t>(i)], b.width,
                 status[static_cast<std::size_t>(i)], b.splits);
    send.push_back(b.splits);
    recv.push_back(b.splits_all);
  }
  t.allgather(send, recv, bufs.front().split_words() * sizeof(long long));
}

}  // namespace libmerge::detail::nccl_backend
