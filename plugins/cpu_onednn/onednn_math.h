/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_math.h — a vectorisable expf.
 *
 * oneDNN's exp maps NaN to +inf (measured, oneDNN 2.6), and libm's expf is a
 * call per element that no loop vectorises. This one is branch-free, so the
 * compiler vectorises loops that call it, and has libm's special cases:
 * exp(NaN) = NaN, exp(+inf) = +inf, exp(-inf) = 0, subnormal results.
 *
 * exp(x) = 2^n * exp(r) with n = round(x / ln 2) and |r| <= ln(2)/2; ln 2 is
 * split in two (0.693359375 has 9 bits, so n * C1 is exact) and exp(r) is
 * Cephes' degree-6 polynomial (within 1 ulp over the range). 2^n is applied
 * as two exact powers of two so that results in the subnormal range round
 * once and n = 128 (exp(88.7) is finite) does not overflow early. */
#ifndef GRAFT_ONEDNN_MATH_H
#define GRAFT_ONEDNN_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float odn_pow2i(int32_t e) { /* 2^e for e in [-126, 127] */
    uint32_t u = (uint32_t)(e + 127) << 23;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float odn_expf(float x) {
    const float hi = 88.72284f, lo = -103.97208f;
    float xc = x > hi ? hi : x < lo ? lo : x; /* NaN passes through */
    /* round to nearest by the 1.5 * 2^23 trick (no libm call, vectorises) */
    float t = xc * 1.44269504088896341f;
    float n = (t + 0x1.8p23f) - 0x1.8p23f;
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float r2 = r * r;
    float p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) * r2 +
              r + 1.0f;
    int32_t ni = n == n ? (int32_t)n : 0;
    int32_t k = ni < -125 ? -125 : ni > 127 ? 127 : ni;
    float y = p * odn_pow2i(k) * odn_pow2i(ni - k);
    y = x > hi ? INFINITY : y;
    y = x < lo ? 0.0f : y;
    return x != x ? x : y;
}

#endif
