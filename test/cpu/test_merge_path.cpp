// Unit tests of the merge-path search (backends/engine/search.hpp), which is
// plain C++ and compiles without CUDA: for every cross-diagonal, merge_path must
// return the co-rank of a brute-force reference merge. And of the bound search
// (backends/engine/search.hpp) against std::lower_bound / std::upper_bound,
// with its k-way probe (rank_in_run) and the lockstep forms.
#define BOOST_TEST_MODULE libmerge_cpu_merge_path
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include <backends/engine/search.hpp>

#include "cpu_test_helpers.hpp"

namespace lm = libmerge;
using cpu_test::checked_iterator;
using test_support::record;
using test_support::record_less;

namespace {

// Brute-force co-ranks: corank[d] = how many of the first d outputs of the
// merge come from A, for d = 0 .. na + nb. The merge is std::merge on keys
// tagged with their side: lower = std::merge(A, B) (A wins ties),
// upper = std::merge(B, A) (B wins ties).
template <lm::bounds Bounds, class T, class Comp>
std::vector<std::int64_t> brute_force_coranks(const std::vector<T>& a, const std::vector<T>& b, Comp comp) {
  using tagged = std::pair<T, bool>;  // (key, from A)
  std::vector<tagged> ta, tb, merged(a.size() + b.size());
  for (const auto& x : a) ta.emplace_back(x, true);
  for (const auto& x : b) tb.emplace_back(x, false);
  auto by_key = [&](const tagged& x, const tagged& y) { return comp(x.first, y.first); };
  if (Bounds == lm::bounds::lower) {
    std::merge(ta.begin(), ta.end(), tb.begin(), tb.end(), merged.begin(), by_key);
  } else {
    std::merge(tb.begin(), tb.end(), ta.begin(), ta.end(), merged.begin(), by_key);
  }
  std::vector<std::int64_t> corank(merged.size() + 1, 0);
  for (std::size_t d = 0; d < merged.size(); ++d) corank[d + 1] = corank[d] + (merged[d].second ? 1 : 0);
  return corank;
}

template <class T>
T small_key(std::mt19937_64& rng, int range);
template <>
int small_key<int>(std::mt19937_64& rng, int range) {
  return static_cast<int>(rng() % static_cast<unsigned>(range)) - range / 2;
}
template <>
record small_key<record>(std::mt19937_64& rng, int range) {
  const auto r = static_cast<std::int64_t>(rng() % static_cast<unsigned>(range));
  return record{r / 2, static_cast<std::int32_t>(r % 2), static_cast<std::int32_t>(rng() % 1000)};
}

// Checks merge_path<Bounds, Index> at every diagonal of one (a, b) pair.
template <lm::bounds Bounds, class Index, class T, class Comp>
void check_all_diagonals(const std::vector<T>& a, const std::vector<T>& b, Comp comp) {
  const auto expected = brute_force_coranks<Bounds>(a, b, comp);
  const Index na = static_cast<Index>(a.size()), nb = static_cast<Index>(b.size());
  int wrong = 0;
  for (Index diag = 0; diag <= na + nb; ++diag) {
    const Index got = lm::detail::merge_path<Bounds, Index>(a.data(), na, b.data(), nb, diag, comp);
    if (static_cast<std::int64_t>(got) != expected[static_cast<std::size_t>(diag)] && wrong++ == 0) {
      BOOST_ERROR("diag " << diag << ": merge_path " << got << ", brute force "
                          << expected[static_cast<std::size_t>(diag)]);
    }
  }
  BOOST_TEST(wrong == 0, wrong << " wrong diagonals");
}

template <class T, class Comp>
void random_cases(Comp comp, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 1500; ++iter) {
    // Small sides, empty sides included; a small key range makes duplicates
    // (within a side and across the sides) common.
    const auto na = static_cast<std::size_t>(rng() % 24);
    const auto nb = static_cast<std::size_t>(iter % 10 == 0 ? 0 : rng() % 24);
    const int range = 1 + static_cast<int>(rng() % 12);
    std::vector<T> a(na), b(nb);
    for (auto& x : a) x = small_key<T>(rng, range);
    for (auto& x : b) x = small_key<T>(rng, range);
    std::stable_sort(a.begin(), a.end(), comp);
    std::stable_sort(b.begin(), b.end(), comp);
    if (iter % 2) std::swap(a, b);  // also empty A with nonempty B
    BOOST_TEST_CONTEXT("seed " << seed << ", case " << iter << ", na " << a.size() << ", nb " << b.size()
                               << ", key range " << range << ", comp " << cpu_test::comp_name<Comp>()) {
      check_all_diagonals<lm::bounds::lower, int>(a, b, comp);
      check_all_diagonals<lm::bounds::upper, int>(a, b, comp);
      check_all_diagonals<lm::bounds::lower, std::int64_t>(a, b, comp);
      check_all_diagonals<lm::bounds::upper, std::int64_t>(a, b, comp);
    }
  }
}

