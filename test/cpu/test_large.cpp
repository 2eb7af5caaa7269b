// Inputs beyond 2^31 elements (1-byte keys) with lm::serial: counts, bounds
// and positions must be 64-bit all the way through. Results are verified by
// linear checks (sortedness, per-value counts) and by std:: binary searches,
// which stay cheap at this size.
//
// Memory: at most about 8.6 GB at once (merge_by_key: 2 x 1 GiB keys, 2 x 1 GiB
// values, 2 x 2 GiB outputs); the cases run one after the other and free their
// buffers. Each case reports its time with BOOST_TEST_MESSAGE (this module
// logs messages by default, see log_messages_by_default).
#define BOOST_TEST_MODULE libmerge_cpu_large
#include <boost/test/unit_test.hpp>
#include <boost/test/unit_test_parameters.hpp>  // runtime_config: the log level given

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_test_helpers.hpp"

namespace lm = libmerge;
using cpu_test::decode_index_match;
using cpu_test::stopwatch;
using lm::bounds;
using lm::search_type;

namespace {

// Show the timing messages without --log_level=message (a more verbose level
// given on the command line is kept).
struct log_messages_by_default {
  log_messages_by_default() {
    using namespace boost::unit_test;
    const auto configured = runtime_config::get<log_level>(runtime_config::btrt_log_level);
    if (configured > log_messages) unit_test_log.set_threshold_level(log_messages);
  }
};

constexpr std::int64_t two_pow(int k) { return std::int64_t{1} << k; }

// An uninitialized buffer of n elements (std::vector would spend seconds
// zeroing gigabytes first).
template <class T>
struct big_array {
  explicit big_array(std::int64_t n) : size(n), data(new T[static_cast<std::size_t>(n)]) {}
  T* begin() const { return data.get(); }
  T* end() const { return data.get() + size; }
  T& operator[](std::int64_t i) const { return data[static_cast<std::size_t>(i)]; }
  std::int64_t size;
  std::unique_ptr<T[]> data;
};

// Per-value counts of int8 keys, indexed by value + 128.
using histogram = std::array<std::int64_t, 256>;

inline int slot(std::int8_t v) { return static_cast<int>(v) + 128; }
inline std::int8_t value_of(int slot) { return static_cast<std::int8_t>(slot - 128); }

histogram count_values(const std::int8_t* p, std::int64_t n) {
  // four partial histograms keep the increments independent
  std::array<histogram, 4> h{};
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    ++h[0][static_cast<std::size_t>(slot(p[i]))];
    ++h[1][static_cast<std::size_t>(slot(p[i + 1]))];
    ++h[2][static_cast<std::size_t>(slot(p[i + 2]))];
    ++h[3][static_cast<std::size_t>(slot(p[i + 3]))];
  }
  for (; i < n; ++i) ++h[0][static_cast<std::size_t>(slot(p[i]))];
  histogram total{};
  for (std::size_t v = 0; v < 256; ++v) total[v] = h[0][v] + h[1][v] + h[2][v] + h[3][v];
  return total;
}

std::int64_t total(const histogram& h) {
  std::int64_t s = 0;
  for (auto c : h) s += c;
  return s;
}

