"""libmerge for Python: stable sorts, merges, k-way merges and sorted searches.

Functions take 1-D arrays and return the caller's kind of array:

- NumPy arrays (anything ``numpy.asarray`` takes, and CPU arrays of other
  frameworks through DLPack, without a copy) run on libmerge's OpenMP
  backend, on every core, and give NumPy arrays;
- GPU arrays of PyTorch, CuPy and JAX run on libmerge's CUDA backend, read
  in place, on the framework's current stream (JAX: the default stream, and
  the call waits for it) or the one ``stream=`` names, and give the same
  framework's arrays on the same GPU.

    >>> import numpy as np, libmerge as lm
    >>> lm.merge(np.array([1, 3, 5]), np.array([2, 3, 4]))
    array([1, 2, 3, 3, 4, 5])

Every function takes ``descending=`` (the inputs, and the output, in
descending order), ``checked=`` (verify that the inputs a merge or search
takes are sorted, and raise ``ValueError`` naming the first that is not) and
``stream=`` (GPU arrays: a cudaStream_t as an int, or a framework's stream).
Floating-point keys are ordered as NumPy sorts them: NaNs last (first when
descending), -0.0 equal to 0.0. Sizes are 64-bit.
"""

import numpy as np

from ._backends import HOST, _on_gpu, backend_of, framework_of, tag as _tag

__version__ = "0.2.0"
__all__ = [
    "sort", "argsort", "sort_by_key", "lexsort", "merge", "merge_by_key", "multiway_merge",
    "multiway_merge_by_key", "searchsorted", "sorted_search", "sorted_equality_count",
]

_SEARCH_RESULTS = ("index", "match", "index_match")
_INDEX_BITS = 2 ** 63 - 1  # index_match's outputs: the index below bit 63, the match in it
_A_INDEX, _A_INDEX_MATCH, _BOTH_INDEX_MATCH = 0, 1, 2
_INT64 = np.dtype(np.int64)
# searchsorted's needles on a GPU, below this many, are searched one at a time without a look at their order.
_GPU_LOOK_FROM = 1 << 16


def _common(be, arrays, names):
    """The arrays in one dtype: NumPy's promotion (np.result_type) where they differ."""
    dtypes = [be.dtype(a) for a in arrays]
    if len(set(dtypes)) <= 1:
        return arrays
    try:
        dtype = np.result_type(*dtypes)
    except TypeError as e:
        raise TypeError(f"libmerge: {', '.join(names)} have dtypes with no common type: {e}") from None
    _tag(dtype, " and ".join(names))
    return [a if d == dtype else be.astype(a, dtype) for a, d in zip(arrays, dtypes)]


def _tag_of(be, a, name):
    return _tag(be.dtype(a), name)


def _check_sorted(be, a, name, descending, function):
    at = be.sorted_until(_tag_of(be, a, name), bool(descending), a)
    if at < a.shape[0]:
        order = "descending" if descending else "ascending"
        raise ValueError(f"libmerge.{function} (checked): {name} is not sorted ({order}): "
                         f"element {at} comes before element {at - 1}")


def _same_length(keys, values, keys_name, values_name):
    rows = values.shape[0] if len(values.shape) else 0
    if len(values.shape) == 0 or rows != keys.shape[0]:
        raise ValueError(f"libmerge: {values_name} has {rows} rows, {keys_name} {keys.shape[0]}: "
                         "they must have as many")


def sort(a, *, descending=False, checked=False, stream=None):
    """A sorted copy of a (stable). ``checked`` has nothing to verify here: the order is libmerge's own."""
    be = backend_of([a], stream)
    a = be.array(a, "a")
    out = be.copy(a)
    be.sort(_tag_of(be, a, "a"), bool(descending), out)
    return be.finish(out)


def _sorted_with_indices(be, a, descending):
    keys = be.copy(a)
    indices = be.empty(a, a.shape[0], _INT64)
    be.argsort(_tag_of(be, a, "a"), bool(descending), keys, indices)
    return be.finish(keys, indices)


def argsort(a, *, descending=False, checked=False, stream=None):
    """The int64 indices that sort a, stably (``numpy.argsort(kind="stable")``)."""
    be = backend_of([a], stream)
    return _sorted_with_indices(be, be.array(a, "a"), descending)[1]


def sort_by_key(keys, values, *, descending=False, checked=False, stream=None):
    """(sorted keys, values in the same order): rows of values (any dtype, any shape) move with their keys."""
    be = backend_of([keys], stream)
    keys = be.array(keys, "keys")
    values = be.values(values, "values")
    _same_length(keys, values, "keys", "values")
    sorted_keys, indices = _sorted_with_indices(be, keys, descending)
    return sorted_keys, be.take(values, indices)


