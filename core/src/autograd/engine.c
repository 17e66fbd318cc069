/* SPDX-License-Identifier: BSD-3-Clause */
/* engine.c — runs a recorded graph backwards.
 *
 * Dependency counting from the roots, a ready queue ordered by creation
 * sequence (newest first; leaf accumulation before anything else), input
 * buffers that sum gradients arriving along several paths, hooks in the
 * documented order, and release of saved tensors as each node finishes
 * (unless the graph is kept). Iterative throughout: a 150k-node chain needs
 * no deep stack. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp/amp_internal.h"
#include "ag_internal.h"
#include "profiler_internal.h"

typedef struct task {
    gf_node *node;
    gf_tensor **buf; /* n_outputs incoming gradients */
    int deps;
    bool exec;
    bool capture;
    bool received;
} task;

typedef struct run {
    task *tasks;
    size_t n, cap;
    size_t *table; /* open addressing: index + 1, 0 = empty */
    size_t table_cap;
    size_t *heap;  /* ready queue of task indices */
    size_t heap_n, heap_cap;
} run;

static size_t hash_ptr(const void *p, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static gf_status grow_table(run *r) {
    size_t cap = r->table_cap ? r->table_cap * 2 : 256;
    size_t *t = calloc(cap, sizeof *t);
    if (!t) return gf__error(GF_ERR_OUT_OF_MEMORY, "backward: out of host memory");
    for (size_t i = 0; i < r->n; i++) {
        size_t h = hash_ptr(r->tasks[i].node, cap);
        while (t[h]) h = (h + 1) & (cap - 1);
        t[h] = i + 1;
    }
    free(r->table);
    r->table = t;
    r->table_cap = cap;
    return GF_OK;
}

static long find(const run *r, const gf_node *n) {
    if (!r->table_cap) return -1;
    size_t h = hash_ptr(n, r->table_cap);
    while (r->table[h]) {
        if (r->tasks[r->table[h] - 1].node == n) return (long)(r->table[h] - 1);
        h = (h + 1) & (r->table_cap - 1);
    }
    return -1;
}

/* Adds n (retained) and returns its index; -1 on OOM. */
static long add_task(run *r, gf_node *n) {
    if ((r->n + 1) * 2 > r->table_cap && grow_table(r) != GF_OK) return -1;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        task *t = realloc(r->tasks, cap * sizeof *t);
        if (!t) {
            gf__error(GF_ERR_OUT_OF_MEMORY, "backward: out of host memory");
            return -1;
        }
        r->tasks = t;
        r->cap = cap;
    }
    task *t = &r->tasks[r->n];
    memset(t, 0, sizeof *t);
    t->node = n;
    gf__ag_node_retain(n);
    size_t h = hash_ptr(n, r->table_cap);
    while (r->table[h]) h = (h + 1) & (r->table_cap - 1);
    r->table[h] = r->n + 1;
    return (long)r->n++;
}

static bool heap_less(const run *r, size_t a, size_t b) {
    return r->tasks[a].node->seq < r->tasks[b].node->seq;
}

static gf_status heap_push(run *r, size_t i) {
    if (r->heap_n == r->heap_cap) {
        size_t cap = r->heap_cap ? r->heap_cap * 2 : 64;
        size_t *h = realloc(r->heap, cap * sizeof *h);
        if (!h) return gf__error(GF_ERR_OUT_OF_MEMORY, "backward: out of host memory");
        r->heap = h;
        r->heap_cap = cap;
    }
    size_t k = r->heap_n++;
    r->heap[k] = i;
    while (k && heap_less(r, r->heap[(k - 1) / 2], r->heap[k])) {
        size_t p = (k - 1) / 2, tmp = r->heap[p];
        r->heap[p] = r->heap[k];
        r->heap[k] = tmp;
        k = p;
    }
    return GF_OK;
}

static size_t heap_pop(run *r) {
    size_t top = r->heap[0];
    r->heap[0] = r->heap[--r->heap_n];
    size_t k = 0;
    for (;;) {
        size_t l = 2 * k + 1, m = k;
        if (l < r->heap_n && heap_less(r, r->heap[m], r->heap[l])) m = l;
        if (l + 1 < r->heap_n && heap_less(r, r->heap[m], r->heap[l + 1])) m = l + 1;
        if (m == k) break;
        size_t tmp = r->heap[m];
        r->heap[m] = r->heap[k];
        r->heap[k] = tmp;
        k = m;
    }
    return top;
}

