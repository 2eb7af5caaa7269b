// The NCCL sort's state (merge_sort.cuh has the steps): what a rank's part of
// a call holds, what the ranks tell each other first (header), the pinned
// host memory their copies land in, and how a piece travels on the wire.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
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
// byte) at a time, and cuts fall anywhere. The receiver puts the piece where
// lo lands on a 16-byte boundary too (plan_pieces).
// 2 H200s, 2^30 int32 keys: exchange 1.25x a plain all-to-all on 16-byte boundaries, 1.8x without (docs/multi-gpu-sort.md)
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

// A step at which a transport may have one rank fail as if its allocation
// there had (a transport's optional fault_for(rank); the tests' loopback
// transport has one), so that tests reach the failure paths after the
// headers. sort_shards copies it into the rank's state.
enum class fault_at {
  none,
  small,       // the protocol's buffers beside the headers' (prepare_rank)
  big,         // the exchange's buffer: the runs and receive slots (sort_rank)
  local_sort,  // the local sort's temporary storage (sort_rank)
  merge,       // the last chunk's merge's temporary storage (merge_pieces)
};

// Where `set` is `here`, the CUDA error of an allocation that failed (a
// compare otherwise).
inline void fail_point(fault_at set, fault_at here, const char* algorithm) {
  if (set != fault_at::none && set == here) {
    throw cuda_error(cudaErrorMemoryAllocation, algorithm, "allocating temporary storage (a failure a test injected)");
  }
}

// A rank's own failure, with its rank named where it was not (one thread
// may drive several ranks): a CUDA error keeps its type and code, an invalid
// argument its type; NCCL errors (which name it) and others go as they are.
class rank_cuda_error : public cuda_error {
 public:
  rank_cuda_error(const cuda_error& e, const std::string& message)
      : cuda_error(preformatted{}, e.code(), e.algorithm(), message) {}
};
inline std::string naming_rank(const char* what, int rank, int world, const char* algorithm) {
  const std::string prefix = std::string("libmerge::") + algorithm + ": ";
  std::string rest(what);
  if (rest.compare(0, prefix.size(), prefix) == 0) rest.erase(0, prefix.size());
  return prefix + "rank " + std::to_string(rank) + " of " + std::to_string(world) + ": " + rest;
}
[[noreturn]] inline void rethrow_naming(const std::exception_ptr& error, int rank, int world, const char* algorithm) {
  try {
    std::rethrow_exception(error);
  } catch (const nccl_error&) {
    throw;
  } catch (const cuda_error& e) {
    throw rank_cuda_error(e, naming_rank(e.what(), rank, world, algorithm));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(naming_rank(e.what(), rank, world, algorithm));
  }
}

// Every local rank's part of a call.
template <class K, class V>
struct rank_state {
  int device = 0;
  int rank = 0;
  cudaStream_t stream = nullptr;
  shard_view<K, V> shard{};
  std::exception_ptr error;  // what failed on this rank (reported to the others)
  fault_at fault = fault_at::none;  // the transport's fault_for(rank), else none
  std::optional<cuda_backend::temporary_storage<cuda::pool_allocator>> small, big;
  header* header_send = nullptr;
  header* header_all = nullptr;
  // Two words each rank all-reduces behind its merges (exchange_and_merge):
  // 1 and its rank where its merges failed to queue, else 0 and 0.
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
  // A stream of the rank's device, made only for a rank whose own stream is
  // of another device (it still reports to the others on it).
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
    // Temporary storage goes back on the rank's stream with its device
    // current, before the side stream (`stream` for a rank whose own stream
    // was of another device) is destroyed.
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

}  // namespace libmerge::detail::nccl_backend
