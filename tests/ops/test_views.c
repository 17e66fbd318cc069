/* SPDX-License-Identifier: BSD-3-Clause */
/* test_views.c — views share storage and copy nothing; each view's sizes,
 * strides and offset, and writes through a view seen by its base. */
#include "ops_test.h"

/* A [2, 3, 4] tensor holding 0..23. */
static gf_tensor *iota(gf_dtype dt, int rank, const int64_t *sizes) {
    int64_t n = ot_numel(rank, sizes);
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) v[i] = (double)i;
    gf_tensor *t = ot_make(dt, rank, sizes, v);
    free(v);
    return t;
}

#define CHECK_GEOM(t, rank, sizes, strides, off) \
    check_geom_(__FILE__, __LINE__, #t, (t), (rank), (sizes), (strides), (off))
static void check_geom_(const char *file, int line, const char *expr, const gf_tensor *t,
                        int rank, const int64_t *sizes, const int64_t *strides, int64_t off) {
    char msg[1024], a[128], b[128], c[128], d[128];
    if (!t) {
        snprintf(msg, sizeof msg, "%s is NULL: %s", expr, gf_last_error());
        ot_fail_(file, line, msg);
        return;
    }
    int ok = gf_tensor_rank(t) == rank && gf_tensor_offset(t) == off;
    for (int i = 0; ok && i < rank; i++)
        ok = gf_tensor_sizes(t)[i] == sizes[i] && gf_tensor_strides(t)[i] == strides[i];
    if (!ok) {
        ot_shape_str(gf_tensor_rank(t), gf_tensor_sizes(t), a, sizeof a);
        ot_shape_str(gf_tensor_rank(t), gf_tensor_strides(t), b, sizeof b);
        ot_shape_str(rank, sizes, c, sizeof c);
        ot_shape_str(rank, strides, d, sizeof d);
        snprintf(msg, sizeof msg, "%s: sizes %s strides %s offset %lld, expected %s %s %lld",
                 expr, a, b, (long long)gf_tensor_offset(t), c, d, (long long)off);
        ot_fail_(file, line, msg);
        return;
    }
    check_passed_++;
}

static void test_view_reshape(void) {
    gf_tensor *t = iota(GF_F32, 3, SZ(2, 3, 4));
    gf_tensor *v = gf_view(t, SZ(6, 4), 2);
    CHECK_GEOM(v, 2, SZ(6, 4), SZ(4, 1), 0);
    CHECK(v && gf_tensor_shares_storage(v, t));
    EXPECT_T(v, GF_F32, 2, SZ(6, 4),
             DV(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                22, 23),
             0);
    gf_tensor *v2 = gf_view(t, SZ(-1, 2), 2);
    CHECK_GEOM(v2, 2, SZ(12, 2), SZ(2, 1), 0);
    gf_tensor *v3 = gf_view(t, SZ(4, -1, 3), 3);
    CHECK_GEOM(v3, 3, SZ(4, 2, 3), SZ(6, 3, 1), 0);
    gf_tensor *v4 = gf_view(t, SZ(24), 1);
    CHECK_GEOM(v4, 1, SZ(24), SZ(1), 0);
    EXPECT_FAIL(gf_view(t, SZ(5, 5), 2), GF_ERR_SHAPE);
    EXPECT_FAIL(gf_view(t, SZ(-1, 5), 2), GF_ERR_SHAPE);
    gf_clear_error();
    gf_tensor *two = gf_view(t, SZ(-1, -1), 2); /* only one -1 */
    CHECK(two == NULL && gf_last_status() != GF_OK);

    /* a view of a transposed tensor that needs a copy fails; reshape copies */
    gf_tensor *tt = gf_transpose(t, 0, 2); /* [4, 3, 2] */
    EXPECT_FAIL(gf_view(tt, SZ(24), 1), GF_ERR_SHAPE);
    gf_tensor *r = gf_reshape(tt, SZ(4, 6), 2);
    CHECK(r && !gf_tensor_shares_storage(r, t));
    /* r[i][j*2+k] = t[k][j][i] = 12k + 4j + i */
    double want[24];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++) want[i * 6 + j * 2 + k] = 12 * k + 4 * j + i;
    EXPECT_T(r, GF_F32, 2, SZ(4, 6), want, 0);
    /* reshape of a contiguous tensor is a view */
    gf_tensor *r2 = gf_reshape(t, SZ(3, -1), 2);
    CHECK_GEOM(r2, 2, SZ(3, 8), SZ(8, 1), 0);
    CHECK(r2 && gf_tensor_shares_storage(r2, t));

    /* a non-contiguous tensor whose merged dims are still contiguous can be viewed */
    gf_tensor *sl = gf_narrow(t, 1, 0, 2); /* [2, 2, 4], strides [12, 4, 1] */
    gf_tensor *slv = gf_view(sl, SZ(2, 8), 2);
    CHECK_GEOM(slv, 2, SZ(2, 8), SZ(12, 1), 0);
    EXPECT_T(slv, GF_F32, 2, SZ(2, 8),
             DV(0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 17, 18, 19), 0);
    /* splitting a dim of a strided tensor keeps the stride */
    gf_tensor *st = gf_slice(t, 2, 0, 4, 2); /* [2, 3, 2], strides [12, 4, 2] */
    gf_tensor *stv = gf_view(st, SZ(6, 2), 2);
    CHECK_GEOM(stv, 2, SZ(6, 2), SZ(4, 2), 0);

    /* 0-size and 0-dim */
    gf_tensor *e = gf_zeros(SZ(0, 3), 2, GF_F64, NULL);
    gf_tensor *ev = gf_view(e, SZ(3, 0), 2);
    EXPECT_T(ev, GF_F64, 2, SZ(3, 0), NULL, 0);
    gf_tensor *ev2 = gf_reshape(e, SZ(-1), 1);
    EXPECT_T(ev2, GF_F64, 1, SZ(0), NULL, 0);
    gf_tensor *s = gf_scalar(5, GF_I64, NULL);
    gf_tensor *sv = gf_view(s, SZ(1, 1), 2);
    EXPECT_T(sv, GF_I64, 2, SZ(1, 1), DV(5), 0);
    gf_tensor *sv0 = gf_view(sv, NULL, 0);
    EXPECT_T(sv0, GF_I64, 0, NULL, DV(5), 0);
    REL(t, v, v2, v3, v4, tt, r, r2, sl, slv, st, stv, e, ev, ev2, s, sv, sv0);
}

