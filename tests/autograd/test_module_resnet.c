/* SPDX-License-Identifier: BSD-3-Clause */
/* test_module_resnet.c — a resnet-style CNN built from graft's modules
 * (Conv2d, BatchNorm2d, MaxPool2d, AdaptiveAvgPool2d, Linear, Sequential and
 * a residual block of one's own) loads a torch state dict by name (running
 * statistics and batch counts included; tools/expected/gen_resnet.py) and
 * gives torch's output in eval mode, and in training mode torch's output,
 * running statistics, batch count and gradients. And a PyTorch checkpoint
 * as PyTorch users save one (safetensors.torch.save_file of the model's
 * state_dict, and of its Adam's state: tests/autograd/data/, written by
 * tools/expected/gen_checkpoints.py) loads from the files into the same
 * model and a graft Adam, which then continue training as PyTorch did. */
#include <graft.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/checkpoint_expected.h"
#include "autograd/resnet_expected.h"
#include "autograd/test_rules_util.h"
#include "check.h"

static const gf_conv2d_opts pad1 = {{1, 1}, {1, 1}, {1, 1}, 1};
static const int k3[2] = {3, 3};

static gf_module *bn(int64_t c) { return gf_nn_batch_norm(c, 1e-5, 0.1, true, true, GF_F64, NULL); }

/* Adds child under name, the parent holding the only reference. */
static void add(gf_module *m, const char *name, gf_module *child) {
    CHECK_MSG(child && gf_module_register_module(m, name, child) == GF_OK, "%s: %s", name,
              gf_last_error());
    gf_module_release(child);
}

/* relu(bn2(conv2(relu(bn1(conv1(x))))) + x), as torchvision's BasicBlock */
static gf_tensor *call(gf_module *m, const char *child, gf_tensor *x) {
    return x ? gf_module_forward(gf_module_get_submodule(m, child), &x, 1) : NULL;
}
static gf_tensor *block_forward(gf_module *m, gf_tensor *const *in, int n) {
    (void)n;
    gf_tensor *a = call(m, "conv1", in[0]), *b = call(m, "bn1", a);
    gf_tensor *c = b ? gf_relu(b) : NULL, *d = call(m, "conv2", c), *e = call(m, "bn2", d);
    gf_tensor *f = e ? gf_add(e, in[0]) : NULL, *y = f ? gf_relu(f) : NULL;
    gf_tensor *tmp[] = {a, b, c, d, e, f};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) gf_tensor_release(tmp[i]);
    return y;
}
static const gf_module_class block_class = {"BasicBlock", block_forward, NULL};

static gf_module *block(int64_t c) {
    gf_module *m = calloc(1, sizeof *m);
    CHECK(m && gf_module_init(m, &block_class) == GF_OK);
    add(m, "conv1", gf_nn_conv2d(c, c, k3, &pad1, false, GF_F64, NULL));
    add(m, "bn1", bn(c));
    add(m, "conv2", gf_nn_conv2d(c, c, k3, &pad1, false, GF_F64, NULL));
    add(m, "bn2", bn(c));
    return m;
}

static gf_tensor *net_forward(gf_module *m, gf_tensor *const *in, int n) {
    (void)n;
    gf_tensor *a = call(m, "conv1", in[0]), *b = call(m, "bn1", a);
    gf_tensor *c = b ? gf_relu(b) : NULL, *d = call(m, "maxpool", c), *e = call(m, "layer1", d);
    gf_tensor *f = call(m, "avgpool", e), *g = call(m, "flatten", f), *y = call(m, "fc", g);
    gf_tensor *tmp[] = {a, b, c, d, e, f, g};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) gf_tensor_release(tmp[i]);
    return y;
}
static const gf_module_class net_class = {"Net", net_forward, NULL};

static gf_module *net(void) {
    gf_module *m = calloc(1, sizeof *m);
    CHECK(m && gf_module_init(m, &net_class) == GF_OK);
    add(m, "conv1", gf_nn_conv2d(3, 4, k3, &pad1, false, GF_F64, NULL));
    add(m, "bn1", bn(4));
    gf_pool2d_opts po = {.kernel = {2, 2}};
    add(m, "maxpool", gf_nn_max_pool2d(&po));
    gf_module *b = block(4);
    add(m, "layer1", gf_nn_sequential(&b, 1));
    gf_module_release(b);
    add(m, "avgpool", gf_nn_adaptive_avg_pool2d((const int64_t[]){1, 1}));
    add(m, "flatten", gf_nn_flatten()); /* torch.flatten(x, 1): no state, no name in the dict */
    add(m, "fc", gf_nn_linear(4, 3, true, GF_F64, NULL));
    return m;
}

