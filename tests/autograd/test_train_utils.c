/* SPDX-License-Identifier: BSD-3-Clause */
/* test_train_utils.c — gf_clip_grad_norm_ / gf_clip_grad_value_ against
 * hand-computed norms and scaled gradients, and the torch.nn.init-style
 * initialisers: fans, gains, bounds, sample moments, determinism under a
 * seed, no history recorded, and their errors. */
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "check.h"

static gf_tensor *param(const double *v, const int64_t *sizes, int rank) {
    gf_tensor *t = gf_from_data(v, sizes, rank, GF_F64, NULL);
    CHECK(t && gf_tensor_set_requires_grad(t, true) == GF_OK);
    return t;
}

static void set_grad(gf_tensor *p, const double *g) {
    gf_tensor *t = gf_from_data(g, gf_tensor_sizes(p), gf_tensor_rank(p), GF_F64, NULL);
    CHECK(t && gf_tensor_set_grad(p, t) == GF_OK);
    gf_tensor_release(t);
}

static void grad_values(gf_tensor *p, double *out, size_t n) {
    gf_tensor *g = gf_tensor_grad(p);
    CHECK(g && gf_tensor_to_host(g, out, n * sizeof(double)) == GF_OK);
    gf_tensor_release(g);
}

static const double GA[3] = {3.0, -4.0, 1.0}, GB[2] = {-2.0, 0.5};

static void test_clip_grad_norm(void) {
    int64_t s3 = 3, s2 = 2;
    double z[3] = {0, 0, 0};
    double norms[3] = {2.0, INFINITY, 1.0};
    double totals[3] = {sqrt(9 + 16 + 1 + 4 + 0.25), 4.0, 3 + 4 + 1 + 2 + 0.5};
    for (int k = 0; k < 3; k++) {
        gf_tensor *p[3] = {param(z, &s3, 1), param(z, &s2, 1), param(z, &s2, 1)};
        set_grad(p[0], GA);
        set_grad(p[1], GB); /* p[2] has no gradient: skipped */
        double total = -1;
        CHECK_MSG(gf_clip_grad_norm_(p, 3, 1.5, norms[k], true, &total) == GF_OK, "%s",
                  gf_last_error());
        CHECK_CLOSE(total, totals[k], 1e-14);
        double coef = 1.5 / (totals[k] + 1e-6), ga[3], gb[2];
        grad_values(p[0], ga, 3);
        grad_values(p[1], gb, 2);
        for (int i = 0; i < 3; i++) CHECK_CLOSE(ga[i], GA[i] * coef, 1e-14);
        for (int i = 0; i < 2; i++) CHECK_CLOSE(gb[i], GB[i] * coef, 1e-14);
        CHECK(gf_tensor_grad(p[2]) == NULL);
        /* a max_norm above the total leaves the gradients alone */
        CHECK(gf_clip_grad_norm_(p, 3, 100.0, norms[k], false, &total) == GF_OK);
        grad_values(p[0], ga, 3);
        for (int i = 0; i < 3; i++) CHECK_CLOSE(ga[i], GA[i] * coef, 1e-14);
        for (int i = 0; i < 3; i++) gf_tensor_release(p[i]);
    }
    /* p = 3, no gradients at all, max_norm 0 */
    gf_tensor *q = param(z, &s3, 1);
    double total = -1;
    CHECK(gf_clip_grad_norm_(&q, 1, 1.0, 2.0, true, &total) == GF_OK && total == 0.0);
    set_grad(q, GA);
    CHECK(gf_clip_grad_norm_(&q, 1, 1.0, 3.0, true, &total) == GF_OK);
    CHECK_CLOSE(total, cbrt(27 + 64 + 1), 1e-14);
    CHECK(gf_clip_grad_norm_(&q, 1, 0.0, 2.0, true, &total) == GF_OK);
    double g[3];
    grad_values(q, g, 3);
    for (int i = 0; i < 3; i++) CHECK_CLOSE(g[i], 0.0, 0);
    /* non-finite: refused with error_if_nonfinite (nothing scaled), scaled
     * (to NaN) without */
    double bad[3] = {1.0, NAN, 2.0};
    set_grad(q, bad);
    CHECK(gf_clip_grad_norm_(&q, 1, 1.0, 2.0, true, &total) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "clip_grad_norm_: the total norm of order 2");
    grad_values(q, g, 3);
    CHECK(g[0] == 1.0 && g[2] == 2.0);
    CHECK(gf_clip_grad_norm_(&q, 1, 1.0, INFINITY, false, &total) == GF_OK && isnan(total));
    grad_values(q, g, 3);
    CHECK(isnan(g[0]));
    /* errors */
    CHECK(gf_clip_grad_norm_(&q, 1, 1.0, 0.0, false, NULL) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "clip_grad_norm_: norm_type 0");
    CHECK(gf_clip_grad_norm_(&q, 1, 1.0, -INFINITY, false, NULL) == GF_ERR_INVALID);
    CHECK(gf_clip_grad_norm_(&q, 1, -1.0, 2.0, false, NULL) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "max_norm");
    gf_tensor *nul[1] = {NULL};
    CHECK(gf_clip_grad_norm_(nul, 1, 1.0, 2.0, false, NULL) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "parameter 0 is NULL");
    CHECK(gf_clip_grad_norm_(NULL, 2, 1.0, 2.0, false, NULL) == GF_ERR_INVALID);
    gf_tensor_release(q);
}

