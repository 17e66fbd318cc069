/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 3
// graft: f16
// graft: parts 8
// y = f(x) for every unary op of one dtype; OP and DT are specialisation
// constants (vk_ops_elementwise.c), and part OP % 8 of the shader has OP.
#include "common.glsl"
#include "ops.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 20u;
layout(constant_id = 2) const uint DT = 0u;
TENSOR(1, y)
TENSOR(2, x)
#include "ew_index.glsl"
#include "ew_math.glsl"
layout(std430, set = 0, binding = 1) writeonly buffer YV4_ { vec4 y_v4[]; };
layout(std430, set = 0, binding = 2) readonly buffer XV4_ { vec4 x_v4[]; };

void main() {
    ew_setup();
    // Contiguous f32 starting at multiples of 4 elements: vec4 loads and
    // stores (one access per lane for four elements; on lavapipe exp of 16M
    // f32 went from 0.21 to 0.94 GB/s, at loads 12 and 10), the tail one by one.
    if (DT == DT_F32 && ew_rank == 1u && ew_s0 == 1u && ew_s1 == 1u && ew_o0 % 4u == 0u &&
        ew_o1 % 4u == 0u) {
        uint n = P.w[EW_N], n4 = n / 4u, y4 = ew_o0 / 4u, x4 = ew_o1 / 4u;
        FOR_EACH_ITEM(i, n4) {
            vec4 v = x_v4[x4 + i];
            y_v4[y4 + i] = vec4(ew_unary_f32(v.x), ew_unary_f32(v.y), ew_unary_f32(v.z),
                                ew_unary_f32(v.w));
        }
        FOR_EACH_ITEM(i, n - n4 * 4u) y_f32[ew_o0 + n4 * 4u + i] = ew_unary_f32(x_f32[ew_o1 + n4 * 4u + i]);
        return;
    }
    FOR_EACH_ITEM(i, P.w[EW_N]) {
        uint oy, ox, o2, o3;
        ew_offsets(i, oy, ox, o2, o3);
        if (DT == DT_F32) y_f32[oy] = ew_unary_f32(x_f32[ox]);
        IF_F64(else if (DT == DT_F64) y_f64[oy] = ew_unary_f64(x_f64[ox]);)
        IF_F16(else if (DT == DT_F16) y_f16[oy] = f2h(ew_unary_f32(h2f(x_f16[ox])));)
        else if (DT == DT_I32) y_i32[oy] = int(ew_unary_int(i64_of(x_i32[ox])));
        else if (DT == DT_I64) y_i64[oy] = ew_unary_int(x_i64[ox]);
    }
}
