/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 5
// CONV2D (160), CONV2D_BACKWARD_INPUT (161), CONV2D_BACKWARD_WEIGHT (162),
// NCHW, any strides: an invocation per output element (a workgroup per
// element for the weight gradient, whose sums are long). Params (vk_ops_conv.c):
//   0 items  1..18 n ci co h w kh kw ho wo groups cig cog sh sw ph pw dh dw
//   19..22 X strides  23..26 W strides  27..30 Y strides  31 bias stride
//   32..34 element offsets of X, W, Y  35 bias offset  36 flags (1: bias)
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 160u;
layout(constant_id = 2) const uint DT = 0u;
TENSOR(1, o)
TENSOR(2, i1)
TENSOR(3, i2)
TENSOR(4, bs)
#define G(k) P.w[1u + (k)]
uint XAT(uint a, uint b, uint c, uint d) { return P.w[32] + a * P.w[19] + b * P.w[20] + c * P.w[21] + d * P.w[22]; }
uint WAT(uint a, uint b, uint c, uint d) { return P.w[33] + a * P.w[23] + b * P.w[24] + c * P.w[25] + d * P.w[26]; }
uint YAT(uint a, uint b, uint c, uint d) { return P.w[34] + a * P.w[27] + b * P.w[28] + c * P.w[29] + d * P.w[30]; }

#define FT float
#define FN(n) n##_f32
#define L(t, i) t##_f32[i]
#define S(t, i, v) t##_f32[i] = (v)
#include "conv_body.glsl"
#undef FT
#undef FN
#undef L
#undef S
#if GF_F64
#define FT double
#define FN(n) n##_f64
#define L(t, i) t##_f64[i]
#define S(t, i, v) t##_f64[i] = (v)
#include "conv_body.glsl"
#endif

void main() {
    if (OP == 162u) { // a workgroup per grad_w element
        uint it = group_linear();
        if (it >= P.w[0]) return;
        if (DT == DT_F32) conv_bw_weight_f32(it);
        IF_F64(else conv_bw_weight_f64(it);)
        return;
    }
    FOR_EACH_ITEM(it, P.w[0]) {
        if (DT == DT_F32) conv_f32(it);
        IF_F64(else conv_f64(it);)
    }
}
