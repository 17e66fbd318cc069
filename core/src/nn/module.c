/* SPDX-License-Identifier: BSD-3-Clause */
/* module.c — the module tree (graft/module.h): registration, lookups by
 * dotted path, parameter and buffer walks, state dicts, modes, hooks.
 * The layers are in layers.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "graft/module.h"
#include "module_internal.h"

#define MAX_PATH 4096

/* ------------------------------------------------------------ life */
gf_status gf_module_init(gf_module *m, const gf_module_class *cls) {
    if (!m) return gf__error(GF_ERR_INVALID, "gf_module_init: m is NULL");
    if (!cls || !cls->name)
        return gf__error(GF_ERR_INVALID, "gf_module_init: the class (or its name) is NULL; give "
                         "a gf_module_class with at least a name");
    m->cls = cls;
    m->state = calloc(1, sizeof *m->state);
    if (!m->state) return gf__error(GF_ERR_OUT_OF_MEMORY, "gf_module_init: out of host memory");
    m->state->refs = 1;
    m->state->training = true;
    return GF_OK;
}

static const gf_module_class container_class = {"Module", NULL, NULL};

gf_module *gf_module_new(const char *type_name) {
    (void)type_name; /* the plain container's class is named "Module" */
    gf_module *m = calloc(1, sizeof *m);
    if (!m) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "gf_module_new: out of host memory");
        return NULL;
    }
    if (gf_module_init(m, &container_class) != GF_OK) {
        free(m);
        return NULL;
    }
    return m;
}

gf_module *gf_module_retain(gf_module *m) {
    if (m && m->state) m->state->refs++;
    return m;
}

static void entry_free(gf__mod_entry *e) {
    free(e->name);
    gf_tensor_release(e->t);
    gf_module_release(e->child);
}

void gf_module_release(gf_module *m) {
    if (!m || !m->state || --m->state->refs > 0) return;
    gf__mod_state *s = m->state;
    for (int i = 0; i < s->n; i++) entry_free(&s->e[i]);
    free(s->e);
    free(s->hooks);
    free(s);
    m->state = NULL;
    if (m->cls && m->cls->destroy) m->cls->destroy(m);
    else free(m);
}

const char *gf_module_type_name(const gf_module *m) {
    return m && m->cls && m->cls->name ? m->cls->name : "?";
}

static bool live(const gf_module *m, const char *op) {
    if (m && m->state) return true;
    gf__error(GF_ERR_INVALID, "%s: the module is NULL (or was never initialised with "
              "gf_module_init)", op);
    return false;
}

/* ------------------------------------------------------------ registration */
gf__mod_entry *gf__mod_find(const gf_module *m, const char *name, size_t len) {
    gf__mod_state *s = m->state;
    for (int i = 0; i < s->n; i++)
        if (strlen(s->e[i].name) == len && !memcmp(s->e[i].name, name, len)) return &s->e[i];
    return NULL;
}

gf_tensor *gf__mod_own(const gf_module *m, const char *name) {
    gf__mod_entry *e = gf__mod_find(m, name, strlen(name));
    return e ? e->t : NULL;
}

gf_module *gf__mod_child(const gf_module *m, const char *name) {
    gf__mod_entry *e = gf__mod_find(m, name, strlen(name));
    return e ? e->child : NULL;
}

bool gf__mod_one_input(const char *type, int n) {
    if (n == 1) return true;
    gf__error(GF_ERR_INVALID, "%s.forward: takes 1 input, got %d", type, n);
    return false;
}

static const char *kind_word(gf__mod_kind k) {
    return k == GF__MOD_PARAM ? "parameter" : k == GF__MOD_BUFFER ? "buffer" : "submodule";
}

/* True when target is m or inside m's tree. */
static bool contains(const gf_module *m, const gf_module *target) {
    if (m == target) return true;
    for (int i = 0; i < m->state->n; i++)
        if (m->state->e[i].child && contains(m->state->e[i].child, target)) return true;
    return false;
}

