"""libmerge's Python functions on NumPy arrays, against NumPy's own (the reference)."""

import os

import numpy as np
import pytest

import libmerge as lm

try:
    from hypothesis import given, settings, strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:  # the property tests need hypothesis
    given = None

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float16, np.float32, np.float64]
# Sizes around the OpenMP backend's shares (8192 elements a thread) and none.
SIZES = [0, 1, 2, 17, 1000, 70_001]


def keys(dtype, n, seed, distinct=None):
    """n random keys of dtype; floats with NaNs, infinities and both zeros among them."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        hi = info.max if distinct is None else min(info.max, info.min + distinct)
        return rng.integers(info.min, hi, n, dtype=dtype, endpoint=True)
    x = rng.standard_normal(n) * 100
    if distinct is not None:
        x = np.round(x / 100 * distinct)
    x = x.astype(dtype)
    if n >= 8:
        x[rng.integers(0, n, 4)] = np.array([np.nan, -0.0, np.inf, -np.inf], dtype=dtype)
        x[rng.integers(0, n)] = 0.0
    return x


def stable_order(a, descending):
    """NumPy's stable order of a, ascending or (equal keys still in input order) descending."""
    if not descending:
        return np.argsort(a, kind="stable")
    n = a.shape[0]
    return (n - 1 - np.argsort(a[::-1], kind="stable"))[::-1]


def same(x, y):
    """Equal arrays, NaNs equal where both are NaN, and the same dtype."""
    assert x.dtype == y.dtype, (x.dtype, y.dtype)
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_numpy(dtype, n, descending):
    a = keys(dtype, n, seed=n, distinct=50)  # ties: stability shows
    order = stable_order(a, descending)
    np.testing.assert_array_equal(lm.argsort(a, descending=descending), order)
    same(lm.sort(a, descending=descending), a[order])


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.float16])
def test_sort_by_key_moves_rows_of_any_values(dtype):
    k = keys(dtype, 5000, seed=3, distinct=30)
    v = np.arange(5000 * 3).reshape(5000, 3).astype(np.float32)
    sk, sv = lm.sort_by_key(k, v)
    order = np.argsort(k, kind="stable")
    same(sk, k[order])
    same(sv, v[order])


@pytest.mark.parametrize("n", [1, 100, 50_000])
def test_lexsort_matches_numpy(n):
    rng = np.random.default_rng(n)
    cols = [rng.integers(0, 5, n).astype(np.int32), rng.standard_normal(n).round(1), rng.integers(0, 3, n)]
    np.testing.assert_array_equal(lm.lexsort(cols), np.lexsort(cols))
    np.testing.assert_array_equal(lm.lexsort(np.array(cols[::2])), np.lexsort(np.array(cols[::2])))


def merge_reference(arrays, descending):
    """Stable merge: the concatenation sorted stably (an earlier array's equal keys first)."""
    cat = np.concatenate(arrays)
    return cat, stable_order(cat, descending)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes", [(0, 0), (0, 5), (7, 0), (1, 1), (1000, 3), (40_000, 50_000)])
@pytest.mark.parametrize("descending", [False, True])
def test_merge_and_merge_by_key_match_numpy(dtype, sizes, descending):
    a = lm.sort(keys(dtype, sizes[0], seed=1, distinct=40), descending=descending)
    b = lm.sort(keys(dtype, sizes[1], seed=2, distinct=40), descending=descending)
    cat, order = merge_reference([a, b], descending)
    same(lm.merge(a, b, descending=descending), cat[order])
    av, bv = np.arange(a.shape[0]), np.arange(a.shape[0], a.shape[0] + b.shape[0])
    mk, mv = lm.merge_by_key(a, b, av, bv, descending=descending)
    same(mk, cat[order])
    np.testing.assert_array_equal(mv, order)


@pytest.mark.parametrize("k", [1, 2, 3, 8, 9, 1000])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint64])
def test_multiway_merge_matches_numpy(k, dtype):
    rng = np.random.default_rng(k)
    arrays = [np.sort(keys(dtype, int(rng.integers(0, 3000 if k < 100 else 60)), seed=k * 7 + i, distinct=20),
                      kind="stable") for i in range(k)]
    arrays[0] = arrays[0][:0]  # an empty one among them
    cat, order = merge_reference(arrays, False)
    same(lm.multiway_merge(arrays), cat[order])
    values = [np.full(x.shape[0], i, dtype=np.int16) for i, x in enumerate(arrays)]
    mk, mv = lm.multiway_merge_by_key(arrays, values)
    same(mk, cat[order])
    same(mv, np.concatenate(values)[order])


