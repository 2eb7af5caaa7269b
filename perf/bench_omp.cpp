// libmerge OpenMP benchmark: lm::omp::par against the parallel CPU algorithms
// of libstdc++'s parallel mode (__gnu_parallel), Thrust's OpenMP system and an
// OpenMP loop of std::lower_bound, with lm::serial, std:: and (built with
// CUDA, run on a GPU) the CUDA backend alongside: the CPU-vs-GPU table.
//
//   libmerge_omp_bench [--out DIR] [--threads 1,2,4,8,16] [--sizes 1e6,1e7,1e8,1e9]
//                      [--types int32,int64,struct16] [--runs 5] [--max-seconds 300] [--no-gpu]
//
// It measures, in this order, until --max-seconds have passed (what is left is
// listed as skipped):
//   1. targets  int32 at the reference size (10^8, or the largest size below)
//               and the largest thread count: every algorithm and peer, and
//               lm::omp::par.threads(1) merge_sort for the scaling ratio;
//   2. scaling  the same size at every thread count: merge_sort, merge,
//               sorted_search; the one-thread references (std::, lm::serial)
//               at one thread;
//   3. sizes    every size at the largest thread count: merge_sort, merge,
//               sorted_search (merge_sort_by_key up to 10^8);
//   4. types    the other key types at the reference size and the largest
//               thread count: every algorithm.
//
// The cases and their peers (every implementation gets the same comparator,
// x < y; for Thrust a custom comparator, see bench_omp_common.hpp):
//   merge_sort         n random keys: __gnu_parallel::stable_sort,
//                      thrust::stable_sort(thrust::omp::par)
//   merge_sort_by_key  n keys and n int32 values: __gnu_parallel::stable_sort
//                      of (key, value) pairs by key, thrust::stable_sort_by_key
//   merge              two sorted halves of n/2: __gnu_parallel::merge,
//                      thrust::merge
//   sorted_search      lower bounds of n/2 sorted needles in n/2 sorted keys
//                      of the same distribution (dense), int64 indices: an
//                      `omp parallel for` loop of std::lower_bound,
//                      thrust::lower_bound
// Keys are random over the whole type (int32 keys are negative and positive).
//
// Timing: wall clock; the median of up to --runs runs (a call over 1.5 s runs
// once; one under 0.2 s gets a warm-up run first); sort inputs are copied in
// before each run, untimed; outputs are pre-touched. Every output is checked
// against lm::omp::par's, which is checked sorted and against a second
// implementation (or std::lower_bound on a sample). Writes DIR/omp-bench.txt
// (the tables) and DIR/omp-bench.json (every measurement).
#include <omp.h>
#include <parallel/algorithm>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <libmerge/libmerge.hpp>

#if LIBMERGE_BENCH_THRUST
#include <thrust/binary_search.h>
#include <thrust/merge.h>
#include <thrust/sort.h>
#include <thrust/system/omp/execution_policy.h>
#include <thrust/version.h>
#endif

#include "bench_meta.hpp"
#include "bench_omp_common.hpp"

namespace lm = libmerge;
using omp_bench::less_than;
using omp_bench::struct16;

