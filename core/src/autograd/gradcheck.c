/* SPDX-License-Identifier: BSD-3-Clause */
/* gradcheck.c — numerical checks of backward formulas.
 *
 * gradcheck compares, for every (output element, input element) pair, the
 * analytical Jacobian (one backward per output element, with a one-hot
 * grad_output) against central differences of the forward. gradgradcheck
 * runs gradcheck on the scalar sum_i <d(v . f)/d x_i, w_i> for fixed
 * pseudo-random v and w, which exercises every second-derivative formula
 * through create_graph.
 *
 * Complex tensors are checked in real coordinates, as PyTorch's gradcheck
 * does: a complex input of n elements is 2n real coordinates (re, im of
 * each), each perturbed on its own, so both Wirtinger derivatives are
 * checked; a complex output is 2n real outputs, whose one-hot grad_outputs
 * are 1 and i. In PyTorch's convention the gradient of a complex input is
 * then d/dre + i d/dim of the real output coordinate, which its (re, im)
 * pair gives directly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"
#include "fwad/fw_internal.h"

typedef struct host_vec {
    double *v;
    int64_t n;
} host_vec;

/* t itself, or for a complex t the real view of its (re, im) pairs: the
 * real coordinates the check works in. New reference, no history. */
static gf_tensor *coords(const gf_tensor *t) {
    return gf_dtype_is_complex(t->dtype) ? gf__parts_view(t) : gf__ag_alias(t);
}

/* Reads t's real coordinates as f64 into a new host buffer (row-major). */
static gf_status to_host(const gf_tensor *t_in, host_vec *out) {
    gf_tensor *t = coords(t_in);
    if (!t) return gf__status();
    out->n = gf__numel(t);
    out->v = malloc((size_t)(out->n ? out->n : 1) * sizeof(double));
    if (!out->v) return gf__error(GF_ERR_OUT_OF_MEMORY, "gradcheck: out of host memory");
    int saved = gf__scope_suspend();
    gf_tensor *d = gf_to_dtype(t, GF_F64);
    gf__scope_resume(saved);
    gf_status s = d ? gf_tensor_to_host(d, out->v, (size_t)out->n * sizeof(double)) : gf__status();
    gf_tensor_release(d);
    gf_tensor_release(t);
    return s;
}

/* Real coordinates of t: numel, twice that for a complex t. */
static int64_t n_coords(const gf_tensor *t) {
    return gf__numel(t) * (gf_dtype_is_complex(t->dtype) ? 2 : 1);
}

/* Writes host f64 values into t's real coordinates (any dtype, any
 * strides), without history. */
static gf_status from_host(gf_tensor *t_in, const double *v) {
    gf_tensor *t = coords(t_in);
    if (!t) return gf__status();
    int64_t n = gf__numel(t);
    int64_t one = n;
    gf_tensor *d = gf__empty(&one, 1, GF_F64, t->storage->device);
    gf_status s = d ? gf__dev_write(d->storage->device, d->storage->buffer, 0, v,
                                    (uint64_t)n * sizeof(double))
                    : gf__status();
    if (s == GF_OK) {
        int64_t cs[GF_MAX_RANK];
        gf__contiguous_strides(t->sizes, t->rank, cs);
        gf_tensor *shaped = gf__view(d, t->sizes, cs, t->rank, 0);
        s = shaped ? gf__copy_into(t, shaped) : gf__status();
        gf_tensor_release(shaped);
    }
    gf_tensor_release(d);
    if (s == GF_OK) gf__bump_version(t);
    gf_tensor_release(t);
    return s;
}

static gf_tensor *call_fn(gf_check_fn fn, gf_tensor *const *inputs, int n, void *user) {
    int saved = gf__scope_suspend();
    uint64_t seq = gf__error_seq();
    gf_tensor *out = fn(inputs, n, user);
    gf__scope_resume(saved);
    /* Its own error, or that of a graft call inside it; never an older one. */
    if (!out && gf__error_seq() != seq && gf__status() != GF_OK)
        gf__callback_failed(gf__status(), seq, "gradcheck: the function");
    else if (!out)
        gf__error(GF_ERR_INVALID, "gradcheck: the function returned NULL without recording an "
                  "error (say why with gf_set_error)");
    return out;
}

