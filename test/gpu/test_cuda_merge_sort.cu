// CUDA merge_sort, merge_sort_by_key and merge_sort_indices against
// std::stable_sort (and the serial backend): every key type, sizes at every
// tile and pass boundary of several launch boxes (computed here from the boxes),
// structured inputs, comparators, policies, streams, allocators and a
// comparator that is not a strict weak order.
#define BOOST_TEST_MODULE cuda_merge_sort
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>

#include "cuda_test_support.cuh"
#include "test_support.hpp"

namespace lm = libmerge;
using namespace test_support;
using cuda_test::counting_allocator;
using cuda_test::in_shard;
using cuda_test::input_keys_only_less;
using cuda_test::poison;
using cuda_test::quick;
using cuda_test::stream_gate;
using cuda_test::to_device;
using cuda_test::to_host;

namespace {

// The tuning line of sm_90 (whose settings every line from sm_80 to sm_120
// takes), read from the table rather than counted.
constexpr std::size_t sm90_line = static_cast<std::size_t>(lm::tuning::entry_for(90));

// Structs of 32 and 128 bytes ordered by `key` alone; `tag` exposes instability.
template <int Bytes>
struct wide {
  std::int64_t key;
  std::int64_t tag;
  unsigned char pad[Bytes - 16];
};
static_assert(sizeof(wide<32>) == 32 && sizeof(wide<128>) == 128, "wide sizes");
struct wide_less {
  template <int B>
  LIBMERGE_HOST_DEVICE bool operator()(const wide<B>& x, const wide<B>& y) const {
    return x.key < y.key;
  }
};
template <int B>
bool operator==(const wide<B>& x, const wide<B>& y) {
  return x.key == y.key && x.tag == y.tag && std::memcmp(x.pad, y.pad, sizeof x.pad) == 0;
}
template <int B>
bool operator!=(const wide<B>& x, const wide<B>& y) {
  return !(x == y);
}
template <int B>
std::ostream& operator<<(std::ostream& os, const wide<B>& w) {
  return os << "{" << w.key << "," << w.tag << "}";
}

// Inputs beyond the generic distributions: sorted runs and nearly sorted.
enum class shape { generic, sorted_runs, nearly_sorted };

template <class T, class Comp>
std::vector<T> make_input(long long n, distribution d, shape s, std::uint64_t seed, Comp comp) {
  std::vector<T> v;
  if constexpr (std::is_same_v<T, wide<32>> || std::is_same_v<T, wide<128>>) {
    std::mt19937_64 rng(seed);
    v.resize(static_cast<std::size_t>(n));
    for (long long i = 0; i < n; ++i) {
      T w{};
      w.key = d == distribution::all_equal ? 7 : static_cast<std::int64_t>(rng() % (d == distribution::few_distinct ? 5 : 100000));
      w.tag = i;
      for (std::size_t b = 0; b < sizeof w.pad; ++b) w.pad[b] = static_cast<unsigned char>(i + b);
      v[static_cast<std::size_t>(i)] = w;
    }
    if (d == distribution::sorted) std::stable_sort(v.begin(), v.end(), comp);
    if (d == distribution::reversed) std::stable_sort(v.begin(), v.end(), [&](const T& x, const T& y) { return comp(y, x); });
  } else {
    v = generate<T>(n, d, seed, comp);
  }
  std::mt19937_64 rng(seed ^ 0x5555);
  if (s == shape::sorted_runs) {
    const long long run = 1 + static_cast<long long>(rng() % 3000);
    for (long long i = 0; i < n; i += run) std::stable_sort(v.begin() + i, v.begin() + std::min(n, i + run), comp);
  } else if (s == shape::nearly_sorted) {
    std::stable_sort(v.begin(), v.end(), comp);
    for (long long k = 0; k < n / 100 + 1 && n > 1; ++k) {
      std::swap(v[rng() % static_cast<std::uint64_t>(n)], v[rng() % static_cast<std::uint64_t>(n)]);
    }
  }
  return v;
}

// One key type through all three sorts with `policy`, against std::stable_sort
// (keys), the stable permutation (values = original positions, indices).
// The outputs start poisoned twice over for 1-byte keys, where any poison is
// also a possible key: a position left unwritten cannot match both times.
template <class T, class Policy, class Comp>
void check_sorts(const Policy& policy, const std::vector<T>& keys, Comp comp, const std::string& what) {
  const auto expected = reference_sort(keys, comp);
  const auto perm = reference_permutation(keys, comp);
  {
    auto d = to_device(keys);
    lm::merge_sort(policy, d.begin(), d.end(), comp);
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(d), expected, what + " merge_sort");
  }
  {
    auto d = to_device(keys);
    std::vector<std::int32_t> pos(keys.size());
    std::iota(pos.begin(), pos.end(), 0);
    auto dv = to_device(pos);
    lm::merge_sort_by_key(policy, d.begin(), d.end(), dv.begin(), comp);
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(d), expected, what + " merge_sort_by_key (keys)");
    std::vector<std::int32_t> ev(perm.begin(), perm.end());
    check_same(to_host(dv), ev, what + " merge_sort_by_key (values)");
  }
  for (std::int64_t fill : {std::int64_t(-3), std::int64_t(0x7edcba9876543210)}) {
    auto d = to_device(keys);
    thrust::device_vector<std::int64_t> idx(keys.size(), fill);
    lm::merge_sort_indices(policy, d.begin(), d.end(), idx.begin(), comp);
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(d), expected, what + " merge_sort_indices (keys)");
    check_same(to_host(idx), perm, what + " merge_sort_indices (indices)");
    if (sizeof(T) > 1) break;
  }
}

const distribution every_distribution[] = {distribution::random, distribution::sorted, distribution::reversed,
                                           distribution::all_equal, distribution::few_distinct};

// Sizes at the boundaries of a block-sort tile of t keys and merge tiles of
// nv: partial tiles, one-past, and every pass kind (4-way, a 2-way last pass
// when the level count is odd, a partial last group).
std::vector<long long> boundary_sizes(long long t, long long nv) {
  std::vector<long long> s = {2, 3, t - 1, t, t + 1, 2 * t - 1, 2 * t + 1, 3 * t + 7, 4 * t - 1, 4 * t, 4 * t + 1};
  if (!quick()) {
    for (long long k : {5LL, 8LL, 9LL, 16LL, 17LL, 33LL}) s.insert(s.end(), {k * t - 1, k * t + 3});
    s.insert(s.end(), {nv - 1, nv + 1, 2 * t + nv, 16 * t + 2 * nv - 1});
  }
  s.erase(std::remove_if(s.begin(), s.end(), [](long long n) { return n < 2; }), s.end());
  return s;
}

template <class T, class Comp, class Policy>
void sweep(const Policy& policy, long long t, long long nv, Comp comp, const char* what, std::uint64_t seed) {
  for (long long n : boundary_sizes(t, nv)) {
    for (distribution d : every_distribution) {
      if (!in_shard()) continue;
      std::ostringstream os;
      os << what << " n=" << n << " " << name(d);
      check_sorts(policy, make_input<T>(n, d, shape::generic, seed + n, comp), comp, os.str());
    }
  }
}

// The sm_90 line's one-kernel class for keys K and values V (void: keys).
template <class K, class V>
using sm90_one_kernel_class =
    typename decltype(internals::cuda::merge_sort_table<K, V>::template boxes<sm90_line>())::one_kernel;

