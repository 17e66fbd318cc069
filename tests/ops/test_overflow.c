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
    EXPECT_ERR(gf_add_scalar(a, 1e12), GF_ERR_INVALID, "gf_add_scalar", "i32");
    EXPECT_ERR(gf_mul_scalar(c, 1e19), GF_ERR_INVALID, "gf_mul_scalar", "i64");
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

int main(void) {
    RUN(test_fill_value_out_of_range);
    RUN(test_zero_dim_next_to_huge);
    RUN(test_split_huge_size);
    RUN(test_slice_extreme_bounds);
    return ot_finish();
}
