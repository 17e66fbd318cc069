/* SPDX-License-Identifier: BSD-3-Clause */
/* attention.c — nn.MultiheadAttention and nn.TransformerEncoderLayer /
 * TransformerEncoder as modules (graft/module.h), composed of graft's ops
 * with PyTorch's parameter names, initialisation and mask conventions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "module_internal.h"

/* Releases every non-NULL tensor of a NULL-terminated-by-count list. */
static void drop_all(gf_tensor **ts, int n) {
    for (int i = 0; i < n; i++) gf_tensor_release(ts[i]);
}

/* ------------------------------------------------------------ MultiheadAttention */
typedef struct mha_mod {
    gf_module base;
    int64_t embed_dim, num_heads;
    double dropout;
    bool batch_first;
} mha_mod;

/* x [N, T, E] (batch first) -> [N, H, T, D]. */
static gf_tensor *heads(const gf_tensor *x, int64_t h) {
    int64_t n = gf_tensor_size(x, 0), t = gf_tensor_size(x, 1), e = gf_tensor_size(x, 2);
    gf_tensor *r = gf_reshape(x, (const int64_t[]){n, t, h, e / h}, 4);
    gf_tensor *y = r ? gf_transpose(r, 1, 2) : NULL;
    gf_tensor_release(r);
    return y;
}

/* An additive mask of dtype dt from PyTorch's MHA conventions (bool: true =
 * may NOT attend), shaped to broadcast against [N, H, L, S]; NULL when
 * neither is given (*err false) or on failure (*err true). */
static gf_tensor *additive_mask(const gf_tensor *attn_mask, const gf_tensor *kpm, int64_t n,
                                int64_t h, int64_t l, int64_t s, gf_dtype dt, bool *err) {
    *err = false;
    gf_tensor *total = NULL;
    const gf_tensor *masks[2] = {attn_mask, kpm};
    for (int k = 0; k < 2; k++) {
        const gf_tensor *m = masks[k];
        if (!m) continue;
        int r = gf_tensor_rank(m);
        bool ok = k == 0 ? (r == 2 && gf_tensor_size(m, 0) == l && gf_tensor_size(m, 1) == s) ||
                               (r == 3 && gf_tensor_size(m, 0) == n * h &&
                                gf_tensor_size(m, 1) == l && gf_tensor_size(m, 2) == s)
                         : r == 2 && gf_tensor_size(m, 0) == n && gf_tensor_size(m, 1) == s;
        if (!ok) {
            gf__error(GF_ERR_SHAPE, "MultiheadAttention: %s must be %s (L %lld, S %lld, N %lld, "
                      "heads %lld)", k == 0 ? "attn_mask" : "key_padding_mask",
                      k == 0 ? "[L, S] or [N * heads, L, S]" : "[N, S]", (long long)l,
                      (long long)s, (long long)n, (long long)h);
            gf_tensor_release(total);
            *err = true;
            return NULL;
        }
        gf_tensor *add;
        if (gf_tensor_dtype(m) == GF_BOOL) {
            gf_tensor *z = gf_zeros(gf_tensor_sizes(m), r, dt, gf_tensor_device(m));
            add = z ? gf_masked_fill(z, m, -INFINITY) : NULL;
            gf_tensor_release(z);
        } else {
            add = gf_to_dtype(m, dt);
        }
        gf_tensor *shaped = NULL;
        if (add) {
            const int64_t full[4] = {n, h, l, s}, pad[4] = {n, 1, 1, s};
            shaped = k == 1 ? gf_reshape(add, pad, 4)
                   : r == 3 ? gf_reshape(add, full, 4) : gf_tensor_retain(add);
        }
        gf_tensor_release(add);
        gf_tensor *sum = shaped && total ? gf_add(total, shaped) : gf_tensor_retain(shaped);
        gf_tensor_release(shaped);
        gf_tensor_release(total);
        total = sum;
        if (!total) {
            *err = true;
            return NULL;
        }
    }
    return total;
}

