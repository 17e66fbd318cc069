/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_ops_reduce.c — SUM MEAN PROD AMAX AMIN VAR LOGSUMEXP over a set of
 * dims, MAX_DIM / MIN_DIM along one (shaders/reduce.comp).
 *
 * The host splits the input's dims into kept ones (one output element each)
 * and reduced ones (the line an output reduces), merges contiguous dims of
 * each, and picks a mode: a workgroup per output for long lines (partial
 * results combined in shared memory), an invocation per output for short
 * ones. Float sums are compensated (Neumaier) in the input dtype; the
 * reference sums in double, so f32 results agree to a few ulp. Complex
 * dtypes are vk_complex.c's. */
#include <string.h>

#include "vk_internal.h"

/* The floats: f32, f64 (logsumexp through glsl_dmath.glsl's exp and log)
 * and f16 (computed in f32), as far as the device has them. */
static uint32_t floats(const vkp_device *d) {
    return (PK_DT_FLOAT | PK_DT(GFP_F16)) & vkp_device_dtypes(d);
}
static uint32_t reduce_dtypes(const vkp_device *d) {
    return floats(d) | ((PK_DT_INT | PK_DT(GFP_BOOL)) & vkp_device_dtypes(d));
}

uint32_t vkp_reduce_support(vkp_device *d, const gfp_op_query *q) {
    if (pk_is_complex(q->input_dtypes[0]) || pk_is_complex(q->output_dtypes[0]))
        return vkp_complex_reduce_support(d, q); /* vk_complex.c */
    int32_t indices = pk_reduce_by_dim(q->op) ? q->output_dtypes[1] : GFP_I64;
    return pk_reduce_dtypes_ok(q->op, q->input_dtypes[0], q->output_dtypes[0], indices,
                               reduce_dtypes(d), floats(d))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* Lines too long for one workgroup's loop budget (lavapipe ends an
 * invocation's loops after 65535 iterations): a line of len = C * L
 * elements with stride s is reduced as C chunks of L into a scratch buffer,
 * then over the C partials. Exact for the ops whose reduction of equal
 * chunks composes: sum of sums, product of products, max of maxima, mean of
 * equal-sized means, logsumexp of logsumexps. Kept dims (ks, strides kx in
 * x, ky in y) stay as they are. Returns GFP_ERR_UNSUPPORTED when len has no
 * divisor that fits (the caller then explains). */
static gfp_status reduce_in_two(vkp_device *d, uint32_t op, const gfp_tensor *x,
                                const gfp_tensor *y, int kr, const int64_t *ks,
                                const int64_t *kx, const int64_t *ky, int64_t len, int64_t s,
                                uint64_t passes) {
    bool composes = op == GFP_OP_SUM || op == GFP_OP_PROD || op == GFP_OP_AMAX ||
                    op == GFP_OP_AMIN || op == GFP_OP_MEAN || op == GFP_OP_LOGSUMEXP;
    if (!composes || kr + 2 > GFP_MAX_RANK) return GFP_ERR_UNSUPPORTED;
    int64_t chunks = 0;
    for (int64_t c = 2; c <= 65536 && c <= len; c++)
        if (len % c == 0 && vkp_pick_wg(d, (uint64_t)(len / c) * passes * 2u, 256, 256)) {
            chunks = c;
            break;
        }
    if (!chunks) return GFP_ERR_UNSUPPORTED;
    int64_t chunk = len / chunks, n_kept = 1;
    for (int k = 0; k < kr; k++) n_kept *= ks[k];
    gfp_buffer scratch = NULL;
    void *host_ptr = NULL;
    gfp_status st = vkp_buffer_alloc(d, (uint64_t)(n_kept * chunks) * pk_dtype_size(x->dtype),
                                     &scratch, &host_ptr);
    if (st != GFP_OK) return st;
    /* x as [kept..., C, L]; partials as [kept..., C, 1], dense */
    gfp_tensor xv = {.struct_size = sizeof xv, .dtype = x->dtype, .buffer = x->buffer,
                     .offset = x->offset, .rank = kr + 2};
    gfp_tensor pv = {.struct_size = sizeof pv, .dtype = x->dtype, .buffer = scratch,
                     .rank = kr + 2};
    int64_t dense = chunks;
    for (int k = kr - 1; k >= 0; k--) {
        pv.strides[k] = dense;
        dense *= ks[k];
    }
    for (int k = 0; k < kr; k++) {
        xv.sizes[k] = pv.sizes[k] = ks[k];
        xv.strides[k] = kx[k];
    }
    xv.sizes[kr] = pv.sizes[kr] = chunks;
    xv.strides[kr] = chunk * s;
    pv.strides[kr] = 1;
    xv.sizes[kr + 1] = chunk;
    xv.strides[kr + 1] = s;
    pv.sizes[kr + 1] = 1;
    pv.strides[kr + 1] = 0;
    gfp_reduce_params rp = {.struct_size = sizeof rp, .dims = 1u << (kr + 1)};
    const gfp_tensor *i1[1] = {&xv}, *o1[1] = {&pv};
    st = vkp_reduce_launch(d, op, i1, 1, o1, 1, &rp);
    if (st == GFP_OK) {
        /* partials as [kept..., C] into y as [kept..., 1] */
        gfp_tensor p2 = pv, yv = {.struct_size = sizeof yv, .dtype = y->dtype,
                                  .buffer = y->buffer, .offset = y->offset, .rank = kr + 1};
        p2.rank = kr + 1;
        for (int k = 0; k < kr; k++) {
            yv.sizes[k] = ks[k];
            yv.strides[k] = ky[k];
        }
        yv.sizes[kr] = 1;
        yv.strides[kr] = 0;
        rp.dims = 1u << kr;
        const gfp_tensor *i2[1] = {&p2}, *o2[1] = {&yv};
        st = vkp_reduce_launch(d, op, i2, 1, o2, 1, &rp);
    }
    /* Freed at once: later work is queued behind the dispatches reading it. */
    vkp_buffer_free(d, scratch);
    return st;
}

/* The tree reduction (shaders/reduce_fast_body.glsl): f32 SUM MEAN AMAX
 * AMIN VAR LOGSUMEXP over lines of one merged dim, nonempty. A workgroup
 * per line when there are enough lines to fill the device and each fits one
 * workgroup's loop budget; otherwise each line is cut into chunks, a
 * workgroup per chunk writes a record (partial sum; extreme and NaN flag;
 * max and sum of exponentials; mean, m2 and count) to a scratch buffer, and
 * a second dispatch combines each line's records. Invocations read vec4s
 * when the lines are contiguous and start at multiples of 4 elements, and
 * combine through subgroup arithmetic where the device has it. */
/* Lines shorter than this, when there are many, go to reduce.comp's
 * invocation-per-line mode. */
#define FAST_MIN_LEN 64

static bool fast_op(uint32_t op) {
    return op == GFP_OP_SUM || op == GFP_OP_MEAN || op == GFP_OP_AMAX || op == GFP_OP_AMIN ||
           op == GFP_OP_VAR || op == GFP_OP_LOGSUMEXP;
}

uint32_t vkp_tree_wg(const vkp_device *d) {
    /* On lavapipe one subgroup (8 lanes: one SIMD vector) per workgroup:
     * softmax 4096x1024 took 136 ms with 64 invocations, 280 with 32, 68
     * with 16, 48 with 8; sum of 16M 156 ms with 64, 126 with 8 (under one
     * load). GPUs: 256. */
    bool cpu_like = d->loop_budget != UINT32_MAX;
    uint32_t wg = 256;
    if (cpu_like) wg = d->phys->has_subgroups && d->phys->subgroup_size >= 4 &&
                               d->phys->subgroup_size <= 64
                           ? d->phys->subgroup_size
                           : 8;
    uint32_t most = d->phys->props.limits.maxComputeWorkGroupInvocations;
    if (d->phys->props.limits.maxComputeWorkGroupSize[0] < most)
        most = d->phys->props.limits.maxComputeWorkGroupSize[0];
    while (wg > most) wg /= 2;
    return wg;
}

static gfp_status reduce_fast(vkp_device *d, uint32_t op, const gfp_tensor *x,
                              const gfp_tensor *y, int kr, const int64_t *ks,
                              int64_t (*kst)[GFP_MAX_RANK], uint64_t lines, uint64_t len,
                              int64_t stride, double correction) {
    bool cpu_like = d->loop_budget != UINT32_MAX;
    uint32_t wg = vkp_tree_wg(d);
    bool vec = stride == 1 && vkp_elem_offset(x) % 4 == 0;
    for (int k = 0; k < kr; k++) vec = vec && kst[0][k] % 4 == 0;
    uint64_t per_iter = vec ? 4 : 1;
    uint64_t passes = op == GFP_OP_VAR ? 3 : op == GFP_OP_LOGSUMEXP ? 2 : 1;
    /* Loop iterations per invocation, counted two each as lavapipe needs
     * (see vkp_reduce_launch), with room for the tail, the kept dims and
     * the combine. */
    uint64_t iters = d->loop_budget == UINT32_MAX ? UINT32_MAX
                                                  : (d->loop_budget - 128u) / (2u * passes) - 2u;
    uint64_t max_chunk = iters * per_iter * wg;
    /* Enough workgroups to fill the device, each with enough to do. On
     * lavapipe short workgroups win: a sum of 16M f32 took 300 ms as 8 or 64
     * chunks, 265 ms as 256 and 153 ms as 4096 (as fast as 4096 lines of
     * 4096), under one load. */
    uint64_t target = cpu_like ? 4096 : 1024, min_chunk = (uint64_t)wg * per_iter * 16;
    uint64_t chunks = 1;
    if (lines < target && len / min_chunk > 1) {
        chunks = target / lines;
        if (chunks > len / min_chunk) chunks = len / min_chunk;
        if (chunks < 1) chunks = 1;
    }
    if ((len + chunks - 1) / chunks > max_chunk) chunks = (len + max_chunk - 1) / max_chunk;
    uint64_t chunk = (len + chunks - 1) / chunks;
    chunk = (chunk + 3) & ~(uint64_t)3; /* chunks start at multiples of 4 elements */
    chunks = (len + chunk - 1) / chunk;
    uint64_t groups = lines * chunks;
    uint64_t gx = groups < 65535 ? groups : 65535, gy = (groups + gx - 1) / gx;
    if (groups > UINT32_MAX || gy > d->max_groups[1] || gx > d->max_groups[0] ||
        (chunks > 1 && chunks / wg + 64 > iters))
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %llu lines of %llu elements are more than this "
                        "vulkan device reduces in one launch", pk_op_name(op),
                        (unsigned long long)lines, (unsigned long long)len);
    gfp_buffer scratch = NULL;
    gfp_tensor sv = {.struct_size = sizeof sv, .dtype = GFP_F32, .rank = 1,
                     .sizes = {(int64_t)(3 * groups)}, .strides = {1}};
    if (chunks > 1) {
        void *host_ptr = NULL;
        gfp_status st = vkp_buffer_alloc(d, 3 * groups * sizeof(float), &scratch, &host_ptr);
        if (st != GFP_OK) return st;
        sv.buffer = scratch;
    }
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)lines);
    vkp_put(&p, (uint32_t)len);
    vkp_put(&p, (uint32_t)kr);
    vkp_put(&p, vkp_elem_offset(x));
    vkp_put(&p, vkp_elem_offset(y));
    vkp_put(&p, (uint32_t)stride);
    vkp_put(&p, (uint32_t)chunk);
    vkp_put(&p, (uint32_t)chunks);
    vkp_put_f32(&p, (float)correction);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < kr ? (uint32_t)ks[k] : 1);
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 8; k++) vkp_put(&p, k < kr ? (uint32_t)kst[t][k] : 0);
    vkp_put(&p, scratch ? vkp_elem_offset(&sv) : 0);
    vkp_dispatch dp = {.shader = d->phys->has_subgroups ? VKP_SH_REDUCE_FAST
                                                        : VKP_SH_REDUCE_FAST_NOSG,
                       .n_spec = 4, .params = p.w, .n_params = p.n, .n_tensors = 3,
                       .tensors = {y, x, scratch ? &sv : y}};
    dp.spec[0] = wg;
    dp.spec[1] = op;
    dp.spec[2] = chunks > 1 ? 1u : 0u;
    dp.spec[3] = vec ? 1u : 0u;
    dp.groups[0] = (uint32_t)gx;
    dp.groups[1] = (uint32_t)gy;
    gfp_status st = vkp_dispatch_run(d, &dp);
    if (st == GFP_OK && chunks > 1) {
        dp.spec[2] = 2;
        gx = lines < 65535 ? lines : 65535;
        dp.groups[0] = (uint32_t)gx;
        dp.groups[1] = (uint32_t)((lines + gx - 1) / gx);
        st = vkp_dispatch_run(d, &dp);
    }
    /* Freed at once: later work is queued behind the dispatches reading it. */
    if (scratch) vkp_buffer_free(d, scratch);
    return st;
}

