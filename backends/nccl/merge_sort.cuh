// Merge sort of data spread over the ranks of an NCCL communicator (one GPU a
// rank), with exactly balanced, stable output. One call, every rank:
//
//   1. headers      an all-gather of each rank's length, key/value/comparator
//                   types and any failure so far; host wait 1: every rank
//                   checks every header and all throw alike, before any rank
//                   touches its shard
//   2. local sort   each rank sorts its shard with the CUDA merge sort
//   3. splitters    exact global splitters by a distributed co-rank search
//                   (splitters.cuh), then an all-gather of every rank's cuts
//                   and status; host wait 2
//   4. exchange     one NCCL group of ncclSend/ncclRecv for keys and values,
//                   each piece moved on 256-byte boundaries (wire()); the piece
//                   a rank keeps is copied beside it on a second stream;
//                   host wait 3: every piece has arrived
//   5. merge        each rank merges the pieces it received (a tree of CUDA
//                   merges, lower ranks first, so ties stay stable) into its
//                   shard; host wait 4: the call returns when the sort is
//                   done, as thrust::sort does
//
// Global order is (key, rank, position): rank r ends with the elements of
// global positions [G_r, G_r + n_r), where n_r is its own shard's length and
// G_r the sum of the lower ranks' lengths. Boundary s (s = 1 .. world-1) cuts
// every rank q's sorted shard at S_q(s) = the number of q's elements among the
// first G_s; rank q sends [S_q(s), S_q(s+1)) to rank s.
//
// Failures. Whatever fails on one rank must reach the others, or they wait:
//  - before the headers (a host or null pointer, a stream of another device,
//    a shard missing, no staging memory): the rank still sends its header,
//    flagged with its message; every rank throws before sorting anything;
//  - after them (the local sort, the exchange's buffers): the rank still
//    takes part in the search and flags its status beside its cuts; every
//    rank throws before anything is exchanged;
//  - a rank that never comes, or dies: the transport's deadline (.timeout)
//    covers the whole call, waits inside NCCL included (transport.cuh).
// Each rank's data stays a permutation of what it held (sorted locally once
// the headers passed) unless the merge itself fails.
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
  long long key_misalign, value_misalign;  // the arrays' addresses mod wire_align (wire())
  long long failed;                        // this rank failed before the headers
  char reason[184];                        // the start of its message
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

// How piece [a, b) of a sender's array (elements of `size` bytes, n of them,
// the array's address `misalign` bytes past a wire_align boundary) travels:
// the sender sends bytes [lo, hi) of its array, moved out to wire_align
// boundaries of the address as far as the array allows, into a slot of the
// receiver that starts on such a boundary, where the piece starts `head`
// bytes in. NCCL copies buffers aligned to 16 bytes 16 bytes a load and
// others an element (here a byte) at a time, and cuts fall anywhere: with
// pieces on 16-byte boundaries alone, 2^30 int32 keys on 2 H200s exchanged
// in 1.25x the time of a plain all-to-all of the same bytes (was 1.8x).
inline constexpr std::size_t wire_align = 256;
inline std::size_t align_wire(std::size_t x) { return (x + wire_align - 1) / wire_align * wire_align; }

struct wire_piece {
  std::size_t lo = 0, hi = 0, head = 0;
  std::size_t slot() const { return align_wire(hi - lo); }
};
inline wire_piece wire(long long a, long long b, std::size_t size, long long misalign, long long n) {
  if (b <= a) return {};
  const std::size_t m = static_cast<std::size_t>(misalign);
  const std::size_t begin = static_cast<std::size_t>(a) * size, end = static_cast<std::size_t>(b) * size;
  const std::size_t total = static_cast<std::size_t>(n) * size;
  wire_piece w;
  const std::size_t before = (m + begin) % wire_align;
  w.lo = before <= begin ? begin - before : 0;
  const std::size_t after = (wire_align - (m + end) % wire_align) % wire_align;
  w.hi = end + after <= total ? end + after : total;
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
  splitter_buffers<K> search;
  // The exchange receives into `big`: keys' slots, then values' slots.
  char* recv_keys = nullptr;
  char* recv_vals = nullptr;
  K* tmp_keys = nullptr;  // the merge tree's second buffer (more than two pieces)
  V* tmp_vals = nullptr;
  // The copy of the piece a rank keeps runs beside the NCCL group.
  cudaStream_t side = nullptr;
  cudaEvent_t sorted = nullptr, copied = nullptr;

  rank_state() = default;
  rank_state(const rank_state&) = delete;
  rank_state& operator=(const rank_state&) = delete;
  ~rank_state() {
    // Temporary storage goes back on the rank's stream, with its device current.
    // (before the side stream, which is `stream` for a rank whose own
    // stream was of another device).
    cudaSetDevice(device);
    big.reset();
    small.reset();
    if (sorted != nullptr) cudaEventDestroy(sorted);
    if (copied != nullptr) cudaEventDestroy(copied);
    if (side != nullptr) cudaStreamDestroy(side);
  }
};

