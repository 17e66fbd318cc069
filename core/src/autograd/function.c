/* SPDX-License-Identifier: BSD-3-Clause */
/* function.c — custom autograd functions from C (rule 20). */
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"
#include "fwad/fw_internal.h"

static bool contains(gf_tensor *const *arr, int n, const gf_tensor *t);

struct gf_function_ctx {
    gf_function_def def;
    char *name;
    gf_node *node;       /* weak: the node owns this ctx */
    gf_tensor **to_save; /* during forward (references) */
    int n_to_save;
    gf_tensor **dirty;
    int n_dirty;
    gf_tensor **non_diff;
    int n_non_diff;
    bool *needs_input_grad;
    bool *differentiable; /* input i is a float tensor (may receive a gradient) */
    int n_inputs;
    void *data;
    void (*release)(void *);
    bool in_forward;
    gf_function_jvp_fn jvp; /* forward mode (gf_ctx_set_jvp), optional */
    void *jvp_user;
};

static void ctx_free(gf_function_ctx *c) {
    if (!c) return;
    for (int i = 0; i < c->n_to_save; i++) gf_tensor_release(c->to_save[i]);
    free(c->to_save);
    free(c->dirty);
    free(c->non_diff);
    free(c->needs_input_grad);
    free(c->differentiable);
    if (c->release) { /* a callback: recording suspended, as for the others */
        int sc = gf__scope_suspend();
        c->release(c->data);
        gf__scope_resume(sc);
    }
    free(c->name);
    free(c);
}

static void node_release_ctx(gf_node *n) { ctx_free(n->ext); }

static gf_status push(gf_tensor ***arr, int *n, gf_tensor *t) {
    gf_tensor **a = realloc(*arr, (size_t)(*n + 1) * sizeof **arr);
    if (!a) return gf__error(GF_ERR_OUT_OF_MEMORY, "custom function: out of host memory");
    a[(*n)++] = t;
    *arr = a;
    return GF_OK;
}

gf_status gf_ctx_save_for_backward(gf_function_ctx *ctx, gf_tensor *const *tensors, int n) {
    if (!ctx || (!tensors && n)) return gf__error(GF_ERR_INVALID, "gf_ctx_save_for_backward: NULL argument");
    if (!ctx->in_forward)
        return gf__error(GF_ERR_AUTOGRAD, "%s: gf_ctx_save_for_backward may only be called in "
                         "forward", ctx->name);
    for (int i = 0; i < n; i++) {
        gf_status s = push(&ctx->to_save, &ctx->n_to_save, gf_tensor_retain(tensors[i]));
        if (s != GF_OK) return s;
    }
    return GF_OK;
}

int gf_ctx_saved_count(const gf_function_ctx *ctx) {
    return ctx && ctx->node ? ctx->node->n_saved : 0;
}

gf_tensor *gf_ctx_saved_tensor(gf_function_ctx *ctx, int i) {
    if (!ctx || !ctx->node) {
        gf__error(GF_ERR_AUTOGRAD, "gf_ctx_saved_tensor: saved tensors exist only in backward");
        return NULL;
    }
    if (i < 0 || i >= ctx->node->n_saved) {
        gf__error(GF_ERR_INDEX, "%s: saved tensor %d out of range [0, %d)", ctx->name, i,
                  ctx->node->n_saved);
        return NULL;
    }
    gf_tensor *t = NULL;
    if (gf__ag_unpack(ctx->node, i, &t) != GF_OK) return NULL;
    return gf__ret(t);
}

gf_status gf_ctx_mark_dirty(gf_function_ctx *ctx, gf_tensor *t) {
    if (!ctx || !t) return gf__error(GF_ERR_INVALID, "gf_ctx_mark_dirty: NULL argument");
    return push(&ctx->dirty, &ctx->n_dirty, t);
}

