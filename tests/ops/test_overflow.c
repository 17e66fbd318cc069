/* SPDX-License-Identifier: BSD-3-Clause */
/* test_overflow.c — arguments at the edges of int64 and of the dtypes: each
 * call either works or fails with an error naming what overflowed; none
 * computes out of range (this program runs under UBSan in the sanitizer
 * suite, where any overflow aborts it). */
#include <stdint.h>

#include "ops_test.h"

#define BIG INT64_MAX
#define SMALL INT64_MIN

/* A value outside an integer dtype's range is refused, as PyTorch's "value
 * cannot be converted to type int32 without overflow". */
static void test_fill_value_out_of_range(void) {
    EXPECT_ERR(gf_full(SZ(2), 1, 1e10, GF_I32, NULL), GF_ERR_INVALID, "gf_full", "i32",
               "overflow");
    EXPECT_ERR(gf_full(SZ(2), 1, -2147483649.0, GF_I32, NULL), GF_ERR_INVALID, "i32");
    EXPECT_ERR(gf_full(SZ(2), 1, 9.3e18, GF_I64, NULL), GF_ERR_INVALID, "i64");
    EXPECT_ERR(gf_full(SZ(2), 1, 9223372036854775808.0, GF_I64, NULL), GF_ERR_INVALID, "i64");
    EXPECT_ERR(gf_full(SZ(2), 1, NAN, GF_I64, NULL), GF_ERR_INVALID, "nan");
    EXPECT_ERR(gf_full(SZ(2), 1, -INFINITY, GF_I32, NULL), GF_ERR_INVALID, "inf");
    EXPECT_ERR(gf_scalar(3e9, GF_I32, NULL), GF_ERR_INVALID, "i32");
    /* the edges themselves fit (truncated toward zero, as PyTorch) */
    gf_tensor *a = gf_full(SZ(1), 1, 2147483647.0, GF_I32, NULL);
    gf_tensor *b = gf_full(SZ(1), 1, -2147483648.9, GF_I32, NULL);
    gf_tensor *c = gf_full(SZ(1), 1, -9223372036854775808.0, GF_I64, NULL);
    gf_tensor *d = gf_full(SZ(1), 1, 1e300, GF_BOOL, NULL); /* bool: any non-zero is true */
    gf_tensor *e = gf_full(SZ(1), 1, 1e300, GF_F32, NULL);  /* floats: inf, as PyTorch */
    double v = 0;
    CHECK(a && gf_tensor_item(a, &v) == GF_OK && v == 2147483647.0);
    CHECK(b && gf_tensor_item(b, &v) == GF_OK && v == -2147483648.0);
    CHECK(c && gf_tensor_item(c, &v) == GF_OK && v == -9223372036854775808.0);
    CHECK(d && gf_tensor_item(d, &v) == GF_OK && v == 1.0);
    CHECK(e && gf_tensor_item(e, &v) == GF_OK && isinf(v));
    /* the same rule for every way a value reaches an integer tensor */
    gf_tensor *m = gf_full(SZ(1), 1, 1, GF_BOOL, NULL);
    /* a double scalar makes an integer tensor's result f32 (ops.h), so it
     * cannot overflow; an int64 scalar that an i32 tensor cannot hold can */
    gf_tensor *p = gf_add_scalar(a, 1e12), *q = gf_mul_scalar(c, 1e19);
    CHECK(p && gf_tensor_dtype(p) == GF_F32 && q && gf_tensor_dtype(q) == GF_F32);
    REL(p, q);
    EXPECT_ERR(gf_add_scalar_int(a, INT64_C(1) << 40), GF_ERR_OVERFLOW, "gf_add_scalar_int", "i32");
    EXPECT_ERR(gf_masked_fill(a, m, 5e9), GF_ERR_INVALID, "gf_masked_fill");
    gf_clear_error();
    CHECK(gf_fill_(a, 1e10) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "gf_fill_");
    CHECK(gf_masked_fill_(a, m, NAN) != GF_OK);
    REL(a, b, c, d, e, m);
}

