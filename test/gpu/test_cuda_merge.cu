// CUDA merge and merge_by_key against the serial backend (itself checked
// against std::merge here too): every key type, sizes at every tile boundary,
// unbalanced inputs, stability, comparators, launch boxes, iterators,
// policies, streams and allocators.
#define BOOST_TEST_MODULE cuda_merge
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <thrust/copy.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/sequence.h>

#include "cuda_test_support.cuh"
#include "test_support.hpp"

namespace lm = libmerge;
using namespace test_support;
using cuda_test::counting_allocator;
using cuda_test::input_keys_only_less;
using cuda_test::poison;
using cuda_test::quick;
using cuda_test::stream_gate;
using cuda_test::to_device;
using cuda_test::to_host;
using test_support::check_same;

namespace {

std::vector<long long> sizes_for(long long nv) {
  if (quick()) return {1, 3, nv - 1, nv, nv + 1, 2 * nv + 1};
  return cuda_test::tile_boundary_sizes(nv);
}

// Ways to split n outputs between A and B: balanced, one side empty, lopsided
// both ways, and a random split.
std::vector<std::pair<long long, long long>> splits(long long n, std::mt19937_64& rng) {
  std::vector<std::pair<long long, long long>> s = {{n / 2, n - n / 2}, {0, n}, {n, 0}};
  if (!quick()) {
    s.push_back({n - n / 16, n / 16});
    s.push_back({n / 16, n - n / 16});
    const long long r = static_cast<long long>(rng() % static_cast<std::uint64_t>(n + 1));
    s.push_back({r, n - r});
  }
  return s;
}

template <class T>
std::string describe(const char* algo, long long na, long long nb, distribution d, const char* comp) {
  std::ostringstream os;
  os << algo << "<" << sizeof(T) << "-byte key> na=" << na << " nb=" << nb << " " << name(d) << " " << comp;
  return os.str();
}

// The outputs start poisoned: once, with a value no generator produces; for
// 1-byte keys, where every value is a possible key, twice with different
// values, so that a position left unwritten cannot match both times.
template <class T>
std::vector<T> poisons() {
  if constexpr (sizeof(T) == 1) {
    return {static_cast<T>(0x5a), static_cast<T>(0xa5)};
  } else {
    return {poison<T>()};
  }
}

// One merge on the device with `policy`, against lm::serial on the host.
template <class T, class Comp, class Policy>
void check_merge(const Policy& policy, const std::vector<T>& a, const std::vector<T>& b, Comp comp,
                 const std::string& what) {
  std::vector<T> expected(a.size() + b.size());
  lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected.begin(), comp);
  auto da = to_device(a), db = to_device(b);
  for (const T& fill : poisons<T>()) {
    thrust::device_vector<T> out(a.size() + b.size(), fill);
    auto end = lm::merge(policy, da.begin(), da.end(), db.begin(), db.end(), out.begin(), comp);
    BOOST_CHECK_MESSAGE(end == out.end(), what << ": returned end");
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(out), expected, what);
  }
}

// merge_by_key: values tag each element's origin (A: i, B: |A| + j).
template <class T, class V, class Comp, class Policy>
void check_merge_by_key(const Policy& policy, const std::vector<T>& a, const std::vector<T>& b, Comp comp,
                        const std::string& what) {
  std::vector<V> av(a.size()), bv(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) av[i] = static_cast<V>(i);
  for (std::size_t i = 0; i < b.size(); ++i) bv[i] = static_cast<V>(a.size() + i);
  std::vector<T> ek(a.size() + b.size());
  std::vector<V> ev(a.size() + b.size());
  lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), ek.begin(),
                   ev.begin(), comp);
  auto da = to_device(a), db = to_device(b);
  auto dav = to_device(av), dbv = to_device(bv);
  for (const T& fill : poisons<T>()) {
    thrust::device_vector<T> keys(a.size() + b.size(), fill);
    thrust::device_vector<V> vals(a.size() + b.size(), static_cast<V>(-1));
    auto ends = lm::merge_by_key(policy, da.begin(), da.end(), db.begin(), db.end(), dav.begin(), dbv.begin(),
                                 keys.begin(), vals.begin(), comp);
    BOOST_CHECK_MESSAGE(ends.first == keys.end() && ends.second == vals.end(), what << ": returned ends");
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(keys), ek, what + " (keys)");
    check_same(to_host(vals), ev, what + " (values)");
  }
}

template <class T, class Comp>
std::pair<std::vector<T>, std::vector<T>> inputs(long long na, long long nb, distribution d, std::uint64_t seed,
                                                 Comp comp) {
  // all_equal: both sides hold the same key, so every tie crosses A and B.
  if (d == distribution::all_equal) {
    auto a = generate_sorted<T>(na, d, seed, comp);
    std::vector<T> b(static_cast<std::size_t>(nb), generate<T>(1, d, seed, comp).at(0));
    if constexpr (std::is_same_v<T, record>) {
      for (std::size_t i = 0; i < b.size(); ++i) b[i].tag = static_cast<std::int32_t>(1000000 + i);
    }
    return {a, b};
  }
  return {generate_sorted<T>(na, d, seed, comp), generate_sorted<T>(nb, d, seed + 1, comp)};
}

}  // namespace

// The serial oracle itself against std::merge, on the kinds of input used below.
BOOST_AUTO_TEST_CASE_TEMPLATE(serial_oracle_matches_std_merge, T, key_types) {
  for (distribution d : {distribution::random, distribution::few_distinct, distribution::all_equal}) {
    auto [a, b] = inputs<T>(1000, 777, d, 5, lm::less<>());
    std::vector<T> got(a.size() + b.size());
    lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), got.begin());
    check_same(got, reference_merge(a, b, lm::less<>()), std::string("serial vs std::merge ") + name(d));
  }
}

