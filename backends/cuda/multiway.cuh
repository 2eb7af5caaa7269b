// lm::multiway_merge on the GPU. Up to four sorted runs merge in one pass of
// the sort's 4-way tiles (merge_tile_of_parts: its loaders, merge levels and
// storers), each piece read from its own run (runs_io); more runs merge by
// levels of such passes, a level's groups of four consecutive runs at a time
// (stable: ties go to the earlier run). The sort across GPUs merges the
// pieces a rank receives with lm::multiway_merge itself (nccl/merge_pieces.cuh).
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "merge.cuh"
#include "merge_sort.cuh"

namespace libmerge::detail::cuda_backend {

// Up to four sorted runs: run k is keys[k][0, len[k]), its values vals[k].
template <class K, class V>
struct four_runs {
  const K* keys[4];
  const V* vals[4];
  index_t len[4];
  __device__ __forceinline__ const K* run(int k) const { return keys[k]; }
  __device__ __forceinline__ const K& key(int k, index_t i) const { return keys[k][i]; }
  // The halves of the 4-way merge: runs 0 and 1, runs 2 and 3.
  __device__ __forceinline__ run_half<4, K> half(int h) const {
    return {keys[2 * h], len[2 * h], keys[2 * h + 1], len[2 * h + 1]};
  }
};

// Tile slot j of a 4-way tile from the runs (load_pieces' reader): slot
// order 0 2 | 1 3 (pieces_of), slot piece s at from[s], beginning at start[s].
// Selects, not an array indexed at run time (that went to local memory).
template <class T>
struct runs_reader {
  const T* from[4];
  int start[4];
  __device__ __forceinline__ T operator()(int j) const {
    const bool hi = j >= start[2];
    const bool odd = hi ? j >= start[3] : j >= start[1];
    const T* p = hi ? (odd ? from[3] : from[2]) : (odd ? from[1] : from[0]);
    const int s = hi ? (odd ? start[3] : start[2]) : (odd ? start[1] : 0);
    return p[j - s];
  }
};

// A tile's io (merge_tile_of_parts) over four runs: piece k of tile d is
// keys[k] + d.at[k]; the outputs go to keys_out + d.out (vals_out).
template <class K, class V>
struct runs_io {
  using key_type = K;
  using value_type = V;
  const four_runs<K, V>& runs;
  K* keys;
  V* vals;
  __device__ __forceinline__ K* keys_out() const { return keys; }
  __device__ __forceinline__ V* vals_out() const { return vals; }
  __device__ __forceinline__ void key_pieces(const tile_desc<4>& d, const K* (&p)[4]) const {
    p[0] = runs.keys[0] + d.at[0];
    p[1] = runs.keys[2] + d.at[2];
    p[2] = runs.keys[1] + d.at[1];
    p[3] = runs.keys[3] + d.at[3];
  }
  template <class T>
  static __device__ __forceinline__ runs_reader<T> reader(const T* const (&from)[4], const tile_desc<4>& d,
                                                          const piece_map<4>& m) {
    return {{from[0] + d.at[0], from[2] + d.at[2], from[1] + d.at[1], from[3] + d.at[3]},
            {m.start[0], m.start[1], m.start[2], m.start[3]}};
  }
  __device__ __forceinline__ runs_reader<K> key_reader(const tile_desc<4>& d, const piece_map<4>& m) const {
    return reader(runs.keys, d, m);
  }
  __device__ __forceinline__ runs_reader<V> val_reader(const tile_desc<4>& d, const piece_map<4>& m) const {
    return reader(runs.vals, d, m);
  }
};

// group_split (engine/search.hpp) for four runs anywhere: sampled_cut's search over their samples.
template <class K, class V, class Comp>
__device__ __forceinline__ run_split<4> group_split(const four_runs<K, V>& g, index_t d, Comp& comp,
                                                   half_samples<K> samples) {
  return halves_split(g.half(0), g.half(1), d, comp, samples);
}

// Groups of up to four runs that one launch of each kernel merges, each
// group into out + at[g]: group g's tiles are [tile_first[g],
// tile_first[g + 1]), its pair samples [sample_first[g], sample_first[g + 1])
// (half h's j-th at sample_first[g] + h * stride[g] + j), its runs' samples
// (sampled tilings: every rate.every() keys) from run_sample_first[g], run after run. A level's groups
// in one launch, not one after another: H100, 2^28 int32 keys in 64 runs took
// 4.93 ms one group at a time (docs/cuda-merge.md).
inline constexpr int max_groups = 32;  // (kernel parameters of about 4 KB)
template <class K, class V>
struct run_groups {
  four_runs<K, V> runs[max_groups];
  index_t at[max_groups];
  index_t stride[max_groups];
  index_t sample_first[max_groups + 1];
  index_t run_sample_first[max_groups + 1];
  int tile_first[max_groups + 1];
  int count;
  sample_rate rate;
  // The group of tile t (of sample i): how many firsts after the first are
  // not above it (independent compares, no chain of dependent loads).
  template <class T>
  static __device__ __forceinline__ int find(const T (&first)[max_groups + 1], int count, T t) {
    int g = 0;
#pragma unroll
    for (int i = 1; i < max_groups; ++i) g += i < count && first[i] <= t ? 1 : 0;
    return g;
  }
  __device__ __forceinline__ int group_of_tile(int t) const { return find(tile_first, count, t); }
  __device__ __forceinline__ int group_of_sample(index_t i) const { return find(sample_first, count, i); }
  // Group g's runs of samples in run_samples (runs_key_sampling wrote them).
  __device__ __forceinline__ four_runs<K, V> sample_runs(int g, const K* run_samples) const {
    four_runs<K, V> s{};
    index_t at_ = run_sample_first[g];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      s.keys[k] = run_samples + at_;
      s.len[k] = rate.of(runs[g].len[k]);
      at_ += s.len[k];
    }
    return s;
  }
  // Half h of sample_runs(g, run_samples), built directly (a half picked from
  // a built four_runs by a run-time h went to local memory).
  __device__ __forceinline__ run_half<4, K> sample_half_of(int g, int h, const K* run_samples) const {
    const index_t n0 = rate.of(runs[g].len[0]), n1 = rate.of(runs[g].len[1]);
    const index_t nx = rate.of(runs[g].len[2 * h]), ny = rate.of(runs[g].len[2 * h + 1]);
    const K* x = run_samples + run_sample_first[g] + (h == 0 ? 0 : n0 + n1);
    return {x, nx, x + nx, ny};
  }
};

