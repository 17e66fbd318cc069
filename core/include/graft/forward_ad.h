/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/forward_ad.h — forward-mode automatic differentiation and function
 * transforms.
 *
 * Dual tensors follow torch.autograd.forward_ad: open a dual level, attach
 * a tangent to a primal with gf_fwad_make_dual, run graft ops, and read the
 * tangent of a result with gf_fwad_unpack_dual. Every differentiable op
 * carries tangents by its jvp rule (J v, computed with graft's own ops, so a
 * tangent has reverse-mode history of its own: forward-over-reverse works);
 * an op without a rule fails with GF_ERR_AUTOGRAD naming it rather than
 * dropping the tangent. Grad modes do not affect tangents (as in PyTorch).
 * In-place ops update the tangent in place, so a write into a view updates
 * the tangent of its base, as PyTorch does.
 *
 * Levels are process-wide and nest (a tangent may itself carry a tangent at
 * another level); open and close them from one thread, outside any op.
 *
 * The transforms (gf_jvp ... gf_hvp) take the function as a C callback with
 * a user context; they are built on the dual tensors above and on gf_grad. */
#ifndef GRAFT_FORWARD_AD_H
#define GRAFT_FORWARD_AD_H

#include "graft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The innermost open level, for the functions that take a level. */
#define GF_FWAD_LEVEL_CURRENT (-1)
/* How deep levels may nest. */
#define GF_FWAD_MAX_LEVELS 16

/* Opens a new dual level, writing its index (0 for the outermost) to
 * *level. Fails: INVALID when *level is NULL or GF_FWAD_MAX_LEVELS are open. */
GF_API gf_status gf_fwad_level_enter(int *level);
/* Closes level, which must be the innermost open one: every tangent at it
 * is dropped (tensors keep their values). Fails: INVALID naming the level
 * when it is not the innermost open level. */
GF_API gf_status gf_fwad_level_exit(int level);
/* The number of open levels. */
GF_API int gf_fwad_level_count(void);

/* A dual tensor: a view of primal (sharing its storage and its reverse-mode
 * history) whose tangent at level (GF_FWAD_LEVEL_CURRENT: the innermost) is
 * tangent. tangent must have primal's sizes, dtype and device; it is used
 * as is (not copied) when laid out like primal, so in-place ops on the dual
 * update it. Returns a new reference. Fails: AUTOGRAD when no level is open
 * or level is not open; SHAPE / DTYPE / DEVICE when tangent does not match
 * primal; DTYPE for a non-float primal. */
GF_API gf_tensor *gf_fwad_make_dual(const gf_tensor *primal, const gf_tensor *tangent,
                                    int level);
/* Splits dual at level: *primal (may be NULL to skip) becomes a new
 * reference to a view of dual without a tangent at that level, *tangent
 * (may be NULL to skip) a new reference to its tangent, or NULL when it has
 * none. Both are recorded in an open scope like a returned tensor. Fails:
 * INVALID for a NULL dual; AUTOGRAD when level is not open. */
GF_API gf_status gf_fwad_unpack_dual(const gf_tensor *dual, int level, gf_tensor **primal,
                                     gf_tensor **tangent);

/* ---- function transforms */
/* The function transformed: reads n_inputs inputs and writes n_outputs new
 * references (float or complex tensors) computed with graft ops. Returns
 * GF_OK, or a failure after saying why with gf_set_error. */
typedef gf_status (*gf_func_fn)(gf_tensor *const *inputs, int n_inputs, gf_tensor **outputs,
                                int n_outputs, void *user);

/* Jacobian-vector product: outputs f(primals) and jvps J v, with v the
 * tangents (one per primal, each of its primal's shape; NULL = zero), in one
 * forward pass. outputs may be NULL to skip them. Writes new references.
 * Fails: what f fails with; SHAPE / DTYPE / DEVICE for a tangent that does
 * not match its primal; AUTOGRAD for an op without a jvp rule. */
GF_API gf_status gf_jvp(gf_func_fn f, gf_tensor *const *primals, int n_inputs,
                        gf_tensor *const *tangents, int n_outputs, void *user,
                        gf_tensor **outputs, gf_tensor **jvps);
/* Vector-Jacobian product: outputs f(primals) and vjps u^T J, with u the
 * cotangents (one per output, of its shape; NULL allowed for a one-element
 * output, meaning 1), by reverse mode. An input f does not use gets zeros.
 * create_graph makes the vjps differentiable. Writes new references. */
GF_API gf_status gf_vjp(gf_func_fn f, gf_tensor *const *primals, int n_inputs,
                        gf_tensor *const *cotangents, int n_outputs, void *user,
                        bool create_graph, gf_tensor **outputs, gf_tensor **vjps);
