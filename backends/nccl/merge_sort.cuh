// Merge sort of data spread over the ranks of an NCCL communicator (one GPU a
// rank), with exactly balanced, stable output. One call, every rank:
//
//   1. headers      an all-gather of each rank's length, key/value/comparator
//                   types and any failure so far; host wait 1: every rank
//                   checks every header and all throw alike, before any rank
//                   touches its shard
//   2. local sort   each rank sorts its shard with the CUDA merge sort into
//                   a buffer of its own (its runs): one sorted run, or on 2
//                   GPUs two, the last merge level left out where that saves
//                   a pass (the receiving rank's 4-way merge makes it); on 2
//                   GPUs the two runs as two sorts, and while the second
//                   sorts the early round moves the first runs' pieces by a
//                   search over the first runs alone (early_round)
//   3. splitters    exact global splitters by a distributed co-rank search
//                   over every rank's runs (splitters.cuh), and the cuts of
//                   each rank's output into chunks, then an all-gather of
//                   every rank's cuts and status; host wait 2
//   4. exchange     a round a chunk (as many as GPUs up to 4, fewer where
//                   the longest shard would give a round under 2^22
//                   elements; each chunk 0.8 times the one before on 2
//                   GPUs, 0.6 on more; after an early round 4 equal
//                   rounds, each with what did not come early), each an NCCL
//                   group of ncclSend/ncclRecv for keys and values on a
//                   stream of the rank's own of the highest priority, each
//                   piece moved on 256-byte boundaries (wire()) from the runs
//                   into the receiver's slots; a rank's own pieces stay where
//                   its local sort left them
//   5. merge        each rank merges a chunk's pieces (in rank and run order,
//                   so ties stay stable) into its shard on its stream once the
//                   chunk has arrived, while the next travels: one 4-way pass
//                   for 3 or 4 pieces (merge_four), else a copy, a merge or a
//                   tree of merges; host wait 3: the call returns when the
//                   sort is done, as thrust::sort does
//
// Global order is (key, rank, position): rank r ends with the elements of
// global positions [G_r, G_r + n_r), where n_r is its own shard's length and
// G_r the sum of the lower ranks' lengths. Boundary s (s = 1 .. world-1) cuts
// every rank q's sorted shard at S_q(s) = the number of q's elements among the
// first G_s; rank q sends [S_q(s), S_q(s+1)) to rank s, cut further into
// chunks at prefixes of the global order between them.
//
// Failures. Whatever fails on one rank must reach the others, or they wait:
//  - before the headers (a host or null pointer, a stream of another device,
//    a shard missing, no staging memory): the rank still sends its header,
//    flagged with its message; every rank throws before sorting anything;
//  - after them (the local sort, the exchange's buffers and stream): the
//    rank still takes part in the search and flags its status beside its
//    cuts; every rank throws before anything is exchanged;
//  - a rank that never comes, or dies: the transport's deadline (.timeout)
//    covers the whole call, waits inside NCCL included (transport.cuh).
// From the local sort on the shard is the sort's scratch; whatever fails
// after the headers, each rank gets its own elements back, sorted
// (restore_shard, from its runs), unless the device itself failed: no rank
// returns before every rank has queued its merges (a word all-reduced
// behind them), so a rank whose merge cannot get its temporary storage
// leaves its peers waiting there until they fail and restore theirs too.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
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
#include "splitters.cuh"
#include "transport.cuh"

namespace libmerge::detail::nccl_backend {

// The single-GPU policy each rank's kernels run with (on the rank's stream).
using local_policy = cuda::policy<>;

template <class K, class V>
struct shard_view {
  K* keys;
  V* vals;  // null without values
  index_t n;
};

// What every rank tells the others before any data moves (all-gathered).
struct header {
  long long n;  // first: the splitter search reads the lengths in place
  long long key_bytes, key_code;
  long long value_bytes, value_code;  // 0, 0 without values
  long long comp_code;
  long long failed;    // this rank failed before the headers
  long long four_way;  // merge_four is there for these types on its device
  long long half;      // W of its local sort's two runs [0, W) and [W, n) on 2 GPUs, else 0 (early_round)
  char reason[184];    // the start of its message
};
static_assert(sizeof(header) == 256, "headers travel as 256-byte records");

// A type's identity across processes of one program: FNV-1a of its mangled
// name (the same in every rank of a build; differs for int vs unsigned, or
// lm::less vs lm::greater).
inline long long type_code(const char* name) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char* c = name; *c != '\0'; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  return static_cast<long long>(h);
}

// Host memory for what the ranks' streams copy back (headers, cuts): pinned,
// so that the copies stay asynchronous and the host polls them against the
// deadline. One buffer a thread, grown when a call needs more, kept: freeing
// pinned memory synchronizes the device. Where none can be pinned, pageable
// memory: the copies then block the host, still bounded by the deadline (the
// watchdog's revoke stops the NCCL kernels they wait behind).
class host_staging {
 public:
  explicit host_staging(std::size_t bytes) {
    thread_local cache c;
    if (bytes > c.bytes) {
      if (c.p != nullptr) cudaFreeHost(c.p);
      c.p = nullptr;
      c.bytes = 0;
      if (cudaMallocHost(&c.p, bytes) == cudaSuccess) {
        c.bytes = bytes;
      } else {
        cudaGetLastError();  // not sticky: leave no stale error behind
        c.p = nullptr;
      }
    }
    if (c.p != nullptr) {
      p_ = static_cast<char*>(c.p);
    } else {
      fallback_.resize(bytes);
      p_ = fallback_.data();
    }
  }
  char* data() const { return p_; }

 private:
  struct cache {
    void* p = nullptr;
    std::size_t bytes = 0;
    ~cache() {
      if (p != nullptr) cudaFreeHost(p);
    }
  };
  std::vector<char> fallback_;
  char* p_ = nullptr;
};

// How piece [a, b) of a sender's runs (elements of `size` bytes, n of them,
// the array on a wire_align boundary) travels: the sender sends bytes
// [lo, hi) of its array, moved out to wire_align boundaries as far as the
// array allows, and the piece starts `head` bytes past lo. NCCL copies
// buffers aligned to 16 bytes 16 bytes a load and others an element (here a
// byte) at a time, and cuts fall anywhere: with pieces on 16-byte boundaries
// alone, 2^30 int32 keys on 2 H200s exchanged in 1.25x the time of a plain
// all-to-all of the same bytes (was 1.8x). The receiver puts the piece where
// lo lands on a 16-byte boundary too (plan_pieces).
inline constexpr std::size_t wire_align = 256;
inline std::size_t align_wire(std::size_t x) { return (x + wire_align - 1) / wire_align * wire_align; }

struct wire_piece {
  std::size_t lo = 0, hi = 0, head = 0;
};
inline wire_piece wire(long long a, long long b, std::size_t size, long long n) {
  if (b <= a) return {};
  const std::size_t begin = static_cast<std::size_t>(a) * size, end = static_cast<std::size_t>(b) * size;
  const std::size_t total = static_cast<std::size_t>(n) * size;
  wire_piece w;
  w.lo = begin / wire_align * wire_align;
  w.hi = std::min(align_wire(end), total);
  w.head = begin - w.lo;
  return w;
}

