/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_index.c — INDEX_SELECT, GATHER, SCATTER_ADD and INDEX_ADD
 * (kernels/index.cl), on complex dtypes too.
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

/* The accumulating ops add 64-bit data with atomics only where the device
 * has cl_khr_int64_base_atomics (c128 adds its f64 parts). */
static bool lacks_atomics(const ocl_device *d, uint32_t op, int32_t data) {
    return !selecting(op) && (data == GFP_F64 || data == GFP_I64 || data == GFP_C128) &&
           !d->int64_atomics;
}

/* f16 / bf16: the selecting ops move them as 2-byte bits; the accumulating
 * ones add them in f32 through a compare-and-swap on the 32-bit word that
 * holds each (kernels/common.cl). */
#define INDEX_DTYPES (PK_DT_FLOAT | PK_DT_HALF | PK_DT_INT | PK_DT(GFP_BOOL))

/* What the index ops take on d: complex too, c128 where the device stores it. The
 * selecting ops move complex elements as bits (8 bytes for c64, 16 for
 * c128); the accumulating ones add the real and the imaginary parts as two
 * launches of the part dtype's kernel over views of every other part. */
static uint32_t index_dtypes(const ocl_device *d) {
    return INDEX_DTYPES | PK_DT(GFP_C64) | (d->fp64 ? PK_DT(GFP_C128) : 0u);
}

/* The real (k = 0) or imaginary (k = 1) parts of a complex tensor, as a
 * tensor of its part dtype. */
static gfp_tensor part_view(const gfp_tensor *t, int k) {
    gfp_tensor v = *t;
    v.dtype = pk_complex_part(t->dtype);
    for (int d = 0; d < t->rank; d++) v.strides[d] = 2 * t->strides[d];
    v.offset = t->offset + (uint64_t)k * pk_dtype_size(v.dtype);
    return v;
}

uint32_t ocl_index_support(const ocl_device *d, const gfp_op_query *q) {
    if (lacks_atomics(d, q->op, q->input_dtypes[0])) return GFP_SUPPORT_NONE;
    return pk_index_dtypes_ok(q->op, q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0],
                              index_dtypes(d))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

static const char *kbits(int32_t dt) {
    size_t s = pk_dtype_size(dt);
    return s == 1 ? "b1" : s == 2 ? "b2" : s == 4 ? "b4" : s == 8 ? "b8" : "b16";
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
        return pk_index_out_of_range(op, v, dim, limit);
    return st;
}

static const char *kdt(int32_t dt) {
    switch (dt) {
    case GFP_F32: return "f32";
    case GFP_F64: return "f64";
    case GFP_I32: return "i32";
    case GFP_F16: return "f16";
    case GFP_BF16: return "bf16";
    default: return "i64";
    }
}

/* INDEX_SELECT and INDEX_ADD: index is 1-D; data is x or src, dst is y.
 * Shapes checked by pk_check_index (plugin_kit.h), as for gather_like. */
static gfp_status select_like(ocl_device *d, uint32_t op, const gfp_tensor *data,
                              const gfp_tensor *index, const gfp_tensor *dst, int dim) {
    const char *name = pk_op_name(op);
    bool select = op == GFP_OP_INDEX_SELECT;
    const gfp_tensor *indexed = select ? data : dst, *walked = select ? dst : data;
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
    const gfp_tensor *indexed = gather ? data : dst;
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
    if (lacks_atomics(d, op, in[0]->dtype))
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "%s: %s data needs 64-bit atomic adds (cl_khr_int64_base_atomics), which "
                       "device '%s' lacks",
                       pk_op_name(op), pk_dtype_name(in[0]->dtype), d->name);
    pk_index_geom g;
    gfp_status st = pk_check_index(op, params, in[0], in[1], out[0], index_dtypes(d), &g);
    if (st != GFP_OK) return st;
    gfp_tensor data = pk_at_least_1d(in[0]), dst = pk_at_least_1d(out[0]);
    gfp_tensor index = op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD ? *in[1]
                                                                         : pk_at_least_1d(in[1]);
    /* Complex sums: the parts apart (each checks the index first, so a bad
     * index is refused before anything is written). */
    int parts = pk_is_complex(data.dtype) && !selecting(op) ? 2 : 1;
    for (int k = 0; k < parts && st == GFP_OK; k++) {
        gfp_tensor dv = parts == 2 ? part_view(&data, k) : data;
        gfp_tensor yv = parts == 2 ? part_view(&dst, k) : dst;
        st = op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD
                 ? select_like(d, op, &dv, &index, &yv, g.dim)
                 : gather_like(d, op, &dv, &index, &yv, g.dim);
    }
    return st;
}
