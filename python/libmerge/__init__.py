"""libmerge for Python: stable sorts, merges, k-way merges and sorted searches.

Functions take 1-D arrays (NumPy arrays, anything ``numpy.asarray`` takes,
and CPU arrays of other frameworks through DLPack, without a copy) and return
NumPy arrays. They run on libmerge's OpenMP backend, on every core.

    >>> import numpy as np, libmerge as lm
    >>> lm.merge(np.array([1, 3, 5]), np.array([2, 3, 4]))
    array([1, 2, 3, 3, 4, 5])

Every function takes ``descending=`` (the inputs, and the output, in
descending order) and ``checked=`` (verify that the inputs a merge or search
takes are sorted, and raise ``ValueError`` naming the first that is not).
Floating-point keys are ordered as NumPy sorts them: NaNs last (first when
descending), -0.0 equal to 0.0. Sizes are 64-bit.
"""

import numpy as np

from . import _cpu

__version__ = "0.1.0"
__all__ = [
    "sort", "argsort", "sort_by_key", "lexsort", "merge", "merge_by_key", "multiway_merge",
    "multiway_merge_by_key", "searchsorted", "sorted_search", "sorted_equality_count",
]

# The dtype tags of python/src/ops.hpp (bfloat16, ml_dtypes', is found by name).
_TAGS = {
    np.dtype(np.bool_): 0, np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3,
    np.dtype(np.int64): 4, np.dtype(np.uint8): 5, np.dtype(np.uint16): 6, np.dtype(np.uint32): 7,
    np.dtype(np.uint64): 8, np.dtype(np.float16): 9, np.dtype(np.float32): 11, np.dtype(np.float64): 12,
}
_BFLOAT16 = 10
_SEARCH_RESULTS = ("index", "match", "index_match")
_MATCH_BIT = np.int64(-(2 ** 63))  # bit 63: index_match's flag
_A_INDEX, _A_INDEX_MATCH, _BOTH_INDEX_MATCH = 0, 1, 2


def _tag(dtype, name):
    if dtype in _TAGS:
        return _TAGS[dtype]
    if dtype.name == "bfloat16" and dtype.itemsize == 2:
        return _BFLOAT16
    raise TypeError(f"libmerge: {name} has dtype {dtype}; libmerge takes bool, int8 to int64, uint8 to uint64, "
                    "float16, bfloat16, float32 and float64")


def _array(x, name):
    """x as a C-contiguous 1-D NumPy array of native byte order (a view where it already is one)."""
    if hasattr(x, "__cuda_array_interface__"):
        raise TypeError(f"libmerge: {name} is on a GPU; this build of libmerge has only its CPU module")
    if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__"):
        device = x.__dlpack_device__()[0] if hasattr(x, "__dlpack_device__") else 1
        if device != 1:  # kDLCPU
            raise TypeError(f"libmerge: {name} is on a device other than the CPU (DLPack device type {device}); "
                            "this build of libmerge has only its CPU module")
        x = np.from_dlpack(x)
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"libmerge: {name} must be 1-D, got an array of shape {a.shape}")
    if a.dtype.byteorder not in "=|":
        a = a.astype(a.dtype.newbyteorder("="))
    _tag(a.dtype, name)
    return np.ascontiguousarray(a)


def _common(arrays, names):
    """The arrays in one dtype: NumPy's promotion (np.result_type) where they differ."""
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) <= 1:
        return arrays
    try:
        dtype = np.result_type(*arrays)
    except TypeError as e:
        raise TypeError(f"libmerge: {', '.join(names)} have dtypes with no common type: {e}") from None
    _tag(dtype, " and ".join(names))
    return [a.astype(dtype, copy=False) for a in arrays]


def _raw(a):
    """What the module gets: bfloat16 (ml_dtypes', which DLPack does not name) as its bits."""
    return a.view(np.uint16) if a.dtype.name == "bfloat16" else a


def _check_sorted(a, name, descending, function):
    at = _cpu.sorted_until(_tag(a.dtype, name), descending, _raw(a))
    if at < a.shape[0]:
        order = "descending" if descending else "ascending"
        raise ValueError(f"libmerge.{function} (checked): {name} is not sorted ({order}): "
                         f"element {at} comes before element {at - 1}")


def _same_length(keys, values, keys_name, values_name):
    if values.shape[:1] != keys.shape:
        raise ValueError(f"libmerge: {values_name} has {values.shape[0] if values.ndim else 0} rows, "
                         f"{keys_name} {keys.shape[0]}: they must have as many")


def sort(a, *, descending=False, checked=False):
    """A sorted copy of a (stable). ``checked`` has nothing to verify here: the order is libmerge's own."""
    a = _array(a, "a")
    out = a.copy()
    _cpu.sort(_tag(a.dtype, "a"), bool(descending), _raw(out))
    return out