static gf_status check_args(gf_check_fn fn, gf_tensor *const *inputs, int n, const char *op) {
    if (!fn || !inputs || n < 1) return gf__error(GF_ERR_INVALID, "%s: fn and inputs are required", op);
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (!inputs[i]) return gf__null_arg(op, "an input");
        any |= gf__ag_requires_grad(inputs[i]);
    }
    if (!any)
        return gf__error(GF_ERR_INVALID, "%s: no input requires grad; set requires_grad on the "
                         "inputs to check", op);
    return GF_OK;
}

/* The forward-mode column of input k's coordinate j: the tangent of fn's
 * output (its real coordinates) when input k carries a one-hot tangent
 * there, at a dual level of its own. */
static gf_status forward_column(gf_check_fn fn, gf_tensor *const *inputs, int n, void *user,
                                int k, int64_t j, int64_t n_coords_k, host_vec *col) {
    int level;
    gf_status s = gf_fwad_level_enter(&level);
    if (s != GF_OK) return s;
    gf_tensor **duals = calloc((size_t)n, sizeof *duals);
    double *onehot = calloc((size_t)(n_coords_k ? n_coords_k : 1), sizeof *onehot);
    gf_tensor *tan = NULL, *out = NULL, *t = NULL;
    if (!duals || !onehot) s = gf__error(GF_ERR_OUT_OF_MEMORY, "gradcheck: out of host memory");
    if (s == GF_OK) {
        onehot[j] = 1.0;
        tan = gf__empty(inputs[k]->sizes, inputs[k]->rank, inputs[k]->dtype,
                        inputs[k]->storage->device);
        s = tan ? from_host(tan, onehot) : gf__status();
    }
    /* The dual is a view of its input with the input's history (made in
     * grad mode even while the numerical evaluation runs without), so a
     * function that differentiates its inputs (gradgradcheck's) can. */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_GRAD);
    for (int i = 0; i < n && s == GF_OK; i++) {
        duals[i] = i == k ? gf_fwad_make_dual(inputs[i], tan, level) : gf_tensor_retain(inputs[i]);
        if (!duals[i]) s = gf__status();
    }
    gf_grad_mode_set(prev);
    if (s == GF_OK && !(out = call_fn(fn, duals, n, user))) s = gf__status();
    if (s == GF_OK) s = gf_fwad_unpack_dual(out, level, NULL, &t);
    if (s == GF_OK && !t && !(t = gf_zeros_like(out))) s = gf__status();
    if (s == GF_OK) s = to_host(t, col);
    for (int i = 0; duals && i < n; i++) gf_tensor_release(duals[i]);
    free(duals);
    free(onehot);
    gf_tensor_release(tan);
    gf_tensor_release(out);
    gf_tensor_release(t);
    gf_status e = gf_fwad_level_exit(level);
    return s == GF_OK ? e : s;
}

