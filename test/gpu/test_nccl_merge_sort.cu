// The NCCL merge sort on one GPU:
//  - one rank through NCCL (lm::nccl::par on a communicator of one GPU, and
//    the all-GPUs helper) gives exactly the single-GPU sort;
//  - the distributed steps (splitter search over one or two runs a rank,
//    exchange, the merge of the pieces by lm::multiway_merge) with 2 to 8
//    ranks, run by the loopback transport (every rank on this GPU, the
//    collectives as device copies): each rank's result against the matching
//    slice of std::stable_sort of all ranks' data, values = (rank, position)
//    for stability, on random, sorted, reversed, all-equal, duplicate-heavy
//    and skewed inputs (all keys on one rank, empty ranks), uneven shards,
//    lm::greater<>, shards off 16-byte boundaries, a comparator that is no
//    strict weak ordering, a host pointer on one rank, more than 2^31
//    elements in all, two ranks large enough that each local sort leaves
//    two runs (each rank exactly its slice of a reference sort), and the
//    exchange in 2 to 8 rounds (chunks);
//  - one rank failing at each allocation after the header exchange begins
//    (the loopback transport's test hook): the call throws at once, naming
//    the rank and the algorithm, every shard as it was or its own elements
//    sorted, as the docs say; values and comparators of other types on one
//    rank caught by the headers' check.
// Several GPUs through NCCL: test_nccl_multigpu.cu.
#define BOOST_TEST_MODULE nccl_merge_sort
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/logical.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>
#include <thrust/sequence.h>
#include <thrust/iterator/zip_iterator.h>

#include <libmerge/nccl.hpp>

#include "cuda_test_support.cuh"
#include "nccl_internals.cuh"

namespace lm = libmerge;
namespace nb = internals::nccl;
using cuda_test::quick;
using cuda_test::to_device;
using cuda_test::to_host;

namespace {

struct streams {
  std::vector<cudaStream_t> s;
  explicit streams(int k) : s(static_cast<std::size_t>(k)) {
    for (auto& x : s) BOOST_REQUIRE(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking) == cudaSuccess);
  }
  ~streams() {
    for (auto x : s) cudaStreamDestroy(x);
  }
};

// Sorts shards (keys, and values = rank << 32 | position) over `k` loopback
// ranks and checks every rank against std::stable_sort of the concatenation.
// With `offset`, every shard starts that many elements into its buffers (so
// off 16-byte boundaries: the exchange's aligned pieces), behind and before
// guard elements that must come through unchanged. `chunks`: the exchange's
// rounds (0: the library's choice, one round at these sizes); `taper`: each
// chunk's length over the one before (0: the library's); `early`: the early
// round (1 wherever two runs, 0 never, -1 the library's choice).
template <class K, class Comp = lm::less<>>
void check_loopback(const std::vector<std::vector<K>>& in, Comp comp = Comp(), bool with_values = true,
                    std::size_t offset = 0, int chunks = 0, double taper = 0, int early = -1) {
  const int k = static_cast<int>(in.size());
  streams st(k);
  std::vector<thrust::device_vector<K>> keys;
  std::vector<thrust::device_vector<std::uint64_t>> vals;
  std::vector<std::pair<K, std::uint64_t>> all;
  const K guard_key = static_cast<K>(77);
  const std::uint64_t guard_value = 0xdeadbeefull;
  auto guarded = [&](const auto& v, auto guard) {
    std::vector<std::decay_t<decltype(v[0])>> g(offset, guard);
    g.insert(g.end(), v.begin(), v.end());
    g.insert(g.end(), 16, guard);
    return g;
  };
  for (int r = 0; r < k; ++r) {
    keys.push_back(to_device(guarded(in[static_cast<std::size_t>(r)], guard_key)));
    std::vector<std::uint64_t> v(in[static_cast<std::size_t>(r)].size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = (std::uint64_t(r) << 32) | i;
      all.push_back({in[static_cast<std::size_t>(r)][i], v[i]});
    }
    vals.push_back(to_device(guarded(v, guard_value)));
  }
  std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return comp(a.first, b.first); });
  nb::loopback_transport t(st.s, "merge_sort");
  if (with_values) {
    std::vector<nb::shard_view<K, std::uint64_t>> views;
    for (int r = 0; r < k; ++r) {
      views.push_back({thrust::raw_pointer_cast(keys[static_cast<std::size_t>(r)].data()) + offset,
                       thrust::raw_pointer_cast(vals[static_cast<std::size_t>(r)].data()) + offset,
                       static_cast<lm::index_t>(in[static_cast<std::size_t>(r)].size())});
    }
    nb::sort_shards<true>(t, views, comp, "merge_sort_by_key", nullptr, nb::exchange_options{chunks, taper, early});
  } else {
    std::vector<nb::shard_view<K, char>> views;
    for (int r = 0; r < k; ++r) {
      views.push_back({thrust::raw_pointer_cast(keys[static_cast<std::size_t>(r)].data()) + offset, nullptr,
                       static_cast<lm::index_t>(in[static_cast<std::size_t>(r)].size())});
    }
    nb::sort_shards<false>(t, views, comp, "merge_sort", nullptr, nb::exchange_options{chunks, taper, early});
  }
  for (auto s : st.s) BOOST_REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  std::size_t at = 0;
  for (int r = 0; r < k; ++r) {
    auto got_k = to_host(keys[static_cast<std::size_t>(r)]);
    auto got_v = to_host(vals[static_cast<std::size_t>(r)]);
    const std::size_t n = in[static_cast<std::size_t>(r)].size();
    BOOST_REQUIRE_EQUAL(got_k.size(), n + offset + 16);
    for (std::size_t i = 0; i < got_k.size(); ++i) {
      if (i >= offset && i < offset + n) continue;
      BOOST_REQUIRE_MESSAGE(got_k[i] == guard_key && got_v[i] == guard_value, "rank " << r << ": guard " << i << " changed");
    }
    got_k = std::vector<K>(got_k.begin() + static_cast<std::ptrdiff_t>(offset), got_k.begin() + static_cast<std::ptrdiff_t>(offset + n));
    got_v = std::vector<std::uint64_t>(got_v.begin() + static_cast<std::ptrdiff_t>(offset),
                                       got_v.begin() + static_cast<std::ptrdiff_t>(offset + n));
    for (std::size_t i = 0; i < got_k.size(); ++i, ++at) {
      const bool key_ok = !comp(got_k[i], all[at].first) && !comp(all[at].first, got_k[i]);
      if (!key_ok || (with_values && got_v[i] != all[at].second)) {
        BOOST_FAIL("rank " << r << " of " << k << ", element " << i << ": key " << +got_k[i] << " value " << got_v[i]
                           << ", expected key " << +all[at].first << " value " << all[at].second);
      }
    }
  }
}

