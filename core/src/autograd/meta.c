/* SPDX-License-Identifier: BSD-3-Clause */
/* meta.c — per-tensor autograd metadata: flags, .grad, history, views. */
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"
#include "fwad/fw_internal.h"

static pthread_mutex_t g_acc_lock = PTHREAD_MUTEX_INITIALIZER;  /* accumulator weak refs */
static pthread_mutex_t g_grad_lock = PTHREAD_MUTEX_INITIALIZER; /* .grad accumulation */

gf_autograd_meta *gf__ag_meta(gf_tensor *t) {
    gf_autograd_meta *m = __atomic_load_n(&t->autograd, __ATOMIC_ACQUIRE);
    if (m) return m;
    m = calloc(1, sizeof *m);
    if (!m) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for autograd metadata");
        return NULL;
    }
    m->is_inference = t->storage->inference;
    gf_autograd_meta *expected = NULL;
    if (!__atomic_compare_exchange_n(&t->autograd, &expected, m, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        free(m);
        return expected;
    }
    return m;
}

void gf__ag_meta_free(gf_tensor *t) {
    gf_autograd_meta *m = t->autograd;
    /* Before anything here can drop the accumulator (through .grad's own
     * history): it must no longer refer to this dying tensor. */
    pthread_mutex_lock(&g_acc_lock);
    if (m->accumulator) m->accumulator->leaf = NULL;
    m->accumulator = NULL;
    pthread_mutex_unlock(&g_acc_lock);
    t->autograd = NULL;
    if (m->retain_hook) m->retain_hook->target = NULL; /* owned by grad_fn, still alive */
    gf__hold_release(m->grad);
    gf__hold_release(m->base);
    gf__ag_hooks_free(m->post_acc_hooks);
    gf__ag_hooks_free(m->leaf_hooks);
    gf__ag_hooks_free(m->leaf_node_hooks);
    gf__ag_node_release(m->grad_fn);
    gf__fw_entries_free(m->fw);
    free(m);
}

bool gf__ag_requires_grad(const gf_tensor *t) {
    const gf_autograd_meta *m = t ? t->autograd : NULL;
    if (!m) return false;
    if (m->requires_grad || m->grad_fn) return true;
    /* A view of a base that gained history after an in-place op. */
    return m->base && m->base->autograd &&
           (m->base->autograd->requires_grad || m->base->autograd->grad_fn) &&
           gf_tensor_version(t) != m->attr_version;
}

void gf__ag_set_history(gf_tensor *t, gf_node *n, uint32_t output_nr) {
    gf_autograd_meta *m = gf__ag_meta(t);
    if (!m) return;
    gf__ag_node_retain(n);
    gf_node *old = m->grad_fn;
    m->grad_fn = n;
    m->output_nr = output_nr;
    m->requires_grad = true;
    m->attr_version = gf_tensor_version(t);
    /* The retain_grad hook moves while the old node (which owns the old
     * hook) is still alive: releasing it first could free that hook. */
    if (m->retains_grad) gf__ag_move_retain_hook(t);
    gf__ag_node_release(old);
}

static gf_node *accumulator_for(gf_tensor *leaf) {
    gf_autograd_meta *m = leaf->autograd;
    pthread_mutex_lock(&g_acc_lock);
    gf_node *n = m->accumulator;
    if (n) {
        long c = atomic_load(&n->refcount);
        while (c > 0 && !atomic_compare_exchange_weak(&n->refcount, &c, c + 1)) {
        }
        if (c <= 0) n = NULL; /* dying: make a new one */
    }
    if (!n) {
        n = gf__ag_node_new("AccumulateGrad", NULL, 0, 1);
        if (n) {
            n->seq = UINT64_MAX; /* leaves first among ready nodes */
            n->leaf = leaf; /* weak: see gf_node.leaf */
            n->accumulates = true;
            n->outputs[0].rank = leaf->rank;
            memcpy(n->outputs[0].sizes, leaf->sizes, sizeof leaf->sizes);
            n->outputs[0].dtype = leaf->dtype;
            n->outputs[0].device = leaf->storage->device;
            m->accumulator = n;
        }
    }
    pthread_mutex_unlock(&g_acc_lock);
    return n;
}