static void test_flatten(void) {
    gf_tensor *t = iota(GF_I32, 3, SZ(2, 3, 2));
    gf_tensor *f = gf_flatten(t);
    CHECK_GEOM(f, 1, SZ(12), SZ(1), 0);
    CHECK(f && gf_tensor_shares_storage(f, t));
    gf_tensor *tt = gf_transpose(t, 0, 1); /* [3, 2, 2] */
    gf_tensor *ft = gf_flatten(tt);
    EXPECT_T(ft, GF_I32, 1, SZ(12), DV(0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11), 0);
    /* as torch.flatten: a 0-dim tensor becomes [1] */
    gf_tensor *s = gf_scalar(3, GF_F32, NULL);
    gf_tensor *fs = gf_flatten(s);
    EXPECT_T(fs, GF_F32, 1, SZ(1), DV(3), 0);
    gf_tensor *e = gf_zeros(SZ(2, 0, 3), 3, GF_F32, NULL);
    gf_tensor *fe = gf_flatten(e);
    EXPECT_T(fe, GF_F32, 1, SZ(0), NULL, 0);
    REL(t, f, tt, ft, s, fs, e, fe);
}

static void test_transpose_permute(void) {
    gf_tensor *t = iota(GF_F64, 3, SZ(2, 3, 4));
    gf_tensor *a = gf_transpose(t, 0, 2);
    CHECK_GEOM(a, 3, SZ(4, 3, 2), SZ(1, 4, 12), 0);
    CHECK(a && gf_tensor_shares_storage(a, t) && !gf_tensor_is_contiguous(a));
    double want[24];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++) want[i * 6 + j * 2 + k] = 12 * k + 4 * j + i;
    EXPECT_T(a, GF_F64, 3, SZ(4, 3, 2), want, 0);
    gf_tensor *b = gf_transpose(t, -1, -2);
    CHECK_GEOM(b, 3, SZ(2, 4, 3), SZ(12, 1, 4), 0);
    gf_tensor *same = gf_transpose(t, 1, 1);
    CHECK_GEOM(same, 3, SZ(2, 3, 4), SZ(12, 4, 1), 0);
    EXPECT_FAIL(gf_transpose(t, 0, 3), GF_ERR_INDEX);

    gf_tensor *p = gf_permute(t, (const int[]){2, 0, 1}, 3);
    CHECK_GEOM(p, 3, SZ(4, 2, 3), SZ(1, 12, 4), 0);
    /* p[i][j][k] = t[j][k][i] */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) want[i * 6 + j * 3 + k] = 12 * j + 4 * k + i;
    EXPECT_T(p, GF_F64, 3, SZ(4, 2, 3), want, 0);
    gf_tensor *pn = gf_permute(t, (const int[]){-1, 0, 1}, 3);
    CHECK_GEOM(pn, 3, SZ(4, 2, 3), SZ(1, 12, 4), 0);
    gf_clear_error();
    gf_tensor *bad = gf_permute(t, (const int[]){0, 0, 1}, 3);
    CHECK(bad == NULL && gf_last_status() != GF_OK);
    gf_clear_error();
    gf_tensor *bad2 = gf_permute(t, (const int[]){0, 1}, 2);
    CHECK(bad2 == NULL && gf_last_status() != GF_OK);
    /* transposing twice gives back the contiguous layout */
    gf_tensor *tt = gf_transpose(a, 0, 2);
    CHECK(tt && gf_tensor_is_contiguous(tt));
    /* 0-dim: permute with no dims */
    gf_tensor *s = gf_scalar(1.5, GF_F64, NULL);
    gf_tensor *ps = gf_permute(s, NULL, 0);
    EXPECT_T(ps, GF_F64, 0, NULL, DV(1.5), 0);
    REL(t, a, b, same, p, pn, bad, bad2, tt, s, ps);
}