// Events a benchmark hands in (one row per local rank, made on its device) to
// time the phases: recorded on the rank's stream at the start, after the local
// sort, after the splitters, after the exchange and after the merge.
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
  long long* splits;  // local x world x (world + 2)
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
  check_cuda(cudaEventCreateWithFlags(&s.sorted, cudaEventDisableTiming), algorithm, "cudaEventCreate");
  check_cuda(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming), algorithm, "cudaEventCreate");
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
    h.key_misalign = static_cast<long long>(reinterpret_cast<std::uintptr_t>(s.shard.keys) % wire_align);
    h.value_misalign =
        WithValues ? static_cast<long long>(reinterpret_cast<std::uintptr_t>(s.shard.vals) % wire_align) : 0;
  } catch (const std::exception& e) {
    s.error = std::current_exception();
    h.failed = 1;
    std::strncpy(h.reason, e.what(), sizeof(h.reason) - 1);
  } catch (...) {
    s.error = std::current_exception();
    h.failed = 1;
  }
  s.search.world = world;
  const std::size_t headers = align16(sizeof(header)) + align16(static_cast<std::size_t>(world) * sizeof(header));
  s.small.emplace(cuda::pool_allocator{}, s.stream, headers + s.search.bytes(), algorithm);
  char* p = s.small->template as<char>();
  s.header_send = reinterpret_cast<header*>(p);
  s.header_all = reinterpret_cast<header*>(p + align16(sizeof(header)));
  s.search.carve(p + headers);
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

// The local sort and the exchange's buffers: a failure becomes the rank's
// status, which travels with its cuts (check_cuts). The local sort's scratch
// goes back to the pool before the exchange's buffers are taken.
template <bool WithValues, class K, class V, class Comp>
long long sort_rank(rank_state<K, V>& s, int world, Comp comp, const char* algorithm) {
  try {
    check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
    const auto par = cuda::par.on(s.stream);
    if constexpr (WithValues) {
      libmerge::merge_sort_by_key(par, s.shard.keys, s.shard.keys + s.shard.n, s.shard.vals, comp);
    } else {
      libmerge::merge_sort(par, s.shard.keys, s.shard.keys + s.shard.n, comp);
    }
    if (s.shard.n == 0) return 0;
    // Received slots: the elements and up to 3 wire_align of padding a
    // piece (wire()); the merge tree's second buffer with more than two
    // pieces.
    const std::size_t n = static_cast<std::size_t>(s.shard.n);
    const std::size_t pad = static_cast<std::size_t>(world) * 3 * wire_align;
    const std::size_t keys = align_wire(n * sizeof(K) + pad), vals = WithValues ? align_wire(n * sizeof(V) + pad) : 0;
    const std::size_t tmp = world > 2 ? align16(n * sizeof(K)) + (WithValues ? align16(n * sizeof(V)) : 0) : 0;
    s.big.emplace(cuda::pool_allocator{}, s.stream, keys + vals + tmp, algorithm);
    char* p = s.big->template as<char>();
    s.recv_keys = p;
    s.recv_vals = p + keys;
    if (world > 2) {
      s.tmp_keys = reinterpret_cast<K*>(p + keys + vals);
      if constexpr (WithValues) s.tmp_vals = reinterpret_cast<V*>(p + keys + vals + align16(n * sizeof(K)));
    }
    return 0;
  } catch (...) {
    s.error = std::current_exception();
    return 1;
  }
}

// The checks every rank makes alike on the cut matrix (the same on every
// rank): a rank that failed after the headers, and cuts that do not add up
// (a comparator that is no strict weak ordering).
template <class K, class V, class Cut>
void check_cuts(const std::vector<rank_state<K, V>>& st, const header* all, int world, Cut cut, const char* algorithm) {
  rethrow_local_failure(st);
  for (int q = 0; q < world; ++q) {
    if (cut(q, world + 1) != 0) {
      throw std::runtime_error(std::string("libmerge::") + algorithm + ": rank " + std::to_string(q) +
                               " failed in its local sort or allocating the exchange's buffers (its exception "
                               "says why); nothing was exchanged");
    }
  }
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
                               "ordering, or the ranks passed different data types or comparators; nothing was "
                               "exchanged");
    }
    if (s < world) g += all[s].n;
  }
}

