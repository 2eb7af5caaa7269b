// lm::multiway_merge on the GPU. Up to four sorted runs merge in one pass of
// the sort's 4-way tiles (merge_tile_of_parts: its loaders, merge levels and
// storers), each piece read from its own run (runs_io); more runs merge by
// levels of such passes, a level's groups of four consecutive runs at a time
// (stable: ties go to the earlier run). The sort across GPUs merges the
// pieces a rank receives the same way (runs.cuh, merge_four).
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "merge_sort.cuh"

namespace libmerge::detail::cuda_backend {

// Up to four sorted runs: run k is keys[k][0, len[k]), its values vals[k].
template <class K, class V>
struct four_runs {
  const K* keys[4];
  const V* vals[4];
  index_t len[4];
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

// The halves of the 4-way merge: runs 0 and 1, runs 2 and 3.
template <class K, class V>
__device__ __forceinline__ run_half<4, K> runs_half(const four_runs<K, V>& r, int h) {
  return {r.keys[2 * h], r.len[2 * h], r.keys[2 * h + 1], r.len[2 * h + 1]};
}

// The pair samples of four runs (pair_sample_kernel): for half h and j <
// stride, the half's inner split at rank j * nv (clamped to its size) at
// samples[h * stride + j], its elements of ranks j * nv and j * nv - 1 at
// sample_keys[2 (h * stride + j)] and [.. + 1]. They start each tile's 4-way
// search inside one tile of each run.
// 2 H100s, 2^29 int32: 4.1 ms without, 1.6 for lm::merge of two (docs/cuda-merge-sort.md)
template <class K, class V>
struct runs_sampling {
  using key_type = K;
  four_runs<K, V> r;
  index_t nv, stride;
  struct halves {
    const four_runs<K, V>& r;
    pair_sample_grid grid;
    __device__ __forceinline__ run_half<4, K> half(index_t h) const { return runs_half(r, static_cast<int>(h)); }
  };
  __device__ __forceinline__ halves view() const { return {r, {nv, stride, 2 * stride}}; }
};

// The tiles of four runs (pass_partition_kernel): a thread a tile finds its
// start (halves_split over the pair samples, stable: ties in run order); a
// tile ends where the next starts.
template <class K, class V>
struct runs_tiling {
  four_runs<K, V> r;
  index_t nv, num_tiles, stride;
  const index_t* samples;
  const K* sample_keys;
  struct tile_of {
    const runs_tiling& t;
    index_t tile;
    bool active;
    index_t num_tiles;
    template <class Comp>
    __device__ __forceinline__ run_split<4> start(Comp& comp) const {
      const half_samples<K> hs{{t.samples, t.samples + t.stride}, {t.sample_keys, t.sample_keys + 2 * t.stride}, t.nv};
      return halves_split(runs_half(t.r, 0), runs_half(t.r, 1), tile * t.nv, comp, hs);
    }
    __device__ __forceinline__ tile_desc<4> describe(const run_split<4>& first, const run_split<4>& next) const {
      const index_t size = t.r.len[0] + t.r.len[1] + t.r.len[2] + t.r.len[3];
      const index_t d0 = tile * t.nv;
      const index_t d1 = d0 + t.nv < size ? d0 + t.nv : size;
      index_t begin[4], end[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        begin[k] = first.s[k];
        end[k] = d1 == size ? t.r.len[k] : next.s[k];
      }
      clamp_pieces(t.r.len, begin, end, d1 - d0);
      tile_desc<4> d;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        d.at[k] = begin[k];
        d.size[k] = static_cast<std::uint16_t>(end[k] - begin[k]);
      }
      d.out = d0;
      return d;
    }
  };
  template <int Ways, class Comp>
  __device__ __forceinline__ tile_of at(index_t tile, Comp&) const {
    static_assert(Ways == 4, "four runs make 4-way tiles");
    return {*this, tile, true, num_tiles};
  }
};

// A pass over four runs (pass_kernel): every tile has work, none samples its
// output, no guard.
template <class K, class V, bool WithValues>
struct runs_pass {
  using key_type = K;
  using value_type = V;
  static constexpr bool with_values = WithValues;
  static constexpr bool guard = false;
  four_runs<K, V> runs;
  K* keys_out;
  V* vals_out;
  int tiles;
  __device__ __forceinline__ int num_tiles() const { return tiles; }
  static __device__ __forceinline__ K* samples() { return nullptr; }
  __device__ __forceinline__ runs_io<K, V> io() const { return {runs, keys_out, vals_out}; }
  __device__ __forceinline__ void add(unsigned long long) const {}
};

// The scratch of merge_four_runs for n elements in all: tile descriptors
// and pair samples (bounds that hold however the elements are split).
template <class Box, class K>
struct four_runs_scratch {
  index_t tiles;
  std::size_t desc_bytes, sample_bytes, bytes;
  explicit four_runs_scratch(index_t n) : tiles((n + Box::nv - 1) / Box::nv) {
    const index_t stride = tiles + 1;  // (the most pair samples a half of n elements takes)
    desc_bytes = align_up(sizeof(tile_desc<4>) * static_cast<std::size_t>(tiles), 256);
    sample_bytes = align_up(sizeof(index_t) * 2 * static_cast<std::size_t>(stride), 256);
    bytes = desc_bytes + sample_bytes + align_up(sizeof(K) * 4 * static_cast<std::size_t>(stride), 256);
  }
};

// Merges r's runs (empty ones allowed) into keys_out (vals_out), stable in run
// order, in one 4-way pass with Box (the sort's 4-way pass box for these
// types); scratch: four_runs_scratch<Box, K>(n).bytes, n the elements in all.
template <class Box, class K, class V, bool WithValues, class Comp>
void merge_four_runs(const four_runs<K, V>& r, K* keys_out, V* vals_out, Comp comp, unsigned char* scratch,
                     cudaStream_t stream, const device_info& dev, const char* algorithm) {
  const index_t n = r.len[0] + r.len[1] + r.len[2] + r.len[3];
  if (n == 0) return;
  const four_runs_scratch<Box, K> s(n);
  if (s.tiles > max_grid_ctas / 32) throw_too_many_tiles(algorithm);
  // Pair samples of each half at every multiple of nv.
  const index_t stride = (std::max(r.len[0] + r.len[1], r.len[2] + r.len[3]) + Box::nv - 1) / Box::nv + 1;
  auto* descs = reinterpret_cast<tile_desc<4>*>(scratch);
  auto* samples = reinterpret_cast<index_t*>(scratch + s.desc_bytes);
  auto* sample_keys = reinterpret_cast<K*>(scratch + s.desc_bytes + s.sample_bytes);
  auto merge_kernel = pass_kernel<Box, 4, runs_pass<K, V, WithValues>, Comp>;
  using layout = pass_layout<Box, K, V, WithValues>;
  prepare_shared_memory(merge_kernel, layout::bytes, dev, Box::nt, Box::vt, algorithm);
  const auto nv = static_cast<index_t>(Box::nv);
  launch(pair_sample_kernel<runs_sampling<K, V>, Comp>, (2 * stride + sample_threads - 1) / sample_threads,
         sample_threads, 0, stream, true, dev, algorithm, "pair_sample_kernel", runs_sampling<K, V>{r, nv, stride},
         samples, sample_keys, comp);
  launch(pass_partition_kernel<4, runs_tiling<K, V>, Comp>, (s.tiles + partition_tiles - 1) / partition_tiles,
         partition_tiles + 1, 0, stream, true, dev, algorithm, "pass_partition_kernel",
         runs_tiling<K, V>{r, nv, s.tiles, stride, samples, sample_keys}, descs, comp);
  launch(merge_kernel, s.tiles, Box::nt, layout::bytes, stream, true, dev, algorithm, "pass_kernel",
         runs_pass<K, V, WithValues>{r, keys_out, vals_out, static_cast<int>(s.tiles)},
         static_cast<const tile_desc<4>*>(descs), comp);
}

// Calls f(box) with the sort's 4-way pass box for (K, V) on dev and n
// elements; returns false (f not called) where the sort has no 4-way passes
// for these types (keys of 8 bytes or more without values, large elements).
template <class Policy, class K, class V, bool WithValues, class Comp, class F>
bool with_four_way_box(const device_info& dev, index_t n, const char* algorithm, F&& f) {
  bool four = false;
  if constexpr (sizeof(K) + (WithValues ? sizeof(V) : 0) <= max_element_bytes) {
    with_sort_boxes<Policy, K, V, WithValues, false, V*, Comp>(
        dev, algorithm, n, [&](auto, auto box, auto ways, auto, auto) {
          if constexpr (decltype(ways)::value == 4) {
            four = true;
            f(box);
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

// Levels of a k-way merge, level l merging groups of ways[l - 1] consecutive
// runs (ties stay in run order), until one run is left, in the output; the
// levels between alternate between scratch buffers 0 and 1 at `buffers`
// (level_buffers of them). merge_group(group, m, keys_to, vals_to) merges m runs.
// The ways of each level: 4 for the last group and where four runs of the
// level's mean length hold min_four elements or more, else 2 (min_four 0:
// always 2). Small groups one after another leave the GPU idle: H100, 2^28
// int32 keys in 1024 runs, 4-way from the first level took 38.7 ms, 2-way 13.7.
inline std::vector<std::size_t> level_ways(std::size_t runs, index_t total, index_t min_four) {
  std::vector<std::size_t> ways;
  for (std::size_t k = runs; k > 1;) {
    const bool four = min_four > 0 && (k <= 4 || 4 * (total / static_cast<index_t>(k)) >= min_four);
    const std::size_t w = four ? 4 : 2;
    ways.push_back(w);
    k = (k + w - 1) / w;
  }
  return ways;
}
inline std::size_t level_buffers(const std::vector<std::size_t>& ways) {
  return ways.size() >= 3 ? 2 : (ways.size() == 2 ? 1 : 0);
}
template <class K, class V, bool WithValues, class Run, class KeysOut, class ValsOut, class MergeGroup>
void merge_in_levels(const std::vector<Run>& runs, index_t total, const std::vector<std::size_t>& ways,
                     KeysOut keys_out, ValsOut vals_out, unsigned char* buffers, MergeGroup&& merge_group) {
  const int levels = static_cast<int>(ways.size());
  const std::size_t key_bytes = bytes_of<K>(total);
  const std::size_t data_bytes = key_bytes + (WithValues ? bytes_of<V>(total) : 0);
  auto level = [&](const auto& from, int l) {
    std::vector<scratch_run<K, V>> next;
    index_t out = 0;
    const std::size_t w = levels > 0 ? ways[static_cast<std::size_t>(l - 1)] : 1;
    for (std::size_t i = 0; i < from.size(); i += w) {
      const std::size_t m = std::min(w, from.size() - i);
      if (l >= levels) {  // one group: the last level (levels == 0: one run, copied)
        merge_group(&from[i], m, keys_out, vals_out);
        break;
      }
      // Level l (from 1) writes buffer (levels - l - 1) % 2, so that the last writes the output.
      unsigned char* to = buffers + static_cast<std::size_t>((levels - l - 1) % 2) * data_bytes;
      K* k_to = reinterpret_cast<K*>(to) + out;
      V* v_to = WithValues ? reinterpret_cast<V*>(to + key_bytes) + out : nullptr;
      index_t n = 0;
      for (std::size_t j = i; j < i + m; ++j) n += from[j].n;
      merge_group(&from[i], m, k_to, v_to);
      next.push_back({k_to, n, v_to});
      out += n;
    }
    return next;
  };
  auto next = level(runs, 1);
  for (int l = 2; l <= levels; ++l) next = level(next, l);
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

// The k-way merge by 4-way passes (merge_four_runs) where the runs and the
// output are device pointers and the sort has 4-way passes for the types;
// false (nothing done) otherwise.
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
      const auto ways = level_ways(level.size(), total, 2 * static_cast<index_t>(dev.sms) * Box::nv);
      const std::size_t buffer_bytes = level_buffers(ways) * data_bytes;
      temporary_storage<typename Policy::allocator_type> temp(
          policy.allocator(), stream, buffer_bytes + four_runs_scratch<Box, K>(total).bytes, algorithm);
      unsigned char* buffers = temp.template as<unsigned char>();
      K* const k_out = to_device(keys_out, total, dev, algorithm, "out");
      V* v_out = nullptr;
      if constexpr (WithValues) v_out = to_device(vals_out, total, dev, algorithm, "vals_out");
      merge_in_levels<K, V, WithValues>(level, total, ways, k_out, v_out, buffers,
                                        [&](const scratch_run<K, V>* g, std::size_t m, K* k_to, V* v_to) {
        if (m <= 2) return merge_two<WithValues>(policy, g, m, k_to, v_to, comp);
        four_runs<K, V> r{};
        for (std::size_t j = 0; j < 4; ++j) {
          const scratch_run<K, V>& run = g[j < m ? j : 0];  // (an empty stand-in past m)
          r.keys[j] = run.first;
          r.vals[j] = run.vals;
          r.len[j] = j < m ? run.n : 0;
        }
        merge_four_runs<Box, K, V, WithValues>(r, k_to, v_to, comp, buffers + buffer_bytes, stream, dev, algorithm);
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
  const auto ways = level_ways(runs.size(), total, 0);
  const std::size_t buffers = level_buffers(ways);
  std::optional<temporary_storage<typename Policy::allocator_type>> temp;
  if (buffers > 0) temp.emplace(policy.allocator(), stream, buffers * data_bytes, algorithm);
  merge_in_levels<K, V, with_values>(runs, total, ways, keys_out, vals_out,
                                     temp ? temp->template as<unsigned char>() : nullptr,
                                     [&](const auto* g, std::size_t m, auto k_to, auto v_to) {
                                       merge_two<with_values>(policy, g, m, k_to, v_to, comp);
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
