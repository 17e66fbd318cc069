/* SPDX-License-Identifier: BSD-3-Clause */
/* test_graft_devices.c — cpu_onednn through libgraft, against the reference
 * device in the same process (GRAFT_PLUGINS=cpu_onednn,reference: cpu:0 is
 * cpu_onednn, cpu:1 the reference): whole training steps of an MLP and of a
 * small CNN (forward, backward, optimiser) on identical data must give the
 * same losses, gradients and parameters; gradients checked numerically in
 * f64 on cpu:0 (a linear layer's weight gradient also in W's layout); bf16 matmul and conv against f32; launches from two threads
 * at once on the thread-safe device. */
#include <pthread.h>
#include <stdint.h>

#include "onednn_xd.h"
#include <graft/profiler.h>

static gf_device *fast, *ref;

/* Identical pseudo-random f32 data on a device. */
static gf_tensor *data(gf_device *dev, int rank, const int64_t *sizes, double scale,
                       unsigned seed) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= sizes[d];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = scale * ((double)(seed >> 8) / 16777216.0 - 0.5);
    }
    gf_tensor *t64 = gf_from_data(v, sizes, rank, GF_F64, dev);
    free(v);
    gf_tensor *t = t64 ? gf_to_dtype(t64, GF_F32) : NULL;
    gf_tensor_release(t64);
    return t;
}

static gf_tensor *param(gf_device *dev, int rank, const int64_t *sizes, double scale,
                        unsigned seed) {
    gf_tensor *t = data(dev, rank, sizes, scale, seed);
    if (t) gf_tensor_set_requires_grad(t, true);
    return t;
}

static void test_devices(void) {
    CHECK(fast && !strcmp(gf_device_plugin(fast), "cpu_onednn"));
    CHECK(ref && !strcmp(gf_device_plugin(ref), "reference"));
    CHECK(gf_device_find("cpu") == fast); /* the default cpu is the fast one */
    gf_device_info info;
    CHECK(gf_device_get_info(fast, &info) == GF_OK);
    CHECK(info.host_addressable && info.thread_safe);
    CHECK(!strcmp(info.type, "cpu"));
    CHECK_CONTAINS(info.driver, "oneDNN");
}

/* ------------------------------------------------------------------ MLP */
typedef struct mlp {
    gf_tensor *w1, *b1, *w2, *b2;
} mlp;

static void mlp_make(mlp *m, gf_device *dev, int64_t in, int64_t hidden, int64_t out) {
    m->w1 = param(dev, 2, (int64_t[]){hidden, in}, 0.2, 11); /* nn.Linear layout [out, in] */
    m->b1 = param(dev, 1, (int64_t[]){hidden}, 0.2, 12);
    m->w2 = param(dev, 2, (int64_t[]){out, hidden}, 0.2, 13);
    m->b2 = param(dev, 1, (int64_t[]){out}, 0.2, 14);
}

static void mlp_free(mlp *m) {
    gf_tensor_release(m->w1), gf_tensor_release(m->b1);
    gf_tensor_release(m->w2), gf_tensor_release(m->b2);
}

/* x @ W^T + b through a transposed view: the strided matmul path. Called
 * inside a scope, which releases the intermediates. */
static gf_tensor *linear(const gf_tensor *x, const gf_tensor *w, const gf_tensor *b) {
    return gf_add(gf_matmul(x, gf_transpose(w, 0, 1)), b);
}

/* One SGD step on a device; returns the loss. */
static gf_tensor *mlp_step(mlp *m, gf_tensor *x, gf_tensor *target, gf_optimizer *opt) {
    gf_scope_begin();
    gf_tensor *h = gf_relu(linear(x, m->w1, m->b1));
    gf_tensor *logits = linear(h, m->w2, m->b2);
    gf_tensor *loss = gf_cross_entropy(logits, target, NULL, GF_REDUCTION_MEAN, -100, 0.0);
    gf_scope_keep(loss);
    gf_scope_end();
    if (!loss) return NULL;
    if (gf_optimizer_zero_grad(opt) != GF_OK || gf_backward(loss, NULL, NULL) != GF_OK ||
        gf_optimizer_step(opt) != GF_OK) {
        gf_tensor_release(loss);
        return NULL;
    }
    return loss;
}

