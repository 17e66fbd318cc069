/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_compat.c — oneDNN 2.x: op descriptors, then primitive descriptors.
 * See onednn_compat.h for why this file exists. */
#include <stdio.h>
#include <string.h>

#include "onednn_compat.h"

#if DNNL_VERSION_MAJOR != 2
#error "onednn_compat.c is written for oneDNN 2.x; port this file (and odc_md) to the new API"
#endif

/* dnnl_dims_t holds DNNL_MAX_NDIMS entries; graft never passes more than 8. */
static void to_dims(dnnl_dims_t out, int n, const int64_t *in) {
    memset(out, 0, sizeof(dnnl_dims_t));
    for (int i = 0; i < n && i < DNNL_MAX_NDIMS; i++) out[i] = (dnnl_dim_t)in[i];
}

dnnl_status_t odc_md_strided(odc_md *md, int ndims, const int64_t *dims, const int64_t *strides,
                             dnnl_data_type_t dt) {
    dnnl_dims_t d, s;
    to_dims(d, ndims, dims);
    to_dims(s, ndims, strides);
    return dnnl_memory_desc_init_by_strides(&md->md, ndims, d, dt, s);
}

dnnl_status_t odc_md_any(odc_md *md, int ndims, const int64_t *dims, dnnl_data_type_t dt) {
    dnnl_dims_t d;
    to_dims(d, ndims, dims);
    return dnnl_memory_desc_init_by_tag(&md->md, ndims, d, dt, dnnl_format_tag_any);
}

void odc_md_zero(odc_md *md) { memset(md, 0, sizeof *md); }
void odc_md_release(odc_md *md) { (void)md; /* a plain struct in 2.x */ }
size_t odc_md_bytes(const odc_md *md) { return dnnl_memory_desc_get_size(&md->md); }
bool odc_md_equal(const odc_md *a, const odc_md *b) {
    return dnnl_memory_desc_equal(&a->md, &b->md) != 0;
}

bool odc_md_is_nchw16c(const odc_md *md, const int64_t *dims, dnnl_data_type_t dt) {
    dnnl_dims_t d;
    to_dims(d, 4, dims);
    dnnl_memory_desc_t want;
    if (dnnl_memory_desc_init_by_tag(&want, 4, d, dt, dnnl_aBcd16b) != dnnl_success) return false;
    return dnnl_memory_desc_equal(&want, &md->md) != 0;
}

/* An absent descriptor is passed as NULL (2.x also accepts a zero md). */
static const dnnl_memory_desc_t *opt(const odc_md *md) {
    return md && md->md.ndims > 0 ? &md->md : NULL;
}

bool odc_pd_arg_md(const_dnnl_primitive_desc_t pd, int arg, odc_md *out) {
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    if (!md || md->ndims == 0) return false;
    out->md = *md;
    return true;
}

size_t odc_pd_scratchpad_bytes(const_dnnl_primitive_desc_t pd) {
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return md ? dnnl_memory_desc_get_size(md) : 0;
}

const char *odc_pd_impl(const_dnnl_primitive_desc_t pd) {
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
        return "unknown";
    return impl;
}

bool odc_pd_is_slow(const_dnnl_primitive_desc_t pd) {
    return strncmp(odc_pd_impl(pd), "ref", 3) == 0;
}

dnnl_status_t odc_memory(dnnl_memory_t *mem, const odc_md *md, dnnl_engine_t engine, void *ptr) {
    return dnnl_memory_create(mem, &md->md, engine, ptr);
}

dnnl_status_t odc_memory_set_ptr(dnnl_memory_t mem, void *ptr, dnnl_stream_t stream) {
    return dnnl_memory_set_data_handle_v2(mem, ptr, stream);
}

bool odc_memory_has_md(const_dnnl_memory_t mem, const odc_md *md) {
    const dnnl_memory_desc_t *have = NULL;
    return dnnl_memory_get_memory_desc(mem, &have) == dnnl_success && have &&
           dnnl_memory_desc_equal(have, &md->md) != 0;
}

dnnl_status_t odc_attr_default(dnnl_primitive_attr_t *attr) {
    dnnl_status_t st = dnnl_primitive_attr_create(attr);
    if (st != dnnl_success) return st;
    st = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    if (st != dnnl_success) dnnl_primitive_attr_destroy(*attr);
    return st;
}

