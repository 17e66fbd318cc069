# SPDX-License-Identifier: BSD-3-Clause
# run_snippet.cmake -DEXE=<program> -DDIR=<working dir> [-DEXPECTED=<file>]
#                   [-DLAUNCHER=<command|args...>]
# Runs one program of the docs (through LAUNCHER, '|'-separated, e.g.
# mpirun -np 2, when given); it must exit with 0 and, when the page shows
# its output, print exactly that (trailing blanks aside).
cmake_minimum_required(VERSION 3.25)
file(MAKE_DIRECTORY "${DIR}")
set(launch "")
if(LAUNCHER)
  string(REPLACE "|" ";" launch "${LAUNCHER}")
endif()
execute_process(COMMAND ${launch} "${EXE}" WORKING_DIRECTORY "${DIR}" RESULT_VARIABLE rc
  OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} exited with ${rc}\n--- stdout\n${out}\n--- stderr\n${err}")
endif()
if(EXPECTED)
  file(READ "${EXPECTED}" want)
  foreach(v out want)
    string(REGEX REPLACE "[ \t]+\n" "\n" ${v} "${${v}}")
    string(STRIP "${${v}}" ${v})
  endforeach()
  if(NOT out STREQUAL want)
    message(FATAL_ERROR "${EXE} printed something other than the output shown in the page\n"
      "--- the page shows\n${want}\n--- the program printed\n${out}\n--- stderr\n${err}")
  endif()
endif()
message(STATUS "${EXE}: ok\n${out}")
