/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// graft: f16
// f32 matmul (f16 too: loaded as f32, accumulated in f32, rounded once) in
// shared-memory tiles: a workgroup of WX x WY invocations
// computes a (4 WY) x (4 WX) block of y, each invocation a 4 x 4 patch held in
// registers, stepping through K in slices of TK loaded cooperatively (any
// strides; edges padded with zeros).
#include "common.glsl"
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint TK = 16u;
layout(constant_id = 3) const uint DT = 0u; // DT_F32 or DT_F16
TENSOR(1, y)
TENSOR(2, a)
TENSOR(3, b)
TENSOR_F32_IO(y)
TENSOR_F32_IO(a)
TENSOR_F32_IO(b)
#include "matmul_params.glsl"

const uint BM = 4u * gl_WorkGroupSize.y;
const uint BN = 4u * gl_WorkGroupSize.x;
// Tiles as vec4s of 4 consecutive rows (A) or columns (B): an invocation's
// 4 x 4 patch reads one vec4 of each per step of k.
shared vec4 As[TK * gl_WorkGroupSize.y]; // [k][m / 4]
shared vec4 Bs[TK * gl_WorkGroupSize.x]; // [k][n / 4]

void main() {
    uint M = P.w[MM_M], N = P.w[MM_N], K = P.w[MM_K];
    uint am = P.w[MM_AM], ak = P.w[MM_AK], bk = P.w[MM_BK], bn = P.w[MM_BN];
    uint WX = gl_WorkGroupSize.x, WY = gl_WorkGroupSize.y;
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint lid = ty * WX + tx, nthreads = WX * WY;
    uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    for (uint bi = gl_WorkGroupID.z; bi < P.w[MM_NB]; bi += gl_NumWorkGroups.z) {
        uint ao, bo, yo;
        batch_offsets(bi, ao, bo, yo);
        vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
        for (uint k0 = 0u; k0 < K; k0 += TK) {
            for (uint e = lid; e < TK * BM; e += nthreads) {
                uint kk = e / BM, mm = e % BM;
                uint m = m0 + mm, k = k0 + kk;
                As[kk * WY + mm / 4u][mm % 4u] = m < M && k < K ? a_ldf(DT, ao + m * am + k * ak) : 0.0;
            }
            for (uint e = lid; e < TK * BN; e += nthreads) {
                uint kk = e / BN, nn = e % BN;
                uint n = n0 + nn, k = k0 + kk;
                Bs[kk * WX + nn / 4u][nn % 4u] = n < N && k < K ? b_ldf(DT, bo + k * bk + n * bn) : 0.0;
            }
            barrier();
            for (uint kk = 0u; kk < TK; kk++) {
                vec4 av = As[kk * WY + ty], bv = Bs[kk * WX + tx];
                acc[0] += av.x * bv;
                acc[1] += av.y * bv;
                acc[2] += av.z * bv;
                acc[3] += av.w * bv;
            }
            barrier();
        }
        [[unroll]] for (uint i = 0u; i < 4u; i++) {
            uint m = m0 + 4u * ty + i;
            [[unroll]] for (uint j = 0u; j < 4u; j++) {
                uint n = n0 + 4u * tx + j;
                uint py = yo + m * P.w[MM_YM] + n * P.w[MM_YN];
                if (m < M && n < N) y_stf(DT, py, P.w[MM_ACC] != 0u ? y_ldf(DT, py) + acc[i][j] : acc[i][j]);
            }
        }
    }
}