static gf_status put_entry(gf_module *m, const char *op, const char *name, gf__mod_kind kind,
                           gf_tensor *t, gf_module *child, bool persistent) {
    if (!name || !*name || strchr(name, '.') || strlen(name) > 256)
        return gf__error(GF_ERR_INVALID, "%s: the name %s%s%s is not usable: give 1 to 256 bytes "
                         "without '.' (dots separate the levels of a path)", op,
                         name ? "'" : "", name ? name : "NULL", name ? "'" : "");
    gf__mod_entry *e = gf__mod_find(m, name, strlen(name));
    if (e && e->kind != kind)
        return gf__error(GF_ERR_INVALID, "%s: '%s' is already a %s of this %s; a name is "
                         "either a parameter, a buffer or a submodule", op, name,
                         kind_word(e->kind), gf_module_type_name(m));
    if (e) {
        gf_tensor *old_t = e->t;
        gf_module *old_c = e->child;
        e->t = gf_tensor_retain(t);
        e->child = gf_module_retain(child);
        e->persistent = persistent;
        gf_tensor_release(old_t);
        gf_module_release(old_c);
        return GF_OK;
    }
    gf__mod_state *s = m->state;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        gf__mod_entry *ne = realloc(s->e, (size_t)cap * sizeof *ne);
        if (!ne) return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        s->e = ne;
        s->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    s->e[s->n++] = (gf__mod_entry){copy, kind, persistent, gf_tensor_retain(t),
                                   gf_module_retain(child)};
    return GF_OK;
}

gf_status gf_module_register_parameter(gf_module *m, const char *name, gf_tensor *p) {
    const char *op = "gf_module_register_parameter";
    if (!live(m, op)) return gf__status();
    if (p) {
        if (!gf_dtype_is_float(gf_tensor_dtype(p)))
            return gf__error(GF_ERR_INVALID, "%s: '%s' is %s; a parameter is a floating-point "
                             "tensor (register integer state as a buffer)", op, name ? name : "",
                             gf_dtype_name(gf_tensor_dtype(p)));
        if (!gf_tensor_is_leaf(p))
            return gf__error(GF_ERR_INVALID, "%s: '%s' is the result of an op with history, "
                             "not a leaf; register gf_detach(t) (nn.Parameter(t) detaches too)",
                             op, name ? name : "");
        if (!gf_tensor_requires_grad(p) && gf_tensor_set_requires_grad(p, true) != GF_OK)
            return gf__status();
    }
    return put_entry(m, op, name, GF__MOD_PARAM, p, NULL, true);
}

gf_status gf_module_register_buffer(gf_module *m, const char *name, gf_tensor *t,
                                    bool persistent) {
    const char *op = "gf_module_register_buffer";
    if (!live(m, op)) return gf__status();
    return put_entry(m, op, name, GF__MOD_BUFFER, t, NULL, persistent);
}

gf_status gf_module_register_module(gf_module *m, const char *name, gf_module *child) {
    const char *op = "gf_module_register_module";
    if (!live(m, op)) return gf__status();
    if (!child || !child->state)
        return gf__error(GF_ERR_INVALID, "%s: the child '%s' is NULL or not initialised", op,
                         name ? name : "");
    if (contains(child, m))
        return gf__error(GF_ERR_INVALID, "%s: '%s' is this module or one of its ancestors; a "
                         "module tree has no cycles", op, name ? name : "");
    return put_entry(m, op, name, GF__MOD_CHILD, NULL, child, true);
}

/* ------------------------------------------------------------ lookups */
/* The entry at a dotted path, or NULL with NOT_FOUND. */
static gf__mod_entry *resolve(const gf_module *m, const char *path, const char *op) {
    if (!path) {
        gf__error(GF_ERR_INVALID, "%s: path is NULL", op);
        return NULL;
    }
    const gf_module *cur = m;
    const char *p = path;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        gf__mod_entry *e = gf__mod_find(cur, p, len);
        if (!e || (dot && e->kind != GF__MOD_CHILD)) {
            gf__error(GF_ERR_NOT_FOUND, "%s: '%s' has no '%.*s' at that level (a %s)", op, path,
                      (int)len, p, gf_module_type_name(cur));
            return NULL;
        }
        if (!dot) return e;
        cur = e->child;
        p = dot + 1;
    }
}

static gf__mod_entry *resolve_kind(const gf_module *m, const char *path, gf__mod_kind kind,
                                   const char *op) {
    if (!live(m, op)) return NULL;
    gf__mod_entry *e = resolve(m, path, op);
    if (e && e->kind != kind) {
        gf__error(GF_ERR_NOT_FOUND, "%s: '%s' is a %s, not a %s", op, path, kind_word(e->kind),
                  kind_word(kind));
        return NULL;
    }
    return e;
}