static void test_slice_narrow_select(void) {
    gf_tensor *x = iota(GF_F32, 2, SZ(4, 6));
    gf_tensor *a = gf_slice(x, 1, 1, 6, 2);
    CHECK_GEOM(a, 2, SZ(4, 3), SZ(6, 2), 1);
    EXPECT_T(a, GF_F32, 2, SZ(4, 3), DV(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23), 0);
    CHECK(a && gf_tensor_shares_storage(a, x));
    gf_tensor *b = gf_slice(x, -1, -4, -1, 1); /* cols 2, 3, 4 */
    CHECK_GEOM(b, 2, SZ(4, 3), SZ(6, 1), 2);
    gf_tensor *c = gf_slice(x, 0, -100, 100, 1); /* clamped */
    CHECK_GEOM(c, 2, SZ(4, 6), SZ(6, 1), 0);
    gf_tensor *d = gf_slice(x, 1, 4, 2, 1); /* start past end: empty */
    CHECK(d && ot_same_shape(d, 2, SZ(4, 0)));
    CHECK(gf_tensor_numel(d) == 0);
    gf_tensor *e = gf_slice(x, 0, 0, 4, 3); /* rows 0 and 3 */
    CHECK_GEOM(e, 2, SZ(2, 6), SZ(18, 1), 0);
    EXPECT_T(e, GF_F32, 2, SZ(2, 6), DV(0, 1, 2, 3, 4, 5, 18, 19, 20, 21, 22, 23), 0);
    gf_tensor *f = gf_slice(x, 1, 1, 5, 3); /* cols 1 and 4 */
    CHECK_GEOM(f, 2, SZ(4, 2), SZ(6, 3), 1);
    gf_clear_error();
    gf_tensor *g = gf_slice(x, 1, 0, 6, 0);
    CHECK(g == NULL && gf_last_status() != GF_OK);
    EXPECT_FAIL(gf_slice(x, 2, 0, 1, 1), GF_ERR_INDEX);

    gf_tensor *n = gf_narrow(x, 0, 1, 2);
    CHECK_GEOM(n, 2, SZ(2, 6), SZ(6, 1), 6);
    gf_tensor *n2 = gf_narrow(x, -1, 4, 2);
    EXPECT_T(n2, GF_F32, 2, SZ(4, 2), DV(4, 5, 10, 11, 16, 17, 22, 23), 0);
    gf_clear_error();
    gf_tensor *n3 = gf_narrow(x, 0, 3, 2); /* 3 + 2 > 4 */
    CHECK(n3 == NULL && gf_last_status() != GF_OK);

    gf_tensor *s0 = gf_select(x, 0, 1);
    CHECK_GEOM(s0, 1, SZ(6), SZ(1), 6);
    EXPECT_T(s0, GF_F32, 1, SZ(6), DV(6, 7, 8, 9, 10, 11), 0);
    gf_tensor *s1 = gf_select(x, 1, -1); /* last column, as PyTorch */
    CHECK_GEOM(s1, 1, SZ(4), SZ(6), 5);
    EXPECT_T(s1, GF_F32, 1, SZ(4), DV(5, 11, 17, 23), 0);
    gf_tensor *s2 = gf_select(s1, 0, 2); /* 0-dim */
    CHECK_GEOM(s2, 0, NULL, NULL, 17);
    EXPECT_T(s2, GF_F32, 0, NULL, DV(17), 0);
    EXPECT_FAIL(gf_select(x, 0, 4), GF_ERR_INDEX);
    EXPECT_FAIL(gf_select(x, 1, -7), GF_ERR_INDEX);

    /* views of views compose offsets and strides */
    gf_tensor *r = gf_select(x, 0, 2);           /* offset 12 */
    gf_tensor *rs = gf_slice(r, 0, 1, 5, 2);     /* 13, 15 */
    CHECK_GEOM(rs, 1, SZ(2), SZ(2), 13);
    EXPECT_T(rs, GF_F32, 1, SZ(2), DV(13, 15), 0);
    gf_tensor *tr = gf_transpose(x, 0, 1);       /* [6, 4] */
    gf_tensor *trs = gf_slice(tr, 1, 1, 4, 2);   /* rows 1, 3 of x */
    CHECK_GEOM(trs, 2, SZ(6, 2), SZ(1, 12), 6);
    gf_tensor *trss = gf_select(trs, 0, 5);
    EXPECT_T(trss, GF_F32, 1, SZ(2), DV(11, 23), 0);

    /* 0-size dims */
    gf_tensor *z = gf_zeros(SZ(0, 3), 2, GF_I32, NULL);
    gf_tensor *zs = gf_select(z, 1, 2);
    EXPECT_T(zs, GF_I32, 1, SZ(0), NULL, 0);
    EXPECT_FAIL(gf_select(z, 0, 0), GF_ERR_INDEX);
    REL(x, a, b, c, d, e, f, g, n, n2, n3, s0, s1, s2, r, rs, tr, trs, trss, z, zs);
}