// Elements per tile of the tuned boxes for keys T and values V (void: keys).
template <class T, class V = void>
std::pair<long long, long long> tuned_tiles() {
  using table = internals::cuda::merge_sort_table<T, V>;
  using boxes = decltype(table::template boxes<sm90_line>());
  using bs = typename boxes::block_sort;
  using mb = typename boxes::pass;
  return {bs::nv, mb::nv};
}

// 4-way passes whose partitions search run samples (merge tiles of a multiple
// of 32 elements, at least 256; block-sort tiles of a multiple of 32).
using sampled_four_way = lm::launch_boxes<lm::launch_box<64, 3>, lm::launch_box<64, 5>, 4>;

using sort_key_types = std::tuple<std::int8_t, std::int32_t, std::uint32_t, std::int64_t, float, double, record>;

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(sort_tuned_boxes, T, sort_key_types) {
  const auto [t, nv] = tuned_tiles<T>();
  sweep<T>(lm::cuda::par, t, nv, lm::less<>(), "tuned", 100);
  if constexpr (std::is_same_v<T, record>) sweep<T>(lm::cuda::par, t, nv, record_less(), "tuned record_less", 101);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(sort_greater, T, sort_key_types) {
  const long long n = quick() ? 5000 : 300001;
  for (distribution d : every_distribution) {
    check_sorts(lm::cuda::par, make_input<T>(n, d, shape::generic, 7, lm::greater<>()), lm::greater<>(),
                std::string("greater ") + name(d));
  }
}

// Custom boxes; tile sizes computed here. Small tiles make many passes at
// small sizes: 2-way and 4-way passes, partial groups, odd vt.
BOOST_AUTO_TEST_CASE(sort_launch_boxes) {
  sweep<std::int32_t>(lm::cuda::par.with(lm::launch_box<64, 3>{}), 64 * 3, 64 * 3, lm::less<>(), "box 64x3", 200);
  sweep<std::int32_t>(lm::cuda::par.with(lm::launch_boxes<lm::launch_box<64, 3>, lm::launch_box<64, 3>, 4>{}),
                      64 * 3, 64 * 3, lm::less<>(), "boxes 64x3 4-way", 204);
  sweep<record>(lm::cuda::par.with(lm::launch_boxes<lm::launch_box<32, 3>, lm::launch_box<96, 5>, 4>{}), 32 * 3,
                96 * 5, record_less(), "record boxes 32x3 96x5 4-way", 205);
  // 4-way passes partitioned on run samples (tiles of a multiple of 32
  // elements, at least 256) at small sizes.
  sweep<std::int32_t>(lm::cuda::par.with(sampled_four_way{}), 64 * 3, 64 * 5, lm::less<>(), "boxes 64x3 64x5 4-way",
                      209);
  sweep<std::int32_t>(lm::cuda::par.with(lm::launch_box<128, 7>{}, lm::launch_box<96, 5>{}), 128 * 7, 96 * 5,
                      lm::less<>(), "boxes 128x7 96x5", 201);
  sweep<std::int64_t>(lm::cuda::par.with(lm::launch_box<32, 1>{}, lm::launch_box<32, 2>{}), 32, 64, lm::less<>(),
                      "boxes 32x1 32x2", 202);
  sweep<record>(lm::cuda::par.with(lm::launch_box<256, 4>{}, lm::launch_box<64, 9>{}), 256 * 4, 64 * 9, record_less(),
                "record boxes 256x4 64x9", 203);
  // The sm_90 line's boxes of separate kernels, read from the table, at
  // sizes the tests can afford (tuned calls that small take the one-kernel
  // class): the block sort's, then the passes' with 4 ways and with 2 (the
  // passes of comparators other than the natural order of numbers, below
  // their 4-way size), and the mid-sized and large sorts' passes. sweep
  // sorts keys, by key and indices.
  namespace cb = internals::cuda;
  using key_line = decltype(cb::merge_sort_table<std::int32_t, void>::template boxes<sm90_line>());
  using pair_line = decltype(cb::merge_sort_table<std::int32_t, std::int32_t>::template boxes<sm90_line>());
  using kbs = key_line::block_sort;
  using kmid = key_line::pass;
  using klarge = key_line::large_pass;
  using kmid_sized = key_line::mid_pass;
  using pbs = pair_line::block_sort;
  using pmid = pair_line::pass;
  sweep<std::int32_t>(lm::cuda::par.with(lm::launch_boxes<pbs, pmid, 4>{}), pbs::nv, pmid::nv, lm::less<>(),
                      "tuned pairs' boxes, 4-way", 206);
  sweep<std::int32_t>(lm::cuda::par.with(lm::launch_boxes<kbs, kmid, 2>{}), kbs::nv, kmid::nv, lm::less<>(),
                      "tuned keys' boxes, 2-way", 208);
  sweep<std::int32_t>(lm::cuda::par.with(lm::launch_boxes<kbs, kmid, 4>{}), kbs::nv, kmid::nv, lm::less<>(),
                      "tuned keys' boxes, 4-way", 210);
  sweep<std::int32_t>(lm::cuda::par.with(lm::launch_boxes<kbs, klarge, 4>{}), kbs::nv, klarge::nv, lm::less<>(),
                      "tuned large keys' boxes, 4-way", 207);
  static_assert(!std::is_same_v<kmid_sized, kmid> && !std::is_same_v<kmid_sized, klarge>,
                "the mid-sized sorts' passes have a box of their own");
  sweep<std::int32_t>(lm::cuda::par.with(lm::launch_boxes<kbs, kmid_sized, 4>{}), kbs::nv, kmid_sized::nv, lm::less<>(),
                      "tuned mid-sized keys' boxes, 4-way", 209);
}

// Tuned calls at the size from which int32 keys take the mid-sized sorts'
// passes (2^mid_log2_keys + 7: 4-way passes, then one 2-way pass), random
// and already sorted (the input those boxes are for), against std::sort.
// Keys only: the by-key and indices forms of these kernels are swept above.
BOOST_AUTO_TEST_CASE(sort_tuned_mid_sized) {
  const auto& line = lm::tuning::merge_sort[sm90_line];
  static_assert(lm::tuning::merge_sort[sm90_line].mid_log2_keys > 0 &&
                    lm::tuning::merge_sort[sm90_line].mid_log2_keys < lm::tuning::merge_sort[sm90_line].large_log2_keys,
                "the sm_90 line has mid-sized sorts below its large ones");
  if (quick()) return;  // 2^26 keys: too long under compute-sanitizer; the boxes' sweep above covers the kernels
  const long long n = (1LL << line.mid_log2_keys) + 7;
  for (distribution d : {distribution::random, distribution::sorted}) {
    const auto keys = make_input<std::int32_t>(n, d, shape::generic, 320, lm::less<>());
    auto expected = keys;
    std::sort(expected.begin(), expected.end());
    auto dk = to_device(keys);
    lm::merge_sort(lm::cuda::par, dk.begin(), dk.end());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(dk), expected, "n=" + std::to_string(n) + " " + name(d) + " tuned merge_sort");
  }
}

// A comparator of the caller's own that orders keys as lm::less does: the
// tuned line gives int32 keys 2-way passes under it where lm::less gets 4-way ones.
struct own_less {
  template <class T>
  LIBMERGE_HOST_DEVICE bool operator()(T a, T b) const { return a < b; }
};

