// Stage 3 and 4 of the merge sort: where a pass's tiles start (sort_sampling and sort_tiling, which
// partition.cuh's sample_kernel and pass_partition_kernel run), the merge pass (pass_kernel) and the copy
// back to the caller's buffers.
#pragma once

#include "../partition.cuh"
#include "state.cuh"

namespace libmerge::detail::cuda_backend {

// 3a. Where a pass's tiles start.

// The sort's pass p: its pairs of runs in the buffer it reads, or over the run samples
// (partitions_on_samples), on pair_samples_of's grid.
template <class K>
struct sort_sampling {
  using key_type = K;
  sort_buffers<K, char> buf;
  index_t n;
  pass_plan plan;
  index_t nv;
  int pass;
  sort_flags flags;
  const K* run_samples;
  __device__ __forceinline__ int source() const {
    return block_buffer_before_pass(flags, pass, plan.first_buffer, plan.bs_nv);
  }
  // Whether 4-way tiles of runs this wide cut through the run samples.
  LIBMERGE_HOST_DEVICE bool sampled(index_t width) const {
    return run_samples != nullptr && partitions_on_samples(width, nv);
  }
  struct pairs {
    const K* keys;
    index_t keys_n, w;
    pair_sample_grid grid;
    index_t count;
    __device__ __forceinline__ pair_sample<K> at(index_t i) const {
      const run_group<2, K> g = group_at<2>(keys, keys_n, w, i / grid.stride);
      const index_t size = group_size(g);
      const index_t j = i % grid.stride;
      return {{g.keys, g.len[0], g.keys + w, g.len[1]}, j * grid.spacing < size ? j * grid.spacing : size};
    }
  };
  __device__ __forceinline__ pairs view() const {
    if (!flags.unsorted()) return {nullptr, 0, 1, {1, 1, 0}, 0};
    const index_t width = pass_shape_of(plan, flags, n, nv).width;
    const bool on_samples = sampled(width);
    const pair_sample_grid grid = pair_samples_of(plan, n, width, nv, on_samples);
    return {on_samples ? run_samples : buf.keys(source()), on_samples ? run_samples_of(n) : n,
            on_samples ? width / sample_every : width, grid, grid.count};
  }
};

// The sort's pass p, sampled as above. A group's first tile also checks whether the group is in order already
// (has_work), tile 0 records the buffer read; 4-way passes on run samples cut through sampled_cut.
template <class K>
struct sort_tiling : sort_sampling<K> {
  const index_t* samples;  // 4-way passes: the pair samples
  const K* sample_keys;
  using base = sort_sampling<K>;
  using base::buf, base::n, base::plan, base::nv, base::pass, base::flags, base::run_samples;

  template <int Ways>
  struct tile_of {
    bool active, undone, sampled;
    pass_shape shape;
    int group, local;
    run_group<Ways, K> g;
    index_t num_tiles;
  };

  template <int Ways, class Comp>
  __device__ __forceinline__ run_split<Ways> start(const tile_of<Ways>& v, Comp& comp) const {
    const run_group<Ways, K>& g = v.g;
    const index_t width = v.shape.width;
    if (v.local == 0) {
      bool in_order = true;
#pragma unroll
      for (int k = 1; k < Ways; ++k) {
        if (g.len[k] > 0) in_order &= !comp(g.keys[k * width], g.keys[k * width - 1]);
      }
      if (!in_order && !v.undone) flags.has_work(pass) = 1;
    }
    // 4-way passes: the group's pair samples, over the runs or their samples.
    half_samples<K> hs{{nullptr, nullptr}, {nullptr, nullptr}, 1};
    if (samples != nullptr) {
      const pair_sample_grid ps = pair_samples_of(plan, n, width, nv, v.sampled);
      const index_t first = static_cast<index_t>(v.group) * 2 * ps.stride;
      hs = {{samples + first, samples + first + ps.stride},
            {sample_keys + 2 * first, sample_keys + 2 * (first + ps.stride)},
            ps.spacing};
    }
    if constexpr (Ways == 4) {
      if (v.sampled) {
        const run_group<4, K> sg = group_at<4>(run_samples, run_samples_of(n), width / sample_every, v.group);
        return sampled_cut(g, sg, static_cast<index_t>(v.local) * (nv / sample_every), hs, comp,
                           sort_sample_rate{});
      }
    }
    return group_split(g, static_cast<index_t>(v.local) * nv, comp, hs);
  }
  template <int Ways>
  __device__ __forceinline__ tile_desc<Ways> describe(const tile_of<Ways>& v, const run_split<Ways>& first,
                                                      const run_split<Ways>& next) const {
    const run_group<Ways, K>& g = v.g;
    const index_t size = group_size(g);
    const index_t d0 = static_cast<index_t>(v.local) * nv;
    const index_t d1 = d0 + nv < size ? d0 + nv : size;
    index_t begin[Ways], end[Ways];
#pragma unroll
    for (int k = 0; k < Ways; ++k) {
      begin[k] = first.s[k];
      end[k] = d1 == size ? g.len[k] : next.s[k];
    }
    return describe_tile(g, v.group, begin, end, d0, d1);
  }

