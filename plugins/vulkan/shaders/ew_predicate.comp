/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// graft: f16
// Bool results: comparisons (a, b of one dtype), logical_and/or (any dtypes),
// logical_not (a only), with the formulas of op_math.def. DA, DB: the
// inputs' dtypes.
#include "common.glsl"
#include "ops.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 67u;
layout(constant_id = 2) const uint DA = 0u;
layout(constant_id = 3) const uint DB = 0u;
TENSOR(1, y)
TENSOR(2, a)
TENSOR(3, b)
TENSOR_INT_IO(a)
TENSOR_INT_IO(b)
#include "ew_index.glsl"

#include "ew_math.glsl"

void main() {
    ew_setup();
    FOR_EACH_ITEM(i, P.w[EW_N]) {
        uint oy, oa, ob, o3;
        ew_offsets(i, oy, oa, ob, o3);
        bool r;
        if (OP == OP_LOGICAL_NOT) r = gf_logical_bool(OP, a_truth(DA, oa));
        else if (OP == OP_LOGICAL_AND || OP == OP_LOGICAL_OR)
            r = gf_logical_bool(OP, a_truth(DA, oa), b_truth(DB, ob));
        else if (DA == DT_F32) r = gf_compare_f32(OP, a_f32[oa], b_f32[ob]);
        IF_F64(else if (DA == DT_F64) r = gf_compare_f64(OP, a_f64[oa], b_f64[ob]);)
        IF_F16(else if (DA == DT_F16) r = gf_compare_f32(OP, h2f(a_f16[oa]), h2f(b_f16[ob]));)
        else r = gf_compare_int(OP, a_ldi(DA, oa), b_ldi(DB, ob)); // i32, i64, bool widen
        y_u8[oy] = uint8_t(r ? 1 : 0);
    }
}
