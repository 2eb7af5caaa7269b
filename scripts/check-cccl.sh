#!/usr/bin/env bash
# Builds every target (tests, demo, benchmarks; the CUDA ones too) against a
# CCCL other than the CUDA toolkit's, and runs the tests this machine can run
# (the CPU ones; the GPU ones too when a GPU is present). Users have the CCCL
# of their toolkit, or the newest one: both must work.
#
#   scripts/check-cccl.sh CCCL [BUILD_DIR] [cmake arguments...]
#
# CCCL is a checkout of github.com/NVIDIA/cccl (holding thrust/, cub/ and
# libcudacxx/include), or a git directory of one without a work tree (as the
# fetch tool brings it): its HEAD's headers are then extracted into
# BUILD_DIR/cccl. BUILD_DIR defaults to build-cccl. The GPU binaries are run
# on a GPU machine as those of any build (scripts/stage-gpu-bin.sh BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
  echo "usage: scripts/check-cccl.sh CCCL [BUILD_DIR] [cmake arguments...]" >&2
  exit 2
fi
CCCL=$(cd "$1" && pwd)
BUILD=${2:-build-cccl}
shift $(($# < 2 ? $# : 2))
bash scripts/setup-deps.sh
source scripts/env.sh
mkdir -p "$BUILD"
if [ ! -d "$CCCL/cub" ]; then
  if ! git --git-dir="$CCCL" rev-parse HEAD >/dev/null 2>&1; then
    echo "check-cccl: $CCCL is neither a CCCL checkout (cub/ is missing) nor a git directory" >&2
    exit 2
  fi
  commit=$(git --git-dir="$CCCL" rev-parse HEAD)
  if [ "$(cat "$BUILD/cccl/COMMIT" 2>/dev/null)" != "$commit" ]; then
    rm -rf "$BUILD/cccl" && mkdir -p "$BUILD/cccl"
    git --git-dir="$CCCL" archive "$commit" thrust/thrust cub/cub libcudacxx/include | tar -x -C "$BUILD/cccl"
    echo "$commit" > "$BUILD/cccl/COMMIT"
  fi
  echo "check-cccl: CCCL at $commit"
  CCCL=$(cd "$BUILD/cccl" && pwd)
fi
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLIBMERGE_CCCL_DIR="$CCCL" "$@"
cmake --build "$BUILD" -j"$JOBS"
labels=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  labels='cpu|gpu'
fi
ctest --test-dir "$BUILD" -L "$labels" --output-on-failure -j"$JOBS"