gfp_status vkp_reduce_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                             uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                             const void *params) {
    const char *name = pk_op_name(op);
    const gfp_reduce_params *rp = params;
    const gfp_tensor *x = in[0], *y = out[0], *idx = pk_reduce_by_dim(op) ? out[1] : NULL;
    if (pk_is_complex(x->dtype) || pk_is_complex(y->dtype))
        return vkp_complex_reduce_launch(d, op, x, y, params); /* vk_complex.c */
    gfp_status st = pk_check_reduce(op, params, x, y, idx, reduce_dtypes(d), floats(d));
    if (st != GFP_OK) return st;
    uint32_t dims = rp->dims;
    int kr = 0, rr = 0;
    int64_t ks[GFP_MAX_RANK], kst[3][GFP_MAX_RANK], rs[GFP_MAX_RANK], rst[1][GFP_MAX_RANK];
    int64_t len = 1;
    for (int k = 0; k < x->rank; k++) {
        if ((dims >> k) & 1u) {
            rs[rr] = x->sizes[k];
            rst[0][rr++] = x->strides[k];
            len *= x->sizes[k];
        } else {
            ks[kr] = x->sizes[k];
            kst[0][kr] = x->strides[k];
            kst[1][kr] = y->strides[k];
            kst[2][kr++] = idx ? idx->strides[k] : 0;
        }
    }
    int64_t n_out_el = pk_numel(y);
    if (n_out_el == 0) return GFP_OK;
    if (len > (int64_t)UINT32_MAX)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: lines of %lld elements are too long", name,
                        (long long)len);
    vkp_coalesce(&kr, ks, kst, 3);
    vkp_coalesce(&rr, rs, rst, 1);
    if (rr == 0) { /* reducing nothing but size-1 dims: a line of one element */
        rr = 1;
        rs[0] = 1;
        rst[0][0] = 0;
    }
    if (x->dtype == GFP_F32 && rr == 1 && len > 0 && fast_op(op) &&
        (len >= FAST_MIN_LEN || n_out_el < 64))
        return reduce_fast(d, op, x, y, kr, ks, kst, (uint64_t)n_out_el, (uint64_t)len,
                           rst[0][0], rp->correction);
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)n_out_el);
    vkp_put(&p, (uint32_t)len);
    vkp_put(&p, (uint32_t)kr);
    vkp_put(&p, (uint32_t)rr);
    vkp_put(&p, vkp_elem_offset(x));
    vkp_put(&p, vkp_elem_offset(y));
    vkp_put(&p, idx ? vkp_elem_offset(idx) : 0);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < kr ? (uint32_t)ks[k] : 1);
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 8; k++) vkp_put(&p, k < kr ? (uint32_t)kst[t][k] : 0);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < rr ? (uint32_t)rs[k] : 1);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < rr ? (uint32_t)rst[0][k] : 0);
    vkp_put_f64(&p, rp->correction);
    vkp_put_f32(&p, (float)rp->correction);

    bool group_mode = len >= 256 || n_out_el < 64;
    /* Loop iterations of a line: one per element and pass, more when the
     * reduced dims do not merge into one (the offset walks them). */
    uint64_t passes = op == GFP_OP_VAR || op == GFP_OP_LOGSUMEXP ? 2 : 1;
    /* Measured on lavapipe: a line reduced over one merged dim came out
     * wrong (silently) from 32,767 iterations per invocation on, half the
     * budget: count two per element there too. */
    uint64_t work = (uint64_t)len * passes * (rr == 1 ? 2u : (uint64_t)rr + 1);
    /* 256 at most: the shader's shared arrays for every dtype must fit 32 KiB. */
    uint32_t wg = vkp_pick_wg(d, work, len >= 1024 ? 256 : 64, 256);
    if (group_mode && wg == 0 && rr == 1 && !idx) {
        gfp_status st2 = reduce_in_two(d, op, x, y, kr, ks, kst[0], kst[1], len, rst[0][0],
                                       passes);
        if (st2 != GFP_ERR_UNSUPPORTED) return st2;
    }
    if (group_mode && wg == 0)
        return pk_fail(GFP_ERR_UNSUPPORTED,
                        "%s: lines of %lld elements are longer than this vulkan device reduces "
                        "in one workgroup (its per-invocation loop limit); reduce in steps "
                        "(e.g. over a reshaped view, one dim at a time)",
                        name, (long long)len);
    vkp_dispatch dp = {.shader = VKP_SH_REDUCE, .n_spec = 4, .params = p.w, .n_params = p.n,
                       .n_tensors = 3, .tensors = {y, x, idx ? idx : y}};
    dp.spec[0] = group_mode ? wg : 64;
    dp.spec[1] = op;
    dp.spec[2] = (uint32_t)x->dtype;
    dp.spec[3] = group_mode ? 0u : 1u;
    if (group_mode) {
        uint64_t gx = (uint64_t)n_out_el < 65535 ? (uint64_t)n_out_el : 65535;
        dp.groups[0] = (uint32_t)gx;
        dp.groups[1] = (uint32_t)(((uint64_t)n_out_el + gx - 1) / gx);
    } else {
        dp.groups[0] = vkp_groups(d, (uint64_t)n_out_el, 64);
    }
    return vkp_dispatch_run(d, &dp);
}
