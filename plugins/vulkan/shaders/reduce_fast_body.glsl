/* SPDX-License-Identifier: BSD-3-Clause */
// reduce_fast_body.glsl — f32 SUM MEAN AMAX AMIN VAR LOGSUMEXP over lines
// of one merged dim (vk_ops_reduce.c), as a tree over the device's
// parallelism: STAGE 0 a workgroup per line into y; STAGE 1 a workgroup per
// chunk of a line into a record in the scratch buffer; STAGE 2 a workgroup
// per line combining its chunks' records into y. Within a workgroup each
// invocation reduces its share (vec4 loads when VEC: stride 1 and every
// line and chunk starting at a multiple of 4 elements), then the group
// combines (group_fast.glsl). Records (3 f32 per chunk):
//   SUM MEAN: (sum, -, -)  AMAX AMIN: (extreme without NaN, -, has NaN)
//   LOGSUMEXP: (max without NaN, sum of exp(x - max), has NaN)
//   VAR: (mean, m2, count)
// Params: 0 lines  1 len  2 kept rank  3 x offset  4 y offset  5 line
//   stride  6 chunk length  7 chunks  8 correction (f32)  9.. kept sizes[8],
//   17.. kept x strides[8], 25.. kept y strides[8]  33 scratch offset
#include "common.glsl"
#include "ops.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 100u;
layout(constant_id = 2) const uint STAGE = 0u;
layout(constant_id = 3) const uint VEC = 0u;
TENSOR(1, y)
TENSOR(2, x)
TENSOR(3, r)
layout(std430, set = 0, binding = 2) readonly buffer XV4_ { vec4 x_v4[]; };
#include "group_fast.glsl"

const float NEG_INF = -1.0 / 0.0, POS_INF = 1.0 / 0.0;
const bool LARGEST = OP == OP_AMAX || OP == OP_LOGSUMEXP;

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

// One pass over n elements from xb (stride xs): the extreme (LARGEST or not)
// of the non-NaN values and whether a NaN was seen.
void pass_extreme(uint xb, uint xs, uint n, out float m, out bool nan_) {
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    vec4 m4 = vec4(LARGEST ? NEG_INF : POS_INF);
    bvec4 n4 = bvec4(false);
    uint tail = 0u;
    if (VEC != 0u) {
        uint b4 = xb / 4u, nv = n / 4u;
        for (uint v = lid; v < nv; v += wg) {
            vec4 t = x_v4[b4 + v];
            n4 = bvec4(uvec4(n4) | uvec4(isnan(t)));
            m4 = LARGEST ? max(m4, t) : min(m4, t);
        }
        tail = nv * 4u;
    }
    for (uint j = tail + lid; j < n; j += wg) {
        float t = x_f32[xb + j * xs];
        n4.x = n4.x || isnan(t);
        m4.x = LARGEST ? max(m4.x, t) : min(m4.x, t);
    }
    // max/min of a NaN operand may give either: NaN lanes are flagged above
    // and their extreme is not used.
    m = LARGEST ? max(max(m4.x, m4.y), max(m4.z, m4.w)) : min(min(m4.x, m4.y), min(m4.z, m4.w));
    nan_ = any(n4);
    if (nan_) m = LARGEST ? NEG_INF : POS_INF;
}

// One pass: the compensated sum of f(x) over n elements, f by MODE:
// 0 x, 1 exp(x - a), 2 (x - a)^2, 3 x - a.
float pass_sum(uint xb, uint xs, uint n, uint mode, float a) {
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    vec4 s = vec4(0.0), c = vec4(0.0);
    uint tail = 0u;
    if (VEC != 0u) {
        uint b4 = xb / 4u, nv = n / 4u;
        for (uint v = lid; v < nv; v += wg) {
            vec4 t = x_v4[b4 + v];
            if (mode == 1u) t = exp(t - a);
            else if (mode == 2u) t = (t - a) * (t - a);
            else if (mode == 3u) t = t - a;
            gf_ksum4(s, c, t);
        }
        tail = nv * 4u;
    }
    vec4 s1 = vec4(0.0), c1 = vec4(0.0);
    for (uint j = tail + lid; j < n; j += wg) {
        float t = x_f32[xb + j * xs];
        if (mode == 1u) t = exp(t - a);
        else if (mode == 2u) t = (t - a) * (t - a);
        else if (mode == 3u) t = t - a;
        gf_ksum4(s1, c1, vec4(t, 0.0, 0.0, 0.0));
    }
    return gf_group_sum(gf_kfold4(s, c) + gf_kfold4(s1, c1));
}

