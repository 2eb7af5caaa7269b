# ctest driver: installs libmerge from BUILD_DIR into a fresh prefix, then
# builds and runs the consumer against it with find_package, and once more
# with add_subdirectory on SOURCE_DIR.
#   cmake -DSOURCE_DIR=... -DBUILD_DIR=... -DWORK_DIR=... -P run.cmake
foreach(var SOURCE_DIR BUILD_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake needs -D${var}=...")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# find_package against the installed copy
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/install_consumer -B ${WORK_DIR}/installed
    -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/installed)
run(${WORK_DIR}/installed/consumer)
if(EXISTS ${WORK_DIR}/installed/nccl_consumer)
  run(${WORK_DIR}/installed/nccl_consumer)
endif()

# add_subdirectory on the source tree
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/install_consumer -B ${WORK_DIR}/subdirectory
    -DLIBMERGE_SOURCE_DIR=${SOURCE_DIR})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/subdirectory)
run(${WORK_DIR}/subdirectory/consumer)
if(EXISTS ${WORK_DIR}/subdirectory/nccl_consumer)
  run(${WORK_DIR}/subdirectory/nccl_consumer)
endif()
