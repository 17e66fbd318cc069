/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_fft.c — FFT, complex to complex (C2C) over any listed dims whose
 * lengths are powers of two, any strides, forward or inverse, with a scale
 * (shaders/cx_fft.comp).
 *
 * x is copied into a contiguous work array (c128 where the device has
 * doubles and the array fits one allocation, else x's dtype), each listed
 * dim is transformed by log2(n) radix-2 Stockham passes ping-ponging between
 * two work arrays (a dispatch per pass, an invocation per butterfly, the
 * roots from a table computed once per length), the scale is applied on the
 * last pass, and the result is copied into y. R2C and C2R answer NONE in
 * query_op, and a launch with a length that is not a power of two is
 * refused as UNSUPPORTED: the core runs those on the fallback device. */
#include <string.h>

#include "vk_internal.h"

#define FFT_GROUP 64u

uint32_t vkp_fft_support(vkp_device *d, const gfp_op_query *q) {
    if (q->op != GFP_OP_FFT || q->n_inputs != 1 || q->n_outputs != 1 || !d->phys->has_fft)
        return GFP_SUPPORT_NONE;
    return pk_fft_dtypes_ok(GFP_FFT_C2C, q->input_dtypes[0], q->output_dtypes[0],
                            vkp_complex_dtypes(d))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* One dispatch of cx_fft.comp: mode 0 writes the table of n/2 roots into
 * dst, mode 1 is the pass Ns from src to dst. */
static gfp_status fft_dispatch(vkp_device *d, uint32_t mode, const gfp_tensor *dst,
                               const gfp_tensor *src, const gfp_tensor *table, uint64_t items,
                               int64_t n, int64_t ns, int64_t inner, bool inverse, double scale) {
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)items);
    vkp_put(&p, (uint32_t)n);
    vkp_put(&p, (uint32_t)ns);
    vkp_put(&p, (uint32_t)inner);
    vkp_put(&p, src ? vkp_elem_offset(src) : 0);
    vkp_put(&p, vkp_elem_offset(dst));
    vkp_put(&p, inverse ? 1u : 0u);
    vkp_put_f32(&p, (float)scale);
    vkp_put_f64(&p, scale);
    vkp_put(&p, table ? vkp_elem_offset(table) : 0);
    uint32_t lg = 0; /* log2(n / 2) */
    while (((int64_t)2 << lg) < n) lg++;
    vkp_put(&p, lg);
    vkp_dispatch dp = {.shader = VKP_SH_CX_FFT, .n_spec = 3, .params = p.w, .n_params = p.n,
                       .n_tensors = 3, .tensors = {dst, src, table}};
    dp.spec[0] = FFT_GROUP;
    dp.spec[1] = (uint32_t)dst->dtype;
    dp.spec[2] = mode;
    dp.groups[0] = vkp_groups(d, items, FFT_GROUP);
    return vkp_dispatch_run(d, &dp);
}

static bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

