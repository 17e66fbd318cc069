/* SPDX-License-Identifier: BSD-3-Clause */
/* module_internal.h — what the module sources share (core/src/nn). */
#ifndef GRAFT_MODULE_INTERNAL_H
#define GRAFT_MODULE_INTERNAL_H

#include "graft/module.h"

typedef enum gf__mod_kind { GF__MOD_PARAM = 0, GF__MOD_BUFFER = 1, GF__MOD_CHILD = 2 } gf__mod_kind;
#define MASK_P (1u << GF__MOD_PARAM)
#define MASK_B (1u << GF__MOD_BUFFER)

/* One registered name, in registration order: a parameter or buffer (t,
 * retained; NULL for an absent one) or a child (retained). */
typedef struct gf__mod_entry {
    char *name;
    gf__mod_kind kind;
    bool persistent; /* buffers: part of the state dict */
    gf_tensor *t;
    gf_module *child;
} gf__mod_entry;

typedef struct gf__mod_hook {
    int id;
    bool pre;
    gf_module_pre_hook pre_fn;
    gf_module_hook fn;
    void *user;
} gf__mod_hook;

struct gf_module_state {
    long refs;
    bool training;
    gf__mod_entry *e;
    int n, cap;
    gf__mod_hook *hooks;
    int n_hooks, cap_hooks, next_hook;
};
typedef struct gf_module_state gf__mod_state;

/* The entry named name[0..len) of m itself, or NULL. */
gf__mod_entry *gf__mod_find(const gf_module *m, const char *name, size_t len);
/* m's own tensor or child of that name (NULL when absent): what a layer's
 * forward looks up, so a parameter registered again is the one it uses. */
gf_tensor *gf__mod_own(const gf_module *m, const char *name);
gf_module *gf__mod_child(const gf_module *m, const char *name);
/* True for n == 1; else INVALID naming the layer's type. */
bool gf__mod_one_input(const char *type, int n);
/* Visits the parameters and/or buffers (mask of 1 << kind) of the tree with
 * their full dotted paths, in PyTorch's order. */
typedef gf_status (*gf__mod_visit_fn)(const char *path, gf__mod_entry *e, void *ctx);
gf_status gf__mod_walk(const gf_module *m, unsigned mask, gf__mod_visit_fn f, void *ctx);

#endif
