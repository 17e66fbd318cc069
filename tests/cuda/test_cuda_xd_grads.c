/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_xd_grads.c — the fused gradient and optimiser ops of cuda:0
 * against the reference plugin: SOFTMAX_BACKWARD and LOG_SOFTMAX_BACKWARD
 * (along each dim, lines of one thread, a warp and a block), BATCH_NORM_
 * BACKWARD and LAYER_NORM_BACKWARD (with and without weight, transposed
 * inputs), LSTM_CELL and its backward through a two-layer LSTM, reached
 * through autograd, and ADAM_UPDATE through Adam and AdamW
 * steps (the reference's arithmetic is the device's: the same bits for f32
 * and f64). cuda.load pins that the plugin answers these ops itself;
 * without them the core composes them, which would pass here too, slower.
 * Skipped (exit 77) without a CUDA device; GRAFT_TEST_XD_DEVICE runs it on
 * another device to try the suite itself. */
#include "cu_xd.h"

/* sum(y * r) for a fixed random r of y's shape: its gradient is r. */
static gf_tensor *weighted_sum(gf_tensor *y, gf_tensor *r) {
    gf_tensor *p = y && r ? gf_mul(y, r) : NULL;
    gf_tensor *s = p ? gf_sum(p, NULL, 0, false) : NULL;
    gf_tensor_release(p);
    return s;
}

/* Runs f on both devices from the pair's leaves, backward from a weighted
 * sum, and compares the outputs and every leaf's gradient. */
typedef gf_tensor *(*graph_fn)(gf_tensor *const *leaves, int n);

static void check_grads(const char *what, graph_fn f, xd_pair *leaves, int n, gf_dtype dt) {
    gf_tensor *ld[4], *lr[4];
    for (int i = 0; i < n; i++) {
        ld[i] = leaves[i].d;
        lr[i] = leaves[i].r;
        gf_tensor_set_requires_grad(ld[i], true);
        gf_tensor_set_requires_grad(lr[i], true);
    }
    gf_tensor *yd = f(ld, n), *yr = f(lr, n);
    CHECK_MSG(yd && yr, "%s: %s", what, gf_last_error());
    if (!yd || !yr) {
        gf_tensor_release(yd);
        gf_tensor_release(yr);
        return;
    }
    xd_pair r = xd_pair_rand(dt, gf_tensor_rank(yd), gf_tensor_sizes(yd), XV_PLAIN, XL_CONTIG);
    gf_tensor *sd = weighted_sum(yd, r.d), *sr = weighted_sum(yr, r.r);
    CHECK(gf_backward(sd, NULL, NULL) == GF_OK);
    CHECK(gf_backward(sr, NULL, NULL) == GF_OK);
    char w[160];
    snprintf(w, sizeof w, "%s: output", what);
    xd_check_tol(w, yd, yr, xd_sum_tol(dt, 64));
    for (int i = 0; i < n; i++) {
        snprintf(w, sizeof w, "%s: gradient of leaf %d", what, i);
        xd_check_pair_tol(w, gf_tensor_grad(ld[i]), gf_tensor_grad(lr[i]), xd_sum_tol(dt, 4096));
    }
    gf_tensor_release(sd);
    gf_tensor_release(sr);
    gf_tensor_release(yd);
    gf_tensor_release(yr);
    xd_pair_release(r);
}

static int g_dim;
static gf_tensor *softmax_fn(gf_tensor *const *l, int n) {
    (void)n;
    return gf_softmax(l[0], g_dim);
}
static gf_tensor *log_softmax_fn(gf_tensor *const *l, int n) {
    (void)n;
    return gf_log_softmax(l[0], g_dim);
}

static void test_softmax_backward(void) {
    const gf_dtype dts[2] = {GF_F32, GF_F64};
    const int64_t lens[3] = {7, 300, 3000};
    for (int t = 0; t < 2; t++)
        for (int li = 0; li < 3; li++)
            for (int d = 0; d < 2; d++) {
                xd_seed((uint64_t)(t * 10 + li * 2 + d));
                xd_pair x = xd_pair_rand(dts[t], 2, SZ(5, lens[li]), XV_PLAIN,
                                         d ? XL_TRANSPOSED : XL_CONTIG);
                g_dim = d;
                char what[96];
                snprintf(what, sizeof what, "softmax %s [5, %lld] dim %d", xd_dtn(dts[t]),
                         (long long)lens[li], d);
                check_grads(what, softmax_fn, &x, 1, dts[t]);
                snprintf(what, sizeof what, "log_softmax %s [5, %lld] dim %d", xd_dtn(dts[t]),
                         (long long)lens[li], d);
                check_grads(what, log_softmax_fn, &x, 1, dts[t]);
                xd_pair_release(x);
            }
}

