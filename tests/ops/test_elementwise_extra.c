/* SPDX-License-Identifier: BSD-3-Clause */
/* test_elementwise_extra.c — the ops of graft/ops_extra.h, forward: values
 * against the C library or hand-computed ones, computed on the host in
 * double (f32 inputs rounded to float first), through contiguous, step-2
 * sliced and transposed inputs, broadcast, 0-size and 0-dim, with inf, NaN
 * and -0.0 among the inputs; integer and bool dtypes where the ops take
 * them; each op's errors. Also run on every device of the cross-device
 * suites (GRAFT_DEVICE), f64 where the device stores it. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops_test.h"

static bool has_f64;
/* The least relative tolerance of the transcendental ops on the device under
 * test: 0 on the reference device (the C library: the compositions' own
 * accuracy is checked there); elsewhere that of the device's exp, log and
 * pow kernels (Vulkan's f32 GLSL exp and log, its f64 pow). Exact results
 * (fmod, remainder, rounding, clamping) are exact on every device. */
static double dev_rtol32, dev_rtol64;

/* got within rtol of want (relative; NaN equal NaN, infinities exact). */
static bool close_rel(double got, double want, double rtol, double atol) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Compares t (dtype dt, n elements) with want[]; exact = also the sign of
 * zeros and bit equality. */
static void expect_vals(const char *what, const gf_tensor *t, gf_dtype dt, int64_t n,
                        const double *want, double rtol, bool exact) {
    if (!t) {
        FAILF("%s: NULL: %s", what, gf_last_error());
        return;
    }
    if (gf_tensor_dtype(t) != dt || gf_tensor_numel(t) != n) {
        FAILF("%s: dtype %s numel %lld, expected %s %lld", what,
              gf_dtype_name(gf_tensor_dtype(t)), (long long)gf_tensor_numel(t),
              gf_dtype_name(dt), (long long)n);
        return;
    }
    double *got = ot_read(t);
    if (!got) {
        FAILF("%s: read failed: %s", what, gf_last_error());
        return;
    }
    double atol = dt == GF_F32 ? 1e-37 : 1e-300;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        bool ok = exact ? ((isnan(got[i]) && isnan(want[i])) ||
                           (got[i] == want[i] && signbit(got[i]) == signbit(want[i])))
                        : close_rel(got[i], want[i], rtol, atol);
        if (!ok && bad++ < 4)
            FAILF("%s: element %lld is %.17g, expected %.17g", what, (long long)i, got[i],
                  want[i]);
    }
    if (!bad) check_passed_++;
    free(got);
}

static double round_to(gf_dtype dt, double v) { return dt == GF_F32 ? (double)(float)v : v; }

/* ------------------------------------------------------------ unary table */
static double r_hardtanh(double x) { return isnan(x) ? x : fmin(fmax(x, -1.0), 1.0); }
static double r_relu6(double x) { return isnan(x) ? x : fmin(fmax(x, 0.0), 6.0); }
static double r_hardsigmoid(double x) { return isnan(x) ? x : fmin(fmax(x + 3, 0.0), 6.0) / 6; }
static double r_softplus(double x) { return x < 0 ? log1p(exp(x)) : x + log1p(exp(-x)); }
static double r_mish(double x) { return x * tanh(r_softplus(x)); }
static double r_logsigmoid(double x) { return -r_softplus(-x); }
static double r_softsign(double x) { return x / (1 + fabs(x)); }
#define SA 1.6732632423543772848170429916717
#define SS 1.0507009873554804934193349852946
static double r_selu(double x) { return SS * (x > 0 ? x : SA * expm1(x)); }
static double r_celu(double x) { return x > 0 ? x : 0.7 * expm1(x / 0.7); }
static double r_celu_neg(double x) { return x > 0 ? x : -0.5 * expm1(x / -0.5); }
static double r_frac(double x) { return x - trunc(x); }
static gf_tensor *f_hardtanh(const gf_tensor *x) { return gf_hardtanh(x, -1.0, 1.0); }
static gf_tensor *f_celu(const gf_tensor *x) { return gf_celu(x, 0.7); }
static gf_tensor *f_celu_neg(const gf_tensor *x) { return gf_celu(x, -0.5); }

typedef struct unary_case {
    const char *name;
    gf_tensor *(*fn)(const gf_tensor *);
    double (*ref)(double);
    double rtol64, rtol32; /* relative tolerances */
    double max_abs;        /* inputs beyond are left out (0: none) */
} unary_case;

static const unary_case UNARY[] = {
    {"hardtanh", f_hardtanh, r_hardtanh, 0, 0, 0},
    {"relu6", gf_relu6, r_relu6, 0, 0, 0},
    {"hardsigmoid", gf_hardsigmoid, r_hardsigmoid, 2e-16, 2e-7, 0},
    {"mish", gf_mish, r_mish, 1e-15, 1e-6, 0},
    {"logsigmoid", gf_logsigmoid, r_logsigmoid, 1e-15, 1e-6, 0},
    {"softsign", gf_softsign, r_softsign, 4e-16, 2e-7, 0},
    {"selu", gf_selu, r_selu, 1e-15, 1e-6, 0},
    {"celu", f_celu, r_celu, 1e-15, 1e-6, 0},
    {"celu alpha -0.5", f_celu_neg, r_celu_neg, 1e-15, 1e-6, 0},
    {"trunc", gf_trunc, trunc, 0, 0, 0},
    {"frac", gf_frac, r_frac, 0, 0, 0},
    {"log2", gf_log2, log2, 1e-15, 1.2e-7, 0},
    {"log10", gf_log10, log10, 1e-15, 1.2e-7, 0},
    {"exp2", gf_exp2, exp2, 1e-15, 1e-6, 0},
    {"tan", gf_tan, tan, 1e-15, 1e-6, 1e5},
    {"sinh", gf_sinh, sinh, 1e-15, 1e-6, 0},
    {"cosh", gf_cosh, cosh, 1e-15, 1e-6, 0},
    {"asinh", gf_asinh, asinh, 1e-15, 1e-6, 0},
    {"acosh", gf_acosh, acosh, 1e-15, 1e-6, 0},
    {"atanh", gf_atanh, atanh, 1e-15, 1e-6, 0},
};
#define N_UNARY (int)(sizeof UNARY / sizeof UNARY[0])

