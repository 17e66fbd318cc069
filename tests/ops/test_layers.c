/* SPDX-License-Identifier: BSD-3-Clause */
/* test_layers.c — forward values of the layers of graft/layers.h (conv1d,
 * conv_transpose1d/2d, group_norm, instance_norm, adaptive avg/max
 * pooling, interpolate, embedding with padding_idx, scaled dot-product
 * attention, linear) against scalar loops written here from PyTorch's
 * definitions, plus a few values worked out by hand. Inputs are contiguous
 * and strided (a transposed storage), f32 and f64 (where the device stores
 * f64), with 0-size batches. Runs on the default device (GRAFT_DEVICE), so
 * CTest runs it on every CPU-backed device here. */
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})

static uint64_t rng_state = 12345;
static double urand(void) { /* in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}
static void fill(double *v, int64_t n) {
    for (int64_t i = 0; i < n; i++) v[i] = urand();
}
static int64_t numel(const int64_t *s, int r) {
    int64_t n = 1;
    for (int i = 0; i < r; i++) n *= s[i];
    return n;
}

static bool stores(gf_dtype dt) {
    gf_device_info info;
    return gf_device_get_info(gf_device_default(), &info) == GF_OK && (info.dtypes & (1u << dt));
}

/* A tensor of dtype dt holding v (row-major in sizes). strided: built as the
 * transpose of a contiguous tensor with the last two dims swapped (rank >= 2),
 * so the op sees a non-contiguous view. */
static gf_tensor *make(const double *v, const int64_t *sizes, int rank, gf_dtype dt,
                       bool strided) {
    gf_tensor *h = gf_from_data(v ? v : (const double[]){0}, sizes, rank, GF_F64, NULL);
    gf_tensor *t = h ? gf_to_dtype(h, dt) : NULL;
    gf_tensor_release(h);
    if (!strided || rank < 2 || !t) return t;
    gf_tensor *tt = gf_transpose(t, -1, -2);
    gf_tensor *c = tt ? gf_contiguous(tt) : NULL;
    gf_tensor *r = c ? gf_transpose(c, -1, -2) : NULL;
    gf_tensor_release(t);
    gf_tensor_release(tt);
    gf_tensor_release(c);
    CHECK(r && !gf_tensor_is_contiguous(r));
    return r;
}

/* y against want[n], tolerance by dtype. */
static void check_vals(const char *what, gf_tensor *y, const int64_t *sizes, int rank,
                       const double *want, gf_dtype dt) {
    CHECK_MSG(y != NULL, "%s: %s", what, gf_last_error());
    if (!y) return;
    CHECK_MSG(gf_tensor_rank(y) == rank && !memcmp(gf_tensor_sizes(y), sizes, sizeof(int64_t) *
                                                    (size_t)rank),
              "%s: wrong shape (rank %d)", what, gf_tensor_rank(y));
    if (gf_tensor_rank(y) != rank) return;
    int64_t n = numel(sizes, rank);
    double *got = calloc((size_t)(n ? n : 1), sizeof(double));
    gf_tensor *d = gf_to_dtype(y, GF_F64);
    CHECK(d && gf_tensor_to_host(d, got, sizeof(double) * (size_t)n) == GF_OK);
    double tol = dt == GF_F32 ? 2e-5 : 1e-11;
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++)
        if (!check_close_(got[i], want[i], tol, tol)) {
            bad++;
            CHECK_MSG(0, "%s[%lld]: %.10g vs expected %.10g", what, (long long)i, got[i],
                      want[i]);
        }
    if (!bad) check_passed_++;
    gf_tensor_release(d);
    free(got);
}

static const gf_dtype DTS[2] = {GF_F32, GF_F64};
/* Runs the body once per dtype the device stores, contiguous and strided. */
#define FOR_DT_STRIDE                                       \
    for (int k_ = 0; k_ < 4; k_++)                          \
        for (int o1_ = stores(DTS[k_ / 2]); o1_; o1_ = 0)   \
            for (gf_dtype dt = DTS[k_ / 2]; o1_; o1_ = 0)   \
                for (bool strided = k_ % 2; o1_; o1_ = 0)

/* ------------------------------------------------------------ conv_transpose */

