/* test_scopes.c — scopes release what was made inside them; gf_scope_keep
 * hands a result to the caller; gf_scope_end_return hands it to the
 * enclosing scope, so helpers that open their own scope compose. */
#include <graft.h>

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

int main(void) {
    cpu = gf_device_find("cpu");
    if (!cpu) {
        fprintf(stderr, "no cpu device: %s\n", gf_last_error());
        return 1;
    }
    RUN(test_end_return_in_a_scope);
    RUN(test_end_return_without_enclosing_scope);
    RUN(test_keep);
    return CHECK_REPORT();
}
