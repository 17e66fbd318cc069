/* SPDX-License-Identifier: BSD-3-Clause */
/* test_index.c — index_select, gather, scatter_add, index_add, embedding,
 * cat, stack, tril/triu and one_hot, with hand-computed expectations. */
#include "ops_test.h"

static gf_tensor *iota(gf_dtype dt, int rank, const int64_t *sizes) {
    int64_t n = ot_numel(rank, sizes);
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) v[i] = (double)i;
    gf_tensor *t = ot_make(dt, rank, sizes, v);
    free(v);
    return t;
}

static void test_index_select(void) {
    const gf_dtype dts[4] = {GF_F32, GF_F64, GF_I32, GF_I64};
    for (int k = 0; k < 4; k++) {
        gf_dtype dt = dts[k];
        double v[12];
        for (int i = 0; i < 12; i++) v[i] = i;
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            gf_tensor *x = ot_make_layout(layout, dt, 2, SZ(3, 4), v);
            gf_tensor *i0 = ot_make_layout(layout == OT_STEP ? OT_STEP : OT_CONTIG, GF_I64, 1,
                                           SZ(3), DV(2, 0, 2));
            gf_tensor *y0 = gf_index_select(x, 0, i0);
            EXPECT_T(y0, dt, 2, SZ(3, 4), DV(8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11), 0);
            gf_tensor *i1 = ot_make(GF_I32, 1, SZ(2), DV(3, 1)); /* i32 accepted */
            gf_tensor *y1 = gf_index_select(x, -1, i1);
            EXPECT_T(y1, dt, 2, SZ(3, 2), DV(3, 1, 7, 5, 11, 9), 0);
            REL(x, i0, y0, i1, y1);
        }
    }
    /* an expanded x: every row [1, 2, 3] */
    gf_tensor *row = ot_make(GF_F64, 2, SZ(1, 3), DV(1, 2, 3));
    gf_tensor *ex = gf_expand(row, SZ(4, 3), 2);
    gf_tensor *ei = ot_make(GF_I64, 1, SZ(3), DV(2, 2, 0));
    gf_tensor *yx = gf_index_select(ex, 1, ei);
    EXPECT_T(yx, GF_F64, 2, SZ(4, 3), DV(3, 3, 1, 3, 3, 1, 3, 3, 1, 3, 3, 1), 0);
    gf_tensor *yx0 = gf_index_select(ex, 0, ei);
    EXPECT_T(yx0, GF_F64, 2, SZ(3, 3), DV(1, 2, 3, 1, 2, 3, 1, 2, 3), 0);
    REL(row, ex, ei, yx, yx0);

    gf_tensor *x = iota(GF_F32, 2, SZ(3, 4));
    gf_tensor *ie = gf_zeros(SZ(0), 1, GF_I64, NULL);
    gf_tensor *ye = gf_index_select(x, 0, ie);
    EXPECT_T(ye, GF_F32, 2, SZ(0, 4), NULL, 0);
    gf_tensor *xe = gf_zeros(SZ(3, 0), 2, GF_F32, NULL);
    gf_tensor *i1 = ot_make(GF_I64, 1, SZ(2), DV(1, 1));
    gf_tensor *ye2 = gf_index_select(xe, 0, i1);
    EXPECT_T(ye2, GF_F32, 2, SZ(2, 0), NULL, 0);
    gf_tensor *bx = ot_make(GF_BOOL, 1, SZ(3), DV(1, 0, 1));
    gf_tensor *by = gf_index_select(bx, 0, i1);
    EXPECT_T(by, GF_BOOL, 1, SZ(2), DV(0, 0), 0);
    gf_tensor *bad = ot_make(GF_I64, 1, SZ(2), DV(0, 9));
    EXPECT_FAIL(gf_index_select(x, 0, bad), GF_ERR_INDEX);
    EXPECT_FAIL(gf_index_select(x, 2, i1), GF_ERR_INDEX);
    gf_tensor *fi = ot_make(GF_F32, 1, SZ(2), DV(0, 1));
    EXPECT_FAIL(gf_index_select(x, 0, fi), GF_ERR_DTYPE);
    REL(x, ie, ye, xe, i1, ye2, bx, by, bad, fi);
}

