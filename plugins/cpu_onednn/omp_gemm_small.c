/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_gemm_small.c — MATMUL f32 of many small matrices: attention's
 * per-head products ([B, H, T, d] @ [B, H, d, T] and back, T and d of a few
 * to a few dozen).
 *
 * oneDNN 2.6's batched matmul spends a fixed set-up on every matrix of the
 * batch: measured at 1 thread (Zen 5), 256 products of 8x12 @ 12x8 took 19
 * us, ~75 ns (~330 cycles) each for 768 multiply-adds. Here each product is
 * a few dozen FMAs in registers: a row of y (at most 32 columns: one or two
 * vectors) is the sum over k of a[i, k] times row k of b, k ascending, f32
 * FMAs, four rows at a time. b's rows are read in place when its columns are
 * unit-stride, else copied once per matrix into a row-major block (a
 * transposed operand, K^T in attention). Any
 * strides for a and the batch dims (broadcast included); y's rows
 * unit-stride. Larger matrices stay with oneDNN. */
#include <math.h>

#include "onednn_internal.h"

enum { SMALL_M = 64, SMALL_K = 64, SMALL_N = 32, SMALL_MIN_BATCH = 4 };

typedef struct small_geom {
    int nb; /* batch dims */
    int64_t bsize[GFP_MAX_RANK], as[GFP_MAX_RANK], bs[GFP_MAX_RANK], ys[GFP_MAX_RANK];
    int64_t batch, M, K, N;
    int64_t a_r, a_c, b_r, b_c, y_r; /* row / column strides of the matrices */
} small_geom;

static bool small_plan(small_geom *g, const gfp_tensor *a, const gfp_tensor *b,
                       const gfp_tensor *y) {
    int r = y->rank;
    if (y->dtype != GFP_F32 || a->dtype != GFP_F32 || b->dtype != GFP_F32 || r < 3) return false;
    g->M = y->sizes[r - 2], g->N = y->sizes[r - 1], g->K = a->sizes[r - 1];
    if (g->M > SMALL_M || g->N > SMALL_N || g->K > SMALL_K || g->K < 1) return false;
    if (y->strides[r - 1] != 1 && g->N > 1) return false;
    g->nb = r - 2;
    g->batch = 1;
    for (int d = 0; d < g->nb; d++) {
        g->bsize[d] = y->sizes[d];
        g->as[d] = a->strides[d], g->bs[d] = b->strides[d], g->ys[d] = y->strides[d];
        if (y->strides[d] == 0 && y->sizes[d] > 1) return false; /* y overlapping itself */
        g->batch *= y->sizes[d];
    }
    if (g->batch < SMALL_MIN_BATCH) return false;
    if (g->M > 1 && y->strides[r - 2] == 0) return false;
    g->a_r = a->strides[r - 2], g->a_c = a->strides[r - 1];
    g->b_r = b->strides[r - 2], g->b_c = b->strides[r - 1];
    g->y_r = y->strides[r - 2];
    return true;
}

/* The batch index of product j (idx, one entry per batch dim) and its
 * element offsets in a, b and y. */
static void batch_start(const small_geom *g, int64_t j, int64_t *idx, int64_t *oa, int64_t *ob,
                        int64_t *oy) {
    int64_t a = 0, b = 0, y = 0;
    for (int d = g->nb - 1; d >= 0; d--) {
        idx[d] = j % g->bsize[d];
        j /= g->bsize[d];
        a += idx[d] * g->as[d], b += idx[d] * g->bs[d], y += idx[d] * g->ys[d];
    }
    *oa = a, *ob = b, *oy = y;
}

/* idx and the offsets moved on to the next product (an odometer over the
 * batch dims). */
static void step(const small_geom *g, int64_t *idx, int64_t *oa, int64_t *ob, int64_t *oy) {
    for (int d = g->nb - 1; d >= 0; d--) {
        *oa += g->as[d], *ob += g->bs[d], *oy += g->ys[d];
        if (++idx[d] < g->bsize[d]) return;
        *oa -= g->as[d] * g->bsize[d], *ob -= g->bs[d] * g->bsize[d], *oy -= g->ys[d] * g->bsize[d];
        idx[d] = 0;
    }
}

