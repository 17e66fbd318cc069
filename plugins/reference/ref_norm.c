/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_norm.c — SOFTMAX, LOG_SOFTMAX, LAYER_NORM, BATCH_NORM and the
 * backward kernels BATCH_NORM_BACKWARD, LAYER_NORM_BACKWARD,
 * SOFTMAX_BACKWARD, LOG_SOFTMAX_BACKWARD (float dtypes).
 *
 * Everything is computed in double and rounded once on store. Softmax
 * subtracts the max of each line first, so exp never overflows; the
 * normalisations use the corrected two-pass variance (the mean, then the
 * squared deviations from it), so data far from zero keeps its precision. */
#include <math.h>
#include <stddef.h>

#include "ref_internal.h"

static uint32_t batch_norm_backward_support(const gfp_op_query *q);

uint32_t ref_norm_support(const gfp_op_query *q) {
    if (q->op == GFP_OP_BATCH_NORM_BACKWARD || q->op == GFP_OP_LAYER_NORM_BACKWARD)
        return batch_norm_backward_support(q);
    if (q->op == GFP_OP_SOFTMAX_BACKWARD || q->op == GFP_OP_LOG_SOFTMAX_BACKWARD)
        return q->n_inputs == 2 && q->n_outputs == 1 && ref_is_float(q->input_dtypes[0]) &&
                       q->input_dtypes[1] == q->input_dtypes[0] &&
                       q->output_dtypes[0] == q->input_dtypes[0]
                   ? GFP_SUPPORT_STRIDED
                   : GFP_SUPPORT_NONE;
    return pk_norm_dtypes_ok(q->op, q->input_dtypes, q->n_inputs, q->output_dtypes, q->n_outputs,
                             REF_DT_FLOAT)
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* A view of t: its dims [first, first + rank), starting elem_offset elements
 * after t's element 0. The group of elements a statistic covers. */
static gfp_tensor subview(const gfp_tensor *t, int64_t elem_offset, int first, int rank) {
    gfp_tensor v = *t;
    v.offset = t->offset + (uint64_t)elem_offset * pk_dtype_size(t->dtype);
    v.rank = rank;
    for (int d = 0; d < rank; d++) {
        v.sizes[d] = t->sizes[first + d];
        v.strides[d] = t->strides[first + d];
    }
    return v;
}

/* Mean and sum of squared deviations (m2) of all elements of v. n = 0 gives
 * a NaN mean. */
typedef struct moments {
    double n, mean, m2;
} moments;

static moments moments_of(const gfp_tensor *v) {
    moments r = {(double)pk_numel(v), NAN, NAN};
    if (r.n == 0) return r;
    int64_t idx[GFP_MAX_RANK] = {0};
    ref_ksum sum = {0, 0};
    do ref_ksum_add(&sum, ref_load(v, ref_offset(v, idx)));
    while (ref_next_index(idx, v->sizes, v->rank));
    r.mean = ref_ksum_value(&sum) / r.n;
    /* The second pass also sums the plain deviations, which are 0 up to the
     * rounding error of the mean: subtracting their square corrects it. */
    ref_ksum sq = {0, 0}, dev = {0, 0};
    do {
        double d = ref_load(v, ref_offset(v, idx)) - r.mean;
        ref_ksum_add(&sq, d * d);
        ref_ksum_add(&dev, d);
    } while (ref_next_index(idx, v->sizes, v->rank));
    double dsum = ref_ksum_value(&dev);
    r.m2 = ref_ksum_value(&sq) - dsum * dsum / r.n;
    if (r.m2 < 0) r.m2 = 0; /* rounding only: the exact value is >= 0 */
    return r;
}

/* ------------------------------------------------------------------ softmax */
static gfp_status softmax_launch(uint32_t op, const gfp_tensor *const *in,
                                 const gfp_tensor *const *out, const void *params) {
    const gfp_tensor *x = in[0], *y = out[0];
    int dim = ((const gfp_dim_params *)params)->dim; /* a 0-dim x: one line of one */
    if (pk_numel(x) == 0) return GFP_OK;

    int64_t len = x->rank > 0 ? x->sizes[dim] : 1;
    int64_t xs = x->rank > 0 ? x->strides[dim] : 0, ys = y->rank > 0 ? y->strides[dim] : 0;
    int64_t lines[GFP_MAX_RANK]; /* x's sizes with 1 in dim: one index per line */
    for (int d = 0; d < x->rank; d++) lines[d] = d == dim ? 1 : x->sizes[d];
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        int64_t x0 = ref_offset(x, idx), y0 = ref_offset(y, idx);
        double m = ref_load(x, x0); /* the max; a NaN stays (the line is all NaN) */
        for (int64_t i = 1; i < len && !isnan(m); i++) {
            double v = ref_load(x, x0 + i * xs);
            if (isnan(v) || v > m) m = v;
        }
        double s = 0; /* positive terms: a plain double sum loses nothing that matters */
        for (int64_t i = 0; i < len; i++) s += exp(ref_load(x, x0 + i * xs) - m);
        double log_s = log(s);
        /* Each x is read before y at the same position is written, so an
         * exactly aliased output is fine. */
        for (int64_t i = 0; i < len; i++) {
            double z = ref_load(x, x0 + i * xs) - m;
            ref_store(y, y0 + i * ys, op == GFP_OP_LOG_SOFTMAX ? z - log_s : exp(z) / s);
        }
    } while (ref_next_index(idx, lines, x->rank));
    return GFP_OK;
}

