# SPDX-License-Identifier: BSD-3-Clause
# op_math.cmake — the shared elementwise math (op_math.def) for device plugins.
#
#   include(${PROJECT_SOURCE_DIR}/plugins/common/op_math.cmake)
#   graft_op_math(<dialect> <output file>)
#
# adds a build step that writes <output file> from op_math.def with
# graft-opgen (opgen.c, built for the host) in the given dialect; list the
# output among a target's sources, or DEPENDS of a custom command, to have it
# generated. Dialects: `graft-opgen --list` (opencl, c).
include_guard(GLOBAL)

add_executable(graft_opgen "${CMAKE_CURRENT_LIST_DIR}/opgen.c")
set_target_properties(graft_opgen PROPERTIES OUTPUT_NAME "graft-opgen")

function(graft_op_math dialect out)
  set(def "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/op_math.def")
  add_custom_command(OUTPUT "${out}"
    COMMAND graft_opgen ${dialect} "${out}"
    DEPENDS graft_opgen "${def}"
    COMMENT "Generating the ${dialect} elementwise math from op_math.def"
    VERBATIM)
endfunction()