static void test_negative_indices(void) {
    /* gf_select's index and gf_narrow's start count from the end when
     * negative, as in PyTorch; the ranges are [-size, size) and [-size, size]. */
    gf_tensor *x = iota(GF_F32, 2, SZ(4, 6));
    gf_tensor *s = gf_select(x, 0, -4); /* the first row */
    EXPECT_T(s, GF_F32, 1, SZ(6), DV(0, 1, 2, 3, 4, 5), 0);
    gf_tensor *s2 = gf_select(x, -1, -2); /* column 4 */
    CHECK_GEOM(s2, 1, SZ(4), SZ(6), 4);
    EXPECT_FAIL(gf_select(x, 0, -5), GF_ERR_INDEX);
    CHECK_CONTAINS(gf_last_error(), "-5");
    gf_tensor *n = gf_narrow(x, 1, -2, 2); /* the last two columns */
    EXPECT_T(n, GF_F32, 2, SZ(4, 2), DV(4, 5, 10, 11, 16, 17, 22, 23), 0);
    gf_tensor *all = gf_narrow(x, 0, -4, 4);
    CHECK_GEOM(all, 2, SZ(4, 6), SZ(6, 1), 0);
    gf_tensor *last = gf_narrow(x, 0, -1, 1);
    CHECK_GEOM(last, 2, SZ(1, 6), SZ(6, 1), 18);
    gf_tensor *end = gf_narrow(x, 0, 4, 0); /* start == size, empty */
    CHECK(end && ot_same_shape(end, 2, SZ(0, 6)));
    EXPECT_FAIL(gf_narrow(x, 0, -5, 1), GF_ERR_INDEX);
    CHECK_CONTAINS(gf_last_error(), "start -5");
    CHECK_CONTAINS(gf_last_error(), "[-4, 4]");
    EXPECT_FAIL(gf_narrow(x, 0, -1, 2), GF_ERR_INDEX); /* runs past the end */
    EXPECT_FAIL(gf_narrow(x, 0, 5, 0), GF_ERR_INDEX);
    EXPECT_FAIL(gf_narrow(x, 0, 0, -1), GF_ERR_INDEX);
    REL(x, s, s2, n, all, last, end);
    gf_clear_error();
}