static gf_status gradcheck_impl(gf_check_fn fn, gf_tensor *const *inputs, int n, void *user,
                                const gf_gradcheck_opts *opts) {
    gf_status s = check_args(fn, inputs, n, "gf_gradcheck");
    if (s != GF_OK) return s;
    gf_gradcheck_opts co = GF_GRADCHECK_OPTS_DEFAULT;
    if (opts) co = *opts;
    if (gf__opts_check("gf_gradcheck", "gf_gradcheck_opts", "GF_GRADCHECK_OPTS_DEFAULT",
                       co.init) != GF_OK)
        return gf__status();
    if (!(co.eps > 0) || isinf(co.eps) || !(co.atol >= 0) || !(co.rtol >= 0))
        return gf__error(GF_ERR_INVALID, "gf_gradcheck: eps %g, atol %g, rtol %g: eps must be "
                         "finite and > 0 (the finite-difference step), atol and rtol >= 0",
                         co.eps, co.atol, co.rtol);
    double eps = co.eps, atol = co.atol, rtol = co.rtol;
    bool determinism = !co.skip_determinism;

    gf_tensor *out = call_fn(fn, inputs, n, user);
    if (!out) return gf__status();
    if (!gf__dtype_differentiable(out->dtype)) {
        /* read before the release: out may be the only reference */
        const char *dt = gf_dtype_name(out->dtype);
        gf_tensor_release(out);
        return gf__error(GF_ERR_DTYPE, "gf_gradcheck: the function's output is %s; it must be "
                         "floating point or complex (convert it with gf_to_dtype)", dt);
    }
    int64_t n_out = n_coords(out);
    gf_tensor **rg = calloc((size_t)n, sizeof *rg);
    int *rg_index = calloc((size_t)n, sizeof *rg_index);
    gf_tensor **res = calloc((size_t)n, sizeof *res), **res2 = calloc((size_t)n, sizeof *res2);
    host_vec *analytic = calloc((size_t)n, sizeof *analytic);
    if (!rg || !rg_index || !res || !res2 || !analytic)
        s = gf__error(GF_ERR_OUT_OF_MEMORY, "gf_gradcheck: out of host memory");
    int m = 0;
    for (int i = 0; i < n && s == GF_OK; i++)
        if (gf__ag_requires_grad(inputs[i]) && gf__dtype_differentiable(inputs[i]->dtype)) {
            rg[m] = inputs[i];
            rg_index[m++] = i;
        }
    /* Analytical Jacobian, row by row: analytic[k].v[o * numel_k + j]. */
    for (int k = 0; k < m && s == GF_OK; k++) {
        int64_t nk = n_coords(rg[k]);
        analytic[k].n = nk * n_out;
        analytic[k].v = calloc((size_t)(analytic[k].n ? analytic[k].n : 1), sizeof(double));
        if (!analytic[k].v) s = gf__error(GF_ERR_OUT_OF_MEMORY, "gf_gradcheck: out of host memory");
    }
    double *onehot = calloc((size_t)(n_out ? n_out : 1), sizeof(double));
    if (!onehot && s == GF_OK) s = gf__error(GF_ERR_OUT_OF_MEMORY, "gf_gradcheck: out of memory");
    gf_grad_opts go = {.retain_graph = 1, .allow_unused = true, .materialize_grads = true};
    bool out_requires = gf__ag_requires_grad(out);
    for (int64_t o = 0; o < n_out && s == GF_OK && out_requires; o++) {
        memset(onehot, 0, (size_t)n_out * sizeof(double));
        onehot[o] = 1.0;
        gf_tensor *g = gf__empty(out->sizes, out->rank, out->dtype, out->storage->device);
        s = g ? from_host(g, onehot) : gf__status();
        if (s == GF_OK) s = gf_grad(&out, 1, &g, rg, m, res, &go);
        if (s == GF_OK && determinism) s = gf_grad(&out, 1, &g, rg, m, res2, &go);
        gf_tensor_release(g);
        for (int k = 0; k < m && s == GF_OK; k++) {
            host_vec a = {0}, b = {0};
            s = to_host(res[k], &a);
            if (s == GF_OK && determinism) s = to_host(res2[k], &b);
            for (int64_t j = 0; j < a.n && s == GF_OK; j++) {
                analytic[k].v[o * a.n + j] = a.v[j];
                if (determinism && a.v[j] != b.v[j] && !(isnan(a.v[j]) && isnan(b.v[j])))
                    s = gf__error(GF_ERR_AUTOGRAD, "gf_gradcheck: backward is not deterministic: "
                                  "two runs gave %.17g and %.17g for output element %lld, input "
                                  "%d element %lld", a.v[j], b.v[j], (long long)o, rg_index[k],
                                  (long long)j);
            }
            free(a.v);
            free(b.v);
        }
        for (int k = 0; k < m; k++) {
            gf_tensor_release(res[k]);
            gf_tensor_release(res2[k]);
            res[k] = res2[k] = NULL;
        }
    }
    /* Numerical Jacobian by central differences, column by column. */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    for (int k = 0; k < m && s == GF_OK; k++) {
        host_vec x = {0};
        s = to_host(rg[k], &x);
        for (int64_t j = 0; j < x.n && s == GF_OK; j++) {
            double orig = x.v[j];
            host_vec plus = {0}, minus = {0};
            x.v[j] = orig + eps;
            s = from_host(rg[k], x.v);
            gf_tensor *fp = s == GF_OK ? call_fn(fn, inputs, n, user) : NULL;
            if (s == GF_OK && !fp) s = gf__status();
            if (s == GF_OK) s = to_host(fp, &plus);
            x.v[j] = orig - eps;
            if (s == GF_OK) s = from_host(rg[k], x.v);
            gf_tensor *fm = s == GF_OK ? call_fn(fn, inputs, n, user) : NULL;
            if (s == GF_OK && !fm) s = gf__status();
            if (s == GF_OK) s = to_host(fm, &minus);
            x.v[j] = orig;
            gf_status r = from_host(rg[k], x.v);
            if (s == GF_OK) s = r;
            for (int64_t o = 0; o < n_out && s == GF_OK; o++) {
                double num = (plus.v[o] - minus.v[o]) / (2 * eps);
                double ana = out_requires ? analytic[k].v[o * x.n + j] : 0.0;
                bool ok = fabs(ana - num) <= atol + rtol * fabs(num) ||
                          (isnan(ana) && isnan(num));
                if (!ok)
                    s = gf__error(GF_ERR_AUTOGRAD, "gf_gradcheck: Jacobian mismatch for output "
                                  "element %lld with respect to input %d element %lld: numerical "
                                  "%.8g, analytical %.8g (atol %g, rtol %g)", (long long)o,
                                  rg_index[k], (long long)j, num, ana, atol, rtol);
            }
            host_vec fwd = {0};
            if (s == GF_OK && co.check_forward_ad)
                s = forward_column(fn, inputs, n, user, rg_index[k], j, x.n, &fwd);
            for (int64_t o = 0; o < fwd.n && s == GF_OK; o++) {
                double num = (plus.v[o] - minus.v[o]) / (2 * eps);
                bool ok = fabs(fwd.v[o] - num) <= atol + rtol * fabs(num) ||
                          (isnan(fwd.v[o]) && isnan(num));
                if (!ok)
                    s = gf__error(GF_ERR_AUTOGRAD, "gf_gradcheck: forward-mode Jacobian mismatch "
                                  "for output element %lld with respect to input %d element "
                                  "%lld: numerical %.8g, forward mode (jvp) %.8g (atol %g, rtol "
                                  "%g)", (long long)o, rg_index[k], (long long)j, num, fwd.v[o],
                                  atol, rtol);
            }
            free(fwd.v);
            gf_tensor_release(fp);
            gf_tensor_release(fm);
            free(plus.v);
            free(minus.v);
        }
        free(x.v);
    }
    gf_grad_mode_set(prev);
    for (int k = 0; analytic && k < m; k++) free(analytic[k].v);
    free(analytic);
    free(onehot);
    free(res);
    free(res2);
    free(rg);
    free(rg_index);
    gf_tensor_release(out);
    return s;
}

