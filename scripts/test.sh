#!/usr/bin/env bash
# Builds every target (the CUDA ones too when nvcc is installed, so CUDA code
# is always compiled) and runs the whole test suite: the CPU tests always, the
# GPU tests as well when a GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
source scripts/env.sh
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR" -j"$JOBS"
labels=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  labels='cpu|gpu'
fi
echo "test.sh: running the tests labelled $labels"
ctest --test-dir "$BUILD_DIR" -L "$labels" --output-on-failure -j"$JOBS"
