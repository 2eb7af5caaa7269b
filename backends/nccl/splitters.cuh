// The exact splitters of the sort across GPUs: a distributed co-rank search
// (Merge Path across ranks). Every rank's shard is sorted; boundary s
// (s = 1 .. world-1) cuts every rank q's shard at S_q(s) = the number of q's
// elements among the first G_s of the global order (key, rank, position),
// G_s the sum of the lengths of ranks below s.
//
// For a candidate c = (key x, rank q, position p), rank r's local count
// L_r(c) (its elements before c in global order) is p when r == q,
// lower_bound(x) when q < r (equal keys of r come after c) and upper_bound(x)
// when q > r; the all-reduce gives c's global position R(c). If R(c) < G_s,
// c lies in the first G_s, so S_r(s) >= L_r(c) (+1 if c is r's own);
// otherwise S_r(s) <= L_r(c). Each rank proposes `proposals` evenly spaced
// elements of its open interval [lo, hi] for each boundary, so its interval
// shrinks to 1/(proposals+1) each round: 5 rounds for shards of 2^32. Every
// rank sees the same candidates and counts, so they agree without a host
// round trip. Each round is one all-gather and one all-reduce of a few
// hundred bytes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include <cub/block/block_reduce.cuh>

#include "../../libmerge/detail/config.hpp"
#include "../cuda/launch.cuh"

namespace libmerge::detail::nccl_backend {

// Elements each rank proposes for each boundary a round. More take fewer
// rounds (each a pair of collectives, tens of microseconds with 4 GPUs) for
// larger messages (still latency-bound) and more work for count_kernel (a
// binary search a candidate): 127 gives 4 rounds for 2^28 elements a rank and
// 5 for 2^32, where 31 gave 6 and 7; 4 ranks exchange 3 x 127 candidates
// each.
inline constexpr int proposals = 127;

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

// Kernels of the search (a few hundred threads each).

// Boundary s's first interval for rank `rank` and its global target G_s:
// S_r(s) lies in [max(0, G_s - (N - n_r)), min(n_r, G_s)].
template <int = 0>
__global__ void init_intervals_kernel(const long long* lengths, int stride, int world, int rank, long long* lo,
                                      long long* hi, long long* target) {
  const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b >= world - 1) return;
  long long g = 0, total = 0;
  for (int q = 0; q < world; ++q) {
    if (q <= b) g += lengths[q * stride];
    total += lengths[q * stride];
  }
  const long long n = lengths[rank * stride];
  const long long others = total - n;
  lo[b] = g - others > 0 ? g - others : 0;
  hi[b] = g < n ? g : n;
  target[b] = g;
}

// Rank's proposals for every boundary: `proposals` evenly spaced positions of
// [lo, hi) (all of them once the interval is that short; -1 where none).
template <class K>
__global__ void propose_kernel(const K* keys, const long long* lo, const long long* hi, int boundaries,
                               long long* cand_pos, K* cand_keys) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= boundaries * proposals) return;
  const int b = c / proposals, j = c % proposals;
  const long long l = lo[b], m = hi[b] - l;
  long long p = -1;
  if (m > proposals) {
    p = l + static_cast<long long>((static_cast<unsigned long long>(j + 1) * static_cast<unsigned long long>(m)) /
                                   (proposals + 1));
  } else if (j < m) {
    p = l + j;
  }
  cand_pos[c] = p;
  if (p >= 0) cand_keys[c] = keys[p];
}

