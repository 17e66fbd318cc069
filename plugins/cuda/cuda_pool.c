/* SPDX-License-Identifier: BSD-3-Clause */
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

/* x input-shaped, y output-shaped: the kit's checks (plugin_kit.h), into g. */
static gfp_status check_shapes(uint32_t op, const void *params, const gfp_tensor *x,
                               const char *xname, const gfp_tensor *y, const char *yname,
                               cuk_pool *g) {
    pk_pool2d_geom pg = {0};
    gfp_status st = pk_check_pool2d(op, params, x, xname, y, yname, &pg);
    if (st == GFP_OK) *g = cuk_of(&pg);
    return st;
}

gfp_status cu_pool_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params) {
    const char *name = pk_op_name(op);
    cuk_pool g = {0};
    gfp_status st;
    switch (op) {
    case GFP_OP_MAX_POOL2D: {
        const gfp_tensor *x = in[0], *y = out[0], *ind = out[1];
        if ((st = pk_check_nchw(name, ind, "indices")) != GFP_OK) return st;
        if ((st = check_shapes(op, params, x, "x", y, "y", &g)) != GFP_OK) return st;
        if (!pk_same_shape(ind, y))
            return pk_fail(GFP_ERR_INVALID, "%s: indices must have the sizes of y", name);
        if (pk_numel(y) == 0) return GFP_OK;
        cuk_tensor vx = cu_view(x), vy = cu_view(y), vi = cu_view(ind);
        return cu_check(cuk_max_pool(dev->stream, &g, &vx, &vy, &vi), name, "the kernel launch");
    }
    case GFP_OP_MAX_POOL2D_BACKWARD: {
        /* No parameters: the indices say where each gradient goes. */
        const gfp_tensor *gy = in[0], *ind = in[1], *gx = out[0];
        pk_pool2d_geom pg;
        if ((st = pk_check_max_pool2d_backward(gy, ind, gx, &pg)) != GFP_OK) return st;
        g = cuk_of(&pg);
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
