/* cuda_pool.c — host side of MAX_POOL2D, AVG_POOL2D and their gradients:
 * the reference's parameter and shape rules (plugins/reference/ref_pool.c),
 * then the kernels of kernels/cu_pool.cu. */
#include <stdio.h>

#include "cuda_internal.h"

static gfp_status check_params(const char *op, const void *params, bool is_max, cuk_pool *g) {
    gfp_status st = cu_check_params(params, GFP_POOL2D_PARAMS_SIZE_V1_0, op);
    if (st != GFP_OK) return st;
    const gfp_pool2d_params *p = params;
    for (int a = 0; a < 2; a++) {
        if (p->kernel[a] < 1)
            return cu_fail(GFP_ERR_INVALID, "%s: kernel[%d] is %d; kernel sizes must be >= 1", op,
                           a, (int)p->kernel[a]);
        if (p->stride[a] < 1)
            return cu_fail(GFP_ERR_INVALID, "%s: stride[%d] is %d; strides must be >= 1", op, a,
                           (int)p->stride[a]);
        if (p->padding[a] < 0)
            return cu_fail(GFP_ERR_INVALID, "%s: padding[%d] is %d; padding must be >= 0", op, a,
                           (int)p->padding[a]);
        if (p->padding[a] > p->kernel[a] / 2)
            return cu_fail(GFP_ERR_INVALID,
                           "%s: padding[%d] is %d but kernel[%d] is %d; padding must be at most "
                           "half the kernel size (kernel/2 = %d)",
                           op, a, (int)p->padding[a], a, (int)p->kernel[a],
                           (int)(p->kernel[a] / 2));
        if (is_max && p->dilation[a] < 1)
            return cu_fail(GFP_ERR_INVALID, "%s: dilation[%d] is %d; dilations must be >= 1", op,
                           a, (int)p->dilation[a]);
    }
    g->kh = p->kernel[0];
    g->kw = p->kernel[1];
    g->sh = p->stride[0];
    g->sw = p->stride[1];
    g->ph = p->padding[0];
    g->pw = p->padding[1];
    g->dh = is_max ? p->dilation[0] : 1;
    g->dw = is_max ? p->dilation[1] : 1;
    g->include_pad = p->count_include_pad != 0;
    return GFP_OK;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
    int64_t out = floor_div(in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
    /* The last window must start inside the input or its left padding. */
    if (ceil_mode && (out - 1) * s >= in + p) out--;
    return out;
}

static gfp_status check_rank4(const char *op, const gfp_tensor *t, const char *name) {
    if (t->rank != 4)
        return cu_fail(GFP_ERR_INVALID,
                       "%s: %s must be rank 4 [N, C, H, W] (the core reshapes 3-D input), got "
                       "rank %d",
                       op, name, (int)t->rank);
    return GFP_OK;
}

/* x input-shaped, y output-shaped: fills g's sizes and checks y. */
static gfp_status check_shapes(const char *op, const void *params, const gfp_tensor *x,
                               const char *xname, const gfp_tensor *y, const char *yname,
                               cuk_pool *g) {
    gfp_status st;
    if ((st = check_rank4(op, x, xname)) != GFP_OK) return st;
    if ((st = check_rank4(op, y, yname)) != GFP_OK) return st;
    bool ceil_mode = ((const gfp_pool2d_params *)params)->ceil_mode != 0;
    g->n = x->sizes[0];
    g->c = x->sizes[1];
    g->h = x->sizes[2];
    g->w = x->sizes[3];
    g->ho = out_size(g->h, g->kh, g->sh, g->ph, g->dh, ceil_mode);
    g->wo = out_size(g->w, g->kw, g->sw, g->pw, g->dw, ceil_mode);
    if (g->ho < 1 || g->wo < 1)
        return cu_fail(GFP_ERR_INVALID,
                       "%s: the output would be %lldx%lld: input %lldx%lld is too small for "
                       "kernel %lldx%lld, padding %lldx%lld and dilation %lldx%lld",
                       op, (long long)g->ho, (long long)g->wo, (long long)g->h, (long long)g->w,
                       (long long)g->kh, (long long)g->kw, (long long)g->ph, (long long)g->pw,
                       (long long)g->dh, (long long)g->dw);
    const int64_t *ys = y->sizes;
    if (ys[0] != g->n || ys[1] != g->c || ys[2] != g->ho || ys[3] != g->wo)
        return cu_fail(GFP_ERR_INVALID,
                       "%s: %s has sizes [%lld, %lld, %lld, %lld] but %s [%lld, %lld, %lld, %lld] "
                       "needs [%lld, %lld, %lld, %lld] with these parameters",
                       op, yname, (long long)ys[0], (long long)ys[1], (long long)ys[2],
                       (long long)ys[3], xname, (long long)g->n, (long long)g->c, (long long)g->h,
                       (long long)g->w, (long long)g->n, (long long)g->c, (long long)g->ho,
                       (long long)g->wo);
    return GFP_OK;
}

static bool same_sizes(const gfp_tensor *a, const gfp_tensor *b) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->sizes[d] != b->sizes[d]) return false;
    return true;
}

