/* SPDX-License-Identifier: BSD-3-Clause */
/* node.c — backward nodes: creation, recording, saved tensors, release. */
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"
#include "fwad/fw_internal.h"

static atomic_uint_fast64_t g_seq;


gf_node *gf__ag_node_new(const char *name, gf_backward_fn fn, int n_next, int n_outputs) {
    gf_node *n = calloc(1, sizeof *n);
    if (!n) goto oom;
    atomic_init(&n->refcount, 1);
    n->name = name;
    n->apply = fn;
    n->seq = atomic_fetch_add(&g_seq, 1);
    n->n_next = n_next;
    n->n_outputs = n_outputs;
    if (n_next && !(n->next = calloc((size_t)n_next, sizeof *n->next))) goto oom;
    if (n_outputs && !(n->outputs = calloc((size_t)n_outputs, sizeof *n->outputs))) goto oom;
    /* Recursive: a hook or custom backward may itself run backward through
     * a graph that shares this node. */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&n->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    if (gf__ag_anomaly()) {
        void *frames[24];
        int k = backtrace(frames, 24);
        char **sym = backtrace_symbols(frames, k);
        size_t cap = 4096, used = 0;
        n->anomaly_trace = malloc(cap);
        if (n->anomaly_trace) {
            used += (size_t)snprintf(n->anomaly_trace, cap, "%s was created by:\n", name);
            for (int i = 1; sym && i < k && used < cap; i++)
                used += (size_t)snprintf(n->anomaly_trace + used, cap - used, "  %s\n", sym[i]);
        }
        free(sym);
    }
    return n;
oom:
    if (n) {
        free(n->next);
        free(n);
    }
    gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for an autograd node");
    return NULL;
}

void gf__ag_node_retain(gf_node *n) {
    if (n) atomic_fetch_add_explicit(&n->refcount, 1, memory_order_relaxed);
}

/* Saved-tensor hooks are callbacks: they run with scope recording
 * suspended, so what they make with graft functions is theirs (user guide,
 * section 5) and no scope open around the op, or opened by graft itself (a
 * backward formula under create_graph, gradgradcheck), releases it. */
static void free_saved_slot(gf_saved *s) {
    if (s->packed && s->hooks_copy.release) {
        int sc = gf__scope_suspend();
        s->hooks_copy.release(s->packed, s->hooks_copy.user);
        gf__scope_resume(sc);
    }
    s->packed = NULL;
    gf_tensor_release(s->data);
    s->data = NULL;
    gf__ag_node_release(s->grad_fn);
    s->grad_fn = NULL;
    gf__fw_entries_free(s->fw);
    s->fw = NULL;
}

static void destroy(gf_node *n) {
    for (int i = 0; i < n->n_saved; i++) free_saved_slot(&n->saved[i]);
    free(n->saved);
    for (int i = 0; i < n->n_next; i++) gf__ag_node_release(n->next[i].node);
    free(n->next);
    free(n->outputs);
    if (n->release_ctx) n->release_ctx(n);
    gf__ag_hooks_free(n->hooks);
    gf__ag_node_release(n->wrapped);
    free(n->anomaly_trace);
    pthread_mutex_destroy(&n->lock);
    free(n);
}

/* Freeing a long chain must not recurse: nodes whose count drops to zero go
 * on a thread-local list that the outermost release drains. */
static _Thread_local gf_node *tl_dying;
static _Thread_local bool tl_draining;

void gf__ag_node_release(gf_node *n) {
    if (!n) return;
    if (atomic_fetch_sub_explicit(&n->refcount, 1, memory_order_acq_rel) != 1) return;
    if (n->accumulates) gf__ag_accumulator_dying(n);
    n->dying_next = tl_dying;
    tl_dying = n;
    if (tl_draining) return;
    tl_draining = true;
    while (tl_dying) {
        gf_node *d = tl_dying;
        tl_dying = d->dying_next;
        destroy(d);
    }
    tl_draining = false;
}

/* ------------------------------------------------------------ recording */
bool gf__ag_any_requires_grad(const gf_tensor *const *inputs, int n) {
    if (!gf__ag_grad_enabled()) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && gf__ag_requires_grad(inputs[i])) return true;
    return false;
}

gf_node *gf__ag_record(const char *name, gf_backward_fn fn, const gf_tensor *const *inputs,
                       int n_in, gf_tensor *const *outputs, int n_out) {
    if (!gf__ag_any_requires_grad(inputs, n_in)) return NULL;
    gf_node *n = gf__ag_node_new(name, fn, n_in, n_out);
    if (!n) return NULL;
    for (int i = 0; i < n_in; i++)
        if (inputs[i] && gf__dtype_differentiable(inputs[i]->dtype))
            n->next[i] = gf__ag_gradient_edge((gf_tensor *)inputs[i]);
    bool any = false;
    for (int j = 0; j < n_out; j++) {
        gf_output_meta *m = &n->outputs[j];
        if (!outputs[j]) continue;
        m->rank = outputs[j]->rank;
        memcpy(m->sizes, outputs[j]->sizes, sizeof m->sizes);
        m->dtype = outputs[j]->dtype;
        m->device = outputs[j]->storage->device;
        if (gf__dtype_differentiable(outputs[j]->dtype)) {
            gf__ag_set_history(outputs[j], n, (uint32_t)j);
            any = true;
        }
    }
    gf__ag_node_release(n); /* the outputs own it now */
    return any ? n : NULL;
}

