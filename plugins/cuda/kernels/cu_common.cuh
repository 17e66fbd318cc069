/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_common.cuh — what the CUDA kernels share: element loads and stores with
 * the reference plugin's conversion rules, index arithmetic, launch shapes.
 *
 * Conversions (as plugins/reference/ref_util.c defines them):
 *  - float -> integer truncates toward zero, saturates, and gives 0 for NaN;
 *  - integer -> integer narrows modulo 2^32 (two's complement);
 *  - anything -> bool is value != 0 (NaN is true);
 *  - f16 and bf16 convert through float, rounding to nearest even. */
#ifndef GRAFT_CU_COMMON_CUH
#define GRAFT_CU_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "pk_convert.h"

#include "cuda_kernels.h"

#define CU_THREADS 256

/* Blocks for a grid-stride loop over n items. */
static inline unsigned cu_blocks(int64_t n, int threads = CU_THREADS) {
    int64_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > 65535LL * 8) b = 65535LL * 8;
    return (unsigned)b;
}

#define CU_GRID_LOOP(i, n)                                                                  \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);               \
         i += (int64_t)blockDim.x * gridDim.x)

/* Launch status of what was just enqueued. */
static inline cudaError_t cu_launched(void) { return cudaGetLastError(); }

/* ------------------------------------------------------------ conversions */
/* float -> integer: pk_trunc_i64 and pk_trunc_i32 of pk_convert.h. */

__device__ __forceinline__ float cu_h2f(uint16_t bits) {
    return __half2float(__ushort_as_half(bits));
}
__device__ __forceinline__ float cu_b2f(uint16_t bits) {
    return __bfloat162float(__ushort_as_bfloat16(bits));
}
__device__ __forceinline__ uint16_t cu_f2h(float v) { return __half_as_ushort(__float2half_rn(v)); }
__device__ __forceinline__ uint16_t cu_f2b(float v) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}
__device__ __forceinline__ uint16_t cu_d2h(double v) { return __half_as_ushort(__double2half(v)); }
__device__ __forceinline__ uint16_t cu_d2b(double v) {
    return __bfloat16_as_ushort(__double2bfloat16(v));
}

/* Element off (in elements) of data, of dtype dt, as a double. */
__device__ __forceinline__ double cu_load_f64(const void *data, int32_t dt, int64_t off) {
    switch (dt) {
    case GFP_F32: return ((const float *)data)[off];
    case GFP_F64: return ((const double *)data)[off];
    case GFP_I32: return ((const int32_t *)data)[off];
    case GFP_I64: return (double)((const int64_t *)data)[off];
    case GFP_BOOL: return ((const uint8_t *)data)[off] != 0;
    case GFP_F16: return cu_h2f(((const uint16_t *)data)[off]);
    case GFP_BF16: return cu_b2f(((const uint16_t *)data)[off]);
    default: return 0.0;
    }
}

__device__ __forceinline__ int64_t cu_load_i64(const void *data, int32_t dt, int64_t off) {
    switch (dt) {
    case GFP_F32: return pk_trunc_i64(((const float *)data)[off]);
    case GFP_F64: return pk_trunc_i64(((const double *)data)[off]);
    case GFP_I32: return ((const int32_t *)data)[off];
    case GFP_I64: return ((const int64_t *)data)[off];
    case GFP_BOOL: return ((const uint8_t *)data)[off] != 0;
    case GFP_F16: return pk_trunc_i64(cu_h2f(((const uint16_t *)data)[off]));
    case GFP_BF16: return pk_trunc_i64(cu_b2f(((const uint16_t *)data)[off]));
    default: return 0;
    }
}

/* x != 0 for any stored dtype (NaN is true, -0.0 false). */
__device__ __forceinline__ bool cu_truth(const void *data, int32_t dt, int64_t off) {
    switch (dt) {
    case GFP_F32: return ((const float *)data)[off] != 0.0f;
    case GFP_F64: return ((const double *)data)[off] != 0.0;
    case GFP_I32: return ((const int32_t *)data)[off] != 0;
    case GFP_I64: return ((const int64_t *)data)[off] != 0;
    case GFP_F16: return cu_h2f(((const uint16_t *)data)[off]) != 0.0f;
    case GFP_BF16: return cu_b2f(((const uint16_t *)data)[off]) != 0.0f;
    default: return ((const uint8_t *)data)[off] != 0;
    }
}

/* Stores v into element off: one rounding for floats, truncation with
 * saturation for integers, v != 0 for bool. */
__device__ __forceinline__ void cu_store_f64(void *data, int32_t dt, int64_t off, double v) {
    switch (dt) {
    case GFP_F32: ((float *)data)[off] = (float)v; break;
    case GFP_F64: ((double *)data)[off] = v; break;
    case GFP_I32: ((int32_t *)data)[off] = pk_trunc_i32(v); break;
    case GFP_I64: ((int64_t *)data)[off] = pk_trunc_i64(v); break;
    case GFP_BOOL: ((uint8_t *)data)[off] = v != 0; break;
    case GFP_F16: ((uint16_t *)data)[off] = cu_d2h(v); break;
    case GFP_BF16: ((uint16_t *)data)[off] = cu_d2b(v); break;
    case GFP_C64: /* a real value v + 0i (FILL, COPY from a real dtype) */
        ((float *)data)[2 * off] = (float)v;
        ((float *)data)[2 * off + 1] = 0.0f;
        break;
    case GFP_C128:
        ((double *)data)[2 * off] = v;
        ((double *)data)[2 * off + 1] = 0.0;
        break;
    default: break;
    }
}

