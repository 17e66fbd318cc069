/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_rules_reduce.c — jvp rules of the reductions, matmul, softmax and the
 * indexing ops.
 *
 *   sum, mean           the same reduction of the tangent
 *   prod, amax, amin, var, std, logsumexp
 *                       sum(t * dy/dx) over the reduced dims, dy/dx from
 *                       the backward formula (bw_reduce.c) with a gradient
 *                       of ones, so ties (amax) and zeros (prod) follow
 *                       reverse mode's conventions
 *   max_dim, min_dim    the tangent at the selected index
 *   matmul              ta @ b + a @ tb
 *   softmax             y * (t - sum(t * y)); log_softmax: t - sum(softmax * t)
 *   index_select, gather, tril, triu: the same op on the tangent
 *   scatter_add, index_add: the same op on the tangents (zeros for none)
 *   cat                 cat of the tangents (zeros for none) */
#include <stdlib.h>
#include <string.h>

#include "autograd/ag_internal.h"
#include "fw_internal.h"
#include "graft_ops.h"

/* ------------------------------------------------------------ reductions */
typedef struct reduce_p {
    gfp_op op;
    bool std;
    uint32_t mask;
    bool keepdim;
    double correction;
    int rank;
} reduce_p;

static int dims_of(const reduce_p *p, int *dims) {
    int nd = 0;
    for (int d = 0; d < p->rank; d++)
        if (p->mask & (1u << d)) dims[nd++] = d;
    return nd;
}

static const char *reduce_name(gfp_op op);
static const char *reduce_name_of(const reduce_p *p) {
    return p->std ? "std" : reduce_name(p->op);
}

static gf_tensor *reduce_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                              gf_tensor *const *y, int j) {
    const reduce_p *p = pv;
    (void)j;
    int dims[GF_MAX_RANK];
    int nd = dims_of(p, dims);
    if (gf__fw_rule_batch()) {
        /* the tangent's dims sit one past the batch dim; no dim to reduce
         * (a 0-d input) would mean "all" to gf_sum, batch dim included:
         * the reduction of one element passes its tangent through, times
         * the partial derivative for the others */
        if (nd == 0 && p->rank > 0) {
            gf__fw_batch_refuse(-1, reduce_name_of(p));
            return NULL;
        }
        if (nd == 0) {
            if (p->op == GFP_OP_SUM || p->op == GFP_OP_MEAN) return gf__ret(gf_tensor_retain(t[0]));
            return gf_mul(t[0], gf__ag_reduce_partial(p->op, p->std, p->mask, p->keepdim,
                                                      p->correction, x[0], y[0]));
        }
        for (int i = 0; i < nd; i++) dims[i]++;
    }
    switch (p->op) {
    case GFP_OP_SUM: return gf_sum(t[0], dims, nd, p->keepdim);
    case GFP_OP_MEAN: return gf_mean(t[0], dims, nd, p->keepdim);
    default: break;
    }
    gf_tensor *partial = gf__ag_reduce_partial(p->op, p->std, p->mask, p->keepdim, p->correction,
                                               x[0], y[0]);
    return gf_sum(gf_mul(t[0], partial), dims, nd, p->keepdim);
}

static const char *reduce_name(gfp_op op) {
    const gfp_op_info *info = gfp_op_lookup(op);
    return info ? info->name : "reduction";
}

gf_status gf__fw_reduce(gfp_op op, const gf_tensor *x, gf_tensor *y, uint32_t mask, bool keepdim,
                        double correction) {
    if (!gf__fw_enabled()) return GF_OK;
    reduce_p p = {op, false, mask, keepdim, correction, x->rank};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched(reduce_name(op), reduce_rule, &p, xs, 1, ys, 1, false);
}

gf_status gf__fw_std(const gf_tensor *x, gf_tensor *y, uint32_t mask, bool keepdim,
                     double correction) {
    if (!gf__fw_enabled()) return GF_OK;
    reduce_p p = {GFP_OP_VAR, true, mask, keepdim, correction, x->rank};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("std", reduce_rule, &p, xs, 1, ys, 1, false);
}