// Every local rank's part of a call.
template <class K, class V>
struct rank_state {
  int device = 0;
  int rank = 0;
  cudaStream_t stream = nullptr;
  shard_view<K, V> shard{};
  std::exception_ptr error;  // what failed on this rank (reported to the others)
  std::optional<cuda_backend::temporary_storage<cuda::pool_allocator>> small, big;
  header* header_send = nullptr;
  header* header_all = nullptr;
  // A word each rank all-reduces behind its merges (sort_shards, step 5).
  unsigned long long* done_send = nullptr;
  unsigned long long* done_all = nullptr;
  splitter_buffers<K> search;
  splitter_buffers<K> early_search;  // the early round's, over the first runs alone (early_round)
  // `big` holds the keys' array, then the values': the local sort's runs
  // (elements [0, n): what the rank sends, and its own pieces, which never
  // move) and after them the slots the exchange receives into (from element
  // n on), at element offsets that are the same in both arrays (plan_pieces), so
  // that one 4-way merge reads keys and values of every piece at the same
  // offsets.
  K* keys = nullptr;
  V* vals = nullptr;
  K* tmp_keys = nullptr;  // the merge tree's second buffer (more than two pieces, no merge_four)
  V* tmp_vals = nullptr;
  bool sorted = false;  // the runs hold the rank's shard, sorted (restore_shard)
  // The early round (plan.early): the first run [0, half) sorted on its own
  // before the second (restore_shard), and where each peer q's first run is
  // mirrored in keys/vals (mirror[q]; -1 for the rank itself): its pieces
  // land there at their own offsets, early or later (layout_early).
  long long half = 0;
  bool first_sorted = false;
  std::vector<long long> mirror;
  long long slots = 0;  // where the second runs' pieces start (layout_early)
  // A stream of the rank's device (for a rank whose own stream is of another
  // device: it still reports to the others).
  cudaStream_t side = nullptr;
  // The exchange's stream (of the device's highest priority) and its events:
  // [0] the runs are ready (on `stream`), [1 + c] chunk c has arrived; with
  // the early round two more: the first run sorted, the early round arrived.
  cudaStream_t exchange_stream = nullptr;
  std::vector<cudaEvent_t> events;
  cudaEvent_t first_run = nullptr, early_done = nullptr;  // (also in events)

  rank_state() = default;
  rank_state(const rank_state&) = delete;
  rank_state& operator=(const rank_state&) = delete;
  ~rank_state() {
    // Temporary storage goes back on the rank's stream, with its device current.
    // (before the side stream, which is `stream` for a rank whose own
    // stream was of another device).
    cudaSetDevice(device);
    // (The exchange reads and writes `big`: done, or stopped by an abort.)
    if (exchange_stream != nullptr) cudaStreamSynchronize(exchange_stream);
    big.reset();
    small.reset();
    if (side != nullptr) cudaStreamDestroy(side);
    if (exchange_stream != nullptr) cudaStreamDestroy(exchange_stream);
    for (cudaEvent_t e : events) cudaEventDestroy(e);
  }
};

// Events a benchmark hands in (one row per local rank, made on its device) to
// time the phases: recorded on the rank's stream at the start, after the local
// sort, after the splitters, after the exchange's last chunk (on the
// exchange's stream: the merges of the earlier chunks overlap the exchange)
// and after the merge.
struct phase_marks {
  std::vector<std::vector<cudaEvent_t>> events;
};

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

// The host's copies of what the ranks exchange (host_staging): each local
// rank's header, every rank's headers as each local rank received them, and
// the cut matrix with the ranks' status words.
struct host_view {
  header* send;
  header* all;  // local x world
  long long* splits;  // local x world x record_words(): cut_matrix
  long long* early;   // local x world x record_words(1, world, 1): the early round's cuts
};

// A rank's checks and buffers before the headers. A failure is kept in
// s.error and flagged in its header, and the rank still takes part in the
// header exchange: every rank then throws alike (check_headers). Only a rank
// that cannot get the few kilobytes of its own buffers throws here; its peers
// then wait for their deadline.
template <bool WithValues, class K, class V, class Comp>
void prepare_rank(rank_state<K, V>& s, const shard_view<K, V>* shard, header& h, int world, const char* algorithm) {
  h = header{};
  h.n = shard != nullptr ? static_cast<long long>(shard->n) : 0;
  h.key_bytes = static_cast<long long>(sizeof(K));
  h.key_code = type_code(typeid(K).name());
  h.value_bytes = WithValues ? static_cast<long long>(sizeof(V)) : 0;
  h.value_code = WithValues ? type_code(typeid(V).name()) : 0;
  h.comp_code = type_code(typeid(Comp).name());
  check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
  check_cuda(cudaStreamCreateWithFlags(&s.side, cudaStreamNonBlocking), algorithm, "cudaStreamCreate");
  try {
    if (shard == nullptr) {
      throw std::invalid_argument(std::string("libmerge::") + algorithm + ": one shard per local rank is needed");
    }
    s.shard = *shard;
    int stream_device = 0;
    check_cuda(cudaStreamGetDevice(s.stream, &stream_device), algorithm, "cudaStreamGetDevice");
    if (stream_device != s.device) {
      s.stream = s.side;  // still report to the others, on a stream of the right device
      throw std::invalid_argument(std::string("libmerge::") + algorithm + ": the stream is of device " +
                                  std::to_string(stream_device) + ", the communicator's device is " +
                                  std::to_string(s.device));
    }
    if (s.shard.n < 0) throw std::invalid_argument(std::string("libmerge::") + algorithm + ": a negative length");
    const cuda_backend::device_info& dev = cuda_backend::current_device(algorithm);
    if (s.shard.n > 0) {
      s.shard.keys = cuda_backend::device_pointer(s.shard.keys, dev, algorithm, WithValues ? "keys_first" : "first");
      if constexpr (WithValues) s.shard.vals = cuda_backend::device_pointer(s.shard.vals, dev, algorithm, "values_first");
    }
    h.four_way = cuda_backend::four_way_available<local_policy, K, V, WithValues, Comp>(
        dev, std::max<index_t>(s.shard.n, 1), algorithm);
    if (most_runs(world) == 2) {
      h.half = cuda_backend::two_run_width<local_policy, K, V, WithValues, Comp>(dev, s.shard.n, algorithm);
    }
  } catch (const std::exception& e) {
    s.error = std::current_exception();
    h.failed = 1;
    std::strncpy(h.reason, e.what(), sizeof(h.reason) - 1);
  } catch (...) {
    s.error = std::current_exception();
    h.failed = 1;
  }
  s.search.world = world;
  s.early_search.world = world;
  const std::size_t headers = align16(sizeof(header)) + align16(static_cast<std::size_t>(world) * sizeof(header));
  const std::size_t searches = s.search.bytes() + s.early_search.bytes();
  s.small.emplace(cuda::pool_allocator{}, s.stream, headers + searches + 32, algorithm);
  char* p = s.small->template as<char>();
  s.header_send = reinterpret_cast<header*>(p);
  s.header_all = reinterpret_cast<header*>(p + align16(sizeof(header)));
  s.search.carve(p + headers);
  s.early_search.carve(p + headers + s.search.bytes());
  s.done_send = reinterpret_cast<unsigned long long*>(p + headers + searches);
  s.done_all = s.done_send + 2;
  // The first run's length, which the local sort writes: 0 until then (a
  // rank whose sort fails still searches, clamped, and reads a set word).
  check_cuda(cudaMemsetAsync(s.search.width, 0, sizeof(long long), s.stream), algorithm, "cudaMemsetAsync");
  check_cuda(cudaMemsetAsync(s.early_search.width, 0, sizeof(long long), s.stream), algorithm, "cudaMemsetAsync");
  check_cuda(cudaMemsetAsync(s.done_send, 0, 32, s.stream), algorithm, "cudaMemsetAsync");
}