/* ------------------------------------------------------------ gradgradcheck */
static gf_status gradgradcheck_impl(gf_check_fn fn, gf_tensor *const *inputs, int n, void *user,
                                    const gf_gradcheck_opts *opts);
typedef struct gg_ctx {
    gf_check_fn fn;
    void *user;
    gf_tensor *v;    /* fixed grad_output for fn */
    gf_tensor **w;   /* fixed weights per input (NULL for inputs not requiring grad) */
} gg_ctx;

static double lcg(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static gf_tensor *random_like(const gf_tensor *t, uint64_t *state) {
    gf_tensor *r = gf__empty(t->sizes, t->rank, t->dtype, t->storage->device);
    int64_t n = n_coords(t);
    double *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    gf_status s = (r && h) ? GF_OK : gf__error(GF_ERR_OUT_OF_MEMORY, "gradgradcheck: out of memory");
    for (int64_t i = 0; i < n && s == GF_OK; i++) h[i] = lcg(state);
    if (s == GF_OK) s = from_host(r, h);
    free(h);
    if (s != GF_OK) {
        gf_tensor_release(r);
        return NULL;
    }
    return r;
}

static gf_tensor *gg_fn_graph(gf_tensor *const *inputs, int n, gg_ctx *c);

/* First derivatives need a graph even while gradcheck evaluates the
 * function numerically under no-grad. */
static gf_tensor *gg_fn(gf_tensor *const *inputs, int n, void *user) {
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_GRAD);
    gf_tensor *r = gg_fn_graph(inputs, n, user);
    if (r && prev != GF_GRAD_MODE_GRAD) { /* numerical evaluation: no history wanted */
        gf_tensor *d = gf__ag_alias(r);
        /* ... but its tangents (forward-mode checks of the gradient) */
        gf_fw_entry *tangents = NULL;
        if (d && gf__fw_snapshot(r, &tangents) == GF_OK && gf__fw_restore(d, tangents) != GF_OK) {
            gf_tensor_release(d);
            d = NULL;
        }
        gf__fw_entries_free(tangents);
        gf_tensor_release(r);
        r = d;
    }
    gf_grad_mode_set(prev);
    return r;
}

