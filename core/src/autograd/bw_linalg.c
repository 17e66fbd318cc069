/* SPDX-License-Identifier: BSD-3-Clause */
/* bw_linalg.c — backward formulas of matmul, softmax and log_softmax.
 *
 * Formulas use graft's public (differentiable) ops only, so create_graph
 * gives higher-order gradients. */
#include <string.h>

#include "ag_internal.h"
#include "fwad/fw_internal.h"

/* ------------------------------------------------------------ matmul */
typedef struct matmul_ctx {
    int a_rank, b_rank;
    bool a_t, b_t; /* the operand is a transposed matrix (see col_major) */
    int64_t a_sizes[GF_MAX_RANK], b_sizes[GF_MAX_RANK];
} matmul_ctx;
GF_CTX_FITS(matmul_ctx);

/* Last two dims stored column-major: a transposed view of a row-major
 * matrix, as a linear layer's weight is used (x @ W^T). */
static bool col_major(const gf_tensor *t) {
    int r = t->rank;
    return r >= 2 && t->sizes[r - 2] > 1 && t->sizes[r - 1] > 1 && t->strides[r - 2] == 1 &&
           t->strides[r - 1] != 1;
}

/* With a2 [..., M, K], b2 [..., K, N] (1-D operands promoted as the forward
 * did) and g2 [batch..., M, N]: ga = g2 @ b2^T, gb = a2^T @ g2. Each is then
 * summed over the batch dims its operand was broadcast along
 * (gf__ag_sum_to) and the promoted dim is dropped again, so a 1-D operand
 * gets a 1-D gradient.
 * For a column-major operand the product is computed transposed and
 * presented through a transposed view (gb = (g2^T @ a2)^T): the gradient
 * then has the operand's layout, and the one reaching the row-major matrix
 * behind it (through the transpose's backward) is contiguous, so updates of
 * that matrix read both in the same order instead of through a transpose. */
static gf_tensor *matmul_grad_a(const matmul_ctx *c, gf_tensor *g2, gf_tensor *b2) {
    gf_tensor *ga = c->a_t ? gf_transpose(gf_matmul(b2, gf_transpose(g2, -1, -2)), -1, -2)
                           : gf_matmul(g2, gf_transpose(b2, -1, -2));
    if (ga && c->a_rank == 1) ga = gf_squeeze(ga, -2);
    return ga ? gf__ag_sum_to(ga, c->a_sizes, c->a_rank) : NULL;
}

static gf_tensor *matmul_grad_b(const matmul_ctx *c, gf_tensor *g2, gf_tensor *a2) {
    gf_tensor *gb;
    if (c->b_rank <= 2 && c->a_rank >= 3) {
        /* b is shared by every batch: fold the batch into the rows, one
         * [K, B*M] @ [B*M, N] product instead of a batch of them summed. */
        int r = gf_tensor_rank(a2);
        const int64_t *as = gf_tensor_sizes(a2);
        int64_t rows = 1;
        for (int d = 0; d < r - 1; d++) rows *= as[d];
        int64_t af[2] = {rows, as[r - 1]};
        int64_t gfl[2] = {rows, gf_tensor_size(g2, -1)};
        gf_tensor *a_fl = gf_reshape(a2, af, 2), *g_fl = gf_reshape(g2, gfl, 2);
        gb = c->b_t ? gf_transpose(gf_matmul(gf_transpose(g_fl, 0, 1), a_fl), 0, 1)
                    : gf_matmul(gf_transpose(a_fl, 0, 1), g_fl);
    } else {
        gb = c->b_t ? gf_transpose(gf_matmul(gf_transpose(g2, -1, -2), a2), -1, -2)
                    : gf_matmul(gf_transpose(a2, -1, -2), g2);
    }
    if (gb && c->b_rank == 1) gb = gf_squeeze(gb, -1);
    return gb ? gf__ag_sum_to(gb, c->b_sizes, c->b_rank) : NULL;
}

/* Saved: 0 = a (read by gb), 1 = b (read by ga). */
static gf_status matmul_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const matmul_ctx *c = GF_NODE_CTX(n, matmul_ctx);
    bool need_a = n->next[0].node != NULL, need_b = n->next[1].node != NULL;
    gf_tensor *a = NULL, *b = NULL;
    gf_status s = gf__ag_unpack(n, 0, &a);
    if (s == GF_OK) s = gf__ag_unpack(n, 1, &b);
    if (s != GF_OK) {
        gf_tensor_release(a);
        return s;
    }
    gf_tensor *ra = NULL, *rb = NULL;
    gf_scope_begin();
    /* Complex: ga = g b^H, gb = a^H g (conjugate transposes). */
    if (a && gf_dtype_is_complex(a->dtype)) {
        gf_tensor *t = gf__conj_if_complex(a);
        gf_tensor_release(a);
        a = t;
    }
    if (b && gf_dtype_is_complex(b->dtype)) {
        gf_tensor *t = gf__conj_if_complex(b);
        gf_tensor_release(b);
        b = t;
    }
    gf_tensor *g2 = grads[0]; /* [batch..., M, N] with the promoted dims back */
    if (c->b_rank == 1) g2 = gf_unsqueeze(g2, -1);
    if (c->a_rank == 1) g2 = gf_unsqueeze(g2, -2);
    if (need_a) {
        gf_tensor *b2 = c->b_rank == 1 ? gf_unsqueeze(b, -1) : b;
        ra = matmul_grad_a(c, g2, b2);
    }
    if (need_b && (!need_a || ra)) {
        gf_tensor *a2 = c->a_rank == 1 ? gf_unsqueeze(a, 0) : a;
        rb = matmul_grad_b(c, g2, a2);
    }
    gf_scope_end();
    gf_tensor_release(a);
    gf_tensor_release(b);
    if ((need_a && !ra) || (need_b && !rb)) {
        gf_tensor_release(ra);
        gf_tensor_release(rb);
        return gf__status();
    }
    out[0] = ra;
    out[1] = rb;
    return GF_OK;
}

