/* SPDX-License-Identifier: BSD-3-Clause */
/* test_optim_state.c — optimiser state for checkpoints
 * (gf_optimizer_state_dict / gf_optimizer_load_state_dict) and the
 * generator's state (gf_rng_get_state / gf_rng_set_state), and the
 * learning rate (gf_optimizer_set_lr) for schedules: an optimiser
 * restored from a saved state (through a safetensors file) steps to the same
 * bits as the one that never stopped; every malformed entry is refused
 * without changing anything. */
#define _XOPEN_SOURCE 700
#include <graft.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* Two parameters ([2, 3] and [3]) with fixed values. */
static void make_params(gf_tensor **p) {
    const float a[6] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f}, b[3] = {0.1f, -0.2f, 0.3f};
    p[0] = gf_from_data(a, (const int64_t[]){2, 3}, 2, GF_F32, NULL);
    p[1] = gf_from_data(b, (const int64_t[]){3}, 1, GF_F32, NULL);
    for (int i = 0; i < 2; i++) CHECK(p[i] && gf_tensor_set_requires_grad(p[i], true) == GF_OK);
}

/* One step on loss = sum(p0^2 * k) + sum(p1 * p1 * p1), with k varying per
 * step so moments differ from step to step. */
static void step(gf_optimizer *o, gf_tensor **p, int k) {
    gf_scope_begin();
    gf_tensor *l = gf_add(gf_sum(gf_mul_scalar(gf_mul(p[0], p[0]), 1.0 + k), NULL, 0, false),
                          gf_sum(gf_mul(gf_mul(p[1], p[1]), p[1]), NULL, 0, false));
    CHECK(l && gf_optimizer_zero_grad(o) == GF_OK && gf_backward(l, NULL, NULL) == GF_OK &&
          gf_optimizer_step(o) == GF_OK);
    gf_scope_end();
}

static bool same_bits(const gf_tensor *a, const gf_tensor *b) {
    float x[8], y[8];
    size_t n = (size_t)gf_tensor_numel(a) * sizeof(float);
    return gf_tensor_numel(a) == gf_tensor_numel(b) && n <= sizeof x &&
           gf_tensor_to_host(a, x, n) == GF_OK && gf_tensor_to_host(b, y, n) == GF_OK &&
           !memcmp(x, y, n);
}

static gf_adam_opts adam_lr(double lr) {
    gf_adam_opts o = GF_ADAM_OPTS_DEFAULT;
    o.lr = lr;
    return o;
}

static gf_optimizer *make(bool adam, gf_tensor **p, double momentum) {
    const gf_adam_opts ao = adam_lr(0.05);
    return adam ? gf_adam_create(p, 2, &ao)
                : gf_sgd_create(p, 2, &(gf_sgd_opts){.lr = 0.05, .momentum = momentum});
}

/* Steps 3 times, saves the state with the parameters to a safetensors file,
 * steps 2 more; a fresh optimiser over the loaded parameters and state
 * steps the same 2 and must reach the same bits. */
