/* SPDX-License-Identifier: BSD-3-Clause */
/* test_grad_elementwise_extra.c — gradients of the ops of graft/ops_extra.h:
 * gf_gradcheck and gf_gradgradcheck in f64 (central differences) for every
 * differentiable op, on contiguous and transposed inputs and with
 * broadcasting; and hand values at the special points where PyTorch fixes a
 * convention (hardtanh / relu6 / hardsigmoid at their bounds, clamp with
 * tensor bounds at ties and with min > max, nan_to_num at the replaced
 * elements, the divisor's gradient of remainder and fmod, the kinks of the
 * composed branches at 0). */
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

static gf_tensor *f64s(const double *v, const int64_t *sizes, int rank, bool grad) {
    gf_tensor *t = gf_from_data(v, sizes, rank, GF_F64, NULL);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    if (t && grad) CHECK(gf_tensor_set_requires_grad(t, true) == GF_OK);
    return t;
}

static void release_all(gf_tensor **t, int n) {
    for (int i = 0; i < n; i++) gf_tensor_release(t[i]);
}

/* ------------------------------------------------------------ gradcheck */
typedef enum {
    HARDTANH, RELU6, HARDSIGMOID, MISH, LOGSIGMOID, SOFTSIGN, SELU, CELU, CELU_NEG, FRAC,
    TRUNC, LOG2, LOG10, EXP2, TAN, SINH, COSH, ASINH, ACOSH, ATANH, NAN_TO_NUM,
    N_UNARY_OPS,
    REMAINDER = N_UNARY_OPS, FMOD, REMAINDER_SCALAR, LERP, LERP_SCALAR, ADDCMUL, ADDCDIV,
    CLAMP_T, CLAMP_MIN, CLAMP_MAX
} which;

static const char *const NAMES[] = {
    "hardtanh", "relu6", "hardsigmoid", "mish", "logsigmoid", "softsign", "selu", "celu",
    "celu alpha -0.5", "frac", "trunc", "log2", "log10", "exp2", "tan", "sinh", "cosh",
    "asinh", "acosh", "atanh", "nan_to_num", "remainder", "fmod", "remainder_scalar", "lerp",
    "lerp_scalar", "addcmul", "addcdiv", "clamp_tensor", "clamp_tensor min", "clamp_tensor max"};

typedef struct gcase {
    which op;
    bool transposed; /* rank-2 inputs are stored transposed */
} gcase;

static gf_tensor *unary(which op, const gf_tensor *x) {
    switch (op) {
    case HARDTANH: return gf_hardtanh(x, -0.8, 1.3);
    case RELU6: return gf_relu6(x);
    case HARDSIGMOID: return gf_hardsigmoid(x);
    case MISH: return gf_mish(x);
    case LOGSIGMOID: return gf_logsigmoid(x);
    case SOFTSIGN: return gf_softsign(x);
    case SELU: return gf_selu(x);
    case CELU: return gf_celu(x, 0.7);
    case CELU_NEG: return gf_celu(x, -0.5);
    case FRAC: return gf_frac(x);
    case TRUNC: return gf_trunc(x);
    case LOG2: return gf_log2(x);
    case LOG10: return gf_log10(x);
    case EXP2: return gf_exp2(x);
    case TAN: return gf_tan(x);
    case SINH: return gf_sinh(x);
    case COSH: return gf_cosh(x);
    case ASINH: return gf_asinh(x);
    case ACOSH: return gf_acosh(x);
    case ATANH: return gf_atanh(x);
    case NAN_TO_NUM: return gf_nan_to_num(x, 0.0, NAN, NAN);
    default: return NULL;
    }
}