// The run samples of each group (sample_kernel): run k's key j * rate.every()
// to run_sample_first[g] + (the samples of runs before k) + j, so that the
// tiling searches these first (sampled_cut), as the sort's passes do.
template <class K, class V>
struct runs_key_sampling {
  using key_type = K;
  run_groups<K, V> groups;
  struct samples {
    const run_groups<K, V>& groups;
    index_t count;
    __device__ __forceinline__ run_sample<K> at(index_t i) const {
      const int g = run_groups<K, V>::find(groups.run_sample_first, groups.count, i);
      const four_runs<K, V>& r = groups.runs[g];
      index_t j = i - groups.run_sample_first[g];
      const K* key = r.keys[3];
      bool found = false;
#pragma unroll
      for (int k = 0; k < 3; ++k) {  // selects, not a run-time index (local memory)
        const index_t m = groups.rate.of(r.len[k]);
        if (!found && j < m) {
          key = r.keys[k];
          found = true;
        } else if (!found) {
          j -= m;
        }
      }
      return {key + (j << groups.rate.log2)};
    }
  };
  __device__ __forceinline__ samples view() const { return {groups, groups.run_sample_first[groups.count]}; }
};

// The pair samples of each group (sample_kernel): for half h and j <
// stride[g], the half's inner split at rank j * spacing (clamped to its
// size), and its elements of ranks j * spacing and j * spacing - 1: of the
// runs (spacing nv), or of their samples (spacing nv / rate.every()). They
// start each tile's 4-way search inside one tile of each run.
// 2 H100s, 2^29 int32: 4.1 ms without, 1.6 for lm::merge of two (docs/cuda-merge-sort.md)
template <class K, class V>
struct runs_sampling {
  using key_type = K;
  run_groups<K, V> groups;
  index_t spacing;
  const K* run_samples;  // null: sample the runs themselves
  struct samples {
    const run_groups<K, V>& groups;
    index_t spacing, count;
    const K* run_samples;
    __device__ __forceinline__ pair_sample<K> at(index_t i) const {
      const int g = groups.group_of_sample(i);
      const index_t stride = groups.stride[g];
      const index_t k = i - groups.sample_first[g];
      const int h = static_cast<int>(k / stride);
      const run_half<4, K> half =
          run_samples != nullptr ? groups.sample_half_of(g, h, run_samples) : groups.runs[g].half(h);
      const index_t rank = (k % stride) * spacing;
      return {half, rank < half.size() ? rank : half.size()};
    }
  };
  __device__ __forceinline__ samples view() const {
    return {groups, spacing, groups.sample_first[groups.count], run_samples};
  }
};