static void test_gather(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            gf_tensor *x = ot_make_layout(layout, dt, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
            gf_tensor *i1 = ot_make_layout(layout, GF_I64, 2, SZ(2, 2), DV(2, 0, 1, 1));
            gf_tensor *y1 = gf_gather(x, 1, i1);
            EXPECT_T(y1, dt, 2, SZ(2, 2), DV(3, 1, 5, 5), 0);
            gf_tensor *i0 = ot_make(GF_I32, 2, SZ(1, 3), DV(1, 0, 1));
            gf_tensor *y0 = gf_gather(x, 0, i0);
            EXPECT_T(y0, dt, 2, SZ(1, 3), DV(4, 2, 6), 0);
            REL(x, i1, y1, i0, y0);
        }
    }
    /* expanded x and expanded index */
    gf_tensor *col = ot_make(GF_F32, 2, SZ(2, 1), DV(5, 7));
    gf_tensor *ex = gf_expand(col, SZ(2, 3), 2);
    gf_tensor *irow = ot_make(GF_I64, 2, SZ(1, 2), DV(2, 0));
    gf_tensor *iex = gf_expand(irow, SZ(2, 2), 2);
    gf_tensor *yx = gf_gather(ex, 1, iex);
    EXPECT_T(yx, GF_F32, 2, SZ(2, 2), DV(5, 5, 7, 7), 0);
    REL(col, ex, irow, iex, yx);

    gf_tensor *x = ot_make(GF_I64, 3, SZ(2, 2, 2), DV(1, 2, 3, 4, 5, 6, 7, 8));
    gf_tensor *i = ot_make(GF_I64, 3, SZ(2, 2, 1), DV(1, 0, 0, 1));
    gf_tensor *y = gf_gather(x, -1, i); /* y[a][b][0] = x[a][b][i] */
    EXPECT_T(y, GF_I64, 3, SZ(2, 2, 1), DV(2, 3, 5, 8), 0);
    gf_tensor *ie = gf_zeros(SZ(2, 0, 2), 3, GF_I64, NULL);
    gf_tensor *ye = gf_gather(x, 1, ie);
    EXPECT_T(ye, GF_I64, 3, SZ(2, 0, 2), NULL, 0);
    gf_tensor *bad = ot_make(GF_I64, 3, SZ(2, 2, 1), DV(1, 0, 2, 1));
    EXPECT_FAIL(gf_gather(x, 2, bad), GF_ERR_INDEX);
    gf_tensor *fi = ot_make(GF_F32, 3, SZ(2, 2, 1), DV(1, 0, 0, 1));
    EXPECT_FAIL(gf_gather(x, 2, fi), GF_ERR_DTYPE);
    REL(x, i, y, ie, ye, bad, fi);
}

static void test_scatter_add(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            gf_tensor *x = ot_make_layout(layout, dt, 2, SZ(2, 3), DV(1, 1, 1, 1, 1, 1));
            gf_tensor *idx = ot_make_layout(layout, GF_I64, 2, SZ(2, 3), DV(0, 0, 2, 1, 1, 1));
            gf_tensor *src = ot_make_layout(layout, dt, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
            gf_tensor *y = gf_scatter_add(x, 1, idx, src); /* duplicates accumulate */
            EXPECT_T(y, dt, 2, SZ(2, 3), DV(4, 1, 4, 1, 16, 1), 0);
            EXPECT_T(x, dt, 2, SZ(2, 3), DV(1, 1, 1, 1, 1, 1), 0); /* x is not changed */
            REL(x, idx, src, y);
        }
    }
    gf_tensor *x = gf_zeros(SZ(3, 2), 2, GF_F64, NULL);
    gf_tensor *idx = ot_make(GF_I64, 2, SZ(2, 2), DV(0, 2, 0, 1));
    gf_tensor *src = ot_make(GF_F64, 2, SZ(2, 2), DV(1, 2, 3, 4));
    gf_tensor *y = gf_scatter_add(x, 0, idx, src);
    EXPECT_T(y, GF_F64, 2, SZ(3, 2), DV(4, 0, 0, 4, 0, 2), 0);
    /* as PyTorch: an index smaller than src uses only the leading part of src */
    gf_tensor *idx2 = ot_make(GF_I64, 2, SZ(1, 2), DV(2, 2));
    gf_tensor *y2 = gf_scatter_add(x, 0, idx2, src);
    EXPECT_T(y2, GF_F64, 2, SZ(3, 2), DV(0, 0, 0, 0, 1, 2), 0);
    gf_tensor *xi = gf_zeros(SZ(4), 1, GF_I64, NULL);
    gf_tensor *ii = ot_make(GF_I32, 1, SZ(3), DV(3, 3, 0));
    gf_tensor *si = ot_make(GF_I64, 1, SZ(3), DV(5, 6, 7));
    gf_tensor *yi = gf_scatter_add(xi, 0, ii, si);
    EXPECT_T(yi, GF_I64, 1, SZ(4), DV(7, 0, 0, 11), 0);
    gf_tensor *bad = ot_make(GF_I64, 1, SZ(3), DV(4, 0, 0));
    EXPECT_FAIL(gf_scatter_add(xi, 0, bad, si), GF_ERR_INDEX);
    REL(x, idx, src, y, idx2, y2, xi, ii, si, yi, bad);
}

