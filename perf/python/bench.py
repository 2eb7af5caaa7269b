"""libmerge's Python functions on the GPU against PyTorch's, CuPy's and JAX's own (issue 61's table).

    python3 perf/python/bench.py OUT.json [--quick] [--only SECTION,...]

SECTION: searchsorted, merge, lexsort, sort, small, compute (default: all).

Each case times libmerge's default call (no options beyond the issue's) and
each peer in the same run: CUDA events on the default stream around one call,
queued behind a sleeping kernel so that they time the GPU's work and not the
host's queuing (JAX: the wall clock around the call and block_until_ready), after warm-up,
the median of many runs, alternating two input sets larger than the L2
cache; every output is checked against the peer's once. Small calls (2^10)
are timed as a caller sees them: the wall clock over many calls, then one
synchronize. cuda.compute (CCCL's Python layer) is timed where it is
installed. Writes the rows as JSON; plot.py draws them.
"""

import importlib.metadata
import json
import os
import statistics
import sys
import time

import torch

import libmerge as lm

QUICK = "--quick" in sys.argv
RUNS = 5 if QUICK else 21


def _jax():
    # JAX takes 75% of the GPU at its first call by default, which left cuda.compute's 2^27 rows out of memory
    os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.5")
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        return jax
    except ImportError:
        return None


def _cupy():
    try:
        import cupy
        return cupy
    except ImportError:
        return None


def _compute():
    """CCCL's Python layer (cuda.compute), where it is installed: merge_sort and per-needle lower_bound."""
    try:
        import cuda.compute as cc
        cc.OpKind  # noqa: B018 (raises where the bindings found no CUDA)
        return cc
    except Exception as e:  # noqa: BLE001 (its rows are left out; the reason is printed)
        print(f"bench: no cuda.compute rows: {type(e).__name__}: {e}", flush=True)
        return None


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def time_gpu(f, inputs):
    """Median ms of f(*inputs[i % 2]) by CUDA events on the default stream (torch's and CuPy's)."""
    for i in range(3):
        f(*inputs[i % 2])
    times = []
    for i in range(RUNS):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(200_000)  # the GPU busy while the host queues the call: its time, not the launch's
        start.record()
        f(*inputs[i % 2])
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def time_wall(f, inputs, ready):
    """Median ms of f(*inputs[i % 2]) by the wall clock, ready() waiting for the result (JAX)."""
    for i in range(3):
        ready(f(*inputs[i % 2]))
    times = []
    for i in range(RUNS):
        t = time.perf_counter()
        ready(f(*inputs[i % 2]))
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def time_small(f, args, sync, calls=2000):
    """Mean µs a call of f(*args) takes, as a loop of calls sees it."""
    for _ in range(50):
        f(*args)
    sync()
    t = time.perf_counter()
    for _ in range(calls):
        f(*args)
    sync()
    return (time.perf_counter() - t) / calls * 1e6


def sorted_int32(n, seed, hi=1 << 31):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.sort(torch.randint(-hi, hi - 1, (n,), device="cuda", dtype=torch.int32, generator=g)).values


def check(name, got, want):
    if not torch.equal(torch.as_tensor(got, device="cuda"), torch.as_tensor(want, device="cuda")):
        raise SystemExit(f"bench: {name}: libmerge's result differs from the peer's")


def cc_lower_bound(cc, cp, a, v):
    """cuda.compute.lower_bound as its users call it: the output allocated, one call."""
    out = cp.empty(v.shape[0], dtype=cp.uint64)  # (it takes unsigned indices alone)
    cc.lower_bound(d_data=a, num_items=a.shape[0], d_values=v, num_values=v.shape[0], d_out=out)
    return out


def cc_merge_by_sort(cc, cp, a, b):
    """A merge as cuda.compute offers it: merge_sort of the concatenation."""
    keys = cp.concatenate([a, b])
    out = cp.empty_like(keys)
    cc.merge_sort(d_in_keys=keys, d_out_keys=out, num_items=keys.shape[0], op=cc.OpKind.LESS)
    return out


