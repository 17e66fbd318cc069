/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_half.c — f16 and bf16 for the ops whose kernels are written for f32
 * and f64 only (CONV, POOL, LAYER_NORM, BATCH_NORM): widened, run in f32,
 * rounded once.
 *
 * Each 16-bit operand gets an f32 copy in a temporary buffer (COPY: exact),
 * the family's f32 launch runs on the copies, and each 16-bit output is
 * rounded once from its f32 result (COPY: to nearest even), as the reference
 * computes in f32 and rounds once. Other operands (max pooling's i64
 * indices) are passed as they are. These ops write every element of their
 * outputs, so outputs are not copied in; inputs an op updates in place
 * (batch norm's running statistics) are rounded back after it. The temporaries
 * are released on return (the queue keeps a buffer alive while its kernels
 * run); a captured graph therefore runs such a node eagerly (ocl_graph.c).
 *
 * The elementwise ops, reductions, matmul and softmax have 16-bit kernels of
 * their own (kernels/common.cl's conversions at load and store). */
#include <stdio.h>
#include <string.h>

#include "ocl_internal.h"

#define OCL_HALF_ALIGN 128u /* bytes between temporaries */

bool ocl_half_operands(const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *const *out,
                       uint32_t n_out) {
    for (uint32_t i = 0; i < n_in; i++)
        if (in[i] && pk_is_half(in[i]->dtype)) return true;
    for (uint32_t i = 0; i < n_out; i++)
        if (out[i] && pk_is_half(out[i]->dtype)) return true;
    return false;
}

uint32_t ocl_half_widened_support(const ocl_device *d, const gfp_op_query *q,
                                  uint32_t (*support)(const ocl_device *, const gfp_op_query *)) {
    gfp_op_query w = *q;
    int32_t half = -1; /* one 16-bit dtype per launch, as the f32 kernels take one dtype */
    for (uint32_t i = 0; i < q->n_inputs && i < 8; i++)
        if (pk_is_half(q->input_dtypes[i])) {
            if (half >= 0 && q->input_dtypes[i] != half) return GFP_SUPPORT_NONE;
            half = q->input_dtypes[i];
            w.input_dtypes[i] = GFP_F32;
        }
    for (uint32_t i = 0; i < q->n_outputs && i < 4; i++)
        if (pk_is_half(q->output_dtypes[i])) {
            if (half >= 0 && q->output_dtypes[i] != half) return GFP_SUPPORT_NONE;
            half = q->output_dtypes[i];
            w.output_dtypes[i] = GFP_F32;
        }
    return support(d, &w);
}

/* A contiguous f32 descriptor of t's sizes in buffer b at byte offset at. */
static gfp_tensor wide_view(const gfp_tensor *t, ocl_buffer *b, uint64_t at) {
    gfp_tensor v = *t;
    v.buffer = b;
    v.offset = at;
    v.dtype = GFP_F32;
    int64_t st = 1;
    for (int k = t->rank - 1; k >= 0; k--) {
        v.strides[k] = st;
        st *= t->sizes[k];
    }
    return v;
}

/* Where each 16-bit operand's f32 copy starts; the total in *bytes. */
static gfp_status place(const gfp_tensor *const *t, uint32_t n, uint64_t *at, uint64_t *bytes,
                        const char *name) {
    for (uint32_t i = 0; i < n; i++) {
        at[i] = UINT64_MAX;
        if (!t[i] || !pk_is_half(t[i]->dtype)) continue;
        int64_t numel = pk_numel(t[i]);
        uint64_t size;
        if (numel < 0 || __builtin_mul_overflow((uint64_t)numel, 4u, &size) ||
            __builtin_add_overflow(size, OCL_HALF_ALIGN - 1, &size))
            return pk_fail(GFP_ERR_INVALID, "%s: the f32 copy of a tensor of %lld elements "
                           "overflows", name, (long long)numel);
        size -= size % OCL_HALF_ALIGN;
        at[i] = *bytes;
        if (__builtin_add_overflow(*bytes, size, bytes))
            return pk_fail(GFP_ERR_INVALID, "%s: the f32 copies overflow", name);
    }
    return GFP_OK;
}

gfp_status ocl_half_widened_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                                   uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                   const void *params, ocl_launch_fn launch,
                                   uint32_t written_inputs) {
    const char *name = pk_op_name(op);
    if (n_in > 8 || n_out > 4)
        return pk_fail(GFP_ERR_INVALID, "%s: %u inputs and %u outputs (at most 8 and 4)", name,
                       (unsigned)n_in, (unsigned)n_out);
    uint64_t at_in[8], at_out[4], bytes = 0;
    gfp_status st = place(in, n_in, at_in, &bytes, name);
    if (st == GFP_OK) st = place(out, n_out, at_out, &bytes, name);
    if (st != GFP_OK) return st;
    if (d->max_alloc_bytes && bytes > d->max_alloc_bytes)
        return pk_fail(GFP_ERR_OUT_OF_MEMORY, "%s: the f32 copies of its 16-bit tensors take "
                       "%llu bytes, more than device '%s' allocates at once (%llu); run it on "
                       "smaller tensors or in f32", name, (unsigned long long)bytes, d->name,
                       (unsigned long long)d->max_alloc_bytes);
    ocl_buffer tmp = {OCL_BUFFER_MAGIC, NULL, bytes, NULL, NULL};
    cl_int err = CL_SUCCESS;
    tmp.mem = ocl.CreateBuffer(d->ctx, CL_MEM_READ_WRITE, (size_t)(bytes ? bytes : 1), NULL, &err);
    if (!tmp.mem) return ocl_cl_fail(err, name, "clCreateBuffer (f32 copies of 16-bit tensors)");
    gfp_tensor wi[8], wo[4];
    const gfp_tensor *pi[8], *po[4];
    for (uint32_t i = 0; i < n_in; i++) {
        pi[i] = in[i];
        if (at_in[i] == UINT64_MAX) continue;
        wi[i] = wide_view(in[i], &tmp, at_in[i]);
        pi[i] = &wi[i];
        if (st == GFP_OK) st = ocl_copy_tensor(d, &wi[i], in[i], name);
    }
    for (uint32_t i = 0; i < n_out; i++) {
        po[i] = out[i];
        if (at_out[i] == UINT64_MAX) continue;
        wo[i] = wide_view(out[i], &tmp, at_out[i]);
        po[i] = &wo[i];
    }
    if (st == GFP_OK) st = launch(d, op, pi, n_in, po, n_out, params);
    for (uint32_t i = 0; i < n_out && st == GFP_OK; i++)
        if (at_out[i] != UINT64_MAX) st = ocl_copy_tensor(d, out[i], &wo[i], name);
    for (uint32_t i = 0; i < n_in && st == GFP_OK; i++)
        if (at_in[i] != UINT64_MAX && (written_inputs >> i) & 1u)
            st = ocl_copy_tensor(d, in[i], &wi[i], name);
    ocl.ReleaseMemObject(tmp.mem);
    return st;
}
