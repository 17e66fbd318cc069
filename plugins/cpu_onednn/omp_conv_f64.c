/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_conv_f64.c — CONV2D and both gradients in f64 (oneDNN 2.x has no f64
 * convolution): im2col and the blocked GEMM of omp_gemm.c.
 *
 * A chunk of images is unfolded at once into a "column" buffer laid out
 * channel-major over the chunk, col[r * ld + n * P + p] with r = (c * kh +
 * ki) * kw + kj, P = Ho * Wo and ld = images * P. In that layout all three
 * ops are GEMMs per group (g groups of Cg = Ci/g input and Og = Co/g output
 * channels, Kc = Cg * kh * kw):
 *   forward      y_g[Og x P]   = w_g[Og x Kc] col_g[Kc x P]   (each image)
 *   grad input   gcol_g[Kc x P] = w_g^T gy_g[Og x P]            (then col2im)
 *   grad weight  gw_g[Og x Kc] += gy_g[Og x ld] col_g^T[ld x Kc] (the chunk's
 *                images summed by the GEMM itself)
 * Weights, outputs and gradients go through contiguous scratch in the same
 * layout, so any strides (views, stride-0 broadcasts) are read and written
 * by the packing loops only. */
#include <string.h>

#include "omp_f64.h"

typedef struct conv64 {
    int64_t n, ci, h, w, co, kh, kw, ho, wo;
    int64_t sh, sw, ph, pw, dh, dw, g;
    int64_t cg, og, kc, p; /* per group: input, output channels; rows; plane */
} conv64;

static double *base_of(const gfp_tensor *t) {
    return (double *)(void *)((char *)t->buffer + t->offset);
}

static bool geometry(conv64 *c, const gfp_tensor *x, const gfp_tensor *w, const gfp_tensor *y,
                     const void *params) {
    const gfp_conv2d_params *cp = params;
    if (!cp || cp->struct_size < GFP_CONV2D_PARAMS_SIZE_V1_0 || cp->groups < 1) return false;
    const gfp_tensor *t[3] = {x, w, y};
    for (int k = 0; k < 3; k++)
        if (!t[k] || t[k]->rank != 4 || t[k]->dtype != GFP_F64) return false;
    for (int a = 0; a < 2; a++)
        if (cp->stride[a] < 1 || cp->dilation[a] < 1 || cp->padding[a] < 0) return false;
    *c = (conv64){.n = x->sizes[0], .ci = x->sizes[1], .h = x->sizes[2], .w = x->sizes[3],
                  .co = w->sizes[0], .kh = w->sizes[2], .kw = w->sizes[3], .ho = y->sizes[2],
                  .wo = y->sizes[3], .sh = cp->stride[0], .sw = cp->stride[1],
                  .ph = cp->padding[0], .pw = cp->padding[1], .dh = cp->dilation[0],
                  .dw = cp->dilation[1], .g = cp->groups};
    if (c->ci % c->g || c->co % c->g || w->sizes[1] != c->ci / c->g || c->kh < 1 || c->kw < 1)
        return false;
    if (y->sizes[0] != c->n || y->sizes[1] != c->co) return false;
    int64_t span_h = c->h + 2 * c->ph - c->dh * (c->kh - 1) - 1;
    int64_t span_w = c->w + 2 * c->pw - c->dw * (c->kw - 1) - 1;
    if (span_h < 0 || span_w < 0 || c->ho != span_h / c->sh + 1 || c->wo != span_w / c->sw + 1)
        return false;
    for (int k = 0; k < 3; k++)
        if (pk_numel(t[k]) == 0) return false; /* empty: the reference's */
    c->cg = c->ci / c->g;
    c->og = c->co / c->g;
    c->kc = c->cg * c->kh * c->kw;
    c->p = c->ho * c->wo;
    return true;
}

/* Images per chunk: the column buffer stays under 8M doubles (64 MB). */
static int64_t chunk_of(const conv64 *c) {
    int64_t per = c->ci * c->kh * c->kw * c->p, k = ((int64_t)8 << 20) / (per > 0 ? per : 1);
    return k < 1 ? 1 : k > c->n ? c->n : k;
}

