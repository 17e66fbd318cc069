/* SPDX-License-Identifier: BSD-3-Clause */
// softmax_fast_body.glsl — f32 softmax / log_softmax along one dim
// (vk_ops_norm.c). STAGE 0: a workgroup per line, three passes (the max,
// the sum of exp(x - max), the outputs), the group combining through
// group_fast.glsl. STAGE 1, for lines longer than one workgroup's loop
// budget: a workgroup per chunk of a line writes exp(x - lse) or x - lse
// with the line's logsumexp computed before (reduce_fast, binding 3). vec4
// loads and stores when VEC (stride 1 in x and y, lines and chunks starting
// at multiples of 4). REGS > 0 (VEC lines of at most REGS vec4s per
// invocation): STAGE 0 loads the line once into registers, and softmax
// computes each exp once (the max, then exp(x - max) kept for the
// division); the same values in the same order as the three passes.
// Params: 0 lines  1 len  2 kept rank  3 x offset
//   4 y offset  5 x stride along the dim  6 chunk length  7 chunks  8 -
//   9.. kept sizes[8], 17.. kept x strides[8], 25.. kept y strides[8]
//   33 lse offset  34 y stride along the dim
#include "common.glsl"
#include "ops.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 121u;
layout(constant_id = 2) const uint STAGE = 0u;
layout(constant_id = 3) const uint VEC = 0u;
layout(constant_id = 4) const uint REGS = 0u; // at most SM_REGS
#define SM_REGS 32u
TENSOR(1, y)
TENSOR(2, x)
TENSOR(3, l)
layout(std430, set = 0, binding = 1) writeonly buffer YV4_ { vec4 y_v4[]; };
layout(std430, set = 0, binding = 2) readonly buffer XV4_ { vec4 x_v4[]; };
#include "group_fast.glsl"

void line_bases(uint line, out uint xb, out uint yb) {
    xb = P.w[3];
    yb = P.w[4];
    uint rem = line;
    for (uint k = P.w[2]; k > 0u; k--) {
        uint d = k - 1u, s = P.w[9u + d];
        uint c = d > 0u ? rem % s : rem;
        rem /= s;
        xb += c * P.w[17u + d];
        yb += c * P.w[25u + d];
    }
}

// y = exp(x - a) / s (softmax) or x - a - ls (log_softmax) over n elements.
void write_out(uint xb, uint yb, uint n, float a, float s, float ls) {
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x, xs = P.w[5], ys = P.w[34];
    uint tail = 0u;
    if (VEC != 0u) {
        uint xb4 = xb / 4u, yb4 = yb / 4u, nv = n / 4u;
        for (uint v = lid; v < nv; v += wg) {
            vec4 z = x_v4[xb4 + v] - a;
            y_v4[yb4 + v] = OP == OP_LOG_SOFTMAX ? z - ls : exp(z) / s;
        }
        tail = nv * 4u;
    }
    for (uint j = tail + lid; j < n; j += wg) {
        float z = x_f32[xb + j * xs] - a;
        y_f32[yb + j * ys] = OP == OP_LOG_SOFTMAX ? z - ls : exp(z) / s;
    }
}

