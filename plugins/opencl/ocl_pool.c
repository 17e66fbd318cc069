/* ocl_pool.c — MAX_POOL2D, AVG_POOL2D and their gradients (kernels/pool.cl),
 * f32 and f64, NCHW, any strides.
 *
 * Parameter checks and the output size (floor or ceil of (in + 2p - d(k-1) -
 * 1) / s, plus 1; in ceil mode the last window must start inside the input or
 * its left padding) are the reference plugin's. max_pool2d_backward checks
 * its indices (-1 or inside the plane) before writing anything, like the
 * reference, then zeroes grad_x and adds each gradient at its argmax. */
#include <stdio.h>

#include "ocl_internal.h"

uint32_t ocl_pool_support(const ocl_device *d, const gfp_op_query *q) {
    int32_t dt = q->input_dtypes[0];
    if (!pk_is_float(dt)) return GFP_SUPPORT_NONE;
    bool ok;
    switch (q->op) {
    case GFP_OP_MAX_POOL2D:
        ok = q->n_inputs == 1 && q->n_outputs == 2 && q->output_dtypes[0] == dt &&
             q->output_dtypes[1] == GFP_I64;
        break;
    case GFP_OP_MAX_POOL2D_BACKWARD:
        /* f64 gradients add with 64-bit atomics. */
        ok = q->n_inputs == 2 && q->n_outputs == 1 && q->input_dtypes[1] == GFP_I64 &&
             q->output_dtypes[0] == dt && (dt == GFP_F32 || d->int64_atomics);
        break;
    default: ok = q->n_inputs == 1 && q->n_outputs == 1 && q->output_dtypes[0] == dt; break;
    }
    return ok ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
}

typedef struct pool_geom {
    int64_t n, c, h, w, ho, wo, kh, kw, sh, sw, ph, pw, dh, dw, ceil_mode, incl;
} pool_geom;

static gfp_status params_of(const char *op, const void *params, bool is_max, pool_geom *g) {
    gfp_status st = pk_check_params(params, GFP_POOL2D_PARAMS_SIZE_V1_0, op);
    if (st != GFP_OK) return st;
    const gfp_pool2d_params *p = params;
    for (int a = 0; a < 2; a++) {
        if (p->kernel[a] < 1 || p->stride[a] < 1 || p->padding[a] < 0)
            return pk_fail(GFP_ERR_INVALID, "%s: kernel %d, stride %d and padding %d of axis %d: "
                            "kernel sizes and strides must be >= 1, padding >= 0", op,
                            (int)p->kernel[a], (int)p->stride[a], (int)p->padding[a], a);
        if (p->padding[a] > p->kernel[a] / 2)
            return pk_fail(GFP_ERR_INVALID, "%s: padding[%d] is %d but kernel[%d] is %d; padding "
                            "must be at most half the kernel size", op, a, (int)p->padding[a], a,
                            (int)p->kernel[a]);
        if (is_max && p->dilation[a] < 1)
            return pk_fail(GFP_ERR_INVALID, "%s: dilation[%d] is %d; it must be >= 1", op, a,
                            (int)p->dilation[a]);
    }
    g->kh = p->kernel[0];
    g->kw = p->kernel[1];
    g->sh = p->stride[0];
    g->sw = p->stride[1];
    g->ph = p->padding[0];
    g->pw = p->padding[1];
    g->dh = is_max ? p->dilation[0] : 1;
    g->dw = is_max ? p->dilation[1] : 1;
    g->ceil_mode = p->ceil_mode != 0;
    g->incl = p->count_include_pad != 0;
    return GFP_OK;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
    int64_t out = floor_div(in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p) out--;
    return out;
}

static gfp_status rank4(const char *op, const gfp_tensor *t, const char *name) {
    if (!t) return pk_fail(GFP_ERR_INVALID, "%s: %s is NULL", op, name);
    if (t->rank != 4)
        return pk_fail(GFP_ERR_INVALID, "%s: %s must be rank 4 [N, C, H, W], got rank %d", op,
                        name, (int)t->rank);
    return GFP_OK;
}

