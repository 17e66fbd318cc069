/* SPDX-License-Identifier: BSD-3-Clause */
/* test_shape_index.c — the shape and indexing ops of graft/shape.h (flip,
 * roll, repeat, tile, repeat_interleave, pad, unbind, split_with_sizes,
 * unfold, take_along_dim, scatter, nonzero, masked_select, masked_scatter,
 * index_put, einsum): forward values against hand-computed ones or host
 * loops, on contiguous, strided, broadcast, 0-size and 0-dim inputs, f32
 * and f64 and integer/bool. Tensors are made on the default device, so the
 * suite also runs on every other device here (GRAFT_DEVICE). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "shape_test.h"


static void test_flip_roll(void) {
    gf_scope_begin();
    const double v[6] = {1, 2, 3, 4, 5, 6};
    for (int lay = 0; lay < OT_NLAYOUTS; lay++) {
        gf_tensor *x = st_make(lay, GF_F32, 2, SZ(2, 3), v);
        EXPECT_T(gf_flip(x, (const int[]){1}, 1), GF_F32, 2, SZ(2, 3), DV(3, 2, 1, 6, 5, 4), 0);
        EXPECT_T(gf_flip(x, (const int[]){0, -1}, 2), GF_F32, 2, SZ(2, 3),
                 DV(6, 5, 4, 3, 2, 1), 0);
        EXPECT_T(gf_roll(x, (const int64_t[]){1}, 1, (const int[]){1}, 1), GF_F32, 2, SZ(2, 3),
                 DV(3, 1, 2, 6, 4, 5), 0);
        EXPECT_T(gf_roll(x, (const int64_t[]){-4, 1}, 2, (const int[]){1, 0}, 2), GF_F32, 2,
                 SZ(2, 3), DV(5, 6, 4, 2, 3, 1), 0);
        EXPECT_T(gf_roll(x, (const int64_t[]){2}, 1, NULL, 0), GF_F32, 2, SZ(2, 3),
                 DV(5, 6, 1, 2, 3, 4), 0);
    }
    gf_tensor *xi = ot_make(GF_I64, 1, SZ(3), DV(7, 8, 9));
    EXPECT_T(gf_flip(xi, (const int[]){0}, 1), GF_I64, 1, SZ(3), DV(9, 8, 7), 0);
    gf_tensor *xb = ot_make(GF_BOOL, 1, SZ(3), DV(1, 0, 0));
    EXPECT_T(gf_roll(xb, (const int64_t[]){1}, 1, (const int[]){0}, 1), GF_BOOL, 1, SZ(3),
             DV(0, 1, 0), 0);
    gf_tensor *e = gf_zeros(SZ(0, 2), 2, GF_F32, NULL);
    EXPECT_T(gf_flip(e, (const int[]){0}, 1), GF_F32, 2, SZ(0, 2), NULL, 0);
    EXPECT_T(gf_roll(e, (const int64_t[]){3}, 1, (const int[]){0}, 1), GF_F32, 2, SZ(0, 2),
             NULL, 0);
    gf_tensor *s = gf_scalar(5.0, GF_F32, NULL);
    EXPECT_T(gf_flip(s, (const int[]){0}, 1), GF_F32, 0, NULL, DV(5), 0);
    EXPECT_T(gf_roll(s, (const int64_t[]){3}, 1, NULL, 0), GF_F32, 0, NULL, DV(5), 0);
    gf_scope_end();
}

static void test_repeat_tile(void) {
    gf_scope_begin();
    for (int k = 0; k < NFLOATS; k++) {
        gf_dtype dt = FLOATS[k];
        gf_tensor *x = st_step(dt, 2, SZ(2, 2), DV(1, 2, 3, 4));
        EXPECT_T(gf_repeat(x, SZ(2, 1), 2), dt, 2, SZ(4, 2), DV(1, 2, 3, 4, 1, 2, 3, 4), 0);
        EXPECT_T(gf_repeat(x, SZ(1, 2), 2), dt, 2, SZ(2, 4), DV(1, 2, 1, 2, 3, 4, 3, 4), 0);
        EXPECT_T(gf_repeat(x, SZ(2, 1, 1), 3), dt, 3, SZ(2, 2, 2), DV(1, 2, 3, 4, 1, 2, 3, 4), 0);
        EXPECT_T(gf_repeat(x, SZ(0, 1), 2), dt, 2, SZ(0, 2), NULL, 0);
        EXPECT_T(gf_tile(x, SZ(2), 1), dt, 2, SZ(2, 4), DV(1, 2, 1, 2, 3, 4, 3, 4), 0);
        EXPECT_T(gf_repeat_interleave(x, 2, 0), dt, 2, SZ(4, 2), DV(1, 2, 1, 2, 3, 4, 3, 4), 0);
        EXPECT_T(gf_repeat_interleave(x, 2, GF_DIM_ALL), dt, 1, SZ(8),
                 DV(1, 1, 2, 2, 3, 3, 4, 4), 0);
        gf_tensor *r = ot_make(GF_I64, 1, SZ(2), DV(0, 3));
        EXPECT_T(gf_repeat_interleave_tensor(x, r, 1), dt, 2, SZ(2, 3), DV(2, 2, 2, 4, 4, 4), 0);
    }
    gf_tensor *s = gf_scalar(2.0, GF_I32, NULL);
    EXPECT_T(gf_repeat(s, SZ(3), 1), GF_I32, 1, SZ(3), DV(2, 2, 2), 0);
    EXPECT_T(gf_repeat(s, NULL, 0), GF_I32, 0, NULL, DV(2), 0);
    EXPECT_T(gf_tile(s, SZ(1, 2), 2), GF_I32, 2, SZ(1, 2), DV(2, 2), 0);
    EXPECT_T(gf_repeat_interleave(s, 3, GF_DIM_ALL), GF_I32, 1, SZ(3), DV(2, 2, 2), 0);
    /* rank 8: the last-resort cat path */
    gf_tensor *r8 = gf_ones(SZ(1, 1, 1, 1, 1, 1, 1, 2), 8, GF_F32, NULL);
    EXPECT_T(gf_repeat(r8, SZ(1, 1, 1, 1, 1, 1, 1, 2), 8), GF_F32, 8, SZ(1, 1, 1, 1, 1, 1, 1, 4),
             DV(1, 1, 1, 1), 0);
    gf_scope_end();
}

