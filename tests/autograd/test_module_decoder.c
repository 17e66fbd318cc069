/* SPDX-License-Identifier: BSD-3-Clause */
/* test_module_decoder.c — nn.TransformerDecoder built from graft's modules
 * (two post-norm relu batch-first layers with a final norm, every mask
 * given; one pre-norm gelu sequence-first layer with memory masks) loads
 * torch's state dicts by name and gives torch's output and the gradients
 * of every parameter, of tgt and of memory (tools/expected/gen_decoder.py);
 * a layer alone, gf_module_forward, and the error paths. */
#include <graft.h>
#include <math.h>
#include <string.h>

#include "autograd/decoder_expected.h"
#include "autograd/test_rules_util.h"
#include "check.h"

static void load(gf_module *m, const dc_entry *e, int n) {
    gf_tensor_dict *sd = gf_module_state_dict(m);
    CHECK_MSG(gf_tensor_dict_size(sd) == n, "%d keys, torch %d", gf_tensor_dict_size(sd), n);
    for (int i = 0; i < n && i < gf_tensor_dict_size(sd); i++)
        CHECK_MSG(!strcmp(gf_tensor_dict_name(sd, i), e[i].name), "key %d: %s, torch %s", i,
                  gf_tensor_dict_name(sd, i), e[i].name);
    gf_tensor_dict_destroy(sd);
    gf_tensor_dict *d = gf_tensor_dict_new();
    for (int i = 0; i < n; i++) {
        gf_tensor *t = gf_from_data(e[i].v, e[i].sizes, e[i].rank, GF_F64, NULL);
        CHECK(t && gf_tensor_dict_set(d, e[i].name, t) == GF_OK);
        gf_tensor_release(t);
    }
    CHECK_MSG(gf_module_load_state_dict(m, d, true, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor_dict_destroy(d);
}

/* Every parameter's gradient against torch's, by name (named_parameters
 * order, which must be torch's too). */
static void check_grads(const char *tag, gf_module *m, const dc_grad *g, int n) {
    gf_tensor_dict *np = gf_module_named_parameters(m);
    CHECK_MSG(gf_tensor_dict_size(np) == n, "%s: %d parameters, torch %d", tag,
              gf_tensor_dict_size(np), n);
    for (int i = 0; i < n && i < gf_tensor_dict_size(np); i++) {
        CHECK_MSG(!strcmp(gf_tensor_dict_name(np, i), g[i].name), "%s: parameter %d: %s, torch %s",
                  tag, i, gf_tensor_dict_name(np, i), g[i].name);
        gf_tensor *p = gf_module_get_parameter(m, g[i].name);
        gf_tensor *gr = gf_tensor_grad(p);
        char what[160];
        snprintf(what, sizeof what, "%s %s.grad", tag, g[i].name);
        ag_near(what, gr, g[i].g, gf_tensor_numel(p), 1e-9);
        gf_tensor_release(gr);
    }
    gf_tensor_dict_destroy(np);
}

static gf_tensor *t3(const double *v, int64_t a, int64_t b, int64_t c, bool leaf) {
    return leaf ? ag_leaf_t(v, SZ(a, b, c), 3) : ag_t(v, SZ(a, b, c), 3);
}

/* backward of sum(y * w) */
static void backward_w(gf_tensor *y, gf_tensor *w) {
    gf_tensor *p = y && w ? gf_mul(y, w) : NULL;
    gf_tensor *s = p ? gf_sum(p, NULL, 0, false) : NULL;
    CHECK_MSG(s && gf_backward(s, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor_release(p);
    gf_tensor_release(s);
}

static gf_module *decoder_a(void) {
    gf_module *layers[2];
    for (int i = 0; i < 2; i++)
        layers[i] = gf_nn_transformer_decoder_layer(DC_E, DC_H, DC_FF, 0.0, false, 1e-5, true,
                                                    false, GF_F64, NULL);
    gf_module *norm = gf_nn_layer_norm(SZ(DC_E), 1, 1e-5, true, GF_F64, NULL);
    gf_module *dec = gf_nn_transformer_decoder(layers, 2, norm);
    CHECK_MSG(dec != NULL, "%s", gf_last_error());
    for (int i = 0; i < 2; i++) gf_module_release(layers[i]);
    gf_module_release(norm);
    load(dec, dc_a_state, DC_A_N);
    CHECK(gf_module_train(dec, false) == GF_OK);
    return dec;
}

static void test_decoder_post_norm(void) {
    gf_module *dec = decoder_a();
    CHECK(!strcmp(gf_module_type_name(dec), "TransformerDecoder"));
    CHECK(!strcmp(gf_module_type_name(gf_module_get_submodule(dec, "layers.1")),
                  "TransformerDecoderLayer"));
    gf_tensor *tgt = t3(dc_tgt, DC_N, DC_T, DC_E, true), *mem = t3(dc_mem, DC_N, DC_S, DC_E, true);
    gf_tensor *w = t3(dc_w, DC_N, DC_T, DC_E, false);
    gf_tensor *causal = ag_t(dc_causal, SZ(DC_T, DC_T), 2);
    gf_tensor *tkpm = ag_t(dc_tgt_kpm_f, SZ(DC_N, DC_T), 2);
    gf_tensor *mmask = gf_from_data(dc_mem_bool, SZ(DC_T, DC_S), 2, GF_BOOL, NULL);
    gf_tensor *mkpm = gf_from_data(dc_mem_kpm, SZ(DC_N, DC_S), 2, GF_BOOL, NULL);
    gf_tensor *y = gf_nn_transformer_decoder_forward(dec, tgt, mem, causal, mmask, tkpm, mkpm);
    ag_near("decoder output", y, dc_a_y, DC_N * DC_T * DC_E, 1e-10);
    backward_w(y, w);
    check_grads("a", dec, dc_a_grads, DC_A_NG);
    gf_tensor *gt = gf_tensor_grad(tgt), *gm = gf_tensor_grad(mem);
    ag_near("tgt.grad", gt, dc_a_gtgt, DC_N * DC_T * DC_E, 1e-9);
    ag_near("memory.grad", gm, dc_a_gmem, DC_N * DC_S * DC_E, 1e-9);
    gf_tensor *items[] = {tgt, mem, w, causal, tkpm, mmask, mkpm, y, gt, gm};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(dec);
}

static void test_decoder_pre_norm_seq_first(void) {
    gf_module *layer = gf_nn_transformer_decoder_layer(DC_E, DC_H, DC_FF, 0.0, true, 1e-5, false,
                                                       true, GF_F64, NULL);
    gf_module *dec = gf_nn_transformer_decoder(&layer, 1, NULL);
    CHECK_MSG(dec != NULL, "%s", gf_last_error());
    load(dec, dc_b_state, DC_B_N);
    CHECK(gf_module_train(dec, false) == GF_OK);
    /* sequence first: [T, N, E] leaves made from torch's [N, T, E] values */
    gf_tensor *tb = t3(dc_tgt, DC_N, DC_T, DC_E, false), *mb = t3(dc_mem, DC_N, DC_S, DC_E, false);
    gf_tensor *wb = t3(dc_w, DC_N, DC_T, DC_E, false);
    gf_tensor *tt = gf_transpose(tb, 0, 1), *mt = gf_transpose(mb, 0, 1), *w = gf_transpose(wb, 0, 1);
    gf_tensor *tgt = gf_contiguous(tt), *mem = gf_contiguous(mt);
    CHECK(gf_tensor_set_requires_grad(tgt, true) == GF_OK);
    CHECK(gf_tensor_set_requires_grad(mem, true) == GF_OK);
    gf_tensor *mmask = ag_t(dc_mem_float, SZ(DC_T, DC_S), 2);
    gf_tensor *mkpm = ag_t(dc_mem_kpm_f, SZ(DC_N, DC_S), 2);
    gf_tensor *y = gf_nn_transformer_decoder_forward(dec, tgt, mem, NULL, mmask, NULL, mkpm);
    gf_tensor *yc = y ? gf_contiguous(y) : NULL;
    ag_near("pre-norm decoder output", yc, dc_b_y, DC_N * DC_T * DC_E, 1e-10);
    backward_w(y, w);
    check_grads("b", dec, dc_b_grads, DC_B_NG);
    gf_tensor *gt = gf_tensor_grad(tgt), *gm = gf_tensor_grad(mem);
    ag_near("tgt.grad (sequence first)", gt, dc_b_gtgt, DC_N * DC_T * DC_E, 1e-9);
    ag_near("memory.grad (sequence first)", gm, dc_b_gmem, DC_N * DC_S * DC_E, 1e-9);
    /* the layer alone through gf_module_forward: the same as the full call
     * without masks */
    gf_module *l0 = gf_module_get_submodule(dec, "layers.0");
    gf_tensor *in[2] = {tgt, mem};
    gf_tensor *y1 = gf_module_forward(l0, in, 2);
    gf_tensor *y2 = gf_nn_transformer_decoder_forward(l0, tgt, mem, NULL, NULL, NULL, NULL);
    gf_tensor *y3 = gf_module_forward(dec, in, 2);
    double want[DC_N * DC_T * DC_E];
    CHECK(ag_read(y2, want, DC_N * DC_T * DC_E) == DC_N * DC_T * DC_E);
    ag_near("layer via gf_module_forward", y1, want, DC_N * DC_T * DC_E, 1e-14);
    ag_near("decoder via gf_module_forward", y3, want, DC_N * DC_T * DC_E, 1e-14);
    gf_tensor *items[] = {tb, mb, wb, tt, mt, w, tgt, mem, mmask, mkpm, y, yc, gt, gm, y1, y2, y3};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(layer);
    gf_module_release(dec);
}

static void test_decoder_errors(void) {
    gf_module *dec = decoder_a();
    gf_tensor *tgt = t3(dc_tgt, DC_N, DC_T, DC_E, false), *mem = t3(dc_mem, DC_N, DC_S, DC_E, false);
    gf_tensor *in[2] = {tgt, mem};
    CHECK_ERR_NULL(gf_module_forward(dec, in, 1), GF_ERR_INVALID, "TransformerDecoder.forward",
                   "2 inputs");
    gf_module *l0 = gf_module_get_submodule(dec, "layers.0");
    gf_tensor *in3[3] = {tgt, mem, mem};
    CHECK_ERR_NULL(gf_module_forward(l0, in3, 3), GF_ERR_INVALID,
                   "TransformerDecoderLayer.forward", "2 inputs");
    CHECK_ERR_NULL(gf_nn_transformer_decoder_forward(NULL, tgt, mem, NULL, NULL, NULL, NULL),
                   GF_ERR_INVALID, "NULL", "TransformerDecoder");
    gf_module *lin = gf_nn_linear(2, 2, true, GF_F64, NULL);
    CHECK_ERR_NULL(gf_nn_transformer_decoder_forward(lin, tgt, mem, NULL, NULL, NULL, NULL),
                   GF_ERR_INVALID, "Linear", "not a TransformerDecoderLayer");
    CHECK_ERR_NULL(gf_nn_transformer_decoder_forward(dec, tgt, NULL, NULL, NULL, NULL, NULL),
                   GF_ERR_INVALID, "memory");
    CHECK_ERR_NULL(gf_nn_transformer_decoder_forward(dec, NULL, mem, NULL, NULL, NULL, NULL),
                   GF_ERR_INVALID, "tgt");
    /* a memory key padding mask of tgt's length */
    gf_tensor *bad = gf_zeros(SZ(DC_N, DC_T), 2, GF_BOOL, NULL);
    CHECK_ERR_NULL(gf_nn_transformer_decoder_forward(dec, tgt, mem, NULL, NULL, NULL, bad),
                   GF_ERR_SHAPE, "key_padding_mask must be [N, S]");
    /* a memory of another width */
    gf_tensor *narrow = gf_zeros(SZ(DC_N, DC_S, DC_E - 2), 3, GF_F64, NULL);
    CHECK_ERR_NULL(gf_nn_transformer_decoder_forward(dec, tgt, narrow, NULL, NULL, NULL, NULL),
                   GF_ERR_SHAPE, "embed_dim");
    /* constructors */
    CHECK_ERR_NULL(gf_nn_transformer_decoder_layer(DC_E, DC_H, 0, 0.0, false, 1e-5, true, false,
                                                   GF_F64, NULL),
                   GF_ERR_INVALID, "dim_feedforward 0");
    CHECK_ERR_NULL(gf_nn_transformer_decoder_layer(6, 4, 8, 0.0, false, 1e-5, true, false,
                                                   GF_F64, NULL),
                   GF_ERR_INVALID, "divisible by num_heads");
    CHECK_ERR_NULL(gf_nn_transformer_decoder(&lin, 1, NULL), GF_ERR_INVALID,
                   "layer 0 is Linear", "not a TransformerDecoderLayer");
    gf_module *enc_layer = gf_nn_transformer_encoder_layer(DC_E, DC_H, DC_FF, 0.0, false, 1e-5,
                                                           true, false, GF_F64, NULL);
    CHECK_ERR_NULL(gf_nn_transformer_decoder(&enc_layer, 1, NULL), GF_ERR_INVALID,
                   "TransformerEncoderLayer");
    CHECK_ERR_NULL(gf_nn_transformer_decoder((gf_module *const[]){NULL}, 1, NULL),
                   GF_ERR_INVALID, "layer 0 is NULL");
    CHECK_ERR_NULL(gf_nn_transformer_decoder(NULL, 2, NULL), GF_ERR_INVALID,
                   "the array is NULL");
    CHECK_ERR_NULL(gf_nn_transformer_decoder(NULL, -1, NULL), GF_ERR_INVALID, "num_layers >= 0");
    /* no layers, no norm: the identity, as torch */
    gf_module *empty = gf_nn_transformer_decoder(NULL, 0, NULL);
    gf_tensor *y = gf_nn_transformer_decoder_forward(empty, tgt, mem, NULL, NULL, NULL, NULL);
    ag_near("empty decoder", y, dc_tgt, DC_N * DC_T * DC_E, 0);
    gf_tensor *items[] = {tgt, mem, bad, narrow, y};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module *ms[] = {dec, lin, enc_layer, empty};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) gf_module_release(ms[i]);
}

int main(void) {
    int missing = ag_device_check();
    if (missing) return missing;
    RUN(test_decoder_post_norm);
    RUN(test_decoder_pre_norm_seq_first);
    RUN(test_decoder_errors);
    return ag_finish();
}