static void test_clip_grad_value(void) {
    int64_t s3 = 3, s2 = 2;
    double z[3] = {0, 0, 0};
    gf_tensor *p[2] = {param(z, &s3, 1), param(z, &s2, 1)};
    set_grad(p[0], GA);
    set_grad(p[1], GB);
    CHECK(gf_clip_grad_value_(p, 2, 2.5) == GF_OK);
    double a[3], b[2], wa[3] = {2.5, -2.5, 1.0}, wb[2] = {-2.0, 0.5};
    grad_values(p[0], a, 3);
    grad_values(p[1], b, 2);
    for (int i = 0; i < 3; i++) CHECK_CLOSE(a[i], wa[i], 0);
    for (int i = 0; i < 2; i++) CHECK_CLOSE(b[i], wb[i], 0);
    CHECK(gf_clip_grad_value_(p, 2, -1.0) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "clip_grad_value_: clip_value");
    CHECK(gf_clip_grad_value_(p, 2, NAN) == GF_ERR_INVALID);
    for (int i = 0; i < 2; i++) gf_tensor_release(p[i]);
}

/* Sample mean, standard deviation, min and max of t. */
static void moments(gf_tensor *t, double *mean, double *sd, double *mn, double *mx) {
    int64_t n = gf_tensor_numel(t);
    gf_tensor *d = gf_to_dtype(t, GF_F64);
    double *v = malloc((size_t)n * sizeof *v);
    CHECK(d && v && gf_tensor_to_host(d, v, (size_t)n * sizeof *v) == GF_OK);
    double s = 0, s2 = 0;
    *mn = INFINITY;
    *mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        s += v[i];
        *mn = fmin(*mn, v[i]);
        *mx = fmax(*mx, v[i]);
    }
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) s2 += (v[i] - *mean) * (v[i] - *mean);
    *sd = sqrt(s2 / (double)(n - 1));
    free(v);
    gf_tensor_release(d);
}

