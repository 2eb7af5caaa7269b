# FindNCCL: NCCL's header and library, as the target NCCL::NCCL.
#
# Looked for under NCCL_ROOT (variable or environment), the CUDA toolkit
# (NCCL ships in CUDA's installation on the machines libmerge is built on),
# and the system paths. Sets NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY and
# NCCL_VERSION. CMake has no Find module of its own for NCCL.
include(FindPackageHandleStandardArgs)

set(_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT} $ENV{CUDA_HOME} /usr/local/cuda)
if(CMAKE_CUDA_COMPILER)
  get_filename_component(_nccl_nvcc_root "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  get_filename_component(_nccl_nvcc_root "${_nccl_nvcc_root}" DIRECTORY)
  list(APPEND _nccl_hints "${_nccl_nvcc_root}")
endif()

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64 lib/x64)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define NCCL_${_part} ([0-9]+).*" "\\1" _nccl_${_part} "${_nccl_version_lines}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()

find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)

if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