gf_status gf_ctx_mark_non_differentiable(gf_function_ctx *ctx, gf_tensor *t) {
    if (!ctx || !t) return gf__error(GF_ERR_INVALID, "gf_ctx_mark_non_differentiable: NULL argument");
    return push(&ctx->non_diff, &ctx->n_non_diff, t);
}

bool gf_ctx_needs_input_grad(const gf_function_ctx *ctx, int i) {
    return ctx && i >= 0 && i < ctx->n_inputs && ctx->needs_input_grad[i];
}

void gf_ctx_set_data(gf_function_ctx *ctx, void *data, void (*release)(void *)) {
    if (!ctx) return;
    if (ctx->release && ctx->data != data) ctx->release(ctx->data);
    ctx->data = data;
    ctx->release = release;
}

void *gf_ctx_data(const gf_function_ctx *ctx) { return ctx ? ctx->data : NULL; }

gf_status gf_ctx_set_jvp(gf_function_ctx *ctx, gf_function_jvp_fn jvp, void *user) {
    if (!ctx) return gf__null_arg_of("gf_ctx_set_jvp", "ctx", GF__ARG_OPTIONS);
    if (!ctx->in_forward)
        return gf__error(GF_ERR_AUTOGRAD, "%s: gf_ctx_set_jvp may only be called in forward",
                         ctx->name);
    ctx->jvp = jvp;
    ctx->jvp_user = user;
    return GF_OK;
}

/* ------------------------------------------------------------ forward mode */
/* Whether tangent r fits output o (or sets the error naming the function). */
static gf_status check_tangent_of(const gf_function_ctx *c, const gf_tensor *r,
                                  const gf_tensor *o, int j) {
    if (r->rank == o->rank && !memcmp(r->sizes, o->sizes, sizeof(int64_t) * (size_t)o->rank))
        return GF_OK;
    char a[200], b[200];
    return gf__error(GF_ERR_AUTOGRAD, "%s: jvp returned a tangent of sizes %s for output %d, "
                     "whose sizes are %s", c->name, gf__shape_str(r->sizes, r->rank, a, sizeof a),
                     j, gf__shape_str(o->sizes, o->rank, b, sizeof b));
}

/* At a batched level (tangents [B, *primal]): the callback knows tangents
 * of its primals' shapes only, so it runs once per batch entry on that
 * entry's tangents, and each output's B tangents are stacked. A function
 * that writes an input in place keeps refusing the level. */
static gf_status batched_jvp(gf_function_ctx *c, gf_tensor *const *inputs, gf_tensor **tin,
                             int n_inputs, gf_tensor **outputs, int n_outputs, int d) {
    int64_t batch = gf__fw_batch(d);
    if (c->n_dirty > 0 || batch > INT32_MAX) return gf__fw_batch_refuse(d, c->name);
    gf_tensor **ti = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof *ti);
    gf_tensor **to = calloc((size_t)n_outputs, sizeof *to);
    gf_tensor **parts = calloc((size_t)n_outputs * (size_t)batch, sizeof *parts);
    gf_status s = ti && to && parts ? GF_OK
                                    : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory",
                                                c->name);
    uint64_t prev = gf__fw_mask_push(d);
    int sc = gf__scope_suspend();
    for (int64_t k = 0; k < batch && s == GF_OK; k++) {
        for (int i = 0; i < n_inputs && s == GF_OK; i++)
            if (tin[i] && !(ti[i] = gf_select(tin[i], 0, k))) s = gf__status();
        uint64_t seq = gf__error_seq();
        if (s == GF_OK) {
            s = c->jvp(c, inputs, ti, n_inputs, outputs, to, n_outputs, c->jvp_user);
            if (s != GF_OK) s = gf__callback_failed(s, seq, "%s: jvp", c->name);
        }
        for (int j = 0; j < n_outputs; j++) {
            if (s == GF_OK && to[j] && gf__dtype_differentiable(outputs[j]->dtype))
                s = check_tangent_of(c, to[j], outputs[j], j);
            parts[(size_t)j * (size_t)batch + (size_t)k] = to[j];
            to[j] = NULL;
        }
        for (int i = 0; i < n_inputs; i++) {
            gf_tensor_release(ti[i]);
            ti[i] = NULL;
        }
    }
    for (int j = 0; j < n_outputs && s == GF_OK; j++) {
        gf_tensor *o = outputs[j], **pj = parts + (size_t)j * (size_t)batch;
        bool any = false;
        for (int64_t k = 0; k < batch; k++) any |= pj[k] != NULL;
        if (!any || !gf__dtype_differentiable(o->dtype)) continue;
        for (int64_t k = 0; k < batch && s == GF_OK; k++)
            if (!pj[k] && !(pj[k] = gf_zeros_like(o))) s = gf__status();
        gf_tensor *st = s == GF_OK ? gf_stack(pj, (int)batch, 0) : NULL;
        if (s == GF_OK && !st) s = gf__status();
        if (s == GF_OK)
            s = gf__fw_store(o, d, st, (const gf_tensor *const *)inputs, tin, n_inputs);
        gf_tensor_release(st);
    }
    gf__scope_resume(sc);
    gf__fw_mask_pop(prev);
    for (size_t k = 0; parts && k < (size_t)n_outputs * (size_t)batch; k++)
        gf_tensor_release(parts[k]);
    free(parts);
    free(to);
    free(ti);
    return s;
}