// A read-only arithmetic sequence seq[i] = mul * i + add: an "array" of any
// length for the 64-bit tests (merge_path only uses operator[]).
struct affine_sequence {
  std::int64_t mul, add;
  std::int64_t operator[](std::int64_t i) const { return mul * i + add; }
};

}  // namespace

// Random small inputs with many duplicates: every diagonal, both bounds, int
// and int64 Index, with lm::less<> and lm::greater<>.
BOOST_AUTO_TEST_CASE(every_diagonal_matches_brute_force_int_keys) {
  random_cases<int>(lm::less<>{}, 101);
  random_cases<int>(lm::greater<>{}, 102);
  random_cases<int>(lm::less<int>{}, 103);
}

// Same with 16-byte record keys (ties on (major, minor), tag differs).
BOOST_AUTO_TEST_CASE(every_diagonal_matches_brute_force_record_keys) {
  random_cases<record>(record_less{}, 201);
  random_cases<record>(lm::greater<>{}, 202);
}

// Hand-picked corner shapes: one or both sides empty, all keys equal (the
// bounds differ at every diagonal), disjoint ranges in both orders.
BOOST_AUTO_TEST_CASE(corner_shapes) {
  const std::vector<std::vector<int>> shapes = {
      {}, {5}, {5, 5, 5, 5}, {1, 2, 3}, {7, 8, 9, 10, 11}, {-3, 5, 5, 9}};
  for (const auto& a : shapes) {
    for (const auto& b : shapes) {
      BOOST_TEST_CONTEXT("na " << a.size() << ", nb " << b.size()) {
        check_all_diagonals<lm::bounds::lower, int>(a, b, lm::less<>{});
        check_all_diagonals<lm::bounds::upper, int>(a, b, lm::less<>{});
        check_all_diagonals<lm::bounds::lower, std::int64_t>(a, b, lm::less<>{});
        check_all_diagonals<lm::bounds::upper, std::int64_t>(a, b, lm::less<>{});
      }
    }
  }
}

// On all-equal keys the two bounds must differ exactly as the tie rule says:
// lower takes min(diag, na) from A, upper takes max(0, diag - nb).
BOOST_AUTO_TEST_CASE(all_equal_keys_follow_the_tie_rule) {
  const std::vector<int> a(9, 4), b(6, 4);
  for (int diag = 0; diag <= 15; ++diag) {
    const int lower = lm::detail::merge_path<lm::bounds::lower, int>(a.data(), 9, b.data(), 6, diag, lm::less<>{});
    const int upper = lm::detail::merge_path<lm::bounds::upper, int>(a.data(), 9, b.data(), 6, diag, lm::less<>{});
    BOOST_TEST(lower == std::min(diag, 9));
    BOOST_TEST(upper == std::max(0, diag - 6));
  }
}

