/* SPDX-License-Identifier: BSD-3-Clause */
/* bw_nn.c — backward of conv2d, pooling, layer_norm and batch_norm
 * (recorded from ops_nn.c).
 *
 * conv2d's gradients are its two gradient kernels, and those kernels record
 * nodes of their own: each is linear in both of its arguments and its
 * adjoints are again conv2d or the other kernel, so derivatives of any order
 * are made of the same three ops. The pooling gradients are likewise
 * differentiable in grad_y: max-pool's adjoint is a gather at the argmax
 * indices, avg-pool's is avg_pool2d itself. The normalisation formulas are
 * written with public elementwise and reduction ops. dropout and the losses
 * are composites of differentiable public ops and record nothing here. */
#include <string.h>

#include "ag_internal.h"
#include "fwad/fw_internal.h"

/* Moves r out of the current scope into *slot; false (error set) when r is NULL. */
static bool keep(gf_tensor *r, gf_tensor **slot) {
    *slot = gf_scope_keep(r);
    return r != NULL;
}

/* A tensor of the given sizes backed by one element (all strides 0), for the
 * gradient ops that read nothing of their x but its shape: no node has to
 * keep x alive just for its sizes. New reference, not in a scope. */
static gf_tensor *shape_only(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev) {
    gf_tensor *one = gf__scalar(0.0, dtype, dev);
    if (!one) return NULL;
    int64_t zero[GF_MAX_RANK] = {0};
    gf_tensor *v = gf__view(one, sizes, zero, rank, one->offset);
    gf_tensor_release(one);
    return v;
}

/* Unpacks the saved slots listed in want[] (true = read it) into t[]; on
 * failure releases what was unpacked. */
static gf_status unpack_some(gf_node *n, const bool *want, gf_tensor **t, int count) {
    gf_status s = GF_OK;
    for (int i = 0; i < count && s == GF_OK; i++)
        if (want[i]) s = gf__ag_unpack(n, i, &t[i]);
    if (s != GF_OK)
        for (int i = 0; i < count; i++) {
            gf_tensor_release(t[i]);
            t[i] = NULL;
        }
    return s;
}

static void release_all(gf_tensor **t, int count) {
    for (int i = 0; i < count; i++) gf_tensor_release(t[i]);
}

/* ------------------------------------------------------------ conv2d */
typedef struct conv_ctx {
    gf_conv2d_opts opts;  /* as given (zeros are read as the defaults) */
    int64_t xs[4], ws[4]; /* the convolution's input and weight sizes */
} conv_ctx;
GF_CTX_FITS(conv_ctx);

static void conv_ctx_fill(gf_node *n, const gf_conv2d_opts *opts, const int64_t *xs,
                          const int64_t *ws) {
    conv_ctx *c = GF_NODE_CTX(n, conv_ctx);
    memset(c, 0, sizeof *c);
    if (opts) c->opts = *opts;
    memcpy(c->xs, xs, sizeof c->xs);
    memcpy(c->ws, ws, sizeof c->ws);
}

/* y = conv2d(x, w) + b. Edges: x, w, bias. Saved: 0 = x (read by w's
 * gradient), 1 = w (read by x's). */
static gf_status conv2d_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const conv_ctx *c = GF_NODE_CTX(n, conv_ctx);
    bool need_x = n->next[0].node, need_w = n->next[1].node, need_b = n->next[2].node;
    gf_tensor *sv[2] = {NULL, NULL};
    const bool want[2] = {need_w, need_x};
    gf_status s = unpack_some(n, want, sv, 2);
    if (s != GF_OK) return s;
    gf_tensor *g = grads[0];
    static const int nhw[3] = {0, 2, 3};
    gf_scope_begin();
    if (need_x && !keep(gf_conv2d_backward_input(g, sv[1], c->xs, &c->opts), &out[0]))
        s = gf__status();
    if (s == GF_OK && need_w &&
        !keep(gf_conv2d_backward_weight(g, sv[0], c->ws, &c->opts), &out[1]))
        s = gf__status();
    if (s == GF_OK && need_b && !keep(gf_sum(g, nhw, 3, false), &out[2])) s = gf__status();
    gf_scope_end();
    release_all(sv, 2);
    return s;
}