// splitmix64: fast, seeded, good enough to draw bytes and counts.
struct splitmix64 {
  std::uint64_t state;
  std::uint64_t operator()() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

// Random per-value counts summing to n; values with skip(value) get none.
template <class Skip>
histogram random_counts(std::int64_t n, std::uint64_t seed, Skip skip) {
  splitmix64 rng{seed};
  histogram w{}, c{};
  std::int64_t wsum = 0;
  for (int s = 0; s < 256; ++s) {
    w[static_cast<std::size_t>(s)] = skip(value_of(s)) ? 0 : static_cast<std::int64_t>(1 + rng() % 1000);
    wsum += w[static_cast<std::size_t>(s)];
  }
  std::int64_t assigned = 0;
  int largest = 0;
  for (int s = 0; s < 256; ++s) {
    const auto ws = static_cast<std::size_t>(s);
    c[ws] = static_cast<std::int64_t>(static_cast<long double>(n) * static_cast<long double>(w[ws]) /
                                      static_cast<long double>(wsum));
    assigned += c[ws];
    if (w[ws] > w[static_cast<std::size_t>(largest)]) largest = s;
  }
  c[static_cast<std::size_t>(largest)] += n - assigned;
  return c;
}

// A sorted (ascending) int8 array with the given per-value counts.
big_array<std::int8_t> sorted_from_counts(const histogram& c) {
  big_array<std::int8_t> a(total(c));
  std::int64_t pos = 0;
  for (int s = 0; s < 256; ++s) {
    const auto n = c[static_cast<std::size_t>(s)];
    std::memset(a.begin() + pos, value_of(s), static_cast<std::size_t>(n));
    pos += n;
  }
  return a;
}

// First position of each value in a sorted array with counts c.
histogram starts_of(const histogram& c) {
  histogram start{};
  std::int64_t pos = 0;
  for (std::size_t s = 0; s < 256; ++s) {
    start[s] = pos;
    pos += c[s];
  }
  return start;
}

void check_sorted_with_counts(const std::int8_t* p, std::int64_t n, const histogram& expected, const char* what) {
  BOOST_TEST(std::is_sorted(p, p + n), what << ": output not sorted");
  const auto got = count_values(p, n);
  int wrong = 0;
  for (std::size_t s = 0; s < 256; ++s) {
    if (got[s] != expected[s] && wrong++ == 0) {
      BOOST_ERROR(what << ": value " << static_cast<int>(s) - 128 << " occurs " << got[s] << " times, expected "
                       << expected[s]);
    }
  }
  BOOST_TEST(wrong == 0, what << ": " << wrong << " values with wrong counts");
}

// The needles of the search cases: 1000 sorted int8 keys covering every value
// (present in B or not), the extremes and the giant run of B included.
std::vector<std::int8_t> make_needles() {
  std::vector<std::int8_t> a;
  for (int v = -128; v <= 127; ++v) a.push_back(static_cast<std::int8_t>(v));
  splitmix64 rng{77};
  while (a.size() < 1000) a.push_back(static_cast<std::int8_t>(rng() & 0xff));
  for (int k = 0; k < 20; ++k) a.push_back(3);  // the value B holds more than 2^31 times
  std::sort(a.begin(), a.end());
  return a;
}

// B for the search cases: value 3 occurs 2^31 + 1 times, so |B| > 2^31 and
// bounds past the run exceed 2^31; multiples of 4 are absent; the other values
// occur 0 .. 2^16 - 1 times.
histogram search_haystack_counts() {
  splitmix64 rng{4242};
  histogram c{};
  for (int s = 0; s < 256; ++s) {
    const int v = s - 128;
    c[static_cast<std::size_t>(s)] = v == 3 ? two_pow(31) + 1 : (v % 4 == 0 ? 0 : static_cast<std::int64_t>(rng() % 65536));
  }
  return c;
}

// Shared by the search cases: B is 2.15 GB, built once.
struct haystack {
  histogram counts = search_haystack_counts();
  histogram start = starts_of(counts);
  big_array<std::int8_t> b = sorted_from_counts(counts);
  std::vector<std::int8_t> a = make_needles();
  std::int64_t nb() const { return b.size; }
};

haystack& shared_haystack() {
  static haystack h;
  return h;
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(log_messages_by_default);

// merge of two sorted int8 inputs of 2^30 + 2^20 each (output 2^31 + 2^21):
// sorted output whose per-value counts are the sums of the inputs', returned
// end = out + |A| + |B|. Then merge_by_key with values marking the origin
// (A: 0, B: 1): within each run of equal keys all of A's come first.
BOOST_AUTO_TEST_CASE(merge_beyond_2_pow_31) {
  const std::int64_t na = two_pow(30) + two_pow(20), nb = two_pow(30) + two_pow(20);
  const auto ca = random_counts(na, 1, [](std::int8_t v) { return v % 9 == 0; });
  const auto cb = random_counts(nb, 2, [](std::int8_t v) { return v % 7 == 3; });
  histogram sum{};
  for (std::size_t s = 0; s < 256; ++s) sum[s] = ca[s] + cb[s];
  const auto a = sorted_from_counts(ca);
  const auto b = sorted_from_counts(cb);
  {
    big_array<std::int8_t> out(na + nb);
    stopwatch t;
    std::int8_t* end = lm::merge(lm::serial, a.begin(), a.end(), b.begin(), b.end(), out.begin());
    BOOST_TEST_MESSAGE("merge of 2 x (2^30 + 2^20) int8 keys: " << t.seconds() << " s");
    BOOST_TEST(end - out.begin() == na + nb);
    check_sorted_with_counts(out.begin(), na + nb, sum, "merge");
  }
  {
    big_array<std::int8_t> va(na), vb(nb), keys_out(na + nb), vals_out(na + nb);
    std::memset(va.begin(), 0, static_cast<std::size_t>(na));
    std::memset(vb.begin(), 1, static_cast<std::size_t>(nb));
    stopwatch t;
    auto ends = lm::merge_by_key(lm::serial, a.begin(), a.end(), b.begin(), b.end(), va.begin(), vb.begin(),
                                 keys_out.begin(), vals_out.begin());
    BOOST_TEST_MESSAGE("merge_by_key of 2 x (2^30 + 2^20) int8 keys with int8 values: " << t.seconds() << " s");
    BOOST_TEST(ends.first - keys_out.begin() == na + nb);
    BOOST_TEST(ends.second - vals_out.begin() == na + nb);
    check_sorted_with_counts(keys_out.begin(), na + nb, sum, "merge_by_key keys");
    // value at position p of value s's run: 0 (from A) for the first ca[s], then 1
    const auto start = starts_of(sum);
    std::int64_t wrong = 0, first_wrong = -1;
    for (std::size_t s = 0; s < 256; ++s) {
      const std::int8_t* v = vals_out.begin() + start[s];
      for (std::int64_t i = 0; i < sum[s]; ++i) {
        const std::int8_t expected = i < ca[s] ? 0 : 1;
        if (v[i] != expected && wrong++ == 0) first_wrong = start[s] + i;
      }
    }
    BOOST_TEST(wrong == 0, "merge_by_key: " << wrong << " values break A-first stability; first at " << first_wrong);
  }
}

// merge_sort of 2^31 + 2^20 int8 keys: sorted, same per-value counts. The
// first half ascends and the second descends (value by position), with one
// key in 256 random: every pass moves keys at offsets beyond 2^31, the last
// merges two halves of 2^30 into runs of each value that interleave, and no
// run is sorted before it. (Random keys throughout took 137 s of the serial
// sort's 193 s in this binary: a mispredicted branch a comparison.)
BOOST_AUTO_TEST_CASE(merge_sort_beyond_2_pow_31) {
  const std::int64_t n = two_pow(31) + two_pow(20), half = n / 2;
  big_array<std::int8_t> keys(n);
  splitmix64 rng{12345};
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t rank = i < half ? i : n - 1 - i;  // ascending, then descending
    keys[i] = static_cast<std::int8_t>(rank * 256 / half - 128);
  }
  for (std::int64_t i = 0; i < n; i += 256) keys[i] = static_cast<std::int8_t>(rng() & 0xff);
  const auto before = count_values(keys.begin(), n);
  stopwatch t;
  lm::merge_sort(lm::serial, keys.begin(), keys.end());
  BOOST_TEST_MESSAGE("merge_sort of 2^31 + 2^20 int8 keys: " << t.seconds() << " s");
  check_sorted_with_counts(keys.begin(), n, before, "merge_sort");
}

// sorted_search with |B| > 2^31 (int8, value 3 occurring 2^31 + 1 times) and
// 1000 needles, bounds::lower: A gets its lower bound into B with the match
// flag at bit 63 of an int64 output; B gets match flags (int8). Bounds are
// checked against std::lower_bound on B and against prefix sums of the
// per-value counts; match counts exceed 2^31 on B's side.
BOOST_AUTO_TEST_CASE(sorted_search_lower_beyond_2_pow_31) {
  auto& h = shared_haystack();
  const auto& a = h.a;
  const std::int64_t nb = h.nb();
  BOOST_TEST_REQUIRE(nb > two_pow(31));
  std::vector<std::int64_t> a_out(a.size(), -1);
  big_array<std::int8_t> b_out(nb);
  stopwatch t;
  const auto m = lm::sorted_search<bounds::lower, search_type::index_match, search_type::match>(
      lm::serial, a.begin(), a.end(), h.b.begin(), h.b.end(), a_out.begin(), b_out.begin());
  BOOST_TEST_MESSAGE("sorted_search lower, index_match (int64) x match (int8), |A| 1000, |B| " << nb << ": "
                                                                                            << t.seconds() << " s");
  std::int64_t expected_ma = 0, wrong = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto s = static_cast<std::size_t>(slot(a[i]));
    const bool match = h.counts[s] > 0;
    const auto lb = std::lower_bound(h.b.begin(), h.b.end(), a[i]) - h.b.begin();
    expected_ma += match;
    const auto d = decode_index_match(a_out[i]);
    const auto raw = static_cast<std::uint64_t>(a_out[i]);
    const bool ok = lb == h.start[s] && d.bound == static_cast<std::uint64_t>(lb) && d.match == match &&
                    raw == (static_cast<std::uint64_t>(lb) | (match ? std::uint64_t{1} << 63 : 0));
    if (!ok && wrong++ == 0) {
      BOOST_ERROR("needle " << i << " (" << int(a[i]) << "): got raw " << raw << ", expected lower bound " << lb
                            << " (counts: " << h.start[s] << ") match " << match);
    }
  }
  BOOST_TEST(wrong == 0);
  BOOST_TEST(m.a == expected_ma);