gf_status gf__ag_record_matmul(const gf_tensor *a, const gf_tensor *b, gf_tensor *y) {
    if (gf__fw_matmul(a, b, y) != GF_OK) return gf__status();
    const gf_tensor *ins[2] = {a, b};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record("MatmulBackward", matmul_backward, ins, 2, outs, 1);
    if (!n) return GF_OK;
    matmul_ctx *c = GF_NODE_CTX(n, matmul_ctx);
    c->a_rank = a->rank;
    c->b_rank = b->rank;
    c->a_t = col_major(a);
    c->b_t = col_major(b);
    memcpy(c->a_sizes, a->sizes, sizeof c->a_sizes);
    memcpy(c->b_sizes, b->sizes, sizeof c->b_sizes);
    bool need_a = n->next[0].node != NULL, need_b = n->next[1].node != NULL;
    gf_status s = GF_OK;
    if (need_b) s = gf__ag_save(n, 0, a, false);
    if (need_a && s == GF_OK) s = gf__ag_save(n, 1, b, false);
    return s;
}

/* ------------------------------------------------------------ softmax */
typedef struct softmax_ctx {
    gfp_op op;
    int dim; /* normalised */
} softmax_ctx;
GF_CTX_FITS(softmax_ctx);

/* The device's SOFTMAX_BACKWARD / LOG_SOFTMAX_BACKWARD: one kernel where the
 * formula below takes four launches and three temporaries. Only when the
 * gradient needs neither history (create_graph with y or g requiring grad)
 * nor a tangent; a device without the op, or one refusing the launch,
 * composes. False: compose; true: *r or the failure in *s. */
static bool fused_softmax_backward(const softmax_ctx *c, gf_tensor *g, gf_tensor *y,
                                   gf_tensor **r, gf_status *s) {
    const gf_tensor *gy[2] = {g, y};
    if (g->dtype != y->dtype || g->storage->device != y->storage->device ||
        (gf_is_grad_enabled() && (gf_tensor_requires_grad(g) || gf_tensor_requires_grad(y))) ||
        gf__fw_any_tangent(gy, 2))
        return false;
    gfp_op op = c->op == GFP_OP_SOFTMAX ? GFP_OP_SOFTMAX_BACKWARD : GFP_OP_LOG_SOFTMAX_BACKWARD;
    gf_tensor *o = gf__empty(y->sizes, y->rank, y->dtype, y->storage->device);
    if (!o) {
        *s = gf__status();
        return true;
    }
    gf_tensor *outs[1] = {o};
    if (!gf__dev_has_op(op, gy, 2, outs, 1)) {
        gf_tensor_release(o);
        return false;
    }
    gfp_dim_params p = {.struct_size = sizeof p, .dim = c->dim};
    *s = gf__launch_own(op, c->op == GFP_OP_SOFTMAX ? "softmax_backward" : "log_softmax_backward",
                        gy, 2, outs, 1, &p);
    if (*s != GF_OK) {
        gf_tensor_release(o);
        return *s != GF_ERR_UNSUPPORTED;
    }
    *r = o;
    return true;
}

/* softmax: y (g - sum(g y)); log_softmax: g - exp(y) sum(g), sums along dim.
 * Saved: 0 = y. */
static gf_status softmax_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const softmax_ctx *c = GF_NODE_CTX(n, softmax_ctx);
    gf_tensor *y = NULL;
    gf_status s = gf__ag_unpack(n, 0, &y);
    if (s != GF_OK) return s;
    gf_tensor *g = grads[0], *r = NULL;
    if (fused_softmax_backward(c, g, y, &r, &s)) {
        gf_tensor_release(y);
        if (s == GF_OK) out[0] = r;
        return s;
    }
    s = GF_OK;
    int dim = c->dim;
    gf_scope_begin();
    if (c->op == GFP_OP_SOFTMAX)
        r = gf_mul(y, gf_sub(g, gf_sum(gf_mul(g, y), &dim, 1, true)));
    else
        r = gf_sub(g, gf_mul(gf_exp(y), gf_sum(g, &dim, 1, true)));
    r = gf_scope_keep(r);
    gf_scope_end();
    gf_tensor_release(y);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

gf_status gf__ag_record_softmax(gfp_op op, const gf_tensor *x, gf_tensor *y, int dim) {
    if (gf__fw_softmax(op, x, y, dim) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {x};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record(op == GFP_OP_SOFTMAX ? "SoftmaxBackward" : "LogSoftmaxBackward",
                               softmax_backward, ins, 1, outs, 1);
    if (!n) return GF_OK;
    softmax_ctx *c = GF_NODE_CTX(n, softmax_ctx);
    c->op = op;
    c->dim = dim;
    return gf__ag_save(n, 0, y, true);
}
