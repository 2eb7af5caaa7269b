// Beyond 2^31 elements: 64-bit counts all the way through the CUDA merge,
// k-way merge, merge sort and sorted search. 1-byte keys keep it fast; the serial backend
// (or, for the search, arithmetic on run lengths) is the reference.
#define BOOST_TEST_MODULE cuda_large
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>

#include "cuda_test_support.cuh"

namespace lm = libmerge;

namespace {

// n sorted int8 keys with random multiplicities, built without sorting.
std::vector<std::int8_t> sorted_bytes(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> weight(256);
  double total = 0;
  for (auto& w : weight) total += (w = 0.5 + static_cast<double>(rng() % 1000));
  std::vector<std::int8_t> v;
  v.reserve(static_cast<std::size_t>(n));
  for (int k = 0; k < 256 && static_cast<std::int64_t>(v.size()) < n; ++k) {
    const auto run = static_cast<std::int64_t>(static_cast<double>(n) * weight[k] / total) + 1;
    v.insert(v.end(), static_cast<std::size_t>(std::min(run, n - static_cast<std::int64_t>(v.size()))),
             static_cast<std::int8_t>(k - 128));
  }
  v.resize(static_cast<std::size_t>(n), static_cast<std::int8_t>(127));
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

BOOST_AUTO_TEST_CASE(merge_beyond_2_pow_31) {
  const std::int64_t na = (std::int64_t(1) << 30) + 12345, nb = (std::int64_t(1) << 30) + (1 << 20) + 7;
  const std::int64_t n = na + nb;
  BOOST_REQUIRE_GT(n, std::int64_t(1) << 31);
  const auto a = sorted_bytes(na, 1), b = sorted_bytes(nb, 2);

  auto t0 = std::chrono::steady_clock::now();
  thrust::device_vector<std::int8_t> da(a.begin(), a.end()), db(b.begin(), b.end()), dout(n, 0);
  lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), dout.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = cuda_test::to_host(dout);
  BOOST_TEST_MESSAGE("GPU merge of " << n << " keys and copies: " << seconds_since(t0) << " s");

  std::vector<std::int8_t> expected(static_cast<std::size_t>(n));
  lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected.begin());
  BOOST_CHECK(std::memcmp(got.data(), expected.data(), expected.size()) == 0);
}

// Values are each element's 64-bit origin (A: i, B: |A| + j), so every value
// above 2^31 must land where the stable merge puts it.
BOOST_AUTO_TEST_CASE(merge_by_key_beyond_2_pow_31) {
  const std::int64_t na = (std::int64_t(1) << 30) + 999, nb = (std::int64_t(1) << 30) + (1 << 21) + 1;
  const std::int64_t n = na + nb;
  const auto a = sorted_bytes(na, 3), b = sorted_bytes(nb, 4);

  auto t0 = std::chrono::steady_clock::now();
  thrust::device_vector<std::int8_t> da(a.begin(), a.end()), db(b.begin(), b.end()), dkeys(n, 0);
  thrust::device_vector<std::int64_t> dvals(n, -1);
  lm::merge_by_key(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(),
                   thrust::counting_iterator<std::int64_t>(0), thrust::counting_iterator<std::int64_t>(na),
                   dkeys.begin(), dvals.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto keys = cuda_test::to_host(dkeys);
  const auto vals = cuda_test::to_host(dvals);
  BOOST_TEST_MESSAGE("GPU merge_by_key of " << n << " pairs and copies: " << seconds_since(t0) << " s");

  std::vector<std::int8_t> expected_keys(static_cast<std::size_t>(n));
  std::vector<std::int64_t> expected_vals(static_cast<std::size_t>(n));
  lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), thrust::counting_iterator<std::int64_t>(0),
                   thrust::counting_iterator<std::int64_t>(na), expected_keys.begin(), expected_vals.begin());
  BOOST_CHECK(std::memcmp(keys.data(), expected_keys.data(), expected_keys.size()) == 0);
  BOOST_CHECK(std::memcmp(vals.data(), expected_vals.data(), expected_vals.size() * sizeof(std::int64_t)) == 0);
}