static void test_pad(void) {
    gf_scope_begin();
    for (int lay = 0; lay < 2; lay++) {
        gf_tensor *x = st_make(lay, GF_F32, 1, SZ(3), DV(1, 2, 3));
        EXPECT_T(gf_pad(x, SZ(2, 1), 2, GF_PAD_CONSTANT, 0), GF_F32, 1, SZ(6),
                 DV(0, 0, 1, 2, 3, 0), 0);
        EXPECT_T(gf_pad(x, SZ(1, 0), 2, GF_PAD_CONSTANT, -7.5), GF_F32, 1, SZ(4),
                 DV(-7.5, 1, 2, 3), 0);
        EXPECT_T(gf_pad(x, SZ(-1, 1), 2, GF_PAD_CONSTANT, 0), GF_F32, 1, SZ(3), DV(2, 3, 0), 0);
        EXPECT_T(gf_pad(x, SZ(2, 2), 2, GF_PAD_REFLECT, 0), GF_F32, 1, SZ(7),
                 DV(3, 2, 1, 2, 3, 2, 1), 0);
        EXPECT_T(gf_pad(x, SZ(2, 1), 2, GF_PAD_REPLICATE, 0), GF_F32, 1, SZ(6),
                 DV(1, 1, 1, 2, 3, 3), 0);
        EXPECT_T(gf_pad(x, SZ(3, 1), 2, GF_PAD_CIRCULAR, 0), GF_F32, 1, SZ(7),
                 DV(1, 2, 3, 1, 2, 3, 1), 0);
    }
    for (int k = 0; k < NFLOATS; k++) {
        gf_dtype dt = FLOATS[k];
        gf_tensor *m = st_tr(dt, 3, SZ(1, 2, 2), DV(1, 2, 3, 4));
        EXPECT_T(gf_pad(m, SZ(1, 0, 0, 1), 4, GF_PAD_REFLECT, 0), dt, 3, SZ(1, 3, 3),
                 DV(2, 1, 2, 4, 3, 4, 2, 1, 2), 0);
        EXPECT_T(gf_pad(m, SZ(0, 1, 1, 0), 4, GF_PAD_REPLICATE, 0), dt, 3, SZ(1, 3, 3),
                 DV(1, 2, 2, 1, 2, 2, 3, 4, 4), 0);
        EXPECT_T(gf_pad(m, SZ(1, 1, 1, 1), 4, GF_PAD_CIRCULAR, 0), dt, 3, SZ(1, 4, 4),
                 DV(4, 3, 4, 3, 2, 1, 2, 1, 4, 3, 4, 3, 2, 1, 2, 1), 0);
        EXPECT_T(gf_pad(m, SZ(0, 0, 0, 0, 1, 0), 6, GF_PAD_CONSTANT, 9), dt, 3, SZ(2, 2, 2),
                 DV(9, 9, 9, 9, 1, 2, 3, 4), 0);
    }
    gf_tensor *xi = ot_make(GF_I64, 1, SZ(2), DV(5, 6));
    EXPECT_T(gf_pad(xi, SZ(1, 1), 2, GF_PAD_CONSTANT, 3), GF_I64, 1, SZ(4), DV(3, 5, 6, 3), 0);
    gf_tensor *e = gf_zeros(SZ(0), 1, GF_F32, NULL);
    EXPECT_T(gf_pad(e, SZ(1, 1), 2, GF_PAD_CONSTANT, 2), GF_F32, 1, SZ(2), DV(2, 2), 0);
    EXPECT_T(gf_pad(e, SZ(0, 0), 2, GF_PAD_CIRCULAR, 0), GF_F32, 1, SZ(0), NULL, 0);
    gf_tensor *s = gf_scalar(1.0, GF_F32, NULL);
    EXPECT_T(gf_pad(s, NULL, 0, GF_PAD_CONSTANT, 0), GF_F32, 0, NULL, DV(1), 0);
    gf_scope_end();
}

