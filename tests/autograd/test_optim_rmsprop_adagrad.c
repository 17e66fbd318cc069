/* SPDX-License-Identifier: BSD-3-Clause */
/* test_optim_rmsprop_adagrad.c — RMSprop and Adagrad against torch.optim's
 * update equations unrolled here in plain C doubles (a different gradient
 * at every step), their defaults, skipping parameters without a gradient,
 * and option validation. */
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "check.h"

#define N 3
static const double P0[N] = {1.0, -2.0, 0.5};

/* The gradient of step s (1-based). */
static void grad_at(int s, double *g) {
    for (int i = 0; i < N; i++) g[i] = sin(1.3 * s + i) * (1.0 + 0.5 * i);
}

static gf_tensor *make_param(gf_dtype dt) {
    const int64_t sz[1] = {N};
    gf_tensor *x = gf_from_data(P0, sz, 1, GF_F64, NULL);
    gf_tensor *xt = gf_to_dtype(x, dt);
    gf_tensor_release(x);
    CHECK(xt && gf_tensor_set_requires_grad(xt, true) == GF_OK);
    return xt;
}

static void set_grad(gf_tensor *p, const double *g) {
    const int64_t sz[1] = {N};
    gf_tensor *x = gf_from_data(g, sz, 1, GF_F64, NULL);
    gf_tensor *xt = gf_to_dtype(x, gf_tensor_dtype(p));
    CHECK(xt && gf_tensor_set_grad(p, xt) == GF_OK);
    gf_tensor_release(x);
    gf_tensor_release(xt);
}

static void check_vals(const gf_tensor *t, const double *want, double tol, int step) {
    double got[N];
    gf_tensor *d = gf_to_dtype(t, GF_F64);
    CHECK(d && gf_tensor_to_host(d, got, sizeof got) == GF_OK);
    gf_tensor_release(d);
    for (int i = 0; i < N; i++)
        CHECK_MSG(check_close_(got[i], want[i], tol, tol), "step %d [%d]: %.17g vs %.17g", step,
                  i, got[i], want[i]);
}

/* ------------------------------------------------------------ RMSprop */
/* Every field as given: 0 means 0 (alpha = 0: the last squared gradient). */
static gf_rmsprop_opts rms(double lr, double alpha, double eps, double wd, double momentum,
                           bool centered) {
    gf_rmsprop_opts o = GF_RMSPROP_OPTS_DEFAULT;
    o.lr = lr, o.alpha = alpha, o.eps = eps, o.weight_decay = wd, o.momentum = momentum;
    o.centered = centered;
    return o;
}

static void run_rmsprop(const gf_rmsprop_opts *o, gf_dtype dt, double tol) {
    double lr = o->lr, alpha = o->alpha, eps = o->eps;
    gf_tensor *p = make_param(dt);
    gf_optimizer *opt = gf_rmsprop_create(&p, 1, o);
    CHECK_MSG(opt != NULL, "%s", gf_last_error());
    double ref[N], sq[N] = {0}, ga[N] = {0}, buf[N] = {0}, g[N];
    memcpy(ref, P0, sizeof ref);
    for (int s = 1; s <= 5; s++) {
        grad_at(s, g);
        set_grad(p, g);
        CHECK_MSG(gf_optimizer_step(opt) == GF_OK, "%s", gf_last_error());
        for (int i = 0; i < N; i++) {
            double gi = g[i] + o->weight_decay * ref[i];
            sq[i] = alpha * sq[i] + (1 - alpha) * gi * gi;
            double avg;
            if (o->centered) {
                ga[i] = alpha * ga[i] + (1 - alpha) * gi;
                avg = sqrt(sq[i] - ga[i] * ga[i]) + eps;
            } else {
                avg = sqrt(sq[i]) + eps;
            }
            if (o->momentum > 0) {
                buf[i] = o->momentum * buf[i] + gi / avg;
                ref[i] -= lr * buf[i];
            } else {
                ref[i] -= lr * gi / avg;
            }
        }
        check_vals(p, ref, tol, s);
    }
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
}