// Every rank's header to every rank (host wait 1).
template <class K, class V, class Transport>
void exchange_headers(Transport& t, std::vector<rank_state<K, V>>& st, const host_view& h, const char* algorithm) {
  const int world = t.world();
  std::vector<const void*> send;
  std::vector<void*> recv;
  for (std::size_t i = 0; i < st.size(); ++i) {
    rank_state<K, V>& s = st[i];
    check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
    check_cuda(cudaMemcpyAsync(s.header_send, &h.send[i], sizeof(header), cudaMemcpyHostToDevice, s.stream),
               algorithm, "cudaMemcpyAsync (header)");
    send.push_back(s.header_send);
    recv.push_back(s.header_all);
  }
  t.allgather(send, recv, sizeof(header));
  for (std::size_t i = 0; i < st.size(); ++i) {
    rank_state<K, V>& s = st[i];
    check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
    check_cuda(cudaMemcpyAsync(h.all + i * static_cast<std::size_t>(world), s.header_all,
                               static_cast<std::size_t>(world) * sizeof(header), cudaMemcpyDeviceToHost, s.stream),
               algorithm, "cudaMemcpyAsync (headers)");
  }
  t.wait_all();
}

// A local rank that failed throws its own exception (before the error that
// names it to everyone else).
template <class K, class V>
void rethrow_local_failure(const std::vector<rank_state<K, V>>& st) {
  for (const rank_state<K, V>& s : st) {
    if (s.error) std::rethrow_exception(s.error);
  }
}

// The checks every rank makes alike on the headers: a failed rank (its own
// exception on that rank), types that differ from rank 0's.
template <class K, class V>
void check_headers(const std::vector<rank_state<K, V>>& st, const header* all, int world, const char* algorithm) {
  rethrow_local_failure(st);
  for (int q = 0; q < world; ++q) {
    const std::string who = std::string("libmerge::") + algorithm + ": rank " + std::to_string(q);
    if (all[q].failed) {
      std::string reason(all[q].reason, strnlen(all[q].reason, sizeof(all[q].reason)));
      throw std::runtime_error(who + " failed before the exchange, nothing was sorted: " +
                               (reason.empty() ? std::string("(no message)") : reason));
    }
    if (all[q].key_bytes != all[0].key_bytes || all[q].key_code != all[0].key_code) {
      throw std::invalid_argument(who + " passed keys of another type than rank 0's");
    }
    if (all[q].value_bytes != all[0].value_bytes || all[q].value_code != all[0].value_code) {
      throw std::invalid_argument(who + " passed values of another type than rank 0's (or keys only)");
    }
    if (all[q].comp_code != all[0].comp_code) {
      throw std::invalid_argument(who + " passed a comparator of another type than rank 0's");
    }
  }
}

// How a call goes for every rank alike, from the headers: the runs each
// rank's local sort leaves, and whether the receiving ranks merge their
// pieces in one 4-way pass (merge_four; else a tree of 2-way merges).
struct call_plan {
  int runs = 1;
  int chunks = 1;  // the exchange's rounds; each rank's output is cut into as many chunks
  double taper = 1.0;  // each chunk over the one before (chunk_target)
  bool four_way = false;
  bool early = false;  // the first runs' pieces travel while the second runs sort (early_round)
  int pieces(int world) const { return world * runs; }  // a chunk's
  // The merge tree's second buffer: more than two pieces without merge_four.
  bool needs_tmp(int world) const { return pieces(world) > (four_way ? 4 : 2); }
};

// The exchange's rounds by default: as many as ranks, up to 4, a chunk at
// least min_chunk elements of a rank's output, each chunk default_taper
// times the one before. Chunk c's merge runs while chunk c + 1 travels, so
// past the exchange the call waits for the last chunk's merge only; but
// NCCL's kernels slow beside the merges, so the first round (alone on the
// wire) is the longest and the last (whose merge nothing hides) the
// shortest. 2^30 int32 keys, H200s, same calls (exchange + merge, the call;
// ranges over runs): on 2, one round 3.04 + 2.34 ms; 2 equal rounds 3.60 +
// 1.32 (25.4-25.8 ms, 1.73x-1.76x); 2 tapered 0.8: 3.60-3.70 + 1.15
// (25.22-25.45, 1.754x-1.770x; pairs 1.71x-1.72x), the exchange 1.20x-1.22x
// NCCL's all-to-all; 3 tapered 0.6: 3.91 + 0.83 (25.21-25.44, 1.755x-1.771x;
// pairs 1.72x-1.73x), but the exchange, slowed by two merges beside it,
// 1.30x-1.32x; 4 tapered 0.6: 25.34-25.58. On 4: one round 3.27 + 1.25; 4
// equal rounds 2.97 + 0.50 (14.3-14.5); 4 tapered 0.6: 3.00 + 0.27
// (14.07-14.16, 3.16x-3.18x; 3 or 5 rounds 14.0-14.4). (More rounds than 4
// past 4 ranks were not measured: one round there unless the caller asks.)
inline constexpr int most_default_chunks = 4;
inline constexpr long long min_chunk = 1LL << 22;
inline double default_taper(int world) { return world <= 2 ? 0.8 : 0.6; }

// The early round by default where every rank's first run has at least
// this many elements: it costs a search (three rounds of collectives) and a
// host wait whatever it moves. (Measured at first runs of 2^26 and 2^28
// elements, where it gains; not below.)
inline constexpr long long min_early = 1LL << 20;

// How the exchange goes where tests and benchmarks choose (sort_shards; it
// must be the same on every rank: the headers do not carry it).
struct exchange_options {
  int chunks = 0;    // the rounds (0: the default below)
  double taper = 0;  // each chunk's length over the one before (0: the default)
  int early = -1;    // the early round: 1 wherever there are two runs, 0 never, -1 the default
};

inline call_plan plan_call(const header* all, int world, long long longest, const exchange_options& o) {
  const int chunks = o.chunks, early = o.early;
  const double taper = o.taper;
  call_plan c;
  c.four_way = true;
  for (int q = 0; q < world; ++q) c.four_way = c.four_way && all[q].four_way != 0;
  // Two runs a rank where the receiving rank merges 2 x 2 pieces in one
  // pass (2 ranks: most_runs): the local sort's last merge
  // level is then left out (2^30 int32 keys on 2 GPUs: one pass of 2^29 keys
  // fewer a rank).
  c.runs = c.four_way ? most_runs(world) : 1;
  const long long wanted =
      chunks > 0 ? chunks : (world <= most_default_chunks ? std::min<long long>(longest / min_chunk, world) : 1);
  c.chunks = static_cast<int>(std::clamp<long long>(wanted, 1, max_chunks));
  c.early = early != 0 && c.runs == 2;
  for (int q = 0; q < world; ++q) {
    const long long w = all[q].half;
    c.early = c.early && w > 0 && w < all[q].n && (early > 0 || w >= min_early);
  }
  // After the early round the exchange moves about half as much, and the
  // merges, not NCCL, set the pace: more rounds, equal (2^30 int32 keys
  // on 2 H100s, ms: 2 rounds tapered 0.8 25.97-26.17, 2 equal 26.35, 3
  // 25.86, 4 25.90, 6 26.04, 8 26.17; pairs 45.74-45.76, 46.44, 45.66,
  // 45.34, 45.39, 45.67).
  if (c.early && chunks <= 0) {
    c.chunks = static_cast<int>(std::clamp<long long>(longest / min_chunk, 1, most_default_chunks));
  }
  c.taper = taper > 0 ? taper : (c.early ? 1.0 : default_taper(world));
  return c;
}