/* Inputs: ordinary values, the kinks and thresholds of the compositions,
 * tiny and huge magnitudes, signed zeros, infinities and NaN. */
static const double XS[] = {
    0.0,    -0.0,   0.3,    -0.3,  1.0,    -1.0,   2.5,    -2.5,    3.0,    -3.0,
    6.0,    7.0,    -7.0,   0.999, -0.999, 1e-10,  -1e-10, 20.0,    20.5,   -20.5,
    50.0,   -50.0,  1e10,   -1e10, 1e300,  -1e300, 800.0,  -800.0,  709.9,  -709.9,
    1024.0, 0.125,  1000.0, 1e-300, 3e8,   -4e8,   0.5,    1.5,     INFINITY, -INFINITY,
    NAN,    -37.5,
};
#define N_XS (int)(sizeof XS / sizeof XS[0])

static void test_unary_values(void) {
    for (int oi = 0; oi < N_UNARY; oi++) {
        const unary_case *c = &UNARY[oi];
        for (int di = 0; di < 2; di++) {
            gf_dtype dt = di ? GF_F64 : GF_F32;
            if (dt == GF_F64 && !has_f64) continue;
            double xs[N_XS + 1], want[N_XS + 1];
            int n = 0;
            for (int i = 0; i < N_XS; i++) {
                double x = round_to(dt, XS[i]);
                if (c->max_abs > 0 && !(fabs(x) <= c->max_abs)) continue;
                xs[n] = x;
                want[n] = round_to(dt, c->ref(x));
                n++;
            }
            if (n % 2) { /* an even count, for the [2, n/2] layouts */
                xs[n] = xs[0];
                want[n] = want[0];
                n++;
            }
            double rtol = dt == GF_F64 ? c->rtol64 : c->rtol32;
            if (rtol > 0) rtol = fmax(rtol, dt == GF_F64 ? dev_rtol64 : dev_rtol32);
            for (int lay = 0; lay < OT_NLAYOUTS; lay++) {
                int64_t sz[2] = {2, n / 2};
                gf_tensor *x = ot_make_layout(lay, dt, 2, sz, xs);
                gf_tensor *y = c->fn(x);
                char what[160];
                snprintf(what, sizeof what, "%s %s %s", c->name, gf_dtype_name(dt),
                         ot_layout_names[lay]);
                expect_vals(what, y, dt, n, want, rtol, false);
                if (y && !ot_same_shape(y, 2, sz)) FAILF("%s: shape changed", what);
                REL(x, y);
            }
            /* 0-dim and 0-size */
            gf_tensor *x0 = ot_make(dt, 0, NULL, &xs[2]);
            gf_tensor *y0 = c->fn(x0);
            char what[160];
            snprintf(what, sizeof what, "%s %s 0-dim", c->name, gf_dtype_name(dt));
            expect_vals(what, y0, dt, 1, &want[2], rtol, false);
            if (y0 && gf_tensor_rank(y0) != 0) FAILF("%s: rank %d", what, gf_tensor_rank(y0));
            gf_tensor *xe = ot_make(dt, 2, SZ(0, 3), NULL);
            gf_tensor *ye = c->fn(xe);
            CHECK_MSG(ye && ot_same_shape(ye, 2, SZ(0, 3)), "%s 0-size: %s", c->name,
                      gf_last_error());
            REL(x0, y0, xe, ye);
        }
    }
}

/* Exact results the tolerance above would not catch. */
static void test_unary_exact_points(void) {
    gf_dtype dts[2] = {GF_F32, GF_F64};
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = dts[di];
        if (dt == GF_F64 && !has_f64) continue;
        /* trunc keeps the sign of zero; log2 / log10 exact at powers; exp2 at
         * integers; hardtanh and relu6 leave inside values untouched. */
        gf_tensor *x = ot_make(dt, 1, SZ(4), DV(-0.5, -0.0, 2.75, -3.5));
        gf_tensor *y = gf_trunc(x);
        expect_vals("trunc signed zeros", y, dt, 4, DV(-0.0, -0.0, 2.0, -3.0), 0, true);
        REL(x, y);
        double p2[6] = {1, 2, 8, 0.25, 1024, 0x1p-60}, l2[6] = {0, 1, 3, -2, 10, -60};
        x = ot_make(dt, 1, SZ(6), p2);
        y = gf_log2(x);
        expect_vals("log2 at powers of two", y, dt, 6, l2, 0, true);
        REL(x, y);
        /* (f32 holds 10^n exactly up to 10^10) */
        double p10[5] = {1, 10, 1000, 1e10, 1e22}, l10[5] = {0, 1, 3, 10, 22};
        int n10 = dt == GF_F32 ? 4 : 5;
        x = ot_make(dt, 1, SZ(n10), p10);
        y = gf_log10(x);
        expect_vals("log10 at powers of ten", y, dt, n10, l10, 0, true);
        REL(x, y);
        double e[8] = {0, 1, 10, -3, 60, 100, 1000, -1000};
        double p[8] = {1, 2, 1024, 0.125, 0x1p60, 0x1p100, 0x1p1000, 0x1p-1000};
        int ne = dt == GF_F64 ? 8 : 6;
        x = ot_make(dt, 1, SZ(ne), e);
        y = gf_exp2(x);
        expect_vals("exp2 at integers", y, dt, ne, p, 0, true);
        REL(x, y);
    }
}

