/* ref_conv.c — 2-D convolution (NCHW) and its two gradient kernels.
 *
 * Every kernel is written in gather form: each output element is one sum,
 * accumulated in double and stored once. That keeps the oracle free of
 * accumulation-order effects in the output dtype, and it writes every output
 * element (no separate zeroing pass). Any strides are honoured through
 * ref_offset.
 *
 * Geometry (as PyTorch): with kernel k, stride s, padding p, dilation d,
 *   out = (in + 2p - d(k-1) - 1) / s + 1,
 * and input row ih = oh*s - p + i*d feeds output row oh through kernel row i. */
#include "ref_internal.h"

static const char *op_name(uint32_t op) {
    switch (op) {
    case GFP_OP_CONV2D: return "conv2d";
    case GFP_OP_CONV2D_BACKWARD_INPUT: return "conv2d_backward_input";
    case GFP_OP_CONV2D_BACKWARD_WEIGHT: return "conv2d_backward_weight";
    default: return "conv";
    }
}

bool ref_conv_handles(uint32_t op) {
    return op == GFP_OP_CONV2D || op == GFP_OP_CONV2D_BACKWARD_INPUT ||
           op == GFP_OP_CONV2D_BACKWARD_WEIGHT;
}

uint32_t ref_conv_support(const gfp_op_query *q) {
    if (!q || !ref_conv_handles(q->op) || q->n_outputs != 1) return GFP_SUPPORT_NONE;
    bool bias_ok = q->op == GFP_OP_CONV2D; /* only conv2d has an optional third input */
    if (q->n_inputs != 2 && !(bias_ok && q->n_inputs == 3)) return GFP_SUPPORT_NONE;
    int32_t dt = q->input_dtypes[0];
    if (!ref_is_float(dt)) return GFP_SUPPORT_NONE;
    for (uint32_t i = 1; i < q->n_inputs; i++) {
        if (i == 2 && q->input_dtypes[i] == -1) continue; /* absent bias */
        if (q->input_dtypes[i] != dt) return GFP_SUPPORT_NONE;
    }
    if (q->output_dtypes[0] != dt) return GFP_SUPPORT_NONE;
    return GFP_SUPPORT_STRIDED;
}

/* Everything a kernel needs, validated. */
typedef struct conv_geom {
    int64_t n, ci, co, h, w, kh, kw, ho, wo;
    int64_t groups, cig, cog; /* cig/cog: channels per group */
    int64_t sh, sw, ph, pw, dh, dw;
} conv_geom;

/* The three tensors of every conv op, by role: the input-shaped one
 * [N, Ci, H, W], the weight-shaped one [Co, Ci/g, kh, kw] and the
 * output-shaped one [N, Co, Ho, Wo]. Names are for messages. */
typedef struct conv_roles {
    const gfp_tensor *x, *w, *y;
    const char *xname, *wname, *yname;
} conv_roles;

static gfp_status check_conv_params(const char *op, const void *params, conv_geom *g) {
    gfp_status st = ref_check_params(params, GFP_CONV2D_PARAMS_SIZE_V1_0, op);
    if (st != GFP_OK) return st;
    const gfp_conv2d_params *p = params;
    if (p->groups < 1)
        return ref_fail(GFP_ERR_INVALID, "%s: groups is %d; it must be >= 1", op, (int)p->groups);
    for (int a = 0; a < 2; a++) {
        if (p->stride[a] < 1)
            return ref_fail(GFP_ERR_INVALID, "%s: stride[%d] is %d; strides must be >= 1", op, a,
                            (int)p->stride[a]);
        if (p->dilation[a] < 1)
            return ref_fail(GFP_ERR_INVALID, "%s: dilation[%d] is %d; dilations must be >= 1", op,
                            a, (int)p->dilation[a]);
        if (p->padding[a] < 0)
            return ref_fail(GFP_ERR_INVALID, "%s: padding[%d] is %d; padding must be >= 0", op, a,
                            (int)p->padding[a]);
    }
    g->groups = p->groups;
    g->sh = p->stride[0];
    g->sw = p->stride[1];
    g->ph = p->padding[0];
    g->pw = p->padding[1];
    g->dh = p->dilation[0];
    g->dw = p->dilation[1];
    return GFP_OK;
}

static gfp_status check_rank4(const char *op, const gfp_tensor *t, const char *name,
                              const char *layout) {
    if (t->rank != 4)
        return ref_fail(GFP_ERR_INVALID, "%s: %s must be rank 4 %s, got rank %d", op, name, layout,
                        (int)t->rank);
    for (int d = 0; d < 4; d++)
        if (t->sizes[d] < 0)
            return ref_fail(GFP_ERR_INVALID, "%s: %s has a negative size %lld in dim %d", op, name,
                            (long long)t->sizes[d], d);
    return GFP_OK;
}

