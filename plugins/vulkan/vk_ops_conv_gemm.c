/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_ops_conv_gemm.c — CONV2D and its two gradients (f32) as GEMMs through
 * the plugin's own matmul (vk_ops_matmul.c), for every stride, padding,
 * dilation and group setting. With K = Ci/groups * Kh * Kw and P = Ho * Wo,
 * per group g and image n:
 *   forward       y[n, g]  (Cog x P)  = W[g] (Cog x K) @ im2col(x[n, g]) (K x P) + bias[g]
 *                 (the bias added by the matmul as it stores, where its shader can)
 *   grad input    col (K x P)         = W[g]^T @ dy[n, g], then col2im (a gather) into dx
 *   grad weight   dW[g] (Cog x K)    += dy[g] (Cog x nP) @ im2col(x[g])^T (nP x K), the
 *                                       images of a tile side by side in the GEMM's K
 * The im2col buffers are made in tiles of images and output positions that
 * fit VKP_CG_TILE_BYTES and the device's maxStorageBufferRange
 * (shaders/conv_gemm.comp moves the data). The views handed to the matmul
 * need W's (Ci/groups, Kh, Kw) and the output's (Ho, Wo) to merge into one
 * stride each; other layouts and f64 take the direct kernels. */
#define _GNU_SOURCE /* secure_getenv */
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

/* The largest im2col tile; also capped at the device's storage range. */
#define VKP_CG_TILE_BYTES (32ull << 20)

enum { CG_IM2COL = 0, CG_COL2IM = 1, CG_BIAS = 2, CG_PACK_DY = 3, CG_IM2COL_T = 4 };

/* One dispatch of conv_gemm.comp: o (written), i1 (read); xs / ys: the
 * strides of the input- and output-shaped roles. */
static gfp_status aux(vkp_device *d, uint32_t mode, const int64_t *geo, const gfp_tensor *o,
                      const gfp_tensor *i1, const gfp_tensor *xs, const gfp_tensor *ys,
                      int64_t bias_stride, const uint32_t tile[4], bool acc, uint64_t items) {
    if (items == 0) return GFP_OK;
    if (items > UINT32_MAX)
        return pk_fail(GFP_ERR_UNSUPPORTED, "conv2d: a tile of %llu elements is too large for "
                        "one launch", (unsigned long long)items);
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)items);
    for (int i = 0; i < 18; i++) vkp_put(&p, (uint32_t)geo[i]);
    for (int k = 0; k < 4; k++) vkp_put(&p, xs ? (uint32_t)xs->strides[k] : 0);
    for (int k = 0; k < 4; k++) vkp_put(&p, 0);
    for (int k = 0; k < 4; k++) vkp_put(&p, ys ? (uint32_t)ys->strides[k] : 0);
    vkp_put(&p, (uint32_t)bias_stride);
    for (int k = 0; k < 4; k++) vkp_put(&p, tile[k]);
    vkp_put(&p, vkp_elem_offset(o));
    vkp_put(&p, vkp_elem_offset(i1));
    vkp_put(&p, acc ? 1u : 0u);
    vkp_dispatch dp = {.shader = VKP_SH_CONV_GEMM, .n_spec = 2, .params = p.w, .n_params = p.n,
                       .n_tensors = 2, .tensors = {o, i1}};
    dp.spec[0] = 64;
    dp.spec[1] = mode;
    dp.groups[0] = vkp_groups(d, items, 64);
    return vkp_dispatch_run(d, &dp);
}

bool vkp_conv_gemm_wins(uint32_t op, const int64_t *geo) {
    const char *force = secure_getenv("GRAFT_VULKAN_CONV");
    if (force && strcmp(force, "direct") == 0) return false;
    if (force && strcmp(force, "gemm") == 0) return true;
    /* Measured on lavapipe (2 cores under load; ms, direct / GEMM, forward
     * and weight gradient): N16 16->32 28x28 3x3: 3632 / 163, 3840 / 197;
     * N64 1->16 28x28: 688 / 50, 101 / 26; N1 3->4 32x32: 2.1 / 0.33,
     * 2.7 / 0.48; N4 2->2 6x6: 0.89 / 0.29, 0.33 / 0.17; N1 1->1 8x8:
     * 0.06 / 0.06, 0.10 / 0.16. The GEMM wins from a few thousand flops on
     * (the direct kernels keep the smallest, where dispatches dominate). */
    (void)op;
    double flops = 2.0 * (double)geo[0] * (double)geo[2] * (double)geo[7] * (double)geo[8] *
                   (double)geo[10] * (double)geo[5] * (double)geo[6];
    return flops >= 4096;
}

