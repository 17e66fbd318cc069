/* SPDX-License-Identifier: BSD-3-Clause */
/* Autocast regions (graft/amp.h): each op's result dtype inside
 * gf_autocast_begin("cpu", low) equals PyTorch's (autocast_table.h, from
 * tools/expected/gen_autocast_table.py); the cast cache; nested and disabled
 * regions; the mode is per thread; a small network's gradients under
 * autocast against its f32 gradients; double backward under autocast;
 * argument errors. Every tensor lives in main's scope. */
#include <graft.h>
#include <pthread.h>

#include "check.h"
#include "amp/autocast_table.h" /* generated: tools/expected/gen_autocast_table.py */

static gf_tensor *rnd(gf_dtype dt, int rank, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t s[4] = {a, b, c, d};
    gf_tensor *r = gf_rand(s, rank, GF_F32, NULL);
    return gf_to_dtype(gf_add_scalar(r, 0.5), dt);
}
#define R1(dt, a) rnd(dt, 1, a, 0, 0, 0)
#define R2(dt, a, b) rnd(dt, 2, a, b, 0, 0)
#define R3(dt, a, b, c) rnd(dt, 3, a, b, c, 0)
#define R4(dt, a, b, c, d) rnd(dt, 4, a, b, c, d)

/* The op named as in autocast_table.h, on fresh inputs of dtype dt. */
static gf_tensor *run_op(const char *op, gf_dtype dt) {
    int64_t n2 = 2;
    double tv[2] = {1, 0};
    gf_tensor *t = gf_from_data((int64_t[]){1, 0}, &n2, 1, GF_I64, NULL);
    (void)tv;
    if (!strcmp(op, "matmul")) return gf_matmul(R2(dt, 2, 3), R2(dt, 3, 4));
    if (!strcmp(op, "linear")) return gf_linear(R2(dt, 2, 3), R2(dt, 4, 3), R1(dt, 4));
    if (!strcmp(op, "conv1d")) return gf_conv1d(R3(dt, 1, 2, 5), R3(dt, 3, 2, 2), NULL, NULL);
    if (!strcmp(op, "conv2d")) return gf_conv2d(R4(dt, 1, 2, 5, 5), R4(dt, 3, 2, 2, 2), R1(dt, 3), NULL);
    if (!strcmp(op, "conv_transpose2d"))
        return gf_conv_transpose2d(R4(dt, 1, 2, 3, 3), R4(dt, 2, 3, 2, 2), NULL, NULL);
    if (!strcmp(op, "einsum")) {
        gf_tensor *ops[2] = {R2(dt, 2, 3), R2(dt, 3, 4)};
        return gf_einsum("ij,jk->ik", ops, 2);
    }
    if (!strcmp(op, "sdpa"))
        return gf_scaled_dot_product_attention(R4(dt, 1, 2, 3, 4), R4(dt, 1, 2, 3, 4),
                                               R4(dt, 1, 2, 3, 4), NULL, 0.0, false, NAN);
    if (!strcmp(op, "softmax")) return gf_softmax(R2(dt, 2, 3), 1);
    if (!strcmp(op, "log_softmax")) return gf_log_softmax(R2(dt, 2, 3), 1);
    if (!strcmp(op, "exp")) return gf_exp(R1(dt, 3));
    if (!strcmp(op, "log")) return gf_log(R1(dt, 3));
    if (!strcmp(op, "pow")) return gf_pow(R1(dt, 3), R1(dt, 3));
    if (!strcmp(op, "sum")) return gf_sum(R1(dt, 3), NULL, 0, false);
    if (!strcmp(op, "cumsum")) return gf_cumsum(R1(dt, 3), 0);
    if (!strcmp(op, "prod")) return gf_prod(R1(dt, 3), NULL, 0, false);
    if (!strcmp(op, "layer_norm")) return gf_layer_norm(R2(dt, 2, 3), 1, NULL, NULL, 1e-5, NULL, NULL);
    if (!strcmp(op, "group_norm")) return gf_group_norm(R3(dt, 2, 4, 3), 2, NULL, NULL, 1e-5);
    if (!strcmp(op, "logsumexp")) return gf_logsumexp(R2(dt, 2, 3), (int[]){1}, 1, false);
    if (!strcmp(op, "mse_loss")) return gf_mse_loss(R1(dt, 3), R1(dt, 3), GF_REDUCTION_MEAN);
    if (!strcmp(op, "l1_loss")) return gf_l1_loss(R1(dt, 3), R1(dt, 3), GF_REDUCTION_MEAN);
    if (!strcmp(op, "smooth_l1_loss"))
        return gf_smooth_l1_loss(R1(dt, 3), R1(dt, 3), GF_REDUCTION_MEAN, 1.0);
    if (!strcmp(op, "huber_loss")) return gf_huber_loss(R1(dt, 3), R1(dt, 3), GF_REDUCTION_MEAN, 1.0);
    if (!strcmp(op, "cross_entropy"))
        return gf_cross_entropy(R2(dt, 2, 3), t, NULL, GF_REDUCTION_MEAN, -100, 0.0);
    if (!strcmp(op, "nll_loss")) return gf_nll_loss(R2(dt, 2, 3), t, NULL, GF_REDUCTION_MEAN, -100);
    if (!strcmp(op, "kl_div")) return gf_kl_div(R1(dt, 3), R1(dt, 3), GF_REDUCTION_SUM, false);
    if (!strcmp(op, "binary_cross_entropy"))
        return gf_binary_cross_entropy(gf_mul_scalar(R1(dt, 3), 0.5), gf_mul_scalar(R1(dt, 3), 0.5),
                                       NULL, GF_REDUCTION_MEAN);
    if (!strcmp(op, "bce_with_logits"))
        return gf_binary_cross_entropy_with_logits(R1(dt, 3), R1(dt, 3), NULL, NULL,
                                                   GF_REDUCTION_MEAN);
    if (!strcmp(op, "cat")) {
        gf_tensor *p[2] = {R1(dt, 2), R1(dt, 2)};
        return gf_cat(p, 2, 0);
    }
    if (!strcmp(op, "stack")) {
        gf_tensor *p[2] = {R1(dt, 2), R1(dt, 2)};
        return gf_stack(p, 2, 0);
    }
    if (!strcmp(op, "add")) return gf_add(R1(dt, 3), R1(dt, 3));
    if (!strcmp(op, "relu")) return gf_relu(R1(dt, 3));
    fprintf(stderr, "no op %s in the test\n", op);
    return NULL;
}

