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
    return CHECK_REPORT();
}