gfp_status vkp_fft_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params) {
    const gfp_fft_params *p = params;
    const gfp_tensor *x = in[0], *y = out[0];
    int dl;
    gfp_status st = pk_check_fft(p, x, y, vkp_complex_dtypes(d),
                                 d->has_f64 ? "" : " (this device has no shaderFloat64: c64 only)",
                                 &dl);
    if (st != GFP_OK) return st;
    if (!d->phys->has_fft)
        return pk_fail(GFP_ERR_UNSUPPORTED, "fft: off on this CPU-type Vulkan device, where the "
                       "fallback device is faster (GRAFT_VULKAN_FFT=1 turns it on)");
    if (p->kind != GFP_FFT_C2C)
        return pk_fail(GFP_ERR_UNSUPPORTED, "fft: the vulkan plugin transforms complex to "
                       "complex (C2C) only; R2C and C2R run on the fallback device");
    int64_t numel = pk_numel(x), passes = 0;
    for (uint32_t i = 0; i < p->n_dims; i++) {
        int64_t n = x->sizes[p->dims[i]];
        if (!power_of_two(n))
            return pk_fail(GFP_ERR_UNSUPPORTED, "fft: dim %d has length %lld; the vulkan plugin "
                           "transforms power-of-two lengths (others run on the fallback device)",
                           (int)p->dims[i], (long long)n);
        for (int64_t m = n; m > 1; m /= 2) passes++;
    }
    if (numel == 0) return GFP_OK;
    if (numel > (int64_t)UINT32_MAX)
        return pk_fail(GFP_ERR_UNSUPPORTED, "fft: %lld elements are more than a vulkan launch "
                       "indexes", (long long)numel);
    if (passes == 0 && p->scale != 1.0)
        return pk_fail(GFP_ERR_UNSUPPORTED, "fft: a scaled transform of length-1 dims only runs "
                       "on the fallback device");
    /* The work dtype: c128 where the device has it and the array fits one
     * allocation (as device_props reports it), else x's. */
    uint64_t max_bytes = d->max_range & ~(d->align - 1);
    int32_t wt = (vkp_complex_dtypes(d) & PK_DT(GFP_C128)) && (uint64_t)numel * 16u <= max_bytes
                     ? GFP_C128
                     : x->dtype;
    uint64_t es = pk_dtype_size(wt);
    gfp_buffer b0 = NULL, b1 = NULL, bt = NULL;
    void *host = NULL;
    int64_t longest = 1;
    for (uint32_t i = 0; i < p->n_dims; i++)
        if (x->sizes[p->dims[i]] > longest) longest = x->sizes[p->dims[i]];
    st = vkp_buffer_alloc(d, (uint64_t)numel * es, &b0, &host);
    if (st == GFP_OK && passes > 0) st = vkp_buffer_alloc(d, (uint64_t)numel * es, &b1, &host);
    if (st == GFP_OK && passes > 0)
        st = vkp_buffer_alloc(d, (uint64_t)(longest / 2) * es, &bt, &host);
    gfp_tensor w[2], table;
    if (st == GFP_OK) {
        w[0] = pk_dense_in(x, wt, b0);
        w[1] = pk_dense_in(x, wt, b1 ? b1 : b0);
        table = pk_dense_in(x, wt, bt ? bt : b0);
        const gfp_tensor *ins[1] = {x}, *outs[1] = {&w[0]};
        st = vkp_elementwise_launch(d, GFP_OP_COPY, ins, 1, outs, 1, NULL);
    }
    int cur = 0;
    int64_t done = 0, table_n = 0;
    for (uint32_t i = 0; i < p->n_dims && st == GFP_OK; i++) {
        int dd = p->dims[i];
        int64_t n = x->sizes[dd], inner = 1;
        if (n == 1) continue;
        for (int k = dd + 1; k < x->rank; k++) inner *= x->sizes[k];
        if (table_n != n) {
            st = fft_dispatch(d, 0, &table, NULL, NULL, (uint64_t)(n / 2), n, 1, 1, false, 1.0);
            table_n = n;
        }
        for (int64_t ns = 1; ns < n && st == GFP_OK; ns *= 2) {
            double scale = ++done == passes ? p->scale : 1.0;
            st = fft_dispatch(d, 1, &w[1 - cur], &w[cur], &table, (uint64_t)numel / 2, n, ns,
                              inner, p->inverse != 0, scale);
            cur = 1 - cur;
        }
    }
    if (st == GFP_OK) {
        const gfp_tensor *ins[1] = {&w[cur]}, *outs[1] = {y};
        st = vkp_elementwise_launch(d, GFP_OP_COPY, ins, 1, outs, 1, NULL);
    }
    /* Freed at once: later work is queued behind the dispatches reading them. */
    if (b0) vkp_buffer_free(d, b0);
    if (b1) vkp_buffer_free(d, b1);
    if (bt) vkp_buffer_free(d, bt);
    return st;
}
