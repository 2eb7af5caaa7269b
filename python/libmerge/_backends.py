"""Where a call runs: the CPU module on NumPy arrays, or the CUDA module on one GPU's arrays.

Both backends give the functions of ``__init__.py`` the same operations (the
modules' calls, and allocating, gathering and joining arrays), so that each
function is written once. A GPU array is any framework's: PyTorch tensors,
CuPy arrays and JAX arrays are read in place (their device pointers), and
results come back as the caller's type, allocated by its framework (JAX's:
by libmerge, handed over through DLPack).
"""

import numpy as np

from . import _cpu

try:
    from . import _cuda
except ImportError:  # built without CUDA
    _cuda = None

# The dtype tags of python/src/dtypes.hpp (bfloat16, ml_dtypes', is found by name).
TAGS = {
    np.dtype(np.bool_): 0, np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3,
    np.dtype(np.int64): 4, np.dtype(np.uint8): 5, np.dtype(np.uint16): 6, np.dtype(np.uint32): 7,
    np.dtype(np.uint64): 8, np.dtype(np.float16): 9, np.dtype(np.float32): 11, np.dtype(np.float64): 12,
}
BFLOAT16 = 10
_DLPACK_CUDA = 2
_SMALL_HAYSTACK = (1 << 31) - 1  # the frameworks' own searches are taken only below this


def tag(dtype, name):
    if dtype in TAGS:
        return TAGS[dtype]
    if dtype.name == "bfloat16" and dtype.itemsize == 2:
        return BFLOAT16
    raise TypeError(f"libmerge: {name} has dtype {dtype}; libmerge takes bool, int8 to int64, uint8 to uint64, "
                    "float16, bfloat16, float32 and float64")


def _dlpack_type(dtype):
    """(DLPack type code, bits) of a NumPy dtype: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool."""
    if dtype.name == "bfloat16":
        return 4, 16
    return {"b": 6, "i": 0, "u": 1, "f": 2}[dtype.kind], dtype.itemsize * 8


# ---------------------------------------------------------------------------
# The CPU: NumPy arrays on the OpenMP backend.

def _raw(a):
    """What the CPU module gets: bfloat16 (which DLPack names, NumPy does not) as its bits."""
    return a.view(np.uint16) if a.dtype.name == "bfloat16" else a


class Host:
    """NumPy arrays, the OpenMP backend."""

    def array(self, x, name):
        """x as a C-contiguous 1-D NumPy array of native byte order (a view where it already is one)."""
        if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__"):
            x = np.from_dlpack(x)
        a = np.asarray(x)
        if a.ndim != 1:
            raise ValueError(f"libmerge: {name} must be 1-D, got an array of shape {a.shape}")
        if a.dtype.byteorder not in "=|":
            a = a.astype(a.dtype.newbyteorder("="))
        tag(a.dtype, name)
        return np.ascontiguousarray(a)

    def values(self, x, name):
        return np.asarray(x)

    @staticmethod
    def dtype(a):
        return a.dtype

    def astype(self, a, dtype):
        return a.astype(dtype, copy=False)

    def empty(self, like, n, dtype):
        return np.empty(n, dtype=dtype)

    def copy(self, a):
        return a.copy()

    def take(self, values, positions):
        return values[positions]

    def concat(self, arrays):
        return np.concatenate(arrays)

    def scatter(self, order, values):
        out = np.empty_like(values)
        out[order] = values
        return out

    def searchsorted(self, a, v, side):
        return np.searchsorted(a, v, side=side).astype(np.int64, copy=False)

    @staticmethod
    def framework_searches(a):
        return True

    def sort(self, t, desc, keys):
        _cpu.sort(t, desc, _raw(keys))

    def argsort(self, t, desc, keys, indices):
        _cpu.argsort(t, desc, _raw(keys), indices)

    def sorted_until(self, t, desc, keys):
        return _cpu.sorted_until(t, desc, _raw(keys))

    def merge(self, t, desc, a, b, out, pos):
        _cpu.merge(t, desc, _raw(a), _raw(b), _raw(out), pos)

    def multiway_merge(self, t, desc, arrays, out, pos):
        _cpu.multiway_merge(t, desc, [_raw(a) for a in arrays], _raw(out), pos)

    def sorted_search(self, t, desc, upper, form, a, b, a_out, b_out):
        _cpu.sorted_search(t, desc, upper, form, _raw(a), _raw(b), a_out, b_out)

    def equality_count(self, t, desc, a, b, counts):
        _cpu.equality_count(t, desc, _raw(a), _raw(b), counts)

    def finish(self, *results):
        return results[0] if len(results) == 1 else results