def rows_searchsorted(rows, cp, jax):
    for log in (24, 27):
        n = 1 << log
        inputs = [(sorted_int32(n, 2 * s), sorted_int32(n, 2 * s + 1)) for s in range(2)]
        a, v = inputs[0]
        check("searchsorted", lm.searchsorted(a, v), torch.searchsorted(a, v))
        case = f"searchsorted, sorted needles, |A| = |B| = 2^{log}, int32"
        ours = time_gpu(lambda a, v: lm.searchsorted(a, v), inputs)
        peer = time_gpu(lambda a, v: torch.searchsorted(a, v), inputs)
        rows.append({"case": case, "libmerge_ms": ours, "peer": "torch.searchsorted", "peer_ms": peer})
        told = time_gpu(lambda a, v: lm.searchsorted(a, v, sorted_needles=True), inputs)
        rows.append({"case": case + " (sorted_needles=True)", "libmerge_ms": told,
                     "peer": "torch.searchsorted", "peer_ms": peer})
        if cp is not None:
            ci = [(cp.asarray(a), cp.asarray(v)) for a, v in inputs]
            rows.append({"case": case, "libmerge_ms": ours, "peer": "cupy.searchsorted",
                         "peer_ms": time_gpu(lambda a, v: cp.searchsorted(a, v), ci)})
        if jax is not None:
            ji = [(jax.dlpack.from_dlpack(a), jax.dlpack.from_dlpack(v)) for a, v in inputs]
            ours_jax = time_wall(lambda a, v: lm.searchsorted(a, v), ji, lambda r: r.block_until_ready())
            for method in ("scan", "scan_unrolled", "sort"):
                f = jax.jit(lambda a, v, m=method: jax.numpy.searchsorted(a, v, method=m))
                rows.append({"case": case + " (JAX arrays, wall clock)", "libmerge_ms": ours_jax,
                             "peer": f"jnp.searchsorted(method='{method}')",
                             "peer_ms": time_wall(f, ji, lambda r: r.block_until_ready())})


def rows_merge(rows):
    n = 1 << 27
    inputs = [(sorted_int32(n, 10 + 2 * s), sorted_int32(n, 11 + 2 * s)) for s in range(2)]
    a, b = inputs[0]
    check("merge", lm.merge(a, b), torch.sort(torch.cat([a, b]), stable=True).values)
    rows.append({"case": "merge of two sorted 2^27 int32 arrays", "libmerge_ms": time_gpu(lm.merge, inputs),
                 "peer": "torch.sort(torch.cat(...), stable=True)",
                 "peer_ms": time_gpu(lambda a, b: torch.sort(torch.cat([a, b]), stable=True), inputs)})


def rows_compute(rows, cp, cc):
    """CCCL's Python layer on CuPy arrays: per-needle lower_bound, and merge_sort for a merge."""
    if cp is None or cc is None:
        return
    cp.get_default_memory_pool().free_all_blocks()  # (JAX holds most of the GPU: the pools' caches leave too little)
    torch.cuda.empty_cache()
    for log in (24, 27):
        n = 1 << log
        inputs = [(cp.asarray(sorted_int32(n, 2 * s)), cp.asarray(sorted_int32(n, 2 * s + 1))) for s in range(2)]
        want = cc_lower_bound(cc, cp, *inputs[0]).view(cp.int64)
        check("cuda.compute.lower_bound", lm.searchsorted(*inputs[0]), want)
        rows.append({"case": f"searchsorted, sorted needles, |A| = |B| = 2^{log}, int32 (CuPy arrays)",
                     "libmerge_ms": time_gpu(lambda a, v: lm.searchsorted(a, v), inputs),
                     "peer": "cuda.compute.lower_bound",
                     "peer_ms": time_gpu(lambda a, v: cc_lower_bound(cc, cp, a, v), inputs)})
    n = 1 << 27
    inputs = [(cp.asarray(sorted_int32(n, 10 + 2 * s)), cp.asarray(sorted_int32(n, 11 + 2 * s))) for s in range(2)]
    check("cuda.compute.merge_sort", lm.merge(*inputs[0]), cc_merge_by_sort(cc, cp, *inputs[0]))
    rows.append({"case": "merge of two sorted 2^27 int32 arrays (CuPy arrays)",
                 "libmerge_ms": time_gpu(lm.merge, inputs), "peer": "cuda.compute.merge_sort(concatenation)",
                 "peer_ms": time_gpu(lambda a, b: cc_merge_by_sort(cc, cp, a, b), inputs)})


def rows_lexsort(rows, cp):
    n = 1 << 26
    g = torch.Generator(device="cuda").manual_seed(5)
    inputs = [tuple(torch.randint(0, 1 << 20, (n,), device="cuda", dtype=torch.int32, generator=g) for _ in range(2))
              for _ in range(2)]
    ours = time_gpu(lambda x, y: lm.lexsort([x, y]), inputs)
    if cp is not None:
        ci = [tuple(cp.asarray(c) for c in cols) for cols in inputs]
        check("lexsort", lm.lexsort(list(ci[0])), cp.lexsort(cp.stack(ci[0])))
        rows.append({"case": "lexsort of 2 int32 columns, 2^26 rows", "libmerge_ms": ours, "peer": "cupy.lexsort",
                     "peer_ms": time_gpu(lambda x, y: cp.lexsort(cp.stack([x, y])), ci)})