/* col[r * ld + i * P + p] for images n0 .. n0 + nc - 1 of x. */
static void im2col(const conv64 *c, const gfp_tensor *x, int64_t n0, int64_t nc, double *col,
                   int64_t ld) {
    const double *xb = base_of(x);
    const int64_t *s = x->strides;
    int64_t rows = c->ci * c->kh * c->kw;
    int threads = odn_threads(rows * ld);
    ODN_PARALLEL_FOR(threads, , for (int64_t r = 0; r < rows; r++) {
        int64_t ch = r / (c->kh * c->kw), ki = r / c->kw % c->kh, kj = r % c->kw;
        for (int64_t i = 0; i < nc; i++) {
            const double *plane = xb + (n0 + i) * s[0] + ch * s[1];
            double *dst = col + r * ld + i * c->p;
            for (int64_t oh = 0; oh < c->ho; oh++) {
                int64_t ih = oh * c->sh - c->ph + ki * c->dh;
                double *d = dst + oh * c->wo;
                if (ih < 0 || ih >= c->h) {
                    for (int64_t ow = 0; ow < c->wo; ow++) d[ow] = 0;
                    continue;
                }
                const double *src = plane + ih * s[2];
                for (int64_t ow = 0; ow < c->wo; ow++) {
                    int64_t iw = ow * c->sw - c->pw + kj * c->dw;
                    d[ow] = iw >= 0 && iw < c->w ? src[iw * s[3]] : 0;
                }
            }
        }
    });
}

/* gx[n0 + i] = the sum of gcol's entries over every place each input element
 * was read from; planes in parallel, each written whole. */
static void col2im(const conv64 *c, const double *gcol, int64_t ld, const gfp_tensor *gx,
                   int64_t n0, int64_t nc) {
    double *xb = base_of(gx);
    const int64_t *s = gx->strides;
    int threads = odn_threads(c->ci * c->kh * c->kw * ld);
    ODN_PARALLEL_FOR(threads, , for (int64_t q = 0; q < nc * c->ci; q++) {
        int64_t i = q / c->ci, ch = q % c->ci;
        double *plane = xb + (n0 + i) * s[0] + ch * s[1];
        for (int64_t ih = 0; ih < c->h; ih++)
            for (int64_t iw = 0; iw < c->w; iw++) plane[ih * s[2] + iw * s[3]] = 0;
        for (int64_t ki = 0; ki < c->kh; ki++)
            for (int64_t kj = 0; kj < c->kw; kj++) {
                const double *src = gcol + ((ch * c->kh + ki) * c->kw + kj) * ld + i * c->p;
                for (int64_t oh = 0; oh < c->ho; oh++) {
                    int64_t ih = oh * c->sh - c->ph + ki * c->dh;
                    if (ih < 0 || ih >= c->h) continue;
                    double *row = plane + ih * s[2];
                    for (int64_t ow = 0; ow < c->wo; ow++) {
                        int64_t iw = ow * c->sw - c->pw + kj * c->dw;
                        if (iw >= 0 && iw < c->w) row[iw * s[3]] += src[oh * c->wo + ow];
                    }
                }
            }
    });
}

/* buf[ch * ld + i * P + p] <-> t[n0 + i, ch] (an output-shaped tensor):
 * packed in (to_buf) or written back with an optional bias. */
static void plane_copy(const conv64 *c, const gfp_tensor *t, int64_t n0, int64_t nc, double *buf,
                       int64_t ld, bool to_buf, const gfp_tensor *bias) {
    double *tb = base_of(t);
    const int64_t *s = t->strides;
    const double *bb = bias ? base_of(bias) : NULL;
    int threads = odn_threads(c->co * ld);
    ODN_PARALLEL_FOR(threads, , for (int64_t q = 0; q < c->co * nc; q++) {
        int64_t ch = q / nc, i = q % nc;
        double *plane = tb + (n0 + i) * s[0] + ch * s[1], *b = buf + ch * ld + i * c->p;
        double add = bb ? bb[ch * bias->strides[0]] : 0;
        for (int64_t oh = 0; oh < c->ho; oh++)
            for (int64_t ow = 0; ow < c->wo; ow++) {
                double *e = plane + oh * s[2] + ow * s[3];
                if (to_buf) b[oh * c->wo + ow] = *e;
                else *e = b[oh * c->wo + ow] + add;
            }
    });
}

