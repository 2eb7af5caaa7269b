#!/usr/bin/env python3
"""Writes README.md's tables of figures from the benchmarks' JSON.

    python3 scripts/readme_tables.py            rewrite README.md's tables
    python3 scripts/readme_tables.py --check    exit 1 if README.md differs from the JSON

docs/results/README-tables.json names the JSON files (written by perf/'s
benchmarks) for each table; the tables sit in README.md between
'<!-- tables:NAME begin -->' and '<!-- tables:NAME end -->' (NAME: gpu, omp,
serial). To update the README after a new benchmark run: put the run's JSON
in docs/results, name it in the manifest, run this script. Python 3
standard library only (the --check runs as a CPU test).
"""
import argparse
import difflib
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
MANIFEST = RESULTS / "README-tables.json"
README = ROOT / "README.md"

# The GPU table: (source, call, keys, lm's impl, peer's impl, peer's name,
# peer's library, row filter). Each cell is the peer's time over lm's at one
# size, so above 1 means libmerge is faster.
GPU_SIZES = [20, 24, 28]
GPU_ROWS = [
    ("sort", "`merge_sort`", "int32, random", "lm", "cub::DeviceMergeSort", "`DeviceMergeSort::SortKeys`", "cub",
     {"type": "int32", "shape": "random"}),
    ("sort", "`merge_sort`", "int32, sorted runs of 2^16", "lm", "cub::DeviceMergeSort",
     "`DeviceMergeSort::SortKeys`", "cub", {"type": "int32", "shape": "runs2^16"}),
    ("sort", "`merge_sort`", "int32, sorted", "lm", "cub::DeviceMergeSort", "`DeviceMergeSort::SortKeys`", "cub",
     {"type": "int32", "shape": "sorted"}),
    ("sort", "`merge_sort`", "int64, random", "lm", "cub::DeviceMergeSort", "`DeviceMergeSort::SortKeys`", "cub",
     {"type": "int64", "shape": "random"}),
    ("sort", "`merge_sort`", "16-byte structs, random", "lm", "cub::DeviceMergeSort",
     "`DeviceMergeSort::SortKeys`", "cub", {"type": "record16", "shape": "random"}),
    ("sort", "`merge_sort_by_key`", "int32/int32, random", "lm", "cub::DeviceMergeSort",
     "`DeviceMergeSort::SortPairs`", "cub", {"type": "int32/int32", "shape": "random"}),
    ("sort_lm", "`sort`", "int32, random", "lm::sort", "thrust::sort, natural order", "`thrust::sort` (radix)",
     "thrust", {"type": "int32", "shape": "random"}),
    ("sort_lm", "`sort`", "int32, reversed", "lm::sort", "thrust::sort, natural order", "`thrust::sort` (radix)",
     "thrust", {"type": "int32", "shape": "reversed"}),
    ("sort_lm", "`sort`", "int32, sorted", "lm::sort", "thrust::sort, natural order", "`thrust::sort` (radix)",
     "thrust", {"type": "int32", "shape": "sorted"}),
    ("sort_lm", "`sort`", "int64, random", "lm::sort", "thrust::sort, natural order", "`thrust::sort` (radix)",
     "thrust", {"type": "int64", "shape": "random"}),
    ("sort_lm", "`sort`", "float, random", "lm::sort", "thrust::sort, natural order", "`thrust::sort` (radix)",
     "thrust", {"type": "float", "shape": "random"}),
    ("sort_lm", "`sort_by_key`", "int32/int32, random", "lm::sort", "thrust::sort, natural order",
     "`thrust::sort_by_key` (radix)", "thrust", {"type": "int32/int32", "shape": "random"}),
    ("merge", "`merge`", "int32", "libmerge", "cub::DeviceMerge", "`DeviceMerge::MergeKeys`", "cub",
     {"algorithm": "merge", "type": "int32"}),
    ("merge", "`merge`", "int64", "libmerge", "cub::DeviceMerge", "`DeviceMerge::MergeKeys`", "cub",
     {"algorithm": "merge", "type": "int64"}),
    ("merge", "`merge_by_key`", "int32/int32", "libmerge", "cub::DeviceMerge", "`DeviceMerge::MergePairs`", "cub",
     {"algorithm": "merge_by_key", "type": "int32/int32"}),
    ("merge_newest", "`merge`", "int32", "libmerge", "cub::DeviceMerge", "`DeviceMerge::MergeKeys`", "cub",
     {"algorithm": "merge", "type": "int32"}),
    ("merge_newest", "`merge_by_key`", "int32/int32", "libmerge", "cub::DeviceMerge", "`DeviceMerge::MergePairs`", "cub",
     {"algorithm": "merge_by_key", "type": "int32/int32"}),
    ("multiway", "`multiway_merge`", "int32, K = 4 ranges", "lm::multiway_merge", "cub::DeviceMerge tree",
     "tree of `DeviceMerge::MergeKeys`", "cub", {"type": "int32", "k": 4}),
    ("multiway", "`multiway_merge`", "int32, K = 8 ranges", "lm::multiway_merge", "cub::DeviceMerge tree",
     "tree of `DeviceMerge::MergeKeys`", "cub", {"type": "int32", "k": 8}),
    ("multiway", "`multiway_merge`", "int32, K = 64 ranges", "lm::multiway_merge", "cub::DeviceMerge tree",
     "tree of `DeviceMerge::MergeKeys`", "cub", {"type": "int32", "k": 64}),
    ("multiway", "`multiway_merge_by_key`", "int32/int32, K = 64 ranges", "lm::multiway_merge", "cub::DeviceMerge tree",
     "tree of `DeviceMerge::MergePairs`", "cub", {"type": "int32/int32", "k": 64}),
    ("multiway", "`multiway_merge`", "int32, K = 1024 ranges", "lm::multiway_merge", "cub::DeviceMerge tree",
     "tree of `DeviceMerge::MergeKeys`", "cub", {"type": "int32", "k": 1024}),
    ("multiway", "`multiway_merge`", "int32, K = 1024 ranges", "lm::multiway_merge", "cub::DeviceMergeSort",
     "`DeviceMergeSort::SortKeysCopy` of the concatenation", "cub", {"type": "int32", "k": 1024}),
    ("multiway_newest", "`multiway_merge`", "int32, K = 64 ranges", "lm::multiway_merge", "cub::DeviceMerge tree",
     "tree of `DeviceMerge::MergeKeys`", "cub", {"type": "int32", "k": 64}),
    ("multiway_newest", "`multiway_merge_by_key`", "int32/int32, K = 4 ranges", "lm::multiway_merge",
     "cub::DeviceMerge tree", "tree of `DeviceMerge::MergePairs`", "cub", {"type": "int32/int32", "k": 4}),
    ("multiway_newest", "`multiway_merge_by_key`", "int32/int32, K = 64 ranges", "lm::multiway_merge",
     "cub::DeviceMerge tree", "tree of `DeviceMerge::MergePairs`", "cub", {"type": "int32/int32", "k": 64}),
    ("search", "`sorted_search<lower>`", "int32, \\|A\\| = \\|B\\|", "lm", "thrust::lower_bound",
     "`thrust::lower_bound`", "thrust", {"op": "search<lower,index,none>", "type": "int32", "density": "|A|=|B|"}),
    ("search", "`sorted_search<lower>`", "int32, \\|A\\| = \\|B\\|/64", "lm", "thrust::lower_bound",
     "`thrust::lower_bound`", "thrust", {"op": "search<lower,index,none>", "type": "int32", "density": "|A|=|B|/64"}),
    ("search", "`sorted_search<lower>`", "int32, \\|A\\| = \\|B\\|/4096", "lm", "thrust::lower_bound",
     "`thrust::lower_bound`", "thrust",
     {"op": "search<lower,index,none>", "type": "int32", "density": "|A|=|B|/4096"}),
    ("search", "`sorted_equality_count`", "int32, \\|A\\| = \\|B\\|", "lm", "thrust ub-lb (2 search+xform)",
     "`thrust::upper_bound` - `lower_bound`", "thrust",
     {"op": "equality_count", "type": "int32", "density": "|A|=|B|"}),
]
GPU_SIZE_NOTE = {
    "sort": "n keys",
    "sort_lm": "n keys; `lm::sort` against Thrust's sort in the natural order, its radix sort",
    "merge": "n = \\|A\\| + \\|B\\|",
    "merge_newest": "n = \\|A\\| + \\|B\\|, the newest CUB",
    "multiway": "n in all, split evenly over K sorted ranges; 2^28 only",
    "multiway_newest": "n in all, split evenly over K sorted ranges; 2^28 only; the newest CUB",
    "search": "N = \\|A\\| + \\|B\\|",
}

