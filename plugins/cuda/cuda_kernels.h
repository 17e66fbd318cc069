/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_kernels.h — the boundary between the plugin's host C and its CUDA
 * kernels (kernels/ *.cu, compiled by nvcc).
 *
 * Host code describes tensors with device addresses, sizes and strides in
 * elements (cuk_tensor, cuk_iter, cuk_lines); each cuk_* launcher enqueues its
 * kernels on the given stream and returns the launch status
 * (cudaGetLastError), never waiting for the kernels. Arguments have been
 * validated by the host side before a launcher is called. */
#ifndef GRAFT_CUDA_KERNELS_H
#define GRAFT_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "graft_plugin.h"
#include "pk_adam.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CUK_MAX_RANK GFP_MAX_RANK

/* One tensor: the device address of its element 0 (buffer + byte offset). */
typedef struct cuk_tensor {
    void *data;
    int32_t dtype; /* gfp_dtype */
    int32_t rank;
    int64_t sizes[CUK_MAX_RANK];
    int64_t strides[CUK_MAX_RANK];
} cuk_tensor;

/* Up to four tensors walked together over one shape: t[0] is the output, the
 * others the inputs. The host merges dims that every tensor walks as one
 * (cuda_ops.c), so contiguous operands come down to rank 1, stride 1. */
#define CUK_ITER_TENSORS 4
typedef struct cuk_iter {
    int32_t rank;
    int32_t n_tensors;
    int64_t numel;
    int64_t sizes[CUK_MAX_RANK];
    int64_t strides[CUK_ITER_TENSORS][CUK_MAX_RANK];
    void *data[CUK_ITER_TENSORS];
    int32_t dtype[CUK_ITER_TENSORS];
} cuk_iter;

/* Lines: every output position (kept dims) owns one line of input elements
 * (reduced dims). Reductions, softmax and the normalisations are written
 * over it; each op says which tensor sits in which slot (cu_reduce.cu,
 * cu_norm.cu). Strides of a slot in the dims it does not span are 0. */
#define CUK_LINE_TENSORS 8
typedef struct cuk_lines {
    int32_t n_keep, n_red;
    int64_t n_out;  /* product of keep_sizes */
    int64_t n_line; /* product of red_sizes */
    int64_t keep_sizes[CUK_MAX_RANK];
    int64_t red_sizes[CUK_MAX_RANK];
    int64_t keep_str[CUK_LINE_TENSORS][CUK_MAX_RANK];
    int64_t red_str[CUK_LINE_TENSORS][CUK_MAX_RANK];
    void *data[CUK_LINE_TENSORS]; /* NULL: absent */
    int32_t dtype[CUK_LINE_TENSORS];
    double p0, p1, p2; /* per op: correction; eps, momentum */
    int32_t flag;      /* per op: training */
} cuk_lines;

/* ---- elementwise (cu_elementwise.cu, cu_copy.cu) */
typedef struct cuk_unary_params {
    double pa, pb;         /* float ops: scalar params, or the clamp bounds */
    int64_t ia, ib;        /* integer ops: the clamp bounds */
    int32_t has_pa, has_pb; /* clamp: each bound present (and not NaN) */
} cuk_unary_params;

cudaError_t cuk_unary(cudaStream_t s, uint32_t op, const cuk_iter *it, const cuk_unary_params *p);
cudaError_t cuk_binary(cudaStream_t s, uint32_t op, const cuk_iter *it);
cudaError_t cuk_compare(cudaStream_t s, uint32_t op, const cuk_iter *it);
/* LOGICAL_NOT (two tensors), LOGICAL_AND / LOGICAL_OR (three). */
cudaError_t cuk_logical(cudaStream_t s, uint32_t op, const cuk_iter *it);
cudaError_t cuk_where(cudaStream_t s, const cuk_iter *it);
/* y = x converted (t[0] = y, t[1] = x). */
cudaError_t cuk_copy(cudaStream_t s, const cuk_iter *it);
/* Every element of t[0] = value (float and bool dtypes) or ivalue (integer
 * dtypes, integer != 0), converted as COPY converts. */
