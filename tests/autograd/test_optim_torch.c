/* SPDX-License-Identifier: BSD-3-Clause */
/* test_optim_torch.c — optimisers against torch's own values
 * (tools/expected/gen_optim.py writes optim_expected.h from torch).
 * Every value PyTorch accepts is expressible: a field of 0 in an options
 * struct means 0, and gives PyTorch's trajectory for it. A struct not
 * started from its _DEFAULT initialiser (a 0 there used to select the
 * default) is refused, naming the initialiser, so old code fails loudly
 * instead of running with zeros. A PyTorch Adam checkpoint (its step an f32
 * tensor) loads and continues as PyTorch does. */
#include <graft.h>
#include <math.h>
#include <string.h>

#include "autograd/optim_expected.h"
#include "check.h"

static gf_tensor *param(void) {
    gf_tensor *p = gf_from_data(oz_p0, (const int64_t[]){OZ_N}, 1, GF_F64, NULL);
    CHECK(p && gf_tensor_set_requires_grad(p, true) == GF_OK);
    return p;
}

/* Steps opt over the fixed gradients and compares each step with torch's. */
static void follow(const char *what, gf_optimizer *opt, gf_tensor *p,
                   const double want[OZ_STEPS][OZ_N]) {
    CHECK_MSG(opt != NULL, "%s: %s", what, gf_last_error());
    if (!opt) return;
    for (int s = 0; s < OZ_STEPS; s++) {
        gf_tensor *g = gf_from_data(oz_grads[s], (const int64_t[]){OZ_N}, 1, GF_F64, NULL);
        CHECK(gf_tensor_set_grad(p, g) == GF_OK);
        gf_tensor_release(g);
        CHECK_MSG(gf_optimizer_step(opt) == GF_OK, "%s: %s", what, gf_last_error());
        double got[OZ_N];
        CHECK(gf_tensor_to_host(p, got, sizeof got) == GF_OK);
        for (int i = 0; i < OZ_N; i++)
            CHECK_MSG(fabs(got[i] - want[s][i]) <= 1e-12 * (1 + fabs(want[s][i])),
                      "%s step %d [%d]: %.17g, torch %.17g", what, s + 1, i, got[i], want[s][i]);
    }
    gf_optimizer_destroy(opt);
}

static void test_adam_zeros(void) {
    gf_tensor *p = param();
    gf_adam_opts o = GF_ADAM_OPTS_DEFAULT;
    o.lr = 0.1, o.beta1 = 0.0, o.beta2 = 0.99; /* WGAN-GP's and StyleGAN's betas */
    follow("Adam beta1 = 0", gf_adam_create(&p, 1, &o), p, oz_adam_beta1_0);
    gf_tensor_release(p);

    p = param();
    o = (gf_adam_opts)GF_ADAM_OPTS_DEFAULT;
    o.lr = 0.0;
    follow("Adam lr = 0", gf_adam_create(&p, 1, &o), p, oz_adam_lr_0);
    gf_tensor_release(p);

    p = param();
    o = (gf_adam_opts)GF_ADAM_OPTS_DEFAULT;
    o.lr = 0.1, o.eps = 0.0;
    follow("Adam eps = 0", gf_adam_create(&p, 1, &o), p, oz_adam_eps_0);
    gf_tensor_release(p);

    p = param();
    o = (gf_adam_opts)GF_ADAMW_OPTS_DEFAULT;
    o.lr = 0.1, o.beta1 = 0.0, o.beta2 = 0.5, o.weight_decay = 0.1;
    follow("AdamW beta1 = 0", gf_adam_create(&p, 1, &o), p, oz_adamw_beta1_0);
    gf_tensor_release(p);
}