// A k-way merge of 5 ranges, 2^31 + 2^21 keys in all, against lm::serial's.
BOOST_AUTO_TEST_CASE(multiway_merge_beyond_2_pow_31) {
  std::vector<std::vector<std::int8_t>> runs;
  std::vector<thrust::device_vector<std::int8_t>> d_runs;
  std::vector<std::pair<const std::int8_t*, const std::int8_t*>> host, dev;
  std::int64_t n = 0;
  for (int k = 0; k < 5; ++k) {
    const std::int64_t len = k == 2 ? 0 : (std::int64_t(1) << 29) + (std::int64_t(1) << 19) + k;
    runs.push_back(sorted_bytes(len, 10 + static_cast<std::uint64_t>(k)));
    n += len;
  }
  BOOST_REQUIRE_GT(n, std::int64_t(1) << 31);
  auto t0 = std::chrono::steady_clock::now();
  d_runs.reserve(runs.size());  // (pointers into them are kept: no reallocation)
  for (const auto& r : runs) {
    d_runs.emplace_back(r.begin(), r.end());
    const std::int8_t* p = thrust::raw_pointer_cast(d_runs.back().data());
    dev.push_back({p, p + r.size()});
    host.push_back({r.data(), r.data() + r.size()});
  }
  thrust::device_vector<std::int8_t> dout(n, 0);
  lm::multiway_merge(lm::cuda::par, dev.begin(), dev.end(), dout.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = cuda_test::to_host(dout);
  BOOST_TEST_MESSAGE("GPU multiway_merge of " << n << " keys and copies: " << seconds_since(t0) << " s");
  std::vector<std::int8_t> expected(static_cast<std::size_t>(n));
  lm::multiway_merge(lm::serial, host.begin(), host.end(), expected.begin());
  BOOST_CHECK(std::memcmp(got.data(), expected.data(), expected.size()) == 0);
}

// merge_sort beyond 2^31 keys: 1-byte keys, keys only and by key. The expected
// result comes from a stable counting sort on the host; by key, the values
// are each key's original position modulo 2^16 (checked as a sequence per key
// value, which a non-stable or 32-bit-indexed sort would get wrong).
BOOST_AUTO_TEST_CASE(merge_sort_beyond_2_pow_31) {
  const std::int64_t n = (std::int64_t(1) << 31) + (1 << 20) + 13;
  std::vector<std::int8_t> keys(static_cast<std::size_t>(n));
  std::mt19937_64 rng(5);
  for (auto& k : keys) k = static_cast<std::int8_t>(rng() >> 56);
  std::vector<std::int64_t> count(256, 0);
  for (auto k : keys) ++count[static_cast<std::uint8_t>(k) ^ 0x80];  // signed order

  auto t0 = std::chrono::steady_clock::now();
  {
    thrust::device_vector<std::int8_t> d(keys.begin(), keys.end());
    lm::merge_sort(lm::cuda::par, d.begin(), d.end());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    const auto got = cuda_test::to_host(d);
    BOOST_TEST_MESSAGE("GPU merge_sort of " << n << " keys and copies: " << seconds_since(t0) << " s");
    std::int64_t at = 0;
    bool ok = true;
    for (int b = 0; b < 256 && ok; ++b) {
      const auto value = static_cast<std::int8_t>(b ^ 0x80);
      for (std::int64_t i = 0; i < count[b]; ++i) ok &= got[static_cast<std::size_t>(at + i)] == value;
      at += count[b];
    }
    BOOST_CHECK_MESSAGE(ok, "merge_sort beyond 2^31: wrong keys");
  }
  t0 = std::chrono::steady_clock::now();
  {
    thrust::device_vector<std::int8_t> d(keys.begin(), keys.end());
    thrust::device_vector<std::uint16_t> v(static_cast<std::size_t>(n));
    thrust::sequence(v.begin(), v.end());  // position mod 2^16
    lm::merge_sort_by_key(lm::cuda::par, d.begin(), d.end(), v.begin());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    const auto got_keys = cuda_test::to_host(d);
    const auto got_vals = cuda_test::to_host(v);
    BOOST_TEST_MESSAGE("GPU merge_sort_by_key of " << n << " pairs and copies: " << seconds_since(t0) << " s");
    std::vector<std::int64_t> start(256, 0);
    for (int b = 1; b < 256; ++b) start[b] = start[b - 1] + count[b - 1];
    bool ok = true;
    for (std::int64_t i = 0; i < n && ok; ++i) {  // stable: each key's positions in input order
      const int b = static_cast<std::uint8_t>(keys[static_cast<std::size_t>(i)]) ^ 0x80;
      const std::int64_t at = start[b]++;
      ok &= got_keys[static_cast<std::size_t>(at)] == keys[static_cast<std::size_t>(i)] &&
            got_vals[static_cast<std::size_t>(at)] == static_cast<std::uint16_t>(i);
    }
    BOOST_CHECK_MESSAGE(ok, "merge_sort_by_key beyond 2^31: wrong keys or values");
  }
}

// ---------------------------------------------------------------------------
// sorted_search and sorted_equality_count beyond 2^31: a uint8 haystack of
// 2^31 + 2^20 + 3 elements in runs of equal keys, one of them 2^31 + 7 long,
// built on the device with cudaMemset (nothing copied from the host). Every
// bound, match and count follows from the run lengths, so the expectations are
// arithmetic; outputs are checked on the device, run by run.

namespace {

// Sorted keys in runs on the device: run k is len[k] copies of value[k].
struct device_runs {
  std::vector<std::int64_t> len;
  std::vector<int> value;
  std::vector<std::int64_t> start;  // start[k]: position of run k; start.back(): the size
  std::uint8_t* data = nullptr;

  device_runs(std::vector<std::int64_t> lengths, std::vector<int> values) : len(std::move(lengths)), value(std::move(values)) {
    start.push_back(0);
    for (auto l : len) start.push_back(start.back() + l);
    BOOST_REQUIRE_EQUAL(cudaMalloc(&data, static_cast<std::size_t>(size())), cudaSuccess);
    for (std::size_t k = 0; k < len.size(); ++k) {
      BOOST_REQUIRE_EQUAL(cudaMemset(data + start[k], value[k], static_cast<std::size_t>(len[k])), cudaSuccess);
    }
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  }
  ~device_runs() { cudaFree(data); }
  device_runs(const device_runs&) = delete;
  device_runs& operator=(const device_runs&) = delete;
  std::int64_t size() const { return start.back(); }
  // Elements below x (lower bound) and not above x (upper bound); the length of x's run.
  std::int64_t lower(int x) const {
    std::int64_t n = 0;
    for (std::size_t k = 0; k < len.size(); ++k) n += value[k] < x ? len[k] : 0;
    return n;
  }
  std::int64_t upper(int x) const {
    std::int64_t n = 0;
    for (std::size_t k = 0; k < len.size(); ++k) n += value[k] <= x ? len[k] : 0;
    return n;
  }
  std::int64_t equal(int x) const { return upper(x) - lower(x); }
};

// Elements of p[0, n) that differ from `expected`, counted on the device.
template <class T>
__global__ void count_differing(const T* p, std::int64_t n, T expected, unsigned long long* differing) {
  unsigned long long mine = 0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    mine += p[i] != expected;
  }
  if (mine != 0) atomicAdd(differing, mine);
}

template <class T>
std::uint64_t differing(const T* p, std::int64_t n, T expected) {
  unsigned long long* d = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMalloc(&d, sizeof *d), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMemset(d, 0, sizeof *d), cudaSuccess);
  if (n > 0) count_differing<<<1024, 256>>>(p, n, expected, d);
  BOOST_REQUIRE_EQUAL(cudaGetLastError(), cudaSuccess);
  unsigned long long h = 0;
  BOOST_REQUIRE_EQUAL(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d);
  return h;
}

