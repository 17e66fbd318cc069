/* SPDX-License-Identifier: BSD-3-Clause */
/* bw_copy.c — backward of copies: clone, contiguous, dtype and device moves.
 * The gradient flows back unchanged, converted to the input's dtype and
 * moved to its device. And the slices of a tensor copied out along dim 0 as
 * one node (gf__unbind_copies): its backward stacks their gradients. */
#include "ag_internal.h"

typedef struct copy_ctx {
    gf_dtype dtype;
    gf_device *device;
} copy_ctx;
GF_CTX_FITS(copy_ctx);

static gf_status copy_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const copy_ctx *c = GF_NODE_CTX(n, copy_ctx);
    gf_tensor *g = gf_tensor_retain(grads[0]);
    if (g->dtype != c->dtype) {
        gf_tensor *t = gf__grad_to_dtype(g, c->dtype);
        gf_tensor_release(g);
        g = t;
    }
    if (g && g->storage->device != c->device) {
        gf_tensor *t = gf_to_device(g, c->device);
        gf_tensor_release(g);
        g = t;
    }
    if (!g) return gf__status();
    out[0] = g;
    return GF_OK;
}

gf_status gf__ag_record_copy(const gf_tensor *in, gf_tensor *out, const char *name) {
    if (out == in) return GF_OK; /* a new reference to the input itself */
    if (gf__fw_copy(in, out, name) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {in};
    gf_tensor *outs[1] = {out};
    gf_node *n = gf__ag_record(name, copy_backward, ins, 1, outs, 1);
    if (n) *GF_NODE_CTX(n, copy_ctx) = (copy_ctx){in->dtype, in->storage->device};
    return GF_OK;
}

/* The T slices' gradients (zeros where a slice had none) stacked back into
 * the input's shape: one pass, where T select views would each fill a
 * zero tensor of the input's size. Differentiable (gf_stack records under
 * create_graph). */
static gf_status unbind_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    out[0] = gf_stack(grads, n->n_outputs, 0);
    return out[0] ? GF_OK : gf__status();
}

gf_status gf__ag_record_unbind_copies(const gf_tensor *in, gf_tensor *const *outs, int cnt) {
    const gf_tensor *ins[1] = {in};
    gf__ag_record("UnbindBackward", unbind_backward, ins, 1, outs, cnt);
    return GF_OK;
}
