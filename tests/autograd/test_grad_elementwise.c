/* SPDX-License-Identifier: BSD-3-Clause */
/* test_grad_elementwise.c — backward formulas of every differentiable
 * elementwise op.
 *
 * Each op is checked three ways: its gradient against the closed-form
 * derivative evaluated here with libm (never through graft); gf_gradcheck and
 * gf_gradgradcheck in f64 on contiguous, transposed, step-sliced, expanded
 * and broadcast inputs; and a loose first-order gradcheck in f32 for a few
 * ops. The conventions at non-differentiable points are pinned with exact
 * values, and what each node saves is pinned by modifying the input in place
 * before backward. */
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})
#define DV(...) ((const double[]){__VA_ARGS__})
#define PI 3.14159265358979323846

/* Test values: at least 0.1 away from integers, half-integers, +-1, +-0.5,
 * and 1.5 (the softplus threshold below), so every op is smooth around them
 * (to well beyond the finite-difference step). */
#define NG 24
static const double GV[NG] = {-1.83, -1.27, -0.71, -0.33, 0.22, 0.68, 1.17, 1.79,
                              -0.87, 0.37,  -1.62, 1.34,  -0.28, 0.77, -1.13, 1.63,
                              0.31,  -0.62, 1.24,  -1.72, 0.86,  -0.19, 1.71, -0.77};

enum { D_ANY, D_POS, D_SHIFT, D_UNIT };
/* Value i of a domain; D_SHIFT is off every D_ANY value by 0.013 mod 0.01, so
 * maximum/minimum never tie; D_UNIT (half of D_ANY) lies within (-0.92, 0.92),
 * where asin and acos are smooth. */
static double value(int dom, int64_t i, int off) {
    double v = GV[(off + 5 * i) % NG];
    if (dom == D_POS) return fabs(v) + 0.1;
    if (dom == D_SHIFT) return v + 0.013;
    if (dom == D_UNIT) return v / 2;
    return v;
}

static int64_t numel(int rank, const int64_t *sizes) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    return n;
}

static gf_tensor *make(gf_dtype dt, int rank, const int64_t *sizes, const double *v, bool rg) {
    gf_tensor *d = gf_from_data(v, sizes, rank, GF_F64, NULL);
    gf_tensor *t = d ? gf_to_dtype(d, dt) : NULL;
    gf_tensor_release(d);
    CHECK(t != NULL);
    if (t && rg) CHECK(gf_tensor_set_requires_grad(t, true) == GF_OK);
    return t;
}

/* A leaf of dtype dt filled from a domain. */
static gf_tensor *leaf(gf_dtype dt, int rank, const int64_t *sizes, int dom, int off) {
    double v[64];
    int64_t n = numel(rank, sizes);
    for (int64_t i = 0; i < n; i++) v[i] = value(dom, i, off);
    return make(dt, rank, sizes, v, true);
}

/* Reads t (any dtype) as n doubles. */
static void read(const gf_tensor *t, double *out, int64_t n) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK(gf_tensor_numel(t) == n);
    gf_tensor *d = gf_to_dtype(t, GF_F64);
    CHECK(d && gf_tensor_to_host(d, out, (size_t)n * sizeof(double)) == GF_OK);
    gf_tensor_release(d);
}

static void check_vals(const gf_tensor *t, const double *want, int64_t n, double tol) {
    double got[64];
    for (int64_t i = 0; i < n; i++) got[i] = NAN;
    read(t, got, n);
    for (int64_t i = 0; i < n; i++) CHECK_CLOSE(got[i], want[i], tol);
}

/* .grad of x after backward of sum(y); y is released. */
static gf_tensor *grad_of_sum(gf_tensor *y, gf_tensor *x) {
    gf_tensor *s = gf_sum(y, NULL, 0, false);
    CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
    gf_tensor_release(s);
    gf_tensor_release(y);
    return gf_tensor_grad(x);
}

/* ------------------------------------------------------------ unary op table */
static gf_tensor *w_leaky(const gf_tensor *x) { return gf_leaky_relu(x, 0.1); }
static gf_tensor *w_elu(const gf_tensor *x) { return gf_elu(x, 1.3); }
static gf_tensor *w_gelu(const gf_tensor *x) { return gf_gelu(x, false); }
static gf_tensor *w_gelu_tanh(const gf_tensor *x) { return gf_gelu(x, true); }
/* 2.5 x spreads the values over all three pieces of hardswish (none within
 * the finite-difference step of -3 or 3). */