/* A zero-size dim next to huge ones: no elements, but contiguous strides
 * that would pass int64. Every creation function refuses it. */
static void test_zero_dim_next_to_huge(void) {
    const int64_t h = INT64_C(1) << 40;
    const int64_t *s = SZ(0, h, h);
    EXPECT_ERR(gf_empty(s, 3, GF_F32, NULL), GF_ERR_OVERFLOW, "gf_empty", "strides");
    EXPECT_FAIL(gf_zeros(s, 3, GF_F32, NULL), GF_ERR_OVERFLOW);
    EXPECT_FAIL(gf_ones(s, 3, GF_I64, NULL), GF_ERR_OVERFLOW);
    EXPECT_FAIL(gf_full(s, 3, 2.0, GF_F64, NULL), GF_ERR_OVERFLOW);
    EXPECT_FAIL(gf_rand(s, 3, GF_F32, NULL), GF_ERR_OVERFLOW);
    EXPECT_FAIL(gf_randn(s, 3, GF_F32, NULL), GF_ERR_OVERFLOW);
    EXPECT_FAIL(gf_bernoulli(s, 3, 0.5, GF_F32, NULL), GF_ERR_OVERFLOW);
    EXPECT_FAIL(gf_from_data(NULL, s, 3, GF_F32, NULL), GF_ERR_OVERFLOW);
    EXPECT_FAIL(gf_from_host_memory(NULL, s, NULL, 3, GF_F32, NULL, NULL, NULL),
                GF_ERR_OVERFLOW);
    /* the same through views of an empty tensor */
    gf_tensor *z = gf_zeros(SZ(0), 1, GF_F32, NULL);
    EXPECT_ERR(gf_reshape(z, SZ(h, 0, h), 3), GF_ERR_OVERFLOW, "gf_reshape");
    EXPECT_FAIL(gf_view(z, SZ(0, h, h), 3), GF_ERR_OVERFLOW);
    EXPECT_FAIL(gf_expand(z, SZ(h, h, 0), 3), GF_ERR_OVERFLOW);
    /* below the limit it works, and its strides are exact */
    gf_tensor *ok = gf_zeros(SZ(0, INT64_C(1) << 20, INT64_C(1) << 20), 3, GF_F32, NULL);
    CHECK(ok && gf_tensor_numel(ok) == 0 && gf_tensor_strides(ok)[0] == INT64_C(1) << 40);
    REL(z, ok);
}

static void test_split_huge_size(void) {
    gf_tensor *x = gf_zeros(SZ(5, 2), 2, GF_F32, NULL);
    gf_tensor *out[4] = {0};
    int n = -7;
    CHECK_OK(gf_split(x, BIG, 0, out, 4, &n));
    CHECK(n == 1 && out[0] && gf_tensor_size(out[0], 0) == 5);
    gf_tensor_release(out[0]);
    CHECK_OK(gf_split(x, BIG - 1, 1, out, 4, &n));
    CHECK(n == 1 && out[0] && gf_tensor_size(out[0], 1) == 2);
    gf_tensor_release(out[0]);
    CHECK_OK(gf_split(x, 2, 0, out, 4, &n));
    CHECK(n == 3 && gf_tensor_size(out[2], 0) == 1);
    REL(out[0], out[1], out[2]);
    CHECK(gf_chunk(x, INT32_MAX, 0, out, 4, &n) == GF_ERR_INVALID); /* 5 pieces of 1, 4 slots */
    REL(x);
}

