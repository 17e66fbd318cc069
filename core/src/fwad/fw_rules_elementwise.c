/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_rules_elementwise.c — jvp rules of the elementwise ops, copies and the
 * real/complex boundary.
 *
 * An elementwise op's jvp is the sum over its inputs of f_i'(x) * t_i: the
 * backward formulas of bw_elementwise*.c compute exactly g * f_i'(x) with
 * g in place of t_i (unreduced, before any sum over broadcast dims), so the
 * rules call them, with the primals unconjugated (the jvp of a complex op
 * is J v, linear in v, with no conjugation). Forward and reverse mode thus
 * share their conventions at non-differentiable points (relu'(0) = 0,
 * ties of maximum/minimum and clamp split evenly). */
#include <string.h>

#include "autograd/ag_internal.h"
#include "complex/complex_internal.h"
#include "fw_internal.h"
#include "graft_ops.h"

/* ------------------------------------------------------------ copy */
typedef struct copy_p {
    gf_dtype dtype;
    gf_device *device;
} copy_p;

static gf_tensor *copy_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                            gf_tensor *const *y, int j) {
    const copy_p *p = pv;
    (void)x, (void)y, (void)j;
    gf_tensor *r = t[0];
    if (gf_dtype_is_complex(r->dtype) && !gf_dtype_is_complex(p->dtype)) r = gf_real(r);
    if (r && r->dtype != p->dtype) r = gf_to_dtype(r, p->dtype);
    if (r && r->storage->device != p->device) r = gf_to_device(r, p->device);
    return r == t[0] ? gf__ret(gf_tensor_retain(r)) : r;
}

gf_status gf__fw_copy(const gf_tensor *in, gf_tensor *out, const char *name) {
    if (!gf__fw_enabled() || in == out) return GF_OK;
    copy_p p = {out->dtype, out->storage->device};
    const gf_tensor *xs[1] = {in};
    gf_tensor *ys[1] = {out};
    return gf__fw_apply_batched(name, copy_rule, &p, xs, 1, ys, 1, false);
}

/* ------------------------------------------------------------ unary */
typedef struct unary_p {
    gfp_op op;
    double a, b;
} unary_p;

static gf_tensor *unary_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                             gf_tensor *const *y, int j) {
    const unary_p *p = pv;
    (void)j;
    return gf__ag_unary_derivative(p->op, p->a, p->b, t[0], x[0], y[0]);
}

gf_status gf__fw_unary(gfp_op op, const gf_tensor *x, gf_tensor *y, double a, double b) {
    if (!gf__fw_enabled()) return GF_OK;
    const gfp_op_info *info = gfp_op_lookup(op);
    unary_p p = {op, a, b};
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched(info ? info->name : "unary", unary_rule, &p, xs, 1, ys, 1, false);
}

/* ------------------------------------------------------------ binary */
static gf_tensor *binary_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                              gf_tensor *const *y, int j) {
    gfp_op op = *(const gfp_op *)pv;
    (void)j;
    gf_tensor *ta = t[0], *tb = t[1];
    if (gf__fw_rule_batch()) {
        /* [B, *a] as [B, 1.., *a]: a and b then broadcast against it */
        int yr = gf_tensor_rank(y[0]);
        if ((ta && !(ta = gf__fw_batch_align(ta, yr))) || (tb && !(tb = gf__fw_batch_align(tb, yr))))
            return NULL;
        gf_tensor *tt[2] = {ta, tb};
        t = tt;
        gf_tensor *ra = NULL, *rb = NULL, *unused = NULL;
        if (t[0]) gf__ag_binary_derivative(op, t[0], x[0], x[1], y[0], true, false, &ra, &unused);
        if (t[1]) gf__ag_binary_derivative(op, t[1], x[0], x[1], y[0], false, true, &unused, &rb);
        if ((t[0] && !ra) || (t[1] && !rb)) return NULL;
        if (ra && rb) return gf_add(ra, rb);
        gf_tensor *r = ra ? ra : rb;
        return r == t[0] || r == t[1] ? gf__ret(gf_tensor_retain(r)) : r;
    }
    gf_tensor *ra = NULL, *rb = NULL, *unused = NULL;
    if (t[0]) gf__ag_binary_derivative(op, t[0], x[0], x[1], y[0], true, false, &ra, &unused);
    if (t[1]) gf__ag_binary_derivative(op, t[1], x[0], x[1], y[0], false, true, &unused, &rb);
    if ((t[0] && !ra) || (t[1] && !rb)) return NULL;
    if (ra && rb) return gf_add(ra, rb);
    /* add's and sub's formulas hand back the tangent itself: a reference */
    gf_tensor *r = ra ? ra : rb;
    return r == t[0] || r == t[1] ? gf__ret(gf_tensor_retain(r)) : r;
}