# The OpenMP table ("targets" section of libmerge_omp_bench): call, lm's and
# the peers' impl names.
OMP_ROWS = [
    ("`merge_sort`", "merge_sort", ["__gnu_parallel::stable_sort", "thrust::stable_sort (omp)"]),
    ("`merge_sort_by_key`", "merge_sort_by_key",
     ["__gnu_parallel::stable_sort (pairs)", "thrust::stable_sort_by_key (omp)"]),
    ("`merge`", "merge", ["__gnu_parallel::merge", "thrust::merge (omp)"]),
    ("`sorted_search<lower>`", "sorted_search", ["omp for std::lower_bound", "thrust::lower_bound (omp)"]),
]
SERIAL_ROWS = [
    ("`merge_sort`", "merge_sort"),
    ("`merge_sort_by_key`", "merge_sort_by_key"),
    ("`merge`", "merge"),
    ("`sorted_search<lower>`", "sorted_search<lower>"),
    ("`sorted_equality_count`", "sorted_equality_count"),
]

META_GPU = ["date", "cub_version", "thrust_version", "allocator"]
META_OMP = ["date", "compiler"]
META_SERIAL = ["date", "cpu", "compiler"]


class TableError(Exception):
    pass


def note_of(meta):
    """A source line's closing '; note', when the JSON or its fallback has one."""
    return f"; {meta['note']}" if meta.get("note") else ""


