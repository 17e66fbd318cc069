/* SPDX-License-Identifier: BSD-3-Clause */
/* optim.c — SGD, Adam/AdamW, RMSprop, Adagrad, Adadelta, NAdam and RAdam,
 * with the update rules of torch.optim.
 *
 * A step runs under no-grad (in-place writes to leaves that require grad are
 * allowed there, and nothing is recorded) with graft's public ops, so it works
 * on whatever device the parameters live on. Intermediates live in a private
 * scope; the optimiser's state (momentum buffers, moments) is kept out of it.
 * The parameters' .grad tensors are only read, never written. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"
#include "graph/graph_internal.h"
#include "profiler_internal.h"
#include "optim_internal.h"
#include "interop_internal.h"

/* NaN fails every comparison, so `!(x >= 0)` rejects it too. */
static bool nonneg(double x) { return x >= 0 && !isinf(x); }

static gf_status check_params(const char *op, gf_tensor *const *params, int n) {
    if (n <= 0)
        return gf__error(GF_ERR_INVALID, "%s: got an empty parameter list (n = %d); pass at "
                         "least one tensor to optimise", op, n);
    if (!params) return gf__error(GF_ERR_INVALID, "%s: params is NULL while n = %d", op, n);
    for (int i = 0; i < n; i++) {
        const gf_tensor *p = params[i];
        if (!p) return gf__error(GF_ERR_INVALID, "%s: parameter %d is NULL", op, i);
        if (!gf_dtype_is_float(p->dtype) && !gf_dtype_is_complex(p->dtype))
            return gf__error(GF_ERR_INVALID, "%s: parameter %d has dtype %s; only floating-point "
                             "tensors can be optimised", op, i, gf_dtype_name(p->dtype));
        if (!gf_tensor_is_leaf(p))
            return gf__error(GF_ERR_INVALID, "%s: parameter %d is not a leaf (it was produced by "
                             "%s); optimise the leaf it came from, or gf_detach it and set "
                             "requires_grad on the result", op, i, gf_tensor_grad_fn_name(p));
        if (!gf_tensor_requires_grad(p))
            return gf__error(GF_ERR_INVALID, "%s: parameter %d does not require grad; call "
                             "gf_tensor_set_requires_grad(p, true) first", op, i);
        for (int j = 0; j < i; j++)
            if (params[j] == p)
                return gf__error(GF_ERR_INVALID, "%s: parameter %d is the same tensor as parameter "
                                 "%d; pass each parameter once (it would be updated twice)",
                                 op, i, j);
    }
    return GF_OK;
}

/* The optimiser with one parameter group (lr and weight_decay as given). */
static gf_optimizer *opt_new(opt_kind kind, gf_tensor *const *params, int n, double lr,
                             double weight_decay) {
    gf_optimizer *o = calloc(1, sizeof *o);
    if (o) o->refs = 1;
    param_state *ps = o ? calloc((size_t)n, sizeof *ps) : NULL;
    opt_group *g = ps ? calloc(1, sizeof *g) : NULL;
    if (!g) {
        free(o);
        free(ps);
        gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for the optimiser's state");
        return NULL;
    }
    o->kind = kind;
    o->n = n;
    o->ps = ps;
    o->n_groups = 1;
    o->groups = g;
    g->lr = lr;
    g->weight_decay = weight_decay;
    g->initial_lr = NAN;
    for (int i = 0; i < n; i++) ps[i].param = gf_tensor_retain(params[i]);
    return o;
}

gf_optimizer *gf_sgd_create(gf_tensor *const *params, int n, const gf_sgd_opts *opts) {
    const char *op = "gf_sgd_create";
    if (!opts) {
        gf__error(GF_ERR_INVALID, "%s: opts is NULL; pass a gf_sgd_opts with at least lr set", op);
        return NULL;
    }
    const gf_sgd_opts o = *opts;
    if (!nonneg(o.lr)) {
        gf__error(GF_ERR_INVALID, "%s: invalid learning rate %g; lr must be >= 0", op, o.lr);
        return NULL;
    }
    if (!nonneg(o.momentum)) {
        gf__error(GF_ERR_INVALID, "%s: invalid momentum %g; it must be >= 0", op, o.momentum);
        return NULL;
    }
    if (!isfinite(o.dampening)) {
        gf__error(GF_ERR_INVALID, "%s: invalid dampening %g; it must be finite", op, o.dampening);
        return NULL;
    }
    if (!nonneg(o.weight_decay)) {
        gf__error(GF_ERR_INVALID, "%s: invalid weight_decay %g; it must be >= 0", op,
                  o.weight_decay);
        return NULL;
    }
    if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) {
        gf__error(GF_ERR_INVALID, "%s: nesterov momentum requires momentum > 0 and dampening = 0 "
                  "(got momentum %g, dampening %g)", op, o.momentum, o.dampening);
        return NULL;
    }
    if (check_params(op, params, n) != GF_OK) return NULL;
    gf_optimizer *opt = opt_new(OPT_SGD, params, n, o.lr, o.weight_decay);
    if (opt) opt->sgd = o;
    return opt;
}

gf_optimizer *gf_adam_create(gf_tensor *const *params, int n, const gf_adam_opts *opts) {
    const char *op = "gf_adam_create";
    gf_adam_opts o = GF_ADAM_OPTS_DEFAULT;
    if (opts) o = *opts;
    if (gf__opts_check(op, "gf_adam_opts", "GF_ADAM_OPTS_DEFAULT", o.init) != GF_OK) return NULL;
    if (!nonneg(o.lr)) {
        gf__error(GF_ERR_INVALID, "%s: invalid learning rate %g; lr must be >= 0", op, o.lr);
        return NULL;
    }
    if (!(o.beta1 >= 0 && o.beta1 < 1)) {
        gf__error(GF_ERR_INVALID, "%s: invalid beta1 %g; it must be in [0, 1)", op, o.beta1);
        return NULL;
    }
    if (!(o.beta2 >= 0 && o.beta2 < 1)) {
        gf__error(GF_ERR_INVALID, "%s: invalid beta2 %g; it must be in [0, 1)", op, o.beta2);
        return NULL;
    }
    if (!nonneg(o.eps)) {
        gf__error(GF_ERR_INVALID, "%s: invalid eps %g; it must be >= 0", op, o.eps);
        return NULL;
    }
    if (!nonneg(o.weight_decay)) {
        gf__error(GF_ERR_INVALID, "%s: invalid weight_decay %g; it must be >= 0", op,
                  o.weight_decay);
        return NULL;
    }
    if (check_params(op, params, n) != GF_OK) return NULL;
    gf_optimizer *opt = opt_new(OPT_ADAM, params, n, o.lr, o.weight_decay);
    if (opt) opt->adam = o;
    return opt;
}

gf_optimizer *gf_rmsprop_create(gf_tensor *const *params, int n, const gf_rmsprop_opts *opts) {
    const char *op = "gf_rmsprop_create";
    gf_rmsprop_opts o = GF_RMSPROP_OPTS_DEFAULT;
    if (opts) o = *opts;
    if (gf__opts_check(op, "gf_rmsprop_opts", "GF_RMSPROP_OPTS_DEFAULT", o.init) != GF_OK)
        return NULL;
    const char *bad = !nonneg(o.lr) ? "lr" : !(o.alpha >= 0 && o.alpha <= 1) ? "alpha"
                    : !nonneg(o.eps) ? "eps" : !nonneg(o.weight_decay) ? "weight_decay"
                    : !nonneg(o.momentum) ? "momentum" : NULL;
    if (bad) {
        double v = !strcmp(bad, "lr") ? o.lr : !strcmp(bad, "alpha") ? o.alpha
                 : !strcmp(bad, "eps") ? o.eps : !strcmp(bad, "weight_decay") ? o.weight_decay
                 : o.momentum;
        gf__error(GF_ERR_INVALID, "%s: invalid %s %g; it must be %s", op, bad, v,
                  !strcmp(bad, "alpha") ? "in [0, 1]" : "finite and >= 0");
        return NULL;
    }
    if (check_params(op, params, n) != GF_OK) return NULL;
    gf_optimizer *opt = opt_new(OPT_RMSPROP, params, n, o.lr, o.weight_decay);
    if (opt) opt->rmsprop = o;
    return opt;
}