gf_tensor *gf_module_get_parameter(const gf_module *m, const char *path) {
    gf__mod_entry *e = resolve_kind(m, path, GF__MOD_PARAM, "gf_module_get_parameter");
    return e ? e->t : NULL;
}
gf_tensor *gf_module_get_buffer(const gf_module *m, const char *path) {
    gf__mod_entry *e = resolve_kind(m, path, GF__MOD_BUFFER, "gf_module_get_buffer");
    return e ? e->t : NULL;
}
gf_module *gf_module_get_submodule(const gf_module *m, const char *path) {
    if (path && !*path) return live(m, "gf_module_get_submodule") ? (gf_module *)m : NULL;
    gf__mod_entry *e = resolve_kind(m, path, GF__MOD_CHILD, "gf_module_get_submodule");
    return e ? e->child : NULL;
}

int gf_module_child_count(const gf_module *m) {
    if (!live(m, "gf_module_child_count")) return -1;
    int c = 0;
    for (int i = 0; i < m->state->n; i++) c += m->state->e[i].kind == GF__MOD_CHILD;
    return c;
}

static gf__mod_entry *child_entry(const gf_module *m, int i, const char *op) {
    if (!live(m, op)) return NULL;
    for (int k = 0, c = 0; k < m->state->n; k++)
        if (m->state->e[k].kind == GF__MOD_CHILD && c++ == i) return &m->state->e[k];
    gf__error(GF_ERR_INDEX, "%s: index %d is out of range (%d children)", op, i,
              gf_module_child_count(m));
    return NULL;
}
const char *gf_module_child_name(const gf_module *m, int i) {
    gf__mod_entry *e = child_entry(m, i, "gf_module_child_name");
    return e ? e->name : NULL;
}
gf_module *gf_module_child_at(const gf_module *m, int i) {
    gf__mod_entry *e = child_entry(m, i, "gf_module_child_at");
    return e ? e->child : NULL;
}

/* ------------------------------------------------------------ walks */
/* Visits m's own entries of the kinds in mask, then each child's, depth
 * first (PyTorch's _named_members order); path holds the prefix. */
static gf_status walk(const gf_module *m, char *path, size_t plen, unsigned mask,
                      gf__mod_visit_fn f, void *ctx) {
    gf__mod_state *s = m->state;
    for (int pass = 0; pass < 2; pass++) {
        gf__mod_kind k = pass == 0 ? GF__MOD_PARAM : GF__MOD_BUFFER;
        if (!(mask & (1u << k))) continue;
        for (int i = 0; i < s->n; i++) {
            if (s->e[i].kind != k) continue;
            size_t l = strlen(s->e[i].name);
            if (plen + l + 1 > MAX_PATH)
                return gf__error(GF_ERR_INVALID, "module path over %d bytes", MAX_PATH);
            memcpy(path + plen, s->e[i].name, l + 1);
            gf_status st = f(path, &s->e[i], ctx);
            if (st != GF_OK) return st;
        }
    }
    for (int i = 0; i < s->n; i++) {
        if (s->e[i].kind != GF__MOD_CHILD) continue;
        size_t l = strlen(s->e[i].name);
        if (plen + l + 2 > MAX_PATH)
            return gf__error(GF_ERR_INVALID, "module path over %d bytes", MAX_PATH);
        memcpy(path + plen, s->e[i].name, l);
        path[plen + l] = '.';
        path[plen + l + 1] = '\0';
        gf_status st = walk(s->e[i].child, path, plen + l + 1, mask, f, ctx);
        if (st != GF_OK) return st;
    }
    path[plen] = '\0';
    return GF_OK;
}

gf_status gf__mod_walk(const gf_module *m, unsigned mask, gf__mod_visit_fn f, void *ctx) {
    char *path = malloc(MAX_PATH);
    if (!path) return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory walking a module");
    path[0] = '\0';
    gf_status st = walk(m, path, 0, mask, f, ctx);
    free(path);
    return st;
}

typedef struct collect {
    gf_tensor_dict *d;
    bool unique;         /* each tensor once (parameters()) */
    bool persistent_only;
    bool detach;
    gf_tensor **seen;
    int n_seen, cap_seen;
    gf_tensor **out;
    int max_out;
} collect;

