// The deadline of a call of the sort across GPUs (nccl_transport holds one).
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

// ncclCommRevoke where the loaded NCCL has it (2.28.7 on), else null.
inline ncclResult_t (*nccl_revoke())(ncclComm_t, int) {
  using revoke_fn = ncclResult_t (*)(ncclComm_t, int);
  static const revoke_fn f = reinterpret_cast<revoke_fn>(dlsym(RTLD_DEFAULT, "ncclCommRevoke"));
  return f;
}

// A watchdog thread: when the timeout passes it revokes the communicators
// (nothing freed, so a thread blocked inside NCCL returns with an error); the
// caller's thread then aborts them. Without revoke (NCCL < 2.28.7) it aborts
// them only while the caller is in ncclGroupEnd (enter_wait .. leave_wait),
// so no abort frees a communicator under other NCCL calls.
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
      // Revoke is asynchronous: wait a bounded while before the caller aborts.
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
