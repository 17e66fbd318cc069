/* SPDX-License-Identifier: BSD-3-Clause */
/* test_graph_rules.c — what a captured region refuses, and what it keeps.
 *
 * Each refused pattern (a host read, a second device, a nested capture, a
 * replay after an input was released or reshaped, an optimiser or schedule
 * a replay cannot follow) gives an error naming the call and the reason,
 * ends the capture, and leaves graft usable: the same thread then runs eager
 * ops and captures a graph that replays correctly. Also: a destroyed graph
 * gives its pool back (bytes in use return to the baseline), random ops draw
 * new numbers per replay exactly as eager calls do, inputs written in place
 * are read by the next replay, a replay inside a capture is refused, and
 * host memory adopted inside a region is given back once. */
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static gf_tensor *vec(const float *v, int64_t n) {
    return gf_from_data(v, &n, 1, GF_F32, NULL);
}

/* Element 0 of a small f32 tensor. */
static float first(const gf_tensor *t) {
    float v[16] = {NAN};
    int64_t n = t ? gf_tensor_numel(t) : 0;
    CHECK(t && n >= 1 && n <= 16);
    if (!t || n < 1 || n > 16) return NAN;
    CHECK(gf_tensor_to_host(t, v, sizeof(float) * (size_t)n) == GF_OK);
    return v[0];
}

