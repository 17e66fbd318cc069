/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_conv.c — CONV2D and its two gradient ops: cuDNN when the build has it
 * and the device's handle works, the plugin's own kernels otherwise.
 *
 * The checks and messages are the kit's (plugins/common/plugin_kit.h), as the
 * reference's. cuDNN gets packed NCHW tensors (views are copied into
 * contiguous scratch, outputs written back), FMA math for f32 (no TF32, so
 * results stay within f32 rounding of the reference), and its heuristics'
 * algorithms in order until one runs with a workspace that can be allocated.
 * A configuration cuDNN does not support (a NOT_SUPPORTED or BAD_PARAM status)
 * falls back to the own kernels; any other cuDNN failure is the launch's
 * error. GRAFT_CUDA_CUDNN=0 selects the own kernels everywhere, which lets a
 * GPU test run both paths against the reference. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

typedef pk_conv2d_roles conv_roles; /* input-, weight- and output-shaped */

/* The kit's validated geometry, as the kernels take it. */
static cuk_conv cuk_of(const pk_conv2d_geom *p) {
    cuk_conv g = {p->n,      p->ci,  p->co,  p->h,   p->w,  p->kh, p->kw, p->ho, p->wo,
                  p->groups, p->cig, p->cog, p->sh,  p->sw, p->ph, p->pw, p->dh, p->dw};
    return g;
}

#ifdef GRAFT_CUDA_HAVE_CUDNN
/* Descriptors and operands of one cuDNN call. */
typedef struct dnn_call {
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cuk_tensor tx, tw, ty, tb; /* packed operands (scratch copies where needed) */
    void *owned[4];
} dnn_call;

static void dnn_release(cu_device *dev, dnn_call *c) {
    if (c->x) cu_dnn.cudnnDestroyTensorDescriptor(c->x);
    if (c->y) cu_dnn.cudnnDestroyTensorDescriptor(c->y);
    if (c->bias) cu_dnn.cudnnDestroyTensorDescriptor(c->bias);
    if (c->w) cu_dnn.cudnnDestroyFilterDescriptor(c->w);
    if (c->conv) cu_dnn.cudnnDestroyConvolutionDescriptor(c->conv);
    for (int i = 0; i < 4; i++) cu_temp_free(dev, c->owned[i]);
}

static bool packed(const cuk_tensor *t) {
    int64_t expect = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->sizes[d] != 1 && t->strides[d] != expect) return false;
        expect *= t->sizes[d];
    }
    return true;
}

/* A packed version of t: t itself, or scratch (copied from t when copy_in). */
static gfp_status packed_of(cu_device *dev, const cuk_tensor *t, bool copy_in, cuk_tensor *out,
                            void **owned, const char *op) {
    *out = *t;
    *owned = NULL;
    if (packed(t)) return GFP_OK;
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    gfp_status st = cu_temp_alloc(dev, (uint64_t)n * pk_dtype_size(t->dtype), owned, op);
    if (st != GFP_OK) return st;
    int64_t stride = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        out->strides[d] = stride;
        stride *= t->sizes[d];
    }
    out->data = *owned;
    return copy_in ? cu_copy_tensor(dev, out, t, op) : GFP_OK;
}

/* Runs op through cuDNN. GFP_ERR_UNSUPPORTED (with nothing written) means
 * cuDNN declined the configuration and the caller should fall back. */