def load(source, required, optional=("note",)):
    """A manifest entry's JSON, with the fields in `required` from the JSON
    itself or, for the exact file the manifest's fallback was written for,
    from the fallback."""
    path = RESULTS / source["file"]
    if not path.is_file():
        raise TableError(f"{path.relative_to(ROOT)}: named in {MANIFEST.relative_to(ROOT)} but missing")
    raw = path.read_bytes()
    data = json.loads(raw)
    meta = {}
    fallback = source.get("fallback", {})
    fallback_applies = fallback.get("sha256") == hashlib.sha256(raw).hexdigest()
    missing = []
    for key in list(required) + list(optional):
        if key in data:
            meta[key] = data[key]
        elif fallback_applies and key in fallback:
            meta[key] = fallback[key]
        elif key in required:
            missing.append(key)
    if missing:
        why = ("its fallback in the manifest is for another version of the file" if fallback
               else "the manifest has no fallback for it")
        raise TableError(f"{path.relative_to(ROOT)} does not record {', '.join(missing)}, and {why}: "
                         "re-run the benchmark (perf/ writes those fields) or add a fallback with this file's sha256")
    return data, meta


def ratio(peer_ms, lm_ms):
    return f"{peer_ms / lm_ms:.2f}x"


def ms(value):
    # Three significant digits, trailing zeros kept (1.00, not 1).
    return f"{value:#.3g}".rstrip(".") if value < 100 else f"{value:.0f}"


def pick(rows, impl, where, n=None):
    hits = [r for r in rows if r.get("impl") == impl and all(r.get(k) == v for k, v in where.items())
            and (n is None or r.get("n") == n)]
    return hits[0]["ms"] if hits else None


def count(n):
    """10^8 rather than 100000000."""
    e = 0
    while n >= 10 and n % 10 == 0:
        n //= 10
        e += 1
    return f"{'' if n == 1 else f'{n} * '}10^{e}" if e >= 3 else str(n * 10 ** e)


def link(name):
    return f"[{name}](docs/results/{name})"


def gpu_table(manifest):
    sources = {}
    for key, source in manifest["gpu"].items():
        data, meta = load(source, META_GPU)
        sources[key] = (source, data, meta)
    header = "| call | keys | peer | " + " | ".join(f"2^{k}" for k in GPU_SIZES) + f" | libmerge ms at 2^{GPU_SIZES[-1]} |"
    lines = [header, "| --- | --- | --- | " + " | ".join("---:" for _ in GPU_SIZES) + " | ---: |"]
    for src, call, keys, lm_impl, peer_impl, peer_name, lib, where in GPU_ROWS:
        _, data, meta = sources[src]
        rows = data["results"]
        cells = []
        for k in GPU_SIZES:
            lm_ms = pick(rows, lm_impl, where, 1 << k)
            peer_ms = pick(rows, peer_impl, where, 1 << k)
            cells.append(ratio(peer_ms, lm_ms) if lm_ms and peer_ms else "-")
        last = pick(rows, lm_impl, where, 1 << GPU_SIZES[-1])
        version = meta[f"{lib}_version"]
        peer = f"{'CUB' if lib == 'cub' else 'Thrust'} {version} {peer_name}"
        lines.append(f"| {call} | {keys} | {peer} | " + " | ".join(cells) + f" | {ms(last) if last else '-'} |")
    lines.append("")
    lines.append("Each cell is the peer's time over libmerge's (above 1: libmerge is faster); libmerge called with "
                 "its defaults (comparator, tuned launch boxes) on data already on the GPU, cold L2, median of many runs. "
                 "Sources:")
    for key in ["sort", "sort_lm", "merge", "merge_newest", "multiway", "multiway_newest", "search"]:
        source, data, meta = sources[key]
        lines.append(f"- {key} ({GPU_SIZE_NOTE[key]}): {data['device']}, {meta['date']}, "
                     f"CUB {meta['cub_version']} / Thrust {meta['thrust_version']}, libmerge's temporary storage from "
                     f"{meta['allocator']}; `{source['bench']}`, {link(source['file'])}{note_of(meta)}")
    return lines