// Where local rank r keeps what the early round and the rounds after it
// bring (plan.early): after its runs (n elements), a mirror of each peer q's
// first run (its W elements and a margin for the widened pieces, at a
// multiple of 256 elements: every piece lands at its own offset in q's runs,
// as aligned as it was there, in keys and values alike), then the slots for
// the second runs' pieces, which hold at most min(n, the peers' second runs).
struct early_layout {
  std::vector<long long> mirror;
  long long slots = 0, slot_room = 0;
};
inline long long round_256(long long x) { return (x + 255) / 256 * 256; }
inline early_layout layout_early(int r, const header* all, int world, std::size_t margin) {
  early_layout e;
  long long at = round_256(all[r].n), second = 0;
  for (int q = 0; q < world; ++q) {
    e.mirror.push_back(q == r ? -1 : at);
    if (q != r) {
      at = round_256(at + all[q].half + static_cast<long long>(margin));
      second += all[q].n - all[q].half;
    }
  }
  e.slots = at;
  e.slot_room = std::min(all[r].n, second);
  return e;
}

// Elements of room around each received piece: NCCL moves pieces widened to
// wire_align boundaries (wire()), up to wire_align - 1 bytes on each side.
template <class K, class V, bool WithValues>
std::size_t slot_margin() {
  const std::size_t smallest = WithValues ? std::min(sizeof(K), sizeof(V)) : sizeof(K);
  return (wire_align + smallest - 1) / smallest;
}

// The exchange's stream and events of a rank, its stream waiting for what
// the stream has sorted so far (the runs, or with the early round the first
// run). The highest priority: a chunk's NCCL kernels then take SMs as the
// blocks of the merge (or sort) before them end, instead of after its last
// wave.
template <class K, class V>
void open_exchange(rank_state<K, V>& s, const call_plan& plan, const char* algorithm) {
  int least = 0, greatest = 0;
  check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), algorithm, "cudaDeviceGetStreamPriorityRange");
  check_cuda(cudaStreamCreateWithPriority(&s.exchange_stream, cudaStreamNonBlocking, greatest), algorithm,
             "cudaStreamCreateWithPriority");
  for (int e = 0; e <= plan.chunks + (plan.early ? 2 : 0); ++e) {
    cudaEvent_t ev{};
    check_cuda(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), algorithm, "cudaEventCreate");
    s.events.push_back(ev);
  }
  const cudaEvent_t ready = plan.early ? s.events[s.events.size() - 2] : s.events[0];
  if (plan.early) {
    s.first_run = ready;
    s.early_done = s.events.back();
  }
  check_cuda(cudaEventRecord(ready, s.stream), algorithm, "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(s.exchange_stream, ready, 0), algorithm, "cudaStreamWaitEvent");
}

// The local sort and the exchange's buffers: a failure becomes the rank's
// status, which travels with its cuts (check_cuts). The runs and the receive
// slots come from one allocation (rank_state::keys); the local sort's own
// scratch is the caller's shard, which the merge overwrites at the end.
// With the early round this sorts the first run only (sort_second the other).
template <bool WithValues, class K, class V, class Comp>
long long sort_rank(rank_state<K, V>& s, int world, const header* all, const call_plan& plan, Comp comp,
                    const char* algorithm) {
  try {
    check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
    const local_policy par = cuda::par.on(s.stream);
    if (s.shard.n > 0) {
      // The runs (n elements), the slots (n elements at most, and a margin
      // on both sides of every piece of every chunk, plus 16 to start each
      // piece at the offset plan_pieces picks; with the early round the
      // mirrors first and less room for the slots: layout_early), and the
      // tree's second buffer where needed.
      const std::size_t n = static_cast<std::size_t>(s.shard.n);
      const std::size_t margin = slot_margin<K, V, WithValues>();
      std::size_t received = n;
      if (plan.early) {
        const early_layout e = layout_early(s.rank, all, world, margin);
        s.mirror = e.mirror;
        s.slots = e.slots;
        s.half = all[s.rank].half;
        received = static_cast<std::size_t>(e.slots - static_cast<long long>(n) + e.slot_room);
      }
      const std::size_t elements = n + received + static_cast<std::size_t>(plan.pieces(world)) *
                                                      static_cast<std::size_t>(plan.chunks) * (2 * margin + 16);
      const std::size_t keys = align_wire(elements * sizeof(K)), vals = WithValues ? align_wire(elements * sizeof(V)) : 0;
      const std::size_t tmp =
          plan.needs_tmp(world) ? align_wire(n * sizeof(K)) + (WithValues ? align_wire(n * sizeof(V)) : 0) : 0;
      s.big.emplace(cuda::pool_allocator{}, s.stream, keys + vals + tmp, algorithm);
      char* p = s.big->template as<char>();
      s.keys = reinterpret_cast<K*>(p);
      if constexpr (WithValues) s.vals = reinterpret_cast<V*>(p + keys);
      if (plan.needs_tmp(world)) {
        s.tmp_keys = reinterpret_cast<K*>(p + keys + vals);
        if constexpr (WithValues) s.tmp_vals = reinterpret_cast<V*>(p + keys + vals + align_wire(n * sizeof(K)));
      }
    }
    cuda_backend::sort_to_runs<local_policy, K, V, WithValues>(
        par, s.shard.keys, s.shard.vals, plan.early ? s.half : s.shard.n,
        cuda_backend::runs_target<K, V>{s.keys, s.vals, !plan.early && plan.runs == 2, s.search.width}, comp,
        algorithm);
    (plan.early ? s.first_sorted : s.sorted) = true;
    // The exchange's stream and events now, while the GPU sorts: made after
    // the cuts arrive (host wait 2), they held the first round back.
    open_exchange(s, plan, algorithm);
    return 0;
  } catch (...) {
    s.error = std::current_exception();
    return 1;
  }
}

// The early round's second sort: [W, n) into the second run, then W as the
// first run's length (the exact search's and restore_shard's).
template <bool WithValues, class K, class V, class Comp>
long long sort_second(rank_state<K, V>& s, Comp comp, const char* algorithm) {
  if (s.error) return 1;
  try {
    check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
    const long long w = s.half;
    cuda_backend::sort_to_runs<local_policy, K, V, WithValues>(
        cuda::par.on(s.stream), s.shard.keys + w, WithValues ? s.shard.vals + w : s.shard.vals, s.shard.n - w,
        cuda_backend::runs_target<K, V>{s.keys + w, WithValues ? s.vals + w : s.vals, false, s.search.width}, comp,
        algorithm);
    cuda_backend::launch_with(nullptr, cuda_backend::store_width_kernel<>, 1, 1, 0, s.stream, algorithm,
                              "launch of store_width_kernel", s.search.width, w);
    s.sorted = true;
    check_cuda(cudaEventRecord(s.events[0], s.stream), algorithm, "cudaEventRecord");
    return 0;
  } catch (...) {
    s.error = std::current_exception();
    return 1;
  }
}