/* x input-shaped, y output-shaped: sizes into g, y checked against them. */
static gfp_status shapes(const char *op, const gfp_tensor *x, const gfp_tensor *y, pool_geom *g) {
    gfp_status st;
    if ((st = rank4(op, x, "the input")) != GFP_OK || (st = rank4(op, y, "the output")) != GFP_OK)
        return st;
    g->n = x->sizes[0];
    g->c = x->sizes[1];
    g->h = x->sizes[2];
    g->w = x->sizes[3];
    g->ho = out_size(g->h, g->kh, g->sh, g->ph, g->dh, g->ceil_mode);
    g->wo = out_size(g->w, g->kw, g->sw, g->pw, g->dw, g->ceil_mode);
    if (g->ho < 1 || g->wo < 1)
        return pk_fail(GFP_ERR_INVALID, "%s: the input %lldx%lld is too small for this kernel "
                        "(output %lldx%lld)", op, (long long)g->h, (long long)g->w,
                        (long long)g->ho, (long long)g->wo);
    const int64_t *ys = y->sizes;
    if (ys[0] != g->n || ys[1] != g->c || ys[2] != g->ho || ys[3] != g->wo)
        return pk_fail(GFP_ERR_INVALID, "%s: the output-shaped tensor is [%lld, %lld, %lld, "
                        "%lld]; this geometry needs [%lld, %lld, %lld, %lld]", op,
                        (long long)ys[0], (long long)ys[1], (long long)ys[2], (long long)ys[3],
                        (long long)g->n, (long long)g->c, (long long)g->ho, (long long)g->wo);
    return GFP_OK;
}

static void arg_t4(ocl_call *c, const gfp_tensor *t) {
    ocl_arg_mem(c, ocl_mem(t));
    ocl_arg_i64(c, ocl_elem_offset(t));
    cl_long4 s = {{t->strides[0], t->strides[1], t->strides[2], t->strides[3]}};
    ocl_arg_raw(c, sizeof s, &s);
}

static void arg_g(ocl_call *c, const pool_geom *g) {
    int64_t v[8] = {g->n, g->c, g->h, g->w, g->ho, g->wo, g->kh, g->kw};
    ocl_arg_long8(c, v, 8);
}
static void arg_h(ocl_call *c, const pool_geom *g) {
    int64_t v[8] = {g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, g->ceil_mode, g->incl};
    ocl_arg_long8(c, v, 8);
}

static gfp_status float_dtypes(const char *op, const gfp_tensor *a, const gfp_tensor *b) {
    if (!pk_is_float(a->dtype) || b->dtype != a->dtype)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: takes f32 or f64, input and output alike "
                        "(got %s and %s)", op, pk_dtype_name(a->dtype), pk_dtype_name(b->dtype));
    return GFP_OK;
}

static gfp_status run(ocl_device *d, const char *stem, int32_t dt, const char *op,
                      const gfp_tensor *const *t4, int n_t4, const pool_geom *g, bool with_h,
                      int64_t n) {
    char kname[48];
    snprintf(kname, sizeof kname, "%s_%s", stem, dt == GFP_F64 ? "f64" : "f32");
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_POOL, kname, op);
    for (int i = 0; i < n_t4; i++) arg_t4(&c, t4[i]);
    arg_g(&c, g);
    if (with_h) arg_h(&c, g);
    return n ? ocl_call_run1(&c, (uint64_t)n, 64) : c.st;
}

/* The row kernels (max_pool2d for windows other than 2x2 and 3x3,
 * pool_zero, max_pool2d_backward, the index check): an item per row of
 * `rows` rows of each of the N * C planes. */
static gfp_status run_rows(ocl_call *c, const pool_geom *g, int64_t rows) {
    if (rows == 0 || g->n * g->c == 0) return c->st;
    size_t wg = c->dev->max_wg < 64 ? c->dev->max_wg : 64;
    size_t global[2] = {(size_t)rows, (size_t)(g->n * g->c)}, local[2] = {1, wg};
    return ocl_call_run(c, 2, global, local);
}

