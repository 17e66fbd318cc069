/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_layout.c — 16-bit tensors between dense NCHW and oneDNN's blocked
 * nChw16c (aBcd16b: channel blocks of 16 innermost, channels past C zero),
 * around its bf16 convolutions (onednn_conv.c).
 *
 * oneDNN 2.6 reorders 16-bit NCHW tensors with its generic kernel (jit:uni):
 * measured at 1 thread, 97 us into and 105 us out of [64, 32, 14, 14] bf16,
 * ~40% of a small bf16 convolution. Here a block of 16 channels x 16 pixels
 * is one transpose in registers (omp_transpose.h), in both directions; the
 * copies are exact, so nothing but the time changes. f32 keeps oneDNN's
 * jit:blk reorders: the same transposes in f32 (odn_t16_f32) measured
 * slower there ([128, 32, 14, 14] -> 64 at 1 thread: a convolution 4.35 ->
 * 4.72 ms with them), the sixteen channel planes read as sixteen streams. */
#include <string.h>

#include "onednn_internal.h"

/* The C loops (any CPU): dst[(b * hw + p) * 16 + k] = src[(16 b + k) * hw +
 * p] for one image of c channels; lanes past c are 0. */
#define LAYOUT_C(T)                                                                       \
    static void to_blocked_##T(T *dst, const T *src, int64_t c, int64_t hw) {             \
        int64_t cb = (c + 15) / 16;                                                       \
        for (int64_t b = 0; b < cb; b++)                                                  \
            for (int64_t p = 0; p < hw; p++)                                              \
                for (int64_t k = 0; k < 16; k++) {                                        \
                    int64_t ch = 16 * b + k;                                              \
                    dst[(b * hw + p) * 16 + k] = ch < c ? src[ch * hw + p] : 0;           \
                }                                                                         \
    }                                                                                     \
    static void from_blocked_##T(T *dst, const T *src, int64_t c, int64_t hw) {           \
        for (int64_t ch = 0; ch < c; ch++)                                                \
            for (int64_t p = 0; p < hw; p++)                                              \
                dst[ch * hw + p] = src[((ch / 16) * hw + p) * 16 + ch % 16];              \
    }
LAYOUT_C(uint16_t)

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "omp_transpose.h"
#define LAYOUT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2")))

/* One image, in the direction to_blocked says: each block of 16 channels
 * x 16 pixels loaded as sixteen rows, transposed, stored as sixteen rows. */
LAYOUT_AVX512 static void blocks_avx512(uint16_t *plain, uint16_t *blocked, int64_t c, int64_t hw,
                                        bool to_blocked) {
    int64_t cb = (c + 15) / 16;
    for (int64_t b = 0; b < cb; b++)
        for (int64_t p0 = 0; p0 < hw; p0 += 16) {
            int64_t np = hw - p0 < 16 ? hw - p0 : 16;
            __mmask16 m = (__mmask16)(np == 16 ? 0xffffu : (1u << np) - 1);
            uint16_t *blk = blocked + (b * hw + p0) * 16;
            __m256i r[16];
            if (to_blocked) { /* rows: channels (past c: 0), 16 pixels each */
                for (int k = 0; k < 16; k++) {
                    int64_t ch = 16 * b + k;
                    r[k] = ch < c ? _mm256_maskz_loadu_epi16(m, plain + ch * hw + p0)
                                  : _mm256_setzero_si256();
                }
                odn_t16_u16(r);
                for (int64_t p = 0; p < np; p++)
                    _mm256_storeu_si256((__m256i *)(void *)(blk + p * 16), r[p]);
            } else { /* rows: pixels (past hw: 0), 16 channels each */
                for (int64_t p = 0; p < 16; p++)
                    r[p] = p < np
                               ? _mm256_loadu_si256((const __m256i *)(const void *)(blk + p * 16))
                               : _mm256_setzero_si256();
                odn_t16_u16(r);
                for (int k = 0; k < 16 && 16 * b + k < c; k++)
                    _mm256_mask_storeu_epi16(plain + (16 * b + k) * hw + p0, m, r[k]);
            }
        }
}

static bool have_avx512(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}
#define LAYOUT_VECTOR 1
#endif

void odn_nchw16c_16bit(void *blocked, void *plain, int64_t n, int64_t c, int64_t hw,
                       bool to_blocked) {
    int64_t cb = (c + 15) / 16, pstride = c * hw, bstride = cb * 16 * hw;
    int nt = odn_threads(n * bstride);
    if (nt > n) nt = (int)n;
#ifdef LAYOUT_VECTOR
    bool vec = have_avx512();
#else
    const bool vec = false;
#endif
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t i = 0; i < n; i++) {
        uint16_t *bl = (uint16_t *)blocked + i * bstride, *pl = (uint16_t *)plain + i * pstride;
#ifdef LAYOUT_VECTOR
        if (vec) {
            blocks_avx512(pl, bl, c, hw, to_blocked);
            continue;
        }
#endif
        (void)vec;
        if (to_blocked) to_blocked_uint16_t(bl, pl, c, hw);
        else from_blocked_uint16_t(pl, bl, c, hw);
    });
}
