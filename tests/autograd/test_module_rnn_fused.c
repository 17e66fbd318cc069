/* SPDX-License-Identifier: BSD-3-Clause */
/* test_module_rnn_fused.c — the recurrent layers' fused sequence node
 * (core/src/nn/rnn_seq.c) against PyTorch's equations written out here
 * step by step with graft's ops: outputs, final states and the gradients
 * of every parameter, the input and the initial states, for the LSTM, the
 * GRU and both RNNs, one and two directions, with and without biases; the
 * node is the one recorded; no-grad runs give the same values; a second
 * backward with retain_graph doubles the gradients; the node's errors
 * (saved values freed, a saved weight written in place); the LSTM's
 * backward with the device's LSTM_CELL_BACKWARD equals the composed step
 * bit for bit. */
#define _POSIX_C_SOURCE 200809L
#include <graft.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/test_rules_util.h"
#include "check.h"

enum { T = 5, N = 3, I = 4, H = 3 };

static gf_tensor *param(gf_module *m, const char *kind, bool rev) {
    char name[48];
    snprintf(name, sizeof name, "%s_l0%s", kind, rev ? "_reverse" : "");
    return gf_module_get_parameter(m, name);
}

/* One direction written out from PyTorch's documented equations: the
 * outputs into ys[t] (recorded in the caller's scope), the final h and c. */
static void reference_dir(gf_rnn_mode mode, gf_module *m, bool rev, gf_tensor *x, gf_tensor *h,
                          gf_tensor *c, gf_tensor **ys, gf_tensor **h_n, gf_tensor **c_n) {
    gf_tensor *w_ih = param(m, "weight_ih", rev), *w_hh = param(m, "weight_hh", rev);
    gf_tensor *b_ih = param(m, "bias_ih", rev), *b_hh = param(m, "bias_hh", rev);
    for (int s = 0; s < T; s++) {
        int t = rev ? T - 1 - s : s;
        gf_tensor *gi = gf_linear(gf_select(x, 0, t), w_ih, b_ih), *gh = gf_linear(h, w_hh, b_hh);
        if (mode == GF_RNN_LSTM) {
            gf_tensor *g = gf_add(gi, gh);
            gf_tensor *ig = gf_sigmoid(gf_narrow(g, 1, 0, H)), *fg = gf_sigmoid(gf_narrow(g, 1, H, H));
            gf_tensor *gg = gf_tanh(gf_narrow(g, 1, 2 * H, H));
            gf_tensor *og = gf_sigmoid(gf_narrow(g, 1, 3 * H, H));
            c = gf_add(gf_mul(fg, c), gf_mul(ig, gg));
            h = gf_mul(og, gf_tanh(c));
        } else if (mode == GF_RNN_GRU) {
            gf_tensor *r = gf_sigmoid(gf_add(gf_narrow(gi, 1, 0, H), gf_narrow(gh, 1, 0, H)));
            gf_tensor *z = gf_sigmoid(gf_add(gf_narrow(gi, 1, H, H), gf_narrow(gh, 1, H, H)));
            gf_tensor *n = gf_tanh(gf_add(gf_narrow(gi, 1, 2 * H, H),
                                          gf_mul(r, gf_narrow(gh, 1, 2 * H, H))));
            h = gf_add(gf_mul(gf_rsub_scalar(z, 1.0), n), gf_mul(z, h));
        } else {
            gf_tensor *pre = gf_add(gi, gh);
            h = mode == GF_RNN_RELU ? gf_relu(pre) : gf_tanh(pre);
        }
        ys[t] = h;
    }
    *h_n = h;
    *c_n = c;
}

/* y, h_n, c_n of a one-layer module (the reference or the module itself),
 * inside the caller's scope. */
