// The merge sort's tile parts that are plain C++ (backends/engine/search.hpp:
// group_split; cta_merge.cuh: cta_merge_pairs, cta_merge_pieces), run on the CPU: nvcc builds
// them for the host too, so these checks need no GPU and run in CI. Each
// result is compared with a brute-force stable merge.
#define BOOST_TEST_MODULE libmerge_cuda_parts_on_host
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include <test/support/internals.cuh>

namespace cb = internals::cuda;
namespace engine = internals::engine;
using libmerge::index_t;

namespace {

struct int_less {
  LIBMERGE_HOST_DEVICE bool operator()(int a, int b) const { return a < b; }
};

// A group of four sorted runs of width w (run k at keys[k * w], len[k] long).
struct four_runs {
  index_t w;
  index_t len[4];
  std::vector<int> keys;

  engine::run_group<4, int> group() const {
    engine::run_group<4, int> g;
    g.keys = keys.data();
    g.width = w;
    for (int k = 0; k < 4; ++k) g.len[k] = len[k];
    return g;
  }
  // counts[d][k]: how many of the first d outputs of the stable merge of the
  // four runs (ties to the earlier run) come from run k.
  std::vector<std::vector<index_t>> brute_force_splits() const {
    std::vector<std::pair<int, int>> all;  // (key, run)
    for (int k = 0; k < 4; ++k) {
      for (index_t i = 0; i < len[k]; ++i) all.emplace_back(keys[k * w + i], k);
    }
    std::stable_sort(all.begin(), all.end(), [](auto x, auto y) { return x.first < y.first; });
    std::vector<std::vector<index_t>> counts(all.size() + 1, std::vector<index_t>(4, 0));
    for (std::size_t d = 0; d < all.size(); ++d) {
      counts[d + 1] = counts[d];
      ++counts[d + 1][all[d].second];
    }
    return counts;
  }
};

four_runs make_runs(std::mt19937& rng, index_t w, int key_range, bool short_tail) {
  four_runs r{w, {w, w, w, w}, std::vector<int>(4 * w, 0)};
  if (short_tail) {  // the last group of a pass: runs cut short or empty
    r.len[2] = rng() % (w + 1);
    r.len[3] = rng() % (r.len[2] + 1);
  }
  for (int k = 0; k < 4; ++k) {
    std::vector<int> run(r.len[k]);
    for (auto& x : run) x = static_cast<int>(rng() % key_range);
    std::sort(run.begin(), run.end());
    std::copy(run.begin(), run.end(), r.keys.begin() + k * w);
  }
  return r;
}

// The pair samples sample_kernel writes for a group: each pair's split
// at every multiple of nv of its merge, and the keys at ranks j * nv and
// j * nv - 1 beside them.
struct pair_samples {
  std::vector<index_t> s;
  std::vector<int> keys;
  index_t stride;

  pair_samples(const four_runs& r, index_t nv) : stride((2 * r.w + nv - 1) / nv + 1) {
    s.resize(2 * stride);
    keys.resize(4 * stride);
    int_less comp;
    for (int pair = 0; pair < 2; ++pair) {
      engine::run_group<2, int> g;
      g.keys = r.keys.data() + 2 * pair * r.w;
      g.width = r.w;
      g.len[0] = r.len[2 * pair];
      g.len[1] = r.len[2 * pair + 1];
      const index_t size = g.len[0] + g.len[1];
      const engine::run_half<4, int> half{g.keys, g.len[0], g.keys + r.w, g.len[1]};
      for (index_t j = 0; j < stride; ++j) {
        const index_t i = pair * stride + j;
        const index_t rank = j * nv < size ? j * nv : size;
        s[i] = engine::group_split(g, rank, comp).s[0];
        if (rank < size) keys[2 * i] = half.at(rank, s[i], comp);
        if (rank > 0) keys[2 * i + 1] = engine::last_before(half, rank, s[i], comp);
      }
    }
  }
  engine::half_samples<int> view(index_t nv) const {
    return {{s.data(), s.data() + stride}, {keys.data(), keys.data() + 2 * stride}, nv};
  }
};

}  // namespace

