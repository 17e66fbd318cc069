/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_pool.cu — max and average pooling (NCHW) and their gradients.
 *
 * cuDNN's pooling returns no argmax positions, which MAX_POOL2D must output,
 * and its ceil-mode and padding rules are not PyTorch's; these kernels follow
 * the reference (plugins/reference/ref_pool.c) instead:
 *  - max: padding never wins, the first maximum in window order wins, and a
 *    NaN always takes over (the last NaN of the window wins); a window wholly
 *    in padding gives -inf with index -1;
 *  - avg: the divisor is the window clipped to the padded input
 *    (count_include_pad) or to the real input; an empty window gives 0.
 * MAX_POOL2D_BACKWARD zeroes grad_x and adds each gradient at its index
 * (atomics: windows overlap); the host has checked every index first.
 * AVG_POOL2D_BACKWARD is written in gather form, each grad_x element summing
 * the windows that cover it, so it writes grad_x whole without atomics. */
#include <math.h>

#include "cu_common.cuh"

__device__ __forceinline__ int64_t at4(const cuk_tensor &t, int64_t a, int64_t b, int64_t c,
                                       int64_t d) {
    return a * t.strides[0] + b * t.strides[1] + c * t.strides[2] + d * t.strides[3];
}

#define LD(t, off) cu_load_f64((t).data, (t).dtype, (off))

__global__ void k_max_pool(cuk_pool g, cuk_tensor x, cuk_tensor y, cuk_tensor ind) {
    const int64_t total = g.n * g.c * g.ho * g.wo;
    CU_GRID_LOOP(p, total) {
        int64_t ow = p % g.wo, oh = (p / g.wo) % g.ho, c = (p / (g.wo * g.ho)) % g.c,
                n = p / (g.wo * g.ho * g.c);
        double best = -INFINITY;
        int64_t best_idx = -1;
        for (int64_t i = 0; i < g.kh; i++) {
            int64_t ih = oh * g.sh - g.ph + i * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            for (int64_t j = 0; j < g.kw; j++) {
                int64_t iw = ow * g.sw - g.pw + j * g.dw;
                if (iw < 0 || iw >= g.w) continue;
                double v = LD(x, at4(x, n, c, ih, iw));
                /* Strict > keeps the first maximum; a NaN always takes over. */
                if (best_idx < 0 || v > best || isnan(v)) {
                    best = v;
                    best_idx = ih * g.w + iw;
                }
            }
        }
        cu_store_f64(y.data, y.dtype, at4(y, n, c, oh, ow), best);
        ((int64_t *)ind.data)[at4(ind, n, c, oh, ow)] = best_idx;
    }
}

__global__ void k_zero(cuk_tensor t, int64_t total) {
    CU_GRID_LOOP(p, total) cu_store_f64(t.data, t.dtype, cu_tensor_offset(t, p), 0.0);
}

__global__ void k_max_pool_backward(cuk_pool g, cuk_tensor gy, cuk_tensor ind, cuk_tensor gx) {
    const int64_t total = g.n * g.c * g.ho * g.wo;
    CU_GRID_LOOP(p, total) {
        int64_t ow = p % g.wo, oh = (p / g.wo) % g.ho, c = (p / (g.wo * g.ho)) % g.c,
                n = p / (g.wo * g.ho * g.c);
        int64_t k = ((const int64_t *)ind.data)[at4(ind, n, c, oh, ow)];
        if (k < 0) continue;
        int64_t dst = at4(gx, n, c, k / g.w, k % g.w);
        int64_t src = at4(gy, n, c, oh, ow);
        if (gx.dtype == GFP_F64)
            atomicAdd((double *)gx.data + dst, ((const double *)gy.data)[src]);
        else
            atomicAdd((float *)gx.data + dst, ((const float *)gy.data)[src]);
    }
}

/* Output (oh, ow)'s window clipped to the real input, [h0, h1) x [w0, w1), and
 * its divisor; 0 when the window holds no real element. */
__device__ __forceinline__ int64_t avg_window(const cuk_pool &g, int64_t oh, int64_t ow,
                                              int64_t *h0, int64_t *h1, int64_t *w0,
                                              int64_t *w1) {
    int64_t hs = oh * g.sh - g.ph, ws = ow * g.sw - g.pw;
    int64_t he = hs + g.kh < g.h + g.ph ? hs + g.kh : g.h + g.ph;
    int64_t we = ws + g.kw < g.w + g.pw ? ws + g.kw : g.w + g.pw;
    int64_t padded = (he - hs) * (we - ws);
    hs = hs < 0 ? 0 : hs;
    ws = ws < 0 ? 0 : ws;
    he = he > g.h ? g.h : he;
    we = we > g.w ? g.w : we;
    if (hs >= he || ws >= we) return 0;
    *h0 = hs;
    *h1 = he;
    *w0 = ws;
    *w1 = we;
    return g.include_pad ? padded : (he - hs) * (we - ws);
}