namespace {

// ---------------------------------------------------------------------------
// Options

struct options {
  std::string out = ".";
  std::vector<int> threads = {1, 2, 4, 8, 16};
  std::vector<long long> sizes = {1000000, 10000000, 100000000, 1000000000};
  std::vector<std::string> types = {"int32", "int64", "struct16"};
  int runs = 5;
  double max_seconds = 300;
  bool gpu = true;
};

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: libmerge_omp_bench [--out DIR] [--threads 1,2,4,8,16] [--sizes 1e6,1e7,1e8,1e9]\n"
               "                          [--types int32,int64,struct16] [--runs R] [--max-seconds S] [--no-gpu]\n");
  std::exit(code);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string p; std::getline(in, p, ',');) {
    if (!p.empty()) parts.push_back(p);
  }
  return parts;
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (a == "--out") {
      o.out = value();
    } else if (a == "--threads") {
      o.threads.clear();
      for (auto& p : split(value())) o.threads.push_back(std::atoi(p.c_str()));
    } else if (a == "--sizes") {
      o.sizes.clear();
      for (auto& p : split(value())) o.sizes.push_back(static_cast<long long>(std::atof(p.c_str())));
    } else if (a == "--types") {
      o.types = split(value());
    } else if (a == "--runs") {
      o.runs = std::atoi(value().c_str());
    } else if (a == "--max-seconds") {
      o.max_seconds = std::atof(value().c_str());
    } else if (a == "--no-gpu") {
      o.gpu = false;
    } else if (a == "--help" || a == "-h") {
      usage(0);
    } else {
      usage(2);
    }
  }
  std::sort(o.threads.begin(), o.threads.end());
  std::sort(o.sizes.begin(), o.sizes.end());
  if (o.threads.empty() || o.threads.front() < 1 || o.sizes.empty() || o.sizes.front() < 2 || o.runs < 1) usage(2);
  for (auto& t : o.types) {
    if (t != "int32" && t != "int64" && t != "struct16") usage(2);
  }
  return o;
}

// ---------------------------------------------------------------------------
// Results

struct measurement {
  std::string section, algorithm, type, impl;
  long long n;
  int threads;
  double ms;
  int runs;
};

std::vector<measurement> results;
std::vector<std::string> skipped;
std::string gpu_device;

const measurement* find(const std::string& algorithm, const std::string& type, long long n, int threads,
                        const std::string& impl) {
  for (const auto& m : results) {
    if (m.algorithm == algorithm && m.type == type && m.n == n && m.threads == threads && m.impl == impl) return &m;
  }
  return nullptr;
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("output check failed: " + what);
}

// ---------------------------------------------------------------------------
// Data: uninitialized arrays filled in parallel (a std::vector of 10^9
// elements would be zeroed by one thread first).

template <class T>
class array {
 public:
  explicit array(long long n) : n_(n), p_(new T[static_cast<std::size_t>(n)]) {}
  T* begin() const { return p_.get(); }
  T* end() const { return p_.get() + n_; }
  T& operator[](long long i) const { return p_[static_cast<std::size_t>(i)]; }
  long long size() const { return n_; }

 private:
  long long n_;
  std::unique_ptr<T[]> p_;
};

template <class T>
void parallel_copy(const T* from, long long n, T* to) {
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) to[i] = from[i];
}

template <class T>
bool parallel_equal(const T* x, const T* y, long long n) {
  long long differ = 0;
#pragma omp parallel for schedule(static) reduction(+ : differ)
  for (long long i = 0; i < n; ++i) differ += !(x[i] == y[i]);
  return differ == 0;
}

template <class T>
bool parallel_is_sorted(const T* x, long long n) {
  long long out_of_order = 0;
#pragma omp parallel for schedule(static) reduction(+ : out_of_order)
  for (long long i = 1; i < n; ++i) out_of_order += x[i] < x[i - 1];
  return out_of_order == 0;
}

std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class T>
T key_from(std::uint64_t bits) {
  if constexpr (std::is_same_v<T, struct16>) {
    return struct16{static_cast<std::int64_t>(bits), static_cast<std::int64_t>(mix(bits))};
  } else {
    return static_cast<T>(bits);
  }
}

// n random keys (the same for any thread count): key i is a hash of (seed, i).
template <class T>
array<T> random_keys(long long n, std::uint64_t seed) {
  array<T> a(n);
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) a[i] = key_from<T>(mix(seed * 0x100000001b3ull + static_cast<std::uint64_t>(i)));
  return a;
}

