/* SPDX-License-Identifier: BSD-3-Clause */
/* custom_function — a differentiable function written in C with a
 * hand-made backward, through gf_function_apply.
 *
 * The function is Swish with a learnable slope,
 *     y = x * sigmoid(beta * x)        x: [n], beta: a 0-dim tensor,
 * whose backward is written by hand:
 *     dy/dx    = s + beta * x * s * (1 - s)      with s = sigmoid(beta * x)
 *     dy/dbeta = x^2 * s * (1 - s)               summed over x (beta broadcast)
 * It saves only x and beta and recomputes s in backward, so the graph keeps
 * one activation instead of the three a composition of built-in ops keeps.
 * The backward uses graft's differentiable ops, so under create_graph it is
 * recorded too and second derivatives work.
 *
 * The program checks, on the device GRAFT_DEVICE names:
 *  1. forward values against the closed form computed in C;
 *  2. gradients of sum(y) against the same function built from graft ops;
 *  3. gf_gradcheck (first derivatives against central differences) and
 *     gf_gradgradcheck (second derivatives), in f64 where the device stores
 *     it, else in f32 with tolerances to match.
 * Exit status 0 when every check passes, 1 otherwise. */
#include <math.h>
#include <stdio.h>

#include "graft.h"

#define N 5

/* ------------------------------------------------------------ the function */

/* inputs: x, beta. Runs with grad mode off (graft switches it). */
static gf_status swish_forward(gf_function_ctx *ctx, gf_tensor *const *in, int n_in,
                               gf_tensor **out, int n_out, void *user) {
    (void)n_in, (void)n_out, (void)user;
    /* Scopes are suspended while graft runs a callback; opening one here
     * releases the intermediates, and keep() hands the result back. */
    gf_scope_begin();
    gf_tensor *y = gf_scope_keep(gf_mul(in[0], gf_sigmoid(gf_mul(in[1], in[0]))));
    gf_scope_end();
    if (!y) return gf_last_status();
    out[0] = y;
    return gf_ctx_save_for_backward(ctx, in, 2); /* x and beta */
}

/* One gradient per input, or NULL for an input that wants none. */
static gf_status swish_backward(gf_function_ctx *ctx, gf_tensor *const *grad_out, int n_out,
                                gf_tensor **grad_in, int n_in, void *user) {
    (void)n_out, (void)n_in, (void)user;
    gf_scope_begin();
    gf_tensor *x = gf_ctx_saved_tensor(ctx, 0), *beta = gf_ctx_saved_tensor(ctx, 1);
    gf_tensor *s = gf_sigmoid(gf_mul(beta, x));
    gf_tensor *ds = gf_mul(s, gf_rsub_scalar(s, 1.0)); /* s (1 - s) */
    gf_tensor *gx = NULL, *gb = NULL;
    if (gf_ctx_needs_input_grad(ctx, 0))
        gx = gf_scope_keep(gf_mul(grad_out[0], gf_add(s, gf_mul(gf_mul(beta, x), ds))));
    if (gf_ctx_needs_input_grad(ctx, 1)) /* beta was broadcast: sum back to its shape */
        gb = gf_scope_keep(gf_sum(gf_mul(grad_out[0], gf_mul(gf_square(x), ds)), NULL, 0, false));
    gf_status st = gf_last_status();
    gf_scope_end();
    bool ok = (!gf_ctx_needs_input_grad(ctx, 0) || gx) && (!gf_ctx_needs_input_grad(ctx, 1) || gb);
    if (!ok) {
        gf_tensor_release(gx);
        gf_tensor_release(gb);
        return st != GF_OK ? st : GF_ERR_INVALID;
    }
    grad_in[0] = gx;
    grad_in[1] = gb;
    return GF_OK;
}

static const gf_function_def swish_def = {
    .name = "LearnableSwish", /* the node's name in grad_fn and in errors */
    .forward = swish_forward,
    .backward = swish_backward,
};