static gf_tensor *layer_norm_fn(gf_tensor *const *l, int n) {
    return gf_layer_norm(l[0], 1, n > 1 ? l[1] : NULL, n > 2 ? l[2] : NULL, 1e-5, NULL, NULL);
}
static gf_tensor *layer_norm2_fn(gf_tensor *const *l, int n) {
    return gf_layer_norm(l[0], 2, n > 1 ? l[1] : NULL, n > 2 ? l[2] : NULL, 1e-5, NULL, NULL);
}
static gf_tensor *batch_norm_fn(gf_tensor *const *l, int n) {
    return gf_batch_norm(l[0], NULL, NULL, n > 1 ? l[1] : NULL, n > 2 ? l[2] : NULL, true, 0.1,
                         1e-5, NULL, NULL);
}

static void test_norm_backward(void) {
    const gf_dtype dts[2] = {GF_F32, GF_F64};
    for (int t = 0; t < 2; t++) {
        gf_dtype dt = dts[t];
        for (int affine = 0; affine < 2; affine++) {
            char what[96];
            /* layer norm over the last dim (lines of 33, rows of 40) and the
             * last two; the input transposed */
            xd_seed((uint64_t)(100 + t * 2 + affine));
            xd_pair ln[3] = {xd_pair_rand(dt, 2, SZ(40, 33), XV_PLAIN, XL_TRANSPOSED),
                             xd_pair_rand(dt, 1, SZ(33), XV_POSITIVE, XL_CONTIG),
                             xd_pair_rand(dt, 1, SZ(33), XV_PLAIN, XL_CONTIG)};
            snprintf(what, sizeof what, "layer_norm %s%s", xd_dtn(dt), affine ? " affine" : "");
            check_grads(what, layer_norm_fn, ln, affine ? 3 : 1, dt);
            for (int i = 0; i < 3; i++) xd_pair_release(ln[i]);
            xd_pair ln2[3] = {xd_pair_rand(dt, 3, SZ(6, 9, 70), XV_PLAIN, XL_STEP),
                              xd_pair_rand(dt, 2, SZ(9, 70), XV_POSITIVE, XL_CONTIG),
                              xd_pair_rand(dt, 2, SZ(9, 70), XV_PLAIN, XL_CONTIG)};
            snprintf(what, sizeof what, "layer_norm 2 dims %s%s", xd_dtn(dt),
                     affine ? " affine" : "");
            check_grads(what, layer_norm2_fn, ln2, affine ? 3 : 1, dt);
            for (int i = 0; i < 3; i++) xd_pair_release(ln2[i]);
            /* batch norm in training: channels of 8x5x5 and of 64x7x7 */
            const int64_t shapes[2][4] = {{8, 3, 5, 5}, {64, 4, 7, 7}};
            for (int s = 0; s < 2; s++) {
                xd_pair bn[3] = {xd_pair_rand(dt, 4, shapes[s], XV_PLAIN, s ? XL_STEP : XL_CONTIG),
                                 xd_pair_rand(dt, 1, &shapes[s][1], XV_POSITIVE, XL_CONTIG),
                                 xd_pair_rand(dt, 1, &shapes[s][1], XV_PLAIN, XL_CONTIG)};
                snprintf(what, sizeof what, "batch_norm %s [%lld, %lld, %lld, %lld]%s",
                         xd_dtn(dt), (long long)shapes[s][0], (long long)shapes[s][1],
                         (long long)shapes[s][2], (long long)shapes[s][3],
                         affine ? " affine" : "");
                check_grads(what, batch_norm_fn, bn, affine ? 3 : 1, dt);
                for (int i = 0; i < 3; i++) xd_pair_release(bn[i]);
            }
        }
    }
}

/* Three steps of Adam (with L2 decay) and AdamW on the same parameters and
 * gradients: ADAM_UPDATE computes the composed ops' arithmetic, so both
 * devices give the same bits. */
