/* SPDX-License-Identifier: BSD-3-Clause */
/* test_scalars.c — the scalar rule of ops.h for every scalar op: a double
 * scalar is floating (an integer or bool tensor gives f32, whatever the
 * value), an int64_t scalar (the _int forms) is integer (an integer tensor
 * keeps its dtype, bool gives i64); comparisons give bool; in-place forms
 * refuse a result of a higher kind. Expected values are computed on the
 * host. Also run on every device of the cross-device suites. */
#include <stdint.h>

#include "ops_test.h"

typedef gf_tensor *(*dscalar_fn)(const gf_tensor *, double);
typedef gf_tensor *(*iscalar_fn)(const gf_tensor *, int64_t);
typedef double (*ref_fn)(double, double);

static double r_add(double a, double b) { return a + b; }
static double r_sub(double a, double b) { return a - b; }
static double r_rsub(double a, double b) { return b - a; }
static double r_mul(double a, double b) { return a * b; }
static double r_div(double a, double b) { return a / b; }
static double r_max(double a, double b) { return a > b ? a : b; }
static double r_min(double a, double b) { return a < b ? a : b; }
static double r_eq(double a, double b) { return a == b; }
static double r_ne(double a, double b) { return a != b; }
static double r_lt(double a, double b) { return a < b; }
static double r_le(double a, double b) { return a <= b; }
static double r_gt(double a, double b) { return a > b; }
static double r_ge(double a, double b) { return a >= b; }

enum { K_ARITH, K_DIV, K_CMP };
static const struct {
    const char *name;
    dscalar_fn fd;
    iscalar_fn fi;
    ref_fn ref;
    int kind;
} ops[] = {
    {"add", gf_add_scalar, gf_add_scalar_int, r_add, K_ARITH},
    {"sub", gf_sub_scalar, gf_sub_scalar_int, r_sub, K_ARITH},
    {"rsub", gf_rsub_scalar, gf_rsub_scalar_int, r_rsub, K_ARITH},
    {"mul", gf_mul_scalar, gf_mul_scalar_int, r_mul, K_ARITH},
    {"div", gf_div_scalar, gf_div_scalar_int, r_div, K_DIV},
    {"maximum", gf_maximum_scalar, gf_maximum_scalar_int, r_max, K_ARITH},
    {"minimum", gf_minimum_scalar, gf_minimum_scalar_int, r_min, K_ARITH},
    {"eq", gf_eq_scalar, gf_eq_scalar_int, r_eq, K_CMP},
    {"ne", gf_ne_scalar, gf_ne_scalar_int, r_ne, K_CMP},
    {"lt", gf_lt_scalar, gf_lt_scalar_int, r_lt, K_CMP},
    {"le", gf_le_scalar, gf_le_scalar_int, r_le, K_CMP},
    {"gt", gf_gt_scalar, gf_gt_scalar_int, r_gt, K_CMP},
    {"ge", gf_ge_scalar, gf_ge_scalar_int, r_ge, K_CMP},
};
#define N_OPS (int)(sizeof ops / sizeof ops[0])

static const gf_dtype DTS[5] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
static const double FV[6] = {-1.5, 0, 2, 3, -0.5, 4};
static const double IV[6] = {-3, 0, 2, 3, 2, -7};
static const double BV[6] = {1, 0, 1, 1, 0, 1};

static const double *values_for(gf_dtype dt) {
    return dt == GF_BOOL ? BV : gf_dtype_is_float(dt) ? FV : IV;
}
static bool is_float(gf_dtype dt) { return dt == GF_F32 || dt == GF_F64; }

/* The rule, written out independently of graft: the dtype an op computes
 * in, for a tensor of dtype dt and a double (floating) or int64 scalar. */
static gf_dtype rule_dtype(gf_dtype dt, bool floating_scalar) {
    if (is_float(dt)) return dt;
    if (floating_scalar) return GF_F32;
    return dt == GF_BOOL ? GF_I64 : dt;
}

static double round_to(gf_dtype dt, double v) {
    switch (dt) {
    case GF_F32: return (float)v;
    case GF_I32:
    case GF_I64: return trunc(v);
    case GF_BOOL: return v != 0;
    default: return v;
    }
}

