/* SPDX-License-Identifier: BSD-3-Clause */
/* bw_reduce.c — backward formulas of the reductions (sum, mean, prod,
 * amax/amin, var, std, logsumexp, max_dim/min_dim); argmax/argmin and the
 * indices of max_dim/min_dim are integers and get none.
 *
 * Formulas use graft's public (differentiable) ops only, so create_graph
 * gives higher-order gradients. The output gradient g has the output's shape
 * (reduced dims dropped unless keepdim); every formula first views it in the
 * keepdim shape, where it broadcasts against the input. */
#include <math.h>
#include <string.h>

#include "ag_internal.h"

typedef struct reduce_ctx {
    gfp_op op;
    int rank; /* the input's */
    int64_t sizes[GF_MAX_RANK];
    uint32_t mask; /* reduced dims (unused for a 0-dim input) */
    bool keepdim;
    double correction; /* var, std */
    bool std;          /* op VAR: the output is sqrt(var) (StdBackward) */
} reduce_ctx;
GF_CTX_FITS(reduce_ctx);

/* The reduced dims as a list for the public reductions; 0 (every dim) for a
 * 0-dim input. */
static int reduced_dims(const reduce_ctx *c, int *dims) {
    int nd = 0;
    for (int d = 0; d < c->rank; d++)
        if (c->mask & (1u << d)) dims[nd++] = d;
    return nd;
}

/* Number of elements each output element reduces. */
static double reduced_count(const reduce_ctx *c) {
    double n = 1;
    for (int d = 0; d < c->rank; d++)
        if (c->mask & (1u << d)) n *= (double)c->sizes[d];
    return n;
}

/* t (an output-shaped tensor) in the keepdim shape: t itself when that is
 * already its shape, else a view in the open scope. */
static gf_tensor *keep_shape(const reduce_ctx *c, gf_tensor *t) {
    if (c->keepdim || c->rank == 0 || !t) return t;
    for (int d = 0; d < c->rank && t; d++)
        if (c->mask & (1u << d)) t = gf_unsqueeze(t, d);
    return t;
}

/* t (output-shaped) broadcast back to the input's shape: a new view. */
static gf_tensor *expand_back(const reduce_ctx *c, gf_tensor *t) {
    t = keep_shape(c, t);
    return t ? gf_expand(t, c->sizes, c->rank) : NULL;
}

static gf_tensor *scalar_like(const gf_tensor *t, double v) {
    return gf_scalar(v, gf_tensor_dtype(t), gf_tensor_device(t));
}

/* True when some element of x is 0 (reads the device). */
static gf_status has_zero(const gf_tensor *x, bool *out) {
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *z = gf_eq_scalar(x, 0.0);
    gf_tensor *n = z ? gf_sum(z, NULL, 0, false) : NULL;
    gf_grad_mode_set(prev);
    double v = 0;
    gf_status s = n ? gf_tensor_item(n, &v) : gf__status();
    *out = v != 0;
    return s;
}

/* d prod / d x_i = the product of the other elements of its slice. Without
 * zeros that is y / x_i. With zeros (Z = the zeros of a slice, A = the product
 * of its non-zeros), x_i != 0 still gives y / x_i (0, with the right
 * derivative through y), and a zero k gives A * prod(Z \ {k}): A when |Z| = 1,
 * A * (sum(Z) - x_k) when |Z| = 2 (value 0, derivative A towards the other
 * zero), 0 beyond. This is exact for |Z| <= 2 at every order and for any |Z|
 * up to second order, so gradgradcheck holds everywhere. */
static gf_tensor *prod_grad(const reduce_ctx *c, gf_tensor *g, gf_tensor *x, gf_tensor *y) {
    gf_tensor *gk = keep_shape(c, g), *yk = keep_shape(c, y);
    bool zeros = false;
    if (has_zero(x, &zeros) != GF_OK) return NULL;
    if (!zeros) return gf_mul(gk, gf_div(yk, x));
    int dims[GF_MAX_RANK];
    int nd = reduced_dims(c, dims);
    gf_tensor *one = scalar_like(x, 1.0), *zero = scalar_like(x, 0.0);
    gf_tensor *is_zero = gf_eq_scalar(x, 0.0);
    gf_tensor *x_safe = gf_where(is_zero, one, x);
    gf_tensor *a = gf_prod(x_safe, dims, nd, true);
    gf_tensor *nz = gf_sum(gf_to_dtype(is_zero, gf_tensor_dtype(x)), dims, nd, true);
    gf_tensor *zsum = gf_sum(gf_where(is_zero, x, zero), dims, nd, true);
    gf_tensor *others_zero = gf_where(gf_eq_scalar(nz, 1.0), one,
                                      gf_where(gf_eq_scalar(nz, 2.0), gf_sub(zsum, x), zero));
    gf_tensor *others = gf_where(is_zero, gf_mul(a, others_zero), gf_div(yk, x_safe));
    return gf_mul(gk, others);
}

