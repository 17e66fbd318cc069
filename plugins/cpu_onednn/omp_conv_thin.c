/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_conv_thin.c — CONV2D and CONV2D_BACKWARD_WEIGHT in f32 for "thin"
 * inputs: few input taps per output (Ci * kh * kw <= THIN_TAPS), stride 1,
 * dilation 1, one group, contiguous NCHW tensors. A network's first layer
 * on images (1 or 3 channels) is this shape. bf16 and f16 tensors (autocast):
 * the input widened to f32 an image at a time, grad_y widened as it is
 * loaded, the sums in f32 and each output rounded once as it is stored.
 *
 * oneDNN runs such a layer with a blocked (nChw16c) output and reorders it
 * back to graft's NCHW: on a Fashion-MNIST batch ([128, 1, 28, 28] -> 32
 * channels, 3x3) 2.4 ms, most of it the 12.8 MB reorder, and 1.3 ms for the
 * weight gradient. Here each image's input planes are copied once into a
 * zero-padded scratch plane, and every output row is a sum of Ci * kh * kw
 * shifted rows of it (vectorised along the row); the weight gradient is the
 * same sums the other way round, one accumulator per tap. Both go through
 * the images in memory order.
 *
 * Sums: the forward pass adds the taps in the order (ci, ki, kj) in f32, as
 * a direct convolution does. The weight gradient sums each image's products
 * in f32 lanes, then the images in double, in order: the result does not
 * depend on the thread count. */
#include <string.h>

#include "omp_f64.h"

#define THIN_TAPS 32 /* Ci * kh * kw at most */
#define THIN_LANES 16 /* outputs a vector */

typedef struct thin_geom {
    int32_t dtype; /* f32, or bf16 / f16: computed in f32, rounded once */
    int64_t n, ci, h, w, co, kh, kw, ho, wo, ph, pw;
    int64_t hp, wp; /* the padded plane's rows and row length */
} thin_geom;

static bool thin_geometry(thin_geom *g, const gfp_tensor *x, const gfp_tensor *w,
                          const gfp_tensor *y, const void *params) {
    const gfp_conv2d_params *cp = params;
    if (!cp || cp->struct_size < GFP_CONV2D_PARAMS_SIZE_V1_0 || cp->groups != 1) return false;
    const gfp_tensor *t[3] = {x, w, y};
    for (int k = 0; k < 3; k++)
        if (!t[k] || t[k]->rank != 4 || t[k]->dtype != x->dtype || !odn_is_contiguous(t[k]) ||
            pk_numel(t[k]) == 0)
            return false;
    if (x->dtype != GFP_F32 && !pk_is_half(x->dtype)) return false;
    for (int a = 0; a < 2; a++)
        if (cp->stride[a] != 1 || cp->dilation[a] != 1 || cp->padding[a] < 0) return false;
    *g = (thin_geom){.dtype = x->dtype, .n = x->sizes[0], .ci = x->sizes[1], .h = x->sizes[2], .w = x->sizes[3],
                     .co = w->sizes[0], .kh = w->sizes[2], .kw = w->sizes[3], .ho = y->sizes[2],
                     .wo = y->sizes[3], .ph = cp->padding[0], .pw = cp->padding[1]};
    if (w->sizes[1] != g->ci || y->sizes[0] != g->n || y->sizes[1] != g->co) return false;
    if (g->ci * g->kh * g->kw > THIN_TAPS) return false;
    if (g->ho != g->h + 2 * g->ph - g->kh + 1 || g->wo != g->w + 2 * g->pw - g->kw + 1)
        return false;
    g->hp = g->h + 2 * g->ph;
    g->wp = g->w + 2 * g->pw;
    return true;
}

/* Image n's Ci planes (x: its first element) into buf as f32, zero-padded
 * (ph rows, pw columns each side). */