static gf_tensor_dict *torch_state(void) {
    gf_tensor_dict *d = gf_tensor_dict_new();
    for (int i = 0; i < RN_N_STATE; i++) {
        const rn_entry *e = &rn_state[i];
        bool count = strstr(e->name, "num_batches_tracked") != NULL;
        gf_tensor *f = gf_from_data(e->v, e->sizes, e->rank, GF_F64, NULL);
        gf_tensor *t = count ? gf_to_dtype(f, GF_I64) : gf_tensor_retain(f);
        CHECK(t && gf_tensor_dict_set(d, e->name, t) == GF_OK);
        gf_tensor_release(f);
        gf_tensor_release(t);
    }
    return d;
}

static void test_resnet_matches_torch(void) {
    gf_module *m = net();
    /* graft's keys are torch's, in torch's order */
    gf_tensor_dict *sd = gf_module_state_dict(m);
    CHECK(gf_tensor_dict_size(sd) == RN_N_STATE);
    for (int i = 0; i < RN_N_STATE && i < gf_tensor_dict_size(sd); i++)
        CHECK_MSG(!strcmp(gf_tensor_dict_name(sd, i), rn_state[i].name), "key %d: %s, torch %s", i,
                  gf_tensor_dict_name(sd, i), rn_state[i].name);
    gf_tensor_dict_destroy(sd);
    gf_tensor_dict *d = torch_state();
    CHECK_MSG(gf_module_load_state_dict(m, d, true, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor_dict_destroy(d);
    gf_tensor *x = gf_from_data(rn_x, (const int64_t[]){2, 3, 8, 8}, 4, GF_F64, NULL);
    CHECK(gf_module_train(m, false) == GF_OK);
    gf_tensor *y = gf_module_forward(m, &x, 1);
    CHECK_MSG(y != NULL, "%s", gf_last_error());
    ag_near("eval output", y, rn_y_eval, 6, 1e-10);
    gf_tensor_release(y);
    CHECK(gf_module_train(m, true) == GF_OK);
    y = gf_module_forward(m, &x, 1);
    CHECK_MSG(y != NULL, "%s", gf_last_error());
    ag_near("train output", y, rn_y_train, 6, 1e-10);
    ag_near("bn1.running_mean", gf_module_get_buffer(m, "bn1.running_mean"),
         rn_bn1_running_mean_after, 4, 1e-10);
    int64_t batches = -1;
    CHECK(gf_tensor_to_host(gf_module_get_buffer(m, "bn1.num_batches_tracked"), &batches, 8) ==
              GF_OK && batches == rn_bn1_batches_after);
    gf_tensor *s = gf_sum(y, NULL, 0, false);
    CHECK(gf_backward(s, NULL, NULL) == GF_OK);
    gf_tensor *g1 = gf_tensor_grad(gf_module_get_parameter(m, "conv1.weight"));
    gf_tensor *g2 = gf_tensor_grad(gf_module_get_parameter(m, "fc.weight"));
    ag_near("conv1.weight.grad", g1, rn_grad_conv1_weight, 108, 1e-9);
    ag_near("fc.weight.grad", g2, rn_grad_fc_weight, 12, 1e-9);
    gf_tensor *items[] = {x, y, s, g1, g2};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(m);
}

/* The other layers: PyTorch's defaults and shapes, and their errors. */
static void test_layers(void) {
    gf_module *ln = gf_nn_layer_norm((const int64_t[]){4}, 1, 1e-5, true, GF_F32, NULL);
    gf_module *emb = gf_nn_embedding(10, 4, GF_F32, NULL);
    gf_module *drop = gf_nn_dropout(0.5);
    CHECK(ln && emb && drop);
    gf_tensor_dict *sd = gf_module_state_dict(ln);
    CHECK(gf_tensor_dict_size(sd) == 2 && !strcmp(gf_tensor_dict_name(sd, 0), "weight"));
    gf_tensor_dict_destroy(sd);
    gf_tensor *idx = gf_arange(0, 3, 1, GF_I64, NULL);
    gf_tensor *e = gf_module_forward(emb, &idx, 1);
    CHECK(e && gf_tensor_rank(e) == 2 && gf_tensor_size(e, 1) == 4);
    gf_tensor *l = e ? gf_module_forward(ln, &e, 1) : NULL;
    CHECK(l != NULL);
    /* dropout: identity in eval mode */
    CHECK(gf_module_train(drop, false) == GF_OK);
    gf_tensor *dd = l ? gf_module_forward(drop, &l, 1) : NULL;
    float a[12], b[12];
    CHECK(dd && gf_tensor_to_host(dd, a, sizeof a) == GF_OK && gf_tensor_to_host(l, b, sizeof b) == GF_OK &&
          !memcmp(a, b, sizeof a));
    /* errors */
    CHECK(gf_nn_dropout(1.5) == NULL);
    CHECK_CONTAINS(gf_last_error(), "between 0 and 1");
    CHECK(gf_nn_conv2d(3, 4, NULL, NULL, true, GF_F32, NULL) == NULL);
    CHECK(gf_nn_conv2d(3, 4, k3, &(gf_conv2d_opts){.groups = 2}, true, GF_F32, NULL) == NULL);
    CHECK(gf_nn_batch_norm(0, 1e-5, 0.1, true, true, GF_F32, NULL) == NULL);
    CHECK(gf_nn_batch_norm(4, 1e-5, 0.1, true, true, GF_I64, NULL) == NULL);
    CHECK(gf_nn_layer_norm(NULL, 1, 1e-5, true, GF_F32, NULL) == NULL);
    CHECK(gf_nn_embedding(-1, 4, GF_F32, NULL) == NULL);
    CHECK(gf_nn_max_pool2d(NULL) == NULL && gf_nn_adaptive_avg_pool2d(NULL) == NULL);
    gf_tensor *two[2] = {idx, idx};
    CHECK(gf_module_forward(emb, two, 2) == NULL);
    CHECK_CONTAINS(gf_last_error(), "takes 1 input, got 2");
    gf_tensor *items[] = {idx, e, l, dd};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(ln);
    gf_module_release(emb);
    gf_module_release(drop);
}

/* Loads the model file and the Adam file into net() and a graft Adam made
 * with the defaults, which takes torch's hyperparameters (lr 0.01, betas
 * (0.8, 0.95), eps 1e-6, weight decay 1e-3) from the file's param_groups;
 * checks the loaded output,
 * then one training step: forward in training mode, sum(y * w), backward,
 * Adam's step; the output and parameters after it are torch's. */
static void test_torch_checkpoint(void) {
    gf_module *m = net();
    gf_tensor_dict *md = gf_load_safetensors(GRAFT_TEST_DATA_DIR "/resnet_model.safetensors",
                                             NULL);
    CHECK_MSG(md != NULL, "%s", gf_last_error());
    CHECK_MSG(gf_module_load_state_dict(m, md, true, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor_dict_destroy(md);
    gf_tensor *params[16];
    int np = gf_module_parameters(m, params, 16);
    CHECK(np == 11);
    /* created with the defaults: lr, betas, eps and weight decay (and, for
     * the GPT, AdamW's decoupled decay) come from the file's param_groups */
    gf_optimizer *opt = np > 0 ? gf_adam_create(params, np, NULL) : NULL;
    gf_tensor_dict *od = gf_load_safetensors(GRAFT_TEST_DATA_DIR "/resnet_adam.safetensors", NULL);
    CHECK_MSG(od && gf_tensor_dict_size(od) == 3 * np, "%s", gf_last_error());
    CHECK_MSG(opt && gf_optimizer_load_state_dict(opt, od, "state.") == GF_OK, "%s",
              gf_last_error());
    CHECK_MSG(opt && fabs(gf_optimizer_get_lr(opt) - 0.01) < 1e-15, "lr %g after loading",
              gf_optimizer_get_lr(opt));
    gf_tensor_dict_destroy(od);
    gf_tensor *x = gf_from_data(ck_rn_x, (const int64_t[]){2, 3, 8, 8}, 4, GF_F64, NULL);
    gf_tensor *w = gf_from_data(ck_rn_w, (const int64_t[]){2, 3}, 2, GF_F64, NULL);
    CHECK(gf_module_train(m, false) == GF_OK);
    gf_tensor *y0 = gf_module_forward(m, &x, 1);
    ag_near("output after loading", y0, ck_rn_y_loaded, 6, 1e-10);
    CHECK(gf_module_train(m, true) == GF_OK);
    gf_scope_begin();
    gf_tensor *loss = gf_sum(gf_mul(gf_module_forward(m, &x, 1), w), NULL, 0, false);
    CHECK_MSG(loss && gf_backward(loss, NULL, NULL) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(opt && gf_optimizer_step(opt) == GF_OK, "%s", gf_last_error());
    gf_scope_end();
    CHECK(gf_module_train(m, false) == GF_OK);
    gf_tensor *y1 = gf_module_forward(m, &x, 1);
    ag_near("output after a step", y1, ck_rn_y_stepped, 6, 1e-9);
    ag_near("conv1.weight after a step", gf_module_get_parameter(m, "conv1.weight"),
            ck_rn_conv1_weight, 108, 1e-10);
    ag_near("fc.bias after a step", gf_module_get_parameter(m, "fc.bias"), ck_rn_fc_bias, 3,
            1e-10);
    gf_tensor *items[] = {x, w, y0, y1};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_optimizer_destroy(opt);
    gf_module_release(m);
}

int main(void) {
    int missing = ag_device_check();
    if (missing) return missing;
    RUN(test_resnet_matches_torch);
    RUN(test_layers);
    RUN(test_torch_checkpoint);
    return CHECK_REPORT();
}