static void test_unbind_split_unfold(void) {
    gf_scope_begin();
    gf_tensor *out[4] = {0};
    int n = 0;
    gf_tensor *x = st_tr(GF_F32, 2, SZ(3, 2), DV(1, 2, 3, 4, 5, 6));
    CHECK_OK(gf_unbind(x, 1, out, 4, &n));
    CHECK(n == 2);
    if (n == 2) {
        EXPECT_T(out[0], GF_F32, 1, SZ(3), DV(1, 3, 5), 0);
        EXPECT_T(out[1], GF_F32, 1, SZ(3), DV(2, 4, 6), 0);
    }
    CHECK_OK(gf_split_with_sizes(x, SZ(1, 0, 2), 3, 0, out, 4));
    EXPECT_T(out[0], GF_F32, 2, SZ(1, 2), DV(1, 2), 0);
    EXPECT_T(out[1], GF_F32, 2, SZ(0, 2), NULL, 0);
    EXPECT_T(out[2], GF_F32, 2, SZ(2, 2), DV(3, 4, 5, 6), 0);
    for (int k = 0; k < NFLOATS; k++) {
        gf_dtype dt = FLOATS[k];
        gf_tensor *a = st_step(dt, 1, SZ(7), DV(0, 1, 2, 3, 4, 5, 6));
        EXPECT_T(gf_unfold(a, 0, 3, 2), dt, 2, SZ(3, 3), DV(0, 1, 2, 2, 3, 4, 4, 5, 6), 0);
        EXPECT_T(gf_unfold(a, 0, 2, 4), dt, 2, SZ(2, 2), DV(0, 1, 4, 5), 0);
        EXPECT_T(gf_unfold(a, 0, 0, 3), dt, 2, SZ(3, 0), NULL, 0);
        /* dim 0 of [4, 2]: windows [nw, 2, size] */
        gf_tensor *b = st_tr(dt, 2, SZ(4, 2), DV(1, 2, 3, 4, 5, 6, 7, 8));
        EXPECT_T(gf_unfold(b, 0, 2, 2), dt, 3, SZ(2, 2, 2), DV(1, 3, 2, 4, 5, 7, 6, 8), 0);
    }
    gf_tensor *s = gf_scalar(3.0, GF_I64, NULL);
    EXPECT_T(gf_unfold(s, 0, 1, 1), GF_I64, 1, SZ(1), DV(3), 0);
    gf_scope_end();
}

