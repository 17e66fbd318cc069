/* SPDX-License-Identifier: BSD-3-Clause */
/* lbfgs.c — L-BFGS (graft/autograd.h), with the
 * iteration, two-loop recursion and strong-Wolfe line search of
 * torch.optim.LBFGS (after minFunc): the same decisions in the same order,
 * so that losses and evaluation counts follow PyTorch's.
 *
 * Deviation: the flat gradient, the search direction and the curvature
 * history live on the host in f64 (PyTorch keeps them as tensors of the
 * parameters' dtype on their device); parameters are updated on their own
 * device. With f64 parameters the trajectories agree with PyTorch's to
 * rounding; with f32 ones the host's vectors are more precise. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"

struct gf_lbfgs {
    gf_lbfgs_opts o;
    int n;
    gf_tensor **params; /* references */
    int64_t numel;      /* of all parameters */
    /* state kept between steps (torch's state of the first parameter) */
    int64_t func_evals, n_iter;
    double *d, t, H_diag, prev_loss;
    double *prev_flat_grad; /* NULL before the first iteration */
    double **old_dirs, **old_stps, *ro, *al;
    int num_old;
    int caller_suspended; /* the scope recording the caller had (gf_lbfgs_step) */
};

static gf_status oom(void) { return gf__error(GF_ERR_OUT_OF_MEMORY, "L-BFGS: out of host memory"); }

gf_lbfgs *gf_lbfgs_create(gf_tensor *const *params, int n, const gf_lbfgs_opts *opts) {
    const char *op = "gf_lbfgs_create";
    gf_lbfgs_opts o = GF_LBFGS_OPTS_DEFAULT;
    if (opts) o = *opts;
    if (gf__opts_check(op, "gf_lbfgs_opts", "GF_LBFGS_OPTS_DEFAULT", o.init) != GF_OK) return NULL;
    if (o.max_eval < 0) o.max_eval = o.max_iter * 5 / 4;
    const char *bad = !(o.lr >= 0) || isinf(o.lr) ? "lr must be finite and >= 0"
                    : o.max_iter < 1 ? "max_iter must be >= 1"
                    : o.history_size < 1 ? "history_size must be >= 1"
                    : o.history_size > 100000 ? "history_size is over 100000"
                    : !(o.tolerance_grad >= 0) || !(o.tolerance_change >= 0)
                        ? "the tolerances must be >= 0"
                        : NULL;
    if (bad) {
        gf__error(GF_ERR_INVALID, "%s: %s (lr %g, max_iter %lld, history_size %lld)", op, bad, o.lr,
                  (long long)o.max_iter, (long long)o.history_size);
        return NULL;
    }
    if (n < 1 || !params) {
        gf__error(GF_ERR_INVALID, "%s: give at least one parameter (n = %d)", op, n);
        return NULL;
    }
    int64_t numel = 0;
    for (int i = 0; i < n; i++) {
        const gf_tensor *p = params[i];
        if (!p || !gf_dtype_is_float(p->dtype) || !gf_tensor_is_leaf(p) ||
            !gf_tensor_requires_grad(p)) {
            gf__error(GF_ERR_INVALID, "%s: parameter %d is %s; parameters are floating-point "
                      "leaves that require grad", op, i, !p ? "NULL" : "not one");
            return NULL;
        }
        numel += gf__numel(p);
    }
    gf_lbfgs *l = calloc(1, sizeof *l);
    gf_tensor **ps = l ? calloc((size_t)n, sizeof *ps) : NULL;
    double *d = ps ? calloc((size_t)(numel ? numel : 1), sizeof *d) : NULL;
    size_t h = (size_t)o.history_size;
    double **dirs = d ? calloc(h, sizeof *dirs) : NULL, **stps = dirs ? calloc(h, sizeof *stps) : NULL;
    double *ro = stps ? calloc(h, sizeof *ro) : NULL, *al = ro ? calloc(h, sizeof *al) : NULL;
    if (!al) {
        if (l) free(l->params);
        free(l), free(ps), free(d), free(dirs), free(stps), free(ro);
        oom();
        return NULL;
    }
    for (int i = 0; i < n; i++) ps[i] = gf_tensor_retain(params[i]);
    *l = (gf_lbfgs){.o = o, .n = n, .params = ps, .numel = numel, .d = d, .old_dirs = dirs,
                    .old_stps = stps, .ro = ro, .al = al, .H_diag = 1};
    return l;
}

