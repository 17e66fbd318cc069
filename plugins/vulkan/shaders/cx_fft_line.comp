/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// The steps of vk_fft.c around the radix-2 passes (cx_fft.comp): Bluestein's
// algorithm for lengths that are not powers of two, the Hermitian extension
// of C2R, and a scale. The work arrays are contiguous; a "line" array has
// shape (outer, L, inner), element (o, j, i) at (o L + j) inner + i.
//   MODE 0  line product: dst (outer, Ld, inner) from src (outer, Ls, inner),
//           dst[o, j, i] = j < Ls ? src[o, j, i] t[j] s : 0, t the table
//           (1 where flag bit 0 says there is none): Bluestein's chirp
//           multiply in (Ld = m > Ls = n, zero padding) and out (Ld = n <
//           Ls = m), its product with the chirp's transform, and a scale.
//   MODE 1  Hermitian extension (C2R): dst (outer, n, inner) from the
//           onesided src (outer, h, inner), h = n/2 + 1:
//           dst[o, j, i] = j < h ? src[o, j, i] : conj(src[o, n - j, i]).
//   MODE 2  the chirp c[k] = exp(sign i pi k^2 / n), k < n, into dst, from
//           q = k^2 mod 2n in integers reduced to [-n, n], so that its angle
//           pi q / n is rounded once (sign +1 for an inverse transform).
//   MODE 3  the wrapped conjugate chirp b (length m) from the chirp table t
//           (length n): b[j] = conj(t[j]) for j < n, conj(t[m - j]) for
//           m - j < n, else 0.
//   MODE 4  R2C unpacking: src (outer, h, inner) is the transform Z of the
//           real lines of length n = 2h read as h complex values
//           z[j] = x[2j] + i x[2j + 1]; dst (outer, h + 1, inner) gets bins
//           0 .. h of the real lines' transform,
//             A = (Z[k] + conj Z[h - k]) / 2, B = (Z[k] - conj Z[h - k]) / 2i,
//             X[k] = s (A + exp(sign i pi k / h) B),  Z[h] = Z[0]
//           (A, B the transforms of the even and odd samples; flag bit 1:
//           the inverse sign).
//   MODE 5  four-step twiddles: lines of n = Ld = n1 n2 (n2 = Ls) held as
//           [n1][n2]; dst[t] = src[t] w_n^(k1 j2), element (k1, j2) of its
//           line, w_n^k read from t, the table of the first n/2 roots
//           exp(2 pi i m / n) of cx_fft.comp (the others their negatives),
//           conjugated unless flag bit 1 (the inverse sign).
//   MODE 6  four-step transpose: element (k1, k2) of each such line into
//           bin k1 + n1 k2 of dst, times the scale.
// Computed in the work dtype DT (c64, or c128 where the device has doubles).
// Params (words): 0 items, 1 Ld (MODE 1: n; 2, 3: n or m; 4: h + 1), 2 Ls
// (MODE 1, 4: h; MODE 3: n), 3 inner, 4 src offset, 5 dst offset, 6 flags (bit 0: no table;
// MODES 2, 4: bit 1 the inverse sign), 7 scale (f32), 8 scale (f64 bits),
// 10 table offset.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 7u;
layout(constant_id = 2) const uint MODE = 0u;
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
    uint ld = P.w[1], ls = P.w[2], inner = P.w[3], so = P.w[4], dso = P.w[5], fl = P.w[6];
    uint to = P.w[10];
    if (MODE == 2u) {
        uint n2 = 2u * ld;
        FOR_EACH_ITEM(k, ld) {
            int q = int(uint((uint64_t(k) * uint64_t(k)) % uint64_t(n2)));
            if (q > int(ld)) q -= int(n2);
            if ((fl & 2u) == 0u) q = -q;
#if GF_F64
            if (DT == DT_C128) {
                double a = 3.141592653589793lf * (double(q) / double(ld));
                d_c128[dso + k] = dvec2(r_cos(a), r_sin(a));
                continue;
            }
#endif
            float a = 3.14159265358979 * (float(q) / float(ld));
            d_c64[dso + k] = vec2(r_cos(a), r_sin(a));
        }
        return;
    }
    if (MODE == 3u) {
        FOR_EACH_ITEM(j, ld) {
            uint at = j < ls ? j : ld - j;
            bool in_chirp = j < ls || ld - j < ls;
#if GF_F64
            if (DT == DT_C128) {
                dvec2 v = in_chirp ? t_c128[to + at] : dvec2(0.0);
                d_c128[dso + j] = dvec2(v.x, -v.y);
                continue;
            }
#endif
            vec2 v = in_chirp ? t_c64[to + at] : vec2(0.0);
            d_c64[dso + j] = vec2(v.x, -v.y);
        }
        return;
    }
    if (MODE == 4u) {
        FOR_EACH_ITEM(t, P.w[0]) {
            uint i = t % inner, r = t / inner, k = r % ld, o = r / ld;
            uint ak = (o * ls + (k == ls ? 0u : k)) * inner + i;
            uint am = (o * ls + (k == 0u ? 0u : ls - k)) * inner + i;
#if GF_F64
            if (DT == DT_C128) {
                dvec2 zk = s_c128[so + ak], zm = s_c128[so + am];
                zm.y = -zm.y;
                dvec2 ev = (zk + zm) * 0.5lf, od = (zk - zm) * 0.5lf;
                od = dvec2(od.y, -od.x); // / i
                double a = 3.141592653589793lf * (double(k) / double(ls));
                if ((fl & 2u) == 0u) a = -a;
                d_c128[dso + t] = (ev + cx_mul(dvec2(r_cos(a), r_sin(a)), od)) * pwd(8u);
                continue;
            }
#endif
            vec2 zk = s_c64[so + ak], zm = s_c64[so + am];
            zm.y = -zm.y;
            vec2 ev = (zk + zm) * 0.5, od = (zk - zm) * 0.5;
            od = vec2(od.y, -od.x);
            float a = 3.14159265358979 * (float(k) / float(ls));
            if ((fl & 2u) == 0u) a = -a;
            d_c64[dso + t] = (ev + cx_mul(vec2(r_cos(a), r_sin(a)), od)) * pwf(7u);
        }
        return;
    }
    if (MODE == 5u || MODE == 6u) {
        uint n2 = ls, n1 = ld / ls;
        FOR_EACH_ITEM(t, P.w[0]) {
            uint r = t % ld, k1 = r / n2, j2 = r % n2;
            if (MODE == 6u) {
                uint at = t - r + k1 + j2 * n1;
#if GF_F64
                if (DT == DT_C128) {
                    d_c128[dso + at] = s_c128[so + t] * pwd(8u);
                    continue;
                }
#endif
                d_c64[dso + at] = s_c64[so + t] * pwf(7u);
                continue;
            }
            // w_n^k from the table of the first n/2 roots exp(2 pi i m / n)
            // (the others are their negatives), conjugated going forward
            uint k = (k1 * j2) % ld, h = ld / 2u;
            float sg = k < h ? 1.0 : -1.0, cj = (fl & 2u) != 0u ? 1.0 : -1.0;
            if (k >= h) k -= h;
#if GF_F64
            if (DT == DT_C128) {
                dvec2 w = t_c128[to + k] * double(sg);
                w.y *= double(cj);
                d_c128[dso + t] = cx_mul(s_c128[so + t], w);
                continue;
            }
#endif
            vec2 w = t_c64[to + k] * sg;
            w.y *= cj;
            d_c64[dso + t] = cx_mul(s_c64[so + t], w);
        }
        return;
    }
    FOR_EACH_ITEM(t, P.w[0]) {
        uint i = t % inner, r = t / inner, j = r % ld, o = r / ld;
        if (MODE == 1u) {
            bool mirror = j >= ls;
            uint at = (o * ls + (mirror ? ld - j : j)) * inner + i;
#if GF_F64
            if (DT == DT_C128) {
                dvec2 v = s_c128[so + at];
                d_c128[dso + t] = mirror ? dvec2(v.x, -v.y) : v;
                continue;
            }
#endif
            vec2 v = s_c64[so + at];
            d_c64[dso + t] = mirror ? vec2(v.x, -v.y) : v;
            continue;
        }
        uint at = (o * ls + j) * inner + i;
        bool none = (fl & 1u) != 0u;
#if GF_F64
        if (DT == DT_C128) {
            dvec2 v = dvec2(0.0);
            if (j < ls) {
                v = s_c128[so + at];
                if (!none) v = cx_mul(v, t_c128[to + j]);
                v *= pwd(8u);
            }
            d_c128[dso + t] = v;
            continue;
        }
#endif
        vec2 v = vec2(0.0);
        if (j < ls) {
            v = s_c64[so + at];
            if (!none) v = cx_mul(v, t_c64[to + j]);
            v *= pwf(7u);
        }
        d_c64[dso + t] = v;
    }
}
