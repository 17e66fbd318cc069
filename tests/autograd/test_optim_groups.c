/* SPDX-License-Identifier: BSD-3-Clause */
/* test_optim_groups.c — an optimiser's param_groups in its state dict
 * (core/src/autograd/optim_groups.c): written as torch's JSON list into the
 * dict's metadata, read back into an optimiser created with other
 * hyperparameters (which then steps to the same bits as the original), the
 * metadata key for each prefix, the JSON PyTorch 2.15 writes for each
 * optimiser, and every refusal, each leaving the optimiser as it was. */
#define _POSIX_C_SOURCE 200809L
#include <graft.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/* Three parameters with fixed values: [2, 3], [3], [2]. */
static void make_params(gf_tensor **p) {
    const float a[6] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f}, b[3] = {0.1f, -0.2f, 0.3f},
                c[2] = {1.0f, -2.0f};
    p[0] = gf_from_data(a, (const int64_t[]){2, 3}, 2, GF_F32, NULL);
    p[1] = gf_from_data(b, (const int64_t[]){3}, 1, GF_F32, NULL);
    p[2] = gf_from_data(c, (const int64_t[]){2}, 1, GF_F32, NULL);
    for (int i = 0; i < 3; i++) CHECK(p[i] && gf_tensor_set_requires_grad(p[i], true) == GF_OK);
}

static void release_params(gf_tensor **p) {
    for (int i = 0; i < 3; i++) gf_tensor_release(p[i]);
}

/* One step on loss = sum(p0^2 k) + sum(p1^3) + sum(p2^2). */
static void step(gf_optimizer *o, gf_tensor **p, int k) {
    gf_scope_begin();
    gf_tensor *l = gf_add(gf_sum(gf_mul_scalar(gf_mul(p[0], p[0]), 1.0 + k), NULL, 0, false),
                          gf_sum(gf_mul(gf_mul(p[1], p[1]), p[1]), NULL, 0, false));
    l = gf_add(l, gf_sum(gf_mul(p[2], p[2]), NULL, 0, false));
    CHECK(gf_optimizer_zero_grad(o) == GF_OK);
    CHECK_MSG(l && gf_backward(l, NULL, NULL) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(gf_optimizer_step(o) == GF_OK, "%s", gf_last_error());
    gf_scope_end();
}

static bool same_bits(const gf_tensor *a, const gf_tensor *b) {
    float x[8], y[8];
    size_t n = (size_t)gf_tensor_numel(a) * sizeof(float);
    return gf_tensor_to_host(a, x, n) == GF_OK && gf_tensor_to_host(b, y, n) == GF_OK &&
           !memcmp(x, y, n);
}

/* Adam with groups {p0} (lr 0.05, wd 0.01) and {p1, p2} (lr 0.02, wd 0). */
static gf_optimizer *two_group_adam(gf_tensor **p, const gf_adam_opts *o) {
    gf_optimizer *opt = gf_adam_create(p, 1, o);
    CHECK(opt && gf_optimizer_add_param_group(opt, p + 1, 2, 0.02, 0.0) == GF_OK);
    return opt;
}

static void test_roundtrip(void) {
    gf_tensor *p[3], *q[3];
    make_params(p);
    make_params(q);
    gf_adam_opts ao = GF_ADAM_OPTS_DEFAULT;
    ao.lr = 0.05, ao.beta1 = 0.7, ao.beta2 = 0.9, ao.eps = 1e-5, ao.weight_decay = 0.01;
    gf_optimizer *a = two_group_adam(p, &ao);
    gf_lr_scheduler *sch = gf_lr_step_create(a, 1, 0.5); /* records initial_lr */
    CHECK(sch != NULL);
    for (int k = 0; k < 2; k++) {
        step(a, p, k);
        CHECK(gf_lr_scheduler_step(sch) == GF_OK);
    }
    gf_tensor_dict *d = gf_optimizer_state_dict(a, "state.");
    CHECK(d && gf_tensor_dict_metadata_count(d) == 1);
    const char *json = gf_tensor_dict_get_metadata(d, "param_groups");
    CHECK(json != NULL);
    if (json) {
        CHECK_CONTAINS(json, "\"betas\": [0.69999999999999996, 0.90000000000000002]");
        CHECK_CONTAINS(json, "\"initial_lr\": 0.050000000000000003");
        CHECK_CONTAINS(json, "\"params\": [1, 2]");
        CHECK_CONTAINS(json, "\"decoupled_weight_decay\": false");
    }
    /* through a file, into an Adam made with the defaults and the same groups */
    CHECK(gf_save_safetensors_dict(d, "optim_groups.safetensors") == GF_OK);
    gf_tensor_dict *e = gf_load_safetensors("optim_groups.safetensors", NULL);
    CHECK_MSG(e != NULL, "%s", gf_last_error());
    gf_optimizer *b = two_group_adam(q, NULL);
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    for (int i = 0; i < 3; i++) CHECK(gf_copy_(q[i], p[i]) == GF_OK);
    gf_grad_mode_set(prev);
    CHECK_MSG(gf_optimizer_load_state_dict(b, e, "state.") == GF_OK, "%s", gf_last_error());
    CHECK(gf_optimizer_get_group_lr(b, 0) == gf_optimizer_get_group_lr(a, 0));
    CHECK(gf_optimizer_get_group_lr(b, 1) == gf_optimizer_get_group_lr(a, 1));
    CHECK(gf_optimizer_get_group_weight_decay(b, 0) == 0.01);
    CHECK(gf_optimizer_get_group_weight_decay(b, 1) == 0.0);
    /* a schedule on b starts from the loaded initial_lr (0.05, not the lr now) */
    gf_lr_scheduler *sb = gf_lr_step_create(b, 1, 0.5);
    CHECK(sb && fabs(gf_optimizer_get_group_lr(b, 0) - 0.05) < 1e-15);
    gf_lr_scheduler_destroy(sb);
    CHECK(gf_optimizer_set_group_lr(b, 0, gf_optimizer_get_group_lr(a, 0)) == GF_OK);
    CHECK(gf_optimizer_set_group_lr(b, 1, gf_optimizer_get_group_lr(a, 1)) == GF_OK);
    for (int k = 2; k < 4; k++) {
        step(a, p, k);
        step(b, q, k);
    }
    for (int i = 0; i < 3; i++) CHECK_MSG(same_bits(p[i], q[i]), "parameter %d", i);
    gf_tensor_dict_destroy(e);
    gf_tensor_dict_destroy(d);
    gf_lr_scheduler_destroy(sch);
    gf_optimizer_destroy(a);
    gf_optimizer_destroy(b);
    release_params(p);
    release_params(q);
    remove("optim_groups.safetensors");
}

/* The key is "<prefix without a trailing 'state.'>param_groups". */
static void test_keys(void) {
    gf_tensor *p[3];
    make_params(p);
    gf_optimizer *o = gf_sgd_create(p, 3, &(gf_sgd_opts){.lr = 0.1});
    static const char *const prefixes[][2] = {{"", "param_groups"},
                                              {"state.", "param_groups"},
                                              {"optim.state.", "optim.param_groups"},
                                              {"optim.", "optim.param_groups"},
                                              {"mystate.", "mystate.param_groups"}};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        gf_tensor_dict *d = gf_optimizer_state_dict(o, prefixes[i][0]);
        CHECK_MSG(d && gf_tensor_dict_metadata_count(d) == 1 &&
                      !strcmp(gf_tensor_dict_metadata_key(d, 0), prefixes[i][1]),
                  "prefix '%s'", prefixes[i][0]);
        CHECK(gf_optimizer_load_state_dict(o, d, prefixes[i][0]) == GF_OK);
        gf_tensor_dict_destroy(d);
    }
    gf_optimizer_destroy(o);
    release_params(p);
}

