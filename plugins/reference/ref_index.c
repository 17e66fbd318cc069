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

/* Data dtypes: the selecting ops copy bytes, so they take bool too; the
 * accumulating ones add, so they take numbers only. Data in and out alike. */
static bool dtypes_ok(uint32_t op, int32_t data_in, int32_t index, int32_t data_out) {
    bool number =
        data_in == GFP_F32 || data_in == GFP_F64 || data_in == GFP_I32 || data_in == GFP_I64;
    bool selecting = op == GFP_OP_INDEX_SELECT || op == GFP_OP_GATHER;
    return (number || (selecting && data_in == GFP_BOOL)) && index == GFP_I64 &&
           data_out == data_in;
}

uint32_t ref_index_support(const gfp_op_query *q) {
    if (!GFP_HAS_FIELD(q->struct_size, gfp_op_query, output_dtypes) || !(gfp_op_family_of(q->op) == GFP_FAMILY_INDEX) ||
        q->n_inputs != 2 || q->n_outputs != 1)
        return GFP_SUPPORT_NONE;
    return dtypes_ok(q->op, q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0])
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* Descriptors were validated by the router (ref_plugin.c: rank, sizes,
 * strides, buffer bounds); only presence is left to check here. */
static gfp_status require(const gfp_tensor *t, const char *op, const char *role) {
    return t ? GFP_OK : pk_fail(GFP_ERR_INVALID, "%s: the %s tensor is missing (NULL)", op, role);
}

/* t itself, or for a 0-dim t a 1-D view of its one element. */
static gfp_tensor at_least_1d(const gfp_tensor *t) {
    gfp_tensor v = *t;
    if (v.rank == 0) {
        v.rank = 1;
        v.sizes[0] = 1;
        v.strides[0] = 0;
    }
    return v;
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
    if (pk_is_float(dst->dtype)) {
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
            return pk_fail(GFP_ERR_INVALID,
                            "%s: index %lld is out of range for dim %d of size %lld "
                            "(valid range [0, %lld))",
                            op, (long long)v, dim, (long long)limit, (long long)limit);
    } while (ref_next_index(idx, index->sizes, index->rank));
    return GFP_OK;
}

/* a and b have one rank and equal sizes in every dim but `dim`. */
static bool same_but_dim(const gfp_tensor *a, const gfp_tensor *b, int dim) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (d != dim && a->sizes[d] != b->sizes[d]) return false;
    return true;
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
    if (index->rank > 1)
        return pk_fail(GFP_ERR_INVALID, "%s: index must be 1-D; it has rank %d", name,
                        (int)index->rank);
    int64_t n_index = pk_numel(index);
    if (!same_but_dim(data, dst, dim) || walked->sizes[dim] != n_index)
        return pk_fail(GFP_ERR_INVALID,
                        "%s: %s must have %s's shape except in dim %d, where its size must "
                        "be the index's length %lld",
                        name, select ? "y" : "src", select ? "x" : "y", dim, (long long)n_index);
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
    if (index->rank != data->rank || dst->rank != data->rank)
        return pk_fail(GFP_ERR_INVALID,
                        "%s: %s, index and y must have the same rank (got %d, %d, %d)", name,
                        gather ? "x" : "src", (int)data->rank, (int)index->rank, (int)dst->rank);
    if (gather && !pk_same_shape(dst, index))
        return pk_fail(GFP_ERR_INVALID, "gather: y must have the index's shape");
    for (int d = 0; d < index->rank; d++) {
        if (d != dim && index->sizes[d] > indexed->sizes[d])
            return pk_fail(
                GFP_ERR_INVALID, "%s: index has size %lld in dim %d, larger than %s's %lld", name,
                (long long)index->sizes[d], d, gather ? "x" : "y", (long long)indexed->sizes[d]);
        if (!gather && index->sizes[d] > walked->sizes[d])
            return pk_fail(GFP_ERR_INVALID,
                            "scatter_add: index has size %lld in dim %d, larger than "
                            "src's %lld",
                            (long long)index->sizes[d], d, (long long)walked->sizes[d]);
    }
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
    if (!(gfp_op_family_of(op) == GFP_FAMILY_INDEX))
        return pk_fail(GFP_ERR_INTERNAL, "index: op %u is not an indexing op", (unsigned)op);
    const char *name = pk_op_name(op);
    bool selecting = op == GFP_OP_INDEX_SELECT || op == GFP_OP_GATHER;
    gfp_status st = pk_expect_counts(n_in, 2, n_out, 1, name);
    if (st != GFP_OK) return st;
    if ((st = pk_check_params(params, GFP_DIM_PARAMS_SIZE_V1_0, name)) != GFP_OK) return st;
    if ((st = require(in[0], name, selecting ? "x" : "src")) != GFP_OK ||
        (st = require(in[1], name, "index")) != GFP_OK ||
        (st = require(out[0], name, "y")) != GFP_OK)
        return st;
    if (!dtypes_ok(op, in[0]->dtype, in[1]->dtype, out[0]->dtype))
        return pk_fail(GFP_ERR_UNSUPPORTED,
                        "%s: the reference plugin does not take data %s -> %s with index "
                        "%s (data f32, f64, i32, i64%s, the same in and out; index i64)",
                        name, pk_dtype_name(in[0]->dtype), pk_dtype_name(out[0]->dtype),
                        pk_dtype_name(in[1]->dtype), selecting ? " or bool" : "");
    gfp_tensor data = at_least_1d(in[0]), dst = at_least_1d(out[0]);
    int dim = ((const gfp_dim_params *)params)->dim;
    if (dim < 0 || dim >= data.rank)
        return pk_fail(GFP_ERR_INVALID, "%s: dim %d is out of range for a tensor of rank %d", name,
                        dim, (int)in[0]->rank);
    if (op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD)
        return select_like(op, &data, in[1], &dst, dim);
    gfp_tensor index = at_least_1d(in[1]);
    return gather_like(op, &data, &index, &dst, dim);
}