gf_status gf__ag_record_conv2d(const gf_tensor *x, const gf_tensor *w, const gf_tensor *bias,
                               const gf_conv2d_opts *opts, gf_tensor *y) {
    if (gf__fw_conv2d(x, w, bias, opts, y) != GF_OK) return gf__status();
    const gf_tensor *ins[3] = {x, w, bias};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record("ConvolutionBackward", conv2d_backward, ins, 3, outs, 1);
    if (!n) return GF_OK;
    conv_ctx_fill(n, opts, x->sizes, w->sizes);
    gf_status s = GF_OK;
    if (n->next[1].node) s = gf__ag_save(n, 0, x, false);
    if (s == GF_OK && n->next[0].node) s = gf__ag_save(n, 1, w, false);
    return s;
}

/* gx = conv2d_backward_input(gy, w): the adjoint of x -> conv2d(x, w), so
 * <gg, gx> = <conv2d(gg, w), gy>. Hence d/dgy = conv2d(gg, w) and
 * d/dw = conv2d_backward_weight(gy, gg). Edges: grad_y, w. Saved: 0 = w
 * (read by grad_y's gradient), 1 = grad_y (read by w's). */
static gf_status conv_bw_input_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const conv_ctx *c = GF_NODE_CTX(n, conv_ctx);
    bool need_gy = n->next[0].node, need_w = n->next[1].node;
    gf_tensor *sv[2] = {NULL, NULL};
    const bool want[2] = {need_gy, need_w};
    gf_status s = unpack_some(n, want, sv, 2);
    if (s != GF_OK) return s;
    gf_tensor *gg = grads[0];
    gf_scope_begin();
    if (need_gy && !keep(gf_conv2d(gg, sv[0], NULL, &c->opts), &out[0])) s = gf__status();
    if (s == GF_OK && need_w &&
        !keep(gf_conv2d_backward_weight(sv[1], gg, c->ws, &c->opts), &out[1]))
        s = gf__status();
    gf_scope_end();
    release_all(sv, 2);
    return s;
}

gf_status gf__ag_record_conv2d_backward_input(const gf_tensor *grad_y, const gf_tensor *w,
                                              const int64_t *input_sizes,
                                              const gf_conv2d_opts *opts, gf_tensor *gx) {
    if (gf__fw_conv2d_backward_input(grad_y, w, input_sizes, opts, gx) != GF_OK) return gf__status();
    const gf_tensor *ins[2] = {grad_y, w};
    gf_tensor *outs[1] = {gx};
    gf_node *n = gf__ag_record("ConvolutionBackwardInputBackward", conv_bw_input_backward, ins,
                               2, outs, 1);
    if (!n) return GF_OK;
    conv_ctx_fill(n, opts, input_sizes, w->sizes);
    gf_status s = GF_OK;
    if (n->next[0].node) s = gf__ag_save(n, 0, w, false);
    if (s == GF_OK && n->next[1].node) s = gf__ag_save(n, 1, grad_y, false);
    return s;
}

/* gw = conv2d_backward_weight(gy, x): the adjoint of w -> conv2d(x, w), so
 * <gg, gw> = <conv2d(x, gg), gy>. Hence d/dgy = conv2d(x, gg) and
 * d/dx = conv2d_backward_input(gy, gg). Edges: grad_y, x. Saved: 0 = x
 * (read by grad_y's gradient), 1 = grad_y (read by x's). */
static gf_status conv_bw_weight_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const conv_ctx *c = GF_NODE_CTX(n, conv_ctx);
    bool need_gy = n->next[0].node, need_x = n->next[1].node;
    gf_tensor *sv[2] = {NULL, NULL};
    const bool want[2] = {need_gy, need_x};
    gf_status s = unpack_some(n, want, sv, 2);
    if (s != GF_OK) return s;
    gf_tensor *gg = grads[0];
    gf_scope_begin();
    if (need_gy && !keep(gf_conv2d(sv[0], gg, NULL, &c->opts), &out[0])) s = gf__status();
    if (s == GF_OK && need_x &&
        !keep(gf_conv2d_backward_input(sv[1], gg, c->xs, &c->opts), &out[1]))
        s = gf__status();
    gf_scope_end();
    release_all(sv, 2);
    return s;
}

