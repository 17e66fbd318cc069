/* optim.c — SGD and Adam/AdamW, with the update rules of torch.optim.
 *
 * A step runs under no-grad (in-place writes to leaves that require grad are
 * allowed there, and nothing is recorded) with graft's public ops, so it works
 * on whatever device the parameters live on. Intermediates live in a private
 * scope; the optimiser's state (momentum buffers, moments) is kept out of it.
 * The parameters' .grad tensors are only read, never written. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"
#include "profiler_internal.h"
#include "interop_internal.h"

typedef enum opt_kind { OPT_SGD, OPT_ADAM, OPT_RMSPROP, OPT_ADAGRAD } opt_kind;

/* Per-parameter state: SGD uses buf1 (momentum buffer); Adam uses buf1
 * (exp_avg), buf2 (exp_avg_sq) and step (its own count, as PyTorch keeps
 * one per parameter: a parameter skipped for lack of a gradient does not
 * advance its bias correction). RMSprop: buf1 square_avg, buf2 the momentum
 * buffer, buf3 grad_avg (centered). Adagrad: buf1 the sum of squares,
 * step its own count (for lr_decay). */
typedef struct param_state {
    gf_tensor *param; /* reference */
    gf_tensor *buf1, *buf2, *buf3;
    int64_t step;
} param_state;

struct gf_optimizer {
    opt_kind kind;
    gf_sgd_opts sgd;
    gf_adam_opts adam; /* defaults resolved */
    gf_rmsprop_opts rmsprop;
    gf_adagrad_opts adagrad;
    int n;
    param_state *ps;
};

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
        if (!gf_dtype_is_float(p->dtype))
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

static gf_optimizer *opt_new(opt_kind kind, gf_tensor *const *params, int n) {
    gf_optimizer *o = calloc(1, sizeof *o);
    param_state *ps = o ? calloc((size_t)n, sizeof *ps) : NULL;
    if (!ps) {
        free(o);
        gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for the optimiser's state");
        return NULL;
    }
    o->kind = kind;
    o->n = n;
    o->ps = ps;
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
    gf_optimizer *opt = opt_new(OPT_SGD, params, n);
    if (opt) opt->sgd = o;
    return opt;
}

gf_optimizer *gf_adam_create(gf_tensor *const *params, int n, const gf_adam_opts *opts) {
    const char *op = "gf_adam_create";
    gf_adam_opts o = {0};
    if (opts) o = *opts;
    /* 0 selects the documented default (the header's contract). */
    if (o.lr == 0) o.lr = 1e-3;
    if (o.beta1 == 0) o.beta1 = 0.9;
    if (o.beta2 == 0) o.beta2 = 0.999;
    if (o.eps == 0) o.eps = 1e-8;
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
    gf_optimizer *opt = opt_new(OPT_ADAM, params, n);
    if (opt) opt->adam = o;
    return opt;
}

gf_optimizer *gf_rmsprop_create(gf_tensor *const *params, int n, const gf_rmsprop_opts *opts) {
    const char *op = "gf_rmsprop_create";
    gf_rmsprop_opts o = {0};
    if (opts) o = *opts;
    if (o.lr == 0) o.lr = 1e-2;
    if (o.alpha == 0) o.alpha = 0.99;
    if (o.eps == 0) o.eps = 1e-8;
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
    gf_optimizer *opt = opt_new(OPT_RMSPROP, params, n);
    if (opt) opt->rmsprop = o;
    return opt;
}

gf_optimizer *gf_adagrad_create(gf_tensor *const *params, int n, const gf_adagrad_opts *opts) {
    const char *op = "gf_adagrad_create";
    gf_adagrad_opts o = {0};
    if (opts) o = *opts;
    if (o.lr == 0) o.lr = 1e-2;
    if (o.eps == 0) o.eps = 1e-10;
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
    gf_optimizer *opt = opt_new(OPT_ADAGRAD, params, n);
    if (opt) opt->adagrad = o;
    return opt;
}

/* A failed op's status; never GF_OK (a NULL result always means failure). */
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
    return update_(GFP_OP_SUB, p, gf_mul_scalar(d, o->lr));
}

/* PyTorch's Adam/AdamW: (AdamW: p *= 1 - lr * wd; Adam: g += wd * p);
 * m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
 * p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps). */