/* Op descriptor -> primitive descriptor with the default attributes. */
static dnnl_status_t make_pd(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op,
                             dnnl_engine_t eng, const_dnnl_primitive_desc_t hint) {
    dnnl_primitive_attr_t attr;
    dnnl_status_t st = odc_attr_default(&attr);
    if (st != dnnl_success) return st;
    st = dnnl_primitive_desc_create(pd, op, attr, eng, hint);
    dnnl_primitive_attr_destroy(attr);
    return st;
}

dnnl_status_t odc_matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, const odc_md *src,
                            const odc_md *weights, const odc_md *bias, const odc_md *dst) {
    dnnl_matmul_desc_t d;
    dnnl_status_t st = dnnl_matmul_desc_init(&d, &src->md, &weights->md, opt(bias), &dst->md);
    return st == dnnl_success ? make_pd(pd, &d, eng, NULL) : st;
}

/* oneDNN counts dilation from 0 (0 = dense); graft, like PyTorch, from 1. */
static void conv_dims(const odc_conv_geom *g, dnnl_dims_t s, dnnl_dims_t d, dnnl_dims_t l,
                      dnnl_dims_t r) {
    int64_t dil[2] = {g->dilation[0] - 1, g->dilation[1] - 1};
    to_dims(s, 2, g->stride);
    to_dims(d, 2, dil);
    to_dims(l, 2, g->pad_l);
    to_dims(r, 2, g->pad_r);
}

dnnl_status_t odc_conv_fwd_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, bool training,
                              const odc_md *src, const odc_md *weights, const odc_md *bias,
                              const odc_md *dst, const odc_conv_geom *g) {
    dnnl_dims_t s, d, l, r;
    conv_dims(g, s, d, l, r);
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(
        &cd, training ? dnnl_forward_training : dnnl_forward_inference, dnnl_convolution_direct,
        &src->md, &weights->md, opt(bias), &dst->md, s, d, l, r);
    return st == dnnl_success ? make_pd(pd, &cd, eng, NULL) : st;
}

dnnl_status_t odc_conv_bwd_data_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
                                   const odc_md *diff_src, const odc_md *weights,
                                   const odc_md *diff_dst, const odc_conv_geom *g,
                                   const_dnnl_primitive_desc_t hint) {
    dnnl_dims_t s, d, l, r;
    conv_dims(g, s, d, l, r);
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_dilated_convolution_backward_data_desc_init(
        &cd, dnnl_convolution_direct, &diff_src->md, &weights->md, &diff_dst->md, s, d, l, r);
    return st == dnnl_success ? make_pd(pd, &cd, eng, hint) : st;
}

dnnl_status_t odc_conv_bwd_weights_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
                                      const odc_md *src, const odc_md *diff_weights,
                                      const odc_md *diff_bias, const odc_md *diff_dst,
                                      const odc_conv_geom *g, const_dnnl_primitive_desc_t hint) {
    dnnl_dims_t s, d, l, r;
    conv_dims(g, s, d, l, r);
    dnnl_convolution_desc_t cd;
    dnnl_status_t st = dnnl_dilated_convolution_backward_weights_desc_init(
        &cd, dnnl_convolution_direct, &src->md, &diff_weights->md, opt(diff_bias), &diff_dst->md,
        s, d, l, r);
    return st == dnnl_success ? make_pd(pd, &cd, eng, hint) : st;
}

static void pool_dims(const odc_pool_geom *g, dnnl_dims_t k, dnnl_dims_t s, dnnl_dims_t d,
                      dnnl_dims_t l, dnnl_dims_t r) {
    const int64_t zero[2] = {0, 0};
    to_dims(k, 2, g->kernel);
    to_dims(s, 2, g->stride);
    to_dims(d, 2, zero);
    to_dims(l, 2, g->pad_l);
    to_dims(r, 2, g->pad_r);
}

static dnnl_alg_kind_t avg_alg(const odc_pool_geom *g) {
    return g->include_padding ? dnnl_pooling_avg_include_padding
                              : dnnl_pooling_avg_exclude_padding;
}

dnnl_status_t odc_avg_pool_fwd_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, const odc_md *src,
                                  const odc_md *dst, const odc_pool_geom *g) {
    dnnl_dims_t k, s, d, l, r;
    pool_dims(g, k, s, d, l, r);
    dnnl_pooling_v2_desc_t pdesc;
    dnnl_status_t st = dnnl_pooling_v2_forward_desc_init(
        &pdesc, dnnl_forward_training, avg_alg(g), &src->md, &dst->md, s, k, d, l, r);
    return st == dnnl_success ? make_pd(pd, &pdesc, eng, NULL) : st;
}

