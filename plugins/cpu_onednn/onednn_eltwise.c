/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_eltwise.c — f32 activations through oneDNN's eltwise primitive.
 *
 * Only tanh, sigmoid, gelu (both forms) and silu come here: oneDNN evaluates
 * them with vector code where the C loops call libm per element, and they
 * match libm within a few ulps, near 0 too, with NaN and infinities right.
 * Measured on oneDNN 2.6 and kept in the C loops instead: exp (NaN -> +inf;
 * the loops have a vectorised exp), log (~1.4e-6 absolute error near 1, so
 * log(1 + 1e-4) loses two digits), elu (~1e-4 relative error near 0).
 * Cheap ops (neg, abs, relu, floor ...) are as fast in the vectorised loops.
 * Both tensors must be contiguous (any shape is then one 1-D run, so one
 * primitive serves every shape of a size); small tensors stay in the loops,
 * where a call costs less than the primitive's set-up. */
#include <string.h>

#include "onednn_internal.h"

/* Fewer elements than this: the C loop is cheaper than a primitive call. */
#define ELTWISE_MIN_ELEMS 1024

typedef struct eltwise_desc {
    dnnl_alg_kind_t alg;
    float alpha, beta;
    int64_t n;
} eltwise_desc;

static bool alg_of(uint32_t op, eltwise_desc *d) {
    d->alpha = 0.f;
    d->beta = 0.f;
    switch (op) {
    case GFP_OP_TANH: d->alg = dnnl_eltwise_tanh; return true;
    case GFP_OP_SIGMOID: d->alg = dnnl_eltwise_logistic; return true;
    case GFP_OP_GELU: d->alg = dnnl_eltwise_gelu_erf; return true;
    case GFP_OP_GELU_TANH: d->alg = dnnl_eltwise_gelu_tanh; return true;
    case GFP_OP_SILU:
        d->alg = dnnl_eltwise_swish;
        d->alpha = 1.f;
        return true;
    default: return false;
    }
}

static dnnl_status_t build(odn_prim *p, const void *ctx) {
    const eltwise_desc *d = ctx;
    int64_t one = 1;
    dnnl_status_t st = odc_md_strided(&p->md[0], 1, &d->n, &one, dnnl_f32);
    dnnl_primitive_desc_t pd = NULL;
    if (st == dnnl_success) st = odc_eltwise_pd(&pd, odn_engine(), d->alg, &p->md[0], d->alpha,
                                                d->beta);
    if (st == dnnl_success && odc_pd_is_slow(pd)) st = dnnl_unimplemented;
    if (st == dnnl_success) st = odn_prim_set(p, 0, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

bool odn_eltwise_may_take(uint32_t op, int64_t n) {
    eltwise_desc d;
    return alg_of(op, &d) && n >= ELTWISE_MIN_ELEMS;
}

gfp_status odn_eltwise_launch(uint32_t op, const gfp_tensor *x, const gfp_tensor *y,
                              const void *params) {
    eltwise_desc d;
    (void)params;
    if (!alg_of(op, &d)) return ODN_FALLBACK;
    d.n = pk_numel(y);
    if (d.n < ELTWISE_MIN_ELEMS || !odn_is_contiguous(x) || !odn_is_contiguous(y))
        return ODN_FALLBACK;
    odn_key key;
    odn_key_init(&key, op);
    odn_key_add(&key, d.alg);
    int32_t ab[2];
    memcpy(&ab[0], &d.alpha, 4);
    memcpy(&ab[1], &d.beta, 4);
    odn_key_add(&key, ab[0]);
    odn_key_add(&key, ab[1]);
    odn_key_add(&key, d.n);
    odn_ctx *c;
    gfp_status cst = odn_ctx_acquire(&c);
    if (cst != GFP_OK) return cst;
    odn_team team = odn_team_begin(d.n * 4);
    const odn_prim *p = odn_cache_get(&key, build, &d);
    gfp_status st = ODN_FALLBACK;
    if (p) {
        odn_arg args[2] = {{DNNL_ARG_SRC, &p->md[0], (char *)x->buffer + x->offset},
                           {DNNL_ARG_DST, &p->md[0], (char *)y->buffer + y->offset}};
        st = odn_exec(c, p, 0, args, 2, "eltwise");
        odn_prim_release(p);
    }
    odn_team_end(team);
    return st;
}
