#!/usr/bin/env python3
"""Two runs of one GPU benchmark side by side (an old build and a new one, timed in one call on one GPU):

    python3 perf/compare.py OLD.json NEW.json [--all]

Reads the JSON of libmerge_bench, libmerge_sort_bench, libmerge_search_bench
or libmerge_multiway_bench and prints, for each of libmerge's rows (every
row with --all), the old and new medians and new / old: under 1.00 is faster.
Rows match on every field but the timings. Python 3 standard library only.
"""
import json
import sys

TIMINGS = {"ms", "bytes", "check", "copy_ms", "gbs"}


def rows(path):
    with open(path) as f:
        data = json.load(f)
    out = {}
    for r in data["results"]:
        key = tuple(sorted((k, str(v)) for k, v in r.items() if k not in TIMINGS))
        out.setdefault(key, r)  # (a repeated row: the first, as the benchmark printed it)
    return data.get("device", "?"), out


def ours(key):
    impl = dict(key).get("impl", "")
    return impl in ("lm", "libmerge") or impl.startswith("lm ") or impl.startswith("lm::")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    (old_dev, old), (new_dev, new) = rows(args[0]), rows(args[1])
    print(f"old: {args[0]} ({old_dev})\nnew: {args[1]} ({new_dev})")
    ratios = []
    for key, r in new.items():
        if key not in old or not ("--all" in sys.argv or ours(key)):
            continue
        ratio = r["ms"] / old[key]["ms"]
        ratios.append(ratio)
        case = ", ".join(f"{k}={v}" for k, v in key if k != "impl")
        print(f"{case:<90} {old[key]['ms']:9.4f} {r['ms']:9.4f}  {ratio:5.3f}")
    if ratios:
        print(f"{len(ratios)} rows: new / old from {min(ratios):.3f} to {max(ratios):.3f}; "
              f"{sum(x > 1.02 for x in ratios)} more than 2% slower")


if __name__ == "__main__":
    main()
