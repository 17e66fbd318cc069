/* SPDX-License-Identifier: BSD-3-Clause */
/* test_shape_errors.c — every error path of graft/shape.h: bad dims, bad
 * shapes, bad dtypes, k / sizes / pads / q out of range, overflowing sizes,
 * malformed einsum equations. Each failure must return NULL (or a failure
 * status) with the right status and a message naming the op. */
#include <math.h>
#include <stdint.h>

#include "shape_test.h"

/* A status-returning call fails with st and a message holding the words. */
#define EXPECT_SERR(expr, st, ...)                                                         \
    do {                                                                                   \
        gf_clear_error();                                                                  \
        gf_status s_r_ = (expr);                                                           \
        CHECK_MSG(s_r_ == (st) && gf_last_status() == (st), "got %s (%s), expected %s",    \
                  gf_status_name(s_r_), gf_last_error(), gf_status_name(st));              \
        const char *s_words_[] = {__VA_ARGS__};                                            \
        for (size_t s_i_ = 0; s_i_ < sizeof s_words_ / sizeof s_words_[0]; s_i_++)         \
            CHECK_CONTAINS(gf_last_error(), s_words_[s_i_]);                               \
    } while (0)

#define I1(...) ((const int[]){__VA_ARGS__})

static gf_tensor *X; /* f32 [2, 3] */

static void test_reduce_errors(void) {
    gf_scope_begin();
    EXPECT_ERR(gf_all(NULL, NULL, 0, false), GF_ERR_INVALID, "all", "x");
    EXPECT_ERR(gf_all(X, I1(2), 1, false), GF_ERR_INDEX, "all");
    EXPECT_ERR(gf_any(X, I1(1, -1), 2, false), GF_ERR_INVALID, "any", "twice");
    EXPECT_ERR(gf_any(X, I1(0, 1, 0), 3, false), GF_ERR_INVALID, "any", "rank");
    EXPECT_ERR(gf_count_nonzero(X, NULL, 1), GF_ERR_INVALID, "count_nonzero", "NULL");
    EXPECT_ERR(gf_count_nonzero(X, I1(-3), 1), GF_ERR_INDEX, "count_nonzero");
    gf_tensor *xi = gf_zeros(SZ(3), 1, GF_I64, NULL);
    EXPECT_ERR(gf_vector_norm(xi, 2, NULL, 0, false), GF_ERR_DTYPE, "vector_norm", "float");
    EXPECT_ERR(gf_norm(X, NAN, NULL, 0, false), GF_ERR_INVALID, "norm", "NaN");
    EXPECT_ERR(gf_vector_norm(X, 2, I1(5), 1, false), GF_ERR_INDEX, "vector_norm");
    gf_tensor *e = gf_zeros(SZ(2, 0), 2, GF_F32, NULL);
    EXPECT_ERR(gf_vector_norm(e, INFINITY, I1(1), 1, false), GF_ERR_INDEX, "vector_norm",
               "size 0");
    EXPECT_ERR(gf_vector_norm(e, -INFINITY, NULL, 0, false), GF_ERR_INDEX, "vector_norm");
    gf_tensor *a = NULL, *b = NULL;
    EXPECT_SERR(gf_aminmax(X, 0, false, NULL, &b), GF_ERR_INVALID, "aminmax");
    EXPECT_SERR(gf_aminmax(X, 2, false, &a, &b), GF_ERR_INDEX, "aminmax");
    EXPECT_SERR(gf_aminmax(e, 1, false, &a, &b), GF_ERR_INDEX, "aminmax", "size 0");
    EXPECT_SERR(gf_aminmax(e, GF_DIM_ALL, false, &a, &b), GF_ERR_INDEX, "aminmax");
    EXPECT_SERR(gf_aminmax(NULL, 0, false, &a, &b), GF_ERR_INVALID, "aminmax");
    CHECK(a == NULL && b == NULL);
    gf_scope_end();
}