// merge of every key type, at every tile boundary of the tuned launch box
// (the line's small tiles: every size here is below the switch).
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_keys_tuned_box, T, key_types) {
  std::mt19937_64 rng(42);
  const long long nv = cuda_test::tuned_merge_nv<T>();
  BOOST_TEST_MESSAGE("tuned nv for " << sizeof(T) << "-byte keys: " << nv);
  for (long long n : sizes_for(nv)) {
    for (auto [na, nb] : splits(n, rng)) {
      for (distribution d : {distribution::random, distribution::few_distinct, distribution::all_equal}) {
        auto [a, b] = inputs<T>(na, nb, d, rng(), lm::less<>());
        check_merge(lm::cuda::par, a, b, lm::less<>(), describe<T>("merge", na, nb, d, "less"));
      }
      auto [a, b] = inputs<T>(na, nb, distribution::random, rng(), lm::greater<>());
      check_merge(lm::cuda::par, a, b, lm::greater<>(), describe<T>("merge", na, nb, distribution::random, "greater"));
    }
  }
}

// The tuned line's large tiles, used from 2^small_log2 elements on: the last
// size below the switch, and a last tile full and one of one element at the
// first large-tile multiple past it (int32 keys; int64 keys and int32 pairs
// the last only: each size is 2^24 elements), against the serial backend.
template <class T, class V>
void check_large_tiles(std::uint64_t seed, bool all_sizes) {
  std::mt19937_64 rng(seed);
  const long long from = cuda_test::tuned_merge_large_from<T, V>();
  const long long nv = cuda_test::tuned_merge_nv<T, V>(from);
  const long long small_nv = cuda_test::tuned_merge_nv<T, V>(from - 1);
  BOOST_TEST_MESSAGE("large tiles of " << nv << " from n = " << from << ", small tiles of " << small_nv);
  const long long m = (from + nv - 1) / nv * nv;
  const std::vector<long long> sizes = all_sizes ? std::vector<long long>{from - 1, m, m + 1} : std::vector<long long>{m + 1};
  for (long long n : sizes) {
    const long long na = n / 2 + static_cast<long long>(rng() % 1000), nb = n - na;
    auto [a, b] = inputs<T>(na, nb, distribution::random, rng(), lm::less<>());
    if constexpr (std::is_void_v<V>) {
      check_merge(lm::cuda::par, a, b, lm::less<>(), describe<T>("merge (large tiles)", na, nb,
                                                                  distribution::random, "less"));
    } else {
      check_merge_by_key<T, V>(lm::cuda::par, a, b, lm::less<>(),
                               describe<T>("merge_by_key (large tiles)", na, nb, distribution::random, "less"));
    }
  }
}

BOOST_AUTO_TEST_CASE(merge_large_tiles_from_the_switch_size) {
  if (cuda_test::quick()) return;  // 2^24 elements under compute-sanitizer: the small sizes cover the kernels
  check_large_tiles<std::int32_t, void>(45, true);
  check_large_tiles<std::int64_t, void>(46, false);
  check_large_tiles<std::int32_t, std::int32_t>(47, false);
}

// Small merges' tiles find their own ends (merge_kernel, SelfEnds): all of
// them up to self_ends_waves_all waves of CTAs, and above that the first
// self_ends_waves_first waves while the partition kernel finds the rest
// (from a first partition on: a warp each up to warp_partitions_max, a thread
// each at the last size below the large tiles). The sizes at both edges (a
// last tile full, and of one element), with ties across tiles (few_distinct)
// and without, against the serial backend. Sizes the small tiles do not
// take are left out (a line without small tiles takes none).
template <class T, class V>
void check_self_ends(std::uint64_t seed, bool largest) {
  namespace cb = internals::cuda;
  std::mt19937_64 rng(seed);
  const long long nv = cuda_test::tuned_merge_nv<T, V>();
  const long long wave = cuda_test::tuned_merge_wave<T, V>();
  const long long large_from = cuda_test::tuned_merge_large_from<T, V>();
  const long long all = cb::entry_of(cb::current_device("test")).merge.self_ends_waves_all * wave * nv;  // the largest merge with no partition kernel
  BOOST_TEST_MESSAGE("small tiles of " << nv << ", a wave of " << wave << " CTAs, large tiles from " << large_from);
  std::vector<long long> sizes = {all - nv + 1, all, all + 1, all + 3 * nv + 7};
  if (largest) sizes.push_back(large_from - 1);
  int taken = 0;
  for (long long n : sizes) {
    if (n < 1 || n >= large_from) continue;
    ++taken;
    for (distribution d : {distribution::random, distribution::few_distinct}) {
      const long long na = n / 2 + static_cast<long long>(rng() % 1000) % (n / 2 + 1), nb = n - na;
      auto [a, b] = inputs<T>(na, nb, d, rng(), lm::less<>());
      if constexpr (std::is_void_v<V>) {
        check_merge(lm::cuda::par, a, b, lm::less<>(), describe<T>("merge (tiles find their ends)", na, nb, d, "less"));
      } else {
        check_merge_by_key<T, V>(lm::cuda::par, a, b, lm::less<>(),
                                 describe<T>("merge_by_key (tiles find their ends)", na, nb, d, "less"));
      }
    }
  }
  BOOST_WARN_MESSAGE(taken > 0, "no size of this test takes the small tiles on this device");
}

BOOST_AUTO_TEST_CASE(merge_tiles_find_their_own_ends) {
  check_self_ends<std::int32_t, void>(48, !cuda_test::quick());
  if (cuda_test::quick()) return;  // under compute-sanitizer: int32 keys take both paths
  check_self_ends<std::int64_t, void>(49, true);
  check_self_ends<std::int32_t, std::int32_t>(50, true);
}