static void test_rmsprop(void) {
    const gf_rmsprop_opts d = GF_RMSPROP_OPTS_DEFAULT;
    run_rmsprop(&d, GF_F64, 1e-12);
    gf_rmsprop_opts o = rms(0.05, 0.9, 1e-6, 0, 0, false);
    run_rmsprop(&o, GF_F64, 1e-12);
    o = rms(0.05, 0.99, 1e-8, 0, 0.8, false);
    run_rmsprop(&o, GF_F64, 1e-12);
    o = rms(0.05, 0.99, 1e-8, 0, 0, true);
    run_rmsprop(&o, GF_F64, 1e-12);
    o = rms(0.05, 0.99, 1e-8, 0.1, 0.5, true);
    run_rmsprop(&o, GF_F64, 1e-12);
    o = rms(0.05, 0.99, 1e-8, 0, 0.8, false);
    run_rmsprop(&o, GF_F32, 1e-5);
    /* zeros PyTorch accepts, each meaning zero */
    o = rms(0.05, 0.0, 1e-8, 0, 0, false); /* alpha = 0 */
    run_rmsprop(&o, GF_F64, 1e-12);
    o = rms(0.05, 0.9, 0.0, 0, 0, false); /* eps = 0 */
    run_rmsprop(&o, GF_F64, 1e-12);
    o = rms(0.0, 0.9, 1e-8, 0, 0.5, false); /* lr = 0: the parameter stays */
    run_rmsprop(&o, GF_F64, 0);
}

/* ------------------------------------------------------------ Adagrad */
static gf_adagrad_opts adg(double lr, double lr_decay, double wd, double init_acc, double eps) {
    gf_adagrad_opts o = GF_ADAGRAD_OPTS_DEFAULT;
    o.lr = lr, o.lr_decay = lr_decay, o.weight_decay = wd, o.initial_accumulator_value = init_acc;
    o.eps = eps;
    return o;
}

static void run_adagrad(const gf_adagrad_opts *o, gf_dtype dt, double tol) {
    double lr = o->lr, eps = o->eps;
    gf_tensor *p = make_param(dt);
    gf_optimizer *opt = gf_adagrad_create(&p, 1, o);
    CHECK_MSG(opt != NULL, "%s", gf_last_error());
    double ref[N], sum[N], g[N];
    memcpy(ref, P0, sizeof ref);
    for (int i = 0; i < N; i++) sum[i] = o->initial_accumulator_value;
    for (int s = 1; s <= 5; s++) {
        grad_at(s, g);
        set_grad(p, g);
        CHECK_MSG(gf_optimizer_step(opt) == GF_OK, "%s", gf_last_error());
        double clr = lr / (1 + (s - 1) * o->lr_decay);
        for (int i = 0; i < N; i++) {
            double gi = g[i] + o->weight_decay * ref[i];
            sum[i] += gi * gi;
            ref[i] -= clr * gi / (sqrt(sum[i]) + eps);
        }
        check_vals(p, ref, tol, s);
    }
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
}

static void test_adagrad(void) {
    const gf_adagrad_opts d = GF_ADAGRAD_OPTS_DEFAULT;
    run_adagrad(&d, GF_F64, 1e-12);
    gf_adagrad_opts o = adg(0.1, 0.3, 0, 0, 1e-10);
    run_adagrad(&o, GF_F64, 1e-12);
    o = adg(0.1, 0, 0.2, 0.5, 1e-6);
    run_adagrad(&o, GF_F64, 1e-12);
    o = adg(0.1, 0.1, 0, 0, 1e-10);
    run_adagrad(&o, GF_F32, 1e-5);
    o = adg(0.1, 0, 0, 0, 0.0); /* eps = 0 means 0 */
    run_adagrad(&o, GF_F64, 1e-12);
}

/* A parameter without a gradient is left alone and its step count (Adagrad's
 * lr_decay) does not advance. */
