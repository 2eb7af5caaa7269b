"""libmerge's Python functions on GPU arrays of PyTorch, CuPy and JAX, against NumPy (the reference) and the
frameworks' own functions. Skipped where there is no GPU, no CUDA module or none of the frameworks."""

import numpy as np
import pytest

import libmerge as lm
from libmerge import _backends

from test_cpu import keys, merge_reference, same, stable_order

if _backends._cuda is None or _backends._cuda.device_count() == 0:
    pytest.skip("no GPU, or libmerge built without its CUDA module", allow_module_level=True)


def _torch():
    import torch
    return torch


def _cupy():
    import cupy
    return cupy


def _jax():
    import jax
    jax.config.update("jax_enable_x64", True)  # int64 and uint64 arrays, and libmerge's int64 results
    return jax


FRAMEWORKS = []
for name, load in (("torch", _torch), ("cupy", _cupy), ("jax", _jax)):
    try:
        load()
        FRAMEWORKS.append(name)
    except ImportError:
        pass
if not FRAMEWORKS:
    pytest.skip("none of PyTorch, CuPy and JAX is installed", allow_module_level=True)

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float16, np.float32, np.float64]


def to_gpu(fw, x):
    """A NumPy array as framework fw's array on GPU 0 (bfloat16 through its bits)."""
    x = np.ascontiguousarray(x)
    if fw == "torch":
        torch = _torch()
        if x.dtype.name == "bfloat16":
            return torch.from_numpy(x.view(np.uint16).astype(np.int16)).cuda().view(torch.bfloat16)
        return torch.from_numpy(x).cuda()
    if fw == "cupy":
        return _cupy().asarray(x)
    jax = _jax()
    return jax.device_put(x, jax.devices("gpu")[0])


def to_host(fw, x):
    if fw == "torch":
        torch = _torch()
        if x.dtype == torch.bfloat16:
            import ml_dtypes
            return x.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
        return x.cpu().numpy()
    if fw == "cupy":
        return x.get()
    return np.asarray(x)


def is_fw_array(fw, x):
    if fw == "torch":
        return isinstance(x, _torch().Tensor) and x.is_cuda
    if fw == "cupy":
        return isinstance(x, _cupy().ndarray)
    return isinstance(x, _jax().Array) and x.devices().pop().platform == "gpu"


def supported(fw, dtype):
    # CuPy has no bfloat16; PyTorch's unsigned types past uint8 move between devices but index nothing.
    return not (fw == "cupy" and np.dtype(dtype).name == "bfloat16")


@pytest.mark.parametrize("fw", FRAMEWORKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 1000, 100_003])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_numpy(fw, dtype, n, descending):
    a = keys(dtype, n, seed=n, distinct=50)
    order = stable_order(a, descending)
    g = to_gpu(fw, a)
    s, i = lm.sort(g, descending=descending), lm.argsort(g, descending=descending)
    assert is_fw_array(fw, s) and is_fw_array(fw, i)
    same(to_host(fw, s), a[order])
    np.testing.assert_array_equal(to_host(fw, i), order)
    same(to_host(fw, g), a)  # the input is left as it was


