/* SPDX-License-Identifier: BSD-3-Clause */
/* test_errors.c — one test per error class: the status and the key words of
 * the message (what happened, with the values that matter). */
#include <pthread.h>
#include <string.h>

#include "ops_test.h"

static void test_shape_mismatch(void) {
    gf_tensor *a = gf_zeros(SZ(2, 3), 2, GF_F32, NULL);
    gf_tensor *b = gf_zeros(SZ(4), 1, GF_F32, NULL);
    EXPECT_ERR(gf_add(a, b), GF_ERR_SHAPE, "add", "[2, 3]", "[4]");
    EXPECT_ERR(gf_view(a, SZ(4), 1), GF_ERR_SHAPE, "view", "[4]");
    gf_tensor *m = gf_zeros(SZ(4, 2), 2, GF_F32, NULL);
    EXPECT_ERR(gf_matmul(a, m), GF_ERR_SHAPE, "matmul", "3", "4");
    EXPECT_ERR(gf_expand(a, SZ(3, 3), 2), GF_ERR_SHAPE, "expand");
    REL(a, b, m);
}

static void test_dtype_mismatch(void) {
    /* binary elementwise ops promote, matmul requires equal dtypes */
    gf_tensor *a = gf_ones(SZ(2, 3), 2, GF_F32, NULL);
    gf_tensor *b = gf_ones(SZ(3, 2), 2, GF_F64, NULL);
    EXPECT_ERR(gf_matmul(a, b), GF_ERR_DTYPE, "matmul", "f32", "f64");
    gf_tensor *c = gf_zeros(SZ(2, 3), 2, GF_F32, NULL);
    EXPECT_ERR(gf_where(c, a, a), GF_ERR_DTYPE, "where", "bool");
    gf_tensor *i = gf_ones(SZ(3), 1, GF_BOOL, NULL);
    EXPECT_ERR(gf_neg(i), GF_ERR_DTYPE, "neg", "bool");
    REL(a, b, c, i);
}

static void test_device_mismatch(void) {
    int n = gf_device_count();
    if (n < 2) {
        fprintf(stderr, "  test_device_mismatch skipped: only %d device is loaded\n", n);
        return;
    }
    gf_device *d0 = gf_device_at(0), *d1 = gf_device_at(1);
    gf_tensor *a = gf_ones(SZ(2), 1, GF_F32, d0);
    gf_tensor *b = gf_ones(SZ(2), 1, GF_F32, d1);
    EXPECT_ERR(gf_add(a, b), GF_ERR_DEVICE, "add", gf_device_spec(d0), gf_device_spec(d1));
    REL(a, b);
}

static void test_dim_out_of_range(void) {
    gf_tensor *x = gf_zeros(SZ(2, 3), 2, GF_F32, NULL);
    EXPECT_ERR(gf_sum(x, (const int[]){5}, 1, false), GF_ERR_INDEX, "sum", "5");
    EXPECT_ERR(gf_transpose(x, 0, -3), GF_ERR_INDEX, "transpose", "-3");
    EXPECT_ERR(gf_softmax(x, 2), GF_ERR_INDEX, "softmax", "2");
    gf_clear_error();
    CHECK(gf_tensor_size(x, 2) == -1 && gf_last_status() == GF_ERR_INDEX);
    gf_tensor_release(x);
}

static void test_index_out_of_range(void) {
    gf_tensor *x = gf_zeros(SZ(3), 1, GF_F32, NULL);
    EXPECT_ERR(gf_select(x, 0, 7), GF_ERR_INDEX, "select", "7", "3");
    gf_tensor *m = gf_zeros(SZ(3, 2), 2, GF_F32, NULL);
    gf_tensor *idx = ot_make(GF_I64, 1, SZ(2), DV(1, 9));
    EXPECT_ERR(gf_index_select(m, 0, idx), GF_ERR_INDEX, "index_select", "9");
    gf_tensor *w = gf_zeros(SZ(4, 2), 2, GF_F32, NULL);
    gf_tensor *neg = ot_make(GF_I64, 1, SZ(1), DV(-1));
    EXPECT_ERR(gf_embedding(w, neg), GF_ERR_INDEX, "embedding", "-1");
    double v;
    gf_clear_error();
    CHECK(gf_tensor_get(m, (const int64_t[]){3, 0}, &v) == GF_ERR_INDEX);
    CHECK(gf_last_status() == GF_ERR_INDEX);
    REL(x, m, idx, w, neg);
}

