/* SPDX-License-Identifier: BSD-3-Clause */
/* rnn.c — nn.RNN, nn.LSTM and nn.GRU as modules (graft/module.h): PyTorch's
 * parameter names (weight_ih_l0, weight_hh_l0_reverse, ...), gate order,
 * initialisation, multi-layer, bidirectional, batch_first and dropout
 * between layers; and the cells (LSTMCell, ...).
 *
 * A layer projects its whole input sequence at once (one GEMM, x W_ih^T)
 * and runs the steps in gf__rnn_seq (rnn_seq.c): one autograd node for the
 * whole sequence of a direction, with per step one GEMM and the cell's
 * pointwise update on whole tensors. The composed form below (each step the
 * hidden state's matmul and the gates' elementwise ops, each recording its
 * own node) is what that node falls back to for forward-mode tangents,
 * autocast and double backward, and what the cells run.
 *
 * The composed form cuts the projection into steps with gf__unbind_copies:
 * copies with one backward node that stacks their gradients. The steps are
 * never views of the projection: a view's backward writes its gradient into
 * zeros of its base's size, so T selects would cost T full-size zero fills
 * and additions in backward (O(T^2) memory traffic). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "module_internal.h"
#include "rnn_internal.h"

typedef struct rnn_mod {
    gf_module base;
    gf_rnn_mode mode;
    int64_t input_size, hidden_size;
    int num_layers;
    bool bias, batch_first, bidirectional;
    double dropout;
} rnn_mod;

static const char *mode_name(gf_rnn_mode m) {
    return m == GF_RNN_LSTM ? "LSTM" : m == GF_RNN_GRU ? "GRU" : "RNN";
}
static int gates(gf_rnn_mode m) { return m == GF_RNN_LSTM ? 4 : m == GF_RNN_GRU ? 3 : 1; }

static gf_tensor *param(const gf_module *m, const char *kind, int layer, bool reverse) {
    char name[48];
    snprintf(name, sizeof name, "%s_l%d%s", kind, layer, reverse ? "_reverse" : "");
    gf__mod_entry *e = gf__mod_find(m, name, strlen(name));
    return e ? e->t : NULL;
}

/* Columns [k H, (k + 1) H) of g [N, G H], copied out: a column block of g
 * is strided, and elementwise kernels on strided [N, H] blocks ran ~9x
 * slower than on contiguous ones (tanh 109 vs 12 us for [32, 256] on
 * cpu_onednn). */
static gf_tensor *gate(gf_tensor *g, int k, int64_t h) {
    return gf_contiguous(gf_narrow(g, 1, k * h, h));
}

/* One time step from xt = x W_ih^T + b_ih (+ b_hh but for the GRU) [N, G H]:
 * the new h (and *c for an LSTM), or NULL. Inside a scope: nothing is
 * released here. */
static gf_tensor *cell_step(gf_rnn_mode mode, gf_tensor *xt, gf_tensor *h, gf_tensor **c,
                            const gf_tensor *w_hh, const gf_tensor *b_hh, int64_t hs) {
    /* b_hh is in xt already, except for the GRU (see direction) */
    gf_tensor *ht = gf_linear(h, w_hh, mode == GF_RNN_GRU ? b_hh : NULL);
    if (!xt || !ht) return NULL;
    switch (mode) {
    case GF_RNN_LSTM: {
        gf_tensor *g = gf_add(xt, ht);
        gf_tensor *i = gf_sigmoid(gate(g, 0, hs)), *f = gf_sigmoid(gate(g, 1, hs));
        gf_tensor *gg = gf_tanh(gate(g, 2, hs)), *o = gf_sigmoid(gate(g, 3, hs));
        *c = gf_add(gf_mul(f, *c), gf_mul(i, gg));
        return *c ? gf_mul(o, gf_tanh(*c)) : NULL;
    }
    case GF_RNN_GRU: {
        gf_tensor *rg = gf_sigmoid(gf_add(gate(xt, 0, hs), gate(ht, 0, hs)));
        gf_tensor *z = gf_sigmoid(gf_add(gate(xt, 1, hs), gate(ht, 1, hs)));
        gf_tensor *n = gf_tanh(gf_add(gate(xt, 2, hs), gf_mul(rg, gate(ht, 2, hs))));
        return n ? gf_add(n, gf_mul(z, gf_sub(h, n))) : NULL; /* (1 - z) n + z h */
    }
    default: {
        gf_tensor *pre = gf_add(xt, ht);
        return mode == GF_RNN_RELU ? gf_relu(pre) : gf_tanh(pre);
    }
    }
}

