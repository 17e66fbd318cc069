/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_transpose.h — 16 x 16 transposes in AVX-512 registers, the one home
 * of them: elementwise tiles (omp_elementwise.c), the copied operand of the
 * small matmuls (omp_gemm_small.c) and the NCHW <-> nChw16c layouts around
 * oneDNN's convolutions (omp_layout.c). Include after immintrin.h; the
 * functions carry their target. */
#ifndef GRAFT_OMP_TRANSPOSE_H
#define GRAFT_OMP_TRANSPOSE_H

#include <immintrin.h>

/* r[i] (sixteen 4-byte lanes each) transposed in place: afterwards r[j]
 * holds lane j of every input row, row i in lane i. Unpacks within 128-bit
 * blocks, then block shuffles. */
static inline __attribute__((always_inline, target("avx512f"))) void odn_t16_f32(__m512 *r) {
    __m512 t[16];
    for (int j = 0; j < 16; j += 2) {
        t[j] = _mm512_unpacklo_ps(r[j], r[j + 1]);
        t[j + 1] = _mm512_unpackhi_ps(r[j], r[j + 1]);
    }
    for (int j = 0; j < 16; j += 4)
        for (int k = 0; k < 2; k++) {
            __m512d a = _mm512_castps_pd(t[j + k]), b = _mm512_castps_pd(t[j + k + 2]);
            r[j + 2 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            r[j + 2 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    for (int h = 0; h < 16; h += 8)
        for (int k = 0; k < 4; k++) {
            t[h + k] = _mm512_shuffle_f32x4(r[h + k], r[h + k + 4], 0x88);
            t[h + k + 4] = _mm512_shuffle_f32x4(r[h + k], r[h + k + 4], 0xdd);
        }
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xdd);
    }
}

/* The same for sixteen 2-byte lanes in 256-bit rows: four unpack stages
 * (pairs, quads, octets of rows), then the two octets side by side. */
static inline __attribute__((always_inline, target("avx2"))) void odn_t16_u16(__m256i *r) {
    __m256i a[16], b[16];
    for (int i = 0; i < 8; i++) {
        a[2 * i] = _mm256_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    for (int j = 0; j < 4; j++) /* b[4j + m]: lanes 2m, 2m + 1 of rows 4j .. 4j + 3 */
        for (int k = 0; k < 2; k++) {
            b[4 * j + 2 * k] = _mm256_unpacklo_epi32(a[4 * j + k], a[4 * j + 2 + k]);
            b[4 * j + 2 * k + 1] = _mm256_unpackhi_epi32(a[4 * j + k], a[4 * j + 2 + k]);
        }
    for (int i = 0; i < 2; i++) /* a[8i + q]: lane q (and 8 + q) of rows 8i .. 8i + 7 */
        for (int m = 0; m < 4; m++) {
            a[8 * i + 2 * m] = _mm256_unpacklo_epi64(b[8 * i + m], b[8 * i + 4 + m]);
            a[8 * i + 2 * m + 1] = _mm256_unpackhi_epi64(b[8 * i + m], b[8 * i + 4 + m]);
        }
    for (int q = 0; q < 8; q++) {
        r[q] = _mm256_permute2x128_si256(a[q], a[8 + q], 0x20);
        r[8 + q] = _mm256_permute2x128_si256(a[q], a[8 + q], 0x31);
    }
}

#endif