  // B: match iff the value occurs in A; m.b counts those elements (> 2^31)
  std::array<bool, 256> in_a{};
  for (auto v : a) in_a[static_cast<std::size_t>(slot(v))] = true;
  std::int64_t expected_mb = 0, wrong_b = 0;
  for (std::size_t s = 0; s < 256; ++s) {
    if (in_a[s]) expected_mb += h.counts[s];
    const std::int8_t* p = b_out.begin() + h.start[s];
    const std::int8_t expected = in_a[s] ? 1 : 0;
    wrong_b += std::count_if(p, p + h.counts[s], [&](std::int8_t x) { return x != expected; });
  }
  BOOST_TEST(wrong_b == 0, wrong_b << " wrong match flags on B");
  BOOST_TEST(expected_mb > two_pow(31));
  BOOST_TEST(m.b == expected_mb);
}

// The same B with bounds::upper: A gets its upper bound into B (int64,
// bit 63), B its lower bound into A with the match flag (int16, bit 15).
BOOST_AUTO_TEST_CASE(sorted_search_upper_beyond_2_pow_31) {
  auto& h = shared_haystack();
  const auto& a = h.a;
  const std::int64_t nb = h.nb();
  std::vector<std::int64_t> a_out(a.size(), -1);
  big_array<std::int16_t> b_out(nb);
  stopwatch t;
  const auto m = lm::sorted_search<bounds::upper, search_type::index_match, search_type::index_match>(
      lm::serial, a.begin(), a.end(), h.b.begin(), h.b.end(), a_out.begin(), b_out.begin());
  BOOST_TEST_MESSAGE("sorted_search upper, index_match (int64) x index_match (int16), |A| 1000, |B| "
                     << nb << ": " << t.seconds() << " s");
  std::int64_t expected_ma = 0, wrong = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto s = static_cast<std::size_t>(slot(a[i]));
    const bool match = h.counts[s] > 0;
    const auto ub = std::upper_bound(h.b.begin(), h.b.end(), a[i]) - h.b.begin();
    expected_ma += match;
    const auto raw = static_cast<std::uint64_t>(a_out[i]);
    const bool ok = ub == h.start[s] + h.counts[s] &&
                    raw == (static_cast<std::uint64_t>(ub) | (match ? std::uint64_t{1} << 63 : 0));
    if (!ok && wrong++ == 0) {
      BOOST_ERROR("needle " << i << " (" << int(a[i]) << "): got raw " << raw << ", expected upper bound " << ub
                            << " match " << match);
    }
  }
  BOOST_TEST(wrong == 0);
  BOOST_TEST(m.a == expected_ma);

  // B: lower bound of each value into A, bit 15 when A holds it
  std::int64_t expected_mb = 0, wrong_b = 0;
  for (std::size_t s = 0; s < 256; ++s) {
    const auto lo = std::lower_bound(a.begin(), a.end(), value_of(static_cast<int>(s))) - a.begin();
    const auto hi = std::upper_bound(a.begin(), a.end(), value_of(static_cast<int>(s))) - a.begin();
    const bool match = hi > lo;
    if (match) expected_mb += h.counts[s];
    const auto expected = static_cast<std::int16_t>(static_cast<std::uint16_t>(lo) | (match ? 0x8000u : 0u));
    const std::int16_t* p = b_out.begin() + h.start[s];
    wrong_b += std::count_if(p, p + h.counts[s], [&](std::int16_t x) { return x != expected; });
  }
  BOOST_TEST(wrong_b == 0, wrong_b << " wrong index_match values on B");
  BOOST_TEST(m.b == expected_mb);
}

