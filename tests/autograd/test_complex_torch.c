/* SPDX-License-Identifier: BSD-3-Clause */
/* test_complex_torch.c — complex programs against PyTorch: the values y, the
 * loss L and the gradients of L that torch.autograd computes, recorded in
 * complex_expected.h by tools/expected/gen_complex_expected.py (same programs, same
 * order; the script says how to regenerate it). Run on the device that
 * stores complex tensors. */
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "complex_device.h"
#include "complex_expected.h"

static gf_device *dev;

typedef gf_tensor *(*program)(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x);

static gf_tensor *p_mul(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_mul(z, w);
}
static gf_tensor *p_div_add_real(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m;
    return gf_add(gf_div(z, w), x);
}
static gf_tensor *p_exp_log(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_sub(gf_exp(z), gf_log(w));
}
static gf_tensor *p_sqrt_sin(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_mul(gf_sqrt(z), gf_sin(w));
}
static gf_tensor *p_cos_tanh(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_add(gf_cos(z), gf_tanh(w));
}
static gf_tensor *p_sinh_cosh(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_mul(gf_sinh(z), gf_cosh(w));
}
static gf_tensor *p_sigmoid_square(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_add(gf_sigmoid(z), gf_square(w));
}
static gf_tensor *p_pow(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_pow(z, w);
}
static gf_tensor *p_reciprocal_cube(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)w, (void)m, (void)x;
    return gf_add(gf_reciprocal(z), gf_pow_scalar(z, 3.0));
}
static gf_tensor *p_matmul(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)w, (void)x;
    return gf_matmul(z, m);
}
static gf_tensor *p_conj_mul(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_mul(gf_conj(z), w);
}
static gf_tensor *p_complex_parts(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m;
    return gf_complex(gf_mul(gf_real(z), x), gf_imag(w));
}
static gf_tensor *p_polar(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_polar(gf_abs(z), gf_angle(w));
}
static gf_tensor *p_abs_angle_real(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_sub(gf_add(gf_mul(gf_abs(z), gf_angle(w)), gf_real(z)), gf_imag(w));
}
static gf_tensor *p_view_as_real(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)w, (void)m, (void)x;
    return gf_view_as_complex(gf_add_scalar(gf_mul_scalar(gf_view_as_real(z), 2.0), 1.0));
}
static gf_tensor *p_sum_prod(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    int d = 1;
    return gf_mul(gf_sum(z, &d, 1, false), gf_prod(w, &d, 1, false));
}
static gf_tensor *p_where(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m;
    return gf_mul(gf_where(gf_gt_scalar(x, 0.0), z, w), z);
}
static gf_tensor *p_mean_neg_rsqrt(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)m, (void)x;
    return gf_sub(gf_add(gf_mean(z, NULL, 0, false), gf_neg(w)), gf_rsqrt(z));
}
static gf_tensor *p_linear(gf_tensor *z, gf_tensor *w, gf_tensor *m, gf_tensor *x) {
    (void)x;
    return gf_linear(z, w, gf_select(m, 0, 0));
}

static const program programs[] = {
    p_mul,          p_div_add_real,  p_exp_log,        p_sqrt_sin,        p_cos_tanh,
    p_sinh_cosh,    p_sigmoid_square, p_pow,           p_reciprocal_cube, p_matmul,
    p_conj_mul,     p_complex_parts, p_polar,          p_abs_angle_real,  p_view_as_real,
    p_sum_prod,     p_where,         p_mean_neg_rsqrt, p_linear,
};
#define N_PROGRAMS (sizeof programs / sizeof programs[0])
_Static_assert(N_PROGRAMS == sizeof cx_expected_cases / sizeof cx_expected_cases[0],
               "one program per expected case (tools/expected/gen_complex_expected.py)");

