/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_group.cuh — groups of threads that share one line (cu_reduce.cu,
 * cu_norm.cu).
 *
 * A group of G threads (1, a warp of 32, or a block of 256) owns one output
 * position at a time; its lanes walk the line's elements lane, lane + G, ...
 * and combine their partial results with group_reduce, which hands the
 * combined value to every lane. The combine functions are commutative, so
 * every lane ends with the same bits (a butterfly adds a + b on one lane and
 * b + a on the other). Sums are Neumaier-compensated in double per lane, as
 * the reference sums, and the lanes' sums and corrections are added apart. */
#ifndef GRAFT_CU_GROUP_CUH
#define GRAFT_CU_GROUP_CUH

#include "cu_common.cuh"

/* A compensated sum: the rounding error of each addition is carried in c. */
struct cu_ksum {
    double s, c;
};

__device__ __forceinline__ void cu_kadd(cu_ksum &k, double v) {
    double t = k.s + v;
    if (fabs(k.s) >= fabs(v))
        k.c += (k.s - t) + v;
    else
        k.c += (v - t) + k.s;
    k.s = t;
}

/* Once the sum is inf or NaN the compensation means nothing. */
__device__ __forceinline__ double cu_kvalue(const cu_ksum &k) {
    return isfinite(k.s) ? k.s + k.c : k.s;
}

/* A value and the position it came from (MAX_DIM / MIN_DIM). */
template <typename V>
struct cu_arg {
    V v;
    int64_t i;
};

__device__ __forceinline__ double cu_shfl(double v, int m) {
    return __shfl_xor_sync(0xffffffffu, v, m);
}
__device__ __forceinline__ int64_t cu_shfl(int64_t v, int m) {
    return (int64_t)__shfl_xor_sync(0xffffffffu, (long long)v, m);
}
__device__ __forceinline__ uint64_t cu_shfl(uint64_t v, int m) {
    return (uint64_t)__shfl_xor_sync(0xffffffffu, (unsigned long long)v, m);
}
__device__ __forceinline__ cu_ksum cu_shfl(cu_ksum v, int m) {
    return cu_ksum{cu_shfl(v.s, m), cu_shfl(v.c, m)};
}
template <typename V>
__device__ __forceinline__ cu_arg<V> cu_shfl(cu_arg<V> v, int m) {
    return cu_arg<V>{cu_shfl(v.v, m), cu_shfl(v.i, m)};
}

/* Combines v over the G lanes of the calling thread's group; every lane
 * receives the result. All threads of a block must call it together when
 * G is the block size (it synchronises the block). */
template <int G, typename T, typename F>
__device__ __forceinline__ T cu_group_reduce(T v, F op) {
    if constexpr (G == 1) {
        return v;
    } else {
#pragma unroll
        for (int m = 1; m < 32; m <<= 1) v = op(v, cu_shfl(v, m));
        if constexpr (G == 32) {
            return v;
        } else {
            __shared__ T part[G / 32];
            __syncthreads(); /* an earlier call may still read part */
            if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
            __syncthreads();
            T r = part[0];
#pragma unroll
            for (int k = 1; k < G / 32; k++) r = op(r, part[k]);
            return r;
        }
    }
}

__device__ __forceinline__ cu_ksum cu_ksum_combine(cu_ksum a, cu_ksum b) {
    return cu_ksum{a.s + b.s, a.c + b.c};
}

/* Element offset, in slot's tensor, of kept position o / line element j. */
__device__ __forceinline__ int64_t cu_keep_offset(const cuk_lines &l, int slot, int64_t o) {
    int64_t off = 0;
    for (int d = l.n_keep - 1; d >= 0; d--) {
        int64_t q = o / l.keep_sizes[d];
        off += (o - q * l.keep_sizes[d]) * l.keep_str[slot][d];
        o = q;
    }
    return off;
}
__device__ __forceinline__ int64_t cu_red_offset(const cuk_lines &l, int slot, int64_t j) {
    if (l.n_red == 1) return j * l.red_str[slot][0];
    int64_t off = 0;
    for (int d = l.n_red - 1; d >= 0; d--) {
        int64_t q = j / l.red_sizes[d];
        off += (j - q * l.red_sizes[d]) * l.red_str[slot][d];
        j = q;
    }
    return off;
}

/* The group size for lines of n elements. */
static inline int cu_group_size(int64_t n_line) {
    return n_line <= 16 ? 1 : n_line <= 2048 ? 32 : CU_THREADS;
}

/* Loops o over the output positions this thread's group owns. */
#define CU_GROUP_LOOP(G, o, n_out)                                                        \
    for (int64_t o = (int64_t)blockIdx.x * (CU_THREADS / (G)) + threadIdx.x / (G);        \
         o < (n_out); o += (int64_t)gridDim.x * (CU_THREADS / (G)))

static inline unsigned cu_group_blocks(int64_t n_out, int g) {
    return cu_blocks(n_out, CU_THREADS / g);
}

#endif
