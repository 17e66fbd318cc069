/* SPDX-License-Identifier: BSD-3-Clause */
/* bw_index.c — backward of the indexing ops: index_select, gather,
 * scatter_add, index_add, cat, tril, triu (recorded from ops_index.c).
 *
 * The index ops come in adjoint pairs: index_select <-> index_add and
 * gather <-> scatter_add. Each gradient is the other op of its pair, a public
 * op that records its own history, so higher-order gradients need no extra
 * formula. embedding and stack are composites and record nothing here;
 * one_hot is integer-valued and has no gradient. */
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"

/* Moves r out of the current scope into *slot; false (error set) when r is NULL. */
static bool keep(gf_tensor *r, gf_tensor **slot) {
    *slot = gf_scope_keep(r);
    return r != NULL;
}

/* Zeros of sizes in g's dtype and device (inside a scope). */
static gf_tensor *zeros_as(const gf_tensor *g, const int64_t *sizes, int rank) {
    return gf_zeros(sizes, rank, gf_tensor_dtype(g), gf_tensor_device(g));
}

typedef struct index_ctx {
    int dim;
    int rank; /* of x (index_select, gather) or of src (scatter_add, index_add) */
    int64_t sizes[GF_MAX_RANK];
} index_ctx;
GF_CTX_FITS(index_ctx);

static void set_index_ctx(gf_node *n, int dim, const gf_tensor *t) {
    index_ctx *c = GF_NODE_CTX(n, index_ctx);
    c->dim = dim;
    c->rank = t->rank;
    memcpy(c->sizes, t->sizes, sizeof c->sizes);
}

/* ------------------------------------------------------------ index_select, gather */
/* Edges: x, index. Saved: index. */
static gf_status index_select_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const index_ctx *c = GF_NODE_CTX(n, index_ctx);
    gf_tensor *index = NULL;
    gf_status s = gf__ag_unpack(n, 0, &index);
    if (s != GF_OK) return s;
    gf_scope_begin();
    gf_tensor *z = zeros_as(grads[0], c->sizes, c->rank);
    if (!keep(gf_index_add(z, c->dim, index, grads[0]), &out[0])) s = gf__status();
    gf_scope_end();
    gf_tensor_release(index);
    return s;
}

static gf_status gather_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const index_ctx *c = GF_NODE_CTX(n, index_ctx);
    gf_tensor *index = NULL;
    gf_status s = gf__ag_unpack(n, 0, &index);
    if (s != GF_OK) return s;
    gf_scope_begin();
    gf_tensor *z = zeros_as(grads[0], c->sizes, c->rank);
    if (!keep(gf_scatter_add(z, c->dim, index, grads[0]), &out[0])) s = gf__status();
    gf_scope_end();
    gf_tensor_release(index);
    return s;
}

static gf_status record_select_like(const char *name, gf_backward_fn fn, const gf_tensor *x,
                                    int dim, const gf_tensor *index, gf_tensor *y) {
    const gf_tensor *ins[2] = {x, index};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record(name, fn, ins, 2, outs, 1);
    if (!n) return GF_OK;
    set_index_ctx(n, dim, x);
    return gf__ag_save(n, 0, index, false);
}

gf_status gf__ag_record_index_select(const gf_tensor *x, int dim, const gf_tensor *index,
                                     gf_tensor *y) {
    if (gf__fw_index_select(x, dim, index, y) != GF_OK) return gf__status();
    return record_select_like("IndexSelectBackward", index_select_backward, x, dim, index, y);
}

gf_status gf__ag_record_gather(const gf_tensor *x, int dim, const gf_tensor *index,
                               gf_tensor *y) {
    if (gf__fw_gather(x, dim, index, y) != GF_OK) return gf__status();
    return record_select_like("GatherBackward", gather_backward, x, dim, index, y);
}

/* ------------------------------------------------------------ scatter_add, index_add */
/* r (index's shape) placed at the start of zeros of sizes: src may be larger
 * than index, and its elements beyond index's shape never reach the result. */
static gf_tensor *pad_to(gf_tensor *r, const int64_t *sizes, int rank) {
    for (int d = 0; r && d < rank; d++) {
        int64_t have = gf_tensor_size(r, d);
        if (have >= sizes[d]) continue;
        int64_t zs[GF_MAX_RANK];
        memcpy(zs, gf_tensor_sizes(r), sizeof(int64_t) * (size_t)rank);
        zs[d] = sizes[d] - have;
        gf_tensor *parts[2] = {r, zeros_as(r, zs, rank)};
        r = gf_cat(parts, 2, d);
    }
    return r;
}

/* Edges: x, index, src. Saved: index (only when src needs a gradient). */
static gf_status scatter_add_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const index_ctx *c = GF_NODE_CTX(n, index_ctx);
    gf_tensor *g = grads[0], *index = NULL;
    bool need_src = n->next[2].node != NULL;
    gf_status s = need_src ? gf__ag_unpack(n, 0, &index) : GF_OK;
    if (s != GF_OK) return s;
    if (n->next[0].node) out[0] = gf_tensor_retain(g);
    if (need_src) {
        gf_scope_begin();
        gf_tensor *r = pad_to(gf_gather(g, c->dim, index), c->sizes, c->rank);
        if (!keep(r, &out[2])) s = gf__status();
        gf_scope_end();
    }
    gf_tensor_release(index);
    return s;
}

