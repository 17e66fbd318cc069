/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_copy.cu — COPY (with dtype conversion), FILL, ARANGE, TRIL/TRIU and the
 * byte-pattern fill behind buffer_fill.
 *
 * COPY follows the reference exactly: the same dtype is copied as bytes (so
 * -0.0 and NaN payloads survive, and an exactly aliased output is harmless); a
 * float source converts through double (one rounding, truncation toward zero
 * for integers); an integer or bool source stays exact through int64. Into
 * complex from another dtype is cu_complex.cu's. */
#include "cu_common.cuh"

template <int ESIZE>
__global__ void k_copy_same(cuk_iter it) {
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[2];
        cu_iter_offsets<2>(it, i, off);
        cu_copy_elem(it.data[0], off[0], it.data[1], off[1], ESIZE);
    }
}

__global__ void k_copy_convert(cuk_iter it) {
    const int32_t ydt = it.dtype[0], xdt = it.dtype[1];
    const bool from_float = pk_is_float(xdt);
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[2];
        cu_iter_offsets<2>(it, i, off);
        if (from_float)
            cu_store_f64(it.data[0], ydt, off[0], cu_load_f64(it.data[1], xdt, off[1]));
        else
            cu_store_i64(it.data[0], ydt, off[0], cu_load_i64(it.data[1], xdt, off[1]));
    }
}

/* FILL converts its value on the device with the stores COPY uses: floats
 * and bool take value, integers take ivalue exactly. */
__global__ void k_fill(cuk_iter it, double value, int64_t ivalue, int integer) {
    const int32_t dt = it.dtype[0];
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[1];
        cu_iter_offsets<1>(it, i, off);
        if (integer)
            cu_store_i64(it.data[0], dt, off[0], ivalue);
        else
            cu_store_f64(it.data[0], dt, off[0], value);
    }
}

template <typename T>
__global__ void k_fill_bytes(T *dst, uint64_t n, T pattern) {
    CU_GRID_LOOP(i, (int64_t)n) dst[i] = pattern;
}

__global__ void k_arange(cuk_tensor y, double start, double step, int exact, int64_t istart,
                         int64_t istep) {
    const int64_t n = y.sizes[0], s = y.strides[0];
    CU_GRID_LOOP(i, n) {
        if (exact)
            cu_store_i64(y.data, y.dtype, i * s,
                         (int64_t)((uint64_t)istart + (uint64_t)i * (uint64_t)istep));
        else
            cu_store_f64(y.data, y.dtype, i * s, start + (double)i * step);
    }
}

/* The iterator keeps the matrix dims apart: the last two of its rank. */
__global__ void k_tri(cuk_iter it, int lower, int64_t diagonal, int esize) {
    const int r = it.rank;
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[2];
        cu_iter_offsets<2>(it, i, off);
        int64_t col = i % it.sizes[r - 1];
        int64_t row = (i / it.sizes[r - 1]) % it.sizes[r - 2];
        int64_t d = col - row;
        bool keep = lower ? d <= diagonal : d >= diagonal;
        if (keep)
            cu_copy_elem(it.data[0], off[0], it.data[1], off[1], esize);
        else
            cu_zero_elem(it.data[0], off[0], esize);
    }
}

extern "C" cudaError_t cuk_copy(cudaStream_t s, const cuk_iter *it) {
    unsigned g = cu_blocks(it->numel);
    if (it->dtype[0] == it->dtype[1]) {
        switch (pk_dtype_size(it->dtype[0])) {
        case 1: k_copy_same<1><<<g, CU_THREADS, 0, s>>>(*it); break;
        case 2: k_copy_same<2><<<g, CU_THREADS, 0, s>>>(*it); break;
        case 4: k_copy_same<4><<<g, CU_THREADS, 0, s>>>(*it); break;
        case 16: k_copy_same<16><<<g, CU_THREADS, 0, s>>>(*it); break;
        default: k_copy_same<8><<<g, CU_THREADS, 0, s>>>(*it); break;
        }
    } else if (it->dtype[0] == GFP_C64 || it->dtype[0] == GFP_C128) {
        return cuk_cx_copy(s, it); /* cu_complex.cu: the other complex dtype, or a real one */
    } else {
        k_copy_convert<<<g, CU_THREADS, 0, s>>>(*it);
    }
    return cu_launched();
}

extern "C" cudaError_t cuk_fill(cudaStream_t s, const cuk_iter *it, double value, int64_t ivalue,
                                int integer) {
    k_fill<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(*it, value, ivalue, integer);
    return cu_launched();
}

extern "C" cudaError_t cuk_fill_bytes(cudaStream_t s, void *dst, uint64_t n, uint64_t pattern,
                                      int psize) {
    unsigned g = cu_blocks((int64_t)n);
    switch (psize) {
    case 2: k_fill_bytes<uint16_t><<<g, CU_THREADS, 0, s>>>((uint16_t *)dst, n, (uint16_t)pattern); break;
    case 4: k_fill_bytes<uint32_t><<<g, CU_THREADS, 0, s>>>((uint32_t *)dst, n, (uint32_t)pattern); break;
    case 8: k_fill_bytes<uint64_t><<<g, CU_THREADS, 0, s>>>((uint64_t *)dst, n, pattern); break;
    default: k_fill_bytes<uint8_t><<<g, CU_THREADS, 0, s>>>((uint8_t *)dst, n, (uint8_t)pattern); break;
    }
    return cu_launched();
}

extern "C" cudaError_t cuk_arange(cudaStream_t s, const cuk_tensor *y, double start, double step,
                                  int exact, int64_t istart, int64_t istep) {
    k_arange<<<cu_blocks(y->sizes[0]), CU_THREADS, 0, s>>>(*y, start, step, exact, istart, istep);
    return cu_launched();
}

extern "C" cudaError_t cuk_tri(cudaStream_t s, const cuk_iter *it, int lower, int64_t diagonal) {
    k_tri<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(*it, lower, diagonal,
                                                      pk_dtype_size(it->dtype[0]));
    return cu_launched();
}
