/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_ops_matmul.c — MATMUL: y[..., m, n] = sum_k a[..., m, k] * b[..., k, n].
 *
 * Three shaders: a naive one (an invocation per output, every dtype), a
 * tiled f32 / f16 one (shared-memory tiles, 4 x 4 outputs per invocation)
 * for GPUs, and a register-blocked one (8 x 4 outputs per invocation, no
 * shared memory) for CPU devices such as lavapipe; chosen by size and
 * device, or forced by vkp_matmul_mode for the bench (1 naive, 2 tiled, 3
 * register-blocked). f16 accumulates in f32 (a K split into several
 * dispatches rounds each partial sum to f16). Batch dims are walked through
 * their strides (broadcast ones come as stride 0). */
#include "vk_internal.h"

int vkp_matmul_mode;

#define MM_WX 16u
#define MM_WY 16u
#define MM_TK 32u
#define MM_RW 64u /* matmul_reg: invocations per workgroup, 4 columns each */
#define MM_RM 8u  /* matmul_reg: rows per workgroup */

static uint32_t matmul_dtypes(const vkp_device *d) {
    return (PK_DT_FLOAT | PK_DT_INT | PK_DT(GFP_F16)) & vkp_device_dtypes(d);
}

uint32_t vkp_matmul_support(vkp_device *d, const gfp_op_query *q) {
    if (pk_is_complex(q->input_dtypes[0])) return vkp_complex_matmul_support(d, q);
    return pk_matmul_dtypes_ok(q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0],
                               matmul_dtypes(d))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* Invocations per workgroup of matmul_reg (4 columns each): MM_RW, or fewer
 * where N is not a multiple of 4 * MM_RW and the last workgroup would
 * compute mostly padding (conv2d's GEMMs, N = Ho * Wo = 784: 1,024 columns
 * in 4 workgroups of 64, 832 in 13 of 16; the GEMM of a 16x16x28x28 conv
 * took about 18% less CPU time with 16 or 8 on lavapipe, matmul 1024 the
 * same). The widest whose padding is at most N / 16, else 8. */
static uint32_t reg_width(int64_t n) {
    for (uint32_t rw = MM_RW; rw > 8; rw /= 2) {
        uint64_t cols = 4u * rw, pad = ((uint64_t)n + cols - 1) / cols * cols - (uint64_t)n;
        if (pad * 16 <= (uint64_t)n) return rw;
    }
    return 8;
}

/* y = a @ b, or y += a @ b when accumulate; with bias (f32, on the
 * register-blocked shader only; *bias_done says whether it was added),
 * y = a @ b + bias[(batch % bias_groups) * M + m] for row m. */
