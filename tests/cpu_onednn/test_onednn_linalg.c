/* SPDX-License-Identifier: BSD-3-Clause */
/* test_onednn_linalg.c — cpu_onednn against the reference plugin for MATMUL
 * (sizes from 1 to 300, batches, batch broadcast through stride-0 dims in a,
 * b or both, transposed, sliced and offset operands and outputs, f32 and f64
 * (the plugin's own GEMM, on shapes past its blocks), integers; the
 * transposed product of few rows by a column-major b; many small products),
 * CONV2D and
 * both of its gradients (stride, padding, dilation, groups, depthwise, 1x1,
 * odd sizes, layouts, with and without bias; f64 in chunks of images) and the
 * four pooling ops (ceil mode, padding, dilation, count_include_pad). */
#include "abi_pair.h"

/* ------------------------------------------------------------------ matmul */
/* A batch dim of a or b given as broadcast: size kept, stride 0. */
static void broadcast_dim(ap_tensor *p, int d) {
    for (int k = 0; k < 2; k++) p->t[k].strides[d] = 0;
}

static void run_matmul(int32_t dt, int nb, const int64_t *batch, int64_t m, int64_t k, int64_t n,
                       ap_layout la, ap_layout lb, ap_layout ly, unsigned bcast_a,
                       unsigned bcast_b) {
    int64_t as[GFP_MAX_RANK], bs[GFP_MAX_RANK], ys[GFP_MAX_RANK];
    for (int d = 0; d < nb; d++) as[d] = bs[d] = ys[d] = batch[d];
    as[nb] = m, as[nb + 1] = k;
    bs[nb] = k, bs[nb + 1] = n;
    ys[nb] = m, ys[nb + 1] = n;
    ap_domain dom = dt == GFP_I32 || dt == GFP_I64 ? AD_INT : AD_ANY;
    ap_tensor a = ap_make(dt, nb + 2, as, la, dom), b = ap_make(dt, nb + 2, bs, lb, dom);
    ap_tensor y = ap_make(dt, nb + 2, ys, ly, AD_ANY);
    for (int d = 0; d < nb; d++) {
        if (bcast_a >> d & 1) broadcast_dim(&a, d);
        if (bcast_b >> d & 1) broadcast_dim(&b, d);
    }
    char what[160];
    snprintf(what, sizeof what, "matmul dt%d batch %d [%lldx%lldx%lld] a %s%s b %s%s y %s",
             (int)dt, nb, (long long)m, (long long)k, (long long)n, ap_layout_names[la],
             bcast_a ? " (bcast)" : "", ap_layout_names[lb], bcast_b ? " (bcast)" : "",
             ap_layout_names[ly]);
    /* f32: oneDNN accumulates in f32, the reference in double. */
    double tol = dt == GFP_F32 ? 2e-6 * sqrt((double)k + 1) * 4 : dt == GFP_F64 ? 1e-12 : 0;
    ap_tensor *in[2] = {&a, &b}, *out[1] = {&y};
    ap_run(what, GFP_OP_MATMUL, in, 2, out, 1, NULL, tol, tol);
    ap_free(&a), ap_free(&b), ap_free(&y);
}

