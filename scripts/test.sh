#!/usr/bin/env bash
# Builds every target (the CUDA ones too when nvcc is installed, so CUDA code
# is always compiled) and runs the whole test suite: the CPU tests always, the
# GPU tests as well when a GPU is present.
#
# Machine code: for the GPU of this machine when there is one (the binaries
# that run); without a GPU nothing of it runs, and the build is a compile
# check: sm_90 for every target, while the architecture tests
# (test_cuda_arch_*, test/gpu/CMakeLists.txt) still compile each kernel family
# for sm_80, sm_90 and sm_100, the tuning lines and arch branches each of them
# takes. Compiling every target for three architectures made CI's build about
# twice as long (73 minutes on 2 cores, 2026-11-29). LIBMERGE_CUDA_ARCHS
# overrides the choice (a CMAKE_CUDA_ARCHITECTURES list, e.g. "80;90;100").
# Every CUDA target's host code is compiled at -O0 then (LIBMERGE_CUDA_HOST_OPT;
# nvcc's -O is the host's alone: the device code stays the same), at the build
# type's -O3 with a GPU, and the device code without optimization
# (LIBMERGE_CUDA_DEVICE_OPT: cicc and ptxas at -O0; CMakeLists.txt says what
# it saves), fully optimized with a GPU.
#
# Without a GPU (CI), the CUDA targets but the benchmarks and two tests whose
# calls others make (libmerge_cuda_library_targets, CMakeLists.txt) are then
# compiled a second time, against a CCCL newer than the toolkit's (the
# nvidia-cuda-cccl wheel from PyPI, scripts/fetch-cccl.py), so that code which
# only the newer CUB rejects fails here too: to PTX alone, as C++ is all it
# checks (ptxas took 27% of test_cuda_key_types' compile there, 2026-12-08).
# LIBMERGE_SECOND_CCCL=0 skips it, =1 forces it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
source scripts/env.sh
labels=cpu
second_cccl=${LIBMERGE_SECOND_CCCL:-1}
archs=90
host_opt=-O0  # every CUDA target's host code, compiled and never run here
device_opt='-Xcicc=-O0 -Xptxas=-O0'  # every CUDA target's device code, likewise
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  labels='cpu|gpu'
  archs=native
  host_opt=
  device_opt=
  second_cccl=${LIBMERGE_SECOND_CCCL:-0}
fi
archs=${LIBMERGE_CUDA_ARCHS:-$archs}
cmake_args=(-DCMAKE_BUILD_TYPE=Release)
command -v nvcc >/dev/null 2>&1 && cmake_args+=("-DCMAKE_CUDA_ARCHITECTURES=$archs" "-DLIBMERGE_CUDA_HOST_OPT=$host_opt"
                                               "-DLIBMERGE_CUDA_DEVICE_OPT=$device_opt")
cmake -S . -B "$BUILD_DIR" "${cmake_args[@]}"
cmake --build "$BUILD_DIR" -j"$JOBS"
echo "test.sh: running the tests labelled $labels"
ctest --test-dir "$BUILD_DIR" -L "$labels" --output-on-failure -j"$JOBS"
if [ "$second_cccl" = 1 ] && command -v nvcc >/dev/null 2>&1; then
  cccl=$(python3 scripts/fetch-cccl.py build-deps)
  echo "test.sh: compiling the CUDA targets but the benchmarks (PTX alone) against the CCCL in $cccl"
  cmake -S . -B "$BUILD_DIR-cccl" "${cmake_args[@]}" "-DLIBMERGE_CCCL_DIR=$cccl" -DCMAKE_CUDA_ARCHITECTURES=90-virtual
  cmake --build "$BUILD_DIR-cccl" -j"$JOBS" --target libmerge_cuda_library_targets
fi
