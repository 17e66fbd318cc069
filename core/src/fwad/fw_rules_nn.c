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
 *
 * Batched tangents (a leading batch dim, fw_internal.h) fold into the
 * image dim of convolution and pooling, or into the channels where a
 * gradient kernel sums over the images; a grouped convolution whose weight
 * part cannot fold runs once per batch entry.
 *   layer_norm, batch_norm (training): with xhat = (x - mean) * rstd over
 *                        the normalised dims, dxhat = rstd * (tc - xhat *
 *                        mean(xhat * tc)), tc = t - mean(t); then
 *                        dy = dxhat * w + xhat * tw + tb
 *   batch_norm (evaluation): the running statistics are constants:
 *                        dxhat = t * rsqrt(running_var + eps) */
#include <stdlib.h>
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

typedef gf_tensor *(*conv_plain_fn)(const conv_p *, gf_tensor *const *, gf_tensor *const *);
static gf_tensor *conv_per_entry(conv_plain_fn fn, const conv_p *p, gf_tensor *const *x,
                                 gf_tensor *const *t, gf_tensor *y, int64_t batch);

/* conv2d(x, tw): the weight's part of the plain rule (x[0] = x). */
static gf_tensor *conv_w_plain(const conv_p *p, gf_tensor *const *x, gf_tensor *const *t) {
    return gf_conv2d(x[0], t[1], NULL, opts_of(p));
}

/* Batched: the input's tangent [B, N, C, H, W] folded into the image dim,
 * the weight's [B, O, C/g, kh, kw] into the output channels (groups = 1,
 * where each output channel reads every input channel; grouped, one
 * convolution per batch entry). */
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
    if (t[1] && p->has_opts && p->opts.groups > 1) {
        /* grouped: one convolution per batch entry, stacked */
        const gf_tensor *xw[2] = {x[0], NULL};
        gf_tensor *b = conv_per_entry(conv_w_plain, p, (gf_tensor *const *)xw,
                                      (gf_tensor *const[]){NULL, t[1]}, y, batch);
        if (!b) return NULL;
        r = r ? gf_add(r, b) : b;
    } else if (t[1]) {
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

/* The plain rules of the two gradient kernels, for explicit tangents. */
static gf_tensor *conv_bwi_plain(const conv_p *p, gf_tensor *const *x, gf_tensor *const *t) {
    gf_tensor *a = t[0] ? gf_conv2d_backward_input(t[0], x[1], p->sizes, opts_of(p)) : NULL;
    gf_tensor *b = t[1] ? gf_conv2d_backward_input(x[0], t[1], p->sizes, opts_of(p)) : NULL;
    return sum2(a, b, t[0] != NULL, t[1] != NULL);
}

static gf_tensor *conv_bww_plain(const conv_p *p, gf_tensor *const *x, gf_tensor *const *t) {
    gf_tensor *a = t[0] ? gf_conv2d_backward_weight(t[0], x[1], p->sizes, opts_of(p)) : NULL;
    gf_tensor *b = t[1] ? gf_conv2d_backward_weight(x[0], t[1], p->sizes, opts_of(p)) : NULL;
    return sum2(a, b, t[0] != NULL, t[1] != NULL);
}

/* The batched tangent by the plain rule, one batch entry at a time, the
 * results stacked: for what no reshape folds (grouped convolutions). */
static gf_tensor *conv_per_entry(conv_plain_fn fn, const conv_p *p, gf_tensor *const *x,
                                 gf_tensor *const *t, gf_tensor *y, int64_t batch) {
    if (batch > INT32_MAX) {
        gf__fw_batch_refuse(-1, "a convolution gradient kernel (batch too large)");
        return NULL;
    }
    gf_tensor *parts[64], **pp = batch <= 64 ? parts : calloc((size_t)batch, sizeof *pp);
    if (!pp) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "forward AD: out of host memory");
        return NULL;
    }
    gf_tensor *r = NULL;
    bool ok = true;
    for (int64_t k = 0; ok && k < batch; k++) {
        gf_tensor *tk[2] = {t[0] ? gf_select(t[0], 0, k) : NULL,
                            t[1] ? gf_select(t[1], 0, k) : NULL};
        pp[k] = fn(p, x, tk);
        if (!pp[k]) pp[k] = gf_zeros_like(y);
        ok = pp[k] != NULL;
    }
    if (ok) r = gf_stack(pp, (int)batch, 0);
    if (pp != parts) free(pp);
    return r;
}

