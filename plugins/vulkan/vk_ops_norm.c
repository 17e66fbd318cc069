/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_ops_norm.c — SOFTMAX, LOG_SOFTMAX, LAYER_NORM and BATCH_NORM (f32,
 * f64): a workgroup per line, group or channel, statistics combined in
 * shared memory with compensated sums and the corrected two-pass variance
 * (as the reference, which computes in double). */
#include <string.h>

#include "vk_internal.h"

/* f32 and f64 the device has; f16 (computed in f32) for softmax and
 * log_softmax. */
static uint32_t norm_dtypes(const vkp_device *d, uint32_t op) {
    bool f16 = op == GFP_OP_SOFTMAX || op == GFP_OP_LOG_SOFTMAX;
    return (PK_DT_FLOAT | (f16 ? PK_DT(GFP_F16) : 0u)) & vkp_device_dtypes(d);
}

uint32_t vkp_norm_support(vkp_device *d, const gfp_op_query *q) {
    return pk_norm_dtypes_ok(q->op, q->input_dtypes, q->n_inputs, q->output_dtypes, q->n_outputs,
                             norm_dtypes(d, q->op))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* A workgroup size for lines of n elements walked `passes` times with
 * `dims` dims each; 0 (refused) beyond the device's per-invocation loops. */
static uint32_t wg_for(const vkp_device *d, int64_t n, int passes, int dims) {
    uint64_t work = (uint64_t)n * (uint64_t)passes * (uint64_t)(dims + 1);
    /* On lavapipe the smallest group that stays within the loop budget:
     * barriers cost more than loop iterations there (layer_norm 4096x1024:
     * 2650 ms with 256 invocations, see the README for the rest). */
    if (d->loop_budget != UINT32_MAX)
        for (uint32_t wg = 8; wg <= 64; wg *= 2)
            if ((work + wg - 1) / wg + 64 <= d->loop_budget) return wg;
    return vkp_pick_wg(d, work, n >= 1024 ? 256 : 64, 1024);
}

static gfp_status too_long(const char *name, int64_t n) {
    return pk_fail(GFP_ERR_UNSUPPORTED, "%s: groups of %lld elements are more than this vulkan "
                    "device normalises in one workgroup (its per-invocation loop limit)",
                    name, (long long)n);
}

static void grid_2d(vkp_dispatch *dp, uint64_t groups) {
    uint64_t gx = groups < 65535 ? groups : 65535;
    dp->groups[0] = (uint32_t)gx;
    dp->groups[1] = (uint32_t)((groups + gx - 1) / gx);
}

/* f32 softmax / log_softmax through shaders/softmax_fast_body.glsl: a
 * workgroup per line (vec4 loads and stores where the lines allow, the
 * group's max and sum through subgroup arithmetic where the device has it);
 * lines too long for one workgroup's loop budget take their logsumexp from
 * the tree reduction first, then a workgroup per chunk writes the outputs. */
static gfp_status softmax_fast(vkp_device *d, uint32_t op, const gfp_tensor *x,
                               const gfp_tensor *y, int dim, int lr, const int64_t *ls,
                               int64_t (*lst)[GFP_MAX_RANK], uint64_t lines, uint64_t len) {
    bool cpu_like = d->loop_budget != UINT32_MAX;
    uint32_t wg = vkp_tree_wg(d);
    int64_t xs = x->strides[dim], ys = y->strides[dim];
    bool vec = xs == 1 && ys == 1 && vkp_elem_offset(x) % 4 == 0 && vkp_elem_offset(y) % 4 == 0;
    for (int k = 0; k < lr; k++) vec = vec && lst[0][k] % 4 == 0 && lst[1][k] % 4 == 0;
    uint64_t per_iter = vec ? 4 : 1;
    uint64_t iters = d->loop_budget == UINT32_MAX ? UINT32_MAX
                                                  : (d->loop_budget - 128u) / 6u - 2u;
    bool fused = (len + per_iter * wg - 1) / (per_iter * wg) <= iters;
    uint64_t chunk = len, chunks = 1;
    if (!fused) {
        /* The apply pass: one pass, two iterations per element counted. */
        uint64_t max_chunk = (iters * 3 - 2) * per_iter * wg;
        uint64_t want = cpu_like ? 4096 : 16384;
        chunk = want < max_chunk ? want : max_chunk;
        chunks = (len + chunk - 1) / chunk;
    }
    uint64_t groups = lines * chunks;
    uint64_t gx = groups < 65535 ? groups : 65535, gy = (groups + gx - 1) / gx;
    if (groups > UINT32_MAX || gy > d->max_groups[1])
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %llu lines of %llu elements are more than this "
                        "vulkan device normalises in one launch", pk_op_name(op),
                        (unsigned long long)lines, (unsigned long long)len);
    gfp_buffer scratch = NULL;
    gfp_tensor lv = {.struct_size = sizeof lv, .dtype = GFP_F32, .rank = x->rank};
    if (!fused) {
        void *host_ptr = NULL;
        gfp_status st = vkp_buffer_alloc(d, lines * sizeof(float), &scratch, &host_ptr);
        if (st != GFP_OK) return st;
        lv.buffer = scratch;
        int64_t dense = 1;
        for (int k = x->rank - 1; k >= 0; k--) {
            lv.sizes[k] = k == dim ? 1 : x->sizes[k];
            lv.strides[k] = dense;
            dense *= lv.sizes[k];
        }
        gfp_reduce_params rp = {.struct_size = sizeof rp, .dims = 1u << dim};
        const gfp_tensor *ri[1] = {x}, *ro[1] = {&lv};
        st = vkp_reduce_launch(d, GFP_OP_LOGSUMEXP, ri, 1, ro, 1, &rp);
        if (st != GFP_OK) {
            vkp_buffer_free(d, scratch);
            return st;
        }
    }
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)lines);
    vkp_put(&p, (uint32_t)len);
    vkp_put(&p, (uint32_t)lr);
    vkp_put(&p, vkp_elem_offset(x));
    vkp_put(&p, vkp_elem_offset(y));
    vkp_put(&p, (uint32_t)xs);
    vkp_put(&p, (uint32_t)chunk);
    vkp_put(&p, (uint32_t)chunks);
    vkp_put(&p, 0);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < lr ? (uint32_t)ls[k] : 1);
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 8; k++) vkp_put(&p, k < lr ? (uint32_t)lst[t][k] : 0);
    vkp_put(&p, scratch ? vkp_elem_offset(&lv) : 0);
    vkp_put(&p, (uint32_t)ys);
    vkp_dispatch dp = {.shader = d->phys->has_subgroups ? VKP_SH_SOFTMAX_FAST
                                                        : VKP_SH_SOFTMAX_FAST_NOSG,
                       .n_spec = 4, .params = p.w, .n_params = p.n, .n_tensors = 3,
                       .tensors = {y, x, scratch ? &lv : y}};
    dp.spec[0] = wg;
    dp.spec[1] = op;
    dp.spec[2] = fused ? 0u : 1u;
    dp.spec[3] = vec ? 1u : 0u;
    /* Lines of a few vec4s per invocation stay in registers (one read of x,
     * one exp per softmax output): up to 32 on CPU devices (lavapipe spills
     * to its stack, still in cache), 8 on GPUs (register pressure). As a
     * power of two, for fewer pipelines. */
    uint64_t per_inv = (len / 4 + wg - 1) / wg, regs = 1;
    while (regs < per_inv) regs *= 2;
    if (vec && fused && per_inv > 0 && regs <= (cpu_like ? 32u : 8u)) {
        dp.n_spec = 5;
        dp.spec[4] = (uint32_t)regs;
    }
    dp.groups[0] = (uint32_t)gx;
    dp.groups[1] = (uint32_t)gy;
    gfp_status st = vkp_dispatch_run(d, &dp);
    /* Freed at once: later work is queued behind the dispatches reading it. */
    if (scratch) vkp_buffer_free(d, scratch);
    return st;
}

