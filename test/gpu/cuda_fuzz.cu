// The differential fuzzer on the GPU: lm::cuda::par against lm::serial (the
// oracle, itself fuzzed against the standard library by test/cpu/test_fuzz)
// on the inputs of test/support/fuzz_inputs.hpp, sizes up to 2^22 biased to
// powers of two and tile boundaries; every algorithm, element for element
// (values and indices too: stability).
//
//   libmerge_cuda_fuzz [--seed S] [--seconds T] [--max-log2 K]
//
// Prints the seed range it covered; a failing case prints its seed, and
// `--seed S --seconds 0` runs that case alone. Exit code 1 on a mismatch;
// 20 s by default (CTest runs it so where a GPU is present).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/sequence.h>

#include <libmerge/libmerge.hpp>

#include "fuzz_inputs.hpp"

namespace lm = libmerge;

namespace {

int max_log2 = 22;
bool failed = false;

template <class T>
thrust::device_vector<T> dev(const std::vector<T>& v) {
  return thrust::device_vector<T>(v.begin(), v.end());
}
template <class T>
std::vector<T> host(const thrust::device_vector<T>& d) {
  std::vector<T> v(d.size());
  thrust::copy(d.begin(), d.end(), v.begin());
  return v;
}

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("MISMATCH %s\n", what.c_str());
    failed = true;
  }
}

template <class T, class Comp>
void one_case(std::mt19937_64& g, Comp comp, const std::string& what) {
  const int algorithm = static_cast<int>(g() % 4);
  if (algorithm == 0) {  // merge_sort_by_key, merge_sort_indices
    const auto keys = fuzz::make_keys<T>(g, fuzz::pick_size(g, max_log2));
    auto want_k = keys;
    std::vector<std::int64_t> want_v(keys.size());
    std::iota(want_v.begin(), want_v.end(), std::int64_t(0));
    lm::merge_sort_by_key(lm::serial, want_k.begin(), want_k.end(), want_v.begin(), comp);
    auto dk = dev(keys);
    thrust::device_vector<std::int64_t> dv(keys.size());
    thrust::sequence(dv.begin(), dv.end(), std::int64_t(0));
    lm::merge_sort_by_key(lm::cuda::par, dk.begin(), dk.end(), dv.begin(), comp);
    expect(fuzz::same(host(dk), want_k) && host(dv) == want_v, what + " merge_sort_by_key n=" + std::to_string(keys.size()));
    dk = dev(keys);
    thrust::device_vector<std::int32_t> idx(keys.size(), -1);
    lm::merge_sort_indices(lm::cuda::par, dk.begin(), dk.end(), idx.begin(), comp);
    const auto got = host(idx);
    expect(std::equal(got.begin(), got.end(), want_v.begin()),
           what + " merge_sort_indices n=" + std::to_string(keys.size()));
    return;
  }
  auto a = fuzz::make_keys<T>(g, fuzz::pick_size(g, max_log2));
  auto b = fuzz::make_keys<T>(g, fuzz::pick_size(g, max_log2));
  lm::merge_sort(lm::serial, a.begin(), a.end(), comp);
  lm::merge_sort(lm::serial, b.begin(), b.end(), comp);
  const std::string sizes = " |A|=" + std::to_string(a.size()) + " |B|=" + std::to_string(b.size());
  auto da = dev(a), db = dev(b);
  if (algorithm == 1) {  // merge, merge_by_key
    std::vector<std::int64_t> av(a.size()), bv(b.size());
    std::iota(av.begin(), av.end(), std::int64_t(0));
    std::iota(bv.begin(), bv.end(), static_cast<std::int64_t>(a.size()));
    std::vector<T> want_k(a.size() + b.size());
    std::vector<std::int64_t> want_v(a.size() + b.size());
    lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), want_k.begin(),
                     want_v.begin(), comp);
    auto dav = dev(av), dbv = dev(bv);
    thrust::device_vector<T> k(want_k.size());
    thrust::device_vector<std::int64_t> v(want_v.size(), -1);
    lm::merge_by_key(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), dav.begin(), dbv.begin(), k.begin(),
                     v.begin(), comp);
    expect(fuzz::same(host(k), want_k) && host(v) == want_v, what + " merge_by_key" + sizes);
    lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), k.begin(), comp);
    expect(fuzz::same(host(k), want_k), what + " merge" + sizes);
    return;
  }
  // sorted_search both ways (index_match), with device counts, and the
  // equality count; lower bounds for algorithm 2, upper for 3.
  std::vector<std::uint64_t> wa(a.size()), wb(b.size());
  std::vector<std::int64_t> wc(a.size());
  lm::match_counts wm{};
  if (algorithm == 2) {
    wm = lm::sorted_search<lm::bounds::lower, lm::search_type::index_match, lm::search_type::index_match>(
        lm::serial, a.begin(), a.end(), b.begin(), b.end(), wa.begin(), wb.begin(), comp);
  } else {
    wm = lm::sorted_search<lm::bounds::upper, lm::search_type::index_match, lm::search_type::index_match>(
        lm::serial, a.begin(), a.end(), b.begin(), b.end(), wa.begin(), wb.begin(), comp);
  }
  lm::sorted_equality_count(lm::serial, a.begin(), a.end(), b.begin(), b.end(), wc.begin(), comp);
  thrust::device_vector<std::uint64_t> ga(a.size()), gb(b.size());
  thrust::device_vector<lm::match_counts> gm(1);
  thrust::device_vector<std::int64_t> gc(a.size(), -1);
  if (algorithm == 2) {
    lm::sorted_search<lm::bounds::lower, lm::search_type::index_match, lm::search_type::index_match>(
        lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), ga.begin(), gb.begin(),
        thrust::raw_pointer_cast(gm.data()), comp);
  } else {
    lm::sorted_search<lm::bounds::upper, lm::search_type::index_match, lm::search_type::index_match>(
        lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), ga.begin(), gb.begin(),
        thrust::raw_pointer_cast(gm.data()), comp);
  }
  lm::sorted_equality_count(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), gc.begin(), comp);
  const lm::match_counts m = gm[0];
  expect(host(ga) == wa && host(gb) == wb && m == wm,
         what + (algorithm == 2 ? " sorted_search lower" : " sorted_search upper") + sizes);
  expect(host(gc) == wc, what + " sorted_equality_count" + sizes);
}

void one_seed(std::uint64_t seed) {
  std::string what;
  fuzz::with_seed(seed, [&](std::mt19937_64& g, auto key, auto comp, const std::string& w) {
    what = w;
    one_case<decltype(key)>(g, comp, w);
  });
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::printf("CUDA ERROR %s after %s\n", cudaGetErrorString(e), what.c_str());
    std::exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  double seconds = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--max-log2")) max_log2 = std::atoi(argv[i + 1]);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("libmerge_cuda_fuzz: no GPU, skipped\n");
    return 77;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t first = seed;
  do {
    one_seed(seed++);
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds);
  std::printf("libmerge_cuda_fuzz: seeds %llu .. %llu in %.0f s, max size 2^%d: %s\n",
              static_cast<unsigned long long>(first), static_cast<unsigned long long>(seed - 1),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), max_log2,
              failed ? "MISMATCHES" : "all agree");
  return failed ? 1 : 0;
}