def _sorted_with_indices(a, descending):
    keys = a.copy()
    indices = np.empty(a.shape[0], dtype=np.int64)
    _cpu.argsort(_tag(a.dtype, "a"), bool(descending), _raw(keys), indices)
    return keys, indices


def argsort(a, *, descending=False, checked=False):
    """The int64 indices that sort a, stably (``numpy.argsort(kind="stable")``)."""
    return _sorted_with_indices(_array(a, "a"), descending)[1]


def sort_by_key(keys, values, *, descending=False, checked=False):
    """(sorted keys, values in the same order): rows of values (any dtype, any shape) move with their keys."""
    keys = _array(keys, "keys")
    values = np.asarray(values)
    _same_length(keys, values, "keys", "values")
    sorted_keys, indices = _sorted_with_indices(keys, descending)
    return sorted_keys, values[indices]


def lexsort(keys, *, descending=False, checked=False):
    """``numpy.lexsort``: the int64 indices that sort by the last key, then the one before it, and so on."""
    if isinstance(keys, np.ndarray) and keys.ndim == 2:
        keys = list(keys)
    keys = [_array(k, f"keys[{i}]") for i, k in enumerate(keys)]
    if not keys:
        raise ValueError("libmerge.lexsort: keys is empty; give at least one key")
    n = keys[0].shape[0]
    for i, k in enumerate(keys):
        if k.shape[0] != n:
            raise ValueError(f"libmerge.lexsort: keys[{i}] has {k.shape[0]} elements, keys[0] {n}")
    order = None
    for k in keys:  # least significant first: each stable sort keeps the order of the ones before
        _, step = _sorted_with_indices(k if order is None else k[order], descending)
        order = step if order is None else order[step]
    return order


def _merge_positions(a, b, descending, checked, names, function, positions):
    a, b = _common([_array(a, names[0]), _array(b, names[1])], names)
    tag = _tag(a.dtype, names[0])
    if checked:
        _check_sorted(a, names[0], descending, function)
        _check_sorted(b, names[1], descending, function)
    out = np.empty(a.shape[0] + b.shape[0], dtype=a.dtype)
    pos = np.empty(out.shape[0], dtype=np.int64) if positions else None
    _cpu.merge(tag, bool(descending), _raw(a), _raw(b), _raw(out), pos)
    return out, pos


def merge(a, b, *, descending=False, checked=False):
    """The merge of sorted a and b (stable: of equal keys, a's first)."""
    return _merge_positions(a, b, descending, checked, ("a", "b"), "merge", False)[0]


def merge_by_key(a_keys, b_keys, a_values, b_values, *, descending=False, checked=False):
    """(merged keys, values in the same order), as ``merge`` of the keys."""
    a_keys, b_keys = _array(a_keys, "a_keys"), _array(b_keys, "b_keys")
    a_values, b_values = np.asarray(a_values), np.asarray(b_values)
    _same_length(a_keys, a_values, "a_keys", "a_values")
    _same_length(b_keys, b_values, "b_keys", "b_values")
    keys, pos = _merge_positions(a_keys, b_keys, descending, checked, ("a_keys", "b_keys"), "merge_by_key", True)
    return keys, np.concatenate([a_values, b_values])[pos]


def _multiway_positions(arrays, descending, checked, function, positions, name="arrays"):
    names = [f"{name}[{i}]" for i in range(len(arrays))]
    arrays = _common([_array(a, n) for a, n in zip(arrays, names)], names)
    if not arrays:
        raise ValueError(f"libmerge.{function}: no arrays to merge (the output's dtype is unknown)")
    tag = _tag(arrays[0].dtype, names[0])
    if checked:
        for a, n in zip(arrays, names):
            _check_sorted(a, n, descending, function)
    out = np.empty(sum(a.shape[0] for a in arrays), dtype=arrays[0].dtype)
    pos = np.empty(out.shape[0], dtype=np.int64) if positions else None
    _cpu.multiway_merge(tag, bool(descending), [_raw(a) for a in arrays], _raw(out), pos)
    return out, pos


def multiway_merge(arrays, *, descending=False, checked=False):
    """The merge of k sorted arrays in one pass (stable: of equal keys, an earlier array's first)."""
    return _multiway_positions(list(arrays), descending, checked, "multiway_merge", False)[0]


def multiway_merge_by_key(keys, values, *, descending=False, checked=False):
    """(merged keys, values in the same order): keys and values are sequences of k arrays each."""
    keys = [_array(k, f"keys[{i}]") for i, k in enumerate(keys)]
    values = [np.asarray(v) for v in values]
    if len(keys) != len(values):
        raise ValueError(f"libmerge.multiway_merge_by_key: {len(keys)} key arrays, {len(values)} value arrays")
    for i, (k, v) in enumerate(zip(keys, values)):
        _same_length(k, v, f"keys[{i}]", f"values[{i}]")
    out, pos = _multiway_positions(keys, descending, checked, "multiway_merge_by_key", True, name="keys")
    return out, np.concatenate(values)[pos]


