/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_rules_nn.c — jvp rules of convolution, pooling and normalisation.
 *
 *   conv2d(x, w) + b     conv2d(tx, w) + conv2d(x, tw) + tb (bilinear)
 *   conv2d_backward_input(gy, w), conv2d_backward_weight(gy, x): bilinear
 *                        likewise, so tangents flow through a backward pass
 *                        recorded with history (forward-over-reverse)
 *   max_pool2d           the tangent gathered at the argmax indices
 *   max_pool2d_backward, avg_pool2d, avg_pool2d_backward: linear in their
 *                        gradient / input: the same op on the tangent
 *   layer_norm, batch_norm (training): with xhat = (x - mean) * rstd over
 *                        the normalised dims, dxhat = rstd * (tc - xhat *
 *                        mean(xhat * tc)), tc = t - mean(t); then
 *                        dy = dxhat * w + xhat * tw + tb
 *   batch_norm (evaluation): the running statistics are constants:
 *                        dxhat = t * rsqrt(running_var + eps) */
#include <string.h>

#include "autograd/ag_internal.h"
#include "fw_internal.h"

/* ------------------------------------------------------------ convolution */
typedef struct conv_p {
    gf_conv2d_opts opts;
    bool has_opts;
    int64_t sizes[4]; /* the input sizes (backward_input) or weight sizes (backward_weight) */
} conv_p;

static const gf_conv2d_opts *opts_of(const conv_p *p) { return p->has_opts ? &p->opts : NULL; }

static gf_tensor *sum2(gf_tensor *a, gf_tensor *b, bool want_a, bool want_b) {
    if ((want_a && !a) || (want_b && !b)) return NULL;
    return a && b ? gf_add(a, b) : a ? a : b;
}

/* Batched: the input's tangent [B, N, C, H, W] folded into the image dim,
 * the weight's [B, O, C/g, kh, kw] into the output channels (groups = 1,
 * where each output channel reads every input channel). */
static gf_tensor *conv_rule_batched(const conv_p *p, gf_tensor *const *x, gf_tensor *const *t,
                                    gf_tensor *y, int64_t batch) {
    int yr = gf_tensor_rank(y);
    const int64_t *ys = gf_tensor_sizes(y);
    int64_t bs[GF_MAX_RANK + 1];
    bs[0] = batch;
    memcpy(bs + 1, ys, sizeof(int64_t) * (size_t)yr);
    gf_tensor *r = NULL;
    if (t[0]) {
        gf_tensor *tx = t[0];
        if (yr == 4) {
            int64_t fs[4] = {batch * gf_tensor_size(x[0], 0), gf_tensor_size(x[0], 1),
                             gf_tensor_size(x[0], 2), gf_tensor_size(x[0], 3)};
            tx = gf_reshape(tx, fs, 4);
        }
        r = gf_reshape(gf_conv2d(tx, x[1], NULL, opts_of(p)), bs, yr + 1);
        if (!r) return NULL;
    }
    if (t[1]) {
        if (p->has_opts && p->opts.groups > 1) {
            gf__fw_batch_refuse(-1, "conv2d (a batched weight tangent with groups > 1)");
            return NULL;
        }
        int64_t o = gf_tensor_size(x[1], 0);
        int64_t ws[4] = {batch * o, gf_tensor_size(x[1], 1), gf_tensor_size(x[1], 2),
                         gf_tensor_size(x[1], 3)};
        gf_tensor *c = gf_conv2d(x[0], gf_reshape(t[1], ws, 4), NULL, opts_of(p));
        /* [N, B*O, H', W'] (or [B*O, H', W']) to [B, N, O, H', W'] */
        gf_tensor *b;
        if (yr == 4) {
            int64_t s5[5] = {ys[0], batch, o, ys[2], ys[3]};
            b = gf_transpose(gf_reshape(c, s5, 5), 0, 1);
        } else {
            int64_t s4[4] = {batch, o, ys[1], ys[2]};
            b = gf_reshape(c, s4, 4);
        }
        if (!b) return NULL;
        r = r ? gf_add(r, b) : b;
    }
    if (t[2]) {
        int64_t cs[5] = {batch, 1, 1, 1, 1};
        cs[yr == 4 ? 2 : 1] = gf_tensor_size(x[2], 0);
        gf_tensor *tb = gf_reshape(t[2], cs, yr + 1);
        if (!tb || ((t[0] || t[1]) && !r)) return NULL;
        r = r ? gf_add(r, tb) : gf_expand(tb, bs, yr + 1);
    }
    return r;
}