gf_optimizer *gf_adagrad_create(gf_tensor *const *params, int n, const gf_adagrad_opts *opts) {
    const char *op = "gf_adagrad_create";
    gf_adagrad_opts o = GF_ADAGRAD_OPTS_DEFAULT;
    if (opts) o = *opts;
    if (gf__opts_check(op, "gf_adagrad_opts", "GF_ADAGRAD_OPTS_DEFAULT", o.init) != GF_OK)
        return NULL;
    const char *bad = !nonneg(o.lr) ? "lr" : !nonneg(o.lr_decay) ? "lr_decay"
                    : !nonneg(o.eps) ? "eps" : !nonneg(o.weight_decay) ? "weight_decay"
                    : !nonneg(o.initial_accumulator_value) ? "initial_accumulator_value" : NULL;
    if (bad) {
        double v = !strcmp(bad, "lr") ? o.lr : !strcmp(bad, "lr_decay") ? o.lr_decay
                 : !strcmp(bad, "eps") ? o.eps : !strcmp(bad, "weight_decay") ? o.weight_decay
                 : o.initial_accumulator_value;
        gf__error(GF_ERR_INVALID, "%s: invalid %s %g; it must be finite and >= 0", op, bad, v);
        return NULL;
    }
    if (check_params(op, params, n) != GF_OK) return NULL;
    gf_optimizer *opt = opt_new(OPT_ADAGRAD, params, n, o.lr, o.weight_decay);
    if (opt) opt->adagrad = o;
    return opt;
}

gf_optimizer *gf_adadelta_create(gf_tensor *const *params, int n, const gf_adadelta_opts *opts) {
    const char *op = "gf_adadelta_create";
    gf_adadelta_opts o = GF_ADADELTA_OPTS_DEFAULT;
    if (opts) o = *opts;
    if (gf__opts_check(op, "gf_adadelta_opts", "GF_ADADELTA_OPTS_DEFAULT", o.init) != GF_OK)
        return NULL;
    const char *bad = !nonneg(o.lr) ? "lr" : !(o.rho >= 0 && o.rho <= 1) ? "rho"
                    : !nonneg(o.eps) ? "eps" : !nonneg(o.weight_decay) ? "weight_decay" : NULL;
    if (bad) {
        gf__error(GF_ERR_INVALID, "%s: invalid %s (lr %g, rho %g, eps %g, weight_decay %g); lr, "
                  "eps and weight_decay must be finite and >= 0, rho in [0, 1]", op, bad, o.lr,
                  o.rho, o.eps, o.weight_decay);
        return NULL;
    }
    if (check_params(op, params, n) != GF_OK) return NULL;
    gf_optimizer *opt = opt_new(OPT_ADADELTA, params, n, o.lr, o.weight_decay);
    if (opt) opt->adadelta = o;
    return opt;
}

/* The checks NAdam and RAdam share with Adam. */
static bool adam_like_ok(const char *op, double lr, double b1, double b2, double eps, double wd) {
    const char *bad = !nonneg(lr) ? "lr" : !(b1 >= 0 && b1 < 1) ? "beta1"
                    : !(b2 >= 0 && b2 < 1) ? "beta2" : !nonneg(eps) ? "eps"
                    : !nonneg(wd) ? "weight_decay" : NULL;
    if (!bad) return true;
    gf__error(GF_ERR_INVALID, "%s: invalid %s (lr %g, betas %g %g, eps %g, weight_decay %g); "
              "betas must be in [0, 1), the others finite and >= 0", op, bad, lr, b1, b2, eps, wd);
    return false;
}

gf_optimizer *gf_nadam_create(gf_tensor *const *params, int n, const gf_nadam_opts *opts) {
    const char *op = "gf_nadam_create";
    gf_nadam_opts o = GF_NADAM_OPTS_DEFAULT;
    if (opts) o = *opts;
    if (gf__opts_check(op, "gf_nadam_opts", "GF_NADAM_OPTS_DEFAULT", o.init) != GF_OK) return NULL;
    if (!adam_like_ok(op, o.lr, o.beta1, o.beta2, o.eps, o.weight_decay)) return NULL;
    if (!nonneg(o.momentum_decay)) {
        gf__error(GF_ERR_INVALID, "%s: invalid momentum_decay %g; it must be finite and >= 0", op,
                  o.momentum_decay);
        return NULL;
    }
    if (check_params(op, params, n) != GF_OK) return NULL;
    gf_optimizer *opt = opt_new(OPT_NADAM, params, n, o.lr, o.weight_decay);
    if (opt) opt->nadam = o;
    return opt;
}

gf_optimizer *gf_radam_create(gf_tensor *const *params, int n, const gf_radam_opts *opts) {
    const char *op = "gf_radam_create";
    gf_radam_opts o = GF_RADAM_OPTS_DEFAULT;
    if (opts) o = *opts;
    if (gf__opts_check(op, "gf_radam_opts", "GF_RADAM_OPTS_DEFAULT", o.init) != GF_OK) return NULL;
    if (!adam_like_ok(op, o.lr, o.beta1, o.beta2, o.eps, o.weight_decay)) return NULL;
    if (check_params(op, params, n) != GF_OK) return NULL;
    gf_optimizer *opt = opt_new(OPT_RADAM, params, n, o.lr, o.weight_decay);
    if (opt) opt->radam = o;
    return opt;
}

/* A failed op's status; never GF_OK (a NULL result always means failure). */
/* ------------------------------------------------------------ capture */
/* A step captured in a graph (graft/graph.h) replays its launches; what
 * changes from step to step on the host (each parameter's step count, the
 * group's learning rate that a schedule moves) is recomputed by a host step
 * the graph runs before them, which writes the new constants into the
 * recorded fills and parameter structs they read. */
typedef enum dyn_kind {
    DYN_LR,              /* lr */
    DYN_LR_OVER_BC1,     /* lr / (1 - beta1^t) */
    DYN_SQRT_BC2,        /* sqrt(1 - beta2^t) */
    DYN_ONE_MINUS_LR_WD, /* 1 - lr * wd (AdamW's decay) */
    DYN_ADAM_PARAMS,     /* a gfp_adam_params */
} dyn_kind;

typedef struct dyn_binding {
    int param;
    dyn_kind kind;
    gf_dtype dtype; /* of a fill pattern */
    void *target;   /* the recorded fill pattern or parameter struct */
} dyn_binding;

typedef struct opt_capture {
    gf_optimizer *opt;
    int *stepped; /* parameters whose step count a replay advances */
    int n_stepped;
    dyn_binding *b;
    int n_b, cap_b;
} opt_capture;

static void opt_capture_free(void *p) {
    opt_capture *oc = p;
    gf_optimizer_destroy(oc->opt); /* the graph's hold */
    free(oc->stepped);
    free(oc->b);
    free(oc);
}

static gf_status bind(opt_capture *oc, int param, dyn_kind kind, gf_dtype dt, void *target,
                      const char *what) {
    if (!target)
        return gf__graph_refuse(GF_ERR_UNSUPPORTED, "gf_optimizer_step: the %s of parameter %d "
                                "was not recorded where a replay can update it; this step "
                                "cannot be captured", what, param);
    if (oc->n_b == oc->cap_b) {
        int cap = oc->cap_b ? oc->cap_b * 2 : 16;
        dyn_binding *nb = realloc(oc->b, sizeof *nb * (size_t)cap);
        if (!nb) return gf__graph_refuse(GF_ERR_OUT_OF_MEMORY, "gf_optimizer_step: out of host "
                                         "memory while capturing");
        oc->b = nb;
        oc->cap_b = cap;
    }
    oc->b[oc->n_b++] = (dyn_binding){.param = param, .kind = kind, .dtype = dt, .target = target};
    return GF_OK;
}

/* The capture of the step running on this thread (NULL when not capturing). */
static _Thread_local opt_capture *tl_oc;
static _Thread_local int tl_param;

static double dyn_value(const gf_optimizer *opt, const param_state *st, dyn_kind k) {
    const opt_group *gr = &opt->groups[st->group];
    const gf_adam_opts *o = &opt->adam;
    switch (k) {
    case DYN_LR: return gr->lr;
    case DYN_LR_OVER_BC1: return gr->lr / (1.0 - pow(o->beta1, (double)st->step));
    case DYN_SQRT_BC2: return sqrt(1.0 - pow(o->beta2, (double)st->step));
    case DYN_ONE_MINUS_LR_WD: return 1.0 - gr->lr * gr->weight_decay;
    case DYN_ADAM_PARAMS: break;
    }
    return 0;
}

