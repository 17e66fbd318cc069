/* SPDX-License-Identifier: BSD-3-Clause */
/* bw_views.c — backward of view ops, and the strided-region ops that
 * in-place rebasing uses.
 *
 * A view's backward either maps the gradient back by the inverse view
 * (reshape, transpose, permute), sums it (expand), or scatters it into zeros
 * of the input's shape by replaying the same view on those zeros (slice,
 * select, diagonal). The scatter is itself an op with a backward (the view
 * again), so higher-order gradients flow through views. */
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"
#include "fwad/fw_internal.h"

typedef struct view_ctx {
    gf_view_kind kind;
    int rank; /* input */
    int64_t sizes[GF_MAX_RANK];
    int64_t p[GF_MAX_RANK]; /* kind-specific parameters */
} view_ctx;
GF_CTX_FITS(view_ctx);

/* Applies the recorded view (with its parameters) to t, a tensor of the
 * recorded input's shape. Public ops, so it records when grad is on. */
static gf_tensor *replay(const view_ctx *c, const gf_tensor *t) {
    switch (c->kind) {
    case GF_VIEW_KIND_SLICE: return gf_slice(t, (int)c->p[0], c->p[1], c->p[2], c->p[3]);
    case GF_VIEW_KIND_SELECT: return gf_select(t, (int)c->p[0], c->p[1]);
    case GF_VIEW_KIND_DIAGONAL: return gf_diagonal(t, c->p[0], (int)c->p[1], (int)c->p[2]);
    default: break;
    }
    gf__error(GF_ERR_INVALID, "internal: view kind %d cannot be replayed", (int)c->kind);
    return NULL;
}

/* ---- view scatter: zeros of the input's shape with g written into the view */
static gf_status scatter_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    gf_tensor *r = replay(GF_NODE_CTX(n, view_ctx), grads[0]);
    if (!r) return gf__status();
    out[0] = gf_scope_keep(r);
    return GF_OK;
}

static gf_tensor *view_scatter(const view_ctx *c, const gf_tensor *g);

/* Linear in g: the tangent goes through the same scatter. A batched
 * tangent [B, *g] is scattered into zeros [B, *input], the view's dims
 * shifted past the batch dim. */
static gf_tensor *view_scatter_jvp(const void *p, gf_tensor *const *x, gf_tensor *const *t,
                                   gf_tensor *const *y, int j) {
    (void)x, (void)y, (void)j;
    int64_t batch = gf__fw_rule_batch();
    if (!batch) return gf__ret(view_scatter(p, t[0]));
    const view_ctx *c = p;
    if (c->rank + 1 > GF_MAX_RANK) {
        gf__fw_batch_refuse(-1, "view_scatter");
        return NULL;
    }
    view_ctx b = *c;
    b.sizes[0] = batch;
    memcpy(b.sizes + 1, c->sizes, sizeof(int64_t) * (size_t)c->rank);
    b.rank = c->rank + 1;
    int d0 = c->kind == GF_VIEW_KIND_DIAGONAL ? 1 : 0, d1 = c->kind == GF_VIEW_KIND_DIAGONAL ? 2 : 0;
    for (int k = d0; k <= d1; k++) b.p[k] = (c->p[k] < 0 ? c->p[k] + c->rank : c->p[k]) + 1;
    return gf__ret(view_scatter(&b, t[0]));
}

static gf_tensor *view_scatter(const view_ctx *c, const gf_tensor *g) {
    gf_tensor *z = gf__empty(c->sizes, c->rank, g->dtype, g->storage->device);
    if (!z || gf__fill(z, 0.0) != GF_OK) {
        gf_tensor_release(z);
        return NULL;
    }
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    int saved = gf__scope_suspend();
    gf_tensor *v = replay(c, z);
    gf__scope_resume(saved);
    gf_grad_mode_set(prev);
    gf_status s = v ? gf__copy_into(v, g) : gf__status();
    gf_tensor_release(v);
    if (s != GF_OK) {
        gf_tensor_release(z);
        return NULL;
    }
    const gf_tensor *ins[1] = {g};
    gf_tensor *outs[1] = {z};
    if (gf__fw_apply_batched("view_scatter", view_scatter_jvp, c, ins, 1, outs, 1, false) !=
        GF_OK) {
        gf_tensor_release(z);
        return NULL;
    }
    gf_node *n = gf__ag_record("ViewScatterBackward", scatter_backward, ins, 1, outs, 1);
    if (n) *GF_NODE_CTX(n, view_ctx) = *c;
    return z;
}