static gf_tensor *w_hardswish(const gf_tensor *x) {
    gf_tensor *s = gf_mul_scalar(x, 2.5);
    gf_tensor *y = s ? gf_hardswish(s) : NULL;
    gf_tensor_release(s);
    return y;
}
static gf_tensor *w_softplus(const gf_tensor *x) { return gf_softplus(x, 2.0, 3.0); }
static gf_tensor *w_softplus_def(const gf_tensor *x) { return gf_softplus(x, 1.0, 20.0); }
static gf_tensor *w_softplus_neg(const gf_tensor *x) { return gf_softplus(x, -1.5, 2.0); }
static gf_tensor *w_clamp(const gf_tensor *x) { return gf_clamp(x, -1.0, 1.0); }
static gf_tensor *w_clamp_min(const gf_tensor *x) { return gf_clamp(x, -0.5, NAN); }
static gf_tensor *w_clamp_max(const gf_tensor *x) { return gf_clamp(x, NAN, 0.5); }
static gf_tensor *w_pow_2_5(const gf_tensor *x) { return gf_pow_scalar(x, 2.5); }
static gf_tensor *w_pow_3(const gf_tensor *x) { return gf_pow_scalar(x, 3.0); }
static gf_tensor *w_pow_m1_5(const gf_tensor *x) { return gf_pow_scalar(x, -1.5); }
static gf_tensor *w_pow_0(const gf_tensor *x) { return gf_pow_scalar(x, 0.0); }
static gf_tensor *w_pow_1(const gf_tensor *x) { return gf_pow_scalar(x, 1.0); }

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }
static double d_neg(double x) { (void)x; return -1; }
static double d_abs(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static double d_zero(double x) { (void)x; return 0; }
static double d_one(double x) { (void)x; return 1; }
static double d_log(double x) { return 1 / x; }
static double d_log1p(double x) { return 1 / (1 + x); }
static double d_sqrt(double x) { return 0.5 / sqrt(x); }
static double d_rsqrt(double x) { return -0.5 * pow(x, -1.5); }
static double d_recip(double x) { return -1 / (x * x); }
static double d_square(double x) { return 2 * x; }
static double d_sin(double x) { return cos(x); }
static double d_cos(double x) { return -sin(x); }
static double d_tanh(double x) { return 1 - tanh(x) * tanh(x); }
static double d_sigmoid(double x) { return sigm(x) * (1 - sigm(x)); }
static double d_relu(double x) { return x > 0; }
static double d_leaky(double x) { return x > 0 ? 1 : 0.1; }
static double d_elu(double x) { return x > 0 ? 1 : 1.3 * exp(x); }
static double d_gelu(double x) {
    return 0.5 * (1 + erf(x / sqrt(2))) + x * exp(-x * x / 2) / sqrt(2 * PI);
}
/* y = x/2 (1 + tanh u), u = k (x + c x^3): y' = (1 + tanh u)/2 + x/2 sech^2(u) u'. */
static double d_asin(double x) { return 1 / sqrt(1 - x * x); }
static double d_acos(double x) { return -1 / sqrt(1 - x * x); }
static double d_atan(double x) { return 1 / (1 + x * x); }
/* PyTorch's hardswish_backward, times the 2.5 of w_hardswish. */
static double d_hardswish(double x) {
    double u = 2.5 * x;
    return 2.5 * (u <= -3 ? 0 : u < 3 ? u / 3 + 0.5 : 1);
}
static double d_gelu_tanh(double x) {
    double k = sqrt(2 / PI), c = 0.044715, u = k * (x + c * x * x * x);
    double sech2 = 1 / (cosh(u) * cosh(u));
    return 0.5 * (1 + tanh(u)) + 0.5 * x * sech2 * k * (1 + 3 * c * x * x);
}
static double d_silu(double x) { return sigm(x) + x * sigm(x) * (1 - sigm(x)); }
static double d_softplus(double x) { return 2 * x > 3 ? 1 : sigm(2 * x); }
static double d_softplus_def(double x) { return x > 20 ? 1 : sigm(x); }
static double d_softplus_neg(double x) { return -1.5 * x > 2 ? 1 : sigm(-1.5 * x); }
static double d_erf(double x) { return 2 / sqrt(PI) * exp(-x * x); }
static double d_clamp(double x) { return x > -1 && x < 1; }
static double d_clamp_min(double x) { return x > -0.5; }
static double d_clamp_max(double x) { return x < 0.5; }
static double d_pow_2_5(double x) { return 2.5 * pow(x, 1.5); }
static double d_pow_3(double x) { return 3 * x * x; }
static double d_pow_m1_5(double x) { return -1.5 * pow(x, -2.5); }

typedef struct uop {
    const char *name;
    gf_tensor *(*f)(const gf_tensor *);
    int dom;
    double (*d)(double);
    const char *node; /* grad_fn name */
} uop;

static const uop UOPS[] = {
    {"neg", gf_neg, D_ANY, d_neg, "NegBackward"},
    {"abs", gf_abs, D_ANY, d_abs, "AbsBackward"},
    {"sign", gf_sign, D_ANY, d_zero, "SignBackward"},
    {"exp", gf_exp, D_ANY, exp, "ExpBackward"},
    {"log", gf_log, D_POS, d_log, "LogBackward"},
    {"log1p", gf_log1p, D_POS, d_log1p, "Log1pBackward"},
    {"expm1", gf_expm1, D_ANY, exp, "Expm1Backward"},
    {"sqrt", gf_sqrt, D_POS, d_sqrt, "SqrtBackward"},
    {"rsqrt", gf_rsqrt, D_POS, d_rsqrt, "RsqrtBackward"},
    {"reciprocal", gf_reciprocal, D_ANY, d_recip, "ReciprocalBackward"},
    {"square", gf_square, D_ANY, d_square, "SquareBackward"},
    {"sin", gf_sin, D_ANY, d_sin, "SinBackward"},
    {"cos", gf_cos, D_ANY, d_cos, "CosBackward"},
    {"tanh", gf_tanh, D_ANY, d_tanh, "TanhBackward"},
    {"sigmoid", gf_sigmoid, D_ANY, d_sigmoid, "SigmoidBackward"},
    {"relu", gf_relu, D_ANY, d_relu, "ReluBackward"},
    {"leaky_relu", w_leaky, D_ANY, d_leaky, "LeakyReluBackward"},
    {"elu", w_elu, D_ANY, d_elu, "EluBackward"},
    {"gelu", w_gelu, D_ANY, d_gelu, "GeluBackward"},
    {"gelu_tanh", w_gelu_tanh, D_ANY, d_gelu_tanh, "GeluBackward"},
    {"silu", gf_silu, D_ANY, d_silu, "SiluBackward"},
    {"hardswish", w_hardswish, D_ANY, d_hardswish, "HardswishBackward"},
    {"asin", gf_asin, D_UNIT, d_asin, "AsinBackward"},
    {"acos", gf_acos, D_UNIT, d_acos, "AcosBackward"},
    {"atan", gf_atan, D_ANY, d_atan, "AtanBackward"},
    {"softplus", w_softplus, D_ANY, d_softplus, "SoftplusBackward"},
    {"softplus_default", w_softplus_def, D_ANY, d_softplus_def, "SoftplusBackward"},
    {"softplus_neg_beta", w_softplus_neg, D_ANY, d_softplus_neg, "SoftplusBackward"},
    {"erf", gf_erf, D_ANY, d_erf, "ErfBackward"},
    {"floor", gf_floor, D_ANY, d_zero, "FloorBackward"},
    {"ceil", gf_ceil, D_ANY, d_zero, "CeilBackward"},
    {"round", gf_round, D_ANY, d_zero, "RoundBackward"},
    {"clamp", w_clamp, D_ANY, d_clamp, "ClampBackward"},
    {"clamp_min", w_clamp_min, D_ANY, d_clamp_min, "ClampBackward"},
    {"clamp_max", w_clamp_max, D_ANY, d_clamp_max, "ClampBackward"},
    {"pow_scalar_2.5", w_pow_2_5, D_POS, d_pow_2_5, "PowBackward"},
    {"pow_scalar_3", w_pow_3, D_ANY, d_pow_3, "PowBackward"},
    {"pow_scalar_-1.5", w_pow_m1_5, D_POS, d_pow_m1_5, "PowBackward"},
    {"pow_scalar_0", w_pow_0, D_ANY, d_zero, "PowBackward"},
    {"pow_scalar_1", w_pow_1, D_ANY, d_one, "PowBackward"},
};
#define N_UOPS ((int)(sizeof UOPS / sizeof UOPS[0]))

/* ------------------------------------------------------------ layouts */
/* Every layout presents the op with a [2, 3] operand (unary) built from a
 * leaf of another shape, so gradcheck perturbs the leaf. */
enum { L_CONTIG, L_TRANSPOSED, L_STEP, L_EXPANDED, N_LAYOUTS };
static const char *LAYOUT_NAMES[] = {"contiguous", "transposed", "slice step 2", "expanded"};

static void layout_leaf(int layout, int *rank, int64_t *sizes) {
    *rank = 2;
    switch (layout) {
    case L_CONTIG: sizes[0] = 2, sizes[1] = 3; break;
    case L_TRANSPOSED: sizes[0] = 3, sizes[1] = 2; break;
    case L_STEP: sizes[0] = 2, sizes[1] = 6; break;
    default: sizes[0] = 1, sizes[1] = 3; break;
    }
}

/* The operand seen by the op, as a new reference. */
static gf_tensor *apply_layout(gf_tensor *t, int layout) {
    switch (layout) {
    case L_TRANSPOSED: return gf_transpose(t, 0, 1);
    case L_STEP: return gf_slice(t, 1, 0, 6, 2);
    case L_EXPANDED: return gf_expand(t, SZ(2, 3), 2);
    default: return gf_tensor_retain(t);
    }
}

typedef struct ucase {
    const uop *op;
    int layout;
} ucase;

static gf_tensor *unary_fn(gf_tensor *const *in, int n, void *user) {
    (void)n;
    const ucase *c = user;
    gf_tensor *x = apply_layout(in[0], c->layout);
    gf_tensor *y = x ? c->op->f(x) : NULL;
    gf_tensor_release(x);
    return y;
}

/* ------------------------------------------------------------ unary tests */
/* Gradient of sum(op(x)) against the closed-form derivative. */
static void test_unary_closed_form(void) {
    for (int k = 0; k < N_UOPS; k++) {
        const uop *op = &UOPS[k];
        gf_tensor *x = leaf(GF_F64, 1, SZ(NG), op->dom, 0);
        gf_tensor *y = op->f(x);
        CHECK_MSG(y != NULL, "%s: %s", op->name, gf_last_error());
        const char *nm = gf_tensor_grad_fn_name(y);
        CHECK_MSG(nm && !strcmp(nm, op->node), "%s: grad_fn %s", op->name, nm ? nm : "(none)");
        gf_tensor *g = grad_of_sum(y, x);
        double got[NG];
        read(g, got, NG);
        for (int i = 0; i < NG; i++) {
            double xv = value(op->dom, i, 0), want = op->d(xv);
            CHECK_MSG(check_close_(got[i], want, 1e-12, 1e-12), "%s'(%g): got %.17g, want %.17g",
                      op->name, xv, got[i], want);
        }
        gf_tensor_release(g);
        gf_tensor_release(x);
    }
}

static void test_unary_gradcheck(void) {
    for (int k = 0; k < N_UOPS; k++) {
        for (int l = 0; l < N_LAYOUTS; l++) {
            ucase c = {&UOPS[k], l};
            int rank;
            int64_t sizes[2];
            layout_leaf(l, &rank, sizes);
            gf_tensor *x = leaf(GF_F64, rank, sizes, UOPS[k].dom, 1);
            gf_status s = gf_gradcheck(unary_fn, &x, 1, &c, NULL);
            CHECK_MSG(s == GF_OK, "gradcheck %s (%s): %s", UOPS[k].name, LAYOUT_NAMES[l],
                      gf_last_error());
            s = gf_gradgradcheck(unary_fn, &x, 1, &c, NULL);
            CHECK_MSG(s == GF_OK, "gradgradcheck %s (%s): %s", UOPS[k].name, LAYOUT_NAMES[l],
                      gf_last_error());
            gf_tensor_release(x);
        }
    }
}

/* First-order checks in f32 with loose tolerances. */
static void test_unary_gradcheck_f32(void) {
    const char *names[] = {"exp", "tanh", "sigmoid", "gelu", "gelu_tanh", "softplus", "log",
                           "rsqrt", "silu", "erf", "hardswish", "asin", "acos", "atan"};
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.eps = 1e-3, o.atol = 1e-2, o.rtol = 1e-2;
    for (size_t j = 0; j < sizeof names / sizeof names[0]; j++) {
        const uop *op = NULL;
        for (int k = 0; k < N_UOPS; k++)
            if (!strcmp(UOPS[k].name, names[j])) op = &UOPS[k];
        CHECK(op != NULL);
        if (!op) continue;
        for (int l = 0; l < N_LAYOUTS; l += 2) {
            ucase c = {op, l};
            int rank;
            int64_t sizes[2];
            layout_leaf(l, &rank, sizes);
            gf_tensor *x = leaf(GF_F32, rank, sizes, op->dom, 2);
            gf_status s = gf_gradcheck(unary_fn, &x, 1, &c, &o);
            CHECK_MSG(s == GF_OK, "f32 gradcheck %s (%s): %s", op->name, LAYOUT_NAMES[l],
                      gf_last_error());
            gf_tensor_release(x);
        }
    }
}

/* ------------------------------------------------------------ binary op table */
static double b_one(double a, double b) { (void)a, (void)b; return 1; }
static double b_mone(double a, double b) { (void)a, (void)b; return -1; }
static double b_second(double a, double b) { (void)a; return b; }
static double b_first(double a, double b) { (void)b; return a; }
static double b_div_a(double a, double b) { (void)a; return 1 / b; }
static double b_div_b(double a, double b) { return -a / (b * b); }
static double b_pow_a(double a, double b) { return b * pow(a, b - 1); }
static double b_pow_b(double a, double b) { return pow(a, b) * log(a); }
static double b_max_a(double a, double b) { return a > b ? 1 : a == b ? 0.5 : 0; }
static double b_max_b(double a, double b) { return b > a ? 1 : a == b ? 0.5 : 0; }
static double b_atan2_a(double a, double b) { return b / (a * a + b * b); }
static double b_atan2_b(double a, double b) { return -a / (a * a + b * b); }

typedef struct bop {
    const char *name;
    gf_tensor *(*f)(const gf_tensor *, const gf_tensor *);
    int dom_a, dom_b;
    double (*da)(double, double), (*db)(double, double);
    const char *node;
} bop;

static const bop BOPS[] = {
    {"add", gf_add, D_ANY, D_ANY, b_one, b_one, "AddBackward"},
    {"sub", gf_sub, D_ANY, D_ANY, b_one, b_mone, "SubBackward"},
    {"mul", gf_mul, D_ANY, D_ANY, b_second, b_first, "MulBackward"},
    {"div", gf_div, D_ANY, D_ANY, b_div_a, b_div_b, "DivBackward"},
    {"pow", gf_pow, D_POS, D_ANY, b_pow_a, b_pow_b, "PowBackward"},
    {"maximum", gf_maximum, D_ANY, D_SHIFT, b_max_a, b_max_b, "MaximumBackward"},
    {"minimum", gf_minimum, D_ANY, D_SHIFT, b_max_b, b_max_a, "MinimumBackward"},
    {"atan2", gf_atan2, D_ANY, D_SHIFT, b_atan2_a, b_atan2_b, "Atan2Backward"},
};
#define N_BOPS ((int)(sizeof BOPS / sizeof BOPS[0]))

/* Binary layouts: both [2, 3]; a transposed and b step-sliced; [3, 1] with
 * [1, 4]; [2, 3] with a 0-dim tensor (which requires grad, or not); a 0-dim
 * first operand with [2, 3]. */
enum { B_CONTIG, B_STRIDED, B_BCAST, B_SCALAR, B_SCALAR_NOGRAD, B_SCALAR_FIRST, N_BLAYOUTS };
static const char *BLAYOUT_NAMES[] = {"contiguous",     "strided",         "[3,1] x [1,4]",
                                      "[2,3] x 0-dim",  "[2,3] x const 0-dim", "0-dim x [2,3]"};

typedef struct bcase {
    const bop *op;
    int layout;
} bcase;

static void blayout_leaves(int layout, int *ra, int64_t *sa, int *rb, int64_t *sb) {
    *ra = *rb = 2;
    sa[0] = 2, sa[1] = 3, sb[0] = 2, sb[1] = 3;
    switch (layout) {
    case B_STRIDED: sa[0] = 3, sa[1] = 2, sb[1] = 6; break;
    case B_BCAST: sa[0] = 3, sa[1] = 1, sb[0] = 1, sb[1] = 4; break;
    case B_SCALAR:
    case B_SCALAR_NOGRAD: *rb = 0; break;
    case B_SCALAR_FIRST: *ra = 0; break;
    default: break;
    }
}

static gf_tensor *binary_fn(gf_tensor *const *in, int n, void *user) {
    (void)n;
    const bcase *c = user;
    gf_tensor *a = c->layout == B_STRIDED ? gf_transpose(in[0], 0, 1) : gf_tensor_retain(in[0]);
    gf_tensor *b = c->layout == B_STRIDED ? gf_slice(in[1], 1, 0, 6, 2) : gf_tensor_retain(in[1]);
    gf_tensor *y = a && b ? c->op->f(a, b) : NULL;
    gf_tensor_release(a);
    gf_tensor_release(b);
    return y;
}

/* ------------------------------------------------------------ binary tests */
static void test_binary_closed_form(void) {
    for (int k = 0; k < N_BOPS; k++) {
        const bop *op = &BOPS[k];
        /* Broadcast [3,1] x [1,4]: each gradient sums over the other's dim. */
        gf_tensor *a = leaf(GF_F64, 2, SZ(3, 1), op->dom_a, 0);
        gf_tensor *b = leaf(GF_F64, 2, SZ(1, 4), op->dom_b, 3);
        gf_tensor *y = op->f(a, b);
        CHECK_MSG(y != NULL, "%s: %s", op->name, gf_last_error());
        const char *nm = gf_tensor_grad_fn_name(y);
        CHECK_MSG(nm && !strcmp(nm, op->node), "%s: grad_fn %s", op->name, nm ? nm : "(none)");
        gf_tensor *s = gf_sum(y, NULL, 0, false);
        CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
        gf_tensor *ga = gf_tensor_grad(a), *gb = gf_tensor_grad(b);
        double got_a[3], got_b[4], want_a[3] = {0}, want_b[4] = {0};
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                double av = value(op->dom_a, i, 0), bv = value(op->dom_b, j, 3);
                want_a[i] += op->da(av, bv);
                want_b[j] += op->db(av, bv);
            }
        read(ga, got_a, 3);
        read(gb, got_b, 4);
        for (int i = 0; i < 3; i++)
            CHECK_MSG(check_close_(got_a[i], want_a[i], 1e-12, 1e-12), "%s d/da[%d]: %.17g vs %.17g",
                      op->name, i, got_a[i], want_a[i]);
        for (int j = 0; j < 4; j++)
            CHECK_MSG(check_close_(got_b[j], want_b[j], 1e-12, 1e-12), "%s d/db[%d]: %.17g vs %.17g",
                      op->name, j, got_b[j], want_b[j]);
        gf_tensor_release(ga);
        gf_tensor_release(gb);
        gf_tensor_release(s);
        gf_tensor_release(y);
        gf_tensor_release(a);
        gf_tensor_release(b);
    }
}

