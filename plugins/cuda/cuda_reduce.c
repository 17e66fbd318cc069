/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_reduce.c — host side of the reductions, softmax and the
 * normalisations: argument checks (the reference's, with its messages) and
 * the cuk_lines description each kernel walks (kernels/cu_reduce.cu,
 * kernels/cu_norm.cu). Size-1 dims are left out of the description: they
 * add nothing to a line or to the set of lines. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

static void lines_init(cuk_lines *l) {
    memset(l, 0, sizeof *l);
    l->n_out = 1;
    l->n_line = 1;
}

/* Appends a dim of size n with the given strides per slot (the remaining
 * slots stride 0) to a list of dims. When the previous dim of the list steps
 * over exactly this one in every slot, the two are walked as one (a
 * contiguous line is then one dim, and the kernels divide less). */
static void add_dim(int32_t *count, int64_t *sizes, int64_t (*strides)[CUK_MAX_RANK], int64_t n,
                    const int64_t *str, int n_str) {
    if (n == 1) return;
    int k = *count;
    bool joins = k > 0;
    for (int s = 0; s < CUK_LINE_TENSORS && joins; s++) {
        int64_t st = s < n_str ? str[s] : 0;
        joins = strides[s][k - 1] == st * n;
    }
    if (joins) {
        sizes[k - 1] *= n;
        for (int s = 0; s < CUK_LINE_TENSORS; s++) strides[s][k - 1] = s < n_str ? str[s] : 0;
        return;
    }
    sizes[k] = n;
    for (int s = 0; s < CUK_LINE_TENSORS; s++) strides[s][k] = s < n_str ? str[s] : 0;
    (*count)++;
}

static void add_keep(cuk_lines *l, int64_t n, const int64_t *str, int n_str) {
    l->n_out *= n;
    add_dim(&l->n_keep, l->keep_sizes, l->keep_str, n, str, n_str);
}

static void add_red(cuk_lines *l, int64_t n, const int64_t *str, int n_str) {
    l->n_line *= n;
    add_dim(&l->n_red, l->red_sizes, l->red_str, n, str, n_str);
}

static void set_slot(cuk_lines *l, int slot, const gfp_tensor *t) {
    if (!t) return;
    cuk_tensor v = cu_view(t);
    l->data[slot] = v.data;
    l->dtype[slot] = v.dtype;
}

/* ------------------------------------------------------------ reductions */
gfp_status cu_reduce_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params) {
    const char *name = pk_op_name(op);
    const gfp_reduce_params *p = params;
    const gfp_tensor *x = in[0], *y = out[0], *ind = n_out == 2 ? out[1] : NULL;
    /* Complex: SUM, MEAN, PROD into the input's dtype (accepts() in cuda_ops.c). */
    bool cx = pk_is_complex(x->dtype);
    gfp_status st = pk_check_reduce(op, params, x, y, ind, cx ? PK_DT_COMPLEX : CU_REDUCE_DTYPES,
                                    cx ? PK_DT_COMPLEX : PK_DT_FLOAT);
    if (st != GFP_OK) return st;
    uint32_t dims = p->dims;
    cuk_lines l;
    lines_init(&l);
    for (int d = 0; d < x->rank; d++) {
        if ((dims >> d) & 1u) {
            add_red(&l, x->sizes[d], &x->strides[d], 1);
        } else {
            int64_t str[3] = {x->strides[d], y->strides[d], ind ? ind->strides[d] : 0};
            add_keep(&l, x->sizes[d], str, 3);
        }
    }
    if (l.n_out == 0) return GFP_OK;
    set_slot(&l, 0, x);
    set_slot(&l, 1, y);
    set_slot(&l, 2, ind);
    l.p0 = p->correction;
    if (cx)
        return cu_check(cuk_cx_reduce(dev->stream, op == GFP_OP_SUM ? 0 : op == GFP_OP_MEAN ? 1 : 2,
                                      &l),
                        name, "the kernel launch");
    return cu_check(cuk_reduce(dev->stream, op, &l), name, "the kernel launch");
}

/* ------------------------------------------------------------ softmax */
static gfp_status softmax_launch(cu_device *dev, uint32_t op, const gfp_tensor *x,
                                 const gfp_tensor *y, const void *params) {
    const char *name = pk_op_name(op); /* checked by pk_check_norm, as the ops below */
    int dim = ((const gfp_dim_params *)params)->dim;
    if (pk_numel(x) == 0) return GFP_OK;
    cuk_lines l;
    lines_init(&l);
    for (int d = 0; d < x->rank; d++) {
        int64_t str[2] = {x->strides[d], y->strides[d]};
        if (d == dim) add_red(&l, x->sizes[d], str, 2);
        else add_keep(&l, x->sizes[d], str, 2);
    }
    set_slot(&l, 0, x);
    set_slot(&l, 1, y);
    return cu_check(cuk_softmax(dev->stream, op, &l), name, "the kernel launch");
}

