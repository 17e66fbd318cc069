/* SPDX-License-Identifier: BSD-3-Clause */
/* test_binary.c — binary elementwise ops with broadcasting and type
 * promotion, comparisons, where and masked_fill. Expected
 * values are computed on the host by an independent broadcasting loop. */
#include "ops_test.h"

typedef gf_tensor *(*binary_fn)(const gf_tensor *, const gf_tensor *);
typedef double (*ref2_fn)(double, double);

static double r_add(double a, double b) { return a + b; }
static double r_sub(double a, double b) { return a - b; }
static double r_mul(double a, double b) { return a * b; }
static double r_div(double a, double b) { return a / b; }
static double r_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double r_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }
static double r_eq(double a, double b) { return a == b; }
static double r_ne(double a, double b) { return a != b; }
static double r_lt(double a, double b) { return a < b; }
static double r_le(double a, double b) { return a <= b; }
static double r_gt(double a, double b) { return a > b; }
static double r_ge(double a, double b) { return a >= b; }
static double r_and(double a, double b) { return a != 0 && b != 0; }
static double r_or(double a, double b) { return a != 0 || b != 0; }

/* K_DIV: integer inputs are computed in f32 and give f32 (div, atan2). */
enum { K_ARITH, K_DIV, K_BOOL };
typedef struct binary_case {
    const char *name;
    binary_fn fn;
    ref2_fn ref;
    int kind;
    bool ints; /* takes integer inputs with an integer result */
} binary_case;

