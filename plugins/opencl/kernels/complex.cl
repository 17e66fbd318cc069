/* SPDX-License-Identifier: BSD-3-Clause */
/* complex.cl — the complex dtypes (c64: float2, c128: double2): COPY into
 * complex, FILL, the unary and binary ops, EQ/NE, SUM/MEAN/PROD and the
 * operand of MATMUL's real GEMM (ocl_complex.c launches them; FFT is fft.cl).
 *
 * Every value is computed in cx (double2) on a device with doubles, for c64
 * too, and rounded once, part by part, on store: the reference computes in
 * C99 double complex the same way. Without doubles (no c128 then) c64 is
 * computed in float2. The formulas are the textbook ones for finite values,
 * written so that nothing cancels in the ordinary range (asin and acos by
 * Kahan's products of square roots, atan's imaginary part by log1p, tanh by
 * Kahan's tan/sinh form). Infinite and NaN parts are not treated as C99's
 * Annex G does: they propagate through the arithmetic (a NaN part makes
 * NaN parts, 1/0 is NaN rather than infinity).
 *
 * The elementwise kernels take the op as a number (CX_* below, ocl_complex.c
 * has the same list), so one kernel per dtype serves every op. */

#if GF_HAS_FP64
typedef double cr;
typedef double2 cx;
#define LD_c64(v) convert_double2(v)
#define ST_c64(v) convert_float2_rte(v)
#define LD_c128(v) (v)
#define ST_c128(v) (v)
#define CR_HALF_PI 1.5707963267948966
#else
typedef float cr;
typedef float2 cx;
#define LD_c64(v) (v)
#define ST_c64(v) (v)
#define CR_HALF_PI 1.5707963f
#endif
#define ONE ((cr)1)
#define ZERO ((cr)0)

/* Unary ops (the order of ocl_complex.c's table). */
#define CX_NEG 0
#define CX_EXP 1
#define CX_LOG 2
#define CX_LOG1P 3
#define CX_EXPM1 4
#define CX_SQRT 5
#define CX_RSQRT 6
#define CX_RECIPROCAL 7
#define CX_SQUARE 8
#define CX_SIN 9
#define CX_COS 10
#define CX_TANH 11
#define CX_SIGMOID 12
#define CX_POW_SCALAR 13
#define CX_ASIN 14
#define CX_ACOS 15
#define CX_ATAN 16
/* Binary ops. */
#define CX_ADD 0
#define CX_SUB 1
#define CX_MUL 2
#define CX_DIV 3
#define CX_POW 4