static gf_status index_add_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const index_ctx *c = GF_NODE_CTX(n, index_ctx);
    gf_tensor *g = grads[0], *index = NULL;
    bool need_src = n->next[2].node != NULL;
    gf_status s = need_src ? gf__ag_unpack(n, 0, &index) : GF_OK;
    if (s != GF_OK) return s;
    if (n->next[0].node) out[0] = gf_tensor_retain(g);
    if (need_src) {
        gf_scope_begin();
        gf_tensor *r = gf_index_select(g, c->dim, index);
        /* A 0-dim x takes a [1] src (and the other way round). */
        if (r && gf_tensor_rank(r) != c->rank) r = gf_reshape(r, c->sizes, c->rank);
        if (!keep(r, &out[2])) s = gf__status();
        gf_scope_end();
    }
    gf_tensor_release(index);
    return s;
}

static gf_status record_add_like(const char *name, gf_backward_fn fn, const gf_tensor *x,
                                 int dim, const gf_tensor *index, const gf_tensor *src,
                                 gf_tensor *y) {
    const gf_tensor *ins[3] = {x, index, src};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record(name, fn, ins, 3, outs, 1);
    if (!n) return GF_OK;
    set_index_ctx(n, dim, src);
    return n->next[2].node ? gf__ag_save(n, 0, index, false) : GF_OK;
}

gf_status gf__ag_record_scatter_add(const gf_tensor *x, int dim, const gf_tensor *index,
                                    const gf_tensor *src, gf_tensor *y) {
    if (gf__fw_scatter_add(x, dim, index, src, y) != GF_OK) return gf__status();
    return record_add_like("ScatterAddBackward", scatter_add_backward, x, dim, index, src, y);
}

gf_status gf__ag_record_index_add(const gf_tensor *x, int dim, const gf_tensor *index,
                                  const gf_tensor *src, gf_tensor *y) {
    if (gf__fw_index_add(x, dim, index, src, y) != GF_OK) return gf__status();
    return record_add_like("IndexAddBackward", index_add_backward, x, dim, index, src, y);
}

/* ------------------------------------------------------------ cat */
/* Where each input landed in the output; n->ext holds one per input. */
typedef struct cat_part {
    int64_t start, len;
    gf_dtype dtype;
    bool skipped; /* a legacy [0] input that cat ignored */
} cat_part;

typedef struct cat_ctx {
    int dim;
} cat_ctx;
GF_CTX_FITS(cat_ctx);

static void cat_release(gf_node *n) {
    free(n->ext);
    n->ext = NULL;
}

/* Edges: one per input. Each gets the narrow of g at its place (a view),
 * cast back to its own dtype when cat promoted it. */
static gf_status cat_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const cat_ctx *c = GF_NODE_CTX(n, cat_ctx);
    const cat_part *parts = n->ext;
    gf_status s = GF_OK;
    gf_scope_begin();
    for (int i = 0; i < n->n_next && s == GF_OK; i++) {
        const cat_part *p = &parts[i];
        if (!n->next[i].node) continue;
        int64_t empty = 0;
        gf_tensor *r = p->skipped ? zeros_as(grads[0], &empty, 1)
                                  : gf_narrow(grads[0], c->dim, p->start, p->len);
        if (r && gf_tensor_dtype(r) != p->dtype) r = gf__ret(gf__grad_to_dtype(r, p->dtype));
        if (!keep(r, &out[i])) s = gf__status();
    }
    gf_scope_end();
    return s;
}

gf_status gf__ag_record_cat(gf_tensor *const *tensors, int count, int dim, gf_tensor *y) {
    if (gf__fw_cat(tensors, count, dim, y) != GF_OK) return gf__status();
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record("CatBackward", cat_backward, (const gf_tensor *const *)tensors,
                               count, outs, 1);
    if (!n) return GF_OK;
    cat_part *parts = calloc((size_t)count, sizeof *parts);
    if (!parts) return gf__error(GF_ERR_OUT_OF_MEMORY, "cat: out of host memory for its backward");
    n->ext = parts;
    n->release_ctx = cat_release;
    GF_NODE_CTX(n, cat_ctx)->dim = dim;
    /* The same rule as cat: 1-D [0] inputs are skipped unless all are. */
    const gf_tensor *ref = NULL;
    for (int i = 0; i < count && !ref; i++)
        if (!(tensors[i]->rank == 1 && tensors[i]->sizes[0] == 0)) ref = tensors[i];
    int64_t start = 0;
    for (int i = 0; i < count; i++) {
        const gf_tensor *t = tensors[i];
        parts[i].dtype = t->dtype;
        parts[i].skipped = ref && t->rank == 1 && t->sizes[0] == 0;
        if (parts[i].skipped) continue;
        parts[i].start = start;
        parts[i].len = t->sizes[dim];
        start += parts[i].len;
    }
    return GF_OK;
}

/* ------------------------------------------------------------ tril, triu */
typedef struct tri_ctx {
    bool upper;
    int64_t diagonal;
} tri_ctx;
GF_CTX_FITS(tri_ctx);

static gf_status tri_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const tri_ctx *c = GF_NODE_CTX(n, tri_ctx);
    gf_tensor *r = c->upper ? gf_triu(grads[0], c->diagonal) : gf_tril(grads[0], c->diagonal);
    if (!r) return gf__status();
    out[0] = gf_scope_keep(r);
    return GF_OK;
}

gf_status gf__ag_record_tri(bool upper, const gf_tensor *x, int64_t diagonal, gf_tensor *y) {
    if (gf__fw_tri(upper, x, diagonal, y) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {x};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record(upper ? "TriuBackward" : "TrilBackward", tri_backward, ins, 1,
                               outs, 1);
    if (n) *GF_NODE_CTX(n, tri_ctx) = (tri_ctx){.upper = upper, .diagonal = diagonal};
    return GF_OK;
}
