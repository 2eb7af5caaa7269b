// The NCCL sort's plan, decided alike on every rank from the headers: runs,
// rounds and taper, the early round, and where received pieces go.
#pragma once

#include "state.cuh"

namespace libmerge::detail::nccl_backend {

// four_way: lm::multiway_merge merges a receiving rank's pieces 4 ways a pass
// (else 2 ways a level), so that two runs a rank pay on 2 GPUs.
struct call_plan {
  int runs = 1;
  int chunks = 1;  // the exchange's rounds; each rank's output is cut into as many chunks
  double taper = 1.0;  // each chunk over the one before (chunk_target)
  bool four_way = false;
  bool early = false;  // the first runs' pieces travel while the second runs sort (early_round)
  int pieces(int world) const { return world * runs; }  // a chunk's
};

// Default rounds: as many as ranks up to 4 (past 4: one, unmeasured), chunks
// of min_chunk or more, tapered: the first (alone on the wire) longest, the
// last (whose merge nothing hides) shortest.
// 2 H200s, 2^30 int32 keys: 25.22-25.45 ms tapered 0.8 against 25.4-25.8 in 2 equal rounds (docs/multi-gpu-sort.md)
inline constexpr int most_default_chunks = 4;
inline constexpr long long min_chunk = 1LL << 22;
inline double default_taper(int world) { return world <= 2 ? 0.8 : 0.6; }

// Default early round from first runs of this many elements: it costs a search
// and a host wait whatever it moves (gains measured at 2^26 and 2^28, not below).
inline constexpr long long min_early = 1LL << 20;
// Elements of 4 bytes or fewer from min_early_small: their exchange is cheap
// beside the two half sorts the early round needs.
// 2 H200s, 2^28 int32 keys in all: 6.94-6.98 ms with it, 6.43-6.58 without (docs/multi-gpu-sort.md)
inline constexpr long long min_early_small = 1LL << 27;

// Tests' and benchmarks' exchange choices (the same on every rank: not in the headers).
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
  // Two runs a rank where the receiver merges 2 x 2 pieces in one pass (most_runs).
  c.runs = c.four_way ? most_runs(world) : 1;
  const long long wanted =
      chunks > 0 ? chunks : (world <= most_default_chunks ? std::min<long long>(longest / min_chunk, world) : 1);
  c.chunks = static_cast<int>(std::clamp<long long>(wanted, 1, max_chunks));
  c.early = early != 0 && c.runs == 2;
  // Every rank's element size is the same (check_headers).
  const long long least = all[0].key_bytes + all[0].value_bytes <= 4 ? min_early_small : min_early;
  for (int q = 0; q < world; ++q) {
    const long long w = all[q].half;
    c.early = c.early && w > 0 && w < all[q].n && (early > 0 || w >= least);
  }
  // After the early round the exchange moves about half as much, and the
  // merges, not NCCL, set the pace: more rounds, equal.
  // 2 H100s, 2^30 int32 keys: 4 equal rounds 25.90 ms against 25.97-26.17 in 2 tapered 0.8 (docs/multi-gpu-sort.md)
  if (c.early && chunks <= 0) {
    c.chunks = static_cast<int>(std::clamp<long long>(longest / min_chunk, 1, most_default_chunks));
  }
  c.taper = taper > 0 ? taper : (c.early ? 1.0 : default_taper(world));
  return c;
}

// Where local rank r keeps what arrives with plan.early: after its runs, a
// mirror of each peer's first run (pieces at their own offsets, as aligned as
// there), then slots for the second runs' pieces.
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

// Room around each received piece: pieces widen to wire_align boundaries (wire()).
template <class K, class V, bool WithValues>
std::size_t slot_margin() {
  const std::size_t smallest = WithValues ? std::min(sizeof(K), sizeof(V)) : sizeof(K);
  return (wire_align + smallest - 1) / smallest;
}

// A rank's exchange stream and events, waiting for the runs (or first run).
// Highest priority: NCCL's kernels take SMs as merge blocks end, not after a wave.
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

}  // namespace libmerge::detail::nccl_backend