/* The gradient goes evenly to every element equal to the result. */
static gf_tensor *amax_grad(const reduce_ctx *c, gf_tensor *g, gf_tensor *x, gf_tensor *y) {
    int dims[GF_MAX_RANK];
    int nd = reduced_dims(c, dims);
    gf_tensor *hit = gf_eq(x, keep_shape(c, y));
    gf_tensor *count = gf_sum(gf_to_dtype(hit, gf_tensor_dtype(g)), dims, nd, true);
    return gf_where(hit, gf_div(keep_shape(c, g), count), scalar_like(g, 0.0));
}

/* g * 2 (x - mean) / max(0, N - correction), the divisor of the forward. */
static gf_tensor *var_grad(const reduce_ctx *c, gf_tensor *g, gf_tensor *x) {
    int dims[GF_MAX_RANK];
    int nd = reduced_dims(c, dims);
    double dof = reduced_count(c) - c->correction;
    if (dof < 0) dof = 0;
    gf_tensor *centered = gf_sub(x, gf_mean(x, dims, nd, true));
    return gf_mul(gf_mul_scalar(keep_shape(c, g), 2.0 / dof), centered);
}

static gf_tensor *reduce_formula(const reduce_ctx *c, const char *name, gf_tensor *g,
                                 gf_tensor *x, gf_tensor *y) {
    switch (c->op) {
    case GFP_OP_SUM: return expand_back(c, g);
    case GFP_OP_MEAN: return expand_back(c, gf_div_scalar(g, reduced_count(c)));
    case GFP_OP_PROD: return prod_grad(c, g, x, y);
    case GFP_OP_AMAX:
    case GFP_OP_AMIN: return amax_grad(c, g, x, y);
    case GFP_OP_VAR:
        if (c->std) {
            /* d std / d var = 1 / (2 std), and 0 where std is 0 (PyTorch's
             * std_backward masks it), not inf: a constant slice gets 0. */
            gf_tensor *zero = gf_eq(y, scalar_like(y, 0.0));
            g = gf_where(zero, scalar_like(g, 0.0), gf_div(g, gf_mul_scalar(y, 2.0)));
        }
        return var_grad(c, g, x);
    case GFP_OP_LOGSUMEXP: return gf_mul(keep_shape(c, g), gf_exp(gf_sub(x, keep_shape(c, y))));
    default:
        gf__error(GF_ERR_UNSUPPORTED, "%s: backward not implemented", name);
        return NULL;
    }
}

gf_tensor *gf__ag_reduce_partial(gfp_op op, bool std, uint32_t mask, bool keepdim,
                                 double correction, gf_tensor *x, gf_tensor *y) {
    reduce_ctx c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.std = std;
    c.rank = x->rank;
    memcpy(c.sizes, x->sizes, sizeof c.sizes);
    c.mask = mask;
    c.keepdim = keepdim;
    c.correction = correction;
    gf_tensor *ones = gf_ones_like(y);
    return ones ? reduce_formula(&c, "reduce", ones, x, y) : NULL;
}

/* Saved: 0 = x, 1 = y (whichever the formula reads). */
static gf_status reduce_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const reduce_ctx *c = GF_NODE_CTX(n, reduce_ctx);
    gf_tensor *x = NULL, *y = NULL;
    gf_status s = gf__ag_unpack(n, 0, &x);
    if (s == GF_OK) s = gf__ag_unpack(n, 1, &y);
    if (s != GF_OK) {
        gf_tensor_release(x);
        return s;
    }
    gf_scope_begin();
    /* Complex (sum, mean, prod): g * conj(dy/dx) is the formula on the
     * conjugates (prod's derivative is a product with real coefficients). */
    gf_tensor *xc = x && gf_dtype_is_complex(x->dtype) ? gf__ret(gf__conj_if_complex(x)) : x;
    gf_tensor *yc = y && gf_dtype_is_complex(y->dtype) ? gf__ret(gf__conj_if_complex(y)) : y;
    gf_tensor *r = (x && !xc) || (y && !yc) ? NULL : reduce_formula(c, n->name, grads[0], xc, yc);
    r = gf_scope_keep(r);
    gf_scope_end();
    gf_tensor_release(x);
    gf_tensor_release(y);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

static const char *reduce_name(gfp_op op) {
    switch (op) {
    case GFP_OP_SUM: return "SumBackward";
    case GFP_OP_MEAN: return "MeanBackward";
    case GFP_OP_PROD: return "ProdBackward";
    case GFP_OP_AMAX: return "AmaxBackward";
    case GFP_OP_AMIN: return "AminBackward";
    case GFP_OP_VAR: return "VarBackward";
    case GFP_OP_LOGSUMEXP: return "LogsumexpBackward";
    default: return "ReduceBackward";
    }
}

