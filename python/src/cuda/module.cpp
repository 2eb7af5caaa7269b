// libmerge._cuda: the CUDA backend for Python (libmerge/__init__.py checks the
// arguments, picks the dtype tag, the device and the stream, and passes each
// array's device pointer as an integer: any framework's arrays, zero-copy;
// tagged.hpp says what each call does).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "../dtypes.hpp"
#include "tagged.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using lmpy::gpu::i64;
using lmpy::gpu::stream_t;
using ptr = std::uintptr_t;

namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  const std::string message = std::string("libmerge: ") + what + ": " + cudaGetErrorName(e) + " (" +
                              cudaGetErrorString(e) + ")";
  if (e == cudaErrorMemoryAllocation) throw lmpy::gpu::out_of_memory(message);
  throw std::runtime_error(message);
}

// The arrays' device current while a call runs (the library works on the current device), then the caller's again.
class on_device {
 public:
  explicit on_device(int device) {
    check(cudaGetDevice(&before_), "cudaGetDevice");
    if (device != before_) check(cudaSetDevice(device), "cudaSetDevice");
  }
  ~on_device() { cudaSetDevice(before_); }
  on_device(const on_device&) = delete;
  on_device& operator=(const on_device&) = delete;

 private:
  int before_ = 0;
};

template <class P>
P* as(ptr p) {
  return reinterpret_cast<P*>(p);
}

// Calls f(tagged<Tag>{}) for a dtype tag.
template <class F>
void with_ops(int tag, F&& f) {
  lmpy::dispatch_tag(tag, [&](auto t) { f(lmpy::gpu::tagged<decltype(t)::value>{}); });
}

// An uninitialised 1-D JAX array of n elements of a DLPack type on `device`, and its pointer: JAX arrays
// are immutable, so libmerge allocates their results and hands them over (nanobind's jax.dlpack import)
// before writing them. cudaMalloc and cudaFree: safe whatever stream JAX reads on.
nb::tuple empty_jax(i64 n, int code, int bits, int device) {
  on_device d(device);
  void* p = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(n) * static_cast<std::size_t>(bits / 8);
  check(cudaMalloc(&p, bytes > 0 ? bytes : 1), "cudaMalloc (a result array)");
  nb::capsule owner(p, [](void* q) noexcept { cudaFree(q); });
  const std::size_t shape[1] = {static_cast<std::size_t>(n)};
  const nb::dlpack::dtype type{static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(bits), 1};
  const nb::ndarray<nb::jax, nb::device::cuda> array(p, 1, shape, owner, nullptr, type, nb::device::cuda::value,
                                                     device);
  return nb::make_tuple(array, reinterpret_cast<ptr>(p));
}

}  // namespace

NB_MODULE(_cuda, m) {
  m.doc() = "libmerge's CUDA backend (use the functions of the libmerge package)";
  nb::register_exception_translator([](const std::exception_ptr& e, void*) {
    try {
      std::rethrow_exception(e);
    } catch (const lmpy::gpu::out_of_memory& x) {
      PyErr_SetString(PyExc_MemoryError, x.what());
    }
  });
  const auto release = nb::call_guard<nb::gil_scoped_release>();
  m.def("device_count", [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : (cudaGetLastError(), 0);
  });
  m.def("synchronize", [](int device, stream_t s) {
    on_device d(device);
    check(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(s)), "cudaStreamSynchronize");
  }, release);
  m.def("empty_jax", &empty_jax);
  m.def("copy", [](int device, stream_t s, ptr to, ptr from, std::size_t bytes) {
    if (bytes == 0) return;
    on_device d(device);
    check(cudaMemcpyAsync(as<void>(to), as<const void>(from), bytes, cudaMemcpyDeviceToDevice,
                          reinterpret_cast<cudaStream_t>(s)), "cudaMemcpyAsync");
  }, release);
  m.def("sort", [](int device, stream_t s, int tag, bool desc, ptr keys, i64 n) {
    on_device d(device);
    with_ops(tag, [&](auto ops) { ops.sort(desc, as<void>(keys), n, s); });
  }, release);
  m.def("argsort", [](int device, stream_t s, int tag, bool desc, ptr keys, i64 n, ptr indices) {
    on_device d(device);
    with_ops(tag, [&](auto ops) { ops.argsort(desc, as<void>(keys), n, as<i64>(indices), s); });
  }, release);
  m.def("sorted_until", [](int device, stream_t s, int tag, bool desc, ptr keys, i64 n) {
    on_device d(device);
    i64 at = n;
    with_ops(tag, [&](auto ops) { at = ops.sorted_until(desc, as<const void>(keys), n, s); });
    return at;
  }, release);
  m.def("merge", [](int device, stream_t s, int tag, bool desc, ptr a, i64 na, ptr b, i64 nb, ptr out, ptr pos) {
    on_device d(device);
    with_ops(tag, [&](auto ops) {
      ops.merge(desc, as<const void>(a), na, as<const void>(b), nb, as<void>(out), as<i64>(pos), s);
    });
  }, release);
  m.def("multiway_merge", [](int device, stream_t s, int tag, bool desc, std::vector<ptr> firsts,
                             std::vector<i64> lengths, ptr out, ptr pos) {
    on_device d(device);
    std::vector<const void*> f;
    for (ptr p : firsts) f.push_back(as<const void>(p));
    with_ops(tag, [&](auto ops) {
      ops.multiway_merge(desc, f.data(), lengths.data(), static_cast<i64>(f.size()), as<void>(out), as<i64>(pos), s);
    });
  }, release);
  m.def("sorted_search", [](int device, stream_t s, int tag, bool desc, bool upper, int form, ptr a, i64 na, ptr b,
                            i64 nb, ptr a_out, ptr b_out) {
    on_device d(device);
    with_ops(tag, [&](auto ops) {
      ops.sorted_search(desc, upper, form, as<const void>(a), na, as<const void>(b), nb, as<i64>(a_out),
                        as<i64>(b_out), s);
    });
  }, release);
  m.def("search_any_order", [](int device, stream_t s, int tag, bool desc, bool upper, ptr needles, i64 nn,
                                ptr haystack, i64 nh, ptr out) {
    on_device d(device);
    with_ops(tag, [&](auto ops) {
      ops.search_any_order(desc, upper, as<const void>(needles), nn, as<const void>(haystack), nh, as<i64>(out), s);
    });
  }, release);
  m.def("equality_count", [](int device, stream_t s, int tag, bool desc, ptr a, i64 na, ptr b, i64 nb, ptr counts) {
    on_device d(device);
    with_ops(tag, [&](auto ops) {
      ops.equality_count(desc, as<const void>(a), na, as<const void>(b), nb, as<i64>(counts), s);
    });
  }, release);
}
