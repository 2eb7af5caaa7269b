// Every CUDA error becomes an lm::cuda_error naming the algorithm and the step.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace libmerge {

class cuda_error : public std::runtime_error {
 public:
  cuda_error(cudaError_t code, const std::string& algorithm, const std::string& what)
      : std::runtime_error("libmerge::" + algorithm + ": " + what + ": " + cudaGetErrorName(code) + " (" +
                           cudaGetErrorString(code) + ")"),
        code_(code),
        algorithm_(algorithm) {}

  cudaError_t code() const noexcept { return code_; }
  const std::string& algorithm() const noexcept { return algorithm_; }

 protected:
  // For failures that are not a CUDA runtime call's (NCCL's, in nccl_error):
  // the message as given.
  struct preformatted {};
  cuda_error(preformatted, cudaError_t code, const std::string& algorithm, const std::string& message)
      : std::runtime_error(message), code_(code), algorithm_(algorithm) {}

 private:
  cudaError_t code_;
  std::string algorithm_;
};

namespace detail {

// Throws for a failed call, first taking the error off the thread's last-error
// slot, so neither a later check nor the caller's next CUDA call trips over it;
// sticky errors (a fault inside a kernel) stay, as they must.
inline void check_cuda(cudaError_t code, const char* algorithm, const char* what) {
  if (code != cudaSuccess) {
    cudaGetLastError();
    throw cuda_error(code, algorithm, what);
  }
}

}  // namespace detail
}  // namespace libmerge