// The tiles of each group (pass_partition_kernel): a thread a tile finds its
// start (stable: ties in run order) by sampled_cut over the run samples where
// there are some, else by halves_split over the runs, each from the group's
// pair samples; a tile ends where the next of its group starts.
// H100, 2^28 int32 keys and pairs: the search over the runs read 9-10 KB a tile (docs/cuda-merge.md).
template <class K, class V>
struct runs_tiling {
  run_groups<K, V> groups;
  index_t nv, spacing;
  const index_t* samples;
  const K* sample_keys;
  const K* run_samples;  // null: search the runs
  struct tile_of {
    int g;
    index_t local;  // the tile's index in its group
    bool active;
    index_t num_tiles;
  };
  template <int Ways>
  __device__ __forceinline__ tile_of at(index_t tile) const {
    static_assert(Ways == 4, "groups of four runs make 4-way tiles");
    const int tiles = groups.tile_first[groups.count];
    const int g = groups.group_of_tile(static_cast<int>(tile < tiles ? tile : 0));
    return {g, tile - groups.tile_first[g], true, tiles};
  }
  template <class Comp>
  __device__ __forceinline__ run_split<4> start(const tile_of& t, Comp& comp) const {
    const index_t first = groups.sample_first[t.g], stride = groups.stride[t.g];
    const half_samples<K> hs{{samples + first, samples + first + stride},
                             {sample_keys + 2 * first, sample_keys + 2 * (first + stride)}, spacing};
    const four_runs<K, V>& r = groups.runs[t.g];
    if (run_samples != nullptr) {
      return sampled_cut(r, groups.sample_runs(t.g, run_samples), t.local * (nv >> groups.rate.log2), hs, comp,
                         groups.rate);
    }
    return halves_split(r.half(0), r.half(1), t.local * nv, comp, hs);
  }
  __device__ __forceinline__ tile_desc<4> describe(const tile_of& t, const run_split<4>& first,
                                                   const run_split<4>& next) const {
    const four_runs<K, V>& r = groups.runs[t.g];
    const index_t size = r.len[0] + r.len[1] + r.len[2] + r.len[3];
    const index_t d0 = t.local * nv;
    const index_t d1 = d0 + nv < size ? d0 + nv : size;
    index_t begin[4], end[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      begin[k] = first.s[k];
      end[k] = d1 == size ? r.len[k] : next.s[k];
    }
    clamp_pieces(r.len, begin, end, d1 - d0);
    tile_desc<4> d;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      d.at[k] = begin[k];
      d.size[k] = static_cast<std::uint16_t>(end[k] - begin[k]);
    }
    d.out = groups.at[t.g] + d0;
    return d;
  }
};

