// Sorts one data set spread over processes, one process a GPU, as a launcher
// starts them (mpirun, srun, torchrun): each process reads its place from
// the launcher's environment (launch.hpp), rank 0 makes NCCL's unique id and
// hands it to the others (MPI where the program is built with it, else TCP
// or a file: launch.hpp), each process makes its shard of int32 keys with
// their global positions as values, and lm::merge_sort_by_key on
// lm::nccl::par(comm, stream) sorts the whole. Then it checks the result
// across the processes: each slice sorted, each slice's last key not above
// the next one's first, each count unchanged, and an order-independent sum
// over the (key, value) pairs the same before and after.
//
//   torchrun --nproc-per-node 4 ./distributed_sort --log2 28
//   mpirun -np 4 -x LIBMERGE_BOOTSTRAP=tcp://$(hostname):29500 ./distributed_sort
//   srun -N 2 --ntasks-per-node 4 --gpus-per-task 1 env LIBMERGE_BOOTSTRAP=file:///shared/sort-$SLURM_JOB_ID
//        ./distributed_sort   (one line)
//
// Options: --log2 N (2^N keys in all, default 24), --seed S, --timeout T
// (seconds for the sort, default 300; the rendezvous waits as long).
// Exit status 0 when the sort and every check passed.
#include <cuda_runtime.h>
#include <nccl.h>
#if LIBMERGE_EXAMPLE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: Open MPI's C++ bindings do not build with -Wextra -Werror
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <libmerge/nccl.hpp>

#include "launch.hpp"

namespace lm = libmerge;

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(ncclResult_t e, const char* what) {
  if (e != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(e));
}

__host__ __device__ std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Keys of global positions [first, first + n): random from the seed; values: the positions.
__global__ void make_shard(int* keys, long long* vals, long long first, long long n, std::uint64_t seed) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    keys[i] = static_cast<int>(mix(seed ^ static_cast<std::uint64_t>(first + i)) >> 33);
    vals[i] = first + i;
  }
}

// out[0] += the pairs' order-independent sum, out[1] += descents (keys[i + 1] < keys[i]).
__global__ void tally(const int* keys, const long long* vals, long long n, unsigned long long* out) {
  unsigned long long sum = 0, descents = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    sum += mix((static_cast<std::uint64_t>(static_cast<std::uint32_t>(keys[i])) << 40) ^
               static_cast<std::uint64_t>(vals[i]));
    if (i + 1 < n && keys[i + 1] < keys[i]) ++descents;
  }
  atomicAdd(out, sum);
  atomicAdd(out + 1, descents);
}

// What every rank tells the others after the sort: its count, its first and
// last key, and its tallies.
struct report {
  long long n;
  int first, last;
  unsigned long long sum_before, sum_after, descents;
  float ms;  // this rank's median sort
};

