/* SPDX-License-Identifier: BSD-3-Clause */
/* test_module.c — modules (graft/module.h): the custom-module pattern of the
 * header, PyTorch's names and state_dict order, a torch state dict loaded by
 * name (tools/expected/gen_module.py) giving torch's output and gradients,
 * tied parameters, freezing, train/eval, hooks, strict loading and every
 * error path. */
#include <graft.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/module_expected.h"
#include "autograd/test_rules_util.h"
#include "check.h"

/* The header's pattern: a struct embedding gf_module, its class, children. */
typedef struct net {
    gf_module base;
    gf_module *fc1, *head;
    int *destroyed; /* set by net_destroy */
} net;

static gf_tensor *net_forward(gf_module *m, gf_tensor *const *in, int n) {
    net *self = (net *)m;
    gf_tensor *h = gf_module_forward(self->fc1, in, n);
    gf_tensor *r = h ? gf_relu(h) : NULL;
    gf_tensor *y = r ? gf_module_forward(self->head, &r, 1) : NULL;
    gf_tensor_release(h);
    gf_tensor_release(r);
    return y;
}
static void net_destroy(gf_module *m) {
    net *self = (net *)m;
    if (self->destroyed) (*self->destroyed)++;
    free(self);
}
static const gf_module_class net_class = {"Net", net_forward, net_destroy};

static net *net_new(gf_dtype dt, int *destroyed) {
    net *m = calloc(1, sizeof *m);
    CHECK(m && gf_module_init(&m->base, &net_class) == GF_OK);
    m->destroyed = destroyed;
    m->fc1 = gf_nn_linear(4, 3, true, dt, NULL);
    gf_module *parts[2] = {gf_nn_linear(3, 2, true, dt, NULL), gf_nn_tanh()};
    m->head = gf_nn_sequential(parts, 2);
    gf_module_release(parts[0]);
    gf_module_release(parts[1]);
    gf_tensor *steps = gf_scalar(0, GF_I64, NULL), *scratch = gf_zeros((int64_t[]){2}, 1, dt, NULL);
    CHECK(gf_module_register_module(&m->base, "fc1", m->fc1) == GF_OK);
    CHECK(gf_module_register_module(&m->base, "head", m->head) == GF_OK);
    CHECK(gf_module_register_buffer(&m->base, "steps", steps, true) == GF_OK);
    CHECK(gf_module_register_buffer(&m->base, "scratch", scratch, false) == GF_OK);
    gf_tensor_release(steps);
    gf_tensor_release(scratch);
    gf_module_release(m->fc1); /* the parent holds them now */
    gf_module_release(m->head);
    return m;
}

static gf_tensor *vec(const double *v, int64_t n) { return gf_from_data(v, &n, 1, GF_F64, NULL); }

static void check_values(const char *what, const gf_tensor *t, const double *want, int64_t n) {
    gf_tensor *c = gf_contiguous(t);
    double got[64];
    CHECK(c && n <= 64 && gf_tensor_numel(c) == n && gf_tensor_to_host(c, got, (size_t)n * 8) == GF_OK);
    for (int64_t i = 0; i < n; i++)
        CHECK_MSG(fabs(got[i] - want[i]) <= 1e-12, "%s[%lld]: %.17g, torch %.17g", what,
                  (long long)i, got[i], want[i]);
    gf_tensor_release(c);
}

/* torch's state dict, built in memory under torch's names. */
static gf_tensor_dict *torch_state(void) {
    gf_tensor_dict *d = gf_tensor_dict_new();
    gf_tensor *t[5] = {gf_scalar((double)mod_steps, GF_I64, NULL),
                       gf_from_data(mod_fc1_weight, (int64_t[]){3, 4}, 2, GF_F64, NULL),
                       vec(mod_fc1_bias, 3),
                       gf_from_data(mod_head_0_weight, (int64_t[]){2, 3}, 2, GF_F64, NULL),
                       vec(mod_head_0_bias, 2)};
    for (int i = 0; i < MOD_N_KEYS; i++) {
        CHECK(gf_tensor_dict_set(d, mod_keys[i], t[i]) == GF_OK);
        gf_tensor_release(t[i]);
    }
    return d;
}