static void test_index_add(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            gf_tensor *x = ot_make_layout(layout, dt, 2, SZ(3, 2), DV(1, 1, 1, 1, 1, 1));
            gf_tensor *idx = ot_make_layout(layout, GF_I64, 1, SZ(3), DV(0, 2, 0));
            gf_tensor *src = ot_make_layout(layout, dt, 2, SZ(3, 2), DV(1, 2, 3, 4, 5, 6));
            gf_tensor *y = gf_index_add(x, 0, idx, src);
            EXPECT_T(y, dt, 2, SZ(3, 2), DV(7, 9, 1, 1, 4, 5), 0);
            EXPECT_T(x, dt, 2, SZ(3, 2), DV(1, 1, 1, 1, 1, 1), 0);
            REL(x, idx, src, y);
        }
    }
    gf_tensor *x = gf_zeros(SZ(2, 3), 2, GF_F32, NULL);
    gf_tensor *idx = ot_make(GF_I32, 1, SZ(2), DV(2, 2));
    gf_tensor *src = ot_make(GF_F32, 2, SZ(2, 2), DV(1, 2, 3, 4));
    gf_tensor *y = gf_index_add(x, -1, idx, src);
    EXPECT_T(y, GF_F32, 2, SZ(2, 3), DV(0, 0, 3, 0, 0, 7), 0);
    gf_tensor *ie = gf_zeros(SZ(0), 1, GF_I64, NULL);
    gf_tensor *se = gf_zeros(SZ(2, 0), 2, GF_F32, NULL);
    gf_tensor *ye = gf_index_add(x, 1, ie, se); /* nothing added */
    EXPECT_T(ye, GF_F32, 2, SZ(2, 3), DV(0, 0, 0, 0, 0, 0), 0);
    gf_tensor *bad = ot_make(GF_I64, 1, SZ(2), DV(0, 3));
    EXPECT_FAIL(gf_index_add(x, 1, bad, src), GF_ERR_INDEX);
    REL(x, idx, src, y, ie, se, ye, bad);
}

static void test_embedding(void) {
    for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
        double w[12];
        for (int i = 0; i < 12; i++) w[i] = i * 0.5;
        gf_tensor *weight = ot_make_layout(layout, GF_F32, 2, SZ(4, 3), w);
        gf_tensor *ind = ot_make_layout(layout, GF_I64, 2, SZ(2, 2), DV(1, 3, 0, 1));
        gf_tensor *y = gf_embedding(weight, ind);
        EXPECT_T(y, GF_F32, 3, SZ(2, 2, 3),
                 DV(1.5, 2, 2.5, 4.5, 5, 5.5, 0, 0.5, 1, 1.5, 2, 2.5), 0);
        REL(weight, ind, y);
    }
    gf_tensor *weight = iota(GF_F64, 2, SZ(4, 3));
    gf_tensor *s = gf_scalar(2, GF_I64, NULL);
    gf_tensor *ys = gf_embedding(weight, s);
    EXPECT_T(ys, GF_F64, 1, SZ(3), DV(6, 7, 8), 0);
    gf_tensor *i32 = ot_make(GF_I32, 1, SZ(2), DV(3, 3));
    gf_tensor *y32 = gf_embedding(weight, i32);
    EXPECT_T(y32, GF_F64, 2, SZ(2, 3), DV(9, 10, 11, 9, 10, 11), 0);
    gf_tensor *ie = gf_zeros(SZ(0), 1, GF_I64, NULL);
    gf_tensor *ye = gf_embedding(weight, ie);
    EXPECT_T(ye, GF_F64, 2, SZ(0, 3), NULL, 0);
    gf_tensor *bad = ot_make(GF_I64, 1, SZ(2), DV(0, 4));
    EXPECT_FAIL(gf_embedding(weight, bad), GF_ERR_INDEX);
    gf_tensor *fi = ot_make(GF_F32, 1, SZ(1), DV(0));
    EXPECT_FAIL(gf_embedding(weight, fi), GF_ERR_DTYPE);
    REL(weight, s, ys, i32, y32, ie, ye, bad, fi);
}