def test_multiway_merge_of_all_equal_keys_keeps_array_order():
    arrays = [np.full(n, 7, dtype=np.int64) for n in (3, 0, 5, 1)]
    _, v = lm.multiway_merge_by_key(arrays, [np.full(x.shape[0], i) for i, x in enumerate(arrays)])
    np.testing.assert_array_equal(v, [0, 0, 0, 2, 2, 2, 2, 2, 3])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("needles", ["sorted", "unsorted"])
def test_searchsorted_matches_numpy(dtype, side, needles):
    a = np.sort(keys(dtype, 20_000, seed=5, distinct=300), kind="stable")
    v = keys(dtype, 30_000, seed=6, distinct=400)
    if needles == "sorted":
        v = np.sort(v, kind="stable")
    np.testing.assert_array_equal(lm.searchsorted(a, v, side), np.searchsorted(a, v, side))
    np.testing.assert_array_equal(lm.searchsorted(a, v, side, sorted_needles=needles == "sorted"),
                                  np.searchsorted(a, v, side))
    assert lm.searchsorted(a, v[3], side) == np.searchsorted(a, v[3], side)


def test_searchsorted_scalar_needles_promote_as_numpy():
    a = np.arange(0, 20, 2, dtype=np.int32)
    for x in (7, 8, 7.5, -1, 100, np.float32(8.5)):
        for side in ("left", "right"):
            assert lm.searchsorted(a, x, side) == np.searchsorted(a, x, side), (x, side)


def nan_less(p, q):
    """NumPy's order of floats: NaN after every number."""
    return (~np.isnan(p) & np.isnan(q)) | (p < q)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_descending(side):
    a = lm.sort(keys(np.float64, 5000, seed=8, distinct=100), descending=True)
    v = keys(np.float64, 3000, seed=9, distinct=120)
    # Descending: a key comes before x where x is less than it (NaN first);
    # the left bound counts those, the right one also the keys equal to x.
    if side == "left":
        ref = np.array([np.count_nonzero(nan_less(x, a)) for x in v])
    else:
        ref = np.array([np.count_nonzero(~nan_less(a, x)) for x in v])
    np.testing.assert_array_equal(lm.searchsorted(a, v, side, descending=True), ref)
    s = lm.sort(v, descending=True)
    np.testing.assert_array_equal(lm.searchsorted(a, s, side, descending=True), ref[lm.argsort(v, descending=True)])


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32])
@pytest.mark.parametrize("side", ["left", "right"])
def test_sorted_search_modes_and_counts(dtype, side):
    a = np.sort(keys(dtype, 4000, seed=10, distinct=60), kind="stable")
    b = np.sort(keys(dtype, 6000, seed=11, distinct=60), kind="stable")
    lo, hi = np.searchsorted(b, a, "left"), np.searchsorted(b, a, "right")
    blo, bhi = np.searchsorted(a, b, "left"), np.searchsorted(a, b, "right")
    a_index = lo if side == "left" else hi
    b_index = bhi if side == "left" else blo  # each side gets the other bound
    np.testing.assert_array_equal(lm.sorted_search(a, b, side=side), a_index)
    idx, match = lm.sorted_search(a, b, side=side, a_result="index_match")
    np.testing.assert_array_equal(idx, a_index)
    np.testing.assert_array_equal(match, hi > lo)
    am, (bi, bm) = lm.sorted_search(a, b, side=side, a_result="match", b_result="index_match")
    np.testing.assert_array_equal(am, hi > lo)
    np.testing.assert_array_equal(bi, b_index)
    np.testing.assert_array_equal(bm, bhi > blo)
    np.testing.assert_array_equal(lm.sorted_equality_count(a, b), hi - lo)


def test_float16_order_is_numpys():
    x = np.array([np.nan, 2, -0.0, 0.0, -np.inf, np.inf, -2, 1e-7, -np.nan], dtype=np.float16)
    same(lm.sort(x), np.sort(x, kind="stable"))
    np.testing.assert_array_equal(lm.argsort(x), np.argsort(x, kind="stable"))


def test_bfloat16_sorts_as_numbers():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = keys(np.float32, 2000, seed=12, distinct=50).astype(ml_dtypes.bfloat16)
    order = lm.argsort(x)
    np.testing.assert_array_equal(order, np.argsort(x.astype(np.float32), kind="stable"))


def test_inputs_are_not_copied_or_changed():
    a = np.sort(keys(np.int32, 10_000, seed=13))
    before = a.copy()
    lm.merge(a, a)
    lm.sort(a[::-1])
    np.testing.assert_array_equal(a, before)


