/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 3
// Complex SUM (OP 0) and PROD (OP 2) over a set of dims, one pass of
// vk_complex.c's: item g = o * nchunks + c reduces chunk c (elements
// [c L, min((c + 1) L, nred)) of output o's line) and writes the result,
// times the scale (MEAN's 1 / n on the last pass), at
// oy + offset(o; kept sizes, y strides) + c * ycs. Kept and reduced dims are
// unravelled row-major from up to 8 (size, stride) pairs. Sums are
// compensated part by part (Neumaier), in double where the device has it.
// Params (words): 0 items, 1 nchunks, 2 L, 3 nred, 4 kept rank, 5 reduced
// rank, 6 x offset, 7 y offset, 8 ycs, 9.. kept sizes, 17.. x strides of
// the kept dims, 25.. their y strides, 33.. reduced sizes, 41.. their x
// strides, 49 scale (f32), 50 scale (f64 bits).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;
layout(constant_id = 2) const uint DT = 7u;
#define DT_C128 8u
layout(std430, set = 0, binding = 1) buffer YC64_ { vec2 y_c64[]; };
layout(std430, set = 0, binding = 2) readonly buffer XC64_ { vec2 x_c64[]; };
#if GF_F64
layout(std430, set = 0, binding = 1) buffer YC128_ { dvec2 y_c128[]; };
layout(std430, set = 0, binding = 2) readonly buffer XC128_ { dvec2 x_c128[]; };
#endif
#include "cx_math.glsl"

#if GF_F64
#define CC dvec2
#define CCR double
#define SCALE pwd(50u)
#else
#define CC vec2
#define CCR float
#define SCALE pwf(49u)
#endif

uint unravel(uint idx, uint rank, uint sizes, uint strides) {
    uint off = 0u;
    [[unroll]] for (int k = 7; k >= 0; k--) {
        if (uint(k) < rank) {
            uint s = P.w[sizes + uint(k)];
            off += (idx % s) * P.w[strides + uint(k)];
            idx /= s;
        }
    }
    return off;
}

CC load(uint i) {
    IF_F64(if (DT == DT_C128) return CC(x_c128[i]);)
    return CC(x_c64[i]);
}

void neumaier(CCR v, inout CCR s, inout CCR c) {
    precise CCR t = s + v;
    precise CCR d = abs(s) >= abs(v) ? (s - t) + v : (v - t) + s;
    c += d;
    s = t;
}

void main() {
    uint items = P.w[0], nchunks = P.w[1], len = P.w[2], nred = P.w[3];
    uint kr = P.w[4], rr = P.w[5], ox = P.w[6], oy = P.w[7], ycs = P.w[8];
    FOR_EACH_ITEM(g, items) {
        uint o = g / nchunks, c = g % nchunks;
        uint xb = ox + unravel(o, kr, 9u, 17u);
        uint j0 = c * len, j1 = min(j0 + len, nred);
        CC r;
        if (OP == 2u) {
            r = CC(CCR(1), CCR(0));
            for (uint j = j0; j < j1; j++) r = cx_mul(r, load(xb + unravel(j, rr, 33u, 41u)));
        } else {
            CCR sr = CCR(0), cr = CCR(0), si = CCR(0), ci = CCR(0);
            for (uint j = j0; j < j1; j++) {
                CC v = load(xb + unravel(j, rr, 33u, 41u));
                neumaier(v.x, sr, cr);
                neumaier(v.y, si, ci);
            }
            r = CC(sr + cr, si + ci) * SCALE;
        }
        uint yi = oy + unravel(o, kr, 9u, 25u) + c * ycs;
        IF_F64(if (DT == DT_C128) y_c128[yi] = dvec2(r); else)
        y_c64[yi] = vec2(r);
    }
}