gf_status gf__rnn_seq_composed(gf_rnn_mode mode, const gf_tensor *proj, const gf_tensor *b_x,
                               const gf_tensor *w_hh, const gf_tensor *b_hh, const gf_tensor *h0,
                               const gf_tensor *c0, bool reverse, gf_tensor **y, gf_tensor **h_n,
                               gf_tensor **c_n) {
    int64_t t_len = gf_tensor_size(proj, 0), hs = gf_tensor_size(w_hh, 1);
    *y = *h_n = NULL;
    if (c_n) *c_n = NULL;
    gf_tensor **xt = calloc((size_t)(2 * t_len), sizeof *xt);
    if (!xt)
        return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory for %lld steps",
                         mode_name(mode), (long long)t_len);
    gf_tensor **outs = xt + t_len;
    gf_tensor *xb = b_x ? gf_add(proj, b_x) : (gf_tensor *)proj;
    if (!xb || gf__unbind_copies(xb, xt) != GF_OK) {
        free(xt);
        return gf__status();
    }
    for (int64_t t = 0; t < t_len; t++) gf__ret(xt[t]); /* the scope owns them */
    gf_tensor *h = (gf_tensor *)h0, *c = (gf_tensor *)c0;
    for (int64_t s = 0; s < t_len && h; s++) {
        int64_t t = reverse ? t_len - 1 - s : s;
        h = cell_step(mode, xt[t], h, &c, w_hh, b_hh, hs);
        outs[t] = h;
    }
    *y = h ? gf_stack(outs, (int)t_len, 0) : NULL;
    free(xt);
    if (!*y) return gf__status();
    *h_n = h;
    if (c_n) *c_n = c;
    return GF_OK;
}

/* One direction of one layer over the sequence xseq [T, N, In]: the outputs
 * y [T, N, H] and the final h (and c). The input side of every step is one
 * GEMM over the whole sequence (x W_ih^T + b_ih); the steps run in
 * gf__rnn_seq (rnn_seq.c). Runs inside the caller's scope. */
static bool direction(const rnn_mod *r, const gf_tensor *xseq, int64_t t_len, int layer, bool rev,
                      gf_tensor *h, gf_tensor *c, gf_tensor **y, gf_tensor **h_out,
                      gf_tensor **c_out) {
    const gf_module *m = &r->base;
    if (!t_len) {
        *h_out = h;
        if (c_out) *c_out = c;
        return true;
    }
    gf_tensor *w_ih = param(m, "weight_ih", layer, rev), *b_ih = param(m, "bias_ih", layer, rev);
    gf_tensor *w_hh = param(m, "weight_hh", layer, rev), *b_hh = param(m, "bias_hh", layer, rev);
    /* The projection as one 2-D GEMM [T N, In] @ W_ih^T (a 3-D input
     * would run as T batched GEMMs of N rows, ~30% slower on the CPU). */
    int64_t n = gf_tensor_size(xseq, 1), in = gf_tensor_size(xseq, 2), g = gf_tensor_size(w_ih, 0);
    gf_tensor *proj = gf_reshape(gf_linear(gf_reshape(xseq, (const int64_t[]){t_len * n, in}, 2),
                                           w_ih, NULL),
                                 (const int64_t[]){t_len, n, g}, 3);
    /* The biases join each step's slab of the projection (one pass over
     * [N, G H] per step instead of two over the whole sequence, and one
     * reduction backward). Where b_hh is only added to the gates (not the
     * GRU, whose n gate multiplies W_hn h + b_hn by r), it is added to
     * b_ih once. */
    bool gru = r->mode == GF_RNN_GRU, lstm = r->mode == GF_RNN_LSTM;
    gf_tensor *bx = b_ih && b_hh && !gru ? gf_add(b_ih, b_hh) : b_ih;
    return proj && (!b_ih || bx) &&
           gf__rnn_seq(r->mode, proj, bx, w_hh, gru ? b_hh : NULL, h, lstm ? c : NULL, rev, y,
                       h_out, lstm ? c_out : NULL) == GF_OK;
}