template <class T>
array<T> sorted_random_keys(long long n, std::uint64_t seed) {
  array<T> a = random_keys<T>(n, seed);
  lm::merge_sort(lm::omp::par, a.begin(), a.end(), less_than{});
  return a;
}

// An output array, first touched in parallel (as a caller's would be).
template <class T>
array<T> touched(long long n) {
  array<T> a(n);
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) a[i] = T{};
  return a;
}

const char* type_name(std::int32_t) { return "int32"; }
const char* type_name(std::int64_t) { return "int64"; }
const char* type_name(struct16) { return "struct16"; }

// ---------------------------------------------------------------------------
// Timing

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median ms of run(), setup() before each run untimed. A call over 1.5 s runs
// once; one under 0.2 s is repeated (the first run only warms up) until
// max_runs runs or 3 s of them.
template <class Setup, class Run>
std::pair<double, int> time_runs(int max_runs, Setup&& setup, Run&& run) {
  auto once = [&] {
    setup();
    const double t0 = now_ms();
    run();
    return now_ms() - t0;
  };
  const double first = once();
  if (first > 1500 || max_runs == 1) return {first, 1};
  std::vector<double> t;
  if (first >= 200) t.push_back(first);
  double total = first;
  while (static_cast<int>(t.size()) < max_runs && total < 3000) {
    t.push_back(once());
    total += t.back();
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], static_cast<int>(t.size())};
}

// One measured point: the section, algorithm, key type, n and thread count
// that every implementation of it shares.
struct point {
  std::string section, algorithm;
  long long n;
  int threads;
  int runs;
  bool references;  // also time the one-thread references (std::, lm::serial)
  bool gpu;         // also time the CUDA backend
};

template <class T>
void record(const point& p, const std::string& impl, std::pair<double, int> t) {
  results.push_back({p.section, p.algorithm, type_name(T{}), impl, p.n, p.threads, t.first, t.second});
  std::fprintf(stderr, "  %-18s %-8s n=%-11lld t=%-3d %-36s %10.2f ms\n", p.algorithm.c_str(), type_name(T{}), p.n,
               p.threads, impl.c_str(), t.first);
}

template <class T>
void record_gpu(const point& p, omp_bench::gpu_time g) {
  if (g.device < 0) return;
  record<T>(p, "cuda (data on the GPU)", {g.device, p.runs});
  record<T>(p, "cuda (with copies)", {g.with_copies, p.runs});
}

// Runs f with OpenMP's default team set to t threads (how __gnu_parallel, Thrust
// and the lower_bound loop are told their team size), then restores it.
template <class F>
void with_threads(int t, F&& f) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(t);
  f();
  omp_set_num_threads(saved);
}

// ---------------------------------------------------------------------------
// The four cases

template <class T>
void bench_merge_sort(const point& p) {
  const long long n = p.n;
  const auto input = random_keys<T>(n, 1);
  array<T> work(n), expected(n);
  auto reset = [&] { parallel_copy(input.begin(), n, work.begin()); };
  const auto policy = lm::omp::par.threads(p.threads);
  record<T>(p, "lm::omp", time_runs(p.runs, reset, [&] { lm::merge_sort(policy, work.begin(), work.end(), less_than{}); }));
  parallel_copy(work.begin(), n, expected.begin());
  check(parallel_is_sorted(expected.begin(), n), "lm::omp merge_sort sorted");
  auto same = [&](const char* impl) { check(parallel_equal(work.begin(), expected.begin(), n), std::string(impl) + " merge_sort"); };

  with_threads(p.threads, [&] {
    record<T>(p, "__gnu_parallel::stable_sort",
              time_runs(p.runs, reset, [&] { __gnu_parallel::stable_sort(work.begin(), work.end(), less_than{}); }));
    same("__gnu_parallel::stable_sort");
#if LIBMERGE_BENCH_THRUST
    record<T>(p, "thrust::stable_sort (omp)", time_runs(p.runs, reset, [&] {
                thrust::stable_sort(thrust::omp::par, work.begin(), work.end(), less_than{});
              }));
    same("thrust::stable_sort (omp)");
#endif
  });
  if (p.references) {
    record<T>(p, "std::stable_sort", time_runs(p.runs, reset, [&] { std::stable_sort(work.begin(), work.end(), less_than{}); }));
    same("std::stable_sort");
    record<T>(p, "lm::serial", time_runs(p.runs, reset, [&] { lm::merge_sort(lm::serial, work.begin(), work.end(), less_than{}); }));
    same("lm::serial");
  }
  if (p.gpu) record_gpu<T>(p, omp_bench::gpu_merge_sort(input.begin(), n, expected.begin(), p.runs));
}

