/* SPDX-License-Identifier: BSD-3-Clause */
/* test_unary.c — every unary elementwise op on contiguous, strided
 * (step-2 slice, transposed), expanded (stride 0), 0-size and 0-dim inputs,
 * in f32 and f64, and in i32/i64 for the ops that take integers. Expected
 * values come from the C library's closed forms and from literals. */
#include <stdint.h>

#include "ops_test.h"

typedef gf_tensor *(*unary_fn)(const gf_tensor *);
typedef double (*ref_fn)(double);

/* ---- reference formulas (independent of graft) */
static double r_neg(double x) { return -x; }
static double r_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static double r_rsqrt(double x) { return 1 / sqrt(x); }
static double r_recip(double x) { return 1 / x; }
static double r_square(double x) { return x * x; }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_leaky(double x) { return x > 0 ? x : 0.1 * x; }
static double r_elu(double x) { return x > 0 ? x : 0.5 * (exp(x) - 1); }
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double r_gelu_tanh(double x) {
    return 0.5 * x * (1 + tanh(sqrt(2 / OT_PI) * (x + 0.044715 * x * x * x)));
}
static double r_silu(double x) { return x / (1 + exp(-x)); }
static double r_hardswish(double x) { return x * fmin(fmax(x + 3, 0), 6) / 6; }
static double r_softplus(double x) { return log1p(exp(x)); }
/* beta 2, threshold 1: linear once beta * x > threshold */
static double r_softplus_b2(double x) { return 2 * x > 1 ? x : log1p(exp(2 * x)) / 2; }
static double r_clamp(double x) { return x < -1 ? -1 : x > 2 ? 2 : x; }
static double r_clamp_lo(double x) { return x < -1 ? -1 : x; }
static double r_clamp_hi(double x) { return x > 2 ? 2 : x; }
static double r_pow2(double x) { return x * x; }
static double r_pow_half(double x) { return sqrt(x); }
static double r_pow_m1(double x) { return 1 / x; }
static double r_pow3(double x) { return x * x * x; }
/* round half to even, written out rather than relying on the FP mode */
static double r_round(double x) {
    double f = floor(x), d = x - f;
    if (d > 0.5) return f + 1;
    if (d < 0.5) return f;
    return fmod(f, 2) == 0 ? f : f + 1;
}
static double r_not(double x) { return x == 0 ? 1 : 0; }

/* ---- wrappers binding an op's parameters */
static gf_tensor *w_leaky(const gf_tensor *x) { return gf_leaky_relu(x, 0.1); }
static gf_tensor *w_elu(const gf_tensor *x) { return gf_elu(x, 0.5); }
static gf_tensor *w_gelu(const gf_tensor *x) { return gf_gelu(x, false); }
static gf_tensor *w_gelu_tanh(const gf_tensor *x) { return gf_gelu(x, true); }
static gf_tensor *w_softplus(const gf_tensor *x) { return gf_softplus(x, 1, 20); }
static gf_tensor *w_softplus_b2(const gf_tensor *x) { return gf_softplus(x, 2, 1); }
static gf_tensor *w_clamp(const gf_tensor *x) { return gf_clamp(x, -1, 2); }
static gf_tensor *w_clamp_lo(const gf_tensor *x) { return gf_clamp(x, -1, NAN); }
static gf_tensor *w_clamp_hi(const gf_tensor *x) { return gf_clamp(x, NAN, 2); }
/* On integer tensors the int64 bounds keep the dtype (double bounds give
 * f32: tests/ops/test_scalars.c). */
