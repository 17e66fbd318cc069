/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lr_schedule_torch.c — LambdaLR, MultiplicativeLR, ConstantLR and
 * ReduceLROnPlateau against torch.optim.lr_scheduler's learning rates, step
 * by step, on two parameter groups (tools/expected/gen_schedules.py); a
 * resumed MultiplicativeLR; the new schedules' errors. */
#include <graft.h>
#include <math.h>

#include "autograd/schedule_expected.h"
#include "check.h"

typedef struct fixture {
    gf_tensor *a, *b;
    gf_optimizer *opt;
} fixture;

static fixture make(void) {
    fixture f;
    f.a = gf_zeros((const int64_t[]){1}, 1, GF_F64, NULL);
    f.b = gf_zeros((const int64_t[]){1}, 1, GF_F64, NULL);
    CHECK(gf_tensor_set_requires_grad(f.a, true) == GF_OK &&
          gf_tensor_set_requires_grad(f.b, true) == GF_OK);
    f.opt = gf_sgd_create(&f.a, 1, &(gf_sgd_opts){.lr = 0.1});
    CHECK(f.opt && gf_optimizer_add_param_group(f.opt, &f.b, 1, 0.02, NAN) == GF_OK);
    return f;
}
static void done(fixture *f) {
    gf_optimizer_destroy(f->opt);
    gf_tensor_release(f->a);
    gf_tensor_release(f->b);
}

static void same(const char *what, int step, const gf_optimizer *o, const double want[2]) {
    for (int g = 0; g < 2; g++) {
        double got = gf_optimizer_get_group_lr(o, g);
        CHECK_MSG(fabs(got - want[g]) <= 1e-15 * (1 + fabs(want[g])),
                  "%s step %d group %d: %.17g, torch %.17g", what, step, g, got, want[g]);
    }
}

static void follow(const char *what, gf_lr_scheduler *s, fixture *f, const double want[][2]) {
    CHECK_MSG(s != NULL, "%s: %s", what, gf_last_error());
    if (!s) return;
    same(what, 0, f->opt, want[0]);
    for (int i = 1; i <= SX_STEPS; i++) {
        CHECK(gf_lr_scheduler_step(s) == GF_OK);
        same(what, i, f->opt, want[i]);
    }
    gf_lr_scheduler_destroy(s);
}

static double per_group(int64_t e, int group, void *user) {
    (void)user;
    return group == 0 ? 1.0 / (1.0 + (double)e) : pow(0.9, (double)e);
}
static int calls;
static double alternating(int64_t e, int group, void *user) {
    (void)group, (void)user;
    calls++;
    return e % 2 ? 0.9 : 0.95;
}

static void test_closed_forms(void) {
    fixture f = make();
    follow("LambdaLR", gf_lr_lambda_create(f.opt, per_group, NULL), &f, sx_lambda);
    done(&f);
    f = make();
    calls = 0;
    follow("MultiplicativeLR", gf_lr_multiplicative_create(f.opt, alternating, NULL), &f, sx_mult);
    CHECK_MSG(calls == 2 * SX_STEPS, "fn called %d times for %d steps of 2 groups", calls, SX_STEPS);
    done(&f);
    f = make();
    follow("ConstantLR", gf_lr_constant_create(f.opt, 0.5, 3), &f, sx_constant);
    done(&f);
    /* a MultiplicativeLR resumed from its state dict goes on as torch's */
    f = make();
    gf_lr_scheduler *s = gf_lr_multiplicative_create(f.opt, alternating, NULL);
    for (int i = 0; i < 5; i++) CHECK(gf_lr_scheduler_step(s) == GF_OK);
    gf_tensor_dict *d = gf_lr_scheduler_state_dict(s, NULL);
    gf_lr_scheduler_destroy(s);
    done(&f);
    f = make();
    s = gf_lr_multiplicative_create(f.opt, alternating, NULL);
    CHECK(gf_lr_scheduler_load_state_dict(s, d, NULL) == GF_OK);
    same("MultiplicativeLR resumed", 5, f.opt, sx_mult[5]);
    CHECK(gf_lr_scheduler_step(s) == GF_OK);
    same("MultiplicativeLR resumed", 6, f.opt, sx_mult[6]);
    gf_tensor_dict_destroy(d);
    gf_lr_scheduler_destroy(s);
    done(&f);
}