template <class T>
void bench_merge_sort_by_key(const point& p) {
  const long long n = p.n;
  const auto keys_in = random_keys<T>(n, 2);
  array<std::int32_t> vals_in(n);
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) vals_in[i] = static_cast<std::int32_t>(i);
  array<T> keys(n), expected_keys(n);
  array<std::int32_t> vals(n), expected_vals(n);
  auto reset = [&] {
    parallel_copy(keys_in.begin(), n, keys.begin());
    parallel_copy(vals_in.begin(), n, vals.begin());
  };
  const auto policy = lm::omp::par.threads(p.threads);
  record<T>(p, "lm::omp", time_runs(p.runs, reset, [&] {
              lm::merge_sort_by_key(policy, keys.begin(), keys.end(), vals.begin(), less_than{});
            }));
  parallel_copy(keys.begin(), n, expected_keys.begin());
  parallel_copy(vals.begin(), n, expected_vals.begin());
  check(parallel_is_sorted(expected_keys.begin(), n), "lm::omp merge_sort_by_key sorted");
  auto same = [&](const char* impl) {
    check(parallel_equal(keys.begin(), expected_keys.begin(), n) && parallel_equal(vals.begin(), expected_vals.begin(), n),
          std::string(impl) + " merge_sort_by_key");
  };

  // The pairs peer sorts (key, value) structs by key: built before each run, untimed.
  using pair_t = std::pair<T, std::int32_t>;
  array<pair_t> pairs(n);
  auto reset_pairs = [&] {
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; ++i) pairs[i] = pair_t(keys_in[i], vals_in[i]);
  };
  auto by_key = [](const pair_t& x, const pair_t& y) { return x.first < y.first; };
  auto unpack = [&] {
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; ++i) {
      keys[i] = pairs[i].first;
      vals[i] = pairs[i].second;
    }
  };
  with_threads(p.threads, [&] {
    record<T>(p, "__gnu_parallel::stable_sort (pairs)",
              time_runs(p.runs, reset_pairs, [&] { __gnu_parallel::stable_sort(pairs.begin(), pairs.end(), by_key); }));
    unpack();
    same("__gnu_parallel::stable_sort (pairs)");
#if LIBMERGE_BENCH_THRUST
    record<T>(p, "thrust::stable_sort_by_key (omp)", time_runs(p.runs, reset, [&] {
                thrust::stable_sort_by_key(thrust::omp::par, keys.begin(), keys.end(), vals.begin(), less_than{});
              }));
    same("thrust::stable_sort_by_key (omp)");
#endif
  });
  if (p.references) {
    record<T>(p, "std::stable_sort (pairs)",
              time_runs(p.runs, reset_pairs, [&] { std::stable_sort(pairs.begin(), pairs.end(), by_key); }));
    unpack();
    same("std::stable_sort (pairs)");
    record<T>(p, "lm::serial", time_runs(p.runs, reset, [&] {
                lm::merge_sort_by_key(lm::serial, keys.begin(), keys.end(), vals.begin(), less_than{});
              }));
    same("lm::serial");
  }
  if (p.gpu) {
    record_gpu<T>(p, omp_bench::gpu_merge_sort_by_key(keys_in.begin(), vals_in.begin(), n, expected_vals.begin(), p.runs));
  }
}

