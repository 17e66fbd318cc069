/* SPDX-License-Identifier: BSD-3-Clause */
/* hooks.c — tensor hooks, node hooks, retain_grad, saved-tensor hooks. */
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"

/* Handles map to hooks so gf_hook_remove can find them; a removed or freed
 * hook's handle is simply forgotten, so removing twice is harmless. */
static pthread_mutex_t g_hook_lock = PTHREAD_MUTEX_INITIALIZER;
static gf_hook_handle g_next_id = 1;

typedef struct { gf_hook_handle id; gf_hook *hook; } slot;
static slot *g_slots;
static size_t g_n_slots, g_cap_slots;

static gf_hook *hook_new(gf_hook_kind kind, void *user) {
    gf_hook *h = calloc(1, sizeof *h);
    if (!h) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for a hook");
        return NULL;
    }
    h->kind = kind;
    h->user = user;
    pthread_mutex_lock(&g_hook_lock);
    if (g_n_slots == g_cap_slots) {
        size_t cap = g_cap_slots ? g_cap_slots * 2 : 64;
        slot *s = realloc(g_slots, cap * sizeof *s);
        if (!s) {
            pthread_mutex_unlock(&g_hook_lock);
            free(h);
            gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for a hook");
            return NULL;
        }
        g_slots = s;
        g_cap_slots = cap;
    }
    h->id = g_next_id++;
    g_slots[g_n_slots++] = (slot){h->id, h};
    pthread_mutex_unlock(&g_hook_lock);
    return h;
}

static void forget(gf_hook *h) {
    pthread_mutex_lock(&g_hook_lock);
    for (size_t i = 0; i < g_n_slots; i++)
        if (g_slots[i].hook == h) {
            g_slots[i] = g_slots[--g_n_slots];
            break;
        }
    if (g_n_slots == 0) {
        free(g_slots);
        g_slots = NULL;
        g_cap_slots = 0;
    }
    pthread_mutex_unlock(&g_hook_lock);
}

void gf_hook_remove(gf_hook_handle id) {
    pthread_mutex_lock(&g_hook_lock);
    for (size_t i = 0; i < g_n_slots; i++)
        if (g_slots[i].id == id) {
            g_slots[i].hook->removed = true;
            break;
        }
    pthread_mutex_unlock(&g_hook_lock);
}

void gf__ag_hooks_free(gf_hook *h) {
    while (h) {
        gf_hook *next = h->next;
        forget(h);
        free(h);
        h = next;
    }
}

static void append(gf_hook **list, gf_hook *h) {
    while (*list) list = &(*list)->next;
    *list = h;
}

/* ------------------------------------------------------------ registration */
gf_hook_handle gf_tensor_register_hook(gf_tensor *t, gf_tensor_hook_fn fn, void *user) {
    if (!t || !fn) {
        gf__null_arg_of("gf_tensor_register_hook", !t ? "t" : "fn",
                        !t ? GF__ARG_TENSOR : GF__ARG_FUNCTION);
        return 0;
    }
    if (!gf__ag_requires_grad(t)) {
        gf__error(GF_ERR_AUTOGRAD, "gf_tensor_register_hook: cannot register a hook on a tensor "
                  "that does not require grad; call gf_tensor_set_requires_grad first");
        return 0;
    }
    gf_edge e = gf__ag_gradient_edge(t); /* refreshes a stale view's history */
    gf__ag_node_release(e.node);
    gf_hook *h = hook_new(GF_HOOK_TENSOR, user);
    if (!h) return 0;
    h->tensor_fn = fn;
    gf_autograd_meta *m = t->autograd;
    if (m->grad_fn) {
        h->output_nr = m->output_nr;
        append(&m->grad_fn->hooks, h);
    } else {
        append(&m->leaf_hooks, h);
    }
    return h->id;
}