// A pass over groups of runs (pass_kernel): every tile has work, none
// samples its output, no guard. A tile's pieces come from its group's runs.
template <class K, class V, bool WithValues>
struct runs_pass {
  using key_type = K;
  using value_type = V;
  static constexpr bool with_values = WithValues;
  static constexpr bool guard = false;
  run_groups<K, V> groups;
  K* keys_out;
  V* vals_out;
  __device__ __forceinline__ int num_tiles() const { return groups.tile_first[groups.count]; }
  __device__ __forceinline__ runs_io<K, V> io() const {
    return {groups.runs[groups.group_of_tile(static_cast<int>(blockIdx.x))], keys_out, vals_out};
  }
  static __device__ __forceinline__ K* samples() { return nullptr; }
  __device__ __forceinline__ void add(unsigned long long) const {}
};

// The scratch of merge_groups for n elements in all in at most max_groups
// groups: tile descriptors, pair samples (a tile's worth of a half apart, and
// a few more a group), and run samples.
template <class Box, class K>
struct run_groups_scratch {
  index_t tiles, samples, run_samples;
  std::size_t desc_bytes, sample_bytes, sample_key_bytes, bytes;
  explicit run_groups_scratch(index_t n)
      : tiles((n + Box::nv - 1) / Box::nv + max_groups),
        samples(2 * tiles + 6 * max_groups),
        run_samples(n / sample_every + 4 * max_groups) {
    desc_bytes = align_up(sizeof(tile_desc<4>) * static_cast<std::size_t>(tiles), 256);
    sample_bytes = align_up(sizeof(index_t) * static_cast<std::size_t>(samples), 256);
    sample_key_bytes = align_up(sizeof(K) * 2 * static_cast<std::size_t>(samples), 256);
    bytes = desc_bytes + sample_bytes + sample_key_bytes + align_up(sizeof(K) * static_cast<std::size_t>(run_samples), 256);
  }
};

// One group for run_groups: its runs (up to four; empty ones allowed), merged
// to out + at.
template <class K, class V>
struct run_group_job {
  four_runs<K, V> runs;
  index_t at;
};

// The next up to max_groups non-empty jobs from jobs[first] on (first moves
// past them) as one launch's groups; spacing: the pair samples', in keys (nv)
// or, sampled, in run samples (at rate). Returns the elements they hold.
template <class K, class V>
index_t next_groups(const std::vector<run_group_job<K, V>>& jobs, std::size_t& first, index_t nv, bool sampled,
                    sample_rate rate, run_groups<K, V>& gs, const char* algorithm) {
  const index_t spacing = sampled ? nv >> rate.log2 : nv;
  const auto size_of = [&](index_t len) { return sampled ? rate.of(len) : len; };
  index_t n = 0;
  gs = run_groups<K, V>{};
  gs.rate = rate;
  for (; first < jobs.size() && gs.count < max_groups; ++first) {
    const four_runs<K, V>& r = jobs[first].runs;
    const index_t size = r.len[0] + r.len[1] + r.len[2] + r.len[3];
    if (size == 0) continue;
    const int g = gs.count++;
    gs.runs[g] = r;
    gs.at[g] = jobs[first].at;
    const index_t half = std::max(size_of(r.len[0]) + size_of(r.len[1]), size_of(r.len[2]) + size_of(r.len[3]));
    gs.stride[g] = (half + spacing - 1) / spacing + 1;
    gs.sample_first[g + 1] = gs.sample_first[g] + 2 * gs.stride[g];
    gs.run_sample_first[g + 1] =
        gs.run_sample_first[g] + rate.of(r.len[0]) + rate.of(r.len[1]) + rate.of(r.len[2]) + rate.of(r.len[3]);
    const index_t tiles = gs.tile_first[g] + (size + nv - 1) / nv;
    if (tiles > max_grid_ctas / 32) throw_too_many_tiles(algorithm);
    gs.tile_first[g + 1] = static_cast<int>(tiles);
    n += size;
  }
  return n;
}