static void test_bad_sizes(void) {
    EXPECT_ERR(gf_zeros(SZ(2, -1), 2, GF_F32, NULL), GF_ERR_INVALID, "-1");
    EXPECT_ERR(gf_empty(SZ(-5), 1, GF_F64, NULL), GF_ERR_INVALID, "-5");
    /* 2^40 x 2^40 elements do not fit in int64 */
    const int64_t huge = INT64_C(1) << 40;
    EXPECT_FAIL(gf_zeros((const int64_t[]){huge, huge}, 2, GF_F32, NULL), GF_ERR_OVERFLOW);
    CHECK(strlen(gf_last_error()) > 0);
    /* 2^62 elements fit, their 2^64 bytes do not */
    const int64_t h31 = INT64_C(1) << 31;
    EXPECT_FAIL(gf_empty((const int64_t[]){h31, h31}, 2, GF_F32, NULL), GF_ERR_OVERFLOW);
    /* a view that would have that many elements */
    gf_tensor *one = gf_zeros(SZ(1, 1), 2, GF_F32, NULL);
    gf_clear_error();
    gf_tensor *ex = gf_expand(one, (const int64_t[]){huge, huge}, 2);
    CHECK(ex == NULL && gf_last_status() != GF_OK);
    /* rank above 8 */
    const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    EXPECT_ERR(gf_zeros(nine, 9, GF_F32, NULL), GF_ERR_INVALID, "8");
    gf_tensor *r8 = gf_zeros(nine, 8, GF_F32, NULL);
    CHECK(r8 != NULL);
    gf_clear_error();
    gf_tensor *r9 = gf_unsqueeze(r8, 0);
    CHECK(r9 == NULL && gf_last_status() != GF_OK);
    gf_clear_error();
    gf_tensor *r9b = gf_view(r8, nine, 9);
    CHECK(r9b == NULL && gf_last_status() != GF_OK);
    EXPECT_FAIL(gf_zeros(SZ(2), -1, GF_F32, NULL), GF_ERR_INVALID);
    REL(one, ex, r8, r9, r9b);
}

static void test_bad_dtype_values(void) {
    gf_clear_error();
    gf_tensor *t = gf_zeros(SZ(2), 1, (gf_dtype)42, NULL);
    CHECK(t == NULL && gf_last_status() != GF_OK);
    gf_tensor_release(t);
    /* a dtype the device does not store */
    gf_device_info info;
    CHECK_OK(gf_device_get_info(gf_device_default(), &info));
    if (!(info.dtypes & (1u << GF_F16)))
        EXPECT_ERR(gf_zeros(SZ(2), 1, GF_F16, NULL), GF_ERR_DTYPE, "f16");
    CHECK(strcmp(gf_dtype_name(GF_F32), "f32") == 0);
    CHECK(strcmp(gf_dtype_name(GF_BOOL), "bool") == 0);
    CHECK(strcmp(gf_dtype_name((gf_dtype)42), "?") == 0);
    CHECK(gf_dtype_size(GF_F64) == 8 && gf_dtype_size(GF_I32) == 4 && gf_dtype_size(GF_BOOL) == 1);
    CHECK(gf_dtype_size((gf_dtype)42) == 0);
    CHECK(gf_dtype_is_float(GF_F32) && !gf_dtype_is_float(GF_I64));
}