static void free_buf(task *t) {
    if (!t->buf) return;
    for (int i = 0; i < t->node->n_outputs; i++) gf_tensor_release(t->buf[i]);
    free(t->buf);
    t->buf = NULL;
}

static void run_free(run *r) {
    for (size_t i = 0; i < r->n; i++) {
        free_buf(&r->tasks[i]);
        gf__ag_node_release(r->tasks[i].node);
    }
    free(r->tasks);
    free(r->table);
    free(r->heap);
}

/* Adds g (a reference the buffer takes over) into slot nr of task t. */
static gf_status buffer_add(task *t, uint32_t nr, gf_tensor *g) {
    t->received = true;
    if (!t->buf) {
        t->buf = calloc((size_t)t->node->n_outputs, sizeof *t->buf);
        if (!t->buf) {
            gf_tensor_release(g);
            return gf__error(GF_ERR_OUT_OF_MEMORY, "backward: out of host memory");
        }
    }
    if (nr >= (uint32_t)t->node->n_outputs) {
        gf_tensor_release(g);
        return gf__error(GF_ERR_AUTOGRAD, "backward: internal: input %u of %s out of range", nr,
                         t->node->name);
    }
    if (!g) return GF_OK;
    if (!t->buf[nr]) {
        t->buf[nr] = g;
        return GF_OK;
    }
    gf_tensor *sum = gf_add(t->buf[nr], g);
    gf_tensor_release(g);
    if (!sum) return gf__status();
    gf_tensor_release(t->buf[nr]);
    t->buf[nr] = sum;
    return GF_OK;
}

static gf_status check_grad(const gf_node *n, int i, gf_tensor **gp, const gf_edge *e) {
    const gf_output_meta *m = &e->node->outputs[e->input_nr];
    if (!m->device) return GF_OK;
    if (gf_dtype_is_complex((*gp)->dtype) && !gf_dtype_is_complex(m->dtype)) {
        /* A complex gradient for a real tensor: its real part, as PyTorch
         * (the imaginary part is the derivative along a direction the
         * real tensor cannot move in). */
        gf_tensor *r = gf__grad_to_dtype(*gp, m->dtype);
        if (!r) return gf__status();
        gf_tensor_release(*gp);
        *gp = r;
    }
    const gf_tensor *g = *gp;
    if (g->rank != m->rank || memcmp(g->sizes, m->sizes, sizeof(int64_t) * (size_t)m->rank)) {
        char a[200], b[200];
        return gf__error(GF_ERR_AUTOGRAD, "%s returned an invalid gradient at index %d: got "
                         "sizes %s but expected %s", n->name, i,
                         gf__shape_str(g->sizes, g->rank, a, sizeof a),
                         gf__shape_str(m->sizes, m->rank, b, sizeof b));
    }
    if (g->dtype != m->dtype)
        return gf__error(GF_ERR_AUTOGRAD, "%s returned a gradient of dtype %s at index %d; "
                         "expected %s", n->name, gf_dtype_name(g->dtype), i, gf_dtype_name(m->dtype));
    return GF_OK;
}

static gf_status check_nan(const gf_node *n, int i, const gf_tensor *g) {
    gf_tensor *bad = gf_ne(g, g);
    gf_tensor *any = bad ? gf_amax(bad, NULL, 0, false) : NULL;
    double v = 0;
    gf_status s = any ? gf_tensor_item(any, &v) : gf__status();
    gf_tensor_release(bad);
    gf_tensor_release(any);
    if (s != GF_OK) return s;
    if (v != 0)
        return gf__error(GF_ERR_AUTOGRAD, "anomaly mode: function '%s' returned NaN values in its "
                         "gradient output %d", n->name, i);
    return GF_OK;
}