static void pad_image(const thin_geom *g, const void *x, float *buf) {
    memset(buf, 0, sizeof(float) * (size_t)(g->ci * g->hp * g->wp));
    for (int64_t c = 0; c < g->ci; c++)
        for (int64_t i = 0; i < g->h; i++) {
            float *row = buf + (c * g->hp + i + g->ph) * g->wp + g->pw;
            int64_t at = (c * g->h + i) * g->w;
            if (g->dtype == GFP_F32)
                memcpy(row, (const float *)x + at, sizeof(float) * (size_t)g->w);
            else
                odn_half_to_f32(row, (const uint16_t *)x + at, g->w, g->dtype);
        }
}

/* Image n's Ci planes (x: its first element, bf16) into buf as bf16,
 * zero-padded as pad_image pads. */
static void pad_image_bf16(const thin_geom *g, const void *x, uint16_t *buf) {
    memset(buf, 0, sizeof(uint16_t) * (size_t)(g->ci * g->hp * g->wp));
    for (int64_t c = 0; c < g->ci; c++)
        for (int64_t i = 0; i < g->h; i++)
            memcpy(buf + (c * g->hp + i + g->ph) * g->wp + g->pw,
                   (const uint16_t *)x + (c * g->h + i) * g->w, sizeof(uint16_t) * (size_t)g->w);
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

#include "omp_half_vec.h"
/* BW and VL for the masked 16-bit loads and stores of bf16 / f16 rows */
#define THIN_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))

/* Offsets of the taps (ci, ki, kj) in a padded image, in that order. */
static int64_t tap_offsets(const thin_geom *g, int64_t *off) {
    int64_t t = 0;
    for (int64_t c = 0; c < g->ci; c++)
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) off[t++] = (c * g->hp + ki) * g->wp + kj;
    return t;
}

static inline __mmask16 lanes_of(int64_t len) {
    return (__mmask16)(len >= THIN_LANES ? 0xffffu : (1u << len) - 1);
}

/* Output channels oc0 .. oc0 + NB - 1 of one row chunk: NB independent sums
 * (a constant after inlining, so they stay in registers), stored as f32
 * (half 0) or rounded once into 16-bit lanes (half: the dtype). */
THIN_AVX512 static inline __attribute__((always_inline)) void
fw_block(const __m512 *xv, int64_t taps, const float *w, const float *bias, int64_t oc0, int nb,
         void *yo, int32_t half, int64_t plane, int64_t row, __mmask16 m) {
    __m512 acc[4];
    for (int i = 0; i < nb; i++) acc[i] = _mm512_set1_ps(bias ? bias[oc0 + i] : 0.0f);
    for (int64_t k = 0; k < taps; k++)
        for (int i = 0; i < nb; i++)
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(w[(oc0 + i) * taps + k]), xv[k], acc[i]);
    size_t es = half ? 2 : 4;
    for (int i = 0; i < nb; i++) {
        char *at = (char *)yo + (size_t)((oc0 + i) * plane) * es;
        if (half)
            _mm256_mask_storeu_epi16(at, m, odn_hv_from_f32(acc[i], half));
        else
            _mm512_mask_storeu_ps((float *)(void *)at, m, acc[i]);
        /* the lines of this chunk two rows down: a write stream per channel */
        _mm_prefetch(at + (size_t)(2 * row) * es, _MM_HINT_T0);
    }
}

/* y of one image from its padded planes, sixteen outputs of a row at a
 * time: the taps' shifted input vectors loaded once, then every output
 * channel's sum of taps (f32, in the order ci, ki, kj) onto its bias. */