static void test_rmsprop_adagrad_zeros(void) {
    gf_tensor *p = param();
    gf_rmsprop_opts r = GF_RMSPROP_OPTS_DEFAULT;
    r.lr = 0.05, r.alpha = 0.0;
    follow("RMSprop alpha = 0", gf_rmsprop_create(&p, 1, &r), p, oz_rmsprop_alpha_0);
    gf_tensor_release(p);

    p = param();
    r = (gf_rmsprop_opts)GF_RMSPROP_OPTS_DEFAULT;
    r.lr = 0.05, r.alpha = 0.9, r.eps = 0.0;
    follow("RMSprop eps = 0", gf_rmsprop_create(&p, 1, &r), p, oz_rmsprop_eps_0);
    gf_tensor_release(p);

    p = param();
    gf_adagrad_opts a = GF_ADAGRAD_OPTS_DEFAULT;
    a.lr = 0.1, a.eps = 0.0;
    follow("Adagrad eps = 0", gf_adagrad_create(&p, 1, &a), p, oz_adagrad_eps_0);
    gf_tensor_release(p);
}

static void test_onecycle_pct_start_0(void) {
    gf_tensor *p = param();
    gf_optimizer *opt = gf_sgd_create(&p, 1, &(gf_sgd_opts){.lr = 0.1});
    gf_onecycle_opts o = GF_ONECYCLE_OPTS_DEFAULT;
    o.max_lr = 1.0, o.total_steps = 10, o.pct_start = 0.0;
    gf_lr_scheduler *s = gf_lr_onecycle_create(opt, &o);
    CHECK_MSG(s != NULL, "%s", gf_last_error());
    for (int e = 0; s && e < 10; e++) {
        if (e > 0) CHECK(gf_lr_scheduler_step(s) == GF_OK);
        double lr = gf_optimizer_get_lr(opt);
        CHECK_MSG(fabs(lr - oz_onecycle_pct0[e]) <= 1e-12, "epoch %d: lr %.17g, torch %.17g", e,
                  lr, oz_onecycle_pct0[e]);
    }
    gf_lr_scheduler_destroy(s);
    /* no default: max_lr and total_steps are required */
    gf_onecycle_opts none = GF_ONECYCLE_OPTS_DEFAULT;
    CHECK(gf_lr_onecycle_create(opt, &none) == NULL);
    CHECK_CONTAINS(gf_last_error(), "total_steps");
    CHECK(gf_lr_onecycle_create(opt, &(gf_onecycle_opts){.max_lr = 1, .total_steps = 10}) ==
          NULL);
    CHECK_CONTAINS(gf_last_error(), "GF_ONECYCLE_OPTS_DEFAULT");
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
}

/* gradcheck's tolerances of 0 are an exact comparison: a linear function
 * whose central differences are exact in binary passes; exp's, a few ulp
 * off, fails, where the default atol 1e-5 would pass it. */
static gf_tensor *twice_sum(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_tensor *y = gf_mul_scalar(in[0], 2.0);
    gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
    gf_tensor_release(y);
    return s;
}
static gf_tensor *exp_sum(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_tensor *y = gf_exp(in[0]);
    gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
    gf_tensor_release(y);
    return s;
}

static void test_gradcheck_zero_tolerances(void) {
    const double x0[3] = {0.5, -1.0, 0.25};
    gf_tensor *x = gf_from_data(x0, (const int64_t[]){3}, 1, GF_F64, NULL);
    CHECK(gf_tensor_set_requires_grad(x, true) == GF_OK);
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.eps = 1.0 / 1024, o.atol = 0.0, o.rtol = 0.0;
    CHECK_MSG(gf_gradcheck(twice_sum, &x, 1, NULL, &o) == GF_OK, "%s", gf_last_error());
    CHECK(gf_gradcheck(exp_sum, &x, 1, NULL, &o) == GF_ERR_AUTOGRAD);
    const gf_gradcheck_opts d = GF_GRADCHECK_OPTS_DEFAULT;
    CHECK_MSG(gf_gradcheck(exp_sum, &x, 1, NULL, &d) == GF_OK, "%s", gf_last_error());
    CHECK(gf_gradcheck(exp_sum, &x, 1, NULL, NULL) == GF_OK);
    /* eps must be a step; tolerances must not be negative */
    o.eps = 0.0;
    CHECK(gf_gradcheck(twice_sum, &x, 1, NULL, &o) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "eps must be");
    o.eps = 1e-6, o.atol = -1;
    CHECK(gf_gradcheck(twice_sum, &x, 1, NULL, &o) == GF_ERR_INVALID);
    /* a zero-initialised struct, as written for the old meaning of 0 */
    CHECK(gf_gradcheck(twice_sum, &x, 1, NULL, &(gf_gradcheck_opts){.atol = 1e-3}) ==
          GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "GF_GRADCHECK_OPTS_DEFAULT");
    CHECK(gf_gradgradcheck(twice_sum, &x, 1, NULL, &(gf_gradcheck_opts){0}) == GF_ERR_INVALID);
    gf_tensor_release(x);
}

