/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_pool.c — 2-D max and average pooling (NCHW, rank 4) and their gradients.
 *
 * The semantics are PyTorch's, including its corner cases, because this file
 * is the oracle that every device plugin is compared against:
 *  - Output size: floor or ceil of (in + 2p - d(k-1) - 1) / s, plus 1; in ceil
 *    mode the last window must start inside the input or its left padding.
 *  - Padding may be at most half the kernel (kernel/2), so that almost every
 *    window holds a real element.
 *  - Max pool: padding never wins; the first maximum in window order wins; a
 *    NaN wins. Indices are flat h*W + w within the input plane. A dilated
 *    window can still fall wholly in padding: it yields -inf with index -1,
 *    which the backward skips (PyTorch's backward skips -1 too).
 *  - Avg pool (no dilation): the divisor is the window clipped to the padded
 *    input [-p, in + p) when count_include_pad, else the window clipped to the
 *    real input; a window holding no real element yields 0.
 * Sums are accumulated in double; the backward kernels accumulate each plane
 * in a double scratch plane and then write grad_x whole. */
#include <math.h>
#include <stdlib.h>

#include "ref_internal.h"

uint32_t ref_pool_support(const gfp_op_query *q) {
    return pk_pool_dtypes_ok(q, REF_DT_FLOAT) ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
}

typedef pk_pool2d_geom pool_geom; /* validated by the kit (plugin_kit.h) */

static gfp_status check_float(const char *op, const gfp_tensor *t, const char *name, int32_t want) {
    if (!ref_is_float(t->dtype))
        return pk_fail(GFP_ERR_UNSUPPORTED,
                        "%s: dtype %s (of %s) is not supported; the reference plugin pools f32 "
                        "and f64",
                        op, pk_dtype_name(t->dtype), name);
    if (want >= 0 && t->dtype != want)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %s is %s but must have the input's dtype %s", op,
                        name, pk_dtype_name(t->dtype), pk_dtype_name(want));
    return GFP_OK;
}

static gfp_status check_indices(const char *op, const gfp_tensor *t) {
    if (t->dtype != GFP_I64)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: indices are %s; they must be i64", op,
                        pk_dtype_name(t->dtype));
    return GFP_OK;
}

static int64_t at4(const gfp_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d) {
    const int64_t idx[4] = {a, b, c, d};
    return ref_offset(t, idx);
}

/* The taps [*lo, *hi) of a window starting at base (stride d between taps,
 * k taps) that land inside [0, size): the loops visit only those, so a
 * kernel far larger than the input (a ceil-mode window) costs nothing. */
static void taps_inside(int64_t base, int64_t k, int64_t d, int64_t size, int64_t *lo,
                        int64_t *hi) {
    *lo = base < 0 ? (-base + d - 1) / d : 0;
    *hi = size > base ? (size - base + d - 1) / d : 0;
    if (*hi > k) *hi = k;
}

static void max_pool_forward(const pool_geom *g, const gfp_tensor *x, const gfp_tensor *y,
                             const gfp_tensor *ind) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t c = 0; c < g->c; c++)
            for (int64_t oh = 0; oh < g->ho; oh++)
                for (int64_t ow = 0; ow < g->wo; ow++) {
                    double best = -INFINITY;
                    int64_t best_idx = -1;
                    /* padding never wins: only taps inside the input */
                    int64_t i0, i1, j0, j1;
                    taps_inside(oh * g->sh - g->ph, g->kh, g->dh, g->h, &i0, &i1);
                    taps_inside(ow * g->sw - g->pw, g->kw, g->dw, g->w, &j0, &j1);
                    for (int64_t i = i0; i < i1; i++) {
                        int64_t ih = oh * g->sh - g->ph + i * g->dh;
                        for (int64_t j = j0; j < j1; j++) {
                            int64_t iw = ow * g->sw - g->pw + j * g->dw;
                            double v = ref_load(x, at4(x, n, c, ih, iw));
                            /* Strict > keeps the first maximum; a NaN always takes over. */
                            if (best_idx < 0 || v > best || isnan(v)) {
                                best = v;
                                best_idx = ih * g->w + iw;
                            }
                        }
                    }
                    ref_store(y, at4(y, n, c, oh, ow), best);
                    ref_store_i64(ind, at4(ind, n, c, oh, ow), best_idx);
                }
}