static void test_fans_gains(void) {
    int64_t s4[4] = {8, 3, 2, 5}, s1 = 4;
    gf_tensor *w = gf_zeros(s4, 4, GF_F32, NULL), *v = gf_zeros(&s1, 1, GF_F32, NULL);
    int64_t fi = 0, fo = 0;
    CHECK(gf_init_fans(w, &fi, &fo) == GF_OK && fi == 30 && fo == 80);
    CHECK(gf_init_fans(v, &fi, &fo) == GF_ERR_SHAPE);
    CHECK_CONTAINS(gf_last_error(), "fewer than 2 dimensions");
    double g = 0;
    CHECK(gf_init_calculate_gain(GF_NONLIN_LINEAR, NAN, &g) == GF_OK && g == 1.0);
    CHECK(gf_init_calculate_gain(GF_NONLIN_SIGMOID, NAN, &g) == GF_OK && g == 1.0);
    CHECK(gf_init_calculate_gain(GF_NONLIN_TANH, NAN, &g) == GF_OK && g == 5.0 / 3.0);
    CHECK(gf_init_calculate_gain(GF_NONLIN_RELU, NAN, &g) == GF_OK && g == sqrt(2.0));
    CHECK(gf_init_calculate_gain(GF_NONLIN_SELU, NAN, &g) == GF_OK && g == 0.75);
    CHECK(gf_init_calculate_gain(GF_NONLIN_LEAKY_RELU, NAN, &g) == GF_OK);
    CHECK_CLOSE(g, sqrt(2.0 / (1 + 1e-4)), 1e-15);
    CHECK(gf_init_calculate_gain(GF_NONLIN_LEAKY_RELU, sqrt(5.0), &g) == GF_OK);
    CHECK_CLOSE(g, sqrt(1.0 / 3.0), 1e-15);
    CHECK(gf_init_calculate_gain((gf_nonlinearity)42, NAN, &g) == GF_ERR_INVALID);
    CHECK(gf_init_calculate_gain(GF_NONLIN_LEAKY_RELU, INFINITY, &g) == GF_ERR_INVALID);
    gf_tensor_release(w);
    gf_tensor_release(v);
}