static void test_scan_sort_errors(void) {
    gf_scope_begin();
    EXPECT_ERR(gf_cumsum(X, 2), GF_ERR_INDEX, "cumsum");
    EXPECT_ERR(gf_cumprod(X, -3), GF_ERR_INDEX, "cumprod");
    EXPECT_ERR(gf_cumsum(NULL, 0), GF_ERR_INVALID, "cumsum");
    gf_tensor *xi = gf_zeros(SZ(3), 1, GF_I32, NULL);
    EXPECT_ERR(gf_logcumsumexp(xi, 0), GF_ERR_DTYPE, "logcumsumexp", "f32, f64, f16 or bf16");
    gf_tensor *v = NULL, *i = NULL;
    EXPECT_SERR(gf_sort(X, 2, false, &v, &i), GF_ERR_INDEX, "sort");
    EXPECT_SERR(gf_sort(X, 0, false, NULL, NULL), GF_ERR_INVALID, "sort");
    EXPECT_SERR(gf_sort(NULL, 0, false, &v, &i), GF_ERR_INVALID, "sort");
    EXPECT_ERR(gf_argsort(X, -3, false), GF_ERR_INDEX, "argsort");
    EXPECT_SERR(gf_topk(X, 4, 1, true, true, &v, &i), GF_ERR_INDEX, "topk", "k = 4",
                "0 <= k <= 3");
    EXPECT_SERR(gf_topk(X, -1, 1, true, true, &v, &i), GF_ERR_INDEX, "topk", "k = -1");
    EXPECT_SERR(gf_topk(X, 1, 5, true, true, &v, &i), GF_ERR_INDEX, "topk");
    EXPECT_SERR(gf_topk(X, 1, 0, true, true, NULL, NULL), GF_ERR_INVALID, "topk");
    gf_tensor *s = gf_scalar(1, GF_F32, NULL);
    EXPECT_SERR(gf_topk(s, 0, 0, true, true, &v, &i), GF_ERR_INDEX, "topk", "0-dim");
    gf_tensor *e = gf_zeros(SZ(2, 0), 2, GF_F32, NULL);
    EXPECT_SERR(gf_median_dim(e, 1, false, &v, &i), GF_ERR_INDEX, "median", "size 0");
    EXPECT_SERR(gf_median_dim(X, 3, false, &v, &i), GF_ERR_INDEX, "median");
    EXPECT_SERR(gf_median_dim(X, 0, false, NULL, NULL), GF_ERR_INVALID, "median");
    EXPECT_ERR(gf_median(gf_zeros(SZ(0), 1, GF_I64, NULL)), GF_ERR_INDEX, "median");
    EXPECT_ERR(gf_median(NULL), GF_ERR_INVALID, "median");
    CHECK(v == NULL && i == NULL);
    /* quantile */
    EXPECT_ERR(gf_quantile_scalar(X, 1.5, 0, false, GF_QUANTILE_LINEAR), GF_ERR_INVALID,
               "quantile", "[0, 1]");
    EXPECT_ERR(gf_quantile_scalar(X, NAN, 0, false, GF_QUANTILE_LINEAR), GF_ERR_INVALID,
               "quantile");
    EXPECT_ERR(gf_quantile_scalar(X, 0.5, 2, false, GF_QUANTILE_LINEAR), GF_ERR_INDEX,
               "quantile");
    EXPECT_ERR(gf_quantile_scalar(X, 0.5, 0, false, (gf_quantile_interp)9), GF_ERR_INVALID,
               "quantile", "interpolation");
    EXPECT_ERR(gf_quantile_scalar(xi, 0.5, 0, false, GF_QUANTILE_LINEAR), GF_ERR_DTYPE,
               "quantile");
    EXPECT_ERR(gf_quantile_scalar(e, 0.5, 1, false, GF_QUANTILE_LINEAR), GF_ERR_INDEX,
               "quantile", "no element");
    if (has_f64)
        EXPECT_ERR(gf_quantile(X, gf_scalar(0.5, GF_F64, NULL), 0, false, GF_QUANTILE_LINEAR),
                   GF_ERR_DTYPE, "quantile", "q");
    EXPECT_ERR(gf_quantile(X, gf_zeros(SZ(1, 1), 2, GF_F32, NULL), 0, false, GF_QUANTILE_LINEAR),
               GF_ERR_SHAPE, "quantile", "0-dim or 1-D");
    EXPECT_ERR(gf_quantile(X, NULL, 0, false, GF_QUANTILE_LINEAR), GF_ERR_INVALID, "quantile");
    gf_scope_end();
}

