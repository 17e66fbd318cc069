/* SPDX-License-Identifier: BSD-3-Clause */
/* test_grad_loss_extra.c — the composed losses of graft/nn.h
 * (binary_cross_entropy[_with_logits], l1, smooth_l1, huber, kl_div,
 * margin_ranking, cosine_similarity, cosine_embedding) and cross_entropy
 * with class-probability targets: forward values
 * against scalar loops written from PyTorch's formulas (contiguous,
 * transposed, broadcast, 0-size, every reduction), the errors of each op,
 * and gf_gradcheck / gf_gradgradcheck in f64. */
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "check.h"

static gf_tensor *f64s(const double *v, const int64_t *sizes, int rank, bool grad) {
    gf_tensor *t = gf_from_data(v, sizes, rank, GF_F64, NULL);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    if (t && grad) CHECK(gf_tensor_set_requires_grad(t, true) == GF_OK);
    return t;
}

/* y's values (any layout) against want[n]. */
static void check_values(const char *what, gf_tensor *y, const double *want, int64_t n,
                         double tol) {
    CHECK_MSG(y != NULL, "%s: %s", what, gf_last_error());
    if (!y) return;
    CHECK_MSG(gf_tensor_numel(y) == n, "%s: %lld elements, expected %lld", what,
              (long long)gf_tensor_numel(y), (long long)n);
    if (gf_tensor_numel(y) != n) return;
    gf_tensor *c = gf_contiguous(y);
    gf_tensor *d = c ? gf_to_dtype(c, GF_F64) : NULL;
    double got[64] = {0};
    CHECK(d && n <= 64 && gf_tensor_to_host(d, got, sizeof(double) * (size_t)n) == GF_OK);
    for (int64_t i = 0; i < n; i++)
        CHECK_MSG(check_close_(got[i], want[i], tol, tol), "%s[%lld]: %.17g vs %.17g", what,
                  (long long)i, got[i], want[i]);
    gf_tensor_release(c);
    gf_tensor_release(d);
}

static void reduce_want(const double *el, int64_t n, gf_reduction r, double *out) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += el[i];
    *out = r == GF_REDUCTION_SUM ? s : s / (double)n;
}

static const gf_reduction REDS[3] = {GF_REDUCTION_NONE, GF_REDUCTION_MEAN, GF_REDUCTION_SUM};

/* Checks f's NONE values against el[n] and its MEAN/SUM against theirs. */
#define CHECK_REDUCTIONS(what, call, el, n, tol)                               \
    do {                                                                       \
        for (int ri_ = 0; ri_ < 3; ri_++) {                                    \
            gf_reduction red = REDS[ri_];                                      \
            gf_tensor *y_ = (call);                                            \
            double w_;                                                         \
            if (red == GF_REDUCTION_NONE) {                                    \
                check_values(what, y_, el, n, tol);                            \
            } else {                                                           \
                reduce_want(el, n, red, &w_);                                  \
                check_values(what, y_, &w_, 1, tol);                           \
            }                                                                  \
            gf_tensor_release(y_);                                             \
        }                                                                      \
    } while (0)

/* ------------------------------------------------------------ data */
static const double X6[6] = {0.1, 0.35, 0.9, 0.5, 0.02, 0.75};   /* probabilities */
static const double T6[6] = {1.0, 0.0, 0.3, 1.0, 0.0, 0.6};      /* soft targets */
static const double Z6[6] = {-2.5, 0.4, 3.1, -0.2, 1.7, 0.0};    /* logits */
static const double W3[3] = {0.5, 2.0, 1.5};                      /* per last dim */
static const double D6[6] = {0.3, -1.7, 2.2, 0.05, -0.6, 1.1};
static const double E6[6] = {0.1, 0.4, -0.5, 0.9, -0.65, 3.0};

static void test_bce_forward(void) {
    int64_t s23[2] = {2, 3}, s3 = 3;
    gf_tensor *x = f64s(X6, s23, 2, false), *t = f64s(T6, s23, 2, false);
    gf_tensor *w = f64s(W3, &s3, 1, false);
    double el[6], elw[6];
    for (int i = 0; i < 6; i++) {
        el[i] = -(T6[i] * fmax(log(X6[i]), -100) + (1 - T6[i]) * fmax(log(1 - X6[i]), -100));
        elw[i] = el[i] * W3[i % 3];
    }
    CHECK_REDUCTIONS("bce", gf_binary_cross_entropy(x, t, NULL, red), el, 6, 1e-12);
    CHECK_REDUCTIONS("bce weight", gf_binary_cross_entropy(x, t, w, red), elw, 6, 1e-12);
    /* log clamped at -100: x = 0 with t = 1 costs exactly 100. */
    double x0[2] = {0.0, 1.0}, t0[2] = {1.0, 1.0};
    int64_t two = 2;
    gf_tensor *a = f64s(x0, &two, 1, false), *b = f64s(t0, &two, 1, false);
    gf_tensor *y = gf_binary_cross_entropy(a, b, NULL, GF_REDUCTION_NONE);
    double want[2] = {100.0, 0.0};
    check_values("bce clamp", y, want, 2, 0);
    gf_tensor_release(y);
    /* transposed input and target */
    gf_tensor *xt = gf_transpose(x, 0, 1), *tt = gf_transpose(t, 0, 1);
    y = gf_binary_cross_entropy(xt, tt, NULL, GF_REDUCTION_NONE);
    double elt[6];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) elt[i * 2 + j] = el[j * 3 + i];
    check_values("bce transposed", y, elt, 6, 1e-12);
    gf_tensor_release(y);
    /* 0 elements: mean NaN, sum 0 */
    int64_t s0[2] = {0, 3};
    gf_tensor *e = gf_zeros(s0, 2, GF_F64, NULL);
    y = gf_binary_cross_entropy(e, e, NULL, GF_REDUCTION_MEAN);
    double nan_ = NAN, zero = 0;
    check_values("bce empty mean", y, &nan_, 1, 0);
    gf_tensor_release(y);
    y = gf_binary_cross_entropy(e, e, w, GF_REDUCTION_SUM);
    check_values("bce empty sum", y, &zero, 1, 0);
    gf_tensor_release(y);
    /* f32 */
    gf_tensor *x32 = gf_to_dtype(x, GF_F32), *t32 = gf_to_dtype(t, GF_F32);
    y = gf_binary_cross_entropy(x32, t32, NULL, GF_REDUCTION_NONE);
    CHECK(y && gf_tensor_dtype(y) == GF_F32);
    check_values("bce f32", y, el, 6, 1e-5);
    gf_tensor_release(y);
    gf_tensor *ts[] = {x, t, w, a, b, xt, tt, e, x32, t32};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static double softplus_ref(double v) { return v > 0 ? v + log1p(exp(-v)) : log1p(exp(v)); }