static gf_status run_node(task *t, bool keep_graph, bool create_graph, gf_tensor **grad_inputs) {
    gf_node *n = t->node;
    gf_tensor **grads = t->buf;
    gf_status s;
    if (n->accumulates) { /* AccumulateGrad */
        gf_tensor *leaf = gf__ag_accumulator_leaf(n);
        if (!leaf) return GF_OK; /* released: its gradient has no reader */
        s = gf__ag_run_leaf_hooks(leaf, &grads[0]);
        if (s == GF_OK) s = gf__ag_run_pre_hooks(n, grads);
        if (s == GF_OK && grads[0]) s = gf__ag_accumulate(leaf, grads[0], create_graph);
        if (s == GF_OK) s = gf__ag_run_post_hooks(n, grad_inputs, grads);
        gf_tensor_release(leaf);
        return s;
    }
    if ((s = gf__ag_run_pre_hooks(n, grads)) != GF_OK) return s;
    if ((s = gf__ag_run_retain_grad(n, grads)) != GF_OK) return s;
    bool any = false;
    for (int i = 0; i < n->n_outputs; i++) any |= grads[i] != NULL;
    if (!any) return GF_OK; /* nothing flows through */
    for (int i = 0; i < n->n_outputs; i++) {
        if (grads[i]) continue;
        grads[i] = gf__ag_zeros_meta(&n->outputs[i]);
        if (!grads[i]) return gf__status();
    }
    pthread_mutex_lock(&n->lock);
    if (n->saved_released || (n->wrapped && n->wrapped->saved_released)) {
        pthread_mutex_unlock(&n->lock);
        return gf__error(GF_ERR_AUTOGRAD, "%s: trying to backward through the graph a second "
                         "time (or to read saved tensors after they were freed). Saved values "
                         "are freed when backward runs; pass retain_graph = 1 to gf_backward / "
                         "gf_grad the first time if you need to run backward through the graph "
                         "again", n->name);
    }
    uint64_t prof_t0 = gf__prof_on() ? gf__prof_span_begin("backward", n->name) : 0;
    s = n->apply ? n->apply(n, grads, grad_inputs) : GF_OK;
    if (prof_t0) gf__prof_span_end("backward", n->name, prof_t0);
    if (!keep_graph) gf__ag_release_saved(n);
    pthread_mutex_unlock(&n->lock);
    if (s != GF_OK) return s;
    for (int i = 0; i < n->n_next; i++) {
        if (!grad_inputs[i]) continue;
        if (!n->next[i].node) {
            gf_tensor_release(grad_inputs[i]);
            grad_inputs[i] = NULL;
            continue;
        }
        if ((s = check_grad(n, i, &grad_inputs[i], &n->next[i])) != GF_OK) return s;
        if (gf__ag_anomaly() && (s = check_nan(n, i, grad_inputs[i])) != GF_OK) return s;
    }
    return gf__ag_run_post_hooks(n, grad_inputs, grads);
}

/* gf_grad: marks the nodes that must run, those with a path to a captured
 * edge. A post-order walk of the graph (a node after all its children):
 * creation order is not a topological order, since a node's edges may lead
 * to a node made after it (a view whose base was written in place gets its
 * new history when an op takes it as input, after that op's node). */
static gf_status mark_exec(run *r, const gf_edge *roots, int n_roots) {
    typedef struct frame {
        size_t t;
        int k; /* next edge to visit */
    } frame;
    unsigned char *seen = calloc(r->n ? r->n : 1, 1);
    frame *st = malloc((r->n ? r->n : 1) * sizeof *st); /* each task is pushed once */
    if (!seen || !st) {
        free(seen);
        free(st);
        return gf__error(GF_ERR_OUT_OF_MEMORY, "backward: out of host memory");
    }
    size_t top = 0;
    for (int i = 0; i < n_roots; i++) {
        long t = roots[i].node ? find(r, roots[i].node) : -1;
        if (t < 0 || seen[t]) continue;
        seen[t] = 1;
        st[top++] = (frame){(size_t)t, 0};
        while (top) {
            frame *f = &st[top - 1];
            gf_node *n = r->tasks[f->t].node;
            if (f->k < n->n_next) {
                gf_node *m = n->next[f->k++].node;
                long c = m ? find(r, m) : -1;
                if (c >= 0 && !seen[c]) {
                    seen[c] = 1;
                    st[top++] = (frame){(size_t)c, 0};
                }
                continue;
            }
            task *tk = &r->tasks[f->t];
            for (int k = 0; k < n->n_next && !tk->exec; k++) {
                long c = n->next[k].node ? find(r, n->next[k].node) : -1;
                if (c >= 0 && (r->tasks[c].capture || r->tasks[c].exec)) tk->exec = true;
            }
            top--;
        }
    }
    free(seen);
    free(st);
    return GF_OK;
}

