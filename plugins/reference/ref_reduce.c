/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_reduce.c — reductions: SUM MEAN PROD AMAX AMIN VAR LOGSUMEXP over a set
 * of dims, and MAX_DIM / MIN_DIM (values and i64 indices) along one dim.
 *
 * The output has the input's rank with size 1 in every reduced dim. Output
 * element o reduces the "line" of input elements whose index equals o's in
 * the kept dims. Floating results are computed in double (sums with a
 * compensated accumulator) and rounded once into the output dtype. Integer
 * results use exact 64-bit arithmetic that wraps on overflow, as PyTorch's
 * integer reductions do. */
#include <math.h>
#include <stddef.h>

#include "ref_internal.h"

/* The input dtypes each op takes (plugin_kit.h); the output has the same
 * dtype (indices of MAX_DIM / MIN_DIM are i64). Bool AMAX / AMIN are any /
 * all. */
#define REDUCE_DTYPES (REF_DT_FLOAT | PK_DT_INT | PK_DT(GFP_BOOL))

/* Complex inputs: SUM, MEAN and PROD only (the others need an order), the
 * output of the input's dtype. */
static bool complex_ok(uint32_t op, int32_t in, int32_t out) {
    return (op == GFP_OP_SUM || op == GFP_OP_MEAN || op == GFP_OP_PROD) && out == in;
}

