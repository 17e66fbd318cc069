/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_index.c — INDEX_SELECT, GATHER, SCATTER_ADD and INDEX_ADD.
 *
 * Index tensors are i64. Every index is checked against its dim before
 * anything is written, so a launch that fails leaves its output untouched
 * (this matters most for SCATTER_ADD and INDEX_ADD, which write in place).
 * Negative indices are out of range: the core normalises them beforehand if
 * the user API allows them. A 0-dim tensor is treated as a 1-D tensor of one
 * element along dim 0. */
#include <stddef.h>
#include <string.h>

#include "ref_internal.h"

/* Data dtypes (plugin_kit.h): the selecting ops copy bytes, so they take
 * bool too; the accumulating ones add, so they take numbers only. */
#define INDEX_DTYPES (REF_DT_FLOAT | PK_DT_INT | PK_DT(GFP_BOOL) | PK_DT_COMPLEX)

uint32_t ref_index_support(const gfp_op_query *q) {
    return pk_index_dtypes_ok(q->op, q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0],
                              INDEX_DTYPES)
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* Copies one element; source and destination share a dtype, so a byte copy
 * is exact for every dtype. */
static void copy_element(const gfp_tensor *dst, int64_t dst_off, const gfp_tensor *src,
                         int64_t src_off) {
    size_t size = pk_dtype_size(src->dtype);
    memcpy(ref_base(dst) + dst_off * (int64_t)size, ref_base(src) + src_off * (int64_t)size, size);
}

/* dst[dst_off] += src[src_off]. Floats add in double and round once per
 * addition; integers wrap modulo 2^64 and narrow on store. */
static void add_element(const gfp_tensor *dst, int64_t dst_off, const gfp_tensor *src,
                        int64_t src_off) {
    if (ref_is_complex(dst->dtype)) {
        ref_store_c(dst, dst_off, ref_load_c(dst, dst_off) + ref_load_c(src, src_off));
    } else if (ref_is_float(dst->dtype)) {
        ref_store(dst, dst_off, ref_load(dst, dst_off) + ref_load(src, src_off));
    } else {
        uint64_t sum = (uint64_t)ref_load_i64(dst, dst_off) + (uint64_t)ref_load_i64(src, src_off);
        ref_store_i64(dst, dst_off, (int64_t)sum);
    }
}

/* Every element of index must lie in [0, limit). */
static gfp_status check_indices(const char *op, const gfp_tensor *index, int dim, int64_t limit) {
    if (pk_numel(index) == 0) return GFP_OK;
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        int64_t v = ref_load_i64(index, ref_offset(index, idx));
        if (v < 0 || v >= limit)
            return pk_index_out_of_range(op, v, dim, limit);
    } while (ref_next_index(idx, index->sizes, index->rank));
    return GFP_OK;
}

/* INDEX_SELECT: y.select(dim, i) = x.select(dim, index[i]).
 * INDEX_ADD:    y.select(dim, index[i]) += src.select(dim, i).
 * `data` is x or src, `dst` is y; index is 1-D (or 0-dim: one index). */
static gfp_status select_like(uint32_t op, const gfp_tensor *data, const gfp_tensor *index,
                              const gfp_tensor *dst, int dim) {
    const char *name = pk_op_name(op);
    bool select = op == GFP_OP_INDEX_SELECT;
    const gfp_tensor *indexed = select ? data : dst; /* the tensor index points into */
    const gfp_tensor *walked = select ? dst : data;  /* the one walked position by position */
    gfp_status st = check_indices(name, index, dim, indexed->sizes[dim]);
    if (st != GFP_OK) return st;
    if (pk_numel(walked) == 0) return GFP_OK;
    int64_t idx[GFP_MAX_RANK] = {0}; /* position in walked */
    do {
        int64_t i = idx[dim];
        idx[dim] = ref_load_i64(index, i * (index->rank ? index->strides[0] : 0));
        int64_t indexed_off = ref_offset(indexed, idx);
        idx[dim] = i;
        int64_t walked_off = ref_offset(walked, idx);
        if (select)
            copy_element(dst, walked_off, data, indexed_off);
        else
            add_element(dst, indexed_off, data, walked_off);
    } while (ref_next_index(idx, walked->sizes, walked->rank));
    return GFP_OK;
}

/* GATHER:      y[p] = x[p with p[dim] = index[p]].
 * SCATTER_ADD: y[p with p[dim] = index[p]] += src[p].
 * p runs over index's shape; `data` is x or src, `dst` is y. */
static gfp_status gather_like(uint32_t op, const gfp_tensor *data, const gfp_tensor *index,
                              const gfp_tensor *dst, int dim) {
    const char *name = pk_op_name(op);
    bool gather = op == GFP_OP_GATHER;
    const gfp_tensor *indexed = gather ? data : dst;
    const gfp_tensor *walked = gather ? dst : data;
    gfp_status st = check_indices(name, index, dim, indexed->sizes[dim]);
    if (st != GFP_OK) return st;
    if (pk_numel(index) == 0) return GFP_OK;
    int64_t idx[GFP_MAX_RANK] = {0}; /* position in index (and walked) */
    do {
        int64_t walked_off = ref_offset(walked, idx);
        int64_t i = idx[dim];
        idx[dim] = ref_load_i64(index, ref_offset(index, idx));
        int64_t indexed_off = ref_offset(indexed, idx);
        idx[dim] = i;
        if (gather)
            copy_element(dst, walked_off, data, indexed_off);
        else
            add_element(dst, indexed_off, data, walked_off);
    } while (ref_next_index(idx, index->sizes, index->rank));
    return GFP_OK;
}

gfp_status ref_index_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                            const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    pk_index_geom g;
    gfp_status st = pk_check_index(op, params, in[0], in[1], out[0], INDEX_DTYPES, &g);
    if (st != GFP_OK) return st;
    gfp_tensor data = pk_at_least_1d(in[0]), dst = pk_at_least_1d(out[0]);
    int dim = g.dim;
    if (op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD)
        return select_like(op, &data, in[1], &dst, dim);
    gfp_tensor index = pk_at_least_1d(in[1]);
    return gather_like(op, &data, &index, &dst, dim);
}