static gf_status discover(run *r, const gf_edge *roots, int n_roots) {
    size_t cap = 64, top = 0;
    gf_node **stack = malloc(cap * sizeof *stack);
    if (!stack) return gf__error(GF_ERR_OUT_OF_MEMORY, "backward: out of host memory");
    for (int i = 0; i < n_roots; i++)
        if (roots[i].node && find(r, roots[i].node) < 0) {
            if (add_task(r, roots[i].node) < 0) goto oom;
            stack[top++] = roots[i].node;
            if (top == cap) {
                gf_node **s2 = realloc(stack, (cap *= 2) * sizeof *stack);
                if (!s2) goto oom;
                stack = s2;
            }
        }
    while (top) {
        gf_node *n = stack[--top];
        for (int i = 0; i < n->n_next; i++) {
            gf_node *m = n->next[i].node;
            if (!m || find(r, m) >= 0) continue;
            if (add_task(r, m) < 0) goto oom;
            if (top + 1 >= cap) {
                gf_node **s2 = realloc(stack, (cap *= 2) * sizeof *stack);
                if (!s2) goto oom;
                stack = s2;
            }
            stack[top++] = m;
        }
    }
    free(stack);
    return GF_OK;
oom:
    free(stack);
    return gf__error(GF_ERR_OUT_OF_MEMORY, "backward: out of host memory");
}

gf_status gf__ag_engine_run(const gf_edge *roots, gf_tensor *const *root_grads, int n_roots,
                            bool keep_graph, bool create_graph, const gf_edge *capture,
                            int n_capture, gf_tensor **captured) {
    run r = {0};
    gf_status s = discover(&r, roots, n_roots);
    gf_grad_mode prev_mode = gf_grad_mode_set(create_graph ? GF_GRAD_MODE_GRAD : GF_GRAD_MODE_NO_GRAD);
    int amp_saved = gf__autocast_suspend(); /* backward formulas sit below autocast */
    int scope = gf__scope_suspend();
    gf_tensor **grad_inputs = NULL;

    /* Which nodes run: all of them for backward; for grad, those on a path
     * to an input. */
    if (s == GF_OK) {
        for (int k = 0; k < n_capture; k++) {
            long i = capture[k].node ? find(&r, capture[k].node) : -1;
            if (i >= 0) r.tasks[i].capture = true;
        }
        if (capture) s = mark_exec(&r, roots, n_roots);
        else
            for (size_t i = 0; i < r.n; i++) r.tasks[i].exec = true;
    }
    if (s == GF_OK) {
        for (size_t i = 0; i < r.n; i++) {
            if (!r.tasks[i].exec) continue;
            gf_node *n = r.tasks[i].node;
            for (int k = 0; k < n->n_next; k++)
                if (n->next[k].node) r.tasks[find(&r, n->next[k].node)].deps++;
        }
        for (int k = 0; k < n_roots && s == GF_OK; k++) {
            if (!roots[k].node) continue;
            long i = find(&r, roots[k].node);
            s = buffer_add(&r.tasks[i], roots[k].input_nr, gf_tensor_retain(root_grads[k]));
        }
        for (size_t i = 0; i < r.n && s == GF_OK; i++)
            if (r.tasks[i].deps == 0 && r.tasks[i].received) s = heap_push(&r, i);
    }
    while (s == GF_OK && r.heap_n) {
        size_t ti = heap_pop(&r);
        task *t = &r.tasks[ti];
        gf_node *n = t->node;
        if (!t->buf) t->buf = calloc((size_t)(n->n_outputs ? n->n_outputs : 1), sizeof *t->buf);
        if (!t->buf) {
            s = gf__error(GF_ERR_OUT_OF_MEMORY, "backward: out of host memory");
            break;
        }
        if (t->capture) {
            /* gf_grad: the gradient of an input is what flows into its
             * edge, after the hooks registered on that tensor. */
            if (n->accumulates) {
                gf_tensor *leaf = gf__ag_accumulator_leaf(n);
                s = leaf ? gf__ag_run_leaf_hooks(leaf, &t->buf[0]) : GF_OK;
                gf_tensor_release(leaf);
            } else {
                s = gf__ag_run_tensor_hooks(n, t->buf);
            }
            for (int k = 0; k < n_capture && s == GF_OK; k++)
                if (capture[k].node == n && !captured[k])
                    captured[k] = gf_tensor_retain(t->buf[capture[k].input_nr]);
        }
        if (!t->exec || s != GF_OK) {
            free_buf(t);
            continue;
        }
        if (!t->capture && !n->accumulates && (s = gf__ag_run_tensor_hooks(n, t->buf)) != GF_OK) break;
        free(grad_inputs);
        grad_inputs = calloc((size_t)(n->n_next ? n->n_next : 1), sizeof *grad_inputs);
        if (!grad_inputs) {
            s = gf__error(GF_ERR_OUT_OF_MEMORY, "backward: out of host memory");
            break;
        }
        s = run_node(t, keep_graph, create_graph, grad_inputs);
        free_buf(t); /* the gradients of this node are no longer needed */
        for (int k = 0; k < n->n_next; k++) {
            gf_node *m = n->next[k].node;
            if (!m) continue;
            task *c = &r.tasks[find(&r, m)];
            if (s == GF_OK) s = buffer_add(c, n->next[k].input_nr, grad_inputs[k]);
            else gf_tensor_release(grad_inputs[k]);
            grad_inputs[k] = NULL;
            if (--c->deps == 0 && s == GF_OK && c->received) s = heap_push(&r, (size_t)(c - r.tasks));
        }
        if (s != GF_OK && gf__ag_anomaly() && n->anomaly_trace) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", gf__message());
            gf__error(gf__status(), "%s\n(anomaly mode) the failing node %s", msg, n->anomaly_trace);
        }
    }
    free(grad_inputs);
    run_free(&r);
    gf__scope_resume(scope);
    gf_grad_mode_set(prev_mode);
    gf__autocast_resume(amp_saved);
    if (s != GF_OK && captured)
        for (int k = 0; k < n_capture; k++) {
            gf_tensor_release(captured[k]);
            captured[k] = NULL;
        }
    return s;
}