/* t's values, row-major, complex as (re, im) pairs, against want. */
static void check_values(const char *what, const char *prog, const gf_tensor *t,
                         const double *want, int n_want, double tol) {
    CHECK_MSG(t != NULL, "%s %s: %s", prog, what, gf_last_error());
    if (!t) return;
    gf_scope_begin();
    gf_tensor *c = gf_contiguous(t);
    gf_tensor *r = gf_tensor_dtype(c) == GF_C128 ? gf_view_as_real(c) : c;
    double got[12] = {0};
    int n = (int)gf_tensor_numel(r);
    CHECK_MSG(n == n_want, "%s %s: %d values, expected %d", prog, what, n, n_want);
    if (n == n_want && n <= 12) {
        CHECK(gf_tensor_to_host(r, got, sizeof(double) * (size_t)n) == GF_OK);
        for (int i = 0; i < n; i++)
            CHECK_MSG(check_close_(got[i], want[i], tol, tol), "%s %s[%d]: %.17g vs torch %.17g",
                      prog, what, i, got[i], want[i]);
    }
    gf_scope_end();
}

static void test_against_torch(void) {
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    gf_tensor *in[4] = {
        gf_from_data(cx_in_z, s23, 2, GF_C128, dev), gf_from_data(cx_in_w, s23, 2, GF_C128, dev),
        gf_from_data(cx_in_m, s32, 2, GF_C128, dev), gf_from_data(cx_in_x, s23, 2, GF_F64, dev)};
    for (int k = 0; k < 4; k++) {
        CHECK_MSG(in[k] != NULL, "%s", gf_last_error());
        if (!in[k]) return;
        CHECK(gf_tensor_set_requires_grad(in[k], true) == GF_OK);
    }
    const int numel[4] = {6, 6, 6, 6};
    for (size_t p = 0; p < N_PROGRAMS; p++) {
        const cx_expected *e = &cx_expected_cases[p];
        gf_scope_begin();
        gf_tensor *y = programs[p](in[0], in[1], in[2], in[3]);
        CHECK_MSG(y != NULL, "%s: %s", e->name, gf_last_error());
        if (!y) {
            gf_scope_end();
            continue;
        }
        CHECK_MSG(gf_dtype_is_complex(gf_tensor_dtype(y)) == e->y_complex, "%s: y is %s", e->name,
                  gf_dtype_name(gf_tensor_dtype(y)));
        check_values("y", e->name, y, e->y, e->y_numel * (e->y_complex ? 2 : 1), 1e-12);
        gf_tensor *loss = e->y_complex ? gf_sum(gf_abs(y), NULL, 0, false)
                                       : gf_sum(gf_mul(y, y), NULL, 0, false);
        check_values("L", e->name, loss, &e->loss, 1, 1e-12);
        gf_tensor *wrt[4];
        int used[4], n_used = 0;
        for (int k = 0; k < 4; k++)
            if (e->uses[k]) {
                used[n_used] = k;
                wrt[n_used++] = in[k];
            }
        gf_tensor *grads[4] = {0};
        gf_grad_opts go = {.retain_graph = -1};
        gf_status s = gf_grad(&loss, 1, NULL, wrt, n_used, grads, &go);
        CHECK_MSG(s == GF_OK, "%s: gf_grad: %s", e->name, gf_last_error());
        for (int j = 0; s == GF_OK && j < n_used; j++) {
            int k = used[j];
            char what[32];
            snprintf(what, sizeof what, "grad %c", "zwmx"[k]);
            check_values(what, e->name, grads[j], e->grad[k], numel[k] * (k < 3 ? 2 : 1), 1e-11);
        }
        gf_scope_end();
    }
    for (int k = 0; k < 4; k++) gf_tensor_release(in[k]);
}

static bool stores_c128(gf_device *d) {
    gf_device_info di;
    return d && gf_device_get_info(d, &di) == GF_OK && (di.dtypes & (1u << GF_C128));
}

int main(void) {
    if (complex_device_absent()) return 77;
    /* The default device (GRAFT_DEVICE) when it stores c128, else the first
     * device that does. */
    gf_device *def = gf_device_default();
    if (stores_c128(def)) dev = def;
    for (int i = 0; i < gf_device_count() && !dev; i++)
        if (stores_c128(gf_device_at(i))) dev = gf_device_at(i);
    CHECK_MSG(dev != NULL, "no device stores c128 (the reference plugin does)");
    check_complex_device(dev);
    if (dev) RUN(test_against_torch);
    return CHECK_REPORT();
}
