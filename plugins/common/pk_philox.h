/* SPDX-License-Identifier: BSD-3-Clause */
/* pk_philox.h — the counter-based generator every GFP_OP_RANDOM kernel draws
 * from (Philox4x32-10), and the maps from its words to [0, 1).
 *
 * Element i of an output depends only on (seed, offset + i), as
 * abi/graft_plugin.h defines it. The reference kernel (ref_random.c), the
 * cpu_onednn plugin's parallel one (omp_random.c) and the CUDA kernel
 * (kernels/cu_philox.h, compiled by nvcc) include this one copy, so they
 * cannot drift apart: it is C11 and CUDA C++ alike, PK_HD making each
 * function callable on the GPU too. */
#ifndef GRAFT_PK_PHILOX_H
#define GRAFT_PK_PHILOX_H

#include <stdint.h>

#ifndef PK_HD
#ifdef __CUDACC__
#define PK_HD static __host__ __device__ __forceinline__
#else
#define PK_HD static inline
#endif
#endif

#define PK_PHILOX_M0 0xD2511F53u
#define PK_PHILOX_M1 0xCD9E8D57u
#define PK_PHILOX_W0 0x9E3779B9u
#define PK_PHILOX_W1 0xBB67AE85u

/* Philox4x32 with 10 rounds: ctr is replaced by the four output words. */
PK_HD void pk_philox4x32_10(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PK_PHILOX_M0 * ctr[0];
        uint64_t p1 = (uint64_t)PK_PHILOX_M1 * ctr[2];
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        uint32_t c1 = ctr[1], c3 = ctr[3];
        ctr[0] = hi1 ^ c1 ^ k0;
        ctr[1] = lo1;
        ctr[2] = hi0 ^ c3 ^ k1;
        ctr[3] = lo0;
        k0 += PK_PHILOX_W0; /* the key schedule; unsigned, so it wraps */
        k1 += PK_PHILOX_W1;
    }
}

/* [0, 1) from the top 24 bits of one word: exact in f32. */
PK_HD double pk_u24(uint32_t w) { return (double)(w >> 8) * 0x1p-24; }

/* [0, 1) from 53 bits of two words: exact in f64. */
PK_HD double pk_u53(uint32_t w, uint32_t v) {
    return ((double)((uint64_t)(w >> 5) * 67108864u + (v >> 6))) * 0x1p-53; /* 2^26 */
}

#endif
