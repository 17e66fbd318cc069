/* SPDX-License-Identifier: BSD-3-Clause */
/* pk_widen.h — f16 and bf16 for kernels written for f32 and f64 only:
 * widened into f32 copies, run in f32, rounded once.
 *
 * Each 16-bit operand is copied into an f32 temporary (COPY: exact), the
 * plugin's f32 launch runs on the copies, and each 16-bit output is rounded
 * once from its f32 result (COPY: to nearest even), as the reference
 * computes in f32 and rounds once. Other operands (i64 indices) pass as they
 * are. Outputs are not copied in (the ops this serves write every element);
 * inputs an op updates in place (batch norm's running statistics) are
 * rounded back after it. The plugin supplies the device side: one temporary
 * buffer, COPY between tensors, and the f32 launch. */
#ifndef GRAFT_PK_WIDEN_H
#define GRAFT_PK_WIDEN_H

#include <stdbool.h>
#include <stdint.h>

#include "graft_plugin.h"

typedef struct pk_widen_ops {
    /* A device buffer of `bytes` (> 0) as the plugin's own launches take a
     * gfp_tensor's buffer; freed with temp_free once the f32 launch and the
     * copies are enqueued (the plugin keeps it alive until they ran). */
    gfp_status (*temp_alloc)(void *ctx, uint64_t bytes, gfp_buffer *buf, const char *op);
    void (*temp_free)(void *ctx, gfp_buffer buf);
    /* dst = src element by element, converting the dtype (same sizes). */
    gfp_status (*copy)(void *ctx, const gfp_tensor *dst, const gfp_tensor *src, const char *op);
    /* The f32 launch. */
    gfp_status (*launch)(void *ctx, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params);
    void *ctx;
    uint64_t max_alloc; /* the largest buffer the device allocates at once; 0: no limit */
    const char *device; /* for messages */
} pk_widen_ops;

/* Whether any present operand is f16 or bf16. */
bool pk_widen_operands(const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *const *out,
                       uint32_t n_out);
/* *w = q with its 16-bit dtypes read as f32 (q itself when it has none).
 * False when q mixes f16 and bf16: the f32 kernels take one dtype. */
bool pk_widen_query(const gfp_op_query *q, gfp_op_query *w);
/* The launch through f32 copies, at most 8 inputs and 4 outputs. The inputs
 * an op updates in place (BATCH_NORM's running statistics, graft_ops.def)
 * are rounded back from their copies after it. */
gfp_status pk_widen_launch(const pk_widen_ops *ops, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params);

#endif
