/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lr_schedule.c — learning-rate schedules and parameter groups
 * (graft/schedule.h): each schedule's lr sequence against PyTorch's values
 * worked out by hand, on every optimiser (the lr really used by a step),
 * parameter groups against separate optimisers, the state of RMSprop and
 * Adagrad and of the schedules through a safetensors file, and every bad
 * argument. */
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define PI_ 3.14159265358979323846
#define SZ(...) ((const int64_t[]){__VA_ARGS__})

static gf_tensor *param(const double *v, int64_t n) {
    gf_tensor *t = gf_from_data(v, &n, 1, GF_F64, NULL);
    CHECK(t && gf_tensor_set_requires_grad(t, true) == GF_OK);
    return t;
}

static void set_grad(gf_tensor *p, const double *g, int64_t n) {
    gf_tensor *t = gf_from_data(g, &n, 1, GF_F64, NULL);
    CHECK(t && gf_tensor_set_grad(p, t) == GF_OK);
    gf_tensor_release(t);
}

static double at(gf_tensor *t, int64_t i) {
    double v = NAN;
    CHECK(gf_tensor_get(t, &i, &v) == GF_OK);
    return v;
}

typedef gf_optimizer *(*make_fn)(gf_tensor **p, int n, double lr, double wd);
static gf_optimizer *mk_sgd(gf_tensor **p, int n, double lr, double wd) {
    return gf_sgd_create(p, n, &(gf_sgd_opts){.lr = lr, .momentum = 0.9, .weight_decay = wd});
}
static gf_optimizer *mk_adam(gf_tensor **p, int n, double lr, double wd) {
    gf_adam_opts o = GF_ADAMW_OPTS_DEFAULT;
    o.lr = lr, o.weight_decay = wd;
    return gf_adam_create(p, n, &o);
}
static gf_optimizer *mk_rms(gf_tensor **p, int n, double lr, double wd) {
    gf_rmsprop_opts o = GF_RMSPROP_OPTS_DEFAULT;
    o.lr = lr, o.weight_decay = wd, o.momentum = 0.5, o.centered = true;
    return gf_rmsprop_create(p, n, &o);
}
static gf_optimizer *mk_ada(gf_tensor **p, int n, double lr, double wd) {
    gf_adagrad_opts o = GF_ADAGRAD_OPTS_DEFAULT;
    o.lr = lr, o.weight_decay = wd, o.lr_decay = 0.1;
    return gf_adagrad_create(p, n, &o);
}
/* OneCycle options from the defaults. */
static gf_onecycle_opts oc_opts(double max_lr, int64_t total_steps) {
    gf_onecycle_opts o = GF_ONECYCLE_OPTS_DEFAULT;
    o.max_lr = max_lr, o.total_steps = total_steps;
    return o;
}
static const make_fn MAKERS[4] = {mk_sgd, mk_adam, mk_rms, mk_ada};
static const char *const NAMES[4] = {"SGD", "Adam", "RMSprop", "Adagrad"};

/* The lr sequence of a schedule over `n` steps against want[]. */
static void check_seq(const char *what, gf_optimizer *o, gf_lr_scheduler *s, const double *want,
                      int n) {
    CHECK_MSG(s != NULL, "%s: %s", what, gf_last_error());
    if (!s) return;
    for (int e = 0; e < n; e++) {
        if (e > 0) CHECK(gf_lr_scheduler_step(s) == GF_OK);
        CHECK(gf_lr_scheduler_last_epoch(s) == e);
        CHECK_MSG(check_close_(gf_lr_scheduler_get_last_lr(s, 0), want[e], 1e-12, 1e-12),
                  "%s epoch %d: %.15g vs %.15g", what, e, gf_lr_scheduler_get_last_lr(s, 0),
                  want[e]);
        CHECK_CLOSE(gf_optimizer_get_lr(o), want[e], 1e-12);
    }
}

