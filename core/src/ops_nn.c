/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_nn.c — conv2d and its gradient kernels, max/avg pooling and their
 * gradients, layer_norm, batch_norm, dropout.
 *
 * Kernels see NCHW rank-4 tensors only. The forward ops accept unbatched
 * [C, H, W] input by composing public unsqueeze/squeeze around the batched
 * op, so gradients flow through the views; the gradient kernels take rank-4
 * sizes (or a rank-3 x, viewed internally). Shape rules and messages follow
 * PyTorch's. Each op records its backward node (autograd/bw_nn.c) once its
 * outputs are complete; the gradient kernels record nodes too, so that
 * higher-order gradients flow through them. */
#include <math.h>
#include <string.h>

#include "autograd/ag_record.h"
#include "amp/amp_internal.h"
#include "internal.h"

static gf_tensor *ret_new(gf_tensor *t) { return t ? gf__ret(t) : NULL; }

/* Consumes y: NULL (y released) when recording its history failed. */
static gf_tensor *recorded(gf_tensor *y, gf_status st) {
    if (st == GF_OK) return y;
    gf_tensor_release(y);
    return NULL;
}

static gf_status check_float(const gf_tensor *t, const char *op, const char *what) {
    if (gf_dtype_is_float(t->dtype)) return GF_OK;
    return gf__error(GF_ERR_DTYPE,
                     "%s: %s must have a float dtype, got %s; convert it with gf_to_dtype",
                     op, what, gf_dtype_name(t->dtype));
}

static gf_status check_dtype_as(const gf_tensor *t, const gf_tensor *x, const char *op,
                                const char *what, const char *xname) {
    if (t->dtype == x->dtype) return GF_OK;
    return gf__error(GF_ERR_DTYPE,
                     "%s: %s has dtype %s but %s has %s; they must be the same (convert with "
                     "gf_to_dtype)", op, what, gf_dtype_name(t->dtype), xname,
                     gf_dtype_name(x->dtype));
}

/* A rank-4 view [1, ...] of a rank-3 t, or a plain view of a rank-4 t. */
static gf_tensor *view_4d(const gf_tensor *t) {
    if (t->rank == 4) return gf__view(t, t->sizes, t->strides, 4, t->offset);
    int64_t sz[4] = {1, t->sizes[0], t->sizes[1], t->sizes[2]};
    int64_t st[4] = {0, t->strides[0], t->strides[1], t->strides[2]};
    if (!gf__mul_ok(t->sizes[0], t->strides[0], &st[0])) st[0] = t->strides[0]; /* size 1 */
    return gf__view(t, sz, st, 4, t->offset);
}

/* ------------------------------------------------------------ conv2d */

static gf_status conv_params(const gf_conv2d_opts *o, const char *op, gfp_conv2d_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->groups = 1;
    for (int a = 0; a < 2; a++) {
        p->stride[a] = 1;
        p->dilation[a] = 1;
    }
    if (!o) return GF_OK;
    for (int a = 0; a < 2; a++) {
        if (o->stride[a] < 0 || o->padding[a] < 0 || o->dilation[a] < 0)
            return gf__error(GF_ERR_INVALID,
                             "%s: stride, padding and dilation must be >= 0 (stride and "
                             "dilation 0 mean 1), got stride %d, padding %d, dilation %d in dim "
                             "%d", op, o->stride[a], o->padding[a], o->dilation[a], a);
        p->stride[a] = o->stride[a] ? o->stride[a] : 1;
        p->padding[a] = o->padding[a];
        p->dilation[a] = o->dilation[a] ? o->dilation[a] : 1;
    }
    if (o->groups < 0)
        return gf__error(GF_ERR_INVALID, "%s: groups must be >= 1 (0 means 1), got %d", op,
                         o->groups);
    p->groups = o->groups ? o->groups : 1;
    return GF_OK;
}

/* Output spatial sizes for input xs [N, Ci, H, W] and weight ws [Co, Ci/g,
 * kh, kw]; checks groups, channels and kernel fit with PyTorch's messages. */
