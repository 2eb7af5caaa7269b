#!/usr/bin/env python3
"""Turns libmerge_search_bench JSON into PNG plots for docs/.

    python3 perf/plot_search.py RESULTS.json OUT_DIR

From a default or --quick run (section "search") it writes
OUT_DIR/gpu-sorted-search.png: % of copy rate against log2(N) for every
implementation, one panel per case (rows) and key type and density (columns).
From a --tune run (section "crossover") it writes
OUT_DIR/gpu-sorted-search-crossover.png: ms against k (|A| = |B|/k) for the
dense path, the per-needle path (every box tried), lm's public call and
Thrust, one panel per case, key type and |B|. Needs matplotlib (Debian:
python3-matplotlib; scripts/plot.sh installs it).
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def unique(values):
    return list(dict.fromkeys(values))


def plot_search(rows, device, out):
    cases = unique(r["op"] for r in rows)
    columns = unique((r["type"], r["density"]) for r in rows)
    fig, axes = plt.subplots(len(cases), len(columns), figsize=(3.6 * len(columns), 3.0 * len(cases)),
                             squeeze=False, sharex=True)
    for i, case in enumerate(cases):
        for j, (type_name, density) in enumerate(columns):
            ax = axes[i][j]
            sel = [r for r in rows if r["op"] == case and r["type"] == type_name and r["density"] == density]
            for impl in unique(r["impl"] for r in sel):
                pts = sorted((r["n"].bit_length() - 1, 100.0 * r["copy_ms"] / r["ms"]) for r in sel
                             if r["impl"] == impl and r["ms"] > 0)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl)
            ax.axhline(100, color="gray", linestyle="--", linewidth=1)
            ax.set_title(f"{case}\n{type_name} {density}", fontsize=8)
            if i == len(cases) - 1:
                ax.set_xlabel("log2(|A| + |B|)")
            if j == 0:
                ax.set_ylabel("% of copy rate")
            ax.legend(fontsize=6)
    fig.suptitle(f"{device}: sorted search, cold L2, median (higher is better; sparse rows count "
                 "the merge path's bytes)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def key_shape(r):
    """The keys' distribution of a crossover row: "steps" (runs of equal keys,
    --sparse) or uniform; each gets panels of its own."""
    return "steps" if "steps" in r["density"] else ""


def plot_crossover(rows, device, out):
    panels = unique((r["op"], r["type"], r["nb"], key_shape(r)) for r in rows)
    cols = min(3, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.8 * nrows), squeeze=False)
    for idx, (case, type_name, nb, shape) in enumerate(panels):
        ax = axes[idx // cols][idx % cols]
        sel = [r for r in rows if r["op"] == case and r["type"] == type_name and r["nb"] == nb
               and key_shape(r) == shape]
        for impl in unique(r["impl"] for r in sel):
            pts = sorted((r["nb"] // r["na"], r["ms"]) for r in sel if r["impl"] == impl)
            style = "--" if impl.startswith("per-needle ") else "-"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", markersize=3, label=impl)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("k (|A| = |B| / k)")
        ax.set_ylabel("ms (median)")
        keys = ", keys in steps" if shape else ""
        ax.set_title(f"{case} {type_name}{keys}, |B| = 2^{nb.bit_length() - 1}", fontsize=9)
        ax.legend(fontsize=6)
    for idx in range(len(panels), nrows * cols):
        axes[idx // cols][idx % cols].axis("off")
    fig.suptitle(f"{device}: dense merge-path search against the per-needle search (lower is better)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = json.loads(Path(sys.argv[1]).read_text())
    out_dir = Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    device = data.get("device", "GPU")
    search = [r for r in data["results"] if r["section"] == "search"]
    crossover = [r for r in data["results"] if r["section"] == "crossover"]
    if search:
        plot_search(search, device, out_dir / "gpu-sorted-search.png")
        print("wrote", out_dir / "gpu-sorted-search.png")
    if crossover:
        plot_crossover(crossover, device, out_dir / "gpu-sorted-search-crossover.png")
        print("wrote", out_dir / "gpu-sorted-search-crossover.png")
    if not search and not crossover:
        sys.exit("no search or crossover rows in " + sys.argv[1])


if __name__ == "__main__":
    main()