static void test_schedules(void) {
    for (int k = 0; k < 4; k++) {
        gf_tensor *p = param((const double[]){1, 2}, 2);
        gf_optimizer *o = MAKERS[k](&p, 1, 1.0, 0);
        /* every schedule below starts from initial_lr 1.0, recorded once */
        gf_lr_scheduler *s = gf_lr_step_create(o, 3, 0.5);
        check_seq("StepLR", o, s, (const double[]){1, 1, 1, .5, .5, .5, .25, .25}, 8);
        gf_lr_scheduler_destroy(s);
        s = gf_lr_multistep_create(o, SZ(2, 5), 2, 0.1);
        check_seq("MultiStepLR", o, s, (const double[]){1, 1, .1, .1, .1, .01, .01}, 7);
        gf_lr_scheduler_destroy(s);
        s = gf_lr_exponential_create(o, 0.9);
        check_seq("ExponentialLR", o, s, (const double[]){1, .9, .81, .729}, 4);
        gf_lr_scheduler_destroy(s);
        s = gf_lr_cosine_create(o, 4, 0.1);
        check_seq("CosineAnnealingLR", o, s,
                  (const double[]){1, 0.1 + 0.9 * (1 + sqrt(0.5)) / 2, 0.55,
                                   0.1 + 0.9 * (1 - sqrt(0.5)) / 2, 0.1,
                                   0.1 + 0.9 * (1 - sqrt(0.5)) / 2, 0.55},
                  7);
        gf_lr_scheduler_destroy(s);
        s = gf_lr_linear_create(o, 1.0 / 3, 1.0, 5);
        check_seq("LinearLR", o, s,
                  (const double[]){1.0 / 3, 1.0 / 3 + 2.0 / 15, 1.0 / 3 + 4.0 / 15,
                                   1.0 / 3 + 6.0 / 15,
                                   1.0 / 3 + 8.0 / 15, 1, 1},
                  7);
        gf_lr_scheduler_destroy(s);
        /* OneCycle: max 1, 10 steps, pct 0.3: up over steps 0..2, down to
         * 0.04 / 1e4 at step 9. */
        gf_onecycle_opts oco = oc_opts(1, 10);
        s = gf_lr_onecycle_create(o, &oco);
        double oc[10];
        oc[0] = 0.04, oc[1] = 0.52, oc[2] = 1;
        for (int e = 3; e < 10; e++)
            oc[e] = 4e-6 + (1 - 4e-6) / 2 * (cos(PI_ * (e - 2) / 7.0) + 1);
        check_seq("OneCycleLR", o, s, oc, 10);
        CHECK(gf_lr_scheduler_step(s) == GF_ERR_INVALID);
        CHECK_CONTAINS(gf_last_error(), "total steps is 10");
        CHECK(gf_lr_scheduler_last_epoch(s) == 9);
        gf_lr_scheduler_destroy(s);
        oco.anneal_linear = true, oco.three_phase = true;
        s = gf_lr_onecycle_create(o, &oco);
        double tp[10] = {0.04, 0.52, 1, 0.52, 0.04};
        for (int e = 5; e < 10; e++) tp[e] = 0.04 + (4e-6 - 0.04) * (e - 4) / 5.0;
        check_seq("OneCycleLR three_phase linear", o, s, tp, 10);
        gf_lr_scheduler_destroy(s);
        /* warmup then cosine */
        gf_lr_scheduler *parts[2] = {gf_lr_linear_create(o, 0.1, 1.0, 2),
                                     gf_lr_cosine_create(o, 4, 0.0)};
        s = gf_lr_sequential_create(o, parts, 2, SZ(2));
        check_seq("SequentialLR", o, s, (const double[]){0.1, 0.55, 1, (1 + sqrt(0.5)) / 2, 0.5},
                  5);
        gf_lr_scheduler_destroy(s);

        /* The lr set is the one the step uses: the same step from a fresh
         * optimiser created with that lr gives the same parameters. */
        gf_tensor *p2 = param((const double[]){1, 2}, 2);
        gf_optimizer *o2 = MAKERS[k](&p2, 1, 0.25, 0);
        s = gf_lr_step_create(o, 1, 0.5); /* 1 -> 0.5 -> 0.25 */
        CHECK(gf_lr_scheduler_step(s) == GF_OK && gf_lr_scheduler_step(s) == GF_OK);
        set_grad(p, (const double[]){0.3, -0.7}, 2);
        set_grad(p2, (const double[]){0.3, -0.7}, 2);
        CHECK(gf_optimizer_step(o) == GF_OK && gf_optimizer_step(o2) == GF_OK);
        for (int i = 0; i < 2; i++)
            CHECK_MSG(at(p, i) == at(p2, i), "%s: scheduled lr not used: %.17g vs %.17g",
                      NAMES[k], at(p, i), at(p2, i));
        gf_lr_scheduler_destroy(s);
        gf_optimizer_destroy(o);
        gf_optimizer_destroy(o2);
        gf_tensor_release(p);
        gf_tensor_release(p2);
    }
}

