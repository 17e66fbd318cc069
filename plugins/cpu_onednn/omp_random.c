/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_random.c — GFP_OP_RANDOM into contiguous f32/f64 (uniform, bernoulli)
 * and bool (bernoulli) outputs: the reference kernel's generator
 * (pk_philox.h) and formulas, element for element, in vectorised loops
 * spread over the OpenMP team. Normal numbers, other dtypes and strided
 * outputs go to the reference kernel (ref_random.c).
 *
 * The reference kernel spends ~5 ns an element on index arithmetic and a
 * dtype switch; dropout draws one number per activation, so its mask was
 * 3% of a CNN training step here. Results are bit-identical to the
 * reference's: each element is a pure function of (seed, offset + i). */
#include "omp_f64.h"
#include "pk_philox.h"

/* Elements per chunk of work: a whole number of vector lengths. */
#define CHUNK 4096

static inline uint32_t word0(uint64_t c, uint32_t k0, uint32_t k1) {
    uint32_t r[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
    pk_philox4x32_10(r, k0, k1);
    return r[0];
}

static void fill_chunk(const gfp_random_params *p, int32_t dtype, void *base, int64_t start,
                       int64_t n) {
    uint32_t k0 = (uint32_t)p->seed, k1 = (uint32_t)(p->seed >> 32);
    uint64_t first = p->offset + (uint64_t)start; /* wraps modulo 2^64, as the reference */
    if (p->kind == GFP_RANDOM_BERNOULLI) {
        double a = p->a;
        if (dtype == GFP_BOOL) {
            uint8_t *y = (uint8_t *)base + start;
#pragma omp simd
            for (int64_t i = 0; i < n; i++) y[i] = pk_u24(word0(first + (uint64_t)i, k0, k1)) < a;
        } else if (dtype == GFP_F32) {
            float *y = (float *)base + start;
#pragma omp simd
            for (int64_t i = 0; i < n; i++)
                y[i] = pk_u24(word0(first + (uint64_t)i, k0, k1)) < a ? 1.0f : 0.0f;
        } else {
            double *y = (double *)base + start;
#pragma omp simd
            for (int64_t i = 0; i < n; i++)
                y[i] = pk_u24(word0(first + (uint64_t)i, k0, k1)) < a ? 1.0 : 0.0;
        }
        return;
    }
    double a = p->a, w = p->b - p->a;
    if (dtype == GFP_F32) {
        float *y = (float *)base + start;
#pragma omp simd
        for (int64_t i = 0; i < n; i++) /* computed in double, rounded once */
            y[i] = (float)(a + w * pk_u24(word0(first + (uint64_t)i, k0, k1)));
    } else {
        double *y = (double *)base + start;
        for (int64_t i = 0; i < n; i++) {
            uint64_t c = first + (uint64_t)i;
            uint32_t r[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
            pk_philox4x32_10(r, k0, k1);
            y[i] = a + w * pk_u53(r[0], r[1]);
        }
    }
}

gfp_status odn_random_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    (void)in;
    if (op != GFP_OP_RANDOM || n_in != 0 || n_out != 1 || !out[0] || !params) return ODN_FALLBACK;
    const gfp_random_params *p = params;
    if (p->struct_size < GFP_RANDOM_PARAMS_SIZE_V1_0) return ODN_FALLBACK;
    const gfp_tensor *y = out[0];
    bool uniform = p->kind == GFP_RANDOM_UNIFORM, bern = p->kind == GFP_RANDOM_BERNOULLI;
    bool is_float = y->dtype == GFP_F32 || y->dtype == GFP_F64;
    if (!((uniform && is_float) || (bern && (is_float || y->dtype == GFP_BOOL))))
        return ODN_FALLBACK;
    if (!odn_is_contiguous(y) || !odn_writable(y)) return ODN_FALLBACK;
    int64_t n = pk_numel(y);
    if (n == 0) return GFP_OK;
    void *base = (char *)y->buffer + y->offset;
    int64_t chunks = (n + CHUNK - 1) / CHUNK;
    /* ~40 cycles an element: count it as several elements of copy-like work. */
    int nt = odn_threads(n * 8);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t k = 0; k < chunks; k++) {
        int64_t start = k * CHUNK, len = n - start < CHUNK ? n - start : CHUNK;
        fill_chunk(p, y->dtype, base, start, len);
    });
    return GFP_OK;
}