void main() {
    uint g = group_linear(), lines = P.w[0], len = P.w[1], xs = P.w[5];
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    if (STAGE == 1u) {
        uint chunks = P.w[7], chunk = P.w[6];
        if (g >= lines * chunks) return; // uniform across the group
        uint line = g / chunks, c = g % chunks;
        uint xb, yb;
        line_bases(line, xb, yb);
        uint j0 = c * chunk;
        float lse = l_f32[P.w[33] + line];
        write_out(xb + j0 * xs, yb + j0 * P.w[34], min(chunk, len - j0), lse, 1.0, 0.0);
        return;
    }
    if (g >= lines) return;
    uint xb, yb;
    line_bases(g, xb, yb);
    if (VEC != 0u && REGS > 0u) {
        // The line in registers: invocation lid holds vec4s lid, lid + wg, ...
        uint b4 = xb / 4u, yb4 = yb / 4u, nv = len / 4u;
        vec4 r[SM_REGS];
        vec4 rm = vec4(-1.0 / 0.0);
        bvec4 rn = bvec4(false);
        [[unroll]] for (uint i = 0u; i < SM_REGS; i++) {
            if (i >= REGS) break;
            uint v = lid + i * wg;
            r[i] = v < nv ? x_v4[b4 + v] : vec4(-1.0 / 0.0);
            rn = bvec4(uvec4(rn) | uvec4(isnan(r[i])));
            rm = max(rm, r[i]);
        }
        // The tail (len not a multiple of 4) as in the passes below.
        uint rtail = nv * 4u;
        for (uint j = rtail + lid; j < len; j += wg) {
            float t = x_f32[xb + j];
            rn.x = rn.x || isnan(t);
            rm.x = max(rm.x, t);
        }
        bool rnan = any(rn);
        float mx = gf_group_max(rnan ? -1.0 / 0.0 : max(max(rm.x, rm.y), max(rm.z, rm.w)));
        if (gf_group_max(rnan ? 1.0 : 0.0) != 0.0) mx = 0.0 / 0.0;
        vec4 rs = vec4(0.0), rc = vec4(0.0), rs1 = vec4(0.0), rc1 = vec4(0.0);
        [[unroll]] for (uint i = 0u; i < SM_REGS; i++) {
            if (i >= REGS) break;
            if (lid + i * wg < nv) {
                vec4 e = exp(r[i] - mx);
                if (OP != OP_LOG_SOFTMAX) r[i] = e;
                gf_ksum4(rs, rc, e);
            }
        }
        for (uint j = rtail + lid; j < len; j += wg)
            gf_ksum4(rs1, rc1, vec4(exp(x_f32[xb + j] - mx), 0.0, 0.0, 0.0));
        float rt = gf_group_sum(gf_kfold4(rs, rc) + gf_kfold4(rs1, rc1)), rl = log(rt);
        [[unroll]] for (uint i = 0u; i < SM_REGS; i++) {
            if (i >= REGS) break;
            uint v = lid + i * wg;
            if (v < nv) y_v4[yb4 + v] = OP == OP_LOG_SOFTMAX ? (r[i] - mx) - rl : r[i] / rt;
        }
        for (uint j = rtail + lid; j < len; j += wg) {
            float z = x_f32[xb + j] - mx;
            y_f32[yb + j] = OP == OP_LOG_SOFTMAX ? z - rl : exp(z) / rt;
        }
        return;
    }
    // The max; a NaN anywhere makes the line NaN.
    vec4 m4 = vec4(-1.0 / 0.0);
    bvec4 n4 = bvec4(false);
    uint tail = 0u;
    if (VEC != 0u) {
        uint b4 = xb / 4u, nv = len / 4u;
        for (uint v = lid; v < nv; v += wg) {
            vec4 t = x_v4[b4 + v];
            n4 = bvec4(uvec4(n4) | uvec4(isnan(t)));
            m4 = max(m4, t);
        }
        tail = nv * 4u;
    }
    for (uint j = tail + lid; j < len; j += wg) {
        float t = x_f32[xb + j * xs];
        n4.x = n4.x || isnan(t);
        m4.x = max(m4.x, t);
    }
    bool nan_ = any(n4);
    float m = gf_group_max(nan_ ? -1.0 / 0.0 : max(max(m4.x, m4.y), max(m4.z, m4.w)));
    if (gf_group_max(nan_ ? 1.0 : 0.0) != 0.0) m = 0.0 / 0.0;
    // The sum of exp(x - m), compensated.
    vec4 s = vec4(0.0), c = vec4(0.0), s1 = vec4(0.0), c1 = vec4(0.0);
    if (VEC != 0u) {
        uint b4 = xb / 4u, nv = len / 4u;
        for (uint v = lid; v < nv; v += wg) gf_ksum4(s, c, exp(x_v4[b4 + v] - m));
    }
    for (uint j = tail + lid; j < len; j += wg)
        gf_ksum4(s1, c1, vec4(exp(x_f32[xb + j * xs] - m), 0.0, 0.0, 0.0));
    float total = gf_group_sum(gf_kfold4(s, c) + gf_kfold4(s1, c1));
    write_out(xb, yb, len, m, total, log(total));
}
