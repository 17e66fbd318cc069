/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_compat.h — the only place where the oneDNN API version shows.
 *
 * oneDNN 2.x describes a primitive in two steps (an op descriptor, then a
 * primitive descriptor) and keeps memory descriptors as plain structs; 3.x
 * creates primitive descriptors directly and makes memory descriptors opaque
 * handles that must be destroyed. Everything else in the plugin goes through
 * the functions below, which take graft's own geometry (int64 dims and strides
 * in elements) and return a primitive descriptor, so that a move to 3.x only
 * rewrites onednn_compat.c and the odc_md type here.
 *
 * Every function returns a dnnl_status_t (dnnl_success = 0). A primitive
 * descriptor returned through *pd belongs to the caller (dnnl_primitive_desc_destroy). */
#ifndef GRAFT_ONEDNN_COMPAT_H
#define GRAFT_ONEDNN_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dnnl.h>

/* A memory descriptor. 2.x: the struct itself (nothing to free). */
typedef struct odc_md {
    dnnl_memory_desc_t md;
} odc_md;

/* dims[0, ndims) with strides in elements (any non-negative layout the
 * library accepts; callers turn stride-0 broadcast dims into size 1 first). */
dnnl_status_t odc_md_strided(odc_md *md, int ndims, const int64_t *dims, const int64_t *strides,
                             dnnl_data_type_t dt);
/* "Let the primitive choose the layout" (format any). */
dnnl_status_t odc_md_any(odc_md *md, int ndims, const int64_t *dims, dnnl_data_type_t dt);
/* A zero descriptor: "absent" (no bias, no statistics). */
void odc_md_zero(odc_md *md);
void odc_md_release(odc_md *md);
size_t odc_md_bytes(const odc_md *md);
bool odc_md_equal(const odc_md *a, const odc_md *b);
/* Whether md is the dense 4-D layout nChw16c (oneDNN's aBcd16b: blocks of 16
 * channels innermost) of dims and dt. */
bool odc_md_is_nchw16c(const odc_md *md, const int64_t *dims, dnnl_data_type_t dt);
/* The descriptor a primitive descriptor chose for one of its arguments
 * (DNNL_ARG_SRC ...). Returns false when the primitive has no such argument. */
bool odc_pd_arg_md(const_dnnl_primitive_desc_t pd, int arg, odc_md *out);
/* Bytes of user scratchpad the primitive needs. */
size_t odc_pd_scratchpad_bytes(const_dnnl_primitive_desc_t pd);
/* The implementation's name ("brg:avx512_core", "ref:any"). */
const char *odc_pd_impl(const_dnnl_primitive_desc_t pd);
/* True for oneDNN's slow reference implementations, which graft replaces by
 * packing operands into a layout a fast implementation takes. */
bool odc_pd_is_slow(const_dnnl_primitive_desc_t pd);

/* A memory object over host memory described by md. */
dnnl_status_t odc_memory(dnnl_memory_t *mem, const odc_md *md, dnnl_engine_t engine, void *ptr);
/* Points an existing memory object at ptr, as creating it with ptr would
 * (a padded layout's padding is zeroed on stream). */
dnnl_status_t odc_memory_set_ptr(dnnl_memory_t mem, void *ptr, dnnl_stream_t stream);
/* True when mem was created with a descriptor equal to md. */
bool odc_memory_has_md(const_dnnl_memory_t mem, const odc_md *md);

/* Attributes every graft primitive uses: a user-provided scratchpad, so one
 * primitive can run on several threads at once, each with its own. */
dnnl_status_t odc_attr_default(dnnl_primitive_attr_t *attr);

/* ---- primitive descriptors. An absent optional md is odc_md_zero'ed. */
dnnl_status_t odc_matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, const odc_md *src,
                            const odc_md *weights, const odc_md *bias, const odc_md *dst);

/* 2-D convolution. stride, dilation (graft's: 1 = dense), pad_l, pad_r: [2]. */
typedef struct odc_conv_geom {
    int64_t stride[2], dilation[2], pad_l[2], pad_r[2];
} odc_conv_geom;
dnnl_status_t odc_conv_fwd_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, bool training,
                              const odc_md *src, const odc_md *weights, const odc_md *bias,
                              const odc_md *dst, const odc_conv_geom *g);
dnnl_status_t odc_conv_bwd_data_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
                                   const odc_md *diff_src, const odc_md *weights,
                                   const odc_md *diff_dst, const odc_conv_geom *g,
                                   const_dnnl_primitive_desc_t hint);
dnnl_status_t odc_conv_bwd_weights_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
                                      const odc_md *src, const odc_md *diff_weights,
                                      const odc_md *diff_bias, const odc_md *diff_dst,
                                      const odc_conv_geom *g, const_dnnl_primitive_desc_t hint);

/* 2-D pooling: kernel, stride, pad_l, pad_r: [2]; average only here. */
typedef struct odc_pool_geom {
    int64_t kernel[2], stride[2], pad_l[2], pad_r[2];
    bool include_padding;
} odc_pool_geom;
dnnl_status_t odc_avg_pool_fwd_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, const odc_md *src,
                                  const odc_md *dst, const odc_pool_geom *g);
dnnl_status_t odc_avg_pool_bwd_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
                                  const odc_md *diff_src, const odc_md *diff_dst,
                                  const odc_pool_geom *g, const_dnnl_primitive_desc_t hint);

/* Elementwise y = f(x) with oneDNN's alpha/beta; src and dst share md. */
dnnl_status_t odc_eltwise_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, dnnl_alg_kind_t alg,
                             const odc_md *data, float alpha, float beta);
dnnl_status_t odc_reduction_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, dnnl_alg_kind_t alg,
                               const odc_md *src, const odc_md *dst);
/* Layer norm over the last dim; stat: mean/variance over the leading dims.
 * flags: ODC_NORM_*. */
#define ODC_NORM_GLOBAL_STATS 1u
#define ODC_NORM_SCALE 2u
#define ODC_NORM_SHIFT 4u
dnnl_status_t odc_layer_norm_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, const odc_md *data,
                                const odc_md *stat, float eps, unsigned flags);
/* A reorder (layout change / copy) between two descriptors of one shape. */
dnnl_status_t odc_reorder_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, const odc_md *src,
                             const odc_md *dst);

/* ---- the machine */
/* True when the CPU (as oneDNN sees it, DNNL_MAX_CPU_ISA included) has native
 * bf16 arithmetic (avx512_bf16 or newer). */
bool odc_cpu_has_bf16(void);
/* "oneDNN 2.6.3 (avx512_core_bf16)" */
void odc_version_text(char *buf, size_t len);

#endif