void gf__ag_accumulator_dying(gf_node *n) {
    pthread_mutex_lock(&g_acc_lock);
    if (n->leaf && n->leaf->autograd && n->leaf->autograd->accumulator == n)
        n->leaf->autograd->accumulator = NULL;
    pthread_mutex_unlock(&g_acc_lock);
}

gf_tensor *gf__ag_accumulator_leaf(gf_node *n) {
    pthread_mutex_lock(&g_acc_lock);
    gf_tensor *t = n->leaf;
    if (t) {
        /* A leaf whose count already reached zero is being freed: its
         * gf__ag_meta_free waits for this lock to clear n->leaf. */
        long c = atomic_load(&t->refcount);
        while (c > 0 && !atomic_compare_exchange_weak(&t->refcount, &c, c + 1)) {
        }
        if (c <= 0) t = NULL;
    }
    pthread_mutex_unlock(&g_acc_lock);
    return t;
}

gf_edge gf__ag_gradient_edge(gf_tensor *t) {
    gf_edge e = {NULL, 0};
    gf_autograd_meta *m = t ? t->autograd : NULL;
    if (!m) return e;
    /* (A view with another dtype than its base keeps its history: regions
     * are counted in elements of one dtype; inplace.c refuses the writes
     * that would need it.) */
    if (m->base && m->base->dtype == t->dtype && gf_tensor_version(t) != m->attr_version &&
        m->base->autograd &&
        (m->base->autograd->requires_grad || m->base->autograd->grad_fn)) {
        /* The base was modified in place since this view's history was set:
         * the view's gradient now flows through the base's new history. */
        gf_node *n = gf__ag_view_regen_node(t, m->base);
        if (n) {
            gf__ag_set_history(t, n, 0);
            gf__ag_node_release(n);
        }
    }
    if (m->grad_fn) {
        gf__ag_node_retain(m->grad_fn);
        e.node = m->grad_fn;
        e.input_nr = m->output_nr;
    } else if (m->requires_grad) {
        e.node = accumulator_for(t);
    }
    return e;
}

gf_tensor *gf__ag_alias(const gf_tensor *t) { return gf__view(t, t->sizes, t->strides, t->rank, t->offset); }

gf_status gf__ag_on_view(const gf_tensor *base, gf_tensor *view, gf_view_creation how) {
    if (view->storage->inference) return GF_OK;
    const gf_tensor *root = (base->autograd && base->autograd->base) ? base->autograd->base : base;
    gf_autograd_meta *m = gf__ag_meta(view);
    if (!m) return gf__status();
    m->base = gf__hold_adopt(gf_tensor_retain((gf_tensor *)root)); /* graft's own hold */
    m->attr_version = gf_tensor_version(view);
    if (how == GF_VIEW_MULTI_OUTPUT) m->view_creation = GF_VIEW_MULTI_OUTPUT;
    else if (gf__ag_inference_mode()) m->view_creation = GF_VIEW_INFERENCE;
    else if (!gf__ag_grad_enabled() && gf__ag_requires_grad(root)) m->view_creation = GF_VIEW_NO_GRAD;
    else if (base->autograd && base->autograd->view_creation != GF_VIEW_DEFAULT)
        m->view_creation = base->autograd->view_creation; /* a view of such a view */
    return GF_OK;
}

/* True when g can become .grad as it is: no one else holds it or its
 * storage, and it is a plain contiguous tensor over its whole storage. */
static bool stealable(const gf_tensor *g) {
    if (atomic_load(&g->refcount) > 1 || atomic_load(&g->storage->refcount) > 1) return false;
    if (!gf__is_contiguous(g) || g->offset != 0 || g->storage->inference || !g->storage->block)
        return false; /* a view, or memory adopted from its owner */
    return (uint64_t)gf__numel(g) * gf_dtype_size(g->dtype) == g->storage->nbytes;
}

/* True when an existing .grad can take the new gradient in place: it is
 * not an expanded view (elements sharing memory) nor an inference tensor. */
static bool addable_in_place(const gf_tensor *old) {
    if (old->storage->inference && !gf__ag_inference_mode()) return false;
    for (int i = 0; i < old->rank; i++)
        if (old->strides[i] == 0 && old->sizes[i] > 1) return false;
    return true;
}