gf_hook_handle gf_tensor_register_post_accumulate_hook(gf_tensor *t, gf_post_accumulate_hook_fn fn,
                                                       void *user) {
    if (!t || !fn) {
        gf__null_arg_of("gf_tensor_register_post_accumulate_hook", !t ? "t" : "fn",
                        !t ? GF__ARG_TENSOR : GF__ARG_FUNCTION);
        return 0;
    }
    if (!gf__ag_requires_grad(t) || !gf_tensor_is_leaf(t)) {
        gf__error(GF_ERR_AUTOGRAD, "gf_tensor_register_post_accumulate_hook: post-accumulate-grad "
                  "hooks can only be registered on leaf tensors that require grad");
        return 0;
    }
    gf_hook *h = hook_new(GF_HOOK_TENSOR, user);
    if (!h) return 0;
    h->post_acc_fn = fn;
    append(&t->autograd->post_acc_hooks, h);
    return h->id;
}

static gf_hook_handle node_hook(gf_tensor *t, gf_hook_kind kind, gf_node_pre_hook_fn pre,
                                gf_node_post_hook_fn post, void *user, const char *op) {
    if (!t || (!pre && !post)) {
        gf__null_arg_of(op, !t ? "t" : "fn", !t ? GF__ARG_TENSOR : GF__ARG_FUNCTION);
        return 0;
    }
    if (!gf__ag_requires_grad(t)) {
        gf__error(GF_ERR_AUTOGRAD, "%s: the tensor does not require grad, so no node will run for "
                  "it; call gf_tensor_set_requires_grad first", op);
        return 0;
    }
    gf_edge e = gf__ag_gradient_edge(t);
    gf__ag_node_release(e.node);
    gf_hook *h = hook_new(kind, user);
    if (!h) return 0;
    h->pre_fn = pre;
    h->post_fn = post;
    if (t->autograd->grad_fn) append(&t->autograd->grad_fn->hooks, h);
    else append(&t->autograd->leaf_node_hooks, h); /* its accumulator's hooks */
    return h->id;
}

gf_hook_handle gf_node_register_pre_hook(gf_tensor *t, gf_node_pre_hook_fn fn, void *user) {
    return node_hook(t, GF_HOOK_PRE, fn, NULL, user, "gf_node_register_pre_hook");
}
gf_hook_handle gf_node_register_post_hook(gf_tensor *t, gf_node_post_hook_fn fn, void *user) {
    return node_hook(t, GF_HOOK_POST, NULL, fn, user, "gf_node_register_post_hook");
}

gf_status gf_tensor_retain_grad(gf_tensor *t) {
    if (!t) return gf__null_arg("gf_tensor_retain_grad", "t");
    if (!gf__ag_requires_grad(t))
        return gf__error(GF_ERR_AUTOGRAD, "gf_tensor_retain_grad: cannot retain the gradient of "
                         "a tensor that does not require grad; call gf_tensor_set_requires_grad "
                         "on the leaves it is computed from first");
    gf_edge e = gf__ag_gradient_edge(t);
    gf__ag_node_release(e.node);
    gf_autograd_meta *m = t->autograd;
    if (!m->grad_fn || m->retains_grad) return GF_OK; /* leaves keep .grad anyway */
    m->retains_grad = true;
    gf__ag_move_retain_hook(t);
    return m->retain_hook ? GF_OK : gf__status();
}

bool gf_tensor_retains_grad(const gf_tensor *t) { return t && t->autograd && t->autograd->retains_grad; }

void gf__ag_move_retain_hook(gf_tensor *t) {
    gf_autograd_meta *m = t->autograd;
    if (m->retain_hook) {
        m->retain_hook->removed = true;
        m->retain_hook->target = NULL;
        m->retain_hook = NULL;
    }
    if (!m->grad_fn) return;
    gf_hook *h = hook_new(GF_HOOK_RETAIN_GRAD, NULL);
    if (!h) return;
    h->output_nr = m->output_nr;
    h->target = t;
    append(&m->grad_fn->hooks, h);
    m->retain_hook = h;
}