// 64-bit Index on virtual inputs of 2^40 elements, and int Index up to a total
// of 2^31 - 1: A = 0, 2, 4, ... and B = 1, 3, 5, ... interleave, so the co-rank
// of diag is ceil(diag / 2) clamped by the side lengths; A = B = 0, 3, 6, ...
// ties at every step (lower: ceil(diag / 2), upper: floor(diag / 2)).
BOOST_AUTO_TEST_CASE(large_index_values_do_not_overflow) {
  const affine_sequence evens{2, 0}, odds{2, 1}, threes{3, 0};
  const std::int64_t n64 = std::int64_t{1} << 40;
  for (std::int64_t diag : {std::int64_t{0}, std::int64_t{1}, n64 - 1, n64, n64 + 1, 2 * n64 - 1, 2 * n64,
                            (std::int64_t{1} << 33) + 12345}) {
    BOOST_TEST_CONTEXT("Index int64, diag " << diag) {
      BOOST_TEST((lm::detail::merge_path<lm::bounds::lower, std::int64_t>(evens, n64, odds, n64, diag,
                                                                           lm::less<>{})) == (diag + 1) / 2);
      BOOST_TEST((lm::detail::merge_path<lm::bounds::lower, std::int64_t>(threes, n64, threes, n64, diag,
                                                                           lm::less<>{})) == (diag + 1) / 2);
      BOOST_TEST((lm::detail::merge_path<lm::bounds::upper, std::int64_t>(threes, n64, threes, n64, diag,
                                                                           lm::less<>{})) == diag / 2);
    }
  }
  // Index int: na + nb = 2^31 - 1, the largest total an int tile index allows.
  const int na = (1 << 30) - 1, nb = 1 << 30;
  for (int diag : {0, 1, na, nb, na + nb - 1, na + nb}) {
    BOOST_TEST_CONTEXT("Index int, diag " << diag) {
      const std::int64_t d = diag;
      // evens (A) vs odds (B): A holds ceil(d/2) of the first d, at most na;
      // when A runs out, the rest come from B.
      const std::int64_t expected = std::min<std::int64_t>((d + 1) / 2, na);
      BOOST_TEST((lm::detail::merge_path<lm::bounds::lower, int>(evens, na, odds, nb, diag, lm::less<>{})) ==
                 expected);
      BOOST_TEST((lm::detail::merge_path<lm::bounds::upper, int>(threes, na, threes, nb, diag, lm::less<>{})) ==
                 std::max<std::int64_t>(d / 2, d - nb));
    }
  }
}

// With a comparator that is no strict weak ordering (random answers, or <=)
// merge_path must stay in range: every probe inside a[0, na) and b[0, nb)
// (checked iterators throw otherwise), and a result in
// [max(0, diag - nb), min(diag, na)].
BOOST_AUTO_TEST_CASE(bad_comparators_stay_in_range) {
  std::mt19937_64 rng(301);
  auto random_comp = [&rng](int, int) { return (rng() & 1) != 0; };
  auto less_equal = [](int x, int y) { return x <= y; };
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<int> a(rng() % 20), b(rng() % 20);
    for (auto& x : a) x = static_cast<int>(rng() % 5);
    for (auto& x : b) x = static_cast<int>(rng() % 5);
    if (iter % 2) std::sort(a.begin(), a.end());  // unsorted or sorted
    const auto na = static_cast<std::ptrdiff_t>(a.size()), nb = static_cast<std::ptrdiff_t>(b.size());
    checked_iterator<const int> ca(a.data(), na), cb(b.data(), nb);
    for (std::ptrdiff_t diag = 0; diag <= na + nb; ++diag) {
      BOOST_TEST_CONTEXT("case " << iter << ", na " << na << ", nb " << nb << ", diag " << diag) {
        std::ptrdiff_t r1 = -1, r2 = -1, r3 = -1;
        try {
          r1 = lm::detail::merge_path<lm::bounds::lower, std::ptrdiff_t>(ca, na, cb, nb, diag, random_comp);
          r2 = lm::detail::merge_path<lm::bounds::upper, std::ptrdiff_t>(ca, na, cb, nb, diag, random_comp);
          r3 = lm::detail::merge_path<lm::bounds::lower, std::ptrdiff_t>(ca, na, cb, nb, diag, less_equal);
        } catch (const cpu_test::out_of_range_access& e) {
          BOOST_ERROR("merge_path read out of range: " << e.what());
        }
        for (std::ptrdiff_t r : {r1, r2, r3}) {
          BOOST_TEST(r >= std::max<std::ptrdiff_t>(0, diag - nb));
          BOOST_TEST(r <= std::min(diag, na));
        }
      }
    }
  }
}