static gfp_status matmul(vkp_device *d, const gfp_tensor *a, const gfp_tensor *b,
                         const gfp_tensor *y, bool accumulate, const gfp_tensor *bias,
                         uint32_t bias_groups, bool *bias_done) {
    if (bias_done) *bias_done = false;
    gfp_status st = pk_check_matmul(a, b, y, matmul_dtypes(d));
    if (st != GFP_OK) return st;
    int r = a->rank;
    int64_t M = a->sizes[r - 2], K = a->sizes[r - 1], N = b->sizes[r - 1];
    int64_t total = pk_numel(y);
    if (total == 0) return GFP_OK;
    int br = r - 2;
    int64_t bs[GFP_MAX_RANK], bst[3][GFP_MAX_RANK];
    for (int k = 0; k < br; k++) {
        bs[k] = a->sizes[k];
        bst[0][k] = a->strides[k];
        bst[1][k] = b->strides[k];
        bst[2][k] = y->strides[k];
    }
    vkp_coalesce(&br, bs, bst, 3);
    int64_t nb = total / (M * N);
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)M);
    vkp_put(&p, (uint32_t)N);
    vkp_put(&p, (uint32_t)K);
    vkp_put(&p, (uint32_t)nb);
    vkp_put(&p, (uint32_t)br);
    vkp_put(&p, vkp_elem_offset(a));
    vkp_put(&p, vkp_elem_offset(b));
    vkp_put(&p, vkp_elem_offset(y));
    vkp_put(&p, (uint32_t)a->strides[r - 2]);
    vkp_put(&p, (uint32_t)a->strides[r - 1]);
    vkp_put(&p, (uint32_t)b->strides[r - 2]);
    vkp_put(&p, (uint32_t)b->strides[r - 1]);
    vkp_put(&p, (uint32_t)y->strides[r - 2]);
    vkp_put(&p, (uint32_t)y->strides[r - 1]);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < br ? (uint32_t)bs[k] : 1);
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 8; k++) vkp_put(&p, k < br ? (uint32_t)bst[t][k] : 0);

    vkp_put(&p, accumulate ? 1u : 0u); /* MM_ACC: add to y (and later K chunks) */
    uint32_t acc_word = p.n - 1, bias_word = p.n;
    vkp_put(&p, 0); /* MM_BIAS, set below when the shader takes it */
    vkp_put(&p, bias ? vkp_elem_offset(bias) : 0);
    vkp_put(&p, bias ? (uint32_t)bias->strides[0] : 0);
    vkp_put(&p, bias_groups ? bias_groups : 1);
    vkp_dispatch dp = {.params = p.w, .n_params = p.n, .n_tensors = 3, .tensors = {y, a, b}};
    bool blocked = (a->dtype == GFP_F32 || a->dtype == GFP_F16) &&
                   (vkp_matmul_mode >= 2 || (vkp_matmul_mode == 0 && M * N >= 64 * 64 && K >= 16));
    /* By size: on a CPU device (lavapipe) the register-blocked shader, whose
     * a loads are uniform across SIMD lanes; on a GPU the shared-memory one. */
    bool cpu_like = d->loop_budget != UINT32_MAX;
    bool reg = blocked && (vkp_matmul_mode == 3 || (vkp_matmul_mode == 0 && cpu_like));
    bool tiled = blocked && !reg;
    uint64_t gx = ((uint64_t)N + 4 * MM_WX - 1) / (4 * MM_WX);
    uint64_t gy = ((uint64_t)M + 4 * MM_WY - 1) / (4 * MM_WY);
    uint32_t rw = reg_width(N);
    uint64_t rgx = ((uint64_t)N + 4 * rw - 1) / (4 * rw), rgy = ((uint64_t)M + MM_RM - 1) / MM_RM;
    if (tiled && (gx > d->max_groups[0] || gy > d->max_groups[1])) tiled = false;
    if (reg && (rgx > d->max_groups[0] || rgy > d->max_groups[1])) reg = false;
    /* K in chunks, each a dispatch adding into y, so that no invocation
     * loops longer than the device allows (lavapipe caps it). */
    uint64_t outer = 1, per_k = 2; /* loop iterations per unit of K */
    if (reg) {
        dp.shader = VKP_SH_MATMUL_REG;
        dp.n_spec = 3;
        dp.spec[0] = rw;
        dp.n_tensors = 4;
        dp.tensors[3] = bias; /* NULL: y's buffer, unread */
        if (bias && bias->dtype == GFP_F32 && a->dtype == GFP_F32) {
            p.w[bias_word] = 1;
            if (bias_done) *bias_done = true;
        }
        dp.spec[1] = (uint32_t)a->dtype;
        dp.spec[2] = MM_RM;
        dp.groups[0] = (uint32_t)rgx;
        dp.groups[1] = (uint32_t)rgy;
        dp.groups[2] = (uint32_t)(nb < d->max_groups[2] ? nb : d->max_groups[2]);
        outer = ((uint64_t)nb + dp.groups[2] - 1) / dp.groups[2];
        per_k = 1;
    } else if (tiled) {
        dp.shader = VKP_SH_MATMUL_TILED;
        dp.n_spec = 4;
        dp.spec[0] = MM_WX;
        dp.spec[1] = MM_WY;
        dp.spec[2] = MM_TK;
        dp.spec[3] = (uint32_t)a->dtype;
        dp.groups[0] = (uint32_t)gx;
        dp.groups[1] = (uint32_t)gy;
        dp.groups[2] = (uint32_t)(nb < d->max_groups[2] ? nb : d->max_groups[2]);
        outer = ((uint64_t)nb + dp.groups[2] - 1) / dp.groups[2];
    } else {
        if (total > (int64_t)UINT32_MAX)
            return pk_fail(GFP_ERR_UNSUPPORTED, "matmul: %lld outputs are too many for one launch",
                            (long long)total);
        dp.shader = VKP_SH_MATMUL_NAIVE;
        dp.n_spec = 2;
        dp.spec[0] = 64;
        dp.spec[1] = (uint32_t)a->dtype;
        dp.groups[0] = vkp_groups(d, (uint64_t)total, 64);
        outer = ((uint64_t)total + (uint64_t)dp.groups[0] * 64 - 1) / ((uint64_t)dp.groups[0] * 64);
        per_k = 1;
    }
    uint64_t budget = d->loop_budget / 2;
    uint64_t kc = budget / (outer * per_k);
    kc = kc >= 16 ? kc & ~(uint64_t)15 : 16;
    if (kc >= (uint64_t)K) return vkp_dispatch_run(d, &dp);
    gfp_status st2 = GFP_OK;
    for (uint64_t k0 = 0; k0 < (uint64_t)K && st2 == GFP_OK; k0 += kc) {
        uint64_t len = (uint64_t)K - k0 < kc ? (uint64_t)K - k0 : kc;
        p.w[2] = (uint32_t)len;
        /* The chunk starts k0 elements along a's columns and b's rows. */
        p.w[5] = vkp_elem_offset(a) + (uint32_t)(k0 * (uint64_t)a->strides[r - 1]);
        p.w[6] = vkp_elem_offset(b) + (uint32_t)(k0 * (uint64_t)b->strides[r - 2]);
        p.w[acc_word] = k0 > 0 || accumulate ? 1u : 0u;
        if (k0 > 0) p.w[bias_word] = 0; /* the bias once, with the first chunk */
        st2 = vkp_dispatch_run(d, &dp);
    }
    return st2;
}

gfp_status vkp_matmul_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                             uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                             const void *params) {
    /* Complex: one real GEMM through this file (vk_complex.c). */
    if (pk_is_complex(in[0]->dtype)) return vkp_complex_matmul_launch(d, in[0], in[1], out[0]);
    return matmul(d, in[0], in[1], out[0], false, NULL, 0, NULL);
}

gfp_status vkp_matmul_accumulate(vkp_device *d, const gfp_tensor *a, const gfp_tensor *b,
                                 const gfp_tensor *y) {
    return matmul(d, a, b, y, true, NULL, 0, NULL);
}

gfp_status vkp_matmul_bias(vkp_device *d, const gfp_tensor *a, const gfp_tensor *b,
                           const gfp_tensor *y, const gfp_tensor *bias, uint32_t bias_groups,
                           bool *bias_done) {
    return matmul(d, a, b, y, false, bias, bias_groups, bias_done);
}
