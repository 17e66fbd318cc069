/* SPDX-License-Identifier: BSD-3-Clause */
/* template_elementwise.c — COPY, FILL, RANDOM, the unary and binary ops,
 * comparisons and WHERE.
 *
 * Elementwise operands all have the output's sizes; a broadcast input comes
 * with stride 0, and an in-place output is the input itself (same buffer,
 * offset and strides), so reading an element before writing it is enough.
 * f32 is computed in float with the f-suffixed libm functions, as the
 * reference plugin does, so the results agree to the last bits. */
#include <math.h>
#include <string.h>

#include "template.h"

/* Checks that every operand has the output's shape. */
static gfp_status same_shapes(const char *op, const gfp_tensor *const *in, int n_in,
                              const gfp_tensor *y) {
    for (int i = 0; i < n_in; i++)
        if (!tp_same_shape(in[i], y))
            return tp_fail(GFP_ERR_INVALID, "%s: input %d's shape differs from the output's", op, i);
    return GFP_OK;
}

/* ------------------------------------------------------------ copy, fill */
/* float -> int64: truncate toward zero, saturate, NaN -> 0. */
static int64_t to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

gfp_status tp_copy(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                   const void *params) {
    (void)op;
    (void)params;
    const gfp_tensor *x = in[0], *y = out[0];
    gfp_status st = same_shapes("copy", in, 1, y);
    if (st != GFP_OK || tp_numel(y) == 0) return st;
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        const char *s = tp_at(x, idx);
        char *d = tp_at(y, idx);
        float f;
        int64_t l;
        bool b;
        switch (x->dtype) { /* load */
        case GFP_F32: memcpy(&f, s, 4); l = to_i64(f); b = f != 0; break;
        case GFP_I64: memcpy(&l, s, 8); f = (float)l; b = l != 0; break;
        default: b = *s != 0; f = b; l = b; break;
        }
        switch (y->dtype) { /* store */
        case GFP_F32: memcpy(d, &f, 4); break;
        case GFP_I64: memcpy(d, &l, 8); break;
        default: *d = b; break;
        }
    } while (tp_next(idx, y->sizes, y->rank));
    return GFP_OK;
}

gfp_status tp_fill(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                   const void *params) {
    (void)op;
    (void)in;
    const gfp_tensor *y = out[0];
    gfp_status st = tp_params(params, GFP_FILL_PARAMS_SIZE_V1_0, "fill");
    if (st != GFP_OK || tp_numel(y) == 0) return st;
    const gfp_fill_params *p = params;
    float f = (float)p->value;
    char b = p->value != 0;
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        char *d = tp_at(y, idx);
        if (y->dtype == GFP_F32) memcpy(d, &f, 4);
        else if (y->dtype == GFP_I64) memcpy(d, &p->ivalue, 8);
        else *d = b;
    } while (tp_next(idx, y->sizes, y->rank));
    return GFP_OK;
}

/* ------------------------------------------------------------ random */
/* Philox4x32-10 exactly as graft_plugin.h defines it: every device gives the
 * same numbers for the same seed and offset. */