def omp_table(manifest):
    source = manifest["omp"]
    # Thrust's OpenMP column is there only where the benchmark was built with Thrust.
    data, meta = load(source, META_OMP, ("note", "thrust_version"))
    rows = [r for r in data["results"] if r["section"] == "targets"]
    if not rows:
        raise TableError(f"{source['file']}: no 'targets' rows")
    n, threads = rows[0]["n"], rows[0]["threads"]
    thrust = meta.get("thrust_version")
    lines = [f"| call (int32, n = {count(n)}, {threads} threads) | lm::omp ms | peer | peer ms | speed-up |",
             "| --- | ---: | --- | ---: | ---: |"]
    for call, algorithm, peers in OMP_ROWS:
        where = {"algorithm": algorithm, "type": "int32", "n": n, "threads": threads}
        lm_ms = pick(rows, "lm::omp", where)
        for peer in peers:
            peer_ms = pick(rows, peer, where)
            if lm_ms is None or peer_ms is None:
                continue
            label = f"`{peer}`" + (f" (Thrust {thrust})" if peer.startswith("thrust") and thrust else "")
            lines.append(f"| {call} | {ms(lm_ms)} | {label} | {ms(peer_ms)} | {ratio(peer_ms, lm_ms)} |")
    lines.append("")
    lines.append(f"{data['cpu']}, {data['hardware_threads']} hardware threads, {meta['date']}, compiler "
                 f"{meta['compiler']} (`__gnu_parallel` is its libstdc++); merges and searches of two sorted halves "
                 f"of n; `{source['bench']}`, {link(source['file'])}{note_of(meta)}")
    return lines


def serial_table(manifest):
    source = manifest["serial"]
    data, meta = load(source, META_SERIAL)
    rows = [r for r in data["results"] if r["section"] == "cpu"]
    n = rows[0]["n"]
    lines = [f"| call (int32, n = {count(n)}) | lm::serial ms | peer | peer ms | speed-up |",
             "| --- | ---: | --- | ---: | ---: |"]
    for call, algorithm in SERIAL_ROWS:
        lm_ms = pick(rows, "libmerge serial", {"algorithm": algorithm})
        peer = [r for r in rows if r["algorithm"] == algorithm and r["impl"].startswith("std::")]
        if lm_ms is None or not peer:
            continue
        lines.append(f"| {call} | {ms(lm_ms)} | `{peer[0]['impl']}` | {ms(peer[0]['ms'])} | "
                     f"{ratio(peer[0]['ms'], lm_ms)} |")
    lines.append("")
    lines.append(f"{meta['cpu']}, one thread, {meta['date']}, {meta['compiler']} (the `std::` peers are its "
                 f"libstdc++); merges and searches of two sorted halves of n; `{source['bench']}`, "
                 f"{link(source['file'])}{note_of(meta)}")
    return lines


def render(text, manifest):
    tables = {"gpu": gpu_table(manifest), "omp": omp_table(manifest), "serial": serial_table(manifest)}
    for name, lines in tables.items():
        pattern = re.compile(rf"(<!-- tables:{name} begin -->\n)(.*?)(<!-- tables:{name} end -->)", re.S)
        if not pattern.search(text):
            raise TableError(f"README.md has no '<!-- tables:{name} begin -->' ... '<!-- tables:{name} end -->'")
        body = ("<!-- generated by scripts/readme_tables.py from docs/results/README-tables.json: edit those, "
                "not this -->\n" + "\n".join(lines) + "\n")
        text = pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1)
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md's tables differ from the JSON")
    args = parser.parse_args()
    manifest = json.loads(MANIFEST.read_text())
    text = README.read_text()
    try:
        new = render(text, manifest)
    except TableError as e:
        print(f"readme_tables: {e}", file=sys.stderr)
        return 1
    if args.check:
        if new != text:
            diff = difflib.unified_diff(text.splitlines(), new.splitlines(), "README.md", "README.md (from the JSON)",
                                        lineterm="")
            print("\n".join(diff))
            print("readme_tables: README.md's tables differ from docs/results' JSON: "
                  "run python3 scripts/readme_tables.py", file=sys.stderr)
            return 1
        print("readme_tables: README.md's tables match docs/results' JSON")
        return 0
    if new != text:
        README.write_text(new)
        print("readme_tables: README.md updated")
    else:
        print("readme_tables: README.md already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
