// libmerge demo: the Modern GPU demonstrations (sort keys, sort pairs, merge,
// sorted search in both forms), then a timing table of the same algorithms on
// the serial backend, the OpenMP backend and the GPU, side by side.
//
//   libmerge_demo [--backend serial|omp|cuda] [--size N] [--no-timing]
//
// Built by nvcc the demonstrations run on the GPU when one is present; on a
// machine without one (or built by g++ alone) on the OpenMP backend when it
// was compiled in (-fopenmp), else on the serial one; the demo says which.
// The table has a column for each backend that is there.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <libmerge/libmerge.hpp>

#include "demonstrations.hpp"

namespace lm = libmerge;

namespace {

// Whether this build has the OpenMP backend (compiled with -fopenmp).
constexpr bool have_omp = lm::is_available<lm::algo::merge_sort, lm::omp::policy>;

struct options {
  std::string backend;  // empty: cuda when a GPU is present, else omp when built in, else serial
  long long size = 4000000;
  bool timing = true;
};

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: libmerge_demo [--backend serial|omp|cuda] [--size N] [--no-timing]\n");
  std::exit(code);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--backend" && i + 1 < argc) {
      o.backend = argv[++i];
      if (o.backend != "serial" && o.backend != "omp" && o.backend != "cuda") usage(2);
    } else if (arg == "--size" && i + 1 < argc) {
      o.size = std::atoll(argv[++i]);
      if (o.size < 2) usage(2);
    } else if (arg == "--no-timing") {
      o.timing = false;
    } else if (arg == "--help" || arg == "-h") {
      usage(0);
    } else {
      usage(2);
    }
  }
  return o;
}

std::vector<int> random_keys(long long n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<int>(rng() % 1000000000u);
  return v;
}

template <class F>
double median_ms(F&& timed_run, int runs) {
  timed_run();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) t.push_back(timed_run());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Milliseconds of one CPU call, fresh input each time (sorting sorts in place).
template <class F>
double cpu_ms(F&& call) {
  return median_ms(
      [&] {
        const auto t0 = std::chrono::steady_clock::now();
        call();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      },
      3);
}

struct row {
  const char* name;
  double serial = 0;
  double omp = -1;   // < 0: no OpenMP backend in this build
  double cuda = -1;  // < 0: not timed on the GPU
};

