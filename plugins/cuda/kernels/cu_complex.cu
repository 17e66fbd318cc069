/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_complex.cu — the complex dtypes c64 and c128: COPY into complex (from
 * the other complex dtype or a real one), the unary ops the reference
 * computes on complex, ABS into the part dtype, ADD SUB MUL DIV POW, EQ and
 * NE, SUM MEAN PROD over lines, and the moves of the FFT (scale, conjugate,
 * real part). Same-dtype copies, FILL, TRIL/TRIU, WHERE and the index ops
 * move complex elements through cu_copy.cu, cu_elementwise.cu and
 * cu_index.cu; MATMUL is cuBLAS's and FFT cuFFT's (host side).
 *
 * The formulas are cu_complex_math.h's, computed in double for c64 too and
 * rounded once per part on store, as the reference computes them in C99
 * double complex (tests/cuda/test_cuda_complex.c compares that header with
 * the reference on the host). */
#include <math.h>

#include "cu_complex_math.h"
#include "cu_group.cuh"

__device__ __forceinline__ bool cu_is_cx(int32_t dt) { return dt == GFP_C64 || dt == GFP_C128; }

/* Element off of data as a complex value: complex dtypes as they are, real
 * ones as v + 0i (integers through int64, exact, then one rounding). */
__device__ __forceinline__ cu_cx cu_load_cx(const void *data, int32_t dt, int64_t off) {
    switch (dt) {
    case GFP_C64: {
        const float *p = (const float *)data + 2 * off;
        return cu_cx_of(p[0], p[1]);
    }
    case GFP_C128: {
        const double *p = (const double *)data + 2 * off;
        return cu_cx_of(p[0], p[1]);
    }
    case GFP_I32:
    case GFP_I64:
    case GFP_BOOL: return cu_cx_of((double)cu_load_i64(data, dt, off), 0.0);
    default: return cu_cx_of(cu_load_f64(data, dt, off), 0.0);
    }
}

__device__ __forceinline__ void cu_store_cx(void *data, int32_t dt, int64_t off, cu_cx z) {
    if (dt == GFP_C64) {
        float *p = (float *)data + 2 * off;
        p[0] = (float)z.re;
        p[1] = (float)z.im;
    } else {
        double *p = (double *)data + 2 * off;
        p[0] = z.re;
        p[1] = z.im;
    }
}

/* ------------------------------------------------------------ elementwise */
__global__ void k_cx_copy(cuk_iter it) {
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[2];
        cu_iter_offsets<2>(it, i, off);
        cu_store_cx(it.data[0], it.dtype[0], off[0], cu_load_cx(it.data[1], it.dtype[1], off[1]));
    }
}

__global__ void k_cx_unary(cuk_iter it, int code, double a) {
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[2];
        cu_iter_offsets<2>(it, i, off);
        cu_cx z = cu_load_cx(it.data[1], it.dtype[1], off[1]);
        cu_store_cx(it.data[0], it.dtype[0], off[0], cu_cx_unary(code, z, a));
    }
}

/* |z| into the part dtype (f32 for c64, f64 for c128), as hypot. */
__global__ void k_cx_abs(cuk_iter it) {
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[2];
        cu_iter_offsets<2>(it, i, off);
        cu_cx z = cu_load_cx(it.data[1], it.dtype[1], off[1]);
        cu_store_f64(it.data[0], it.dtype[0], off[0], hypot(z.re, z.im));
    }
}

__global__ void k_cx_binary(cuk_iter it, int code) {
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[3];
        cu_iter_offsets<3>(it, i, off);
        cu_cx a = cu_load_cx(it.data[1], it.dtype[1], off[1]);
        cu_cx b = cu_load_cx(it.data[2], it.dtype[2], off[2]);
        cu_store_cx(it.data[0], it.dtype[0], off[0], cu_cx_binary(code, a, b));
    }
}

/* EQ (ne = 0) or NE: both parts equal; a NaN part is unequal. */
__global__ void k_cx_compare(cuk_iter it, int ne) {
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[3];
        cu_iter_offsets<3>(it, i, off);
        cu_cx a = cu_load_cx(it.data[1], it.dtype[1], off[1]);
        cu_cx b = cu_load_cx(it.data[2], it.dtype[2], off[2]);
        bool eq = a.re == b.re && a.im == b.im;
        ((uint8_t *)it.data[0])[off[0]] = (uint8_t)(ne ? !eq : eq);
    }
}

/* The FFT's moves between its work arrays and the tensors: y = x * scale,
 * conjugated when conj; real_part keeps the real part (complex to real) or
 * zeroes the imaginary part (complex to complex). Real to complex gives
 * v * scale + 0i; real to real is scaled. */