gf_status gf__ag_record_conv2d_backward_weight(const gf_tensor *grad_y, const gf_tensor *x,
                                               const int64_t *weight_sizes,
                                               const gf_conv2d_opts *opts, gf_tensor *gw) {
    if (gf__fw_conv2d_backward_weight(grad_y, x, weight_sizes, opts, gw) != GF_OK) return gf__status();
    const gf_tensor *ins[2] = {grad_y, x};
    gf_tensor *outs[1] = {gw};
    gf_node *n = gf__ag_record("ConvolutionBackwardWeightBackward", conv_bw_weight_backward,
                               ins, 2, outs, 1);
    if (!n) return GF_OK;
    conv_ctx_fill(n, opts, x->sizes, weight_sizes);
    gf_status s = GF_OK;
    if (n->next[0].node) s = gf__ag_save(n, 0, x, false);
    if (s == GF_OK && n->next[1].node) s = gf__ag_save(n, 1, grad_y, false);
    return s;
}

/* ------------------------------------------------------------ pooling */
typedef struct pool_ctx {
    gf_pool2d_opts opts;
    int rank;            /* of x: 3 or 4 */
    int64_t xs[4], ys[4]; /* pooling input and output sizes */
} pool_ctx;
GF_CTX_FITS(pool_ctx);

static void pool_ctx_fill(gf_node *n, const gf_pool2d_opts *opts, const gf_tensor *x,
                          const gf_tensor *y) {
    pool_ctx *c = GF_NODE_CTX(n, pool_ctx);
    memset(c, 0, sizeof *c);
    c->opts = *opts;
    c->rank = x->rank;
    memcpy(c->xs, x->sizes, sizeof(int64_t) * (size_t)x->rank);
    memcpy(c->ys, y->sizes, sizeof(int64_t) * (size_t)y->rank);
}

/* Zeros of x's shape: the pooling gradients read only x's shape, so x's own
 * gradient through them is zero (as PyTorch). */
static bool pool_x_zeros(const pool_ctx *c, const gf_tensor *g, gf_tensor **slot) {
    return keep(gf_zeros(c->xs, c->rank, gf_tensor_dtype(g), gf_tensor_device(g)), slot);
}

/* y, indices = max_pool2d(x). Edges: x. Saved: indices. */
static gf_status max_pool2d_backward_fn(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const pool_ctx *c = GF_NODE_CTX(n, pool_ctx);
    gf_tensor *idx = NULL;
    gf_status s = gf__ag_unpack(n, 0, &idx);
    if (s != GF_OK) return s;
    gf_tensor *g = grads[0];
    gf_tensor *like = shape_only(c->xs, c->rank, gf_tensor_dtype(g), gf_tensor_device(g));
    gf_scope_begin();
    if (!like || !keep(gf_max_pool2d_backward(g, idx, like, &c->opts), &out[0]))
        s = gf__status();
    gf_scope_end();
    gf_tensor_release(like);
    gf_tensor_release(idx);
    return s;
}