static void test_null_arguments(void) {
    gf_tensor *t = gf_ones(SZ(2), 1, GF_F32, NULL);
    EXPECT_ERR(gf_add(NULL, t), GF_ERR_INVALID, "add", "NULL");
    EXPECT_ERR(gf_add(t, NULL), GF_ERR_INVALID, "add", "NULL");
    EXPECT_ERR(gf_exp(NULL), GF_ERR_INVALID, "exp");
    EXPECT_ERR(gf_sum(NULL, NULL, 0, false), GF_ERR_INVALID, "sum");
    EXPECT_ERR(gf_cat((gf_tensor *[]){t, NULL}, 2, 0), GF_ERR_INVALID, "cat");
    gf_clear_error();
    CHECK(gf_tensor_to_host(NULL, NULL, 0) == GF_ERR_INVALID);
    double v;
    gf_clear_error();
    CHECK(gf_tensor_item(NULL, &v) == GF_ERR_INVALID);
    gf_tensor *vals = t, *idx = t;
    gf_clear_error();
    CHECK(gf_max_dim(NULL, 0, false, &vals, &idx) == GF_ERR_INVALID);
    CHECK(vals == NULL && idx == NULL);
    gf_tensor_release(NULL); /* harmless */
    gf_clear_error();
    CHECK(gf_tensor_rank(NULL) == 0 && gf_tensor_sizes(NULL) == NULL);
    gf_tensor_release(t);
}

/* The remedy of a NULL argument fits its kind: a function, an output, a
 * string, an array are not tensors (and, never made by graft, are not
 * hidden behind an unread earlier error). */
static void test_null_argument_remedies(void) {
    gf_tensor *t = gf_ones(SZ(2), 1, GF_F32, NULL);
    CHECK(t && gf_tensor_set_requires_grad(t, true) == GF_OK);
    gf_clear_error();
    CHECK(gf_tensor_register_post_accumulate_hook(t, NULL, NULL) == 0);
    CHECK(gf_last_status() == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "gf_tensor_register_post_accumulate_hook: fn is NULL");
    CHECK_CONTAINS(gf_last_error(), "pass the function to call");
    CHECK(strstr(gf_last_error(), "tensor;") == NULL);
    gf_clear_error();
    CHECK(gf_tensor_register_hook(t, NULL, NULL) == 0);
    CHECK_CONTAINS(gf_last_error(), "fn is NULL (pass the function to call)");
    /* a NULL tensor keeps the tensor remedy */
    gf_clear_error();
    CHECK(gf_tensor_register_hook(NULL, NULL, NULL) == 0);
    CHECK_CONTAINS(gf_last_error(), "t is NULL (pass a valid tensor");
    gf_clear_error();
    CHECK(gf_tensor_item(t, NULL) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "value is NULL (pass the address of the variable");
    gf_clear_error();
    CHECK(gf_tensor_to_host(t, NULL, 8) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "dst is NULL (pass the address");
    EXPECT_ERR(gf_einsum(NULL, &t, 1), GF_ERR_INVALID, "equation is NULL",
               "NUL-terminated string");
    EXPECT_ERR(gf_permute(t, NULL, 1), GF_ERR_INVALID, "dims is NULL", "array");
    EXPECT_ERR(gf_from_data(NULL, SZ(2), 1, GF_F32, NULL), GF_ERR_INVALID, "data is NULL",
               "host memory");
    EXPECT_ERR(gf_to_device(t, NULL), GF_ERR_INVALID, "dev is NULL", "gf_device_find");
    /* an unread error does not hide a NULL function: that one is new */
    gf_clear_error();
    CHECK(gf_select(t, 0, 9) == NULL && gf_last_status() == GF_ERR_INDEX);
    CHECK(gf_tensor_register_hook(t, NULL, NULL) == 0);
    CHECK(gf_last_status() == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "fn is NULL");
    gf_clear_error();
    gf_tensor_release(t);
}

