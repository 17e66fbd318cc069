/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_half_native.c — f16 / bf16 launches that read and write 16-bit
 * storage directly, without the f32 copies of omp_half.c.
 *
 * A small CNN under autocast spends most of its memory-bound time in ReLU,
 * its gradient, max pooling and the bias gradient. Through the widened path
 * these moved more bytes than their f32 forms (measured at 1 thread, [64,
 * 16, 28, 28] bf16: relu 125 us against 91 in f32, relu_backward 189 against
 * 177, max pooling's backward 207 against 172, the bias sum 143 against
 * 109), where half the bytes should make them faster. Here:
 *  - RELU and RELU_BACKWARD select bits, exact in any dtype: a 16-bit float
 *    read as a signed integer s is "greater than 0 or NaN" exactly when
 *    s > -inf's pattern (bf16 0xff80 = -128, f16 0xfc00 = -1024) and s != 0
 *    (s == 0 is +0, which both ops map to +0 anyway; -0, -inf and every
 *    negative number lie at or below -inf's pattern; a negative NaN lies
 *    above it). 32 elements a step with AVX-512BW.
 *  - MAX_POOL2D / MAX_POOL2D_BACKWARD 2x2 (onednn_pool.c) and SUM / MEAN
 *    (omp_reduce.c) convert a plane or a run at a time in registers or L1.
 * Every result is bit for bit the widened path's (the tests compare the
 * two with the reference). A launch these do not take returns ODN_FALLBACK
 * with nothing written, and run_family goes on to the widened path. */
#include "onednn_internal.h"

/* s > lim && s != 0: the element passes (lim: -inf's pattern as int16). */
static inline bool passes(int16_t s, int16_t lim) { return s > lim && s != 0; }

static void relu_c(uint16_t *y, const uint16_t *x, int64_t n, int16_t lim) {
    for (int64_t i = 0; i < n; i++) y[i] = passes((int16_t)x[i], lim) ? x[i] : 0;
}
static void relu_bwd_c(uint16_t *y, const uint16_t *a, const uint16_t *b, int64_t n,
                       int16_t lim) {
    for (int64_t i = 0; i < n; i++) y[i] = passes((int16_t)b[i], lim) ? a[i] : 0;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HN_AVX512 __attribute__((target("avx512f,avx512bw")))
HN_AVX512 static inline __mmask32 pass_mask(__m512i s, __m512i lim) {
    return _mm512_cmpgt_epi16_mask(s, lim) & _mm512_cmpneq_epi16_mask(s, _mm512_setzero_si512());
}
/* b == NULL: relu of a; else relu_backward (a where b passes). */
HN_AVX512 static void select_avx512(uint16_t *y, const uint16_t *a, const uint16_t *b, int64_t n,
                                    int16_t lim) {
    const __m512i vl = _mm512_set1_epi16(lim);
    int64_t i = 0;
    for (; i < n; i += 32) {
        __mmask32 m = n - i >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << (n - i)) - 1);
        __m512i va = _mm512_maskz_loadu_epi16(m, a + i);
        __m512i vb = b ? _mm512_maskz_loadu_epi16(m, b + i) : va;
        _mm512_mask_storeu_epi16(y + i, m, _mm512_maskz_mov_epi16(pass_mask(vb, vl), va));
    }
}
static bool have_bw(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}
#define HN_VECTOR 1
#endif

static void select_run(uint16_t *y, const uint16_t *a, const uint16_t *b, int64_t n,
                       int16_t lim) {
#ifdef HN_VECTOR
    if (have_bw()) {
        select_avx512(y, a, b, n, lim);
        return;
    }
#endif
    if (b) relu_bwd_c(y, a, b, n, lim);
    else relu_c(y, a, n, lim);
}

static gfp_status select_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                const gfp_tensor *const *out, uint32_t n_out) {
    uint32_t want = op == GFP_OP_RELU ? 1 : 2;
    if (n_in != want || n_out != 1 || !out[0]) return ODN_FALLBACK;
    const gfp_tensor *y = out[0];
    if (!pk_is_half(y->dtype) || !odn_is_contiguous(y) || !odn_writable(y)) return ODN_FALLBACK;
    for (uint32_t i = 0; i < n_in; i++)
        if (!in[i] || in[i]->dtype != y->dtype || !pk_same_shape(in[i], y) ||
            !odn_is_contiguous(in[i]))
            return ODN_FALLBACK;
    int64_t n = pk_numel(y);
    if (n == 0) return GFP_OK;
    int16_t lim = y->dtype == GFP_BF16 ? (int16_t)-128 : (int16_t)-1024;
    const uint16_t *a =
        (const uint16_t *)(const void *)((const char *)in[0]->buffer + in[0]->offset);
    const uint16_t *b = n_in == 2 ? (const uint16_t *)(const void *)((const char *)in[1]->buffer +
                                                                       in[1]->offset)
                                  : NULL;
    uint16_t *yb = (uint16_t *)(void *)((char *)y->buffer + y->offset);
    int nt = odn_threads(n);
    ODN_PARALLEL(nt, t, k, {
        /* blocks of 32 elements: the threads never share a cache line's store */
        int64_t blocks = (n + 31) / 32, lo = blocks / k * t * 32,
                hi = t + 1 == k ? n : blocks / k * (t + 1) * 32;
        if (hi > lo) select_run(yb + lo, a + lo, b ? b + lo : NULL, hi - lo, lim);
    });
    return GFP_OK;
}

gfp_status odn_half_native(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    switch (op) {
    case GFP_OP_RELU:
    case GFP_OP_RELU_BACKWARD: return select_launch(op, in, n_in, out, n_out);
    case GFP_OP_MAX_POOL2D:
    case GFP_OP_MAX_POOL2D_BACKWARD: return odn_pool_launch(op, in, n_in, out, n_out, params);
    case GFP_OP_SUM:
    case GFP_OP_MEAN: return odn_reduce_launch(op, in, n_in, out, n_out, params);
    default: return ODN_FALLBACK;
    }
}