/* ------------------------------------------------------------ running */
/* The hooks of one list that run now are those registered and not removed
 * when the list starts (PyTorch calls a snapshot of its hook dict): a hook
 * removed by an earlier hook of the same list still runs this once, and a
 * hook registered meanwhile waits for the next time. */
typedef struct snap {
    gf_hook *small[8];
    gf_hook **v;
    int n;
} snap;

#define ANY_KIND (-1) /* every hook of the list */

static gf_status snap_take(snap *sn, gf_hook *list, int kind) {
    sn->v = sn->small;
    sn->n = 0;
    int cap = (int)(sizeof sn->small / sizeof sn->small[0]);
    for (gf_hook *h = list; h; h = h->next) {
        if (h->removed || (kind != ANY_KIND && (int)h->kind != kind)) continue;
        if (sn->n == cap) {
            gf_hook **v = malloc((size_t)cap * 2 * sizeof *v);
            if (!v) {
                if (sn->v != sn->small) free(sn->v);
                sn->v = NULL;
                return gf__error(GF_ERR_OUT_OF_MEMORY, "backward: out of host memory for hooks");
            }
            memcpy(v, sn->v, (size_t)sn->n * sizeof *v);
            if (sn->v != sn->small) free(sn->v);
            sn->v = v;
            cap *= 2;
        }
        sn->v[sn->n++] = h;
    }
    return GF_OK;
}

static void snap_free(snap *sn) {
    if (sn->v && sn->v != sn->small) free(sn->v);
}

static gf_status apply_tensor_hook(gf_hook *h, gf_tensor **grad, const char *where) {
    gf_tensor *r = h->tensor_fn(*grad, h->user);
    if (!r) return GF_OK; /* keep the gradient */
    if (r->rank != (*grad)->rank ||
        memcmp(r->sizes, (*grad)->sizes, sizeof(int64_t) * (size_t)r->rank)) {
        char a[200], b[200];
        gf_status s = gf__error(GF_ERR_AUTOGRAD, "hook on %s returned a gradient of sizes %s; "
                                "expected %s", where, gf__shape_str(r->sizes, r->rank, a, sizeof a),
                                gf__shape_str((*grad)->sizes, (*grad)->rank, b, sizeof b));
        gf_tensor_release(r);
        return s;
    }
    gf_tensor_release(*grad);
    *grad = r;
    return GF_OK;
}

gf_status gf__ag_run_tensor_hooks(gf_node *n, gf_tensor **grads) {
    snap sn;
    gf_status s = snap_take(&sn, n->hooks, GF_HOOK_TENSOR);
    for (int i = 0; i < sn.n && s == GF_OK; i++) {
        gf_hook *h = sn.v[i];
        if (grads[h->output_nr]) s = apply_tensor_hook(h, &grads[h->output_nr], n->name);
    }
    snap_free(&sn);
    return s;
}

gf_status gf__ag_run_leaf_hooks(gf_tensor *leaf, gf_tensor **grad) {
    if (!leaf->autograd) return GF_OK;
    snap sn;
    gf_status s = snap_take(&sn, leaf->autograd->leaf_hooks, ANY_KIND);
    for (int i = 0; i < sn.n && s == GF_OK; i++)
        if (*grad) s = apply_tensor_hook(sn.v[i], grad, "a leaf tensor");
    snap_free(&sn);
    return s;
}

static gf_hook *leaf_node_hooks(const gf_node *n) {
    return n->leaf && n->leaf->autograd ? n->leaf->autograd->leaf_node_hooks : NULL;
}

static gf_status run_pre_list(gf_node *n, gf_hook *list, gf_tensor **grads) {
    snap sn;
    gf_status s = snap_take(&sn, list, GF_HOOK_PRE);
    for (int i = 0; i < sn.n && s == GF_OK; i++) {
        gf_hook *h = sn.v[i];
        uint64_t seq = gf__error_seq();
        s = h->pre_fn(n->name, grads, n->n_outputs, h->user);
        if (s != GF_OK) s = gf__callback_failed(s, seq, "%s: a node pre-hook", n->name);
    }
    snap_free(&sn);
    return s;
}

