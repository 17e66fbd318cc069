/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_index.cu — INDEX_SELECT, GATHER, SCATTER_ADD, INDEX_ADD, and the index
 * range check that runs before them.
 *
 * The host calls cuk_index_check and reads its verdict before it launches an
 * op, so an out-of-range index is an error with nothing written (as the
 * reference: SCATTER_ADD and INDEX_ADD write in place). The accumulating ops
 * add with atomics: integer sums wrap exactly, float sums may associate in any
 * order. Tensors of rank 0 arrive as rank 1 of one element (host side). */
#include "cu_common.cuh"

__global__ void k_check_init(int64_t *scratch) {
    scratch[0] = INT64_MAX;
    scratch[1] = 0;
}

__global__ void k_check(cuk_tensor index, int64_t n, int64_t lo, int64_t limit, int64_t *scratch) {
    const int64_t *ix = (const int64_t *)index.data;
    CU_GRID_LOOP(p, n) {
        int64_t v = ix[cu_tensor_offset(index, p)];
        if (v < lo || v >= limit) atomicMin((unsigned long long *)&scratch[0], (unsigned long long)p);
    }
}

__global__ void k_check_fetch(cuk_tensor index, int64_t *scratch) {
    if (scratch[0] != INT64_MAX)
        scratch[1] = ((const int64_t *)index.data)[cu_tensor_offset(index, scratch[0])];
}

extern "C" cudaError_t cuk_index_check(cudaStream_t s, const cuk_tensor *index, int64_t lo,
                                       int64_t limit, int64_t *scratch) {
    int64_t n = 1;
    for (int d = 0; d < index->rank; d++) n *= index->sizes[d];
    k_check_init<<<1, 1, 0, s>>>(scratch);
    if (n > 0) k_check<<<cu_blocks(n), CU_THREADS, 0, s>>>(*index, n, lo, limit, scratch);
    k_check_fetch<<<1, 1, 0, s>>>(*index, scratch);
    return cu_launched();
}

/* dst[doff] += src[soff], both of dtype dt. */
__device__ __forceinline__ void atomic_add_elem(void *dst, int64_t doff, const void *src,
                                                int64_t soff, int32_t dt) {
    switch (dt) {
    case GFP_F32: atomicAdd((float *)dst + doff, ((const float *)src)[soff]); break;
    case GFP_F64: atomicAdd((double *)dst + doff, ((const double *)src)[soff]); break;
    case GFP_I32: atomicAdd((int *)dst + doff, ((const int *)src)[soff]); break;
    case GFP_C64: /* part by part */
        atomicAdd((float *)dst + 2 * doff, ((const float *)src)[2 * soff]);
        atomicAdd((float *)dst + 2 * doff + 1, ((const float *)src)[2 * soff + 1]);
        break;
    case GFP_C128:
        atomicAdd((double *)dst + 2 * doff, ((const double *)src)[2 * soff]);
        atomicAdd((double *)dst + 2 * doff + 1, ((const double *)src)[2 * soff + 1]);
        break;
    default:
        atomicAdd((unsigned long long *)dst + doff,
                  (unsigned long long)((const int64_t *)src)[soff]);
        break;
    }
}

/* INDEX_SELECT walks y, INDEX_ADD walks src: position idx takes index[idx[dim]]
 * in the other tensor. */
__global__ void k_select_like(uint32_t op, cuk_tensor data, cuk_tensor index, cuk_tensor dst,
                              int dim, int64_t n, int esize) {
    const bool select = op == GFP_OP_INDEX_SELECT;
    const cuk_tensor &walked = select ? dst : data;
    const cuk_tensor &indexed = select ? data : dst;
    const int64_t *ix = (const int64_t *)index.data;
    const int64_t istride = index.rank ? index.strides[0] : 0;
    CU_GRID_LOOP(p, n) {
        int64_t idx[CUK_MAX_RANK];
        cu_tensor_index(walked, p, idx);
        int64_t walked_off = cu_offset_of(walked, idx);
        idx[dim] = ix[idx[dim] * istride];
        int64_t indexed_off = cu_offset_of(indexed, idx);
        if (select)
            cu_copy_elem(dst.data, walked_off, data.data, indexed_off, esize);
        else
            atomic_add_elem(dst.data, indexed_off, data.data, walked_off, dst.dtype);
    }
}

/* GATHER and SCATTER_ADD walk the index's shape p: the indexed tensor is read
 * or written at p with p[dim] = index[p]. */
__global__ void k_gather_like(uint32_t op, cuk_tensor data, cuk_tensor index, cuk_tensor dst,
                              int dim, int64_t n, int esize) {
    const bool gather = op == GFP_OP_GATHER;
    const cuk_tensor &walked = gather ? dst : data;
    const cuk_tensor &indexed = gather ? data : dst;
    const int64_t *ix = (const int64_t *)index.data;
    CU_GRID_LOOP(p, n) {
        int64_t idx[CUK_MAX_RANK];
        cu_tensor_index(index, p, idx);
        int64_t walked_off = cu_offset_of(walked, idx);
        int64_t iv = ix[cu_offset_of(index, idx)];
        idx[dim] = iv;
        int64_t indexed_off = cu_offset_of(indexed, idx);
        if (gather)
            cu_copy_elem(dst.data, walked_off, data.data, indexed_off, esize);
        else
            atomic_add_elem(dst.data, indexed_off, data.data, walked_off, dst.dtype);
    }
}

extern "C" cudaError_t cuk_index_op(cudaStream_t s, uint32_t op, const cuk_tensor *data,
                                    const cuk_tensor *index, const cuk_tensor *dst, int dim) {
    int esize = pk_dtype_size(dst->dtype);
    if (op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD) {
        const cuk_tensor *walked = op == GFP_OP_INDEX_SELECT ? dst : data;
        int64_t n = 1;
        for (int d = 0; d < walked->rank; d++) n *= walked->sizes[d];
        if (n > 0)
            k_select_like<<<cu_blocks(n), CU_THREADS, 0, s>>>(op, *data, *index, *dst, dim, n,
                                                              esize);
    } else {
        int64_t n = 1;
        for (int d = 0; d < index->rank; d++) n *= index->sizes[d];
        if (n > 0)
            k_gather_like<<<cu_blocks(n), CU_THREADS, 0, s>>>(op, *data, *index, *dst, dim, n,
                                                              esize);
    }
    return cu_launched();
}
