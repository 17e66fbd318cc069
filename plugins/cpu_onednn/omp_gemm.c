/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_gemm.c — f64 matrix products in C (oneDNN 2.x has no f64 matmul or
 * convolution): a blocked GEMM and MATMUL f64 on it.
 *
 * The GEMM follows the usual three-level blocking: a KC x NC panel of B and
 * an MC x KC block of A are packed into contiguous slivers (NR columns of B,
 * MR rows of A, zero-padded at the edges), so the micro-kernel streams both
 * from cache with unit stride whatever the operands' strides were (transposed
 * and sliced views, stride-0 broadcasts), and keeps an MR x NR tile of C in
 * registers (6 x 16 doubles: 12 AVX-512 registers). Tasks are (product, NC
 * columns, a share of the rows), one OpenMP loop over them; each thread packs
 * into its own scratch. This file is compiled with FMA contraction on (the
 * micro-kernel's a * b + c): the sums' rounding differs from the reference's
 * loop by a few ulps of the dot products, well inside what f64 tests allow. */
#include <omp.h>
#include <string.h>

#include "omp_f64.h"

#define MR 6
#define NR 16
#define KC 256
#define MC 96  /* a multiple of MR */
#define NC 512 /* a multiple of NR */

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
/* By feature (arch= clones test for the exact CPU model): fma brings the
 * 256-bit FMA units, avx512f the 512-bit ones. */
#define GEMM_CLONES __attribute__((target_clones("default", "fma", "avx512f")))
#else
#define GEMM_CLONES
#endif

typedef double v8d __attribute__((vector_size(64)));

/* Bytes of scratch one thread packs into. */
#define PACK_DOUBLES ((size_t)MC * KC + (size_t)KC * NC)

/* Ap[ir][p][i] = A[i0 + ir*MR + i, p0 + p] for mc rows, kc columns. */
static void pack_a(double *restrict ap, const odn_gemm_mat *a, const double *base, int64_t i0,
                   int64_t mc, int64_t p0, int64_t kc) {
    for (int64_t ir = 0; ir < mc; ir += MR) {
        int64_t rows = mc - ir < MR ? mc - ir : MR;
        double *dst = ap + ir * kc;
        const double *src = base + (i0 + ir) * a->rs + p0 * a->cs;
        if (rows < MR) memset(dst, 0, sizeof(double) * (size_t)(kc * MR));
        if (a->cs == 1) {
            for (int64_t i = 0; i < rows; i++)
                for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = src[i * a->rs + p];
        } else {
            for (int64_t p = 0; p < kc; p++)
                for (int64_t i = 0; i < rows; i++) dst[p * MR + i] = src[i * a->rs + p * a->cs];
        }
    }
}

/* Bp[jr][p][j] = B[p0 + p, j0 + jr*NR + j] for kc rows, nc columns. */
static void pack_b(double *restrict bp, const odn_gemm_mat *b, const double *base, int64_t p0,
                   int64_t kc, int64_t j0, int64_t nc) {
    for (int64_t jr = 0; jr < nc; jr += NR) {
        int64_t cols = nc - jr < NR ? nc - jr : NR;
        double *dst = bp + jr * kc;
        const double *src = base + p0 * b->rs + (j0 + jr) * b->cs;
        if (cols < NR) memset(dst, 0, sizeof(double) * (size_t)(kc * NR));
        if (b->cs == 1 || b->rs != 1) {
            for (int64_t p = 0; p < kc; p++)
                for (int64_t j = 0; j < cols; j++) dst[p * NR + j] = src[p * b->rs + j * b->cs];
        } else {
            for (int64_t j = 0; j < cols; j++)
                for (int64_t p = 0; p < kc; p++) dst[p * NR + j] = src[p + j * b->cs];
        }
    }
}

/* The packed block times the packed panel into C (rows i0.., columns j0..):
 * C = AB when first (and not accumulating), else C += AB. */
GEMM_CLONES static void macro_kernel(int64_t mc, int64_t nc, int64_t kc, const double *ap,
                                     const double *bp, double *c, int64_t crs, int64_t ccs,
                                     bool first) {
    for (int64_t jr = 0; jr < nc; jr += NR) {
        int64_t cols = nc - jr < NR ? nc - jr : NR;
        const double *b = bp + jr * kc;
        for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t rows = mc - ir < MR ? mc - ir : MR;
            const double *a = ap + ir * kc;
            v8d acc[MR][2];
            for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = (v8d){0};
            for (int64_t p = 0; p < kc; p++) {
                v8d b0, b1;
                memcpy(&b0, b + p * NR, sizeof b0);
                memcpy(&b1, b + p * NR + 8, sizeof b1);
#pragma GCC unroll 6
                for (int i = 0; i < MR; i++) {
                    double av = a[p * MR + i];
                    acc[i][0] += av * b0;
                    acc[i][1] += av * b1;
                }
            }
            double tile[MR][NR];
            memcpy(tile, acc, sizeof tile);
            double *ct = c + (ir)*crs + (jr)*ccs;
            for (int64_t i = 0; i < rows; i++) {
                double *row = ct + i * crs;
                if (first) {
                    for (int64_t j = 0; j < cols; j++) row[j * ccs] = tile[i][j];
                } else {
                    for (int64_t j = 0; j < cols; j++) row[j * ccs] += tile[i][j];
                }
            }
        }
    }
}