  template <int Ways>
  __device__ __forceinline__ tile_of<Ways> at(index_t tile) const {
    // A pass before undone by the guard: this one merges nothing. (Read once a
    // block: every thread's own look held the kernel at 64 registers instead
    // of 40.)
    __shared__ bool undone;
    if (threadIdx.x == 0) undone = flags.undone_before(pass);
    __syncthreads();
    const int src = this->source();
    tile_of<Ways> v{flags.unsorted(), undone, false, {}, 0, 0, {}, 0};
    if (!v.active) {
      if (tile == 0) flags.source(pass) = src;
      return v;
    }
    v.shape = pass_shape_of(plan, flags, n, nv);
    v.sampled = Ways == 4 && this->sampled(v.shape.width);
    if (tile == 0) {
      flags.source(pass) = src;
      flags.shapes[pass] = v.shape;  // the pass kernel's tile count
    }
    const bool mine = tile < v.shape.num_tiles;
    v.group = static_cast<int>(mine ? tile : 0) / v.shape.tiles_per_group;
    v.local = static_cast<int>(mine ? tile : 0) % v.shape.tiles_per_group;
    v.g = group_at<Ways>(buf.keys(src), n, v.shape.width, v.group);
    v.num_tiles = v.shape.num_tiles;
    return v;
  }
};

// 3b. The pass.

// A pass thread's registers, as CTAs an SM: the entry's thread budget by ways, element and key sizes
// (merge_sort_line pass_*; docs/tuning.md). Passes are bound by loads in flight: as many threads as do not
// spill; larger elements get no limit.
template <class Box, int Ways, std::size_t KeyBytes, std::size_t ElementBytes>
inline constexpr int pass_ctas_per_sm = [] {
  if (ElementBytes > 16 || sm_max_threads == 0 || Box::nt >= sm_max_threads) return 1;
  constexpr tuning::merge_sort_line line = tuning::here.sort;
  int threads = 0;
  if (Ways == 4) {
    threads = ElementBytes <= 8 && KeyBytes < 8 ? sm_max_threads
                                                : (Box::vt > line.pass_long_vt ? line.pass_threads_long
                                                                               : line.pass_threads_wide);
  } else if (ElementBytes <= 8 && KeyBytes < ElementBytes) {
    threads = sm_max_threads;  // pairs of up to 8 bytes
  } else {
    threads = ElementBytes < 16 ? sm_max_threads * line.pass_two_way_quarters / 4 : line.pass_threads_wide;
  }
  const int ctas = threads / Box::nt;
  const int cap = sm_here.ctas;
  return ctas < 1 ? 1 : (ctas > cap ? cap : ctas);
}();

// A 4-way tile's pieces in shared memory in the order 0 2 | 1 3: level 1, one CTA merge of (0 2) with (1 3)
// (cta_merge_pairs), gives merge(0, 1) then merge(2, 3), and level 2 merges those halves.
__device__ __forceinline__ piece_map<4> pieces_of(const tile_desc<4>& d) {
  piece_map<4> m;
  m.start[0] = 0;
  m.start[1] = d.size[0];
  m.start[2] = m.start[1] + d.size[2];
  m.start[3] = m.start[2] + d.size[1];
  m.delta[0] = d.at[0];
  m.delta[1] = d.at[2] - m.start[1];
  m.delta[2] = d.at[1] - m.start[2];
  m.delta[3] = d.at[3] - m.start[3];
  return m;
}

// Pass tiles staged by bulk copies (cta_merge.cuh; sm_90 kernels and later, room in every layout): keys up
// to 4 bytes without values, one copy a piece instead of a select, a load and a shared store an element.
// H200, 2^28 int32 keys: 9.68 against 9.85 ms (docs/cuda-merge-sort.md).
template <class K, bool WithValues>
inline constexpr bool staged_pass = !WithValues && sizeof(K) <= 4 && bulk_loadable<K, const K*>;

// A pass tile's shared memory, the same for a box's 2-way and 4-way kernels (the launches size both from it).
template <class Box, class K, class V, bool WithValues>
using pass_layout = merge_layout<K, V, WithValues, Box::nv, staged_pass<K, WithValues> ? 4 : 0>;

template <int Ways>
__device__ __forceinline__ int count_of(const tile_desc<Ways>& d) {
  int count = 0;
#pragma unroll
  for (int k = 0; k < Ways; ++k) count += d.size[k];
  return count;
}

// The guard's fingerprints (state.cuh) of what this warp wrote, from its slice of the tile in shared memory
// (a loop, not unrolled: shared memory only).
template <int VT, bool WithValues, class K, class V>
__device__ __forceinline__ unsigned long long warp_slice_prints(const K* keys, const V* vals, const tile_offset* sources,
                                                             int count) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp_base = static_cast<int>(threadIdx.x / 32) * 32 * VT;
  unsigned long long prints = 0;
  for (int j = warp_base + lane; j < warp_base + 32 * VT && j < count; j += 32) {
    prints += key_print(keys[j]);
    if constexpr (WithValues) prints += value_print(vals[sources[j]]);
  }
  return prints;
}

