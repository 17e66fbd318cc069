/* SPDX-License-Identifier: BSD-3-Clause */
/* lr_schedule.c — learning-rate schedules (graft/schedule.h), as
 * torch.optim.lr_scheduler's closed forms: each lr is a function of the
 * group's initial_lr and the step count, so the state is small and a
 * resumed run sets exactly the lr an uninterrupted one would have. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "internal.h"
#include "interop_internal.h"
#include "optim_internal.h"

typedef enum sched_kind {
    S_STEP, S_MULTISTEP, S_EXP, S_COSINE, S_LINEAR, S_ONECYCLE, S_SEQ, S_LAMBDA, S_MULT,
    S_CONST
} sched_kind;

struct gf_lr_scheduler {
    sched_kind kind;
    int refs;          /* the caller's handle (or a sequential parent's), each graph holding a step */
    gf_optimizer *opt; /* held (gf__optim_retain) */
    int n_groups;
    double *base; /* initial_lr per group */
    double *last; /* the lr last set per group */
    int64_t last_epoch;
    /* parameters */
    int64_t step_size, t_max, total;
    double gamma, eta_min, start_factor, end_factor;
    int64_t *milestones;
    int n_milestones;
    gf_onecycle_opts oc;
    gf_lr_scheduler **children; /* sequential */
    int n_children;
    gf_lr_lambda fn; /* LambdaLR, MultiplicativeLR */
    void *user;
    double *prod;       /* MultiplicativeLR: the product of fn(1..prod_epoch) per group */
    int64_t prod_epoch; /* -1: none yet */
    double factor;      /* ConstantLR */
};

static const char *kind_name(sched_kind k) {
    static const char *const names[] = {"StepLR", "MultiStepLR", "ExponentialLR",
                                        "CosineAnnealingLR", "LinearLR", "OneCycleLR",
                                        "SequentialLR", "LambdaLR", "MultiplicativeLR",
                                        "ConstantLR"};
    return names[k];
}

/* MultiplicativeLR's factor up to epoch e for group g: the product of
 * fn(1..e), kept from the last call so that stepping costs one call of fn
 * (a resumed schedule recomputes it once). */
static double mult_product(const gf_lr_scheduler *s, int g, int64_t e) {
    gf_lr_scheduler *w = (gf_lr_scheduler *)s; /* the cache only */
    if (w->prod_epoch < 0 || w->prod_epoch > e) {
        for (int k = 0; k < w->n_groups; k++) w->prod[k] = 1.0;
        w->prod_epoch = 0;
    }
    while (w->prod_epoch < e) {
        w->prod_epoch++;
        for (int k = 0; k < w->n_groups; k++) w->prod[k] *= w->fn(w->prod_epoch, k, w->user);
    }
    return w->prod[g];
}

