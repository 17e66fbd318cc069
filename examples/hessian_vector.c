/* SPDX-License-Identifier: BSD-3-Clause */
/* hessian_vector — a Hessian-vector product by double backward, checked
 * against the analytic Hessian.
 *
 * f is the n-dimensional Rosenbrock function
 *     f(x) = sum_{i<n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2,
 * written with graft's ops. Its Hessian H is tridiagonal:
 *     H[i][i]   = 1200 x[i]^2 - 400 x[i+1] + 2   (i < n-1)  + 200 (i > 0)
 *     H[i][i+1] = H[i+1][i] = -400 x[i]
 * H v is computed without forming H (Pearlmutter's trick, as
 * torch.autograd.functional.hvp does):
 *     g  = gf_grad(f, x, create_graph)     the gradient, itself with a graph
 *     Hv = gf_grad(g, x, grad_outputs = v)  = d(g . v)/dx
 * The program checks g and Hv for a random v against the formulas above, then
 * builds all of H from n products with unit vectors (one graph for g, kept
 * with retain_graph) and checks every entry, and its symmetry.
 *
 * It runs on the device GRAFT_DEVICE names, in f64 where the device stores
 * it, else in f32 with a matching tolerance. Exit status 0 when every check
 * passes, 1 otherwise. */
#include <math.h>
#include <stdio.h>

#include "graft.h"

#define N 6

static int failures;

static void check(bool ok, const char *what) {
    printf("%-56s %s\n", what, ok ? "ok" : "FAILED");
    if (!ok) {
        failures++;
        if (gf_last_status() != GF_OK) printf("  graft error: %s\n", gf_last_error());
    }
}

/* The Rosenbrock function of x [n]: a 0-dim tensor, new reference. */
static gf_tensor *rosenbrock(const gf_tensor *x) {
    int64_t n = gf_tensor_size(x, 0);
    gf_scope_begin();
    gf_tensor *head = gf_slice(x, 0, 0, n - 1, 1); /* x[i],   i < n-1 */
    gf_tensor *tail = gf_slice(x, 0, 1, n, 1);     /* x[i+1]          */
    gf_tensor *a = gf_mul_scalar(gf_square(gf_sub(tail, gf_square(head))), 100.0);
    gf_tensor *b = gf_square(gf_rsub_scalar(head, 1.0));
    gf_tensor *f = gf_scope_keep(gf_sum(gf_add(a, b), NULL, 0, false));
    gf_scope_end();
    return f;
}

/* The analytic gradient and Hessian at x. */
static void analytic(const double *x, double *grad, double h[N][N]) {
    for (int i = 0; i < N; i++) {
        grad[i] = 0;
        for (int j = 0; j < N; j++) h[i][j] = 0;
    }
    for (int i = 0; i < N - 1; i++) {
        double t = x[i + 1] - x[i] * x[i];
        grad[i] += -400 * x[i] * t - 2 * (1 - x[i]);
        grad[i + 1] += 200 * t;
        h[i][i] += 1200 * x[i] * x[i] - 400 * x[i + 1] + 2;
        h[i + 1][i + 1] += 200;
        h[i][i + 1] = h[i + 1][i] = -400 * x[i];
    }
}

/* Copies a tensor of N elements to doubles. A scope of its own releases the
 * f64 copy: inside a scope, what graft returns belongs to the scope, so
 * helpers never mix scopes with explicit releases. */
static bool to_doubles(const gf_tensor *t, double *out) {
    gf_scope_begin();
    gf_tensor *d = t ? gf_to_dtype(t, GF_F64) : NULL;
    bool ok = d && gf_tensor_numel(d) == N && gf_tensor_to_host(d, out, N * sizeof *out) == GF_OK;
    gf_scope_end();
    return ok;
}

/* Largest |a - b| / (1 + |b|) over n values. */
static double rel_err(const double *a, const double *b, int n) {
    double e = 0;
    for (int i = 0; i < n; i++) e = fmax(e, fabs(a[i] - b[i]) / (1 + fabs(b[i])));
    return e;
}

/* f64 when the device computes every op used here in f64 (some GPUs store
 * f64 but provide few kernels for it), else f32: a trial Hessian-vector
 * product on a small f64 input decides. */
static gf_dtype pick_dtype(gf_device *dev) {
    gf_device_info info;
    if (gf_device_get_info(dev, &info) != GF_OK || !(info.dtypes & (1u << GF_F64))) return GF_F32;
    gf_scope_begin();
    gf_tensor *x = gf_full((const int64_t[]){3}, 1, 0.5, GF_F64, dev), *g = NULL, *hv = NULL;
    gf_grad_opts cg = {.retain_graph = -1, .create_graph = true}; /* -1: as create_graph */
    bool ok = x && gf_tensor_set_requires_grad(x, true) == GF_OK;
    /* rosenbrock() hands back a reference of its own (gf_scope_keep takes
     * it out of every scope): it is released by hand, after the scope. */
    gf_tensor *f = ok ? rosenbrock(x) : NULL;
    ok = f && gf_grad(&f, 1, NULL, &x, 1, &g, &cg) == GF_OK;
    gf_tensor *v = ok ? gf_ones_like(g) : NULL;
    ok = v && gf_grad(&g, 1, &v, &x, 1, &hv, NULL) == GF_OK;
    gf_scope_end();
    gf_tensor_release(f);
    if (!ok) {
        printf("f64 on this device: %s\nusing f32\n", gf_last_error());
        gf_clear_error();
    }
    return ok ? GF_F64 : GF_F32;
}