static gf_tensor *gg_fn_graph(gf_tensor *const *inputs, int n, gg_ctx *c) {
    gf_tensor *out = c->fn(inputs, n, c->user);
    if (!out) return NULL;
    gf_tensor **rg = calloc((size_t)n, sizeof *rg), **res = calloc((size_t)n, sizeof *res);
    int m = 0;
    for (int i = 0; rg && i < n; i++)
        if (c->w[i]) rg[m++] = inputs[i];
    gf_grad_opts go = {.retain_graph = -1, .create_graph = true, .allow_unused = true,
                       .materialize_grads = true};
    gf_tensor *total = NULL;
    gf_status s = (rg && res) ? GF_OK : gf__error(GF_ERR_OUT_OF_MEMORY, "gradgradcheck: out of memory");
    if (s == GF_OK && gf__ag_requires_grad(out)) s = gf_grad(&out, 1, &c->v, rg, m, res, &go);
    for (int i = 0, k = 0; i < n && s == GF_OK; i++) {
        if (!c->w[i]) continue;
        gf_tensor *term = NULL;
        if (res[k]) {
            gf_tensor *p = gf_mul(res[k], c->w[i]);
            term = p ? gf_sum(p, NULL, 0, false) : NULL;
            gf_tensor_release(p);
            if (!term) s = gf__status();
        }
        k++;
        if (!term) continue;
        if (!total) total = term;
        else {
            gf_tensor *t2 = gf_add(total, term);
            gf_tensor_release(total);
            gf_tensor_release(term);
            total = t2;
            if (!total) s = gf__status();
        }
    }
    for (int k = 0; res && k < m; k++) gf_tensor_release(res[k]);
    free(rg);
    free(res);
    gf_tensor_release(out);
    if (s != GF_OK) {
        gf_tensor_release(total);
        return NULL;
    }
    if (!total) { /* no second-order dependence at all: a constant zero */
        total = gf__scalar(0.0, c->v->dtype, c->v->storage->device);
    }
    return total;
}

/* gradcheck owns every tensor it makes (it releases them itself): nothing
 * may land in a scope the caller has open. */
gf_status gf_gradcheck(gf_check_fn fn, gf_tensor *const *inputs, int n, void *user,
                       const gf_gradcheck_opts *opts) {
    int saved = gf__scope_suspend();
    gf_status s = gradcheck_impl(fn, inputs, n, user, opts);
    gf__scope_resume(saved);
    return s;
}

gf_status gf_gradgradcheck(gf_check_fn fn, gf_tensor *const *inputs, int n, void *user,
                           const gf_gradcheck_opts *opts) {
    int scope = gf__scope_suspend();
    gf_status r = gradgradcheck_impl(fn, inputs, n, user, opts);
    gf__scope_resume(scope);
    return r;
}

static gf_status gradgradcheck_impl(gf_check_fn fn, gf_tensor *const *inputs, int n, void *user,
                                    const gf_gradcheck_opts *opts) {
    gf_status s = check_args(fn, inputs, n, "gf_gradgradcheck");
    if (s != GF_OK) return s;
    gf_tensor *out = call_fn(fn, inputs, n, user);
    if (!out) return gf__status();
    if (!gf__dtype_differentiable(out->dtype)) {
        const char *dt = gf_dtype_name(out->dtype);
        gf_tensor_release(out);
        return gf__error(GF_ERR_DTYPE, "gf_gradgradcheck: the function's output is %s; it must "
                         "be floating point or complex (convert it with gf_to_dtype)", dt);
    }
    uint64_t state = 0x9E3779B97F4A7C15ull;
    gg_ctx c = {.fn = fn, .user = user};
    c.v = random_like(out, &state);
    gf_tensor_release(out);
    c.w = calloc((size_t)n, sizeof *c.w);
    if (!c.v || !c.w) s = c.v ? gf__error(GF_ERR_OUT_OF_MEMORY, "gradgradcheck: out of memory")
                               : gf__status();
    for (int i = 0; i < n && s == GF_OK; i++)
        if (gf__ag_requires_grad(inputs[i]) && gf__dtype_differentiable(inputs[i]->dtype) &&
            !(c.w[i] = random_like(inputs[i], &state)))
            s = gf__status();
    if (s == GF_OK) s = gradcheck_impl(gg_fn, inputs, n, &c, opts);
    for (int i = 0; c.w && i < n; i++) gf_tensor_release(c.w[i]);
    free(c.w);
    gf_tensor_release(c.v);
    return s;
}