/* y[n, g cog + co, i s - p + k d] += x[n, g cig + ci, i] w[g cig + ci, co, k] (2-D). */
static void ref_conv_t2d(const double *x, const double *w, const double *b, int64_t n,
                         int64_t ci, int64_t h, int64_t wd, int64_t cog, int64_t kh, int64_t kw,
                         const int *s, const int *p, const int *op, const int *d, int g,
                         double *y, int64_t *ho, int64_t *wo) {
    *ho = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op[0] + 1;
    *wo = (wd - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op[1] + 1;
    int64_t co = cog * g, cig = ci / g;
    for (int64_t i = 0; i < n * co * *ho * *wo; i++) y[i] = b ? b[(i / (*ho * *wo)) % co] : 0;
    for (int64_t bn = 0; bn < n; bn++)
        for (int64_t c = 0; c < ci; c++)
            for (int64_t i = 0; i < h; i++)
                for (int64_t j = 0; j < wd; j++)
                    for (int64_t oc = 0; oc < cog; oc++)
                        for (int64_t a = 0; a < kh; a++)
                            for (int64_t e = 0; e < kw; e++) {
                                int64_t oy = i * s[0] - p[0] + a * d[0];
                                int64_t ox = j * s[1] - p[1] + e * d[1];
                                if (oy < 0 || oy >= *ho || ox < 0 || ox >= *wo) continue;
                                int64_t occ = (c / cig) * cog + oc;
                                y[((bn * co + occ) * *ho + oy) * *wo + ox] +=
                                    x[((bn * ci + c) * h + i) * wd + j] *
                                    w[((c * cog + oc) * kh + a) * kw + e];
                            }
}

static void test_conv_transpose2d(void) {
    /* By hand: 1x1x2x2 input, 2x2 kernel of ones, stride 2: each input
     * element becomes a 2x2 block. */
    {
        gf_tensor *x = make((const double[]){1, 2, 3, 4}, SZ(1, 1, 2, 2), 4, GF_F32, false);
        gf_tensor *w = make((const double[]){1, 1, 1, 1}, SZ(1, 1, 2, 2), 4, GF_F32, false);
        gf_conv_transpose2d_opts o = {.stride = {2, 2}};
        gf_tensor *y = gf_conv_transpose2d(x, w, NULL, &o);
        check_vals("convT by hand", y, SZ(1, 1, 4, 4), 4,
                   (const double[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, GF_F32);
        gf_tensor_release(x);
        gf_tensor_release(w);
        gf_tensor_release(y);
    }
    struct {
        int64_t n, ci, h, w, cog, kh, kw;
        int s[2], p[2], op[2], d[2], g;
        bool bias;
    } cases[] = {
        {2, 2, 3, 4, 3, 2, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, true},
        {1, 4, 3, 3, 1, 3, 2, {2, 3}, {1, 0}, {1, 2}, {1, 1}, 2, true},
        {2, 2, 2, 3, 2, 2, 2, {2, 1}, {0, 1}, {0, 0}, {2, 2}, 1, false},
        /* output_padding >= stride (allowed as < dilation): the cut path */
        {1, 2, 3, 2, 2, 2, 3, {1, 1}, {0, 1}, {1, 1}, {2, 3}, 1, true},
        {1, 3, 2, 2, 2, 3, 2, {2, 1}, {2, 0}, {1, 1}, {3, 2}, 3, true},
        /* an empty batch */
        {0, 2, 3, 3, 2, 2, 2, {2, 2}, {0, 0}, {1, 0}, {1, 1}, 1, true},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        __typeof__(cases[0]) k = cases[c];
        int64_t xs[4] = {k.n, k.ci, k.h, k.w}, ws[4] = {k.ci, k.cog, k.kh, k.kw};
        double x[512], w[512], b[16], y[4096];
        fill(x, numel(xs, 4));
        fill(w, numel(ws, 4));
        fill(b, 16);
        int64_t ho, wo;
        ref_conv_t2d(x, w, k.bias ? b : NULL, k.n, k.ci, k.h, k.w, k.cog, k.kh, k.kw, k.s, k.p,
                     k.op, k.d, k.g, y, &ho, &wo);
        FOR_DT_STRIDE {
            gf_tensor *tx = make(x, xs, 4, dt, strided), *tw = make(w, ws, 4, dt, strided);
            gf_tensor *tb = k.bias ? make(b, SZ(k.cog * k.g), 1, dt, false) : NULL;
            gf_conv_transpose2d_opts o = {{k.s[0], k.s[1]}, {k.p[0], k.p[1]},
                                          {k.op[0], k.op[1]}, {k.d[0], k.d[1]}, k.g};
            gf_tensor *ty = gf_conv_transpose2d(tx, tw, tb, &o);
            char what[64];
            snprintf(what, sizeof what, "convT case %zu %s%s", c, gf_dtype_name(dt),
                     strided ? " strided" : "");
            check_vals(what, ty, SZ(k.n, k.cog * k.g, ho, wo), 4, y, dt);
            /* unbatched */
            if (k.n > 0) {
                gf_tensor *x0 = gf_select(tx, 0, 0), *y0 = gf_conv_transpose2d(x0, tw, tb, &o);
                check_vals(what, y0, SZ(k.cog * k.g, ho, wo), 3, y, dt);
                gf_tensor_release(x0);
                gf_tensor_release(y0);
            }
            gf_tensor_release(tx);
            gf_tensor_release(tw);
            gf_tensor_release(tb);
            gf_tensor_release(ty);
        }
    }
}

static void test_conv1d_family(void) {
    /* conv1d by hand: [1, 2, 3] with kernel [1, -1], padding 1:
     * [0-1, 1-2, 2-3, 3-0] = [-1, -1, -1, 3]. */
    {
        gf_tensor *x = make((const double[]){1, 2, 3}, SZ(1, 1, 3), 3, GF_F32, false);
        gf_tensor *w = make((const double[]){1, -1}, SZ(1, 1, 2), 3, GF_F32, false);
        gf_conv1d_opts o = {.padding = 1};
        gf_tensor *y = gf_conv1d(x, w, NULL, &o);
        check_vals("conv1d by hand", y, SZ(1, 1, 4), 3, (const double[]){-1, -1, -1, 3}, GF_F32);
        gf_tensor_release(y);
        /* conv_transpose1d by hand: [1, 2] with kernel [1, 10], stride 2. */
        gf_tensor *x2 = make((const double[]){1, 2}, SZ(1, 1, 2), 3, GF_F32, false);
        gf_tensor *w2 = make((const double[]){1, 10}, SZ(1, 1, 2), 3, GF_F32, false);
        gf_conv_transpose1d_opts t = {.stride = 2, .output_padding = 1};
        y = gf_conv_transpose1d(x2, w2, NULL, &t);
        check_vals("conv_transpose1d by hand", y, SZ(1, 1, 5), 3,
                   (const double[]){1, 10, 2, 20, 0}, GF_F32);
        gf_tensor_release(y);
        gf_tensor_release(x);
        gf_tensor_release(w);
        gf_tensor_release(x2);
        gf_tensor_release(w2);
    }
    /* conv1d against a loop: groups 2, stride 2, dilation 2, padding 2. */
    int64_t n = 2, ci = 4, l = 9, co = 6, k = 3, g = 2, s = 2, p = 2, d = 2;
    int64_t lo = (l + 2 * p - d * (k - 1) - 1) / s + 1;
    double x[128], w[64], b[8], y[256];
    fill(x, n * ci * l);
    fill(w, co * (ci / g) * k);
    fill(b, co);
    for (int64_t bn = 0; bn < n; bn++)
        for (int64_t oc = 0; oc < co; oc++)
            for (int64_t o = 0; o < lo; o++) {
                double acc = b[oc];
                int64_t grp = oc / (co / g);
                for (int64_t c = 0; c < ci / g; c++)
                    for (int64_t a = 0; a < k; a++) {
                        int64_t pos = o * s - p + a * d;
                        if (pos < 0 || pos >= l) continue;
                        acc += x[(bn * ci + grp * (ci / g) + c) * l + pos] *
                               w[(oc * (ci / g) + c) * k + a];
                    }
                y[(bn * co + oc) * lo + o] = acc;
            }
    FOR_DT_STRIDE {
        gf_tensor *tx = make(x, SZ(n, ci, l), 3, dt, strided);
        gf_tensor *tw = make(w, SZ(co, ci / g, k), 3, dt, strided);
        gf_tensor *tb = make(b, SZ(co), 1, dt, false);
        gf_conv1d_opts o = {(int)s, (int)p, (int)d, (int)g};
        gf_tensor *ty = gf_conv1d(tx, tw, tb, &o);
        check_vals("conv1d", ty, SZ(n, co, lo), 3, y, dt);
        gf_tensor *x0 = gf_select(tx, 0, 0), *y0 = gf_conv1d(x0, tw, tb, &o);
        check_vals("conv1d unbatched", y0, SZ(co, lo), 2, y, dt);
        gf_tensor *e = gf_narrow(tx, 0, 0, 0), *ye = gf_conv1d(e, tw, tb, &o);
        check_vals("conv1d empty batch", ye, SZ(0, co, lo), 3, y, dt);
        gf_tensor *arr[] = {tx, tw, tb, ty, x0, y0, e, ye};
        for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) gf_tensor_release(arr[i]);
    }
}

/* ------------------------------------------------------------ normalisation */

static void test_group_instance_norm(void) {
    int64_t n = 2, c = 6, h = 2, w = 3, sp = h * w;
    double x[72], wt[6], b[6], y[72], yi[72], yr[72];
    fill(x, n * c * sp);
    fill(wt, c);
    fill(b, c);
    const int64_t G = 3, cg = c / G;
    for (int64_t bn = 0; bn < n; bn++)
        for (int64_t gr = 0; gr < G; gr++) {
            double m = 0, v = 0;
            const double *px = x + (bn * c + gr * cg) * sp;
            for (int64_t i = 0; i < cg * sp; i++) m += px[i];
            m /= (double)(cg * sp);
            for (int64_t i = 0; i < cg * sp; i++) v += (px[i] - m) * (px[i] - m);
            v /= (double)(cg * sp);
            for (int64_t i = 0; i < cg * sp; i++) {
                int64_t ch = gr * cg + i / sp;
                y[(bn * c + gr * cg) * sp + i] = (px[i] - m) / sqrt(v + 1e-5) * wt[ch] + b[ch];
            }
        }
    double rm[6], rv[6], rm_want[6], rv_want[6], rm0[6], rv0[6];
    for (int64_t ch = 0; ch < c; ch++) {
        rm0[ch] = 0.1 * (double)ch;
        rv0[ch] = 1.0 + 0.2 * (double)ch;
        double msum = 0, vsum = 0;
        for (int64_t bn = 0; bn < n; bn++) {
            const double *px = x + (bn * c + ch) * sp;
            double m = 0, v = 0;
            for (int64_t i = 0; i < sp; i++) m += px[i];
            m /= (double)sp;
            for (int64_t i = 0; i < sp; i++) v += (px[i] - m) * (px[i] - m);
            for (int64_t i = 0; i < sp; i++)
                yi[(bn * c + ch) * sp + i] = (px[i] - m) / sqrt(v / (double)sp + 1e-5) * wt[ch] +
                                             b[ch];
            for (int64_t i = 0; i < sp; i++)
                yr[(bn * c + ch) * sp + i] = (px[i] - rm0[ch]) / sqrt(rv0[ch] + 1e-5);
            msum += m;
            vsum += v / (double)(sp - 1);
        }
        rm_want[ch] = 0.9 * rm0[ch] + 0.1 * msum / (double)n;
        rv_want[ch] = 0.9 * rv0[ch] + 0.1 * vsum / (double)n;
    }
    (void)rm;
    (void)rv;
    FOR_DT_STRIDE {
        gf_tensor *tx = make(x, SZ(n, c, h, w), 4, dt, strided);
        gf_tensor *tw = make(wt, SZ(c), 1, dt, false), *tb = make(b, SZ(c), 1, dt, false);
        gf_tensor *ty = gf_group_norm(tx, G, tw, tb, 1e-5);
        check_vals("group_norm", ty, SZ(n, c, h, w), 4, y, dt);
        gf_tensor *trm = make(rm0, SZ(c), 1, dt, false), *trv = make(rv0, SZ(c), 1, dt, false);
        gf_tensor *ti = gf_instance_norm(tx, trm, trv, tw, tb, true, 0.1, 1e-5);
        check_vals("instance_norm", ti, SZ(n, c, h, w), 4, yi, dt);
        check_vals("instance_norm running_mean", trm, SZ(c), 1, rm_want, dt);
        check_vals("instance_norm running_var", trv, SZ(c), 1, rv_want, dt);
        gf_tensor *trm2 = make(rm0, SZ(c), 1, dt, false), *trv2 = make(rv0, SZ(c), 1, dt, false);
        gf_tensor *te = gf_instance_norm(tx, trm2, trv2, NULL, NULL, false, 0.1, 1e-5);
        check_vals("instance_norm eval", te, SZ(n, c, h, w), 4, yr, dt);
        /* empty batch */
        gf_tensor *ex = gf_narrow(tx, 0, 0, 0);
        gf_tensor *eg = gf_group_norm(ex, G, tw, tb, 1e-5);
        check_vals("group_norm empty", eg, SZ(0, c, h, w), 4, y, dt);
        gf_tensor *ei = gf_instance_norm(ex, NULL, NULL, tw, tb, true, 0.1, 1e-5);
        check_vals("instance_norm empty", ei, SZ(0, c, h, w), 4, y, dt);
        gf_tensor *arr[] = {tx, tw, tb, ty, trm, trv, ti, trm2, trv2, te, ex, eg, ei};
        for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) gf_tensor_release(arr[i]);
    }
    /* By hand: one group of [1, 3] gives [-1, 1] (eps 0). */
    gf_tensor *t = make((const double[]){1, 3}, SZ(1, 2), 2, GF_F32, false);
    gf_tensor *r = gf_group_norm(t, 1, NULL, NULL, 0.0);
    check_vals("group_norm by hand", r, SZ(1, 2), 2, (const double[]){-1, 1}, GF_F32);
    gf_tensor_release(t);
    gf_tensor_release(r);
}

/* ------------------------------------------------------------ adaptive pooling */

static void test_adaptive_pools(void) {
    int64_t sizes[][4] = {{2, 3, 5, 7}, {1, 2, 6, 4}, {1, 1, 4, 9}};
    int64_t outs[][2] = {{3, 4}, {3, 2}, {4, -1}};
    for (int c = 0; c < 3; c++) {
        int64_t n = sizes[c][0], ch = sizes[c][1], h = sizes[c][2], w = sizes[c][3];
        int64_t oh = outs[c][0] < 0 ? h : outs[c][0], ow = outs[c][1] < 0 ? w : outs[c][1];
        double x[512], ya[512], ym[512], yi[512];
        fill(x, n * ch * h * w);
        if (c == 2) x[3] = x[2]; /* a tie: the first position wins */
        for (int64_t p = 0; p < n * ch; p++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
                    int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
                    double s = 0, m = -INFINITY;
                    int64_t mi = -1;
                    for (int64_t a = h0; a < h1; a++)
                        for (int64_t b = w0; b < w1; b++) {
                            double v = x[p * h * w + a * w + b];
                            s += v;
                            if (v > m) {
                                m = v;
                                mi = a * w + b;
                            }
                        }
                    int64_t o = (p * oh + i) * ow + j;
                    ya[o] = s / (double)((h1 - h0) * (w1 - w0));
                    ym[o] = m;
                    yi[o] = (double)mi;
                }
        FOR_DT_STRIDE {
            gf_tensor *tx = make(x, sizes[c], 4, dt, strided);
            gf_tensor *a = gf_adaptive_avg_pool2d(tx, outs[c]);
            check_vals("adaptive_avg_pool2d", a, SZ(n, ch, oh, ow), 4, ya, dt);
            gf_tensor *idx = NULL;
            gf_tensor *m = gf_adaptive_max_pool2d(tx, outs[c], &idx);
            check_vals("adaptive_max_pool2d", m, SZ(n, ch, oh, ow), 4, ym, dt);
            check_vals("adaptive_max_pool2d indices", idx, SZ(n, ch, oh, ow), 4, yi, GF_F64);
            CHECK(idx && gf_tensor_dtype(idx) == GF_I64);
            gf_tensor *x3 = gf_select(tx, 0, 0);
            gf_tensor *a3 = gf_adaptive_avg_pool2d(x3, outs[c]);
            check_vals("adaptive_avg_pool2d 3-D", a3, SZ(ch, oh, ow), 3, ya, dt);
            gf_tensor *i3 = NULL, *m3 = gf_adaptive_max_pool2d(x3, outs[c], &i3);
            check_vals("adaptive_max_pool2d 3-D", m3, SZ(ch, oh, ow), 3, ym, dt);
            check_vals("adaptive_max_pool2d 3-D indices", i3, SZ(ch, oh, ow), 3, yi, GF_F64);
            gf_tensor *e = gf_narrow(tx, 0, 0, 0);
            gf_tensor *ea = gf_adaptive_avg_pool2d(e, outs[c]);
            check_vals("adaptive_avg_pool2d empty", ea, SZ(0, ch, oh, ow), 4, ya, dt);
            gf_tensor *em = gf_adaptive_max_pool2d(e, outs[c], NULL);
            check_vals("adaptive_max_pool2d empty", em, SZ(0, ch, oh, ow), 4, ya, dt);
            gf_tensor *arr[] = {tx, a, idx, m, x3, a3, i3, m3, e, ea, em};
            for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) gf_tensor_release(arr[i]);
        }
    }
    /* By hand: 1x1x3 row [1, 2, 3] to 2 cells: windows [0, 2) and [1, 3). */
    gf_tensor *t = make((const double[]){1, 2, 3}, SZ(1, 1, 1, 3), 4, GF_F32, false);
    gf_tensor *y = gf_adaptive_avg_pool2d(t, SZ(1, 2));
    check_vals("adaptive_avg by hand", y, SZ(1, 1, 1, 2), 4, (const double[]){1.5, 2.5}, GF_F32);
    gf_tensor_release(y);
    y = gf_adaptive_max_pool2d(t, SZ(1, 2), NULL);
    check_vals("adaptive_max by hand", y, SZ(1, 1, 1, 2), 4, (const double[]){2, 3}, GF_F32);
    gf_tensor_release(y);
    gf_tensor_release(t);
}