/* torch.optim.Adam's state_dict()['state'][0] after two steps, flattened
 * to "state.0.<key>" as a safetensors file of it reads, loads into graft's
 * Adam over the same parameter; the third step lands where torch's did. */
static void test_torch_adam_checkpoint(void) {
    const int64_t n[1] = {OZ_N};
    gf_tensor *p64 = gf_from_data(oz_ckpt_p, n, 1, GF_F64, NULL);
    gf_tensor *p = gf_to_dtype(p64, GF_F32);
    CHECK(p && gf_tensor_set_requires_grad(p, true) == GF_OK);
    gf_adam_opts o = GF_ADAM_OPTS_DEFAULT;
    o.lr = 0.1, o.beta1 = 0.8, o.beta2 = 0.9;
    gf_optimizer *opt = gf_adam_create(&p, 1, &o);
    gf_tensor *m64 = gf_from_data(oz_ckpt_exp_avg, n, 1, GF_F64, NULL);
    gf_tensor *v64 = gf_from_data(oz_ckpt_exp_avg_sq, n, 1, GF_F64, NULL);
    gf_tensor *m = gf_to_dtype(m64, GF_F32), *v = gf_to_dtype(v64, GF_F32);
    gf_tensor *step = gf_from_data(&oz_ckpt_step, NULL, 0, GF_F32, NULL);
    gf_tensor_dict *d = gf_tensor_dict_new();
    CHECK(d && gf_tensor_dict_set(d, "state.0.step", step) == GF_OK &&
          gf_tensor_dict_set(d, "state.0.exp_avg", m) == GF_OK &&
          gf_tensor_dict_set(d, "state.0.exp_avg_sq", v) == GF_OK);
    CHECK_MSG(gf_optimizer_load_state_dict(opt, d, "state.") == GF_OK, "%s", gf_last_error());
    gf_tensor *g64 = gf_from_data(oz_grads[2], n, 1, GF_F64, NULL);
    gf_tensor *g = gf_to_dtype(g64, GF_F32);
    CHECK(gf_tensor_set_grad(p, g) == GF_OK);
    CHECK(gf_optimizer_step(opt) == GF_OK);
    gf_tensor *got64 = gf_to_dtype(p, GF_F64);
    double got[OZ_N];
    CHECK(got64 && gf_tensor_to_host(got64, got, sizeof got) == GF_OK);
    for (int i = 0; i < OZ_N; i++)
        CHECK_MSG(fabs(got[i] - oz_ckpt_p3[i]) <= 2e-7 * (1 + fabs(oz_ckpt_p3[i])),
                  "[%d]: %.9g, torch %.9g", i, got[i], oz_ckpt_p3[i]);
    /* a float step that is not a whole number is no step count */
    gf_tensor *bad = gf_scalar(2.5, GF_F32, NULL);
    CHECK(gf_tensor_dict_set(d, "state.0.step", bad) == GF_OK);
    CHECK(gf_optimizer_load_state_dict(opt, d, "state.") == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "not a whole number");
    gf_tensor *items[] = {p64, p, m64, v64, m, v, step, g64, g, got64, bad};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_tensor_dict_destroy(d);
    gf_optimizer_destroy(opt);
}

/* Adadelta, NAdam (and NAdamW) and RAdam (and RAdamW, through both sides of
 * its rectification threshold) over eight steps, against torch. */
