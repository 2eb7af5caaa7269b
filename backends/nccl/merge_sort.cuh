// Merge sort of data spread over the ranks of an NCCL communicator (one GPU a
// rank), with exactly balanced, stable output:
//
//   1. local sort      each rank sorts its shard with the CUDA merge sort
//   2. splitters       exact global splitters by a distributed co-rank search
//                      (Merge Path across ranks): rounds of one all-gather and
//                      one all-reduce of a few hundred bytes
//   3. exchange        one grouped ncclSend/ncclRecv all-to-all of the pieces
//   4. merge           each rank merges the sorted pieces it received (a tree
//                      of CUDA merges, lower ranks first, so ties stay stable)
//
// Global order is (key, rank, position): rank r ends with the elements of
// global positions [G_r, G_r + n_r), where n_r is its own shard's length and
// G_r the sum of the lower ranks' lengths. Boundary s (s = 1 .. world-1) cuts
// every rank q's sorted shard at S_q(s) = the number of q's elements among the
// first G_s; rank q sends [S_q(s), S_q(s+1)) to rank s.
//
// The splitter search. For a candidate c = (key x, rank q, position p), rank
// r's local count L_r(c) (its elements before c in global order) is p when
// r == q, lower_bound(x) when q < r (equal keys of r come after c) and
// upper_bound(x) when q > r; the all-reduce gives c's global position R(c).
// If R(c) < G_s, c lies in the first G_s, so S_r(s) >= L_r(c) (+1 if c is r's
// own); otherwise S_r(s) <= L_r(c). Each rank proposes `proposals` evenly
// spaced elements of its open interval [lo, hi] for each boundary, so its
// interval shrinks to 1/(proposals+1) each round: 7 rounds for shards of 2^32.
// Every rank sees the same candidates and counts, so they agree without a
// host round trip; the host waits twice a call (the headers, the splits).
//
// The host waits are where a failure elsewhere would show as a hang: they poll
// NCCL's asynchronous error and a timeout, and abort the communicator
// (transport.cuh). A rank that fails before any data moves (bad pointer, key
// type differing from the others', out of memory) still takes part in the
// header exchange with a failure flag, so every rank throws.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/detail/dispatch.hpp"
#include "../../libmerge/merge.hpp"
#include "../../libmerge/merge_sort.hpp"
#include "../../policies/cuda.hpp"
#include "../../policies/nccl.hpp"
#include "../cuda/backend.cuh"
#include "transport.cuh"

namespace libmerge::detail::nccl_backend {

// Elements each rank proposes for each boundary a round. More take fewer
// rounds (each a pair of collectives of a few microseconds) for larger
// messages: 31 gives 7 rounds for 2^32 elements a rank, and 4 ranks exchange
// 3 x 31 candidates each.
inline constexpr int proposals = 31;

template <class K, class V>
struct shard_view {
  K* keys;
  V* vals;  // null without values
  index_t n;
};

// What every rank tells the others before any data moves (all-gathered).
struct header {
  long long n;
  long long key_bytes, key_code;
  long long value_bytes, value_code;  // 0, 0 without values
  long long comp_code;
  long long failed;  // this rank failed before the exchange (its own exception says why)
};

// A type's identity across processes of one program: FNV-1a of its mangled
// name (the same in every rank of a build; differs for int vs unsigned, or
// lm::less vs lm::greater).
inline long long type_code(const char* name) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char* c = name; *c != '\0'; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  return static_cast<long long>(h);
}

// Host memory the device can copy to asynchronously (a pageable destination
// would make the copy wait on the host before the timeout could be checked).
// One buffer a thread, grown when a call needs more, kept: freeing pinned
// memory synchronizes the device.
inline void* pinned_staging(std::size_t bytes, const char* algorithm) {
  struct cache {
    void* p = nullptr;
    std::size_t bytes = 0;
    ~cache() {
      if (p != nullptr) cudaFreeHost(p);
    }
  };
  thread_local cache c;
  if (bytes > c.bytes) {
    if (c.p != nullptr) cudaFreeHost(c.p);
    c.p = nullptr;
    c.bytes = 0;
    check_cuda(cudaMallocHost(&c.p, bytes), algorithm, "cudaMallocHost (staging for the ranks' headers)");
    c.bytes = bytes;
  }
  return c.p;
}