static gf_tensor *run(gf_tensor *const *in, int n, void *user) {
    const gcase *c = user;
    gf_tensor *v[3] = {NULL, NULL, NULL};
    for (int i = 0; i < n; i++)
        v[i] = c->transposed && gf_tensor_rank(in[i]) == 2 ? gf_transpose(in[i], 0, 1)
                                                           : gf_tensor_retain(in[i]);
    gf_tensor *y = NULL;
    switch (c->op) {
    case REMAINDER: y = gf_remainder(v[0], v[1]); break;
    case FMOD: y = gf_fmod(v[0], v[1]); break;
    case REMAINDER_SCALAR: y = gf_remainder_scalar(v[0], -1.3); break;
    case LERP: y = gf_lerp(v[0], v[1], v[2]); break;
    case LERP_SCALAR: y = gf_lerp_scalar(v[0], v[1], 0.7); break;
    case ADDCMUL: y = gf_addcmul(v[0], v[1], v[2], -0.6); break;
    case ADDCDIV: y = gf_addcdiv(v[0], v[1], v[2], 1.7); break;
    case CLAMP_T: y = gf_clamp_tensor(v[0], v[1], v[2]); break;
    case CLAMP_MIN: y = gf_clamp_tensor(v[0], v[1], NULL); break;
    case CLAMP_MAX: y = gf_clamp_tensor(v[0], NULL, v[1]); break;
    default: y = unary(c->op, v[0]); break;
    }
    for (int i = 0; i < n; i++) gf_tensor_release(v[i]);
    return y;
}

static void grad_case(const char *name, gcase *c, gf_tensor **in, int n) {
    gf_status s = gf_gradcheck(run, in, n, c, NULL);
    CHECK_MSG(s == GF_OK, "%s gradcheck: %s", name, gf_last_error());
    s = gf_gradgradcheck(run, in, n, c, NULL);
    CHECK_MSG(s == GF_OK, "%s gradgradcheck: %s", name, gf_last_error());
}

/* [2, 3] leaves, or [3, 2] ones read transposed. */
static gf_tensor *leaf6(const double *v, bool transposed) {
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    if (!transposed) return f64s(v, s23, 2, true);
    double t[6];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) t[c * 2 + r] = v[r * 3 + c];
    return f64s(t, s32, 2, true);
}

/* Inputs of each unary op, away from its kinks (finite differences of 1e-6
 * must not cross one) and inside its domain. */
static const double *unary_inputs(which op) {
    static const double general[6] = {-2.1, -0.45, 0.3, 0.9, 1.7, 2.6};
    static const double wide[6] = {-4.5, -3.7, -0.2, 0.35, 4.2, 2.5};
    static const double pos[6] = {0.07, 0.6, 1.0, 2.9, 17.0, 1e3};
    static const double acosh_in[6] = {1.01, 1.5, 2.0, 7.3, 40.0, 3e8};
    static const double unit[6] = {-0.97, -0.5, -0.01, 0.2, 0.66, 0.9};
    static const double hsig[6] = {-3.5, -2.9, -0.4, 0.8, 2.95, 3.3};
    static const double r6[6] = {-1.0, 0.2, 3.0, 5.9, 6.4, 2.2};
    static const double trunc_in[6] = {-2.7, -0.45, 0.3, 1.2, 3.5, 7.25};
    static const double tan_in[6] = {-1.4, -0.7, 0.1, 0.5, 1.2, 4.0};
    switch (op) {
    case HARDSIGMOID: return hsig;
    case RELU6: return r6;
    case MISH:
    case LOGSIGMOID:
    case SINH:
    case COSH:
    case ASINH:
    case EXP2:
    case SELU:
    case CELU:
    case CELU_NEG: return wide;
    case LOG2:
    case LOG10: return pos;
    case ACOSH: return acosh_in;
    case ATANH: return unit;
    case FRAC:
    case TRUNC: return trunc_in;
    case TAN: return tan_in;
    default: return general;
    }
}

