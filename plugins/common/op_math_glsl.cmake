# SPDX-License-Identifier: BSD-3-Clause
# op_math_glsl.cmake — the GLSL dialect of the shared elementwise math.
#
#   include(${PROJECT_SOURCE_DIR}/plugins/common/op_math_glsl.cmake)
#   graft_op_math_glsl(<output .glsl> <output caps header>)
#
# adds a build step that writes, from op_math.def, the GLSL functions of every
# op (for #include in compute shaders) and a C header listing the op ids that
# have an f64 and an integer formula in GLSL, with graft-opgen-glsl
# (opgen_glsl.c, which compiles opgen.c in and adds the GLSL spelling). The
# GLSL #includes glsl_fmath.glsl and glsl_dmath.glsl: compile shaders with
# -I <this directory>.
include_guard(GLOBAL)

add_executable(graft_opgen_glsl "${CMAKE_CURRENT_LIST_DIR}/opgen_glsl.c")
set_target_properties(graft_opgen_glsl PROPERTIES OUTPUT_NAME "graft-opgen-glsl")
target_include_directories(graft_opgen_glsl PRIVATE "${PROJECT_SOURCE_DIR}/abi")

function(graft_op_math_glsl out caps)
  set(dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  add_custom_command(OUTPUT "${out}" "${caps}"
    COMMAND graft_opgen_glsl glsl "${out}" "${caps}"
    DEPENDS graft_opgen_glsl "${dir}/op_math.def" "${dir}/opgen.c" "${dir}/opgen_glsl.c"
            "${dir}/glsl_dmath.glsl" "${dir}/glsl_fmath.glsl"
    COMMENT "Generating the GLSL elementwise math from op_math.def"
    VERBATIM)
endfunction()
