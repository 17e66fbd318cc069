/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_complex.c — the complex dtypes (c64, c128) of the elementwise family,
 * and the complex element access the other families use.
 *
 * Every complex value is computed in C99 double complex (<complex.h>, with
 * its Annex G treatment of infinities and NaNs) and rounded once, part by
 * part, into the output dtype. What is provided:
 *   COPY   real or complex in, complex out (a real value x becomes x + 0i);
 *          complex -> real is not a copy: the core goes through views of
 *          the parts (gf_real / gf_imag) or ABS instead
 *   FILL   complex out: value + 0i
 *   unary  NEG EXP LOG LOG1P EXPM1 SQRT RSQRT RECIPROCAL SQUARE SIN COS TANH
 *          SIGMOID POW_SCALAR ASIN ACOS ATAN, complex in and the same out;
 *          ABS complex in, its real dtype out (the modulus)
 *   binary ADD SUB MUL DIV POW on one complex dtype; EQ NE to bool
 *   TRIL/TRIU and WHERE are byte copies and run in ref_elementwise.c. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "ref_internal.h"

bool ref_is_complex(int32_t dtype) { return pk_is_complex(dtype); }

double complex ref_load_c(const gfp_tensor *t, int64_t off) {
    const char *p = ref_base(t);
    switch (t->dtype) {
    case GFP_C64: {
        const float *e = (const float *)p + 2 * off;
        return CMPLX((double)e[0], (double)e[1]);
    }
    case GFP_C128: {
        const double *e = (const double *)p + 2 * off;
        return CMPLX(e[0], e[1]);
    }
    default: return CMPLX(ref_load(t, off), 0.0);
    }
}

void ref_store_c(const gfp_tensor *t, int64_t off, double complex v) {
    char *p = ref_base(t);
    switch (t->dtype) {
    case GFP_C64: {
        float *e = (float *)p + 2 * off;
        e[0] = (float)creal(v);
        e[1] = (float)cimag(v);
        break;
    }
    case GFP_C128: {
        double *e = (double *)p + 2 * off;
        e[0] = creal(v);
        e[1] = cimag(v);
        break;
    }
    default: ref_store(t, off, creal(v)); break;
    }
}

/* ------------------------------------------------------------ what is provided */
/* The rules every plugin of the tree shares: plugins/common/pk_complex.c. */
bool ref_complex_accepts(uint32_t op, const int32_t *in, const int32_t *out) {
    const uint32_t reals = PK_DT_FLOAT | PK_DT_INT | PK_DT(GFP_BOOL);
    return pk_complex_ew_accepts(op, in, out, PK_DT_COMPLEX, reals);
}

const char *ref_complex_accepted_text(uint32_t op) { return pk_complex_ew_rule(op); }

/* ------------------------------------------------------------ formulas */
double complex ref_complex_unary(uint32_t op, double complex z, double a) {
    switch (op) {
    case GFP_OP_NEG: return -z;
    case GFP_OP_EXP: return cexp(z);
    case GFP_OP_LOG: return clog(z);
    case GFP_OP_LOG1P: return clog(1.0 + z);
    case GFP_OP_EXPM1: return cexp(z) - 1.0;
    case GFP_OP_SQRT: return csqrt(z);
    case GFP_OP_RSQRT: return 1.0 / csqrt(z);
    case GFP_OP_RECIPROCAL: return 1.0 / z;
    case GFP_OP_SQUARE: return z * z;
    case GFP_OP_SIN: return csin(z);
    case GFP_OP_COS: return ccos(z);
    case GFP_OP_TANH: return ctanh(z);
    case GFP_OP_SIGMOID: return 1.0 / (1.0 + cexp(-z));
    case GFP_OP_POW_SCALAR:
        /* Small integral exponents by repeated products (exact where the
         * products are), as cpow's log/exp path would blur 0 and signs. */
        if (a == floor(a) && fabs(a) <= 64) {
            double complex r = 1.0, base = a < 0 ? 1.0 / z : z;
            for (int i = 0; i < (int)fabs(a); i++) r *= base;
            return r;
        }
        return cpow(z, a);
    case GFP_OP_ASIN: return casin(z);
    case GFP_OP_ACOS: return cacos(z);
    case GFP_OP_ATAN: return catan(z);
    default: return z;
    }
}

double complex ref_complex_binary(uint32_t op, double complex a, double complex b) {
    switch (op) {
    case GFP_OP_ADD: return a + b;
    case GFP_OP_SUB: return a - b;
    case GFP_OP_MUL: return a * b;
    case GFP_OP_DIV: return a / b;
    case GFP_OP_POW: return b == 0 ? 1.0 : cpow(a, b);
    default: return a;
    }
}

/* ------------------------------------------------------------ launch */
/* t[0] is the output, t[1..n) the inputs, all of the output's shape. */
gfp_status ref_complex_run(uint32_t op, const gfp_tensor *const *t, int n, const void *params) {
    const gfp_tensor *y = t[0];
    double a = 0, fill = 0;
    gfp_params_kind pk = (gfp_params_kind)gfp_op_lookup(op)->params;
    if (pk == GFP_PARAMS_scalar) a = ((const gfp_scalar_params *)params)->a;
    if (pk == GFP_PARAMS_fill) fill = ((const gfp_fill_params *)params)->value;
    pk_ew_kind kind = pk_ew_kind_of(op);
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        int64_t yo = ref_offset(y, idx);
        int64_t xo = n > 1 ? ref_offset(t[1], idx) : 0;
        switch (kind) {
        case PK_EW_COPY: ref_store_c(y, yo, ref_load_c(t[1], xo)); break;
        case PK_EW_FILL: ref_store_c(y, yo, CMPLX(fill, 0.0)); break;
        case PK_EW_UNARY:
            if (op == GFP_OP_ABS) ref_store(y, yo, cabs(ref_load_c(t[1], xo)));
            else ref_store_c(y, yo, ref_complex_unary(op, ref_load_c(t[1], xo), a));
            break;
        case PK_EW_BINARY:
            ref_store_c(y, yo, ref_complex_binary(op, ref_load_c(t[1], xo),
                                        ref_load_c(t[2], ref_offset(t[2], idx))));
            break;
        case PK_EW_COMPARE: {
            bool eq = ref_load_c(t[1], xo) == ref_load_c(t[2], ref_offset(t[2], idx));
            ((uint8_t *)ref_base(y))[yo] = op == GFP_OP_EQ ? eq : !eq;
            break;
        }
        default: return pk_fail(GFP_ERR_INTERNAL, "%s: no complex kernel", pk_op_name(op));
        }
    } while (ref_next_index(idx, y->sizes, y->rank));
    return GFP_OK;
}