// merge_by_key of every key type with int32 values (origin tags).
BOOST_AUTO_TEST_CASE_TEMPLATE(merge_by_key_tuned_box, T, key_types) {
  std::mt19937_64 rng(43);
  const long long nv = cuda_test::tuned_merge_nv<T, std::int32_t>();
  for (long long n : sizes_for(nv)) {
    for (auto [na, nb] : splits(n, rng)) {
      for (distribution d : {distribution::random, distribution::few_distinct, distribution::all_equal}) {
        auto [a, b] = inputs<T>(na, nb, d, rng(), lm::less<>());
        check_merge_by_key<T, std::int32_t>(lm::cuda::par, a, b, lm::less<>(),
                                            describe<T>("merge_by_key", na, nb, d, "less"));
      }
      auto [a, b] = inputs<T>(na, nb, distribution::few_distinct, rng(), lm::greater<>());
      check_merge_by_key<T, std::int32_t>(lm::cuda::par, a, b, lm::greater<>(),
                                          describe<T>("merge_by_key", na, nb, distribution::few_distinct, "greater"));
    }
  }
}

// The struct key with its own comparator, with values too (double), at the
// tile boundaries of both tuned boxes.
BOOST_AUTO_TEST_CASE(merge_struct_key_custom_comparator) {
  std::mt19937_64 rng(44);
  const long long nk = cuda_test::tuned_merge_nv<record>(), np = cuda_test::tuned_merge_nv<record, double>();
  for (long long n : {1LL, nk - 1, nk, nk + 1, np - 1, np, np + 1, 100000LL}) {
    for (auto [na, nb] : splits(n, rng)) {
      for (distribution d : {distribution::few_distinct, distribution::all_equal, distribution::random}) {
        auto [a, b] = inputs<record>(na, nb, d, rng(), record_less());
        check_merge(lm::cuda::par, a, b, record_less(), describe<record>("merge", na, nb, d, "record_less"));
        check_merge_by_key<record, double>(lm::cuda::par, a, b, record_less(),
                                           describe<record>("merge_by_key<double>", na, nb, d, "record_less"));
      }
    }
  }
}

// Callers' launch boxes: odd and tiny values per thread, one thread per value,
// and a box whose tile needs more than the default 48 KB of shared memory.
template <class Box>
void check_box(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto policy = lm::cuda::par.with(Box{});
  for (long long n : sizes_for(Box::nv)) {
    for (auto [na, nb] : splits(n, rng)) {
      for (distribution d : {distribution::random, distribution::all_equal}) {
        std::ostringstream what;
        what << "box nt=" << Box::nt << " vt=" << Box::vt << " ";
        auto [a, b] = inputs<std::int32_t>(na, nb, d, rng(), lm::less<>());
        check_merge(policy, a, b, lm::less<>(), what.str() + describe<int>("merge", na, nb, d, "less"));
        check_merge_by_key<std::int32_t, std::int32_t>(policy, a, b, lm::less<>(),
                                                       what.str() + describe<int>("merge_by_key", na, nb, d, "less"));
      }
    }
  }
}
BOOST_AUTO_TEST_CASE(merge_launch_box_64x3) { check_box<lm::launch_box<64, 3>>(50); }
BOOST_AUTO_TEST_CASE(merge_launch_box_32x1) { check_box<lm::launch_box<32, 1>>(51); }
BOOST_AUTO_TEST_CASE(merge_launch_box_128x9) { check_box<lm::launch_box<128, 9>>(52); }
BOOST_AUTO_TEST_CASE(merge_launch_box_512x13_large_shared_memory) { check_box<lm::launch_box<512, 13>>(53); }
// An even VT (bank conflicts, not errors) and a large one.
BOOST_AUTO_TEST_CASE(merge_launch_box_256x8) { check_box<lm::launch_box<256, 8>>(54); }
BOOST_AUTO_TEST_CASE(merge_launch_box_96x31) { check_box<lm::launch_box<96, 31>>(55); }

// Ranges at every offset in a 16-byte line. From sm_90 on, a keys-only
// merge of keys up to 4 bytes stages each tile by bulk copies of whole
// 16-byte lines, the elements before the first line and after the last
// copied by the threads (backends/cuda/cta_merge.cuh), so where a range
// starts in its line decides which of them copies what. Keys of 1, 2, 4, 8
// and 16 bytes (the last two, and merge_by_key, loaded through registers:
// the same offsets for them), each input and output 0 .. 16 / size - 1
// elements into its allocation, sizes from one element to several tiles,
// against lm::serial.
struct alignas(16) wide_key {
  long long key, tag;
  bool operator==(const wide_key& o) const { return key == o.key && tag == o.tag; }
  bool operator!=(const wide_key& o) const { return !(*this == o); }
};
std::ostream& operator<<(std::ostream& os, const wide_key& w) { return os << "{" << w.key << "," << w.tag << "}"; }
// Ordered by key alone: equal keys with different tags show stability.
__host__ __device__ bool operator<(const wide_key& x, const wide_key& y) { return x.key < y.key; }

template <class T>
thrust::device_vector<T> at_offset(const std::vector<T>& h, int offset) {
  thrust::device_vector<T> d(h.size() + 16 / sizeof(T));
  thrust::copy(h.begin(), h.end(), d.begin() + offset);
  return d;
}

