/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// INDEX_SELECT / GATHER (ADD = 0): y[p] = data[p with p[dim] = index[..]];
// SCATTER_ADD / INDEX_ADD (ADD = 1): for each position of the walk, a loop
// along dim accumulating into y in index order, so no two invocations touch
// one element and float sums match the reference's order. Params
// (vk_ops_index.c): 0 items 1 rank 2 dim 3..5 offsets of y, data, index
//   6 limit (size of the indexed dim) 7 loop length 8..10 dim strides of y,
//   data, index 11.. walk sizes[8], then y, data, index strides[8] each
//   (their dim entries unused).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 0u;
layout(constant_id = 2) const uint ADD = 0u;
TENSOR(1, y)
TENSOR(2, d)
TENSOR(3, ix)
TENSOR_INT_IO(y)
TENSOR_INT_IO(d)

void main() {
    uint rank = P.w[1], dim = P.w[2];
    int64_t limit = int64_t(P.w[6]);
    uint ysd = P.w[8], dsd = P.w[9], isd = P.w[10];
    FOR_EACH_ITEM(it, P.w[0]) {
        uint oy = P.w[3], od = P.w[4], oi = P.w[5], cdim = 0u, rem = it;
        for (uint k = rank; k > 0u; k--) {
            uint dd = k - 1u, s = P.w[11u + dd], c = rem % s;
            rem /= s;
            if (dd == dim) {
                cdim = c;
                continue;
            }
            oy += c * P.w[19u + dd];
            od += c * P.w[27u + dd];
            oi += c * P.w[35u + dd];
        }
        if (ADD == 0u) {
            int64_t idx = ix_i64[oi + cdim * isd];
            if (idx < 0l || idx >= limit) continue; // checked before launch; never read outside
            uint dst = oy + cdim * ysd, src = od + uint(idx) * dsd;
            COPY_ELEM(y, d, DT, dst, src)
        } else {
            for (uint j = 0u; j < P.w[7]; j++) {
                int64_t idx = ix_i64[oi + j * isd];
                if (idx < 0l || idx >= limit) continue;
                uint dst = oy + uint(idx) * ysd, src = od + j * dsd;
                if (DT == DT_F32) y_f32[dst] += d_f32[src];
                IF_F64(else if (DT == DT_F64) y_f64[dst] += d_f64[src];)
                else y_sti(DT, dst, y_ldi(DT, dst) + d_ldi(DT, src));
            }
        }
    }
}
