/* SPDX-License-Identifier: BSD-3-Clause */
/* complex_grad.c — backward rules at the boundary between real and complex
 * tensors, in PyTorch's convention: the gradient of a real loss L with
 * respect to z = x + iy is dL/dx + i dL/dy (the conjugate Wirtinger
 * derivative scaled by 2), so every rule maps an output gradient to
 * grad_z = conj(dy/dz) * g + (dy/dconj(z)) * conj(g) with PyTorch's
 * formulas; holomorphic ops need only the first term (bw_elementwise.c
 * conjugates their derivatives). Formulas use graft's public ops, so
 * higher-order gradients work.
 *
 *   view_as_real(z) = r  : grad_z = view_as_complex(g)
 *   view_as_complex(r)   : grad_r = view_as_real(g)
 *   real(z)              : grad_z = g + 0i
 *   imag(z)              : grad_z = 0 + g i
 *   complex(re, im)      : grad_re = real(g), grad_im = imag(g)
 *   conj(z)              : grad_z = conj(g)
 *   abs(z)               : grad_z = g z / |z|, 0 at z = 0 (PyTorch's sgn) */
#include <string.h>

#include "../autograd/ag_internal.h"
#include "complex_internal.h"

gf_tensor *gf__grad_to_dtype(const gf_tensor *g, gf_dtype dt) {
    if (!g) return NULL;
    if (g->dtype == dt) return gf_tensor_retain((gf_tensor *)g);
    int saved = gf__scope_suspend();
    gf_tensor *r = gf_tensor_retain((gf_tensor *)g);
    if (gf_dtype_is_complex(g->dtype) && !gf_dtype_is_complex(dt)) {
        gf_tensor *re = gf_real(r);
        gf_tensor_release(r);
        r = re;
    }
    if (r && r->dtype != dt) {
        gf_tensor *c = gf_to_dtype(r, dt);
        gf_tensor_release(r);
        r = c;
    }
    gf__scope_resume(saved);
    return r;
}

/* ------------------------------------------------------------ views */
typedef struct cx_view_ctx {
    gf_cx_view kind;
} cx_view_ctx;
GF_CTX_FITS(cx_view_ctx);

static gf_status cx_view_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const cx_view_ctx *c = GF_NODE_CTX(n, cx_view_ctx);
    gf_tensor *g = grads[0], *r = NULL;
    gf_scope_begin();
    switch (c->kind) {
    case GF_CX_VIEW_AS_REAL: r = gf_view_as_complex(gf_contiguous(g)); break;
    case GF_CX_VIEW_AS_COMPLEX: r = gf_view_as_real(g); break;
    case GF_CX_REAL: r = gf_complex(g, gf_zeros_like(g)); break;
    case GF_CX_IMAG: r = gf_complex(gf_zeros_like(g), g); break;
    }
    r = gf_scope_keep(r);
    gf_scope_end();
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

static const char *cx_view_name(gf_cx_view kind) {
    switch (kind) {
    case GF_CX_VIEW_AS_REAL: return "ViewAsRealBackward";
    case GF_CX_VIEW_AS_COMPLEX: return "ViewAsComplexBackward";
    case GF_CX_REAL: return "RealBackward";
    case GF_CX_IMAG: return "ImagBackward";
    }
    return "ViewBackward";
}