static void test_slice_extreme_bounds(void) {
    gf_tensor *x = gf_arange(0, 12, 1, GF_F32, NULL);
    gf_tensor *m = gf_reshape(x, SZ(3, 4), 2);
    gf_tensor *a = gf_slice(m, 1, 1, BIG, BIG);       /* one element: [1] */
    gf_tensor *b = gf_slice(m, 1, SMALL, BIG, 3);     /* [0, 3] */
    gf_tensor *c = gf_slice(m, 0, BIG, SMALL, 1);     /* empty */
    gf_tensor *d = gf_slice(m, 1, SMALL, SMALL, BIG); /* empty */
    gf_tensor *e = gf_slice(m, -1, -1, BIG, BIG);     /* the last column */
    CHECK(a && gf_tensor_size(a, 1) == 1 && gf_tensor_size(a, 0) == 3);
    CHECK(b && gf_tensor_size(b, 1) == 2);
    CHECK(c && gf_tensor_size(c, 0) == 0);
    CHECK(d && gf_tensor_size(d, 1) == 0);
    CHECK(e && gf_tensor_size(e, 1) == 1);
    double v = -1;
    CHECK(a && gf_tensor_get(a, SZ(2, 0), &v) == GF_OK && v == 9);
    CHECK(b && gf_tensor_get(b, SZ(1, 1), &v) == GF_OK && v == 7);
    CHECK(e && gf_tensor_get(e, SZ(1, 0), &v) == GF_OK && v == 7);
    /* contiguous copies of them read the same elements */
    gf_tensor *ac = a ? gf_contiguous(a) : NULL;
    CHECK(ac && gf_tensor_get(ac, SZ(1, 0), &v) == GF_OK && v == 5);
    EXPECT_FAIL(gf_narrow(m, 1, BIG, 1), GF_ERR_INDEX);
    EXPECT_FAIL(gf_narrow(m, 1, 1, BIG), GF_ERR_INDEX);
    EXPECT_FAIL(gf_narrow(m, 1, SMALL, 1), GF_ERR_INDEX);
    EXPECT_FAIL(gf_select(m, 0, SMALL), GF_ERR_INDEX);
    EXPECT_FAIL(gf_select(m, 0, BIG), GF_ERR_INDEX);
    REL(x, m, a, b, c, d, e, ac);
}

static void test_diagonal_extreme_offsets(void) {
    gf_tensor *x = gf_arange(0, 12, 1, GF_F32, NULL);
    gf_tensor *m = gf_reshape(x, SZ(3, 4), 2);
    const int64_t offs[] = {BIG, BIG - 1, SMALL, SMALL + 1, 3, -2, 4, -3};
    const int64_t want[] = {0, 0, 0, 0, 1, 1, 0, 0};
    const int64_t want_swapped[] = {0, 0, 0, 0, 0, 2, 0, 1};
    for (int i = 0; i < 8; i++) {
        gf_clear_error();
        gf_tensor *d = gf_diagonal(m, offs[i], 0, 1);
        CHECK_MSG(d && gf_tensor_size(d, 0) == want[i], "offset %lld: %s", (long long)offs[i],
                  gf_last_error());
        gf_tensor *t = gf_diagonal(m, offs[i], 1, 0);
        CHECK_MSG(t && gf_tensor_numel(t) == want_swapped[i], "offset %lld swapped",
                  (long long)offs[i]);
        REL(d, t);
    }
    gf_tensor *d = gf_diagonal(m, -2, 0, 1);
    double v = -1;
    CHECK(d && gf_tensor_get(d, SZ(0), &v) == GF_OK && v == 8);
    gf_tensor *t = gf_tril(m, BIG), *u = gf_triu(m, SMALL), *w = gf_tril(m, SMALL);
    gf_tensor *z = gf_triu(m, BIG);
    CHECK(t && gf_tensor_get(t, SZ(0, 3), &v) == GF_OK && v == 3);
    CHECK(u && gf_tensor_get(u, SZ(2, 0), &v) == GF_OK && v == 8);
    CHECK(w && gf_tensor_get(w, SZ(2, 0), &v) == GF_OK && v == 0);
    CHECK(z && gf_tensor_get(z, SZ(0, 3), &v) == GF_OK && v == 0);
    REL(x, m, d, t, u, w, z);
}