gf_status gf__ag_accumulate(gf_tensor *leaf, gf_tensor *g, bool create_graph) {
    gf_autograd_meta *m = gf__ag_meta(leaf);
    if (!m) return gf__status();
    if (g->rank != leaf->rank || memcmp(g->sizes, leaf->sizes, sizeof(int64_t) * (size_t)g->rank)) {
        char a[200], b[200];
        return gf__error(GF_ERR_AUTOGRAD, "AccumulateGrad: gradient of sizes %s does not match "
                         "the leaf's sizes %s", gf__shape_str(g->sizes, g->rank, a, sizeof a),
                         gf__shape_str(leaf->sizes, leaf->rank, b, sizeof b));
    }
    gf_status s = GF_OK;
    pthread_mutex_lock(&g_grad_lock);
    gf_tensor *old = m->grad;
    gf_tensor *next;
    if (!old) {
        /* The engine hands over its reference. A gradient that anything
         * else may still read or write (another reference, a storage shared
         * with another tensor, an expanded or partial view of a buffer) is
         * copied, so .grad never aliases it and can later be added into;
         * with create_graph too (a differentiable copy, as PyTorch's
         * clone): backward(sum(x), grad_output = x) hands over x itself, and
         * .grad must not be x, nor share x's memory. */
        if (!stealable(g)) next = gf_clone(g);
        else next = gf_tensor_retain(g);
        if (!create_graph && next && next->autograd) {
            gf_tensor *d = gf_detach(next);
            gf_tensor_release(next);
            next = d;
        }
    } else if (!create_graph && addable_in_place(old)) {
        /* As PyTorch: without create_graph, into the existing tensor, so a
         * reference to .grad taken earlier reads the sum. Nothing records:
         * the engine runs in no-grad mode here. */
        s = gf_add_(old, g);
        pthread_mutex_unlock(&g_grad_lock);
        return s == GF_OK ? gf__ag_run_post_accumulate(leaf) : s;
    } else {
        /* Out of place: with create_graph (the sum keeps its history and an
         * old .grad someone holds keeps its values), or when the existing
         * .grad cannot be written (an expanded view, an inference tensor). */
        next = gf_add(old, g);
    }
    if (next) {
        m->grad = gf__hold_adopt(next);
        gf__hold_release(old);
    } else s = gf__status();
    pthread_mutex_unlock(&g_grad_lock);
    if (s == GF_OK) s = gf__ag_run_post_accumulate(leaf);
    return s;
}

/* ------------------------------------------------------------ public flags */
static bool is_inference_now(const gf_tensor *t) { return t->storage->inference; }

gf_status gf_tensor_set_requires_grad(gf_tensor *t, bool requires_grad) {
    if (!t) return gf__null_arg("gf_tensor_set_requires_grad", "t");
    if (is_inference_now(t) && !gf__ag_inference_mode() && requires_grad)
        return gf__error(GF_ERR_AUTOGRAD, "gf_tensor_set_requires_grad: an inference tensor "
                         "(created in inference mode) cannot require grad; make a normal copy "
                         "with gf_clone outside inference mode first");
    if (requires_grad && !gf__dtype_differentiable(t->dtype))
        return gf__error(GF_ERR_AUTOGRAD, "gf_tensor_set_requires_grad: only floating-point "
                         "and complex tensors can require gradients (this one is %s); convert it with "
                         "gf_to_dtype first", gf_dtype_name(t->dtype));
    gf_autograd_meta *m = t->autograd;
    if (!requires_grad && m && m->grad_fn)
        return gf__error(GF_ERR_AUTOGRAD, "gf_tensor_set_requires_grad: requires_grad can only be "
                         "turned off on a leaf; this tensor was produced by %s. Use gf_detach to "
                         "get a tensor without history", m->grad_fn->name);
    if (!m && !requires_grad) return GF_OK;
    m = gf__ag_meta(t);
    if (!m) return gf__status();
    m->requires_grad = requires_grad;
    return GF_OK;
}