uint64_t gf__ag_seq_mark(void) { return atomic_load(&g_seq); }

static _Thread_local const gf_storage *tl_inplace_target;

const gf_storage *gf__ag_inplace_target_set(const gf_storage *target) {
    const gf_storage *prev = tl_inplace_target;
    tl_inplace_target = target;
    return prev;
}

bool gf__ag_is_inplace_target(const gf_tensor *t) {
    return tl_inplace_target && t->storage == tl_inplace_target;
}

/* A copy of t's values in a tensor of its own, without history (NULL on
 * failure, the error set). */
static gf_tensor *plain_copy(const gf_tensor *t) {
    gf_tensor *c = gf__empty(t->sizes, t->rank, t->dtype, t->storage->device);
    if (c && gf__copy_into(c, t) != GF_OK) {
        gf_tensor_release(c);
        c = NULL;
    }
    return c;
}

/* A copy of what saved slot s aliases, kept instead of the alias. */
static gf_status save_copy(gf_saved *s) {
    gf_tensor *t = s->data;
    gf_tensor *c = plain_copy(t);
    if (!c) return gf__status();
    gf_tensor_release(t);
    s->data = c;
    s->version = 0;
    /* Its tangents are about to be overwritten in place too (the commit
     * writes the new tangent into self's): keep copies of the old ones. */
    for (gf_fw_entry *e = s->fw; e; e = e->next) {
        gf_tensor *tc = e->tangent ? plain_copy(e->tangent) : NULL;
        if (e->tangent && !tc) return gf__status();
        gf_tensor_release(e->tangent);
        e->tangent = tc;
    }
    return GF_OK;
}

gf_status gf__ag_save_originals(const gf_tensor *result, const gf_tensor *self, uint64_t since) {
    gf_node *first = result->autograd ? result->autograd->grad_fn : NULL;
    if (!first || first->seq < since) return GF_OK;
    /* The nodes recorded since `since` that result's history reaches, in
     * the order found; few (one per op the in-place op is made of), so a
     * list searched linearly serves as the visited set. */
    size_t n = 0, cap = 8;
    gf_node **list = malloc(cap * sizeof *list);
    if (!list) return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for an in-place op");
    list[n++] = first;
    gf_status st = GF_OK;
    for (size_t i = 0; i < n && st == GF_OK; i++) {
        gf_node *node = list[i];
        for (int k = 0; k < node->n_saved && st == GF_OK; k++) {
            gf_saved *s = &node->saved[k];
            /* Through hooks the pack function was given a copy already (at
             * save time: gf__ag_is_inplace_target); an output is the node's own; a slot whose storage has moved on
             * since it was saved stays as it is (backward reports it). */
            if (!s->defined || s->hooks || s->is_output || !s->data ||
                s->data->storage != self->storage || gf_tensor_version(s->data) != s->version)
                continue;
            st = save_copy(s);
        }
        for (int e = 0; e < node->n_next && st == GF_OK; e++) {
            gf_node *next = node->next[e].node;
            if (!next || next->seq < since) continue;
            bool seen = false;
            for (size_t j = 0; j < n && !seen; j++) seen = list[j] == next;
            if (seen) continue;
            if (n == cap) {
                gf_node **grown = realloc(list, 2 * cap * sizeof *list);
                if (!grown) {
                    st = gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for an in-place op");
                    break;
                }
                list = grown;
                cap *= 2;
            }
            list[n++] = next;
        }
    }
    free(list);
    return st;
}

