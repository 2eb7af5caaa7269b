// lm::multiway_merge and multiway_merge_by_key on the CUDA backend against
// lm::serial (the oracle, itself checked against std::stable_sort in
// test/cpu/test_multiway_merge.cpp): K = 1 to 5, 8, 9, 16, 64 and 1000 (one
// 4-way pass up to 4 ranges, levels of them above), empty
// ranges among them, random, few-distinct and all-equal keys, lm::less and
// lm::greater, int32 and int64 keys, values that tag each element with its
// range and position (stability shows), ranges given as device pointers and
// as device_vector iterators; the policy's launch boxes, with and without
// the run samples the tiling searches first. Bad input: a host range, an output over an
// input, an unsorted range under .checked(). (Beyond 2^31 elements:
// test_cuda_large.)
#define BOOST_TEST_MODULE cuda_multiway_merge
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <thrust/iterator/counting_iterator.h>

#include "cuda_test_support.cuh"
#include "test_support.hpp"

namespace lm = libmerge;
using cuda_test::to_device;
using cuda_test::to_host;

namespace {

template <class T>
std::vector<std::vector<T>> make_runs(std::mt19937_64& g, int k, int max_len, std::uint64_t span, bool greater) {
  std::vector<std::vector<T>> runs(static_cast<std::size_t>(k));
  for (auto& r : runs) {
    r.resize(g() % 4 == 0 ? 0 : static_cast<std::size_t>(g() % static_cast<std::uint64_t>(max_len + 1)));
    for (T& x : r) x = static_cast<T>(g() % span);
    if (greater) {
      std::sort(r.begin(), r.end(), std::greater<T>());
    } else {
      std::sort(r.begin(), r.end());
    }
  }
  return runs;
}

// Keys and by-key merges of `runs` on the GPU (policy), each against lm::serial's.
template <class T, class Comp, class Policy = decltype(lm::cuda::par)>
void check_case(const std::vector<std::vector<T>>& runs, Comp comp, const std::string& what,
                const Policy& policy = lm::cuda::par) {
  std::size_t total = 0;
  for (const auto& r : runs) total += r.size();
  std::vector<thrust::device_vector<T>> d_runs;
  std::vector<thrust::device_vector<std::int64_t>> d_tags;
  std::vector<std::pair<const T*, const T*>> host_ranges, dev_ranges;
  std::vector<const std::int64_t*> host_vals, dev_vals;
  std::vector<std::vector<std::int64_t>> tags(runs.size());
  d_runs.reserve(runs.size());  // (pointers into them are kept: no reallocation)
  d_tags.reserve(runs.size());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    for (std::size_t i = 0; i < runs[k].size(); ++i) tags[k].push_back(std::int64_t(k) << 32 | std::int64_t(i));
    d_runs.push_back(to_device(runs[k]));
    d_tags.push_back(to_device(tags[k]));
    host_ranges.push_back({runs[k].data(), runs[k].data() + runs[k].size()});
    const T* p = thrust::raw_pointer_cast(d_runs.back().data());
    dev_ranges.push_back({p, p + runs[k].size()});
    host_vals.push_back(tags[k].data());
    dev_vals.push_back(thrust::raw_pointer_cast(d_tags.back().data()));
  }
  std::vector<T> want(total);
  std::vector<std::int64_t> want_vals(total);
  lm::multiway_merge(lm::serial, host_ranges.begin(), host_ranges.end(), want.begin(), comp);
  thrust::device_vector<T> out(total);
  lm::multiway_merge(policy, dev_ranges.begin(), dev_ranges.end(), out.begin(), comp);
  BOOST_TEST_REQUIRE((to_host(out) == want), what << " keys");

  lm::multiway_merge_by_key(lm::serial, host_ranges.begin(), host_ranges.end(), host_vals.begin(), want.begin(),
                            want_vals.begin(), comp);
  thrust::device_vector<T> keys_out(total);
  thrust::device_vector<std::int64_t> vals_out(total);
  lm::multiway_merge_by_key(policy, dev_ranges.begin(), dev_ranges.end(), dev_vals.begin(), keys_out.begin(),
                            vals_out.begin(), comp);
  BOOST_TEST_REQUIRE((to_host(keys_out) == want && to_host(vals_out) == want_vals), what << " pairs");
}

}  // namespace