// ---------------------------------------------------------------------------
// Kernels of the splitter search (a few hundred threads each).

// Boundary s's first interval for rank `rank` and its global target G_s:
// S_r(s) lies in [max(0, G_s - (N - n_r)), min(n_r, G_s)].
template <int = 0>
__global__ void init_intervals_kernel(const header* all, int world, int rank, long long* lo, long long* hi,
                                      long long* target) {
  const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b >= world - 1) return;
  long long g = 0, total = 0;
  for (int q = 0; q < world; ++q) {
    if (q <= b) g += all[q].n;
    total += all[q].n;
  }
  const long long n = all[rank].n;
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

// Narrows each boundary's interval with every candidate's global position.
template <int = 0>
__global__ void narrow_kernel(int world, int rank, int per_rank, const char* all, std::size_t block,
                              const unsigned long long* local, const unsigned long long* global, const long long* target,
                              long long* lo, long long* hi, int boundaries) {
  const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b >= boundaries) return;
  long long l = lo[b], h = hi[b];
  const unsigned long long g = static_cast<unsigned long long>(target[b]);
  for (int c = 0; c < world * per_rank; ++c) {
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
  // A comparator that is no strict weak ordering can cross the bounds; the
  // host's check of the splits reports it.
  lo[b] = l;
  hi[b] = h > l ? h : l;
}

// The rank's cuts [0, S(1), .., S(world-1), n].
template <int = 0>
__global__ void splits_kernel(const long long* lo, int world, long long n, long long* splits) {
  const int s = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (s > world) return;
  splits[s] = s == 0 ? 0 : (s == world ? n : lo[s - 1]);
}

template <class F, class... Args>
void launch_small(F kernel, int threads, cudaStream_t stream, const char* algorithm, Args... args) {
  if (threads <= 0) return;
  kernel<<<static_cast<unsigned>((threads + 127) / 128), 128, 0, stream>>>(args...);
  check_cuda(cudaGetLastError(), algorithm, "launching a splitter kernel");
}

// ---------------------------------------------------------------------------

inline std::size_t align16(std::size_t x) { return (x + 15) / 16 * 16; }

// Everything one local rank owns during the call.
template <class K, class V>
struct rank_state {
  int device = 0;
  cudaStream_t stream = nullptr;
  shard_view<K, V> shard{};
  std::exception_ptr error;  // what failed on this rank before the exchange
  // Small buffers (headers, candidates, counts, intervals, splits).
  std::optional<cuda_backend::temporary_storage<cuda::pool_allocator>> small, big;
  header* header_send = nullptr;
  header* header_all = nullptr;
  char* cand = nullptr;            // this rank's packed candidates
  char* cand_all = nullptr;        // every rank's
  unsigned long long* counts = nullptr;
  unsigned long long* counts_all = nullptr;
  long long *lo = nullptr, *hi = nullptr, *target = nullptr, *splits = nullptr, *splits_all = nullptr;
  // Large buffers: what the exchange receives, and a second buffer for the
  // merge tree when it has more than one level.
  K *recv_keys = nullptr, *tmp_keys = nullptr;
  V *recv_vals = nullptr, *tmp_vals = nullptr;

  ~rank_state() {
    // Temporary storage goes back on the rank's stream, with its device current.
    cudaSetDevice(device);
    big.reset();
    small.reset();
  }
};

// Rounds of the splitter search for shards of at most `longest` elements.
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