static void test_expand_squeeze(void) {
    gf_tensor *c = ot_make(GF_F32, 2, SZ(3, 1), DV(1, 2, 3));
    gf_tensor *e = gf_expand(c, SZ(2, 3, 4), 3);
    CHECK_GEOM(e, 3, SZ(2, 3, 4), SZ(0, 1, 0), 0);
    CHECK(e && gf_tensor_shares_storage(e, c));
    EXPECT_T(e, GF_F32, 3, SZ(2, 3, 4),
             DV(1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), 0);
    gf_tensor *e2 = gf_expand(c, SZ(-1, 5), 2);
    CHECK_GEOM(e2, 2, SZ(3, 5), SZ(1, 0), 0);
    EXPECT_FAIL(gf_expand(c, SZ(2, 4), 2), GF_ERR_SHAPE);
    gf_tensor *s = gf_scalar(7, GF_I64, NULL);
    gf_tensor *es = gf_expand(s, SZ(2, 2), 2);
    CHECK_GEOM(es, 2, SZ(2, 2), SZ(0, 0), 0);
    EXPECT_T(es, GF_I64, 2, SZ(2, 2), DV(7, 7, 7, 7), 0);
    gf_tensor *ez = gf_expand(c, SZ(0, 3, 2), 3); /* a new leading dim of size 0 */
    EXPECT_T(ez, GF_F32, 3, SZ(0, 3, 2), NULL, 0);
    /* contiguous copy of an expanded tensor materialises the repeats */
    gf_tensor *ec = gf_contiguous(e2);
    EXPECT_T(ec, GF_F32, 2, SZ(3, 5), DV(1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3), 0);
    CHECK(ec && gf_tensor_is_contiguous(ec));

    gf_tensor *t = ot_make(GF_F64, 3, SZ(1, 3, 1), DV(4, 5, 6));
    gf_tensor *q0 = gf_squeeze(t, 0);
    CHECK_GEOM(q0, 2, SZ(3, 1), SZ(1, 1), 0);
    gf_tensor *q1 = gf_squeeze(t, 1); /* size 3: no-op */
    CHECK_GEOM(q1, 3, SZ(1, 3, 1), SZ(3, 1, 1), 0);
    gf_tensor *qn = gf_squeeze(t, -1);
    CHECK(qn && ot_same_shape(qn, 2, SZ(1, 3)));
    gf_tensor *qa = gf_squeeze_all(t);
    CHECK_GEOM(qa, 1, SZ(3), SZ(1), 0);
    CHECK(qa && gf_tensor_shares_storage(qa, t));
    EXPECT_FAIL(gf_squeeze(t, 3), GF_ERR_INDEX);

    gf_tensor *v = ot_make(GF_F32, 1, SZ(3), DV(1, 2, 3));
    gf_tensor *u0 = gf_unsqueeze(v, 0);
    CHECK(u0 && ot_same_shape(u0, 2, SZ(1, 3)) && gf_tensor_strides(u0)[1] == 1);
    gf_tensor *u1 = gf_unsqueeze(v, -1);
    CHECK_GEOM(u1, 2, SZ(3, 1), SZ(1, 1), 0);
    gf_tensor *m = iota(GF_F32, 2, SZ(2, 3));
    gf_tensor *um = gf_unsqueeze(m, 1);
    CHECK(um && ot_same_shape(um, 3, SZ(2, 1, 3)) && gf_tensor_strides(um)[0] == 3 &&
          gf_tensor_strides(um)[2] == 1);
    gf_tensor *um2 = gf_unsqueeze(m, 2); /* rank + 1 positions */
    CHECK_GEOM(um2, 3, SZ(2, 3, 1), SZ(3, 1, 1), 0);
    EXPECT_FAIL(gf_unsqueeze(m, 3), GF_ERR_INDEX);
    gf_tensor *s2 = gf_scalar(2, GF_F32, NULL);
    gf_tensor *us = gf_unsqueeze(s2, 0);
    EXPECT_T(us, GF_F32, 1, SZ(1), DV(2), 0);
    gf_tensor *sq = gf_squeeze_all(us);
    EXPECT_T(sq, GF_F32, 0, NULL, DV(2), 0);
    REL(c, e, e2, s, es, ez, ec, t, q0, q1, qn, qa, v, u0, u1, m, um, um2, s2, us, sq);
}