static void roundtrip(bool adam, const char *path) {
    gf_tensor *p[2], *q[2];
    make_params(p);
    gf_optimizer *o = make(adam, p, 0.9);
    CHECK(o != NULL);
    gf_tensor_dict *empty = gf_optimizer_state_dict(o, "opt.");
    CHECK(empty && gf_tensor_dict_size(empty) == 0); /* nothing before the first step */
    gf_tensor_dict_destroy(empty);
    for (int k = 0; k < 3; k++) step(o, p, k);
    gf_tensor_dict *d = gf_optimizer_state_dict(o, "opt.");
    int n = gf_tensor_dict_size(d);
    CHECK_MSG(n == (adam ? 6 : 2), "%d entries", n);
    const char *want_adam[6] = {"opt.0.exp_avg", "opt.0.exp_avg_sq", "opt.0.step",
                                "opt.1.exp_avg", "opt.1.exp_avg_sq", "opt.1.step"};
    const char *want_sgd[2] = {"opt.0.momentum_buffer", "opt.1.momentum_buffer"};
    for (int i = 0; i < n && i < 6; i++)
        CHECK_MSG(!strcmp(gf_tensor_dict_name(d, i), adam ? want_adam[i] : want_sgd[i]), "%s",
                  gf_tensor_dict_name(d, i));
    if (adam) {
        double s = 0;
        CHECK(gf_tensor_item(gf_tensor_dict_get(d, "opt.1.step"), &s) == GF_OK && s == 3);
        CHECK(gf_tensor_dtype(gf_tensor_dict_get(d, "opt.1.step")) == GF_I64);
    }
    const char *names[10] = {"p0", "p1"};
    const gf_tensor *ts[10] = {p[0], p[1]};
    for (int i = 0; i < n; i++) {
        names[2 + i] = gf_tensor_dict_name(d, i);
        ts[2 + i] = gf_tensor_dict_at(d, i);
    }
    CHECK(gf_save_safetensors(names, ts, 2 + n, path) == GF_OK);
    gf_tensor_dict_destroy(d);
    for (int k = 3; k < 5; k++) step(o, p, k);

    gf_tensor_dict *f = gf_load_safetensors(path, NULL);
    CHECK(f != NULL);
    for (int i = 0; i < 2; i++) {
        q[i] = gf_clone(gf_tensor_dict_get(f, i ? "p1" : "p0"));
        CHECK(q[i] && gf_tensor_set_requires_grad(q[i], true) == GF_OK);
    }
    gf_optimizer *r = make(adam, q, 0.9);
    CHECK(gf_optimizer_load_state_dict(r, f, "opt.") == GF_OK); /* p0, p1 ignored */
    gf_tensor_dict_destroy(f);
    for (int k = 3; k < 5; k++) step(r, q, k);
    for (int i = 0; i < 2; i++) CHECK_MSG(same_bits(p[i], q[i]), "parameter %d differs", i);

    /* Without the state, the same steps go elsewhere: the state mattered. */
    gf_tensor_dict *f2 = gf_load_safetensors(path, NULL);
    gf_tensor *s0[2];
    for (int i = 0; i < 2; i++) {
        s0[i] = gf_clone(gf_tensor_dict_get(f2, i ? "p1" : "p0"));
        gf_tensor_set_requires_grad(s0[i], true);
    }
    gf_tensor_dict_destroy(f2);
    gf_optimizer *fresh = make(adam, s0, 0.9);
    for (int k = 3; k < 5; k++) step(fresh, s0, k);
    CHECK(!same_bits(p[0], s0[0]));
    gf_optimizer_destroy(fresh);
    gf_optimizer_destroy(o);
    gf_optimizer_destroy(r);
    for (int i = 0; i < 2; i++) {
        gf_tensor_release(p[i]);
        gf_tensor_release(q[i]);
        gf_tensor_release(s0[i]);
    }
}

static char path_adam[64], path_sgd[64];
static void test_adam_roundtrip(void) { roundtrip(true, path_adam); }
static void test_sgd_roundtrip(void) { roundtrip(false, path_sgd); }

/* A dict with the tensors given (names[i] -> ts[i]), made through a file
 * (the dict's constructor is the loader). */
static gf_tensor_dict *dict_of(const char **names, gf_tensor **ts, int n) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/graft-optim-state-%d.st", (int)getpid());
    CHECK(gf_save_safetensors(names, (const gf_tensor *const *)ts, n, path) == GF_OK);
    gf_tensor_dict *d = gf_load_safetensors(path, NULL);
    remove(path);
    CHECK(d != NULL);
    return d;
}

/* load_state_dict of {name: t} fails with text, and leaves o's state as it
 * was (its state dict still equals `before`'s values). */
static void check_refused(gf_optimizer *o, const char *name, gf_tensor *t, const char *text) {
    gf_tensor_dict *before = gf_optimizer_state_dict(o, NULL);
    const char *names[1] = {name};
    gf_tensor *ts[1] = {t};
    gf_tensor_dict *d = dict_of(names, ts, 1);
    CHECK(gf_optimizer_load_state_dict(o, d, "s.") != GF_OK);
    CHECK_MSG(gf_last_error() && strstr(gf_last_error(), text), "'%s' not in: %s", text,
              gf_last_error());
    gf_clear_error();
    gf_tensor_dict *after = gf_optimizer_state_dict(o, NULL);
    CHECK(gf_tensor_dict_size(before) == gf_tensor_dict_size(after));
    for (int i = 0; i < gf_tensor_dict_size(before) && i < gf_tensor_dict_size(after); i++)
        CHECK(gf_tensor_dict_at(before, i) == gf_tensor_dict_at(after, i) ||
              !strcmp(gf_tensor_dict_name(before, i), "0.step") ||
              !strcmp(gf_tensor_dict_name(before, i), "1.step"));
    gf_tensor_dict_destroy(before);
    gf_tensor_dict_destroy(after);
    gf_tensor_dict_destroy(d);
}