/* One op, one dtype, one scalar, through every layout and a 0-dim tensor. */
static void check_op(int i, gf_dtype dt, bool floating, double s) {
    gf_dtype cdt = rule_dtype(dt, floating);
    gf_dtype odt = ops[i].kind == K_CMP ? GF_BOOL
                   : ops[i].kind == K_DIV && !is_float(cdt) ? GF_F32
                                                             : cdt;
    const double *in = values_for(dt);
    double sc = round_to(cdt, s); /* the scalar as the compute dtype holds it */
    double want[6];
    for (int j = 0; j < 6; j++) want[j] = round_to(odt, ops[i].ref(in[j], sc));
    int failed_before = check_failed_;
    for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
        gf_tensor *x = ot_make_layout(layout, dt, 2, SZ(2, 3), in);
        gf_tensor *y = floating ? ops[i].fd(x, s) : ops[i].fi(x, (int64_t)s);
        EXPECT_T(y, odt, 2, SZ(2, 3), want, ot_tol(odt));
        REL(x, y);
    }
    gf_tensor *x0 = ot_make(dt, 0, NULL, &in[3]);
    gf_tensor *y0 = floating ? ops[i].fd(x0, s) : ops[i].fi(x0, (int64_t)s);
    EXPECT_T(y0, odt, 0, NULL, &want[3], ot_tol(odt));
    REL(x0, y0);
    if (check_failed_ != failed_before)
        fprintf(stderr, "  (in %s_scalar%s, %s tensor, scalar %g)\n", ops[i].name,
                floating ? "" : "_int", gf_dtype_name(dt), s);
}

static void test_double_scalars_are_floating(void) {
    /* 2.0 is integral and still floating: i32 + 2.0 is f32, bool * 3.0 is f32 */
    for (int i = 0; i < N_OPS; i++)
        for (int k = 0; k < 5; k++) {
            check_op(i, DTS[k], true, 2.0);
            check_op(i, DTS[k], true, 2.5);
            check_op(i, DTS[k], true, -3.0);
        }
}

static void test_int_scalars_keep_integers(void) {
    /* i32 + 2 is i32, bool + 2 is i64, f32 * 2 is f32; div is true division */
    for (int i = 0; i < N_OPS; i++)
        for (int k = 0; k < 5; k++) {
            check_op(i, DTS[k], false, 2);
            check_op(i, DTS[k], false, -3);
        }
}

static int64_t read_i64(const gf_tensor *t) {
    int64_t v = 0;
    if (!t || gf_tensor_dtype(t) != GF_I64 || gf_tensor_to_host(t, &v, sizeof v) != GF_OK) return -1;
    return v;
}

static void test_int_scalars_are_exact_and_checked(void) {
    /* i64 beyond 2^53: an int64 scalar is not passed through a double */
    const int64_t big = ((int64_t)1 << 53) + 1;
    gf_tensor *x = gf_from_data(&big, NULL, 0, GF_I64, NULL);
    gf_tensor *y = gf_add_scalar_int(x, 2);
    CHECK(read_i64(y) == big + 2);
    gf_tensor *e = gf_eq_scalar_int(x, big - 1); /* exact: differ by 2 */
    EXPECT_T(e, GF_BOOL, 0, NULL, DV(0), 0);
    gf_tensor *e2 = gf_eq_scalar_int(x, big);
    EXPECT_T(e2, GF_BOOL, 0, NULL, DV(1), 0);
    /* a double scalar compares in f32 with an integer tensor, as PyTorch:
     * 16777217 and 16777216.0 are the same f32 */
    const int64_t f24 = 16777217;
    gf_tensor *xs = gf_from_data(&f24, NULL, 0, GF_I64, NULL);
    gf_tensor *ed = gf_eq_scalar(xs, 16777216.0);
    EXPECT_T(ed, GF_BOOL, 0, NULL, DV(1), 0);
    gf_tensor *ei = gf_eq_scalar_int(xs, 16777216);
    EXPECT_T(ei, GF_BOOL, 0, NULL, DV(0), 0);
    /* an int64 scalar that does not fit an i32 tensor */
    gf_tensor *i = ot_make(GF_I32, 1, SZ(2), DV(1, 2));
    EXPECT_FAIL(gf_add_scalar_int(i, (int64_t)1 << 40), GF_ERR_OVERFLOW);
    CHECK_CONTAINS(gf_last_error(), "gf_to_dtype");
    gf_tensor *ok = gf_add_scalar_int(i, INT32_MAX - 2);
    EXPECT_T(ok, GF_I32, 1, SZ(2), DV(INT32_MAX - 1, INT32_MAX), 0);
    REL(x, y, e, e2, xs, ed, ei, i, ok);
    EXPECT_FAIL(gf_add_scalar_int(NULL, 1), GF_ERR_INVALID);
}

