/* SPDX-License-Identifier: BSD-3-Clause */
/* test_complex_grad.c — autograd of complex tensors in PyTorch's convention
 * (conjugate Wirtinger, scaled: sum(|z|^2) gives 2z): closed forms, and
 * gf_gradcheck / gf_gradgradcheck in c128 for every complex backward rule
 * (the checks perturb real and imaginary parts apart: both Wirtinger
 * derivatives), on the device that stores complex tensors.
 *
 * On a default device that does not store complex dtypes (a GPU plugin
 * without them), a complex tensor there is refused with an error that names
 * the device, the dtype and a device that stores it; the checks then run on
 * that device. Where tests/CMakeLists.txt names the device that must do the
 * work (complex_device.h: cpu_onednn's cpu:0), running elsewhere fails. */
#include <complex.h>
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "complex_device.h"

static gf_device *dev; /* where the complex tensors live */

static gf_tensor *leaf_c(const double complex *v, const int64_t *sizes, int rank) {
    gf_tensor *t = gf_from_data(v, sizes, rank, GF_C128, dev);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    if (t) CHECK(gf_tensor_set_requires_grad(t, true) == GF_OK);
    return t;
}

static gf_tensor *leaf_r(const double *v, const int64_t *sizes, int rank) {
    gf_tensor *t = gf_from_data(v, sizes, rank, GF_F64, dev);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    if (t) CHECK(gf_tensor_set_requires_grad(t, true) == GF_OK);
    return t;
}

static double complex get_c(const gf_tensor *t, int64_t i) {
    double re = NAN, im = NAN;
    CHECK_MSG(gf_tensor_get_complex(t, &i, &re, &im) == GF_OK, "%s", gf_last_error());
    return CMPLX(re, im);
}

/* ---- closed forms */
static void test_abs_squared(void) {
    const double complex v[3] = {CMPLX(1, 2), CMPLX(-0.5, 0.25), CMPLX(3, -1)};
    int64_t n = 3;
    gf_tensor *z = leaf_c(v, &n, 1);
    gf_scope_begin();
    /* L = sum(|z|^2) written three ways; each gives 2z */
    for (int way = 0; way < 3; way++) {
        gf_tensor *l;
        if (way == 0) l = gf_sum(gf_real(gf_mul(z, gf_conj(z))), NULL, 0, false);
        else if (way == 1) l = gf_sum(gf_square(gf_abs(z)), NULL, 0, false);
        else l = gf_sum(gf_square(gf_view_as_real(z)), NULL, 0, false);
        CHECK_MSG(l && gf_tensor_dtype(l) == GF_F64, "%s", gf_last_error());
        CHECK_MSG(gf_backward(l, NULL, NULL) == GF_OK, "%s", gf_last_error());
        gf_tensor *g = gf_tensor_grad(z);
        CHECK(g && gf_tensor_dtype(g) == GF_C128);
        for (int k = 0; g && k < 3; k++) {
            double complex got = get_c(g, k);
            CHECK_MSG(cabs(got - 2 * v[k]) < 1e-12, "way %d [%d]: %g%+gi", way, k, creal(got),
                      cimag(got));
        }
        CHECK(gf_tensor_set_grad(z, NULL) == GF_OK);
    }
    gf_scope_end();
    gf_tensor_release(z);
}

/* A real-to-real function that uses complex ops inside has the gradient
 * of its all-real form: f(x, y) = |x + iy|^2 = x^2 + y^2. */
