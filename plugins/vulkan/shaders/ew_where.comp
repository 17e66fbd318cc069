/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 5
// graft: f16
// y = cond ? a : b, a bit-exact copy of the chosen element.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 0u;
TENSOR(1, y)
TENSOR(2, c)
TENSOR(3, a)
TENSOR(4, b)
#include "ew_index.glsl"

void main() {
    ew_setup();
    FOR_EACH_ITEM(i, P.w[EW_N]) {
        uint oy, oc, oa, ob;
        ew_offsets(i, oy, oc, oa, ob);
        if (c_u8[oc] != uint8_t(0)) {
            COPY_ELEM(y, a, DT, oy, oa)
        } else {
            COPY_ELEM(y, b, DT, oy, ob)
        }
    }
}