static void test_mlp_training(void) {
    const int64_t batch = 64, in = 100, hidden = 257, out = 10;
    mlp m[2];
    gf_tensor *x[2], *t[2];
    gf_optimizer *opt[2];
    gf_device *devs[2] = {fast, ref};
    int64_t labels[64];
    for (int i = 0; i < 64; i++) labels[i] = (i * 7) % out;
    for (int k = 0; k < 2; k++) {
        mlp_make(&m[k], devs[k], in, hidden, out);
        x[k] = data(devs[k], 2, (int64_t[]){batch, in}, 2.0, 21);
        t[k] = gf_from_data(labels, (int64_t[]){batch}, 1, GF_I64, devs[k]);
        gf_tensor *ps[4] = {m[k].w1, m[k].b1, m[k].w2, m[k].b2};
        opt[k] = gf_sgd_create(ps, 4, &(gf_sgd_opts){.lr = 0.1, .momentum = 0.9});
        CHECK_MSG(opt[k] != NULL, "%s", gf_last_error());
    }
    for (int step = 0; step < 4; step++) {
        gf_tensor *loss[2];
        for (int k = 0; k < 2; k++) loss[k] = mlp_step(&m[k], x[k], t[k], opt[k]);
        CHECK_MSG(loss[0] && loss[1], "step %d: %s", step, gf_last_error());
        xd_check_tol("loss", loss[0], loss[1], (xd_tol){1e-4, 1e-5});
        xd_check_tol("w1 after the step", m[0].w1, m[1].w1, (xd_tol){1e-4, 1e-5});
        xd_check_tol("b2 after the step", m[0].b2, m[1].b2, (xd_tol){1e-4, 1e-5});
        gf_tensor *g0 = gf_tensor_grad(m[0].w2), *g1 = gf_tensor_grad(m[1].w2);
        xd_check_tol("grad w2", g0, g1, (xd_tol){1e-4, 1e-5});
        gf_tensor_release(g0), gf_tensor_release(g1);
        gf_tensor_release(loss[0]), gf_tensor_release(loss[1]);
    }
    for (int k = 0; k < 2; k++) {
        gf_optimizer_destroy(opt[k]);
        mlp_free(&m[k]);
        gf_tensor_release(x[k]), gf_tensor_release(t[k]);
    }
}

/* ------------------------------------------------------------------ CNN */
typedef struct cnn {
    gf_tensor *c1, *cb1, *c2, *cb2, *g, *be, *w, *b;
} cnn;

static gf_tensor *cnn_forward(cnn *n, const gf_tensor *x, gf_tensor *rm, gf_tensor *rv) {
    gf_conv2d_opts pad1 = {.padding = {1, 1}};
    gf_pool2d_opts mp = {.kernel = {2, 2}}, ap = {.kernel = {3, 3}, .stride = {2, 2},
                                                  .padding = {1, 1}};
    gf_tensor *h = gf_conv2d(x, n->c1, n->cb1, &pad1);
    h = gf_batch_norm(h, rm, rv, n->g, n->be, true, 0.1, 1e-5, NULL, NULL);
    h = gf_max_pool2d(gf_relu(h), &mp, NULL);
    h = gf_conv2d(h, n->c2, n->cb2, &(gf_conv2d_opts){.stride = {1, 1}});
    h = gf_avg_pool2d(gf_tanh(h), &ap);
    gf_tensor *flat = gf_flatten(h);
    int64_t rows = gf_tensor_size(x, 0);
    gf_tensor *f2 = gf_reshape(flat, (int64_t[]){rows, gf_tensor_numel(flat) / rows}, 2);
    return linear(f2, n->w, n->b);
}