static gf_status conv_geometry(const int64_t *xs, const int64_t *ws, const gfp_conv2d_params *p,
                               const char *op, int64_t *ho, int64_t *wo) {
    /* The shapes are formatted for a message only: snprintf costs more than
     * a small convolution's whole launch. */
    char bx[128], bw[128];
#define BX gf__shape_str(xs, 4, bx, sizeof bx)
#define BW gf__shape_str(ws, 4, bw, sizeof bw)
    int64_t g = p->groups, cin, kh, kw, ph, pw;
    if (ws[0] < g || ws[0] % g != 0)
        return gf__error(GF_ERR_SHAPE,
                         "%s: given groups=%lld, expected weight to be at least %lld and "
                         "divisible by %lld at dim 0, but got weight of size %s", op,
                         (long long)g, (long long)g, (long long)g, BW);
    /* The sizes may be any the caller passed to a gradient kernel: every
     * product and sum is checked. */
    if (!gf__mul_ok(ws[1], g, &cin) || xs[1] != cin)
        return gf__error(GF_ERR_SHAPE,
                         "%s: given groups=%lld, weight of size %s, expected input %s to have "
                         "%lld x %lld channels, but got %lld channels instead", op,
                         (long long)g, BW, BX, (long long)ws[1], (long long)g,
                         (long long)xs[1]);
    if (ws[2] < 1 || ws[3] < 1)
        return gf__error(GF_ERR_SHAPE, "%s: the kernel size (dims 2, 3 of weight %s) must be "
                         "at least 1x1", op, BW);
    /* kernel extent: dilation * (k - 1) + 1 */
    if (!gf__mul_ok(p->dilation[0], ws[2] - 1, &kh) || !gf__add_ok(kh, 1, &kh) ||
        !gf__mul_ok(p->dilation[1], ws[3] - 1, &kw) || !gf__add_ok(kw, 1, &kw) ||
        !gf__add_ok(xs[2], 2 * (int64_t)p->padding[0], &ph) ||
        !gf__add_ok(xs[3], 2 * (int64_t)p->padding[1], &pw))
        return gf__error(GF_ERR_OVERFLOW,
                         "%s: input %s, weight %s, dilation (%d, %d) and padding (%d, %d) give a "
                         "geometry beyond int64; pass the sizes of real tensors", op, BX, BW,
                         (int)p->dilation[0], (int)p->dilation[1], (int)p->padding[0],
                         (int)p->padding[1]);
    if (ph < kh || pw < kw)
        return gf__error(GF_ERR_SHAPE,
                         "%s: calculated padded input size per channel: (%lld x %lld). Kernel "
                         "size: (%lld x %lld). Kernel size can't be greater than actual input "
                         "size; use a smaller kernel or dilation, or more padding", op,
                         (long long)ph, (long long)pw, (long long)kh, (long long)kw);
    *ho = (ph - kh) / p->stride[0] + 1;
    *wo = (pw - kw) / p->stride[1] + 1;
    return GF_OK;
#undef BX
#undef BW
}

/* y = empty-input result: zeros plus the bias (no kernel sees empty data). */
static gf_status conv_fill_degenerate(gf_tensor *y, const gf_tensor *bias) {
    gf_status st = gf__fill(y, 0.0);
    if (st != GF_OK || !bias) return st;
    int64_t sz[4] = {1, bias->sizes[0], 1, 1}, str[4] = {0, bias->strides[0], 0, 0};
    gf_tensor *b4 = gf__view(bias, sz, str, 4, bias->offset);
    if (!b4) return gf__status();
    st = gf__copy_into(y, b4);
    gf_tensor_release(b4);
    return st;
}

static gf_tensor *conv2d_4d(const gf_tensor *x, const gf_tensor *w, const gf_tensor *bias,
                            const gfp_conv2d_params *p) {
    const char *op = "conv2d";
    int64_t ho, wo;
    if (conv_geometry(x->sizes, w->sizes, p, op, &ho, &wo) != GF_OK) return NULL;
    if (bias && (bias->rank != 1 || bias->sizes[0] != w->sizes[0])) {
        char bw[128], bb[128];
        gf__error(GF_ERR_SHAPE,
                  "conv2d: given weight of size %s, expected bias to be 1-D with %lld "
                  "elements, but got bias of size %s",
                  gf__shape_str(w->sizes, 4, bw, sizeof bw), (long long)w->sizes[0],
                  gf__shape_str(bias->sizes, bias->rank, bb, sizeof bb));
        return NULL;
    }
    int64_t ysz[4] = {x->sizes[0], w->sizes[0], ho, wo};
    gf_tensor *y = gf__empty(ysz, 4, x->dtype, x->storage->device);
    if (!y || gf__numel(y) == 0) return y;
    gf_status st;
    if (gf__numel(x) == 0 || gf__numel(w) == 0) {
        st = conv_fill_degenerate(y, bias);
    } else {
        const gf_tensor *in[3] = {x, w, bias};
        gf_tensor *out[1] = {y};
        st = gf__launch(GFP_OP_CONV2D, op, in, 3, out, 1, p);
    }
    if (st != GF_OK) {
        gf_tensor_release(y);
        return NULL;
    }
    return y;
}

gf_tensor *gf_conv2d(const gf_tensor *x, const gf_tensor *weight, const gf_tensor *bias,
                     const gf_conv2d_opts *opts) {
    GF__AMP_HOOK(CONV2D, 3, gf_conv2d(amp_v[0], amp_v[1], amp_v[2], opts), x, weight, bias);
    const char *op = "conv2d";
    if (!x || !weight) {
        gf__null_arg(op, !x ? "x" : "weight");
        return NULL;
    }
    char bx[128], bw[128];
    if (x->rank != 3 && x->rank != 4) {
        gf__error(GF_ERR_SHAPE,
                  "conv2d: expected 3-D (unbatched) or 4-D (batched) input, but got input of "
                  "size %s", gf__shape_str(x->sizes, x->rank, bx, sizeof bx));
        return NULL;
    }
    if (weight->rank != 4) {
        gf__error(GF_ERR_SHAPE,
                  "conv2d: expected 4-D weight [Co, Ci/groups, kh, kw], but got weight of "
                  "size %s", gf__shape_str(weight->sizes, weight->rank, bw, sizeof bw));
        return NULL;
    }
    if (!gf__same_device(x, weight, op) || (bias && !gf__same_device(x, bias, op)))
        return NULL;
    if (check_float(x, op, "x") != GF_OK || check_dtype_as(weight, x, op, "weight", "x") != GF_OK ||
        (bias && check_dtype_as(bias, x, op, "bias", "x") != GF_OK))
        return NULL;
    gfp_conv2d_params p;
    if (conv_params(opts, op, &p) != GF_OK) return NULL;
    if (x->rank == 4) {
        gf_tensor *y = conv2d_4d(x, weight, bias, &p);
        if (y) y = recorded(y, gf__ag_record_conv2d(x, weight, bias, opts, y));
        return ret_new(y);
    }

    /* Unbatched: through public views, so autograd sees the batched op. */
    int s = gf__scope_suspend();
    gf_tensor *x4 = gf_unsqueeze(x, 0);
    gf_tensor *y4 = x4 ? gf_conv2d(x4, weight, bias, opts) : NULL;
    gf_tensor *y = y4 ? gf_squeeze(y4, 0) : NULL;
    gf_tensor_release(x4);
    gf_tensor_release(y4);
    gf__scope_resume(s);
    return ret_new(y);
}