static void test_names_and_torch_values(void) {
    int destroyed = 0;
    net *m = net_new(GF_F64, &destroyed);
    /* state_dict: torch's keys in torch's order (non-persistent buffer out) */
    gf_tensor_dict *sd = gf_module_state_dict(&m->base);
    CHECK(gf_tensor_dict_size(sd) == MOD_N_KEYS);
    for (int i = 0; i < MOD_N_KEYS && i < gf_tensor_dict_size(sd); i++)
        CHECK_MSG(!strcmp(gf_tensor_dict_name(sd, i), mod_keys[i]), "key %d: %s, torch %s", i,
                  gf_tensor_dict_name(sd, i), mod_keys[i]);
    /* its tensors share the module's memory, without history */
    CHECK(gf_tensor_shares_storage(gf_tensor_dict_get(sd, "fc1.weight"), m->fc1 ? gf_module_get_parameter(&m->base, "fc1.weight") : NULL));
    CHECK(!gf_tensor_requires_grad(gf_tensor_dict_get(sd, "fc1.weight")));
    gf_tensor_dict_destroy(sd);
    /* torch's values by name, strictly */
    gf_tensor_dict *d = torch_state();
    gf_load_report rep;
    CHECK_MSG(gf_module_load_state_dict(&m->base, d, true, &rep) == GF_OK, "%s", gf_last_error());
    CHECK(rep.n_missing == 0 && rep.n_unexpected == 0);
    gf_load_report_clear(&rep);
    gf_tensor_dict_destroy(d);
    int64_t steps = -1;
    CHECK(gf_tensor_to_host(gf_module_get_buffer(&m->base, "steps"), &steps, 8) == GF_OK &&
          steps == 7);
    gf_tensor *x = gf_from_data(mod_x, (int64_t[]){2, 4}, 2, GF_F64, NULL);
    gf_tensor *y = gf_module_forward(&m->base, &x, 1);
    CHECK_MSG(y != NULL, "%s", gf_last_error());
    check_values("y", y, mod_y, 4);
    gf_tensor *s = gf_sum(y, NULL, 0, false);
    CHECK(gf_backward(s, NULL, NULL) == GF_OK);
    const char *names[4] = {"fc1.weight", "fc1.bias", "head.0.weight", "head.0.bias"};
    const double *grads[4] = {mod_grad_fc1_weight, mod_grad_fc1_bias, mod_grad_head_0_weight,
                              mod_grad_head_0_bias};
    const int64_t counts[4] = {12, 3, 6, 2};
    for (int i = 0; i < 4; i++) {
        gf_tensor *g = gf_tensor_grad(gf_module_get_parameter(&m->base, names[i]));
        check_values(names[i], g, grads[i], counts[i]);
        gf_tensor_release(g);
    }
    /* parameters(): the four, for an optimiser; zero_grad clears them */
    gf_tensor *ps[8];
    CHECK(gf_module_parameters(&m->base, NULL, 0) == 4);
    CHECK(gf_module_parameters(&m->base, ps, 8) == 4);
    CHECK(ps[0] == gf_module_get_parameter(&m->base, "fc1.weight"));
    gf_optimizer *opt = gf_sgd_create(ps, 4, &(gf_sgd_opts){.lr = 0.1});
    CHECK(opt && gf_optimizer_step(opt) == GF_OK);
    CHECK(gf_module_zero_grad(&m->base) == GF_OK);
    gf_tensor *g0 = gf_tensor_grad(ps[0]);
    CHECK(g0 == NULL);
    gf_optimizer_destroy(opt);
    gf_tensor *items[] = {x, y, s};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(&m->base);
    CHECK(destroyed == 1);
}