static gf_tensor *w_clamp_int(const gf_tensor *x) { return gf_clamp_int(x, -1, 2); }
static gf_tensor *w_clamp_lo_int(const gf_tensor *x) { return gf_clamp_int(x, -1, INT64_MAX); }
static gf_tensor *w_clamp_hi_int(const gf_tensor *x) { return gf_clamp_int(x, INT64_MIN, 2); }
typedef gf_tensor *(*unary_w)(const gf_tensor *);
static unary_w integer_form(unary_w fn) {
    return fn == w_clamp ? w_clamp_int : fn == w_clamp_lo ? w_clamp_lo_int
                         : fn == w_clamp_hi ? w_clamp_hi_int : fn;
}
static gf_tensor *w_pow2(const gf_tensor *x) { return gf_pow_scalar(x, 2); }
static gf_tensor *w_pow_half(const gf_tensor *x) { return gf_pow_scalar(x, 0.5); }
static gf_tensor *w_pow_m1(const gf_tensor *x) { return gf_pow_scalar(x, -1); }
static gf_tensor *w_pow3(const gf_tensor *x) { return gf_pow_scalar(x, 3); }

typedef struct unary_case {
    const char *name;
    unary_fn fn;
    ref_fn ref;
    double in[6];
    bool ints; /* also takes i32/i64 */
} unary_case;

