/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 2
// y[i] = start + i * step: exact in int64 when EXACT (integer output,
// integral start and step), else in double and rounded once.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 0u;
layout(constant_id = 2) const uint EXACT = 0u;
TENSOR(1, y)
TENSOR_INT_IO(y)
#include "ew_index.glsl"

void main() {
    ew_setup();
    FOR_EACH_ITEM(i, P.w[EW_N]) {
        uint oy, o1, o2, o3;
        ew_offsets(i, oy, o1, o2, o3);
        if (EXACT != 0u) {
            y_sti(DT, oy, int64_t(pw64(EW_SCALAR) + uint64_t(i) * pw64(EW_SCALAR + 2u)));
        } else {
#if GF_F64
            precise double v = pwd(EW_SCALAR + 4u) + double(i) * pwd(EW_SCALAR + 6u);
            if (DT == DT_F32) y_f32[oy] = float(v);
            else if (DT == DT_F64) y_f64[oy] = v;
            else if (DT == DT_I32) y_i32[oy] = f64_to_i32(v);
            else if (DT == DT_I64) y_i64[oy] = f64_to_i64(v);
#endif
        }
    }
}
