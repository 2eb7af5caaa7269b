// CUDA sorted_search and sorted_equality_count: the host side.
// bounds::lower is a merge of A and B in which A wins ties: B elements before
// a_i give its lower bound, A elements before b_j its upper bound. Dense path:
// partition_kernel (partition.cuh) then search_kernel (search/dense.cuh);
// bounds::upper searches (B, A). One-sided calls against a much longer side
// search each needle instead (needle_rules, search/needle.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include <cub/block/block_reduce.cuh>
#include <cuda/std/functional>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "../../libmerge/detail/config.hpp"
#include "../../libmerge/search_tags.hpp"
#include "../../policies/cuda.hpp"
#include "../engine/search.hpp"
#include "cta_merge.cuh"
#include "memory.cuh"
#include "partition.cuh"
#include "runtime.cuh"
#include "search/dense.cuh"
#include "search/needle.cuh"

namespace libmerge::detail::cuda_backend {

// Zeroes the counts: a memset where tiles add matches, else the kernel's block
// 0 (saving a launch). Returns what the kernel must zero (null: nothing).
// H200, 256 needles in 2^20 keys: 0.0136 ms with a memset, 0.0079 without counts (docs/cuda-sorted-search.md)
template <search_type TypeA, search_type TypeB>
match_counts* counts_to_zero(match_counts* counts, index_t grid, cudaStream_t stream, const char* algorithm) {
  constexpr bool counts_matches = writes_match(TypeA) || writes_match(TypeB);
  if (counts == nullptr) return nullptr;  // sorted_equality_count counts no matches
  if (!counts_matches && grid > 0) return counts;
  check_cuda(cudaMemsetAsync(counts, 0, sizeof(match_counts), stream), algorithm, "cudaMemsetAsync(counts)");
  return nullptr;
}

// How the per-needle search probes: 4-ary for needles denser than
// quaternary_below (halves the load chain), else for numbers in natural order
// binary then interpolation (the binary kernel is then not instantiated).
// H200, 2^28 int32: interpolation 0.181 vs 0.246 ms 4-ary at |B|/64, 0.53 vs 0.42 at |B|/16 (docs/cuda-sorted-search.md)
struct needle_plan {
  needle_probe probe;
  index_t window;  // the binary phase runs while the window holds more keys
};
template <class NeedleBox, int From, bool Interpolate>
needle_plan plan_needles(index_t needles, index_t hay_size, int quaternary_below) {
  const double ratio = static_cast<double>(hay_size) / static_cast<double>(needles);
  const bool forced = box_probes_4ary<NeedleBox>::value || box_interpolates_from<NeedleBox>::value >= 0;
  const needle_probe probe = box_probes_4ary<NeedleBox>::value || (!forced && ratio < quaternary_below)
                                 ? needle_probe::quaternary
                             : Interpolate ? needle_probe::interpolation
                                           : needle_probe::binary;
  // At least 64 keys (a block of the narrowest keys is 16), never 0.
  const double wanted = static_cast<double>(From) * ratio;
  const index_t window = wanted < 64.0 ? 64 : wanted > static_cast<double>(hay_size) ? hay_size + 1
                                                                                      : static_cast<index_t>(wanted);
  return {probe, window};
}

// The sparse search: each needle of the side that writes searched in the
// other (B's results are upper bounds into A).
template <class NeedleBox, search_type TypeA, search_type TypeB, a_writes AWrites, int InterpolateFrom, bool ASide,
          class AIt, class BIt, class AOut, class BOut, class Comp>
void launch_needle_search(const device_info& dev, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                          search_reports reports, match_counts* counts, int quaternary_below, Comp comp,
                          cudaStream_t stream, const char* algorithm) {
  const index_t needles = ASide ? na : nb;
  const index_t tiles = (needles + NeedleBox::nv - 1) / NeedleBox::nv;
  if (tiles > max_grid_ctas) throw_too_many_tiles(algorithm);
  match_counts* const zero = counts_to_zero<TypeA, TypeB>(counts, tiles, stream, algorithm);
  const index_t hay_size = ASide ? nb : na;
  using NeedleKey = value_of<std::conditional_t<ASide, AIt, BIt>>;
  using HayKey = value_of<std::conditional_t<ASide, BIt, AIt>>;
  constexpr int from =
      box_interpolates_from<NeedleBox>::value >= 0 ? box_interpolates_from<NeedleBox>::value : InterpolateFrom;
  constexpr bool interpolate =
      interpolable_v<Comp, NeedleKey, HayKey> && !box_probes_4ary<NeedleBox>::value && from > 0;
  const needle_plan plan = plan_needles<NeedleBox, from, interpolate>(needles, hay_size, quaternary_below);
  auto run = [&](auto index, auto how) {
    using Index = decltype(index);
    constexpr needle_probe P = decltype(how)::value;
    const Index w = static_cast<Index>(plan.window);
    if constexpr (ASide) {
      launch(needle_search_kernel<NeedleBox, P, false, TypeA, AWrites, Index, AIt, BIt, AOut, Comp>, tiles,
             NeedleBox::nt, 0, stream, false, dev, algorithm, "needle_search_kernel", a, na, b,
             static_cast<Index>(nb), w, a_out, reports.a, zero, comp);
    } else {
      launch(needle_search_kernel<NeedleBox, P, true, TypeB, a_writes::search, Index, BIt, AIt, BOut, Comp>, tiles,
             NeedleBox::nt, 0, stream, false, dev, algorithm, "needle_search_kernel", b, nb, a,
             static_cast<Index>(na), w, b_out, reports.b, zero, comp);
    }
  };
  auto run_probe = [&](auto index) {
    if (plan.probe == needle_probe::quaternary) {
      run(index, std::integral_constant<needle_probe, needle_probe::quaternary>{});
    } else if constexpr (interpolate) {
      run(index, std::integral_constant<needle_probe, needle_probe::interpolation>{});
    } else {
      run(index, std::integral_constant<needle_probe, needle_probe::binary>{});
    }
  };
  // int positions (a third fewer instructions a step) below 2^31 keys less a margin.
  if (hay_size < 0x7fffff00) {
    run_probe(int{});
  } else {
    run_probe(index_t{});
  }
  if (debug_enabled()) {
    std::fprintf(stderr, "libmerge::%s: per-needle %s search of %lld needles in %lld, nt=%d vt=%d", algorithm,
                 plan.probe == needle_probe::interpolation ? "interpolation"
                 : plan.probe == needle_probe::quaternary  ? "4-ary"
                                                           : "binary",
                 static_cast<long long>(needles), static_cast<long long>(hay_size), NeedleBox::nt, NeedleBox::vt);
    if (plan.probe == needle_probe::interpolation) {
      std::fprintf(stderr, ", binary down to %lld keys", static_cast<long long>(plan.window));
    }
    std::fprintf(stderr, "\n");
  }
}

// The dense search: Merge Path partitions, then a tile of both inputs a CTA
// (search_kernel).
template <class Box, search_type TypeA, search_type TypeB, a_writes AWrites, class Policy, class AIt, class BIt,
          class AOut, class BOut, class Reports, class Comp>
void launch_tile_search(const Policy& policy, const device_info& dev, AIt a, index_t na, BIt b, index_t nb,
                        AOut a_out, BOut b_out, Reports reports, match_counts* counts, Comp comp,
                        const char* algorithm) {
  const cudaStream_t stream = policy.stream();
  using G = search_merge<AIt, BIt>;
  const G g{a, b, na, nb};
  const index_t num_tiles = (na + nb + Box::nv - 1) / Box::nv;
  if (num_tiles > max_grid_ctas) throw_too_many_tiles(algorithm);
  auto kernel = search_kernel<Box, TypeA, TypeB, AWrites, AIt, BIt, AOut, BOut, Comp, Reports>;
  const std::size_t smem = search_tile_layout<AIt, BIt, Box::nv>::bytes;
  prepare_shared_memory(kernel, smem, dev, Box::nt, Box::vt, algorithm);
  // The partitions, then one byte a block of partitions: out of order?
  const index_t order_blocks = plan_partitions(num_tiles + 1, true, dev).blocks;
  const std::size_t temp_bytes =
      sizeof(index_t) * static_cast<std::size_t>(num_tiles + 1) + static_cast<std::size_t>(order_blocks);
  temporary_storage<typename Policy::allocator_type> temp(policy.allocator(), stream, temp_bytes, algorithm);
  index_t* mp = temp.template as<index_t>();
  unsigned char* out_of_order = reinterpret_cast<unsigned char*>(mp + num_tiles + 1);
  match_counts* const zero = counts_to_zero<TypeA, TypeB>(counts, num_tiles, stream, algorithm);
  launch_partitions<bounds::lower>(g, Box::nv, num_tiles, mp, comp, stream, dev, algorithm, out_of_order);
  launch(kernel, num_tiles, Box::nt, smem, stream, true, dev, algorithm, "search_kernel", g,
         static_cast<const index_t*>(mp), static_cast<const unsigned char*>(out_of_order),
         static_cast<int>(order_blocks), a_out, b_out, reports, zero, comp);
  if (debug_enabled()) {
    print_plan<Box>(dev, algorithm, "merge-path search",
                    kernel_arch(reinterpret_cast<const void*>(kernel), dev, algorithm),
                    std::is_same_v<typename Policy::box_type, tuned_launch_box>, num_tiles, temp_bytes, smem);
  }
}

// When a search goes per needle and how it probes (search_line fields, policies/cuda.hpp).
struct needle_rules {
  int sparse_ratio;
  int quaternary_below;
  int small_hay_log2_bytes;
  int small_sparse_ratio;
  int small_needles_log2;
};

// One search (bounds::lower; the caller swaps sides for upper), per needle or in
// tiles. counts is zeroed only once nothing can fail before the kernels run.
template <class Box, class NeedleBox, search_type TypeA, search_type TypeB, a_writes AWrites, int InterpolateFrom,
          class Policy, class AIt, class BIt, class AOut, class BOut, class Reports, class Comp>
void launch_search(const Policy& policy, const device_info& dev, AIt a, index_t na, BIt b, index_t nb, AOut a_out,
                   BOut b_out, Reports reports, match_counts* counts, needle_rules rules, Comp comp,
                   const char* algorithm) {
  constexpr bool a_side = writes_output(TypeA) || AWrites == a_writes::equal_count;
  constexpr bool b_side = writes_output(TypeB);
  if constexpr (!a_side && !b_side) {
    counts_to_zero<TypeA, TypeB>(counts, 0, policy.stream(), algorithm);
  } else {
    // The haystack of a per-needle search: the side that writes nothing.
    const double hay_bytes = a_side ? static_cast<double>(nb) * sizeof(value_of<BIt>)
                                    : static_cast<double>(na) * sizeof(value_of<AIt>);
    const bool small = rules.small_hay_log2_bytes > 0 && hay_bytes < std::ldexp(1.0, rules.small_hay_log2_bytes);
    const double ratio = small ? rules.small_sparse_ratio : rules.sparse_ratio;
    const index_t needles = a_side ? na : nb;
    const bool few = small && rules.small_needles_log2 > 0 && needles < (index_t(1) << rules.small_needles_log2);
    const bool sparse_a = a_side && !b_side && (few || static_cast<double>(na) * ratio <= static_cast<double>(nb));
    const bool sparse_b = !a_side && b_side && (few || static_cast<double>(nb) * ratio <= static_cast<double>(na));
    if (sparse_a || sparse_b) {
      const int quaternary_below = small ? INT_MAX : rules.quaternary_below;
      launch_needle_search<NeedleBox, TypeA, TypeB, AWrites, InterpolateFrom, a_side>(
          dev, a, na, b, nb, a_out, b_out, reports, counts, quaternary_below, comp, policy.stream(), algorithm);
    } else {
      launch_tile_search<Box, TypeA, TypeB, AWrites>(policy, dev, a, na, b, nb, a_out, b_out, reports, counts, comp,
                                                     algorithm);
    }
  }
}

// A search line's boxes (search_table::boxes): the merge-path tiles, the per-needle blocks, and the line,
// whose ratios and rules are read by name.
template <class Dense, class Needle, std::size_t I>
struct search_boxes {
  using dense = Dense;
  using needle = Needle;
  static constexpr tuning::search_line line = tuning::search[I];
};

// The tuning table of sorted search: line I's boxes for keys TA and TB.
template <class TA, class TB>
struct search_table {
  static constexpr const auto& lines = tuning::search;
  static constexpr std::size_t elem = sizeof(TA) > sizeof(TB) ? sizeof(TA) : sizeof(TB);
  // Keys too large for tuning::tile_smem_portable get fewer threads (fit_threads).
  static constexpr int nt(int line_nt, int vt) {
    return tuning::fit_threads(line_nt, vt, elem + sizeof(int), tuning::tile_smem_portable);
  }
  // A line's values a thread for these keys.
  static constexpr int vt_of(const tuning::search_line& line) {
    return results_in_key_slots<TA, TB> ? line.vt_in_keys : tuning::scale_vt(line.vt, 4, elem);
  }
  template <std::size_t I>
  static constexpr auto boxes() {
    constexpr int vt = vt_of(lines[I]);
    return search_boxes<launch_box<nt(lines[I].nt, vt), vt>, launch_box<lines[I].needle_nt, lines[I].needle_vt>, I>{};
  }
};

template <search_type TypeA, search_type TypeB, a_writes AWrites, class AIt, class BIt, class AOut, class BOut,
          class Comp>
struct search_kernel_of {
  template <class Boxes>
  auto operator()(Boxes) const {
    return search_kernel<typename Boxes::dense, TypeA, TypeB, AWrites, AIt, BIt, AOut, BOut, Comp>;
  }
};

// The bounds::lower search with the policy's box (tuned ratios, no
// needle-count rule) or the tuned line.
template <search_type TypeA, search_type TypeB, a_writes AWrites, class Policy, class AIt, class BIt, class AOut,
          class BOut, class Reports, class Comp>
void search_lower(const Policy& policy, const device_info& dev, AIt a, index_t na, BIt b, index_t nb, AOut a_out,
                  BOut b_out, Reports reports, match_counts* counts, Comp comp, const char* algorithm) {
  using TA = value_of<AIt>;
  using TB = value_of<BIt>;
  static_assert(std::is_trivially_copyable_v<TA> && std::is_default_constructible_v<TA> &&
                    std::is_trivially_copyable_v<TB> && std::is_default_constructible_v<TB>,
                "libmerge (CUDA backend): search keys must be trivially copyable and default-constructible");
  using table = search_table<TA, TB>;
  // A caller's box replaces the tuned line's dense tile box.
  using Box = typename Policy::box_type;
  auto run = [&](auto boxes) {
    using B = decltype(boxes);
    constexpr tuning::search_line line = B::line;
    constexpr bool tuned = std::is_same_v<Box, tuned_launch_box>;
    using Dense = std::conditional_t<tuned, typename B::dense, typename merge_box_of<Box>::type>;
    const needle_rules rules{line.sparse_ratio, line.quaternary_below, line.small_hay_log2_bytes,
                             line.small_sparse_ratio, tuned ? line.small_needles_log2 : 0};
    launch_search<Dense, typename B::needle, TypeA, TypeB, AWrites, line.interpolate_from>(
        policy, dev, a, na, b, nb, a_out, b_out, reports, counts, rules, comp, algorithm);
  };
  if constexpr (table::elem > max_element_bytes) {
    throw_element_too_large(algorithm, table::elem);
  } else {
    with_tuned_boxes<table>(dev, algorithm, search_kernel_of<TypeA, TypeB, AWrites, AIt, BIt, AOut, BOut, Comp>{},
                            run);
  }
}

// An output as a kernel receives it; one not written passes untouched (may be null).
template <bool Written, class It>
auto output_to_device(It it, index_t length, const device_info& dev, const char* algorithm, const char* name) {
  if constexpr (Written) {
    return to_device(it, length, dev, algorithm, name);
  } else {
    return it;
  }
}

// Where match counts go: returned (a temporary and a wait), to device memory,
// or nowhere (sorted_equality_count).
enum class counts_to { caller, device_memory, nowhere };

// Every public form ends here. descents (device memory; Descents unsigned*, else none): set to 1 where a
// merge-path tile finds A or B out of order, else 0; the per-needle search relies on the haystack's order alone
// and reads no needle's neighbour (descent_reports).
template <bounds Bounds, search_type TypeA, search_type TypeB, a_writes AWrites, counts_to Counts, class Policy,
          class AIt, class BIt, class AOut, class BOut, class Comp, class Descents = std::nullptr_t>
match_counts sorted_search(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                           match_counts* counts, Comp comp, Descents descents = nullptr) {
  const char* algorithm = AWrites == a_writes::equal_count ? "sorted_equality_count" : "sorted_search";
  const device_info& dev = current_device(algorithm, policy.stream());
  const auto d_a = to_device(a, na, dev, algorithm, "a_first");
  const auto d_b = to_device(b, nb, dev, algorithm, "b_first");
  const auto d_a_out = output_to_device<writes_output(TypeA) || AWrites == a_writes::equal_count>(
      a_out, na, dev, algorithm, AWrites == a_writes::equal_count ? "counts_out" : "a_out");
  const auto d_b_out = output_to_device<writes_output(TypeB)>(b_out, nb, dev, algorithm, "b_out");
  match_counts* d_counts = nullptr;
  if constexpr (Counts == counts_to::device_memory) d_counts = device_pointer(counts, dev, algorithm, "counts_out");
  {
    constexpr bool a_written = writes_output(TypeA) || AWrites == a_writes::equal_count;
    byte_range ra{AWrites == a_writes::equal_count ? "counts_out" : "a_out"}, rb{"b_out"}, rc{"counts_out"};
    if constexpr (a_written) ra = range_of(ra.name, d_a_out, na);
    if constexpr (writes_output(TypeB)) rb = range_of(rb.name, d_b_out, nb);
    if constexpr (Counts == counts_to::device_memory) rc = range_of(rc.name, d_counts, 1);
    check_disjoint(algorithm, {ra, rb, rc}, {range_of("a_first", d_a, na), range_of("b_first", d_b, nb)});
  }
  // The temporary is taken first: a failed allocation leaves outputs untouched.
  std::optional<temporary_storage<typename Policy::allocator_type>> temp;
  if constexpr (Counts == counts_to::caller) {
    temp.emplace(policy.allocator(), policy.stream(), sizeof(match_counts), algorithm);
    d_counts = temp->template as<match_counts>();
  }
  auto* ca = d_counts ? reinterpret_cast<unsigned long long*>(&d_counts->a) : nullptr;
  auto* cb = d_counts ? reinterpret_cast<unsigned long long*>(&d_counts->b) : nullptr;
  const cudaStream_t stream = policy.stream();
  constexpr bool reporting = !std::is_same_v<Descents, std::nullptr_t>;
  if constexpr (reporting) {
    check_cuda(cudaMemsetAsync(descents, 0, sizeof(unsigned), stream), algorithm, "cudaMemsetAsync(descents)");
  }
  const auto reports = [&](unsigned long long* first, unsigned long long* second) {
    if constexpr (reporting) {
      return descent_reports{{first, second}, descents};
    } else {
      return search_reports{first, second};
    }
  };
  if constexpr (Bounds == bounds::lower) {
    search_lower<TypeA, TypeB, AWrites>(policy, dev, d_a, na, d_b, nb, d_a_out, d_b_out, reports(ca, cb), d_counts,
                                        comp, algorithm);
  } else {
    // Upper bounds of A into B: the lower search of (B, A).
    search_lower<TypeB, TypeA, AWrites>(policy, dev, d_b, nb, d_a, na, d_b_out, d_a_out, reports(cb, ca), d_counts,
                                        comp, algorithm);
  }
  match_counts result{};
  if constexpr (Counts == counts_to::caller) {
    check_cuda(cudaMemcpyAsync(&result, d_counts, sizeof(match_counts), cudaMemcpyDeviceToHost, stream), algorithm,
               "cudaMemcpyAsync(match counts)");
    check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (returning the match counts)");
  } else if (policy.synchronizes()) {
    check_cuda(cudaStreamSynchronize(stream), algorithm, "cudaStreamSynchronize (a synchronous Thrust policy)");
  }
  return result;
}

}  // namespace libmerge::detail::cuda_backend