gf_status gf__ag_record_max_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts,
                                   const gf_tensor *indices, gf_tensor *y) {
    if (gf__fw_max_pool2d(x, opts, indices, y) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {x};
    gf_tensor *outs[1] = {y}; /* indices are integers: no gradient */
    gf_node *n = gf__ag_record("MaxPool2DWithIndicesBackward", max_pool2d_backward_fn, ins, 1,
                               outs, 1);
    if (!n) return GF_OK;
    pool_ctx_fill(n, opts, x, y);
    return gf__ag_save(n, 0, indices, false);
}

/* gx = max_pool2d_backward(gy, indices) adds each gy at its argmax, so its
 * adjoint reads gg there: gather over the flattened planes. Edges: grad_y,
 * indices, x (shape only). Saved: indices. */
static gf_status max_pool2d_bw_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const pool_ctx *c = GF_NODE_CTX(n, pool_ctx);
    gf_tensor *gg = grads[0], *idx = NULL;
    bool need_gy = n->next[0].node;
    gf_status s = need_gy ? gf__ag_unpack(n, 0, &idx) : GF_OK;
    if (s != GF_OK) return s;
    gf_scope_begin();
    if (need_gy) {
        int lead = c->rank - 2;
        int64_t fx[4], fi[4];
        memcpy(fx, c->xs, sizeof fx);
        memcpy(fi, c->ys, sizeof fi);
        fx[lead] = c->xs[lead] * c->xs[lead + 1];
        fi[lead] = c->ys[lead] * c->ys[lead + 1];
        gf_tensor *ggf = gf_reshape(gg, fx, lead + 1);
        gf_tensor *idf = gf_reshape(idx, fi, lead + 1);
        gf_tensor *r = gf_gather(ggf, lead, idf);
        if (!keep(r ? gf_reshape(r, c->ys, c->rank) : NULL, &out[0])) s = gf__status();
    }
    if (s == GF_OK && n->next[2].node && !pool_x_zeros(c, gg, &out[2])) s = gf__status();
    gf_scope_end();
    gf_tensor_release(idx);
    return s;
}

gf_status gf__ag_record_max_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *indices,
                                            const gf_tensor *x, const gf_pool2d_opts *opts,
                                            gf_tensor *gx) {
    if (gf__fw_max_pool2d_backward(grad_y, indices, x, opts, gx) != GF_OK) return gf__status();
    const gf_tensor *ins[3] = {grad_y, indices, x};
    gf_tensor *outs[1] = {gx};
    gf_node *n = gf__ag_record("MaxPool2DWithIndicesBackwardBackward", max_pool2d_bw_backward,
                               ins, 3, outs, 1);
    if (!n) return GF_OK;
    pool_ctx_fill(n, opts, x, grad_y);
    return n->next[0].node ? gf__ag_save(n, 0, indices, false) : GF_OK;
}

/* y = avg_pool2d(x). Edges: x. Saves nothing: the gradient needs x's shape only. */
static gf_status avg_pool2d_backward_fn(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const pool_ctx *c = GF_NODE_CTX(n, pool_ctx);
    gf_tensor *g = grads[0];
    gf_tensor *like = shape_only(c->xs, c->rank, gf_tensor_dtype(g), gf_tensor_device(g));
    gf_status s = GF_OK;
    gf_scope_begin();
    if (!like || !keep(gf_avg_pool2d_backward(g, like, &c->opts), &out[0])) s = gf__status();
    gf_scope_end();
    gf_tensor_release(like);
    return s;
}

gf_status gf__ag_record_avg_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts,
                                   gf_tensor *y) {
    if (gf__fw_avg_pool2d(x, opts, y) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {x};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record("AvgPool2DBackward", avg_pool2d_backward_fn, ins, 1, outs, 1);
    if (n) pool_ctx_fill(n, opts, x, y);
    return GF_OK;
}

/* gx = avg_pool2d_backward(gy) is the transpose of the (linear) average, so
 * its adjoint is avg_pool2d with the same divisors. Edges: grad_y, x (shape
 * only). Saves nothing. */
static gf_status avg_pool2d_bw_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const pool_ctx *c = GF_NODE_CTX(n, pool_ctx);
    gf_tensor *gg = grads[0];
    gf_status s = GF_OK;
    gf_scope_begin();
    if (n->next[0].node && !keep(gf_avg_pool2d(gg, &c->opts), &out[0])) s = gf__status();
    if (s == GF_OK && n->next[1].node && !pool_x_zeros(c, gg, &out[1])) s = gf__status();
    gf_scope_end();
    return s;
}