static void test_cnn_training(void) {
    gf_device *devs[2] = {fast, ref};
    cnn n[2];
    gf_tensor *x[2], *t[2], *rm[2], *rv[2];
    gf_optimizer *opt[2];
    int64_t labels[8];
    for (int i = 0; i < 8; i++) labels[i] = i % 5;
    for (int k = 0; k < 2; k++) {
        gf_device *d = devs[k];
        n[k].c1 = param(d, 4, (int64_t[]){6, 1, 3, 3}, 0.6, 31);
        n[k].cb1 = param(d, 1, (int64_t[]){6}, 0.1, 32);
        n[k].c2 = param(d, 4, (int64_t[]){8, 6, 3, 3}, 0.3, 33);
        n[k].cb2 = param(d, 1, (int64_t[]){8}, 0.1, 34);
        n[k].g = param(d, 1, (int64_t[]){6}, 0.5, 35);
        n[k].be = param(d, 1, (int64_t[]){6}, 0.5, 36);
        n[k].w = param(d, 2, (int64_t[]){5, 8 * 3 * 3}, 0.3, 37);
        n[k].b = param(d, 1, (int64_t[]){5}, 0.1, 38);
        x[k] = data(d, 4, (int64_t[]){8, 1, 14, 14}, 2.0, 41);
        t[k] = gf_from_data(labels, (int64_t[]){8}, 1, GF_I64, d);
        rm[k] = gf_zeros((int64_t[]){6}, 1, GF_F32, d);
        rv[k] = gf_ones((int64_t[]){6}, 1, GF_F32, d);
        gf_tensor *ps[8] = {n[k].c1, n[k].cb1, n[k].c2, n[k].cb2, n[k].g, n[k].be, n[k].w, n[k].b};
        gf_adam_opts ao = GF_ADAM_OPTS_DEFAULT;
        ao.lr = 0.01;
        opt[k] = gf_adam_create(ps, 8, &ao);
    }
    for (int step = 0; step < 3; step++) {
        gf_tensor *loss[2];
        for (int k = 0; k < 2; k++) {
            gf_scope_begin();
            gf_tensor *logits = cnn_forward(&n[k], x[k], rm[k], rv[k]);
            loss[k] = gf_cross_entropy(logits, t[k], NULL, GF_REDUCTION_MEAN, -100, 0.0);
            gf_scope_keep(loss[k]);
            gf_scope_end();
            CHECK_MSG(loss[k] != NULL, "%s", gf_last_error());
            CHECK(gf_optimizer_zero_grad(opt[k]) == GF_OK);
            CHECK_MSG(gf_backward(loss[k], NULL, NULL) == GF_OK, "%s", gf_last_error());
        }
        xd_check_tol("cnn loss", loss[0], loss[1], (xd_tol){1e-4, 1e-5});
        gf_tensor *grads[2][3];
        for (int k = 0; k < 2; k++) {
            grads[k][0] = gf_tensor_grad(n[k].c1);
            grads[k][1] = gf_tensor_grad(n[k].c2);
            grads[k][2] = gf_tensor_grad(n[k].g);
        }
        xd_check_tol("grad conv1", grads[0][0], grads[1][0], (xd_tol){1e-3, 1e-4});
        xd_check_tol("grad conv2", grads[0][1], grads[1][1], (xd_tol){1e-3, 1e-4});
        xd_check_tol("grad bn gamma", grads[0][2], grads[1][2], (xd_tol){1e-3, 1e-4});
        xd_check_tol("running_var", rv[0], rv[1], (xd_tol){1e-4, 1e-5});
        for (int k = 0; k < 2; k++) {
            for (int j = 0; j < 3; j++) gf_tensor_release(grads[k][j]);
            CHECK(gf_optimizer_step(opt[k]) == GF_OK);
            gf_tensor_release(loss[k]);
        }
    }
    for (int k = 0; k < 2; k++) {
        gf_optimizer_destroy(opt[k]);
        gf_tensor *all[12] = {n[k].c1, n[k].cb1, n[k].c2, n[k].cb2, n[k].g, n[k].be,
                              n[k].w,  n[k].b,   x[k],    t[k],     rm[k], rv[k]};
        for (int j = 0; j < 12; j++) gf_tensor_release(all[j]);
    }
}

