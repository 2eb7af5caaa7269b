#!/usr/bin/env python3
"""The structure figures of the product code (backends/, libmerge/, policies/):

    python3 scripts/structure.py [--functions N]

lines, kernels (__global__ definitions), the files each public call crosses
(the project headers its front-end and its backend entry include, followed
transitively), and the N longest functions (universal-ctags' line ranges).
Python 3 standard library and ctags only.
"""
import argparse
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ["backends", "libmerge", "policies"]
# A call: its front-end and its backend's entry file.
CALLS = {
    "merge (cuda)": ["libmerge/merge.hpp", "backends/cuda/merge.cuh"],
    "multiway_merge (cuda)": ["libmerge/multiway_merge.hpp", "backends/cuda/multiway.cuh"],
    "merge_sort (cuda)": ["libmerge/merge_sort.hpp", "backends/cuda/merge_sort.cuh"],
    "sorted_search (cuda)": ["libmerge/sorted_search.hpp", "backends/cuda/sorted_search.cuh"],
    "merge_sort (nccl)": ["libmerge/merge_sort.hpp", "libmerge/nccl.hpp", "backends/nccl/merge_sort.cuh"],
    "merge (omp)": ["libmerge/merge.hpp", "backends/omp/merge.hpp"],
    "merge_sort (omp)": ["libmerge/merge_sort.hpp", "backends/omp/merge_sort.hpp"],
    "merge (serial)": ["libmerge/merge.hpp", "backends/serial/merge.hpp"],
}


def product_files():
    return sorted(p for d in PRODUCT for p in (ROOT / d).rglob("*") if p.is_file())


def includes(path):
    for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(), re.M):
        target = (path.parent / m.group(1)).resolve()
        if target.is_file() and any(target.is_relative_to(ROOT / d) for d in PRODUCT):
            yield target


def closure(starts):
    seen, todo = set(), [ROOT / s for s in starts]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        todo.extend(includes(f))
    return seen


def functions(files):
    ctags = shutil.which("ctags")
    if ctags is None:
        return []
    out = subprocess.run([ctags, "-x", "--_xformat=%N %F %n %e", "--kinds-c++=f", "--language-force=c++", "-o", "-"]
                         + [str(f) for f in files], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3].isdigit():
            rows.append((int(parts[3]) - int(parts[2]) + 1, parts[0], Path(parts[1]).relative_to(ROOT), int(parts[2])))
    return sorted(rows, reverse=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--functions", type=int, default=10)
    args = ap.parse_args()
    files = product_files()
    lines = sum(len(f.read_text().splitlines()) for f in files)
    kernels = sum(len(re.findall(r"__global__\s+void", f.read_text())) for f in files)
    print(f"product code: {len(files)} files, {lines} lines, {kernels} kernels (__global__ definitions)")
    print("files a call crosses (its front-end and backend entry, with every project header they include):")
    for call, starts in CALLS.items():
        print(f"  {call:24s} {len(closure(starts))}")
    rows = functions(files)
    if rows:
        over = [r for r in rows if r[0] > 80]
        print(f"functions over 80 lines: {len(over)}; the {args.functions} longest:")
        for n, name, path, at in rows[: args.functions]:
            print(f"  {n:4d}  {name}  {path}:{at}")


if __name__ == "__main__":
    main()
