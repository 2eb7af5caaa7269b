#!/usr/bin/env python3
"""Fetches a CCCL newer than the CUDA toolkit's from PyPI (the headers of the
nvidia-cuda-cccl wheel) and prints the include directory it unpacked, for
LIBMERGE_CCCL_DIR. scripts/test.sh compiles every CUDA target against it.

    python3 scripts/fetch-cccl.py DEST [VERSION]

The wheel's sha256 is checked against the index's; a second run with the
same version reuses DEST/cccl-VERSION. Python 3 standard library only.
"""
import hashlib
import shutil
import io
import json
import sys
import urllib.request
import zipfile
from pathlib import Path

PACKAGE = "nvidia-cuda-cccl"
VERSION = "13.3.5.0.6"  # CUB 3.5 (the toolkit's CUDA 13.0 has CUB 3.0)
PREFIX = "nvidia/cu13/include/cccl/"


def wheel_of(version):
    req = urllib.request.Request(f"https://pypi.org/simple/{PACKAGE}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        files = json.load(r)["files"]
    stem = f"{PACKAGE.replace('-', '_')}-{version}-"
    for f in files:
        if f["filename"].startswith(stem) and f["filename"].endswith("x86_64.whl"):
            return f["url"], f["hashes"]["sha256"]
    raise SystemExit(f"fetch-cccl: no x86_64 wheel of {PACKAGE} {version} on PyPI")


def main():
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    version = sys.argv[2] if len(sys.argv) == 3 else VERSION
    dest = Path(sys.argv[1]).resolve() / f"cccl-{version}"
    if (dest / "cub" / "version.cuh").is_file():
        print(dest)
        return
    url, sha256 = wheel_of(version)
    with urllib.request.urlopen(url, timeout=300) as r:
        data = r.read()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise SystemExit(f"fetch-cccl: {url}: sha256 differs from the index's")
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for name in z.namelist():
            if name.startswith(PREFIX) and not name.endswith("/"):
                out = tmp / name[len(PREFIX):]
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(z.read(name))
    tmp.rename(dest)
    print(dest)


if __name__ == "__main__":
    main()