static void plateau(const char *what, const gf_plateau_opts *o, const double want[][2]) {
    fixture f = make();
    gf_lr_plateau *p = gf_lr_plateau_create(f.opt, o);
    CHECK_MSG(p != NULL, "%s: %s", what, gf_last_error());
    same(what, 0, f.opt, want[0]);
    for (int i = 1; p && i <= SX_STEPS; i++) {
        CHECK(gf_lr_plateau_step(p, sx_metric[i - 1]) == GF_OK);
        same(what, i, f.opt, want[i]);
        CHECK(gf_lr_plateau_get_last_lr(p, 1) == gf_optimizer_get_group_lr(f.opt, 1));
    }
    gf_lr_plateau_destroy(p);
    done(&f);
}

static void test_plateau(void) {
    gf_plateau_opts o = GF_PLATEAU_OPTS_DEFAULT;
    o.factor = 0.5, o.patience = 1, o.cooldown = 1, o.min_lr = 0.01;
    plateau("ReduceLROnPlateau min rel", &o, sx_plateau_min);
    o = (gf_plateau_opts)GF_PLATEAU_OPTS_DEFAULT;
    o.mode_max = true, o.factor = 0.3, o.patience = 0, o.threshold = 0.01, o.threshold_abs = true;
    plateau("ReduceLROnPlateau max abs", &o, sx_plateau_max_abs);
    /* factor 0 and patience 0 are values, not defaults */
    fixture f = make();
    o = (gf_plateau_opts)GF_PLATEAU_OPTS_DEFAULT;
    o.factor = 0.0, o.patience = 0;
    gf_lr_plateau *p = gf_lr_plateau_create(f.opt, &o);
    CHECK(p && gf_lr_plateau_step(p, 1.0) == GF_OK && gf_lr_plateau_step(p, 2.0) == GF_OK);
    CHECK(gf_optimizer_get_group_lr(f.opt, 0) == 0.0);
    gf_lr_plateau_destroy(p);
    /* errors */
    o = (gf_plateau_opts)GF_PLATEAU_OPTS_DEFAULT;
    o.factor = 1.0;
    CHECK(gf_lr_plateau_create(f.opt, &o) == NULL);
    CHECK_CONTAINS(gf_last_error(), "factor must be in [0, 1)");
    o.factor = 0.1, o.patience = -1;
    CHECK(gf_lr_plateau_create(f.opt, &o) == NULL);
    CHECK(gf_lr_plateau_create(f.opt, &(gf_plateau_opts){.factor = 0.5}) == NULL);
    CHECK_CONTAINS(gf_last_error(), "GF_PLATEAU_OPTS_DEFAULT");
    CHECK(gf_lr_plateau_create(NULL, NULL) == NULL);
    CHECK(gf_lr_plateau_step(NULL, 1.0) == GF_ERR_INVALID);
    CHECK(gf_lr_plateau_get_last_lr(NULL, 0) == -1 && gf_lr_plateau_num_bad_epochs(NULL) == -1);
    gf_lr_plateau_destroy(NULL);
    CHECK(gf_lr_lambda_create(f.opt, NULL, NULL) == NULL);
    CHECK(gf_lr_multiplicative_create(f.opt, NULL, NULL) == NULL);
    CHECK(gf_lr_constant_create(f.opt, 1.5, 3) == NULL);
    CHECK(gf_lr_constant_create(f.opt, 0.5, -1) == NULL);
    CHECK(gf_lr_constant_create(NULL, 0.5, 3) == NULL);
    done(&f);
}

int main(void) {
    RUN(test_closed_forms);
    RUN(test_plateau);
    return CHECK_REPORT();
}
