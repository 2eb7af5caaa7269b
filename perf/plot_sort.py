#!/usr/bin/env python3
"""Turns libmerge_sort_bench JSON into a PNG plot for docs/.

    python3 perf/plot_sort.py RESULTS.json OUT_DIR

From a default run it writes OUT_DIR/gpu-merge-sort.png: every
implementation's speed relative to cub::DeviceMergeSort (its time over
theirs, higher is better) against log2(N), one panel per key type and input
shape. Needs matplotlib (Debian: python3-matplotlib; scripts/plot.sh
installs it).
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

PEER = "cub::DeviceMergeSort"
TICKS = [0.5, 0.75, 1, 1.25, 1.5, 2, 3, 4, 8, 16, 32]


def unique(values):
    return list(dict.fromkeys(values))


def plot_sort(rows, device, out):
    panels = unique((r["type"], r["shape"]) for r in rows)
    cols = min(4, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
    for idx, (type_name, shape) in enumerate(panels):
        ax = axes[idx // cols][idx % cols]
        sel = [r for r in rows if r["type"] == type_name and r["shape"] == shape]
        peer = {r["n"]: r["ms"] for r in sel if r["impl"] == PEER}
        for impl in unique(r["impl"] for r in sel):
            pts = sorted((r["n"].bit_length() - 1, peer[r["n"]] / r["ms"]) for r in sel
                         if r["impl"] == impl and r["ms"] > 0 and r["n"] in peer)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=impl)
        ax.axhline(1, color="gray", linestyle="--", linewidth=1)
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_locator(FixedLocator(TICKS))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_title(f"{type_name} {shape}", fontsize=9)
        ax.set_xlabel("log2(N)")
        ax.set_ylabel(f"speed relative to {PEER}", fontsize=7)
        ax.legend(fontsize=6)
    for idx in range(len(panels), nrows * cols):
        axes[idx // cols][idx % cols].axis("off")
    fig.suptitle(f"{device}: merge sort, cold L2, median (higher is better)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = json.loads(Path(sys.argv[1]).read_text())
    out_dir = Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = data["results"]
    if not any(r["impl"] == PEER for r in rows):
        sys.exit(f"no {PEER} rows in {sys.argv[1]}")
    plot_sort(rows, data.get("device", "GPU"), out_dir / "gpu-merge-sort.png")
    print("wrote", out_dir / "gpu-merge-sort.png")


if __name__ == "__main__":
    main()