template <bool WithValues, class K, class V, class Comp>
void merge_tree(rank_state<K, V>& st, const std::vector<long long>& lengths, Comp comp) {
  // Runs in rank order; a level merges neighbours (lower ranks as A, which
  // wins ties: stability) and copies an odd one out. Levels alternate
  // between the two scratch buffers and end in the caller's buffer.
  struct run {
    long long at, n;
  };
  std::vector<run> runs;
  long long at = 0;
  for (long long len : lengths) {
    if (len > 0) runs.push_back({at, len});
    at += len;
  }
  const auto par = cuda::par.on(st.stream);
  int levels = 0;
  while ((std::size_t(1) << levels) < runs.size()) ++levels;
  K* from_k = st.recv_keys;
  V* from_v = st.recv_vals;
  auto copy_run = [&](K* to_k, V* to_v, const run& r) {
    check_cuda(cudaMemcpyAsync(to_k + r.at, from_k + r.at, static_cast<std::size_t>(r.n) * sizeof(K),
                               cudaMemcpyDeviceToDevice, st.stream),
               "merge_sort", "cudaMemcpyAsync (merge tree)");
    if constexpr (WithValues) {
      check_cuda(cudaMemcpyAsync(to_v + r.at, from_v + r.at, static_cast<std::size_t>(r.n) * sizeof(V),
                                 cudaMemcpyDeviceToDevice, st.stream),
                 "merge_sort", "cudaMemcpyAsync (merge tree)");
    }
  };
  if (levels == 0) {  // one piece (or none): it is the result
    for (const run& r : runs) copy_run(st.shard.keys, st.shard.vals, r);
    return;
  }
  for (int level = 1; level <= levels; ++level) {
    K* to_k = (levels - level) % 2 == 0 ? st.shard.keys : st.tmp_keys;
    V* to_v = (levels - level) % 2 == 0 ? st.shard.vals : st.tmp_vals;
    std::vector<run> next;
    for (std::size_t i = 0; i < runs.size(); i += 2) {
      if (i + 1 == runs.size()) {
        copy_run(to_k, to_v, runs[i]);
        next.push_back(runs[i]);
        continue;
      }
      const run& a = runs[i];
      const run& b = runs[i + 1];
      if constexpr (WithValues) {
        libmerge::merge_by_key(par, from_k + a.at, from_k + a.at + a.n, from_k + b.at, from_k + b.at + b.n, from_v + a.at,
                     from_v + b.at, to_k + a.at, to_v + a.at, comp);
      } else {
        libmerge::merge(par, from_k + a.at, from_k + a.at + a.n, from_k + b.at, from_k + b.at + b.n, to_k + a.at, comp);
      }
      next.push_back({a.at, a.n + b.n});
    }
    runs.swap(next);
    from_k = to_k;
    from_v = to_v;
  }
}

// Events a benchmark hands in (one row per local rank, made on its device) to
// time the phases: recorded on the rank's stream at the start, after the local
// sort, after the splitters, after the exchange and after the merge.
struct phase_marks {
  std::vector<std::vector<cudaEvent_t>> events;
};

