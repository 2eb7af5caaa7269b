// internals.cuh's door, and the NCCL backend's names behind it (only for
// targets built with NCCL).
#pragma once

#include <libmerge/nccl.hpp>

#include "internals.cuh"

namespace internals {

// The sort across GPUs with every rank on one GPU (its loopback transport),
// its options and its phase marks, below lm::nccl::par's one-rank-a-call API.
namespace nccl {
namespace nb = libmerge::detail::nccl_backend;
using nb::exchange_options;
using nb::local_policy;
using nb::loopback_transport;
using nb::nccl_transport;
using nb::phase_marks;
using nb::shard_view;
using nb::sort_shards;
}  // namespace nccl

}  // namespace internals
