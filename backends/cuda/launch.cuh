// From a policy and the device to a launch box: the policy's own box if it has
// one, else the tuning table's line for the compiled architecture. Launch
// shapes are template arguments of the kernels, so the run-time choice is a
// walk over the table's lines, each a compile-time box; lines with equal boxes
// share one kernel.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "../../policies/launch_box.hpp"
#include "device.cuh"

namespace libmerge::detail::cuda_backend {

template <class F, std::size_t... I>
void for_each_index(F& f, std::index_sequence<I...>) {
  (f(std::integral_constant<std::size_t, I>{}), ...);
}

// The tuning line for the architecture the kernels were compiled for, as an
// index into Table::lines (newest first); -1 when the table has none.
template <class Table>
constexpr int line_for(int arch) {
  constexpr std::size_t n = std::extent_v<std::remove_reference_t<decltype(Table::lines)>>;
  for (std::size_t i = 0; i < n; ++i) {
    if (Table::lines[i].arch <= arch) return static_cast<int>(i);
  }
  return -1;
}

// Calls f(launch_box<nt, vt>{}) with the box for this call. Table is a type
// whose static member `lines` is a tuning table (policies/launch_box.hpp) and
// whose static nt(line) and vt(line) give the threads and values per thread
// for this call's types.
template <class Table, class Box, class F>
void with_launch_box(const device_info& dev, const char* algorithm, F&& f) {
  if constexpr (!std::is_same_v<Box, tuned_launch_box>) {
    f(Box{});
  } else {
    constexpr std::size_t n = std::extent_v<std::remove_reference_t<decltype(Table::lines)>>;
    const int chosen = line_for<Table>(dev.arch);
    auto try_line = [&](auto index) {
      constexpr auto line = Table::lines[decltype(index)::value];
      if (static_cast<int>(decltype(index)::value) == chosen) f(launch_box<Table::nt(line), Table::vt(line)>{});
    };
    for_each_index(try_line, std::make_index_sequence<n>{});
    if (chosen < 0) {
      throw std::runtime_error(std::string("libmerge::") + algorithm + ": no tuning for sm_" +
                               std::to_string(dev.arch) + "; the CUDA backend supports sm_" +
                               std::to_string(Table::lines[n - 1].arch) + " and newer");
    }
  }
}

template <class Box>
void print_plan(const device_info& dev, const char* algorithm, bool tuned, long long tiles,
                std::size_t temp_bytes, std::size_t smem_bytes) {
  if (!debug_enabled()) return;
  std::fprintf(stderr,
               "libmerge::%s: device %d sm_%d (kernels for sm_%d), launch box nt=%d vt=%d (%s), "
               "%lld tiles, %zu B temporary, %zu B shared per block\n",
               algorithm, dev.device, dev.cc, dev.arch, Box::nt, Box::vt, tuned ? "tuned" : "caller's", tiles,
               temp_bytes, smem_bytes);
}

}  // namespace libmerge::detail::cuda_backend