static const binary_case cases[] = {
    {"add", gf_add, r_add, K_ARITH, true},       {"sub", gf_sub, r_sub, K_ARITH, true},
    {"mul", gf_mul, r_mul, K_ARITH, true},       {"div", gf_div, r_div, K_DIV, false},
    {"pow", gf_pow, pow, K_ARITH, true},         {"maximum", gf_maximum, r_max, K_ARITH, true},
    {"minimum", gf_minimum, r_min, K_ARITH, true}, {"eq", gf_eq, r_eq, K_BOOL, true},
    {"ne", gf_ne, r_ne, K_BOOL, true},           {"lt", gf_lt, r_lt, K_BOOL, true},
    {"le", gf_le, r_le, K_BOOL, true},           {"gt", gf_gt, r_gt, K_BOOL, true},
    {"ge", gf_ge, r_ge, K_BOOL, true},           {"logical_and", gf_logical_and, r_and, K_BOOL, true},
    {"logical_or", gf_logical_or, r_or, K_BOOL, true},
    {"atan2", gf_atan2, atan2, K_DIV, false},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

static int dt_rank(gf_dtype d) {
    switch (d) {
    case GF_BOOL: return 0;
    case GF_I32: return 1;
    case GF_I64: return 2;
    case GF_F32: return 3;
    default: return 4;
    }
}
static gf_dtype promote(gf_dtype a, gf_dtype b) { return dt_rank(a) >= dt_rank(b) ? a : b; }
static bool is_int(gf_dtype d) { return d == GF_I32 || d == GF_I64 || d == GF_BOOL; }

/* Value as the dtype stores it. */
static double as_dtype(gf_dtype dt, double v) {
    switch (dt) {
    case GF_F32: return (float)v;
    case GF_I32: return (int32_t)v;
    case GF_I64: return (double)(int64_t)v;
    case GF_BOOL: return v != 0;
    default: return v;
    }
}

/* Broadcast shape of a and b; -1 when they do not broadcast. */
static int bshape(int ra, const int64_t *sa, int rb, const int64_t *sb, int64_t *so) {
    int ro = ra > rb ? ra : rb;
    for (int d = 0; d < ro; d++) {
        int da = d - (ro - ra), db = d - (ro - rb);
        int64_t x = da >= 0 ? sa[da] : 1, y = db >= 0 ? sb[db] : 1;
        if (x != y && x != 1 && y != 1) return -1;
        so[d] = x == 1 ? y : x;
    }
    return ro;
}

/* Flat row-major index into a tensor of shape s (rank r) broadcast to out. */
static int64_t bindex(const int64_t *idx, int ro, int r, const int64_t *s) {
    int64_t k = 0;
    for (int d = 0; d < r; d++) {
        int64_t i = s[d] == 1 ? 0 : idx[d + ro - r];
        k = k * s[d] + i;
    }
    return k;
}

/* Expected values of op(a, b) with broadcasting: inputs as their dtypes
 * store them, computed in dtype cdt, stored as odt. */
static double *bexpect(ref2_fn ref, gf_dtype da, gf_dtype db, gf_dtype cdt, gf_dtype odt,
                       int ra, const int64_t *sa, const double *va, int rb, const int64_t *sb,
                       const double *vb, int ro, const int64_t *so) {
    int64_t n = ot_numel(ro, so);
    double *out = malloc((size_t)(n ? n : 1) * sizeof(double));
    int64_t idx[GF_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i;
        for (int d = ro - 1; d >= 0; d--) idx[d] = rem % so[d], rem /= so[d];
        double x = as_dtype(cdt, as_dtype(da, va[bindex(idx, ro, ra, sa)]));
        double y = as_dtype(cdt, as_dtype(db, vb[bindex(idx, ro, rb, sb)]));
        double r = ref(x, y);
        out[i] = odt == GF_BOOL ? r : as_dtype(odt, r);
    }
    return out;
}

/* Runs one case for given dtypes, shapes and layouts; checks the result. */
static void run_binary(const binary_case *c, gf_dtype da, int ra, const int64_t *sa,
                       const double *va, int la, gf_dtype db, int rb, const int64_t *sb,
                       const double *vb, int lb) {
    gf_dtype cdt = promote(da, db);
    gf_dtype odt = c->kind == K_BOOL ? GF_BOOL : c->kind == K_DIV && is_int(cdt) ? GF_F32 : cdt;
    if (c->kind == K_DIV && is_int(cdt)) cdt = GF_F32;
    int64_t so[GF_MAX_RANK];
    int ro = bshape(ra, sa, rb, sb, so);
    gf_tensor *a = ot_make_layout(la, da, ra, sa, va);
    gf_tensor *b = ot_make_layout(lb, db, rb, sb, vb);
    gf_tensor *y = c->fn(a, b);
    double *want = bexpect(c->ref, da, db, cdt, odt, ra, sa, va, rb, sb, vb, ro, so);
    double tol = odt == GF_F32 ? 4e-6 : ot_tol(odt);
    int failed_before = check_failed_;
    EXPECT_T(y, odt, ro, so, want, tol);
    if (check_failed_ != failed_before) {
        char s1[64], s2[64];
        ot_shape_str(ra, sa, s1, sizeof s1);
        ot_shape_str(rb, sb, s2, sizeof s2);
        fprintf(stderr, "  (in %s: %s%s %s + %s%s %s)\n", c->name, gf_dtype_name(da), s1,
                ot_layout_names[la], gf_dtype_name(db), s2, ot_layout_names[lb]);
    }
    free(want);
    REL(a, b, y);
}

static const double A6[6] = {-1.5, 0, 2, 3, -0.5, 4};
static const double B6[6] = {2, -3, 0.5, 3, 0.25, -4};
static const double PA6[6] = {2, 0.5, 3, 1.5, 4, 9}; /* pow: positive bases */
static const double PB6[6] = {3, -1, 0.5, 2, 0, 0.5};
static const double IA6[6] = {-3, 0, 5, 3, 2, -7};
static const double IB6[6] = {2, -4, 3, 3, 0, 1};
static const double IPB6[6] = {3, 2, 1, 0, 4, 2}; /* integer pow: exponents >= 0 */

static void test_same_shape_all_layouts(void) {
    const gf_dtype fdts[2] = {GF_F32, GF_F64};
    for (int i = 0; i < N_CASES; i++) {
        const binary_case *c = &cases[i];
        const double *va = c->fn == gf_pow ? PA6 : A6, *vb = c->fn == gf_pow ? PB6 : B6;
        for (int k = 0; k < 2; k++)
            for (int la = 0; la < OT_NLAYOUTS; la++)
                for (int lb = 0; lb < OT_NLAYOUTS; lb++)
                    run_binary(c, fdts[k], 2, SZ(2, 3), va, la, fdts[k], 2, SZ(2, 3), vb, lb);
        /* integers (div gives f32) */
        const gf_dtype idts[2] = {GF_I32, GF_I64};
        const double *ib = c->fn == gf_pow ? IPB6 : c->fn == gf_div ? B6 : IB6;
        if (c->ints || c->kind == K_DIV)
            for (int k = 0; k < 2; k++)
                for (int la = 0; la < OT_NLAYOUTS; la++)
                    run_binary(c, idts[k], 2, SZ(2, 3), IA6, la, idts[k], 2, SZ(2, 3), ib,
                               (la + 1) % OT_NLAYOUTS);
        /* bool with bool for comparisons and logical ops; bool with i32 */
        if (c->kind == K_BOOL)
            for (int la = 0; la < OT_NLAYOUTS; la++) {
                run_binary(c, GF_BOOL, 2, SZ(2, 3), A6, la, GF_BOOL, 2, SZ(2, 3),
                           DV(1, 0, 0, 1, 1, 0), (la + 2) % OT_NLAYOUTS);
                run_binary(c, GF_BOOL, 2, SZ(2, 3), A6, la, GF_I32, 1, SZ(3), IB6, la);
            }
    }
}

static void test_broadcast_shapes(void) {
    double a12[12], b12[12], a24[24], pa24[24];
    for (int i = 0; i < 12; i++) a12[i] = i * 0.5 - 2, b12[i] = 3 - i * 0.25;
    for (int i = 0; i < 24; i++) a24[i] = i - 11.5, pa24[i] = 0.5 + i * 0.25;
    for (int i = 0; i < N_CASES; i++) {
        const binary_case *c = &cases[i];
        bool p = c->fn == gf_pow;
        for (int k = 0; k < 2; k++) {
            gf_dtype dt = k ? GF_F64 : GF_F32;
            const double *pa = p ? PA6 : a12, *pb = p ? PB6 : b12;
            /* [3, 1] with [1, 4] */
            run_binary(c, dt, 2, SZ(3, 1), pa, OT_CONTIG, dt, 2, SZ(1, 4), pb, OT_CONTIG);
            run_binary(c, dt, 2, SZ(3, 1), pa, OT_STEP, dt, 2, SZ(1, 4), pb, OT_STEP);
            /* [2, 3, 4] with [4] and [4] with [2, 3, 4] */
            run_binary(c, dt, 3, SZ(2, 3, 4), p ? pa24 : a24, OT_TRANSPOSED, dt, 1, SZ(4), pb,
                       OT_STEP);
            run_binary(c, dt, 1, SZ(4), pb, OT_CONTIG, dt, 3, SZ(2, 3, 4), p ? pa24 : a24,
                       OT_CONTIG);
            /* [2, 1, 3] with [4, 1] -> [2, 4, 3] */
            run_binary(c, dt, 3, SZ(2, 1, 3), pa, OT_CONTIG, dt, 2, SZ(4, 1), pb, OT_TRANSPOSED);
            /* 0-dim with a tensor, both ways, and 0-dim with 0-dim */
            run_binary(c, dt, 0, NULL, pa + 3, OT_CONTIG, dt, 2, SZ(2, 3), pb, OT_TRANSPOSED);
            run_binary(c, dt, 2, SZ(2, 3), pa, OT_STEP, dt, 0, NULL, pb + 3, OT_CONTIG);
            run_binary(c, dt, 0, NULL, pa + 2, OT_CONTIG, dt, 0, NULL, pb + 1, OT_CONTIG);
            /* 0-size */
            run_binary(c, dt, 2, SZ(0, 3), NULL, OT_CONTIG, dt, 1, SZ(3), pb, OT_CONTIG);
            run_binary(c, dt, 2, SZ(2, 1), pa, OT_CONTIG, dt, 2, SZ(2, 0), NULL, OT_CONTIG);
            run_binary(c, dt, 1, SZ(1), pa, OT_CONTIG, dt, 1, SZ(0), NULL, OT_CONTIG);
            run_binary(c, dt, 0, NULL, pa, OT_CONTIG, dt, 3, SZ(2, 0, 4), NULL, OT_CONTIG);
        }
    }
}

static void test_expanded_inputs(void) {
    gf_tensor *row = ot_make(GF_F32, 2, SZ(1, 3), DV(1, 2, 3));
    gf_tensor *col = ot_make(GF_F32, 2, SZ(2, 1), DV(10, 20));
    gf_tensor *er = gf_expand(row, SZ(2, 3), 2);
    gf_tensor *ec = gf_expand(col, SZ(2, 3), 2);
    gf_tensor *y = gf_add(er, ec);
    EXPECT_T(y, GF_F32, 2, SZ(2, 3), DV(11, 12, 13, 21, 22, 23), 0);
    gf_tensor *m = gf_mul(er, ec);
    EXPECT_T(m, GF_F32, 2, SZ(2, 3), DV(10, 20, 30, 20, 40, 60), 0);
    /* an expanded input broadcast further */
    gf_tensor *z = ot_make(GF_F32, 3, SZ(2, 1, 1), DV(100, 200));
    gf_tensor *y3 = gf_sub(z, er);
    EXPECT_T(y3, GF_F32, 3, SZ(2, 2, 3), DV(99, 98, 97, 99, 98, 97, 199, 198, 197, 199, 198, 197),
             0);
    REL(row, col, er, ec, y, m, z, y3);
}

static void test_promotion(void) {
    gf_tensor *i32 = ot_make(GF_I32, 1, SZ(3), DV(1, 2, 3));
    gf_tensor *i64 = ot_make(GF_I64, 1, SZ(3), DV(10, 20, 30));
    gf_tensor *f32 = ot_make(GF_F32, 1, SZ(3), DV(0.5, 1.5, 2.5));
    gf_tensor *f64 = ot_make(GF_F64, 1, SZ(3), DV(0.25, 0.5, 0.75));
    gf_tensor *bl = ot_make(GF_BOOL, 1, SZ(3), DV(1, 0, 1));
    gf_tensor *r[12];
    r[0] = gf_add(i32, f32);
    EXPECT_T(r[0], GF_F32, 1, SZ(3), DV(1.5, 3.5, 5.5), 0);
    r[1] = gf_add(f32, i32);
    EXPECT_T(r[1], GF_F32, 1, SZ(3), DV(1.5, 3.5, 5.5), 0);
    r[2] = gf_mul(i32, i64);
    EXPECT_T(r[2], GF_I64, 1, SZ(3), DV(10, 40, 90), 0);
    r[3] = gf_add(f32, f64);
    EXPECT_T(r[3], GF_F64, 1, SZ(3), DV(0.75, 2, 3.25), 0);
    r[4] = gf_add(bl, i32);
    EXPECT_T(r[4], GF_I32, 1, SZ(3), DV(2, 2, 4), 0);
    r[5] = gf_sub(f64, bl);
    EXPECT_T(r[5], GF_F64, 1, SZ(3), DV(-0.75, 0.5, -0.25), 0);
    r[6] = gf_lt(i32, f32); /* 1 < 0.5, 2 < 1.5, 3 < 2.5 */
    EXPECT_T(r[6], GF_BOOL, 1, SZ(3), DV(0, 0, 0), 0);
    r[7] = gf_ge(f32, i32);
    EXPECT_T(r[7], GF_BOOL, 1, SZ(3), DV(0, 0, 0), 0);
    r[8] = gf_eq(bl, i32); /* 1 == 1, 0 == 2, 1 == 3 */
    EXPECT_T(r[8], GF_BOOL, 1, SZ(3), DV(1, 0, 0), 0);
    r[9] = gf_maximum(i64, f32);
    EXPECT_T(r[9], GF_F32, 1, SZ(3), DV(10, 20, 30), 0);
    r[10] = gf_div(i32, f64);
    EXPECT_T(r[10], GF_F64, 1, SZ(3), DV(4, 4, 4), 0);
    r[11] = gf_logical_and(bl, f64);
    EXPECT_T(r[11], GF_BOOL, 1, SZ(3), DV(1, 0, 1), 0);
    for (int i = 0; i < 12; i++) gf_tensor_release(r[i]);
    /* a 0-dim i32 with an f32 tensor: f32 (the tensor dtypes decide) */
    gf_tensor *s = gf_scalar(2, GF_I32, NULL);
    gf_tensor *sf = gf_mul(s, f32);
    EXPECT_T(sf, GF_F32, 1, SZ(3), DV(1, 3, 5), 0);
    /* i64 arithmetic stays exact beyond 2^53 */
    const int64_t big[2] = {(INT64_C(1) << 60) + 1, -((INT64_C(1) << 55) + 7)};
    gf_tensor *bg = gf_from_data(big, SZ(2), 1, GF_I64, NULL);
    gf_tensor *bs = gf_add(bg, bg);
    int64_t got[2] = {0, 0};
    CHECK_OK(gf_tensor_to_host(bs, got, sizeof got));
    CHECK(got[0] == 2 * big[0] && got[1] == 2 * big[1]);
    REL(i32, i64, f32, f64, bl, s, sf, bg, bs);
}

static void test_integer_division(void) {
    /* true division: integer inputs give f32 */
    gf_tensor *a = ot_make(GF_I32, 1, SZ(6), DV(7, -7, 6, 1, -1, 0));
    gf_tensor *b = ot_make(GF_I32, 1, SZ(6), DV(2, 2, 4, 0, 0, 0));
    gf_tensor *q = gf_div(a, b);
    EXPECT_T(q, GF_F32, 1, SZ(6), DV(3.5, -3.5, 1.5, INFINITY, -INFINITY, NAN), 0);
    gf_tensor *a64 = ot_make(GF_I64, 1, SZ(2), DV(-9, 9));
    gf_tensor *b64 = ot_make(GF_I64, 1, SZ(2), DV(4, -4));
    gf_tensor *q64 = gf_div(a64, b64);
    EXPECT_T(q64, GF_F32, 1, SZ(2), DV(-2.25, -2.25), 0);
    gf_tensor *bb = ot_make(GF_BOOL, 1, SZ(2), DV(1, 1));
    gf_tensor *qb = gf_div(bb, a64);
    EXPECT_T(qb, GF_F32, 1, SZ(2), DV(-1.0 / 9, 1.0 / 9), TOL32);
    gf_tensor *ds = gf_div_scalar(a, 2);
    EXPECT_T(ds, GF_F32, 1, SZ(6), DV(3.5, -3.5, 3, 0.5, -0.5, 0), 0);
    /* float division by zero */
    gf_tensor *f = ot_make(GF_F64, 1, SZ(3), DV(1, -1, 0));
    gf_tensor *z = gf_zeros(SZ(1), 1, GF_F64, NULL);
    gf_tensor *fz = gf_div(f, z);
    EXPECT_T(fz, GF_F64, 1, SZ(3), DV(INFINITY, -INFINITY, NAN), 0);
    REL(a, b, q, a64, b64, q64, bb, qb, ds, f, z, fz);
}

static void test_nan_handling(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        gf_tensor *a = ot_make(dt, 1, SZ(3), DV(NAN, 1, NAN));
        gf_tensor *b = ot_make(dt, 1, SZ(3), DV(0, NAN, NAN));
        gf_tensor *mx = gf_maximum(a, b), *mn = gf_minimum(a, b);
        EXPECT_T(mx, dt, 1, SZ(3), DV(NAN, NAN, NAN), 0);
        EXPECT_T(mn, dt, 1, SZ(3), DV(NAN, NAN, NAN), 0);
        gf_tensor *eq = gf_eq(a, b), *ne = gf_ne(a, b), *lt = gf_lt(a, b), *ge = gf_ge(a, b);
        EXPECT_T(eq, GF_BOOL, 1, SZ(3), DV(0, 0, 0), 0);
        EXPECT_T(ne, GF_BOOL, 1, SZ(3), DV(1, 1, 1), 0);
        EXPECT_T(lt, GF_BOOL, 1, SZ(3), DV(0, 0, 0), 0);
        EXPECT_T(ge, GF_BOOL, 1, SZ(3), DV(0, 0, 0), 0);
        gf_tensor *ms = gf_maximum_scalar(a, 5);
        EXPECT_T(ms, dt, 1, SZ(3), DV(NAN, 5, NAN), 0);
        /* NaN is true for the logical ops (nonzero) */
        gf_tensor *la = gf_logical_and(a, a);
        EXPECT_T(la, GF_BOOL, 1, SZ(3), DV(1, 1, 1), 0);
        REL(a, b, mx, mn, eq, ne, lt, ge, ms, la);
    }
}

