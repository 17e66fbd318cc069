/* SPDX-License-Identifier: BSD-3-Clause */
/* test_adopt.c — gf_from_host_memory: tensors over memory the caller owns.
 * Writes go both ways without copies, kernels (and autograd) run on the
 * memory in place, views keep it alive, release runs exactly once on the
 * thread that drops the last reference, and every refusal leaves ownership
 * with the caller (release not called). */
#include "interop_test.h"

#include <pthread.h>

static gf_device *cpu;

typedef struct owner {
    int released;
    pthread_t thread; /* who released */
} owner;

static void on_release(void *ctx) {
    owner *o = ctx;
    o->released++;
    o->thread = pthread_self();
}

static uint64_t bytes_in_use(void) {
    gf_memory_stats st;
    gf_memory_get_stats(cpu, &st);
    return st.bytes_in_use;
}

static void test_shared_both_ways(void) {
    uint64_t before = bytes_in_use();
    float *m = malloc(6 * sizeof *m);
    for (int i = 0; i < 6; i++) m[i] = (float)(i + 1);
    owner o = {0};
    gf_tensor *t = gf_from_host_memory(m, SZ(2, 3), NULL, 2, GF_F32, cpu, on_release, &o);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    CHECK(bytes_in_use() == before); /* adopted, not allocated */
    CHECK(t && gf_tensor_is_contiguous(t) && gf_tensor_size(t, 0) == 2);
    CHECK(t && it_get(t, 5) == 6);
    m[0] = 10; /* the owner writes */
    CHECK(t && it_get(t, 0) == 10);
    gf_tensor *one = gf_scalar(1, GF_F32, cpu);
    CHECK(gf_add_(t, one) == GF_OK); /* a kernel writes in place */
    CHECK(m[0] == 11 && m[5] == 7);
    /* a kernel reads it: [2,3] @ [3,2] of its own transpose */
    gf_tensor *tt = gf_transpose(t, 0, 1);
    gf_tensor *p = gf_matmul(t, tt);
    /* rows (11,3,4) and (5,6,7): 146, 101; 101, 110 */
    CHECK(p && it_get(p, 0) == 146 && it_get(p, 1) == 101 && it_get(p, 3) == 110);
    gf_tensor_release(p);
    gf_tensor_release(one);
    gf_tensor_release(t);
    CHECK(o.released == 0); /* the transposed view still holds it */
    gf_tensor_release(tt);
    CHECK(o.released == 1);
    CHECK(pthread_equal(o.thread, pthread_self()));
    free(m);
}

static void test_strides_and_shapes(void) {
    /* a column-major 3x2 matrix: strides [1, 3] */
    int64_t *m = malloc(6 * sizeof *m);
    for (int i = 0; i < 6; i++) m[i] = (INT64_C(1) << 40) + i;
    owner o = {0};
    gf_tensor *t = gf_from_host_memory(m, SZ(3, 2), SZ(1, 3), 2, GF_I64, NULL, on_release, &o);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    int64_t got[6] = {0};
    gf_tensor *c = gf_contiguous(t);
    CHECK(c && gf_tensor_to_host(c, got, sizeof got) == GF_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) CHECK(got[2 * i + j] == (INT64_C(1) << 40) + i + 3 * j);
    gf_tensor_release(c);
    gf_tensor_release(t);
    CHECK(o.released == 1);
    free(m);

    /* a 0-dim tensor; no release function at all */
    double x = 2.5;
    t = gf_from_host_memory(&x, NULL, NULL, 0, GF_F64, cpu, NULL, NULL);
    CHECK(t && gf_tensor_rank(t) == 0 && it_get(t, 0) == 2.5);
    gf_tensor *sq = gf_mul(t, t);
    CHECK(sq && it_get(sq, 0) == 6.25);
    gf_tensor_release(sq);
    gf_tensor_release(t);

    /* nothing to share: an empty tensor, the memory handed back at once */
    o.released = 0;
    t = gf_from_host_memory(NULL, SZ(0, 4), NULL, 2, GF_F32, cpu, on_release, &o);
    CHECK(t && gf_tensor_numel(t) == 0 && gf_tensor_size(t, 1) == 4 && o.released == 1);
    gf_tensor_release(t);
    CHECK(o.released == 1);

    /* a size-1 dim with any stride, and a broadcast (stride 0) view */
    float row[3] = {1, 2, 3};
    t = gf_from_host_memory(row, SZ(4, 3), SZ(0, 1), 2, GF_F32, cpu, NULL, NULL);
    CHECK(t && it_get(t, 9) == 1 && it_get(t, 11) == 3);
    gf_tensor *s = gf_sum(t, NULL, 0, false);
    CHECK(s && it_get(s, 0) == 24);
    gf_tensor_release(s);
    gf_tensor_release(t);
}

