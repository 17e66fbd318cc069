# SPDX-License-Identifier: BSD-3-Clause
# Trains an example on cpu, then on acme with the default fallback, and
# compares every batch's loss (relative RTOL); then on acme in strict mode,
# which must fail with the UNSUPPORTED message. Run with cmake -P:
#   -DEXE=<example> -DARGS=<its arguments, ;-separated> -DCMP=<test_fallback>
#   -DWORK=<scratch dir> -DRTOL=<tolerance>
file(MAKE_DIRECTORY "${WORK}")
file(REMOVE "${WORK}/cpu.log" "${WORK}/acme.log")

function(run_example device log out_var rc_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env GRAFT_DEVICE=${device}
    TRAIN_LOSS_LOG=${log} ${ARGN} ${EXE} ${ARGS}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  set(${out_var} "${out}${err}" PARENT_SCOPE)
  set(${rc_var} "${rc}" PARENT_SCOPE)
endfunction()

run_example(cpu "${WORK}/cpu.log" out rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the cpu run failed (${rc}):\n${out}")
endif()
run_example(acme "${WORK}/acme.log" out rc GRAFT_LOG=warn)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the acme run with fallback failed (${rc})")
endif()
# The run names what fell back: the counters, and one warning per kind.
foreach(want "device acme:0" "fallback: [0-9]+ ops of [0-9]+ kinds ran on another device"
    "conv2d|softmax|log_softmax" "on cpu:0" "graft\\[warn\\]: op '")
  if(NOT out MATCHES "${want}")
    message(FATAL_ERROR "the acme run's output lacks '${want}'")
  endif()
endforeach()
execute_process(COMMAND ${CMP} compare "${WORK}/acme.log" "${WORK}/cpu.log" ${RTOL}
  RESULT_VARIABLE rc OUTPUT_VARIABLE cmp ERROR_VARIABLE cmp_err)
message("${cmp}${cmp_err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the losses on acme differ from those on cpu")
endif()

run_example(acme "${WORK}/strict.log" out rc GRAFT_FALLBACK=off)
if(rc EQUAL 0)
  message(FATAL_ERROR "the acme run in strict mode succeeded:\n${out}")
endif()
foreach(want "does not provide op '" "on device acme:0|device acme:0" "GRAFT_FALLBACK=off")
  if(NOT out MATCHES "${want}")
    message(FATAL_ERROR "the strict run's error lacks '${want}':\n${out}")
  endif()
endforeach()
message("strict mode: ${out}")
