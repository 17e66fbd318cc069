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

#ifdef __CUDACC__
#define CU_HD static __host__ __device__ __forceinline__
#else
#include <math.h>
#define CU_HD static inline
#endif

#define CU_PHILOX_M0 0xD2511F53u
#define CU_PHILOX_M1 0xCD9E8D57u
#define CU_PHILOX_W0 0x9E3779B9u
#define CU_PHILOX_W1 0xBB67AE85u
#define CU_TWO_PI 6.28318530717958647692

/* Philox4x32 with 10 rounds: ctr is replaced by the four output words. */
CU_HD void cu_philox4x32_10(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)CU_PHILOX_M0 * ctr[0];
        uint64_t p1 = (uint64_t)CU_PHILOX_M1 * ctr[2];
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t c1 = ctr[1], c3 = ctr[3];
        ctr[0] = hi1 ^ c1 ^ k0;
        ctr[1] = lo1;
        ctr[2] = hi0 ^ c3 ^ k1;
        ctr[3] = lo0;
        k0 += CU_PHILOX_W0;
        k1 += CU_PHILOX_W1;
    }
}

/* [0, 1) from the top 24 bits of one word. */
CU_HD double cu_u24(uint32_t w) { return (double)(w >> 8) * 0x1p-24; }

/* [0, 1) from 53 bits of two words. */
CU_HD double cu_u53(uint32_t w, uint32_t v) {
    return ((double)((uint64_t)(w >> 5) * 67108864u + (v >> 6))) * 0x1p-53;
}

/* The number of counter c for kind (gfp_random_kind); single: the output is
 * single precision (f32, f16, bf16), which draws 24-bit uniforms. Bernoulli
 * gives 1.0 or 0.0. */
CU_HD double cu_random_value(uint32_t kind, int single, uint64_t seed, uint64_t c, double a,
                             double b) {
    uint32_t r[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
    cu_philox4x32_10(r, (uint32_t)seed, (uint32_t)(seed >> 32));
    if (kind == 2u) return cu_u24(r[0]) < a ? 1.0 : 0.0; /* GFP_RANDOM_BERNOULLI */
    if (kind == 0u) return a + (b - a) * (single ? cu_u24(r[0]) : cu_u53(r[0], r[1]));
    /* GFP_RANDOM_NORMAL: Box-Muller; u1 in (0, 1] keeps the log finite. */
    double u1 = 1.0 - (single ? cu_u24(r[0]) : cu_u53(r[0], r[1]));
    double u2 = single ? cu_u24(r[1]) : cu_u53(r[2], r[3]);
    return a + b * sqrt(-2.0 * log(u1)) * cos(CU_TWO_PI * u2);
}

#endif
