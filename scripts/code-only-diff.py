#!/usr/bin/env python3
"""Shows that a change touched comments only.

    scripts/code-only-diff.py [REV]     (default REV: HEAD)

For each C++/CUDA file that differs between REV and the working tree, the
code with comments and whitespace removed is compared; a file whose code
differs is printed with the first tokens that differ. Exit status 1 when any
code differs (a file added or removed counts as differing).
"""
import re
import subprocess
import sys

SUFFIXES = (".hpp", ".cuh", ".cpp", ".cu", ".h")
TOKEN = re.compile(r'''
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<space>\s+)
  | (?P<other>[A-Za-z_0-9]+|.)
''', re.S | re.X)


def code_tokens(text):
    out = []
    for m in TOKEN.finditer(text):
        if m.lastgroup in ("comment", "space"):
            continue
        out.append(m.group())
    return out


def git(*args):
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def main():
    rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    changed = [p for p in git("diff", "--name-only", rev).split() if p.endswith(SUFFIXES)]
    changed += [p for p in git("ls-files", "--others", "--exclude-standard").split() if p.endswith(SUFFIXES)]
    bad = 0
    for path in sorted(set(changed)):
        try:
            old = git("show", f"{rev}:{path}")
        except subprocess.CalledProcessError:
            old = None
        try:
            new = open(path).read()
        except FileNotFoundError:
            new = None
        if old is None or new is None:
            print(f"{path}: {'added' if old is None else 'removed'}")
            bad += 1
            continue
        a, b = code_tokens(old), code_tokens(new)
        if a != b:
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            print(f"{path}: code differs at token {i}: {' '.join(a[max(0, i - 8):i + 8])!r} -> "
                  f"{' '.join(b[max(0, i - 8):i + 8])!r}")
            bad += 1
    print(f"{len(set(changed))} C++/CUDA files changed, {bad} with code changes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