/* A zeroed double plane of H*W elements, or NULL when out of memory. */
static double *new_plane(const pool_geom *g) {
    size_t count = (size_t)(g->h * g->w);
    return calloc(count ? count : 1, sizeof(double));
}

static void store_plane(const pool_geom *g, const gfp_tensor *gx, int64_t n, int64_t c,
                        const double *plane) {
    for (int64_t ih = 0; ih < g->h; ih++)
        for (int64_t iw = 0; iw < g->w; iw++)
            ref_store(gx, at4(gx, n, c, ih, iw), plane[ih * g->w + iw]);
}

static gfp_status out_of_memory(const char *op, const pool_geom *g) {
    return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory for a %lldx%lld accumulation plane", op,
                    (long long)g->h, (long long)g->w);
}

static gfp_status max_pool_backward(const char *op, const pool_geom *g, const gfp_tensor *gy,
                                    const gfp_tensor *ind, const gfp_tensor *gx) {
    /* Validate every index before writing anything. */
    int64_t plane_size = g->h * g->w;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t c = 0; c < g->c; c++)
            for (int64_t oh = 0; oh < g->ho; oh++)
                for (int64_t ow = 0; ow < g->wo; ow++) {
                    int64_t k = ref_load_i64(ind, at4(ind, n, c, oh, ow));
                    if (k < -1 || k >= plane_size)
                        return pk_fail(GFP_ERR_INVALID,
                                        "%s: indices[%lld, %lld, %lld, %lld] is %lld, outside the "
                                        "input plane of %lldx%lld = %lld elements (or -1)",
                                        op, (long long)n, (long long)c, (long long)oh,
                                        (long long)ow, (long long)k, (long long)g->h,
                                        (long long)g->w, (long long)plane_size);
                }
    double *plane = new_plane(g);
    if (!plane) return out_of_memory(op, g);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t c = 0; c < g->c; c++) {
            for (int64_t k = 0; k < plane_size; k++) plane[k] = 0.0;
            for (int64_t oh = 0; oh < g->ho; oh++)
                for (int64_t ow = 0; ow < g->wo; ow++) {
                    int64_t k = ref_load_i64(ind, at4(ind, n, c, oh, ow));
                    if (k >= 0) plane[k] += ref_load(gy, at4(gy, n, c, oh, ow));
                }
            store_plane(g, gx, n, c, plane);
        }
    free(plane);
    return GFP_OK;
}

/* Clips output (oh, ow)'s window to the real input, [*h0, *h1) x [*w0, *w1),
 * and returns its divisor; 0 when the window holds no real element. */
static int64_t avg_window(const pool_geom *g, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1,
                          int64_t *w0, int64_t *w1) {
    int64_t hs = oh * g->sh - g->ph, ws = ow * g->sw - g->pw;
    /* A ceil-mode window may run past the padded edge: clip it there first. */
    int64_t he = hs + g->kh < g->h + g->ph ? hs + g->kh : g->h + g->ph;
    int64_t we = ws + g->kw < g->w + g->pw ? ws + g->kw : g->w + g->pw;
    int64_t padded = (he - hs) * (we - ws);
    hs = hs < 0 ? 0 : hs;
    ws = ws < 0 ? 0 : ws;
    he = he > g->h ? g->h : he;
    we = we > g->w ? g->w : we;
    if (hs >= he || ws >= we) return 0;
    *h0 = hs;
    *h1 = he;
    *w0 = ws;
    *w1 = we;
    return g->include_pad ? padded : (he - hs) * (we - ws);
}

static void avg_pool_forward(const pool_geom *g, const gfp_tensor *x, const gfp_tensor *y) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t c = 0; c < g->c; c++)
            for (int64_t oh = 0; oh < g->ho; oh++)
                for (int64_t ow = 0; ow < g->wo; ow++) {
                    int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0;
                    int64_t div = avg_window(g, oh, ow, &h0, &h1, &w0, &w1);
                    double acc = 0.0;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++)
                            acc += ref_load(x, at4(x, n, c, ih, iw));
                    ref_store(y, at4(y, n, c, oh, ow), div ? acc / (double)div : 0.0);
                }
}

