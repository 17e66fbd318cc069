/* ocl_conv.c — CONV2D and its gradients with respect to the input and the
 * weight (kernels/conv.cl), f32 and f64, NCHW, any strides.
 *
 * The geometry checks are the reference plugin's (groups, strides, padding,
 * dilation, and the output size (in + 2p - d(k-1) - 1) / s + 1). Large
 * channel counts go to the GEMM form (ocl_conv_gemm.c); the direct kernels
 * here compute each output element as one sum. */
#include <stdio.h>

#include "ocl_conv.h"

uint32_t ocl_conv_support(const ocl_device *d, const gfp_op_query *q) {
    (void)d;
    if (q->n_outputs != 1) return GFP_SUPPORT_NONE;
    bool bias_ok = q->op == GFP_OP_CONV2D;
    if (q->n_inputs != 2 && !(bias_ok && q->n_inputs == 3)) return GFP_SUPPORT_NONE;
    int32_t dt = q->input_dtypes[0];
    if (!pk_is_float(dt)) return GFP_SUPPORT_NONE;
    for (uint32_t i = 1; i < q->n_inputs; i++)
        if (!(i == 2 && q->input_dtypes[i] == -1) && q->input_dtypes[i] != dt)
            return GFP_SUPPORT_NONE;
    return q->output_dtypes[0] == dt ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
}

static gfp_status rank4(const char *op, const gfp_tensor *t, const char *name) {
    if (!t) return pk_fail(GFP_ERR_INVALID, "%s: %s is NULL", op, name);
    if (t->rank != 4)
        return pk_fail(GFP_ERR_INVALID, "%s: %s must be rank 4, got rank %d", op, name,
                        (int)t->rank);
    return GFP_OK;
}

/* x input-shaped [N, Ci, H, W], w weight-shaped, y output-shaped. */
static gfp_status geometry(const char *op, const void *params, const gfp_tensor *x,
                           const gfp_tensor *w, const gfp_tensor *y, conv_geom *g) {
    gfp_status st = pk_check_params(params, GFP_CONV2D_PARAMS_SIZE_V1_0, op);
    if (st != GFP_OK) return st;
    const gfp_conv2d_params *p = params;
    if (p->groups < 1) return pk_fail(GFP_ERR_INVALID, "%s: groups is %d; it must be >= 1", op, (int)p->groups);
    for (int a = 0; a < 2; a++)
        if (p->stride[a] < 1 || p->dilation[a] < 1 || p->padding[a] < 0)
            return pk_fail(GFP_ERR_INVALID, "%s: stride %d, dilation %d and padding %d of "
                            "axis %d: strides and dilations must be >= 1, padding >= 0", op,
                            (int)p->stride[a], (int)p->dilation[a], (int)p->padding[a], a);
    g->groups = p->groups;
    g->sh = p->stride[0];
    g->sw = p->stride[1];
    g->ph = p->padding[0];
    g->pw = p->padding[1];
    g->dh = p->dilation[0];
    g->dw = p->dilation[1];
    g->n = x->sizes[0];
    g->ci = x->sizes[1];
    g->h = x->sizes[2];
    g->w = x->sizes[3];
    g->co = w->sizes[0];
    g->kh = w->sizes[2];
    g->kw = w->sizes[3];
    if (g->ci % g->groups || g->co % g->groups)
        return pk_fail(GFP_ERR_INVALID, "%s: %lld input and %lld output channels must both be "
                        "divisible by groups = %lld", op, (long long)g->ci, (long long)g->co,
                        (long long)g->groups);
    g->cig = g->ci / g->groups;
    g->cog = g->co / g->groups;
    if (w->sizes[1] != g->cig || g->kh < 1 || g->kw < 1)
        return pk_fail(GFP_ERR_INVALID, "%s: the weight must be [Co, Ci/groups = %lld, kh >= 1, "
                        "kw >= 1], got [%lld, %lld, %lld, %lld]", op, (long long)g->cig,
                        (long long)w->sizes[0], (long long)w->sizes[1], (long long)w->sizes[2],
                        (long long)w->sizes[3]);
    int64_t span_h = g->h + 2 * g->ph - g->dh * (g->kh - 1) - 1;
    int64_t span_w = g->w + 2 * g->pw - g->dw * (g->kw - 1) - 1;
    if (span_h < 0 || span_w < 0)
        return pk_fail(GFP_ERR_INVALID, "%s: the dilated kernel is larger than the padded input",
                        op);
    g->ho = span_h / g->sh + 1;
    g->wo = span_w / g->sw + 1;
    const int64_t *ys = y->sizes;
    if (ys[0] != g->n || ys[1] != g->co || ys[2] != g->ho || ys[3] != g->wo)
        return pk_fail(GFP_ERR_INVALID, "%s: the output-shaped tensor is [%lld, %lld, %lld, "
                        "%lld]; this geometry needs [%lld, %lld, %lld, %lld]", op,
                        (long long)ys[0], (long long)ys[1], (long long)ys[2], (long long)ys[3],
                        (long long)g->n, (long long)g->co, (long long)g->ho, (long long)g->wo);
    return GFP_OK;
}

