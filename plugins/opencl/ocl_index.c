/* ocl_index.c — INDEX_SELECT, GATHER, SCATTER_ADD and INDEX_ADD
 * (kernels/index.cl).
 *
 * Indices are i64. Before the op runs, a check kernel looks at every index
 * and the host reads its verdict (this waits for the queue): an index out of
 * range fails the launch with the index and the dim's size in the message,
 * and leaves the output untouched, as the reference plugin does. A 0-dim
 * tensor is treated as 1-D with one element. The accumulating ops add
 * atomically; for i64 and f64 that needs cl_khr_int64_base_atomics. */
#include <stdio.h>
#include <string.h>

#include "ocl_internal.h"

static bool selecting(uint32_t op) { return op == GFP_OP_INDEX_SELECT || op == GFP_OP_GATHER; }

static bool dtypes_ok(const ocl_device *d, uint32_t op, int32_t data_in, int32_t index,
                      int32_t data_out) {
    bool number = data_in >= GFP_F32 && data_in <= GFP_I64;
    if (!selecting(op) && (data_in == GFP_F64 || data_in == GFP_I64) && !d->int64_atomics)
        return false; /* 64-bit atomic adds are missing */
    return (number || (selecting(op) && data_in == GFP_BOOL)) && index == GFP_I64 &&
           data_out == data_in;
}

uint32_t ocl_index_support(const ocl_device *d, const gfp_op_query *q) {
    if (q->n_inputs != 2 || q->n_outputs != 1) return GFP_SUPPORT_NONE;
    return dtypes_ok(d, q->op, q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0])
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

static gfp_tensor at_least_1d(const gfp_tensor *t) {
    gfp_tensor v = *t;
    if (v.rank == 0) {
        v.rank = 1;
        v.sizes[0] = 1;
        v.strides[0] = 0;
    }
    return v;
}

static const char *kbits(int32_t dt) {
    size_t s = pk_dtype_size(dt);
    return s == 1 ? "b1" : s == 4 ? "b4" : "b8";
}

/* Checks every index of `index` against [0, limit): the check kernel, then a
 * read of its flag (which waits for the queue). */
static gfp_status check_indices(ocl_device *d, const char *op, const gfp_tensor *index, int dim,
                                int64_t limit) {
    int64_t n = pk_numel(index);
    if (n == 0) return GFP_OK;
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_INDEX, "check_index", op);
    ocl_arg_mem(&c, ocl_mem(index));
    ocl_arg_i64(&c, ocl_elem_offset(index));
    ocl_arg_long8(&c, index->sizes, index->rank);
    ocl_arg_long8(&c, index->strides, index->rank);
    ocl_arg_i32(&c, index->rank);
    ocl_arg_i64(&c, n);
    ocl_arg_i64(&c, limit);
    ocl_arg_mem(&c, d->flag);
    gfp_status st = ocl_call_run1(&c, (uint64_t)n, 64);
    bool bad = false;
    int64_t v = 0;
    if (st == GFP_OK) st = ocl_read_flag(d, op, &bad, &v);
    if (st == GFP_OK && bad)
        return pk_fail(GFP_ERR_INVALID, "%s: index %lld is out of range for dim %d of size %lld "
                        "(valid range [0, %lld))", op, (long long)v, dim, (long long)limit,
                        (long long)limit);
    return st;
}

static bool same_but_dim(const gfp_tensor *a, const gfp_tensor *b, int dim) {
    if (a->rank != b->rank) return false;
    for (int k = 0; k < a->rank; k++)
        if (k != dim && a->sizes[k] != b->sizes[k]) return false;
    return true;
}

static const char *kdt(int32_t dt) {
    switch (dt) {
    case GFP_F32: return "f32";
    case GFP_F64: return "f64";
    case GFP_I32: return "i32";
    default: return "i64";
    }
}

