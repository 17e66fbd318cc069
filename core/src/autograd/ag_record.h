/* SPDX-License-Identifier: BSD-3-Clause */
/* ag_record.h — where the forward and the backward half of each op meet.
 *
 * A forward op (core/src/ops_*.c, creation.c) computes its result, then
 * calls its gf__ag_record_* here, which (when grad mode is on and an input
 * requires grad) records the node whose backward lives in the autograd/bw_*.c
 * named above each group. Both halves include this header (the bw files
 * through ag_internal.h), so a definition that drifts from its declaration
 * fails to compile. Each returns GF_OK, or an error with the thread's error
 * set (the forward then releases its result). Views record through
 * gf__ag_record_view, declared in ag_internal.h with the view kinds. */
#ifndef GRAFT_AG_RECORD_H
#define GRAFT_AG_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* ---- bw_copy.c (called from creation.c) */
gf_status gf__ag_record_copy(const gf_tensor *in, gf_tensor *out, const char *name);
/* (called from ops_shape.c) outs[0..cnt) are copies of in's slices along dim 0 */
gf_status gf__ag_record_unbind_copies(const gf_tensor *in, gf_tensor *const *outs, int cnt);

/* ---- bw_elementwise.c (called from ops_elementwise.c) */
gf_status gf__ag_record_unary(gfp_op op, const gf_tensor *x, gf_tensor *y, double a, double b);
gf_status gf__ag_record_binary(gfp_op op, const gf_tensor *a, const gf_tensor *b, gf_tensor *y);
gf_status gf__ag_record_where(const gf_tensor *cond, const gf_tensor *a, const gf_tensor *b,
                              gf_tensor *y);
gf_status gf__ag_record_masked_fill(const gf_tensor *x, const gf_tensor *mask, gf_tensor *y);

/* ---- bw_reduce.c (called from ops_reduce.c) */
gf_status gf__ag_record_reduce(gfp_op op, const gf_tensor *x, gf_tensor *y, uint32_t mask,
                               bool keepdim, double correction);
gf_status gf__ag_record_std(const gf_tensor *x, gf_tensor *y, uint32_t mask, bool keepdim,
                           double correction);
gf_status gf__ag_record_extreme_dim(gfp_op op, const gf_tensor *x, gf_tensor *values,
                                    const gf_tensor *indices, int dim, bool keepdim);

/* ---- bw_linalg.c (called from ops_linalg.c) */
gf_status gf__ag_record_matmul(const gf_tensor *a, const gf_tensor *b, gf_tensor *y);
gf_status gf__ag_record_softmax(gfp_op op, const gf_tensor *x, gf_tensor *y, int dim);

/* ---- bw_index.c (called from ops_index.c) */
gf_status gf__ag_record_index_select(const gf_tensor *x, int dim, const gf_tensor *index,
                                     gf_tensor *y);
gf_status gf__ag_record_gather(const gf_tensor *x, int dim, const gf_tensor *index,
                               gf_tensor *y);
gf_status gf__ag_record_scatter_add(const gf_tensor *x, int dim, const gf_tensor *index,
                                    const gf_tensor *src, gf_tensor *y);
gf_status gf__ag_record_index_add(const gf_tensor *x, int dim, const gf_tensor *index,
                                  const gf_tensor *src, gf_tensor *y);
gf_status gf__ag_record_cat(gf_tensor *const *tensors, int count, int dim, gf_tensor *y);
gf_status gf__ag_record_tri(bool upper, const gf_tensor *x, int64_t diagonal, gf_tensor *y);

/* ---- bw_nn.c (called from ops_nn.c) */
gf_status gf__ag_record_conv2d(const gf_tensor *x, const gf_tensor *w, const gf_tensor *bias,
                               const gf_conv2d_opts *opts, gf_tensor *y);
gf_status gf__ag_record_conv2d_backward_input(const gf_tensor *grad_y, const gf_tensor *w,
                                              const int64_t *input_sizes,
                                              const gf_conv2d_opts *opts, gf_tensor *gx);
gf_status gf__ag_record_conv2d_backward_weight(const gf_tensor *grad_y, const gf_tensor *x,
                                               const int64_t *weight_sizes,
                                               const gf_conv2d_opts *opts, gf_tensor *gw);
gf_status gf__ag_record_max_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts,
                                   const gf_tensor *indices, gf_tensor *y);
gf_status gf__ag_record_max_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *indices,
                                            const gf_tensor *x, const gf_pool2d_opts *opts,
                                            gf_tensor *gx);
gf_status gf__ag_record_avg_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts,
                                   gf_tensor *y);
gf_status gf__ag_record_avg_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *x,
                                            const gf_pool2d_opts *opts, gf_tensor *gx);
gf_status gf__ag_record_layer_norm(const gf_tensor *x, int normalized_rank, const gf_tensor *w,
                                   const gf_tensor *b, double eps, const gf_tensor *mean,
                                   const gf_tensor *rstd, gf_tensor *y);
gf_status gf__ag_record_batch_norm(const gf_tensor *x, const gf_tensor *w, const gf_tensor *b,
                                   const gf_tensor *running_mean, const gf_tensor *running_var,
                                   bool training, double eps, const gf_tensor *save_mean,
                                   const gf_tensor *save_invstd, gf_tensor *y);

#endif