__global__ void k_avg_pool(cuk_pool g, cuk_tensor x, cuk_tensor y) {
    const int64_t total = g.n * g.c * g.ho * g.wo;
    CU_GRID_LOOP(p, total) {
        int64_t ow = p % g.wo, oh = (p / g.wo) % g.ho, c = (p / (g.wo * g.ho)) % g.c,
                n = p / (g.wo * g.ho * g.c);
        int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0;
        int64_t div = avg_window(g, oh, ow, &h0, &h1, &w0, &w1);
        double acc = 0.0;
        for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) acc += LD(x, at4(x, n, c, ih, iw));
        cu_store_f64(y.data, y.dtype, at4(y, n, c, oh, ow), div ? acc / (double)div : 0.0);
    }
}

/* First output index whose window [o*s - p, o*s - p + k) can reach input i. */
__device__ __forceinline__ int64_t first_window(int64_t i, int64_t k, int64_t s, int64_t p) {
    int64_t t = i + p - k + 1; /* o*s >= t */
    if (t <= 0) return 0;
    return (t + s - 1) / s;
}

__global__ void k_avg_pool_backward(cuk_pool g, cuk_tensor gy, cuk_tensor gx) {
    const int64_t total = g.n * g.c * g.h * g.w;
    CU_GRID_LOOP(p, total) {
        int64_t iw = p % g.w, ih = (p / g.w) % g.h, c = (p / (g.w * g.h)) % g.c,
                n = p / (g.w * g.h * g.c);
        double acc = 0.0;
        int64_t oh_end = (ih + g.ph) / g.sh + 1, ow_end = (iw + g.pw) / g.sw + 1;
        if (oh_end > g.ho) oh_end = g.ho;
        if (ow_end > g.wo) ow_end = g.wo;
        for (int64_t oh = first_window(ih, g.kh, g.sh, g.ph); oh < oh_end; oh++)
            for (int64_t ow = first_window(iw, g.kw, g.sw, g.pw); ow < ow_end; ow++) {
                int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0;
                int64_t div = avg_window(g, oh, ow, &h0, &h1, &w0, &w1);
                if (!div || ih < h0 || ih >= h1 || iw < w0 || iw >= w1) continue;
                acc += LD(gy, at4(gy, n, c, oh, ow)) / (double)div;
            }
        cu_store_f64(gx.data, gx.dtype, at4(gx, n, c, ih, iw), acc);
    }
}

extern "C" cudaError_t cuk_max_pool(cudaStream_t s, const cuk_pool *g, const cuk_tensor *x,
                                    const cuk_tensor *y, const cuk_tensor *ind) {
    k_max_pool<<<cu_blocks(g->n * g->c * g->ho * g->wo), CU_THREADS, 0, s>>>(*g, *x, *y, *ind);
    return cu_launched();
}

extern "C" cudaError_t cuk_max_pool_backward(cudaStream_t s, const cuk_pool *g,
                                             const cuk_tensor *gy, const cuk_tensor *ind,
                                             const cuk_tensor *gx) {
    int64_t n_gx = g->n * g->c * g->h * g->w;
    k_zero<<<cu_blocks(n_gx), CU_THREADS, 0, s>>>(*gx, n_gx);
    int64_t n_gy = g->n * g->c * g->ho * g->wo;
    if (n_gy > 0)
        k_max_pool_backward<<<cu_blocks(n_gy), CU_THREADS, 0, s>>>(*g, *gy, *ind, *gx);
    return cu_launched();
}

extern "C" cudaError_t cuk_avg_pool(cudaStream_t s, const cuk_pool *g, const cuk_tensor *x,
                                    const cuk_tensor *y) {
    k_avg_pool<<<cu_blocks(g->n * g->c * g->ho * g->wo), CU_THREADS, 0, s>>>(*g, *x, *y);
    return cu_launched();
}

extern "C" cudaError_t cuk_avg_pool_backward(cudaStream_t s, const cuk_pool *g,
                                             const cuk_tensor *gy, const cuk_tensor *gx) {
    k_avg_pool_backward<<<cu_blocks(g->n * g->c * g->h * g->w), CU_THREADS, 0, s>>>(*g, *gy,
                                                                                  *gx);
    return cu_launched();
}