/* Common checks of the two gradient kernels: ranks, dtypes, devices. */
static gf_status conv_backward_front(const gf_tensor *grad_y, const gf_tensor *other,
                                     const int64_t *sizes, const char *op,
                                     const char *other_name, const char *sizes_name) {
    char b[128];
    if (!grad_y || !other)
        return gf__null_arg(op, !grad_y ? "grad_y" : other_name);
    if (!sizes) return gf__null_arg_of(op, sizes_name, GF__ARG_ARRAY);
    if (grad_y->rank != 4)
        return gf__error(GF_ERR_SHAPE, "%s: grad_y must be 4-D [N, Co, Ho, Wo], got %s", op,
                         gf__shape_str(grad_y->sizes, grad_y->rank, b, sizeof b));
    if (other->rank != 4)
        return gf__error(GF_ERR_SHAPE, "%s: %s must be 4-D, got %s", op, other_name,
                         gf__shape_str(other->sizes, other->rank, b, sizeof b));
    for (int i = 0; i < 4; i++)
        if (sizes[i] < 0)
            return gf__error(GF_ERR_INVALID, "%s: %s %s has a negative size", op, sizes_name,
                             gf__shape_str(sizes, 4, b, sizeof b));
    if (!gf__same_device(grad_y, other, op)) return GF_ERR_DEVICE;
    gf_status st = check_float(grad_y, op, "grad_y");
    if (st == GF_OK) st = check_dtype_as(other, grad_y, op, other_name, "grad_y");
    return st;
}

/* grad_y must be exactly the forward output for these sizes. */
static gf_status check_grad_y(const gf_tensor *grad_y, const int64_t *xs, const int64_t *ws,
                              const gfp_conv2d_params *p, const char *op) {
    int64_t ho, wo;
    gf_status st = conv_geometry(xs, ws, p, op, &ho, &wo);
    if (st != GF_OK) return st;
    int64_t want[4] = {xs[0], ws[0], ho, wo};
    if (memcmp(want, grad_y->sizes, sizeof want) == 0) return GF_OK;
    char bg[128], bw[128], bx[128], bwant[128];
    return gf__error(GF_ERR_SHAPE,
                     "%s: grad_y has shape %s but the convolution of input %s with weight %s "
                     "gives %s; pass the forward op's sizes and options", op,
                     gf__shape_str(grad_y->sizes, 4, bg, sizeof bg),
                     gf__shape_str(xs, 4, bx, sizeof bx), gf__shape_str(ws, 4, bw, sizeof bw),
                     gf__shape_str(want, 4, bwant, sizeof bwant));
}

/* Runs a gradient kernel. New reference, not in a scope (the caller records
 * history first). */
static gf_tensor *conv_backward(gfp_op kop, const char *op, const gf_tensor *grad_y,
                                const gf_tensor *other, const int64_t *out_sizes,
                                const int64_t *xs, const int64_t *ws,
                                const gf_conv2d_opts *opts) {
    gfp_conv2d_params p;
    if (conv_params(opts, op, &p) != GF_OK || check_grad_y(grad_y, xs, ws, &p, op) != GF_OK)
        return NULL;
    gf_tensor *g = gf__empty(out_sizes, 4, grad_y->dtype, grad_y->storage->device);
    if (!g || gf__numel(g) == 0) return g;
    gf_status st;
    if (gf__numel(grad_y) == 0 || gf__numel(other) == 0) {
        st = gf__fill(g, 0.0); /* nothing flowed back */
    } else {
        const gf_tensor *in[2] = {grad_y, other};
        gf_tensor *out[1] = {g};
        st = gf__launch(kop, op, in, 2, out, 1, &p);
    }
    if (st != GF_OK) {
        gf_tensor_release(g);
        return NULL;
    }
    return g;
}

gf_tensor *gf_conv2d_backward_input(const gf_tensor *grad_y, const gf_tensor *weight,
                                    const int64_t input_sizes[4], const gf_conv2d_opts *opts) {
    const char *op = "conv2d_backward_input";
    if (conv_backward_front(grad_y, weight, input_sizes, op, "weight", "input_sizes") != GF_OK)
        return NULL;
    gf_tensor *gx = conv_backward(GFP_OP_CONV2D_BACKWARD_INPUT, op, grad_y, weight, input_sizes,
                                  input_sizes, weight->sizes, opts);
    if (gx) gx = recorded(gx, gf__ag_record_conv2d_backward_input(grad_y, weight, input_sizes,
                                                                  opts, gx));
    return ret_new(gx);
}

gf_tensor *gf_conv2d_backward_weight(const gf_tensor *grad_y, const gf_tensor *x,
                                     const int64_t weight_sizes[4], const gf_conv2d_opts *opts) {
    const char *op = "conv2d_backward_weight";
    if (conv_backward_front(grad_y, x, weight_sizes, op, "x", "weight_sizes") != GF_OK)
        return NULL;
    gf_tensor *gw = conv_backward(GFP_OP_CONV2D_BACKWARD_WEIGHT, op, grad_y, x, weight_sizes,
                                  x->sizes, weight_sizes, opts);
    if (gw) gw = recorded(gw, gf__ag_record_conv2d_backward_weight(grad_y, x, weight_sizes,
                                                                   opts, gw));
    return ret_new(gw);
}