static void test_adam(void) {
    const gf_dtype dts[2] = {GF_F32, GF_F64};
    for (int t = 0; t < 2; t++)
        for (int w = 0; w < 2; w++) {
            gf_dtype dt = dts[t];
            xd_seed((uint64_t)(200 + t * 2 + w));
            xd_pair p = xd_pair_rand(dt, 2, SZ(33, 65), XV_PLAIN, XL_CONTIG);
            gf_tensor_set_requires_grad(p.d, true);
            gf_tensor_set_requires_grad(p.r, true);
            gf_adam_opts o = GF_ADAM_OPTS_DEFAULT;
            if (w) {
                gf_adam_opts aw = GF_ADAMW_OPTS_DEFAULT;
                o = aw;
            } else {
                o.weight_decay = 0.01;
            }
            o.lr = 0.01;
            gf_optimizer *od = gf_adam_create(&p.d, 1, &o), *orf = gf_adam_create(&p.r, 1, &o);
            CHECK_MSG(od && orf, "adam: %s", gf_last_error());
            for (int step = 0; step < 3 && od && orf; step++) {
                xd_pair r = xd_pair_rand(dt, 2, SZ(33, 65), XV_PLAIN, XL_CONTIG);
                gf_tensor *sd = weighted_sum(p.d, r.d), *sr = weighted_sum(p.r, r.r);
                CHECK(gf_backward(sd, NULL, NULL) == GF_OK && gf_backward(sr, NULL, NULL) == GF_OK);
                CHECK(gf_optimizer_step(od) == GF_OK && gf_optimizer_step(orf) == GF_OK);
                CHECK(gf_optimizer_zero_grad(od) == GF_OK && gf_optimizer_zero_grad(orf) == GF_OK);
                gf_tensor_release(sd);
                gf_tensor_release(sr);
                xd_pair_release(r);
                char what[64];
                snprintf(what, sizeof what, "%s %s step %d", w ? "adamw" : "adam", xd_dtn(dt),
                         step + 1);
                xd_check_tol(what, p.d, p.r, (xd_tol){0, 0});
            }
            gf_optimizer_destroy(od);
            gf_optimizer_destroy(orf);
            xd_pair_release(p);
        }
}

/* A two-layer LSTM over 9 steps (LSTM_CELL and its backward each step),
 * made with one seed on both devices (RANDOM's numbers are the ABI's, so
 * the weights are equal): the output and every gradient. */
static void test_lstm(void) {
    const gf_dtype dts[2] = {GF_F32, GF_F64};
    for (int t = 0; t < 2; t++) {
        gf_dtype dt = dts[t];
        gf_manual_seed(7);
        gf_module *md = gf_nn_rnn(GF_RNN_LSTM, 12, 20, 2, true, true, 0.0, false, dt, xd_dev);
        gf_manual_seed(7);
        gf_module *mr = gf_nn_rnn(GF_RNN_LSTM, 12, 20, 2, true, true, 0.0, false, dt, xd_ref);
        CHECK_MSG(md && mr, "lstm: %s", gf_last_error());
        if (!md || !mr) {
            gf_module_release(md);
            gf_module_release(mr);
            continue;
        }
        gf_tensor *pd[16], *pr[16]; /* borrowed */
        int np = gf_module_parameters(md, pd, 16), npr = gf_module_parameters(mr, pr, 16);
        CHECK(np == npr && np == 8);
        for (int i = 0; i < np && i < npr; i++) xd_check_tol("lstm weights", pd[i], pr[i], (xd_tol){0, 0});
        xd_seed((uint64_t)(300 + t));
        xd_pair x = xd_pair_rand(dt, 3, SZ(3, 9, 12), XV_PLAIN, XL_CONTIG);
        gf_tensor_set_requires_grad(x.d, true);
        gf_tensor_set_requires_grad(x.r, true);
        gf_tensor *yd = gf_nn_rnn_forward(md, x.d, NULL, NULL, NULL, NULL);
        gf_tensor *yr = gf_nn_rnn_forward(mr, x.r, NULL, NULL, NULL, NULL);
        CHECK_MSG(yd && yr, "lstm forward: %s", gf_last_error());
        if (yd && yr) {
            xd_pair r = xd_pair_rand(dt, 3, SZ(3, 9, 20), XV_PLAIN, XL_CONTIG);
            gf_tensor *sd = weighted_sum(yd, r.d), *sr = weighted_sum(yr, r.r);
            CHECK(gf_backward(sd, NULL, NULL) == GF_OK && gf_backward(sr, NULL, NULL) == GF_OK);
            char what[64];
            snprintf(what, sizeof what, "lstm %s output", xd_dtn(dt));
            xd_check_tol(what, yd, yr, xd_sum_tol(dt, 64));
            snprintf(what, sizeof what, "lstm %s input gradient", xd_dtn(dt));
            xd_check_pair_tol(what, gf_tensor_grad(x.d), gf_tensor_grad(x.r), xd_sum_tol(dt, 256));
            for (int i = 0; i < np && i < npr; i++) {
                snprintf(what, sizeof what, "lstm %s parameter %d gradient", xd_dtn(dt), i);
                xd_check_pair_tol(what, gf_tensor_grad(pd[i]), gf_tensor_grad(pr[i]),
                                  xd_sum_tol(dt, 256));
            }
            gf_tensor_release(sd);
            gf_tensor_release(sr);
            xd_pair_release(r);
        }
        gf_tensor_release(yd);
        gf_tensor_release(yr);
        xd_pair_release(x);
        gf_module_release(md);
        gf_module_release(mr);
    }
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    RUN(test_softmax_backward);
    RUN(test_norm_backward);
    RUN(test_adam);
    RUN(test_lstm);
    return xd_finish();
}
