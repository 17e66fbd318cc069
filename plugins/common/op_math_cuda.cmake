# SPDX-License-Identifier: BSD-3-Clause
# op_math_cuda.cmake — the CUDA dialect of the shared elementwise math.
#
#   include(${PROJECT_SOURCE_DIR}/plugins/common/op_math_cuda.cmake)
#   graft_op_math_cuda(<output header>)
#
# adds a build step that writes <output header> from op_math.def with
# graft-opgen-cuda (opgen_cuda.c, which compiles opgen.c in and adds the CUDA
# spelling). The header is CUDA C++ under nvcc and plain C11 elsewhere, so the
# plugin's kernels and the host formula test use the same text.
include_guard(GLOBAL)

add_executable(graft_opgen_cuda "${CMAKE_CURRENT_LIST_DIR}/opgen_cuda.c")
set_target_properties(graft_opgen_cuda PROPERTIES OUTPUT_NAME "graft-opgen-cuda")

function(graft_op_math_cuda out)
  set(dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  add_custom_command(OUTPUT "${out}"
    COMMAND graft_opgen_cuda cuda "${out}"
    DEPENDS graft_opgen_cuda "${dir}/op_math.def" "${dir}/opgen.c" "${dir}/opgen_cuda.c"
    COMMENT "Generating the CUDA elementwise math from op_math.def"
    VERBATIM)
endfunction()