static void test_first_error_kept(void) {
    gf_tensor *a = gf_ones(SZ(2, 3), 2, GF_F32, NULL);
    gf_tensor *bad = gf_ones(SZ(4), 1, GF_F32, NULL);
    /* the add fails; exp and sum receive NULL and keep the add's error */
    gf_clear_error();
    gf_tensor *r = gf_exp(gf_add(a, bad));
    CHECK(r == NULL);
    CHECK(gf_last_status() == GF_ERR_SHAPE);
    CHECK_CONTAINS(gf_last_error(), "add");
    CHECK_CONTAINS(gf_last_error(), "[4]");
    gf_clear_error();
    gf_tensor *r2 = gf_sum(gf_mul_scalar(gf_exp(gf_select(a, 0, 7)), 2), NULL, 0, false);
    CHECK(r2 == NULL);
    CHECK(gf_last_status() == GF_ERR_INDEX);
    CHECK_CONTAINS(gf_last_error(), "select");
    /* a later, independent failure after clearing reports itself */
    gf_clear_error();
    CHECK(gf_last_status() == GF_OK);
    CHECK(strcmp(gf_last_error(), "") == 0);
    gf_tensor *r3 = gf_exp(NULL);
    CHECK(r3 == NULL && gf_last_status() == GF_ERR_INVALID);
    /* once read, an error no longer hides a later NULL: the message names
     * the new NULL argument and quotes the earlier error */
    gf_clear_error();
    CHECK(gf_select(a, 0, 9) == NULL);
    CHECK(gf_last_status() == GF_ERR_INDEX); /* read */
    gf_tensor *r4 = gf_add(a, NULL);
    CHECK(r4 == NULL && gf_last_status() == GF_ERR_INDEX);
    CHECK_CONTAINS(gf_last_error(), "add: b is NULL");
    CHECK_CONTAINS(gf_last_error(), "select");
    /* unread, the cause still wins through a chain */
    gf_clear_error();
    CHECK(gf_exp(gf_exp(gf_select(a, 0, 9))) == NULL);
    CHECK(gf_last_status() == GF_ERR_INDEX);
    REL(a, bad);
}

static void test_device_strings(void) {
    gf_device *cpu = gf_device_find("cpu");
    CHECK(cpu != NULL);
    CHECK(cpu == gf_device_find("cpu:0"));
    CHECK(cpu == gf_device_default()); /* GRAFT_DEVICE=cpu in the test environment */
    CHECK(cpu && strcmp(gf_device_spec(cpu), "cpu:0") == 0);
    CHECK(cpu && strcmp(gf_device_type(cpu), "cpu") == 0 && gf_device_index(cpu) == 0);
    CHECK(cpu && strcmp(gf_device_plugin(cpu), "reference") == 0);
    CHECK(gf_device_find("nosuch:0,cpu") == cpu); /* priority list: first available */

    gf_clear_error();
    CHECK(gf_device_find("nosuch:3") == NULL);
    CHECK(gf_last_status() == GF_ERR_NOT_FOUND);
    CHECK_CONTAINS(gf_last_error(), "nosuch:3");
    CHECK_CONTAINS(gf_last_error(), "cpu:0");
    gf_clear_error();
    CHECK(gf_device_find("cpu:7") == NULL);
    CHECK(gf_last_status() == GF_ERR_NOT_FOUND);
    CHECK_CONTAINS(gf_last_error(), "cpu:0");
    gf_clear_error();
    CHECK(gf_device_find("nosuch,alsonot") == NULL);
    CHECK(gf_last_status() == GF_ERR_NOT_FOUND);

    const char *malformed[] = {"", "cpu:", "cpu:x", ":0", "cpu:-1", "cpu:1x", "cpu::0"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        gf_clear_error();
        gf_device *d = gf_device_find(malformed[i]);
        CHECK_MSG(d == NULL && gf_last_status() == GF_ERR_INVALID, "\"%s\": %s", malformed[i],
                  gf_status_name(gf_last_status()));
    }
    gf_clear_error();
    CHECK(gf_device_find(NULL) == NULL && gf_last_status() == GF_ERR_INVALID);
    gf_clear_error();
    CHECK(gf_device_at(-1) == NULL && gf_last_status() == GF_ERR_INDEX);
    gf_clear_error();
    CHECK(gf_device_at(gf_device_count()) == NULL && gf_last_status() == GF_ERR_INDEX);
}