gf_status gf__ag_save(gf_node *n, int i, const gf_tensor *t, bool is_output) {
    if (i >= n->n_saved) {
        gf_saved *s = realloc(n->saved, (size_t)(i + 1) * sizeof *s);
        if (!s) return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for saved tensors");
        memset(s + n->n_saved, 0, (size_t)(i + 1 - n->n_saved) * sizeof *s);
        n->saved = s;
        n->n_saved = i + 1;
    }
    gf_saved *s = &n->saved[i];
    free_saved_slot(s);
    n->ever_saved = true;
    s->defined = t != NULL;
    if (!t) return GF_OK;
    if (t->storage->inference && !gf__ag_inference_mode())
        return gf__error(GF_ERR_AUTOGRAD, "%s: an inference tensor (created in inference mode) "
                         "cannot be saved for backward; make a normal tensor with gf_clone "
                         "outside inference mode and use that", n->name);
    s->is_output = is_output;
    s->requires_grad = gf__ag_requires_grad(t);
    /* Its tangents go with it, so a backward formula run on it carries
     * them (forward-over-reverse). */
    if (gf__fw_enabled() && gf__fw_snapshot(t, &s->fw) != GF_OK) return gf__status();
    s->version = gf_tensor_version(t);
    if (is_output) {
        s->output_nr = t->autograd ? t->autograd->output_nr : 0;
    } else {
        gf_edge e = gf__ag_gradient_edge((gf_tensor *)t);
        s->grad_fn = e.node;
        s->output_nr = e.input_nr;
    }
    const gf_saved_tensor_hooks *h = gf__ag_saved_hooks_top();
    if (h) {
        s->hooks_copy = *h;
        s->hooks = &s->hooks_copy;
        /* pack gets a tensor without history: an alias of t's memory (as
         * PyTorch packs an output's tensor_data), never t itself. Hooks that
         * keep what they are given would otherwise tie t's history to this
         * node: an output's history is this node; an input's may become a
         * node that leads here later (a.add_(silu(a)) rebases a onto a node
         * whose edge reaches silu's, which saved a). Either way node and
         * tensor would hold each other, and a graph dropped without backward
         * would never be freed nor its packed values released. Inside an
         * in-place op, self's old value (or another view of its storage) is
         * about to be overwritten: the hooks get a copy of it instead. */
        gf_tensor *alias = gf__ag_is_inplace_target(t) ? plain_copy(t) : gf__ag_alias(t);
        if (!alias) return gf__status();
        int sc = gf__scope_suspend();
        s->packed = h->pack(alias, h->user);
        gf__scope_resume(sc);
        gf_tensor_release(alias); /* the hooks retained it if they keep it */
        if (!s->packed)
            return gf__error(GF_ERR_AUTOGRAD, "%s: the saved-tensor pack hook returned NULL",
                             n->name);
        return GF_OK;
    }
    s->data = gf__ag_alias(t);
    return s->data ? GF_OK : gf__status();
}

gf_status gf__ag_unpack(gf_node *n, int i, gf_tensor **out) {
    *out = NULL;
    if (n->saved_released) {
        return gf__error(GF_ERR_AUTOGRAD, "%s: trying to backward through the graph a second time (or "
                  "to read saved tensors after they were freed). Saved values are freed when "
                  "backward runs; pass retain_graph = 1 to gf_backward / gf_grad the first time "
                  "if you need to run backward through the graph again", n->name);
    }
    if (i >= n->n_saved || !n->saved[i].defined) return GF_OK;
    gf_saved *s = &n->saved[i];
    gf_tensor *t;
    if (s->hooks) {
        int sc = gf__scope_suspend();
        t = s->hooks_copy.unpack(s->packed, s->hooks_copy.user);
        gf__scope_resume(sc);
        if (!t)
            return gf__error(GF_ERR_AUTOGRAD, "%s: the saved-tensor unpack hook returned NULL",
                             n->name);
        /* History is attached below to a tensor of our own: not to one
         * with history already, nor to one the hooks still hold (that would
         * tie what they keep to this node: a cycle when it is the node's
         * own output). */
        if (t->autograd || atomic_load_explicit(&t->refcount, memory_order_acquire) > 1) {
            gf_tensor *a = gf__ag_alias(t);
            gf_tensor_release(t);
            t = a;
            if (!t) return gf__status();
        }
    } else {
        uint64_t now = gf_tensor_version(s->data);
        if (now != s->version) {
            char shape[200];
            const char *producer = s->is_output ? n->name : s->grad_fn ? s->grad_fn->name : NULL;
            return gf__error(GF_ERR_AUTOGRAD, "one of the tensors needed for gradient computation has "
                      "been modified by an in-place operation: %s%s, saved by %s%s%s, is at "
                      "version %llu; expected version %llu instead. Use an out-of-place op, or "
                      "gf_clone the tensor before modifying it", gf_dtype_name(s->data->dtype),
                      gf__shape_str(s->data->sizes, s->data->rank, shape, sizeof shape), n->name,
                      producer ? ", produced by " : " (a leaf)", producer ? producer : "",
                      (unsigned long long)now, (unsigned long long)s->version);
        }
        t = gf__ag_alias(s->data);
        if (!t) return gf__status();
    }
    /* With create_graph, the saved tensor carries its history so the
     * gradient formula is itself differentiable. */
    if (s->requires_grad && gf__ag_grad_enabled()) {
        uint32_t nr = s->output_nr;
        gf_node *src = NULL;
        if (s->is_output) {
            if (!(src = gf__ag_saved_output_history(n, &nr))) {
                gf_tensor_release(t);
                return gf__status();
            }
        } else if (s->grad_fn) {
            gf__ag_node_retain(src = s->grad_fn);
        }
        if (src) gf__ag_set_history(t, src, nr);
        gf__ag_node_release(src);
    }
    if (s->fw && gf__fw_restore(t, s->fw) != GF_OK) {
        gf_tensor_release(t);
        return gf__status();
    }
    *out = t;
    return GF_OK;
}

void gf__ag_release_saved(gf_node *n) {
    if (n->wrapped) gf__ag_release_saved(n->wrapped);
    if (!n->ever_saved) return; /* nothing saved: the graph may run again */
    for (int i = 0; i < n->n_saved; i++) free_saved_slot(&n->saved[i]);
    n->saved_released = true;
}
