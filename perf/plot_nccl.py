#!/usr/bin/env python3
"""Turns libmerge_nccl_bench's output (text, one table) into a PNG for docs/.

    python3 perf/plot_nccl.py BENCH.txt [BENCH_THREADS.txt] OUT.png

Left: the sort's speed-up over one GPU of the same machine (the benchmark's
own 1-GPU row) against the keys in all, for each GPU count and type; a
second file (a --threads run) is drawn dashed. Right: where the time of the
largest size goes, phase by phase, beside NCCL's plain all-to-all of the same
bytes. Needs matplotlib (Debian: python3-matplotlib).
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PHASES = ["local_sort", "splitters", "exchange", "merge"]


def read(path):
    rows, title = [], ""
    with open(path) as f:
        header = None
        for line in f:
            if line.startswith("# ") and not title:
                title = line[2:].strip()
                continue
            if line.startswith("#"):
                continue
            parts = line.split()
            if parts and parts[0] == "keys":
                header = parts
                continue
            if header is None or len(parts) != len(header) or not parts[0].startswith("2^"):
                continue
            row = dict(zip(header, parts))
            row["log2"] = int(row["keys"][2:])
            row["gpus"] = int(row["gpus"])
            for k in PHASES + ["total", "alltoall", "vs_1gpu"]:
                row[k] = float(row[k])
            rows.append(row)
    return rows, title


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[-1]
    runs = [read(p) for p in sys.argv[1:-1]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    colors = {(2, "int32"): "tab:blue", (2, "pairs"): "tab:cyan", (4, "int32"): "tab:red", (4, "pairs"): "tab:orange"}
    for n, (rows, title) in enumerate(runs):
        style = "-" if n == 0 else "--"
        label_tail = "" if n == 0 else " (a thread a GPU)"
        for (g, t), c in colors.items():
            pts = sorted((r["log2"], r["vs_1gpu"]) for r in rows if r["gpus"] == g and r["type"] == t)
            if pts:
                left.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", color=c,
                          label=f"{g} GPUs, {t}{label_tail}")
    for g in (2, 4):
        left.axhline(g, color="grey", linewidth=0.6, linestyle=":")
    left.set_xticks(sorted({r["log2"] for rows, _ in runs for r in rows}))
    left.set_xlabel("log2(keys in all)")
    left.set_ylabel("speed-up over one GPU")
    left.set_title("lm::merge_sort over NCCL")
    left.legend(fontsize=7)
    rows, title = runs[0]
    top = max(r["log2"] for r in rows)
    bars = [r for r in rows if r["log2"] == top and r["gpus"] > 1]
    labels, bottom = [], [0.0] * len(bars)
    for i, r in enumerate(bars):
        labels.append(f"{r['gpus']} GPUs\n{r['type']}")
    for phase, c in zip(PHASES, ["tab:grey", "tab:green", "tab:red", "tab:purple"]):
        vals = [r[phase] for r in bars]
        right.bar(range(len(bars)), vals, bottom=bottom, color=c, label=phase)
        bottom = [b + v for b, v in zip(bottom, vals)]
    # Where the exchange would end if it took what NCCL's plain all-to-all of
    # the same bytes takes.
    right.scatter(range(len(bars)), [r["local_sort"] + r["splitters"] + r["alltoall"] for r in bars], marker="_",
                  s=600, color="black", label="exchange at NCCL's plain all-to-all time", zorder=3)
    right.set_xticks(range(len(bars)))
    right.set_xticklabels(labels)
    right.set_ylabel("ms (slowest rank, median)")
    right.set_title(f"2^{top} keys in all: where the time goes")
    right.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