static void test_autograd(void) {
    double *m = malloc(3 * sizeof *m);
    m[0] = 1, m[1] = -2, m[2] = 3;
    owner o = {0};
    gf_tensor *x = gf_from_host_memory(m, SZ(3), NULL, 1, GF_F64, cpu, on_release, &o);
    CHECK(x && gf_tensor_set_requires_grad(x, true) == GF_OK);
    gf_tensor *sq = gf_mul(x, x);
    gf_tensor *y = gf_sum(sq, NULL, 0, false);
    CHECK(y && gf_backward(y, NULL, NULL) == GF_OK);
    gf_tensor *g = x ? gf_tensor_grad(x) : NULL;
    CHECK(g && it_get(g, 0) == 2 && it_get(g, 1) == -4 && it_get(g, 2) == 6);
    gf_tensor_release(g);
    gf_tensor_release(y);
    gf_tensor_release(sq);
    /* an in-place write to adopted memory bumps its version like any other */
    gf_tensor *z = gf_mul(x, x);
    gf_tensor *d = gf_detach(x);
    gf_tensor *two = gf_scalar(2, GF_F64, cpu);
    CHECK(gf_mul_(d, two) == GF_OK);
    CHECK(m[1] == -4);
    gf_tensor *zs = gf_sum(z, NULL, 0, false);
    CHECK(zs && gf_backward(zs, NULL, NULL) != GF_OK); /* x was saved, then modified */
    CHECK_CONTAINS(gf_last_error(), "modified by an in-place operation");
    gf_clear_error();
    gf_tensor_release(zs);
    gf_tensor_release(two);
    gf_tensor_release(d);
    gf_tensor_release(z);
    gf_tensor_release(x);
    CHECK(o.released == 1);
    free(m);
}

static void *drop(void *arg) {
    gf_tensor_release(arg);
    return NULL;
}

static void test_release_on_last_thread(void) {
    float *m = calloc(4, sizeof *m);
    owner o = {0};
    gf_tensor *t = gf_from_host_memory(m, SZ(4), NULL, 1, GF_F32, cpu, on_release, &o);
    CHECK(t != NULL);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, drop, t) == 0);
    pthread_join(th, NULL);
    CHECK(o.released == 1 && pthread_equal(o.thread, th));
    free(m);
}

static void refused(void *data, const int64_t *sizes, const int64_t *strides, int rank,
                    gf_dtype dtype, gf_status status, const char *text) {
    owner o = {0};
    gf_tensor *t = gf_from_host_memory(data, sizes, strides, rank, dtype, cpu, on_release, &o);
    CHECK(t == NULL);
    gf_tensor_release(t);
    CHECK_FAILS(status, text);
    CHECK(o.released == 0); /* the caller still owns the memory */
}

static void test_errors(void) {
    static double buf[8];
    refused((char *)buf + 4, SZ(2), NULL, 1, GF_F64, GF_ERR_INVALID, "not aligned");
    refused(buf, SZ(2, 2), SZ(2, -1), 2, GF_F64, GF_ERR_INVALID, "negative");
    refused(NULL, SZ(3), NULL, 1, GF_F32, GF_ERR_INVALID, "data is NULL");
    refused(buf, SZ(1, 1, 1, 1, 1, 1, 1, 1, 1), NULL, 9, GF_F32, GF_ERR_INVALID, "rank 9");
    refused(buf, SZ(2, -3), NULL, 2, GF_F32, GF_ERR_INVALID, "negative");
    refused(buf, NULL, NULL, 2, GF_F32, GF_ERR_INVALID, "sizes");
    refused(buf, SZ(2), NULL, 1, (gf_dtype)99, GF_ERR_DTYPE, "dtype");
    refused(buf, SZ(INT64_C(1) << 40, INT64_C(1) << 40), SZ(INT64_C(1) << 40, 1), 2, GF_F32,
            GF_ERR_OVERFLOW, "");
    /* A dtype the device does not store is refused as gf_empty refuses it
     * (else a safetensors file written from it would not load back); one it
     * stores is adopted, and a file written from it loads back. */
    gf_device_info info;
    CHECK(gf_device_get_info(cpu, &info) == GF_OK);
    const gf_dtype sixteen[] = {GF_BF16, GF_F16};
    for (int i = 0; i < 2; i++) {
        gf_dtype d = sixteen[i];
        if (!(info.dtypes & (1u << d))) {
            refused(buf, SZ(2), NULL, 1, d, GF_ERR_DTYPE, "does not store dtype");
            gf_tensor *e = gf_empty(SZ(2), 1, d, cpu);
            CHECK(e == NULL);
            CHECK_FAILS(GF_ERR_DTYPE, "does not store dtype");
            continue;
        }
        owner o = {0};
        gf_tensor *t = gf_from_host_memory(buf, SZ(2), NULL, 1, d, cpu, on_release, &o);
        CHECK(t != NULL);
        const char *path = "test_adopt_16bit.safetensors";
        const char *names[] = {"t"};
        CHECK(gf_save_safetensors(names, (const gf_tensor *const[]){t}, 1, path) == GF_OK);
        gf_tensor_dict *dict = gf_load_safetensors(path, cpu);
        CHECK_MSG(dict != NULL, "%s", gf_last_error());
        gf_tensor_dict_destroy(dict);
        remove(path);
        gf_tensor_release(t);
        CHECK(o.released == 1);
    }
}

int main(void) {
    cpu = gf_device_find("cpu");
    if (!cpu) {
        fprintf(stderr, "no cpu device: %s\n", gf_last_error());
        return 1;
    }
    RUN(test_shared_both_ways);
    RUN(test_strides_and_shapes);
    RUN(test_autograd);
    RUN(test_release_on_last_thread);
    RUN(test_errors);
    return CHECK_REPORT();
}
