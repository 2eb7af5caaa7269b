// Bad input to the CUDA backend: clear exceptions naming the problem, never a
// crash, and the caller's outputs untouched.
#define BOOST_TEST_MODULE cuda_errors
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <thrust/copy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/reverse_iterator.h>
#include <thrust/iterator/transform_iterator.h>

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

namespace {
struct twice {
  LIBMERGE_HOST_DEVICE int operator()(int x) const { return 2 * x; }
};
}  // namespace

// Fancy iterators over host memory: the memory under the adaptor is checked
// like a pointer (it would fault inside the kernel), while adaptors over
// device memory or over no memory at all (counting_iterator) still work.
BOOST_AUTO_TEST_CASE(fancy_iterators_over_host_memory_are_rejected) {
  std::vector<int> ha = iota_vector(1000, 2), hb = iota_vector(700, 3);
  auto da = to_device(ha), db = to_device(hb);
  thrust::device_vector<int> dout(1700, -1);
  thrust::device_vector<long long> idx(1000, -1);
  const auto host_twice = thrust::make_transform_iterator(ha.data(), twice());
  expect_error<std::invalid_argument>(
      [&] { lm::merge(lm::cuda::par, host_twice, host_twice + 1000, db.begin(), db.end(), dout.begin()); },
      {"libmerge::merge", "a_first", "iterator", "host memory"});
  const auto host_vector_twice = thrust::make_transform_iterator(hb.begin(), twice());
  expect_error<std::invalid_argument>(
      [&] {
        lm::merge(lm::cuda::par, da.begin(), da.end(), host_vector_twice, host_vector_twice + 700, dout.begin());
      },
      {"b_first", "host memory"});
  const auto host_reversed = thrust::make_reverse_iterator(thrust::make_transform_iterator(hb.data() + 700, twice()));
  expect_error<std::invalid_argument>(
      [&] {
        lm::sorted_search<lm::bounds::lower>(lm::cuda::par, da.begin(), da.end(), host_reversed, host_reversed + 700,
                                             idx.begin(), lm::greater<>());
      },
      {"libmerge::sorted_search", "b_first", "host memory"});
  expect_error<std::invalid_argument>(
      [&] {
        lm::sorted_equality_count(lm::cuda::par, host_twice, host_twice + 1000, db.begin(), db.end(), idx.begin());
      },
      {"libmerge::sorted_equality_count", "a_first", "host memory"});
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(dout), std::vector<int>(1700, -1), "output untouched after the errors");

  // Over device memory and over numbers: accepted, and right.
  const auto dev_twice = thrust::make_transform_iterator(da.begin(), twice());
  const auto numbers = thrust::make_counting_iterator(0);
  lm::merge(lm::cuda::par, dev_twice, dev_twice + 1000, numbers, numbers + 700, dout.begin());
  std::vector<int> a2(1000), n700(700), want(1700);
  for (int i = 0; i < 1000; ++i) a2[static_cast<std::size_t>(i)] = 2 * ha[static_cast<std::size_t>(i)];
  for (int i = 0; i < 700; ++i) n700[static_cast<std::size_t>(i)] = i;
  std::merge(a2.begin(), a2.end(), n700.begin(), n700.end(), want.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(dout), want, "transform over device memory merged with a counting_iterator");
}