gf_status gf__ag_record_avg_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *x,
                                            const gf_pool2d_opts *opts, gf_tensor *gx) {
    if (gf__fw_avg_pool2d_backward(grad_y, x, opts, gx) != GF_OK) return gf__status();
    const gf_tensor *ins[2] = {grad_y, x};
    gf_tensor *outs[1] = {gx};
    gf_node *n = gf__ag_record("AvgPool2DBackwardBackward", avg_pool2d_bw_backward, ins, 2,
                               outs, 1);
    if (n) pool_ctx_fill(n, opts, x, grad_y);
    return GF_OK;
}

/* ------------------------------------------------------------ normalisation */
/* The input gradient of a normalisation over the dims `red` (keepdim means):
 * rs * (gw - mean(gw) - xhat * mean(gw * xhat)) with gw = g * weight. */
static gf_tensor *norm_input_grad(gf_tensor *gwx, gf_tensor *xhat, gf_tensor *rs,
                                  const int *red, int nred) {
    gf_tensor *a = gf_mean(gwx, red, nred, true);
    gf_tensor *b = gf_mean(gf_mul(gwx, xhat), red, nred, true);
    return gf_mul(rs, gf_sub(gf_sub(gwx, a), gf_mul(xhat, b)));
}

/* The statistics over `red` of x, differentiably (for create_graph, where the
 * gradient formula must see how mean and rstd move with x): *xc = x - mean,
 * *rs = 1 / sqrt(biased var + eps). Inside a scope. */
static void norm_stats(gf_tensor *x, const int *red, int nred, double eps, gf_tensor **xc,
                       gf_tensor **rs) {
    *xc = gf_sub(x, gf_mean(x, red, nred, true));
    *rs = gf_rsqrt(gf_add_scalar(gf_mean(gf_square(*xc), red, nred, true), eps));
}

typedef struct norm_ctx {
    int normalized_rank; /* layer_norm */
    bool training;       /* batch_norm */
    double eps;
} norm_ctx;
GF_CTX_FITS(norm_ctx);

/* The kernel's statistics are constants; when the gradient must itself be
 * differentiable in x, they are recomputed from x with public ops. */
static bool recompute_stats(const gf_tensor *x) {
    /* Also when x carries a tangent: the tangent of the gradient depends on
     * how the statistics move (forward-over-reverse). */
    const gf_tensor *xs[1] = {x};
    return (gf_is_grad_enabled() && gf_tensor_requires_grad(x)) || gf__fw_any_tangent(xs, 1);
}

/* A fused gradient kernel's result carries neither history nor tangent: it
 * may run only when x needs no recomputed statistics and neither the
 * incoming gradient nor the weight carries a tangent (forward-over-reverse
 * seeded on the weight alone, say). */
static bool fused_allowed(gf_tensor *g, gf_tensor *x, gf_tensor *w) {
    const gf_tensor *gw[2] = {g, w};
    return !recompute_stats(x) && !gf__fw_any_tangent(gw, w ? 2 : 1);
}

/* The device's LAYER_NORM_BACKWARD, when it has one for these tensors: one
 * kernel for the three gradients (the composed formula below takes about a
 * dozen passes over x), under the rules of fused_batch_norm_backward below:
 * only when the gradient need not be differentiable; a refused launch
 * composes. False: compose (s untouched); true: *s says how it went. */