/* ---- the backward of a view op */
static gf_status view_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const view_ctx *c = GF_NODE_CTX(n, view_ctx);
    gf_tensor *g = grads[0], *r = NULL;
    switch (c->kind) {
    case GF_VIEW_KIND_RESHAPE: r = gf_reshape(g, c->sizes, c->rank); break;
    case GF_VIEW_KIND_TRANSPOSE: r = gf_transpose(g, (int)c->p[0], (int)c->p[1]); break;
    case GF_VIEW_KIND_PERMUTE: {
        int inv[GF_MAX_RANK];
        for (int i = 0; i < c->rank; i++) inv[c->p[i]] = i;
        r = gf_permute(g, inv, c->rank);
        break;
    }
    case GF_VIEW_KIND_EXPAND: r = gf__ag_sum_to(g, c->sizes, c->rank); break;
    default: r = view_scatter(c, g); break;
    }
    if (!r) return gf__status();
    out[0] = gf_scope_keep(r);
    return GF_OK;
}

static const char *view_name(gf_view_kind k) {
    switch (k) {
    case GF_VIEW_KIND_RESHAPE: return "ViewBackward";
    case GF_VIEW_KIND_TRANSPOSE: return "TransposeBackward";
    case GF_VIEW_KIND_PERMUTE: return "PermuteBackward";
    case GF_VIEW_KIND_EXPAND: return "ExpandBackward";
    case GF_VIEW_KIND_SLICE: return "SliceBackward";
    case GF_VIEW_KIND_SELECT: return "SelectBackward";
    case GF_VIEW_KIND_DIAGONAL: return "DiagonalBackward";
    }
    return "ViewBackward";
}