def lexsort(keys, *, descending=False, checked=False, stream=None):
    """``numpy.lexsort``: the int64 indices that sort by the last key, then the one before it, and so on."""
    if isinstance(keys, np.ndarray) and keys.ndim == 2:
        keys = list(keys)
    keys = list(keys)
    if not keys:
        raise ValueError("libmerge.lexsort: keys is empty; give at least one key")
    be = backend_of(keys, stream)
    keys = [be.array(k, f"keys[{i}]") for i, k in enumerate(keys)]
    n = keys[0].shape[0]
    for i, k in enumerate(keys):
        if k.shape[0] != n:
            raise ValueError(f"libmerge.lexsort: keys[{i}] has {k.shape[0]} elements, keys[0] {n}")
    order = None
    for k in keys:  # least significant first: each stable sort keeps the order of the ones before
        _, step = _sorted_with_indices(be, k if order is None else be.take(k, order), descending)
        order = step if order is None else be.take(order, step)
    return order


def _merge_positions(be, a, b, descending, checked, names, function, positions):
    a, b = _common(be, [be.array(a, names[0]), be.array(b, names[1])], names)
    tag = _tag_of(be, a, names[0])
    if checked:
        _check_sorted(be, a, names[0], descending, function)
        _check_sorted(be, b, names[1], descending, function)
    out = be.empty(a, a.shape[0] + b.shape[0], be.dtype(a))
    pos = be.empty(a, out.shape[0], _INT64) if positions else None
    be.merge(tag, bool(descending), a, b, out, pos)
    return be.finish(out, pos)


def merge(a, b, *, descending=False, checked=False, stream=None):
    """The merge of sorted a and b (stable: of equal keys, a's first)."""
    be = backend_of([a, b], stream)
    return _merge_positions(be, a, b, descending, checked, ("a", "b"), "merge", False)[0]


def merge_by_key(a_keys, b_keys, a_values, b_values, *, descending=False, checked=False, stream=None):
    """(merged keys, values in the same order), as ``merge`` of the keys."""
    be = backend_of([a_keys, b_keys], stream)
    a_keys, b_keys = be.array(a_keys, "a_keys"), be.array(b_keys, "b_keys")
    a_values, b_values = be.values(a_values, "a_values"), be.values(b_values, "b_values")
    _same_length(a_keys, a_values, "a_keys", "a_values")
    _same_length(b_keys, b_values, "b_keys", "b_values")
    keys, pos = _merge_positions(be, a_keys, b_keys, descending, checked, ("a_keys", "b_keys"), "merge_by_key", True)
    return keys, be.take(be.concat([a_values, b_values]), pos)


def _multiway_positions(be, arrays, descending, checked, function, positions, name="arrays"):
    names = [f"{name}[{i}]" for i in range(len(arrays))]
    arrays = _common(be, [be.array(a, n) for a, n in zip(arrays, names)], names)
    if not arrays:
        raise ValueError(f"libmerge.{function}: no arrays to merge (the output's dtype is unknown)")
    tag = _tag_of(be, arrays[0], names[0])
    if checked:
        for a, n in zip(arrays, names):
            _check_sorted(be, a, n, descending, function)
    out = be.empty(arrays[0], sum(a.shape[0] for a in arrays), be.dtype(arrays[0]))
    pos = be.empty(arrays[0], out.shape[0], _INT64) if positions else None
    be.multiway_merge(tag, bool(descending), arrays, out, pos)
    return be.finish(out, pos)


def multiway_merge(arrays, *, descending=False, checked=False, stream=None):
    """The merge of k sorted arrays in one pass (stable: of equal keys, an earlier array's first)."""
    arrays = list(arrays)
    be = backend_of(arrays, stream)
    return _multiway_positions(be, arrays, descending, checked, "multiway_merge", False)[0]


def multiway_merge_by_key(keys, values, *, descending=False, checked=False, stream=None):
    """(merged keys, values in the same order): keys and values are sequences of k arrays each."""
    keys, values = list(keys), list(values)
    be = backend_of(keys, stream)
    keys = [be.array(k, f"keys[{i}]") for i, k in enumerate(keys)]
    values = [be.values(v, f"values[{i}]") for i, v in enumerate(values)]
    if len(keys) != len(values):
        raise ValueError(f"libmerge.multiway_merge_by_key: {len(keys)} key arrays, {len(values)} value arrays")
    for i, (k, v) in enumerate(zip(keys, values)):
        _same_length(k, v, f"keys[{i}]", f"values[{i}]")
    out, pos = _multiway_positions(be, keys, descending, checked, "multiway_merge_by_key", True, name="keys")
    return out, be.take(be.concat(values), pos)


def _bounds(be, needles, haystack, upper, form, descending, with_b=False):
    tag = _tag_of(be, needles, "a")
    a_out = be.empty(needles, needles.shape[0], _INT64)
    b_out = be.empty(needles, haystack.shape[0], _INT64) if with_b else None
    be.sorted_search(tag, bool(descending), bool(upper), form, needles, haystack, a_out, b_out)
    return be.finish(a_out, b_out)