/* The host step of a replay: advance, then rewrite the constants. */
static gf_status opt_replay_step(void *p) {
    opt_capture *oc = p;
    gf_optimizer *opt = oc->opt;
    for (int i = 0; i < oc->n_stepped; i++) opt->ps[oc->stepped[i]].step++;
    for (int i = 0; i < oc->n_b; i++) {
        dyn_binding *b = &oc->b[i];
        const param_state *st = &opt->ps[b->param];
        if (b->kind == DYN_ADAM_PARAMS) {
            gfp_adam_params *prm = b->target;
            const opt_group *gr = &opt->groups[st->group];
            prm->lr = gr->lr;
            prm->weight_decay = gr->weight_decay;
            prm->bias_correction1 = 1.0 - pow(opt->adam.beta1, (double)st->step);
            prm->bias_correction2_sqrt = sqrt(1.0 - pow(opt->adam.beta2, (double)st->step));
            continue;
        }
        double v = dyn_value(opt, st, b->kind);
        if (b->dtype == GF_F32) {
            float f = (float)v;
            memcpy(b->target, &f, sizeof f);
        } else memcpy(b->target, &v, sizeof v);
    }
    return GF_OK;
}

/* A 0-dim constant of x's dtype holding v, bound to the capture when one
 * is open (k says how a replay recomputes v). The same launches as the
 * scalar ops (gf_mul_scalar...) make. NULL with the error on failure. */
static gf_tensor *dyn_scalar(const gf_tensor *x, double v, dyn_kind k) {
    if (!x) return NULL;
    gf_tensor *c = gf__scalar(v, x->dtype, x->storage->device);
    if (c && tl_oc) {
        void *pat = NULL;
        if (x->dtype == GF_F32 || x->dtype == GF_F64)
            pat = gf__graph_last_fill_pattern((uint32_t)gf_dtype_size(x->dtype));
        if (bind(tl_oc, tl_param, k, x->dtype, pat, "learning-rate constant") != GF_OK) {
            gf_tensor_release(c);
            return NULL;
        }
    }
    return c;
}

/* x * v or x / v with v a dyn_scalar. */
static gf_tensor *dyn_op(gfp_op op, const gf_tensor *x, double v, dyn_kind k) {
    if (!x) return NULL;
    if (!gf_dtype_is_float(x->dtype) && !tl_oc)
        return op == GFP_OP_MUL ? gf_mul_scalar(x, v) : gf_div_scalar(x, v);
    gf_tensor *c = dyn_scalar(x, v, k);
    if (!c) return NULL;
    gf_tensor *r = op == GFP_OP_MUL ? gf_mul(x, c) : gf_div(x, c);
    gf_tensor_release(c);
    return r;
}

static gf_status failed(void) {
    gf_status s = gf__status();
    return s != GF_OK ? s : gf__error(GF_ERR_INVALID, "gf_optimizer_step: an update op failed");
}

/* True when other broadcasts to self's shape without growing it. */
static bool fits_into(const gf_tensor *self, const gf_tensor *other) {
    if (other->rank > self->rank) return false;
    for (int i = 1; i <= other->rank; i++) {
        int64_t o = other->sizes[other->rank - i], t = self->sizes[self->rank - i];
        if (o != t && o != 1) return false;
    }
    return true;
}

/* self = self op other, launched with self as the output (the ABI's
 * in-place form: an output aliasing an input exactly), instead of the public
 * in-place ops' compute-then-copy, which costs a temporary and a pass over
 * memory per update. Under the step's no-grad mode there is no history to
 * rewrite, so only the checks and the version bump remain. Anything unusual
 * (dtype promotion, a strided or shared destination, broadcasting that would
 * grow self) goes through the public op and its messages. */
static gf_status update_(gfp_op op, gf_tensor *self, const gf_tensor *other) {
    const char *name = op == GFP_OP_SUB ? "gf_sub_" : op == GFP_OP_ADD ? "gf_add_" : "gf_mul_";
    if (!other) return failed();
    if (self->dtype != other->dtype || self->storage->device != other->storage->device ||
        self->storage == other->storage || !gf__is_contiguous(self) || !fits_into(self, other)) {
        return op == GFP_OP_SUB ? gf_sub_(self, other)
             : op == GFP_OP_ADD ? gf_add_(self, other) : gf_mul_(self, other);
    }
    gf_status s = gf__ag_check_inplace(self, name);
    if (s != GF_OK) return s;
    gf_tensor *o = gf__expand_to(other, self->sizes, self->rank);
    if (!o) return failed();
    const gf_tensor *ins[2] = {self, o};
    gf_tensor *outs[1] = {self};
    s = gf__launch(op, name, ins, 2, outs, 1, NULL);
    gf_tensor_release(o);
    if (s == GF_OK) gf__bump_version(self);
    return s;
}

/* self *= v, as update_ (a 0-dim operand of self's dtype). */
static gf_status scale_(gf_tensor *self, double v) {
    if (!gf_dtype_is_float(self->dtype)) return gf_mul_scalar_(self, v);
    gf_tensor *c = gf__scalar(v, self->dtype, self->storage->device);
    if (!c) return failed();
    gf_status s = update_(GFP_OP_MUL, self, c);
    gf_tensor_release(c);
    return s;
}

/* self *= v, v a dyn_scalar. */
static gf_status dyn_scale_(gf_tensor *self, double v, dyn_kind k) {
    if (!gf_dtype_is_float(self->dtype) && !tl_oc) return scale_(self, v);
    gf_tensor *c = dyn_scalar(self, v, k);
    if (!c) return failed();
    gf_status s = update_(GFP_OP_MUL, self, c);
    gf_tensor_release(c);
    return s;
}

/* PyTorch's SGD: d = g + wd * p; buf = d on the first step, else
 * momentum * buf + (1 - dampening) * d; d = nesterov ? d + momentum * buf : buf;
 * p -= lr * d. Runs inside a scope (intermediates are released by it). */
static gf_status sgd_update(const gf_sgd_opts *o, param_state *st, gf_tensor *g) {
    gf_tensor *p = st->param;
    gf_tensor *d = g;
    if (o->weight_decay != 0) {
        d = gf_add(g, gf_mul_scalar(p, o->weight_decay));
        if (!d) return failed();
    }
    if (o->momentum != 0) {
        if (!st->buf1 && tl_oc)
            return gf__graph_refuse(GF_ERR_INVALID, "gf_optimizer_step: SGD with momentum "
                                    "takes its first step differently from the later ones "
                                    "(the buffer starts as the gradient); run one step before "
                                    "capturing");
        if (!st->buf1) {
            gf_tensor *b = gf_clone(d);
            if (!b) return failed();
            st->buf1 = gf_scope_keep(b);
        } else {
            gf_status s = scale_(st->buf1, o->momentum);
            if (s != GF_OK) return s;
            gf_tensor *t = o->dampening != 0 ? gf_mul_scalar(d, 1.0 - o->dampening) : d;
            if (!t) return failed();
            s = update_(GFP_OP_ADD, st->buf1, t);
            if (s != GF_OK) return s;
        }
        if (o->nesterov) {
            d = gf_add(d, gf_mul_scalar(st->buf1, o->momentum));
            if (!d) return failed();
        } else {
            d = st->buf1;
        }
    }
    return update_(GFP_OP_SUB, p, dyn_op(GFP_OP_MUL, d, o->lr, DYN_LR));
}

/* Whether t has p's dtype, device and sizes, is contiguous, and shares no
 * storage with the tensors before it in ts. */
static bool fusable_with(gf_tensor *const *ts, int i) {
    const gf_tensor *p = ts[0], *t = ts[i];
    if (!t || t->dtype != p->dtype || t->storage->device != p->storage->device ||
        t->rank != p->rank || !gf__is_contiguous(t))
        return false;
    for (int d = 0; d < t->rank; d++)
        if (t->sizes[d] != p->sizes[d]) return false;
    for (int k = 0; k < i; k++)
        if (ts[k]->storage == t->storage) return false;
    return true;
}

/* The device's ADAM_UPDATE, when it has one for these tensors: the whole
 * update in one pass over p, g, m and v, where the composition below takes
 * about 35. Only for contiguous tensors of one dtype in four storages (what
 * the op's row lets the core pass). An older plugin answers NONE, and a
 * launch it refuses is not run elsewhere (gf__launch_own): the composition
 * then runs on the same device. False: compose (s untouched); true: *s says
 * how the kernel went. */
