// The sort across GPUs over NCCL: int32 keys and int32/int32 pairs, 2^28 ..
// 2^32 in all, on 1, 2 and 4 GPUs (as many as are visible), one process
// driving every GPU. For each: the whole call (CUDA events on every rank's
// stream, the slowest rank; median of runs), each phase (local sort,
// splitters with the header exchange, exchange, merge), and the floor of the
// exchange: a plain grouped ncclSend/ncclRecv all-to-all of the same bytes
// (n/k per pair of ranks). 1 GPU is lm::merge_sort itself (the one-rank path),
// the peer the speed-ups are taken against. Every sorted output is checked
// once (each rank sorted, ranks in order, lengths kept, same multiset).
//
//   libmerge_nccl_bench [--min-log2 N] [--max-log2 N] [--runs R] [--threads] [--loopback K]
//                       [--chunks C] [--taper T] [--early 0|1]
//
// --chunks C sets the exchange's rounds (the library's default otherwise;
// 1: the whole exchange, then the merge), --taper T each chunk's length
// over the one before (1: equal chunks; the library's default otherwise).
// --early 0 turns the early round off (2 GPUs: the first runs' pieces
// travelling while the second runs sort), --early 1 takes it at any size.
// The exchange column runs to the last round's arrival and the merge column
// is what is left after it.
//
// --threads drives each GPU from a thread of its own with a transport of its
// own rank (the launch style of one process per GPU); without it one thread
// drives every GPU (lm::nccl::merge_sort on a vector of shards).
//
// --loopback K runs K ranks on GPU 0 through the loopback transport: the
// phases of the distributed steps with every rank sharing one GPU (no
// scaling figure; it shows what the splitters and the merge tree cost).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <libmerge/nccl.hpp>

#include "gpu_bench_support.cuh"
#include <test/support/nccl_internals.cuh>

namespace lm = libmerge;
namespace nb = internals::nccl;

namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

struct key_of {
  unsigned seed;
  __host__ __device__ int operator()(long long i) const {
    std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + seed;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return static_cast<int>((x ^ (x >> 29)) >> 32);
  }
};
struct hash_of {
  __host__ __device__ std::uint64_t operator()(int k) const {
    std::uint64_t x = static_cast<std::uint64_t>(static_cast<std::uint32_t>(k)) * 0xD6E8FEB86659FD93ull;
    return x ^ (x >> 32);
  }
};

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One rank's data: the input (kept to restore before each run) and the
// buffers sorted in place.
struct rank_data {
  int device;
  cudaStream_t stream;
  long long n;
  thrust::device_vector<int> input, keys, vals, vals_input;
  std::vector<cudaEvent_t> marks;
};

struct result {
  float total = 0, phase[4] = {0, 0, 0, 0}, alltoall = 0, alltoall_copy = 0, alltoall_odd = 0, alltoall_pool = 0;
  bool ok = true;
};

// One process per GPU, as most launchers run it (--threads): a thread a GPU,
// each with a transport of its own rank alone.
bool one_thread_per_gpu = false;

// The exchange's rounds and their taper (--chunks, --taper; 0: the library's
// defaults).
int exchange_chunks = 0;
double exchange_taper = 0;
int early_round = -1;

template <bool Pairs, class Transport>
void sort_with(Transport& t, std::vector<std::unique_ptr<rank_data>>& ranks, nb::phase_marks* marks) {
  using V = std::conditional_t<Pairs, int, char>;
  std::vector<nb::shard_view<int, V>> v;
  for (auto& r : ranks) {
    V* vals = nullptr;
    if constexpr (Pairs) vals = thrust::raw_pointer_cast(r->vals.data());
    v.push_back({thrust::raw_pointer_cast(r->keys.data()), vals, r->n});
  }
  nb::sort_shards<Pairs>(t, v, lm::less<>(), Pairs ? "merge_sort_by_key" : "merge_sort", marks,
                         nb::exchange_options{exchange_chunks, exchange_taper, early_round});
}