static void test_unary_gradcheck(void) {
    for (int op = 0; op < N_UNARY_OPS; op++) {
        for (int tr = 0; tr < 2; tr++) {
            gcase c = {.op = (which)op, .transposed = tr == 1};
            gf_tensor *in[1] = {leaf6(unary_inputs((which)op), c.transposed)};
            char name[96];
            snprintf(name, sizeof name, "%s%s", NAMES[op], tr ? " transposed" : "");
            grad_case(name, &c, in, 1);
            release_all(in, 1);
        }
        /* far values, one at a time (each branch beyond a threshold) */
        static const double far[] = {21.5, -25.0, 3e8, -3e8, 40.5, -40.5};
        for (int k = 0; k < 6; k++) {
            bool sinh_like = op == SINH || op == COSH || op == MISH || op == LOGSIGMOID ||
                             op == EXP2 || op == CELU_NEG || op == SELU || op == CELU;
            if (!(sinh_like && (k < 2 || k >= 4)) && !(op == ASINH && k < 4) &&
                !(op == ACOSH && (k == 0 || k == 2)))
                continue;
            gcase c = {.op = (which)op};
            gf_tensor *in[1] = {f64s(&far[k], NULL, 0, true)};
            char name[96];
            snprintf(name, sizeof name, "%s at %g", NAMES[op], far[k]);
            grad_case(name, &c, in, 1);
            release_all(in, 1);
        }
        /* 0-dim */
        gcase c = {.op = (which)op};
        gf_tensor *in[1] = {f64s(&unary_inputs((which)op)[3], NULL, 0, true)};
        char name[96];
        snprintf(name, sizeof name, "%s 0-dim", NAMES[op]);
        grad_case(name, &c, in, 1);
        release_all(in, 1);
    }
}

static void test_nary_gradcheck(void) {
    static const double A6[6] = {5.3, -7.9, 2.25, -0.4, 11.6, -3.35};
    static const double B3[3] = {2.1, -1.7, 0.9};
    static const double S6[6] = {1.2, -0.7, 3.1, 0.05, -2.4, 0.8};
    static const double E6[6] = {-0.3, 2.2, 0.4, 1.9, -1.1, 3.6};
    static const double W6[6] = {0.2, 0.8, 0.45, -0.3, 1.4, 0.55}; /* both lerp branches */
    static const double D3[3] = {1.3, -0.8, 2.4};
    static const double X6[6] = {-1.5, 0.3, 2.8, 0.9, -0.2, 1.6};
    static const double LO3[3] = {-1.0, 0.5, 3.0}; /* column 2: min > max */
    static const double HI3[3] = {1.0, 2.0, 2.0};
    int64_t s3 = 3;
    for (int tr = 0; tr < 2; tr++) {
        bool t = tr == 1;
        char name[96];
#define NAME(s) (snprintf(name, sizeof name, "%s%s", s, t ? " transposed" : ""), name)
        gcase c = {.transposed = t};
        {
            gf_tensor *in[2] = {leaf6(A6, t), f64s(B3, &s3, 1, true)};
            c.op = REMAINDER;
            grad_case(NAME("remainder, b broadcast"), &c, in, 2);
            c.op = FMOD;
            grad_case(NAME("fmod, b broadcast"), &c, in, 2);
            c.op = REMAINDER_SCALAR;
            grad_case(NAME("remainder_scalar"), &c, in, 1);
            release_all(in, 2);
        }
        {
            gf_tensor *in[3] = {leaf6(S6, t), leaf6(E6, t), leaf6(W6, t)};
            c.op = LERP;
            grad_case(NAME("lerp"), &c, in, 3);
            c.op = LERP_SCALAR;
            grad_case(NAME("lerp_scalar"), &c, in, 2);
            release_all(in, 3);
            gf_tensor *in2[3] = {leaf6(S6, t), leaf6(E6, t), f64s(D3, &s3, 1, true)};
            c.op = ADDCMUL;
            grad_case(NAME("addcmul"), &c, in2, 3);
            c.op = ADDCDIV;
            grad_case(NAME("addcdiv"), &c, in2, 3);
            release_all(in2, 3);
        }
        {
            gf_tensor *in[3] = {leaf6(X6, t), f64s(LO3, &s3, 1, true), f64s(HI3, &s3, 1, true)};
            c.op = CLAMP_T;
            grad_case(NAME("clamp_tensor"), &c, in, 3);
            c.op = CLAMP_MIN;
            grad_case(NAME("clamp_tensor min"), &c, in, 2);
            gf_tensor *in2[2] = {in[0], in[2]};
            c.op = CLAMP_MAX;
            grad_case(NAME("clamp_tensor max"), &c, in2, 2);
            release_all(in, 3);
        }
#undef NAME
    }
}