/* ------------------------------------------------------------ max_dim, min_dim */
typedef struct extreme_p {
    const gf_tensor *indices;
    int dim;
    bool keepdim;
} extreme_p;

static gf_tensor *extreme_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                               gf_tensor *const *y, int j) {
    const extreme_p *p = pv;
    (void)y, (void)j;
    int xr = gf_tensor_rank(x[0]);
    if (xr == 0) return gf__ret(gf_tensor_retain(t[0]));
    int64_t batch = gf__fw_rule_batch();
    int dim = p->dim < 0 ? p->dim + xr : p->dim, td = dim + (batch ? 1 : 0);
    gf_tensor *ix = (gf_tensor *)p->indices;
    if (!p->keepdim) ix = gf_unsqueeze(ix, dim);
    if (batch && ix) {
        /* the same index for every tangent of the batch */
        int64_t s[GF_MAX_RANK + 1];
        s[0] = batch;
        memcpy(s + 1, gf_tensor_sizes(ix), sizeof(int64_t) * (size_t)xr);
        ix = gf_expand(gf_unsqueeze(ix, 0), s, xr + 1);
    }
    gf_tensor *r = gf_gather(t[0], td, ix);
    return p->keepdim ? r : gf_squeeze(r, td);
}

gf_status gf__fw_extreme_dim(gfp_op op, const gf_tensor *x, gf_tensor *values,
                             const gf_tensor *indices, int dim, bool keepdim) {
    if (!gf__fw_enabled()) return GF_OK;
    extreme_p p = {indices, dim, keepdim};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {values};
    return gf__fw_apply_batched(op == GFP_OP_MAX_DIM ? "max_dim" : "min_dim", extreme_rule, &p, xs,
                                1, ys, 1, false);
}

/* ------------------------------------------------------------ matmul, softmax */
/* Batched: a 1-D operand as a matrix ([1, k] on the left, [k, 1] on the
 * right), each tangent as [B, 1.., rows, cols] with as many batch dims as
 * the product's, so a tangent's batch dim never meets a matrix dim; the
 * product [B, *batch, n, m] is then given y's sizes. */
static gf_tensor *as_matrix(gf_tensor *v, bool left, int64_t batch) {
    int r = gf_tensor_rank(v) - (batch ? 1 : 0);
    if (r != 1) return gf__ret(gf_tensor_retain(v));
    int64_t s[3];
    int o = 0;
    if (batch) s[o++] = batch;
    int64_t k = gf_tensor_size(v, -1);
    s[o++] = left ? 1 : k;
    s[o++] = left ? k : 1;
    return gf_reshape(v, s, o);
}

static gf_tensor *matmul_batched(gf_tensor *const *x, gf_tensor *const *t, gf_tensor *y,
                                 int64_t batch) {
    gf_tensor *am = as_matrix(x[0], true, 0), *bm = as_matrix(x[1], false, 0);
    if (!am || !bm) return NULL;
    int ar = gf_tensor_rank(am), br = gf_tensor_rank(bm), pr = ar > br ? ar : br;
    gf_tensor *a = NULL, *b = NULL;
    if (t[0]) a = gf_matmul(gf__fw_batch_align(as_matrix(t[0], true, batch), pr), bm);
    if (t[1]) b = gf_matmul(am, gf__fw_batch_align(as_matrix(t[1], false, batch), pr));
    if ((t[0] && !a) || (t[1] && !b)) return NULL;
    gf_tensor *r = a && b ? gf_add(a, b) : a ? a : b;
    int yr = gf_tensor_rank(y);
    int64_t s[GF_MAX_RANK + 1];
    s[0] = batch;
    memcpy(s + 1, gf_tensor_sizes(y), sizeof(int64_t) * (size_t)yr);
    return gf_reshape(r, s, yr + 1);
}