// restore_shard where the early round's second sort failed: the first run
// back into [0, W) of the shard (its scratch), then the shard sorted.
template <bool WithValues, class K, class V, class Comp>
void restore_first_run(rank_state<K, V>& s, Comp comp) noexcept {
  try {
    cudaSetDevice(s.device);
    if (s.exchange_stream != nullptr) cudaStreamSynchronize(s.exchange_stream);
    cudaGetLastError();
    const std::size_t w = static_cast<std::size_t>(s.half);
    if (cudaMemcpyAsync(s.shard.keys, s.keys, sizeof(K) * w, cudaMemcpyDeviceToDevice, s.stream) != cudaSuccess) return;
    if constexpr (WithValues) {
      if (cudaMemcpyAsync(s.shard.vals, s.vals, sizeof(V) * w, cudaMemcpyDeviceToDevice, s.stream) != cudaSuccess) {
        return;
      }
    }
    const local_policy par = cuda::par.on(s.stream);
    if constexpr (WithValues) {
      libmerge::merge_sort_by_key(par, s.shard.keys, s.shard.keys + s.shard.n, s.shard.vals, comp);
    } else {
      libmerge::merge_sort(par, s.shard.keys, s.shard.keys + s.shard.n, comp);
    }
    cudaStreamSynchronize(s.stream);
  } catch (...) {
    cudaGetLastError();
  }
}

// Puts a rank's own elements back into its shard, sorted, after a failure
// past the local sort (which used the shard as scratch): the merge of its
// runs, or their copy. Best effort: a device that failed cannot be helped.
template <bool WithValues, class K, class V, class Comp>
void restore_shard(rank_state<K, V>& s, Comp comp) noexcept {
  if (s.shard.n == 0) return;
  if (!s.sorted && s.first_sorted) return restore_first_run<WithValues>(s, comp);
  if (!s.sorted) return;
  try {
    cudaSetDevice(s.device);
    if (s.exchange_stream != nullptr) cudaStreamSynchronize(s.exchange_stream);
    long long w = s.shard.n;
    if (cudaMemcpyAsync(&w, s.search.width, sizeof(w), cudaMemcpyDeviceToHost, s.stream) != cudaSuccess ||
        cudaStreamSynchronize(s.stream) != cudaSuccess) {
      return;
    }
    w = std::clamp<long long>(w, 0, s.shard.n);
    const local_policy par = cuda::par.on(s.stream);
    const K* k = s.keys;
    try {
      if constexpr (WithValues) {
        libmerge::merge_by_key(par, k, k + w, k + w, k + s.shard.n, s.vals, s.vals + w, s.shard.keys, s.shard.vals,
                               comp);
      } else {
        libmerge::merge(par, k, k + w, k + w, k + s.shard.n, s.shard.keys, comp);
      }
    } catch (...) {
      // The merge could not start (its temporary storage): the runs as they
      // are, the rank's own elements in two sorted runs, before they go.
      cudaGetLastError();
      cudaMemcpyAsync(s.shard.keys, s.keys, sizeof(K) * static_cast<std::size_t>(s.shard.n), cudaMemcpyDeviceToDevice,
                      s.stream);
      if constexpr (WithValues) {
        cudaMemcpyAsync(s.shard.vals, s.vals, sizeof(V) * static_cast<std::size_t>(s.shard.n),
                        cudaMemcpyDeviceToDevice, s.stream);
      }
    }
    cudaStreamSynchronize(s.stream);
  } catch (...) {
  }
}

// A rank's cut matrix as the host received it (the same on every rank):
// cut(q, j, b) = S of rank q's run j at boundary b (b = s x chunks + c
// starts chunk c of rank s's output; splitters.cuh), q's status and the
// length of its first run.
struct cut_matrix {
  const long long* words;
  int world, runs, chunks;
  int boundaries() const { return world * chunks; }  // B: cuts 0 .. B a run
  std::size_t stride() const { return splitter_buffers<char>::record_words(runs, world, chunks); }
  long long cut(int q, int j, int b) const {
    return words[static_cast<std::size_t>(q) * stride() +
                 static_cast<std::size_t>(j) * (static_cast<std::size_t>(boundaries()) + 1) + static_cast<std::size_t>(b)];
  }
  long long status(int q) const { return words[static_cast<std::size_t>(q) * stride() + stride() - 2]; }
  long long width(int q) const { return words[static_cast<std::size_t>(q) * stride() + stride() - 1]; }
  // Where run j of rank q (length n) starts in its runs, and its length.
  long long run_begin(int q, int j) const { return j == 0 ? 0 : width(q); }
  long long run_length(int q, int j, long long n) const { return runs == 1 ? n : (j == 0 ? width(q) : n - width(q)); }
  // Rank q's piece of run j for chunk c of rank s: [from, from + count) of
  // its runs.
  long long from(int q, int j, int s, int c) const { return run_begin(q, j) + cut(q, j, s * chunks + c); }
  long long count(int q, int j, int s, int c) const {
    return cut(q, j, s * chunks + c + 1) - cut(q, j, s * chunks + c);
  }
};

// Whether a cut matrix adds up, for sequences of `lengths` (one every
// `stride` words: the ranks' lengths, or for the early round their first
// runs'): every first run's length in range, every cut in order and in
// range, and the cuts between the ranks' outputs (chunk 0 of each) exact,
// adding up to G_s. (A chunk's cut inside a rank's output may lie anywhere
// between them: splitters.cuh.)
inline bool cuts_add_up(const cut_matrix& m, const long long* lengths, int stride) {
  const int world = m.world;
  for (int q = 0; q < world; ++q) {
    if (m.width(q) < 0 || m.width(q) > lengths[q * stride]) return false;
  }
  for (int b = 0; b <= m.boundaries(); ++b) {
    long long sum = 0;
    for (int q = 0; q < world; ++q) {
      for (int j = 0; j < m.runs; ++j) {
        const long long c = m.cut(q, j, b);
        sum += c;
        const bool ordered = b == 0 ? c == 0 : c >= m.cut(q, j, b - 1);
        if (!ordered || c < 0 || c > m.run_length(q, j, lengths[q * stride])) return false;
      }
    }
    if (b % m.chunks == 0 && sum != rank_start(lengths, stride, world, b / m.chunks)) return false;
  }
  return true;
}

// The checks every rank makes alike on the cut matrix (the same on every
// rank): a rank that failed after the headers, and cuts that do not add up
// (a comparator that is no strict weak ordering).
template <class K, class V>
void check_cuts(const std::vector<rank_state<K, V>>& st, const header* all, const cut_matrix& m, const char* algorithm) {
  rethrow_local_failure(st);
  const int world = m.world;
  for (int q = 0; q < world; ++q) {
    if (m.status(q) != 0) {
      throw std::runtime_error(std::string("libmerge::") + algorithm + ": rank " + std::to_string(q) +
                               " failed in its local sort or making the exchange's buffers and stream (its exception "
                               "says why); nothing was exchanged");
    }
  }
  if (!cuts_add_up(m, &all[0].n, static_cast<int>(sizeof(header) / sizeof(long long)))) {
    throw std::runtime_error(std::string("libmerge::") + algorithm +
                             ": the ranks' splitters do not add up: the comparator is not a strict weak "
                             "ordering, or the ranks passed different data types or comparators; nothing was "
                             "exchanged");
  }
}

// Where local rank r's pieces are and travel. Received piece (c, q, j)
// (chunk c, from rank q's run j) lands at element at[index(c, q, j)] of the
// rank's arrays (after its runs: from element n on); its own pieces stay in
// its runs, at their offsets there. One offset serves the keys and the
// values: plan_pieces starts each received piece at an element congruent to
// its position in the sender's array modulo 16, so that NCCL writes it from a
// 16-byte boundary in both arrays when the senders' arrays are 16-byte
// aligned. Chunk c's merge writes [out[c], out[c + 1]) of the rank's shard.
struct piece_plan {
  int world = 0, runs = 0;
  std::vector<long long> at, n;  // chunks x world x runs: every piece's offset and length
  std::vector<long long> out;    // chunks + 1
  std::size_t index(int c, int q, int j) const {
    return (static_cast<std::size_t>(c) * static_cast<std::size_t>(world) + static_cast<std::size_t>(q)) *
               static_cast<std::size_t>(runs) +
           static_cast<std::size_t>(j);
  }
};
// What the early round moved (the same on every rank): rank q's first-run
// piece for rank s, [cut[q][s], cut[q][s + 1]) of q's first run, where
// `moved` (else nothing went early).
struct early_cuts {
  bool moved = false;
  int world = 0;
  std::vector<long long> cut;  // world x (world + 1)
  std::pair<long long, long long> sent(int q, int s) const {
    if (!moved) return {0, 0};
    const std::size_t at = static_cast<std::size_t>(q) * static_cast<std::size_t>(world + 1) + static_cast<std::size_t>(s);
    return {cut[at], cut[at + 1]};
  }
};