static gfp_status softmax(vkp_device *d, uint32_t op, const gfp_tensor *x, const gfp_tensor *y,
                          const void *params) {
    const char *name = pk_op_name(op); /* checked by pk_check_norm, as the ops below */
    int dim = ((const gfp_dim_params *)params)->dim;
    int64_t numel = pk_numel(x);
    if (numel == 0) return GFP_OK;
    int64_t len = x->rank > 0 ? x->sizes[dim] : 1;
    int lr = 0;
    int64_t ls[GFP_MAX_RANK], lst[2][GFP_MAX_RANK];
    for (int k = 0; k < x->rank; k++) {
        if (k == dim) continue;
        ls[lr] = x->sizes[k];
        lst[0][lr] = x->strides[k];
        lst[1][lr++] = y->strides[k];
    }
    vkp_coalesce(&lr, ls, lst, 2);
    if (x->dtype == GFP_F32 && x->rank > 0 && y->dtype == GFP_F32)
        return softmax_fast(d, op, x, y, dim, lr, ls, lst, (uint64_t)(numel / len),
                            (uint64_t)len);
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)(numel / len));
    vkp_put(&p, (uint32_t)len);
    vkp_put(&p, (uint32_t)lr);
    vkp_put(&p, vkp_elem_offset(x));
    vkp_put(&p, vkp_elem_offset(y));
    vkp_put(&p, x->rank > 0 ? (uint32_t)x->strides[dim] : 0);
    vkp_put(&p, y->rank > 0 ? (uint32_t)y->strides[dim] : 0);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < lr ? (uint32_t)ls[k] : 1);
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 8; k++) vkp_put(&p, k < lr ? (uint32_t)lst[t][k] : 0);
    vkp_dispatch dp = {.shader = VKP_SH_SOFTMAX, .n_spec = 3, .params = p.w, .n_params = p.n,
                       .n_tensors = 2, .tensors = {y, x}};
    dp.spec[0] = wg_for(d, len, 3, 0);
    if (!dp.spec[0]) return too_long(name, len);
    dp.spec[1] = op;
    dp.spec[2] = (uint32_t)x->dtype;
    grid_2d(&dp, (uint64_t)(numel / len));
    return vkp_dispatch_run(d, &dp);
}

