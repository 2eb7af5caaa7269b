// CUDA sorted_search and sorted_equality_count, each result checked against
// an independent std::lower_bound / std::upper_bound / std::equal_range oracle
// and against the serial backend (itself checked against the same oracle):
//   - both bounds x every (TypeA, TypeB) pair of search types (32 calls) on the
//     tuned launch box, at tile boundaries and at densities on both sides of
//     the sparse crossover, both directions (merge-path and per-needle
//     kernels), in the returning form and the counts form (device memory);
//   - the seeds' demonstrations, runs of equal keys across the tiles of three
//     launch boxes, the per-needle search at its own tile boundaries, empty
//     sides, needles outside the haystack;
//   - output types (32/64-bit, signed/unsigned, bool), mixed key types, custom
//     comparators, fancy iterators, policies, streams and allocators;
//   - the interpolating per-needle search on keys that mislead it (runs,
//     log-uniform, range ends, infinities, descending, unaligned haystacks);
//   - unsorted input and a comparator that is no strict weak order;
//   - sorted_equality_count against the width of std::equal_range.
// LIBMERGE_TEST_QUICK=1 (compute-sanitizer runs) keeps every case with
// smaller sizes. Under compute-sanitizer, which serializes streams, leave out
// sorted_search_is_asynchronous_and_streams_overlap.
#define BOOST_TEST_MODULE cuda_sorted_search
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <demo/seed_data.hpp>

#include "cuda_test_support.cuh"
#include "test_support.hpp"

namespace lm = libmerge;
using lm::bounds;
using lm::search_type;
using cuda_test::counting_allocator;
using cuda_test::in_shard;
using cuda_test::poison;
using cuda_test::quick;
using cuda_test::stream_gate;
using cuda_test::to_device;
using cuda_test::to_host;
using test_support::check_same;
using test_support::record;
using test_support::record_less;

namespace {

using test_support::name;

constexpr bool reports_matches(search_type t) { return t == search_type::match || t == search_type::index_match; }

// ---------------------------------------------------------------------------
// The oracle: for each needle, std::lower_bound and std::upper_bound in the
// haystack, and std::equal_range (which must agree with both): its width is
// the equality count, and a needle matches when it is not empty.
struct side_ref {
  std::vector<long long> lower, upper, equal;
  std::vector<char> match;
  long long matches = 0;
};

template <class N, class H, class Comp>
side_ref reference_side(const std::vector<N>& needles, const std::vector<H>& hay, Comp comp) {
  side_ref r;
  std::size_t inconsistent = 0;
  for (const N& x : needles) {
    const long long lo = std::lower_bound(hay.begin(), hay.end(), x, comp) - hay.begin();
    const long long hi = std::upper_bound(hay.begin(), hay.end(), x, comp) - hay.begin();
    const auto range = std::equal_range(hay.begin(), hay.end(), x, comp);
    const long long first = range.first - hay.begin(), last = range.second - hay.begin();
    inconsistent += first != lo || last != hi;
    r.lower.push_back(lo);
    r.upper.push_back(hi);
    r.equal.push_back(last - first);
    r.match.push_back(last > first ? 1 : 0);
    r.matches += last > first ? 1 : 0;
  }
  BOOST_TEST(inconsistent == 0u, "std::equal_range disagrees with std::lower_bound/upper_bound");
  return r;
}

// What a side of type Type writes for a bound and a match, spelled out here
// (not the library's encoder): index_match puts the flag at the top bit of
// the output type.
template <search_type Type, class Out>
Out encode(long long bound, bool match) {
  if constexpr (Type == search_type::match) {
    return static_cast<Out>(match ? 1 : 0);
  } else if constexpr (Type == search_type::index) {
    return static_cast<Out>(bound);
  } else {
    using U = std::make_unsigned_t<Out>;
    const U flag = static_cast<U>(U(1) << (std::numeric_limits<U>::digits - 1));
    return static_cast<Out>(static_cast<U>(static_cast<U>(bound) | (match ? flag : U(0))));
  }
}

// A side's expected output plus one guard element past its end: everything
// keeps the poison where the type is none, and the guard always does.
template <search_type Type, class Out>
std::vector<Out> expected_side(const side_ref& r, bool upper) {
  std::vector<Out> e(r.lower.size() + 1, poison<Out>());
  if constexpr (Type != search_type::none) {
    for (std::size_t i = 0; i < r.lower.size(); ++i) e[i] = encode<Type, Out>(upper ? r.upper[i] : r.lower[i], r.match[i] != 0);
  }
  return e;
}

// One search problem: host copies for the oracle and the serial backend,
// device copies, and the oracle's answers in both directions.
template <class KA, class KB = KA>
struct search_input {
  std::vector<KA> a;
  std::vector<KB> b;
  thrust::device_vector<KA> da;
  thrust::device_vector<KB> db;
  side_ref ra;  // A searched in B
  side_ref rb;  // B searched in A
  std::string what;
  template <class Comp>
  search_input(std::vector<KA> a_, std::vector<KB> b_, Comp comp, std::string what_)
      : a(std::move(a_)), b(std::move(b_)), da(a.begin(), a.end()), db(b.begin(), b.end()),
        ra(reference_side(a, b, comp)), rb(reference_side(b, a, comp)), what(std::move(what_)) {}
  long long na() const { return static_cast<long long>(a.size()); }
  long long nb() const { return static_cast<long long>(b.size()); }
};

// Counts for the counts form: device memory, poisoned (all bits set) before
// each call, read back after it.
lm::match_counts* device_counts() {
  static lm::match_counts* p = [] {
    lm::match_counts* q = nullptr;
    if (cudaMalloc(&q, sizeof(lm::match_counts)) != cudaSuccess) q = nullptr;
    return q;
  }();
  BOOST_REQUIRE(p != nullptr);
  return p;
}
void poison_counts(lm::match_counts* p) {
  BOOST_REQUIRE_EQUAL(cudaMemset(p, 0xff, sizeof(lm::match_counts)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
}
lm::match_counts read_counts(const lm::match_counts* p) {
  lm::match_counts m;
  BOOST_REQUIRE_EQUAL(cudaMemcpy(&m, p, sizeof m, cudaMemcpyDeviceToHost), cudaSuccess);
  return m;
}

void check_counts(const lm::match_counts& got, const lm::match_counts& expected, const std::string& what) {
  BOOST_TEST((got == expected), what << ": match_counts {" << got.a << ", " << got.b << "}, expected {"
                                     << expected.a << ", " << expected.b << "}");
}

// One search on the device with `policy` over device iterators da, db (the
// input's lengths), in the returning form and in the counts form, and on the
// serial backend; every output is checked against the oracle, including the
// guard element past its end and the untouched output of a `none` side.
template <bounds Bounds, search_type TA, search_type TB, class OutA, class OutB, class Policy, class KA, class KB,
          class DA, class DB, class Comp>
void check_search_on(const Policy& policy, const search_input<KA, KB>& in, DA da, DB db, Comp comp,
                     const std::string& how) {
  const long long na = in.na(), nb = in.nb();
  const std::string what = in.what + ", " + how + ", " + name(Bounds) + "<" + name(TA) + ", " + name(TB) + ">";
  // lower: A gets its lower bound into B, B its upper bound into A; upper: the reverse.
  constexpr bool a_upper = Bounds == bounds::upper;
  const auto ea = expected_side<TA, OutA>(in.ra, a_upper);
  const auto eb = expected_side<TB, OutB>(in.rb, !a_upper);
  const lm::match_counts em{reports_matches(TA) ? in.ra.matches : 0, reports_matches(TB) ? in.rb.matches : 0};

  {
    std::vector<OutA> sa(static_cast<std::size_t>(na) + 1, poison<OutA>());
    std::vector<OutB> sb(static_cast<std::size_t>(nb) + 1, poison<OutB>());
    const lm::match_counts sm = lm::sorted_search<Bounds, TA, TB>(lm::serial, in.a.begin(), in.a.end(), in.b.begin(),
                                                                  in.b.end(), sa.begin(), sb.begin(), comp);
    check_same(sa, ea, what + ": serial A");
    check_same(sb, eb, what + ": serial B");
    check_counts(sm, em, what + ": serial");
  }

  thrust::device_vector<OutA> oa(static_cast<std::size_t>(na) + 1, poison<OutA>());
  thrust::device_vector<OutB> ob(static_cast<std::size_t>(nb) + 1, poison<OutB>());
  const lm::match_counts dm =
      lm::sorted_search<Bounds, TA, TB>(policy, da, da + na, db, db + nb, oa.begin(), ob.begin(), comp);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(oa), ea, what + ": A");
  check_same(to_host(ob), eb, what + ": B");
  check_counts(dm, em, what);

  thrust::fill(oa.begin(), oa.end(), poison<OutA>());
  thrust::fill(ob.begin(), ob.end(), poison<OutB>());
  lm::match_counts* dc = device_counts();
  poison_counts(dc);
  lm::sorted_search<Bounds, TA, TB>(policy, da, da + na, db, db + nb, oa.begin(), ob.begin(), dc, comp);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(oa), ea, what + ": A (counts form)");
  check_same(to_host(ob), eb, what + ": B (counts form)");
  check_counts(read_counts(dc), em, what + " (counts form)");
}

template <bounds Bounds, search_type TA, search_type TB, class OutA, class OutB, class Policy, class KA, class KB,
          class Comp>
void check_search(const Policy& policy, search_input<KA, KB>& in, Comp comp, const std::string& how) {
  check_search_on<Bounds, TA, TB, OutA, OutB>(policy, in, in.da.begin(), in.db.begin(), comp, how);
}

// sorted_equality_count on the device and on the serial backend against the
// width of std::equal_range; the returned end, and the guard past it.
template <class Count, class Policy, class KA, class KB, class DA, class DB, class Comp>
void check_equality_count_on(const Policy& policy, const search_input<KA, KB>& in, DA da, DB db, Comp comp,
                             const std::string& how) {
  const long long na = in.na(), nb = in.nb();
  const std::string what = in.what + ", " + how + ", sorted_equality_count";
  std::vector<Count> expected(static_cast<std::size_t>(na) + 1, poison<Count>());
  for (long long i = 0; i < na; ++i) expected[static_cast<std::size_t>(i)] = static_cast<Count>(in.ra.equal[static_cast<std::size_t>(i)]);

  std::vector<Count> serial(static_cast<std::size_t>(na) + 1, poison<Count>());
  auto serial_end = lm::sorted_equality_count(lm::serial, in.a.begin(), in.a.end(), in.b.begin(), in.b.end(),
                                              serial.begin(), comp);
  BOOST_TEST((serial_end == serial.begin() + na), what << ": serial returned end");
  check_same(serial, expected, what + ": serial");

  thrust::device_vector<Count> counts(static_cast<std::size_t>(na) + 1, poison<Count>());
  auto end = lm::sorted_equality_count(policy, da, da + na, db, db + nb, counts.begin(), comp);
  BOOST_TEST((end == counts.begin() + na), what << ": returned end");
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(counts), expected, what);
}

template <class Count, class Policy, class KA, class KB, class Comp>
void check_equality_count(const Policy& policy, search_input<KA, KB>& in, Comp comp, const std::string& how) {
  check_equality_count_on<Count>(policy, in, in.da.begin(), in.db.begin(), comp, how);
}

// ---------------------------------------------------------------------------
// Inputs.

