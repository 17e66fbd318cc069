/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_modes.c — rules 8–10: no-grad, enable-grad, nesting,
 * thread-local modes, the mode backward runs in, and inference mode. */
#include <pthread.h>

#include "test_rules_util.h"

/* ------------------------------------------------------------ rule 8 */
static void rule08_no_grad_records_nothing(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    CHECK(gf_grad_mode_get() == GF_GRAD_MODE_GRAD && gf_is_grad_enabled());
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    CHECK(prev == GF_GRAD_MODE_GRAD);
    CHECK(!gf_is_grad_enabled() && gf_grad_mode_get() == GF_GRAD_MODE_NO_GRAD);
    gf_tensor *y = gf_mul(x, x);
    gf_tensor *e = gf_exp(x);
    gf_tensor *v = gf_slice(x, 0, 0, 1, 1);
    CHECK(y && !gf_tensor_requires_grad(y) && gf_tensor_is_leaf(y));
    CHECK(e && !gf_tensor_requires_grad(e) && gf_tensor_grad_fn_name(e) == NULL);
    CHECK(v && !gf_tensor_requires_grad(v));
    CHECK_VALS(y, DV(1, 4), 2, 0);
    /* Tensors made under no-grad are ordinary tensors, not inference ones. */
    CHECK(!gf_tensor_is_inference(y));
    gf_grad_mode_set(prev);
    CHECK(gf_is_grad_enabled());
    gf_tensor *y2 = gf_mul(x, x);
    CHECK(gf_tensor_requires_grad(y2));
    gf_tensor_release(y2);
    gf_tensor_release(v);
    gf_tensor_release(e);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule08_enable_grad_inside_no_grad_and_nesting(void) {
    gf_tensor *x = ag_leaf(DV(3), 1);
    gf_grad_mode p1 = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_grad_mode p2 = gf_grad_mode_set(GF_GRAD_MODE_GRAD); /* enable-grad inside */
    CHECK(p1 == GF_GRAD_MODE_GRAD && p2 == GF_GRAD_MODE_NO_GRAD);
    gf_tensor *a = gf_mul(x, x);
    CHECK(gf_tensor_requires_grad(a));
    gf_grad_mode p3 = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    CHECK(p3 == GF_GRAD_MODE_GRAD);
    gf_tensor *b = gf_mul(x, x);
    CHECK(!gf_tensor_requires_grad(b));
    CHECK(gf_grad_mode_set(p3) == GF_GRAD_MODE_NO_GRAD);
    CHECK(gf_is_grad_enabled());
    CHECK(gf_grad_mode_set(p2) == GF_GRAD_MODE_GRAD);
    CHECK(!gf_is_grad_enabled());
    gf_tensor *c = gf_mul(x, x);
    CHECK(!gf_tensor_requires_grad(c));
    CHECK(gf_grad_mode_set(p1) == GF_GRAD_MODE_NO_GRAD);
    CHECK(gf_is_grad_enabled());
    /* The graph recorded under enable-grad is a real one. */
    CHECK_OK(gf_backward(a, NULL, NULL));
    CHECK_GRAD(x, DV(6), 1, 0);
    gf_tensor_release(c);
    gf_tensor_release(b);
    gf_tensor_release(a);
    gf_tensor_release(x);
}

static void rule08_unknown_mode_is_error(void) {
    gf_grad_mode prev = gf_grad_mode_set((gf_grad_mode)7);
    CHECK(prev == GF_GRAD_MODE_GRAD);
    CHECK_ERR(gf_last_status(), GF_ERR_INVALID, "gf_grad_mode_set", "7");
    CHECK(gf_grad_mode_get() == GF_GRAD_MODE_GRAD); /* unchanged */
}

typedef struct {
    gf_grad_mode start;
    int recorded;
    gf_grad_mode after_set;
} thread_mode;

static void *mode_thread(void *arg) {
    thread_mode *t = arg;
    t->start = gf_grad_mode_get();
    gf_tensor *x = ag_leaf(DV(1), 1);
    gf_tensor *y = gf_mul(x, x);
    t->recorded = y && gf_tensor_requires_grad(y);
    gf_grad_mode_set(GF_GRAD_MODE_INFERENCE); /* must not leak into the main thread */
    t->after_set = gf_grad_mode_get();
    gf_tensor_release(y);
    gf_tensor_release(x);
    return NULL;
}

static void rule08_modes_are_thread_local_new_thread_starts_in_grad(void) {
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    thread_mode t = {GF_GRAD_MODE_INFERENCE, 0, GF_GRAD_MODE_GRAD};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, mode_thread, &t) == 0);
    pthread_join(th, NULL);
    CHECK(t.start == GF_GRAD_MODE_GRAD);
    CHECK(t.recorded);
    CHECK(t.after_set == GF_GRAD_MODE_INFERENCE);
    CHECK(gf_grad_mode_get() == GF_GRAD_MODE_NO_GRAD);
    gf_grad_mode_set(prev);
}

