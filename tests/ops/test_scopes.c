/* SPDX-License-Identifier: BSD-3-Clause */
/* test_scopes.c — scopes release what was made inside them; gf_scope_keep
 * hands a result to the caller; gf_scope_end_return hands it to the
 * enclosing scope, so helpers that open their own scope compose. */
#include <graft.h>
#include <string.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})

static gf_device *cpu;

static uint64_t in_use(void) {
    gf_memory_stats st;
    gf_memory_get_stats(cpu, &st);
    return st.bytes_in_use;
}

static double value0(const gf_tensor *t) {
    double v = 0;
    gf_tensor_get(t, SZ(0), &v);
    return v;
}

/* A helper with its own scope: 2x + 1, its intermediates released. */
static gf_tensor *affine(const gf_tensor *x) {
    gf_scope_begin();
    gf_tensor *y = gf_add_scalar(gf_mul_scalar(x, 2), 1);
    return gf_scope_end_return(y);
}

static void test_end_return_in_a_scope(void) {
    uint64_t before = in_use();
    gf_scope_begin();
    gf_tensor *x = gf_full(SZ(1024), 1, 3.0, GF_F32, cpu);
    gf_tensor *y = affine(x);
    CHECK(y && value0(y) == 7);
    /* x, y; the helper's intermediate 2x is gone already */
    CHECK(in_use() - before == 2 * 1024 * sizeof(float));
    gf_tensor *z = affine(y);
    CHECK(z && value0(z) == 15);
    gf_scope_end(); /* y and z belonged to this scope */
    CHECK(in_use() == before);
}

static void test_end_return_without_enclosing_scope(void) {
    uint64_t before = in_use();
    gf_tensor *x = gf_full(SZ(256), 1, 1.0, GF_F32, cpu);
    gf_tensor *y = affine(x); /* no scope outside: the caller owns y */
    CHECK(y && value0(y) == 3);
    CHECK(in_use() - before == 2 * 256 * sizeof(float));
    gf_tensor_release(y);
    gf_tensor_release(x);
    CHECK(in_use() == before);
}

static void test_keep(void) {
    uint64_t before = in_use();
    gf_scope_begin();
    gf_tensor *a = gf_ones(SZ(1024), 1, GF_F32, cpu);
    gf_tensor *b = gf_scope_keep(gf_add(a, a));
    gf_scope_end();
    CHECK(b && value0(b) == 2);
    CHECK(in_use() - before == 1024 * sizeof(float));
    gf_tensor_release(b);
    CHECK(in_use() == before);
    /* NULL passes through (a failed op inside a helper) */
    gf_scope_begin();
    CHECK(gf_scope_end_return(NULL) == NULL);
    CHECK(gf_scope_keep(NULL) == NULL);
}

/* gf_scope_keep takes a tensor out of whichever open scope recorded it, not
 * only the innermost one: the enclosing scope's end must not release it. */
static void test_keep_from_an_enclosing_scope(void) {
    uint64_t before = in_use();
    gf_scope_begin(); /* A */
    gf_tensor *t = gf_ones(SZ(256), 1, GF_F32, cpu);
    gf_scope_begin(); /* B */
    CHECK(gf_scope_keep(t) == t);
    gf_scope_end(); /* B */
    gf_scope_end(); /* A: t is the caller's now */
    CHECK(t && value0(t) == 1);
    CHECK(in_use() - before == 256 * sizeof(float));
    gf_tensor_release(t);
    CHECK(in_use() == before);
}

/* One keep hands over one reference. gf_contiguous of a contiguous tensor
 * returns a new reference to the same tensor, so the tensor is recorded in
 * both scopes: keep takes the innermost record, the outer one still
 * releases its own reference. */
static void test_keep_takes_one_reference(void) {
    uint64_t before = in_use();
    gf_scope_begin(); /* A */
    gf_tensor *t = gf_ones(SZ(256), 1, GF_F32, cpu);
    gf_scope_begin(); /* B */
    gf_tensor *u = gf_contiguous(t);
    CHECK(u == t);
    CHECK(gf_scope_keep(u) == t);
    gf_scope_end(); /* B */
    CHECK(value0(t) == 1);
    gf_scope_end(); /* A releases its reference; ours stays */
    CHECK(value0(t) == 1);
    CHECK(in_use() - before == 256 * sizeof(float));
    gf_tensor_release(t);
    CHECK(in_use() == before);
}

/* Releasing by hand a reference that the open scope recorded (returned, or
 * written to an out-parameter) would be released twice: the release is
 * refused with an error, and the scope's end releases it once. */