// Piece [a, b) less what went early, e: the part below e (part 0) or above
// it (part 1). Without an early round the whole piece is part 0.
inline std::pair<long long, long long> not_sent(long long a, long long b, std::pair<long long, long long> e, int part) {
  if (e.second <= e.first) return part == 0 ? std::pair{a, b} : std::pair{0LL, 0LL};
  return part == 0 ? std::pair{a, std::min(b, e.first)} : std::pair{std::max(a, e.second), b};
}

// (mirror: layout_early's, empty without the early round: a peer's
// first-run piece is then at its offset in the mirror of that run.)
inline piece_plan plan_pieces(int r, const cut_matrix& m, const header* all, std::size_t margin,
                              const std::vector<long long>& mirror, long long slots) {
  piece_plan p;
  p.world = m.world;
  p.runs = m.runs;
  long long cursor = mirror.empty() ? all[r].n : slots, out = 0;
  for (int c = 0; c < m.chunks; ++c) {
    p.out.push_back(out);
    for (int q = 0; q < m.world; ++q) {
      for (int j = 0; j < m.runs; ++j) {
        const long long count = m.count(q, j, r, c);
        long long at = 0;
        if (q == r) {
          at = m.from(r, j, r, c);
        } else if (j == 0 && !mirror.empty()) {
          at = mirror[static_cast<std::size_t>(q)] + m.from(q, 0, r, c);
        } else if (count > 0) {
          const long long a = m.from(q, j, r, c);
          at = cursor + static_cast<long long>(margin);
          at += ((a - at) % 16 + 16) % 16;
          cursor = at + count + static_cast<long long>(margin);
        }
        p.at.push_back(at);
        p.n.push_back(count);
        out += count;
      }
    }
  }
  p.out.push_back(out);
  return p;
}

// What local rank r sends and receives of one array (elements of `size`
// bytes, whose runs start at base) for run j in chunk c: pieces for the
// transport.
struct wire_plan {
  pieces out, in;
};
// Where received piece i of peer q's first run starts in the receiver's
// mirror of that run (bytes; layout_early): at its own offset in the run.
inline std::size_t mirror_offset(const std::vector<long long>& mirror, int q, std::size_t size, const wire_piece& i) {
  return i.hi > i.lo ? static_cast<std::size_t>(mirror[static_cast<std::size_t>(q)]) * size + i.lo : 0;
}
// With the early round (mirror not empty) a first-run piece sends what the
// early round did not (`part`: below or above it, not_sent) into the
// receiver's mirror of the sender's first run, at its own offset there.
inline wire_plan plan_wire(int r, int j, int c, const cut_matrix& m, const piece_plan& pp, std::size_t size,
                           const header* all, const std::vector<long long>& mirror, const early_cuts& e, int part) {
  wire_plan p;
  const bool mirrored = j == 0 && !mirror.empty();
  for (int q = 0; q < m.world; ++q) {
    wire_piece o, i;
    if (q != r && (mirrored || part == 0)) {  // every rank's runs start on a wire_align boundary (rank_state::keys)
      auto out = std::pair{m.from(r, j, q, c), m.from(r, j, q, c) + m.count(r, j, q, c)};
      auto in = std::pair{m.from(q, j, r, c), m.from(q, j, r, c) + m.count(q, j, r, c)};
      if (mirrored) {
        out = not_sent(out.first, out.second, e.sent(r, q), part);
        in = not_sent(in.first, in.second, e.sent(q, r), part);
      }
      o = wire(out.first, out.second, size, all[r].n);
      i = wire(in.first, in.second, size, all[q].n);
    }
    const std::size_t at = static_cast<std::size_t>(pp.at[pp.index(c, q, j)]);
    p.out.offset.push_back(o.lo);
    p.out.bytes.push_back(o.hi - o.lo);
    p.in.offset.push_back(mirrored ? mirror_offset(mirror, q, size, i) : (i.hi > i.lo ? at * size - i.head : 0));
    p.in.bytes.push_back(i.hi - i.lo);
  }
  return p;
}

// One round of step 4 over every local rank: chunk c's pieces of every run,
// keys and values, in one NCCL group on the ranks' exchange streams, from the
// runs into the slots (plan_pieces). A rank's own pieces do not move.
// One call of the transport's exchange for every local rank's keys (or
// values), from and into the rank's own arrays: the pieces plan(i, size)
// gives for local rank i (size: an element's bytes in that array).
template <class K, class V, class Transport, class Plan>
void send_pieces(Transport& t, std::vector<rank_state<K, V>>& st, bool values, Plan&& plan) {
  std::vector<const char*> from;
  std::vector<char*> to;
  std::vector<pieces> out, in;
  for (std::size_t i = 0; i < st.size(); ++i) {
    char* base = values ? reinterpret_cast<char*>(st[i].vals) : reinterpret_cast<char*>(st[i].keys);
    const wire_plan w = plan(i, values ? sizeof(V) : sizeof(K));
    from.push_back(base);
    to.push_back(base);
    out.push_back(w.out);
    in.push_back(w.in);
  }
  t.exchange(from, out, to, in);
}

template <bool WithValues, class K, class V, class Transport>
void exchange_pieces(Transport& t, std::vector<rank_state<K, V>>& st, const header* all, const cut_matrix& m,
                     const std::vector<piece_plan>& pp, const early_cuts& e, int c) {
  auto send = [&](int j, bool values, int part) {
    send_pieces(t, st, values, [&](std::size_t i, std::size_t size) {
      return plan_wire(st[i].rank, j, c, m, pp[i], size, all, st[i].mirror, e, part);
    });
  };
  std::vector<cudaStream_t> streams;
  for (const rank_state<K, V>& s : st) streams.push_back(s.exchange_stream);
  t.on_streams(streams, [&] {
    t.grouped([&] {
      for (int j = 0; j < m.runs; ++j) {
        const int parts = j == 0 && !st.front().mirror.empty() ? 2 : 1;  // (the early round: below and above it)
        for (int part = 0; part < parts; ++part) {
          send(j, false, part);
          if constexpr (WithValues) send(j, true, part);
        }
      }
    });
  });
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
  if (plan.four_way && runs.size() >= 3 && runs.size() <= 4) {
    cuda_backend::merge_four<local_policy, K, V, WithValues>(cuda::par.on(s.stream), s.keys, s.vals, at, len,
                                                             s.shard.keys + first,
                                                             WithValues ? s.shard.vals + first : nullptr, comp,
                                                             algorithm);
  } else {
    merge_runs<WithValues>(s, std::move(runs), comp, algorithm);
  }
}

