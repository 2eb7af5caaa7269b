#!/usr/bin/env python3
"""Turns libmerge_bench JSON into PNG plots for docs/.

    python3 perf/plot.py RESULTS.json OUT_DIR

Writes OUT_DIR/serial-vs-std.png when the JSON has CPU rows and
OUT_DIR/gpu-merge.png when it has GPU rows. Needs matplotlib (Debian:
python3-matplotlib; scripts/plot.sh installs it).
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_cpu(rows, out):
    algorithms = list(dict.fromkeys(r["algorithm"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.38
    for k, (label, is_std) in enumerate([("std::", True), ("libmerge serial", False)]):
        ms = []
        for a in algorithms:
            match = [r["ms"] for r in rows if r["algorithm"] == a and r["impl"].startswith("std::") == is_std]
            ms.append(match[0] if match else 0)
        ax.bar([i + (k - 0.5) * width for i in range(len(algorithms))], ms, width, label=label)
    ax.set_xticks(range(len(algorithms)))
    ax.set_xticklabels(algorithms, rotation=15, ha="right")
    ax.set_ylabel("ms (median)")
    n = rows[0]["n"]
    ax.set_title(f"Serial backend vs std:: on {n:,} int32 keys (lower is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_gpu(rows, device, copy_gbs, out):
    cases = list(dict.fromkeys((r["algorithm"], r["type"]) for r in rows))
    fig, axes = plt.subplots(1, len(cases), figsize=(5 * len(cases), 4), squeeze=False)
    for ax, (algorithm, type_name) in zip(axes[0], cases):
        for impl in dict.fromkeys(r["impl"] for r in rows):
            pts = sorted((r["n"], r["bytes"] / (r["ms"] * 1e6)) for r in rows
                         if r["algorithm"] == algorithm and r["type"] == type_name and r["impl"] == impl)
            if pts:
                ax.plot([p[0].bit_length() - 1 for p in pts], [p[1] for p in pts], marker="o", label=impl)
        if copy_gbs:
            ax.axhline(copy_gbs, color="gray", linestyle="--", linewidth=1, label="device copy")
        ax.set_xlabel("log2(total elements)")
        ax.set_ylabel("GB/s (read + write)")
        ax.set_title(f"{algorithm} {type_name}")
        ax.legend(fontsize=8)
    fig.suptitle(f"{device}: cold L2, median")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = json.loads(Path(sys.argv[1]).read_text())
    out_dir = Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    cpu = [r for r in data["results"] if r["section"] == "cpu"]
    gpu = [r for r in data["results"] if r["section"] == "gpu"]
    if cpu:
        plot_cpu(cpu, out_dir / "serial-vs-std.png")
        print("wrote", out_dir / "serial-vs-std.png")
    if gpu:
        plot_gpu(gpu, data.get("device", "GPU"), data.get("copy_gbs", 0), out_dir / "gpu-merge.png")
        print("wrote", out_dir / "gpu-merge.png")


if __name__ == "__main__":
    main()
