"""Draws perf/python/bench.py's JSON: each row's speed-up over its peer, and its table in Markdown.

    python3 perf/python/plot.py RESULTS.json OUT.png [TABLE.md]
"""

import json
import sys


def table(data):
    meta = data["meta"]
    compute = f"cuda.compute (cuda-cccl {meta['cuda.compute']}); " if meta.get("cuda.compute") else ""
    lines = [f"{meta['gpu']}; PyTorch {meta['torch']}, CuPy {meta['cupy']}, JAX {meta['jax']}; {compute}"
             f"the median of {meta['runs']} runs.", "",
             "| case | libmerge (ms) | peer | peer (ms) | peer / libmerge |", "| --- | ---: | --- | ---: | ---: |"]
    for r in data["rows"]:
        case = r["case"].replace("|", "\\|")
        lines.append(f"| {case} | {r['libmerge_ms']:.4f} | `{r['peer']}` | {r['peer_ms']:.4f} | "
                     f"{r['speedup']:.2f}x |")
    return "\n".join(lines) + "\n"


def main():
    data = json.load(open(sys.argv[1]))
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as f:
            f.write(table(data))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = data["rows"]
    labels = [f"{r['case']}\nagainst {r['peer']}" for r in rows]
    fig, ax = plt.subplots(figsize=(10, 0.55 * len(rows) + 1.2))
    ax.barh(range(len(rows)), [r["speedup"] for r in rows], color="#3b7dd8")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("peer's time / libmerge's (above 1: libmerge faster)")
    ax.set_title(f"libmerge for Python on {data['meta']['gpu']}")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110, bbox_inches="tight")


if __name__ == "__main__":
    main()