/* ------------------------------------------------------------ interpolate */

static void ref_axis(gf_interp_mode m, bool ac, int64_t in, int64_t out, double sf, int64_t d,
                     int64_t *i0, int64_t *i1, double *l1) {
    if (m == GF_INTERP_NEAREST || m == GF_INTERP_NEAREST_EXACT) {
        float s = sf > 0 ? (float)(1.0 / sf) : (float)in / (float)out;
        int64_t src = m == GF_INTERP_NEAREST_EXACT ? (int64_t)floorf(((float)d + 0.5f) * s)
                      : out == in                  ? d
                      : out == 2 * in              ? d / 2
                                                   : (int64_t)floorf((float)d * s);
        *i0 = *i1 = src < in - 1 ? src : in - 1;
        *l1 = 0;
        return;
    }
    double s = ac ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0)
                  : (sf > 0 ? 1.0 / sf : (double)in / (double)out);
    double src = ac ? s * (double)d : fmax(s * ((double)d + 0.5) - 0.5, 0.0);
    int64_t a = (int64_t)src;
    if (a > in - 1) a = in - 1;
    *i0 = a;
    *i1 = a < in - 1 ? a + 1 : a;
    *l1 = fmin(fmax(src - (double)a, 0), 1);
}

static void test_interpolate(void) {
    /* By hand: [1, 2] to 4 with bilinear-as-linear, align_corners both ways. */
    {
        gf_tensor *x = make((const double[]){1, 2}, SZ(1, 1, 2), 3, GF_F64, false);
        if (!stores(GF_F64)) {
            gf_tensor_release(x);
            x = make((const double[]){1, 2}, SZ(1, 1, 2), 3, GF_F32, false);
        }
        gf_interpolate_opts o = {.mode = GF_INTERP_LINEAR, .size = {4}};
        gf_tensor *y = gf_interpolate(x, &o);
        check_vals("linear by hand", y, SZ(1, 1, 4), 3, (const double[]){1, 1.25, 1.75, 2},
                   GF_F32);
        gf_tensor_release(y);
        o.align_corners = true;
        y = gf_interpolate(x, &o);
        check_vals("linear align_corners by hand", y, SZ(1, 1, 4), 3,
                   (const double[]){1, 4.0 / 3, 5.0 / 3, 2}, GF_F32);
        gf_tensor_release(y);
        gf_interpolate_opts nn = {.mode = GF_INTERP_NEAREST, .scale_factor = {2}};
        y = gf_interpolate(x, &nn);
        check_vals("nearest by hand", y, SZ(1, 1, 4), 3, (const double[]){1, 1, 2, 2}, GF_F32);
        gf_tensor_release(y);
        gf_tensor_release(x);
    }
    struct {
        gf_interp_mode m;
        bool ac, recompute;
        int64_t size[2];
        double sf[2];
    } cases[] = {
        {GF_INTERP_NEAREST, false, false, {7, 3}, {0, 0}},
        {GF_INTERP_NEAREST, false, false, {0, 0}, {1.7, 0.6}},
        {GF_INTERP_NEAREST, false, true, {0, 0}, {1.7, 0.6}},
        {GF_INTERP_NEAREST_EXACT, false, false, {5, 9}, {0, 0}},
        {GF_INTERP_BILINEAR, false, false, {7, 3}, {0, 0}},
        {GF_INTERP_BILINEAR, true, false, {7, 3}, {0, 0}},
        {GF_INTERP_BILINEAR, false, false, {0, 0}, {2.5, 1.5}},
        {GF_INTERP_BILINEAR, true, false, {0, 0}, {2.5, 1.5}},
        {GF_INTERP_BILINEAR, false, true, {0, 0}, {2.5, 1.5}},
        {GF_INTERP_BILINEAR, false, false, {1, 1}, {0, 0}},
        {GF_INTERP_AREA, false, false, {3, 2}, {0, 0}},
    };
    int64_t n = 2, c = 2, h = 4, w = 5;
    double x[80], y[1024];
    fill(x, n * c * h * w);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int64_t oh = cases[k].size[0] ? cases[k].size[0] : (int64_t)floor(h * cases[k].sf[0]);
        int64_t ow = cases[k].size[1] ? cases[k].size[1] : (int64_t)floor(w * cases[k].sf[1]);
        double sh = cases[k].recompute ? 0 : cases[k].sf[0];
        double sw = cases[k].recompute ? 0 : cases[k].sf[1];
        for (int64_t p = 0; p < n * c; p++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double v;
                    if (cases[k].m == GF_INTERP_AREA) {
                        int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
                        int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
                        v = 0;
                        for (int64_t a = h0; a < h1; a++)
                            for (int64_t b = w0; b < w1; b++) v += x[p * h * w + a * w + b];
                        v /= (double)((h1 - h0) * (w1 - w0));
                    } else {
                        int64_t a0, a1, b0, b1;
                        double la, lb;
                        ref_axis(cases[k].m, cases[k].ac, h, oh, sh, i, &a0, &a1, &la);
                        ref_axis(cases[k].m, cases[k].ac, w, ow, sw, j, &b0, &b1, &lb);
                        const double *px = x + p * h * w;
                        v = (1 - la) * ((1 - lb) * px[a0 * w + b0] + lb * px[a0 * w + b1]) +
                            la * ((1 - lb) * px[a1 * w + b0] + lb * px[a1 * w + b1]);
                    }
                    y[(p * oh + i) * ow + j] = v;
                }
        FOR_DT_STRIDE {
            gf_tensor *tx = make(x, SZ(n, c, h, w), 4, dt, strided);
            gf_interpolate_opts o = {cases[k].m, {cases[k].size[0], cases[k].size[1]},
                                     {cases[k].sf[0], cases[k].sf[1]}, cases[k].ac,
                                     cases[k].recompute};
            gf_tensor *ty = gf_interpolate(tx, &o);
            char what[64];
            snprintf(what, sizeof what, "interpolate case %zu", k);
            check_vals(what, ty, SZ(n, c, oh, ow), 4, y, dt);
            gf_tensor *e = gf_narrow(tx, 0, 0, 0), *ye = gf_interpolate(e, &o);
            check_vals("interpolate empty", ye, SZ(0, c, oh, ow), 4, y, dt);
            gf_tensor_release(tx);
            gf_tensor_release(ty);
            gf_tensor_release(e);
            gf_tensor_release(ye);
        }
    }
}