def _bounds(needles, haystack, upper, form, descending, with_b=False):
    tag = _tag(needles.dtype, "a")
    a_out = np.empty(needles.shape[0], dtype=np.int64)
    b_out = np.empty(haystack.shape[0], dtype=np.int64) if with_b else None
    _cpu.sorted_search(tag, bool(descending), bool(upper), form, _raw(needles), _raw(haystack), a_out, b_out)
    return a_out, b_out


def searchsorted(a, v, side="left", *, sorted_needles=None, descending=False, checked=False):
    """``numpy.searchsorted(a, v, side)``: where each of v goes in sorted a.

    Needles in order (``sorted_needles=True``, or None and found so by one
    read of v) take the merge-path search: one pass over both arrays, the
    library's fast path. Needles in no order are searched one at a time:
    NumPy's binary search, or, for ``descending``, sorted, searched and put
    back in their order.
    """
    if side not in ("left", "right"):
        raise ValueError(f"libmerge.searchsorted: side must be 'left' or 'right', got {side!r}")
    scalar = np.ndim(v) == 0
    a = _array(a, "a")
    v = _array(np.atleast_1d(v) if scalar else v, "v")
    a, v = _common([a, v], ("a", "v"))
    tag = _tag(a.dtype, "a")
    if checked:
        _check_sorted(a, "a", descending, "searchsorted")
        if sorted_needles:
            _check_sorted(v, "v", descending, "searchsorted")
    in_order = sorted_needles if sorted_needles is not None else _cpu.sorted_until(tag, bool(descending), _raw(v)) == v.shape[0]
    upper = side == "right"
    if in_order:
        out = _bounds(v, a, upper, _A_INDEX, descending)[0]
    elif not descending:
        out = np.searchsorted(a, v, side=side).astype(np.int64, copy=False)
    else:
        keys, order = _sorted_with_indices(v, True)
        out = np.empty_like(order)
        out[order] = _bounds(keys, a, upper, _A_INDEX, True)[0]
    return out[0] if scalar else out


def _decode(raw, result):
    if result == "index":
        return raw & ~_MATCH_BIT
    match = raw < 0
    if result == "match":
        return match
    return raw & ~_MATCH_BIT, match


def sorted_search(a, b, *, side="left", a_result="index", b_result=None, descending=False, checked=False):
    """Both-sorted search (Modern GPU's sorted search): for each element of sorted a its bound in sorted b.

    side "left": each element of a gets its lower bound in b (and each of b
    its upper bound in a); "right": the reverse. a_result and b_result say
    what each side gets: "index" (int64 bounds), "match" (bool: the other
    side holds an equal element), "index_match" (both, as a tuple); b_result
    None: nothing for b. Returns a's result, or (a's, b's) where b_result is given.
    """
    if side not in ("left", "right"):
        raise ValueError(f"libmerge.sorted_search: side must be 'left' or 'right', got {side!r}")
    if a_result not in _SEARCH_RESULTS:
        raise ValueError(f"libmerge.sorted_search: a_result must be one of {_SEARCH_RESULTS}, got {a_result!r}")
    if b_result is not None and b_result not in _SEARCH_RESULTS:
        raise ValueError(f"libmerge.sorted_search: b_result must be None or one of {_SEARCH_RESULTS}, "
                         f"got {b_result!r}")
    a, b = _common([_array(a, "a"), _array(b, "b")], ("a", "b"))
    if checked:
        _check_sorted(a, "a", descending, "sorted_search")
        _check_sorted(b, "b", descending, "sorted_search")
    upper = side == "right"
    if b_result is None:
        form = _A_INDEX if a_result == "index" else _A_INDEX_MATCH
        return _decode(_bounds(a, b, upper, form, descending)[0], a_result)
    a_raw, b_raw = _bounds(a, b, upper, _BOTH_INDEX_MATCH, descending, with_b=True)
    return _decode(a_raw, a_result), _decode(b_raw, b_result)


def sorted_equality_count(a, b, *, descending=False, checked=False):
    """For each element of sorted a, how many elements of sorted b equal it (int64)."""
    a, b = _common([_array(a, "a"), _array(b, "b")], ("a", "b"))
    if checked:
        _check_sorted(a, "a", descending, "sorted_equality_count")
        _check_sorted(b, "b", descending, "sorted_equality_count")
    counts = np.empty(a.shape[0], dtype=np.int64)
    _cpu.equality_count(_tag(a.dtype, "a"), bool(descending), _raw(a), _raw(b), counts)
    return counts
