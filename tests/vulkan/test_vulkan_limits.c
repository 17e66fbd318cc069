/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vulkan_limits.c — maxStorageBufferRange through the public API.
 *
 * One descriptor covers at most maxStorageBufferRange bytes (128 MiB on
 * lavapipe), so the plugin reports that as the device's largest allocation
 * (the plugin's own refusal, naming the limit, is pinned in
 * test_vulkan_abi.c): a larger tensor is refused with a message rather than
 * bound as a truncated range and computed wrong. Ops whose result would
 * exceed it fail at the result's allocation with the same message; a
 * broadcast view larger logically but small in memory works. */
#include "vk_test.h"

static gf_device_info info;
#define LIMIT_MSG "the device's largest allocation is"

static void test_alloc_refused(void) {
    int64_t n = (int64_t)(info.max_alloc_bytes / 4) + 1; /* f32 elements: one too many */
    gf_clear_error();
    gf_tensor *t = gf_empty(&n, 1, GF_F32, vt_vk);
    CHECK(t == NULL);
    CHECK_CONTAINS(gf_last_error(), LIMIT_MSG);
    gf_tensor_release(t);
    /* The largest allowed one is allocated. */
    int64_t m = (int64_t)(info.max_alloc_bytes / 4);
    t = gf_full(&m, 1, 2.0, GF_F32, vt_vk);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    if (t) {
        float last = 0;
        gf_tensor *tail = gf_slice(t, 0, m - 1, m, 1);
        gf_tensor *c = gf_contiguous(tail);
        CHECK(c && gf_tensor_to_host(c, &last, sizeof last) == GF_OK);
        CHECK_CLOSE(last, 2.0, 0);
        gf_tensor_release(c);
        gf_tensor_release(tail);
    }
    gf_tensor_release(t);
    gf_clear_error();
}

/* A 1-element tensor broadcast to more elements than one descriptor covers:
 * reading it is fine (the buffer is 4 bytes), results of its full size are
 * refused at their allocation. */
static void test_ops_refused(void) {
    int64_t n = (int64_t)(info.max_alloc_bytes / 4) + 1;
    int64_t one = 1;
    gf_tensor *s = gf_full(&one, 1, 0.25, GF_F32, vt_vk);
    gf_tensor *big = s ? gf_expand(s, &n, 1) : NULL;
    CHECK_MSG(big != NULL, "%s", gf_last_error());
    if (!big) {
        gf_tensor_release(s);
        return;
    }
    gf_clear_error();
    gf_tensor *y = gf_neg(big);
    CHECK(y == NULL);
    CHECK_CONTAINS(gf_last_error(), LIMIT_MSG);
    gf_tensor_release(y);
    gf_clear_error();
    gf_tensor *c = gf_contiguous(big);
    CHECK(c == NULL);
    CHECK_CONTAINS(gf_last_error(), LIMIT_MSG);
    gf_tensor_release(c);
    /* A matmul whose result is too large: (rows, 1) @ (1, cols). */
    int64_t rows = 8193, cols = (int64_t)(info.max_alloc_bytes / 4 / 8193) + 1;
    int64_t sa[2] = {rows, 1}, sb[2] = {1, cols};
    gf_tensor *a = gf_full(sa, 2, 1.0, GF_F32, vt_vk), *b = gf_full(sb, 2, 1.0, GF_F32, vt_vk);
    CHECK(a && b);
    gf_clear_error();
    gf_tensor *mm = gf_matmul(a, b);
    CHECK(mm == NULL);
    CHECK_CONTAINS(gf_last_error(), LIMIT_MSG);
    gf_tensor_release(mm);
    gf_tensor_release(a);
    gf_tensor_release(b);
    /* The same number of elements as a 2-D broadcast view, reduced along
     * its rows: each of the `rows` sums reads one 4-byte element cols times. */
    int64_t s2[2] = {rows, cols};
    gf_tensor *one2 = gf_reshape(s, (int64_t[]){1, 1}, 2);
    gf_tensor *big2 = one2 ? gf_expand(one2, s2, 2) : NULL;
    CHECK(big2 && gf_tensor_numel(big2) > (int64_t)(info.max_alloc_bytes / 4));
    gf_clear_error();
    int dim1 = 1;
    gf_tensor *sum = big2 ? gf_sum(big2, &dim1, 1, false) : NULL;
    CHECK_MSG(sum != NULL, "%s", gf_last_error());
    float *v = calloc((size_t)rows, sizeof *v);
    CHECK(v && sum && gf_tensor_to_host(sum, v, (size_t)rows * sizeof *v) == GF_OK);
    int bad = 0;
    for (int64_t i = 0; v && i < rows; i++) bad += v[i] != (float)(0.25 * (double)cols);
    CHECK_MSG(bad == 0, "%d of %lld row sums differ from %g", bad, (long long)rows, 0.25 * (double)cols);
    free(v);
    gf_tensor_release(sum);
    gf_tensor_release(big2);
    gf_tensor_release(one2);
    gf_tensor_release(big);
    gf_tensor_release(s);
    gf_clear_error();
}

int main(void) {
    int rc = vt_setup();
    if (rc) return rc;
    CHECK(gf_device_get_info(vt_vk, &info) == GF_OK);
    CHECK(info.max_alloc_bytes > 0 && info.max_alloc_bytes < ((uint64_t)1 << 40));
    if (info.max_alloc_bytes == 0 || info.max_alloc_bytes >= ((uint64_t)1 << 40)) return CHECK_REPORT();
    RUN(test_alloc_refused);
    RUN(test_ops_refused);
    CHECK_MSG(gf_shutdown() == GF_OK, "gf_shutdown: %s", gf_last_error());
    return CHECK_REPORT();
}