template <class Transport>
void sort_all(Transport& t, std::vector<std::unique_ptr<rank_data>>& ranks, bool pairs,
              const std::vector<ncclComm_t>* comms, nb::phase_marks* marks) {
  if (!one_thread_per_gpu || comms == nullptr || ranks.size() < 2) {
    if (pairs) sort_with<true>(t, ranks, marks);
    else sort_with<false>(t, ranks, marks);
    return;
  }
  std::vector<std::thread> threads;
  std::vector<std::string> errors(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        cuda_check(cudaSetDevice(ranks[i]->device), "cudaSetDevice");
        nb::nccl_transport one({(*comms)[i]}, {ranks[i]->stream}, lm::nccl::default_timeout_s, "merge_sort");
        std::vector<std::unique_ptr<rank_data>> mine;
        mine.push_back(std::move(ranks[i]));
        nb::phase_marks m;
        if (marks != nullptr) m.events.push_back(marks->events[i]);
        try {
          if (pairs) sort_with<true>(one, mine, marks != nullptr ? &m : nullptr);
          else sort_with<false>(one, mine, marks != nullptr ? &m : nullptr);
        } catch (...) {
          ranks[i] = std::move(mine.front());
          throw;
        }
        ranks[i] = std::move(mine.front());
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& e : errors) {
    if (!e.empty()) throw std::runtime_error(e);
  }
}