template <class K, class V, class Comp, class Make>
void check_line_offsets(Comp comp, Make make, std::uint64_t seed) {
  constexpr int keys_a_line = static_cast<int>(16 / sizeof(K)), vals_a_line = static_cast<int>(16 / sizeof(V));
  std::mt19937_64 rng(seed);
  // Tile boundaries of both merges: keys only (the staged one) and by key.
  const long long nk = cuda_test::tuned_merge_nv<K>(), np = cuda_test::tuned_merge_nv<K, V>();
  for (long long n : {1LL, 2LL, 5LL, 17LL, 40LL, nk - 3, nk + 1, 3 * nk + 7, np - 3, np + 1, 3 * np + 7}) {
    for (int oa = 0; oa < keys_a_line; ++oa) {
      const int ob = static_cast<int>(rng() % keys_a_line), oo = static_cast<int>(rng() % keys_a_line);
      const int va = oa % vals_a_line, vb = static_cast<int>(rng() % vals_a_line);
      const long long na = static_cast<long long>(rng() % static_cast<std::uint64_t>(n + 1)), nb = n - na;
      std::vector<K> a(static_cast<std::size_t>(na)), b(static_cast<std::size_t>(nb));
      for (auto& x : a) x = make(rng);
      for (auto& x : b) x = make(rng);
      std::sort(a.begin(), a.end(), comp);
      std::sort(b.begin(), b.end(), comp);
      std::vector<V> av(a.size()), bv(b.size());
      for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<V>(i);
      for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<V>(na + static_cast<long long>(i));
      std::vector<K> ek(a.size() + b.size());
      std::vector<V> ev(ek.size());
      lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), ek.begin(),
                       ev.begin(), comp);
      std::ostringstream what;
      what << sizeof(K) << "-byte keys, " << sizeof(V) << "-byte values, na " << na << " nb " << nb
           << ", offsets (elements) a " << oa << " b " << ob << " out " << oo << ", values a " << va << " b " << vb;

      const auto da = at_offset(a, oa), db = at_offset(b, ob);
      const auto dav = at_offset(av, va), dbv = at_offset(bv, vb);
      const K* pa = thrust::raw_pointer_cast(da.data()) + oa;
      const K* pb = thrust::raw_pointer_cast(db.data()) + ob;
      const V* pav = thrust::raw_pointer_cast(dav.data()) + va;
      const V* pbv = thrust::raw_pointer_cast(dbv.data()) + vb;
      thrust::device_vector<K> keys(ek.size() + keys_a_line);
      thrust::device_vector<V> vals(ek.size() + vals_a_line);
      K* pk = thrust::raw_pointer_cast(keys.data()) + oo;
      V* pv = thrust::raw_pointer_cast(vals.data()) + oo % vals_a_line;

      lm::merge(lm::cuda::par, pa, pa + na, pb, pb + nb, pk, comp);
      BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<K> got(ek.size());
      thrust::copy(keys.begin() + oo, keys.begin() + oo + static_cast<long long>(ek.size()), got.begin());
      check_same(got, ek, "merge, " + what.str());

      lm::merge_by_key(lm::cuda::par, pa, pa + na, pb, pb + nb, pav, pbv, pk, pv, comp);
      BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<V> got_vals(ev.size());
      thrust::copy(keys.begin() + oo, keys.begin() + oo + static_cast<long long>(ek.size()), got.begin());
      thrust::copy(vals.begin() + oo % vals_a_line, vals.begin() + oo % vals_a_line + static_cast<long long>(ev.size()),
                   got_vals.begin());
      check_same(got, ek, "merge_by_key keys, " + what.str());
      check_same(got_vals, ev, "merge_by_key values, " + what.str());
    }
  }
}

BOOST_AUTO_TEST_CASE(merge_of_ranges_at_every_offset_in_a_line) {
  // Few distinct keys: ties across A and B at every offset.
  check_line_offsets<std::uint8_t, double>(lm::less<>(), [](auto& rng) { return std::uint8_t(rng() % 7); }, 60);
  check_line_offsets<std::int16_t, std::int64_t>(lm::greater<>(), [](auto& rng) { return std::int16_t(rng() % 1000); },
                                                61);
  check_line_offsets<std::int32_t, std::int16_t>(lm::less<>(), [](auto& rng) { return std::int32_t(rng() % 5000); },
                                                62);
  check_line_offsets<std::int64_t, std::uint8_t>(lm::less<>(), [](auto& rng) { return std::int64_t(rng()); }, 63);
  check_line_offsets<wide_key, std::int32_t>(
      lm::less<>(), [](auto& rng) { return wide_key{static_cast<long long>(rng() % 100), static_cast<long long>(rng())}; },
      64);
}