static const unary_case cases[] = {
    {"neg", gf_neg, r_neg, {-1.5, 0, 2.25, 3, -0.5, 7}, true},
    {"abs", gf_abs, fabs, {-1.5, 0, 2.25, -3, -0.5, 7}, true},
    {"sign", gf_sign, r_sign, {-1.5, 0, 2.25, -3, 0.5, -7}, true},
    {"exp", gf_exp, exp, {-2, -0.5, 0, 0.5, 1, 3}, false},
    {"log", gf_log, log, {0.25, 0.5, 1, 2, 2.718281828459045, 10}, false},
    {"log1p", gf_log1p, log1p, {-0.5, 0, 1e-8, 0.5, 1, 3}, false},
    {"expm1", gf_expm1, expm1, {-1, -1e-8, 0, 1e-8, 0.5, 2}, false},
    {"sqrt", gf_sqrt, sqrt, {0, 0.25, 1, 2, 4, 9}, false},
    {"rsqrt", gf_rsqrt, r_rsqrt, {0.25, 1, 2, 4, 9, 100}, false},
    {"reciprocal", gf_reciprocal, r_recip, {-4, -0.5, 0.25, 1, 2, 8}, false},
    {"square", gf_square, r_square, {-3, -0.5, 0, 1.5, 2, 10}, true},
    {"sin", gf_sin, sin, {-3, -1, 0, 0.5, 1, 3}, false},
    {"cos", gf_cos, cos, {-3, -1, 0, 0.5, 1, 3}, false},
    {"tanh", gf_tanh, tanh, {-3, -1, 0, 0.5, 1, 20}, false},
    {"sigmoid", gf_sigmoid, r_sigmoid, {-20, -1, 0, 0.5, 1, 20}, false},
    {"relu", gf_relu, r_relu, {-2, -0.5, 0, 0.5, 1, 3}, true},
    {"leaky_relu", w_leaky, r_leaky, {-2, -0.5, 0, 0.5, 1, 3}, false},
    {"elu", w_elu, r_elu, {-2, -0.5, 0, 0.5, 1, 3}, false},
    {"gelu", w_gelu, r_gelu, {-3, -1, 0, 0.5, 1, 3}, false},
    {"gelu_tanh", w_gelu_tanh, r_gelu_tanh, {-3, -1, 0, 0.5, 1, 3}, false},
    {"silu", gf_silu, r_silu, {-3, -1, 0, 0.5, 1, 3}, false},
    {"hardswish", gf_hardswish, r_hardswish, {-4, -3, -1.5, 0.5, 3, 4.5}, false},
    {"asin", gf_asin, asin, {-1, -0.7, -0.25, 0, 0.5, 1}, false},
    {"acos", gf_acos, acos, {-1, -0.7, -0.25, 0, 0.5, 1}, false},
    {"atan", gf_atan, atan, {-1e6, -2.5, -0.3, 0, 1, 40}, false},
    {"softplus", w_softplus, r_softplus, {-3, -1, 0, 0.5, 1, 3}, false},
    {"softplus_beta2", w_softplus_b2, r_softplus_b2, {-3, -1, 0, 0.4, 0.6, 3}, false},
    {"erf", gf_erf, erf, {-2, -0.5, 0, 0.1, 1, 3}, false},
    {"floor", gf_floor, floor, {-1.5, -0.5, 0, 0.5, 1.5, 2.7}, false},
    {"ceil", gf_ceil, ceil, {-1.5, -0.5, 0, 0.5, 1.5, 2.7}, false},
    {"round", gf_round, r_round, {0.5, 1.5, 2.5, -0.5, -1.5, 2.6}, false},
    {"clamp", w_clamp, r_clamp, {-3, -1, 0, 1.5, 2, 5}, true},
    {"clamp_min_only", w_clamp_lo, r_clamp_lo, {-3, -1, 0, 1.5, 2, 5}, true},
    {"clamp_max_only", w_clamp_hi, r_clamp_hi, {-3, -1, 0, 1.5, 2, 5}, true},
    {"pow_scalar_2", w_pow2, r_pow2, {-3, -0.5, 0, 1.5, 2, 10}, false},
    {"pow_scalar_0.5", w_pow_half, r_pow_half, {0, 0.25, 1, 2, 4, 9}, false},
    {"pow_scalar_-1", w_pow_m1, r_pow_m1, {-4, -0.5, 0.25, 1, 2, 8}, false},
    {"pow_scalar_3", w_pow3, r_pow3, {-3, -0.5, 0, 1.5, 2, 10}, false},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

static void run_case_dtype(const unary_case *c, gf_dtype dt) {
    double in[6], want[6];
    for (int i = 0; i < 6; i++) {
        in[i] = dt == GF_F32 ? (double)(float)c->in[i] : c->in[i];
        want[i] = c->ref(in[i]);
    }
    double tol = ot_tol(dt);
    if (dt == GF_F32) tol = 4e-6;
    int failed_before = check_failed_;
    for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
        gf_tensor *x = ot_make_layout(layout, dt, 2, SZ(2, 3), in);
        gf_tensor *y = c->fn(x);
        EXPECT_T(y, dt, 2, SZ(2, 3), want, tol);
        CHECK(y == NULL || !gf_tensor_shares_storage(x, y));
        REL(x, y);
    }
    /* expanded: [1, 3] read with stride 0 as [2, 3] */
    gf_tensor *row = ot_make(dt, 2, SZ(1, 3), in);
    gf_tensor *ex = gf_expand(row, SZ(2, 3), 2);
    gf_tensor *ye = c->fn(ex);
    double we[6] = {want[0], want[1], want[2], want[0], want[1], want[2]};
    EXPECT_T(ye, dt, 2, SZ(2, 3), we, tol);
    /* 3-D strided input */
    double in12[12], w12[12];
    for (int i = 0; i < 12; i++) in12[i] = in[i % 6], w12[i] = want[i % 6];
    gf_tensor *x3 = ot_make_transposed(dt, 3, SZ(2, 3, 2), in12);
    gf_tensor *y3 = c->fn(x3);
    EXPECT_T(y3, dt, 3, SZ(2, 3, 2), w12, tol);
    /* 0-size and 0-dim */
    gf_tensor *z = gf_zeros(SZ(0, 3), 2, dt, NULL);
    gf_tensor *yz = c->fn(z);
    EXPECT_T(yz, dt, 2, SZ(0, 3), NULL, 0);
    gf_tensor *s = ot_make(dt, 0, NULL, &in[3]);
    gf_tensor *ys = c->fn(s);
    EXPECT_T(ys, dt, 0, NULL, &want[3], tol);
    REL(row, ex, ye, x3, y3, z, yz, s, ys);
    if (check_failed_ != failed_before)
        fprintf(stderr, "  (in case %s, %s)\n", c->name, gf_dtype_name(dt));
}

static void test_float_cases(void) {
    for (int i = 0; i < N_CASES; i++) {
        run_case_dtype(&cases[i], GF_F32);
        run_case_dtype(&cases[i], GF_F64);
    }
}