HOST = Host()


# ---------------------------------------------------------------------------
# GPU arrays: each framework's calls for what the functions need.

class _Torch:
    name = "torch"

    def __init__(self):
        import torch
        self.torch = torch
        self.to_numpy = {torch.bool: np.bool_, torch.int8: np.int8, torch.int16: np.int16, torch.int32: np.int32,
                         torch.int64: np.int64, torch.uint8: np.uint8, torch.float16: np.float16,
                         torch.float32: np.float32, torch.float64: np.float64}
        for n, t in (("uint16", np.uint16), ("uint32", np.uint32), ("uint64", np.uint64)):
            if hasattr(torch, n):
                self.to_numpy[getattr(torch, n)] = t
        self.to_numpy = {k: np.dtype(v) for k, v in self.to_numpy.items()}
        self.from_numpy = {v: k for k, v in self.to_numpy.items()}
        # torch.searchsorted gives NumPy's bounds for these; its floats put NaN needles after NaN keys
        self.searchable = {np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8)}

    def owns(self, x):
        return isinstance(x, self.torch.Tensor)

    def dtype(self, x):
        if x.dtype == self.torch.bfloat16:
            return _bfloat16()
        if x.dtype not in self.to_numpy:
            raise TypeError(f"libmerge: a tensor of dtype {x.dtype}")
        return self.to_numpy[x.dtype]

    def framework_dtype(self, dtype):
        return self.torch.bfloat16 if dtype.name == "bfloat16" else self.from_numpy[dtype]

    def contiguous(self, x):
        return x.contiguous()

    def pointer(self, x):
        return x.data_ptr()

    def device(self, x):
        return x.device.index if x.is_cuda else None

    def stream(self, device):
        return self.torch.cuda.current_stream(device).cuda_stream

    def empty(self, like, n, dtype):
        return self.torch.empty(n, dtype=self.framework_dtype(dtype), device=like.device)

    def astype(self, x, dtype):
        return x.to(self.framework_dtype(dtype))

    def full(self, like, n, value, dtype):
        return self.torch.full((n,), value, dtype=self.framework_dtype(dtype), device=like.device)

    def concat(self, arrays):
        return self.torch.cat(arrays)

    def searchsorted(self, a, v, side):
        return self.torch.searchsorted(a, v, side=side)

    def searches(self, dtype):
        """Whether the framework's own search gives NumPy's bounds for keys of this (NumPy) dtype."""
        return dtype in self.searchable

    def small_search(self, a, v, side, below):
        """torch.searchsorted(a, v) where it is what libmerge would call after its checks (fewer than `below`
        integer needles of a's dtype, both 1-D, contiguous, on a's GPU), else None: a call of a few
        microseconds, which those checks would double."""
        t = self.torch
        if (isinstance(v, t.Tensor) and a.is_cuda and a.dtype == v.dtype
                and self.searches(self.to_numpy.get(a.dtype)) and a.dim() == 1 and v.dim() == 1
                and v.numel() < below and a.numel() < _SMALL_HAYSTACK and a.device == v.device
                and a.is_contiguous() and v.is_contiguous()):
            return t.searchsorted(a, v, side=side)
        return None

    def scatter(self, order, values):
        out = self.torch.empty_like(values)
        out[order] = values
        return out


