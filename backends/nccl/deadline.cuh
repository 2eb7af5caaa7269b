// The deadline of a call of the sort across GPUs (transport.cuh's
// nccl_transport holds one): a thread that revokes the call's communicators
// when its timeout passes, so that no wait, inside NCCL or not, outlasts it.
#pragma once

#include <dlfcn.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace libmerge::detail::nccl_backend {

// ncclCommRevoke where the NCCL this program runs with has it (2.28.7 and
// later; the header it was built with may be newer than the library the
// loader finds), else null.
inline ncclResult_t (*nccl_revoke())(ncclComm_t, int) {
  using revoke_fn = ncclResult_t (*)(ncclComm_t, int);
  static const revoke_fn f = reinterpret_cast<revoke_fn>(dlsym(RTLD_DEFAULT, "ncclCommRevoke"));
  return f;
}

// The call's deadline. A rank blocked where its own thread cannot look at a
// clock (inside ncclGroupEnd while NCCL connects to a peer that never came,
// or a host copy behind an NCCL kernel that waits for one) is freed by this
// thread: when the timeout passes, it revokes the call's communicators
// (ncclCommRevoke: everything in flight stops and the communicator is not
// freed, so the blocked thread returns with an error and uses no freed
// memory); the caller's thread then aborts them (abort_all, after stop()).
// With an NCCL older than 2.28.7 (no revoke) this thread aborts them
// (ncclCommAbort frees them) only while the caller's thread is blocked in
// ncclGroupEnd (enter_wait .. leave_wait, under a lock); anywhere else the
// caller's thread sees the deadline at its next check and aborts them itself,
// so no abort frees a communicator under its other NCCL calls. (Inside
// ncclGroupEnd NCCL frees it while the blocked call unwinds: the race that
// revoke removes.)
class watchdog {
 public:
  watchdog(std::vector<ncclComm_t> comms, double timeout_s)
      : comms_(std::move(comms)), thread_([this, timeout_s] { watch(timeout_s); }) {}
  ~watchdog() { stop(); }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

  // Ends the watch (joins the thread: a revoke under way is finished first).
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  bool fired() const { return fired_.load(); }
  // Around the caller's ncclGroupEnd, the one NCCL call that may block.
  void enter_wait() {
    std::lock_guard<std::mutex> lock(calls_);
    waiting_ = true;
  }
  void leave_wait() {
    std::lock_guard<std::mutex> lock(calls_);
    waiting_ = false;
  }
  // True where the watchdog freed the communicators itself (NCCL before 2.28).
  bool freed() const { return freed_; }

 private:
  void watch(double timeout_s) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto limit = std::chrono::duration<double>(timeout_s);
    if (wake_.wait_for(lock, limit, [this] { return done_; })) return;
    const auto revoke = nccl_revoke();
    if (revoke == nullptr) {
      std::lock_guard<std::mutex> calls(calls_);
      fired_ = true;
      if (!waiting_) return;  // (the caller's thread aborts them: see the class)
      for (ncclComm_t c : comms_) ncclCommAbort(c);
      freed_ = true;
      return;
    }
    fired_ = true;
    for (ncclComm_t c : comms_) {
      if (revoke(c, 0 /* NCCL_REVOKE_DEFAULT */) != ncclInProgress) continue;
      // A non-blocking communicator revokes in the background: wait (a
      // bounded while) so that the caller's abort does not overlap it.
      for (int i = 0; i < 100000; ++i) {
        ncclResult_t state = ncclSuccess;
        if (ncclCommGetAsyncError(c, &state) != ncclSuccess || state != ncclInProgress) break;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
  }

  std::vector<ncclComm_t> comms_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::atomic<bool> fired_{false};
  bool freed_ = false;
  std::mutex calls_;      // waiting_, and the abort of NCCL before 2.28.7
  bool waiting_ = false;  // the caller's thread is in ncclGroupEnd
  std::thread thread_;  // last: starts once the rest is made
};

}  // namespace libmerge::detail::nccl_backend
