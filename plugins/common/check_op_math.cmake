# SPDX-License-Identifier: BSD-3-Clause
# check_op_math.cmake — do generated files render the same formulas?
#
#   cmake "-DFILES=<generated file>|<generated file>..." -P check_op_math.cmake
#
# Every file graft-opgen writes carries, before each function, a line
#   gf-math <op> <compute type>: <formula as op_math.def vocabulary tokens>
# that does not depend on the dialect. This script fails unless all the files
# hold the same such lines, in the same order: the OpenCL, GLSL and CUDA
# kernels then come from one set of formulas, and a formula verified on one
# device is the formula of every other.
if(NOT FILES)
  message(FATAL_ERROR "usage: cmake \"-DFILES=a|b...\" -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
string(REPLACE "|" ";" files "${FILES}")
set(first "")
foreach(f IN LISTS files)
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "${f} does not exist (was it generated?)")
  endif()
  file(STRINGS "${f}" lines REGEX "gf-math [a-z_0-9]+ [a-z0-9]+: ")
  set(formulas "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ".*(gf-math [^*]*[^ *]).*" "\\1" formula "${line}")
    list(APPEND formulas "${formula}")
  endforeach()
  list(LENGTH formulas n)
  if(n EQUAL 0)
    message(FATAL_ERROR "${f} holds no gf-math lines: not a graft-opgen output")
  endif()
  if(first STREQUAL "")
    set(first "${f}")
    set(reference "${formulas}")
    set(n_ref ${n})
  elseif(NOT formulas STREQUAL reference)
    foreach(i RANGE 0 ${n_ref})
      list(GET reference ${i} a)
      list(GET formulas ${i} b)
      if(NOT a STREQUAL b)
        message(FATAL_ERROR "${f} differs from ${first}:\n  ${b}\nwhere the first has\n  ${a}")
      endif()
    endforeach()
    message(FATAL_ERROR "${f} has ${n} formulas, ${first} has ${n_ref}")
  endif()
endforeach()
message(STATUS "${n_ref} formulas, the same in every file")
