#!/usr/bin/env python3
"""Turns libmerge_omp_bench JSON into PNG plots for docs/.

    python3 perf/plot_omp.py omp-bench.json OUT_DIR

Writes OUT_DIR/omp-scaling.png (time against thread count at the reference
size, one panel per algorithm) and OUT_DIR/omp-sizes.png (throughput against
n at the largest thread count). Needs matplotlib (Debian: python3-matplotlib).
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ALGORITHMS = ["merge_sort", "merge_sort_by_key", "merge", "sorted_search"]
STYLE = {
    "lm::omp": dict(color="tab:blue", marker="o", linewidth=2),
    "__gnu_parallel::stable_sort": dict(color="tab:orange", marker="s"),
    "__gnu_parallel::stable_sort (pairs)": dict(color="tab:orange", marker="s"),
    "__gnu_parallel::merge": dict(color="tab:orange", marker="s"),
    "omp for std::lower_bound": dict(color="tab:orange", marker="s"),
    "thrust::stable_sort (omp)": dict(color="tab:green", marker="^"),
    "thrust::stable_sort_by_key (omp)": dict(color="tab:green", marker="^"),
    "thrust::merge (omp)": dict(color="tab:green", marker="^"),
    "thrust::lower_bound (omp)": dict(color="tab:green", marker="^"),
}


def label(impl):
    # matplotlib leaves labels that start with "_" out of legends
    return "libstdc++ " + impl if impl.startswith("_") else impl


def count(n):
    e = len(str(n)) - 1
    return f"10^{e}" if n == 10**e else f"{n:,}"


def lines(rows, x_key):
    by_impl = {}
    for r in rows:
        if r["impl"] in STYLE:
            by_impl.setdefault(r["impl"], []).append((r[x_key], r["ms"], r["n"]))
    return {k: sorted(v) for k, v in by_impl.items()}


def plot_scaling(data, out):
    n_ref = data["reference_n"]
    panels = [a for a in ALGORITHMS
              if len({r["threads"] for r in data["results"] if r["algorithm"] == a and r["type"] == "int32"
                      and r["n"] == n_ref}) > 1]
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4), squeeze=False)
    for ax, a in zip(axes[0], panels):
        rows = [r for r in data["results"] if r["algorithm"] == a and r["type"] == "int32" and r["n"] == n_ref]
        for impl, pts in lines(rows, "threads").items():
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label(impl), **STYLE[impl])
        threads = sorted({r["threads"] for r in rows})
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(threads)
        ax.set_xticklabels([str(t) for t in threads])
        ax.set_xlabel("threads")
        ax.set_ylabel("ms (median, lower is better)")
        ax.set_title(f"{a}, int32, n = {count(n_ref)}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{data['cpu']} ({data['hardware_threads']} hardware threads)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_sizes(data, out):
    t_max = data["max_threads"]
    panels = [a for a in ALGORITHMS
              if len({r["n"] for r in data["results"] if r["algorithm"] == a and r["type"] == "int32"
                      and r["threads"] == t_max}) > 1]
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4), squeeze=False)
    for ax, a in zip(axes[0], panels):
        rows = [r for r in data["results"] if r["algorithm"] == a and r["type"] == "int32" and r["threads"] == t_max]
        for impl, pts in lines(rows, "n").items():
            ax.plot([p[0] for p in pts], [p[0] / (p[1] * 1e3) for p in pts], label=label(impl), **STYLE[impl])
        ax.set_xscale("log")
        ax.set_xlabel("n (elements)")
        ax.set_ylabel("million elements / s (higher is better)")
        ax.set_title(f"{a}, int32, {t_max} threads")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{data['cpu']} ({data['hardware_threads']} hardware threads)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    plot_scaling(data, out / "omp-scaling.png")
    plot_sizes(data, out / "omp-sizes.png")
    print(f"wrote {out}/omp-scaling.png and {out}/omp-sizes.png")


if __name__ == "__main__":
    main()