static void test_table(void) {
    for (size_t i = 0; i < sizeof at_table / sizeof at_table[0]; i++) {
        const at_row *r = &at_table[i];
        CHECK(gf_autocast_begin("cpu", r->low) == GF_OK);
        gf_tensor *a = run_op(r->op, GF_F32), *b = run_op(r->op, r->low);
        CHECK_MSG(a && gf_tensor_dtype(a) == r->from_f32, "%s in a %s region from f32: %s, torch %s",
                  r->op, gf_dtype_name(r->low), a ? gf_dtype_name(gf_tensor_dtype(a)) : gf_last_error(),
                  gf_dtype_name(r->from_f32));
        CHECK_MSG(b && gf_tensor_dtype(b) == r->from_low, "%s in a %s region from %s: %s, torch %s",
                  r->op, gf_dtype_name(r->low), gf_dtype_name(r->low),
                  b ? gf_dtype_name(gf_tensor_dtype(b)) : gf_last_error(), gf_dtype_name(r->from_low));
        CHECK(gf_autocast_end() == GF_OK);
        /* Outside a region nothing changes: f32 in, f32 out. */
        gf_tensor *c = run_op(r->op, GF_F32);
        CHECK_MSG(c && gf_tensor_dtype(c) == GF_F32, "%s outside a region", r->op);
    }
    for (size_t i = 0; i < sizeof at_mixed / sizeof at_mixed[0]; i++) {
        const at_mix *m = &at_mixed[i];
        CHECK(gf_autocast_begin("cpu", m->low) == GF_OK);
        gf_tensor *p[2] = {R1(m->a, 2), R1(m->b, 2)};
        gf_tensor *y = !strcmp(m->op, "cat") ? gf_cat(p, 2, 0) : gf_stack(p, 2, 0);
        CHECK_MSG(y && gf_tensor_dtype(y) == m->out, "%s of %s and %s", m->op, gf_dtype_name(m->a),
                  gf_dtype_name(m->b));
        CHECK(gf_autocast_end() == GF_OK);
    }
}