static void test_binary_gradcheck(void) {
    for (int k = 0; k < N_BOPS; k++) {
        for (int l = 0; l < N_BLAYOUTS; l++) {
            bcase c = {&BOPS[k], l};
            int ra, rb;
            int64_t sa[2], sb[2];
            blayout_leaves(l, &ra, sa, &rb, sb);
            gf_tensor *in[2] = {leaf(GF_F64, ra, sa, BOPS[k].dom_a, 0),
                                leaf(GF_F64, rb, sb, BOPS[k].dom_b, 3)};
            if (l == B_SCALAR_NOGRAD) {
                gf_tensor_release(in[1]);
                double v = value(BOPS[k].dom_b, 0, 7);
                in[1] = make(GF_F64, 0, NULL, &v, false);
            }
            gf_status s = gf_gradcheck(binary_fn, in, 2, &c, NULL);
            CHECK_MSG(s == GF_OK, "gradcheck %s (%s): %s", BOPS[k].name, BLAYOUT_NAMES[l],
                      gf_last_error());
            s = gf_gradgradcheck(binary_fn, in, 2, &c, NULL);
            CHECK_MSG(s == GF_OK, "gradgradcheck %s (%s): %s", BOPS[k].name, BLAYOUT_NAMES[l],
                      gf_last_error());
            gf_tensor_release(in[0]);
            gf_tensor_release(in[1]);
        }
    }
}