cudaError_t cuk_fill(cudaStream_t s, const cuk_iter *it, double value, int64_t ivalue,
                     int integer);
/* n elements of psize bytes at dst (buffer_fill). */
cudaError_t cuk_fill_bytes(cudaStream_t s, void *dst, uint64_t n, uint64_t pattern, int psize);
/* y[i] = start + i*step; exact: integer output from integral start and step,
 * computed as istart + i*istep in wrapping int64. */
cudaError_t cuk_arange(cudaStream_t s, const cuk_tensor *y, double start, double step, int exact,
                       int64_t istart, int64_t istep);
/* TRIL (lower != 0) or TRIU over an iterator whose last two dims are the
 * matrix rows and columns (not merged). */
cudaError_t cuk_tri(cudaStream_t s, const cuk_iter *it, int lower, int64_t diagonal);

/* ---- complex (cu_complex.cu): codes are plugins/common/pk_complex.c's
 * (pk_complex_unary_code, pk_complex_binary_code), the switch of
 * kernels/cu_complex_math.h. */
/* y (t[0], c64 or c128) = x (t[1], the other complex dtype or a real one). */
cudaError_t cuk_cx_copy(cudaStream_t s, const cuk_iter *it);
/* y = op(x), one complex dtype; a: POW_SCALAR's exponent. */
cudaError_t cuk_cx_unary(cudaStream_t s, int code, const cuk_iter *it, double a);
/* y (the part dtype) = |x|. */
cudaError_t cuk_cx_abs(cudaStream_t s, const cuk_iter *it);
cudaError_t cuk_cx_binary(cudaStream_t s, int code, const cuk_iter *it);
/* y (bool) = (a == b), or a != b when ne. */
cudaError_t cuk_cx_compare(cudaStream_t s, int ne, const cuk_iter *it);
/* The FFT's moves: y = x * scale, conjugated when conj; real_part drops the
 * imaginary part (complex x to real y, or zeroes it in complex y). x and y
 * are each complex or real, of one precision. */
cudaError_t cuk_cx_move(cudaStream_t s, const cuk_iter *it, double scale, int conj,
                        int real_part);
/* SUM (op 0), MEAN (1) or PROD (2) of the lines (slot 0 = x, 1 = y). */
cudaError_t cuk_cx_reduce(cudaStream_t s, int op, const cuk_lines *l);

/* ---- optimisers (cu_optim.cu): ADAM_UPDATE over seven tensors of one
 * shape (p, g, m, v in; p, m, v out), any strides, with the constants of
 * plugins/common/pk_adam.h. */
typedef struct cuk_adam {
    int32_t rank;
    int32_t dtype; /* f32 or f64 */
    int64_t numel;
    int64_t sizes[CUK_MAX_RANK];
    int64_t strides[7][CUK_MAX_RANK];
    void *data[7];
    int32_t contiguous; /* every tensor row-major: offsets are the index */
    pk_adam_consts c;
} cuk_adam;
cudaError_t cuk_adam_update(cudaStream_t s, const cuk_adam *a);

/* ---- LSTM cells (cu_rnn.cu): rank-2 tensors by their two strides.
 * Forward: data 0 mm, 1 p, 2 c_prev, 3 act, 4 c, 5 tc, 6 h. Backward: 0 act,
 * 1 c_prev, 2 tc, 3 dh, 4 dc, 5 dy (NULL: none), 6 dgates, 7 dc_prev. */
typedef struct cuk_lstm {
    int32_t dtype; /* f32 or f64 */
    int64_t n, h;
    void *data[8];
    int64_t s0[8], s1[8];
} cuk_lstm;
cudaError_t cuk_lstm_cell(cudaStream_t s, const cuk_lstm *l);
cudaError_t cuk_lstm_cell_backward(cudaStream_t s, const cuk_lstm *l);

/* ---- random (cu_random.cu): the ABI's Philox4x32-10 streams. */
cudaError_t cuk_random(cudaStream_t s, const cuk_tensor *y, uint32_t kind, uint64_t seed,
                       uint64_t offset, double a, double b);