// The k-way merge's run samples for tiles of nv keys: the sparsest spacing (a
// power of two, at least the sort's) that leaves a tile tile_samples of them.
// Sparser: fewer bytes read; denser: a shorter walk a tile (sampled_cut).
inline sample_rate runs_sample_rate(index_t nv, int tile_samples) {
  sample_rate r{5};
  static_assert(sort_sample_rate::every() == 1 << 5, "the sort's spacing is the densest");
  while (tile_samples > 0 && nv % (2 * r.every()) == 0 && nv / (2 * r.every()) >= tile_samples) ++r.log2;
  return r;
}

// Merges each job's runs to keys_out + at (vals_out + at), stable in run
// order, one 4-way pass with Box (the sort's 4-way pass box for these types)
// for up to max_groups jobs at a time; scratch: run_groups_scratch<Box, K>(n)
// bytes, n the most elements max_groups consecutive jobs hold. Tiles of at
// least runs_tile_samples run samples search those first (sampled_cut), as the
// sort's passes do.
template <class Box, class K, class V, bool WithValues, class Comp>
void merge_groups(const std::vector<run_group_job<K, V>>& jobs, K* keys_out, V* vals_out, Comp comp,
                  unsigned char* scratch, cudaStream_t stream, const device_info& dev, const char* algorithm) {
  auto merge_kernel = pass_kernel<Box, 4, runs_pass<K, V, WithValues>, Comp>;
  prepare_shared_memory(merge_kernel, pass_layout<Box, K, V, WithValues>::bytes, dev, Box::nt, Box::vt, algorithm);
  const auto nv = static_cast<index_t>(Box::nv);
  const int tile_samples = entry_of(dev).sort.runs_tile_samples;
  const sample_rate rate = runs_sample_rate(nv, tile_samples);
  const bool sampled = tile_samples > 0 && partitions_on_samples(rate.every(), nv, rate.every()) &&
                       nv / rate.every() >= tile_samples;
  const index_t spacing = sampled ? nv >> rate.log2 : nv;
  for (std::size_t first = 0; first < jobs.size();) {
    run_groups<K, V> gs;
    const index_t n = next_groups(jobs, first, nv, sampled, rate, gs, algorithm);
    if (gs.count == 0) continue;
    const run_groups_scratch<Box, K> s(n);
    auto* descs = reinterpret_cast<tile_desc<4>*>(scratch);
    auto* samples = reinterpret_cast<index_t*>(scratch + s.desc_bytes);
    auto* sample_keys = reinterpret_cast<K*>(scratch + s.desc_bytes + s.sample_bytes);
    K* run_samples =
        sampled ? reinterpret_cast<K*>(scratch + s.desc_bytes + s.sample_bytes + s.sample_key_bytes) : nullptr;
    const index_t tiles = gs.tile_first[gs.count], count = gs.sample_first[gs.count];
    const auto blocks = [](index_t k) { return (k + sample_threads - 1) / sample_threads; };
    if (sampled) {
      const index_t keys = gs.run_sample_first[gs.count];
      launch(sample_kernel<runs_key_sampling<K, V>, Comp>, blocks(keys), sample_threads, 0, stream, true, dev,
             algorithm, "sample_kernel", runs_key_sampling<K, V>{gs}, static_cast<index_t*>(nullptr), run_samples,
             comp);
    }
    launch(sample_kernel<runs_sampling<K, V>, Comp>, blocks(count), sample_threads, 0, stream, true, dev, algorithm,
           "sample_kernel", runs_sampling<K, V>{gs, spacing, run_samples}, samples, sample_keys, comp);
    launch(pass_partition_kernel<4, runs_tiling<K, V>, Comp>, (tiles + partition_tiles - 1) / partition_tiles,
           partition_tiles + 1, 0, stream, true, dev, algorithm, "pass_partition_kernel",
           runs_tiling<K, V>{gs, nv, spacing, samples, sample_keys, run_samples}, descs, comp);
    launch(merge_kernel, tiles, Box::nt, pass_layout<Box, K, V, WithValues>::bytes, stream, true, dev, algorithm,
           "pass_kernel", runs_pass<K, V, WithValues>{gs, keys_out, vals_out}, static_cast<const tile_desc<4>*>(descs),
           comp);
  }
}