/* The whole stack inside a scope of its own; results kept out of it. */
static gf_tensor *rnn_impl(gf_module *mod, const gf_tensor *input, const gf_tensor *h0,
                           const gf_tensor *c0, gf_tensor **h_n, gf_tensor **c_n) {
    rnn_mod *r = (rnn_mod *)mod;
    const char *name = mode_name(r->mode);
    int nd = r->bidirectional ? 2 : 1;
    if (gf_tensor_rank(input) != 3 || gf_tensor_size(input, 2) != r->input_size) {
        gf__error(GF_ERR_SHAPE, "%s: the input must be 3-D with input_size %lld last (%s); "
                  "unbatched input is not taken here", name, (long long)r->input_size,
                  r->batch_first ? "[N, T, input_size]" : "[T, N, input_size]");
        return NULL;
    }
    int64_t n = gf_tensor_size(input, r->batch_first ? 0 : 1);
    const int64_t hsz[3] = {r->num_layers * nd, n, r->hidden_size};
    const gf_tensor *states[2] = {h0, c0};
    for (int k = 0; k < 2; k++) {
        const gf_tensor *s = states[k];
        if (s && (gf_tensor_rank(s) != 3 || gf_tensor_size(s, 0) != hsz[0] ||
                  gf_tensor_size(s, 1) != hsz[1] || gf_tensor_size(s, 2) != hsz[2])) {
            gf__error(GF_ERR_SHAPE, "%s: %s must be [%lld, %lld, %lld] (num_layers * "
                      "directions, N, hidden_size)", name, k ? "c0" : "h0", (long long)hsz[0],
                      (long long)hsz[1], (long long)hsz[2]);
            return NULL;
        }
    }
    if (c0 && r->mode != GF_RNN_LSTM) {
        gf__error(GF_ERR_INVALID, "%s: c0 is for an LSTM", name);
        return NULL;
    }
    int64_t t_len = gf_tensor_size(input, r->batch_first ? 1 : 0);
    if (t_len > INT_MAX / 3) {
        gf__error(GF_ERR_OVERFLOW, "%s: a sequence of %lld steps; at most %d are taken", name,
                  (long long)t_len, INT_MAX / 3);
        return NULL;
    }
    gf_scope_begin();
    gf_tensor *x = r->batch_first ? gf_transpose(input, 0, 1) : (gf_tensor *)input;
    gf_tensor *zeros = gf_zeros(hsz, 3, gf_tensor_dtype(input), gf_tensor_device(input));
    gf_tensor *hs0 = h0 ? (gf_tensor *)h0 : zeros, *cs0 = c0 ? (gf_tensor *)c0 : zeros;
    gf_tensor *hn[64], *cn[64], *ys[2] = {NULL, NULL};
    int k = 0;
    bool ok = x && zeros;
    gf_tensor *seq = x; /* the layer's input [T, N, In] */
    for (int l = 0; ok && l < r->num_layers; l++) {
        for (int d = 0; ok && d < nd; d++, k++) {
            gf_tensor *h = gf_select(hs0, 0, k), *c = gf_select(cs0, 0, k);
            ok = direction(r, seq, t_len, l, d == 1, h, c, &ys[d], &hn[k],
                           r->mode == GF_RNN_LSTM ? &cn[k] : NULL);
        }
        if (!ok) break;
        if (!t_len) {
            seq = gf_zeros((const int64_t[]){0, n, r->hidden_size * nd}, 3,
                           gf_tensor_dtype(input), gf_tensor_device(input));
        } else {
            seq = nd == 2 ? gf_cat(ys, 2, 2) : ys[0];
        }
        /* dropout over the whole layer output at once (PyTorch's draws) */
        if (seq && t_len && l + 1 < r->num_layers && r->dropout > 0)
            seq = gf_dropout(seq, r->dropout, gf_module_is_training(mod));
        ok = seq != NULL;
    }
    x = ok ? seq : NULL;
    ok = ok && x;
    gf_tensor *y = NULL;
    if (ok) {
        /* the scope's reference taken over (a retain is not recorded) */
        y = gf_scope_keep(r->batch_first ? gf_transpose(x, 0, 1) : x);
        if (h_n) *h_n = gf_scope_keep(gf_stack(hn, k, 0));
        if (c_n && r->mode == GF_RNN_LSTM) *c_n = gf_scope_keep(gf_stack(cn, k, 0));
    }
    gf_scope_end();
    return y;
}