/* An optimiser with two groups (own lr and weight decay) steps each group
 * as a separate optimiser with those options would; schedules drive every
 * group from its own initial_lr. */
static void test_param_groups(void) {
    const double g1[3] = {0.3, -0.1, 0.8}, g2[2] = {-0.4, 0.25};
    for (int k = 0; k < 4; k++) {
        gf_tensor *a = param((const double[]){1, -2, 0.5}, 3);
        gf_tensor *b = param((const double[]){3, 1}, 2);
        gf_tensor *ra = param((const double[]){1, -2, 0.5}, 3);
        gf_tensor *rb = param((const double[]){3, 1}, 2);
        gf_optimizer *o = MAKERS[k](&a, 1, 0.1, 0.01);
        CHECK(o && gf_optimizer_add_param_group(o, &b, 1, 0.03, 0.2) == GF_OK);
        CHECK(gf_optimizer_group_count(o) == 2);
        CHECK_CLOSE(gf_optimizer_get_group_lr(o, 1), 0.03, 0);
        CHECK_CLOSE(gf_optimizer_get_group_weight_decay(o, 1), 0.2, 0);
        gf_optimizer *oa = MAKERS[k](&ra, 1, 0.1, 0.01), *ob = MAKERS[k](&rb, 1, 0.03, 0.2);
        for (int step = 0; step < 3; step++) {
            set_grad(a, g1, 3);
            set_grad(ra, g1, 3);
            set_grad(b, g2, 2);
            set_grad(rb, g2, 2);
            CHECK(gf_optimizer_step(o) == GF_OK && gf_optimizer_step(oa) == GF_OK &&
                  gf_optimizer_step(ob) == GF_OK);
        }
        for (int i = 0; i < 3; i++) CHECK_MSG(at(a, i) == at(ra, i), "%s group 0", NAMES[k]);
        for (int i = 0; i < 2; i++) CHECK_MSG(at(b, i) == at(rb, i), "%s group 1", NAMES[k]);
        /* a schedule scales each group from its own initial lr */
        gf_lr_scheduler *s = gf_lr_exponential_create(o, 0.5);
        CHECK(s && gf_lr_scheduler_step(s) == GF_OK);
        CHECK_CLOSE(gf_lr_scheduler_get_last_lr(s, 0), 0.05, 1e-15);
        CHECK_CLOSE(gf_lr_scheduler_get_last_lr(s, 1), 0.015, 1e-15);
        CHECK_CLOSE(gf_optimizer_get_group_lr(o, 1), 0.015, 1e-15);
        CHECK(gf_lr_scheduler_get_last_lr(s, 2) == -1);
        /* NAN: the optimiser's own lr and weight decay */
        gf_tensor *c = param((const double[]){1}, 1);
        CHECK(gf_optimizer_add_param_group(o, &c, 1, NAN, NAN) == GF_OK);
        CHECK_CLOSE(gf_optimizer_get_group_lr(o, 2), 0.1, 0);
        CHECK_CLOSE(gf_optimizer_get_group_weight_decay(o, 2), 0.01, 0);
        CHECK(gf_optimizer_set_group_weight_decay(o, 2, 0.5) == GF_OK);
        CHECK_CLOSE(gf_optimizer_get_group_weight_decay(o, 2), 0.5, 0);
        /* set_lr sets every group */
        CHECK(gf_optimizer_set_lr(o, 0.7) == GF_OK);
        for (int g = 0; g < 3; g++) CHECK_CLOSE(gf_optimizer_get_group_lr(o, g), 0.7, 0);
        /* errors */
        CHECK(gf_optimizer_add_param_group(o, &b, 1, NAN, NAN) == GF_ERR_INVALID);
        CHECK_CONTAINS(gf_last_error(), "already parameter 1 of group 1");
        CHECK(gf_optimizer_add_param_group(o, &c, 0, NAN, NAN) == GF_ERR_INVALID);
        gf_tensor *d = param((const double[]){1}, 1);
        CHECK(gf_optimizer_add_param_group(o, &d, 1, -1, NAN) == GF_ERR_INVALID);
        CHECK_CONTAINS(gf_last_error(), "learning rate");
        CHECK(gf_optimizer_add_param_group(o, &d, 1, NAN, INFINITY) == GF_ERR_INVALID);
        CHECK_CONTAINS(gf_last_error(), "weight_decay");
        CHECK(gf_optimizer_add_param_group(NULL, &d, 1, NAN, NAN) == GF_ERR_INVALID);
        CHECK(gf_optimizer_set_group_lr(o, 3, 0.1) == GF_ERR_INDEX);
        CHECK_CONTAINS(gf_last_error(), "group 3 is out of range");
        CHECK(gf_optimizer_set_group_lr(o, 0, NAN) == GF_ERR_INVALID);
        CHECK(gf_optimizer_set_group_weight_decay(o, -1, 0.1) == GF_ERR_INDEX);
        CHECK(gf_optimizer_get_group_lr(o, 5) == -1 && gf_optimizer_get_group_lr(NULL, 0) == -1);
        CHECK(gf_optimizer_group_count(NULL) == 0);
        gf_lr_scheduler_destroy(s);
        gf_optimizer_destroy(o);
        gf_optimizer_destroy(oa);
        gf_optimizer_destroy(ob);
        gf_tensor *all[] = {a, b, ra, rb, c, d};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gf_tensor_release(all[i]);
    }
}

