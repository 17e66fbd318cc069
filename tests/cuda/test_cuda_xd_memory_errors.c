/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_xd_memory_errors.c — device memory, transfers, threads and
 * errors on cuda:0.
 *
 *  - the caching allocator over stream-ordered allocation: blocks are reused,
 *    emptying the cache frees them, and the device keeps working;
 *  - transfers: single elements at odd offsets, whole tensors through the
 *    staging buffers, device-to-device clones;
 *  - several threads launching on one device (the core serialises them, the
 *    plugin makes the device current on each calling thread);
 *  - errors: out of memory (OUT_OF_MEMORY naming cudaErrorMemoryAllocation),
 *    an op the device does not provide for a dtype (UNSUPPORTED naming the
 *    plugin and the op), and the device still working after both.
 * Skipped (exit 77) without a CUDA device. */
#include <pthread.h>

#include "cu_xd.h"

/* The sum of t's elements (NAN on failure). */
static double sum_value(const gf_tensor *t) {
    gf_tensor *s = gf_sum(t, NULL, 0, false);
    double v = NAN;
    if (!s || gf_tensor_item(s, &v) != GF_OK) v = NAN;
    gf_tensor_release(s);
    return v;
}

static void test_allocator(void) {
    gf_memory_stats s0, s1, s2;
    CHECK(gf_memory_get_stats(xd_dev, &s0) == GF_OK);
    for (int round = 0; round < 3; round++) {
        gf_tensor *ts[16];
        for (int i = 0; i < 16; i++) ts[i] = gf_full(SZ(1000 + 37 * i), 1, (double)i, GF_F32, xd_dev);
        for (int i = 0; i < 16; i++) {
            double v = -1;
            CHECK(ts[i] && gf_tensor_get(ts[i], SZ(5), &v) == GF_OK);
            CHECK(v == (double)i);
            gf_tensor_release(ts[i]);
        }
    }
    CHECK(gf_memory_get_stats(xd_dev, &s1) == GF_OK);
    /* 48 tensors of 16 sizes: the cache serves the later rounds. */
    CHECK_MSG(s1.plugin_allocations - s0.plugin_allocations < 48,
              "%llu plugin allocations for 48 tensors: the cache is not reused",
              (unsigned long long)(s1.plugin_allocations - s0.plugin_allocations));
    CHECK(gf_memory_empty_cache(xd_dev) == GF_OK);
    CHECK(gf_memory_get_stats(xd_dev, &s2) == GF_OK);
    CHECK(s2.bytes_cached == 0 && s2.plugin_frees > s1.plugin_frees);
    gf_tensor *t = gf_ones(SZ(3, 3), 2, GF_F64, xd_dev);
    CHECK(sum_value(t) == 9.0);
    gf_tensor_release(t);
    CHECK(gf_device_synchronize(xd_dev) == GF_OK);
}

static void test_transfers(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
    for (int di = 0; di < 5; di++) {
        xd_seed((uint64_t)di);
        xd_pair x = xd_pair_rand(dts[di], 3, SZ(5, 7, 3), XV_GENERAL, XL_TRANSPOSED);
        /* single elements, at every position of an odd shape */
        int bad = 0;
        for (int64_t i = 0; i < 5; i++)
            for (int64_t j = 0; j < 7; j++)
                for (int64_t k = 0; k < 3; k++) {
                    double a = 0, b = 0;
                    const int64_t idx[3] = {i, j, k};
                    CHECK(gf_tensor_get(x.d, idx, &a) == GF_OK);
                    CHECK(gf_tensor_get(x.r, idx, &b) == GF_OK);
                    bad += !(a == b || (isnan(a) && isnan(b)));
                }
        CHECK_MSG(bad == 0, "%s: %d single elements differ", gf_dtype_name(dts[di]), bad);
        xd_check_pair("clone", gf_clone(x.d), gf_clone(x.r));
        /* device -> reference -> device */
        gf_tensor *there = gf_to_device(x.d, xd_ref);
        gf_tensor *back = gf_to_device(there, xd_dev);
        xd_check_tol("round trip", back, x.r, (xd_tol){0, 0});
        gf_tensor_release(there);
        gf_tensor_release(back);
        xd_pair_release(x);
    }
    /* from_host into an existing device tensor, then read back */
    int64_t n = 5 * (1 << 20) / 4 + 3; /* crosses a staging half */
    float *h = malloc((size_t)n * sizeof *h), *g = malloc((size_t)n * sizeof *g);
    for (int64_t i = 0; i < n; i++) h[i] = (float)(i % 1009) - 500.25f;
    gf_tensor *t = gf_empty(&n, 1, GF_F32, xd_dev);
    CHECK(t && gf_tensor_from_host(t, h, (size_t)n * sizeof *h) == GF_OK);
    CHECK(t && gf_tensor_to_host(t, g, (size_t)n * sizeof *g) == GF_OK);
    CHECK(memcmp(h, g, (size_t)n * sizeof *h) == 0);
    gf_tensor_release(t);
    free(h);
    free(g);
}

