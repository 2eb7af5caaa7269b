#!/usr/bin/env bash
# Builds the Python package (python/) into a virtual environment under DIR
# (default build/python) and runs its tests against NumPy (and, with a GPU,
# the CUDA module's against PyTorch, CuPy and JAX where they are installed). The README's test
# command runs it as the CPU test python_package. Needs PyPI: numpy, pytest,
# hypothesis, ml_dtypes (bfloat16), nanobind and scikit-build-core.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$(mkdir -p "${1:-$root/build/python}" && cd "${1:-$root/build/python}" && pwd)"
[ -x "$dir/venv/bin/pip" ] || python3 -m venv "$dir/venv"
pip=("$dir/venv/bin/pip" --disable-pip-version-check -q)
"${pip[@]}" install numpy pytest hypothesis ml_dtypes "nanobind>=2.0" "scikit-build-core>=0.10"
# The CUDA module where its tests can run (a GPU): elsewhere the main build
# compiles its code (test/CMakeLists.txt: python_cuda_ops_check), and a module
# built here would only take CI's time.
cuda=OFF
if command -v nvcc >/dev/null 2>&1 && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  cuda=ON
fi
CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2} "${pip[@]}" install --no-build-isolation \
  --config-settings=build-dir="$dir/build" --config-settings=cmake.define.LIBMERGE_PYTHON_CUDA=$cuda "$root/python"
# From $dir, so that python/libmerge (the sources, without the module) is not
# the package the tests import.
cd "$dir" && "$dir/venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