std::string cell(double ms) {
  if (ms < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

std::string ratio(double base, double ms) {
  if (ms <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fx", base / ms);
  return buf;
}

void print_table(const std::vector<row>& rows, long long n, int omp_threads) {
  std::printf("\n\nTIMING (%lld int32 keys per input, median; speed-ups against serial):\n\n", n);
  std::printf("%-34s %11s %11s %11s %9s %9s\n", "algorithm", "serial ms", "openmp ms", "cuda ms", "openmp", "cuda");
  for (const row& r : rows) {
    std::printf("%-34s %11.3f %11s %11s %9s %9s\n", r.name, r.serial, cell(r.omp).c_str(), cell(r.cuda).c_str(),
                ratio(r.serial, r.omp).c_str(), ratio(r.serial, r.cuda).c_str());
  }
  if (omp_threads > 0) {
    std::printf("\nopenmp: lm::omp::par, %d threads (OMP_NUM_THREADS to change)\n", omp_threads);
  } else {
    std::printf("\nopenmp: not in this build (compile with -fopenmp; CMake finds OpenMP by itself)\n");
  }
  std::printf("cuda: lm::cuda::par, data already on the GPU; '-' where there is no GPU\n");
}

// The CPU columns: lm::serial, and lm::omp::par when the build has it.
std::vector<row> cpu_rows(long long n) {
  const auto keys = random_keys(n, 1);
  auto a = random_keys(n, 2), b = random_keys(n, 3);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<int> work, out(2 * static_cast<std::size_t>(n));
  std::vector<long long> bounds(static_cast<std::size_t>(n));
  std::vector<int> counts(static_cast<std::size_t>(n));
  auto sort_ms = [&](const auto& policy) {
    return cpu_ms([&] {
      work = keys;
      lm::merge_sort(policy, work.begin(), work.end());
    });
  };
  auto merge_ms = [&](const auto& policy) {
    return cpu_ms([&] { lm::merge(policy, a.begin(), a.end(), b.begin(), b.end(), out.begin()); });
  };
  auto search_ms = [&](const auto& policy) {
    return cpu_ms([&] {
      lm::sorted_search<lm::bounds::lower>(policy, a.begin(), a.end(), b.begin(), b.end(), bounds.begin());
    });
  };
  auto count_ms = [&](const auto& policy) {
    return cpu_ms([&] { lm::sorted_equality_count(policy, a.begin(), a.end(), b.begin(), b.end(), counts.begin()); });
  };
  std::vector<row> rows = {{"merge_sort (keys)", sort_ms(lm::serial)},
                           {"merge (keys, two inputs of N)", merge_ms(lm::serial)},
                           {"sorted_search<lower> (N into N)", search_ms(lm::serial)},
                           {"sorted_equality_count (N in N)", count_ms(lm::serial)}};
#if defined(_OPENMP)
  rows[0].omp = sort_ms(lm::omp::par);
  rows[1].omp = merge_ms(lm::omp::par);
  rows[2].omp = search_ms(lm::omp::par);
  rows[3].omp = count_ms(lm::omp::par);
#endif
  return rows;
}

#if LIBMERGE_HAS_CUDA
bool have_gpu(std::string& why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();
    return false;
  }
  return true;
}

// GPU times of the algorithms the CUDA backend implements, with CUDA events.
void add_cuda_times(std::vector<row>& rows, long long n) {
  auto a = random_keys(n, 2), b = random_keys(n, 3);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  thrust::device_vector<int> da(a.begin(), a.end()), db(b.begin(), b.end()), out(2 * static_cast<std::size_t>(n));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const auto keys = random_keys(n, 1);
  thrust::device_vector<int> dkeys(keys.begin(), keys.end()), work(keys.size());
  thrust::device_vector<long long> bounds(static_cast<std::size_t>(n));
  thrust::device_vector<int> counts(static_cast<std::size_t>(n));
  auto gpu_ms = [&](auto&& call, auto&& setup) {
    return median_ms(
        [&] {
          setup();  // outside the timing: a fresh unsorted copy for a sort
          cudaEventRecord(start);
          call();
          cudaEventRecord(stop);
          cudaEventSynchronize(stop);
          float ms = 0;
          cudaEventElapsedTime(&ms, start, stop);
          return static_cast<double>(ms);
        },
        9);
  };
  auto nothing = [] {};
  for (row& r : rows) {
    if (std::strncmp(r.name, "merge (", 7) == 0 && lm::is_available<lm::algo::merge, decltype(lm::cuda::par)>) {
      r.cuda = gpu_ms([&] { lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), out.begin()); },
                      nothing);
    }
    if (std::strncmp(r.name, "merge_sort (", 12) == 0 &&
        lm::is_available<lm::algo::merge_sort, decltype(lm::cuda::par)>) {
      r.cuda = gpu_ms([&] { lm::merge_sort(lm::cuda::par, work.begin(), work.end()); },
                      [&] { thrust::copy(dkeys.begin(), dkeys.end(), work.begin()); });
    }
    if (std::strncmp(r.name, "sorted_search", 13) == 0) {
      r.cuda = gpu_ms(
          [&] {
            lm::sorted_search<lm::bounds::lower>(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(),
                                                 bounds.begin());
          },
          nothing);
    }
    if (std::strncmp(r.name, "sorted_equality_count", 21) == 0) {
      r.cuda = gpu_ms(
          [&] {
            lm::sorted_equality_count(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), counts.begin());
          },
          nothing);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const options opt = parse(argc, argv);
  std::string backend = opt.backend;
  const char* cpu_backend = have_omp ? "omp" : "serial";
  if (backend == "omp" && !have_omp) {
    std::fprintf(stderr, "libmerge_demo: --backend omp, but this build has no OpenMP backend (compile with -fopenmp)\n");
    return 1;
  }

#if LIBMERGE_HAS_CUDA
  std::string why;
  const bool gpu = have_gpu(why);
  if (backend.empty()) backend = gpu ? "cuda" : cpu_backend;
  if (backend == "cuda" && !gpu) {
    std::fprintf(stderr, "libmerge_demo: --backend cuda, but no usable GPU (%s)\n", why.c_str());
    return 1;
  }
  if (!gpu) std::printf("No usable CUDA GPU (%s): running on the %s CPU backend.\n", why.c_str(), cpu_backend);
#else
  if (backend == "cuda") {
    std::fprintf(stderr, "libmerge_demo: built without CUDA; --backend serial or omp\n");
    return 1;
  }
  if (backend.empty()) backend = cpu_backend;
  std::printf("Built without CUDA: running on the %s CPU backend.\n", backend.c_str());
#endif

  std::printf("libmerge demo, backend: %s\n", backend.c_str());
  try {
#if LIBMERGE_HAS_CUDA
    if (backend == "cuda") {
      demo::run_demonstrations(std::cout, lm::cuda::par);
      cudaDeviceSynchronize();
    }
#endif
    if (backend == "omp") demo::run_demonstrations(std::cout, lm::omp::par);
    if (backend == "serial") demo::run_demonstrations(std::cout, lm::serial);
    std::cout.flush();
    if (opt.timing) {
      std::vector<row> rows = cpu_rows(opt.size);
#if LIBMERGE_HAS_CUDA
      if (gpu) add_cuda_times(rows, opt.size);
#endif
      int omp_threads = 0;
#if defined(_OPENMP)
      omp_threads = omp_get_max_threads();
#endif
      print_table(rows, opt.size, omp_threads);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libmerge_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
