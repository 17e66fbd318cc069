/* SPDX-License-Identifier: BSD-3-Clause */
/* ag_internal.h — the autograd graph as the core's files see it.
 *
 * Ownership: a tensor's autograd meta holds a reference to its grad_fn node;
 * a node holds references to the nodes its edges lead to, and an accumulator
 * node refers to its leaf weakly (a leaf's .grad may hold the graph that
 * reaches it). So a graph lives exactly as long as an output refers to it. A node saves its own outputs without a reference back
 * to itself (no cycle). Nodes are freed iteratively (no recursion).
 *
 * Op wrappers record history like this:
 *     gf_node *n = gf__ag_record("ExpBackward", exp_backward, ins, 1, outs, 1);
 *     if (n && gf__ag_save(n, 0, y, true) != GF_OK) { ... fail ... }
 * gf__ag_record returns NULL (and records nothing) unless grad mode is on and
 * an input requires grad. Edges follow the order of the op's tensor
 * arguments; the backward function writes one gradient (or NULL) per edge. */
#ifndef GRAFT_AG_INTERNAL_H
#define GRAFT_AG_INTERNAL_H

#include "ag_record.h"
#include "internal.h"
#include "complex/complex_internal.h"
#include "fwad/fw_record.h"

typedef struct gf_node gf_node;

/* grad_outputs: n_outputs gradients flowing in (never NULL: missing ones are
 * materialised as zeros); grad_inputs: n_next slots to fill with new
 * references or NULL. Must not release grad_outputs. */
typedef gf_status (*gf_backward_fn)(gf_node *node, gf_tensor *const *grad_outputs,
                                    gf_tensor **grad_inputs);

typedef struct gf_edge {
    gf_node *node; /* NULL: this input needs no gradient */
    uint32_t input_nr;
} gf_edge;

typedef struct gf_saved {
    gf_tensor *data;      /* detached (no history) tensor sharing storage, or the leaf */
    gf_node *grad_fn;     /* history of a saved non-leaf input (reference) */
    uint32_t output_nr;
    uint64_t version;     /* storage version at save time */
    bool defined;
    bool is_output;       /* an output of the saving node itself */
    bool requires_grad;
    const gf_saved_tensor_hooks *hooks; /* set when saved through hooks */
    struct gf_fw_entry *fw; /* its tangents at save time (values without history) */
    gf_saved_tensor_hooks hooks_copy;
    void *packed;
} gf_saved;

typedef struct gf_output_meta {
    int rank;
    int64_t sizes[GF_MAX_RANK];
    gf_dtype dtype;
    gf_device *device;
} gf_output_meta;

typedef struct gf_hook gf_hook;

#define GF_NODE_CTX_BYTES 384

struct gf_node {
    atomic_long refcount;
    const char *name;
    uint64_t seq;
    gf_backward_fn apply;
    void (*release_ctx)(gf_node *n); /* frees what ctx/ext own; may be NULL */
    int n_next;
    gf_edge *next;
    int n_outputs;
    gf_output_meta *outputs;
    int n_saved;
    gf_saved *saved;
    bool saved_released; /* saved tensors were freed after a run */
    bool ever_saved;
    pthread_mutex_t lock; /* one run at a time; saved-tensor release */
    gf_hook *hooks;       /* tensor pre-hooks, node pre/post hooks, retain_grad */
    /* Accumulator nodes: their leaf, weak. The leaf's .grad may carry
     * history that reaches this node (backward with create_graph, as
     * PyTorch warns), so a strong reference would be a cycle: leaf, .grad,
     * its graph, this node, the leaf. The leaf's death clears it under the
     * accumulator lock; gf__ag_accumulator_leaf takes a reference to run. */
    gf_tensor *leaf;
    bool accumulates; /* an accumulator node (AccumulateGrad) */
    char *anomaly_trace;  /* where the node was created, in anomaly mode */
    void *ext;            /* op-specific extra data (freed by release_ctx) */
    gf_node *dying_next;  /* release list (node.c) */
    gf_node *wrapped;     /* CopySlices: the in-place op's node it runs (reference) */
    _Alignas(16) unsigned char ctx[GF_NODE_CTX_BYTES]; /* op parameters */
};