static void test_diagonal(void) {
    gf_tensor *x = iota(GF_F32, 2, SZ(3, 4));
    gf_tensor *d0 = gf_diagonal(x, 0, 0, 1);
    CHECK_GEOM(d0, 1, SZ(3), SZ(5), 0);
    EXPECT_T(d0, GF_F32, 1, SZ(3), DV(0, 5, 10), 0);
    CHECK(d0 && gf_tensor_shares_storage(d0, x));
    gf_tensor *d1 = gf_diagonal(x, 1, 0, 1);
    CHECK_GEOM(d1, 1, SZ(3), SZ(5), 1);
    EXPECT_T(d1, GF_F32, 1, SZ(3), DV(1, 6, 11), 0);
    gf_tensor *d2 = gf_diagonal(x, 2, 0, 1);
    EXPECT_T(d2, GF_F32, 1, SZ(2), DV(2, 7), 0);
    gf_tensor *dm = gf_diagonal(x, -1, 0, 1);
    CHECK_GEOM(dm, 1, SZ(2), SZ(5), 4);
    EXPECT_T(dm, GF_F32, 1, SZ(2), DV(4, 9), 0);
    gf_tensor *dr = gf_diagonal(x, 0, 1, 0); /* dims swapped: same diagonal */
    EXPECT_T(dr, GF_F32, 1, SZ(3), DV(0, 5, 10), 0);
    gf_tensor *dz = gf_diagonal(x, 4, 0, 1); /* beyond the matrix: empty */
    EXPECT_T(dz, GF_F32, 1, SZ(0), NULL, 0);
    gf_tensor *dz2 = gf_diagonal(x, -3, 0, 1);
    EXPECT_T(dz2, GF_F32, 1, SZ(0), NULL, 0);

    /* batched: the diagonal dim goes last */
    gf_tensor *b = iota(GF_F64, 3, SZ(2, 3, 3));
    gf_tensor *bd = gf_diagonal(b, 0, 1, 2);
    CHECK_GEOM(bd, 2, SZ(2, 3), SZ(9, 4), 0);
    EXPECT_T(bd, GF_F64, 2, SZ(2, 3), DV(0, 4, 8, 9, 13, 17), 0);
    gf_tensor *bd2 = gf_diagonal(b, 0, 0, 2); /* r[j][i] = b[i][j][i] */
    CHECK_GEOM(bd2, 2, SZ(3, 2), SZ(3, 10), 0);
    EXPECT_T(bd2, GF_F64, 2, SZ(3, 2), DV(0, 10, 3, 13, 6, 16), 0);
    gf_tensor *bd3 = gf_diagonal(b, 1, -2, -1);
    EXPECT_T(bd3, GF_F64, 2, SZ(2, 2), DV(1, 5, 10, 14), 0);
    gf_clear_error();
    gf_tensor *bad = gf_diagonal(x, 0, 0, 0);
    CHECK(bad == NULL && gf_last_status() != GF_OK);
    EXPECT_FAIL(gf_diagonal(x, 0, 0, 2), GF_ERR_INDEX);
    REL(x, d0, d1, d2, dm, dr, dz, dz2, b, bd, bd2, bd3, bad);
}