gf_tensor *gf_nn_rnn_forward(gf_module *m, const gf_tensor *input, const gf_tensor *h0,
                             const gf_tensor *c0, gf_tensor **h_n, gf_tensor **c_n) {
    const char *op = "gf_nn_rnn_forward";
    if (h_n) *h_n = NULL;
    if (c_n) *c_n = NULL;
    const char *type = gf_module_type_name(m);
    if (!m || !m->state || (strcmp(type, "RNN") && strcmp(type, "LSTM") && strcmp(type, "GRU"))) {
        gf__error(GF_ERR_INVALID, "%s: m is not an RNN, LSTM or GRU (made by gf_nn_rnn)", op);
        return NULL;
    }
    if (!input) {
        gf__null_arg(op, "input");
        return NULL;
    }
    int saved = gf__scope_suspend();
    gf_tensor *y = rnn_impl(m, input, h0, c0, h_n, c_n);
    gf__scope_resume(saved);
    if (!y) {
        if (h_n) gf_tensor_release(*h_n), *h_n = NULL;
        if (c_n) gf_tensor_release(*c_n), *c_n = NULL;
    }
    if (h_n) *h_n = gf__ret(*h_n);
    if (c_n) *c_n = gf__ret(*c_n);
    return gf__ret(y);
}

static gf_tensor *rnn_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (n != 1) {
        gf__error(GF_ERR_INVALID, "%s.forward: takes 1 input (the sequence), got %d; "
                  "gf_nn_rnn_forward takes initial states and returns the final ones",
                  gf_module_type_name(m), n);
        return NULL;
    }
    return rnn_impl(m, in[0], NULL, NULL, NULL, NULL);
}
static const gf_module_class rnn_class = {"RNN", rnn_forward, NULL};
static const gf_module_class lstm_class = {"LSTM", rnn_forward, NULL};
static const gf_module_class gru_class = {"GRU", rnn_forward, NULL};