/* Integer and bool inputs: the float functions give f32; hardtanh and relu6
 * keep integer dtypes (bounds truncated); trunc copies; frac refuses. */
static void test_unary_dtypes(void) {
    double iv[6] = {-3, -1, 0, 1, 2, 7};
    gf_tensor *xi = ot_make(GF_I32, 1, SZ(6), iv);
    gf_tensor *xl = ot_make(GF_I64, 1, SZ(6), iv);
    gf_tensor *xb = ot_make(GF_BOOL, 1, SZ(6), DV(1, 0, 0, 1, 1, 0));
    gf_tensor *y = gf_hardtanh(xi, -1.5, 2.7);
    EXPECT_T(y, GF_I32, 1, SZ(6), DV(-1, -1, 0, 1, 2, 2), 0);
    gf_tensor_release(y);
    y = gf_relu6(xl);
    EXPECT_T(y, GF_I64, 1, SZ(6), DV(0, 0, 0, 1, 2, 6), 0);
    gf_tensor_release(y);
    y = gf_trunc(xl);
    EXPECT_T(y, GF_I64, 1, SZ(6), iv, 0);
    gf_tensor_release(y);
    EXPECT_ERR(gf_hardtanh(xb, -1, 1), GF_ERR_DTYPE, "gf_hardtanh", "bool");
    EXPECT_ERR(gf_relu6(xb), GF_ERR_DTYPE, "gf_relu6");
    EXPECT_ERR(gf_frac(xi), GF_ERR_DTYPE, "gf_frac", "i32");
    for (int oi = 0; oi < N_UNARY; oi++) {
        const unary_case *c = &UNARY[oi];
        if (c->fn == f_hardtanh || c->fn == gf_relu6 || c->fn == gf_trunc || c->fn == gf_frac)
            continue;
        for (int k = 0; k < 2; k++) {
            gf_tensor *in = k ? xb : xi;
            double w[6];
            for (int i = 0; i < 6; i++) w[i] = (float)c->ref(k ? (i == 0 || i == 3 || i == 4)
                                                              : iv[i]);
            y = c->fn(in);
            char what[96];
            snprintf(what, sizeof what, "%s of %s", c->name, k ? "bool" : "i32");
            expect_vals(what, y, GF_F32, 6, w, fmax(fmax(c->rtol32, 1e-7), dev_rtol32), false);
            gf_tensor_release(y);
        }
    }
    REL(xi, xl, xb);
}