void gf_lbfgs_destroy(gf_lbfgs *l) {
    if (!l) return;
    for (int i = 0; i < l->n; i++) gf_tensor_release(l->params[i]);
    for (int i = 0; i < l->num_old; i++) free(l->old_dirs[i]), free(l->old_stps[i]);
    free(l->params), free(l->d), free(l->prev_flat_grad), free(l->old_dirs), free(l->old_stps);
    free(l->ro), free(l->al);
    free(l);
}

int64_t gf_lbfgs_func_evals(const gf_lbfgs *l) { return l ? l->func_evals : -1; }
int64_t gf_lbfgs_n_iter(const gf_lbfgs *l) { return l ? l->n_iter : -1; }

/* ------------------------------------------------------------ host vectors */
static double dot(const double *a, const double *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}
static double abs_max(const double *a, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
    return m;
}

/* Every parameter's .grad (zeros where none), flattened, negated when
 * maximising. */
static gf_status gather_grad(const gf_lbfgs *l, double *out) {
    int64_t off = 0;
    for (int i = 0; i < l->n; i++) {
        gf_tensor *p = l->params[i];
        int64_t k = gf__numel(p);
        gf_tensor *g = gf_tensor_grad(p);
        gf_tensor *c = g ? gf_to_dtype(g, GF_F64) : NULL;
        gf_tensor *cc = c ? gf_contiguous(c) : NULL;
        gf_status s = !g ? GF_OK : cc ? gf_tensor_to_host(cc, out + off, (size_t)k * sizeof(double))
                                      : gf__status();
        if (!g) memset(out + off, 0, (size_t)k * sizeof(double));
        gf_tensor_release(g), gf_tensor_release(c), gf_tensor_release(cc);
        if (s != GF_OK) return s;
        off += k;
    }
    if (l->o.maximize)
        for (int64_t i = 0; i < l->numel; i++) out[i] = -out[i];
    return GF_OK;
}

/* p += step * update (no-grad, each on its device and in its dtype). */
static gf_status add_update(const gf_lbfgs *l, double step, const double *update) {
    int64_t off = 0;
    for (int i = 0; i < l->n; i++) {
        gf_tensor *p = l->params[i];
        int64_t k = gf__numel(p);
        double *v = malloc((size_t)(k ? k : 1) * sizeof *v);
        if (!v) return oom();
        for (int64_t j = 0; j < k; j++) v[j] = step * update[off + j];
        gf_tensor *u = gf_from_data(v, p->sizes, p->rank, GF_F64, p->storage->device);
        free(v);
        gf_tensor *uc = u ? gf_to_dtype(u, p->dtype) : NULL;
        gf_status s = uc ? gf_add_(p, uc) : gf__status();
        gf_tensor_release(u), gf_tensor_release(uc);
        if (s != GF_OK) return s;
        off += k;
    }
    return GF_OK;
}

/* Runs the closure with grad mode on and the caller's scope recording (its
 * intermediates belong to the caller's open scope, as if it had called the
 * closure itself); the loss as a double, its tensor released. */
static gf_status evaluate(gf_lbfgs *l, gf_lbfgs_closure fn, void *user, double *loss) {
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_GRAD);
    int ours = gf__scope_suspend();
    gf__scope_resume(l->caller_suspended);
    gf_tensor *t = gf_scope_keep(fn(user));
    gf__scope_resume(ours);
    gf_grad_mode_set(prev);
    if (!t) {
        gf_status s = gf__status();
        return s != GF_OK ? s : gf__error(GF_ERR_INVALID, "gf_lbfgs_step: the closure returned "
                                          "NULL without an error");
    }
    gf_tensor *c = gf_tensor_numel(t) == 1 ? gf_to_dtype(t, GF_F64) : NULL;
    gf_status s = c ? gf_tensor_to_host(c, loss, sizeof *loss)
                    : gf__error(GF_ERR_INVALID, "gf_lbfgs_step: the closure's loss has %lld "
                                "elements; return a one-element tensor",
                                (long long)gf_tensor_numel(t));
    gf_tensor_release(c), gf_tensor_release(t);
    if (s == GF_OK && l->o.maximize) *loss = -*loss;
    return s;
}

/* ------------------------------------------------------------ line search */
/* The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), within
 * bounds (by default the interval). */