gf_module *gf_nn_rnn(gf_rnn_mode mode, int64_t input_size, int64_t hidden_size, int num_layers,
                     bool bias, bool batch_first, double dropout, bool bidirectional,
                     gf_dtype dtype, gf_device *dev) {
    const char *op = "gf_nn_rnn";
    if ((int)mode < GF_RNN_TANH || mode > GF_RNN_GRU || input_size < 1 || hidden_size < 1 ||
        num_layers < 1 || num_layers > 16 || !(dropout >= 0 && dropout <= 1)) {
        gf__error(GF_ERR_INVALID, "%s: mode %d, input_size %lld, hidden_size %lld (>= 1), "
                  "num_layers %d (1 to 16), dropout %g (in [0, 1])", op, (int)mode,
                  (long long)input_size, (long long)hidden_size, num_layers, dropout);
        return NULL;
    }
    if (!gf_dtype_is_float(dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: dtype %s; parameters are floating-point", op,
                  gf_dtype_name(dtype));
        return NULL;
    }
    int saved = gf__scope_suspend();
    rnn_mod *r = calloc(1, sizeof *r);
    const gf_module_class *cls = mode == GF_RNN_LSTM ? &lstm_class
                               : mode == GF_RNN_GRU  ? &gru_class : &rnn_class;
    gf_status st = r ? gf_module_init(&r->base, cls)
                     : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    if (st != GF_OK) {
        free(r);
        gf__scope_resume(saved);
        return NULL;
    }
    *r = (rnn_mod){r->base, mode, input_size, hidden_size, num_layers, bias, batch_first,
                   bidirectional, dropout};
    /* every weight and bias U(-1/sqrt(H), 1/sqrt(H)), in PyTorch's order */
    double k = 1.0 / sqrt((double)hidden_size);
    int64_t g = gates(mode) * hidden_size;
    for (int l = 0; st == GF_OK && l < num_layers; l++) {
        int64_t in = l == 0 ? input_size : hidden_size * (bidirectional ? 2 : 1);
        for (int d = 0; st == GF_OK && d < (bidirectional ? 2 : 1); d++) {
            const char *kinds[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
            for (int q = 0; st == GF_OK && q < (bias ? 4 : 2); q++) {
                const int64_t sizes[2] = {g, q == 0 ? in : hidden_size};
                gf_tensor *t = gf_rand_uniform(sizes, q < 2 ? 2 : 1, -k, k, dtype, dev);
                char name[48];
                snprintf(name, sizeof name, "%s_l%d%s", kinds[q], l, d ? "_reverse" : "");
                st = t ? gf_module_register_parameter(&r->base, name, t) : gf__status();
                gf_tensor_release(t);
            }
        }
    }
    gf__scope_resume(saved);
    if (st != GF_OK) {
        gf_module_release(&r->base);
        return NULL;
    }
    return &r->base;
}

/* ------------------------------------------------------------ cells */
typedef struct cell_mod {
    gf_module base;
    gf_rnn_mode mode;
    int64_t input_size, hidden_size;
} cell_mod;

static gf_tensor *cell_impl(gf_module *mod, const gf_tensor *x, const gf_tensor *h,
                            const gf_tensor *c, gf_tensor **c_out) {
    cell_mod *k = (cell_mod *)mod;
    const char *name = gf_module_type_name(mod);
    int64_t n = gf_tensor_rank(x) == 2 ? gf_tensor_size(x, 0) : -1, hs = k->hidden_size;
    if (n < 0 || gf_tensor_size(x, 1) != k->input_size) {
        gf__error(GF_ERR_SHAPE, "%s: the input must be [N, %lld]", name, (long long)k->input_size);
        return NULL;
    }
    const gf_tensor *states[2] = {h, c};
    for (int i = 0; i < 2; i++)
        if (states[i] && (gf_tensor_rank(states[i]) != 2 || gf_tensor_size(states[i], 0) != n ||
                          gf_tensor_size(states[i], 1) != hs)) {
            gf__error(GF_ERR_SHAPE, "%s: %s must be [%lld, %lld]", name, i ? "c" : "h",
                      (long long)n, (long long)hs);
            return NULL;
        }
    if (c && k->mode != GF_RNN_LSTM) {
        gf__error(GF_ERR_INVALID, "%s: c is for an LSTMCell", name);
        return NULL;
    }
    gf_scope_begin();
    gf_tensor *zeros = gf_zeros((const int64_t[]){n, hs}, 2, gf_tensor_dtype(x), gf_tensor_device(x));
    gf_tensor *hh = h ? (gf_tensor *)h : zeros, *cc = c ? (gf_tensor *)c : zeros;
    gf_tensor *xt = gf_linear(x, gf__mod_own(mod, "weight_ih"), gf__mod_own(mod, "bias_ih"));
    gf_tensor *b_hh = gf__mod_own(mod, "bias_hh");
    if (xt && b_hh && k->mode != GF_RNN_GRU) xt = gf_add(xt, b_hh); /* as cell_step expects */
    gf_tensor *y = zeros ? cell_step(k->mode, xt, hh, &cc, gf__mod_own(mod, "weight_hh"), b_hh, hs)
                         : NULL;
    if (y) {
        y = gf_scope_keep(y);
        if (c_out && k->mode == GF_RNN_LSTM) *c_out = gf_scope_keep(cc);
    }
    gf_scope_end();
    return y;
}

gf_tensor *gf_nn_rnn_cell_forward(gf_module *m, const gf_tensor *x, const gf_tensor *h,
                                  const gf_tensor *c, gf_tensor **c_out) {
    const char *op = "gf_nn_rnn_cell_forward";
    if (c_out) *c_out = NULL;
    const char *type = gf_module_type_name(m);
    if (!m || !m->state ||
        (strcmp(type, "RNNCell") && strcmp(type, "LSTMCell") && strcmp(type, "GRUCell"))) {
        gf__error(GF_ERR_INVALID, "%s: m is not an RNNCell, LSTMCell or GRUCell", op);
        return NULL;
    }
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    int saved = gf__scope_suspend();
    gf_tensor *y = cell_impl(m, x, h, c, c_out);
    gf__scope_resume(saved);
    if (c_out) *c_out = gf__ret(*c_out);
    return gf__ret(y);
}

static gf_tensor *cell_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (n < 1 || n > 3) {
        gf__error(GF_ERR_INVALID, "%s.forward: takes x (and h, and c), got %d inputs; an "
                  "LSTMCell's new c comes from gf_nn_rnn_cell_forward", gf_module_type_name(m), n);
        return NULL;
    }
    return cell_impl(m, in[0], n > 1 ? in[1] : NULL, n > 2 ? in[2] : NULL, NULL);
}
static const gf_module_class rnn_cell_class = {"RNNCell", cell_forward, NULL};
static const gf_module_class lstm_cell_class = {"LSTMCell", cell_forward, NULL};
static const gf_module_class gru_cell_class = {"GRUCell", cell_forward, NULL};