static void test_unary_errors(void) {
    gf_tensor *x = ot_make(GF_F32, 1, SZ(2), DV(1, 2));
    EXPECT_ERR(gf_hardtanh(x, 2.0, 1.0), GF_ERR_INVALID, "gf_hardtanh", "min_val");
    EXPECT_ERR(gf_hardtanh(x, NAN, 1.0), GF_ERR_INVALID, "gf_hardtanh");
    EXPECT_ERR(gf_celu(x, 0.0), GF_ERR_INVALID, "gf_celu", "alpha");
    EXPECT_ERR(gf_celu(x, NAN), GF_ERR_INVALID, "gf_celu");
    gf_tensor *(*const fns[])(const gf_tensor *) = {
        gf_relu6, gf_hardsigmoid, gf_mish, gf_logsigmoid, gf_softsign, gf_selu, gf_trunc,
        gf_frac, gf_log2, gf_log10, gf_exp2, gf_tan, gf_sinh, gf_cosh, gf_asinh, gf_acosh,
        gf_atanh, gf_isnan, gf_isinf, gf_isposinf, gf_isneginf, gf_isfinite};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        EXPECT_ERR(fns[i](NULL), GF_ERR_INVALID, "gf_");
    EXPECT_ERR(gf_hardtanh(NULL, -1, 1), GF_ERR_INVALID, "gf_hardtanh");
    EXPECT_ERR(gf_celu(NULL, 1), GF_ERR_INVALID, "gf_celu");
    EXPECT_ERR(gf_nan_to_num(NULL, 0, NAN, NAN), GF_ERR_INVALID, "gf_nan_to_num");
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ predicates */
static void test_predicates(void) {
    double v[6] = {1.5, NAN, INFINITY, -INFINITY, -0.0, -2e30};
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !has_f64) continue;
        for (int lay = 0; lay < OT_NLAYOUTS; lay++) {
            gf_tensor *x = ot_make_layout(lay, dt, 2, SZ(2, 3), v);
            gf_tensor *y[5] = {gf_isnan(x), gf_isinf(x), gf_isposinf(x), gf_isneginf(x),
                               gf_isfinite(x)};
            EXPECT_T(y[0], GF_BOOL, 2, SZ(2, 3), DV(0, 1, 0, 0, 0, 0), 0);
            EXPECT_T(y[1], GF_BOOL, 2, SZ(2, 3), DV(0, 0, 1, 1, 0, 0), 0);
            EXPECT_T(y[2], GF_BOOL, 2, SZ(2, 3), DV(0, 0, 1, 0, 0, 0), 0);
            EXPECT_T(y[3], GF_BOOL, 2, SZ(2, 3), DV(0, 0, 0, 1, 0, 0), 0);
            EXPECT_T(y[4], GF_BOOL, 2, SZ(2, 3), DV(1, 0, 0, 0, 1, 1), 0);
            REL(x, y[0], y[1], y[2], y[3], y[4]);
            x = ot_make_layout(lay, dt, 2, SZ(2, 3), v);
            gf_tensor *n1 = gf_nan_to_num(x, 0.0, NAN, NAN);
            double top = dt == GF_F64 ? DBL_MAX : FLT_MAX;
            expect_vals("nan_to_num defaults", n1, dt, 6, DV(1.5, 0, top, -top, -0.0, -2e30),
                        dt == GF_F32 ? 1e-7 : 0, false);
            gf_tensor *n2 = gf_nan_to_num(x, 7.0, 100.0, -5.0);
            expect_vals("nan_to_num values", n2, dt, 6,
                        DV(1.5, 7, 100, -5, -0.0, round_to(dt, -2e30)), 0, true);
            REL(x, n1, n2);
        }
        gf_tensor *x0 = ot_make(dt, 0, NULL, DV(NAN));
        gf_tensor *a = gf_isnan(x0), *b = gf_nan_to_num(x0, -1, NAN, NAN);
        EXPECT_T(a, GF_BOOL, 0, NULL, DV(1), 0);
        EXPECT_T(b, dt, 0, NULL, DV(-1), 0);
        gf_tensor *xe = ot_make(dt, 1, SZ(0), NULL);
        gf_tensor *c = gf_isinf(xe), *d = gf_nan_to_num(xe, 0, NAN, NAN);
        CHECK(c && d && gf_tensor_numel(c) == 0 && gf_tensor_numel(d) == 0);
        REL(x0, a, b, xe, c, d);
    }
    /* integers and bools: never NaN or infinite; nan_to_num copies */
    gf_tensor *xi = ot_make(GF_I64, 1, SZ(3), DV(-4, 0, 9));
    gf_tensor *xb = ot_make(GF_BOOL, 1, SZ(3), DV(1, 0, 1));
    gf_tensor *y[6] = {gf_isnan(xi), gf_isinf(xb), gf_isposinf(xi), gf_isneginf(xb),
                       gf_isfinite(xi), gf_nan_to_num(xi, 0, NAN, NAN)};
    EXPECT_T(y[0], GF_BOOL, 1, SZ(3), DV(0, 0, 0), 0);
    EXPECT_T(y[1], GF_BOOL, 1, SZ(3), DV(0, 0, 0), 0);
    EXPECT_T(y[2], GF_BOOL, 1, SZ(3), DV(0, 0, 0), 0);
    EXPECT_T(y[3], GF_BOOL, 1, SZ(3), DV(0, 0, 0), 0);
    EXPECT_T(y[4], GF_BOOL, 1, SZ(3), DV(1, 1, 1), 0);
    EXPECT_T(y[5], GF_I64, 1, SZ(3), DV(-4, 0, 9), 0);
    /* a copy, not x itself (as trunc of an integer x) */
    gf_tensor *tr = gf_trunc(xi);
    CHECK(y[5] && gf_fill_(y[5], 1.0) == GF_OK && tr && gf_fill_(tr, 2.0) == GF_OK);
    EXPECT_T(xi, GF_I64, 1, SZ(3), DV(-4, 0, 9), 0);
    gf_tensor_release(tr);
    REL(xi, xb, y[0], y[1], y[2], y[3], y[4], y[5]);
}

/* ------------------------------------------------------------ remainder, fmod */
static double r_rem(double a, double b) {
    double m = fmod(a, b);
    if (m != 0 && ((b < 0) != (m < 0))) m += b;
    return m;
}

