#!/usr/bin/env bash
# Builds the Python package (python/) into a virtual environment under DIR
# (default build/python) and runs its tests against NumPy. The README's test
# command runs it as the CPU test python_package. Needs PyPI: numpy, pytest,
# hypothesis, ml_dtypes (bfloat16), nanobind and scikit-build-core.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$(mkdir -p "${1:-$root/build/python}" && cd "${1:-$root/build/python}" && pwd)"
[ -x "$dir/venv/bin/pip" ] || python3 -m venv "$dir/venv"
pip=("$dir/venv/bin/pip" --disable-pip-version-check -q)
"${pip[@]}" install numpy pytest hypothesis ml_dtypes "nanobind>=2.0" "scikit-build-core>=0.10"
CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2} "${pip[@]}" install --no-build-isolation \
  --config-settings=build-dir="$dir/build" "$root/python"
# From $dir, so that python/libmerge (the sources, without the module) is not
# the package the tests import.
cd "$dir" && "$dir/venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
