/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_fft.h — the cpu_onednn plugin's own FFT (omp_fft.c, omp_fft_kernels.c).
 *
 * The op is split into 1-D jobs, one per transformed dim: every line of the
 * tensor along that dim is transformed, read from one strided array and
 * written to another (or the same: a line is read whole before it is
 * written). The kernels are written once for a real type T (float for c64,
 * double for c128, the precision torch computes in) in omp_fft_impl.h. */
#ifndef GRAFT_OMP_FFT_H
#define GRAFT_OMP_FFT_H

#include <stdbool.h>
#include <stdint.h>

#include "onednn_internal.h"

/* What one job does to each line. */
typedef enum odn_fft_line {
    ODN_FFT_LINE_C2C, /* n complex -> n complex */
    ODN_FFT_LINE_R2C, /* n real -> n/2 + 1 complex */
    ODN_FFT_LINE_C2R  /* n/2 + 1 complex -> n real (imag of bins 0 and n/2 ignored) */
} odn_fft_line;

typedef struct odn_fft_job {
    odn_fft_line line;
    int64_t n;    /* the signal length */
    int sign;     /* -1 forward, +1 inverse */
    double scale; /* applied to every output element */
    /* Byte address of element 0 of source and destination; whether each is
     * real (T) or complex (T re, im); element strides along the line. */
    char *src, *dst;
    bool src_real, dst_real;
    int64_t src_stride, dst_stride;
    /* The other dims: lines are enumerated row-major over them. */
    int batch_rank;
    int64_t batch_sizes[GFP_MAX_RANK];
    int64_t src_bstride[GFP_MAX_RANK], dst_bstride[GFP_MAX_RANK];
} odn_fft_job;

/* Whether the fast kernels take a line of length n of this kind (every prime
 * factor of the complex length at most 13, and not too long). */
bool odn_fft_takes_f32(odn_fft_line line, int64_t n);
bool odn_fft_takes_f64(odn_fft_line line, int64_t n);
/* Runs the job; GFP_OK, or OUT_OF_MEMORY with a message. */
gfp_status odn_fft_run_f32(const odn_fft_job *job);
gfp_status odn_fft_run_f64(const odn_fft_job *job);

/* ---- plans (omp_fft.c): built once per key, shared, never freed while the
 * plugin is loaded (a bounded number; past it, a plan belongs to its
 * launch). */
/* Plan kinds (+ 4: a real pass follows the complex transform). */
enum { FFT_PLAN_LINE = 1, FFT_PLAN_FOUR = 2 };

typedef struct odn_fft_plan_key {
    int kind; /* the kernels' own numbering */
    int64_t n;
    int sign;
    int dtype; /* GFP_F32 / GFP_F64 */
} odn_fft_plan_key;
typedef void *(*odn_fft_plan_build)(const odn_fft_plan_key *key);
typedef void (*odn_fft_plan_free)(void *plan);
/* The plan of key, built by build on first use; NULL when out of memory.
 * *owned is set when the cache was full: the caller frees the plan. */
void *odn_fft_plan_get(const odn_fft_plan_key *key, odn_fft_plan_build build, bool *owned);

/* The FFT family's launch: ODN_FALLBACK for what the reference must do. */
gfp_status odn_fft_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                          const gfp_tensor *const *out, uint32_t n_out, const void *params);

#endif
