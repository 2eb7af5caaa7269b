#!/usr/bin/env python3
"""Compares the device code of two builds, function by function.

    nvcc -cubin -arch=sm_90 <the target's flags> FILE.cu -o before.cubin   (on the old tree)
    nvcc -cubin -arch=sm_90 <the target's flags> FILE.cu -o after.cubin    (on the new tree)
    scripts/device-code-diff.py before.cubin after.cubin

A refactor that moves code (a file split, tuning tables rewritten with the
same values) must leave every kernel's machine code as it was: then no speed
can have been lost, and no GPU is needed to show it. This machine has no
cuobjdump, so the cubin (an ELF file) is read here: each function's code is
its .text.<name> section. Names of anonymous-namespace entities carry a hash
of the source file's path; it is normalized so that two checkouts compare.
Exit status 1 when a function differs, exists on one side only, or nothing
was found.
"""
import re
import struct
import sys


def sections(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit(f"{path}: not a 64-bit ELF file (a cubin from nvcc -cubin)")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]

    def name(offset):
        end = data.index(b"\0", names_at + offset)
        return data[names_at + offset:end].decode()

    out = {}
    for h in headers:
        nobits = h[1] == 8
        out[name(h[0])] = b"" if nobits else data[h[4]:h[4] + h[5]]
    return out


def functions(path):
    # (with the length before it: the hash is not always as long)
    # Two spellings: <hash>_<len>_<file>_cu_<hash>_<n> for a test's file, and
    # <hash>_<len>_<file>_cu_main (or _cpp_main) for a file with main().
    # (and _INTERNAL_<hash>_..._main for the lambdas in such a file).
    anon = re.compile(r"\d+_(?:GLOBAL__N__|INTERNAL_)[0-9a-f]+_\d+_\w+?_(?:cu|cpp)_(?:[0-9a-f]+_\d+|main)")
    return {anon.sub("ANON", k): v for k, v in sections(path).items() if k.startswith(".text.")}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = functions(sys.argv[1]), functions(sys.argv[2])
    gone, new = sorted(set(before) - set(after)), sorted(set(after) - set(before))
    changed = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    same = len(before.keys() & after.keys()) - len(changed)
    print(f"{len(before)} functions before, {len(after)} after: {same} the same, {len(changed)} changed, "
          f"{len(gone)} only before, {len(new)} only after")
    for label, names in (("changed", changed), ("only before", gone), ("only after", new)):
        for k in names[:20]:
            print(f"  {label}: {k[6:]}")
    sys.exit(0 if before and not changed and not gone and not new else 1)


if __name__ == "__main__":
    main()