static bool fused_adam(const gf_adam_opts *o, param_state *st, gf_tensor *g, double bc1,
                       double bc2_sqrt, gf_status *s) {
    gf_tensor *ts[4] = {st->param, g, st->buf1, st->buf2};
    if (!gf_dtype_is_float(st->param->dtype) || !gf__is_contiguous(st->param)) return false;
    for (int i = 1; i < 4; i++)
        if (!fusable_with(ts, i)) return false;
    const gf_tensor *in[4] = {ts[0], ts[1], ts[2], ts[3]};
    gf_tensor *out[3] = {ts[0], ts[2], ts[3]};
    if (!gf__dev_has_op(GFP_OP_ADAM_UPDATE, in, 4, out, 3)) return false;
    for (int i = 0; i < 3; i++)
        if ((*s = gf__ag_check_inplace(out[i], "Adam.step")) != GF_OK) return true;
    gfp_adam_params prm = {
        .struct_size = (uint32_t)sizeof prm,
        .flags = o->decoupled_weight_decay ? GFP_ADAM_DECOUPLED_WEIGHT_DECAY : 0u,
        .lr = o->lr,
        .beta1 = o->beta1,
        .beta2 = o->beta2,
        .eps = o->eps,
        .weight_decay = o->weight_decay,
        .bias_correction1 = bc1,
        .bias_correction2_sqrt = bc2_sqrt,
    };
    *s = gf__launch_own(GFP_OP_ADAM_UPDATE, "adam_update", in, 4, out, 3, &prm);
    if (*s == GF_ERR_UNSUPPORTED && !tl_oc) {
        gf_clear_error();
        return false;
    }
    if (*s == GF_OK && tl_oc)
        *s = bind(tl_oc, tl_param, DYN_ADAM_PARAMS, st->param->dtype,
                  gf__graph_last_params(GFP_OP_ADAM_UPDATE), "fused update's parameters");
    if (*s == GF_OK)
        for (int i = 0; i < 3; i++) gf__bump_version(out[i]);
    return true;
}

/* PyTorch's Adam/AdamW: (AdamW: p *= 1 - lr * wd; Adam: g += wd * p);
 * m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
 * p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 * The device's ADAM_UPDATE computes the same in one kernel when it has one;
 * else the composition below, operation for operation the same. */
static gf_status adam_update(const gf_adam_opts *o, param_state *st, gf_tensor *g) {
    gf_tensor *p = st->param;
    gf_status s;
    if (!st->buf1) {
        /* The moments start at zero once: under a capture, made outside the
         * recording (and outside its pool: they outlive the graph). */
        int held = gf__graph_suspend();
        gf_tensor *m = gf_zeros_like(p);
        gf_tensor *v = m ? gf_zeros_like(p) : NULL;
        gf__graph_resume(held);
        if (!m || !v) {
            gf_tensor_release(m);
            return failed();
        }
        st->buf1 = gf_scope_keep(m);
        st->buf2 = gf_scope_keep(v);
    }
    st->step++;
    double bc1 = 1.0 - pow(o->beta1, (double)st->step);
    double bc2 = 1.0 - pow(o->beta2, (double)st->step);
    if (fused_adam(o, st, g, bc1, sqrt(bc2), &s)) return s;
    if (o->weight_decay != 0) {
        if (o->decoupled_weight_decay) {
            s = dyn_scale_(p, 1.0 - o->lr * o->weight_decay, DYN_ONE_MINUS_LR_WD);
            if (s != GF_OK) return s;
        } else {
            g = gf_add(g, gf_mul_scalar(p, o->weight_decay));
            if (!g) return failed();
        }
    }
    if ((s = scale_(st->buf1, o->beta1)) != GF_OK) return s;
    if ((s = update_(GFP_OP_ADD, st->buf1, gf_mul_scalar(g, 1.0 - o->beta1))) != GF_OK) return s;
    if ((s = scale_(st->buf2, o->beta2)) != GF_OK) return s;
    if ((s = update_(GFP_OP_ADD, st->buf2, gf_mul_scalar(gf_mul(g, g), 1.0 - o->beta2))) != GF_OK)
        return s;
    gf_tensor *denom =
        gf_add_scalar(dyn_op(GFP_OP_DIV, gf_sqrt(st->buf2), sqrt(bc2), DYN_SQRT_BC2), o->eps);
    return update_(GFP_OP_SUB, p,
                   dyn_op(GFP_OP_MUL, gf_div(st->buf1, denom), o->lr / bc1, DYN_LR_OVER_BC1));
}

/* PyTorch's RMSprop: g += wd p; sq = alpha sq + (1 - alpha) g^2; avg =
 * sqrt(sq - ga^2) + eps with ga = alpha ga + (1 - alpha) g when centered,
 * else sqrt(sq) + eps; with momentum buf = momentum buf + g / avg and
 * p -= lr buf, else p -= lr g / avg. */
static gf_status rmsprop_update(const gf_rmsprop_opts *o, param_state *st, gf_tensor *g) {
    gf_tensor *p = st->param;
    gf_status s;
    if (o->weight_decay != 0) {
        g = gf_add(g, gf_mul_scalar(p, o->weight_decay));
        if (!g) return failed();
    }
    if (!st->buf1) {
        gf_tensor *sq = gf_zeros_like(p);
        if (!sq) return failed();
        st->buf1 = gf_scope_keep(sq);
    }
    st->step++; /* kept for the state (torch's "step"); the update does not read it */
    if ((s = scale_(st->buf1, o->alpha)) != GF_OK) return s;
    if ((s = update_(GFP_OP_ADD, st->buf1, gf_mul_scalar(gf_mul(g, g), 1.0 - o->alpha))) !=
        GF_OK)
        return s;
    gf_tensor *avg;
    if (o->centered) {
        if (!st->buf3) {
            gf_tensor *ga = gf_zeros_like(p);
            if (!ga) return failed();
            st->buf3 = gf_scope_keep(ga);
        }
        if ((s = scale_(st->buf3, o->alpha)) != GF_OK) return s;
        if ((s = update_(GFP_OP_ADD, st->buf3, gf_mul_scalar(g, 1.0 - o->alpha))) != GF_OK)
            return s;
        avg = gf_add_scalar(gf_sqrt(gf_sub(st->buf1, gf_mul(st->buf3, st->buf3))), o->eps);
    } else {
        avg = gf_add_scalar(gf_sqrt(st->buf1), o->eps);
    }
    gf_tensor *step = gf_div(g, avg);
    if (!step) return failed();
    if (o->momentum > 0) {
        if (!st->buf2) {
            gf_tensor *b = gf_zeros_like(p);
            if (!b) return failed();
            st->buf2 = gf_scope_keep(b);
        }
        if ((s = scale_(st->buf2, o->momentum)) != GF_OK) return s;
        if ((s = update_(GFP_OP_ADD, st->buf2, step)) != GF_OK) return s;
        step = st->buf2;
    }
    return update_(GFP_OP_SUB, p, gf_mul_scalar(step, o->lr));
}

/* PyTorch's Adagrad: step += 1; g += wd p; clr = lr / (1 + (step - 1)
 * lr_decay); sum += g^2; p -= clr g / (sqrt(sum) + eps). */
static gf_status adagrad_update(const gf_adagrad_opts *o, param_state *st, gf_tensor *g) {
    gf_tensor *p = st->param;
    gf_status s;
    if (!st->buf1) {
        gf_tensor *sum = gf_full_like(p, o->initial_accumulator_value);
        if (!sum) return failed();
        st->buf1 = gf_scope_keep(sum);
    }
    st->step++;
    if (o->weight_decay != 0) {
        g = gf_add(g, gf_mul_scalar(p, o->weight_decay));
        if (!g) return failed();
    }
    double clr = o->lr / (1.0 + (double)(st->step - 1) * o->lr_decay);
    if ((s = update_(GFP_OP_ADD, st->buf1, gf_mul(g, g))) != GF_OK) return s;
    gf_tensor *std = gf_add_scalar(gf_sqrt(st->buf1), o->eps);
    return update_(GFP_OP_SUB, p, gf_mul_scalar(gf_div(g, std), clr));
}

/* A zero tensor like p, kept by the optimiser (out of the step's scope). */
static gf_status lazy_zeros(gf_tensor **slot, const gf_tensor *p) {
    if (*slot) return GF_OK;
    gf_tensor *z = gf_zeros_like(p);
    if (!z) return failed();
    *slot = gf_scope_keep(z);
    return GF_OK;
}

/* g + wd p (L2), or p *= 1 - lr wd first (decoupled); the gradient to use. */
static gf_tensor *weight_decay(gf_tensor *p, gf_tensor *g, double lr, double wd, bool decoupled,
                               gf_status *s) {
    *s = GF_OK;
    if (wd == 0) return g;
    if (decoupled) {
        *s = scale_(p, 1.0 - lr * wd);
        return g;
    }
    gf_tensor *r = gf_add(g, gf_mul_scalar(p, wd));
    if (!r) *s = failed();
    return r;
}

/* buf = beta buf + (1 - beta) x (x NULL: g g). */
static gf_status ema_(gf_tensor *buf, double beta, gf_tensor *x) {
    gf_status s = scale_(buf, beta);
    return s != GF_OK ? s : update_(GFP_OP_ADD, buf, gf_mul_scalar(x, 1.0 - beta));
}

