/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 7
// layer_norm over the trailing dims: a workgroup per leading index. Params
// (vk_ops_norm.c): 0 groups  1 n (inner elements)  2 outer rank 3 inner rank
//   4..7 offsets of x, y, mean, rstd  8 w offset 9 b offset 10 flags (1 w, 2 b)
//   11 eps f32  12 eps f64  14.. outer sizes[8], outer strides[4][8] (x y mean rstd)
//   54.. inner sizes[8], inner strides[4][8] (x y w b)
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 0u;
TENSOR(1, y)
TENSOR(2, mn)
TENSOR(3, rs)
TENSOR(4, x)
TENSOR(5, w)
TENSOR(6, b)
#define LN_G 0u
#define LN_N 1u
#define LN_OR 2u
#define LN_IR 3u
#define LN_XOFF 4u
#define LN_YOFF 5u
#define LN_MOFF 6u
#define LN_ROFF 7u
#define LN_WOFF 8u
#define LN_BOFF 9u
#define LN_FLAGS 10u
#define LN_EPS32 11u
#define LN_EPS64 12u
#define LN_OSIZE 14u
#define LN_OSTR 22u
#define LN_ISIZE 54u
#define LN_ISTR 62u

uint g_xb; // the group's x base, for LOADV

void inner_offsets(uint j, out uint ox, out uint oy, out uint ow, out uint ob) {
    ox = 0u;
    oy = 0u;
    ow = P.w[LN_WOFF];
    ob = P.w[LN_BOFF];
    uint rem = j;
    for (uint k = P.w[LN_IR]; k > 0u; k--) {
        uint d = k - 1u, s = P.w[LN_ISIZE + d], c = d > 0u ? rem % s : rem;
        rem /= s;
        ox += c * P.w[LN_ISTR + d];
        oy += c * P.w[LN_ISTR + 8u + d];
        ow += c * P.w[LN_ISTR + 16u + d];
        ob += c * P.w[LN_ISTR + 24u + d];
    }
}
uint inner_x(uint j) {
    uint ox, oy, ow, ob;
    inner_offsets(j, ox, oy, ow, ob);
    return ox;
}

#define FT float
#define FN(n) n##_f32
#define LOADV(j) x_f32[g_xb + inner_x(j)]
#include "group_sum.glsl"
#define XL(i) x_f32[i]
#define WL(i) w_f32[i]
#define BL(i) b_f32[i]
#define ST_Y(i, v) y_f32[i] = (v)
#define ST_M(i, v) mn_f32[i] = (v)
#define ST_R(i, v) rs_f32[i] = (v)
#define EPS pwf(LN_EPS32)
#include "layer_norm_body.glsl"
#undef FT
#undef FN
#undef LOADV
#undef XL
#undef WL
#undef BL
#undef ST_Y
#undef ST_M
#undef ST_R
#undef EPS
#if GF_F64
#define FT double
#define FN(n) n##_f64
#define LOADV(j) x_f64[g_xb + inner_x(j)]
#include "group_sum.glsl"
#define XL(i) x_f64[i]
#define WL(i) w_f64[i]
#define BL(i) b_f64[i]
#define ST_Y(i, v) y_f64[i] = (v)
#define ST_M(i, v) mn_f64[i] = (v)
#define ST_R(i, v) rs_f64[i] = (v)
#define EPS pwd(LN_EPS64)
#include "layer_norm_body.glsl"
#endif

void main() {
    uint g = group_linear();
    if (g >= P.w[LN_G]) return;
    // x base of the group, for the moments' loads.
    uint xb = P.w[LN_XOFF], rem = g;
    for (uint k = P.w[LN_OR]; k > 0u; k--) {
        uint d = k - 1u, s = P.w[LN_OSIZE + d], c = rem % s;
        rem /= s;
        xb += c * P.w[LN_OSTR + d];
    }
    g_xb = xb;
    if (DT == DT_F32) layer_norm_f32(g);
    IF_F64(else layer_norm_f64(g);)
}