/* SOFTMAX_BACKWARD and LOG_SOFTMAX_BACKWARD as graft_ops.def defines them,
 * per line in double (the sum compensated). */
static gfp_status softmax_backward_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                          const gfp_tensor *const *out, uint32_t n_out,
                                          const void *params) {
    gfp_status st = pk_check_softmax_backward(op, in, n_in, out, n_out, params, REF_DT_FLOAT);
    if (st != GFP_OK) return st;
    const gfp_tensor *g = in[0], *y = in[1], *gx = out[0];
    int dim = ((const gfp_dim_params *)params)->dim;
    if (pk_numel(y) == 0) return GFP_OK;
    int64_t len = y->rank > 0 ? y->sizes[dim] : 1;
    int64_t gs = g->rank > 0 ? g->strides[dim] : 0, ys = y->rank > 0 ? y->strides[dim] : 0;
    int64_t os = gx->rank > 0 ? gx->strides[dim] : 0;
    int64_t lines[GFP_MAX_RANK];
    for (int d = 0; d < y->rank; d++) lines[d] = d == dim ? 1 : y->sizes[d];
    bool soft = op == GFP_OP_SOFTMAX_BACKWARD;
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        int64_t g0 = ref_offset(g, idx), y0 = ref_offset(y, idx), o0 = ref_offset(gx, idx);
        ref_ksum s = {0, 0};
        for (int64_t i = 0; i < len; i++) {
            double gi = ref_load(g, g0 + i * gs);
            ref_ksum_add(&s, soft ? gi * ref_load(y, y0 + i * ys) : gi);
        }
        double sum = ref_ksum_value(&s);
        /* grad_y and y at a position are read before grad_x there is
         * written: an exactly aliased output is fine. */
        for (int64_t i = 0; i < len; i++) {
            double gi = ref_load(g, g0 + i * gs), yi = ref_load(y, y0 + i * ys);
            ref_store(gx, o0 + i * os, soft ? yi * (gi - sum) : gi - exp(yi) * sum);
        }
    } while (ref_next_index(idx, lines, y->rank));
    return GFP_OK;
}

