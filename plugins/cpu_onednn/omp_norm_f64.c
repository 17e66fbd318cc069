/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_norm_f64.c — LAYER_NORM and BATCH_NORM in f64 (oneDNN 2.x normalises
 * f32 and bf16 only): C loops parallel over rows or channels.
 *
 * The statistics are the reference's (ref_norm.c): the mean, then the sum of
 * squared deviations from it corrected by the square of the plain deviations'
 * sum, the biased variance for normalising, the unbiased one for batch
 * norm's running variance, with the reference's compensated sums in its
 * order (so the results agree to the last bit). Layer norm packs x (and y)
 * when they are not contiguous; batch norm walks any strides. */
#include <math.h>
#include <string.h>

#include "omp_f64.h"

static double *base_of(const gfp_tensor *t) {
    return (double *)(void *)((char *)t->buffer + t->offset);
}

/* Offset of flat index i of the first `rank` dims of sizes, with strides. */
static int64_t offset_of(int64_t i, const int64_t *sizes, const int64_t *strides, int rank) {
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; d--) {
        off += (i % sizes[d]) * strides[d];
        i /= sizes[d];
    }
    return off;
}

/* The reference's compensated (Neumaier) sum, inlined, in the reference's
 * order: a channel or row of equal values then has exactly that value as its
 * mean, so it normalises to exactly 0 however large 1/sqrt(eps) is, and the
 * statistics agree with the reference's to the last bit. */
typedef struct ksum {
    double s, c;
} ksum;

static inline void ksum_add(ksum *k, double v) {
    double t = k->s + v;
    if (fabs(k->s) >= fabs(v)) k->c += (k->s - t) + v;
    else k->c += (v - t) + k->s;
    k->s = t;
}

static inline double ksum_value(const ksum *k) { return isfinite(k->s) ? k->s + k->c : k->s; }

/* Mean and m2 (sum of squared deviations, corrected by the square of the
 * plain deviations' sum) over `runs` runs of `len` values `step` apart, run
 * k at base + offset_of(k, ...) — as ref_norm.c's moments_of. */
typedef struct walk {
    int rank; /* dims before the run's */
    const int64_t *sizes, *strides;
    int64_t runs, len, step;
} walk;

static void moments(const double *base, const walk *w, double *mean, double *m2) {
    double n = (double)(w->runs * w->len);
    ksum s = {0, 0};
    for (int64_t k = 0; k < w->runs; k++) {
        const double *p = base + offset_of(k, w->sizes, w->strides, w->rank);
        for (int64_t i = 0; i < w->len; i++) ksum_add(&s, p[i * w->step]);
    }
    double m = ksum_value(&s) / n;
    ksum sq = {0, 0}, dev = {0, 0};
    for (int64_t k = 0; k < w->runs; k++) {
        const double *p = base + offset_of(k, w->sizes, w->strides, w->rank);
        for (int64_t i = 0; i < w->len; i++) {
            double d = p[i * w->step] - m;
            ksum_add(&sq, d * d);
            ksum_add(&dev, d);
        }
    }
    double dsum = ksum_value(&dev), v = ksum_value(&sq) - dsum * dsum / n;
    *mean = m;
    *m2 = v < 0 ? 0 : v;
}

/* ------------------------------------------------------------ layer norm */
static gfp_status layer_norm(const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    int64_t outer = 0, inner = 0;
    if (!odn_layer_norm_args(in, n_in, out, n_out, params, GFP_F64, &outer, &inner))
        return ODN_FALLBACK;
    const gfp_layer_norm_params *lp = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *y = out[0], *mean = out[1],
                     *rstd = out[2];
    int outer_rank = x->rank - lp->normalized_rank;
    if (outer == 0) return GFP_OK;
    if (inner == 0) return ODN_FALLBACK;
    odn_ctx *c;
    gfp_status st = odn_ctx_acquire(&c);
    if (st != GFP_OK) return st;
    gfp_tensor xt, yt, wt, bt;
    if (!odn_packed(c, x, true, &xt) || !odn_packed(c, y, false, &yt) ||
        (w && !odn_packed(c, w, true, &wt)) || (b && !odn_packed(c, b, true, &bt)))
        return GFP_ERR_OUT_OF_MEMORY;
    const double *xp = base_of(&xt), *wp = w ? base_of(&wt) : NULL, *bp = b ? base_of(&bt) : NULL;
    double *yp = base_of(&yt), *mp = base_of(mean), *rp = base_of(rstd), eps = lp->eps;
    int nt = odn_threads(outer * inner * 4);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t r = 0; r < outer; r++) {
        const double *row = xp + r * inner;
        double *yr = yp + r * inner, m, m2;
        walk one = {0, NULL, NULL, 1, inner, 1};
        moments(row, &one, &m, &m2);
        double rs = 1.0 / sqrt(m2 / (double)inner + eps); /* biased variance */
        mp[offset_of(r, mean->sizes, mean->strides, outer_rank)] = m;
        rp[offset_of(r, rstd->sizes, rstd->strides, outer_rank)] = rs;
        for (int64_t i = 0; i < inner; i++) {
            double v = (row[i] - m) * rs;
            if (wp) v *= wp[i];
            if (bp) v += bp[i];
            yr[i] = v;
        }
    });
    if (yp != base_of(y)) st = odn_copy(y, &yt);
    return st == ODN_FALLBACK ? GFP_ERR_INTERNAL : st;
}

