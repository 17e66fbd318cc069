/* SPDX-License-Identifier: BSD-3-Clause */
/* test_creation.c — creation, data movement, dtype conversion, random
 * numbers and allocator statistics through the public API. */
#include "ops_test.h"

static const gf_dtype all_dtypes[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
#define N_ALL_DTYPES 5

static void test_empty_zeros_ones_full(void) {
    for (int k = 0; k < N_ALL_DTYPES; k++) {
        gf_dtype dt = all_dtypes[k];
        gf_tensor *e = gf_empty(SZ(2, 3, 4), 3, dt, NULL);
        CHECK(e != NULL);
        CHECK(gf_tensor_rank(e) == 3);
        CHECK(gf_tensor_numel(e) == 24);
        CHECK(gf_tensor_dtype(e) == dt);
        CHECK(gf_tensor_offset(e) == 0);
        CHECK(gf_tensor_is_contiguous(e));
        const int64_t *st = gf_tensor_strides(e);
        CHECK(st && st[0] == 12 && st[1] == 4 && st[2] == 1);
        CHECK(gf_tensor_size(e, -1) == 4 && gf_tensor_size(e, 0) == 2);

        gf_tensor *z = gf_zeros(SZ(2, 3), 2, dt, NULL);
        EXPECT_T(z, dt, 2, SZ(2, 3), DV(0, 0, 0, 0, 0, 0), 0);
        gf_tensor *o = gf_ones(SZ(3), 1, dt, NULL);
        EXPECT_T(o, dt, 1, SZ(3), DV(1, 1, 1), 0);
        gf_tensor *f = gf_full(SZ(2, 2), 2, -3.0, dt, NULL);
        double want = dt == GF_BOOL ? 1.0 : -3.0;
        EXPECT_T(f, dt, 2, SZ(2, 2), DV(want, want, want, want), 0);
        /* 0-size and 0-dim */
        gf_tensor *z0 = gf_zeros(SZ(0, 3), 2, dt, NULL);
        EXPECT_T(z0, dt, 2, SZ(0, 3), NULL, 0);
        CHECK(gf_tensor_numel(z0) == 0);
        gf_tensor *f0 = gf_full(NULL, 0, 7.0, dt, NULL);
        EXPECT_T(f0, dt, 0, NULL, DV(dt == GF_BOOL ? 1.0 : 7.0), 0);
        CHECK(gf_tensor_numel(f0) == 1);
        gf_tensor *e0 = gf_empty(NULL, 0, dt, NULL);
        CHECK(e0 && gf_tensor_rank(e0) == 0 && gf_tensor_numel(e0) == 1);
        REL(e, z, o, f, z0, f0, e0);
    }
    /* fractional values keep their precision in floating dtypes */
    gf_tensor *f = gf_full(SZ(2), 1, 0.1, GF_F64, NULL);
    EXPECT_T(f, GF_F64, 1, SZ(2), DV(0.1, 0.1), 0);
    gf_tensor *g = gf_full(SZ(2), 1, 0.1, GF_F32, NULL);
    EXPECT_T(g, GF_F32, 1, SZ(2), DV((float)0.1, (float)0.1), 0);
    REL(f, g);
}

static void test_from_data_scalar(void) {
    const float fd[6] = {1.5f, -2.f, 3.25f, 0.f, 1e-3f, -7.f};
    gf_tensor *a = gf_from_data(fd, SZ(2, 3), 2, GF_F32, NULL);
    EXPECT_T(a, GF_F32, 2, SZ(2, 3), DV(1.5, -2, 3.25, 0, (float)1e-3, -7), 0);
    const int64_t id[3] = {INT64_C(1) << 53, -5, 9};
    gf_tensor *b = gf_from_data(id, SZ(3), 1, GF_I64, NULL);
    EXPECT_T(b, GF_I64, 1, SZ(3), DV(9007199254740992.0, -5, 9), 0);
    const uint8_t bd[4] = {1, 0, 0, 1};
    gf_tensor *c = gf_from_data(bd, SZ(2, 2), 2, GF_BOOL, NULL);
    EXPECT_T(c, GF_BOOL, 2, SZ(2, 2), DV(1, 0, 0, 1), 0);
    /* exact i64 beyond double precision survives the round trip */
    const int64_t big = (INT64_C(1) << 60) + 1;
    gf_tensor *d = gf_from_data(&big, NULL, 0, GF_I64, NULL);
    int64_t back = 0;
    CHECK_OK(gf_tensor_to_host(d, &back, sizeof back));
    CHECK(back == big);
    /* 0-size */
    gf_tensor *e = gf_from_data(fd, SZ(3, 0), 2, GF_F32, NULL);
    EXPECT_T(e, GF_F32, 2, SZ(3, 0), NULL, 0);

    gf_tensor *s = gf_scalar(2.5, GF_F64, NULL);
    EXPECT_T(s, GF_F64, 0, NULL, DV(2.5), 0);
    double v = 0;
    CHECK_OK(gf_tensor_item(s, &v));
    CHECK(v == 2.5);
    gf_tensor *si = gf_scalar(-4, GF_I32, NULL);
    EXPECT_T(si, GF_I32, 0, NULL, DV(-4), 0);
    gf_tensor *sb = gf_scalar(3, GF_BOOL, NULL);
    EXPECT_T(sb, GF_BOOL, 0, NULL, DV(1), 0);
    REL(a, b, c, d, e, s, si, sb);
}

static void test_arange(void) {
    gf_tensor *a = gf_arange(0, 5, 1, GF_F32, NULL);
    EXPECT_T(a, GF_F32, 1, SZ(5), DV(0, 1, 2, 3, 4), 0);
    gf_tensor *b = gf_arange(5, 0, -1.5, GF_F64, NULL); /* negative step */
    EXPECT_T(b, GF_F64, 1, SZ(4), DV(5, 3.5, 2, 0.5), 0);
    gf_tensor *c = gf_arange(0, 1, 0.25, GF_F64, NULL); /* end excluded */
    EXPECT_T(c, GF_F64, 1, SZ(4), DV(0, 0.25, 0.5, 0.75), 0);
    gf_tensor *d = gf_arange(0, 1, 0.3, GF_F32, NULL); /* ceil(1/0.3) = 4 */
    EXPECT_T(d, GF_F32, 1, SZ(4), DV(0, 0.3, 0.6, 0.9), TOL32);
    gf_tensor *e = gf_arange(0, 5, 2, GF_I32, NULL);
    EXPECT_T(e, GF_I32, 1, SZ(3), DV(0, 2, 4), 0);
    gf_tensor *f = gf_arange(-3, 3, 1, GF_I64, NULL);
    EXPECT_T(f, GF_I64, 1, SZ(6), DV(-3, -2, -1, 0, 1, 2), 0);
    gf_tensor *g = gf_arange(2, 2, 1, GF_F32, NULL); /* empty range */
    EXPECT_T(g, GF_F32, 1, SZ(0), NULL, 0);
    gf_tensor *h = gf_arange(10, 4, -3, GF_I32, NULL);
    EXPECT_T(h, GF_I32, 1, SZ(2), DV(10, 7), 0);
    EXPECT_FAIL(gf_arange(0, 5, 0, GF_F32, NULL), GF_ERR_INVALID);
    /* as torch.arange: a step pointing away from end is refused */
    gf_clear_error();
    gf_tensor *bad = gf_arange(1, 0, 1, GF_F32, NULL);
    CHECK(bad == NULL && gf_last_status() != GF_OK);
    REL(a, b, c, d, e, f, g, h, bad);
}

static void test_like(void) {
    gf_tensor *base = ot_make_transposed(GF_I32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *z = gf_zeros_like(base);
    EXPECT_T(z, GF_I32, 2, SZ(2, 3), DV(0, 0, 0, 0, 0, 0), 0);
    CHECK(!gf_tensor_shares_storage(z, base));
    gf_tensor *o = gf_ones_like(base);
    EXPECT_T(o, GF_I32, 2, SZ(2, 3), DV(1, 1, 1, 1, 1, 1), 0);
    gf_tensor *s = gf_scalar(1, GF_F64, NULL);
    gf_tensor *f = gf_full_like(s, 0.5);
    EXPECT_T(f, GF_F64, 0, NULL, DV(0.5), 0);
    gf_tensor *e = gf_zeros(SZ(0, 2), 2, GF_F32, NULL);
    gf_tensor *fe = gf_full_like(e, 3);
    EXPECT_T(fe, GF_F32, 2, SZ(0, 2), NULL, 0);
    gf_tensor *b = gf_zeros(SZ(2), 1, GF_BOOL, NULL);
    gf_tensor *ob = gf_ones_like(b);
    EXPECT_T(ob, GF_BOOL, 1, SZ(2), DV(1, 1), 0);
    REL(base, z, o, s, f, e, fe, b, ob);
}

static void test_host_io(void) {
    gf_tensor *t = ot_make(GF_F64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    double buf[6];
    gf_clear_error();
    CHECK(gf_tensor_to_host(t, buf, 5 * sizeof(double)) == GF_ERR_INVALID);
    CHECK(gf_last_status() == GF_ERR_INVALID);
    CHECK(gf_tensor_from_host(t, buf, 7 * sizeof(double)) == GF_ERR_INVALID);

    /* to_host of a transposed view gives the view's row-major order */
    gf_tensor *tt = gf_transpose(t, 0, 1);
    CHECK_OK(gf_tensor_to_host(tt, buf, sizeof buf));
    const double tw[6] = {1, 4, 2, 5, 3, 6};
    CHECK(memcmp(buf, tw, sizeof buf) == 0);

    /* from_host writes a whole tensor */
    const double nv[6] = {-1, -2, -3, -4, -5, -6};
    uint64_t v0 = gf_tensor_version(t);
    CHECK_OK(gf_tensor_from_host(t, nv, sizeof nv));
    CHECK(gf_tensor_version(t) > v0);
    CHECK(gf_tensor_version(tt) == gf_tensor_version(t)); /* one counter per storage */
    EXPECT_T(t, GF_F64, 2, SZ(2, 3), nv, 0);

    /* item and get */
    double v = 0;
    int64_t idx[2] = {1, 2};
    CHECK_OK(gf_tensor_get(t, idx, &v));
    CHECK(v == -6);
    gf_clear_error();
    int64_t oob[2] = {0, 3};
    CHECK(gf_tensor_get(t, oob, &v) == GF_ERR_INDEX);
    int64_t tidx[2] = {2, 1};
    CHECK_OK(gf_tensor_get(tt, tidx, &v));
    CHECK(v == -6);
    gf_tensor *one = ot_make(GF_I32, 2, SZ(1, 1), DV(42));
    CHECK_OK(gf_tensor_item(one, &v));
    CHECK(v == 42);
    gf_clear_error();
    CHECK(gf_tensor_item(t, &v) != GF_OK); /* six elements */
    CHECK(gf_last_status() != GF_OK);
    gf_tensor *s = gf_scalar(-0.25, GF_F32, NULL);
    CHECK_OK(gf_tensor_item(s, &v));
    CHECK(v == -0.25);
    CHECK_OK(gf_tensor_get(s, NULL, &v));
    CHECK(v == -0.25);

    /* describe */
    char d[64];
    gf_tensor *f = gf_zeros(SZ(2, 3), 2, GF_F32, NULL);
    const char *desc = gf_tensor_describe(f, d, sizeof d);
    CHECK_CONTAINS(desc, "f32[2, 3]");
    CHECK_CONTAINS(desc, "cpu:0");
    gf_tensor_describe(f, d, 4); /* always terminated */
    CHECK(strlen(d) <= 3);
    REL(t, tt, one, s, f);
}

static void test_to_dtype(void) {
    gf_tensor *a = ot_make(GF_F64, 1, SZ(6), DV(1.7, -1.7, 2.5, -0.5, 0, 100.9));
    gf_tensor *i = gf_to_dtype(a, GF_I32); /* truncation toward zero */
    EXPECT_T(i, GF_I32, 1, SZ(6), DV(1, -1, 2, 0, 0, 100), 0);
    gf_tensor *l = gf_to_dtype(a, GF_I64);
    EXPECT_T(l, GF_I64, 1, SZ(6), DV(1, -1, 2, 0, 0, 100), 0);
    gf_tensor *b = gf_to_dtype(a, GF_BOOL); /* x != 0 */
    EXPECT_T(b, GF_BOOL, 1, SZ(6), DV(1, 1, 1, 1, 0, 1), 0);
    gf_tensor *f = gf_to_dtype(a, GF_F32);
    EXPECT_T(f, GF_F32, 1, SZ(6), DV(1.7, -1.7, 2.5, -0.5, 0, 100.9), TOL32);
    gf_tensor *bf = gf_to_dtype(b, GF_F32);
    EXPECT_T(bf, GF_F32, 1, SZ(6), DV(1, 1, 1, 1, 0, 1), 0);
    gf_tensor *id = gf_to_dtype(i, GF_F64);
    EXPECT_T(id, GF_F64, 1, SZ(6), DV(1, -1, 2, 0, 0, 100), 0);
    gf_tensor *ib = gf_to_dtype(i, GF_BOOL);
    EXPECT_T(ib, GF_BOOL, 1, SZ(6), DV(1, 1, 1, 0, 0, 1), 0);
    /* same dtype: a new reference to the same tensor */
    gf_tensor *same = gf_to_dtype(a, GF_F64);
    CHECK(same == a);
    gf_tensor_release(same);
    /* strided, 0-size, 0-dim */
    gf_tensor *st = ot_make_step(GF_F32, 2, SZ(2, 2), DV(-2.9, 3.9, 0.5, -0.5));
    gf_tensor *sti = gf_to_dtype(st, GF_I64);
    EXPECT_T(sti, GF_I64, 2, SZ(2, 2), DV(-2, 3, 0, 0), 0);
    gf_tensor *tr = ot_make_transposed(GF_I32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *trf = gf_to_dtype(tr, GF_F64);
    EXPECT_T(trf, GF_F64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6), 0);
    gf_tensor *e = gf_zeros(SZ(0, 4), 2, GF_F32, NULL);
    gf_tensor *ei = gf_to_dtype(e, GF_I32);
    EXPECT_T(ei, GF_I32, 2, SZ(0, 4), NULL, 0);
    gf_tensor *s = gf_scalar(-3.99, GF_F64, NULL);
    gf_tensor *si = gf_to_dtype(s, GF_I32);
    EXPECT_T(si, GF_I32, 0, NULL, DV(-3), 0);
    REL(a, i, l, b, f, bf, id, ib, st, sti, tr, trf, e, ei, s, si);
}

static void test_to_device_clone_contiguous(void) {
    gf_tensor *t = ot_make(GF_F32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_device *dev = gf_tensor_device(t);
    CHECK(dev != NULL);
    CHECK(dev == gf_device_default());
    gf_tensor *same = gf_to_device(t, dev);
    CHECK(same == t);
    gf_tensor_release(same);

    gf_tensor *c = gf_contiguous(t);
    CHECK(c == t);
    gf_tensor_release(c);

    gf_tensor *tt = gf_transpose(t, 0, 1);
    CHECK(!gf_tensor_is_contiguous(tt));
    gf_tensor *tc = gf_contiguous(tt);
    CHECK(tc && gf_tensor_is_contiguous(tc));
    CHECK(tc && !gf_tensor_shares_storage(tc, t));
    EXPECT_T(tc, GF_F32, 2, SZ(3, 2), DV(1, 4, 2, 5, 3, 6), 0);
    const int64_t *st = gf_tensor_strides(tc);
    CHECK(st && st[0] == 2 && st[1] == 1);

    gf_tensor *cl = gf_clone(t);
    CHECK(cl && cl != t && !gf_tensor_shares_storage(cl, t));
    EXPECT_T(cl, GF_F32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6), 0);
    const float z[6] = {0};
    CHECK_OK(gf_tensor_from_host(cl, z, sizeof z));
    EXPECT_T(t, GF_F32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6), 0); /* original untouched */

    gf_tensor *step = ot_make_step(GF_I64, 1, SZ(3), DV(7, 8, 9));
    gf_tensor *sc = gf_clone(step);
    EXPECT_T(sc, GF_I64, 1, SZ(3), DV(7, 8, 9), 0);
    gf_tensor *sc2 = gf_contiguous(step);
    EXPECT_T(sc2, GF_I64, 1, SZ(3), DV(7, 8, 9), 0);
    CHECK(sc2 && gf_tensor_is_contiguous(sc2));

    gf_tensor *s = gf_scalar(5, GF_BOOL, NULL);
    gf_tensor *s2 = gf_clone(s);
    EXPECT_T(s2, GF_BOOL, 0, NULL, DV(1), 0);
    gf_tensor *e = gf_zeros(SZ(0), 1, GF_F64, NULL);
    gf_tensor *e2 = gf_clone(e);
    EXPECT_T(e2, GF_F64, 1, SZ(0), NULL, 0);
    REL(t, tt, tc, cl, step, sc, sc2, s, s2, e, e2);
}

/* ---- random numbers: an independent Philox4x32-10 written from the ABI text */
static void philox(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0];
        uint64_t p1 = (uint64_t)0xCD9E8D57u * ctr[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ ctr[1] ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ ctr[3] ^ k1;
        uint32_t n3 = (uint32_t)p0;
        ctr[0] = n0, ctr[1] = n1, ctr[2] = n2, ctr[3] = n3;
    }
}
static void philox_at(uint64_t seed, uint64_t c, uint32_t r[4]) {
    r[0] = (uint32_t)c, r[1] = (uint32_t)(c >> 32), r[2] = 0, r[3] = 0;
    philox(r, (uint32_t)seed, (uint32_t)(seed >> 32));
}
static double u24(uint32_t w) { return (double)(w >> 8) * 0x1p-24; }
static double u53(uint32_t w, uint32_t v) {
    return ((double)(w >> 5) * 67108864.0 + (double)(v >> 6)) * 0x1p-53;
}

static void test_philox_reference(void) {
    /* Known-answer vector of Philox4x32-10 (counter 0, key 0). */
    uint32_t r[4] = {0, 0, 0, 0};
    philox(r, 0, 0);
    CHECK(r[0] == 0x6627e8d5u && r[1] == 0xe169c58du && r[2] == 0xbc57ac4cu &&
          r[3] == 0x9b00dbd8u);
}

static void test_random_matches_abi_generator(void) {
    /* After seeding, the generator starts at counter 0 (as PyTorch resets its
     * offset) and each call consumes numel counters. */
    const uint64_t seed = 0x123456789abcdefULL;
    gf_manual_seed(seed);
    gf_tensor *a = gf_rand(SZ(5), 1, GF_F32, NULL);
    gf_tensor *b = gf_rand(SZ(3), 1, GF_F64, NULL);
    gf_tensor *c = gf_randn(SZ(2), 1, GF_F32, NULL);
    gf_tensor *d = gf_rand_normal(SZ(2), 1, 1.5, 2.0, GF_F64, NULL);
    gf_tensor *e = gf_rand_uniform(SZ(2), 1, -2.0, 6.0, GF_F32, NULL);
    gf_tensor *f = gf_bernoulli(SZ(4), 1, 0.5, GF_F32, NULL);
    double wa[5], wb[3], wc[2], wd[2], we[2], wf[4];
    uint32_t r[4];
    uint64_t ctr = 0;
    for (int i = 0; i < 5; i++, ctr++) {
        philox_at(seed, ctr, r);
        wa[i] = (float)u24(r[0]);
    }
    for (int i = 0; i < 3; i++, ctr++) {
        philox_at(seed, ctr, r);
        wb[i] = u53(r[0], r[1]);
    }
    for (int i = 0; i < 2; i++, ctr++) {
        philox_at(seed, ctr, r);
        double u1 = 1 - u24(r[0]), u2 = u24(r[1]);
        wc[i] = (float)(sqrt(-2 * log(u1)) * cos(2 * OT_PI * u2));
    }
    for (int i = 0; i < 2; i++, ctr++) {
        philox_at(seed, ctr, r);
        double u1 = 1 - u53(r[0], r[1]), u2 = u53(r[2], r[3]);
        wd[i] = 1.5 + 2.0 * sqrt(-2 * log(u1)) * cos(2 * OT_PI * u2);
    }
    for (int i = 0; i < 2; i++, ctr++) {
        philox_at(seed, ctr, r);
        we[i] = (float)(-2.0 + 8.0 * u24(r[0]));
    }
    for (int i = 0; i < 4; i++, ctr++) {
        philox_at(seed, ctr, r);
        wf[i] = u24(r[0]) < 0.5 ? 1 : 0;
    }
    EXPECT_T(a, GF_F32, 1, SZ(5), wa, 0);
    EXPECT_T(b, GF_F64, 1, SZ(3), wb, 0);
    EXPECT_T(c, GF_F32, 1, SZ(2), wc, 1e-6);
    EXPECT_T(d, GF_F64, 1, SZ(2), wd, 1e-12);
    EXPECT_T(e, GF_F32, 1, SZ(2), we, 1e-6);
    EXPECT_T(f, GF_F32, 1, SZ(4), wf, 0);
    REL(a, b, c, d, e, f);
}

static void test_random_seed_reproduces(void) {
    gf_manual_seed(7);
    gf_tensor *a = gf_rand(SZ(64), 1, GF_F32, NULL);
    gf_tensor *b = gf_rand(SZ(64), 1, GF_F32, NULL);
    gf_manual_seed(7);
    gf_tensor *a2 = gf_rand(SZ(64), 1, GF_F32, NULL);
    gf_tensor *b2 = gf_rand(SZ(64), 1, GF_F32, NULL);
    gf_manual_seed(8);
    gf_tensor *c = gf_rand(SZ(64), 1, GF_F32, NULL);
    double *va = ot_read(a), *vb = ot_read(b), *va2 = ot_read(a2), *vb2 = ot_read(b2),
           *vc = ot_read(c);
    CHECK(va && vb && va2 && vb2 && vc);
    if (va && vb && va2 && vb2 && vc) {
        int differ_ab = 0, differ_ac = 0, same_a = 1, same_b = 1, in_range = 1;
        for (int i = 0; i < 64; i++) {
            differ_ab += va[i] != vb[i];
            differ_ac += va[i] != vc[i];
            same_a &= va[i] == va2[i];
            same_b &= vb[i] == vb2[i];
            in_range &= va[i] >= 0 && va[i] < 1 && vb[i] >= 0 && vb[i] < 1;
        }
        CHECK(differ_ab > 60);
        CHECK(differ_ac > 60);
        CHECK(same_a && same_b);
        CHECK(in_range);
    }
    free(va), free(vb), free(va2), free(vb2), free(vc);
    REL(a, b, a2, b2, c);
}

static void moments(const gf_tensor *t, double *mean, double *var, double *lo, double *hi) {
    double *v = ot_read(t);
    int64_t n = gf_tensor_numel(t);
    double s = 0, ss = 0;
    *lo = INFINITY, *hi = -INFINITY;
    for (int64_t i = 0; v && i < n; i++) {
        s += v[i];
        if (v[i] < *lo) *lo = v[i];
        if (v[i] > *hi) *hi = v[i];
    }
    *mean = v ? s / (double)n : NAN;
    for (int64_t i = 0; v && i < n; i++) ss += (v[i] - *mean) * (v[i] - *mean);
    *var = v ? ss / (double)(n - 1) : NAN;
    free(v);
}

static void test_random_distributions(void) {
    gf_manual_seed(2024);
    double m, v, lo, hi;
    /* 100k uniforms: mean 1/2, var 1/12 (std error of the mean ~ 0.001) */
    gf_tensor *u = gf_rand(SZ(100000), 1, GF_F32, NULL);
    CHECK(u && gf_tensor_dtype(u) == GF_F32);
    moments(u, &m, &v, &lo, &hi);
    CHECK_CLOSE(m, 0.5, 0.01);
    CHECK_CLOSE(v, 1.0 / 12, 0.005);
    CHECK(lo >= 0 && hi < 1);
    gf_tensor *ud = gf_rand(SZ(1000), 1, GF_F64, NULL);
    moments(ud, &m, &v, &lo, &hi);
    CHECK(lo >= 0 && hi < 1);
    /* 100k normals: mean 0 (std error 0.003), var 1 (std error ~0.0045) */
    gf_tensor *n = gf_randn(SZ(100, 1000), 2, GF_F64, NULL);
    CHECK(n && gf_tensor_numel(n) == 100000);
    moments(n, &m, &v, &lo, &hi);
    CHECK_CLOSE(m, 0.0, 0.02);
    CHECK_CLOSE(v, 1.0, 0.03);
    gf_tensor *n2 = gf_rand_normal(SZ(100000), 1, 3.0, 2.0, GF_F32, NULL);
    moments(n2, &m, &v, &lo, &hi);
    CHECK_CLOSE(m, 3.0, 0.02);
    CHECK_CLOSE(v, 4.0, 0.03);
    gf_tensor *u2 = gf_rand_uniform(SZ(100000), 1, -1.0, 3.0, GF_F64, NULL);
    moments(u2, &m, &v, &lo, &hi);
    CHECK_CLOSE(m, 1.0, 0.02);
    CHECK_CLOSE(v, 16.0 / 12, 0.02);
    CHECK(lo >= -1 && hi < 3);
    /* bernoulli: fraction of ones ~ p (std error 0.0014), values 0/1 only */
    gf_tensor *b = gf_bernoulli(SZ(100000), 1, 0.3, GF_F64, NULL);
    moments(b, &m, &v, &lo, &hi);
    CHECK_CLOSE(m, 0.3, 0.02);
    CHECK(lo == 0 && hi == 1);
    double *bv = ot_read(b);
    int only01 = bv != NULL;
    for (int i = 0; bv && i < 100000; i++) only01 &= bv[i] == 0 || bv[i] == 1;
    CHECK(only01);
    free(bv);
    gf_tensor *b0 = gf_bernoulli(SZ(1000), 1, 0.0, GF_BOOL, NULL);
    moments(b0, &m, &v, &lo, &hi);
    CHECK(m == 0);
    gf_tensor *b1 = gf_bernoulli(SZ(1000), 1, 1.0, GF_I32, NULL);
    moments(b1, &m, &v, &lo, &hi);
    CHECK(m == 1);
    CHECK(b1 && gf_tensor_dtype(b1) == GF_I32);
    /* 0-size and 0-dim */
    gf_tensor *z = gf_rand(SZ(0, 3), 2, GF_F32, NULL);
    EXPECT_T(z, GF_F32, 2, SZ(0, 3), NULL, 0);
    gf_tensor *s = gf_randn(NULL, 0, GF_F64, NULL);
    CHECK(s && gf_tensor_rank(s) == 0 && isfinite(ot_value(s)));
    EXPECT_FAIL(gf_bernoulli(SZ(3), 1, 1.5, GF_F32, NULL), GF_ERR_INVALID);
    REL(u, ud, n, n2, u2, b, b0, b1, z, s);
}

static void test_memory_stats(void) {
    gf_device *dev = gf_device_default();
    CHECK(dev != NULL);
    gf_memory_stats s0, s1, s2, s3;
    CHECK_OK(gf_memory_get_stats(dev, &s0));
    const uint64_t mib = 1u << 20;
    gf_tensor *t = gf_zeros(SZ(1 << 18), 1, GF_F32, dev); /* 1 MiB */
    CHECK_OK(gf_memory_get_stats(dev, &s1));
    CHECK(s1.bytes_in_use >= s0.bytes_in_use + mib);
    CHECK(s1.peak_bytes_in_use >= s1.bytes_in_use);
    gf_tensor *v = gf_transpose(t, 0, 0); /* views allocate nothing */
    CHECK_OK(gf_memory_get_stats(dev, &s2));
    CHECK(s2.bytes_in_use == s1.bytes_in_use);
    gf_tensor_release(t);
    CHECK_OK(gf_memory_get_stats(dev, &s2));
    CHECK(s2.bytes_in_use == s1.bytes_in_use); /* the view keeps the storage */
    gf_tensor_release(v);
    CHECK_OK(gf_memory_get_stats(dev, &s2));
    CHECK(s2.bytes_in_use == s0.bytes_in_use);
    CHECK(s2.bytes_cached >= mib); /* kept for reuse */

    /* a block of the same size is served from the cache */
    gf_tensor *t2 = gf_ones(SZ(1 << 18), 1, GF_F32, dev);
    CHECK_OK(gf_memory_get_stats(dev, &s3));
    CHECK(s3.plugin_allocations == s2.plugin_allocations);
    gf_tensor_release(t2);

    CHECK_OK(gf_memory_empty_cache(dev));
    CHECK_OK(gf_memory_get_stats(dev, &s3));
    CHECK(s3.bytes_cached == 0);
    CHECK(s3.bytes_in_use == s0.bytes_in_use);
    CHECK(s3.plugin_frees > s2.plugin_frees);

    /* peak: reset to the current use, raised by a 2 MiB tensor, kept after it goes */
    CHECK_OK(gf_memory_reset_peak(dev));
    CHECK_OK(gf_memory_get_stats(dev, &s1));
    CHECK(s1.peak_bytes_in_use == s1.bytes_in_use);
    gf_tensor *big = gf_empty(SZ(1 << 18), 1, GF_F64, dev);
    CHECK(big != NULL);
    CHECK_OK(gf_memory_get_stats(dev, &s2));
    CHECK(s2.plugin_allocations == s1.plugin_allocations + 1); /* the cache was empty */
    gf_tensor_release(big);
    CHECK_OK(gf_memory_get_stats(dev, &s3));
    CHECK(s3.peak_bytes_in_use >= s1.bytes_in_use + 2 * mib);
    CHECK(s3.bytes_in_use == s1.bytes_in_use);
    gf_clear_error();
    CHECK(gf_memory_get_stats(NULL, &s3) == GF_ERR_INVALID);
    CHECK(gf_memory_get_stats(dev, NULL) == GF_ERR_INVALID);
}

int main(void) {
    CHECK(gf_init() == GF_OK);
    RUN(test_empty_zeros_ones_full);
    RUN(test_from_data_scalar);
    RUN(test_arange);
    RUN(test_like);
    RUN(test_host_io);
    RUN(test_to_dtype);
    RUN(test_to_device_clone_contiguous);
    RUN(test_philox_reference);
    RUN(test_random_matches_abi_generator);
    RUN(test_random_seed_reproduces);
    RUN(test_random_distributions);
    RUN(test_memory_stats);
    return ot_finish();
}