static void small_c(const small_geom *g, const float *a, const float *b, float *y) {
    for (int64_t i = 0; i < g->M; i++)
        for (int64_t n = 0; n < g->N; n++) {
            float acc = 0;
            for (int64_t k = 0; k < g->K; k++)
                acc = fmaf(a[i * g->a_r + k * g->a_c], b[k * g->b_r + n * g->b_c], acc);
            y[i * g->y_r + n] = acc;
        }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "omp_transpose.h"
#define SMALL_AVX512 __attribute__((target("avx512f")))

/* Rows i0 .. i0 + R - 1 of one product (R a constant after inlining): R
 * independent sums per vector of columns, so that the FMAs of one k do not
 * wait on each other (eight cover the FMA latency); two: N > 16. */
SMALL_AVX512 static inline __attribute__((always_inline)) void
small_rows(const small_geom *g, const float *a, const float *rows, int64_t rs, float *y, int64_t i0,
           int R, bool two, __mmask16 m1, __mmask16 m2) {
    __m512 acc1[8], acc2[8];
    for (int r = 0; r < R; r++) acc1[r] = acc2[r] = _mm512_setzero_ps();
    const float *ar = a + i0 * g->a_r;
    for (int64_t k = 0; k < g->K; k++) {
        __m512 b1 = _mm512_maskz_loadu_ps(m1, rows + k * rs);
        __m512 b2 = two ? _mm512_maskz_loadu_ps(m2, rows + k * rs + 16) : b1;
        for (int r = 0; r < R; r++) {
            __m512 av = _mm512_set1_ps(ar[r * g->a_r + k * g->a_c]);
            acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
            if (two) acc2[r] = _mm512_fmadd_ps(av, b2, acc2[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        _mm512_mask_storeu_ps(y + (i0 + r) * g->y_r, m1, acc1[r]);
        if (two) _mm512_mask_storeu_ps(y + (i0 + r) * g->y_r + 16, m2, acc2[r]);
    }
}

/* b's rows into pack (row k at pack + 32 k): a transposed b (its columns
 * contiguous: K^T in attention) by 16 x 16 register transposes, any other
 * layout element by element. */
SMALL_AVX512 static void pack_b(const small_geom *g, const float *b, float *pack) {
    if (g->b_r != 1) {
        for (int64_t n = 0; n < g->N; n++)
            for (int64_t k = 0; k < g->K; k++) pack[k * 32 + n] = b[k * g->b_r + n * g->b_c];
        return;
    }
    for (int64_t n0 = 0; n0 < g->N; n0 += 16)
        for (int64_t k0 = 0; k0 < g->K; k0 += 16) {
            int64_t nk = g->K - k0 < 16 ? g->K - k0 : 16;
            __mmask16 mk = (__mmask16)((1u << nk) - 1);
            __m512 r[16];
            for (int64_t i = 0; i < 16; i++)
                r[i] = n0 + i < g->N ? _mm512_maskz_loadu_ps(mk, b + (n0 + i) * g->b_c + k0)
                                     : _mm512_setzero_ps();
            odn_t16_f32(r);
            for (int64_t k = 0; k < nk; k++) _mm512_storeu_ps(pack + (k0 + k) * 32 + n0, r[k]);
        }
}

/* One product, b's rows at rows (rs apart). */
SMALL_AVX512 static inline __attribute__((always_inline)) void
small_one(const small_geom *g, const float *a, const float *rows, int64_t rs, float *y, bool two) {
    int64_t n1 = g->N < 16 ? g->N : 16, n2 = g->N - n1;
    __mmask16 m1 = (__mmask16)((1u << n1) - 1), m2 = (__mmask16)((1u << n2) - 1);
    int64_t i = 0;
    for (; i + 8 <= g->M; i += 8) small_rows(g, a, rows, rs, y, i, 8, two, m1, m2);
    for (; i + 4 <= g->M; i += 4) small_rows(g, a, rows, rs, y, i, 4, two, m1, m2);
    for (; i < g->M; i++) small_rows(g, a, rows, rs, y, i, 1, two, m1, m2);
}

/* Products lo .. hi - 1. */
SMALL_AVX512 static void small_range(const small_geom *g, const float *a, const float *b, float *y,
                                     int64_t lo, int64_t hi) {
    float pack[SMALL_K * 32];
    bool copy = g->b_c != 1, two = g->N > 16;
    int64_t idx[GFP_MAX_RANK], oa, ob, oy;
    batch_start(g, lo, idx, &oa, &ob, &oy);
    for (int64_t j = lo; j < hi; j++, step(g, idx, &oa, &ob, &oy)) {
        if (copy) pack_b(g, b + ob, pack);
        const float *rows = copy ? pack : b + ob;
        int64_t rs = copy ? 32 : g->b_r;
        if (two) small_one(g, a + oa, rows, rs, y + oy, true);
        else small_one(g, a + oa, rows, rs, y + oy, false);
    }
}
#define SMALL_VECTOR 1
#endif

gfp_status odn_matmul_small(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y) {
    small_geom g;
    if (!small_plan(&g, a, b, y)) return ODN_FALLBACK;
    const float *ab = (const float *)(const void *)((const char *)a->buffer + a->offset);
    const float *bb = (const float *)(const void *)((const char *)b->buffer + b->offset);
    float *yb = (float *)(void *)((char *)y->buffer + y->offset);
    int nt = odn_threads(g.batch * g.M * g.N * g.K / 8);
    if (nt > g.batch) nt = (int)g.batch;
#ifdef SMALL_VECTOR
    bool vec = __builtin_cpu_supports("avx512f");
#else
    const bool vec = false;
#endif
    ODN_PARALLEL(nt, t, k, {
        int64_t lo = g.batch / k * t, hi = t + 1 == k ? g.batch : g.batch / k * (t + 1);
        if (vec) {
#ifdef SMALL_VECTOR
            small_range(&g, ab, bb, yb, lo, hi);
#endif
        } else {
            int64_t idx[GFP_MAX_RANK], oa, ob, oy;
            batch_start(&g, lo, idx, &oa, &ob, &oy);
            for (int64_t j = lo; j < hi; j++, step(&g, idx, &oa, &ob, &oy))
                small_c(&g, ab + oa, bb + ob, yb + oy);
        }
    });
    return GFP_OK;
}
