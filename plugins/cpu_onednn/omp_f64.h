/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_f64.h — f64 kernels in C, for what oneDNN 2.x does not compute in f64:
 * the GEMM and MATMUL (omp_gemm.c), the convolutions on it (omp_conv_f64.c)
 * and the normalisations (omp_norm_f64.c). */
#ifndef GRAFT_ONEDNN_OMP_F64_H
#define GRAFT_ONEDNN_OMP_F64_H

#include "onednn_internal.h"

/* A matrix: element (i, j) at p[i * rs + j * cs] (strides in elements, any
 * sign-free values, 0 included). */
typedef struct odn_gemm_mat {
    double *p;
    int64_t rs, cs;
} odn_gemm_mat;

/* C = A B (or C += A B with accumulate) for every index of the batch dims:
 * product i's operands start batch-stride * index elements after p. A is
 * m x k, B k x n, C m x n; C must not overlap A or B, nor itself. */
typedef struct odn_gemm {
    int64_t m, n, k;
    int batch_rank;
    int64_t batch[GFP_MAX_RANK];
    int64_t a_bs[GFP_MAX_RANK], b_bs[GFP_MAX_RANK], c_bs[GFP_MAX_RANK];
    odn_gemm_mat a, b, c;
    bool accumulate;
} odn_gemm;

/* Runs on odn_threads' threads (one inside a parallel region), packing into
 * ctx's arena; GFP_ERR_OUT_OF_MEMORY (message set) when that fails. */
gfp_status odn_gemm_f64(odn_ctx *ctx, const odn_gemm *g);

/* MATMUL f64 on shapes the caller checked (a [..., M, K], b [..., K, N],
 * y [..., M, N], equal batch sizes, stride-0 batch dims in a and b allowed). */
gfp_status odn_matmul_f64(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y);

/* MATMUL f32 / bf16 on oneDNN's matmul (onednn_matmul.c), same contract,
 * and k > 0; ODN_FALLBACK when oneDNN has no primitive for it. */
gfp_status odn_matmul_dnnl(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y);

/* MATMUL c64 / c128 (omp_complex_gemm.c), same contract, k > 0, an output
 * that does not overlap itself: one real GEMM of the parts (c64 on
 * odn_matmul_dnnl, c128 on odn_matmul_f64). ODN_FALLBACK when that cannot
 * run (no scratch memory, no oneDNN primitive) before y is written. */
gfp_status odn_matmul_complex(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y);

/* CONV2D, CONV2D_BACKWARD_INPUT / _WEIGHT in f64 (omp_conv_f64.c);
 * ODN_FALLBACK for anything else. */
gfp_status odn_conv_f64(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                        const gfp_tensor *const *out, uint32_t n_out, const void *params);

/* CONV2D and CONV2D_BACKWARD_WEIGHT in f32 with few input taps, stride 1
 * (omp_conv_thin.c); ODN_FALLBACK for anything else, before any write. */
gfp_status odn_conv_thin(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params);

/* LAYER_NORM and BATCH_NORM with an f64 x (omp_norm_f64.c); ODN_FALLBACK
 * for anything else. */
gfp_status odn_norm_f64(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                        const gfp_tensor *const *out, uint32_t n_out, const void *params);

#endif