static double cubic(double x1, double f1, double g1, double x2, double f2, double g2,
                    const double *bounds) {
    double lo = bounds ? bounds[0] : fmin(x1, x2), hi = bounds ? bounds[1] : fmax(x1, x2);
    if (!bounds && x1 > x2) lo = x2, hi = x1;
    double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
    double d2sq = d1 * d1 - g1 * g2;
    if (d2sq >= 0) {
        double d2 = sqrt(d2sq), m;
        if (x1 <= x2) m = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2));
        else m = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
        return fmin(fmax(m, lo), hi);
    }
    return (lo + hi) / 2.0;
}

typedef struct ls_ctx {
    gf_lbfgs *l;
    gf_lbfgs_closure fn;
    void *user;
    gf_tensor **x; /* the parameters at the line's origin */
} ls_ctx;

/* f and g at x + t d, the parameters put back at x afterwards. */
static gf_status directional(ls_ctx *c, double t, const double *d, double *f, double *g) {
    gf_lbfgs *l = c->l;
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_status s = add_update(l, t, d);
    gf_grad_mode_set(prev);
    if (s == GF_OK) s = evaluate(l, c->fn, c->user, f);
    if (s == GF_OK) s = gather_grad(l, g);
    prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    for (int i = 0; s == GF_OK && i < l->n; i++) s = gf_copy_(l->params[i], c->x[i]);
    gf_grad_mode_set(prev);
    return s;
}

/* Strong-Wolfe line search from t along d: on return *f, g, *t and *evals
 * are the point chosen and the evaluations made. */
static gf_status strong_wolfe(ls_ctx *c, double *t_io, const double *d, double *f_io, double *g_io,
                              double gtd, int64_t max_ls, int64_t *evals) {
    const double c1 = 1e-4, c2 = 0.9, tol = c->l->o.tolerance_change;
    if (max_ls < 0) max_ls = 0; /* max_eval already spent: the first point only */
    int64_t n = c->l->numel;
    size_t bytes = (size_t)(n ? n : 1) * sizeof(double);
    double t = *t_io, f = *f_io, d_norm = abs_max(d, n);
    double *g = malloc(bytes), *g_new = malloc(bytes), *g_prev = malloc(bytes);
    double *bg[2] = {malloc(bytes), malloc(bytes)};
    gf_status s = g && g_new && g_prev && bg[0] && bg[1] ? GF_OK : oom();
    double f_new = 0, gtd_new = 0, t_prev = 0, f_prev = f, gtd_prev = gtd;
    double br[2] = {0, 0}, bf[2] = {0, 0}, bgtd[2] = {0, 0};
    int nb = 0, low = 0, high = 1;
    bool done = false;
    int64_t ls_iter = 0;
    if (s == GF_OK) {
        memcpy(g, g_io, bytes);
        memcpy(g_prev, g, bytes);
        s = directional(c, t, d, &f_new, g_new);
        *evals = 1;
    }
    if (s == GF_OK) gtd_new = dot(g_new, d, n);
    while (s == GF_OK && ls_iter < max_ls) {
        if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {
            br[0] = t_prev, br[1] = t, bf[0] = f_prev, bf[1] = f_new;
            memcpy(bg[0], g_prev, bytes), memcpy(bg[1], g_new, bytes);
            bgtd[0] = gtd_prev, bgtd[1] = gtd_new, nb = 2;
            break;
        }
        if (fabs(gtd_new) <= -c2 * gtd) {
            br[0] = t, bf[0] = f_new, memcpy(bg[0], g_new, bytes), nb = 1;
            done = true;
            break;
        }
        if (gtd_new >= 0) {
            br[0] = t_prev, br[1] = t, bf[0] = f_prev, bf[1] = f_new;
            memcpy(bg[0], g_prev, bytes), memcpy(bg[1], g_new, bytes);
            bgtd[0] = gtd_prev, bgtd[1] = gtd_new, nb = 2;
            break;
        }
        const double bounds[2] = {t + 0.01 * (t - t_prev), t * 10};
        double tmp = t;
        t = cubic(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds);
        t_prev = tmp, f_prev = f_new, gtd_prev = gtd_new;
        memcpy(g_prev, g_new, bytes);
        s = directional(c, t, d, &f_new, g_new);
        if (s != GF_OK) break;
        (*evals)++;
        gtd_new = dot(g_new, d, n);
        ls_iter++;
    }
    if (s == GF_OK && ls_iter == max_ls) {
        br[0] = 0, br[1] = t, bf[0] = f, bf[1] = f_new;
        memcpy(bg[0], g, bytes), memcpy(bg[1], g_new, bytes), nb = 2;
        /* torch keeps the bracket's gtd from before the loop ran out */
    }
    if (s == GF_OK && nb == 2) {
        low = bf[0] <= bf[1] ? 0 : 1;
        high = 1 - low;
    }
    bool insuf = false;
    while (s == GF_OK && !done && ls_iter < max_ls && nb == 2) {
        if (fabs(br[1] - br[0]) * d_norm < tol) break;
        t = cubic(br[0], bf[0], bgtd[0], br[1], bf[1], bgtd[1], NULL);
        double bmax = fmax(br[0], br[1]), bmin = fmin(br[0], br[1]);
        double eps = 0.1 * (bmax - bmin);
        if (fmin(bmax - t, t - bmin) < eps) {
            if (insuf || t >= bmax || t <= bmin) {
                t = fabs(t - bmax) < fabs(t - bmin) ? bmax - eps : bmin + eps;
                insuf = false;
            } else {
                insuf = true;
            }
        } else {
            insuf = false;
        }
        s = directional(c, t, d, &f_new, g_new);
        if (s != GF_OK) break;
        (*evals)++;
        gtd_new = dot(g_new, d, n);
        ls_iter++;
        if (f_new > f + c1 * t * gtd || f_new >= bf[low]) {
            br[high] = t, bf[high] = f_new, memcpy(bg[high], g_new, bytes), bgtd[high] = gtd_new;
            low = bf[0] <= bf[1] ? 0 : 1;
            high = 1 - low;
        } else {
            if (fabs(gtd_new) <= -c2 * gtd) {
                done = true;
            } else if (gtd_new * (br[high] - br[low]) >= 0) {
                br[high] = br[low], bf[high] = bf[low];
                memcpy(bg[high], bg[low], bytes), bgtd[high] = bgtd[low];
            }
            br[low] = t, bf[low] = f_new, memcpy(bg[low], g_new, bytes), bgtd[low] = gtd_new;
        }
    }
    if (s == GF_OK) {
        int k = nb == 1 ? 0 : low;
        *t_io = br[k], *f_io = bf[k];
        memcpy(g_io, bg[k], bytes);
    }
    free(g), free(g_new), free(g_prev), free(bg[0]), free(bg[1]);
    return s;
}