static int g_over_released, g_wrong_message;
static void release_by_hand(gf_tensor *t) {
    gf_clear_error();
    gf_tensor_release(t);
    if (gf_last_status() == GF_ERR_INVALID) g_over_released++;
    const char *m = gf_last_error();
    if (!strstr(m, "gf_tensor_release") || !strstr(m, "scope") || !strstr(m, "gf_scope_keep"))
        g_wrong_message++;
}

static gf_status once_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                          int n_out, void *user) {
    (void)ctx, (void)n_in, (void)n_out, (void)user;
    out[0] = gf_mul_scalar(in[0], 2.0);
    return out[0] ? GF_OK : gf_last_status();
}
static gf_status once_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out, gf_tensor **gi,
                          int n_in, void *user) {
    (void)ctx, (void)n_out, (void)n_in, (void)user;
    gi[0] = gf_mul_scalar(go[0], 2.0);
    return gi[0] ? GF_OK : gf_last_status();
}

static void test_release_of_a_scope_reference_is_an_error(void) {
    uint64_t before = in_use();
    g_over_released = g_wrong_message = 0;
    int expected = 0;
    gf_scope_begin();
    gf_tensor *x = gf_arange(0, 6, 1, GF_F32, cpu);
    gf_tensor *x23 = gf_reshape(x, SZ(2, 3), 2);
    /* a returned tensor */
    release_by_hand(gf_add(x, x)), expected++;
    /* gf_max_dim / gf_min_dim values and indices */
    gf_tensor *v = NULL, *ix = NULL;
    CHECK(gf_max_dim(x23, 1, false, &v, &ix) == GF_OK);
    release_by_hand(v), release_by_hand(ix), expected += 2;
    CHECK(gf_min_dim(x23, 1, false, &v, &ix) == GF_OK);
    release_by_hand(v), release_by_hand(ix), expected += 2;
    /* gf_split / gf_chunk pieces */
    gf_tensor *pieces[3] = {0};
    int n = 0;
    CHECK(gf_split(x, 2, 0, pieces, 3, &n) == GF_OK && n == 3);
    for (int i = 0; i < n; i++) release_by_hand(pieces[i]), expected++;
    CHECK(gf_chunk(x, 2, 0, pieces, 3, &n) == GF_OK && n == 2);
    for (int i = 0; i < n; i++) release_by_hand(pieces[i]), expected++;
    /* layer_norm's mean / rstd, batch_norm's save_mean / save_invstd */
    gf_tensor *mean = NULL, *rstd = NULL;
    CHECK(gf_layer_norm(x23, 1, NULL, NULL, 1e-5, &mean, &rstd) != NULL);
    release_by_hand(mean), release_by_hand(rstd), expected += 2;
    CHECK(gf_batch_norm(x23, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, &mean, &rstd) != NULL);
    release_by_hand(mean), release_by_hand(rstd), expected += 2;
    /* max_pool2d's indices */
    gf_tensor *img = gf_reshape(x, SZ(1, 1, 2, 3), 4);
    gf_pool2d_opts po = {.kernel = {2, 2}};
    CHECK(gf_max_pool2d(img, &po, &ix) != NULL);
    release_by_hand(ix), expected++;
    /* gf_grad's results and gf_function_apply's outputs */
    gf_tensor *w = gf_ones(SZ(6), 1, GF_F32, cpu);
    gf_tensor_set_requires_grad(w, true);
    gf_tensor *y = gf_sum(gf_mul(w, x), NULL, 0, false);
    gf_tensor *g = NULL;
    CHECK(gf_grad(&y, 1, NULL, &w, 1, &g, NULL) == GF_OK);
    release_by_hand(g), expected++;
    gf_function_def def = {"Twice", once_fwd, once_bwd, false, NULL};
    gf_tensor *out = NULL;
    CHECK(gf_function_apply(&def, &w, 1, &out, 1) == GF_OK);
    release_by_hand(out), expected++;
    /* a reference of one's own is released as usual; so is a kept one */
    gf_tensor *mine = gf_tensor_retain(x);
    gf_clear_error();
    gf_tensor_release(mine);
    CHECK(gf_last_status() == GF_OK);
    gf_tensor *kept = gf_scope_keep(gf_neg(x));
    gf_tensor_release(kept);
    CHECK(gf_last_status() == GF_OK);
    gf_scope_end(); /* releases each of them once */
    CHECK_MSG(g_over_released == expected, "%d of %d over-releases refused", g_over_released,
              expected);
    CHECK(g_wrong_message == 0);
    CHECK(in_use() == before);
}

/* The trap a C programmer falls into: gf_tensor_grad's result released
 * inside a scope. The .grad slot holds the gradient too, so the reference
 * count alone cannot tell; the release must still be refused (before, the
 * scope's end freed the gradient under the slot: heap corruption at the
 * next .grad read or at the leaf's release). Outside a scope, releasing it
 * twice is refused the same way. */