gf_status gf__ag_record_view(const gf_tensor *in, gf_tensor *out, gf_view_kind kind,
                             const int64_t *params, int n_params, bool is_view) {
    if (is_view && gf__ag_on_view(in, out, GF_VIEW_DEFAULT) != GF_OK) return gf__status();
    if (gf__fw_view(in, out, (int)kind, params, n_params, is_view) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {in};
    gf_tensor *outs[1] = {out};
    gf_node *n = gf__ag_record(view_name(kind), view_backward, ins, 1, outs, 1);
    if (!n) return GF_OK;
    view_ctx *c = GF_NODE_CTX(n, view_ctx);
    c->kind = kind;
    c->rank = in->rank;
    memcpy(c->sizes, in->sizes, sizeof c->sizes);
    for (int i = 0; i < n_params && i < GF_MAX_RANK; i++) c->p[i] = params[i];
    return GF_OK;
}

/* ------------------------------------------------------------ strided regions */
/* Geometry of a tensor over its storage, in elements. */
typedef struct geom {
    int rank;
    int64_t sizes[GF_MAX_RANK], strides[GF_MAX_RANK], offset;
} geom;

typedef struct region_ctx {
    geom g;
    int64_t numel; /* the flat storage-shaped tensor's length */
} region_ctx;
GF_CTX_FITS(region_ctx);

static geom geom_of(const gf_tensor *t) {
    geom g = {.rank = t->rank, .offset = t->offset};
    memcpy(g.sizes, t->sizes, sizeof g.sizes);
    memcpy(g.strides, t->strides, sizeof g.strides);
    return g;
}

static gf_tensor *region_view(const gf_tensor *flat, const region_ctx *c);
static gf_tensor *region_scatter(const gf_tensor *g, const region_ctx *c);

/* The region of a batch of B flat tensors [B, numel] (laid out as one
 * flat tensor of B * numel): c's region with a leading dim of stride numel.
 * False when the rank would pass GF_MAX_RANK (the level is refused). */
static bool region_batched(const region_ctx *c, int64_t batch, region_ctx *b, const char *op) {
    if (c->g.rank + 1 > GF_MAX_RANK) {
        gf__fw_batch_refuse(-1, op);
        return false;
    }
    *b = *c;
    b->g.rank = c->g.rank + 1;
    b->g.sizes[0] = batch;
    b->g.strides[0] = c->numel;
    memcpy(b->g.sizes + 1, c->g.sizes, sizeof(int64_t) * (size_t)c->g.rank);
    memcpy(b->g.strides + 1, c->g.strides, sizeof(int64_t) * (size_t)c->g.rank);
    b->numel = batch * c->numel;
    return true;
}

/* Both region ops are linear: a tangent goes through the same op (a
 * batched one [B, ...] through the op on the batched region). */
static gf_tensor *region_view_jvp(const void *p, gf_tensor *const *x, gf_tensor *const *t,
                                  gf_tensor *const *y, int j) {
    (void)x, (void)y, (void)j;
    int64_t batch = gf__fw_rule_batch();
    if (batch) {
        region_ctx b;
        int64_t n = batch * ((const region_ctx *)p)->numel;
        if (!region_batched(p, batch, &b, "as_strided")) return NULL;
        gf_tensor *flat = gf_reshape(gf_contiguous(t[0]), &n, 1);
        return flat ? gf__ret(region_view(flat, &b)) : NULL;
    }
    gf_tensor *flat = gf_contiguous(t[0]);
    return flat ? gf__ret(region_view(flat, p)) : NULL;
}

static gf_tensor *region_scatter_jvp(const void *p, gf_tensor *const *x, gf_tensor *const *t,
                                     gf_tensor *const *y, int j) {
    (void)x, (void)y, (void)j;
    int64_t batch = gf__fw_rule_batch();
    if (batch) {
        region_ctx b;
        if (!region_batched(p, batch, &b, "as_strided_scatter")) return NULL;
        int64_t s[2] = {batch, ((const region_ctx *)p)->numel};
        return gf_reshape(gf__ret(region_scatter(t[0], &b)), s, 2);
    }
    return gf__ret(region_scatter(t[0], p));
}

static gf_status region_view_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    gf_tensor *r = region_scatter(grads[0], GF_NODE_CTX(n, region_ctx));
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

static gf_status region_scatter_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    gf_tensor *r = region_view(grads[0], GF_NODE_CTX(n, region_ctx));
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

/* flat: a contiguous 1-D tensor of c->numel elements; returns the region
 * c->g of it as a contiguous tensor (a copy, so later writes cannot alias). */
static gf_tensor *region_view(const gf_tensor *flat, const region_ctx *c) {
    gf_tensor *v = gf__view(flat, c->g.sizes, c->g.strides, c->g.rank, flat->offset + c->g.offset);
    gf_tensor *r = v ? gf__contig(v) : NULL;
    if (r == v && r) { /* already contiguous: still a distinct tensor */
        gf_tensor_release(r);
        r = gf__empty(v->sizes, v->rank, v->dtype, v->storage->device);
        if (r && gf__copy_into(r, v) != GF_OK) {
            gf_tensor_release(r);
            r = NULL;
        }
    }
    gf_tensor_release(v);
    if (!r) return NULL;
    const gf_tensor *ins[1] = {flat};
    gf_tensor *outs[1] = {r};
    if (gf__fw_apply_batched("as_strided", region_view_jvp, c, ins, 1, outs, 1, false) != GF_OK) {
        gf_tensor_release(r);
        return NULL;
    }
    gf_node *n = gf__ag_record("AsStridedBackward", region_view_backward, ins, 1, outs, 1);
    if (n) *GF_NODE_CTX(n, region_ctx) = *c;
    return r;
}

/* Zeros of c->numel elements with g written at region c->g. */
static gf_tensor *region_scatter(const gf_tensor *g, const region_ctx *c) {
    int64_t n1 = c->numel;
    gf_tensor *z = gf__empty(&n1, 1, g->dtype, g->storage->device);
    if (!z || gf__fill(z, 0.0) != GF_OK) {
        gf_tensor_release(z);
        return NULL;
    }
    gf_tensor *v = gf__view(z, c->g.sizes, c->g.strides, c->g.rank, c->g.offset);
    gf_status s = v ? gf__copy_into(v, g) : gf__status();
    gf_tensor_release(v);
    if (s != GF_OK) {
        gf_tensor_release(z);
        return NULL;
    }
    const gf_tensor *ins[1] = {g};
    gf_tensor *outs[1] = {z};
    if (gf__fw_apply_batched("as_strided_scatter", region_scatter_jvp, c, ins, 1, outs, 1,
                             false) != GF_OK) {
        gf_tensor_release(z);
        return NULL;
    }
    gf_node *n = gf__ag_record("AsStridedScatterBackward", region_scatter_backward, ins, 1, outs, 1);
    if (n) *GF_NODE_CTX(n, region_ctx) = *c;
    return z;
}

static int64_t storage_numel(const gf_tensor *t) {
    return (int64_t)(t->storage->nbytes / gf_dtype_size(t->dtype));
}

/* ---- a view whose base was modified in place: grad to base = the view's
 * gradient placed at the view's region of the base. */
typedef struct regen_ctx {
    region_ctx view, base;
} regen_ctx;
GF_CTX_FITS(regen_ctx);

static gf_status regen_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const regen_ctx *c = GF_NODE_CTX(n, regen_ctx);
    gf_tensor *flat = region_scatter(grads[0], &c->view);
    gf_tensor *r = flat ? region_view(flat, &c->base) : NULL;
    gf_tensor_release(flat);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

/* A view's history: its region of the base, whose gradient flows along
 * base_edge (a reference the node takes over). */
static gf_node *regen_node(const region_ctx *view, const region_ctx *base, gf_edge base_edge,
                           const gf_output_meta *meta) {
    gf_node *n = gf__ag_node_new("AsStridedBackward", regen_backward, 1, 1);
    if (!n) {
        gf__ag_node_release(base_edge.node);
        return NULL;
    }
    n->next[0] = base_edge;
    n->outputs[0] = *meta;
    regen_ctx *c = GF_NODE_CTX(n, regen_ctx);
    c->view = *view;
    c->base = *base;
    return n;
}

gf_node *gf__ag_view_regen_node(gf_tensor *view, gf_tensor *base) {
    gf_output_meta m = {.rank = view->rank, .dtype = view->dtype, .device = view->storage->device};
    memcpy(m.sizes, view->sizes, sizeof view->sizes);
    region_ctx v = {geom_of(view), storage_numel(view)}, b = {geom_of(base), storage_numel(base)};
    return regen_node(&v, &b, gf__ag_gradient_edge(base), &m);
}

/* ---- CopySlices: the base's history after an in-place op on its view.
 * Gradient for the base = its incoming gradient, with the view's region
 * replaced by what the in-place op's backward gives for the view's old value;
 * the op's other inputs get their gradients as usual. */
typedef struct copyslices_ctx {
    region_ctx view, base;
    int self_input; /* which input of the wrapped node was the view's old value, -1: none */
} copyslices_ctx;
GF_CTX_FITS(copyslices_ctx);

/* While a CopySlices node runs the node of its in-place op: both (a stack
 * across nested runs, kept on the C stack of copyslices_backward). */
typedef struct cs_running {
    const gf_node *op;
    gf_node *cs;
    const struct cs_running *outer;
} cs_running;
static _Thread_local const cs_running *tl_cs_running;

gf_node *gf__ag_saved_output_history(gf_node *n, uint32_t *output_nr) {
    const cs_running *r = tl_cs_running;
    while (r && r->op != n) r = r->outer;
    if (!r) {
        gf__ag_node_retain(n);
        return n;
    }
    /* The op wrote into a view: its output is the view, whose history is
     * the view's region of the base's new history, the CopySlices. */
    const copyslices_ctx *c = GF_NODE_CTX(r->cs, copyslices_ctx);
    gf__ag_node_retain(r->cs);
    *output_nr = 0;
    return regen_node(&c->view, &c->base, (gf_edge){r->cs, 0}, &n->outputs[0]);
}

static gf_status copyslices_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const copyslices_ctx *c = GF_NODE_CTX(n, copyslices_ctx);
    gf_node *op = n->wrapped;
    gf_status s = GF_OK;
    gf_tensor **res = calloc((size_t)op->n_next + 1, sizeof *res);
    if (!res) return gf__error(GF_ERR_OUT_OF_MEMORY, "CopySlices: out of host memory");
    gf_scope_begin();
    gf_tensor *gs = region_scatter(grads[0], &c->base); /* over the storage */
    gf_tensor *gv = gs ? region_view(gs, &c->view) : NULL;
    if (gs) gf__ret(gs);
    if (gv) gf__ret(gv);
    if (!gv) s = gf__status();
    if (s == GF_OK) {
        gf_tensor *ins[1] = {gv};
        cs_running running = {op, n, tl_cs_running};
        tl_cs_running = &running;
        /* As the engine runs a node: no scope records what it returns (a
         * custom function's backward hands over plain references). */
        int sc = gf__scope_suspend();
        s = op->apply(op, ins, res);
        gf__scope_resume(sc);
        tl_cs_running = running.outer;
    }
    gf_tensor *result = NULL;
    if (s == GF_OK) {
        /* gs - scatter(view(gs)) + scatter(grad of the old view value) */
        gf_tensor *old = gf__ret(region_scatter(gv, &c->view));
        gf_tensor *cut = old ? gf_sub(gs, old) : NULL;
        gf_tensor *put = (c->self_input >= 0 && res[c->self_input])
                             ? gf__ret(region_scatter(res[c->self_input], &c->view))
                             : NULL;
        gf_tensor *full = (cut && put) ? gf_add(cut, put) : cut;
        result = full ? region_view(full, &c->base) : NULL;
        if (!result) s = gf__status();
    }
    gf_scope_end();
    if (s == GF_OK) {
        out[0] = result;
        for (int i = 0, k = 1; i < op->n_next; i++) {
            if (i == c->self_input) {
                gf_tensor_release(res[i]);
                continue;
            }
            out[k++] = res[i];
        }
    } else {
        for (int i = 0; i < op->n_next; i++) gf_tensor_release(res[i]);
    }
    free(res);
    return s;
}