/* ------------------------------------------------------------ step */
static gf_status push_history(gf_lbfgs *l, double *y, double *s, double ys) {
    if (l->num_old == l->o.history_size) {
        free(l->old_dirs[0]), free(l->old_stps[0]);
        memmove(l->old_dirs, l->old_dirs + 1, (size_t)(l->num_old - 1) * sizeof *l->old_dirs);
        memmove(l->old_stps, l->old_stps + 1, (size_t)(l->num_old - 1) * sizeof *l->old_stps);
        memmove(l->ro, l->ro + 1, (size_t)(l->num_old - 1) * sizeof *l->ro);
        l->num_old--;
    }
    l->old_dirs[l->num_old] = y;
    l->old_stps[l->num_old] = s;
    l->ro[l->num_old] = 1.0 / ys;
    l->num_old++;
    return GF_OK;
}

static gf_status step_impl(gf_lbfgs *l, gf_lbfgs_closure fn, void *user, double *orig) {
    const gf_lbfgs_opts *o = &l->o;
    int64_t n = l->numel;
    size_t bytes = (size_t)(n ? n : 1) * sizeof(double);
    double loss;
    gf_status s = evaluate(l, fn, user, &loss);
    if (s != GF_OK) return s;
    *orig = o->maximize ? -loss : loss;
    int64_t current_evals = 1;
    l->func_evals++;
    double *flat = malloc(bytes);
    if (!flat) return oom();
    if ((s = gather_grad(l, flat)) != GF_OK) goto out;
    bool opt_cond = abs_max(flat, n) <= o->tolerance_grad;
    if (opt_cond) goto out;
    for (int64_t it = 1; it <= o->max_iter; it++) {
        l->n_iter++;
        if (l->n_iter == 1) {
            for (int64_t i = 0; i < n; i++) l->d[i] = -flat[i];
            l->H_diag = 1;
        } else {
            double *y = malloc(bytes), *st = malloc(bytes);
            if (!y || !st) {
                free(y), free(st);
                s = oom();
                goto out;
            }
            for (int64_t i = 0; i < n; i++) y[i] = flat[i] - l->prev_flat_grad[i];
            for (int64_t i = 0; i < n; i++) st[i] = l->d[i] * l->t;
            double ys = dot(y, st, n);
            if (ys > 1e-10) {
                push_history(l, y, st, ys);
                l->H_diag = ys / dot(y, y, n);
            } else {
                free(y), free(st);
            }
            double *q = l->d; /* the direction is built in place */
            for (int64_t i = 0; i < n; i++) q[i] = -flat[i];
            for (int k = l->num_old - 1; k >= 0; k--) {
                l->al[k] = dot(l->old_stps[k], q, n) * l->ro[k];
                for (int64_t i = 0; i < n; i++) q[i] -= l->al[k] * l->old_dirs[k][i];
            }
            for (int64_t i = 0; i < n; i++) q[i] *= l->H_diag;
            for (int k = 0; k < l->num_old; k++) {
                double be = dot(l->old_dirs[k], q, n) * l->ro[k];
                for (int64_t i = 0; i < n; i++) q[i] += (l->al[k] - be) * l->old_stps[k][i];
            }
        }
        if (!l->prev_flat_grad && !(l->prev_flat_grad = malloc(bytes))) {
            s = oom();
            goto out;
        }
        memcpy(l->prev_flat_grad, flat, bytes);
        l->prev_loss = loss;
        double sum_abs = 0;
        for (int64_t i = 0; i < n; i++) sum_abs += fabs(flat[i]);
        l->t = l->n_iter == 1 ? fmin(1.0, 1.0 / sum_abs) * o->lr : o->lr;
        double gtd = dot(flat, l->d, n);
        if (gtd > -o->tolerance_change) break;
        int64_t ls_evals = 0;
        if (o->strong_wolfe) {
            gf_tensor **x = calloc((size_t)l->n, sizeof *x);
            s = x ? GF_OK : oom();
            int saved = gf__scope_suspend();
            for (int i = 0; s == GF_OK && i < l->n; i++)
                if (!(x[i] = gf_clone(l->params[i]))) s = gf__status();
            gf__scope_resume(saved);
            ls_ctx c = {l, fn, user, x};
            if (s == GF_OK)
                s = strong_wolfe(&c, &l->t, l->d, &loss, flat, gtd, o->max_eval - current_evals,
                                 &ls_evals);
            for (int i = 0; x && i < l->n; i++) gf_tensor_release(x[i]);
            free(x);
            if (s == GF_OK) {
                gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
                s = add_update(l, l->t, l->d);
                gf_grad_mode_set(prev);
            }
            if (s != GF_OK) goto out;
            opt_cond = abs_max(flat, n) <= o->tolerance_grad;
        } else {
            gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
            s = add_update(l, l->t, l->d);
            gf_grad_mode_set(prev);
            if (s != GF_OK) goto out;
            if (it != o->max_iter) {
                if ((s = evaluate(l, fn, user, &loss)) != GF_OK) goto out;
                if ((s = gather_grad(l, flat)) != GF_OK) goto out;
                opt_cond = abs_max(flat, n) <= o->tolerance_grad;
                ls_evals = 1;
            }
        }
        current_evals += ls_evals;
        l->func_evals += ls_evals;
        if (it == o->max_iter || current_evals >= o->max_eval || opt_cond) break;
        double dt = 0;
        for (int64_t i = 0; i < n; i++) dt = fmax(dt, fabs(l->d[i] * l->t));
        if (dt <= o->tolerance_change || fabs(loss - l->prev_loss) < o->tolerance_change) break;
    }
out:
    free(flat);
    return s;
}

gf_status gf_lbfgs_step(gf_lbfgs *l, gf_lbfgs_closure fn, void *user, double *loss) {
    if (!l) return gf__error(GF_ERR_INVALID, "gf_lbfgs_step: the optimiser is NULL");
    if (!fn) return gf__error(GF_ERR_INVALID, "gf_lbfgs_step: the closure is NULL; give a "
                              "function that zeroes the gradients, computes the loss, runs "
                              "backward and returns the loss");
    double orig = NAN;
    int saved = gf__scope_suspend();
    l->caller_suspended = saved;
    gf_status s = step_impl(l, fn, user, &orig);
    gf__scope_resume(saved);
    if (loss) *loss = orig;
    return s;
}