static void run(bool reference, gf_rnn_mode mode, gf_module *m, bool bidir, gf_tensor *x,
                gf_tensor *h0, gf_tensor *c0, gf_tensor **y, gf_tensor **hn, gf_tensor **cn) {
    if (!reference) {
        *y = gf_nn_rnn_forward(m, x, h0, mode == GF_RNN_LSTM ? c0 : NULL, hn,
                               mode == GF_RNN_LSTM ? cn : NULL);
        return;
    }
    gf_tensor *ys[2][T], *hs[2], *cs[2];
    int nd = bidir ? 2 : 1;
    for (int d = 0; d < nd; d++)
        reference_dir(mode, m, d == 1, x, gf_select(h0, 0, d), gf_select(c0, 0, d), ys[d], &hs[d],
                      &cs[d]);
    gf_tensor *y0 = gf_stack(ys[0], T, 0);
    *y = bidir ? gf_cat((gf_tensor *[]){y0, gf_stack(ys[1], T, 0)}, 2, 2) : y0;
    *hn = gf_stack(hs, nd, 0);
    *cn = mode == GF_RNN_LSTM ? gf_stack(cs, nd, 0) : NULL;
}

/* A scalar of y, h_n and c_n with fixed weights, so that every output's
 * gradient is a different, non-trivial tensor. */
static gf_tensor *loss_of(gf_tensor *y, gf_tensor *hn, gf_tensor *cn) {
    gf_tensor *l = gf_sum(gf_mul(y, gf_sin(y)), NULL, 0, false);
    l = gf_add(l, gf_sum(gf_mul(hn, gf_mul_scalar(hn, 0.7)), NULL, 0, false));
    return cn ? gf_add(l, gf_sum(gf_mul_scalar(gf_exp(cn), -0.3), NULL, 0, false)) : l;
}

static void compare(gf_rnn_mode mode, bool bias, bool bidir) {
    static const char *names[4] = {"RNN_TANH", "RNN_RELU", "LSTM", "GRU"};
    char what[64];
    snprintf(what, sizeof what, "%s bias %d bidirectional %d", names[mode], bias, bidir);
    int nd = bidir ? 2 : 1;
    gf_module *m = gf_nn_rnn(mode, I, H, 1, bias, false, 0.0, bidir, GF_F64, NULL);
    CHECK_MSG(m != NULL, "%s: %s", what, gf_last_error());
    if (!m) return;
    gf_tensor *x = gf_rand_normal(SZ(T, N, I), 3, 0, 1, GF_F64, NULL);
    gf_tensor *h0 = gf_rand_normal(SZ(nd, N, H), 3, 0, 1, GF_F64, NULL);
    gf_tensor *c0 = gf_rand_normal(SZ(nd, N, H), 3, 0, 1, GF_F64, NULL);
    gf_tensor *ps[8];
    int np = gf_module_parameters(m, ps, 8);
    gf_tensor *wrt[11] = {x, h0, c0};
    int nw = mode == GF_RNN_LSTM ? 3 : 2; /* c0 for the LSTM only */
    for (int i = 0; i < nw; i++) CHECK(gf_tensor_set_requires_grad(wrt[i], true) == GF_OK);
    for (int i = 0; i < np && nw < 11; i++) wrt[nw++] = ps[i];
    double got[2][11][128];
    int64_t cnt[11];
    double outs[2][3][128];
    for (int k = 0; k < 2; k++) {
        gf_scope_begin();
        gf_tensor *y = NULL, *hn = NULL, *cn = NULL;
        run(k == 0, mode, m, bidir, x, h0, c0, &y, &hn, &cn);
        CHECK_MSG(y && hn, "%s: %s", what, gf_last_error());
        if (k == 1 && !bidir) /* the fused node, not a dozen ops per step */
            CHECK_MSG(y && strstr(gf_tensor_grad_fn_name(y), "SequenceBackward"), "%s: %s", what,
                      y ? gf_tensor_grad_fn_name(y) : "-");
        gf_tensor *l = y && hn ? loss_of(y, hn, cn) : NULL;
        gf_tensor *res[11] = {NULL};
        gf_grad_opts o = {0};
        CHECK_MSG(l && gf_grad(&l, 1, NULL, wrt, nw, res, &o) == GF_OK, "%s: %s", what,
                  gf_last_error());
        for (int i = 0; i < nw; i++) cnt[i] = ag_read(res[i], got[k][i], 128);
        gf_tensor *yo[3] = {y, hn, cn};
        for (int j = 0; j < 3; j++)
            if (yo[j]) ag_read(yo[j], outs[k][j], 128);
        gf_scope_end();
    }
    for (int j = 0; j < 3; j++) {
        int64_t e = j == 0 ? T * N * nd * H : nd * N * H;
        if (j == 2 && mode != GF_RNN_LSTM) break;
        for (int64_t q = 0; q < e; q++)
            CHECK_MSG(fabs(outs[0][j][q] - outs[1][j][q]) < 1e-12, "%s: output %d [%lld]: %g, "
                      "reference %g", what, j, (long long)q, outs[1][j][q], outs[0][j][q]);
    }
    for (int i = 0; i < nw; i++) {
        CHECK_MSG(cnt[i] > 0, "%s: gradient %d missing", what, i);
        for (int64_t q = 0; q < cnt[i]; q++)
            CHECK_MSG(fabs(got[0][i][q] - got[1][i][q]) < 1e-11, "%s: gradient %d [%lld]: %.15g, "
                      "reference %.15g", what, i, (long long)q, got[1][i][q], got[0][i][q]);
    }
    /* without gradients: the same values, nothing recorded */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *hn = NULL, *cn = NULL;
    gf_tensor *y = gf_nn_rnn_forward(m, x, h0, mode == GF_RNN_LSTM ? c0 : NULL, &hn,
                                     mode == GF_RNN_LSTM ? &cn : NULL);
    double v[128];
    CHECK(y && !gf_tensor_requires_grad(y) && ag_read(y, v, 128) == T * N * nd * H);
    for (int64_t q = 0; y && q < T * N * nd * H; q++) CHECK(fabs(v[q] - outs[1][0][q]) < 1e-12);
    gf_grad_mode_set(prev);
    gf_tensor *items[] = {y, hn, cn, x, h0, c0};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(m);
}