static void test_matmul(void) {
    static const int64_t dims[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 31, 13}, {64, 64, 64},
                                      {128, 300, 65}, {1, 257, 1}, {2, 1, 9}};
    static const ap_layout las[] = {AL_CONTIG, AL_TRANSPOSED, AL_STEP, AL_OFFSET, AL_CONTIG};
    static const ap_layout lbs[] = {AL_CONTIG, AL_CONTIG, AL_TRANSPOSED, AL_STEP, AL_PERMUTED};
    static const ap_layout lys[] = {AL_CONTIG, AL_STEP, AL_CONTIG, AL_TRANSPOSED, AL_OFFSET};
    static const int32_t dts[] = {GFP_F32, GFP_F64, GFP_I64};
    for (int t = 0; t < 3; t++)
        for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++)
            for (int l = 0; l < 5; l++) {
                const int64_t *d = dims[s];
                if (dts[t] != GFP_F32 && d[0] * d[1] * d[2] > 100000) continue;
                run_matmul(dts[t], 0, NULL, d[0], d[1], d[2], las[l], lbs[l], lys[l], 0, 0);
                run_matmul(dts[t], 1, SZ(3), d[0], d[1], d[2], las[l], lbs[l], lys[l], 0, 0);
                run_matmul(dts[t], 2, SZ(2, 3), d[0], d[1], d[2], las[l], lbs[l], lys[l], 1, 0);
                run_matmul(dts[t], 2, SZ(2, 3), d[0], d[1], d[2], las[l], lbs[l], lys[l], 2, 1);
                run_matmul(dts[t], 1, SZ(4), d[0], d[1], d[2], las[l], lbs[l], lys[l], 1, 1);
                run_matmul(dts[t], 1, SZ(5), d[0], d[1], d[2], AL_PERMUTED, lbs[l], lys[l], 0, 1);
            }
    /* f64 runs on the plugin's blocked GEMM (blocks of 96 rows, 256 of the
     * sum, 512 columns): shapes across every block edge, batched and
     * broadcast, in every layout. */
    static const int64_t f64_dims[][3] = {{97, 300, 530}, {7, 513, 17}, {200, 3, 1}};
    for (size_t s = 0; s < sizeof f64_dims / sizeof f64_dims[0]; s++)
        for (int l = 0; l < 5; l++) {
            const int64_t *d = f64_dims[s];
            run_matmul(GFP_F64, 0, NULL, d[0], d[1], d[2], las[l], lbs[l], lys[l], 0, 0);
            if (l < 2)
                run_matmul(GFP_F64, 2, SZ(2, 2), d[0], d[1], d[2], las[l], lbs[l], lys[l], 1,
                           2);
        }
    /* A column-major b with 16 <= M <= 64, N >= 256, K >= 64 runs as the
     * transposed product (onednn_matmul.c, swap_pays), at the edges and
     * just past them (M 15 and 65, N 255, K 63: the plain product). */
    static const int64_t swap_dims[][3] = {{32, 256, 1024}, {16, 64, 256}, {64, 100, 300},
                                           {15, 64, 256},   {65, 64, 256}, {33, 63, 257},
                                           {40, 70, 255}};
    static const ap_layout swap_la[] = {AL_CONTIG, AL_OFFSET, AL_STEP};
    for (size_t s = 0; s < sizeof swap_dims / sizeof swap_dims[0]; s++)
        for (int l = 0; l < 3; l++) {
            const int64_t *d = swap_dims[s];
            run_matmul(GFP_F32, 0, NULL, d[0], d[1], d[2], swap_la[l], AL_TRANSPOSED, AL_CONTIG,
                       0, 0);
            run_matmul(GFP_F32, 1, SZ(1), d[0], d[1], d[2], swap_la[l], AL_PERMUTED,
                       l == 2 ? AL_OFFSET : AL_CONTIG, 0, 0);
        }
    /* Many small products (omp_gemm_small.c: M and K up to 64, N up to 32,
     * at least 4 of them): attention's per-head shapes, the limits and just
     * past them, b read in place and copied (transposed, strided, permuted),
     * batch dims broadcast in a or b. */
    static const int64_t small_dims[][3] = {{8, 12, 8},  {8, 8, 12}, {64, 64, 32}, {9, 64, 17},
                                            {65, 8, 8},  {8, 65, 8}, {8, 8, 33},   {3, 16, 16},
                                            {13, 1, 31}};
    for (size_t s = 0; s < sizeof small_dims / sizeof small_dims[0]; s++)
        for (int l = 0; l < 5; l++) {
            const int64_t *d = small_dims[s];
            run_matmul(GFP_F32, 2, SZ(4, 3), d[0], d[1], d[2], las[l], lbs[l], lys[l],
                       l == 1 ? 1u : 0u, l == 3 ? 2u : 0u);
        }
    for (int e = 0; e < 3; e++) /* empty M, N, batch */
        run_matmul(GFP_F64, 1, SZ(e == 2 ? 0 : 2), e == 0 ? 0 : 3, 4, e == 1 ? 0 : 5, AL_CONTIG,
                   AL_TRANSPOSED, AL_CONTIG, 0, 0);
    run_matmul(GFP_F64, 0, NULL, 3, 0, 5, AL_CONTIG, AL_CONTIG, AL_CONTIG, 0, 0);
    /* 0-size: empty M, N or batch; K = 0 is an empty sum (zeros). */
    run_matmul(GFP_F32, 0, NULL, 0, 4, 5, AL_CONTIG, AL_CONTIG, AL_CONTIG, 0, 0);
    run_matmul(GFP_F32, 1, SZ(0), 3, 4, 5, AL_CONTIG, AL_CONTIG, AL_CONTIG, 0, 0);
    run_matmul(GFP_F32, 0, NULL, 3, 0, 5, AL_CONTIG, AL_CONTIG, AL_CONTIG, 0, 0);
    run_matmul(GFP_F32, 0, NULL, 3, 4, 0, AL_CONTIG, AL_CONTIG, AL_CONTIG, 0, 0);
}