// Tuned calls of the separate kernels' sizes under lm::less (4-way passes
// from 2^numbers_four_way_log2 keys) and a comparator of the caller's own
// (2-way passes there): both sort alike. 2^23 + 5 int32 keys are 9 levels
// over the tuned block sort (4-way passes, then one 2-way pass), 2^24 + 3 ten.
// int64 keys: the same calls over their own boxes (keys of 8 bytes and more
// take 2-way passes, merge_sort_table).
using tuned_key_types = std::tuple<std::int32_t, std::int64_t>;
BOOST_AUTO_TEST_CASE_TEMPLATE(sort_tuned_by_comparator, T, tuned_key_types) {
  const auto& line = lm::tuning::merge_sort[sm90_line];
  static_assert(lm::tuning::merge_sort[sm90_line].numbers_four_way_log2 <
                    lm::tuning::merge_sort[sm90_line].four_way_log2,
                "numbers take 4-way passes from a smaller size");
  std::vector<long long> sizes = {(1LL << line.numbers_four_way_log2) + 5};
  if (!quick()) sizes.push_back((1LL << (line.numbers_four_way_log2 + 1)) + 3);
  for (long long n : sizes) {
    for (distribution d : {distribution::random, distribution::few_distinct}) {
      if (!in_shard()) continue;
      const auto keys = make_input<T>(n, d, shape::generic, 300 + n, lm::less<>());
      const std::string what = "n=" + std::to_string(n) + " " + name(d);
      check_sorts(lm::cuda::par, keys, lm::less<>(), what + " lm::less");
      check_sorts(lm::cuda::par, keys, own_less{}, what + " own_less");
    }
  }
}