static void test_integer_cases(void) {
    const double in[6] = {-3, 0, 5, -7, 2, 1};
    for (int i = 0; i < N_CASES; i++) {
        if (!cases[i].ints) continue;
        for (int k = 0; k < 2; k++) {
            gf_dtype dt = k ? GF_I64 : GF_I32;
            int failed_before = check_failed_;
            double want[6];
            for (int j = 0; j < 6; j++) want[j] = cases[i].ref(in[j]);
            for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
                gf_tensor *x = ot_make_layout(layout, dt, 2, SZ(2, 3), in);
                gf_tensor *y = integer_form(cases[i].fn)(x);
                EXPECT_T(y, dt, 2, SZ(2, 3), want, 0);
                REL(x, y);
            }
            gf_tensor *s = ot_make(dt, 0, NULL, &in[3]);
            gf_tensor *ys = integer_form(cases[i].fn)(s);
            EXPECT_T(ys, dt, 0, NULL, &want[3], 0);
            gf_tensor *z = gf_zeros(SZ(2, 0), 2, dt, NULL);
            gf_tensor *yz = integer_form(cases[i].fn)(z);
            EXPECT_T(yz, dt, 2, SZ(2, 0), NULL, 0);
            REL(s, ys, z, yz);
            if (check_failed_ != failed_before)
                fprintf(stderr, "  (in case %s, %s)\n", cases[i].name, gf_dtype_name(dt));
        }
    }
    /* i64 beyond 2^53 stays exact through neg and abs */
    const int64_t big = -((INT64_C(1) << 60) + 3);
    gf_tensor *b = gf_from_data(&big, NULL, 0, GF_I64, NULL);
    gf_tensor *nb = gf_neg(b), *ab = gf_abs(b);
    int64_t r1 = 0, r2 = 0;
    CHECK_OK(gf_tensor_to_host(nb, &r1, sizeof r1));
    CHECK_OK(gf_tensor_to_host(ab, &r2, sizeof r2));
    CHECK(r1 == -big && r2 == -big);
    REL(b, nb, ab);
}

/* The header says these ops are float ops; as PyTorch, integer and bool
 * inputs are computed in f32 (the rounding ops return integers unchanged). */
static void test_float_ops_on_integers(void) {
    gf_tensor *x = ot_make(GF_I32, 1, SZ(3), DV(1, 2, 4));
    gf_tensor *l = ot_make(GF_I64, 1, SZ(2), DV(0, -1));
    gf_tensor *b = ot_make(GF_BOOL, 1, SZ(2), DV(1, 0));
    gf_tensor *r[6];
    r[0] = gf_exp(x);
    EXPECT_T(r[0], GF_F32, 1, SZ(3), DV(2.718281828459045, 7.38905609893065, 54.598150033144236),
             TOL32);
    r[1] = gf_sqrt(x);
    EXPECT_T(r[1], GF_F32, 1, SZ(3), DV(1, 1.4142135623730951, 2), TOL32);
    r[2] = gf_sigmoid(l);
    EXPECT_T(r[2], GF_F32, 1, SZ(2), DV(0.5, 0.2689414213699951), TOL32);
    r[3] = gf_cos(b);
    EXPECT_T(r[3], GF_F32, 1, SZ(2), DV(0.5403023058681398, 1), TOL32);
    r[4] = gf_floor(x);
    EXPECT_T(r[4], GF_I32, 1, SZ(3), DV(1, 2, 4), 0);
    r[5] = gf_round(l);
    EXPECT_T(r[5], GF_I64, 1, SZ(2), DV(0, -1), 0);
    for (int i = 0; i < 6; i++) gf_tensor_release(r[i]);
    /* as PyTorch: arithmetic negation of bool is refused */
    EXPECT_FAIL(gf_neg(b), GF_ERR_DTYPE);
    REL(x, l, b);
}