static void test_tied_frozen_modes(void) {
    gf_module *root = gf_module_new(NULL);
    gf_module *enc = gf_nn_linear(3, 3, false, GF_F32, NULL);
    gf_module *dec = gf_nn_linear(3, 3, true, GF_F32, NULL);
    CHECK(gf_module_register_module(root, "enc", enc) == GF_OK);
    CHECK(gf_module_register_module(root, "dec", dec) == GF_OK);
    /* tie dec.weight to enc.weight: listed once, saved under both names */
    CHECK(gf_module_register_parameter(dec, "weight", gf_module_get_parameter(enc, "weight")) ==
          GF_OK);
    CHECK(gf_module_parameters(root, NULL, 0) == 2);
    gf_tensor_dict *np = gf_module_named_parameters(root);
    CHECK(gf_tensor_dict_size(np) == 2 && !strcmp(gf_tensor_dict_name(np, 0), "enc.weight") &&
          !strcmp(gf_tensor_dict_name(np, 1), "dec.bias"));
    gf_tensor_dict_destroy(np);
    gf_tensor_dict *sd = gf_module_state_dict(root);
    CHECK(gf_tensor_dict_size(sd) == 3); /* enc.weight, dec.weight, dec.bias */
    gf_tensor_dict_destroy(sd);
    /* bias=False: the name is taken, nothing is listed */
    CHECK(gf_module_get_parameter(enc, "bias") == NULL && gf_last_status() == GF_OK);
    /* freezing a subtree */
    CHECK(gf_module_requires_grad_(enc, false) == GF_OK);
    CHECK(!gf_tensor_requires_grad(gf_module_get_parameter(root, "dec.weight"))); /* tied */
    CHECK(gf_tensor_requires_grad(gf_module_get_parameter(root, "dec.bias")));
    /* train / eval reach every descendant */
    CHECK(gf_module_is_training(dec));
    CHECK(gf_module_train(root, false) == GF_OK);
    CHECK(!gf_module_is_training(root) && !gf_module_is_training(enc) && !gf_module_is_training(dec));
    CHECK(gf_module_train(root, true) == GF_OK && gf_module_is_training(dec));
    /* lookups */
    CHECK(gf_module_get_submodule(root, "dec") == dec);
    CHECK(gf_module_child_count(root) == 2 && !strcmp(gf_module_child_name(root, 1), "dec"));
    CHECK(!strcmp(gf_module_type_name(dec), "Linear"));
    gf_module_release(enc);
    gf_module_release(dec);
    gf_module_release(root);
}

static gf_status double_input(gf_module *m, gf_tensor **in, int n, void *user) {
    (void)m, (void)n;
    (*(int *)user)++;
    in[0] = gf_mul_scalar(in[0], 2.0);
    return in[0] ? GF_OK : gf_last_status();
}
static gf_status negate_output(gf_module *m, gf_tensor *const *in, int n, gf_tensor **out,
                               void *user) {
    (void)m, (void)in, (void)n;
    (*(int *)user)++;
    *out = gf_neg(*out);
    return *out ? GF_OK : gf_last_status();
}
static gf_status failing_hook(gf_module *m, gf_tensor **in, int n, void *user) {
    (void)m, (void)in, (void)n, (void)user;
    return gf_set_error(GF_ERR_INVALID, "the hook refuses");
}

static void test_hooks_and_scopes(void) {
    gf_module *relu = gf_nn_relu();
    int pre = 0, post = 0;
    int h1 = gf_module_register_forward_pre_hook(relu, double_input, &pre);
    int h2 = gf_module_register_forward_hook(relu, negate_output, &post);
    CHECK(h1 > 0 && h2 > 0 && h1 != h2);
    gf_tensor *x = gf_full((int64_t[]){3}, 1, 1.5, GF_F32, NULL);
    /* inside a scope: the result belongs to the scope, intermediates are
     * released inside without errors */
    gf_scope_begin();
    gf_clear_error();
    gf_tensor *y = gf_module_forward(relu, &x, 1);
    CHECK(y && pre == 1 && post == 1 && gf_last_status() == GF_OK);
    float v[3];
    CHECK(gf_tensor_to_host(y, v, sizeof v) == GF_OK && v[0] == -3.0f);
    gf_scope_end();
    CHECK(gf_module_remove_hook(relu, h2) == GF_OK);
    CHECK(gf_module_remove_hook(relu, h2) == GF_ERR_NOT_FOUND);
    y = gf_module_forward(relu, &x, 1);
    CHECK(y && gf_tensor_to_host(y, v, sizeof v) == GF_OK && v[0] == 3.0f);
    gf_tensor_release(y);
    int h3 = gf_module_register_forward_pre_hook(relu, failing_hook, NULL);
    CHECK(gf_module_forward(relu, &x, 1) == NULL && gf_last_status() == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "the hook refuses");
    CHECK(gf_module_remove_hook(relu, h3) == GF_OK && gf_module_remove_hook(relu, h1) == GF_OK);
    gf_tensor_release(x);
    gf_module_release(relu);
}