static gfp_status layer_norm(vkp_device *d, const gfp_tensor *const *in,
                             const gfp_tensor *const *out, const void *params) {
    const gfp_layer_norm_params *lp = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *y = out[0], *mean = out[1],
                     *rstd = out[2];
    int nr = lp->normalized_rank, orank = x->rank - nr;
    const int64_t *inner = x->sizes + orank;
    int64_t groups = 1, n = 1;
    for (int k = 0; k < orank; k++) groups *= x->sizes[k];
    for (int k = 0; k < nr; k++) n *= inner[k];
    if (groups == 0) return GFP_OK;
    int oR = orank, iR = nr;
    int64_t os[GFP_MAX_RANK], ost[4][GFP_MAX_RANK], is[GFP_MAX_RANK], ist[4][GFP_MAX_RANK];
    for (int k = 0; k < orank; k++) {
        os[k] = x->sizes[k];
        ost[0][k] = x->strides[k];
        ost[1][k] = y->strides[k];
        ost[2][k] = mean->strides[k];
        ost[3][k] = rstd->strides[k];
    }
    for (int k = 0; k < nr; k++) {
        is[k] = inner[k];
        ist[0][k] = x->strides[orank + k];
        ist[1][k] = y->strides[orank + k];
        ist[2][k] = w ? w->strides[k] : 0;
        ist[3][k] = b ? b->strides[k] : 0;
    }
    vkp_coalesce(&oR, os, ost, 4);
    vkp_coalesce(&iR, is, ist, 4);
    if (x->dtype == GFP_F32 && iR == 1) {
        /* f32 over one merged inner dim: shaders/layer_norm_fast_body.glsl. */
        uint32_t wg = vkp_tree_wg(d);
        bool vec = ist[0][0] == 1 && ist[1][0] == 1 && vkp_elem_offset(x) % 4 == 0 &&
                   vkp_elem_offset(y) % 4 == 0 && (!w || (ist[2][0] == 1 && vkp_elem_offset(w) % 4 == 0)) &&
                   (!b || (ist[3][0] == 1 && vkp_elem_offset(b) % 4 == 0));
        for (int k = 0; k < oR; k++) vec = vec && ost[0][k] % 4 == 0 && ost[1][k] % 4 == 0;
        uint64_t per = vec ? 4u * wg : wg, iters = ((uint64_t)n + per - 1) / per + 1;
        if (iters * 4 * 2 + 128 <= d->loop_budget) {
            vkp_words f = {.n = 0};
            uint32_t words[15] = {(uint32_t)groups, (uint32_t)n, (uint32_t)oR, vkp_elem_offset(x),
                                  vkp_elem_offset(y), (uint32_t)ist[0][0], (uint32_t)ist[1][0],
                                  w ? vkp_elem_offset(w) : 0, b ? vkp_elem_offset(b) : 0,
                                  (uint32_t)ist[2][0], (uint32_t)ist[3][0],
                                  (w ? 1u : 0u) | (b ? 2u : 0u), 0, vkp_elem_offset(mean),
                                  vkp_elem_offset(rstd)};
            for (int i = 0; i < 15; i++) vkp_put(&f, words[i]);
            float eps = (float)lp->eps;
            memcpy(&f.w[12], &eps, sizeof eps);
            for (int k = 0; k < 8; k++) vkp_put(&f, k < oR ? (uint32_t)os[k] : 1);
            for (int t = 0; t < 4; t++)
                for (int k = 0; k < 8; k++) vkp_put(&f, k < oR ? (uint32_t)ost[t][k] : 0);
            vkp_dispatch fd = {.shader = d->phys->has_subgroups ? VKP_SH_LAYER_NORM_FAST
                                                                : VKP_SH_LAYER_NORM_FAST_NOSG,
                               .n_spec = 2, .params = f.w, .n_params = f.n, .n_tensors = 6,
                               .tensors = {y, mean, rstd, x, w, b}};
            fd.spec[0] = wg;
            fd.spec[1] = vec ? 1u : 0u;
            grid_2d(&fd, (uint64_t)groups);
            return vkp_dispatch_run(d, &fd);
        }
    }
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)groups);
    vkp_put(&p, (uint32_t)n);
    vkp_put(&p, (uint32_t)oR);
    vkp_put(&p, (uint32_t)iR);
    vkp_put(&p, vkp_elem_offset(x));
    vkp_put(&p, vkp_elem_offset(y));
    vkp_put(&p, vkp_elem_offset(mean));
    vkp_put(&p, vkp_elem_offset(rstd));
    vkp_put(&p, w ? vkp_elem_offset(w) : 0);
    vkp_put(&p, b ? vkp_elem_offset(b) : 0);
    vkp_put(&p, (w ? 1u : 0u) | (b ? 2u : 0u));
    vkp_put_f32(&p, (float)lp->eps);
    vkp_put_f64(&p, lp->eps);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < oR ? (uint32_t)os[k] : 1);
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 8; k++) vkp_put(&p, k < oR ? (uint32_t)ost[t][k] : 0);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < iR ? (uint32_t)is[k] : 1);
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 8; k++) vkp_put(&p, k < iR ? (uint32_t)ist[t][k] : 0);
    vkp_dispatch dp = {.shader = VKP_SH_LAYER_NORM, .n_spec = 2, .params = p.w, .n_params = p.n,
                       .n_tensors = 6, .tensors = {y, mean, rstd, x, w, b}};
    dp.spec[0] = wg_for(d, n, 4, iR);
    if (!dp.spec[0]) return too_long("layer_norm", n);
    dp.spec[1] = (uint32_t)x->dtype;
    grid_2d(&dp, (uint64_t)groups);
    return vkp_dispatch_run(d, &dp);
}