// A pass tile: a loader stages the pieces and says how they lie, the merge levels read them, a storer writes
// the outputs; a kernel picks its parts at compile time (pass_parts). How they lie: two runs at tile[0, ...)
// and tile[b_at, ...); four packed pieces 0 2 | 1 3 (pieces_of; piece 2 at a_split, 1 at na, 3 at b_split);
// four staged pieces at their sources' 16-byte offsets, gaps between (cta_merge_pieces steps over them).
template <class K>
struct two_runs {
  K* tile;
  int b_at;
};
struct packed_pieces {
  int a_split, na, b_split;
};
struct spaced_pieces {
  piece_spans spans;
};

// A tile's io for the sort: piece k at keys_in() + d.at[k], outputs to the other buffer (multiway.cuh's
// runs_io reads each piece from its own run).
template <class K, class V>
struct buffer_io {
  using key_type = K;
  using value_type = V;
  const sort_buffers<K, V>& buf;
  int src;
  __device__ __forceinline__ K* keys_in() const { return buf.keys(src); }
  __device__ __forceinline__ V* vals_in() const { return buf.vals(src); }
  __device__ __forceinline__ K* keys_out() const { return buf.keys(1 - src); }
  __device__ __forceinline__ V* vals_out() const { return buf.vals(1 - src); }
  // The pieces' first keys in the tile's order 0 2 | 1 3 (pieces_of).
  __device__ __forceinline__ void key_pieces(const tile_desc<4>& d, const K* (&p)[4]) const {
    const K* from = keys_in();
    p[0] = from + d.at[0];
    p[1] = from + d.at[2];
    p[2] = from + d.at[1];
    p[3] = from + d.at[3];
  }
  // Tile slot j's key and value (the pieces as pieces_of(d) lays them).
  __device__ __forceinline__ mapped_reader<4, K> key_reader(const tile_desc<4>&, const piece_map<4>& m) const {
    return {keys_in(), m};
  }
  __device__ __forceinline__ mapped_reader<4, V> val_reader(const tile_desc<4>&, const piece_map<4>& m) const {
    return {vals_in(), m};
  }
};