static void test_binary_gradcheck_f32(void) {
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.eps = 1e-3, o.atol = 1e-2, o.rtol = 1e-2;
    for (int k = 0; k < N_BOPS; k++) {
        for (int l = B_CONTIG; l <= B_BCAST; l++) {
            bcase c = {&BOPS[k], l};
            int ra, rb;
            int64_t sa[2], sb[2];
            blayout_leaves(l, &ra, sa, &rb, sb);
            gf_tensor *in[2] = {leaf(GF_F32, ra, sa, BOPS[k].dom_a, 0),
                                leaf(GF_F32, rb, sb, BOPS[k].dom_b, 3)};
            gf_status s = gf_gradcheck(binary_fn, in, 2, &c, &o);
            CHECK_MSG(s == GF_OK, "f32 gradcheck %s (%s): %s", BOPS[k].name, BLAYOUT_NAMES[l],
                      gf_last_error());
            gf_tensor_release(in[0]);
            gf_tensor_release(in[1]);
        }
    }
}

/* ------------------------------------------------------------ scalar forms */
typedef struct sop {
    const char *name;
    gf_tensor *(*f)(const gf_tensor *, double);
    double s;
    double (*d)(double x, double s);
    const char *node;
} sop;

static double s_one(double x, double s) { (void)x, (void)s; return 1; }
static double s_mone(double x, double s) { (void)x, (void)s; return -1; }
static double s_mul(double x, double s) { (void)x; return s; }
static double s_div(double x, double s) { (void)x; return 1 / s; }
static double s_max(double x, double s) { return x > s ? 1 : x == s ? 0.5 : 0; }
static double s_min(double x, double s) { return x < s ? 1 : x == s ? 0.5 : 0; }

static const sop SOPS[] = {
    {"add_scalar", gf_add_scalar, 1.5, s_one, "AddBackward"},
    {"sub_scalar", gf_sub_scalar, 0.7, s_one, "SubBackward"},
    {"rsub_scalar", gf_rsub_scalar, 2.0, s_mone, "SubBackward"},
    {"mul_scalar", gf_mul_scalar, -1.3, s_mul, "MulBackward"},
    {"div_scalar", gf_div_scalar, 0.6, s_div, "DivBackward"},
    {"maximum_scalar", gf_maximum_scalar, 0.3, s_max, "MaximumBackward"},
    {"minimum_scalar", gf_minimum_scalar, -0.4, s_min, "MinimumBackward"},
};
#define N_SOPS ((int)(sizeof SOPS / sizeof SOPS[0]))

typedef struct scase {
    const sop *op;
    int layout;
} scase;

static gf_tensor *scalar_fn(gf_tensor *const *in, int n, void *user) {
    (void)n;
    const scase *c = user;
    gf_tensor *x = apply_layout(in[0], c->layout);
    gf_tensor *y = x ? c->op->f(x, c->op->s) : NULL;
    gf_tensor_release(x);
    return y;
}

/* The scalar forms go through the binary ops with a 0-dim constant: the
 * node is the binary one and only x gets a gradient. */
static void test_scalar_forms(void) {
    for (int k = 0; k < N_SOPS; k++) {
        const sop *op = &SOPS[k];
        gf_tensor *x = leaf(GF_F64, 1, SZ(NG), D_ANY, 0);
        gf_tensor *y = op->f(x, op->s);
        CHECK_MSG(y != NULL, "%s: %s", op->name, gf_last_error());
        const char *nm = gf_tensor_grad_fn_name(y);
        CHECK_MSG(nm && !strcmp(nm, op->node), "%s: grad_fn %s", op->name, nm ? nm : "(none)");
        gf_tensor *g = grad_of_sum(y, x);
        double got[NG];
        read(g, got, NG);
        for (int i = 0; i < NG; i++)
            CHECK_MSG(check_close_(got[i], op->d(value(D_ANY, i, 0), op->s), 1e-12, 1e-12),
                      "%s at %g: %.17g", op->name, value(D_ANY, i, 0), got[i]);
        gf_tensor_release(g);
        gf_tensor_release(x);
        for (int l = 0; l < N_LAYOUTS; l++) {
            scase c = {op, l};
            int rank;
            int64_t sizes[2];
            layout_leaf(l, &rank, sizes);
            gf_tensor *xl = leaf(GF_F64, rank, sizes, D_ANY, 1);
            CHECK_MSG(gf_gradcheck(scalar_fn, &xl, 1, &c, NULL) == GF_OK, "gradcheck %s (%s): %s",
                      op->name, LAYOUT_NAMES[l], gf_last_error());
            CHECK_MSG(gf_gradgradcheck(scalar_fn, &xl, 1, &c, NULL) == GF_OK,
                      "gradgradcheck %s (%s): %s", op->name, LAYOUT_NAMES[l], gf_last_error());
            gf_tensor_release(xl);
        }
    }
}

/* ------------------------------------------------------------ where, masked_fill */
static const double COND6[6] = {1, 0, 0, 1, 1, 0};
static const double COND12[12] = {1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 1, 0};

typedef struct wcase {
    int layout; /* 0: all [2,3]; 1: a transposed, b step-sliced; 2: cond [3,4], a [3,1], b [1,4];
                   3: a [2,3], b 0-dim */
    gf_tensor *cond;
} wcase;

static gf_tensor *where_fn(gf_tensor *const *in, int n, void *user) {
    (void)n;
    const wcase *c = user;
    gf_tensor *a = c->layout == 1 ? gf_transpose(in[0], 0, 1) : gf_tensor_retain(in[0]);
    gf_tensor *b = c->layout == 1 ? gf_slice(in[1], 1, 0, 6, 2) : gf_tensor_retain(in[1]);
    /* Multiply so that the second derivative is not trivially zero. */
    gf_tensor *w = gf_where(c->cond, a, b);
    gf_tensor *y = w ? gf_mul(w, w) : NULL;
    gf_tensor_release(w);
    gf_tensor_release(a);
    gf_tensor_release(b);
    return y;
}