cx cx_mul(cx a, cx b) { return (cx)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

/* Smith's division: no overflow of |b|^2. */
cx cx_div(cx a, cx b) {
    if (fabs(b.x) >= fabs(b.y)) {
        cr r = b.y / b.x, den = b.x + b.y * r;
        return (cx)((a.x + a.y * r) / den, (a.y - a.x * r) / den);
    }
    cr r = b.x / b.y, den = b.x * r + b.y;
    return (cx)((a.x * r + a.y) / den, (a.y * r - a.x) / den);
}

cx cx_exp(cx z) {
    cr e = exp(z.x);
    return (cx)(e * cos(z.y), e * sin(z.y));
}

cx cx_log(cx z) { return (cx)(log(hypot(z.x, z.y)), atan2(z.y, z.x)); }

cx cx_sqrt(cx z) {
    if (z.x == ZERO && z.y == ZERO) return (cx)(ZERO, z.y);
    cr t = sqrt((fabs(z.x) + hypot(z.x, z.y)) * (cr)0.5f);
    if (z.x >= ZERO) return (cx)(t, z.y / (2 * t));
    return (cx)(fabs(z.y) / (2 * t), copysign(t, z.y));
}

/* Kahan: tanh(x + iy) with t = tan y, s = sinh x, rho = sqrt(1 + s^2),
 * b = 1 + t^2: (b rho s + i t) / (1 + b s^2). Past |x| = 22 the real part
 * is +-1 to double precision. */
cx cx_tanh(cx z) {
    if (fabs(z.x) > (cr)22) {
        cr e = exp(-2 * fabs(z.x));
        return (cx)(copysign(ONE, z.x), 4 * sin(z.y) * cos(z.y) * e);
    }
    cr t = tan(z.y), b = ONE + t * t, s = sinh(z.x), rho = sqrt(ONE + s * s);
    cr den = ONE + b * s * s;
    return (cx)(b * rho * s / den, t / den);
}

/* Kahan's arcsin and arccos: from s1 = sqrt(1 - z) and s2 = sqrt(1 + z). */
cx cx_asin(cx z) {
    cx s1 = cx_sqrt((cx)(ONE - z.x, -z.y)), s2 = cx_sqrt((cx)(ONE + z.x, z.y));
    return (cx)(atan2(z.x, s1.x * s2.x - s1.y * s2.y), asinh(s1.x * s2.y - s1.y * s2.x));
}
cx cx_acos(cx z) {
    cx s1 = cx_sqrt((cx)(ONE - z.x, -z.y)), s2 = cx_sqrt((cx)(ONE + z.x, z.y));
    return (cx)(2 * atan2(s1.x, s2.x), asinh(s2.x * s1.y - s2.y * s1.x));
}
/* atan z = (1/2) atan2(2x, 1 - x^2 - y^2) + (i/4) log(((1+y)^2 + x^2) / ((1-y)^2 + x^2)). */
cx cx_atan(cx z) {
    cr x = z.x, y = z.y;
    cr re = (cr)0.5f * atan2(2 * x, (ONE - x) * (ONE + x) - y * y);
    cr d = (ONE - y) * (ONE - y) + x * x;
    return (cx)(re, (cr)0.25f * log1p(4 * y / d));
}

cx cx_pow(cx a, cx b) { return cx_exp(cx_mul(b, cx_log(a))); }

cx cx_unary(int op, cx z, cr a) {
    const cx one = (cx)(ONE, ZERO);
    switch (op) {
    case CX_NEG: return -z;
    case CX_EXP: return cx_exp(z);
    case CX_LOG: return cx_log(z);
    case CX_LOG1P: return cx_log(z + one);
    case CX_EXPM1: return cx_exp(z) - one;
    case CX_SQRT: return cx_sqrt(z);
    case CX_RSQRT: return cx_div(one, cx_sqrt(z));
    case CX_RECIPROCAL: return cx_div(one, z);
    case CX_SQUARE: return cx_mul(z, z);
    case CX_SIN: return (cx)(sin(z.x) * cosh(z.y), cos(z.x) * sinh(z.y));
    case CX_COS: return (cx)(cos(z.x) * cosh(z.y), -(sin(z.x) * sinh(z.y)));
    case CX_TANH: return cx_tanh(z);
    case CX_SIGMOID: return cx_div(one, one + cx_exp(-z));
    case CX_POW_SCALAR:
        /* small integral exponents by repeated products, as the reference */
        if (a == floor(a) && fabs(a) <= (cr)64) {
            cx r = one, base = a < ZERO ? cx_div(one, z) : z;
            for (int i = 0; i < (int)fabs(a); i++) r = cx_mul(r, base);
            return r;
        }
        return cx_exp(a * cx_log(z));
    case CX_ASIN: return cx_asin(z);
    case CX_ACOS: return cx_acos(z);
    case CX_ATAN: return cx_atan(z);
    default: return z;
    }
}

cx cx_binary(int op, cx a, cx b) {
    switch (op) {
    case CX_ADD: return a + b;
    case CX_SUB: return a - b;
    case CX_MUL: return cx_mul(a, b);
    case CX_DIV: return cx_div(a, b);
    case CX_POW: return b.x == ZERO && b.y == ZERO ? (cx)(ONE, ZERO) : cx_pow(a, b);
    default: return a;
    }
}

/* ------------------------------------------------------------ elementwise */
/* COPY into complex from every stored dtype: a real x becomes x + 0i. */
#define LD_f32(v) ((cx)((cr)(v), ZERO))
#define LD_f64(v) ((cx)((cr)(v), ZERO))
#define LD_i32(v) ((cx)((cr)(v), ZERO))
#define LD_i64(v) ((cx)((cr)(v), ZERO))
#define LD_b8(v) ((cx)((v) != 0 ? ONE : ZERO, ZERO))

#define CX_COPY(SN, TS, DN, TD)                                            \
    TD cx_copy_##SN##_##DN##_el(TS x) { return ST_##DN(LD_##SN(x)); }      \
    GF_EW2(cx_copy_##SN##_##DN, TD, TS, (), ())

#define CX_KERNELS(DN, TD, TR)                                                                 \
    CX_COPY(f32, float, DN, TD)                                                                \
    CX_COPY(i32, int, DN, TD)                                                                  \
    CX_COPY(i64, long, DN, TD)                                                                 \
    CX_COPY(b8, uchar, DN, TD)                                                                 \
    CX_COPY(c64, float2, DN, TD)                                                               \
    TD cx_fill_##DN##_el(int unused, TD v) { return v; }                                       \
    GF_EW1(cx_fill_##DN, TD, (, TD v), (, v))                                                  \
    TD cx_unary_##DN##_el(TD a, int op, cr p) { return ST_##DN(cx_unary(op, LD_##DN(a), p)); } \
    GF_EW2(cx_unary_##DN, TD, TD, (, int op, cr p), (, op, p))                                 \
    TR cx_abs_##DN##_el(TD a) {                                                                \
        cx z = LD_##DN(a);                                                                     \
        return (TR)hypot(z.x, z.y);                                                            \
    }                                                                                          \
    GF_EW2(cx_abs_##DN, TR, TD, (), ())                                                        \
    TD cx_binary_##DN##_el(TD a, TD b, int op) {                                               \
        return ST_##DN(cx_binary(op, LD_##DN(a), LD_##DN(b)));                                 \
    }                                                                                          \
    GF_EW3(cx_binary_##DN, TD, TD, TD, (, int op), (, op))                                     \
    uchar cx_compare_##DN##_el(TD a, TD b, int ne) {                                           \
        bool eq = a.x == b.x && a.y == b.y;                                                    \
        return (uchar)(ne ? !eq : eq);                                                         \
    }                                                                                          \
    GF_EW3(cx_compare_##DN, uchar, TD, TD, (, int ne), (, ne))

CX_KERNELS(c64, float2, float)
#if GF_HAS_FP64
CX_COPY(f64, double, c64, float2)
CX_COPY(c128, double2, c64, float2)
CX_KERNELS(c128, double2, double)
CX_COPY(f64, double, c128, double2)
CX_COPY(c128, double2, c128, double2)
#endif

/* ------------------------------------------------------------ reductions */
/* SUM / MEAN / PROD (op 0, 1, 2): one work-item per output; the kept dims
 * (ksz, with x strides kx and y strides ky) index the outputs, the reduced
 * dims (rsz, x strides rx) the nred elements of each line. Sums are
 * compensated (Neumaier) part by part, as the reference's. */
void neumaier(cr v, cr *s, cr *c) {
    cr t = *s + v;
    *c += fabs(*s) >= fabs(v) ? (*s - t) + v : (v - t) + *s;
    *s = t;
}

#define CX_REDUCE(DN, TD)                                                                      \
    __kernel void cx_reduce_##DN(__global TD *y, long oy, __global const TD *x, long ox,      \
                                 long nout, long8 ksz, long8 kx, long8 ky, int krank,         \
                                 long nred, long8 rsz, long8 rx, int rrank, int op) {         \
        long o = get_global_id(0);                                                             \
        if (o >= nout) return;                                                                 \
        long xb = ox + gf_line_offset(o, ksz, kx, krank);                                      \
        cx r;                                                                                  \
        if (op == 2) {                                                                         \
            r = (cx)(ONE, ZERO);                                                               \
            for (long j = 0; j < nred; j++)                                                    \
                r = cx_mul(r, LD_##DN(x[xb + gf_line_offset(j, rsz, rx, rrank)]));             \
        } else {                                                                               \
            cr sr = ZERO, cre = ZERO, si = ZERO, ci = ZERO;                                    \
            for (long j = 0; j < nred; j++) {                                                  \
                cx v = LD_##DN(x[xb + gf_line_offset(j, rsz, rx, rrank)]);                     \
                neumaier(v.x, &sr, &cre);                                                      \
                neumaier(v.y, &si, &ci);                                                       \
            }                                                                                  \
            r = (cx)(sr + cre, si + ci);                                                       \
            if (op == 1) r = nred ? r / (cr)nred : (cx)(NAN, NAN);                             \
        }                                                                                      \
        y[oy + gf_line_offset(o, ksz, ky, krank)] = ST_##DN(r);                                \
    }

CX_REDUCE(c64, float2)
#if GF_HAS_FP64
CX_REDUCE(c128, double2)
#endif

/* ------------------------------------------------------------ matmul */
/* MATMUL runs as one real GEMM (ocl_complex.c): b [.., k, n] becomes the
 * real [.., 2k, 2n] matrix e (contiguous) with, for each (q, j),
 *   e[2q][2j] = br   e[2q][2j+1] = bi
 *   e[2q+1][2j] = -bi  e[2q+1][2j+1] = br
 * so that a read as the real [m, 2k] matrix (re, im interleaved) times e is
 * y read as the real [m, 2n] one. Batch dims (bsz, strides bb) are
 * unravelled per item. */
#define CX_EXPAND(DN, TD, TP)                                                                  \
    __kernel void cx_expand_##DN(__global TP *e, __global const TD *b, long ob, long k, long n, \
                                 long br, long bc, long8 bsz, long8 bb, int brank) {           \
        long j = get_global_id(0), q = get_global_id(1), bt = get_global_id(2);               \
        if (j >= n || q >= k) return;                                                          \
        TD v = b[ob + gf_line_offset(bt, bsz, bb, brank) + q * br + j * bc];                  \
        __global TP *row = e + (bt * 2 * k + 2 * q) * 2 * n + 2 * j;                           \
        row[0] = v.x;                                                                          \
        row[1] = v.y;                                                                          \
        row[2 * n] = -v.y;                                                                     \
        row[2 * n + 1] = v.x;                                                                  \
    }

CX_EXPAND(c64, float2, float)
#if GF_HAS_FP64
CX_EXPAND(c128, double2, double)
#endif
