/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_conv.c — 2-D convolution (NCHW) and its two gradient kernels.
 *
 * Every kernel is written in gather form: each output element is one sum,
 * accumulated in double and stored once. That keeps the oracle free of
 * accumulation-order effects in the output dtype, and it writes every output
 * element (no separate zeroing pass). Any strides are honoured: the
 * operands are read once into dense double arrays (ref_dense_f64), the
 * output is stored through ref_offset.
 *
 * Geometry (as PyTorch): with kernel k, stride s, padding p, dilation d,
 *   out = (in + 2p - d(k-1) - 1) / s + 1,
 * and input row ih = oh*s - p + i*d feeds output row oh through kernel row i. */
#include <stdlib.h>

#include "ref_internal.h"

uint32_t ref_conv_support(const gfp_op_query *q) {
    return pk_conv_dtypes_ok(q, REF_DT_FLOAT) ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
}

/* Everything a kernel needs, validated by the kit (plugin_kit.h). */
typedef pk_conv2d_geom conv_geom;
typedef pk_conv2d_roles conv_roles;

/* All tensors share one float dtype: the reference computes in f32 and f64. */
static gfp_status check_dtypes(const char *op, const gfp_tensor *const *ts, const char *const *names,
                               int count) {
    int32_t dt = ts[0]->dtype;
    if (!ref_is_float(dt))
        return pk_fail(GFP_ERR_UNSUPPORTED,
                        "%s: dtype %s (of %s) is not supported; the reference plugin computes "
                        "convolutions in f32 and f64",
                        op, pk_dtype_name(dt), names[0]);
    for (int i = 1; i < count; i++) {
        if (ts[i] && ts[i]->dtype != dt)
            return pk_fail(GFP_ERR_UNSUPPORTED,
                            "%s: %s is %s but %s is %s; all tensors must share one dtype "
                            "(f32 or f64)",
                            op, names[i], pk_dtype_name(ts[i]->dtype), names[0], pk_dtype_name(dt));
    }
    return GFP_OK;
}

static int64_t at4(const gfp_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d) {
    const int64_t idx[4] = {a, b, c, d};
    return ref_offset(t, idx);
}

/* Dense double copies of a kernel's operands (ref_dense_f64): every input
 * element is read many times, each time the same value ref_load gives. */
#define X4(g, a, b, c, d) ((((a) * (g)->ci + (b)) * (g)->h + (c)) * (g)->w + (d))
#define W4(g, a, b, c, d) ((((a) * (g)->cig + (b)) * (g)->kh + (c)) * (g)->kw + (d))
#define Y4(g, a, b, c, d) ((((a) * (g)->co + (b)) * (g)->ho + (c)) * (g)->wo + (d))

/* y[n, co, oh, ow] = bias[co] + sum over the group's input channels and the
 * kernel taps that land inside the input. */
static void conv2d_forward(const conv_geom *g, const double *x, const double *w,
                           const gfp_tensor *b, const gfp_tensor *y) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t co = 0; co < g->co; co++) {
            int64_t ci0 = (co / g->cog) * g->cig; /* first input channel of co's group */
            double bias = b ? ref_load(b, co * b->strides[0]) : 0.0;
            for (int64_t oh = 0; oh < g->ho; oh++)
                for (int64_t ow = 0; ow < g->wo; ow++) {
                    double acc = bias;
                    for (int64_t c = 0; c < g->cig; c++)
                        for (int64_t i = 0; i < g->kh; i++) {
                            int64_t ih = oh * g->sh - g->ph + i * g->dh;
                            if (ih < 0 || ih >= g->h) continue;
                            for (int64_t j = 0; j < g->kw; j++) {
                                int64_t iw = ow * g->sw - g->pw + j * g->dw;
                                if (iw < 0 || iw >= g->w) continue;
                                acc += x[X4(g, n, ci0 + c, ih, iw)] * w[W4(g, co, c, i, j)];
                            }
                        }
                    ref_store(y, at4(y, n, co, oh, ow), acc);
                }
        }
}

/* grad_x[n, ci, ih, iw] = sum of grad_y[n, co, oh, ow] * w[co, c, i, j] over
 * the (co, i, j) whose tap lands on (ih, iw): ih = oh*s - p + i*d for an
 * integer oh in [0, Ho). Elements no tap reaches get 0. */