static void test_nesting(void) {
    CHECK(!gf_autocast_is_enabled("cpu"));
    CHECK(gf_autocast_get_dtype("cpu") == GF_F32);
    CHECK(gf_autocast_begin("cpu", GF_BF16) == GF_OK);
    CHECK(gf_autocast_is_enabled("cpu") && gf_autocast_get_dtype("cpu") == GF_BF16);
    CHECK(!gf_autocast_is_enabled("cuda"));
    gf_tensor *a = R2(GF_F32, 2, 3), *b = R2(GF_F32, 3, 2);
    CHECK(gf_tensor_dtype(gf_matmul(a, b)) == GF_BF16);
    CHECK(gf_autocast_begin_ex("cpu", GF_BF16, false) == GF_OK); /* disabled inside */
    CHECK(!gf_autocast_is_enabled("cpu"));
    CHECK(gf_tensor_dtype(gf_matmul(a, b)) == GF_F32);
    CHECK(gf_autocast_begin("cpu", GF_F16) == GF_OK); /* re-enabled, another dtype */
    CHECK(gf_tensor_dtype(gf_matmul(a, b)) == GF_F16);
    CHECK(gf_autocast_end() == GF_OK);
    CHECK(gf_tensor_dtype(gf_matmul(a, b)) == GF_F32);
    CHECK(gf_autocast_end() == GF_OK);
    CHECK(gf_tensor_dtype(gf_matmul(a, b)) == GF_BF16);
    /* A region for another device type leaves cpu tensors alone. */
    CHECK(gf_autocast_begin("cuda", GF_F16) == GF_OK);
    CHECK(gf_tensor_dtype(gf_matmul(a, b)) == GF_BF16);
    CHECK(gf_autocast_end() == GF_OK);
    CHECK(gf_autocast_end() == GF_OK);
    CHECK(gf_tensor_dtype(gf_matmul(a, b)) == GF_F32);
    /* errors */
    CHECK(gf_autocast_end() == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "no autocast region is open");
    CHECK(gf_autocast_begin("cpu", GF_F32) == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), "enabled = false");
    CHECK(gf_autocast_begin(NULL, GF_BF16) != GF_OK);
    CHECK_CONTAINS(gf_last_error(), "device_type is NULL");
    CHECK(gf_autocast_begin("a-device-type-name-too-long", GF_BF16) == GF_ERR_INVALID);
    CHECK(!gf_autocast_is_enabled("cpu"));
    int opened = 0;
    while (gf_autocast_begin("cpu", GF_BF16) == GF_OK) opened++;
    CHECK(opened == 64);
    CHECK_CONTAINS(gf_last_error(), "regions are already open");
    while (opened--) gf_autocast_end();
    CHECK(!gf_autocast_is_enabled("cpu"));
}

static void test_cache(void) {
    gf_tensor *w = R2(GF_F32, 3, 3), *x = R2(GF_F32, 2, 3), *y0 = R2(GF_F32, 3, 3);
    gf_tensor_set_requires_grad(w, true);
    CHECK(gf_autocast_begin("cpu", GF_BF16) == GF_OK);
    CHECK(gf_autocast_cache_size() == 0);
    gf_tensor *h1 = gf_matmul(x, w), *h2 = gf_matmul(h1, w), *h3 = gf_linear(h2, w, NULL);
    CHECK(h3 && gf_tensor_dtype(h3) == GF_BF16);
    CHECK(gf_autocast_cache_size() == 1); /* w cast once; x (no grad) is not cached */
    gf_matmul(x, y0);
    CHECK(gf_autocast_cache_size() == 1);
    CHECK(gf_autocast_begin_ex("cpu", GF_BF16, false) == GF_OK);
    CHECK(gf_autocast_end() == GF_OK);
    CHECK(gf_autocast_cache_size() == 1); /* only the outermost end drops it */
    gf_tensor *loss = gf_sum(gf_to_dtype(h3, GF_F32), NULL, 0, false);
    CHECK(gf_autocast_end() == GF_OK);
    CHECK(gf_autocast_cache_size() == 0);
    CHECK(loss && gf_backward(loss, NULL, NULL) == GF_OK);
    gf_tensor *g = gf_tensor_grad(w);
    CHECK(g && gf_tensor_dtype(g) == GF_F32); /* an f32 leaf keeps an f32 gradient */
}