namespace libmerge::detail {

template <>
struct backend_impl<algo::sorted_search, backend::cuda> {
  static constexpr bool available = true;
  static constexpr bool counts_in_place = true;

  // Returns the counts: waits for the stream unless no side counts matches.
  template <bounds Bounds, search_type TypeA, search_type TypeB, class Policy, class AIt, class BIt, class AOut,
            class BOut, class Comp>
  static match_counts run(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                          Comp comp) {
    using namespace cuda_backend;
    if constexpr (!writes_match(TypeA) && !writes_match(TypeB)) {
      return sorted_search<Bounds, TypeA, TypeB, a_writes::search, counts_to::nowhere>(policy, a, na, b, nb, a_out,
                                                                                      b_out, nullptr, comp);
    } else {
      refuse_capture(policy.stream(), "sorted_search",
                     "the form that returns match_counts waits for its stream and cannot be captured into a CUDA "
                     "graph; pass a device match_counts* (counts_out) instead");
      return sorted_search<Bounds, TypeA, TypeB, a_writes::search, counts_to::caller>(policy, a, na, b, nb, a_out,
                                                                                   b_out, nullptr, comp);
    }
  }
  // Writes the counts to device memory, in stream order: no wait.
  template <bounds Bounds, search_type TypeA, search_type TypeB, class Policy, class AIt, class BIt, class AOut,
            class BOut, class Comp>
  static void run_to(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, AOut a_out, BOut b_out,
                     match_counts* counts, Comp comp) {
    using namespace cuda_backend;
    sorted_search<Bounds, TypeA, TypeB, a_writes::search, counts_to::device_memory>(policy, a, na, b, nb, a_out,
                                                                                   b_out, counts, comp);
  }
};

template <>
struct backend_impl<algo::sorted_equality_count, backend::cuda> {
  static constexpr bool available = true;

  // Each A's lower bound, then B's run of equal elements there. Asynchronous.
  template <class Policy, class AIt, class BIt, class CountsOut, class Comp>
  static void run(const Policy& policy, AIt a, index_t na, BIt b, index_t nb, CountsOut counts, Comp comp) {
    using namespace cuda_backend;
    sorted_search<bounds::lower, search_type::none, search_type::none, a_writes::equal_count, counts_to::nowhere>(
        policy, a, na, b, nb, counts, nullptr, nullptr, comp);
  }
};

}  // namespace libmerge::detail