/* ------------------------------------------------------------ threads */
typedef struct thread_arg {
    int id;
    int failures;
} thread_arg;

static void *worker(void *p) {
    thread_arg *a = p;
    for (int r = 0; r < 40; r++) {
        double base = a->id * 1000 + r;
        gf_tensor *x = gf_full(SZ(257), 1, base, GF_F64, xd_dev);
        gf_tensor *y = gf_add_scalar(x, 0.5);
        gf_tensor *s = gf_sum(y, NULL, 0, false);
        double v = 0;
        if (!s || gf_tensor_item(s, &v) != GF_OK || v != 257.0 * (base + 0.5)) a->failures++;
        gf_tensor_release(x);
        gf_tensor_release(y);
        gf_tensor_release(s);
    }
    return NULL;
}

static void test_threads(void) {
    pthread_t th[4];
    thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thread_arg){i, 0};
        CHECK(pthread_create(&th[i], NULL, worker, &args[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(args[i].failures == 0, "thread %d: %d wrong results", i, args[i].failures);
    }
}

/* ------------------------------------------------------------ errors */
static void test_errors(void) {
    /* 2^42 floats: 16 TiB, more than any GPU holds. */
    gf_clear_error();
    gf_tensor *t = gf_empty(SZ(1ll << 42), 1, GF_F32, xd_dev);
    CHECK(t == NULL && gf_last_status() == GF_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(gf_last_error(), "cuda");
    CHECK_CONTAINS(gf_last_error(), "cudaErrorMemoryAllocation");
    fprintf(stderr, "  out of memory: %s\n", gf_last_error());
    gf_tensor_release(t);

    /* Reductions are f32/f64 (and integer) only: f16 sum is not provided. */
    if (xd_stores(GF_F16)) {
        gf_tensor *x = gf_ones(SZ(4, 4), 2, GF_F32, xd_dev);
        gf_tensor *h = gf_to_dtype(x, GF_F16);
        gf_clear_error();
        gf_tensor *s = gf_sum(h, NULL, 0, false);
        CHECK(s == NULL && gf_last_status() == GF_ERR_UNSUPPORTED);
        CHECK_CONTAINS(gf_last_error(), "cuda");
        CHECK_CONTAINS(gf_last_error(), "sum");
        fprintf(stderr, "  unsupported: %s\n", gf_last_error());
        gf_tensor_release(s);
        gf_tensor_release(h);
        gf_tensor_release(x);
    }
    /* The device works on after the failures. */
    gf_tensor *a = gf_arange(0, 10, 1, GF_F32, xd_dev);
    CHECK(sum_value(a) == 45.0);
    gf_tensor_release(a);
    CHECK(gf_device_synchronize(xd_dev) == GF_OK);
}

int main(void) {
    int st = xd_init();
    if (st != 0) return st;
    RUN(test_allocator);
    RUN(test_transfers);
    RUN(test_errors);
    RUN(test_threads);
    return xd_finish();
}