/* A deterministic generator of values m 2^e with random signs. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static double rnd_val(int emin, int emax, gf_dtype dt) {
    double m = 1.0 + (double)(rng() >> 11) * 0x1p-53;
    int e = emin + (int)(rng() % (uint64_t)(emax - emin + 1));
    double v = ldexp(m, e) * ((rng() & 1) ? -1 : 1);
    return round_to(dt, v);
}

static void check_mod(gf_dtype dt, const double *a, const double *b, int n, const char *tag) {
    double wf[256], wr[256];
    for (int i = 0; i < n; i++) {
        wf[i] = round_to(dt, fmod(a[i], b[i]));
        wr[i] = round_to(dt, r_rem(a[i], b[i]));
    }
    for (int lay = 0; lay < OT_NLAYOUTS; lay++) {
        int64_t sz[2] = {2, n / 2};
        gf_tensor *ta = ot_make_layout(lay, dt, 2, sz, a);
        gf_tensor *tb = ot_make_layout(lay, dt, 2, sz, b);
        gf_tensor *f = gf_fmod(ta, tb), *r = gf_remainder(ta, tb);
        char what[128];
        snprintf(what, sizeof what, "fmod %s %s %s", tag, gf_dtype_name(dt), ot_layout_names[lay]);
        expect_vals(what, f, dt, n, wf, 0, true);
        snprintf(what, sizeof what, "remainder %s %s %s", tag, gf_dtype_name(dt),
                 ot_layout_names[lay]);
        expect_vals(what, r, dt, n, wr, 0, true);
        REL(ta, tb, f, r);
    }
}

static void test_mod_float(void) {
    static const double ha[] = {5, -5, 5, -5, 5.5, -4, 4, 3, -3, 3, INFINITY, NAN, 0.0, -0.0,
                                1e300, 7.25, 1e-300, 0.1, -1e20, 6};
    static const double hb[] = {3, 3, -3, -3, 2, 2, -2, INFINITY, INFINITY, 0, 2, 2, 5, 5,
                                3e-300, -0.5, 3, 0.01, 0.3, NAN};
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !has_f64) continue;
        double a[256], b[256];
        int n = (int)(sizeof ha / sizeof ha[0]);
        for (int i = 0; i < n; i++) {
            a[i] = round_to(dt, ha[i]);
            b[i] = round_to(dt, hb[i]);
        }
        check_mod(dt, a, b, n, "hand");
        /* random pairs: quotients from below 1 to the whole range */
        int emax = dt == GF_F64 ? 1000 : 120;
        for (int i = 0; i < 200; i++) {
            a[i] = rnd_val(-emax, emax, dt);
            b[i] = i < 100 ? rnd_val(-emax, emax, dt) : round_to(dt, a[i] / rnd_val(0, 40, dt));
            if (b[i] == 0 || isinf(b[i])) b[i] = 3;
        }
        check_mod(dt, a, b, 200, "random");
        /* integers as floats, exactly */
        for (int i = 0; i < 40; i++) {
            a[i] = (double)((int64_t)(rng() % 2001) - 1000);
            b[i] = (double)((int64_t)(rng() % 41) - 20);
            if (b[i] == 0) b[i] = 7;
        }
        check_mod(dt, a, b, 40, "small integers");
        /* subnormal operands (the reference device; other devices may flush
         * them to zero) */
        if (dev_rtol64 == 0) {
            double tiny = dt == GF_F64 ? 0x1p-1074 : 0x1p-149;
            for (int i = 0; i < 40; i++) {
                double k1 = (double)(1 + rng() % 100000), k2 = (double)(1 + rng() % 1000);
                a[i] = i % 2 ? rnd_val(-emax, emax, dt) : round_to(dt, k1 * tiny);
                b[i] = round_to(dt, k2 * tiny * ((i % 4) < 2 ? 1 : -1));
            }
            check_mod(dt, a, b, 40, "subnormal");
        }
    }
}