static void test_where(void) {
    /* Exact values: a [3,1], b [1,4], cond [3,4]; backward of sum. */
    gf_tensor *cond = make(GF_BOOL, 2, SZ(3, 4), COND12, false);
    gf_tensor *a = make(GF_F64, 2, SZ(3, 1), DV(1, 2, 3), true);
    gf_tensor *b = make(GF_F64, 2, SZ(1, 4), DV(4, 5, 6, 7), true);
    gf_tensor *y = gf_where(cond, a, b);
    const char *nm = gf_tensor_grad_fn_name(y);
    CHECK(nm && !strcmp(nm, "WhereBackward"));
    gf_tensor *s = gf_sum(y, NULL, 0, false);
    CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
    gf_tensor *ga = gf_tensor_grad(a), *gb = gf_tensor_grad(b);
    /* a: count of true per row; b: count of false per column. */
    check_vals(ga, DV(3, 1, 2), 3, 0);
    check_vals(gb, DV(2, 2, 0, 2), 4, 0);
    gf_tensor_release(ga);
    gf_tensor_release(gb);
    gf_tensor_release(s);
    gf_tensor_release(y);
    gf_tensor_release(a);
    gf_tensor_release(b);

    /* gradcheck on every layout. */
    gf_tensor *cond6 = make(GF_BOOL, 2, SZ(2, 3), COND6, false);
    for (int l = 0; l < 4; l++) {
        wcase c = {l, l == 2 ? cond : cond6};
        gf_tensor *in[2];
        if (l == 0) {
            in[0] = leaf(GF_F64, 2, SZ(2, 3), D_ANY, 0);
            in[1] = leaf(GF_F64, 2, SZ(2, 3), D_ANY, 3);
        } else if (l == 1) {
            in[0] = leaf(GF_F64, 2, SZ(3, 2), D_ANY, 0);
            in[1] = leaf(GF_F64, 2, SZ(2, 6), D_ANY, 3);
        } else if (l == 2) {
            in[0] = leaf(GF_F64, 2, SZ(3, 1), D_ANY, 0);
            in[1] = leaf(GF_F64, 2, SZ(1, 4), D_ANY, 3);
        } else {
            in[0] = leaf(GF_F64, 2, SZ(2, 3), D_ANY, 0);
            in[1] = leaf(GF_F64, 0, NULL, D_ANY, 3);
        }
        CHECK_MSG(gf_gradcheck(where_fn, in, 2, &c, NULL) == GF_OK, "where gradcheck %d: %s", l,
                  gf_last_error());
        CHECK_MSG(gf_gradgradcheck(where_fn, in, 2, &c, NULL) == GF_OK,
                  "where gradgradcheck %d: %s", l, gf_last_error());
        gf_tensor_release(in[0]);
        gf_tensor_release(in[1]);
    }

    /* Only b requires grad: a gets nothing, b gets g where cond is false. */
    gf_tensor *a2 = make(GF_F64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6), false);
    gf_tensor *b2 = make(GF_F64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6), true);
    gf_tensor *g2 = grad_of_sum(gf_where(cond6, a2, b2), b2);
    check_vals(g2, DV(0, 1, 1, 0, 0, 1), 6, 0);
    gf_tensor_release(g2);
    gf_tensor_release(a2);
    gf_tensor_release(b2);
    gf_tensor_release(cond6);
    gf_tensor_release(cond);
}

typedef struct mcase {
    int layout; /* 0: mask [2,3]; 1: x transposed; 2: mask [1,3] broadcast */
    gf_tensor *mask;
} mcase;

static gf_tensor *masked_fill_fn(gf_tensor *const *in, int n, void *user) {
    (void)n;
    const mcase *c = user;
    gf_tensor *x = c->layout == 1 ? gf_transpose(in[0], 0, 1) : gf_tensor_retain(in[0]);
    gf_tensor *m = x ? gf_masked_fill(x, c->mask, 2.5) : NULL;
    gf_tensor *y = m ? gf_mul(m, x) : NULL; /* x * masked_fill(x): non-trivial second order */
    gf_tensor_release(m);
    gf_tensor_release(x);
    return y;
}

static void test_masked_fill(void) {
    gf_tensor *mask = make(GF_BOOL, 2, SZ(2, 3), COND6, false);
    gf_tensor *mask_row = make(GF_BOOL, 2, SZ(1, 3), DV(0, 1, 0), false);
    gf_tensor *x = make(GF_F64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6), true);
    gf_tensor *y = gf_masked_fill(x, mask, -7.0);
    const char *nm = gf_tensor_grad_fn_name(y);
    CHECK(nm && !strcmp(nm, "MaskedFillBackward"));
    gf_tensor *g = grad_of_sum(y, x);
    check_vals(g, DV(0, 1, 1, 0, 0, 1), 6, 0);
    gf_tensor_release(g);
    gf_tensor_release(x);
    x = make(GF_F64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6), true);
    g = grad_of_sum(gf_masked_fill(x, mask_row, 0.0), x);
    check_vals(g, DV(1, 0, 1, 1, 0, 1), 6, 0);
    gf_tensor_release(g);
    gf_tensor_release(x);

    for (int l = 0; l < 3; l++) {
        mcase c = {l, l == 2 ? mask_row : mask};
        gf_tensor *xl = l == 1 ? leaf(GF_F64, 2, SZ(3, 2), D_ANY, 0) : leaf(GF_F64, 2, SZ(2, 3), D_ANY, 0);
        CHECK_MSG(gf_gradcheck(masked_fill_fn, &xl, 1, &c, NULL) == GF_OK,
                  "masked_fill gradcheck %d: %s", l, gf_last_error());
        CHECK_MSG(gf_gradgradcheck(masked_fill_fn, &xl, 1, &c, NULL) == GF_OK,
                  "masked_fill gradgradcheck %d: %s", l, gf_last_error());
        gf_tensor_release(xl);
    }
    gf_tensor_release(mask);
    gf_tensor_release(mask_row);
}

/* ------------------------------------------------------------ conventions */
/* d(sum f(x))/dx for x given as n values. */
static void check_unary_grad(gf_tensor *(*f)(const gf_tensor *), const double *xs, int n,
                             const double *want, const char *what) {
    gf_tensor *x = make(GF_F64, 1, (const int64_t[]){n}, xs, true);
    gf_tensor *y = f(x);
    CHECK_MSG(y != NULL, "%s: %s", what, gf_last_error());
    gf_tensor *g = grad_of_sum(y, x);
    double got[16];
    read(g, got, n);
    for (int i = 0; i < n; i++)
        CHECK_MSG(check_close_(got[i], want[i], 1e-15, 1e-15), "%s at x = %g: got %.17g, want %.17g", what,
                  xs[i], got[i], want[i]);
    gf_tensor_release(g);
    gf_tensor_release(x);
}

static gf_tensor *w_clamp_eq(const gf_tensor *x) { return gf_clamp(x, 2.0, 2.0); }
static gf_tensor *w_clamp_inv(const gf_tensor *x) { return gf_clamp(x, 1.0, -1.0); }
static gf_tensor *w_softplus_at(const gf_tensor *x) { return gf_softplus(x, 2.0, 3.0); }
static gf_tensor *w_pow_half(const gf_tensor *x) { return gf_pow_scalar(x, 0.5); }
static gf_tensor *w_pow_2(const gf_tensor *x) { return gf_pow_scalar(x, 2.0); }
static gf_tensor *w_max_s(const gf_tensor *x) { return gf_maximum_scalar(x, 1.0); }
static gf_tensor *w_min_s(const gf_tensor *x) { return gf_minimum_scalar(x, 1.0); }