/* ------------------------------------------------------------ rule 9 */
static int g_seen_enabled = -1;
static gf_grad_mode g_seen_mode;
static gf_tensor *mode_hook(const gf_tensor *g, void *user) {
    g_seen_enabled = gf_is_grad_enabled();
    g_seen_mode = gf_grad_mode_get();
    return NULL;
}

static void rule09_backward_runs_in_grad_mode_iff_create_graph(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul(x, x);
    CHECK(gf_tensor_register_hook(y, mode_hook, NULL) != 0);

    g_seen_enabled = -1;
    CHECK_OK(ag_backward_ones(y, 1, false));
    CHECK(g_seen_enabled == 0 && g_seen_mode == GF_GRAD_MODE_NO_GRAD);
    CHECK(gf_grad_mode_get() == GF_GRAD_MODE_GRAD); /* restored */
    gf_tensor *g = gf_tensor_grad(x);
    CHECK(g && !gf_tensor_requires_grad(g));
    gf_tensor_release(g);
    CHECK_OK(gf_tensor_set_grad(x, NULL));

    g_seen_enabled = -1;
    CHECK_OK(ag_backward_ones(y, 1, true));
    CHECK(g_seen_enabled == 1 && g_seen_mode == GF_GRAD_MODE_GRAD);
    g = gf_tensor_grad(x);
    CHECK(g && gf_tensor_requires_grad(g));
    gf_tensor_release(g);
    CHECK_OK(gf_tensor_set_grad(x, NULL));

    /* Called under no-grad: create_graph still turns grad mode on inside,
     * and the caller's mode comes back afterwards. */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    g_seen_enabled = -1;
    CHECK_OK(ag_backward_ones(y, 1, true));
    CHECK(g_seen_enabled == 1);
    CHECK(gf_grad_mode_get() == GF_GRAD_MODE_NO_GRAD);
    g_seen_enabled = -1;
    gf_tensor *r = ag_grad1(y, x, NULL, false);
    CHECK(g_seen_enabled == 0);
    CHECK_VALS(r, DV(2, 4), 2, 0);
    CHECK(gf_grad_mode_get() == GF_GRAD_MODE_NO_GRAD);
    gf_grad_mode_set(prev);
    CHECK_OK(gf_tensor_set_grad(x, NULL));
    gf_tensor_release(r);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 10 */
static void rule10_tensors_made_in_inference_mode_are_inference_tensors(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    CHECK(!gf_tensor_is_inference(x));
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_INFERENCE);
    CHECK(!gf_is_grad_enabled() && gf_grad_mode_get() == GF_GRAD_MODE_INFERENCE);
    gf_tensor *t = gf_ones(SZ(2), 1, GF_F64, NULL);
    gf_tensor *y = gf_mul(x, x);
    gf_tensor *v = gf_slice(t, 0, 1, 2, 1);
    CHECK(gf_tensor_is_inference(t));
    CHECK(y && gf_tensor_is_inference(y) && !gf_tensor_requires_grad(y) && gf_tensor_is_leaf(y));
    CHECK(v && gf_tensor_is_inference(v));
    CHECK_VALS(y, DV(1, 4), 2, 0);
    /* In-place inside inference mode is allowed. */
    CHECK_OK(gf_add_scalar_(t, 1.0));
    CHECK_VALS(t, DV(2, 2), 2, 0);
    /* ...and counts nothing: inference tensors have no version counter,
     * while a normal tensor written in inference mode still counts. */
    CHECK(gf_tensor_version(t) == 0 && gf_tensor_version(v) == 0);
    gf_tensor *d = gf_detach(x);
    uint64_t before = gf_tensor_version(d);
    CHECK_OK(gf_add_scalar_(d, 0.0));
    CHECK(gf_tensor_version(x) == before + 1);
    gf_tensor_release(d);
    gf_grad_mode_set(prev);
    gf_tensor *n = gf_ones(SZ(2), 1, GF_F64, NULL);
    CHECK(!gf_tensor_is_inference(n));
    gf_tensor_release(n);
    gf_tensor_release(v);
    gf_tensor_release(y);
    gf_tensor_release(t);
    gf_tensor_release(x);
}

