/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// One radix-2 Stockham pass of a complex FFT over lines of a power-of-two
// length n (vk_fft.c): the work arrays are contiguous, a line's elements
// `inner` apart, line L starting at (L / inner) n inner + L % inner. Pass Ns
// (1, 2, 4 ... n/2) combines the sub-transforms of length Ns into ones of
// 2 Ns: item t is butterfly j = t mod n/2 of line t / (n/2), k = j mod Ns,
//   a = src[j], b = src[j + n/2] w^k, w = exp(sign i pi / Ns),
//   dst[2 (j - k) + k] = s (a + b), dst[2 (j - k) + k + Ns] = s (a - b),
// so after log2 n passes the line is transformed in natural order (no bit
// reversal), s the scale on the last pass (1 before). w^k is read from a
// table of the n/2 roots exp(2 pi i m / n) (MODE 0 writes it into dst, an
// item per root, from the exact fraction 2m / n; the passes read it at the
// stride n / (2 Ns), conjugated for a forward transform). Computed in the
// work arrays' dtype (c128 where the device has doubles).
// Params (words): 0 items, 1 n, 2 Ns, 3 inner, 4 src offset, 5 dst offset,
// 6 inverse (sign +1), 7 scale (f32), 8 scale (f64 bits), 10 table offset,
// 11 log2(n / 2).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 7u;
layout(constant_id = 2) const uint MODE = 1u;
#define DT_C128 8u
layout(std430, set = 0, binding = 1) writeonly buffer DC64_ { vec2 d_c64[]; };
layout(std430, set = 0, binding = 2) readonly buffer SC64_ { vec2 s_c64[]; };
layout(std430, set = 0, binding = 3) readonly buffer TC64_ { vec2 t_c64[]; };
#if GF_F64
layout(std430, set = 0, binding = 3) readonly buffer TC128_ { dvec2 t_c128[]; };
layout(std430, set = 0, binding = 1) writeonly buffer DC128_ { dvec2 d_c128[]; };
layout(std430, set = 0, binding = 2) readonly buffer SC128_ { dvec2 s_c128[]; };
#endif
#include "cx_math.glsl"

void main() {
    uint n = P.w[1], ns = P.w[2], inner = P.w[3], half_n = n / 2u;
    bool inv = P.w[6] != 0u;
    if (MODE == 0u) {
        FOR_EACH_ITEM(m, half_n) {
#if GF_F64
            if (DT == DT_C128) {
                double ang = 3.141592653589793lf * (double(2u * m) / double(n));
                d_c128[P.w[5] + m] = dvec2(r_cos(ang), r_sin(ang));
                continue;
            }
#endif
            float ang = 3.14159265358979 * (float(2u * m) / float(n));
            d_c64[P.w[5] + m] = vec2(r_cos(ang), r_sin(ang));
        }
        return;
    }
    // n and Ns are powers of two: shifts and masks (CPUs divide integers
    // one lane at a time); inner is 1 for the last dim.
    uint tstride = half_n / ns, lg = P.w[11], lgn = lg + 1u;
    FOR_EACH_ITEM(t, P.w[0]) {
        uint line = t >> lg, j = t & (half_n - 1u), k = j & (ns - 1u);
        uint base = inner == 1u ? line << lgn : (line / inner) * n * inner + line % inner;
        uint ia = base + j * inner, ib = ia + half_n * inner;
        uint oa = base + (2u * (j - k) + k) * inner, ob = oa + ns * inner;
#if GF_F64
        if (DT == DT_C128) {
            dvec2 w = t_c128[P.w[10] + k * tstride];
            if (!inv) w.y = -w.y;
            dvec2 a = s_c128[P.w[4] + ia], b = cx_mul(s_c128[P.w[4] + ib], w);
            double s = pwd(8u);
            d_c128[P.w[5] + oa] = (a + b) * s;
            d_c128[P.w[5] + ob] = (a - b) * s;
            continue;
        }
#endif
        vec2 w = t_c64[P.w[10] + k * tstride];
        if (!inv) w.y = -w.y;
        vec2 a = s_c64[P.w[4] + ia], b = cx_mul(s_c64[P.w[4] + ib], w);
        float s = pwf(7u);
        d_c64[P.w[5] + oa] = (a + b) * s;
        d_c64[P.w[5] + ob] = (a - b) * s;
    }
}
