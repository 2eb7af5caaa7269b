// The one door from tests and benchmarks into the backends' internals: each
// name they use that no public header offers, with why they need it. Product
// headers carry no test hooks, and test/ and perf/ name `cuda_backend::`,
// `nccl_backend::` or the engine only here and in
// nccl_internals.cuh (the CPU test
// `tests_reach_internals_through_the_door` checks this), so that a change
// inside a backend shows at once which tests lean on it.
#pragma once

#include <libmerge/libmerge.hpp>

#include "../../backends/cuda/cta_merge.cuh"
#include "../../backends/cuda/merge.cuh"
#include "../../backends/cuda/merge_sort.cuh"
#include "../../backends/cuda/sorted_search.cuh"
#include "../../backends/engine/multiway.hpp"

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
using cb::single_merge;
// The tuning tables, so that tests put sizes on tile boundaries and
// benchmarks name the boxes they force.
using cb::merge_sort_table;
using cb::merge_table;
using cb::search_table;
using cb::with_merge_box;
using cb::with_tuned_boxes;
// One wave of a merge kernel (small merges' tiles find their own ends up to
// self_ends_waves_all waves), and what a wave's CTAs take.
using cb::merge_tile_layout;
using cb::prepare_shared_memory;
using cb::self_ends_waves_all;
using cb::self_ends_waves_first;
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
using cb::warp_partitions_max;
// The sparse search with a forced probe, for the benchmark's tuning rows.
using cb::a_writes;
using cb::box_interpolates_from;
using cb::box_probes_4ary;
using cb::launch_search;
using cb::match_counters;
using cb::needle_rules;
}  // namespace cuda

}  // namespace internals