/* ------------------------------------------------------------------ conv */
typedef struct conv_cfg {
    int64_t n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, g;
} conv_cfg;

static const conv_cfg convs[] = {
    /* n ci h  w  co kh kw sh sw ph pw dh dw g */
    {2, 4, 5, 6, 6, 3, 2, 2, 1, 1, 2, 1, 2, 2},
    {1, 3, 8, 8, 2, 3, 3, 2, 2, 0, 0, 1, 1, 1},
    {2, 2, 4, 5, 4, 2, 3, 1, 2, 1, 1, 2, 1, 1},
    {1, 6, 3, 3, 6, 1, 1, 1, 1, 0, 0, 1, 1, 6},
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {4, 1, 28, 28, 8, 5, 5, 1, 1, 2, 2, 1, 1, 1},
    {3, 16, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {2, 32, 9, 7, 16, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {2, 8, 15, 15, 8, 3, 3, 2, 2, 1, 1, 1, 1, 8},
    /* few taps, stride 1 (omp_conv_thin.c in f32, contiguous): the first
     * layer of a Fashion-MNIST CNN; 27 taps, 5 output channels (blocks and
     * a remainder) and rows of 33 (two vectors and a tail); padding as wide
     * as the kernel; rows of exactly 16; an uneven kernel without row padding */
    {3, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {2, 3, 17, 33, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {2, 1, 6, 5, 3, 1, 1, 1, 1, 2, 2, 1, 1, 1},
    {2, 1, 10, 16, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {1, 2, 5, 40, 3, 3, 4, 1, 1, 0, 1, 1, 1, 1},
};

static void run_conv(uint32_t op, int32_t dt, const conv_cfg *c, int layout_set, bool bias) {
    static const ap_layout lx[] = {AL_CONTIG, AL_TRANSPOSED, AL_STEP, AL_PERMUTED, AL_OFFSET};
    static const ap_layout lw[] = {AL_CONTIG, AL_STEP, AL_TRANSPOSED, AL_CONTIG, AL_PERMUTED};
    static const ap_layout ly[] = {AL_CONTIG, AL_CONTIG, AL_OFFSET, AL_STEP, AL_TRANSPOSED};
    int64_t ho = (c->h + 2 * c->ph - c->dh * (c->kh - 1) - 1) / c->sh + 1;
    int64_t wo = (c->w + 2 * c->pw - c->dw * (c->kw - 1) - 1) / c->sw + 1;
    int64_t xs[4] = {c->n, c->ci, c->h, c->w}, ws[4] = {c->co, c->ci / c->g, c->kh, c->kw};
    int64_t ys[4] = {c->n, c->co, ho, wo};
    int L = layout_set;
    ap_tensor x = ap_make(dt, 4, xs, op == GFP_OP_CONV2D_BACKWARD_INPUT ? ly[L] : lx[L], AD_ANY);
    ap_tensor w = ap_make(dt, 4, ws, op == GFP_OP_CONV2D_BACKWARD_WEIGHT ? ly[L] : lw[L], AD_ANY);
    ap_tensor y = ap_make(dt, 4, ys, op == GFP_OP_CONV2D ? ly[L] : lx[L], AD_ANY);
    ap_tensor b = ap_make(dt, 1, SZ(c->co), L == 2 ? AL_STEP : AL_CONTIG, AD_ANY);
    gfp_conv2d_params p = {sizeof p, (int32_t)c->g, {(int32_t)c->sh, (int32_t)c->sw},
                           {(int32_t)c->ph, (int32_t)c->pw}, {(int32_t)c->dh, (int32_t)c->dw}};
    char what[160];
    snprintf(what, sizeof what, "conv op %u dt%d %lldx%lldx%lldx%lld -> %lld k%lldx%lld g%lld "
             "layouts %d%s", (unsigned)op, (int)dt, (long long)c->n, (long long)c->ci,
             (long long)c->h, (long long)c->w, (long long)c->co, (long long)c->kh,
             (long long)c->kw, (long long)c->g, L, bias ? " bias" : "");
    int64_t red = op == GFP_OP_CONV2D_BACKWARD_WEIGHT ? c->n * ho * wo
                                                      : c->ci / c->g * c->kh * c->kw * c->co;
    double tol = dt == GFP_F64 ? 1e-12 : 4e-6 * sqrt((double)red + 1) * 4;
    if (op == GFP_OP_CONV2D) {
        ap_tensor *in[3] = {&x, &w, bias ? &b : NULL}, *out[1] = {&y};
        ap_run(what, op, in, 3, out, 1, &p, tol, tol);
    } else if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
        ap_tensor *in[2] = {&y, &w}, *out[1] = {&x};
        ap_run(what, op, in, 2, out, 1, &p, tol, tol);
    } else {
        ap_tensor *in[2] = {&y, &x}, *out[1] = {&w};
        ap_run(what, op, in, 2, out, 1, &p, tol, tol);
    }
    ap_free(&x), ap_free(&w), ap_free(&y), ap_free(&b);
}

static void test_conv(void) {
    for (uint32_t op = GFP_OP_CONV2D; op <= GFP_OP_CONV2D_BACKWARD_WEIGHT; op++)
        for (int k = 0; k < 2; k++)
            for (size_t c = 0; c < sizeof convs / sizeof convs[0]; c++)
                for (int l = 0; l < 5; l++)
                    run_conv(op, k ? GFP_F64 : GFP_F32, &convs[c], l, l % 2 == 0);
    /* f64 unfolds a chunk of images at a time, within 8M doubles of columns:
     * one image of this one takes 6.5M, so each op runs in two chunks (the
     * weight gradient accumulating the second into the first). */
    conv_cfg chunked = {2, 64, 64, 64, 2, 5, 5, 1, 1, 2, 2, 1, 1, 1};
    for (uint32_t op = GFP_OP_CONV2D; op <= GFP_OP_CONV2D_BACKWARD_WEIGHT; op++)
        run_conv(op, GFP_F64, &chunked, op == GFP_OP_CONV2D ? 0 : 1, true);
    /* A batch of 0 has nothing to compute, both ways. */
    conv_cfg empty = {0, 2, 4, 4, 3, 3, 3, 1, 1, 0, 0, 1, 1, 1};
    for (uint32_t op = GFP_OP_CONV2D; op <= GFP_OP_CONV2D_BACKWARD_WEIGHT; op++)
        run_conv(op, GFP_F32, &empty, 0, true);
}

/* ------------------------------------------------------------------ pooling */
typedef struct pool_cfg {
    int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
    int ceil_mode, include_pad;
} pool_cfg;

static const pool_cfg pools[] = {
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 1, 1, 0, 0},   {1, 2, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {2, 2, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0},   {1, 1, 5, 5, 3, 3, 1, 1, 1, 1, 2, 2, 0, 1},
    {4, 16, 28, 28, 2, 2, 2, 2, 0, 0, 1, 1, 0, 1}, {1, 3, 6, 6, 4, 2, 3, 1, 2, 1, 1, 1, 1, 1},
    {2, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0},   {1, 2, 10, 3, 3, 1, 3, 1, 1, 0, 1, 1, 1, 0},
    /* 2x2 / stride 2 rows of 35 outputs: two full steps of 16 and a tail of 3 */
    {2, 3, 6, 71, 2, 2, 2, 2, 0, 0, 1, 1, 0, 0},
};

static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode) {
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t out = num / s + 1;
    if (ceil_mode && (out - 1) * s >= in + p) out--;
    return out;
}

static void test_pool(void) {
    static const ap_layout lx[] = {AL_CONTIG, AL_TRANSPOSED, AL_STEP, AL_PERMUTED};
    static const ap_layout ly[] = {AL_CONTIG, AL_STEP, AL_CONTIG, AL_OFFSET};
    for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++)
        for (int k = 0; k < 2; k++)
            for (int l = 0; l < 4; l++) {
                const pool_cfg *c = &pools[i];
                int32_t dt = k ? GFP_F64 : GFP_F32;
                int64_t ho = pool_out(c->h, c->kh, c->sh, c->ph, c->dh, c->ceil_mode);
                int64_t wo = pool_out(c->w, c->kw, c->sw, c->pw, c->dw, c->ceil_mode);
                int64_t xs[4] = {c->n, c->c, c->h, c->w}, ys[4] = {c->n, c->c, ho, wo};
                gfp_pool2d_params p = {sizeof p,
                                       {(int32_t)c->kh, (int32_t)c->kw},
                                       {(int32_t)c->sh, (int32_t)c->sw},
                                       {(int32_t)c->ph, (int32_t)c->pw},
                                       {(int32_t)c->dh, (int32_t)c->dw},
                                       (uint32_t)c->ceil_mode,
                                       (uint32_t)c->include_pad};
                double tol = dt == GFP_F64 ? 1e-13 : 2e-6;
                /* max pooling: ties are likely in AD_INT data (first wins) */
                ap_tensor x = ap_make(dt, 4, xs, lx[l], l == 3 ? AD_INT : AD_ANY);
                ap_tensor y = ap_make(dt, 4, ys, ly[l], AD_ANY);
                ap_tensor ind = ap_make(GFP_I64, 4, ys, ly[(l + 1) % 4], AD_INT);
                ap_tensor *in[1] = {&x}, *out2[2] = {&y, &ind};
                ap_run("max_pool2d", GFP_OP_MAX_POOL2D, in, 1, out2, 2, &p, 0, 0);
                /* backward through each side's indices (equal, as just checked) */
                ap_tensor gy = ap_make(dt, 4, ys, lx[l], AD_ANY);
                ap_tensor gx = ap_make(dt, 4, xs, ly[l], AD_ANY);
                ap_tensor *bin[2] = {&gy, &ind}, *bout[1] = {&gx};
                ap_run("max_pool2d_backward", GFP_OP_MAX_POOL2D_BACKWARD, bin, 2, bout, 1, NULL,
                         tol, tol);
                ap_tensor *aout[1] = {&y};
                ap_run("avg_pool2d", GFP_OP_AVG_POOL2D, in, 1, aout, 1, &p, tol, tol);
                ap_tensor *ain[1] = {&gy};
                ap_run("avg_pool2d_backward", GFP_OP_AVG_POOL2D_BACKWARD, ain, 1, bout, 1, &p,
                         tol, tol);
                ap_free(&x), ap_free(&y), ap_free(&ind), ap_free(&gy), ap_free(&gx);
            }
    /* NaN and ties: padding never wins, the first maximum wins, the last NaN
     * wins (the general walk and the 2x2 / stride-2 path). */
    static const gfp_pool2d_params nan_cfgs[3] = {
        {sizeof(gfp_pool2d_params), {2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 0},
        {sizeof(gfp_pool2d_params), {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, 0},
        {sizeof(gfp_pool2d_params), {2, 3}, {1, 2}, {1, 1}, {2, 1}, 0, 0}};
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 2; k++) {
            int32_t dt = k ? GFP_F64 : GFP_F32;
            const gfp_pool2d_params *p = &nan_cfgs[c];
            int64_t h = 9, w = 12;
            int64_t ho = pool_out(h, p->kernel[0], p->stride[0], p->padding[0], p->dilation[0],
                                  (int)p->ceil_mode);
            int64_t wo = pool_out(w, p->kernel[1], p->stride[1], p->padding[1], p->dilation[1],
                                  (int)p->ceil_mode);
            for (int dom = 0; dom < 2; dom++) {
                ap_tensor x = ap_make(dt, 4, SZ(2, 3, h, w), AL_CONTIG, dom ? AD_SPECIAL : AD_INT);
                ap_tensor y = ap_make(dt, 4, SZ(2, 3, ho, wo), AL_CONTIG, AD_ANY);
                ap_tensor ind = ap_make(GFP_I64, 4, SZ(2, 3, ho, wo), AL_CONTIG, AD_INT);
                ap_tensor *in[1] = {&x}, *out[2] = {&y, &ind};
                ap_run("max_pool2d ties and NaN", GFP_OP_MAX_POOL2D, in, 1, out, 2, p, 0, 0);
                ap_free(&x), ap_free(&y), ap_free(&ind);
            }
        }
    /* Hand-made windows of a 2x2 / stride-2 pool, [1, 1, 2, 8] (the last NaN
     * wins: windows 0, 1 and 3; the first of equal maxima: window 2). */
    static const double win[16] = {NAN, NAN, 1, NAN, 5, 5, NAN, 1,
                                   1,   2,   NAN, 3, 5, 5, 2,   NAN};
    static const int64_t want_ind[4] = {1, 10, 4, 15};
    for (int k = 0; k < 2; k++) {
        int32_t dt = k ? GFP_F64 : GFP_F32;
        ap_tensor x = ap_make(dt, 4, SZ(1, 1, 2, 8), AL_CONTIG, AD_ANY);
        ap_tensor y = ap_make(dt, 4, SZ(1, 1, 1, 4), AL_CONTIG, AD_ANY);
        ap_tensor ind = ap_make(GFP_I64, 4, SZ(1, 1, 1, 4), AL_CONTIG, AD_INT);
        unsigned char bytes[16 * 8];
        for (int i = 0; i < 16; i++) ap_encode(dt, win[i], bytes + i * abi_esize(dt));
        for (int sd = 0; sd < 2; sd++)
            ap_write(&x, sd, bytes, 16 * abi_esize(dt));
        gfp_pool2d_params p = {sizeof p, {2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 0};
        ap_tensor *in[1] = {&x}, *out[2] = {&y, &ind};
        ap_run("max_pool2d hand-made windows", GFP_OP_MAX_POOL2D, in, 1, out, 2, &p, 0, 0);
        int64_t got[4];
        ap_read(&ind, AP_TEST, got, sizeof got);
        for (int i = 0; i < 4; i++)
            CHECK_MSG(got[i] == want_ind[i], "window %d: index %lld, expected %lld", i,
                      (long long)got[i], (long long)want_ind[i]);
        ap_free(&x), ap_free(&y), ap_free(&ind);
    }
    /* The backward against the reference, bit for bit: every index in its
     * 2x2 window, with a -0 gradient (0 + g: +0, as PyTorch's scatter);
     * then plane 1 with an index in a neighbour's window (6 twice: the two
     * gradients summed); a 5x5 grad_x whose last row and column no window
     * covers (0). */
    static const int64_t windows[2][8] = {{1, 7, 15, 18, 6, 2, 10, 17},
                                           {1, 7, 15, 18, 6, 6, 10, 18}};
    for (int k = 0; k < 4; k++) {
        int32_t dt = k & 1 ? GFP_F64 : GFP_F32;
        const int64_t *ix = windows[k >> 1];
        static const double gv[8] = {-0.0, 2.5, -1, 4, 1.5, -2, 3, 0.25};
        ap_tensor gy = ap_make(dt, 4, SZ(1, 2, 2, 2), AL_CONTIG, AD_ANY);
        ap_tensor ind = ap_make(GFP_I64, 4, SZ(1, 2, 2, 2), AL_CONTIG, AD_INT);
        ap_tensor gx = ap_make(dt, 4, SZ(1, 2, 5, 5), AL_CONTIG, AD_ANY);
        unsigned char bytes[8 * 8];
        for (int i = 0; i < 8; i++) ap_encode(dt, gv[i], bytes + i * abi_esize(dt));
        for (int sd = 0; sd < 2; sd++) {
            ap_write(&gy, sd, bytes, 8 * abi_esize(dt));
            ap_write(&ind, sd, ix, 8 * sizeof *ix);
        }
        ap_tensor *bin[2] = {&gy, &ind}, *bout[1] = {&gx};
        ap_run("max_pool2d_backward 2x2 windows", GFP_OP_MAX_POOL2D_BACKWARD, bin, 2, bout, 1,
               NULL, 0, 0);
        unsigned char got[50 * 8], want[50 * 8];
        size_t nb = 50 * abi_esize(dt);
        ap_read(&gx, AP_TEST, got, nb);
        ap_read(&gx, AP_REF, want, nb);
        CHECK_MSG(memcmp(got, want, nb) == 0, "2x2 backward: grad_x differs in its bits");
        ap_free(&gy), ap_free(&ind), ap_free(&gx);
    }
    /* An index out of range is refused by both, with nothing written. */
    ap_tensor gy = ap_make(GFP_F32, 4, SZ(1, 1, 2, 2), AL_CONTIG, AD_ANY);
    ap_tensor ind = ap_make(GFP_I64, 4, SZ(1, 1, 2, 2), AL_CONTIG, AD_INT);
    ap_tensor gx = ap_make(GFP_F32, 4, SZ(1, 1, 3, 3), AL_CONTIG, AD_ANY);
    int64_t bad[4] = {0, 4, 9, 2};
    for (int s = 0; s < 2; s++)
        ap_write(&ind, s, bad, sizeof bad);
    ap_tensor *bin[2] = {&gy, &ind}, *bout[1] = {&gx};
    gfp_status sf = ap_launch_side(AP_TEST, GFP_OP_MAX_POOL2D_BACKWARD, bin, 2, bout, 1, NULL);
    CHECK(sf == GFP_ERR_INVALID);
    CHECK_CONTAINS(ap_side[AP_TEST].error, "9");
    CHECK(ap_compare(&gx, 0, 0, "untouched grad_x") == 0); /* the reference's is untouched too */
    ap_free(&gy), ap_free(&ind), ap_free(&gx);
}

/* A training loop creates its oneDNN primitives on its first step only:
 * every later step finds them in the cache (new buffers, same geometry). */
static void one_step(void) {
    run_matmul(GFP_F32, 0, NULL, 32, 48, 16, AL_CONTIG, AL_TRANSPOSED, AL_CONTIG, 0, 0);
    run_matmul(GFP_F32, 1, SZ(4), 8, 8, 8, AL_TRANSPOSED, AL_CONTIG, AL_CONTIG, 0, 1);
    for (uint32_t op = GFP_OP_CONV2D; op <= GFP_OP_CONV2D_BACKWARD_WEIGHT; op++)
        run_conv(op, GFP_F32, &convs[6], 0, true);
    ap_tensor x = ap_make(GFP_F32, 4, SZ(2, 3, 8, 8), AL_CONTIG, AD_ANY);
    ap_tensor y = ap_make(GFP_F32, 4, SZ(2, 3, 4, 4), AL_CONTIG, AD_ANY);
    gfp_pool2d_params pp = {sizeof pp, {2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 0};
    ap_tensor *in[1] = {&x}, *out[1] = {&y};
    ap_run("avg_pool2d", GFP_OP_AVG_POOL2D, in, 1, out, 1, &pp, 1e-6, 1e-6);
    ap_tensor big = ap_make(GFP_F32, 2, SZ(64, 100), AL_CONTIG, AD_ANY);
    ap_tensor big_y = ap_make(GFP_F32, 2, SZ(64, 100), AL_CONTIG, AD_ANY);
    ap_tensor *bi[1] = {&big}, *bo[1] = {&big_y};
    ap_run("tanh", GFP_OP_TANH, bi, 1, bo, 1, NULL, 4e-6, 4e-6);
    ap_tensor m = ap_make(GFP_F32, 1, SZ(64), AL_CONTIG, AD_ANY);
    ap_tensor r = ap_make(GFP_F32, 1, SZ(64), AL_CONTIG, AD_ANY);
    gfp_layer_norm_params lp = {sizeof lp, 1, 1e-5};
    ap_tensor *li[3] = {&big, NULL, NULL}, *lo[3] = {&big_y, &m, &r};
    ap_run("layer_norm", GFP_OP_LAYER_NORM, li, 3, lo, 3, &lp, 2e-5, 2e-5);
    ap_free(&x), ap_free(&y), ap_free(&big), ap_free(&big_y), ap_free(&m), ap_free(&r);
}

static void test_primitive_cache(void) {
    one_step();
    uint64_t after_first = ap_counter("cpu_onednn.primitive_builds");
    CHECK(after_first != UINT64_MAX && after_first > 0);
    for (int step = 0; step < 3; step++) one_step();
    uint64_t after = ap_counter("cpu_onednn.primitive_builds");
    CHECK_MSG(after == after_first, "%llu primitives created after the first step",
              (unsigned long long)(after - after_first));
}

int main(void) {
    if (!ap_init()) return 1;
    RUN(test_matmul);
    RUN(test_conv);
    RUN(test_pool);
    RUN(test_primitive_cache);
    return CHECK_REPORT();
}
