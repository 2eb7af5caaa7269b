#!/usr/bin/env bash
# Builds and runs the demo: the Modern GPU demonstrations and a timing table
# of the serial, OpenMP and CUDA backends; on the GPU when there is one, else
# on the OpenMP CPU backend (the serial one without OpenMP).
# Arguments go to the demo (e.g. --backend serial).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
source scripts/env.sh
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" --target libmerge_demo -j"$JOBS"
"$BUILD_DIR/demo/libmerge_demo" "$@"