/* The user-facing call: returns a new reference, NULL on error. */
static gf_tensor *learnable_swish(gf_tensor *x, gf_tensor *beta) {
    gf_tensor *in[2] = {x, beta}, *out = NULL;
    return gf_function_apply(&swish_def, in, 2, &out, 1) == GF_OK ? out : NULL;
}

/* ------------------------------------------------------------ checks */

/* The form gf_gradcheck calls: sum is not needed, it checks every element. */
static gf_tensor *swish_fn(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    return learnable_swish(in[0], in[1]);
}

/* The same function from built-in ops, as the reference for gradients. */
static gf_tensor *swish_builtin(gf_tensor *x, gf_tensor *beta) {
    gf_scope_begin();
    gf_tensor *y = gf_scope_keep(gf_mul(x, gf_sigmoid(gf_mul(beta, x))));
    gf_scope_end();
    return y;
}

static int failures;

static void check(bool ok, const char *what) {
    printf("%-58s %s\n", what, ok ? "ok" : "FAILED");
    if (!ok) {
        failures++;
        if (gf_last_status() != GF_OK) printf("  graft error: %s\n", gf_last_error());
    }
}

/* |a - b| <= tol * (1 + |b|) for every element of two tensors. The helpers
 * release through a scope of their own: inside a scope, what graft returns
 * belongs to the scope, so scopes and explicit releases are never mixed. */
static bool close_to(const gf_tensor *a, const gf_tensor *b, double tol) {
    double va[N], vb[N];
    gf_scope_begin();
    gf_tensor *da = a ? gf_to_dtype(a, GF_F64) : NULL, *db = b ? gf_to_dtype(b, GF_F64) : NULL;
    int64_t n = da ? gf_tensor_numel(da) : 0;
    bool ok = da && db && n <= N && n == gf_tensor_numel(db) &&
              gf_tensor_to_host(da, va, (size_t)n * sizeof(double)) == GF_OK &&
              gf_tensor_to_host(db, vb, (size_t)n * sizeof(double)) == GF_OK;
    gf_scope_end();
    for (int64_t i = 0; ok && i < n; i++) ok = fabs(va[i] - vb[i]) <= tol * (1 + fabs(vb[i]));
    return ok;
}

/* d sum(y) / d(x, beta) through gf_grad: two new references in g. */
static bool grads_of_sum(gf_tensor *y, gf_tensor *x, gf_tensor *beta, gf_tensor **g) {
    gf_scope_begin();
    gf_tensor *total = gf_sum(y, NULL, 0, false);
    gf_tensor *inputs[2] = {x, beta};
    bool ok = total && gf_grad(&total, 1, NULL, inputs, 2, g, NULL) == GF_OK;
    gf_scope_keep(g[0]); /* the caller owns the gradients */
    gf_scope_keep(g[1]);
    gf_scope_end();
    return ok;
}

/* f64 when the device computes every op used here in f64 (some GPUs store
 * f64 but provide few kernels for it), else f32: a trial run of the function
 * and its first and second derivatives on a small f64 input decides. */
static gf_dtype pick_dtype(gf_device *dev) {
    gf_device_info info;
    if (gf_device_get_info(dev, &info) != GF_OK || !(info.dtypes & (1u << GF_F64))) return GF_F32;
    gf_scope_begin();
    gf_tensor *x = gf_full((const int64_t[]){2}, 1, 0.5, GF_F64, dev);
    gf_tensor *beta = gf_scalar(1.0, GF_F64, dev), *g = NULL, *gg = NULL;
    gf_tensor *in[2] = {x, beta};
    gf_grad_opts cg = {.retain_graph = -1, .create_graph = true}; /* -1: as create_graph */
    bool ok = x && beta && gf_tensor_set_requires_grad(x, true) == GF_OK &&
              gf_tensor_set_requires_grad(beta, true) == GF_OK;
    gf_tensor *y = ok ? gf_sum(swish_fn(in, 2, NULL), NULL, 0, false) : NULL;
    ok = y && gf_grad(&y, 1, NULL, &x, 1, &g, &cg) == GF_OK;
    gf_tensor *gs = ok ? gf_sum(g, NULL, 0, false) : NULL;
    ok = gs && gf_grad(&gs, 1, NULL, in, 1, &gg, NULL) == GF_OK;
    gf_scope_end();
    if (!ok) {
        printf("f64 on this device: %s\nusing f32\n", gf_last_error());
        gf_clear_error();
    }
    return ok ? GF_F64 : GF_F32;
}

