/* SPDX-License-Identifier: BSD-3-Clause */
/* test_module_transformer.c — nn.TransformerEncoder (post-norm relu batch
 * first with a final norm; pre-norm gelu sequence first) and
 * nn.MultiheadAttention built from graft's modules load torch's state dicts
 * by name and give torch's outputs (with a key padding mask and a causal
 * float mask, or a bool attn_mask), gradients and averaged attention
 * weights (tools/expected/gen_transformer.py). And a small GPT (token
 * embedding, learned positions, two pre-norm GELU layers under a causal
 * mask, a final norm, a linear head) loads a PyTorch checkpoint saved with
 * safetensors.torch.save_file, and its Adam's state, from
 * tests/autograd/data/ (tools/expected/gen_checkpoints.py): the logits
 * after loading, the loss, and the logits and parameters after one more
 * Adam step are PyTorch's. */
#include <graft.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/checkpoint_expected.h"
#include "autograd/test_rules_util.h"
#include "autograd/transformer_expected.h"
#include "check.h"

static gf_tensor_dict *state(const tf_entry *e, int n) {
    gf_tensor_dict *d = gf_tensor_dict_new();
    for (int i = 0; i < n; i++) {
        gf_tensor *t = gf_from_data(e[i].v, e[i].sizes, e[i].rank, GF_F64, NULL);
        CHECK(t && gf_tensor_dict_set(d, e[i].name, t) == GF_OK);
        gf_tensor_release(t);
    }
    return d;
}