/* Saves state through a safetensors file and loads it back. */
static gf_tensor_dict *roundtrip(gf_tensor_dict *d, const char *path) {
    int n = gf_tensor_dict_size(d);
    const char *names[16];
    const gf_tensor *ts[16];
    for (int i = 0; i < n && i < 16; i++) {
        names[i] = gf_tensor_dict_name(d, i);
        ts[i] = gf_tensor_dict_at(d, i);
    }
    CHECK(n <= 16 && gf_save_safetensors(names, ts, n, path) == GF_OK);
    gf_tensor_dict_destroy(d);
    gf_tensor_dict *r = gf_load_safetensors(path, NULL);
    CHECK_MSG(r != NULL, "%s", gf_last_error());
    unlink(path);
    return r;
}

/* Every optimiser and a schedule resume from a checkpoint: a run stopped
 * after 3 steps and resumed in fresh objects ends where an uninterrupted
 * run ends, bit for bit. */
static void test_resume(void) {
    const double g[3] = {0.5, -1.5, 0.25};
    char path[64];
    snprintf(path, sizeof path, "/tmp/graft_lr_state_%d.safetensors", (int)getpid());
    for (int k = 0; k < 4; k++) {
        gf_tensor *a = param((const double[]){1, 2, 3}, 3);
        gf_tensor *b = param((const double[]){1, 2, 3}, 3);
        gf_optimizer *oa = MAKERS[k](&a, 1, 0.1, 0.01);
        gf_lr_scheduler *sa = gf_lr_cosine_create(oa, 6, 0.01);
        for (int step = 0; step < 3; step++) {
            set_grad(a, g, 3);
            CHECK(gf_optimizer_step(oa) == GF_OK && gf_lr_scheduler_step(sa) == GF_OK);
        }
        gf_tensor_dict *od = roundtrip(gf_optimizer_state_dict(oa, "opt."), path);
        gf_tensor_dict *sd = roundtrip(gf_lr_scheduler_state_dict(sa, "sched."), path);
        /* the keys torch's state_dict has */
        const char *want_keys[4][4] = {{"opt.0.momentum_buffer"},
                                       {"opt.0.exp_avg", "opt.0.exp_avg_sq", "opt.0.step"},
                                       {"opt.0.square_avg", "opt.0.momentum_buffer",
                                        "opt.0.grad_avg", "opt.0.step"},
                                       {"opt.0.sum", "opt.0.step"}};
        const int nkeys[4] = {1, 3, 4, 2};
        CHECK_MSG(gf_tensor_dict_size(od) == nkeys[k], "%s: %d entries", NAMES[k],
                  gf_tensor_dict_size(od));
        for (int i = 0; i < nkeys[k]; i++) {
            gf_tensor *t = gf_tensor_dict_get(od, want_keys[k][i]);
            CHECK_MSG(t != NULL, "%s: no %s", NAMES[k], want_keys[k][i]);
            double v = 0;
            if (t && !strcmp(want_keys[k][i] + 6, "step"))
                CHECK(gf_tensor_item(t, &v) == GF_OK && v == 3);
        }
        gf_optimizer *ob = MAKERS[k](&b, 1, 0.1, 0.01);
        /* b takes a's values too (the model's part of the checkpoint) */
        gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
        CHECK(gf_copy_(b, a) == GF_OK);
        gf_grad_mode_set(prev);
        gf_lr_scheduler *sb = gf_lr_cosine_create(ob, 6, 0.01);
        CHECK(gf_optimizer_load_state_dict(ob, od, "opt.") == GF_OK);
        CHECK_MSG(gf_lr_scheduler_load_state_dict(sb, sd, "sched.") == GF_OK, "%s",
                  gf_last_error());
        CHECK(gf_lr_scheduler_last_epoch(sb) == 3);
        CHECK(gf_optimizer_get_lr(ob) == gf_optimizer_get_lr(oa));
        gf_tensor_dict_destroy(od);
        gf_tensor_dict_destroy(sd);
        for (int step = 0; step < 3; step++) {
            set_grad(a, g, 3);
            CHECK(gf_optimizer_step(oa) == GF_OK && gf_lr_scheduler_step(sa) == GF_OK);
            set_grad(b, g, 3);
            CHECK(gf_optimizer_step(ob) == GF_OK && gf_lr_scheduler_step(sb) == GF_OK);
        }
        for (int i = 0; i < 3; i++)
            CHECK_MSG(at(a, i) == at(b, i), "%s resume: %.17g vs %.17g", NAMES[k], at(a, i),
                      at(b, i));
        gf_lr_scheduler_destroy(sa);
        gf_lr_scheduler_destroy(sb);
        gf_optimizer_destroy(oa);
        gf_optimizer_destroy(ob);
        gf_tensor_release(a);
        gf_tensor_release(b);
    }
}