def test_non_contiguous_and_swapped_inputs_are_handled():
    a = keys(np.int64, 10_000, seed=14)
    same(lm.sort(a[::3]), np.sort(a[::3], kind="stable"))
    big_endian = a.astype(">i8")
    same(lm.sort(big_endian), np.sort(a, kind="stable"))
    same(lm.sort([3, 1, 2]), np.array([1, 2, 3]))


def test_bad_input_raises_naming_the_argument():
    with pytest.raises(ValueError, match="a must be 1-D"):
        lm.sort(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="a has dtype complex128"):
        lm.sort(np.zeros(3, dtype=np.complex128))
    with pytest.raises(TypeError, match="b has dtype <U1"):
        lm.merge(np.zeros(3), np.array(["x"]))
    with pytest.raises(ValueError, match=r"libmerge.merge \(checked\): b is not sorted"):
        lm.merge(np.arange(5), np.array([1, 0]), checked=True)
    with pytest.raises(ValueError, match=r"arrays\[2\] is not sorted \(descending\)"):
        lm.multiway_merge([np.arange(3)[::-1], np.array([]), np.array([1, 2])], descending=True, checked=True)
    with pytest.raises(ValueError, match="a is not sorted"):
        lm.searchsorted(np.array([2, 1]), [1], checked=True)
    with pytest.raises(ValueError, match="values has 2 rows, keys 3"):
        lm.sort_by_key(np.arange(3), np.arange(2))
    with pytest.raises(ValueError, match="a_values has 2 rows, a_keys 3"):
        lm.merge_by_key(np.arange(3), np.arange(2), np.arange(2), np.arange(2))
    with pytest.raises(ValueError, match=r"values\[1\] has 1 rows, keys\[1\] 2"):
        lm.multiway_merge_by_key([np.arange(1), np.arange(2)], [np.arange(1), np.arange(1)])
    with pytest.raises(ValueError, match=r"keys\[1\] is not sorted"):
        lm.multiway_merge_by_key([np.arange(1), np.array([2, 1])], [np.arange(1), np.arange(2)], checked=True)
    with pytest.raises(ValueError, match="side must be"):
        lm.searchsorted(np.arange(3), [1], side="middle")
    with pytest.raises(ValueError, match="no arrays to merge"):
        lm.multiway_merge([])
    with pytest.raises(ValueError, match="keys\\[1\\] has 2 elements"):
        lm.lexsort([np.arange(3), np.arange(2)])


def test_unsorted_input_unchecked_still_returns_every_element():
    a, b = np.array([5, 1, 4]), np.array([3, 2])
    out = lm.merge(a, b)
    same(np.sort(out), np.arange(1, 6))


if given is not None:
    ints = hnp.arrays(np.int16, st.integers(0, 300), elements=st.integers(-50, 50))

    @settings(max_examples=60, deadline=None)
    @given(ints, ints, st.sampled_from(["left", "right"]))
    def test_property_merge_and_search(a, b, side):
        a, b = np.sort(a, kind="stable"), np.sort(b, kind="stable")
        cat, order = merge_reference([a, b], False)
        same(lm.merge(a, b), cat[order])
        np.testing.assert_array_equal(lm.searchsorted(a, b, side, sorted_needles=True), np.searchsorted(a, b, side))
        np.testing.assert_array_equal(lm.sorted_equality_count(a, b),
                                      np.searchsorted(b, a, "right") - np.searchsorted(b, a, "left"))

    @settings(max_examples=60, deadline=None)
    @given(hnp.arrays(np.float32, st.integers(0, 400),
                      elements=st.floats(allow_nan=True, allow_infinity=True, width=32)), st.booleans())
    def test_property_sort(a, descending):
        np.testing.assert_array_equal(lm.argsort(a, descending=descending), stable_order(a, descending))


@pytest.mark.skipif(os.environ.get("LIBMERGE_BIG_TESTS") != "1",
                    reason="4 GB of arrays: set LIBMERGE_BIG_TESTS=1")
def test_beyond_2_31_elements():
    n = (1 << 30) + 5
    a = np.zeros(n, dtype=np.int8)
    a[n // 2:] = 2
    b = np.ones(n, dtype=np.int8)
    b[-3:] = 3
    out = lm.merge(a, b)
    assert out.shape[0] == 2 * n > 2**31
    counts = np.bincount(out.view(np.uint8), minlength=4)
    np.testing.assert_array_equal(counts, [n // 2, n - 3, n - n // 2, 3])
    assert (np.diff(out.view(np.uint8)[:: 1 << 16]) >= 0).all() and (out[-3:] == 3).all()
    v = np.array([1, 2, 3], dtype=np.int8)
    np.testing.assert_array_equal(lm.searchsorted(out, v), [n // 2, n // 2 + n - 3, 2 * n - 3])
