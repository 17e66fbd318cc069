#version 450
// graft: bindings 4
// graft: f16
// y = f(a, b): arithmetic of one dtype (broadcast operands come with stride 0).
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

void main() {
    ew_setup();
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
