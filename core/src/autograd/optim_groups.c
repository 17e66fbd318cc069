/* SPDX-License-Identifier: BSD-3-Clause */
/* optim_groups.c — an optimiser's param_groups in its state dict.
 *
 * torch's optimizer.state_dict() is {"state": {i: {...}}, "param_groups":
 * [{"lr": ..., "betas": [...], ..., "params": [i, ...]}, ...]}. Flattened
 * into a safetensors file, the state's tensors are "state.<i>.<key>" and the
 * groups, which are not tensors, go into the file's string metadata as the
 * JSON text Python's json.dumps writes of that list. graft keeps them the
 * same way: gf_optimizer_state_dict(opt, prefix) puts the JSON under the
 * metadata key "<P>param_groups", P being the prefix without a trailing
 * "state." component ("state." gives "param_groups", "optim.state." gives
 * "optim.param_groups", "", "optim." and "mystate." give "param_groups",
 * "optim.param_groups" and "mystate.param_groups"), and gf_optimizer_load_state_dict reads it back.
 *
 * What loading does with each key (torch's load_state_dict replaces the
 * groups' hyperparameters with the checkpoint's, and so does graft):
 *  - lr, weight_decay, initial_lr: per group (graft keeps them per group);
 *  - the optimiser's other numbers (betas, eps, momentum, ...): graft keeps
 *    one value for all groups, so every group must give the same;
 *  - a value that changes which state the optimiser keeps (SGD's or
 *    RMSprop's momentum between 0 and not 0, RMSprop's centered) must be
 *    the optimiser's own: create it with the checkpoint's options;
 *  - amsgrad and maximize must be false (graft has neither); foreach,
 *    fused, capturable and differentiable are how torch runs the update,
 *    not what it computes, and are ignored; any other key is refused unless
 *    it is null or false;
 *  - "params" must list the indices graft gives that group's parameters
 *    (create call first, then each added group, in order).
 * Everything is checked before anything changes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop_internal.h"
#include "json_internal.h"
#include "optim_internal.h"

#define GROUPS_MAX_KEY 256

/* Where a key's value lives. */
typedef enum fkind {
    F_LR, F_WD, F_INITIAL_LR, /* per group */
    F_NUM,                    /* one double of the options */
    F_BETAS,                  /* two doubles: beta1, beta2 */
    F_BOOL,                   /* one bool of the options */
    F_STRUCT_NUM,             /* a double whose zero-ness must not change */
    F_STRUCT_BOOL             /* a bool that must not change */
} fkind;

typedef enum frange { R_NONNEG, R_UNIT_OPEN, R_UNIT_CLOSED, R_ANY } frange;

typedef struct field {
    const char *name;
    fkind kind;
    size_t off; /* into gf_optimizer; for F_BETAS beta1's (beta2 follows) */
    frange range;
} field;

#define OFF(m) offsetof(gf_optimizer, m)