// An output that shares memory with an input (or another output) is
// rejected by name before anything runs; the data stays as it was.
BOOST_AUTO_TEST_CASE(outputs_overlapping_inputs_are_rejected) {
  std::vector<int> ha = iota_vector(1000, 2), hb = iota_vector(700, 3);
  thrust::device_vector<int> both(3400, -1);
  thrust::copy(ha.begin(), ha.end(), both.begin());
  thrust::copy(hb.begin(), hb.end(), both.begin() + 1000);
  int* a = thrust::raw_pointer_cast(both.data());
  int* b = a + 1000;
  int* free_space = a + 1700;  // 1700 ints nobody reads
  const auto before = to_host(both);
  expect_error<std::invalid_argument>([&] { lm::merge(lm::cuda::par, a, a + 1000, b, b + 700, a); },
                                      {"libmerge::merge", "out overlaps a_first"});
  expect_error<std::invalid_argument>([&] { lm::merge(lm::cuda::par, a, a + 1000, b, b + 700, b - 5); },
                                      {"out overlaps"});
  expect_error<std::invalid_argument>(
      [&] { lm::merge_by_key(lm::cuda::par, a, a + 10, b, b + 10, a, b, free_space, free_space + 19); },
      {"libmerge::merge_by_key", "keys_out overlaps vals_out"});
  expect_error<std::invalid_argument>(
      [&] { lm::merge_sort_by_key(lm::cuda::par, a, a + 1000, a + 999); },
      {"libmerge::merge_sort_by_key", "keys_first overlaps values_first"});
  thrust::device_vector<long long> idx(1000);
  long long* as_long = reinterpret_cast<long long*>(a);
  expect_error<std::invalid_argument>(
      [&] { lm::sorted_search<lm::bounds::lower>(lm::cuda::par, a, a + 1000, b, b + 700, as_long + 100); },
      {"libmerge::sorted_search", "a_out overlaps"});
  expect_error<std::invalid_argument>(
      [&] { lm::sorted_equality_count(lm::cuda::par, a, a + 1000, b, b + 700, a); },
      {"libmerge::sorted_equality_count", "counts_out overlaps a_first"});
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(both), before, "data untouched after the errors");
  // Adjacent, not overlapping: fine.
  lm::merge(lm::cuda::par, a, a + 1000, b, b + 700, free_space);
  std::vector<int> want(1700);
  std::merge(ha.begin(), ha.end(), hb.begin(), hb.end(), want.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto after = to_host(both);
  check_same(std::vector<int>(after.begin() + 1700, after.end()), want, "merge into the memory after the inputs");
}

namespace {

// Two GPUs or more: a precondition of Boost.Test, which skips the case where
// it fails and counts it "skipped" (--report_level=short); the log says why
// at --log_level=test_suite, and the line printed here says it at any level.
boost::test_tools::assertion_result two_gpus(boost::unit_test::test_unit_id) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) cudaGetLastError();  // no stale error for the next case
  boost::test_tools::assertion_result enough(devices >= 2);
  enough.message() << devices << " GPU(s) visible, 2 needed";
  if (!enough) std::printf("SKIPPED a_stream_of_another_device_is_rejected: %d GPU(s) visible, 2 needed\n", devices);
  return enough;
}

}  // namespace

// A stream of another device: a clear error before anything runs (the call's
// pointer checks and launches use the current device). Needs two GPUs.
BOOST_AUTO_TEST_CASE(a_stream_of_another_device_is_rejected, *boost::unit_test::precondition(two_gpus)) {
  BOOST_REQUIRE_EQUAL(cudaSetDevice(1), cudaSuccess);
  cudaStream_t other = nullptr;
  BOOST_REQUIRE_EQUAL(cudaStreamCreate(&other), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaSetDevice(0), cudaSuccess);
  std::vector<int> ha = iota_vector(1000, 2), hb = iota_vector(700, 3);
  auto da = to_device(ha), db = to_device(hb);
  thrust::device_vector<int> dout(1700, -1);
  thrust::device_vector<long long> idx(1000, -1);
  expect_error<std::invalid_argument>(
      [&] { lm::merge(lm::cuda::par.on(other), da.begin(), da.end(), db.begin(), db.end(), dout.begin()); },
      {"libmerge::merge", "stream belongs to device 1", "current device 0"});
  expect_error<std::invalid_argument>(
      [&] { lm::merge_sort(lm::cuda::par.on(other), da.begin(), da.end()); }, {"libmerge::merge_sort", "device 1"});
  expect_error<std::invalid_argument>(
      [&] {
        lm::sorted_search<lm::bounds::lower>(lm::cuda::par.on(other), da.begin(), da.end(), db.begin(), db.end(),
                                             idx.begin());
      },
      {"libmerge::sorted_search", "device 1"});
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(da), ha, "keys untouched");
  check_same(to_host(dout), std::vector<int>(1700, -1), "output untouched");
  BOOST_REQUIRE_EQUAL(cudaSetDevice(1), cudaSuccess);
  cudaStreamDestroy(other);
  BOOST_REQUIRE_EQUAL(cudaSetDevice(0), cudaSuccess);
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