THIN_AVX512 static void thin_forward_image(const thin_geom *g, const float *xp, const float *w,
                                           const float *bias, void *y, int32_t half) {
    int64_t off[THIN_TAPS], taps = tap_offsets(g, off), plane = g->ho * g->wo;
    __m512 xv[THIN_TAPS];
    for (int64_t oh = 0; oh < g->ho; oh++)
        for (int64_t o0 = 0; o0 < g->wo; o0 += THIN_LANES) {
            __mmask16 m = lanes_of(g->wo - o0);
            const float *base = xp + oh * g->wp + o0;
            for (int64_t k = 0; k < taps; k++) xv[k] = _mm512_maskz_loadu_ps(m, base + off[k]);
            void *yo = (char *)y + (size_t)(oh * g->wo + o0) * (half ? 2 : 4);
            int64_t oc = 0;
            for (; oc + 4 <= g->co; oc += 4)
                fw_block(xv, taps, w, bias, oc, 4, yo, half, plane, g->wo, m);
            for (; oc < g->co; oc++) fw_block(xv, taps, w, bias, oc, 1, yo, half, plane, g->wo, m);
        }
}

/* A vector's lanes summed in double. */
THIN_AVX512 static inline double lanes_sum(__m512 v) {
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

/* Taps t .. t + NB - 1 of NC output channels' weight gradients (grad_y
 * planes gp[0 .. NC - 1]) over one image: NC * NB vector sums in registers
 * (constants after inlining), each x vector loaded once for the NC
 * channels, lanes beyond a row's end loaded as zeros; folded in double into
 * gw[c][i]. */
THIN_AVX512 static inline __attribute__((always_inline)) void
gw_block(const thin_geom *g, const float *xp, const void *const *gp, int32_t half, int nc,
         const int64_t *off, int nb, double *const *gw) {
    int64_t pf = 2 * g->ho * g->wo; /* the next pair of channels' planes */
    __m512 acc[2][8];
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < nb; i++) acc[c][i] = _mm512_setzero_ps();
    int64_t wp = g->wp, wo = g->wo;
    for (int64_t oh = 0; oh < g->ho; oh++)
        for (int64_t o0 = 0; o0 < wo; o0 += THIN_LANES) {
            __mmask16 m = lanes_of(wo - o0);
            __m512 gv[2];
            for (int c = 0; c < nc; c++) {
                const char *at = (const char *)gp[c] + (size_t)(oh * wo + o0) * (half ? 2 : 4);
                gv[c] = half ? odn_hv_to_f32(_mm256_maskz_loadu_epi16(m, at), half)
                             : _mm512_maskz_loadu_ps(m, (const float *)(const void *)at);
                _mm_prefetch(at + (size_t)pf * (half ? 2 : 4), _MM_HINT_T0);
            }
            const float *base = xp + oh * wp + o0;
            for (int i = 0; i < nb; i++) {
                __m512 xv = _mm512_maskz_loadu_ps(m, base + off[i]);
                for (int c = 0; c < nc; c++) acc[c][i] = _mm512_fmadd_ps(gv[c], xv, acc[c][i]);
            }
        }
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < nb; i++) gw[c][i] = lanes_sum(acc[c][i]);
}

/* Every tap of nc (1 or 2: a constant after inlining) output channels, in
 * blocks of 8, 4, 2 and 1 taps (constants too): BLOCK(..., off + t, NB, o)
 * with o[c] = out[c] + t. Shared by the f32 / widened and the bf16 kernels;
 * uses nc, off, taps and out of the calling function. */
#define GW_STEP(BLOCK, NB, ...)                                     \
    do {                                                            \
        for (int c_ = 0; c_ < nc; c_++) o_[c_] = out[c_] + t_;      \
        BLOCK(__VA_ARGS__, off + t_, NB, o_);                       \
        t_ += NB;                                                   \
    } while (0)
#define GW_TAPS(BLOCK, ...)                                         \
    do {                                                            \
        int64_t t_ = 0;                                             \
        double *o_[2];                                              \
        while (t_ + 8 <= taps) GW_STEP(BLOCK, 8, __VA_ARGS__);      \
        if (t_ + 4 <= taps) GW_STEP(BLOCK, 4, __VA_ARGS__);         \
        if (t_ + 2 <= taps) GW_STEP(BLOCK, 2, __VA_ARGS__);         \
        if (t_ < taps) GW_STEP(BLOCK, 1, __VA_ARGS__);              \
    } while (0)