int main(void) {
    gf_device *dev = gf_device_default();
    if (!dev) {
        fprintf(stderr, "custom_function: %s\n", gf_last_error());
        return 1;
    }
    gf_dtype dt = pick_dtype(dev);
    bool f64 = dt == GF_F64;
    /* f32 central differences need a larger step and looser tolerances. */
    gf_gradcheck_opts gc = GF_GRADCHECK_OPTS_DEFAULT;
    if (!f64) gc.eps = 1e-2, gc.atol = 1e-2, gc.rtol = 1e-2;
    double tol = f64 ? 1e-12 : 1e-5;
    printf("device %s (%s), dtype %s\n", gf_device_spec(dev), gf_device_name(dev),
           gf_dtype_name(dt));

    const double xv[N] = {-2.0, -0.5, 0.0, 0.75, 3.0}, beta_v = 1.5;
    gf_tensor *x64 = gf_from_data(xv, (const int64_t[]){N}, 1, GF_F64, dev);
    gf_tensor *x = gf_to_dtype(x64, dt), *beta = gf_scalar(beta_v, dt, dev);
    gf_tensor *y = NULL, *yb = NULL, *g[2] = {NULL, NULL}, *gb[2] = {NULL, NULL};
    if (!x || gf_tensor_set_requires_grad(x, true) != GF_OK ||
        gf_tensor_set_requires_grad(beta, true) != GF_OK) {
        fprintf(stderr, "custom_function: %s\n", gf_last_error());
        failures++;
        goto done;
    }

    /* 1. Forward values against the closed form. */
    y = learnable_swish(x, beta);
    const char *node = gf_tensor_grad_fn_name(y);
    printf("y = learnable_swish(x, beta): grad_fn %s\n", node ? node : "(none)");
    double want[N];
    for (int i = 0; i < N; i++) want[i] = xv[i] / (1 + exp(-beta_v * xv[i]));
    gf_tensor *want_t = gf_from_data(want, (const int64_t[]){N}, 1, GF_F64, dev);
    check(close_to(y, want_t, f64 ? 1e-14 : 1e-6), "forward matches x * sigmoid(beta x)");
    gf_tensor_release(want_t);

    /* 2. The hand-written backward against autograd of the same function
     * built from graft's ops. */
    yb = swish_builtin(x, beta);
    check(grads_of_sum(y, x, beta, g) && grads_of_sum(yb, x, beta, gb),
          "gradients computed both ways");
    check(close_to(g[0], gb[0], tol), "d sum(y)/dx matches the built-in composition");
    check(close_to(g[1], gb[1], tol), "d sum(y)/dbeta matches the built-in composition");

    /* 3. Numerical checks of first and second derivatives. */
    gf_tensor *inputs[2] = {x, beta};
    check(gf_gradcheck(swish_fn, inputs, 2, NULL, &gc) == GF_OK, "gf_gradcheck");
    check(gf_gradgradcheck(swish_fn, inputs, 2, NULL, &gc) == GF_OK, "gf_gradgradcheck");

done:
    for (int i = 0; i < 2; i++) {
        gf_tensor_release(g[i]);
        gf_tensor_release(gb[i]);
    }
    gf_tensor_release(y);
    gf_tensor_release(yb);
    gf_tensor_release(x);
    gf_tensor_release(x64);
    gf_tensor_release(beta);
    if (gf_shutdown() != GF_OK) {
        fprintf(stderr, "custom_function: gf_shutdown: %s\n", gf_last_error());
        failures++;
    }
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