/* The adjoint of avg_pool_forward: each grad_y element, divided by its
 * window's divisor, goes to every real element of that window. */
static gfp_status avg_pool_backward(const char *op, const pool_geom *g, const gfp_tensor *gy,
                                    const gfp_tensor *gx) {
    double *plane = new_plane(g);
    if (!plane) return out_of_memory(op, g);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t c = 0; c < g->c; c++) {
            for (int64_t k = 0; k < g->h * g->w; k++) plane[k] = 0.0;
            for (int64_t oh = 0; oh < g->ho; oh++)
                for (int64_t ow = 0; ow < g->wo; ow++) {
                    int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0;
                    int64_t div = avg_window(g, oh, ow, &h0, &h1, &w0, &w1);
                    if (!div) continue;
                    double v = ref_load(gy, at4(gy, n, c, oh, ow)) / (double)div;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) plane[ih * g->w + iw] += v;
                }
            store_plane(g, gx, n, c, plane);
        }
    free(plane);
    return GFP_OK;
}

gfp_status ref_pool_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    const char *name = pk_op_name(op);
    /* Counts and the params struct: checked by the launch preamble. */
    gfp_status st;

    pool_geom g = {0};
    switch (op) {
    case GFP_OP_MAX_POOL2D: {
        const gfp_tensor *x = in[0], *y = out[0], *ind = out[1];
        if ((st = pk_check_nchw(name, ind, "indices")) != GFP_OK) return st;
        if ((st = check_float(name, x, "x", -1)) != GFP_OK) return st;
        if ((st = pk_check_pool2d(op, params, x, "x", y, "y", &g)) != GFP_OK) return st;
        if ((st = check_float(name, y, "y", x->dtype)) != GFP_OK) return st;
        if ((st = check_indices(name, ind)) != GFP_OK) return st;
        if (!pk_same_shape(ind, y))
            return pk_fail(GFP_ERR_INVALID, "%s: indices must have the sizes of y", name);
        max_pool_forward(&g, x, y, ind);
        return GFP_OK;
    }
    case GFP_OP_MAX_POOL2D_BACKWARD: {
        /* Needs no parameters: the indices say where each gradient goes. */
        const gfp_tensor *gy = in[0], *ind = in[1], *gx = out[0];
        if ((st = pk_check_max_pool2d_backward(gy, ind, gx, &g)) != GFP_OK) return st;
        if ((st = check_float(name, gy, "grad_y", -1)) != GFP_OK) return st;
        if ((st = check_float(name, gx, "grad_x", gy->dtype)) != GFP_OK) return st;
        if ((st = check_indices(name, ind)) != GFP_OK) return st;
        return max_pool_backward(name, &g, gy, ind, gx);
    }
    case GFP_OP_AVG_POOL2D: {
        const gfp_tensor *x = in[0], *y = out[0];
        if ((st = check_float(name, x, "x", -1)) != GFP_OK) return st;
        if ((st = pk_check_pool2d(op, params, x, "x", y, "y", &g)) != GFP_OK) return st;
        if ((st = check_float(name, y, "y", x->dtype)) != GFP_OK) return st;
        avg_pool_forward(&g, x, y);
        return GFP_OK;
    }
    default: { /* GFP_OP_AVG_POOL2D_BACKWARD */
        const gfp_tensor *gy = in[0], *gx = out[0];
        if ((st = pk_check_nchw(name, gy, "grad_y")) != GFP_OK) return st;
        if ((st = pk_check_nchw(name, gx, "grad_x")) != GFP_OK) return st;
        if ((st = check_float(name, gy, "grad_y", -1)) != GFP_OK) return st;
        if ((st = check_float(name, gx, "grad_x", gy->dtype)) != GFP_OK) return st;
        if ((st = pk_check_pool2d(op, params, gx, "grad_x", gy, "grad_y", &g)) != GFP_OK) return st;
        return avg_pool_backward(name, &g, gy, gx);
    }
    }
}