// Calls f(box) with the k-way pass box for (K, V) on dev and n elements (the
// line's kway_* box, else the sort's 4-way pass box); returns false (f not called) where
// the sort has no 4-way passes for these types (keys of 8 bytes or more without values, large elements).
template <class Policy, class K, class V, bool WithValues, class Comp, class F>
bool with_four_way_box(const device_info& dev, index_t n, const char* algorithm, F&& f) {
  bool four = false;
  if constexpr (sizeof(K) + (WithValues ? sizeof(V) : 0) <= max_element_bytes) {
    with_sort_boxes<Policy, K, V, WithValues, false, V*, Comp>(
        dev, algorithm, n, [&](auto, auto, auto ways, auto, auto, auto kway) {
          if constexpr (decltype(ways)::value == 4) {
            four = true;
            f(kway);
          }
        });
  }
  return four;
}


// ---------------------------------------------------------------------------
// lm::multiway_merge's levels.

// The value type a k-way merge stores (keys only: none; char stands in, as
// in the sort's keys-only kernels, which pick the 4-way box).
template <class It, bool = has_values<It>>
struct run_value {
  using type = char;
};
template <class It>
struct run_value<It, true> {
  using type = value_of<It>;
};

// A run of a level after the first, in scratch.
template <class K, class V>
struct scratch_run {
  K* first;
  index_t n;
  V* vals;
};

// Levels of a k-way merge, each merging groups of `ways` consecutive runs
// (ties stay in run order; the last group may have fewer), until one run is
// left, in the output; the levels between alternate between scratch buffers
// 0 and 1 at `buffers` (level_buffers(runs, ways) of them).
// merge_level(runs, keys_to, vals_to) merges a level's groups one after
// another to keys_to (vals_to). No level (one run): merge_level copies it.
inline int merge_levels_of(std::size_t runs, std::size_t ways) {
  int levels = 0;
  for (std::size_t k = runs; k > 1; k = (k + ways - 1) / ways) ++levels;
  return levels;
}
inline std::size_t level_buffers(std::size_t runs, std::size_t ways) {
  const int levels = merge_levels_of(runs, ways);
  return levels >= 3 ? 2 : (levels == 2 ? 1 : 0);
}
template <class K, class V, bool WithValues, class Run, class KeysOut, class ValsOut, class MergeLevel>
void merge_in_levels(const std::vector<Run>& runs, index_t total, std::size_t ways, KeysOut keys_out,
                     ValsOut vals_out, unsigned char* buffers, MergeLevel&& merge_level) {
  const int levels = merge_levels_of(runs.size(), ways);
  const std::size_t key_bytes = bytes_of<K>(total);
  const std::size_t data_bytes = key_bytes + (WithValues ? bytes_of<V>(total) : 0);
  // Level l (from 1) writes buffer (levels - l - 1) % 2, so that the last writes the output.
  auto level = [&](const auto& from, int l) {
    std::vector<scratch_run<K, V>> next;
    if (l >= levels) {
      merge_level(from, keys_out, vals_out);
      return next;
    }
    unsigned char* to = buffers + static_cast<std::size_t>((levels - l - 1) % 2) * data_bytes;
    K* k_to = reinterpret_cast<K*>(to);
    V* v_to = WithValues ? reinterpret_cast<V*>(to + key_bytes) : nullptr;
    merge_level(from, k_to, v_to);
    index_t out = 0;
    for (std::size_t i = 0; i < from.size(); i += ways) {
      index_t n = 0;
      for (std::size_t j = i; j < std::min(i + ways, from.size()); ++j) n += from[j].n;
      next.push_back({k_to + out, n, WithValues ? v_to + out : nullptr});
      out += n;
    }
    return next;
  };
  auto next = level(runs, 1);
  for (int l = 2; l <= levels; ++l) next = level(next, l);
}

