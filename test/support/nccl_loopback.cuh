// The loopback transport: every rank of a sort across GPUs in this process,
// on one device, behind the same operations as the product's nccl_transport
// (backends/nccl/transport.cuh), so that the sort's distributed steps run and
// are tested on one GPU, with a hook that makes one rank fail at a step.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include <libmerge/nccl.hpp>

namespace internals::nccl_loopback {
namespace nb = libmerge::detail::nccl_backend;
using libmerge::index_t;
using libmerge::detail::check_cuda;
using nb::device_scope;
using nb::member;
using nb::pieces;
using nb::swap_streams;

template <int = 0>
__global__ void add_u64(unsigned long long* to, const unsigned long long* from, std::size_t count) {
  const std::size_t x = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (x < count) to[x] += from[x];
}

// A step at which one rank fails as if its allocation there had, so that
// tests reach the failure paths after the headers.
struct injected_fault {
  int rank = -1;
  nb::fault_at at = nb::fault_at::none;
};

// Every rank in this process (see the top of the file). Operations are
// stream-ordered: a barrier (each stream waits for an event of every other)
// before the copies, so every rank's data is ready, and after them, so no
// rank overwrites a buffer another is still reading.
class loopback_transport {
 public:
  loopback_transport(const std::vector<cudaStream_t>& streams, const char* algorithm) : algorithm_(algorithm) {
    device_scope scope;
    for (std::size_t i = 0; i < streams.size(); ++i) {
      member m;
      m.stream = streams[i];
      m.rank = static_cast<int>(i);
      check_cuda(cudaStreamGetDevice(m.stream, &m.device), algorithm, "cudaStreamGetDevice");
      scope.set(m.device, algorithm);
      cudaEvent_t e{};
      check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), algorithm, "cudaEventCreate");
      events_.push_back(e);
      members_.push_back(m);
    }
  }
  ~loopback_transport() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  loopback_transport(const loopback_transport&) = delete;
  loopback_transport& operator=(const loopback_transport&) = delete;

  int world() const { return local_count(); }
  int local_count() const { return static_cast<int>(members_.size()); }
  const member& local(int i) const { return members_[static_cast<std::size_t>(i)]; }

  void allgather(const std::vector<const void*>& send, const std::vector<void*>& recv, std::size_t bytes) {
    barrier();
    for (std::size_t i = 0; i < members_.size(); ++i) {
      for (std::size_t j = 0; j < members_.size(); ++j) {
        copy(static_cast<char*>(recv[i]) + j * bytes, i, send[j], j, bytes);
      }
    }
    barrier();
  }

  void allreduce_sum(const std::vector<const unsigned long long*>& send, const std::vector<unsigned long long*>& recv,
                     std::size_t count) {
    barrier();
    device_scope scope;
    for (std::size_t i = 0; i < members_.size(); ++i) {
      copy(recv[i], i, send[0], 0, count * sizeof(unsigned long long));
      scope.set(members_[i].device, algorithm_);
      for (std::size_t j = 1; j < members_.size(); ++j) {
        libmerge::detail::cuda_backend::launch_with(nullptr, add_u64<>, static_cast<index_t>((count + 255) / 256),
                                                    256, 0, members_[i].stream, algorithm_, "launch of add_u64",
                                                    recv[i], static_cast<const unsigned long long*>(send[j]), count);
      }
    }
    barrier();
  }

  void exchange(const std::vector<const char*>& send, const std::vector<pieces>& out, const std::vector<char*>& recv,
                const std::vector<pieces>& in) {
    barrier();
    for (std::size_t i = 0; i < members_.size(); ++i) {
      for (std::size_t j = 0; j < members_.size(); ++j) {
        if (i == j || in[i].bytes[j] == 0) continue;
        copy(recv[i] + in[i].offset[j], i, send[j] + out[j].offset[i], j, in[i].bytes[j]);
      }
    }
    barrier();
  }

  void wait_all() {
    for (int i = 0; i < local_count(); ++i) wait(i);
  }
  void wait(int i) {
    check_cuda(cudaStreamSynchronize(members_[static_cast<std::size_t>(i)].stream), algorithm_,
               "cudaStreamSynchronize");
  }

  void abort_all() noexcept {}  // every rank is here: nobody is left waiting

  // The fault hook the sort asks a transport for (nccl_backend::fault_at):
  // none unless a test sets `fail`.
  injected_fault fail;
  nb::fault_at fault_for(int rank) const { return fail.rank == rank ? fail.at : nb::fault_at::none; }
  template <class F>
  void grouped(F f) {
    f();
  }
  template <class F>
  void on_streams(const std::vector<cudaStream_t>& streams, F f) {
    swap_streams(members_, streams, f);
  }

 private:
  void copy(void* to, std::size_t i, const void* from, std::size_t j, std::size_t bytes) {
    if (bytes == 0) return;
    check_cuda(cudaMemcpyPeerAsync(to, members_[i].device, from, members_[j].device, bytes, members_[i].stream),
               algorithm_, "cudaMemcpyPeerAsync");
  }
  void barrier() {
    device_scope scope;
    for (std::size_t i = 0; i < members_.size(); ++i) {
      scope.set(members_[i].device, algorithm_);
      check_cuda(cudaEventRecord(events_[i], members_[i].stream), algorithm_, "cudaEventRecord");
    }
    for (std::size_t i = 0; i < members_.size(); ++i) {
      for (std::size_t j = 0; j < members_.size(); ++j) {
        if (i != j) {
          check_cuda(cudaStreamWaitEvent(members_[i].stream, events_[j], 0), algorithm_, "cudaStreamWaitEvent");
        }
      }
    }
  }

  std::vector<member> members_;
  std::vector<cudaEvent_t> events_;
  const char* algorithm_;
};

}  // namespace internals::nccl_loopback
