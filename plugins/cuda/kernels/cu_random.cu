/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_random.cu — GFP_OP_RANDOM: the ABI's counter-based streams, one thread
 * per element, any output strides (element i is the i-th in row-major order).
 * The numbers come from cu_philox.h, which the host tests check against the
 * reference plugin. Bernoulli values store as 0/1 into any dtype, exactly as
 * the reference's integer store does. */
#include "cu_common.cuh"
#include "cu_philox.h"

__global__ void k_random(cuk_tensor y, int64_t n, uint32_t kind, uint64_t seed, uint64_t offset,
                         double a, double b) {
    const int single = y.dtype == GFP_F32 || y.dtype == GFP_F16 || y.dtype == GFP_BF16;
    CU_GRID_LOOP(i, n) {
        double v = cu_random_value(kind, single, seed, offset + (uint64_t)i, a, b);
        int64_t off = cu_tensor_offset(y, i);
        if (kind == GFP_RANDOM_BERNOULLI)
            cu_store_i64(y.data, y.dtype, off, v != 0.0);
        else
            cu_store_f64(y.data, y.dtype, off, v);
    }
}

extern "C" cudaError_t cuk_random(cudaStream_t s, const cuk_tensor *y, uint32_t kind,
                                  uint64_t seed, uint64_t offset, double a, double b) {
    int64_t n = 1;
    for (int d = 0; d < y->rank; d++) n *= y->sizes[d];
    k_random<<<cu_blocks(n), CU_THREADS, 0, s>>>(*y, n, kind, seed, offset, a, b);
    return cu_launched();
}