// Loaders: load<Box, Full, Layout>(io, d, count, smem, tid). Two runs through registers (load_tile); keys
// only, a partial tile loads direct (held, its checked values spilled the 512x15 kernel; pairs the reverse).
struct register_pair_loader {
  template <class Box, bool Full, class Layout, class IO, class K = typename IO::key_type>
  static __device__ __forceinline__ two_runs<K> load(const IO& io, const tile_desc<2>& d, int count,
                                                     unsigned char* smem, int tid) {
    using V = typename IO::value_type;
    K* keys = reinterpret_cast<K*>(smem + Layout::keys);
    const two_runs<K> t{keys, d.size[0]};
    load_tile<Box::nt, Box::vt, Full, !Layout::with_values>(io.keys_in() + d.at[0], d.size[0],
                                                            io.keys_in() + d.at[1], count, keys, tid);
    if constexpr (Layout::with_values) {
      load_tile<Box::nt, Box::vt, Full>(io.vals_in() + d.at[0], d.size[0], io.vals_in() + d.at[1], count,
                                        reinterpret_cast<V*>(smem + Layout::vals), tid);
    }
    __syncthreads();
    return t;
  }
};
// Four pieces through registers (load_pieces), side by side.
struct register_pieces_loader {
  template <class Box, bool Full, class Layout, class IO>
  static __device__ __forceinline__ packed_pieces load(const IO& io, const tile_desc<4>& d, int count,
                                                       unsigned char* smem, int tid) {
    using K = typename IO::key_type;
    using V = typename IO::value_type;
    const piece_map<4> pieces = pieces_of(d);
    load_pieces<Box::nt, Box::vt, Full>(io.key_reader(d, pieces), count, reinterpret_cast<K*>(smem + Layout::keys),
                                        tid);
    if constexpr (Layout::with_values) {
      load_pieces<Box::nt, Box::vt, Full>(io.val_reader(d, pieces), count, reinterpret_cast<V*>(smem + Layout::vals),
                                          tid);
    }
    __syncthreads();
    return {pieces.start[1], pieces.start[2], pieces.start[3]};
  }
};
// Two runs staged by bulk copies (cta_merge.cuh).
struct bulk_pair_loader {
  template <class Box, bool Full, class Layout, class IO, class K = typename IO::key_type>
  static __device__ __forceinline__ two_runs<K> load(const IO& io, const tile_desc<2>& d, int count,
                                                     unsigned char* smem, int tid) {
    bulk_loader<Box::nt> loader(reinterpret_cast<std::uint64_t*>(smem + Layout::barrier), tid);
    const auto staged = loader.stage_pair(io.keys_in() + d.at[0], d.size[0], io.keys_in() + d.at[1],
                                          count - d.size[0], smem + Layout::keys);
    loader.wait();  // (ends in a __syncthreads)
    return {staged.a, staged.b_at};
  }
};
// Four pieces staged by bulk copies, in the order 0 2 | 1 3.
struct bulk_pieces_loader {
  template <class Box, bool Full, class Layout, class IO>
  static __device__ __forceinline__ spaced_pieces load(const IO& io, const tile_desc<4>& d, int, unsigned char* smem,
                                                       int tid) {
    using K = typename IO::key_type;
    bulk_loader<Box::nt> loader(reinterpret_cast<std::uint64_t*>(smem + Layout::barrier), tid);
    const K* pieces[4];
    io.key_pieces(d, pieces);
    const int sizes[4] = {d.size[0], d.size[2], d.size[1], d.size[3]};
    int at[4];
    loader.stage_ranges(pieces, sizes, smem + Layout::keys, at);
    const spaced_pieces t{{{at[0], at[2], at[1], at[3]}, {sizes[0], sizes[2], sizes[1], sizes[3]}}};
    loader.wait();
    return t;
  }
};

// Level 1 of a 4-way tile, over the tile from its base (staged pieces are read by then); offsets to `sources`.
// (Pairs keep the clamped reads, two a step: with one, every 4-way pairs kernel spilled at 32 registers.)
template <int VT, bool WithValues, class K, class Comp>
__device__ __forceinline__ void level_one(const packed_pieces& p, K* keys, int count, int tid, K (&merged)[VT],
                                          int (&from)[VT], Comp& comp) {
  cta_merge_pairs<VT, walks_past_end && !WithValues>(keys, p.na, p.a_split, p.b_split, count, tid, merged, from, comp);
}
template <int VT, bool WithValues, class K, class Comp>
__device__ __forceinline__ void level_one(const spaced_pieces& p, K* keys, int, int tid, K (&merged)[VT],
                                          int (&from)[VT], Comp& comp) {
  cta_merge_pieces<VT, walks_past_end>(keys, p.spans, tid, merged, from, comp);
}