/* A view's link to its base (PyTorch's view metadata). */
typedef enum gf_view_creation {
    GF_VIEW_DEFAULT = 0,
    GF_VIEW_NO_GRAD = 1,      /* created in no-grad mode from a base requiring grad */
    GF_VIEW_INFERENCE = 2,
    GF_VIEW_MULTI_OUTPUT = 3  /* one of several views returned by split/chunk */
} gf_view_creation;

struct gf_autograd_meta {
    bool requires_grad;
    bool retains_grad;
    bool is_inference;
    gf_tensor *grad;        /* reference */
    gf_node *grad_fn;       /* reference */
    uint32_t output_nr;
    gf_node *accumulator;   /* weak: the leaf's accumulator node, if alive */
    gf_tensor *base;        /* views: the root base (reference) */
    gf_view_creation view_creation;
    uint64_t attr_version;  /* views: version when grad_fn was last set */
    gf_hook *retain_hook;   /* the retain_grad hook, owned by grad_fn */
    gf_hook *leaf_hooks;    /* tensor hooks of a leaf (non-leaves: on grad_fn) */
    gf_hook *leaf_node_hooks; /* node pre/post hooks of a leaf's accumulator: kept
                                 here, since the accumulator lives only while a
                                 graph refers to it */
    gf_hook *post_acc_hooks;
    struct gf_fw_entry *fw; /* forward-mode tangents, one per dual level (fwad/) */
};

typedef struct gf_autograd_meta gf_autograd_meta;

/* ---- modes (grad_mode.c) */
bool gf__ag_grad_enabled(void);
bool gf__ag_inference_mode(void);
bool gf__ag_anomaly(void);

/* ---- meta (meta.c) */
gf_autograd_meta *gf__ag_meta(gf_tensor *t); /* creates on demand; NULL on OOM */
void gf__ag_meta_free(gf_tensor *t);         /* from gf_tensor_release */
bool gf__ag_requires_grad(const gf_tensor *t);
/* The edge the gradient of t flows along: its grad_fn, or its leaf's
 * accumulator (created on demand), or {NULL} when t needs no gradient. */
gf_edge gf__ag_gradient_edge(gf_tensor *t);
/* Makes t an output of node n at output_nr (t requires grad afterwards). */
void gf__ag_set_history(gf_tensor *t, gf_node *n, uint32_t output_nr);
/* A new tensor sharing t's storage and geometry, with no autograd meta. */
gf_tensor *gf__ag_alias(const gf_tensor *t);
/* Called by view ops on each view they create from base. */
gf_status gf__ag_on_view(const gf_tensor *base, gf_tensor *view, gf_view_creation how);
/* Accumulates g into leaf.grad (locked), then runs post-accumulate hooks. */
gf_status gf__ag_accumulate(gf_tensor *leaf, gf_tensor *g, bool create_graph);

/* ---- nodes (node.c) */
gf_node *gf__ag_node_new(const char *name, gf_backward_fn fn, int n_next, int n_outputs);
void gf__ag_node_retain(gf_node *n);
void gf__ag_node_release(gf_node *n); /* iterative */
/* True when grad mode is on and some input requires grad. */
bool gf__ag_any_requires_grad(const gf_tensor *const *inputs, int n);
/* See the top of this file. Float outputs only get history. */
gf_node *gf__ag_record(const char *name, gf_backward_fn fn, const gf_tensor *const *inputs,
                       int n_in, gf_tensor *const *outputs, int n_out);
/* Saves t (may be NULL) in slot i (< n_saved, grown as needed). Fails:
 * AUTOGRAD for an inference tensor outside inference mode. */
gf_status gf__ag_save(gf_node *n, int i, const gf_tensor *t, bool is_output);
/* The saved tensor as a new reference in *out, with its history when the
 * engine runs with create_graph; version-checked. Fails (AUTOGRAD) when the
 * saved values were freed or the tensor was modified in place. *out is NULL
 * for a slot that saved NULL. */
gf_status gf__ag_unpack(gf_node *n, int i, gf_tensor **out);
void gf__ag_release_saved(gf_node *n);
/* The node ctx as a typed pointer. */
#define GF_NODE_CTX(n, type) ((type *)(void *)(n)->ctx)
#define GF_CTX_FITS(type) _Static_assert(sizeof(type) <= GF_NODE_CTX_BYTES, #type " exceeds the node ctx")