/* Batched, x: grad_y [N, Co, H', W'], w [Co, Ci/g, kh, kw]; gx [N, Ci, H,
 * W] = p->sizes. A grad_y tangent [B, N, ...] folds into the images; a
 * weight tangent [B, Co, Ci, ...] (groups = 1) into the input channels:
 * w' [Co, B * Ci, kh, kw] gives gx' [N, B * Ci, H, W]. */
static gf_tensor *conv_bwi_batched(const conv_p *p, gf_tensor *const *x, gf_tensor *const *t,
                                   gf_tensor *y, int64_t batch) {
    const int64_t *is = p->sizes, *gs = gf_tensor_sizes(x[0]), *ws = gf_tensor_sizes(x[1]);
    int64_t b5[5] = {batch, is[0], is[1], is[2], is[3]};
    if (t[1] && p->has_opts && p->opts.groups > 1)
        return conv_per_entry(conv_bwi_plain, p, x, t, y, batch);
    gf_tensor *r = NULL;
    if (t[0]) {
        int64_t f[4] = {batch * gs[0], gs[1], gs[2], gs[3]};
        int64_t s4[4] = {batch * is[0], is[1], is[2], is[3]};
        gf_tensor *g = gf_reshape(t[0], f, 4);
        r = gf_reshape(gf_conv2d_backward_input(g, x[1], s4, opts_of(p)), b5, 5);
        if (!r) return NULL;
    }
    if (t[1]) {
        int64_t w4[4] = {ws[0], batch * ws[1], ws[2], ws[3]};
        int64_t s4[4] = {is[0], batch * is[1], is[2], is[3]};
        int64_t s5[5] = {is[0], batch, is[1], is[2], is[3]};
        gf_tensor *w2 = gf_reshape(gf_permute(t[1], (const int[]){1, 0, 2, 3, 4}, 5), w4, 4);
        gf_tensor *c = gf_conv2d_backward_input(x[0], w2, s4, opts_of(p));
        c = gf_transpose(gf_reshape(c, s5, 5), 0, 1);
        if (!c) return NULL;
        r = r ? gf_add(r, c) : c;
    }
    return r;
}

/* Batched, x: grad_y [N, Co, H', W'], x [N, Ci, H, W]; gw [Co, Ci, kh, kw]
 * = p->sizes (groups = 1). A grad_y tangent [B, N, Co, ...] folds into the
 * output channels: gy' [N, B * Co, ...] gives gw' [B * Co, Ci, ...]; an x
 * tangent [B, N, Ci, ...] into the input channels: gw' [Co, B * Ci, ...]. */
static gf_tensor *conv_bww_batched(const conv_p *p, gf_tensor *const *x, gf_tensor *const *t,
                                   gf_tensor *y, int64_t batch) {
    const int64_t *wz = p->sizes, *gs = gf_tensor_sizes(x[0]), *xs = gf_tensor_sizes(x[1]);
    if (p->has_opts && p->opts.groups > 1)
        return conv_per_entry(conv_bww_plain, p, x, t, y, batch);
    static const int swap01[5] = {1, 0, 2, 3, 4};
    int64_t b5[5] = {batch, wz[0], wz[1], wz[2], wz[3]};
    gf_tensor *r = NULL;
    if (t[0]) {
        int64_t g4[4] = {gs[0], batch * gs[1], gs[2], gs[3]};
        int64_t w4[4] = {batch * wz[0], wz[1], wz[2], wz[3]};
        gf_tensor *g2 = gf_reshape(gf_permute(t[0], swap01, 5), g4, 4);
        r = gf_reshape(gf_conv2d_backward_weight(g2, x[1], w4, opts_of(p)), b5, 5);
        if (!r) return NULL;
    }
    if (t[1]) {
        int64_t x4[4] = {xs[0], batch * xs[1], xs[2], xs[3]};
        int64_t w4[4] = {wz[0], batch * wz[1], wz[2], wz[3]};
        int64_t s5[5] = {wz[0], batch, wz[1], wz[2], wz[3]};
        gf_tensor *x2 = gf_reshape(gf_permute(t[1], swap01, 5), x4, 4);
        gf_tensor *c = gf_conv2d_backward_weight(x[0], x2, w4, opts_of(p));
        c = gf_transpose(gf_reshape(c, s5, 5), 0, 1);
        if (!c) return NULL;
        r = r ? gf_add(r, c) : c;
    }
    return r;
}

