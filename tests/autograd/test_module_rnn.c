/* SPDX-License-Identifier: BSD-3-Clause */
/* test_module_rnn.c — nn.LSTM (2 layers, bidirectional, batch first), nn.GRU
 * (2 layers, an initial state) and nn.RNN (relu, no bias) from graft's
 * modules load torch's state dicts by name and give torch's outputs, final
 * states and gradients (tools/expected/gen_rnn.py); their errors. */
#include <graft.h>
#include <math.h>
#include <string.h>

#include "autograd/rnn_expected.h"
#include "autograd/test_rules_util.h"
#include "check.h"

static void load(gf_module *m, const rn_entry *e, int n) {
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

/* Runs m on x (h0 may be NULL), compares with torch, backward of
 * y.sum() + h_n.sum(), compares the first parameter's gradient. */
static void check(const char *what, gf_module *m, gf_tensor *x, gf_tensor *h0, const double *y_want,
                  int64_t ny, const double *h_want, const double *c_want, int64_t nh,
                  const char *first, const double *g_want, int64_t ng) {
    gf_tensor *hn = NULL, *cn = NULL;
    gf_tensor *y = gf_nn_rnn_forward(m, x, h0, NULL, &hn, c_want ? &cn : NULL);
    CHECK_MSG(y != NULL, "%s: %s", what, gf_last_error());
    ag_near(what, y, y_want, ny, 1e-10);
    ag_near("h_n", hn, h_want, nh, 1e-10);
    if (c_want) ag_near("c_n", cn, c_want, nh, 1e-10);
    gf_tensor *s1 = y ? gf_sum(y, NULL, 0, false) : NULL, *s2 = hn ? gf_sum(hn, NULL, 0, false) : NULL;
    gf_tensor *s = s1 && s2 ? gf_add(s1, s2) : NULL;
    CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
    gf_tensor *g = gf_tensor_grad(gf_module_get_parameter(m, first));
    ag_near("gradient", g, g_want, ng, 1e-10);
    gf_tensor *items[] = {y, hn, cn, s1, s2, s, g};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
}

static void test_against_torch(void) {
    gf_tensor *xb = gf_from_data(rn_xb, (const int64_t[]){RN_N, RN_T, RN_I}, 3, GF_F64, NULL);
    gf_tensor *xt = gf_transpose(xb, 0, 1), *xs = gf_contiguous(xt);
    gf_tensor *h0 = gf_from_data(rn_h0, (const int64_t[]){2, RN_N, RN_H}, 3, GF_F64, NULL);
    gf_module *lstm = gf_nn_rnn(GF_RNN_LSTM, RN_I, RN_H, 2, true, true, 0.0, true, GF_F64, NULL);
    load(lstm, rn_lstm_state, RN_LSTM_N);
    check("LSTM", lstm, xb, NULL, rn_lstm_y, RN_N * RN_T * 2 * RN_H, rn_lstm_hn, rn_lstm_cn,
          4 * RN_N * RN_H, "weight_ih_l0", rn_lstm_grad0, 4 * RN_H * RN_I);
    gf_module *gru = gf_nn_rnn(GF_RNN_GRU, RN_I, RN_H, 2, true, false, 0.0, false, GF_F64, NULL);
    load(gru, rn_gru_state, RN_GRU_N);
    check("GRU", gru, xs, h0, rn_gru_y, RN_T * RN_N * RN_H, rn_gru_hn, NULL, 2 * RN_N * RN_H,
          "weight_ih_l0", rn_gru_grad0, 3 * RN_H * RN_I);
    gf_module *rnn = gf_nn_rnn(GF_RNN_RELU, RN_I, RN_H, 1, false, false, 0.0, false, GF_F64, NULL);
    load(rnn, rn_rnn_state, RN_RNN_N);
    check("RNN", rnn, xs, NULL, rn_rnn_y, RN_T * RN_N * RN_H, rn_rnn_hn, NULL, RN_N * RN_H,
          "weight_ih_l0", rn_rnn_grad0, RN_H * RN_I);
    /* gf_module_forward: the output sequence alone */
    gf_tensor *y = gf_module_forward(gru, &xs, 1);
    CHECK(y && gf_tensor_rank(y) == 3 && gf_tensor_size(y, 2) == RN_H);
    gf_tensor_release(y);
    /* errors */
    CHECK(gf_nn_rnn_forward(gru, xs, xb, NULL, NULL, NULL) == NULL);
    CHECK_CONTAINS(gf_last_error(), "h0 must be [2, 2, 4]");
    CHECK(gf_nn_rnn_forward(gru, xs, NULL, h0, NULL, NULL) == NULL);
    CHECK_CONTAINS(gf_last_error(), "c0 is for an LSTM");
    gf_tensor *flat = gf_zeros((const int64_t[]){RN_T, RN_I}, 2, GF_F64, NULL);
    CHECK(gf_nn_rnn_forward(rnn, flat, NULL, NULL, NULL, NULL) == NULL);
    CHECK_CONTAINS(gf_last_error(), "must be 3-D");
    CHECK(gf_nn_rnn(GF_RNN_LSTM, 0, 4, 1, true, false, 0.0, false, GF_F64, NULL) == NULL);
    CHECK(gf_nn_rnn((gf_rnn_mode)9, 3, 4, 1, true, false, 0.0, false, GF_F64, NULL) == NULL);
    gf_module *lin = gf_nn_linear(2, 2, true, GF_F64, NULL);
    CHECK(gf_nn_rnn_forward(lin, xs, NULL, NULL, NULL, NULL) == NULL);
    gf_tensor *items[] = {xb, xt, xs, h0, flat};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(lin);
    gf_module_release(lstm);
    gf_module_release(gru);
    gf_module_release(rnn);
}

static void test_cells(void) {
    gf_tensor *x = gf_from_data(rn_x1, (const int64_t[]){RN_N, RN_I}, 2, GF_F64, NULL);
    gf_tensor *h = gf_from_data(rn_h1, (const int64_t[]){RN_N, RN_H}, 2, GF_F64, NULL);
    gf_tensor *c = gf_from_data(rn_c1, (const int64_t[]){RN_N, RN_H}, 2, GF_F64, NULL);
    gf_module *lc = gf_nn_rnn_cell(GF_RNN_LSTM, RN_I, RN_H, true, GF_F64, NULL);
    load(lc, rn_lstmcell_state, 4);
    gf_tensor *c2 = NULL, *h2 = gf_nn_rnn_cell_forward(lc, x, h, c, &c2);
    ag_near("LSTMCell h", h2, rn_lstmcell_h, RN_N * RN_H, 1e-10);
    ag_near("LSTMCell c", c2, rn_lstmcell_c, RN_N * RN_H, 1e-10);
    gf_module *gc = gf_nn_rnn_cell(GF_RNN_GRU, RN_I, RN_H, true, GF_F64, NULL);
    load(gc, rn_grucell_state, 4);
    gf_tensor *in[2] = {x, h};
    gf_tensor *g2 = gf_module_forward(gc, in, 2);
    ag_near("GRUCell h", g2, rn_grucell_h, RN_N * RN_H, 1e-10);
    CHECK(gf_nn_rnn_cell_forward(gc, x, h, c, NULL) == NULL);
    CHECK_CONTAINS(gf_last_error(), "c is for an LSTMCell");
    CHECK(gf_nn_rnn_cell_forward(lc, h, NULL, NULL, NULL) == NULL);
    CHECK(gf_nn_rnn_cell(GF_RNN_GRU, 3, 0, true, GF_F64, NULL) == NULL);
    gf_tensor *items[] = {x, h, c, h2, c2, g2};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(lc);
    gf_module_release(gc);
}

/* The layers' gradients and second derivatives with respect to the input
 * and h0 by finite differences (f64, small): the sequence projected in one
 * GEMM and cut into steps by one backward node, bidirectional, two layers,
 * both for an LSTM and a GRU; forward mode's tangents too. */
static gf_tensor *rnn_fn(gf_tensor *const *in, int n, void *user) {
    (void)n;
    gf_tensor *hn = NULL;
    gf_scope_begin();
    gf_tensor *y = gf_nn_rnn_forward(user, in[0], in[1], NULL, &hn, NULL);
    gf_tensor *r = y && hn ? gf_add(gf_sum(gf_tanh(y), NULL, 0, false), gf_sum(gf_mul(hn, hn),
                                                                                 NULL, 0, false))
                           : NULL;
    r = gf_scope_keep(r);
    gf_scope_end();
    return r;
}

static void test_gradchecks(void) {
    const gf_rnn_mode modes[2] = {GF_RNN_LSTM, GF_RNN_GRU};
    for (int k = 0; k < 2; k++) {
        gf_module *m = gf_nn_rnn(modes[k], 3, 2, 2, true, false, 0.0, true, GF_F64, NULL);
        CHECK_MSG(m != NULL, "%s", gf_last_error());
        if (!m) continue;
        gf_tensor *x = gf_rand_normal((const int64_t[]){4, 2, 3}, 3, 0, 1, GF_F64, NULL);
        gf_tensor *h0 = gf_rand_normal((const int64_t[]){4, 2, 2}, 3, 0, 1, GF_F64, NULL);
        CHECK(gf_tensor_set_requires_grad(x, true) == GF_OK &&
              gf_tensor_set_requires_grad(h0, true) == GF_OK);
        gf_tensor *in[2] = {x, h0};
        gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
        o.check_forward_ad = true; /* tangents through the layers too */
        CHECK_MSG(gf_gradcheck(rnn_fn, in, 2, m, &o) == GF_OK, "%s gradcheck: %s",
                  k ? "GRU" : "LSTM", gf_last_error());
        CHECK_MSG(gf_gradgradcheck(rnn_fn, in, 2, m, &o) == GF_OK, "%s gradgradcheck: %s",
                  k ? "GRU" : "LSTM", gf_last_error());
        gf_tensor_release(x);
        gf_tensor_release(h0);
        gf_module_release(m);
    }
}

int main(void) {
    int missing = ag_device_check();
    if (missing) return missing;
    RUN(test_against_torch);
    RUN(test_cells);
    RUN(test_gradchecks);
    return CHECK_REPORT();
}
