// internals.cuh's door, and the NCCL backend's names behind it (only for
// targets built with NCCL).
#pragma once

#include <libmerge/nccl.hpp>

#include "internals.cuh"
#include "nccl_loopback.cuh"

namespace internals {

// The sort across GPUs with every rank on one GPU (its loopback transport),
// its options and its phase marks, below lm::nccl::par's one-rank-a-call API.
namespace nccl {
namespace nb = libmerge::detail::nccl_backend;
using nb::exchange_options;
using nb::local_policy;
using internals::nccl_loopback::loopback_transport;
using nb::nccl_transport;
using nb::phase_marks;
using nb::shard_view;
using nb::sort_shards;
// The loopback transport's hook (`fail`): one rank fails at a step as if
// its allocation there had, for the tests of failures after the headers.
using nb::fault_at;
using internals::nccl_loopback::injected_fault;
// A rank's header as prepare_rank fills it for given types, and the check
// every rank makes of all of them: the type mismatches that one process of
// loopback ranks (one type for all) cannot pass.
using nb::check_headers;
using nb::header;
using nb::prepare_rank;
using nb::rank_state;
}  // namespace nccl

}  // namespace internals