// Each output's value origin (Through: via level 1's offsets in `sources`), to `sources` for the value store.
template <int VT, bool Full, bool WithValues, bool Through>
__device__ __forceinline__ void publish_origins(tile_offset* sources, const int (&from)[VT], int count, int tid) {
  if constexpr (WithValues) {
    int origin[VT];
#pragma unroll
    for (int i = 0; i < VT; ++i) {
      const int at = from[i] < count ? from[i] : 0;  // (as level 1's: no value read from outside the tile)
      origin[i] = Through ? sources[at] : at;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < VT; ++i) {
      const int j = VT * tid + i;
      if (Full || j < count) sources[j] = static_cast<tile_offset>(origin[i]);
    }
  } else {
    __syncthreads();
  }
}

// The merge levels into registers (merged; from: each output's tile offset, for 4 ways after level 1),
// then for values each output's origin to `sources`.
template <int VT, bool Full, bool WithValues, class Pieces, class K, class Comp>
__device__ __forceinline__ void merge_levels(const Pieces& pieces, const tile_desc<4>& d, K* keys,
                                             tile_offset* sources, int count, int tid, K (&merged)[VT],
                                             int (&from)[VT], Comp& comp) {
  level_one<VT, WithValues>(pieces, keys, count, tid, merged, from, comp);
  __syncthreads();
#pragma unroll
  for (int i = 0; i < VT; ++i) {
    const int j = VT * tid + i;
    if (Full || j < count) {
      keys[j] = merged[i];
      // (A walk past the end, only under a bad comparator, read keys[0]: its value is there too.)
      if constexpr (WithValues) sources[j] = static_cast<tile_offset>(from[i] < count ? from[i] : 0);
    }
  }
  __syncthreads();
  const int half = d.size[0] + d.size[1];
  cta_merge<VT, bounds::lower, walks_past_end>(keys, half, half, count - half, tid, merged, from, comp);
  publish_origins<VT, Full, WithValues, true>(sources, from, count, tid);
}
template <int VT, bool Full, bool WithValues, class K, class Comp>
__device__ __forceinline__ void merge_levels(const two_runs<K>& runs, const tile_desc<2>& d, K*, tile_offset* sources,
                                             int count, int tid, K (&merged)[VT], int (&from)[VT], Comp& comp) {
  const int half = d.size[0];
  cta_merge<VT, bounds::lower, walks_past_end>(runs.tile, half, runs.b_at, count - half, tid, merged, from, comp);
  publish_origins<VT, Full, WithValues, false>(sources, from, count, tid);
}

// Storers: store<Box, Full, Ways>(merged, smem, out, count, tid, samples, out_at) returns where the outputs
// lie in order in shared memory (for the guard). The transpose: a warp of outputs at a time
// (store_warp_striped), 4-way passes keeping every 32nd as a sample.
struct transpose_storer {
  template <class Box, bool Full, int Ways, class Layout, class K>
  static __device__ __forceinline__ K* store(const K (&merged)[Box::vt], unsigned char* smem, K* out, int count,
                                             int tid, K* samples, index_t out_at) {
    K* keys = reinterpret_cast<K*>(smem + Layout::keys);
    if constexpr (Ways == 4) {
      store_warp_striped_sampled<Box::vt, Full>(merged, keys, out, count, tid, samples, out_at);
    } else {
      store_warp_striped<Box::vt, Full>(merged, keys, out, count, tid);
    }
    return keys;
  }
};
// The outputs in order in shared memory, then one bulk copy (bulk_store);
// the samples are read from there.
struct bulk_storer {
  template <class Box, bool Full, int Ways, class Layout, class K>
  static __device__ __forceinline__ K* store(const K (&merged)[Box::vt], unsigned char* smem, K* out, int count,
                                             int tid, K* samples, index_t out_at) {
    K* written = bulk_store_slots(smem + Layout::keys, out);
#pragma unroll
    for (int i = 0; i < Box::vt; ++i) {
      const int j = Box::vt * tid + i;
      if (Full || j < count) written[j] = merged[i];
    }
    bulk_store<Box::nt>(written, count, out, tid);
    if (Ways == 4 && samples != nullptr) {
      const int first = static_cast<int>((32 - out_at % 32) % 32);  // the first output at a multiple of 32
      for (int j = first + 32 * tid; j < count; j += 32 * Box::nt) samples[(out_at + j) / 32] = written[j];
    }
    return written;
  }
};