/* ------------------------------------------------------------ pooling */

static gf_status pool_params(const gf_pool2d_opts *o, bool is_max, const char *op,
                             gfp_pool2d_params *p) {
    if (!o)
        return gf__error(GF_ERR_INVALID, "%s: opts is NULL; pass a gf_pool2d_opts with at "
                         "least the kernel size set", op);
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    if (o->kernel[0] <= 0 || o->kernel[1] <= 0)
        return gf__error(GF_ERR_INVALID, "%s: kernel size should be greater than zero, but got "
                         "%d x %d", op, o->kernel[0], o->kernel[1]);
    for (int a = 0; a < 2; a++) {
        if (o->stride[a] < 0 || o->padding[a] < 0 || (is_max && o->dilation[a] < 0))
            return gf__error(GF_ERR_INVALID,
                             "%s: stride, padding and dilation must be >= 0 (stride 0 means the "
                             "kernel size, dilation 0 means 1), got stride %d, padding %d%s in "
                             "dim %d", op, o->stride[a], o->padding[a],
                             is_max ? " or a negative dilation" : "", a);
        if (o->padding[a] > o->kernel[a] / 2)
            return gf__error(GF_ERR_INVALID,
                             "%s: pad should be at most half of kernel size, but got pad = %d "
                             "and kernel = %d in dim %d", op, o->padding[a], o->kernel[a], a);
        p->kernel[a] = o->kernel[a];
        p->stride[a] = o->stride[a] ? o->stride[a] : o->kernel[a];
        p->padding[a] = o->padding[a];
        p->dilation[a] = (is_max && o->dilation[a]) ? o->dilation[a] : 1;
    }
    p->ceil_mode = o->ceil_mode ? 1u : 0u;
    p->count_include_pad = (!is_max && !o->exclude_pad) ? 1u : 0u; /* inverted in the public opts */
    return GF_OK;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* PyTorch's pooling_output_shape. */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d, bool ceil) {
    int64_t out = floor_div(in + 2 * pad - d * (k - 1) - 1 + (ceil ? s - 1 : 0), s) + 1;
    if (ceil && (out - 1) * s >= in + pad) out--; /* the last window starts inside */
    return out;
}

/* Checks x (rank 3 or 4, non-empty but for the batch) and computes the
 * rank-4 output sizes. */
static gf_status pool_geometry(const gf_tensor *x, const gfp_pool2d_params *p, const char *op,
                               int64_t out4[4]) {
    char bx[128];
    gf__shape_str(x->sizes, x->rank, bx, sizeof bx);
    bool ok = x->rank == 3 || x->rank == 4;
    for (int d = x->rank == 4 ? 1 : 0; ok && d < x->rank; d++) ok = x->sizes[d] > 0;
    if (!ok)
        return gf__error(GF_ERR_SHAPE,
                         "%s: expected 3-D [C, H, W] or 4-D [N, C, H, W] input with non-zero "
                         "C, H and W (N may be 0), but got %s", op, bx);
    const int64_t *s = x->rank == 4 ? x->sizes : NULL;
    int64_t n = s ? s[0] : 1, c = s ? s[1] : x->sizes[0];
    int64_t h = s ? s[2] : x->sizes[1], w = s ? s[3] : x->sizes[2];
    int64_t ho = pool_out(h, p->kernel[0], p->stride[0], p->padding[0], p->dilation[0],
                          p->ceil_mode);
    int64_t wo = pool_out(w, p->kernel[1], p->stride[1], p->padding[1], p->dilation[1],
                          p->ceil_mode);
    if (ho < 1 || wo < 1)
        return gf__error(GF_ERR_SHAPE,
                         "%s: given input size %s, the calculated output size (%lld x %lld) is "
                         "too small; use a smaller kernel, stride or dilation, or more padding",
                         op, bx, (long long)ho, (long long)wo);
    out4[0] = n, out4[1] = c, out4[2] = ho, out4[3] = wo;
    return GF_OK;
}

gf_tensor *gf_max_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts, gf_tensor **indices) {
    const char *op = "max_pool2d";
    if (indices) *indices = NULL;
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    gfp_pool2d_params p;
    int64_t ys[4];
    if (pool_params(opts, true, op, &p) != GF_OK || pool_geometry(x, &p, op, ys) != GF_OK)
        return NULL;
    if (x->rank == 3) { /* through public views, as conv2d */
        int s = gf__scope_suspend();
        gf_tensor *x4 = gf_unsqueeze(x, 0), *i4 = NULL;
        gf_tensor *y4 = x4 ? gf_max_pool2d(x4, opts, indices ? &i4 : NULL) : NULL;
        gf_tensor *y = y4 ? gf_squeeze(y4, 0) : NULL;
        gf_tensor *ix = (y && indices) ? gf_squeeze(i4, 0) : NULL;
        gf_tensor_release(x4);
        gf_tensor_release(y4);
        gf_tensor_release(i4);
        if (indices && !ix) {
            gf_tensor_release(y);
            y = NULL;
        }
        gf__scope_resume(s);
        if (indices && y) *indices = gf__ret(ix);
        return ret_new(y);
    }
    gf_device *dev = x->storage->device;
    gf_tensor *y = gf__empty(ys, 4, x->dtype, dev);
    gf_tensor *ix = y ? gf__empty(ys, 4, GF_I64, dev) : NULL;
    if (ix && gf__numel(ix) > 0) {
        const gf_tensor *in[1] = {x};
        gf_tensor *out[2] = {y, ix};
        if (gf__launch(GFP_OP_MAX_POOL2D, op, in, 1, out, 2, &p) != GF_OK) {
            gf_tensor_release(ix);
            ix = NULL;
        }
    }
    if (ix && gf__ag_record_max_pool2d(x, opts, ix, y) != GF_OK) {
        gf_tensor_release(ix);
        ix = NULL;
    }
    if (!ix) {
        gf_tensor_release(y);
        return NULL;
    }
    if (indices)
        *indices = gf__ret(ix);
    else
        gf_tensor_release(ix);
    return gf__ret(y);
}