namespace {

// A kernel with `static_bytes` of static shared memory and `dynamic` bytes
// of dynamic: the threads fill both (values the compiler cannot fold), and
// thread 0 stores the sum of their last words in *out (expected_sum). Tag:
// one kernel a case, so that the limit one case raised is not another's.
constexpr int static_bytes = 8192;
template <int Tag>
__global__ void static_and_dynamic_shared(int* out, int dynamic) {
  __shared__ int fixed[static_bytes / sizeof(int)];
  extern __shared__ int extra[];
  constexpr int m = static_bytes / static_cast<int>(sizeof(int));
  const int n = dynamic / static_cast<int>(sizeof(int));
  for (int i = static_cast<int>(threadIdx.x); i < m; i += static_cast<int>(blockDim.x)) fixed[i] = i + dynamic;
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) extra[i] = i;
  __syncthreads();
  if (threadIdx.x == 0) *out = fixed[m - 1] + extra[n - 1];
}
int expected_sum(int dynamic) {
  return static_bytes / static_cast<int>(sizeof(int)) - 1 + dynamic + dynamic / static_cast<int>(sizeof(int)) - 1;
}

// prepare_shared_memory, then a launch of `kernel` with `dynamic` bytes:
// the launch's error, or cudaSuccess once the kernel has run.
template <class Kernel>
cudaError_t prepare_and_launch(Kernel kernel, int dynamic, int* out) {
  const auto& dev = internals::cuda::current_device("test");
  internals::cuda::prepare_shared_memory(kernel, static_cast<std::size_t>(dynamic), dev, 32, 1, "test");
  kernel<<<1, 32, static_cast<std::size_t>(dynamic)>>>(out, dynamic);
  const cudaError_t e = cudaGetLastError();
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

}  // namespace