static void conv2d_backward_input(const conv_geom *g, const double *gy, const double *w,
                                  const gfp_tensor *gx) {
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t ci = 0; ci < g->ci; ci++) {
            int64_t grp = ci / g->cig, c = ci % g->cig;
            for (int64_t ih = 0; ih < g->h; ih++)
                for (int64_t iw = 0; iw < g->w; iw++) {
                    double acc = 0.0;
                    for (int64_t co = grp * g->cog; co < (grp + 1) * g->cog; co++)
                        for (int64_t i = 0; i < g->kh; i++) {
                            int64_t th = ih + g->ph - i * g->dh; /* = oh * sh */
                            if (th < 0 || th % g->sh != 0 || th / g->sh >= g->ho) continue;
                            int64_t oh = th / g->sh;
                            for (int64_t j = 0; j < g->kw; j++) {
                                int64_t tw = iw + g->pw - j * g->dw;
                                if (tw < 0 || tw % g->sw != 0 || tw / g->sw >= g->wo) continue;
                                int64_t ow = tw / g->sw;
                                acc += gy[Y4(g, n, co, oh, ow)] * w[W4(g, co, c, i, j)];
                            }
                        }
                    ref_store(gx, at4(gx, n, ci, ih, iw), acc);
                }
        }
}

/* grad_w[co, c, i, j] = sum over n, oh, ow of grad_y[n, co, oh, ow] *
 * x[n, ci0 + c, oh*s - p + i*d, ...] for taps inside the input. */
static void conv2d_backward_weight(const conv_geom *g, const double *gy, const double *x,
                                   const gfp_tensor *gw) {
    for (int64_t co = 0; co < g->co; co++) {
        int64_t ci0 = (co / g->cog) * g->cig;
        for (int64_t c = 0; c < g->cig; c++)
            for (int64_t i = 0; i < g->kh; i++)
                for (int64_t j = 0; j < g->kw; j++) {
                    double acc = 0.0;
                    for (int64_t n = 0; n < g->n; n++)
                        for (int64_t oh = 0; oh < g->ho; oh++) {
                            int64_t ih = oh * g->sh - g->ph + i * g->dh;
                            if (ih < 0 || ih >= g->h) continue;
                            for (int64_t ow = 0; ow < g->wo; ow++) {
                                int64_t iw = ow * g->sw - g->pw + j * g->dw;
                                if (iw < 0 || iw >= g->w) continue;
                                acc += gy[Y4(g, n, co, oh, ow)] * x[X4(g, n, ci0 + c, ih, iw)];
                            }
                        }
                    ref_store(gw, at4(gw, co, c, i, j), acc);
                }
    }
}

gfp_status ref_conv_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    const char *name = pk_op_name(op);
    /* Counts, absent inputs and the params struct: the launch preamble. */
    (void)n_out;
    gfp_status st;
    conv_roles r;
    const gfp_tensor *bias = NULL;
    switch (op) {
    case GFP_OP_CONV2D:
        r = (conv_roles){in[0], in[1], out[0], "x", "w", "y"};
        bias = n_in == 3 ? in[2] : NULL;
        break;
    case GFP_OP_CONV2D_BACKWARD_INPUT:
        r = (conv_roles){out[0], in[1], in[0], "grad_x", "w", "grad_y"};
        break;
    default: /* GFP_OP_CONV2D_BACKWARD_WEIGHT */
        r = (conv_roles){in[1], out[0], in[0], "x", "grad_w", "grad_y"};
        break;
    }
    const gfp_tensor *const ts[4] = {r.x, r.w, r.y, bias};
    const char *const names[4] = {r.xname, r.wname, r.yname, "bias"};
    if ((st = check_dtypes(name, ts, names, 4)) != GFP_OK) return st;
    conv_geom g = {0};
    if ((st = pk_check_conv2d(op, params, &r, &g)) != GFP_OK) return st;
    if (bias && (bias->rank != 1 || bias->sizes[0] != g.co))
        return pk_fail(GFP_ERR_INVALID,
                        "%s: bias must be rank 1 with Co = %lld elements, got rank %d with "
                        "%lld elements",
                        name, (long long)g.co, (int)bias->rank, (long long)pk_numel(bias));

    /* The two operands of the op, as dense doubles. */
    const gfp_tensor *ops[2] = {r.x, r.w};
    if (op == GFP_OP_CONV2D_BACKWARD_INPUT) ops[0] = r.y;
    else if (op == GFP_OP_CONV2D_BACKWARD_WEIGHT) ops[1] = r.y;
    double *d0 = ref_dense_f64(ops[0]), *d1 = d0 ? ref_dense_f64(ops[1]) : NULL;
    if (!d1) {
        free(d0);
        return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                       "%s: out of host memory for double copies of the operands (%lld and "
                       "%lld elements)",
                       name, (long long)pk_numel(ops[0]), (long long)pk_numel(ops[1]));
    }
    switch (op) {
    case GFP_OP_CONV2D: conv2d_forward(&g, d0, d1, bias, r.y); break;
    case GFP_OP_CONV2D_BACKWARD_INPUT: conv2d_backward_input(&g, d0, d1, r.x); break;
    default: conv2d_backward_weight(&g, d1, d0, r.w); break;
    }
    free(d0);
    free(d1);
    return GFP_OK;
}
