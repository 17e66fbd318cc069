/* SPDX-License-Identifier: BSD-3-Clause */
/* module_state.c — load_state_dict, forward and its hooks (graft/module.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "module_internal.h"

/* ------------------------------------------------------------ load */
void gf_load_report_clear(gf_load_report *r) {
    if (!r) return;
    for (int i = 0; i < r->n_missing; i++) free(r->missing[i]);
    for (int i = 0; i < r->n_unexpected; i++) free(r->unexpected[i]);
    free(r->missing);
    free(r->unexpected);
    memset(r, 0, sizeof *r);
}

typedef struct target {
    char *name;
    gf_tensor *t;       /* the module's (borrowed) */
    const gf_tensor *src; /* the dict's (borrowed), NULL when missing */
} target;

typedef struct targets {
    target *v;
    int n, cap;
} targets;

static gf_status add_target(const char *path, gf__mod_entry *e, void *ctx) {
    targets *ts = ctx;
    if (!e->t || (e->kind == GF__MOD_BUFFER && !e->persistent)) return GF_OK;
    if (ts->n == ts->cap) {
        int cap = ts->cap ? ts->cap * 2 : 32;
        target *nv = realloc(ts->v, (size_t)cap * sizeof *nv);
        if (!nv) return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory");
        ts->v = nv;
        ts->cap = cap;
    }
    char *name = strdup(path);
    if (!name) return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory");
    ts->v[ts->n++] = (target){name, e->t, NULL};
    return GF_OK;
}

static gf_status push_name(char ***list, int *n, const char *name) {
    char **nl = realloc(*list, (size_t)(*n + 1) * sizeof *nl);
    if (!nl) return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory");
    *list = nl;
    if (!(nl[*n] = strdup(name))) return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory");
    (*n)++;
    return GF_OK;
}

/* "'a', 'b', ... (N in all)" into buf. */
static void name_list(char **names, int n, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used + 16 < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s'%s'", i ? ", " : "", names[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used >= cap - 16) snprintf(buf + cap - 16, 16, "... (%d in all)", n);
}

static gf_status check_sizes(const target *t) {
    const gf_tensor *a = t->t, *b = t->src;
    bool same = gf_tensor_rank(a) == gf_tensor_rank(b);
    for (int d = 0; same && d < gf_tensor_rank(a); d++)
        same = gf_tensor_sizes(a)[d] == gf_tensor_sizes(b)[d];
    if (same) return GF_OK;
    char sa[160] = "[", sb[160] = "[";
    for (int d = 0; d < gf_tensor_rank(a); d++)
        snprintf(sa + strlen(sa), sizeof sa - strlen(sa), "%s%lld", d ? ", " : "",
                 (long long)gf_tensor_sizes(a)[d]);
    for (int d = 0; d < gf_tensor_rank(b); d++)
        snprintf(sb + strlen(sb), sizeof sb - strlen(sb), "%s%lld", d ? ", " : "",
                 (long long)gf_tensor_sizes(b)[d]);
    return gf__error(GF_ERR_SHAPE, "gf_module_load_state_dict: size mismatch for '%s': the "
                     "checkpoint's is %s], the module's %s]", t->name, sb, sa);
}

/* One value into the module's tensor, on its device and in its dtype. */
static gf_status write_one(const target *t) {
    gf_tensor *src = (gf_tensor *)t->src, *moved = NULL;
    if (gf_tensor_device(src) != gf_tensor_device(t->t)) {
        moved = gf_to_device(src, gf_tensor_device(t->t));
        if (!moved) return gf__status();
        src = moved;
    }
    gf_status st = gf_copy_(t->t, src);
    gf_tensor_release(moved);
    return st;
}