gf_status gf__ag_copy_slices(gf_tensor *base, gf_tensor *view, gf_node *op, int self_input) {
    if (self_input >= op->n_next)
        return gf__error(GF_ERR_AUTOGRAD, "CopySlices: input %d of %s does not exist (it has %d)",
                         self_input, op->name, op->n_next);
    int n_other = op->n_next - (self_input >= 0 ? 1 : 0);
    gf_node *n = gf__ag_node_new("CopySlices", copyslices_backward, 1 + n_other, 1);
    if (!n) return gf__status();
    n->next[0] = gf__ag_gradient_edge(base);
    for (int i = 0, k = 1; i < op->n_next; i++) {
        if (i == self_input) continue;
        n->next[k] = op->next[i];
        gf__ag_node_retain(n->next[k].node);
        k++;
    }
    n->outputs[0] = (gf_output_meta){.rank = base->rank, .dtype = base->dtype,
                                     .device = base->storage->device};
    memcpy(n->outputs[0].sizes, base->sizes, sizeof base->sizes);
    gf__ag_node_retain(op);
    n->wrapped = op; /* saves nothing itself: whether it may run again is op's state */
    copyslices_ctx *c = GF_NODE_CTX(n, copyslices_ctx);
    c->view = (region_ctx){geom_of(view), storage_numel(view)};
    c->base = (region_ctx){geom_of(base), storage_numel(base)};
    c->self_input = self_input;
    gf__ag_set_history(base, n, 0);
    gf__ag_node_release(n);
    return GF_OK;
}