static void test_real_to_real(void) {
    const double xv[2] = {0.3, -1.2}, yv[2] = {2.0, 0.7};
    int64_t n = 2;
    gf_tensor *x = leaf_r(xv, &n, 1), *y = leaf_r(yv, &n, 1);
    gf_scope_begin();
    gf_tensor *l = gf_sum(gf_square(gf_abs(gf_complex(x, y))), NULL, 0, false);
    CHECK_MSG(gf_backward(l, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor *gx = gf_tensor_grad(x), *gy = gf_tensor_grad(y);
    CHECK(gx && gy && gf_tensor_dtype(gx) == GF_F64);
    for (int64_t k = 0; gx && gy && k < 2; k++) {
        double a = 0, b = 0;
        CHECK(gf_tensor_get(gx, &k, &a) == GF_OK && gf_tensor_get(gy, &k, &b) == GF_OK);
        CHECK_CLOSE(a, 2 * xv[k], 1e-12);
        CHECK_CLOSE(b, 2 * yv[k], 1e-12);
    }

    /* a real tensor times a complex one: the real input's gradient is the
     * real part of g * conj(w) */
    CHECK(gf_tensor_set_grad(x, NULL) == GF_OK);
    const double complex wv[2] = {CMPLX(1, 1), CMPLX(0, -2)};
    gf_tensor *w = gf_from_data(wv, &n, 1, GF_C128, dev); /* in the scope */
    gf_tensor *l2 = gf_sum(gf_imag(gf_mul(x, w)), NULL, 0, false); /* = sum(x im(w)) */
    CHECK_MSG(gf_backward(l2, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gx = gf_tensor_grad(x);
    for (int64_t k = 0; gx && k < 2; k++) {
        double a;
        CHECK(gf_tensor_get(gx, &k, &a) == GF_OK);
        CHECK_CLOSE(a, cimag(wv[k]), 1e-12);
    }
    gf_scope_end();
    gf_tensor_release(x);
    gf_tensor_release(y);
}

/* A complex root needs an explicit grad_output, as in PyTorch. */
static void test_complex_root(void) {
    const double complex v[1] = {CMPLX(1, 2)};
    int64_t n = 1;
    gf_tensor *z = leaf_c(v, &n, 1);
    gf_scope_begin();
    gf_tensor *l = gf_sum(gf_square(z), NULL, 0, false);
    CHECK(gf_backward(l, NULL, NULL) == GF_ERR_AUTOGRAD);
    CHECK_CONTAINS(gf_last_error(), "real outputs");
    CHECK_CONTAINS(gf_last_error(), "c128");
    /* with grad_output = 1: L = re(z^2), .grad = conj(2z) = 2 - 4i */
    gf_tensor *one = gf_ones_like(l);
    CHECK_MSG(gf_backward(l, one, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor *g = gf_tensor_grad(z);
    CHECK(g && cabs(get_c(g, 0) - CMPLX(2, -4)) < 1e-14);
    gf_scope_end();
    gf_tensor_release(z);
}

/* abs'(0) = 0 (PyTorch's sgn(0) = 0). */
static void test_abs_at_zero(void) {
    const double complex v[2] = {0, CMPLX(3, 4)};
    int64_t n = 2;
    gf_tensor *z = leaf_c(v, &n, 1);
    gf_scope_begin();
    gf_tensor *l = gf_sum(gf_abs(z), NULL, 0, false);
    CHECK(gf_backward(l, NULL, NULL) == GF_OK);
    gf_tensor *g = gf_tensor_grad(z);
    CHECK(g && get_c(g, 0) == 0);
    CHECK(g && cabs(get_c(g, 1) - CMPLX(0.6, 0.8)) < 1e-15);
    gf_scope_end();
    gf_tensor_release(z);
}

/* In-place ops on complex tensors: into a view of a non-leaf (CopySlices,
 * regions of complex elements), their dtype rules, and hooks. */
static gf_tensor *f_inplace(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_scope_begin();
    gf_tensor *y = gf_mul_scalar(in[0], 1.0);
    gf_tensor *row = gf_select(y, 0, 1);
    gf_status s = gf_mul_(row, gf_select(in[1], 0, 0));
    if (s == GF_OK) s = gf_exp_(row);
    gf_tensor *r = s == GF_OK ? gf_scope_keep(gf_mul(y, in[1])) : NULL;
    gf_scope_end();
    return r;
}

static int hook_calls;
static gf_tensor *hook_double(const gf_tensor *grad, void *user) {
    (void)user;
    hook_calls += gf_tensor_dtype(grad) == GF_C128;
    return gf_mul_scalar(grad, 2.0);
}

static void test_inplace_and_hooks(void) {
    const double complex a[4] = {CMPLX(0.8, 0.3), CMPLX(-0.4, 0.9), CMPLX(1.2, -0.5),
                                 CMPLX(0.6, 0.7)};
    const double complex b[4] = {CMPLX(0.5, -0.6), CMPLX(1.1, 0.2), CMPLX(-0.3, -0.8),
                                 CMPLX(0.9, 0.4)};
    int64_t s22[2] = {2, 2};
    gf_tensor *in[2] = {leaf_c(a, s22, 2), leaf_c(b, s22, 2)};
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.atol = 1e-6, o.rtol = 1e-4;
    CHECK_MSG(gf_gradcheck(f_inplace, in, 2, NULL, &o) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(gf_gradgradcheck(f_inplace, in, 2, NULL, &o) == GF_OK, "%s", gf_last_error());
    gf_scope_begin();
    /* dtype rules of in-place writes */
    gf_tensor *x = gf_ones(s22, 2, GF_F64, dev), *zc = gf_clone(in[0]);
    CHECK(gf_mul_(x, in[1]) == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), "complex result into a real tensor");
    uint64_t v = gf_tensor_version(zc);
    CHECK_MSG(gf_add_(zc, x) == GF_OK, "%s", gf_last_error()); /* real into complex: fine */
    CHECK(gf_tensor_version(zc) == v + 1);
    /* a tensor hook sees the complex gradient and may replace it */
    gf_tensor *y = gf_mul(in[0], in[1]);
    CHECK(gf_tensor_register_hook(y, hook_double, NULL) != 0);
    gf_tensor *l = gf_sum(gf_real(y), NULL, 0, false);
    CHECK(gf_tensor_set_grad(in[0], NULL) == GF_OK);
    CHECK_MSG(gf_backward(l, NULL, NULL) == GF_OK, "%s", gf_last_error());
    CHECK(hook_calls == 1);
    gf_tensor *g = gf_flatten(gf_tensor_grad(in[0])); /* 2 conj(b) */
    for (int k = 0; g && k < 4; k++) CHECK(cabs(get_c(g, k) - 2 * conj(b[k])) < 1e-14);
    gf_scope_end();
    gf_tensor_release(in[0]);
    gf_tensor_release(in[1]);
}

/* ---- gradcheck and gradgradcheck of every rule */
typedef gf_tensor *(*cfn)(gf_tensor *const *in);

static gf_tensor *f_add(gf_tensor *const *in) { return gf_add(in[0], in[1]); }
static gf_tensor *f_sub(gf_tensor *const *in) { return gf_sub(in[0], in[1]); }
static gf_tensor *f_mul(gf_tensor *const *in) { return gf_mul(in[0], in[1]); }
static gf_tensor *f_div(gf_tensor *const *in) { return gf_div(in[0], in[1]); }
static gf_tensor *f_pow(gf_tensor *const *in) { return gf_pow(in[0], in[1]); }
static gf_tensor *f_mul_scalar(gf_tensor *const *in) { return gf_mul_scalar(in[0], -1.5); }
static gf_tensor *f_exp(gf_tensor *const *in) { return gf_exp(in[0]); }
static gf_tensor *f_log(gf_tensor *const *in) { return gf_log(in[0]); }
static gf_tensor *f_sqrt(gf_tensor *const *in) { return gf_sqrt(in[0]); }
static gf_tensor *f_rsqrt(gf_tensor *const *in) { return gf_rsqrt(in[0]); }
static gf_tensor *f_sin(gf_tensor *const *in) { return gf_sin(in[0]); }
static gf_tensor *f_cos(gf_tensor *const *in) { return gf_cos(in[0]); }
static gf_tensor *f_tanh(gf_tensor *const *in) { return gf_tanh(in[0]); }
static gf_tensor *f_sinh(gf_tensor *const *in) { return gf_sinh(in[0]); }
static gf_tensor *f_cosh(gf_tensor *const *in) { return gf_cosh(in[0]); }
static gf_tensor *f_sigmoid(gf_tensor *const *in) { return gf_sigmoid(in[0]); }
static gf_tensor *f_square(gf_tensor *const *in) { return gf_square(in[0]); }
static gf_tensor *f_reciprocal(gf_tensor *const *in) { return gf_reciprocal(in[0]); }
static gf_tensor *f_neg(gf_tensor *const *in) { return gf_neg(in[0]); }
static gf_tensor *f_pow_scalar(gf_tensor *const *in) { return gf_pow_scalar(in[0], 2.5); }
static gf_tensor *f_sum(gf_tensor *const *in) {
    int d = 1;
    return gf_sum(in[0], &d, 1, false);
}
static gf_tensor *f_mean(gf_tensor *const *in) { return gf_mean(in[0], NULL, 0, false); }
static gf_tensor *f_prod(gf_tensor *const *in) {
    int d = 0;
    return gf_prod(in[0], &d, 1, true);
}
static gf_tensor *f_matmul(gf_tensor *const *in) { return gf_matmul(in[0], in[1]); }
static gf_tensor *f_view_as_real(gf_tensor *const *in) { return gf_square(gf_view_as_real(in[0])); }
static gf_tensor *f_view_as_complex(gf_tensor *const *in) {
    return gf_square(gf_view_as_complex(in[2]));
}
static gf_tensor *f_real(gf_tensor *const *in) { return gf_mul(gf_real(in[0]), gf_imag(in[1])); }
static gf_tensor *f_imag(gf_tensor *const *in) { return gf_exp(gf_imag(in[0])); }
static gf_tensor *f_abs(gf_tensor *const *in) { return gf_abs(in[0]); }
static gf_tensor *f_angle(gf_tensor *const *in) { return gf_angle(in[0]); }
static gf_tensor *f_conj(gf_tensor *const *in) { return gf_mul(gf_conj(in[0]), in[1]); }
static gf_tensor *f_complex(gf_tensor *const *in) {
    return gf_square(gf_complex(in[3], in[4])); /* real inputs, complex output */
}
static gf_tensor *f_polar(gf_tensor *const *in) {
    return gf_polar(gf_abs(in[0]), in[4]);
}
static gf_tensor *f_real_times_complex(gf_tensor *const *in) { return gf_mul(in[3], in[0]); }
static gf_tensor *f_to_complex(gf_tensor *const *in) {
    return gf_mul(gf_to_dtype(in[3], GF_C128), gf_sin(in[0])); /* real -> complex copy */
}
static gf_tensor *f_where(gf_tensor *const *in) {
    gf_tensor *mask = gf_gt_scalar(in[3], 0.0);
    return gf_where(mask, in[0], gf_exp(in[1]));
}
static gf_tensor *f_movement(gf_tensor *const *in) {
    int d = 1;
    gf_tensor *ts[2] = {gf_flip(in[0], &d, 1), in[1]};
    return gf_cat(ts, 2, 0);
}
/* roll, pad (constant and reflect), gather, scatter_add, stack, tril */
static gf_tensor *f_movement2(gf_tensor *const *in) {
    int64_t sh = 1;
    int d = 1;
    gf_tensor *r = gf_roll(in[0], &sh, 1, &d, 1);
    const int64_t pads[2] = {1, 1};
    gf_tensor *p = gf_pad(r, pads, 2, GF_PAD_CONSTANT, 0.5);
    gf_tensor *q = gf_pad(in[1], pads, 2, GF_PAD_REFLECT, 0.0);
    const int64_t iv[4] = {0, 3, 2, 1};
    int64_t s22[2] = {2, 2};
    gf_tensor *idx = gf_from_data(iv, s22, 2, GF_I64, gf_tensor_device(in[0]));
    gf_tensor *g = gf_gather(p, 1, idx);
    const int64_t jv[2] = {1, 0};
    int64_t s21[2] = {2, 1};
    gf_tensor *jdx = gf_from_data(jv, s21, 2, GF_I64, gf_tensor_device(in[0]));
    gf_tensor *sa = gf_scatter_add(g, 1, jdx, gf_narrow(q, 1, 0, 1));
    gf_tensor *st[2] = {gf_tril(sa, 0), in[1]};
    return gf_stack(st, 2, 0);
}

/* a real loss of complex inputs */
static gf_tensor *f_loss(gf_tensor *const *in) {
    gf_tensor *p = gf_matmul(in[0], gf_conj(in[1]));
    return gf_sum(gf_square(gf_abs(gf_add(p, gf_exp(in[0])))), NULL, 0, false);
}

typedef struct ccase {
    const char *name;
    cfn fn;
    bool second; /* also gradgradcheck */
} ccase;

static gf_tensor *run_case(gf_tensor *const *in, int n, void *user) {
    (void)n;
    const ccase *c = user;
    gf_scope_begin();
    gf_tensor *y = gf_scope_keep(c->fn(in));
    gf_scope_end();
    return y;
}

static void test_gradchecks(void) {
    /* in[0], in[1]: 2x2 complex, away from branch cuts and zeros; in[2]: a
     * real 2x2x2 (pairs); in[3], in[4]: real 2x2 */
    const double complex a[4] = {CMPLX(0.8, 0.3), CMPLX(-0.4, 0.9), CMPLX(1.2, -0.5),
                                 CMPLX(0.6, 0.7)};
    const double complex b[4] = {CMPLX(0.5, -0.6), CMPLX(1.1, 0.2), CMPLX(-0.3, -0.8),
                                 CMPLX(0.9, 0.4)};
    const double pr[8] = {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8};
    const double r1[4] = {0.7, -1.1, 0.4, 1.3}, r2[4] = {-0.2, 0.9, 1.5, -0.8};
    int64_t s22[2] = {2, 2}, s222[3] = {2, 2, 2};
    gf_tensor *in[5] = {leaf_c(a, s22, 2), leaf_c(b, s22, 2), leaf_r(pr, s222, 3),
                        leaf_r(r1, s22, 2), leaf_r(r2, s22, 2)};
    const ccase cases[] = {
        {"add", f_add, true},         {"sub", f_sub, true},
        {"mul", f_mul, true},         {"div", f_div, true},
        {"pow", f_pow, true},         {"mul_scalar", f_mul_scalar, true},
        {"exp", f_exp, true},         {"log", f_log, true},
        {"sqrt", f_sqrt, true},       {"rsqrt", f_rsqrt, true},
        {"sin", f_sin, true},         {"cos", f_cos, true},
        {"tanh", f_tanh, true},       {"sinh", f_sinh, true},
        {"cosh", f_cosh, true},       {"sigmoid", f_sigmoid, true},
        {"square", f_square, true},   {"reciprocal", f_reciprocal, true},
        {"neg", f_neg, true},         {"pow_scalar", f_pow_scalar, true},
        {"sum", f_sum, true},         {"mean", f_mean, true},
        {"prod", f_prod, true},       {"matmul", f_matmul, true},
        {"view_as_real", f_view_as_real, true},
        {"view_as_complex", f_view_as_complex, true},
        {"real", f_real, true},       {"imag", f_imag, true},
        {"abs", f_abs, true},         {"angle", f_angle, true},
        {"conj", f_conj, true},       {"complex", f_complex, true},
        {"polar", f_polar, true},     {"real_times_complex", f_real_times_complex, true},
        {"where", f_where, true},     {"flip_cat", f_movement, true},
        {"roll_pad_gather_scatter_stack_tril", f_movement2, true},
        {"to_dtype_real_to_complex", f_to_complex, true},
        {"loss", f_loss, true},
    };
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.eps = 1e-6, o.atol = 1e-6, o.rtol = 1e-4;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_status s = gf_gradcheck(run_case, in, 5, (void *)&cases[i], &o);
        CHECK_MSG(s == GF_OK, "gradcheck %s: %s", cases[i].name, gf_last_error());
        if (!cases[i].second) continue;
        s = gf_gradgradcheck(run_case, in, 5, (void *)&cases[i], &o);
        CHECK_MSG(s == GF_OK, "gradgradcheck %s: %s", cases[i].name, gf_last_error());
    }
    for (int i = 0; i < 5; i++) gf_tensor_release(in[i]);
}

/* gradcheck notices a wrong complex rule: a function whose backward gives
 * g * f'(z) instead of g * conj(f'(z)) fails (the imaginary direction). */
static gf_status wrong_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n, gf_tensor **out,
                           int n_out, void *user) {
    (void)n;
    (void)n_out;
    (void)user;
    gf_ctx_save_for_backward(ctx, in, 1);
    *out = gf_square(in[0]);
    return *out ? GF_OK : gf_last_status();
}
static gf_status wrong_bwd(gf_function_ctx *ctx, gf_tensor *const *g, int n, gf_tensor **gin,
                           int n_in, void *user) {
    (void)n;
    (void)n_in;
    (void)user;
    gf_tensor *z = gf_ctx_saved_tensor(ctx, 0);
    gf_tensor *twice = gf_mul_scalar(z, 2.0);
    gin[0] = gf_mul(g[0], twice); /* missing conj */
    gf_tensor_release(twice);
    gf_tensor_release(z);
    return gin[0] ? GF_OK : gf_last_status();
}
static gf_tensor *run_wrong(gf_tensor *const *in, int n, void *user) {
    (void)n;
    gf_function_def *def = user;
    gf_tensor *out = NULL;
    gf_scope_begin();
    gf_status s = gf_function_apply(def, in, 1, &out, 1);
    if (s == GF_OK) gf_scope_keep(out);
    gf_scope_end();
    return s == GF_OK ? out : NULL;
}

static void test_gradcheck_catches_missing_conj(void) {
    const double complex a[2] = {CMPLX(0.8, 0.3), CMPLX(-0.4, 0.9)};
    int64_t n = 2;
    gf_tensor *z = leaf_c(a, &n, 1);
    gf_function_def def = {.name = "WrongSquare", .forward = wrong_fwd, .backward = wrong_bwd};
    gf_status s = gf_gradcheck(run_wrong, &z, 1, &def, NULL);
    CHECK_MSG(s == GF_ERR_AUTOGRAD, "%s", gf_last_error());
    CHECK_CONTAINS(gf_last_error(), "Jacobian mismatch");
    gf_tensor_release(z);
}

static gf_tensor *f_square8(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    return gf_mul(in[0], in[0]);
}

/* gradcheck perturbs a complex input through the real view of its parts,
 * one dim more: at rank GF_MAX_RANK there is none, and the check says so
 * (it once indexed past the sizes array building it). */
static void test_gradcheck_rank8_complex(void) {
    gf_tensor *z = gf_zeros((const int64_t[]){1, 1, 1, 1, 1, 1, 1, 2}, 8, GF_C128, NULL);
    CHECK(z && gf_tensor_set_requires_grad(z, true) == GF_OK);
    gf_status s = z ? gf_gradcheck(f_square8, &z, 1, NULL, NULL) : GF_ERR_INVALID;
    CHECK_MSG(s == GF_ERR_SHAPE, "%d: %s", (int)s, gf_last_error());
    CHECK_CONTAINS(gf_last_error(), "rank 8");
    gf_tensor_release(z);
}

/* Writes through a view with another dtype while the base needs a gradient
 * are refused (history cannot be rebased across dtypes); versions move. */
static void test_views_inplace(void) {
    const double complex a[2] = {CMPLX(0.8, 0.3), CMPLX(-0.4, 0.9)};
    int64_t n = 2;
    gf_tensor *z = leaf_c(a, &n, 1);
    gf_scope_begin();
    gf_tensor *y = gf_mul_scalar(z, 2.0);
    gf_tensor *r = gf_view_as_real(y);
    CHECK(gf_mul_scalar_(r, 3.0) == GF_ERR_AUTOGRAD);
    CHECK_CONTAINS(gf_last_error(), "another dtype");
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    uint64_t v = gf_tensor_version(y);
    gf_tensor *im = gf_imag(y);
    CHECK(gf_mul_scalar_(im, -1.0) == GF_OK);
    CHECK(gf_tensor_version(y) == v + 1 && gf_tensor_version(r) == v + 1);
    gf_grad_mode_set(prev);
    /* y was modified in place after mul saved nothing of it; grad flows */
    gf_tensor *l = gf_sum(gf_abs(y), NULL, 0, false);
    CHECK_MSG(gf_backward(l, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_scope_end();
    gf_tensor_release(z);
}

static void test_other_device(void) {
    gf_device *def = gf_device_default();
    gf_device_info info;
    CHECK(gf_device_get_info(def, &info) == GF_OK);
    if (info.dtypes & (1u << GF_C128)) {
        dev = def;
        return;
    }
    /* the default device does not store complex: a clear error, naming it */
    int64_t n = 2;
    gf_tensor *t = gf_zeros(&n, 1, GF_C128, def);
    CHECK(t == NULL && gf_last_status() == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), gf_device_spec(def));
    CHECK_CONTAINS(gf_last_error(), "does not store dtype c128");
    for (int i = 0; i < gf_device_count() && !dev; i++) {
        gf_device_info di;
        if (gf_device_get_info(gf_device_at(i), &di) == GF_OK && (di.dtypes & (1u << GF_C128)))
            dev = gf_device_at(i);
    }
    CHECK_MSG(dev != NULL, "no device stores c128 (the reference plugin does)");
    if (!dev) return;
    char eg[64];
    snprintf(eg, sizeof eg, "e.g. %s", gf_device_spec(dev));
    CHECK_CONTAINS(gf_last_error(), eg);
    /* a real tensor on the default device cannot become complex there */
    gf_tensor *x = gf_ones(&n, 1, GF_F64, def);
    CHECK(gf_to_dtype(x, GF_C128) == NULL && gf_last_status() == GF_ERR_DTYPE);
    /* nor a view of it: no complex tensor exists where none can be stored */
    gf_tensor *pairs = gf_ones((const int64_t[]){3, 2}, 2, GF_F64, def);
    CHECK(pairs && gf_view_as_complex(pairs) == NULL && gf_last_status() == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), "does not store dtype c128");
    gf_tensor_release(pairs);
    gf_tensor_release(x);
}

int main(void) {
    /* A GRAFT_DEVICE that names no device here (cuda without a GPU): say so
     * and skip (77), as the other programs of the every-device list do. */
    gf_device_info info;
    if (gf_device_get_info(gf_device_default(), &info) != GF_OK) {
        printf("skipped: %s\n", gf_last_error());
        return 77;
    }
    RUN(test_other_device);
    check_complex_device(dev);
    if (!dev) return CHECK_REPORT();
    RUN(test_abs_squared);
    RUN(test_real_to_real);
    RUN(test_abs_at_zero);
    RUN(test_complex_root);
    RUN(test_inplace_and_hooks);
    RUN(test_gradchecks);
    RUN(test_gradcheck_catches_missing_conj);
    RUN(test_gradcheck_rank8_complex);
    RUN(test_views_inplace);
    return CHECK_REPORT();
}
