/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 3
// graft: f16
// softmax / log_softmax (f32, f64; f16 in f32) along one dim: a workgroup per line. The max
// is subtracted first, so exp never overflows. Params (vk_ops_norm.c):
//   0 lines  1 len  2 line rank  3 x offset  4 y offset  5 x dim stride
//   6 y dim stride  7.. line sizes[8], x strides[8], y strides[8]
#include "common.glsl"
#include "ops.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 121u;
layout(constant_id = 2) const uint DT = 0u;
TENSOR(1, y)
TENSOR(2, x)
TENSOR_F32_IO(x)
TENSOR_F32_IO(y)

#define FT float
#define FN(n) n##_f32
#define LOADV(j) 0.0
#define L(i) x_ldf(DT, i)
#define S(i, v) y_stf(DT, i, v)
#define EXPF exp
#define LOGF log
#include "group_sum.glsl"
#include "softmax_body.glsl"
#undef FT
#undef FN
#undef LOADV
#undef L
#undef S
#undef EXPF
#undef LOGF
#if GF_F64
#include "glsl_dmath.glsl" // plugins/common: exp and log in double
#define FT double
#define FN(n) n##_f64
#define LOADV(j) 0.0lf
#define L(i) x_f64[i]
#define S(i, v) y_f64[i] = (v)
#define EXPF gf_dexp
#define LOGF gf_dlog
#include "group_sum.glsl"
#include "softmax_body.glsl"
#endif

void main() {
    uint line = group_linear();
    if (line >= P.w[0]) return;
    uint xb = P.w[3], yb = P.w[4], rem = line;
    for (uint k = P.w[2]; k > 0u; k--) {
        uint d = k - 1u, s = P.w[7u + d], c = rem % s;
        rem /= s;
        xb += c * P.w[15u + d];
        yb += c * P.w[23u + d];
    }
    if (DT == DT_F32 || DT == DT_F16) softmax_line_f32(xb, yb);
    IF_F64(else softmax_line_f64(xb, yb);)
}