static bool fused_layer_norm_backward(gf_tensor *g, gf_tensor *const *sv, int normalized_rank,
                                      const bool need[3], gf_tensor **out, gf_status *s) {
    gf_tensor *x = sv[0], *w = sv[1], *mean = sv[2], *rstd = sv[3];
    if (!x || !mean || !rstd || g->dtype != x->dtype) return false;
    gf_device *dev = x->storage->device;
    if (g->storage->device != dev) return false;
    int outer = x->rank - normalized_rank;
    gf_tensor *r[3] = {gf__empty(x->sizes, x->rank, x->dtype, dev), NULL, NULL};
    if (r[0]) r[1] = gf__empty(x->sizes + outer, normalized_rank, x->dtype, dev);
    if (r[1]) r[2] = gf__empty(x->sizes + outer, normalized_rank, x->dtype, dev);
    const gf_tensor *in[5] = {g, x, mean, rstd, w};
    gfp_layer_norm_params p = {.struct_size = sizeof p, .normalized_rank = normalized_rank};
    bool fused = false;
    if (!r[2]) {
        *s = gf__status();
        fused = true;
    } else if (gf__dev_has_op(GFP_OP_LAYER_NORM_BACKWARD, in, 5, r, 3)) {
        fused = true;
        *s = gf__launch(GFP_OP_LAYER_NORM_BACKWARD, "layer_norm_backward", in, 5, r, 3, &p);
        if (*s == GF_ERR_UNSUPPORTED) fused = false;
        for (int i = 0; i < 3 && *s == GF_OK; i++)
            if (need[i]) {
                out[i] = r[i];
                r[i] = NULL;
            }
    }
    release_all(r, 3);
    return fused;
}

/* y = layer_norm(x, w, b) over the last k dims. Edges: x, weight, bias.
 * Saved: 0 = x, 1 = weight, 2 = mean, 3 = rstd (each only when read). */
static gf_status layer_norm_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const norm_ctx *c = GF_NODE_CTX(n, norm_ctx);
    bool need_x = n->next[0].node, need_w = n->next[1].node, need_b = n->next[2].node;
    gf_tensor *sv[4] = {NULL, NULL, NULL, NULL}; /* x, w, mean, rstd */
    const bool want[4] = {need_x || need_w, need_x, need_x || need_w, need_x || need_w};
    gf_status s = unpack_some(n, want, sv, 4);
    if (s != GF_OK) return s;
    gf_tensor *g = grads[0];
    const bool need[3] = {need_x, need_w, need_b};
    if ((need_x || need_w) && fused_allowed(g, sv[0], sv[1]) &&
        fused_layer_norm_backward(g, sv, c->normalized_rank, need, out, &s)) {
        release_all(sv, 4);
        return s;
    }
    const gf_output_meta *m = &n->outputs[0];
    int rank = m->rank, outer = rank - c->normalized_rank;
    int norm_dims[GF_MAX_RANK], lead_dims[GF_MAX_RANK];
    for (int i = 0; i < c->normalized_rank; i++) norm_dims[i] = outer + i;
    for (int i = 0; i < outer; i++) lead_dims[i] = i;
    gf_scope_begin();
    gf_tensor *xhat = NULL, *rs = NULL;
    if (need_x || need_w) {
        gf_tensor *xc = NULL;
        if (recompute_stats(sv[0])) {
            norm_stats(sv[0], norm_dims, c->normalized_rank, c->eps, &xc, &rs);
        } else {
            int64_t ks[GF_MAX_RANK]; /* x's sizes with the normalised dims as 1 */
            memcpy(ks, m->sizes, sizeof ks);
            for (int i = outer; i < rank; i++) ks[i] = 1;
            xc = gf_sub(sv[0], gf_reshape(sv[2], ks, rank));
            rs = gf_reshape(sv[3], ks, rank);
        }
        xhat = gf_mul(xc, rs);
    }
    if (need_x) {
        gf_tensor *gwx = sv[1] ? gf_mul(g, sv[1]) : g;
        if (!keep(norm_input_grad(gwx, xhat, rs, norm_dims, c->normalized_rank), &out[0]))
            s = gf__status();
    }
    if (s == GF_OK && need_w) {
        gf_tensor *gx = gf_mul(g, xhat);
        if (!keep(outer && gx ? gf_sum(gx, lead_dims, outer, false) : gx, &out[1]))
            s = gf__status();
    }
    if (s == GF_OK && need_b) {
        if (outer == 0) out[2] = gf_tensor_retain(g);
        else if (!keep(gf_sum(g, lead_dims, outer, false), &out[2])) s = gf__status();
    }
    gf_scope_end();
    release_all(sv, 4);
    return s;
}