gf_status gf__cx_record_view(const gf_tensor *in, gf_tensor *out, gf_cx_view kind) {
    /* A view with another dtype than its base: the storage and version
     * counter are shared; in-place writes through it while the base needs
     * a gradient are refused (inplace.c), since the base's history cannot
     * be rebased across dtypes. */
    if (gf__ag_on_view(in, out, GF_VIEW_DEFAULT) != GF_OK) return gf__status();
    if (gf__fw_cx_view(in, out, (int)kind) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {in};
    gf_tensor *outs[1] = {out};
    gf_node *n = gf__ag_record(cx_view_name(kind), cx_view_backward, ins, 1, outs, 1);
    if (n) GF_NODE_CTX(n, cx_view_ctx)->kind = kind;
    return GF_OK;
}

/* ------------------------------------------------------------ complex(re, im) */
typedef struct cx_complex_ctx {
    gf_dtype dtype[2];
    int rank[2];
    int64_t sizes[2][GF_MAX_RANK];
} cx_complex_ctx;
GF_CTX_FITS(cx_complex_ctx);

static gf_status complex_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const cx_complex_ctx *c = GF_NODE_CTX(n, cx_complex_ctx);
    gf_tensor *g = grads[0];
    gf_status s = GF_OK;
    for (int i = 0; i < 2 && s == GF_OK; i++) {
        if (!n->next[i].node) continue;
        /* part belongs to the scope; summed (possibly a new reference to
         * part itself) and r are this function's own references */
        gf_scope_begin();
        gf_tensor *part = i == 0 ? gf_real(g) : gf_imag(g);
        gf_tensor *summed = part ? gf__ag_sum_to(part, c->sizes[i], c->rank[i]) : NULL;
        gf_tensor *r = summed ? gf__grad_to_dtype(summed, c->dtype[i]) : NULL;
        gf_tensor_release(summed);
        gf_scope_end();
        if (!r) s = gf__status();
        out[i] = r;
    }
    if (s != GF_OK) {
        gf_tensor_release(out[0]);
        out[0] = NULL;
    }
    return s;
}

gf_status gf__cx_record_complex(const gf_tensor *re, const gf_tensor *im, gf_tensor *z) {
    if (gf__fw_cx_complex(re, im, z) != GF_OK) return gf__status();
    const gf_tensor *ins[2] = {re, im};
    gf_tensor *outs[1] = {z};
    gf_node *n = gf__ag_record("ComplexBackward", complex_backward, ins, 2, outs, 1);
    if (!n) return GF_OK;
    cx_complex_ctx *c = GF_NODE_CTX(n, cx_complex_ctx);
    for (int i = 0; i < 2; i++) {
        c->dtype[i] = ins[i]->dtype;
        c->rank[i] = ins[i]->rank;
        memcpy(c->sizes[i], ins[i]->sizes, sizeof c->sizes[i]);
    }
    return GF_OK;
}

/* ------------------------------------------------------------ conj */
static gf_status conj_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    (void)n;
    int saved = gf__scope_suspend();
    gf_tensor *r = gf_conj(grads[0]);
    gf__scope_resume(saved);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

gf_status gf__cx_record_conj(const gf_tensor *z, gf_tensor *y) {
    if (gf__fw_cx_conj(z, y) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {z};
    gf_tensor *outs[1] = {y};
    gf__ag_record("ConjBackward", conj_backward, ins, 1, outs, 1);
    return GF_OK;
}

/* ------------------------------------------------------------ abs */
/* Saved: 0 = z, 1 = |z| (the output). */
static gf_status abs_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    gf_tensor *z = NULL, *y = NULL;
    gf_status s = gf__ag_unpack(n, 0, &z);
    if (s == GF_OK) s = gf__ag_unpack(n, 1, &y);
    if (s != GF_OK) {
        gf_tensor_release(z);
        return s;
    }
    gf_scope_begin();
    /* sgn(z) = z / |z|, with |z| replaced by 1 where it is 0 so no branch
     * divides by zero (0 / 1 = 0 there, as PyTorch's sgn). */
    gf_tensor *at0 = gf_eq_scalar(y, 0.0);
    gf_tensor *den = gf_where(at0, gf_ones_like(y), y);
    gf_tensor *r = gf_scope_keep(gf_mul(grads[0], gf_div(z, den)));
    gf_scope_end();
    gf_tensor_release(z);
    gf_tensor_release(y);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

gf_status gf__cx_record_abs(const gf_tensor *z, gf_tensor *y) {
    if (gf__fw_cx_abs(z, y) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {z};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record("AbsBackward", abs_backward, ins, 1, outs, 1);
    if (!n) return GF_OK;
    gf_status s = gf__ag_save(n, 0, z, false);
    if (s == GF_OK) s = gf__ag_save(n, 1, y, true);
    return s;
}
