/* SPDX-License-Identifier: BSD-3-Clause */
/* pk_convert.h — float -> integer as the ABI defines it (C leaves
 * out-of-range and NaN undefined and hardware disagrees: x86 gives INT_MIN,
 * CUDA and ARM saturate): truncate toward zero, saturate, NaN -> 0.
 *
 * One copy for the host kernels of every plugin (through plugin_kit.h) and
 * the CUDA kernels (kernels/cu_common.cuh): C11 and CUDA C++ alike, inline so
 * that conversion loops vectorise around them. */
#ifndef GRAFT_PK_CONVERT_H
#define GRAFT_PK_CONVERT_H

#include <stdint.h>

#ifndef PK_HD
#ifdef __CUDACC__
#define PK_HD static __host__ __device__ __forceinline__
#else
#define PK_HD static inline
#endif
#endif

PK_HD int64_t pk_trunc_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX; /* 2^63 */
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

PK_HD int32_t pk_trunc_i32(double v) {
    if (v != v) return 0;
    if (v >= 2147483648.0) return INT32_MAX;
    if (v <= -2147483649.0) return INT32_MIN;
    return (int32_t)v;
}

#endif