static void test_shape_errors(void) {
    gf_scope_begin();
    EXPECT_ERR(gf_flip(X, NULL, 1), GF_ERR_INVALID, "flip", "NULL");
    EXPECT_ERR(gf_flip(X, I1(2), 1), GF_ERR_INDEX, "flip");
    EXPECT_ERR(gf_flip(X, I1(0, 0), 2), GF_ERR_INVALID, "flip", "twice");
    EXPECT_ERR(gf_roll(X, NULL, 0, NULL, 0), GF_ERR_INVALID, "roll", "shifts");
    EXPECT_ERR(gf_roll(X, SZ(1, 2), 2, I1(0), 1), GF_ERR_INVALID, "roll", "same length");
    EXPECT_ERR(gf_roll(X, SZ(1, 2), 2, NULL, 0), GF_ERR_INVALID, "roll");
    EXPECT_ERR(gf_roll(X, SZ(1), 1, I1(4), 1), GF_ERR_INDEX, "roll");
    EXPECT_ERR(gf_repeat(X, SZ(2), 1), GF_ERR_INVALID, "repeat", "rank");
    EXPECT_ERR(gf_repeat(X, SZ(2, -1), 2), GF_ERR_INVALID, "repeat", ">= 0");
    EXPECT_ERR(gf_repeat(X, SZ(INT64_MAX / 2, 1), 2), GF_ERR_OVERFLOW, "repeat");
    EXPECT_ERR(gf_repeat(X, SZ((int64_t)1 << 40, (int64_t)1 << 20), 2), GF_ERR_OVERFLOW, "repeat");
    EXPECT_ERR(gf_tile(X, SZ(1, 1, 1, 1, 1, 1, 1, 1, 1), 9), GF_ERR_INVALID, "tile");
    EXPECT_ERR(gf_repeat_interleave(X, -1, 0), GF_ERR_INVALID, "repeat_interleave", ">= 0");
    EXPECT_ERR(gf_repeat_interleave(X, 1, 2), GF_ERR_INDEX, "repeat_interleave");
    EXPECT_ERR(gf_repeat_interleave(X, INT64_MAX, 1), GF_ERR_OVERFLOW, "repeat_interleave");
    gf_tensor *rf = gf_ones(SZ(3), 1, GF_F32, NULL);
    EXPECT_ERR(gf_repeat_interleave_tensor(X, rf, 1), GF_ERR_DTYPE, "repeat_interleave");
    gf_tensor *r2 = gf_ones(SZ(2), 1, GF_I64, NULL);
    EXPECT_ERR(gf_repeat_interleave_tensor(X, r2, 1), GF_ERR_SHAPE, "repeat_interleave",
               "1 or 3");
    EXPECT_ERR(gf_repeat_interleave_tensor(X, NULL, 1), GF_ERR_INVALID, "repeat_interleave");
    /* pad */
    EXPECT_ERR(gf_pad(X, SZ(1, 1, 1), 3, GF_PAD_CONSTANT, 0), GF_ERR_INVALID, "pad", "even");
    EXPECT_ERR(gf_pad(X, SZ(1, 1, 1, 1, 1, 1), 6, GF_PAD_CONSTANT, 0), GF_ERR_INVALID, "pad");
    EXPECT_ERR(gf_pad(X, SZ(3, 0), 2, GF_PAD_REFLECT, 0), GF_ERR_INVALID, "pad", "reflect",
               "< size");
    EXPECT_ERR(gf_pad(X, SZ(0, 0, 0, 3), 4, GF_PAD_CIRCULAR, 0), GF_ERR_INVALID, "pad",
               "circular");
    EXPECT_ERR(gf_pad(X, SZ(-1, 0), 2, GF_PAD_REPLICATE, 0), GF_ERR_INVALID, "pad", "replicate");
    gf_tensor *e = gf_zeros(SZ(2, 0), 2, GF_F32, NULL);
    EXPECT_ERR(gf_pad(e, SZ(1, 0), 2, GF_PAD_REPLICATE, 0), GF_ERR_INVALID, "pad", "non-empty");
    EXPECT_ERR(gf_pad(X, SZ(-2, -2), 2, GF_PAD_CONSTANT, 0), GF_ERR_SHAPE, "pad", "negative");
    EXPECT_ERR(gf_pad(X, SZ(INT64_MAX, 1), 2, GF_PAD_CONSTANT, 0), GF_ERR_OVERFLOW, "pad");
    EXPECT_ERR(gf_pad(X, SZ(1, 1), 2, (gf_pad_mode)7, 0), GF_ERR_INVALID, "pad", "mode");
    gf_tensor *xi = gf_zeros(SZ(2), 1, GF_I32, NULL);
    EXPECT_ERR(gf_pad(xi, SZ(1, 1), 2, GF_PAD_CONSTANT, 1e20), GF_ERR_INVALID, "pad");
    /* unbind, split_with_sizes, unfold */
    gf_tensor *out[4];
    int n = 0;
    EXPECT_SERR(gf_unbind(gf_scalar(1, GF_F32, NULL), 0, out, 4, &n), GF_ERR_INDEX, "unbind",
                "0-dim");
    EXPECT_SERR(gf_unbind(X, 1, out, 2, &n), GF_ERR_INVALID, "unbind", "max_out");
    EXPECT_SERR(gf_unbind(X, 2, out, 4, &n), GF_ERR_INDEX, "unbind");
    EXPECT_SERR(gf_unbind(X, 0, NULL, 4, &n), GF_ERR_INVALID, "unbind");
    EXPECT_SERR(gf_split_with_sizes(X, SZ(1, 1), 2, 1, out, 4), GF_ERR_SHAPE,
                "split_with_sizes", "sum to 2");
    EXPECT_SERR(gf_split_with_sizes(X, SZ(4, -1), 2, 1, out, 4), GF_ERR_INVALID,
                "split_with_sizes", "negative");
    EXPECT_SERR(gf_split_with_sizes(X, SZ(1, 1, 1), 3, 1, out, 2), GF_ERR_INVALID,
                "split_with_sizes", "max_out");
    EXPECT_SERR(gf_split_with_sizes(X, SZ(INT64_MAX, 1), 2, 1, out, 4), GF_ERR_OVERFLOW,
                "split_with_sizes");
    EXPECT_SERR(gf_split_with_sizes(gf_scalar(1, GF_F32, NULL), SZ(1), 1, 0, out, 4),
                GF_ERR_INDEX, "split_with_sizes");
    EXPECT_SERR(gf_split_with_sizes(X, SZ(3), 1, 2, out, 4), GF_ERR_INDEX, "split_with_sizes");
    EXPECT_ERR(gf_unfold(X, 1, 4, 1), GF_ERR_INVALID, "unfold", "size 4");
    EXPECT_ERR(gf_unfold(X, 1, 2, 0), GF_ERR_INVALID, "unfold", "step");
    EXPECT_ERR(gf_unfold(X, 2, 1, 1), GF_ERR_INDEX, "unfold");
    gf_tensor *r8 = gf_zeros(SZ(1, 1, 1, 1, 1, 1, 1, 2), 8, GF_F32, NULL);
    EXPECT_ERR(gf_unfold(r8, 7, 1, 1), GF_ERR_SHAPE, "unfold", "rank");
    gf_scope_end();
}

