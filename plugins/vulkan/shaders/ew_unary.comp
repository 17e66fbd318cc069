#version 450
// graft: bindings 3
// graft: f16
// y = f(x) for every unary op of one dtype; OP and DT are specialisation
// constants (vk_ops_elementwise.c).
#include "common.glsl"
#include "ops.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 20u;
layout(constant_id = 2) const uint DT = 0u;
TENSOR(1, y)
TENSOR(2, x)
#include "ew_index.glsl"
#include "ew_math.glsl"

void main() {
    ew_setup();
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