/* Indices at INT64_MAX / INT64_MIN: INDEX errors with the exact value. */
static void test_index_extremes(void) {
    gf_tensor *w = gf_zeros(SZ(4, 3), 2, GF_F32, NULL);
    gf_tensor *big = gf_from_data((const int64_t[]){0, BIG}, SZ(2), 1, GF_I64, NULL);
    gf_tensor *small = gf_from_data((const int64_t[]){SMALL, 1}, SZ(2), 1, GF_I64, NULL);
    EXPECT_ERR(gf_index_select(w, 0, big), GF_ERR_INDEX, "index_select", "9223372036854775807");
    EXPECT_ERR(gf_index_select(w, 0, small), GF_ERR_INDEX, "-9223372036854775808");
    EXPECT_ERR(gf_embedding(w, big), GF_ERR_INDEX, "embedding", "9223372036854775807");
    EXPECT_ERR(gf_embedding(w, small), GF_ERR_INDEX, "embedding");
    EXPECT_ERR(gf_one_hot(big, -1), GF_ERR_INDEX, "one_hot", "9223372036854775807");
    EXPECT_ERR(gf_one_hot(big, 5), GF_ERR_INDEX, "one_hot", "9223372036854775807");
    EXPECT_ERR(gf_one_hot(small, -1), GF_ERR_INDEX, "one_hot", "-9223372036854775808");
    gf_tensor *zero = gf_zeros(SZ(1), 1, GF_I64, NULL);
    EXPECT_FAIL(gf_one_hot(zero, BIG), GF_ERR_OVERFLOW);
    /* an index that rounds in a double is still told exactly */
    gf_tensor *near = gf_from_data((const int64_t[]){BIG - 1}, SZ(1), 1, GF_I64, NULL);
    EXPECT_ERR(gf_index_select(w, 0, near), GF_ERR_INDEX, "9223372036854775806");
    EXPECT_FAIL(gf_one_hot(near, -1), GF_ERR_OVERFLOW); /* 2^63 - 1 classes */
    gf_tensor *i32 = gf_from_data((const int32_t[]){INT32_MAX}, SZ(1), 1, GF_I32, NULL);
    EXPECT_ERR(gf_index_select(w, 1, i32), GF_ERR_INDEX, "2147483647");
    REL(w, big, small, near, i32, zero);
}

static void test_conv_backward_huge_sizes(void) {
    gf_tensor *gy = gf_zeros(SZ(1, 1, 1, 1), 4, GF_F32, NULL);
    gf_tensor *w = gf_zeros(SZ(1, 1, 1, 1), 4, GF_F32, NULL);
    gf_tensor *x = gf_zeros(SZ(1, 1, 1, 1), 4, GF_F32, NULL);
    gf_conv2d_opts dil = {.stride = {1, 1}, .dilation = {INT32_MAX, INT32_MAX}, .groups = 1};
    gf_conv2d_opts pad = {.stride = {1, 1}, .padding = {INT32_MAX, INT32_MAX}, .groups = 1};
    gf_conv2d_opts grp = {.groups = INT32_MAX};
    EXPECT_FAIL(gf_conv2d_backward_input(gy, w, SZ(1, 1, BIG, BIG), NULL), GF_ERR_SHAPE);
    EXPECT_FAIL(gf_conv2d_backward_input(gy, w, SZ(1, 1, BIG, BIG), &pad), GF_ERR_OVERFLOW);
    EXPECT_FAIL(gf_conv2d_backward_input(gy, w, SZ(BIG, BIG, BIG, BIG), &grp), GF_ERR_SHAPE);
    EXPECT_FAIL(gf_conv2d_backward_weight(gy, x, SZ(1, 1, BIG, BIG), NULL), GF_ERR_SHAPE);
    EXPECT_FAIL(gf_conv2d_backward_weight(gy, x, SZ(1, 1, BIG, 1), &dil), GF_ERR_OVERFLOW);
    EXPECT_FAIL(gf_conv2d_backward_weight(gy, x, SZ(1, BIG, 1, 1), NULL), GF_ERR_SHAPE);
    EXPECT_ERR(gf_conv2d_backward_weight(gy, x, SZ(INT32_MAX, BIG, 1, 1), &grp), GF_ERR_SHAPE,
               "channels");
    /* a zero-size weight with a huge kernel dim, through the forward op */
    gf_tensor *w0 = gf_zeros(SZ(0, 1, INT64_C(1) << 40, 1), 4, GF_F32, NULL);
    EXPECT_FAIL(gf_conv2d(x, w0, NULL, &dil), GF_ERR_SHAPE);
    /* a 1x1 kernel with the largest dilation is valid (one tap, no gaps):
     * the same result as dilation 1, on every kernel (cpu_onednn's JIT read
     * out of bounds) */
    gf_tensor *xi = gf_ones(SZ(1, 2, 5, 5), 4, GF_F32, NULL);
    gf_tensor *w1 = gf_full(SZ(3, 2, 1, 1), 4, 0.5, GF_F32, NULL);
    gf_conv2d_opts d1 = {.stride = {2, 2}, .padding = {2, 2}, .dilation = {1, 1}, .groups = 1};
    gf_conv2d_opts dm = {.stride = {2, 2}, .padding = {2, 2}, .dilation = {INT32_MAX, INT32_MAX},
                         .groups = 1};
    gf_tensor *y1 = gf_conv2d(xi, w1, NULL, &d1), *ym = gf_conv2d(xi, w1, NULL, &dm);
    CHECK_MSG(y1 && ym, "%s", gf_last_error());
    gf_tensor *d = (y1 && ym) ? gf_sub(y1, ym) : NULL;
    gf_tensor *ad = d ? gf_abs(d) : NULL;
    gf_tensor *sd = ad ? gf_sum(ad, NULL, 0, false) : NULL;
    double diff = -1;
    CHECK(sd && gf_tensor_item(sd, &diff) == GF_OK && diff == 0.0);
    if (y1) {
        double total = 0;
        gf_tensor *s1 = gf_sum(y1, NULL, 0, false);
        CHECK(s1 && gf_tensor_item(s1, &total) == GF_OK && total > 0); /* not all padding */
        gf_tensor_release(s1);
    }
    REL(gy, w, x, w0, xi, w1, y1, ym, d, ad, sd);
}

