// softmax_fast_body.glsl — f32 softmax / log_softmax along one dim
// (vk_ops_norm.c). STAGE 0: a workgroup per line, three passes (the max,
// the sum of exp(x - max), the outputs), the group combining through
// group_fast.glsl. STAGE 1, for lines longer than one workgroup's loop
// budget: a workgroup per chunk of a line writes exp(x - lse) or x - lse
// with the line's logsumexp computed before (reduce_fast, binding 3). vec4
// loads and stores when VEC (stride 1 in x and y, lines and chunks starting
// at multiples of 4). Params: 0 lines  1 len  2 kept rank  3 x offset
//   4 y offset  5 x stride along the dim  6 chunk length  7 chunks  8 -
//   9.. kept sizes[8], 17.. kept x strides[8], 25.. kept y strides[8]
//   33 lse offset  34 y stride along the dim
#include "common.glsl"
#include "ops.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 121u;
layout(constant_id = 2) const uint STAGE = 0u;
layout(constant_id = 3) const uint VEC = 0u;
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