/* ---- reductions and normalisation (cu_reduce.cu, cu_norm.cu) */
cudaError_t cuk_reduce(cudaStream_t s, uint32_t op, const cuk_lines *l);
cudaError_t cuk_softmax(cudaStream_t s, uint32_t op, const cuk_lines *l);
/* SOFTMAX_BACKWARD / LOG_SOFTMAX_BACKWARD: slots 0 grad_y, 1 y, 2 grad_x. */
cudaError_t cuk_softmax_backward(cudaStream_t s, uint32_t op, const cuk_lines *l);
cudaError_t cuk_layer_norm(cudaStream_t s, const cuk_lines *l);
/* BATCH_NORM_BACKWARD: kept the channel; slots 0 grad_y, 1 x, 2 grad_x,
 * per channel 3 save_mean, 4 save_invstd, 5 weight (NULL: 1), 6
 * grad_weight, 7 grad_bias. */
cudaError_t cuk_batch_norm_backward(cudaStream_t s, const cuk_lines *l);
/* LAYER_NORM_BACKWARD: rows (kept the leading dims; slots 0 grad_y, 1 x,
 * 2 grad_x, 3 mean, 4 rstd, 5 weight or NULL) for grad_x, cols (kept the
 * normalised dims, along the rows; slots 0 grad_y, 1 x, 3 mean, 4 rstd,
 * 6 grad_weight, 7 grad_bias) for the parameters' gradients. */
cudaError_t cuk_layer_norm_backward(cudaStream_t s, const cuk_lines *rows, const cuk_lines *cols);
cudaError_t cuk_batch_norm(cudaStream_t s, const cuk_lines *l);

/* ---- matmul without BLAS (cu_matmul.cu): integer dtypes, any strides. */
cudaError_t cuk_matmul(cudaStream_t s, const cuk_tensor *a, const cuk_tensor *b,
                       const cuk_tensor *y);

/* ---- indexing (cu_index.cu) */
/* scratch[0] = the first (row-major) position of index whose value lies
 * outside [0, limit) (INT64_MAX when none), scratch[1] = that value.
 * index is walked as an iterator of one tensor. */
cudaError_t cuk_index_check(cudaStream_t s, const cuk_tensor *index, int64_t lo, int64_t limit,
                            int64_t *scratch);
cudaError_t cuk_index_op(cudaStream_t s, uint32_t op, const cuk_tensor *data,
                         const cuk_tensor *index, const cuk_tensor *dst, int dim);

/* ---- convolution and pooling without cuDNN (cu_conv.cu, cu_pool.cu) */
typedef struct cuk_conv {
    int64_t n, ci, co, h, w, kh, kw, ho, wo;
    int64_t groups, cig, cog;
    int64_t sh, sw, ph, pw, dh, dw;
} cuk_conv;
/* x is input-shaped, w weight-shaped, y output-shaped; op says which one is
 * written (y for CONV2D, x for BACKWARD_INPUT, w for BACKWARD_WEIGHT). */
cudaError_t cuk_conv2d(cudaStream_t s, uint32_t op, const cuk_conv *g, const cuk_tensor *x,
                       const cuk_tensor *w, const cuk_tensor *y, const cuk_tensor *bias);

typedef struct cuk_pool {
    int64_t n, c, h, w, ho, wo;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int32_t include_pad;
} cuk_pool;
cudaError_t cuk_max_pool(cudaStream_t s, const cuk_pool *g, const cuk_tensor *x,
                         const cuk_tensor *y, const cuk_tensor *ind);
cudaError_t cuk_max_pool_backward(cudaStream_t s, const cuk_pool *g, const cuk_tensor *gy,
                                  const cuk_tensor *ind, const cuk_tensor *gx);
cudaError_t cuk_avg_pool(cudaStream_t s, const cuk_pool *g, const cuk_tensor *x,
                         const cuk_tensor *y);
cudaError_t cuk_avg_pool_backward(cudaStream_t s, const cuk_pool *g, const cuk_tensor *gy,
                                  const cuk_tensor *gx);

/* cudaSuccess when this build holds code the current device can run. */
cudaError_t cuk_probe(void);

#ifdef __cplusplus
}
#endif
#endif