template <class T>
void bench_merge(const point& p) {
  const long long na = p.n / 2, nb = p.n - na;
  const auto a = sorted_random_keys<T>(na, 3);
  const auto b = sorted_random_keys<T>(nb, 4);
  auto out = touched<T>(p.n);
  array<T> expected(p.n);
  auto nothing = [] {};
  const auto policy = lm::omp::par.threads(p.threads);
  record<T>(p, "lm::omp", time_runs(p.runs, nothing, [&] {
              lm::merge(policy, a.begin(), a.end(), b.begin(), b.end(), out.begin(), less_than{});
            }));
  parallel_copy(out.begin(), p.n, expected.begin());
  check(parallel_is_sorted(expected.begin(), p.n), "lm::omp merge sorted");
  auto same = [&](const char* impl) { check(parallel_equal(out.begin(), expected.begin(), p.n), std::string(impl) + " merge"); };

  with_threads(p.threads, [&] {
    record<T>(p, "__gnu_parallel::merge", time_runs(p.runs, nothing, [&] {
                __gnu_parallel::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin(), less_than{});
              }));
    same("__gnu_parallel::merge");
#if LIBMERGE_BENCH_THRUST
    record<T>(p, "thrust::merge (omp)", time_runs(p.runs, nothing, [&] {
                thrust::merge(thrust::omp::par, a.begin(), a.end(), b.begin(), b.end(), out.begin(), less_than{});
              }));
    same("thrust::merge (omp)");
#endif
  });
  if (p.references) {
    record<T>(p, "std::merge", time_runs(p.runs, nothing, [&] {
                std::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin(), less_than{});
              }));
    same("std::merge");
    record<T>(p, "lm::serial", time_runs(p.runs, nothing, [&] {
                lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), out.begin(), less_than{});
              }));
    same("lm::serial");
  }
  if (p.gpu) record_gpu<T>(p, omp_bench::gpu_merge(a.begin(), na, b.begin(), nb, expected.begin(), p.runs));
}

template <class T>
void bench_sorted_search(const point& p) {
  const long long na = p.n / 2, nb = p.n - na;
  const auto needles = sorted_random_keys<T>(na, 5);
  const auto hay = sorted_random_keys<T>(nb, 6);
  auto out = touched<std::int64_t>(na);
  array<std::int64_t> expected(na);
  auto nothing = [] {};
  const auto policy = lm::omp::par.threads(p.threads);
  record<T>(p, "lm::omp", time_runs(p.runs, nothing, [&] {
              lm::sorted_search<lm::bounds::lower>(policy, needles.begin(), needles.end(), hay.begin(), hay.end(),
                                                   out.begin(), less_than{});
            }));
  parallel_copy(out.begin(), na, expected.begin());
  for (long long i = 0; i < na; i += std::max(1LL, na / 1000)) {
    check(expected[i] == std::lower_bound(hay.begin(), hay.end(), needles[i], less_than{}) - hay.begin(),
          "lm::omp sorted_search against std::lower_bound");
  }
  auto same = [&](const char* impl) { check(parallel_equal(out.begin(), expected.begin(), na), std::string(impl) + " sorted_search"); };
  auto lower_bound_loop = [&](int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long long i = 0; i < na; ++i) out[i] = std::lower_bound(hay.begin(), hay.end(), needles[i], less_than{}) - hay.begin();
  };

  record<T>(p, "omp for std::lower_bound", time_runs(p.runs, nothing, [&] { lower_bound_loop(p.threads); }));
  same("omp for std::lower_bound");
#if LIBMERGE_BENCH_THRUST
  with_threads(p.threads, [&] {
    record<T>(p, "thrust::lower_bound (omp)", time_runs(p.runs, nothing, [&] {
                thrust::lower_bound(thrust::omp::par, hay.begin(), hay.end(), needles.begin(), needles.end(),
                                    out.begin(), less_than{});
              }));
    same("thrust::lower_bound (omp)");
  });