/* ------------------------------------------------------------------ layer norm */
static gfp_status layer_norm_launch(const gfp_tensor *const *in, const gfp_tensor *const *out,
                                    const void *params) {
    const gfp_layer_norm_params *p = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *y = out[0], *mean = out[1],
                     *rstd = out[2];
    int nr = p->normalized_rank, outer_rank = x->rank - nr;
    const int64_t *inner = x->sizes + outer_rank;
    int64_t outer_count = 1;
    for (int d = 0; d < outer_rank; d++) outer_count *= x->sizes[d];
    if (outer_count == 0) return GFP_OK;

    int64_t oidx[GFP_MAX_RANK] = {0};
    do {
        gfp_tensor xv = subview(x, ref_offset(x, oidx), outer_rank, nr);
        gfp_tensor yv = subview(y, ref_offset(y, oidx), outer_rank, nr);
        moments mo = moments_of(&xv);
        double r = 1.0 / sqrt(mo.m2 / mo.n + p->eps); /* biased variance */
        ref_store(mean, ref_offset(mean, oidx), mo.mean);
        ref_store(rstd, ref_offset(rstd, oidx), r);
        if (mo.n == 0) continue;
        int64_t idx[GFP_MAX_RANK] = {0}; /* weight and bias are indexed like the group */
        do {
            double v = (ref_load(&xv, ref_offset(&xv, idx)) - mo.mean) * r;
            if (w) v *= ref_load(w, ref_offset(w, idx));
            if (b) v += ref_load(b, ref_offset(b, idx));
            ref_store(&yv, ref_offset(&yv, idx), v);
        } while (ref_next_index(idx, inner, nr));
    } while (ref_next_index(oidx, x->sizes, outer_rank));
    return GFP_OK;
}

/* ------------------------------------------------------------------ batch norm */
/* Element c of a 1-D tensor. */
static double load_c(const gfp_tensor *t, int64_t c) { return ref_load(t, c * t->strides[0]); }
static void store_c(const gfp_tensor *t, int64_t c, double v) {
    ref_store(t, c * t->strides[0], v);
}

static gfp_status batch_norm_launch(const gfp_tensor *const *in, const gfp_tensor *const *out,
                                    const void *params) {
    const gfp_batch_norm_params *p = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *rmean = in[3], *rvar = in[4];
    const gfp_tensor *y = out[0], *save_mean = out[1], *save_invstd = out[2];
    const int64_t *chans = &x->sizes[1];
    for (int64_t c = 0; c < *chans; c++) {
        /* Channel c of x and y: every dim but 1, with dim 1 pinned to c. */
        gfp_tensor xv = subview(x, c * x->strides[1], 0, x->rank);
        gfp_tensor yv = subview(y, c * y->strides[1], 0, y->rank);
        xv.sizes[1] = yv.sizes[1] = 1;
        double mean, invstd;
        if (p->training) {
            moments mo = moments_of(&xv);
            mean = mo.mean;
            invstd = 1.0 / sqrt(mo.m2 / mo.n + p->eps); /* biased variance normalises */
            /* Without elements there are no statistics to fold into the
             * running ones (as PyTorch, which leaves them unchanged). */
            if (mo.n > 0 && rmean)
                store_c(rmean, c, (1 - p->momentum) * load_c(rmean, c) + p->momentum * mean);
            if (mo.n > 0 && rvar) {
                double unbiased = mo.m2 / (mo.n - 1); /* n = 1: NaN, as PyTorch */
                store_c(rvar, c, (1 - p->momentum) * load_c(rvar, c) + p->momentum * unbiased);
            }
        } else {
            mean = load_c(rmean, c);
            invstd = 1.0 / sqrt(load_c(rvar, c) + p->eps);
        }
        store_c(save_mean, c, mean);
        store_c(save_invstd, c, invstd);
        double scale = w ? load_c(w, c) : 1.0, shift = b ? load_c(b, c) : 0.0;
        if (pk_numel(&xv) == 0) continue;
        int64_t idx[GFP_MAX_RANK] = {0};
        do {
            double v = (ref_load(&xv, ref_offset(&xv, idx)) - mean) * invstd * scale + shift;
            ref_store(&yv, ref_offset(&yv, idx), v);
        } while (ref_next_index(idx, xv.sizes, xv.rank));
    }
    return GFP_OK;
}

/* --------------------------------------------------------- batch norm backward */
/* BATCH_NORM_BACKWARD: the gradients of batch norm in training mode, as
 * graft_ops.def defines them, in double with compensated per-channel sums:
 * the oracle of the fast kernels and of the core's composed formula.
 * LAYER_NORM_BACKWARD (below) takes the same five inputs and three outputs
 * of one dtype, so one support rule serves both. */
