# SPDX-License-Identifier: BSD-3-Clause
# check_spdx.cmake — every source file of the project names its licence in
# an SPDX line near its top (LICENSE: BSD-3-Clause). cmake -DROOT=<source
# dir> -P check_spdx.cmake
set(patterns *.c *.h *.cl *.cu *.cuh *.glsl *.comp *.def *.cmake *.py *.sh *.in CMakeLists.txt)
set(dirs abi core plugins tools tests examples dist scripts cmake)
set(missing "")
set(count 0)
foreach(d ${dirs})
  foreach(p ${patterns})
    file(GLOB_RECURSE found "${ROOT}/${d}/${p}")
    foreach(f ${found})
      if(f MATCHES "/tests/fuzz/corpus/")
        continue()
      endif()
      file(READ "${f}" head LIMIT 400)
      math(EXPR count "${count} + 1")
      if(NOT head MATCHES "SPDX-License-Identifier: BSD-3-Clause")
        list(APPEND missing "${f}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(missing)
  list(JOIN missing "\n  " text)
  message(FATAL_ERROR "source files without an SPDX-License-Identifier: BSD-3-Clause line in "
          "their first lines:\n  ${text}")
endif()
message(STATUS "${count} source files name their licence")
