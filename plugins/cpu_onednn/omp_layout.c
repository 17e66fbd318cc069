/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_layout.c — 16-bit tensors between dense NCHW and oneDNN's blocked
 * nChw16c (aBcd16b: channel blocks of 16 innermost, channels past C zero).
 *
 * oneDNN's bf16 convolutions run on nChw16c, and oneDNN 2.6 reorders 16-bit
 * NCHW tensors with its generic kernel (jit:uni): measured at 1 thread, 97
 * us into and 105 us out of [64, 32, 14, 14] bf16, against ~20 us for the
 * f32 tensor twice its size (jit:blk) — together 40% of a bf16 convolution
 * of a small CNN. Here a block of 16 channels x 16 pixels is one transpose
 * of sixteen 256-bit rows (four unpack stages), in both directions; the
 * copies are exact, so nothing but the time changes. */
#include <string.h>

#include "onednn_internal.h"

/* dst[(b * hw + p) * 16 + k] = src[(16 b + k) * hw + p] for one image:
 * c channels, cb = ceil(c / 16) blocks; lanes past c are 0. */
static void to_blocked_c(uint16_t *dst, const uint16_t *src, int64_t c, int64_t hw) {
    int64_t cb = (c + 15) / 16;
    for (int64_t b = 0; b < cb; b++)
        for (int64_t p = 0; p < hw; p++)
            for (int64_t k = 0; k < 16; k++) {
                int64_t ch = 16 * b + k;
                dst[(b * hw + p) * 16 + k] = ch < c ? src[ch * hw + p] : 0;
            }
}

static void from_blocked_c(uint16_t *dst, const uint16_t *src, int64_t c, int64_t hw) {
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t p = 0; p < hw; p++) dst[ch * hw + p] = src[((ch / 16) * hw + p) * 16 + ch % 16];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define LAYOUT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2")))

/* r[i] (sixteen 16-bit lanes each) transposed in place: afterwards r[j]
 * holds lane j of every input row, row i in lane i. */
LAYOUT_AVX512 static inline __attribute__((always_inline)) void transpose16(__m256i *r) {
    __m256i a[16], b[16];
    for (int i = 0; i < 8; i++) { /* pairs of rows: lanes 0-3 / 4-7 of each half */
        a[2 * i] = _mm256_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    for (int j = 0; j < 4; j++) /* quads of rows: b[4j + m] has lanes 2m, 2m + 1 */
        for (int k = 0; k < 2; k++) {
            b[4 * j + 2 * k] = _mm256_unpacklo_epi32(a[4 * j + k], a[4 * j + 2 + k]);
            b[4 * j + 2 * k + 1] = _mm256_unpackhi_epi32(a[4 * j + k], a[4 * j + 2 + k]);
        }
    for (int i = 0; i < 2; i++) /* octets of rows: a[8i + q] has lane q (and 8 + q) */
        for (int m = 0; m < 4; m++) {
            a[8 * i + 2 * m] = _mm256_unpacklo_epi64(b[8 * i + m], b[8 * i + 4 + m]);
            a[8 * i + 2 * m + 1] = _mm256_unpackhi_epi64(b[8 * i + m], b[8 * i + 4 + m]);
        }
    for (int q = 0; q < 8; q++) { /* the two octets side by side */
        r[q] = _mm256_permute2x128_si256(a[q], a[8 + q], 0x20);
        r[8 + q] = _mm256_permute2x128_si256(a[q], a[8 + q], 0x31);
    }
}

LAYOUT_AVX512 static void to_blocked_avx512(uint16_t *dst, const uint16_t *src, int64_t c,
                                            int64_t hw) {
    int64_t cb = (c + 15) / 16;
    for (int64_t b = 0; b < cb; b++)
        for (int64_t p0 = 0; p0 < hw; p0 += 16) {
            int64_t np = hw - p0 < 16 ? hw - p0 : 16;
            __mmask16 m = (__mmask16)(np == 16 ? 0xffffu : (1u << np) - 1);
            __m256i r[16];
            for (int k = 0; k < 16; k++) {
                int64_t ch = 16 * b + k;
                r[k] = ch < c ? _mm256_maskz_loadu_epi16(m, src + ch * hw + p0)
                              : _mm256_setzero_si256();
            }
            transpose16(r);
            uint16_t *out = dst + (b * hw + p0) * 16;
            for (int64_t p = 0; p < np; p++)
                _mm256_storeu_si256((__m256i *)(void *)(out + p * 16), r[p]);
        }
}

LAYOUT_AVX512 static void from_blocked_avx512(uint16_t *dst, const uint16_t *src, int64_t c,
                                              int64_t hw) {
    int64_t cb = (c + 15) / 16;
    for (int64_t b = 0; b < cb; b++)
        for (int64_t p0 = 0; p0 < hw; p0 += 16) {
            int64_t np = hw - p0 < 16 ? hw - p0 : 16;
            __mmask16 m = (__mmask16)(np == 16 ? 0xffffu : (1u << np) - 1);
            __m256i r[16];
            const uint16_t *in = src + (b * hw + p0) * 16;
            for (int64_t p = 0; p < 16; p++)
                r[p] = p < np ? _mm256_loadu_si256((const __m256i *)(const void *)(in + p * 16))
                              : _mm256_setzero_si256();
            transpose16(r);
            for (int k = 0; k < 16 && 16 * b + k < c; k++)
                _mm256_mask_storeu_epi16(dst + (16 * b + k) * hw + p0, m, r[k]);
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
            if (to_blocked) to_blocked_avx512(bl, pl, c, hw);
            else from_blocked_avx512(pl, bl, c, hw);
            continue;
        }
#endif
        (void)vec;
        if (to_blocked) to_blocked_c(bl, pl, c, hw);
        else from_blocked_c(pl, bl, c, hw);
    });
}
