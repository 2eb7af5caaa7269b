# Sourced by the scripts: puts the CUDA toolkit's nvcc on PATH when it is
# installed in the usual place but not on PATH, so CMake finds it.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