// it + n for an output that may be absent (no_values; values of keys-only
// levels: null).
template <class It>
It shifted(It it, index_t n) {
  if constexpr (std::is_same_v<It, no_values>) {
    return it;
  } else if constexpr (std::is_pointer_v<It>) {
    return it == nullptr ? it : it + n;
  } else {
    return n == 0 ? it : it + n;
  }
}

// A group of one or two runs: lm::merge's kernels (one run: a merge with nothing, a copy).
template <bool WithValues, class Policy, class Run, class KOut, class VOut, class Comp>
void merge_two(const Policy& policy, const Run* g, std::size_t m, KOut k_to, VOut v_to, Comp comp) {
  const Run& b = g[m > 1 ? 1 : 0];
  const index_t nb = m > 1 ? b.n : 0;
  if constexpr (WithValues) {
    merge(policy, g[0].first, g[0].n, b.first, nb, g[0].vals, b.vals, k_to, v_to, comp);
  } else {
    merge(policy, g[0].first, g[0].n, b.first, nb, no_values{}, no_values{}, k_to, no_values{}, comp);
  }
}

// The k-way merge by 4-way passes (merge_groups: a level's groups of four
// runs in one launch of each kernel) where the runs and the output are device
// pointers and the sort has 4-way passes for the types; false (nothing done)
// otherwise. A level of one group of two runs (the last of K = 2, 5 to 8, ...)
// takes lm::merge's kernels.
template <class K, class V, bool WithValues, class Policy, class Run, class KeysOut, class ValsOut, class Comp>
bool merge_in_fours(const Policy& policy, const device_info& dev, const std::vector<Run>& runs, index_t total,
                    KeysOut keys_out, ValsOut vals_out, Comp comp, const char* algorithm) {
  using DK = decltype(to_device(runs[0].first, 0, dev, algorithm, ""));
  using DV = decltype(to_device(runs[0].vals, 0, dev, algorithm, ""));
  using DKOut = decltype(to_device(keys_out, 0, dev, algorithm, ""));
  using DVOut = decltype(to_device(vals_out, 0, dev, algorithm, ""));
  constexpr bool pointers = std::is_pointer_v<DK> && std::is_same_v<DKOut, K*> &&
                            (!WithValues || (std::is_pointer_v<DV> && std::is_same_v<DVOut, V*>));
  if constexpr (!pointers) {
    return false;
  } else {
    const cudaStream_t stream = policy.stream();
    return with_four_way_box<Policy, K, V, WithValues, Comp>(dev, total, algorithm, [&](auto box) {
      using Box = decltype(box);
      std::vector<scratch_run<K, V>> level;  // the non-empty runs
      for (std::size_t k = 0; k < runs.size(); ++k) {
        if (runs[k].n == 0) continue;
        const std::string name = "ranges[" + std::to_string(k) + "]";
        K* keys = const_cast<K*>(to_device(runs[k].first, runs[k].n, dev, algorithm, name.c_str()));
        V* vals = nullptr;
        if constexpr (WithValues) vals = const_cast<V*>(to_device(runs[k].vals, runs[k].n, dev, algorithm, name.c_str()));
        level.push_back({keys, runs[k].n, vals});
      }
      const std::size_t data_bytes = bytes_of<K>(total) + (WithValues ? bytes_of<V>(total) : 0);
      const std::size_t buffer_bytes = level_buffers(level.size(), 4) * data_bytes;
      temporary_storage<typename Policy::allocator_type> temp(
          policy.allocator(), stream, buffer_bytes + run_groups_scratch<Box, K>(total).bytes, algorithm);
      unsigned char* buffers = temp.template as<unsigned char>();
      K* const k_out = to_device(keys_out, total, dev, algorithm, "out");
      V* v_out = nullptr;
      if constexpr (WithValues) v_out = to_device(vals_out, total, dev, algorithm, "vals_out");
      merge_in_levels<K, V, WithValues>(level, total, 4, k_out, v_out, buffers,
                                        [&](const std::vector<scratch_run<K, V>>& from, K* k_to, V* v_to) {
        if (from.size() <= 2) return merge_two<WithValues>(policy, from.data(), from.size(), k_to, v_to, comp);
        std::vector<run_group_job<K, V>> jobs;
        index_t out = 0;
        for (std::size_t i = 0; i < from.size(); i += 4) {
          run_group_job<K, V> job{{}, out};
          for (std::size_t j = 0; j < 4; ++j) {
            const scratch_run<K, V>& run = from[i + j < from.size() ? i + j : i];  // (an empty stand-in past the end)
            job.runs.keys[j] = run.first;
            job.runs.vals[j] = run.vals;
            job.runs.len[j] = i + j < from.size() ? run.n : 0;
            out += job.runs.len[j];
          }
          jobs.push_back(job);
        }
        merge_groups<Box, K, V, WithValues>(jobs, k_to, v_to, comp, buffers + buffer_bytes, stream, dev, algorithm);
      });
    });
  }
}

