# SPDX-License-Identifier: BSD-3-Clause
# run_install_test.cmake MODE=prefix|cmake_consumer|pkgconfig_consumer
# (see CMakeLists.txt for the variables).
cmake_minimum_required(VERSION 3.25)

function(run)
  cmake_parse_arguments(R "" "OUT;WHAT" "COMMAND" ${ARGN})
  execute_process(COMMAND ${R_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${R_COMMAND}")
    message(FATAL_ERROR "${R_WHAT} failed (${rc}): ${cmd}\n--- stdout\n${out}\n--- stderr\n${err}")
  endif()
  if(R_OUT)
    set(${R_OUT} "${out}" PARENT_SCOPE)
  endif()
endfunction()

file(REAL_PATH "${PREFIX}" real_prefix)
set(plugin_file "${real_prefix}/${LIBDIR}/graft/plugins/libgraft-reference.so")
set(san_flags "")
if(SANITIZE)
  # An instrumented libgraft needs the sanitizer runtime in the program.
  set(san_flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()

# The consumer's output: its own check passed, and the reference plugin was
# loaded from the prefix (not from the build tree).
function(check_consumer_output out what)
  if(NOT out MATCHES "consumer ok")
    message(FATAL_ERROR "${what}: no success line in its output:\n${out}")
  endif()
  string(FIND "${out}" "plugin reference at ${plugin_file}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: the reference plugin was not loaded from the installed "
      "prefix (${plugin_file}); the loader must find <libdir>/graft/plugins next to the "
      "installed libgraft.so. Output:\n${out}")
  endif()
  message(STATUS "${what}: ${out}")
endfunction()

if(MODE STREQUAL "prefix")
  file(REMOVE_RECURSE "${PREFIX}")
  set(cfg "")
  if(CONFIG)
    set(cfg --config "${CONFIG}")
  endif()
  # Installs what the build produced: every target must have been built.
  run(WHAT "cmake --install (is the build complete? run cmake --build first)" COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" ${cfg})
  foreach(f
      "${INCLUDEDIR}/graft.h" "${INCLUDEDIR}/graft/types.h" "${INCLUDEDIR}/graft/tensor.h"
      "${INCLUDEDIR}/graft/interop.h" "${INCLUDEDIR}/graft/graft_plugin.h"
      "${INCLUDEDIR}/graft/graft_ops.def" "${INCLUDEDIR}/graft/graft_ops.h"
      "${LIBDIR}/libgraft.so" "${LIBDIR}/libgraft.so.0" "${LIBDIR}/libgraft.so.${VERSION}"
      "${LIBDIR}/graft/plugins/libgraft-reference.so"
      "${BINDIR}/graft-info"
      "${LIBDIR}/cmake/graft/graftConfig.cmake" "${LIBDIR}/cmake/graft/graftConfigVersion.cmake"
      "${LIBDIR}/cmake/graft/graftTargets.cmake"
      "${LIBDIR}/pkgconfig/graft.pc" "${LIBDIR}/pkgconfig/graft-abi.pc"
      "share/graft/plugin_template/CMakeLists.txt" "share/graft/plugin_template/README.md"
      "${INCLUDEDIR}/graft/profiler.h")
    if(NOT EXISTS "${PREFIX}/${f}")
      message(FATAL_ERROR "cmake --install did not install ${f} under ${PREFIX}")
    endif()
  endforeach()
  # libgraft-dist, when built (MPI found): its header, library and target.
  if(WITH_DIST)
    foreach(f "${INCLUDEDIR}/graft/dist.h" "${LIBDIR}/libgraft-dist.so"
        "${LIBDIR}/libgraft-dist.so.${VERSION}")
      if(NOT EXISTS "${PREFIX}/${f}")
        message(FATAL_ERROR "cmake --install did not install ${f} under ${PREFIX}")
      endif()
    endforeach()
    file(GLOB target_files "${PREFIX}/${LIBDIR}/cmake/graft/graftTargets*.cmake")
    set(targets_text "")
    foreach(f ${target_files})
      file(READ "${f}" t)
      string(APPEND targets_text "${t}")
    endforeach()
    if(NOT targets_text MATCHES "graft::dist")
      message(FATAL_ERROR "the installed CMake package has no graft::dist target")
    endif()
  endif()
  if(NOT IS_SYMLINK "${PREFIX}/${LIBDIR}/libgraft.so")
    message(FATAL_ERROR "${LIBDIR}/libgraft.so should be the development symlink")
  endif()
  if(READELF)
    run(WHAT readelf OUT dyn COMMAND "${READELF}" -d "${PREFIX}/${LIBDIR}/libgraft.so.${VERSION}")
    if(NOT dyn MATCHES "SONAME[^\n]*\\[libgraft\\.so\\.0\\]")
      message(FATAL_ERROR "libgraft.so has no SONAME libgraft.so.0:\n${dyn}")
    endif()
    # Nothing installed may point back into the build tree.
    if(dyn MATCHES "R(UN)?PATH[^\n]*${BUILD_DIR}")
      message(FATAL_ERROR "the installed libgraft.so keeps a build-tree RPATH:\n${dyn}")
    endif()
  endif()
  # Every installed program finds libgraft.so relative to itself.
  file(GLOB programs "${PREFIX}/${BINDIR}/*")
  foreach(prog ${programs})
    if(READELF)
      run(WHAT readelf OUT dyn COMMAND "${READELF}" -d "${prog}")
      if(NOT dyn MATCHES "R(UN)?PATH[^\n]*\\$ORIGIN")
        message(FATAL_ERROR "${prog} has no $ORIGIN-relative RUNPATH:\n${dyn}")
      endif()
    endif()
  endforeach()
  # The installed tool runs from the prefix (its RPATH finds libgraft.so) and
  # finds the installed plugins.
  run(WHAT "installed graft-info" OUT info COMMAND "${PREFIX}/${BINDIR}/graft-info")
  if(NOT info MATCHES "cpu:0 +Reference CPU" OR NOT info MATCHES "path  : ${plugin_file}")
    message(FATAL_ERROR "the installed graft-info did not list the installed reference "
      "plugin (${plugin_file}):\n${info}")
  endif()
  message(STATUS "installed to ${PREFIX}")

elseif(MODE STREQUAL "cmake_consumer")
  set(bdir "${WORK}/cmake")
  file(REMOVE_RECURSE "${bdir}")
  run(WHAT "configuring the consumer" COMMAND "${CMAKE_COMMAND}" -S "${CONSUMER}" -B "${bdir}"
    -G "${GENERATOR}" "-DCMAKE_C_COMPILER=${CC}" "-DCMAKE_PREFIX_PATH=${PREFIX}"
    "-DCMAKE_C_FLAGS=${san_flags}" "-DCMAKE_EXE_LINKER_FLAGS=${san_flags}"
    "-DCMAKE_MODULE_LINKER_FLAGS=${san_flags}" -DCMAKE_BUILD_TYPE=Debug)
  file(READ "${bdir}/CMakeCache.txt" cache)
  if(NOT cache MATCHES "graft_DIR:PATH=${real_prefix}/${LIBDIR}/cmake/graft"
     AND NOT cache MATCHES "graft_DIR:PATH=${PREFIX}/${LIBDIR}/cmake/graft")
    message(FATAL_ERROR "find_package(graft) did not use the installed package")
  endif()
  run(WHAT "building the consumer" COMMAND "${CMAKE_COMMAND}" --build "${bdir}")
  run(WHAT "running the CMake-built consumer" OUT out COMMAND "${bdir}/consumer")
  check_consumer_output("${out}" "CMake consumer")

elseif(MODE STREQUAL "pkgconfig_consumer")
  if(NOT PKG_CONFIG)
    message("SKIP: pkg-config is not installed; install pkg-config (or pkgconf) to run this test")
    return()
  endif()
  # Only the prefix's .pc files: never a graft installed elsewhere.
  set(pc env "PKG_CONFIG_LIBDIR=${PREFIX}/${LIBDIR}/pkgconfig" "${PKG_CONFIG}")
  run(WHAT "pkg-config --modversion" OUT version COMMAND "${CMAKE_COMMAND}" -E ${pc} --modversion graft)
  string(STRIP "${version}" version)
  if(NOT version STREQUAL VERSION)
    message(FATAL_ERROR "pkg-config reports version '${version}', expected '${VERSION}'")
  endif()
  run(WHAT "pkg-config --cflags --libs" OUT flags COMMAND "${CMAKE_COMMAND}" -E ${pc} --cflags --libs graft)
  run(WHAT "pkg-config --variable=libdir" OUT libdir COMMAND "${CMAKE_COMMAND}" -E ${pc} --variable=libdir graft)
  string(STRIP "${flags}" flags)
  string(STRIP "${libdir}" libdir)
  file(REAL_PATH "${libdir}" real_libdir)
  if(NOT real_libdir STREQUAL "${real_prefix}/${LIBDIR}")
    message(FATAL_ERROR "graft.pc's libdir is ${libdir}, not under the prefix ${PREFIX}")
  endif()
  separate_arguments(flag_list UNIX_COMMAND "${flags} ${san_flags}")
  file(MAKE_DIRECTORY "${WORK}")
  set(exe "${WORK}/consumer_pkgconfig")
  run(WHAT "compiling with pkg-config's flags" COMMAND "${CC}" -std=c11 -Wall -Werror
    "${CONSUMER}/consumer.c" ${flag_list} "-Wl,-rpath,${libdir}" -o "${exe}")
  run(WHAT "running the pkg-config consumer" OUT out COMMAND "${exe}")
  check_consumer_output("${out}" "pkg-config consumer (${flags})")

else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