static void test_mod_int_broadcast_scalar(void) {
    /* i64: exact at the ends of the range */
    double av[8] = {7, -7, 7, -7, 0, 9e18, -9e18, 123456789012345678.0};
    double bv[8] = {3, 3, -3, -3, 5, 7, 10, -1000003};
    int64_t ai[8], bi[8];
    for (int i = 0; i < 8; i++) {
        ai[i] = (int64_t)av[i];
        bi[i] = (int64_t)bv[i];
    }
    ai[5] = INT64_MAX;
    ai[6] = INT64_MIN;
    gf_tensor *ta = gf_from_data(ai, SZ(8), 1, GF_I64, NULL);
    gf_tensor *tb = gf_from_data(bi, SZ(8), 1, GF_I64, NULL);
    gf_tensor *f = gf_fmod(ta, tb), *r = gf_remainder(ta, tb);
    int64_t gf_[8] = {0}, gr[8] = {0};
    CHECK(f && gf_tensor_dtype(f) == GF_I64 && gf_tensor_to_host(f, gf_, sizeof gf_) == GF_OK);
    CHECK(r && gf_tensor_dtype(r) == GF_I64 && gf_tensor_to_host(r, gr, sizeof gr) == GF_OK);
    for (int i = 0; i < 8; i++) {
        int64_t m = ai[i] % bi[i], p = m;
        if (p != 0 && ((p < 0) != (bi[i] < 0))) p += bi[i];
        CHECK_MSG(gf_[i] == m, "fmod i64 [%d]: %lld, expected %lld", i, (long long)gf_[i],
                  (long long)m);
        CHECK_MSG(gr[i] == p, "remainder i64 [%d]: %lld, expected %lld", i, (long long)gr[i],
                  (long long)p);
    }
    REL(ta, tb, f, r);
    /* INT64_MIN by -1 is 0 */
    int64_t mn = INT64_MIN, m1 = -1;
    ta = gf_from_data(&mn, NULL, 0, GF_I64, NULL);
    tb = gf_from_data(&m1, NULL, 0, GF_I64, NULL);
    f = gf_fmod(ta, tb);
    r = gf_remainder(ta, tb);
    EXPECT_T(f, GF_I64, 0, NULL, DV(0), 0);
    EXPECT_T(r, GF_I64, 0, NULL, DV(0), 0);
    REL(ta, tb, f, r);
    /* i32 through layouts, broadcast [2, 3] by [3] */
    double a6[6] = {10, -10, 7, 0, -1, 13}, b3[3] = {3, -4, 5};
    for (int lay = 0; lay < OT_NLAYOUTS; lay++) {
        gf_tensor *x = ot_make_layout(lay, GF_I32, 2, SZ(2, 3), a6);
        gf_tensor *d = ot_make(GF_I32, 1, SZ(3), b3);
        gf_tensor *y1 = gf_fmod(x, d), *y2 = gf_remainder(x, d);
        EXPECT_T(y1, GF_I32, 2, SZ(2, 3), DV(1, -2, 2, 0, -1, 3), 0);
        EXPECT_T(y2, GF_I32, 2, SZ(2, 3), DV(1, -2, 2, 0, -1, 3), 0);
        REL(x, d, y1, y2);
    }
    double a6b[6] = {-10, 10, -7, 0, 1, -13};
    gf_tensor *x = ot_make(GF_I32, 2, SZ(2, 3), a6b), *d = ot_make(GF_I32, 1, SZ(3), b3);
    gf_tensor *y = gf_remainder(x, d);
    EXPECT_T(y, GF_I32, 2, SZ(2, 3), DV(2, -2, 3, 0, -3, 2), 0);
    REL(y);
    /* scalar forms: an int64 divisor keeps i32; a double one gives f32 */
    y = gf_remainder_scalar_int(x, 4);
    EXPECT_T(y, GF_I32, 2, SZ(2, 3), DV(2, 2, 1, 0, 1, 3), 0);
    REL(y);
    y = gf_fmod_scalar_int(x, -4);
    EXPECT_T(y, GF_I32, 2, SZ(2, 3), DV(-2, 2, -3, 0, 1, -1), 0);
    REL(y);
    y = gf_fmod_scalar(x, 2.5);
    EXPECT_T(y, GF_F32, 2, SZ(2, 3), DV(-0.0, 0, -2, 0, 1, -0.5), 0);
    REL(y);
    y = gf_remainder_scalar(x, -2.5);
    EXPECT_T(y, GF_F32, 2, SZ(2, 3), DV(0, 0, -2, 0, -1.5, -0.5), 0);
    REL(y);
    gf_tensor *xb = ot_make(GF_BOOL, 1, SZ(2), DV(1, 0));
    y = gf_remainder_scalar_int(xb, 2);
    EXPECT_T(y, GF_I64, 1, SZ(2), DV(1, 0), 0);
    REL(y);
    /* 0-dim with 0-dim, 0-size */
    gf_tensor *s1 = ot_make(GF_F32, 0, NULL, DV(-7.5)), *s2 = ot_make(GF_F32, 0, NULL, DV(2));
    gf_tensor *z1 = gf_remainder(s1, s2);
    EXPECT_T(z1, GF_F32, 0, NULL, DV(0.5), 0);
    gf_tensor *e = ot_make(GF_F32, 2, SZ(0, 3), NULL);
    gf_tensor *z2 = gf_fmod(e, s2), *z3 = gf_remainder_scalar_int(e, 3);
    CHECK(z2 && ot_same_shape(z2, 2, SZ(0, 3)) && z3 && ot_same_shape(z3, 2, SZ(0, 3)));
    /* errors */
    gf_tensor *zero = ot_make(GF_I32, 1, SZ(3), DV(1, 0, 2));
    EXPECT_ERR(gf_remainder(x, zero), GF_ERR_INVALID, "gf_remainder", "division by zero");
    EXPECT_ERR(gf_fmod_scalar_int(x, 0), GF_ERR_INVALID, "gf_fmod_scalar_int", "zero");
    EXPECT_ERR(gf_fmod_scalar_int(x, (int64_t)1 << 40), GF_ERR_OVERFLOW, "gf_fmod_scalar_int");
    EXPECT_ERR(gf_fmod(xb, xb), GF_ERR_DTYPE, "gf_fmod", "bool");
    gf_tensor *b4 = ot_make(GF_I32, 1, SZ(4), DV(1, 2, 3, 4));
    EXPECT_ERR(gf_remainder(x, b4), GF_ERR_SHAPE, "gf_remainder");
    EXPECT_ERR(gf_fmod(NULL, x), GF_ERR_INVALID, "gf_fmod");
    EXPECT_ERR(gf_remainder_scalar(NULL, 1.0), GF_ERR_INVALID, "gf_remainder_scalar");
    REL(x, d, xb, s1, s2, z1, e, z2, z3, zero, b4);
}