gf_status gf__ag_run_pre_hooks(gf_node *n, gf_tensor **grads) {
    gf_status s = run_pre_list(n, n->hooks, grads);
    return s == GF_OK ? run_pre_list(n, leaf_node_hooks(n), grads) : s;
}

gf_status gf__ag_run_retain_grad(gf_node *n, gf_tensor **grads) {
    for (gf_hook *h = n->hooks; h; h = h->next) {
        if (h->removed || h->kind != GF_HOOK_RETAIN_GRAD || !h->target || !grads[h->output_nr])
            continue;
        /* As PyTorch 2.x: a retained non-leaf gradient accumulates across
         * backward calls, like a leaf's. */
        gf_autograd_meta *m = h->target->autograd;
        gf_tensor *g = grads[h->output_nr];
        gf_tensor *next = m->grad ? gf_add(m->grad, g) : gf_clone(g);
        if (!next) return gf__status();
        gf__hold_release(m->grad);
        m->grad = gf__hold_adopt(next);
    }
    return GF_OK;
}

static gf_status run_post_list(gf_node *n, gf_hook *list, gf_tensor **grad_inputs,
                               gf_tensor *const *grads) {
    snap sn;
    gf_status s = snap_take(&sn, list, GF_HOOK_POST);
    for (int i = 0; i < sn.n && s == GF_OK; i++) {
        gf_hook *h = sn.v[i];
        uint64_t seq = gf__error_seq();
        s = h->post_fn(n->name, grad_inputs, n->n_next, grads, n->n_outputs, h->user);
        if (s != GF_OK) s = gf__callback_failed(s, seq, "%s: a node post-hook", n->name);
    }
    snap_free(&sn);
    return s;
}

gf_status gf__ag_run_post_hooks(gf_node *n, gf_tensor **grad_inputs, gf_tensor *const *grads) {
    gf_status s = run_post_list(n, n->hooks, grad_inputs, grads);
    return s == GF_OK ? run_post_list(n, leaf_node_hooks(n), grad_inputs, grads) : s;
}

gf_status gf__ag_run_post_accumulate(gf_tensor *leaf) {
    snap sn;
    gf_status s = snap_take(&sn, leaf->autograd->post_acc_hooks, ANY_KIND);
    for (int i = 0; i < sn.n && s == GF_OK; i++) sn.v[i]->post_acc_fn(leaf, sn.v[i]->user);
    snap_free(&sn);
    return s;
}

/* ------------------------------------------------------------ saved-tensor hooks */
#define MAX_SAVED_HOOKS 16
static _Thread_local gf_saved_tensor_hooks tl_saved_hooks[MAX_SAVED_HOOKS];
static _Thread_local int tl_n_saved_hooks;

gf_status gf_saved_tensor_hooks_push(const gf_saved_tensor_hooks *hooks) {
    if (!hooks || !hooks->pack || !hooks->unpack)
        return gf__error(GF_ERR_INVALID, "gf_saved_tensor_hooks_push: pack and unpack are required");
    if (tl_n_saved_hooks == MAX_SAVED_HOOKS)
        return gf__error(GF_ERR_INVALID, "gf_saved_tensor_hooks_push: more than %d nested hook "
                         "pairs; pop the ones you no longer need", MAX_SAVED_HOOKS);
    tl_saved_hooks[tl_n_saved_hooks++] = *hooks;
    return GF_OK;
}

gf_status gf_saved_tensor_hooks_pop(void) {
    if (tl_n_saved_hooks == 0)
        return gf__error(GF_ERR_INVALID, "gf_saved_tensor_hooks_pop: no hooks were pushed on "
                         "this thread");
    tl_n_saved_hooks--;
    return GF_OK;
}

const gf_saved_tensor_hooks *gf__ag_saved_hooks_top(void) {
    return tl_n_saved_hooks ? &tl_saved_hooks[tl_n_saved_hooks - 1] : NULL;
}