/* x: grad_y, w. */
static gf_tensor *conv_bwi_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                gf_tensor *const *y, int j) {
    (void)j;
    int64_t batch = gf__fw_rule_batch();
    if (batch) return conv_bwi_batched(pv, x, t, y[0], batch);
    return conv_bwi_plain(pv, x, t);
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
    return gf__fw_apply_batched("conv2d_backward_input", conv_bwi_rule, &p, xs, 2, ys, 1, false);
}

/* x: grad_y, x. */
static gf_tensor *conv_bww_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                gf_tensor *const *y, int j) {
    (void)j;
    int64_t batch = gf__fw_rule_batch();
    if (batch) return conv_bww_batched(pv, x, t, y[0], batch);
    return conv_bww_plain(pv, x, t);
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
    return gf__fw_apply_batched("conv2d_backward_weight", conv_bww_rule, &p, xs, 2, ys, 1, false);
}

/* ------------------------------------------------------------ pooling */
typedef struct pool_p {
    gf_pool2d_opts opts;
    const gf_tensor *indices;
} pool_p;

/* Batched pooling: a tangent [B, *x] with x [N, C, H, W] is folded into
 * the images ([B * N, C, H, W]); with x [C, H, W] it is already a batch of
 * images [B, C, H, W]. The gradient kernels read x for its shape only: a
 * stride-0 tensor of the folded shape stands in for it. */
static gf_tensor *fold(gf_tensor *t, int xrank, int64_t batch) {
    if (xrank == 3) return t;
    const int64_t *ts = gf_tensor_sizes(t);
    int64_t f[4] = {batch * ts[1], ts[2], ts[3], ts[4]};
    return gf_reshape(t, f, 4);
}

/* r [B * N, C, h, w] (or [B, C, h, w]) as [B, *like] (like's rank 3 or 4). */
static gf_tensor *unfold_batch(gf_tensor *r, const gf_tensor *like, int64_t batch) {
    int lr = gf_tensor_rank(like);
    int64_t s[5];
    s[0] = batch;
    memcpy(s + 1, gf_tensor_sizes(like), sizeof(int64_t) * (size_t)lr);
    return gf_reshape(r, s, lr + 1);
}

/* A stand-in of x's dtype and device with x's sizes, the batch folded in. */
static gf_tensor *shape_of_folded(const gf_tensor *x, int64_t batch) {
    int xr = gf_tensor_rank(x);
    const int64_t *xs = gf_tensor_sizes(x);
    int64_t one[4] = {1, 1, 1, 1}, s[4];
    if (xr == 3) {
        s[0] = batch;
        memcpy(s + 1, xs, sizeof(int64_t) * 3);
    } else {
        memcpy(s, xs, sizeof s);
        s[0] *= batch;
    }
    return gf_expand(gf_zeros(one, 4, gf_tensor_dtype(x), gf_tensor_device(x)), s, 4);
}

/* idx ([*y], i64) as the folded [B * N, C, h, w] (or [B, C, h, w]). */
static gf_tensor *indices_folded(const gf_tensor *idx, int64_t batch) {
    int r = gf_tensor_rank(idx);
    int64_t s[5];
    s[0] = batch;
    memcpy(s + 1, gf_tensor_sizes(idx), sizeof(int64_t) * (size_t)r);
    int64_t lead[5] = {1, 1, 1, 1, 1};
    memcpy(lead + 1, gf_tensor_sizes(idx), sizeof(int64_t) * (size_t)r);
    gf_tensor *e = gf_expand(gf_reshape((gf_tensor *)idx, lead, r + 1), s, r + 1);
    return fold(e, r, batch);
}

/* The tangent at each window's argmax: a gather over the flattened planes
 * (batched: the indices broadcast over the batch dim). */
