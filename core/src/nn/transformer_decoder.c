/* SPDX-License-Identifier: BSD-3-Clause */
/* transformer_decoder.c — nn.TransformerDecoderLayer and
 * nn.TransformerDecoder as modules (graft/module.h): PyTorch's children
 * and parameter names, post- or pre-norm, relu or gelu, its mask
 * conventions (through gf_nn_mha_forward). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "module_internal.h"

typedef struct tdl_mod {
    gf_module base;
    bool gelu, norm_first;
} tdl_mod;

static const char *const layer_type = "TransformerDecoderLayer";
static const char *const decoder_type = "TransformerDecoder";

/* One layer: PyTorch's _sa_block, _mha_block and _ff_block, each added to
 * x, post-norm (norm after the sum) or pre-norm (norm of the block's
 * input). */
static gf_tensor *tdl_impl(gf_module *m, const gf_tensor *tgt, const gf_tensor *memory,
                           const gf_tensor *tgt_mask, const gf_tensor *memory_mask,
                           const gf_tensor *tgt_kpm, const gf_tensor *memory_kpm) {
    tdl_mod *t = (tdl_mod *)m;
    gf_tensor *tmp[32] = {0};
    int nt = 0;
#define T(x) (tmp[nt++] = (x))
#define CALL(name, x) ((x) ? T(gf_module_forward(gf__mod_child(m, name), (gf_tensor *const[]){(x)}, 1)) : NULL)
    static const char *const norms[3] = {"norm1", "norm2", "norm3"};
    static const char *const drops[3] = {"dropout1", "dropout2", "dropout3"};
    gf_tensor *x = (gf_tensor *)tgt, *out = NULL;
    for (int block = 0; block < 3 && x; block++) {
        gf_tensor *in = t->norm_first ? CALL(norms[block], x) : x;
        gf_tensor *y = NULL;
        if (in && block == 0) {
            y = T(gf_nn_mha_forward(gf__mod_child(m, "self_attn"), in, in, in, tgt_kpm, tgt_mask,
                                    false, NULL));
        } else if (in && block == 1) {
            y = T(gf_nn_mha_forward(gf__mod_child(m, "multihead_attn"), in, memory, memory,
                                    memory_kpm, memory_mask, false, NULL));
        } else if (in) {
            gf_tensor *h = CALL("linear1", in);
            gf_tensor *act = h ? T(t->gelu ? gf_gelu(h, false) : gf_relu(h)) : NULL;
            gf_tensor *dr = CALL("dropout", act);
            y = CALL("linear2", dr);
        }
        gf_tensor *yd = CALL(drops[block], y);
        gf_tensor *sum = yd ? T(gf_add(x, yd)) : NULL;
        x = t->norm_first ? sum : CALL(norms[block], sum);
    }
    if (x) out = gf_tensor_retain(x);
#undef CALL
#undef T
    for (int i = 0; i < nt; i++) gf_tensor_release(tmp[i]);
    return out;
}

static gf_tensor *tdl_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (n != 2) {
        gf__error(GF_ERR_INVALID, "%s.forward: takes 2 inputs (tgt, memory), got %d; "
                  "gf_nn_transformer_decoder_forward takes masks", layer_type, n);
        return NULL;
    }
    return tdl_impl(m, in[0], in[1], NULL, NULL, NULL, NULL);
}
static const gf_module_class tdl_class = {"TransformerDecoderLayer", tdl_forward, NULL};

static gf_status add_child(gf_module *m, const char *name, gf_module *c) {
    gf_status st = c ? gf_module_register_module(m, name, c) : gf__status();
    gf_module_release(c);
    return st;
}