gf_tensor *gf_avg_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts) {
    const char *op = "avg_pool2d";
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    gfp_pool2d_params p;
    int64_t ys[4];
    if (pool_params(opts, false, op, &p) != GF_OK || pool_geometry(x, &p, op, ys) != GF_OK)
        return NULL;
    if (x->rank == 3) {
        int s = gf__scope_suspend();
        gf_tensor *x4 = gf_unsqueeze(x, 0);
        gf_tensor *y4 = x4 ? gf_avg_pool2d(x4, opts) : NULL;
        gf_tensor *y = y4 ? gf_squeeze(y4, 0) : NULL;
        gf_tensor_release(x4);
        gf_tensor_release(y4);
        gf__scope_resume(s);
        return ret_new(y);
    }
    gf_tensor *y = gf__empty(ys, 4, x->dtype, x->storage->device);
    if (y && gf__numel(y) > 0) {
        const gf_tensor *in[1] = {x};
        gf_tensor *out[1] = {y};
        if (gf__launch(GFP_OP_AVG_POOL2D, op, in, 1, out, 1, &p) != GF_OK) {
            gf_tensor_release(y);
            y = NULL;
        }
    }
    if (y) y = recorded(y, gf__ag_record_avg_pool2d(x, opts, y));
    return ret_new(y);
}

/* grad_y (and indices) must have the forward output's shape for x. */
static gf_status check_pool_grad(const gf_tensor *t, const char *what, const gf_tensor *x,
                                 const int64_t ys4[4], const char *op) {
    const int64_t *want = x->rank == 4 ? ys4 : ys4 + 1;
    if (t->rank == x->rank && memcmp(t->sizes, want, sizeof(int64_t) * (size_t)x->rank) == 0)
        return GF_OK;
    char bt[128], bw[128], bx[128];
    return gf__error(GF_ERR_SHAPE,
                     "%s: %s has shape %s but pooling input %s with these options gives %s; "
                     "pass the forward op's x and options", op, what,
                     gf__shape_str(t->sizes, t->rank, bt, sizeof bt),
                     gf__shape_str(x->sizes, x->rank, bx, sizeof bx),
                     gf__shape_str(want, x->rank, bw, sizeof bw));
}

/* Runs a pooling gradient kernel on rank-4 views; grad_x takes x's shape. */
static gf_tensor *pool_backward_run(gfp_op kop, const char *op, const gf_tensor *grad_y,
                                    const gf_tensor *indices, const gf_tensor *x,
                                    const gfp_pool2d_params *p) {
    gf_tensor *gx = gf__empty(x->sizes, x->rank, grad_y->dtype, x->storage->device);
    if (!gx || gf__numel(gx) == 0) return gx;
    gf_tensor *gy4 = view_4d(grad_y), *ix4 = indices ? view_4d(indices) : NULL;
    gf_tensor *gx4 = view_4d(gx);
    gf_status st = (!gy4 || !gx4 || (indices && !ix4)) ? gf__status() : GF_OK;
    if (st == GF_OK) {
        if (gf__numel(grad_y) == 0) {
            st = gf__fill(gx, 0.0);
        } else {
            const gf_tensor *in[2] = {gy4, ix4};
            gf_tensor *out[1] = {gx4};
            st = gf__launch(kop, op, in, indices ? 2 : 1, out, 1, p);
        }
    }
    gf_tensor_release(gy4);
    gf_tensor_release(ix4);
    gf_tensor_release(gx4);
    if (st != GF_OK) {
        gf_tensor_release(gx);
        return NULL;
    }
    return gx;
}

gf_tensor *gf_max_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *indices,
                                  const gf_tensor *x, const gf_pool2d_opts *opts) {
    const char *op = "max_pool2d_backward";
    if (!grad_y || !indices || !x) {
        gf__null_arg(op, !grad_y ? "grad_y" : !indices ? "indices" : "x");
        return NULL;
    }
    gfp_pool2d_params p;
    int64_t ys[4];
    if (pool_params(opts, true, op, &p) != GF_OK || pool_geometry(x, &p, op, ys) != GF_OK ||
        !gf__same_device(grad_y, x, op) || !gf__same_device(indices, x, op) ||
        check_float(grad_y, op, "grad_y") != GF_OK ||
        check_pool_grad(grad_y, "grad_y", x, ys, op) != GF_OK ||
        check_pool_grad(indices, "indices", x, ys, op) != GF_OK)
        return NULL;
    if (indices->dtype != GF_I64 && indices->dtype != GF_I32) {
        gf__error(GF_ERR_DTYPE, "%s: indices must be i64 (as max_pool2d returns them), got %s",
                  op, gf_dtype_name(indices->dtype));
        return NULL;
    }
    gf_tensor *ix = gf__cast(indices, GF_I64);
    if (!ix) return NULL;
    gf_tensor *gx = pool_backward_run(GFP_OP_MAX_POOL2D_BACKWARD, op, grad_y, ix, x, &p);
    gf_tensor_release(ix);
    if (gx) gx = recorded(gx, gf__ag_record_max_pool2d_backward(grad_y, indices, x, opts, gx));
    return ret_new(gx);
}