// The launch counts a kernel's static shared memory with the tile's (commit
// 70bd903; backends/cuda/runtime.cuh, prepare_shared_memory). Dynamic bytes
// under 48 KB whose sum with the static bytes is over it get the limit
// raised: counting the dynamic bytes alone, the launch fails with
// cudaErrorInvalidValue (issue 24's 16-bit searches). A sum over what the
// device allows at all is refused with both numbers, where the dynamic
// bytes alone would pass the check and fail at the launch.
BOOST_AUTO_TEST_CASE(static_shared_memory_counts_against_the_limit) {
  thrust::device_vector<int> out(1, 0);
  int* const o = thrust::raw_pointer_cast(out.data());
  const int over_48k = static_cast<int>(lm::tuning::smem_without_opt_in) - static_bytes + 16;
  cudaFuncAttributes a{};
  BOOST_REQUIRE_EQUAL(cudaFuncGetAttributes(&a, static_and_dynamic_shared<0>), cudaSuccess);
  BOOST_REQUIRE_EQUAL(a.sharedSizeBytes, std::size_t(static_bytes));  // the sum crosses 48 KB by 16 bytes
  BOOST_CHECK_EQUAL(prepare_and_launch(static_and_dynamic_shared<0>, over_48k, o), cudaSuccess);
  BOOST_CHECK_EQUAL(out[0], expected_sum(over_48k));

  const int optin = internals::cuda::current_device("test").smem_optin;
  const int over_optin = optin - static_bytes + 16;
  expect_error<std::invalid_argument>(
      [&] { prepare_and_launch(static_and_dynamic_shared<1>, over_optin, o); },
      {"libmerge::test", "needs " + std::to_string(over_optin) + " bytes", std::to_string(static_bytes) + " more",
       "allows " + std::to_string(optin)});
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

// (In a caller's launch box: a merge in the tuned small tiles finds its
// tiles' ends without temporary storage, and allocates nothing.)
BOOST_AUTO_TEST_CASE(cuda_errors_carry_code_and_algorithm) {
  thrust::device_vector<int> a(1000, 1), b(1000, 2), out(2000, -1);
  bool thrown = false;
  try {
    lm::merge(lm::cuda::par.with_allocator(failing_allocator{}).with(lm::launch_box<128, 5>{}), a.begin(), a.end(),
              b.begin(), b.end(), out.begin());
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

// sorted_search and sorted_equality_count: a host pointer is rejected by name
// for every argument (needles, haystack, both outputs, counts_out; std::vector
// iterators too), a null counts_out is rejected, and nothing the caller owns
// is touched.
BOOST_AUTO_TEST_CASE(sorted_search_host_pointers_are_rejected) {
  using lm::bounds;
  using lm::search_type;
  std::vector<int> ha = iota_vector(1000, 2), hb = iota_vector(700, 3);
  std::vector<std::uint32_t> hout(1000, 7u);
  std::vector<long long> hcounts(1000, -1);
  auto da = to_device(ha), db = to_device(hb);
  thrust::device_vector<std::uint32_t> doa(1000, 7u), dob(700, 7u);
  thrust::device_vector<long long> dcounts(1000, -1);
  int* a = thrust::raw_pointer_cast(da.data());
  int* b = thrust::raw_pointer_cast(db.data());
  std::uint32_t* oa = thrust::raw_pointer_cast(doa.data());
  std::uint32_t* ob = thrust::raw_pointer_cast(dob.data());
  long long* oc = thrust::raw_pointer_cast(dcounts.data());
  lm::match_counts* mc = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMalloc(&mc, sizeof(lm::match_counts)), cudaSuccess);
  BOOST_REQUIRE_EQUAL(cudaMemset(mc, 0xff, sizeof(lm::match_counts)), cudaSuccess);
  lm::match_counts host_counts{-1, -1};

  auto search = [&](const int* a_first, const int* b_first, std::uint32_t* a_out, std::uint32_t* b_out) {
    return lm::sorted_search<bounds::lower, search_type::index_match, search_type::index_match>(
        lm::cuda::par, a_first, a_first + 1000, b_first, b_first + 700, a_out, b_out);
  };
  expect_error<std::invalid_argument>([&] { search(ha.data(), b, oa, ob); },
                                      {"libmerge::sorted_search", "a_first", "host memory"});
  expect_error<std::invalid_argument>([&] { search(a, hb.data(), oa, ob); }, {"libmerge::sorted_search", "b_first", "host memory"});
  expect_error<std::invalid_argument>([&] { search(a, b, hout.data(), ob); }, {"libmerge::sorted_search", "a_out", "host memory"});
  expect_error<std::invalid_argument>([&] { search(a, b, oa, hout.data()); }, {"libmerge::sorted_search", "b_out", "host memory"});
  // The counts form: the same checks, and counts_out itself.
  auto search_to = [&](const int* a_first, const int* b_first, std::uint32_t* a_out, std::uint32_t* b_out,
                       lm::match_counts* counts) {
    lm::sorted_search<bounds::upper, search_type::match, search_type::index>(
        lm::cuda::par, a_first, a_first + 1000, b_first, b_first + 700, a_out, b_out, counts);
  };
  expect_error<std::invalid_argument>([&] { search_to(ha.data(), b, oa, ob, mc); }, {"libmerge::sorted_search", "a_first", "host memory"});
  expect_error<std::invalid_argument>([&] { search_to(a, b, oa, hout.data(), mc); }, {"libmerge::sorted_search", "b_out", "host memory"});
  expect_error<std::invalid_argument>([&] { search_to(a, b, oa, ob, &host_counts); },
                                      {"libmerge::sorted_search", "counts_out", "host memory"});
  expect_error<std::invalid_argument>([&] { search_to(a, b, oa, ob, nullptr); },
                                      {"libmerge::sorted_search", "counts_out", "null pointer"});
  // A one-sided search (the per-needle path: 10 needles in 700) and the common form.
  expect_error<std::invalid_argument>(
      [&] {
        lm::sorted_search<bounds::lower, search_type::index, search_type::none>(lm::cuda::par, a, a + 10, hb.data(),
                                                                                hb.data() + 700, oa, nullptr);
      },
      {"libmerge::sorted_search", "b_first", "host memory"});
  expect_error<std::invalid_argument>(
      [&] { lm::sorted_search<bounds::upper>(lm::cuda::par, ha.begin(), ha.end(), db.begin(), db.end(), doa.begin()); },
      {"libmerge::sorted_search", "a_first", "host memory"});
  expect_error<std::invalid_argument>(
      [&] { lm::sorted_search<bounds::lower>(lm::cuda::par, da.begin(), da.end(), db.begin(), db.end(), hout.begin()); },
      {"libmerge::sorted_search", "a_out", "host memory"});
  // sorted_equality_count.
  expect_error<std::invalid_argument>(
      [&] { lm::sorted_equality_count(lm::cuda::par, ha.data(), ha.data() + 1000, b, b + 700, oc); },
      {"libmerge::sorted_equality_count", "a_first", "host memory"});
  expect_error<std::invalid_argument>(
      [&] { lm::sorted_equality_count(lm::cuda::par, a, a + 1000, hb.begin(), hb.end(), oc); },
      {"libmerge::sorted_equality_count", "b_first", "host memory"});
  expect_error<std::invalid_argument>(
      [&] { lm::sorted_equality_count(lm::cuda::par, a, a + 1000, b, b + 700, hcounts.data()); },
      {"libmerge::sorted_equality_count", "counts_out", "host memory"});

  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(doa), std::vector<std::uint32_t>(1000, 7u), "a_out untouched after the errors");
  check_same(to_host(dob), std::vector<std::uint32_t>(700, 7u), "b_out untouched after the errors");
  check_same(to_host(dcounts), std::vector<long long>(1000, -1), "counts untouched after the errors");
  check_same(hout, std::vector<std::uint32_t>(1000, 7u), "host output untouched");
  check_same(hcounts, std::vector<long long>(1000, -1), "host counts untouched");
  lm::match_counts m{};
  BOOST_REQUIRE_EQUAL(cudaMemcpy(&m, mc, sizeof m, cudaMemcpyDeviceToHost), cudaSuccess);
  BOOST_CHECK_MESSAGE(m.a == -1 && m.b == -1, "device counts_out untouched after the errors");
  BOOST_CHECK(host_counts.a == -1 && host_counts.b == -1);
  cudaFree(mc);
}

// An output type too narrow for the largest value it could receive is
// refused by the front-end, as on the CPU, before any work: even before the
// backend looks at its pointers (host memory here), and the caller's
// outputs are untouched.
BOOST_AUTO_TEST_CASE(sorted_search_outputs_too_narrow_are_rejected_before_any_work) {
  using lm::bounds;
  using lm::search_type;
  auto da = to_device(iota_vector(40000, 1)), db = to_device(iota_vector(300, 5));
  const int* a = thrust::raw_pointer_cast(da.data());
  const int* b = thrust::raw_pointer_cast(db.data());
  std::vector<int> host_a = iota_vector(40000, 1);
  thrust::device_vector<std::int8_t> o8(40000, std::int8_t{-3});
  thrust::device_vector<std::uint16_t> o16(40000, std::uint16_t{9});
  std::int8_t* p8 = thrust::raw_pointer_cast(o8.data());
  std::uint16_t* p16 = thrust::raw_pointer_cast(o16.data());
  lm::match_counts* mc = nullptr;
  BOOST_REQUIRE_EQUAL(cudaMalloc(&mc, sizeof(lm::match_counts)), cudaSuccess);

  // A's bounds reach |B| = 300: int8 holds 127.
  expect_error<std::invalid_argument>(
      [&] {
        lm::sorted_search<bounds::lower, search_type::index, search_type::none>(lm::cuda::par, a, a + 1000, b,
                                                                                b + 300, p8, nullptr);
      },
      {"libmerge::sorted_search", "a_out", "cannot hold 300"});
  // B's bounds reach |A| = 40000 with the match bit: uint16 holds 32767 then
  // (index alone fits: checked below).
  expect_error<std::invalid_argument>(
      [&] {
        lm::sorted_search<bounds::upper, search_type::none, search_type::index_match>(lm::cuda::par, a, a + 40000,
                                                                                      b, b + 300, nullptr, p16);
      },
      {"libmerge::sorted_search", "b_out", "cannot hold 40000", "match bit"});
  // Before any work: with host needles, the narrow output is what is reported;
  // with a null counts_out too.
  expect_error<std::invalid_argument>(
      [&] {
        lm::sorted_search<bounds::lower, search_type::index_match, search_type::index>(
            lm::cuda::par, host_a.data(), host_a.data() + 1000, b, b + 300, p8, p16);
      },
      {"libmerge::sorted_search", "a_out", "cannot hold 300"});
  expect_error<std::invalid_argument>(
      [&] {
        lm::sorted_search<bounds::lower, search_type::index, search_type::index>(
            lm::cuda::par, a, a + 1000, b, b + 300, p8, p16, static_cast<lm::match_counts*>(nullptr));
      },
      {"libmerge::sorted_search", "a_out", "cannot hold 300"});
  expect_error<std::invalid_argument>(
      [&] {
        lm::sorted_search<bounds::upper, search_type::index, search_type::index_match>(
            lm::cuda::par, host_a.data(), host_a.data() + 40000, b, b + 300, p16, p16, mc);
      },
      {"libmerge::sorted_search", "b_out", "cannot hold 40000"});
  // sorted_equality_count: a count reaches |B|.
  expect_error<std::invalid_argument>(
      [&] { lm::sorted_equality_count(lm::cuda::par, host_a.data(), host_a.data() + 1000, b, b + 300, p8); },
      {"libmerge::sorted_equality_count", "counts_out", "cannot hold 300"});

  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(o8), std::vector<std::int8_t>(40000, std::int8_t{-3}), "int8 output untouched");
  check_same(to_host(o16), std::vector<std::uint16_t>(40000, std::uint16_t{9}), "uint16 output untouched");

  // The same types where the values fit are accepted: uint16 holds B's index
  // bounds into 40000 elements, int8 match flags, int8 counts of at most 100.
  lm::sorted_search<bounds::upper, search_type::match, search_type::index>(lm::cuda::par, a, a + 40000, b, b + 300,
                                                                          p8, p16);
  lm::sorted_equality_count(lm::cuda::par, b, b + 300, a, a + 100, p8 + 1000);
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto h16 = to_host(o16);
  const auto h8 = to_host(o8);
  // B (0, 5, 10, ...) gets its lower bound into A (0, 1, ..., 39999): 5j.
  bool ok = true;
  for (int j = 0; j < 300; ++j) ok &= h16[static_cast<std::size_t>(j)] == static_cast<std::uint16_t>(5 * j);
  BOOST_CHECK_MESSAGE(ok, "uint16 bounds");
  // Each 5i occurs once in A's first 100 elements (0 .. 99) when 5i < 100.
  bool ok8 = true;
  for (int i = 0; i < 300; ++i) ok8 &= h8[static_cast<std::size_t>(1000 + i)] == (5 * i < 100 ? 1 : 0);
  BOOST_CHECK_MESSAGE(ok8, "int8 counts");
  cudaFree(mc);
}