/* A ceil-mode window far larger than the input: one output, found without
 * visiting the window's 2^62 taps. */
static void test_pool_huge_kernel(void) {
    gf_tensor *a = gf_arange(0, 16, 1, GF_F32, NULL);
    gf_tensor *x = gf_reshape(a, SZ(1, 1, 4, 4), 4);
    gf_pool2d_opts o = {.kernel = {INT32_MAX, INT32_MAX}, .ceil_mode = true};
    gf_tensor *idx = NULL;
    gf_tensor *y = gf_max_pool2d(x, &o, &idx), *av = gf_avg_pool2d(x, &o);
    double v = -1;
    CHECK_MSG(y && gf_tensor_numel(y) == 1 && gf_tensor_item(y, &v) == GF_OK && v == 15, "%s",
              gf_last_error());
    CHECK(idx && gf_tensor_item(idx, &v) == GF_OK && v == 15);
    CHECK(av && gf_tensor_item(av, &v) == GF_OK && v == 7.5);
    o.dilation[0] = o.dilation[1] = 2;
    o.kernel[0] = o.kernel[1] = 1 << 30;
    EXPECT_FAIL(gf_max_pool2d(x, &o, NULL), GF_ERR_SHAPE); /* the dilated window cannot fit */
    REL(a, x, y, idx, av);
}

/* Sizes that add up past int64 in cat. */
static void test_cat_size_sum(void) {
    const int64_t h = INT64_C(1) << 58;
    gf_tensor *p = gf_zeros(SZ(0, h), 2, GF_F32, NULL);
    gf_tensor *parts[40];
    for (int i = 0; i < 40; i++) parts[i] = p;
    EXPECT_ERR(gf_cat(parts, 40, 1), GF_ERR_OVERFLOW, "cat", "dim 1");
    EXPECT_FAIL(gf_cat(parts, 8, 1), GF_ERR_OVERFLOW); /* 2^61: past the 2^59 limit */
    gf_tensor *y = gf_cat(parts, 1, 1);
    CHECK(y && gf_tensor_size(y, 1) == h);
    REL(p, y);
}