THIN_AVX512 static inline __attribute__((always_inline)) void
gw_channels(const thin_geom *g, const float *xp, const void *const *gp, int32_t half, int nc,
            const int64_t *off, int64_t taps, double *const *out) {
    GW_TAPS(gw_block, g, xp, gp, half, nc);
}

/* One image's contribution to every weight: gw[oc * taps + t] (double) =
 * the sum over the image's outputs of grad_y times the tap's input; output
 * channels in pairs. */
THIN_AVX512 static void thin_grad_weight_image(const thin_geom *g, const float *xp,
                                               const void *gy, int32_t half, double *gw) {
    int64_t off[THIN_TAPS], taps = tap_offsets(g, off), plane = g->ho * g->wo;
    size_t es = half ? 2 : 4;
    const char *gb = gy;
    int64_t oc = 0;
    for (; oc + 2 <= g->co; oc += 2) {
        const void *gp[2] = {gb + (size_t)(oc * plane) * es, gb + (size_t)((oc + 1) * plane) * es};
        double *out[2] = {gw + oc * taps, gw + (oc + 1) * taps};
        gw_channels(g, xp, gp, half, 2, off, taps, out);
    }
    if (oc < g->co) {
        const void *gp[1] = {gb + (size_t)(oc * plane) * es};
        double *out[1] = {gw + oc * taps};
        gw_channels(g, xp, gp, half, 1, off, taps, out);
    }
}
#endif

/* bf16 weight gradients on CPUs with AVX512-BF16: vdpbf16ps multiplies 32
 * bf16 pairs a step and adds each pair of neighbouring products into an f32
 * lane, so a row of up to 32 outputs is one step, grad_y and the input read
 * as stored (the padded image kept in bf16). The products are exact; the
 * sums differ from the f32 kernel's by their order only (and bf16
 * subnormals, which the instruction treats as 0), as oneDNN's bf16
 * convolutions do. Measured at 1 thread: [64, 1, 28, 28] -> 16, 3x3,
 * 174 -> 133 us (the f32 form: 181). */
#define THIN_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,f16c")))
THIN_BF16 static inline __attribute__((always_inline)) void
gw_block_bf16(const thin_geom *g, const uint16_t *xp, const uint16_t *const *gp, int nc,
              const int64_t *off, int nb, double *const *gw) {
    __m512 acc[2][8];
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < nb; i++) acc[c][i] = _mm512_setzero_ps();
    int64_t wp = g->wp, wo = g->wo, pf = 2 * g->ho * g->wo;
    for (int64_t oh = 0; oh < g->ho; oh++)
        for (int64_t o0 = 0; o0 < wo; o0 += 32) {
            int64_t len = wo - o0 < 32 ? wo - o0 : 32;
            __mmask32 m = len == 32 ? ~(__mmask32)0 : (__mmask32)((1u << len) - 1);
            __m512i gv[2];
            for (int c = 0; c < nc; c++) {
                gv[c] = _mm512_maskz_loadu_epi16(m, gp[c] + oh * wo + o0);
                /* the next pair of channels' planes (grad_y comes from memory
                 * in a training step: measured 1.30 -> 0.53 ms with it for
                 * [128, 32, 28, 28] in Fashion-MNIST) */
                _mm_prefetch((const char *)(gp[c] + pf + oh * wo + o0), _MM_HINT_T0);
            }
            const uint16_t *base = xp + oh * wp + o0;
            for (int i = 0; i < nb; i++) {
                __m512i xv = _mm512_maskz_loadu_epi16(m, base + off[i]);
                for (int c = 0; c < nc; c++)
                    acc[c][i] = _mm512_dpbf16_ps(acc[c][i], (__m512bh)gv[c], (__m512bh)xv);
            }
        }
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < nb; i++) gw[c][i] = lanes_sum(acc[c][i]);
}