/* ------------------------------------------------------------ public entry points */
static gf_tensor *default_grad(gf_tensor *out, const char *op) {
    if (gf__numel(out) != 1) {
        char a[200];
        gf__error(GF_ERR_AUTOGRAD, "%s: a gradient can be created implicitly only for outputs "
                  "with one element; this output has sizes %s: pass grad_output", op,
                  gf__shape_str(out->sizes, out->rank, a, sizeof a));
        return NULL;
    }
    if (gf_dtype_is_complex(out->dtype)) {
        gf__error(GF_ERR_AUTOGRAD, "%s: a gradient can be created implicitly only for real "
                  "outputs (as PyTorch); this output is %s: reduce it to a real loss (gf_real, "
                  "gf_abs) or pass grad_output", op, gf_dtype_name(out->dtype));
        return NULL;
    }
    return gf__ones_like_raw(out);
}

static gf_status check_grad_output(const gf_tensor *out, const gf_tensor *g, const char *op) {
    if (g->rank != out->rank || memcmp(g->sizes, out->sizes, sizeof(int64_t) * (size_t)g->rank)) {
        char a[200], b[200];
        return gf__error(GF_ERR_SHAPE, "%s: grad_output has sizes %s but the output has sizes %s",
                         op, gf__shape_str(g->sizes, g->rank, a, sizeof a),
                         gf__shape_str(out->sizes, out->rank, b, sizeof b));
    }
    if (g->dtype != out->dtype)
        return gf__error(GF_ERR_DTYPE, "%s: grad_output is %s but the output is %s", op,
                         gf_dtype_name(g->dtype), gf_dtype_name(out->dtype));
    return gf__same_device(out, g, op) ? GF_OK : gf__status();
}

gf_status gf_backward(gf_tensor *root, const gf_tensor *grad_output, const gf_backward_opts *opts) {
    if (!root) return gf__null_arg("gf_backward", "root");
    gf_backward_opts o = opts ? *opts : (gf_backward_opts){.retain_graph = -1};
    if (!gf__ag_requires_grad(root))
        return gf__error(GF_ERR_AUTOGRAD, "gf_backward: the root does not require grad and has "
                         "no grad_fn; call gf_tensor_set_requires_grad on the leaves you want "
                         "gradients for before computing the root (and not under no-grad mode)");
    gf_tensor *g;
    if (grad_output) {
        gf_status s = check_grad_output(root, grad_output, "gf_backward");
        if (s != GF_OK) return s;
        g = gf_tensor_retain((gf_tensor *)grad_output);
    } else if (!(g = default_grad(root, "gf_backward"))) return gf__status();
    gf_edge e = gf__ag_gradient_edge(root);
    bool keep = o.retain_graph < 0 ? o.create_graph : o.retain_graph != 0;
    gf_status s = gf__ag_engine_run(&e, &g, 1, keep, o.create_graph, NULL, 0, NULL);
    gf__ag_node_release(e.node);
    gf_tensor_release(g);
    return s;
}

