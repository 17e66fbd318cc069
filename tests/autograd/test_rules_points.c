/* test_rules_points.c — rule 24: gradients at non-differentiable and
 * undefined points follow PyTorch's conventions (docs/autograd.md lists
 * them): relu'(0) = 0, abs'(0) = 0, sqrt'(0) = inf, ties of max/min split
 * the gradient evenly, clamp passes it on its (inclusive) bounds, the
 * derivative of sign/floor/ceil/round is 0, undefined points give NaN. */
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

static gf_tensor *clamp01(const gf_tensor *x) { return gf_clamp(x, 0.0, 1.0); }
static gf_tensor *clamp_min0(const gf_tensor *x) { return gf_clamp(x, 0.0, NAN); }

static void rule24_clamp_passes_gradient_on_its_bounds(void) {
    check_unary_grad("clamp", clamp01, DV(-1, 0, 0.5, 1, 2), DV(0, 1, 1, 1, 0), 5, GF_F64);
    check_unary_grad("clamp min only", clamp_min0, DV(-1, 0, 5), DV(0, 1, 1), 3, GF_F64);
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
    RUN(rule24_clamp_passes_gradient_on_its_bounds);
    RUN(rule24_sign_floor_ceil_round_have_zero_gradient);
    RUN(rule24_leaky_relu_and_elu_at_zero);
    RUN(rule24_amax_amin_ties_split_evenly);
    RUN(rule24_maximum_minimum_ties_split_evenly);
    RUN(rule24_max_dim_gradient_goes_to_the_returned_index);
    return ag_finish();
}