// A tile whose range of A is empty (every key of B below every key of A)
// still compares input keys only: where a side is exhausted the merge reads
// the staged pair's first element, which must be B's when A has none, with A
// and B at every offset in their 16-byte lines (keys-only int32 merges are
// staged by bulk copies on sm_90: the slot is in A's line, in B's first line,
// or B's first slot). Before each, a merge of a wave of tiles of other keys
// fills the shared memory of every CTA slot.
BOOST_AUTO_TEST_CASE(merge_with_an_empty_side_compares_input_keys_only) {
  const long long nv = cuda_test::tuned_merge_nv<std::int32_t>();
  const long long fill = cuda_test::tuned_merge_wave<std::int32_t>() * nv;
  thrust::device_vector<std::int32_t> other(static_cast<std::size_t>(fill), 1), other_out(other.size());
  thrust::device_vector<int> seen(1, 0);
  const long long na = 3 * nv + 5, nb = 2 * nv + 3;
  std::vector<std::int32_t> a(static_cast<std::size_t>(na)), b(static_cast<std::size_t>(nb));
  for (long long i = 0; i < nb; ++i) b[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(7000 + 7 * i);
  for (long long i = 0; i < na; ++i) a[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(7000 + 7 * (nb + i));
  std::vector<std::int32_t> want(b);
  want.insert(want.end(), a.begin(), a.end());
  for (int oa = 0; oa < 4; ++oa) {
    for (int ob = 0; ob < 4; ++ob) {
      BOOST_TEST_CONTEXT("A at element " << oa << ", B at element " << ob << " of its line") {
        thrust::device_vector<std::int32_t> da(static_cast<std::size_t>(na) + 4), db(static_cast<std::size_t>(nb) + 4),
            out(static_cast<std::size_t>(na + nb) + 4);
        thrust::copy(a.begin(), a.end(), da.begin() + oa);
        thrust::copy(b.begin(), b.end(), db.begin() + ob);
        const std::int32_t* pa = thrust::raw_pointer_cast(da.data()) + oa;
        const std::int32_t* pb = thrust::raw_pointer_cast(db.data()) + ob;
        std::int32_t* po = thrust::raw_pointer_cast(out.data()) + ob;
        lm::merge(lm::cuda::par, other.begin(), other.begin() + fill / 2, other.begin() + fill / 2, other.end(),
                  other_out.begin());
        lm::merge(lm::cuda::par, pa, pa + na, pb, pb + nb, po,
                  input_keys_only_less{thrust::raw_pointer_cast(seen.data())});
        BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
        std::vector<std::int32_t> got(static_cast<std::size_t>(na + nb));
        thrust::copy(out.begin() + ob, out.begin() + ob + na + nb, got.begin());
        check_same(got, want, "merge with B before A");
        BOOST_CHECK_EQUAL(static_cast<int>(seen[0]), 0);
      }
    }
  }
}

// Fancy iterators: counting and transform inputs, discard outputs, mixed
// input iterator types, device_ptr and raw pointers.
struct times_three {
  __host__ __device__ long long operator()(long long x) const { return 3 * x; }
};

BOOST_AUTO_TEST_CASE(merge_fancy_iterators) {
  const long long na = 100000, nb = 77777;
  thrust::counting_iterator<long long> a(0);  // 0, 1, 2, ...
  auto b = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), times_three{});  // 0, 3, 6, ...
  std::vector<long long> ha(na), hb(nb);
  for (long long i = 0; i < na; ++i) ha[i] = i;
  for (long long i = 0; i < nb; ++i) hb[i] = 3 * i;
  std::vector<long long> expected(na + nb);
  std::merge(ha.begin(), ha.end(), hb.begin(), hb.end(), expected.begin());

  thrust::device_vector<long long> out(na + nb, -1);
  lm::merge(lm::cuda::par, a, a + na, b, b + nb, out.begin());
  check_same(to_host(out), expected, "counting + transform inputs");

  // Values from counting iterators, keys thrown away: the values alone show the merge order.
  thrust::device_vector<long long> vals(na + nb, -1);
  auto ends = lm::merge_by_key(lm::cuda::par, a, a + na, b, b + nb, thrust::counting_iterator<long long>(0),
                               thrust::counting_iterator<long long>(na), thrust::make_discard_iterator(),
                               vals.begin());
  BOOST_CHECK(ends.second == vals.end());
  std::vector<long long> tags_a(na), tags_b(nb), expected_vals(na + nb);
  for (long long i = 0; i < na; ++i) tags_a[i] = i;
  for (long long i = 0; i < nb; ++i) tags_b[i] = na + i;
  lm::merge_by_key(lm::serial, ha.begin(), ha.end(), hb.begin(), hb.end(), tags_a.begin(), tags_b.begin(),
                   thrust::make_discard_iterator(), expected_vals.begin());
  check_same(to_host(vals), expected_vals, "counting values, discarded keys");

  // Raw device pointers and device_ptr, A and B of different iterator types.
  auto da = to_device(ha);
  thrust::device_vector<long long> db(hb.begin(), hb.end()), out2(na + nb, -1);
  long long* raw_a = thrust::raw_pointer_cast(da.data());
  lm::merge(lm::cuda::par, raw_a, raw_a + na, db.data(), db.data() + nb, thrust::raw_pointer_cast(out2.data()));
  check_same(to_host(out2), expected, "raw pointer + device_ptr");
}

// Thrust's policies select the CUDA backend: drop-in for thrust::merge.
BOOST_AUTO_TEST_CASE(merge_with_thrust_policies) {
  std::mt19937_64 rng(60);
  cudaStream_t s;
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  for (long long n : {5000LL, 300001LL}) {
    auto [a, b] = inputs<float>(n / 3, n - n / 3, distribution::random, rng(), lm::less<>());
    check_merge(thrust::device, a, b, lm::less<>(), "thrust::device");
    check_merge(thrust::cuda::par.on(s), a, b, lm::less<>(), "thrust::cuda::par.on(s)");
    check_merge(lm::cuda::par.on(s), a, b, lm::less<>(), "lm::cuda::par.on(s)");
    check_merge_by_key<float, int>(thrust::cuda::par.on(s), a, b, lm::less<>(), "thrust::cuda::par.on(s) by key");
  }
  BOOST_CHECK_EQUAL(cudaStreamDestroy(s), cudaSuccess);
}

// Temporary storage comes from the caller's allocator when the policy has one,
// and every allocation is given back. A merge in a caller's box partitions
// first, into temporary storage; a small merge in the tuned tiles, whose
// tiles all find their own ends (merge_kernel), needs none.
BOOST_AUTO_TEST_CASE(merge_uses_the_policys_allocator) {
  std::atomic<int> live{0}, calls{0};
  const auto policy = lm::cuda::par.with_allocator(counting_allocator{&live, &calls});
  std::mt19937_64 rng(61);
  auto [a, b] = inputs<int>(40000, 50000, distribution::random, rng(), lm::less<>());
  check_merge(policy, a, b, lm::less<>(), "counting allocator");
  check_merge_by_key<int, int>(policy, a, b, lm::less<>(), "counting allocator by key");
  // (A line without small tiles partitions every merge.)
  const bool small =
      90000 < cuda_test::tuned_merge_large_from<int>() && 90000 < cuda_test::tuned_merge_large_from<int, int>();
  BOOST_CHECK_EQUAL(calls.load(), small ? 0 : 2);
  const auto boxed = policy.with(lm::launch_box<128, 5>{});
  check_merge(boxed, a, b, lm::less<>(), "counting allocator, caller's box");
  check_merge_by_key<int, int>(boxed, a, b, lm::less<>(), "counting allocator by key, caller's box");
  BOOST_CHECK_EQUAL(calls.load(), small ? 2 : 4);
  BOOST_CHECK_EQUAL(live.load(), 0);
}