static void test_errors(void) {
    gf_tensor *p = param((const double[]){1}, 1);
    gf_optimizer *o = mk_sgd(&p, 1, 0.1, 0);
#define EXPECT_NULL(call, text)                                          \
    do {                                                                 \
        gf_clear_error();                                                \
        gf_lr_scheduler *s_ = (call);                                    \
        CHECK_MSG(s_ == NULL, "%s succeeded", #call);                    \
        gf_lr_scheduler_destroy(s_);                                     \
        CHECK(gf_last_status() == GF_ERR_INVALID);                       \
        CHECK_CONTAINS(gf_last_error(), text);                           \
    } while (0)
    EXPECT_NULL(gf_lr_step_create(o, 0, 0.1), "StepLR: invalid step_size 0");
    EXPECT_NULL(gf_lr_step_create(o, 1, -0.1), "StepLR: invalid gamma");
    EXPECT_NULL(gf_lr_step_create(NULL, 1, 0.1), "StepLR: opt is NULL");
    EXPECT_NULL(gf_lr_multistep_create(o, SZ(3, 2), 2, 0.1),
                "MultiStepLR: milestones must be increasing");
    EXPECT_NULL(gf_lr_multistep_create(o, NULL, 2, 0.1), "MultiStepLR: milestones is NULL");
    EXPECT_NULL(gf_lr_multistep_create(o, SZ(1), 1, INFINITY), "MultiStepLR: invalid gamma");
    EXPECT_NULL(gf_lr_exponential_create(o, NAN), "ExponentialLR: invalid gamma");
    EXPECT_NULL(gf_lr_cosine_create(o, 0, 0), "CosineAnnealingLR: invalid t_max");
    EXPECT_NULL(gf_lr_cosine_create(o, 5, -1), "CosineAnnealingLR: invalid eta_min");
    EXPECT_NULL(gf_lr_linear_create(o, 0, 1, 5), "LinearLR: invalid start_factor");
    EXPECT_NULL(gf_lr_linear_create(o, 0.5, 1.5, 5), "LinearLR: invalid end_factor");
    EXPECT_NULL(gf_lr_linear_create(o, 0.5, 1, 0), "LinearLR: invalid total_iters");
    EXPECT_NULL(gf_lr_onecycle_create(o, NULL), "OneCycleLR: opts is NULL");
    gf_onecycle_opts bad = oc_opts(1, 0);
    EXPECT_NULL(gf_lr_onecycle_create(o, &bad), "OneCycleLR: invalid total_steps");
    bad = oc_opts(-1, 5);
    EXPECT_NULL(gf_lr_onecycle_create(o, &bad), "OneCycleLR: invalid max_lr");
    bad = oc_opts(1, 5), bad.pct_start = 1.5;
    EXPECT_NULL(gf_lr_onecycle_create(o, &bad), "OneCycleLR: invalid pct_start");
    bad = oc_opts(1, 5), bad.div_factor = -2;
    EXPECT_NULL(gf_lr_onecycle_create(o, &bad), "OneCycleLR: invalid div_factor");
    bad = oc_opts(1, 5), bad.final_div_factor = INFINITY;
    EXPECT_NULL(gf_lr_onecycle_create(o, &bad), "OneCycleLR: invalid final_div_factor");
    EXPECT_NULL(gf_lr_sequential_create(o, NULL, 0, NULL), "SequentialLR: give at least one");
    gf_tensor *q = param((const double[]){1}, 1);
    gf_optimizer *o2 = mk_sgd(&q, 1, 0.1, 0);
    gf_lr_scheduler *parts[2] = {gf_lr_step_create(o, 1, 0.5), gf_lr_step_create(o2, 1, 0.5)};
    CHECK(gf_lr_sequential_create(o, parts, 2, SZ(2)) == NULL);
    CHECK_CONTAINS(gf_last_error(), "SequentialLR: every schedule must drive the optimiser");
    gf_lr_scheduler *parts2[2] = {gf_lr_step_create(o, 1, 0.5), gf_lr_step_create(o, 1, 0.5)};
    CHECK(gf_lr_sequential_create(o, parts2, 2, SZ(0)) == NULL);
    CHECK_CONTAINS(gf_last_error(), "milestones must be increasing and >= 1");
    CHECK(gf_lr_scheduler_step(NULL) == GF_ERR_INVALID);
    CHECK(gf_lr_scheduler_get_last_lr(NULL, 0) == -1 && gf_lr_scheduler_last_epoch(NULL) == -1);
    CHECK(gf_lr_scheduler_state_dict(NULL, NULL) == NULL);
    /* loading: missing entries, a wrong group count, a bad epoch */
    gf_lr_scheduler *s = gf_lr_step_create(o, 2, 0.5);
    gf_tensor_dict *d = gf_lr_scheduler_state_dict(s, "x.");
    CHECK(gf_lr_scheduler_load_state_dict(s, d, "y.") == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "entry 'y.last_epoch' is missing");
    CHECK(gf_lr_scheduler_load_state_dict(s, d, "x.") == GF_OK);
    gf_tensor *r = param((const double[]){1}, 1);
    CHECK(gf_optimizer_add_param_group(o, &r, 1, NAN, NAN) == GF_OK);
    gf_lr_scheduler *s2 = gf_lr_step_create(o, 2, 0.5);
    CHECK(gf_lr_scheduler_load_state_dict(s2, d, "x.") == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "one per parameter group");
    CHECK(gf_lr_scheduler_load_state_dict(NULL, d, "x.") == GF_ERR_INVALID);
    gf_tensor_dict_destroy(d);
    gf_onecycle_opts oco = oc_opts(1, 3);
    gf_lr_scheduler *oc = gf_lr_onecycle_create(o2, &oco);
    gf_lr_scheduler *long_run = gf_lr_step_create(o2, 1, 1.0);
    for (int i = 0; i < 5; i++) CHECK(gf_lr_scheduler_step(long_run) == GF_OK);
    d = gf_lr_scheduler_state_dict(long_run, NULL);
    CHECK(gf_lr_scheduler_load_state_dict(oc, d, NULL) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "out of this schedule's range");
    gf_tensor_dict_destroy(d);
    /* loading an optimiser's state: an entry RMSprop keeps only centered */
    gf_tensor *m = param((const double[]){1}, 1);
    gf_rmsprop_opts ro = GF_RMSPROP_OPTS_DEFAULT;
    ro.lr = 0.1, ro.centered = true;
    gf_optimizer *rm = gf_rmsprop_create(&m, 1, &ro);
    set_grad(m, (const double[]){1}, 1);
    CHECK(gf_optimizer_step(rm) == GF_OK);
    gf_tensor_dict *rd = gf_optimizer_state_dict(rm, NULL);
    ro.centered = false;
    gf_optimizer *rm2 = gf_rmsprop_create(&m, 1, &ro);
    CHECK(gf_optimizer_load_state_dict(rm2, rd, NULL) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "is not centered");
    gf_optimizer *ad = gf_adagrad_create(&m, 1, NULL);
    CHECK(gf_optimizer_load_state_dict(ad, rd, NULL) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "Adagrad state does not have");
    gf_tensor_dict_destroy(rd);
    gf_optimizer_destroy(rm);
    gf_optimizer_destroy(rm2);
    gf_optimizer_destroy(ad);
    gf_lr_scheduler_destroy(oc);
    gf_lr_scheduler_destroy(long_run);
    gf_lr_scheduler_destroy(s);
    gf_lr_scheduler_destroy(s2);
    gf_optimizer_destroy(o);
    gf_optimizer_destroy(o2);
    gf_tensor *all[] = {p, q, r, m};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gf_tensor_release(all[i]);
}

int main(void) {
    gf_init();
    RUN(test_schedules);
    RUN(test_param_groups);
    RUN(test_resume);
    RUN(test_errors);
    return check_report_();
}