static void test_literal_values(void) {
    /* closed-form constants, written out */
    gf_tensor *one = gf_scalar(1, GF_F64, NULL);
    gf_tensor *half = gf_scalar(0.5, GF_F64, NULL);
    gf_tensor *m1 = gf_scalar(-1, GF_F64, NULL);
    gf_tensor *two = gf_scalar(2, GF_F64, NULL);
    gf_tensor *zero = gf_scalar(0, GF_F64, NULL);
    gf_tensor *r[16];
    r[0] = gf_exp(one);
    EXPECT_T(r[0], GF_F64, 0, NULL, DV(2.718281828459045), 1e-15);
    r[1] = gf_exp(m1);
    EXPECT_T(r[1], GF_F64, 0, NULL, DV(0.36787944117144233), 1e-15);
    r[2] = gf_log(two);
    EXPECT_T(r[2], GF_F64, 0, NULL, DV(0.6931471805599453), 1e-15);
    r[3] = gf_sqrt(two);
    EXPECT_T(r[3], GF_F64, 0, NULL, DV(1.4142135623730951), 1e-15);
    r[4] = gf_sin(half);
    EXPECT_T(r[4], GF_F64, 0, NULL, DV(0.479425538604203), 1e-15);
    r[5] = gf_cos(one);
    EXPECT_T(r[5], GF_F64, 0, NULL, DV(0.5403023058681398), 1e-15);
    r[6] = gf_tanh(half);
    EXPECT_T(r[6], GF_F64, 0, NULL, DV(0.46211715726000974), 1e-15);
    r[7] = gf_sigmoid(one);
    EXPECT_T(r[7], GF_F64, 0, NULL, DV(0.7310585786300049), 1e-15);
    r[8] = gf_erf(one);
    EXPECT_T(r[8], GF_F64, 0, NULL, DV(0.8427007929497149), 1e-15);
    r[9] = gf_gelu(one, false); /* Phi(1) */
    EXPECT_T(r[9], GF_F64, 0, NULL, DV(0.8413447460685429), 1e-15);
    r[10] = gf_gelu(one, true);
    EXPECT_T(r[10], GF_F64, 0, NULL, DV(0.8411919906082768), 1e-15);
    r[11] = gf_softplus(zero, 1, 20); /* ln 2 */
    EXPECT_T(r[11], GF_F64, 0, NULL, DV(0.6931471805599453), 1e-15);
    r[12] = gf_elu(m1, 1.0);
    EXPECT_T(r[12], GF_F64, 0, NULL, DV(-0.6321205588285577), 1e-15);
    r[13] = gf_expm1(one);
    EXPECT_T(r[13], GF_F64, 0, NULL, DV(1.718281828459045), 1e-15);
    r[14] = gf_log1p(one);
    EXPECT_T(r[14], GF_F64, 0, NULL, DV(0.6931471805599453), 1e-15);
    r[15] = gf_silu(one);
    EXPECT_T(r[15], GF_F64, 0, NULL, DV(0.7310585786300049), 1e-15);
    for (int i = 0; i < 16; i++) gf_tensor_release(r[i]);
    REL(one, half, m1, two, zero);
}