// A failed allocation of temporary storage is an lm::cuda_error naming the
// algorithm, with the caller's outputs untouched. (The merge path takes
// temporary storage for its partitions; a tuned equality count of these
// sizes goes per needle, which takes none: it runs under the failing
// allocator, and the tuned tile as the call's box sends it down the merge
// path.)
BOOST_AUTO_TEST_CASE(sorted_search_allocation_failure_leaves_outputs_intact) {
  using lm::bounds;
  using lm::search_type;
  const std::vector<int> ha = iota_vector(5000, 2), hb = iota_vector(4000, 3);
  auto da = to_device(ha), db = to_device(hb);
  thrust::device_vector<std::uint32_t> oa(5000, 7u), ob(4000, 7u);
  thrust::device_vector<long long> counts(5000, -1);
  const auto policy = lm::cuda::par.with_allocator(failing_allocator{});
  expect_error<lm::cuda_error>(
      [&] {
        lm::sorted_search<bounds::lower, search_type::index_match, search_type::index_match>(
            policy, da.begin(), da.end(), db.begin(), db.end(), oa.begin(), ob.begin());
      },
      {"libmerge::sorted_search", "cudaErrorMemoryAllocation", "temporary storage"});
  expect_error<lm::cuda_error>(
      [&] {
        lm::sorted_equality_count(policy.with(cuda_test::sm90_search_tile<int>{}), da.begin(), da.end(), db.begin(),
                                  db.end(), counts.begin());
      },
      {"libmerge::sorted_equality_count", "cudaErrorMemoryAllocation", "temporary storage"});
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(oa), std::vector<std::uint32_t>(5000, 7u), "a_out untouched");
  check_same(to_host(ob), std::vector<std::uint32_t>(4000, 7u), "b_out untouched");
  check_same(to_host(counts), std::vector<long long>(5000, -1), "counts untouched");
  // Per needle: no temporary storage, the counts of the serial backend.
  lm::sorted_equality_count(policy, da.begin(), da.end(), db.begin(), db.end(), counts.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<long long> want(ha.size());
  lm::sorted_equality_count(lm::serial, ha.begin(), ha.end(), hb.begin(), hb.end(), want.begin());
  check_same(to_host(counts), want, "counts of the per-needle search under a failing allocator");
}