static gfp_status dnn_conv(cu_device *dev, uint32_t op, const cuk_conv *g, const conv_roles *r,
                           const gfp_tensor *bias) {
    const char *name = pk_op_name(op);
    dnn_call c;
    memset(&c, 0, sizeof c);
    cudnnDataType_t dt = r->x->dtype == GFP_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    cuk_tensor vx = cu_view(r->x), vw = cu_view(r->w), vy = cu_view(r->y);
    /* The written tensor needs no copy in; the others do. */
    bool writes_x = op == GFP_OP_CONV2D_BACKWARD_INPUT, writes_w = op == GFP_OP_CONV2D_BACKWARD_WEIGHT;
    bool writes_y = op == GFP_OP_CONV2D;
    gfp_status st = packed_of(dev, &vx, !writes_x, &c.tx, &c.owned[0], name);
    if (st == GFP_OK) st = packed_of(dev, &vw, !writes_w, &c.tw, &c.owned[1], name);
    if (st == GFP_OK) st = packed_of(dev, &vy, !writes_y, &c.ty, &c.owned[2], name);
    if (st == GFP_OK && bias) {
        cuk_tensor vb = cu_view(bias);
        st = packed_of(dev, &vb, true, &c.tb, &c.owned[3], name);
    }
    if (st != GFP_OK) {
        dnn_release(dev, &c);
        return st;
    }
    cudnnStatus_t s = cu_dnn.cudnnCreateTensorDescriptor(&c.x);
    if (s == CUDNN_STATUS_SUCCESS) s = cu_dnn.cudnnCreateTensorDescriptor(&c.y);
    if (s == CUDNN_STATUS_SUCCESS) s = cu_dnn.cudnnCreateFilterDescriptor(&c.w);
    if (s == CUDNN_STATUS_SUCCESS) s = cu_dnn.cudnnCreateConvolutionDescriptor(&c.conv);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cu_dnn.cudnnSetTensor4dDescriptor(c.x, CUDNN_TENSOR_NCHW, dt, (int)g->n, (int)g->ci,
                                              (int)g->h, (int)g->w);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cu_dnn.cudnnSetTensor4dDescriptor(c.y, CUDNN_TENSOR_NCHW, dt, (int)g->n, (int)g->co,
                                              (int)g->ho, (int)g->wo);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cu_dnn.cudnnSetFilter4dDescriptor(c.w, dt, CUDNN_TENSOR_NCHW, (int)g->co, (int)g->cig,
                                              (int)g->kh, (int)g->kw);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cu_dnn.cudnnSetConvolution2dDescriptor(c.conv, (int)g->ph, (int)g->pw, (int)g->sh,
                                                   (int)g->sw, (int)g->dh, (int)g->dw,
                                                   CUDNN_CROSS_CORRELATION, dt);
    if (s == CUDNN_STATUS_SUCCESS) s = cu_dnn.cudnnSetConvolutionGroupCount(c.conv, (int)g->groups);
    if (s == CUDNN_STATUS_SUCCESS) s = cu_dnn.cudnnSetConvolutionMathType(c.conv, CUDNN_FMA_MATH);
    if (s != CUDNN_STATUS_SUCCESS) {
        st = cu_check_dnn(s, name, "setting up the cuDNN descriptors");
        dnn_release(dev, &c);
        return st;
    }
    double one64 = 1.0, zero64 = 0.0;
    float one32 = 1.0f, zero32 = 0.0f;
    const void *one = dt == CUDNN_DATA_DOUBLE ? (const void *)&one64 : (const void *)&one32;
    const void *zero = dt == CUDNN_DATA_DOUBLE ? (const void *)&zero64 : (const void *)&zero32;

    /* The heuristics' algorithms, best first; the first that runs wins. */
    enum { N_ALGO = 8 };
    int found = 0;
    s = CUDNN_STATUS_NOT_SUPPORTED;
    if (op == GFP_OP_CONV2D) {
        cudnnConvolutionFwdAlgoPerf_t perf[N_ALGO];
        cudnnStatus_t hs = cu_dnn.cudnnGetConvolutionForwardAlgorithm_v7(dev->dnn, c.x, c.w, c.conv,
                                                                         c.y, N_ALGO, &found, perf);
        if (hs != CUDNN_STATUS_SUCCESS) s = hs;
        for (int i = 0; hs == CUDNN_STATUS_SUCCESS && i < found; i++) {
            if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
            void *ws = NULL;
            if (perf[i].memory && cu_temp_alloc(dev, perf[i].memory, &ws, name) != GFP_OK) continue;
            s = cu_dnn.cudnnConvolutionForward(dev->dnn, one, c.x, c.tx.data, c.w, c.tw.data,
                                               c.conv, perf[i].algo, ws, perf[i].memory, zero, c.y,
                                               c.ty.data);
            cu_temp_free(dev, ws);
            if (s == CUDNN_STATUS_SUCCESS || (int)s / 1000 != 3) break;
        }
        if (s == CUDNN_STATUS_SUCCESS && bias) {
            s = cu_dnn.cudnnCreateTensorDescriptor(&c.bias);
            if (s == CUDNN_STATUS_SUCCESS)
                s = cu_dnn.cudnnSetTensor4dDescriptor(c.bias, CUDNN_TENSOR_NCHW, dt, 1, (int)g->co,
                                                      1, 1);
            if (s == CUDNN_STATUS_SUCCESS)
                s = cu_dnn.cudnnAddTensor(dev->dnn, one, c.bias, c.tb.data, one, c.y, c.ty.data);
        }
    } else if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[N_ALGO];
        cudnnStatus_t hs = cu_dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(
            dev->dnn, c.w, c.y, c.conv, c.x, N_ALGO, &found, perf);
        if (hs != CUDNN_STATUS_SUCCESS) s = hs;
        for (int i = 0; hs == CUDNN_STATUS_SUCCESS && i < found; i++) {
            if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
            void *ws = NULL;
            if (perf[i].memory && cu_temp_alloc(dev, perf[i].memory, &ws, name) != GFP_OK) continue;
            s = cu_dnn.cudnnConvolutionBackwardData(dev->dnn, one, c.w, c.tw.data, c.y, c.ty.data,
                                                    c.conv, perf[i].algo, ws, perf[i].memory, zero,
                                                    c.x, c.tx.data);
            cu_temp_free(dev, ws);
            if (s == CUDNN_STATUS_SUCCESS || (int)s / 1000 != 3) break;
        }
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[N_ALGO];
        cudnnStatus_t hs = cu_dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            dev->dnn, c.x, c.y, c.conv, c.w, N_ALGO, &found, perf);
        if (hs != CUDNN_STATUS_SUCCESS) s = hs;
        for (int i = 0; hs == CUDNN_STATUS_SUCCESS && i < found; i++) {
            if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
            void *ws = NULL;
            if (perf[i].memory && cu_temp_alloc(dev, perf[i].memory, &ws, name) != GFP_OK) continue;
            s = cu_dnn.cudnnConvolutionBackwardFilter(dev->dnn, one, c.x, c.tx.data, c.y, c.ty.data,
                                                      c.conv, perf[i].algo, ws, perf[i].memory,
                                                      zero, c.w, c.tw.data);
            cu_temp_free(dev, ws);
            if (s == CUDNN_STATUS_SUCCESS || (int)s / 1000 != 3) break;
        }
    }
    (void)cudaGetLastError(); /* a declined scratch allocation is not this call's error */
    st = cu_check_dnn(s, name, "cuDNN");
    /* Write a copied output back into the caller's view. */
    if (st == GFP_OK && c.owned[0] && writes_x) st = cu_copy_tensor(dev, &vx, &c.tx, name);
    if (st == GFP_OK && c.owned[1] && writes_w) st = cu_copy_tensor(dev, &vw, &c.tw, name);
    if (st == GFP_OK && c.owned[2] && writes_y) st = cu_copy_tensor(dev, &vy, &c.ty, name);
    dnn_release(dev, &c);
    return st;
}
#endif

