/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_philox.h — the ABI's random numbers, as the RANDOM kernel computes them.
 *
 * Valid CUDA C++ and host C11: the kernel (cu_random.cu) calls these functions
 * on the GPU, and tests/cuda compiles this same file on the host to check it
 * against the reference plugin without a GPU. Element i of an output takes
 * counter c = offset + i (modulo 2^64) under key seed; the words become
 * numbers by the header's formulas, in double, rounded once by the caller.
 * The plugin is compiled with --fmad=false, so a + (b - a) * u rounds twice on
 * the GPU as on the host: uniform and bernoulli numbers are bit-identical to
 * the reference. Normal numbers go through log, sqrt and cos, whose CUDA
 * double versions may differ from the host libm in the last bit. */
#ifndef GRAFT_CU_PHILOX_H
#define GRAFT_CU_PHILOX_H

#include <stdint.h>

#include "pk_philox.h" /* the generator and the maps to [0, 1) */

#ifdef __CUDACC__
#define CU_HD static __host__ __device__ __forceinline__
#else
#include <math.h>
#define CU_HD static inline
#endif

#define CU_TWO_PI 6.28318530717958647692

/* The number of counter c for kind (gfp_random_kind); single: the output is
 * single precision (f32, f16, bf16), which draws 24-bit uniforms. Bernoulli
 * gives 1.0 or 0.0. */
CU_HD double cu_random_value(uint32_t kind, int single, uint64_t seed, uint64_t c, double a,
                             double b) {
    uint32_t r[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
    pk_philox4x32_10(r, (uint32_t)seed, (uint32_t)(seed >> 32));
    if (kind == 2u) return pk_u24(r[0]) < a ? 1.0 : 0.0; /* GFP_RANDOM_BERNOULLI */
    if (kind == 0u) return a + (b - a) * (single ? pk_u24(r[0]) : pk_u53(r[0], r[1]));
    /* GFP_RANDOM_NORMAL: Box-Muller; u1 in (0, 1] keeps the log finite. */
    double u1 = 1.0 - (single ? pk_u24(r[0]) : pk_u53(r[0], r[1]));
    double u2 = single ? pk_u24(r[1]) : pk_u53(r[2], r[3]);
    return a + b * sqrt(-2.0 * log(u1)) * cos(CU_TWO_PI * u2);
}

#endif