static void test_init_values(void) {
    int64_t s2[2] = {256, 384}; /* fan_in 384, fan_out 256 */
    gf_tensor *w = gf_zeros(s2, 2, GF_F32, NULL);
    CHECK(gf_tensor_set_requires_grad(w, true) == GF_OK);
    double mean, sd, mn, mx;
    uint64_t v0 = gf_tensor_version(w);
    /* PyTorch's default linear init: kaiming_uniform_(a = sqrt(5)) */
    CHECK_MSG(gf_init_kaiming_uniform_(w, sqrt(5.0), GF_FAN_IN, GF_NONLIN_LEAKY_RELU) == GF_OK,
              "%s", gf_last_error());
    CHECK(gf_tensor_version(w) > v0 && gf_tensor_is_leaf(w) && gf_tensor_requires_grad(w));
    moments(w, &mean, &sd, &mn, &mx);
    double bound = 1.0 / sqrt(384.0);
    CHECK(mn >= -bound && mx <= bound && mx > 0.99 * bound && mn < -0.99 * bound);
    CHECK_MSG(fabs(sd - bound / sqrt(3.0)) < 0.02 * bound / sqrt(3.0), "sd %g", sd);
    CHECK(fabs(mean) < 0.01 * bound);
    CHECK(gf_init_kaiming_normal_(w, 0.0, GF_FAN_OUT, GF_NONLIN_RELU) == GF_OK);
    moments(w, &mean, &sd, &mn, &mx);
    CHECK_MSG(fabs(sd - sqrt(2.0 / 256.0)) < 0.02 * sqrt(2.0 / 256.0), "sd %g", sd);
    CHECK(gf_init_xavier_uniform_(w, 2.0) == GF_OK);
    moments(w, &mean, &sd, &mn, &mx);
    double xs = 2.0 * sqrt(2.0 / (256.0 + 384.0));
    CHECK(mx <= sqrt(3.0) * xs && mn >= -sqrt(3.0) * xs);
    CHECK_MSG(fabs(sd - xs) < 0.02 * xs, "sd %g", sd);
    CHECK(gf_init_xavier_normal_(w, 1.0) == GF_OK);
    moments(w, &mean, &sd, &mn, &mx);
    CHECK_MSG(fabs(sd - xs / 2) < 0.02 * xs / 2, "sd %g", sd);
    CHECK(gf_init_normal_(w, 3.0, 0.5) == GF_OK);
    moments(w, &mean, &sd, &mn, &mx);
    CHECK(fabs(mean - 3.0) < 0.01 && fabs(sd - 0.5) < 0.01);
    CHECK(gf_init_uniform_(w, -2.0, -1.0) == GF_OK);
    moments(w, &mean, &sd, &mn, &mx);
    CHECK(mn >= -2.0 && mx <= -1.0 && fabs(mean + 1.5) < 0.01);
    CHECK(gf_init_constant_(w, 0.25) == GF_OK);
    moments(w, &mean, &sd, &mn, &mx);
    CHECK(mn == 0.25 && mx == 0.25);
    CHECK(gf_init_ones_(w) == GF_OK);
    moments(w, &mean, &sd, &mn, &mx);
    CHECK(mn == 1.0 && mx == 1.0);
    CHECK(gf_init_zeros_(w) == GF_OK);
    moments(w, &mean, &sd, &mn, &mx);
    CHECK(mn == 0.0 && mx == 0.0);
    CHECK(gf_tensor_grad_fn_name(w) == NULL || gf_tensor_is_leaf(w));
    /* same seed, same numbers; a strided view is filled through */
    int64_t s3[2] = {4, 6};
    gf_tensor *a = gf_zeros(s3, 2, GF_F64, NULL), *b = gf_zeros(s3, 2, GF_F64, NULL);
    gf_manual_seed(7);
    CHECK(gf_init_xavier_normal_(a, 1.0) == GF_OK);
    gf_manual_seed(7);
    CHECK(gf_init_xavier_normal_(b, 1.0) == GF_OK);
    double va[24], vb[24];
    CHECK(gf_tensor_to_host(a, va, sizeof va) == GF_OK);
    CHECK(gf_tensor_to_host(b, vb, sizeof vb) == GF_OK);
    CHECK(memcmp(va, vb, sizeof va) == 0);
    gf_tensor *tv = gf_transpose(a, 0, 1);
    CHECK(gf_init_constant_(tv, 5.0) == GF_OK);
    CHECK(gf_tensor_to_host(a, va, sizeof va) == GF_OK && va[0] == 5.0 && va[23] == 5.0);
    /* 0 elements: left alone */
    int64_t s0[2] = {0, 3};
    gf_tensor *e = gf_zeros(s0, 2, GF_F32, NULL);
    CHECK(gf_init_kaiming_uniform_(e, 0.0, GF_FAN_IN, GF_NONLIN_RELU) == GF_OK);
    CHECK(gf_init_xavier_normal_(e, 1.0) == GF_OK);
    CHECK(gf_init_uniform_(e, 0, 1) == GF_OK);
    gf_tensor *ts[] = {w, a, b, tv, e};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static void test_init_errors(void) {
    int64_t s2[2] = {3, 4}, s1 = 4;
    gf_tensor *w = gf_zeros(s2, 2, GF_F32, NULL), *v = gf_zeros(&s1, 1, GF_F32, NULL);
    gf_tensor *i = gf_zeros(s2, 2, GF_I64, NULL);
    CHECK(gf_init_uniform_(w, 1.0, 0.0) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "init_uniform_: needs finite bounds a <= b");
    CHECK(gf_init_uniform_(w, 0.0, INFINITY) == GF_ERR_INVALID);
    CHECK(gf_init_normal_(w, 0.0, -1.0) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "init_normal_");
    CHECK(gf_init_normal_(i, 0.0, 1.0) == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), "init_normal_: the tensor has dtype i64");
    CHECK(gf_init_zeros_(i) == GF_ERR_DTYPE);
    CHECK(gf_init_ones_(NULL) == GF_ERR_INVALID);
    CHECK(gf_init_xavier_uniform_(v, 1.0) == GF_ERR_SHAPE);
    CHECK_CONTAINS(gf_last_error(), "fewer than 2 dimensions");
    CHECK(gf_init_xavier_normal_(w, NAN) == GF_ERR_INVALID);
    CHECK(gf_init_kaiming_normal_(v, 0.0, GF_FAN_IN, GF_NONLIN_RELU) == GF_ERR_SHAPE);
    CHECK(gf_init_kaiming_uniform_(w, 0.0, (gf_fan_mode)5, GF_NONLIN_RELU) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "init_kaiming_uniform_: mode 5");
    CHECK(gf_init_kaiming_uniform_(w, 0.0, GF_FAN_IN, (gf_nonlinearity)9) == GF_ERR_INVALID);
    gf_tensor_release(w);
    gf_tensor_release(v);
    gf_tensor_release(i);
}

int main(void) {
    RUN(test_clip_grad_norm);
    RUN(test_clip_grad_value);
    RUN(test_fans_gains);
    RUN(test_init_values);
    RUN(test_init_errors);
    return CHECK_REPORT();
}