/* ------------------------------------------------------------ embedding, attention, linear */

static void test_embedding_padding(void) {
    double w[12] = {0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    int64_t idx[4] = {1, 0, 3, 0};
    gf_tensor *tw = make(w, SZ(4, 3), 2, GF_F32, false);
    gf_tensor *ti = gf_from_data(idx, SZ(2, 2), 2, GF_I64, NULL);
    gf_tensor *y = gf_embedding_padding_idx(tw, ti, 0);
    check_vals("embedding padding_idx", y, SZ(2, 2, 3), 3,
               (const double[]){1, 2, 3, 0, 0, 0, 7, 8, 9, 0, 0, 0}, GF_F32);
    gf_tensor_release(y);
    y = gf_embedding_padding_idx(tw, ti, -4);
    check_vals("embedding padding_idx -4", y, SZ(2, 2, 3), 3,
               (const double[]){1, 2, 3, 0, 0, 0, 7, 8, 9, 0, 0, 0}, GF_F32);
    gf_tensor_release(y);
    gf_tensor_release(tw);
    gf_tensor_release(ti);
}

static void test_sdpa(void) {
    int64_t b = 2, hh = 2, L = 3, S = 4, E = 5, Ev = 3;
    double q[60], k[80], v[48], fm[12], y[36];
    fill(q, b * hh * L * E);
    fill(k, b * hh * S * E);
    fill(v, b * hh * S * Ev);
    fill(fm, L * S);
    /* mask kinds: 0 none, 1 causal, 2 bool (row 1 fully masked), 3 float, 4 scale 0.3 */
    bool bm[12] = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1};
    for (int kind = 0; kind < 5; kind++) {
        double scale = kind == 4 ? 0.3 : 1 / sqrt((double)E);
        for (int64_t p = 0; p < b * hh; p++)
            for (int64_t i = 0; i < L; i++) {
                double sc[4], mx = -INFINITY;
                bool any = false;
                for (int64_t j = 0; j < S; j++) {
                    double s = 0;
                    for (int64_t e = 0; e < E; e++)
                        s += q[(p * L + i) * E + e] * k[(p * S + j) * E + e];
                    s *= scale;
                    bool ok = kind == 1 ? j <= i : kind == 2 ? bm[i * S + j] : true;
                    if (kind == 3) s += fm[i * S + j];
                    sc[j] = ok ? s : -INFINITY;
                    if (ok) any = true;
                    if (sc[j] > mx) mx = sc[j];
                }
                double den = 0;
                for (int64_t j = 0; j < S; j++) den += any ? exp(sc[j] - mx) : 0;
                for (int64_t e = 0; e < Ev; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < S && any; j++)
                        acc += exp(sc[j] - mx) / den * v[(p * S + j) * Ev + e];
                    y[(p * L + i) * Ev + e] = acc;
                }
            }
        FOR_DT_STRIDE {
            gf_tensor *tq = make(q, SZ(b, hh, L, E), 4, dt, strided);
            gf_tensor *tk = make(k, SZ(b, hh, S, E), 4, dt, strided);
            gf_tensor *tv = make(v, SZ(b, hh, S, Ev), 4, dt, strided);
            gf_tensor *mask = NULL;
            if (kind == 2) {
                mask = gf_from_data(bm, SZ(L, S), 2, GF_BOOL, NULL);
            } else if (kind == 3) {
                mask = make(fm, SZ(L, S), 2, dt, false);
            }
            gf_tensor *ty = gf_scaled_dot_product_attention(tq, tk, tv, mask, 0.0, kind == 1,
                                                            kind == 4 ? 0.3 : NAN);
            char what[64];
            snprintf(what, sizeof what, "sdpa kind %d", kind);
            check_vals(what, ty, SZ(b, hh, L, Ev), 4, y, dt);
            gf_tensor_release(tq);
            gf_tensor_release(tk);
            gf_tensor_release(tv);
            gf_tensor_release(mask);
            gf_tensor_release(ty);
        }
    }
    /* dropout_p 1 drops every weight. */
    gf_tensor *tq = make(q, SZ(L, E), 2, GF_F32, false), *tk = make(k, SZ(S, E), 2, GF_F32, false);
    gf_tensor *tv = make(v, SZ(S, Ev), 2, GF_F32, false);
    gf_tensor *ty = gf_scaled_dot_product_attention(tq, tk, tv, NULL, 1.0, false, NAN);
    double z[9] = {0};
    check_vals("sdpa dropout 1", ty, SZ(L, Ev), 2, z, GF_F32);
    gf_tensor_release(ty);
    /* An empty query set. */
    gf_tensor *e = gf_narrow(tq, 0, 0, 0);
    ty = gf_scaled_dot_product_attention(e, tk, tv, NULL, 0.0, false, NAN);
    check_vals("sdpa empty", ty, SZ(0, Ev), 2, z, GF_F32);
    gf_tensor_release(ty);
    gf_tensor_release(e);
    gf_tensor_release(tq);
    gf_tensor_release(tk);
    gf_tensor_release(tv);
}