static void test_skip(void) {
    gf_tensor *p[2] = {make_param(GF_F64), make_param(GF_F64)};
    gf_adagrad_opts ao = adg(0.1, 1.0, 0, 0, 1e-10);
    gf_optimizer *opt = gf_adagrad_create(p, 2, &ao);
    double g[N] = {1.0, -1.0, 2.0};
    set_grad(p[0], g);
    CHECK(gf_optimizer_step(opt) == GF_OK);
    check_vals(p[1], P0, 0, 1);
    set_grad(p[1], g);
    CHECK(gf_optimizer_step(opt) == GF_OK);
    double want[N];
    for (int i = 0; i < N; i++) want[i] = P0[i] - 0.1 * g[i] / (fabs(g[i]) + 1e-10);
    check_vals(p[1], want, 1e-14, 2); /* its first step: lr undecayed */
    gf_optimizer_destroy(opt);
    gf_tensor *r = p[0];
    opt = gf_rmsprop_create(&r, 1, NULL);
    CHECK_MSG(opt != NULL, "%s", gf_last_error()); /* NULL opts: every default */
    CHECK(gf_optimizer_zero_grad(opt) == GF_OK && gf_optimizer_step(opt) == GF_OK);
    gf_optimizer_destroy(opt);
    gf_tensor_release(p[0]);
    gf_tensor_release(p[1]);
}

static void test_errors(void) {
    gf_tensor *p = make_param(GF_F64);
    gf_rmsprop_opts r = rms(-1, 0.99, 1e-8, 0, 0, false);
    CHECK(gf_rmsprop_create(&p, 1, &r) == NULL);
    CHECK_CONTAINS(gf_last_error(), "gf_rmsprop_create: invalid lr -1");
    r = rms(1e-2, 1.5, 1e-8, 0, 0, false);
    CHECK(gf_rmsprop_create(&p, 1, &r) == NULL);
    CHECK_CONTAINS(gf_last_error(), "invalid alpha 1.5; it must be in [0, 1]");
    r = rms(1e-2, 0.99, 1e-8, 0, NAN, false);
    CHECK(gf_rmsprop_create(&p, 1, &r) == NULL);
    CHECK_CONTAINS(gf_last_error(), "invalid momentum");
    r = rms(1e-2, 0.99, 1e-8, -0.1, 0, false);
    CHECK(gf_rmsprop_create(&p, 1, &r) == NULL);
    r = rms(1e-2, 0.99, -1, 0, 0, false);
    CHECK(gf_rmsprop_create(&p, 1, &r) == NULL);
    gf_adagrad_opts a = adg(1e-2, -1, 0, 0, 1e-10);
    CHECK(gf_adagrad_create(&p, 1, &a) == NULL);
    CHECK_CONTAINS(gf_last_error(), "gf_adagrad_create: invalid lr_decay -1");
    a = adg(1e-2, 0, 0, -1, 1e-10);
    CHECK(gf_adagrad_create(&p, 1, &a) == NULL);
    CHECK_CONTAINS(gf_last_error(), "initial_accumulator_value");
    a = adg(1e-2, 0, 0, 0, INFINITY);
    CHECK(gf_adagrad_create(&p, 1, &a) == NULL);
    /* not started from the _DEFAULT initialiser: refused, naming it */
    CHECK(gf_rmsprop_create(&p, 1, &(gf_rmsprop_opts){.lr = 0.1}) == NULL);
    CHECK_CONTAINS(gf_last_error(), "GF_RMSPROP_OPTS_DEFAULT");
    CHECK(gf_adagrad_create(&p, 1, &(gf_adagrad_opts){.lr = 0.1}) == NULL);
    CHECK_CONTAINS(gf_last_error(), "GF_ADAGRAD_OPTS_DEFAULT");
    CHECK(gf_adagrad_create(NULL, 1, NULL) == NULL);
    gf_tensor *q = gf_zeros((int64_t[]){3}, 1, GF_F64, NULL); /* does not require grad */
    CHECK(gf_adagrad_create(&q, 1, NULL) == NULL);
    CHECK_CONTAINS(gf_last_error(), "does not require grad");
    gf_tensor_release(q);
    gf_tensor_release(p);
}

int main(void) {
    RUN(test_rmsprop);
    RUN(test_adagrad);
    RUN(test_skip);
    RUN(test_errors);
    return CHECK_REPORT();
}