// The one-kernel size class (one cooperative kernel for small sorts: keys
// under 2^23, pairs under 2^21 on sm_90): boundaries of its tiles (4-byte and
// 8-byte keys), a single tile (no sortedness kernel), more tiles than the GPU
// holds CTAs (each CTA then sorts and merges several), and the sizes where
// the class ends. check_sorts' indices are int64 (12-byte
// elements), which take separate kernels.
BOOST_AUTO_TEST_CASE(sort_one_kernel_class) {
  namespace cb = internals::cuda;
  using keys_class = sm90_one_kernel_class<std::int32_t, void>;
  using pairs_class = sm90_one_kernel_class<std::int32_t, std::int32_t>;
  static_assert(keys_class::log2 > 0 && pairs_class::log2 > 0 && keys_class::separate_log2 > 0,
                "the sm_90 line has a one-kernel class, with a separate block sort for its largest keys");
  const long long t = keys_class::box::nv, tp = pairs_class::box::nv;
  sweep<std::int32_t>(lm::cuda::par, t, t, lm::less<>(), "one kernel (keys' tiles)", 250);
  sweep<std::int32_t>(lm::cuda::par, tp, tp, lm::less<>(), "one kernel (pairs' tiles)", 251);
  using wide_class = sm90_one_kernel_class<std::int64_t, void>;
  static_assert(wide_class::log2 > 0, "int64 keys have a one-kernel class");
  sweep<std::int64_t>(lm::cuda::par, wide_class::box::nv, wide_class::box::nv, lm::less<>(), "one kernel (int64 tiles)",
                      252);
  // 16-byte keys: vt scaled from the 8-byte keys', their own size class.
  using record_class = sm90_one_kernel_class<record, void>;
  static_assert(record_class::log2 > 0 && record_class::box::vt == 5,
                "16-byte keys have a one-kernel class of 256x5 tiles");
  sweep<record>(lm::cuda::par, record_class::box::nv, record_class::box::nv, record_less(),
                "one kernel (16-byte tiles)", 253);
  for (long long n : {(1LL << record_class::log2) - 1, 1LL << record_class::log2}) {
    for (distribution d : {distribution::random, distribution::few_distinct}) {
      if (!in_shard()) continue;
      check_sorts(lm::cuda::par, make_input<record>(n, d, shape::generic, 254 + n, record_less()), record_less(),
                  "one kernel 16-byte keys n=" + std::to_string(n) + " " + name(d));
    }
  }
  // (From 2^separate_log2 keys, block_sort_kernel sorts first and the
  // cooperative kernel makes the passes.)
  const long long separate = 1LL << keys_class::separate_log2;
  std::vector<long long> sizes = {600 * t + 5, (1LL << pairs_class::log2) - 1, 1LL << pairs_class::log2, separate + 5};
  if (!quick()) sizes.insert(sizes.end(), {separate - 1, (1LL << keys_class::log2) - 1, 1LL << keys_class::log2});
  for (long long n : sizes) {
    for (distribution d : {distribution::random, distribution::few_distinct, distribution::reversed}) {
      if (!in_shard()) continue;
      std::ostringstream os;
      os << "one kernel n=" << n << " " << name(d);
      check_sorts(lm::cuda::par, make_input<std::int32_t>(n, d, shape::generic, 260 + n, lm::less<>()), lm::less<>(),
                  os.str());
    }
    if (in_shard()) {
      check_sorts(lm::cuda::par, make_input<std::int32_t>(n, distribution::random, shape::sorted_runs, 261 + n,
                                                          lm::less<>()),
                  lm::less<>(), "one kernel sorted runs n=" + std::to_string(n));
    }
  }
  // Two one-kernel sorts in flight at once on two streams (both cooperative
  // grids as large as the GPU holds; the first with a separate block sort).
  const auto keys1 = make_input<std::int32_t>(separate + 999, distribution::random, shape::generic, 262, lm::less<>());
  const auto keys2 = make_input<std::int32_t>(600 * t, distribution::random, shape::generic, 263, lm::less<>());
  auto d1 = to_device(keys1), d2 = to_device(keys2);
  cudaStream_t s1, s2;
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  lm::merge_sort(lm::cuda::par.on(s1), d1.begin(), d1.end());
  lm::merge_sort(lm::cuda::par.on(s2), d2.begin(), d2.end(), lm::greater<>());
  BOOST_REQUIRE_EQUAL(cudaStreamSynchronize(s1), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaStreamSynchronize(s2), cudaSuccess);
  check_same(to_host(d1), reference_sort(keys1, lm::less<>()), "one kernel on stream 1");
  check_same(to_host(d2), reference_sort(keys2, lm::greater<>()), "one kernel on stream 2");
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

BOOST_AUTO_TEST_CASE(sort_structured_inputs) {
  const auto [t, nv] = tuned_tiles<std::int32_t>();
  (void)nv;
  for (long long n : {3 * t + 11, 40 * t + 1, quick() ? 50000LL : 2000003LL}) {
    for (shape s : {shape::sorted_runs, shape::nearly_sorted}) {
      for (distribution d : {distribution::random, distribution::few_distinct}) {
        std::ostringstream os;
        os << (s == shape::sorted_runs ? "sorted runs" : "nearly sorted") << " " << name(d) << " n=" << n;
        check_sorts(lm::cuda::par, make_input<std::int32_t>(n, d, s, 300 + n, lm::less<>()), lm::less<>(), os.str());
        check_sorts(lm::cuda::par.with(lm::launch_box<64, 3>{}),
                    make_input<std::int64_t>(n / 8 + 2, d, s, 301 + n, lm::less<>()), lm::less<>(),
                    os.str() + " box 64x3");
      }
    }
  }
}

// Runs that line up with the passes: whole passes are skipped on the device,
// and the data must still end in the caller's range.
BOOST_AUTO_TEST_CASE(sort_aligned_sorted_runs) {
  using box = lm::launch_box<64, 3>;
  using four_way = lm::launch_boxes<box, box, 4>;
  const long long t = 64 * 3;
  for (long long run : {t, 4 * t, 8 * t, 64 * t}) {
    for (long long n : {64 * t, 64 * t + 5, 100 * t}) {
      std::vector<std::int32_t> v(n);
      std::mt19937_64 rng(run + n);
      for (auto& x : v) x = static_cast<std::int32_t>(rng() % 1000) - 500;
      for (long long i = 0; i < n; i += run) std::sort(v.begin() + i, v.begin() + std::min(n, i + run));
      std::ostringstream os;
      os << "aligned runs of " << run << " n=" << n;
      check_sorts(lm::cuda::par.with(box{}), v, lm::less<>(), os.str());
      check_sorts(lm::cuda::par.with(four_way{}), v, lm::less<>(), os.str() + " 4-way");
      check_sorts(lm::cuda::par.with(sampled_four_way{}), v, lm::less<>(), os.str() + " 4-way sampled");
      check_sorts(lm::cuda::par, v, lm::less<>(), os.str() + " tuned");
    }
  }
}

// A pass skipped on the device before one that partitions on run samples:
// the samples it reads must describe the data. Keys come in groups of G
// whose sub-blocks of S keys hold ascending ranges, each shuffled (so the
// block sort has work): the pass merging runs of S (G = 4 S) finds every
// group in order, the next has work. With
// the 64x3 / 64x5 4-way boxes, n = 12288 is 6 levels over 192-key tiles
// (4-way passes only; S = 192 skips the first), n = 6144 is 5 (4-way passes
// of width 192 and 768, then a 2-way pass of width 3072): S = 192 skips the
// first 4-way pass, S = 768 the second, before the 2-way pass (which reads
// no samples), and 6144 * 4 + 7 keys (8 levels, a partial last group) skip
// the second of four 4-way passes.
BOOST_AUTO_TEST_CASE(sort_after_a_skipped_pass) {
  for (const auto& [n, sub, group] : {std::tuple<long long, long long, long long>{12288, 192, 768},
                                      std::tuple<long long, long long, long long>{6144, 192, 768},
                                      std::tuple<long long, long long, long long>{6144, 768, 3072},
                                      std::tuple<long long, long long, long long>{6144 * 4 + 7, 768, 3072}}) {
    // Sub-block j of every group lies in band j, the groups' keys
    // interleaved there, so that the later passes' runs overlap everywhere
    // (runs of disjoint ranges would make any cut a right one).
    std::mt19937_64 rng(n + sub);
    const long long groups = (n + group - 1) / group;
    std::vector<std::int32_t> v(n);
    for (long long i = 0; i < n; ++i) {
      const long long g = i / group, j = i % group / sub, t = i % sub;
      v[i] = static_cast<std::int32_t>((j * sub + t) * groups + g);
    }
    for (long long i = 0; i < n; i += sub) std::shuffle(v.begin() + i, v.begin() + std::min(n, i + sub), rng);
    std::ostringstream os;
    os << "n=" << n << " sub-blocks of " << sub << " ascending in groups of " << group;
    check_sorts(lm::cuda::par.with(sampled_four_way{}), v, lm::less<>(), os.str() + " 4-way sampled");
    check_sorts(lm::cuda::par, v, lm::less<>(), os.str() + " tuned");
  }
}

// Sorted runs of any width W of at least a block-sort tile: the block sort is
// skipped and the passes start at W, whether or not W lines up with the tiles
// (here it never does). Also: a run boundary that is not a descent (runs of
// 2W in truth), equal keys across boundaries (stability), runs as long as the
// input but one element, and a last run cut short.
BOOST_AUTO_TEST_CASE(sort_runs_of_any_width) {
  using box = lm::launch_box<64, 3>;
  const long long t = 64 * 3;
  const auto [tuned_t, tuned_nv] = tuned_tiles<std::int32_t>();
  (void)tuned_nv;
  for (long long run : {t, t + 1, 3 * t + 7, 1000LL, 1024LL, 4099LL, 32 * 161LL, tuned_t + 5, 3 * tuned_t - 1}) {
    for (long long n : {2 * run, 7 * run + 3, 40 * run + run / 2}) {
      if (quick() && n > 20 * run) continue;
      std::vector<std::int32_t> v(n);
      std::mt19937_64 rng(run * 31 + n);
      for (auto& x : v) x = static_cast<std::int32_t>(rng() % 50) - 25;  // many equal keys across runs
      for (long long i = 0; i < n; i += run) std::sort(v.begin() + i, v.begin() + std::min(n, i + run));
      if (n > 4 * run) {  // runs 2 and 3 joined: that boundary is no descent
        std::sort(v.begin() + 2 * run, v.begin() + 4 * run);
      }
      std::ostringstream os;
      os << "runs of " << run << " n=" << n;
      check_sorts(lm::cuda::par.with(box{}), v, lm::less<>(), os.str() + " box 64x3");
      check_sorts(lm::cuda::par.with(lm::launch_boxes<box, box, 4>{}), v, lm::less<>(), os.str() + " 4-way");
      check_sorts(lm::cuda::par.with(sampled_four_way{}), v, lm::less<>(), os.str() + " 4-way sampled");
      check_sorts(lm::cuda::par, v, lm::less<>(), os.str() + " tuned");
    }
  }
  // Sorted but for the last element: runs of n - 1 and 1.
  for (long long n : {t + 2, 5 * t, 100000LL}) {
    std::vector<std::int32_t> v(n);
    std::iota(v.begin(), v.end(), 0);
    v.back() = static_cast<std::int32_t>(n / 2);
    std::ostringstream os;
    os << "sorted but the last of n=" << n;
    check_sorts(lm::cuda::par.with(box{}), v, lm::less<>(), os.str() + " box 64x3");
    check_sorts(lm::cuda::par, v, lm::less<>(), os.str() + " tuned");
  }
}

BOOST_AUTO_TEST_CASE(sort_wide_structs) {
  for (long long n : {1000LL, quick() ? 20000LL : 250001LL}) {
    for (distribution d : every_distribution) {
      check_sorts(lm::cuda::par, make_input<wide<32>>(n, d, shape::generic, 400 + n, wide_less()), wide_less(),
                  std::string("32-byte struct ") + name(d));
      check_sorts(lm::cuda::par, make_input<wide<128>>(n, d, shape::generic, 401 + n, wide_less()), wide_less(),
                  std::string("128-byte struct ") + name(d));
    }
  }
}

// Strings by index: keys are offsets of NUL-terminated strings in a device
// character buffer; the comparator compares the strings.
struct string_less {
  const char* chars;
  LIBMERGE_HOST_DEVICE bool operator()(std::uint32_t a, std::uint32_t b) const {
    const char* x = chars + a;
    const char* y = chars + b;
    while (*x != '\0' && *x == *y) {
      ++x;
      ++y;
    }
    return static_cast<unsigned char>(*x) < static_cast<unsigned char>(*y);
  }
};

BOOST_AUTO_TEST_CASE(sort_strings_by_index) {
  std::mt19937_64 rng(500);
  const long long n = quick() ? 20000 : 400000;
  std::string chars;
  std::vector<std::uint32_t> offsets;
  for (long long i = 0; i < n; ++i) {
    offsets.push_back(static_cast<std::uint32_t>(chars.size()));
    const int len = static_cast<int>(rng() % 12);
    for (int c = 0; c < len; ++c) chars.push_back(static_cast<char>('a' + rng() % 4));  // many shared prefixes
    chars.push_back('\0');
  }
  thrust::device_vector<char> dchars(chars.begin(), chars.end());
  string_less on_device{thrust::raw_pointer_cast(dchars.data())};
  string_less on_host{chars.data()};
  const auto perm = reference_permutation(offsets, on_host);
  std::vector<std::uint32_t> expected;
  for (auto p : perm) expected.push_back(offsets[static_cast<std::size_t>(p)]);

  auto d = to_device(offsets);
  lm::merge_sort(lm::cuda::par, d.begin(), d.end(), on_device);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(d), expected, "strings by index");
  auto d2 = to_device(offsets);
  thrust::device_vector<std::int64_t> idx(n, -1);
  lm::merge_sort_indices(lm::cuda::par, d2.begin(), d2.end(), idx.begin(), on_device);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(idx), perm, "strings by index: indices");
}