class _CuPy:
    name = "cupy"

    def __init__(self):
        import cupy
        self.cupy = cupy

    def owns(self, x):
        return isinstance(x, self.cupy.ndarray)

    def dtype(self, x):
        return x.dtype

    def contiguous(self, x):
        return self.cupy.ascontiguousarray(x)

    def pointer(self, x):
        return x.data.ptr

    def device(self, x):
        return x.device.id

    def stream(self, device):
        with self.cupy.cuda.Device(device):
            return self.cupy.cuda.get_current_stream().ptr

    def empty(self, like, n, dtype):
        with like.device:
            return self.cupy.empty(n, dtype=dtype)

    def astype(self, x, dtype):
        return x.astype(dtype)

    def full(self, like, n, value, dtype):
        with like.device:
            return self.cupy.full(n, value, dtype=dtype)

    def concat(self, arrays):
        return self.cupy.concatenate(arrays)

    def searchsorted(self, a, v, side):
        return self.cupy.searchsorted(a, v, side=side).astype(np.int64)

    @staticmethod
    def searches(dtype):
        return dtype.kind in "iuf"

    def small_search(self, a, v, side, below):
        """As _Torch.small_search: cupy.searchsorted for few needles of a's dtype on a's GPU (NaN last too)."""
        cp = self.cupy
        if (isinstance(v, cp.ndarray) and a.dtype == v.dtype and self.searches(a.dtype) and a.ndim == 1
                and v.ndim == 1 and v.size < below and a.size < _SMALL_HAYSTACK and a.device == v.device
                and a.device == cp.cuda.Device()):
            return self.searchsorted(a, v, side)
        return None

    def scatter(self, order, values):
        out = self.cupy.empty_like(values)
        out[order] = values
        return out


class _Jax:
    """JAX arrays: immutable, so results are libmerge's allocations handed to JAX through DLPack. JAX has no
    current stream: inputs are waited for, the work runs on the default stream, and the call waits for it."""
    name = "jax"

    def __init__(self):
        import jax
        import jax.numpy as jnp
        self.jax, self.jnp = jax, jnp

    def owns(self, x):
        return isinstance(x, self.jax.Array)

    def dtype(self, x):
        return np.dtype(x.dtype)

    def contiguous(self, x):
        return x.block_until_ready()

    def pointer(self, x):
        return x.unsafe_buffer_pointer()

    def device(self, x):
        (d,) = x.devices()
        return d.id if d.platform == "gpu" else None

    def stream(self, device):
        return 0

    def empty(self, like, n, dtype):
        if self.jax.dtypes.canonicalize_dtype(dtype) != dtype:
            raise TypeError(f"libmerge: this call returns {dtype} results, which JAX holds only with 64-bit types "
                            "on: jax.config.update('jax_enable_x64', True)")
        code, bits = _dlpack_type(dtype)
        array, pointer = _cuda.empty_jax(n, code, bits, self.device(like))
        return _Pending(array, pointer, n)

    def astype(self, x, dtype):
        return x.astype(dtype)

    def full(self, like, n, value, dtype):
        (d,) = like.devices()
        return self.jax.device_put(self.jnp.full((n,), value, dtype=dtype), d)

    def concat(self, arrays):
        return self.jnp.concatenate(arrays)

    def searchsorted(self, a, v, side):
        return self.jnp.searchsorted(a, v, side=side).astype(np.int64)

    @staticmethod
    def searches(dtype):
        return True

    def small_search(self, a, v, side, below):
        return None

    def scatter(self, order, values):
        return self.jnp.empty_like(values).at[order].set(values)


class _Pending:
    """A JAX result libmerge allocated, and its pointer: the caller's once the stream has written it."""

    def __init__(self, array, pointer, n):
        self.array, self.pointer, self.shape = array, pointer, (n,)


def _bfloat16():
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16)


_FRAMEWORKS = {}


def framework_of(x):
    """The adapter for x's framework (None: x is no GPU framework's array)."""
    module = type(x).__module__.split(".")[0]
    if module in ("torch", "cupy", "jax", "jaxlib"):
        key = "jax" if module == "jaxlib" else module
        if key not in _FRAMEWORKS:
            _FRAMEWORKS[key] = {"torch": _Torch, "cupy": _CuPy, "jax": _Jax}[key]()
        f = _FRAMEWORKS[key]
        return f if f.owns(x) else None
    return None