/* x: x, w, bias. */
static gf_tensor *conv_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                            gf_tensor *const *y, int j) {
    const conv_p *p = pv;
    (void)j;
    int64_t batch = gf__fw_rule_batch();
    if (batch) return conv_rule_batched(p, x, t, y[0], batch);
    gf_tensor *a = t[0] ? gf_conv2d(t[0], x[1], NULL, opts_of(p)) : NULL;
    gf_tensor *b = t[1] ? gf_conv2d(x[0], t[1], NULL, opts_of(p)) : NULL;
    gf_tensor *r = sum2(a, b, t[0] != NULL, t[1] != NULL);
    if (t[2]) {
        /* the bias [C] broadcasts over the channel dim of y */
        int rank = gf_tensor_rank(y[0]);
        int64_t bs[4] = {gf_tensor_size(t[2], 0), 1, 1, 1};
        gf_tensor *tb = gf_reshape(t[2], bs, rank - (rank == 4 ? 1 : 0));
        if (!tb || ((t[0] || t[1]) && !r)) return NULL;
        r = r ? gf_add(r, tb) : gf_expand(tb, gf_tensor_sizes(y[0]), rank);
    }
    return r;
}

gf_status gf__fw_conv2d(const gf_tensor *x, const gf_tensor *w, const gf_tensor *bias,
                        const gf_conv2d_opts *opts, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    conv_p p;
    memset(&p, 0, sizeof p);
    if (opts) p.opts = *opts;
    p.has_opts = opts != NULL;
    const gf_tensor *xs[3] = {x, w, bias};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("conv2d", conv_rule, &p, xs, 3, ys, 1, false);
}

/* x: grad_y, w. */
static gf_tensor *conv_bwi_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                gf_tensor *const *y, int j) {
    const conv_p *p = pv;
    (void)y, (void)j;
    gf_tensor *a = t[0] ? gf_conv2d_backward_input(t[0], x[1], p->sizes, opts_of(p)) : NULL;
    gf_tensor *b = t[1] ? gf_conv2d_backward_input(x[0], t[1], p->sizes, opts_of(p)) : NULL;
    return sum2(a, b, t[0] != NULL, t[1] != NULL);
}

gf_status gf__fw_conv2d_backward_input(const gf_tensor *grad_y, const gf_tensor *w,
                                       const int64_t *input_sizes, const gf_conv2d_opts *opts,
                                       gf_tensor *gx) {
    if (!gf__fw_enabled()) return GF_OK;
    conv_p p;
    memset(&p, 0, sizeof p);
    if (opts) p.opts = *opts;
    p.has_opts = opts != NULL;
    memcpy(p.sizes, input_sizes, sizeof p.sizes);
    const gf_tensor *xs[2] = {grad_y, w};
    gf_tensor *ys[1] = {gx};
    return gf__fw_apply("conv2d_backward_input", conv_bwi_rule, &p, xs, 2, ys, 1, false);
}

/* x: grad_y, x. */
static gf_tensor *conv_bww_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                gf_tensor *const *y, int j) {
    const conv_p *p = pv;
    (void)y, (void)j;
    gf_tensor *a = t[0] ? gf_conv2d_backward_weight(t[0], x[1], p->sizes, opts_of(p)) : NULL;
    gf_tensor *b = t[1] ? gf_conv2d_backward_weight(x[0], t[1], p->sizes, opts_of(p)) : NULL;
    return sum2(a, b, t[0] != NULL, t[1] != NULL);
}

gf_status gf__fw_conv2d_backward_weight(const gf_tensor *grad_y, const gf_tensor *x,
                                        const int64_t *weight_sizes, const gf_conv2d_opts *opts,
                                        gf_tensor *gw) {
    if (!gf__fw_enabled()) return GF_OK;
    conv_p p;
    memset(&p, 0, sizeof p);
    if (opts) p.opts = *opts;
    p.has_opts = opts != NULL;
    memcpy(p.sizes, weight_sizes, sizeof p.sizes);
    const gf_tensor *xs[2] = {grad_y, x};
    gf_tensor *ys[1] = {gw};
    return gf__fw_apply("conv2d_backward_weight", conv_bww_rule, &p, xs, 2, ys, 1, false);
}