static const field sgd_fields[] = {
    {"lr", F_LR, 0, R_NONNEG},
    {"momentum", F_STRUCT_NUM, OFF(sgd.momentum), R_NONNEG},
    {"dampening", F_NUM, OFF(sgd.dampening), R_ANY},
    {"weight_decay", F_WD, 0, R_NONNEG},
    {"nesterov", F_BOOL, OFF(sgd.nesterov), R_ANY},
};
static const field adam_fields[] = {
    {"lr", F_LR, 0, R_NONNEG},
    {"betas", F_BETAS, OFF(adam.beta1), R_UNIT_OPEN},
    {"eps", F_NUM, OFF(adam.eps), R_NONNEG},
    {"weight_decay", F_WD, 0, R_NONNEG},
    {"decoupled_weight_decay", F_BOOL, OFF(adam.decoupled_weight_decay), R_ANY},
};
static const field rmsprop_fields[] = {
    {"lr", F_LR, 0, R_NONNEG},
    {"momentum", F_STRUCT_NUM, OFF(rmsprop.momentum), R_NONNEG},
    {"alpha", F_NUM, OFF(rmsprop.alpha), R_UNIT_CLOSED},
    {"eps", F_NUM, OFF(rmsprop.eps), R_NONNEG},
    {"centered", F_STRUCT_BOOL, OFF(rmsprop.centered), R_ANY},
    {"weight_decay", F_WD, 0, R_NONNEG},
};
static const field adagrad_fields[] = {
    {"lr", F_LR, 0, R_NONNEG},
    {"lr_decay", F_NUM, OFF(adagrad.lr_decay), R_NONNEG},
    {"eps", F_NUM, OFF(adagrad.eps), R_NONNEG},
    {"weight_decay", F_WD, 0, R_NONNEG},
    {"initial_accumulator_value", F_NUM, OFF(adagrad.initial_accumulator_value), R_NONNEG},
};
static const field adadelta_fields[] = {
    {"lr", F_LR, 0, R_NONNEG},
    {"rho", F_NUM, OFF(adadelta.rho), R_UNIT_CLOSED},
    {"eps", F_NUM, OFF(adadelta.eps), R_NONNEG},
    {"weight_decay", F_WD, 0, R_NONNEG},
};
static const field nadam_fields[] = {
    {"lr", F_LR, 0, R_NONNEG},
    {"betas", F_BETAS, OFF(nadam.beta1), R_UNIT_OPEN},
    {"eps", F_NUM, OFF(nadam.eps), R_NONNEG},
    {"weight_decay", F_WD, 0, R_NONNEG},
    {"momentum_decay", F_NUM, OFF(nadam.momentum_decay), R_NONNEG},
    {"decoupled_weight_decay", F_BOOL, OFF(nadam.decoupled_weight_decay), R_ANY},
};
static const field radam_fields[] = {
    {"lr", F_LR, 0, R_NONNEG},
    {"betas", F_BETAS, OFF(radam.beta1), R_UNIT_OPEN},
    {"eps", F_NUM, OFF(radam.eps), R_NONNEG},
    {"weight_decay", F_WD, 0, R_NONNEG},
    {"decoupled_weight_decay", F_BOOL, OFF(radam.decoupled_weight_decay), R_ANY},
};

static const field *fields_of(opt_kind kind, int *n) {
#define CASE(k, a)                                                                              \
    case k: *n = (int)(sizeof a / sizeof a[0]); return a;
    switch (kind) {
    CASE(OPT_SGD, sgd_fields)
    CASE(OPT_ADAM, adam_fields)
    CASE(OPT_RMSPROP, rmsprop_fields)
    CASE(OPT_ADAGRAD, adagrad_fields)
    CASE(OPT_ADADELTA, adadelta_fields)
    CASE(OPT_NADAM, nadam_fields)
    CASE(OPT_RADAM, radam_fields)
    }
#undef CASE
    *n = 0;
    return NULL;
}

/* torch's flags about how the update runs (ignored), and those graft does
 * not have (false only). */
static bool ignored_key(const char *k) {
    return !strcmp(k, "foreach") || !strcmp(k, "fused") || !strcmp(k, "capturable") ||
           !strcmp(k, "differentiable");
}
static bool false_only_key(const char *k) { return !strcmp(k, "amsgrad") || !strcmp(k, "maximize"); }

static double *dbl_at(const gf_optimizer *o, size_t off) { return (double *)((char *)o + off); }
static bool *bool_at(const gf_optimizer *o, size_t off) { return (bool *)((char *)o + off); }

static void groups_key(const char *prefix, char *key, size_t cap) {
    size_t n = strlen(prefix), s = strlen("state.");
    if (n >= s && !strcmp(prefix + n - s, "state.") && (n == s || prefix[n - s - 1] == '.'))
        n -= s; /* "state." or "<...>.state." */
    snprintf(key, cap, "%.*sparam_groups", (int)n, prefix);
}