// bound_within<Upper>(hay, lo, hi, x) is std::lower_bound (upper_bound) of x
// in hay[lo, hi), for every x around the keys, sub-range, and order; with a
// comparator that is no ordering every probe stays in [lo, hi) and the answer
// too.
BOOST_AUTO_TEST_CASE(bound_within_is_std_bounds) {
  std::mt19937_64 rng(302);
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<int> hay(rng() % 40);
    for (auto& x : hay) x = static_cast<int>(rng() % 12);
    const bool descending = iter % 3 == 0;
    auto comp = [descending](int x, int y) { return descending ? y < x : x < y; };
    std::sort(hay.begin(), hay.end(), comp);
    const auto n = static_cast<std::ptrdiff_t>(hay.size());
    const std::ptrdiff_t lo = n == 0 ? 0 : static_cast<std::ptrdiff_t>(rng() % static_cast<std::uint64_t>(n + 1));
    const std::ptrdiff_t hi = lo + static_cast<std::ptrdiff_t>(rng() % static_cast<std::uint64_t>(n - lo + 1));
    checked_iterator<const int> h(hay.data(), n);
    for (int x = -1; x <= 12; ++x) {
      BOOST_TEST_CONTEXT("case " << iter << ", [" << lo << ", " << hi << ") of " << n << ", x " << x) {
        const auto first = hay.begin() + lo, last = hay.begin() + hi;
        BOOST_TEST(lm::detail::bound_within<false>(h, lo, hi, x, comp) ==
                   std::lower_bound(first, last, x, comp) - hay.begin());
        BOOST_TEST(lm::detail::bound_within<true>(h, lo, hi, x, comp) ==
                   std::upper_bound(first, last, x, comp) - hay.begin());
      }
    }
  }
  auto random_comp = [&rng](int, int) { return (rng() & 1) != 0; };
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<int> hay(rng() % 30);
    const auto n = static_cast<std::ptrdiff_t>(hay.size());
    checked_iterator<const int> h(hay.data(), n);
    std::ptrdiff_t r1 = -1, r2 = -1;
    try {
      r1 = lm::detail::bound_within<false>(h, std::ptrdiff_t{0}, n, 0, random_comp);
      r2 = lm::detail::bound_within<true>(h, std::ptrdiff_t{0}, n, 0, random_comp);
    } catch (const cpu_test::out_of_range_access& e) {
      BOOST_ERROR("bound_within read out of range: " << e.what());
    }
    for (std::ptrdiff_t r : {r1, r2}) BOOST_TEST((r >= 0 && r <= n));
  }
}

// gallop_within<Upper>(hay, lo, hi, x) is bound_within's answer (std::lower_bound / upper_bound) with every
// probe in [lo, hi) (the iterator checks the sub-range alone), in at most 2 ceil(log2(d + 1)) + 1 probes for
// an answer d past lo.
BOOST_AUTO_TEST_CASE(gallop_within_is_std_bounds_in_few_probes) {
  std::mt19937_64 rng(303);
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<int> hay(rng() % 300);
    const int distinct = 1 + static_cast<int>(rng() % 40);
    for (auto& x : hay) x = static_cast<int>(rng() % static_cast<std::uint64_t>(distinct));
    const bool descending = iter % 3 == 0;
    auto comp = [descending](int x, int y) { return descending ? y < x : x < y; };
    std::sort(hay.begin(), hay.end(), comp);
    const auto n = static_cast<std::ptrdiff_t>(hay.size());
    const std::ptrdiff_t lo = static_cast<std::ptrdiff_t>(rng() % static_cast<std::uint64_t>(n + 1));
    const std::ptrdiff_t hi = lo + static_cast<std::ptrdiff_t>(rng() % static_cast<std::uint64_t>(n - lo + 1));
    checked_iterator<const int> h(hay.data() + lo, hi - lo);  // index 0 is hay[lo]
    for (int x = -1; x <= distinct; ++x) {
      BOOST_TEST_CONTEXT("case " << iter << ", [" << lo << ", " << hi << ") of " << n << ", x " << x) {
        const auto first = hay.begin() + lo, last = hay.begin() + hi;
        const std::ptrdiff_t want_lower = std::lower_bound(first, last, x, comp) - hay.begin();
        const std::ptrdiff_t want_upper = std::upper_bound(first, last, x, comp) - hay.begin();
        BOOST_TEST(lo + lm::detail::gallop_within<false>(h, std::ptrdiff_t{0}, hi - lo, x, comp) == want_lower);
        BOOST_TEST(lo + lm::detail::gallop_within<true>(h, std::ptrdiff_t{0}, hi - lo, x, comp) == want_upper);
        int probes = 0;
        const std::ptrdiff_t got = lm::detail::gallop_first_not_before(lo, hi, [&](std::ptrdiff_t k) {
          ++probes;
          return comp(hay[static_cast<std::size_t>(k)], x);
        });
        BOOST_TEST(got == want_lower);
        int bound = 1;
        for (std::ptrdiff_t d = got - lo; d > 0; d /= 2) bound += 2;  // 2 ceil(log2(d + 1)) + 1
        BOOST_TEST(probes <= bound);
      }
    }
  }
}

