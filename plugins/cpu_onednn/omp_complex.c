/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_complex.c — the elementwise family on c64 and c128, on the elementwise
 * engine (any strides, broadcasts, transposed inputs; OpenMP).
 *
 * Results are the reference's bit for bit (ref_complex.c computes every
 * value in C99 double complex and rounds each part once):
 *  - ADD, SUB, NEG part by part in the part dtype: a sum of two floats
 *    rounded to double and then to float is the float sum, so nothing is
 *    lost by skipping the double;
 *  - MUL and SQUARE by the product's formula in double (re = ac - bd,
 *    im = ad + bc, as the compiler expands a double complex product, FMA
 *    contraction off), vectorised over blocks; where both parts come out
 *    NaN, C's product (Annex G's recovery of infinities) is recomputed for
 *    that element, as the compiled product does;
 *  - ABS: cabs in double; EQ / NE part by part;
 *  - the other ops the reference takes (DIV, POW, EXP, LOG, SQRT, SIN, ...)
 *    call the reference's own formula per element (ref_complex_unary /
 *    ref_complex_binary), in parallel.
 * COPY and FILL of complex dtypes run in omp_elementwise.c; ODN_FALLBACK
 * for what the reference does not take (its kernel then reports it). */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "onednn_internal.h"

typedef struct cx_args {
    uint32_t op;
    double a; /* POW_SCALAR's exponent */
} cx_args;