gf_tensor *gf_avg_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *x,
                                  const gf_pool2d_opts *opts) {
    const char *op = "avg_pool2d_backward";
    if (!grad_y || !x) {
        gf__null_arg(op, !grad_y ? "grad_y" : "x");
        return NULL;
    }
    gfp_pool2d_params p;
    int64_t ys[4];
    if (pool_params(opts, false, op, &p) != GF_OK || pool_geometry(x, &p, op, ys) != GF_OK ||
        !gf__same_device(grad_y, x, op) || check_float(grad_y, op, "grad_y") != GF_OK ||
        check_pool_grad(grad_y, "grad_y", x, ys, op) != GF_OK)
        return NULL;
    gf_tensor *gx = pool_backward_run(GFP_OP_AVG_POOL2D_BACKWARD, op, grad_y, NULL, x, &p);
    if (gx) gx = recorded(gx, gf__ag_record_avg_pool2d_backward(grad_y, x, opts, gx));
    return ret_new(gx);
}

/* ------------------------------------------------------------ layer_norm */

static gf_status check_eps(double eps, const char *op) {
    if (isfinite(eps) && eps >= 0) return GF_OK;
    return gf__error(GF_ERR_INVALID, "%s: eps must be a finite number >= 0, got %g", op, eps);
}

/* weight/bias of layer_norm: the shape of x's last nr dims, x's dtype. */
static gf_status check_affine(const gf_tensor *t, const char *what, const gf_tensor *x, int nr,
                              const char *op) {
    if (!t) return GF_OK;
    if (!gf__same_device(x, t, op)) return GF_ERR_DEVICE;
    const int64_t *inner = x->sizes + (x->rank - nr);
    if (t->rank != nr || memcmp(t->sizes, inner, sizeof(int64_t) * (size_t)nr) != 0) {
        char bt[128], bn[128];
        return gf__error(GF_ERR_SHAPE,
                         "%s: expected %s to be of the normalized shape %s (the last %d dim(s) "
                         "of x), but got %s of shape %s", op, what,
                         gf__shape_str(inner, nr, bn, sizeof bn), nr, what,
                         gf__shape_str(t->sizes, t->rank, bt, sizeof bt));
    }
    return check_dtype_as(t, x, op, what, "x");
}

/* The end of the norms' mixed form (a 16-bit x normalised in f32): y32 back
 * in x's dtype dt, the f32 copies released, the scope suspended at sc
 * resumed, and the two f32 statistics s0, s1 handed out through o0, o1
 * (each may be NULL: not asked for) as returned tensors, or released on
 * failure. */
static gf_tensor *mixed_finish(gf_tensor *y32, gf_dtype dt, gf_tensor *const tmp[3], int sc,
                               gf_tensor *s0, gf_tensor **o0, gf_tensor *s1, gf_tensor **o1) {
    gf_tensor *y = y32 ? gf_to_dtype(y32, dt) : NULL;
    for (int i = 0; i < 3; i++) gf_tensor_release(tmp[i]);
    gf_tensor_release(y32);
    gf__scope_resume(sc);
    if (!y) {
        gf_tensor_release(s0);
        gf_tensor_release(s1);
        return NULL;
    }
    if (o0) *o0 = s0 ? gf__ret(s0) : NULL;
    if (o1) *o1 = s1 ? gf__ret(s1) : NULL;
    return gf__ret(y);
}