static uint32_t batch_norm_backward_support(const gfp_op_query *q) {
    if (!GFP_HAS_FIELD(q->struct_size, gfp_op_query, output_dtypes) ||
        (q->op != GFP_OP_BATCH_NORM_BACKWARD && q->op != GFP_OP_LAYER_NORM_BACKWARD) ||
        q->n_inputs != 5 || q->n_outputs != 3)
        return GFP_SUPPORT_NONE;
    int32_t dt = q->input_dtypes[0];
    if (!ref_is_float(dt)) return GFP_SUPPORT_NONE;
    for (uint32_t i = 1; i < 5; i++)
        if (q->input_dtypes[i] != dt && !(i == 4 && q->input_dtypes[i] == -1))
            return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < 3; i++)
        if (q->output_dtypes[i] != dt) return GFP_SUPPORT_NONE;
    return GFP_SUPPORT_STRIDED;
}

static gfp_status batch_norm_backward_launch(const gfp_tensor *const *in, uint32_t n_in,
                                             const gfp_tensor *const *out, uint32_t n_out) {
    gfp_status st = pk_check_norm_backward(GFP_OP_BATCH_NORM_BACKWARD, in, n_in, out, n_out, NULL,
                                           REF_DT_FLOAT);
    if (st != GFP_OK) return st;
    const gfp_tensor *t[8] = {in[0], in[1], in[2], in[3], in[4], out[0], out[1], out[2]};
    const gfp_tensor *g = t[0], *x = t[1], *mean = t[2], *invstd = t[3], *w = t[4];
    const gfp_tensor *gx = t[5], *gw = t[6], *gb = t[7];
    int64_t ch = x->sizes[1];
    int64_t count = ch ? pk_numel(x) / ch : 0;
    for (int64_t c = 0; c < ch; c++) {
        /* Channel c: every dim, with dim 1 pinned to c. */
        gfp_tensor gv = subview(g, c * g->strides[1], 0, g->rank);
        gfp_tensor xv = subview(x, c * x->strides[1], 0, x->rank);
        gfp_tensor gxv = subview(gx, c * gx->strides[1], 0, gx->rank);
        gv.sizes[1] = xv.sizes[1] = gxv.sizes[1] = 1;
        double m = load_c(mean, c), rs = load_c(invstd, c), wc = w ? load_c(w, c) : 1.0;
        ref_ksum sg = {0, 0}, sgx = {0, 0};
        int64_t idx[GFP_MAX_RANK] = {0};
        if (count > 0) {
            do {
                double gi = ref_load(&gv, ref_offset(&gv, idx));
                ref_ksum_add(&sg, gi);
                ref_ksum_add(&sgx, gi * (ref_load(&xv, ref_offset(&xv, idx)) - m) * rs);
            } while (ref_next_index(idx, xv.sizes, xv.rank));
        }
        double db = ref_ksum_value(&sg), dw = ref_ksum_value(&sgx);
        store_c(gb, c, db);
        store_c(gw, c, dw);
        if (count == 0) continue;
        double mg = db / (double)count, mgx = dw / (double)count;
        for (int d = 0; d < GFP_MAX_RANK; d++) idx[d] = 0;
        do {
            double gi = ref_load(&gv, ref_offset(&gv, idx));
            double xhat = (ref_load(&xv, ref_offset(&xv, idx)) - m) * rs;
            ref_store(&gxv, ref_offset(&gxv, idx), wc * rs * (gi - mg - xhat * mgx));
        } while (ref_next_index(idx, xv.sizes, xv.rank));
    }
    return GFP_OK;
}

/* --------------------------------------------------------- layer norm backward */
/* LAYER_NORM_BACKWARD as graft_ops.def defines it, in double with
 * compensated sums: per row the two means of grad_x, per normalised
 * element the two sums over the rows. */
