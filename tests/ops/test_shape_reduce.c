/* SPDX-License-Identifier: BSD-3-Clause */
/* test_shape_reduce.c — the reductions, scans and sorting ops of
 * graft/shape.h (all, any, count_nonzero, vector_norm, aminmax, cumsum,
 * cumprod, logcumsumexp, sort, argsort, topk, median, quantile): forward
 * values against hand-computed ones, on contiguous, strided (step-2 slice,
 * transposed), 0-size and 0-dim inputs, f32 and f64 and the integer/bool
 * dtypes PyTorch takes. Tensors are made on the default device, so the
 * suite also runs on every other device here (GRAFT_DEVICE). */
#include <math.h>
#include <stdint.h>

#include "shape_test.h"


#define ONE(x) (const int[]){x}

static void test_all_any_count(void) {
    gf_scope_begin();
    const double v[6] = {0, 1, 2, 3, 0, NAN};
    for (int lay = 0; lay < OT_NLAYOUTS; lay++) {
        gf_tensor *x = st_make(lay, GF_F32, 2, SZ(2, 3), v);
        EXPECT_T(gf_all(x, ONE(1), 1, false), GF_BOOL, 1, SZ(2), DV(0, 0), 0);
        EXPECT_T(gf_any(x, ONE(1), 1, false), GF_BOOL, 1, SZ(2), DV(1, 1), 0);
        EXPECT_T(gf_all(x, ONE(0), 1, true), GF_BOOL, 2, SZ(1, 3), DV(0, 0, 1), 0);
        EXPECT_T(gf_any(x, NULL, 0, false), GF_BOOL, 0, NULL, DV(1), 0);
        EXPECT_T(gf_all(x, NULL, 0, false), GF_BOOL, 0, NULL, DV(0), 0);
        EXPECT_T(gf_count_nonzero(x, ONE(0), 1), GF_I64, 1, SZ(3), DV(1, 1, 2), 0);
        EXPECT_T(gf_count_nonzero(x, NULL, 0), GF_I64, 0, NULL, DV(4), 0);
        EXPECT_T(gf_count_nonzero(x, ONE(-1), 1), GF_I64, 1, SZ(2), DV(2, 2), 0);
    }
    gf_tensor *xi = ot_make(GF_I64, 1, SZ(3), DV(5, -1, 7));
    EXPECT_T(gf_all(xi, NULL, 0, false), GF_BOOL, 0, NULL, DV(1), 0);
    gf_tensor *xb = ot_make(GF_BOOL, 2, SZ(2, 2), DV(1, 0, 0, 0));
    EXPECT_T(gf_any(xb, ONE(0), 1, false), GF_BOOL, 1, SZ(2), DV(1, 0), 0);
    EXPECT_T(gf_count_nonzero(xb, NULL, 0), GF_I64, 0, NULL, DV(1), 0);
    gf_tensor *xi32 = ot_make(GF_I32, 1, SZ(4), DV(0, 0, 3, 0));
    EXPECT_T(gf_count_nonzero(xi32, NULL, 0), GF_I64, 0, NULL, DV(1), 0);
    EXPECT_T(gf_any(xi32, NULL, 0, false), GF_BOOL, 0, NULL, DV(1), 0);
    /* 0 elements: all true, any false */
    gf_tensor *e = gf_zeros(SZ(2, 0), 2, GF_F32, NULL);
    EXPECT_T(gf_all(e, ONE(1), 1, false), GF_BOOL, 1, SZ(2), DV(1, 1), 0);
    EXPECT_T(gf_any(e, ONE(1), 1, false), GF_BOOL, 1, SZ(2), DV(0, 0), 0);
    EXPECT_T(gf_count_nonzero(e, ONE(0), 1), GF_I64, 1, SZ(0), NULL, 0);
    /* 0-dim */
    gf_tensor *s = gf_scalar(-2.0, GF_F32, NULL);
    EXPECT_T(gf_all(s, NULL, 0, false), GF_BOOL, 0, NULL, DV(1), 0);
    EXPECT_T(gf_any(s, ONE(0), 1, true), GF_BOOL, 0, NULL, DV(1), 0);
    gf_scope_end();
}