template <class K>
std::vector<K> random_keys(std::mt19937_64& g, std::size_t n, std::uint64_t range) {
  std::vector<K> v(n);
  for (auto& x : v) x = static_cast<K>(g() % range);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_rank_through_nccl_is_the_single_gpu_sort) {
  ncclComm_t comm{};
  int dev = 0;
  BOOST_REQUIRE(cudaSetDevice(0) == cudaSuccess);
  BOOST_REQUIRE(ncclCommInitAll(&comm, 1, &dev) == ncclSuccess);
  streams st(1);
  std::mt19937_64 g(1);
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(1000), std::size_t(300001)}) {
    const auto h = random_keys<int>(g, n, 1000);
    std::vector<std::uint32_t> hv(n);
    std::iota(hv.begin(), hv.end(), 0u);
    auto d = to_device(h);
    auto dv = to_device(hv);
    auto e = to_device(h);
    auto ev = to_device(hv);
    lm::merge_sort_by_key(lm::nccl::par(comm, st.s[0]), d.begin(), d.end(), dv.begin());
    lm::merge_sort_by_key(lm::cuda::par.on(st.s[0]), e.begin(), e.end(), ev.begin());
    BOOST_REQUIRE(cudaStreamSynchronize(st.s[0]) == cudaSuccess);
    BOOST_CHECK(to_host(d) == to_host(e));
    BOOST_CHECK(to_host(dv) == to_host(ev));
    // Keys only, through the helper that drives every local GPU.
    auto k = to_device(h);
    lm::nccl::merge_sort(std::vector<lm::nccl::shard<int>>{{comm, st.s[0], thrust::raw_pointer_cast(k.data()),
                                                             static_cast<lm::index_t>(n)}},
                         lm::greater<>());
    BOOST_REQUIRE(cudaStreamSynchronize(st.s[0]) == cudaSuccess);
    auto want = h;
    std::stable_sort(want.begin(), want.end(), std::greater<>());
    BOOST_CHECK(to_host(k) == want);
  }
  ncclCommDestroy(comm);
}

BOOST_AUTO_TEST_CASE(loopback_random_shards) {
  std::mt19937_64 g(2);
  for (int k : {2, 3, 4, 5, 8}) {
    for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(1000), quick() ? std::size_t(20000) : std::size_t(250001)}) {
      std::vector<std::vector<int>> in;
      for (int r = 0; r < k; ++r) in.push_back(random_keys<int>(g, n + static_cast<std::size_t>(r) * 13, 1u << 30));
      BOOST_TEST_CONTEXT("k " << k << " n " << n) { check_loopback(in); }
      // Duplicate-heavy: runs of equal keys across every cut.
      for (auto& v : in) v = random_keys<int>(g, v.size(), 5);
      BOOST_TEST_CONTEXT("k " << k << " n " << n << " five distinct keys") { check_loopback(in); }
    }
  }
}

// The exchange in several rounds, each chunk merged while the next travels
// (every rank's output cut into `chunks` pieces by the splitter search):
// chunks that hold nothing (shards shorter than the chunk count), one
// element, equal keys across every chunk boundary, keys only and
// lm::greater<>, shards off 16-byte boundaries, 2 to 8 ranks; equal chunks
// (taper 1), the default taper, and chunks that shrink to nothing (0.3 over
// 8 chunks: the last is 0.3^7 of the first).
BOOST_AUTO_TEST_CASE(loopback_exchange_in_chunks) {
  std::mt19937_64 g(12);
  for (int k : {2, 3, 4, 8}) {
    for (auto [chunks, taper] : {std::pair{2, 1.0}, std::pair{3, 0.0}, std::pair{4, 1.0}, std::pair{8, 0.3}}) {
      for (std::size_t n : {std::size_t(1), std::size_t(5), std::size_t(1000), quick() ? std::size_t(20000) : std::size_t(200003)}) {
        std::vector<std::vector<int>> in;
        for (int r = 0; r < k; ++r) in.push_back(random_keys<int>(g, n + static_cast<std::size_t>(r) * 7, 1u << 30));
        BOOST_TEST_CONTEXT("k " << k << " chunks " << chunks << " taper " << taper << " n " << n) {
          check_loopback(in, lm::less<>(), true, 0, chunks, taper);
          for (auto& v : in) v = random_keys<int>(g, v.size(), 3);
          check_loopback(in, lm::less<>(), true, 0, chunks, taper);
          check_loopback(in, lm::greater<>(), false, 3, chunks, taper);
        }
      }
    }
  }
  // Uneven shards: every chunk of an empty rank is empty.
  std::vector<std::vector<long long>> uneven{random_keys<long long>(g, 3001, 1ull << 40), {},
                                             random_keys<long long>(g, 17, 1ull << 40)};
  check_loopback(uneven, lm::less<>(), true, 1, 4);
}