/* The JSON torch 2.15's optimizers write (json.dumps of
 * state_dict()["param_groups"] for one group of three parameters), loaded
 * into graft's optimiser of that kind made with other values: it takes
 * them (the state dict written back holds them). */
static void test_torch_json(void) {
    static const struct {
        const char *kind, *json, *expect;
    } cases[] = {
        {"sgd", "[{\"lr\": 0.1, \"momentum\": 0.9, \"dampening\": 0.1, \"weight_decay\": 0.001, "
                "\"nesterov\": false, \"maximize\": false, \"foreach\": null, \"differentiable\": "
                "false, \"fused\": null, \"params\": [0, 1, 2]}]",
         "\"dampening\": 0.10000000000000001"},
        {"adam", "[{\"lr\": 0.002, \"betas\": [0.85, 0.98], \"eps\": 1e-06, \"weight_decay\": 0, "
                 "\"amsgrad\": false, \"maximize\": false, \"foreach\": null, \"capturable\": "
                 "false, \"differentiable\": false, \"fused\": null, \"decoupled_weight_decay\": "
                 "true, \"params\": [0, 1, 2]}]",
         "\"decoupled_weight_decay\": true"},
        {"rmsprop", "[{\"lr\": 0.01, \"momentum\": 0, \"alpha\": 0.95, \"eps\": 1e-08, "
                    "\"centered\": false, \"weight_decay\": 0, \"capturable\": false, "
                    "\"foreach\": null, \"maximize\": false, \"differentiable\": false, "
                    "\"params\": [0, 1, 2]}]",
         "\"alpha\": 0.94999999999999996"},
        {"adagrad", "[{\"lr\": 0.01, \"lr_decay\": 0.5, \"eps\": 1e-10, \"weight_decay\": 0, "
                    "\"initial_accumulator_value\": 0, \"foreach\": null, \"maximize\": false, "
                    "\"differentiable\": false, \"fused\": null, \"params\": [0, 1, 2]}]",
         "\"lr_decay\": 0.5"},
        {"adadelta", "[{\"lr\": 1.0, \"rho\": 0.8, \"eps\": 1e-06, \"weight_decay\": 0, "
                     "\"maximize\": false, \"capturable\": false, \"foreach\": null, "
                     "\"differentiable\": false, \"params\": [0, 1, 2]}]",
         "\"rho\": 0.80000000000000004"},
        {"nadam", "[{\"lr\": 0.002, \"betas\": [0.9, 0.999], \"eps\": 1e-08, \"weight_decay\": 0, "
                  "\"momentum_decay\": 0.005, \"decoupled_weight_decay\": false, \"maximize\": "
                  "false, \"foreach\": null, \"capturable\": false, \"differentiable\": false, "
                  "\"params\": [0, 1, 2]}]",
         "\"momentum_decay\": 0.0050000000000000001"},
        {"radam", "[{\"lr\": 0.001, \"betas\": [0.9, 0.99], \"eps\": 1e-08, \"weight_decay\": 0, "
                  "\"maximize\": false, \"foreach\": null, \"capturable\": false, "
                  "\"decoupled_weight_decay\": false, \"differentiable\": false, "
                  "\"params\": [0, 1, 2]}]",
         "\"betas\": [0.90000000000000002, 0.98999999999999999]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_tensor *p[3];
        make_params(p);
        const char *k = cases[i].kind;
        gf_optimizer *o = !strcmp(k, "sgd")       ? gf_sgd_create(p, 3, &(gf_sgd_opts){.lr = 1, .momentum = 0.5})
                          : !strcmp(k, "adam")     ? gf_adam_create(p, 3, NULL)
                          : !strcmp(k, "rmsprop")  ? gf_rmsprop_create(p, 3, NULL)
                          : !strcmp(k, "adagrad")  ? gf_adagrad_create(p, 3, NULL)
                          : !strcmp(k, "adadelta") ? gf_adadelta_create(p, 3, NULL)
                          : !strcmp(k, "nadam")    ? gf_nadam_create(p, 3, NULL)
                                                   : gf_radam_create(p, 3, NULL);
        CHECK_MSG(o != NULL, "%s: %s", k, gf_last_error());
        gf_tensor_dict *d = gf_tensor_dict_new();
        CHECK(gf_tensor_dict_set_metadata(d, "param_groups", cases[i].json) == GF_OK);
        CHECK_MSG(gf_optimizer_load_state_dict(o, d, "state.") == GF_OK, "%s: %s", k,
                  gf_last_error());
        gf_tensor_dict *w = gf_optimizer_state_dict(o, "state.");
        const char *json = w ? gf_tensor_dict_get_metadata(w, "param_groups") : NULL;
        CHECK_MSG(json && strstr(json, cases[i].expect), "%s: %s", k, json ? json : "(none)");
        step(o, p, 0); /* and it steps */
        gf_tensor_dict_destroy(w);
        gf_tensor_dict_destroy(d);
        gf_optimizer_destroy(o);
        release_params(p);
    }
}

/* Each refusal names the problem and leaves the optimiser as it was. */
static void refused(gf_optimizer *o, const char *json, const char *text) {
    gf_tensor_dict *before = gf_optimizer_state_dict(o, "state.");
    char *was = NULL;
    const char *bj = before ? gf_tensor_dict_get_metadata(before, "param_groups") : NULL;
    if (bj) was = strdup(bj);
    gf_tensor_dict *d = gf_tensor_dict_new();
    CHECK(gf_tensor_dict_set_metadata(d, "param_groups", json) == GF_OK);
    CHECK_MSG(gf_optimizer_load_state_dict(o, d, "state.") == GF_ERR_INVALID, "loaded %s", json);
    CHECK_FAILS(GF_ERR_INVALID, text);
    gf_tensor_dict *after = gf_optimizer_state_dict(o, "state.");
    const char *aj = after ? gf_tensor_dict_get_metadata(after, "param_groups") : NULL;
    CHECK_MSG(was && aj && !strcmp(was, aj), "changed by a refused load of %s", json);
    free(was);
    gf_tensor_dict_destroy(after);
    gf_tensor_dict_destroy(before);
    gf_tensor_dict_destroy(d);
}

static void test_refusals(void) {
    gf_tensor *p[3];
    make_params(p);
    gf_optimizer *a = two_group_adam(p, NULL);
    step(a, p, 0);
    const char *g1 = "{\"lr\": 0.1, \"params\": [1, 2]}";
    char json[512];
    refused(a, "[{\"lr\": 0.1, \"params\": [0]}]", "has 1 param_groups, the optimiser 2");
    snprintf(json, sizeof json, "[{\"lr\": 0.1, \"params\": [0]}, %s, %s]", g1, g1);
    refused(a, json, "more param_groups than the optimiser's 2");
    snprintf(json, sizeof json, "[{\"lr\": 0.1, \"params\": [1]}, %s]", g1);
    refused(a, json, "'params' lists 1 where graft has another index");
    snprintf(json, sizeof json, "[{\"lr\": 0.1, \"params\": [0, 1]}, %s]", g1);
    refused(a, json, "'params' lists 1 where graft has no more parameters");
    refused(a, "[{\"lr\": 0.1, \"params\": [0]}, {\"lr\": 0.1, \"params\": [1]}]",
            "lists fewer parameters than graft's group has");
    snprintf(json, sizeof json, "[{\"lr\": 0.1}, %s]", g1);
    refused(a, json, "it has no 'params' list");
    snprintf(json, sizeof json, "[{\"params\": [0]}, %s]", g1);
    refused(a, json, "it has no 'lr'");
    snprintf(json, sizeof json, "[{\"lr\": -1, \"params\": [0]}, %s]", g1);
    refused(a, json, "'lr' is out of its range");
    snprintf(json, sizeof json, "[{\"lr\": 0.1, \"betas\": [0.9, 1.0], \"params\": [0]}, %s]", g1);
    refused(a, json, "'betas' is out of its range");
    snprintf(json, sizeof json, "[{\"lr\": 0.1, \"amsgrad\": true, \"params\": [0]}, %s]", g1);
    refused(a, json, "'amsgrad' is true");
    snprintf(json, sizeof json, "[{\"lr\": 0.1, \"maximize\": true, \"params\": [0]}, %s]", g1);
    refused(a, json, "'maximize' is true");
    snprintf(json, sizeof json, "[{\"lr\": 0.1, \"lookahead\": 5, \"params\": [0]}, %s]", g1);
    refused(a, json, "'lookahead' is not an option of this optimiser");
    refused(a, "[{\"lr\": 0.1, \"eps\": 1e-6, \"params\": [0]}, {\"lr\": 0.1, \"eps\": 1e-7, "
               "\"params\": [1, 2]}]",
            "'eps' differs from group 0's");
    refused(a, "[{\"lr\": 0.1, \"params\": [0]} {\"lr\": 0.1, \"params\": [1, 2]}]",
            "is not the JSON list of param_groups");
    refused(a, "{\"lr\": 0.1}", "is not the JSON list of param_groups");
    refused(a, "[{\"lr\": 0.1, \"params\": [0]}, {\"lr\": 0.1, \"params\": [1, 2]}] x",
            "is not the JSON list of param_groups");
    /* ignored: how torch runs the update, and unknown flags that are off */
    snprintf(json, sizeof json, "[{\"lr\": 0.1, \"foreach\": true, \"fused\": null, \"lookahead\": "
             "null, \"nesterov_like\": false, \"params\": [0]}, %s]", g1);
    gf_tensor_dict *d = gf_tensor_dict_new();
    CHECK(gf_tensor_dict_set_metadata(d, "param_groups", json) == GF_OK);
    CHECK_MSG(gf_optimizer_load_state_dict(a, d, "state.") == GF_OK, "%s", gf_last_error());
    CHECK(gf_optimizer_get_group_lr(a, 0) == 0.1 && gf_optimizer_get_group_lr(a, 1) == 0.1);
    gf_tensor_dict_destroy(d);
    gf_optimizer_destroy(a);

    /* values that decide which state is kept must be the optimiser's */
    gf_optimizer *s = gf_sgd_create(p, 3, &(gf_sgd_opts){.lr = 0.1});
    refused(s, "[{\"lr\": 0.1, \"momentum\": 0.9, \"params\": [0, 1, 2]}]",
            "'momentum' is zero on one side only");
    gf_optimizer_destroy(s);
    gf_optimizer *r = gf_rmsprop_create(p, 3, NULL);
    refused(r, "[{\"lr\": 0.1, \"centered\": true, \"params\": [0, 1, 2]}]",
            "'centered' differs from the optimiser's");
    gf_optimizer_destroy(r);
    release_params(p);
}

int main(void) {
    RUN(test_roundtrip);
    RUN(test_keys);
    RUN(test_torch_json);
    RUN(test_refusals);
    return CHECK_REPORT();
}
