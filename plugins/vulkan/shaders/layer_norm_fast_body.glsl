/* SPDX-License-Identifier: BSD-3-Clause */
// layer_norm_fast_body.glsl — f32 layer_norm over one merged inner dim
// (vk_ops_norm.c): a workgroup per line, the mean and the corrected
// two-pass variance through group_fast.glsl (subgroup arithmetic where the
// device has it), vec4 access when VEC (x, y, weight and bias contiguous
// along the line and every line starting at a multiple of 4 elements).
// Params: 0 lines  1 n  2 outer rank  3 x offset  4 y offset  5 x stride
//   6 y stride  7 w offset  8 b offset  9 w stride  10 b stride  11 flags
//   (1 w, 2 b)  12 eps (f32)  13 mean offset  14 rstd offset
//   15.. outer sizes[8], outer strides of x, y, mean, rstd [8] each
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VEC = 0u;
TENSOR(1, y)
TENSOR(2, mn)
TENSOR(3, rs)
TENSOR(4, x)
TENSOR(5, w)
TENSOR(6, b)
layout(std430, set = 0, binding = 1) writeonly buffer YV4_ { vec4 y_v4[]; };
layout(std430, set = 0, binding = 4) readonly buffer XV4_ { vec4 x_v4[]; };
layout(std430, set = 0, binding = 5) readonly buffer WV4_ { vec4 w_v4[]; };
layout(std430, set = 0, binding = 6) readonly buffer BV4_ { vec4 b_v4[]; };
#include "group_fast.glsl"

// The compensated sum over the line of x - a (mode 0), (x - a)^2 (mode 1).
float line_sum(uint xb, uint n, uint mode, float a) {
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x, xs = P.w[5];
    vec4 s = vec4(0.0), c = vec4(0.0), s1 = vec4(0.0), c1 = vec4(0.0);
    uint tail = 0u;
    if (VEC != 0u) {
        uint b4 = xb / 4u, nv = n / 4u;
        for (uint v = lid; v < nv; v += wg) {
            vec4 t = x_v4[b4 + v] - a;
            gf_ksum4(s, c, mode == 1u ? t * t : t);
        }
        tail = nv * 4u;
    }
    for (uint j = tail + lid; j < n; j += wg) {
        float t = x_f32[xb + j * xs] - a;
        gf_ksum4(s1, c1, vec4(mode == 1u ? t * t : t, 0.0, 0.0, 0.0));
    }
    return gf_group_sum(gf_kfold4(s, c) + gf_kfold4(s1, c1));
}

void main() {
    uint g = group_linear();
    if (g >= P.w[0]) return;
    uint xb = P.w[3], yb = P.w[4], mo = P.w[13], ro = P.w[14], rem = g;
    for (uint k = P.w[2]; k > 0u; k--) {
        uint d = k - 1u, s = P.w[15u + d], c = d > 0u ? rem % s : rem;
        rem /= s;
        xb += c * P.w[23u + d];
        yb += c * P.w[31u + d];
        mo += c * P.w[39u + d];
        ro += c * P.w[47u + d];
    }
    uint n = P.w[1], flags = P.w[11];
    float nf = float(n);
    float mean = line_sum(xb, n, 0u, 0.0) / nf;
    float sq = line_sum(xb, n, 1u, mean), dv = line_sum(xb, n, 0u, mean);
    float m2 = sq - dv * dv / nf;
    if (m2 < 0.0) m2 = 0.0; // not max(): a NaN stays NaN
    float r = 1.0 / sqrt(m2 / nf + pwf(12u));
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    if (lid == 0u) {
        mn_f32[mo] = mean;
        rs_f32[ro] = r;
    }
    bool hw = (flags & 1u) != 0u, hb = (flags & 2u) != 0u;
    uint tail = 0u;
    if (VEC != 0u) {
        uint xb4 = xb / 4u, yb4 = yb / 4u, w4 = P.w[7] / 4u, bb4 = P.w[8] / 4u, nv = n / 4u;
        for (uint v = lid; v < nv; v += wg) {
            vec4 t = (x_v4[xb4 + v] - mean) * r;
            if (hw) t *= w_v4[w4 + v];
            if (hb) t += b_v4[bb4 + v];
            y_v4[yb4 + v] = t;
        }
        tail = nv * 4u;
    }
    for (uint j = tail + lid; j < n; j += wg) {
        float t = (x_f32[xb + j * P.w[5]] - mean) * r;
        if (hw) t *= w_f32[P.w[7] + j * P.w[9]];
        if (hb) t += b_f32[P.w[8] + j * P.w[10]];
        y_f32[yb + j * P.w[6]] = t;
    }
}