static void test_split_chunk(void) {
    gf_tensor *x = iota(GF_I64, 1, SZ(5));
    gf_tensor *out[8] = {0};
    int n = 0;
    CHECK_OK(gf_split(x, 2, 0, out, 8, &n));
    CHECK(n == 3);
    if (n == 3) {
        EXPECT_T(out[0], GF_I64, 1, SZ(2), DV(0, 1), 0);
        EXPECT_T(out[1], GF_I64, 1, SZ(2), DV(2, 3), 0);
        EXPECT_T(out[2], GF_I64, 1, SZ(1), DV(4), 0);
        CHECK_GEOM(out[1], 1, SZ(2), SZ(1), 2);
        CHECK(gf_tensor_shares_storage(out[2], x));
    }
    for (int i = 0; i < n; i++) gf_tensor_release(out[i]), out[i] = NULL;

    CHECK_OK(gf_chunk(x, 3, 0, out, 8, &n)); /* chunk size ceil(5 / 3) = 2 */
    CHECK(n == 3);
    if (n == 3) {
        CHECK(ot_same_shape(out[0], 1, SZ(2)) && ot_same_shape(out[2], 1, SZ(1)));
        EXPECT_T(out[2], GF_I64, 1, SZ(1), DV(4), 0);
    }
    for (int i = 0; i < n; i++) gf_tensor_release(out[i]), out[i] = NULL;

    gf_tensor *y = iota(GF_F32, 1, SZ(6));
    CHECK_OK(gf_chunk(y, 4, 0, out, 8, &n)); /* as torch.chunk: size 2, 3 pieces */
    CHECK(n == 3);
    for (int i = 0; i < n; i++) {
        CHECK(ot_same_shape(out[i], 1, SZ(2)));
        gf_tensor_release(out[i]), out[i] = NULL;
    }

    gf_tensor *m = iota(GF_F32, 2, SZ(2, 5));
    CHECK_OK(gf_split(m, 3, -1, out, 8, &n));
    CHECK(n == 2);
    if (n == 2) {
        CHECK_GEOM(out[0], 2, SZ(2, 3), SZ(5, 1), 0);
        CHECK_GEOM(out[1], 2, SZ(2, 2), SZ(5, 1), 3);
        EXPECT_T(out[1], GF_F32, 2, SZ(2, 2), DV(3, 4, 8, 9), 0);
    }
    for (int i = 0; i < n; i++) gf_tensor_release(out[i]), out[i] = NULL;

    /* too small an output array: INVALID and nothing handed out */
    gf_clear_error();
    n = -1;
    CHECK(gf_split(x, 1, 0, out, 3, &n) == GF_ERR_INVALID);
    CHECK(out[0] == NULL && out[1] == NULL && out[2] == NULL);
    CHECK(gf_last_status() == GF_ERR_INVALID);
    REL(x, y, m);
}

static void test_write_through_views(void) {
    gf_tensor *base = gf_zeros(SZ(3, 4), 2, GF_F32, NULL);
    uint64_t v0 = gf_tensor_version(base);
    gf_tensor *col = gf_select(base, 1, 2);
    CHECK_OK(gf_tensor_from_host(col, (const float[]){1, 2, 3}, 3 * sizeof(float)));
    EXPECT_T(base, GF_F32, 2, SZ(3, 4), DV(0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0), 0);
    CHECK(gf_tensor_version(base) > v0);
    CHECK(gf_tensor_version(col) == gf_tensor_version(base));

    gf_tensor *tr = gf_transpose(base, 0, 1); /* [4, 3] */
    gf_tensor *row = gf_slice(tr, 0, 0, 4, 3); /* rows 0 and 3 of tr = cols 0, 3 */
    CHECK_OK(gf_tensor_from_host(row, (const float[]){-1, -2, -3, -4, -5, -6}, 6 * sizeof(float)));
    EXPECT_T(base, GF_F32, 2, SZ(3, 4), DV(-1, 0, 1, -4, -2, 0, 2, -5, -3, 0, 3, -6), 0);
    /* the base's new values are seen through every view */
    EXPECT_T(col, GF_F32, 1, SZ(3), DV(1, 2, 3), 0);
    gf_tensor *d = gf_diagonal(base, 0, 0, 1);
    EXPECT_T(d, GF_F32, 1, SZ(3), DV(-1, 0, 3), 0);
    CHECK_OK(gf_tensor_from_host(d, (const float[]){9, 9, 9}, 3 * sizeof(float)));
    EXPECT_T(base, GF_F32, 2, SZ(3, 4), DV(9, 0, 1, -4, -2, 9, 2, -5, -3, 0, 9, -6), 0);
    /* a view of a clone is independent of the base */
    gf_tensor *cl = gf_clone(base);
    gf_tensor *cv = gf_select(cl, 0, 0);
    CHECK(!gf_tensor_shares_storage(cv, base));
    CHECK(gf_tensor_shares_storage(cv, cl));
    CHECK_OK(gf_tensor_from_host(cv, (const float[]){0, 0, 0, 0}, 4 * sizeof(float)));
    EXPECT_T(base, GF_F32, 2, SZ(3, 4), DV(9, 0, 1, -4, -2, 9, 2, -5, -3, 0, 9, -6), 0);
    /* two views of one base share storage with each other */
    CHECK(gf_tensor_shares_storage(col, row));
    REL(base, col, tr, row, d, cl, cv);
}

int main(void) {
    CHECK(gf_init() == GF_OK);
    RUN(test_view_reshape);
    RUN(test_flatten);
    RUN(test_transpose_permute);
    RUN(test_slice_narrow_select);
    RUN(test_negative_indices);
    RUN(test_expand_squeeze);
    RUN(test_diagonal);
    RUN(test_split_chunk);
    RUN(test_write_through_views);
    return ot_finish();
}