/* ------------------------------------------------------------ writing */
gf_status gf__optim_groups_put(const gf_optimizer *o, gf_tensor_dict *d, const char *prefix) {
    int nf;
    const field *fs = fields_of(o->kind, &nf);
    gf__sbuf b = {0};
    gf__sb_str(&b, "[");
    for (int g = 0; g < o->n_groups; g++) {
        const opt_group *gr = &o->groups[g];
        gf__sb_str(&b, g ? ", {" : "{");
        for (int f = 0; f < nf; f++) {
            gf__sb_str(&b, f ? ", " : "");
            gf__sb_json_string(&b, fs[f].name);
            gf__sb_str(&b, ": ");
            switch (fs[f].kind) {
            case F_LR: gf__sb_number(&b, gr->lr); break;
            case F_WD: gf__sb_number(&b, gr->weight_decay); break;
            case F_NUM:
            case F_STRUCT_NUM: gf__sb_number(&b, *dbl_at(o, fs[f].off)); break;
            case F_BETAS:
                gf__sb_str(&b, "[");
                gf__sb_number(&b, dbl_at(o, fs[f].off)[0]);
                gf__sb_str(&b, ", ");
                gf__sb_number(&b, dbl_at(o, fs[f].off)[1]);
                gf__sb_str(&b, "]");
                break;
            case F_BOOL:
            case F_STRUCT_BOOL: gf__sb_str(&b, *bool_at(o, fs[f].off) ? "true" : "false"); break;
            case F_INITIAL_LR: break;
            }
        }
        gf__sb_str(&b, ", \"maximize\": false");
        if (o->kind == OPT_ADAM) gf__sb_str(&b, ", \"amsgrad\": false");
        if (!isnan(gr->initial_lr)) {
            gf__sb_str(&b, ", \"initial_lr\": ");
            gf__sb_number(&b, gr->initial_lr);
        }
        gf__sb_str(&b, ", \"params\": [");
        for (int i = 0, k = 0; i < o->n; i++) {
            if (o->ps[i].group != g) continue;
            char num[24];
            snprintf(num, sizeof num, "%s%d", k++ ? ", " : "", i);
            gf__sb_str(&b, num);
        }
        gf__sb_str(&b, "]}");
    }
    gf__sb_str(&b, "]");
    if (b.oom) {
        free(b.p);
        return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for the param_groups");
    }
    char key[GROUPS_MAX_KEY];
    groups_key(prefix, key, sizeof key);
    return gf__dict_meta_put(d, key, b.p, true);
}

/* ------------------------------------------------------------ reading */
typedef struct group_vals {
    double lr, weight_decay, initial_lr; /* initial_lr NAN when absent */
    bool has_lr, has_wd;
} group_vals;

struct gf__optim_groups {
    int n;
    group_vals *g;
    /* The optimiser-wide values, as an image of the record's options. */
    gf_optimizer opts;
    bool has[16]; /* per field */
};

void gf__optim_groups_free(gf__optim_groups *g) {
    if (!g) return;
    free(g->g);
    free(g);
}

typedef struct reader {
    const char *op, *key;
    gf__jcur c;
    int group;
    char where[96];
} reader;

static gf_status bad(reader *r, const char *fmt, const char *detail) {
    char msg[400];
    snprintf(msg, sizeof msg, fmt, detail);
    return gf__error(GF_ERR_INVALID, "%s: metadata '%s', group %d: %s", r->op, r->key, r->group,
                     msg);
}

static gf_status malformed(reader *r) {
    return gf__error(GF_ERR_INVALID, "%s: metadata '%s' is not the JSON list of param_groups "
                     "torch's optimizer.state_dict() has (%s, at byte %d); write it with "
                     "json.dumps(optimizer.state_dict()['param_groups'])", r->op, r->key,
                     r->c.problem ? r->c.problem : "unexpected text", (int)(r->c.p - r->c.start));
}

static bool in_range(double v, frange r) {
    switch (r) {
    case R_NONNEG: return v >= 0 && !isinf(v);
    case R_UNIT_OPEN: return v >= 0 && v < 1;
    case R_UNIT_CLOSED: return v >= 0 && v <= 1;
    case R_ANY: return isfinite(v);
    }
    return false;
}

/* A number for field f into *v, checked against its range. */
static gf_status read_num(reader *r, const field *f, double *v) {
    if (!gf__jnumber(&r->c, v)) return malformed(r);
    if (!in_range(*v, f->range))
        return bad(r, "'%s' is out of its range (lr, eps, weight_decay and momentum >= 0, "
                   "betas in [0, 1), alpha and rho in [0, 1])", f->name);
    return GF_OK;
}

/* One optimiser-wide value: the first group sets it, the others must agree. */
static gf_status wide_num(reader *r, gf__optim_groups *out, int fi, size_t off, double v,
                          const char *name) {
    double *dst = dbl_at(&out->opts, off);
    if (out->has[fi] && *dst != v)
        return bad(r, "'%s' differs from group 0's; graft keeps one value of it for all "
                   "groups (lr and weight_decay may differ)", name);
    *dst = v;
    return GF_OK;
}