gf_status gf_module_load_state_dict(gf_module *m, const gf_tensor_dict *d, bool strict,
                                    gf_load_report *report) {
    const char *op = "gf_module_load_state_dict";
    if (report) memset(report, 0, sizeof *report);
    if (!m || !m->state) return gf__error(GF_ERR_INVALID, "%s: the module is NULL", op);
    if (!d) return gf__error(GF_ERR_INVALID, "%s: the dict is NULL", op);
    targets ts = {0};
    gf_load_report rep = {0};
    gf_status st = gf__mod_walk(m, MASK_P | MASK_B, add_target, &ts);
    int nd = gf_tensor_dict_size(d);
    for (int k = 0; st == GF_OK && k < nd; k++) {
        const char *name = gf_tensor_dict_name(d, k);
        bool used = false;
        for (int i = 0; i < ts.n; i++)
            if (!strcmp(ts.v[i].name, name)) ts.v[i].src = gf_tensor_dict_at(d, k), used = true;
        if (!used) st = push_name(&rep.unexpected, &rep.n_unexpected, name);
    }
    for (int i = 0; st == GF_OK && i < ts.n; i++) {
        if (!ts.v[i].src) st = push_name(&rep.missing, &rep.n_missing, ts.v[i].name);
        else st = check_sizes(&ts.v[i]);
    }
    if (st == GF_OK && strict && (rep.n_missing || rep.n_unexpected)) {
        char a[600], b[600];
        name_list(rep.missing, rep.n_missing, a, sizeof a);
        name_list(rep.unexpected, rep.n_unexpected, b, sizeof b);
        st = gf__error(GF_ERR_INVALID, "%s: error(s) loading the state dict of %s: missing "
                       "key(s): %s; unexpected key(s): %s (nothing was loaded; pass strict = "
                       "false to load the keys that match)", op, gf_module_type_name(m),
                       rep.n_missing ? a : "none", rep.n_unexpected ? b : "none");
    }
    if (st == GF_OK) {
        gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
        int saved = gf__scope_suspend();
        for (int i = 0; st == GF_OK && i < ts.n; i++)
            if (ts.v[i].src) st = write_one(&ts.v[i]);
        gf__scope_resume(saved);
        gf_grad_mode_set(prev);
    }
    for (int i = 0; i < ts.n; i++) free(ts.v[i].name);
    free(ts.v);
    if (report) *report = rep;
    else gf_load_report_clear(&rep);
    return st;
}

/* ------------------------------------------------------------ forward */
static int add_hook(gf_module *m, const char *op, gf__mod_hook h) {
    if (!m || !m->state) {
        gf__error(GF_ERR_INVALID, "%s: the module is NULL", op);
        return 0;
    }
    if (!h.pre_fn && !h.fn) {
        gf__error(GF_ERR_INVALID, "%s: the hook function is NULL", op);
        return 0;
    }
    gf__mod_state *s = m->state;
    if (s->n_hooks == s->cap_hooks) {
        int cap = s->cap_hooks ? s->cap_hooks * 2 : 4;
        gf__mod_hook *nh = realloc(s->hooks, (size_t)cap * sizeof *nh);
        if (!nh) {
            gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
            return 0;
        }
        s->hooks = nh;
        s->cap_hooks = cap;
    }
    h.id = ++s->next_hook;
    s->hooks[s->n_hooks++] = h;
    return h.id;
}

int gf_module_register_forward_pre_hook(gf_module *m, gf_module_pre_hook fn, void *user) {
    return add_hook(m, "gf_module_register_forward_pre_hook",
                    (gf__mod_hook){0, true, fn, NULL, user});
}
int gf_module_register_forward_hook(gf_module *m, gf_module_hook fn, void *user) {
    return add_hook(m, "gf_module_register_forward_hook", (gf__mod_hook){0, false, NULL, fn, user});
}
gf_status gf_module_remove_hook(gf_module *m, int handle) {
    if (!m || !m->state) return gf__error(GF_ERR_INVALID, "gf_module_remove_hook: the module is NULL");
    gf__mod_state *s = m->state;
    for (int i = 0; i < s->n_hooks; i++) {
        if (s->hooks[i].id != handle) continue;
        memmove(s->hooks + i, s->hooks + i + 1, (size_t)(s->n_hooks - i - 1) * sizeof *s->hooks);
        s->n_hooks--;
        return GF_OK;
    }
    return gf__error(GF_ERR_NOT_FOUND, "gf_module_remove_hook: no hook %d on this %s", handle,
                     gf_module_type_name(m));
}