/* The closed-form lr of group g at epoch e. */
static double lr_at(const gf_lr_scheduler *s, int g, int64_t e) {
    double b = s->base[g];
    switch (s->kind) {
    case S_LAMBDA: return b * s->fn(e, g, s->user);
    case S_MULT: return b * mult_product(s, g, e);
    case S_CONST: return e < s->total ? b * s->factor : b;
    case S_STEP: return b * pow(s->gamma, (double)(e / s->step_size));
    case S_MULTISTEP: {
        int k = 0;
        while (k < s->n_milestones && s->milestones[k] <= e) k++;
        return b * pow(s->gamma, (double)k);
    }
    case S_EXP: return b * pow(s->gamma, (double)e);
    case S_COSINE:
        return s->eta_min +
               (b - s->eta_min) * (1 + cos(M_PI * (double)e / (double)s->t_max)) / 2;
    case S_LINEAR: {
        double t = (double)(e < s->total ? e : s->total) / (double)s->total;
        return b * (s->start_factor + (s->end_factor - s->start_factor) * t);
    }
    case S_ONECYCLE: {
        const gf_onecycle_opts *o = &s->oc;
        double init = o->max_lr / o->div_factor, min = init / o->final_div_factor;
        double T = (double)o->total_steps;
        /* (end_step, start lr, end lr) per phase, as PyTorch builds them */
        double ends[3], from[3], to[3];
        int np;
        if (o->three_phase) {
            np = 3;
            ends[0] = o->pct_start * T - 1;
            ends[1] = 2 * o->pct_start * T - 2;
            ends[2] = T - 1;
            from[0] = init, to[0] = o->max_lr;
            from[1] = o->max_lr, to[1] = init;
            from[2] = init, to[2] = min;
        } else {
            np = 2;
            ends[0] = o->pct_start * T - 1;
            ends[1] = T - 1;
            from[0] = init, to[0] = o->max_lr;
            from[1] = o->max_lr, to[1] = min;
        }
        double start = 0;
        for (int i = 0; i < np; i++) {
            if ((double)e <= ends[i] || i == np - 1) {
                double pct = ((double)e - start) / (ends[i] - start);
                if (o->anneal_linear) return (to[i] - from[i]) * pct + from[i];
                return to[i] + (from[i] - to[i]) / 2 * (cos(M_PI * pct) + 1);
            }
            start = ends[i];
        }
        return min; /* not reached */
    }
    case S_SEQ: {
        int i = 0;
        while (i < s->n_milestones && s->milestones[i] <= e) i++;
        int64_t off = i > 0 ? s->milestones[i - 1] : 0;
        return lr_at(s->children[i], g, e - off);
    }
    }
    return b;
}

/* Sets the base lrs of s and of the schedules it runs. */
static void set_base(gf_lr_scheduler *s, const double *base) {
    memcpy(s->base, base, sizeof *base * (size_t)s->n_groups);
    for (int i = 0; i < s->n_children; i++) set_base(s->children[i], base);
}

static gf_status apply(gf_lr_scheduler *s) {
    for (int g = 0; g < s->n_groups; g++) {
        double lr = lr_at(s, g, s->last_epoch);
        if (!(lr >= 0) || isinf(lr))
            return gf__error(GF_ERR_INVALID, "%s: step %lld gives learning rate %g for group %d; "
                             "check the schedule's parameters", kind_name(s->kind),
                             (long long)s->last_epoch, lr, g);
    }
    for (int g = 0; g < s->n_groups; g++) {
        s->last[g] = lr_at(s, g, s->last_epoch);
        gf_status st = gf_optimizer_set_group_lr(s->opt, g, s->last[g]);
        if (st != GF_OK) return st;
    }
    return GF_OK;
}

static gf_lr_scheduler *sched_new(sched_kind kind, gf_optimizer *opt) {
    if (!opt) {
        gf__error(GF_ERR_INVALID, "%s: opt is NULL", kind_name(kind));
        return NULL;
    }
    gf_lr_scheduler *s = calloc(1, sizeof *s);
    int n = gf_optimizer_group_count(opt);
    double *b = s ? calloc((size_t)n, sizeof *b) : NULL;
    double *l = b ? calloc((size_t)n, sizeof *l) : NULL;
    if (!l) {
        free(s);
        free(b);
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", kind_name(kind));
        return NULL;
    }
    s->kind = kind;
    s->refs = 1;
    s->opt = gf__optim_retain(opt);
    s->n_groups = n;
    s->base = b;
    s->last = l;
    for (int g = 0; g < n; g++) b[g] = gf__optim_initial_lr(opt, g);
    return s;
}

/* Sets the lr of step 0; frees s on failure. */
static gf_lr_scheduler *start(gf_lr_scheduler *s) {
    if (s && apply(s) != GF_OK) {
        gf_lr_scheduler_destroy(s);
        return NULL;
    }
    return s;
}

static bool bad(const char *name, const char *what, double v, const char *rule) {
    gf__error(GF_ERR_INVALID, "%s: invalid %s %g; it must be %s", name, what, v, rule);
    return true;
}

