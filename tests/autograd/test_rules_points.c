/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_points.c — rule 24: gradients at non-differentiable and
 * undefined points follow PyTorch's conventions (docs/autograd.md lists
 * them): relu'(0) = 0, abs'(0) = 0, sqrt'(0) = inf, ties of max/min split
 * the gradient evenly, clamp gives none to x on a bound (PyTorch 2.x; with
 * tensor bounds a tie splits it), the derivative of sign/floor/ceil/round
 * is 0, undefined points give NaN. The expected values were read from
 * PyTorch 2.15's torch.autograd and are written here as literals. */
#include "test_rules_util.h"

typedef gf_tensor *(*unary_fn)(const gf_tensor *x);

/* d f(x) / dx elementwise, by backward with a grad_output of ones. */
static void check_unary_grad(const char *what, unary_fn f, const double *x, const double *want,
                             int n, gf_dtype dt) {
    gf_tensor *t64 = ag_vec(x, n);
    gf_tensor *t = gf_to_dtype(t64, dt);
    gf_tensor_release(t64);
    CHECK_OK(gf_tensor_set_requires_grad(t, true));
    gf_tensor *y = f(t);
    gf_status s = y ? ag_backward_ones(y, -1, false) : gf_last_status();
    CHECK_MSG(s == GF_OK, "%s: %s", what, gf_last_error());
    if (s == GF_OK) {
        gf_tensor *g = gf_tensor_grad(t);
        double got[16];
        CHECK_MSG(ag_read(g, got, 16) == n, "%s: no gradient", what);
        for (int i = 0; i < n; i++)
            CHECK_MSG(check_close_(got[i], want[i], 1e-6, 1e-6), "%s at x = %g: %.17g, expected %.17g",
                      what, x[i], got[i], want[i]);
        gf_tensor_release(g);
    }
    gf_tensor_release(y);
    gf_tensor_release(t);
}

static void rule24_relu_at_zero_is_zero(void) {
    check_unary_grad("relu f64", gf_relu, DV(-1, 0, 2), DV(0, 0, 1), 3, GF_F64);
    check_unary_grad("relu f32", gf_relu, DV(-1, 0, 2), DV(0, 0, 1), 3, GF_F32);
}

static void rule24_abs_at_zero_is_zero(void) {
    check_unary_grad("abs", gf_abs, DV(-2, 0, 3), DV(-1, 0, 1), 3, GF_F64);
    check_unary_grad("abs f32", gf_abs, DV(-2, 0, 3), DV(-1, 0, 1), 3, GF_F32);
}

static void rule24_sqrt_at_zero_is_inf_and_undefined_points_give_nan(void) {
    check_unary_grad("sqrt", gf_sqrt, DV(0, 4, -1), DV(INFINITY, 0.25, NAN), 3, GF_F64);
    check_unary_grad("rsqrt", gf_rsqrt, DV(-1, 4), DV(NAN, -1.0 / 16), 2, GF_F64);
}

static gf_tensor *pow0(const gf_tensor *x) { return gf_pow_scalar(x, 0.0); }
static gf_tensor *pow2(const gf_tensor *x) { return gf_pow_scalar(x, 2.0); }
static gf_tensor *pow_half(const gf_tensor *x) { return gf_pow_scalar(x, 0.5); }

static void rule24_pow_scalar_at_zero(void) {
    /* x^0 is constant: 0 everywhere, also at 0 (not 0 * 0^-1 = NaN). */
    check_unary_grad("pow 0", pow0, DV(0, 2), DV(0, 0), 2, GF_F64);
    check_unary_grad("pow 2", pow2, DV(0, -3), DV(0, -6), 2, GF_F64);
    check_unary_grad("pow 0.5", pow_half, DV(0, 4, -1), DV(INFINITY, 0.25, NAN), 3, GF_F64);
}