// No device-wide synchronization and no device-to-host copy inside merge: the
// call returns while its stream is still held by an earlier kernel, and a
// merge on a second stream completes while the first stream is held.
BOOST_AUTO_TEST_CASE(merge_is_asynchronous_and_streams_overlap) {
  std::mt19937_64 rng(62);
  auto [a, b] = inputs<int>(300000, 200000, distribution::random, rng(), lm::less<>());
  auto da = to_device(a), db = to_device(b);
  thrust::device_vector<int> out1(a.size() + b.size()), out2(a.size() + b.size());
  std::vector<int> expected(a.size() + b.size());
  lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), expected.begin());
  // Load every kernel used below first: CUDA's lazy module loading may
  // synchronize the context the first time a kernel is used, which would
  // wait for the held stream (that is the driver, not libmerge).
  lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), out1.begin());
  lm::merge_by_key(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), da.begin(), db.begin(), out2.begin(),
                   thrust::make_discard_iterator());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);

  cudaStream_t s1, s2;
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  thrust::fill(out1.begin(), out1.end(), -1);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  {
    stream_gate gate;
    gate.close(s1);
    lm::merge(lm::cuda::par.on(s1), da.begin(), da.end(), db.begin(), db.end(), out1.begin());
    const bool s1_held_after_call = cudaStreamQuery(s1) == cudaErrorNotReady;
    lm::merge_by_key(lm::cuda::par.on(s2), da.begin(), da.end(), db.begin(), db.end(), da.begin(), db.begin(),
                     out2.begin(), thrust::make_discard_iterator());
    const bool s2_done = cudaStreamSynchronize(s2) == cudaSuccess;
    const bool s1_still_held = cudaStreamQuery(s1) == cudaErrorNotReady;
    gate.open();
    BOOST_REQUIRE_EQUAL(cudaStreamSynchronize(s1), cudaSuccess);
    BOOST_CHECK_MESSAGE(s1_held_after_call, "lm::merge waited for its stream");
    BOOST_CHECK(s2_done);
    BOOST_CHECK_MESSAGE(s1_still_held, "the merge on stream 2 waited for stream 1");
    BOOST_CHECK(!gate.timed_out());
  }
  check_same(to_host(out1), expected, "merge behind a held stream");
  check_same(to_host(out2), expected, "merge_by_key on a second stream");
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// A merge's key type is A's: B's keys are converted before they are compared,
// in the partitions as in the tiles, so every launch box gives the serial
// backend's answer (ties between an int of A and a truncated double of B keep
// A first). A partition that compared raw values would split ties differently
// from the tile merge and the result would depend on the box.
template <class Policy>
void check_mixed_types(const Policy& policy, const char* what) {
  std::mt19937_64 rng(70);
  const long long n = 200000;
  std::vector<int> a(n / 2);
  std::vector<double> b(n - n / 2);
  for (auto& x : a) x = static_cast<int>(rng() % 64);
  for (auto& x : b) x = static_cast<double>(rng() % 128) / 2.0;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<long long> av(a.size()), bv(b.size()), ev(n);
  std::iota(av.begin(), av.end(), 0LL);
  std::iota(bv.begin(), bv.end(), static_cast<long long>(a.size()));
  std::vector<int> ek(n);
  lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), av.begin(), bv.begin(), ek.begin(), ev.begin());

  auto da = to_device(a);
  auto db = to_device(b);
  auto dav = to_device(av), dbv = to_device(bv);
  thrust::device_vector<int> keys(n, -1);
  thrust::device_vector<long long> vals(n, -1);
  lm::merge_by_key(policy, da.begin(), da.end(), db.begin(), db.end(), dav.begin(), dbv.begin(), keys.begin(),
                   vals.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(keys), ek, std::string(what) + ": keys");
  check_same(to_host(vals), ev, std::string(what) + ": values");
}

BOOST_AUTO_TEST_CASE(keys_of_b_are_converted_to_the_key_type_of_a) {
  check_mixed_types(lm::cuda::par, "tuned box");
  check_mixed_types(lm::cuda::par.with(lm::launch_box<64, 3>{}), "64x3");
  check_mixed_types(lm::cuda::par.with(lm::launch_box<128, 9>{}), "128x9");
}

// Elements far larger than a tuned tile expects: the tuned box gets fewer
// threads as well as one value each, and still merges correctly.
struct big_record {
  long long key;
  int payload[127];
};
struct big_less {
  __host__ __device__ bool operator()(const big_record& x, const big_record& y) const { return x.key < y.key; }
};
bool operator==(const big_record& x, const big_record& y) {
  return x.key == y.key && std::equal(x.payload, x.payload + 127, y.payload);
}
std::ostream& operator<<(std::ostream& os, const big_record& r) { return os << "{" << r.key << ", " << r.payload[0] << "}"; }

BOOST_AUTO_TEST_CASE(merge_of_half_kilobyte_elements) {
  std::mt19937_64 rng(71);
  for (long long n : {1LL, 63LL, 64LL, 65LL, 5000LL}) {
    std::vector<big_record> a(n / 2), b(n - n / 2);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = big_record{static_cast<long long>(rng() % 100), {static_cast<int>(i)}};
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = big_record{static_cast<long long>(rng() % 100), {-1 - static_cast<int>(i)}};
    std::stable_sort(a.begin(), a.end(), big_less());
    std::stable_sort(b.begin(), b.end(), big_less());
    check_merge(lm::cuda::par, a, b, big_less(), "516-byte records, n=" + std::to_string(n));
  }
}