static void test_take_scatter(void) {
    gf_scope_begin();
    for (int k = 0; k < NFLOATS; k++) {
        gf_dtype dt = FLOATS[k];
        gf_tensor *x = st_tr(dt, 2, SZ(2, 3), DV(10, 20, 30, 40, 50, 60));
        gf_tensor *i = ot_make(GF_I64, 2, SZ(2, 1), DV(2, 0));
        EXPECT_T(gf_take_along_dim(x, i, 1), dt, 2, SZ(2, 1), DV(30, 40), 0);
        gf_tensor *ib = ot_make(GF_I64, 2, SZ(1, 2), DV(1, 0));
        EXPECT_T(gf_take_along_dim(x, ib, 1), dt, 2, SZ(2, 2), DV(20, 10, 50, 40), 0);
        gf_tensor *ia = ot_make(GF_I64, 1, SZ(3), DV(5, 0, 2));
        EXPECT_T(gf_take_along_dim(x, ia, GF_DIM_ALL), dt, 1, SZ(3), DV(60, 10, 30), 0);
        /* scatter along dim 1 with a duplicate target (the last wins) */
        gf_tensor *si = ot_make(GF_I64, 2, SZ(2, 2), DV(2, 2, 0, 1));
        gf_tensor *src = st_tr(dt, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
        EXPECT_T(gf_scatter(x, 1, si, src), dt, 2, SZ(2, 3), DV(10, 20, 2, 4, 5, 60), 0);
        EXPECT_T(gf_scatter_value(x, 0, ot_make(GF_I64, 2, SZ(1, 2), DV(1, 0)), -1), dt, 2,
                 SZ(2, 3), DV(10, -1, 30, -1, 50, 60), 0);
        EXPECT_T(gf_scatter(x, 1, gf_zeros(SZ(2, 0), 2, GF_I64, NULL), src), dt, 2, SZ(2, 3),
                 DV(10, 20, 30, 40, 50, 60), 0);
    }
    gf_tensor *xi = ot_make(GF_I32, 1, SZ(4), DV(1, 2, 3, 4));
    EXPECT_T(gf_scatter(xi, 0, ot_make(GF_I64, 1, SZ(2), DV(3, 0)),
                        ot_make(GF_I32, 1, SZ(2), DV(-9, -8))),
             GF_I32, 1, SZ(4), DV(-8, 2, 3, -9), 0);
    gf_tensor *xb = ot_make(GF_BOOL, 1, SZ(3), DV(0, 0, 1));
    EXPECT_T(gf_scatter_value(xb, 0, ot_make(GF_I64, 1, SZ(2), DV(0, 2)), 1), GF_BOOL, 1,
             SZ(3), DV(1, 0, 1), 0);
    gf_scope_end();
}

static void test_masks(void) {
    gf_scope_begin();
    gf_tensor *x = st_tr(GF_F32, 2, SZ(2, 3), DV(0, 1.5, 0, -2, 0, NAN));
    EXPECT_T(gf_nonzero(x), GF_I64, 2, SZ(3, 2), DV(0, 1, 1, 0, 1, 2), 0);
    EXPECT_T(gf_nonzero(gf_zeros(SZ(2, 2), 2, GF_F32, NULL)), GF_I64, 2, SZ(0, 2), NULL, 0);
    EXPECT_T(gf_nonzero(gf_scalar(3, GF_I32, NULL)), GF_I64, 2, SZ(1, 0), NULL, 0);
    gf_tensor *xb = ot_make(GF_BOOL, 1, SZ(4), DV(0, 1, 1, 0));
    EXPECT_T(gf_nonzero(xb), GF_I64, 2, SZ(2, 1), DV(1, 2), 0);
    for (int k = 0; k < NFLOATS; k++) {
        gf_dtype dt = FLOATS[k];
        gf_tensor *a = st_step(dt, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
        gf_tensor *row = ot_make(GF_BOOL, 1, SZ(3), DV(1, 0, 1)); /* broadcast over rows */
        EXPECT_T(gf_masked_select(a, row), dt, 1, SZ(4), DV(1, 3, 4, 6), 0);
        gf_tensor *col = ot_make(GF_BOOL, 2, SZ(2, 1), DV(0, 1));
        EXPECT_T(gf_masked_select(a, col), dt, 1, SZ(3), DV(4, 5, 6), 0);
        gf_tensor *src = ot_make(dt, 2, SZ(2, 3), DV(-1, -2, -3, -4, -5, -6));
        EXPECT_T(gf_masked_scatter(a, row, src), dt, 2, SZ(2, 3), DV(-1, 2, -2, -3, 5, -4), 0);
        EXPECT_T(gf_masked_scatter(a, gf_zeros(SZ(3), 1, GF_BOOL, NULL),
                                   gf_zeros(SZ(0), 1, dt, NULL)),
                 dt, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6), 0);
        /* index_put: x[[1, 0], [2, 2]] = [7, 8]; accumulate with a duplicate */
        gf_tensor *i0 = ot_make(GF_I64, 1, SZ(2), DV(1, 0)), *i1 = ot_make(GF_I64, 1, SZ(2), DV(2, -1));
        gf_tensor *vals = ot_make(dt, 1, SZ(2), DV(7, 8));
        EXPECT_T(gf_index_put(a, (gf_tensor *[]){i0, i1}, 2, vals, false), dt, 2, SZ(2, 3),
                 DV(1, 2, 8, 4, 5, 7), 0);
        gf_tensor *d0 = ot_make(GF_I64, 1, SZ(3), DV(1, 1, 0));
        EXPECT_T(gf_index_put(a, (gf_tensor *[]){d0}, 1, ot_make(dt, 1, SZ(3), DV(10, 20, 30)),
                              true),
                 dt, 2, SZ(2, 3), DV(11, 22, 33, 24, 45, 66), 0);
        EXPECT_T(gf_index_put(a, (gf_tensor *[]){d0}, 1, gf_scalar(0, dt, NULL), false), dt, 2,
                 SZ(2, 3), DV(0, 0, 0, 0, 0, 0), 0);
        /* broadcast index tensors [2, 1] x [2] -> [2, 2] */
        gf_tensor *r = ot_make(GF_I64, 2, SZ(2, 1), DV(0, 1)), *c = ot_make(GF_I64, 1, SZ(2), DV(0, 2));
        EXPECT_T(gf_index_put(a, (gf_tensor *[]){r, c}, 2, gf_scalar(-1, dt, NULL), false), dt,
                 2, SZ(2, 3), DV(-1, 2, -1, -1, 5, -1), 0);
        /* a bool mask index */
        gf_tensor *mk = ot_make(GF_BOOL, 2, SZ(2, 3), DV(0, 1, 0, 1, 0, 0));
        EXPECT_T(gf_index_put(a, (gf_tensor *[]){mk}, 1, ot_make(dt, 1, SZ(2), DV(9, 8)), false),
                 dt, 2, SZ(2, 3), DV(1, 9, 3, 8, 5, 6), 0);
    }
    gf_tensor *ib = ot_make(GF_BOOL, 1, SZ(3), DV(0, 0, 0));
    EXPECT_T(gf_index_put(ib, (gf_tensor *[]){ot_make(GF_I64, 1, SZ(1), DV(1))}, 1,
                          ot_make(GF_BOOL, 1, SZ(1), DV(1)), false),
             GF_BOOL, 1, SZ(3), DV(0, 1, 0), 0);
    gf_scope_end();
}

/* einsum against host loops over random data */
static double rnd_state = 0.37;
static double rnd(void) {
    rnd_state = fmod(rnd_state * 97.13 + 0.311, 1.0);
    return rnd_state * 2 - 1;
}

static gf_tensor *rand_t(gf_dtype dt, int rank, const int64_t *sz, double *v) {
    int64_t n = ot_numel(rank, sz);
    for (int64_t i = 0; i < n; i++) v[i] = rnd();
    return ot_make(dt, rank, sz, v);
}

/* stride-0 (expanded) inputs */
static void test_expanded(void) {
    gf_scope_begin();
    gf_tensor *col = ot_make(GF_F32, 2, SZ(2, 1), DV(1, 2));
    gf_tensor *x = gf_expand(col, SZ(2, 3), 2);
    EXPECT_T(gf_flip(x, (const int[]){0}, 1), GF_F32, 2, SZ(2, 3), DV(2, 2, 2, 1, 1, 1), 0);
    EXPECT_T(gf_pad(x, SZ(0, 0, 1, 0), 4, GF_PAD_CIRCULAR, 0), GF_F32, 2, SZ(3, 3),
             DV(2, 2, 2, 1, 1, 1, 2, 2, 2), 0);
    EXPECT_T(gf_repeat(x, SZ(1, 2), 2), GF_F32, 2, SZ(2, 6), DV(1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2), 0);
    EXPECT_T(gf_unfold(x, 1, 2, 1), GF_F32, 3, SZ(2, 2, 2), DV(1, 1, 1, 1, 2, 2, 2, 2), 0);
    gf_tensor *m = ot_make(GF_BOOL, 2, SZ(2, 3), DV(1, 0, 0, 0, 0, 1));
    EXPECT_T(gf_masked_select(x, m), GF_F32, 1, SZ(2), DV(1, 2), 0);
    EXPECT_T(gf_masked_scatter(gf_zeros(SZ(2, 3), 2, GF_F32, NULL), m, x), GF_F32, 2, SZ(2, 3),
             DV(1, 0, 0, 0, 0, 1), 0);
    EXPECT_T(gf_einsum("ij->i", (gf_tensor *[]){x}, 1), GF_F32, 1, SZ(2), DV(3, 6), 0);
    gf_scope_end();
}

static void test_einsum(void) {
    gf_scope_begin();
    for (int k = 0; k < NFLOATS; k++) {
        gf_dtype dt = FLOATS[k];
        double tol = dt == GF_F32 ? 1e-5 : 1e-12;
        double a[64], b[64], c[64], w[64], b0[64];
        gf_tensor *A = rand_t(dt, 2, SZ(2, 3), a), *B = rand_t(dt, 2, SZ(3, 4), b);
        memcpy(b0, b, sizeof b0);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) {
                w[i * 4 + j] = 0;
                for (int q = 0; q < 3; q++) w[i * 4 + j] += a[i * 3 + q] * b[q * 4 + j];
            }
        EXPECT_T(gf_einsum("ij,jk->ik", (gf_tensor *[]){A, B}, 2), dt, 2, SZ(2, 4), w, tol);
        EXPECT_T(gf_einsum("ij,jk", (gf_tensor *[]){A, B}, 2), dt, 2, SZ(2, 4), w, tol);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) c[j * 2 + i] = w[i * 4 + j];
        EXPECT_T(gf_einsum(" i j , j k -> k i ", (gf_tensor *[]){A, B}, 2), dt, 2, SZ(4, 2), c,
                 tol);
        /* transpose, trace, diagonal, sum of all */
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) c[j * 2 + i] = a[i * 3 + j];
        EXPECT_T(gf_einsum("ij->ji", (gf_tensor *[]){A}, 1), dt, 2, SZ(3, 2), c, tol);
        EXPECT_T(gf_einsum("ba", (gf_tensor *[]){A}, 1), dt, 2, SZ(3, 2), c, tol);
        gf_tensor *S = rand_t(dt, 2, SZ(3, 3), c);
        EXPECT_T(gf_einsum("ii", (gf_tensor *[]){S}, 1), dt, 0, NULL, DV(c[0] + c[4] + c[8]),
                 tol);
        EXPECT_T(gf_einsum("ii->i", (gf_tensor *[]){S}, 1), dt, 1, SZ(3), DV(c[0], c[4], c[8]),
                 tol);
        double tot = 0;
        for (int i = 0; i < 6; i++) tot += a[i];
        EXPECT_T(gf_einsum("ij->", (gf_tensor *[]){A}, 1), dt, 0, NULL, DV(tot), tol);
        /* dot, outer, hadamard-then-sum, bilinear */
        gf_tensor *u = rand_t(dt, 1, SZ(3), b), *v = rand_t(dt, 1, SZ(3), c);
        EXPECT_T(gf_einsum("i,i->", (gf_tensor *[]){u, v}, 2), dt, 0, NULL,
                 DV(b[0] * c[0] + b[1] * c[1] + b[2] * c[2]), tol);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) w[i * 3 + j] = b[i] * c[j];
        EXPECT_T(gf_einsum("i,j->ij", (gf_tensor *[]){u, v}, 2), dt, 2, SZ(3, 3), w, tol);
        EXPECT_T(gf_einsum("i,i->i", (gf_tensor *[]){u, v}, 2), dt, 1, SZ(3),
                 DV(b[0] * c[0], b[1] * c[1], b[2] * c[2]), tol);
        /* u^T S v with three operands, and "bij,bjk->bik" with "..." */
        double q = 0, sv[9];
        gf_tensor *S2 = rand_t(dt, 2, SZ(3, 3), sv);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) q += b[i] * sv[i * 3 + j] * c[j];
        EXPECT_T(gf_einsum("i,ij,j->", (gf_tensor *[]){u, S2, v}, 3), dt, 0, NULL, DV(q), tol);
        double p[24], r[24], o[24];
        gf_tensor *P = rand_t(dt, 3, SZ(2, 2, 3), p), *R = rand_t(dt, 3, SZ(2, 3, 2), r);
        for (int bb = 0; bb < 2; bb++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    double s = 0;
                    for (int t = 0; t < 3; t++) s += p[bb * 6 + i * 3 + t] * r[bb * 6 + t * 2 + j];
                    o[bb * 4 + i * 2 + j] = s;
                }
        EXPECT_T(gf_einsum("bij,bjk->bik", (gf_tensor *[]){P, R}, 2), dt, 3, SZ(2, 2, 2), o, tol);
        EXPECT_T(gf_einsum("...ij,...jk->...ik", (gf_tensor *[]){P, R}, 2), dt, 3, SZ(2, 2, 2),
                 o, tol);
        EXPECT_T(gf_einsum("...ij,...jk", (gf_tensor *[]){P, R}, 2), dt, 3, SZ(2, 2, 2), o, tol);
        /* "..." broadcast: [2, 2, 3] with a [3, 2] matrix */
        gf_tensor *R0 = gf_select(R, 0, 0);
        for (int bb = 0; bb < 2; bb++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    double s = 0;
                    for (int t = 0; t < 3; t++) s += p[bb * 6 + i * 3 + t] * r[t * 2 + j];
                    o[bb * 4 + i * 2 + j] = s;
                }
        EXPECT_T(gf_einsum("...j,jk->...k", (gf_tensor *[]){P, R0}, 2), dt, 3, SZ(2, 2, 2), o,
                 tol);
        /* a strided (transposed) operand; a label of size 1 broadcasting */
        gf_tensor *At = gf_transpose(A, 0, 1); /* [3, 2] */
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) {
                c[i * 4 + j] = 0;
                for (int t = 0; t < 3; t++) c[i * 4 + j] += a[i * 3 + t] * b0[t * 4 + j];
            }
        EXPECT_T(gf_einsum("ji,jk->ik", (gf_tensor *[]){At, B}, 2), dt, 2, SZ(2, 4), c, tol);
        gf_tensor *B1 = gf_narrow(B, 0, 0, 1); /* [1, 4]: j broadcasts */
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) c[i * 4 + j] = (a[i * 3] + a[i * 3 + 1] + a[i * 3 + 2]) * b0[j];
        EXPECT_T(gf_einsum("ij,jk->ik", (gf_tensor *[]){A, B1}, 2), dt, 2, SZ(2, 4), c, tol);
        /* 0-size contraction: sums of nothing are 0 */
        gf_tensor *Z1 = gf_zeros(SZ(2, 0), 2, dt, NULL), *Z2 = gf_zeros(SZ(0, 3), 2, dt, NULL);
        EXPECT_T(gf_einsum("ij,jk->ik", (gf_tensor *[]){Z1, Z2}, 2), dt, 2, SZ(2, 3),
                 DV(0, 0, 0, 0, 0, 0), 0);
        gf_tensor *s0 = gf_scalar(3, dt, NULL), *s1 = gf_scalar(-2, dt, NULL);
        EXPECT_T(gf_einsum(",->", (gf_tensor *[]){s0, s1}, 2), dt, 0, NULL, DV(-6), 0);
    }
    /* integers, exact */
    gf_tensor *Ia = ot_make(GF_I64, 2, SZ(2, 2), DV(1, 2, 3, 4));
    gf_tensor *Ib = ot_make(GF_I64, 2, SZ(2, 2), DV(5, -6, 7, 8));
    EXPECT_T(gf_einsum("ij,jk->ik", (gf_tensor *[]){Ia, Ib}, 2), GF_I64, 2, SZ(2, 2),
             DV(19, 10, 43, 14), 0);
    EXPECT_T(gf_einsum("ii", (gf_tensor *[]){Ia}, 1), GF_I64, 0, NULL, DV(5), 0);
    gf_scope_end();
}

int main(void) {
    st_init();
    RUN(test_flip_roll);
    RUN(test_repeat_tile);
    RUN(test_pad);
    RUN(test_unbind_split_unfold);
    RUN(test_take_scatter);
    RUN(test_masks);
    RUN(test_einsum);
    RUN(test_expanded);
    return ot_finish();
}
