// Built for sm_80 machine code only (no PTX): on a GPU of another major
// architecture the CUDA backend must refuse with a clear lm::cuda_error, not
// crash or run wrong code. On an sm_8x GPU it must simply work.
#define BOOST_TEST_MODULE cuda_arch_mismatch
#include <boost/test/unit_test.hpp>

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

  // A = the even numbers below 2000, B = the odd ones: the merge is 0..1999.
  std::vector<int> ha(1000), hb(1000), want(2000);
  for (int i = 0; i < 1000; ++i) {
    ha[static_cast<std::size_t>(i)] = 2 * i;
    hb[static_cast<std::size_t>(i)] = 2 * i + 1;
  }
  for (int i = 0; i < 2000; ++i) want[static_cast<std::size_t>(i)] = i;
  int* a = nullptr;
  int* b = nullptr;
  int* out = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMalloc(&a, 1000 * sizeof(int)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMalloc(&b, 1000 * sizeof(int)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMalloc(&out, 2000 * sizeof(int)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMemcpy(a, ha.data(), 1000 * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMemcpy(b, hb.data(), 1000 * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMemset(out, 0xff, 2000 * sizeof(int)), cudaSuccess);
  std::vector<int> got(2000);
  if (major == 8) {
    // Compiled for this GPU: it simply works.
    lm::merge(lm::cuda::par, a, a + 1000, b, b + 1000, out);
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    BOOST_REQUIRE_EQUAL(cudaMemcpy(got.data(), out, 2000 * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    BOOST_CHECK(got == want);
  } else {
    bool thrown = false;
    try {
      lm::merge(lm::cuda::par, a, a + 1000, b, b + 1000, out);
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
    // Nothing ran: the output is as it was.
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    BOOST_REQUIRE_EQUAL(cudaMemcpy(got.data(), out, 2000 * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    BOOST_CHECK(got == std::vector<int>(2000, -1));
  }
  cudaFree(b);
  cudaFree(a);
  cudaFree(out);
}