/* ---- hooks (hooks.c) */
typedef enum { GF_HOOK_TENSOR, GF_HOOK_RETAIN_GRAD, GF_HOOK_PRE, GF_HOOK_POST } gf_hook_kind;
struct gf_hook {
    gf_hook_handle id;
    gf_hook_kind kind;
    uint32_t output_nr; /* tensor hooks: which output of the node */
    bool removed;
    gf_tensor_hook_fn tensor_fn;
    gf_node_pre_hook_fn pre_fn;
    gf_node_post_hook_fn post_fn;
    gf_post_accumulate_hook_fn post_acc_fn;
    void *user;
    gf_tensor *target; /* retain_grad / post-accumulate: weak tensor */
    gf_hook *next;
};
void gf__ag_hooks_free(gf_hook *h);
/* Runs tensor hooks and retain_grad for output slot i of n (grad replaced in
 * place), node pre-hooks, post-hooks. */
gf_status gf__ag_run_tensor_hooks(gf_node *n, gf_tensor **grads);
gf_status gf__ag_run_pre_hooks(gf_node *n, gf_tensor **grads);
gf_status gf__ag_run_retain_grad(gf_node *n, gf_tensor **grads);
gf_status gf__ag_run_post_hooks(gf_node *n, gf_tensor **grad_inputs, gf_tensor *const *grads);
gf_status gf__ag_run_post_accumulate(gf_tensor *leaf);
/* Tensor hooks for the leaf of an accumulator node (from the leaf's meta). */
gf_status gf__ag_run_leaf_hooks(gf_tensor *leaf, gf_tensor **grad);
/* Moves a tensor's retain_grad hook to its new grad_fn (after set_history). */
void gf__ag_move_retain_hook(gf_tensor *t);
/* Saved-tensor hooks currently in force on this thread (NULL: none). */
const gf_saved_tensor_hooks *gf__ag_saved_hooks_top(void);

/* ---- views (bw_views.c) */
typedef enum gf_view_kind {
    GF_VIEW_KIND_RESHAPE = 0, /* also squeeze, unsqueeze, flatten */
    GF_VIEW_KIND_TRANSPOSE,   /* p: dim0, dim1 */
    GF_VIEW_KIND_PERMUTE,     /* p: the dims */
    GF_VIEW_KIND_EXPAND,
    GF_VIEW_KIND_SLICE,       /* p: dim, start, end, step (normalised) */
    GF_VIEW_KIND_SELECT,      /* p: dim, index (normalised) */
    GF_VIEW_KIND_DIAGONAL     /* p: offset, dim1, dim2 */
} gf_view_kind;
/* Records out = view(in) (is_view: out shares in's storage; a reshape that
 * copied is not a view). */
gf_status gf__ag_record_view(const gf_tensor *in, gf_tensor *out, gf_view_kind kind,
                             const int64_t *params, int n_params, bool is_view);
/* Backward of a view regenerated after its base was modified in place: the
 * base's gradient restricted to the view's region (meta.c asks). */
gf_node *gf__ag_view_regen_node(gf_tensor *view, gf_tensor *base);
/* A leaf's gradient accumulator node n is going away (node.c tells meta.c). */
void gf__ag_accumulator_dying(gf_node *n);
/* Accumulator n's leaf, a new reference; NULL when the leaf is gone (no one
 * can read its gradient any more: the engine skips the node). */
gf_tensor *gf__ag_accumulator_leaf(gf_node *n);
/* base's new history after op (a node whose output was written into view, a
 * view of base) ran in place. */
gf_status gf__ag_copy_slices(gf_tensor *base, gf_tensor *view, gf_node *op, int self_input);
/* The history of an output that node n saved, when it is unpacked with
 * create_graph (a new reference; NULL on failure): n itself, except while
 * a CopySlices node runs n (an in-place op on a view), where n's output is
 * the view: then the view's region of the base's history, that CopySlices,
 * as PyTorch saves the view with its rebased history. So a double backward
 * reaches n only through its CopySlices, never a second time on its own. */
gf_node *gf__ag_saved_output_history(gf_node *n, uint32_t *output_nr);

/* ---- in-place (inplace.c) */
/* Where node numbering stands: an in-place op takes a mark before it
 * computes its value out of place, so that its commit knows which nodes
 * that computation recorded. */
uint64_t gf__ag_seq_mark(void);
/* Before self is overwritten with result: every node recorded since the
 * mark `since` that result's history reaches, and that saved self or
 * another view of self's storage (aliasing it), keeps a copy of that old
 * value instead. Saves through hooks and saved outputs are left alone. */