static gf_tensor *clamp12(const gf_tensor *x) { return gf_clamp(x, 1.0, 2.0); }
static gf_tensor *clamp_min1(const gf_tensor *x) { return gf_clamp(x, 1.0, NAN); }
static gf_tensor *clamp_max2(const gf_tensor *x) { return gf_clamp(x, NAN, 2.0); }
static gf_tensor *clamp11(const gf_tensor *x) { return gf_clamp(x, 1.0, 1.0); }
static gf_tensor *clamp21(const gf_tensor *x) { return gf_clamp(x, 2.0, 1.0); }
static gf_tensor *clamp_int12(const gf_tensor *x) { return gf_clamp_int(x, 1, 2); }
static gf_tensor *clamp12_inplace(const gf_tensor *x) {
    gf_tensor *y = gf_mul_scalar(x, 1.0);
    if (y && gf_clamp_(y, 1.0, 2.0) != GF_OK) {
        gf_tensor_release(y);
        return NULL;
    }
    return y;
}
static gf_tensor *hardtanh12(const gf_tensor *x) { return gf_hardtanh(x, 1.0, 2.0); }

static void rule24_clamp_gives_no_gradient_at_its_bounds(void) {
    /* torch 2.x: x.clamp(1, 2) passes the gradient only for 1 < x < 2 (1.13
     * passed it on the closed interval); a NaN x gets 0. */
    const double *x = DV(0.5, 1, 1.5, 2, 2.5, NAN);
    check_unary_grad("clamp", clamp12, x, DV(0, 0, 1, 0, 0, 0), 6, GF_F64);
    check_unary_grad("clamp f32", clamp12, x, DV(0, 0, 1, 0, 0, 0), 6, GF_F32);
    check_unary_grad("clamp_", clamp12_inplace, x, DV(0, 0, 1, 0, 0, 0), 6, GF_F64);
    check_unary_grad("clamp_int on f64", clamp_int12, x, DV(0, 0, 1, 0, 0, 0), 6, GF_F64);
    check_unary_grad("clamp min only", clamp_min1, x, DV(0, 0, 1, 1, 1, 0), 6, GF_F64);
    check_unary_grad("clamp max only", clamp_max2, x, DV(1, 1, 1, 0, 0, 0), 6, GF_F64);
    check_unary_grad("clamp min == max", clamp11, x, DV(0, 0, 0, 0, 0, 0), 6, GF_F64);
    check_unary_grad("clamp min > max", clamp21, x, DV(0, 0, 0, 0, 0, 0), 6, GF_F64);
    /* hardtanh and relu6 also give 0 on the bounds, but pass the gradient
     * at NaN; hardsigmoid gives 0 at -3, 3 and NaN. */
    check_unary_grad("hardtanh", hardtanh12, x, DV(0, 0, 1, 0, 0, 1), 6, GF_F64);
    check_unary_grad("relu6", gf_relu6, DV(-1, 0, 3, 6, 7, NAN), DV(0, 0, 1, 0, 0, 1), 6,
                     GF_F64);
    check_unary_grad("hardsigmoid", gf_hardsigmoid, DV(-4, -3, 0, 3, 4, NAN),
                     DV(0, 0, 1.0 / 6, 0, 0, 0), 6, GF_F64);
}

/* gf_clamp_tensor(x, min, max) over every order of x, min, max in {0, 1, 2}
 * (x slowest): the gradients of x, min and max as torch.clamp gives them. */