/* A two-layer network: gradients of the f32 weights under autocast bf16 and
 * f16 against the f32 run, within 3% of the largest gradient (bf16 keeps 8
 * bits: each rounding is 0.4%, a few of them along the path). */
static void test_network_grads(void) {
    gf_dtype lows[2] = {GF_BF16, GF_F16};
    gf_tensor *x = R2(GF_F32, 8, 16), *w1 = R2(GF_F32, 12, 16), *b1 = R1(GF_F32, 12);
    gf_tensor *w2 = R2(GF_F32, 4, 12);
    int64_t n8 = 8;
    gf_tensor *t = gf_from_data((int64_t[]){0, 1, 2, 3, 0, 1, 2, 3}, &n8, 1, GF_I64, NULL);
    gf_tensor *ps[3] = {w1, b1, w2};
    for (int i = 0; i < 3; i++) gf_tensor_set_requires_grad(ps[i], true);
    gf_tensor *ref[3] = {NULL, NULL, NULL};
    for (int run = 0; run < 3; run++) {
        if (run) CHECK(gf_autocast_begin("cpu", lows[run - 1]) == GF_OK);
        gf_tensor *h = gf_tanh(gf_linear(x, w1, b1));
        gf_tensor *logits = gf_linear(h, w2, NULL);
        gf_tensor *loss = gf_cross_entropy(logits, t, NULL, GF_REDUCTION_MEAN, -100, 0.0);
        CHECK(logits && gf_tensor_dtype(logits) == (run ? lows[run - 1] : GF_F32));
        CHECK(loss && gf_tensor_dtype(loss) == GF_F32);
        if (run) CHECK(gf_autocast_end() == GF_OK);
        gf_tensor *gr[3] = {NULL, NULL, NULL};
        CHECK(gf_grad(&loss, 1, NULL, ps, 3, gr, NULL) == GF_OK);
        for (int i = 0; i < 3; i++) {
            CHECK(gr[i] && gf_tensor_dtype(gr[i]) == GF_F32);
            if (!run) {
                ref[i] = gr[i];
                continue;
            }
            gf_tensor *d = gf_amax(gf_abs(gf_sub(gr[i], ref[i])), NULL, 0, false);
            gf_tensor *m = gf_amax(gf_abs(ref[i]), NULL, 0, false);
            double dv = 1, mv = 0;
            gf_tensor_item(d, &dv);
            gf_tensor_item(m, &mv);
            CHECK_MSG(dv <= 0.03 * mv, "param %d under %s: max error %g, largest %g", i,
                      gf_dtype_name(lows[run - 1]), dv, mv);
        }
    }
}

/* Double backward under autocast: d/dw of (d loss / dx) runs through the
 * bf16 matmul's backward twice; the result matches the f32 computation. */
static void test_double_backward(void) {
    gf_tensor *x = R2(GF_F32, 3, 4), *w = R2(GF_F32, 4, 2);
    gf_tensor_set_requires_grad(x, true);
    gf_tensor_set_requires_grad(w, true);
    double vals[2];
    for (int run = 0; run < 2; run++) {
        if (run) CHECK(gf_autocast_begin("cpu", GF_BF16) == GF_OK);
        gf_tensor *y = gf_matmul(x, w);
        CHECK(y && gf_tensor_dtype(y) == (run ? GF_BF16 : GF_F32));
        gf_tensor *l = gf_sum(gf_mul(y, y), NULL, 0, false);
        gf_tensor *gx = NULL;
        gf_grad_opts o = {.retain_graph = 1, .create_graph = true};
        CHECK(gf_grad(&l, 1, NULL, &x, 1, &gx, &o) == GF_OK);
        CHECK(gx && gf_tensor_dtype(gx) == GF_F32);
        gf_tensor *l2 = gf_sum(gf_mul(gx, gx), NULL, 0, false);
        gf_tensor *gw = NULL;
        CHECK_MSG(gf_grad(&l2, 1, NULL, &w, 1, &gw, NULL) == GF_OK, "%s", gf_last_error());
        CHECK(gw && gf_tensor_dtype(gw) == GF_F32);
        gf_tensor *s = gf_sum(gw, NULL, 0, false);
        gf_tensor_item(s, &vals[run]);
        if (run) CHECK(gf_autocast_end() == GF_OK);
    }
    CHECK_MSG(fabs(vals[1] - vals[0]) <= 0.03 * fabs(vals[0]), "%g vs %g", vals[1], vals[0]);
}

