// libmerge demo: the Modern GPU demonstrations (sort keys, sort pairs, merge,
// sorted search in both forms), then a small CPU-vs-GPU timing table.
//
//   libmerge_demo [--backend serial|cuda] [--size N] [--no-timing]
//
// Built by nvcc the demo runs on the GPU when one is present; on a machine
// without one (or built by g++ alone) it runs on the serial CPU backend and
// says so.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <libmerge/libmerge.hpp>

#include "demonstrations.hpp"

namespace lm = libmerge;

namespace {

struct options {
  std::string backend;  // empty: cuda when a GPU is present, else serial
  long long size = 4000000;
  bool timing = true;
};

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: libmerge_demo [--backend serial|cuda] [--size N] [--no-timing]\n");
  std::exit(code);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--backend" && i + 1 < argc) {
      o.backend = argv[++i];
      if (o.backend != "serial" && o.backend != "cuda") usage(2);
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

// Milliseconds of one serial call, fresh input each time (sorting sorts in place).
template <class F>
double serial_ms(F&& call) {
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
  double cuda = -1;  // < 0: not timed on the GPU
};

void print_table(const std::vector<row>& rows, long long n) {
  std::printf("\n\nTIMING (%lld int32 keys per input, median):\n\n", n);
  std::printf("%-34s %12s %12s %10s\n", "algorithm", "serial ms", "cuda ms", "speed-up");
  for (const row& r : rows) {
    if (r.cuda >= 0) {
      std::printf("%-34s %12.3f %12.3f %9.1fx\n", r.name, r.serial, r.cuda, r.serial / r.cuda);
    } else {
      std::printf("%-34s %12.3f %12s %10s\n", r.name, r.serial, "-", "-");
    }
  }
}

std::vector<row> serial_rows(long long n) {
  const auto keys = random_keys(n, 1);
  auto a = random_keys(n, 2), b = random_keys(n, 3);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<int> work, out(2 * static_cast<std::size_t>(n));
  std::vector<long long> bounds(static_cast<std::size_t>(n));
  std::vector<row> rows;
  rows.push_back({"merge_sort (keys)", serial_ms([&] {
                    work = keys;
                    lm::merge_sort(lm::serial, work.begin(), work.end());
                  })});
  rows.push_back({"merge (keys, two inputs of N)",
                  serial_ms([&] { lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), out.begin()); })});
  rows.push_back({"sorted_search<lower> (N into N)", serial_ms([&] {
                    lm::sorted_search<lm::bounds::lower>(lm::serial, a.begin(), a.end(), b.begin(), b.end(),
                                                         bounds.begin());
                  })});
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
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const options opt = parse(argc, argv);
  std::string backend = opt.backend;

#if LIBMERGE_HAS_CUDA
  std::string why;
  const bool gpu = have_gpu(why);
  if (backend.empty()) backend = gpu ? "cuda" : "serial";
  if (backend == "cuda" && !gpu) {
    std::fprintf(stderr, "libmerge_demo: --backend cuda, but no usable GPU (%s)\n", why.c_str());
    return 1;
  }
  if (!gpu) std::printf("No usable CUDA GPU (%s): running on the serial CPU backend.\n", why.c_str());
#else
  if (backend == "cuda") {
    std::fprintf(stderr, "libmerge_demo: built without CUDA; only --backend serial is available\n");
    return 1;
  }
  backend = "serial";
  std::printf("Built without CUDA: running on the serial CPU backend.\n");
#endif

  std::printf("libmerge demo, backend: %s\n", backend.c_str());
  try {
#if LIBMERGE_HAS_CUDA
    if (backend == "cuda") {
      demo::run_demonstrations(std::cout, lm::cuda::par);
      cudaDeviceSynchronize();
    } else {
      demo::run_demonstrations(std::cout, lm::serial);
    }
#else
    demo::run_demonstrations(std::cout, lm::serial);
#endif
    std::cout.flush();
    if (opt.timing) {
      std::vector<row> rows = serial_rows(opt.size);
#if LIBMERGE_HAS_CUDA
      if (backend == "cuda") add_cuda_times(rows, opt.size);
#endif
      print_table(rows, opt.size);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libmerge_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
