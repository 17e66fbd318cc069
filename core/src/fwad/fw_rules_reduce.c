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

static gf_tensor *reduce_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                              gf_tensor *const *y, int j) {
    const reduce_p *p = pv;
    (void)j;
    int dims[GF_MAX_RANK];
    int nd = dims_of(p, dims);
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
    return gf__fw_apply(reduce_name(op), reduce_rule, &p, xs, 1, ys, 1, false);
}

gf_status gf__fw_std(const gf_tensor *x, gf_tensor *y, uint32_t mask, bool keepdim,
                     double correction) {
    if (!gf__fw_enabled()) return GF_OK;
    reduce_p p = {GFP_OP_VAR, true, mask, keepdim, correction, x->rank};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply("std", reduce_rule, &p, xs, 1, ys, 1, false);
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
    if (gf_tensor_rank(x[0]) == 0) return gf__ret(gf_tensor_retain(t[0]));
    gf_tensor *ix = (gf_tensor *)p->indices;
    if (!p->keepdim) ix = gf_unsqueeze(ix, p->dim);
    gf_tensor *r = gf_gather(t[0], p->dim, ix);
    return p->keepdim ? r : gf_squeeze(r, p->dim);
}

gf_status gf__fw_extreme_dim(gfp_op op, const gf_tensor *x, gf_tensor *values,
                             const gf_tensor *indices, int dim, bool keepdim) {
    if (!gf__fw_enabled()) return GF_OK;
    extreme_p p = {indices, dim, keepdim};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {values};
    return gf__fw_apply(op == GFP_OP_MAX_DIM ? "max_dim" : "min_dim", extreme_rule, &p, xs, 1, ys,
                        1, false);
}

/* ------------------------------------------------------------ matmul, softmax */
static gf_tensor *matmul_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                              gf_tensor *const *y, int j) {
    (void)pv, (void)y, (void)j;
    gf_tensor *a = t[0] ? gf_matmul(t[0], x[1]) : NULL;
    gf_tensor *b = t[1] ? gf_matmul(x[0], t[1]) : NULL;
    if ((t[0] && !a) || (t[1] && !b)) return NULL;
    return a && b ? gf_add(a, b) : a ? a : b;
}

gf_status gf__fw_matmul(const gf_tensor *a, const gf_tensor *b, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    const gf_tensor *xs[2] = {a, b};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply("matmul", matmul_rule, NULL, xs, 2, ys, 1, false);
}

typedef struct softmax_p {
    gfp_op op;
    int dim;
} softmax_p;

static gf_tensor *softmax_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                               gf_tensor *const *y, int j) {
    const softmax_p *p = pv;
    (void)x, (void)j;
    int dim = p->dim;
    if (p->op == GFP_OP_SOFTMAX)
        return gf_mul(y[0], gf_sub(t[0], gf_sum(gf_mul(t[0], y[0]), &dim, 1, true)));
    return gf_sub(t[0], gf_sum(gf_mul(gf_exp(y[0]), t[0]), &dim, 1, true));
}

gf_status gf__fw_softmax(gfp_op op, const gf_tensor *x, gf_tensor *y, int dim) {
    if (!gf__fw_enabled()) return GF_OK;
    softmax_p p = {op, dim};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply(op == GFP_OP_SOFTMAX ? "softmax" : "log_softmax", softmax_rule, &p, xs, 1,
                        ys, 1, false);
}

/* ------------------------------------------------------------ indexing */
typedef enum { IX_SELECT, IX_GATHER, IX_SCATTER_ADD, IX_INDEX_ADD } index_kind;
typedef struct index_p {
    index_kind kind;
    int dim;
} index_p;

/* x: x, index[, src]. */
static gf_tensor *index_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                             gf_tensor *const *y, int j) {
    const index_p *p = pv;
    (void)j;
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
    return gf__fw_apply(name, index_rule, &p, xs, src ? 3 : 2, ys, 1, false);
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
    for (int i = 0; i < p->count; i++) parts[i] = t[i] ? t[i] : gf_zeros_like(x[i]);
    gf_tensor *r = gf_cat(parts, p->count, p->dim);
    if (parts != small) free(parts);
    return r;
}

gf_status gf__fw_cat(gf_tensor *const *tensors, int count, int dim, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    cat_p p = {count, dim};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply("cat", cat_rule, &p, (const gf_tensor *const *)tensors, count, ys, 1, false);
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
    return gf__fw_apply(upper ? "triu" : "tril", tri_rule, &p, xs, 1, ys, 1, false);
}