// Every run of `runs` holds the same expected output, f(value): checks out[]
// run by run on the device.
template <class T, class F>
void check_per_run(const T* out, const device_runs& runs, F f, const char* what) {
  for (std::size_t k = 0; k < runs.len.size(); ++k) {
    const T expected = f(runs.value[k]);
    const auto bad = differing(out + runs.start[k], runs.len[k], expected);
    BOOST_CHECK_MESSAGE(bad == 0, what << ": run " << k << " (key " << runs.value[k] << ", " << runs.len[k]
                                       << " elements at " << runs.start[k] << "): " << bad
                                       << " outputs differ from " << static_cast<long long>(expected));
  }
}

template <class T>
T index_match(std::int64_t bound, bool match) {
  using U = std::make_unsigned_t<T>;
  const U flag = static_cast<U>(U(1) << (sizeof(T) * 8 - 1));
  return static_cast<T>(static_cast<U>(bound) | (match ? flag : U(0)));
}

// The haystack: keys 10, 20, ..., 160; the run of 20 is 2^31 + 7 long, the
// runs from 30 on all start beyond 2^31.
std::pair<std::vector<std::int64_t>, std::vector<int>> haystack_runs() {
  const std::int64_t nb = (std::int64_t(1) << 31) + (1 << 20) + 3;
  std::vector<std::int64_t> len = {1000, (std::int64_t(1) << 31) + 7};
  std::int64_t used = len[0] + len[1];
  for (int k = 2; k < 15; ++k) {
    len.push_back(1 + (k * 7919) % 60000);
    used += len.back();
  }
  len.push_back(nb - used);
  std::vector<int> values;
  for (int k = 0; k < 16; ++k) values.push_back(10 * (k + 1));
  return {len, values};
}

}  // namespace