static gf_tensor *mha_impl(gf_module *m, const gf_tensor *query, const gf_tensor *key,
                           const gf_tensor *value, const gf_tensor *key_padding_mask,
                           const gf_tensor *attn_mask, bool need_weights, gf_tensor **weights) {
    mha_mod *a = (mha_mod *)m;
    int64_t e = a->embed_dim, h = a->num_heads;
    if (gf_tensor_rank(query) != 3 || gf_tensor_rank(key) != 3 || gf_tensor_rank(value) != 3 ||
        gf_tensor_size(query, 2) != e || gf_tensor_size(key, 2) != e ||
        gf_tensor_size(value, 2) != e) {
        gf__error(GF_ERR_SHAPE, "MultiheadAttention: query, key and value must be 3-D with "
                  "embed_dim %lld last (batched input; [N, L, E] with batch_first, else "
                  "[L, N, E])", (long long)e);
        return NULL;
    }
    gf_tensor *tmp[40] = {0};
    int nt = 0;
#define T(x) (tmp[nt++] = (x))
    /* batch first throughout */
    const gf_tensor *q0 = a->batch_first ? query : T(gf_transpose(query, 0, 1));
    const gf_tensor *k0 = a->batch_first ? key : T(gf_transpose(key, 0, 1));
    const gf_tensor *v0 = a->batch_first ? value : T(gf_transpose(value, 0, 1));
    gf_tensor *w = gf__mod_own(m, "in_proj_weight"), *b = gf__mod_own(m, "in_proj_bias");
    gf_tensor *out = NULL;
    if (q0 && k0 && v0) {
        gf_tensor *wq = T(gf_narrow(w, 0, 0, e)), *wk = T(gf_narrow(w, 0, e, e));
        gf_tensor *wv = T(gf_narrow(w, 0, 2 * e, e));
        gf_tensor *bq = b ? T(gf_narrow(b, 0, 0, e)) : NULL, *bk = b ? T(gf_narrow(b, 0, e, e)) : NULL;
        gf_tensor *bv = b ? T(gf_narrow(b, 0, 2 * e, e)) : NULL;
        gf_tensor *ql = T(gf_linear(q0, wq, bq)), *kl = T(gf_linear(k0, wk, bk));
        gf_tensor *vl = T(gf_linear(v0, wv, bv));
        gf_tensor *q = ql ? T(heads(ql, h)) : NULL, *k = kl ? T(heads(kl, h)) : NULL;
        gf_tensor *v = vl ? T(heads(vl, h)) : NULL;
        int64_t n = gf_tensor_size(q0, 0), l = gf_tensor_size(q0, 1), s = gf_tensor_size(k0, 1);
        bool err = false;
        gf_tensor *mask = q && k && v ? additive_mask(attn_mask, key_padding_mask, n, h, l, s,
                                                      gf_tensor_dtype(q), &err)
                                      : NULL;
        T(mask);
        double p = gf_module_is_training(m) ? a->dropout : 0.0;
        gf_tensor *ctx = NULL;
        if (q && k && v && !err) {
            if (!need_weights) {
                ctx = T(gf_scaled_dot_product_attention(q, k, v, mask, p, false, NAN));
            } else {
                gf_tensor *kt = T(gf_transpose(k, 2, 3));
                gf_tensor *qk = kt ? T(gf_matmul(q, kt)) : NULL;
                gf_tensor *sc = qk ? T(gf_mul_scalar(qk, 1.0 / sqrt((double)(e / h)))) : NULL;
                gf_tensor *scm = sc && mask ? T(gf_add(sc, mask)) : sc;
                gf_tensor *att = scm ? T(gf_softmax(scm, -1)) : NULL;
                gf_tensor *attd = att && p > 0 ? T(gf_dropout(att, p, true)) : att;
                ctx = attd ? T(gf_matmul(attd, v)) : NULL;
                if (weights && att) *weights = gf_mean(att, (const int[]){1}, 1, false);
            }
        }
        /* [N, H, L, D] -> [N, L, E] -> out_proj */
        gf_tensor *ct = ctx ? T(gf_transpose(ctx, 1, 2)) : NULL;
        gf_tensor *cc = ct ? T(gf_contiguous(ct)) : NULL;
        gf_tensor *merged = cc ? T(gf_reshape(cc, (const int64_t[]){n, l, e}, 3)) : NULL;
        gf_tensor *o = merged ? T(gf_module_forward(gf__mod_child(m, "out_proj"), &merged, 1)) : NULL;
        if (o) out = a->batch_first ? gf_tensor_retain(o) : gf_transpose(o, 0, 1);
    }
#undef T
    drop_all(tmp, nt);
    return out;
}

