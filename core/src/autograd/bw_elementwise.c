/* bw_elementwise.c — backward formulas of the elementwise ops.
 *
 * Formulas use graft's own public (differentiable) ops, so with
 * create_graph the backward pass records a graph of its own. */
#include <math.h>
#include <string.h>

#include "ag_internal.h"

typedef struct unary_ctx {
    gfp_op op;
    double a, b; /* op parameters (slope, alpha, beta, threshold, exponent, min, max) */
} unary_ctx;
GF_CTX_FITS(unary_ctx);

/* grad * f'(x) for each unary op. */
static gf_status unary_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const unary_ctx *c = GF_NODE_CTX(n, unary_ctx);
    gf_tensor *g = grads[0];
    gf_tensor *x = NULL, *y = NULL, *r = NULL;
    gf_status s = gf__ag_unpack(n, 0, &x);
    if (s == GF_OK) s = gf__ag_unpack(n, 1, &y);
    if (s != GF_OK) {
        gf_tensor_release(x);
        return s;
    }
    gf_scope_begin();
    switch (c->op) {
    case GFP_OP_EXP: r = gf_mul(g, y); break;
    default:
        gf__error(GF_ERR_UNSUPPORTED, "%s: backward not implemented", n->name);
        break;
    }
    r = gf_scope_keep(r);
    gf_scope_end();
    gf_tensor_release(x);
    gf_tensor_release(y);
    if (!r) return gf_last_status();
    out[0] = r;
    return GF_OK;
}

static const char *unary_name(gfp_op op) {
    switch (op) {
    case GFP_OP_EXP: return "ExpBackward";
    default: return "UnaryBackward";
    }
}

/* Which of x (input) and y (output) the formula of op needs. */
static void unary_needs(gfp_op op, bool *need_x, bool *need_y) {
    *need_x = *need_y = false;
    switch (op) {
    case GFP_OP_EXP: *need_y = true; break;
    default: *need_x = true; break;
    }
}

gf_status gf__ag_record_unary(gfp_op op, const gf_tensor *x, gf_tensor *y, double a, double b) {
    const gf_tensor *ins[1] = {x};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record(unary_name(op), unary_backward, ins, 1, outs, 1);
    if (!n) return GF_OK;
    unary_ctx *c = GF_NODE_CTX(n, unary_ctx);
    c->op = op;
    c->a = a;
    c->b = b;
    bool need_x, need_y;
    unary_needs(op, &need_x, &need_y);
    gf_status s = GF_OK;
    if (need_x) s = gf__ag_save(n, 0, x, false);
    if (need_y && s == GF_OK) s = gf__ag_save(n, 1, y, true);
    return s;
}

/* ------------------------------------------------------------ binary */
typedef struct binary_ctx {
    gfp_op op;
    int a_rank, b_rank;
    int64_t a_sizes[GF_MAX_RANK], b_sizes[GF_MAX_RANK];
} binary_ctx;
GF_CTX_FITS(binary_ctx);

/* Gradients of a and b, each summed back to its own (pre-broadcast) shape. */
static gf_status binary_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const binary_ctx *c = GF_NODE_CTX(n, binary_ctx);
    gf_tensor *g = grads[0];
    gf_tensor *a = NULL, *b = NULL;
    gf_status s = gf__ag_unpack(n, 0, &a);
    if (s == GF_OK) s = gf__ag_unpack(n, 1, &b);
    if (s != GF_OK) {
        gf_tensor_release(a);
        return s;
    }
    gf_tensor *ga = NULL, *gb = NULL;
    gf_scope_begin();
    switch (c->op) {
    case GFP_OP_ADD: ga = g; gb = g; break;
    case GFP_OP_MUL: ga = gf_mul(g, b); gb = gf_mul(g, a); break;
    default:
        gf__error(GF_ERR_UNSUPPORTED, "%s: backward not implemented", n->name);
        break;
    }
    bool need_a = n->next[0].node != NULL, need_b = n->next[1].node != NULL;
    gf_tensor *ra = (need_a && ga) ? gf__ag_sum_to(ga, c->a_sizes, c->a_rank) : NULL;
    gf_tensor *rb = (need_b && gb) ? gf__ag_sum_to(gb, c->b_sizes, c->b_rank) : NULL;
    gf_scope_end();
    gf_tensor_release(a);
    gf_tensor_release(b);
    if ((need_a && !ra) || (need_b && !rb)) {
        gf_tensor_release(ra);
        gf_tensor_release(rb);
        return gf_last_status();
    }
    out[0] = ra;
    out[1] = rb;
    return GF_OK;
}

static const char *binary_name(gfp_op op) {
    switch (op) {
    case GFP_OP_ADD: return "AddBackward";
    case GFP_OP_MUL: return "MulBackward";
    default: return "BinaryBackward";
    }
}

gf_status gf__ag_record_binary(gfp_op op, const gf_tensor *a, const gf_tensor *b, gf_tensor *y) {
    const gf_tensor *ins[2] = {a, b};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record(binary_name(op), binary_backward, ins, 2, outs, 1);
    if (!n) return GF_OK;
    binary_ctx *c = GF_NODE_CTX(n, binary_ctx);
    c->op = op;
    c->a_rank = a->rank;
    c->b_rank = b->rank;
    memcpy(c->a_sizes, a->sizes, sizeof c->a_sizes);
    memcpy(c->b_sizes, b->sizes, sizeof c->b_sizes);
    gf_status s = GF_OK;
    if (op == GFP_OP_MUL) {
        /* Each operand is saved only when the other one needs a gradient. */
        if (n->next[1].node) s = gf__ag_save(n, 0, a, false);
        if (s == GF_OK && n->next[0].node) s = gf__ag_save(n, 1, b, false);
    }
    return s;
}
