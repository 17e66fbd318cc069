# SPDX-License-Identifier: BSD-3-Clause
# Runs a program, then checks the trace it wrote with check_trace.py. With
# -DENV_PROFILE=1 the program records through GRAFT_PROFILE (and GRAFT_LOG=
# debug, whose dispatch lines the op events must match); otherwise the
# program gets the trace's path as its last argument. Run with cmake -P:
#   -DEXE=<program> -DARGS=<;-list> -DTRACE=<file> -DPYTHON=<python3>
#   -DCHECK=<check_trace.py> -DEXPECT=<;-list of cat:regex> [-DENV_PROFILE=1]
file(REMOVE "${TRACE}" "${TRACE}.log")
if(ENV_PROFILE)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env GRAFT_PROFILE=${TRACE} GRAFT_LOG=debug
    ${EXE} ${ARGS} OUTPUT_VARIABLE out ERROR_FILE "${TRACE}.log" RESULT_VARIABLE rc)
  set(log "${TRACE}.log")
else()
  execute_process(COMMAND ${EXE} ${ARGS} ${TRACE} OUTPUT_VARIABLE out ERROR_VARIABLE err
    RESULT_VARIABLE rc)
  set(log "-")
  message("${err}")
endif()
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} failed (${rc})")
endif()
if(NOT PYTHON)
  message(FATAL_ERROR "python3 is needed to parse the trace (scripts/graft.sh installs it)")
endif()
execute_process(COMMAND ${PYTHON} ${CHECK} ${TRACE} ${log} ${EXPECT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE cout ERROR_VARIABLE cerr)
message("${cout}${cerr}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the trace ${TRACE} fails its check")
endif()
