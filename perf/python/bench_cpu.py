#!/usr/bin/env python3
"""libmerge's Python functions against NumPy's on the CPU, as users call both.

    python perf/python/bench_cpu.py [--log2 N] [--runs R] [--json FILE]

Each row: the median of R timed calls after one warm-up, on fresh copies of
the same random int32 / float64 inputs; every output checked once against
NumPy's. libmerge runs on OpenMP's default team (OMP_NUM_THREADS), NumPy on
one thread.
"""
import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

import libmerge as lm


def median_ms(f, runs):
    f()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def rows(n, runs):
    rng = np.random.default_rng(7)
    out = []
    for dtype in (np.int32, np.float64):
        x = (rng.integers(0, 2**31 - 1, n) if dtype == np.int32 else rng.standard_normal(n)).astype(dtype)
        a, b = np.sort(x[: n // 2]), np.sort(x[n // 2:])
        v = np.sort(rng.permutation(x)[: n // 2])
        cols = [rng.integers(0, 1000, n).astype(np.int32), rng.integers(0, 1000, n).astype(np.int32)]
        cases = [
            ("sort", lambda: lm.sort(x), lambda: np.sort(x, kind="stable"), "np.sort(kind='stable')"),
            ("argsort", lambda: lm.argsort(x), lambda: np.argsort(x, kind="stable"), "np.argsort(kind='stable')"),
            ("merge", lambda: lm.merge(a, b), lambda: np.sort(np.concatenate([a, b]), kind="stable"),
             "np.sort(np.concatenate, kind='stable')"),
            ("searchsorted, sorted needles", lambda: lm.searchsorted(a, v), lambda: np.searchsorted(a, v),
             "np.searchsorted"),
            ("lexsort, 2 int32 columns", lambda: lm.lexsort(cols), lambda: np.lexsort(cols), "np.lexsort"),
        ]
        for name, ours, theirs, peer in cases:
            if name.startswith("lexsort") and dtype != np.int32:
                continue
            np.testing.assert_array_equal(ours(), theirs())
            t_ours, t_peer = median_ms(ours, runs), median_ms(theirs, runs)
            out.append({"call": name, "dtype": np.dtype(dtype).name, "n": n, "libmerge_ms": t_ours,
                        "peer": peer, "peer_ms": t_peer, "speedup": t_peer / t_ours})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2", type=int, default=24)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--json")
    args = p.parse_args()
    result = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
              "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "default"), "numpy": np.__version__,
              "rows": rows(1 << args.log2, args.runs)}
    print(f"{result['cpus']} CPUs, OMP_NUM_THREADS={result['omp_num_threads']}, NumPy {np.__version__}, "
          f"n = 2^{args.log2}")
    print(f"{'call':32s} {'dtype':8s} {'libmerge ms':>12s} {'NumPy ms':>10s} {'speedup':>8s}  NumPy call")
    for r in result["rows"]:
        print(f"{r['call']:32s} {r['dtype']:8s} {r['libmerge_ms']:12.2f} {r['peer_ms']:10.2f} "
              f"{r['speedup']:7.2f}x  {r['peer']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