static void test_norms(void) {
    gf_scope_begin();
    for (int k = 0; k < NFLOATS; k++) {
        gf_dtype dt = FLOATS[k];
        double tol = ot_tol(dt) * 4;
        gf_tensor *x = st_step(dt, 1, SZ(4), DV(3, -4, 0, 12));
        EXPECT_T(gf_vector_norm(x, 2, NULL, 0, false), dt, 0, NULL, DV(13), tol);
        EXPECT_T(gf_norm(x, GF_NORM_FRO, NULL, 0, false), dt, 0, NULL, DV(13), tol);
        EXPECT_T(gf_vector_norm(x, 1, NULL, 0, false), dt, 0, NULL, DV(19), tol);
        EXPECT_T(gf_vector_norm(x, INFINITY, NULL, 0, false), dt, 0, NULL, DV(12), tol);
        EXPECT_T(gf_vector_norm(x, -INFINITY, NULL, 0, false), dt, 0, NULL, DV(0), tol);
        EXPECT_T(gf_vector_norm(x, 0, NULL, 0, false), dt, 0, NULL, DV(3), tol);
        EXPECT_T(gf_vector_norm(x, 3, NULL, 0, false), dt, 0, NULL,
                 DV(cbrt(27.0 + 64.0 + 1728.0)), tol);
        EXPECT_T(gf_vector_norm(x, 0.5, NULL, 0, false), dt, 0, NULL,
                 DV(pow(sqrt(3.0) + 2.0 + sqrt(12.0), 2.0)), tol);
        /* dims and keepdim on a transposed [2, 2]: rows (3, -4), (6, 8) */
        gf_tensor *m = st_tr(dt, 2, SZ(2, 2), DV(3, -4, 6, 8));
        EXPECT_T(gf_vector_norm(m, 2, ONE(1), 1, true), dt, 2, SZ(2, 1), DV(5, 10), tol);
        EXPECT_T(gf_vector_norm(m, 1, ONE(0), 1, false), dt, 1, SZ(2), DV(9, 12), tol);
        EXPECT_T(gf_vector_norm(m, INFINITY, ONE(-1), 1, false), dt, 1, SZ(2), DV(4, 8), tol);
        /* 0 elements: the 2-norm of nothing is 0; 0-dim: |x| */
        gf_tensor *e = gf_zeros(SZ(3, 0), 2, dt, NULL);
        EXPECT_T(gf_vector_norm(e, 2, ONE(1), 1, false), dt, 1, SZ(3), DV(0, 0, 0), tol);
        gf_tensor *s = gf_scalar(-2.5, dt, NULL);
        EXPECT_T(gf_vector_norm(s, 2, NULL, 0, false), dt, 0, NULL, DV(2.5), tol);
    }
    gf_scope_end();
}

static void test_aminmax(void) {
    gf_scope_begin();
    gf_tensor *mn = NULL, *mx = NULL;
    gf_tensor *x = st_tr(GF_F32, 2, SZ(2, 3), DV(4, -1, 7, 0, 9, -3));
    CHECK_OK(gf_aminmax(x, 1, false, &mn, &mx));
    EXPECT_T(mn, GF_F32, 1, SZ(2), DV(-1, -3), 0);
    EXPECT_T(mx, GF_F32, 1, SZ(2), DV(7, 9), 0);
    CHECK_OK(gf_aminmax(x, GF_DIM_ALL, false, &mn, &mx));
    EXPECT_T(mn, GF_F32, 0, NULL, DV(-3), 0);
    EXPECT_T(mx, GF_F32, 0, NULL, DV(9), 0);
    CHECK_OK(gf_aminmax(x, 0, true, &mn, &mx));
    EXPECT_T(mn, GF_F32, 2, SZ(1, 3), DV(0, -1, -3), 0);
    gf_tensor *xi = ot_make(GF_I64, 1, SZ(3), DV(5, -8, 2));
    CHECK_OK(gf_aminmax(xi, 0, false, &mn, &mx));
    EXPECT_T(mn, GF_I64, 0, NULL, DV(-8), 0);
    EXPECT_T(mx, GF_I64, 0, NULL, DV(5), 0);
    gf_tensor *s = gf_scalar(2.0, GF_F32, NULL);
    CHECK_OK(gf_aminmax(s, 0, false, &mn, &mx));
    EXPECT_T(mx, GF_F32, 0, NULL, DV(2), 0);
    gf_scope_end();
}

