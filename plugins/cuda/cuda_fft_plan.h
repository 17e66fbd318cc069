/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_fft_plan.h — how the CUDA plugin computes one FFT launch, as a list
 * of steps, decided in plain C with no CUDA in it.
 *
 * cuFFT transforms batches of lines that each sit at one stride, the
 * batches at one distance (its "advanced layout"). A launch of the ABI's FFT
 * (any dims, any strides, C2C / R2C / C2R, either sign, a scale) becomes:
 *   1. a MOVE of x into a contiguous work array (for R2C and C2R with the
 *      onesided dim last, so its lines are contiguous);
 *   2. for each listed dim, an EXEC of a batched cuFFT plan: in place along
 *      a dim of the work array, as one batch (the last dim, or the first
 *      with unit distance), as a few executions of the inner lines (at most
 *      CUF_MAX_REPS), or else between two MOVEs that transpose the dim last;
 *      the onesided dim's R2C or C2R runs out of place between work arrays;
 *   3. a MOVE into y with the scale.
 * The signs cuFFT lacks come from conjugation: R2C with +1 is the
 * conjugate of R2C with -1, and C2R with -1 is C2R (+1) of the conjugated
 * input. Before C2R the imaginary parts of bin 0 and, for even n, bin n/2
 * are zeroed, so that the result is the ABI's (the real part of the
 * conjugate-symmetric extension) whatever cuFFT makes of those parts; a
 * line of one element is a MOVE rather than a plan of length 1.
 *
 * cuda_fft.c runs the steps (MOVEs through cuk_cx_move, EXECs through
 * cuFFT); tests/cuda/test_cuda_complex.c runs them on the host with a plain
 * DFT and compares the result with the reference plugin, no GPU needed. */
#ifndef GRAFT_CUDA_FFT_PLAN_H
#define GRAFT_CUDA_FFT_PLAN_H

#include <stdint.h>

#include "graft_plugin.h"

/* The arrays a step names: the launch's x and y, and three work arrays. */
enum { CUF_X = 0, CUF_Y = 1, CUF_W0 = 2, CUF_W1 = 3, CUF_W2 = 4, CUF_ARRAYS = 5 };
enum { CUF_MOVE = 0, CUF_EXEC = 1 };
enum { CUF_C2C = 0, CUF_R2C = 1, CUF_C2R = 2 };
/* Most executions of one plan for one dim before a transpose is cheaper. */
#define CUF_MAX_REPS 16
#define CUF_MAX_STEPS (4 * GFP_MAX_RANK + 8)

/* A strided view of an array, in elements of its dtype. */
typedef struct cuf_view {
    int32_t array; /* CUF_X .. CUF_W2 */
    int32_t dtype;
    int32_t rank;
    int64_t offset;
    int64_t sizes[GFP_MAX_RANK];
    int64_t strides[GFP_MAX_RANK];
} cuf_view;

/* One batched 1-D cuFFT plan run reps times: execution r reads line b,
 * element i at in_offset + r * in_step + b * idist + i * istride of array
 * in (elements of the input's dtype), and writes likewise. */
typedef struct cuf_exec {
    int32_t type;   /* CUF_C2C, CUF_R2C, CUF_C2R */
    int32_t sign;   /* C2C: -1 or +1; R2C is -1 and C2R +1 */
    int32_t dbl;    /* 1: double precision (c128, f64) */
    int64_t n;      /* the signal length */
    int64_t batch;
    int64_t istride, idist, ostride, odist;
    int32_t in, out;
    int64_t in_offset, out_offset;
    int64_t reps, in_step, out_step;
} cuf_exec;

typedef struct cuf_step {
    int32_t kind; /* CUF_MOVE, CUF_EXEC */
    /* MOVE: dst = src * scale (conjugated with conj; real_part drops the
     * imaginary part); both views have one shape. */
    cuf_view dst, src;
    double scale;
    int32_t conj, real_part;
    cuf_exec ex;
} cuf_step;

typedef struct cuf_plan {
    int32_t n_steps;
    cuf_step steps[CUF_MAX_STEPS];
    /* The work arrays' lengths (0: unused) and dtypes. */
    int64_t work_elems[3];
    int32_t work_dtype[3];
} cuf_plan;

/* The steps of FFT(x) -> y for params p, which pk_check_fft has accepted,
 * with x and y non-empty. Returns 0, or -1 when a size overflows int64
 * (the plan is then unusable). */
int cuf_plan_make(const gfp_fft_params *p, const gfp_tensor *x, const gfp_tensor *y,
                  cuf_plan *plan);

#endif
