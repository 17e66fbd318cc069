/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 2
// graft: needs-f64
// RANDOM: Philox4x32-10 exactly as abi/graft_plugin.h defines it (uint32
// arithmetic), element i of the output in row-major order taking counter
// offset + i. Uniform and normal values are computed in double and rounded
// once, as the reference does. Params (vk_ops_random.c): 0 n 1 rank
//   2 y offset 3..10 sizes 11..18 strides 19 seed lo 20 seed hi
//   21 offset lo 22 offset hi 23 a (f64) 25 b (f64) 27 bernoulli threshold
#include "common.glsl"
#include "glsl_dmath.glsl" // plugins/common: double log and cos
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 0u;
layout(constant_id = 2) const uint KIND = 0u; // 0 uniform, 1 normal, 2 bernoulli
TENSOR(1, y)
TENSOR_INT_IO(y)

uvec4 philox(uvec4 c, uint k0, uint k1) {
    for (int r = 0; r < 10; r++) {
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, c.x, hi0, lo0);
        umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
        c = uvec4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c;
}

double u24(uint w) { return double(w >> 8) * 5.9604644775390625e-8lf; } // 2^-24
double u53(uint w, uint v) {
    return double(uint64_t(w >> 5) * 67108864ul + uint64_t(v >> 6)) * 1.1102230246251565e-16lf;
}

void main() {
    uint rank = P.w[1];
    uint64_t base = pw64(21u);
    double a = pwd(23u), b = pwd(25u);
    FOR_EACH_ITEM(i, P.w[0]) {
        uint off = P.w[2], rem = i;
        for (uint k = rank; k > 0u; k--) {
            uint d = k - 1u, s = P.w[3u + d], c = d > 0u ? rem % s : rem;
            rem /= s;
            off += c * P.w[11u + d];
        }
        uint64_t c = base + uint64_t(i);
        uvec4 r = philox(uvec4(uint(c), uint(c >> 32), 0u, 0u), P.w[19], P.w[20]);
        if (KIND == 2u) {
            y_sti(DT, off, (r.x >> 8) < P.w[27] ? 1l : 0l);
            continue;
        }
        precise double v;
        if (KIND == 0u) {
            precise double u = DT == DT_F32 ? u24(r.x) : u53(r.x, r.y);
            precise double span = b - a;
            v = a + span * u;
        } else {
            precise double u1 = 1.0lf - (DT == DT_F32 ? u24(r.x) : u53(r.x, r.y));
            precise double u2 = DT == DT_F32 ? u24(r.y) : u53(r.z, r.w);
            precise double l = -2.0lf * gf_dlog(u1);
            precise double rad = sqrt(l);
            precise double ang = 6.28318530717958647692lf * u2;
            precise double bs = b * rad;
            precise double bsc = bs * gf_dcos(ang);
            v = a + bsc;
        }
        if (DT == DT_F32) y_f32[off] = float(v);
        else y_f64[off] = v;
    }
}
