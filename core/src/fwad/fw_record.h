/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_record.h — the forward-mode half of ag_record.h.
 *
 * Each gf__ag_record_* (and the few ops that record through gf__ag_record
 * directly: complex views, conj, complex abs, the FFT primitives) first
 * calls its gf__fw_* here with the same arguments. That is the one place an
 * op meets forward mode: the function computes the output tangents by the
 * op's jvp rule (fw_rules_*.c) when a dual level is open and an input has a
 * tangent at it, and returns GF_OK at once otherwise. */
#ifndef GRAFT_FW_RECORD_H
#define GRAFT_FW_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* ---- fw_rules_elementwise.c */
gf_status gf__fw_copy(const gf_tensor *in, gf_tensor *out, const char *name);
gf_status gf__fw_unary(gfp_op op, const gf_tensor *x, gf_tensor *y, double a, double b);
gf_status gf__fw_binary(gfp_op op, const gf_tensor *a, const gf_tensor *b, gf_tensor *y);
gf_status gf__fw_where(const gf_tensor *cond, const gf_tensor *a, const gf_tensor *b,
                       gf_tensor *y);
gf_status gf__fw_masked_fill(const gf_tensor *x, const gf_tensor *mask, gf_tensor *y);
gf_status gf__fw_mod(bool python, const gf_tensor *a, const gf_tensor *b, gf_tensor *y);
gf_status gf__fw_clamp_tensor(const gf_tensor *x, const gf_tensor *min, const gf_tensor *max,
                              gf_tensor *y);
/* complex/complex_grad.c: kind is a gf_cx_view */
gf_status gf__fw_cx_view(const gf_tensor *in, gf_tensor *out, int kind);
gf_status gf__fw_cx_complex(const gf_tensor *re, const gf_tensor *im, gf_tensor *z);
gf_status gf__fw_cx_conj(const gf_tensor *z, gf_tensor *y);
gf_status gf__fw_cx_abs(const gf_tensor *z, gf_tensor *y);

/* ---- fw_rules_reduce.c */
gf_status gf__fw_reduce(gfp_op op, const gf_tensor *x, gf_tensor *y, uint32_t mask, bool keepdim,
                        double correction);
gf_status gf__fw_std(const gf_tensor *x, gf_tensor *y, uint32_t mask, bool keepdim,
                     double correction);
gf_status gf__fw_extreme_dim(gfp_op op, const gf_tensor *x, gf_tensor *values,
                             const gf_tensor *indices, int dim, bool keepdim);
gf_status gf__fw_matmul(const gf_tensor *a, const gf_tensor *b, gf_tensor *y);
gf_status gf__fw_softmax(gfp_op op, const gf_tensor *x, gf_tensor *y, int dim);
gf_status gf__fw_index_select(const gf_tensor *x, int dim, const gf_tensor *index, gf_tensor *y);
gf_status gf__fw_gather(const gf_tensor *x, int dim, const gf_tensor *index, gf_tensor *y);
gf_status gf__fw_scatter_add(const gf_tensor *x, int dim, const gf_tensor *index,
                             const gf_tensor *src, gf_tensor *y);
gf_status gf__fw_index_add(const gf_tensor *x, int dim, const gf_tensor *index,
                           const gf_tensor *src, gf_tensor *y);
gf_status gf__fw_cat(gf_tensor *const *tensors, int count, int dim, gf_tensor *y);
gf_status gf__fw_tri(bool upper, const gf_tensor *x, int64_t diagonal, gf_tensor *y);

/* ---- fw_rules_nn.c */
gf_status gf__fw_conv2d(const gf_tensor *x, const gf_tensor *w, const gf_tensor *bias,
                        const gf_conv2d_opts *opts, gf_tensor *y);
gf_status gf__fw_conv2d_backward_input(const gf_tensor *grad_y, const gf_tensor *w,
                                       const int64_t *input_sizes, const gf_conv2d_opts *opts,
                                       gf_tensor *gx);
gf_status gf__fw_conv2d_backward_weight(const gf_tensor *grad_y, const gf_tensor *x,
                                        const int64_t *weight_sizes, const gf_conv2d_opts *opts,
                                        gf_tensor *gw);
gf_status gf__fw_max_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts,
                            const gf_tensor *indices, gf_tensor *y);
gf_status gf__fw_max_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *indices,
                                     const gf_tensor *x, const gf_pool2d_opts *opts,
                                     gf_tensor *gx);
gf_status gf__fw_avg_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts, gf_tensor *y);
gf_status gf__fw_avg_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *x,
                                     const gf_pool2d_opts *opts, gf_tensor *gx);
gf_status gf__fw_layer_norm(const gf_tensor *x, int normalized_rank, const gf_tensor *w,
                            const gf_tensor *b, double eps, gf_tensor *y);
gf_status gf__fw_batch_norm(const gf_tensor *x, const gf_tensor *w, const gf_tensor *b,
                            const gf_tensor *running_mean, const gf_tensor *running_var,
                            bool training, double eps, gf_tensor *y);

/* ---- fw_rules_views.c */
/* kind is a gf_view_kind (ag_internal.h). */
gf_status gf__fw_view(const gf_tensor *in, gf_tensor *out, int kind, const int64_t *params,
                      int n_params, bool is_view);
gf_status gf__fw_fft_c2c(const gf_tensor *x, gf_tensor *y, const int *dims, int nd, bool inverse,
                         double scale);
gf_status gf__fw_fft_r2c(const gf_tensor *x, gf_tensor *y, const int *dims, int nd, double scale);
gf_status gf__fw_fft_c2r(const gf_tensor *x, gf_tensor *y, const int *dims, int nd, double scale);

#endif
