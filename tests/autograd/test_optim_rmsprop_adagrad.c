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
static void run_rmsprop(const gf_rmsprop_opts *o, gf_dtype dt, double tol) {
    /* defaults as the header states */
    double lr = o->lr ? o->lr : 1e-2, alpha = o->alpha ? o->alpha : 0.99;
    double eps = o->eps ? o->eps : 1e-8;
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
    run_rmsprop(&(gf_rmsprop_opts){0}, GF_F64, 1e-12);
    run_rmsprop(&(gf_rmsprop_opts){.lr = 0.05, .alpha = 0.9, .eps = 1e-6}, GF_F64, 1e-12);
    run_rmsprop(&(gf_rmsprop_opts){.lr = 0.05, .momentum = 0.8}, GF_F64, 1e-12);
    run_rmsprop(&(gf_rmsprop_opts){.lr = 0.05, .centered = true}, GF_F64, 1e-12);
    run_rmsprop(&(gf_rmsprop_opts){.lr = 0.05, .centered = true, .momentum = 0.5,
                                   .weight_decay = 0.1}, GF_F64, 1e-12);
    run_rmsprop(&(gf_rmsprop_opts){.lr = 0.05, .momentum = 0.8}, GF_F32, 1e-5);
}

/* ------------------------------------------------------------ Adagrad */
static void run_adagrad(const gf_adagrad_opts *o, gf_dtype dt, double tol) {
    double lr = o->lr ? o->lr : 1e-2, eps = o->eps ? o->eps : 1e-10;
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
    run_adagrad(&(gf_adagrad_opts){0}, GF_F64, 1e-12);
    run_adagrad(&(gf_adagrad_opts){.lr = 0.1, .lr_decay = 0.3}, GF_F64, 1e-12);
    run_adagrad(&(gf_adagrad_opts){.lr = 0.1, .initial_accumulator_value = 0.5,
                                   .weight_decay = 0.2, .eps = 1e-6}, GF_F64, 1e-12);
    run_adagrad(&(gf_adagrad_opts){.lr = 0.1, .lr_decay = 0.1}, GF_F32, 1e-5);
}

/* A parameter without a gradient is left alone and its step count (Adagrad's
 * lr_decay) does not advance. */
static void test_skip(void) {
    gf_tensor *p[2] = {make_param(GF_F64), make_param(GF_F64)};
    gf_optimizer *opt = gf_adagrad_create(p, 2, &(gf_adagrad_opts){.lr = 0.1, .lr_decay = 1.0});
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
    CHECK(gf_rmsprop_create(&p, 1, &(gf_rmsprop_opts){.lr = -1}) == NULL);
    CHECK_CONTAINS(gf_last_error(), "gf_rmsprop_create: invalid lr -1");
    CHECK(gf_rmsprop_create(&p, 1, &(gf_rmsprop_opts){.alpha = 1.5}) == NULL);
    CHECK_CONTAINS(gf_last_error(), "invalid alpha 1.5; it must be in [0, 1]");
    CHECK(gf_rmsprop_create(&p, 1, &(gf_rmsprop_opts){.momentum = NAN}) == NULL);
    CHECK_CONTAINS(gf_last_error(), "invalid momentum");
    CHECK(gf_rmsprop_create(&p, 1, &(gf_rmsprop_opts){.weight_decay = -0.1}) == NULL);
    CHECK(gf_rmsprop_create(&p, 1, &(gf_rmsprop_opts){.eps = -1}) == NULL);
    CHECK(gf_adagrad_create(&p, 1, &(gf_adagrad_opts){.lr_decay = -1}) == NULL);
    CHECK_CONTAINS(gf_last_error(), "gf_adagrad_create: invalid lr_decay -1");
    CHECK(gf_adagrad_create(&p, 1, &(gf_adagrad_opts){.initial_accumulator_value = -1}) == NULL);
    CHECK_CONTAINS(gf_last_error(), "initial_accumulator_value");
    CHECK(gf_adagrad_create(&p, 1, &(gf_adagrad_opts){.eps = INFINITY}) == NULL);
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