/* ------------------------------------------------------------ special points */
/* d/dx of op at each of xs (n values), checked against want. */
static void check_grad_at(const char *what, which op, const double *xs, const double *want,
                          int n) {
    int64_t sz = n;
    gf_tensor *x = f64s(xs, &sz, 1, true);
    gcase c = {.op = op};
    gf_tensor *in[1] = {x};
    gf_tensor *y = run(in, 1, &c);
    gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
    CHECK_MSG(s && gf_backward(s, NULL, NULL) == GF_OK, "%s: %s", what, gf_last_error());
    gf_tensor *g = gf_tensor_grad(x);
    double got[16] = {0};
    CHECK(g && gf_tensor_to_host(g, got, sizeof(double) * (size_t)n) == GF_OK);
    for (int i = 0; i < n; i++)
        CHECK_MSG(check_close_(got[i], want[i], 1e-12, 1e-12), "%s at %g: %.17g, expected %.17g",
                  what, xs[i], got[i], want[i]);
    gf_tensor *ts[] = {x, y, s, g};
    release_all(ts, 4);
}

static void test_special_points(void) {
    const double SA = 1.6732632423543772848170429916717, SS = 1.0507009873554804934193349852946;
    /* PyTorch's hardtanh_backward: 0 at the bounds and outside, g at NaN
     * (it zeroes x <= min and x >= max); hardsigmoid_backward passes only
     * -3 < x < 3, so 0 at NaN */
    check_grad_at("hardtanh", HARDTANH, (double[]){-0.8, 1.3, 0.0, -2.0, 5.0, NAN},
                  (double[]){0, 0, 1, 0, 0, 1}, 6);
    check_grad_at("relu6", RELU6, (double[]){0.0, 6.0, 3.0, -1.0, 7.0, NAN},
                  (double[]){0, 0, 1, 0, 0, 1}, 6);
    check_grad_at("hardsigmoid", HARDSIGMOID, (double[]){-3.0, 3.0, 0.0, -4.0, 4.0, NAN},
                  (double[]){0, 0, 1.0 / 6, 0, 0, 0}, 6);
    /* the composed branches at 0 */
    check_grad_at("selu at 0 (elu's left side)", SELU, (double[]){0.0}, (double[]){SS * SA}, 1);
    check_grad_at("celu at 0", CELU, (double[]){0.0}, (double[]){1.0}, 1);
    check_grad_at("softsign at 0", SOFTSIGN, (double[]){0.0, -0.0}, (double[]){1.0, 1.0}, 2);
    check_grad_at("logsigmoid at 0", LOGSIGMOID, (double[]){0.0, -800.0, 800.0},
                  (double[]){0.5, 1.0, 0.0}, 3);
    check_grad_at("mish at 0", MISH, (double[]){0.0}, (double[]){tanh(log(2.0))}, 1);
    check_grad_at("asinh at 0", ASINH, (double[]){0.0, -0.0, 1e300},
                  (double[]){1.0, 1.0, 1e-300}, 3);
    check_grad_at("atanh", ATANH, (double[]){0.0, 1.0, -1.0}, (double[]){1.0, INFINITY, INFINITY},
                  3);
    check_grad_at("sinh / cosh at 0", SINH, (double[]){0.0, 30.0, -30.0},
                  (double[]){1.0, cosh(30.0), cosh(30.0)}, 3);
    check_grad_at("cosh", COSH, (double[]){0.0, 30.0, -30.0},
                  (double[]){0.0, sinh(30.0), sinh(-30.0)}, 3);
    check_grad_at("acosh at 1", ACOSH, (double[]){1.0, 2.0}, (double[]){INFINITY,
                  1.0 / sqrt(3.0)}, 2);
    check_grad_at("log2 at powers of two", LOG2, (double[]){1.0, 8.0, 0.25},
                  (double[]){1 / log(2.0), 1 / (8 * log(2.0)), 4 / log(2.0)}, 3);
    check_grad_at("exp2", EXP2, (double[]){0.0, 10.0, -3.5, 1000.0},
                  (double[]){log(2.0), 1024 * log(2.0), exp2(-3.5) * log(2.0),
                             0x1p1000 * log(2.0)}, 4);
    check_grad_at("trunc", TRUNC, (double[]){-2.5, 0.0, 3.0}, (double[]){0, 0, 0}, 3);
    check_grad_at("frac", FRAC, (double[]){-2.5, 0.0, 3.0}, (double[]){1, 1, 1}, 3);
    /* PyTorch's nan_to_num: 0 where replaced */
    check_grad_at("nan_to_num", NAN_TO_NUM, (double[]){1.5, NAN, INFINITY, -INFINITY},
                  (double[]){1, 0, 0, 0}, 4);
}