// Reduces n elements from xb into a record (the same in every invocation).
vec3 reduce_range(uint xb, uint xs, uint n) {
    if (OP == OP_SUM || OP == OP_MEAN) return vec3(pass_sum(xb, xs, n, 0u, 0.0), 0.0, 0.0);
    if (OP == OP_VAR) {
        float mean = pass_sum(xb, xs, n, 0u, 0.0) / float(n);
        // Corrected two-pass: squared deviations minus the square of the
        // plain deviations' sum (the rounding error of the mean).
        float sq = pass_sum(xb, xs, n, 2u, mean), dv = pass_sum(xb, xs, n, 3u, mean);
        float m2 = n == 0u ? 0.0 : sq - dv * dv / float(n);
        if (m2 < 0.0) m2 = 0.0; // not max(): a NaN stays NaN
        return vec3(n == 0u ? 0.0 : mean, m2, float(n));
    }
    float m;
    bool nan_;
    pass_extreme(xb, xs, n, m, nan_);
    m = gf_group_max(LARGEST ? m : -m);
    m = LARGEST ? m : -m;
    float has_nan = gf_group_max(nan_ ? 1.0 : 0.0);
    if (OP != OP_LOGSUMEXP) return vec3(m, 0.0, has_nan);
    // exp(x - m) with m = +-inf: every term is 0 or NaN; the record says it.
    float s = isinf(m) ? (m > 0.0 ? 1.0 : 0.0) : pass_sum(xb, xs, n, 1u, m);
    return vec3(m, s, has_nan);
}

// Combines two records.
vec3 combine(vec3 a, vec3 b) {
    if (OP == OP_SUM || OP == OP_MEAN) return vec3(a.x + b.x, 0.0, 0.0);
    if (OP == OP_VAR) {
        float n = a.z + b.z;
        if (n == 0.0) return vec3(0.0);
        float dl = b.x - a.x;
        return vec3(a.x + dl * (b.z / n), a.y + b.y + dl * dl * (a.z * b.z / n), n);
    }
    float m = LARGEST ? max(a.x, b.x) : min(a.x, b.x);
    float s = 0.0;
    if (OP == OP_LOGSUMEXP) {
        if (isinf(m)) s = m > 0.0 ? 1.0 : 0.0;
        else s = a.y * exp(a.x - m) + b.y * exp(b.x - m); // exp(-inf) = 0 for empty ones
    }
    return vec3(m, s, max(a.z, b.z));
}

// The records of a workgroup's invocations (one each) combined.
vec3 group_combine(vec3 a) {
    if (OP == OP_SUM || OP == OP_MEAN) return vec3(gf_group_sum(a.x), 0.0, 0.0);
    if (OP == OP_VAR) {
        float n = gf_group_sum(a.z);
        float mean = n == 0.0 ? 0.0 : gf_group_sum(a.x * a.z) / n;
        float dl = a.x - mean;
        return vec3(mean, gf_group_sum(a.z == 0.0 ? 0.0 : a.y + a.z * dl * dl), n);
    }
    float m = gf_group_max(LARGEST ? a.x : -a.x);
    m = LARGEST ? m : -m;
    float has_nan = gf_group_max(a.z);
    float s = 0.0;
    if (OP == OP_LOGSUMEXP)
        s = isinf(m) ? (m > 0.0 ? 1.0 : 0.0) : gf_group_sum(a.y == 0.0 ? 0.0 : a.y * exp(a.x - m));
    return vec3(m, s, has_nan);
}

float finish(vec3 a, uint len) {
    float nf = float(len);
    if (OP == OP_SUM) return a.x;
    if (OP == OP_MEAN) return a.x / nf; // len 0: NaN
    if (OP == OP_VAR) {
        float dv = max(a.z - pwf(8u), 0.0);
        return len == 0u ? 0.0 / 0.0 : a.y / dv;
    }
    if (a.z != 0.0) return 0.0 / 0.0;
    if (OP != OP_LOGSUMEXP) return a.x;
    if (len == 0u) return NEG_INF;
    return isinf(a.x) ? a.x : a.x + log(a.y);
}

void main() {
    uint g = group_linear(), lines = P.w[0], len = P.w[1], xs = P.w[5];
    uint chunk = P.w[6], chunks = P.w[7];
    if (STAGE == 1u) {
        if (g >= lines * chunks) return; // uniform across the group
        uint line = g / chunks, c = g % chunks;
        uint xb, yb;
        line_bases(line, xb, yb);
        uint j0 = c * chunk, n = min(chunk, len - j0);
        vec3 rec = reduce_range(xb + j0 * xs, xs, n);
        if (gl_LocalInvocationID.x == 0u) {
            uint o = P.w[33] + 3u * g;
            r_f32[o] = rec.x;
            r_f32[o + 1u] = rec.y;
            r_f32[o + 2u] = rec.z;
        }
        return;
    }
    if (g >= lines) return;
    uint xb, yb;
    line_bases(g, xb, yb);
    vec3 rec;
    if (STAGE == 0u) {
        rec = reduce_range(xb, xs, len);
    } else {
        bool any_ = false;
        for (uint c = gl_LocalInvocationID.x; c < chunks; c += gl_WorkGroupSize.x) {
            uint o = P.w[33] + 3u * (g * chunks + c);
            vec3 b = vec3(r_f32[o], r_f32[o + 1u], r_f32[o + 2u]);
            rec = any_ ? combine(rec, b) : b;
            any_ = true;
        }
        if (!any_) rec = OP == OP_SUM || OP == OP_MEAN || OP == OP_VAR
                             ? vec3(0.0)
                             : vec3(LARGEST ? NEG_INF : POS_INF, 0.0, 0.0);
        rec = group_combine(rec);
    }
    if (gl_LocalInvocationID.x == 0u) y_f32[yb] = finish(rec, len);
}