static void test_errors(void) {
    gf_tensor *p[2];
    make_params(p);
    gf_optimizer *adam = make(true, p, 0);
    gf_optimizer *sgd = make(false, p, 0.9);
    gf_optimizer *plain = make(false, p, 0);
    step(adam, p, 0);
    step(sgd, p, 0);
    gf_tensor *m23 = gf_zeros((const int64_t[]){2, 3}, 2, GF_F32, NULL);
    gf_tensor *m3 = gf_zeros((const int64_t[]){3}, 1, GF_F32, NULL);
    gf_tensor *m3d = gf_zeros((const int64_t[]){3}, 1, GF_F64, NULL);
    gf_tensor *step_ok = gf_scalar(4, GF_I64, NULL);
    gf_tensor *step_neg = gf_scalar(-1, GF_I64, NULL);
    gf_tensor *step_f = gf_scalar(4.5, GF_F32, NULL);
    gf_tensor *step_v = gf_zeros((const int64_t[]){1}, 1, GF_I64, NULL);

    check_refused(adam, "s.0.momentum_buffer", m23, "which Adam state does not have");
    check_refused(sgd, "s.0.exp_avg", m23, "which SGD state does not have");
    check_refused(plain, "s.0.momentum_buffer", m23, "has no momentum");
    check_refused(adam, "s.2.exp_avg", m23, "the optimiser has 2 parameters");
    check_refused(adam, "s.x.exp_avg", m23, "is not named");
    check_refused(adam, "s.0exp_avg", m23, "is not named");
    check_refused(adam, "s.-1.exp_avg", m23, "is not named");
    check_refused(adam, "s.99999999999999999999.exp_avg", m23, "is not named");
    check_refused(adam, "s.0.exp_avg", m3, "is f32[3], but its parameter is f32[2, 3]");
    check_refused(sgd, "s.1.momentum_buffer", m3d, "is f64[3], but its parameter is f32[3]");
    check_refused(adam, "s.0.step", step_neg, "negative step count");
    check_refused(adam, "s.0.step", step_f, "not a whole number");
    check_refused(adam, "s.0.step", step_v, "must be a 0-dim step count");
    /* Adam needs all three entries of a parameter */
    {
        const char *names[2] = {"s.1.exp_avg", "s.1.step"};
        gf_tensor *ts[2] = {m3, step_ok};
        gf_tensor_dict *d = dict_of(names, ts, 2);
        CHECK(gf_optimizer_load_state_dict(adam, d, "s.") == GF_ERR_INVALID);
        CHECK_FAILS(GF_ERR_INVALID, "has 2 of the 3 Adam state entries");
        gf_tensor_dict_destroy(d);
    }
    /* An empty state (no matching names) resets the optimiser. */
    {
        const char *names[1] = {"model.weight"};
        gf_tensor *ts[1] = {m3};
        gf_tensor_dict *d = dict_of(names, ts, 1);
        CHECK(gf_optimizer_load_state_dict(adam, d, "s.") == GF_OK);
        gf_tensor_dict *st = gf_optimizer_state_dict(adam, NULL);
        CHECK(st && gf_tensor_dict_size(st) == 0);
        gf_tensor_dict_destroy(st);
        gf_tensor_dict_destroy(d);
    }
    /* NULL arguments and an overlong prefix */
    CHECK(gf_optimizer_state_dict(NULL, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "opt is NULL");
    char longp[300];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    CHECK(gf_optimizer_state_dict(adam, longp) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "prefix is 299 bytes");
    CHECK(gf_optimizer_load_state_dict(adam, NULL, NULL) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "d is NULL");
    gf_tensor_dict *st = gf_optimizer_state_dict(sgd, NULL);
    CHECK(gf_optimizer_load_state_dict(NULL, st, NULL) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "opt is NULL");
    gf_tensor_dict_destroy(st);

    gf_tensor *all[] = {m23, m3, m3d, step_ok, step_neg, step_f, step_v, p[0], p[1]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gf_tensor_release(all[i]);
    gf_optimizer_destroy(adam);
    gf_optimizer_destroy(sgd);
    gf_optimizer_destroy(plain);
}

/* set_lr changes the next step exactly as creating the optimiser with
 * that lr would (the same state, the same bits). */
static void test_set_lr(void) {
    gf_tensor *p[2], *q[2];
    make_params(p);
    make_params(q);
    const gf_adam_opts ao = adam_lr(0.05), ao2 = adam_lr(0.01);
    gf_optimizer *a = gf_adam_create(p, 2, &ao);
    gf_optimizer *b = gf_adam_create(q, 2, &ao);
    step(a, p, 0);
    step(b, q, 0);
    CHECK(gf_optimizer_get_lr(a) == 0.05);
    CHECK(gf_optimizer_set_lr(a, 0.01) == GF_OK && gf_optimizer_get_lr(a) == 0.01);
    /* b: a fresh Adam at lr 0.01 carrying b's state (its tensors: the
     * param_groups, which would set lr 0.05 as torch's load does, removed) */
    gf_tensor_dict *st = gf_optimizer_state_dict(b, NULL);
    CHECK(gf_tensor_dict_set_metadata(st, "param_groups", NULL) == GF_OK);
    gf_optimizer *c = gf_adam_create(q, 2, &ao2);
    CHECK(gf_optimizer_load_state_dict(c, st, NULL) == GF_OK);
    gf_tensor_dict_destroy(st);
    step(a, p, 1);
    step(c, q, 1);
    for (int i = 0; i < 2; i++) CHECK(same_bits(p[i], q[i]));
    gf_optimizer *s = gf_sgd_create(p, 2, &(gf_sgd_opts){.lr = 0.1});
    CHECK(gf_optimizer_set_lr(s, 0.2) == GF_OK && gf_optimizer_get_lr(s) == 0.2);
    CHECK(gf_optimizer_set_lr(s, -1) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "invalid learning rate -1");
    CHECK(gf_optimizer_set_lr(s, INFINITY) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "invalid learning rate");
    CHECK(gf_optimizer_get_lr(s) == 0.2);
    CHECK(gf_optimizer_set_lr(NULL, 0.1) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "opt is NULL");
    CHECK(gf_optimizer_get_lr(NULL) == -1);
    gf_optimizer_destroy(a);
    gf_optimizer_destroy(b);
    gf_optimizer_destroy(c);
    gf_optimizer_destroy(s);
    for (int i = 0; i < 2; i++) {
        gf_tensor_release(p[i]);
        gf_tensor_release(q[i]);
    }
}

static void test_rng_state(void) {
    gf_manual_seed(123);
    gf_tensor *a = gf_rand((const int64_t[]){5}, 1, GF_F32, NULL);
    uint64_t seed = 0, offset = 0;
    gf_rng_get_state(&seed, &offset);
    CHECK(seed == 123 && offset > 0);
    gf_tensor *b = gf_rand((const int64_t[]){7}, 1, GF_F32, NULL);
    gf_manual_seed(999); /* elsewhere */
    gf_tensor *c = gf_rand((const int64_t[]){7}, 1, GF_F32, NULL);
    gf_rng_set_state(seed, offset);
    gf_tensor *d = gf_rand((const int64_t[]){7}, 1, GF_F32, NULL);
    CHECK(same_bits(b, d));
    CHECK(!same_bits(b, c));
    gf_rng_get_state(NULL, NULL); /* harmless */
    gf_tensor_release(a);
    gf_tensor_release(b);
    gf_tensor_release(c);
    gf_tensor_release(d);
}

int main(void) {
    snprintf(path_adam, sizeof path_adam, "/tmp/graft-optim-adam-%d.st", (int)getpid());
    snprintf(path_sgd, sizeof path_sgd, "/tmp/graft-optim-sgd-%d.st", (int)getpid());
    RUN(test_adam_roundtrip);
    RUN(test_sgd_roundtrip);
    RUN(test_errors);
    RUN(test_set_lr);
    RUN(test_rng_state);
    remove(path_adam);
    remove(path_sgd);
    CHECK(gf_shutdown() == GF_OK);
    return CHECK_REPORT();
}