def searchsorted(a, v, side="left", *, sorted_needles=None, descending=False, checked=False, stream=None):
    """``numpy.searchsorted(a, v, side)``: where each of v goes in sorted a.

    Needles in order (``sorted_needles=True``, or None and found so) take the
    merge-path search: one pass over both arrays, the library's fast path.
    With None, the CPU reads v first; a GPU runs the merge-path search, whose
    tiles say whether they found v in order, and then searches each needle
    alone where they did not, all queued without a wait (fewer than 2^16
    needles: one at a time). Needles in no order are searched one at a time by
    the framework's binary search where it gives NumPy's bounds for the dtype
    (its adapter's ``searches``: NumPy's; PyTorch's for int8-int64 and uint8,
    its floats put NaN needles after NaN keys; CuPy's for numbers; JAX's);
    else, and for ``descending``, sorted, searched and put back in order.
    """
    if side not in ("left", "right"):
        raise ValueError(f"libmerge.searchsorted: side must be 'left' or 'right', got {side!r}")
    if sorted_needles is None and not (descending or checked) and stream is None:
        f = framework_of(a)
        out = f.small_search(a, v, side, _GPU_LOOK_FROM) if f is not None else None
        if out is not None:  # few needles on a GPU: the framework's call, without libmerge's checks around it
            return out
    be = backend_of([a, v], stream)
    scalar = np.ndim(v) == 0 and not _on_gpu(v)
    a = be.array(a, "a")
    if scalar:  # NumPy's promotion of a scalar (weak: 5 leaves int32 keys int32, 2.5 makes them float64)
        dtype = np.result_type(be.dtype(a), v)
        v = be.array(np.full(1, v, dtype=dtype), "v") if be is HOST else be.scalar(v, a, dtype)
    else:
        v = be.array(v, "v")
    a, v = _common(be, [a, v], ("a", "v"))
    tag = _tag_of(be, a, "a")
    if checked:
        _check_sorted(be, a, "a", descending, "searchsorted")
        if sorted_needles:
            _check_sorted(be, v, "v", descending, "searchsorted")
    upper = side == "right"
    if sorted_needles is not None:
        in_order = sorted_needles
    elif be is HOST:
        in_order = be.sorted_until(tag, bool(descending), v) == v.shape[0]
    elif v.shape[0] < _GPU_LOOK_FROM:
        in_order = False  # the answer waits for the GPU: longer than searching so few needles one at a time
    else:  # the merge-path search, then each needle alone where its tiles found them out of order
        return be.search_any_order(tag, bool(descending), upper, v, a)
    if in_order:
        out = _bounds(be, v, a, upper, _A_INDEX, descending)[0]
    elif not descending and be.framework_searches(a):
        out = be.searchsorted(a, v, side)
    else:
        keys, order = _sorted_with_indices(be, v, descending)
        out = be.scatter(order, _bounds(be, keys, a, upper, _A_INDEX, descending)[0])
    return out[0] if scalar else out


def _decode(raw, result):
    if result == "index":
        return raw & _INDEX_BITS
    match = raw < 0
    if result == "match":
        return match
    return raw & _INDEX_BITS, match


def sorted_search(a, b, *, side="left", a_result="index", b_result=None, descending=False, checked=False,
                  stream=None):
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
    be = backend_of([a, b], stream)
    a, b = _common(be, [be.array(a, "a"), be.array(b, "b")], ("a", "b"))
    if checked:
        _check_sorted(be, a, "a", descending, "sorted_search")
        _check_sorted(be, b, "b", descending, "sorted_search")
    upper = side == "right"
    if b_result is None:
        form = _A_INDEX if a_result == "index" else _A_INDEX_MATCH
        return _decode(_bounds(be, a, b, upper, form, descending)[0], a_result)
    a_raw, b_raw = _bounds(be, a, b, upper, _BOTH_INDEX_MATCH, descending, with_b=True)
    return _decode(a_raw, a_result), _decode(b_raw, b_result)


def sorted_equality_count(a, b, *, descending=False, checked=False, stream=None):
    """For each element of sorted a, how many elements of sorted b equal it (int64)."""
    be = backend_of([a, b], stream)
    a, b = _common(be, [be.array(a, "a"), be.array(b, "b")], ("a", "b"))
    if checked:
        _check_sorted(be, a, "a", descending, "sorted_equality_count")
        _check_sorted(be, b, "b", descending, "sorted_equality_count")
    counts = be.empty(a, a.shape[0], _INT64)
    be.equality_count(_tag_of(be, a, "a"), bool(descending), a, b, counts)
    return be.finish(counts)