/* The tangents of the outputs, by the function's jvp callback, at every
 * open dual level where an input carries one. An input returned unchanged
 * is handed out as a view first (as below), so its tangent is the view's,
 * not the input's; an input modified in place (dirty) gets its new tangent
 * written into its own. */
static gf_status custom_jvp(gf_function_ctx *c, gf_tensor *const *inputs, int n_inputs,
                            gf_tensor **outputs, int n_outputs) {
    if (!gf__fw_enabled() || !gf__fw_any_tangent((const gf_tensor *const *)inputs, n_inputs))
        return GF_OK;
    for (int j = 0; j < n_outputs; j++) {
        gf_tensor *o = outputs[j];
        if (!contains(inputs, n_inputs, o) || contains(c->dirty, c->n_dirty, o)) continue;
        gf_tensor *a = gf__ag_alias(o);
        if (!a) return gf__status();
        gf_tensor_release(o);
        outputs[j] = a;
    }
    gf_tensor **tin = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof *tin);
    gf_tensor **tout = calloc((size_t)n_outputs, sizeof *tout);
    gf_status s = tin && tout ? GF_OK
                              : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", c->name);
    int depth = gf_fwad_level_count();
    for (int d = 0; d < depth && s == GF_OK; d++) {
        if (gf__fw_masked(d)) continue;
        bool any = false;
        int first = -1;
        for (int i = 0; i < n_inputs; i++) {
            tin[i] = inputs[i] ? gf__fw_tangent(inputs[i], d) : NULL;
            if (tin[i] && first < 0) first = i;
            any |= tin[i] != NULL;
        }
        if (any && c->jvp && gf__fw_batch(d) > 0) {
            s = batched_jvp(c, inputs, tin, n_inputs, outputs, n_outputs, d);
        } else if (any && !c->jvp) {
            s = gf__error(GF_ERR_AUTOGRAD, "%s: this custom function has no jvp rule, and its "
                          "input %d carries a tangent at dual level %d (forward-mode AD); give it "
                          "one with gf_ctx_set_jvp in forward, or apply it outside the dual level",
                          c->name, first, d);
        } else if (any) {
            uint64_t prev = gf__fw_mask_push(d);
            int sc = gf__scope_suspend();
            uint64_t seq = gf__error_seq();
            s = c->jvp(c, inputs, tin, n_inputs, outputs, tout, n_outputs, c->jvp_user);
            gf__scope_resume(sc);
            gf__fw_mask_pop(prev);
            if (s != GF_OK) s = gf__callback_failed(s, seq, "%s: jvp", c->name);
            for (int j = 0; j < n_outputs && s == GF_OK; j++) {
                gf_tensor *o = outputs[j], *r = tout[j];
                if (!r || !gf__dtype_differentiable(o->dtype)) continue;
                if ((s = check_tangent_of(c, r, o, j)) != GF_OK) break;
                if (contains(c->dirty, c->n_dirty, o))
                    s = gf__fw_commit_level(o, d, r, c->name);
                else
                    s = gf__fw_store(o, d, r, (const gf_tensor *const *)inputs, tin, n_inputs);
            }
        }
        for (int j = 0; tout && j < n_outputs; j++) {
            gf_tensor_release(tout[j]);
            tout[j] = NULL;
        }
        for (int i = 0; tin && i < n_inputs; i++) {
            gf_tensor_release(tin[i]);
            tin[i] = NULL;
        }
    }
    free(tin);
    free(tout);
    return s;
}