static void test_scans(void) {
    gf_scope_begin();
    for (int k = 0; k < NFLOATS; k++) {
        gf_dtype dt = FLOATS[k];
        double tol = ot_tol(dt) * 4;
        for (int lay = 0; lay < OT_NLAYOUTS; lay++) {
            gf_tensor *x = st_make(lay, dt, 2, SZ(2, 5), DV(1, 2, 3, 4, 5, 2, 0, 3, 1, -1));
            EXPECT_T(gf_cumsum(x, 1), dt, 2, SZ(2, 5), DV(1, 3, 6, 10, 15, 2, 2, 5, 6, 5), tol);
            EXPECT_T(gf_cumsum(x, 0), dt, 2, SZ(2, 5), DV(1, 2, 3, 4, 5, 3, 2, 6, 5, 4), tol);
            EXPECT_T(gf_cumprod(x, -1), dt, 2, SZ(2, 5),
                     DV(1, 2, 6, 24, 120, 2, 0, 0, 0, 0), tol);
            EXPECT_T(gf_cumprod(x, 0), dt, 2, SZ(2, 5), DV(1, 2, 3, 4, 5, 2, 0, 9, 4, -5), tol);
            double l[10];
            const double xv[10] = {1, 2, 3, 4, 5, 2, 0, 3, 1, -1};
            for (int r = 0; r < 2; r++) {
                double acc = 0;
                for (int j = 0; j < 5; j++) {
                    acc += exp(xv[r * 5 + j]);
                    l[r * 5 + j] = log(acc);
                }
            }
            EXPECT_T(gf_logcumsumexp(x, 1), dt, 2, SZ(2, 5), l, tol);
        }
        /* longer than a power of two; -inf, large values */
        double v[37], want[37];
        double acc = 0;
        for (int i = 0; i < 37; i++) {
            v[i] = (double)(i % 7) - 3;
            acc += v[i];
            want[i] = acc;
        }
        gf_tensor *x = ot_make(dt, 1, SZ(37), v);
        EXPECT_T(gf_cumsum(x, 0), dt, 1, SZ(37), want, tol);
        gf_tensor *y = ot_make(dt, 1, SZ(3), DV(-INFINITY, 1000, 1000));
        EXPECT_T(gf_logcumsumexp(y, 0), dt, 1, SZ(3), DV(-INFINITY, 1000, 1000 + log(2.0)), tol);
        /* 0-size, 0-dim */
        gf_tensor *e = gf_zeros(SZ(0, 3), 2, dt, NULL);
        EXPECT_T(gf_cumsum(e, 0), dt, 2, SZ(0, 3), NULL, 0);
        EXPECT_T(gf_cumprod(e, 1), dt, 2, SZ(0, 3), NULL, 0);
        gf_tensor *s = gf_scalar(3.0, dt, NULL);
        EXPECT_T(gf_cumsum(s, 0), dt, 0, NULL, DV(3), 0);
        EXPECT_T(gf_logcumsumexp(s, -1), dt, 0, NULL, DV(3), 0);
    }
    /* integers and bool give i64 */
    gf_tensor *xi = ot_make(GF_I32, 1, SZ(4), DV(2, -3, 4, 1));
    EXPECT_T(gf_cumsum(xi, 0), GF_I64, 1, SZ(4), DV(2, -1, 3, 4), 0);
    EXPECT_T(gf_cumprod(xi, 0), GF_I64, 1, SZ(4), DV(2, -6, -24, -24), 0);
    gf_tensor *xb = ot_make(GF_BOOL, 1, SZ(4), DV(1, 0, 1, 1));
    EXPECT_T(gf_cumsum(xb, 0), GF_I64, 1, SZ(4), DV(1, 1, 2, 3), 0);
    gf_tensor *xl = ot_make(GF_I64, 1, SZ(3), DV(4611686018427387904.0, 1, 2));
    gf_tensor *cl = gf_cumsum(xl, 0);
    int64_t got[3] = {0};
    CHECK(cl && gf_tensor_to_host(cl, got, sizeof got) == GF_OK);
    CHECK(got[2] == ((int64_t)1 << 62) + 3); /* exact beyond 2^53 */
    gf_scope_end();
}