@pytest.mark.parametrize("fw", FRAMEWORKS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("shape", ["random", "reversed", "odd floats"])
def test_large_sorts_match_numpy(fw, dtype, shape):
    # From 2^22 elements: the radix sort, the look at the keys (floats: NaNs and -0.0 send them to the merge
    # sort) and keys in reverse order turned around (argsort: only strictly falling keys).
    if shape == "odd floats" and np.dtype(dtype).kind != "f":
        pytest.skip("integers have no NaN and no -0.0")
    n = (1 << 22) + 5
    a = np.random.default_rng(11).integers(-(1 << 30), 1 << 30, n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        a = a / dtype(64)
        if shape == "odd floats":
            a[[7, n // 3, n // 2, n - 1]] = [0.0, -0.0, np.nan, -np.nan]
    if shape == "reversed":
        a = np.ascontiguousarray(np.sort(a, kind="stable")[::-1])
    order = stable_order(a, False)
    g = to_gpu(fw, a)
    same(to_host(fw, lm.sort(g)), a[order])
    np.testing.assert_array_equal(to_host(fw, lm.argsort(g)), order)


@pytest.mark.parametrize("fw", FRAMEWORKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes", [(0, 5), (1000, 3), (40_000, 50_000)])
@pytest.mark.parametrize("descending", [False, True])
def test_merge_and_merge_by_key_match_numpy(fw, dtype, sizes, descending):
    a = lm.sort(keys(dtype, sizes[0], seed=1, distinct=40), descending=descending)
    b = lm.sort(keys(dtype, sizes[1], seed=2, distinct=40), descending=descending)
    cat, order = merge_reference([a, b], descending)
    ga, gb = to_gpu(fw, a), to_gpu(fw, b)
    m = lm.merge(ga, gb, descending=descending)
    assert is_fw_array(fw, m)
    same(to_host(fw, m), cat[order])
    av = to_gpu(fw, np.arange(a.shape[0], dtype=np.int64))
    bv = to_gpu(fw, np.arange(a.shape[0], a.shape[0] + b.shape[0], dtype=np.int64))
    mk, mv = lm.merge_by_key(ga, gb, av, bv, descending=descending)
    same(to_host(fw, mk), cat[order])
    np.testing.assert_array_equal(to_host(fw, mv), order)


@pytest.mark.parametrize("fw", FRAMEWORKS)
@pytest.mark.parametrize("k", [1, 2, 3, 8, 9, 100])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint64, np.int8])
def test_multiway_merge_matches_numpy(fw, k, dtype):
    rng = np.random.default_rng(k)
    arrays = [np.sort(keys(dtype, int(rng.integers(0, 30_000 if k < 10 else 2000)), seed=k * 7 + i, distinct=20),
                      kind="stable") for i in range(k)]
    arrays[0] = arrays[0][:0]  # an empty one among them
    cat, order = merge_reference(arrays, False)
    g = [to_gpu(fw, x) for x in arrays]
    same(to_host(fw, lm.multiway_merge(g)), cat[order])
    values = [to_gpu(fw, np.full(x.shape[0], i, dtype=np.int16)) for i, x in enumerate(arrays)]
    mk, mv = lm.multiway_merge_by_key(g, values)
    same(to_host(fw, mk), cat[order])
    same(to_host(fw, mv), np.concatenate([np.full(x.shape[0], i, dtype=np.int16)
                                          for i, x in enumerate(arrays)])[order])


@pytest.mark.parametrize("fw", FRAMEWORKS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64])
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("needles", ["sorted", "unsorted"])
@pytest.mark.parametrize("descending", [False, True])
def test_searchsorted_matches_numpy(fw, dtype, side, needles, descending):
    a = np.sort(keys(dtype, 20_000, seed=5, distinct=300), kind="stable")
    v = keys(dtype, 70_000, seed=6, distinct=400)  # past 2^16: the default looks at v's order
    if needles == "sorted":
        v = np.sort(v, kind="stable")
    if descending:
        a, v = a[stable_order(a, True)], (v[stable_order(v, True)] if needles == "sorted" else v)
        expect = lm.searchsorted(a, v, side, descending=True)  # the CPU module (tested against NumPy)
    else:
        expect = np.searchsorted(a, v, side)
    ga, gv = to_gpu(fw, a), to_gpu(fw, v)
    got = lm.searchsorted(ga, gv, side, descending=descending)
    assert is_fw_array(fw, got)
    np.testing.assert_array_equal(to_host(fw, got), expect)
    if needles == "sorted":
        got = lm.searchsorted(ga, gv, side, sorted_needles=True, descending=descending, checked=True)
        np.testing.assert_array_equal(to_host(fw, got), expect)


@pytest.mark.parametrize("fw", FRAMEWORKS)
@pytest.mark.parametrize("dtype", [d for d in DTYPES if d not in (np.int32, np.int64, np.uint8, np.float16,
                                                                  np.float32, np.float64)])
@pytest.mark.parametrize("n", [1000, 70_000])
def test_searchsorted_of_needles_in_no_order_matches_numpy_for_every_dtype(fw, dtype, n):
    # the framework's own search where it gives NumPy's bounds for the dtype, libmerge's elsewhere
    a = np.sort(keys(dtype, 20_000, seed=11, distinct=300), kind="stable")
    v = keys(dtype, n, seed=12, distinct=400)
    ga, gv = to_gpu(fw, a), to_gpu(fw, v)
    for side in ("left", "right"):
        got = lm.searchsorted(ga, gv, side)
        assert is_fw_array(fw, got)
        np.testing.assert_array_equal(to_host(fw, got), np.searchsorted(a, v, side))


@pytest.mark.parametrize("fw", FRAMEWORKS)
@pytest.mark.parametrize("side", ["left", "right"])
def test_sorted_search_modes_and_counts_match_the_cpu_module(fw, side):
    a = np.sort(keys(np.int32, 50_000, seed=8, distinct=5000), kind="stable")
    b = np.sort(keys(np.int32, 70_000, seed=9, distinct=5000), kind="stable")
    ga, gb = to_gpu(fw, a), to_gpu(fw, b)
    for a_result in ("index", "match", "index_match"):
        for b_result in (None, "index", "match", "index_match"):
            want = lm.sorted_search(a, b, side=side, a_result=a_result, b_result=b_result)
            got = lm.sorted_search(ga, gb, side=side, a_result=a_result, b_result=b_result)
            flat_want = [w for x in (want if isinstance(want, tuple) else (want,))
                         for w in (x if isinstance(x, tuple) else (x,))]
            flat_got = [w for x in (got if isinstance(got, tuple) else (got,))
                        for w in (x if isinstance(x, tuple) else (x,))]
            assert len(flat_want) == len(flat_got)
            for w, g in zip(flat_want, flat_got):
                np.testing.assert_array_equal(to_host(fw, g), w)
    np.testing.assert_array_equal(to_host(fw, lm.sorted_equality_count(ga, gb)), lm.sorted_equality_count(a, b))


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_lexsort_and_sort_by_key_match_numpy(fw):
    rng = np.random.default_rng(4)
    cols = [rng.integers(0, 5, 50_000).astype(np.int32), rng.standard_normal(50_000).round(1),
            rng.integers(0, 3, 50_000)]
    got = lm.lexsort([to_gpu(fw, c) for c in cols])
    np.testing.assert_array_equal(to_host(fw, got), np.lexsort(cols))
    v = np.arange(50_000 * 3, dtype=np.float32).reshape(50_000, 3)
    sk, sv = lm.sort_by_key(to_gpu(fw, cols[1]), to_gpu(fw, v))
    order = np.argsort(cols[1], kind="stable")
    same(to_host(fw, sk), cols[1][order])
    same(to_host(fw, sv), v[order])


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_results_match_the_frameworks_own_functions(fw):
    rng = np.random.default_rng(11)
    a = np.sort(rng.integers(-1000, 1000, 1 << 20).astype(np.int32))
    v = np.sort(rng.integers(-1200, 1200, 1 << 19).astype(np.int32))
    x = rng.standard_normal(1 << 20).astype(np.float32)
    ga, gv, gx = to_gpu(fw, a), to_gpu(fw, v), to_gpu(fw, x)
    if fw == "torch":
        torch = _torch()
        ref_sort = torch.sort(gx, stable=True).values
        ref_search = torch.searchsorted(ga, gv, side="right")
        ref_merge = torch.sort(torch.cat([ga, gv]), stable=True).values
    elif fw == "cupy":
        cupy = _cupy()
        ref_sort, ref_search = cupy.sort(gx), cupy.searchsorted(ga, gv, side="right")
        ref_merge = cupy.sort(cupy.concatenate([ga, gv]))
    else:
        jnp = _jax().numpy
        ref_sort, ref_search = jnp.sort(gx, stable=True), jnp.searchsorted(ga, gv, side="right")
        ref_merge = jnp.sort(jnp.concatenate([ga, gv]), stable=True)
    np.testing.assert_array_equal(to_host(fw, lm.sort(gx)), to_host(fw, ref_sort))
    np.testing.assert_array_equal(to_host(fw, lm.searchsorted(ga, gv, "right")), to_host(fw, ref_search))
    np.testing.assert_array_equal(to_host(fw, lm.merge(ga, gv)), to_host(fw, ref_merge))


def test_torch_inputs_are_read_in_place_on_the_current_stream():
    if "torch" not in FRAMEWORKS:
        pytest.skip("needs PyTorch")
    torch = _torch()
    a = torch.sort(torch.randint(0, 1 << 30, (1 << 22,), device="cuda", dtype=torch.int32)).values
    b = torch.sort(torch.randint(0, 1 << 30, (1 << 22,), device="cuda", dtype=torch.int32)).values
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = lm.merge(a, b)
    torch.cuda.synchronize()
    # Only the result was allocated through PyTorch (a copy of an input would take as much again).
    assert torch.cuda.max_memory_allocated() - before <= out.numel() * 4 + 512
    assert torch.equal(out, torch.sort(torch.cat([a, b]), stable=True).values)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        c = a.flip(0).contiguous()  # written on the side stream: lm.sort must run after it, on that stream
        s = lm.sort(c)
    side.synchronize()
    assert torch.equal(s, a)
    s2 = lm.sort(a.flip(0).contiguous(), stream=side)
    side.synchronize()
    assert torch.equal(s2, a)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_bad_input_raises_naming_the_argument(fw):
    g = to_gpu(fw, np.arange(10, dtype=np.int32))
    with pytest.raises(ValueError, match="must be 1-D"):
        lm.sort(to_gpu(fw, np.zeros((3, 4), dtype=np.int32)))
    with pytest.raises(TypeError, match="b is a numpy"):
        lm.merge(g, np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match="b is not sorted"):
        lm.merge(g, to_gpu(fw, np.array([3, 1, 2], dtype=np.int32)), checked=True)
    with pytest.raises(ValueError, match="side must be"):
        lm.searchsorted(g, g, side="middle")
    with pytest.raises(TypeError, match="complex"):
        lm.sort(to_gpu(fw, np.zeros(3, dtype=np.complex64)))


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_scalar_needles_search_a_gpu_array(fw):
    a = np.arange(0, 20, 2, dtype=np.int32)
    g = to_gpu(fw, a)
    for x in (7, 8, 7.5, -1, 100):
        for side in ("left", "right"):
            got = lm.searchsorted(g, x, side)
            assert int(to_host(fw, got)) == np.searchsorted(a, x, side), (x, side)


class Foreign:
    """A GPU array known only by __cuda_array_interface__ (as Numba's), over a CuPy array's memory."""

    def __init__(self, x):
        self.__cuda_array_interface__ = x.__cuda_array_interface__
        self.keep = x


def test_other_gpu_arrays_are_read_through_cupy_in_place():
    if "cupy" not in FRAMEWORKS:
        pytest.skip("needs CuPy")
    cupy = _cupy()
    x = keys(np.float32, 50_000, seed=3, distinct=1000)
    gx = cupy.asarray(x)
    got = lm.sort(Foreign(gx))
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(got.get(), np.sort(x, kind="stable"))
    a = cupy.asarray(np.sort(x))
    np.testing.assert_array_equal(lm.merge(Foreign(a), a).get(), np.sort(np.concatenate([x, x]), kind="stable"))
    k, val = lm.sort_by_key(Foreign(gx), Foreign(cupy.arange(x.size)))
    np.testing.assert_array_equal(val.get(), stable_order(x, False))


def test_jax_without_64_bit_types_is_told_how_to_get_int64_results():
    if "jax" not in FRAMEWORKS:
        pytest.skip("needs JAX")
    jax = _jax()
    g = to_gpu("jax", np.array([3, 1, 2], dtype=np.int32))
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(TypeError, match="jax_enable_x64"):
            lm.argsort(g)
        np.testing.assert_array_equal(np.asarray(lm.sort(g)), [1, 2, 3])
    finally:
        jax.config.update("jax_enable_x64", True)


@pytest.mark.parametrize("fw", FRAMEWORKS)
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.float32, np.float64])
@pytest.mark.parametrize("side", ["left", "right"])
def test_few_needles_in_any_order_match_numpy(fw, dtype, side):
    a = np.sort(keys(dtype, 5000, seed=21, distinct=200), kind="stable")
    for v in (keys(dtype, 1000, seed=22, distinct=250), np.sort(keys(dtype, 3000, seed=23, distinct=250))):
        got = lm.searchsorted(to_gpu(fw, a), to_gpu(fw, v), side)
        assert is_fw_array(fw, got)
        np.testing.assert_array_equal(to_host(fw, got), np.searchsorted(a, v, side))


def test_beyond_2_31_elements():
    if "torch" not in FRAMEWORKS:
        pytest.skip("needs PyTorch")
    torch = _torch()
    n = (1 << 31) + 7
    zeros = torch.zeros(n // 2, dtype=torch.int8, device="cuda")
    ones = torch.ones(n - n // 2, dtype=torch.int8, device="cuda")
    out = lm.merge(ones, zeros)
    assert out.numel() == n
    assert bool((out[: n // 2] == 0).all()) and bool((out[n // 2:] == 1).all())
    del zeros, ones
    needles = torch.tensor([1, 0, 2, -1], dtype=torch.int8, device="cuda")
    for side, want in (("left", [n // 2, 0, n, 0]), ("right", [n, n // 2, n, 0])):
        assert lm.searchsorted(out, needles, side).tolist() == want
    sorted_needles = torch.sort(torch.randint(-1, 3, (1 << 17,), dtype=torch.int8, device="cuda")).values
    got = lm.searchsorted(out, sorted_needles)
    want = torch.where(sorted_needles <= 0, 0, torch.where(sorted_needles == 1, n // 2, n))
    assert torch.equal(got, want.to(torch.int64))