/* After a refusal: eager ops work and a fresh capture replays. */
static void check_usable(void) {
    CHECK(!gf_graph_capturing());
    const float a[3] = {1, -2, 3};
    gf_tensor *x = vec(a, 3);
    gf_tensor *y = gf_relu(x);
    CHECK(y && first(y) == 1.0f);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    gf_tensor *z = gf_mul_scalar(x, 2.0);
    gf_graph *g = gf_graph_capture_end();
    CHECK_MSG(g != NULL, "%s", gf_last_error());
    const float b[3] = {5, 6, 7};
    CHECK(gf_tensor_from_host(x, b, sizeof b) == GF_OK);
    CHECK(gf_graph_replay(g) == GF_OK);
    CHECK(first(z) == 10.0f);
    gf_graph_destroy(g);
    gf_tensor_release(z);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* Ends a capture that must have failed with `needle` in its reason. */
static void end_refused(const char *needle) {
    gf_graph *g = gf_graph_capture_end();
    CHECK(g == NULL);
    const char *msg = gf_last_error();
    CHECK_CONTAINS(msg, "gf_graph_capture_end: the region cannot be replayed");
    CHECK_CONTAINS(msg, needle);
    gf_graph_destroy(g);
}

static void test_host_read_refused(void) {
    const float a[2] = {1, 2};
    gf_tensor *x = vec(a, 2);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    gf_tensor *y = gf_exp(x);
    double v = 0;
    gf_tensor *sum = gf_sum(y, NULL, 0, false);
    gf_status s = gf_tensor_item(sum, &v);
    gf_tensor_release(sum);
    CHECK(s == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "gf_tensor_item");
    CHECK_CONTAINS(gf_last_error(), "to the host inside a captured region");
    float h[2];
    CHECK(gf_tensor_to_host(y, h, sizeof h) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "gf_tensor_to_host");
    end_refused("to the host inside a captured region");
    gf_tensor_release(y);
    gf_tensor_release(x);
    check_usable();
}

static void test_second_device_refused(void) {
    if (gf_device_count() < 2) {
        CHECK(gf_device_count() == 1); /* nothing to mix: one device loaded */
        return;
    }
    gf_device *d0 = gf_device_at(0), *d1 = gf_device_at(1);
    const float a[2] = {1, 2};
    gf_tensor *x0 = gf_from_data(a, (const int64_t[]){2}, 1, GF_F32, d0);
    gf_tensor *x1 = gf_from_data(a, (const int64_t[]){2}, 1, GF_F32, d1);
    CHECK(gf_graph_capture_begin(d0) == GF_OK);
    gf_tensor *y0 = gf_neg(x0);
    CHECK(y0 != NULL);
    gf_tensor *y1 = gf_neg(x1);
    CHECK(y1 == NULL);
    CHECK(gf_last_status() == GF_ERR_DEVICE);
    CHECK_CONTAINS(gf_last_error(), "gf_neg");
    CHECK_CONTAINS(gf_last_error(), gf_device_spec(d1));
    CHECK_CONTAINS(gf_last_error(), "a graph replays on one device");
    end_refused("a graph replays on one device");
    gf_tensor_release(y0);
    gf_tensor_release(x0);
    gf_tensor_release(x1);
    check_usable();
}

static void test_nested_refused(void) {
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    CHECK(gf_graph_capture_begin(NULL) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "nested capture");
    /* the outer capture goes on */
    const float a[2] = {1, 2};
    gf_tensor *x = vec(a, 2);
    gf_tensor *y = gf_add_scalar(x, 1.0);
    gf_graph *g = gf_graph_capture_end();
    CHECK(g != NULL);
    CHECK(gf_graph_replay(g) == GF_OK);
    CHECK(first(y) == 2.0f);
    /* a replay inside a capture */
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    CHECK(gf_graph_replay(g) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "inside a captured region");
    end_refused("gf_graph_replay");
    CHECK(gf_graph_capture_end() == NULL);
    CHECK_CONTAINS(gf_last_error(), "not capturing");
    gf_graph_destroy(g);
    gf_tensor_release(y);
    gf_tensor_release(x);
    check_usable();
}

static void test_freed_input_refused(void) {
    const float a[3] = {1, 2, 3};
    gf_tensor *x = vec(a, 3);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    gf_tensor *y = gf_mul(x, x);
    gf_graph *g = gf_graph_capture_end();
    CHECK_MSG(g && gf_graph_input_count(g) == 1, "inputs %zu", gf_graph_input_count(g));
    CHECK(gf_graph_replay(g) == GF_OK);
    CHECK(first(y) == 1.0f);
    gf_tensor_release(x); /* the graph still holds its memory: nothing is read freed */
    CHECK(gf_graph_replay(g) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "input 0 of the graph (f32[3]");
    CHECK_CONTAINS(gf_last_error(), "was released");
    CHECK(first(y) == 1.0f);
    gf_graph_destroy(g);
    gf_tensor_release(y);
    check_usable();
}

static void test_shape_change_refused(void) {
    gf_module *lin = gf_nn_linear(3, 2, true, GF_F32, NULL);
    const float a[6] = {1, 2, 3, 4, 5, 6};
    gf_tensor *x = gf_from_data(a, (const int64_t[]){2, 3}, 2, GF_F32, NULL);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    gf_tensor *y = gf_module_forward(lin, &x, 1);
    gf_graph *g = gf_graph_capture_end();
    CHECK(g && y);
    CHECK(gf_graph_replay(g) == GF_OK);
    /* the parameters move to f64: new memory, new dtype */
    CHECK(gf_module_to(lin, NULL, GF_F64) == GF_OK);
    CHECK(gf_graph_replay(g) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "changed since capture");
    CHECK_CONTAINS(gf_last_error(), "is now f64");
    gf_graph_destroy(g);
    gf_tensor_release(y);
    gf_tensor_release(x);
    gf_module_release(lin);
    check_usable();
}

static void test_optimizers_refused(void) {
    gf_tensor *p = gf_ones((const int64_t[]){4}, 1, GF_F32, NULL);
    CHECK(gf_tensor_set_requires_grad(p, true) == GF_OK);
    gf_rmsprop_opts ro = GF_RMSPROP_OPTS_DEFAULT;
    gf_optimizer *opt = gf_rmsprop_create(&p, 1, &ro);
    gf_scope_begin();
    CHECK(gf_backward(gf_sum(gf_mul(p, p), NULL, 0, false), NULL, NULL) == GF_OK);
    gf_scope_end();
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    CHECK(gf_optimizer_step(opt) == GF_ERR_UNSUPPORTED);
    CHECK_CONTAINS(gf_last_error(), "RMSprop.step cannot be captured");
    end_refused("RMSprop.step");
    gf_plateau_opts po = GF_PLATEAU_OPTS_DEFAULT;
    gf_lr_plateau *pl = gf_lr_plateau_create(opt, &po);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    CHECK(gf_lr_plateau_step(pl, 1.0) == GF_ERR_INVALID);
    end_refused("gf_lr_plateau_step");
    gf_lr_plateau_destroy(pl);
    gf_optimizer_destroy(opt);
    /* SGD with momentum before its first step */
    gf_sgd_opts so = {.lr = 0.1, .momentum = 0.9};
    opt = gf_sgd_create(&p, 1, &so);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    CHECK(gf_optimizer_step(opt) == GF_ERR_INVALID);
    end_refused("run one step before capturing");
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
    check_usable();
}

/* The pool: bytes in use come back to the baseline when the graph and the
 * outputs made in it are gone. */
static void test_pool_released(void) {
    gf_device *dev = gf_device_default();
    const float a[4] = {1, 2, 3, 4};
    gf_tensor *x = vec(a, 4);
    gf_memory_stats before, during, after;
    CHECK(gf_memory_get_stats(dev, &before) == GF_OK);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    gf_tensor *big = gf_zeros((const int64_t[]){1 << 16}, 1, GF_F32, NULL);
    gf_scope_begin();
    gf_tensor *s = gf_scope_keep(
        gf_add(gf_sum(big, NULL, 0, false), gf_sum(gf_exp(x), NULL, 0, false)));
    gf_scope_end();
    gf_tensor_release(big); /* freed inside: back to the pool, not the device */
    gf_graph *g = gf_graph_capture_end();
    CHECK(g != NULL);
    CHECK(gf_graph_pool_bytes(g) >= (1u << 18));
    CHECK(gf_memory_get_stats(dev, &during) == GF_OK);
    CHECK(during.bytes_in_use >= before.bytes_in_use + gf_graph_pool_bytes(g));
    /* an allocation outside never gets the pool's memory */
    gf_tensor *other = gf_zeros((const int64_t[]){1 << 16}, 1, GF_F32, NULL);
    CHECK(gf_graph_replay(g) == GF_OK);
    CHECK(fabsf(first(s) - (expf(1) + expf(2) + expf(3) + expf(4))) < 1e-4f);
    gf_tensor_release(other);
    gf_graph_destroy(g); /* s still holds its block */
    CHECK(gf_memory_get_stats(dev, &after) == GF_OK);
    CHECK(after.bytes_in_use > before.bytes_in_use);
    CHECK(first(s) > 0);
    gf_tensor_release(s);
    CHECK(gf_memory_get_stats(dev, &after) == GF_OK);
    CHECK_MSG(after.bytes_in_use == before.bytes_in_use, "in use %llu, baseline %llu",
              (unsigned long long)after.bytes_in_use, (unsigned long long)before.bytes_in_use);
    gf_tensor_release(x);
}

/* Random ops: each replay draws what the next eager call would. */
static void test_random_per_replay(void) {
    enum { N = 64, R = 4 };
    float eager[R][N], replayed[R][N];
    gf_manual_seed(4242);
    gf_tensor *ones0 = gf_ones((const int64_t[]){N}, 1, GF_F32, NULL);
    for (int r = 0; r < R; r++) {
        gf_tensor *t = gf_dropout(ones0, 0.5, true);
        CHECK(t && gf_tensor_to_host(t, eager[r], sizeof eager[r]) == GF_OK);
        gf_tensor_release(t);
    }
    gf_tensor_release(ones0);
    gf_manual_seed(4242);
    gf_tensor *ones = gf_ones((const int64_t[]){N}, 1, GF_F32, NULL);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    gf_tensor *t = gf_dropout(ones, 0.5, true);
    gf_graph *g = gf_graph_capture_end();
    CHECK(g && t);
    for (int r = 0; r < R; r++) {
        if (r) CHECK(gf_graph_replay(g) == GF_OK);
        CHECK(gf_tensor_to_host(t, replayed[r], sizeof replayed[r]) == GF_OK);
    }
    CHECK(!memcmp(eager, replayed, sizeof eager));
    CHECK(memcmp(replayed[0], replayed[1], sizeof replayed[0]) != 0);
    gf_graph_destroy(g);
    gf_tensor_release(t);
    gf_tensor_release(ones);
}

/* An autograd chain replayed: gradients of a new input value. */
static void test_backward_replay(void) {
    const float a[3] = {0.5f, -1.0f, 2.0f};
    gf_tensor *x = vec(a, 3);
    CHECK(gf_tensor_set_requires_grad(x, true) == GF_OK);
    gf_scope_begin();
    CHECK(gf_backward(gf_sum(gf_mul(gf_sin(x), x), NULL, 0, false), NULL, NULL) == GF_OK); /* warm-up */
    gf_scope_end();
    gf_tensor *grad = gf_tensor_grad(x);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    CHECK(gf_zero_(grad) == GF_OK);
    gf_scope_begin();
    CHECK(gf_backward(gf_sum(gf_mul(gf_sin(x), x), NULL, 0, false), NULL, NULL) == GF_OK);
    gf_scope_end();
    gf_graph *g = gf_graph_capture_end();
    CHECK_MSG(g != NULL, "%s", gf_last_error());
    const float b[3] = {1.5f, 0.25f, -3.0f};
    gf_status s = GF_OK;
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    s = gf_tensor_from_host(x, b, sizeof b);
    gf_grad_mode_set(prev);
    CHECK(s == GF_OK);
    CHECK(gf_graph_replay(g) == GF_OK);
    float gv[3];
    CHECK(gf_tensor_to_host(grad, gv, sizeof gv) == GF_OK);
    for (int i = 0; i < 3; i++)
        CHECK_CLOSE(gv[i], sinf(b[i]) + b[i] * cosf(b[i]), 1e-5);
    gf_graph_destroy(g);
    gf_tensor_release(grad);
    gf_tensor_release(x);
}

/* Host memory adopted inside a region (gf_from_host_memory): the tensor is
 * made in the region over memory from outside its pool, so launches that
 * read it make that memory an input of the graph: the graph holds it and
 * replays while the caller keeps the tensor, refuses to replay once the
 * caller released it, and gives it back (the release callback runs once)
 * when the graph and every tensor over it are gone. */
static int adopted_releases;
static void adopted_release(void *ctx) {
    adopted_releases++;
    free(ctx);
}
static void test_adopted_in_region(void) {
    for (int keep = 0; keep < 2; keep++) {
        adopted_releases = 0;
        CHECK(gf_graph_capture_begin(NULL) == GF_OK);
        float *m = malloc(2 * sizeof(float));
        CHECK(m != NULL);
        m[0] = 3.0f, m[1] = 4.0f;
        int64_t n = 2;
        gf_tensor *t = gf_from_host_memory(m, &n, NULL, 1, GF_F32, NULL, adopted_release, m);
        CHECK(t != NULL);
        gf_tensor *y = gf_mul_scalar(t, 2.0);
        if (!keep) gf_tensor_release(t);
        gf_graph *g = gf_graph_capture_end();
        CHECK(g != NULL);
        if (keep) {
            m[0] = 5.0f;
            CHECK(gf_graph_replay(g) == GF_OK);
            CHECK(first(y) == 10.0f);
        } else {
            CHECK(gf_graph_replay(g) == GF_ERR_INVALID);
            CHECK(strstr(gf_last_error(), "released") != NULL);
        }
        gf_graph_destroy(g);
        CHECK(adopted_releases == 0 || !keep);
        if (keep) gf_tensor_release(t);
        gf_tensor_release(y);
        CHECK(adopted_releases == 1);
    }
    check_usable();
}

int main(void) {
    RUN(test_host_read_refused);
    RUN(test_second_device_refused);
    RUN(test_nested_refused);
    RUN(test_freed_input_refused);
    RUN(test_shape_change_refused);
    RUN(test_optimizers_refused);
    RUN(test_pool_released);
    RUN(test_random_per_replay);
    RUN(test_backward_replay);
    RUN(test_adopted_in_region);
    return CHECK_REPORT();
}
