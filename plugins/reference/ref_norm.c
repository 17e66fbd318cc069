/* ref_norm.c — SOFTMAX, LOG_SOFTMAX, LAYER_NORM, BATCH_NORM and
 * BATCH_NORM_BACKWARD (f32, f64).
 *
 * Everything is computed in double and rounded once on store. Softmax
 * subtracts the max of each line first, so exp never overflows; the
 * normalisations use the corrected two-pass variance (the mean, then the
 * squared deviations from it), so data far from zero keeps its precision. */
#include <math.h>
#include <stddef.h>

#include "ref_internal.h"

static uint32_t want_inputs(uint32_t op) {
    return op == GFP_OP_LAYER_NORM ? 3 : op == GFP_OP_BATCH_NORM ? 5 : 1;
}
static uint32_t want_outputs(uint32_t op) {
    return op == GFP_OP_LAYER_NORM || op == GFP_OP_BATCH_NORM ? 3 : 1;
}

/* Every tensor present is f32, or every one is f64; -1 marks an absent
 * optional input (only inputs after the first may be absent). */
static bool dtypes_ok(const int32_t *in, uint32_t n_in, const int32_t *out, uint32_t n_out) {
    int32_t dt = in[0];
    if (dt != GFP_F32 && dt != GFP_F64) return false;
    for (uint32_t i = 1; i < n_in; i++)
        if (in[i] != -1 && in[i] != dt) return false;
    for (uint32_t i = 0; i < n_out; i++)
        if (out[i] != dt) return false;
    return true;
}

static uint32_t batch_norm_backward_support(const gfp_op_query *q);