gf_status gf__ag_record_reduce(gfp_op op, const gf_tensor *x, gf_tensor *y, uint32_t mask,
                               bool keepdim, double correction) {
    if (gf__fw_reduce(op, x, y, mask, keepdim, correction) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {x};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record(reduce_name(op), reduce_backward, ins, 1, outs, 1);
    if (!n) return GF_OK;
    reduce_ctx *c = GF_NODE_CTX(n, reduce_ctx);
    c->op = op;
    c->rank = x->rank;
    memcpy(c->sizes, x->sizes, sizeof c->sizes);
    c->mask = mask;
    c->keepdim = keepdim;
    c->correction = correction;
    bool save_x = false, save_y = false;
    switch (op) {
    case GFP_OP_PROD:
    case GFP_OP_AMAX:
    case GFP_OP_AMIN:
    case GFP_OP_LOGSUMEXP: save_x = save_y = true; break;
    case GFP_OP_VAR: save_x = true; break;
    default: break; /* sum, mean: shapes only */
    }
    gf_status s = GF_OK;
    if (save_x) s = gf__ag_save(n, 0, x, false);
    if (save_y && s == GF_OK) s = gf__ag_save(n, 1, y, true);
    return s;
}

gf_status gf__ag_record_std(const gf_tensor *x, gf_tensor *y, uint32_t mask, bool keepdim,
                           double correction) {
    if (gf__fw_std(x, y, mask, keepdim, correction) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {x};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record("StdBackward", reduce_backward, ins, 1, outs, 1);
    if (!n) return GF_OK;
    reduce_ctx *c = GF_NODE_CTX(n, reduce_ctx);
    c->op = GFP_OP_VAR;
    c->std = true;
    c->rank = x->rank;
    memcpy(c->sizes, x->sizes, sizeof c->sizes);
    c->mask = mask;
    c->keepdim = keepdim;
    c->correction = correction;
    gf_status s = gf__ag_save(n, 0, x, false);
    return s == GF_OK ? gf__ag_save(n, 1, y, true) : s;
}

/* ------------------------------------------------------------ max_dim / min_dim */
typedef struct extreme_ctx {
    int rank; /* the input's */
    int64_t sizes[GF_MAX_RANK];
    int dim;  /* normalised */
    bool keepdim;
} extreme_ctx;
GF_CTX_FITS(extreme_ctx);

/* The gradient goes to the selected index only (PyTorch's
 * value_selecting_reduction_backward): a one-hot mask of the index along dim,
 * built by comparing it with an arange. Saved: 0 = indices. */
static gf_status extreme_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const extreme_ctx *c = GF_NODE_CTX(n, extreme_ctx);
    gf_tensor *ix = NULL;
    gf_status s = gf__ag_unpack(n, 0, &ix);
    if (s != GF_OK) return s;
    gf_tensor *g = grads[0], *r;
    gf_scope_begin();
    if (c->rank == 0) {
        r = gf_expand(g, NULL, 0); /* the only element was selected */
    } else {
        gf_tensor *gk = c->keepdim ? g : gf_unsqueeze(g, c->dim);
        gf_tensor *ik = c->keepdim ? ix : gf_unsqueeze(ix, c->dim);
        int64_t shape[GF_MAX_RANK];
        for (int d = 0; d < c->rank; d++) shape[d] = d == c->dim ? c->sizes[d] : 1;
        gf_tensor *pos = gf_arange(0, (double)c->sizes[c->dim], 1, GF_I64, gf_tensor_device(g));
        gf_tensor *hit = gf_eq(gf_reshape(pos, shape, c->rank), ik);
        r = gf_where(hit, gk, gf_scalar(0.0, gf_tensor_dtype(g), gf_tensor_device(g)));
    }
    r = gf_scope_keep(r);
    gf_scope_end();
    gf_tensor_release(ix);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

gf_status gf__ag_record_extreme_dim(gfp_op op, const gf_tensor *x, gf_tensor *values,
                                    const gf_tensor *indices, int dim, bool keepdim) {
    if (gf__fw_extreme_dim(op, x, values, indices, dim, keepdim) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {x};
    gf_tensor *outs[1] = {values}; /* the indices are not differentiable */
    gf_node *n = gf__ag_record(op == GFP_OP_MAX_DIM ? "MaxBackward" : "MinBackward",
                               extreme_backward, ins, 1, outs, 1);
    if (!n) return GF_OK;
    extreme_ctx *c = GF_NODE_CTX(n, extreme_ctx);
    c->rank = x->rank;
    memcpy(c->sizes, x->sizes, sizeof c->sizes);
    c->dim = dim;
    c->keepdim = keepdim;
    return gf__ag_save(n, 0, indices, true);
}