static void test_against_equations(void) {
    for (int mode = GF_RNN_TANH; mode <= GF_RNN_GRU; mode++)
        for (int bidir = 0; bidir < 2; bidir++) compare((gf_rnn_mode)mode, bidir == 0, bidir);
    compare(GF_RNN_LSTM, false, true);
    compare(GF_RNN_GRU, true, true);
}

/* The outputs and gradients of one LSTM layer (its outputs' gradients
 * through loss_of, so every step has a dy) with GRAFT_LSTM_CELL set to cell
 * (NULL: unset), read into g (cap doubles at most); the number read. Also
 * how many of lstm_cell and lstm_cell_backward launched (0 to 2). */
static int64_t lstm_grads(gf_dtype dt, bool bidir, int64_t t_len, int64_t n, int64_t i_sz,
                          int64_t h_sz, const char *cell, double *g, int64_t cap, int *ran) {
    if (cell) setenv("GRAFT_LSTM_CELL", cell, 1);
    else unsetenv("GRAFT_LSTM_CELL");
    int nd = bidir ? 2 : 1;
    gf_manual_seed(7);
    gf_module *m = gf_nn_rnn(GF_RNN_LSTM, i_sz, h_sz, 1, true, false, 0.0, bidir, dt, NULL);
    gf_tensor *x = gf_rand_normal(SZ(t_len, n, i_sz), 3, 0, 1, dt, NULL);
    gf_tensor *h0 = gf_rand_normal(SZ(nd, n, h_sz), 3, 0, 1, dt, NULL);
    gf_tensor *c0 = gf_rand_normal(SZ(nd, n, h_sz), 3, 0, 1, dt, NULL);
    CHECK_MSG(m && x && h0 && c0, "%s", gf_last_error());
    if (!m || !x || !h0 || !c0) return 0;
    gf_tensor *wrt[11] = {x, h0, c0};
    int nw = 3;
    for (int i = 0; i < nw; i++) CHECK(gf_tensor_set_requires_grad(wrt[i], true) == GF_OK);
    nw += gf_module_parameters(m, wrt + 3, 8);
    gf_scope_begin();
    CHECK(gf_profiler_start(NULL) == GF_OK);
    gf_tensor *hn = NULL, *cn = NULL, *y = gf_nn_rnn_forward(m, x, h0, c0, &hn, &cn);
    gf_tensor *l = y && hn && cn ? loss_of(y, hn, cn) : NULL, *res[11] = {NULL};
    gf_grad_opts o = {0};
    CHECK_MSG(l && gf_grad(&l, 1, NULL, wrt, nw, res, &o) == GF_OK, "%s", gf_last_error());
    CHECK(gf_profiler_stop() == GF_OK);
    size_t len = gf_profiler_summary(NULL, 0) + 1;
    char *sum = malloc(len);
    CHECK(sum != NULL);
    if (sum) gf_profiler_summary(sum, len);
    bool fw = false, bw = false;
    for (const char *s = sum; s && (s = strstr(s, "lstm_cell")) != NULL; s++) {
        if (!strncmp(s, "lstm_cell_backward", 18)) bw = true;
        else fw = true;
    }
    *ran = (int)fw + (int)bw;
    free(sum);
    int64_t at = 0;
    gf_tensor *ys[3] = {y, hn, cn};
    for (int i = 0; i < 3; i++)
        if (ys[i] && at < cap) at += ag_read(ys[i], g + at, cap - at);
    for (int i = 0; i < nw; i++) {
        CHECK_MSG(res[i] != NULL, "gradient %d missing", i);
        if (res[i] && at < cap) at += ag_read(res[i], g + at, cap - at);
    }
    gf_scope_end();
    gf_tensor *items[] = {x, h0, c0};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(m);
    unsetenv("GRAFT_LSTM_CELL");
    return at;
}