/* One task: product `bi`, columns [j0, j0 + nc), rows [m0, m1). */
static void run_task(const odn_gemm *g, int64_t bi, int64_t j0, int64_t nc, int64_t m0,
                     int64_t m1, double *scratch) {
    const double *a = g->a.p, *b = g->b.p;
    double *c = g->c.p;
    int64_t rem = bi;
    for (int d = g->batch_rank - 1; d >= 0; d--) {
        int64_t idx = rem % g->batch[d];
        rem /= g->batch[d];
        a += idx * g->a_bs[d];
        b += idx * g->b_bs[d];
        c += idx * g->c_bs[d];
    }
    double *ap = scratch, *bp = scratch + (size_t)MC * KC;
    for (int64_t p0 = 0; p0 < g->k; p0 += KC) {
        int64_t kc = g->k - p0 < KC ? g->k - p0 : KC;
        pack_b(bp, &g->b, b, p0, kc, j0, nc);
        bool first = p0 == 0 && !g->accumulate;
        for (int64_t i0 = m0; i0 < m1; i0 += MC) {
            int64_t mc = m1 - i0 < MC ? m1 - i0 : MC;
            pack_a(ap, &g->a, a, i0, mc, p0, kc);
            macro_kernel(mc, nc, kc, ap, bp, c + i0 * g->c.rs + j0 * g->c.cs, g->c.rs, g->c.cs,
                         first);
        }
    }
}

static void zero_or_keep(const odn_gemm *g, int64_t products) {
    if (g->accumulate) return;
    for (int64_t bi = 0; bi < products; bi++) {
        double *c = g->c.p;
        int64_t rem = bi;
        for (int d = g->batch_rank - 1; d >= 0; d--) {
            c += (rem % g->batch[d]) * g->c_bs[d];
            rem /= g->batch[d];
        }
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) c[i * g->c.rs + j * g->c.cs] = 0;
    }
}

gfp_status odn_gemm_f64(odn_ctx *ctx, const odn_gemm *g) {
    int64_t products = 1;
    for (int d = 0; d < g->batch_rank; d++) products *= g->batch[d];
    if (products == 0 || g->m == 0 || g->n == 0) return GFP_OK;
    if (g->k == 0) {
        zero_or_keep(g, products);
        return GFP_OK;
    }
    int64_t n_blocks = (g->n + NC - 1) / NC, m_blocks = (g->m + MC - 1) / MC;
    int threads = odn_threads(2 * products * g->m * g->n * g->k / 32);
    /* Enough tasks for every thread: split the rows when products x column
     * blocks are too few. */
    int64_t m_split = 1, base = products * n_blocks;
    if (base < 2 * threads) {
        m_split = (2 * threads + base - 1) / base;
        if (m_split > m_blocks) m_split = m_blocks;
    }
    int64_t tasks = base * m_split;
    if (tasks < threads) threads = (int)tasks;
    double *scratch = odn_arena_alloc(ctx, sizeof(double) * PACK_DOUBLES * (size_t)threads);
    if (!scratch) return GFP_ERR_OUT_OF_MEMORY;
    ODN_PARALLEL_FOR(threads, schedule(dynamic, 1), for (int64_t t = 0; t < tasks; t++) {
        int64_t ms = t % m_split, nb = (t / m_split) % n_blocks, bi = t / (m_split * n_blocks);
        /* rows: whole MC blocks shared out evenly */
        int64_t m0 = (m_blocks * ms / m_split) * MC, m1 = (m_blocks * (ms + 1) / m_split) * MC;
        if (m1 > g->m) m1 = g->m;
        int64_t j0 = nb * NC, nc = g->n - j0 < NC ? g->n - j0 : NC;
        double *pack = scratch + PACK_DOUBLES * (size_t)odn_team_thread(threads);
        if (m0 < m1) run_task(g, bi, j0, nc, m0, m1, pack);
    });
    return GFP_OK;
}

/* ------------------------------------------------------------ MATMUL f64 */
static double *at(const gfp_tensor *t) {
    return (double *)(void *)((char *)t->buffer + t->offset);
}

gfp_status odn_matmul_f64(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y) {
    int r = y->rank;
    odn_gemm g;
    memset(&g, 0, sizeof g);
    g.m = y->sizes[r - 2];
    g.n = y->sizes[r - 1];
    g.k = a->sizes[r - 1];
    g.batch_rank = r - 2;
    for (int d = 0; d < r - 2; d++) {
        g.batch[d] = y->sizes[d];
        g.a_bs[d] = a->strides[d];
        g.b_bs[d] = b->strides[d];
        g.c_bs[d] = y->strides[d];
    }
    g.a = (odn_gemm_mat){at(a), a->strides[r - 2], a->strides[r - 1]};
    g.b = (odn_gemm_mat){at(b), b->strides[r - 2], b->strides[r - 1]};
    g.c = (odn_gemm_mat){at(y), y->strides[r - 2], y->strides[r - 1]};
    odn_ctx *c;
    gfp_status st = odn_ctx_acquire(&c);
    return st == GFP_OK ? odn_gemm_f64(c, &g) : st;
}