/* The divisor's gradient is -floor(a / b) (remainder), -trunc(a / b) (fmod),
 * the dividend's 1; clamp with tensor bounds at ties and with min > max. */
static void test_binary_special(void) {
    int64_t s4 = 4;
    double av[4] = {7.0, -7.0, 7.0, -7.0}, bv[4] = {2.0, 2.0, -2.0, -2.0};
    double floor_q[4] = {3, -4, -4, 3}, trunc_q[4] = {3, -3, -3, 3};
    for (int k = 0; k < 2; k++) {
        gf_tensor *a = f64s(av, &s4, 1, true), *b = f64s(bv, &s4, 1, true);
        gf_tensor *y = k ? gf_fmod(a, b) : gf_remainder(a, b);
        gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
        CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
        gf_tensor *ga = gf_tensor_grad(a), *gb = gf_tensor_grad(b);
        double g1[4] = {0}, g2[4] = {0};
        CHECK(ga && gf_tensor_to_host(ga, g1, sizeof g1) == GF_OK);
        CHECK(gb && gf_tensor_to_host(gb, g2, sizeof g2) == GF_OK);
        for (int i = 0; i < 4; i++) {
            CHECK_CLOSE(g1[i], 1.0, 0);
            CHECK_MSG(g2[i] == -(k ? trunc_q : floor_q)[i], "%s d/db [%d] = %g",
                      k ? "fmod" : "remainder", i, g2[i]);
        }
        gf_tensor *ts[] = {a, b, y, s, ga, gb};
        release_all(ts, 6);
    }
    /* a f32 leaf with an f64 divisor: the gradient comes back in f32 */
    int64_t s2 = 2;
    gf_tensor *af = gf_from_data((float[]){5.5f, -1.25f}, &s2, 1, GF_F32, NULL);
    CHECK(af && gf_tensor_set_requires_grad(af, true) == GF_OK);
    gf_tensor *bd = f64s((double[]){2.0, 0.5}, &s2, 1, false);
    gf_tensor *y = gf_remainder(af, bd);
    gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
    CHECK(y && gf_tensor_dtype(y) == GF_F64 && s && gf_backward(s, NULL, NULL) == GF_OK);
    gf_tensor *g = gf_tensor_grad(af);
    CHECK(g && gf_tensor_dtype(g) == GF_F32);
    gf_tensor *ts[] = {af, bd, y, s, g};
    release_all(ts, 5);
    /* clamp: x == min < max splits the gradient between x and min; x == max
     * likewise; column 3 has min > max: max takes it (PyTorch 2.x) */
    double xv[4] = {-1.0, 2.0, 0.5, 0.0}, lo[4] = {-1.0, 0.0, 0.0, 3.0}, hi[4] = {1.0, 2.0, 1.0, 2.0};
    gf_tensor *x = f64s(xv, &s4, 1, true), *l = f64s(lo, &s4, 1, true), *h = f64s(hi, &s4, 1, true);
    y = gf_clamp_tensor(x, l, h);
    s = y ? gf_sum(y, NULL, 0, false) : NULL;
    CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
    double gx[4] = {0}, gl[4] = {0}, gh[4] = {0};
    gf_tensor *g1 = gf_tensor_grad(x), *g2 = gf_tensor_grad(l), *g3 = gf_tensor_grad(h);
    CHECK(g1 && gf_tensor_to_host(g1, gx, sizeof gx) == GF_OK);
    CHECK(g2 && gf_tensor_to_host(g2, gl, sizeof gl) == GF_OK);
    CHECK(g3 && gf_tensor_to_host(g3, gh, sizeof gh) == GF_OK);
    double wx[4] = {0.5, 0.5, 1, 0}, wl[4] = {0.5, 0, 0, 0}, wh[4] = {0, 0.5, 0, 1};
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(gx[i] == wx[i], "clamp d/dx [%d] = %g", i, gx[i]);
        CHECK_MSG(gl[i] == wl[i], "clamp d/dmin [%d] = %g", i, gl[i]);
        CHECK_MSG(gh[i] == wh[i], "clamp d/dmax [%d] = %g", i, gh[i]);
    }
    gf_tensor *ts2[] = {x, l, h, y, s, g1, g2, g3};
    release_all(ts2, 8);
    /* only min: x below takes nothing, min takes it; a tie splits it */
    x = f64s((double[]){-3.0, 1.0}, &s2, 1, true);
    l = f64s((double[]){-1.0, 1.0}, &s2, 1, true);
    y = gf_clamp_tensor(x, l, NULL);
    s = y ? gf_sum(y, NULL, 0, false) : NULL;
    CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
    g1 = gf_tensor_grad(x);
    g2 = gf_tensor_grad(l);
    CHECK(g1 && gf_tensor_to_host(g1, gx, 2 * sizeof(double)) == GF_OK);
    CHECK(g2 && gf_tensor_to_host(g2, gl, 2 * sizeof(double)) == GF_OK);
    CHECK(gx[0] == 0 && gx[1] == 0.5 && gl[0] == 1 && gl[1] == 0.5);
    gf_tensor *ts3[] = {x, l, y, s, g1, g2};
    release_all(ts3, 6);
}