// The phase marks of a call (null: none), recorded on each local rank's
// stream or on those `on` gives.
template <class Transport>
struct phase_marker {
  Transport& t;
  phase_marks* marks;
  device_scope& scope;
  const char* algorithm;
  void operator()(int phase, const std::vector<cudaStream_t>* on = nullptr) const {
    if (marks == nullptr) return;
    for (int i = 0; i < t.local_count(); ++i) {
      scope.set(t.local(i).device, algorithm);
      const std::size_t u = static_cast<std::size_t>(i);
      check_cuda(cudaEventRecord(marks->events[u][static_cast<std::size_t>(phase)],
                                 on != nullptr ? (*on)[u] : t.local(i).stream),
                 algorithm, "cudaEventRecord (phase mark)");
    }
  }
};

// One rank in all: the single-GPU sort, nothing to exchange.
template <bool WithValues, class K, class V, class Transport, class Comp>
void sort_alone(Transport& t, const shard_view<K, V>& sh, Comp comp, device_scope& scope,
                const phase_marker<Transport>& mark, const char* algorithm) {
  scope.set(t.local(0).device, algorithm);
  const auto par = cuda::par.on(t.local(0).stream);
  if constexpr (WithValues) {
    libmerge::merge_sort_by_key(par, sh.keys, sh.keys + sh.n, sh.vals, comp);
  } else {
    libmerge::merge_sort(par, sh.keys, sh.keys + sh.n, comp);
  }
  for (int phase = 1; phase <= 4; ++phase) mark(phase);
  t.wait_all();
}

// What step 2 hands the search: each local rank's status, length, runs (its
// shard where its buffers failed: in range, and its status makes every rank
// throw) and every rank's lengths as it holds them on its device.
template <class K>
struct local_runs {
  std::vector<long long> status, lengths;
  std::vector<const K*> keys;
  std::vector<const long long*> all_lengths;
};

// 2. The local sorts, into each rank's runs (with the early round the first
// runs, then the second ones, all queued before anything waits).
template <bool WithValues, class K, class V, class Comp>
local_runs<K> sort_locally(std::vector<rank_state<K, V>>& st, int world, const header* all, const call_plan& plan,
                           Comp comp, const char* algorithm) {
  local_runs<K> r;
  for (rank_state<K, V>& s : st) {
    s.search.runs = plan.runs;
    s.search.chunks = plan.chunks;
    s.search.taper = plan.taper;
    r.status.push_back(sort_rank<WithValues>(s, world, all, plan, comp, algorithm));
    r.lengths.push_back(static_cast<long long>(s.shard.n));
    r.keys.push_back(s.keys != nullptr ? s.keys : s.shard.keys);
    r.all_lengths.push_back(&s.header_all[0].n);
  }
  if (plan.early) {
    for (std::size_t i = 0; i < st.size(); ++i) r.status[i] = sort_second<WithValues>(st[i], comp, algorithm);
  }
  return r;
}

// 3. The splitters, and every rank's cuts and status copied to `words` on
// the host, `stride` words a rank (wait 2). The early round's search too:
// `which` of each rank's search buffers, over the sequences `r` names, on
// the streams t holds at the time.
template <class K, class V, class Transport, class Comp>
void find_cuts(Transport& t, std::vector<rank_state<K, V>>& st, splitter_buffers<K> rank_state<K, V>::*which,
               const local_runs<K>& r, long long* words, std::size_t stride, long long longest, Comp comp,
               device_scope& scope, const char* algorithm) {
  const std::size_t W = static_cast<std::size_t>(t.world());
  std::vector<splitter_buffers<K>> bufs;
  for (rank_state<K, V>& s : st) bufs.push_back(s.*which);
  find_splitters(t, bufs, r.keys, r.lengths, r.status, r.all_lengths,
                 static_cast<int>(sizeof(header) / sizeof(long long)), longest, comp,
                 [&](int i) { scope.set(st[static_cast<std::size_t>(i)].device, algorithm); }, algorithm);
  for (std::size_t i = 0; i < st.size(); ++i) {
    scope.set(st[i].device, algorithm);
    check_cuda(cudaMemcpyAsync(words + i * W * stride, (st[i].*which).splits_all, W * stride * sizeof(long long),
                               cudaMemcpyDeviceToHost, t.local(static_cast<int>(i)).stream),
               algorithm, "cudaMemcpyAsync (cuts)");
  }
  t.wait_all();
}