gf_tensor *gf_nn_mha_forward(gf_module *m, const gf_tensor *query, const gf_tensor *key,
                             const gf_tensor *value, const gf_tensor *key_padding_mask,
                             const gf_tensor *attn_mask, bool need_weights, gf_tensor **weights) {
    const char *op = "gf_nn_mha_forward";
    if (weights) *weights = NULL;
    if (!m || !m->state || strcmp(gf_module_type_name(m), "MultiheadAttention")) {
        gf__error(GF_ERR_INVALID, "%s: m is not a MultiheadAttention (made by gf_nn_mha)", op);
        return NULL;
    }
    if (!query || !key || !value) {
        gf__null_arg(op, !query ? "query" : !key ? "key" : "value");
        return NULL;
    }
    int saved = gf__scope_suspend();
    gf_tensor *y = mha_impl(m, query, key, value, key_padding_mask, attn_mask, need_weights,
                            weights);
    gf__scope_resume(saved);
    if (!y && weights) {
        gf_tensor_release(*weights);
        *weights = NULL;
    }
    if (weights) *weights = gf__ret(*weights);
    return gf__ret(y);
}

static gf_tensor *mha_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (n != 1 && n != 3) {
        gf__error(GF_ERR_INVALID, "MultiheadAttention.forward: takes 1 input (self-attention) "
                  "or 3 (query, key, value), got %d; gf_nn_mha_forward takes masks", n);
        return NULL;
    }
    return mha_impl(m, in[0], in[n == 3 ? 1 : 0], in[n == 3 ? 2 : 0], NULL, NULL, false, NULL);
}
static const gf_module_class mha_class = {"MultiheadAttention", mha_forward, NULL};

gf_module *gf_nn_mha(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                     bool batch_first, gf_dtype dtype, gf_device *dev) {
    const char *op = "gf_nn_mha";
    if (embed_dim < 1 || num_heads < 1 || embed_dim % num_heads || !(dropout >= 0 && dropout < 1)) {
        gf__error(GF_ERR_INVALID, "%s: embed_dim %lld must be >= 1 and divisible by num_heads "
                  "%lld, dropout %g in [0, 1)", op, (long long)embed_dim, (long long)num_heads,
                  dropout);
        return NULL;
    }
    if (!gf_dtype_is_float(dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: dtype %s; parameters are floating-point", op,
                  gf_dtype_name(dtype));
        return NULL;
    }
    int saved = gf__scope_suspend();
    mha_mod *a = calloc(1, sizeof *a);
    gf_status st = a ? gf_module_init(&a->base, &mha_class)
                     : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    if (st != GF_OK) {
        free(a);
        gf__scope_resume(saved);
        return NULL;
    }
    a->embed_dim = embed_dim, a->num_heads = num_heads, a->dropout = dropout;
    a->batch_first = batch_first;
    /* in_proj_weight xavier_uniform, in_proj_bias zeros, out_proj.bias zeros */
    gf_tensor *w = gf_empty((const int64_t[]){3 * embed_dim, embed_dim}, 2, dtype, dev);
    st = w ? gf_init_xavier_uniform_(w, 1.0) : gf__status();
    if (st == GF_OK) st = gf_module_register_parameter(&a->base, "in_proj_weight", w);
    gf_tensor_release(w);
    gf_tensor *b = st == GF_OK && bias ? gf_zeros((const int64_t[]){3 * embed_dim}, 1, dtype, dev)
                                       : NULL;
    if (st == GF_OK && bias && !b) st = gf__status();
    if (st == GF_OK) st = gf_module_register_parameter(&a->base, "in_proj_bias", b);
    gf_tensor_release(b);
    gf_module *proj = st == GF_OK ? gf_nn_linear(embed_dim, embed_dim, bias, dtype, dev) : NULL;
    if (st == GF_OK && !proj) st = gf__status();
    if (st == GF_OK && bias) {
        gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
        st = gf_zero_(gf_module_get_parameter(proj, "bias"));
        gf_grad_mode_set(prev);
    }
    if (st == GF_OK) st = gf_module_register_module(&a->base, "out_proj", proj);
    gf_module_release(proj);
    gf__scope_resume(saved);
    if (st != GF_OK) {
        gf_module_release(&a->base);
        return NULL;
    }
    return &a->base;
}

