/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 5
// graft: f16
// f32 matmul (f16 too: loaded as f32, accumulated in f32, rounded once)
// blocked in registers, for CPU-like devices (lavapipe): each invocation
// computes RM rows x 4 columns of y; the RM rows are the workgroup's, so
// their a values are the same in every invocation (uniform loads, which a
// SIMD compiler loads once for all lanes), and only the 4 b values of each k
// differ between invocations. No shared memory, no barriers. Any strides.
// With MM_BIAS, a bias per row of y is added to the sums as they are stored
// (conv2d's bias: vk_ops_conv_gemm.c).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 0u; // DT_F32 or DT_F16
layout(constant_id = 2) const uint RM = 8u; // rows per workgroup (at most 8)
TENSOR(1, y)
TENSOR(2, a)
TENSOR(3, b)
TENSOR_F32_IO(y)
TENSOR_F32_IO(a)
TENSOR_F32_IO(b)
// b as vec4s: one 16-byte load per invocation and k instead of four, when
// b's rows are contiguous f32 and 16-byte aligned (checked below).
layout(std430, set = 0, binding = 3) readonly buffer BV4_ { vec4 b_v4[]; };
layout(std430, set = 0, binding = 4) readonly buffer BIAS_ { float bias_f32[]; };
#include "matmul_params.glsl"

void main() {
    uint M = P.w[MM_M], N = P.w[MM_N], K = P.w[MM_K];
    uint am = P.w[MM_AM], ak = P.w[MM_AK], bk = P.w[MM_BK], bn = P.w[MM_BN];
    uint m0 = gl_WorkGroupID.y * RM;
    uint n = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * 4u;
    bool acc_y = P.w[MM_ACC] != 0u;
    for (uint bi = gl_WorkGroupID.z; bi < P.w[MM_NB]; bi += gl_NumWorkGroups.z) {
        uint ao, bo, yo;
        batch_offsets(bi, ao, bo, yo);
        vec4 acc[8];
        [[unroll]] for (uint i = 0u; i < 8u; i++) acc[i] = vec4(0.0);
        // Columns past N read column N - 1 (kept in bounds, never stored).
        uint c0 = min(n, N - 1u), c1 = min(n + 1u, N - 1u), c2 = min(n + 2u, N - 1u),
             c3 = min(n + 3u, N - 1u);
        uint pb = bo;
        uint pa = ao + m0 * am;
        bool vec_b = DT == DT_F32 && bn == 1u && bo % 4u == 0u && bk % 4u == 0u && N % 4u == 0u;
        if (vec_b) {
            uint pv = bo / 4u + min(n, N - 4u) / 4u, kv = bk / 4u;
            for (uint k = 0u; k < K; k++) {
                vec4 bv = b_v4[pv];
                [[unroll]] for (uint i = 0u; i < 8u; i++)
                    if (i < RM && m0 + i < M) acc[i] += a_ldf(DT, pa + i * am) * bv;
                pv += kv;
                pa += ak;
            }
        } else {
            for (uint k = 0u; k < K; k++) {
                vec4 bv = vec4(b_ldf(DT, pb + c0 * bn), b_ldf(DT, pb + c1 * bn),
                               b_ldf(DT, pb + c2 * bn), b_ldf(DT, pb + c3 * bn));
                [[unroll]] for (uint i = 0u; i < 8u; i++)
                    if (i < RM && m0 + i < M) acc[i] += a_ldf(DT, pa + i * am) * bv;
                pb += bk;
                pa += ak;
            }
        }
        bool bias = P.w[MM_BIAS] != 0u;
        uint brow = bias ? P.w[MM_BIAS + 1u] + (bi % P.w[MM_BIAS + 3u]) * M * P.w[MM_BIAS + 2u] : 0u;
        [[unroll]] for (uint i = 0u; i < 8u; i++) {
            uint m = m0 + i;
            if (i >= RM || m >= M) continue;
            if (bias) acc[i] += bias_f32[brow + m * P.w[MM_BIAS + 2u]];
            [[unroll]] for (uint j = 0u; j < 4u; j++) {
                if (n + j >= N) continue;
                uint py = yo + m * P.w[MM_YM] + (n + j) * P.w[MM_YN];
                y_stf(DT, py, acc_y ? y_ldf(DT, py) + acc[i][j] : acc[i][j]);
            }
        }
    }
}
