/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_ops_random.c — RANDOM: Philox4x32-10 on the device, the same numbers as
 * the reference for the same seed and offset (shaders/random.comp). The
 * shader computes uniform and normal values in double, as the ABI defines,
 * so it needs shaderFloat64. Bernoulli compares the 24-bit draw with an
 * integer threshold computed here exactly: u24 < p  <=>  (w >> 8) < ceil(p 2^24). */
#include <math.h>

#include "vk_internal.h"

uint32_t vkp_random_support(vkp_device *d, const gfp_op_query *q) {
    if (!d->has_f64) return GFP_SUPPORT_NONE;
    return vkp_dtype_ok(d, q->output_dtypes[0]) && q->output_dtypes[0] != GFP_F16 &&
                   !pk_is_complex(q->output_dtypes[0])
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

gfp_status vkp_random_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                             uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                             const void *params) {
    const gfp_random_params *rp = params;
    const gfp_tensor *y = out[0];
    if (y->dtype == GFP_F16)
        return pk_fail(GFP_ERR_UNSUPPORTED, "random: the vulkan plugin draws f32 and f64 numbers, "
                        "not f16: draw f32 and convert");
    gfp_status st = pk_check_random(params, y, PK_DT_FLOAT);
    if (st != GFP_OK) return st;
    if (!d->has_f64)
        return pk_fail(GFP_ERR_UNSUPPORTED, "random: needs 64-bit floats (shaderFloat64) on the "
                        "vulkan device, to give the reference's numbers");
    int64_t n = pk_numel(y);
    if (n == 0) return GFP_OK;
    if (n > (int64_t)UINT32_MAX)
        return pk_fail(GFP_ERR_UNSUPPORTED, "random: %lld elements are too many for one launch",
                        (long long)n);
    double scaled = rp->a * 16777216.0; /* exact: a power of two */
    uint32_t threshold = !(rp->a > 0) ? 0 : rp->a >= 1 ? 16777216u : (uint32_t)ceil(scaled);
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)n);
    vkp_put(&p, (uint32_t)y->rank);
    vkp_put(&p, vkp_elem_offset(y));
    for (int k = 0; k < 8; k++) vkp_put(&p, k < y->rank ? (uint32_t)y->sizes[k] : 1);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < y->rank ? (uint32_t)y->strides[k] : 0);
    vkp_put_u64(&p, rp->seed);
    vkp_put_u64(&p, rp->offset);
    vkp_put_f64(&p, rp->a);
    vkp_put_f64(&p, rp->b);
    vkp_put(&p, threshold);
    vkp_dispatch dp = {.shader = VKP_SH_RANDOM, .n_spec = 3, .params = p.w, .n_params = p.n,
                       .n_tensors = 1, .tensors = {y}};
    dp.spec[0] = 64;
    dp.spec[1] = (uint32_t)y->dtype;
    dp.spec[2] = rp->kind;
    dp.groups[0] = vkp_groups(d, (uint64_t)n, 64);
    return vkp_dispatch_run(d, &dp);
}