uint32_t ref_reduce_support(const gfp_op_query *q) {
    if (ref_is_complex(q->input_dtypes[0]) || ref_is_complex(q->output_dtypes[0]))
        return complex_ok(q->op, q->input_dtypes[0], q->output_dtypes[0]) ? GFP_SUPPORT_STRIDED
                                                                          : GFP_SUPPORT_NONE;
    int32_t indices = pk_reduce_by_dim(q->op) ? q->output_dtypes[1] : GFP_I64;
    return pk_reduce_dtypes_ok(q->op, q->input_dtypes[0], q->output_dtypes[0], indices,
                               REDUCE_DTYPES, REF_DT_FLOAT)
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* ------------------------------------------------------------------ lines */
/* The input elements that one output element reduces. */
typedef struct line {
    const gfp_tensor *x;
    int64_t sizes[GFP_MAX_RANK]; /* x's size in reduced dims, 1 in kept dims */
    int64_t n;                   /* product of sizes: elements in the line */
    int64_t base;                /* element offset of the line's first element */
} line;

/* Element offset of the j-th element of the line, row-major over l->sizes. */
static int64_t line_offset(const line *l, int64_t j) {
    int64_t off = l->base;
    for (int d = l->x->rank - 1; d >= 0; d--) {
        off += (j % l->sizes[d]) * l->x->strides[d];
        j /= l->sizes[d];
    }
    return off;
}

static double line_load(const line *l, int64_t j) { return ref_load(l->x, line_offset(l, j)); }
static int64_t line_load_i64(const line *l, int64_t j) {
    return ref_load_i64(l->x, line_offset(l, j));
}

static double line_sum(const line *l) {
    ref_ksum k = {0, 0};
    for (int64_t j = 0; j < l->n; j++) ref_ksum_add(&k, line_load(l, j));
    return ref_ksum_value(&k);
}

/* Largest (or smallest) element; NaN if any element is NaN. n >= 1. */
static double line_extreme(const line *l, bool largest) {
    double m = line_load(l, 0);
    for (int64_t j = 1; j < l->n && !isnan(m); j++) {
        double v = line_load(l, j);
        if (isnan(v) || (largest ? v > m : v < m)) m = v;
    }
    return m;
}

/* Two passes: the mean, then the squared deviations from it. The second sum
 * of plain deviations corrects the rounding error of the mean (the
 * "corrected two-pass" algorithm), so values far from zero lose nothing. */
static double line_var(const line *l, double correction) {
    if (l->n == 0) return NAN;
    double n = (double)l->n;
    double mean = line_sum(l) / n;
    ref_ksum sq = {0, 0}, dev = {0, 0};
    for (int64_t j = 0; j < l->n; j++) {
        double d = line_load(l, j) - mean;
        ref_ksum_add(&sq, d * d);
        ref_ksum_add(&dev, d);
    }
    double dsum = ref_ksum_value(&dev);
    double m2 = ref_ksum_value(&sq) - dsum * dsum / n;
    if (m2 < 0) m2 = 0; /* rounding only: the exact value is >= 0 */
    double divisor = n - correction;
    if (divisor < 0) divisor = 0;
    return m2 / divisor; /* divisor 0: inf, or NaN when m2 is 0, as PyTorch */
}

/* log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the max, so no term
 * overflows and the largest term is exactly 1. */
static double line_logsumexp(const line *l) {
    if (l->n == 0) return -INFINITY;
    double m = line_extreme(l, true);
    if (isnan(m) || isinf(m)) return m; /* +inf wins; all -inf gives -inf */
    ref_ksum k = {0, 0};
    for (int64_t j = 0; j < l->n; j++) ref_ksum_add(&k, exp(line_load(l, j) - m));
    return m + log(ref_ksum_value(&k));
}

static double reduce_float(uint32_t op, const line *l, double correction) {
    switch (op) {
    case GFP_OP_SUM: return line_sum(l);
    case GFP_OP_MEAN: return l->n == 0 ? NAN : line_sum(l) / (double)l->n;
    case GFP_OP_PROD: {
        double p = 1;
        for (int64_t j = 0; j < l->n; j++) p *= line_load(l, j);
        return p;
    }
    case GFP_OP_AMAX: return line_extreme(l, true);
    case GFP_OP_AMIN: return line_extreme(l, false);
    case GFP_OP_VAR: return line_var(l, correction);
    default: return line_logsumexp(l); /* GFP_OP_LOGSUMEXP */
    }
}

/* Integer sums and products wrap modulo 2^64 (unsigned arithmetic, so no
 * undefined overflow); the store narrows to the output dtype. Bool values
 * load as 0/1, so their max / min are any / all. */
static int64_t reduce_int(uint32_t op, const line *l) {
    switch (op) {
    case GFP_OP_SUM: {
        uint64_t s = 0;
        for (int64_t j = 0; j < l->n; j++) s += (uint64_t)line_load_i64(l, j);
        return (int64_t)s;
    }
    case GFP_OP_PROD: {
        uint64_t p = 1;
        for (int64_t j = 0; j < l->n; j++) p *= (uint64_t)line_load_i64(l, j);
        return (int64_t)p;
    }
    default: { /* GFP_OP_AMAX, GFP_OP_AMIN; n >= 1 */
        int64_t m = line_load_i64(l, 0);
        for (int64_t j = 1; j < l->n; j++) {
            int64_t v = line_load_i64(l, j);
            if (op == GFP_OP_AMAX ? v > m : v < m) m = v;
        }
        return m;
    }
    }
}

/* Position along the reduced dim of the first extreme element; the first NaN
 * counts as the extreme. n >= 1. */
static int64_t arg_extreme(const line *l, bool largest, bool is_float) {
    int64_t best = 0;
    if (is_float) {
        double m = line_load(l, 0);
        for (int64_t j = 1; j < l->n && !isnan(m); j++) {
            double v = line_load(l, j);
            if (isnan(v) || (largest ? v > m : v < m)) {
                m = v;
                best = j;
            }
        }
    } else {
        int64_t m = line_load_i64(l, 0);
        for (int64_t j = 1; j < l->n; j++) {
            int64_t v = line_load_i64(l, j);
            if (largest ? v > m : v < m) {
                m = v;
                best = j;
            }
        }
    }
    return best;
}

/* Complex SUM / MEAN / PROD in double complex; sums compensate each part. */
static double complex reduce_complex(uint32_t op, const line *l) {
    if (op == GFP_OP_PROD) {
        double complex p = 1.0;
        for (int64_t j = 0; j < l->n; j++) p *= ref_load_c(l->x, line_offset(l, j));
        return p;
    }
    if (op == GFP_OP_MEAN && l->n == 0) return CMPLX(NAN, NAN);
    ref_ksum re = {0, 0}, im = {0, 0};
    for (int64_t j = 0; j < l->n; j++) {
        double complex v = ref_load_c(l->x, line_offset(l, j));
        ref_ksum_add(&re, creal(v));
        ref_ksum_add(&im, cimag(v));
    }
    double complex s = CMPLX(ref_ksum_value(&re), ref_ksum_value(&im));
    return op == GFP_OP_MEAN ? s / (double)l->n : s;
}

/* ------------------------------------------------------------------ launch */
gfp_status ref_reduce_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    bool by_dim = pk_reduce_by_dim(op);
    const gfp_reduce_params *p = params;
    const gfp_tensor *x = in[0], *y = out[0], *indices = by_dim ? out[1] : NULL;
    bool cx = ref_is_complex(x->dtype);
    if (cx && !complex_ok(op, x->dtype, y->dtype))
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: the reference plugin takes complex dtypes for "
                       "sum, mean and prod only, with the input's dtype as output (got %s in, "
                       "%s out)", pk_op_name(op), pk_dtype_name(x->dtype), pk_dtype_name(y->dtype));
    gfp_status st = pk_check_reduce(op, params, x, y, indices,
                                    REDUCE_DTYPES | (cx ? PK_DT_COMPLEX : 0u),
                                    REF_DT_FLOAT | (cx ? PK_DT_COMPLEX : 0u));
    if (st != GFP_OK) return st;

    line l = {.x = x, .n = 1};
    for (int d = 0; d < x->rank; d++) {
        l.sizes[d] = (p->dims >> d) & 1u ? x->sizes[d] : 1;
        l.n *= l.sizes[d];
    }
    if (pk_numel(y) == 0) return GFP_OK;

    bool is_float = ref_is_float(x->dtype);
    int64_t idx[GFP_MAX_RANK] = {0}; /* output index; 0 in reduced dims */
    do {
        l.base = ref_offset(x, idx);
        int64_t yoff = ref_offset(y, idx);
        if (cx) {
            ref_store_c(y, yoff, reduce_complex(op, &l));
        } else if (by_dim) {
            int64_t at = arg_extreme(&l, op == GFP_OP_MAX_DIM, is_float);
            /* Copy the winner itself: exact for every dtype, NaN included. */
            if (is_float)
                ref_store(y, yoff, line_load(&l, at));
            else
                ref_store_i64(y, yoff, line_load_i64(&l, at));
            ref_store_i64(indices, ref_offset(indices, idx), at);
        } else if (is_float) {
            ref_store(y, yoff, reduce_float(op, &l, p->correction));
        } else {
            ref_store_i64(y, yoff, reduce_int(op, &l));
        }
    } while (ref_next_index(idx, y->sizes, y->rank));
    return GFP_OK;
}
