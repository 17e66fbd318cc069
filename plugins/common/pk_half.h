/* SPDX-License-Identifier: BSD-3-Clause */
/* pk_half.h — f16 (IEEE binary16) and bf16 (the top half of an f32) as the
 * ABI defines their conversions: round to nearest, ties to even; NaN stays
 * a (quiet) NaN with its sign; overflow gives inf; f16 keeps subnormals.
 *
 * One copy for every plugin's host kernels (through plugin_kit.h) and the
 * core (.item, printing, files). From double the value is rounded once: the
 * reference computes in double and rounds once on store. */
#ifndef GRAFT_PK_HALF_H
#define GRAFT_PK_HALF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float pk_bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t pk_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* double -> bf16 in one rounding (through f32 would round twice). */
static inline uint16_t pk_f64_to_bf16(double v) {
    if (v != v) return pk_f32_to_bf16((float)v);
    float f = (float)v; /* nearest f32; fix the cases where that tie-breaks wrongly */
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0xffffu) == 0x8000u && (double)f != v) {
        /* f sits exactly halfway between two bf16 values but v does not:
         * step f toward v so the bf16 rounding sees which side v is on. */
        u = (double)f < v ? (f > 0 ? u + 1 : u - 1) : (f > 0 ? u - 1 : u + 1);
        memcpy(&f, &u, 4);
    }
    return pk_f32_to_bf16(f);
}

static inline float pk_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    float f;
    if (exp == 0x1f) {
        uint32_t u = sign | 0x7f800000u | (man << 13);
        memcpy(&f, &u, 4);
        return f;
    }
    if (exp == 0) f = ldexpf((float)man, -24); /* zero and subnormals, exact */
    else f = ldexpf((float)(man | 0x400u), (int)exp - 25);
    return sign ? -f : f;
}

/* double -> f16 in one rounding, ties to even, subnormals kept. */
static inline uint16_t pk_f64_to_f16(double v) {
    uint16_t sign = signbit(v) ? 0x8000u : 0;
    if (v != v) return (uint16_t)(sign | 0x7e00u);
    double a = fabs(v);
    if (a >= 65520.0) return (uint16_t)(sign | 0x7c00u); /* beyond max + half ulp */
    if (a < ldexp(1.0, -14)) {                         /* subnormal: units of 2^-24 */
        double q = nearbyint(a * 16777216.0);          /* FE_TONEAREST: ties to even */
        return (uint16_t)(sign | (uint16_t)q);
    }
    int e;
    double m = frexp(a, &e);                   /* a = m * 2^e, m in [0.5, 1) */
    double q = nearbyint(ldexp(m, 11));        /* 11 significant bits */
    if (q >= 2048.0) { q /= 2.0; e++; }
    if (e - 1 + 15 >= 31) return (uint16_t)(sign | 0x7c00u);
    uint32_t bits = ((uint32_t)(e - 1 + 15) << 10) | ((uint32_t)q & 0x3ffu);
    return (uint16_t)(sign | bits);
}

static inline uint16_t pk_f32_to_f16(float f) { return pk_f64_to_f16((double)f); }

#endif