/* ------------------------------------------------------------ pooling */
typedef struct pool_p {
    gf_pool2d_opts opts;
    const gf_tensor *indices;
} pool_p;

/* The tangent at each window's argmax: a gather over the flattened planes. */
static gf_tensor *max_pool_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                gf_tensor *const *y, int j) {
    const pool_p *p = pv;
    (void)x, (void)j;
    int rank = gf_tensor_rank(t[0]), lead = rank - 2;
    int64_t fx[4], fi[4];
    memcpy(fx, gf_tensor_sizes(t[0]), sizeof(int64_t) * (size_t)rank);
    memcpy(fi, gf_tensor_sizes(y[0]), sizeof(int64_t) * (size_t)rank);
    fx[lead] *= fx[lead + 1];
    fi[lead] *= fi[lead + 1];
    gf_tensor *r = gf_gather(gf_reshape(t[0], fx, lead + 1), lead,
                             gf_reshape((gf_tensor *)p->indices, fi, lead + 1));
    return gf_reshape(r, gf_tensor_sizes(y[0]), rank);
}

gf_status gf__fw_max_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts,
                            const gf_tensor *indices, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    pool_p p = {*opts, indices};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply("max_pool2d", max_pool_rule, &p, xs, 1, ys, 1, false);
}

/* x: grad_y, indices, x (its shape only: no tangent flows from it). */
static gf_tensor *max_pool_bw_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                   gf_tensor *const *y, int j) {
    const pool_p *p = pv;
    (void)y, (void)j;
    if (!t[0]) return NULL;
    return gf_max_pool2d_backward(t[0], x[1], x[2], &p->opts);
}

gf_status gf__fw_max_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *indices,
                                     const gf_tensor *x, const gf_pool2d_opts *opts,
                                     gf_tensor *gx) {
    if (!gf__fw_enabled()) return GF_OK;
    pool_p p = {*opts, indices};
    const gf_tensor *xs[3] = {grad_y, indices, x};
    gf_tensor *ys[1] = {gx};
    return gf__fw_apply("max_pool2d_backward", max_pool_bw_rule, &p, xs, 3, ys, 1, false);
}

static gf_tensor *avg_pool_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                gf_tensor *const *y, int j) {
    const pool_p *p = pv;
    (void)x, (void)y, (void)j;
    return gf_avg_pool2d(t[0], &p->opts);
}

gf_status gf__fw_avg_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    pool_p p = {*opts, NULL};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply("avg_pool2d", avg_pool_rule, &p, xs, 1, ys, 1, false);
}

/* x: grad_y, x (shape only). */
static gf_tensor *avg_pool_bw_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                   gf_tensor *const *y, int j) {
    const pool_p *p = pv;
    (void)y, (void)j;
    if (!t[0]) return NULL;
    return gf_avg_pool2d_backward(t[0], x[1], &p->opts);
}

gf_status gf__fw_avg_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *x,
                                     const gf_pool2d_opts *opts, gf_tensor *gx) {
    if (!gf__fw_enabled()) return GF_OK;
    pool_p p = {*opts, NULL};
    const gf_tensor *xs[2] = {grad_y, x};
    gf_tensor *ys[1] = {gx};
    return gf__fw_apply("avg_pool2d_backward", avg_pool_bw_rule, &p, xs, 2, ys, 1, false);
}

/* ------------------------------------------------------------ normalisation */
typedef struct norm_p {
    bool layer;     /* layer_norm: normalised over the last k dims */
    int k;
    bool training;  /* batch_norm */
    double eps;
    const gf_tensor *running_mean, *running_var;
} norm_p;

/* The tangent of a normalisation: the statistics over x's dims red; the
 * tangents' own reduced dims tred, their per-feature shape tcs and their
 * full shape txs (trank dims): x's for plain tangents, with a leading batch
 * dim for batched ones [B, *x]. */
