/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 2
// graft: f16
// Every element of y = one element's bytes (built on the host), by size class.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ES = 4u; // element size: 1, 2, 4 or 8
TENSOR(1, y)
#include "ew_index.glsl"

void main() {
    ew_setup();
    FOR_EACH_ITEM(i, P.w[EW_N]) {
        uint oy, o1, o2, o3;
        ew_offsets(i, oy, o1, o2, o3);
        if (ES == 1u) y_u8[oy] = uint8_t(P.w[EW_SCALAR]);
        IF_F16(else if (ES == 2u) y_f16[oy] = unpackFloat2x16(P.w[EW_SCALAR]).x;)
        else if (ES == 4u) y_i32[oy] = int(P.w[EW_SCALAR]);
        else y_i64[oy] = int64_t(pw64(EW_SCALAR));
    }
}