uint32_t ref_norm_support(const gfp_op_query *q) {
    if (q->op == GFP_OP_BATCH_NORM_BACKWARD) return batch_norm_backward_support(q);
    if (!GFP_HAS_FIELD(q->struct_size, gfp_op_query, output_dtypes) || !(gfp_op_family_of(q->op) == GFP_FAMILY_NORM) ||
        q->n_inputs != want_inputs(q->op) || q->n_outputs != want_outputs(q->op))
        return GFP_SUPPORT_NONE;
    return dtypes_ok(q->input_dtypes, q->n_inputs, q->output_dtypes, q->n_outputs)
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* Descriptors were validated by the router (ref_plugin.c: rank, sizes,
 * strides, buffer bounds); only presence is left to check here. */
static gfp_status require(const gfp_tensor *t, bool optional, const char *op, const char *role) {
    if (t || optional) return GFP_OK;
    return pk_fail(GFP_ERR_INVALID, "%s: the %s tensor is missing (NULL)", op, role);
}

/* Checks every tensor of the launch and their dtypes. roles name the inputs
 * then the outputs; optional[i] marks inputs that may be NULL. */
static gfp_status check_all(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                            const gfp_tensor *const *out, uint32_t n_out, const char *const *roles,
                            const bool *optional) {
    const char *name = pk_op_name(op);
    int32_t in_dt[8], out_dt[4];
    for (uint32_t i = 0; i < n_in; i++) {
        gfp_status st = require(in[i], optional[i], name, roles[i]);
        if (st != GFP_OK) return st;
        in_dt[i] = in[i] ? in[i]->dtype : -1;
    }
    for (uint32_t i = 0; i < n_out; i++) {
        gfp_status st = require(out[i], false, name, roles[n_in + i]);
        if (st != GFP_OK) return st;
        out_dt[i] = out[i]->dtype;
    }
    if (dtypes_ok(in_dt, n_in, out_dt, n_out)) return GFP_OK;
    /* Name the first tensor that breaks the rule. */
    uint32_t bad = 0;
    if (in_dt[0] == GFP_F32 || in_dt[0] == GFP_F64) {
        for (bad = 1; bad < n_in + n_out; bad++) {
            int32_t dt = bad < n_in ? in_dt[bad] : out_dt[bad - n_in];
            if (dt != -1 && dt != in_dt[0]) break;
        }
    }
    int32_t bad_dt = bad < n_in ? in_dt[bad] : out_dt[bad - n_in];
    return pk_fail(GFP_ERR_UNSUPPORTED,
                    "%s: the reference plugin takes f32 or f64, every tensor alike; "
                    "%s is %s (%s is %s)",
                    name, roles[bad], pk_dtype_name(bad_dt), roles[0], pk_dtype_name(in_dt[0]));
}

/* True when t has rank `rank` and sizes[0, rank). */
static bool has_sizes(const gfp_tensor *t, int rank, const int64_t *sizes) {
    if (t->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if (t->sizes[d] != sizes[d]) return false;
    return true;
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
    const char *name = pk_op_name(op);
    gfp_status st = pk_check_params(params, GFP_DIM_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    static const char *const roles[] = {"input", "output"};
    static const bool optional[] = {false};
    if ((st = check_all(op, in, 1, out, 1, roles, optional)) != GFP_OK) return st;
    const gfp_tensor *x = in[0], *y = out[0];
    int dim = ((const gfp_dim_params *)params)->dim;
    /* A 0-dim tensor is one line of one element along dim 0. */
    int max_dim = x->rank > 0 ? x->rank : 1;
    if (dim < 0 || dim >= max_dim)
        return pk_fail(GFP_ERR_INVALID, "%s: dim %d is out of range for a tensor of rank %d", name,
                        dim, (int)x->rank);
    if (!pk_same_shape(x, y))
        return pk_fail(GFP_ERR_INVALID, "%s: the output must have the input's shape", name);
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

/* ------------------------------------------------------------------ layer norm */
static gfp_status layer_norm_launch(const gfp_tensor *const *in, const gfp_tensor *const *out,
                                    const void *params) {
    gfp_status st = pk_check_params(params, GFP_LAYER_NORM_PARAMS_SIZE_V1_0, "layer_norm");
    if (st != GFP_OK) return st;
    static const char *const roles[] = {"x", "weight", "bias", "y", "mean", "rstd"};
    static const bool optional[] = {false, true, true};
    if ((st = check_all(GFP_OP_LAYER_NORM, in, 3, out, 3, roles, optional)) != GFP_OK) return st;
    const gfp_layer_norm_params *p = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *y = out[0], *mean = out[1],
                     *rstd = out[2];
    int nr = p->normalized_rank, outer_rank = x->rank - nr;
    if (nr < 1 || nr > x->rank)
        return pk_fail(GFP_ERR_INVALID,
                        "layer_norm: normalized_rank %d must be in [1, %d] (the rank of x)", nr,
                        (int)x->rank);
    const int64_t *inner = x->sizes + outer_rank;
    if (!pk_same_shape(x, y))
        return pk_fail(GFP_ERR_INVALID, "layer_norm: y must have x's shape");
    if ((w && !has_sizes(w, nr, inner)) || (b && !has_sizes(b, nr, inner)))
        return pk_fail(GFP_ERR_INVALID,
                        "layer_norm: weight and bias must have the shape of x's last %d "
                        "dim(s)",
                        nr);
    if (!has_sizes(mean, outer_rank, x->sizes) || !has_sizes(rstd, outer_rank, x->sizes))
        return pk_fail(GFP_ERR_INVALID,
                        "layer_norm: mean and rstd must have the shape of x's first %d "
                        "dim(s)",
                        outer_rank);
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
    gfp_status st = pk_check_params(params, GFP_BATCH_NORM_PARAMS_SIZE_V1_0, "batch_norm");
    if (st != GFP_OK) return st;
    static const char *const roles[] = {"x",           "weight", "bias",      "running_mean",
                                        "running_var", "y",      "save_mean", "save_invstd"};
    static const bool optional[] = {false, true, true, true, true};
    if ((st = check_all(GFP_OP_BATCH_NORM, in, 5, out, 3, roles, optional)) != GFP_OK) return st;
    const gfp_batch_norm_params *p = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *rmean = in[3], *rvar = in[4];
    const gfp_tensor *y = out[0], *save_mean = out[1], *save_invstd = out[2];
    if (x->rank < 2)
        return pk_fail(GFP_ERR_INVALID,
                        "batch_norm: x has rank %d; it must be [N, C, ...] (rank >= 2)",
                        (int)x->rank);
    if (p->training > 1)
        return pk_fail(GFP_ERR_INVALID, "batch_norm: training is %u; it must be 0 or 1",
                        (unsigned)p->training);
    if (!p->training && (!rmean || !rvar))
        return pk_fail(GFP_ERR_INVALID,
                        "batch_norm: evaluation mode (training = 0) needs running_mean "
                        "and running_var");
    if (!pk_same_shape(x, y))
        return pk_fail(GFP_ERR_INVALID, "batch_norm: y must have x's shape");
    const int64_t *chans = &x->sizes[1];
    const gfp_tensor *per_channel[] = {w, b, rmean, rvar, save_mean, save_invstd};
    static const char *const per_channel_role[] = {"weight",      "bias",      "running_mean",
                                                   "running_var", "save_mean", "save_invstd"};
    for (int i = 0; i < 6; i++)
        if (per_channel[i] && !has_sizes(per_channel[i], 1, chans))
            return pk_fail(GFP_ERR_INVALID, "batch_norm: %s must be 1-D with C = %lld elements",
                            per_channel_role[i], (long long)*chans);

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
 * the oracle of the fast kernels and of the core's composed formula. */
static uint32_t batch_norm_backward_support(const gfp_op_query *q) {
    if (!GFP_HAS_FIELD(q->struct_size, gfp_op_query, output_dtypes) ||
        q->op != GFP_OP_BATCH_NORM_BACKWARD || q->n_inputs != 5 || q->n_outputs != 3)
        return GFP_SUPPORT_NONE;
    int32_t dt = q->input_dtypes[0];
    if (dt != GFP_F32 && dt != GFP_F64) return GFP_SUPPORT_NONE;
    for (uint32_t i = 1; i < 5; i++)
        if (q->input_dtypes[i] != dt && !(i == 4 && q->input_dtypes[i] == -1))
            return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < 3; i++)
        if (q->output_dtypes[i] != dt) return GFP_SUPPORT_NONE;
    return GFP_SUPPORT_STRIDED;
}

static gfp_status batch_norm_backward_launch(const gfp_tensor *const *in, uint32_t n_in,
                                             const gfp_tensor *const *out, uint32_t n_out) {
    gfp_status st = pk_expect_counts(n_in, 5, n_out, 3, "batch_norm_backward");
    if (st != GFP_OK) return st;
    static const char *const roles[] = {"grad_y",      "x",      "save_mean",   "save_invstd",
                                        "weight",      "grad_x", "grad_weight", "grad_bias"};
    const gfp_tensor *t[8] = {in[0], in[1], in[2], in[3], in[4], out[0], out[1], out[2]};
    for (int i = 0; i < 8; i++)
        if (!t[i] && i != 4)
            return pk_fail(GFP_ERR_INVALID, "%s: the %s tensor is missing (NULL)", "batch_norm_backward",
                            roles[i]);
    int32_t dt = t[0]->dtype;
    if (dt != GFP_F32 && dt != GFP_F64)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: grad_y is %s; the reference takes f32 or f64",
                        "batch_norm_backward", pk_dtype_name(dt));
    for (int i = 1; i < 8; i++)
        if (t[i] && t[i]->dtype != dt)
            return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %s is %s but grad_y is %s; every tensor "
                            "must have one dtype", "batch_norm_backward", roles[i], pk_dtype_name(t[i]->dtype),
                            pk_dtype_name(dt));
    const gfp_tensor *g = t[0], *x = t[1], *mean = t[2], *invstd = t[3], *w = t[4];
    const gfp_tensor *gx = t[5], *gw = t[6], *gb = t[7];
    if (x->rank < 2)
        return pk_fail(GFP_ERR_INVALID, "%s: x has rank %d; it must be [N, C, ...] (rank >= 2)",
                        "batch_norm_backward", (int)x->rank);
    if (!pk_same_shape(x, g) || !pk_same_shape(x, gx))
        return pk_fail(GFP_ERR_INVALID, "%s: grad_y and grad_x must have x's shape", "batch_norm_backward");
    int64_t ch = x->sizes[1];
    const gfp_tensor *per[5] = {w, mean, invstd, gw, gb};
    static const char *const per_role[] = {"weight", "save_mean", "save_invstd", "grad_weight",
                                           "grad_bias"};
    for (int i = 0; i < 5; i++)
        if (per[i] && !has_sizes(per[i], 1, &x->sizes[1]))
            return pk_fail(GFP_ERR_INVALID, "%s: %s must be 1-D with C = %lld elements", "batch_norm_backward",
                            per_role[i], (long long)ch);
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

gfp_status ref_norm_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (!(gfp_op_family_of(op) == GFP_FAMILY_NORM))
        return pk_fail(GFP_ERR_INTERNAL, "norm: op %u is not a normalisation", (unsigned)op);
    if (op == GFP_OP_BATCH_NORM_BACKWARD) return batch_norm_backward_launch(in, n_in, out, n_out);
    gfp_status st = pk_expect_counts(n_in, want_inputs(op), n_out, want_outputs(op), pk_op_name(op));
    if (st != GFP_OK) return st;
    switch (op) {
    case GFP_OP_LAYER_NORM: return layer_norm_launch(in, out, params);
    case GFP_OP_BATCH_NORM: return batch_norm_launch(in, out, params);
    default: return softmax_launch(op, in, out, params);
    }
}