/* ------------------------------------------------------------ layer norm */
static gfp_status layer_norm_launch(cu_device *dev, const gfp_tensor *const *in,
                                    const gfp_tensor *const *out, const void *params) {
    const gfp_layer_norm_params *p = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *y = out[0], *mean = out[1],
                     *rstd = out[2];
    int nr = p->normalized_rank, outer = x->rank - nr;
    cuk_lines l;
    lines_init(&l);
    for (int d = 0; d < outer; d++) {
        /* slots 0 x, 1 y, 2 w, 3 b (no kept dims), 4 mean, 5 rstd */
        int64_t str[6] = {x->strides[d], y->strides[d], 0, 0, mean->strides[d], rstd->strides[d]};
        add_keep(&l, x->sizes[d], str, 6);
    }
    for (int d = 0; d < nr; d++) {
        int64_t str[4] = {x->strides[outer + d], y->strides[outer + d], w ? w->strides[d] : 0,
                          b ? b->strides[d] : 0};
        add_red(&l, x->sizes[outer + d], str, 4);
    }
    if (l.n_out == 0) return GFP_OK;
    set_slot(&l, 0, x);
    set_slot(&l, 1, y);
    set_slot(&l, 2, w);
    set_slot(&l, 3, b);
    set_slot(&l, 4, mean);
    set_slot(&l, 5, rstd);
    l.p1 = p->eps;
    return cu_check(cuk_layer_norm(dev->stream, &l), "layer_norm", "the kernel launch");
}

/* ------------------------------------------------------------ batch norm */
static gfp_status batch_norm_launch(cu_device *dev, const gfp_tensor *const *in,
                                    const gfp_tensor *const *out, const void *params) {
    const gfp_batch_norm_params *p = params;
    const gfp_tensor *x = in[0], *y = out[0];
    /* Slots 2..7: weight, bias, running_mean, running_var, save_mean,
     * save_invstd; each 1-D with C elements. */
    const gfp_tensor *per_c[6] = {in[1], in[2], in[3], in[4], out[1], out[2]};
    cuk_lines l;
    lines_init(&l);
    int64_t kstr[8] = {x->strides[1], y->strides[1]};
    for (int i = 0; i < 6; i++) kstr[2 + i] = per_c[i] ? per_c[i]->strides[0] : 0;
    /* The channel is kept even when C = 1: the per-channel slots index it. */
    l.n_out = x->sizes[1];
    l.n_keep = 1;
    l.keep_sizes[0] = x->sizes[1];
    for (int s = 0; s < 8; s++) l.keep_str[s][0] = kstr[s];
    for (int d = 0; d < x->rank; d++) {
        if (d == 1) continue;
        int64_t str[2] = {x->strides[d], y->strides[d]};
        add_red(&l, x->sizes[d], str, 2);
    }
    if (l.n_out == 0) return GFP_OK;
    set_slot(&l, 0, x);
    set_slot(&l, 1, y);
    for (int i = 0; i < 6; i++) set_slot(&l, 2 + i, per_c[i]);
    l.p1 = p->eps;
    l.p2 = p->momentum;
    l.flag = (int32_t)p->training;
    return cu_check(cuk_batch_norm(dev->stream, &l), "batch_norm", "the kernel launch");
}

/* SOFTMAX_BACKWARD / LOG_SOFTMAX_BACKWARD: lines along params.dim. */
static gfp_status softmax_backward_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                                          uint32_t n_in, const gfp_tensor *const *out,
                                          uint32_t n_out, const void *params) {
    gfp_status st = pk_check_softmax_backward(op, in, n_in, out, n_out, params, PK_DT_FLOAT);
    if (st != GFP_OK) return st;
    const gfp_tensor *gy = in[0], *y = in[1], *gx = out[0];
    if (pk_numel(y) == 0) return GFP_OK;
    int dim = ((const gfp_dim_params *)params)->dim;
    cuk_lines l;
    lines_init(&l);
    for (int d = 0; d < y->rank; d++) {
        int64_t str[3] = {gy->strides[d], y->strides[d], gx->strides[d]};
        if (d == dim) add_red(&l, y->sizes[d], str, 3);
        else add_keep(&l, y->sizes[d], str, 3);
    }
    set_slot(&l, 0, gy);
    set_slot(&l, 1, y);
    set_slot(&l, 2, gx);
    return cu_check(cuk_softmax_backward(dev->stream, op, &l), pk_op_name(op), "the kernel launch");
}

/* ------------------------------------------------------------ norm gradients */
/* BATCH_NORM_BACKWARD: the channel kept (even when C = 1: the per-channel
 * slots index it), every other dim along the line. */