gf_status gf__ag_record_layer_norm(const gf_tensor *x, int normalized_rank, const gf_tensor *w,
                                   const gf_tensor *b, double eps, const gf_tensor *mean,
                                   const gf_tensor *rstd, gf_tensor *y) {
    if (gf__fw_layer_norm(x, normalized_rank, w, b, eps, y) != GF_OK) return gf__status();
    const gf_tensor *ins[3] = {x, w, b};
    gf_tensor *outs[1] = {y}; /* mean and rstd are not differentiable outputs */
    gf_node *n = gf__ag_record("NativeLayerNormBackward", layer_norm_backward, ins, 3, outs, 1);
    if (!n) return GF_OK;
    *GF_NODE_CTX(n, norm_ctx) = (norm_ctx){.normalized_rank = normalized_rank, .eps = eps};
    bool need_x = n->next[0].node, need_w = n->next[1].node;
    gf_status s = GF_OK;
    if (need_x || need_w) {
        s = gf__ag_save(n, 0, x, false);
        if (s == GF_OK) s = gf__ag_save(n, 2, mean, false);
        if (s == GF_OK) s = gf__ag_save(n, 3, rstd, false);
    }
    if (s == GF_OK && need_x && w) s = gf__ag_save(n, 1, w, false);
    return s;
}

/* The device's BATCH_NORM_BACKWARD, when it has one for these tensors: one
 * kernel for the three gradients of training mode, where the composed
 * formula below takes a dozen passes. Only when the gradient need not itself
 * be differentiable (the kernel's result has no history). A plugin without
 * query_op claims every op: when its launch refuses the op (and no fallback
 * device took it), the formula runs instead. False: compose (s untouched);
 * true: *s says how the kernel went. */
static bool fused_batch_norm_backward(gf_tensor *g, gf_tensor *x, gf_tensor *w, gf_tensor *mean,
                                      gf_tensor *invstd, bool need_w, bool need_b,
                                      gf_tensor **out, gf_status *s) {
    if (!x || !mean || !invstd || g->dtype != x->dtype) return false;
    gf_device *dev = x->storage->device;
    if (g->storage->device != dev) return false;
    int64_t ch = x->sizes[1];
    gf_tensor *r[3] = {gf__empty(x->sizes, x->rank, x->dtype, dev), NULL, NULL};
    if (r[0]) r[1] = gf__empty(&ch, 1, x->dtype, dev);
    if (r[1]) r[2] = gf__empty(&ch, 1, x->dtype, dev);
    const gf_tensor *in[5] = {g, x, mean, invstd, w};
    bool fused = false;
    if (!r[2]) {
        *s = gf__status();
        fused = true;
    } else if (gf__dev_has_op(GFP_OP_BATCH_NORM_BACKWARD, in, 5, r, 3)) {
        fused = true;
        *s = gf__launch(GFP_OP_BATCH_NORM_BACKWARD, "batch_norm_backward", in, 5, r, 3, NULL);
        if (*s == GF_ERR_UNSUPPORTED) fused = false;
        if (*s == GF_OK) {
            out[0] = r[0];
            r[0] = NULL;
            if (need_w) {
                out[1] = r[1];
                r[1] = NULL;
            }
            if (need_b) {
                out[2] = r[2];
                r[2] = NULL;
            }
        }
    }
    release_all(r, 3);
    return fused;
}

/* y = batch_norm(x, w, b) over every dim but the channels (1). Edges: x,
 * weight, bias. Saved (each only when read): 0 = x, 1 = weight, and in
 * training 2 = batch mean, 3 = batch invstd; in evaluation 2 = running_mean,
 * 3 = running_var, which are then constants. The running-stat update is not
 * differentiated. */