static void test_pow_scalar(void) {
    gf_tensor *i = ot_make(GF_I32, 1, SZ(4), DV(-3, 0, 2, 5));
    gf_tensor *pd = gf_pow_scalar(i, 2.0); /* a double exponent: f32 */
    EXPECT_T(pd, GF_F32, 1, SZ(4), DV(9, 0, 4, 25), 0);
    gf_tensor *pi = gf_pow_scalar_int(i, 3); /* an int64 exponent: exact i32 */
    EXPECT_T(pi, GF_I32, 1, SZ(4), DV(-27, 0, 8, 125), 0);
    gf_tensor *p0 = gf_pow_scalar_int(i, 0);
    EXPECT_T(p0, GF_I32, 1, SZ(4), DV(1, 1, 1, 1), 0);
    EXPECT_FAIL(gf_pow_scalar_int(i, -1), GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "negative integer powers");
    gf_tensor *b = ot_make(GF_BOOL, 1, SZ(2), DV(1, 0));
    gf_tensor *pb = gf_pow_scalar_int(b, 2);
    EXPECT_T(pb, GF_I64, 1, SZ(2), DV(1, 0), 0);
    gf_tensor *pbd = gf_pow_scalar(b, 2.0);
    EXPECT_T(pbd, GF_F32, 1, SZ(2), DV(1, 0), 0);
    gf_tensor *f = ot_make(GF_F64, 1, SZ(2), DV(1.5, -2));
    gf_tensor *pf = gf_pow_scalar_int(f, -2);
    EXPECT_T(pf, GF_F64, 1, SZ(2), DV(1 / 2.25, 0.25), TOL64);
    REL(i, pd, pi, p0, b, pb, pbd, f, pf);
}

static void test_clamp(void) {
    gf_tensor *i = ot_make(GF_I32, 1, SZ(4), DV(-3, 0, 2, 7));
    gf_tensor *cd = gf_clamp(i, 0.0, 4.0); /* double bounds: f32 */
    EXPECT_T(cd, GF_F32, 1, SZ(4), DV(0, 0, 2, 4), 0);
    gf_tensor *cf = gf_clamp(i, NAN, 1.5);
    EXPECT_T(cf, GF_F32, 1, SZ(4), DV(-3, 0, 1.5, 1.5), 0);
    gf_tensor *ci = gf_clamp_int(i, 0, 4); /* int64 bounds: i32 */
    EXPECT_T(ci, GF_I32, 1, SZ(4), DV(0, 0, 2, 4), 0);
    gf_tensor *cmax = gf_clamp_int(i, INT64_MIN, 1); /* INT64_MIN: no lower bound */
    EXPECT_T(cmax, GF_I32, 1, SZ(4), DV(-3, 0, 1, 1), 0);
    gf_tensor *cwide = gf_clamp_int(i, -((int64_t)1 << 40), (int64_t)1 << 40); /* no effect */
    EXPECT_T(cwide, GF_I32, 1, SZ(4), DV(-3, 0, 2, 7), 0);
    gf_tensor *b = ot_make(GF_BOOL, 1, SZ(2), DV(1, 0));
    gf_tensor *cb = gf_clamp_int(b, 0, 0);
    EXPECT_T(cb, GF_I64, 1, SZ(2), DV(0, 0), 0);
    gf_tensor *cbd = gf_clamp(b, 0.25, 0.5);
    EXPECT_T(cbd, GF_F32, 1, SZ(2), DV(0.5, 0.25), 0);
    gf_tensor *f = ot_make(GF_F32, 1, SZ(3), DV(-1.5, 0.5, 9));
    gf_tensor *cfi = gf_clamp_int(f, -1, INT64_MAX);
    EXPECT_T(cfi, GF_F32, 1, SZ(3), DV(-1, 0.5, 9), 0);
    const int64_t big = ((int64_t)1 << 53) + 1;
    gf_tensor *x = gf_from_data(&big, NULL, 0, GF_I64, NULL);
    gf_tensor *cx = gf_clamp_int(x, big, big); /* exact on i64 */
    CHECK(read_i64(cx) == big);
    REL(i, cd, cf, ci, cmax, cwide, b, cb, cbd, f, cfi, x, cx);
}