/* ------------------------------------------------------------ lerp, addc*, clamp */
static void test_lerp_addc(void) {
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !has_f64) continue;
        double tol = dt == GF_F32 ? 1e-6 : 1e-15;
        double s6[6] = {1, -2, 3.5, 0, 10, -1}, e6[6] = {3, 2, -0.5, 1e-3, 20, 7};
        double w3[3] = {0.25, 1.0, 0.75};
        for (int lay = 0; lay < OT_NLAYOUTS; lay++) {
            gf_tensor *s = ot_make_layout(lay, dt, 2, SZ(2, 3), s6);
            gf_tensor *e = ot_make_layout(lay, dt, 2, SZ(2, 3), e6);
            gf_tensor *w = ot_make(dt, 1, SZ(3), w3);
            gf_tensor *y = gf_lerp(s, e, w);
            double want[6];
            for (int i = 0; i < 6; i++) {
                double ww = w3[i % 3], a = round_to(dt, s6[i]), b = round_to(dt, e6[i]);
                want[i] = ww < 0.5 ? a + ww * (b - a) : b - (b - a) * (1 - ww);
            }
            expect_vals("lerp tensor weight", y, dt, 6, want, tol, false);
            /* weight 1 gives end exactly */
            gf_tensor *y1 = gf_lerp_scalar(s, e, 1.0);
            double eb[6];
            for (int i = 0; i < 6; i++) eb[i] = round_to(dt, e6[i]);
            expect_vals("lerp weight 1", y1, dt, 6, eb, 0, true);
            gf_tensor *y2 = gf_lerp_scalar(s, e, 0.3);
            for (int i = 0; i < 6; i++) {
                double a = round_to(dt, s6[i]), b = round_to(dt, e6[i]);
                want[i] = a + 0.3 * (b - a);
            }
            expect_vals("lerp scalar weight", y2, dt, 6, want, tol, false);
            /* addcmul / addcdiv with a [3] tensor broadcast */
            gf_tensor *m = gf_addcmul(s, e, w, 0.5), *v = gf_addcdiv(s, e, w, -2.0);
            double wm[6], wv[6];
            for (int i = 0; i < 6; i++) {
                double a = round_to(dt, s6[i]), b = round_to(dt, e6[i]);
                wm[i] = a + 0.5 * b * w3[i % 3];
                wv[i] = a - 2.0 * b / w3[i % 3];
            }
            expect_vals("addcmul", m, dt, 6, wm, tol, false);
            expect_vals("addcdiv", v, dt, 6, wv, tol, false);
            REL(s, e, w, y, y1, y2, m, v);
        }
        /* 0-dim, 0-size */
        gf_tensor *a = ot_make(dt, 0, NULL, DV(2)), *b = ot_make(dt, 0, NULL, DV(4));
        gf_tensor *y = gf_lerp_scalar(a, b, 0.5);
        EXPECT_T(y, dt, 0, NULL, DV(3), 0);
        gf_tensor *z = ot_make(dt, 2, SZ(3, 0), NULL);
        gf_tensor *y2 = gf_addcmul(z, a, b, 1.0), *y3 = gf_lerp(z, z, b);
        CHECK(y2 && ot_same_shape(y2, 2, SZ(3, 0)) && y3 && ot_same_shape(y3, 2, SZ(3, 0)));
        REL(a, b, y, z, y2, y3);
    }
    /* integers: addcmul keeps i64 with an integral value, addcdiv gives f32 */
    gf_tensor *i1 = ot_make(GF_I64, 1, SZ(3), DV(1, 2, 3));
    gf_tensor *i2 = ot_make(GF_I64, 1, SZ(3), DV(4, -5, 6));
    gf_tensor *y = gf_addcmul(i1, i2, i2, 3.0);
    EXPECT_T(y, GF_I64, 1, SZ(3), DV(49, 77, 111), 0);
    gf_tensor_release(y);
    gf_tensor *f = ot_make(GF_F32, 1, SZ(3), DV(2, 4, 8));
    y = gf_addcdiv(i1, i2, f, 1.0);
    EXPECT_T(y, GF_F32, 1, SZ(3), DV(3, 0.75, 3.75), 0);
    gf_tensor_release(y);
    gf_tensor *d = ot_make(GF_F64, 1, SZ(3), DV(2, 4, 8));
    gf_tensor *b2 = ot_make(GF_F32, 1, SZ(2), DV(2, 4));
    EXPECT_ERR(gf_addcmul(i1, i2, i2, 0.5), GF_ERR_INVALID, "gf_addcmul", "integer");
    EXPECT_ERR(gf_addcdiv(f, i1, i2, 1.0), GF_ERR_DTYPE, "gf_addcdiv", "integer division");
    EXPECT_ERR(gf_addcmul(f, f, b2, 1.0), GF_ERR_SHAPE, "gf_addcmul");
    EXPECT_ERR(gf_addcdiv(NULL, f, f, 1.0), GF_ERR_INVALID, "gf_addcdiv");
    EXPECT_ERR(gf_lerp(i1, i2, f), GF_ERR_DTYPE, "gf_lerp");
    EXPECT_ERR(gf_lerp(f, d, f), GF_ERR_DTYPE, "gf_lerp", "f64");
    EXPECT_ERR(gf_lerp(f, f, d), GF_ERR_DTYPE, "gf_lerp", "weight");
    EXPECT_ERR(gf_lerp(f, b2, f), GF_ERR_SHAPE, "gf_lerp");
    EXPECT_ERR(gf_lerp_scalar(f, NULL, 0.5), GF_ERR_INVALID, "gf_lerp_scalar");
    EXPECT_ERR(gf_lerp_scalar(i1, i2, 0.5), GF_ERR_DTYPE, "gf_lerp_scalar");
    REL(i1, i2, f, d, b2);
}