namespace {
struct coin_comparator {
  LIBMERGE_HOST_DEVICE bool operator()(int a, int b) const {
    return ((static_cast<unsigned>(a) * 2654435761u ^ static_cast<unsigned>(b) * 40503u) >> 7) & 1u;
  }
};
}  // namespace

// lm::cuda::par.checked(): unsorted inputs and comparators that are no
// ordering are rejected before anything runs, naming the input and the first
// bad position (the scans on the GPU, on the call's stream); sorted inputs
// and good comparators give the unchecked results.
BOOST_AUTO_TEST_CASE(checked_calls_on_the_gpu) {
  const auto checked = lm::cuda::par.checked();
  std::vector<int> ha = iota_vector(300000, 2), hb = iota_vector(70001, 3);
  ha[123456] = -5;  // the first descent of A: element 123456
  auto da = to_device(ha), db = to_device(hb);
  thrust::device_vector<int> out(ha.size() + hb.size(), -1);
  thrust::device_vector<long long> lower(ha.size(), -1);
  expect_error<std::invalid_argument>(
      [&] { lm::merge(checked, da.begin(), da.end(), db.begin(), db.end(), out.begin()); },
      {"libmerge::merge (checked)", "[a_first, a_last) is not sorted", "element 123456 comes before element 123455"});
  expect_error<std::invalid_argument>(
      [&] { lm::sorted_search<lm::bounds::lower>(checked, db.begin(), db.end(), da.begin(), da.end(), lower.begin()); },
      {"libmerge::sorted_search (checked)", "[b_first, b_last)", "element 123456"});
  auto keys = to_device(ha);
  expect_error<std::invalid_argument>(
      [&] { lm::merge_sort(checked, keys.begin(), keys.end(), coin_comparator()); },
      {"libmerge::merge_sort (checked)", "not a strict weak ordering", "positions"});
  expect_error<std::invalid_argument>(
      [&] { lm::merge(checked, ha.data(), ha.data() + 10, db.begin(), db.end(), out.begin()); },
      {"a_first", "host memory"});
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(keys), ha, "keys untouched by a rejected sort");
  check_same(to_host(out), std::vector<int>(ha.size() + hb.size(), -1), "output untouched");

  ha[123456] = 2 * 123456;  // sorted again
  da = to_device(ha);
  lm::merge(checked, da.begin(), da.end(), db.begin(), db.end(), out.begin());
  std::vector<int> want(ha.size() + hb.size());
  std::merge(ha.begin(), ha.end(), hb.begin(), hb.end(), want.begin());
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  check_same(to_host(out), want, "checked merge of sorted inputs");
  std::vector<float> f(100000);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = i % 5 == 0 ? std::nanf("") : static_cast<float>((i * 7919) % 1000);
  auto df = to_device(f);
  lm::merge_sort(lm::cuda::par.checked(), df.begin(), df.end());  // lm::less orders NaN: accepted
  BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
  const auto sorted = to_host(df);
  BOOST_CHECK(std::isnan(sorted.back()) && !std::isnan(sorted.front()));
  BOOST_CHECK(std::is_sorted(sorted.begin(), sorted.begin() + 80000));
}