/* Jacobians of every output with respect to every input: jac[o * n_inputs
 * + i] (a new reference) has sizes out_o.sizes ++ in_i.sizes, in the
 * output's dtype (torch.func.jacrev / jacfwd). Both compute a block in
 * batched passes where every op on the way can carry a batch of tangents,
 * and one pass per basis vector where one cannot; both give the same
 * Jacobian either way. Every op with a jvp rule batches; what still takes
 * the loop (docs/autograd.md, section 28): a custom function that writes
 * an input in place, gf_fwad_make_dual inside f, a tensor of rank
 * GF_MAX_RANK (no room for the batch dim), a view of a tensor whose batched
 * tangent is not laid out like it. jacfwd runs one forward
 * pass per input with the basis of the input as a batched tangent (vmap
 * over jvp). jacrev runs f once, then for each output one backward pass
 * whose grad_output carries the basis of the output as a batched tangent
 * (vmap over vjp: the tangent of the input gradient is the Jacobian's
 * rows); the loop is one backward per output element. The environment
 * variables GRAFT_JACFWD and GRAFT_JACREV (auto | loop | batched, read at
 * each call) pin the path: batched fails with UNSUPPORTED naming the op
 * that could not batch instead of falling back. Complex inputs or outputs:
 * UNSUPPORTED (as torch.func's jacobians of non-holomorphic maps need a
 * convention; use gf_jvp / gf_vjp). Fails: what f fails with; INVALID for
 * bad arguments; SHAPE when a block's rank would exceed GF_MAX_RANK. */
GF_API gf_status gf_jacrev(gf_func_fn f, gf_tensor *const *inputs, int n_inputs, int n_outputs,
                           void *user, gf_tensor **jac);
GF_API gf_status gf_jacfwd(gf_func_fn f, gf_tensor *const *inputs, int n_inputs, int n_outputs,
                           void *user, gf_tensor **jac);

/* chunk_size of gf_jac_opts: the whole basis in one batch. */
#define GF_JAC_CHUNK_ALL (-1)
/* Options of gf_jacrev_ex / gf_jacfwd_ex (torch.func.jacrev / jacfwd's
 * keyword arguments). Start from GF_JAC_OPTS_DEFAULT (GF_OPTS_INIT,
 * graft/types.h) and change what differs; NULL options are the defaults. */
typedef struct gf_jac_opts {
    uint32_t init;
    /* How many basis vectors one batched pass carries: GF_JAC_CHUNK_ALL
     * (the default) = all of them (one pass per input for jacfwd, per
     * output for jacrev); k >= 1 = at most k, the basis split into
     * ceil(n / k) passes (less memory, more passes; 1 is a loop of batched
     * passes of one). 0 and other negative values: INVALID. The per-element
     * loop, when it runs, ignores it. */
    int64_t chunk_size;
} gf_jac_opts;
#define GF_JAC_OPTS_DEFAULT {.init = GF_OPTS_INIT, .chunk_size = GF_JAC_CHUNK_ALL}
/* gf_jacrev / gf_jacfwd with options (NULL = GF_JAC_OPTS_DEFAULT, the same
 * as gf_jacrev / gf_jacfwd). Fails: as they do; INVALID naming the field
 * for a chunk_size of 0 or below -1, or options not started from
 * GF_JAC_OPTS_DEFAULT. */
GF_API gf_status gf_jacrev_ex(gf_func_fn f, gf_tensor *const *inputs, int n_inputs,
                              int n_outputs, void *user, const gf_jac_opts *opts,
                              gf_tensor **jac);
GF_API gf_status gf_jacfwd_ex(gf_func_fn f, gf_tensor *const *inputs, int n_inputs,
                              int n_outputs, void *user, const gf_jac_opts *opts,
                              gf_tensor **jac);
/* The Hessian of a function with one output of one element (float): hess[i
 * * n_inputs + k] = d2 f / d in_i d in_k, of sizes in_i.sizes ++ in_k.sizes
 * (torch.func.hessian), by forward-over-reverse: one gradient with history,
 * then jacfwd of it. Fails: SHAPE when the output has more than one
 * element. */
GF_API gf_status gf_hessian(gf_func_fn f, gf_tensor *const *inputs, int n_inputs, void *user,
                            gf_tensor **hess);
/* Hessian-vector product H v of a one-element output, by forward-over-
 * reverse (a jvp of the gradient: one forward and one backward pass), with
 * v one tensor per input (NULL = zero). value (may be NULL) receives f's
 * output, hvp[i] the product for input i. New references. */
GF_API gf_status gf_hvp(gf_func_fn f, gf_tensor *const *inputs, int n_inputs,
                        gf_tensor *const *v, void *user, gf_tensor **value, gf_tensor **hvp);

#ifdef __cplusplus
}
#endif

#endif