/* wp[o * Kc + r] <-> w[o, c', ki, kj], r = (c' * kh + ki) * kw + kj. */
static void weight_copy(const conv64 *c, const gfp_tensor *w, double *wp, bool to_buf) {
    double *wb = base_of(w);
    const int64_t *s = w->strides;
    for (int64_t o = 0; o < c->co; o++)
        for (int64_t r = 0; r < c->kc; r++) {
            int64_t cc = r / (c->kh * c->kw), ki = r / c->kw % c->kh, kj = r % c->kw;
            double *e = wb + o * s[0] + cc * s[1] + ki * s[2] + kj * s[3];
            if (to_buf) wp[o * c->kc + r] = *e;
            else *e = wp[o * c->kc + r];
        }
}

/* The batch of the forward and grad-input GEMMs: (image, group). */
static odn_gemm per_image(const conv64 *c, int64_t nc) {
    odn_gemm g;
    memset(&g, 0, sizeof g);
    g.batch_rank = 2;
    g.batch[0] = nc;
    g.batch[1] = c->g;
    return g;
}

static gfp_status forward(odn_ctx *ctx, const conv64 *c, const gfp_tensor *x, const gfp_tensor *w,
                          const gfp_tensor *bias, const gfp_tensor *y) {
    int64_t chunk = chunk_of(c), rows = c->ci * c->kh * c->kw;
    double *wp = odn_arena_alloc(ctx, sizeof(double) * (size_t)(c->co * c->kc));
    double *col = odn_arena_alloc(ctx, sizeof(double) * (size_t)(rows * chunk * c->p));
    double *yb = odn_arena_alloc(ctx, sizeof(double) * (size_t)(c->co * chunk * c->p));
    if (!wp || !col || !yb) return GFP_ERR_OUT_OF_MEMORY;
    weight_copy(c, w, wp, true);
    for (int64_t n0 = 0; n0 < c->n; n0 += chunk) {
        int64_t nc = c->n - n0 < chunk ? c->n - n0 : chunk, ld = nc * c->p;
        im2col(c, x, n0, nc, col, ld);
        odn_gemm g = per_image(c, nc);
        g.m = c->og, g.n = c->p, g.k = c->kc;
        g.a = (odn_gemm_mat){wp, c->kc, 1};
        g.a_bs[0] = 0, g.a_bs[1] = c->og * c->kc;
        g.b = (odn_gemm_mat){col, ld, 1};
        g.b_bs[0] = c->p, g.b_bs[1] = c->kc * ld;
        g.c = (odn_gemm_mat){yb, ld, 1};
        g.c_bs[0] = c->p, g.c_bs[1] = c->og * ld;
        gfp_status st = odn_gemm_f64(ctx, &g);
        if (st != GFP_OK) return st;
        plane_copy(c, y, n0, nc, yb, ld, false, bias);
    }
    return GFP_OK;
}

static gfp_status grad_input(odn_ctx *ctx, const conv64 *c, const gfp_tensor *gy,
                             const gfp_tensor *w, const gfp_tensor *gx) {
    int64_t chunk = chunk_of(c), rows = c->ci * c->kh * c->kw;
    double *wp = odn_arena_alloc(ctx, sizeof(double) * (size_t)(c->co * c->kc));
    double *gcol = odn_arena_alloc(ctx, sizeof(double) * (size_t)(rows * chunk * c->p));
    double *gyb = odn_arena_alloc(ctx, sizeof(double) * (size_t)(c->co * chunk * c->p));
    if (!wp || !gcol || !gyb) return GFP_ERR_OUT_OF_MEMORY;
    weight_copy(c, w, wp, true);
    for (int64_t n0 = 0; n0 < c->n; n0 += chunk) {
        int64_t nc = c->n - n0 < chunk ? c->n - n0 : chunk, ld = nc * c->p;
        plane_copy(c, gy, n0, nc, gyb, ld, true, NULL);
        odn_gemm g = per_image(c, nc);
        g.m = c->kc, g.n = c->p, g.k = c->og;
        g.a = (odn_gemm_mat){wp, 1, c->kc}; /* w_g^T */
        g.a_bs[0] = 0, g.a_bs[1] = c->og * c->kc;
        g.b = (odn_gemm_mat){gyb, ld, 1};
        g.b_bs[0] = c->p, g.b_bs[1] = c->og * ld;
        g.c = (odn_gemm_mat){gcol, ld, 1};
        g.c_bs[0] = c->p, g.c_bs[1] = c->kc * ld;
        gfp_status st = odn_gemm_f64(ctx, &g);
        if (st != GFP_OK) return st;
        col2im(c, gcol, ld, gx, n0, nc);
    }
    return GFP_OK;
}