// Thrust's synchronous policies wait for the stream, as thrust::merge does:
// the host may read managed memory right after the call.
BOOST_AUTO_TEST_CASE(thrust_device_policy_synchronizes) {
  const int na = 300000, nb = 200000;
  int *a = nullptr, *b = nullptr, *out = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMallocManaged(&a, na * sizeof(int)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMallocManaged(&b, nb * sizeof(int)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMallocManaged(&out, (na + nb) * sizeof(int)), cudaSuccess);
  for (int i = 0; i < na; ++i) a[i] = 2 * i;
  for (int i = 0; i < nb; ++i) b[i] = 3 * i;
  std::vector<int> expected(na + nb);
  std::merge(a, a + na, b, b + nb, expected.begin());
  lm::merge(thrust::device, a, a + na, b, b + nb, out);
  const std::vector<int> got(out, out + na + nb);  // no cudaDeviceSynchronize before this read
  check_same(got, expected, "thrust::device, read at once");
  cudaFree(a);
  cudaFree(b);
  cudaFree(out);
}

// No merge kernel spills registers at the tuned boxes of the sm_90 line, large
// tiles and small (issue: per-kernel register budgets).
BOOST_AUTO_TEST_CASE(no_merge_kernel_spills_at_the_tuned_boxes) {
  namespace cb = internals::cuda;
  auto for_types = [&](auto key, auto val, const char* what) {
    using K = decltype(key);
    using V = decltype(val);
    constexpr bool pairs = !std::is_same_v<V, char>;
    using NV = lm::detail::no_values;
    using G = std::conditional_t<pairs, cb::single_merge<const K*, const K*, const V*, const V*>,
                                 cb::single_merge<const K*, const K*, NV, NV>>;
    using VOut = std::conditional_t<pairs, V*, NV>;
    using table = cb::merge_table<K, std::conditional_t<pairs, V, void>>;
    constexpr int line = lm::tuning::entry_for(90);
    using boxes = decltype(table::template boxes<static_cast<std::size_t>(line)>());
    using large = typename boxes::large;
    using small = typename boxes::small;
    auto name = [&](auto box) {
      return std::string(what) + " " + std::to_string(decltype(box)::nt) + "x" + std::to_string(decltype(box)::vt);
    };
    // Small tiles find their own ends where they are few (merge_kernel's SelfEnds).
    cuda_test::check_no_local_memory(cb::merge_kernel<large, false, G, K*, VOut, lm::less<>>, name(large{}));
    cuda_test::check_no_local_memory(cb::merge_kernel<small, true, G, K*, VOut, lm::less<>>, name(small{}));
  };
  for_types(std::int32_t{}, char{}, "merge int32");
  for_types(std::int32_t{}, std::int32_t{}, "merge_by_key int32/int32");
  for_types(std::int64_t{}, char{}, "merge int64");
}

using cuda_test::bad_comp;

// merge and merge_by_key on unsorted inputs, with lm::less and with
// comparators that are no ordering (the CPU backends' test_arguments cases):
// each returns its documented end iterators, leaves no CUDA error, reads and
// writes nothing out of range (compute-sanitizer), and writes only elements
// of its inputs (keys of A or B, values of their value ranges).
BOOST_AUTO_TEST_CASE(unsorted_input_and_bad_comparators_merge) {
  std::mt19937_64 g(31);
  for (long long na : {0LL, 1LL, 17LL, 1000LL, 100003LL}) {
    for (long long nb : {0LL, 3LL, 70001LL}) {
      std::vector<std::int32_t> a(static_cast<std::size_t>(na)), b(static_cast<std::size_t>(nb));
      for (auto& x : a) x = static_cast<std::int32_t>(g() % 50);         // unsorted, few distinct
      for (auto& x : b) x = static_cast<std::int32_t>(g() % 100000) + 50;  // unsorted, apart from A's
      const long long n = na + nb;
      auto da = to_device(a), db = to_device(b);
      thrust::device_vector<std::int32_t> av(static_cast<std::size_t>(na)), bv(static_cast<std::size_t>(nb));
      thrust::sequence(av.begin(), av.end(), 0);
      thrust::sequence(bv.begin(), bv.end(), static_cast<std::int32_t>(na));
      thrust::device_vector<std::int32_t> out(static_cast<std::size_t>(n)), vals(static_cast<std::size_t>(n));
      std::vector<std::int32_t> keys_in(a);
      keys_in.insert(keys_in.end(), b.begin(), b.end());
      std::sort(keys_in.begin(), keys_in.end());
      for (int kind = -1; kind < 4; ++kind) {
        BOOST_TEST_CONTEXT("|A| " << na << " |B| " << nb << " comparator " << kind) {
          thrust::fill(out.begin(), out.end(), -1);
          thrust::fill(vals.begin(), vals.end(), -1);
          if (kind < 0) {
            auto end = lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), out.begin());
            BOOST_CHECK(end == out.end());
          } else {
            auto ends = lm::merge_by_key(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), av.begin(),
                                         bv.begin(), out.begin(), vals.begin(), bad_comp{kind});
            BOOST_CHECK(ends.first == out.end());
            BOOST_CHECK(ends.second == vals.end());
          }
          BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
          const auto k = to_host(out);
          const auto v = to_host(vals);
          for (std::size_t i = 0; i < k.size(); ++i) {
            if (!std::binary_search(keys_in.begin(), keys_in.end(), k[i])) {
              BOOST_FAIL("output key " << i << " = " << k[i] << " is no input key");
            }
            if (kind >= 0 && (v[i] < 0 || v[i] >= n)) BOOST_FAIL("output value " << i << " = " << v[i] << " out of range");
          }
        }
      }
    }
  }
}