/* INDEX_SELECT and INDEX_ADD: index is 1-D; data is x or src, dst is y. */
static gfp_status select_like(ocl_device *d, uint32_t op, const gfp_tensor *data,
                              const gfp_tensor *index, const gfp_tensor *dst, int dim) {
    const char *name = pk_op_name(op);
    bool select = op == GFP_OP_INDEX_SELECT;
    const gfp_tensor *indexed = select ? data : dst, *walked = select ? dst : data;
    if (index->rank > 1)
        return pk_fail(GFP_ERR_INVALID, "%s: index must be 1-D; it has rank %d", name,
                        (int)index->rank);
    int64_t n_index = pk_numel(index);
    if (!same_but_dim(data, dst, dim) || walked->sizes[dim] != n_index)
        return pk_fail(GFP_ERR_INVALID, "%s: %s must have %s's shape except in dim %d, where its "
                        "size must be the index's length %lld", name, select ? "y" : "src",
                        select ? "x" : "y", dim, (long long)n_index);
    gfp_status st = check_indices(d, name, index, dim, indexed->sizes[dim]);
    int64_t n = pk_numel(walked);
    if (st != GFP_OK || n == 0) return st;
    char kname[32];
    snprintf(kname, sizeof kname, "%s_%s", name, select ? kbits(data->dtype) : kdt(data->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_INDEX, kname, name);
    ocl_arg_mem(&c, ocl_mem(dst));
    ocl_arg_i64(&c, ocl_elem_offset(dst));
    ocl_arg_mem(&c, ocl_mem(data));
    ocl_arg_i64(&c, ocl_elem_offset(data));
    ocl_arg_mem(&c, ocl_mem(index));
    ocl_arg_i64(&c, ocl_elem_offset(index));
    ocl_arg_i64(&c, index->rank ? index->strides[0] : 0);
    ocl_arg_long8(&c, walked->sizes, walked->rank);
    ocl_arg_long8(&c, dst->strides, dst->rank);
    ocl_arg_long8(&c, data->strides, data->rank);
    ocl_arg_i32(&c, walked->rank);
    ocl_arg_i32(&c, dim);
    ocl_arg_i64(&c, n);
    return ocl_call_run1(&c, (uint64_t)n, 64);
}

/* GATHER and SCATTER_ADD: index has the data's rank; p runs over its shape. */
static gfp_status gather_like(ocl_device *d, uint32_t op, const gfp_tensor *data,
                              const gfp_tensor *index, const gfp_tensor *dst, int dim) {
    const char *name = pk_op_name(op);
    bool gather = op == GFP_OP_GATHER;
    const gfp_tensor *indexed = gather ? data : dst, *walked = gather ? dst : data;
    if (index->rank != data->rank || dst->rank != data->rank)
        return pk_fail(GFP_ERR_INVALID, "%s: %s, index and y must have the same rank (got %d, "
                        "%d, %d)", name, gather ? "x" : "src", (int)data->rank, (int)index->rank,
                        (int)dst->rank);
    if (gather && !pk_same_shape(dst, index))
        return pk_fail(GFP_ERR_INVALID, "gather: y must have the index's shape");
    for (int k = 0; k < index->rank; k++) {
        if (k != dim && index->sizes[k] > indexed->sizes[k])
            return pk_fail(GFP_ERR_INVALID, "%s: index has size %lld in dim %d, larger than "
                            "%s's %lld", name, (long long)index->sizes[k], k, gather ? "x" : "y",
                            (long long)indexed->sizes[k]);
        if (!gather && index->sizes[k] > walked->sizes[k])
            return pk_fail(GFP_ERR_INVALID, "scatter_add: index has size %lld in dim %d, larger "
                            "than src's %lld", (long long)index->sizes[k], k,
                            (long long)walked->sizes[k]);
    }
    gfp_status st = check_indices(d, name, index, dim, indexed->sizes[dim]);
    int64_t n = pk_numel(index);
    if (st != GFP_OK || n == 0) return st;
    char kname[32];
    snprintf(kname, sizeof kname, "%s_%s", name, gather ? kbits(data->dtype) : kdt(data->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_INDEX, kname, name);
    ocl_arg_mem(&c, ocl_mem(dst));
    ocl_arg_i64(&c, ocl_elem_offset(dst));
    ocl_arg_mem(&c, ocl_mem(data));
    ocl_arg_i64(&c, ocl_elem_offset(data));
    ocl_arg_mem(&c, ocl_mem(index));
    ocl_arg_i64(&c, ocl_elem_offset(index));
    ocl_arg_long8(&c, index->sizes, index->rank);
    ocl_arg_long8(&c, dst->strides, dst->rank);
    ocl_arg_long8(&c, data->strides, data->rank);
    ocl_arg_long8(&c, index->strides, index->rank);
    ocl_arg_i32(&c, index->rank);
    ocl_arg_i32(&c, dim);
    ocl_arg_i64(&c, n);
    return ocl_call_run1(&c, (uint64_t)n, 64);
}

gfp_status ocl_index_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params) {
    const char *name = pk_op_name(op);
    gfp_status st = pk_expect_counts(n_in, 2, n_out, 1, name);
    if (st == GFP_OK) st = pk_check_params(params, GFP_DIM_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    if (!in[0] || !in[1])
        return pk_fail(GFP_ERR_INVALID, "%s: the %s tensor is missing (NULL)", name,
                        in[0] ? "index" : selecting(op) ? "x" : "src");
    if (!dtypes_ok(d, op, in[0]->dtype, in[1]->dtype, out[0]->dtype))
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: not provided for data %s -> %s with index %s "
                        "(data f32, f64, i32, i64%s, the same in and out; index i64%s)", name,
                        pk_dtype_name(in[0]->dtype), pk_dtype_name(out[0]->dtype),
                        pk_dtype_name(in[1]->dtype), selecting(op) ? " or bool" : "",
                        selecting(op) || d->int64_atomics
                            ? ""
                            : "; 64-bit data needs cl_khr_int64_base_atomics, which this "
                              "device lacks");
    gfp_tensor data = at_least_1d(in[0]), dst = at_least_1d(out[0]);
    int dim = ((const gfp_dim_params *)params)->dim;
    if (dim < 0 || dim >= data.rank)
        return pk_fail(GFP_ERR_INVALID, "%s: dim %d is out of range for a tensor of rank %d",
                        name, dim, (int)in[0]->rank);
    if (op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD)
        return select_like(d, op, &data, in[1], &dst, dim);
    gfp_tensor index = at_least_1d(in[1]);
    return gather_like(d, op, &data, &index, &dst, dim);
}
