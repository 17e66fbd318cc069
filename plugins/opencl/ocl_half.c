/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_half.c — f16 and bf16 for the ops whose kernels are written for f32
 * and f64 only (CONV, POOL, LAYER_NORM, BATCH_NORM): widened into f32
 * copies, run by the family's f32 launch, rounded once (plugins/common's
 * pk_widen.c; this file gives it the device side). The temporaries are
 * buffers of their own, released on return (the queue keeps a buffer alive
 * while its kernels run), so a captured graph runs such a node eagerly
 * (ocl_graph.c).
 *
 * The elementwise ops, reductions, matmul, softmax and RANDOM have 16-bit
 * kernels of their own (kernels/common.cl's conversions at load and store). */
#include <stdlib.h>

#include "ocl_internal.h"

typedef struct widen_ctx {
    ocl_device *d;
    ocl_launch_fn launch;
} widen_ctx;

static gfp_status temp_alloc(void *ctx, uint64_t bytes, gfp_buffer *buf, const char *op) {
    ocl_device *d = ((widen_ctx *)ctx)->d;
    *buf = NULL;
    ocl_buffer *b = malloc(sizeof *b);
    if (!b) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    cl_int err = CL_SUCCESS;
    cl_mem m = ocl.CreateBuffer(d->ctx, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &err);
    if (!m) {
        free(b);
        return ocl_cl_fail(err, op, "clCreateBuffer (f32 copies of 16-bit tensors)");
    }
    *b = (ocl_buffer){OCL_BUFFER_MAGIC, m, bytes, NULL, NULL};
    *buf = b;
    return GFP_OK;
}

static void temp_free(void *ctx, gfp_buffer buf) {
    (void)ctx;
    ocl_buffer *b = buf;
    ocl.ReleaseMemObject(b->mem);
    free(b);
}

static gfp_status copy(void *ctx, const gfp_tensor *dst, const gfp_tensor *src, const char *op) {
    return ocl_copy_tensor(((widen_ctx *)ctx)->d, dst, src, op);
}

static gfp_status launch(void *ctx, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    widen_ctx *w = ctx;
    return w->launch(w->d, op, in, n_in, out, n_out, params);
}

uint32_t ocl_half_widened_support(const ocl_device *d, const gfp_op_query *q,
                                  uint32_t (*support)(const ocl_device *, const gfp_op_query *)) {
    gfp_op_query w;
    return pk_widen_query(q, &w) ? support(d, &w) : GFP_SUPPORT_NONE;
}

gfp_status ocl_half_widened_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                                   uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                   const void *params, ocl_launch_fn fn) {
    widen_ctx w = {d, fn};
    const pk_widen_ops ops = {temp_alloc, temp_free, copy, launch, &w, d->max_alloc_bytes,
                              d->name};
    return pk_widen_launch(&ops, op, in, n_in, out, n_out, params);
}