static gf_tensor *max_pool_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                gf_tensor *const *y, int j) {
    const pool_p *p = pv;
    (void)x, (void)j;
    int64_t batch = gf__fw_rule_batch();
    int rank = gf_tensor_rank(t[0]), lead = rank - 2, yr = gf_tensor_rank(y[0]);
    int64_t fx[5], fi[5];
    memcpy(fx, gf_tensor_sizes(t[0]), sizeof(int64_t) * (size_t)rank);
    fx[lead] *= fx[lead + 1];
    gf_tensor *idx = (gf_tensor *)p->indices;
    if (batch) {
        fi[0] = 1;
        memcpy(fi + 1, gf_tensor_sizes(y[0]), sizeof(int64_t) * (size_t)yr);
        idx = gf_reshape(idx, fi, yr + 1);
        fi[0] = batch;
        idx = gf_expand(idx, fi, yr + 1);
    } else {
        memcpy(fi, gf_tensor_sizes(y[0]), sizeof(int64_t) * (size_t)yr);
    }
    fi[lead] *= fi[lead + 1];
    gf_tensor *r = gf_gather(gf_reshape(t[0], fx, lead + 1), lead, gf_reshape(idx, fi, lead + 1));
    if (!batch) return gf_reshape(r, gf_tensor_sizes(y[0]), rank);
    return unfold_batch(r, y[0], batch);
}

gf_status gf__fw_max_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts,
                            const gf_tensor *indices, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    pool_p p = {*opts, indices};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("max_pool2d", max_pool_rule, &p, xs, 1, ys, 1, false);
}

/* x: grad_y, indices, x (its shape only: no tangent flows from it). */
static gf_tensor *max_pool_bw_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                   gf_tensor *const *y, int j) {
    const pool_p *p = pv;
    (void)j;
    if (!t[0]) return NULL;
    int64_t batch = gf__fw_rule_batch();
    if (!batch) return gf_max_pool2d_backward(t[0], x[1], x[2], &p->opts);
    int xr = gf_tensor_rank(x[2]);
    gf_tensor *r = gf_max_pool2d_backward(fold(t[0], xr, batch), indices_folded(x[1], batch),
                                          shape_of_folded(x[2], batch), &p->opts);
    return unfold_batch(r, y[0], batch);
}

gf_status gf__fw_max_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *indices,
                                     const gf_tensor *x, const gf_pool2d_opts *opts,
                                     gf_tensor *gx) {
    if (!gf__fw_enabled()) return GF_OK;
    pool_p p = {*opts, indices};
    const gf_tensor *xs[3] = {grad_y, indices, x};
    gf_tensor *ys[1] = {gx};
    return gf__fw_apply_batched("max_pool2d_backward", max_pool_bw_rule, &p, xs, 3, ys, 1, false);
}

static gf_tensor *avg_pool_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                gf_tensor *const *y, int j) {
    const pool_p *p = pv;
    (void)j;
    int64_t batch = gf__fw_rule_batch();
    if (!batch) return gf_avg_pool2d(t[0], &p->opts);
    gf_tensor *r = gf_avg_pool2d(fold(t[0], gf_tensor_rank(x[0]), batch), &p->opts);
    return unfold_batch(r, y[0], batch);
}

gf_status gf__fw_avg_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    pool_p p = {*opts, NULL};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("avg_pool2d", avg_pool_rule, &p, xs, 1, ys, 1, false);
}

/* x: grad_y, x (shape only). */
static gf_tensor *avg_pool_bw_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                   gf_tensor *const *y, int j) {
    const pool_p *p = pv;
    (void)j;
    if (!t[0]) return NULL;
    int64_t batch = gf__fw_rule_batch();
    if (!batch) return gf_avg_pool2d_backward(t[0], x[1], &p->opts);
    int xr = gf_tensor_rank(x[1]);
    gf_tensor *r = gf_avg_pool2d_backward(fold(t[0], xr, batch), shape_of_folded(x[1], batch),
                                          &p->opts);
    return unfold_batch(r, y[0], batch);
}

gf_status gf__fw_avg_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *x,
                                     const gf_pool2d_opts *opts, gf_tensor *gx) {
    if (!gf__fw_enabled()) return GF_OK;
    pool_p p = {*opts, NULL};
    const gf_tensor *xs[2] = {grad_y, x};
    gf_tensor *ys[1] = {gx};
    return gf__fw_apply_batched("avg_pool2d_backward", avg_pool_bw_rule, &p, xs, 2, ys, 1, false);
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