static void rule24_clamp_tensor_ties(void) {
    double xv[27], lv[27], hv[27];
    for (int i = 0; i < 27; i++) {
        xv[i] = i / 9;
        lv[i] = i / 3 % 3;
        hv[i] = i % 3;
    }
    gf_tensor *x = ag_leaf(xv, 27), *lo = ag_leaf(lv, 27), *hi = ag_leaf(hv, 27);
    gf_tensor *y = gf_clamp_tensor(x, lo, hi);
    CHECK_OK(y ? ag_backward_ones(y, -1, false) : gf_last_status());
    CHECK_GRAD(x, DV(1, 0.5, 0.5, 0, 0, 0, 0, 0, 0, 0, 0.5, 1, 0, 1, 0.5, 0, 0, 0, 0, 0, 0.5, 0,
                     0, 0.5, 0, 0, 1), 27, 0);
    CHECK_GRAD(lo, DV(0, 0.5, 0.5, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0.5, 0, 0, 1, 0, 0, 0, 0, 0,
                      0, 0, 0, 0), 27, 0);
    CHECK_GRAD(hi, DV(0, 0, 0, 1, 0, 0, 1, 1, 0, 1, 0.5, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0.5, 1, 1, 0.5,
                      1, 1, 0), 27, 0);
    gf_tensor_release(y);
    gf_tensor_release(hi);
    gf_tensor_release(lo);
    gf_tensor_release(x);
    /* One bound: x and the bound as maximum (min) / minimum (max), x slowest. */
    for (int mx = 0; mx < 2; mx++) {
        double xb[9], bv[9];
        for (int i = 0; i < 9; i++) {
            xb[i] = i / 3;
            bv[i] = i % 3;
        }
        gf_tensor *a = ag_leaf(xb, 9), *b = ag_leaf(bv, 9);
        y = mx ? gf_clamp_tensor(a, NULL, b) : gf_clamp_tensor(a, b, NULL);
        CHECK_OK(y ? ag_backward_ones(y, -1, false) : gf_last_status());
        if (mx) {
            CHECK_GRAD(a, DV(0.5, 1, 1, 0, 0.5, 1, 0, 0, 0.5), 9, 0);
            CHECK_GRAD(b, DV(0.5, 0, 0, 1, 0.5, 0, 1, 1, 0.5), 9, 0);
        } else {
            CHECK_GRAD(a, DV(0.5, 0, 0, 1, 0.5, 0, 1, 1, 0.5), 9, 0);
            CHECK_GRAD(b, DV(0.5, 1, 1, 0, 0.5, 1, 0, 0, 0.5), 9, 0);
        }
        gf_tensor_release(y);
        gf_tensor_release(b);
        gf_tensor_release(a);
    }
}

/* Losses built on clamp_min(v, 0) (PyTorch's too) give no gradient at v = 0. */
static void rule24_hinge_losses_at_the_hinge(void) {
    gf_tensor *a = ag_leaf(DV(1, 2, 0), 3), *b = ag_leaf(DV(1, 0, 3), 3);
    gf_tensor *t = ag_vec(DV(1, 1, -1), 3);
    gf_tensor *l = gf_margin_ranking_loss(a, b, t, 0.0, GF_REDUCTION_SUM);
    CHECK_OK(l ? gf_backward(l, NULL, NULL) : gf_last_status());
    CHECK_GRAD(a, DV(0, 0, 0), 3, 0);
    CHECK_GRAD(b, DV(0, 0, 0), 3, 0);
    gf_tensor_release(l);
    gf_tensor_release(t);
    gf_tensor_release(b);
    gf_tensor_release(a);
}

static void rule24_sign_floor_ceil_round_have_zero_gradient(void) {
    const double *x = DV(-1.5, 0, 0.5, 2);
    check_unary_grad("sign", gf_sign, x, DV(0, 0, 0, 0), 4, GF_F64);
    check_unary_grad("floor", gf_floor, x, DV(0, 0, 0, 0), 4, GF_F64);
    check_unary_grad("ceil", gf_ceil, x, DV(0, 0, 0, 0), 4, GF_F64);
    check_unary_grad("round", gf_round, x, DV(0, 0, 0, 0), 4, GF_F64);
}

static gf_tensor *leaky(const gf_tensor *x) { return gf_leaky_relu(x, 0.1); }
static gf_tensor *elu_half(const gf_tensor *x) { return gf_elu(x, 0.5); }

static void rule24_leaky_relu_and_elu_at_zero(void) {
    /* PyTorch: leaky_relu uses the negative slope at 0 (x > 0 ? 1 : slope),
     * elu uses its negative branch (alpha * exp(0) = alpha). */
    check_unary_grad("leaky_relu", leaky, DV(-2, 0, 3), DV(0.1, 0.1, 1), 3, GF_F64);
    check_unary_grad("elu", elu_half, DV(0, 1), DV(0.5, 1), 2, GF_F64);
}

/* ---- ties */
static gf_tensor *amax_all(const gf_tensor *x) { return gf_amax(x, NULL, 0, false); }
static gf_tensor *amin_all(const gf_tensor *x) { return gf_amin(x, NULL, 0, false); }

