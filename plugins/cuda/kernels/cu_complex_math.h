/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_complex_math.h — the complex formulas of the CUDA plugin's kernels
 * (cu_complex.cu), valid CUDA C++ and valid host C11.
 *
 * Under nvcc every function is __host__ __device__; under a C compiler the
 * text is plain static inline C, so tests/cuda/test_cuda_complex.c compiles
 * this very header on the host and compares it with the reference plugin's
 * C99 double complex (the oracle), with no GPU.
 *
 * Every value is computed in double, c64 too, and rounded once part by part
 * on store, as the reference computes in double complex (and the OpenCL
 * plugin's complex.cl on a device with doubles; these are its formulas).
 * They are the textbook ones for finite values, written so that nothing
 * cancels in the ordinary range: Smith's division, Kahan's tanh and his
 * arcsin/arccos from products of square roots, atan's imaginary part by
 * log1p. Infinite and NaN parts are not treated as C99's Annex G does: they
 * propagate through the arithmetic.
 *
 * The op codes are the positions of the ops in plugins/common/pk_complex.c's
 * tables (pk_complex_unary_code, pk_complex_binary_code); the test checks
 * that each code computes the op the table puts there. */
#ifndef GRAFT_CU_COMPLEX_MATH_H
#define GRAFT_CU_COMPLEX_MATH_H

#ifdef __CUDACC__
#define CU_CX_FN static __host__ __device__ __forceinline__
#else
#include <math.h>
#define CU_CX_FN static inline
#endif

/* Unary op codes. */
#define CU_CX_NEG 0
#define CU_CX_EXP 1
#define CU_CX_LOG 2
#define CU_CX_LOG1P 3
#define CU_CX_EXPM1 4
#define CU_CX_SQRT 5
#define CU_CX_RSQRT 6
#define CU_CX_RECIPROCAL 7
#define CU_CX_SQUARE 8
#define CU_CX_SIN 9
#define CU_CX_COS 10
#define CU_CX_TANH 11
#define CU_CX_SIGMOID 12
#define CU_CX_POW_SCALAR 13
#define CU_CX_ASIN 14
#define CU_CX_ACOS 15
#define CU_CX_ATAN 16
#define CU_CX_UNARY_COUNT 17
/* Binary op codes. */
#define CU_CX_ADD 0
#define CU_CX_SUB 1
#define CU_CX_MUL 2
#define CU_CX_DIV 3
#define CU_CX_POW 4
#define CU_CX_BINARY_COUNT 5

typedef struct cu_cx {
    double re, im;
} cu_cx;

CU_CX_FN cu_cx cu_cx_of(double re, double im) {
    cu_cx z;
    z.re = re;
    z.im = im;
    return z;
}

CU_CX_FN cu_cx cu_cx_add(cu_cx a, cu_cx b) { return cu_cx_of(a.re + b.re, a.im + b.im); }
CU_CX_FN cu_cx cu_cx_sub(cu_cx a, cu_cx b) { return cu_cx_of(a.re - b.re, a.im - b.im); }
CU_CX_FN cu_cx cu_cx_neg(cu_cx a) { return cu_cx_of(-a.re, -a.im); }
CU_CX_FN cu_cx cu_cx_scale(cu_cx a, double s) { return cu_cx_of(a.re * s, a.im * s); }

CU_CX_FN cu_cx cu_cx_mul(cu_cx a, cu_cx b) {
    return cu_cx_of(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}

/* Smith's division: no overflow of |b|^2. */
CU_CX_FN cu_cx cu_cx_div(cu_cx a, cu_cx b) {
    if (fabs(b.re) >= fabs(b.im)) {
        double r = b.im / b.re, den = b.re + b.im * r;
        return cu_cx_of((a.re + a.im * r) / den, (a.im - a.re * r) / den);
    }
    double r = b.re / b.im, den = b.re * r + b.im;
    return cu_cx_of((a.re * r + a.im) / den, (a.im * r - a.re) / den);
}

CU_CX_FN cu_cx cu_cx_exp(cu_cx z) {
    double e = exp(z.re);
    return cu_cx_of(e * cos(z.im), e * sin(z.im));
}

CU_CX_FN cu_cx cu_cx_log(cu_cx z) { return cu_cx_of(log(hypot(z.re, z.im)), atan2(z.im, z.re)); }

CU_CX_FN cu_cx cu_cx_sqrt(cu_cx z) {
    if (z.re == 0.0 && z.im == 0.0) return cu_cx_of(0.0, z.im);
    double t = sqrt((fabs(z.re) + hypot(z.re, z.im)) * 0.5);
    if (z.re >= 0.0) return cu_cx_of(t, z.im / (2.0 * t));
    return cu_cx_of(fabs(z.im) / (2.0 * t), copysign(t, z.im));
}

/* Kahan: tanh(x + iy) with t = tan y, s = sinh x, rho = sqrt(1 + s^2),
 * b = 1 + t^2: (b rho s + i t) / (1 + b s^2). Past |x| = 22 the real part
 * is +-1 to double precision. */
CU_CX_FN cu_cx cu_cx_tanh(cu_cx z) {
    if (fabs(z.re) > 22.0) {
        double e = exp(-2.0 * fabs(z.re));
        return cu_cx_of(copysign(1.0, z.re), 4.0 * sin(z.im) * cos(z.im) * e);
    }
    double t = tan(z.im), b = 1.0 + t * t, s = sinh(z.re), rho = sqrt(1.0 + s * s);
    double den = 1.0 + b * s * s;
    return cu_cx_of(b * rho * s / den, t / den);
}

/* Kahan's arcsin and arccos, from s1 = sqrt(1 - z) and s2 = sqrt(1 + z). */
CU_CX_FN cu_cx cu_cx_asin(cu_cx z) {
    cu_cx s1 = cu_cx_sqrt(cu_cx_of(1.0 - z.re, -z.im)), s2 = cu_cx_sqrt(cu_cx_of(1.0 + z.re, z.im));
    return cu_cx_of(atan2(z.re, s1.re * s2.re - s1.im * s2.im), asinh(s1.re * s2.im - s1.im * s2.re));
}

CU_CX_FN cu_cx cu_cx_acos(cu_cx z) {
    cu_cx s1 = cu_cx_sqrt(cu_cx_of(1.0 - z.re, -z.im)), s2 = cu_cx_sqrt(cu_cx_of(1.0 + z.re, z.im));
    return cu_cx_of(2.0 * atan2(s1.re, s2.re), asinh(s2.re * s1.im - s2.im * s1.re));
}

/* atan z = (1/2) atan2(2x, 1 - x^2 - y^2) + (i/4) log1p(4y / ((1 - y)^2 + x^2)). */
CU_CX_FN cu_cx cu_cx_atan(cu_cx z) {
    double x = z.re, y = z.im;
    double re = 0.5 * atan2(2.0 * x, (1.0 - x) * (1.0 + x) - y * y);
    double d = (1.0 - y) * (1.0 - y) + x * x;
    return cu_cx_of(re, 0.25 * log1p(4.0 * y / d));
}

CU_CX_FN cu_cx cu_cx_pow(cu_cx a, cu_cx b) { return cu_cx_exp(cu_cx_mul(b, cu_cx_log(a))); }

CU_CX_FN cu_cx cu_cx_unary(int op, cu_cx z, double a) {
    const cu_cx one = cu_cx_of(1.0, 0.0);
    switch (op) {
    case CU_CX_NEG: return cu_cx_neg(z);
    case CU_CX_EXP: return cu_cx_exp(z);
    case CU_CX_LOG: return cu_cx_log(z);
    case CU_CX_LOG1P: return cu_cx_log(cu_cx_add(z, one));
    case CU_CX_EXPM1: return cu_cx_sub(cu_cx_exp(z), one);
    case CU_CX_SQRT: return cu_cx_sqrt(z);
    case CU_CX_RSQRT: return cu_cx_div(one, cu_cx_sqrt(z));
    case CU_CX_RECIPROCAL: return cu_cx_div(one, z);
    case CU_CX_SQUARE: return cu_cx_mul(z, z);
    case CU_CX_SIN: return cu_cx_of(sin(z.re) * cosh(z.im), cos(z.re) * sinh(z.im));
    case CU_CX_COS: return cu_cx_of(cos(z.re) * cosh(z.im), -(sin(z.re) * sinh(z.im)));
    case CU_CX_TANH: return cu_cx_tanh(z);
    case CU_CX_SIGMOID: return cu_cx_div(one, cu_cx_add(one, cu_cx_exp(cu_cx_neg(z))));
    case CU_CX_POW_SCALAR:
        /* Small integral exponents by repeated products, as the reference. */
        if (a == floor(a) && fabs(a) <= 64.0) {
            cu_cx r = one, base = a < 0.0 ? cu_cx_div(one, z) : z;
            for (int i = 0; i < (int)fabs(a); i++) r = cu_cx_mul(r, base);
            return r;
        }
        return cu_cx_exp(cu_cx_scale(cu_cx_log(z), a));
    case CU_CX_ASIN: return cu_cx_asin(z);
    case CU_CX_ACOS: return cu_cx_acos(z);
    case CU_CX_ATAN: return cu_cx_atan(z);
    default: return z;
    }
}

CU_CX_FN cu_cx cu_cx_binary(int op, cu_cx a, cu_cx b) {
    switch (op) {
    case CU_CX_ADD: return cu_cx_add(a, b);
    case CU_CX_SUB: return cu_cx_sub(a, b);
    case CU_CX_MUL: return cu_cx_mul(a, b);
    case CU_CX_DIV: return cu_cx_div(a, b);
    case CU_CX_POW:
        return b.re == 0.0 && b.im == 0.0 ? cu_cx_of(1.0, 0.0) : cu_cx_pow(a, b);
    default: return a;
    }
}

/* Neumaier's compensated sum of one part: the reference's, part by part. */
CU_CX_FN void cu_cx_neumaier(double v, double *s, double *c) {
    double t = *s + v;
    *c += fabs(*s) >= fabs(v) ? (*s - t) + v : (v - t) + *s;
    *s = t;
}

#endif
