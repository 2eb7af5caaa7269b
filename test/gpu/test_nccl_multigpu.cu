// The NCCL merge sort on every GPU of the machine, through real NCCL (label
// multigpu; exits 77, "skipped", with fewer than two GPUs):
//  - one process driving all GPUs (ncclCommInitAll, lm::nccl::merge_sort and
//    merge_sort_by_key on a vector of shards): random, sorted, reversed,
//    all-equal and skewed inputs (all keys on one rank, empty ranks), uneven
//    shards, values = (rank, position) for stability, each rank against the
//    matching slice of std::stable_sort of the gathered data;
//  - one thread per GPU with lm::nccl::par(comm, stream), the launch style of
//    one process per GPU, on blocking and on non-blocking communicators;
//  - failures: key, value or comparator types that differ across ranks
//    (every rank throws, naming the rank, nothing sorted); a rank that
//    throws before the headers, a host pointer or a stream of another
//    device (its peers name it, at once); a rank that never calls, on
//    blocking and non-blocking communicators and through the all-GPUs
//    helper (the others throw within their timeout,
//    naming themselves, never a hang: each such case runs under a hard
//    process timeout of its own); a rank that calls late but within the
//    timeout (the sort succeeds); a comparator that is no strict weak
//    ordering (every rank throws, or the output is a permutation);
//  - more than 2^31 keys in all.
//
// Its own main() (below) reports "skipped" before Boost.Test starts; the
// linker then leaves out libmerge_boost_test's. Test sources are compiled
// with BOOST_TEST_ALTERNATIVE_INIT_API: the init function is bool().
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
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

// Ends the process if a test case runs past `seconds`: a case that checks
// that nothing hangs must not hang CI or a GPU run itself.
class hard_timeout {
 public:
  hard_timeout(int seconds, const char* what)
      : thread_([this, seconds, what] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!wake_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
            std::fprintf(stderr, "test_nccl_multigpu: %s still running after %d s: it hangs\n", what, seconds);
            std::fflush(stderr);
            std::_Exit(3);
          }
        }) {}
  ~hard_timeout() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the rest is made
};