// The parts of a pass tile: staged (bulk copies in and out) or through registers.
template <int Ways, bool Staged>
struct pass_parts {
  using loader = std::conditional_t<Ways == 4, register_pieces_loader, register_pair_loader>;
  using storer = transpose_storer;
};
template <int Ways>
struct pass_parts<Ways, true> {
  using loader = std::conditional_t<Ways == 4, bulk_pieces_loader, bulk_pair_loader>;
  using storer = bulk_storer;
};

// One tile d (global or shared memory) by Parts (pass_parts) through io (buffer_io, runs_io). d.out is read
// only at the end: held through both levels it spilled the 4-way int32 kernel. Returns the guard's
// fingerprints of what this thread wrote (0 without it) for pass_add: a sum pointer spilled 2-way int32.
template <class Box, int Ways, bool Full, class Parts, bool WithValues, bool Guard, class IO, class Comp,
          class K = typename IO::key_type>
__device__ __forceinline__ unsigned long long merge_tile_of_parts(const IO& io, const tile_desc<Ways>& d, int count,
                                                                  unsigned char* smem, Comp& comp, K* samples) {
  using V = typename IO::value_type;
  using layout = pass_layout<Box, K, V, WithValues>;
  K* keys = reinterpret_cast<K*>(smem + layout::keys);
  V* vals = reinterpret_cast<V*>(smem + layout::vals);
  tile_offset* sources = reinterpret_cast<tile_offset*>(smem + layout::sources);
  const int tid = static_cast<int>(threadIdx.x);
  const auto pieces = Parts::loader::template load<Box, Full, layout>(io, d, count, smem, tid);
  K merged[Box::vt];
  int from[Box::vt];
  merge_levels<Box::vt, Full, WithValues>(pieces, d, keys, sources, count, tid, merged, from, comp);
  const index_t out_at = d.out;
  K* const written = Parts::storer::template store<Box, Full, Ways, layout>(merged, smem, io.keys_out() + out_at,
                                                                            count, tid, samples, out_at);
  (void)written;  // (read by the guard alone)
  if constexpr (WithValues) {
    __syncthreads();
    V* out_vals = io.vals_out() + out_at;
#pragma unroll
    for (int i = 0; i < Box::vt; ++i) {
      const int j = Box::nt * i + tid;
      if (Full || j < count) out_vals[j] = vals[sources[j]];
    }
  }
  // Read back from the warp's slice (from registers before the store they spilled the 4-way int32 kernel).
  if constexpr (Guard && guarded_v<K, V, WithValues>) {
    __syncwarp();
    return warp_slice_prints<Box::vt, WithValues>(written, vals, sources, Full ? Box::nv : count);
  } else {
    return 0;
  }
}

// Staged where the entry stages passes and the types allow (staged_pass), else through registers.
template <int Ways, class K, bool WithValues>
using pass_parts_for =
    pass_parts<Ways, tuning::here.sort.pass_loads == tuning::tile_loads::bulk_copies && staged_pass<K, WithValues>>;

