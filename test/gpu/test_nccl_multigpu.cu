// The NCCL merge sort on every GPU of the machine (label multigpu; exits 77,
// "skipped", with fewer than two GPUs):
//  - one process driving all GPUs (ncclCommInitAll, lm::nccl::merge_sort and
//    merge_sort_by_key on a vector of shards): random, sorted, reversed,
//    all-equal and skewed inputs (all keys on one rank, empty ranks), uneven
//    shards, values = (rank, position) for stability, each rank against the
//    matching slice of std::stable_sort of the gathered data;
//  - one thread per GPU with lm::nccl::par(comm, stream), the launch style of
//    one process per GPU;
//  - key types that differ across ranks: every rank throws;
//  - a rank that never calls: the others time out, abort and throw;
//  - more than 2^31 keys in all.
#define BOOST_TEST_NO_MAIN
#define BOOST_TEST_ALTERNATIVE_INIT_API
#include <boost/test/included/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <libmerge/nccl.hpp>

#include "cuda_test_support.cuh"

namespace lm = libmerge;
using cuda_test::quick;

namespace {

int gpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

// Communicators and streams of every GPU, made by one process.
struct world {
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  explicit world(int k) : comms(static_cast<std::size_t>(k)), streams(static_cast<std::size_t>(k)) {
    std::vector<int> devs(static_cast<std::size_t>(k));
    for (int d = 0; d < k; ++d) devs[static_cast<std::size_t>(d)] = d;
    BOOST_REQUIRE(ncclCommInitAll(comms.data(), k, devs.data()) == ncclSuccess);
    for (int d = 0; d < k; ++d) {
      cudaSetDevice(d);
      BOOST_REQUIRE(cudaStreamCreateWithFlags(&streams[static_cast<std::size_t>(d)], cudaStreamNonBlocking) == cudaSuccess);
    }
    cudaSetDevice(0);
  }
  ~world() {
    for (std::size_t d = 0; d < comms.size(); ++d) {
      cudaSetDevice(static_cast<int>(d));
      cudaStreamSynchronize(streams[d]);
      cudaStreamDestroy(streams[d]);
      ncclCommDestroy(comms[d]);
    }
    cudaSetDevice(0);
  }
  void sync() {
    for (std::size_t d = 0; d < comms.size(); ++d) {
      cudaSetDevice(static_cast<int>(d));
      BOOST_REQUIRE(cudaStreamSynchronize(streams[d]) == cudaSuccess);
    }
    cudaSetDevice(0);
  }
};

template <class T>
struct on_device {
  int device;
  T* p = nullptr;
  std::size_t n;
  on_device(int d, const std::vector<T>& h) : device(d), n(h.size()) {
    cudaSetDevice(d);
    if (n > 0) {
      BOOST_REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
      BOOST_REQUIRE(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
    }
  }
  ~on_device() {
    cudaSetDevice(device);
    cudaFree(p);
  }
  std::vector<T> host() const {
    std::vector<T> h(n);
    cudaSetDevice(device);
    if (n > 0) cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

// Sorts `in` (one shard a GPU) by key with values = (rank, position), either
// through the all-GPUs helper or one thread a GPU, and checks every rank.
template <class K, class Comp = lm::less<>>
void check_sort(world& w, const std::vector<std::vector<K>>& in, bool threads, Comp comp = Comp()) {
  const int k = static_cast<int>(in.size());
  std::vector<std::unique_ptr<on_device<K>>> keys;
  std::vector<std::unique_ptr<on_device<std::uint64_t>>> vals;
  std::vector<std::pair<K, std::uint64_t>> all;
  for (int r = 0; r < k; ++r) {
    const auto& h = in[static_cast<std::size_t>(r)];
    std::vector<std::uint64_t> v(h.size());
    for (std::size_t i = 0; i < h.size(); ++i) {
      v[i] = (std::uint64_t(r) << 32) | i;
      all.push_back({h[i], v[i]});
    }
    keys.push_back(std::make_unique<on_device<K>>(r, h));
    vals.push_back(std::make_unique<on_device<std::uint64_t>>(r, v));
  }
  std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return comp(a.first, b.first); });
  if (threads) {
    std::vector<std::thread> ts;
    std::vector<std::string> errors(static_cast<std::size_t>(k));
    for (int r = 0; r < k; ++r) {
      ts.emplace_back([&, r] {
        try {
          cudaSetDevice(r);
          auto& kd = *keys[static_cast<std::size_t>(r)];
          lm::merge_sort_by_key(lm::nccl::par(w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)]),
                                kd.p, kd.p + kd.n, vals[static_cast<std::size_t>(r)]->p, comp);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    }
    for (auto& t : ts) t.join();
    for (const auto& e : errors) BOOST_REQUIRE_MESSAGE(e.empty(), e);
  } else {
    std::vector<lm::nccl::shard<K, std::uint64_t>> shards;
    for (int r = 0; r < k; ++r) {
      shards.push_back({w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)],
                        keys[static_cast<std::size_t>(r)]->p, static_cast<lm::index_t>(in[static_cast<std::size_t>(r)].size()),
                        vals[static_cast<std::size_t>(r)]->p});
    }
    lm::nccl::merge_sort_by_key(shards, comp);
  }
  w.sync();
  std::size_t at = 0;
  for (int r = 0; r < k; ++r) {
    const auto gk = keys[static_cast<std::size_t>(r)]->host();
    const auto gv = vals[static_cast<std::size_t>(r)]->host();
    for (std::size_t i = 0; i < gk.size(); ++i, ++at) {
      if (comp(gk[i], all[at].first) || comp(all[at].first, gk[i]) || gv[i] != all[at].second) {
        BOOST_FAIL("rank " << r << " element " << i << ": got (" << +gk[i] << ", " << gv[i] << "), expected ("
                           << +all[at].first << ", " << all[at].second << ")");
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(shapes_and_launch_styles) {
  const int k = gpus();
  world w(k);
  std::mt19937_64 g(11);
  const std::size_t n = quick() ? 100000 : 3000001;
  for (bool threads : {false, true}) {
    std::vector<std::vector<int>> random, sorted, reversed, equal, skewed, uneven;
    for (int r = 0; r < k; ++r) {
      std::vector<int> a(n), b(n), c(n), d(n, 7), e, f(g() % n);
      for (std::size_t i = 0; i < n; ++i) {
        a[i] = static_cast<int>(g() >> 33);
        b[i] = static_cast<int>(r * n + i);
        c[i] = static_cast<int>((k - r) * n - i);
      }
      if (r == k / 2) e = a;
      for (auto& x : f) x = static_cast<int>(g() % 100);
      random.push_back(a);
      sorted.push_back(b);
      reversed.push_back(c);
      equal.push_back(d);
      skewed.push_back(e);
      uneven.push_back(r == 0 ? std::vector<int>() : f);
    }
    BOOST_TEST_CONTEXT("threads " << threads) {
      check_sort(w, random, threads);
      check_sort(w, random, threads, lm::greater<>());
      check_sort(w, sorted, threads);
      check_sort(w, reversed, threads);
      check_sort(w, equal, threads);
      check_sort(w, skewed, threads);
      check_sort(w, uneven, threads);
    }
  }
}

BOOST_AUTO_TEST_CASE(keys_of_different_types_are_caught_on_every_rank) {
  const int k = gpus();
  world w(k);
  std::vector<std::string> errors(static_cast<std::size_t>(k));
  std::vector<std::thread> ts;
  for (int r = 0; r < k; ++r) {
    ts.emplace_back([&, r] {
      cudaSetDevice(r);
      try {
        if (r == 1) {
          on_device<unsigned> d(r, std::vector<unsigned>(1000, 3u));
          lm::merge_sort(lm::nccl::par(w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)]), d.p, d.p + d.n);
        } else {
          on_device<int> d(r, std::vector<int>(1000, 3));
          lm::merge_sort(lm::nccl::par(w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)]), d.p, d.p + d.n);
        }
      } catch (const std::invalid_argument& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : ts) t.join();
  for (const auto& e : errors) BOOST_CHECK_MESSAGE(e.find("another type") != std::string::npos, "got: " << e);
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_calls_makes_the_others_time_out) {
  const int k = gpus();
  std::vector<std::string> errors(static_cast<std::size_t>(k));
  {
    world w(k);
    std::vector<std::thread> ts;
    for (int r = 1; r < k; ++r) {  // rank 0 never calls
      ts.emplace_back([&, r] {
        cudaSetDevice(r);
        on_device<int> d(r, std::vector<int>(1000, 1));
        try {
          lm::merge_sort(lm::nccl::par(w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)]).timeout(3.0),
                         d.p, d.p + d.n);
        } catch (const lm::nccl_error& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    }
    for (auto& t : ts) t.join();
    // The ranks that timed out aborted (and freed) their communicators;
    // abort the others.
    for (int r = 0; r < k; ++r) {
      if (r == 0 || errors[static_cast<std::size_t>(r)].empty()) ncclCommAbort(w.comms[static_cast<std::size_t>(r)]);
    }
    w.comms.clear();
    for (auto s : w.streams) cudaStreamDestroy(s);
    w.streams.clear();
  }
  for (int r = 1; r < k; ++r) {
    BOOST_CHECK_MESSAGE(!errors[static_cast<std::size_t>(r)].empty(), "rank " << r << " did not throw");
    BOOST_TEST_MESSAGE(errors[static_cast<std::size_t>(r)]);
  }
}

namespace {
struct key_of {
  __host__ __device__ int operator()(long long i) const {
    std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + 3;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return static_cast<int>((x ^ (x >> 29)) >> 33);
  }
};
struct hash_of {
  __host__ __device__ std::uint64_t operator()(int k) const {
    std::uint64_t x = static_cast<std::uint64_t>(static_cast<std::uint32_t>(k)) * 0xD6E8FEB86659FD93ull;
    return x ^ (x >> 32);
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(more_than_2_31_keys_in_all) {
  if (quick()) return;
  const int k = gpus();
  world w(k);
  const long long total = (1LL << 31) + 4097;
  std::vector<std::unique_ptr<thrust::device_vector<int>>> keys;
  std::vector<lm::nccl::shard<int>> shards;
  std::uint64_t before = 0;
  long long base = 0;
  for (int r = 0; r < k; ++r) {
    const long long len = total / k + (r < total % k ? 1 : 0) + (r == 0 ? 1000 : 0) - (r == 1 ? 1000 : 0);
    cudaSetDevice(r);
    keys.push_back(std::make_unique<thrust::device_vector<int>>(static_cast<std::size_t>(len)));
    thrust::transform(thrust::counting_iterator<long long>(base), thrust::counting_iterator<long long>(base + len),
                      keys.back()->begin(), key_of());
    base += len;
    before += thrust::transform_reduce(keys.back()->begin(), keys.back()->end(), hash_of(), std::uint64_t(0),
                                       thrust::plus<std::uint64_t>());
    shards.push_back({w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)],
                      thrust::raw_pointer_cast(keys.back()->data()), len});
  }
  lm::nccl::merge_sort(shards);
  w.sync();
  std::uint64_t after = 0;
  int last = 0;
  for (int r = 0; r < k; ++r) {
    cudaSetDevice(r);
    auto& d = *keys[static_cast<std::size_t>(r)];
    BOOST_CHECK_EQUAL(static_cast<long long>(d.size()), shards[static_cast<std::size_t>(r)].n);
    BOOST_CHECK(thrust::is_sorted(d.begin(), d.end()));
    after += thrust::transform_reduce(d.begin(), d.end(), hash_of(), std::uint64_t(0), thrust::plus<std::uint64_t>());
    if (r > 0) BOOST_CHECK(last <= int(d.front()));
    last = d.back();
  }
  BOOST_CHECK_EQUAL(before, after);
  cudaSetDevice(0);
}

bool init_unit_test() { return true; }

int main(int argc, char** argv) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // never NVLink multicast on shared machines
  const int n = gpus();
  if (n < 2) {
    std::printf("test_nccl_multigpu: skipped, %d GPU(s) visible, 2 or more needed\n", n);
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
