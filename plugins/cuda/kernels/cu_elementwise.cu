/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_elementwise.cu — unary and binary elementwise ops, comparisons, logical
 * ops and WHERE.
 *
 * The math is not written here: gf_math_cuda.h is generated from
 * plugins/common/op_math.def (the table the OpenCL and Vulkan kernels are
 * generated from too), and the op switches below are expanded from the same
 * table, so an op id always reaches the function generated for it. One kernel
 * per storage dtype holds the switch over every op; the switch is uniform
 * across a launch, so it costs a branch, not divergence.
 *
 * f16 and bf16 compute in f32 (widen, apply the f32 formula, round once), as
 * PyTorch does; i32 computes in i64 and narrows modulo 2^32, as the reference. */
#include <math.h>

#include "cu_common.cuh"
#include "gf_math_cuda.h"

/* ------------------------------------------------------------ op switches */
/* Table kinds -> which compute types have a function (see op_math.def). */
#define CU_UN_F_FLOAT(ID, name) \
    case GFP_OP_##ID: return gf_f32_##name(x, pa, pb, p.has_pa, p.has_pb);
#define CU_UN_F_NUMERIC CU_UN_F_FLOAT
#define CU_UN_F_COMPARE(ID, name)
#define CU_UN_F_LOGICAL(ID, name)

__device__ float unary_f32(uint32_t op, float x, const cuk_unary_params &p) {
    float pa = (float)p.pa, pb = (float)p.pb;
    switch (op) {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) CU_UN_F_##kind(ID, name)
#include "op_math.def"
    default: return x;
    }
}

#define CU_UN_D_FLOAT(ID, name) \
    case GFP_OP_##ID: return gf_f64_##name(x, pa, pb, p.has_pa, p.has_pb);
#define CU_UN_D_NUMERIC CU_UN_D_FLOAT
#define CU_UN_D_COMPARE(ID, name)
#define CU_UN_D_LOGICAL(ID, name)

__device__ double unary_f64(uint32_t op, double x, const cuk_unary_params &p) {
    double pa = p.pa, pb = p.pb;
    switch (op) {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) CU_UN_D_##kind(ID, name)
#include "op_math.def"
    default: return x;
    }
}

#define CU_UN_I_FLOAT(ID, name)
#define CU_UN_I_NUMERIC(ID, name) \
    case GFP_OP_##ID: return gf_int_##name(x, pa, pb, p.has_pa, p.has_pb);
#define CU_UN_I_COMPARE(ID, name)
#define CU_UN_I_LOGICAL(ID, name)

__device__ long long unary_int(uint32_t op, long long x, const cuk_unary_params &p) {
    long long pa = p.ia, pb = p.ib;
    switch (op) {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) CU_UN_I_##kind(ID, name)
#include "op_math.def"
    default: return x;
    }
}

#define CU_BIN_F_FLOAT(ID, name) \
    case GFP_OP_##ID: return gf_f32_##name(a, b);
#define CU_BIN_F_NUMERIC CU_BIN_F_FLOAT
#define CU_BIN_F_COMPARE(ID, name)
#define CU_BIN_F_LOGICAL(ID, name)

__device__ float binary_f32(uint32_t op, float a, float b) {
    switch (op) {
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) CU_BIN_F_##kind(ID, name)
#include "op_math.def"
    default: return a;
    }
}

#define CU_BIN_D_FLOAT(ID, name) \
    case GFP_OP_##ID: return gf_f64_##name(a, b);
#define CU_BIN_D_NUMERIC CU_BIN_D_FLOAT
#define CU_BIN_D_COMPARE(ID, name)
#define CU_BIN_D_LOGICAL(ID, name)

__device__ double binary_f64(uint32_t op, double a, double b) {
    switch (op) {
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) CU_BIN_D_##kind(ID, name)
#include "op_math.def"
    default: return a;
    }
}

#define CU_BIN_I_FLOAT(ID, name)
#define CU_BIN_I_NUMERIC(ID, name) \
    case GFP_OP_##ID: return gf_int_##name(a, b);
#define CU_BIN_I_COMPARE(ID, name)
#define CU_BIN_I_LOGICAL(ID, name)

__device__ long long binary_int(uint32_t op, long long a, long long b) {
    switch (op) {
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) CU_BIN_I_##kind(ID, name)
#include "op_math.def"
    default: return a;
    }
}

/* Comparisons, by compute type. */
#define CU_CMP_CASE(ID, name, ct) \
    case GFP_OP_##ID: return gf_##ct##_##name(a, b);
#define CU_CMP_F_COMPARE(ID, name) CU_CMP_CASE(ID, name, f32)
#define CU_CMP_D_COMPARE(ID, name) CU_CMP_CASE(ID, name, f64)
#define CU_CMP_I_COMPARE(ID, name) CU_CMP_CASE(ID, name, int)
#define CU_CMP_F_FLOAT(ID, name)
#define CU_CMP_F_NUMERIC(ID, name)
#define CU_CMP_F_LOGICAL(ID, name)
#define CU_CMP_D_FLOAT(ID, name)
#define CU_CMP_D_NUMERIC(ID, name)
#define CU_CMP_D_LOGICAL(ID, name)
#define CU_CMP_I_FLOAT(ID, name)
#define CU_CMP_I_NUMERIC(ID, name)
#define CU_CMP_I_LOGICAL(ID, name)