/* ------------------------------------------------------------ batch norm */
/* Channel ch of t ([N, C, ...]) as runs along its last dim other than 1. */
typedef struct chan_walk {
    int64_t sizes[GFP_MAX_RANK], strides[GFP_MAX_RANK];
    walk w;
} chan_walk;

static void walk_of(const gfp_tensor *t, chan_walk *cw) {
    int r = 0;
    for (int d = 0; d < t->rank; d++) {
        if (d == 1) continue;
        cw->sizes[r] = t->sizes[d];
        cw->strides[r++] = t->strides[d];
    }
    cw->w = (walk){r - 1, cw->sizes, cw->strides, 1, cw->sizes[r - 1], cw->strides[r - 1]};
    for (int d = 0; d < r - 1; d++) cw->w.runs *= cw->sizes[d];
}

static double load_c(const gfp_tensor *t, int64_t i) { return base_of(t)[i * t->strides[0]]; }
static void store_c(const gfp_tensor *t, int64_t i, double v) { base_of(t)[i * t->strides[0]] = v; }

static gfp_status batch_norm(const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    const gfp_batch_norm_params *bp = params;
    if (n_in != 5 || n_out != 3 || !in[0] || !bp ||
        bp->struct_size < GFP_BATCH_NORM_PARAMS_SIZE_V1_0 || bp->training > 1)
        return ODN_FALLBACK;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *rm = in[3], *rv = in[4];
    const gfp_tensor *y = out[0], *smean = out[1], *sinv = out[2];
    if (x->rank < 2 || !pk_same_shape(x, y)) return ODN_FALLBACK;
    if (!bp->training && (!rm || !rv)) return ODN_FALLBACK;
    int64_t chans = x->sizes[1];
    const gfp_tensor *per[6] = {w, b, rm, rv, smean, sinv};
    for (int i = 0; i < 6; i++) {
        if (!per[i]) continue;
        if (per[i]->dtype != GFP_F64 || per[i]->rank != 1 || per[i]->sizes[0] != chans)
            return ODN_FALLBACK;
        if (i >= 2 && per[i]->strides[0] == 0 && chans > 1) return ODN_FALLBACK; /* written */
    }
    if (y->dtype != GFP_F64 || !odn_writable(y)) return ODN_FALLBACK;
    if (pk_numel(x) == 0) return ODN_FALLBACK; /* no statistics: the reference's rules */
    chan_walk xc, yc;
    walk_of(x, &xc);
    walk_of(y, &yc);
    const walk *xw = &xc.w, *yw = &yc.w;
    double count = (double)(xw->runs * xw->len), mom = bp->momentum, eps = bp->eps;
    int nt = odn_threads(pk_numel(x) * 4);
    if (nt > chans) nt = (int)chans;
    ODN_PARALLEL_FOR(nt, schedule(dynamic, 1), for (int64_t ch = 0; ch < chans; ch++) {
        double m, invstd;
        if (bp->training) {
            double m2;
            moments(base_of(x) + ch * x->strides[1], xw, &m, &m2);
            invstd = 1.0 / sqrt(m2 / count + eps); /* biased variance normalises */
            if (rm) store_c(rm, ch, (1 - mom) * load_c(rm, ch) + mom * m);
            /* unbiased variance, as PyTorch (count = 1: NaN) */
            if (rv) store_c(rv, ch, (1 - mom) * load_c(rv, ch) + mom * (m2 / (count - 1)));
        } else {
            m = load_c(rm, ch);
            invstd = 1.0 / sqrt(load_c(rv, ch) + eps);
        }
        store_c(smean, ch, m);
        store_c(sinv, ch, invstd);
        double scale = w ? load_c(w, ch) : 1.0, shift = b ? load_c(b, ch) : 0.0;
        const double *xb = base_of(x) + ch * x->strides[1];
        double *yb = base_of(y) + ch * y->strides[1];
        for (int64_t k = 0; k < xw->runs; k++) {
            const double *p = xb + offset_of(k, xw->sizes, xw->strides, xw->rank);
            double *q = yb + offset_of(k, yw->sizes, yw->strides, yw->rank);
            for (int64_t i = 0; i < xw->len; i++)
                q[i * yw->step] = (p[i * xw->step] - m) * invstd * scale + shift;
        }
    });
    return GFP_OK;
}

gfp_status odn_norm_f64(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                        const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (!in[0] || in[0]->dtype != GFP_F64) return ODN_FALLBACK;
    if (op == GFP_OP_LAYER_NORM) return layer_norm(in, n_in, out, n_out, params);
    if (op == GFP_OP_BATCH_NORM) return batch_norm(in, n_in, out, n_out, params);
    return ODN_FALLBACK;
}
