/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 9
// batch_norm over x [N, C, ...]: a workgroup per channel. Params
// (vk_ops_norm.c): 0 C  1 n per channel  2 rank  3 x offset  4 y offset
//   5 x channel stride  6 y channel stride  7 flags (1 w, 2 b, 4 running mean,
//   8 running var, 16 training)  8..13 offsets of w b rm rv save_mean save_invstd
//   14..19 their strides  20 momentum f32  21 eps f32  22 momentum f64
//   24 eps f64  26.. sizes[8]  34.. x strides[8]  42.. y strides[8]
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 0u;
TENSOR(1, y)
TENSOR(2, sm)
TENSOR(3, si)
TENSOR(4, x)
TENSOR(5, w)
TENSOR(6, b)
TENSOR(7, rm)
TENSOR(8, rv)
#define BN_C 0u
#define BN_N 1u
#define BN_RANK 2u
#define BN_XOFF 3u
#define BN_YOFF 4u
#define BN_XCS 5u
#define BN_YCS 6u
#define BN_FLAGS 7u
#define BN_TOFF 8u
#define BN_TSTR 14u
#define BN_MOM32 20u
#define BN_EPS32 21u
#define BN_MOM64 22u
#define BN_EPS64 24u
#define BN_SIZE 26u
#define BN_XS 34u
#define BN_YS 42u

void elem_offsets(uint j, out uint ox, out uint oy) {
    ox = 0u;
    oy = 0u;
    uint rem = j;
    for (uint k = P.w[BN_RANK]; k > 0u; k--) {
        uint d = k - 1u, s = P.w[BN_SIZE + d], c = d > 0u ? rem % s : rem;
        rem /= s;
        ox += c * P.w[BN_XS + d];
        oy += c * P.w[BN_YS + d];
    }
}
uint elem_x(uint j) {
    uint ox, oy;
    elem_offsets(j, ox, oy);
    return ox;
}
uint g_xb;

#define FT float
#define FN(n) n##_f32
#define LOADV(j) x_f32[g_xb + elem_x(j)]
#define L(t, i) t##_f32[i]
#define S(t, i, v) t##_f32[i] = (v)
#define PF(a, b) pwf(a)
#include "group_sum.glsl"
#include "batch_norm_body.glsl"
#undef FT
#undef FN
#undef LOADV
#undef L
#undef S
#undef PF
#if GF_F64
#define FT double
#define FN(n) n##_f64
#define LOADV(j) x_f64[g_xb + elem_x(j)]
#define L(t, i) t##_f64[i]
#define S(t, i, v) t##_f64[i] = (v)
#define PF(a, b) pwd(b)
#include "group_sum.glsl"
#include "batch_norm_body.glsl"
#endif

void main() {
    uint c = group_linear();
    if (c >= P.w[BN_C]) return;
    g_xb = P.w[BN_XOFF] + c * P.w[BN_XCS];
    if (DT == DT_F32) batch_norm_f32(c);
    IF_F64(else batch_norm_f64(c);)
}