def _on_gpu(x):
    """Whether x lives on a GPU (DLPack's CUDA device, or __cuda_array_interface__)."""
    f = framework_of(x)
    if f is not None:  # (hasattr would build a tensor's __cuda_array_interface__: microseconds a call)
        return f.device(x) is not None
    if hasattr(x, "__cuda_array_interface__"):
        return True
    if hasattr(x, "__dlpack_device__") and not isinstance(x, np.ndarray):
        try:
            return x.__dlpack_device__()[0] == _DLPACK_CUDA
        except Exception:  # noqa: BLE001 (a framework's own refusal: not ours to report)
            return False
    return False


def _cupy_view(cupy, x):
    """A GPU array of no framework libmerge knows as a CuPy array over the same memory."""
    return cupy.asarray(x) if hasattr(x, "__cuda_array_interface__") else cupy.from_dlpack(x)


def _through_cupy(x):
    """(CuPy's adapter, x as a CuPy array) for a GPU array of no framework libmerge knows."""
    try:
        f = _FRAMEWORKS.get("cupy") or _FRAMEWORKS.setdefault("cupy", _CuPy())
    except ImportError:
        raise TypeError(f"libmerge: a {type(x).__module__}.{type(x).__name__} on a GPU: libmerge takes PyTorch, "
                        "CuPy and JAX arrays there, and other GPU arrays through CuPy, which is not "
                        "installed") from None
    try:
        return f, _cupy_view(f.cupy, x)
    except Exception as e:  # noqa: BLE001 (CuPy names what it cannot read)
        raise TypeError(f"libmerge: a {type(x).__module__}.{type(x).__name__} on a GPU that CuPy cannot "
                        f"read without a copy: {e}") from None


def stream_handle(stream):
    """A cudaStream_t as an integer, from an int or a framework's stream object."""
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