static gf_status adadelta_update(const gf_adadelta_opts *o, param_state *st, gf_tensor *g) {
    gf_tensor *p = st->param;
    gf_status s;
    if ((s = lazy_zeros(&st->buf1, p)) != GF_OK || (s = lazy_zeros(&st->buf2, p)) != GF_OK)
        return s;
    st->step++;
    g = weight_decay(p, g, o->lr, o->weight_decay, false, &s);
    if (s != GF_OK) return s;
    if ((s = ema_(st->buf1, o->rho, gf_mul(g, g))) != GF_OK) return s;
    gf_tensor *std = gf_sqrt(gf_add_scalar(st->buf1, o->eps));
    gf_tensor *delta = gf_mul(gf_div(gf_sqrt(gf_add_scalar(st->buf2, o->eps)), std), g);
    if (!delta) return failed();
    if ((s = ema_(st->buf2, o->rho, gf_mul(delta, delta))) != GF_OK) return s;
    return update_(GFP_OP_SUB, p, gf_mul_scalar(delta, o->lr));
}

static gf_status nadam_update(const gf_nadam_opts *o, param_state *st, gf_tensor *g) {
    gf_tensor *p = st->param;
    gf_status s;
    if ((s = lazy_zeros(&st->buf1, p)) != GF_OK || (s = lazy_zeros(&st->buf2, p)) != GF_OK)
        return s;
    if (st->step == 0) st->mu_product = 1.0;
    st->step++;
    double t = (double)st->step;
    g = weight_decay(p, g, o->lr, o->weight_decay, o->decoupled_weight_decay, &s);
    if (s != GF_OK) return s;
    double bc2 = 1.0 - pow(o->beta2, t);
    double mu = o->beta1 * (1.0 - 0.5 * pow(0.96, t * o->momentum_decay));
    double mu_next = o->beta1 * (1.0 - 0.5 * pow(0.96, (t + 1.0) * o->momentum_decay));
    /* PyTorch keeps mu_product as a 0-dim tensor of its scalar dtype (f32
     * unless the default dtype is f64) and multiplies it by mu in f32: so
     * here, so that trajectories and checkpoints agree with PyTorch's */
    float mu_f = (float)mu, prod_f = (float)st->mu_product * mu_f; /* as its f32 kernel */
    double mu_product = (double)prod_f;
    if ((s = ema_(st->buf1, o->beta1, g)) != GF_OK) return s;
    if ((s = ema_(st->buf2, o->beta2, gf_mul(g, g))) != GF_OK) return s;
    gf_tensor *denom = gf_add_scalar(gf_sqrt(gf_div_scalar(st->buf2, bc2)), o->eps);
    gf_tensor *a = gf_mul_scalar(gf_div(g, denom), o->lr * (1.0 - mu) / (1.0 - mu_product));
    gf_tensor *b = gf_mul_scalar(gf_div(st->buf1, denom),
                                 o->lr * mu_next / (1.0 - mu_product * mu_next));
    if ((s = update_(GFP_OP_SUB, p, a)) != GF_OK) return s;
    if ((s = update_(GFP_OP_SUB, p, b)) != GF_OK) return s;
    st->mu_product = mu_product;
    return GF_OK;
}

static gf_status radam_update(const gf_radam_opts *o, param_state *st, gf_tensor *g) {
    gf_tensor *p = st->param;
    gf_status s;
    if ((s = lazy_zeros(&st->buf1, p)) != GF_OK || (s = lazy_zeros(&st->buf2, p)) != GF_OK)
        return s;
    st->step++;
    double t = (double)st->step;
    g = weight_decay(p, g, o->lr, o->weight_decay, o->decoupled_weight_decay, &s);
    if (s != GF_OK) return s;
    if ((s = ema_(st->buf1, o->beta1, g)) != GF_OK) return s;
    if ((s = ema_(st->buf2, o->beta2, gf_mul(g, g))) != GF_OK) return s;
    double bc1 = 1.0 - pow(o->beta1, t), bc2 = 1.0 - pow(o->beta2, t);
    double rho_inf = 2.0 / (1.0 - o->beta2) - 1.0;
    double rho_t = rho_inf - 2.0 * t * pow(o->beta2, t) / bc2;
    gf_tensor *m_hat = gf_div_scalar(st->buf1, bc1);
    if (rho_t > 5.0) {
        double rect = sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf /
                           ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
        gf_tensor *adaptive = gf_div(gf_full_like(st->buf2, sqrt(bc2)),
                                     gf_add_scalar(gf_sqrt(st->buf2), o->eps));
        return update_(GFP_OP_SUB, p, gf_mul_scalar(gf_mul(m_hat, adaptive), o->lr * rect));
    }
    return update_(GFP_OP_SUB, p, gf_mul_scalar(m_hat, o->lr));
}

/* One parameter's update with its group's hyperparameters. */
static gf_status update_one(gf_optimizer *opt, param_state *st, gf_tensor *g) {
    const opt_group *gr = &opt->groups[st->group];
    switch (opt->kind) {
    case OPT_SGD: {
        gf_sgd_opts o = opt->sgd;
        o.lr = gr->lr;
        o.weight_decay = gr->weight_decay;
        return sgd_update(&o, st, g);
    }
    case OPT_ADAM: {
        gf_adam_opts o = opt->adam;
        o.lr = gr->lr;
        o.weight_decay = gr->weight_decay;
        return adam_update(&o, st, g);
    }
    case OPT_RMSPROP: {
        gf_rmsprop_opts o = opt->rmsprop;
        o.lr = gr->lr;
        o.weight_decay = gr->weight_decay;
        return rmsprop_update(&o, st, g);
    }
    case OPT_ADAGRAD: {
        gf_adagrad_opts o = opt->adagrad;
        o.lr = gr->lr;
        o.weight_decay = gr->weight_decay;
        return adagrad_update(&o, st, g);
    }
    case OPT_ADADELTA: {
        gf_adadelta_opts o = opt->adadelta;
        o.lr = gr->lr;
        o.weight_decay = gr->weight_decay;
        return adadelta_update(&o, st, g);
    }
    case OPT_NADAM: {
        gf_nadam_opts o = opt->nadam;
        o.lr = gr->lr;
        o.weight_decay = gr->weight_decay;
        return nadam_update(&o, st, g);
    }
    case OPT_RADAM: {
        gf_radam_opts o = opt->radam;
        o.lr = gr->lr;
        o.weight_decay = gr->weight_decay;
        return radam_update(&o, st, g);
    }
    }
    return gf__error(GF_ERR_INVALID, "gf_optimizer_step: unknown optimiser kind %d", (int)opt->kind);
}

/* A complex parameter is updated as PyTorch does it: through
 * gf_view_as_real of the parameter, its gradient and its state, so the real
 * and imaginary parts are separate coordinates (Adam's second moment is
 * per part, not |g|^2). The state stays complex (as torch's state_dict
 * has it); buffers the update creates come back as complex views. Runs in
 * the step's scope. */
static gf_status update_complex(gf_optimizer *opt, param_state *st, gf_tensor *g) {
    param_state tmp = *st;
    gf_tensor **bufs[3] = {&st->buf1, &st->buf2, &st->buf3};
    gf_tensor **tbufs[3] = {&tmp.buf1, &tmp.buf2, &tmp.buf3};
    gf_tensor *views[3] = {0};
    tmp.param = gf_view_as_real(st->param);
    gf_tensor *gr = gf_view_as_real(g);
    for (int k = 0; k < 3; k++)
        if (*bufs[k]) views[k] = *tbufs[k] = gf_view_as_real(*bufs[k]);
    if (!tmp.param || !gr) return failed();
    gf_status s = update_one(opt, &tmp, gr);
    st->step = tmp.step;
    st->mu_product = tmp.mu_product;
    for (int k = 0; k < 3; k++) {
        gf_tensor *b = *tbufs[k];
        if (!b || b == views[k]) continue; /* none, or updated in place */
        gf_tensor *c = gf_view_as_complex(b); /* a buffer the update made: owned */
        gf_tensor_release(b);
        if (!c) return s == GF_OK ? failed() : s;
        gf_tensor_release(*bufs[k]);
        *bufs[k] = gf_scope_keep(c);
    }
    return s;
}