static void test_index_errors(void) {
    gf_scope_begin();
    gf_tensor *fi = gf_zeros(SZ(2, 1), 2, GF_F32, NULL);
    EXPECT_ERR(gf_take_along_dim(X, fi, 1), GF_ERR_DTYPE, "take_along_dim");
    gf_tensor *i1 = gf_zeros(SZ(2), 1, GF_I64, NULL);
    EXPECT_ERR(gf_take_along_dim(X, i1, 1), GF_ERR_SHAPE, "take_along_dim", "same number");
    gf_tensor *i3 = gf_zeros(SZ(3, 1), 2, GF_I64, NULL);
    EXPECT_ERR(gf_take_along_dim(X, i3, 1), GF_ERR_SHAPE, "take_along_dim");
    EXPECT_ERR(gf_take_along_dim(X, gf_zeros(SZ(2, 1), 2, GF_I64, NULL), 2), GF_ERR_INDEX,
               "take_along_dim");
    EXPECT_ERR(gf_take_along_dim(X, gf_full(SZ(2, 1), 2, 3, GF_I64, NULL), 1), GF_ERR_INDEX,
               "index");
    EXPECT_ERR(gf_take_along_dim(NULL, i1, 1), GF_ERR_INVALID, "take_along_dim");
    /* scatter */
    gf_tensor *src = gf_ones(SZ(2, 3), 2, GF_F32, NULL);
    EXPECT_ERR(gf_scatter(X, 1, gf_full(SZ(2, 1), 2, 3, GF_I64, NULL), src), GF_ERR_INDEX,
               "scatter", "out of range");
    EXPECT_ERR(gf_scatter(X, 1, gf_full(SZ(2, 1), 2, -1, GF_I64, NULL), src), GF_ERR_INDEX,
               "scatter");
    EXPECT_ERR(gf_scatter(X, 1, gf_zeros(SZ(3, 1), 2, GF_I64, NULL), src), GF_ERR_SHAPE,
               "scatter", "larger");
    EXPECT_ERR(gf_scatter(X, 1, gf_zeros(SZ(2, 4), 2, GF_I64, NULL), src), GF_ERR_SHAPE,
               "scatter", "src");
    EXPECT_ERR(gf_scatter(X, 1, i1, src), GF_ERR_SHAPE, "scatter", "dims");
    EXPECT_ERR(gf_scatter(X, 1, fi, src), GF_ERR_DTYPE, "scatter");
    EXPECT_ERR(gf_scatter(X, 1, i3, gf_ones(SZ(2, 3), 2, GF_I64, NULL)), GF_ERR_DTYPE,
               "scatter", "src");
    EXPECT_ERR(gf_scatter(X, 2, i3, src), GF_ERR_INDEX, "scatter");
    EXPECT_ERR(gf_scatter(X, 1, i3, NULL), GF_ERR_INVALID, "scatter", "src");
    EXPECT_ERR(gf_scatter_value(gf_zeros(SZ(2), 1, GF_I32, NULL), 0, i1, 1e20), GF_ERR_INVALID,
               "scatter");
    /* nonzero, masked_select, masked_scatter */
    EXPECT_ERR(gf_nonzero(NULL), GF_ERR_INVALID, "nonzero");
    gf_tensor *m3 = gf_ones(SZ(3), 1, GF_BOOL, NULL), *m4 = gf_ones(SZ(4), 1, GF_BOOL, NULL);
    EXPECT_ERR(gf_masked_select(X, gf_ones(SZ(3), 1, GF_F32, NULL)), GF_ERR_DTYPE,
               "masked_select", "bool");
    EXPECT_ERR(gf_masked_select(X, m4), GF_ERR_SHAPE, "masked_select");
    EXPECT_ERR(gf_masked_scatter(X, m3, gf_ones(SZ(5), 1, GF_F32, NULL)), GF_ERR_SHAPE,
               "masked_scatter", "6 true", "only 5");
    EXPECT_ERR(gf_masked_scatter(X, gf_ones(SZ(3, 2, 3), 3, GF_BOOL, NULL), src), GF_ERR_SHAPE,
               "masked_scatter", "broadcast");
    EXPECT_ERR(gf_masked_scatter(X, m3, gf_ones(SZ(6), 1, GF_I64, NULL)), GF_ERR_DTYPE,
               "masked_scatter");
    EXPECT_ERR(gf_masked_scatter(X, m4, src), GF_ERR_SHAPE, "masked_scatter");
    /* index_put */
    gf_tensor *v1 = gf_ones(SZ(1), 1, GF_F32, NULL);
    EXPECT_ERR(gf_index_put(X, NULL, 0, v1, false), GF_ERR_INVALID, "index_put");
    gf_tensor *big = gf_full(SZ(1), 1, 2, GF_I64, NULL), *neg = gf_full(SZ(1), 1, -3, GF_I64, NULL);
    EXPECT_ERR(gf_index_put(X, (gf_tensor *[]){big}, 1, v1, false), GF_ERR_INDEX, "index_put",
               "out of bounds");
    EXPECT_ERR(gf_index_put(X, (gf_tensor *[]){neg}, 1, v1, true), GF_ERR_INDEX, "index_put");
    EXPECT_ERR(gf_index_put(X, (gf_tensor *[]){i1, i1, i1}, 3, v1, false), GF_ERR_INDEX,
               "index_put");
    EXPECT_ERR(gf_index_put(X, (gf_tensor *[]){i1}, 1, gf_ones(SZ(2), 1, GF_F32, NULL), false),
               GF_ERR_SHAPE, "index_put", "broadcast");
    gf_tensor *i3f = gf_zeros(SZ(3), 1, GF_I64, NULL);
    EXPECT_ERR(gf_index_put(X, (gf_tensor *[]){i1, i3f}, 2, v1, false), GF_ERR_SHAPE, "index_put");
    EXPECT_ERR(gf_index_put(X, (gf_tensor *[]){m3, i1}, 2, v1, false), GF_ERR_INVALID,
               "index_put", "only");
    EXPECT_ERR(gf_index_put(X, (gf_tensor *[]){m4}, 1, v1, false), GF_ERR_SHAPE, "index_put",
               "mask");
    EXPECT_ERR(gf_index_put(X, (gf_tensor *[]){fi}, 1, v1, false), GF_ERR_DTYPE, "index_put");
    EXPECT_ERR(gf_index_put(X, (gf_tensor *[]){i1}, 1, gf_ones(SZ(1), 1, GF_I32, NULL), false),
               GF_ERR_DTYPE, "index_put");
    gf_scope_end();
}