static gf_tensor *norm_tangent(const norm_p *p, gf_tensor *const *x, gf_tensor *const *t,
                               const int *red, const int *tred, int nred, const int64_t *cs,
                               const int64_t *tcs, const int64_t *txs, int trank) {
    int rank = gf_tensor_rank(x[0]);
    gf_tensor *xhat, *dxhat = NULL;
    if (p->layer || p->training) {
        gf_tensor *xc = gf_sub(x[0], gf_mean(x[0], red, nred, true));
        gf_tensor *rs = gf_rsqrt(gf_add_scalar(gf_mean(gf_square(xc), red, nred, true), p->eps));
        xhat = gf_mul(xc, rs);
        if (t[0]) {
            gf_tensor *tc = gf_sub(t[0], gf_mean(t[0], tred, nred, true));
            dxhat = gf_mul(rs, gf_sub(tc, gf_mul(xhat, gf_mean(gf_mul(xhat, tc), tred, nred, true))));
        }
    } else {
        gf_tensor *rs = gf_rsqrt(gf_add_scalar(
            gf_reshape((gf_tensor *)p->running_var, cs, rank), p->eps));
        xhat = gf_mul(gf_sub(x[0], gf_reshape((gf_tensor *)p->running_mean, cs, rank)), rs);
        if (t[0]) dxhat = gf_mul(t[0], rs);
    }
    if (!xhat || (t[0] && !dxhat)) return NULL;
    gf_tensor *r = NULL;
    if (dxhat) r = x[1] ? gf_mul(dxhat, gf_reshape(x[1], cs, rank)) : dxhat;
    if (t[1]) {
        gf_tensor *part = gf_mul(xhat, gf_reshape(t[1], tcs, trank));
        r = r ? gf_add(r, part) : part;
    }
    if (t[2]) {
        gf_tensor *part = gf_reshape(t[2], tcs, trank);
        r = r ? gf_add(r, part) : gf_expand(part, txs, trank);
    }
    return r;
}

/* Batched tangents [B, *x]: the statistics' dims shifted past the batch
 * dim, per-feature tangents [B, *feature] reshaped to [B, *cs]. */
static gf_tensor *norm_rule_batched(const norm_p *p, gf_tensor *const *x, gf_tensor *const *t,
                                    const int *red, int nred, const int64_t *cs, int64_t batch) {
    int rank = gf_tensor_rank(x[0]), tred[GF_MAX_RANK];
    if (rank + 1 > GF_MAX_RANK) {
        gf__fw_batch_refuse(-1, p->layer ? "layer_norm" : "batch_norm");
        return NULL;
    }
    int64_t bcs[GF_MAX_RANK + 1], bxs[GF_MAX_RANK + 1];
    bcs[0] = bxs[0] = batch;
    memcpy(bcs + 1, cs, sizeof(int64_t) * (size_t)rank);
    memcpy(bxs + 1, gf_tensor_sizes(x[0]), sizeof(int64_t) * (size_t)rank);
    for (int i = 0; i < nred; i++) tred[i] = red[i] + 1;
    return norm_tangent(p, x, t, red, tred, nred, cs, bcs, bxs, rank + 1);
}

/* x: x, weight, bias. */
static gf_tensor *norm_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                            gf_tensor *const *y, int j) {
    const norm_p *p = pv;
    (void)y, (void)j;
    int rank = gf_tensor_rank(x[0]), red[GF_MAX_RANK], nred = 0;
    int64_t cs[GF_MAX_RANK]; /* the shape per-feature values broadcast in */
    const int64_t *xs = gf_tensor_sizes(x[0]);
    for (int i = 0; i < rank; i++) {
        bool reduced = p->layer ? i >= rank - p->k : i != 1;
        if (reduced) red[nred++] = i;
        cs[i] = p->layer ? (reduced ? xs[i] : 1) : (i == 1 ? xs[1] : 1);
    }
    int64_t batch = gf__fw_rule_batch();
    if (batch) return norm_rule_batched(p, x, t, red, nred, cs, batch);
    return norm_tangent(p, x, t, red, red, nred, cs, cs, xs, rank);
}

gf_status gf__fw_layer_norm(const gf_tensor *x, int normalized_rank, const gf_tensor *w,
                            const gf_tensor *b, double eps, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    norm_p p = {.layer = true, .k = normalized_rank, .eps = eps};
    const gf_tensor *xs[3] = {x, w, b};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("layer_norm", norm_rule, &p, xs, 3, ys, 1, false);
}

gf_status gf__fw_batch_norm(const gf_tensor *x, const gf_tensor *w, const gf_tensor *b,
                            const gf_tensor *running_mean, const gf_tensor *running_var,
                            bool training, double eps, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    norm_p p = {.layer = false, .training = training || !running_mean || !running_var,
                .eps = eps, .running_mean = running_mean, .running_var = running_var};
    const gf_tensor *xs[3] = {x, w, b};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("batch_norm", norm_rule, &p, xs, 3, ys, 1, false);
}