gf_status gf__ag_save_originals(const gf_tensor *result, const gf_tensor *self, uint64_t since);
/* The storage an in-place op of this thread is about to overwrite while it
 * computes its value out of place (NULL outside one): the commit will move
 * the recorded node's history onto self, so a save through hooks of self's
 * old value packs a copy without history (PyTorch's original_self), never
 * self itself, which would then hold the very node that holds it. Returns
 * the previous target, to be given back to gf__ag_inplace_target_set. */
const gf_storage *gf__ag_inplace_target_set(const gf_storage *target);
bool gf__ag_is_inplace_target(const gf_tensor *t);
/* Checks that self may be written in place by op (rules 10, 13, 15). */
gf_status gf__ag_check_inplace(gf_tensor *self, const char *op);
/* self was overwritten with the value of result (same shape): bump the
 * version and move result's history onto self (rebasing a view's base).
 * self_input: which edge of result's grad_fn came from self's old value (-1
 * if none); recorded_since: the gf__ag_seq_mark taken before result was
 * computed (gf__ag_save_originals). */
gf_status gf__ag_commit_inplace(gf_tensor *self, gf_tensor *result, int self_input,
                                uint64_t recorded_since, const char *op);
/* Runs an elementwise in-place op defined outside inplace.c: checks self,
 * computes fn(dst, self, ctx) (dst is self when nothing is recorded, so fn
 * may write there, else NULL), refuses a result of a higher kind than self
 * (a float result into an integer self), writes it into self and commits
 * the history. other: the op's other tensor input, or NULL. self_input:
 * the input of the result's node that is self's old value (0 for a single
 * op on self), -1 when that node does not take self directly (a composite
 * ending in an op on an intermediate): a view's base is then rebased
 * through the composite's own edges to self's old history. */
typedef gf_tensor *(*gf__ag_inplace_fn)(gf_tensor *dst, gf_tensor *self, const void *ctx);
gf_status gf__ag_inplace_ew(gf_tensor *self, const char *name, gf__ag_inplace_fn fn,
                            const void *ctx, const gf_tensor *other, int self_input);

/* ---- engine (engine.c) */
gf_status gf__ag_engine_run(const gf_edge *roots, gf_tensor *const *root_grads, int n_roots,
                            bool keep_graph, bool create_graph, const gf_edge *capture,
                            int n_capture, gf_tensor **captured);

/* ---- shared backward helpers (bw_util.c) */
/* g reduced (summed) to sizes, undoing broadcasting. New reference. */
gf_tensor *gf__ag_sum_to(const gf_tensor *g, const int64_t *sizes, int rank);
/* Zeros like the output meta. */
gf_tensor *gf__ag_zeros_meta(const gf_output_meta *m);

/* ---- derivative formulas shared with forward mode (fwad/): the backward
 * formulas with the incoming gradient g, inside the caller's scope. For the
 * elementwise ops g times the elementwise derivative is also the jvp (with
 * g the tangent and the primals not conjugated). */
/* g * f'(x) for unary op (a, b its parameters); reads x or y. */
gf_tensor *gf__ag_unary_derivative(gfp_op op, double a, double b, gf_tensor *g, gf_tensor *x,
                                   gf_tensor *y);
/* g * dy/da into *ga (need_a) and g * dy/db into *gb (need_b), unreduced. */
void gf__ag_binary_derivative(gfp_op op, gf_tensor *g, gf_tensor *a, gf_tensor *b, gf_tensor *y,
                              bool need_a, bool need_b, gf_tensor **ga, gf_tensor **gb);
/* fmod / remainder (in: a, b) or clamp with tensor bounds (in: x, then min
 * and/or max): g times each input's partial derivative into out[i] (for
 * fmod / remainder out[0] is a new reference to g, outside the scope). */
void gf__ag_extra_derivative(bool clamp, bool python, gf_tensor *g, gf_tensor *const *in,
                             bool has_min, bool has_max, gf_tensor **out);
/* dy/dx of a reduction (x's shape, or broadcasting to it), from x and y. */
gf_tensor *gf__ag_reduce_partial(gfp_op op, bool std, uint32_t mask, bool keepdim,
                                 double correction, gf_tensor *x, gf_tensor *y);

#endif
