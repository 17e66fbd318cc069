/* SPDX-License-Identifier: BSD-3-Clause */
// batch_norm_fast_body.glsl — f32 batch_norm (vk_ops_norm.c): a workgroup
// per channel, whose elements are R0 runs (stride S0) of R1 elements (stride
// S1): the mean and the corrected two-pass variance through group_fast.glsl
// (subgroup arithmetic where the device has it), vec4 access along the runs
// when VEC (S1 = 1 in x and y and every run starting at a multiple of 4).
// Params: 0 C  1 n per channel  2 R0  3 R1  4 x offset  5 y offset
//   6 x channel stride  7 y channel stride  8 x S0  9 x S1  10 y S0  11 y S1
//   12 flags (1 w, 2 b, 4 running mean, 8 running var, 16 training)
//   13..18 offsets of w b rm rv save_mean save_invstd  19..24 their strides
//   25 momentum (f32)  26 eps (f32)
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VEC = 0u;
TENSOR(1, y)
TENSOR(2, sm)
TENSOR(3, si)
TENSOR(4, x)
TENSOR(5, w)
TENSOR(6, b)
TENSOR(7, rm)
TENSOR(8, rv)
layout(std430, set = 0, binding = 1) writeonly buffer YV4_ { vec4 y_v4[]; };
layout(std430, set = 0, binding = 4) readonly buffer XV4_ { vec4 x_v4[]; };
#include "group_fast.glsl"

// The compensated sum over the channel of x - a (mode 0), (x - a)^2 (mode 1).
float chan_sum(uint xb, uint mode, float a) {
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    uint r0 = P.w[2], r1 = P.w[3], s0 = P.w[8], s1 = P.w[9];
    vec4 s = vec4(0.0), c = vec4(0.0), s2 = vec4(0.0), c2 = vec4(0.0);
    for (uint i = 0u; i < r0; i++) {
        uint rb = xb + i * s0, tail = 0u;
        if (VEC != 0u) {
            uint b4 = rb / 4u, nv = r1 / 4u;
            for (uint v = lid; v < nv; v += wg) {
                vec4 t = x_v4[b4 + v] - a;
                gf_ksum4(s, c, mode == 1u ? t * t : t);
            }
            tail = nv * 4u;
        }
        for (uint j = tail + lid; j < r1; j += wg) {
            float t = x_f32[rb + j * s1] - a;
            gf_ksum4(s2, c2, vec4(mode == 1u ? t * t : t, 0.0, 0.0, 0.0));
        }
    }
    return gf_group_sum(gf_kfold4(s, c) + gf_kfold4(s2, c2));
}

void main() {
    uint ch = group_linear();
    if (ch >= P.w[0]) return;
    uint n = P.w[1], flags = P.w[12];
    float eps = pwf(26u), mom = pwf(25u);
    uint wo = P.w[13] + ch * P.w[19], bo = P.w[14] + ch * P.w[20];
    uint rmo = P.w[15] + ch * P.w[21], rvo = P.w[16] + ch * P.w[22];
    uint smo = P.w[17] + ch * P.w[23], sio = P.w[18] + ch * P.w[24];
    uint xb = P.w[4] + ch * P.w[6], yb = P.w[5] + ch * P.w[7];
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    float mean, invstd;
    if ((flags & 16u) != 0u) {
        float nf = float(n);
        mean = chan_sum(xb, 0u, 0.0) / nf;
        float sq = chan_sum(xb, 1u, mean), dv = chan_sum(xb, 0u, mean);
        float m2 = sq - dv * dv / nf;
        if (m2 < 0.0) m2 = 0.0; // not max(): a NaN stays NaN
        invstd = 1.0 / sqrt(m2 / nf + eps); // the biased variance normalises
        if (lid == 0u && n > 0u) {
            if ((flags & 4u) != 0u) rm_f32[rmo] = (1.0 - mom) * rm_f32[rmo] + mom * mean;
            if ((flags & 8u) != 0u)
                rv_f32[rvo] = (1.0 - mom) * rv_f32[rvo] + mom * (m2 / float(n - 1u));
        }
    } else {
        mean = rm_f32[rmo];
        invstd = 1.0 / sqrt(rv_f32[rvo] + eps);
    }
    if (lid == 0u) {
        sm_f32[smo] = mean;
        si_f32[sio] = invstd;
    }
    float scale = (flags & 1u) != 0u ? w_f32[wo] : 1.0;
    float shift = (flags & 2u) != 0u ? b_f32[bo] : 0.0;
    uint r0 = P.w[2], r1 = P.w[3];
    for (uint i = 0u; i < r0; i++) {
        uint xr = xb + i * P.w[8], yr = yb + i * P.w[10], tail = 0u;
        if (VEC != 0u) {
            uint x4 = xr / 4u, y4 = yr / 4u, nv = r1 / 4u;
            for (uint v = lid; v < nv; v += wg)
                y_v4[y4 + v] = (x_v4[x4 + v] - mean) * invstd * scale + shift;
            tail = nv * 4u;
        }
        for (uint j = tail + lid; j < r1; j += wg)
            y_f32[yr + j * P.w[11]] = (x_f32[xr + j * P.w[9]] - mean) * invstd * scale + shift;
    }
}
