// The NCCL sort's state (steps: merge_sort.cuh): a rank's part of a call, the
// header, pinned host staging, and how a piece travels on the wire.
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
#include "../../libmerge/merge.hpp"
#include "../../libmerge/merge_sort.hpp"
#include "../../libmerge/multiway_merge.hpp"
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
  long long four_way;  // its multiway_merge takes 4 runs a pass for these types (outline_runs)
  long long half;      // W of its local sort's two runs [0, W) and [W, n) on 2 GPUs, else 0 (early_round)
  char reason[184];    // the start of its message
};
static_assert(sizeof(header) == 256, "headers travel as 256-byte records");

// A type's identity across processes of one build: FNV-1a of its mangled name.
inline long long type_code(const char* name) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char* c = name; *c != '\0'; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  return static_cast<long long>(h);
}

// Pinned host memory for copies back (the host polls them against the
// deadline); one buffer a thread, kept, since freeing pinned memory syncs the
// device. Pageable fallback: copies block, still bounded by the watchdog.
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

// How piece [a, b) travels: bytes [lo, hi), widened to wire_align boundaries
// within the array, the piece `head` bytes past lo. NCCL copies 16-byte-aligned
// buffers 16 bytes a load, others a byte at a time (receiver: plan_pieces).
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

// A step at which a transport's optional fault_for(rank) fails a rank's
// allocation, so tests reach the failure paths after the headers.
enum class fault_at {
  none,
  small,       // the protocol's buffers beside the headers' (prepare_rank)
  big,         // the exchange's buffer: the runs and receive slots (sort_rank)
  local_sort,  // the local sort's temporary storage (sort_rank)
  merge,       // the last chunk's merge's temporary storage (merge_pieces)
};

// An allocation's CUDA error where `set` is `here`.
inline void fail_point(fault_at set, fault_at here, const char* algorithm) {
  if (set != fault_at::none && set == here) {
    throw cuda_error(cudaErrorMemoryAllocation, algorithm, "allocating temporary storage (a failure a test injected)");
  }
}

// A rank's own failure, rethrown naming its rank (keeping type and code).
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
  std::optional<gpu::temporary_storage<cuda::pool_allocator>> small, big;
  header* header_send = nullptr;
  header* header_all = nullptr;
  // The two words close_merges all-reduces.
  unsigned long long* done_send = nullptr;
  unsigned long long* done_all = nullptr;
  splitter_buffers<K> search;
  splitter_buffers<K> early_search;  // the early round's, over the first runs alone (early_round)
  // `big`: keys' array then values': the runs [0, n), then receive slots, at
  // the same element offsets in both arrays (plan_pieces) for one 4-way merge.
  K* keys = nullptr;
  V* vals = nullptr;
  bool sorted = false;  // the runs hold the rank's shard, sorted (restore_shard)
  // The early round: where peer q's first run is mirrored in keys/vals
  // (mirror[q]; -1 for the rank itself), early pieces or later (layout_early).
  long long half = 0;
  bool first_sorted = false;
  std::vector<long long> mirror;
  long long slots = 0;  // where the second runs' pieces start (layout_early)
  // Made only where the rank's own stream is of another device.
  cudaStream_t side = nullptr;
  // Highest-priority exchange stream; events [0] runs ready, [1 + c] chunk c arrived.
  cudaStream_t exchange_stream = nullptr;
  std::vector<cudaEvent_t> events;
  cudaEvent_t first_run = nullptr, early_done = nullptr;  // (also in events)

  rank_state() = default;
  rank_state(const rank_state&) = delete;
  rank_state& operator=(const rank_state&) = delete;
  ~rank_state() {
    // Temporary storage goes back before the side stream is destroyed.
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

// A benchmark's phase events, a row per local rank: start, local sort,
// splitters, last chunk exchanged (exchange stream), merge.
struct phase_marks {
  std::vector<std::vector<cudaEvent_t>> events;
};

}  // namespace libmerge::detail::nccl_backend