static gf_status collect_one(const char *path, gf__mod_entry *e, void *ctx) {
    collect *c = ctx;
    if (!e->t) return GF_OK;
    if (c->persistent_only && e->kind == GF__MOD_BUFFER && !e->persistent) return GF_OK;
    if (c->unique) {
        for (int i = 0; i < c->n_seen; i++)
            if (c->seen[i] == e->t) return GF_OK;
        if (c->n_seen == c->cap_seen) {
            int cap = c->cap_seen ? c->cap_seen * 2 : 32;
            gf_tensor **ns = realloc(c->seen, (size_t)cap * sizeof *ns);
            if (!ns) return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory");
            c->seen = ns;
            c->cap_seen = cap;
        }
        if (c->out && c->n_seen < c->max_out) c->out[c->n_seen] = e->t;
        c->seen[c->n_seen++] = e->t;
    }
    if (!c->d) return GF_OK;
    if (!c->detach) return gf_tensor_dict_set(c->d, path, e->t);
    int saved = gf__scope_suspend();
    gf_tensor *a = gf_detach(e->t);
    gf__scope_resume(saved);
    if (!a) return gf__status();
    gf_status st = gf_tensor_dict_set(c->d, path, a);
    gf_tensor_release(a);
    return st;
}

static gf_tensor_dict *collect_dict(const gf_module *m, unsigned mask, bool unique,
                                    bool persistent_only, bool detach, const char *op) {
    if (!live(m, op)) return NULL;
    collect c = {.d = gf_tensor_dict_new(), .unique = unique, .persistent_only = persistent_only,
                 .detach = detach};
    if (!c.d) return NULL;
    gf_status st = gf__mod_walk(m, mask, collect_one, &c);
    free(c.seen);
    if (st != GF_OK) {
        gf_tensor_dict_destroy(c.d);
        return NULL;
    }
    return c.d;
}

int gf_module_parameters(const gf_module *m, gf_tensor **out, int max) {
    if (!live(m, "gf_module_parameters")) return -1;
    collect c = {.unique = true, .out = out, .max_out = out ? max : 0};
    gf_status st = gf__mod_walk(m, MASK_P, collect_one, &c);
    free(c.seen);
    return st == GF_OK ? c.n_seen : -1;
}

gf_tensor_dict *gf_module_named_parameters(const gf_module *m) {
    return collect_dict(m, MASK_P, true, false, false, "gf_module_named_parameters");
}
gf_tensor_dict *gf_module_named_buffers(const gf_module *m) {
    return collect_dict(m, MASK_B, true, false, false, "gf_module_named_buffers");
}
gf_tensor_dict *gf_module_state_dict(const gf_module *m) {
    return collect_dict(m, MASK_P | MASK_B, false, true, true, "gf_module_state_dict");
}

/* ------------------------------------------------------------ modes */
static void train_tree(gf_module *m, bool mode) {
    m->state->training = mode;
    for (int i = 0; i < m->state->n; i++)
        if (m->state->e[i].child) train_tree(m->state->e[i].child, mode);
}

gf_status gf_module_train(gf_module *m, bool mode) {
    if (!live(m, "gf_module_train")) return gf__status();
    train_tree(m, mode);
    return GF_OK;
}

bool gf_module_is_training(const gf_module *m) { return m && m->state && m->state->training; }

static gf_status zero_one(const char *path, gf__mod_entry *e, void *ctx) {
    (void)path, (void)ctx;
    return e->t ? gf_tensor_set_grad(e->t, NULL) : GF_OK;
}
gf_status gf_module_zero_grad(gf_module *m) {
    if (!live(m, "gf_module_zero_grad")) return gf__status();
    return gf__mod_walk(m, MASK_P, zero_one, NULL);
}

static gf_status rg_one(const char *path, gf__mod_entry *e, void *ctx) {
    (void)path;
    return e->t ? gf_tensor_set_requires_grad(e->t, *(bool *)ctx) : GF_OK;
}
gf_status gf_module_requires_grad_(gf_module *m, bool requires_grad) {
    if (!live(m, "gf_module_requires_grad_")) return gf__status();
    return gf__mod_walk(m, MASK_P, rg_one, &requires_grad);
}