/* Opens the capture of a step: its host step goes first in the graph. */
static gf_status capture_begin(gf_optimizer *opt, const char *name, opt_capture **out) {
    *out = NULL;
    if (opt->kind != OPT_SGD && opt->kind != OPT_ADAM)
        return gf__graph_refuse(GF_ERR_UNSUPPORTED, "gf_optimizer_step: %s cannot be captured "
                                "yet (its update uses per-step host values a replay does not "
                                "recompute); capture SGD or Adam/AdamW, or run this step "
                                "outside the region", name);
    for (int i = 0; i < opt->n; i++)
        if (gf_dtype_is_complex(opt->ps[i].param->dtype))
            return gf__graph_refuse(GF_ERR_UNSUPPORTED, "gf_optimizer_step: parameter %d is "
                                    "complex; a step over complex parameters cannot be "
                                    "captured yet", i);
    opt_capture *oc = calloc(1, sizeof *oc);
    if (oc) oc->stepped = calloc((size_t)opt->n + 1, sizeof *oc->stepped);
    if (!oc || !oc->stepped) {
        if (oc) free(oc);
        return gf__graph_refuse(GF_ERR_OUT_OF_MEMORY, "gf_optimizer_step: out of host memory "
                                "while capturing");
    }
    /* The graph holds the optimiser: destroying it while the graph lives
     * drops only the caller's hold, and replays go on stepping it. */
    oc->opt = gf__optim_retain(opt);
    gf_status s = gf__graph_add_host(opt_replay_step, oc, opt_capture_free);
    if (s == GF_OK) *out = oc;
    return s;
}

gf_status gf_optimizer_step(gf_optimizer *opt) {
    if (!opt) return gf__error(GF_ERR_INVALID, "gf_optimizer_step: opt is NULL");
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_status s = GF_OK;
    static const char *const prof_names[] = {"SGD.step",      "Adam.step",  "RMSprop.step",
                                             "Adagrad.step",  "Adadelta.step", "NAdam.step",
                                             "RAdam.step"};
    const char *prof_name = prof_names[opt->kind];
    opt_capture *oc = NULL;
    if (gf__capturing()) {
        s = capture_begin(opt, prof_name, &oc);
        if (s != GF_OK) {
            gf_grad_mode_set(prev);
            return s;
        }
    }
    uint64_t prof_t0 = gf__prof_on() ? gf__prof_span_begin("optimizer", prof_name) : 0;
    for (int i = 0; i < opt->n && s == GF_OK; i++) {
        param_state *st = &opt->ps[i];
        gf_scope_begin();
        gf_tensor *g = gf_tensor_grad(st->param);
        tl_oc = oc;
        tl_param = i;
        if (g && oc && opt->kind == OPT_ADAM) oc->stepped[oc->n_stepped++] = i;
        if (g) /* parameters without a gradient are skipped, as in PyTorch */
            s = gf_dtype_is_complex(st->param->dtype) ? update_complex(opt, st, g)
                                                      : update_one(opt, st, g);
        tl_oc = NULL;
        gf_scope_end();
        if (s != GF_OK) {
            char msg[900];
            snprintf(msg, sizeof msg, "%s", gf__message());
            char shape[200];
            gf__error(s, "gf_optimizer_step: updating parameter %d (%s%s) failed: %s", i,
                      gf_dtype_name(st->param->dtype),
                      gf__shape_str(st->param->sizes, st->param->rank, shape, sizeof shape), msg);
        }
    }
    if (prof_t0) gf__prof_span_end("optimizer", prof_name, prof_t0);
    gf_grad_mode_set(prev);
    return s;
}

gf_status gf_optimizer_zero_grad(gf_optimizer *opt) {
    if (!opt) return gf__error(GF_ERR_INVALID, "gf_optimizer_zero_grad: opt is NULL");
    for (int i = 0; i < opt->n; i++) {
        gf_status s = gf_tensor_set_grad(opt->ps[i].param, NULL);
        if (s != GF_OK) return s;
    }
    return GF_OK;
}

gf_status gf_optimizer_zero_grad_keep(gf_optimizer *opt) {
    if (!opt) return gf__error(GF_ERR_INVALID, "gf_optimizer_zero_grad_keep: opt is NULL");
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_status s = GF_OK;
    for (int i = 0; i < opt->n && s == GF_OK; i++) {
        gf_scope_begin(); /* holds gf_tensor_grad's reference */
        gf_tensor *g = gf_tensor_grad(opt->ps[i].param);
        if (g) s = gf_zero_(g);
        gf_scope_end();
    }
    gf_grad_mode_set(prev);
    return s;
}

int gf_optimizer_num_params(const gf_optimizer *opt) { return opt ? opt->n : 0; }

gf_tensor *gf_optimizer_param(const gf_optimizer *opt, int i) {
    if (!opt) {
        gf__error(GF_ERR_INVALID, "gf_optimizer_param: opt is NULL");
        return NULL;
    }
    if (i < 0 || i >= opt->n) {
        gf__error(GF_ERR_INDEX, "gf_optimizer_param: index %d is out of range for %d parameters "
                  "(gf_optimizer_num_params)", i, opt->n);
        return NULL;
    }
    return opt->ps[i].param;
}

gf_status gf_optimizer_set_lr(gf_optimizer *opt, double lr) {
    if (!opt) return gf__error(GF_ERR_INVALID, "gf_optimizer_set_lr: opt is NULL");
    if (!nonneg(lr))
        return gf__error(GF_ERR_INVALID, "gf_optimizer_set_lr: invalid learning rate %g; lr "
                         "must be >= 0 and finite", lr);
    for (int g = 0; g < opt->n_groups; g++) opt->groups[g].lr = lr;
    return GF_OK;
}

double gf_optimizer_get_lr(const gf_optimizer *opt) {
    if (!opt) return -1;
    return opt->groups[0].lr;
}

/* ------------------------------------------------------------ parameter groups */

gf_status gf_optimizer_add_param_group(gf_optimizer *opt, gf_tensor *const *params, int n,
                                       double lr, double weight_decay) {
    const char *op = "gf_optimizer_add_param_group";
    if (!opt) return gf__error(GF_ERR_INVALID, "%s: opt is NULL", op);
    if (opt->n_groups >= GF_OPTIMIZER_MAX_GROUPS)
        return gf__error(GF_ERR_INVALID, "%s: the optimiser has %d groups already, the most "
                         "allowed", op, opt->n_groups);
    /* NAN: the create call's value (torch's defaults of the optimiser). */
    double base_lr = 0, base_wd = 0;
    switch (opt->kind) {
    case OPT_SGD: base_lr = opt->sgd.lr, base_wd = opt->sgd.weight_decay; break;
    case OPT_ADAM: base_lr = opt->adam.lr, base_wd = opt->adam.weight_decay; break;
    case OPT_RMSPROP: base_lr = opt->rmsprop.lr, base_wd = opt->rmsprop.weight_decay; break;
    case OPT_ADAGRAD: base_lr = opt->adagrad.lr, base_wd = opt->adagrad.weight_decay; break;
    case OPT_ADADELTA: base_lr = opt->adadelta.lr, base_wd = opt->adadelta.weight_decay; break;
    case OPT_NADAM: base_lr = opt->nadam.lr, base_wd = opt->nadam.weight_decay; break;
    case OPT_RADAM: base_lr = opt->radam.lr, base_wd = opt->radam.weight_decay; break;
    }
    if (isnan(lr)) lr = base_lr;
    if (isnan(weight_decay)) weight_decay = base_wd;
    if (!nonneg(lr))
        return gf__error(GF_ERR_INVALID, "%s: invalid learning rate %g; it must be finite and "
                         ">= 0 (NAN for the optimiser's)", op, lr);
    if (!nonneg(weight_decay))
        return gf__error(GF_ERR_INVALID, "%s: invalid weight_decay %g; it must be finite and "
                         ">= 0 (NAN for the optimiser's)", op, weight_decay);
    gf_status s = check_params(op, params, n);
    if (s != GF_OK) return s;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < opt->n; j++)
            if (opt->ps[j].param == params[i])
                return gf__error(GF_ERR_INVALID, "%s: parameter %d of the new group is already "
                                 "parameter %d of group %d; a parameter may be in one group "
                                 "only", op, i, j, opt->ps[j].group);
    if (opt->n > INT_MAX - n)
        return gf__error(GF_ERR_INVALID, "%s: too many parameters", op);
    param_state *ps = realloc(opt->ps, sizeof *ps * (size_t)(opt->n + n));
    if (!ps) return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    opt->ps = ps;
    opt_group *gs = realloc(opt->groups, sizeof *gs * (size_t)(opt->n_groups + 1));
    if (!gs) return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    opt->groups = gs;
    gs[opt->n_groups] = (opt_group){lr, weight_decay, NAN};
    for (int i = 0; i < n; i++) {
        memset(&ps[opt->n + i], 0, sizeof *ps);
        ps[opt->n + i].param = gf_tensor_retain(params[i]);
        ps[opt->n + i].group = opt->n_groups;
    }
    opt->n += n;
    opt->n_groups++;
    return GF_OK;
}