static void test_sort(void) {
    gf_scope_begin();
    gf_tensor *v = NULL, *i = NULL;
    for (int k = 0; k < NFLOATS; k++) {
        gf_dtype dt = FLOATS[k];
        for (int lay = 0; lay < 2; lay++) {
            gf_tensor *x = st_make(lay, dt, 1, SZ(6), DV(3, 1, NAN, 2, 1, -INFINITY));
            CHECK_OK(gf_sort(x, 0, false, &v, &i));
            EXPECT_T(v, dt, 1, SZ(6), DV(-INFINITY, 1, 1, 2, 3, NAN), 0);
            EXPECT_T(i, GF_I64, 1, SZ(6), DV(5, 1, 4, 3, 0, 2), 0);
            CHECK_OK(gf_sort(x, -1, true, &v, &i));
            EXPECT_T(v, dt, 1, SZ(6), DV(NAN, 3, 2, 1, 1, -INFINITY), 0);
            EXPECT_T(i, GF_I64, 1, SZ(6), DV(2, 0, 3, 1, 4, 5), 0);
            EXPECT_T(gf_argsort(x, 0, false), GF_I64, 1, SZ(6), DV(5, 1, 4, 3, 0, 2), 0);
            CHECK_OK(gf_topk(x, 2, 0, true, true, &v, &i));
            EXPECT_T(v, dt, 1, SZ(2), DV(NAN, 3), 0);
            EXPECT_T(i, GF_I64, 1, SZ(2), DV(2, 0), 0);
            CHECK_OK(gf_topk(x, 3, 0, false, true, &v, &i));
            EXPECT_T(v, dt, 1, SZ(3), DV(-INFINITY, 1, 1), 0);
            EXPECT_T(i, GF_I64, 1, SZ(3), DV(5, 1, 4), 0);
            CHECK_OK(gf_topk(x, 0, 0, true, true, &v, &i));
            EXPECT_T(v, dt, 1, SZ(0), NULL, 0);
        }
        /* along dim 0 of a transposed [3, 2] */
        gf_tensor *m = st_tr(dt, 2, SZ(3, 2), DV(5, 0, 1, 2, 3, 1));
        CHECK_OK(gf_sort(m, 0, false, &v, &i));
        EXPECT_T(v, dt, 2, SZ(3, 2), DV(1, 0, 3, 1, 5, 2), 0);
        EXPECT_T(i, GF_I64, 2, SZ(3, 2), DV(1, 0, 2, 2, 0, 1), 0);
        CHECK_OK(gf_topk(m, 1, 1, true, true, &v, &i));
        EXPECT_T(v, dt, 2, SZ(3, 1), DV(5, 2, 3), 0);
        EXPECT_T(i, GF_I64, 2, SZ(3, 1), DV(0, 1, 0), 0);
    }
    /* i64 exactly beyond 2^53, i32, bool */
    int64_t big[3] = {((int64_t)1 << 62) + 1, (int64_t)1 << 62, -5};
    gf_tensor *xl = gf_from_data(big, SZ(3), 1, GF_I64, NULL);
    CHECK_OK(gf_sort(xl, 0, false, &v, &i));
    EXPECT_T(i, GF_I64, 1, SZ(3), DV(2, 1, 0), 0);
    int64_t got[3] = {0};
    CHECK(v && gf_tensor_to_host(v, got, sizeof got) == GF_OK && got[2] == big[0]);
    gf_tensor *xb = ot_make(GF_BOOL, 1, SZ(4), DV(1, 0, 1, 0));
    CHECK_OK(gf_sort(xb, 0, true, &v, &i));
    EXPECT_T(v, GF_BOOL, 1, SZ(4), DV(1, 1, 0, 0), 0);
    EXPECT_T(i, GF_I64, 1, SZ(4), DV(0, 2, 1, 3), 0);
    gf_tensor *xi = ot_make(GF_I32, 2, SZ(2, 2), DV(4, -4, 0, 9));
    CHECK_OK(gf_sort(xi, 1, true, &v, &i));
    EXPECT_T(v, GF_I32, 2, SZ(2, 2), DV(4, -4, 9, 0), 0);
    /* 0-size and 0-dim */
    gf_tensor *e = gf_zeros(SZ(2, 0), 2, GF_F32, NULL);
    CHECK_OK(gf_sort(e, 1, false, &v, &i));
    EXPECT_T(v, GF_F32, 2, SZ(2, 0), NULL, 0);
    EXPECT_T(i, GF_I64, 2, SZ(2, 0), NULL, 0);
    gf_tensor *s = gf_scalar(7.0, GF_F32, NULL);
    CHECK_OK(gf_sort(s, 0, false, &v, &i));
    EXPECT_T(v, GF_F32, 0, NULL, DV(7), 0);
    EXPECT_T(i, GF_I64, 0, NULL, DV(0), 0);
    CHECK_OK(gf_topk(s, 1, 0, true, true, &v, &i));
    EXPECT_T(v, GF_F32, 0, NULL, DV(7), 0);
    gf_scope_end();
}

