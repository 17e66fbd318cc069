/* SPDX-License-Identifier: BSD-3-Clause */
/* template.h — what the files of the template plugin share.
 *
 * The template is a complete graft device plugin in plain C that a third
 * party copies and renames. Its device computes on host memory, so it runs
 * anywhere; replace the memory slots and the kernels with your runtime's.
 *   template_plugin.c      the entry point, the table, the device, the memory,
 *                          what is supported (one table of rows), launch
 *   template_elementwise.c COPY FILL RANDOM, unary and binary ops, comparisons,
 *                          WHERE
 *   template_reduce.c      SUM MEAN AMAX MAX_DIM, SOFTMAX LOG_SOFTMAX
 *   template_matmul_index.c MATMUL, INDEX_SELECT GATHER SCATTER_ADD INDEX_ADD
 * It includes graft_plugin.h only and links nothing of graft. */
#ifndef TEMPLATE_H
#define TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graft_plugin.h"

/* The host table from negotiation: set_error and log. */
extern const gfp_host *tp_host;

/* Attaches a message to the failure being returned, and returns status. */
gfp_status tp_fail(gfp_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- tensors (template_plugin.c) */
int64_t tp_numel(const gfp_tensor *t);
/* Address of the element at multi-index idx: strides are in elements. */
char *tp_at(const gfp_tensor *t, const int64_t *idx);
/* Next row-major multi-index within sizes; false after the last. */
bool tp_next(int64_t *idx, const int64_t *sizes, int rank);
bool tp_same_shape(const gfp_tensor *a, const gfp_tensor *b);
/* params is non-NULL and its struct_size covers `size` bytes. */
gfp_status tp_params(const void *params, size_t size, const char *op);

/* ---- kernels. Counts and dtypes are checked before they run (launch
 * matches them against the support table); shapes and params are theirs. */
typedef gfp_status (*tp_kernel)(uint32_t op, const gfp_tensor *const *in,
                                const gfp_tensor *const *out, const void *params);
gfp_status tp_copy(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                   const void *params);
gfp_status tp_fill(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                   const void *params);
gfp_status tp_random(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                     const void *params);
gfp_status tp_unary(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                    const void *params);
gfp_status tp_binary(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                     const void *params);
gfp_status tp_compare(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                      const void *params);
gfp_status tp_where(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                    const void *params);
gfp_status tp_reduce(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                     const void *params);
gfp_status tp_softmax(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                      const void *params);
gfp_status tp_matmul(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                     const void *params);
gfp_status tp_index(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                    const void *params);

#endif