static void philox(uint32_t c[4], uint32_t k0, uint32_t k1) {
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t c1 = c[1], c3 = c[3];
        c[0] = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        c[1] = (uint32_t)p1;
        c[2] = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

static double u24(uint32_t w) { return (double)(w >> 8) * 0x1p-24; }

/* Declared CONTIGUOUS: element i is the i-th in memory. */
gfp_status tp_random(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                     const void *params) {
    (void)op;
    (void)in;
    gfp_status st = tp_params(params, GFP_RANDOM_PARAMS_SIZE_V1_0, "random");
    if (st != GFP_OK) return st;
    const gfp_random_params *p = params;
    int64_t expect = 1; /* row-major strides: the core made the output contiguous */
    for (int d = out[0]->rank - 1; d >= 0; d--) {
        if (out[0]->sizes[d] > 1 && out[0]->strides[d] != expect)
            return tp_fail(GFP_ERR_INVALID, "random: the output must be contiguous");
        expect *= out[0]->sizes[d];
    }
    if (p->kind > GFP_RANDOM_BERNOULLI)
        return tp_fail(GFP_ERR_INVALID, "random: kind %u is unknown", (unsigned)p->kind);
    float *y = (float *)tp_at(out[0], (const int64_t[GFP_MAX_RANK]){0});
    int64_t n = tp_numel(out[0]);
    for (int64_t i = 0; i < n; i++) {
        uint64_t c = p->offset + (uint64_t)i;
        uint32_t r[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
        philox(r, (uint32_t)p->seed, (uint32_t)(p->seed >> 32));
        double v;
        if (p->kind == GFP_RANDOM_UNIFORM)
            v = p->a + (p->b - p->a) * u24(r[0]);
        else if (p->kind == GFP_RANDOM_NORMAL)
            v = p->a + p->b * sqrt(-2.0 * log(1.0 - u24(r[0]))) * cos(6.28318530717958647692 * u24(r[1]));
        else
            v = u24(r[0]) < p->a ? 1.0 : 0.0;
        y[i] = (float)v; /* computed in double, rounded once */
    }
    return GFP_OK;
}

/* ------------------------------------------------------------ unary, binary */
static float unary(uint32_t op, float x) {
    switch (op) {
    case GFP_OP_NEG: return -x;
    case GFP_OP_EXP: return expf(x);
    case GFP_OP_LOG: return logf(x);
    case GFP_OP_SQRT: return sqrtf(x);
    case GFP_OP_TANH: return tanhf(x);
    case GFP_OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
    default: return x > 0 || x != x ? x : 0.0f; /* RELU; NaN propagates */
    }
}

gfp_status tp_unary(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                    const void *params) {
    (void)params;
    const gfp_tensor *y = out[0];
    gfp_status st = same_shapes("unary op", in, 1, y);
    if (st != GFP_OK || tp_numel(y) == 0) return st;
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        float x;
        memcpy(&x, tp_at(in[0], idx), 4);
        x = unary(op, x);
        memcpy(tp_at(y, idx), &x, 4);
    } while (tp_next(idx, y->sizes, y->rank));
    return GFP_OK;
}

static float binary(uint32_t op, float a, float b) {
    switch (op) {
    case GFP_OP_ADD: return a + b;
    case GFP_OP_SUB: return a - b;
    case GFP_OP_MUL: return a * b;
    case GFP_OP_DIV: return a / b;
    default: return a != a ? a : b != b ? b : a > b ? a : b; /* MAXIMUM; NaN propagates */
    }
}

gfp_status tp_binary(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                     const void *params) {
    (void)params;
    const gfp_tensor *y = out[0];
    gfp_status st = same_shapes("binary op", in, 2, y);
    if (st != GFP_OK || tp_numel(y) == 0) return st;
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        float a, b;
        memcpy(&a, tp_at(in[0], idx), 4);
        memcpy(&b, tp_at(in[1], idx), 4);
        a = binary(op, a, b);
        memcpy(tp_at(y, idx), &a, 4);
    } while (tp_next(idx, y->sizes, y->rank));
    return GFP_OK;
}

/* ------------------------------------------------------------ comparisons, where */
gfp_status tp_compare(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                      const void *params) {
    (void)params;
    const gfp_tensor *y = out[0];
    gfp_status st = same_shapes("comparison", in, 2, y);
    if (st != GFP_OK || tp_numel(y) == 0) return st;
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        int c; /* -1, 0, 1, or 2 when a NaN makes them unordered */
        if (in[0]->dtype == GFP_F32) {
            float a, b;
            memcpy(&a, tp_at(in[0], idx), 4);
            memcpy(&b, tp_at(in[1], idx), 4);
            c = a != a || b != b ? 2 : (a > b) - (a < b);
        } else {
            int64_t a, b;
            memcpy(&a, tp_at(in[0], idx), 8);
            memcpy(&b, tp_at(in[1], idx), 8);
            c = (a > b) - (a < b);
        }
        bool r = op == GFP_OP_EQ   ? c == 0
                 : op == GFP_OP_NE ? c != 0
                 : op == GFP_OP_GT ? c == 1
                                   : c == -1; /* LT */
        *tp_at(y, idx) = r;
    } while (tp_next(idx, y->sizes, y->rank));
    return GFP_OK;
}

gfp_status tp_where(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                    const void *params) {
    (void)op;
    (void)params;
    const gfp_tensor *y = out[0];
    gfp_status st = same_shapes("where", in, 3, y);
    if (st != GFP_OK || tp_numel(y) == 0) return st;
    size_t size = y->dtype == GFP_I64 ? 8 : 4;
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        const gfp_tensor *src = *tp_at(in[0], idx) ? in[1] : in[2];
        memmove(tp_at(y, idx), tp_at(src, idx), size); /* may be in place */
    } while (tp_next(idx, y->sizes, y->rank));
    return GFP_OK;
}