// The early round's pieces (early_cuts), keys and values in one group on the
// exchange streams, each into the receiver's mirror of the sender's first
// run; the ranks' streams then wait for them.
template <bool WithValues, class K, class V, class Transport>
void send_early(Transport& t, std::vector<rank_state<K, V>>& st, const header* all, const early_cuts& e,
                const std::vector<cudaStream_t>& streams, device_scope& scope, const char* algorithm) {
  const int world = t.world();
  auto send = [&](bool values) {
    send_pieces(t, st, values, [&](std::size_t x, std::size_t size) {
      const rank_state<K, V>& s = st[x];
      wire_plan p;
      for (int q = 0; q < world; ++q) {
        wire_piece o, i;
        if (q != s.rank) {
          o = wire(e.sent(s.rank, q).first, e.sent(s.rank, q).second, size, all[s.rank].n);
          i = wire(e.sent(q, s.rank).first, e.sent(q, s.rank).second, size, all[q].n);
        }
        p.out.offset.push_back(o.lo);
        p.out.bytes.push_back(o.hi - o.lo);
        p.in.offset.push_back(mirror_offset(s.mirror, q, size, i));
        p.in.bytes.push_back(i.hi - i.lo);
      }
      return p;
    });
  };
  t.on_streams(streams, [&] {
    t.grouped([&] {
      send(false);
      if constexpr (WithValues) send(true);
    });
  });
  // The exact search's collectives (on the ranks' streams) after the early
  // round's, on every rank alike.
  for (rank_state<K, V>& s : st) {
    scope.set(s.device, algorithm);
    check_cuda(cudaEventRecord(s.early_done, s.exchange_stream), algorithm, "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(s.stream, s.early_done, 0), algorithm, "cudaStreamWaitEvent");
  }
}

// 2b. The early round (plan.early: 2 GPUs, two runs a rank), while the
// second runs sort. Once every rank's first run is sorted, the search of
// splitters.cuh over the first runs alone, as if they were all the data
// (boundary s after the lower ranks' first runs: where the exact cuts fall
// when a rank's halves hold alike keys), on the exchange streams; a host
// wait for its cuts (the GPUs meanwhile sort the second runs); then the
// pieces travel, each into the receiver's mirror of the sender's first run
// (layout_early). The exact search (find_cuts) decides what each rank
// merges: the rounds after it send of each first-run piece only what came
// not early (plan_wire), next to what did at its own offset in the mirror,
// and what came early outside the exact piece is never read. So the early
// cuts need only be the same on every rank; where they are no use (a rank
// failed, a comparator that is no strict weak ordering) nothing goes early
// and the rounds after send everything. 2^30 int32 keys on 2 GPUs: about
// half the exchange behind the second runs' sorts (docs/multi-gpu-sort.md).
template <bool WithValues, class K, class V, class Transport, class Comp>
void early_round(Transport& t, std::vector<rank_state<K, V>>& st, const header* all, const local_runs<K>& r,
                 long long* words, early_cuts& e, Comp comp, device_scope& scope, const char* algorithm) {
  const int world = t.world();
  const std::size_t stride = splitter_buffers<K>::record_words(1, world, 1);
  local_runs<K> first{r.status, {}, r.keys, {}};  // the first runs alone
  std::vector<cudaStream_t> streams;
  long long longest = 0;
  for (int q = 0; q < world; ++q) longest = std::max(longest, all[q].half);
  for (rank_state<K, V>& s : st) {
    s.early_search.runs = 1;
    s.early_search.chunks = 1;
    first.lengths.push_back(all[s.rank].half);
    first.all_lengths.push_back(&s.header_all[0].half);
    streams.push_back(s.exchange_stream != nullptr ? s.exchange_stream : s.stream);
  }
  t.on_streams(streams, [&] {
    find_cuts(t, st, &rank_state<K, V>::early_search, first, words, stride, longest, comp, scope, algorithm);
  });
  // Usable where every rank is well and the cuts add up (local rank 0's
  // copy: every rank holds the same).
  const cut_matrix m{words, world, 1, 1};
  e.world = world;
  e.moved = cuts_add_up(m, &all[0].half, static_cast<int>(sizeof(header) / sizeof(long long)));
  for (int q = 0; q < world; ++q) e.moved = e.moved && m.status(q) == 0;
  if (!e.moved) return;
  for (int q = 0; q < world; ++q) {
    for (int b = 0; b <= world; ++b) e.cut.push_back(m.cut(q, 0, b));
  }
  send_early<WithValues>(t, st, all, e, streams, scope, algorithm);
}



// 4. The exchange, a round a chunk on each rank's exchange stream, and 5.
// the merge of each chunk on the rank's stream once it has arrived: chunk c
// merges while chunk c + 1 travels. Then every rank past its merges, or
// none returns: a word all-reduced behind them. A rank whose merge fails to
// queue (its temporary storage) throws and restores its own elements
// (restore_shard); without this its peers, done already, would keep results
// that hold some of its elements, while it holds them too. With it they
// wait here for the failed rank, fail (its abort, or their deadline) and
// restore theirs from their runs, which the merges only read. (About 20 us;
// where one thread drives every rank, sort_shards' catch restores them all
// anyway.) Then the wait for the end (wait 3).
template <bool WithValues, class K, class V, class Transport, class Comp>
void exchange_and_merge(Transport& t, std::vector<rank_state<K, V>>& st, const header* all, const cut_matrix& m,
                        const call_plan& plan, const early_cuts& e, Comp comp, device_scope& scope,
                        const phase_marker<Transport>& mark, const char* algorithm) {
  std::vector<piece_plan> pp;
  std::vector<cudaStream_t> exchange_streams;
  for (rank_state<K, V>& s : st) {
    scope.set(s.device, algorithm);
    pp.push_back(plan_pieces(s.rank, m, all, slot_margin<K, V, WithValues>(), s.mirror, s.slots));
    exchange_streams.push_back(s.exchange_stream);
    if (plan.early) {  // (the exchange stream waited for the first run only)
      check_cuda(cudaStreamWaitEvent(s.exchange_stream, s.events[0], 0), algorithm, "cudaStreamWaitEvent");
    }
  }
  for (int c = 0; c < plan.chunks; ++c) {
    exchange_pieces<WithValues>(t, st, all, m, pp, e, c);
    if (c + 1 == plan.chunks) mark(3, &exchange_streams);
    for (std::size_t i = 0; i < st.size(); ++i) {
      scope.set(st[i].device, algorithm);
      merge_pieces<WithValues>(st[i], plan, pp[i], c, comp, algorithm);
    }
  }
  std::vector<const unsigned long long*> done_send;
  std::vector<unsigned long long*> done_all;
  for (rank_state<K, V>& s : st) {
    done_send.push_back(s.done_send);
    done_all.push_back(s.done_all);
  }
  t.allreduce_sum(done_send, done_all, 1);
  mark(4);
  t.wait_all();
}

// The sort of every shard this process drives (one per local rank of t):
// the steps at the top of this file, each a function above.
template <bool WithValues, class K, class V, class Transport, class Comp>
void sort_shards(Transport& t, const std::vector<shard_view<K, V>>& shards, Comp comp, const char* algorithm,
                 phase_marks* marks = nullptr, const exchange_options& options = {}) {
  static_assert(alignof(K) <= 16 && alignof(V) <= 16,
                "libmerge::merge_sort (NCCL backend): keys and values aligned to more than 16 bytes are not "
                "supported");
  const int local = t.local_count();
  const int world = t.world();
  device_scope scope;
  const phase_marker<Transport> mark{t, marks, scope, algorithm};
  mark(0);
  if (world == 1 && shards.size() == 1) return sort_alone<WithValues>(t, shards[0], comp, scope, mark, algorithm);

  // A rank's record of cuts, status and width: sized for the most runs and
  // chunks a call can take (plan_call comes after the headers).
  const std::size_t words = splitter_buffers<K>::record_words(most_runs(world), world, max_chunks);
  const std::size_t early_words = splitter_buffers<K>::record_words(1, world, 1);
  const std::size_t L = static_cast<std::size_t>(local), W = static_cast<std::size_t>(world);
  const std::size_t cuts_at = L * sizeof(header) + L * W * sizeof(header);
  host_staging staging(cuts_at + L * W * (words + early_words) * sizeof(long long));
  const host_view h{reinterpret_cast<header*>(staging.data()),
                    reinterpret_cast<header*>(staging.data() + L * sizeof(header)),
                    reinterpret_cast<long long*>(staging.data() + cuts_at),
                    reinterpret_cast<long long*>(staging.data() + cuts_at + L * W * words * sizeof(long long))};
  std::vector<rank_state<K, V>> st(L);
  for (std::size_t i = 0; i < L; ++i) {
    rank_state<K, V>& s = st[i];
    s.device = t.local(static_cast<int>(i)).device;
    s.rank = t.local(static_cast<int>(i)).rank;
    s.stream = t.local(static_cast<int>(i)).stream;
    const shard_view<K, V>* shard = i < shards.size() && shards.size() == L ? &shards[i] : nullptr;
    prepare_rank<WithValues, K, V, Comp>(s, shard, h.send[i], world, algorithm);
  }

  // A failure with collectives outstanding (a CUDA or NCCL error from here on
  // that not every rank sees alike) aborts the communicators, so that the
  // other ranks' operations fail instead of waiting for their deadline. The
  // checks that every rank makes alike throw outside these blocks and leave
  // the communicators usable.
  auto collective = [&](auto&& steps) {
    try {
      steps();
    } catch (...) {
      t.abort_all();
      throw;
    }
  };

  // 1. Headers, checked before anything is sorted.
  collective([&] { exchange_headers(t, st, h, algorithm); });
  const header* all = h.all;  // every local rank received the same
  check_headers(st, all, world, algorithm);
  long long longest = 0;
  for (int q = 0; q < world; ++q) longest = std::max(longest, all[q].n);
  const call_plan plan = plan_call(all, world, longest, options);

  // From the local sort on, the shard is the sort's scratch: whatever fails
  // after it, each rank gets its own elements back, sorted (restore_shard).
  try {
    const local_runs<K> runs = sort_locally<WithValues>(st, world, all, plan, comp, algorithm);
    early_cuts e;
    if (plan.early) collective([&] { early_round<WithValues>(t, st, all, runs, h.early, e, comp, scope, algorithm); });
    mark(1);
    const cut_matrix m{h.splits, world, plan.runs, plan.chunks};
    collective([&] {
      find_cuts(t, st, &rank_state<K, V>::search, runs, h.splits, m.stride(), longest, comp, scope, algorithm);
    });
    check_cuts(st, all, m, algorithm);
    mark(2);
    collective([&] { exchange_and_merge<WithValues>(t, st, all, m, plan, e, comp, scope, mark, algorithm); });
  } catch (...) {
    for (rank_state<K, V>& s : st) restore_shard<WithValues>(s, comp);
    throw;
  }
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
