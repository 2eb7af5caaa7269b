// Bad input to the CUDA backend: clear exceptions naming the problem, never a
// crash, and the caller's outputs untouched.
#define BOOST_TEST_MODULE cuda_errors
#include <boost/test/included/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_test_support.cuh"
#include "test_support.hpp"

namespace lm = libmerge;
using test_support::check_same;
using cuda_test::to_device;
using cuda_test::to_host;

namespace {

// Runs f, expects exception E whose message contains every one of `words`.
template <class E, class F>
void expect_error(F&& f, std::vector<std::string> words) {
  bool thrown = false;
  try {
    f();
  } catch (const E& e) {
    thrown = true;
    const std::string msg = e.what();
    for (const auto& w : words) BOOST_CHECK_MESSAGE(msg.find(w) != std::string::npos, "'" << msg << "' lacks '" << w << "'");
  }
  BOOST_CHECK_MESSAGE(thrown, "expected an exception mentioning " << words.at(0));
  BOOST_CHECK_EQUAL(cudaGetLastError(), cudaSuccess);  // no stale CUDA error left behind
}

std::vector<int> iota_vector(int n, int step) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i * step;
  return v;
}

}  // namespace

// A host pointer handed to lm::cuda::par is rejected by name, for every
// argument of merge and merge_by_key, and the device output stays untouched.
BOOST_AUTO_TEST_CASE(host_pointers_are_rejected) {
  std::vector<int> ha = iota_vector(1000, 2), hb = iota_vector(700, 3), hout(1700, -1);
  auto da = to_device(ha), db = to_device(hb);
  thrust::device_vector<int> dout(1700, -1), dvals(1700, -1);
  int* a = thrust::raw_pointer_cast(da.data());
  int* b = thrust::raw_pointer_cast(db.data());
  int* out = thrust::raw_pointer_cast(dout.data());
  int* vals = thrust::raw_pointer_cast(dvals.data());

  expect_error<std::invalid_argument>([&] { lm::merge(lm::cuda::par, ha.data(), ha.data() + 1000, b, b + 700, out); },
                                      {"libmerge::merge", "a_first", "host memory"});
  expect_error<std::invalid_argument>([&] { lm::merge(lm::cuda::par, a, a + 1000, hb.data(), hb.data() + 700, out); },
                                      {"b_first", "host memory"});
  expect_error<std::invalid_argument>([&] { lm::merge(lm::cuda::par, a, a + 1000, b, b + 700, hout.data()); },
                                      {"out", "host memory"});
  // std::vector iterators are host memory too.
  expect_error<std::invalid_argument>(
      [&] { lm::merge(lm::cuda::par, ha.begin(), ha.end(), db.begin(), db.end(), dout.begin()); }, {"a_first"});
  expect_error<std::invalid_argument>(
      [&] { lm::merge_by_key(lm::cuda::par, a, a + 1000, b, b + 700, ha.data(), b, out, vals); },
      {"libmerge::merge_by_key", "a_vals_first", "host memory"});
  expect_error<std::invalid_argument>(
      [&] { lm::merge_by_key(lm::cuda::par, a, a + 1000, b, b + 700, a, b, out, hout.data()); },
      {"vals_out", "host memory"});
  expect_error<std::invalid_argument>(
      [&] { lm::merge_by_key(lm::cuda::par, a, a + 1000, b, b + 700, a, b, static_cast<int*>(nullptr), vals); },
      {"keys_out", "null pointer"});

  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(dout), std::vector<int>(1700, -1), "output untouched after the errors");
  check_same(to_host(dvals), std::vector<int>(1700, -1), "values untouched after the errors");
  check_same(hout, std::vector<int>(1700, -1), "host output untouched");
}

// Memory the GPU can reach is accepted: managed memory and mapped pinned host memory.
BOOST_AUTO_TEST_CASE(managed_and_mapped_memory_are_accepted) {
  const int na = 5000, nb = 3000;
  std::vector<int> ha = iota_vector(na, 2), hb = iota_vector(nb, 3), expected(na + nb);
  lm::merge(lm::serial, ha.begin(), ha.end(), hb.begin(), hb.end(), expected.begin());

  int *ma = nullptr, *pinned_b = nullptr, *mout = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMallocManaged(&ma, na * sizeof(int)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaHostAlloc(&pinned_b, nb * sizeof(int), cudaHostAllocMapped), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMallocManaged(&mout, (na + nb) * sizeof(int)), cudaSuccess);
  std::copy(ha.begin(), ha.end(), ma);
  std::copy(hb.begin(), hb.end(), pinned_b);
  lm::merge(lm::cuda::par, ma, ma + na, pinned_b, pinned_b + nb, mout);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(std::vector<int>(mout, mout + na + nb), expected, "managed + mapped pinned");
  cudaFree(ma);
  cudaFreeHost(pinned_b);
  cudaFree(mout);
}