/* Checks ranks, channel/group arithmetic and that the output-shaped tensor
 * has exactly the sizes the formula gives; fills g. */
static gfp_status check_conv_shapes(const char *op, const conv_roles *r, conv_geom *g) {
    gfp_status st;
    if ((st = check_rank4(op, r->x, r->xname, "[N, Ci, H, W]")) != GFP_OK) return st;
    if ((st = check_rank4(op, r->w, r->wname, "[Co, Ci/groups, kh, kw]")) != GFP_OK) return st;
    if ((st = check_rank4(op, r->y, r->yname, "[N, Co, Ho, Wo]")) != GFP_OK) return st;
    g->n = r->x->sizes[0];
    g->ci = r->x->sizes[1];
    g->h = r->x->sizes[2];
    g->w = r->x->sizes[3];
    g->co = r->w->sizes[0];
    g->kh = r->w->sizes[2];
    g->kw = r->w->sizes[3];
    if (g->ci % g->groups != 0)
        return ref_fail(GFP_ERR_INVALID,
                        "%s: %s has %lld input channels, not divisible by groups = %lld", op,
                        r->xname, (long long)g->ci, (long long)g->groups);
    if (g->co % g->groups != 0)
        return ref_fail(GFP_ERR_INVALID,
                        "%s: %s has %lld output channels, not divisible by groups = %lld", op,
                        r->wname, (long long)g->co, (long long)g->groups);
    g->cig = g->ci / g->groups;
    g->cog = g->co / g->groups;
    if (r->w->sizes[1] != g->cig)
        return ref_fail(GFP_ERR_INVALID,
                        "%s: %s dim 1 is %lld but must be Ci/groups = %lld/%lld = %lld", op,
                        r->wname, (long long)r->w->sizes[1], (long long)g->ci,
                        (long long)g->groups, (long long)g->cig);
    if (g->kh < 1 || g->kw < 1)
        return ref_fail(GFP_ERR_INVALID, "%s: the kernel size %lldx%lld of %s must be >= 1x1", op,
                        (long long)g->kh, (long long)g->kw, r->wname);
    int64_t span_h = g->h + 2 * g->ph - g->dh * (g->kh - 1) - 1;
    int64_t span_w = g->w + 2 * g->pw - g->dw * (g->kw - 1) - 1;
    if (span_h < 0 || span_w < 0)
        return ref_fail(GFP_ERR_INVALID,
                        "%s: the dilated kernel (%lldx%lld) is larger than the padded input "
                        "(%lldx%lld); use a smaller kernel or dilation, or more padding",
                        op, (long long)(g->dh * (g->kh - 1) + 1),
                        (long long)(g->dw * (g->kw - 1) + 1), (long long)(g->h + 2 * g->ph),
                        (long long)(g->w + 2 * g->pw));
    g->ho = span_h / g->sh + 1;
    g->wo = span_w / g->sw + 1;
    const int64_t *ys = r->y->sizes;
    if (ys[0] != g->n || ys[1] != g->co || ys[2] != g->ho || ys[3] != g->wo)
        return ref_fail(GFP_ERR_INVALID,
                        "%s: %s has sizes [%lld, %lld, %lld, %lld] but %s [%lld, %lld, %lld, %lld] "
                        "with %s [%lld, %lld, %lld, %lld], stride %lldx%lld, padding %lldx%lld and "
                        "dilation %lldx%lld needs [%lld, %lld, %lld, %lld]",
                        op, r->yname, (long long)ys[0], (long long)ys[1], (long long)ys[2],
                        (long long)ys[3], r->xname, (long long)g->n, (long long)g->ci,
                        (long long)g->h, (long long)g->w, r->wname, (long long)g->co,
                        (long long)g->cig, (long long)g->kh, (long long)g->kw, (long long)g->sh,
                        (long long)g->sw, (long long)g->ph, (long long)g->pw, (long long)g->dh,
                        (long long)g->dw, (long long)g->n, (long long)g->co, (long long)g->ho,
                        (long long)g->wo);
    return GFP_OK;
}

/* All tensors share one float dtype: the reference computes in f32 and f64. */
static gfp_status check_dtypes(const char *op, const gfp_tensor *const *ts, const char *const *names,
                               int count) {
    int32_t dt = ts[0]->dtype;
    if (!ref_is_float(dt))
        return ref_fail(GFP_ERR_UNSUPPORTED,
                        "%s: dtype %s (of %s) is not supported; the reference plugin computes "
                        "convolutions in f32 and f64",
                        op, ref_dtype_name(dt), names[0]);
    for (int i = 1; i < count; i++) {
        if (ts[i] && ts[i]->dtype != dt)
            return ref_fail(GFP_ERR_UNSUPPORTED,
                            "%s: %s is %s but %s is %s; all tensors must share one dtype "
                            "(f32 or f64)",
                            op, names[i], ref_dtype_name(ts[i]->dtype), names[0], ref_dtype_name(dt));
    }
    return GFP_OK;
}

