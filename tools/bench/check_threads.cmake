# SPDX-License-Identifier: BSD-3-Clause
# Checks that graft-bench --threads 1 holds for the OpenMP runtime it links
# (libgomp reads OMP_NUM_THREADS when it loads, before main): run with
# OMP_NUM_THREADS set to another value, the MLP step must run on 1 thread.
#   cmake -DBENCH=<graft-bench> -P check_threads.cmake
# Fails when the JSON output says OpenMP runs more than 1 thread, or when a
# step's process CPU time is well above its wall time (cpu_to_wall > 1.3;
# one thread cannot exceed 1, other load on the machine only lowers it).

function(fail msg)
  message(FATAL_ERROR "${msg}")
endfunction()

if(NOT BENCH)
  fail("give -DBENCH=<graft-bench>")
endif()
# The full-size MLP (the quick one is small enough for oneDNN to run it on
# one thread whatever OpenMP allows), 5 timed steps.
set(cmd "${BENCH}" --only mlp --device cpu:0 --threads 1 --warmup 1 --repeats 5
  --max-repeats 5 --min-time 0 --no-progress --json)
execute_process(COMMAND ${cmd} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 77)
  message(STATUS "cpu:0 is not present: skipped")
  return()
endif()
if(NOT rc EQUAL 0)
  fail("graft-bench exited with ${rc}\n${out}\n${err}")
endif()

string(JSON threads ERROR_VARIABLE jerr GET "${out}" threads)
if(jerr)
  fail("not valid JSON (threads): ${jerr}\n${out}")
endif()
message(STATUS "threads: ${threads}")
string(JSON omp ERROR_VARIABLE jerr GET "${out}" openmp_threads)
if(NOT jerr AND NOT omp EQUAL 1)
  fail("--threads 1, yet OpenMP runs ${omp} threads (OMP_NUM_THREADS=$ENV{OMP_NUM_THREADS} "
    "at start)\n${threads}")
endif()

string(JSON n ERROR_VARIABLE jerr LENGTH "${out}" results)
if(jerr OR n LESS 1)
  fail("no results in the output: ${jerr}\n${out}")
endif()
set(found FALSE)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${out}" results ${i} workload)
  string(JSON variant GET "${out}" results ${i} variant)
  if(NOT name STREQUAL "mlp train step" OR NOT variant STREQUAL "")
    continue()
  endif()
  set(found TRUE)
  string(JSON status GET "${out}" results ${i} status)
  if(NOT status STREQUAL "ok")
    string(JSON note GET "${out}" results ${i} note)
    fail("the MLP step is ${status}: ${note}")
  endif()
  string(JSON wall GET "${out}" results ${i} time_s median)
  string(JSON cpu GET "${out}" results ${i} cpu_median_s)
  string(JSON ratio GET "${out}" results ${i} cpu_to_wall)
  message(STATUS "mlp train step: wall ${wall} s, cpu ${cpu} s per step, cpu/wall ${ratio}")
  # if() compares these as floating-point numbers.
  if(ratio GREATER 1.3)
    fail("--threads 1, yet a step took ${cpu} s of CPU time in ${wall} s (cpu/wall ${ratio}): "
      "more than one thread ran\n${threads}")
  endif()
endforeach()
if(NOT found)
  fail("no 'mlp train step' row in the output\n${out}")
endif()
