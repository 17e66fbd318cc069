/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_complex_gemm.c — MATMUL on c64 and c128 as one real GEMM.
 *
 * The real embedding: a complex A [m, k] stored interleaved (re, im) is a
 * real matrix A' [m, 2k] as it lies in memory. B is expanded into a real
 * B' [2k, 2n] whose rows 2p and 2p+1 are
 *     (re b[p][0], im b[p][0], re b[p][1], im b[p][1], ...)
 *     (-im b[p][0], re b[p][0], -im b[p][1], re b[p][1], ...)
 * so that row i of A' B' is (re c[i][0], im c[i][0], re c[i][1], ...): the
 * real GEMM writes the interleaved complex product C [m, n] in place, with
 * 8mnk real flops, the count of the complex product itself. c64 runs on
 * oneDNN's f32 matmul (odn_matmul_dnnl: its views, broadcasts and packing),
 * c128 on the plugin's f64 GEMM (odn_matmul_f64). The reference accumulates
 * in double complex; here c64 sums in f32, as the f32 matmul does.
 *
 * What the embedding needs of the operands: A with unit stride along k
 * (else it is packed first), C with unit stride along n (else computed into
 * scratch and copied). B is read once, with any strides, while expanding;
 * a batch dim broadcast in B (stride 0) is expanded once and stays
 * broadcast. Measured against the 3M method (three real GEMMs of size
 * m x k x n on split parts, 6mnk flops plus the splitting and the
 * recombination) on c64 n = 1024, one thread: see the plugin's README. */
#include <string.h>

#include "omp_f64.h"

/* Element offset of batch index bi (row-major over the batch dims) in t. */
static int64_t batch_offset(const gfp_tensor *t, const gfp_tensor *y, int64_t bi) {
    int64_t off = 0;
    for (int d = y->rank - 3; d >= 0; d--) {
        off += (bi % y->sizes[d]) * t->strides[d];
        bi /= y->sizes[d];
    }
    return off;
}

/* B' of every batch of b that is not broadcast: expanded rows, P the part
 * type. `batches` counts the batch indices of y that b's storage takes
 * (broadcast dims walked at index 0 only). */
#define EXPAND(NAME, P)                                                                  \
    static void NAME(const gfp_tensor *b, const gfp_tensor *y, const int64_t *ebatch,    \
                     int64_t batches, int64_t ld, P *dst) {                              \
        int r = y->rank;                                                                 \
        int64_t k = b->sizes[r - 2], n = b->sizes[r - 1];                                \
        int64_t bk = b->strides[r - 2], bn = b->strides[r - 1];                          \
        const P *src = (const P *)(const void *)((const char *)b->buffer + b->offset);   \
        int64_t rows = batches * k;                                                      \
        int nt = odn_threads(rows * n * 4);                                              \
        ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t row = 0; row < rows; row++) { \
            int64_t e = row / k, p = row % k, bi = 0, rest = e, mul = 1;                \
            /* e walks ebatch (b's batch sizes, 1 where broadcast) row-major */          \
            for (int d = r - 3; d >= 0; d--) {                                           \
                bi += (rest % ebatch[d]) * mul;                                          \
                rest /= ebatch[d];                                                       \
                mul *= y->sizes[d];                                                      \
            }                                                                            \
            const P *s = src + 2 * (batch_offset(b, y, bi) + p * bk);                    \
            P *d0 = dst + (e * 2 * k + 2 * p) * ld, *d1 = d0 + ld;                       \
            if (bn == 1) {                                                               \
                for (int64_t j = 0; j < n; j++) {                                        \
                    P re = s[2 * j], im = s[2 * j + 1];                                  \
                    d0[2 * j] = re;                                                      \
                    d0[2 * j + 1] = im;                                                  \
                    d1[2 * j] = -im;                                                     \
                    d1[2 * j + 1] = re;                                                  \
                }                                                                        \
            } else {                                                                     \
                for (int64_t j = 0; j < n; j++) {                                        \
                    P re = s[2 * j * bn], im = s[2 * j * bn + 1];                        \
                    d0[2 * j] = re;                                                      \
                    d0[2 * j + 1] = im;                                                  \
                    d1[2 * j] = -im;                                                     \
                    d1[2 * j + 1] = re;                                                  \
                }                                                                        \
            }                                                                            \
        });                                                                              \
    }