/* Adopted memory may give a size-1 dim any stride: views of it stay exact. */
static void test_adopted_huge_stride(void) {
    static float data[6] = {0, 1, 2, 3, 4, 5};
    gf_tensor *t = gf_from_host_memory(data, SZ(6, 1), SZ(1, BIG), 2, GF_F32, NULL, NULL, NULL);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    gf_tensor *v = t ? gf_view(t, SZ(2, 3), 2) : NULL;
    CHECK_MSG(v != NULL, "%s", gf_last_error());
    gf_tensor *r = t ? gf_reshape(t, SZ(3, 2, 1), 3) : NULL;
    double x = -1;
    CHECK(v && gf_tensor_get(v, SZ(1, 2), &x) == GF_OK && x == 5);
    CHECK(r && gf_tensor_get(r, SZ(2, 1, 0), &x) == GF_OK && x == 5);
    gf_tensor *u = t ? gf_unsqueeze(t, 2) : NULL;
    gf_tensor *s = u ? gf_slice(u, 0, 5, BIG, BIG) : NULL;
    CHECK(s && gf_tensor_get(s, SZ(0, 0, 0), &x) == GF_OK && x == 5);
    gf_tensor *f = s ? gf_flatten(s) : NULL;
    CHECK(f && gf_tensor_numel(f) == 1);
    gf_tensor *e = u ? gf_slice(u, 0, 6, 6, 1) : NULL;
    CHECK(e && gf_tensor_numel(e) == 0);
    /* the diagonal of size-1 dims whose strides add past int64 */
    gf_tensor *one = gf_from_host_memory(data, SZ(1, 1), SZ(BIG, BIG), 2, GF_F32, NULL, NULL,
                                         NULL);
    gf_tensor *dg = one ? gf_diagonal(one, 0, 0, 1) : NULL;
    CHECK(dg && gf_tensor_get(dg, SZ(0), &x) == GF_OK && x == 0);
    gf_tensor *sum = dg ? gf_sum(dg, NULL, 0, false) : NULL;
    CHECK(sum && gf_tensor_item(sum, &x) == GF_OK && x == 0);
    REL(t, v, r, u, s, f, e, one, dg, sum);
}

/* A class id at the ends of int64: the message names it exactly (read as a
 * double, INT64_MAX rounds to 2^63, which converting back to long long
 * would not survive). */
static void test_cross_entropy_extreme_target(void) {
    gf_tensor *lg = gf_zeros(SZ(1, 3), 2, GF_F32, NULL);
    int64_t n1 = 1;
    gf_tensor *tmax = gf_from_data((const int64_t[]){INT64_MAX}, &n1, 1, GF_I64, NULL);
    gf_tensor *tmin = gf_from_data((const int64_t[]){INT64_MIN}, &n1, 1, GF_I64, NULL);
    CHECK_MSG(lg && tmax && tmin, "%s", gf_last_error());
    EXPECT_ERR(gf_cross_entropy(lg, tmax, NULL, GF_REDUCTION_MEAN, -100, 0), GF_ERR_INDEX,
               "target 9223372036854775807 is out of bounds", "[0, 3)");
    EXPECT_ERR(gf_cross_entropy(lg, tmin, NULL, GF_REDUCTION_MEAN, -100, 0), GF_ERR_INDEX,
               "target -9223372036854775808 is out of bounds");
    EXPECT_ERR(gf_nll_loss(lg, tmax, NULL, GF_REDUCTION_SUM, -100), GF_ERR_INDEX,
               "target 9223372036854775807");
    REL(lg, tmax, tmin);
}

int main(void) {
    RUN(test_fill_value_out_of_range);
    RUN(test_zero_dim_next_to_huge);
    RUN(test_split_huge_size);
    RUN(test_slice_extreme_bounds);
    RUN(test_diagonal_extreme_offsets);
    RUN(test_index_extremes);
    RUN(test_conv_backward_huge_sizes);
    RUN(test_pool_huge_kernel);
    RUN(test_cat_size_sum);
    RUN(test_adopted_huge_stride);
    RUN(test_cross_entropy_extreme_target);
    return ot_finish();
}