#endif
  if (p.references) {
    record<T>(p, "lm::serial", time_runs(p.runs, nothing, [&] {
                lm::sorted_search<lm::bounds::lower>(lm::serial, needles.begin(), needles.end(), hay.begin(),
                                                     hay.end(), out.begin(), less_than{});
              }));
    same("lm::serial");
  }
  if (p.gpu) {
    record_gpu<T>(p, omp_bench::gpu_sorted_search(needles.begin(), na, hay.begin(), nb, expected.begin(), p.runs));
  }
}

template <class T>
void bench(const point& p) {
  if (p.algorithm == "merge_sort") bench_merge_sort<T>(p);
  if (p.algorithm == "merge_sort_by_key") bench_merge_sort_by_key<T>(p);
  if (p.algorithm == "merge") bench_merge<T>(p);
  if (p.algorithm == "sorted_search") bench_sorted_search<T>(p);
}

void bench(const std::string& type, const point& p) {
  if (type == "int32") bench<std::int32_t>(p);
  if (type == "int64") bench<std::int64_t>(p);
  if (type == "struct16") bench<struct16>(p);
}

// ---------------------------------------------------------------------------
// Reports

std::string cpu_model() { return bench_meta::cpu_model(); }

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) o += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return o;
}

std::string count(long long n) {
  int e = 0;
  long long m = n;
  while (m >= 10 && m % 10 == 0) {
    m /= 10;
    ++e;
  }
  if (e >= 6 && m < 10) return (m == 1 ? std::string() : std::to_string(m) + "e") + "10^" + std::to_string(e);
  return std::to_string(n);
}

// The peer an implementation is compared with in the tables.
std::string peer_of(const std::string& algorithm) {
  if (algorithm == "merge_sort") return "__gnu_parallel::stable_sort";
  if (algorithm == "merge_sort_by_key") return "__gnu_parallel::stable_sort (pairs)";
  if (algorithm == "merge") return "__gnu_parallel::merge";
  return "omp for std::lower_bound";
}