/* No history is recorded without grad mode, and integer results never get
 * one; f32 gradients run too. */
static void test_modes_dtypes(void) {
    int64_t s3 = 3;
    gf_tensor *x = gf_from_data((float[]){-0.5f, 0.25f, 2.0f}, &s3, 1, GF_F32, NULL);
    CHECK(x && gf_tensor_set_requires_grad(x, true) == GF_OK);
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *y = gf_remainder_scalar(x, 0.3), *z = gf_clamp_tensor(x, x, NULL);
    CHECK(y && !gf_tensor_requires_grad(y) && z && !gf_tensor_requires_grad(z));
    gf_grad_mode_set(prev);
    gf_tensor *m = gf_mish(x);
    gf_tensor *s = m ? gf_sum(m, NULL, 0, false) : NULL;
    CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
    gf_tensor *g = gf_tensor_grad(x);
    float gv[3] = {0};
    CHECK(g && gf_tensor_dtype(g) == GF_F32 && gf_tensor_to_host(g, gv, sizeof gv) == GF_OK);
    for (int i = 0; i < 3; i++) {
        double xv = i == 0 ? -0.5 : i == 1 ? 0.25 : 2.0, sp = log1p(exp(xv)), t = tanh(sp);
        double want = t + xv * (1 - t * t) / (1 + exp(-xv));
        CHECK_MSG(fabs(gv[i] - want) < 1e-6, "mish f32 grad [%d] %g vs %g", i, gv[i], want);
    }
    gf_tensor *ts[] = {x, y, z, m, s, g};
    release_all(ts, 6);
}

int main(void) {
    RUN(test_unary_gradcheck);
    RUN(test_nary_gradcheck);
    RUN(test_special_points);
    RUN(test_binary_special);
    RUN(test_modes_dtypes);
    gf_status st = gf_shutdown();
    CHECK_MSG(st == GF_OK, "gf_shutdown: %s (a tensor leaked?)", gf_last_error());
    return CHECK_REPORT();
}
