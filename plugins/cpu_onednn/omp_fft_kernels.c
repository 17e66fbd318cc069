/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_fft_kernels.c — the FFT kernels of omp_fft_impl.h in float (for c64,
 * 16 lanes) and double (for c128, 8 lanes). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "omp_fft.h"

#define FT float
#define FV 16
#define FS(name) name##_f32
#define FDT GFP_F32
#include "omp_fft_impl.h"
#undef FT
#undef FV
#undef FS
#undef FDT

#define FT double
#define FV 8
#define FS(name) name##_f64
#define FDT GFP_F64
#include "omp_fft_impl.h"
#undef FT
#undef FV
#undef FS
#undef FDT
