/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// graft: f16
// graft: parts 4
// y = f(a, b): arithmetic of one dtype (broadcast operands come with stride 0);
// part OP % 4 of the shader has OP.
#include "common.glsl"
#include "ops.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 60u;
layout(constant_id = 2) const uint DT = 0u;
TENSOR(1, y)
TENSOR(2, a)
TENSOR(3, b)
#include "ew_index.glsl"
#include "ew_math.glsl"
layout(std430, set = 0, binding = 1) writeonly buffer YV4_ { vec4 y_v4[]; };
layout(std430, set = 0, binding = 2) readonly buffer AV4_ { vec4 a_v4[]; };
layout(std430, set = 0, binding = 3) readonly buffer BV4_ { vec4 b_v4[]; };

void main() {
    ew_setup();
    // Contiguous f32 starting at multiples of 4 elements: vec4 loads and
    // stores, the tail one by one (as ew_unary.comp).
    if (DT == DT_F32 && ew_rank == 1u && ew_s0 == 1u && ew_s1 == 1u && ew_s2 == 1u &&
        ew_o0 % 4u == 0u && ew_o1 % 4u == 0u && ew_o2 % 4u == 0u) {
        uint n = P.w[EW_N], n4 = n / 4u, y4 = ew_o0 / 4u, a4 = ew_o1 / 4u, b4 = ew_o2 / 4u;
        FOR_EACH_ITEM(i, n4) {
            vec4 u = a_v4[a4 + i], v = b_v4[b4 + i];
            y_v4[y4 + i] = vec4(ew_binary_f32(u.x, v.x), ew_binary_f32(u.y, v.y),
                                ew_binary_f32(u.z, v.z), ew_binary_f32(u.w, v.w));
        }
        FOR_EACH_ITEM(i, n - n4 * 4u) {
            uint k = n4 * 4u + i;
            y_f32[ew_o0 + k] = ew_binary_f32(a_f32[ew_o1 + k], b_f32[ew_o2 + k]);
        }
        return;
    }
    FOR_EACH_ITEM(i, P.w[EW_N]) {
        uint oy, oa, ob, o3;
        ew_offsets(i, oy, oa, ob, o3);
        if (DT == DT_F32) y_f32[oy] = ew_binary_f32(a_f32[oa], b_f32[ob]);
        IF_F64(else if (DT == DT_F64) y_f64[oy] = ew_binary_f64(a_f64[oa], b_f64[ob]);)
        IF_F16(else if (DT == DT_F16) y_f16[oy] = f2h(ew_binary_f32(h2f(a_f16[oa]), h2f(b_f16[ob])));)
        else if (DT == DT_I32) y_i32[oy] = int(ew_binary_int(i64_of(a_i32[oa]), i64_of(b_i32[ob])));
        else if (DT == DT_I64) y_i64[oy] = ew_binary_int(a_i64[oa], b_i64[ob]);
    }
}