// n sorted keys drawn uniformly from [lo, hi].
template <class T>
std::vector<T> sorted_keys(long long n, long long lo, long long hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(lo + static_cast<long long>(rng() % span));
  std::sort(v.begin(), v.end());
  return v;
}

// How keys spread: five values (long runs, most needles match), over half the
// total size (about half match), over the whole int32 range (few match), or a
// single key on both sides.
enum class spread { few, half, wide, one };
const char* name(spread s) {
  switch (s) {
    case spread::few: return "few distinct";
    case spread::half: return "half range";
    case spread::wide: return "full range";
    case spread::one: return "one key";
  }
  return "?";
}

std::vector<int> sorted_ints(long long n, spread s, long long total, std::uint64_t seed) {
  switch (s) {
    case spread::few: return sorted_keys<int>(n, 0, 4, seed);
    case spread::half: return sorted_keys<int>(n, 0, std::max(1LL, total / 2), seed);
    case spread::wide: return sorted_keys<int>(n, INT_MIN, INT_MAX, seed);
    case spread::one: return std::vector<int>(static_cast<std::size_t>(n), 7);
  }
  return {};
}

std::string describe(long long na, long long nb, const char* what) {
  std::ostringstream os;
  os << "|A|=" << na << " |B|=" << nb << " " << what;
  return os.str();
}

search_input<int> int_input(long long na, long long nb, spread s, std::uint64_t seed) {
  return search_input<int>(sorted_ints(na, s, na + nb, seed), sorted_ints(nb, s, na + nb, seed + 7919), lm::less<>(),
                           describe(na, nb, name(s)));
}

// Sorted keys made of runs: run k is lengths[k] copies of first + k * step.
std::vector<int> runs(const std::vector<long long>& lengths, int first, int step) {
  std::vector<int> v;
  for (std::size_t k = 0; k < lengths.size(); ++k) {
    v.insert(v.end(), static_cast<std::size_t>(lengths[k]), first + static_cast<int>(k) * step);
  }
  return v;
}

using cuda_test::search_tuning;
using cuda_test::tuned_search;

constexpr search_type all_types[] = {search_type::none, search_type::index, search_type::match,
                                     search_type::index_match};

// f(bounds, TypeA, TypeB) as integral constants, for all 32 combinations.
template <class F, std::size_t... I>
void for_each_combination(F& f, std::index_sequence<I...>) {
  (f(std::integral_constant<bounds, (I < 16 ? bounds::lower : bounds::upper)>{},
     std::integral_constant<search_type, all_types[I / 4 % 4]>{}, std::integral_constant<search_type, all_types[I % 4]>{}),
   ...);
}
template <class F>
void for_each_combination(F&& f) {
  for_each_combination(f, std::make_index_sequence<32>{});
}

// Densities |B| / |A| to test: dense ones, both sides of the sparse ratio
// (and of the small haystacks' ratio), both sides of the switch from 4-ary to
// binary per-needle search, and sparse ones.
std::vector<long long> densities(int ratio) {
  const search_tuning t = tuned_search<int>();
  const int quaternary = t.quaternary;
  std::vector<long long> k = {4,  std::max(1, ratio - 1),        ratio, std::max(1, t.small_ratio - 1), t.small_ratio,
                              std::max(1, quaternary - 1), quaternary, 64,  1000,                        4096};
  std::sort(k.begin(), k.end());
  k.erase(std::unique(k.begin(), k.end()), k.end());
  return k;
}

// (|A|, |B|) pairs: empty sides, tiny, totals at the tuned tile boundaries
// split two ways, and densities on both sides of the sparse crossover (|A| =
// |B| / k) in both directions.
std::vector<std::pair<long long, long long>> sweep_pairs(long long nv, int ratio) {
  std::vector<std::pair<long long, long long>> p = {{0, 0}, {0, 1000}, {1000, 0}, {1, 1}, {5, 3}};
  const std::vector<long long> totals =
      quick() ? std::vector<long long>{nv - 1, nv + 1, 2 * nv + 1}
              : std::vector<long long>{nv - 1, nv, nv + 1, 2 * nv - 1, 2 * nv + 1, 7 * nv + 5};
  for (long long n : totals) {
    p.emplace_back(n / 3, n - n / 3);
    if (!quick()) p.emplace_back(n / 2, n - n / 2);
  }
  const long long l = quick() ? 1LL << 12 : 1LL << 20;
  p.emplace_back(l, l);
  for (long long k : densities(ratio)) {
    p.emplace_back(l / k, l);
    p.emplace_back(l, l / k);
  }
  return p;
}

