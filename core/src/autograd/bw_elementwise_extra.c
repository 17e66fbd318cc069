/* SPDX-License-Identifier: BSD-3-Clause */
/* bw_elementwise_extra.c — the backward of the ops of graft/ops_extra.h that
 * are recorded as one node (ops_elementwise_extra.c): remainder and fmod of
 * floats, and clamp with tensor bounds. Each formula is PyTorch's, written
 * with graft ops, so double backward works. */
#include <string.h>

#include "ag_internal.h"

typedef enum { XK_FMOD, XK_REMAINDER, XK_CLAMP } extra_kind;

typedef struct extra_ctx {
    extra_kind kind;
    int n;             /* inputs recorded (edges) */
    bool has_min, has_max;
    gf_dtype dtype[3];
    int rank[3];
    int64_t sizes[3][GF_MAX_RANK];
} extra_ctx;
GF_CTX_FITS(extra_ctx);

/* g summed back to input i's shape and dtype. */
static gf_tensor *to_input(const extra_ctx *c, int i, const gf_tensor *g) {
    if (!g) return NULL;
    gf_tensor *r = gf__ag_sum_to(g, c->sizes[i], c->rank[i]);
    if (r && r->dtype != c->dtype[i]) {
        int saved = gf__scope_suspend();
        gf_tensor *t = gf__grad_to_dtype(r, c->dtype[i]);
        gf__scope_resume(saved);
        gf_tensor_release(r);
        r = t;
    }
    return r;
}

/* PyTorch: d/da = g, d/db = -g * div(a, b, rounding_mode) (trunc for fmod,
 * floor for remainder). */
static void mod_grads(const extra_ctx *c, gf_tensor *g, gf_tensor *a, gf_tensor *b,
                      gf_tensor **out) {
    gf_tensor *q = gf_div(a, b);
    gf_tensor *r = c->kind == XK_REMAINDER
                       ? gf_floor(q)
                       : gf_where(gf_ge_scalar(q, 0.0), gf_floor(q), gf_ceil(q));
    out[0] = gf_tensor_retain(g);
    out[1] = gf_neg(gf_mul(g, r));
}

/* PyTorch 2.x's clamp_backward and clamp_backward_min_max. A tie of x with
 * a bound splits the gradient evenly between them (as maximum / minimum),
 * except that with both bounds a tie counts only when min < max: for
 * min == max == x all of it goes to x; for min > max all of it goes to max
 * (the output is max). Below min it goes to min, above max to max (min
 * wins for min == max > x). With one bound, a NaN on either side passes the
 * whole gradient to both, as PyTorch's maximum / minimum. */
static void clamp_grads(const extra_ctx *c, gf_tensor *g, gf_tensor *x, gf_tensor *lo,
                        gf_tensor *hi, gf_tensor **out) {
    gf_tensor *zero = gf_zeros_like(g);
    gf_tensor *half = gf_mul_scalar(g, 0.5);
    if (lo && hi) {
        gf_tensor *ordered = gf_lt(lo, hi), *not_crossed = gf_le(lo, hi);
        gf_tensor *below = gf_lt(x, lo), *above = gf_gt(x, hi);
        gf_tensor *tie_lo = gf_logical_and(gf_eq(x, lo), ordered);
        gf_tensor *tie_hi = gf_logical_and(gf_eq(x, hi), ordered);
        out[0] = gf_where(gf_logical_or(below, above), zero,
                          gf_where(gf_logical_or(tie_lo, tie_hi), half, g));
        out[1] = gf_where(gf_logical_and(below, not_crossed), g, gf_where(tie_lo, half, zero));
        out[2] = gf_where(gf_logical_or(gf_gt(lo, hi), gf_logical_and(above, not_crossed)), g,
                          gf_where(tie_hi, half, zero));
    } else {
        /* min only: maximum(x, min); max only: minimum(x, max). */
        gf_tensor *b = lo ? lo : hi;
        gf_tensor *x_loses = lo ? gf_lt(x, b) : gf_gt(x, b);
        gf_tensor *b_loses = lo ? gf_gt(x, b) : gf_lt(x, b);
        gf_tensor *tie = gf_eq(x, b);
        out[0] = gf_where(x_loses, zero, gf_where(tie, half, g));
        out[1] = gf_where(b_loses, zero, gf_where(tie, half, g));
    }
    (void)c;
}