static gf_tensor *make_inference(const double *v, int64_t n) {
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_INFERENCE);
    gf_tensor *t = ag_vec(v, n);
    gf_grad_mode_set(prev);
    return t;
}

static void rule10_inference_tensor_in_ops_that_do_not_save_it(void) {
    gf_tensor *t = make_inference(DV(10, 20), 2);
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    CHECK(gf_tensor_is_inference(t));
    gf_tensor *y = gf_add(x, t); /* add saves nothing */
    CHECK(y && gf_tensor_requires_grad(y) && !gf_tensor_is_inference(y));
    CHECK_VALS(y, DV(11, 22), 2, 0);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(1, 1), 2, 0);
    /* Nothing requires grad: nothing is saved, so no error either. */
    gf_tensor *c = ag_vec(DV(3, 4), 2);
    gf_tensor *z = gf_mul(t, c);
    CHECK_VALS(z, DV(30, 80), 2, 0);
    gf_tensor_release(z);
    gf_tensor_release(c);
    gf_tensor_release(y);
    gf_tensor_release(x);
    gf_tensor_release(t);
}

static void rule10_op_saving_an_inference_tensor_is_error(void) {
    gf_tensor *t = make_inference(DV(10, 20), 2);
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul(x, t); /* MulBackward would save t for x's gradient */
    CHECK_ERR_NULL(y, GF_ERR_AUTOGRAD, "inference", "MulBackward", "gf_clone");
    gf_tensor *y2 = gf_mul(t, x);
    CHECK_ERR_NULL(y2, GF_ERR_AUTOGRAD, "inference", "gf_clone");
    /* The suggested fix works. */
    gf_tensor *tc = gf_clone(t);
    CHECK(tc && !gf_tensor_is_inference(tc));
    gf_tensor *y3 = gf_mul(x, tc);
    CHECK(y3 && gf_tensor_requires_grad(y3));
    CHECK_OK(ag_backward_ones(y3, -1, false));
    CHECK_GRAD(x, DV(10, 20), 2, 0);
    gf_tensor_release(y3);
    gf_tensor_release(tc);
    gf_tensor_release(y2);
    gf_tensor_release(y);
    gf_tensor_release(x);
    gf_tensor_release(t);
}

static void rule10_inplace_on_inference_tensor_outside_is_error(void) {
    gf_tensor *t = make_inference(DV(1, 2), 2);
    uint64_t v0 = gf_tensor_version(t);
    CHECK_ERR(gf_add_scalar_(t, 1.0), GF_ERR_AUTOGRAD, "gf_add_scalar_", "inference", "gf_clone");
    CHECK_VALS(t, DV(1, 2), 2, 0); /* nothing written */
    CHECK(gf_tensor_version(t) == v0);
    /* Also under no-grad: only inference mode may write it. */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    CHECK_ERR(gf_mul_scalar_(t, 2.0), GF_ERR_AUTOGRAD, "gf_mul_scalar_", "inference");
    CHECK_ERR(gf_zero_(t), GF_ERR_AUTOGRAD, "inference");
    gf_grad_mode_set(prev);
    gf_tensor *c = ag_vec(DV(5, 5), 2);
    CHECK_ERR(gf_copy_(t, c), GF_ERR_AUTOGRAD, "gf_copy_", "inference");
    CHECK_VALS(t, DV(1, 2), 2, 0);
    gf_tensor_release(c);
    gf_tensor_release(t);
}

static void rule10_requires_grad_on_inference_tensor_is_error(void) {
    gf_tensor *t = make_inference(DV(1, 2), 2);
    CHECK_ERR(gf_tensor_set_requires_grad(t, true), GF_ERR_AUTOGRAD,
              "gf_tensor_set_requires_grad", "inference", "gf_clone");
    CHECK(!gf_tensor_requires_grad(t));
    gf_tensor_release(t);
}

int main(void) {
    RUN(rule08_no_grad_records_nothing);
    RUN(rule08_enable_grad_inside_no_grad_and_nesting);
    RUN(rule08_unknown_mode_is_error);
    RUN(rule08_modes_are_thread_local_new_thread_starts_in_grad);
    RUN(rule09_backward_runs_in_grad_mode_iff_create_graph);
    RUN(rule10_tensors_made_in_inference_mode_are_inference_tensors);
    RUN(rule10_inference_tensor_in_ops_that_do_not_save_it);
    RUN(rule10_op_saving_an_inference_tensor_is_error);
    RUN(rule10_inplace_on_inference_tensor_outside_is_error);
    RUN(rule10_requires_grad_on_inference_tensor_is_error);
    return ag_finish();
}