gf_lr_scheduler *gf_lr_step_create(gf_optimizer *opt, int64_t step_size, double gamma) {
    const char *k = "StepLR";
    if (step_size < 1 && bad(k, "step_size", (double)step_size, ">= 1")) return NULL;
    if (!(gamma >= 0) || isinf(gamma)) {
        bad(k, "gamma", gamma, "finite and >= 0");
        return NULL;
    }
    gf_lr_scheduler *s = sched_new(S_STEP, opt);
    if (!s) return NULL;
    s->step_size = step_size;
    s->gamma = gamma;
    return start(s);
}

gf_lr_scheduler *gf_lr_multistep_create(gf_optimizer *opt, const int64_t *milestones, int n,
                                        double gamma) {
    const char *k = "MultiStepLR";
    if (n < 0 || (n > 0 && !milestones)) {
        gf__error(GF_ERR_INVALID, "%s: milestones is NULL or n (%d) negative", k, n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (milestones[i] < 0 || (i > 0 && milestones[i] <= milestones[i - 1])) {
            gf__error(GF_ERR_INVALID, "%s: milestones must be increasing and >= 0 (milestone %d "
                      "is %lld)", k, i, (long long)milestones[i]);
            return NULL;
        }
    if (!(gamma >= 0) || isinf(gamma)) {
        bad(k, "gamma", gamma, "finite and >= 0");
        return NULL;
    }
    gf_lr_scheduler *s = sched_new(S_MULTISTEP, opt);
    if (!s) return NULL;
    s->milestones = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!s->milestones) {
        gf_lr_scheduler_destroy(s);
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", k);
        return NULL;
    }
    if (n) memcpy(s->milestones, milestones, sizeof(int64_t) * (size_t)n);
    s->n_milestones = n;
    s->gamma = gamma;
    return start(s);
}

gf_lr_scheduler *gf_lr_exponential_create(gf_optimizer *opt, double gamma) {
    if (!(gamma >= 0) || isinf(gamma)) {
        bad("ExponentialLR", "gamma", gamma, "finite and >= 0");
        return NULL;
    }
    gf_lr_scheduler *s = sched_new(S_EXP, opt);
    if (!s) return NULL;
    s->gamma = gamma;
    return start(s);
}

gf_lr_scheduler *gf_lr_cosine_create(gf_optimizer *opt, int64_t t_max, double eta_min) {
    const char *k = "CosineAnnealingLR";
    if (t_max < 1 && bad(k, "t_max", (double)t_max, ">= 1")) return NULL;
    if (!(eta_min >= 0) || isinf(eta_min)) {
        bad(k, "eta_min", eta_min, "finite and >= 0");
        return NULL;
    }
    gf_lr_scheduler *s = sched_new(S_COSINE, opt);
    if (!s) return NULL;
    s->t_max = t_max;
    s->eta_min = eta_min;
    return start(s);
}

gf_lr_scheduler *gf_lr_linear_create(gf_optimizer *opt, double start_factor, double end_factor,
                                     int64_t total_iters) {
    const char *k = "LinearLR";
    if (!(start_factor > 0 && start_factor <= 1)) {
        bad(k, "start_factor", start_factor, "in (0, 1]");
        return NULL;
    }
    if (!(end_factor >= 0 && end_factor <= 1)) {
        bad(k, "end_factor", end_factor, "in [0, 1]");
        return NULL;
    }
    if (total_iters < 1 && bad(k, "total_iters", (double)total_iters, ">= 1")) return NULL;
    gf_lr_scheduler *s = sched_new(S_LINEAR, opt);
    if (!s) return NULL;
    s->start_factor = start_factor;
    s->end_factor = end_factor;
    s->total = total_iters;
    return start(s);
}

gf_lr_scheduler *gf_lr_onecycle_create(gf_optimizer *opt, const gf_onecycle_opts *opts) {
    const char *k = "OneCycleLR";
    if (!opts) {
        gf__error(GF_ERR_INVALID, "%s: opts is NULL", k);
        return NULL;
    }
    gf_onecycle_opts o = *opts;
    if (gf__opts_check(k, "gf_onecycle_opts", "GF_ONECYCLE_OPTS_DEFAULT", o.init) != GF_OK)
        return NULL;
    if (!(o.max_lr >= 0) || isinf(o.max_lr)) {
        bad(k, "max_lr", o.max_lr, "finite and >= 0");
        return NULL;
    }
    if (o.total_steps < 1 && bad(k, "total_steps", (double)o.total_steps, ">= 1")) return NULL;
    if (!(o.pct_start >= 0 && o.pct_start <= 1)) {
        bad(k, "pct_start", o.pct_start, "in [0, 1]");
        return NULL;
    }
    if (!(o.div_factor > 0) || isinf(o.div_factor)) {
        bad(k, "div_factor", o.div_factor, "finite and > 0");
        return NULL;
    }
    if (!(o.final_div_factor > 0) || isinf(o.final_div_factor)) {
        bad(k, "final_div_factor", o.final_div_factor, "finite and > 0");
        return NULL;
    }
    gf_lr_scheduler *s = sched_new(S_ONECYCLE, opt);
    if (!s) return NULL;
    s->oc = o;
    return start(s);
}

gf_lr_scheduler *gf_lr_sequential_create(gf_optimizer *opt, gf_lr_scheduler *const *schedulers,
                                         int n, const int64_t *milestones) {
    const char *k = "SequentialLR";
    gf_lr_scheduler *s = NULL;
    const char *why = NULL;
    if (n < 1 || !schedulers) why = "give at least one schedule";
    else if (n > 1 && !milestones) why = "milestones is NULL";
    for (int i = 0; !why && i < n; i++)
        if (!schedulers[i]) why = "a schedule is NULL";
        else if (schedulers[i]->opt != opt)
            why = "every schedule must drive the optimiser given";
    for (int i = 0; !why && i + 1 < n; i++)
        if (milestones[i] < 1 || (i > 0 && milestones[i] <= milestones[i - 1]))
            why = "milestones must be increasing and >= 1";
    if (why) {
        gf__error(GF_ERR_INVALID, "%s: %s", k, why);
    } else {
        s = sched_new(S_SEQ, opt);
        gf_lr_scheduler **ch = s ? malloc(sizeof *ch * (size_t)n) : NULL;
        int64_t *ms = ch ? malloc(sizeof *ms * (size_t)n) : NULL;
        if (!ms) {
            free(ch);
            if (s) gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", k);
            gf_lr_scheduler_destroy(s);
            s = NULL;
        } else {
            memcpy(ch, schedulers, sizeof *ch * (size_t)n);
            if (n > 1) memcpy(ms, milestones, sizeof *ms * (size_t)(n - 1));
            s->children = ch;
            s->n_children = n;
            s->milestones = ms;
            s->n_milestones = n - 1;
            return start(s);
        }
    }
    for (int i = 0; schedulers && i < n; i++) gf_lr_scheduler_destroy(schedulers[i]);
    return NULL;
}

static gf_status sched_step(gf_lr_scheduler *s);

/* A step inside a captured region runs now and again at each replay (it
 * only moves host values: the optimiser's replayed step reads them). The
 * graph holds the schedule (and so its optimiser) until it goes. */
static gf_status sched_replay_step(void *s) { return sched_step(s); }
static void sched_release(void *s) { gf_lr_scheduler_destroy(s); }

gf_status gf_lr_scheduler_step(gf_lr_scheduler *s) {
    if (!s) return gf__error(GF_ERR_INVALID, "gf_lr_scheduler_step: the schedule is NULL");
    gf_status st = sched_step(s);
    if (st == GF_OK && gf__capturing()) {
        __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
        st = gf__graph_add_host(sched_replay_step, s, sched_release);
    }
    return st;
}

static gf_status sched_step(gf_lr_scheduler *s) {
    if (s->kind == S_ONECYCLE && s->last_epoch + 1 >= s->oc.total_steps)
        return gf__error(GF_ERR_INVALID, "OneCycleLR: tried to step %lld times; the specified "
                         "number of total steps is %lld", (long long)(s->last_epoch + 2),
                         (long long)s->oc.total_steps);
    s->last_epoch++;
    gf_status st = apply(s);
    if (st != GF_OK) s->last_epoch--;
    return st;
}

double gf_lr_scheduler_get_last_lr(const gf_lr_scheduler *s, int group) {
    if (!s || group < 0 || group >= s->n_groups) return -1;
    return s->last[group];
}

int64_t gf_lr_scheduler_last_epoch(const gf_lr_scheduler *s) { return s ? s->last_epoch : -1; }

#define SCHED_MAX_PREFIX 200

gf_tensor_dict *gf_lr_scheduler_state_dict(const gf_lr_scheduler *s, const char *prefix) {
    const char *op = "gf_lr_scheduler_state_dict";
    if (!s) {
        gf__error(GF_ERR_INVALID, "%s: the schedule is NULL", op);
        return NULL;
    }
    if (!prefix) prefix = "";
    if (strlen(prefix) > SCHED_MAX_PREFIX) {
        gf__error(GF_ERR_INVALID, "%s: the prefix is %zu bytes long; at most %d are allowed", op,
                  strlen(prefix), SCHED_MAX_PREFIX);
        return NULL;
    }
    gf_tensor_dict *d = gf__dict_new();
    if (!d) return NULL;
    int saved = gf__scope_suspend();
    char name[SCHED_MAX_PREFIX + 32];
    int64_t ng = s->n_groups;
    gf_tensor *e = gf_from_data(&s->last_epoch, NULL, 0, GF_I64, NULL);
    gf_tensor *b = gf_from_data(s->base, &ng, 1, GF_F64, NULL);
    gf_status st = e && b ? GF_OK : gf__status();
    if (st == GF_OK) {
        int len = snprintf(name, sizeof name, "%slast_epoch", prefix);
        st = gf__dict_add(d, name, (size_t)len, e);
        e = NULL;
    }
    if (st == GF_OK) {
        int len = snprintf(name, sizeof name, "%sbase_lrs", prefix);
        st = gf__dict_add(d, name, (size_t)len, b);
        b = NULL;
    }
    gf_tensor_release(e);
    gf_tensor_release(b);
    gf__scope_resume(saved);
    if (st != GF_OK) {
        gf_tensor_dict_destroy(d);
        return NULL;
    }
    return d;
}

gf_status gf_lr_scheduler_load_state_dict(gf_lr_scheduler *s, const gf_tensor_dict *d,
                                          const char *prefix) {
    const char *op = "gf_lr_scheduler_load_state_dict";
    if (!s || !d) return gf__error(GF_ERR_INVALID, "%s: %s is NULL", op, !s ? "the schedule" : "d");
    if (!prefix) prefix = "";
    if (strlen(prefix) > SCHED_MAX_PREFIX)
        return gf__error(GF_ERR_INVALID, "%s: the prefix is too long", op);
    char ne[SCHED_MAX_PREFIX + 32], nb[SCHED_MAX_PREFIX + 32];
    snprintf(ne, sizeof ne, "%slast_epoch", prefix);
    snprintf(nb, sizeof nb, "%sbase_lrs", prefix);
    const gf_tensor *te = NULL, *tb = NULL;
    for (int i = 0; i < gf_tensor_dict_size(d); i++) {
        if (!strcmp(gf_tensor_dict_name(d, i), ne)) te = gf_tensor_dict_at(d, i);
        if (!strcmp(gf_tensor_dict_name(d, i), nb)) tb = gf_tensor_dict_at(d, i);
    }
    if (!te || !tb)
        return gf__error(GF_ERR_INVALID, "%s: entry '%s' is missing", op, !te ? ne : nb);
    if (gf_tensor_rank(te) != 0 || gf_dtype_is_float(gf_tensor_dtype(te)) ||
        gf_tensor_dtype(te) == GF_BOOL)
        return gf__error(GF_ERR_INVALID, "%s: entry '%s' must be a 0-dim integer", op, ne);
    if (gf_tensor_rank(tb) != 1 || gf_tensor_size(tb, 0) != s->n_groups ||
        !gf_dtype_is_float(gf_tensor_dtype(tb)))
        return gf__error(GF_ERR_INVALID, "%s: entry '%s' must be a float vector of %d elements "
                         "(one per parameter group)", op, nb, s->n_groups);
    int64_t epoch = 0;
    double *base = calloc((size_t)s->n_groups, sizeof *base);
    if (!base) return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    int saved = gf__scope_suspend();
    gf_tensor *ce = gf_to_dtype(te, GF_I64), *cb = gf_to_dtype(tb, GF_F64);
    gf_status st = ce && cb ? gf_tensor_to_host(ce, &epoch, sizeof epoch) : gf__status();
    if (st == GF_OK) st = gf_tensor_to_host(cb, base, sizeof *base * (size_t)s->n_groups);
    gf_tensor_release(ce);
    gf_tensor_release(cb);
    gf__scope_resume(saved);
    for (int g = 0; st == GF_OK && g < s->n_groups; g++)
        if (!(base[g] >= 0) || isinf(base[g]))
            st = gf__error(GF_ERR_INVALID, "%s: entry '%s' holds %g for group %d; a learning "
                           "rate must be finite and >= 0", op, nb, base[g], g);
    if (st == GF_OK && (epoch < 0 || (s->kind == S_ONECYCLE && epoch >= s->oc.total_steps)))
        st = gf__error(GF_ERR_INVALID, "%s: entry '%s' is %lld, out of this schedule's range", op,
                       ne, (long long)epoch);
    if (st == GF_OK) {
        double *old = malloc(sizeof *old * (size_t)s->n_groups);
        if (!old) {
            st = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        } else {
            int64_t old_epoch = s->last_epoch;
            memcpy(old, s->base, sizeof *old * (size_t)s->n_groups);
            set_base(s, base);
            s->last_epoch = epoch;
            st = apply(s);
            if (st != GF_OK) { /* as it was */
                set_base(s, old);
                s->last_epoch = old_epoch;
            }
            free(old);
        }
    }
    free(base);
    return st;
}

gf_lr_scheduler *gf_lr_lambda_create(gf_optimizer *opt, gf_lr_lambda fn, void *user) {
    if (!fn) {
        gf__error(GF_ERR_INVALID, "LambdaLR: lr_lambda is NULL");
        return NULL;
    }
    gf_lr_scheduler *s = sched_new(S_LAMBDA, opt);
    if (!s) return NULL;
    s->fn = fn;
    s->user = user;
    return start(s);
}

gf_lr_scheduler *gf_lr_multiplicative_create(gf_optimizer *opt, gf_lr_lambda fn, void *user) {
    if (!fn) {
        gf__error(GF_ERR_INVALID, "MultiplicativeLR: lr_lambda is NULL");
        return NULL;
    }
    gf_lr_scheduler *s = sched_new(S_MULT, opt);
    if (!s) return NULL;
    s->prod = calloc((size_t)s->n_groups, sizeof *s->prod);
    if (!s->prod) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "MultiplicativeLR: out of host memory");
        gf_lr_scheduler_destroy(s);
        return NULL;
    }
    s->fn = fn;
    s->user = user;
    s->prod_epoch = -1;
    return start(s);
}

gf_lr_scheduler *gf_lr_constant_create(gf_optimizer *opt, double factor, int64_t total_iters) {
    const char *k = "ConstantLR";
    if (!(factor >= 0 && factor <= 1)) {
        bad(k, "factor", factor, "in [0, 1]");
        return NULL;
    }
    if (total_iters < 0 && bad(k, "total_iters", (double)total_iters, ">= 0")) return NULL;
    gf_lr_scheduler *s = sched_new(S_CONST, opt);
    if (!s) return NULL;
    s->factor = factor;
    s->total = total_iters;
    return start(s);
}

/* Drops one hold; the schedule (and its hold on the optimiser) goes with
 * the last. */
void gf_lr_scheduler_destroy(gf_lr_scheduler *s) {
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    gf_optimizer_destroy(s->opt);
    free(s->prod);
    for (int i = 0; i < s->n_children; i++) gf_lr_scheduler_destroy(s->children[i]);
    free(s->children);
    free(s->milestones);
    free(s->base);
    free(s->last);
    free(s);
}