/* The element kernels (max_pool2d_kK): an item per element of a cols x rows
 * plane, for each of the N * C planes; rows of the plane in work-groups of
 * up to 64 items. */
static gfp_status run_planes(ocl_call *c, const pool_geom *g, int64_t rows, int64_t cols) {
    size_t wg = cols < 16 ? (size_t)cols : 16;
    if (wg > c->dev->max_wg) wg = c->dev->max_wg;
    size_t nr = wg ? 64 / wg : 1;
    if (nr > (size_t)rows) nr = (size_t)rows;
    if (nr < 1 || nr * wg > c->dev->max_wg) nr = 1;
    size_t global[3] = {(size_t)cols, (size_t)rows, (size_t)(g->n * g->c)}, local[3] = {wg, nr, 1};
    if (cols == 0 || rows == 0 || g->n * g->c == 0) return c->st;
    return ocl_call_run(c, 3, global, local);
}

static gfp_status run_e(ocl_device *d, const char *stem, int32_t dt, const char *op,
                        const gfp_tensor *const *t4, int n_t4, const pool_geom *g, bool with_h,
                        int64_t rows, int64_t cols) {
    char kname[48];
    snprintf(kname, sizeof kname, "%s_%s", stem, dt == GFP_F64 ? "f64" : "f32");
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_POOL, kname, op);
    for (int i = 0; i < n_t4; i++) arg_t4(&c, t4[i]);
    arg_g(&c, g);
    if (with_h) arg_h(&c, g);
    return run_planes(&c, g, rows, cols);
}

static gfp_status run_r(ocl_device *d, const char *stem, int32_t dt, const char *op,
                        const gfp_tensor *const *t4, int n_t4, const pool_geom *g, bool with_h,
                        int64_t rows) {
    char kname[48];
    snprintf(kname, sizeof kname, "%s_%s", stem, dt == GFP_F64 ? "f64" : "f32");
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_POOL, kname, op);
    for (int i = 0; i < n_t4; i++) arg_t4(&c, t4[i]);
    arg_g(&c, g);
    if (with_h) arg_h(&c, g);
    return run_rows(&c, g, rows);
}