gf_tensor *gf_layer_norm(const gf_tensor *x, int normalized_rank, const gf_tensor *weight,
                         const gf_tensor *bias, double eps, gf_tensor **mean, gf_tensor **rstd) {
    GF__AMP_HOOK(LAYER_NORM, 3, gf_layer_norm(amp_v[0], normalized_rank, amp_v[1], amp_v[2], eps, mean, rstd), x, weight, bias);
    const char *op = "layer_norm";
    if (mean) *mean = NULL;
    if (rstd) *rstd = NULL;
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    /* PyTorch's mixed form: a 16-bit x with f32 weight / bias normalises in
     * f32 and gives x's dtype (mean and rstd in f32). */
    if ((x->dtype == GF_F16 || x->dtype == GF_BF16) &&
        ((weight && weight->dtype == GF_F32) || (bias && bias->dtype == GF_F32)) &&
        (!weight || weight->dtype == GF_F32 || weight->dtype == x->dtype) &&
        (!bias || bias->dtype == GF_F32 || bias->dtype == x->dtype)) {
        int sc = gf__scope_suspend();
        gf_tensor *x32 = gf_to_dtype(x, GF_F32), *m = NULL, *r = NULL, *y32 = NULL;
        gf_tensor *w32 = weight ? gf_to_dtype(weight, GF_F32) : NULL;
        gf_tensor *b32 = bias ? gf_to_dtype(bias, GF_F32) : NULL;
        if (x32 && (!weight || w32) && (!bias || b32))
            y32 = gf_layer_norm(x32, normalized_rank, w32, b32, eps, mean ? &m : NULL,
                                rstd ? &r : NULL);
        return mixed_finish(y32, x->dtype, (gf_tensor *[3]){x32, w32, b32}, sc, m, mean, r, rstd);
    }
    if (normalized_rank < 1 || normalized_rank > x->rank) {
        char bx[128];
        gf__error(GF_ERR_INVALID,
                  "layer_norm: normalized_rank must be in [1, %d] (the rank of x, shape %s), "
                  "got %d", x->rank, gf__shape_str(x->sizes, x->rank, bx, sizeof bx),
                  normalized_rank);
        return NULL;
    }
    if (check_float(x, op, "x") != GF_OK || check_eps(eps, op) != GF_OK ||
        check_affine(weight, "weight", x, normalized_rank, op) != GF_OK ||
        check_affine(bias, "bias", x, normalized_rank, op) != GF_OK)
        return NULL;
    gf_device *dev = x->storage->device;
    int outer = x->rank - normalized_rank;
    gf_tensor *y = gf__empty(x->sizes, x->rank, x->dtype, dev);
    gf_tensor *m = y ? gf__empty(x->sizes, outer, x->dtype, dev) : NULL;
    gf_tensor *r = m ? gf__empty(x->sizes, outer, x->dtype, dev) : NULL;
    gf_status st = r ? GF_OK : gf__status();
    if (st == GF_OK && gf__numel(y) == 0 && gf__numel(m) > 0) {
        /* Groups of zero elements: no statistics (NaN, as PyTorch). */
        st = gf__fill(m, NAN);
        if (st == GF_OK) st = gf__fill(r, NAN);
    } else if (st == GF_OK && gf__numel(y) > 0) {
        gfp_layer_norm_params p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.normalized_rank = normalized_rank;
        p.eps = eps;
        const gf_tensor *in[3] = {x, weight, bias};
        gf_tensor *out[3] = {y, m, r};
        st = gf__launch(GFP_OP_LAYER_NORM, op, in, 3, out, 3, &p);
    }
    if (st == GF_OK) st = gf__ag_record_layer_norm(x, normalized_rank, weight, bias, eps, m, r, y);
    if (st != GF_OK) {
        gf_tensor_release(y);
        gf_tensor_release(m);
        gf_tensor_release(r);
        return NULL;
    }
    if (mean)
        *mean = gf__ret(m);
    else
        gf_tensor_release(m);
    if (rstd)
        *rstd = gf__ret(r);
    else
        gf_tensor_release(r);
    return gf__ret(y);
}

/* ------------------------------------------------------------ batch_norm */

/* A per-channel tensor of batch_norm: [C], x's dtype and device. */
static gf_status check_channel(const gf_tensor *t, const char *what, const gf_tensor *x,
                               const char *op) {
    if (!t) return GF_OK;
    if (!gf__same_device(x, t, op)) return GF_ERR_DEVICE;
    if (t->rank != 1 || t->sizes[0] != x->sizes[1]) {
        char bt[128], bx[128];
        return gf__error(GF_ERR_SHAPE,
                         "%s: %s must be 1-D with C = %lld elements (dim 1 of x, shape %s), got "
                         "shape %s", op, what, (long long)x->sizes[1],
                         gf__shape_str(x->sizes, x->rank, bx, sizeof bx),
                         gf__shape_str(t->sizes, t->rank, bt, sizeof bt));
    }
    return check_dtype_as(t, x, op, what, "x");
}