/* gw_channels for gw_block_bf16. */
THIN_BF16 static inline __attribute__((always_inline)) void
gw_channels_bf16(const thin_geom *g, const uint16_t *xp, const uint16_t *const *gp, int nc,
                 const int64_t *off, int64_t taps, double *const *out) {
    GW_TAPS(gw_block_bf16, g, xp, gp, nc);
}

THIN_BF16 static void thin_grad_weight_image_bf16(const thin_geom *g, const uint16_t *xp,
                                                  const uint16_t *gy, double *gw) {
    int64_t off[THIN_TAPS], taps = tap_offsets(g, off), plane = g->ho * g->wo;
    int64_t oc = 0;
    for (; oc + 2 <= g->co; oc += 2) {
        const uint16_t *gp[2] = {gy + oc * plane, gy + (oc + 1) * plane};
        double *out[2] = {gw + oc * taps, gw + (oc + 1) * taps};
        gw_channels_bf16(g, xp, gp, 2, off, taps, out);
    }
    if (oc < g->co) {
        const uint16_t *gp[1] = {gy + oc * plane};
        double *out[1] = {gw + oc * taps};
        gw_channels_bf16(g, xp, gp, 1, off, taps, out);
    }
}

/* Output channels oc0 .. oc0 + NB - 1 (a constant after inlining) of one
 * row chunk from the interleaved tap pairs. */
THIN_BF16 static inline __attribute__((always_inline)) void
fw_block_bf16(const __m512i *xv, int64_t pairs, const uint32_t *wp2, const float *bias,
              int64_t oc0, int nb, uint16_t *yo, int64_t plane, int64_t row, __mmask16 m) {
    __m512 acc[4];
    for (int i = 0; i < nb; i++) acc[i] = _mm512_set1_ps(bias ? bias[oc0 + i] : 0.0f);
    for (int64_t q = 0; q < pairs; q++)
        for (int i = 0; i < nb; i++)
            acc[i] = _mm512_dpbf16_ps(
                acc[i], (__m512bh)xv[q],
                (__m512bh)_mm512_set1_epi32((int32_t)wp2[(oc0 + i) * pairs + q]));
    for (int i = 0; i < nb; i++) {
        _mm256_mask_storeu_epi16(yo + (oc0 + i) * plane, m, odn_hv_f32_to_bf16(acc[i]));
        /* the lines of this chunk two rows down: a write stream per channel */
        _mm_prefetch((const char *)(yo + (oc0 + i) * plane + 2 * row), _MM_HINT_T0);
    }
}

/* bf16 forward on CPUs with AVX512-BF16: the taps in pairs, each pair's
 * two shifted input vectors interleaved into one (one word permute), so
 * that one vdpbf16ps adds two taps' products for sixteen outputs; the
 * weights as bf16 pairs (wp2[oc * pairs + q]: taps 2q and 2q + 1 in the low
 * and high half). Sums in f32 from the bias, each output rounded once.
 * Measured at 1 thread: [64, 1, 28, 28] -> 16, 3x3, 155 -> 131 us. */