BOOST_AUTO_TEST_CASE(loopback_structured_inputs) {
  std::mt19937_64 g(3);
  const std::size_t n = quick() ? 3000 : 100003;
  for (int k : {2, 4, 7}) {
    std::vector<std::vector<long long>> sorted, reversed, equal, interleaved;
    for (int r = 0; r < k; ++r) {
      std::vector<long long> a(n), b(n), c(n, 42), d(n);
      for (std::size_t i = 0; i < n; ++i) {
        a[i] = static_cast<long long>(r * n + i);                 // sorted across ranks
        b[i] = static_cast<long long>((k - r) * n - i);           // reversed across ranks
        d[i] = static_cast<long long>(i * static_cast<std::size_t>(k) + static_cast<std::size_t>(r));  // interleaved
      }
      sorted.push_back(a);
      reversed.push_back(b);
      equal.push_back(c);
      interleaved.push_back(d);
    }
    BOOST_TEST_CONTEXT("k " << k << " sorted") { check_loopback(sorted); }
    BOOST_TEST_CONTEXT("k " << k << " reversed") { check_loopback(reversed); }
    BOOST_TEST_CONTEXT("k " << k << " all equal") { check_loopback(equal); }
    BOOST_TEST_CONTEXT("k " << k << " interleaved") { check_loopback(interleaved); }
    BOOST_TEST_CONTEXT("k " << k << " keys only") { check_loopback(interleaved, lm::less<>(), false); }
    BOOST_TEST_CONTEXT("k " << k << " greater") { check_loopback(interleaved, lm::greater<>()); }
  }
}