static void test_conventions(void) {
    check_unary_grad(gf_relu, DV(-1, 0, 2, NAN), 4, DV(0, 0, 1, 1), "relu");
    check_unary_grad(gf_abs, DV(-2, 0, 3), 3, DV(-1, 0, 1), "abs");
    check_unary_grad(gf_sqrt, DV(0, 4), 2, DV(INFINITY, 0.25), "sqrt");
    check_unary_grad(gf_sign, DV(-2, 0, 3), 3, DV(0, 0, 0), "sign");
    check_unary_grad(gf_floor, DV(-1, 0, 1.5, 2), 4, DV(0, 0, 0, 0), "floor");
    check_unary_grad(gf_ceil, DV(-1, 0, 1.5, 2), 4, DV(0, 0, 0, 0), "ceil");
    check_unary_grad(gf_round, DV(-0.5, 0.5, 1.5, 2), 4, DV(0, 0, 0, 0), "round");
    /* clamp passes the gradient strictly inside (min, max), none on a bound
     * (PyTorch 2.x; 1.13 included the bounds). */
    check_unary_grad(w_clamp, DV(-1.5, -1, 0, 1, 1.5), 5, DV(0, 0, 1, 0, 0), "clamp");
    check_unary_grad(w_clamp_min, DV(-0.75, -0.5, 3), 3, DV(0, 0, 1), "clamp min");
    check_unary_grad(w_clamp_max, DV(-3, 0.5, 0.75), 3, DV(1, 0, 0), "clamp max");
    check_unary_grad(w_clamp_eq, DV(1, 2, 3), 3, DV(0, 0, 0), "clamp min == max");
    /* min > max: every element is max and nothing passes (as PyTorch). */
    check_unary_grad(w_clamp_inv, DV(-2, 0, 2), 3, DV(0, 0, 0), "clamp min > max");
    /* leaky_relu'(0) = slope, elu'(0) = alpha (the x <= 0 branch). */
    check_unary_grad(w_leaky, DV(-2, 0, 2), 3, DV(0.1, 0.1, 1), "leaky_relu");
    check_unary_grad(w_elu, DV(-1, 0, 2), 3, DV(1.3 * exp(-1), 1.3, 1), "elu");
    /* softplus at the threshold (beta x == threshold) is not past it. */
    check_unary_grad(w_softplus_at, DV(1.5, 1.75), 2, DV(1 / (1 + exp(-3.0)), 1), "softplus");
    check_unary_grad(w_pow_0, DV(0, 2), 2, DV(0, 0), "pow_scalar 0");
    check_unary_grad(w_pow_2, DV(0, -3), 2, DV(0, -6), "pow_scalar 2");
    check_unary_grad(w_pow_half, DV(0, 4), 2, DV(INFINITY, 0.25), "pow_scalar 0.5");
    check_unary_grad(gf_log, DV(0), 1, DV(INFINITY), "log");
    /* asin, acos: PyTorch's g * rsqrt(1 - x^2), so inf at +-1 and NaN
     * outside [-1, 1]; atan's 1 / (1 + x^2) is 0 at +-inf. */
    check_unary_grad(gf_asin, DV(-1, 0, 0.6, 1, 2, NAN), 6,
                     DV(INFINITY, 1, 1.25, INFINITY, NAN, NAN), "asin");
    check_unary_grad(gf_acos, DV(-1, 0, 0.6, 1, -2), 5,
                     DV(-INFINITY, -1, -1.25, -INFINITY, NAN), "acos");
    check_unary_grad(gf_atan, DV(0, 1, -3, INFINITY, -INFINITY), 5, DV(1, 0.5, 0.1, 0, 0),
                     "atan");
    /* hardswish: PyTorch 2.x's pieces, x <= -3 | -3 < x < 3 | x >= 3, so 0
     * at -3 and 1 at 3; NaN passes g. */
    check_unary_grad(gf_hardswish, DV(-4, -3, 0, 1.5, 3, 4, NAN), 7,
                     DV(0, 0, 0.5, 1, 1, 1, 1), "hardswish");
    /* maximum/minimum against a scalar: ties split (clamp with the same
     * bound gives x nothing there). */
    check_unary_grad(w_max_s, DV(0, 1, 2), 3, DV(0, 0.5, 1), "maximum_scalar");
    check_unary_grad(w_min_s, DV(0, 1, 2), 3, DV(1, 0.5, 0), "minimum_scalar");

    /* maximum / minimum ties: half to each side. */
    for (int is_max = 0; is_max < 2; is_max++) {
        gf_tensor *a = make(GF_F64, 1, SZ(4), DV(1, 2, 3, -1), true);
        gf_tensor *b = make(GF_F64, 1, SZ(4), DV(1, 0, 5, -1), true);
        gf_tensor *y = is_max ? gf_maximum(a, b) : gf_minimum(a, b);
        gf_tensor *s = gf_sum(y, NULL, 0, false);
        CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
        gf_tensor *ga = gf_tensor_grad(a), *gb = gf_tensor_grad(b);
        if (is_max) {
            check_vals(ga, DV(0.5, 1, 0, 0.5), 4, 0);
            check_vals(gb, DV(0.5, 0, 1, 0.5), 4, 0);
        } else {
            check_vals(ga, DV(0.5, 0, 1, 0.5), 4, 0);
            check_vals(gb, DV(0.5, 1, 0, 0.5), 4, 0);
        }
        gf_tensor_release(ga);
        gf_tensor_release(gb);
        gf_tensor_release(s);
        gf_tensor_release(y);
        gf_tensor_release(a);
        gf_tensor_release(b);
    }

    /* pow(a, b) at a == 0: d/db is 0 where b >= 0 (PyTorch), -inf for b < 0
     * (inf * log 0); d/da is 0 where b == 0. */
    gf_tensor *a = make(GF_F64, 1, SZ(5), DV(0, 0, 0, 2, 0), true);
    gf_tensor *b = make(GF_F64, 1, SZ(5), DV(2, 0.5, 0, 3, -1), true);
    gf_tensor *y = gf_pow(a, b);
    gf_tensor *s = gf_sum(y, NULL, 0, false);
    CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
    gf_tensor *ga = gf_tensor_grad(a), *gb = gf_tensor_grad(b);
    double got_a[5], got_b[5];
    read(ga, got_a, 5);
    read(gb, got_b, 5);
    const double want_a[5] = {0, INFINITY, 0, 12, -INFINITY};
    const double want_b[5] = {0, 0, 0, 8 * log(2.0), -INFINITY};
    for (int i = 0; i < 5; i++) {
        CHECK_MSG(check_close_(got_a[i], want_a[i], 1e-15, 1e-15), "pow d/da[%d] = %.17g", i,
                  got_a[i]);
        CHECK_MSG(check_close_(got_b[i], want_b[i], 1e-15, 1e-15), "pow d/db[%d] = %.17g", i,
                  got_b[i]);
    }
    gf_tensor_release(ga);
    gf_tensor_release(gb);
    gf_tensor_release(s);
    gf_tensor_release(y);
    gf_tensor_release(a);
    gf_tensor_release(b);

    /* atan2(a, b): PyTorch's g b / (a^2 + b^2) and -g a / (a^2 + b^2), 0 at
     * the origin (PyTorch 2.x), finite on the axes. */
    a = make(GF_F64, 1, SZ(4), DV(0, 3, 0, 1), true);
    b = make(GF_F64, 1, SZ(4), DV(0, 4, -2, 0), true);
    y = gf_atan2(a, b);
    s = gf_sum(y, NULL, 0, false);
    CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
    ga = gf_tensor_grad(a), gb = gf_tensor_grad(b);
    check_vals(ga, DV(0, 0.16, -0.5, 0), 4, 1e-15);
    check_vals(gb, DV(0, -0.12, 0, -1), 4, 1e-15);
    gf_tensor_release(ga);
    gf_tensor_release(gb);
    gf_tensor_release(s);
    gf_tensor_release(y);
    gf_tensor_release(a);
    gf_tensor_release(b);
}

/* ------------------------------------------------------------ what is saved */
/* h = 1 * x is a non-leaf; f(h), then h is modified in place. Ops that save
 * only their output must still backward (to f'(h before the update)); ops
 * that save their input must report the in-place modification. */
static void check_saved(gf_tensor *(*f)(const gf_tensor *), double xv, bool saves_input,
                        double want, const char *what) {
    gf_tensor *x = make(GF_F64, 1, SZ(1), &xv, true);
    gf_tensor *h = gf_mul_scalar(x, 1.0);
    gf_tensor *y = f(h);
    CHECK(y != NULL);
    CHECK(gf_add_scalar_(h, 0.5) == GF_OK);
    gf_tensor *s = gf_sum(y, NULL, 0, false);
    gf_status st = gf_backward(s, NULL, NULL);
    if (saves_input) {
        CHECK_MSG(st == GF_ERR_AUTOGRAD, "%s: backward after in-place should fail", what);
        CHECK_CONTAINS(gf_last_error(), "modified by an in-place operation");
    } else {
        CHECK_MSG(st == GF_OK, "%s: %s", what, gf_last_error());
        gf_tensor *g = gf_tensor_grad(x);
        double got = NAN;
        read(g, &got, 1);
        CHECK_MSG(check_close_(got, want, 1e-14, 1e-14), "%s: %.17g vs %.17g", what, got, want);
        gf_tensor_release(g);
    }
    gf_clear_error();
    gf_tensor_release(s);
    gf_tensor_release(y);
    gf_tensor_release(h);
    gf_tensor_release(x);
}

static gf_tensor *w_mul_const(const gf_tensor *x) { return gf_mul_scalar(x, 3.0); }
static gf_tensor *w_div_const(const gf_tensor *x) { return gf_div_scalar(x, 4.0); }

