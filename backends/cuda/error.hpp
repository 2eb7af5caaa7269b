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

 private:
  cudaError_t code_;
  std::string algorithm_;
};

namespace detail {

inline void check_cuda(cudaError_t code, const char* algorithm, const char* what) {
  if (code != cudaSuccess) throw cuda_error(code, algorithm, what);
}

// After a launch: configuration errors show up at once through cudaGetLastError;
// faults inside the kernel surface at the next synchronizing call, as with any
// asynchronous CUDA work.
inline void check_launch(const char* algorithm, const char* kernel) {
  check_cuda(cudaGetLastError(), algorithm, std::string("launch of ").append(kernel).c_str());
}

}  // namespace detail
}  // namespace libmerge
