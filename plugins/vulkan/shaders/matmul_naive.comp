/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// graft: f16
// y[b, m, n] = sum_k a[b, m, k] * b[b, k, n]: one invocation per output, any
// strides. Floats accumulate in their dtype (f16 in f32); integers in
// int64, wrapping.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 0u;
TENSOR(1, y)
TENSOR(2, a)
TENSOR(3, b)
TENSOR_INT_IO(a)
TENSOR_INT_IO(b)
TENSOR_INT_IO(y)
#include "matmul_params.glsl"

void main() {
    uint M = P.w[MM_M], N = P.w[MM_N], K = P.w[MM_K];
    uint total = M * N * P.w[MM_NB];
    uint am = P.w[MM_AM], ak = P.w[MM_AK], bk = P.w[MM_BK], bn = P.w[MM_BN];
    FOR_EACH_ITEM(i, total) {
        uint n = i % N, m = (i / N) % M, bi = i / (M * N);
        uint ao, bo, yo;
        batch_offsets(bi, ao, bo, yo);
        uint pa = ao + m * am, pb = bo + n * bn;
        uint py = yo + m * P.w[MM_YM] + n * P.w[MM_YN];
        if (DT == DT_F32) {
            float acc = 0.0;
            for (uint k = 0u; k < K; k++) acc += a_f32[pa + k * ak] * b_f32[pb + k * bk];
            y_f32[py] = P.w[MM_ACC] != 0u ? y_f32[py] + acc : acc;
#if GF_F16
        } else if (DT == DT_F16) {
            float acc = 0.0;
            for (uint k = 0u; k < K; k++) acc += h2f(a_f16[pa + k * ak]) * h2f(b_f16[pb + k * bk]);
            y_f16[py] = f2h(P.w[MM_ACC] != 0u ? h2f(y_f16[py]) + acc : acc);
#endif
#if GF_F64
        } else if (DT == DT_F64) {
            double acc = 0.0lf;
            for (uint k = 0u; k < K; k++) acc += a_f64[pa + k * ak] * b_f64[pb + k * bk];
            y_f64[py] = P.w[MM_ACC] != 0u ? y_f64[py] + acc : acc;
#endif
        } else {
            int64_t acc = 0l;
            for (uint k = 0u; k < K; k++) acc += a_ldi(DT, pa + k * ak) * b_ldi(DT, pb + k * bk);
            y_sti(DT, py, P.w[MM_ACC] != 0u ? y_ldi(DT, py) + acc : acc);
        }
    }
}