BOOST_AUTO_TEST_CASE(k_way_merges_match_the_serial_backend) {
  std::mt19937_64 g(5);
  for (int k : {1, 2, 3, 4, 5, 8, 9, 16, 64, 1000}) {
    for (int shape = 0; shape < 4; ++shape) {
      const std::uint64_t span = shape % 2 == 0 ? (1ull << 40) : (shape == 1 ? 7 : 1);
      const bool greater = shape == 2;
      // Quick (compute-sanitizer): a tenth of the lengths, still several tiles a range.
      const int max_len = (k >= 1000 ? 3000 : (k >= 16 ? 60000 : 300000)) / (cuda_test::quick() ? 10 : 1);
      const std::string what = "K=" + std::to_string(k) + " shape " + std::to_string(shape);
      // Runs are made in every shard, so that each shard's checks see the data an unsharded run does.
      if (greater) {
        auto runs = make_runs<std::int32_t>(g, k, max_len, span, true);
        if (cuda_test::in_shard()) check_case(runs, lm::greater<>(), what + " int32 greater");
      } else {
        auto runs32 = make_runs<std::int32_t>(g, k, max_len, span, false);
        if (cuda_test::in_shard()) check_case(runs32, lm::less<>(), what + " int32");
        auto runs64 = make_runs<std::int64_t>(g, k, max_len, span, false);
        if (cuda_test::in_shard()) check_case(runs64, lm::less<>(), what + " int64");
      }
    }
  }
}

// A policy's launch boxes: tiles that hold the entry's runs_tile_samples (20)
// run samples at a spacing above the sort's (64 x 20: every 64th key, 20 a
// tile; the tiling searches them first, as the tuned boxes do), and fewer
// (64 x 5: 10 at the densest; it searches the runs).
BOOST_AUTO_TEST_CASE(k_way_merges_with_the_policy_boxes) {
  std::mt19937_64 g(11);
  const auto sampled = lm::cuda::par.with(lm::launch_boxes<lm::launch_box<64, 3>, lm::launch_box<64, 20>, 4>{});
  const auto unsampled = lm::cuda::par.with(lm::launch_boxes<lm::launch_box<64, 3>, lm::launch_box<64, 5>, 4>{});
  for (int k : {2, 3, 4, 7, 64}) {
    for (int shape = 0; shape < 2; ++shape) {
      const std::uint64_t span = shape == 0 ? (1ull << 40) : 5;
      const int max_len = (k >= 64 ? 5000 : 40000) / (cuda_test::quick() ? 10 : 1);
      const std::string what = "K=" + std::to_string(k) + " shape " + std::to_string(shape);
      auto runs = make_runs<std::int32_t>(g, k, max_len, span, false);
      if (cuda_test::in_shard()) check_case(runs, lm::less<>(), what + " box 64x20", sampled);
      if (cuda_test::in_shard()) check_case(runs, lm::less<>(), what + " box 64x5", unsampled);
    }
  }
}

BOOST_AUTO_TEST_CASE(ranges_of_device_vector_iterators) {
  std::vector<thrust::device_vector<int>> runs;
  std::vector<std::pair<thrust::device_vector<int>::iterator, thrust::device_vector<int>::iterator>> ranges;
  std::vector<int> want;
  for (int k = 0; k < 5; ++k) {
    std::vector<int> h(1000 * static_cast<std::size_t>(k));
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<int>(i * (k + 1));
    want.insert(want.end(), h.begin(), h.end());
    runs.push_back(to_device(h));
  }
  for (auto& r : runs) ranges.push_back({r.begin(), r.end()});
  std::stable_sort(want.begin(), want.end());
  thrust::device_vector<int> out(want.size());
  const auto end = lm::multiway_merge(lm::cuda::par, ranges.begin(), ranges.end(), out.begin());
  BOOST_TEST((end == out.end()));
  BOOST_TEST((to_host(out) == want));
}