// Communicators and streams of every GPU, made by one process: blocking
// (ncclCommInitAll) or non-blocking (ncclCommInitRankConfig with
// config.blocking = 0: NCCL calls return ncclInProgress and finish in the
// background).
struct world {
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  explicit world(int k, bool blocking = true)
      : comms(static_cast<std::size_t>(k)), streams(static_cast<std::size_t>(k)) {
    std::vector<int> devs(static_cast<std::size_t>(k));
    for (int d = 0; d < k; ++d) devs[static_cast<std::size_t>(d)] = d;
    if (blocking) {
      BOOST_REQUIRE(ncclCommInitAll(comms.data(), k, devs.data()) == ncclSuccess);
    } else {
      ncclUniqueId id;
      BOOST_REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      ncclGroupStart();
      for (int d = 0; d < k; ++d) {
        cudaSetDevice(d);
        const ncclResult_t r = ncclCommInitRankConfig(&comms[static_cast<std::size_t>(d)], k, id, d, &config);
        BOOST_REQUIRE(r == ncclSuccess || r == ncclInProgress);
      }
      const ncclResult_t r = ncclGroupEnd();
      BOOST_REQUIRE(r == ncclSuccess || r == ncclInProgress);
      for (ncclComm_t c : comms) {
        ncclResult_t state = ncclInProgress;
        while (state == ncclInProgress) BOOST_REQUIRE(ncclCommGetAsyncError(c, &state) == ncclSuccess);
        BOOST_REQUIRE(state == ncclSuccess);
      }
    }
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
      if (comms[d] != nullptr) ncclCommDestroy(comms[d]);
    }
    cudaSetDevice(0);
  }
  // After a call that aborted communicators: the library freed those of the
  // ranks that threw an lm::nccl_error; abort the others.
  void forget_aborted(const std::vector<bool>& aborted) {
    for (std::size_t d = 0; d < comms.size(); ++d) {
      if (!aborted[d]) ncclCommAbort(comms[d]);
      comms[d] = nullptr;
    }
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
void check_sort(world& w, const std::vector<std::vector<K>>& in, bool threads, Comp comp = Comp(),
                double rank0_delay_s = 0, double timeout_s = lm::nccl::default_timeout_s) {
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
          if (r == 0 && rank0_delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(rank0_delay_s));
          auto& kd = *keys[static_cast<std::size_t>(r)];
          lm::merge_sort_by_key(
              lm::nccl::par(w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)]).timeout(timeout_s),
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

// Shards large enough that the exchange goes in several rounds by default
// (2^24 keys a rank: the default rounds, as many as ranks up to 4,
// tapered, each chunk merged while the next travels), through real NCCL on
// the ranks' exchange streams: random keys, and few distinct keys (equal keys across every chunk's cut), each in both
// launch styles. On at most 4 GPUs (past 4 the default is one round).
BOOST_AUTO_TEST_CASE(the_exchange_in_chunks) {
  if (quick()) return;
  hard_timeout guard(300, "the_exchange_in_chunks");
  const int k = std::min(gpus(), 4);
  world w(k);
  std::mt19937_64 g(13);
  std::vector<std::vector<int>> random, few;
  for (int r = 0; r < k; ++r) {
    std::vector<int> a((std::size_t(1) << 24) + 5 * static_cast<std::size_t>(r)), b(a.size());
    for (auto& x : a) x = static_cast<int>(g() >> 33);
    for (auto& x : b) x = static_cast<int>(g() % 10);
    random.push_back(a);
    few.push_back(b);
  }
  for (bool threads : {false, true}) {
    BOOST_TEST_CONTEXT("threads " << threads) {
      check_sort(w, random, threads);
      check_sort(w, few, threads);
    }
  }
}

BOOST_AUTO_TEST_CASE(non_blocking_communicators) {
  const int k = gpus();
  hard_timeout guard(300, "non_blocking_communicators");
  world w(k, false);
  std::mt19937_64 g(12);
  std::vector<std::vector<int>> random, skewed;
  for (int r = 0; r < k; ++r) {
    std::vector<int> a(quick() ? 50000 : 1000003);
    for (auto& x : a) x = static_cast<int>(g() % 1000);
    random.push_back(a);
    skewed.push_back(r == k - 1 ? a : std::vector<int>());
  }
  check_sort(w, random, true);
  check_sort(w, skewed, true);
}

BOOST_AUTO_TEST_CASE(a_rank_that_calls_late_within_the_timeout_is_waited_for) {
  const int k = gpus();
  hard_timeout guard(300, "a_rank_that_calls_late_within_the_timeout_is_waited_for");
  world w(k);
  std::mt19937_64 g(13);
  std::vector<std::vector<int>> in;
  for (int r = 0; r < k; ++r) {
    std::vector<int> a(100000);
    for (auto& x : a) x = static_cast<int>(g() >> 40);
    in.push_back(a);
  }
  check_sort(w, in, true, lm::less<>(), 2.0, 60.0);
}

// Each rank in its thread; `body(r)` makes the call. Returns each rank's
// exception message ("" when it returned) and whether it was an nccl_error.
template <class Body>
std::vector<std::string> on_every_rank(int k, Body body, std::vector<bool>* nccl_errors = nullptr,
                                       std::vector<double>* seconds = nullptr) {
  std::vector<std::string> errors(static_cast<std::size_t>(k));
  std::vector<bool> is_nccl(static_cast<std::size_t>(k), false);
  std::vector<double> took(static_cast<std::size_t>(k), 0);
  std::vector<std::thread> ts;
  for (int r = 0; r < k; ++r) {
    ts.emplace_back([&, r] {
      cudaSetDevice(r);
      const auto t0 = std::chrono::steady_clock::now();
      try {
        body(r);
      } catch (const lm::nccl_error& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
        is_nccl[static_cast<std::size_t>(r)] = true;
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
        if (errors[static_cast<std::size_t>(r)].empty()) errors[static_cast<std::size_t>(r)] = "(empty message)";
      }
      took[static_cast<std::size_t>(r)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  }
  for (auto& t : ts) t.join();
  if (nccl_errors != nullptr) *nccl_errors = is_nccl;
  if (seconds != nullptr) *seconds = took;
  return errors;
}

BOOST_AUTO_TEST_CASE(keys_of_different_types_are_caught_on_every_rank_before_sorting) {
  const int k = gpus();
  hard_timeout guard(120, "keys_of_different_types_are_caught_on_every_rank_before_sorting");
  world w(k);
  std::vector<int> descending(1000);
  for (int i = 0; i < 1000; ++i) descending[static_cast<std::size_t>(i)] = 1000 - i;
  std::vector<std::unique_ptr<on_device<int>>> ints;
  std::vector<std::unique_ptr<on_device<unsigned>>> uints;
  for (int r = 0; r < k; ++r) {
    ints.push_back(std::make_unique<on_device<int>>(r, descending));
    uints.push_back(std::make_unique<on_device<unsigned>>(r, std::vector<unsigned>(descending.begin(), descending.end())));
  }
  const auto errors = on_every_rank(k, [&](int r) {
    const auto p = lm::nccl::par(w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)]).timeout(60);
    if (r == 1) {
      auto& d = *uints[static_cast<std::size_t>(r)];
      lm::merge_sort(p, d.p, d.p + d.n);
    } else {
      auto& d = *ints[static_cast<std::size_t>(r)];
      lm::merge_sort(p, d.p, d.p + d.n);
    }
  });
  for (int r = 0; r < k; ++r) {
    BOOST_CHECK_MESSAGE(errors[static_cast<std::size_t>(r)].find("another type") != std::string::npos,
                        "rank " << r << " got: " << errors[static_cast<std::size_t>(r)]);
    // Checked before any rank sorts its shard: every shard is as it was.
    BOOST_CHECK(ints[static_cast<std::size_t>(r)]->host() == descending);
  }
  // The communicators stay usable after an error every rank saw alike.
  std::vector<std::vector<int>> in(static_cast<std::size_t>(k), descending);
  check_sort(w, in, true);
}

// Values or a comparator of another type on rank 1 (merge_sort_by_key of
// int keys, std::uint64_t values and lm::less on the others): every rank
// throws std::invalid_argument naming rank 1, the algorithm and what
// differs, before any rank sorts (every shard as it was), and the
// communicators still sort afterwards.
BOOST_AUTO_TEST_CASE(values_or_comparators_of_different_types_are_caught_on_every_rank) {
  const int k = gpus();
  hard_timeout guard(120, "values_or_comparators_of_different_types_are_caught_on_every_rank");
  world w(k);
  std::vector<int> descending(1000);
  for (int i = 0; i < 1000; ++i) descending[static_cast<std::size_t>(i)] = 1000 - i;
  const std::vector<std::uint64_t> v64(1000, 5);
  const std::vector<unsigned> v32(1000, 5);
  for (bool values : {true, false}) {
    std::vector<std::unique_ptr<on_device<int>>> keys;
    std::vector<std::unique_ptr<on_device<std::uint64_t>>> vals;
    std::vector<std::unique_ptr<on_device<unsigned>>> odd;
    for (int r = 0; r < k; ++r) {
      keys.push_back(std::make_unique<on_device<int>>(r, descending));
      vals.push_back(std::make_unique<on_device<std::uint64_t>>(r, v64));
      odd.push_back(std::make_unique<on_device<unsigned>>(r, v32));
    }
    const auto errors = on_every_rank(k, [&](int r) {
      const auto p = lm::nccl::par(w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)]).timeout(60);
      auto& d = *keys[static_cast<std::size_t>(r)];
      if (r == 1 && values) {
        lm::merge_sort_by_key(p, d.p, d.p + d.n, odd[static_cast<std::size_t>(r)]->p);
      } else if (r == 1) {
        lm::merge_sort_by_key(p, d.p, d.p + d.n, vals[static_cast<std::size_t>(r)]->p, lm::greater<>());
      } else {
        lm::merge_sort_by_key(p, d.p, d.p + d.n, vals[static_cast<std::size_t>(r)]->p);
      }
    });
    const std::string says = values ? "rank 1 passed values of another type" : "rank 1 passed a comparator of another type";
    for (int r = 0; r < k; ++r) {
      const std::string& e = errors[static_cast<std::size_t>(r)];
      BOOST_TEST_MESSAGE("rank " << r << ": " << e);
      BOOST_CHECK_MESSAGE(e.rfind("libmerge::merge_sort_by_key: " + says, 0) == 0, "rank " << r << " got: " << e);
      BOOST_CHECK(keys[static_cast<std::size_t>(r)]->host() == descending);
      BOOST_CHECK(vals[static_cast<std::size_t>(r)]->host() == v64);
    }
  }
  std::vector<std::vector<int>> in(static_cast<std::size_t>(k), descending);
  check_sort(w, in, true);
}

