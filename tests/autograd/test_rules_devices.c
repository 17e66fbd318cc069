/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_devices.c — autograd rules whose values the device computes
 * (docs/autograd.md): .grad accumulated in place (rule 2), gradients at
 * non-differentiable points (rule 24: std at zero variance, ties of
 * maximum/minimum with a scalar). Built with the other rule tests and also
 * run on every device of the cross-device suites (tests/CMakeLists.txt):
 * tensors are made on the default device (GRAFT_DEVICE). */
#include <math.h>

#include "test_rules_util.h"

/* ------------------------------------------------------------ rule 2 */
static gf_tensor *square_sum(gf_tensor *x) {
    gf_tensor *sq = gf_mul(x, x);
    gf_tensor *y = gf_sum(sq, NULL, 0, false);
    gf_tensor_release(sq);
    return y;
}

static void rule02_accumulates_into_the_same_tensor(void) {
    /* PyTorch: a reference to .grad taken after the first backward is
     * x.grad after the second, and reads the sum. */
    gf_tensor *x = ag_leaf(DV(1, 2, 3), 3);
    gf_tensor *y1 = square_sum(x);
    CHECK_OK(gf_backward(y1, NULL, NULL));
    gf_tensor *g1 = gf_tensor_grad(x);
    CHECK_VALS(g1, DV(2, 4, 6), 3, 0);
    gf_tensor *y2 = square_sum(x);
    CHECK_OK(gf_backward(y2, NULL, NULL));
    gf_tensor *g2 = gf_tensor_grad(x);
    CHECK(g2 == g1);
    CHECK_VALS(g1, DV(4, 8, 12), 3, 0);
    CHECK(!gf_tensor_requires_grad(g1));
    /* and the same in f32 */
    gf_tensor *xf = gf_to_dtype(x, GF_F32);
    gf_tensor *xl = gf_detach(xf);
    CHECK_OK(gf_tensor_set_requires_grad(xl, true));
    for (int k = 0; k < 3; k++) {
        gf_tensor *y = square_sum(xl);
        CHECK_OK(gf_backward(y, NULL, NULL));
        gf_tensor_release(y);
    }
    gf_tensor *gf = gf_tensor_grad(xl);
    CHECK(gf && gf_tensor_dtype(gf) == GF_F32);
    CHECK_VALS(gf, DV(6, 12, 18), 3, 0);
    gf_tensor_release(gf);
    gf_tensor_release(xl);
    gf_tensor_release(xf);
    gf_tensor_release(g2);
    gf_tensor_release(g1);
    gf_tensor_release(y2);
    gf_tensor_release(y1);
    gf_tensor_release(x);
}

static void rule02_first_grad_never_aliases_the_engines(void) {
    /* SumBackward's gradient is an expanded view of one element, and a
     * reshape's is a view of the caller's grad_output: .grad is a tensor
     * of its own, so the next backward adds into it and nothing else. */
    gf_tensor *x = ag_leaf_t(DV(1, 2, 3, 4), SZ(2, 2), 2);
    gf_tensor *s = gf_sum(x, NULL, 0, false);
    CHECK_OK(gf_backward(s, NULL, NULL));
    gf_tensor *g1 = gf_tensor_grad(x);
    CHECK_VALS(g1, DV(1, 1, 1, 1), 4, 0);
    gf_tensor *s2 = gf_sum(x, NULL, 0, false);
    CHECK_OK(gf_backward(s2, NULL, NULL));
    CHECK_VALS(g1, DV(2, 2, 2, 2), 4, 0); /* into the same tensor, every element */
    CHECK_OK(gf_tensor_set_grad(x, NULL));

    gf_tensor *r = gf_reshape(x, SZ(4), 1);
    gf_tensor *go = ag_vec(DV(1, 2, 3, 4), 4);
    CHECK_OK(gf_backward(r, go, &(gf_backward_opts){.retain_graph = 1}));
    gf_tensor *g2 = gf_tensor_grad(x);
    CHECK(!gf_tensor_shares_storage(g2, go));
    CHECK_OK(gf_backward(r, go, NULL));
    CHECK_VALS(g2, DV(2, 4, 6, 8), 4, 0);
    CHECK_VALS(go, DV(1, 2, 3, 4), 4, 0); /* the caller's grad_output is untouched */
    gf_tensor_release(g2);
    gf_tensor_release(go);
    gf_tensor_release(r);
    gf_tensor_release(s2);
    gf_tensor_release(g1);
    gf_tensor_release(s);
    gf_tensor_release(x);
}

