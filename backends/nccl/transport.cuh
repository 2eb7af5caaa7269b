// How the ranks of a distributed sort talk: all-gather, sum all-reduce,
// all-to-all of pieces, host wait, for every rank this process drives. The
// sort (merge_sort.cuh) uses only this interface; two transports implement it:
// nccl_transport (below; deadline.cuh) and the tests' one-GPU
// loopback_transport (test/support/nccl_loopback.cuh).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../cuda/runtime.cuh"
#include "deadline.cuh"

namespace libmerge {

// An NCCL failure here or on a peer, or a timeout; an lm::cuda_error, so CUDA
// handlers catch it. nccl_code(): NCCL's result (ncclSuccess for a timeout).
class nccl_error : public cuda_error {
 public:
  nccl_error(ncclResult_t result, const std::string& algorithm, const std::string& message)
      : cuda_error(preformatted{}, cudaErrorUnknown, algorithm, message), result_(result) {}
  ncclResult_t nccl_code() const noexcept { return result_; }

 private:
  ncclResult_t result_;
};

namespace detail::nccl_backend {

inline void check_nccl(ncclResult_t r, ncclComm_t comm, const char* algorithm, const char* what) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  std::string msg = std::string("libmerge::") + algorithm + ": " + what + ": " + ncclGetErrorString(r);
  const char* last = comm != nullptr ? ncclGetLastError(comm) : nullptr;
  if (last != nullptr && *last != '\0') msg += std::string(" (") + last + ")";
  throw nccl_error(r, algorithm, msg);
}

// Makes `device` current; the caller's device is back at the end of the scope.
class device_scope {
 public:
  device_scope() { cudaGetDevice(&saved_); }
  ~device_scope() { cudaSetDevice(saved_); }
  void set(int device, const char* algorithm) const {
    check_cuda(cudaSetDevice(device), algorithm, "cudaSetDevice");
  }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int saved_ = 0;
};

// One rank this process drives, as a transport sees it.
struct member {
  ncclComm_t comm = nullptr;  // null in the loopback transport
  cudaStream_t stream = nullptr;
  int device = 0;
  int rank = 0;
};

// A piece of the all-to-all: per peer rank, where its bytes start and how many.
struct pieces {
  std::vector<std::size_t> offset, bytes;
};

// Runs f with members[i].stream = streams[i], restoring them however f ends.
template <class F>
void swap_streams(std::vector<member>& members, const std::vector<cudaStream_t>& streams, F& f) {
  std::vector<cudaStream_t> own;
  for (std::size_t i = 0; i < members.size(); ++i) {
    own.push_back(members[i].stream);
    members[i].stream = streams[i];
  }
  struct put_back {
    std::vector<member>& m;
    const std::vector<cudaStream_t>& own;
    ~put_back() {
      for (std::size_t i = 0; i < m.size(); ++i) m[i].stream = own[i];
    }
  } restore{members, own};
  f();
}

class nccl_transport {
 public:
  // comms[i] and streams[i] (of its comm's device) belong to local rank i. The
  // timeout counts from here, for the whole call.
  nccl_transport(const std::vector<ncclComm_t>& comms, const std::vector<cudaStream_t>& streams, double timeout_s,
                 const char* algorithm)
      : timeout_s_(timeout_s), algorithm_(algorithm) {
    if (!(timeout_s > 0)) {
      throw std::invalid_argument(std::string("libmerge::") + algorithm + ": the timeout must be positive, got " +
                                  std::to_string(timeout_s) + " s");
    }
    if (comms.empty()) throw std::invalid_argument(std::string("libmerge::") + algorithm + ": no communicator given");
    for (std::size_t i = 0; i < comms.size(); ++i) {
      member m;
      m.comm = comms[i];
      m.stream = streams[i];
      if (m.comm == nullptr) throw std::invalid_argument(std::string("libmerge::") + algorithm + ": the NCCL communicator is null");
      members_.push_back(m);
    }
    start_ = std::chrono::steady_clock::now();
    watch_.emplace(comms, timeout_s);
    try {
      // A non-blocking communicator may still be connecting: its queries
      // answer once it is ready.
      settle();
      for (member& m : members_) {
        int world = 0;
        check_nccl(ncclCommCount(m.comm, &world), m.comm, algorithm, "ncclCommCount");
        check_nccl(ncclCommUserRank(m.comm, &m.rank), m.comm, algorithm, "ncclCommUserRank");
        check_nccl(ncclCommCuDevice(m.comm, &m.device), m.comm, algorithm, "ncclCommCuDevice");
        if (&m == &members_.front()) world_ = world;
        if (world != world_) {
          throw std::invalid_argument(std::string("libmerge::") + algorithm +
                                      ": the communicators given belong to groups of different sizes");
        }
      }
    } catch (...) {
      watch_->stop();  // nothing was sent: the communicators stay usable
      throw;
    }
  }
  ~nccl_transport() { watch_->stop(); }
  nccl_transport(const nccl_transport&) = delete;
  nccl_transport& operator=(const nccl_transport&) = delete;