BOOST_AUTO_TEST_CASE(a_rank_that_fails_before_the_headers_is_named_by_its_peers) {
  const int k = gpus();
  hard_timeout guard(120, "a_rank_that_fails_before_the_headers_is_named_by_its_peers");
  world w(k);
  std::vector<int> host(1000, 1), descending(1000);
  for (int i = 0; i < 1000; ++i) descending[static_cast<std::size_t>(i)] = 1000 - i;
  std::vector<std::unique_ptr<on_device<int>>> keys;
  for (int r = 0; r < k; ++r) keys.push_back(std::make_unique<on_device<int>>(r, descending));
  const auto errors = on_every_rank(k, [&](int r) {
    const auto p = lm::nccl::par(w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)]).timeout(60);
    int* first = r == 1 ? host.data() : keys[static_cast<std::size_t>(r)]->p;  // rank 1: a host pointer
    lm::merge_sort(p, first, first + 1000);
  });
  for (int r = 0; r < k; ++r) {
    const std::string& e = errors[static_cast<std::size_t>(r)];
    BOOST_TEST_MESSAGE("rank " << r << ": " << e);
    // Every message names the algorithm and the failing rank: its own error
    // with its rank put in, its peers' an error that names it and quotes it.
    if (r == 1) {
      BOOST_CHECK_MESSAGE(e.rfind("libmerge::merge_sort: rank 1 of " + std::to_string(k) + ": ", 0) == 0 &&
                              e.find("host memory") != std::string::npos,
                          "rank 1 got: " << e);
    } else {
      BOOST_CHECK_MESSAGE(e.rfind("libmerge::merge_sort: rank 1 failed", 0) == 0 &&
                              e.find("host memory") != std::string::npos,
                          "rank " << r << " got: " << e);
    }
    BOOST_CHECK(keys[static_cast<std::size_t>(r)]->host() == descending);  // nothing sorted, nothing lost
  }
}