dnnl_status_t odc_avg_pool_bwd_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
                                  const odc_md *diff_src, const odc_md *diff_dst,
                                  const odc_pool_geom *g, const_dnnl_primitive_desc_t hint) {
    dnnl_dims_t k, s, d, l, r;
    pool_dims(g, k, s, d, l, r);
    dnnl_pooling_v2_desc_t pdesc;
    dnnl_status_t st = dnnl_pooling_v2_backward_desc_init(&pdesc, avg_alg(g), &diff_src->md,
                                                          &diff_dst->md, s, k, d, l, r);
    return st == dnnl_success ? make_pd(pd, &pdesc, eng, hint) : st;
}

dnnl_status_t odc_eltwise_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, dnnl_alg_kind_t alg,
                             const odc_md *data, float alpha, float beta) {
    dnnl_eltwise_desc_t d;
    dnnl_status_t st =
        dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &data->md, alpha, beta);
    return st == dnnl_success ? make_pd(pd, &d, eng, NULL) : st;
}

dnnl_status_t odc_reduction_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, dnnl_alg_kind_t alg,
                               const odc_md *src, const odc_md *dst) {
    dnnl_reduction_desc_t d;
    dnnl_status_t st = dnnl_reduction_desc_init(&d, alg, &src->md, &dst->md, 0.f, 0.f);
    return st == dnnl_success ? make_pd(pd, &d, eng, NULL) : st;
}

static unsigned norm_flags(unsigned flags) {
    unsigned f = 0;
    if (flags & ODC_NORM_GLOBAL_STATS) f |= dnnl_use_global_stats;
    if (flags & ODC_NORM_SCALE) f |= dnnl_use_scale;
    if (flags & ODC_NORM_SHIFT) f |= dnnl_use_shift;
    return f;
}

dnnl_status_t odc_layer_norm_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, const odc_md *data,
                                const odc_md *stat, float eps, unsigned flags) {
    dnnl_layer_normalization_desc_t d;
    dnnl_status_t st = dnnl_layer_normalization_forward_desc_init(
        &d, dnnl_forward_training, &data->md, &stat->md, eps, norm_flags(flags));
    return st == dnnl_success ? make_pd(pd, &d, eng, NULL) : st;
}

dnnl_status_t odc_reorder_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, const odc_md *src,
                             const odc_md *dst) {
    dnnl_primitive_attr_t attr;
    dnnl_status_t st = odc_attr_default(&attr);
    if (st != dnnl_success) return st;
    st = dnnl_reorder_primitive_desc_create(pd, &src->md, eng, &dst->md, eng, attr);
    dnnl_primitive_attr_destroy(attr);
    return st;
}

static bool isa_has(dnnl_cpu_isa_t isa, dnnl_cpu_isa_t want) {
    return ((unsigned)isa & (unsigned)want) == (unsigned)want;
}

bool odc_cpu_has_bf16(void) {
    return isa_has(dnnl_get_effective_cpu_isa(), dnnl_cpu_isa_avx512_core_bf16);
}

static const char *isa_name(dnnl_cpu_isa_t isa) {
    if (isa_has(isa, dnnl_cpu_isa_avx512_core_amx)) return "avx512_core_amx";
    if (isa_has(isa, dnnl_cpu_isa_avx512_core_bf16)) return "avx512_core_bf16";
    if (isa_has(isa, dnnl_cpu_isa_avx512_core_vnni)) return "avx512_core_vnni";
    if (isa_has(isa, dnnl_cpu_isa_avx512_core)) return "avx512_core";
    if (isa_has(isa, dnnl_cpu_isa_avx2)) return "avx2";
    if (isa_has(isa, dnnl_cpu_isa_avx)) return "avx";
    if (isa_has(isa, dnnl_cpu_isa_sse41)) return "sse41";
    return "baseline";
}

void odc_version_text(char *buf, size_t len) {
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, len, "oneDNN %d.%d.%d (%s)", v ? v->major : DNNL_VERSION_MAJOR,
             v ? v->minor : DNNL_VERSION_MINOR, v ? v->patch : DNNL_VERSION_PATCH,
             isa_name(dnnl_get_effective_cpu_isa()));
}