__device__ int compare_f32(uint32_t op, float a, float b) {
    switch (op) {
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) CU_CMP_F_##kind(ID, name)
#include "op_math.def"
    default: return 0;
    }
}
__device__ int compare_f64(uint32_t op, double a, double b) {
    switch (op) {
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) CU_CMP_D_##kind(ID, name)
#include "op_math.def"
    default: return 0;
    }
}
__device__ int compare_int(uint32_t op, long long a, long long b) {
    switch (op) {
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) CU_CMP_I_##kind(ID, name)
#include "op_math.def"
    default: return 0;
    }
}

/* Logical ops combine truth values. */
#define CU_LOG_LOGICAL(ID, name) \
    case GFP_OP_##ID: return gf_bool_##name(a, b);
#define CU_LOG_FLOAT(ID, name)
#define CU_LOG_NUMERIC(ID, name)
#define CU_LOG_COMPARE(ID, name)
#define CU_LOGN_LOGICAL(ID, name) \
    case GFP_OP_##ID: return gf_bool_##name(x);
#define CU_LOGN_FLOAT(ID, name)
#define CU_LOGN_NUMERIC(ID, name)
#define CU_LOGN_COMPARE(ID, name)

__device__ int logical_binary(uint32_t op, int a, int b) {
    switch (op) {
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) CU_LOG_##kind(ID, name)
#include "op_math.def"
    default: return 0;
    }
}
__device__ int logical_unary(uint32_t op, int x) {
    switch (op) {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) CU_LOGN_##kind(ID, name)
#include "op_math.def"
    default: return 0;
    }
}

/* ------------------------------------------------------------ kernels */
template <int DT>
__global__ void k_unary(uint32_t op, cuk_iter it, cuk_unary_params p) {
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[2];
        cu_iter_offsets<2>(it, i, off);
        if constexpr (DT == GFP_F32) {
            const float x = ((const float *)it.data[1])[off[1]];
            ((float *)it.data[0])[off[0]] = unary_f32(op, x, p);
        } else if constexpr (DT == GFP_F64) {
            const double x = ((const double *)it.data[1])[off[1]];
            ((double *)it.data[0])[off[0]] = unary_f64(op, x, p);
        } else if constexpr (DT == GFP_F16) {
            const float x = cu_h2f(((const uint16_t *)it.data[1])[off[1]]);
            ((uint16_t *)it.data[0])[off[0]] = cu_f2h(unary_f32(op, x, p));
        } else if constexpr (DT == GFP_BF16) {
            const float x = cu_b2f(((const uint16_t *)it.data[1])[off[1]]);
            ((uint16_t *)it.data[0])[off[0]] = cu_f2b(unary_f32(op, x, p));
        } else if constexpr (DT == GFP_I32) {
            const long long x = ((const int32_t *)it.data[1])[off[1]];
            ((int32_t *)it.data[0])[off[0]] =
                (int32_t)(uint32_t)(unsigned long long)unary_int(op, x, p);
        } else {
            const long long x = ((const int64_t *)it.data[1])[off[1]];
            ((int64_t *)it.data[0])[off[0]] = unary_int(op, x, p);
        }
    }
}

template <int DT>
__global__ void k_binary(uint32_t op, cuk_iter it) {
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[3];
        cu_iter_offsets<3>(it, i, off);
        if constexpr (DT == GFP_F32) {
            const float a = ((const float *)it.data[1])[off[1]];
            const float b = ((const float *)it.data[2])[off[2]];
            ((float *)it.data[0])[off[0]] = binary_f32(op, a, b);
        } else if constexpr (DT == GFP_F64) {
            const double a = ((const double *)it.data[1])[off[1]];
            const double b = ((const double *)it.data[2])[off[2]];
            ((double *)it.data[0])[off[0]] = binary_f64(op, a, b);
        } else if constexpr (DT == GFP_F16) {
            const float a = cu_h2f(((const uint16_t *)it.data[1])[off[1]]);
            const float b = cu_h2f(((const uint16_t *)it.data[2])[off[2]]);
            ((uint16_t *)it.data[0])[off[0]] = cu_f2h(binary_f32(op, a, b));
        } else if constexpr (DT == GFP_BF16) {
            const float a = cu_b2f(((const uint16_t *)it.data[1])[off[1]]);
            const float b = cu_b2f(((const uint16_t *)it.data[2])[off[2]]);
            ((uint16_t *)it.data[0])[off[0]] = cu_f2b(binary_f32(op, a, b));
        } else if constexpr (DT == GFP_I32) {
            const long long a = ((const int32_t *)it.data[1])[off[1]];
            const long long b = ((const int32_t *)it.data[2])[off[2]];
            ((int32_t *)it.data[0])[off[0]] =
                (int32_t)(uint32_t)(unsigned long long)binary_int(op, a, b);
        } else {
            const long long a = ((const int64_t *)it.data[1])[off[1]];
            const long long b = ((const int64_t *)it.data[2])[off[2]];
            ((int64_t *)it.data[0])[off[0]] = binary_int(op, a, b);
        }
    }
}