/* ------------------------------------------------------------ backward */
/* The error node is part of the gradient's graph and outlives the
 * function's node (and ctx, which owns the name): it keeps a copy of the
 * name in ext. */
static void free_name(gf_node *n) { free(n->ext); }

static gf_status delayed_error(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    return gf__error(GF_ERR_AUTOGRAD, "%s is marked once_differentiable: its backward cannot be "
                     "differentiated (a double backward went through it)", n->name);
}

static gf_status function_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    gf_function_ctx *c = n->ext;
    bool create_graph = gf__ag_grad_enabled();
    gf_grad_mode prev = gf_grad_mode_get();
    if (c->def.once_differentiable) gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    /* No scope here: the engine runs with scopes suspended, so the user's
     * backward owns what it creates (plain ownership) unless it opens a
     * scope of its own. */
    uint64_t seq = gf__error_seq();
    gf_status s = c->def.backward(c, grads, n->n_outputs, out, n->n_next, c->def.user);
    gf_grad_mode_set(prev);
    if (s != GF_OK) {
        for (int i = 0; i < n->n_next; i++) {
            gf_tensor_release(out[i]);
            out[i] = NULL;
        }
        return gf__callback_failed(s, seq, "%s: backward", c->name);
    }
    for (int i = 0; i < n->n_next; i++) {
        if (!out[i] || c->differentiable[i]) continue;
        /* C's counterpart of returning too many gradients: one for a slot
         * that holds no differentiable tensor. */
        gf_status e = gf__error(GF_ERR_AUTOGRAD, "%s: backward returned a gradient for input %d, "
                                "which is not a floating-point tensor; leave that slot NULL",
                                c->name, i);
        for (int k = 0; k < n->n_next; k++) {
            gf_tensor_release(out[k]);
            out[k] = NULL;
        }
        return e;
    }
    if (c->def.once_differentiable && create_graph) {
        /* The results may depend on the incoming gradients and, through
         * saved tensors, on the function's inputs: if either requires grad,
         * route the results through a node that fails when it runs. (This
         * also covers the saved-input case that a check of the gradients
         * alone would miss.) */
        bool any = false;
        for (int i = 0; i < n->n_outputs; i++) any |= gf__ag_requires_grad(grads[i]);
        for (int i = 0; i < n->n_next; i++) any |= n->next[i].node != NULL;
        for (int i = 0; any && i < n->n_next; i++) {
            if (!out[i]) continue;
            char *name = strdup(c->name);
            gf_node *e = name ? gf__ag_node_new(name, delayed_error, n->n_next + n->n_outputs, 1)
                              : NULL;
            if (!e) { /* the engine releases out */
                free(name);
                return name ? gf__status()
                            : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", c->name);
            }
            e->ext = name;
            e->release_ctx = free_name;
            for (int k = 0; k < n->n_next; k++) {
                e->next[k] = n->next[k];
                gf__ag_node_retain(e->next[k].node);
            }
            for (int k = 0; k < n->n_outputs; k++)
                e->next[n->n_next + k] = gf__ag_gradient_edge(grads[k]);
            e->outputs[0] = (gf_output_meta){.rank = out[i]->rank, .dtype = out[i]->dtype,
                                             .device = out[i]->storage->device};
            memcpy(e->outputs[0].sizes, out[i]->sizes, sizeof out[i]->sizes);
            gf__ag_set_history(out[i], e, 0);
            gf__ag_node_release(e);
        }
    }
    return GF_OK;
}