static gfp_tensor view(const gfp_tensor *base, int rank, const int64_t *sizes,
                       const int64_t *strides, int64_t elem_offset) {
    gfp_tensor t = {.struct_size = sizeof t, .dtype = base->dtype, .buffer = base->buffer,
                    .offset = base->offset + (uint64_t)elem_offset * sizeof(float), .rank = rank};
    for (int k = 0; k < rank; k++) {
        t.sizes[k] = sizes[k];
        t.strides[k] = strides[k];
    }
    return t;
}

static gfp_status matmul_into(vkp_device *d, const gfp_tensor *a, const gfp_tensor *b,
                              const gfp_tensor *y, bool acc) {
    if (acc) return vkp_matmul_accumulate(d, a, b, y);
    const gfp_tensor *in[2] = {a, b}, *out[1] = {y};
    return vkp_matmul_launch(d, GFP_OP_MATMUL, in, 2, out, 1, NULL);
}

gfp_status vkp_conv_gemm(vkp_device *d, uint32_t op, const gfp_tensor *x, const gfp_tensor *w,
                         const gfp_tensor *y, const gfp_tensor *bias, const int64_t *geo,
                         bool *done) {
    *done = false;
    int64_t N = geo[0], CI = geo[1], CO = geo[2], H = geo[3], W = geo[4], KH = geo[5];
    int64_t KW = geo[6], HO = geo[7], WO = geo[8], G = geo[9], CIG = geo[10], COG = geo[11];
    int64_t K = CIG * KH * KW, P = HO * WO;
    if (x->dtype != GFP_F32 || N == 0 || CI == 0 || CO == 0 || P == 0) return GFP_OK;
    /* W's (c, i, j) as one stride ws3; the output-shaped tensor's (oh, ow) as one. */
    const int64_t *wsd = w->strides, *ysd = y->strides;
    if ((KH > 1 && wsd[2] != KW * wsd[3]) || (CIG > 1 && wsd[1] != KH * KW * wsd[3]) ||
        (HO > 1 && ysd[2] != WO * ysd[3]))
        return GFP_OK;
    /* The data-movement kernels loop along a row of Wo outputs and over
     * the Kh x Kw taps of an input element. */
    if ((uint64_t)WO * 2 + 64 > d->loop_budget || (uint64_t)(KH * KW) * 2 + 64 > d->loop_budget)
        return GFP_OK;
    /* Tiles: whole images while one fits, else positions of one image. */
    uint64_t cap = VKP_CG_TILE_BYTES < d->max_range ? VKP_CG_TILE_BYTES : d->max_range;
    const char *tile_env = secure_getenv("GRAFT_VULKAN_CONV_TILE"); /* bytes: for the tests */
    if (tile_env && strtoull(tile_env, NULL, 10) > 0 && strtoull(tile_env, NULL, 10) < cap)
        cap = strtoull(tile_env, NULL, 10);
    cap /= sizeof(float);
    uint64_t per_pos = (uint64_t)(G * K) + (op == GFP_OP_CONV2D_BACKWARD_WEIGHT ? (uint64_t)CO : 0);
    uint64_t per_img = per_pos * (uint64_t)P, nb, pc;
    if (per_img <= cap) {
        nb = cap / per_img < (uint64_t)N ? cap / per_img : (uint64_t)N;
        pc = (uint64_t)P;
    } else {
        nb = 1;
        pc = cap / per_pos;
        if (pc >= 4) pc &= ~(uint64_t)3;
        if (pc == 0) return GFP_OK;
    }
    uint64_t col_elems = nb * (uint64_t)(G * K) * pc;
    uint64_t dy_elems = op == GFP_OP_CONV2D_BACKWARD_WEIGHT ? nb * (uint64_t)CO * pc : 0;
    gfp_buffer col_buf = NULL, dy_buf = NULL;
    void *host_ptr = NULL;
    gfp_status st = vkp_buffer_alloc(d, col_elems * sizeof(float), &col_buf, &host_ptr);
    if (st == GFP_OK && dy_elems)
        st = vkp_buffer_alloc(d, dy_elems * sizeof(float), &dy_buf, &host_ptr);
    if (st != GFP_OK) {
        if (col_buf) vkp_buffer_free(d, col_buf);
        return st;
    }
    *done = true;
    gfp_tensor col = {.struct_size = sizeof col, .dtype = GFP_F32, .buffer = col_buf, .rank = 1,
                      .sizes = {(int64_t)col_elems}, .strides = {1}};
    gfp_tensor dyp = col;
    dyp.buffer = dy_buf;
    dyp.sizes[0] = (int64_t)dy_elems;
    bool first = true;
    for (int64_t n0 = 0; n0 < N && st == GFP_OK; n0 += (int64_t)nb) {
        int64_t nt = N - n0 < (int64_t)nb ? N - n0 : (int64_t)nb;
        for (int64_t p0 = 0; p0 < P && st == GFP_OK; p0 += (int64_t)pc) {
            int64_t pt = P - p0 < (int64_t)pc ? P - p0 : (int64_t)pc;
            uint32_t tile[4] = {(uint32_t)n0, (uint32_t)nt, (uint32_t)p0, (uint32_t)pt};
            int64_t rows = (p0 + pt - 1) / WO - p0 / WO + 1; /* output rows the tile touches */
            /* The tile's part of the output-shaped tensor, as [nt, G, Cog, pt]. */
            int64_t ts[4] = {nt, G, COG, pt}, tst[4] = {ysd[0], COG * ysd[1], ysd[1], ysd[3]};
            gfp_tensor yt = view(y, 4, ts, tst, n0 * ysd[0] + p0 * ysd[3]);
            int64_t cs[4] = {nt, G, K, pt}, cst[4] = {G * K * pt, K * pt, pt, 1};
            gfp_tensor ct = view(&col, 4, cs, cst, 0);
            if (op == GFP_OP_CONV2D) {
                st = aux(d, CG_IM2COL, geo, &col, x, x, NULL, 0, tile, false,
                         (uint64_t)(nt * G * K * rows));
                int64_t as[4] = {nt, G, COG, K}, ast[4] = {0, COG * wsd[0], wsd[0], wsd[3]};
                gfp_tensor at = view(w, 4, as, ast, 0);
                bool fused = false;
                if (st == GFP_OK)
                    st = vkp_matmul_bias(d, &at, &ct, &yt, bias, (uint32_t)G, &fused);
                if (st == GFP_OK && bias && !fused)
                    st = aux(d, CG_BIAS, geo, y, bias, NULL, y, bias->strides[0], tile, false,
                             (uint64_t)(nt * CO * rows));
            } else if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
                int64_t as[4] = {nt, G, K, COG}, ast[4] = {0, COG * wsd[0], wsd[3], wsd[0]};
                gfp_tensor at = view(w, 4, as, ast, 0);
                st = matmul_into(d, &at, &yt, &ct, false);
                if (st == GFP_OK)
                    st = aux(d, CG_COL2IM, geo, x, &col, x, NULL, 0, tile, p0 > 0,
                             (uint64_t)(nt * CI * H * W));
            } else {
                int64_t L = nt * pt;
                st = aux(d, CG_PACK_DY, geo, &dyp, y, NULL, y, 0, tile, false,
                         (uint64_t)(CO * nt * rows));
                if (st == GFP_OK)
                    st = aux(d, CG_IM2COL_T, geo, &col, x, x, NULL, 0, tile, false,
                             (uint64_t)(nt * G * K * rows));
                int64_t as[3] = {G, COG, L}, ast[3] = {COG * L, L, 1};
                int64_t bs[3] = {G, L, K}, bst[3] = {L * K, K, 1};
                int64_t ws[3] = {G, COG, K}, wst[3] = {COG * wsd[0], wsd[0], wsd[3]};
                gfp_tensor at = view(&dyp, 3, as, ast, 0), bt = view(&col, 3, bs, bst, 0);
                gfp_tensor wt = view(w, 3, ws, wst, 0);
                if (st == GFP_OK) st = matmul_into(d, &at, &bt, &wt, !first);
            }
            first = false;
        }
    }
    /* Freed at once: later work is queued behind the dispatches reading them. */
    vkp_buffer_free(d, col_buf);
    if (dy_buf) vkp_buffer_free(d, dy_buf);
    return st;
}