// Shards that start off 16-byte boundaries (the exchange sends pieces
// widened to aligned addresses, as far as each array allows): keys of 1, 2,
// 4 and 8 bytes, values of 8, at offsets of 1 to 3 elements, and the pieces
// at the arrays' edges.
BOOST_AUTO_TEST_CASE(loopback_shards_off_16_byte_boundaries) {
  std::mt19937_64 g(8);
  for (int k : {2, 3, 4}) {
    for (std::size_t offset : {std::size_t(1), std::size_t(3)}) {
      std::vector<std::vector<int>> ints;
      std::vector<std::vector<unsigned char>> bytes;
      std::vector<std::vector<short>> shorts;
      std::vector<std::vector<long long>> longs;
      for (int r = 0; r < k; ++r) {
        const std::size_t n = 1000 + 37 * static_cast<std::size_t>(r);
        ints.push_back(random_keys<int>(g, n, 1u << 30));
        bytes.push_back(random_keys<unsigned char>(g, n, 256));
        shorts.push_back(random_keys<short>(g, n, 30000));
        longs.push_back(random_keys<long long>(g, n, 1ull << 40));
      }
      BOOST_TEST_CONTEXT("k " << k << " offset " << offset) {
        check_loopback(ints, lm::less<>(), true, offset);
        check_loopback(ints, lm::less<>(), false, offset);
        check_loopback(bytes, lm::less<>(), true, offset);
        check_loopback(shorts, lm::greater<>(), true, offset);
        check_loopback(longs, lm::less<>(), true, offset);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(loopback_skewed_and_uneven_shards) {
  std::mt19937_64 g(4);
  const std::size_t n = quick() ? 20000 : 400001;
  // All keys on one rank (first, middle, last), the others empty.
  for (int k : {2, 4}) {
    for (int full = 0; full < k; ++full) {
      std::vector<std::vector<unsigned>> in(static_cast<std::size_t>(k));
      in[static_cast<std::size_t>(full)] = random_keys<unsigned>(g, n, 1000000);
      BOOST_TEST_CONTEXT("k " << k << " all on rank " << full) { check_loopback(in); }
    }
  }
  // Shard lengths 0, 1, small, large; one key range per rank (skewed splits).
  for (int trial = 0; trial < 6; ++trial) {
    const int k = 2 + trial % 5;
    std::vector<std::vector<double>> in;
    for (int r = 0; r < k; ++r) {
      const std::size_t len = std::vector<std::size_t>{0, 1, 2, 100, n / 3, n}[g() % 6];
      std::vector<double> v(len);
      for (auto& x : v) x = static_cast<double>(g() % 1000) + (trial % 2 ? r * 1000.0 : 0.0);
      in.push_back(v);
    }
    BOOST_TEST_CONTEXT("trial " << trial) { check_loopback(in); }
  }
  // Every rank empty, and one element in all.
  check_loopback(std::vector<std::vector<int>>(3));
  check_loopback(std::vector<std::vector<int>>{{}, {5}, {}});
}

namespace {
struct coin {
  __host__ __device__ bool operator()(int a, int b) const { return ((a * 7 + b * 13) & 3) == 0; }
};
}  // namespace

// A comparator that is no strict weak ordering: the call returns or throws a
// clear error and never hangs; when it throws, nothing was exchanged.
BOOST_AUTO_TEST_CASE(loopback_inconsistent_comparator) {
  const int k = 4;
  const int n = 50000;
  std::vector<int> all(static_cast<std::size_t>(k * n));
  std::iota(all.begin(), all.end(), 1);
  std::mt19937_64 g(5);
  std::shuffle(all.begin(), all.end(), g);
  std::vector<thrust::device_vector<int>> keys;
  keys.reserve(k);  // views point into these: no reallocation
  std::vector<nb::shard_view<int, char>> views;
  for (int r = 0; r < k; ++r) {
    keys.push_back(to_device(std::vector<int>(all.begin() + r * n, all.begin() + (r + 1) * n)));
    views.push_back({thrust::raw_pointer_cast(keys.back().data()), nullptr, n});
  }
  streams st(k);
  nb::loopback_transport t(st.s, "merge_sort");
  bool threw = false;
  try {
    nb::sort_shards<false>(t, views, coin{}, "merge_sort");
  } catch (const std::runtime_error& e) {
    threw = true;
    BOOST_TEST_MESSAGE("inconsistent comparator: " << e.what());
    BOOST_CHECK(std::string(e.what()).find("strict weak ordering") != std::string::npos);
  }
  for (auto s : st.s) BOOST_REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  // What the API promises: when the call threw, nothing was exchanged (each
  // rank holds what the single-GPU sort with the same comparator makes of
  // its shard); when it returned, the ranks' keys together are a
  // permutation of the input.
  std::vector<int> out;
  for (int r = 0; r < k; ++r) {
    const auto h = to_host(keys[static_cast<std::size_t>(r)]);
    if (threw) {
      auto local = to_device(std::vector<int>(all.begin() + r * n, all.begin() + (r + 1) * n));
      lm::merge_sort(lm::cuda::par, local.begin(), local.end(), coin{});
      BOOST_CHECK(h == to_host(local));
    }
    out.insert(out.end(), h.begin(), h.end());
  }
  if (!threw) {
    std::sort(out.begin(), out.end());
    std::sort(all.begin(), all.end());
    BOOST_CHECK(out == all);
  }
}

// The same on 2 ranks whose local sorts leave two runs (pairs with 8-byte
// values have no one-kernel sort): when the call throws, each rank's shard
// is given back from its runs (restore_shard merges them) and holds only the
// rank's own (key, value) pairs, each as it was paired. (Not necessarily a
// permutation of them: with a comparator that is no strict weak ordering,
// the GPU sort's own output may repeat or leave out elements.)
BOOST_AUTO_TEST_CASE(loopback_inconsistent_comparator_two_runs) {
  const int k = 2;
  const int n = 60000;
  std::mt19937_64 g(15);
  std::vector<std::vector<int>> in;
  std::vector<thrust::device_vector<int>> keys;
  std::vector<thrust::device_vector<std::uint64_t>> vals;
  keys.reserve(k);
  vals.reserve(k);
  std::vector<nb::shard_view<int, std::uint64_t>> views;
  for (int r = 0; r < k; ++r) {
    in.push_back(random_keys<int>(g, n, 1u << 20));
    std::vector<std::uint64_t> v(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = (std::uint64_t(r) << 32) | static_cast<std::uint64_t>(i);
    keys.push_back(to_device(in.back()));
    vals.push_back(to_device(v));
    views.push_back({thrust::raw_pointer_cast(keys.back().data()), thrust::raw_pointer_cast(vals.back().data()), n});
  }
  streams st(k);
  nb::loopback_transport t(st.s, "merge_sort_by_key");
  bool threw = false;
  try {
    nb::sort_shards<true>(t, views, coin{}, "merge_sort_by_key");
  } catch (const std::runtime_error& e) {
    threw = true;
    BOOST_TEST_MESSAGE("inconsistent comparator, two runs: " << e.what());
  }
  for (auto s : st.s) BOOST_REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  std::vector<std::pair<int, std::uint64_t>> before, after;
  for (int r = 0; r < k; ++r) {
    const auto hk = to_host(keys[static_cast<std::size_t>(r)]);
    const auto hv = to_host(vals[static_cast<std::size_t>(r)]);
    std::vector<std::pair<int, std::uint64_t>> mine;
    for (int i = 0; i < n; ++i) {
      mine.push_back({hk[static_cast<std::size_t>(i)], hv[static_cast<std::size_t>(i)]});
      before.push_back({in[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)], (std::uint64_t(r) << 32) | static_cast<std::uint64_t>(i)});
    }
    if (threw) {  // the rank's own pairs: the value says where each came from, the key must be its own
      for (const auto& x : mine) {
        BOOST_REQUIRE_EQUAL(static_cast<int>(x.second >> 32), r);
        BOOST_REQUIRE_EQUAL(x.first, in[static_cast<std::size_t>(r)][static_cast<std::size_t>(x.second & 0xffffffffu)]);
      }
    }
    after.insert(after.end(), mine.begin(), mine.end());
  }
  if (!threw) {  // returned: a permutation of the input across ranks
    std::sort(before.begin(), before.end());
    std::sort(after.begin(), after.end());
    BOOST_CHECK(before == after);
  }
}

// A host pointer on one rank: every rank's call throws (the failing rank its
// own invalid_argument, the others that a rank failed), nothing hangs, and
// the other ranks' data is as it was.
BOOST_AUTO_TEST_CASE(loopback_host_pointer_on_one_rank) {
  const int k = 3;
  std::vector<int> host(1000, 1);
  std::vector<thrust::device_vector<int>> keys;
  keys.reserve(k);  // views point into these: no reallocation
  std::vector<nb::shard_view<int, char>> views;
  std::vector<std::vector<int>> before;
  std::mt19937_64 g(6);
  for (int r = 0; r < k; ++r) {
    before.push_back(random_keys<int>(g, 1000, 100));
    keys.push_back(to_device(before.back()));
    views.push_back({r == 1 ? host.data() : thrust::raw_pointer_cast(keys.back().data()), nullptr, 1000});
  }
  streams st(k);
  nb::loopback_transport t(st.s, "merge_sort");
  BOOST_CHECK_EXCEPTION(nb::sort_shards<false>(t, views, lm::less<>(), "merge_sort"), std::invalid_argument,
                        [](const std::invalid_argument& e) {
                          BOOST_TEST_MESSAGE(e.what());
                          return std::string(e.what()).find("host memory") != std::string::npos;
                        });
  for (auto s : st.s) BOOST_REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  for (int r : {0, 2}) {
    // The headers come before the local sorts: nothing sorted, nothing lost.
    BOOST_CHECK(to_host(keys[static_cast<std::size_t>(r)]) == before[static_cast<std::size_t>(r)]);
  }
}

namespace {
struct mix {
  __host__ __device__ std::uint64_t operator()(long long i) const {
    std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + 7;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
  }
};
struct key_of {
  __host__ __device__ int operator()(long long i) const { return static_cast<int>(mix()(i) >> 33); }
};
struct hash_of {
  __host__ __device__ std::uint64_t operator()(int k) const { return mix()(k); }
};

// What the docs say rank r holds after a sort of key_of(0 .. total): global
// positions [G_r, G_r + n_r) of the sorted keys (thrust::sort of all of them
// on this GPU, the reference).
void check_slices(const std::vector<thrust::device_vector<int>>& keys, long long total) {
  thrust::device_vector<int> want(static_cast<std::size_t>(total));
  thrust::transform(thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(total), want.begin(),
                    key_of());
  thrust::sort(want.begin(), want.end());
  long long at = 0;
  for (std::size_t r = 0; r < keys.size(); ++r) {
    BOOST_CHECK_MESSAGE(thrust::equal(keys[r].begin(), keys[r].end(), want.begin() + at),
                        "rank " << r << " holds other keys than positions " << at << ".. of the sorted order");
    at += static_cast<long long>(keys[r].size());
  }
}
}  // namespace

// More than 2^31 keys in all over three loopback ranks (global positions and
// counts beyond 2^31): each rank holds exactly its slice of the global
// sorted order (check_slices), every shard sorted, the ranks in order at
// their borders, and the same multiset of keys (sum of a hash of each key).
BOOST_AUTO_TEST_CASE(loopback_beyond_2_31_elements) {
  if (quick()) return;
  const std::vector<long long> n = {(1LL << 30) + 12345, (1LL << 30) + 1000, (1LL << 30) - 77};
  const int k = static_cast<int>(n.size());
  std::vector<thrust::device_vector<int>> keys;
  keys.reserve(n.size());  // views point into these: no reallocation
  std::vector<nb::shard_view<int, char>> views;
  std::uint64_t before = 0;
  long long base = 0;
  for (int r = 0; r < k; ++r) {
    const long long len = n[static_cast<std::size_t>(r)];
    keys.emplace_back(static_cast<std::size_t>(len));
    thrust::transform(thrust::counting_iterator<long long>(base), thrust::counting_iterator<long long>(base + len),
                      keys.back().begin(), key_of());
    base += len;
    before += thrust::transform_reduce(keys.back().begin(), keys.back().end(), hash_of(), std::uint64_t(0),
                                       thrust::plus<std::uint64_t>());
    views.push_back({thrust::raw_pointer_cast(keys.back().data()), nullptr, len});
  }
  streams st(k);
  nb::loopback_transport t(st.s, "merge_sort");
  nb::sort_shards<false>(t, views, lm::less<>(), "merge_sort");
  for (auto s : st.s) BOOST_REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  check_slices(keys, base);
  std::uint64_t after = 0;
  for (int r = 0; r < k; ++r) {
    auto& d = keys[static_cast<std::size_t>(r)];
    BOOST_CHECK(thrust::is_sorted(d.begin(), d.end()));
    after += thrust::transform_reduce(d.begin(), d.end(), hash_of(), std::uint64_t(0), thrust::plus<std::uint64_t>());
    if (r > 0) BOOST_CHECK(int(keys[static_cast<std::size_t>(r) - 1].back()) <= int(d.front()));
  }
  BOOST_CHECK_EQUAL(before, after);
}

namespace {
struct pair_hash {
  __host__ __device__ std::uint64_t operator()(const thrust::tuple<int, int>& t) const {
    return mix()(static_cast<long long>(thrust::get<0>(t)) * 0x100000001ll + thrust::get<1>(t));
  }
};
struct key_value_less {
  __host__ __device__ bool operator()(const thrust::tuple<int, int>& a, const thrust::tuple<int, int>& b) const {
    return thrust::get<0>(a) < thrust::get<0>(b) ||
           (thrust::get<0>(a) == thrust::get<0>(b) && thrust::get<1>(a) < thrust::get<1>(b));
  }
};
struct few_keys {
  __host__ __device__ int operator()(long long i) const { return static_cast<int>(mix()(i) % 1000); }
};

// check_slices for pairs (few_keys(i), i) of i = 0 .. total: rank r's
// (key, value) pairs are positions [G_r, G_r + n_r) of their stable sort by
// key (thrust::stable_sort_by_key, the reference).
void check_pair_slices(const std::vector<thrust::device_vector<int>>& keys,
                       const std::vector<thrust::device_vector<int>>& vals, long long total) {
  thrust::device_vector<int> want_k(static_cast<std::size_t>(total)), want_v(static_cast<std::size_t>(total));
  thrust::transform(thrust::counting_iterator<long long>(0), thrust::counting_iterator<long long>(total),
                    want_k.begin(), few_keys());
  thrust::sequence(want_v.begin(), want_v.end(), 0);
  thrust::stable_sort_by_key(want_k.begin(), want_k.end(), want_v.begin());
  long long at = 0;
  for (std::size_t r = 0; r < keys.size(); ++r) {
    const bool same = thrust::equal(keys[r].begin(), keys[r].end(), want_k.begin() + at) &&
                      thrust::equal(vals[r].begin(), vals[r].end(), want_v.begin() + at);
    BOOST_CHECK_MESSAGE(same, "rank " << r << " holds other pairs than positions " << at << ".. of the stable order");
    at += static_cast<long long>(keys[r].size());
  }
}
}  // namespace

// Two ranks with shards large enough for the separate-kernel sort: each
// rank's local sort leaves two runs where that saves a pass (an odd number of
// merge levels: 2^27 int32 keys with 4-way passes; 2^25 int32 pairs; every
// size below 2^26 keys, whose passes are 2-way) and the receiving rank merges
// the four pieces in one 4-way pass (lm::multiway_merge). Keys only: every shard sorted,
// the ranks in order at their border, the same multiset. Pairs with 1000
// distinct keys, values their global input position: (key, value) sorted on
// every rank and across the border (stability across runs and ranks), the
// same multiset of pairs.
BOOST_AUTO_TEST_CASE(loopback_two_runs_a_rank) {
  const int k = 2;
  for (bool pairs : {false, true}) {
    const long long big = pairs ? (quick() ? (1LL << 21) + 3 : (1LL << 25) + 11) : (quick() ? (1LL << 23) + 5 : (1LL << 27) + 7);
    const std::vector<long long> n = {big, big - 1000};
    std::vector<thrust::device_vector<int>> keys, vals;
    keys.reserve(n.size());
    vals.reserve(n.size());
    std::uint64_t before = 0;
    long long base = 0;
    for (int r = 0; r < k; ++r) {
      const long long len = n[static_cast<std::size_t>(r)];
      keys.emplace_back(static_cast<std::size_t>(len));
      vals.emplace_back(static_cast<std::size_t>(pairs ? len : 0));
      auto first = thrust::counting_iterator<long long>(base);
      if (pairs) {
        thrust::transform(first, first + len, keys.back().begin(), few_keys());
        thrust::sequence(vals.back().begin(), vals.back().end(), static_cast<int>(base));
        auto z = thrust::make_zip_iterator(thrust::make_tuple(keys.back().begin(), vals.back().begin()));
        before += thrust::transform_reduce(z, z + len, pair_hash(), std::uint64_t(0), thrust::plus<std::uint64_t>());
      } else {
        thrust::transform(first, first + len, keys.back().begin(), key_of());
        before += thrust::transform_reduce(keys.back().begin(), keys.back().end(), hash_of(), std::uint64_t(0),
                                           thrust::plus<std::uint64_t>());
      }
      base += len;
    }
    streams st(k);
    nb::loopback_transport t(st.s, "merge_sort");
    if (pairs) {
      std::vector<nb::shard_view<int, int>> views;
      for (int r = 0; r < k; ++r) {
        views.push_back({thrust::raw_pointer_cast(keys[static_cast<std::size_t>(r)].data()),
                         thrust::raw_pointer_cast(vals[static_cast<std::size_t>(r)].data()), n[static_cast<std::size_t>(r)]});
      }
      nb::sort_shards<true>(t, views, lm::less<>(), "merge_sort_by_key");
    } else {
      std::vector<nb::shard_view<int, char>> views;
      for (int r = 0; r < k; ++r) {
        views.push_back({thrust::raw_pointer_cast(keys[static_cast<std::size_t>(r)].data()), nullptr, n[static_cast<std::size_t>(r)]});
      }
      nb::sort_shards<false>(t, views, lm::less<>(), "merge_sort");
    }
    for (auto s : st.s) BOOST_REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
    if (pairs) {
      check_pair_slices(keys, vals, base);
    } else {
      check_slices(keys, base);
    }
    std::uint64_t after = 0;
    for (int r = 0; r < k; ++r) {
      BOOST_TEST_CONTEXT((pairs ? "pairs" : "keys") << ", rank " << r) {
        auto& d = keys[static_cast<std::size_t>(r)];
        if (pairs) {
          auto& v = vals[static_cast<std::size_t>(r)];
          auto z = thrust::make_zip_iterator(thrust::make_tuple(d.begin(), v.begin()));
          BOOST_CHECK(thrust::is_sorted(z, z + static_cast<long long>(d.size()), key_value_less()));
          after += thrust::transform_reduce(z, z + static_cast<long long>(d.size()), pair_hash(), std::uint64_t(0),
                                            thrust::plus<std::uint64_t>());
          if (r > 0) {
            const auto& pk = keys[static_cast<std::size_t>(r) - 1];
            const auto& pv = vals[static_cast<std::size_t>(r) - 1];
            BOOST_CHECK(key_value_less()(thrust::make_tuple(int(pk.back()), int(pv.back())),
                                         thrust::make_tuple(int(d.front()), int(v.front()))));
          }
        } else {
          BOOST_CHECK(thrust::is_sorted(d.begin(), d.end()));
          after += thrust::transform_reduce(d.begin(), d.end(), hash_of(), std::uint64_t(0), thrust::plus<std::uint64_t>());
          if (r > 0) BOOST_CHECK(int(keys[static_cast<std::size_t>(r) - 1].back()) <= int(d.front()));
        }
      }
    }
    BOOST_CHECK_EQUAL(before, after);
  }
}

// The early round (2 ranks whose local sorts leave two runs: the first runs'
// pieces travel while the second runs sort, cut by a search over the first
// runs alone, and the rounds after the exact search send what did not come
// early, into the receiver's mirror of the sender's first run). Halves of
// each shard hold keys of different ranges, so that the early cuts fall far
// from the exact ones: pieces that came early and are not used, pieces of
// which a part came early (the rest below and above it comes later), pieces
// that come whole afterwards; then random shards; the exchange after it in
// 1, 2 and 4 rounds; pairs with 8-byte values, keys alone, lm::greater, and
// shards off 16-byte boundaries. Each against std::stable_sort.
BOOST_AUTO_TEST_CASE(loopback_early_round) {
  std::mt19937_64 g(23);
  const std::size_t n = quick() ? 70001 : 300007;
  const auto& dev = internals::cuda::current_device("test");
  // The sizes make two runs (else the early round would not be taken).
  BOOST_REQUIRE_GT((internals::cuda::two_run_width<nb::local_policy, int, std::uint64_t, true, lm::less<>>(
                       dev, static_cast<lm::index_t>(n), "test")),
                   0);
  // layout[2 r + h]: where the keys of rank r's half h start (units of 10^6).
  const int layouts[][4] = {{2, 0, 3, 1}, {1, 2, 0, 3}, {0, 1, 2, 3}, {3, 2, 1, 0}, {0, 3, 1, 2}, {0, 0, 0, 0}};
  for (const auto& l : layouts) {
    std::vector<std::vector<int>> in;
    for (int r = 0; r < 2; ++r) {
      std::vector<int> v(n + static_cast<std::size_t>(r) * 999);
      for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = l[2 * r + (i >= v.size() / 2 ? 1 : 0)] * 1000000 + static_cast<int>(g() % 1000000);
      }
      in.push_back(std::move(v));
    }
    for (int chunks : {1, 2, 4}) {
      BOOST_TEST_CONTEXT("layout " << l[0] << l[1] << l[2] << l[3] << ", chunks " << chunks) {
        check_loopback(in, lm::less<>(), true, 0, chunks, 0, 1);
      }
    }
    BOOST_TEST_CONTEXT("layout " << l[0] << l[1] << l[2] << l[3] << ", greater, off 16-byte boundaries") {
      check_loopback(in, lm::greater<>(), true, 3, 2, 0, 1);
    }
  }
  // Few distinct keys: equal keys across every cut, early and exact.
  std::vector<std::vector<int>> few = {random_keys<int>(g, n, 5), random_keys<int>(g, n + 17, 5)};
  check_loopback(few, lm::less<>(), true, 0, 2, 0, 1);
  // Keys alone: the smallest of these sizes whose halves sort as two sorts
  // of the separate-kernel class (int32 keys of up to a few million sort in
  // one kernel).
  std::size_t big = 0;
  for (std::size_t size : {(std::size_t(1) << 23) + 5, (std::size_t(1) << 24) + 5, (std::size_t(1) << 25) + 5}) {
    if (big == 0 && internals::cuda::two_run_width<nb::local_policy, int, char, false, lm::less<>>(
                        dev, static_cast<lm::index_t>(size), "test") > 0) {
      big = size;
    }
  }
  BOOST_REQUIRE_GT(big, 0u);
  BOOST_TEST_MESSAGE("early round, keys alone: " << big << " a rank");
  std::vector<std::vector<int>> keys;
  for (int r = 0; r < 2; ++r) {
    std::vector<int> v(big - static_cast<std::size_t>(r) * 5);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = (i < v.size() / 2 ? r : 1 - r) * 1000000 + static_cast<int>(g() % 1000000);
    keys.push_back(std::move(v));
  }
  check_loopback(keys, lm::less<>(), false, 0, 2, 0, 1);
  check_loopback(keys, lm::less<>(), false, 1, 0, 0, -1);
}

namespace {

const char* step_name(nb::fault_at at) {
  switch (at) {
    case nb::fault_at::small: return "the protocol's buffers";
    case nb::fault_at::big: return "the exchange's buffer";
    case nb::fault_at::local_sort: return "the local sort's temporary storage";
    case nb::fault_at::merge: return "the merge's temporary storage";
    default: return "none";
  }
}

// What docs/multi-gpu-sort.md says rank r's shard holds after rank `failing`
// failed at `at`: as it was where the failure came before the rank sorted
// (every rank before the headers' check; the failing rank itself in its
// buffers or local sort), else its own pairs, sorted by key, stable (each
// rank restores them from its runs).
bool left_as_it_was(nb::fault_at at, int r, int failing) {
  return at == nb::fault_at::small || (r == failing && (at == nb::fault_at::big || at == nb::fault_at::local_sort));
}

// Rank `failing` of k fails at `at` (the loopback transport's test hook),
// on random pairs (values = rank << 32 | position) or keys alone: the call
// throws the failing rank's own CUDA error (an allocation's), its message
// naming the rank and the algorithm, well within the time a call may take;
// afterwards every shard holds what left_as_it_was says, and the GPU is
// left without errors.
void check_failure(int k, int failing, nb::fault_at at, std::size_t n, int chunks, int early, bool with_values) {
  std::mt19937_64 g(static_cast<std::uint64_t>(100 * k + failing));
  streams st(k);
  std::vector<std::vector<int>> in;
  std::vector<thrust::device_vector<int>> keys;
  std::vector<thrust::device_vector<std::uint64_t>> vals;
  keys.reserve(static_cast<std::size_t>(k));
  vals.reserve(static_cast<std::size_t>(k));
  std::vector<nb::shard_view<int, std::uint64_t>> pair_views;
  std::vector<nb::shard_view<int, char>> key_views;
  for (int r = 0; r < k; ++r) {
    in.push_back(random_keys<int>(g, n + static_cast<std::size_t>(r) * 11, 1000));
    std::vector<std::uint64_t> v(in.back().size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = (std::uint64_t(r) << 32) | i;
    keys.push_back(to_device(in.back()));
    vals.push_back(to_device(v));
    int* kp = thrust::raw_pointer_cast(keys.back().data());
    pair_views.push_back({kp, thrust::raw_pointer_cast(vals.back().data()), static_cast<lm::index_t>(v.size())});
    key_views.push_back({kp, nullptr, static_cast<lm::index_t>(v.size())});
  }
  const char* algorithm = with_values ? "merge_sort_by_key" : "merge_sort";
  nb::loopback_transport t(st.s, algorithm);
  t.fail = nb::injected_fault{failing, at};
  std::string what;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    if (with_values) {
      nb::sort_shards<true>(t, pair_views, lm::less<>(), algorithm, nullptr, nb::exchange_options{chunks, 0, early});
    } else {
      nb::sort_shards<false>(t, key_views, lm::less<>(), algorithm, nullptr, nb::exchange_options{chunks, 0, early});
    }
  } catch (const lm::cuda_error& e) {
    what = e.what();
    BOOST_CHECK_EQUAL(e.code(), cudaErrorMemoryAllocation);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST_MESSAGE(step_name(at) << ", rank " << failing << " of " << k << ", " << took << " s: " << what);
  BOOST_REQUIRE_MESSAGE(!what.empty(), "the call returned");
  const std::string named = std::string("libmerge::") + algorithm + ": rank " + std::to_string(failing) + " of " +
                            std::to_string(k) + ": ";
  BOOST_CHECK_MESSAGE(what.rfind(named, 0) == 0 && what.find("injected") != std::string::npos, what);
  BOOST_CHECK_LT(took, 30.0);  // (no deadline in the loopback: nothing may wait for one)
  for (auto s : st.s) BOOST_REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  BOOST_REQUIRE(cudaGetLastError() == cudaSuccess);
  for (int r = 0; r < k; ++r) {
    std::vector<std::pair<int, std::uint64_t>> want;
    for (std::size_t i = 0; i < in[static_cast<std::size_t>(r)].size(); ++i) {
      want.push_back({in[static_cast<std::size_t>(r)][i], (std::uint64_t(r) << 32) | i});
    }
    if (!left_as_it_was(at, r, failing)) {
      std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    const auto hk = to_host(keys[static_cast<std::size_t>(r)]);
    const auto hv = to_host(vals[static_cast<std::size_t>(r)]);
    bool same = hk.size() == want.size();
    for (std::size_t i = 0; same && i < want.size(); ++i) {
      same = hk[i] == want[i].first && (!with_values || hv[i] == want[i].second);
    }
    BOOST_CHECK_MESSAGE(same, step_name(at) << ": rank " << r << " holds other data than "
                                            << (left_as_it_was(at, r, failing) ? "its shard as it was" : "its own, sorted"));
  }
}

}  // namespace

// A failure on one rank at each allocation of the call, through the
// loopback transport's test hook: the protocol's buffers beside the
// headers' (reported in the rank's header: nothing sorted anywhere), the
// exchange's buffer and the local sort's temporary storage (reported
// beside the cuts: nothing exchanged), the last chunk's merge (reported in
// the words behind the merges, after earlier chunks' merges wrote shards).
// 2 ranks (two runs a rank; with and without the early round), 3 (one
// 4-way merge), 5 (a tree of merges); the first and the last rank failing;
// the exchange in 1 and 3 rounds; keys alone. (test_nccl_multigpu has the
// peers' side: their messages name the failing rank.)
BOOST_AUTO_TEST_CASE(loopback_a_rank_that_fails_after_the_headers) {
  const nb::fault_at steps[] = {nb::fault_at::small, nb::fault_at::big, nb::fault_at::local_sort,
                                nb::fault_at::merge};
  for (int k : {2, 3, 5}) {
    for (nb::fault_at at : steps) {
      for (int failing : {0, k - 1}) {
        for (int chunks : {1, 3}) {
          BOOST_TEST_CONTEXT(step_name(at) << ", rank " << failing << " of " << k << ", " << chunks << " rounds") {
            check_failure(k, failing, at, 20011, chunks, 0, true);
          }
        }
      }
    }
  }
  const std::size_t n = quick() ? 70001 : 300007;  // (two runs a rank: loopback_early_round)
  for (nb::fault_at at : steps) {
    BOOST_TEST_CONTEXT(step_name(at) << ", the early round") { check_failure(2, 1, at, n, 2, 1, true); }
    BOOST_TEST_CONTEXT(step_name(at) << ", keys alone") { check_failure(3, 1, at, 5003, 2, 0, false); }
  }
}

namespace {
// A rank's header as prepare_rank fills it for these types (an empty shard).
template <bool WithValues, class K, class V, class Comp>
nb::header header_for(cudaStream_t stream, int world) {
  nb::rank_state<K, V> s;
  s.stream = stream;
  nb::header h{};
  const nb::shard_view<K, V> empty{nullptr, nullptr, 0};
  nb::prepare_rank<WithValues, K, V, Comp>(s, &empty, h, world, "merge_sort_by_key");
  BOOST_REQUIRE(!s.error);
  return h;
}
}  // namespace

// Values and comparators of other types on one rank (keys: test_nccl_multigpu
// and here): each rank's header carries its types' codes (prepare_rank), and
// check_headers, which every rank runs on the same headers before any rank
// sorts, throws std::invalid_argument naming the rank and the algorithm. One
// process of loopback ranks passes one type for all, so the headers come
// from prepare_rank for each type and go to check_headers as the
// all-gather would; test_nccl_multigpu runs the whole call on several GPUs.
BOOST_AUTO_TEST_CASE(types_that_differ_across_ranks_are_caught_by_the_headers) {
  streams st(1);
  const cudaStream_t q = st.s[0];
  using u64 = std::uint64_t;
  // (Types this file sorts already: no instantiation of its own.)
  const nb::header pairs = header_for<true, int, u64, lm::less<>>(q, 3);
  const nb::header keys = header_for<false, int, char, lm::less<>>(q, 3);
  struct mismatch {
    nb::header rank0, rank2;
    const char* says;  // null: the same types
  };
  const mismatch cases[] = {
      {pairs, header_for<true, int, u64, lm::less<>>(q, 3), nullptr},
      {keys, header_for<false, int, char, lm::less<>>(q, 3), nullptr},
      {pairs, header_for<true, unsigned, u64, lm::less<>>(q, 3), "keys of another type"},
      {header_for<true, long long, u64, lm::less<>>(q, 3), header_for<true, double, u64, lm::less<>>(q, 3),
       "keys of another type"},  // (the same size)
      {pairs, header_for<true, int, int, lm::less<>>(q, 3), "values of another type"},
      {pairs, keys, "values of another type"},  // (keys alone)
      {keys, pairs, "values of another type"},
      {pairs, header_for<true, int, u64, lm::greater<>>(q, 3), "a comparator of another type"},
      {keys, header_for<false, int, char, coin>(q, 3), "a comparator of another type"},
  };
  const std::vector<nb::rank_state<int, u64>> none;  // (no local rank failed)
  for (const mismatch& c : cases) {
    const nb::header all[] = {c.rank0, c.rank0, c.rank2};
    if (c.says == nullptr) {
      BOOST_CHECK_NO_THROW(nb::check_headers(none, all, 3, "merge_sort_by_key"));
      continue;
    }
    BOOST_CHECK_EXCEPTION(nb::check_headers(none, all, 3, "merge_sort_by_key"), std::invalid_argument,
                          [&](const std::invalid_argument& e) {
                            BOOST_TEST_MESSAGE(e.what());
                            const std::string w = e.what();
                            return w.rfind("libmerge::merge_sort_by_key: rank 2 passed ", 0) == 0 &&
                                   w.find(c.says) != std::string::npos;
                          });
  }
}