static void test_einsum_errors(void) {
    gf_scope_begin();
    gf_tensor *Y = gf_ones(SZ(3, 4), 2, GF_F32, NULL), *S = gf_ones(SZ(2, 3), 2, GF_F32, NULL);
    EXPECT_ERR(gf_einsum(NULL, &X, 1), GF_ERR_INVALID, "einsum");
    EXPECT_ERR(gf_einsum("ij", &X, 0), GF_ERR_INVALID, "einsum");
    EXPECT_ERR(gf_einsum("ij,jk->ik", &X, 1), GF_ERR_INVALID, "einsum", "terms");
    EXPECT_ERR(gf_einsum("ij->ij", (gf_tensor *[]){X, Y}, 2), GF_ERR_INVALID, "einsum", "terms");
    EXPECT_ERR(gf_einsum("i1", &X, 1), GF_ERR_INVALID, "einsum", "'1'");
    EXPECT_ERR(gf_einsum("ijk", &X, 1), GF_ERR_SHAPE, "einsum", "subscripts");
    EXPECT_ERR(gf_einsum("i", &X, 1), GF_ERR_SHAPE, "einsum");
    EXPECT_ERR(gf_einsum("...ijk", &X, 1), GF_ERR_SHAPE, "einsum");
    EXPECT_ERR(gf_einsum("i..j", &X, 1), GF_ERR_INVALID, "einsum", "'.'");
    EXPECT_ERR(gf_einsum("...i...", &X, 1), GF_ERR_INVALID, "einsum");
    EXPECT_ERR(gf_einsum("ij->k", &X, 1), GF_ERR_INVALID, "einsum", "'k'");
    EXPECT_ERR(gf_einsum("ij->ii", &X, 1), GF_ERR_INVALID, "einsum", "more than once");
    EXPECT_ERR(gf_einsum("ij,ij->ij", (gf_tensor *[]){X, Y}, 2), GF_ERR_SHAPE, "einsum", "size");
    EXPECT_ERR(gf_einsum("ii", &X, 1), GF_ERR_SHAPE, "einsum", "'i'");
    gf_tensor *R13 = gf_ones(SZ(1, 3), 2, GF_F32, NULL);
    EXPECT_ERR(gf_einsum("ii", &R13, 1), GF_ERR_SHAPE, "einsum", "repeated");
    EXPECT_ERR(gf_einsum("ij,jk", (gf_tensor *[]){X, gf_ones(SZ(3, 4), 2, GF_I64, NULL)}, 2),
               GF_ERR_DTYPE, "einsum", "one dtype");
    EXPECT_ERR(gf_einsum("ij,jk", (gf_tensor *[]){X, NULL}, 2), GF_ERR_INVALID, "einsum");
    (void)S;
    gf_scope_end();
}

int main(void) {
    st_init();
    X = ot_make(GF_F32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    RUN(test_reduce_errors);
    RUN(test_scan_sort_errors);
    RUN(test_shape_errors);
    RUN(test_index_errors);
    RUN(test_einsum_errors);
    gf_tensor_release(X);
    return ot_finish();
}