int gf_optimizer_group_count(const gf_optimizer *opt) { return opt ? opt->n_groups : 0; }

static gf_status check_group(const gf_optimizer *opt, int group, const char *op) {
    if (!opt) return gf__error(GF_ERR_INVALID, "%s: opt is NULL", op);
    if (group < 0 || group >= opt->n_groups)
        return gf__error(GF_ERR_INDEX, "%s: group %d is out of range (the optimiser has %d)", op,
                         group, opt->n_groups);
    return GF_OK;
}

gf_status gf_optimizer_set_group_lr(gf_optimizer *opt, int group, double lr) {
    const char *op = "gf_optimizer_set_group_lr";
    gf_status s = check_group(opt, group, op);
    if (s != GF_OK) return s;
    if (!nonneg(lr))
        return gf__error(GF_ERR_INVALID, "%s: invalid learning rate %g; it must be finite and "
                         ">= 0", op, lr);
    opt->groups[group].lr = lr;
    return GF_OK;
}

double gf_optimizer_get_group_lr(const gf_optimizer *opt, int group) {
    if (!opt || group < 0 || group >= opt->n_groups) return -1;
    return opt->groups[group].lr;
}

gf_status gf_optimizer_set_group_weight_decay(gf_optimizer *opt, int group, double wd) {
    const char *op = "gf_optimizer_set_group_weight_decay";
    gf_status s = check_group(opt, group, op);
    if (s != GF_OK) return s;
    if (!nonneg(wd))
        return gf__error(GF_ERR_INVALID, "%s: invalid weight_decay %g; it must be finite and "
                         ">= 0", op, wd);
    opt->groups[group].weight_decay = wd;
    return GF_OK;
}

double gf_optimizer_get_group_weight_decay(const gf_optimizer *opt, int group) {
    if (!opt || group < 0 || group >= opt->n_groups) return -1;
    return opt->groups[group].weight_decay;
}

/* For the schedules (lr_schedule.c): torch's group["initial_lr"], set
 * once by the first schedule made on the optimiser. */
double gf__optim_initial_lr(gf_optimizer *opt, int group) {
    opt_group *g = &opt->groups[group];
    if (isnan(g->initial_lr)) g->initial_lr = g->lr;
    return g->initial_lr;
}

gf_optimizer *gf__optim_retain(gf_optimizer *opt) {
    __atomic_add_fetch(&opt->refs, 1, __ATOMIC_RELAXED);
    return opt;
}