// lm::multiway_merge: by 4-way passes (merge_in_fours), else (iterators that
// are no pointers, types without 4-way passes) by levels of 2-way merges.
template <class Policy, class Run, class KeysOut, class ValsOut, class Comp>
void multiway_merge(const Policy& policy, const std::vector<Run>& runs, index_t total, KeysOut keys_out,
                    ValsOut vals_out, Comp comp) {
  constexpr bool with_values = has_values<ValsOut>;
  const char* algorithm = with_values ? "multiway_merge_by_key" : "multiway_merge";
  const cudaStream_t stream = policy.stream();
  const device_info& dev = current_device(algorithm, stream);
  // Checked as merge checks its arguments, under the caller's names.
  check_runs_disjoint(algorithm, runs, total, keys_out, vals_out, [&](const char* name, auto it, index_t n) {
    return range_of(name, to_device(it, n, dev, algorithm, name), n);
  });
  using K = value_of<decltype(runs[0].first)>;
  using V = typename run_value<decltype(runs[0].vals)>::type;
  if (merge_in_fours<K, V, with_values>(policy, dev, runs, total, keys_out, vals_out, comp, algorithm)) return;
  const std::size_t data_bytes = bytes_of<K>(total) + (with_values ? bytes_of<V>(total) : 0);
  const std::size_t buffers = level_buffers(runs.size(), 2);
  std::optional<temporary_storage<typename Policy::allocator_type>> temp;
  if (buffers > 0) temp.emplace(policy.allocator(), stream, buffers * data_bytes, algorithm);
  merge_in_levels<K, V, with_values>(runs, total, 2, keys_out, vals_out,
                                     temp ? temp->template as<unsigned char>() : nullptr,
                                     [&](const auto& from, auto k_to, auto v_to) {
    index_t out = 0;
    for (std::size_t i = 0; i < from.size(); i += 2) {
      const std::size_t m = std::min<std::size_t>(2, from.size() - i);
      merge_two<with_values>(policy, &from[i], m, shifted(k_to, out), shifted(v_to, out), comp);
      out += from[i].n + (m > 1 ? from[i + 1].n : 0);
    }
  });
}

}  // namespace libmerge::detail::cuda_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::multiway_merge, backend::cuda> {
  static constexpr bool available = true;

  template <class Policy, class... Args>
  static void run(const Policy& policy, Args... args) {
    cuda_backend::multiway_merge(policy, args...);
  }
};

}  // namespace libmerge::detail
