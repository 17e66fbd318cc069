/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 3
// graft: f16
// tril / triu: y = x where (col - row) is on the kept side of the diagonal,
// else 0. The shape is not coalesced: the last two dims are row and col.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 0u;
layout(constant_id = 2) const uint LOWER = 1u;
TENSOR(1, y)
TENSOR(2, x)
#include "ew_index.glsl"

void main() {
    ew_setup();
    uint rank = P.w[EW_RANK];
    uint cols = P.w[EW_SIZE + rank - 1u], rows = P.w[EW_SIZE + rank - 2u];
    int64_t diag = int64_t(pw64(EW_SCALAR));
    FOR_EACH_ITEM(i, P.w[EW_N]) {
        uint oy, ox, o2, o3;
        ew_offsets(i, oy, ox, o2, o3);
        int64_t d = int64_t(i % cols) - int64_t((i / cols) % rows);
        bool keep = LOWER != 0u ? d <= diag : d >= diag;
        if (keep) {
            COPY_ELEM(y, x, DT, oy, ox)
        } else if (DT == DT_BOOL) {
            y_u8[oy] = uint8_t(0);
        } else if (DT == DT_I64 || DT == DT_F64) {
            y_i64[oy] = 0l;
#if GF_F16
        } else if (DT == DT_F16) {
            y_f16[oy] = float16_t(0.0);
#endif
        } else {
            y_i32[oy] = 0;
        }
    }
}