static void test_saved_tensors(void) {
    const double x = 0.3;
    check_saved(gf_exp, x, false, exp(x), "exp");
    check_saved(gf_expm1, x, false, exp(x), "expm1");
    check_saved(gf_sqrt, x, false, 0.5 / sqrt(x), "sqrt");
    check_saved(gf_rsqrt, x, false, -0.5 * pow(x, -1.5), "rsqrt");
    check_saved(gf_reciprocal, x, false, -1 / (x * x), "reciprocal");
    check_saved(gf_tanh, x, false, 1 - tanh(x) * tanh(x), "tanh");
    check_saved(gf_sigmoid, x, false, sigm(x) * (1 - sigm(x)), "sigmoid");
    check_saved(gf_relu, x, false, 1, "relu");
    check_saved(gf_neg, x, false, -1, "neg");
    check_saved(gf_floor, x, false, 0, "floor");
    check_saved(w_mul_const, x, false, 3, "mul by a constant");
    check_saved(w_div_const, x, false, 0.25, "div by a constant");
    check_saved(gf_log, x, true, 0, "log");
    check_saved(gf_sin, x, true, 0, "sin");
    check_saved(w_clamp, x, true, 0, "clamp");
}

/* In-place forms that save their output backward exactly on a non-leaf. */
static void test_inplace_forms(void) {
    gf_status (*fns[4])(gf_tensor *) = {gf_relu_, gf_sigmoid_, gf_tanh_, gf_exp_};
    const double xs[3] = {-0.7, 0.4, 1.1};
    for (int k = 0; k < 4; k++) {
        gf_tensor *x = make(GF_F64, 1, SZ(3), xs, true);
        gf_tensor *h = gf_mul_scalar(x, 2.0);
        CHECK(fns[k](h) == GF_OK);
        gf_tensor *g = grad_of_sum(gf_tensor_retain(h), x);
        double got[3];
        read(g, got, 3);
        for (int i = 0; i < 3; i++) {
            double u = 2 * xs[i];
            double d = k == 0 ? (u > 0) : k == 1 ? sigm(u) * (1 - sigm(u))
                     : k == 2 ? 1 - tanh(u) * tanh(u) : exp(u);
            CHECK_MSG(check_close_(got[i], 2 * d, 1e-14, 1e-14), "in-place %d at %g: %.17g", k,
                      xs[i], got[i]);
        }
        gf_tensor_release(g);
        gf_tensor_release(h);
        gf_tensor_release(x);
    }
}

/* ------------------------------------------------------------ relu's gradient kernel */
/* relu's gradient two ways on the default device: without create_graph the
 * device's RELU_BACKWARD kernel (where it has one: every bundled plugin), with
 * it the composed where(y <= 0, 0, g), which stays differentiable. Both must
 * give PyTorch's threshold_backward bit for bit: g where y > 0 or y is NaN
 * (also a NaN or -0 g), +0 where y <= 0 (also against a NaN or inf g); a
 * dense g (a weighted sum) and an expanded one (a plain sum). */
static void relu_grads(gf_dtype dt, bool expanded, bool create_graph, double *out, int n,
                       bool *kernel_ran) {
    static const double xs[10] = {-2, -0.0, 0, 0.5, NAN, -INFINITY, INFINITY, 3, -1e-30, 1e-30};
    static const double rs[10] = {NAN, INFINITY, -1.5, -0.0, 2, NAN, -3, 0.25, -INFINITY, 7};
    gf_tensor *x = make(dt, 1, SZ(10), xs, true), *r = make(dt, 1, SZ(10), rs, false);
    CHECK(gf_profiler_start(NULL) == GF_OK);
    gf_tensor *y = gf_relu(x), *yr = expanded ? NULL : gf_mul(y, r);
    gf_tensor *loss = gf_sum(expanded ? y : yr, NULL, 0, false);
    gf_tensor *g = NULL;
    gf_grad_opts o = {.create_graph = create_graph};
    CHECK_MSG(loss && gf_grad(&loss, 1, NULL, &x, 1, &g, &o) == GF_OK, "%s", gf_last_error());
    gf_profiler_stop();
    char sum[8192] = "";
    gf_profiler_summary(sum, sizeof sum);
    *kernel_ran = strstr(sum, "relu_backward") != NULL;
    CHECK(g == NULL || gf_tensor_dtype(g) == dt);
    read(g, out, n);
    gf_tensor_release(g);
    gf_tensor_release(loss);
    gf_tensor_release(yr);
    gf_tensor_release(y);
    gf_tensor_release(r);
    gf_tensor_release(x);
}

static void test_relu_backward_kernel(void) {
    /* y = relu(x) = {0, -0, 0, 0.5, NaN, 0, inf, 3, 0, 1e-30}: g passes at
     * 0.5, NaN, inf, 3 and 1e-30 (a bf16/f16 1e-30 rounds to 0 or a
     * subnormal: its y decides). */
    const gf_dtype dts[4] = {GF_F64, GF_F32, GF_BF16, GF_F16};
    for (int k = 0; k < 4; k++) {
        gf_tensor *probe = gf_zeros(SZ(1), 1, dts[k], NULL);
        if (!probe) { /* the default device stores no such dtype */
            CHECK_MSG(dts[k] == GF_BF16 || dts[k] == GF_F16, "%s", gf_last_error());
            continue;
        }
        gf_tensor_release(probe);
        for (int e = 0; e < 2; e++) {
            double kern[10], comp[10], want[10];
            bool ran_k = false, ran_c = true;
            relu_grads(dts[k], e, false, kern, 10, &ran_k);
            relu_grads(dts[k], e, true, comp, 10, &ran_c);
            CHECK_MSG(!ran_c, "relu_backward ran with create_graph (dtype %d)", (int)dts[k]);
            /* y and g as the device holds them, for the expected values */
            static const double xs[10] = {-2, -0.0, 0, 0.5, NAN, -INFINITY, INFINITY, 3, -1e-30, 1e-30};
            static const double rs[10] = {NAN, INFINITY, -1.5, -0.0, 2, NAN, -3, 0.25, -INFINITY, 7};
            double xd[10], rd[10];
            gf_tensor *xt = make(dts[k], 1, SZ(10), xs, false), *rt = make(dts[k], 1, SZ(10), rs, false);
            read(xt, xd, 10);
            read(rt, rd, 10);
            gf_tensor_release(xt);
            gf_tensor_release(rt);
            for (int i = 0; i < 10; i++) {
                double y = xd[i] > 0 || isnan(xd[i]) ? xd[i] : 0, g = e ? 1 : rd[i];
                want[i] = y <= 0 ? 0.0 : g;
                bool same_k = isnan(want[i]) ? isnan(kern[i]) : !memcmp(&kern[i], &want[i], 8);
                bool same_c = isnan(want[i]) ? isnan(comp[i]) : !memcmp(&comp[i], &want[i], 8);
                CHECK_MSG(same_k, "relu grad, kernel, dtype %d, %s g, element %d: got %g, want %g",
                          (int)dts[k], e ? "expanded" : "dense", i, kern[i], want[i]);
                CHECK_MSG(same_c, "relu grad, composed, dtype %d, %s g, element %d: got %g, want %g",
                          (int)dts[k], e ? "expanded" : "dense", i, comp[i], want[i]);
            }
            /* Every bundled plugin has the kernel; a GRAFT_DEVICE without
             * it composes, which the values above pin just the same. */
            if (!ran_k) printf("note: dtype %d: the default device composed relu's gradient\n",
                               (int)dts[k]);
        }
    }
}

/* GELU's (erf form) gradient through GELU_BACKWARD (create_graph false:
 * the kernel where the device has it) and composed (create_graph true):
 * both against a * (Phi(x) + x phi(x)) in double, across the curve, its
 * tails and the specials. */