static gf_status read_group(reader *r, const gf_optimizer *o, gf__optim_groups *out) {
    int nf;
    const field *fs = fields_of(o->kind, &nf);
    group_vals *gv = &out->g[r->group];
    gv->initial_lr = NAN;
    bool has_params = false;
    if (!gf__jlit(&r->c, '{')) return malformed(r);
    if (gf__jlit(&r->c, '}')) return bad(r, "%s", "the group is empty");
    for (;;) {
        char key[GROUPS_MAX_KEY];
        size_t kl;
        if (!gf__jstring(&r->c, key, sizeof key, &kl) || !gf__jlit(&r->c, ':')) return malformed(r);
        int fi = -1;
        for (int f = 0; f < nf; f++)
            if (!strcmp(fs[f].name, key)) fi = f;
        gf_status s = GF_OK;
        if (fi >= 0) {
            const field *f = &fs[fi];
            double v = 0, v2 = 0;
            bool bv = false;
            switch (f->kind) {
            case F_LR:
                s = read_num(r, f, &gv->lr);
                gv->has_lr = true;
                break;
            case F_WD:
                s = read_num(r, f, &gv->weight_decay);
                gv->has_wd = true;
                break;
            case F_INITIAL_LR: break;
            case F_NUM:
            case F_STRUCT_NUM:
                s = read_num(r, f, &v);
                if (s == GF_OK && f->kind == F_STRUCT_NUM &&
                    (v == 0) != (*dbl_at(o, f->off) == 0))
                    s = bad(r, "'%s' is zero on one side only (checkpoint or optimiser): it "
                            "decides which state is kept; create the optimiser with the "
                            "checkpoint's value", f->name);
                if (s == GF_OK) s = wide_num(r, out, fi, f->off, v, f->name);
                break;
            case F_BETAS:
                if (!gf__jlit(&r->c, '[')) return malformed(r);
                s = read_num(r, f, &v);
                if (s == GF_OK && !gf__jlit(&r->c, ',')) return malformed(r);
                if (s == GF_OK) s = read_num(r, f, &v2);
                if (s == GF_OK && !gf__jlit(&r->c, ']')) return malformed(r);
                if (s == GF_OK) s = wide_num(r, out, fi, f->off, v, f->name);
                if (s == GF_OK) s = wide_num(r, out, fi, f->off + sizeof(double), v2, f->name);
                break;
            case F_BOOL:
            case F_STRUCT_BOOL:
                if (!gf__jbool(&r->c, &bv)) return malformed(r);
                if (f->kind == F_STRUCT_BOOL && bv != *bool_at(o, f->off))
                    s = bad(r, "'%s' differs from the optimiser's: it decides which state is "
                            "kept; create the optimiser with the checkpoint's value", f->name);
                else if (out->has[fi] && *bool_at(&out->opts, f->off) != bv)
                    s = bad(r, "'%s' differs from group 0's; graft keeps one value of it for "
                            "all groups", f->name);
                else
                    *bool_at(&out->opts, f->off) = bv;
                break;
            }
            out->has[fi] = true;
        } else if (!strcmp(key, "initial_lr")) {
            if (!gf__jnumber(&r->c, &gv->initial_lr)) return malformed(r);
            if (!in_range(gv->initial_lr, R_NONNEG))
                s = bad(r, "'%s' is out of its range (>= 0)", key);
        } else if (!strcmp(key, "params")) {
            /* the indices graft gives this group's parameters, in order */
            if (!gf__jlit(&r->c, '[')) return malformed(r);
            int i = 0;
            bool empty = gf__jlit(&r->c, ']');
            while (!empty && s == GF_OK) {
                double v;
                if (!gf__jnumber(&r->c, &v)) return malformed(r);
                while (i < o->n && o->ps[i].group != r->group) i++;
                if (i >= o->n || v != (double)i) {
                    char detail[160];
                    snprintf(detail, sizeof detail, "%.0f where graft has %s", v,
                             i >= o->n ? "no more parameters in it" : "another index");
                    s = bad(r, "'params' lists %s (parameters are numbered in the order they "
                            "were given: the create call's, then each added group's)", detail);
                }
                i++;
                if (gf__jlit(&r->c, ']')) break;
                if (!gf__jlit(&r->c, ',')) return malformed(r);
            }
            while (s == GF_OK && i < o->n && o->ps[i].group != r->group) i++;
            if (s == GF_OK && i < o->n)
                s = bad(r, "%s", "'params' lists fewer parameters than graft's group has");
            has_params = true;
        } else if (ignored_key(key)) {
            if (!gf__jskip(&r->c, 1)) return malformed(r);
        } else {
            bool bv = true;
            if (gf__jnull(&r->c)) bv = false;
            else if (!gf__jbool(&r->c, &bv)) {
                r->c.problem = NULL;
                s = bad(r, false_only_key(key)
                               ? "'%s' is set: graft's optimisers do not have it"
                               : "'%s' is not an option of this optimiser in graft", key);
            }
            if (s == GF_OK && bv)
                s = bad(r, false_only_key(key) ? "'%s' is true: graft's optimisers do not have it"
                                               : "'%s' is not an option of this optimiser in "
                                                 "graft (only null or false can be ignored)",
                        key);
        }
        if (s != GF_OK) return s;
        if (gf__jlit(&r->c, '}')) break;
        if (!gf__jlit(&r->c, ',')) return malformed(r);
    }
    if (!has_params) return bad(r, "%s", "it has no 'params' list");
    if (!gv->has_lr) return bad(r, "%s", "it has no 'lr'");
    return GF_OK;
}