template <class Transport>
result run_case(Transport& t, std::vector<std::unique_ptr<rank_data>>& ranks, bool pairs, int runs,
                const std::vector<ncclComm_t>* comms) {
  const int k = static_cast<int>(ranks.size());
  nb::phase_marks marks;
  for (auto& r : ranks) marks.events.push_back(r->marks);
  std::vector<std::vector<float>> total, phase[4];
  std::vector<float> a2a;
  for (int run = 0; run < runs + 1; ++run) {  // run 0 is the warm-up
    for (auto& r : ranks) {
      cuda_check(cudaSetDevice(r->device), "cudaSetDevice");
      cuda_check(cudaMemcpyAsync(thrust::raw_pointer_cast(r->keys.data()), thrust::raw_pointer_cast(r->input.data()),
                                 r->n * sizeof(int), cudaMemcpyDeviceToDevice, r->stream),
                 "restore keys");
      if (pairs) {
        cuda_check(cudaMemcpyAsync(thrust::raw_pointer_cast(r->vals.data()), thrust::raw_pointer_cast(r->vals_input.data()),
                                   r->n * sizeof(int), cudaMemcpyDeviceToDevice, r->stream),
                   "restore values");
      }
    }
    sort_all(t, ranks, pairs, comms, &marks);
    float worst = 0, ph[4] = {0, 0, 0, 0};
    for (auto& r : ranks) {
      cuda_check(cudaSetDevice(r->device), "cudaSetDevice");
      cuda_check(cudaEventSynchronize(r->marks[4]), "cudaEventSynchronize");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, r->marks[0], r->marks[4]), "elapsed");
      worst = std::max(worst, ms);
      for (int p = 0; p < 4; ++p) {
        cuda_check(cudaEventElapsedTime(&ms, r->marks[p], r->marks[p + 1]), "elapsed");
        ph[p] = std::max(ph[p], ms);
      }
    }
    if (run == 0) continue;
    total.push_back({worst});
    for (int p = 0; p < 4; ++p) phase[p].push_back({ph[p]});
  }
  result res;
  auto med = [](const std::vector<std::vector<float>>& v) {
    std::vector<float> f;
    for (auto& x : v) f.push_back(x[0]);
    return median(f);
  };
  res.total = med(total);
  for (int p = 0; p < 4; ++p) res.phase[p] = med(phase[p]);

  // The exchange's floor: a grouped all-to-all of n/k elements a pair; then
  // the same with each rank's own n/k elements copied on a second stream
  // meanwhile, as the sort does (how much the copy takes from the exchange).
  std::vector<cudaStream_t> side(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
    cuda_check(cudaSetDevice(ranks[static_cast<std::size_t>(i)]->device), "cudaSetDevice");
    cuda_check(cudaStreamCreateWithFlags(&side[static_cast<std::size_t>(i)], cudaStreamNonBlocking), "stream");
  }
  // Modes 2 and 3 (diagnostics, printed with LIBMERGE_BENCH_A2A_MODES set):
  // pieces of uneven sizes at 256-byte boundaries; receiving into a buffer
  // taken from libmerge's memory pool afresh each run, as the sort does.
  for (int mode = 0; mode < 4 && comms != nullptr && k > 1; ++mode) {
    const bool with_copy = mode == 1;
    a2a.clear();
    for (int run = 0; run < runs + 1; ++run) {
      std::vector<void*> pooled(static_cast<std::size_t>(k), nullptr);
      if (mode == 3) {
        for (int i = 0; i < k; ++i) {
          auto& r = *ranks[static_cast<std::size_t>(i)];
          cuda_check(cudaSetDevice(r.device), "cudaSetDevice");
          cuda_check(cudaMallocFromPoolAsync(&pooled[static_cast<std::size_t>(i)],
                                             r.n * sizeof(int) * (pairs ? 2 : 1) + 4096,
                                             internals::cuda::memory_pool(r.device), r.stream),
                     "pool");
        }
      }
      nccl_check(ncclGroupStart(), "ncclGroupStart");
      for (int i = 0; i < k; ++i) {
        auto& r = *ranks[static_cast<std::size_t>(i)];
        cuda_check(cudaSetDevice(r.device), "cudaSetDevice");
        cuda_check(cudaEventRecord(r.marks[0], r.stream), "record");
        // n/k keys (and values) to every other rank: the bytes a random input's
        // exchange moves.
        const std::size_t piece = static_cast<std::size_t>(r.n / k) * sizeof(int);
        const ncclComm_t comm = (*comms)[static_cast<std::size_t>(i)];
        auto send_recv = [&](const thrust::device_vector<int>& from, char* d) {
          const char* f = reinterpret_cast<const char*>(thrust::raw_pointer_cast(from.data()));
          for (int peer = 0; peer < k; ++peer) {
            if (peer == i) continue;
            // uneven (mode 2): i sends piece - 4 (i + 3 peer) KB - 4 i bytes to peer
            const std::size_t out = mode == 2 ? piece - 4096 * static_cast<std::size_t>(i + 3 * peer) - 4 * i : piece;
            const std::size_t in = mode == 2 ? piece - 4096 * static_cast<std::size_t>(peer + 3 * i) - 4 * peer : piece;
            nccl_check(ncclSend(f + peer * piece, out, ncclUint8, peer, comm, r.stream), "ncclSend");
            nccl_check(ncclRecv(d + peer * piece, in, ncclUint8, peer, comm, r.stream), "ncclRecv");
          }
        };
        char* keys_to = mode == 3 ? static_cast<char*>(pooled[static_cast<std::size_t>(i)])
                                  : reinterpret_cast<char*>(thrust::raw_pointer_cast(r.keys.data()));
        char* vals_to = mode == 3 ? keys_to + r.n * sizeof(int)
                                  : reinterpret_cast<char*>(thrust::raw_pointer_cast(r.vals.data()));
        send_recv(r.input, keys_to);
        if (pairs) send_recv(r.vals_input, vals_to);
      }
      nccl_check(ncclGroupEnd(), "ncclGroupEnd");
      for (int i = 0; i < k && with_copy; ++i) {
        auto& r = *ranks[static_cast<std::size_t>(i)];
        const cudaStream_t s2 = side[static_cast<std::size_t>(i)];
        cuda_check(cudaSetDevice(r.device), "cudaSetDevice");
        cuda_check(cudaEventRecord(r.marks[2], r.stream), "record");
        cuda_check(cudaStreamWaitEvent(s2, r.marks[2], 0), "wait");
        const std::size_t piece = static_cast<std::size_t>(r.n / k);
        cuda_check(cudaMemcpyAsync(thrust::raw_pointer_cast(r.keys.data()) + i * piece,
                                   thrust::raw_pointer_cast(r.input.data()) + i * piece, piece * sizeof(int),
                                   cudaMemcpyDeviceToDevice, s2),
                   "copy");
        cuda_check(cudaEventRecord(r.marks[3], s2), "record");
        cuda_check(cudaStreamWaitEvent(r.stream, r.marks[3], 0), "wait");
      }
      float worst = 0;
      for (auto& r : ranks) {
        cuda_check(cudaSetDevice(r->device), "cudaSetDevice");
        cuda_check(cudaEventRecord(r->marks[1], r->stream), "record");
        cuda_check(cudaEventSynchronize(r->marks[1]), "sync");
        float ms = 0;
        cuda_check(cudaEventElapsedTime(&ms, r->marks[0], r->marks[1]), "elapsed");
        worst = std::max(worst, ms);
      }
      if (run > 0) a2a.push_back(worst);
      for (int i = 0; i < k && mode == 3; ++i) {
        auto& r = *ranks[static_cast<std::size_t>(i)];
        cuda_check(cudaSetDevice(r.device), "cudaSetDevice");
        cuda_check(cudaFreeAsync(pooled[static_cast<std::size_t>(i)], r.stream), "free");
        cuda_check(cudaStreamSynchronize(r.stream), "sync");
      }
    }
    float& to = mode == 0 ? res.alltoall : mode == 1 ? res.alltoall_copy : mode == 2 ? res.alltoall_odd : res.alltoall_pool;
    to = median(a2a);
  }
  for (int i = 0; i < k; ++i) {
    cuda_check(cudaSetDevice(ranks[static_cast<std::size_t>(i)]->device), "cudaSetDevice");
    cuda_check(cudaStreamSynchronize(side[static_cast<std::size_t>(i)]), "sync");
    cudaStreamDestroy(side[static_cast<std::size_t>(i)]);
  }

  // Check the last run's output (the floor above overwrote keys: sort once more).
  for (auto& r : ranks) {
    cuda_check(cudaSetDevice(r->device), "cudaSetDevice");
    cuda_check(cudaMemcpyAsync(thrust::raw_pointer_cast(r->keys.data()), thrust::raw_pointer_cast(r->input.data()),
                               r->n * sizeof(int), cudaMemcpyDeviceToDevice, r->stream),
               "restore keys");
  }
  sort_all(t, ranks, false, comms, nullptr);
  std::uint64_t before = 0, after = 0;
  int last = 0;
  for (int i = 0; i < k; ++i) {
    auto& r = *ranks[static_cast<std::size_t>(i)];
    cuda_check(cudaSetDevice(r.device), "cudaSetDevice");
    cuda_check(cudaStreamSynchronize(r.stream), "sync");
    before += thrust::transform_reduce(r.input.begin(), r.input.end(), hash_of(), std::uint64_t(0), thrust::plus<std::uint64_t>());
    after += thrust::transform_reduce(r.keys.begin(), r.keys.end(), hash_of(), std::uint64_t(0), thrust::plus<std::uint64_t>());
    if (!thrust::is_sorted(r.keys.begin(), r.keys.end())) res.ok = false;
    if (r.n > 0) {
      if (i > 0 && last > int(r.keys.front())) res.ok = false;
      last = r.keys.back();
    }
  }
  if (before != after) res.ok = false;
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // never NVLink multicast on shared machines
  int min_log2 = 28, max_log2 = 30, runs = 5, loopback = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--max-log2") && i + 1 < argc) max_log2 = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--min-log2") && i + 1 < argc) min_log2 = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--chunks") && i + 1 < argc) exchange_chunks = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--taper") && i + 1 < argc) exchange_taper = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--early") && i + 1 < argc) early_round = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--loopback") && i + 1 < argc) loopback = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--threads")) one_thread_per_gpu = true;
  }
  int visible = 0;
  cuda_check(cudaGetDeviceCount(&visible), "cudaGetDeviceCount");
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int nccl_version = 0;
  ncclGetVersion(&nccl_version);
  std::printf("# %d x %s, NCCL %d, median of %d runs after a warm-up; ms; %s; exchange in %s chunks, taper %s, early "
              "round %s\n",
              visible, prop.name, nccl_version, runs, one_thread_per_gpu ? "a thread a GPU" : "one thread drives every GPU",
              exchange_chunks > 0 ? std::to_string(exchange_chunks).c_str() : "the default number of",
              exchange_taper > 0 ? std::to_string(exchange_taper).c_str() : "the default",
              early_round < 0 ? "by default" : (early_round ? "wherever two runs" : "off"));
  std::printf("%-6s %-5s %5s %10s %10s %10s %10s %10s %10s %10s %8s %8s %s\n", "keys", "type", "gpus", "total",
              "local_sort", "splitters", "exchange", "merge", "alltoall", "a2a+copy", "xchg/a2a", "vs_1gpu", "check");
  std::vector<int> counts;
  if (loopback > 0) counts = {loopback};
  else for (int g : {1, 2, 4}) if (g <= visible) counts.push_back(g);
  for (int lg = min_log2; lg <= max_log2; ++lg) {
    for (bool pairs : {false, true}) {
      float one_gpu = 0;
      for (int g : counts) {
        const long long total = 1LL << lg;
        std::vector<std::unique_ptr<rank_data>> ranks;
        std::vector<cudaStream_t> streams;
        std::vector<ncclComm_t> comms(static_cast<std::size_t>(g));
        try {
          long long base = 0;
          for (int i = 0; i < g; ++i) {
            auto r = std::make_unique<rank_data>();
            r->device = loopback > 0 ? 0 : i;
            r->n = total / g;
            cuda_check(cudaSetDevice(r->device), "cudaSetDevice");
            cuda_check(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking), "stream");
            r->input.resize(static_cast<std::size_t>(r->n));
            r->keys.resize(static_cast<std::size_t>(r->n));
            thrust::transform(thrust::counting_iterator<long long>(base), thrust::counting_iterator<long long>(base + r->n),
                              r->input.begin(), key_of{1});
            if (pairs) {
              r->vals.resize(static_cast<std::size_t>(r->n));
              r->vals_input.resize(static_cast<std::size_t>(r->n));
              thrust::transform(thrust::counting_iterator<long long>(base), thrust::counting_iterator<long long>(base + r->n),
                                r->vals_input.begin(), key_of{2});
            }
            base += r->n;
            r->marks.resize(5);
            for (auto& e : r->marks) cuda_check(cudaEventCreate(&e), "event");
            streams.push_back(r->stream);
            ranks.push_back(std::move(r));
          }
          result res;
          if (loopback > 0) {
            nb::loopback_transport t(streams, "merge_sort");
            res = run_case(t, ranks, pairs, runs, nullptr);
          } else {
            std::vector<int> devs(static_cast<std::size_t>(g));
            for (int i = 0; i < g; ++i) devs[static_cast<std::size_t>(i)] = i;
            nccl_check(ncclCommInitAll(comms.data(), g, devs.data()), "ncclCommInitAll");
            nb::nccl_transport t(comms, streams, lm::nccl::default_timeout_s, "merge_sort");
            res = run_case(t, ranks, pairs, runs, &comms);
            for (auto c : comms) ncclCommDestroy(c);
          }
          if (g == 1) one_gpu = res.total;
          if (std::getenv("LIBMERGE_BENCH_A2A_MODES") != nullptr && g > 1) {
            std::printf("#   2^%d %s %d GPUs: a2a of uneven pieces %.3f, into fresh pool memory %.3f\n", lg,
                        pairs ? "pairs" : "int32", g, res.alltoall_odd, res.alltoall_pool);
          }
          std::printf("2^%-4d %-5s %5d %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %8.2f %8.2f %s\n", lg,
                      pairs ? "pairs" : "int32", g, res.total, res.phase[0], res.phase[1], res.phase[2], res.phase[3],
                      res.alltoall, res.alltoall_copy, res.alltoall > 0 ? res.phase[2] / res.alltoall : 0.0,
                      one_gpu > 0 ? one_gpu / res.total : 0.0, res.ok ? "ok" : "WRONG");
        } catch (const std::exception& e) {
          std::printf("2^%-4d %-5s %5d skipped: %s\n", lg, pairs ? "pairs" : "int32", g, e.what());
          cudaGetLastError();
        }
        std::fflush(stdout);
        for (auto& r : ranks) {
          cudaSetDevice(r->device);
          cudaStreamSynchronize(r->stream);
          for (auto e : r->marks) cudaEventDestroy(e);
          cudaStreamDestroy(r->stream);
        }
        ranks.clear();
        cudaSetDevice(0);
      }
    }
  }
  return 0;
}