static void test_release_of_grad_in_a_scope_is_an_error(void) {
    uint64_t before = in_use();
    gf_tensor *w = gf_full(SZ(4), 1, 3.0, GF_F32, cpu);
    CHECK(gf_tensor_set_requires_grad(w, true) == GF_OK);
    for (int round = 0; round < 3; round++) {
        gf_scope_begin();
        gf_tensor *y = gf_sum(gf_mul(w, w), NULL, 0, false);
        CHECK(gf_backward(y, NULL, NULL) == GF_OK);
        gf_tensor *g = gf_tensor_grad(w);
        CHECK(g && value0(g) == 6.0f * (float)(round + 1));
        g_over_released = g_wrong_message = 0;
        release_by_hand(g);
        CHECK(g_over_released == 1 && g_wrong_message == 0);
        CHECK(strstr(gf_last_error(), ".grad") != NULL);
        gf_scope_end();
        /* the slot's gradient is intact and accumulates on the next round */
        gf_tensor *again = gf_tensor_grad(w);
        CHECK(again && value0(again) == 6.0f * (float)(round + 1));
        gf_tensor_release(again);
    }
    /* outside a scope: one release is fine, a second one is refused */
    gf_tensor *g = gf_tensor_grad(w);
    gf_clear_error();
    gf_tensor_release(g);
    CHECK(gf_last_status() == GF_OK);
    gf_tensor_release(g);
    CHECK(gf_last_status() == GF_ERR_INVALID && strstr(gf_last_error(), "released twice"));
    gf_tensor *still = gf_tensor_grad(w);
    CHECK(still && value0(still) == 18.0f);
    gf_tensor_release(still);
    /* clearing the slot gives its hold back: the gradient is freed */
    gf_clear_error();
    CHECK(gf_tensor_set_grad(w, NULL) == GF_OK);
    gf_tensor_release(w);
    CHECK(gf_last_status() == GF_OK);
    CHECK(in_use() == before);
}

/* A view holds its base (graft's own reference, like the .grad slot's): a
 * scope's result released by hand while a view of it lives is refused too.
 * Before, the count let the release through (it took the view's reference
 * for the caller's), and the scope's end freed the base under the view and
 * under the .grad slot. */
static void test_release_with_a_view_alive_is_an_error(void) {
    uint64_t before = in_use();
    gf_tensor *w = gf_full(SZ(4), 1, 2.0, GF_F32, cpu);
    CHECK(gf_tensor_set_requires_grad(w, true) == GF_OK);
    gf_scope_begin();
    gf_tensor *y = gf_sum(gf_mul(w, w), NULL, 0, false);
    CHECK(gf_backward(y, NULL, NULL) == GF_OK);
    gf_tensor *g = gf_tensor_grad(w);
    gf_tensor *gv = gf_scope_keep(gf_reshape(g, SZ(2, 2), 2));
    gf_tensor *x = gf_add(w, w);
    gf_tensor *xv = gf_scope_keep(gf_reshape(x, SZ(2, 2), 2));
    g_over_released = g_wrong_message = 0;
    release_by_hand(g);
    release_by_hand(x);
    CHECK_MSG(g_over_released == 2 && g_wrong_message == 0, "%d of 2 refused", g_over_released);
    gf_scope_end();
    double gv11 = 0, xv11 = 0;
    CHECK(gf_tensor_get(gv, SZ(1, 1), &gv11) == GF_OK && gv11 == 4.0);
    CHECK(gf_tensor_get(xv, SZ(1, 1), &xv11) == GF_OK && xv11 == 4.0);
    gf_tensor *again = gf_tensor_grad(w);
    CHECK(again && value0(again) == 4.0f);
    gf_tensor_release(again);
    gf_tensor_release(gv);
    gf_tensor_release(xv);
    CHECK(gf_tensor_set_grad(w, NULL) == GF_OK);
    gf_tensor_release(w);
    CHECK(in_use() == before);
}

int main(void) {
    cpu = gf_device_find("cpu");
    if (!cpu) {
        fprintf(stderr, "no cpu device: %s\n", gf_last_error());
        return 1;
    }
    RUN(test_end_return_in_a_scope);
    RUN(test_end_return_without_enclosing_scope);
    RUN(test_keep);
    RUN(test_keep_from_an_enclosing_scope);
    RUN(test_keep_takes_one_reference);
    RUN(test_release_of_a_scope_reference_is_an_error);
    RUN(test_release_of_grad_in_a_scope_is_an_error);
    RUN(test_release_with_a_view_alive_is_an_error);
    return CHECK_REPORT();
}