void write_reports(const options& o, int t_max, long long n_ref, double seconds) {
  std::ostringstream txt;
  txt << "libmerge OpenMP benchmark: " << cpu_model() << ", " << omp_get_num_procs() << " hardware threads"
      << (gpu_device.empty() ? "" : ", GPU " + gpu_device) << "\n"
      << "wall clock, median of up to " << o.runs << " runs; " << static_cast<int>(seconds) << " s in all\n";

  // The targets: int32 at the reference size and the largest thread count.
  struct target {
    const char* label;
    std::string algorithm, peer;
    double minimum, aim;
  };
  const target targets[] = {
      {"merge_sort int32", "merge_sort", "__gnu_parallel::stable_sort", 1.0, 1.3},
      {"merge_sort_by_key int32/int32", "merge_sort_by_key", "__gnu_parallel::stable_sort (pairs)", 1.0, 1.3},
      {"merge int32 (two halves)", "merge", "__gnu_parallel::merge", 1.0, 1.3},
      {"sorted_search lower/index, dense", "sorted_search", "omp for std::lower_bound", 3.0, 5.0},
  };
  char line[512];
  txt << "\nTargets: int32, n = " << count(n_ref) << ", " << t_max << " threads (speed-up = peer ms / lm::omp ms)\n";
  std::snprintf(line, sizeof line, "%-34s %12s %-36s %12s %9s %8s %6s\n", "case", "lm::omp ms", "peer", "peer ms",
                "speed-up", "minimum", "aim");
  txt << line;
  for (const auto& t : targets) {
    const auto* mine = find(t.algorithm, "int32", n_ref, t_max, "lm::omp");
    const auto* peer = find(t.algorithm, "int32", n_ref, t_max, t.peer);
    if (!mine || !peer) continue;
    std::snprintf(line, sizeof line, "%-34s %12.2f %-36s %12.2f %8.2fx %7.1fx %5.1fx\n", t.label, mine->ms,
                  t.peer.c_str(), peer->ms, peer->ms / mine->ms, t.minimum, t.aim);
    txt << line;
  }
  const auto* one = find("merge_sort", "int32", n_ref, 1, "lm::omp");
  const auto* many = find("merge_sort", "int32", n_ref, t_max, "lm::omp");
  if (one && many && t_max > 1) {
    std::snprintf(line, sizeof line, "%-34s %12.2f %-36s %12.2f %8.2fx %7.1fx %5.1fx\n",
                  ("merge_sort " + std::to_string(t_max) + " vs 1 thread").c_str(), many->ms,
                  "lm::omp::par.threads(1)", one->ms, one->ms / many->ms, 10.0, 14.0);
    txt << line;
  }

  // Every measurement, by section, each against its peer.
  for (const char* section : {"targets", "scaling", "sizes", "types"}) {
    bool header = false;
    for (const auto& m : results) {
      if (m.section != section) continue;
      if (!header) {
        txt << "\n" << section << "\n";
        std::snprintf(line, sizeof line, "%-18s %-9s %8s %7s  %-36s %12s %6s %10s\n", "algorithm", "type", "n",
                      "threads", "implementation", "ms", "runs", "vs peer");
        txt << line;
        header = true;
      }
      const auto* peer = find(m.algorithm, m.type, m.n, m.threads, peer_of(m.algorithm));
      std::string ratio = "-";
      if (peer && m.impl != peer->impl) {
        char r[32];
        std::snprintf(r, sizeof r, "%.2fx", peer->ms / m.ms);
        ratio = r;
      }
      std::snprintf(line, sizeof line, "%-18s %-9s %8s %7d  %-36s %12.2f %6d %10s\n", m.algorithm.c_str(),
                    m.type.c_str(), count(m.n).c_str(), m.threads, m.impl.c_str(), m.ms, m.runs, ratio.c_str());
      txt << line;
    }
  }
  if (!skipped.empty()) {
    txt << "\nskipped (--max-seconds " << o.max_seconds << " reached):\n";
    for (const auto& s : skipped) txt << "  " << s << "\n";
  }
  std::fputs(txt.str().c_str(), stdout);
  std::ofstream(o.out + "/omp-bench.txt") << txt.str();

  std::ofstream json(o.out + "/omp-bench.json");
  json << "{\n  \"cpu\": \"" << json_escape(cpu_model()) << "\",\n  \"hardware_threads\": " << omp_get_num_procs()
       << ",\n  \"gpu\": \"" << json_escape(gpu_device) << "\",\n  \"reference_n\": " << n_ref
       << ",\n  \"max_threads\": " << t_max << ",\n  \"date\": \"" << bench_meta::iso_date()
       << "\",\n  \"compiler\": \"" << json_escape(bench_meta::compiler()) << "\"";
  // The peers' versions: __gnu_parallel is the compiler's libstdc++; Thrust's
  // OpenMP system where it was built in (scripts/readme_tables.py names them).
#if LIBMERGE_BENCH_THRUST
  json << ",\n  \"thrust_version\": \"" << bench_meta::cccl_version(THRUST_VERSION) << "\"";
#endif
  json << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& m = results[i];
    json << "    {\"section\": \"" << m.section << "\", \"algorithm\": \"" << m.algorithm << "\", \"type\": \"" << m.type
         << "\", \"impl\": \"" << json_escape(m.impl) << "\", \"n\": " << m.n << ", \"threads\": " << m.threads
         << ", \"ms\": " << m.ms << ", \"runs\": " << m.runs << "}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  json << "  ],\n  \"skipped\": [";
  for (std::size_t i = 0; i < skipped.size(); ++i) json << (i ? ", " : "") << "\"" << json_escape(skipped[i]) << "\"";
  json << "]\n}\n";
  std::fprintf(stderr, "wrote %s/omp-bench.txt and %s/omp-bench.json\n", o.out.c_str(), o.out.c_str());
}

}  // namespace