static gfp_status layer_norm_backward_launch(const gfp_tensor *const *in, uint32_t n_in,
                                             const gfp_tensor *const *out, uint32_t n_out,
                                             const void *params) {
    gfp_status st = pk_check_norm_backward(GFP_OP_LAYER_NORM_BACKWARD, in, n_in, out, n_out,
                                           params, REF_DT_FLOAT);
    if (st != GFP_OK) return st;
    const gfp_tensor *g = in[0], *x = in[1], *mean = in[2], *rstd = in[3], *w = in[4];
    const gfp_tensor *gx = out[0], *gw = out[1], *gb = out[2];
    int nr = ((const gfp_layer_norm_params *)params)->normalized_rank;
    int outer = x->rank - nr;
    const int64_t *inner = x->sizes + outer;
    int64_t n_inner = 1, oidx[GFP_MAX_RANK] = {0}, idx[GFP_MAX_RANK] = {0};
    for (int d = 0; d < nr; d++) n_inner *= inner[d];
    if (n_inner == 0) return GFP_OK;
    bool rows = pk_numel(mean) > 0;
    /* grad_weight and grad_bias: per normalised element, over the rows. */
    do {
        ref_ksum sg = {0, 0}, sgx = {0, 0};
        if (rows) {
            for (int d = 0; d < GFP_MAX_RANK; d++) oidx[d] = 0;
            do {
                gfp_tensor gv = subview(g, ref_offset(g, oidx), outer, nr);
                gfp_tensor xv = subview(x, ref_offset(x, oidx), outer, nr);
                double gi = ref_load(&gv, ref_offset(&gv, idx));
                double xh = (ref_load(&xv, ref_offset(&xv, idx)) - ref_load(mean, ref_offset(mean, oidx))) *
                            ref_load(rstd, ref_offset(rstd, oidx));
                ref_ksum_add(&sg, gi);
                ref_ksum_add(&sgx, gi * xh);
            } while (ref_next_index(oidx, x->sizes, outer));
        }
        ref_store(gb, ref_offset(gb, idx), ref_ksum_value(&sg));
        ref_store(gw, ref_offset(gw, idx), ref_ksum_value(&sgx));
    } while (ref_next_index(idx, inner, nr));
    if (!rows) return GFP_OK;
    /* grad_x: per row. */
    for (int d = 0; d < GFP_MAX_RANK; d++) oidx[d] = 0;
    do {
        gfp_tensor gv = subview(g, ref_offset(g, oidx), outer, nr);
        gfp_tensor xv = subview(x, ref_offset(x, oidx), outer, nr);
        gfp_tensor ov = subview(gx, ref_offset(gx, oidx), outer, nr);
        double m = ref_load(mean, ref_offset(mean, oidx)), r = ref_load(rstd, ref_offset(rstd, oidx));
        ref_ksum sa = {0, 0}, sb = {0, 0};
        do {
            double gwi = ref_load(&gv, ref_offset(&gv, idx)) * (w ? ref_load(w, ref_offset(w, idx)) : 1.0);
            ref_ksum_add(&sa, gwi);
            ref_ksum_add(&sb, gwi * (ref_load(&xv, ref_offset(&xv, idx)) - m) * r);
        } while (ref_next_index(idx, inner, nr));
        double a = ref_ksum_value(&sa) / (double)n_inner, b = ref_ksum_value(&sb) / (double)n_inner;
        do {
            double gwi = ref_load(&gv, ref_offset(&gv, idx)) * (w ? ref_load(w, ref_offset(w, idx)) : 1.0);
            double xh = (ref_load(&xv, ref_offset(&xv, idx)) - m) * r;
            ref_store(&ov, ref_offset(&ov, idx), r * (gwi - a - xh * b));
        } while (ref_next_index(idx, inner, nr));
    } while (ref_next_index(oidx, x->sizes, outer));
    return GFP_OK;
}

gfp_status ref_norm_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (!(gfp_op_family_of(op) == GFP_FAMILY_NORM))
        return pk_fail(GFP_ERR_INTERNAL, "norm: op %u is not a normalisation", (unsigned)op);
    if (op == GFP_OP_BATCH_NORM_BACKWARD) return batch_norm_backward_launch(in, n_in, out, n_out);
    if (op == GFP_OP_LAYER_NORM_BACKWARD)
        return layer_norm_backward_launch(in, n_in, out, n_out, params);
    if (op == GFP_OP_SOFTMAX_BACKWARD || op == GFP_OP_LOG_SOFTMAX_BACKWARD)
        return softmax_backward_launch(op, in, n_in, out, n_out, params);
    /* Checked here for the three below. */
    gfp_status st = pk_check_norm(op, in, n_in, out, n_out, params, REF_DT_FLOAT);
    if (st != GFP_OK) return st;
    switch (op) {
    case GFP_OP_LAYER_NORM: return layer_norm_launch(in, out, params);
    case GFP_OP_BATCH_NORM: return batch_norm_launch(in, out, params);
    default: return softmax_launch(op, in, out, params);
    }
}