// The sort of every shard this process drives (one per local rank of t).
template <bool WithValues, class K, class V, class Transport, class Comp>
void sort_shards(Transport& t, const std::vector<shard_view<K, V>>& shards, Comp comp, const char* algorithm,
                 phase_marks* marks = nullptr) {
  const int local = t.local_count();
  const int world = t.world();
  device_scope scope;
  auto mark = [&](int phase) {
    if (marks == nullptr) return;
    for (int i = 0; i < local; ++i) {
      scope.set(t.local(i).device, algorithm);
      check_cuda(cudaEventRecord(marks->events[static_cast<std::size_t>(i)][static_cast<std::size_t>(phase)],
                                 t.local(i).stream),
                 algorithm, "cudaEventRecord (phase mark)");
    }
  };
  mark(0);
  if (static_cast<int>(shards.size()) != local) {
    throw std::invalid_argument(std::string("libmerge::") + algorithm + ": one shard per local rank is needed");
  }

  // One rank: the single-GPU sort, nothing to exchange.
  if (world == 1) {
    const shard_view<K, V>& sh = shards[0];
    scope.set(t.local(0).device, algorithm);
    const auto par = cuda::par.on(t.local(0).stream);
    if constexpr (WithValues) {
      libmerge::merge_sort_by_key(par, sh.keys, sh.keys + sh.n, sh.vals, comp);
    } else {
      libmerge::merge_sort(par, sh.keys, sh.keys + sh.n, comp);
    }
    for (int phase = 1; phase <= 4; ++phase) mark(phase);
    return;
  }

  const int boundaries = world - 1;
  const int per_rank = boundaries * proposals;
  const std::size_t key_offset = align16(static_cast<std::size_t>(per_rank) * sizeof(long long));
  const std::size_t block = align16(key_offset + static_cast<std::size_t>(per_rank) * sizeof(K));
  const std::size_t all_candidates = static_cast<std::size_t>(world) * static_cast<std::size_t>(per_rank);

  // Host staging: each local rank's header to send, every rank's headers, and
  // the split matrix.
  const std::size_t stage_header = static_cast<std::size_t>(local) * sizeof(header);
  const std::size_t stage_all = static_cast<std::size_t>(local) * static_cast<std::size_t>(world) * sizeof(header);
  const std::size_t stage_splits =
      static_cast<std::size_t>(local) * static_cast<std::size_t>(world) * static_cast<std::size_t>(world + 1) *
      sizeof(long long);
  char* stage = static_cast<char*>(pinned_staging(stage_header + stage_all + stage_splits, algorithm));
  header* h_send = reinterpret_cast<header*>(stage);
  header* h_all = reinterpret_cast<header*>(stage + stage_header);
  long long* h_splits = reinterpret_cast<long long*>(stage + stage_header + stage_all);

  std::vector<rank_state<K, V>> st(static_cast<std::size_t>(local));

  // Small buffers first: without them a rank cannot even report a failure.
  for (int i = 0; i < local; ++i) {
    rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
    s.device = t.local(i).device;
    s.stream = t.local(i).stream;
    s.shard = shards[static_cast<std::size_t>(i)];
    scope.set(s.device, algorithm);
    const std::size_t sizes[] = {sizeof(header), static_cast<std::size_t>(world) * sizeof(header), block,
                                 static_cast<std::size_t>(world) * block, all_candidates * 8, all_candidates * 8,
                                 static_cast<std::size_t>(boundaries) * 8 * 3,
                                 static_cast<std::size_t>(world + 1) * 8,
                                 static_cast<std::size_t>(world) * static_cast<std::size_t>(world + 1) * 8};
    std::size_t total = 0;
    for (std::size_t b : sizes) total += align16(b);
    s.small.emplace(cuda::pool_allocator{}, s.stream, total, algorithm);
    char* p = s.small->template as<char>();
    auto take = [&](std::size_t b) {
      char* q = p;
      p += align16(b);
      return q;
    };
    s.header_send = reinterpret_cast<header*>(take(sizes[0]));
    s.header_all = reinterpret_cast<header*>(take(sizes[1]));
    s.cand = take(sizes[2]);
    s.cand_all = take(sizes[3]);
    s.counts = reinterpret_cast<unsigned long long*>(take(sizes[4]));
    s.counts_all = reinterpret_cast<unsigned long long*>(take(sizes[5]));
    s.lo = reinterpret_cast<long long*>(take(sizes[6]));
    s.hi = s.lo + boundaries;
    s.target = s.hi + boundaries;
    s.splits = reinterpret_cast<long long*>(take(sizes[7]));
    s.splits_all = reinterpret_cast<long long*>(take(sizes[8]));
  }

  // 1. Local sort and the exchange's buffers; a failure is reported to every
  // rank through the headers instead of being thrown here.
  std::vector<long long> longest_runs;
  for (int i = 0; i < local; ++i) {
    rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
    header& h = h_send[i];
    h = header{s.shard.n, static_cast<long long>(sizeof(K)), type_code(typeid(K).name()),
               WithValues ? static_cast<long long>(sizeof(V)) : 0, WithValues ? type_code(typeid(V).name()) : 0,
               type_code(typeid(Comp).name()), 0};
    try {
      scope.set(s.device, algorithm);
      int stream_device = 0;
      check_cuda(cudaStreamGetDevice(s.stream, &stream_device), algorithm, "cudaStreamGetDevice");
      if (stream_device != s.device) {
        throw std::invalid_argument(std::string("libmerge::") + algorithm + ": the stream is of device " +
                                    std::to_string(stream_device) + ", the communicator's device is " +
                                    std::to_string(s.device));
      }
      const cuda_backend::device_info& dev = cuda_backend::current_device(algorithm);
      if (s.shard.n > 0) {
        s.shard.keys = cuda_backend::device_pointer(s.shard.keys, dev, algorithm, WithValues ? "keys_first" : "first");
        if constexpr (WithValues) s.shard.vals = cuda_backend::device_pointer(s.shard.vals, dev, algorithm, "values_first");
      }
      const auto par = cuda::par.on(s.stream);
      if constexpr (WithValues) {
        libmerge::merge_sort_by_key(par, s.shard.keys, s.shard.keys + s.shard.n, s.shard.vals, comp);
      } else {
        libmerge::merge_sort(par, s.shard.keys, s.shard.keys + s.shard.n, comp);
      }
      // The merge tree needs a second buffer only with more than two pieces.
      const std::size_t n = static_cast<std::size_t>(s.shard.n);
      const std::size_t one = align16(n * sizeof(K)) + (WithValues ? align16(n * sizeof(V)) : 0);
      const std::size_t copies = world > 2 ? 2 : 1;
      if (n > 0) {
        s.big.emplace(cuda::pool_allocator{}, s.stream, one * copies, algorithm);
        char* p = s.big->template as<char>();
        s.recv_keys = reinterpret_cast<K*>(p);
        if constexpr (WithValues) s.recv_vals = reinterpret_cast<V*>(p + align16(n * sizeof(K)));
        if (copies == 2) {
          s.tmp_keys = reinterpret_cast<K*>(p + one);
          if constexpr (WithValues) s.tmp_vals = reinterpret_cast<V*>(p + one + align16(n * sizeof(K)));
        }
      }
    } catch (...) {
      s.error = std::current_exception();
      h.failed = 1;
    }
  }

  mark(1);

  // A failure with collectives outstanding (a CUDA or NCCL error from here on
  // that not every rank sees alike) aborts the communicators, so that the
  // other ranks' operations fail instead of waiting for ever. The checks that
  // every rank makes alike (headers, splits) throw outside these blocks and
  // leave the communicators usable.
  auto collective = [&](auto&& steps) {
    try {
      steps();
    } catch (...) {
      t.abort_all();
      throw;
    }
  };

  // 2. Headers: lengths, types, failures.
  collective([&] {
    std::vector<const void*> send;
    std::vector<void*> recv;
    for (int i = 0; i < local; ++i) {
      rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
      scope.set(s.device, algorithm);
      check_cuda(cudaMemcpyAsync(s.header_send, &h_send[i], sizeof(header), cudaMemcpyHostToDevice, s.stream),
                 algorithm, "cudaMemcpyAsync (header)");
      send.push_back(s.header_send);
      recv.push_back(s.header_all);
    }
    t.allgather(send, recv, sizeof(header));
    for (int i = 0; i < local; ++i) {
      rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
      scope.set(s.device, algorithm);
      check_cuda(cudaMemcpyAsync(h_all + static_cast<std::size_t>(i) * static_cast<std::size_t>(world), s.header_all,
                                 static_cast<std::size_t>(world) * sizeof(header), cudaMemcpyDeviceToHost, s.stream),
                 algorithm, "cudaMemcpyAsync (headers)");
    }
    t.wait_all();
  });
  const header* all = h_all;  // every local rank received the same
  for (int i = 0; i < local; ++i) {
    if (st[static_cast<std::size_t>(i)].error) std::rethrow_exception(st[static_cast<std::size_t>(i)].error);
  }
  for (int q = 0; q < world; ++q) {
    const std::string who = std::string("libmerge::") + algorithm + ": rank " + std::to_string(q);
    if (all[q].failed) throw std::runtime_error(who + " failed before the exchange (its exception says why)");
    if (all[q].key_bytes != all[0].key_bytes || all[q].key_code != all[0].key_code) {
      throw std::invalid_argument(who + " passed keys of another type than rank 0's");
    }
    if (all[q].value_bytes != all[0].value_bytes || all[q].value_code != all[0].value_code) {
      throw std::invalid_argument(who + " passed values of another type than rank 0's (or keys only)");
    }
    if (all[q].comp_code != all[0].comp_code) {
      throw std::invalid_argument(who + " passed a comparator of another type than rank 0's");
    }
    if (all[q].n < 0) throw std::invalid_argument(who + " passed a negative length");
  }
  long long longest = 0;
  for (int q = 0; q < world; ++q) longest = std::max(longest, all[q].n);

  // 3. Splitters, and 4. every rank's cuts to every host.
  collective([&] {
    for (int i = 0; i < local; ++i) {
      rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
      scope.set(s.device, algorithm);
      launch_small(init_intervals_kernel<>, boundaries, s.stream, algorithm, s.header_all, world, t.local(i).rank,
                   s.lo, s.hi, s.target);
    }
    const int rounds = splitter_rounds(longest);
    for (int round = 0; round < rounds; ++round) {
      std::vector<const void*> send;
      std::vector<void*> recv;
      for (int i = 0; i < local; ++i) {
        rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
        scope.set(s.device, algorithm);
        launch_small(propose_kernel<K>, per_rank, s.stream, algorithm, const_cast<const K*>(s.shard.keys),
                     const_cast<const long long*>(s.lo), const_cast<const long long*>(s.hi), boundaries,
                     reinterpret_cast<long long*>(s.cand), reinterpret_cast<K*>(s.cand + key_offset));
        send.push_back(s.cand);
        recv.push_back(s.cand_all);
      }
      t.allgather(send, recv, block);
      std::vector<const unsigned long long*> csend;
      std::vector<unsigned long long*> crecv;
      for (int i = 0; i < local; ++i) {
        rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
        scope.set(s.device, algorithm);
        launch_small(count_kernel<K, Comp>, static_cast<int>(all_candidates), s.stream, algorithm,
                     const_cast<const K*>(s.shard.keys), static_cast<long long>(s.shard.n), t.local(i).rank, world,
                     per_rank, const_cast<const char*>(s.cand_all), block, key_offset, s.counts, comp);
        csend.push_back(s.counts);
        crecv.push_back(s.counts_all);
      }
      t.allreduce_sum(csend, crecv, all_candidates);
      for (int i = 0; i < local; ++i) {
        rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
        scope.set(s.device, algorithm);
        launch_small(narrow_kernel<>, boundaries, s.stream, algorithm, world, t.local(i).rank, per_rank,
                     const_cast<const char*>(s.cand_all), block, const_cast<const unsigned long long*>(s.counts),
                     const_cast<const unsigned long long*>(s.counts_all), const_cast<const long long*>(s.target), s.lo,
                     s.hi, boundaries);
      }
    }

    {
      std::vector<const void*> send;
      std::vector<void*> recv;
      for (int i = 0; i < local; ++i) {
        rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
        scope.set(s.device, algorithm);
        launch_small(splits_kernel<>, world + 1, s.stream, algorithm, const_cast<const long long*>(s.lo), world,
                     static_cast<long long>(s.shard.n), s.splits);
        send.push_back(s.splits);
        recv.push_back(s.splits_all);
      }
      t.allgather(send, recv, static_cast<std::size_t>(world + 1) * sizeof(long long));
      for (int i = 0; i < local; ++i) {
        rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
        scope.set(s.device, algorithm);
        const std::size_t count = static_cast<std::size_t>(world) * static_cast<std::size_t>(world + 1);
        check_cuda(cudaMemcpyAsync(h_splits + static_cast<std::size_t>(i) * count, s.splits_all,
                                   count * sizeof(long long), cudaMemcpyDeviceToHost, s.stream),
                   algorithm, "cudaMemcpyAsync (splits)");
      }
      t.wait_all();
    }
  });
  // cut(q, s) = S_q(s). Every rank holds the same matrix, so every rank finds
  // the same fault, if any.
  auto cut = [&](int q, int s) { return h_splits[static_cast<std::size_t>(q) * static_cast<std::size_t>(world + 1) + static_cast<std::size_t>(s)]; };
  {
    long long g = 0;
    for (int s = 0; s <= world; ++s) {
      long long sum = 0;
      for (int q = 0; q < world; ++q) {
        sum += cut(q, s);
        const bool ordered = s == 0 || cut(q, s) >= cut(q, s - 1);
        if (!ordered || cut(q, s) < 0 || cut(q, s) > all[q].n) sum = -1;
      }
      if (sum != g) {
        throw std::runtime_error(std::string("libmerge::") + algorithm +
                                 ": the ranks' splitters do not add up: the comparator is not a strict weak "
                                 "ordering, or the ranks passed different data types or comparators");
      }
      if (s < world) g += all[s].n;
    }
  }

  mark(2);

  // 5. Exchange: rank r sends [S_r(s), S_r(s+1)) to rank s and receives
  // rank q's [S_q(r), S_q(r+1)) after the lower ranks' pieces.
  auto exchange = [&](auto member_ptr, std::size_t bytes, auto recv_ptr) {
    std::vector<const char*> send;
    std::vector<char*> recv;
    std::vector<pieces> out(static_cast<std::size_t>(local)), in(static_cast<std::size_t>(local));
    for (int i = 0; i < local; ++i) {
      rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
      const int r = t.local(i).rank;
      pieces& o = out[static_cast<std::size_t>(i)];
      pieces& n = in[static_cast<std::size_t>(i)];
      std::size_t at = 0;
      for (int q = 0; q < world; ++q) {
        o.offset.push_back(static_cast<std::size_t>(cut(r, q)) * bytes);
        o.bytes.push_back(static_cast<std::size_t>(cut(r, q + 1) - cut(r, q)) * bytes);
        n.offset.push_back(at);
        n.bytes.push_back(static_cast<std::size_t>(cut(q, r + 1) - cut(q, r)) * bytes);
        at += n.bytes.back();
      }
      const char* from = reinterpret_cast<const char*>(s.shard.*member_ptr);
      char* to = reinterpret_cast<char*>(s.*recv_ptr);
      const std::size_t self = static_cast<std::size_t>(r);
      if (n.bytes[self] > 0) {
        scope.set(s.device, algorithm);
        check_cuda(cudaMemcpyAsync(to + n.offset[self], from + o.offset[self], n.bytes[self],
                                   cudaMemcpyDeviceToDevice, s.stream),
                   algorithm, "cudaMemcpyAsync (the rank's own piece)");
      }
      send.push_back(from);
      recv.push_back(to);
    }
    t.exchange(send, out, recv, in);
  };
  collective([&] {
    t.grouped([&] {  // keys and values in one all-to-all
      exchange(&shard_view<K, V>::keys, sizeof(K), &rank_state<K, V>::recv_keys);
      if constexpr (WithValues) exchange(&shard_view<K, V>::vals, sizeof(V), &rank_state<K, V>::recv_vals);
    });
    mark(3);

    // 6. Merge what each rank received.
    for (int i = 0; i < local; ++i) {
      rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
      const int r = t.local(i).rank;
      std::vector<long long> lengths;
      for (int q = 0; q < world; ++q) lengths.push_back(cut(q, r + 1) - cut(q, r));
      scope.set(s.device, algorithm);
      merge_tree<WithValues>(s, lengths, comp);
    }
    mark(4);
  });
}

}  // namespace libmerge::detail::nccl_backend