// Rank 1 passes a stream of device 0 (its communicator's device is 1): it
// reports that on a stream of its own device, made for it (the protocol's
// only stream), so every rank throws at once, naming rank 1 and the
// algorithm; nothing is sorted and the communicators still sort afterwards.
BOOST_AUTO_TEST_CASE(a_stream_of_another_device_is_named_by_the_peers) {
  const int k = gpus();
  hard_timeout guard(120, "a_stream_of_another_device_is_named_by_the_peers");
  world w(k);
  std::vector<int> descending(1000);
  for (int i = 0; i < 1000; ++i) descending[static_cast<std::size_t>(i)] = 1000 - i;
  std::vector<std::unique_ptr<on_device<int>>> keys;
  for (int r = 0; r < k; ++r) keys.push_back(std::make_unique<on_device<int>>(r, descending));
  std::vector<double> took;
  const auto errors = on_every_rank(
      k,
      [&](int r) {
        const cudaStream_t s = w.streams[static_cast<std::size_t>(r == 1 ? 0 : r)];
        auto& d = *keys[static_cast<std::size_t>(r)];
        lm::merge_sort(lm::nccl::par(w.comms[static_cast<std::size_t>(r)], s).timeout(60), d.p, d.p + d.n);
      },
      nullptr, &took);
  for (int r = 0; r < k; ++r) {
    const std::string& e = errors[static_cast<std::size_t>(r)];
    BOOST_TEST_MESSAGE("rank " << r << " after " << took[static_cast<std::size_t>(r)] << " s: " << e);
    const std::string want = r == 1 ? "libmerge::merge_sort: rank 1 of " + std::to_string(k) + ": the stream is of device 0"
                                    : std::string("libmerge::merge_sort: rank 1 failed");
    BOOST_CHECK_MESSAGE(e.rfind(want, 0) == 0 && e.find("the stream is of device 0") != std::string::npos,
                        "rank " << r << " got: " << e);
    BOOST_CHECK_LT(took[static_cast<std::size_t>(r)], 30.0);  // at once, not at the 60 s deadline
    BOOST_CHECK(keys[static_cast<std::size_t>(r)]->host() == descending);
  }
  std::vector<std::vector<int>> in(static_cast<std::size_t>(k), descending);
  check_sort(w, in, true);
}