static void test_requires_integer_index(void) {
    gf_tensor *x = gf_zeros(SZ(2, 3), 2, GF_F32, NULL);
    gf_tensor *fi = gf_zeros(SZ(2, 3), 2, GF_F32, NULL);
    EXPECT_ERR(gf_gather(x, 1, fi), GF_ERR_DTYPE, "gather", "f32");
    gf_tensor *f1 = gf_zeros(SZ(2), 1, GF_F64, NULL);
    EXPECT_ERR(gf_index_select(x, 0, f1), GF_ERR_DTYPE, "index_select", "f64");
    EXPECT_ERR(gf_one_hot(f1, 3), GF_ERR_DTYPE, "one_hot");
    REL(x, fi, f1);
}

static void test_empty_reduction(void) {
    gf_tensor *z = gf_zeros(SZ(3, 0), 2, GF_F32, NULL);
    EXPECT_ERR(gf_amax(z, (const int[]){1}, 1, false), GF_ERR_INDEX, "amax");
    EXPECT_ERR(gf_amin(z, NULL, 0, false), GF_ERR_INDEX, "amin");
    EXPECT_ERR(gf_argmax(z, GF_DIM_ALL, false), GF_ERR_INDEX, "argmax");
    gf_tensor_release(z);
}

static void test_other_invalid(void) {
    gf_tensor *x = gf_ones(SZ(2, 3), 2, GF_F32, NULL);
    float buf[6];
    gf_clear_error();
    CHECK(gf_tensor_to_host(x, buf, 5 * sizeof(float)) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "24"); /* the byte count it needs */
    EXPECT_ERR(gf_clamp(x, NAN, NAN), GF_ERR_INVALID, "clamp");
    EXPECT_ERR(gf_dropout(x, 2.0, true), GF_ERR_INVALID, "dropout", "2");
    gf_tensor *out[2] = {NULL, NULL};
    int n = 0;
    gf_clear_error();
    CHECK(gf_split(x, 1, 1, out, 2, &n) == GF_ERR_INVALID);
    CHECK(out[0] == NULL && out[1] == NULL);
    gf_tensor_release(x);
}

/* Errors are per thread: a failure on another thread leaves ours alone. */
static void *fail_on_thread(void *arg) {
    gf_status *st = arg;
    gf_clear_error();
    gf_tensor *t = gf_zeros(SZ(-1), 1, GF_F32, NULL);
    *st = gf_last_status();
    gf_tensor_release(t);
    return NULL;
}

static void test_errors_are_thread_local(void) {
    gf_clear_error();
    gf_status other = GF_OK;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, fail_on_thread, &other) == 0);
    pthread_join(th, NULL);
    CHECK(other == GF_ERR_INVALID);
    CHECK(gf_last_status() == GF_OK);
    CHECK(strcmp(gf_last_error(), "") == 0);
    CHECK(strcmp(gf_status_name(GF_ERR_SHAPE), "GF_ERR_SHAPE") == 0);
    CHECK(gf_status_name((gf_status)-999) != NULL);
}

static void test_shutdown_with_live_tensors(void) {
    gf_tensor *t = ot_make(GF_F32, 1, SZ(2), DV(1.5, 2.5));
    gf_clear_error();
    CHECK(gf_shutdown() == GF_ERR_INVALID);
    CHECK(strlen(gf_last_error()) > 0);
    /* the library stays usable */
    EXPECT_T(t, GF_F32, 1, SZ(2), DV(1.5, 2.5), 0);
    gf_tensor *u = gf_add(t, t);
    EXPECT_T(u, GF_F32, 1, SZ(2), DV(3, 5), 0);
    REL(t, u);
}

int main(void) {
    CHECK(gf_init() == GF_OK);
    RUN(test_shape_mismatch);
    RUN(test_dtype_mismatch);
    RUN(test_device_mismatch);
    RUN(test_dim_out_of_range);
    RUN(test_index_out_of_range);
    RUN(test_bad_sizes);
    RUN(test_bad_dtype_values);
    RUN(test_null_arguments);
    RUN(test_null_argument_remedies);
    RUN(test_first_error_kept);
    RUN(test_device_strings);
    RUN(test_requires_integer_index);
    RUN(test_empty_reduction);
    RUN(test_other_invalid);
    RUN(test_errors_are_thread_local);
    RUN(test_shutdown_with_live_tensors);
    return ot_finish();
}