gfp_status ocl_pool_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params) {
    const char *name = pk_op_name(op);
    uint32_t want_in = op == GFP_OP_MAX_POOL2D_BACKWARD ? 2 : 1;
    uint32_t want_out = op == GFP_OP_MAX_POOL2D ? 2 : 1;
    gfp_status st = pk_expect_counts(n_in, want_in, n_out, want_out, name);
    if (st != GFP_OK) return st;
    pool_geom g = {0};
    switch (op) {
    case GFP_OP_MAX_POOL2D: {
        const gfp_tensor *x = in[0], *y = out[0], *ind = out[1];
        if ((st = params_of(name, params, true, &g)) != GFP_OK ||
            (st = shapes(name, x, y, &g)) != GFP_OK || (st = float_dtypes(name, x, y)) != GFP_OK)
            return st;
        if (ind->dtype != GFP_I64 || !pk_same_shape(ind, y))
            return pk_fail(GFP_ERR_INVALID, "%s: indices must be i64 with the output's sizes", name);
        const gfp_tensor *t[3] = {x, y, ind};
        if (g.kh == g.kw && (g.kh == 2 || g.kh == 3))
            return run_e(d, g.kh == 2 ? "max_pool2d_k2" : "max_pool2d_k3", x->dtype, name, t, 3,
                         &g, true, g.ho, g.wo);
        return run_r(d, "max_pool2d", x->dtype, name, t, 3, &g, true, g.ho);
    }
    case GFP_OP_MAX_POOL2D_BACKWARD: {
        /* No parameters: the indices say where each gradient goes. */
        const gfp_tensor *gy = in[0], *ind = in[1], *gx = out[0];
        if ((st = rank4(name, gy, "grad_y")) != GFP_OK || (st = rank4(name, ind, "indices")) != GFP_OK ||
            (st = rank4(name, gx, "grad_x")) != GFP_OK || (st = float_dtypes(name, gy, gx)) != GFP_OK)
            return st;
        if (ind->dtype != GFP_I64 || !pk_same_shape(gy, ind) || gy->sizes[0] != gx->sizes[0] ||
            gy->sizes[1] != gx->sizes[1])
            return pk_fail(GFP_ERR_INVALID, "%s: indices must be i64 with grad_y's sizes, and "
                            "grad_y and grad_x must agree on N and C", name);
        if (gy->dtype == GFP_F64 && !d->int64_atomics)
            return pk_fail(GFP_ERR_UNSUPPORTED, "%s: f64 needs cl_khr_int64_base_atomics, which "
                            "device '%s' lacks", name, d->name);
        g.n = gx->sizes[0];
        g.c = gx->sizes[1];
        g.h = gx->sizes[2];
        g.w = gx->sizes[3];
        g.ho = gy->sizes[2];
        g.wo = gy->sizes[3];
        int64_t n_out_el = g.n * g.c * g.ho * g.wo;
        if (n_out_el > 0) {
            /* Every index checked before anything is written. */
            ocl_call c;
            ocl_call_begin(&c, d, OCL_PROG_POOL, "check_pool_index", name);
            arg_t4(&c, ind);
            arg_g(&c, &g);
            ocl_arg_mem(&c, d->flag);
            st = run_rows(&c, &g, g.ho);
            bool bad = false;
            int64_t v = 0;
            if (st == GFP_OK) st = ocl_read_flag(d, name, &bad, &v);
            if (st != GFP_OK) return st;
            if (bad)
                return pk_fail(GFP_ERR_INVALID, "%s: an index is %lld, outside the input plane "
                                "of %lldx%lld elements (or -1)", name, (long long)v,
                                (long long)g.h, (long long)g.w);
        }
        /* grad_x zeroed: a fill when it is one dense block, else by rows. */
        const gfp_tensor *tz[1] = {gx};
        ocl_geom gz;
        ocl_geom_init(&gz, tz, 1);
        size_t es = pk_dtype_size(gx->dtype);
        if (gz.contiguous && gx->offset % es == 0) {
            const double zero = 0.0; /* all bits 0: 0.0 in f32 and f64 */
            cl_int err = gz.numel == 0 ? CL_SUCCESS
                                       : ocl.EnqueueFillBuffer(d->queue, ocl_mem(gx), &zero, es,
                                                               (size_t)gx->offset,
                                                               (size_t)gz.numel * es, 0, NULL,
                                                               NULL);
            st = err == CL_SUCCESS ? GFP_OK : ocl_cl_fail(err, name, "clEnqueueFillBuffer");
        } else {
            st = run_r(d, "pool_zero", gy->dtype, name, tz, 1, &g, false, g.h);
        }
        const gfp_tensor *t[3] = {gy, ind, gx};
        if (st == GFP_OK)
            st = run_r(d, "max_pool2d_backward", gy->dtype, name, t, 3, &g, false, g.ho);
        return st;
    }
    case GFP_OP_AVG_POOL2D: {
        const gfp_tensor *x = in[0], *y = out[0];
        if ((st = params_of(name, params, false, &g)) != GFP_OK ||
            (st = shapes(name, x, y, &g)) != GFP_OK || (st = float_dtypes(name, x, y)) != GFP_OK)
            return st;
        const gfp_tensor *t[2] = {x, y};
        return run(d, "avg_pool2d", x->dtype, name, t, 2, &g, true, g.n * g.c * g.ho * g.wo);
    }
    default: { /* GFP_OP_AVG_POOL2D_BACKWARD */
        const gfp_tensor *gy = in[0], *gx = out[0];
        if ((st = params_of(name, params, false, &g)) != GFP_OK ||
            (st = shapes(name, gx, gy, &g)) != GFP_OK || (st = float_dtypes(name, gy, gx)) != GFP_OK)
            return st;
        const gfp_tensor *t[2] = {gy, gx};
        return run(d, "avg_pool2d_backward", gy->dtype, name, t, 2, &g, true,
                   g.n * g.c * g.h * g.w);
    }
    }
}