THIN_BF16 static void thin_forward_image_bf16(const thin_geom *g, const uint16_t *xp,
                                              const uint32_t *wp2, const float *bias,
                                              uint16_t *y) {
    int64_t off[THIN_TAPS], taps = tap_offsets(g, off), plane = g->ho * g->wo;
    int64_t pairs = (taps + 1) / 2;
    const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                           24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                           16, 0);
    __m512i xv[THIN_TAPS / 2];
    for (int64_t oh = 0; oh < g->ho; oh++)
        for (int64_t o0 = 0; o0 < g->wo; o0 += THIN_LANES) {
            __mmask16 m = lanes_of(g->wo - o0);
            const uint16_t *base = xp + oh * g->wp + o0;
            for (int64_t q = 0; q < pairs; q++) {
                __m256i a = _mm256_maskz_loadu_epi16(m, base + off[2 * q]);
                __m256i b = 2 * q + 1 < taps ? _mm256_maskz_loadu_epi16(m, base + off[2 * q + 1])
                                             : _mm256_setzero_si256();
                xv[q] = _mm512_permutexvar_epi16(
                    inter, _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1));
            }
            uint16_t *yo = y + oh * g->wo + o0;
            int64_t oc = 0;
            for (; oc + 4 <= g->co; oc += 4)
                fw_block_bf16(xv, pairs, wp2, bias, oc, 4, yo, plane, g->wo, m);
            for (; oc < g->co; oc++)
                fw_block_bf16(xv, pairs, wp2, bias, oc, 1, yo, plane, g->wo, m);
        }
}