gf_status gf__optim_groups_parse(const gf_optimizer *o, const gf_tensor_dict *d,
                                 const char *prefix, gf__optim_groups **out) {
    *out = NULL;
    char key[GROUPS_MAX_KEY];
    groups_key(prefix, key, sizeof key);
    const char *text = gf__dict_meta(d, key);
    if (!text) return GF_OK;
    gf__optim_groups *g = calloc(1, sizeof *g);
    group_vals *gv = g ? calloc((size_t)o->n_groups, sizeof *gv) : NULL;
    if (!gv) {
        free(g);
        return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for the param_groups");
    }
    g->g = gv;
    g->n = o->n_groups;
    g->opts = *o; /* every option as it is, until a group says otherwise */
    reader r = {.op = "gf_optimizer_load_state_dict", .key = key};
    r.c = (gf__jcur){.start = text, .p = text, .end = text + strlen(text)};
    gf_status s = GF_OK;
    if (!gf__jlit(&r.c, '[')) s = malformed(&r);
    int count = 0;
    if (s == GF_OK && !gf__jlit(&r.c, ']')) {
        for (;;) {
            if (count == o->n_groups) {
                s = gf__error(GF_ERR_INVALID, "%s: metadata '%s' has more param_groups than "
                              "the optimiser's %d; add the groups (gf_optimizer_add_param_group) "
                              "before loading", r.op, key, o->n_groups);
                break;
            }
            r.group = count;
            s = read_group(&r, o, g);
            if (s != GF_OK) break;
            count++;
            if (gf__jlit(&r.c, ']')) break;
            if (!gf__jlit(&r.c, ',')) {
                s = malformed(&r);
                break;
            }
        }
    }
    if (s == GF_OK) {
        gf__jws(&r.c);
        if (r.c.p != r.c.end) s = malformed(&r);
    }
    if (s == GF_OK && count != o->n_groups)
        s = gf__error(GF_ERR_INVALID, "%s: metadata '%s' has %d param_groups, the optimiser %d; "
                      "create it with the same groups", r.op, key, count, o->n_groups);
    if (s != GF_OK) {
        gf__optim_groups_free(g);
        return s;
    }
    *out = g;
    return GF_OK;
}

void gf__optim_groups_apply(gf_optimizer *o, const gf__optim_groups *g) {
    if (!g) return;
    int nf;
    const field *fs = fields_of(o->kind, &nf);
    for (int f = 0; f < nf; f++) {
        if (!g->has[f]) continue;
        switch (fs[f].kind) {
        case F_NUM:
        case F_STRUCT_NUM: *dbl_at(o, fs[f].off) = *dbl_at(&g->opts, fs[f].off); break;
        case F_BETAS:
            dbl_at(o, fs[f].off)[0] = dbl_at(&g->opts, fs[f].off)[0];
            dbl_at(o, fs[f].off)[1] = dbl_at(&g->opts, fs[f].off)[1];
            break;
        case F_BOOL:
        case F_STRUCT_BOOL: *bool_at(o, fs[f].off) = *bool_at(&g->opts, fs[f].off); break;
        default: break;
        }
    }
    for (int i = 0; i < g->n; i++) {
        opt_group *gr = &o->groups[i];
        if (g->g[i].has_lr) gr->lr = g->g[i].lr;
        if (g->g[i].has_wd) gr->weight_decay = g->g[i].weight_decay;
        if (!isnan(g->g[i].initial_lr)) gr->initial_lr = g->g[i].initial_lr;
    }
}