ncclUniqueId share_id(const launch::place& me, double timeout_s) {
  ncclUniqueId id{};
  if (me.rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
#if LIBMERGE_EXAMPLE_MPI
  if (std::getenv("LIBMERGE_BOOTSTRAP") == nullptr) {
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    return id;
  }
#endif
  const std::vector<unsigned char> mine(reinterpret_cast<const unsigned char*>(&id),
                                        reinterpret_cast<const unsigned char*>(&id) + sizeof id);
  const auto got = launch::share_from_rank0(me, launch::rendezvous_from_environment(), mine, timeout_s);
  if (got.size() != sizeof id) throw std::runtime_error("the rendezvous gave " + std::to_string(got.size()) + " bytes");
  std::memcpy(&id, got.data(), sizeof id);
  return id;
}

// The communicator, made without blocking so that a rank that never comes
// ends the wait at the timeout (a blocking ncclCommInitRank waits forever).
ncclComm_t init_comm(const launch::place& me, const ncclUniqueId& id, double timeout_s) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm{};
  const ncclResult_t r = ncclCommInitRankConfig(&comm, me.world, id, me.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) check(r, "ncclCommInitRankConfig");
  const auto deadline = launch::detail::deadline_after(timeout_s);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    check(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError");
    if (state == ncclSuccess) return comm;
    if (state != ncclInProgress) {
      ncclCommAbort(comm);
      check(state, "ncclCommInitRankConfig");
    }
    if (launch::detail::passed(deadline)) {
      ncclCommAbort(comm);
      throw std::runtime_error("the communicator of " + std::to_string(me.world) + " ranks did not form within " +
                               std::to_string(timeout_s) + " s: a rank missing?");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

struct options {
  int log2 = 24;
  std::uint64_t seed = 1;
  double timeout_s = 300;
  int repeat = 1;             // sorts, each of fresh keys; the time printed is their median
  int exit_before_sort = -1;  // this rank exits before its first sort (scripts/launch-check.sh's failure case)
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--log2" && i + 1 < argc) {
      o.log2 = std::atoi(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      o.seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--timeout" && i + 1 < argc) {
      o.timeout_s = std::atof(argv[++i]);
    } else if (a == "--repeat" && i + 1 < argc) {
      o.repeat = std::atoi(argv[++i]);
    } else if (a == "--exit-before-sort" && i + 1 < argc) {
      o.exit_before_sort = std::atoi(argv[++i]);
    } else {
      throw std::invalid_argument("unknown option " + a +
                                  " (--log2 N, --seed S, --timeout T, --repeat R, --exit-before-sort RANK)");
    }
  }
  if (o.log2 < 0 || o.log2 > 40 || o.timeout_s <= 0 || o.repeat < 1) {
    throw std::invalid_argument("--log2 in [0, 40], --timeout > 0, --repeat >= 1");
  }
  return o;
}

// The checks, on every rank, of every rank's report; an empty string when all hold.
std::string verify(const std::vector<report>& all, long long total, const std::vector<long long>& counts) {
  unsigned long long before = 0, after = 0;
  long long n = 0;
  const report* prev = nullptr;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const report& x = all[r];
    before += x.sum_before;
    after += x.sum_after;
    n += x.n;
    if (x.n != counts[r]) return "rank " + std::to_string(r) + "'s count changed";
    if (x.descents != 0) return "rank " + std::to_string(r) + "'s slice is not sorted";
    if (x.n > 0 && prev != nullptr && x.first < prev->last) {
      return "rank " + std::to_string(r) + "'s first key is below the last key of the rank before";
    }
    if (x.n > 0) prev = &x;
  }
  if (n != total) return "the counts add up to " + std::to_string(n) + ", not " + std::to_string(total);
  if (before != after) return "the (key, value) pairs' sum changed: not a permutation";
  return {};
}

// This rank's shard: its keys and values on the GPU, where they start in the
// global order, and the scratch of its tallies.
struct shard {
  int* keys = nullptr;
  long long* vals = nullptr;
  unsigned long long* tallies = nullptr;  // before: sum, descents; after: sum, descents
  long long n = 0, first = 0;
  std::vector<long long> counts;
  ~shard() {
    cudaFree(tallies);
    cudaFree(vals);
    cudaFree(keys);
  }
};

void allocate(shard& sh, const launch::place& me, long long total) {
  sh.counts.resize(static_cast<std::size_t>(me.world));
  for (int r = 0; r < me.world; ++r) {
    sh.counts[static_cast<std::size_t>(r)] = total / me.world + (r < total % me.world ? 1 : 0);
    if (r < me.rank) sh.first += sh.counts[static_cast<std::size_t>(r)];
  }
  sh.n = sh.counts[static_cast<std::size_t>(me.rank)];
  const std::size_t slots = static_cast<std::size_t>(sh.n > 0 ? sh.n : 1);
  check(cudaMalloc(&sh.keys, sizeof(int) * slots), "cudaMalloc");
  check(cudaMalloc(&sh.vals, sizeof(long long) * slots), "cudaMalloc");
  check(cudaMalloc(&sh.tallies, 4 * sizeof(unsigned long long)), "cudaMalloc");
}

// `repeat` sorts, each of fresh keys; returns the median time of a sort on
// this rank (ms), the tallies of the last one before and after it taken.
float sort_timed(const options& o, const launch::place& me, ncclComm_t comm, cudaStream_t stream, shard& sh) {
  cudaEvent_t start{}, stop{};
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> times;
  for (int i = 0; i < o.repeat; ++i) {
    make_shard<<<1024, 256, 0, stream>>>(sh.keys, sh.vals, sh.first, sh.n, o.seed + static_cast<std::uint64_t>(i));
    check(cudaMemsetAsync(sh.tallies, 0, 4 * sizeof(unsigned long long), stream), "cudaMemsetAsync");
    tally<<<1024, 256, 0, stream>>>(sh.keys, sh.vals, sh.n, sh.tallies);
    if (me.rank == o.exit_before_sort) std::exit(3);
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    lm::merge_sort_by_key(lm::nccl::par(comm, stream).timeout(o.timeout_s), sh.keys, sh.keys + sh.n, sh.vals);
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    tally<<<1024, 256, 0, stream>>>(sh.keys, sh.vals, sh.n, sh.tallies + 2);
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Every rank's report, on every rank.
std::vector<report> gather_reports(const launch::place& me, ncclComm_t comm, cudaStream_t stream, const shard& sh,
                                   float ms) {
  report mine{sh.n, 0, 0, 0, 0, 0, ms};
  unsigned long long h[4];
  check(cudaMemcpyAsync(h, sh.tallies, sizeof h, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  if (sh.n > 0) {
    check(cudaMemcpyAsync(&mine.first, sh.keys, sizeof(int), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    check(cudaMemcpyAsync(&mine.last, sh.keys + sh.n - 1, sizeof(int), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  mine.sum_before = h[0];
  mine.sum_after = h[2];
  mine.descents = h[3];
  report* d_all = nullptr;
  check(cudaMalloc(&d_all, sizeof(report) * static_cast<std::size_t>(me.world + 1)), "cudaMalloc");
  check(cudaMemcpy(d_all + me.world, &mine, sizeof mine, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(ncclAllGather(d_all + me.world, d_all, sizeof(report), ncclUint8, comm, stream), "ncclAllGather");
  std::vector<report> all(static_cast<std::size_t>(me.world));
  check(cudaMemcpyAsync(all.data(), d_all, sizeof(report) * all.size(), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cudaFree(d_all);
  return all;
}

int run(const options& o, const launch::place& me) {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices == 0) throw std::runtime_error("no GPU");
  check(cudaSetDevice(me.local_rank % devices), "cudaSetDevice");
  const ncclUniqueId id = share_id(me, o.timeout_s);
  ncclComm_t comm = init_comm(me, id, o.timeout_s);
  cudaStream_t stream{};
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const long long total = 1ll << o.log2;
  shard sh;
  allocate(sh, me, total);
  const float ms = sort_timed(o, me, comm, stream, sh);
  const std::vector<report> all = gather_reports(me, comm, stream, sh, ms);
  const std::string problem = verify(all, total, sh.counts);
  float slowest = 0;
  for (const report& r : all) slowest = std::max(slowest, r.ms);
  if (me.rank == 0 || !problem.empty()) {
    std::printf("rank %d of %d (%s): 2^%d int32 keys with int64 values, %d sort(s), median %.3f ms on the slowest "
                "rank: %s\n",
                me.rank, me.world, me.launcher.c_str(), o.log2, o.repeat, slowest,
                problem.empty() ? "verified" : problem.c_str());
  }
  ncclCommDestroy(comm);
  return problem.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
#if LIBMERGE_EXAMPLE_MPI
  MPI_Init(&argc, &argv);
#endif
  int status = 1;
  launch::place me;
  try {
    me = launch::place_from_environment();
    status = run(parse(argc, argv), me);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "distributed_sort: rank %d of %d: %s\n", me.rank, me.world, e.what());
  }
#if LIBMERGE_EXAMPLE_MPI
  MPI_Finalize();
#endif
  return status;
}