static void rule02_grad_set_by_the_user(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    /* A tensor given with set_grad is x.grad: backward adds into it (as
     * PyTorch's `x.grad = t`), so t reads the sum. */
    gf_tensor *t = ag_vec(DV(10, 20), 2);
    CHECK_OK(gf_tensor_set_grad(x, t));
    gf_tensor *y = square_sum(x);
    CHECK_OK(gf_backward(y, NULL, NULL));
    CHECK_VALS(t, DV(12, 24), 2, 0);
    CHECK_GRAD(x, DV(12, 24), 2, 0);
    /* A transposed (non-contiguous) .grad is written through its strides. */
    gf_tensor *m = ag_leaf_t(DV(1, 2, 3, 4), SZ(2, 2), 2);
    gf_tensor *base = ag_t(DV(0, 0, 10, 10), SZ(2, 2), 2);
    gf_tensor *tr = gf_transpose(base, 0, 1); /* [[0, 10], [0, 10]] */
    CHECK_OK(gf_tensor_set_grad(m, tr));
    gf_tensor *ym = square_sum(m);
    CHECK_OK(gf_backward(ym, NULL, NULL));
    CHECK_VALS(tr, DV(2, 14, 6, 18), 4, 0);
    CHECK_VALS(base, DV(2, 6, 14, 18), 4, 0);
    /* An expanded .grad (one element seen twice) cannot be written in
     * place: .grad becomes a new tensor and the expanded one is untouched. */
    gf_tensor *one = ag_t(DV(5), SZ(1), 1);
    gf_tensor *ex = gf_expand(one, SZ(2), 1);
    CHECK_OK(gf_tensor_set_grad(x, ex));
    gf_tensor *y2 = square_sum(x);
    CHECK_OK(gf_backward(y2, NULL, NULL));
    CHECK_GRAD(x, DV(7, 9), 2, 0);
    CHECK_VALS(one, DV(5), 1, 0);
    gf_tensor *g = gf_tensor_grad(x);
    CHECK(g != ex && !gf_tensor_shares_storage(g, one));
    gf_tensor_release(g);
    gf_tensor_release(y2);
    gf_tensor_release(ex);
    gf_tensor_release(one);
    gf_tensor_release(ym);
    gf_tensor_release(tr);
    gf_tensor_release(base);
    gf_tensor_release(m);
    gf_tensor_release(y);
    gf_tensor_release(t);
    gf_tensor_release(x);
}

