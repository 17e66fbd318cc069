# SPDX-License-Identifier: BSD-3-Clause
# template_build.cmake — the README's walk, as a test: configure and build
# examples/plugin_template out of tree with nothing of graft but the ABI
# header, run its own CTest (graft-plugin-check --quick), the full checker,
# and the training example on its device.
#   -DSOURCE=<examples/plugin_template> -DBINARY=<scratch dir>
#   -DABI=<dir of graft_plugin.h> | -DPREFIX=<an installed graft>: the header
#   is found in the prefix (with -DPKGCONFIG=<libdir>/pkgconfig: through the
#   prefix's graft-abi pkg-config module), and the oracle must be found there too
#   -DCHECK=<graft-plugin-check> [-DCHECK_ARGS=--quick] [-DC_COMPILER=cc] [-DNM=nm]
#   [-DTRAIN=<train_mlp>]
file(REMOVE_RECURSE "${BINARY}")
set(flags "-Wall -Wextra -Wshadow -Wstrict-prototypes -Werror")
set(cc "")
if(C_COMPILER)
  set(cc "-DCMAKE_C_COMPILER=${C_COMPILER}")
endif()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("== ${what}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (status ${rc})")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

if(PREFIX AND PKGCONFIG)
  # The ABI-only pkg-config module of the prefix, and nothing else.
  set(where "")
  set(ENV{PKG_CONFIG_LIBDIR} "${PREFIX}/${PKGCONFIG}")
  unset(ENV{PKG_CONFIG_PATH})
  execute_process(COMMAND ${PKG_CONFIG_EXE} --cflags --libs graft-abi OUTPUT_VARIABLE pc_flags
    RESULT_VARIABLE rc)
  string(STRIP "${pc_flags}" pc_flags)
  if(NOT rc EQUAL 0 OR NOT pc_flags MATCHES "^-I[^ ]*/include/graft$")
    message(FATAL_ERROR "pkg-config graft-abi gives '${pc_flags}' (status ${rc}); expected "
      "-I<prefix>/include/graft alone (no libraries)")
  endif()
elseif(PREFIX)
  set(where "-DCMAKE_PREFIX_PATH=${PREFIX}")
else()
  set(where "-DGRAFT_ABI_INCLUDE_DIR=${ABI}")
endif()
step("configure" ${CMAKE_COMMAND} -S "${SOURCE}" -B "${BINARY}" ${cc} ${where}
  "-DGRAFT_PLUGIN_CHECK=${CHECK}" "-DCMAKE_C_FLAGS=${flags}")
file(READ "${BINARY}/CMakeCache.txt" cache)
file(REAL_PATH "${PREFIX}" real_prefix)
if(PREFIX AND NOT cache MATCHES "GRAFT_ABI_INCLUDE_DIR:PATH=(${PREFIX}|${real_prefix})/")
  message(FATAL_ERROR "graft_plugin.h was not found in the prefix ${PREFIX}")
endif()
step("build" ${CMAKE_COMMAND} --build "${BINARY}")
set(plugin "${BINARY}/libgraft-template.so")
if(NOT EXISTS "${plugin}")
  message(FATAL_ERROR "the build made no ${plugin}")
endif()
# It exports the entry point alone and needs nothing of graft.
if(NM)
  step("exported symbols" "${NM}" -D --defined-only "${plugin}")
  string(REGEX MATCHALL " [TDBRVW] [A-Za-z_][A-Za-z0-9_]*" exported "${step_output}")
  if(NOT exported STREQUAL " T graft_plugin_negotiate")
    message(FATAL_ERROR "the plugin must export graft_plugin_negotiate alone, it exports:${exported}")
  endif()
  step("undefined symbols" "${NM}" -D --undefined-only "${plugin}")
  if(step_output MATCHES "[ \n](gf_|graft_)[A-Za-z0-9_]*")
    message(FATAL_ERROR "the plugin needs a symbol of graft: ${CMAKE_MATCH_0}")
  endif()
endif()
step("template's own ctest" ${CMAKE_COMMAND} -E chdir "${BINARY}" ctest --output-on-failure)
step("graft-plugin-check" "${CHECK}" ${CHECK_ARGS} "${plugin}")
if(NOT step_output MATCHES "\nPASSED: [0-9]+ passed, 0 FAILED")
  message(FATAL_ERROR "graft-plugin-check did not report PASSED")
endif()
if(PREFIX AND NOT step_output MATCHES "\noracle: ${PREFIX}/")
  message(FATAL_ERROR "the installed graft-plugin-check took its oracle from outside the prefix")
endif()
if(TRAIN)
  set(ENV{GRAFT_PLUGIN_PATH} "${BINARY}")
  set(ENV{GRAFT_DEVICE} "template")
  unset(ENV{GRAFT_PLUGINS})
  step("train_mlp on the template device" "${TRAIN}" --min-accuracy 0.9)
  if(NOT step_output MATCHES "device template:0 [^\n]*plugin template")
    message(FATAL_ERROR "train_mlp did not run on the template device")
  endif()
endif()