gfp_status odn_conv_thin(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params) {
#ifndef THIN_AVX512
    (void)op, (void)in, (void)n_in, (void)out, (void)n_out, (void)params;
    return ODN_FALLBACK; /* oneDNN's kernels, without AVX-512 here */
#else
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl"))
        return ODN_FALLBACK;
    if (n_out != 1 || !out[0]) return ODN_FALLBACK;
    thin_geom g;
    const gfp_tensor *x, *w, *y, *bias = NULL;
    if (op == GFP_OP_CONV2D) {
        if (n_in != 2 && n_in != 3) return ODN_FALLBACK;
        x = in[0], w = in[1], y = out[0];
        if (n_in == 3 && in[2]) {
            bias = in[2];
            if (bias->dtype != x->dtype || bias->rank != 1 || !odn_is_contiguous(bias))
                return ODN_FALLBACK;
        }
        if (!thin_geometry(&g, x, w, y, params) || !odn_writable(y)) return ODN_FALLBACK;
        if (bias && bias->sizes[0] != g.co) return ODN_FALLBACK;
        if (y->buffer == x->buffer || y->buffer == w->buffer) return ODN_FALLBACK;
    } else if (op == GFP_OP_CONV2D_BACKWARD_WEIGHT) {
        if (n_in != 2) return ODN_FALLBACK;
        y = in[0], x = in[1], w = out[0]; /* y: grad_y, w: grad_weight */
        if (!thin_geometry(&g, x, w, y, params) || !odn_writable(w)) return ODN_FALLBACK;
    } else {
        return ODN_FALLBACK;
    }
    odn_ctx *ctx;
    gfp_status cst = odn_ctx_acquire(&ctx);
    if (cst != GFP_OK) return cst;
    int64_t taps = g.ci * g.kh * g.kw, plane = g.ci * g.hp * g.wp;
    int64_t xs = g.ci * g.h * g.w, ys = g.co * g.ho * g.wo;
    bool half = g.dtype != GFP_F32;
    size_t es = half ? 2 : 4;
    int nt = odn_threads(g.n * g.co * g.ho * g.wo * taps / 8);
    if (nt > g.n) nt = (int)g.n;
    int teams = nt > 1 ? nt : 1;
    /* per thread: the padded image (f32); 16-bit y and grad_y are rounded
     * and widened in registers */
    int64_t per = plane;
    int64_t total = g.co * taps; /* weights: 16-bit gradients are summed into scratch */
    int64_t floats = per * teams > total ? per * teams : total;
    float *scratch = odn_arena_alloc(ctx, sizeof(float) * (size_t)floats);
    double *part = op == GFP_OP_CONV2D ? NULL
                                       : odn_arena_alloc(ctx, sizeof(double) *
                                                                  (size_t)(g.n * g.co * taps));
    float *w32 = half && op == GFP_OP_CONV2D
                     ? odn_arena_alloc(ctx, sizeof(float) * (size_t)(g.co * taps + g.co))
                     : NULL;
    if (!scratch || (op != GFP_OP_CONV2D && !part) || (half && op == GFP_OP_CONV2D && !w32))
        return GFP_ERR_OUT_OF_MEMORY;
    const char *xb = (const char *)x->buffer + x->offset;
    if (op == GFP_OP_CONV2D) {
        const float *wb = half ? w32 : odn_f32(w), *bb = NULL;
        if (half) {
            odn_half_to_f32(w32, (const uint16_t *)(const void *)((const char *)w->buffer +
                                                                  w->offset),
                            g.co * taps, g.dtype);
            if (bias) {
                odn_half_to_f32(w32 + g.co * taps,
                                (const uint16_t *)(const void *)((const char *)bias->buffer +
                                                                 bias->offset),
                                g.co, g.dtype);
                bb = w32 + g.co * taps;
            }
        } else if (bias) {
            bb = odn_f32(bias);
        }
        char *yb = (char *)y->buffer + y->offset;
        if (g.dtype == GFP_BF16 && odn_bf16) {
            int64_t pairs = (taps + 1) / 2;
            uint32_t *wp2 = odn_arena_alloc(ctx, sizeof(uint32_t) * (size_t)(g.co * pairs));
            if (!wp2) return GFP_ERR_OUT_OF_MEMORY;
            const uint16_t *w16 =
                (const uint16_t *)(const void *)((const char *)w->buffer + w->offset);
            for (int64_t oc = 0; oc < g.co; oc++)
                for (int64_t q = 0; q < pairs; q++) {
                    uint32_t lo = w16[oc * taps + 2 * q];
                    uint32_t hi = 2 * q + 1 < taps ? w16[oc * taps + 2 * q + 1] : 0;
                    wp2[oc * pairs + q] = lo | hi << 16;
                }
            ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t n = 0; n < g.n; n++) {
                uint16_t *buf = (uint16_t *)(void *)(scratch + per * odn_team_thread(nt));
                pad_image_bf16(&g, xb + (size_t)(n * xs) * es, buf);
                thin_forward_image_bf16(&g, buf, wp2, bb,
                                        (uint16_t *)(void *)yb + (size_t)(n * ys));
            });
            return GFP_OK;
        }
        ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t n = 0; n < g.n; n++) {
            float *buf = scratch + per * odn_team_thread(nt);
            pad_image(&g, xb + (size_t)(n * xs) * es, buf);
            /* f32 sums, each output rounded once when 16-bit */
            thin_forward_image(&g, buf, wb, bb, yb + (size_t)(n * ys) * es, half ? g.dtype : 0);
        });
        return GFP_OK;
    }
    const char *gyb = (const char *)y->buffer + y->offset;
    if (g.dtype == GFP_BF16 && odn_bf16) { /* padded images in bf16: half the floats */
        ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t n = 0; n < g.n; n++) {
            uint16_t *buf = (uint16_t *)(void *)(scratch + per * odn_team_thread(nt));
            pad_image_bf16(&g, xb + (size_t)(n * xs) * es, buf);
            thin_grad_weight_image_bf16(&g, buf, (const uint16_t *)(const void *)gyb + n * ys,
                                        part + n * g.co * taps);
        });
    } else {
        ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t n = 0; n < g.n; n++) {
            float *buf = scratch + per * odn_team_thread(nt);
            pad_image(&g, xb + (size_t)(n * xs) * es, buf);
            thin_grad_weight_image(&g, buf, gyb + (size_t)(n * ys) * es, half ? g.dtype : 0,
                                   part + n * g.co * taps);
        });
    }
    float *gw32 = half ? scratch : odn_f32_mut(w); /* the sums, then rounded once */
    for (int64_t k = 0; k < total; k++) {
        double s = 0;
        for (int64_t n = 0; n < g.n; n++) s += part[n * total + k];
        gw32[k] = (float)s;
    }
    if (half)
        odn_f32_to_half((uint16_t *)(void *)((char *)w->buffer + w->offset), gw32, total,
                        g.dtype);
    return GFP_OK;
#endif
}
