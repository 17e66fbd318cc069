/* SPDX-License-Identifier: BSD-3-Clause */
/* test_module_transformer.c — nn.TransformerEncoder (post-norm relu batch
 * first with a final norm; pre-norm gelu sequence first) and
 * nn.MultiheadAttention built from graft's modules load torch's state dicts
 * by name and give torch's outputs (with a key padding mask and a causal
 * float mask, or a bool attn_mask), gradients and averaged attention
 * weights (tools/expected/gen_transformer.py). */
#include <graft.h>
#include <math.h>
#include <string.h>

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

int main(void) {
    int missing = ag_device_check();
    if (missing) return missing;
    RUN(test_encoder_post_norm);
    RUN(test_encoder_pre_norm_seq_first);
    RUN(test_mha_weights);
    return CHECK_REPORT();
}