static void test_in_place(void) {
    /* a result of a higher kind than self is refused before writing */
    gf_tensor *i = ot_make(GF_I32, 1, SZ(3), DV(1, 2, 3));
    CHECK(gf_add_scalar_(i, 2.0) == GF_ERR_DTYPE);
    CHECK(gf_mul_scalar_(i, 1.0) == GF_ERR_DTYPE);
    CHECK(gf_clamp_(i, 0.0, 4.0) == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), "f32");
    EXPECT_T(i, GF_I32, 1, SZ(3), DV(1, 2, 3), 0);
    CHECK(gf_tensor_version(i) == 0);
    CHECK_OK(gf_add_scalar_int_(i, 2));
    CHECK_OK(gf_mul_scalar_int_(i, 3));
    CHECK_OK(gf_clamp_int_(i, 10, 14));
    EXPECT_T(i, GF_I32, 1, SZ(3), DV(10, 12, 14), 0);
    CHECK(gf_add_scalar_int_(i, (int64_t)1 << 40) == GF_ERR_OVERFLOW);
    gf_tensor *b = ot_make(GF_BOOL, 1, SZ(2), DV(1, 0));
    CHECK(gf_add_scalar_int_(b, 1) == GF_ERR_DTYPE); /* i64 into bool */
    CHECK(gf_mul_scalar_(b, 1.0) == GF_ERR_DTYPE);   /* f32 into bool */
    CHECK(gf_clamp_int_(b, 0, 1) == GF_ERR_DTYPE);
    EXPECT_T(b, GF_BOOL, 1, SZ(2), DV(1, 0), 0);
    gf_tensor *f = ot_make(GF_F32, 1, SZ(2), DV(1, 2));
    CHECK_OK(gf_add_scalar_int_(f, 2));
    CHECK_OK(gf_mul_scalar_(f, 0.5));
    CHECK_OK(gf_clamp_int_(f, 2, 3));
    EXPECT_T(f, GF_F32, 1, SZ(2), DV(2, 2), 0);
    gf_tensor *l = ot_make(GF_I64, 1, SZ(2), DV(-5, 5));
    CHECK_OK(gf_clamp_int_(l, -1, 1));
    EXPECT_T(l, GF_I64, 1, SZ(2), DV(-1, 1), 0);
    REL(i, b, f, l);
    gf_clear_error();
}

static void test_fill_values_take_the_tensor_dtype(void) {
    /* masked_fill, fill_ and full take the tensor's (or the given) dtype, as
     * PyTorch's masked_fill / fill_ / full: the value is converted. */
    gf_tensor *i = ot_make(GF_I32, 1, SZ(3), DV(1, 2, 3));
    gf_tensor *m = gf_gt_scalar_int(i, 1);
    gf_tensor *mf = gf_masked_fill(i, m, 7.9);
    EXPECT_T(mf, GF_I32, 1, SZ(3), DV(1, 7, 7), 0);
    CHECK_OK(gf_fill_(i, -2.5));
    EXPECT_T(i, GF_I32, 1, SZ(3), DV(-2, -2, -2), 0);
    gf_tensor *fu = gf_full(SZ(2), 1, 3.0, GF_I64, NULL);
    EXPECT_T(fu, GF_I64, 1, SZ(2), DV(3, 3), 0);
    REL(i, m, mf, fu);
}

int main(void) {
    CHECK(gf_init() == GF_OK);
    RUN(test_double_scalars_are_floating);
    RUN(test_int_scalars_keep_integers);
    RUN(test_int_scalars_are_exact_and_checked);
    RUN(test_pow_scalar);
    RUN(test_clamp);
    RUN(test_in_place);
    RUN(test_fill_values_take_the_tensor_dtype);
    return ot_finish();
}