int main(void) {
    gf_device *dev = gf_device_default();
    if (!dev) {
        fprintf(stderr, "hessian_vector: %s\n", gf_last_error());
        return 1;
    }
    gf_dtype dt = pick_dtype(dev);
    /* Entries of H reach ~4e3 here: f32 keeps about 7 significant digits. */
    double tol = dt == GF_F64 ? 1e-12 : 1e-4;
    printf("device %s (%s), dtype %s, n = %d\n", gf_device_spec(dev), gf_device_name(dev),
           gf_dtype_name(dt), N);

    const double xv[N] = {-1.2, 1.0, 0.5, -0.3, 0.8, 1.1};
    double grad_want[N], h[N][N], v[N], hv_want[N], got[N];
    analytic(xv, grad_want, h);

    gf_manual_seed(7);
    gf_tensor *x64 = gf_from_data(xv, (const int64_t[]){N}, 1, GF_F64, dev);
    gf_tensor *x = gf_to_dtype(x64, dt); /* x64 itself when dt is f64 */
    gf_tensor_release(x64);
    gf_tensor *vt = gf_randn((const int64_t[]){N}, 1, dt, dev);
    gf_tensor *f = NULL, *g = NULL, *hv = NULL;
    if (!x || !vt || gf_tensor_set_requires_grad(x, true) != GF_OK || !to_doubles(vt, v)) {
        fprintf(stderr, "hessian_vector: %s\n", gf_last_error());
        failures++;
        goto done;
    }
    for (int i = 0; i < N; i++) {
        hv_want[i] = 0;
        for (int j = 0; j < N; j++) hv_want[i] += h[i][j] * v[j];
    }

    /* g = df/dx with a graph of its own (create_graph), kept for the n + 1
     * backward passes below (retain_graph). */
    f = rosenbrock(x);
    gf_grad_opts keep = {.retain_graph = 1, .create_graph = true};
    check(f && gf_grad(&f, 1, NULL, &x, 1, &g, &keep) == GF_OK, "g = gf_grad(f, x, create_graph)");
    check(to_doubles(g, got) && rel_err(got, grad_want, N) <= tol,
          "g matches the analytic gradient");
    check(g && gf_tensor_requires_grad(g), "g has a graph (requires grad)");

    /* Hv = d(g . v)/dx: g is not a scalar, so v is its grad_output. */
    gf_grad_opts again = {.retain_graph = 1};
    check(g && gf_grad(&g, 1, &vt, &x, 1, &hv, &again) == GF_OK, "Hv = gf_grad(g, x, v)");
    check(to_doubles(hv, got) && rel_err(got, hv_want, N) <= tol,
          "Hv matches H v with the analytic H");
    printf("  Hv = [");
    for (int i = 0; i < N; i++) printf("%s%.6g", i ? ", " : "", got[i]);
    printf("]\n");

    /* The whole Hessian, column by column: H e_j. Everything made inside the
     * scope, gf_grad's results included, is released by gf_scope_end. */
    double h_got[N][N];
    bool ok = g != NULL;
    for (int j = 0; j < N && ok; j++) {
        gf_scope_begin();
        gf_tensor *e = gf_zeros((const int64_t[]){N}, 1, dt, dev);
        ok = e && gf_fill_(gf_select(e, 0, j), 1.0) == GF_OK;
        gf_tensor *col = NULL;
        ok = ok && gf_grad(&g, 1, &e, &x, 1, &col, &again) == GF_OK;
        double c[N];
        ok = ok && to_doubles(col, c);
        for (int i = 0; ok && i < N; i++) h_got[i][j] = c[i];
        gf_scope_end(); /* releases e, its view and col */
    }
    double err = 0, asym = 0;
    for (int i = 0; ok && i < N; i++) {
        err = fmax(err, rel_err(h_got[i], h[i], N));
        for (int j = 0; j < N; j++) asym = fmax(asym, fabs(h_got[i][j] - h_got[j][i]));
    }
    check(ok && err <= tol, "H from n products matches the analytic Hessian");
    check(ok && asym <= tol * 1e3, "H is symmetric");
    printf("  largest relative error %.3g\n", err);

done:
    gf_tensor_release(hv);
    gf_tensor_release(g);
    gf_tensor_release(f);
    gf_tensor_release(vt);
    gf_tensor_release(x);
    if (gf_shutdown() != GF_OK) {
        fprintf(stderr, "hessian_vector: gf_shutdown: %s\n", gf_last_error());
        failures++;
    }
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