// Few needles (the per-needle search) and many (the merge-path search, |A| >
// |B| / 64), lower and upper bounds above 2^31 into 64-bit outputs, and the
// long side's results written beyond position 2^31.
BOOST_AUTO_TEST_CASE(sorted_search_beyond_2_pow_31) {
  using lm::bounds;
  using lm::search_type;
  auto [hay_len, hay_values] = haystack_runs();
  const device_runs hay(hay_len, hay_values);
  const std::int64_t nb = hay.size();
  BOOST_REQUIRE_GT(nb, std::int64_t(1) << 31);
  BOOST_REQUIRE_GT(hay.start[2], std::int64_t(1) << 31);
  const std::uint8_t* b = hay.data;
  auto t0 = std::chrono::steady_clock::now();

  // Few needles: present keys, absent keys, duplicates, below and above all.
  const std::vector<std::uint8_t> needles = {0, 5, 10, 10, 15, 20, 20, 20, 25, 30, 31, 100, 155, 160, 161, 200, 255};
  thrust::device_vector<std::uint8_t> dn(needles.begin(), needles.end());
  const std::int64_t nn = static_cast<std::int64_t>(needles.size());
  std::int64_t expected_matches = 0;
  for (auto x : needles) expected_matches += hay.equal(x) > 0;
  {
    thrust::device_vector<long long> lo(needles.size(), -1);
    thrust::device_vector<unsigned long long> hi(needles.size(), 0);
    const auto m1 = lm::sorted_search<bounds::lower, search_type::index_match, search_type::none>(
        lm::cuda::par, dn.begin(), dn.end(), b, b + nb, lo.begin(), nullptr);
    const auto m2 = lm::sorted_search<bounds::upper, search_type::index, search_type::none>(
        lm::cuda::par, dn.begin(), dn.end(), b, b + nb, hi.begin(), nullptr);
    const auto hlo = cuda_test::to_host(lo);
    const auto hhi = cuda_test::to_host(hi);
    for (std::int64_t i = 0; i < nn; ++i) {
      const int x = needles[static_cast<std::size_t>(i)];
      BOOST_CHECK_EQUAL(hlo[static_cast<std::size_t>(i)], index_match<long long>(hay.lower(x), hay.equal(x) > 0));
      BOOST_CHECK_EQUAL(hhi[static_cast<std::size_t>(i)], static_cast<unsigned long long>(hay.upper(x)));
    }
    BOOST_CHECK_EQUAL(m1.a, expected_matches);
    BOOST_CHECK_EQUAL(m1.b, 0);
    BOOST_CHECK_EQUAL(m2.a, 0);
  }

  // Many needles: keys 0, 5, 10, ..., 160 without those of the form 15 + 15j
  // (so some runs of B find no match), in runs of varied lengths; 2^25 + 2^24
  // + 1 of them, more than |B| / 64.
  std::vector<std::int64_t> a_len;
  std::vector<int> a_values;
  const std::int64_t na = (std::int64_t(1) << 25) + (std::int64_t(1) << 24) + 1;
  for (int v = 0; v <= 160; v += 5) {
    if (v % 15 == 0 && v > 0) continue;
    a_values.push_back(v);
    a_len.push_back(1 + (static_cast<std::int64_t>(v) * 104729) % 1500000);
  }
  std::int64_t a_used = 0;
  for (auto l : a_len) a_used += l;
  BOOST_REQUIRE_LT(a_used, na);
  a_len.back() += na - a_used;
  const device_runs many(a_len, a_values);
  BOOST_REQUIRE_EQUAL(many.size(), na);
  BOOST_REQUIRE_GT(na * 64, nb);
  std::int64_t a_matches = 0, b_matches = 0;
  for (std::size_t k = 0; k < many.len.size(); ++k) a_matches += hay.equal(many.value[k]) > 0 ? many.len[k] : 0;
  for (std::size_t k = 0; k < hay.len.size(); ++k) b_matches += many.equal(hay.value[k]) > 0 ? hay.len[k] : 0;
  BOOST_REQUIRE_GT(b_matches, std::int64_t(1) << 31);  // the run of 20 matches

  long long* a_out = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMalloc(&a_out, static_cast<std::size_t>(na) * sizeof(long long)), cudaSuccess);
  {
    // bounds::lower: A's lower bound into B (int64, bit 63), B's match flag (uint8).
    std::uint8_t* b_out = nullptr;
    BOOST_REQUIRE_EQUAL(cudaMalloc(&b_out, static_cast<std::size_t>(nb)), cudaSuccess);
    BOOST_REQUIRE_EQUAL(cudaMemset(b_out, 0x5a, static_cast<std::size_t>(nb)), cudaSuccess);
    const auto m = lm::sorted_search<bounds::lower, search_type::index_match, search_type::match>(
        lm::cuda::par, many.data, many.data + na, b, b + nb, a_out, b_out);
    BOOST_CHECK_EQUAL(m.a, a_matches);
    BOOST_CHECK_EQUAL(m.b, b_matches);
    check_per_run(a_out, many, [&](int x) { return index_match<long long>(hay.lower(x), hay.equal(x) > 0); },
                  "lower, A's index_match");
    check_per_run(b_out, hay, [&](int x) { return static_cast<std::uint8_t>(many.equal(x) > 0 ? 1 : 0); },
                  "lower, B's match");
    // The checker itself sees a wrong value in every element of the long run.
    BOOST_CHECK_EQUAL(differing(b_out + hay.start[1], hay.len[1], std::uint8_t{0}),
                      static_cast<std::uint64_t>(hay.len[1]));
    cudaFree(b_out);
  }
  {
    // bounds::upper: A's upper bound into B (int64), B's lower bound into A
    // with the match flag (uint32, bit 31).
    std::uint32_t* b_out = nullptr;
    BOOST_REQUIRE_EQUAL(cudaMalloc(&b_out, static_cast<std::size_t>(nb) * sizeof(std::uint32_t)), cudaSuccess);
    const auto m = lm::sorted_search<bounds::upper, search_type::index, search_type::index_match>(
        lm::cuda::par, many.data, many.data + na, b, b + nb, a_out, b_out);
    BOOST_CHECK_EQUAL(m.a, 0);
    BOOST_CHECK_EQUAL(m.b, b_matches);
    check_per_run(a_out, many, [&](int x) { return static_cast<long long>(hay.upper(x)); }, "upper, A's index");
    check_per_run(b_out, hay, [&](int x) { return index_match<std::uint32_t>(many.lower(x), many.equal(x) > 0); },
                  "upper, B's index_match");
    cudaFree(b_out);
  }
  {
    // One-sided with the long side writing: B's upper bounds into A (merge
    // path, since A is not 64 times shorter), lower bounds with bounds::upper.
    std::uint32_t* b_out = nullptr;
    BOOST_REQUIRE_EQUAL(cudaMalloc(&b_out, static_cast<std::size_t>(nb) * sizeof(std::uint32_t)), cudaSuccess);
    lm::sorted_search<bounds::lower, search_type::none, search_type::index>(lm::cuda::par, many.data, many.data + na,
                                                                            b, b + nb, nullptr, b_out);
    check_per_run(b_out, hay, [&](int x) { return static_cast<std::uint32_t>(many.upper(x)); }, "lower, B's index alone");
    cudaFree(b_out);
  }
  {
    // The long side as A and the few needles as B, B alone writing (the
    // per-needle search, needles' upper bounds for bounds::lower).
    thrust::device_vector<long long> hi(needles.size(), -1), lo(needles.size(), -1);
    lm::sorted_search<bounds::lower, search_type::none, search_type::index>(lm::cuda::par, b, b + nb, dn.begin(),
                                                                            dn.end(), nullptr, hi.begin());
    const auto m = lm::sorted_search<bounds::upper, search_type::none, search_type::index_match>(
        lm::cuda::par, b, b + nb, dn.begin(), dn.end(), nullptr, lo.begin());
    const auto hhi = cuda_test::to_host(hi);
    const auto hlo = cuda_test::to_host(lo);
    for (std::int64_t i = 0; i < nn; ++i) {
      const int x = needles[static_cast<std::size_t>(i)];
      BOOST_CHECK_EQUAL(hhi[static_cast<std::size_t>(i)], hay.upper(x));
      BOOST_CHECK_EQUAL(hlo[static_cast<std::size_t>(i)], index_match<long long>(hay.lower(x), hay.equal(x) > 0));
    }
    BOOST_CHECK_EQUAL(m.a, 0);
    BOOST_CHECK_EQUAL(m.b, expected_matches);
  }

  // sorted_equality_count: the run of 20 is counted in full (> 2^31), by the
  // per-needle search (few needles) and the merge-path search (many).
  {
    thrust::device_vector<long long> counts(needles.size(), -1);
    lm::sorted_equality_count(lm::cuda::par, dn.begin(), dn.end(), b, b + nb, counts.begin());
    const auto h = cuda_test::to_host(counts);
    for (std::int64_t i = 0; i < nn; ++i) {
      BOOST_CHECK_EQUAL(h[static_cast<std::size_t>(i)], hay.equal(needles[static_cast<std::size_t>(i)]));
    }
    BOOST_CHECK_GT(h[5], static_cast<long long>(std::int64_t(1) << 31));  // needle 20
  }
  lm::sorted_equality_count(lm::cuda::par, many.data, many.data + na, b, b + nb, a_out);
  check_per_run(a_out, many, [&](int x) { return static_cast<long long>(hay.equal(x)); }, "sorted_equality_count");
  // 32-bit counts cannot hold |B| here: refused up front.
  thrust::device_vector<int> small(needles.size());
  BOOST_CHECK_THROW(lm::sorted_equality_count(lm::cuda::par, dn.begin(), dn.end(), b, b + nb, small.begin()),
                    std::invalid_argument);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(a_out);
  BOOST_TEST_MESSAGE("sorted_search and sorted_equality_count beyond 2^31, with the checks: " << seconds_since(t0) << " s");
}