  int world() const { return world_; }
  int local_count() const { return static_cast<int>(members_.size()); }
  const member& local(int i) const { return members_[static_cast<std::size_t>(i)]; }

  // recv[i] receives every rank's `bytes` bytes, in rank order.
  void allgather(const std::vector<const void*>& send, const std::vector<void*>& recv, std::size_t bytes) {
    group([&](const member& m, std::size_t i) {
      check_nccl(ncclAllGather(send[i], recv[i], bytes, ncclUint8, m.comm, m.stream), m.comm, algorithm_,
                 "ncclAllGather");
    });
  }

  // recv[i][x] = the sum over ranks of send[x].
  void allreduce_sum(const std::vector<const unsigned long long*>& send, const std::vector<unsigned long long*>& recv,
                     std::size_t count) {
    group([&](const member& m, std::size_t i) {
      check_nccl(ncclAllReduce(send[i], recv[i], count, ncclUint64, ncclSum, m.comm, m.stream), m.comm, algorithm_,
                 "ncclAllReduce");
    });
  }

  // Local rank i sends out[i] pieces of send[i] and receives in[i] into
  // recv[i]; the caller copies a rank's own piece; empty pieces are skipped.
  // NCCL even where one process drives every rank:
  // 2 H200s, 2^30 int32 keys: peer copies 5.6 ms against NCCL's 3.0 (docs/multi-gpu-sort.md)
  void exchange(const std::vector<const char*>& send, const std::vector<pieces>& out, const std::vector<char*>& recv,
                const std::vector<pieces>& in) {
    group([&](const member& m, std::size_t i) {
      for (int peer = 0; peer < world_; ++peer) {
        if (peer == m.rank) continue;
        const std::size_t p = static_cast<std::size_t>(peer);
        if (out[i].bytes[p] > 0) {
          check_nccl(ncclSend(send[i] + out[i].offset[p], out[i].bytes[p], ncclUint8, peer, m.comm, m.stream),
                     m.comm, algorithm_, "ncclSend");
        }
        if (in[i].bytes[p] > 0) {
          check_nccl(ncclRecv(recv[i] + in[i].offset[p], in[i].bytes[p], ncclUint8, peer, m.comm, m.stream), m.comm,
                     algorithm_, "ncclRecv");
        }
      }
    });
  }

  // f's NCCL calls as one group (groups nest): keys and values share the links.
  template <class F>
  void grouped(F f) {
    in_group(f);
  }

  // f's operations go on streams[i] instead (the exchange's high-priority streams).
  template <class F>
  void on_streams(const std::vector<cudaStream_t>& streams, F f) {
    swap_streams(members_, streams, f);
  }

  // Host wait for every local stream. An error or the timeout aborts the
  // communicators (so peers fail instead of hanging) and throws.
  void wait_all() {
    for (int i = 0; i < local_count(); ++i) wait(i);
  }

  // The same for local rank i alone.
  // The first 2 ms yield instead of sleeping: a sleep lasts 50 us or more,
  // longer than the call's last waits often are.
  void wait(int i) {
    const member& m = members_[static_cast<std::size_t>(i)];
    const auto began = std::chrono::steady_clock::now();
    for (;;) {
      const cudaError_t e = cudaStreamQuery(m.stream);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) {
        cudaGetLastError();
        if (watch_->fired()) throw_timeout(m);
        abort_all();
        throw cuda_error(e, algorithm_, "waiting for the rank's stream");
      }
      if (elapsed() > timeout_s_) throw_timeout(m);
      check_async(m);
      if (std::chrono::steady_clock::now() - began < std::chrono::milliseconds(2)) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }

  // Aborts this process's communicators once, so peers fail instead of waiting.
  // ncclCommAbort frees a communicator: the caller's handle dangles afterwards.
  void abort_all() noexcept {
    if (aborted_) return;
    aborted_ = true;
    watch_->stop();  // a revoke under way ends first
    if (watch_->freed()) return;
    for (const member& m : members_) ncclCommAbort(m.comm);
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  [[noreturn]] void throw_timeout(const member& m) {
    abort_all();
    char secs[32];  // "3 s", not std::to_string's "3.000000 s"
    std::snprintf(secs, sizeof secs, "%g", timeout_s_);
    throw nccl_error(ncclSuccess, algorithm_,
                     std::string("libmerge::") + algorithm_ + ": rank " + std::to_string(m.rank) +
                         (world_ > 0 ? " of " + std::to_string(world_) : std::string()) + " waited " + secs +
                         " s for the other ranks (did every rank call " + algorithm_ +
                         "?); the communicator was aborted (and freed: make a new one)");
  }

  // A failed or aborted peer. The deadline first: once the watchdog fired, an
  // older NCCL may have freed the communicator.
  void check_async(const member& m) {
    if (watch_->fired()) throw_timeout(m);
    if (aborted_) return;
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(m.comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      abort_all();
      throw nccl_error(async, algorithm_,
                       std::string("libmerge::") + algorithm_ + ": rank " + std::to_string(m.rank) +
                           ": an NCCL operation failed (another rank failed or aborted?): " +
                           ncclGetErrorString(async) + "; the communicator was aborted (and freed: make a new one)");
    }
  }

  // A non-blocking communicator's ncclGroupEnd returns before the work is
  // queued: wait until none reports ncclInProgress.
  void settle() {
    for (const member& m : members_) {
      for (;;) {
        if (watch_->fired() || elapsed() > timeout_s_) throw_timeout(m);
        ncclResult_t state = ncclSuccess;
        check_nccl(ncclCommGetAsyncError(m.comm, &state), m.comm, algorithm_, "ncclCommGetAsyncError");
        if (state == ncclSuccess) break;
        if (state != ncclInProgress) check_async(m);
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }

  // f's NCCL calls as one group. None starts past the deadline (before NCCL
  // 2.28.7 the watchdog has freed the communicators); an error the watchdog
  // caused is the timeout.
  template <class F>
  void in_group(F&& f) {
    if (watch_->fired()) throw_timeout(members_.front());
    check_nccl(ncclGroupStart(), nullptr, algorithm_, "ncclGroupStart");
    try {
      f();
    } catch (...) {
      watch_->enter_wait();
      ncclGroupEnd();
      watch_->leave_wait();
      if (watch_->fired()) throw_timeout(members_.front());
      abort_all();
      throw;
    }
    watch_->enter_wait();
    const ncclResult_t r = ncclGroupEnd();
    watch_->leave_wait();
    if (watch_->fired()) throw_timeout(members_.front());
    if (r != ncclSuccess && r != ncclInProgress) {
      for (const member& m : members_) check_async(m);  // a peer's failure names itself
      try {
        check_nccl(r, members_.front().comm, algorithm_, "ncclGroupEnd");
      } catch (...) {
        abort_all();
        throw;
      }
    }
    settle();
  }

  // One NCCL group over the local ranks' calls (a process that drives several
  // ranks from one thread must group them, or the first call waits for ever).
  template <class F>
  void group(F f) {
    in_group([&] {
      for (std::size_t i = 0; i < members_.size(); ++i) f(members_[i], i);
    });
  }

  std::vector<member> members_;
  int world_ = 0;
  bool aborted_ = false;
  double timeout_s_;
  const char* algorithm_;
  std::chrono::steady_clock::time_point start_;
  std::optional<watchdog> watch_;
};

}  // namespace detail::nccl_backend
}  // namespace libmerge