// This rank's count L_r(c) of every rank's candidates (see the top of the
// file). `block` is one rank's packed candidates: positions, then keys at
// key_offset.
template <class K, class Comp>
__global__ void count_kernel(const K* keys, long long n, int rank, int world, int per_rank, const char* all,
                             std::size_t block, std::size_t key_offset, unsigned long long* counts, Comp comp) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= world * per_rank) return;
  const int q = c / per_rank, j = c % per_rank;
  const char* from = all + static_cast<std::size_t>(q) * block;
  const long long p = reinterpret_cast<const long long*>(from)[j];
  if (p < 0) {
    counts[c] = 0;
    return;
  }
  if (q == rank) {
    counts[c] = static_cast<unsigned long long>(p);
    return;
  }
  const K x = reinterpret_cast<const K*>(from + key_offset)[j];
  long long first = 0, len = n;
  while (len > 0) {
    const long long half = len / 2;
    const bool before = q < rank ? comp(keys[first + half], x) : !comp(x, keys[first + half]);
    if (before) {
      first += half + 1;
      len -= half + 1;
    } else {
      len = half;
    }
  }
  counts[c] = static_cast<unsigned long long>(first);
}

// Narrows each boundary's interval with every candidate's global position:
// a block a boundary, its threads over the candidates, the tightest bounds by
// a block reduction. (One thread a boundary, reading every candidate in turn,
// was bound by the loads' latency: about 0.1 ms a round for 4 ranks of 93
// candidates each, most of the 0.87 ms of splitters on 4 H200s.)
inline constexpr int narrow_threads = 128;

struct max_of {
  __device__ long long operator()(long long a, long long b) const { return a > b ? a : b; }
};
struct min_of {
  __device__ long long operator()(long long a, long long b) const { return a < b ? a : b; }
};

