// Cold CUDA graph capture: the first call of each algorithm (and key type) in
// a process, made inside a stream capture in each capture mode, on a fresh
// device and after release_pool_memory(), captures, replays and gives what
// the standard library gives. Users capture cold (torch.cuda.graph captures
// in the global mode); each case runs in a process of its own, since a warm
// process has already made the pool, the device facts and the kernels'
// attributes outside the capture.
#define BOOST_TEST_MODULE cuda_graph_capture
#include <boost/test/unit_test.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <thrust/sequence.h>

#include "cuda_test_support.cuh"

extern char** environ;

namespace lm = libmerge;
using cuda_test::to_device;
using cuda_test::to_host;

namespace {

// What one child process runs: "ALGORITHM MODE STATE".
const char* const case_variable = "LIBMERGE_COLD_CAPTURE_CASE";

const std::vector<std::string> algorithms = {"merge_sort_one_tile", "merge_sort",    "merge_sort_passes",
                                             "merge_sort_by_key",   "merge_sort_indices", "merge",
                                             "merge_by_key",        "sorted_search", "sorted_equality_count",
                                             "sort_by_key"};
const std::vector<std::string> modes = {"global", "thread_local", "relaxed"};
const std::vector<std::string> states = {"fresh", "released"};

cudaStreamCaptureMode mode_of(const std::string& m) {
  if (m == "global") return cudaStreamCaptureModeGlobal;
  if (m == "thread_local") return cudaStreamCaptureModeThreadLocal;
  return cudaStreamCaptureModeRelaxed;
}

std::vector<std::int32_t> random_keys(std::size_t n, std::uint64_t seed, bool sorted) {
  std::mt19937_64 g(seed);
  std::vector<std::int32_t> v(n);
  for (auto& x : v) x = static_cast<std::int32_t>(g() % 1000003);
  if (sorted) std::sort(v.begin(), v.end());
  return v;
}

// Captures `calls` on `s` in `mode`, then replays the graph twice, each after
// `load` puts the inputs back, and returns after each replay's `check`.
void capture_and_replay(cudaStream_t s, cudaStreamCaptureMode mode, const std::function<void()>& load,
                        const std::function<void()>& calls, const std::function<void()>& check) {
  load();
  BOOST_REQUIRE_EQUAL(cudaStreamSynchronize(s), cudaSuccess);
  cudaGraph_t graph = nullptr;
  BOOST_REQUIRE_EQUAL(cudaStreamBeginCapture(s, mode), cudaSuccess);
  try {
    calls();
  } catch (const std::exception& e) {
    cudaStreamEndCapture(s, &graph);  // the stream must not stay capturing
    if (graph != nullptr) cudaGraphDestroy(graph);
    BOOST_FAIL("the call threw inside the capture: " << e.what());
  }
  BOOST_REQUIRE_EQUAL(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  BOOST_REQUIRE_EQUAL(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    BOOST_TEST_CONTEXT("replay " << replay) {
      load();
      BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
      BOOST_REQUIRE_EQUAL(cudaGraphLaunch(exec, s), cudaSuccess);
      BOOST_REQUIRE_EQUAL(cudaStreamSynchronize(s), cudaSuccess);
      check();
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// A sort of keys (and values or indices) of n elements.
void sort_case(cudaStream_t s, cudaStreamCaptureMode mode, const std::string& algorithm, std::size_t n) {
  const auto keys_in = random_keys(n, 7, false);
  thrust::device_vector<std::int32_t> keys(n);
  thrust::device_vector<std::int64_t> vals(n);
  const auto par = lm::cuda::par.on(s);
  auto load = [&] {
    thrust::copy(keys_in.begin(), keys_in.end(), keys.begin());
    thrust::sequence(vals.begin(), vals.end(), std::int64_t(0));
  };
  auto calls = [&] {
    if (algorithm == "merge_sort_by_key") {
      lm::merge_sort_by_key(par, keys.begin(), keys.end(), vals.begin());
    } else if (algorithm == "sort_by_key") {  // (captured: the radix sort, no look at the keys)
      lm::sort_by_key(par, keys.begin(), keys.end(), vals.begin());
    } else if (algorithm == "merge_sort_indices") {
      lm::merge_sort_indices(par, keys.begin(), keys.end(), vals.begin());
    } else {
      lm::merge_sort(par, keys.begin(), keys.end());
    }
  };
  std::vector<std::int64_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) { return keys_in[x] < keys_in[y]; });
  std::vector<std::int32_t> sorted(n);
  for (std::size_t i = 0; i < n; ++i) sorted[i] = keys_in[order[i]];
  auto check = [&] {
    BOOST_CHECK(to_host(keys) == sorted);
    if (algorithm != "merge_sort") BOOST_CHECK(to_host(vals) == order);
  };
  capture_and_replay(s, mode, load, calls, check);
}

// merge and merge_by_key of two sorted inputs of n elements each.
void merge_case(cudaStream_t s, cudaStreamCaptureMode mode, bool by_key, std::size_t n) {
  const auto a_in = random_keys(n, 11, true), b_in = random_keys(n + 3, 13, true);
  const auto a = to_device(a_in), b = to_device(b_in);
  thrust::device_vector<std::int32_t> av(n), bv(n + 3), out(2 * n + 3), out_vals(2 * n + 3);
  thrust::sequence(av.begin(), av.end(), 0);
  thrust::sequence(bv.begin(), bv.end(), 1 << 30);
  const auto par = lm::cuda::par.on(s);
  auto load = [&] { thrust::fill(out.begin(), out.end(), -1); };
  auto calls = [&] {
    if (by_key) {
      lm::merge_by_key(par, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), out.begin(),
                       out_vals.begin());
    } else {
      lm::merge(par, a.begin(), a.end(), b.begin(), b.end(), out.begin());
    }
  };
  std::vector<std::pair<std::int32_t, std::int32_t>> pa, pb, merged(2 * n + 3);
  for (std::size_t i = 0; i < n; ++i) pa.push_back({a_in[i], static_cast<std::int32_t>(i)});
  for (std::size_t i = 0; i < n + 3; ++i) pb.push_back({b_in[i], (1 << 30) + static_cast<std::int32_t>(i)});
  std::merge(pa.begin(), pa.end(), pb.begin(), pb.end(), merged.begin(),
             [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::int32_t> want_keys, want_vals;
  for (const auto& p : merged) {
    want_keys.push_back(p.first);
    want_vals.push_back(p.second);
  }
  auto check = [&] {
    BOOST_CHECK(to_host(out) == want_keys);
    if (by_key) BOOST_CHECK(to_host(out_vals) == want_vals);
  };
  capture_and_replay(s, mode, load, calls, check);
}

// Lower bounds of A into B with B's match flags and the counts in device
// memory, or the equality counts, against std::lower_bound / equal_range.
void search_case(cudaStream_t s, cudaStreamCaptureMode mode, bool equality, std::size_t n) {
  const auto a_in = random_keys(n, 17, true), b_in = random_keys(n / 2 + 5, 19, true);
  const auto a = to_device(a_in), b = to_device(b_in);
  thrust::device_vector<long long> a_out(n);
  thrust::device_vector<bool> b_match(b_in.size());
  thrust::device_vector<lm::match_counts> counts(1);
  const auto par = lm::cuda::par.on(s);
  auto load = [&] { thrust::fill(a_out.begin(), a_out.end(), -1LL); };
  auto calls = [&] {
    if (equality) {
      lm::sorted_equality_count(par, a.begin(), a.end(), b.begin(), b.end(), a_out.begin());
    } else {
      lm::sorted_search<lm::bounds::lower, lm::search_type::index, lm::search_type::match>(
          par, a.begin(), a.end(), b.begin(), b.end(), a_out.begin(), b_match.begin(),
          thrust::raw_pointer_cast(counts.data()));
    }
  };
  std::vector<long long> want(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto lo = std::lower_bound(b_in.begin(), b_in.end(), a_in[i]);
    want[i] = equality ? std::upper_bound(b_in.begin(), b_in.end(), a_in[i]) - lo : lo - b_in.begin();
  }
  std::vector<bool> want_match(b_in.size());
  long long matched = 0;
  for (std::size_t j = 0; j < b_in.size(); ++j) {
    want_match[j] = std::binary_search(a_in.begin(), a_in.end(), b_in[j]);
    matched += want_match[j] ? 1 : 0;
  }
  auto check = [&] {
    BOOST_CHECK(to_host(a_out) == want);
    if (!equality) {
      const auto got = to_host(b_match);
      BOOST_CHECK(std::equal(got.begin(), got.end(), want_match.begin()));
      BOOST_CHECK_EQUAL(static_cast<long long>(lm::match_counts(counts[0]).b), matched);
    }
  };
  capture_and_replay(s, mode, load, calls, check);
}

void run_case(const std::string& algorithm, const std::string& mode_name, const std::string& state) {
  if (state == "released") {
    // Another key type's sort first (the pool made and holding memory), then
    // the pool emptied: the captured call is still its algorithm's first.
    thrust::device_vector<double> warm(1 << 20);
    thrust::sequence(warm.begin(), warm.end(), 0.0);
    lm::merge_sort(lm::cuda::par, warm.begin(), warm.end(), lm::greater<>());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    lm::cuda::release_pool_memory();
  }
  cudaStream_t s = nullptr;
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const cudaStreamCaptureMode mode = mode_of(mode_name);
  if (algorithm == "merge_sort_one_tile") sort_case(s, mode, "merge_sort", 3000);
  if (algorithm == "merge_sort") sort_case(s, mode, algorithm, std::size_t(1) << 20);
  if (algorithm == "merge_sort_passes") sort_case(s, mode, "merge_sort", (std::size_t(1) << 24) + 7);
  if (algorithm == "merge_sort_by_key" || algorithm == "merge_sort_indices" || algorithm == "sort_by_key") {
    sort_case(s, mode, algorithm, (std::size_t(1) << 21) + 1);
  }
  if (algorithm == "merge") merge_case(s, mode, false, (std::size_t(1) << 20) + 1);
  if (algorithm == "merge_by_key") merge_case(s, mode, true, (std::size_t(1) << 22) + 1);
  if (algorithm == "sorted_search") search_case(s, mode, false, (std::size_t(1) << 21) + 3);
  if (algorithm == "sorted_equality_count") search_case(s, mode, true, (std::size_t(1) << 20) + 3);
  BOOST_CHECK_EQUAL(cudaGetLastError(), cudaSuccess);
  cudaStreamDestroy(s);
}

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// Runs this binary's child case in a process of its own; returns its exit
// status (0: every check passed).
int run_child(const std::string& spec) {
  const std::string self = "/proc/self/exe";
  std::vector<std::string> env_strings = {std::string(case_variable) + "=" + spec};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind(std::string(case_variable) + "=", 0) != 0) env_strings.push_back(*e);
  }
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string run_test = "--run_test=cold_capture_child", log = "--log_level=error";
  char* argv[] = {const_cast<char*>(self.c_str()), run_test.data(), log.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

// The child: one case, named by the environment (run by the case below).
BOOST_AUTO_TEST_CASE(cold_capture_child, *boost::unit_test::disabled()) {
  const char* spec = std::getenv(case_variable);
  BOOST_REQUIRE_MESSAGE(spec != nullptr, case_variable << " names the case to run");
  std::istringstream in(spec);
  std::string algorithm, mode, state;
  in >> algorithm >> mode >> state;
  BOOST_TEST_CONTEXT(algorithm << ", " << mode << " capture, " << state) { run_case(algorithm, mode, state); }
}

BOOST_AUTO_TEST_CASE(first_calls_capture_cold_in_every_mode) {
  if (!have_gpu()) {
    BOOST_TEST_MESSAGE("SKIPPED: no GPU");
    return;
  }
  int cases = 0;
  for (const auto& algorithm : algorithms) {
    for (const auto& mode : modes) {
      for (const auto& state : states) {
        const std::string spec = algorithm + " " + mode + " " + state;
        BOOST_TEST_CONTEXT(spec) { BOOST_CHECK_EQUAL(run_child(spec), 0); }
        ++cases;
      }
    }
  }
  BOOST_TEST_MESSAGE(cases << " cold captures, one process each");
}

// A checked call waits for its checks' answer: inside a capture it is a
// clear error before anything is queued, with the stream still capturing
// (so the caller can end the capture), and .checked().on(s) checks as
// .on(s).checked() does.
BOOST_AUTO_TEST_CASE(checked_calls_refuse_capture_and_check_in_any_order) {
  if (!have_gpu()) return;
  cudaStream_t s = nullptr;
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const auto a = to_device(std::vector<std::int32_t>{1, 5, 3}), b = to_device(std::vector<std::int32_t>{2, 4});
  thrust::device_vector<std::int32_t> out(5);
  BOOST_CHECK_THROW(lm::merge(lm::cuda::par.checked().on(s), a.begin(), a.end(), b.begin(), b.end(), out.begin()),
                    std::invalid_argument);
  BOOST_CHECK_THROW(lm::merge(lm::cuda::par.on(s).checked(), a.begin(), a.end(), b.begin(), b.end(), out.begin()),
                    std::invalid_argument);
  const auto sorted = to_device(std::vector<std::int32_t>{1, 3, 5});
  BOOST_REQUIRE_EQUAL(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  bool refused = false;
  try {
    lm::merge(lm::cuda::par.on(s).checked(), sorted.begin(), sorted.end(), b.begin(), b.end(), out.begin());
  } catch (const std::invalid_argument& e) {
    refused = std::string(e.what()).find("captured") != std::string::npos;
  }
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  BOOST_CHECK_EQUAL(cudaStreamIsCapturing(s, &status), cudaSuccess);
  BOOST_CHECK(status == cudaStreamCaptureStatusActive);  // not invalidated
  cudaGraph_t graph = nullptr;
  BOOST_CHECK_EQUAL(cudaStreamEndCapture(s, &graph), cudaSuccess);
  if (graph != nullptr) cudaGraphDestroy(graph);
  BOOST_CHECK_MESSAGE(refused, "a checked call inside a capture throws std::invalid_argument naming the capture");
  cudaStreamDestroy(s);
}