/* The device's LSTM_CELL and LSTM_CELL_BACKWARD give the composed steps'
 * bits (outputs and gradients): f64 and f32, one and two directions, a
 * hidden size of 3 (a vector loop's tail only) and of 37 (full vectors and
 * a tail, and [4, 148] gates: oneDNN's sigmoid on cpu_onednn, the loops
 * below its threshold for H 3). The CPU plugins must run both. */
static void test_cell_kernel(void) {
    const char *plugin = gf_device_plugin(gf_device_default());
    bool has = plugin && (!strcmp(plugin, "reference") || !strcmp(plugin, "cpu_onednn"));
    const gf_dtype dts[2] = {GF_F64, GF_F32};
    static const int64_t hs[2] = {3, 37};
    enum { CAP = 40000 };
    double *a = malloc(CAP * sizeof(double)), *b = malloc(CAP * sizeof(double));
    CHECK(a && b);
    for (int k = 0; a && b && k < 2; k++)
        for (int bidir = 0; bidir < 2; bidir++)
            for (int s = 0; s < 2; s++) {
                int ran_k = 0, ran_c = 2;
                int64_t na = lstm_grads(dts[k], bidir, 6, 4, 5, hs[s], NULL, a, CAP, &ran_k);
                int64_t nb = lstm_grads(dts[k], bidir, 6, 4, 5, hs[s], "composed", b, CAP, &ran_c);
                CHECK_MSG(na > 0 && na == nb, "%lld and %lld gradient values", (long long)na,
                          (long long)nb);
                CHECK_MSG(ran_c == 0, "GRAFT_LSTM_CELL=composed, yet %d kernel(s) ran", ran_c);
                CHECK_MSG(ran_k == 2 || !has, "the %s plugin ran %d of lstm_cell and "
                          "lstm_cell_backward", plugin, ran_k);
                int64_t diff = 0;
                for (int64_t q = 0; q < na && q < nb; q++) diff += memcmp(&a[q], &b[q], 8) != 0;
                CHECK_MSG(diff == 0, "dtype %d, bidirectional %d, H %lld: %lld of %lld values "
                          "(outputs, gradients) differ between the kernels and the composed steps", (int)dts[k],
                          bidir, (long long)hs[s], (long long)diff, (long long)na);
            }
    free(a), free(b);
}