// Ranks 1.. call, rank 0 never does: every caller throws an nccl_error that
// names it, within its timeout (plus the abort), on blocking and non-blocking
// communicators, one thread a rank or one call for all (the helper).
void never_calls(bool blocking, bool helper) {
  const int k = gpus();
  const double timeout = 3.0;
  std::vector<std::string> errors;
  std::vector<bool> nccl;
  std::vector<double> took;
  {
    world w(k, blocking);
    std::vector<std::unique_ptr<on_device<int>>> keys;
    for (int r = 0; r < k; ++r) keys.push_back(std::make_unique<on_device<int>>(r, std::vector<int>(1000, 1)));
    if (helper) {
      errors.assign(static_cast<std::size_t>(k), "");
      nccl.assign(static_cast<std::size_t>(k), false);
      took.assign(static_cast<std::size_t>(k), 0);
      std::vector<lm::nccl::shard<int>> shards;
      for (int r = 1; r < k; ++r) {
        shards.push_back({w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)],
                          keys[static_cast<std::size_t>(r)]->p, 1000});
      }
      const auto t0 = std::chrono::steady_clock::now();
      try {
        lm::nccl::merge_sort(shards, lm::less<>(), timeout);
      } catch (const lm::nccl_error& e) {
        for (int r = 1; r < k; ++r) {
          errors[static_cast<std::size_t>(r)] = e.what();
          nccl[static_cast<std::size_t>(r)] = true;
        }
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (int r = 1; r < k; ++r) took[static_cast<std::size_t>(r)] = s;
    } else {
      errors = on_every_rank(
          k,
          [&](int r) {
            if (r == 0) return;  // rank 0 never calls
            auto& d = *keys[static_cast<std::size_t>(r)];
            lm::merge_sort(lm::nccl::par(w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)])
                               .timeout(timeout),
                           d.p, d.p + d.n);
          },
          &nccl, &took);
    }
    w.forget_aborted(nccl);
  }
  for (int r = 1; r < k; ++r) {
    const std::string& e = errors[static_cast<std::size_t>(r)];
    BOOST_TEST_MESSAGE("rank " << r << " after " << took[static_cast<std::size_t>(r)] << " s: " << e);
    BOOST_CHECK_MESSAGE(nccl[static_cast<std::size_t>(r)], "rank " << r << " threw no nccl_error: " << e);
    if (!helper) {
      BOOST_CHECK_MESSAGE(e.find("rank " + std::to_string(r) + " of") != std::string::npos, "rank " << r << ": " << e);
    }
    BOOST_CHECK_MESSAGE(e.rfind("libmerge::merge_sort: ", 0) == 0 && e.find(" waited 3 s ") != std::string::npos,
                        "rank " << r << ": " << e);
    BOOST_CHECK_MESSAGE(took[static_cast<std::size_t>(r)] < timeout + 30, "rank " << r << " took " << took[static_cast<std::size_t>(r)]);
  }
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_calls_makes_the_others_time_out) {
  hard_timeout guard(240, "a_rank_that_never_calls_makes_the_others_time_out");
  BOOST_TEST_CONTEXT("blocking, a thread a rank") { never_calls(true, false); }
  BOOST_TEST_CONTEXT("non-blocking, a thread a rank") { never_calls(false, false); }
  BOOST_TEST_CONTEXT("blocking, all ranks of this process in one call") { never_calls(true, true); }
}

