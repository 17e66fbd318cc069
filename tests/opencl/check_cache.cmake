# SPDX-License-Identifier: BSD-3-Clause
# check_cache.cmake — the OpenCL kernel cache on disk, across processes.
#   cmake -DPROBE=<ocl_device> -DDIR=<scratch dir> -P check_cache.cmake
# 1. A first run (GRAFT_OPENCL_CACHE=1, an empty GRAFT_CACHE_DIR) builds the
#    random kernels from source and writes <dir>/opencl/random-<hash>.bin.
# 2. A second run loads them from that file.
# 3. A damaged file is refused: the kernels are rebuilt, results stay right.
# 4. GRAFT_OPENCL_CACHE=0 writes nothing.
function(run label out_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${ARGN} GRAFT_LOG=debug
                          GRAFT_PLUGINS=opencl,reference "${PROBE}" cache
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 77)
    message(STATUS "no OpenCL device: ${err}")
    set(${out_var} "SKIP" PARENT_SCOPE)
    return()
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${label}: exit status ${rc}\n${out}\n${err}")
  endif()
  set(${out_var} "${err}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
run("first run" log GRAFT_OPENCL_CACHE=1 GRAFT_CACHE_DIR=${DIR}/on)
if(log STREQUAL "SKIP")
  return()
endif()
file(GLOB bins "${DIR}/on/opencl/random-*.bin")
if(NOT bins OR NOT log MATCHES "kernel cache: wrote")
  message(FATAL_ERROR "the first run wrote no cache file under ${DIR}/on/opencl:\n${log}")
endif()

run("second run" log GRAFT_OPENCL_CACHE=1 GRAFT_CACHE_DIR=${DIR}/on)
if(NOT log MATCHES "kernel cache: loaded the random kernels")
  message(FATAL_ERROR "the second run did not load the cached kernels:\n${log}")
endif()

list(GET bins 0 bin)
file(WRITE "${bin}" "GRAFTCL1 these bytes are not a program binary")
run("damaged file" log GRAFT_OPENCL_CACHE=1 GRAFT_CACHE_DIR=${DIR}/on)
if(NOT log MATCHES "damaged or keyed differently" OR log MATCHES "kernel cache: loaded the random")
  message(FATAL_ERROR "a damaged cache file was not refused:\n${log}")
endif()

run("cache off" log GRAFT_OPENCL_CACHE=0 GRAFT_CACHE_DIR=${DIR}/off)
file(GLOB_RECURSE off_files "${DIR}/off/*")
if(off_files)
  message(FATAL_ERROR "GRAFT_OPENCL_CACHE=0 still wrote ${off_files}")
endif()
message(STATUS "kernel cache: written, loaded, damage refused, off honoured")