static gf_tensor *matmul_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                              gf_tensor *const *y, int j) {
    (void)pv, (void)j;
    int64_t batch = gf__fw_rule_batch();
    if (batch) return matmul_batched(x, t, y[0], batch);
    gf_tensor *a = t[0] ? gf_matmul(t[0], x[1]) : NULL;
    gf_tensor *b = t[1] ? gf_matmul(x[0], t[1]) : NULL;
    if ((t[0] && !a) || (t[1] && !b)) return NULL;
    return a && b ? gf_add(a, b) : a ? a : b;
}

gf_status gf__fw_matmul(const gf_tensor *a, const gf_tensor *b, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    const gf_tensor *xs[2] = {a, b};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("matmul", matmul_rule, NULL, xs, 2, ys, 1, false);
}

typedef struct softmax_p {
    gfp_op op;
    int dim;
} softmax_p;

static gf_tensor *softmax_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                               gf_tensor *const *y, int j) {
    const softmax_p *p = pv;
    (void)j;
    int dim = p->dim < 0 ? p->dim + gf_tensor_rank(x[0]) : p->dim;
    if (gf__fw_rule_batch()) dim++;
    if (p->op == GFP_OP_SOFTMAX)
        return gf_mul(y[0], gf_sub(t[0], gf_sum(gf_mul(t[0], y[0]), &dim, 1, true)));
    return gf_sub(t[0], gf_sum(gf_mul(gf_exp(y[0]), t[0]), &dim, 1, true));
}

gf_status gf__fw_softmax(gfp_op op, const gf_tensor *x, gf_tensor *y, int dim) {
    if (!gf__fw_enabled()) return GF_OK;
    softmax_p p = {op, dim};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched(op == GFP_OP_SOFTMAX ? "softmax" : "log_softmax", softmax_rule, &p,
                                xs, 1, ys, 1, false);
}

/* ------------------------------------------------------------ indexing */
typedef enum { IX_SELECT, IX_GATHER, IX_SCATTER_ADD, IX_INDEX_ADD } index_kind;
typedef struct index_p {
    index_kind kind;
    int dim;
} index_p;

/* index (of some rank) repeated over a leading batch dim. */
static gf_tensor *batch_index(gf_tensor *ix, int64_t batch) {
    int r = gf_tensor_rank(ix);
    int64_t s[GF_MAX_RANK + 1];
    s[0] = batch;
    memcpy(s + 1, gf_tensor_sizes(ix), sizeof(int64_t) * (size_t)r);
    return gf_expand(gf_unsqueeze(ix, 0), s, r + 1);
}

static gf_tensor *index_rule_batched(const index_p *p, gf_tensor *const *x, gf_tensor *const *t,
                                     gf_tensor *y, int64_t batch) {
    int xr = gf_tensor_rank(x[0]);
    int dim = (p->dim < 0 ? p->dim + xr : p->dim) + 1;
    switch (p->kind) {
    case IX_SELECT: return gf_index_select(t[0], dim, x[1]);
    case IX_GATHER: return gf_gather(t[0], dim, batch_index(x[1], batch));
    default: break;
    }
    gf_tensor *base = t[0];
    if (!base) {
        int yr = gf_tensor_rank(y);
        int64_t s[GF_MAX_RANK + 1];
        s[0] = batch;
        memcpy(s + 1, gf_tensor_sizes(y), sizeof(int64_t) * (size_t)yr);
        base = gf_zeros(s, yr + 1, gf_tensor_dtype(y), gf_tensor_device(y));
    }
    if (!t[2]) return t[0] ? gf__ret(gf_tensor_retain(base)) : base;
    return p->kind == IX_SCATTER_ADD ? gf_scatter_add(base, dim, batch_index(x[1], batch), t[2])
                                     : gf_index_add(base, dim, x[1], t[2]);
}