EXPAND(expand_f32, float)
EXPAND(expand_f64, double)

/* The real view of a complex tensor whose last dim has unit stride (or size
 * 1): the parts as a last dim twice as long. */
static gfp_tensor real_view(const gfp_tensor *t, int32_t part) {
    gfp_tensor v = *t;
    int r = t->rank;
    v.dtype = part;
    for (int d = 0; d < r - 1; d++) v.strides[d] = 2 * t->strides[d];
    v.sizes[r - 1] = 2 * t->sizes[r - 1];
    v.strides[r - 1] = 1;
    return v;
}

gfp_status odn_matmul_complex(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y) {
    int r = y->rank;
    bool c64 = y->dtype == GFP_C64;
    int32_t part = c64 ? GFP_F32 : GFP_F64;
    size_t ps = c64 ? 4 : 8;
    int64_t k = a->sizes[r - 1], n = y->sizes[r - 1];
    odn_ctx *c;
    gfp_status st = odn_ctx_acquire(&c);
    if (st != GFP_OK) return st;

    /* A: unit stride along k, or packed */
    gfp_tensor ap = *a;
    if (a->strides[r - 1] != 1 && k > 1) {
        void *mem = odn_arena_alloc(c, (size_t)pk_numel(a) * 2 * ps);
        if (!mem) return ODN_FALLBACK;
        ap = odn_temp_like(a, a->dtype, mem);
        if (odn_copy(&ap, a) != GFP_OK) return ODN_FALLBACK;
    }

    /* B': one expanded matrix per batch index b does not broadcast */
    int64_t ebatch[GFP_MAX_RANK], batches = 1;
    for (int d = 0; d < r - 2; d++) {
        ebatch[d] = b->strides[d] == 0 ? 1 : y->sizes[d];
        batches *= ebatch[d];
    }
    /* Rows of B' 64 bytes longer than 2n parts: with a power-of-two row
     * length (n = 1024 and the like) oneDNN 2.6's f32 matmul runs at half
     * speed (measured, one thread: [1024, 2048] x [2048, 2048] 55 GFLOP/s,
     * 110-118 with the rows padded). */
    int64_t ld = 2 * n + (int64_t)(64 / ps);
    void *bmem = odn_arena_alloc(c, (size_t)batches * (size_t)(2 * k * ld) * ps);
    if (!bmem) return ODN_FALLBACK;
    gfp_tensor bx = *b;
    bx.dtype = part;
    bx.buffer = bmem;
    bx.offset = 0;
    bx.sizes[r - 2] = 2 * k;
    bx.sizes[r - 1] = 2 * n;
    bx.strides[r - 1] = 1;
    bx.strides[r - 2] = ld;
    int64_t step = 2 * k * ld;
    for (int d = r - 3; d >= 0; d--) {
        bx.strides[d] = ebatch[d] == 1 && y->sizes[d] > 1 ? 0 : step;
        step *= ebatch[d];
    }
    if (c64) expand_f32(b, y, ebatch, batches, ld, bmem);
    else expand_f64(b, y, ebatch, batches, ld, bmem);

    /* C: written in place when its last dim has unit stride */
    gfp_tensor yc = *y;
    bool via_scratch = y->strides[r - 1] != 1 && n > 1;
    if (via_scratch) {
        void *mem = odn_arena_alloc(c, (size_t)pk_numel(y) * 2 * ps);
        if (!mem) return ODN_FALLBACK;
        yc = odn_temp_like(y, y->dtype, mem);
    }
    gfp_tensor ar = real_view(&ap, part), yr = real_view(&yc, part);
    st = c64 ? odn_matmul_dnnl(&ar, &bx, &yr) : odn_matmul_f64(&ar, &bx, &yr);
    if (st == GFP_OK && via_scratch) st = odn_copy(y, &yc);
    return st;
}