static gfp_status grad_weight(odn_ctx *ctx, const conv64 *c, const gfp_tensor *gy,
                              const gfp_tensor *x, const gfp_tensor *gw) {
    int64_t chunk = chunk_of(c), rows = c->ci * c->kh * c->kw;
    double *gwp = odn_arena_alloc(ctx, sizeof(double) * (size_t)(c->co * c->kc));
    double *col = odn_arena_alloc(ctx, sizeof(double) * (size_t)(rows * chunk * c->p));
    double *gyb = odn_arena_alloc(ctx, sizeof(double) * (size_t)(c->co * chunk * c->p));
    if (!gwp || !col || !gyb) return GFP_ERR_OUT_OF_MEMORY;
    for (int64_t n0 = 0; n0 < c->n; n0 += chunk) {
        int64_t nc = c->n - n0 < chunk ? c->n - n0 : chunk, ld = nc * c->p;
        im2col(c, x, n0, nc, col, ld);
        plane_copy(c, gy, n0, nc, gyb, ld, true, NULL);
        odn_gemm g;
        memset(&g, 0, sizeof g);
        g.batch_rank = 1;
        g.batch[0] = c->g;
        g.m = c->og, g.n = c->kc, g.k = ld;
        g.a = (odn_gemm_mat){gyb, ld, 1};
        g.a_bs[0] = c->og * ld;
        g.b = (odn_gemm_mat){col, 1, ld}; /* col_g^T */
        g.b_bs[0] = c->kc * ld;
        g.c = (odn_gemm_mat){gwp, c->kc, 1};
        g.c_bs[0] = c->og * c->kc;
        g.accumulate = n0 > 0;
        gfp_status st = odn_gemm_f64(ctx, &g);
        if (st != GFP_OK) return st;
    }
    weight_copy(c, gw, gwp, false);
    return GFP_OK;
}

gfp_status odn_conv_f64(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                        const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (n_out != 1 || !out[0]) return ODN_FALLBACK;
    const gfp_tensor *x, *w, *y, *bias = NULL;
    if (op == GFP_OP_CONV2D) {
        if (n_in != 2 && n_in != 3) return ODN_FALLBACK;
        x = in[0], w = in[1], y = out[0];
        bias = n_in == 3 ? in[2] : NULL;
    } else if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
        if (n_in != 2) return ODN_FALLBACK;
        y = in[0], w = in[1], x = out[0];
    } else if (op == GFP_OP_CONV2D_BACKWARD_WEIGHT) {
        if (n_in != 2) return ODN_FALLBACK;
        y = in[0], x = in[1], w = out[0];
    } else {
        return ODN_FALLBACK;
    }
    conv64 c;
    if (!geometry(&c, x, w, y, params)) return ODN_FALLBACK;
    if (bias && (bias->rank != 1 || bias->sizes[0] != c.co || bias->dtype != GFP_F64))
        return ODN_FALLBACK;
    /* An output that overlaps itself (stride 0) is the reference's to refuse. */
    for (int d = 0; d < 4; d++)
        if (out[0]->strides[d] == 0 && out[0]->sizes[d] > 1) return ODN_FALLBACK;
    odn_ctx *ctx;
    gfp_status st = odn_ctx_acquire(&ctx);
    if (st != GFP_OK) return st;
    if (op == GFP_OP_CONV2D) return forward(ctx, &c, x, w, bias, y);
    if (op == GFP_OP_CONV2D_BACKWARD_INPUT) return grad_input(ctx, &c, y, w, x);
    return grad_weight(ctx, &c, y, x, w);
}
