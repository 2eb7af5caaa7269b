// Built for sm_80 machine code only (no PTX): on a GPU of another major
// architecture the CUDA backend must refuse with a clear lm::cuda_error, not
// crash or run wrong code. On an sm_8x GPU it must simply work.
#define BOOST_TEST_MODULE cuda_arch_mismatch
#include <boost/test/included/unit_test.hpp>

#include <string>
#include <vector>

#include "cuda_test_support.cuh"

namespace lm = libmerge;

BOOST_AUTO_TEST_CASE(uncompiled_architecture_gets_a_clear_error) {
  int device = 0, major = 0, minor = 0;
  BOOST_REQUIRE_EQUAL(cudaGetDevice(&device), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), cudaSuccess);
  const std::string sm = "sm_" + std::to_string(major * 10 + minor);

  int* a = nullptr;
  int* out = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMalloc(&a, 1000 * sizeof(int)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMalloc(&out, 2000 * sizeof(int)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMemset(a, 0, 1000 * sizeof(int)), cudaSuccess);
  if (major == 8) {
    lm::merge(lm::cuda::par, a, a + 1000, a, a + 1000, out);
    BOOST_CHECK_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  } else {
    bool thrown = false;
    try {
      lm::merge(lm::cuda::par, a, a + 1000, a, a + 1000, out);
    } catch (const lm::cuda_error& e) {
      thrown = true;
      const std::string msg = e.what();
      BOOST_TEST_MESSAGE(msg);
      BOOST_CHECK_MESSAGE(msg.find("no kernel image") != std::string::npos, msg);
      BOOST_CHECK_MESSAGE(msg.find(sm) != std::string::npos, msg);
      BOOST_CHECK_EQUAL(e.algorithm(), "merge");
    }
    BOOST_CHECK(thrown);
    BOOST_CHECK_EQUAL(cudaGetLastError(), cudaSuccess);
  }
  cudaFree(a);
  cudaFree(out);
}