gfp_status cu_pool_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params) {
    (void)n_in;
    (void)n_out;
    const char *name = cu_op_name(op);
    cuk_pool g = {0};
    gfp_status st;
    switch (op) {
    case GFP_OP_MAX_POOL2D: {
        const gfp_tensor *x = in[0], *y = out[0], *ind = out[1];
        if ((st = check_params(name, params, true, &g)) != GFP_OK) return st;
        if ((st = check_rank4(name, ind, "indices")) != GFP_OK) return st;
        if ((st = check_shapes(name, params, x, "x", y, "y", &g)) != GFP_OK) return st;
        if (!same_sizes(ind, y))
            return cu_fail(GFP_ERR_INVALID, "%s: indices must have the sizes of y", name);
        if (cu_numel(y) == 0) return GFP_OK;
        cuk_tensor vx = cu_view(x), vy = cu_view(y), vi = cu_view(ind);
        return cu_check(cuk_max_pool(dev->stream, &g, &vx, &vy, &vi), name, "the kernel launch");
    }
    case GFP_OP_MAX_POOL2D_BACKWARD: {
        /* No parameters: the indices say where each gradient goes. */
        const gfp_tensor *gy = in[0], *ind = in[1], *gx = out[0];
        if ((st = check_rank4(name, gy, "grad_y")) != GFP_OK ||
            (st = check_rank4(name, ind, "indices")) != GFP_OK ||
            (st = check_rank4(name, gx, "grad_x")) != GFP_OK)
            return st;
        if (!same_sizes(gy, ind))
            return cu_fail(GFP_ERR_INVALID, "%s: indices must have grad_y's sizes", name);
        if (gy->sizes[0] != gx->sizes[0] || gy->sizes[1] != gx->sizes[1])
            return cu_fail(GFP_ERR_INVALID,
                           "%s: grad_y is [%lld, %lld, ...] but grad_x is [%lld, %lld, ...]; N "
                           "and C must match",
                           name, (long long)gy->sizes[0], (long long)gy->sizes[1],
                           (long long)gx->sizes[0], (long long)gx->sizes[1]);
        g.n = gx->sizes[0];
        g.c = gx->sizes[1];
        g.h = gx->sizes[2];
        g.w = gx->sizes[3];
        g.ho = gy->sizes[2];
        g.wo = gy->sizes[3];
        cuk_tensor vgy = cu_view(gy), vi = cu_view(ind), vgx = cu_view(gx);
        st = cu_check_indices(dev, &vi, -1, g.h * g.w, name, -1);
        if (st != GFP_OK || cu_numel(gx) == 0) return st;
        return cu_check(cuk_max_pool_backward(dev->stream, &g, &vgy, &vi, &vgx), name,
                        "the kernel launch");
    }
    case GFP_OP_AVG_POOL2D: {
        const gfp_tensor *x = in[0], *y = out[0];
        if ((st = check_params(name, params, false, &g)) != GFP_OK) return st;
        if ((st = check_shapes(name, params, x, "x", y, "y", &g)) != GFP_OK) return st;
        if (cu_numel(y) == 0) return GFP_OK;
        cuk_tensor vx = cu_view(x), vy = cu_view(y);
        return cu_check(cuk_avg_pool(dev->stream, &g, &vx, &vy), name, "the kernel launch");
    }
    default: { /* GFP_OP_AVG_POOL2D_BACKWARD */
        const gfp_tensor *gy = in[0], *gx = out[0];
        if ((st = check_params(name, params, false, &g)) != GFP_OK) return st;
        if ((st = check_shapes(name, params, gx, "grad_x", gy, "grad_y", &g)) != GFP_OK) return st;
        if (cu_numel(gx) == 0) return GFP_OK;
        cuk_tensor vgy = cu_view(gy), vgx = cu_view(gx);
        return cu_check(cuk_avg_pool_backward(dev->stream, &g, &vgy, &vgx), name,
                        "the kernel launch");
    }
    }
}