namespace libmerge::detail {

// lm::merge_sort / merge_sort_by_key with lm::nccl::par(comm, stream).
template <>
struct backend_impl<algo::merge_sort, backend::nccl> {
  static constexpr bool available = true;

  template <class KeysIt, class ValsIn, class ValsOut, class Comp>
  static void run(const nccl::policy& policy, KeysIt keys, index_t n, ValsIn, ValsOut vals, Comp comp) {
    static_assert(std::is_same_v<ValsIn, ValsOut>,
                  "libmerge::merge_sort_indices is not available on lm::nccl::par: sort (key, index) pairs with "
                  "merge_sort_by_key instead");
    constexpr bool with_values = has_values<ValsOut>;
    const char* algorithm = with_values ? "merge_sort_by_key" : "merge_sort";
    auto k = thrust::try_unwrap_contiguous_iterator(keys);
    static_assert(std::is_pointer_v<decltype(k)>,
                  "libmerge::merge_sort (NCCL backend): keys must be contiguous device memory (a raw pointer, "
                  "thrust::device_ptr or a thrust::device_vector iterator)");
    using K = std::remove_pointer_t<decltype(k)>;
    if constexpr (with_values) {
      auto v = thrust::try_unwrap_contiguous_iterator(vals);
      static_assert(std::is_pointer_v<decltype(v)>,
                    "libmerge::merge_sort_by_key (NCCL backend): values must be contiguous device memory");
      using V = std::remove_pointer_t<decltype(v)>;
      nccl_backend::nccl_transport t({policy.comm()}, {policy.stream()}, policy.timeout_seconds(), algorithm);
      nccl_backend::sort_shards<true, K, V>(t, {nccl_backend::shard_view<K, V>{k, v, n}}, comp, algorithm);
    } else {
      nccl_backend::nccl_transport t({policy.comm()}, {policy.stream()}, policy.timeout_seconds(), algorithm);
      nccl_backend::sort_shards<false, K, char>(t, {nccl_backend::shard_view<K, char>{k, nullptr, n}}, comp,
                                                algorithm);
    }
  }
};

}  // namespace libmerge::detail
