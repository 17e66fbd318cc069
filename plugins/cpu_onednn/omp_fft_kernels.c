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
#define FI int32_t
#define FMASK(E) {E(0), E(1), E(2), E(3), E(4), E(5), E(6), E(7), E(8), E(9), E(10), E(11), E(12), E(13), E(14), E(15)}
#include "omp_fft_impl.h"
#undef FT
#undef FV
#undef FS
#undef FDT
#undef FI
#undef FMASK

#define FT double
#define FV 8
#define FS(name) name##_f64
#define FDT GFP_F64
#define FI int64_t
#define FMASK(E) {E(0), E(1), E(2), E(3), E(4), E(5), E(6), E(7)}
#include "omp_fft_impl.h"
#undef FT
#undef FV
#undef FS
#undef FDT
#undef FI
#undef FMASK