/* A conv / batch-norm / linear / layer-norm network with f32 parameters
 * under autocast bf16: the norms take the bf16 activations with their f32
 * weights and running statistics (PyTorch's mixed form), normalise in f32
 * and give bf16; the running statistics stay f32; the gradients are f32. */
static void test_mixed_norms(void) {
    gf_tensor *x = R4(GF_F32, 2, 3, 6, 6), *k = R4(GF_F32, 4, 3, 3, 3);
    gf_tensor *g = R1(GF_F32, 4), *b = R1(GF_F32, 4), *w = R2(GF_F32, 5, 16);
    gf_tensor *lw = R1(GF_F32, 5), *lb = R1(GF_F32, 5);
    int64_t c4 = 4;
    gf_tensor *rm = gf_zeros(&c4, 1, GF_F32, NULL), *rv = gf_ones(&c4, 1, GF_F32, NULL);
    gf_tensor *ps[5] = {k, g, b, w, lw};
    for (int i = 0; i < 5; i++) gf_tensor_set_requires_grad(ps[i], true);
    CHECK(gf_autocast_begin("cpu", GF_BF16) == GF_OK);
    gf_tensor *c = gf_conv2d(x, k, NULL, NULL);
    CHECK(c && gf_tensor_dtype(c) == GF_BF16);
    gf_tensor *n = gf_batch_norm(c, rm, rv, g, b, true, 0.1, 1e-5, NULL, NULL);
    CHECK_MSG(n && gf_tensor_dtype(n) == GF_BF16, "%s", n ? "dtype" : gf_last_error());
    gf_tensor *p = gf_max_pool2d(gf_relu(n), &(gf_pool2d_opts){.kernel = {2, 2}}, NULL);
    gf_tensor *h = p ? gf_linear(gf_reshape(p, (int64_t[]){2, 16}, 2), w, NULL) : NULL;
    gf_tensor *l = h ? gf_layer_norm(h, 1, lw, lb, 1e-5, NULL, NULL) : NULL;
    CHECK_MSG(l && gf_tensor_dtype(l) == GF_BF16, "%s", l ? "dtype" : gf_last_error());
    gf_tensor *loss = l ? gf_mse_loss(l, gf_zeros_like(l), GF_REDUCTION_MEAN) : NULL;
    CHECK(gf_autocast_end() == GF_OK);
    CHECK(loss && gf_tensor_dtype(loss) == GF_F32);
    CHECK(gf_tensor_dtype(rm) == GF_F32);
    double m0 = 0;
    CHECK(gf_tensor_get(rm, (int64_t[]){0}, &m0) == GF_OK && m0 != 0); /* updated */
    CHECK(loss && gf_backward(loss, NULL, NULL) == GF_OK);
    for (int i = 0; i < 5; i++) {
        gf_tensor *gr = gf_tensor_grad(ps[i]);
        CHECK_MSG(gr && gf_tensor_dtype(gr) == GF_F32, "param %d", i);
    }
}

static void *other_thread(void *arg) {
    int *ok = arg;
    int64_t s[2] = {2, 2};
    gf_tensor *a = gf_ones(s, 2, GF_F32, NULL);
    gf_tensor *y = gf_matmul(a, a);
    *ok = y && gf_tensor_dtype(y) == GF_F32 && !gf_autocast_is_enabled("cpu");
    gf_tensor_release(y);
    gf_tensor_release(a);
    return NULL;
}

static void test_threads(void) {
    CHECK(gf_autocast_begin("cpu", GF_BF16) == GF_OK);
    int ok = 0;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, other_thread, &ok) == 0);
    pthread_join(th, NULL);
    CHECK(ok == 1); /* the second thread sees no autocast */
    CHECK(gf_autocast_is_enabled("cpu"));
    CHECK(gf_autocast_end() == GF_OK);
}

int main(void) {
    gf_manual_seed(7);
    gf_scope_begin();
    RUN(test_table);
    RUN(test_nesting);
    RUN(test_cache);
    RUN(test_network_grads);
    RUN(test_double_backward);
    RUN(test_mixed_norms);
    RUN(test_threads);
    gf_scope_end();
    return CHECK_REPORT();
}