void gf__ag_extra_derivative(bool clamp, bool python, gf_tensor *g, gf_tensor *const *in,
                             bool has_min, bool has_max, gf_tensor **out) {
    extra_ctx c;
    memset(&c, 0, sizeof c);
    c.kind = clamp ? XK_CLAMP : python ? XK_REMAINDER : XK_FMOD;
    c.has_min = has_min;
    c.has_max = has_max;
    if (clamp) {
        gf_tensor *lo = has_min ? in[1] : NULL;
        gf_tensor *hi = has_max ? in[has_min ? 2 : 1] : NULL;
        clamp_grads(&c, g, in[0], lo, hi, out);
    } else {
        mod_grads(&c, g, in[0], in[1], out);
    }
}

static gf_status extra_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const extra_ctx *c = GF_NODE_CTX(n, extra_ctx);
    gf_tensor *in[3] = {NULL, NULL, NULL};
    gf_status s = GF_OK;
    for (int i = 0; i < c->n && s == GF_OK; i++) s = gf__ag_unpack(n, i, &in[i]);
    if (s != GF_OK) {
        for (int i = 0; i < 3; i++) gf_tensor_release(in[i]);
        return s;
    }
    gf_tensor *raw[3] = {NULL, NULL, NULL}, *res[3] = {NULL, NULL, NULL};
    gf_scope_begin();
    if (c->kind == XK_CLAMP) {
        gf_tensor *lo = c->has_min ? in[1] : NULL;
        gf_tensor *hi = c->has_max ? in[c->has_min ? 2 : 1] : NULL;
        clamp_grads(c, grads[0], in[0], lo, hi, raw);
    } else {
        mod_grads(c, grads[0], in[0], in[1], raw);
    }
    bool ok = true;
    for (int i = 0; i < c->n; i++) {
        if (!n->next[i].node) continue;
        res[i] = to_input(c, i, raw[i]);
        if (!res[i]) ok = false;
    }
    gf_scope_end();
    for (int i = 0; i < 3; i++) gf_tensor_release(in[i]);
    if (c->kind != XK_CLAMP) gf_tensor_release(raw[0]); /* retained g */
    if (!ok) {
        for (int i = 0; i < 3; i++) gf_tensor_release(res[i]);
        gf_status st = gf__status();
        return st != GF_OK ? st : GF_ERR_INVALID;
    }
    for (int i = 0; i < c->n; i++) out[i] = res[i];
    return GF_OK;
}

static gf_status record(extra_kind kind, const char *name, const gf_tensor *const *ins, int n,
                        gf_tensor *y, bool has_min, bool has_max) {
    gf_tensor *outs[1] = {y};
    gf_node *node = gf__ag_record(name, extra_backward, ins, n, outs, 1);
    if (!node) return GF_OK;
    extra_ctx *c = GF_NODE_CTX(node, extra_ctx);
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->n = n;
    c->has_min = has_min;
    c->has_max = has_max;
    gf_status s = GF_OK;
    for (int i = 0; i < n; i++) {
        c->dtype[i] = ins[i]->dtype;
        c->rank[i] = ins[i]->rank;
        memcpy(c->sizes[i], ins[i]->sizes, sizeof(int64_t) * (size_t)ins[i]->rank);
        if (s == GF_OK) s = gf__ag_save(node, i, ins[i], false);
    }
    return s;
}

gf_status gf__ag_record_mod(bool python, const gf_tensor *a, const gf_tensor *b, gf_tensor *y) {
    if (gf__fw_mod(python, a, b, y) != GF_OK) return gf__status();
    const gf_tensor *ins[2] = {a, b};
    return record(python ? XK_REMAINDER : XK_FMOD, python ? "RemainderBackward" : "FmodBackward",
                  ins, 2, y, false, false);
}

gf_status gf__ag_record_clamp_tensor(const gf_tensor *x, const gf_tensor *min,
                                     const gf_tensor *max, gf_tensor *y) {
    if (gf__fw_clamp_tensor(x, min, max, y) != GF_OK) return gf__status();
    const gf_tensor *ins[3] = {x, min ? min : max, max};
    return record(XK_CLAMP, "ClampBackward", ins, min && max ? 3 : 2, y, min != NULL,
                  max != NULL);
}