static gfp_status batch_norm_backward_launch(cu_device *dev, const gfp_tensor *const *in,
                                             const gfp_tensor *const *out) {
    const gfp_tensor *g = in[0], *x = in[1], *gx = out[0];
    /* slots 3..7: save_mean, save_invstd, weight, grad_weight, grad_bias */
    const gfp_tensor *per_c[5] = {in[2], in[3], in[4], out[1], out[2]};
    cuk_lines l;
    lines_init(&l);
    l.n_out = x->sizes[1];
    l.n_keep = 1;
    l.keep_sizes[0] = x->sizes[1];
    l.keep_str[0][0] = g->strides[1];
    l.keep_str[1][0] = x->strides[1];
    l.keep_str[2][0] = gx->strides[1];
    for (int i = 0; i < 5; i++) l.keep_str[3 + i][0] = per_c[i] ? per_c[i]->strides[0] : 0;
    for (int d = 0; d < x->rank; d++) {
        if (d == 1) continue;
        int64_t str[3] = {g->strides[d], x->strides[d], gx->strides[d]};
        add_red(&l, x->sizes[d], str, 3);
    }
    if (l.n_out == 0) return GFP_OK;
    set_slot(&l, 0, g);
    set_slot(&l, 1, x);
    set_slot(&l, 2, gx);
    for (int i = 0; i < 5; i++) set_slot(&l, 3 + i, per_c[i]);
    return cu_check(cuk_batch_norm_backward(dev->stream, &l), "batch_norm_backward",
                    "the kernel launch");
}

/* LAYER_NORM_BACKWARD: grad_x by rows (the leading dims kept), grad_weight
 * and grad_bias by columns (the normalised dims kept, along the rows). */
static gfp_status layer_norm_backward_launch(cu_device *dev, const gfp_tensor *const *in,
                                             const gfp_tensor *const *out, const void *params) {
    const gfp_tensor *g = in[0], *x = in[1], *mean = in[2], *rstd = in[3], *w = in[4];
    const gfp_tensor *gx = out[0], *gw = out[1], *gb = out[2];
    int nr = ((const gfp_layer_norm_params *)params)->normalized_rank, outer = x->rank - nr;
    cuk_lines rows, cols;
    lines_init(&rows);
    lines_init(&cols);
    for (int d = 0; d < outer; d++) {
        int64_t rk[5] = {g->strides[d], x->strides[d], gx->strides[d], mean->strides[d],
                         rstd->strides[d]};
        add_keep(&rows, x->sizes[d], rk, 5);
        int64_t cr[5] = {g->strides[d], x->strides[d], 0, mean->strides[d], rstd->strides[d]};
        add_red(&cols, x->sizes[d], cr, 5);
    }
    for (int d = 0; d < nr; d++) {
        int64_t rr[6] = {g->strides[outer + d], x->strides[outer + d], gx->strides[outer + d],
                         0, 0, w ? w->strides[d] : 0};
        add_red(&rows, x->sizes[outer + d], rr, 6);
        int64_t ck[8] = {g->strides[outer + d], x->strides[outer + d], 0, 0, 0, 0,
                         gw->strides[d], gb->strides[d]};
        add_keep(&cols, x->sizes[outer + d], ck, 8);
    }
    if (cols.n_out == 0) return GFP_OK; /* no normalised elements: nothing to write */
    const gfp_tensor *rs[6] = {g, x, gx, mean, rstd, w};
    for (int i = 0; i < 6; i++) set_slot(&rows, i, rs[i]);
    const gfp_tensor *cs[8] = {g, x, NULL, mean, rstd, NULL, gw, gb};
    for (int i = 0; i < 8; i++) set_slot(&cols, i, cs[i]);
    return cu_check(cuk_layer_norm_backward(dev->stream, &rows, &cols), "layer_norm_backward",
                    "the kernel launch");
}

gfp_status cu_norm_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params) {
    if (op == GFP_OP_SOFTMAX_BACKWARD || op == GFP_OP_LOG_SOFTMAX_BACKWARD)
        return softmax_backward_launch(dev, op, in, n_in, out, n_out, params);
    if (op == GFP_OP_BATCH_NORM_BACKWARD || op == GFP_OP_LAYER_NORM_BACKWARD) {
        gfp_status st = pk_check_norm_backward(op, in, n_in, out, n_out, params, PK_DT_FLOAT);
        if (st != GFP_OK) return st;
        return op == GFP_OP_BATCH_NORM_BACKWARD ? batch_norm_backward_launch(dev, in, out)
                                                : layer_norm_backward_launch(dev, in, out, params);
    }
    gfp_status st = pk_check_norm(op, in, n_in, out, n_out, params, PK_DT_FLOAT);
    if (st != GFP_OK) return st;
    switch (op) {
    case GFP_OP_LAYER_NORM: return layer_norm_launch(dev, in, out, params);
    case GFP_OP_BATCH_NORM: return batch_norm_launch(dev, in, out, params);
    default: return softmax_launch(dev, op, in[0], out[0], params);
    }
}