gf_status gf__fw_binary(gfp_op op, const gf_tensor *a, const gf_tensor *b, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    const gfp_op_info *info = gfp_op_lookup(op);
    const gf_tensor *xs[2] = {a, b};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched(info ? info->name : "binary", binary_rule, &op, xs, 2, ys, 1,
                                false);
}

/* ------------------------------------------------------------ where, masked_fill */
static gf_tensor *zero_scalar(const gf_tensor *like) {
    return gf_scalar(0.0, gf_tensor_dtype(like), gf_tensor_device(like));
}

static gf_tensor *where_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                             gf_tensor *const *y, int j) {
    (void)pv, (void)j;
    gf_tensor *ta = t[1], *tb = t[2];
    if (gf__fw_rule_batch()) {
        int yr = gf_tensor_rank(y[0]);
        if ((ta && !(ta = gf__fw_batch_align(ta, yr))) || (tb && !(tb = gf__fw_batch_align(tb, yr))))
            return NULL;
    }
    gf_tensor *like = ta ? ta : tb;
    return gf_where(x[0], ta ? ta : zero_scalar(like), tb ? tb : zero_scalar(like));
}

gf_status gf__fw_where(const gf_tensor *cond, const gf_tensor *a, const gf_tensor *b,
                       gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    const gf_tensor *xs[3] = {cond, a, b};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("where", where_rule, NULL, xs, 3, ys, 1, false);
}

static gf_tensor *masked_fill_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                   gf_tensor *const *y, int j) {
    (void)pv, (void)y, (void)j;
    return gf_where(x[1], zero_scalar(t[0]), t[0]);
}

gf_status gf__fw_masked_fill(const gf_tensor *x, const gf_tensor *mask, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    const gf_tensor *xs[2] = {x, mask};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("masked_fill", masked_fill_rule, NULL, xs, 2, ys, 1, false);
}

/* ------------------------------------------------------------ fmod, remainder, clamp(tensors) */
typedef struct extra_p {
    bool clamp, python, has_min, has_max;
    int n;
} extra_p;

static gf_tensor *extra_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                             gf_tensor *const *y, int j) {
    const extra_p *p = pv;
    (void)j;
    gf_tensor *sum = NULL;
    for (int i = 0; i < p->n; i++) {
        if (!t[i]) continue;
        gf_tensor *out[3] = {NULL, NULL, NULL}, *ti = t[i];
        if (gf__fw_rule_batch() && !(ti = gf__fw_batch_align(ti, gf_tensor_rank(y[0]))))
            return NULL;
        gf__ag_extra_derivative(p->clamp, p->python, ti, x, p->has_min, p->has_max, out);
        /* fmod's out[0] is a reference to t[0] of its own: into the scope */
        if (!p->clamp) gf__ret(out[0]);
        gf_tensor *part = out[i];
        if (!part) return NULL;
        sum = sum ? gf_add(sum, part) : part;
    }
    return sum;
}

gf_status gf__fw_mod(bool python, const gf_tensor *a, const gf_tensor *b, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    extra_p p = {.clamp = false, .python = python, .n = 2};
    const gf_tensor *xs[2] = {a, b};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched(python ? "remainder" : "fmod", extra_rule, &p, xs, 2, ys, 1,
                                false);
}

gf_status gf__fw_clamp_tensor(const gf_tensor *x, const gf_tensor *min, const gf_tensor *max,
                              gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    extra_p p = {.clamp = true, .has_min = min != NULL, .has_max = max != NULL,
                 .n = min && max ? 3 : 2};
    const gf_tensor *xs[3] = {x, min ? min : max, max};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("clamp", extra_rule, &p, xs, p.n, ys, 1, false);
}