/* ------------------------------------------------------------ add, sub, neg */
/* Unit strides everywhere: the parts as one real run of 2n. */
#define CX_PARTWISE(NAME, CT, P, EXPR)                                                   \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,            \
                                 const void *ctx) {                                      \
        (void)ctx;                                                                       \
        if (s[0] == 1 && s[1] == 1 && s[2] == 1) {                                       \
            P *y = (P *)p[0];                                                            \
            const P *A = (const P *)p[1], *B = (const P *)p[2];                          \
            for (int64_t i = 0; i < 2 * n; i++) {                                        \
                P a = A[i], b = B[i];                                                    \
                y[i] = (EXPR);                                                           \
            }                                                                            \
            return;                                                                      \
        }                                                                                \
        CT *y = (CT *)p[0];                                                              \
        const CT *A = (const CT *)p[1], *B = (const CT *)p[2];                           \
        for (int64_t i = 0; i < n; i++) {                                                \
            CT u = A[i * s[1]], v = B[i * s[2]];                                         \
            P a = u.re, b = v.re;                                                        \
            P re = (EXPR);                                                               \
            a = u.im, b = v.im;                                                          \
            P im = (EXPR);                                                               \
            y[i * s[0]].re = re;                                                         \
            y[i * s[0]].im = im;                                                         \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)
CX_PARTWISE(add_c64, odn_c64, float, a + b)
CX_PARTWISE(sub_c64, odn_c64, float, a - b)
CX_PARTWISE(add_c128, odn_c128, double, a + b)
CX_PARTWISE(sub_c128, odn_c128, double, a - b)

#define CX_NEG(NAME, CT, P)                                                              \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,            \
                                 const void *ctx) {                                      \
        (void)ctx;                                                                       \
        if (s[0] == 1 && s[1] == 1) {                                                    \
            P *y = (P *)p[0];                                                            \
            const P *x = (const P *)p[1];                                                \
            for (int64_t i = 0; i < 2 * n; i++) y[i] = -x[i];                            \
            return;                                                                      \
        }                                                                                \
        CT *y = (CT *)p[0];                                                              \
        const CT *x = (const CT *)p[1];                                                  \
        for (int64_t i = 0; i < n; i++) {                                                \
            CT v = x[i * s[1]];                                                          \
            y[i * s[0]].re = -v.re;                                                      \
            y[i * s[0]].im = -v.im;                                                      \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)
CX_NEG(neg_c64, odn_c64, float)
CX_NEG(neg_c128, odn_c128, double)

/* ------------------------------------------------------------ mul, square */
#define CX_BLOCK 256

/* Elements of a block whose product came out NaN in both parts get C's
 * product (the compiled double complex multiplication's recovery). */
static void fix_products(double *re, double *im, const double *ar, const double *ai,
                         const double *br, const double *bi, int64_t m) {
    for (int64_t j = 0; j < m; j++) {
        if (re[j] == re[j] || im[j] == im[j]) continue;
        double complex z = CMPLX(ar[j], ai[j]) * CMPLX(br[j], bi[j]);
        re[j] = creal(z);
        im[j] = cimag(z);
    }
}

/* c64 with unit strides and y apart from a and b: each product is stored as
 * it is computed, and a block whose products came out NaN in both parts
 * somewhere recomputes those from the inputs, which are still there (1.6x
 * faster at 16M than staging every block: the products' rate is the
 * stores'). Only c64: GCC recognises the interleaved complex product and
 * emits vfmaddsub whatever -ffp-contract says, which is exact for products
 * of floats held in double but not for c128's doubles (the staged loop
 * below is not recognised). */
#define CX_MUL_DIRECT(CT, P)                                                             \
    for (int64_t i0 = 0; i0 < n; i0 += CX_BLOCK) {                                       \
        int64_t m = n - i0 < CX_BLOCK ? n - i0 : CX_BLOCK;                               \
        const P *a = (const P *)(A + i0), *b = (const P *)(B + i0);                      \
        P *o = (P *)(y + i0);                                                            \
        int bad = 0;                                                                     \
        for (int64_t j = 0; j < m; j++) {                                                \
            double ar = a[2 * j], ai = a[2 * j + 1], br = b[2 * j], bi = b[2 * j + 1];   \
            double re = ar * br - ai * bi, im = ar * bi + ai * br;                       \
            bad |= (re != re) & (im != im);                                              \
            o[2 * j] = (P)re;                                                            \
            o[2 * j + 1] = (P)im;                                                        \
        }                                                                                \
        for (int64_t j = 0; bad && j < m; j++) {                                         \
            if (o[2 * j] == o[2 * j] || o[2 * j + 1] == o[2 * j + 1]) continue;          \
            double complex z = CMPLX(a[2 * j], a[2 * j + 1]) * CMPLX(b[2 * j], b[2 * j + 1]); \
            o[2 * j] = (P)creal(z);                                                      \
            o[2 * j + 1] = (P)cimag(z);                                                  \
        }                                                                                \
    }

/* y = a * b (unary: b is a, SQUARE). Otherwise each block of inputs is
 * loaded into doubles before any output is written, so in-place launches
 * and any strides are safe. */
#define CX_MUL(NAME, CT, P, UNARY)                                                       \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,            \
                                 const void *ctx) {                                      \
        (void)ctx;                                                                       \
        CT *y = (CT *)p[0];                                                              \
        const CT *A = (const CT *)p[1];                                                  \
        const CT *B = UNARY ? A : (const CT *)p[2];                                      \
        int64_t sy = s[0], sa = s[1], sb = UNARY ? s[1] : s[2];                          \
        if (sizeof(P) == 4 && sy == 1 && sa == 1 && sb == 1 && (const void *)y != (const void *)A && \
            (const void *)y != (const void *)B) {                                        \
            CX_MUL_DIRECT(CT, P)                                                         \
            return;                                                                      \
        }                                                                                \
        double ar[CX_BLOCK], ai[CX_BLOCK], br[CX_BLOCK], bi[CX_BLOCK];                   \
        double re[CX_BLOCK], im[CX_BLOCK];                                               \
        for (int64_t i0 = 0; i0 < n; i0 += CX_BLOCK) {                                   \
            int64_t m = n - i0 < CX_BLOCK ? n - i0 : CX_BLOCK;                           \
            const CT *a = A + i0 * sa, *b = B + i0 * sb;                                 \
            if (sa == 1 && sb == 1) {                                                    \
                for (int64_t j = 0; j < m; j++) {                                        \
                    ar[j] = a[j].re, ai[j] = a[j].im;                                    \
                    br[j] = b[j].re, bi[j] = b[j].im;                                    \
                }                                                                        \
            } else {                                                                     \
                for (int64_t j = 0; j < m; j++) {                                        \
                    ar[j] = a[j * sa].re, ai[j] = a[j * sa].im;                          \
                    br[j] = b[j * sb].re, bi[j] = b[j * sb].im;                          \
                }                                                                        \
            }                                                                            \
            int bad = 0;                                                                 \
            for (int64_t j = 0; j < m; j++) {                                            \
                re[j] = ar[j] * br[j] - ai[j] * bi[j];                                   \
                im[j] = ar[j] * bi[j] + ai[j] * br[j];                                   \
                bad |= (re[j] != re[j]) & (im[j] != im[j]);                              \
            }                                                                            \
            if (bad) fix_products(re, im, ar, ai, br, bi, m);                            \
            CT *out = y + i0 * sy;                                                       \
            if (sy == 1) {                                                               \
                for (int64_t j = 0; j < m; j++) {                                        \
                    out[j].re = (P)re[j];                                                \
                    out[j].im = (P)im[j];                                                \
                }                                                                        \
            } else {                                                                     \
                for (int64_t j = 0; j < m; j++) {                                        \
                    out[j * sy].re = (P)re[j];                                           \
                    out[j * sy].im = (P)im[j];                                           \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)
CX_MUL(mul_c64, odn_c64, float, 0)
CX_MUL(mul_c128, odn_c128, double, 0)
CX_MUL(square_c64, odn_c64, float, 1)
CX_MUL(square_c128, odn_c128, double, 1)

/* ------------------------------------------------------------ abs, eq, ne */
#define CX_ABS(NAME, CT, P)                                                              \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,            \
                                 const void *ctx) {                                      \
        (void)ctx;                                                                       \
        P *y = (P *)p[0];                                                                \
        const CT *x = (const CT *)p[1];                                                  \
        for (int64_t i = 0; i < n; i++) {                                                \
            CT v = x[i * s[1]];                                                          \
            y[i * s[0]] = (P)cabs(CMPLX((double)v.re, (double)v.im));                    \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)
CX_ABS(abs_c64, odn_c64, float)
CX_ABS(abs_c128, odn_c128, double)

#define CX_EQ(NAME, CT, NE)                                                              \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,            \
                                 const void *ctx) {                                      \
        (void)ctx;                                                                       \
        uint8_t *y = (uint8_t *)p[0];                                                    \
        const CT *A = (const CT *)p[1], *B = (const CT *)p[2];                           \
        for (int64_t i = 0; i < n; i++) {                                                \
            CT a = A[i * s[1]], b = B[i * s[2]];                                         \
            bool eq = a.re == b.re && a.im == b.im;                                      \
            y[i * s[0]] = NE ? !eq : eq;                                                 \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)
CX_EQ(eq_c64, odn_c64, 0)
CX_EQ(ne_c64, odn_c64, 1)
CX_EQ(eq_c128, odn_c128, 0)
CX_EQ(ne_c128, odn_c128, 1)

/* ------------------------------------------------------------ the reference's formulas */
#define CX_FORMULA_UNARY(NAME, CT, P)                                                    \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,            \
                                 const void *ctx) {                                      \
        const cx_args *q = ctx;                                                          \
        CT *y = (CT *)p[0];                                                              \
        const CT *x = (const CT *)p[1];                                                  \
        for (int64_t i = 0; i < n; i++) {                                                \
            CT v = x[i * s[1]];                                                          \
            double complex z =                                                           \
                ref_complex_unary(q->op, CMPLX((double)v.re, (double)v.im), q->a);       \
            y[i * s[0]].re = (P)creal(z);                                                \
            y[i * s[0]].im = (P)cimag(z);                                                \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)
CX_FORMULA_UNARY(unary_c64, odn_c64, float)
CX_FORMULA_UNARY(unary_c128, odn_c128, double)

#define CX_FORMULA_BINARY(NAME, CT, P)                                                   \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,            \
                                 const void *ctx) {                                      \
        const cx_args *q = ctx;                                                          \
        CT *y = (CT *)p[0];                                                              \
        const CT *A = (const CT *)p[1], *B = (const CT *)p[2];                           \
        for (int64_t i = 0; i < n; i++) {                                                \
            CT u = A[i * s[1]], v = B[i * s[2]];                                         \
            double complex z = ref_complex_binary(q->op, CMPLX((double)u.re, (double)u.im), \
                                                  CMPLX((double)v.re, (double)v.im));    \
            y[i * s[0]].re = (P)creal(z);                                                \
            y[i * s[0]].im = (P)cimag(z);                                                \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)
CX_FORMULA_BINARY(binary_c64, odn_c64, float)
CX_FORMULA_BINARY(binary_c128, odn_c128, double)

/* ------------------------------------------------------------ routing */
/* The launch's kernel and its cost per element (odn_ew_run's weight);
 * NULL when the reference does not take the dtypes (its kernel then says so). */
static odn_ew_fn pick(uint32_t op, const gfp_tensor *const *t, int n_t, int64_t *cost) {
    int32_t dt[4] = {-1, -1, -1, -1};
    for (int k = 0; k < n_t; k++) dt[k] = t[k]->dtype;
    if (!ref_complex_accepts(op, dt + 1, dt)) return NULL;
    int32_t cx = n_t > 1 ? dt[1] : dt[0];
    bool c64 = cx == GFP_C64;
    *cost = 1;
    switch (op) {
    case GFP_OP_ADD: return c64 ? add_c64 : add_c128;
    case GFP_OP_SUB: return c64 ? sub_c64 : sub_c128;
    case GFP_OP_NEG: return c64 ? neg_c64 : neg_c128;
    case GFP_OP_MUL: *cost = 2; return c64 ? mul_c64 : mul_c128;
    case GFP_OP_SQUARE: *cost = 2; return c64 ? square_c64 : square_c128;
    case GFP_OP_ABS: *cost = 8; return c64 ? abs_c64 : abs_c128;
    case GFP_OP_EQ: return c64 ? eq_c64 : eq_c128;
    case GFP_OP_NE: return c64 ? ne_c64 : ne_c128;
    default: break;
    }
    *cost = 20;
    if (gfp_op_family_of(op) == GFP_FAMILY_UNARY && n_t == 2)
        return c64 ? unary_c64 : unary_c128;
    if (gfp_op_family_of(op) == GFP_FAMILY_BINARY && n_t == 3)
        return c64 ? binary_c64 : binary_c128;
    return NULL;
}

gfp_status odn_complex_launch(uint32_t op, const gfp_tensor *const *t, int n_t,
                              const void *params) {
    if (!odn_writable(t[0])) return ODN_FALLBACK;
    int64_t cost = 1;
    odn_ew_fn fn = pick(op, t, n_t, &cost);
    if (!fn) return ODN_FALLBACK;
    cx_args args = {op, 0};
    if ((gfp_params_kind)gfp_op_lookup(op)->params == GFP_PARAMS_scalar) {
        const gfp_scalar_params *sp = params;
        if (!sp || sp->struct_size < GFP_SCALAR_PARAMS_SIZE_V1_0) return ODN_FALLBACK;
        args.a = sp->a;
    }
    if (pk_numel(t[0]) == 0) return GFP_OK;
    odn_ew g;
    odn_ew_init(&g, t, n_t);
    odn_ew_run(&g, fn, &args, cost);
    return GFP_OK;
}