static void test_where(void) {
    gf_tensor *cond = ot_make(GF_BOOL, 2, SZ(3, 1), DV(1, 0, 1));
    gf_tensor *a = ot_make(GF_F32, 2, SZ(1, 4), DV(1, 2, 3, 4));
    gf_tensor *b = gf_scalar(-1, GF_F64, NULL);
    gf_tensor *w = gf_where(cond, a, b); /* f32 with f64: f64 */
    EXPECT_T(w, GF_F64, 2, SZ(3, 4), DV(1, 2, 3, 4, -1, -1, -1, -1, 1, 2, 3, 4), 0);
    /* strided operands of one shape */
    gf_tensor *c2 = ot_make_transposed(GF_BOOL, 2, SZ(2, 3), DV(1, 0, 0, 1, 1, 0));
    gf_tensor *a2 = ot_make_step(GF_I32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *b2 = ot_make_transposed(GF_I32, 2, SZ(2, 3), DV(-1, -2, -3, -4, -5, -6));
    gf_tensor *w2 = gf_where(c2, a2, b2);
    EXPECT_T(w2, GF_I32, 2, SZ(2, 3), DV(1, -2, -3, 4, 5, -6), 0);
    gf_tensor *b3 = ot_make(GF_F32, 1, SZ(3), DV(0.5, 0.5, 0.5));
    gf_tensor *w3 = gf_where(c2, a2, b3); /* i32 with f32: f32 */
    EXPECT_T(w3, GF_F32, 2, SZ(2, 3), DV(1, 0.5, 0.5, 4, 5, 0.5), 0);
    /* all three 0-dim; 0-size */
    gf_tensor *sc = gf_scalar(0, GF_BOOL, NULL);
    gf_tensor *sa = gf_scalar(1, GF_F64, NULL), *sb = gf_scalar(2, GF_F64, NULL);
    gf_tensor *ws = gf_where(sc, sa, sb);
    EXPECT_T(ws, GF_F64, 0, NULL, DV(2), 0);
    gf_tensor *zc = gf_zeros(SZ(0, 1), 2, GF_BOOL, NULL);
    gf_tensor *wz = gf_where(zc, a, sb);
    EXPECT_T(wz, GF_F64, 2, SZ(0, 4), NULL, 0);
    /* cond must be bool */
    gf_tensor *fc = ot_make(GF_F32, 1, SZ(3), DV(1, 0, 1));
    EXPECT_FAIL(gf_where(fc, b3, b3), GF_ERR_DTYPE);
    REL(cond, a, b, w, c2, a2, b2, w2, b3, w3, sc, sa, sb, ws, zc, wz, fc);
}

static void test_masked_fill(void) {
    gf_tensor *x = ot_make(GF_F32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *m = ot_make(GF_BOOL, 1, SZ(3), DV(0, 1, 0)); /* broadcast over rows */
    gf_tensor *y = gf_masked_fill(x, m, -9.5);
    EXPECT_T(y, GF_F32, 2, SZ(2, 3), DV(1, -9.5, 3, 4, -9.5, 6), 0);
    EXPECT_T(x, GF_F32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6), 0); /* not in place */
    gf_tensor *mc = ot_make(GF_BOOL, 2, SZ(2, 1), DV(1, 0));
    gf_tensor *xt = ot_make_transposed(GF_F64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *y2 = gf_masked_fill(xt, mc, INFINITY);
    EXPECT_T(y2, GF_F64, 2, SZ(2, 3), DV(INFINITY, INFINITY, INFINITY, 4, 5, 6), 0);
    gf_tensor *xi = ot_make_step(GF_I64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *ms = ot_make_step(GF_BOOL, 2, SZ(2, 3), DV(1, 0, 0, 0, 0, 1));
    gf_tensor *y3 = gf_masked_fill(xi, ms, 7);
    EXPECT_T(y3, GF_I64, 2, SZ(2, 3), DV(7, 2, 3, 4, 5, 7), 0);
    gf_tensor *s = gf_scalar(3, GF_F32, NULL), *sm = gf_scalar(1, GF_BOOL, NULL);
    gf_tensor *y4 = gf_masked_fill(s, sm, 0.25);
    EXPECT_T(y4, GF_F32, 0, NULL, DV(0.25), 0);
    gf_tensor *y5 = gf_masked_fill(x, sm, 0); /* 0-dim mask broadcast */
    EXPECT_T(y5, GF_F32, 2, SZ(2, 3), DV(0, 0, 0, 0, 0, 0), 0);
    gf_tensor *z = gf_zeros(SZ(0, 3), 2, GF_F32, NULL);
    gf_tensor *y6 = gf_masked_fill(z, m, 1);
    EXPECT_T(y6, GF_F32, 2, SZ(0, 3), NULL, 0);
    gf_tensor *fm = ot_make(GF_F32, 1, SZ(3), DV(0, 1, 0));
    EXPECT_FAIL(gf_masked_fill(x, fm, 1), GF_ERR_DTYPE);
    gf_tensor *bad = ot_make(GF_BOOL, 1, SZ(4), DV(0, 1, 0, 1));
    EXPECT_FAIL(gf_masked_fill(x, bad, 1), GF_ERR_SHAPE);
    REL(x, m, y, mc, xt, y2, xi, ms, y3, s, sm, y4, y5, z, y6, fm, bad);
}

/* The scalar forms (add_scalar...): test_scalars.c. */

static void test_shape_mismatch(void) {
    gf_tensor *a = gf_zeros(SZ(2, 3), 2, GF_F32, NULL);
    gf_tensor *b = gf_zeros(SZ(4), 1, GF_F32, NULL);
    gf_tensor *c = gf_zeros(SZ(3, 2), 2, GF_F32, NULL);
    for (int i = 0; i < N_CASES; i++) {
        EXPECT_FAIL(cases[i].fn(a, b), GF_ERR_SHAPE);
        EXPECT_FAIL(cases[i].fn(a, c), GF_ERR_SHAPE);
    }
    REL(a, b, c);
}

int main(void) {
    CHECK(gf_init() == GF_OK);
    RUN(test_same_shape_all_layouts);
    RUN(test_broadcast_shapes);
    RUN(test_expanded_inputs);
    RUN(test_promotion);
    RUN(test_integer_division);
    RUN(test_nan_handling);
    RUN(test_where);
    RUN(test_masked_fill);
    RUN(test_shape_mismatch);
    return ot_finish();
}