// sorted_equality_count into int64 and uint32 with a count of 2^31 + 1 (value
// 3), against std::equal_range widths; int32 counts are refused (|B| > 2^31 - 1).
BOOST_AUTO_TEST_CASE(sorted_equality_count_beyond_2_pow_31) {
  auto& h = shared_haystack();
  const auto& a = h.a;
  std::vector<std::int64_t> expected;
  for (auto v : a) {
    const auto r = std::equal_range(h.b.begin(), h.b.end(), v);
    expected.push_back(r.second - r.first);
  }
  BOOST_TEST(*std::max_element(expected.begin(), expected.end()) == two_pow(31) + 1);

  std::vector<std::int64_t> c64(a.size(), -1);
  stopwatch t;
  auto end = lm::sorted_equality_count(lm::serial, a.begin(), a.end(), h.b.begin(), h.b.end(), c64.begin());
  BOOST_TEST_MESSAGE("sorted_equality_count int64, |A| 1000, |B| " << h.nb() << ": " << t.seconds() << " s");
  BOOST_TEST((end == c64.end()));
  cpu_test::check_same(c64, expected, "sorted_equality_count int64");

  std::vector<std::uint32_t> cu32(a.size(), 0);
  t = stopwatch();
  lm::sorted_equality_count(lm::serial, a.begin(), a.end(), h.b.begin(), h.b.end(), cu32.begin());
  BOOST_TEST_MESSAGE("sorted_equality_count uint32: " << t.seconds() << " s");
  cpu_test::check_same(cu32, std::vector<std::uint32_t>(expected.begin(), expected.end()),
                       "sorted_equality_count uint32");

  std::vector<std::int32_t> c32(a.size(), -1);
  BOOST_CHECK_THROW(lm::sorted_equality_count(lm::serial, a.begin(), a.end(), h.b.begin(), h.b.end(), c32.begin()),
                    std::invalid_argument);
  BOOST_TEST(std::all_of(c32.begin(), c32.end(), [](std::int32_t x) { return x == -1; }));
}