template <int NT = narrow_threads>
__global__ void __launch_bounds__(NT)
    narrow_kernel(int world, int rank, int per_rank, const char* all, std::size_t block,
                  const unsigned long long* local, const unsigned long long* global, const long long* target,
                  long long* lo, long long* hi) {
  using reduce = cub::BlockReduce<long long, NT>;
  __shared__ typename reduce::TempStorage low_storage, high_storage;
  const int b = static_cast<int>(blockIdx.x);
  long long l = lo[b], h = hi[b];
  const unsigned long long g = static_cast<unsigned long long>(target[b]);
  for (int c = static_cast<int>(threadIdx.x); c < world * per_rank; c += NT) {
    const int q = c / per_rank;
    const long long p = reinterpret_cast<const long long*>(all + static_cast<std::size_t>(q) * block)[c % per_rank];
    if (p < 0) continue;
    const long long count = static_cast<long long>(local[c]);
    if (global[c] < g) {
      const long long at_least = count + (q == rank ? 1 : 0);
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
    lo[b] = l;
    hi[b] = h > l ? h : l;
  }
}

// The rank's cuts [0, S(1), .., S(world-1), n], then its status (non-zero:
// this rank failed after the headers, in its local sort or allocating the
// exchange's buffers).
template <int = 0>
__global__ void splits_kernel(const long long* lo, int world, long long n, long long status, long long* splits) {
  const int s = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (s > world + 1) return;
  splits[s] = s == 0 ? 0 : (s == world ? n : (s == world + 1 ? status : lo[s - 1]));
}


// One rank's device buffers of the search, carved from one allocation (see
// bytes()): its packed candidates (positions, then keys at key_offset), every
// rank's, the local and global counts, the intervals and targets, and the
// cuts with a status word, its own and every rank's.
template <class K>
struct splitter_buffers {
  int world = 0;
  char* cand = nullptr;
  char* cand_all = nullptr;
  unsigned long long* counts = nullptr;
  unsigned long long* counts_all = nullptr;
  long long *lo = nullptr, *hi = nullptr, *target = nullptr;
  long long* splits = nullptr;      // world + 2 words
  long long* splits_all = nullptr;  // world x (world + 2)

  int boundaries() const { return world - 1; }
  int per_rank() const { return boundaries() * proposals; }
  std::size_t key_offset() const { return align16(static_cast<std::size_t>(per_rank()) * sizeof(long long)); }
  std::size_t block() const { return align16(key_offset() + static_cast<std::size_t>(per_rank()) * sizeof(K)); }
  std::size_t all_candidates() const { return static_cast<std::size_t>(world) * static_cast<std::size_t>(per_rank()); }
  std::size_t split_words() const { return static_cast<std::size_t>(world) + 2; }

  std::vector<std::size_t> sizes() const {
    return {block(), static_cast<std::size_t>(world) * block(), all_candidates() * 8, all_candidates() * 8,
            static_cast<std::size_t>(boundaries()) * 8 * 3, split_words() * 8,
            static_cast<std::size_t>(world) * split_words() * 8};
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
    counts_all = reinterpret_cast<unsigned long long*>(take(3));
    lo = reinterpret_cast<long long*>(take(4));
    hi = lo + boundaries();
    target = hi + boundaries();
    splits = reinterpret_cast<long long*>(take(5));
    splits_all = reinterpret_cast<long long*>(take(6));
  }
};

template <class... Params, class... Args>
void launch_small(void (*kernel)(Params...), int threads, cudaStream_t stream, const char* algorithm,
                  const char* what, Args&&... args) {
  cuda_backend::launch_with(nullptr, kernel, static_cast<index_t>((threads + 127) / 128), 128, 0, stream, algorithm,
                            what, std::forward<Args>(args)...);
}

// One rank of the search: what it does on its stream, between the
// collectives (the caller runs those over every local rank).
struct splitter_rank {
  const void* keys;  // the sorted shard
  long long n;
  int rank;
  cudaStream_t stream;
};

// The search over every local rank of transport t, then every rank's cuts
// and status all-gathered into splits_all (ready on each rank's stream).
// all_lengths[i]: every rank's length as local rank i holds them on its
// device, one every `stride` words (the all-gathered headers).
// set_device(i) makes local rank i's device current.
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
    launch_small(init_intervals_kernel<>, boundaries, t.local(i).stream, algorithm, "launch of init_intervals_kernel",
                 all_lengths[static_cast<std::size_t>(i)], stride, world, t.local(i).rank, b.lo, b.hi, b.target);
  }
  const int rounds = splitter_rounds(longest);
  for (int round = 0; round < rounds; ++round) {
    std::vector<const void*> send;
    std::vector<void*> recv;
    for (int i = 0; i < local; ++i) {
      splitter_buffers<K>& b = bufs[static_cast<std::size_t>(i)];
      set_device(i);
      launch_small(propose_kernel<K>, b.per_rank(), t.local(i).stream, algorithm, "launch of propose_kernel",
                   keys[static_cast<std::size_t>(i)], b.lo, b.hi, boundaries, reinterpret_cast<long long*>(b.cand),
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
                   t.local(i).rank, world, b.per_rank(), b.cand_all, b.block(), b.key_offset(), b.counts, comp);
      csend.push_back(b.counts);
      crecv.push_back(b.counts_all);
    }
    t.allreduce_sum(csend, crecv, bufs.front().all_candidates());
    for (int i = 0; i < local; ++i) {
      splitter_buffers<K>& b = bufs[static_cast<std::size_t>(i)];
      set_device(i);
      cuda_backend::launch_with(nullptr, narrow_kernel<>, boundaries, narrow_threads, 0, t.local(i).stream,
                                algorithm, "launch of narrow_kernel", world, t.local(i).rank, b.per_rank(),
                                b.cand_all, b.block(), b.counts, b.counts_all, b.target, b.lo, b.hi);
    }
  }
  std::vector<const void*> send;
  std::vector<void*> recv;
  for (int i = 0; i < local; ++i) {
    splitter_buffers<K>& b = bufs[static_cast<std::size_t>(i)];
    set_device(i);
    launch_small(splits_kernel<>, world + 2, t.local(i).stream, algorithm, "launch of splits_kernel", b.lo, world,
                 lengths[static_cast<std::size_t>(i)], status[static_cast<std::size_t>(i)], b.splits);
    send.push_back(b.splits);
    recv.push_back(b.splits_all);
  }
  t.allgather(send, recv, bufs.front().split_words() * sizeof(long long));
}

}  // namespace libmerge::detail::nccl_backend