// Every asynchronous form captures into a CUDA graph (stream capture): merge,
// merge_by_key, the sorts (the one-kernel class and the multi-pass class)
// and sorted_search's counts form, with temporary storage as the graph's
// own allocations; the graph, replayed on new data in the same buffers,
// gives what direct calls give. (The form of sorted_search that returns the
// counts waits for its stream, which capture does not allow.)
BOOST_AUTO_TEST_CASE(calls_capture_into_a_cuda_graph) {
  std::mt19937_64 g(32);
  cudaStream_t s = nullptr;
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const auto par = lm::cuda::par.on(s);
  for (long long n : {1000LL, 3000001LL}) {
    BOOST_TEST_CONTEXT("n " << n) {
      auto make = [&] {
        std::vector<std::int32_t> v(static_cast<std::size_t>(n));
        for (auto& x : v) x = static_cast<std::int32_t>(g() % 1000003);
        return v;
      };
      thrust::device_vector<std::int32_t> keys(static_cast<std::size_t>(n)), vals(static_cast<std::size_t>(n));
      thrust::device_vector<std::int32_t> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
      thrust::device_vector<std::int32_t> out(static_cast<std::size_t>(2 * n)), out_vals(static_cast<std::size_t>(2 * n));
      thrust::device_vector<long long> lower(static_cast<std::size_t>(n));
      thrust::device_vector<lm::match_counts> counts(1);
      thrust::device_vector<bool> b_match(static_cast<std::size_t>(n));
      auto calls = [&] {
        lm::merge_sort_by_key(par, keys.begin(), keys.end(), vals.begin());
        lm::merge(par, a.begin(), a.end(), b.begin(), b.end(), out.begin());
        lm::merge_by_key(par, a.begin(), a.end(), b.begin(), b.end(), b.begin(), a.begin(), out.begin(),
                         out_vals.begin());
        lm::sorted_search<lm::bounds::lower, lm::search_type::index, lm::search_type::match>(
            par, a.begin(), a.end(), b.begin(), b.end(), lower.begin(), b_match.begin(),
            thrust::raw_pointer_cast(counts.data()));
      };
      auto load = [&](const std::vector<std::int32_t>& k, std::vector<std::int32_t> x, std::vector<std::int32_t> y) {
        std::sort(x.begin(), x.end());
        std::sort(y.begin(), y.end());
        thrust::copy(k.begin(), k.end(), keys.begin());
        thrust::sequence(vals.begin(), vals.end(), 0);
        thrust::copy(x.begin(), x.end(), a.begin());
        thrust::copy(y.begin(), y.end(), b.begin());
      };
      auto results = [&] {
        BOOST_REQUIRE_EQUAL(cudaStreamSynchronize(s), cudaSuccess);
        return std::make_tuple(to_host(keys), to_host(vals), to_host(out), to_host(out_vals), to_host(lower),
                               lm::match_counts(counts[0]));
      };
      // Direct calls (also the first use of every kernel and of the pool,
      // outside the capture).
      const auto k1 = make(), x1 = make(), y1 = make(), k2 = make(), x2 = make(), y2 = make();
      load(k1, x1, y1);
      calls();
      const auto want1 = results();
      load(k2, x2, y2);
      calls();
      const auto want2 = results();
      // The direct calls against the standard library (the sort, the merge).
      std::vector<std::int32_t> sorted2 = k2, merged2(static_cast<std::size_t>(2 * n)), xs = x2, ys = y2;
      std::sort(sorted2.begin(), sorted2.end());
      std::sort(xs.begin(), xs.end());
      std::sort(ys.begin(), ys.end());
      std::merge(xs.begin(), xs.end(), ys.begin(), ys.end(), merged2.begin());
      BOOST_REQUIRE(std::get<0>(want2) == sorted2);
      BOOST_REQUIRE(std::get<2>(want2) == merged2);

      cudaGraph_t graph = nullptr;
      BOOST_REQUIRE_EQUAL(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
      calls();
      BOOST_REQUIRE_EQUAL(cudaStreamEndCapture(s, &graph), cudaSuccess);
      cudaGraphExec_t exec = nullptr;
      BOOST_REQUIRE_EQUAL(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      load(k1, x1, y1);
      BOOST_REQUIRE_EQUAL(cudaGraphLaunch(exec, s), cudaSuccess);
      const auto got1 = results();
      load(k2, x2, y2);
      BOOST_REQUIRE_EQUAL(cudaGraphLaunch(exec, s), cudaSuccess);
      const auto got2 = results();
      BOOST_CHECK(std::get<0>(got1) == std::get<0>(want1) && std::get<1>(got1) == std::get<1>(want1));
      BOOST_CHECK(std::get<2>(got1) == std::get<2>(want1) && std::get<3>(got1) == std::get<3>(want1));
      BOOST_CHECK(std::get<4>(got1) == std::get<4>(want1));
      BOOST_CHECK_EQUAL(std::get<5>(got1).b, std::get<5>(want1).b);
      BOOST_CHECK(std::get<0>(got2) == std::get<0>(want2) && std::get<1>(got2) == std::get<1>(want2));
      BOOST_CHECK(std::get<2>(got2) == std::get<2>(want2) && std::get<3>(got2) == std::get<3>(want2));
      BOOST_CHECK(std::get<4>(got2) == std::get<4>(want2));
      BOOST_CHECK_EQUAL(std::get<5>(got2).b, std::get<5>(want2).b);
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
  }
  cudaStreamDestroy(s);
}