def rows_sort(rows, cp):
    n = 1 << 28
    g = torch.Generator(device="cuda").manual_seed(6)
    inputs = [(torch.randint(-(1 << 31), (1 << 31) - 1, (n,), device="cuda", dtype=torch.int32, generator=g),)
              for _ in range(2)]
    x = inputs[0][0]
    check("sort", lm.sort(x), torch.sort(x, stable=True).values)
    check("argsort", lm.argsort(x), torch.argsort(x, stable=True))
    case = "2^28 random int32 (radix sorts both; not a target)"
    ours = time_gpu(lm.sort, inputs)
    rows.append({"case": f"sort, {case}", "libmerge_ms": ours, "peer": "torch.sort(stable=True)",
                 "peer_ms": time_gpu(lambda x: torch.sort(x, stable=True), inputs)})
    rows.append({"case": f"argsort, {case}", "libmerge_ms": time_gpu(lm.argsort, inputs),
                 "peer": "torch.argsort(stable=True)",
                 "peer_ms": time_gpu(lambda x: torch.argsort(x, stable=True), inputs)})
    if cp is not None:
        ci = [(cp.asarray(x),) for (x,) in inputs]
        check("cupy.sort", lm.sort(ci[0][0]), cp.sort(ci[0][0]))
        rows.append({"case": f"sort, {case} (CuPy arrays)", "libmerge_ms": time_gpu(lm.sort, ci),
                     "peer": "cupy.sort", "peer_ms": time_gpu(cp.sort, ci)})


def rows_small(rows):
    a, b = sorted_int32(1 << 10, 20), sorted_int32(1 << 10, 21)
    x = torch.randint(0, 1000, (1 << 10,), device="cuda", dtype=torch.int32)
    sync = torch.cuda.synchronize
    for case, ours, peer, theirs in (
            ("sort", lambda: lm.sort(x), "torch.sort(stable=True)", lambda: torch.sort(x, stable=True)),
            ("searchsorted, sorted needles", lambda: lm.searchsorted(a, b), "torch.searchsorted",
             lambda: torch.searchsorted(a, b)),
            ("merge", lambda: lm.merge(a, b), "torch.sort(torch.cat(...), stable=True)",
             lambda: torch.sort(torch.cat([a, b]), stable=True))):
        rows.append({"case": f"{case}, 2^10 int32 (a call, wall clock)", "libmerge_ms": time_small(ours, (), sync) / 1e3,
                     "peer": peer, "peer_ms": time_small(theirs, (), sync) / 1e3})


def main():
    out = sys.argv[1]
    rows = []
    # (cp, jax and cc are bound below, once the arguments are checked: the frameworks take seconds to start)
    sections = {"searchsorted": lambda: rows_searchsorted(rows, cp, jax), "merge": lambda: rows_merge(rows),
                "lexsort": lambda: rows_lexsort(rows, cp), "sort": lambda: rows_sort(rows, cp),
                "small": lambda: rows_small(rows), "compute": lambda: rows_compute(rows, cp, cc)}
    only = list(sections)
    if "--only" in sys.argv:
        at = sys.argv.index("--only") + 1
        if at == len(sys.argv):
            sys.exit("bench.py: --only needs a list of sections, e.g. --only sort,small")
        only = sys.argv[at].split(",")
    unknown = [name for name in only if name not in sections]
    if unknown:
        sys.exit(f"bench.py: no section {unknown}; the sections: {', '.join(sections)}")
    cp, jax, cc = _cupy(), _jax(), _compute()
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cupy": cp.__version__ if cp is not None else None, "jax": jax.__version__ if jax is not None else None,
            "cuda.compute": _version("cuda-cccl") if cc is not None else None, "runs": RUNS,
            "sections": only}
    for name in only:
        try:
            sections[name]()
        except Exception as e:  # noqa: BLE001 (the other sections still run; the error is printed)
            print(f"bench: a section failed: {type(e).__name__}: {e}", flush=True)
        for r in rows:
            r["speedup"] = r["peer_ms"] / r["libmerge_ms"]
        with open(out, "w") as f:  # after each section: a run cut short keeps what it measured
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    for r in rows:
        print(f"{r['case']:<70} {r['libmerge_ms']:9.4f} ms  {r['peer']:<42} {r['peer_ms']:9.4f} ms  "
              f"{r['speedup']:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