enum { GELU_N = 15 };
static void gelu_grads(gf_dtype dt, bool create_graph, double *out, bool *kernel_ran) {
    static const double xs[GELU_N] = {-9,  -6,  -3,  -1,   -0.5,     -0.0, 0,  1e-3,
                                      0.5, 1,   2.5, 4,    INFINITY, NAN,  -INFINITY};
    static const double rs[GELU_N] = {1, -2, 0.5, 3, -1, 2, 0.25, -4, 1.5, -0.5, 2, 7, 1, 1, 1};
    gf_tensor *x = make(dt, 1, SZ(GELU_N), xs, true), *r = make(dt, 1, SZ(GELU_N), rs, false);
    CHECK(gf_profiler_start(NULL) == GF_OK);
    gf_tensor *y = gf_gelu(x, false), *yr = gf_mul(y, r);
    gf_tensor *loss = gf_sum(yr, NULL, 0, false), *g = NULL;
    gf_grad_opts o = {.create_graph = create_graph};
    CHECK_MSG(loss && gf_grad(&loss, 1, NULL, &x, 1, &g, &o) == GF_OK, "%s", gf_last_error());
    gf_profiler_stop();
    char sum[8192] = "";
    gf_profiler_summary(sum, sizeof sum);
    *kernel_ran = strstr(sum, "gelu_backward") != NULL;
    read(g, out, GELU_N);
    gf_tensor *items[] = {g, loss, yr, y, r, x};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
}

static void test_gelu_backward_kernel(void) {
    const gf_dtype dts[2] = {GF_F64, GF_F32};
    const char *plugin = gf_device_plugin(gf_device_default());
    bool cpu = plugin && (!strcmp(plugin, "reference") || !strcmp(plugin, "cpu_onednn"));
    static const double xs[GELU_N] = {-9,  -6,  -3,  -1,   -0.5,     -0.0, 0,  1e-3,
                                      0.5, 1,   2.5, 4,    INFINITY, NAN,  -INFINITY};
    static const double rs[GELU_N] = {1, -2, 0.5, 3, -1, 2, 0.25, -4, 1.5, -0.5, 2, 7, 1, 1, 1};
    for (int k = 0; k < 2; k++) {
        double kern[GELU_N], comp[GELU_N];
        bool ran_k = false, ran_c = true;
        gelu_grads(dts[k], false, kern, &ran_k);
        gelu_grads(dts[k], true, comp, &ran_c);
        CHECK_MSG(!ran_c, "gelu_backward ran with create_graph (dtype %d)", (int)dts[k]);
        CHECK_MSG(ran_k || !cpu, "the %s plugin composed GELU's gradient", plugin);
        double tol = dts[k] == GF_F64 ? 1e-13 : 2e-6;
        for (int i = 0; i < GELU_N; i++) {
            double x = xs[i];
            double want = rs[i] * (0.5 * (1 + erf(x * 0.70710678118654752440)) +
                                   x * (exp(-0.5 * x * x) * 0.39894228040143267794));
            const double got[2] = {kern[i], comp[i]};
            for (int j = 0; j < 2; j++) {
                bool ok = isnan(want) ? isnan(got[j])
                                      : fabs(got[j] - want) <= tol * (1 + fabs(want));
                CHECK_MSG(ok, "gelu grad, %s, dtype %d, x %g: got %.9g, want %.9g",
                          j ? "composed" : "kernel", (int)dts[k], x, got[j], want);
            }
        }
    }
}

/* ------------------------------------------------------------ dtypes, higher order */
static void test_dtypes(void) {
    /* f32 * f64: the f32 input's gradient is f32. */
    gf_tensor *a = make(GF_F32, 1, SZ(3), DV(1, 2, 3), true);
    gf_tensor *b = make(GF_F64, 1, SZ(3), DV(0.5, -1, 4), true);
    gf_tensor *y = gf_mul(a, b);
    CHECK(gf_tensor_dtype(y) == GF_F64);
    gf_tensor *s = gf_sum(y, NULL, 0, false);
    CHECK_MSG(s && gf_backward(s, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor *ga = gf_tensor_grad(a), *gb = gf_tensor_grad(b);
    CHECK(ga && gf_tensor_dtype(ga) == GF_F32);
    CHECK(gb && gf_tensor_dtype(gb) == GF_F64);
    check_vals(ga, DV(0.5, -1, 4), 3, 0);
    check_vals(gb, DV(1, 2, 3), 3, 0);
    gf_tensor_release(ga);
    gf_tensor_release(gb);
    gf_tensor_release(s);
    gf_tensor_release(y);

    /* where with f32 and f64 branches. */
    gf_tensor *cond = make(GF_BOOL, 1, SZ(3), DV(1, 0, 1), false);
    gf_tensor *a2 = make(GF_F32, 1, SZ(3), DV(1, 2, 3), true);
    gf_tensor *g2 = grad_of_sum(gf_where(cond, a2, b), a2);
    CHECK(g2 && gf_tensor_dtype(g2) == GF_F32);
    check_vals(g2, DV(1, 0, 1), 3, 0);
    gf_tensor_release(g2);
    gf_tensor_release(cond);
    gf_tensor_release(a2);

    /* An integer operand gets no gradient and does not block the other. */
    gf_tensor *i = make(GF_I64, 1, SZ(3), DV(2, -3, 5), false);
    gf_tensor *g3 = grad_of_sum(gf_mul(a, i), a);
    CHECK(g3 && gf_tensor_dtype(g3) == GF_F32);
    double want[3] = {0.5 + 2, -1 - 3, 4 + 5}; /* accumulated onto the first backward's grad */
    check_vals(g3, want, 3, 0);
    gf_tensor_release(g3);
    gf_tensor *yi = gf_neg(i); /* integers never require grad */
    CHECK(yi && !gf_tensor_requires_grad(yi) && gf_tensor_grad_fn_name(yi) == NULL);
    gf_tensor_release(yi);
    gf_tensor_release(i);
    gf_tensor_release(a);
    gf_tensor_release(b);
}

/* d^2/dx^2 and d^3/dx^3 through create_graph for ops that save their output
 * (the saved output carries the node's own history). */
static void test_higher_order(void) {
    const double xv = 0.4;
    gf_tensor *(*fns[3])(const gf_tensor *) = {gf_tanh, gf_sigmoid, gf_exp};
    double t = tanh(xv), s = sigm(xv), e = exp(xv);
    const double want2[3] = {-2 * t * (1 - t * t), s * (1 - s) * (1 - 2 * s), e};
    const double want3[3] = {(1 - t * t) * (6 * t * t - 2),
                             s * (1 - s) * (1 - 6 * s + 6 * s * s), e};
    gf_grad_opts o = {.retain_graph = -1, .create_graph = true};
    for (int k = 0; k < 3; k++) {
        gf_tensor *x = make(GF_F64, 0, NULL, &xv, true);
        gf_tensor *y = fns[k](x);
        gf_tensor *d1 = NULL, *d2 = NULL, *d3 = NULL;
        CHECK(gf_grad(&y, 1, NULL, &x, 1, &d1, &o) == GF_OK);
        CHECK(d1 && gf_grad(&d1, 1, NULL, &x, 1, &d2, &o) == GF_OK);
        CHECK(d2 && gf_grad(&d2, 1, NULL, &x, 1, &d3, &o) == GF_OK);
        double v2 = NAN, v3 = NAN;
        if (d2) gf_tensor_item(d2, &v2);
        if (d3) gf_tensor_item(d3, &v3);
        CHECK_CLOSE(v2, want2[k], 1e-13);
        CHECK_CLOSE(v3, want3[k], 1e-13);
        gf_tensor_release(d1);
        gf_tensor_release(d2);
        gf_tensor_release(d3);
        gf_tensor_release(y);
        gf_tensor_release(x);
    }
}

int main(void) {
    if (gf_init() != GF_OK) {
        fprintf(stderr, "gf_init: %s\n", gf_last_error());
        return 1;
    }
    RUN(test_unary_closed_form);
    RUN(test_unary_gradcheck);
    RUN(test_unary_gradcheck_f32);
    RUN(test_binary_closed_form);
    RUN(test_binary_gradcheck);
    RUN(test_binary_gradcheck_f32);
    RUN(test_scalar_forms);
    RUN(test_where);
    RUN(test_masked_fill);
    RUN(test_conventions);
    RUN(test_saved_tensors);
    RUN(test_inplace_forms);
    RUN(test_relu_backward_kernel);
    RUN(test_gelu_backward_kernel);
    RUN(test_dtypes);
    RUN(test_higher_order);
    int r = CHECK_REPORT();
    gf_shutdown();
    return r;
}