// The serial backend agrees with std::stable_sort, and so does the GPU on the
// same (struct) input: the oracle chain the CPU suite relies on.
BOOST_AUTO_TEST_CASE(sort_matches_serial_backend) {
  auto keys = make_input<record>(100003, distribution::few_distinct, shape::generic, 600, record_less());
  std::vector<record> serial = keys;
  lm::merge_sort(lm::serial, serial.begin(), serial.end(), record_less());
  check_same(serial, reference_sort(keys, record_less()), "serial vs std::stable_sort");
  auto d = to_device(keys);
  lm::merge_sort(lm::cuda::par, d.begin(), d.end(), record_less());
  check_same(to_host(d), serial, "cuda vs serial");
}

// Raw pointers, device_ptr, every policy form.
BOOST_AUTO_TEST_CASE(sort_policies_and_iterators) {
  cudaStream_t s;
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const auto keys = make_input<std::int32_t>(123457, distribution::random, shape::generic, 700, lm::less<>());
  check_sorts(thrust::device, keys, lm::less<>(), "thrust::device");
  check_sorts(thrust::cuda::par.on(s), keys, lm::less<>(), "thrust::cuda::par.on(s)");
  check_sorts(lm::cuda::par.on(s), keys, lm::less<>(), "lm::cuda::par.on(s)");
  std::atomic<int> live{0}, calls{0};
  std::atomic<std::size_t> largest{0};
  check_sorts(lm::cuda::par.on(s).with_allocator(counting_allocator{&live, &calls, &largest}), keys, lm::less<>(),
              "counting allocator");
  BOOST_CHECK_EQUAL(calls.load(), 3);  // one allocation per call: sort, by key, indices
  BOOST_CHECK_EQUAL(live.load(), 0);

  auto d = to_device(keys);
  std::int32_t* raw = thrust::raw_pointer_cast(d.data());
  lm::merge_sort(lm::cuda::par, raw, raw + d.size());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(d), reference_sort(keys, lm::less<>()), "raw pointers");
  auto d2 = to_device(keys);
  thrust::device_ptr<std::int32_t> p = d2.data();
  lm::merge_sort(lm::cuda::par, p, p + d2.size(), lm::greater<>());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(d2), reference_sort(keys, lm::greater<>()), "device_ptr");
  BOOST_CHECK_EQUAL(cudaStreamDestroy(s), cudaSuccess);
}

// Temporary storage: one copy of keys and values, every 32nd key (the run
// samples of 4-way passes) and a small part per tile.
BOOST_AUTO_TEST_CASE(sort_temporary_storage_peak) {
  for (long long n : {1000LL, 1000000LL, 3000001LL}) {
    std::atomic<int> live{0}, calls{0};
    std::atomic<std::size_t> largest{0};
    const auto policy = lm::cuda::par.with_allocator(counting_allocator{&live, &calls, &largest});
    thrust::device_vector<std::int64_t> k(n), v(n);
    lm::merge_sort_by_key(policy, k.begin(), k.end(), v.begin());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    const std::size_t copy = static_cast<std::size_t>(n) * 16;
    const std::size_t per_tile = static_cast<std::size_t>(n / 256 + 1) * 32;  // tiles hold >= 256 elements
    const std::size_t run_samples = static_cast<std::size_t>(n / 32 + 1) * 8;
    BOOST_CHECK_MESSAGE(largest.load() <= copy + run_samples + per_tile + 4096,
                        "n=" << n << ": " << largest.load() << " bytes of temporary storage");
    BOOST_CHECK_EQUAL(live.load(), 0);
  }
}

using bad_order = cuda_test::bad_comp;  // a coin flip, <=, always true, always false

// A comparator that is a strict weak order except among keys with bit 30
// set, which it orders by a coin flip (and puts after all others). Inputs
// keep such keys off the positions the checked call's comparator check
// samples, so the check passes and the sort meets the bad comparisons.
struct bad_when_marked {
  LIBMERGE_HOST_DEVICE bool operator()(std::int32_t a, std::int32_t b) const {
    const bool ma = (a >> 30) & 1, mb = (b >> 30) & 1;
    if (ma && mb) return bad_order{0}(a, b);
    if (ma != mb) return mb;
    return a < b;
  }
};