/* ------------------------------------------------------------ TransformerEncoderLayer */
typedef struct tel_mod {
    gf_module base;
    bool gelu, norm_first;
} tel_mod;

/* One layer: PyTorch's _sa_block and _ff_block, post- or pre-norm. */
static gf_tensor *tel_impl(gf_module *m, const gf_tensor *src, const gf_tensor *mask,
                           const gf_tensor *kpm) {
    tel_mod *t = (tel_mod *)m;
    gf_tensor *tmp[24] = {0};
    int nt = 0;
#define T(x) (tmp[nt++] = (x))
#define CALL(name, x) ((x) ? T(gf_module_forward(gf__mod_child(m, name), (gf_tensor *const[]){(x)}, 1)) : NULL)
    gf_tensor *x = (gf_tensor *)src, *out = NULL;
    for (int block = 0; block < 2 && x; block++) {
        const char *norm = block == 0 ? "norm1" : "norm2";
        gf_tensor *in = t->norm_first ? CALL(norm, x) : x;
        gf_tensor *y = NULL;
        if (in && block == 0) {
            gf_tensor *sa = T(mha_impl(gf__mod_child(m, "self_attn"), in, in, in, kpm, mask, false, NULL));
            y = CALL("dropout1", sa);
        } else if (in) {
            gf_tensor *h = CALL("linear1", in);
            gf_tensor *act = h ? T(t->gelu ? gf_gelu(h, false) : gf_relu(h)) : NULL;
            gf_tensor *dr = CALL("dropout", act);
            gf_tensor *l2 = CALL("linear2", dr);
            y = CALL("dropout2", l2);
        }
        gf_tensor *sum = y ? T(gf_add(x, y)) : NULL;
        x = t->norm_first ? sum : CALL(norm, sum);
    }
    if (x) out = gf_tensor_retain(x);
#undef CALL
#undef T
    drop_all(tmp, nt);
    return out;
}

static gf_tensor *tel_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (n != 1) {
        gf__error(GF_ERR_INVALID, "TransformerEncoderLayer.forward: takes 1 input, got %d; "
                  "gf_nn_transformer_forward takes masks", n);
        return NULL;
    }
    return tel_impl(m, in[0], NULL, NULL);
}
static const gf_module_class tel_class = {"TransformerEncoderLayer", tel_forward, NULL};

static gf_status add_child(gf_module *m, const char *name, gf_module *c) {
    gf_status st = c ? gf_module_register_module(m, name, c) : gf__status();
    gf_module_release(c);
    return st;
}

