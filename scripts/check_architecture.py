#!/usr/bin/env python3
"""Fails when docs/architecture.md or docs/tuning.md names a file or a symbol the code lacks.

    python3 scripts/check_architecture.py [DOC ...]

Checked in every `code span` and link of the document: each path (a name
with a '/' or a source or doc suffix) must be a file or folder of the
repository (a bare file name: some file of that name), and each
snake_case or CamelCase identifier must occur as a word somewhere in the
code (libmerge/, backends/, policies/, test/, perf/, scripts/, demo/, the
CMake files). Run as a CPU test (architecture_doc_check), so the
description of the code cannot drift from the code unnoticed. Python 3
standard library only.
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE_DIRS = ["libmerge", "backends", "policies", "test", "perf", "scripts", "demo", "cmake", "python", "examples"]
SUFFIXES = (".hpp", ".cuh", ".cu", ".cpp", ".h", ".md", ".py", ".sh", ".txt", ".json", ".cmake")
# Words in code spans that are not the project's symbols: standard, CUDA,
# CUB, Thrust and OpenMP names, shell words, environment variables.
FOREIGN = re.compile(r"^(std|cub|thrust|cuda[A-Z]\w*|__\w+|nccl[A-Z]\w*|omp_\w+|OMP_\w+|NCCL_\w+|CUDA_\w+|CMAKE_\w+)$")


def files():
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if (ROOT / f).exists()]


def code_words(tracked):
    words = set()
    for f in tracked:
        top = f.split("/")[0]
        if top in CODE_DIRS or f.endswith("CMakeLists.txt"):
            try:
                words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", (ROOT / f).read_text(errors="replace")))
            except IsADirectoryError:
                pass
    return words


def is_path(token):
    return ("/" in token and not token.startswith("-")) or token.endswith(SUFFIXES)


def path_exists(token, tracked, doc_dir):
    t = token.split("#")[0].split(":")[0].rstrip("/")
    t = re.sub(r"\*.*$", "", t)  # a glob: its fixed prefix must exist
    if not t:
        return True
    if "<" in t or "{" in t:  # a pattern such as backends/<name>/: its fixed part
        t = re.split(r"[<{]", t)[0].rstrip("/")
        if not t:
            return True
    names = set(tracked) | {str(Path(f).parent) for f in tracked}
    prefixes = [t, str((doc_dir / t).resolve().relative_to(ROOT)) if (doc_dir / t).resolve().is_relative_to(ROOT) else t]
    for p in prefixes:
        if p in names or any(f.startswith(p.rstrip("/") + "/") for f in tracked):
            return True
    base = Path(t).name
    if "/" not in t:  # a file or folder name anywhere
        return any(Path(f).name == base for f in tracked) or any(f"/{base}/" in f"/{f}" for f in tracked)
    # A path given from inside a backend folder (sort/pass.cuh, search/dense.cuh).
    return any(f.endswith("/" + t) for f in tracked)


def identifiers(span):
    # A qualified name (a::b::c) is foreign when its first part is.
    for name in re.findall(r"(?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*", span):
        parts = name.split("::")
        if FOREIGN.match(parts[0]):
            continue
        yield from (t for t in parts if is_symbol(t))


def is_symbol(tok):
    if FOREIGN.match(tok):
        return False
    snake = "_" in tok.strip("_") and tok.lower() == tok and len(tok) > 3
    camel = re.match(r"^[a-z]+[A-Z]\w*$", tok) is not None
    return snake or camel


def check(doc, tracked, words):
    text = doc.read_text()
    problems = []
    spans = re.findall(r"`([^`\n]+)`", text)
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    for span in spans:
        for token in span.split():
            token = token.strip("(),;").rstrip(".")
            if is_path(token) and not token.startswith(("http", "--", "-D")) and "=" not in token:
                if not path_exists(token, tracked, doc.parent):
                    problems.append(f"path `{token}` (in `{span}`) is no file of the repository")
        if not is_path(span.strip()):
            for tok in identifiers(span):
                if tok not in words:
                    problems.append(f"symbol `{tok}` (in `{span}`) occurs nowhere in the code")
    for link in links:
        if link.startswith(("http", "#", "mailto:")):
            continue
        if not path_exists(link, tracked, doc.parent):
            problems.append(f"link ({link}) is no file of the repository")
    return problems


def main():
    docs = [Path(a).resolve() for a in sys.argv[1:]] or [ROOT / "docs" / "architecture.md", ROOT / "docs" / "tuning.md"]
    tracked = files()
    words = code_words(tracked)
    bad = 0
    for doc in docs:
        for p in check(doc, tracked, words):
            print(f"{doc.relative_to(ROOT)}: {p}")
            bad += 1
    if bad:
        print(f"check_architecture: {bad} name(s) the code lacks")
        return 1
    print("check_architecture: every file and symbol named exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