// The interpolating per-needle search beyond 2^31: a counting haystack
// 0, 1, ..., 2^31 + 999 (no memory; its keys are spread evenly, so every
// guess is used) and 2^16 sorted needles over it and past both ends, whose
// bounds are known: lower = x clamped to [0, |B|], upper = x + 1 clamped.
BOOST_AUTO_TEST_CASE(interpolating_search_beyond_2_pow_31) {
  using lm::bounds;
  using lm::search_type;
  const long long nb = (1LL << 31) + 1000;
  std::mt19937_64 rng(31);
  std::vector<long long> needles(std::size_t(1) << 16);
  for (auto& x : needles) x = static_cast<long long>(rng() % static_cast<std::uint64_t>(nb + 20)) - 10;
  needles.back() = nb - 1;  // the last key
  std::sort(needles.begin(), needles.end());
  thrust::device_vector<long long> dn(needles.begin(), needles.end());
  thrust::device_vector<long long> lo(needles.size(), -1), hi(needles.size(), -1);
  const thrust::counting_iterator<long long> b(0);
  const auto m = lm::sorted_search<bounds::lower, search_type::index_match, search_type::none>(
      lm::cuda::par, dn.begin(), dn.end(), b, b + nb, lo.begin(), nullptr);
  lm::sorted_search<bounds::upper, search_type::index, search_type::none>(lm::cuda::par, dn.begin(), dn.end(), b,
                                                                          b + nb, hi.begin(), nullptr);
  const auto hlo = cuda_test::to_host(lo);
  const auto hhi = cuda_test::to_host(hi);
  auto clamp = [&](long long v) { return v < 0 ? 0 : v > nb ? nb : v; };
  long long matches = 0, wrong_lower = 0, wrong_upper = 0;
  for (std::size_t i = 0; i < needles.size(); ++i) {
    const long long x = needles[i];
    const bool match = x >= 0 && x < nb;
    matches += match;
    wrong_lower += hlo[i] != index_match<long long>(clamp(x), match);
    wrong_upper += hhi[i] != clamp(x + 1);
  }
  BOOST_TEST(wrong_lower == 0, wrong_lower << " lower bounds wrong");
  BOOST_TEST(wrong_upper == 0, wrong_upper << " upper bounds wrong");
  BOOST_CHECK_EQUAL(m.a, matches);
  BOOST_CHECK_GT(hlo[needles.size() - 1] & std::numeric_limits<long long>::max(), 1LL << 31);  // the flag masked off
}