// What a local rank sends and receives of one array (elements of `size`
// bytes): pieces for the transport, and where each received piece starts in
// its slot.
struct wire_plan {
  pieces out, in;
  std::vector<std::size_t> head;
};
template <class Cut>
wire_plan plan_wire(int r, int world, std::size_t size, const header* all, bool values, Cut cut) {
  wire_plan p;
  std::size_t at = 0;
  for (int q = 0; q < world; ++q) {
    const long long mine = values ? all[r].value_misalign : all[r].key_misalign;
    const long long theirs = values ? all[q].value_misalign : all[q].key_misalign;
    const wire_piece o = wire(cut(r, q), cut(r, q + 1), size, mine, all[r].n);
    const wire_piece i = wire(cut(q, r), cut(q, r + 1), size, theirs, all[q].n);
    p.out.offset.push_back(o.lo);
    p.out.bytes.push_back(o.hi - o.lo);
    p.in.offset.push_back(at);
    p.in.bytes.push_back(i.hi - i.lo);
    p.head.push_back(i.head);
    at += i.slot();
  }
  return p;
}

// Step 4 over every local rank: keys and values in one NCCL group (kp, vp:
// each rank's wire plans, for the merge to find the pieces); the piece a rank
// keeps is copied on its side stream meanwhile, and the rank's stream waits
// for that copy.
template <bool WithValues, class K, class V, class Transport, class Cut>
void exchange_pieces(Transport& t, std::vector<rank_state<K, V>>& st, const header* all, Cut cut,
                     std::vector<wire_plan>& kp, std::vector<wire_plan>& vp, const char* algorithm) {
  const int world = t.world();
  for (rank_state<K, V>& s : st) {
    kp.push_back(plan_wire(s.rank, world, sizeof(K), all, false, cut));
    if constexpr (WithValues) vp.push_back(plan_wire(s.rank, world, sizeof(V), all, true, cut));
    check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
    check_cuda(cudaEventRecord(s.sorted, s.stream), algorithm, "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(s.side, s.sorted, 0), algorithm, "cudaStreamWaitEvent");
  }
  auto send = [&](const std::vector<wire_plan>& p, bool values) {
    std::vector<const char*> from;
    std::vector<char*> to;
    std::vector<pieces> out, in;
    for (std::size_t i = 0; i < st.size(); ++i) {
      from.push_back(values ? reinterpret_cast<const char*>(st[i].shard.vals)
                            : reinterpret_cast<const char*>(st[i].shard.keys));
      to.push_back(values ? st[i].recv_vals : st[i].recv_keys);
      out.push_back(p[i].out);
      in.push_back(p[i].in);
    }
    t.exchange(from, out, to, in);
  };
  t.grouped([&] {
    send(kp, false);
    if constexpr (WithValues) send(vp, true);
  });
  // The kept piece's copy, queued after the NCCL kernels so that they take
  // their SMs first (queued before, the copy held every SM while the
  // exchange waited: 1.25x against 1.07x the plain all-to-all on 2 H200s).
  for (std::size_t i = 0; i < st.size(); ++i) {
    rank_state<K, V>& s = st[i];
    check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
    auto keep = [&](const wire_plan& p, const void* from, char* to) {
      const std::size_t r = static_cast<std::size_t>(s.rank);
      if (p.in.bytes[r] == 0) return;
      check_cuda(cudaMemcpyAsync(to + p.in.offset[r], static_cast<const char*>(from) + p.out.offset[r],
                                 p.in.bytes[r], cudaMemcpyDeviceToDevice, s.side),
                 algorithm, "cudaMemcpyAsync (the rank's own piece)");
    };
    keep(kp[i], s.shard.keys, s.recv_keys);
    if constexpr (WithValues) keep(vp[i], s.shard.vals, s.recv_vals);
    check_cuda(cudaEventRecord(s.copied, s.side), algorithm, "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(s.stream, s.copied, 0), algorithm, "cudaStreamWaitEvent");
  }
}

// The pieces rank s received, as runs in rank order for merge_runs: each
// starts where wire() put it in its slot.
template <bool WithValues, class K, class V, class Cut>
std::vector<run<K, V>> received_runs(const rank_state<K, V>& s, int world, const wire_plan& kp, const wire_plan* vp,
                                     Cut cut) {
  std::vector<run<K, V>> runs;
  long long out = 0;
  for (int q = 0; q < world; ++q) {
    const std::size_t u = static_cast<std::size_t>(q);
    const long long n = cut(q, s.rank + 1) - cut(q, s.rank);
    if (n == 0) continue;
    const K* k = reinterpret_cast<const K*>(s.recv_keys + kp.in.offset[u] + kp.head[u]);
    const V* v = nullptr;
    if constexpr (WithValues) v = reinterpret_cast<const V*>(s.recv_vals + vp->in.offset[u] + vp->head[u]);
    runs.push_back({k, v, out, n});
    out += n;
  }
  return runs;
}

// The sort of every shard this process drives (one per local rank of t).
template <bool WithValues, class K, class V, class Transport, class Comp>
void sort_shards(Transport& t, const std::vector<shard_view<K, V>>& shards, Comp comp, const char* algorithm,
                 phase_marks* marks = nullptr) {
  static_assert(alignof(K) <= 16 && alignof(V) <= 16,
                "libmerge::merge_sort (NCCL backend): keys and values aligned to more than 16 bytes are not "
                "supported");
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
  // One rank: the single-GPU sort, nothing to exchange.
  if (world == 1 && shards.size() == 1) {
    const shard_view<K, V>& sh = shards[0];
    scope.set(t.local(0).device, algorithm);
    const auto par = cuda::par.on(t.local(0).stream);
    if constexpr (WithValues) {
      libmerge::merge_sort_by_key(par, sh.keys, sh.keys + sh.n, sh.vals, comp);
    } else {
      libmerge::merge_sort(par, sh.keys, sh.keys + sh.n, comp);
    }
    for (int phase = 1; phase <= 4; ++phase) mark(phase);
    t.wait_all();
    return;
  }

  const std::size_t words = static_cast<std::size_t>(world) + 2;  // a rank's cuts and status
  const std::size_t L = static_cast<std::size_t>(local), W = static_cast<std::size_t>(world);
  host_staging staging(L * sizeof(header) + L * W * sizeof(header) + L * W * words * sizeof(long long));
  const host_view h{reinterpret_cast<header*>(staging.data()),
                    reinterpret_cast<header*>(staging.data() + L * sizeof(header)),
                    reinterpret_cast<long long*>(staging.data() + L * sizeof(header) + L * W * sizeof(header))};
  std::vector<rank_state<K, V>> st(L);
  for (int i = 0; i < local; ++i) {
    rank_state<K, V>& s = st[static_cast<std::size_t>(i)];
    s.device = t.local(i).device;
    s.rank = t.local(i).rank;
    s.stream = t.local(i).stream;
    const shard_view<K, V>* shard = static_cast<std::size_t>(i) < shards.size() && shards.size() == L
                                        ? &shards[static_cast<std::size_t>(i)]
                                        : nullptr;
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

  // 2. Local sorts.
  std::vector<long long> status, lengths;
  std::vector<const K*> keys;
  std::vector<const long long*> all_lengths;
  for (rank_state<K, V>& s : st) {
    status.push_back(sort_rank<WithValues>(s, world, comp, algorithm));
    lengths.push_back(static_cast<long long>(s.shard.n));
    keys.push_back(s.shard.keys);
    all_lengths.push_back(&s.header_all[0].n);
  }
  mark(1);

  // 3. Splitters, and every rank's cuts and status to every host (wait 2).
  collective([&] {
    std::vector<splitter_buffers<K>> bufs;
    for (rank_state<K, V>& s : st) bufs.push_back(s.search);
    find_splitters(t, bufs, keys, lengths, status, all_lengths, static_cast<int>(sizeof(header) / sizeof(long long)),
                   longest, comp, [&](int i) { scope.set(st[static_cast<std::size_t>(i)].device, algorithm); },
                   algorithm);
    for (std::size_t i = 0; i < L; ++i) {
      scope.set(st[i].device, algorithm);
      check_cuda(cudaMemcpyAsync(h.splits + i * W * words, st[i].search.splits_all, W * words * sizeof(long long),
                                 cudaMemcpyDeviceToHost, st[i].stream),
                 algorithm, "cudaMemcpyAsync (cuts)");
    }
    t.wait_all();
  });
  // cut(q, s) = S_q(s); cut(q, world + 1) is rank q's status.
  auto cut = [&](int q, int s) { return h.splits[static_cast<std::size_t>(q) * words + static_cast<std::size_t>(s)]; };
  check_cuts(st, all, world, cut, algorithm);
  mark(2);

  // 4. Exchange (exchange_pieces).
  collective([&] {
    std::vector<wire_plan> kp, vp;
    exchange_pieces<WithValues>(t, st, all, cut, kp, vp, algorithm);
    mark(3);

    // 5. Merge what each rank received, then wait for the end (wait 4).
    for (std::size_t i = 0; i < L; ++i) {
      rank_state<K, V>& s = st[i];
      // Host wait 3: the merge overwrites the caller's shard, so it starts
      // only once every piece has arrived; a rank that fails during the
      // exchange leaves every shard as it was sorted locally. A rank at a
      // time, so that one thread driving several GPUs starts each merge as
      // its rank is ready (waiting for all first cost 0.44 ms on 4 H200s).
      t.wait(static_cast<int>(i));
      scope.set(s.device, algorithm);
      merge_runs<WithValues>(s, received_runs<WithValues>(s, world, kp[i], WithValues ? &vp[i] : nullptr, cut), comp,
                             algorithm);
    }
    mark(4);
    t.wait_all();
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