gf_module *gf_nn_transformer_decoder_layer(int64_t d_model, int64_t nhead,
                                           int64_t dim_feedforward, double dropout, bool gelu,
                                           double layer_norm_eps, bool batch_first,
                                           bool norm_first, gf_dtype dtype, gf_device *dev) {
    const char *op = "gf_nn_transformer_decoder_layer";
    if (dim_feedforward < 1) {
        gf__error(GF_ERR_INVALID, "%s: dim_feedforward %lld must be >= 1", op,
                  (long long)dim_feedforward);
        return NULL;
    }
    int saved = gf__scope_suspend();
    tdl_mod *t = calloc(1, sizeof *t);
    gf_status st = t ? gf_module_init(&t->base, &tdl_class)
                     : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    if (st != GF_OK) {
        free(t);
        gf__scope_resume(saved);
        return NULL;
    }
    t->gelu = gelu, t->norm_first = norm_first;
    gf_module *m = &t->base;
    const int64_t shape[1] = {d_model};
    /* PyTorch's registration order, which is its state dict's order */
    st = add_child(m, "self_attn", gf_nn_mha(d_model, nhead, dropout, true, batch_first, dtype, dev));
    if (st == GF_OK)
        st = add_child(m, "multihead_attn",
                       gf_nn_mha(d_model, nhead, dropout, true, batch_first, dtype, dev));
    if (st == GF_OK) st = add_child(m, "linear1", gf_nn_linear(d_model, dim_feedforward, true, dtype, dev));
    if (st == GF_OK) st = add_child(m, "dropout", gf_nn_dropout(dropout));
    if (st == GF_OK) st = add_child(m, "linear2", gf_nn_linear(dim_feedforward, d_model, true, dtype, dev));
    for (int i = 0; st == GF_OK && i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "norm%d", i + 1);
        st = add_child(m, name, gf_nn_layer_norm(shape, 1, layer_norm_eps, true, dtype, dev));
    }
    for (int i = 0; st == GF_OK && i < 3; i++) {
        char name[12];
        snprintf(name, sizeof name, "dropout%d", i + 1);
        st = add_child(m, name, gf_nn_dropout(dropout));
    }
    gf__scope_resume(saved);
    if (st != GF_OK) {
        gf_module_release(m);
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------ TransformerDecoder */
static gf_tensor *dec_impl(gf_module *m, const gf_tensor *tgt, const gf_tensor *memory,
                           const gf_tensor *tgt_mask, const gf_tensor *memory_mask,
                           const gf_tensor *tgt_kpm, const gf_tensor *memory_kpm) {
    gf_module *layers = gf__mod_child(m, "layers"), *norm = gf__mod_child(m, "norm");
    gf_tensor *x = gf_tensor_retain((gf_tensor *)tgt);
    int n = layers ? gf_module_child_count(layers) : 0;
    for (int i = 0; x && i < n; i++) {
        gf_tensor *y = tdl_impl(gf_module_child_at(layers, i), x, memory, tgt_mask, memory_mask,
                                tgt_kpm, memory_kpm);
        gf_tensor_release(x);
        x = y;
    }
    if (x && norm) {
        gf_tensor *y = gf_module_forward(norm, &x, 1);
        gf_tensor_release(x);
        x = y;
    }
    return x;
}

static gf_tensor *dec_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (n != 2) {
        gf__error(GF_ERR_INVALID, "%s.forward: takes 2 inputs (tgt, memory), got %d; "
                  "gf_nn_transformer_decoder_forward takes masks", decoder_type, n);
        return NULL;
    }
    return dec_impl(m, in[0], in[1], NULL, NULL, NULL, NULL);
}
static const gf_module_class dec_class = {"TransformerDecoder", dec_forward, NULL};

gf_module *gf_nn_transformer_decoder(gf_module *const *layers, int num_layers, gf_module *norm) {
    const char *op = "gf_nn_transformer_decoder";
    if (num_layers < 0 || (num_layers > 0 && !layers)) {
        gf__error(GF_ERR_INVALID, "%s: %d layers%s", op, num_layers,
                  num_layers > 0 ? " but the array is NULL" : "; give num_layers >= 0");
        return NULL;
    }
    for (int i = 0; i < num_layers; i++)
        if (!layers[i] || layers[i]->cls != &tdl_class) {
            gf__error(GF_ERR_INVALID, "%s: layer %d is %s, not a %s (gf_nn_transformer_decoder_"
                      "layer)", op, i, layers[i] ? gf_module_type_name(layers[i]) : "NULL",
                      layer_type);
            return NULL;
        }
    gf_module *m = calloc(1, sizeof *m);
    gf_status st = m ? gf_module_init(m, &dec_class)
                     : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    if (st != GF_OK) {
        free(m);
        return NULL;
    }
    gf_module *list = gf_nn_module_list(layers, num_layers);
    if (!list) st = gf__status();
    if (st == GF_OK) st = gf_module_register_module(m, "layers", list);
    gf_module_release(list);
    if (st == GF_OK && norm) st = gf_module_register_module(m, "norm", norm);
    if (st != GF_OK) {
        gf_module_release(m);
        return NULL;
    }
    return m;
}

gf_tensor *gf_nn_transformer_decoder_forward(gf_module *m, const gf_tensor *tgt,
                                             const gf_tensor *memory, const gf_tensor *tgt_mask,
                                             const gf_tensor *memory_mask,
                                             const gf_tensor *tgt_key_padding_mask,
                                             const gf_tensor *memory_key_padding_mask) {
    const char *op = "gf_nn_transformer_decoder_forward";
    bool layer = m && m->state && m->cls == &tdl_class;
    bool dec = m && m->state && m->cls == &dec_class;
    if (!layer && !dec) {
        gf__error(GF_ERR_INVALID, "%s: m is %s, not a %s or %s", op,
                  m && m->state ? gf_module_type_name(m) : "NULL", layer_type, decoder_type);
        return NULL;
    }
    if (!tgt || !memory) {
        gf__null_arg(op, !tgt ? "tgt" : "memory");
        return NULL;
    }
    int saved = gf__scope_suspend();
    gf_tensor *y = (layer ? tdl_impl : dec_impl)(m, tgt, memory, tgt_mask, memory_mask,
                                                 tgt_key_padding_mask, memory_key_padding_mask);
    gf__scope_resume(saved);
    return gf__ret(y);
}