/* Both inputs of one dtype, bool out. Floats compare as they are (f16/bf16
 * widen exactly to f32); integers and bool widen to i64. */
__global__ void k_compare(uint32_t op, cuk_iter it) {
    const int32_t dt = it.dtype[1];
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[3];
        cu_iter_offsets<3>(it, i, off);
        int r;
        if (dt == GFP_F64) {
            r = compare_f64(op, ((const double *)it.data[1])[off[1]],
                            ((const double *)it.data[2])[off[2]]);
        } else if (pk_is_float(dt)) {
            r = compare_f32(op, (float)cu_load_f64(it.data[1], dt, off[1]),
                            (float)cu_load_f64(it.data[2], dt, off[2]));
        } else {
            r = compare_int(op, cu_load_i64(it.data[1], dt, off[1]),
                            cu_load_i64(it.data[2], dt, off[2]));
        }
        ((uint8_t *)it.data[0])[off[0]] = r != 0;
    }
}

__global__ void k_logical(uint32_t op, cuk_iter it) {
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[3];
        cu_iter_offsets<3>(it, i, off);
        int a = cu_truth(it.data[1], it.dtype[1], off[1]);
        int r = it.n_tensors == 2 ? logical_unary(op, a)
                                  : logical_binary(op, a, cu_truth(it.data[2], it.dtype[2], off[2]));
        ((uint8_t *)it.data[0])[off[0]] = r != 0;
    }
}

/* t[1] is the bool condition; a, b and y share one dtype, copied as bytes. */
__global__ void k_where(cuk_iter it, int esize) {
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[4];
        cu_iter_offsets<4>(it, i, off);
        bool c = ((const uint8_t *)it.data[1])[off[1]] != 0;
        cu_copy_elem(it.data[0], off[0], c ? it.data[2] : it.data[3], c ? off[2] : off[3], esize);
    }
}

/* ------------------------------------------------------------ launchers */
extern "C" cudaError_t cuk_unary(cudaStream_t s, uint32_t op, const cuk_iter *it,
                                 const cuk_unary_params *p) {
    unsigned g = cu_blocks(it->numel);
    switch (it->dtype[0]) {
    case GFP_F32: k_unary<GFP_F32><<<g, CU_THREADS, 0, s>>>(op, *it, *p); break;
    case GFP_F64: k_unary<GFP_F64><<<g, CU_THREADS, 0, s>>>(op, *it, *p); break;
    case GFP_F16: k_unary<GFP_F16><<<g, CU_THREADS, 0, s>>>(op, *it, *p); break;
    case GFP_BF16: k_unary<GFP_BF16><<<g, CU_THREADS, 0, s>>>(op, *it, *p); break;
    case GFP_I32: k_unary<GFP_I32><<<g, CU_THREADS, 0, s>>>(op, *it, *p); break;
    case GFP_I64: k_unary<GFP_I64><<<g, CU_THREADS, 0, s>>>(op, *it, *p); break;
    default: return cudaErrorInvalidValue;
    }
    return cu_launched();
}

extern "C" cudaError_t cuk_binary(cudaStream_t s, uint32_t op, const cuk_iter *it) {
    unsigned g = cu_blocks(it->numel);
    switch (it->dtype[0]) {
    case GFP_F32: k_binary<GFP_F32><<<g, CU_THREADS, 0, s>>>(op, *it); break;
    case GFP_F64: k_binary<GFP_F64><<<g, CU_THREADS, 0, s>>>(op, *it); break;
    case GFP_F16: k_binary<GFP_F16><<<g, CU_THREADS, 0, s>>>(op, *it); break;
    case GFP_BF16: k_binary<GFP_BF16><<<g, CU_THREADS, 0, s>>>(op, *it); break;
    case GFP_I32: k_binary<GFP_I32><<<g, CU_THREADS, 0, s>>>(op, *it); break;
    case GFP_I64: k_binary<GFP_I64><<<g, CU_THREADS, 0, s>>>(op, *it); break;
    default: return cudaErrorInvalidValue;
    }
    return cu_launched();
}

extern "C" cudaError_t cuk_compare(cudaStream_t s, uint32_t op, const cuk_iter *it) {
    k_compare<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(op, *it);
    return cu_launched();
}

extern "C" cudaError_t cuk_logical(cudaStream_t s, uint32_t op, const cuk_iter *it) {
    k_logical<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(op, *it);
    return cu_launched();
}

extern "C" cudaError_t cuk_where(cudaStream_t s, const cuk_iter *it) {
    k_where<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(*it, pk_dtype_size(it->dtype[0]));
    return cu_launched();
}