// The checked call's sortedness scan reports the first descent wherever it
// lies: each element type's scan tile (256 threads x 8 int32, 4 int64 or 2
// 16-byte elements a thread, thread t holding elements t, t + 256, ...), its
// edges, the last element, and inputs long enough that the grid strides
// (past 8 CTAs an SM), each with a second descent after it that the scan
// may meet first.
template <class T, class Make>
void check_first_descents(Make make, const char* type) {
  const auto checked = lm::cuda::par.checked();
  std::mt19937_64 g(77);
  for (long long n : {2LL, 3000LL, 5000017LL}) {
    std::vector<long long> at = {1, 2, 255, 256, 257, 511, 512, 1023, 1024, 1025, 2047, 2048, 2049, n - 1};
    for (int r = 0; r < 6; ++r) at.push_back(1 + static_cast<long long>(g() % static_cast<std::uint64_t>(n - 1)));
    std::vector<T> hb = {make(0)};
    auto db = to_device(hb);
    for (long long p : at) {
      if (p < 1 || p >= n) continue;
      std::vector<T> ha(static_cast<std::size_t>(n));
      for (long long i = 0; i < n; ++i) ha[static_cast<std::size_t>(i)] = make(2 * i + 2);
      ha[static_cast<std::size_t>(p)] = make(2 * p - 1);  // before element p - 1: the first descent
      const long long q = p + 1 + static_cast<long long>(g() % 5000);
      if (q + 1 < n) ha[static_cast<std::size_t>(q + 1)] = make(0);  // a later one
      auto da = to_device(ha);
      thrust::device_vector<T> out(ha.size() + 1);
      BOOST_TEST_CONTEXT(type << ", n " << n << ", descent at " << p) {
        expect_error<std::invalid_argument>(
            [&] { lm::merge(checked, da.begin(), da.end(), db.begin(), db.end(), out.begin(), lm::less<>()); },
            {"[a_first, a_last) is not sorted",
             "element " + std::to_string(p) + " comes before element " + std::to_string(p - 1)});
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_checked_scan_finds_the_first_descent_anywhere) {
  check_first_descents<int>([](long long v) { return static_cast<int>(v); }, "int32");
  check_first_descents<long long>([](long long v) { return v; }, "int64");
  check_first_descents<test_support::record>([](long long v) { return test_support::record{v, 0, 0}; }, "16-byte");
}

// The temporary-storage pool belongs to the device's context: after
// cudaDeviceReset (which destroys that context and its pools) a call gets a
// new pool instead of a dangling handle. Last in this file: the reset frees
// every allocation of the process.
BOOST_AUTO_TEST_CASE(the_memory_pool_survives_a_device_reset) {
  std::vector<int> keys = iota_vector(300000, -7);
  std::reverse(keys.begin(), keys.end());
  std::vector<int> want = keys;
  std::sort(want.begin(), want.end());
  for (int round = 0; round < 2; ++round) {
    {
      auto d = to_device(keys);
      lm::merge_sort(lm::cuda::par, d.begin(), d.end());
      BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
      check_same(to_host(d), want, round == 0 ? "before the reset" : "after the reset");
      thrust::device_vector<int> out(want.size() * 2);
      lm::merge(lm::cuda::par, d.begin(), d.end(), d.begin(), d.end(), out.begin());
      BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    }
    if (round == 0) BOOST_REQUIRE_EQUAL(cudaDeviceReset(), cudaSuccess);
  }
}

// A device that reports memory pools but where libmerge's pool cannot be
// made (cudaMemPoolCreate fails; LIBMERGE_NO_MEMORY_POOLS=create pretends
// so) falls back to cudaMalloc and cudaFree, as a device without pools does:
// the calls give the right results, with no pool behind them, where
// otherwise the pool keeps a sort's scratch (as large as its input) for the
// next call. (The pool itself is asked, not cudaMemGetInfo: that counts the
// whole device, other processes and compute-sanitizer's memory included.)
// After the device reset of the case above: each reset here gives a new
// context, whose pool is made (or refused) at its first call.
BOOST_AUTO_TEST_CASE(a_pool_that_cannot_be_made_falls_back_to_cuda_malloc) {
  namespace cb = internals::cuda;
  int device = 0;
  BOOST_REQUIRE_EQUAL(cudaGetDevice(&device), cudaSuccess);
  std::vector<int> keys(1 << 24);
  std::mt19937 gen(2611);
  for (int& k : keys) k = static_cast<int>(gen() >> 1);
  std::vector<int> want = keys;
  std::sort(want.begin(), want.end());
  const std::uint64_t scratch = keys.size() * sizeof(int);
  auto sort_and_merge = [&](const std::string& what) {
    auto d = to_device(keys);
    lm::merge_sort(lm::cuda::par, d.begin(), d.end());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    check_same(to_host(d), want, what + ": sort");
    thrust::device_vector<int> out(2 * keys.size());
    lm::merge(lm::cuda::par, d.begin(), d.end(), d.begin(), d.end(), out.begin());
    BOOST_REQUIRE_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<int> merged = to_host(out);
    for (std::size_t i = 0; i < merged.size(); i += 4099) BOOST_REQUIRE_EQUAL(merged[i], want[i / 2]);
  };
  BOOST_REQUIRE_EQUAL(setenv("LIBMERGE_NO_MEMORY_POOLS", "create", 1), 0);
  BOOST_REQUIRE_EQUAL(cudaDeviceReset(), cudaSuccess);
  BOOST_REQUIRE(cb::has_memory_pools(device));  // the device still reports pools
  sort_and_merge("pool refused");
  BOOST_CHECK(cb::memory_pool(device) == nullptr);  // the calls ran without one
  BOOST_REQUIRE_EQUAL(unsetenv("LIBMERGE_NO_MEMORY_POOLS"), 0);
  BOOST_REQUIRE_EQUAL(cudaDeviceReset(), cudaSuccess);
  sort_and_merge("with the pool");
  const cudaMemPool_t pool = cb::memory_pool(device);
  BOOST_REQUIRE(pool != nullptr);
  std::uint64_t kept = 0;
  BOOST_REQUIRE_EQUAL(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &kept), cudaSuccess);
  BOOST_TEST_MESSAGE("libmerge's pool keeps " << kept << " bytes after a 2^24-key sort");
  BOOST_CHECK_GE(kept, scratch);  // (what the fallback does not keep)
}