// Every tile start of a 4-way pass (every multiple of nv, and the end), with
// the partition's pair samples and without, over runs with few and with many
// distinct keys, full and cut short.
BOOST_AUTO_TEST_CASE(four_way_split_matches_a_stable_merge) {
  std::mt19937 rng(42);
  int_less comp;
  for (int trial = 0; trial < 120; ++trial) {
    const index_t w = 1 + rng() % 1500;
    const int key_range = trial % 3 == 0 ? 3 : (trial % 3 == 1 ? 100 : 1 << 30);
    const four_runs r = make_runs(rng, w, key_range, trial % 4 == 0);
    const auto expected = r.brute_force_splits();
    const index_t size = static_cast<index_t>(expected.size()) - 1;
    // Tiles of nv with pair samples every `every` ranks, a divisor of nv
    // (a whole tile, or finer: partition.cuh's
    // pair_spacing_on_samples).
    for (auto [nv, every] : {std::pair<index_t, index_t>{1, 1}, {7, 7}, {7, 1}, {64, 64}, {64, 16}, {333, 333},
                             {333, 111}, {333, 37}}) {
      const pair_samples samples(r, every);
      // Tile starts (multiples of nv: the partition searches with samples
      // there), and the group's end without samples.
      for (index_t d = 0; d <= size; d = d < size && d + nv > size ? size : d + nv) {
        const bool tile_start = d % nv == 0;
        for (bool with_samples : {false, true}) {
          if (with_samples && !tile_start) continue;
          const engine::run_split<4> got =
              with_samples ? engine::group_split(r.group(), d, comp, samples.view(every)) : engine::group_split(r.group(), d, comp);
          BOOST_REQUIRE_MESSAGE(std::equal(got.s, got.s + 4, expected[d].begin()),
                                "w=" << w << " nv=" << nv << " every=" << every << " d=" << d << " samples=" << with_samples << ": split "
                                     << got.s[0] << " " << got.s[1] << " " << got.s[2] << " " << got.s[3]);
        }
        if (d == size) break;
      }
    }
  }
}

// The four piece sizes of a 4-way tile of `count` elements, trial by trial:
// random splits, and every ninth trial one piece holding the whole tile.
void random_piece_sizes(std::mt19937& rng, int trial, int count, int (&size)[4]) {
  int left = count;
  for (int k = 0; k < 3; ++k) {
    size[k] = trial % 9 == 0 ? (k == 1 ? left : 0) : static_cast<int>(rng() % (left + 1));
    left -= size[k];
  }
  size[3] = left;
  std::shuffle(size, size + 4, rng);
}

// Appends to `expected` the tile offsets of the stable merge of
// tile[a, a_end) with tile[b, b_end) (ties to A).
void stable_merge_offsets(const std::vector<int>& tile, int a, int a_end, int b, int b_end, std::vector<int>& expected) {
  while (a < a_end || b < b_end) {
    const bool take_a = b >= b_end || (a < a_end && !(tile[b] < tile[a]));
    expected.push_back(take_a ? a++ : b++);
  }
}

// Runs a level-1 merge (merge_thread(tid, merged, src)) for every thread of
// an NT x VT tile of `count` outputs and checks each output's key and tile
// offset against `expected`.
template <int NT, int VT, class MergeThread>
void check_level1(const std::vector<int>& tile, const std::vector<int>& expected, int count, MergeThread&& merge_thread) {
  std::vector<int> got(count, -1), got_keys(count, -1), expected_keys(count);
  for (int j = 0; j < count; ++j) expected_keys[j] = tile[expected[j]];
  for (int tid = 0; tid < NT; ++tid) {
    int merged[VT], src[VT];
    merge_thread(tid, merged, src);
    for (int i = 0; i < VT; ++i) {
      const int j = VT * tid + i;
      if (j < count) {
        got[j] = src[i];
        got_keys[j] = merged[i];
      }
    }
  }
  BOOST_CHECK_EQUAL_COLLECTIONS(got.begin(), got.end(), expected.begin(), expected.end());
  BOOST_CHECK_EQUAL_COLLECTIONS(got_keys.begin(), got_keys.end(), expected_keys.begin(), expected_keys.end());
}