gf_tensor *gf_batch_norm(const gf_tensor *x, gf_tensor *running_mean, gf_tensor *running_var,
                         const gf_tensor *weight, const gf_tensor *bias, bool training,
                         double momentum, double eps, gf_tensor **save_mean,
                         gf_tensor **save_invstd) {
    const char *op = "batch_norm";
    if (save_mean) *save_mean = NULL;
    if (save_invstd) *save_invstd = NULL;
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    /* PyTorch's mixed form: a 16-bit x with f32 weight, bias and running
     * statistics (an f32 model under autocast) normalises in f32 and gives
     * x's dtype. */
    const gf_tensor *f32_args[4] = {weight, bias, running_mean, running_var};
    bool mixed = (x->dtype == GF_F16 || x->dtype == GF_BF16);
    bool any_f32 = false;
    for (int i = 0; i < 4; i++) {
        if (f32_args[i] && f32_args[i]->dtype != GF_F32 && f32_args[i]->dtype != x->dtype)
            mixed = false;
        if (f32_args[i] && f32_args[i]->dtype == GF_F32) any_f32 = true;
    }
    if (mixed && any_f32) {
        int sc = gf__scope_suspend();
        gf_tensor *x32 = gf_to_dtype(x, GF_F32), *y32 = NULL, *sm = NULL, *si = NULL;
        gf_tensor *w32 = weight ? gf_to_dtype(weight, GF_F32) : NULL;
        gf_tensor *b32 = bias ? gf_to_dtype(bias, GF_F32) : NULL;
        bool ok = x32 && (!weight || w32) && (!bias || b32);
        if (ok && (!running_mean || running_mean->dtype == GF_F32) &&
            (!running_var || running_var->dtype == GF_F32))
            y32 = gf_batch_norm(x32, running_mean, running_var, w32, b32, training, momentum, eps,
                                save_mean ? &sm : NULL, save_invstd ? &si : NULL);
        else if (ok)
            gf__error(GF_ERR_DTYPE, "%s: the running statistics of a %s x must be f32 or %s",
                      op, gf_dtype_name(x->dtype), gf_dtype_name(x->dtype));
        return mixed_finish(y32, x->dtype, (gf_tensor *[3]){x32, w32, b32}, sc, sm, save_mean, si,
                            save_invstd);
    }
    char bx[128];
    gf__shape_str(x->sizes, x->rank, bx, sizeof bx);
    if (x->rank < 2) {
        gf__error(GF_ERR_SHAPE, "batch_norm: x must be [N, C, ...] (rank >= 2), got shape %s",
                  bx);
        return NULL;
    }
    if (!running_mean != !running_var) {
        gf__error(GF_ERR_INVALID, "batch_norm: pass both running_mean and running_var, or "
                  "neither (%s is NULL)", running_mean ? "running_var" : "running_mean");
        return NULL;
    }
    if (!training && !running_mean) {
        gf__error(GF_ERR_INVALID, "batch_norm: running_mean and running_var are needed when "
                  "training is false (evaluation uses the running statistics)");
        return NULL;
    }
    if (check_float(x, op, "x") != GF_OK || check_eps(eps, op) != GF_OK ||
        check_channel(weight, "weight", x, op) != GF_OK ||
        check_channel(bias, "bias", x, op) != GF_OK ||
        check_channel(running_mean, "running_mean", x, op) != GF_OK ||
        check_channel(running_var, "running_var", x, op) != GF_OK)
        return NULL;
    if (!isfinite(momentum)) {
        gf__error(GF_ERR_INVALID, "batch_norm: momentum must be finite, got %g", momentum);
        return NULL;
    }
    int64_t per_channel = gf__numel(x) / (x->sizes[1] ? x->sizes[1] : 1);
    if (x->sizes[1] == 0) per_channel = 0;
    if (training && per_channel == 1) {
        gf__error(GF_ERR_INVALID, "batch_norm: expected more than 1 value per channel when "
                  "training, got input of shape %s; use a larger batch or training = false",
                  bx);
        return NULL;
    }
    gf_device *dev = x->storage->device;
    int64_t c = x->sizes[1];
    gf_tensor *y = gf__empty(x->sizes, x->rank, x->dtype, dev);
    gf_tensor *sm = y ? gf__empty(&c, 1, x->dtype, dev) : NULL;
    gf_tensor *si = sm ? gf__empty(&c, 1, x->dtype, dev) : NULL;
    /* The kernel updates the running stats in place: give it contiguous ones
     * (a device that needs contiguity would otherwise update a copy). */
    bool update = training && running_mean;
    gf_tensor *rm = NULL, *rv = NULL;
    if (si && running_mean) {
        rm = gf__contig(running_mean);
        rv = rm ? gf__contig(running_var) : NULL;
    }
    gf_status st = (si && (!running_mean || rv)) ? GF_OK : gf__status();
    if (st == GF_OK && c > 0) {
        gfp_batch_norm_params p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.training = training ? 1u : 0u;
        p.momentum = momentum;
        p.eps = eps;
        const gf_tensor *in[5] = {x, weight, bias, rm, rv};
        gf_tensor *out[3] = {y, sm, si};
        st = gf__launch(GFP_OP_BATCH_NORM, op, in, 5, out, 3, &p);
        if (st == GF_OK && update && rm != running_mean) st = gf__copy_into(running_mean, rm);
        if (st == GF_OK && update && rv != running_var) st = gf__copy_into(running_var, rv);
        if (st == GF_OK && update) {
            gf__bump_version(running_mean);
            gf__bump_version(running_var);
        }
    }
    gf_tensor_release(rm);
    gf_tensor_release(rv);
    if (st == GF_OK)
        st = gf__ag_record_batch_norm(x, weight, bias, running_mean, running_var, training, eps,
                                      sm, si, y);
    if (st != GF_OK) {
        gf_tensor_release(y);
        gf_tensor_release(sm);
        gf_tensor_release(si);
        return NULL;
    }
    if (save_mean)
        *save_mean = gf__ret(sm);
    else
        gf_tensor_release(sm);
    if (save_invstd)
        *save_invstd = gf__ret(si);
    else
        gf_tensor_release(si);
    return gf__ret(y);
}

/* ------------------------------------------------------------ dropout */

gf_tensor *gf_dropout(const gf_tensor *x, double p, bool training) {
    const char *op = "dropout";
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    if (!(p >= 0.0 && p <= 1.0)) {
        gf__error(GF_ERR_INVALID,
                  "dropout: probability has to be between 0 and 1, but got %g", p);
        return NULL;
    }
    if (!training || p == 0.0) return gf__ret(gf_tensor_retain((gf_tensor *)x));
    if (check_float(x, op, "x") != GF_OK) return NULL;
    int s = gf__scope_suspend();
    gf_tensor *y = NULL;
    if (p == 1.0) {
        /* x * 0 as PyTorch (NaN stays NaN), differentiable like the rest. */
        y = gf_mul_scalar(x, 0.0);
    } else {
        /* As PyTorch: the mask holds 0 or 1/(1-p), and y = x * mask, so the
         * backward is one multiplication by the saved mask. */
        gf_tensor *keep = gf_bernoulli(x->sizes, x->rank, 1.0 - p, x->dtype, x->storage->device);
        gf_tensor *mask = keep ? gf_div_scalar(keep, 1.0 - p) : NULL;
        y = mask ? gf_mul(x, mask) : NULL;
        gf_tensor_release(keep);
        gf_tensor_release(mask);
    }
    gf__scope_resume(s);
    return ret_new(y);
}