static void test_bce_logits_forward(void) {
    int64_t s23[2] = {2, 3}, s3 = 3;
    gf_tensor *z = f64s(Z6, s23, 2, false), *t = f64s(T6, s23, 2, false);
    gf_tensor *w = f64s(W3, &s3, 1, false);
    double pw3[3] = {3.0, 0.5, 1.0};
    gf_tensor *pw = f64s(pw3, &s3, 1, false);
    double el[6], elp[6];
    for (int i = 0; i < 6; i++) {
        double p = 1 / (1 + exp(-Z6[i]));
        el[i] = -(T6[i] * log(p) + (1 - T6[i]) * log(1 - p));
        elp[i] = -W3[i % 3] * (pw3[i % 3] * T6[i] * log(p) + (1 - T6[i]) * log(1 - p));
    }
    CHECK_REDUCTIONS("bcel", gf_binary_cross_entropy_with_logits(z, t, NULL, NULL, red), el, 6,
                     1e-12);
    CHECK_REDUCTIONS("bcel pos_weight weight",
                     gf_binary_cross_entropy_with_logits(z, t, w, pw, red), elp, 6, 1e-12);
    /* stable at large |x|: 1000 with t = 0 costs 1000; -1000 with t = 0, ~0 */
    double big[3] = {1000.0, -1000.0, 40.0}, tz[3] = {0.0, 0.0, 1.0};
    gf_tensor *a = f64s(big, &s3, 1, false), *b = f64s(tz, &s3, 1, false);
    gf_tensor *y = gf_binary_cross_entropy_with_logits(a, b, NULL, NULL, GF_REDUCTION_NONE);
    double want[3] = {1000.0, 0.0, softplus_ref(-40.0)};
    check_values("bcel large", y, want, 3, 1e-15);
    gf_tensor_release(y);
    gf_tensor *ts[] = {z, t, w, pw, a, b};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static void test_regression_forward(void) {
    int64_t s23[2] = {2, 3}, s3 = 3;
    gf_tensor *d = f64s(D6, s23, 2, false), *e = f64s(E6, s23, 2, false);
    gf_tensor *e3 = f64s(E6, &s3, 1, false); /* broadcast over rows */
    double l1[6], l1b[6], sl[6], sl0[6], hu[6];
    for (int i = 0; i < 6; i++) {
        double z = fabs(D6[i] - E6[i]);
        l1[i] = z;
        l1b[i] = fabs(D6[i] - E6[i % 3]);
        sl[i] = z < 0.5 ? 0.5 * z * z / 0.5 : z - 0.25;
        sl0[i] = z;
        hu[i] = z < 1.5 ? 0.5 * z * z : 1.5 * (z - 0.75);
    }
    CHECK_REDUCTIONS("l1", gf_l1_loss(d, e, red), l1, 6, 1e-14);
    CHECK_REDUCTIONS("l1 broadcast", gf_l1_loss(d, e3, red), l1b, 6, 1e-14);
    CHECK_REDUCTIONS("smooth_l1 0.5", gf_smooth_l1_loss(d, e, red, 0.5), sl, 6, 1e-14);
    CHECK_REDUCTIONS("smooth_l1 0", gf_smooth_l1_loss(d, e, red, 0.0), sl0, 6, 1e-14);
    CHECK_REDUCTIONS("huber 1.5", gf_huber_loss(d, e, red, 1.5), hu, 6, 1e-14);
    /* 0 elements: none is empty, mean NaN, sum 0 (every pointwise loss) */
    int64_t s03[2] = {0, 3};
    gf_tensor *z0 = gf_zeros(s03, 2, GF_F64, NULL);
    double nan_ = NAN, zero = 0;
    for (int k = 0; k < 6; k++) {
        gf_tensor *y[3];
        for (int r = 0; r < 3; r++) {
            gf_reduction red = REDS[r];
            y[r] = k == 0 ? gf_l1_loss(z0, e3, red)
                 : k == 1 ? gf_smooth_l1_loss(z0, z0, red, 1.0)
                 : k == 2 ? gf_huber_loss(z0, z0, red, 1.0)
                 : k == 3 ? gf_kl_div(z0, z0, red, k == 3)
                 : k == 4 ? gf_binary_cross_entropy_with_logits(z0, z0, NULL, e3, red)
                          : gf_margin_ranking_loss(z0, z0, z0, 0.5, red);
        }
        CHECK_MSG(y[0] && gf_tensor_numel(y[0]) == 0 && gf_tensor_size(y[0], 1) == 3,
                  "empty loss %d: %s", k, gf_last_error());
        check_values("empty mean", y[1], &nan_, 1, 0);
        check_values("empty sum", y[2], &zero, 1, 0);
        for (int r = 0; r < 3; r++) gf_tensor_release(y[r]);
    }
    gf_tensor *cs = gf_cosine_similarity(z0, e3, 1, 1e-8);
    CHECK(cs && gf_tensor_rank(cs) == 1 && gf_tensor_size(cs, 0) == 0);
    gf_tensor_release(cs);
    gf_tensor_release(z0);
    gf_tensor *ts[] = {d, e, e3};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static void test_kl_div_forward(void) {
    int64_t s23[2] = {2, 3};
    double lp[6], tp[6] = {0.2, 0.0, 0.8, 0.5, 0.25, 0.25}, lt[6];
    for (int i = 0; i < 6; i++) lp[i] = log((i % 3 + 1) / 6.0);
    for (int i = 0; i < 6; i++) lt[i] = log(0.1 + 0.1 * i);
    gf_tensor *in = f64s(lp, s23, 2, false), *t = f64s(tp, s23, 2, false);
    gf_tensor *tl = f64s(lt, s23, 2, false);
    double el[6], ell[6];
    for (int i = 0; i < 6; i++) {
        el[i] = (tp[i] > 0 ? tp[i] * log(tp[i]) : 0) - tp[i] * lp[i];
        ell[i] = exp(lt[i]) * (lt[i] - lp[i]);
    }
    CHECK_REDUCTIONS("kl_div", gf_kl_div(in, t, red, false), el, 6, 1e-14);
    CHECK_REDUCTIONS("kl_div log_target", gf_kl_div(in, tl, red, true), ell, 6, 1e-14);
    double bm = 0;
    for (int i = 0; i < 6; i++) bm += el[i];
    bm /= 2;
    gf_tensor *y = gf_kl_div(in, t, GF_REDUCTION_BATCHMEAN, false);
    check_values("kl_div batchmean", y, &bm, 1, 1e-14);
    gf_tensor_release(y);
    /* a negative target gives NaN, as PyTorch's xlogy */
    double neg = -0.5, nan_ = NAN;
    gf_tensor *n = f64s(&neg, NULL, 0, false), *zero = f64s(lp, NULL, 0, false);
    y = gf_kl_div(zero, n, GF_REDUCTION_NONE, false);
    check_values("kl_div negative target", y, &nan_, 1, 0);
    gf_tensor_release(y);
    /* batchmean of a 0-dim loss is its sum */
    y = gf_kl_div(zero, tl, GF_REDUCTION_BATCHMEAN, true);
    double s0 = 0;
    for (int i = 0; i < 6; i++) s0 += exp(lt[i]) * (lt[i] - lp[0]);
    s0 /= 2;
    check_values("kl_div broadcast batchmean", y, &s0, 1, 1e-14);
    gf_tensor_release(y);
    gf_tensor *ts[] = {in, t, tl, n, zero};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static void test_ranking_cosine_forward(void) {
    int64_t s23[2] = {2, 3}, s2 = 2, s3 = 3;
    double y3[3] = {1, -1, 1};
    gf_tensor *a = f64s(D6, s23, 2, false), *b = f64s(E6, s23, 2, false);
    gf_tensor *y = f64s(y3, &s3, 1, false);
    gf_tensor *y2 = gf_unsqueeze(y, 0);
    double el[6];
    for (int i = 0; i < 6; i++) el[i] = fmax(0.0, -y3[i % 3] * (D6[i] - E6[i]) + 0.3);
    CHECK_REDUCTIONS("margin_ranking", gf_margin_ranking_loss(a, b, y2, 0.3, red), el, 6,
                     1e-14);
    /* cosine similarity along dim 1 and along dim 0 */
    double c1[2], c0[3];
    for (int r = 0; r < 2; r++) {
        double p = 0, na = 0, nb = 0;
        for (int k = 0; k < 3; k++) {
            p += D6[r * 3 + k] * E6[r * 3 + k];
            na += D6[r * 3 + k] * D6[r * 3 + k];
            nb += E6[r * 3 + k] * E6[r * 3 + k];
        }
        c1[r] = p / (fmax(sqrt(na), 1e-8) * fmax(sqrt(nb), 1e-8));
    }
    for (int k = 0; k < 3; k++) {
        double p = D6[k] * E6[k] + D6[3 + k] * E6[3 + k];
        double na = D6[k] * D6[k] + D6[3 + k] * D6[3 + k];
        double nb = E6[k] * E6[k] + E6[3 + k] * E6[3 + k];
        c0[k] = p / (sqrt(na) * sqrt(nb));
    }
    gf_tensor *r = gf_cosine_similarity(a, b, 1, 1e-8);
    check_values("cosine_similarity dim 1", r, c1, 2, 1e-14);
    gf_tensor_release(r);
    r = gf_cosine_similarity(a, b, -2, 1e-8);
    check_values("cosine_similarity dim -2", r, c0, 3, 1e-14);
    gf_tensor_release(r);
    /* broadcast: a [2, 3] against b's first row [3] */
    gf_tensor *b0 = gf_select(b, 0, 0);
    r = gf_cosine_similarity(a, b0, -1, 1e-8);
    double cb[2];
    for (int q = 0; q < 2; q++) {
        double p = 0, na = 0, nb = 0;
        for (int k = 0; k < 3; k++) {
            p += D6[q * 3 + k] * E6[k];
            na += D6[q * 3 + k] * D6[q * 3 + k];
            nb += E6[k] * E6[k];
        }
        cb[q] = p / (sqrt(na) * sqrt(nb));
    }
    check_values("cosine_similarity broadcast", r, cb, 2, 1e-14);
    gf_tensor_release(r);
    /* a zero vector: 0 (eps clamps the norm) */
    gf_tensor *zr = gf_zeros(&s3, 1, GF_F64, NULL);
    r = gf_cosine_similarity(zr, b0, 0, 1e-8);
    double zero = 0;
    check_values("cosine_similarity zero", r, &zero, 1, 0);
    gf_tensor_release(r);
    /* cosine embedding loss, PyTorch's 1e-12 in the squared norms */
    double t2[2] = {1, -1}, ce[2];
    gf_tensor *t = f64s(t2, &s2, 1, false);
    for (int q = 0; q < 2; q++) {
        double p = 0, na = 1e-12, nb = 1e-12;
        for (int k = 0; k < 3; k++) {
            p += D6[q * 3 + k] * E6[q * 3 + k];
            na += D6[q * 3 + k] * D6[q * 3 + k];
            nb += E6[q * 3 + k] * E6[q * 3 + k];
        }
        double cs = p / sqrt(na * nb);
        ce[q] = t2[q] == 1 ? 1 - cs : fmax(0.0, cs - (-0.2));
    }
    CHECK_REDUCTIONS("cosine_embedding", gf_cosine_embedding_loss(a, b, t, -0.2, red), ce, 2,
                     1e-14);
    gf_tensor *ts[] = {a, b, y, y2, b0, zr, t};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

/* cross_entropy with class-probability targets (ops_loss.c), forward
 * values: -sum_c w_c t'_c log_softmax(x)_c, t' = (1 - ls) t + ls / C; mean
 * divides by the number of samples. */
static void test_cross_entropy_probs_forward(void) {
    int64_t s23[2] = {2, 3}, s3 = 3;
    double t6[6] = {0.2, 0.5, 0.3, 1.0, 0.0, 0.0};
    gf_tensor *x = f64s(Z6, s23, 2, false), *t = f64s(t6, s23, 2, false);
    gf_tensor *w = f64s(W3, &s3, 1, false);
    for (int wi = 0; wi < 2; wi++)
        for (int li = 0; li < 2; li++) {
            double ls = li ? 0.2 : 0.0, el[2];
            for (int r = 0; r < 2; r++) {
                double m = -INFINITY, se = 0, l = 0;
                for (int c = 0; c < 3; c++) m = fmax(m, Z6[r * 3 + c]);
                for (int c = 0; c < 3; c++) se += exp(Z6[r * 3 + c] - m);
                for (int c = 0; c < 3; c++) {
                    double lp = Z6[r * 3 + c] - m - log(se);
                    double tt = (1 - ls) * t6[r * 3 + c] + ls / 3;
                    l -= (wi ? W3[c] : 1.0) * tt * lp;
                }
                el[r] = l;
            }
            double sum = el[0] + el[1], mean = sum / 2;
            gf_tensor *y = gf_cross_entropy(x, t, wi ? w : NULL, GF_REDUCTION_NONE, -100, ls);
            check_values("cross_entropy probs none", y, el, 2, 1e-14);
            gf_tensor_release(y);
            y = gf_cross_entropy(x, t, wi ? w : NULL, GF_REDUCTION_MEAN, -100, ls);
            check_values("cross_entropy probs mean", y, &mean, 1, 1e-14);
            gf_tensor_release(y);
            y = gf_cross_entropy(x, t, wi ? w : NULL, GF_REDUCTION_SUM, -100, ls);
            check_values("cross_entropy probs sum", y, &sum, 1, 1e-14);
            gf_tensor_release(y);
        }
    /* transposed logits and targets ([3, 2] stored, read as [2, 3]) */
    int64_t s32[2] = {3, 2};
    double zt[6], tt[6];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) {
            zt[c * 2 + r] = Z6[r * 3 + c];
            tt[c * 2 + r] = t6[r * 3 + c];
        }
    gf_tensor *a = f64s(zt, s32, 2, false), *b = f64s(tt, s32, 2, false);
    gf_tensor *av = gf_transpose(a, 0, 1), *bv = gf_transpose(b, 0, 1);
    gf_tensor *y1 = gf_cross_entropy(av, bv, NULL, GF_REDUCTION_NONE, -100, 0.0);
    gf_tensor *y2 = gf_cross_entropy(x, t, NULL, GF_REDUCTION_NONE, -100, 0.0);
    double v2[2] = {0, 0};
    CHECK(y2 && gf_tensor_to_host(y2, v2, sizeof v2) == GF_OK);
    check_values("cross_entropy probs transposed", y1, v2, 2, 1e-14);
    /* errors: shape, dtype */
    gf_tensor *t32 = gf_to_dtype(t, GF_F32);
    gf_tensor *e = gf_cross_entropy(x, a, NULL, GF_REDUCTION_MEAN, -100, 0.0);
    CHECK(e == NULL && gf_last_status() == GF_ERR_SHAPE);
    CHECK_CONTAINS(gf_last_error(), "cross_entropy: a float target holds class probabilities");
    e = gf_cross_entropy(x, t32, NULL, GF_REDUCTION_MEAN, -100, 0.0);
    CHECK(e == NULL && gf_last_status() == GF_ERR_DTYPE);
    gf_tensor *ts[] = {x, t, w, a, b, av, bv, y1, y2, t32};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

/* Probability targets on [N, C, d] logits (class dim 1) and on [C] logits
 * (one sample, a 0-dim loss): forward against scalar loops for each
 * reduction (mean divides by N * d), and gradcheck / gradgradcheck in both
 * arguments for each reduction, with label smoothing and class weights. */
typedef struct ce_case {
    gf_reduction red;
    bool weighted;
    double ls;
    const gf_tensor *w;
} ce_case;

static gf_tensor *run_ce(gf_tensor *const *in, int n, void *user) {
    const ce_case *c = user;
    (void)n;
    return gf_cross_entropy(in[0], in[1], c->weighted ? c->w : NULL, c->red, -100, c->ls);
}

static void test_cross_entropy_probs_ncd(void) {
    int64_t s[3] = {2, 3, 2}, s3 = 3;
    double z[12], t[12];
    for (int i = 0; i < 12; i++) z[i] = 0.7 * sin(1.3 * i + 0.2) + 0.1 * i;
    for (int nn = 0; nn < 2; nn++) /* targets: per (n, d) a distribution over c */
        for (int d = 0; d < 2; d++) {
            double a = 0.2 + 0.3 * nn + 0.1 * d, b = 0.5 - 0.2 * d;
            double p[3] = {a, b, 1 - a - b};
            for (int c = 0; c < 3; c++) t[nn * 6 + c * 2 + d] = p[c];
        }
    gf_tensor *x = f64s(z, s, 3, true), *tt = f64s(t, s, 3, true), *w = f64s(W3, &s3, 1, false);
    for (int wi = 0; wi < 2; wi++) {
        double ls = wi ? 0.15 : 0.0, el[4];
        for (int nn = 0; nn < 2; nn++)
            for (int d = 0; d < 2; d++) {
                double m = -INFINITY, se = 0, l = 0;
                for (int c = 0; c < 3; c++) m = fmax(m, z[nn * 6 + c * 2 + d]);
                for (int c = 0; c < 3; c++) se += exp(z[nn * 6 + c * 2 + d] - m);
                for (int c = 0; c < 3; c++) {
                    double lp = z[nn * 6 + c * 2 + d] - m - log(se);
                    double tc = (1 - ls) * t[nn * 6 + c * 2 + d] + ls / 3;
                    l -= (wi ? W3[c] : 1.0) * tc * lp;
                }
                el[nn * 2 + d] = l;
            }
        ce_case c = {.weighted = wi == 1, .ls = ls, .w = w};
        CHECK_REDUCTIONS("cross_entropy probs [N, C, d]",
                         (c.red = red, run_ce((gf_tensor *[]){x, tt}, 2, &c)), el, 4, 1e-14);
        for (int ri = 0; ri < 3; ri++) {
            c.red = REDS[ri];
            gf_tensor *in[2] = {x, tt};
            gf_status st = gf_gradcheck(run_ce, in, 2, &c, NULL);
            CHECK_MSG(st == GF_OK, "ce probs [N, C, d] red %d w %d gradcheck: %s", ri, wi,
                      gf_last_error());
            st = gf_gradgradcheck(run_ce, in, 2, &c, NULL);
            CHECK_MSG(st == GF_OK, "ce probs [N, C, d] red %d w %d gradgradcheck: %s", ri, wi,
                      gf_last_error());
        }
    }
    /* [C] logits: one sample, a 0-dim loss whatever the reduction */
    gf_tensor *x1 = f64s(z, &s3, 1, true), *t1 = f64s((double[]){0.1, 0.6, 0.3}, &s3, 1, true);
    double m = fmax(fmax(z[0], z[1]), z[2]), se = exp(z[0] - m) + exp(z[1] - m) + exp(z[2] - m);
    double want = 0;
    double tv[3] = {0.1, 0.6, 0.3};
    for (int c = 0; c < 3; c++) want -= tv[c] * (z[c] - m - log(se));
    for (int ri = 0; ri < 3; ri++) {
        ce_case c = {.red = REDS[ri]};
        gf_tensor *in[2] = {x1, t1};
        gf_tensor *y = run_ce(in, 2, &c);
        CHECK(y && gf_tensor_rank(y) == 0);
        check_values("cross_entropy probs [C]", y, &want, 1, 1e-14);
        gf_tensor_release(y);
        CHECK_MSG(gf_gradgradcheck(run_ce, in, 2, &c, NULL) == GF_OK, "ce probs [C]: %s",
                  gf_last_error());
    }
    gf_tensor *ts[] = {x, tt, w, x1, t1};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

/* ------------------------------------------------------------ errors */
#define CHECK_ERR(expr, code, text)                                              \
    do {                                                                         \
        gf_tensor *e_ = (expr);                                                  \
        CHECK_MSG(e_ == NULL && gf_last_status() == (code), "%s", #expr);        \
        CHECK_CONTAINS(gf_last_error(), text);                                   \
        gf_tensor_release(e_);                                                   \
    } while (0)

static void test_errors(void) {
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s2 = 2, s4 = 4;
    gf_tensor *a = f64s(X6, s23, 2, false), *b = f64s(T6, s32, 2, false);
    gf_tensor *i = gf_zeros(s23, 2, GF_I64, NULL), *w4 = gf_ones(&s4, 1, GF_F64, NULL);
    gf_tensor *v2 = gf_ones(&s2, 1, GF_F64, NULL), *z = f64s(Z6, s23, 2, false);
    gf_reduction bad = (gf_reduction)7;
    CHECK_ERR(gf_binary_cross_entropy(a, b, NULL, GF_REDUCTION_MEAN), GF_ERR_SHAPE,
              "binary_cross_entropy: target size [3, 2] must be the same as input size [2, 3]");
    CHECK_ERR(gf_binary_cross_entropy(a, a, w4, GF_REDUCTION_MEAN), GF_ERR_SHAPE,
              "binary_cross_entropy");
    CHECK_ERR(gf_binary_cross_entropy(a, a, NULL, bad), GF_ERR_INVALID,
              "binary_cross_entropy: reduction 7");
    CHECK_ERR(gf_binary_cross_entropy(a, a, NULL, GF_REDUCTION_BATCHMEAN), GF_ERR_INVALID,
              "reduction 3");
    CHECK_ERR(gf_binary_cross_entropy(z, a, NULL, GF_REDUCTION_MEAN), GF_ERR_INVALID,
              "between 0 and 1");
    CHECK_ERR(gf_binary_cross_entropy(i, a, NULL, GF_REDUCTION_MEAN), GF_ERR_DTYPE,
              "binary_cross_entropy: input must have a float dtype");
    gf_clear_error();
    CHECK_ERR(gf_binary_cross_entropy(NULL, a, NULL, GF_REDUCTION_MEAN), GF_ERR_INVALID,
              "binary_cross_entropy");
    CHECK_ERR(gf_binary_cross_entropy_with_logits(z, b, NULL, NULL, GF_REDUCTION_SUM),
              GF_ERR_SHAPE, "binary_cross_entropy_with_logits: target size");
    CHECK_ERR(gf_binary_cross_entropy_with_logits(z, a, NULL, v2, GF_REDUCTION_SUM),
              GF_ERR_SHAPE, "binary_cross_entropy_with_logits");
    CHECK_ERR(gf_binary_cross_entropy_with_logits(z, a, NULL, NULL, bad), GF_ERR_INVALID,
              "binary_cross_entropy_with_logits: reduction");
    CHECK_ERR(gf_l1_loss(a, b, GF_REDUCTION_MEAN), GF_ERR_SHAPE, "l1_loss");
    CHECK_ERR(gf_l1_loss(a, i, GF_REDUCTION_MEAN), GF_ERR_DTYPE, "l1_loss: target");
    CHECK_ERR(gf_l1_loss(a, a, bad), GF_ERR_INVALID, "l1_loss: reduction");
    CHECK_ERR(gf_smooth_l1_loss(a, b, GF_REDUCTION_MEAN, 1.0), GF_ERR_SHAPE, "smooth_l1_loss");
    CHECK_ERR(gf_smooth_l1_loss(a, a, GF_REDUCTION_MEAN, -1.0), GF_ERR_INVALID,
              "smooth_l1_loss: beta");
    CHECK_ERR(gf_smooth_l1_loss(a, a, GF_REDUCTION_MEAN, NAN), GF_ERR_INVALID,
              "smooth_l1_loss: beta");
    CHECK_ERR(gf_huber_loss(a, a, GF_REDUCTION_MEAN, 0.0), GF_ERR_INVALID, "huber_loss: delta");
    CHECK_ERR(gf_huber_loss(a, b, GF_REDUCTION_MEAN, 1.0), GF_ERR_SHAPE, "huber_loss");
    CHECK_ERR(gf_kl_div(a, b, GF_REDUCTION_BATCHMEAN, false), GF_ERR_SHAPE, "kl_div");
    CHECK_ERR(gf_kl_div(a, a, bad, false), GF_ERR_INVALID, "kl_div: reduction 7");
    CHECK_ERR(gf_margin_ranking_loss(a, a, v2, 0.0, GF_REDUCTION_MEAN), GF_ERR_SHAPE,
              "margin_ranking_loss: all input tensors should have the same rank");
    CHECK_ERR(gf_margin_ranking_loss(a, b, a, 0.0, GF_REDUCTION_MEAN), GF_ERR_SHAPE,
              "margin_ranking_loss");
    CHECK_ERR(gf_margin_ranking_loss(a, a, a, 0.0, bad), GF_ERR_INVALID,
              "margin_ranking_loss: reduction");
    CHECK_ERR(gf_cosine_similarity(a, b, 1, 1e-8), GF_ERR_SHAPE, "cosine_similarity");
    CHECK_ERR(gf_cosine_similarity(a, a, 2, 1e-8), GF_ERR_INDEX, "cosine_similarity: dim 2");
    CHECK_ERR(gf_cosine_similarity(a, a, -3, 1e-8), GF_ERR_INDEX, "cosine_similarity: dim -3");
    CHECK_ERR(gf_cosine_similarity(a, a, 0, -1.0), GF_ERR_INVALID, "cosine_similarity: eps");
    CHECK_ERR(gf_cosine_similarity(i, a, 0, 1e-8), GF_ERR_DTYPE, "cosine_similarity: x1");
    CHECK_ERR(gf_cosine_embedding_loss(a, b, v2, 0.0, GF_REDUCTION_MEAN), GF_ERR_SHAPE,
              "cosine_embedding_loss: input1 and input2");
    CHECK_ERR(gf_cosine_embedding_loss(a, a, a, 0.0, GF_REDUCTION_MEAN), GF_ERR_SHAPE,
              "cosine_embedding_loss: target must be [N]");
    CHECK_ERR(gf_cosine_embedding_loss(a, a, w4, 0.0, GF_REDUCTION_MEAN), GF_ERR_SHAPE,
              "cosine_embedding_loss: target");
    CHECK_ERR(gf_cosine_embedding_loss(a, a, v2, 0.0, bad), GF_ERR_INVALID,
              "cosine_embedding_loss: reduction");
    gf_tensor *ts[] = {a, b, i, w4, v2, z};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) gf_tensor_release(ts[k]);
}

/* ------------------------------------------------------------ gradients */
typedef enum { BCE, BCEL, L1, SMOOTH, HUBER, KL, KL_LOG, RANK, COS, COSEMB } which;

typedef struct gcase {
    which op;
    gf_reduction red;
    bool transposed; /* the rank-2 inputs are stored transposed */
    gf_tensor *aux, *aux2;
    double p;
    int dim;
} gcase;

static gf_tensor *run(gf_tensor *const *in, int n, void *user) {
    const gcase *c = user;
    gf_tensor *v[3] = {NULL, NULL, NULL};
    for (int i = 0; i < n; i++)
        v[i] = c->transposed && gf_tensor_rank(in[i]) == 2 ? gf_transpose(in[i], 0, 1)
                                                           : gf_tensor_retain(in[i]);
    gf_tensor *y = NULL;
    switch (c->op) {
    case BCE: y = gf_binary_cross_entropy(v[0], v[1], n > 2 ? v[2] : NULL, c->red); break;
    case BCEL:
        y = gf_binary_cross_entropy_with_logits(v[0], v[1], c->aux, n > 2 ? v[2] : NULL, c->red);
        break;
    case L1: y = gf_l1_loss(v[0], v[1], c->red); break;
    case SMOOTH: y = gf_smooth_l1_loss(v[0], v[1], c->red, c->p); break;
    case HUBER: y = gf_huber_loss(v[0], v[1], c->red, c->p); break;
    case KL: y = gf_kl_div(v[0], v[1], c->red, false); break;
    case KL_LOG: y = gf_kl_div(v[0], v[1], c->red, true); break;
    case RANK: y = gf_margin_ranking_loss(v[0], v[1], c->aux, c->p, c->red); break;
    case COS: y = gf_cosine_similarity(v[0], v[1], c->dim, 1e-8); break;
    case COSEMB: y = gf_cosine_embedding_loss(v[0], v[1], c->aux, c->p, c->red); break;
    }
    for (int i = 0; i < n; i++) gf_tensor_release(v[i]);
    return y;
}

static void grad_case(const char *name, gcase *c, gf_tensor **in, int n) {
    gf_status s = gf_gradcheck(run, in, n, c, NULL);
    CHECK_MSG(s == GF_OK, "%s gradcheck: %s", name, gf_last_error());
    s = gf_gradgradcheck(run, in, n, c, NULL);
    CHECK_MSG(s == GF_OK, "%s gradgradcheck: %s", name, gf_last_error());
}

/* [3, 2] leaves (used transposed as [2, 3]) or [2, 3] leaves. */
static gf_tensor *leaf6(const double *v, bool transposed) {
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    return f64s(v, transposed ? s32 : s23, 2, true);
}

static void release_all(gf_tensor **t, int n) {
    for (int i = 0; i < n; i++) gf_tensor_release(t[i]);
}

static void test_gradients(void) {
    static const char *rn[3] = {"none", "mean", "sum"};
    int64_t s3 = 3, s2 = 2;
    double pos[3] = {2.0, 0.5, 1.3};
    double sgn3[3] = {1, -1, 1}, sgn2[2] = {-1, 1};
    double lp[6];
    for (int i = 0; i < 6; i++) lp[i] = log(0.05 + 0.1 * i);
    gf_tensor *pw = f64s(pos, &s3, 1, false), *y3 = f64s(sgn3, &s3, 1, false);
    gf_tensor *y13 = gf_unsqueeze(y3, 0), *y2 = f64s(sgn2, &s2, 1, false);
    for (int ri = 0; ri < 3; ri++) {
        for (int tr = 0; tr < 2; tr++) {
            bool t = tr == 1;
            char name[96];
            gcase c = {.red = REDS[ri], .transposed = t};
#define NAME(s) (snprintf(name, sizeof name, "%s %s%s", s, rn[ri], t ? " transposed" : ""), name)
            {
                /* weight and pos_weight [3]: broadcast along rows, as inputs */
                gf_tensor *in[3] = {leaf6(X6, t), leaf6(T6, t), f64s(W3, &s3, 1, true)};
                c.op = BCE;
                grad_case(NAME("bce"), &c, in, 2);
                grad_case(NAME("bce weight"), &c, in, 3);
                release_all(in, 3);
                gf_tensor *in2[3] = {leaf6(Z6, t), leaf6(T6, t), f64s(pos, &s3, 1, true)};
                c.op = BCEL;
                grad_case(NAME("bce_with_logits"), &c, in2, 2);
                grad_case(NAME("bce_with_logits pos_weight"), &c, in2, 3);
                c.aux = pw; /* weight, constant, with pos_weight */
                grad_case(NAME("bce_with_logits weight pos_weight"), &c, in2, 3);
                c.aux = NULL;
                release_all(in2, 3);
            }
            {
                gf_tensor *in[2] = {leaf6(D6, t), leaf6(E6, t)};
                c.op = L1;
                grad_case(NAME("l1"), &c, in, 2);
                c.op = SMOOTH;
                c.p = 0.8;
                grad_case(NAME("smooth_l1"), &c, in, 2);
                c.op = HUBER;
                c.p = 1.2;
                grad_case(NAME("huber"), &c, in, 2);
                c.op = RANK;
                c.aux = t ? NULL : y13;
                c.p = 0.4;
                if (!t) grad_case(NAME("margin_ranking"), &c, in, 2);
                c.aux = NULL;
                c.op = COS;
                c.dim = ri - 1; /* -1, 0, 1 */
                grad_case(NAME("cosine_similarity"), &c, in, 2);
                c.op = COSEMB;
                c.aux = t ? NULL : y2;
                c.p = -0.3;
                if (!t) grad_case(NAME("cosine_embedding"), &c, in, 2);
                c.aux = NULL;
                release_all(in, 2);
            }
            {
                gf_tensor *in[2] = {leaf6(lp, t), leaf6(X6, t)}; /* t > 0 */
                c.op = KL;
                c.red = ri == 1 ? GF_REDUCTION_BATCHMEAN : REDS[ri];
                grad_case(NAME("kl_div"), &c, in, 2);
                release_all(in, 2);
                gf_tensor *in2[2] = {leaf6(lp, t), leaf6(E6, t)};
                c.op = KL_LOG;
                c.red = REDS[ri];
                grad_case(NAME("kl_div log_target"), &c, in2, 2);
                release_all(in2, 2);
            }
#undef NAME
        }
    }
    gf_tensor *ts[] = {pw, y3, y13, y2};
    release_all(ts, 4);
}

/* A zero vector in cosine_similarity and a zero target in kl_div have
 * finite gradients (no NaN from sqrt(0) or log(0)). */
static void test_finite_at_zero(void) {
    int64_t s3 = 3;
    double z3[3] = {0, 0, 0}, b3[3] = {0.5, -1, 2}, t3[3] = {0.0, 0.4, 0.6};
    gf_tensor *z = f64s(z3, &s3, 1, true), *b = f64s(b3, &s3, 1, true);
    gf_tensor *y = gf_cosine_similarity(z, b, 0, 1e-8);
    CHECK(y && gf_backward(y, NULL, NULL) == GF_OK);
    gf_tensor *gz = gf_tensor_grad(z), *gb = gf_tensor_grad(b);
    double g[3];
    CHECK(gz && gf_tensor_to_host(gz, g, sizeof g) == GF_OK);
    for (int i = 0; i < 3; i++) CHECK_MSG(isfinite(g[i]), "cos grad z[%d] = %g", i, g[i]);
    CHECK(gb && gf_tensor_to_host(gb, g, sizeof g) == GF_OK);
    for (int i = 0; i < 3; i++) CHECK_CLOSE(g[i], 0.0, 0);
    gf_tensor_release(gz);
    gf_tensor_release(gb);
    gf_tensor_release(y);
    gf_tensor *lp = f64s(b3, &s3, 1, true), *t = f64s(t3, &s3, 1, true);
    y = gf_kl_div(lp, t, GF_REDUCTION_SUM, false);
    CHECK(y && gf_backward(y, NULL, NULL) == GF_OK);
    gf_tensor *gt = gf_tensor_grad(t);
    CHECK(gt && gf_tensor_to_host(gt, g, sizeof g) == GF_OK);
    CHECK_CLOSE(g[0], 0.0 - b3[0], 1e-15); /* xlogy's gradient 0 at t = 0, minus input */
    for (int i = 1; i < 3; i++) CHECK_CLOSE(g[i], log(t3[i]) + 1 - b3[i], 1e-14);
    gf_tensor_release(gt);
    gf_tensor *ts[] = {y, z, b, lp, t};
    release_all(ts, 5);
}

int main(void) {
    RUN(test_bce_forward);
    RUN(test_bce_logits_forward);
    RUN(test_regression_forward);
    RUN(test_kl_div_forward);
    RUN(test_ranking_cosine_forward);
    RUN(test_cross_entropy_probs_forward);
    RUN(test_cross_entropy_probs_ncd);
    RUN(test_errors);
    RUN(test_gradients);
    RUN(test_finite_at_zero);
    return CHECK_REPORT();
}