#define MAX_INPUTS 16

/* The hooks and forward, with scope recording suspended: the class's
 * forward, like graft's own composed functions, owns and releases its
 * intermediates; the result is recorded in the caller's scope at the end. */
static gf_tensor *forward_impl(gf_module *m, gf_tensor *const *inputs, int n) {
    gf_tensor *in[MAX_INPUTS];
    bool owned[MAX_INPUTS] = {0};
    memcpy(in, inputs, (size_t)n * sizeof *in);
    gf_tensor *out = NULL;
    gf_status st = GF_OK;
    gf__mod_state *s = m->state;
    for (int h = 0; st == GF_OK && h < s->n_hooks; h++) {
        if (!s->hooks[h].pre) continue;
        gf_tensor *before[MAX_INPUTS];
        memcpy(before, in, (size_t)n * sizeof *in);
        st = s->hooks[h].pre_fn(m, in, n, s->hooks[h].user);
        for (int i = 0; i < n; i++) {
            if (in[i] == before[i]) continue;
            if (owned[i]) gf_tensor_release(before[i]);
            owned[i] = in[i] != NULL;
        }
        if (st == GF_OK) {
            for (int i = 0; i < n; i++)
                if (!in[i]) st = gf__error(GF_ERR_INVALID, "gf_module_forward: a forward "
                                           "pre-hook left input %d NULL", i);
        } else if (gf__status() == GF_OK) {
            gf__error(st, "gf_module_forward: a forward pre-hook failed (status %d)", (int)st);
        }
    }
    if (st == GF_OK) out = m->cls->forward(m, in, n);
    for (int h = 0; out && h < s->n_hooks; h++) {
        if (s->hooks[h].pre) continue;
        gf_tensor *before = out;
        st = s->hooks[h].fn(m, in, n, &out, s->hooks[h].user);
        if (out != before) gf_tensor_release(before);
        if (st != GF_OK || !out) {
            if (st == GF_OK || gf__status() == GF_OK)
                gf__error(st != GF_OK ? st : GF_ERR_INVALID, "gf_module_forward: a forward hook "
                          "%s", st != GF_OK ? "failed" : "left the output NULL");
            gf_tensor_release(out);
            out = NULL;
        }
    }
    for (int i = 0; i < n; i++)
        if (owned[i]) gf_tensor_release(in[i]);
    return out;
}

gf_tensor *gf_module_forward(gf_module *m, gf_tensor *const *inputs, int n) {
    const char *op = "gf_module_forward";
    if (!m || !m->state) {
        gf__error(GF_ERR_INVALID, "%s: the module is NULL", op);
        return NULL;
    }
    if (!m->cls->forward) {
        gf__error(GF_ERR_INVALID, "%s: a %s has no forward of its own; call its children", op,
                  gf_module_type_name(m));
        return NULL;
    }
    if (n < 0 || n > MAX_INPUTS || (n > 0 && !inputs)) {
        gf__error(GF_ERR_INVALID, "%s: %d inputs%s; give 0 to %d", op, n,
                  n > 0 && !inputs ? " but inputs is NULL" : "", MAX_INPUTS);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!inputs[i]) {
            gf__error(GF_ERR_INVALID, "%s: input %d is NULL", op, i);
            return NULL;
        }
    int saved = gf__scope_suspend();
    gf_tensor *out = forward_impl(m, inputs, n);
    gf__scope_resume(saved);
    return gf__ret(out);
}