/* ------------------------------------------------------------------ gradcheck */
static gf_tensor *conv_pool_fn(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_conv2d_opts o = {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}};
    gf_pool2d_opts mp = {.kernel = {2, 2}, .stride = {1, 1}, .ceil_mode = true};
    gf_scope_begin();
    gf_tensor *h = gf_max_pool2d(gf_conv2d(in[0], in[1], in[2], &o), &mp, NULL);
    gf_tensor *y = gf_sum(gf_log_softmax(gf_mul(h, h), 1), NULL, 0, false);
    gf_scope_keep(y);
    gf_scope_end();
    return y;
}

static gf_tensor *norm_fn(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_pool2d_opts ap = {.kernel = {2, 2}, .exclude_pad = false, .padding = {1, 1}};
    gf_scope_begin();
    gf_tensor *h = gf_batch_norm(in[0], NULL, NULL, in[1], NULL, true, 0.1, 1e-5, NULL, NULL);
    h = gf_layer_norm(gf_avg_pool2d(h, &ap), 2, NULL, NULL, 1e-5, NULL, NULL);
    gf_tensor *y = gf_softmax(h, 3);
    gf_scope_keep(y);
    gf_scope_end();
    return y;
}

static void test_gradcheck_f64(void) {
    gf_tensor *x = data(fast, 4, (int64_t[]){2, 3, 5, 6}, 2.0, 51);
    gf_tensor *w = data(fast, 4, (int64_t[]){4, 3, 2, 2}, 1.0, 52);
    gf_tensor *b = data(fast, 1, (int64_t[]){4}, 1.0, 53);
    gf_tensor *x64 = gf_to_dtype(x, GF_F64), *w64 = gf_to_dtype(w, GF_F64),
              *b64 = gf_to_dtype(b, GF_F64);
    gf_tensor *in[3] = {x64, w64, b64};
    for (int i = 0; i < 3; i++) gf_tensor_set_requires_grad(in[i], true);
    CHECK_MSG(gf_gradcheck(conv_pool_fn, in, 3, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor *g = data(fast, 1, (int64_t[]){3}, 1.0, 54), *g64 = gf_to_dtype(g, GF_F64);
    gf_tensor_set_requires_grad(g64, true);
    gf_tensor *in2[2] = {x64, g64};
    CHECK_MSG(gf_gradcheck(norm_fn, in2, 2, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor *all[9] = {x, w, b, x64, w64, b64, g, g64, NULL};
    for (int i = 0; i < 8; i++) gf_tensor_release(all[i]);
}

/* ------------------------------------------------------------ norm backward kernels */
/* The gradients of batch norm in training (layer: of layer norm over the
 * last dim) three ways: the device's BATCH_NORM_BACKWARD /
 * LAYER_NORM_BACKWARD kernel (gf_grad without create_graph), the composed
 * formula (create_graph, which needs a differentiable gradient), and the
 * reference device in f64. x is a transposed view for batch norm (a
 * contiguous one for layer norm, the fast kernel's case) and grad_y either a
 * dense random tensor or an expanded one (the gradient of a sum). */
static gf_status norm_grads(gf_device *d, gf_dtype dt, bool layer, bool create_graph,
                            bool expanded, gf_tensor **gx, gf_tensor **gw, gf_tensor **gb) {
    /* f32 data made outside the scope (data() releases its temporaries). */
    gf_tensor *x0 = data(d, 4, (int64_t[]){3, 4, 7, 5}, 3.0, 61);  /* [N, C, W, H] */
    int64_t ch = layer ? 7 : 4;
    gf_tensor *w0 = data(d, 1, &ch, 2.0, 62), *b0 = data(d, 1, &ch, 1.0, 63);
    gf_tensor *r0 = data(d, 4, (int64_t[]){3, 4, 5, 7}, 1.0, 64);
    gf_scope_begin();
    gf_tensor *xt = gf_transpose(gf_add_scalar(x0, 10.0), 2, 3);
    gf_tensor *x = gf_to_dtype(layer ? gf_contiguous(xt) : xt, dt);
    gf_tensor *w = gf_to_dtype(w0, dt), *b = gf_to_dtype(b0, dt), *r = gf_to_dtype(r0, dt);
    gf_tensor_set_requires_grad(x, true);
    gf_tensor_set_requires_grad(w, true);
    gf_tensor_set_requires_grad(b, true);
    gf_tensor *y = layer ? gf_layer_norm(x, 1, w, b, 1e-5, NULL, NULL)
                         : gf_batch_norm(x, NULL, NULL, w, b, true, 0.1, 1e-5, NULL, NULL);
    gf_tensor *loss = gf_sum(expanded ? y : gf_mul(y, r), NULL, 0, false);
    gf_tensor *in[3] = {x, w, b}, *res[3] = {NULL, NULL, NULL};
    gf_grad_opts o = {.create_graph = create_graph};
    gf_status s = loss ? gf_grad(&loss, 1, NULL, in, 3, res, &o) : gf_last_status();
    /* Compared in f32, as f32 results without history. */
    for (int k = 0; k < 3; k++) res[k] = res[k] ? gf_to_dtype(gf_detach(res[k]), GF_F32) : NULL;
    *gx = gf_scope_keep(res[0]);
    *gw = gf_scope_keep(res[1]);
    *gb = gf_scope_keep(res[2]);
    gf_scope_end();
    gf_tensor *made[4] = {x0, w0, b0, r0};
    for (int k = 0; k < 4; k++) gf_tensor_release(made[k]);
    return s;
}

static void norm_backward_case(bool layer) {
    const char *kernel = layer ? "layer_norm_backward" : "batch_norm_backward";
    for (int e = 0; e < 2; e++) {
        gf_tensor *g[3][3]; /* [kernel on cpu:0, composed on cpu:0, reference f64][x, w, b] */
        /* The profiler tells which path ran: the kernel without
         * create_graph, the formula with it. */
        char sum[8192];
        CHECK(gf_profiler_start(NULL) == GF_OK);
        CHECK_MSG(norm_grads(fast, GF_F32, layer, false, e, &g[0][0], &g[0][1], &g[0][2]) ==
                      GF_OK, "%s", gf_last_error());
        gf_profiler_stop();
        gf_profiler_summary(sum, sizeof sum);
        CHECK_MSG(strstr(sum, kernel) != NULL, "no %s in:\n%s", kernel, sum);
        CHECK(gf_profiler_start(NULL) == GF_OK);
        CHECK_MSG(norm_grads(fast, GF_F32, layer, true, e, &g[1][0], &g[1][1], &g[1][2]) == GF_OK,
                  "%s", gf_last_error());
        gf_profiler_stop();
        gf_profiler_summary(sum, sizeof sum);
        CHECK_MSG(strstr(sum, kernel) == NULL, "%s ran with create_graph", kernel);
        CHECK_MSG(norm_grads(ref, GF_F64, layer, false, e, &g[2][0], &g[2][1], &g[2][2]) == GF_OK,
                  "%s", gf_last_error());
        static const char *const what[3] = {"grad x", "grad weight", "grad bias"};
        for (int k = 0; k < 3; k++) {
            /* With an expanded grad_y the exact grad_x and grad_weight are 0:
             * compare with an absolute tolerance on the scale of g. */
            double atol = e ? 1e-4 : 1e-5;
            char label[96];
            snprintf(label, sizeof label, "%s %s, kernel vs f64 reference, %s grad_y",
                     layer ? "layer norm" : "batch norm", what[k], e ? "expanded" : "dense");
            xd_check_tol(label, g[0][k], g[2][k], (xd_tol){1e-4, atol});
            snprintf(label, sizeof label, "%s %s, kernel vs composed formula, %s grad_y",
                     layer ? "layer norm" : "batch norm", what[k], e ? "expanded" : "dense");
            xd_check_tol(label, g[0][k], g[1][k], (xd_tol){1e-4, atol});
        }
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) gf_tensor_release(g[i][k]);
    }
}

static void test_batch_norm_backward(void) { norm_backward_case(false); }
static void test_layer_norm_backward(void) { norm_backward_case(true); }

/* ------------------------------------------------------------ batched linear (f32) */
/* x [B, T, K] @ W^T with W [N, K]: the core broadcasts W over the batch, and
 * cpu_onednn runs the product as one 2-D GEMM when x's batch dims fold into
 * its rows. Against the reference device in f64: x contiguous (folded), x
 * a batch-transposed view (not foldable), x sliced along T (rows not
 * chained to the batch: not foldable), and the output of the folded case
 * written into a transposed destination by the next op. */
static gf_tensor *batched_linear(gf_device *d, int variant) {
    gf_tensor *x0 = data(d, 3, (int64_t[]){5, 7, 12}, 2.0, 71), *w0 = data(d, 2, (int64_t[]){9, 12}, 1.0, 72);
    gf_scope_begin();
    gf_tensor *x = gf_to_dtype(x0, d == ref ? GF_F64 : GF_F32);
    gf_tensor *w = gf_to_dtype(w0, d == ref ? GF_F64 : GF_F32);
    if (variant == 1) x = gf_transpose(gf_contiguous(gf_transpose(x, 0, 1)), 0, 1);
    if (variant == 2) x = gf_narrow(x, 1, 2, 4);
    gf_tensor *y = gf_matmul(x, gf_transpose(w, 0, 1));
    if (y) y = gf_to_dtype(gf_contiguous(y), GF_F32);
    y = gf_scope_keep(y);
    gf_scope_end();
    gf_tensor_release(x0), gf_tensor_release(w0);
    return y;
}

static void test_batched_linear(void) {
    static const char *const what[3] = {"contiguous x (folded)", "batch-transposed x",
                                        "x sliced along T"};
    for (int v = 0; v < 3; v++) {
        gf_tensor *got = batched_linear(fast, v), *want = batched_linear(ref, v);
        char label[80];
        snprintf(label, sizeof label, "[B, T, K] @ W^T, %s", what[v]);
        CHECK_MSG(got && want, "%s: %s", label, gf_last_error());
        if (got && want) xd_check_tol(label, got, want, (xd_tol){1e-5, 1e-5});
        gf_tensor_release(got), gf_tensor_release(want);
    }
}

/* ------------------------------------------------------------------ linear layers */
/* x @ W^T (a linear layer), then A^T @ h with A batched: the matmul backward
 * computes the gradient of a transposed operand in its own layout. */
static gf_tensor *linear_fn(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_scope_begin();
    gf_tensor *h = gf_matmul(in[0], gf_transpose(in[1], 0, 1));   /* [3, 4] @ [4, 5] */
    gf_tensor *z = gf_matmul(gf_transpose(in[2], -1, -2), h);     /* [2, 6, 3] @ [3, 5] */
    gf_tensor *y = gf_sum(gf_mul(z, z), NULL, 0, false);
    gf_scope_keep(y);
    gf_scope_end();
    return y;
}

static void test_linear_grad(void) {
    /* sum(x @ W^T) over [3, 5]: dW[j, k] = sum_i x[i, k], dx[i, k] = sum_j W[j, k]. */
    double xv[12], wv[20];
    for (int i = 0; i < 12; i++) xv[i] = i + 1;
    for (int i = 0; i < 20; i++) wv[i] = 0.5 * i - 3;
    gf_tensor *x = gf_from_data(xv, (int64_t[]){3, 4}, 2, GF_F64, fast);
    gf_tensor *w = gf_from_data(wv, (int64_t[]){5, 4}, 2, GF_F64, fast);
    gf_tensor_set_requires_grad(x, true);
    gf_tensor_set_requires_grad(w, true);
    gf_scope_begin();
    gf_tensor *y = gf_sum(gf_matmul(x, gf_transpose(w, 0, 1)), NULL, 0, false);
    CHECK_MSG(y && gf_backward(y, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_scope_end();
    gf_tensor *gw = gf_tensor_grad(w), *gx = gf_tensor_grad(x);
    CHECK(gw && gf_tensor_is_contiguous(gw)); /* W's layout, not a transposed view */
    CHECK(gx && gf_tensor_is_contiguous(gx));
    double got_w[20] = {0}, got_x[12] = {0};
    if (gw && gx) {
        gf_tensor *cw = gf_contiguous(gw), *cx = gf_contiguous(gx);
        CHECK(gf_tensor_to_host(cw, got_w, sizeof got_w) == GF_OK);
        CHECK(gf_tensor_to_host(cx, got_x, sizeof got_x) == GF_OK);
        gf_tensor_release(cw), gf_tensor_release(cx);
    }
    for (int j = 0; j < 5; j++)
        for (int k = 0; k < 4; k++)
            CHECK_CLOSE(got_w[j * 4 + k], (k + 1) + (k + 5) + (k + 9), 1e-12);
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++) {
            double want = 0;
            for (int j = 0; j < 5; j++) want += 0.5 * (j * 4 + k) - 3;
            CHECK_CLOSE(got_x[i * 4 + k], want, 1e-12);
        }
    gf_tensor_release(gw), gf_tensor_release(gx);
    gf_tensor_release(x), gf_tensor_release(w);
    /* first and second derivatives, numerically, in f64 on cpu:0 */
    gf_tensor *a = data(fast, 2, (int64_t[]){3, 4}, 1.0, 61), *b = data(fast, 2, (int64_t[]){5, 4}, 1.0, 62),
              *c = data(fast, 3, (int64_t[]){2, 3, 6}, 1.0, 63);
    gf_tensor *in[3] = {gf_to_dtype(a, GF_F64), gf_to_dtype(b, GF_F64), gf_to_dtype(c, GF_F64)};
    for (int i = 0; i < 3; i++) gf_tensor_set_requires_grad(in[i], true);
    CHECK_MSG(gf_gradcheck(linear_fn, in, 3, NULL, NULL) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(gf_gradgradcheck(linear_fn, in, 3, NULL, NULL) == GF_OK, "%s", gf_last_error());
    for (int i = 0; i < 3; i++) gf_tensor_release(in[i]);
    gf_tensor_release(a), gf_tensor_release(b), gf_tensor_release(c);
}

/* ------------------------------------------------------------------ bf16 */
static void test_bf16(void) {
    gf_device_info info;
    gf_device_get_info(fast, &info);
    if (!(info.dtypes & (1u << GF_BF16))) {
        fprintf(stderr, "  bf16 not declared on this CPU: skipped\n");
        return;
    }
    gf_tensor *a = data(fast, 2, (int64_t[]){96, 200}, 2.0, 61);
    gf_tensor *b = data(fast, 2, (int64_t[]){200, 48}, 2.0, 62);
    gf_tensor *ab = gf_to_dtype(a, GF_BF16), *bb = gf_to_dtype(b, GF_BF16);
    /* the reference in f32 on bf16-rounded inputs: products are exact in f32,
     * the sums differ by accumulation order and the final bf16 rounding. */
    gf_tensor *ar = gf_to_dtype(ab, GF_F32), *br = gf_to_dtype(bb, GF_F32);
    gf_tensor *yb = gf_matmul(ab, bb), *yr = gf_matmul(ar, br);
    CHECK_MSG(yb && gf_tensor_dtype(yb) == GF_BF16, "%s", gf_last_error());
    xd_check_tol("bf16 matmul", yb, yr, (xd_tol){1.0 / 128, 0.05});
    gf_tensor *x = data(fast, 4, (int64_t[]){2, 4, 9, 9}, 2.0, 63), *w = data(fast, 4, (int64_t[]){8, 4, 3, 3}, 1.0, 64);
    gf_tensor *xb = gf_to_dtype(x, GF_BF16), *wb = gf_to_dtype(w, GF_BF16);
    gf_tensor *xr = gf_to_dtype(xb, GF_F32), *wr = gf_to_dtype(wb, GF_F32);
    gf_tensor *cb = gf_conv2d(xb, wb, NULL, NULL), *cr = gf_conv2d(xr, wr, NULL, NULL);
    CHECK_MSG(cb && gf_tensor_dtype(cb) == GF_BF16, "%s", gf_last_error());
    xd_check_tol("bf16 conv2d", cb, cr, (xd_tol){1.0 / 128, 0.05});
    /* the other ops run on the reference kernels compiled in (f32 math, one
     * rounding): exp of bf16 is bf16 and within one bf16 ulp of f32's */
    gf_tensor *bad = gf_exp(ab), *er = gf_exp(ar);
    CHECK_MSG(bad && gf_tensor_dtype(bad) == GF_BF16, "%s", gf_last_error());
    if (bad) xd_check_tol("bf16 exp", bad, er, (xd_tol){1.0 / 128, 1e-6});
    gf_tensor_release(er);
    gf_tensor_release(bad);
    gf_tensor *all[] = {a, b, ab, bb, ar, br, yb, yr, x, w, xb, wb, xr, wr, cb, cr};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gf_tensor_release(all[i]);
}

/* ------------------------------------------------------------------ threads */
typedef struct job {
    gf_tensor *a, *b, *out;
} job;

static void *worker(void *p) {
    job *j = p;
    gf_tensor *acc = NULL;
    for (int i = 0; i < 20 && (i == 0 || acc); i++) {
        gf_tensor *y = gf_matmul(j->a, j->b), *s = gf_softmax(y, 1);
        gf_tensor_release(y);
        gf_tensor_release(acc);
        acc = s;
    }
    j->out = acc;
    return NULL;
}

static void test_threads(void) {
    gf_tensor *a = data(fast, 2, (int64_t[]){128, 96}, 1.0, 71), *b = data(fast, 2, (int64_t[]){96, 80}, 1.0, 72);
    gf_tensor *ar = gf_to_device(a, ref), *br = gf_to_device(b, ref);
    job jobs[2] = {{a, b, NULL}, {a, b, NULL}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, worker, &jobs[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    job single = {ar, br, NULL};
    worker(&single);
    for (int i = 0; i < 2; i++) xd_check_tol("threaded", jobs[i].out, single.out, (xd_tol){1e-5, 1e-6});
    for (int i = 0; i < 2; i++) gf_tensor_release(jobs[i].out);
    gf_tensor_release(single.out);
    gf_tensor_release(a), gf_tensor_release(b), gf_tensor_release(ar), gf_tensor_release(br);
}

int main(void) {
    int rc = xd_init(); /* needs GRAFT_PLUGINS=cpu_onednn,reference */
    if (rc) return rc;
    fast = xd_dev;
    ref = xd_ref;
    RUN(test_devices);
    RUN(test_mlp_training);
    RUN(test_cnn_training);
    RUN(test_gradcheck_f64);
    RUN(test_batch_norm_backward);
    RUN(test_layer_norm_backward);
    RUN(test_batched_linear);
    RUN(test_linear_grad);
    RUN(test_bf16);
    RUN(test_threads);
    return CHECK_REPORT();
}