static gfp_status batch_norm(vkp_device *d, const gfp_tensor *const *in,
                             const gfp_tensor *const *out, const void *params) {
    const gfp_batch_norm_params *bp = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *rm = in[3], *rv = in[4];
    const gfp_tensor *y = out[0], *sm = out[1], *si = out[2];
    const int64_t *chans = &x->sizes[1];
    const gfp_tensor *pc[6] = {w, b, rm, rv, sm, si};
    if (*chans == 0) return GFP_OK;
    int r = 0;
    int64_t s[GFP_MAX_RANK], st2[2][GFP_MAX_RANK], n = 1;
    for (int k = 0; k < x->rank; k++) {
        if (k == 1) continue;
        s[r] = x->sizes[k];
        st2[0][r] = x->strides[k];
        st2[1][r++] = y->strides[k];
        n *= x->sizes[k];
    }
    vkp_coalesce(&r, s, st2, 2);
    if (x->dtype == GFP_F32 && r <= 2) {
        /* f32, a channel as R0 runs of R1: shaders/batch_norm_fast_body.glsl. */
        int64_t r0 = r == 2 ? s[0] : 1, r1 = r == 0 ? 1 : s[r - 1];
        int64_t xs0 = r == 2 ? st2[0][0] : 0, ys0 = r == 2 ? st2[1][0] : 0;
        int64_t xs1 = r == 0 ? 1 : st2[0][r - 1], ys1 = r == 0 ? 1 : st2[1][r - 1];
        bool vec = xs1 == 1 && ys1 == 1 && vkp_elem_offset(x) % 4 == 0 &&
                   vkp_elem_offset(y) % 4 == 0 && x->strides[1] % 4 == 0 &&
                   y->strides[1] % 4 == 0 && xs0 % 4 == 0 && ys0 % 4 == 0;
        uint32_t most = d->phys->props.limits.maxComputeWorkGroupInvocations;
        uint32_t wg = 0;
        for (uint32_t t = vkp_tree_wg(d); t <= 256 && t <= most && !wg; t *= 2) {
            uint64_t per = vec ? 4u * t : t;
            uint64_t iters = (uint64_t)r0 * (((uint64_t)r1 + per - 1) / per + 1);
            if (iters * 4 * 2 + 128 <= d->loop_budget) wg = t;
        }
        if (wg) {
            vkp_words f = {.n = 0};
            uint32_t words[13] = {(uint32_t)*chans, (uint32_t)n, (uint32_t)r0, (uint32_t)r1,
                                  vkp_elem_offset(x), vkp_elem_offset(y),
                                  (uint32_t)x->strides[1], (uint32_t)y->strides[1],
                                  (uint32_t)xs0, (uint32_t)xs1, (uint32_t)ys0, (uint32_t)ys1,
                                  (w ? 1u : 0u) | (b ? 2u : 0u) | (rm ? 4u : 0u) |
                                      (rv ? 8u : 0u) | (bp->training ? 16u : 0u)};
            for (int i = 0; i < 13; i++) vkp_put(&f, words[i]);
            for (int i = 0; i < 6; i++) vkp_put(&f, pc[i] ? vkp_elem_offset(pc[i]) : 0);
            for (int i = 0; i < 6; i++) vkp_put(&f, pc[i] ? (uint32_t)pc[i]->strides[0] : 0);
            vkp_put_f32(&f, (float)bp->momentum);
            vkp_put_f32(&f, (float)bp->eps);
            vkp_dispatch fd = {.shader = d->phys->has_subgroups ? VKP_SH_BATCH_NORM_FAST
                                                                : VKP_SH_BATCH_NORM_FAST_NOSG,
                               .n_spec = 2, .params = f.w, .n_params = f.n, .n_tensors = 8,
                               .tensors = {y, sm, si, x, w, b, rm, rv}};
            fd.spec[0] = wg;
            fd.spec[1] = vec ? 1u : 0u;
            grid_2d(&fd, (uint64_t)*chans);
            return vkp_dispatch_run(d, &fd);
        }
    }
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)*chans);
    vkp_put(&p, (uint32_t)n);
    vkp_put(&p, (uint32_t)r);
    vkp_put(&p, vkp_elem_offset(x));
    vkp_put(&p, vkp_elem_offset(y));
    vkp_put(&p, (uint32_t)x->strides[1]);
    vkp_put(&p, (uint32_t)y->strides[1]);
    vkp_put(&p, (w ? 1u : 0u) | (b ? 2u : 0u) | (rm ? 4u : 0u) | (rv ? 8u : 0u) |
                    (bp->training ? 16u : 0u));
    for (int i = 0; i < 6; i++) vkp_put(&p, pc[i] ? vkp_elem_offset(pc[i]) : 0);
    for (int i = 0; i < 6; i++) vkp_put(&p, pc[i] ? (uint32_t)pc[i]->strides[0] : 0);
    vkp_put_f32(&p, (float)bp->momentum);
    vkp_put_f32(&p, (float)bp->eps);
    vkp_put_f64(&p, bp->momentum);
    vkp_put_f64(&p, bp->eps);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < r ? (uint32_t)s[k] : 1);
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 8; k++) vkp_put(&p, k < r ? (uint32_t)st2[t][k] : 0);
    vkp_dispatch dp = {.shader = VKP_SH_BATCH_NORM, .n_spec = 2, .params = p.w, .n_params = p.n,
                       .n_tensors = 8, .tensors = {y, sm, si, x, w, b, rm, rv}};
    dp.spec[0] = wg_for(d, n, 4, r);
    if (!dp.spec[0]) return too_long("batch_norm", n);
    dp.spec[1] = (uint32_t)x->dtype;
    grid_2d(&dp, (uint64_t)*chans);
    return vkp_dispatch_run(d, &dp);
}

gfp_status vkp_norm_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params) {
    gfp_status st = pk_check_norm(op, in, n_in, out, n_out, params, norm_dtypes(d, op));
    if (st != GFP_OK) return st;
    switch (op) {
    case GFP_OP_LAYER_NORM: return layer_norm(d, in, out, params);
    case GFP_OP_BATCH_NORM: return batch_norm(d, in, out, params);
    default: return softmax(d, op, in[0], out[0], params);
    }
}
