/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_optim.cu — ADAM_UPDATE: one pass over p, g, m, v, writing p, m, v.
 *
 * The arithmetic is plugins/common/pk_adam.h's, in the tensors' dtype, one
 * rounding per operation (nvcc --fmad=false; IEEE division and square root,
 * nvcc's defaults), so the results are the reference's bit for bit. Each
 * thread reads its element of every input before it writes, so outputs
 * that alias their inputs exactly (the core's in-place update) are safe. */
#include <math.h>

#include "cu_common.cuh"

template <typename T>
__device__ __forceinline__ T cu_sqrt_t(T v);
template <>
__device__ __forceinline__ float cu_sqrt_t<float>(float v) {
    return sqrtf(v);
}
template <>
__device__ __forceinline__ double cu_sqrt_t<double>(double v) {
    return sqrt(v);
}

template <typename T>
__global__ void k_adam(cuk_adam a) {
    CU_GRID_LOOP(i, a.numel) {
        int64_t off[7];
        if (a.contiguous) {
            for (int k = 0; k < 7; k++) off[k] = i;
        } else {
            for (int k = 0; k < 7; k++) off[k] = 0;
            int64_t r = i;
            for (int d = a.rank - 1; d >= 0; d--) {
                int64_t q = r / a.sizes[d], e = r - q * a.sizes[d];
                for (int k = 0; k < 7; k++) off[k] += e * a.strides[k][d];
                r = q;
            }
        }
        T p = ((const T *)a.data[0])[off[0]], g = ((const T *)a.data[1])[off[1]];
        T m = ((const T *)a.data[2])[off[2]], v = ((const T *)a.data[3])[off[3]];
        PK_ADAM_ELEMENT(T, cu_sqrt_t<T>, a.c, p, g, m, v);
        ((T *)a.data[4])[off[4]] = p;
        ((T *)a.data[5])[off[5]] = m;
        ((T *)a.data[6])[off[6]] = v;
    }
}

extern "C" cudaError_t cuk_adam_update(cudaStream_t s, const cuk_adam *a) {
    unsigned g = cu_blocks(a->numel);
    if (a->dtype == GFP_F64) k_adam<double><<<g, CU_THREADS, 0, s>>>(*a);
    else k_adam<float><<<g, CU_THREADS, 0, s>>>(*a);
    return cu_launched();
}