// What a pass kernel merges: the sort's pass (below) or four runs anywhere (multiway.cuh: runs_pass): its
// tiles with work, their io, where 4-way tiles sample (samples()), and the guard's fingerprints (add).
template <class K, class V, bool WithValues, bool Guard>
struct sort_pass {
  using key_type = K;
  using value_type = V;
  static constexpr bool with_values = WithValues;
  static constexpr bool guard = Guard;
  sort_buffers<K, V> buf;
  int pass;
  sort_flags flags;
  K* sample_to;  // (only 4-way passes sample: launch_passes)
  __device__ __forceinline__ int num_tiles() const {
    const int work = flags.has_work(pass);
    const int tiles = flags.shapes[pass].num_tiles;
    return work ? tiles : 0;
  }
  __device__ __forceinline__ K* samples() const { return sample_to; }
  __device__ __forceinline__ buffer_io<K, V> io() const { return {buf, flags.source(pass)}; }
  // Compared with the input's by later kernels (sort_flags::kept; here, the 4-way int32 kernel spilled).
  __device__ __forceinline__ void add(unsigned long long prints) const {
    if (Guard && guarded_v<K, V, WithValues> && flags.hashes != nullptr) pass_add(flags.pass_slots(pass), prints);
  }
};

template <class Box, int Ways, class Pass>
inline constexpr int pass_kernel_ctas =
    pass_ctas_per_sm<Box, Ways, sizeof(typename Pass::key_type),
                     sizeof(typename Pass::key_type) + (Pass::with_values ? sizeof(typename Pass::value_type) : 0)>;

// One tile a CTA, of `pass` (sort_pass, runs_pass), by merge_tile_of_parts.
template <class Box, int Ways, class Pass, class Comp>
__global__ void __launch_bounds__(Box::nt, pass_kernel_ctas<Box, Ways, Pass>)
    pass_kernel(Pass pass, const tile_desc<Ways>* descs, Comp comp) {
  using K = typename Pass::key_type;
  using parts = pass_parts_for<Ways, K, Pass::with_values>;
  extern __shared__ __align__(16) unsigned char smem[];
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  const int tile = static_cast<int>(blockIdx.x);
  const auto io = pass.io();
  if (tile >= pass.num_tiles()) return;
  // Read in place, each field where used: a copy in registers spilled the 2-way pairs kernels.
  const tile_desc<Ways>& d = descs[tile];
  const int count = count_of(d);
  K* const sample_to = Ways == 4 ? pass.samples() : nullptr;
  constexpr bool with_values = Pass::with_values, guard = Pass::guard;
  pass.add(count == Box::nv
               ? merge_tile_of_parts<Box, Ways, true, parts, with_values, guard>(io, d, count, smem, comp, sample_to)
               : merge_tile_of_parts<Box, Ways, false, parts, with_values, guard>(io, d, count, smem, comp, sample_to));
}

// ---------------------------------------------------------------------------
// 4. Back to the caller's buffers (or sort_into_runs' target) when the passes left the data in scratch.
template <bool WithValues, class K, class V>
__device__ __forceinline__ void copy_to_buffer(const sort_buffers<K, V>& buf, int to, index_t n) {
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    buf.keys(to)[i] = buf.keys(1 - to)[i];
    if constexpr (WithValues) buf.vals(to)[i] = buf.vals(1 - to)[i];
  }
}

// final_buffer: where the data must end (0: the caller's). width (sort_into_runs): the first run's length,
// first_width * final_scale (n when the input was sorted or that is all).
template <class K, class V, bool WithValues>
__global__ void __launch_bounds__(copy_threads)
    copy_back_kernel(sort_buffers<K, V> buf, index_t n, int passes, int first_buffer, index_t bs_nv,
                     sort_flags flags, int final_buffer, index_t final_scale, long long* width) {
  wait_for_prerequisite_grid();
  allow_dependent_launch();
  if (width != nullptr && blockIdx.x == 0 && threadIdx.x == 0) {
    const index_t base = flags.first_width(bs_nv);
    *width = !flags.unsorted() || base > (n - 1) / final_scale ? n : base * final_scale;
  }
  if (block_buffer_before_pass(flags, passes, first_buffer, bs_nv) == final_buffer) return;
  copy_to_buffer<WithValues>(buf, final_buffer, n);
}

// 2-way merge levels from runs of `width` to one run of n.
inline int merge_levels(index_t n, index_t width) {
  int levels = 0;
  for (index_t w = width; w < n; w *= 2) ++levels;
  return levels;
}

// Bytes of n elements of T in temporary storage, each array 256-byte aligned.
template <class T>
std::size_t bytes_of(index_t n) {
  return align_up(sizeof(T) * static_cast<std::size_t>(n), 256);
}

}  // namespace libmerge::detail::cuda_backend