static void test_load_errors(void) {
    net *m = net_new(GF_F64, NULL);
    gf_tensor_dict *d = torch_state();
    gf_tensor *w0 = gf_module_get_parameter(&m->base, "fc1.weight");
    double before[12];
    CHECK(gf_tensor_to_host(w0, before, sizeof before) == GF_OK);
    /* missing and unexpected keys: strict refuses, changing nothing */
    CHECK(gf_tensor_dict_remove(d, "head.0.bias") == GF_OK);
    gf_tensor *extra = gf_scalar(1, GF_F64, NULL);
    CHECK(gf_tensor_dict_set(d, "head.1.weight", extra) == GF_OK);
    gf_load_report rep;
    CHECK(gf_module_load_state_dict(&m->base, d, true, &rep) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "missing key(s): 'head.0.bias'");
    CHECK_CONTAINS(gf_last_error(), "unexpected key(s): 'head.1.weight'");
    CHECK(rep.n_missing == 1 && rep.n_unexpected == 1 && !strcmp(rep.missing[0], "head.0.bias"));
    gf_load_report_clear(&rep);
    double after[12];
    CHECK(gf_tensor_to_host(w0, after, sizeof after) == GF_OK && !memcmp(before, after, sizeof after));
    /* not strict: the matching keys load, the rest is reported */
    CHECK(gf_module_load_state_dict(&m->base, d, false, &rep) == GF_OK);
    CHECK(rep.n_missing == 1 && rep.n_unexpected == 1);
    gf_load_report_clear(&rep);
    CHECK(gf_tensor_to_host(w0, after, sizeof after) == GF_OK && after[1] == mod_fc1_weight[1]);
    /* a size mismatch names the key and both sizes */
    gf_tensor *wrong = gf_zeros((int64_t[]){4, 3}, 2, GF_F64, NULL);
    CHECK(gf_tensor_dict_set(d, "fc1.weight", wrong) == GF_OK);
    CHECK(gf_module_load_state_dict(&m->base, d, false, NULL) == GF_ERR_SHAPE);
    CHECK_CONTAINS(gf_last_error(), "size mismatch for 'fc1.weight': the checkpoint's is [4, 3]");
    /* registration errors */
    gf_module *lin = gf_nn_linear(2, 2, true, GF_F32, NULL);
    CHECK(gf_module_register_parameter(lin, "a.b", NULL) == GF_ERR_INVALID);
    CHECK(gf_module_register_parameter(lin, "", NULL) == GF_ERR_INVALID);
    CHECK(gf_module_register_buffer(lin, "weight", NULL, true) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "already a parameter");
    gf_tensor *ints = gf_zeros((int64_t[]){2}, 1, GF_I64, NULL);
    CHECK(gf_module_register_parameter(lin, "p", ints) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "floating-point");
    CHECK(gf_module_register_module(lin, "self", lin) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "no cycles");
    CHECK(gf_module_register_module(&m->base, "lin", lin) == GF_OK);
    CHECK(gf_module_register_module(lin, "parent", &m->base) == GF_ERR_INVALID);
    CHECK(gf_module_get_parameter(&m->base, "fc1.nope") == NULL &&
          gf_last_status() == GF_ERR_NOT_FOUND);
    CHECK(gf_module_get_parameter(&m->base, "steps") == NULL);
    CHECK_CONTAINS(gf_last_error(), "is a buffer, not a parameter");
    CHECK(gf_module_forward(gf_module_get_submodule(&m->base, "lin"), NULL, 1) == NULL);
    gf_module *box = gf_module_new(NULL);
    gf_tensor *x = gf_zeros((int64_t[]){1, 2}, 2, GF_F32, NULL);
    CHECK(gf_module_forward(box, &x, 1) == NULL);
    CHECK_CONTAINS(gf_last_error(), "has no forward of its own");
    CHECK(gf_nn_linear(-1, 2, true, GF_F32, NULL) == NULL);
    CHECK(gf_nn_linear(2, 2, true, GF_I32, NULL) == NULL);
    CHECK(gf_module_init(NULL, &net_class) == GF_ERR_INVALID);
    CHECK(gf_module_train(NULL, true) == GF_ERR_INVALID);
    CHECK(gf_module_parameters(NULL, NULL, 0) == -1);
    gf_module_release(NULL);
    gf_tensor *items[] = {extra, wrong, ints, x};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(box);
    gf_module_release(lin);
    gf_tensor_dict_destroy(d);
    gf_module_release(&m->base);
}

int main(void) {
    int missing = ag_device_check();
    if (missing) return missing;
    RUN(test_names_and_torch_values);
    RUN(test_tied_frozen_modes);
    RUN(test_hooks_and_scopes);
    RUN(test_load_errors);
    return CHECK_REPORT();
}