// Reversed ranges are caught by the front-end for the CUDA policy too.
BOOST_AUTO_TEST_CASE(reversed_ranges) {
  thrust::device_vector<int> a(10), b(10), out(20, -1);
  expect_error<std::invalid_argument>(
      [&] { lm::merge(lm::cuda::par, a.end(), a.begin(), b.begin(), b.end(), out.begin()); }, {"a_first", "a_last"});
  expect_error<std::invalid_argument>(
      [&] { lm::merge_by_key(lm::cuda::par, a.begin(), a.end(), b.end(), b.begin(), a.begin(), b.begin(), out.begin(), out.begin()); },
      {"b_keys_first", "b_keys_last"});
  check_same(to_host(out), std::vector<int>(20, -1), "output untouched");
}

// A launch box whose tile cannot fit in shared memory is refused with the numbers.
BOOST_AUTO_TEST_CASE(launch_box_too_large) {
  thrust::device_vector<double> a(100000, 1.0), b(100000, 2.0), out(200000);
  thrust::device_vector<double> av(100000), bv(100000), vout(200000);
  expect_error<std::invalid_argument>(
      [&] {
        lm::merge_by_key(lm::cuda::par.with(lm::launch_box<1024, 63>{}), a.begin(), a.end(), b.begin(), b.end(),
                         av.begin(), bv.begin(), out.begin(), vout.begin());
      },
      {"libmerge::merge_by_key", "nt=1024 vt=63", "shared memory"});
}

// CUDA failures surface as lm::cuda_error with the code, its name and the
// algorithm: here the allocator cannot get its memory.
struct failing_allocator {
  void* allocate(std::size_t, cudaStream_t stream) {
    void* p = nullptr;
    const cudaError_t e = cudaMallocAsync(&p, std::size_t(1) << 60, stream);  // an exabyte: fails
    libmerge::detail::check_cuda(e, "allocator", "cudaMallocAsync");
    return p;
  }
  void deallocate(void* p, std::size_t, cudaStream_t stream) noexcept { cudaFreeAsync(p, stream); }
};