static void test_cat(void) {
    for (int k = 0; k < 3; k++) {
        gf_dtype dt = k == 0 ? GF_F32 : k == 1 ? GF_F64 : GF_I32;
        gf_tensor *a = ot_make(dt, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
        gf_tensor *b = ot_make_transposed(dt, 2, SZ(1, 3), DV(7, 8, 9));
        gf_tensor *e = gf_zeros(SZ(0, 3), 2, dt, NULL);
        gf_tensor *c = ot_make_step(dt, 2, SZ(2, 3), DV(10, 11, 12, 13, 14, 15));
        gf_tensor *y0 = gf_cat((gf_tensor *[]){a, e, b, c}, 4, 0);
        EXPECT_T(y0, dt, 2, SZ(5, 3), DV(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 0);
        CHECK(y0 == NULL || !gf_tensor_shares_storage(y0, a));
        gf_tensor *d = ot_make_transposed(dt, 2, SZ(2, 2), DV(-1, -2, -3, -4));
        gf_tensor *e1 = gf_zeros(SZ(2, 0), 2, dt, NULL);
        gf_tensor *y1 = gf_cat((gf_tensor *[]){e1, a, d, e1}, 4, -1);
        EXPECT_T(y1, dt, 2, SZ(2, 5), DV(1, 2, 3, -1, -2, 4, 5, 6, -3, -4), 0);
        gf_tensor *y2 = gf_cat((gf_tensor *[]){a}, 1, 1); /* one piece: a copy */
        EXPECT_T(y2, dt, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6), 0);
        CHECK(y2 == NULL || !gf_tensor_shares_storage(y2, a));
        gf_tensor *y3 = gf_cat((gf_tensor *[]){e, e}, 2, 0); /* all empty */
        EXPECT_T(y3, dt, 2, SZ(0, 3), NULL, 0);
        REL(a, b, e, c, y0, d, e1, y1, y2, y3);
    }
    /* expanded pieces; 3-D along the middle dim */
    gf_tensor *r = ot_make(GF_F32, 2, SZ(1, 2), DV(1, 2));
    gf_tensor *re = gf_expand(r, SZ(2, 2), 2);
    gf_tensor *q = ot_make(GF_F32, 2, SZ(2, 1), DV(5, 6));
    gf_tensor *y = gf_cat((gf_tensor *[]){re, q}, 2, 1);
    EXPECT_T(y, GF_F32, 2, SZ(2, 3), DV(1, 2, 5, 1, 2, 6), 0);
    gf_tensor *t1 = iota(GF_I64, 3, SZ(2, 1, 2));
    gf_tensor *t2 = iota(GF_I64, 3, SZ(2, 2, 2));
    gf_tensor *y3 = gf_cat((gf_tensor *[]){t1, t2}, 2, 1);
    EXPECT_T(y3, GF_I64, 3, SZ(2, 3, 2), DV(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 6, 7), 0);
    gf_tensor *bl = ot_make(GF_BOOL, 1, SZ(2), DV(1, 0));
    gf_tensor *yb = gf_cat((gf_tensor *[]){bl, bl}, 2, 0);
    EXPECT_T(yb, GF_BOOL, 1, SZ(4), DV(1, 0, 1, 0), 0);
    /* errors: other dims differ; dim out of range; 0-dim pieces; no pieces */
    gf_tensor *w = gf_zeros(SZ(2, 4), 2, GF_F32, NULL);
    EXPECT_FAIL(gf_cat((gf_tensor *[]){q, w}, 2, 0), GF_ERR_SHAPE);
    EXPECT_FAIL(gf_cat((gf_tensor *[]){q, q}, 2, 2), GF_ERR_INDEX);
    gf_tensor *s = gf_scalar(1, GF_F32, NULL);
    gf_clear_error();
    gf_tensor *bad = gf_cat((gf_tensor *[]){s, s}, 2, 0);
    CHECK(bad == NULL && gf_last_status() != GF_OK);
    gf_clear_error();
    gf_tensor *none = gf_cat(NULL, 0, 0);
    CHECK(none == NULL && gf_last_status() != GF_OK);
    REL(r, re, q, y, t1, t2, y3, bl, yb, w, s, bad, none);
}

static void test_stack(void) {
    gf_tensor *a = ot_make(GF_F64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *b = ot_make_transposed(GF_F64, 2, SZ(2, 3), DV(7, 8, 9, 10, 11, 12));
    gf_tensor *y0 = gf_stack((gf_tensor *[]){a, b}, 2, 0);
    EXPECT_T(y0, GF_F64, 3, SZ(2, 2, 3), DV(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), 0);
    gf_tensor *y1 = gf_stack((gf_tensor *[]){a, b}, 2, 1);
    EXPECT_T(y1, GF_F64, 3, SZ(2, 2, 3), DV(1, 2, 3, 7, 8, 9, 4, 5, 6, 10, 11, 12), 0);
    gf_tensor *y2 = gf_stack((gf_tensor *[]){a, b}, 2, -1);
    EXPECT_T(y2, GF_F64, 3, SZ(2, 3, 2), DV(1, 7, 2, 8, 3, 9, 4, 10, 5, 11, 6, 12), 0);
    gf_tensor *s1 = gf_scalar(1, GF_I32, NULL), *s2 = gf_scalar(2, GF_I32, NULL);
    gf_tensor *ys = gf_stack((gf_tensor *[]){s1, s2, s1}, 3, 0);
    EXPECT_T(ys, GF_I32, 1, SZ(3), DV(1, 2, 1), 0);
    gf_tensor *e = gf_zeros(SZ(0, 2), 2, GF_F32, NULL);
    gf_tensor *ye = gf_stack((gf_tensor *[]){e, e, e}, 3, 1);
    EXPECT_T(ye, GF_F32, 3, SZ(0, 3, 2), NULL, 0);
    gf_tensor *c = gf_zeros(SZ(3, 2), 2, GF_F64, NULL);
    EXPECT_FAIL(gf_stack((gf_tensor *[]){a, c}, 2, 0), GF_ERR_SHAPE);
    EXPECT_FAIL(gf_stack((gf_tensor *[]){a, b}, 2, 4), GF_ERR_INDEX);
    REL(a, b, y0, y1, y2, s1, s2, ys, e, ye, c);
}

static void test_tril_triu(void) {
    const gf_dtype dts[4] = {GF_F32, GF_F64, GF_I64, GF_BOOL};
    for (int k = 0; k < 4; k++) {
        gf_dtype dt = dts[k];
        double v[12];
        for (int i = 0; i < 12; i++) v[i] = dt == GF_BOOL ? 1 : i + 1;
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            gf_tensor *x = ot_make_layout(layout, dt, 2, SZ(3, 4), v);
            double w[12];
            const int64_t diags[4] = {0, 1, -1, 5};
            for (int di = 0; di < 4; di++) {
                int64_t dg = diags[di];
                gf_tensor *lo = gf_tril(x, dg), *up = gf_triu(x, dg);
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 4; j++) w[i * 4 + j] = j - i <= dg ? v[i * 4 + j] : 0;
                EXPECT_T(lo, dt, 2, SZ(3, 4), w, 0);
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 4; j++) w[i * 4 + j] = j - i >= dg ? v[i * 4 + j] : 0;
                EXPECT_T(up, dt, 2, SZ(3, 4), w, 0);
                REL(lo, up);
            }
            gf_tensor_release(x);
        }
    }
    /* hand-written check and a batch */
    gf_tensor *m = ot_make(GF_F32, 3, SZ(2, 2, 2), DV(1, 2, 3, 4, 5, 6, 7, 8));
    gf_tensor *lm = gf_tril(m, 0), *um = gf_triu(m, 1);
    EXPECT_T(lm, GF_F32, 3, SZ(2, 2, 2), DV(1, 0, 3, 4, 5, 0, 7, 8), 0);
    EXPECT_T(um, GF_F32, 3, SZ(2, 2, 2), DV(0, 2, 0, 0, 0, 6, 0, 0), 0);
    /* an expanded input: every row [1, 2, 3] */
    gf_tensor *row = ot_make(GF_I32, 2, SZ(1, 3), DV(1, 2, 3));
    gf_tensor *ex = gf_expand(row, SZ(3, 3), 2);
    gf_tensor *le = gf_tril(ex, 0), *ue = gf_triu(ex, 0);
    EXPECT_T(le, GF_I32, 2, SZ(3, 3), DV(1, 0, 0, 1, 2, 0, 1, 2, 3), 0);
    EXPECT_T(ue, GF_I32, 2, SZ(3, 3), DV(1, 2, 3, 0, 2, 3, 0, 0, 3), 0);
    REL(row, ex, le, ue);
    gf_tensor *z = gf_zeros(SZ(0, 3), 2, GF_F32, NULL);
    gf_tensor *lz = gf_tril(z, 0);
    EXPECT_T(lz, GF_F32, 2, SZ(0, 3), NULL, 0);
    gf_tensor *v1 = gf_ones(SZ(3), 1, GF_F32, NULL);
    gf_clear_error();
    gf_tensor *bad = gf_triu(v1, 0); /* needs a matrix */
    CHECK(bad == NULL && gf_last_status() != GF_OK);
    REL(m, lm, um, z, lz, v1, bad);
}