gf_module *gf_nn_transformer_encoder_layer(int64_t d_model, int64_t nhead,
                                           int64_t dim_feedforward, double dropout, bool gelu,
                                           double layer_norm_eps, bool batch_first,
                                           bool norm_first, gf_dtype dtype, gf_device *dev) {
    const char *op = "gf_nn_transformer_encoder_layer";
    if (dim_feedforward < 1) {
        gf__error(GF_ERR_INVALID, "%s: dim_feedforward %lld must be >= 1", op,
                  (long long)dim_feedforward);
        return NULL;
    }
    int saved = gf__scope_suspend();
    tel_mod *t = calloc(1, sizeof *t);
    gf_status st = t ? gf_module_init(&t->base, &tel_class)
                     : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    if (st != GF_OK) {
        free(t);
        gf__scope_resume(saved);
        return NULL;
    }
    t->gelu = gelu, t->norm_first = norm_first;
    gf_module *m = &t->base;
    const int64_t shape[1] = {d_model};
    st = add_child(m, "self_attn", gf_nn_mha(d_model, nhead, dropout, true, batch_first, dtype, dev));
    if (st == GF_OK) st = add_child(m, "linear1", gf_nn_linear(d_model, dim_feedforward, true, dtype, dev));
    if (st == GF_OK) st = add_child(m, "dropout", gf_nn_dropout(dropout));
    if (st == GF_OK) st = add_child(m, "linear2", gf_nn_linear(dim_feedforward, d_model, true, dtype, dev));
    if (st == GF_OK)
        st = add_child(m, "norm1", gf_nn_layer_norm(shape, 1, layer_norm_eps, true, dtype, dev));
    if (st == GF_OK)
        st = add_child(m, "norm2", gf_nn_layer_norm(shape, 1, layer_norm_eps, true, dtype, dev));
    if (st == GF_OK) st = add_child(m, "dropout1", gf_nn_dropout(dropout));
    if (st == GF_OK) st = add_child(m, "dropout2", gf_nn_dropout(dropout));
    gf__scope_resume(saved);
    if (st != GF_OK) {
        gf_module_release(m);
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------ TransformerEncoder */
static gf_tensor *enc_impl(gf_module *m, const gf_tensor *src, const gf_tensor *mask,
                           const gf_tensor *kpm) {
    gf_module *layers = gf__mod_child(m, "layers"), *norm = gf__mod_child(m, "norm");
    gf_tensor *x = gf_tensor_retain((gf_tensor *)src);
    int n = layers ? gf_module_child_count(layers) : 0;
    for (int i = 0; x && i < n; i++) {
        gf_tensor *y = tel_impl(gf_module_child_at(layers, i), x, mask, kpm);
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

static gf_tensor *enc_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (n != 1) {
        gf__error(GF_ERR_INVALID, "TransformerEncoder.forward: takes 1 input, got %d", n);
        return NULL;
    }
    return enc_impl(m, in[0], NULL, NULL);
}
static const gf_module_class enc_class = {"TransformerEncoder", enc_forward, NULL};

gf_module *gf_nn_transformer_encoder(gf_module *const *layers, int num_layers, gf_module *norm) {
    const char *op = "gf_nn_transformer_encoder";
    if (num_layers < 0 || (num_layers > 0 && !layers)) {
        gf__error(GF_ERR_INVALID, "%s: %d layers%s", op, num_layers,
                  num_layers > 0 ? " but the array is NULL" : "");
        return NULL;
    }
    for (int i = 0; i < num_layers; i++)
        if (!layers[i] || strcmp(gf_module_type_name(layers[i]), "TransformerEncoderLayer")) {
            gf__error(GF_ERR_INVALID, "%s: layer %d is not a TransformerEncoderLayer", op, i);
            return NULL;
        }
    gf_module *m = calloc(1, sizeof *m);
    gf_status st = m ? gf_module_init(m, &enc_class)
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

gf_tensor *gf_nn_transformer_forward(gf_module *m, const gf_tensor *src, const gf_tensor *mask,
                                     const gf_tensor *src_key_padding_mask) {
    const char *op = "gf_nn_transformer_forward";
    bool layer = m && m->state && !strcmp(gf_module_type_name(m), "TransformerEncoderLayer");
    bool enc = m && m->state && !strcmp(gf_module_type_name(m), "TransformerEncoder");
    if (!layer && !enc) {
        gf__error(GF_ERR_INVALID, "%s: m is not a TransformerEncoderLayer or TransformerEncoder",
                  op);
        return NULL;
    }
    if (!src) {
        gf__null_arg(op, "src");
        return NULL;
    }
    int saved = gf__scope_suspend();
    gf_tensor *y = layer ? tel_impl(m, src, mask, src_key_padding_mask)
                         : enc_impl(m, src, mask, src_key_padding_mask);
    gf__scope_resume(saved);
    return gf__ret(y);
}