static int64_t at4(const gfp_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d) {
    const int64_t idx[4] = {a, b, c, d};
    return ref_offset(t, idx);
}

/* y[n, co, oh, ow] = bias[co] + sum over the group's input channels and the
 * kernel taps that land inside the input. */
static void conv2d_forward(const conv_geom *g, const gfp_tensor *x, const gfp_tensor *w,
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
                                acc += ref_load(x, at4(x, n, ci0 + c, ih, iw)) *
                                       ref_load(w, at4(w, co, c, i, j));
                            }
                        }
                    ref_store(y, at4(y, n, co, oh, ow), acc);
                }
        }
}

/* grad_x[n, ci, ih, iw] = sum of grad_y[n, co, oh, ow] * w[co, c, i, j] over
 * the (co, i, j) whose tap lands on (ih, iw): ih = oh*s - p + i*d for an
 * integer oh in [0, Ho). Elements no tap reaches get 0. */
static void conv2d_backward_input(const conv_geom *g, const gfp_tensor *gy, const gfp_tensor *w,
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
                                acc += ref_load(gy, at4(gy, n, co, oh, ow)) *
                                       ref_load(w, at4(w, co, c, i, j));
                            }
                        }
                    ref_store(gx, at4(gx, n, ci, ih, iw), acc);
                }
        }
}

/* grad_w[co, c, i, j] = sum over n, oh, ow of grad_y[n, co, oh, ow] *
 * x[n, ci0 + c, oh*s - p + i*d, ...] for taps inside the input. */
static void conv2d_backward_weight(const conv_geom *g, const gfp_tensor *gy, const gfp_tensor *x,
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
                                acc += ref_load(gy, at4(gy, n, co, oh, ow)) *
                                       ref_load(x, at4(x, n, ci0 + c, ih, iw));
                            }
                        }
                    ref_store(gw, at4(gw, co, c, i, j), acc);
                }
    }
}

static gfp_status require(const char *op, const gfp_tensor *t, const char *what) {
    if (!t) return ref_fail(GFP_ERR_INVALID, "%s: %s is NULL", op, what);
    return GFP_OK;
}

gfp_status ref_conv_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    const char *name = op_name(op);
    if (!ref_conv_handles(op))
        return ref_fail(GFP_ERR_UNSUPPORTED, "conv: op %u is not a convolution op", (unsigned)op);
    gfp_status st;
    if (op == GFP_OP_CONV2D) {
        /* The bias is optional: two inputs, or a third that may be NULL. */
        if ((n_in != 2 && n_in != 3) || n_out != 1)
            return ref_fail(GFP_ERR_INVALID,
                            "%s: takes 2 or 3 inputs (x, w, bias|NULL) and 1 output, got %u and %u",
                            name, (unsigned)n_in, (unsigned)n_out);
    } else if ((st = ref_check_counts(n_in, 2, n_out, 1, name)) != GFP_OK) {
        return st;
    }
    if (!in || !out) return ref_fail(GFP_ERR_INVALID, "%s: the tensor arrays are NULL", name);

    conv_geom g = {0};
    if ((st = check_conv_params(name, params, &g)) != GFP_OK) return st;

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
    if ((st = require(name, r.x, r.xname)) != GFP_OK) return st;
    if ((st = require(name, r.w, r.wname)) != GFP_OK) return st;
    if ((st = require(name, r.y, r.yname)) != GFP_OK) return st;

    const gfp_tensor *const ts[4] = {r.x, r.w, r.y, bias};
    const char *const names[4] = {r.xname, r.wname, r.yname, "bias"};
    if ((st = check_dtypes(name, ts, names, 4)) != GFP_OK) return st;
    if ((st = check_conv_shapes(name, &r, &g)) != GFP_OK) return st;
    if (bias && (bias->rank != 1 || bias->sizes[0] != g.co))
        return ref_fail(GFP_ERR_INVALID,
                        "%s: bias must be rank 1 with Co = %lld elements, got rank %d with "
                        "%lld elements",
                        name, (long long)g.co, (int)bias->rank, (long long)ref_numel(bias));

    switch (op) {
    case GFP_OP_CONV2D: conv2d_forward(&g, r.x, r.w, bias, r.y); break;
    case GFP_OP_CONV2D_BACKWARD_INPUT: conv2d_backward_input(&g, r.y, r.w, r.x); break;
    default: conv2d_backward_weight(&g, r.y, r.x, r.w); break;
    }
    return GFP_OK;
}