gf_module *gf_nn_rnn_cell(gf_rnn_mode mode, int64_t input_size, int64_t hidden_size, bool bias,
                          gf_dtype dtype, gf_device *dev) {
    const char *op = "gf_nn_rnn_cell";
    if ((int)mode < GF_RNN_TANH || mode > GF_RNN_GRU || input_size < 1 || hidden_size < 1) {
        gf__error(GF_ERR_INVALID, "%s: mode %d, input_size %lld and hidden_size %lld (>= 1)", op,
                  (int)mode, (long long)input_size, (long long)hidden_size);
        return NULL;
    }
    if (!gf_dtype_is_float(dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: dtype %s; parameters are floating-point", op,
                  gf_dtype_name(dtype));
        return NULL;
    }
    int saved = gf__scope_suspend();
    cell_mod *k = calloc(1, sizeof *k);
    const gf_module_class *cls = mode == GF_RNN_LSTM ? &lstm_cell_class
                               : mode == GF_RNN_GRU  ? &gru_cell_class : &rnn_cell_class;
    gf_status st = k ? gf_module_init(&k->base, cls)
                     : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    if (st != GF_OK) {
        free(k);
        gf__scope_resume(saved);
        return NULL;
    }
    k->mode = mode, k->input_size = input_size, k->hidden_size = hidden_size;
    double b = 1.0 / sqrt((double)hidden_size);
    int64_t g = gates(mode) * hidden_size;
    const char *kinds[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int q = 0; st == GF_OK && q < (bias ? 4 : 2); q++) {
        const int64_t sizes[2] = {g, q == 0 ? input_size : hidden_size};
        gf_tensor *t = gf_rand_uniform(sizes, q < 2 ? 2 : 1, -b, b, dtype, dev);
        st = t ? gf_module_register_parameter(&k->base, kinds[q], t) : gf__status();
        gf_tensor_release(t);
    }
    gf__scope_resume(saved);
    if (st != GF_OK) {
        gf_module_release(&k->base);
        return NULL;
    }
    return &k->base;
}
