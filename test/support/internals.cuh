// The one door from tests and benchmarks into the backends' internals: each
// name they use that no public header offers, with why they need it. Product
// headers carry no test hooks, and test/ and perf/ name `cuda_backend::`,
// `nccl_backend::` or the engine only here and in
// nccl_internals.cuh (the CPU test
// `tests_reach_internals_through_the_door` checks this), so that a change
// inside a backend shows at once which tests lean on it.
#pragma once

#include <type_traits>
#include <vector>

#include <libmerge/libmerge.hpp>

#include "../../backends/cuda/cta_merge.cuh"
#include "../../backends/cuda/merge.cuh"
#include "../../backends/cuda/merge_sort.cuh"
#include "../../backends/cuda/sorted_search.cuh"
#include "../../backends/engine/search.hpp"

namespace internals {

// The engine (backends/engine/): the 4-way split that the sort's passes
// start from, run on the CPU against a brute-force merge.
namespace engine {
using libmerge::detail::group_split;
using libmerge::detail::half_samples;
using libmerge::detail::last_before;
using libmerge::detail::run_group;
using libmerge::detail::run_half;
using libmerge::detail::run_split;
}  // namespace engine

namespace cuda {
namespace cb = libmerge::detail::cuda_backend;
// The device a call sees (its compute capability picks the tuning line).
using cb::current_device;
// Kernels, for their attributes: the architecture each was compiled for, and
// that the tuned boxes use no local memory (register spills).
using cb::block_sort_kernel;
using cb::kernel_arch;
using cb::merge_kernel;
using cb::merge_kernel_of;
using cb::pass_kernel;
using cb::pass_partition_kernel;
using cb::sort_pass;
using cb::sort_tiling;
using cb::single_merge;
// The tuning tables, so that tests put sizes on tile boundaries and
// benchmarks name the boxes they force.
using cb::merge_sort_table;
using cb::merge_table;
using cb::search_table;
using cb::with_merge_box;
using cb::with_tuned_boxes;
// One wave of a merge kernel (small merges' tiles find their own ends up to
// the entry's self_ends_waves_all waves: entry_of), and what a wave's CTAs take.
using cb::merge_tile_layout;
using cb::prepare_shared_memory;
using cb::wave_ctas;
// The sort across GPUs' local sort leaves two runs when the first is this wide.
using cb::two_run_width;
// The memory pool the default allocator draws from (its release and its
// fallback are tested; the NCCL benchmark allocates from it as the sort does).
using cb::has_memory_pools;
using cb::memory_pool;
// The merge tile's per-thread merge, run on the CPU (and its form over
// staged pieces with gaps between them).
using cb::cta_merge_pairs;
using cb::cta_merge_pieces;
using cb::piece_spans;
// The partition kernel's plan (a warp or a thread a partition) and launch,
// for the test of its order check at the warp/thread crossover.
using cb::launch_partitions;
using cb::plan_partitions;
using cb::search_merge;
using cb::entry_of;
// The sparse search with a forced probe, for the benchmark's tuning rows.
using cb::a_writes;
using cb::box_interpolates_from;
using cb::box_probes_4ary;
using cb::launch_search;
using cb::search_reports;
using cb::needle_rules;

// The search's report of either input out of order (descent_reports), by which Python's
// searchsorted searches needles whose order it does not know.
template <libmerge::bounds Bounds, class T>
void search_reporting_descents(const T* a, long long na, const T* b, long long nb, long long* a_out,
                               unsigned* descents) {
  cb::sorted_search<Bounds, libmerge::search_type::index, libmerge::search_type::none, cb::a_writes::search,
                    cb::counts_to::nowhere>(libmerge::cuda::par, a, na, b, nb, a_out, nullptr, nullptr,
                                            libmerge::less<>(), descents);
}

// The merge sort's plan for a call of lm::cuda::par (tuned boxes) on n keys,
// from the backend's host-side planning (with_tuned_boxes, with_sort_boxes,
// shape_sort), for the GPU fuzzer to name the path each case takes
// (test/support/fuzz_paths.hpp). V: the values (char for keys only, the
// index type for merge_sort_indices). Assumes a one-kernel grid fits the
// device (launch_one_kernel_sort falls back to separate kernels otherwise).
struct sort_choice {
  bool one_kernel = false, block_sort_first = false, one_tile = false, numbers = false;
  long long bs_nv = 0, one_kernel_nv = 0;
  int one_kernel_log2 = 0, separate_log2 = 0, four_way_log2 = 0, mid_log2 = 0, large_log2 = 0, max_ways = 2;
  int box = 0;            // the passes' tiles: 0 the line's, 1 mid-sized sorts', 2 large sorts'
  std::vector<int> ways;  // separate kernels: each pass's
};

template <class K, class V, bool WithValues, bool Indices>
using sort_vals_in = std::conditional_t<Indices, libmerge::detail::counting_values<V>, V*>;

template <class K, class V, bool WithValues, bool Indices, class Comp>
sort_choice sort_choice_of(long long n) {
  using Policy = std::decay_t<decltype(libmerge::cuda::par)>;
  using ValsIn = sort_vals_in<K, V, WithValues, Indices>;
  using table = cb::merge_sort_table<K, std::conditional_t<WithValues, V, void>>;
  const cb::device_info& dev = cb::current_device("merge_sort", nullptr);
  sort_choice c;
  // The line's sizes (as with_sort_boxes reads them).
  cb::with_tuned_boxes<table>(
      dev, "merge_sort",
      [](auto boxes) {
        return cb::block_sort_kernel<typename decltype(boxes)::block_sort, K, V, WithValues, Indices, ValsIn, Comp>;
      },
      [&](auto boxes) {
        using B = decltype(boxes);
        c.numbers = cb::orders_numbers_v<Comp, K>;
        c.max_ways = B::ways;
        c.four_way_log2 = c.numbers ? B::numbers_four_way_log2 : B::four_way_log2;
        c.large_log2 = B::large_log2;
        c.mid_log2 = B::mid_log2;
        c.one_kernel_log2 = B::one_kernel::log2;
        c.separate_log2 = B::one_kernel::separate_log2;
        c.one_kernel_nv = B::one_kernel::box::nv;
      });
  c.box = c.large_log2 > 0 && n >= (1ll << c.large_log2) ? 2 : (c.mid_log2 > 0 && n >= (1ll << c.mid_log2) ? 1 : 0);
  // The boxes of the call and its choices (sort_with_boxes, launch_one_kernel_sort, launch_merge_sort).
  cb::with_sort_boxes<Policy, K, V, WithValues, Indices, ValsIn, Comp>(
      dev, "merge_sort", n, [&](auto bs_box, auto box, auto ways, auto four_way_log2, auto one_kernel, auto) {
        using OneKernel = decltype(one_kernel);
        c.one_kernel = OneKernel::log2 > 0 && n < (1ll << OneKernel::log2);
        c.block_sort_first = c.one_kernel && OneKernel::separate_log2 > 0 && n >= (1ll << OneKernel::separate_log2);
        c.one_tile = c.one_kernel && !c.block_sort_first && n <= OneKernel::box::nv;
        c.bs_nv = c.one_kernel && !c.block_sort_first ? OneKernel::box::nv : decltype(bs_box)::nv;
        if (!c.one_kernel && n >= 2) {
          const auto s = cb::shape_sort<decltype(bs_box), decltype(box), decltype(ways)::value,
                                        decltype(four_way_log2)::value>(n, static_cast<const cb::runs_target<K, V>*>(nullptr),
                                                                       "merge_sort");
          for (const auto& p : s.passes) c.ways.push_back(p.ways);
        }
      });
  return c;
}
}  // namespace cuda

}  // namespace internals