static void rule02_create_graph_then_plain_backward(void) {
    /* A .grad with history (from create_graph) then a plain backward: the
     * plain one adds into that tensor in place, as PyTorch's `grad += new`
     * under no-grad; the values are right either way. */
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y1 = square_sum(x);
    CHECK_OK(gf_backward(y1, NULL, &(gf_backward_opts){.retain_graph = -1, .create_graph = true}));
    gf_tensor *g1 = gf_tensor_grad(x);
    CHECK(gf_tensor_requires_grad(g1));
    gf_tensor *y2 = square_sum(x);
    CHECK_OK(gf_backward(y2, NULL, NULL));
    gf_tensor *g2 = gf_tensor_grad(x);
    CHECK(g2 == g1);
    CHECK_VALS(g2, DV(4, 8), 2, 0);
    CHECK_OK(gf_tensor_set_grad(x, NULL)); /* break the cycle x -> .grad -> graph -> x */
    gf_tensor_release(g2);
    gf_tensor_release(g1);
    gf_tensor_release(y2);
    gf_tensor_release(y1);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 24 */
/* d/dx of sum(f(x) * w) for f = std or var over dims (NULL: all) with the
 * given correction, checked against want (NaN matches NaN). */
static void check_spread_grad(bool is_std, const double *xv, const int64_t *sizes, int rank,
                              const int *dims, int nd, double correction, bool keepdim,
                              const double *want, int n) {
    gf_tensor *x = ag_leaf_t(xv, sizes, rank);
    gf_tensor *y = is_std ? gf_std(x, dims, nd, correction, keepdim)
                          : gf_var(x, dims, nd, correction, keepdim);
    CHECK_MSG(y != NULL, "%s", gf_last_error());
    if (y) {
        CHECK_OK(ag_backward_ones(y, -1, false));
        CHECK_GRAD(x, want, n, 1e-12);
    }
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule24_std_at_zero_variance_is_zero(void) {
    /* As PyTorch (1.13 and 2.x): a slice of equal values has std 0 and
     * gradient 0 (its std_backward masks 1 / (2 std) there), not NaN. */
    const double x[6] = {1, 1, 1, 1, 2, 3};
    const double s1 = 0.5, s0 = 1.0 / (3.0 * sqrt(2.0 / 3.0));
    for (int keep = 0; keep < 2; keep++) {
        /* correction 1: row 1 has std 1, gradient (x - mean) / (2 std) * 2 / (N - 1) */
        check_spread_grad(true, x, SZ(2, 3), 2, (const int[]){1}, 1, 1.0, keep,
                          DV(0, 0, 0, -s1, 0, s1), 6);
        /* correction 0: std sqrt(2/3), gradient (x - mean) / (N std) */
        check_spread_grad(true, x, SZ(2, 3), 2, (const int[]){-1}, 1, 0.0, keep,
                          DV(0, 0, 0, -s0, 0, s0), 6);
    }
    /* over every dim, and over the dim where the columns are constant */
    const double c[6] = {4, 4, 4, 4, 4, 4};
    check_spread_grad(true, c, SZ(2, 3), 2, NULL, 0, 1.0, false, DV(0, 0, 0, 0, 0, 0), 6);
    check_spread_grad(true, c, SZ(2, 3), 2, NULL, 0, 0.0, true, DV(0, 0, 0, 0, 0, 0), 6);
    const double cols[6] = {1, 2, 3, 1, 2, 3};
    check_spread_grad(true, cols, SZ(2, 3), 2, (const int[]){0}, 1, 1.0, false,
                      DV(0, 0, 0, 0, 0, 0), 6);
    /* a 0-dim input: std 0 with correction 0 */
    check_spread_grad(true, DV(5), NULL, 0, NULL, 0, 0.0, false, DV(0), 1);
    /* var there is 0 with gradient 0 already (2 (x - mean) / (N - c)) */
    check_spread_grad(false, x, SZ(2, 3), 2, (const int[]){1}, 1, 1.0, false,
                      DV(0, 0, 0, -1, 0, 1), 6);
    check_spread_grad(false, c, SZ(2, 3), 2, NULL, 0, 0.0, false, DV(0, 0, 0, 0, 0, 0), 6);
    /* N - correction <= 0 is undefined, NaN as in PyTorch, for both */
    check_spread_grad(true, DV(1, 2), SZ(2, 1), 2, (const int[]){1}, 1, 1.0, false, DV(NAN, NAN), 2);
    check_spread_grad(false, DV(1, 2), SZ(2, 1), 2, (const int[]){1}, 1, 1.0, false, DV(NAN, NAN), 2);
    /* f32 too */
    gf_tensor *x64 = ag_t(x, SZ(2, 3), 2);
    gf_tensor *x32 = gf_to_dtype(x64, GF_F32);
    CHECK_OK(gf_tensor_set_requires_grad(x32, true));
    gf_tensor *y = gf_std(x32, (const int[]){1}, 1, 1.0, false);
    CHECK(y && strcmp(gf_tensor_grad_fn_name(y), "StdBackward") == 0);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x32, DV(0, 0, 0, -0.5, 0, 0.5), 6, 1e-6);
    gf_tensor_release(y);
    gf_tensor_release(x32);
    gf_tensor_release(x64);
}

static gf_tensor *std_rows(gf_tensor *const *in, int n, void *user) {
    return gf_std(in[0], (const int[]){1}, 1, *(const double *)user, false);
}

static void rule24_std_second_order_at_zero_variance(void) {
    /* The gradient of the gradient of a constant row is 0 too (finite):
     * d/dx sum(d std / dx * v) for the constant row. Elsewhere std still
     * passes gf_gradcheck and gf_gradgradcheck. */
    gf_tensor *x = ag_leaf_t(DV(1, 1, 1, 1, 2, 4), SZ(2, 3), 2);
    gf_tensor *y = gf_std(x, (const int[]){1}, 1, 1.0, false);
    gf_tensor *g = ag_grad1(y, x, NULL, true);
    gf_tensor *v = ag_t(DV(1, 2, 3, 4, 5, 6), SZ(2, 3), 2);
    gf_tensor *gv = g ? gf_mul(g, v) : NULL;
    gf_tensor *s = gv ? gf_sum(gv, NULL, 0, false) : NULL;
    gf_tensor *h = s ? ag_grad1(s, x, NULL, false) : NULL;
    double hv[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    CHECK(ag_read(h, hv, 6) == 6);
    for (int i = 0; i < 3; i++) CHECK_CLOSE(hv[i], 0, 0);
    for (int i = 3; i < 6; i++) CHECK(isfinite(hv[i]));
    gf_tensor_release(h);
    gf_tensor_release(s);
    gf_tensor_release(gv);
    gf_tensor_release(v);
    gf_tensor_release(g);
    gf_tensor_release(y);
    gf_tensor_release(x);
    gf_tensor *z = ag_leaf_t(DV(0.5, -1, 2, 3, 0.25, 1), SZ(2, 3), 2);
    for (int k = 0; k < 2; k++) {
        double corr = k;
        CHECK_OK(gf_gradcheck(std_rows, &z, 1, &corr, NULL));
        CHECK_OK(gf_gradgradcheck(std_rows, &z, 1, &corr, NULL));
    }
    gf_tensor_release(z);
}

static void rule24_maximum_minimum_scalar_ties_give_half(void) {
    /* As torch.maximum(x, tensor(s)): where x equals the scalar, x gets half
     * the gradient (the scalar would get the other half). gf_clamp instead
     * passes all of it on its bounds (test_rules_points.c). */
    for (int k = 0; k < 4; k++) {
        bool mx = k & 1, f32 = k & 2;
        gf_tensor *x64 = ag_vec(DV(1, 2, 3), 3);
        gf_tensor *x = gf_to_dtype(x64, f32 ? GF_F32 : GF_F64);
        CHECK_OK(gf_tensor_set_requires_grad(x, true));
        gf_tensor *y = mx ? gf_maximum_scalar(x, 2.0) : gf_minimum_scalar(x, 2.0);
        gf_tensor *yi = mx ? gf_maximum_scalar_int(x, 2) : gf_minimum_scalar_int(x, 2);
        CHECK_OK(y ? ag_backward_ones(y, -1, false) : gf_last_status());
        if (mx) CHECK_GRAD(x, DV(0, 0.5, 1), 3, 0);
        else CHECK_GRAD(x, DV(1, 0.5, 0), 3, 0);
        CHECK_OK(gf_tensor_set_grad(x, NULL));
        CHECK_OK(yi ? ag_backward_ones(yi, -1, false) : gf_last_status());
        if (mx) CHECK_GRAD(x, DV(0, 0.5, 1), 3, 0);
        else CHECK_GRAD(x, DV(1, 0.5, 0), 3, 0);
        gf_tensor_release(yi);
        gf_tensor_release(y);
        gf_tensor_release(x);
        gf_tensor_release(x64);
    }
}

int main(void) {
    RUN(rule02_accumulates_into_the_same_tensor);
    RUN(rule02_first_grad_never_aliases_the_engines);
    RUN(rule02_grad_set_by_the_user);
    RUN(rule02_create_graph_then_plain_backward);
    RUN(rule24_std_at_zero_variance_is_zero);
    RUN(rule24_std_second_order_at_zero_variance);
    RUN(rule24_maximum_minimum_scalar_ties_give_half);
    return ag_finish();
}