BOOST_AUTO_TEST_CASE(cuda_errors_carry_code_and_algorithm) {
  thrust::device_vector<int> a(1000, 1), b(1000, 2), out(2000, -1);
  bool thrown = false;
  try {
    lm::merge(lm::cuda::par.with_allocator(failing_allocator{}), a.begin(), a.end(), b.begin(), b.end(), out.begin());
  } catch (const lm::cuda_error& e) {
    thrown = true;
    BOOST_CHECK_EQUAL(e.code(), cudaErrorMemoryAllocation);
    BOOST_CHECK_EQUAL(e.algorithm(), "merge");
    const std::string msg = e.what();
    BOOST_CHECK_MESSAGE(msg.find("libmerge::merge") != std::string::npos, msg);
    BOOST_CHECK_MESSAGE(msg.find("cudaErrorMemoryAllocation") != std::string::npos, msg);
    BOOST_CHECK_MESSAGE(msg.find("temporary storage") != std::string::npos, msg);
    const std::runtime_error& base = e;  // lm::cuda_error is a std::runtime_error
    (void)base;
  }
  BOOST_CHECK(thrown);
  // The failure is not left behind for the next CUDA call: a retry works.
  BOOST_CHECK_EQUAL(cudaGetLastError(), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(out), std::vector<int>(2000, -1), "output untouched");
  lm::merge(lm::cuda::par, a.begin(), a.end(), b.begin(), b.end(), out.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<int> expected(1000, 1);
  expected.resize(2000, 2);
  check_same(to_host(out), expected, "retry after the failed allocation");
}

// Host memory registered with cudaHostRegister is reachable: the kernel gets
// its device alias.
BOOST_AUTO_TEST_CASE(registered_host_memory_is_accepted) {
  std::vector<int> ha = iota_vector(4000, 2), hb = iota_vector(3000, 3), hout(7000, -1), expected(7000);
  std::merge(ha.begin(), ha.end(), hb.begin(), hb.end(), expected.begin());
  for (auto* v : {&ha, &hb, &hout}) {
    BOOST_REQUIRE_EQUAL(cudaHostRegister(v->data(), v->size() * sizeof(int), cudaHostRegisterMapped), cudaSuccess);
  }
  lm::merge(lm::cuda::par, ha.data(), ha.data() + ha.size(), hb.data(), hb.data() + hb.size(), hout.data());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  for (auto* v : {&ha, &hb, &hout}) cudaHostUnregister(v->data());
  check_same(hout, expected, "registered host memory");
}

// merge_sort: host pointers are rejected by name, a failed allocation is an
// lm::cuda_error, and in both cases the caller's keys and values are as they
// were (nothing runs before the temporary storage is in hand).
BOOST_AUTO_TEST_CASE(merge_sort_errors_leave_the_data_intact) {
  std::vector<int> hk = iota_vector(50000, -7), hv = iota_vector(50000, 1);
  auto dk = to_device(hk), dv = to_device(hv);
  int* k = thrust::raw_pointer_cast(dk.data());
  int* v = thrust::raw_pointer_cast(dv.data());
  expect_error<std::invalid_argument>([&] { lm::merge_sort(lm::cuda::par, hk.data(), hk.data() + hk.size()); },
                                      {"libmerge::merge_sort", "first", "host memory"});
  expect_error<std::invalid_argument>([&] { lm::merge_sort_by_key(lm::cuda::par, k, k + hk.size(), hv.data()); },
                                      {"libmerge::merge_sort_by_key", "values_first", "host memory"});
  std::vector<long long> hidx(hk.size(), -1);
  expect_error<std::invalid_argument>(
      [&] { lm::merge_sort_indices(lm::cuda::par, k, k + hk.size(), hidx.data()); },
      {"libmerge::merge_sort_indices", "indices_first", "host memory"});
  expect_error<lm::cuda_error>(
      [&] { lm::merge_sort_by_key(lm::cuda::par.with_allocator(failing_allocator{}), k, k + hk.size(), v); },
      {"libmerge::merge_sort_by_key", "cudaErrorMemoryAllocation", "temporary storage"});
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(dk), hk, "keys untouched");
  check_same(to_host(dv), hv, "values untouched");
}

// Elements above the CUDA backend's 1 KB limit are refused up front with the
// numbers, the caller's data untouched; everything up to 1 KB works (the
// element-size ladder: test_cuda_element_sizes).
template <int Bytes>
struct blob {
  int key;
  unsigned char rest[Bytes - 4];
};
struct blob_less {
  template <int B>
  __host__ __device__ bool operator()(const blob<B>& x, const blob<B>& y) const {
    return x.key < y.key;
  }
};

// Raw device memory, not device_vector: Thrust's own kernels for 8 KB
// elements would take minutes to compile.
template <int Bytes>
void check_refused() {
  using T = blob<Bytes>;
  T* a = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMalloc(&a, 256 * sizeof(T)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMemset(a, 0x11, 256 * sizeof(T)), cudaSuccess);
  T* b = a + 64;
  T* out = a + 128;
  const std::string size = std::to_string(Bytes) + " bytes";
  expect_error<std::invalid_argument>([&] { lm::merge(lm::cuda::par, a, a + 64, b, b + 64, out, blob_less()); },
                                      {"libmerge::merge", size, "1024"});
  expect_error<std::invalid_argument>([&] { lm::merge_sort(lm::cuda::par, a, a + 64, blob_less()); },
                                      {"libmerge::merge_sort", size, "1024"});
  thrust::device_vector<int> k(64, 1);
  expect_error<std::invalid_argument>([&] { lm::merge_sort_by_key(lm::cuda::par, k.begin(), k.end(), a); },
                                      {"libmerge::merge_sort_by_key", std::to_string(Bytes + 4) + " bytes"});
  std::vector<unsigned char> host(256 * sizeof(T));
  BOOST_REQUIRE_EQUAL(cudaMemcpy(host.data(), a, host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  BOOST_CHECK(std::all_of(host.begin(), host.end(), [](unsigned char c) { return c == 0x11; }));
  cudaFree(a);
}

BOOST_AUTO_TEST_CASE(elements_above_the_limit_are_refused) {
  check_refused<4096>();
  check_refused<8192>();
}
