// lm::nccl::par(comm, stream): sort data spread over the GPUs of an NCCL
// communicator. Every rank calls lm::merge_sort (or merge_sort_by_key) with its
// shard in device memory; afterwards rank r holds the r-th slice of the global
// sorted order, as many elements as it passed in (ties keep rank order, then
// position). Collective: every rank calls, with the same key, value and
// comparator types; it returns when the sort is done on its stream, or throws
// on every rank. Plain data: libmerge/nccl.hpp brings in the backend.
//
//   lm::nccl::par(comm, stream)         stream of the comm's device (default: its default stream)
//   lm::nccl::par(comm).timeout(60.0)   give up after 60 s (default 300 s)
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "../libmerge/detail/config.hpp"

namespace libmerge::backend {
struct nccl {};
}  // namespace libmerge::backend

namespace libmerge::nccl {

// How long a call waits for the other ranks by default, in seconds: past it
// the communicators are revoked and every waiting rank throws. Long enough
// for a 2^32-key sort on a slow link, short enough that a rank that never
// calls does not hold its peers' GPUs for an hour.
inline constexpr double default_timeout_s = 300.0;

class policy {
 public:
  using backend_tag = backend::nccl;
  // Every rank takes part in every call, even with an empty shard.
  static constexpr bool collective = true;

  explicit policy(ncclComm_t comm, cudaStream_t stream = nullptr, double timeout_s = default_timeout_s)
      : comm_(comm), stream_(stream), timeout_s_(timeout_s) {}

  policy on(cudaStream_t stream) const { return policy(comm_, stream, timeout_s_); }
  // How long the whole call may take on this rank: past it a watchdog ends
  // the waits inside NCCL (ncclCommRevoke where NCCL has it, else
  // ncclCommAbort), aborts the communicator and throws lm::nccl_error, so a
  // rank that failed or never called cannot hang the others. ncclCommAbort
  // frees the communicator: do not ncclCommDestroy it after that; make a new one.
  policy timeout(double seconds) const { return policy(comm_, stream_, seconds); }

  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }
  double timeout_seconds() const { return timeout_s_; }

 private:
  ncclComm_t comm_;
  cudaStream_t stream_;
  double timeout_s_;
};

inline policy par(ncclComm_t comm, cudaStream_t stream = nullptr) { return policy(comm, stream); }

}  // namespace libmerge::nccl