/* stride-0 (expanded) inputs */
static void test_expanded(void) {
    gf_scope_begin();
    gf_tensor *row = ot_make(GF_F32, 1, SZ(3), DV(2, -1, 3));
    gf_tensor *x = gf_expand(row, SZ(2, 3), 2);
    EXPECT_T(gf_cumsum(x, 1), GF_F32, 2, SZ(2, 3), DV(2, 1, 4, 2, 1, 4), 0);
    EXPECT_T(gf_cumprod(x, 0), GF_F32, 2, SZ(2, 3), DV(2, -1, 3, 4, 1, 9), 0);
    gf_tensor *v = NULL, *i = NULL;
    CHECK_OK(gf_sort(x, 1, false, &v, &i));
    EXPECT_T(v, GF_F32, 2, SZ(2, 3), DV(-1, 2, 3, -1, 2, 3), 0);
    EXPECT_T(i, GF_I64, 2, SZ(2, 3), DV(1, 0, 2, 1, 0, 2), 0);
    CHECK_OK(gf_sort(x, 0, false, &v, &i)); /* ties along dim 0 keep their order */
    EXPECT_T(i, GF_I64, 2, SZ(2, 3), DV(0, 0, 0, 1, 1, 1), 0);
    EXPECT_T(gf_vector_norm(x, 1, NULL, 0, false), GF_F32, 0, NULL, DV(12), 0);
    EXPECT_T(gf_count_nonzero(x, NULL, 0), GF_I64, 0, NULL, DV(6), 0);
    EXPECT_T(gf_quantile_scalar(x, 0.5, 1, false, GF_QUANTILE_LINEAR), GF_F32, 1, SZ(2),
             DV(2, 2), 0);
    gf_scope_end();
}