static void follow_long(const char *what, gf_optimizer *opt, gf_tensor *p,
                        const double want[OZ_LONG][OZ_N]) {
    CHECK_MSG(opt != NULL, "%s: %s", what, gf_last_error());
    if (!opt) return;
    for (int s = 0; s < OZ_LONG; s++) {
        gf_tensor *g = gf_from_data(oz_grads[s % 3], (const int64_t[]){OZ_N}, 1, GF_F64, NULL);
        CHECK(gf_tensor_set_grad(p, g) == GF_OK);
        gf_tensor_release(g);
        CHECK_MSG(gf_optimizer_step(opt) == GF_OK, "%s: %s", what, gf_last_error());
        double got[OZ_N];
        CHECK(gf_tensor_to_host(p, got, sizeof got) == GF_OK);
        for (int i = 0; i < OZ_N; i++)
            CHECK_MSG(fabs(got[i] - want[s][i]) <= 1e-12 * (1 + fabs(want[s][i])),
                      "%s step %d [%d]: %.17g, torch %.17g", what, s + 1, i, got[i], want[s][i]);
    }
    gf_optimizer_destroy(opt);
}

static void test_more_optimizers(void) {
    gf_tensor *p = param();
    gf_adadelta_opts ad = GF_ADADELTA_OPTS_DEFAULT;
    ad.lr = 0.5, ad.rho = 0.8, ad.weight_decay = 0.1;
    follow_long("Adadelta", gf_adadelta_create(&p, 1, &ad), p, oz_adadelta);
    gf_tensor_release(p);
    p = param();
    ad = (gf_adadelta_opts)GF_ADADELTA_OPTS_DEFAULT;
    ad.rho = 0.0, ad.eps = 0.0;
    follow_long("Adadelta rho = eps = 0", gf_adadelta_create(&p, 1, &ad), p, oz_adadelta_rho_0);
    gf_tensor_release(p);
    p = param();
    gf_nadam_opts na = GF_NADAM_OPTS_DEFAULT;
    na.lr = 0.05, na.weight_decay = 0.1;
    follow_long("NAdam", gf_nadam_create(&p, 1, &na), p, oz_nadam);
    gf_tensor_release(p);
    p = param();
    na = (gf_nadam_opts)GF_NADAM_OPTS_DEFAULT;
    na.lr = 0.05, na.beta1 = 0.0, na.beta2 = 0.9, na.weight_decay = 0.1;
    na.decoupled_weight_decay = true, na.momentum_decay = 0.01;
    follow_long("NAdamW", gf_nadam_create(&p, 1, &na), p, oz_nadamw);
    gf_tensor_release(p);
    p = param();
    gf_radam_opts ra = GF_RADAM_OPTS_DEFAULT;
    ra.lr = 0.05, ra.beta1 = 0.8, ra.beta2 = 0.9, ra.weight_decay = 0.1;
    follow_long("RAdam", gf_radam_create(&p, 1, &ra), p, oz_radam);
    gf_tensor_release(p);
    p = param();
    ra.decoupled_weight_decay = true;
    follow_long("RAdamW", gf_radam_create(&p, 1, &ra), p, oz_radamw);
    /* errors */
    ad = (gf_adadelta_opts)GF_ADADELTA_OPTS_DEFAULT;
    ad.rho = 1.5;
    CHECK(gf_adadelta_create(&p, 1, &ad) == NULL);
    CHECK_CONTAINS(gf_last_error(), "invalid rho");
    na = (gf_nadam_opts)GF_NADAM_OPTS_DEFAULT;
    na.momentum_decay = -1;
    CHECK(gf_nadam_create(&p, 1, &na) == NULL);
    ra = (gf_radam_opts)GF_RADAM_OPTS_DEFAULT;
    ra.beta2 = 1.0;
    CHECK(gf_radam_create(&p, 1, &ra) == NULL);
    CHECK_CONTAINS(gf_last_error(), "invalid beta2");
    CHECK(gf_radam_create(&p, 1, &(gf_radam_opts){.lr = 1}) == NULL);
    CHECK_CONTAINS(gf_last_error(), "GF_RADAM_OPTS_DEFAULT");
    CHECK(gf_nadam_create(&p, 1, &(gf_nadam_opts){.lr = 1}) == NULL);
    CHECK(gf_adadelta_create(&p, 1, &(gf_adadelta_opts){.lr = 1}) == NULL);
    gf_optimizer *o = gf_radam_create(&p, 1, NULL);
    CHECK(o != NULL);
    gf_optimizer_destroy(o);
    gf_tensor_release(p);
}