static gf_status batch_norm_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const norm_ctx *c = GF_NODE_CTX(n, norm_ctx);
    bool need_x = n->next[0].node, need_w = n->next[1].node, need_b = n->next[2].node;
    gf_tensor *sv[4] = {NULL, NULL, NULL, NULL};
    bool want[4] = {need_x || need_w, need_x, need_x || need_w, need_x || need_w};
    if (!c->training) want[0] = want[2] = need_w;
    gf_status s = unpack_some(n, want, sv, 4);
    if (s != GF_OK) return s;
    gf_tensor *g = grads[0];
    const gf_output_meta *m = &n->outputs[0];
    int rank = m->rank, red[GF_MAX_RANK], nred = 0;
    int64_t cs[GF_MAX_RANK]; /* [1, C, 1, ...]: per-channel values broadcast over x */
    for (int i = 0; i < rank; i++) {
        cs[i] = i == 1 ? m->sizes[1] : 1;
        if (i != 1) red[nred++] = i;
    }
    if (c->training && need_x && fused_allowed(g, sv[0], sv[1]) &&
        fused_batch_norm_backward(g, sv[0], sv[1], sv[2], sv[3], need_w, need_b, out, &s)) {
        release_all(sv, 4);
        return s;
    }
    gf_scope_begin();
    gf_tensor *wv = sv[1] ? gf_reshape(sv[1], cs, rank) : NULL;
    gf_tensor *xhat = NULL, *rs = NULL;
    if (c->training && (need_x || need_w)) {
        gf_tensor *xc = NULL;
        if (recompute_stats(sv[0])) {
            norm_stats(sv[0], red, nred, c->eps, &xc, &rs);
        } else {
            xc = gf_sub(sv[0], gf_reshape(sv[2], cs, rank));
            rs = gf_reshape(sv[3], cs, rank);
        }
        xhat = gf_mul(xc, rs);
        if (need_x) {
            gf_tensor *gwx = wv ? gf_mul(g, wv) : g;
            if (!keep(norm_input_grad(gwx, xhat, rs, red, nred), &out[0])) s = gf__status();
        }
    } else if (!c->training && (need_x || need_w)) {
        rs = gf_rsqrt(gf_add_scalar(gf_reshape(sv[3], cs, rank), c->eps));
        if (need_x && !keep(gf_mul(g, wv ? gf_mul(wv, rs) : rs), &out[0])) s = gf__status();
        if (need_w) xhat = gf_mul(gf_sub(sv[0], gf_reshape(sv[2], cs, rank)), rs);
    }
    if (s == GF_OK && need_w && !keep(gf_sum(gf_mul(g, xhat), red, nred, false), &out[1]))
        s = gf__status();
    if (s == GF_OK && need_b && !keep(gf_sum(g, red, nred, false), &out[2])) s = gf__status();
    gf_scope_end();
    release_all(sv, 4);
    return s;
}

gf_status gf__ag_record_batch_norm(const gf_tensor *x, const gf_tensor *w, const gf_tensor *b,
                                   const gf_tensor *running_mean, const gf_tensor *running_var,
                                   bool training, double eps, const gf_tensor *save_mean,
                                   const gf_tensor *save_invstd, gf_tensor *y) {
    if (gf__fw_batch_norm(x, w, b, running_mean, running_var, training, eps, y) != GF_OK) return gf__status();
    const gf_tensor *ins[3] = {x, w, b};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record("NativeBatchNormBackward", batch_norm_backward, ins, 3, outs, 1);
    if (!n) return GF_OK;
    *GF_NODE_CTX(n, norm_ctx) = (norm_ctx){.training = training, .eps = eps};
    bool need_x = n->next[0].node, need_w = n->next[1].node;
    gf_status s = GF_OK;
    if (training && (need_x || need_w)) {
        s = gf__ag_save(n, 0, x, false);
        if (s == GF_OK) s = gf__ag_save(n, 2, save_mean, false);
        if (s == GF_OK) s = gf__ag_save(n, 3, save_invstd, false);
    } else if (!training) {
        if (need_w) s = gf__ag_save(n, 0, x, false);
        if (s == GF_OK && need_w) s = gf__ag_save(n, 2, running_mean, false);
        if (s == GF_OK && (need_x || need_w)) s = gf__ag_save(n, 3, running_var, false);
    }
    if (s == GF_OK && need_x && w) s = gf__ag_save(n, 1, w, false);
    return s;
}