static void rule24_amax_amin_ties_split_evenly(void) {
    check_unary_grad("amax", amax_all, DV(2, 5, 5, 1), DV(0, 0.5, 0.5, 0), 4, GF_F64);
    check_unary_grad("amax 3 ties", amax_all, DV(3, 3, 3), DV(1.0 / 3, 1.0 / 3, 1.0 / 3), 3, GF_F64);
    check_unary_grad("amin", amin_all, DV(1, 1, 3), DV(0.5, 0.5, 0), 3, GF_F64);
    /* Along a dim: each row splits its own gradient. */
    gf_tensor *x = ag_leaf_t(DV(1, 1, 2, 0), SZ(2, 2), 2);
    int dim = 1;
    gf_tensor *m = gf_amax(x, &dim, 1, false);
    gf_tensor *go = ag_vec(DV(1, 10), 2);
    CHECK_OK(m ? gf_backward(m, go, NULL) : gf_last_status());
    CHECK_GRAD(x, DV(0.5, 0.5, 10, 0), 4, 0);
    gf_tensor_release(go);
    gf_tensor_release(m);
    gf_tensor_release(x);
}

static void rule24_maximum_minimum_ties_split_evenly(void) {
    for (int mx = 0; mx < 2; mx++) {
        gf_tensor *a = ag_leaf(DV(1, 2, 3), 3);
        gf_tensor *b = ag_leaf(DV(1, 5, 0), 3);
        gf_tensor *y = mx ? gf_maximum(a, b) : gf_minimum(a, b);
        CHECK_OK(y ? ag_backward_ones(y, -1, false) : gf_last_status());
        if (mx) {
            CHECK_GRAD(a, DV(0.5, 0, 1), 3, 0);
            CHECK_GRAD(b, DV(0.5, 1, 0), 3, 0);
        } else {
            CHECK_GRAD(a, DV(0.5, 1, 0), 3, 0);
            CHECK_GRAD(b, DV(0.5, 0, 1), 3, 0);
        }
        gf_tensor_release(y);
        gf_tensor_release(b);
        gf_tensor_release(a);
    }
}

static void rule24_max_dim_gradient_goes_to_the_returned_index(void) {
    /* As PyTorch's max(dim): the values' gradient goes to the index it
     * returns, even on ties. */
    gf_tensor *x = ag_leaf_t(DV(1, 3, 3, 7, 7, 2), SZ(2, 3), 2);
    gf_tensor *v = NULL, *idx = NULL;
    CHECK_OK(gf_max_dim(x, 1, false, &v, &idx));
    double ix[2] = {-1, -1};
    CHECK(ag_read(idx, ix, 2) == 2);
    CHECK((ix[0] == 1 || ix[0] == 2) && (ix[1] == 0 || ix[1] == 1));
    CHECK(idx && !gf_tensor_requires_grad(idx));
    gf_tensor *go = ag_vec(DV(1, 10), 2);
    CHECK_OK(v ? gf_backward(v, go, NULL) : gf_last_status());
    double want[6] = {0, 0, 0, 0, 0, 0};
    if (ix[0] >= 0 && ix[1] >= 0) {
        want[(int)ix[0]] = 1;
        want[3 + (int)ix[1]] = 10;
    }
    CHECK_GRAD(x, want, 6, 0);
    gf_tensor_release(go);
    gf_tensor_release(idx);
    gf_tensor_release(v);
    gf_tensor_release(x);
}

/* std at zero variance (gradient 0): test_rules_devices.c, on every device. */

int main(void) {
    RUN(rule24_relu_at_zero_is_zero);
    RUN(rule24_abs_at_zero_is_zero);
    RUN(rule24_sqrt_at_zero_is_inf_and_undefined_points_give_nan);
    RUN(rule24_pow_scalar_at_zero);
    RUN(rule24_clamp_gives_no_gradient_at_its_bounds);
    RUN(rule24_clamp_tensor_ties);
    RUN(rule24_hinge_losses_at_the_hinge);
    RUN(rule24_sign_floor_ceil_round_have_zero_gradient);
    RUN(rule24_leaky_relu_and_elu_at_zero);
    RUN(rule24_amax_amin_ties_split_evenly);
    RUN(rule24_maximum_minimum_ties_split_evenly);
    RUN(rule24_max_dim_gradient_goes_to_the_returned_index);
    return ag_finish();
}