// Output width limits at 2^31: an index_match output of uint32 needs
// |B| <= 2^31 - 1 (bit 31 is the flag): |B| = 2^31 and |B| > 2^31 throw naming
// a_out and write nothing, |B| = 2^31 - 1 works. An int32 index output
// likewise (sign bit); a uint32 index output holds bounds up to 2^32 - 1, so
// it works for the whole B.
BOOST_AUTO_TEST_CASE(output_width_limits_at_2_pow_31) {
  auto& h = shared_haystack();
  const auto& a = h.a;
  const std::int8_t* b = h.b.begin();
  auto expect_throw = [&](auto out_tag, std::int64_t nb, auto search) {
    using Out = decltype(out_tag);
    std::vector<Out> out(a.size(), Out(7));
    try {
      search(b + nb, out);
      BOOST_ERROR("no exception for |B| = " << nb);
    } catch (const std::invalid_argument& e) {
      BOOST_TEST(std::string(e.what()).find("a_out") != std::string::npos, e.what());
    }
    BOOST_TEST(std::all_of(out.begin(), out.end(), [](Out x) { return x == Out(7); }));
  };
  auto index_match_u32 = [&](const std::int8_t* b_last, std::vector<std::uint32_t>& out) {
    return lm::sorted_search<bounds::lower, search_type::index_match, search_type::none>(
        lm::serial, a.begin(), a.end(), b, b_last, out.begin(), nullptr);
  };
  auto index_i32 = [&](const std::int8_t* b_last, std::vector<std::int32_t>& out) {
    return lm::sorted_search<bounds::lower, search_type::index, search_type::none>(lm::serial, a.begin(), a.end(), b,
                                                                                   b_last, out.begin(), nullptr);
  };
  expect_throw(std::uint32_t{}, h.nb(), index_match_u32);
  expect_throw(std::uint32_t{}, two_pow(31), index_match_u32);
  expect_throw(std::int32_t{}, two_pow(31), index_i32);

  // |B| = 2^31 - 1: both fit; compare with std::lower_bound on that prefix
  const std::int64_t nb = two_pow(31) - 1;
  std::vector<std::uint32_t> out_u32(a.size());
  std::vector<std::int32_t> out_i32(a.size());
  stopwatch t;
  const auto m = index_match_u32(b + nb, out_u32);
  index_i32(b + nb, out_i32);
  BOOST_TEST_MESSAGE("sorted_search into uint32 index_match and int32 index, |B| 2^31 - 1: " << t.seconds() << " s");
  std::int64_t wrong = 0, expected_ma = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto r = std::equal_range(b, b + nb, a[i]);
    const auto lb = static_cast<std::uint64_t>(r.first - b);
    const bool match = r.second != r.first;
    expected_ma += match;
    wrong += out_u32[i] != (static_cast<std::uint32_t>(lb) | (match ? 0x80000000u : 0u));
    wrong += static_cast<std::uint64_t>(out_i32[i]) != lb;
  }
  BOOST_TEST(wrong == 0);
  BOOST_TEST(m.a == expected_ma);

  // uint32 index into the whole B (> 2^31 elements): bounds above 2^31 fit
  std::vector<std::uint32_t> idx(a.size());
  t = stopwatch();
  lm::sorted_search<bounds::upper>(lm::serial, a.begin(), a.end(), h.b.begin(), h.b.end(), idx.begin());
  BOOST_TEST_MESSAGE("sorted_search upper into uint32 index, |B| " << h.nb() << ": " << t.seconds() << " s");
  std::int64_t wrong_u = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto ub = std::upper_bound(h.b.begin(), h.b.end(), a[i]) - h.b.begin();
    wrong_u += static_cast<std::int64_t>(idx[i]) != ub;
  }
  BOOST_TEST(wrong_u == 0);
  BOOST_TEST(*std::max_element(idx.begin(), idx.end()) > 0x80000000u);
}