/* x: x, index[, src]. */
static gf_tensor *index_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                             gf_tensor *const *y, int j) {
    const index_p *p = pv;
    (void)j;
    int64_t batch = gf__fw_rule_batch();
    if (batch) return index_rule_batched(p, x, t, y[0], batch);
    switch (p->kind) {
    case IX_SELECT: return gf_index_select(t[0], p->dim, x[1]);
    case IX_GATHER: return gf_gather(t[0], p->dim, x[1]);
    default: break;
    }
    gf_tensor *base = t[0] ? t[0] : gf_zeros_like(y[0]);
    if (!t[2]) return t[0] ? gf__ret(gf_tensor_retain(base)) : base;
    return p->kind == IX_SCATTER_ADD ? gf_scatter_add(base, p->dim, x[1], t[2])
                                     : gf_index_add(base, p->dim, x[1], t[2]);
}

static gf_status index_apply(const char *name, index_kind kind, int dim, const gf_tensor *x,
                             const gf_tensor *index, const gf_tensor *src, gf_tensor *y) {
    index_p p = {kind, dim};
    const gf_tensor *xs[3] = {x, index, src};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched(name, index_rule, &p, xs, src ? 3 : 2, ys, 1, false);
}

gf_status gf__fw_index_select(const gf_tensor *x, int dim, const gf_tensor *index, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    return index_apply("index_select", IX_SELECT, dim, x, index, NULL, y);
}

gf_status gf__fw_gather(const gf_tensor *x, int dim, const gf_tensor *index, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    return index_apply("gather", IX_GATHER, dim, x, index, NULL, y);
}

gf_status gf__fw_scatter_add(const gf_tensor *x, int dim, const gf_tensor *index,
                             const gf_tensor *src, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    return index_apply("scatter_add", IX_SCATTER_ADD, dim, x, index, src, y);
}

gf_status gf__fw_index_add(const gf_tensor *x, int dim, const gf_tensor *index,
                           const gf_tensor *src, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    return index_apply("index_add", IX_INDEX_ADD, dim, x, index, src, y);
}

typedef struct cat_p {
    int count, dim;
} cat_p;

static gf_tensor *cat_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                           gf_tensor *const *y, int j) {
    const cat_p *p = pv;
    (void)y, (void)j;
    gf_tensor *small[8] = {NULL}, **parts = p->count <= 8 ? small : calloc((size_t)p->count, sizeof *parts);
    if (!parts) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "cat: out of host memory for the tangents");
        return NULL;
    }
    int64_t batch = gf__fw_rule_batch();
    int xr = gf_tensor_rank(x[0]), dim = p->dim < 0 ? p->dim + xr : p->dim;
    for (int i = 0; i < p->count; i++) {
        if (t[i] || !batch) {
            parts[i] = t[i] ? t[i] : gf_zeros_like(x[i]);
            continue;
        }
        int64_t s[GF_MAX_RANK + 1];
        s[0] = batch;
        memcpy(s + 1, gf_tensor_sizes(x[i]), sizeof(int64_t) * (size_t)gf_tensor_rank(x[i]));
        parts[i] = gf_zeros(s, gf_tensor_rank(x[i]) + 1, gf_tensor_dtype(x[i]),
                            gf_tensor_device(x[i]));
    }
    gf_tensor *r = gf_cat(parts, p->count, dim + (batch ? 1 : 0));
    if (parts != small) free(parts);
    return r;
}

gf_status gf__fw_cat(gf_tensor *const *tensors, int count, int dim, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    cat_p p = {count, dim};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("cat", cat_rule, &p, (const gf_tensor *const *)tensors, count, ys, 1,
                                false);
}

typedef struct tri_p {
    bool upper;
    int64_t diagonal;
} tri_p;

static gf_tensor *tri_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                           gf_tensor *const *y, int j) {
    const tri_p *p = pv;
    (void)x, (void)y, (void)j;
    return p->upper ? gf_triu(t[0], p->diagonal) : gf_tril(t[0], p->diagonal);
}

gf_status gf__fw_tri(bool upper, const gf_tensor *x, int64_t diagonal, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    tri_p p = {upper, diagonal};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched(upper ? "triu" : "tril", tri_rule, &p, xs, 1, ys, 1, false);
}