static void arg_t4(ocl_call *c, const gfp_tensor *t) {
    ocl_arg_mem(c, ocl_mem(t));
    ocl_arg_i64(c, ocl_elem_offset(t));
    cl_long4 s = {{t->strides[0], t->strides[1], t->strides[2], t->strides[3]}};
    ocl_arg_raw(c, sizeof s, &s);
}

static void arg_geom(ocl_call *c, const conv_geom *g) {
    int64_t g0[8] = {g->n, g->ci, g->h, g->w, g->co, g->kh, g->kw, g->ho};
    int64_t g1[8] = {g->wo, g->cig, g->cog, g->sh, g->sw, g->ph, g->pw, g->dh};
    ocl_arg_long8(c, g0, 8);
    ocl_arg_long8(c, g1, 8);
    ocl_arg_i64(c, g->dw);
}

gfp_status ocl_conv_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params) {
    const char *name = pk_op_name(op);
    if (op == GFP_OP_CONV2D ? (n_in != 2 && n_in != 3) || n_out != 1 : n_in != 2 || n_out != 1)
        return pk_fail(GFP_ERR_INVALID, "%s: takes %s input(s) and 1 output, got %u and %u",
                        name, op == GFP_OP_CONV2D ? "2 or 3" : "2", (unsigned)n_in,
                        (unsigned)n_out);
    /* Roles: the input-shaped, weight-shaped and output-shaped tensors. */
    const gfp_tensor *x, *w, *y, *bias = NULL;
    const char *xn, *wn, *yn;
    if (op == GFP_OP_CONV2D) {
        x = in[0], w = in[1], y = out[0], bias = n_in == 3 ? in[2] : NULL;
        xn = "x", wn = "w", yn = "y";
    } else if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
        x = out[0], w = in[1], y = in[0];
        xn = "grad_x", wn = "w", yn = "grad_y";
    } else {
        x = in[1], w = out[0], y = in[0];
        xn = "x", wn = "grad_w", yn = "grad_y";
    }
    gfp_status st;
    if ((st = rank4(name, x, xn)) != GFP_OK || (st = rank4(name, w, wn)) != GFP_OK ||
        (st = rank4(name, y, yn)) != GFP_OK)
        return st;
    int32_t dt = x->dtype;
    if (!pk_is_float(dt) || w->dtype != dt || y->dtype != dt || (bias && bias->dtype != dt))
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: takes f32 or f64, every tensor alike (%s is %s, "
                        "%s %s, %s %s)", name, xn, pk_dtype_name(dt), wn,
                        pk_dtype_name(w->dtype), yn, pk_dtype_name(y->dtype));
    conv_geom g = {0};
    if ((st = geometry(name, params, x, w, y, &g)) != GFP_OK) return st;
    if (bias && (bias->rank != 1 || bias->sizes[0] != g.co))
        return pk_fail(GFP_ERR_INVALID, "%s: bias must be rank 1 with Co = %lld elements", name,
                        (long long)g.co);
    bool taken = false;
    st = ocl_conv_gemm(d, op, x, w, y, bias, &g, &taken);
    if (taken) return st;
    char kname[48];
    snprintf(kname, sizeof kname, "%s_%s", name, dt == GFP_F64 ? "f64" : "f32");
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_CONV, kname, name);
    int64_t n;
    if (op == GFP_OP_CONV2D) {
        arg_t4(&c, x);
        arg_t4(&c, w);
        ocl_arg_mem(&c, bias ? ocl_mem(bias) : d->flag);
        ocl_arg_i64(&c, bias ? ocl_elem_offset(bias) : 0);
        ocl_arg_i64(&c, bias ? bias->strides[0] : 0);
        ocl_arg_i32(&c, bias != NULL);
        arg_t4(&c, y);
        n = g.n * g.co * g.ho * g.wo;
    } else if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
        arg_t4(&c, y);
        arg_t4(&c, w);
        arg_t4(&c, x);
        n = g.n * g.ci * g.h * g.w;
    } else {
        arg_t4(&c, y);
        arg_t4(&c, x);
        arg_t4(&c, w);
        n = g.co * g.cig * g.kh * g.kw;
    }
    arg_geom(&c, &g);
    return n ? ocl_call_run1(&c, (uint64_t)n, 64) : c.st;
}