static void test_one_hot(void) {
    gf_tensor *i = ot_make(GF_I64, 1, SZ(3), DV(0, 2, 1));
    gf_tensor *y = gf_one_hot(i, 3);
    EXPECT_T(y, GF_I64, 2, SZ(3, 3), DV(1, 0, 0, 0, 0, 1, 0, 1, 0), 0);
    gf_tensor *y5 = gf_one_hot(i, 5);
    EXPECT_T(y5, GF_I64, 2, SZ(3, 5), DV(1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0), 0);
    gf_tensor *ya = gf_one_hot(i, -1); /* max + 1 = 3 */
    EXPECT_T(ya, GF_I64, 2, SZ(3, 3), DV(1, 0, 0, 0, 0, 1, 0, 1, 0), 0);
    gf_tensor *i2 = ot_make_transposed(GF_I64, 2, SZ(2, 1), DV(1, 3));
    gf_tensor *y2 = gf_one_hot(i2, -1);
    EXPECT_T(y2, GF_I64, 3, SZ(2, 1, 4), DV(0, 1, 0, 0, 0, 0, 0, 1), 0);
    gf_tensor *i32 = ot_make_step(GF_I32, 1, SZ(2), DV(1, 0));
    gf_tensor *y32 = gf_one_hot(i32, 2);
    EXPECT_T(y32, GF_I64, 2, SZ(2, 2), DV(0, 1, 1, 0), 0);
    gf_tensor *s = gf_scalar(2, GF_I64, NULL);
    gf_tensor *ys = gf_one_hot(s, 4);
    EXPECT_T(ys, GF_I64, 1, SZ(4), DV(0, 0, 1, 0), 0);
    gf_tensor *e = gf_zeros(SZ(0), 1, GF_I64, NULL);
    gf_tensor *ye = gf_one_hot(e, 3);
    EXPECT_T(ye, GF_I64, 2, SZ(0, 3), NULL, 0);
    gf_clear_error();
    gf_tensor *bad = gf_one_hot(i, 2); /* class 2 of 2 */
    CHECK(bad == NULL && gf_last_status() != GF_OK);
    gf_tensor *neg = ot_make(GF_I64, 1, SZ(1), DV(-1));
    gf_clear_error();
    gf_tensor *bad2 = gf_one_hot(neg, 3);
    CHECK(bad2 == NULL && gf_last_status() != GF_OK);
    gf_tensor *f = ot_make(GF_F32, 1, SZ(1), DV(0));
    EXPECT_FAIL(gf_one_hot(f, 2), GF_ERR_DTYPE);
    REL(i, y, y5, ya, i2, y2, i32, y32, s, ys, e, ye, bad, neg, bad2, f);
}

int main(void) {
    CHECK(gf_init() == GF_OK);
    RUN(test_index_select);
    RUN(test_gather);
    RUN(test_scatter_add);
    RUN(test_index_add);
    RUN(test_embedding);
    RUN(test_cat);
    RUN(test_stack);
    RUN(test_tril_triu);
    RUN(test_one_hot);
    return ot_finish();
}