// Writes a pattern over the shared memory of every SM (kept from one block to
// the next on real hardware), so that a kernel reading shared memory it never
// wrote sees garbage rather than zeros.
__global__ void scribble_kernel(unsigned pattern, int words) {
  extern __shared__ unsigned scribble_words[];
  volatile unsigned* w = scribble_words;
  for (int i = static_cast<int>(threadIdx.x); i < words; i += static_cast<int>(blockDim.x)) w[i] = pattern;
}
void scribble_shared_memory() {
  int device = 0, smem = 0, sms = 0;
  BOOST_REQUIRE_EQUAL(cudaGetDevice(&device), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaFuncSetAttribute(scribble_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
                      cudaSuccess);
  scribble_kernel<<<4 * sms, 256, static_cast<std::size_t>(smem)>>>(0xfffffff0u, smem / 4);
  BOOST_REQUIRE_EQUAL(cudaGetLastError(), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace

// ---------------------------------------------------------------------------
// Every (Bounds, TypeA, TypeB): 32 calls per input on the tuned launch box,
// int32 keys, uint32 outputs (index_match flag at bit 31). The pairs put the
// last tile at every boundary kind and run the per-needle search for each
// one-sided type in both directions (|A| = |B| / ratio and beyond; mirrored:
// TypeA none with |B| << |A|), and the merge-path search just below the ratio.
// A tuned one-sided search of fewer than 2^small_needles_log2 needles goes
// per needle at any density; the one-sided combinations run again with the
// tuned tile as the caller's box (cuda_test::dense_tile_policy), which takes
// the merge path there.
BOOST_AUTO_TEST_CASE(every_bounds_and_search_type_combination) {
  const search_tuning t = tuned_search<int>();
  BOOST_TEST_MESSAGE("tuned search tile: " << t.nv << " elements, sparse ratio " << t.ratio);
  std::uint64_t seed = 1000;
  const std::vector<spread> spreads =
      quick() ? std::vector<spread>{spread::few, spread::half} : std::vector<spread>{spread::few, spread::half, spread::wide};
  for (auto [na, nb] : sweep_pairs(t.nv, t.ratio)) {
    for (spread s : spreads) {
      seed += 2;
      if (!in_shard()) continue;
      auto in = int_input(na, nb, s, seed);
      for_each_combination([&](auto bnd, auto ta, auto tb) {
        constexpr search_type TA = decltype(ta)::value, TB = decltype(tb)::value;
        check_search<decltype(bnd)::value, TA, TB, std::uint32_t, std::uint32_t>(lm::cuda::par, in, lm::less<>(),
                                                                                 "tuned");
        if constexpr ((TA == search_type::none) != (TB == search_type::none)) {
          check_search<decltype(bnd)::value, TA, TB, std::uint32_t, std::uint32_t>(
              cuda_test::dense_tile_policy<int>(), in, lm::less<>(), "tuned tile as the caller's box");
        }
      });
    }
  }
}

// seeds/003's demonstrations: the lower bounds of the needles (the common
// form, int output) and index_match on both sides (uint32, bit 31), against
// the printouts, with the tuned box and a box whose tiles split the arrays.
BOOST_AUTO_TEST_CASE(seed_demonstrations) {
  const std::vector<int> needles(seed_data::search_needles.begin(), seed_data::search_needles.end());
  const std::vector<int> haystack(seed_data::search_haystack.begin(), seed_data::search_haystack.end());
  const std::vector<int> lower(seed_data::search_lower_bounds.begin(), seed_data::search_lower_bounds.end());
  const auto ref = test_support::reference_bounds(needles, haystack, false, lm::less<>());
  check_same(std::vector<int>(ref.begin(), ref.end()), lower, "printout vs std::lower_bound");

  auto dn = to_device(needles), dh = to_device(haystack);
  thrust::device_vector<int> out(needles.size() + 1, -1);
  auto end = lm::sorted_search<bounds::lower>(lm::cuda::par, dn.begin(), dn.end(), dh.begin(), dh.end(), out.begin());
  BOOST_TEST((end == out.begin() + static_cast<long long>(needles.size())));
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  auto got = to_host(out);
  BOOST_TEST(got.back() == -1, "written past the end");
  got.pop_back();
  check_same(got, lower, "lower bounds vs the printout");

  const std::vector<int> a(seed_data::search2_a.begin(), seed_data::search2_a.end());
  const std::vector<int> b(seed_data::search2_b.begin(), seed_data::search2_b.end());
  const std::vector<std::uint32_t> ea(seed_data::search2_a_lower_index_match.begin(),
                                      seed_data::search2_a_lower_index_match.end());
  const std::vector<std::uint32_t> eb(seed_data::search2_b_upper_index_match.begin(),
                                      seed_data::search2_b_upper_index_match.end());
  auto starred = [](const std::vector<std::uint32_t>& v) {
    return static_cast<long long>(std::count_if(v.begin(), v.end(), [](std::uint32_t x) { return (x >> 31) != 0; }));
  };
  search_input<int> in(a, b, lm::less<>(), "seeds/003 demonstration 2");
  auto run = [&](const auto& policy, const char* how) {
    thrust::device_vector<std::uint32_t> oa(a.size()), ob(b.size());
    const auto m = lm::sorted_search<bounds::lower, search_type::index_match, search_type::index_match>(
        policy, in.da.begin(), in.da.end(), in.db.begin(), in.db.end(), oa.begin(), ob.begin());
    check_same(to_host(oa), ea, std::string(how) + ": A vs the printout");
    check_same(to_host(ob), eb, std::string(how) + ": B vs the printout");
    check_counts(m, lm::match_counts{starred(ea), starred(eb)}, std::string(how) + ": starred entries");
    check_search<bounds::lower, search_type::index_match, search_type::index_match, std::uint32_t, std::uint32_t>(
        policy, in, lm::less<>(), how);
  };
  run(lm::cuda::par, "tuned");
  run(lm::cuda::par.with(lm::launch_box<64, 3>{}), "box 64x3");
}

// Caller's launch boxes: totals at this box's tile boundaries (computed from
// the box), few distinct keys and one key on both sides (every tie crosses
// tiles), runs of equal keys longer than a tile and ending on both sides of
// tile boundaries, and the per-needle search at and beyond the sparse ratio in
// both directions. Each input: lower and upper with index_match on both sides
// and with one side only, and sorted_equality_count.
template <class Box>
void check_box(std::uint64_t seed) {
  const auto policy = lm::cuda::par.with(Box{});
  const long long nv = Box::nv;
  const search_tuning t = tuned_search<int>();
  std::ostringstream os;
  os << "box " << Box::nt << "x" << Box::vt;
  const std::string box = os.str();
  auto run_all = [&](search_input<int>& in) {
    using st = search_type;
    check_search<bounds::lower, st::index_match, st::index_match, std::uint32_t, std::uint32_t>(policy, in, lm::less<>(), box);
    check_search<bounds::upper, st::index_match, st::index_match, std::uint32_t, std::uint32_t>(policy, in, lm::less<>(), box);
    check_search<bounds::lower, st::index, st::none, std::uint32_t, std::uint32_t>(policy, in, lm::less<>(), box);
    check_search<bounds::upper, st::index, st::none, std::uint32_t, std::uint32_t>(policy, in, lm::less<>(), box);
    check_search<bounds::lower, st::none, st::index, std::uint32_t, std::uint32_t>(policy, in, lm::less<>(), box);
    check_search<bounds::upper, st::none, st::index, std::uint32_t, std::uint32_t>(policy, in, lm::less<>(), box);
    check_equality_count<long long>(policy, in, lm::less<>(), box);
  };

  const std::vector<long long> totals =
      quick() ? std::vector<long long>{1, 3, nv - 1, nv, nv + 1, 2 * nv + 1} : cuda_test::tile_boundary_sizes(nv);
  for (long long n : totals) {
    for (auto [na, nb] : {std::pair<long long, long long>{n / 2, n - n / 2}, {n / 7, n - n / 7}}) {
      for (spread s : {spread::few, spread::one}) {
        auto in = int_input(na, nb, s, seed += 2);
        run_all(in);
      }
    }
  }

  // Runs of equal keys: B's values 0, 2, 4, ... and A's 0, 1, 2, ... so that
  // half of A's runs match; both sides' runs cross tile boundaries.
  const std::vector<long long> b_runs = {nv - 1, nv, nv + 1, 3 * nv + 2, 1, 2 * nv, 5, nv / 2};
  const std::vector<long long> a_runs = {2, nv + 3, 1, 2 * nv - 1, 4, nv, nv / 3, 7, 3 * nv};
  {
    search_input<int> in(runs(a_runs, 0, 1), runs(b_runs, 0, 2), lm::less<>(), "runs across tiles");
    run_all(in);
    search_input<int> swapped(runs(b_runs, 0, 2), runs(a_runs, 0, 1), lm::less<>(), "runs across tiles, swapped");
    run_all(swapped);
  }

  // Lopsided inputs: this box's merge-path search just below the sparse
  // ratio, the per-needle search (with its own tuned box) at and beyond it;
  // |A| = |B| / k and the mirror.
  const long long l = (quick() ? 8 : 200) * nv;
  const long long ratio = t.ratio_for(l, sizeof(int));
  for (long long k : {std::max(1LL, ratio - 1LL), ratio, 1000LL}) {
    for (spread s : {spread::few, spread::half}) {
      auto sparse_a = int_input(l / k, l, s, seed += 2);
      run_all(sparse_a);
      auto sparse_b = int_input(l, l / k, s, seed += 2);
      run_all(sparse_b);
    }
  }
}
BOOST_AUTO_TEST_CASE(launch_box_64x3) { check_box<lm::launch_box<64, 3>>(100); }
BOOST_AUTO_TEST_CASE(launch_box_128x7) { check_box<lm::launch_box<128, 7>>(200); }
BOOST_AUTO_TEST_CASE(launch_box_512x15) { check_box<lm::launch_box<512, 15>>(300); }

// Empty sides, and needles all below or all above the haystack.
BOOST_AUTO_TEST_CASE(empty_sides_and_needles_outside_the_haystack) {
  using st = search_type;
  auto run = [](search_input<int>& in) {
    check_search<bounds::lower, st::index_match, st::index_match, std::uint32_t, std::uint32_t>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_search<bounds::upper, st::index_match, st::index_match, std::uint32_t, std::uint32_t>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_search<bounds::lower, st::index, st::none, std::uint32_t, std::uint32_t>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_search<bounds::upper, st::none, st::index, std::uint32_t, std::uint32_t>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_equality_count<long long>(lm::cuda::par, in, lm::less<>(), "tuned");
  };
  const long long n = quick() ? 5000 : 100000;
  std::vector<int> hay(static_cast<std::size_t>(n));
  std::iota(hay.begin(), hay.end(), 0);
  std::vector<int> below(1000), above(1000), mixed;
  std::iota(below.begin(), below.end(), -2000);
  std::iota(above.begin(), above.end(), static_cast<int>(n));
  mixed = below;
  mixed.insert(mixed.end(), above.begin(), above.end());
  for (auto [a, b, what] : {std::make_tuple(std::vector<int>{}, hay, "A empty"), std::make_tuple(hay, std::vector<int>{}, "B empty"),
                            std::make_tuple(std::vector<int>{}, std::vector<int>{}, "both empty"),
                            std::make_tuple(below, hay, "needles below"), std::make_tuple(above, hay, "needles above"),
                            std::make_tuple(mixed, hay, "needles below and above"),
                            std::make_tuple(hay, below, "haystack below"), std::make_tuple(hay, above, "haystack above")}) {
    search_input<int> in(a, b, lm::less<>(), describe(static_cast<long long>(a.size()), static_cast<long long>(b.size()), what));
    run(in);
  }
  // Nothing touched by the returning form when both sides are empty; the
  // counts form writes zeros.
  thrust::device_vector<int> none;
  thrust::device_vector<std::uint32_t> guard(4, 77u);
  const auto m = lm::sorted_search<bounds::lower, st::index_match, st::index_match>(
      lm::cuda::par, none.begin(), none.end(), none.begin(), none.end(), guard.begin(), guard.begin() + 2);
  check_counts(m, lm::match_counts{}, "both empty");
  lm::match_counts* dc = device_counts();
  poison_counts(dc);
  lm::sorted_search<bounds::upper, st::match, st::index>(lm::cuda::par, none.begin(), none.end(), none.begin(),
                                                         none.end(), guard.begin(), guard.begin() + 2, dc);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_counts(read_counts(dc), lm::match_counts{}, "both empty (counts form)");
  check_same(to_host(guard), std::vector<std::uint32_t>(4, 77u), "outputs of empty searches untouched");
}

// Which kernel runs: the merge-path search takes temporary storage for its
// partitions, the per-needle search none, so with the counts form (no
// temporary for the counts) a counting allocator tells them apart. The
// per-needle search is for one-sided searches whose other side is at least
// `ratio` times longer, or, in a small haystack, of fewer than
// 2^small_needles_log2 needles; it must give the merge-path search's answers.
BOOST_AUTO_TEST_CASE(crossover_between_merge_path_and_per_needle_search) {
  using st = search_type;
  const search_tuning t = tuned_search<int>();
  std::uint64_t seed = 400;
  auto allocations = [&](auto call) {
    std::atomic<int> live{0}, calls{0};
    call(lm::cuda::par.with_allocator(counting_allocator{&live, &calls}));
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    BOOST_CHECK_EQUAL(live.load(), 0);
    return calls.load();
  };
  // A small haystack (every density), and one just large enough not to be
  // small, on both sides of the line's ratio.
  std::vector<std::pair<long long, long long>> cases;  // (|long side|, k)
  const long long small_l = std::min(quick() ? 1LL << 14 : 1LL << 21, t.large_hay() - 1);
  std::vector<long long> ks = densities(t.ratio);
  ks.insert(ks.begin(), 1);
  for (long long k : ks) cases.emplace_back(small_l, k);
  if (!quick() && t.small_log2_bytes > 0) {
    for (long long k : {std::max(1, t.ratio - 1), t.ratio}) cases.emplace_back(t.large_hay(), k);
  }
  // Both sides of the needle-count rule at |A| = |B| and |B| / 2.
  if (t.small_needles_log2 > 0) {
    const long long few = 1LL << t.small_needles_log2;
    for (long long needles : {few - 1, few}) {
      cases.emplace_back(needles, 1);
      cases.emplace_back(2 * needles, 2);
    }
  }
  for (auto [l, k] : cases) {
    const bool sparse = t.per_needle(l / k, l, sizeof(int));
    for (spread s : {spread::few, spread::half}) {
      auto long_b = int_input(l / k, l, s, seed += 2);  // A short
      auto long_a = int_input(l, l / k, s, seed += 2);  // B short
      const std::string path = sparse ? " (per-needle)" : " (merge path)";
      auto run_one_sided = [&](auto bnd, auto ta, auto tb, search_input<int>& in) {
        constexpr bounds B = decltype(bnd)::value;
        constexpr st TA = decltype(ta)::value, TB = decltype(tb)::value;
        thrust::device_vector<std::uint32_t> oa(in.a.size() + 1, 0u), ob(in.b.size() + 1, 0u);
        const int used = allocations([&](const auto& policy) {
          lm::sorted_search<B, TA, TB>(policy, in.da.begin(), in.da.end(), in.db.begin(), in.db.end(), oa.begin(),
                                       ob.begin(), device_counts());
        });
        BOOST_CHECK_MESSAGE(used == (sparse ? 0 : 1), in.what << ", " << name(B) << "<" << name(TA) << ", " << name(TB)
                                                             << ">: " << used << " allocations, expected the" << path
                                                             << " search");
        check_search<B, TA, TB, std::uint32_t, std::uint32_t>(lm::cuda::par, in, lm::less<>(), "tuned" + path);
      };
      using L = std::integral_constant<bounds, bounds::lower>;
      using U = std::integral_constant<bounds, bounds::upper>;
      using N = std::integral_constant<st, st::none>;
      using I = std::integral_constant<st, st::index>;
      using IM = std::integral_constant<st, st::index_match>;
      run_one_sided(L{}, I{}, N{}, long_b);   // A's lower bounds into the long B
      run_one_sided(U{}, IM{}, N{}, long_b);  // A's upper bounds
      run_one_sided(L{}, N{}, IM{}, long_a);  // B's upper bounds into the long A
      run_one_sided(U{}, N{}, I{}, long_a);   // B's lower bounds
      // Both sides written: always the merge path.
      thrust::device_vector<std::uint32_t> oa(long_b.a.size()), ob(long_b.b.size());
      const int used = allocations([&](const auto& policy) {
        lm::sorted_search<bounds::lower, st::index, st::match>(policy, long_b.da.begin(), long_b.da.end(),
                                                               long_b.db.begin(), long_b.db.end(), oa.begin(),
                                                               ob.begin(), device_counts());
      });
      BOOST_CHECK_MESSAGE(used == 1, long_b.what << ": both sides written, " << used << " allocations");
      // sorted_equality_count takes the same two paths.
      thrust::device_vector<long long> counts(long_b.a.size());
      const int used_count = allocations([&](const auto& policy) {
        lm::sorted_equality_count(policy, long_b.da.begin(), long_b.da.end(), long_b.db.begin(), long_b.db.end(),
                                  counts.begin());
      });
      BOOST_CHECK_MESSAGE(used_count == (sparse ? 0 : 1),
                          long_b.what << ": sorted_equality_count, " << used_count << " allocations" << path);
      check_equality_count<long long>(lm::cuda::par, long_b, lm::less<>(), "tuned" + path);
    }
  }
}

// The per-needle search at the boundaries of its own tiles (needles a
// block), for each one-sided type and both bounds, needles on either side,
// few distinct keys and a key range with half the needles matching.
BOOST_AUTO_TEST_CASE(per_needle_search_at_its_tile_boundaries) {
  using st = search_type;
  const search_tuning t = tuned_search<int>();
  BOOST_TEST_MESSAGE("per-needle search: " << t.needle_nv << " needles a block");
  std::uint64_t seed = 450;
  const long long nv = t.needle_nv;
  for (long long nn : {1LL, 2LL, nv - 1, nv, nv + 1, 2 * nv - 1, 3 * nv + 1, 16 * nv + 5}) {
    if (nn < 1) continue;
    const long long hay = std::max(20000LL, nn * t.ratio * 3);
    for (spread s : {spread::few, spread::half}) {
      auto needles_a = int_input(nn, hay, s, seed += 2);
      auto needles_b = int_input(hay, nn, s, seed += 2);
      check_search<bounds::lower, st::index, st::none, std::uint32_t, std::uint32_t>(lm::cuda::par, needles_a, lm::less<>(), "tuned");
      check_search<bounds::upper, st::index_match, st::none, std::uint32_t, std::uint32_t>(lm::cuda::par, needles_a, lm::less<>(), "tuned");
      check_search<bounds::lower, st::match, st::none, std::uint32_t, std::uint32_t>(lm::cuda::par, needles_a, lm::less<>(), "tuned");
      check_search<bounds::lower, st::none, st::index_match, std::uint32_t, std::uint32_t>(lm::cuda::par, needles_b, lm::less<>(), "tuned");
      check_search<bounds::upper, st::none, st::index, std::uint32_t, std::uint32_t>(lm::cuda::par, needles_b, lm::less<>(), "tuned");
      check_search<bounds::upper, st::none, st::match, std::uint32_t, std::uint32_t>(lm::cuda::par, needles_b, lm::less<>(), "tuned");
      check_equality_count<long long>(lm::cuda::par, needles_a, lm::less<>(), "tuned");
    }
  }
}

// Output value types: 32- and 64-bit, signed and unsigned; index_match sets
// the top bit of each (31 or 63), nothing else above the bound.
using output_types = std::tuple<int, unsigned, long long, unsigned long long>;
BOOST_AUTO_TEST_CASE_TEMPLATE(output_value_types, Out, output_types) {
  using st = search_type;
  std::uint64_t seed = 500 + sizeof(Out) + (std::is_signed_v<Out> ? 1 : 0);
  for (auto [na, nb] : {std::pair<long long, long long>{30000, 20000}, {100, 100000}, {100000, 100}}) {
    auto in = int_input(na, nb, spread::half, seed += 2);
    check_search<bounds::lower, st::index_match, st::index_match, Out, Out>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_search<bounds::upper, st::index_match, st::index_match, Out, Out>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_search<bounds::lower, st::index, st::match, Out, Out>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_search<bounds::upper, st::match, st::index, Out, Out>(lm::cuda::par, in, lm::less<>(), "tuned");
    // The flag bit spelled out: bit 31 or 63 of the raw value, and the bound below it.
    thrust::device_vector<Out> oa(in.a.size()), ob(in.b.size());
    lm::sorted_search<bounds::lower, st::index_match, st::index_match>(lm::cuda::par, in.da.begin(), in.da.end(),
                                                                     in.db.begin(), in.db.end(), oa.begin(), ob.begin());
    const auto ha = to_host(oa);
    constexpr int top = static_cast<int>(sizeof(Out)) * 8 - 1;
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < ha.size(); ++i) {
      const auto u = static_cast<unsigned long long>(static_cast<std::make_unsigned_t<Out>>(ha[i]));
      const unsigned long long expected = static_cast<unsigned long long>(in.ra.lower[i]) |
                                          (in.ra.match[i] ? 1ULL << top : 0ULL);
      wrong += u != expected;
    }
    BOOST_TEST(wrong == 0u, in.what << ": " << wrong << " raw values differ from bound | match << " << top);
  }
}

// A match output may be bool: flags 0 and 1, with the merge-path and the
// per-needle search, each side, both bounds. The outputs start all true and
// all false: an unwritten element cannot pass both times.
BOOST_AUTO_TEST_CASE(match_output_of_bool) {
  using st = search_type;
  std::uint64_t seed = 600;
  for (auto [na, nb] : {std::pair<long long, long long>{30000, 20000}, {100, 100000}, {100000, 100}}) {
    auto in = int_input(na, nb, spread::half, seed += 2);
    bool* oa = nullptr;
    bool* ob = nullptr;
    BOOST_REQUIRE_EQUAL(cudaMalloc(&oa, static_cast<std::size_t>(na)), cudaSuccess);
    BOOST_REQUIRE_EQUAL(cudaMalloc(&ob, static_cast<std::size_t>(nb)), cudaSuccess);
    auto host = [](const bool* p, long long n) {
      std::vector<char> h(static_cast<std::size_t>(n));
      BOOST_REQUIRE_EQUAL(cudaMemcpy(h.data(), p, h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      return h;
    };
    const std::vector<char>& ma = in.ra.match;
    const std::vector<char>& mb = in.rb.match;
    for (int fill : {0, 1}) {
      BOOST_REQUIRE_EQUAL(cudaMemset(oa, fill, static_cast<std::size_t>(na)), cudaSuccess);
      BOOST_REQUIRE_EQUAL(cudaMemset(ob, fill, static_cast<std::size_t>(nb)), cudaSuccess);
      const auto m = lm::sorted_search<bounds::upper, st::match, st::match>(lm::cuda::par, in.da.begin(), in.da.end(),
                                                                           in.db.begin(), in.db.end(), oa, ob);
      check_same(host(oa, na), ma, in.what + ": bool A, upper");
      check_same(host(ob, nb), mb, in.what + ": bool B, upper");
      check_counts(m, lm::match_counts{in.ra.matches, in.rb.matches}, in.what + ": bool, upper");
      BOOST_REQUIRE_EQUAL(cudaMemset(oa, fill, static_cast<std::size_t>(na)), cudaSuccess);
      BOOST_REQUIRE_EQUAL(cudaMemset(ob, fill, static_cast<std::size_t>(nb)), cudaSuccess);
      const auto ma_only = lm::sorted_search<bounds::lower, st::match, st::none>(
          lm::cuda::par, in.da.begin(), in.da.end(), in.db.begin(), in.db.end(), oa, nullptr);
      check_same(host(oa, na), ma, in.what + ": bool A alone, lower");
      check_counts(ma_only, lm::match_counts{in.ra.matches, 0}, in.what + ": bool A alone");
      const auto mb_only = lm::sorted_search<bounds::lower, st::none, st::match>(
          lm::cuda::par, in.da.begin(), in.da.end(), in.db.begin(), in.db.end(), nullptr, ob);
      check_same(host(ob, nb), mb, in.what + ": bool B alone, lower");
      check_counts(mb_only, lm::match_counts{0, in.rb.matches}, in.what + ": bool B alone");
    }
    cudaFree(oa);
    cudaFree(ob);
  }
}

// Mixed key types: int32 needles in an int64 haystack whose values lie beyond
// the int32 range (many of them equal to a needle modulo 2^32, so a search
// that narrowed them would find false matches), and the reverse. The results
// equal the serial backend's and std::'s, with the merge-path search and the
// per-needle one.
BOOST_AUTO_TEST_CASE(mixed_key_types_are_not_narrowed) {
  using st = search_type;
  std::mt19937_64 rng(700);
  const long long n = quick() ? 20000 : 300000;
  auto int32s = [&](long long count) {
    std::vector<int> v(static_cast<std::size_t>(count));
    for (auto& x : v) x = static_cast<int>(static_cast<long long>(rng() % 2001) - 1000);
    std::sort(v.begin(), v.end());
    return v;
  };
  // Each int32 key also appears shifted by +-2^32 and +-2^33.
  auto int64s = [&](const std::vector<int>& base) {
    std::vector<long long> v;
    for (int x : base) {
      switch (rng() % 4) {
        case 0: v.push_back(x); break;
        case 1: v.push_back(x + (1LL << 32)); break;
        case 2: v.push_back(x - (1LL << 32)); break;
        default: v.push_back(x + (static_cast<long long>(rng() % 5) - 2) * (1LL << 33)); break;
      }
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  const std::vector<std::pair<long long, long long>> sizes = {{n, n}, {n / 100, n}, {n, n / 100}};
  for (auto [na, nb] : sizes) {
    auto a32 = int32s(na);
    auto b64 = int64s(int32s(nb));
    search_input<int, long long> in(a32, b64, lm::less<>(), describe(na, nb, "int32 needles, int64 haystack"));
    // Most shifted haystack keys equal a needle modulo 2^32 but match none.
    BOOST_TEST(in.rb.matches < in.nb(), "some haystack keys must fail to match");
    check_search<bounds::lower, st::index_match, st::index_match, long long, long long>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_search<bounds::upper, st::index_match, st::index_match, long long, long long>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_search<bounds::lower, st::index_match, st::none, long long, long long>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_search<bounds::upper, st::none, st::index_match, long long, long long>(lm::cuda::par, in, lm::less<>(), "tuned");
    check_search<bounds::lower, st::index_match, st::index_match, long long, long long>(
        lm::cuda::par.with(lm::launch_box<64, 3>{}), in, lm::less<>(), "box 64x3");
    check_equality_count<long long>(lm::cuda::par, in, lm::less<>(), "tuned");

    auto a64 = int64s(int32s(na));
    auto b32 = int32s(nb);
    search_input<long long, int> rev(a64, b32, lm::less<>(), describe(na, nb, "int64 needles, int32 haystack"));
    check_search<bounds::lower, st::index_match, st::index_match, long long, long long>(lm::cuda::par, rev, lm::less<>(), "tuned");
    check_search<bounds::upper, st::index_match, st::index_match, long long, long long>(lm::cuda::par, rev, lm::less<>(), "tuned");
    check_search<bounds::lower, st::index_match, st::none, long long, long long>(lm::cuda::par, rev, lm::less<>(), "tuned");
    check_search<bounds::upper, st::none, st::index_match, long long, long long>(lm::cuda::par, rev, lm::less<>(), "tuned");
    check_equality_count<long long>(lm::cuda::par, rev, lm::less<>(), "tuned");
  }
}

// Comparators: by absolute value (x and -x are equal, so matches pair
// different values), lm::greater<> on descending inputs, and the 16-byte
// record with record_less (tags differ between equal keys).
struct abs_less {
  __host__ __device__ bool operator()(int x, int y) const { return (x < 0 ? -x : x) < (y < 0 ? -y : y); }
};

template <class T, class Comp>
void check_comparator(search_input<T>& in, Comp comp) {
  using st = search_type;
  check_search<bounds::lower, st::index_match, st::index_match, std::uint32_t, std::uint32_t>(lm::cuda::par, in, comp, "tuned");
  check_search<bounds::upper, st::index_match, st::index_match, std::uint32_t, std::uint32_t>(lm::cuda::par, in, comp, "tuned");
  check_search<bounds::lower, st::index_match, st::none, std::uint32_t, std::uint32_t>(lm::cuda::par, in, comp, "tuned");
  check_search<bounds::upper, st::none, st::index_match, std::uint32_t, std::uint32_t>(lm::cuda::par, in, comp, "tuned");
  check_equality_count<long long>(lm::cuda::par, in, comp, "tuned");
}

BOOST_AUTO_TEST_CASE(custom_comparators) {
  const long long n = quick() ? 20000 : 200000;
  std::uint64_t seed = 800;
  const std::vector<std::pair<long long, long long>> sizes = {{n, n - 1}, {n / 200, n}, {n, n / 200}};
  for (auto [na, nb] : sizes) {
    auto by_abs = [&](long long count) {
      auto v = sorted_keys<int>(count, -1000, 1000, seed += 2);
      std::stable_sort(v.begin(), v.end(), abs_less());
      return v;
    };
    auto abs_a = by_abs(na);
    auto abs_b = by_abs(nb);
    search_input<int> abs_in(abs_a, abs_b, abs_less(), describe(na, nb, "by absolute value"));
    check_comparator(abs_in, abs_less());

    auto descending = [&](long long count) {
      auto v = sorted_keys<int>(count, -5000, 5000, seed += 2);
      std::reverse(v.begin(), v.end());
      return v;
    };
    auto desc_a = descending(na);
    auto desc_b = descending(nb);
    search_input<int> desc_in(desc_a, desc_b, lm::greater<>(), describe(na, nb, "lm::greater<>"));
    check_comparator(desc_in, lm::greater<>());

    const std::uint64_t rec_seed = seed += 2;
    search_input<record> rec_in(
        test_support::generate_sorted<record>(na, test_support::distribution::few_distinct, rec_seed, record_less()),
        test_support::generate_sorted<record>(nb, test_support::distribution::random, rec_seed + 1, record_less()),
        record_less(), describe(na, nb, "records, record_less"));
    check_comparator(rec_in, record_less());
  }
}

// The interpolating per-needle search (numbers in their natural order, needles
// much fewer than the haystack keys), on the keys that mislead an
// interpolation: spread evenly, in long runs of equal keys (no guess sees into
// a run), log-uniform (every guess is skewed), at the ends of their type's
// range, floating point with infinities and signed zeros, descending under
// greater; haystacks that do not start on a 64-byte boundary and a haystack
// with NaNs. Every result against the oracle (NaNs: in range).
template <class T, class Comp, class DB>
void check_interpolating_on(search_input<T>& in, DB db, Comp comp, const std::string& how) {
  using st = search_type;
  check_search_on<bounds::lower, st::index_match, st::none, std::uint32_t, std::uint32_t>(lm::cuda::par, in,
                                                                                         in.da.begin(), db, comp, how);
  check_search_on<bounds::upper, st::index, st::none, std::uint32_t, std::uint32_t>(lm::cuda::par, in, in.da.begin(),
                                                                                   db, comp, how);
  check_equality_count_on<long long>(lm::cuda::par, in, in.da.begin(), db, comp, how);
}
template <class T, class Comp>
void check_interpolating(search_input<T>& in, Comp comp) {
  check_interpolating_on(in, in.db.begin(), comp, "interpolating");
}

BOOST_AUTO_TEST_CASE(interpolating_search_on_misleading_keys) {
  using st = search_type;
  // Haystacks that are not small (a small one is searched 4-ary), so that the
  // one-sided searches below interpolate.
  const long long nh = std::max(1LL << 20, tuned_search<int>().large_hay());
  std::mt19937_64 rng(1300);
  for (long long k : {64LL, 1000LL}) {
    const long long nn = nh / k;
    // Spread evenly over the whole int32 range and over half the total size
    // (about half the needles match); the mirror searches B's needles in A.
    for (spread s : {spread::wide, spread::half}) {
      auto in = int_input(nn, nh, s, rng());
      check_interpolating(in, lm::less<>());
      check_interpolating(in, cuda_test::thrust_less<int>());
      auto mirror = int_input(nh, nn, s, rng());
      check_search<bounds::lower, st::none, st::index_match, std::uint32_t, std::uint32_t>(lm::cuda::par, mirror,
                                                                                          lm::less<>(), "mirrored");
      check_search<bounds::upper, st::none, st::index, std::uint32_t, std::uint32_t>(lm::cuda::par, mirror,
                                                                                    lm::less<>(), "mirrored");
    }
    // Runs of about 2048 equal keys; every needle equals a run's key.
    auto stepped = [&](long long n) {
      std::vector<int> v(static_cast<std::size_t>(n));
      for (auto& x : v) x = static_cast<int>(rng() % static_cast<std::uint64_t>(nh)) / 2048 * 2048;
      std::sort(v.begin(), v.end());
      return v;
    };
    search_input<int> steps(stepped(nn), stepped(nh), lm::less<>(), describe(nn, nh, "runs of equal keys"));
    check_interpolating(steps, lm::less<>());
    // Log-uniform int64 keys: from 1 to 2^62, as many in each octave.
    auto log_uniform = [&](long long n) {
      std::vector<long long> v(static_cast<std::size_t>(n));
      for (auto& x : v) {
        const int octave = static_cast<int>(rng() % 62);
        x = (1LL << octave) + static_cast<long long>(rng() % (1ULL << octave));
      }
      std::sort(v.begin(), v.end());
      return v;
    };
    search_input<long long> logs(log_uniform(nn), log_uniform(nh), lm::less<>(), describe(nn, nh, "log-uniform int64"));
    check_interpolating(logs, lm::less<>());
    // The ends of the range: runs of LLONG_MIN and LLONG_MAX around keys
    // spread over the whole range, needles at both ends too.
    auto extremes = [&](long long n) {
      std::vector<long long> v(static_cast<std::size_t>(n));
      for (auto& x : v) {
        const auto r = rng();
        x = r % 8 == 0 ? LLONG_MIN : r % 8 == 1 ? LLONG_MAX : static_cast<long long>(rng());
      }
      std::sort(v.begin(), v.end());
      return v;
    };
    search_input<long long> ends(extremes(nn), extremes(nh), lm::less<>(), describe(nn, nh, "int64 range ends"));
    check_interpolating(ends, lm::less<>());
    // Unsigned 64-bit keys just below 2^64, and zeros.
    auto high = [&](long long n) {
      std::vector<unsigned long long> v(static_cast<std::size_t>(n));
      for (auto& x : v) x = rng() % 16 == 0 ? 0ULL : ~0ULL - rng() % (1ULL << 40);
      std::sort(v.begin(), v.end());
      return v;
    };
    search_input<unsigned long long> uhigh(high(nn), high(nh), lm::less<>(), describe(nn, nh, "uint64 near 2^64"));
    check_interpolating(uhigh, lm::less<>());
    // Floats: runs of -inf and +inf at the ends, -0.0 and 0.0 (equal) in the
    // middle, needles at the infinities and at both zeros.
    auto floats = [&](long long n) {
      std::vector<float> v(static_cast<std::size_t>(n));
      const float inf = std::numeric_limits<float>::infinity();
      for (auto& x : v) {
        const auto r = rng() % 16;
        x = r == 0 ? -inf : r == 1 ? inf : r == 2 ? -0.0f : r == 3 ? 0.0f
                                                               : static_cast<float>(static_cast<int>(rng() % 2000001) - 1000000) / 8;
      }
      std::sort(v.begin(), v.end());
      return v;
    };
    search_input<float> fl(floats(nn), floats(nh), lm::less<>(), describe(nn, nh, "floats with infinities and zeros"));
    check_interpolating(fl, lm::less<>());
    // Doubles spread log-uniformly over 1e-300 .. 1e300, both signs: the
    // difference of two keys overflows to infinity.
    auto wide_doubles = [&](long long n) {
      std::vector<double> v(static_cast<std::size_t>(n));
      std::uniform_real_distribution<double> exponent(-300.0, 300.0);
      for (auto& x : v) x = (rng() % 2 ? 1.0 : -1.0) * std::pow(10.0, exponent(rng));
      std::sort(v.begin(), v.end());
      return v;
    };
    search_input<double> dw(wide_doubles(nn), wide_doubles(nh), lm::less<>(), describe(nn, nh, "doubles 1e-300 .. 1e300"));
    check_interpolating(dw, lm::less<>());
    // Descending keys under lm::greater<> and Thrust's greater.
    auto descending = [&](long long n) {
      auto v = sorted_keys<int>(n, -3 * nh, 3 * nh, rng());
      std::reverse(v.begin(), v.end());
      return v;
    };
    search_input<int> desc(descending(nn), descending(nh), lm::greater<>(), describe(nn, nh, "descending"));
    check_interpolating(desc, lm::greater<>());
    check_interpolating(desc, cuda_test::thrust_greater<int>());
    // The haystack 1 to 3 keys past a 64-byte boundary (a device copy with
    // that many keys in front): the probes' blocks are found from the address.
    for (int offset : {1, 3}) {
      thrust::device_vector<int> shifted(static_cast<std::size_t>(nh + offset), INT_MIN);
      auto in = int_input(nn, nh, spread::half, rng());
      thrust::copy(in.db.begin(), in.db.end(), shifted.begin() + offset);
      check_interpolating_on(in, shifted.begin() + offset, lm::less<>(),
                             "haystack " + std::to_string(offset) + " keys past a 64-byte boundary");
    }
  }
  // NaNs in a float haystack leave it unordered: every bound stays in
  // [0, |B|] and nothing is read out of range (compute-sanitizer runs this).
  std::vector<float> hay(static_cast<std::size_t>(nh)), needles(static_cast<std::size_t>(nh / 64));
  for (auto& x : hay) x = static_cast<float>(rng() % 100000);
  std::sort(hay.begin(), hay.end());
  for (std::size_t i = 0; i < hay.size(); i += 97) hay[i] = std::numeric_limits<float>::quiet_NaN();
  for (auto& x : needles) x = static_cast<float>(rng() % 100000);
  std::sort(needles.begin(), needles.end());
  for (std::size_t i = 0; i < needles.size(); i += 50) needles[i] = std::numeric_limits<float>::quiet_NaN();
  auto dh = to_device(hay);
  auto dn = to_device(needles);
  thrust::device_vector<std::uint32_t> out(needles.size(), poison<std::uint32_t>());
  lm::sorted_search<bounds::lower, st::index, st::none>(lm::cuda::par, dn.begin(), dn.end(), dh.begin(), dh.end(),
                                                       out.begin(), nullptr);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = to_host(out);
  const auto bad = std::count_if(got.begin(), got.end(), [&](std::uint32_t v) { return v > static_cast<std::uint32_t>(nh); });
  BOOST_TEST(bad == 0, "NaN haystack: " << bad << " bounds out of [0, " << nh << "]");
}

// The partition kernels with their order check (sorted search's), at the
// boundaries of their blocks, where neighbouring blocks share a partition,
// and on both sides of the switch from a warp to a thread a partition: each
// partition against the host's merge path (A first on ties), and no block
// flagged for sorted input. The partitions start poisoned, so one that no
// block writes is caught.
BOOST_AUTO_TEST_CASE(partition_order_check_at_block_boundaries) {
  namespace cb = internals::cuda;
  const auto& dev = cb::current_device("test");
  const long long nv = 64;
  std::uint64_t seed = 1400;
  // A warp a partition up to warp_partitions_max (blocks of 32 warps), a
  // thread each above (blocks of 128).
  const long long wmax = cb::entry_of(dev).merge.warp_partitions_max;
  for (long long parts : {2LL, 3LL, 31LL, 32LL, 33LL, 63LL, 64LL, 1000LL, wmax, wmax + 1, wmax + 127, wmax + 128,
                          wmax + 129, 3 * wmax}) {
    const long long n = (parts - 1) * nv - 5;  // parts - 1 tiles, the last one short
    const long long na = n / 3, nb = n - na;
    auto in = int_input(na, nb, spread::half, seed += 2);
    std::vector<std::int64_t> expected(static_cast<std::size_t>(parts));
    std::int64_t i = 0, j = 0;
    for (long long d = 0; d <= n; ++d) {
      if (d % nv == 0 || d == n) expected[static_cast<std::size_t>(std::min(parts - 1, (d + nv - 1) / nv))] = i;
      if (d == n) break;
      if (j >= nb || (i < na && !(in.b[static_cast<std::size_t>(j)] < in.a[static_cast<std::size_t>(i)]))) ++i;
      else ++j;
    }
    const long long blocks = cb::plan_partitions(parts, true, dev).blocks;
    thrust::device_vector<std::int64_t> mp(static_cast<std::size_t>(parts), -1);
    thrust::device_vector<unsigned char> flags(static_cast<std::size_t>(blocks), 7);
    const int* a = thrust::raw_pointer_cast(in.da.data());
    const int* b = thrust::raw_pointer_cast(in.db.data());
    cb::launch_partitions<bounds::lower>(cb::search_merge<const int*, const int*>{a, b, na, nb}, nv, parts - 1,
                                         thrust::raw_pointer_cast(mp.data()), lm::less<>(), cudaStream_t{}, dev,
                                         "test", thrust::raw_pointer_cast(flags.data()));
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(mp), expected, std::to_string(parts) + " partitions");
    const auto f = to_host(flags);
    BOOST_TEST(std::count(f.begin(), f.end(), 0) == blocks, parts << " partitions: a block flagged sorted input");
  }
}

// Unsorted input, and a comparator that is no strict weak order (a hash of
// both arguments).
struct coin_flip {
  __host__ __device__ bool operator()(int a, int b) const {
    const unsigned h = static_cast<unsigned>(a) * 2654435761u ^ static_cast<unsigned>(b) * 40503u;
    return ((h >> 7) & 1u) != 0;
  }
};

template <search_type Type>
std::size_t out_of_range(const std::vector<std::uint32_t>& out, long long other) {
  std::size_t bad = 0;
  for (std::uint32_t v : out) {
    if constexpr (Type == search_type::index) {
      bad += static_cast<long long>(v) > other;
    } else if constexpr (Type == search_type::match) {
      bad += v > 1u;
    } else if constexpr (Type == search_type::index_match) {
      bad += static_cast<long long>(v & 0x7fffffffu) > other;
    } else {
      bad += v != poison<std::uint32_t>();
    }
  }
  return bad;
}

template <bounds Bounds, search_type TA, search_type TB, class Policy, class Comp>
void check_defined(const Policy& policy, thrust::device_vector<int>& a, thrust::device_vector<int>& b, Comp comp,
                   const std::string& what) {
  const long long na = static_cast<long long>(a.size()), nb = static_cast<long long>(b.size());
  thrust::device_vector<std::uint32_t> oa(a.size(), poison<std::uint32_t>()), ob(b.size(), poison<std::uint32_t>());
  scribble_shared_memory();
  const auto m = lm::sorted_search<Bounds, TA, TB>(policy, a.begin(), a.end(), b.begin(), b.end(), oa.begin(),
                                                   ob.begin(), comp);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const std::string w = what + ", " + name(Bounds) + "<" + name(TA) + ", " + name(TB) + ">";
  BOOST_TEST(out_of_range<TA>(to_host(oa), nb) == 0u, w << ": A outputs undefined or out of [0, " << nb << "]");
  BOOST_TEST(out_of_range<TB>(to_host(ob), na) == 0u, w << ": B outputs undefined or out of [0, " << na << "]");
  BOOST_TEST((m.a >= 0 && m.a <= na && m.b >= 0 && m.b <= nb), w << ": match counts {" << m.a << ", " << m.b << "}");
  if constexpr (!reports_matches(TA)) BOOST_TEST(m.a == 0);
  if constexpr (!reports_matches(TB)) BOOST_TEST(m.b == 0);
}

template <class Policy, class Comp>
void check_all_defined(const Policy& policy, thrust::device_vector<int>& a, thrust::device_vector<int>& b, Comp comp,
                       const std::string& what) {
  using st = search_type;
  check_defined<bounds::lower, st::index_match, st::index_match>(policy, a, b, comp, what);
  check_defined<bounds::upper, st::index_match, st::index_match>(policy, a, b, comp, what);
  check_defined<bounds::lower, st::index, st::none>(policy, a, b, comp, what);
  check_defined<bounds::upper, st::index, st::none>(policy, a, b, comp, what);
  check_defined<bounds::lower, st::none, st::index>(policy, a, b, comp, what);
  check_defined<bounds::upper, st::none, st::index>(policy, a, b, comp, what);
  thrust::device_vector<long long> counts(a.size(), -1);
  scribble_shared_memory();
  lm::sorted_equality_count(policy, a.begin(), a.end(), b.begin(), b.end(), counts.begin(), comp);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto h = to_host(counts);
  const long long nb = static_cast<long long>(b.size());
  const auto bad = std::count_if(h.begin(), h.end(), [&](long long c) { return c < 0 || c > nb; });
  BOOST_TEST(bad == 0, what << ": sorted_equality_count: " << bad << " counts out of [0, " << nb << "]");
}

// The inputs of the two cases below: unsorted keys with ties, and the same
// keys sorted; dense and lopsided sizes.
template <class F>
void for_each_unsorted_input(F&& f) {
  std::mt19937_64 rng(900);
  const long long big = quick() ? 20000 : 300001;
  const std::vector<std::pair<long long, long long>> sizes = {{1000, 1000}, {big, big / 3}, {50, big}, {big, 50}, {1, 1}};
  for (auto [na, nb] : sizes) {
    std::vector<int> a(static_cast<std::size_t>(na)), b(static_cast<std::size_t>(nb));
    for (auto& x : a) x = static_cast<int>(rng() % 64);
    for (auto& x : b) x = static_cast<int>(rng() % 64);
    auto da = to_device(a), db = to_device(b);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    auto dsa = to_device(a), dsb = to_device(b);
    f(da, db, dsa, dsb, describe(na, nb, ""));
  }
}

// Unsorted input and a comparator that is no strict weak order: every call
// returns and leaves no CUDA error, and nothing is read or written out of
// range (compute-sanitizer runs this binary).
BOOST_AUTO_TEST_CASE(unsorted_input_and_a_bad_comparator_stay_in_range) {
  using st = search_type;
  for_each_unsorted_input([](auto& da, auto& db, auto& dsa, auto& dsb, const std::string& sz) {
    auto calls = [&](const auto& policy, thrust::device_vector<int>& a, thrust::device_vector<int>& b, auto comp,
                     const std::string& what) {
      thrust::device_vector<std::uint32_t> oa(a.size()), ob(b.size());
      thrust::device_vector<long long> counts(a.size());
      auto af = a.begin(), al = a.end(), bf = b.begin(), bl = b.end();
      lm::sorted_search<bounds::lower, st::index_match, st::index_match>(policy, af, al, bf, bl, oa.begin(), ob.begin(), comp);
      lm::sorted_search<bounds::upper, st::index_match, st::index_match>(policy, af, al, bf, bl, oa.begin(), ob.begin(), comp);
      lm::sorted_search<bounds::lower, st::index, st::none>(policy, af, al, bf, bl, oa.begin(), ob.begin(), comp);
      lm::sorted_search<bounds::upper, st::index, st::none>(policy, af, al, bf, bl, oa.begin(), ob.begin(), comp);
      lm::sorted_search<bounds::lower, st::none, st::index>(policy, af, al, bf, bl, oa.begin(), ob.begin(), comp);
      lm::sorted_search<bounds::upper, st::none, st::index>(policy, af, al, bf, bl, oa.begin(), ob.begin(), comp);
      lm::sorted_search<bounds::lower, st::index_match, st::index_match>(policy, af, al, bf, bl, oa.begin(), ob.begin(),
                                                                       device_counts(), comp);
      lm::sorted_equality_count(policy, af, al, bf, bl, counts.begin(), comp);
      BOOST_CHECK_MESSAGE(cudaDeviceSynchronize() == cudaSuccess, what << ": a CUDA error");
    };
    calls(lm::cuda::par, da, db, lm::less<>(), sz + "unsorted, lm::less<>");
    calls(lm::cuda::par.with(lm::launch_box<64, 3>{}), da, db, lm::less<>(), sz + "unsorted, box 64x3");
    calls(lm::cuda::par, dsa, dsb, coin_flip(), sz + "sorted, coin_flip");
    calls(lm::cuda::par, da, db, coin_flip(), sz + "unsorted, coin_flip");
  });
}

// The same calls, and what they write: every output element is written and
// holds a defined value (a bound in [0, other length], a flag of 0 or 1, a
// count in [0, |B|]); the match counts lie in [0, length]. Shared memory is
// scribbled over first, so that a result slot no thread wrote shows up as
// garbage rather than as the zeros of a fresh GPU.
BOOST_AUTO_TEST_CASE(unsorted_input_and_a_bad_comparator_give_defined_output) {
  for_each_unsorted_input([](auto& da, auto& db, auto& dsa, auto& dsb, const std::string& sz) {
    check_all_defined(lm::cuda::par, da, db, lm::less<>(), sz + "unsorted, lm::less<>");
    check_all_defined(lm::cuda::par.with(lm::launch_box<64, 3>{}), da, db, lm::less<>(), sz + "unsorted, box 64x3");
    check_all_defined(lm::cuda::par, dsa, dsb, coin_flip(), sz + "sorted, coin_flip");
    check_all_defined(lm::cuda::par, da, db, coin_flip(), sz + "unsorted, coin_flip");
  });
}

// The report of inputs out of order (Python's searchsorted reads it instead of looking at its needles
// first): 0 for sorted inputs, whose bounds are right; 1 for a descent anywhere in either input, at the
// ends and at tile boundaries of the merge-path search; 0 where few needles are searched one at a time,
// which need no order among them, and whose bounds are then right all the same.
BOOST_AUTO_TEST_CASE(search_reports_either_input_out_of_order) {
  std::mt19937 rng(91);
  // 2^20 needles or more: fewer in a haystack under 32 MiB are searched one at a time (small_needles_log2).
  const long long n = quick() ? (1 << 20) + 5 : 3000000;
  auto sorted_keys = [&](long long m) {
    std::vector<int> v(m);
    for (auto& x : v) x = static_cast<int>(rng() % (4 * m));
    std::sort(v.begin(), v.end());
    return v;
  };
  auto run = [&](const std::vector<int>& a, const std::vector<int>& b, bool upper, const std::string& what) {
    thrust::device_vector<int> da = to_device(a), db = to_device(b);
    thrust::device_vector<long long> out(a.size(), -1);
    thrust::device_vector<unsigned> flag(1, 7u);
    const int* pa = thrust::raw_pointer_cast(da.data());
    const int* pb = thrust::raw_pointer_cast(db.data());
    long long* po = thrust::raw_pointer_cast(out.data());
    unsigned* pf = thrust::raw_pointer_cast(flag.data());
    const auto na = static_cast<long long>(a.size()), nb = static_cast<long long>(b.size());
    if (upper) {
      internals::cuda::search_reporting_descents<bounds::upper>(pa, na, pb, nb, po, pf);
    } else {
      internals::cuda::search_reporting_descents<bounds::lower>(pa, na, pb, nb, po, pf);
    }
    BOOST_REQUIRE_MESSAGE(cudaDeviceSynchronize() == cudaSuccess, what << ": a CUDA error");
    return std::make_pair(static_cast<unsigned>(flag[0]), to_host(out));
  };
  auto bounds_of = [](const std::vector<int>& a, const std::vector<int>& b, bool upper) {
    std::vector<long long> r(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      r[i] = (upper ? std::upper_bound(b.begin(), b.end(), a[i]) : std::lower_bound(b.begin(), b.end(), a[i])) -
             b.begin();
    }
    return r;
  };
  for (bool upper : {false, true}) {
    const std::string side = upper ? "upper" : "lower";
    const std::vector<int> a = sorted_keys(n), b = sorted_keys(n + 12345);
    const auto [flag, got] = run(a, b, upper, side + ", sorted");
    BOOST_TEST(flag == 0u, side << ", sorted: reported out of order");
    BOOST_TEST((got == bounds_of(a, b, upper)), side << ", sorted: bounds differ from std::");
    // One descent: at the ends, about the first tile's end (7936 keys a tile), and inside.
    const long long nv = 7936;
    for (long long at : {1ll, nv - 1, nv, nv + 1, n / 2, n - 1}) {
      for (int side_of : {0, 1}) {
        std::vector<int> x = side_of == 0 ? a : b;
        std::swap(x[at - 1], x[at]);
        if (x[at - 1] == x[at]) x[at - 1] = x[at] + 1;  // a real descent
        const std::string what = side + ", a descent in " + (side_of == 0 ? "A" : "B") + " at " + std::to_string(at);
        const auto r = side_of == 0 ? run(x, b, upper, what) : run(a, x, upper, what);
        BOOST_TEST(r.first == 1u, what << ": not reported");
      }
    }
    // Few needles in no order, searched one at a time: no report, right bounds.
    std::vector<int> few = sorted_keys(40);
    std::reverse(few.begin(), few.end());
    const auto [few_flag, few_got] = run(few, b, upper, side + ", few needles");
    BOOST_TEST(few_flag == 0u, side << ", few needles in no order: reported");
    BOOST_TEST((few_got == bounds_of(few, b, upper)), side << ", few needles: bounds differ from std::");
  }
}

// Fancy iterators: counting and transform iterators as needles or haystack,
// a discard iterator and nullptr for an output whose type is none.
struct times_three {
  __host__ __device__ long long operator()(long long x) const { return 3 * x; }
};

BOOST_AUTO_TEST_CASE(fancy_iterators) {
  using st = search_type;
  const long long n = quick() ? 20000 : 200000;
  std::vector<long long> count_a(static_cast<std::size_t>(n)), threes(static_cast<std::size_t>(n));
  std::iota(count_a.begin(), count_a.end(), -5LL);
  for (long long i = 0; i < n; ++i) threes[static_cast<std::size_t>(i)] = 3 * i;
  const auto dups = sorted_keys<long long>(n, -10, 2 * n, 1001);
  const auto sparse_needles = sorted_keys<long long>(n / 1000, -10, 3 * n, 1002);
  const thrust::counting_iterator<long long> counting(-5);
  const auto tripled = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), times_three{});

  // Counting needles (-5, -4, ...) into a haystack with repeats, and back.
  search_input<long long> c_in(count_a, dups, lm::less<>(), describe(n, n, "counting needles"));
  check_search_on<bounds::lower, st::index_match, st::index_match, long long, long long>(
      lm::cuda::par, c_in, counting, c_in.db.begin(), lm::less<>(), "counting A");
  check_search_on<bounds::upper, st::index_match, st::match, long long, long long>(
      lm::cuda::par, c_in, counting, c_in.db.begin(), lm::less<>(), "counting A");
  check_equality_count_on<long long>(lm::cuda::par, c_in, counting, c_in.db.begin(), lm::less<>(), "counting A");
  // A transformed haystack (0, 3, 6, ...), dense and sparse.
  search_input<long long> t_in(dups, threes, lm::less<>(), describe(n, n, "transform haystack"));
  check_search_on<bounds::lower, st::index_match, st::index_match, long long, long long>(
      lm::cuda::par, t_in, t_in.da.begin(), tripled, lm::less<>(), "transform B");
  check_search_on<bounds::upper, st::none, st::index_match, long long, long long>(
      lm::cuda::par, t_in, t_in.da.begin(), tripled, lm::less<>(), "transform B");
  check_equality_count_on<long long>(lm::cuda::par, t_in, t_in.da.begin(), tripled, lm::less<>(), "transform B");
  search_input<long long> ts_in(sparse_needles, threes, lm::less<>(), describe(n / 1000, n, "transform haystack"));
  check_search_on<bounds::lower, st::index_match, st::none, long long, long long>(
      lm::cuda::par, ts_in, ts_in.da.begin(), tripled, lm::less<>(), "transform B, sparse");
  check_search_on<bounds::upper, st::index_match, st::none, long long, long long>(
      lm::cuda::par, ts_in, ts_in.da.begin(), tripled, lm::less<>(), "transform B, sparse");
  check_equality_count_on<long long>(lm::cuda::par, ts_in, ts_in.da.begin(), tripled, lm::less<>(),
                                     "transform B, sparse");

  // The unwritten side as a discard iterator and as nullptr.
  const auto expected_a = expected_side<st::index_match, long long>(ts_in.ra, false);
  const auto expected_b = expected_side<st::index_match, long long>(t_in.rb, true);
  for (int variant = 0; variant < 2; ++variant) {
    const std::string how = variant == 0 ? "discard iterator" : "nullptr";
    thrust::device_vector<long long> oa(ts_in.a.size() + 1, poison<long long>());
    thrust::device_vector<long long> ob(t_in.b.size() + 1, poison<long long>());
    lm::match_counts ma, mb;
    if (variant == 0) {
      ma = lm::sorted_search<bounds::lower, st::index_match, st::none>(
          lm::cuda::par, ts_in.da.begin(), ts_in.da.end(), tripled, tripled + n, oa.begin(),
          thrust::make_discard_iterator());
      mb = lm::sorted_search<bounds::lower, st::none, st::index_match>(lm::cuda::par, t_in.da.begin(), t_in.da.end(),
                                                                      tripled, tripled + n,
                                                                      thrust::make_discard_iterator(), ob.begin());
    } else {
      ma = lm::sorted_search<bounds::lower, st::index_match, st::none>(
          lm::cuda::par, ts_in.da.begin(), ts_in.da.end(), tripled, tripled + n, oa.begin(), nullptr);
      mb = lm::sorted_search<bounds::lower, st::none, st::index_match>(lm::cuda::par, t_in.da.begin(), t_in.da.end(),
                                                                      tripled, tripled + n, nullptr, ob.begin());
    }
    check_same(to_host(oa), expected_a, "A with B " + how);
    check_same(to_host(ob), expected_b, "B with A " + how);
    check_counts(ma, lm::match_counts{ts_in.ra.matches, 0}, "A with B " + how);
    check_counts(mb, lm::match_counts{0, t_in.rb.matches}, "B with A " + how);
    // The counts form too.
    thrust::fill(oa.begin(), oa.end(), poison<long long>());
    lm::match_counts* dc = device_counts();
    poison_counts(dc);
    if (variant == 0) {
      lm::sorted_search<bounds::lower, st::index_match, st::none>(lm::cuda::par, ts_in.da.begin(), ts_in.da.end(),
                                                                 tripled, tripled + n, oa.begin(),
                                                                 thrust::make_discard_iterator(), dc);
    } else {
      lm::sorted_search<bounds::lower, st::index_match, st::none>(lm::cuda::par, ts_in.da.begin(), ts_in.da.end(),
                                                                 tripled, tripled + n, oa.begin(), nullptr, dc);
    }
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(oa), expected_a, "A with B " + how + " (counts form)");
    check_counts(read_counts(dc), lm::match_counts{ts_in.ra.matches, 0}, "A with B " + how + " (counts form)");
  }
}

// Every policy form and iterator kind: streams, Thrust's policies, a caller's
// allocator (every block given back), raw pointers and device_ptr.
BOOST_AUTO_TEST_CASE(policies_and_iterator_kinds) {
  using st = search_type;
  cudaStream_t s;
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const long long n = quick() ? 20000 : 100000;
  auto dense = int_input(n, n * 7 / 9, spread::half, 1100);
  auto sparse = int_input(n / 100, n * 3, spread::few, 1102);
  auto run = [&](const auto& policy, const char* how) {
    check_search<bounds::lower, st::index_match, st::index_match, std::uint32_t, std::uint32_t>(policy, dense, lm::less<>(), how);
    check_search<bounds::upper, st::index, st::none, std::uint32_t, std::uint32_t>(policy, sparse, lm::less<>(), how);
    check_search<bounds::lower, st::none, st::index, std::uint32_t, std::uint32_t>(policy, dense, lm::less<>(), how);
    check_equality_count<long long>(policy, dense, lm::less<>(), how);
    check_equality_count<long long>(policy, sparse, lm::less<>(), how);
  };
  run(lm::cuda::par.on(s), "lm::cuda::par.on(s)");
  run(thrust::device, "thrust::device");
  run(thrust::cuda::par.on(s), "thrust::cuda::par.on(s)");
  run(lm::cuda::par.on(s).with(lm::launch_box<128, 7>{}), "lm::cuda::par.on(s).with(128x7)");
  {
    std::atomic<int> live{0}, calls{0};
    run(lm::cuda::par.on(s).with_allocator(counting_allocator{&live, &calls}), "counting allocator");
    BOOST_CHECK_GT(calls.load(), 0);
    BOOST_CHECK_EQUAL(live.load(), 0);
  }

  // Raw device pointers and device_ptr, inputs and outputs.
  const auto ea = expected_side<st::index_match, std::uint32_t>(dense.ra, false);
  const auto eb = expected_side<st::index_match, std::uint32_t>(dense.rb, true);
  thrust::device_vector<std::uint32_t> oa(dense.a.size() + 1, poison<std::uint32_t>()),
      ob(dense.b.size() + 1, poison<std::uint32_t>());
  int* ra = thrust::raw_pointer_cast(dense.da.data());
  int* rb = thrust::raw_pointer_cast(dense.db.data());
  const auto m = lm::sorted_search<bounds::lower, st::index_match, st::index_match>(
      lm::cuda::par, ra, ra + n, rb, rb + dense.nb(), thrust::raw_pointer_cast(oa.data()),
      thrust::raw_pointer_cast(ob.data()));
  check_same(to_host(oa), ea, "raw pointers: A");
  check_same(to_host(ob), eb, "raw pointers: B");
  check_counts(m, lm::match_counts{dense.ra.matches, dense.rb.matches}, "raw pointers");
  thrust::fill(oa.begin(), oa.end(), poison<std::uint32_t>());
  thrust::fill(ob.begin(), ob.end(), poison<std::uint32_t>());
  thrust::device_ptr<int> pa = dense.da.data(), pb = dense.db.data();
  const auto m2 = lm::sorted_search<bounds::lower, st::index_match, st::index_match>(
      lm::cuda::par, pa, pa + n, pb, pb + dense.nb(), oa.data(), ob.data());
  check_same(to_host(oa), ea, "device_ptr: A");
  check_same(to_host(ob), eb, "device_ptr: B");
  check_counts(m2, lm::match_counts{dense.ra.matches, dense.rb.matches}, "device_ptr");
  thrust::device_vector<long long> counts(dense.a.size());
  lm::sorted_equality_count(lm::cuda::par, ra, ra + n, pb, pb + dense.nb(), thrust::raw_pointer_cast(counts.data()));
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(counts), dense.ra.equal, "sorted_equality_count, raw pointer and device_ptr");
  BOOST_CHECK_EQUAL(cudaStreamDestroy(s), cudaSuccess);
}

// The counts form never waits for its stream: it returns while the stream is
// held by an earlier kernel, with the counts not yet written (read on a
// second stream), and writes them in stream order once the stream is
// released. sorted_equality_count does not wait either. The returning form
// waits for its own stream only: it completes while another stream is held.
// (compute-sanitizer serializes streams: leave this case out under it, as
// the merge tests' stream cases are.)
BOOST_AUTO_TEST_CASE(sorted_search_is_asynchronous_and_streams_overlap) {
  using st = search_type;
  auto dense = int_input(300000, 200000, spread::half, 1200);
  auto sparse = int_input(1000, 300000, spread::half, 1202);
  lm::match_counts* dc = device_counts();
  // What the host sees on a second stream while the first is held.
  struct probe {
    lm::match_counts counts;
    long long first_count;
  };
  probe* seen = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMallocHost(&seen, sizeof(probe)), cudaSuccess);
  thrust::device_vector<std::uint32_t> oa(dense.a.size()), ob(dense.b.size());
  thrust::device_vector<long long> counts(dense.a.size());

  auto search = [&](const auto& policy) {
    lm::sorted_search<bounds::lower, st::index_match, st::index_match>(policy, dense.da.begin(), dense.da.end(),
                                                                     dense.db.begin(), dense.db.end(), oa.begin(),
                                                                     ob.begin(), dc);
  };
  auto sparse_search = [&](const auto& policy) {
    lm::sorted_search<bounds::upper, st::index_match, st::none>(policy, sparse.da.begin(), sparse.da.end(),
                                                              sparse.db.begin(), sparse.db.end(), oa.begin(),
                                                              nullptr, dc);
  };
  auto equality_count = [&](const auto& policy, search_input<int>& in) {
    lm::sorted_equality_count(policy, in.da.begin(), in.da.end(), in.db.begin(), in.db.end(), counts.begin());
  };
  // Load every kernel first: lazy module loading may synchronize the context
  // the first time a kernel is used, which would wait for the held stream.
  search(lm::cuda::par);
  sparse_search(lm::cuda::par);
  equality_count(lm::cuda::par, dense);
  equality_count(lm::cuda::par, sparse);
  lm::sorted_search<bounds::lower, st::index_match, st::index_match>(lm::cuda::par, dense.da.begin(), dense.da.end(),
                                                                   dense.db.begin(), dense.db.end(), oa.begin(),
                                                                   ob.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);

  cudaStream_t s1, s2;
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  auto held_call = [&](const char* what, auto call) {
    thrust::fill(oa.begin(), oa.end(), poison<std::uint32_t>());
    thrust::fill(ob.begin(), ob.end(), poison<std::uint32_t>());
    thrust::fill(counts.begin(), counts.end(), -1LL);
    poison_counts(dc);
    stream_gate gate;
    gate.close(s1);
    call(lm::cuda::par.on(s1));
    const bool held_after_call = cudaStreamQuery(s1) == cudaErrorNotReady;
    BOOST_REQUIRE_EQUAL(cudaMemcpyAsync(&seen->counts, dc, sizeof(lm::match_counts), cudaMemcpyDeviceToHost, s2),
                        cudaSuccess);
    BOOST_REQUIRE_EQUAL(cudaMemcpyAsync(&seen->first_count, thrust::raw_pointer_cast(counts.data()), sizeof(long long),
                                        cudaMemcpyDeviceToHost, s2),
                        cudaSuccess);
    BOOST_REQUIRE_EQUAL(cudaStreamSynchronize(s2), cudaSuccess);
    const probe before = *seen;
    const bool still_held = cudaStreamQuery(s1) == cudaErrorNotReady;
    gate.open();
    BOOST_REQUIRE_EQUAL(cudaStreamSynchronize(s1), cudaSuccess);
    BOOST_CHECK_MESSAGE(held_after_call, what << ": the call waited for its stream");
    BOOST_CHECK_MESSAGE(still_held, what << ": the stream was released before the gate opened");
    BOOST_CHECK_MESSAGE(before.counts.a == -1 && before.counts.b == -1, what << ": counts written before the stream ran");
    BOOST_CHECK_MESSAGE(before.first_count == -1, what << ": equality counts written before the stream ran");
    BOOST_CHECK(!gate.timed_out());
  };
  auto first = [](std::vector<std::uint32_t> v, std::size_t n) {
    v.resize(n);
    return v;
  };

  held_call("counts form, merge path", search);
  check_same(first(to_host(oa), dense.a.size()), first(expected_side<st::index_match, std::uint32_t>(dense.ra, false), dense.a.size()),
             "counts form behind a held stream: A");
  check_same(first(to_host(ob), dense.b.size()), first(expected_side<st::index_match, std::uint32_t>(dense.rb, true), dense.b.size()),
             "counts form behind a held stream: B");
  check_counts(read_counts(dc), lm::match_counts{dense.ra.matches, dense.rb.matches}, "counts form behind a held stream");

  held_call("counts form, per-needle", sparse_search);
  check_same(first(to_host(oa), sparse.a.size()), first(expected_side<st::index_match, std::uint32_t>(sparse.ra, true), sparse.a.size()),
             "per-needle counts form behind a held stream: A");
  check_counts(read_counts(dc), lm::match_counts{sparse.ra.matches, 0}, "per-needle counts form behind a held stream");

  held_call("sorted_equality_count, merge path", [&](const auto& p) { equality_count(p, dense); });
  check_same(to_host(counts), dense.ra.equal, "sorted_equality_count behind a held stream");

  held_call("sorted_equality_count, per-needle", [&](const auto& p) { equality_count(p, sparse); });
  auto got = to_host(counts);
  got.resize(sparse.a.size());
  check_same(got, sparse.ra.equal, "per-needle sorted_equality_count behind a held stream");

  // The returning form on s2 while s1 is held.
  {
    stream_gate gate;
    gate.close(s1);
    const auto m = lm::sorted_search<bounds::lower, st::index_match, st::index_match>(
        lm::cuda::par.on(s2), dense.da.begin(), dense.da.end(), dense.db.begin(), dense.db.end(), oa.begin(),
        ob.begin());
    const bool s1_still_held = cudaStreamQuery(s1) == cudaErrorNotReady;
    gate.open();
    BOOST_REQUIRE_EQUAL(cudaStreamSynchronize(s1), cudaSuccess);
    BOOST_CHECK_MESSAGE(s1_still_held, "the returning form on stream 2 waited for stream 1");
    BOOST_CHECK(!gate.timed_out());
    check_counts(m, lm::match_counts{dense.ra.matches, dense.rb.matches}, "returning form on a second stream");
  }
  cudaFreeHost(seen);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// Thrust's synchronous policies wait for the stream: the host reads managed
// memory right after the call, for the counts form and the equality count.
BOOST_AUTO_TEST_CASE(thrust_device_policy_synchronizes) {
  using st = search_type;
  auto in = int_input(200000, 150000, spread::half, 1300);
  std::uint32_t* oa = nullptr;
  long long* counts = nullptr;
  lm::match_counts* mc = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMallocManaged(&oa, in.a.size() * sizeof(std::uint32_t)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMallocManaged(&counts, in.a.size() * sizeof(long long)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMallocManaged(&mc, sizeof(lm::match_counts)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  *mc = lm::match_counts{-1, -1};
  lm::sorted_search<bounds::lower, st::index_match, st::none>(thrust::device, in.da.begin(), in.da.end(),
                                                             in.db.begin(), in.db.end(), oa, nullptr, mc);
  const std::vector<std::uint32_t> got(oa, oa + in.a.size());  // no synchronization before these reads
  const lm::match_counts m = *mc;
  auto e = expected_side<st::index_match, std::uint32_t>(in.ra, false);
  e.pop_back();
  check_same(got, e, "thrust::device counts form, read at once");
  check_counts(m, lm::match_counts{in.ra.matches, 0}, "thrust::device counts form, read at once");
  lm::sorted_equality_count(thrust::device, in.da.begin(), in.da.end(), in.db.begin(), in.db.end(), counts);
  check_same(std::vector<long long>(counts, counts + in.a.size()), in.ra.equal, "thrust::device equality count, read at once");
  cudaFree(oa);
  cudaFree(counts);
  cudaFree(mc);
}

// sorted_equality_count against the width of std::equal_range: random keys,
// few distinct keys, one key on both sides, a run of 100000 equal keys in B
// (many tiles long) with A short (per-needle search) and long (merge path),
// and sparse densities; 32- and 64-bit counts.
BOOST_AUTO_TEST_CASE(sorted_equality_count_against_equal_range) {
  const search_tuning t = tuned_search<int>();
  const long long n = quick() ? 30000 : 300000;
  std::uint64_t seed = 1400;
  std::vector<search_input<int>> inputs;
  inputs.push_back(int_input(n, n - 7, spread::half, seed += 2));
  inputs.push_back(int_input(n, n / 2, spread::wide, seed += 2));
  inputs.push_back(int_input(n, n + 3, spread::few, seed += 2));
  inputs.push_back(int_input(n / 3, n, spread::one, seed += 2));
  for (long long k : densities(t.ratio)) {
    inputs.push_back(int_input(4 * n / k, 4 * n, spread::half, seed += 2));
    inputs.push_back(int_input(4 * n / k, 4 * n, spread::few, seed += 2));
  }
  // 100000 sevens in B between a few other keys; A short and long.
  std::vector<int> b = runs({3, 100000, 5}, 5, 2);  // 5 5 5, 7 x 100000, 9 x 5
  inputs.emplace_back(std::vector<int>{1, 5, 7, 7, 7, 8, 9, 11}, b, lm::less<>(), "100000 equal keys in B, A short");
  inputs.emplace_back(runs({2, 3000, 5000, 1, 4000, 2}, 4, 1), b, lm::less<>(), "100000 equal keys in B, A long");
  inputs.emplace_back(runs({1, t.nv * 3 + 1, 2}, 6, 1), runs({t.nv - 1, 2 * t.nv + 3, t.nv, 1}, 5, 1), lm::less<>(),
                      "runs across tuned tiles");
  for (auto& in : inputs) {
    check_equality_count<long long>(lm::cuda::par, in, lm::less<>(), "tuned, int64 counts");
    check_equality_count<unsigned>(lm::cuda::par, in, lm::less<>(), "tuned, uint32 counts");
    // The merge path (a tuned call of these sizes goes per needle).
    check_equality_count<long long>(cuda_test::dense_tile_policy<int>(), in, lm::less<>(), "tuned tile, int64 counts");
  }
}

// Tiles of more than 32767 elements (a launch box of 1024 x 40 takes 1-byte
// keys): a tile of B's elements all matched counts them all.
BOOST_AUTO_TEST_CASE(match_counts_of_tiles_with_more_than_32767_matches) {
  using st = search_type;
  const auto policy = lm::cuda::par.with(lm::launch_box<1024, 40>{});
  int device = 0, smem = 0;
  BOOST_REQUIRE_EQUAL(cudaGetDevice(&device), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), cudaSuccess);
  if (smem < 210000) {
    BOOST_TEST_MESSAGE("skipped: the 1024x40 box needs about 205 KB of shared memory, the device has " << smem);
    return;
  }
  for (long long nb : quick() ? std::vector<long long>{40960} : std::vector<long long>{40960, 100000}) {
    search_input<std::int8_t> in(std::vector<std::int8_t>{5}, std::vector<std::int8_t>(static_cast<std::size_t>(nb), 5),
                                 lm::less<>(), describe(1, nb, "one key, box 1024x40"));
    check_search<bounds::lower, st::index_match, st::index_match, std::uint32_t, std::uint32_t>(policy, in, lm::less<>(), "box 1024x40");
    search_input<std::int8_t> rev(std::vector<std::int8_t>(static_cast<std::size_t>(nb), 5), std::vector<std::int8_t>{5},
                                  lm::less<>(), describe(nb, 1, "one key, box 1024x40"));
    check_search<bounds::lower, st::index_match, st::index_match, std::uint32_t, std::uint32_t>(policy, rev, lm::less<>(), "box 1024x40");
  }
}