static void test_clamp_tensor(void) {
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !has_f64) continue;
        double x6[6] = {-5, 0.5, 9, NAN, 2, -1}, lo3[3] = {-1, 0, 3}, hi3[3] = {1, 0.25, 2};
        for (int lay = 0; lay < OT_NLAYOUTS; lay++) {
            gf_tensor *x = ot_make_layout(lay, dt, 2, SZ(2, 3), x6);
            gf_tensor *lo = ot_make(dt, 1, SZ(3), lo3), *hi = ot_make(dt, 1, SZ(3), hi3);
            gf_tensor *y = gf_clamp_tensor(x, lo, hi);
            /* column 2 has min > max: the result is max */
            EXPECT_T(y, dt, 2, SZ(2, 3), DV(-1, 0.25, 2, NAN, 0.25, 2), 0);
            gf_tensor *y1 = gf_clamp_tensor(x, lo, NULL), *y2 = gf_clamp_tensor(x, NULL, hi);
            EXPECT_T(y1, dt, 2, SZ(2, 3), DV(-1, 0.5, 9, NAN, 2, 3), 0);
            EXPECT_T(y2, dt, 2, SZ(2, 3), DV(-5, 0.25, 2, NAN, 0.25, -1), 0);
            REL(x, lo, hi, y, y1, y2);
        }
        gf_tensor *x = ot_make(dt, 1, SZ(2), DV(1, 2));
        gf_tensor *nb = ot_make(dt, 0, NULL, DV(NAN));
        gf_tensor *y = gf_clamp_tensor(x, nb, NULL);
        EXPECT_T(y, dt, 1, SZ(2), DV(NAN, NAN), 0);
        REL(x, nb, y);
    }
    /* integers exactly, promotion with a float bound */
    int64_t big[3] = {INT64_MAX, INT64_MIN, 5}, lo[1] = {INT64_MIN + 1}, hi[1] = {INT64_MAX - 1};
    gf_tensor *x = gf_from_data(big, SZ(3), 1, GF_I64, NULL);
    gf_tensor *l = gf_from_data(lo, SZ(1), 1, GF_I64, NULL);
    gf_tensor *h = gf_from_data(hi, SZ(1), 1, GF_I64, NULL);
    gf_tensor *y = gf_clamp_tensor(x, l, h);
    int64_t got[3] = {0};
    CHECK(y && gf_tensor_dtype(y) == GF_I64 && gf_tensor_to_host(y, got, sizeof got) == GF_OK);
    CHECK(got[0] == INT64_MAX - 1 && got[1] == INT64_MIN + 1 && got[2] == 5);
    gf_tensor *fl = ot_make(GF_F32, 0, NULL, DV(0.5));
    gf_tensor *xi = ot_make(GF_I32, 1, SZ(2), DV(0, 3));
    gf_tensor *y2 = gf_clamp_tensor(xi, fl, NULL);
    EXPECT_T(y2, GF_F32, 1, SZ(2), DV(0.5, 3), 0);
    gf_tensor *xb = ot_make(GF_BOOL, 1, SZ(2), DV(0, 1));
    gf_tensor *b3 = ot_make(GF_I32, 1, SZ(3), DV(0, 1, 2));
    EXPECT_ERR(gf_clamp_tensor(xi, NULL, NULL), GF_ERR_INVALID, "gf_clamp_tensor", "min");
    EXPECT_ERR(gf_clamp_tensor(xb, xb, NULL), GF_ERR_DTYPE, "gf_clamp_tensor", "bool");
    EXPECT_ERR(gf_clamp_tensor(xi, b3, NULL), GF_ERR_SHAPE, "gf_clamp_tensor");
    EXPECT_ERR(gf_clamp_tensor(NULL, b3, NULL), GF_ERR_INVALID, "gf_clamp_tensor");
    REL(x, l, h, y, fl, xi, y2, xb, b3);
}

/* Operands on two devices fail DEVICE, naming the op (when a second device
 * runs here: the cross-device runs load two plugins). */
static void test_device_mismatch(void) {
    gf_device *dev = gf_device_default(), *other = NULL;
    for (int i = 0; i < gf_device_count() && !other; i++)
        if (gf_device_at(i) != dev) other = gf_device_at(i);
    if (!other) {
        fprintf(stderr, "  (one device: no mismatch to test)\n");
        return;
    }
    gf_tensor *a = ot_make(GF_F32, 1, SZ(3), DV(1, 2, 3));
    gf_tensor *b = gf_to_device(a, other);
    CHECK_MSG(b != NULL, "%s", gf_last_error());
    EXPECT_ERR(gf_fmod(a, b), GF_ERR_DEVICE, "gf_fmod");
    EXPECT_ERR(gf_remainder(b, a), GF_ERR_DEVICE, "gf_remainder");
    EXPECT_ERR(gf_lerp(a, b, a), GF_ERR_DEVICE, "gf_lerp");
    EXPECT_ERR(gf_lerp_scalar(a, b, 0.5), GF_ERR_DEVICE, "gf_lerp_scalar");
    EXPECT_ERR(gf_addcmul(a, a, b, 1.0), GF_ERR_DEVICE, "gf_addcmul");
    EXPECT_ERR(gf_addcdiv(a, b, a, 1.0), GF_ERR_DEVICE, "gf_addcdiv");
    EXPECT_ERR(gf_clamp_tensor(a, b, NULL), GF_ERR_DEVICE, "gf_clamp_tensor");
    EXPECT_ERR(gf_clamp_tensor(a, NULL, b), GF_ERR_DEVICE, "gf_clamp_tensor");
    REL(a, b);
}

int main(void) {
    gf_init();
    gf_device_info info;
    gf_device *dev = gf_device_default();
    has_f64 = dev && gf_device_get_info(dev, &info) == GF_OK && (info.dtypes & (1u << GF_F64));
    if (dev && strcmp(gf_device_plugin(dev), "reference")) {
        dev_rtol32 = 2e-4;
        dev_rtol64 = 1e-13;
    }
    fprintf(stderr, "device %s, f64 %s\n", dev ? gf_device_spec(dev) : "?", has_f64 ? "yes" : "no");
    RUN(test_unary_values);
    RUN(test_unary_exact_points);
    RUN(test_unary_dtypes);
    RUN(test_unary_errors);
    RUN(test_predicates);
    RUN(test_mod_float);
    RUN(test_mod_int_broadcast_scalar);
    RUN(test_lerp_addc);
    RUN(test_clamp_tensor);
    RUN(test_device_mismatch);
    return ot_finish();
}