static void test_linear(void) {
    double x[24], w[12], b[3], y[24];
    fill(x, 24);
    fill(w, 12);
    fill(b, 3);
    for (int i = 0; i < 6; i++)
        for (int o = 0; o < 3; o++) {
            double acc = b[o];
            for (int k = 0; k < 4; k++) acc += x[i * 4 + k] * w[o * 4 + k];
            y[i * 3 + o] = acc;
        }
    FOR_DT_STRIDE {
        gf_tensor *tx = make(x, SZ(2, 3, 4), 3, dt, strided);
        gf_tensor *tw = make(w, SZ(3, 4), 2, dt, strided);
        gf_tensor *tb = make(b, SZ(3), 1, dt, false);
        gf_tensor *ty = gf_linear(tx, tw, tb);
        check_vals("linear", ty, SZ(2, 3, 3), 3, y, dt);
        gf_tensor *x0 = gf_select(tx, 0, 0), *x1 = gf_select(x0, 0, 0);
        gf_tensor *y1 = gf_linear(x1, tw, tb);
        check_vals("linear 1-D", y1, SZ(3), 1, y, dt);
        gf_tensor *e = gf_narrow(tx, 1, 0, 0), *ye = gf_linear(e, tw, tb);
        check_vals("linear empty", ye, SZ(2, 0, 3), 3, y, dt);
        gf_tensor *arr[] = {tx, tw, tb, ty, x0, x1, y1, e, ye};
        for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) gf_tensor_release(arr[i]);
    }
}

int main(void) {
    gf_init();
    fprintf(stderr, "device %s\n", gf_device_spec(gf_device_default()));
    gf_manual_seed(3);
    RUN(test_conv_transpose2d);
    RUN(test_conv1d_family);
    RUN(test_group_instance_norm);
    RUN(test_adaptive_pools);
    RUN(test_interpolate);
    RUN(test_embedding_padding);
    RUN(test_sdpa);
    RUN(test_linear);
    return check_report_();
}