// rank_in_run is the probe of the k-way searches: for an element x of
// sequence u, the number of elements of sequence v before x in the stable
// merge of all sequences (ties: the earlier sequence first). Checked against
// the position of x in a brute-force stable merge of three sorted runs.
BOOST_AUTO_TEST_CASE(rank_in_run_is_the_stable_k_way_rank) {
  std::mt19937_64 rng(303);
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<std::vector<int>> runs(3);
    for (auto& r : runs) {
      r.resize(rng() % 20);
      for (auto& x : r) x = static_cast<int>(rng() % 6);
      std::sort(r.begin(), r.end());
    }
    // (key, sequence, position): the stable k-way merge's order.
    std::vector<std::tuple<int, int, int>> merged;
    for (int v = 0; v < 3; ++v) {
      for (int i = 0; i < static_cast<int>(runs[v].size()); ++i) merged.emplace_back(runs[v][i], v, i);
    }
    std::stable_sort(merged.begin(), merged.end(),
                     [](const auto& x, const auto& y) { return std::get<0>(x) < std::get<0>(y); });
    for (std::size_t at = 0; at < merged.size(); ++at) {
      const auto [x, u, p] = merged[at];
      for (int v = 0; v < 3; ++v) {
        if (v == u) continue;
        std::ptrdiff_t expected = 0;  // elements of v before x in the merge
        for (std::size_t k = 0; k < at; ++k) expected += std::get<1>(merged[k]) == v ? 1 : 0;
        const auto n = static_cast<std::ptrdiff_t>(runs[v].size());
        checked_iterator<const int> h(runs[v].data(), n);
        auto comp = lm::less<>{};
        BOOST_TEST(lm::detail::rank_in_run(h, std::ptrdiff_t{0}, n, x, v < u, comp) == expected,
                   "case " << iter << ": x " << x << " of run " << u << " at " << p << " in run " << v);
      }
    }
  }
}

