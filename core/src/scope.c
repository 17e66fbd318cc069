/* SPDX-License-Identifier: BSD-3-Clause */
/* scope.c — arenas that release the intermediates of a step. */
#include <stdlib.h>

#include "internal.h"

typedef struct scope {
    gf_tensor **items;
    size_t n, cap;
    int suspended; /* the suspension in force when the scope began */
    struct scope *parent;
} scope;

static _Thread_local scope *tl_scope;
static _Thread_local int tl_suspended;

void gf_scope_begin(void) {
    scope *s = calloc(1, sizeof *s);
    if (!s) {
        /* Without a scope record, results are simply not recorded: the caller
         * then owns them, which leaks rather than corrupts. */
        gf__error(GF_ERR_OUT_OF_MEMORY, "gf_scope_begin: out of host memory");
        return;
    }
    s->parent = tl_scope;
    /* An explicit scope records even inside code that suspended recording
     * (e.g. a backward formula run by the engine). */
    s->suspended = tl_suspended;
    tl_suspended = 0;
    tl_scope = s;
}

void gf_scope_end(void) {
    scope *s = tl_scope;
    if (!s) return;
    tl_scope = s->parent;
    tl_suspended = s->suspended;
    for (size_t i = s->n; i-- > 0;) {
        /* The scope's reference stops being one first, so the release below
         * is not mistaken for an over-release (see gf_tensor_release). */
        atomic_fetch_sub_explicit(&s->items[i]->scope_refs, 1, memory_order_release);
        gf_tensor_release(s->items[i]);
    }
    free(s->items);
    free(s);
}

gf_tensor *gf__ret(gf_tensor *t) {
    scope *s = tl_scope;
    if (!t || !s || tl_suspended) return t;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        gf_tensor **items = realloc(s->items, cap * sizeof *items);
        if (!items) return t; /* the caller owns it; see gf_scope_begin */
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = t;
    atomic_fetch_add_explicit(&t->scope_refs, 1, memory_order_relaxed);
    return t;
}

gf_tensor *gf_scope_keep(gf_tensor *t) {
    /* Suspended (code graft runs for its caller, with no scope of its own
     * open): the open scopes belong to that caller, and nothing made here was
     * recorded in them. */
    if (!t || tl_suspended) return t;
    /* The innermost record first, then the enclosing scopes': keep hands
     * over one reference for good, whichever open scope holds it. A tensor
     * recorded several times (new references to the same tensor) loses one
     * record per keep. The search stops at a scope opened while recording
     * was suspended: the scopes outside it are the caller's. */
    for (scope *s = tl_scope; s; s = s->parent) {
        for (size_t i = s->n; i-- > 0;) {
            if (s->items[i] == t) {
                s->items[i] = s->items[--s->n];
                atomic_fetch_sub_explicit(&t->scope_refs, 1, memory_order_release);
                return t;
            }
        }
        if (s->suspended) break;
    }
    /* Not recorded in any open scope: the caller already owns its reference. */
    return t;
}

int gf__scope_suspend(void) { return tl_suspended++; }
void gf__scope_resume(int saved) { tl_suspended = saved; }

gf_tensor *gf_scope_end_return(gf_tensor *t) {
    gf_scope_keep(t);
    gf_scope_end();
    /* Into the enclosing scope, as if the helper were a graft function. */
    return gf__ret(t);
}