static void load(gf_module *m, const tf_entry *e, int n) {
    gf_tensor_dict *sd = gf_module_state_dict(m);
    CHECK_MSG(gf_tensor_dict_size(sd) == n, "%d keys, torch %d", gf_tensor_dict_size(sd), n);
    for (int i = 0; i < n && i < gf_tensor_dict_size(sd); i++)
        CHECK_MSG(!strcmp(gf_tensor_dict_name(sd, i), e[i].name), "key %d: %s, torch %s", i,
                  gf_tensor_dict_name(sd, i), e[i].name);
    gf_tensor_dict_destroy(sd);
    gf_tensor_dict *d = state(e, n);
    CHECK_MSG(gf_module_load_state_dict(m, d, true, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor_dict_destroy(d);
}

static gf_tensor *inputs(gf_tensor **kpm, gf_tensor **causal) {
    *kpm = gf_from_data(tf_kpm, (const int64_t[]){TF_N, TF_L}, 2, GF_BOOL, NULL);
    *causal = gf_from_data(tf_causal, (const int64_t[]){TF_L, TF_L}, 2, GF_F64, NULL);
    return gf_from_data(tf_x, (const int64_t[]){TF_N, TF_L, TF_E}, 3, GF_F64, NULL);
}

static void test_encoder_post_norm(void) {
    gf_module *layers[2];
    for (int i = 0; i < 2; i++)
        layers[i] = gf_nn_transformer_encoder_layer(TF_E, TF_H, TF_FF, 0.1, false, 1e-5, true,
                                                    false, GF_F64, NULL);
    gf_module *norm = gf_nn_layer_norm((const int64_t[]){TF_E}, 1, 1e-5, true, GF_F64, NULL);
    gf_module *enc = gf_nn_transformer_encoder(layers, 2, norm);
    CHECK_MSG(enc != NULL, "%s", gf_last_error());
    for (int i = 0; i < 2; i++) gf_module_release(layers[i]);
    gf_module_release(norm);
    load(enc, tf_a_state, TF_A_N);
    CHECK(gf_module_train(enc, false) == GF_OK);
    gf_tensor *kpm, *causal, *x = inputs(&kpm, &causal);
    gf_tensor *y = gf_nn_transformer_forward(enc, x, causal, kpm);
    ag_near("encoder output", y, tf_a_y, TF_N * TF_L * TF_E, 1e-10);
    gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
    CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
    gf_tensor *g1 = gf_tensor_grad(gf_module_get_parameter(enc, "layers.0.self_attn.in_proj_weight"));
    gf_tensor *g2 = gf_tensor_grad(gf_module_get_parameter(enc, "layers.1.linear2.weight"));
    ag_near("in_proj_weight.grad", g1, tf_a_grad_in_proj, 3 * TF_E * TF_E, 1e-10);
    ag_near("linear2.weight.grad", g2, tf_a_grad_linear2, TF_E * TF_FF, 1e-10);
    gf_tensor *items[] = {kpm, causal, x, y, s, g1, g2};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(enc);
}

static void test_encoder_pre_norm_seq_first(void) {
    gf_module *layer = gf_nn_transformer_encoder_layer(TF_E, TF_H, TF_FF, 0.1, true, 1e-5, false,
                                                       true, GF_F64, NULL);
    gf_module *enc = gf_nn_transformer_encoder(&layer, 1, NULL);
    gf_module_release(layer);
    load(enc, tf_b_state, TF_B_N);
    CHECK(gf_module_train(enc, false) == GF_OK);
    gf_tensor *kpm, *causal, *x = inputs(&kpm, &causal);
    gf_tensor *xt = gf_transpose(x, 0, 1);
    gf_tensor *y = gf_nn_transformer_forward(enc, xt, NULL, kpm);
    ag_near("pre-norm output", y, tf_b_y, TF_N * TF_L * TF_E, 1e-10);
    gf_tensor *items[] = {kpm, causal, x, xt, y};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(enc);
}

static void test_mha_weights(void) {
    gf_module *mha = gf_nn_mha(TF_E, TF_H, 0.0, true, true, GF_F64, NULL);
    load(mha, tf_m_state, TF_M_N);
    gf_tensor *kpm, *causal, *x = inputs(&kpm, &causal);
    bool upper[TF_L * TF_L];
    for (int i = 0; i < TF_L; i++)
        for (int j = 0; j < TF_L; j++) upper[i * TF_L + j] = j > i;
    gf_tensor *bm = gf_from_data(upper, (const int64_t[]){TF_L, TF_L}, 2, GF_BOOL, NULL);
    gf_tensor *w = NULL;
    gf_tensor *y = gf_nn_mha_forward(mha, x, x, x, kpm, bm, true, &w);
    ag_near("attention output", y, tf_m_y, TF_N * TF_L * TF_E, 1e-10);
    ag_near("attention weights", w, tf_m_w, TF_N * TF_L * TF_L, 1e-10);
    /* without weights (scaled_dot_product_attention), the same output */
    gf_tensor *y2 = gf_nn_mha_forward(mha, x, x, x, kpm, bm, false, NULL);
    ag_near("attention output (fused)", y2, tf_m_y, TF_N * TF_L * TF_E, 1e-10);
    /* errors */
    gf_tensor *bad = gf_zeros((const int64_t[]){TF_N, TF_L + 1}, 2, GF_BOOL, NULL);
    CHECK(gf_nn_mha_forward(mha, x, x, x, bad, NULL, false, NULL) == NULL);
    CHECK_CONTAINS(gf_last_error(), "key_padding_mask must be [N, S]");
    CHECK(gf_nn_mha(6, 4, 0.0, true, true, GF_F64, NULL) == NULL);
    CHECK_CONTAINS(gf_last_error(), "divisible by num_heads");
    CHECK(gf_nn_mha_forward(NULL, x, x, x, NULL, NULL, false, NULL) == NULL);
    gf_module *lin = gf_nn_linear(2, 2, true, GF_F64, NULL);
    CHECK(gf_nn_transformer_forward(lin, x, NULL, NULL) == NULL);
    CHECK(gf_nn_transformer_encoder(&lin, 1, NULL) == NULL);
    gf_tensor *items[] = {kpm, causal, x, bm, w, y, y2, bad};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(lin);
    gf_module_release(mha);
}

/* ag_near for an f32 tensor (read as f64). */
static void near32(const char *what, const gf_tensor *t, const double *want, int64_t n,
                   double tol) {
    gf_tensor *d = t ? gf_to_dtype(t, GF_F64) : NULL;
    ag_near(what, d, want, n, tol);
    gf_tensor_release(d);
}

/* The GPT: "tok", "pos", "encoder", "head", as the torch model's names. */
static gf_tensor *gpt_forward(gf_module *m, gf_tensor *const *in, int n) {
    (void)n;
    const int64_t t = gf_tensor_size(in[0], 1);
    float mask[CK_GPT_T * CK_GPT_T];
    for (int64_t i = 0; i < t; i++)
        for (int64_t j = 0; j < t; j++) mask[i * t + j] = j > i ? -INFINITY : 0.0f;
    gf_scope_begin();
    gf_tensor *x = in[0];
    gf_tensor *causal = gf_from_data(mask, (const int64_t[]){t, t}, 2, GF_F32,
                                     gf_tensor_device(x));
    gf_tensor *e = gf_module_forward(gf_module_get_submodule(m, "tok"), &x, 1);
    gf_tensor *h = gf_add(e, gf_module_get_parameter(m, "pos"));
    gf_tensor *z = gf_nn_transformer_forward(gf_module_get_submodule(m, "encoder"), h, causal,
                                             NULL);
    gf_tensor *y = z ? gf_module_forward(gf_module_get_submodule(m, "head"), &z, 1) : NULL;
    gf_tensor *r = gf_scope_keep(y);
    gf_scope_end();
    return r;
}
static const gf_module_class gpt_class = {"GPT", gpt_forward, NULL};

static gf_module *gpt(void) {
    gf_module *m = calloc(1, sizeof *m);
    CHECK(m && gf_module_init(m, &gpt_class) == GF_OK);
    gf_module *layers[2];
    for (int i = 0; i < 2; i++)
        layers[i] = gf_nn_transformer_encoder_layer(CK_GPT_D, CK_GPT_HEADS, CK_GPT_FF, 0.0, true,
                                                    1e-5, true, true, GF_F32, NULL);
    gf_module *norm = gf_nn_layer_norm((const int64_t[]){CK_GPT_D}, 1, 1e-5, true, GF_F32, NULL);
    gf_module *enc = gf_nn_transformer_encoder(layers, 2, norm);
    for (int i = 0; i < 2; i++) gf_module_release(layers[i]);
    gf_module_release(norm);
    gf_module *tok = gf_nn_embedding(CK_GPT_V, CK_GPT_D, GF_F32, NULL);
    gf_module *head = gf_nn_linear(CK_GPT_D, CK_GPT_V, true, GF_F32, NULL);
    gf_tensor *pos = gf_zeros((const int64_t[]){CK_GPT_T, CK_GPT_D}, 2, GF_F32, NULL);
    /* torch's registration order: tok, pos, encoder, head */
    CHECK(tok && gf_module_register_module(m, "tok", tok) == GF_OK);
    CHECK(pos && gf_module_register_parameter(m, "pos", pos) == GF_OK);
    CHECK(enc && gf_module_register_module(m, "encoder", enc) == GF_OK);
    CHECK(head && gf_module_register_module(m, "head", head) == GF_OK);
    gf_module_release(tok), gf_module_release(enc), gf_module_release(head);
    gf_tensor_release(pos);
    return m;
}

static void test_gpt_torch_checkpoint(void) {
    gf_module *m = gpt();
    gf_tensor_dict *md = gf_load_safetensors(GRAFT_TEST_DATA_DIR "/gpt_model.safetensors", NULL);
    CHECK_MSG(md != NULL, "%s", gf_last_error());
    gf_tensor_dict *sd = gf_module_state_dict(m);
    CHECK_MSG(gf_tensor_dict_size(sd) == gf_tensor_dict_size(md), "%d keys, torch's file %d",
              gf_tensor_dict_size(sd), gf_tensor_dict_size(md));
    /* the same names (a safetensors file keeps them sorted, not in order) */
    for (int i = 0; i < gf_tensor_dict_size(sd); i++)
        CHECK_MSG(gf_tensor_dict_get(md, gf_tensor_dict_name(sd, i)) != NULL,
                  "graft's key %s is not in torch's file", gf_tensor_dict_name(sd, i));
    gf_tensor_dict_destroy(sd);
    CHECK_MSG(gf_module_load_state_dict(m, md, true, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor_dict_destroy(md);
    gf_tensor *params[64];
    int np = gf_module_parameters(m, params, 64);
    /* created with the defaults: lr, betas, eps and weight decay (and, for
     * the GPT, AdamW's decoupled decay) come from the file's param_groups */
    gf_optimizer *opt = np > 0 ? gf_adam_create(params, np, NULL) : NULL;
    gf_tensor_dict *od = gf_load_safetensors(GRAFT_TEST_DATA_DIR "/gpt_adam.safetensors", NULL);
    CHECK_MSG(od && gf_tensor_dict_size(od) == 3 * np, "%s", gf_last_error());
    CHECK_MSG(opt && gf_optimizer_load_state_dict(opt, od, "state.") == GF_OK, "%s",
              gf_last_error());
    CHECK_MSG(opt && fabs(gf_optimizer_get_lr(opt) - 0.01) < 1e-15, "lr %g after loading",
              gf_optimizer_get_lr(opt));
    gf_tensor_dict_destroy(od);
    const int64_t bt[2] = {CK_GPT_B, CK_GPT_T}, nv = CK_GPT_B * CK_GPT_T * CK_GPT_V;
    gf_tensor *x = gf_from_data(ck_gpt_x, bt, 2, GF_I64, NULL);
    gf_tensor *yt = gf_from_data(ck_gpt_y, (const int64_t[]){CK_GPT_B * CK_GPT_T}, 1, GF_I64,
                                 NULL);
    CHECK(gf_module_train(m, false) == GF_OK);
    gf_tensor *l0 = gf_module_forward(m, &x, 1);
    near32("logits after loading", l0, ck_gpt_logits_loaded, nv, 2e-5);
    CHECK(gf_module_train(m, true) == GF_OK);
    gf_scope_begin();
    gf_tensor *logits = gf_reshape(gf_module_forward(m, &x, 1),
                                   (const int64_t[]){CK_GPT_B * CK_GPT_T, CK_GPT_V}, 2);
    gf_tensor *loss = gf_cross_entropy(logits, yt, NULL, GF_REDUCTION_MEAN, -100, 0.0);
    double lv = NAN;
    CHECK(loss && gf_tensor_item(loss, &lv) == GF_OK && fabs(lv - ck_gpt_loss) < 2e-5);
    CHECK_MSG(loss && gf_backward(loss, NULL, NULL) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(opt && gf_optimizer_step(opt) == GF_OK, "%s", gf_last_error());
    gf_scope_end();
    CHECK(gf_module_train(m, false) == GF_OK);
    gf_tensor *l1 = gf_module_forward(m, &x, 1);
    near32("logits after a step", l1, ck_gpt_logits_stepped, nv, 5e-5);
    near32("head.weight after a step", gf_module_get_parameter(m, "head.weight"),
            ck_gpt_head_weight, CK_GPT_V * CK_GPT_D, 2e-5);
    near32("pos after a step", gf_module_get_parameter(m, "pos"), ck_gpt_pos,
            CK_GPT_T * CK_GPT_D, 2e-5);
    gf_tensor *items[] = {x, yt, l0, l1};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_optimizer_destroy(opt);
    gf_module_release(m);
}

int main(void) {
    int missing = ag_device_check();
    if (missing) return missing;
    RUN(test_encoder_post_norm);
    RUN(test_encoder_pre_norm_seq_first);
    RUN(test_mha_weights);
    RUN(test_gpt_torch_checkpoint);
    return CHECK_REPORT();
}
