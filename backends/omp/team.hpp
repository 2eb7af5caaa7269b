// The thread team of one call: its size, each thread's share, and how an
// exception thrown on a worker reaches the caller. An exception must not leave
// an OpenMP parallel region (the program would terminate), so work that may
// throw runs through team::run: the first exception is kept, the team skips
// the rest of its work but meets every barrier, and parallel() rethrows that
// same object on the calling thread after the region.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <utility>

#include "../../libmerge/detail/config.hpp"

namespace libmerge::detail::omp_backend {

// Below this many elements per thread a thread costs more than it saves
// (starting a team and each barrier take microseconds). Only OpenMP's default
// team is trimmed: .threads(n) is taken as asked, so tests can run 8 threads on
// a handful of elements.
inline constexpr index_t min_items_per_thread = index_t{1} << 13;

template <class Policy>
int team_size(const Policy& policy, index_t items) {
  if (policy.threads() > 0) return policy.threads();
  const index_t useful = std::max<index_t>(1, items / min_items_per_thread);
  return static_cast<int>(std::min<index_t>(omp_get_max_threads(), useful));
}

// First element of share t when n elements are split among p shares as evenly
// as possible (the first n % p shares hold one more). No n * t product, so no
// overflow for any 64-bit n.
inline index_t share_begin(index_t n, int p, int t) {
  const index_t q = n / p, r = n % p;
  return q * t + std::min<index_t>(t, r);
}

// The first exception thrown by any thread of a team.
class first_exception {
 public:
  bool caught() const { return caught_.load(std::memory_order_acquire); }

  void keep(std::exception_ptr e) noexcept {
#pragma omp critical(libmerge_first_exception)
    {
      if (!error_) error_ = std::move(e);
    }
    caught_.store(true, std::memory_order_release);
  }

  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::atomic<bool> caught_{false};
  std::exception_ptr error_;
};

// One thread's view of its team.
class team {
 public:
  team(int rank, int size, first_exception& error) : rank_(rank), size_(size), error_(error) {}

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Runs f() unless some thread has already failed; keeps what f throws.
  template <class F>
  void run(F&& f) const noexcept {
    if (error_.caught()) return;
    try {
      f();
    } catch (...) {
      error_.keep(std::current_exception());
    }
  }

  // Whether some thread has failed. After a barrier every thread gets the same answer.
  bool failed() const { return error_.caught(); }

  // Every thread of the team must reach every barrier, failed or not.
  void barrier() const {
#pragma omp barrier
  }

 private:
  int rank_;
  int size_;
  first_exception& error_;
};

// Runs body(team) on `threads` threads (OpenMP may start fewer: body takes the
// team's real size from team::size()), then rethrows the first exception.
// body itself must not throw: it wraps its work in team::run.
template <class Body>
void parallel(int threads, Body&& body) {
  first_exception error;
  if (threads <= 1) {
    body(team(0, 1, error));
  } else {
#pragma omp parallel num_threads(threads)
    body(team(omp_get_thread_num(), omp_get_num_threads(), error));
  }
  error.rethrow();
}

}  // namespace libmerge::detail::omp_backend