/* Drops one hold; the state goes with the last (optim_internal.h). */
void gf_optimizer_destroy(gf_optimizer *opt) {
    if (!opt || __atomic_sub_fetch(&opt->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    for (int i = 0; i < opt->n; i++) {
        gf_tensor_release(opt->ps[i].param);
        gf_tensor_release(opt->ps[i].buf1);
        gf_tensor_release(opt->ps[i].buf2);
        gf_tensor_release(opt->ps[i].buf3);
    }
    free(opt->ps);
    free(opt->groups);
    free(opt);
}

/* ------------------------------------------------------------ state */
#define STATE_MAX_PREFIX 200

/* The state keys of each kind (torch's names), and where each lives:
 * slot 1..3 = buf1..buf3, slot 0 = the step count. */
typedef struct key_def {
    const char *name;
    int slot;
} key_def;
static const key_def sgd_keys[] = {{"momentum_buffer", 1}};
static const key_def adam_keys[] = {{"exp_avg", 1}, {"exp_avg_sq", 2}, {"step", 0}};
static const key_def rmsprop_keys[] = {
    {"square_avg", 1}, {"momentum_buffer", 2}, {"grad_avg", 3}, {"step", 0}};
static const key_def adagrad_keys[] = {{"sum", 1}, {"step", 0}};
static const key_def adadelta_keys[] = {{"square_avg", 1}, {"acc_delta", 2}, {"step", 0}};
/* slot 4: NAdam's mu_product, a 0-dim float (a number, not a buffer) */
static const key_def nadam_keys[] = {
    {"exp_avg", 1}, {"exp_avg_sq", 2}, {"mu_product", 4}, {"step", 0}};
#define MAX_KEYS 4
#define SLOT_MU 4

static const key_def *kind_keys(opt_kind k, int *n) {
    switch (k) {
    case OPT_SGD: *n = 1; return sgd_keys;
    case OPT_ADAM: *n = 3; return adam_keys;
    case OPT_RMSPROP: *n = 4; return rmsprop_keys;
    case OPT_ADADELTA: *n = 3; return adadelta_keys;
    case OPT_NADAM: *n = 4; return nadam_keys;
    case OPT_RADAM: *n = 3; return adam_keys;
    case OPT_ADAGRAD: break;
    }
    *n = 2;
    return adagrad_keys;
}

static const char *kind_name(opt_kind k) {
    static const char *const names[] = {"SGD",     "Adam",  "RMSprop", "Adagrad",
                                        "Adadelta", "NAdam", "RAdam"};
    return names[k];
}

/* Whether a stepped parameter of this optimiser has key k (its options
 * decide: SGD's buffer needs momentum, RMSprop's momentum buffer and
 * grad_avg need momentum and centered). */
static bool key_used(const gf_optimizer *opt, int k) {
    switch (opt->kind) {
    case OPT_SGD: return opt->sgd.momentum != 0;
    case OPT_RMSPROP:
        return k == 1 ? opt->rmsprop.momentum > 0 : k == 2 ? opt->rmsprop.centered : true;
    default: return true;
    }
}

static gf_tensor *slot_of(const param_state *st, int slot) {
    return slot == 1 ? st->buf1 : slot == 2 ? st->buf2 : st->buf3;
}

static gf_status add_entry(gf_tensor_dict *d, const char *prefix, int i, const char *key,
                           gf_tensor *t) {
    char name[STATE_MAX_PREFIX + 64];
    int len = snprintf(name, sizeof name, "%s%d.%s", prefix, i, key);
    return gf__dict_add(d, name, (size_t)len, t);
}

gf_tensor_dict *gf_optimizer_state_dict(const gf_optimizer *opt, const char *prefix) {
    const char *op = "gf_optimizer_state_dict";
    if (!opt) {
        gf__error(GF_ERR_INVALID, "%s: opt is NULL", op);
        return NULL;
    }
    if (!prefix) prefix = "";
    if (strlen(prefix) > STATE_MAX_PREFIX) {
        gf__error(GF_ERR_INVALID, "%s: the prefix is %zu bytes long; at most %d are allowed", op,
                  strlen(prefix), STATE_MAX_PREFIX);
        return NULL;
    }
    gf_tensor_dict *d = gf__dict_new();
    if (!d) return NULL;
    gf_status s = GF_OK;
    int saved = gf__scope_suspend();
    int nk;
    const key_def *keys = kind_keys(opt->kind, &nk);
    for (int i = 0; i < opt->n && s == GF_OK; i++) {
        const param_state *st = &opt->ps[i];
        if (!st->buf1) continue; /* not stepped yet (or SGD without momentum) */
        for (int k = 0; k < nk && s == GF_OK; k++) {
            if (!key_used(opt, k)) continue;
            gf_tensor *t = keys[k].slot == SLOT_MU
                               ? gf__scalar(st->mu_product, gf_dtype_to_real(st->param->dtype),
                                            st->param->storage->device)
                           : keys[k].slot
                               ? gf_tensor_retain(slot_of(st, keys[k].slot))
                               : gf__scalar((double)st->step, GF_I64, st->param->storage->device);
            s = t ? add_entry(d, prefix, i, keys[k].name, t) : gf__status();
        }
    }
    gf__scope_resume(saved);
    if (s == GF_OK) s = gf__optim_groups_put(opt, d, prefix); /* optim_groups.c */
    if (s != GF_OK) {
        gf_tensor_dict_destroy(d);
        return NULL;
    }
    return d;
}

/* Parses "<i>.<key>" (after the prefix) against the optimiser's keys:
 * the parameter index and the key's position, or an error naming `name`. */
static gf_status parse_entry(const gf_optimizer *opt, const char *name, const char *rest,
                             int *index, int *key) {
    const char *op = "gf_optimizer_load_state_dict";
    char *end;
    errno = 0;
    long i = (rest[0] >= '0' && rest[0] <= '9') ? strtol(rest, &end, 10) : -1;
    if (i < 0 || errno || *end != '.')
        return gf__error(GF_ERR_INVALID, "%s: entry '%s' is not named <prefix><parameter "
                         "index>.<key>", op, name);
    if (i >= opt->n)
        return gf__error(GF_ERR_INVALID, "%s: entry '%s' is for parameter %ld, but the optimiser "
                         "has %d parameters (0 to %d): was the checkpoint made for another "
                         "model?", op, name, i, opt->n, opt->n - 1);
    int nk;
    const key_def *keys = kind_keys(opt->kind, &nk);
    char list[120] = "";
    for (int k = 0; k < nk; k++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", k ? ", " : "", keys[k].name);
        if (strcmp(end + 1, keys[k].name)) continue;
        if (!key_used(opt, k))
            return gf__error(GF_ERR_INVALID, "%s: entry '%s' is a %s, which this %s optimiser "
                             "does not keep: it %s", op, name, keys[k].name,
                             kind_name(opt->kind),
                             strcmp(keys[k].name, "grad_avg") ? "has no momentum"
                                                              : "is not centered");
        *index = (int)i;
        *key = k;
        return GF_OK;
    }
    return gf__error(GF_ERR_INVALID, "%s: entry '%s' has the key '%s', which %s state does not "
                     "have (its keys: %s): was it saved from another kind of optimiser?", op,
                     name, end + 1, kind_name(opt->kind), list);
}

/* Checks that t fits key k of parameter p. */
static gf_status check_entry(const gf_optimizer *opt, const char *name, const gf_tensor *t,
                             const gf_tensor *p, int k, int64_t *step, double *mu) {
    const char *op = "gf_optimizer_load_state_dict";
    int nk;
    const key_def *keys = kind_keys(opt->kind, &nk);
    if (keys[k].slot == SLOT_MU) {
        double f = -1;
        gf_tensor *c = t->rank == 0 && gf_dtype_is_float(t->dtype) ? gf_to_dtype(t, GF_F64) : NULL;
        gf_status s = c ? gf_tensor_to_host(c, &f, sizeof f) : GF_OK;
        gf_tensor_release(c);
        if (s != GF_OK) return s;
        if (!(f >= 0 && f <= 1))
            return gf__error(GF_ERR_INVALID, "%s: entry '%s' must be a 0-dim float in [0, 1] "
                             "(NAdam's product of mu; got %s of rank %d, value %g)", op, name,
                             gf_dtype_name(t->dtype), t->rank, f);
        *mu = f;
        return GF_OK;
    }
    if (keys[k].slot == 0) {
        /* PyTorch (1.12 on) keeps `step` as a 0-dim f32 tensor: a float
         * step is taken when it holds a whole number. */
        if (t->rank != 0 || t->dtype == GF_BOOL)
            return gf__error(GF_ERR_INVALID, "%s: entry '%s' must be a 0-dim step count, an "
                             "integer or a float holding a whole number (got %s of rank %d)", op,
                             name, gf_dtype_name(t->dtype), t->rank);
        int64_t v = 0;
        gf_status s;
        if (gf_dtype_is_float(t->dtype)) {
            double f = 0;
            gf_tensor *c = gf_to_dtype(t, GF_F64);
            s = c ? gf_tensor_to_host(c, &f, sizeof f) : gf__status();
            gf_tensor_release(c);
            if (s != GF_OK) return s;
            if (!(f >= 0 && f <= 9007199254740992.0) || f != floor(f))
                return gf__error(GF_ERR_INVALID, "%s: entry '%s' is not a step count: %s %g is "
                                 "not a whole number in [0, 2^53]", op, name,
                                 gf_dtype_name(t->dtype), f);
            v = (int64_t)f;
        } else {
            gf_tensor *c = gf_to_dtype(t, GF_I64);
            s = c ? gf_tensor_to_host(c, &v, sizeof v) : gf__status();
            gf_tensor_release(c);
            if (s != GF_OK) return s;
        }
        if (v < 0)
            return gf__error(GF_ERR_INVALID, "%s: entry '%s' is a negative step count (%lld)", op,
                             name, (long long)v);
        *step = v;
        return GF_OK;
    }
    bool same = t->rank == p->rank && t->dtype == p->dtype;
    for (int d = 0; same && d < t->rank; d++) same = t->sizes[d] == p->sizes[d];
    if (!same) {
        char a[200], b[200];
        return gf__error(GF_ERR_INVALID, "%s: entry '%s' is %s%s, but its parameter is %s%s", op,
                         name, gf_dtype_name(t->dtype),
                         gf__shape_str(t->sizes, t->rank, a, sizeof a),
                         gf_dtype_name(p->dtype), gf__shape_str(p->sizes, p->rank, b, sizeof b));
    }
    return GF_OK;
}

gf_status gf_optimizer_load_state_dict(gf_optimizer *opt, const gf_tensor_dict *d,
                                       const char *prefix) {
    const char *op = "gf_optimizer_load_state_dict";
    if (!opt) return gf__error(GF_ERR_INVALID, "%s: opt is NULL", op);
    if (!d) return gf__error(GF_ERR_INVALID, "%s: d is NULL", op);
    if (!prefix) prefix = "";
    size_t plen = strlen(prefix);
    int n = opt->n, nk;
    const key_def *keys = kind_keys(opt->kind, &nk);
    /* found[i * MAX_KEYS + k]: the entry of key k of parameter i; fresh[i *
     * 3 + slot - 1]: its copy on the parameter's device. */
    const gf_tensor **found = calloc((size_t)n * MAX_KEYS, sizeof *found);
    int64_t *steps = calloc((size_t)n, sizeof *steps);
    double *mus = calloc((size_t)n, sizeof *mus);
    gf_tensor **fresh = calloc((size_t)n * 3, sizeof *fresh);
    gf_status s = found && steps && mus && fresh
                      ? GF_OK
                      : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    gf__optim_groups *groups = NULL;
    for (int e = 0; s == GF_OK && e < gf_tensor_dict_size(d); e++) {
        const char *name = gf_tensor_dict_name(d, e);
        if (strncmp(name, prefix, plen)) continue;
        int i = 0, k = 0;
        s = parse_entry(opt, name, name + plen, &i, &k);
        if (s != GF_OK) break;
        const gf_tensor *t = gf_tensor_dict_at(d, e);
        s = check_entry(opt, name, t, opt->ps[i].param, k, &steps[i], &mus[i]);
        found[i * MAX_KEYS + k] = t;
    }
    /* Every key the options use, or none, per parameter. */
    int used = 0;
    for (int k = 0; k < nk; k++) used += key_used(opt, k);
    for (int i = 0; s == GF_OK && used > 1 && i < n; i++) {
        int have = 0;
        for (int k = 0; k < nk; k++) have += found[i * MAX_KEYS + k] != NULL;
        if (have != 0 && have != used) {
            char list[120] = "";
            for (int k = 0; k < nk; k++) {
                if (!key_used(opt, k)) continue;
                size_t l = strlen(list);
                snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", keys[k].name);
            }
            s = gf__error(GF_ERR_INVALID, "%s: parameter %d has %d of the %d %s state entries "
                          "(%s%d. + %s); give all of them or none", op, i, have, used,
                          kind_name(opt->kind), prefix, i, list);
        }
    }
    /* The param_groups (optim_groups.c), checked now, set with the state. */
    if (s == GF_OK) s = gf__optim_groups_parse(opt, d, prefix, &groups);
    /* Copies on each parameter's device, made before anything changes. */
    int saved = gf__scope_suspend();
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    for (int i = 0; s == GF_OK && i < n; i++) {
        for (int k = 0; k < nk && s == GF_OK; k++) {
            const gf_tensor *t = found[i * MAX_KEYS + k];
            if (!t || keys[k].slot == 0 || keys[k].slot == SLOT_MU) continue;
            gf_tensor *moved = gf_to_device(t, opt->ps[i].param->storage->device);
            gf_tensor *c = moved ? gf_clone(moved) : NULL;
            gf_tensor_release(moved);
            fresh[i * 3 + keys[k].slot - 1] = c;
            if (!c) s = failed();
        }
    }
    gf_grad_mode_set(prev);
    gf__scope_resume(saved);
    if (s == GF_OK) {
        for (int i = 0; i < n; i++) {
            param_state *st = &opt->ps[i];
            gf_tensor_release(st->buf1);
            gf_tensor_release(st->buf2);
            gf_tensor_release(st->buf3);
            st->buf1 = fresh[i * 3];
            st->buf2 = fresh[i * 3 + 1];
            st->buf3 = fresh[i * 3 + 2];
            st->step = st->buf1 ? steps[i] : 0;
            st->mu_product = st->buf1 ? mus[i] : 1.0;
        }
        gf__optim_groups_apply(opt, groups);
    } else if (fresh) {
        for (int i = 0; i < n * 3; i++) gf_tensor_release(fresh[i]);
    }
    gf__optim_groups_free(groups);
    free(found);
    free(steps);
    free(mus);
    free(fresh);
    return s;
}