bool gf_tensor_requires_grad(const gf_tensor *t) { return gf__ag_requires_grad(t); }
bool gf_tensor_is_leaf(const gf_tensor *t) { return !t || !t->autograd || !t->autograd->grad_fn; }
bool gf_tensor_is_inference(const gf_tensor *t) { return t && t->storage->inference; }

const char *gf_tensor_grad_fn_name(const gf_tensor *t) {
    if (!t || !t->autograd) return NULL;
    gf_edge e = gf__ag_gradient_edge((gf_tensor *)t); /* regenerates a stale view's history */
    const char *name = (e.node && t->autograd->grad_fn) ? e.node->name : NULL;
    gf__ag_node_release(e.node);
    return name;
}

gf_tensor *gf_tensor_grad(const gf_tensor *t) {
    if (!t || !t->autograd) return NULL;
    pthread_mutex_lock(&g_grad_lock);
    gf_tensor *g = gf_tensor_retain(t->autograd->grad);
    pthread_mutex_unlock(&g_grad_lock);
    return gf__ret(g);
}

/* Whether t is reachable from g through the references a tensor's meta
 * holds on other tensors: .grad and a view's base (g_grad_lock held). A
 * chain of gradients of gradients is short; the walk gives up (and lets the
 * assignment through) past a fixed depth rather than allocate. */
static bool refers_to(const gf_tensor *g, const gf_tensor *t) {
    const gf_tensor *stack[64];
    int top = 0;
    stack[top++] = g;
    while (top > 0) {
        const gf_tensor *u = stack[--top];
        if (u == t) return true;
        const gf_autograd_meta *um = u->autograd;
        if (!um) continue;
        if (um->grad && top < 64) stack[top++] = um->grad;
        if (um->base && top < 64) stack[top++] = um->base;
    }
    return false;
}

gf_status gf_tensor_set_grad(gf_tensor *t, const gf_tensor *grad) {
    if (!t) return gf__null_arg("gf_tensor_set_grad", "t");
    if (grad) {
        char a[200], b[200];
        if (grad->rank != t->rank || memcmp(grad->sizes, t->sizes, sizeof(int64_t) * (size_t)t->rank))
            return gf__error(GF_ERR_SHAPE, "gf_tensor_set_grad: gradient sizes %s do not match the "
                             "tensor's sizes %s", gf__shape_str(grad->sizes, grad->rank, a, sizeof a),
                             gf__shape_str(t->sizes, t->rank, b, sizeof b));
        if (grad->dtype != t->dtype)
            return gf__error(GF_ERR_DTYPE, "gf_tensor_set_grad: gradient dtype %s does not match "
                             "the tensor's %s", gf_dtype_name(grad->dtype), gf_dtype_name(t->dtype));
        if (!gf__same_device(t, grad, "gf_tensor_set_grad")) return gf__status();
    }
    if (grad && grad->storage == t->storage)
        return gf__error(GF_ERR_INVALID, "gf_tensor_set_grad: the gradient shares memory with the "
                         "tensor (it is the tensor itself or a view of it); a tensor cannot be "
                         "its own gradient (a reference cycle that is never freed); pass a copy "
                         "made with gf_clone");
    if (!grad && !t->autograd) return GF_OK;
    gf_autograd_meta *m = gf__ag_meta(t);
    if (!m) return gf__status();
    pthread_mutex_lock(&g_grad_lock);
    if (grad && refers_to(grad, t)) {
        pthread_mutex_unlock(&g_grad_lock);
        return gf__error(GF_ERR_INVALID, "gf_tensor_set_grad: the gradient's own .grad (or that of "
                         "its base, or of their gradients) is this tensor, so the two would hold "
                         "each other and never be freed; pass a copy made with gf_clone, or clear "
                         "the other .grad first");
    }
    gf_tensor *old = m->grad;
    m->grad = gf__hold_adopt(gf_tensor_retain((gf_tensor *)grad));
    pthread_mutex_unlock(&g_grad_lock);
    gf__hold_release(old);
    return GF_OK;
}

gf_tensor *gf_detach(const gf_tensor *t) {
    if (!t) {
        gf__null_arg("gf_detach", "t");
        return NULL;
    }
    gf_tensor *r = gf__ag_alias(t);
    return gf__ret(r);
}