/* Two layers, batch first, the whole training-step pattern: backward
 * twice with retain_graph doubles .grad; the saved values are freed after
 * a backward without it; a weight written in place after the forward is
 * refused by name. */
static void test_node_rules(void) {
    gf_module *m = gf_nn_rnn(GF_RNN_LSTM, I, H, 2, true, true, 0.0, false, GF_F64, NULL);
    gf_tensor *x = gf_rand_normal(SZ(N, T, I), 3, 0, 1, GF_F64, NULL);
    gf_tensor *w = gf_module_get_parameter(m, "weight_hh_l1");
    gf_tensor *hn = NULL, *y = gf_nn_rnn_forward(m, x, NULL, NULL, &hn, NULL);
    gf_tensor *sy = y ? gf_sum(y, NULL, 0, false) : NULL;
    gf_tensor *sh = hn ? gf_sum(hn, NULL, 0, false) : NULL;
    gf_tensor *l = sy && sh ? gf_add(sy, sh) : NULL;
    gf_tensor_release(sy), gf_tensor_release(sh);
    gf_backward_opts keep = {.retain_graph = 1};
    CHECK(l && gf_backward(l, NULL, &keep) == GF_OK);
    double g1[64], g2[64];
    gf_tensor *g = gf_tensor_grad(w);
    int64_t n1 = ag_read(g, g1, 64);
    gf_tensor_release(g);
    CHECK(n1 == 4 * H * H && gf_backward(l, NULL, NULL) == GF_OK);
    g = gf_tensor_grad(w);
    CHECK(ag_read(g, g2, 64) == n1);
    gf_tensor_release(g);
    for (int64_t q = 0; q < n1; q++) CHECK(fabs(g2[q] - 2 * g1[q]) < 1e-12);
    CHECK_ERR(gf_backward(l, NULL, NULL), GF_ERR_AUTOGRAD, "LSTMSequenceBackward", "retain_graph");
    gf_tensor_release(l), gf_tensor_release(y), gf_tensor_release(hn);
    /* a saved weight modified in place before backward */
    y = gf_nn_rnn_forward(m, x, NULL, NULL, NULL, NULL);
    l = y ? gf_sum(y, NULL, 0, false) : NULL;
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    CHECK(gf_mul_scalar_(w, 0.5) == GF_OK);
    gf_grad_mode_set(prev);
    CHECK_ERR(l ? gf_backward(l, NULL, NULL) : GF_ERR_INVALID, GF_ERR_AUTOGRAD,
              "LSTMSequenceBackward", "version");
    /* the output may be written in place: its values are not saved */
    gf_tensor_release(l), gf_tensor_release(y);
    y = gf_nn_rnn_forward(m, x, NULL, NULL, NULL, NULL);
    CHECK(y && gf_mul_scalar_(y, 2.0) == GF_OK);
    l = y ? gf_sum(y, NULL, 0, false) : NULL;
    CHECK(l && gf_backward(l, NULL, NULL) == GF_OK);
    gf_tensor_release(l), gf_tensor_release(y), gf_tensor_release(x);
    gf_module_release(m);
}

int main(void) {
    int missing = ag_device_check();
    if (missing) return missing;
    RUN(test_against_equations);
    RUN(test_cell_kernel);
    RUN(test_node_rules);
    return CHECK_REPORT();
}
