/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// A complex FFT over lines of a power-of-two length 4 <= n <= BLOCK held in
// shared memory (vk_fft.c, in place of log2(n) passes of cx_fft.comp when
// the lines fit): the work arrays are contiguous, a line's elements `inner`
// apart, line L starting at (L / inner) n inner + L % inner, as the passes
// read them. A workgroup takes 2^lc lines at a time (consecutive lines of a
// dim of stride inner > 1 are neighbours in memory, so its loads and stores
// take whole runs), loads them in bit-reversed order, runs the radix-2
// decimation-in-time stages two at a time (one radix-4 butterfly of stages
// s and s + 1, a barrier between pairs; an odd last stage alone), and
// stores them into dst times the scale. The roots are the table of cx_fft.comp
// (the n/2 roots exp(2 pi i m / n), conjugated for a forward transform):
// stage s reads root j n / 2^s. Computed in double in the f64 build (c64
// lines too: their values widen exactly), else in float.
// Params (words): 0 lines, 1 n, 2 log2(n), 3 inner, 4 src offset, 5 dst
// offset, 6 inverse (sign +1), 7 scale (f32), 8 scale (f64 bits), 10 table
// offset, 11 lc (log2 of the lines per group), 12 groups (of 2^lc lines).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 7u;
#define DT_C128 8u
#define BLOCK 1024u
layout(std430, set = 0, binding = 1) writeonly buffer DC64_ { vec2 d_c64[]; };
layout(std430, set = 0, binding = 2) readonly buffer SC64_ { vec2 s_c64[]; };
layout(std430, set = 0, binding = 3) readonly buffer TC64_ { vec2 t_c64[]; };
#if GF_F64
layout(std430, set = 0, binding = 3) readonly buffer TC128_ { dvec2 t_c128[]; };
layout(std430, set = 0, binding = 1) writeonly buffer DC128_ { dvec2 d_c128[]; };
layout(std430, set = 0, binding = 2) readonly buffer SC128_ { dvec2 s_c128[]; };
#define RT double
#define CV dvec2
#else
#define RT float
#define CV vec2
#endif
shared CV sh[BLOCK];

CV cmul(CV a, CV b) { return CV(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

CV ld_src(uint at) {
#if GF_F64
    if (DT == DT_C128) return s_c128[P.w[4] + at];
#endif
    return CV(s_c64[P.w[4] + at]);
}

void st_dst(uint at, CV v) {
#if GF_F64
    if (DT == DT_C128) {
        d_c128[P.w[5] + at] = v * pwd(8u);
        return;
    }
    d_c64[P.w[5] + at] = vec2(v * pwd(8u));
#else
    d_c64[P.w[5] + at] = v * pwf(7u);
#endif
}

// Root k of the table (k < n/2), conjugated for a forward transform.
CV root(uint k, bool inv) {
#if GF_F64
    CV w = DT == DT_C128 ? t_c128[P.w[10] + k] : CV(t_c64[P.w[10] + k]);
#else
    CV w = t_c64[P.w[10] + k];
#endif
    if (!inv) w.y = -w.y;
    return w;
}

void main() {
    uint lines = P.w[0], n = P.w[1], p = P.w[2], inner = P.w[3], lc = P.w[11];
    uint cols = 1u << lc, tot = cols * n, wg = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
    bool inv = P.w[6] != 0u;
    for (uint g = gl_WorkGroupID.x; g < P.w[12]; g += gl_NumWorkGroups.x) {
        for (uint t = lid; t < tot; t += wg) { // t: (i, c), c fastest
            uint c = t & (cols - 1u), i = t >> lc, l = g * cols + c;
            if (l < lines) {
                uint base = inner == 1u ? l * n : (l / inner) * n * inner + l % inner;
                sh[c * n + (bitfieldReverse(i) >> (32u - p))] = ld_src(base + i * inner);
            }
        }
        uint s = 1u;
        for (; s + 1u <= p; s += 2u) {
            barrier();
            uint hl = 1u << (s - 1u);
            for (uint b = lid; b < tot / 4u; b += wg) {
                uint bb = b & (n / 4u - 1u), j = bb & (hl - 1u);
                uint a = (b >> (p - 2u)) * n + ((bb >> (s - 1u)) << (s + 1u)) + j;
                CV t1 = root(j << (p - s), inv);
                CV u0 = sh[a], v0 = cmul(sh[a + hl], t1);
                CV u1 = sh[a + 2u * hl], v1 = cmul(sh[a + 3u * hl], t1);
                CV x0 = u0 + v0, x1 = u0 - v0, x2 = u1 + v1, x3 = u1 - v1;
                CV y2 = cmul(x2, root(j << (p - s - 1u), inv));
                CV y3 = cmul(x3, root((j + hl) << (p - s - 1u), inv));
                sh[a] = x0 + y2;
                sh[a + 2u * hl] = x0 - y2;
                sh[a + hl] = x1 + y3;
                sh[a + 3u * hl] = x1 - y3;
            }
        }
        if (s == p) { // an odd count: the last stage alone
            barrier();
            uint hl = 1u << (s - 1u);
            for (uint b = lid; b < tot / 2u; b += wg) {
                uint j = b & (n / 2u - 1u), a = (b >> (p - 1u)) * n + j;
                CV u = sh[a], v = cmul(sh[a + hl], root(j, inv));
                sh[a] = u + v;
                sh[a + hl] = u - v;
            }
        }
        barrier();
        for (uint t = lid; t < tot; t += wg) {
            uint c = t & (cols - 1u), i = t >> lc, l = g * cols + c;
            if (l < lines) {
                uint base = inner == 1u ? l * n : (l / inner) * n * inner + l % inner;
                st_dst(base + i * inner, sh[c * n + i]);
            }
        }
        barrier(); // the next lines overwrite sh
    }
}