#if !LIBMERGE_BENCH_GPU
// Built without CUDA: no GPU rows.
namespace omp_bench {
std::string gpu_name() { return {}; }
template <class T>
gpu_time gpu_merge_sort(const T*, std::int64_t, const T*, int) {
  return {};
}
template <class T>
gpu_time gpu_merge_sort_by_key(const T*, const std::int32_t*, std::int64_t, const std::int32_t*, int) {
  return {};
}
template <class T>
gpu_time gpu_merge(const T*, std::int64_t, const T*, std::int64_t, const T*, int) {
  return {};
}
template <class T>
gpu_time gpu_sorted_search(const T*, std::int64_t, const T*, std::int64_t, const std::int64_t*, int) {
  return {};
}
}  // namespace omp_bench
#endif

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  mkdir(o.out.c_str(), 0755);
  if (o.gpu) gpu_device = omp_bench::gpu_name();
  const int t_max = o.threads.back();
  long long n_ref = o.sizes.front();
  for (long long s : o.sizes) {
    if (s <= 100000000) n_ref = s;
  }
  const double start = now_ms();
  const std::vector<std::string> all = {"merge_sort", "merge_sort_by_key", "merge", "sorted_search"};
  const std::vector<std::string> no_by_key = {"merge_sort", "merge", "sorted_search"};

  // The plan, in priority order; points measured twice are measured once.
  std::vector<std::pair<std::string, point>> plan;
  for (const auto& a : all) plan.push_back({"int32", {"targets", a, n_ref, t_max, o.runs, false, !gpu_device.empty()}});
  // One thread first among the scaling points: the 16-vs-1 ratio is a target
  // (left out with --threads that lack 1).
  if (o.threads.front() == 1) plan.push_back({"int32", {"scaling", "merge_sort", n_ref, 1, o.runs, true, false}});
  for (int t : o.threads) {
    for (const auto& a : no_by_key) {
      if (t != t_max) plan.push_back({"int32", {"scaling", a, n_ref, t, o.runs, t == 1, false}});
    }
  }
  for (long long s : o.sizes) {
    for (const auto& a : all) {
      if (s == n_ref || (a == "merge_sort_by_key" && s > 100000000)) continue;
      plan.push_back({"int32", {"sizes", a, s, t_max, o.runs, false, !gpu_device.empty()}});
    }
  }
  for (const auto& type : o.types) {
    if (type == "int32") continue;
    for (const auto& a : all) plan.push_back({type, {"types", a, n_ref, t_max, o.runs, false, false}});
  }

  try {
    std::fprintf(stderr, "libmerge_omp_bench: %s, %d hardware threads%s\n", cpu_model().c_str(), omp_get_num_procs(),
                 gpu_device.empty() ? "" : (", GPU " + gpu_device).c_str());
    for (const auto& [type, p] : plan) {
      const bool done = std::any_of(results.begin(), results.end(), [&](const measurement& m) {
        return m.algorithm == p.algorithm && m.type == type && m.n == p.n && m.threads == p.threads &&
               m.impl == "lm::omp";
      });
      if (done) continue;
      if ((now_ms() - start) / 1000 > o.max_seconds) {
        skipped.push_back(p.section + ": " + p.algorithm + " " + type + " n=" + count(p.n) + " threads=" +
                          std::to_string(p.threads));
        continue;
      }
      bench(type, p);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libmerge_omp_bench: %s\n", e.what());
    return 1;
  }
  write_reports(o, t_max, n_ref, (now_ms() - start) / 1000);
  return 0;
}