gfp_status cu_conv_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params) {
    (void)n_out;
    const char *name = pk_op_name(op);
    gfp_status st;
    conv_roles r;
    const gfp_tensor *bias = NULL, *written;
    switch (op) {
    case GFP_OP_CONV2D:
        r = (conv_roles){in[0], in[1], out[0], "x", "w", "y"};
        bias = n_in == 3 ? in[2] : NULL;
        written = r.y;
        break;
    case GFP_OP_CONV2D_BACKWARD_INPUT:
        r = (conv_roles){out[0], in[1], in[0], "grad_x", "w", "grad_y"};
        written = r.x;
        break;
    default:
        r = (conv_roles){in[1], out[0], in[0], "x", "grad_w", "grad_y"};
        written = r.w;
        break;
    }
    pk_conv2d_geom pg = {0};
    if ((st = pk_check_conv2d(op, params, &r, &pg)) != GFP_OK) return st;
    cuk_conv g = cuk_of(&pg);
    if (bias && (bias->rank != 1 || bias->sizes[0] != g.co))
        return pk_fail(GFP_ERR_INVALID,
                       "%s: bias must be rank 1 with Co = %lld elements, got rank %d with %lld "
                       "elements",
                       name, (long long)g.co, (int)bias->rank, (long long)pk_numel(bias));
    if (pk_numel(written) == 0) return GFP_OK;

#ifdef GRAFT_CUDA_HAVE_CUDNN
    /* Empty sums (a zero-size batch or channel count) are the own kernels'
     * business: they write the zeros, cuDNN may refuse the shape. */
    bool empty = pk_numel(r.x) == 0 || pk_numel(r.w) == 0 || pk_numel(r.y) == 0;
    bool fits = g.n <= 0x7fffffff && g.ci <= 0x7fffffff && g.co <= 0x7fffffff &&
                g.h <= 0x7fffffff && g.w <= 0x7fffffff;
    if (dev->dnn && !empty && fits) {
        st = dnn_conv(dev, op, &g, &r, bias);
        if (st != GFP_ERR_UNSUPPORTED && st != GFP_ERR_INVALID) return st;
        pk_log(GFP_LOG_DEBUG, "cuda: %s: cuDNN declined this configuration; using the plugin's own "
               "kernel", name);
    }
#endif
    cuk_tensor vx = cu_view(r.x), vw = cu_view(r.w), vy = cu_view(r.y), vb;
    memset(&vb, 0, sizeof vb);
    if (bias) vb = cu_view(bias);
    return cu_check(cuk_conv2d(dev->stream, op, &g, &vx, &vw, &vy, bias ? &vb : NULL), name,
                    "the kernel launch");
}
