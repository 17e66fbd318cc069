/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_conv.c — CONV2D and its gradients with respect to the input and the
 * weight (kernels/conv.cl), f32 and f64 (f16 and bf16 through f32 copies:
 * ocl_half.c), NCHW, any strides.
 *
 * The geometry checks are the plugin kit's (groups, strides, padding,
 * dilation, and the output size (in + 2p - d(k-1) - 1) / s + 1). Large
 * channel counts go to the GEMM form (ocl_conv_gemm.c); the direct kernels
 * here compute each output element as one sum. */
#include <stdio.h>

#include "ocl_conv.h"

static uint32_t support_f32(const ocl_device *d, const gfp_op_query *q) {
    (void)d;
    return pk_conv_dtypes_ok(q, PK_DT_FLOAT) ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
}

/* f16 and bf16 through f32 copies (ocl_half.c). */
uint32_t ocl_conv_support(const ocl_device *d, const gfp_op_query *q) {
    return ocl_half_widened_support(d, q, support_f32);
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
    if (pk_widen_operands(in, n_in, out, n_out))
        return ocl_half_widened_launch(d, op, in, n_in, out, n_out, params, ocl_conv_launch);
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
    int32_t dt = x->dtype;
    if (!pk_is_float(dt) || w->dtype != dt || y->dtype != dt || (bias && bias->dtype != dt))
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: takes f32 or f64, every tensor alike (%s is %s, "
                        "%s %s, %s %s)", name, xn, pk_dtype_name(dt), wn,
                        pk_dtype_name(w->dtype), yn, pk_dtype_name(y->dtype));
    conv_geom g = {0};
    const pk_conv2d_roles roles = {x, w, y, xn, wn, yn};
    if ((st = pk_check_conv2d(op, params, &roles, &g)) != GFP_OK) return st;
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
