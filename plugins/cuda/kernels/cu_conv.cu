/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_conv.cu — 2-D convolution without cuDNN (NCHW, any strides).
 *
 * Used when the plugin was built without cuDNN, when GRAFT_CUDA_CUDNN=0, or
 * when cuDNN declines a configuration. The kernels are the reference's gather
 * form (plugins/reference/ref_conv.c): one thread per element of the tensor
 * being written, one sum accumulated in double and stored once, so every
 * element is written and no zeroing pass or atomic is needed. They are
 * simple rather than fast: cuDNN is the fast path. */
#include "cu_common.cuh"

__device__ __forceinline__ int64_t at4(const cuk_tensor &t, int64_t a, int64_t b, int64_t c,
                                       int64_t d) {
    return a * t.strides[0] + b * t.strides[1] + c * t.strides[2] + d * t.strides[3];
}

#define LD(t, off) cu_load_f64((t).data, (t).dtype, (off))

__global__ void k_conv_forward(cuk_conv g, cuk_tensor x, cuk_tensor w, cuk_tensor y,
                               cuk_tensor b, int has_bias) {
    const int64_t total = g.n * g.co * g.ho * g.wo;
    CU_GRID_LOOP(p, total) {
        int64_t ow = p % g.wo, oh = (p / g.wo) % g.ho, co = (p / (g.wo * g.ho)) % g.co,
                n = p / (g.wo * g.ho * g.co);
        int64_t ci0 = (co / g.cog) * g.cig;
        double acc = has_bias ? LD(b, co * b.strides[0]) : 0.0;
        for (int64_t c = 0; c < g.cig; c++)
            for (int64_t i = 0; i < g.kh; i++) {
                int64_t ih = oh * g.sh - g.ph + i * g.dh;
                if (ih < 0 || ih >= g.h) continue;
                for (int64_t j = 0; j < g.kw; j++) {
                    int64_t iw = ow * g.sw - g.pw + j * g.dw;
                    if (iw < 0 || iw >= g.w) continue;
                    acc += LD(x, at4(x, n, ci0 + c, ih, iw)) * LD(w, at4(w, co, c, i, j));
                }
            }
        cu_store_f64(y.data, y.dtype, at4(y, n, co, oh, ow), acc);
    }
}

/* grad_x[n, ci, ih, iw]: the taps (co, i, j) that land on (ih, iw). */
__global__ void k_conv_backward_input(cuk_conv g, cuk_tensor gx, cuk_tensor w, cuk_tensor gy) {
    const int64_t total = g.n * g.ci * g.h * g.w;
    CU_GRID_LOOP(p, total) {
        int64_t iw = p % g.w, ih = (p / g.w) % g.h, ci = (p / (g.w * g.h)) % g.ci,
                n = p / (g.w * g.h * g.ci);
        int64_t grp = ci / g.cig, c = ci % g.cig;
        double acc = 0.0;
        for (int64_t co = grp * g.cog; co < (grp + 1) * g.cog; co++)
            for (int64_t i = 0; i < g.kh; i++) {
                int64_t th = ih + g.ph - i * g.dh;
                if (th < 0 || th % g.sh != 0 || th / g.sh >= g.ho) continue;
                int64_t oh = th / g.sh;
                for (int64_t j = 0; j < g.kw; j++) {
                    int64_t tw = iw + g.pw - j * g.dw;
                    if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.wo) continue;
                    int64_t ow = tw / g.sw;
                    acc += LD(gy, at4(gy, n, co, oh, ow)) * LD(w, at4(w, co, c, i, j));
                }
            }
        cu_store_f64(gx.data, gx.dtype, at4(gx, n, ci, ih, iw), acc);
    }
}

/* grad_w[co, c, i, j]: a sum over the batch and the output plane. */
__global__ void k_conv_backward_weight(cuk_conv g, cuk_tensor x, cuk_tensor gw, cuk_tensor gy) {
    const int64_t total = g.co * g.cig * g.kh * g.kw;
    CU_GRID_LOOP(p, total) {
        int64_t j = p % g.kw, i = (p / g.kw) % g.kh, c = (p / (g.kw * g.kh)) % g.cig,
                co = p / (g.kw * g.kh * g.cig);
        int64_t ci0 = (co / g.cog) * g.cig;
        double acc = 0.0;
        for (int64_t n = 0; n < g.n; n++)
            for (int64_t oh = 0; oh < g.ho; oh++) {
                int64_t ih = oh * g.sh - g.ph + i * g.dh;
                if (ih < 0 || ih >= g.h) continue;
                for (int64_t ow = 0; ow < g.wo; ow++) {
                    int64_t iw = ow * g.sw - g.pw + j * g.dw;
                    if (iw < 0 || iw >= g.w) continue;
                    acc += LD(gy, at4(gy, n, co, oh, ow)) * LD(x, at4(x, n, ci0 + c, ih, iw));
                }
            }
        cu_store_f64(gw.data, gw.dtype, at4(gw, co, c, i, j), acc);
    }
}

extern "C" cudaError_t cuk_conv2d(cudaStream_t s, uint32_t op, const cuk_conv *g,
                                  const cuk_tensor *x, const cuk_tensor *w, const cuk_tensor *y,
                                  const cuk_tensor *bias) {
    if (op == GFP_OP_CONV2D) {
        cuk_tensor none = {};
        k_conv_forward<<<cu_blocks(g->n * g->co * g->ho * g->wo), CU_THREADS, 0, s>>>(
            *g, *x, *w, *y, bias ? *bias : none, bias != NULL);
    } else if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
        k_conv_backward_input<<<cu_blocks(g->n * g->ci * g->h * g->w), CU_THREADS, 0, s>>>(
            *g, *x, *w, *y);
    } else {
        k_conv_backward_weight<<<cu_blocks(g->co * g->cig * g->kh * g->kw), CU_THREADS, 0, s>>>(
            *g, *x, *w, *y);
    }
    return cu_launched();
}