__global__ void k_cx_move(cuk_iter it, double scale, int conj, int real_part) {
    const int32_t ydt = it.dtype[0], xdt = it.dtype[1];
    CU_GRID_LOOP(i, it.numel) {
        int64_t off[2];
        cu_iter_offsets<2>(it, i, off);
        cu_cx z = cu_load_cx(it.data[1], xdt, off[1]);
        if (real_part) z.im = 0.0;
        if (conj) z.im = -z.im;
        z = cu_cx_scale(z, scale);
        if (cu_is_cx(ydt)) cu_store_cx(it.data[0], ydt, off[0], z);
        else cu_store_f64(it.data[0], ydt, off[0], z.re);
    }
}

/* ------------------------------------------------------------ reductions */
struct cx_ksum {
    cu_ksum re, im;
};
__device__ __forceinline__ cx_ksum cu_shfl(cx_ksum v, int m) {
    return cx_ksum{cu_shfl(v.re, m), cu_shfl(v.im, m)};
}
__device__ __forceinline__ cu_cx cu_shfl(cu_cx v, int m) {
    return cu_cx_of(cu_shfl(v.re, m), cu_shfl(v.im, m));
}
struct add_cx_ksum {
    __device__ cx_ksum operator()(cx_ksum a, cx_ksum b) const {
        return cx_ksum{cu_ksum_combine(a.re, b.re), cu_ksum_combine(a.im, b.im)};
    }
};
/* Complex products commute exactly (each part is a sum of two products in
 * either order), so every lane of a butterfly ends with the same bits. */
struct mul_cx {
    __device__ cu_cx operator()(cu_cx a, cu_cx b) const { return cu_cx_mul(a, b); }
};

/* SUM / MEAN / PROD (op 0, 1, 2) of lines; slots: 0 = x, 1 = y. Sums are
 * compensated part by part (the reference's Neumaier sums). */
template <int G>
__global__ void k_cx_reduce(int op, cuk_lines l) {
    const int lane = G == 1 ? 0 : threadIdx.x % G;
    const int64_t n = l.n_line;
    CU_GROUP_LOOP(G, o, l.n_out) {
        const int64_t base = cu_keep_offset(l, 0, o);
        const int64_t yoff = cu_keep_offset(l, 1, o);
        cu_cx r;
        if (op == 2) {
            cu_cx p = cu_cx_of(1.0, 0.0);
            for (int64_t j = lane; j < n; j += G)
                p = cu_cx_mul(p, cu_load_cx(l.data[0], l.dtype[0], base + cu_red_offset(l, 0, j)));
            r = cu_group_reduce<G>(p, mul_cx());
        } else {
            cx_ksum k = {{0, 0}, {0, 0}};
            for (int64_t j = lane; j < n; j += G) {
                cu_cx v = cu_load_cx(l.data[0], l.dtype[0], base + cu_red_offset(l, 0, j));
                cu_kadd(k.re, v.re);
                cu_kadd(k.im, v.im);
            }
            k = cu_group_reduce<G>(k, add_cx_ksum());
            r = cu_cx_of(cu_kvalue(k.re), cu_kvalue(k.im));
            if (op == 1) r = n ? cu_cx_scale(r, 1.0 / (double)n) : cu_cx_of(NAN, NAN);
        }
        if (lane == 0) cu_store_cx(l.data[1], l.dtype[1], yoff, r);
    }
}

/* ------------------------------------------------------------ launchers */
extern "C" cudaError_t cuk_cx_copy(cudaStream_t s, const cuk_iter *it) {
    k_cx_copy<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(*it);
    return cu_launched();
}

extern "C" cudaError_t cuk_cx_unary(cudaStream_t s, int code, const cuk_iter *it, double a) {
    k_cx_unary<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(*it, code, a);
    return cu_launched();
}

extern "C" cudaError_t cuk_cx_abs(cudaStream_t s, const cuk_iter *it) {
    k_cx_abs<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(*it);
    return cu_launched();
}

extern "C" cudaError_t cuk_cx_binary(cudaStream_t s, int code, const cuk_iter *it) {
    k_cx_binary<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(*it, code);
    return cu_launched();
}

extern "C" cudaError_t cuk_cx_compare(cudaStream_t s, int ne, const cuk_iter *it) {
    k_cx_compare<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(*it, ne);
    return cu_launched();
}

extern "C" cudaError_t cuk_cx_move(cudaStream_t s, const cuk_iter *it, double scale, int conj,
                                   int real_part) {
    k_cx_move<<<cu_blocks(it->numel), CU_THREADS, 0, s>>>(*it, scale, conj, real_part);
    return cu_launched();
}

extern "C" cudaError_t cuk_cx_reduce(cudaStream_t s, int op, const cuk_lines *l) {
    int g = cu_group_size(l->n_line);
    unsigned blocks = cu_group_blocks(l->n_out, g);
    switch (g) {
    case 1: k_cx_reduce<1><<<blocks, CU_THREADS, 0, s>>>(op, *l); break;
    case 32: k_cx_reduce<32><<<blocks, CU_THREADS, 0, s>>>(op, *l); break;
    default: k_cx_reduce<CU_THREADS><<<blocks, CU_THREADS, 0, s>>>(op, *l); break;
    }
    return cu_launched();
}