// A user's comparator (keys equal by their quotient by 8: many ties, so
// stability shows in the values), ranges at odd offsets of one buffer (no
// 16-byte alignment for the bulk copies to lean on), K = 3 to 9.
struct by_eighths {
  __host__ __device__ bool operator()(int a, int b) const { return a / 8 < b / 8; }
};
BOOST_AUTO_TEST_CASE(misaligned_ranges_under_a_comparator_struct) {
  std::mt19937_64 g(11);
  for (int k : {3, 4, 7, 9}) {
    std::vector<std::vector<int>> runs(static_cast<std::size_t>(k));
    std::vector<int> all;
    std::vector<std::size_t> at;
    for (auto& r : runs) {
      r.resize(static_cast<std::size_t>(g() % 200000));
      for (int& x : r) x = static_cast<int>(g() % 4096);
      std::stable_sort(r.begin(), r.end(), by_eighths());
      all.push_back(-1);  // one element before each range: odd offsets
      at.push_back(all.size());
      all.insert(all.end(), r.begin(), r.end());
    }
    std::vector<int> tags(all.size());
    for (std::size_t i = 0; i < tags.size(); ++i) tags[i] = static_cast<int>(i);
    const thrust::device_vector<int> d_all = to_device(all), d_tags = to_device(tags);
    std::vector<std::pair<const int*, const int*>> host, dev;
    std::vector<const int*> host_vals, dev_vals;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      host.push_back({all.data() + at[r], all.data() + at[r] + runs[r].size()});
      const int* p = thrust::raw_pointer_cast(d_all.data()) + at[r];
      dev.push_back({p, p + runs[r].size()});
      host_vals.push_back(tags.data() + at[r]);
      dev_vals.push_back(thrust::raw_pointer_cast(d_tags.data()) + at[r]);
    }
    const std::size_t n = all.size() - runs.size();
    std::vector<int> want(n), want_vals(n);
    lm::multiway_merge_by_key(lm::serial, host.begin(), host.end(), host_vals.begin(), want.begin(), want_vals.begin(),
                              by_eighths());
    thrust::device_vector<int> keys_out(n), vals_out(n);
    lm::multiway_merge_by_key(lm::cuda::par, dev.begin(), dev.end(), dev_vals.begin(), keys_out.begin(),
                              vals_out.begin(), by_eighths());
    BOOST_TEST((to_host(keys_out) == want && to_host(vals_out) == want_vals), "K=" << k << " pairs");
    thrust::device_vector<int> out(n);
    lm::multiway_merge(lm::cuda::par, dev.begin(), dev.end(), out.begin(), by_eighths());
    BOOST_TEST((to_host(out) == want), "K=" << k << " keys");
  }
}

// Ranges that are no memory (counting iterators): the levels of 2-way merges.
BOOST_AUTO_TEST_CASE(ranges_of_counting_iterators) {
  using count = thrust::counting_iterator<long long>;
  std::vector<std::pair<count, count>> ranges;
  std::vector<long long> want;
  for (long long k = 0; k < 6; ++k) {
    ranges.push_back({count(k * 1000), count(k * 1000 + 5000 * (k % 3))});
    for (long long i = k * 1000; i < k * 1000 + 5000 * (k % 3); ++i) want.push_back(i);
  }
  std::stable_sort(want.begin(), want.end());
  thrust::device_vector<long long> out(want.size());
  lm::multiway_merge(lm::cuda::par, ranges.begin(), ranges.end(), out.begin());
  BOOST_TEST((to_host(out) == want));
}

BOOST_AUTO_TEST_CASE(bad_input_names_the_range) {
  thrust::device_vector<int> a(std::vector<int>{1, 3, 5}), b(std::vector<int>{2, 4}), c(std::vector<int>{9, 0});
  std::vector<int> host_b = {2, 4};
  const int* pa = thrust::raw_pointer_cast(a.data());
  const int* pb = thrust::raw_pointer_cast(b.data());
  const int* pc = thrust::raw_pointer_cast(c.data());
  thrust::device_vector<int> out(7, -1);
  auto message_has = [](const char* text) {
    return [text](const std::invalid_argument& e) { return std::string(e.what()).find(text) != std::string::npos; };
  };
  std::vector<std::pair<const int*, const int*>> host = {{pa, pa + 3}, {host_b.data(), host_b.data() + 2}};
  BOOST_CHECK_EXCEPTION(lm::multiway_merge(lm::cuda::par, host.begin(), host.end(), out.begin()), std::invalid_argument,
                        message_has("ranges[1]"));
  std::vector<std::pair<const int*, const int*>> over = {{pa, pa + 3}, {pb, pb + 2}};
  BOOST_CHECK_EXCEPTION(lm::multiway_merge(lm::cuda::par, over.begin(), over.end(), b.begin()), std::invalid_argument,
                        message_has("out overlaps ranges[1]"));
  std::vector<std::pair<const int*, const int*>> unsorted = {{pa, pa + 3}, {pb, pb + 2}, {pc, pc + 2}};
  BOOST_CHECK_EXCEPTION(lm::multiway_merge(lm::cuda::par.checked(), unsorted.begin(), unsorted.end(), out.begin()),
                        std::invalid_argument, message_has("ranges[2] is not sorted"));
  BOOST_TEST((to_host(out) == std::vector<int>(7, -1)));
}