// Under a comparator that is no strict weak order every sort returns and
// reads and writes nothing out of range (compute-sanitizer checks that).
// A plain call writes only input keys (docs/api.md). A checked call (whose sample check
// this comparator passes) writes a permutation of its input (the
// permutation guard, backends/cuda/sort/state.cuh): every position exactly
// once, each with its own key. Sizes of one tile, of 2-way and of 4-way passes.
BOOST_AUTO_TEST_CASE(sort_with_an_inconsistent_comparator) {
  const auto& line = lm::tuning::merge_sort[sm90_line];
  std::vector<long long> sizes = {1000, 100003};
  if (!quick()) sizes.insert(sizes.end(), {3000001LL, (1LL << line.four_way_log2) + 77});
  std::mt19937_64 rng(800);
  for (long long n : sizes) {
    // Keys with repeats; a third of them marked, never at a sampled position.
    std::vector<std::int32_t> keys(static_cast<std::size_t>(n));
    for (auto& k : keys) {
      k = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(n / 4 + 1));
      if (rng() % 3 == 0) k |= 1 << 30;
    }
    for (long long j = 0; j < lm::detail::sample_count(n); ++j) {
      keys[static_cast<std::size_t>(lm::detail::sample_position(j, n))] &= ~(1 << 30);
    }
    std::vector<std::int32_t> sorted_keys(keys);
    std::sort(sorted_keys.begin(), sorted_keys.end());
    std::vector<std::int32_t> positions(static_cast<std::size_t>(n));
    std::iota(positions.begin(), positions.end(), 0);
    // Output keys k with values (positions) p: how many values are no input
    // position, how many keys are not their position's, and how many
    // positions are written twice.
    struct bad_count {
      std::size_t no_position = 0, other_key = 0, repeats = 0;
    };
    auto count_bad = [&](const std::vector<std::int32_t>& k, const std::vector<std::int32_t>& p) {
      std::vector<char> seen(static_cast<std::size_t>(n), 0);
      bad_count bad;
      for (std::size_t i = 0; i < p.size(); ++i) {
        const auto j = static_cast<std::size_t>(p[i]);
        if (p[i] < 0 || p[i] >= n) {
          ++bad.no_position;
          continue;
        }
        if (k[i] != keys[j]) ++bad.other_key;
        if (seen[j]) ++bad.repeats;
        seen[j] = 1;
      }
      return bad;
    };
    // A plain call promises input keys only (its values are unspecified: a
    // partial block-sort tile's padding, which a bad comparator moves among
    // the real keys, has no input value; 72 of 2^26 + 77 positions on an
    // H200); a checked one a permutation.
    auto check_pairs = [&](const bad_count& bad, bool checked, const char* what) {
      if (checked) {
        BOOST_CHECK_MESSAGE(bad.no_position == 0, what << " (checked): " << bad.no_position << " values that are no input value");
        BOOST_CHECK_MESSAGE(bad.other_key == 0, what << " (checked): " << bad.other_key << " keys not their value's");
        BOOST_CHECK_MESSAGE(bad.repeats == 0, what << " (checked): " << bad.repeats << " values repeated");
      }
      return bad.repeats;
    };
    // Boxes: the tuned ones, and (checked keys and pairs) 4-way passes of
    // small tiles, which sizes under quick() reach no other way.
    for (int variant = 0; variant < 2; ++variant) {
      if (variant > 0 && n > 100003) continue;
      if (!in_shard()) continue;
      BOOST_TEST_CONTEXT("n " << n << " boxes " << variant) {
        for (bool checked : {false, true}) {
          if (variant > 0 && !checked) continue;
          auto run = [&](auto&& sort) {
            if (!checked) sort(lm::cuda::par);
            else if (variant == 0) sort(lm::cuda::par.checked());
            else sort(lm::cuda::par.with(sampled_four_way{}).checked());
            BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
          };
          std::size_t repeated = 0;
          {  // keys
            auto d = to_device(keys);
            run([&](const auto& policy) { lm::merge_sort(policy, d.begin(), d.end(), bad_when_marked{}); });
            auto out = to_host(d);
            std::sort(out.begin(), out.end());
            if (checked) {
              BOOST_CHECK_MESSAGE(out == sorted_keys, "checked merge_sort: the keys are no permutation of the input");
            } else {
              BOOST_CHECK_MESSAGE(std::all_of(out.begin(), out.end(),
                                              [&](std::int32_t x) {
                                                return std::binary_search(sorted_keys.begin(), sorted_keys.end(), x);
                                              }),
                                  "merge_sort: an output key that is no input key");
            }
          }
          {  // by key: values are positions
            auto d = to_device(keys);
            auto v = to_device(positions);
            run([&](const auto& policy) {
              lm::merge_sort_by_key(policy, d.begin(), d.end(), v.begin(), bad_when_marked{});
            });
            const auto dk = to_host(d);
            BOOST_CHECK_MESSAGE(std::all_of(dk.begin(), dk.end(),
                                            [&](std::int32_t x) {
                                              return std::binary_search(sorted_keys.begin(), sorted_keys.end(), x);
                                            }),
                                "merge_sort_by_key: an output key that is no input key");
            repeated += check_pairs(count_bad(dk, to_host(v)), checked, "merge_sort_by_key");
          }
          if (variant == 0) {  // indices (the block sort's positions), tuned boxes
            auto d = to_device(keys);
            thrust::device_vector<std::int32_t> idx(static_cast<std::size_t>(n));
            auto sort = [&](const auto& policy) {
              lm::merge_sort_indices(policy, d.begin(), d.end(), idx.begin(), bad_when_marked{});
            };
            if (checked) sort(lm::cuda::par.checked());
            else sort(lm::cuda::par);
            BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
            repeated += check_pairs(count_bad(to_host(d), to_host(idx)), checked, "merge_sort_indices");
          }
          // (How often the plain sort repeats elements here: what the guard
          // of the checked one undoes.)
          if (!checked) BOOST_TEST_MESSAGE("n " << n << " boxes " << variant << ": plain sorts repeated " << repeated);
        }
      }
    }
  }
}

// Comparators that are no strict weak order at all (a coin flip, <=, always
// true; always false is one): a plain sort returns and writes only input
// keys; a checked one throws std::invalid_argument (its sample check) or
// returns a permutation of its input.
BOOST_AUTO_TEST_CASE(sort_with_comparators_that_are_no_order) {
  for (long long n : {1000LL, 100003LL}) {
    std::vector<std::int32_t> keys(static_cast<std::size_t>(n));
    std::iota(keys.begin(), keys.end(), 1);
    std::mt19937_64 rng(801);
    std::shuffle(keys.begin(), keys.end(), rng);
    for (int kind = 0; kind < 4; ++kind) {
      BOOST_TEST_CONTEXT("n " << n << " comparator " << kind) {
        auto d = to_device(keys);
        lm::merge_sort(lm::cuda::par, d.begin(), d.end(), bad_order{kind});
        BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
        const auto out = to_host(d);
        BOOST_CHECK(std::all_of(out.begin(), out.end(), [&](std::int32_t x) { return x >= 1 && x <= n; }));
        auto c = to_device(keys);
        bool threw = false;
        try {
          lm::merge_sort(lm::cuda::par.checked(), c.begin(), c.end(), bad_order{kind});
        } catch (const std::invalid_argument&) {
          threw = true;
        }
        BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
        auto checked_out = to_host(c);
        if (threw) {
          BOOST_CHECK_MESSAGE(checked_out == keys, "a checked sort that threw changed its input");
        } else {
          std::sort(checked_out.begin(), checked_out.end());
          std::vector<std::int32_t> in(keys);
          std::sort(in.begin(), in.end());
          BOOST_CHECK_MESSAGE(checked_out == in, "checked merge_sort: no permutation of the input");
        }
      }
    }
  }
}