static gf_status adam_update(const gf_adam_opts *o, param_state *st, gf_tensor *g) {
    gf_tensor *p = st->param;
    gf_status s;
    if (o->weight_decay != 0) {
        if (o->decoupled_weight_decay) {
            s = scale_(p, 1.0 - o->lr * o->weight_decay);
            if (s != GF_OK) return s;
        } else {
            g = gf_add(g, gf_mul_scalar(p, o->weight_decay));
            if (!g) return failed();
        }
    }
    if (!st->buf1) {
        gf_tensor *m = gf_zeros_like(p);
        if (!m) return failed();
        st->buf1 = gf_scope_keep(m);
        gf_tensor *v = gf_zeros_like(p);
        if (!v) return failed();
        st->buf2 = gf_scope_keep(v);
    }
    st->step++;
    if ((s = scale_(st->buf1, o->beta1)) != GF_OK) return s;
    if ((s = update_(GFP_OP_ADD, st->buf1, gf_mul_scalar(g, 1.0 - o->beta1))) != GF_OK) return s;
    if ((s = scale_(st->buf2, o->beta2)) != GF_OK) return s;
    if ((s = update_(GFP_OP_ADD, st->buf2, gf_mul_scalar(gf_mul(g, g), 1.0 - o->beta2))) != GF_OK)
        return s;
    double bc1 = 1.0 - pow(o->beta1, (double)st->step);
    double bc2 = 1.0 - pow(o->beta2, (double)st->step);
    gf_tensor *denom = gf_add_scalar(gf_div_scalar(gf_sqrt(st->buf2), sqrt(bc2)), o->eps);
    return update_(GFP_OP_SUB, p, gf_mul_scalar(gf_div(st->buf1, denom), o->lr / bc1));
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

gf_status gf_optimizer_step(gf_optimizer *opt) {
    if (!opt) return gf__error(GF_ERR_INVALID, "gf_optimizer_step: opt is NULL");
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_status s = GF_OK;
    const char *prof_name = opt->kind == OPT_SGD ? "SGD.step" : "Adam.step";
    uint64_t prof_t0 = gf__prof_on() ? gf__prof_span_begin("optimizer", prof_name) : 0;
    for (int i = 0; i < opt->n && s == GF_OK; i++) {
        param_state *st = &opt->ps[i];
        gf_scope_begin();
        gf_tensor *g = gf_tensor_grad(st->param);
        if (g) { /* parameters without a gradient are skipped, as in PyTorch */
            switch (opt->kind) {
            case OPT_SGD: s = sgd_update(&opt->sgd, st, g); break;
            case OPT_ADAM: s = adam_update(&opt->adam, st, g); break;
            case OPT_RMSPROP: s = rmsprop_update(&opt->rmsprop, st, g); break;
            case OPT_ADAGRAD: s = adagrad_update(&opt->adagrad, st, g); break;
            }
        }
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

gf_status gf_optimizer_set_lr(gf_optimizer *opt, double lr) {
    if (!opt) return gf__error(GF_ERR_INVALID, "gf_optimizer_set_lr: opt is NULL");
    if (!nonneg(lr))
        return gf__error(GF_ERR_INVALID, "gf_optimizer_set_lr: invalid learning rate %g; lr "
                         "must be >= 0 and finite", lr);
    if (opt->kind == OPT_SGD) opt->sgd.lr = lr;
    else opt->adam.lr = lr;
    return GF_OK;
}

double gf_optimizer_get_lr(const gf_optimizer *opt) {
    if (!opt) return -1;
    return opt->kind == OPT_SGD ? opt->sgd.lr : opt->adam.lr;
}

void gf_optimizer_destroy(gf_optimizer *opt) {
    if (!opt) return;
    for (int i = 0; i < opt->n; i++) {
        gf_tensor_release(opt->ps[i].param);
        gf_tensor_release(opt->ps[i].buf1);
        gf_tensor_release(opt->ps[i].buf2);
        gf_tensor_release(opt->ps[i].buf3);
    }
    free(opt->ps);
    free(opt);
}

/* ------------------------------------------------------------ state */
#define STATE_MAX_PREFIX 200

/* The state keys of each kind, in the order they are listed. */
static const char *const sgd_keys[] = {"momentum_buffer"};
static const char *const adam_keys[] = {"exp_avg", "exp_avg_sq", "step"};

static const char *kind_name(opt_kind k) { return k == OPT_SGD ? "SGD" : "Adam"; }

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
    for (int i = 0; i < opt->n && s == GF_OK; i++) {
        const param_state *st = &opt->ps[i];
        if (!st->buf1) continue; /* not stepped yet (or SGD without momentum) */
        if (opt->kind == OPT_SGD) {
            s = add_entry(d, prefix, i, sgd_keys[0], gf_tensor_retain(st->buf1));
            continue;
        }
        s = add_entry(d, prefix, i, adam_keys[0], gf_tensor_retain(st->buf1));
        if (s == GF_OK) s = add_entry(d, prefix, i, adam_keys[1], gf_tensor_retain(st->buf2));
        if (s != GF_OK) break;
        gf_tensor *step = gf__scalar((double)st->step, GF_I64, st->param->storage->device);
        s = step ? add_entry(d, prefix, i, adam_keys[2], step) : gf__status();
    }
    gf__scope_resume(saved);
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
    const char *const *keys = opt->kind == OPT_SGD ? sgd_keys : adam_keys;
    int n_keys = opt->kind == OPT_SGD ? 1 : 3;
    for (int k = 0; k < n_keys; k++) {
        if (strcmp(end + 1, keys[k])) continue;
        if (opt->kind == OPT_SGD && opt->sgd.momentum == 0)
            return gf__error(GF_ERR_INVALID, "%s: entry '%s' is a momentum buffer, but this SGD "
                             "optimiser has no momentum", op, name);
        *index = (int)i;
        *key = k;
        return GF_OK;
    }
    return gf__error(GF_ERR_INVALID, "%s: entry '%s' has the key '%s', which %s state does not "
                     "have (its keys: %s): was it saved from another kind of optimiser?", op,
                     name, end + 1, kind_name(opt->kind),
                     opt->kind == OPT_SGD ? "momentum_buffer" : "exp_avg, exp_avg_sq, step");
}

/* Checks that t fits key k of parameter p. */
static gf_status check_entry(const gf_optimizer *opt, const char *name, const gf_tensor *t,
                             const gf_tensor *p, int k, int64_t *step) {
    const char *op = "gf_optimizer_load_state_dict";
    if (opt->kind == OPT_ADAM && k == 2) {
        if (t->rank != 0 || gf_dtype_is_float(t->dtype) || t->dtype == GF_BOOL)
            return gf__error(GF_ERR_INVALID, "%s: entry '%s' must be a 0-dim integer step count "
                             "(got %s of rank %d)", op, name, gf_dtype_name(t->dtype), t->rank);
        int64_t v = 0;
        gf_tensor *c = gf_to_dtype(t, GF_I64);
        gf_status s = c ? gf_tensor_to_host(c, &v, sizeof v) : gf__status();
        gf_tensor_release(c);
        if (s != GF_OK) return s;
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
                         name, gf_dtype_name(t->dtype), gf__shape_str(t->sizes, t->rank, a, sizeof a),
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
    int n = opt->n, n_keys = opt->kind == OPT_SGD ? 1 : 3;
    /* found[i * 3 + k]: the entry of key k of parameter i. */
    const gf_tensor **found = calloc((size_t)n * 3, sizeof *found);
    int64_t *steps = calloc((size_t)n, sizeof *steps);
    gf_tensor **fresh = calloc((size_t)n * 2, sizeof *fresh);
    gf_status s = found && steps && fresh
                      ? GF_OK
                      : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    for (int e = 0; s == GF_OK && e < gf_tensor_dict_size(d); e++) {
        const char *name = gf_tensor_dict_name(d, e);
        if (strncmp(name, prefix, plen)) continue;
        int i = 0, k = 0;
        s = parse_entry(opt, name, name + plen, &i, &k);
        if (s != GF_OK) break;
        const gf_tensor *t = gf_tensor_dict_at(d, e);
        s = check_entry(opt, name, t, opt->ps[i].param, k, &steps[i]);
        found[i * 3 + k] = t;
    }
    for (int i = 0; s == GF_OK && opt->kind == OPT_ADAM && i < n; i++) {
        int have = (found[i * 3] != NULL) + (found[i * 3 + 1] != NULL) + (found[i * 3 + 2] != NULL);
        if (have != 0 && have != n_keys)
            s = gf__error(GF_ERR_INVALID, "%s: parameter %d has %d of the 3 Adam state entries "
                          "(%s%d.exp_avg, .exp_avg_sq, .step); give all of them or none", op, i,
                          have, prefix, i);
    }
    /* Copies on each parameter's device, made before anything changes. */
    int saved = gf__scope_suspend();
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    for (int i = 0; s == GF_OK && i < n; i++) {
        for (int k = 0; k < 2 && s == GF_OK; k++) {
            const gf_tensor *t = found[i * 3 + k];
            if (!t) continue;
            gf_tensor *moved = gf_to_device(t, opt->ps[i].param->storage->device);
            fresh[i * 2 + k] = moved ? gf_clone(moved) : NULL;
            gf_tensor_release(moved);
            if (!fresh[i * 2 + k]) s = failed();
        }
    }
    gf_grad_mode_set(prev);
    gf__scope_resume(saved);
    if (s == GF_OK) {
        for (int i = 0; i < n; i++) {
            param_state *st = &opt->ps[i];
            gf_tensor_release(st->buf1);
            gf_tensor_release(st->buf2);
            st->buf1 = fresh[i * 2];
            st->buf2 = fresh[i * 2 + 1];
            st->step = opt->kind == OPT_ADAM && st->buf1 ? steps[i] : 0;
        }
    } else if (fresh) {
        for (int i = 0; i < n * 2; i++) gf_tensor_release(fresh[i]);
    }
    free(found);
    free(steps);
    free(fresh);
    return s;
}