/* torch.optim.NAdam's state_dict after two steps (mu_product a 0-dim
 * tensor) loads; the third step lands on torch's. */
static void test_torch_nadam_checkpoint(void) {
    const int64_t n[1] = {OZ_N};
    gf_tensor *p = gf_from_data(oz_nckpt_p, n, 1, GF_F64, NULL);
    CHECK(gf_tensor_set_requires_grad(p, true) == GF_OK);
    gf_nadam_opts o = GF_NADAM_OPTS_DEFAULT;
    o.lr = 0.05;
    gf_optimizer *opt = gf_nadam_create(&p, 1, &o);
    gf_tensor *m = gf_from_data(oz_nckpt_exp_avg, n, 1, GF_F64, NULL);
    gf_tensor *v = gf_from_data(oz_nckpt_exp_avg_sq, n, 1, GF_F64, NULL);
    gf_tensor *step = gf_scalar(oz_nckpt_step, GF_F32, NULL);
    gf_tensor *mu = gf_scalar(oz_nckpt_mu_product, GF_F64, NULL);
    gf_tensor_dict *d = gf_tensor_dict_new();
    CHECK(gf_tensor_dict_set(d, "state.0.step", step) == GF_OK &&
          gf_tensor_dict_set(d, "state.0.exp_avg", m) == GF_OK &&
          gf_tensor_dict_set(d, "state.0.exp_avg_sq", v) == GF_OK &&
          gf_tensor_dict_set(d, "state.0.mu_product", mu) == GF_OK);
    CHECK_MSG(gf_optimizer_load_state_dict(opt, d, "state.") == GF_OK, "%s", gf_last_error());
    gf_tensor *g = gf_from_data(oz_grads[2], n, 1, GF_F64, NULL);
    CHECK(gf_tensor_set_grad(p, g) == GF_OK && gf_optimizer_step(opt) == GF_OK);
    double got[OZ_N];
    CHECK(gf_tensor_to_host(p, got, sizeof got) == GF_OK);
    for (int i = 0; i < OZ_N; i++)
        CHECK_MSG(fabs(got[i] - oz_nckpt_p3[i]) <= 1e-12, "[%d]: %.17g, torch %.17g", i, got[i],
                  oz_nckpt_p3[i]);
    /* its own state dict names mu_product as torch does */
    gf_tensor_dict *own = gf_optimizer_state_dict(opt, NULL);
    CHECK(own && gf_tensor_dict_get(own, "0.mu_product") != NULL);
    gf_tensor_dict_destroy(own);
    gf_tensor *bad = gf_scalar(2.0, GF_F64, NULL);
    CHECK(gf_tensor_dict_set(d, "state.0.mu_product", bad) == GF_OK);
    CHECK(gf_optimizer_load_state_dict(opt, d, "state.") == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "product of mu");
    gf_tensor *items[] = {p, m, v, step, mu, g, bad};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_tensor_dict_destroy(d);
    gf_optimizer_destroy(opt);
}

int main(void) {
    RUN(test_adam_zeros);
    RUN(test_rmsprop_adagrad_zeros);
    RUN(test_onecycle_pct_start_0);
    RUN(test_gradcheck_zero_tolerances);
    RUN(test_torch_adam_checkpoint);
    RUN(test_more_optimizers);
    RUN(test_torch_nadam_checkpoint);
    return CHECK_REPORT();
}