// Level 1 of a 4-way tile: pieces 0 2 | 1 3 in shared memory, every thread's
// VT outputs of merge(0, 1) followed by merge(2, 3), as keys and as tile
// offsets, for tiles full and partial and pieces of every shape.
template <int NT, int VT>
void check_pairs_merge(std::mt19937& rng) {
  int_less comp;
  for (int trial = 0; trial < 400; ++trial) {
    const int count = trial % 4 == 0 ? NT * VT : 1 + static_cast<int>(rng() % (NT * VT));
    int size[4];
    random_piece_sizes(rng, trial, count, size);
    const int key_range = trial % 2 ? 5 : 1 << 30;
    std::vector<int> tile;
    std::vector<int> piece[4];
    for (int k = 0; k < 4; ++k) {
      piece[k].resize(size[k]);
      for (auto& x : piece[k]) x = static_cast<int>(rng() % key_range);
      std::sort(piece[k].begin(), piece[k].end());
    }
    for (int k : {0, 2, 1, 3}) tile.insert(tile.end(), piece[k].begin(), piece[k].end());
    const int a_split = size[0], na = size[0] + size[2], b_split = na + size[1];
    // Expected tile offsets: the stable merge of (0, 1), then of (2, 3).
    std::vector<int> expected;
    stable_merge_offsets(tile, 0, a_split, na, b_split, expected);
    stable_merge_offsets(tile, a_split, na, b_split, count, expected);
    BOOST_TEST_CONTEXT("nt=" << NT << " vt=" << VT << " pieces " << size[0] << " " << size[1] << " " << size[2] << " "
                             << size[3]) {
      check_level1<NT, VT>(tile, expected, count, [&](int tid, int (&merged)[VT], int (&src)[VT]) {
        cb::cta_merge_pairs<VT>(tile.data(), na, a_split, b_split, count, tid, merged, src, comp);
      });
    }
  }
}

// Level 1 of a staged 4-way tile (cta_merge_pieces): the pieces in the order
// 0 2 | 1 3 with a gap of 0 to 3 elements before each (what bulk copies of
// 4-byte keys leave), filled with keys that are not the pieces', and the
// tile's first slot an input key (stage_ranges copies one there). Every
// thread's VT outputs must be merge(0, 1) followed by merge(2, 3), as keys and
// as offsets into the tile.
template <int NT, int VT>
void check_pieces_merge(std::mt19937& rng) {
  int_less comp;
  for (int trial = 0; trial < 400; ++trial) {
    const int count = trial % 4 == 0 ? NT * VT : 1 + static_cast<int>(rng() % (NT * VT));
    int size[4];
    random_piece_sizes(rng, trial, count, size);
    const int key_range = trial % 2 ? 5 : 1 << 30;
    cb::piece_spans p{};
    std::vector<int> tile;
    int first = -1;  // the first input key's offset
    for (int k : {0, 2, 1, 3}) {
      const int gap = static_cast<int>(rng() % 4);
      for (int g = 0; g < gap; ++g) tile.push_back(static_cast<int>(rng() % key_range) - key_range);  // no input key
      p.at[k] = static_cast<int>(tile.size());
      p.size[k] = size[k];
      std::vector<int> piece(static_cast<std::size_t>(size[k]));
      for (auto& x : piece) x = static_cast<int>(rng() % key_range);
      std::sort(piece.begin(), piece.end());
      tile.insert(tile.end(), piece.begin(), piece.end());
      if (first < 0 && size[k] > 0) first = p.at[k];
    }
    tile[0] = tile[static_cast<std::size_t>(first)];
    std::vector<int> expected;
    stable_merge_offsets(tile, p.at[0], p.at[0] + size[0], p.at[1], p.at[1] + size[1], expected);
    stable_merge_offsets(tile, p.at[2], p.at[2] + size[2], p.at[3], p.at[3] + size[3], expected);
    BOOST_TEST_CONTEXT("nt=" << NT << " vt=" << VT << " pieces " << size[0] << "@" << p.at[0] << " " << size[1] << "@"
                             << p.at[1] << " " << size[2] << "@" << p.at[2] << " " << size[3] << "@" << p.at[3]) {
      check_level1<NT, VT>(tile, expected, count, [&](int tid, int (&merged)[VT], int (&src)[VT]) {
        cb::cta_merge_pieces<VT>(tile.data(), p, tid, merged, src, comp);
      });
    }
  }
}

BOOST_AUTO_TEST_CASE(pieces_merge_steps_over_the_gaps) {
  std::mt19937 rng(11);
  check_pieces_merge<256, 17>(rng);
  check_pieces_merge<128, 23>(rng);
  check_pieces_merge<32, 3>(rng);
  check_pieces_merge<64, 1>(rng);
}

BOOST_AUTO_TEST_CASE(pairs_merge_matches_two_stable_merges) {
  std::mt19937 rng(7);
  check_pairs_merge<256, 17>(rng);
  check_pairs_merge<256, 9>(rng);
  check_pairs_merge<32, 3>(rng);
  check_pairs_merge<64, 1>(rng);
}