static void test_special_values(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        gf_tensor *x = ot_make(dt, 1, SZ(3), DV(0, -1, INFINITY));
        gf_tensor *l = gf_log(x);
        EXPECT_T(l, dt, 1, SZ(3), DV(-INFINITY, NAN, INFINITY), 0);
        gf_tensor *s = gf_sqrt(x);
        EXPECT_T(s, dt, 1, SZ(3), DV(0, NAN, INFINITY), 0);
        gf_tensor *rc = gf_reciprocal(x);
        EXPECT_T(rc, dt, 1, SZ(3), DV(INFINITY, -1, 0), 0);
        gf_tensor *rs = gf_rsqrt(x);
        EXPECT_T(rs, dt, 1, SZ(3), DV(INFINITY, NAN, 0), 0);
        /* saturating functions stay finite far out */
        gf_tensor *big = ot_make(dt, 1, SZ(4), DV(-1000, -100, 100, 1000));
        gf_tensor *sg = gf_sigmoid(big);
        EXPECT_T(sg, dt, 1, SZ(4), DV(0, 0, 1, 1), 1e-30);
        gf_tensor *th = gf_tanh(big);
        EXPECT_T(th, dt, 1, SZ(4), DV(-1, -1, 1, 1), 0);
        gf_tensor *sp = gf_softplus(big, 1, 20); /* above threshold: x */
        EXPECT_T(sp, dt, 1, SZ(4), DV(0, 0, 100, 1000), 1e-30);
        gf_tensor *si = gf_silu(big);
        EXPECT_T(si, dt, 1, SZ(4), DV(0, 0, 100, 1000), 1e-30);
        /* NaN goes through */
        gf_tensor *n = ot_make(dt, 1, SZ(2), DV(NAN, 1));
        gf_tensor *ne = gf_exp(n);
        EXPECT_T(ne, dt, 1, SZ(2), DV(NAN, 2.718281828459045), ot_tol(dt));
        gf_tensor *nc = gf_clamp(n, 0, 0.5);
        double *ncv = ot_read(nc);
        CHECK(ncv && isnan(ncv[0]) && ncv[1] == 0.5);
        free(ncv);
        /* floor/ceil/round of negatives and of halves */
        gf_tensor *h = ot_make(dt, 1, SZ(4), DV(-2.5, -0.5, 3.5, -3.7));
        gf_tensor *rd = gf_round(h);
        EXPECT_T(rd, dt, 1, SZ(4), DV(-2, -0.0, 4, -4), 0);
        gf_tensor *fl = gf_floor(h);
        EXPECT_T(fl, dt, 1, SZ(4), DV(-3, -1, 3, -4), 0);
        gf_tensor *ce = gf_ceil(h);
        EXPECT_T(ce, dt, 1, SZ(4), DV(-2, -0.0, 4, -3), 0);
        REL(x, l, s, rc, rs, big, sg, th, sp, si, n, ne, nc, h, rd, fl, ce);
    }
    gf_tensor *x = ot_make(GF_F32, 1, SZ(2), DV(1, 2));
    EXPECT_FAIL(gf_clamp(x, NAN, NAN), GF_ERR_INVALID);
    gf_tensor_release(x);
}

static void test_logical_not(void) {
    const double in[6] = {0, 1, -2.5, 0, 0.5, 0};
    const gf_dtype dts[] = {GF_BOOL, GF_F32, GF_F64, GF_I32, GF_I64};
    double want[6];
    for (int i = 0; i < 6; i++) want[i] = r_not(in[i]);
    for (int k = 0; k < 5; k++) {
        gf_dtype dt = dts[k];
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            gf_tensor *x = ot_make_layout(layout, dt, 2, SZ(2, 3), in);
            gf_tensor *y = gf_logical_not(x);
            double w[6];
            /* integer dtypes store the truncated value: 0.5 becomes 0 */
            for (int i = 0; i < 6; i++)
                w[i] = dt == GF_I32 || dt == GF_I64 ? r_not((double)(int64_t)in[i]) : want[i];
            EXPECT_T(y, GF_BOOL, 2, SZ(2, 3), w, 0);
            REL(x, y);
        }
        gf_tensor *s = gf_scalar(0, dt, NULL);
        gf_tensor *ys = gf_logical_not(s);
        EXPECT_T(ys, GF_BOOL, 0, NULL, DV(1), 0);
        gf_tensor *z = gf_zeros(SZ(0), 1, dt, NULL);
        gf_tensor *yz = gf_logical_not(z);
        EXPECT_T(yz, GF_BOOL, 1, SZ(0), NULL, 0);
        gf_tensor *row = ot_make(dt, 2, SZ(1, 2), DV(0, 3));
        gf_tensor *ex = gf_expand(row, SZ(3, 2), 2);
        gf_tensor *ye = gf_logical_not(ex);
        EXPECT_T(ye, GF_BOOL, 2, SZ(3, 2), DV(1, 0, 1, 0, 1, 0), 0);
        REL(s, ys, z, yz, row, ex, ye);
    }
}

int main(void) {
    CHECK(gf_init() == GF_OK);
    RUN(test_float_cases);
    RUN(test_integer_cases);
    RUN(test_float_ops_on_integers);
    RUN(test_literal_values);
    RUN(test_special_values);
    RUN(test_logical_not);
    return ot_finish();
}
