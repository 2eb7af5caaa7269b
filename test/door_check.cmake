# Tests and benchmarks reach the backends' internals only through the door,
# test/support/internals.cuh (and nccl_internals.cuh, and nccl_loopback.cuh,
# the tests' transport built on the NCCL backend's parts): no other file of test/
# or perf/ may name `cuda_backend::`, `nccl_backend::` or `omp_backend::`.
# cmake -DSOURCE_DIR=<repo> -P door_check.cmake
file(GLOB_RECURSE files
  "${SOURCE_DIR}/test/*.cpp" "${SOURCE_DIR}/test/*.hpp" "${SOURCE_DIR}/test/*.cu" "${SOURCE_DIR}/test/*.cuh"
  "${SOURCE_DIR}/perf/*.cpp" "${SOURCE_DIR}/perf/*.hpp" "${SOURCE_DIR}/perf/*.cu" "${SOURCE_DIR}/perf/*.cuh")
set(found "")
foreach(f IN LISTS files)
  if(f MATCHES "/test/support/(internals|nccl_internals|nccl_loopback)\\.cuh$")
    continue()
  endif()
  file(STRINGS "${f}" lines REGEX "(cuda|nccl|omp)_backend::")
  foreach(line IN LISTS lines)
    string(APPEND found "\n  ${f}: ${line}")
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "these reach a backend's internals outside test/support/internals.cuh:${found}")
endif()
list(LENGTH files n)
message(STATUS "${n} files of test/ and perf/ reach the backends only through the door")