/* ------------------------------------------------------------ apply */
static bool contains(gf_tensor *const *arr, int n, const gf_tensor *t) {
    for (int i = 0; i < n; i++)
        if (arr[i] == t) return true;
    return false;
}

gf_status gf_function_apply(const gf_function_def *def, gf_tensor *const *inputs, int n_inputs,
                            gf_tensor **outputs, int n_outputs) {
    if (!def || !def->forward || !def->backward || !outputs || n_outputs < 1 || n_inputs < 0 ||
        (n_inputs && !inputs))
        return gf__error(GF_ERR_INVALID, "gf_function_apply: a definition with forward and "
                         "backward, and at least one output, are required");
    for (int i = 0; i < n_outputs; i++) outputs[i] = NULL;
    gf_function_ctx *c = calloc(1, sizeof *c);
    if (!c) return gf__error(GF_ERR_OUT_OF_MEMORY, "gf_function_apply: out of host memory");
    c->def = *def;
    c->name = strdup(def->name ? def->name : "CustomFunction");
    c->n_inputs = n_inputs;
    c->needs_input_grad = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof(bool));
    c->differentiable = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof(bool));
    if (!c->name || !c->needs_input_grad || !c->differentiable) {
        ctx_free(c);
        return gf__error(GF_ERR_OUT_OF_MEMORY, "gf_function_apply: out of host memory");
    }
    bool record = gf__ag_any_requires_grad((const gf_tensor *const *)inputs, n_inputs);
    for (int i = 0; i < n_inputs; i++) {
        c->needs_input_grad[i] = record && inputs[i] && gf__ag_requires_grad(inputs[i]);
        c->differentiable[i] = inputs[i] && gf__dtype_differentiable(inputs[i]->dtype);
    }

    /* Edges are taken before forward: a dirty input's history changes after. */
    gf_node *n = NULL;
    if (record) {
        n = gf__ag_node_new(c->name, function_backward, n_inputs, n_outputs);
        if (!n) {
            ctx_free(c);
            return gf__status();
        }
        for (int i = 0; i < n_inputs; i++)
            if (inputs[i] && gf__dtype_differentiable(inputs[i]->dtype))
                n->next[i] = gf__ag_gradient_edge(inputs[i]);
    }
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    int scope = gf__scope_suspend();
    c->in_forward = true;
    uint64_t seq = gf__error_seq();
    /* As PyTorch: forward mode is off inside forward (the ops there would
     * otherwise move the inputs' tangents, which the jvp callback computes). */
    uint64_t fw_mask = gf__fw_mask_all();
    gf_status s = def->forward(c, inputs, n_inputs, outputs, n_outputs, def->user);
    gf__fw_mask_pop(fw_mask);
    c->in_forward = false;
    gf__scope_resume(scope);
    gf_grad_mode_set(prev);
    if (s != GF_OK) s = gf__callback_failed(s, seq, "%s: forward", c->name);
    for (int i = 0; i < n_outputs && s == GF_OK; i++)
        if (!outputs[i])
            s = gf__error(GF_ERR_AUTOGRAD, "%s: forward returned GF_OK but left output %d NULL",
                          c->name, i);
    for (int i = 0; i < c->n_dirty && s == GF_OK; i++) {
        if (!contains(inputs, n_inputs, c->dirty[i]))
            s = gf__error(GF_ERR_AUTOGRAD, "%s: gf_ctx_mark_dirty was given a tensor that is not "
                          "an input", c->name);
        else if (!contains(outputs, n_outputs, c->dirty[i]))
            s = gf__error(GF_ERR_AUTOGRAD, "%s: an input marked dirty must also be returned as an "
                          "output (retain it and store it in outputs)", c->name);
        else if (record && (s = gf__ag_check_inplace(c->dirty[i], c->name)) == GF_OK)
            gf__bump_version(c->dirty[i]);
        else if (!record)
            gf__bump_version(c->dirty[i]);
    }
    if (s == GF_OK) s = custom_jvp(c, inputs, n_inputs, outputs, n_outputs);
    if (s != GF_OK) {
        for (int i = 0; i < n_outputs; i++) {
            gf_tensor_release(outputs[i]);
            outputs[i] = NULL;
        }
        gf__ag_node_release(n);
        ctx_free(c);
        return s;
    }
    if (!n) {
        ctx_free(c);
        for (int i = 0; i < n_outputs; i++) gf__ret(outputs[i]);
        return GF_OK;
    }
    n->ext = c;
    n->release_ctx = node_release_ctx;
    c->node = n;
    for (int j = 0; j < n_outputs; j++) {
        gf_tensor *o = outputs[j];
        gf_output_meta *m = &n->outputs[j];
        m->rank = o->rank;
        memcpy(m->sizes, o->sizes, sizeof m->sizes);
        m->dtype = o->dtype;
        m->device = o->storage->device;
        if (!gf__dtype_differentiable(o->dtype) || contains(c->non_diff, c->n_non_diff, o)) continue;
        gf_autograd_meta *om = o->autograd;
        if (om && om->base && contains(c->dirty, c->n_dirty, o)) {
            /* A view written in place: as for the built-in in-place ops, the
             * base's history becomes CopySlices running this node on the
             * view's region (rule 14); the view's own history is regenerated
             * from it. CopySlices passes one gradient, so (as in PyTorch)
             * the view must be the only output. */
            if (n_outputs != 1) {
                s = gf__error(GF_ERR_AUTOGRAD, "%s: a custom function that modifies a view in "
                              "place (input marked dirty with gf_ctx_mark_dirty) must return that "
                              "view as its only output; this one has %d outputs. Return the "
                              "others from a second function, or modify a gf_clone of the view",
                              c->name, n_outputs);
                break;
            }
            int self_input = 0;
            while (inputs[self_input] != o) self_input++;
            if ((s = gf__ag_copy_slices(om->base, o, n, self_input)) != GF_OK) break;
            continue;
        }
        if (contains(inputs, n_inputs, o) && !contains(c->dirty, c->n_dirty, o)) {
            /* An input returned unchanged: hand out a view so its own
             * history stays as it was. */
            gf_tensor *a = gf__ag_alias(o);
            if (!a) {
                s = gf__status();
                break;
            }
            gf_tensor_release(o);
            outputs[j] = o = a;
            om = NULL;
        }
        (void)om;
        gf__ag_set_history(o, n, (uint32_t)j);
    }
    for (int i = 0; i < c->n_to_save && s == GF_OK; i++)
        s = gf__ag_save(n, i, c->to_save[i], contains(outputs, n_outputs, c->to_save[i]));
    for (int i = 0; i < c->n_to_save; i++) gf_tensor_release(c->to_save[i]);
    free(c->to_save);
    c->to_save = NULL;
    c->n_to_save = 0;
    gf__ag_node_release(n); /* the outputs own it now (or nothing does) */
    if (s != GF_OK) {
        for (int i = 0; i < n_outputs; i++) {
            gf_tensor_release(outputs[i]);
            outputs[i] = NULL;
        }
        return s;
    }
    for (int i = 0; i < n_outputs; i++) gf__ret(outputs[i]);
    return GF_OK;
}