// Each run's count before diagonal d of the stable merge of `keys` (ties: the earlier run), for every d.
std::vector<std::vector<lm::index_t>> stable_counts(const std::vector<std::vector<int>>& keys) {
  std::vector<std::pair<int, int>> merged;  // (key, run), stably sorted by key
  for (std::size_t r = 0; r < keys.size(); ++r) {
    for (int x : keys[r]) merged.emplace_back(x, static_cast<int>(r));
  }
  std::stable_sort(merged.begin(), merged.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::vector<lm::index_t>> counts(merged.size() + 1, std::vector<lm::index_t>(keys.size(), 0));
  for (std::size_t d = 0; d < merged.size(); ++d) {
    counts[d + 1] = counts[d];
    ++counts[d + 1][static_cast<std::size_t>(merged[d].second)];
  }
  return counts;
}

// multiway_split at every diagonal of the stable merge of K runs (K = 1 to
// 9, empty runs, few distinct keys) gives, for each run, how many of its
// elements the brute-force merge puts before the diagonal; every probe goes
// through checked_iterator (no read outside a run).
BOOST_AUTO_TEST_CASE(multiway_split_is_the_stable_k_way_split) {
  std::mt19937_64 rng(305);
  for (int iter = 0; iter < 300; ++iter) {
    const int k = 1 + static_cast<int>(rng() % 9);
    std::vector<std::vector<int>> keys(static_cast<std::size_t>(k));
    for (auto& r : keys) {
      r.resize(rng() % 3 == 0 ? 0 : rng() % 25);
      for (auto& x : r) x = static_cast<int>(rng() % (iter % 2 == 0 ? 4 : 1000));
      std::sort(r.begin(), r.end());
    }
    struct run {
      checked_iterator<const int> first;
      std::ptrdiff_t n;
    };
    std::vector<run> runs;
    for (int v = 0; v < k; ++v) {
      const auto n = static_cast<std::ptrdiff_t>(keys[v].size());
      runs.push_back({checked_iterator<const int>(keys[v].data(), n), n});
    }
    const auto want = stable_counts(keys);
    std::vector<lm::index_t> lo(k), hi(k), count(k);
    for (std::size_t d = 0; d < want.size(); ++d) {
      auto comp = lm::less<>{};
      lm::detail::multiway_split(runs.data(), k, static_cast<lm::index_t>(d), lo.data(), hi.data(), count.data(), comp);
      BOOST_TEST_REQUIRE(lo == want[d], "case " << iter << ", K = " << k << ", diagonal " << d);
    }
  }
}

// W runs as a group gives them to sampled_split (len, key, run), every read through checked_iterator.
template <int W>
struct runs_view {
  std::vector<checked_iterator<const int>> first;
  lm::index_t len[W];
  checked_iterator<const int> run(int r) const { return first[static_cast<std::size_t>(r)]; }
  int key(int r, lm::index_t i) const { return first[static_cast<std::size_t>(r)][i]; }
};
template <int W>
runs_view<W> view_of(const std::vector<std::vector<int>>& keys) {
  runs_view<W> v;
  for (int r = 0; r < W; ++r) {
    const auto n = static_cast<lm::index_t>(keys[static_cast<std::size_t>(r)].size());
    v.first.emplace_back(keys[static_cast<std::size_t>(r)].data(), n);
    v.len[r] = n;
  }
  return v;
}
struct every_rate {
  lm::index_t e;
  lm::index_t every() const { return e; }
};

// sampled_split (W = 4, 8): from the split of the runs' samples (every `every`-th key) at every sample
// diagonal to each run's count in a brute-force stable merge at that diagonal times `every` (few distinct
// keys, empty runs, every probe in range).
template <int W>
void check_sampled_split(std::mt19937_64& rng) {
  for (int iter = 0; iter < 150; ++iter) {
    const lm::index_t every = lm::index_t{1} << (rng() % 4);
    std::vector<std::vector<int>> keys(W), samples(W);
    for (int r = 0; r < W; ++r) {
      auto& k = keys[static_cast<std::size_t>(r)];
      k.resize(rng() % 4 == 0 ? 0 : rng() % 40);
      for (auto& x : k) x = static_cast<int>(rng() % (iter % 2 == 0 ? 3 : 1000));
      std::sort(k.begin(), k.end());
      for (std::size_t i = 0; i < k.size(); i += static_cast<std::size_t>(every)) samples[r].push_back(k[i]);
    }
    const auto want = stable_counts(keys), sample_counts = stable_counts(samples);
    const runs_view<W> runs = view_of<W>(keys), sampled = view_of<W>(samples);
    auto comp = lm::less<>{};
    for (std::size_t d = 0; d < sample_counts.size() && d * every < want.size(); ++d) {
      lm::detail::run_split<W> c;
      for (int r = 0; r < W; ++r) c.s[r] = sample_counts[d][static_cast<std::size_t>(r)];
      const auto cut = lm::detail::sampled_split<W>(runs, sampled, c, static_cast<lm::index_t>(d), every_rate{every},
                                                    comp);
      BOOST_TEST_REQUIRE((std::vector<lm::index_t>(cut.s, cut.s + W) == want[d * every]),
                         "case " << iter << ", W = " << W << ", every " << every << ", sample diagonal " << d);
    }
  }
}

BOOST_AUTO_TEST_CASE(sampled_split_is_the_stable_k_way_split) {
  std::mt19937_64 rng(306);
  check_sampled_split<4>(rng);
  check_sampled_split<8>(rng);
}

// The sparse search's lockstep forms give bound_within's answers, needle by
// needle, for 1-, 2- and 4-ary steps alike.
BOOST_AUTO_TEST_CASE(lockstep_bounds_are_bound_within) {
  std::mt19937_64 rng(304);
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<int> hay(rng() % 70);
    for (auto& x : hay) x = static_cast<int>(rng() % 20);
    std::sort(hay.begin(), hay.end());
    const auto n = static_cast<std::ptrdiff_t>(hay.size());
    const std::ptrdiff_t lo = static_cast<std::ptrdiff_t>(rng() % static_cast<std::uint64_t>(n + 1));
    const std::ptrdiff_t hi = lo + static_cast<std::ptrdiff_t>(rng() % static_cast<std::uint64_t>(n - lo + 1));
    checked_iterator<const int> h(hay.data(), n);
    auto comp = lm::less<>{};
    int x[4];
    for (auto& v : x) v = static_cast<int>(rng() % 22) - 1;
    std::ptrdiff_t binary[4], quad[4], upper[4];
    lm::detail::bounds_in_lockstep<false>(h, lo, hi, x, binary, comp);
    lm::detail::bounds_in_lockstep_4<false>(h, lo, hi, x, quad, comp);
    lm::detail::bounds_in_lockstep_4<true>(h, lo, hi, x, upper, comp);
    for (int k = 0; k < 4; ++k) {
      BOOST_TEST_CONTEXT("case " << iter << ", [" << lo << ", " << hi << "), x " << x[k]) {
        BOOST_TEST(binary[k] == lm::detail::bound_within<false>(h, lo, hi, x[k], comp));
        BOOST_TEST(quad[k] == lm::detail::bound_within<false>(h, lo, hi, x[k], comp));
        BOOST_TEST(upper[k] == lm::detail::bound_within<true>(h, lo, hi, x[k], comp));
      }
    }
  }
}