// No host wait inside a sort: the call returns while its stream is held, and
// a sort on a second stream completes meanwhile.
BOOST_AUTO_TEST_CASE(sorts_on_two_streams) {
  const auto keys = make_input<std::int32_t>(500000, distribution::random, shape::generic, 900, lm::less<>());
  const auto expected = reference_sort(keys, lm::less<>());
  auto d1 = to_device(keys), d2 = to_device(keys);
  // Load the kernels first (lazy loading may synchronize on first use).
  {
    auto w = to_device(keys);
    lm::merge_sort(lm::cuda::par, w.begin(), w.end());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  }
  cudaStream_t s1, s2;
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  {
    stream_gate gate;
    gate.close(s1);
    lm::merge_sort(lm::cuda::par.on(s1), d1.begin(), d1.end());
    const bool s1_held_after_call = cudaStreamQuery(s1) == cudaErrorNotReady;
    lm::merge_sort(lm::cuda::par.on(s2), d2.begin(), d2.end());
    const bool s2_done = cudaStreamSynchronize(s2) == cudaSuccess;
    const bool s1_still_held = cudaStreamQuery(s1) == cudaErrorNotReady;
    gate.open();
    BOOST_REQUIRE_EQUAL(cudaStreamSynchronize(s1), cudaSuccess);
    BOOST_CHECK_MESSAGE(s1_held_after_call, "lm::merge_sort waited for its stream");
    BOOST_CHECK(s2_done);
    BOOST_CHECK_MESSAGE(s1_still_held, "the sort on stream 2 waited for stream 1");
    BOOST_CHECK(!gate.timed_out());
  }
  check_same(to_host(d1), expected, "sort behind a held stream");
  check_same(to_host(d2), expected, "sort on a second stream");
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// 4-way passes of keys up to 4 bytes stage their four pieces by bulk copies
// on sm_90 (sort/pass.cuh): each piece lands at its source's offset in a
// 16-byte line, with a gap after it, and level 1 steps over the gaps
// (cta_merge_pieces). Every key size that is staged, in the 4-way boxes of
// the small sampled tiles and of the tuned keys' line (forced 4-way), keys
// only (the staged form) and by key (loaded through registers), each size
// at tile and group boundaries of both boxes. Random input starts pieces
// at every offset in their lines; sorted, reversed and few-distinct input
// leave pieces empty, so that a tile's first piece lies anywhere.
using staged_key_types = std::tuple<std::int8_t, std::uint16_t, std::int32_t, float>;

BOOST_AUTO_TEST_CASE_TEMPLATE(sort_staged_pieces_of_every_key_size, T, staged_key_types) {
  namespace cb = internals::cuda;
  using key_line = decltype(cb::merge_sort_table<std::int32_t, void>::template boxes<sm90_line>());
  using kbs = typename key_line::block_sort;
  using kmid = typename key_line::pass;
  sweep<T>(lm::cuda::par.with(sampled_four_way{}), 64 * 3, 64 * 5, lm::less<>(), "staged, boxes 64x3 64x5 4-way", 300);
  const long long t = kbs::nv;
  for (long long n : {4 * t + 1, 16 * t - 3, 17 * t + 5}) {
    for (distribution d : every_distribution) {
      std::ostringstream os;
      os << "staged, tuned keys' boxes 4-way, n=" << n << " " << name(d);
      check_sorts(lm::cuda::par.with(lm::launch_boxes<kbs, kmid, 4>{}), make_input<T>(n, d, shape::generic, 301 + n,
                                                                                        lm::less<>()),
                  lm::less<>(), os.str());
    }
  }
}

// A staged 4-way tile compares input keys only: where a side of level 1 is
// exhausted the walk reads the tile's first slot, which holds an input key
// even where no piece begins there (stage_ranges copies one there by hand).
// Before each sort, a sort of other keys (1 and 2, no inputs) in the same
// boxes fills the shared memory of the CTA slots. Sizes are whole
// block-sort tiles (a partial tile pads with its own keys anyway); sorted
// runs and reversed input leave a tile's first pieces empty.
BOOST_AUTO_TEST_CASE(sort_staged_pieces_compare_input_keys_only) {
  namespace cb = internals::cuda;
  using key_line = decltype(cb::merge_sort_table<std::int32_t, void>::template boxes<sm90_line>());
  using kbs = typename key_line::block_sort;
  using kmid = typename key_line::pass;
  thrust::device_vector<int> seen(1, 0);
  const input_keys_only_less comp{thrust::raw_pointer_cast(seen.data())};
  auto run = [&](const auto& policy, long long n, const char* what) {
    // 2 1 2 1 ...: unsorted, so that the sort runs every kernel.
    std::vector<std::int32_t> others(static_cast<std::size_t>(std::max(n, 1LL << 20)));
    for (std::size_t i = 0; i < others.size(); ++i) others[i] = i % 2 == 0 ? 2 : 1;
    std::mt19937_64 rng(static_cast<std::uint64_t>(n));
    for (int shape_id = 0; shape_id < 4; ++shape_id) {
      std::vector<std::int32_t> v(static_cast<std::size_t>(n));
      for (auto& x : v) x = static_cast<std::int32_t>(7000 + 7 * static_cast<std::int64_t>(rng() % (1 << 24)));
      if (shape_id == 1) std::sort(v.begin(), v.end());
      if (shape_id == 2) std::sort(v.begin(), v.end(), [](std::int32_t x, std::int32_t y) { return y < x; });
      if (shape_id == 3) {
        for (long long i = 0; i < n; i += 777) std::sort(v.begin() + i, v.begin() + std::min(n, i + 777));
      }
      const auto expected = reference_sort(v, std::less<>());
      auto other = to_device(others);
      lm::merge_sort(policy, other.begin(), other.end());
      auto d = to_device(v);
      seen[0] = 0;
      lm::merge_sort(policy, d.begin(), d.end(), comp);
      BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
      std::ostringstream os;
      os << what << " n=" << n << " shape " << shape_id;
      check_same(to_host(d), expected, os.str());
      BOOST_CHECK_MESSAGE(static_cast<int>(seen[0]) == 0, os.str() << ": the comparator was given a key that is no input");
    }
  };
  run(lm::cuda::par.with(sampled_four_way{}), 192 * 300, "boxes 64x3 64x5 4-way");
  run(lm::cuda::par.with(lm::launch_boxes<kbs, kmid, 4>{}), kbs::nv * 20, "tuned keys' boxes 4-way");
}

// Staged passes of keys up to 4 bytes store their tiles by bulk copies on
// sm_90 (sort/pass.cuh, bulk_store): the 16-byte lines of a tile's output
// in one copy, the elements before the first line and after the last by the
// threads. Passes write into the caller's buffer as well as into scratch, so
// the caller's range starts at every offset in a line here, with a key on
// each side of it that no sort may touch; sizes end tiles and groups of runs
// anywhere, in 2-way and 4-way boxes.
template <class T, class Policy>
void check_sort_at_every_offset(long long n, std::uint64_t seed, const std::string& what, const Policy& policy) {
  constexpr int per_line = static_cast<int>(16 / sizeof(T));
  const auto keys = make_input<T>(n, distribution::random, shape::generic, seed, lm::less<>());
  const auto expected = reference_sort(keys, lm::less<>());
  for (int offset = 0; offset < per_line; ++offset) {
    std::vector<T> h(static_cast<std::size_t>(n + per_line + 1));
    const T fence = static_cast<T>(1);
    std::fill(h.begin(), h.end(), fence);
    std::copy(keys.begin(), keys.end(), h.begin() + offset);
    auto d = to_device(h);
    lm::merge_sort(policy, d.begin() + offset, d.begin() + offset + n);
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    const auto got = to_host(d);
    std::ostringstream os;
    os << what << " n=" << n << " offset " << offset;
    check_same(std::vector<T>(got.begin() + offset, got.begin() + offset + n), expected, os.str());
    bool fences = true;
    for (int i = 0; i < offset; ++i) fences = fences && got[static_cast<std::size_t>(i)] == fence;
    for (std::size_t i = static_cast<std::size_t>(offset + n); i < got.size(); ++i) fences = fences && got[i] == fence;
    BOOST_CHECK_MESSAGE(fences, os.str() << ": a key outside the range was written");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(sort_tiles_stored_at_every_offset, T, staged_key_types) {
  namespace cb = internals::cuda;
  using key_line = decltype(cb::merge_sort_table<std::int32_t, void>::template boxes<sm90_line>());
  using kbs = typename key_line::block_sort;
  using kmid = typename key_line::pass;
  for (long long n : {64LL * 3 * 5 + 7, 64LL * 3 * 37 + 1, 64LL * 3 * 70 - 5}) {
    check_sort_at_every_offset<T>(n, 400 + n, "boxes 64x3 64x5 4-way", lm::cuda::par.with(sampled_four_way{}));
    check_sort_at_every_offset<T>(n, 500 + n, "boxes 64x3 64x5 2-way",
                                  lm::cuda::par.with(lm::launch_boxes<lm::launch_box<64, 3>, lm::launch_box<64, 5>, 2>{}));
  }
  const long long t = kbs::nv;
  for (long long n : {4 * t + 1, 17 * t + 5}) {
    check_sort_at_every_offset<T>(n, 600 + n, "tuned keys' boxes 4-way",
                                  lm::cuda::par.with(lm::launch_boxes<kbs, kmid, 4>{}));
  }
}

// No merge pass spills registers at the tuned boxes (issue: per-kernel budgets).
BOOST_AUTO_TEST_CASE(no_kernel_spills_at_the_tuned_boxes) {
  namespace cb = internals::cuda;
  auto for_types = [&](auto key, auto val, const char* what) {
    using K = decltype(key);
    using V = decltype(val);
    constexpr bool pairs = !std::is_same_v<V, char>;
    using table = cb::merge_sort_table<K, std::conditional_t<pairs, V, void>>;
    using boxes = decltype(table::template boxes<sm90_line>());
    using bs = typename boxes::block_sort;
    using mb = typename boxes::pass;
    using large = typename boxes::large_pass;  // the passes' box of large sorts
    using mid_sized = typename boxes::mid_pass;  // and of mid-sized ones
    using pass = cb::sort_pass<K, V, pairs, false>;
    cuda_test::check_no_local_memory(cb::block_sort_kernel<bs, K, V, pairs, false, V*, lm::less<>>, what);
    cuda_test::check_no_local_memory(cb::pass_kernel<mb, 4, pass, lm::less<>>, what);
    cuda_test::check_no_local_memory(cb::pass_kernel<mb, 2, pass, lm::less<>>, what);
    // (The large and mid-sized sorts' 4-way passes of 4-byte keys, 512x23
    // and 256x23, spill at their 32 registers (104 bytes at 256x23) and are
    // faster than 17 keys a thread that do not: 2^28 int32 keys 9.85 ms
    // against 10.32 for 512x17, 2^27 4.84 against 4.97 for 128x17, on an
    // H200.)
    if constexpr (pairs || sizeof(K) != 4) {
      cuda_test::check_no_local_memory(cb::pass_kernel<large, 4, pass, lm::less<>>, what);
      cuda_test::check_no_local_memory(cb::pass_kernel<mid_sized, 4, pass, lm::less<>>, what);
    }
    cuda_test::check_no_local_memory(cb::pass_kernel<large, 2, pass, lm::less<>>, what);
    cuda_test::check_no_local_memory(cb::pass_kernel<mid_sized, 2, pass, lm::less<>>, what);
    cuda_test::check_no_local_memory(cb::pass_partition_kernel<4, cb::sort_tiling<K>, lm::less<>>, what);
    cuda_test::check_no_local_memory(cb::pass_partition_kernel<2, cb::sort_tiling<K>, lm::less<>>, what);
    // (one_kernel_sort_kernel is left out: at 4 CTAs an SM (64 registers) it
    // spills 20 bytes and is faster than at 1 CTA with none, 0.078 against
    // 0.105 ms for 2^20 int32 keys on an H100.)
  };
  for_types(std::int32_t{}, char{}, "int32 keys");
  for_types(std::int32_t{}, std::int32_t{}, "int32 pairs");
  for_types(std::int64_t{}, char{}, "int64 keys");
  for_types(record{}, char{}, "record keys");
}

// The pool keeps a sort's scratch (as large as the input) for the next call,
// up to its bound (a quarter of the device's memory by default); a smaller
// bound gives the memory above it back at the next synchronization, a larger
// one keeps the scratch again, and release_pool_memory gives back everything
// unused at once. Each bound is checked by what the pool holds
// (cudaMemPoolAttrReservedMemCurrent), not by what pool_keep() says.
BOOST_AUTO_TEST_CASE(the_pool_keeps_memory_up_to_its_bound) {
  namespace cb = internals::cuda;
  int device = 0;
  BOOST_REQUIRE_EQUAL(cudaGetDevice(&device), cudaSuccess);
  std::size_t free_bytes = 0, total_bytes = 0;
  BOOST_REQUIRE_EQUAL(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const std::uint64_t quarter = total_bytes / 4;  // the documented default
  const long long n = 1LL << 25;  // 512 MiB of keys and values: as much scratch
  const std::uint64_t scratch = static_cast<std::uint64_t>(n) * 16;
  cudaMemPool_t pool = cb::memory_pool(device);
  BOOST_REQUIRE(pool != nullptr);
  auto reserved = [&] {
    std::uint64_t bytes = 0;
    BOOST_REQUIRE_EQUAL(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &bytes), cudaSuccess);
    return bytes;
  };
  thrust::device_vector<std::int64_t> k(n), v(n);
  auto sort = [&] {
    lm::merge_sort_by_key(lm::cuda::par, k.begin(), k.end(), v.begin());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  };
  sort();
  const std::uint64_t kept = reserved();
  BOOST_TEST_MESSAGE("pool: " << kept << " bytes reserved after the sort");
  BOOST_CHECK_GE(kept, scratch);  // kept for the next call
  sort();
  BOOST_CHECK_EQUAL(reserved(), kept);  // the second call maps nothing new

  // The default bound is a bound: a block of the pool larger than a quarter
  // of the device's memory, freed, goes back down to that quarter at the
  // next synchronization (a pool that kept everything would hold it all).
  const std::size_t block = static_cast<std::size_t>(quarter) + (std::size_t(256) << 20);
  BOOST_REQUIRE_EQUAL(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  if (free_bytes < block + (std::size_t(1) << 30)) {
    BOOST_TEST_MESSAGE("the default bound: " << free_bytes << " bytes free, too few for a block over it; not checked");
  } else {
    void* p = nullptr;
    BOOST_REQUIRE_EQUAL(cudaMallocFromPoolAsync(&p, block, pool, nullptr), cudaSuccess);
    BOOST_REQUIRE_EQUAL(cudaFreeAsync(p, nullptr), cudaSuccess);
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    BOOST_CHECK_LE(reserved(), quarter);
  }

  // set_pool_keep both ways: below the scratch, a sort leaves at most the
  // new bound; above it, the next sorts keep their scratch again.
  lm::cuda::set_pool_keep(64 << 20);
  sort();
  BOOST_CHECK_LE(reserved(), std::uint64_t(64) << 20);
  lm::cuda::set_pool_keep(static_cast<std::size_t>(quarter));
  sort();
  sort();
  BOOST_CHECK_GE(reserved(), scratch);
  lm::cuda::release_pool_memory();
  BOOST_CHECK_EQUAL(reserved(), 0u);
}

// On a GPU without memory pools the backend falls back to cudaMalloc and
// cudaFree (LIBMERGE_NO_MEMORY_POOLS=1 pretends to be one).
BOOST_AUTO_TEST_CASE(sorts_and_merges_without_memory_pools) {
  BOOST_REQUIRE_EQUAL(setenv("LIBMERGE_NO_MEMORY_POOLS", "1", 1), 0);
  const auto keys = make_input<std::int32_t>(300001, distribution::random, shape::generic, 950, lm::less<>());
  check_sorts(lm::cuda::par, keys, lm::less<>(), "without memory pools");
  std::vector<std::int32_t> a(keys.begin(), keys.begin() + 1000), b(keys.begin() + 1000, keys.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<std::int32_t> expected(keys.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), expected.begin());
  auto da = to_device(a), db = to_device(b);
  thrust::device_vector<std::int32_t> out(keys.size());
  lm::merge(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), out.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(out), expected, "merge without memory pools");
  BOOST_REQUIRE_EQUAL(unsetenv("LIBMERGE_NO_MEMORY_POOLS"), 0);
}