gf_status gf_grad(gf_tensor *const *outputs, int n_outputs, gf_tensor *const *grad_outputs,
                  gf_tensor *const *inputs, int n_inputs, gf_tensor **results,
                  const gf_grad_opts *opts) {
    if (!outputs || !inputs || !results || n_outputs < 1 || n_inputs < 1)
        return gf__error(GF_ERR_INVALID, "gf_grad: outputs, inputs and results are required, with "
                         "at least one of each");
    gf_grad_opts o = opts ? *opts : (gf_grad_opts){.retain_graph = -1};
    for (int i = 0; i < n_inputs; i++) results[i] = NULL;
    gf_edge *roots = calloc((size_t)n_outputs, sizeof *roots);
    gf_tensor **grads = calloc((size_t)n_outputs, sizeof *grads);
    gf_edge *caps = calloc((size_t)n_inputs, sizeof *caps);
    gf_status s = (roots && grads && caps) ? GF_OK
                                          : gf__error(GF_ERR_OUT_OF_MEMORY, "gf_grad: out of memory");
    for (int i = 0; i < n_outputs && s == GF_OK; i++) {
        gf_tensor *out = outputs[i];
        if (!out) {
            s = gf__null_arg("gf_grad", "an output");
            break;
        }
        if (!gf__ag_requires_grad(out)) {
            s = gf__error(GF_ERR_AUTOGRAD, "gf_grad: output %d does not require grad and has no "
                          "grad_fn", i);
            break;
        }
        const gf_tensor *g = grad_outputs ? grad_outputs[i] : NULL;
        if (g) {
            if ((s = check_grad_output(out, g, "gf_grad")) != GF_OK) break;
            grads[i] = gf_tensor_retain((gf_tensor *)g);
        } else if (!(grads[i] = default_grad(out, "gf_grad"))) {
            s = gf__status();
            break;
        }
        roots[i] = gf__ag_gradient_edge(out);
    }
    for (int i = 0; i < n_inputs && s == GF_OK; i++) {
        if (!inputs[i]) {
            s = gf__null_arg("gf_grad", "an input");
            break;
        }
        if (!gf__ag_requires_grad(inputs[i])) {
            s = gf__error(GF_ERR_AUTOGRAD, "gf_grad: input %d does not require grad; only tensors "
                          "that require grad can be differentiated", i);
            break;
        }
        caps[i] = gf__ag_gradient_edge(inputs[i]);
    }
    if (s == GF_OK) {
        bool keep = o.retain_graph < 0 ? o.create_graph : o.retain_graph != 0;
        s = gf__ag_engine_run(roots, grads, n_outputs, keep, o.create_graph, caps, n_inputs, results);
    }
    for (int i = 0; i < n_inputs && s == GF_OK; i++) {
        if (results[i]) continue;
        if (!o.allow_unused) {
            s = gf__error(GF_ERR_AUTOGRAD, "gf_grad: input %d was not used in the graph of the "
                          "outputs; set allow_unused if that is intended", i);
            break;
        }
        if (o.materialize_grads && !(results[i] = gf__full_like_raw(inputs[i], 0.0)))
            s = gf__status();
    }
    for (int i = 0; i < n_inputs && s == GF_OK; i++) gf__ret(results[i]);
    if (s != GF_OK)
        for (int i = 0; i < n_inputs; i++) {
            gf_tensor_release(results[i]);
            results[i] = NULL;
        }
    for (int i = 0; i < n_outputs; i++) {
        if (roots) gf__ag_node_release(roots[i].node);
        if (grads) gf_tensor_release(grads[i]);
    }
    for (int i = 0; caps && i < n_inputs; i++) gf__ag_node_release(caps[i].node);
    free(roots);
    free(grads);
    free(caps);
    return s;
}