/* ------------------------------------------------------------ the real/complex boundary */
static gf_tensor *cx_view_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                               gf_tensor *const *y, int j) {
    (void)x, (void)y, (void)j;
    switch (*(const int *)pv) {
    case GF_CX_VIEW_AS_REAL: return gf_view_as_real(gf_contiguous(t[0]));
    case GF_CX_VIEW_AS_COMPLEX: return gf_view_as_complex(gf_contiguous(t[0]));
    case GF_CX_REAL: return gf_real(t[0]);
    case GF_CX_IMAG: return gf_imag(t[0]);
    }
    gf__error(GF_ERR_INVALID, "internal: complex view kind %d", *(const int *)pv);
    return NULL;
}

gf_status gf__fw_cx_view(const gf_tensor *in, gf_tensor *out, int kind) {
    if (!gf__fw_enabled()) return GF_OK;
    const gf_tensor *xs[1] = {in};
    gf_tensor *ys[1] = {out};
    return gf__fw_apply_batched("complex view", cx_view_rule, &kind, xs, 1, ys, 1, true);
}

static gf_tensor *cx_complex_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                                  gf_tensor *const *y, int j) {
    (void)pv, (void)j;
    gf_tensor *re, *im;
    if (gf__fw_rule_batch()) {
        /* batched [B, *part]: both aligned on y's rank and broadcast to
         * [B, *y] (a missing part is zeros like the other) */
        int yr = gf_tensor_rank(y[0]);
        re = t[0] ? gf__fw_batch_align(t[0], yr) : NULL;
        im = t[1] ? gf__fw_batch_align(t[1], yr) : NULL;
        if ((t[0] && !re) || (t[1] && !im)) return NULL;
        int64_t bs[GF_MAX_RANK];
        bs[0] = gf__fw_rule_batch();
        memcpy(bs + 1, gf_tensor_sizes(y[0]), sizeof(int64_t) * (size_t)yr);
        re = re ? gf_expand(re, bs, yr + 1) : gf_zeros_like(gf_expand(im, bs, yr + 1));
        im = im ? gf_expand(im, bs, yr + 1) : gf_zeros_like(re);
    } else {
        re = t[0] ? t[0] : gf_zeros_like(x[0]);
        im = t[1] ? t[1] : gf_zeros_like(x[1]);
    }

    if (re && im && gf_tensor_dtype(re) != gf_tensor_dtype(im)) {
        gf_dtype dt = gf_tensor_dtype(re) == GF_F64 || gf_tensor_dtype(im) == GF_F64 ? GF_F64 : GF_F32;
        re = gf_to_dtype(re, dt);
        im = gf_to_dtype(im, dt);
    }
    return gf_complex(re, im);
}

gf_status gf__fw_cx_complex(const gf_tensor *re, const gf_tensor *im, gf_tensor *z) {
    if (!gf__fw_enabled()) return GF_OK;
    const gf_tensor *xs[2] = {re, im};
    gf_tensor *ys[1] = {z};
    return gf__fw_apply_batched("complex", cx_complex_rule, NULL, xs, 2, ys, 1, false);
}

static gf_tensor *cx_conj_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                               gf_tensor *const *y, int j) {
    (void)pv, (void)x, (void)y, (void)j;
    return gf_conj(t[0]);
}

gf_status gf__fw_cx_conj(const gf_tensor *z, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    const gf_tensor *xs[1] = {z};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("conj", cx_conj_rule, NULL, xs, 1, ys, 1, false);
}

/* d|z| = re(conj(sgn z) t), 0 at z = 0 (PyTorch's sgn). */
static gf_tensor *cx_abs_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                              gf_tensor *const *y, int j) {
    (void)pv, (void)j;
    gf_tensor *at0 = gf_eq_scalar(y[0], 0.0);
    gf_tensor *den = gf_where(at0, gf_ones_like(y[0]), y[0]);
    gf_tensor *sgn = gf_div(x[0], den);
    return gf_real(gf_mul(gf_conj(sgn), t[0]));
}

gf_status gf__fw_cx_abs(const gf_tensor *z, gf_tensor *y) {
    if (!gf__fw_enabled()) return GF_OK;
    const gf_tensor *xs[1] = {z};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched("abs", cx_abs_rule, NULL, xs, 1, ys, 1, false);
}
