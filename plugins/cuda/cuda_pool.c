/* cuda_pool.c — host side of MAX_POOL2D, AVG_POOL2D and their gradients:
 * the reference's parameter and shape rules (plugins/reference/ref_pool.c),
 * then the kernels of kernels/cu_pool.cu. */
#include <stdio.h>

#include "cuda_internal.h"

/* The kit's validated geometry, as the kernels take it. */
static cuk_pool cuk_of(const pk_pool2d_geom *p) {
    cuk_pool g = {p->n,  p->c,  p->h,  p->w,  p->ho, p->wo, p->kh, p->kw,
                  p->sh, p->sw, p->ph, p->pw, p->dh, p->dw, p->include_pad ? 1 : 0};
    return g;
}

static gfp_status check_rank4(const char *op, const gfp_tensor *t, const char *name) {
    if (t->rank != 4)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s must be rank 4 [N, C, H, W] (the core reshapes 3-D input), got "
                       "rank %d",
                       op, name, (int)t->rank);
    return GFP_OK;
}

/* x input-shaped, y output-shaped: the kit's checks (plugin_kit.h), into g. */
static gfp_status check_shapes(uint32_t op, const void *params, const gfp_tensor *x,
                               const char *xname, const gfp_tensor *y, const char *yname,
                               cuk_pool *g) {
    pk_pool2d_geom pg = {0};
    gfp_status st = pk_check_pool2d(op, params, x, xname, y, yname, &pg);
    if (st == GFP_OK) *g = cuk_of(&pg);
    return st;
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
    const char *name = pk_op_name(op);
    cuk_pool g = {0};
    gfp_status st;
    switch (op) {
    case GFP_OP_MAX_POOL2D: {
        const gfp_tensor *x = in[0], *y = out[0], *ind = out[1];
        if ((st = check_rank4(name, ind, "indices")) != GFP_OK) return st;
        if ((st = check_shapes(op, params, x, "x", y, "y", &g)) != GFP_OK) return st;
        if (!same_sizes(ind, y))
            return pk_fail(GFP_ERR_INVALID, "%s: indices must have the sizes of y", name);
        if (pk_numel(y) == 0) return GFP_OK;
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
            return pk_fail(GFP_ERR_INVALID, "%s: indices must have grad_y's sizes", name);
        if (gy->sizes[0] != gx->sizes[0] || gy->sizes[1] != gx->sizes[1])
            return pk_fail(GFP_ERR_INVALID,
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
        if (st != GFP_OK || pk_numel(gx) == 0) return st;
        return cu_check(cuk_max_pool_backward(dev->stream, &g, &vgy, &vi, &vgx), name,
                        "the kernel launch");
    }
    case GFP_OP_AVG_POOL2D: {
        const gfp_tensor *x = in[0], *y = out[0];
        if ((st = check_shapes(op, params, x, "x", y, "y", &g)) != GFP_OK) return st;
        if (pk_numel(y) == 0) return GFP_OK;
        cuk_tensor vx = cu_view(x), vy = cu_view(y);
        return cu_check(cuk_avg_pool(dev->stream, &g, &vx, &vy), name, "the kernel launch");
    }
    default: { /* GFP_OP_AVG_POOL2D_BACKWARD */
        const gfp_tensor *gy = in[0], *gx = out[0];
        if ((st = check_shapes(op, params, gx, "grad_x", gy, "grad_y", &g)) != GFP_OK) return st;
        if (pk_numel(gx) == 0) return GFP_OK;
        cuk_tensor vgy = cu_view(gy), vgx = cu_view(gx);
        return cu_check(cuk_avg_pool_backward(dev->stream, &g, &vgy, &vgx), name,
                        "the kernel launch");
    }
    }
}
