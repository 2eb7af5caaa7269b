// lm::nccl::par(comm, stream): sort data spread over the GPUs of an NCCL
// communicator. Every rank calls lm::merge_sort (or merge_sort_by_key) with its
// own shard of keys in device memory; afterwards rank r holds the r-th slice
// of the global sorted order, as many elements as it passed in, stable across
// ranks (ties keep rank order, then position). The call is collective: every
// rank of the communicator must make it, with the same key type, value type
// and comparator. A policy is plain data: this file includes nothing from
// backends/ (libmerge/nccl.hpp brings in the backend).
//
//   lm::nccl::par(comm)                 the default stream of the comm's device
//   lm::nccl::par(comm, stream)         work on `stream` (of the comm's device)
//   lm::nccl::par(comm).timeout(60.0)   give up (and abort, so free, the
//                                       communicator)
//                                       when the call has run 60 s (300 s
//                                       unless said)
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "../libmerge/detail/dispatch.hpp"

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
  // How long the whole call may take on this rank before it gives up on the
  // other ranks: it then stops what NCCL has in flight (ncclCommRevoke where
  // the NCCL library has it, else ncclCommAbort of a thread blocked in
  // ncclGroupEnd, from a watchdog thread, so that a wait inside NCCL ends
  // too), aborts the communicator and throws
  // lm::nccl_error. A rank that failed or never called cannot hang the
  // others. ncclCommAbort frees the communicator: after an lm::nccl_error
  // the handle is dangling (do not ncclCommDestroy it); make a new one.
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