namespace {
// No strict weak ordering: whether a < b depends on both in a way that is
// not transitive.
struct rock_paper {
  __host__ __device__ bool operator()(int a, int b) const { return ((a - b) % 3 + 3) % 3 == 1; }
};
}  // namespace

BOOST_AUTO_TEST_CASE(a_bad_comparator_keeps_the_data_or_every_rank_throws) {
  const int k = gpus();
  hard_timeout guard(120, "a_bad_comparator_keeps_the_data_or_every_rank_throws");
  world w(k);
  std::mt19937_64 g(14);
  std::vector<std::vector<int>> in;
  std::vector<std::unique_ptr<on_device<int>>> keys;
  std::vector<int> all;
  for (int r = 0; r < k; ++r) {
    std::vector<int> a(200000);
    for (auto& x : a) x = static_cast<int>(g() % 100000);
    all.insert(all.end(), a.begin(), a.end());
    keys.push_back(std::make_unique<on_device<int>>(r, a));
    in.push_back(a);
  }
  const auto errors = on_every_rank(k, [&](int r) {
    auto& d = *keys[static_cast<std::size_t>(r)];
    lm::merge_sort(lm::nccl::par(w.comms[static_cast<std::size_t>(r)], w.streams[static_cast<std::size_t>(r)]).timeout(60),
                   d.p, d.p + d.n, rock_paper());
  });
  w.sync();
  const bool threw = !errors[0].empty();
  BOOST_TEST_MESSAGE("rank 0: " << (threw ? errors[0] : std::string("returned")));
  std::vector<int> out;
  for (int r = 0; r < k; ++r) {
    BOOST_CHECK_MESSAGE(errors[static_cast<std::size_t>(r)].empty() != threw, "ranks disagree: rank " << r << ": "
                                                                                  << errors[static_cast<std::size_t>(r)]);
    const auto h = keys[static_cast<std::size_t>(r)]->host();
    if (threw) {
      // Every rank threw at the splitters' check: nothing was exchanged, each
      // rank holds what its local sort (the single-GPU sort with the same
      // comparator) made of its own shard.
      on_device<int> local(r, in[static_cast<std::size_t>(r)]);
      cudaSetDevice(r);
      lm::merge_sort(lm::cuda::par, local.p, local.p + local.n, rock_paper());
      BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      BOOST_CHECK_MESSAGE(h == local.host(), "rank " << r << " holds other data than its local sort's");
    }
    out.insert(out.end(), h.begin(), h.end());
  }
  if (!threw) {  // returned: a permutation of the input across ranks
    std::sort(all.begin(), all.end());
    std::sort(out.begin(), out.end());
    BOOST_CHECK(out == all);
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