/* Integers stay exact; narrowing to i32 wraps modulo 2^32. */
__device__ __forceinline__ void cu_store_i64(void *data, int32_t dt, int64_t off, int64_t v) {
    switch (dt) {
    case GFP_F32: ((float *)data)[off] = (float)v; break;
    case GFP_F64: ((double *)data)[off] = (double)v; break;
    case GFP_I32: ((int32_t *)data)[off] = (int32_t)(uint32_t)(uint64_t)v; break;
    case GFP_I64: ((int64_t *)data)[off] = v; break;
    case GFP_BOOL: ((uint8_t *)data)[off] = v != 0; break;
    case GFP_F16: ((uint16_t *)data)[off] = cu_f2h((float)v); break;
    case GFP_BF16: ((uint16_t *)data)[off] = cu_f2b((float)v); break;
    case GFP_C64:
    case GFP_C128: cu_store_f64(data, dt, off, (double)v); break;
    default: break;
    }
}

__host__ __device__ __forceinline__ bool pk_is_float(int32_t dt) {
    return dt == GFP_F32 || dt == GFP_F64 || dt == GFP_F16 || dt == GFP_BF16;
}

/* Copies one element of esize bytes (1, 2, 4, 8, or 16 for c128: two
 * 8-byte words, which the buffers' element alignment allows). */
__device__ __forceinline__ void cu_copy_elem(void *dst, int64_t doff, const void *src,
                                             int64_t soff, int esize) {
    switch (esize) {
    case 16:
        ((uint64_t *)dst)[2 * doff] = ((const uint64_t *)src)[2 * soff];
        ((uint64_t *)dst)[2 * doff + 1] = ((const uint64_t *)src)[2 * soff + 1];
        break;
    case 1: ((uint8_t *)dst)[doff] = ((const uint8_t *)src)[soff]; break;
    case 2: ((uint16_t *)dst)[doff] = ((const uint16_t *)src)[soff]; break;
    case 4: ((uint32_t *)dst)[doff] = ((const uint32_t *)src)[soff]; break;
    default: ((uint64_t *)dst)[doff] = ((const uint64_t *)src)[soff]; break;
    }
}

/* Zero of every stored dtype: all bits clear. */
__device__ __forceinline__ void cu_zero_elem(void *dst, int64_t off, int esize) {
    switch (esize) {
    case 16:
        ((uint64_t *)dst)[2 * off] = 0;
        ((uint64_t *)dst)[2 * off + 1] = 0;
        break;
    case 1: ((uint8_t *)dst)[off] = 0; break;
    case 2: ((uint16_t *)dst)[off] = 0; break;
    case 4: ((uint32_t *)dst)[off] = 0; break;
    default: ((uint64_t *)dst)[off] = 0; break;
    }
}

__host__ __device__ __forceinline__ int pk_dtype_size(int32_t dt) {
    switch (dt) {
    case GFP_F32:
    case GFP_I32: return 4;
    case GFP_F64:
    case GFP_I64:
    case GFP_C64: return 8;
    case GFP_C128: return 16;
    case GFP_F16:
    case GFP_BF16: return 2;
    default: return 1;
    }
}

/* ------------------------------------------------------------ indexing */
/* Element offsets of the first n tensors of it at linear position i of its
 * shape (row-major). */
template <int N>
__device__ __forceinline__ void cu_iter_offsets(const cuk_iter &it, int64_t i, int64_t *off) {
#pragma unroll
    for (int k = 0; k < N; k++) off[k] = 0;
    if (it.rank == 1) {
#pragma unroll
        for (int k = 0; k < N; k++) off[k] = i * it.strides[k][0];
        return;
    }
    for (int d = it.rank - 1; d >= 0; d--) {
        int64_t size = it.sizes[d];
        int64_t q = i / size, r = i - q * size;
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += r * it.strides[k][d];
        i = q;
    }
}

/* Element offset of linear position i of t's shape. */
__device__ __forceinline__ int64_t cu_tensor_offset(const cuk_tensor &t, int64_t i) {
    int64_t off = 0;
    for (int d = t.rank - 1; d >= 0; d--) {
        int64_t size = t.sizes[d];
        int64_t q = i / size, r = i - q * size;
        off += r * t.strides[d];
        i = q;
    }
    return off;
}

/* Multi-index of linear position i of t's shape. */
__device__ __forceinline__ void cu_tensor_index(const cuk_tensor &t, int64_t i, int64_t *idx) {
    for (int d = t.rank - 1; d >= 0; d--) {
        int64_t size = t.sizes[d];
        int64_t q = i / size;
        idx[d] = i - q * size;
        i = q;
    }
}

__device__ __forceinline__ int64_t cu_offset_of(const cuk_tensor &t, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < t.rank; d++) off += idx[d] * t.strides[d];
    return off;
}

__device__ __forceinline__ int64_t pk_numel(const cuk_tensor &t) {
    int64_t n = 1;
    for (int d = 0; d < t.rank; d++) n *= t.sizes[d];
    return n;
}

#endif