class Device:
    """One GPU's arrays of one framework, the CUDA module, on one stream."""

    def __init__(self, framework, device, stream):
        if _cuda is None:
            raise TypeError("libmerge: the arrays are on a GPU, and this build of libmerge has only its CPU module "
                            "(pip install ./python where nvcc is found builds the CUDA module)")
        self.f, self.device = framework, device
        self._stream = None if stream is None else stream_handle(stream)

    @property
    def stream(self):
        """The call's stream, asked of the framework only when a kernel of ours runs (2^10 needles that go to
        the framework's own search need none)."""
        if self._stream is None:
            self._stream = self.f.stream(self.device)
        return self._stream

    def array(self, x, name):
        x = self._adopt(x)
        f = framework_of(x)
        if f is not self.f:
            raise TypeError(f"libmerge: {name} is a {type(x).__module__}.{type(x).__name__}, the other arrays "
                            f"{self.f.name}'s on GPU {self.device}: give arrays of one framework")
        if f.device(x) != self.device:
            raise ValueError(f"libmerge: {name} is on device {f.device(x)}, the other arrays on GPU "
                             f"{self.device}: give arrays of one GPU")
        if len(x.shape) != 1:
            raise ValueError(f"libmerge: {name} must be 1-D, got an array of shape {tuple(x.shape)}")
        tag(f.dtype(x), name)
        return f.contiguous(x)

    def values(self, x, name):
        x = self._adopt(x)
        if framework_of(x) is not self.f:
            raise TypeError(f"libmerge: {name} must be {self.f.name}'s array on the keys' GPU, like the keys")
        if self.f.device(x) != self.device:
            raise ValueError(f"libmerge: {name} is on device {self.f.device(x)}, the keys on GPU {self.device}: "
                             "give arrays of one GPU")
        return x

    def _adopt(self, x):
        """Another library's GPU array (Numba's, anything with __cuda_array_interface__ or CUDA DLPack) as a
        CuPy array over the same memory, where this call runs on CuPy's arrays."""
        if self.f.name == "cupy" and framework_of(x) is None and _on_gpu(x):
            return _cupy_view(self.f.cupy, x)
        return x

    def scalar(self, value, like, dtype):
        """A Python or NumPy scalar as a one-element array of like's framework and GPU."""
        return self.f.full(like, 1, value, np.dtype(dtype))

    def dtype(self, a):
        return self.f.dtype(a)

    def astype(self, a, dtype):
        return self.f.astype(a, dtype)

    def empty(self, like, n, dtype):
        return self.f.empty(like, n, np.dtype(dtype))

    def copy(self, a):
        out = self.empty(a, a.shape[0], self.dtype(a))
        _cuda.copy(*self._head(), self._p(out), self._p(a), a.shape[0] * self.dtype(a).itemsize)
        return out

    def take(self, values, positions):
        return self.f.contiguous(values[positions])  # (JAX: ready before a kernel of ours reads it)

    def concat(self, arrays):
        return self.f.concat(arrays)

    def scatter(self, order, values):
        return self.f.scatter(order, values)

    def searchsorted(self, a, v, side):
        return self.f.searchsorted(a, v, side)

    def framework_searches(self, a):
        """Whether the framework's own search gives NumPy's bounds in a: keys of a's dtype (PyTorch's puts NaN
        needles after NaN keys) and a haystack under 2^31 elements (past it the frameworks' are not tested)."""
        return a.shape[0] < _SMALL_HAYSTACK and self.f.searches(self.dtype(a))

    def _p(self, a):
        """An array's device pointer (0 for None)."""
        if a is None:
            return 0
        return a.pointer if isinstance(a, _Pending) else self.f.pointer(a)

    def _head(self):
        return self.device, self.stream

    def sort(self, t, desc, keys):
        _cuda.sort(*self._head(), t, desc, self._p(keys), keys.shape[0])

    def argsort(self, t, desc, keys, indices):
        _cuda.argsort(*self._head(), t, desc, self._p(keys), keys.shape[0], self._p(indices))

    def sorted_until(self, t, desc, keys):
        return _cuda.sorted_until(*self._head(), t, desc, self._p(keys), keys.shape[0])

    def merge(self, t, desc, a, b, out, pos):
        _cuda.merge(*self._head(), t, desc, self._p(a), a.shape[0], self._p(b), b.shape[0], self._p(out),
                    self._p(pos))

    def multiway_merge(self, t, desc, arrays, out, pos):
        _cuda.multiway_merge(*self._head(), t, desc, [self._p(a) for a in arrays], [a.shape[0] for a in arrays],
                             self._p(out), self._p(pos))

    def sorted_search(self, t, desc, upper, form, a, b, a_out, b_out):
        _cuda.sorted_search(*self._head(), t, desc, upper, form, self._p(a), a.shape[0], self._p(b), b.shape[0],
                            self._p(a_out), self._p(b_out))

    def search_any_order(self, t, desc, upper, needles, haystack):
        """The needles' int64 bounds in haystack, needles in any order (see tagged.hpp)."""
        out = self.empty(needles, needles.shape[0], np.int64)
        _cuda.search_any_order(*self._head(), t, desc, upper, self._p(needles), needles.shape[0],
                               self._p(haystack), haystack.shape[0], self._p(out))
        return self.finish(out)

    def equality_count(self, t, desc, a, b, counts):
        _cuda.equality_count(*self._head(), t, desc, self._p(a), a.shape[0], self._p(b), b.shape[0],
                             self._p(counts))

    def finish(self, *results):
        """The results as the framework's arrays (JAX: once the stream has written them)."""
        if any(isinstance(r, _Pending) for r in results):
            _cuda.synchronize(*self._head())
            results = tuple(r.array if isinstance(r, _Pending) else r for r in results)
        return results[0] if len(results) == 1 else results


def backend_of(arrays, stream=None):
    """HOST, or the Device of the GPU arrays among `arrays` (the others must then be on that GPU too)."""
    for x in arrays:
        if _on_gpu(x):
            f = framework_of(x)
            if f is None:
                f, x = _through_cupy(x)
            return Device(f, f.device(x), stream)
    return HOST