static void test_median_quantile(void) {
    gf_scope_begin();
    gf_tensor *v = NULL, *i = NULL;
    for (int k = 0; k < NFLOATS; k++) {
        gf_dtype dt = FLOATS[k];
        double tol = ot_tol(dt) * 4;
        gf_tensor *x = st_step(dt, 1, SZ(4), DV(3, 1, 4, 2));
        EXPECT_T(gf_median(x), dt, 0, NULL, DV(2), 0);
        CHECK_OK(gf_median_dim(x, 0, false, &v, &i));
        EXPECT_T(v, dt, 0, NULL, DV(2), 0);
        EXPECT_T(i, GF_I64, 0, NULL, DV(3), 0);
        gf_tensor *m = st_tr(dt, 2, SZ(2, 3), DV(5, NAN, NAN, 2, 9, 1));
        CHECK_OK(gf_median_dim(m, 1, true, &v, &i));
        EXPECT_T(v, dt, 2, SZ(2, 1), DV(NAN, 2), 0);
        EXPECT_T(i, GF_I64, 2, SZ(2, 1), DV(1, 0), 0);
        EXPECT_T(gf_median(m), dt, 0, NULL, DV(NAN), 0);
        gf_tensor *e = gf_zeros(SZ(0), 1, dt, NULL);
        EXPECT_T(gf_median(e), dt, 0, NULL, DV(NAN), 0);
        /* quantile of 1, 2, 3, 4 (stored shuffled) */
        gf_tensor *q = ot_make(dt, 1, SZ(6, 1), DV(4, 1, 3, 2, 0, 0));
        gf_tensor *qq = gf_narrow(gf_reshape(q, SZ(6), 1), 0, 0, 4);
        const double want[5] = {2.5, 2, 3, 2.5, 3}; /* nearest: rank 1.5 rounds to 2 */
        for (int mode = 0; mode < 5; mode++)
            EXPECT_T(gf_quantile_scalar(qq, 0.5, GF_DIM_ALL, false, (gf_quantile_interp)mode),
                     dt, 0, NULL, DV(want[mode]), tol);
        gf_tensor *qs = ot_make(dt, 1, SZ(3), DV(0, 0.25, 1));
        EXPECT_T(gf_quantile(qq, qs, 0, false, GF_QUANTILE_LINEAR), dt, 1, SZ(3),
                 DV(1, 1.75, 4), tol);
        EXPECT_T(gf_quantile(qq, qs, 0, true, GF_QUANTILE_LOWER), dt, 2, SZ(3, 1),
                 DV(1, 1, 4), tol);
        EXPECT_T(gf_quantile_scalar(qq, 1.0 / 3.0, 0, false, GF_QUANTILE_NEAREST), dt, 0, NULL,
                 DV(2), tol);
        /* along dim 1 of [2, 3] with keepdim, q 1-D: [nq, 2, 1] */
        gf_tensor *r = st_tr(dt, 2, SZ(2, 3), DV(3, 1, 2, 10, NAN, 0));
        gf_tensor *q2 = ot_make(dt, 1, SZ(2), DV(0.5, 0.75));
        EXPECT_T(gf_quantile(r, q2, 1, true, GF_QUANTILE_LINEAR), dt, 3, SZ(2, 2, 1),
                 DV(2, NAN, 2.5, NAN), tol);
        EXPECT_T(gf_quantile_scalar(r, 0.5, GF_DIM_ALL, true, GF_QUANTILE_LINEAR), dt, 2,
                 SZ(1, 1), DV(NAN), tol);
        gf_tensor *s = gf_scalar(4.0, dt, NULL);
        EXPECT_T(gf_quantile_scalar(s, 0.3, 0, false, GF_QUANTILE_LINEAR), dt, 0, NULL, DV(4), 0);
    }
    gf_tensor *xi = ot_make(GF_I64, 1, SZ(5), DV(9, -2, 7, 7, 1));
    CHECK_OK(gf_median_dim(xi, 0, false, &v, &i));
    EXPECT_T(v, GF_I64, 0, NULL, DV(7), 0);
    EXPECT_T(i, GF_I64, 0, NULL, DV(2), 0);
    gf_scope_end();
}

int main(void) {
    st_init();
    RUN(test_all_any_count);
    RUN(test_norms);
    RUN(test_aminmax);
    RUN(test_scans);
    RUN(test_sort);
    RUN(test_median_quantile);
    RUN(test_expanded);
    return ot_finish();
}
