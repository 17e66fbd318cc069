/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_reduce.cu — SUM MEAN PROD AMAX AMIN VAR LOGSUMEXP MAX_DIM MIN_DIM.
 *
 * Slots of cuk_lines: 0 = x, 1 = y, 2 = indices (MAX_DIM / MIN_DIM); p0 is
 * VAR's correction. Semantics are the reference's (plugins/reference/
 * ref_reduce.c): floats reduce in double (compensated sums) and round once;
 * integers wrap modulo 2^64 and narrow on store; NaN propagates through
 * amax/amin, and the first NaN wins max_dim/min_dim; ties keep the first
 * index. VAR is the corrected two-pass variance, LOGSUMEXP subtracts the max.
 * Zero-length lines give sum 0, prod 1, mean and var NaN, logsumexp -inf (the
 * host refuses the others).
 *
 * The combining steps that are elementwise ops are the generated ones of
 * op_math.def (gf_math_cuda.h): maximum and minimum (NaN propagating), mul,
 * and the wrapping integer add and mul, so a reduction combines exactly as the
 * elementwise op of the same name computes, on this device and on the others
 * generated from the table. Float sums are the reference's compensated sums,
 * which the table has no entry for. */
#include <math.h>

#include "cu_group.cuh"
#include "gf_math_cuda.h"

struct add_ksum {
    __device__ cu_ksum operator()(cu_ksum a, cu_ksum b) const { return cu_ksum_combine(a, b); }
};
struct mul_f64 {
    __device__ double operator()(double a, double b) const { return gf_f64_mul(a, b); }
};
struct add_u64 {
    __device__ uint64_t operator()(uint64_t a, uint64_t b) const {
        return (uint64_t)gf_int_add((long long)a, (long long)b);
    }
};
struct mul_u64 {
    __device__ uint64_t operator()(uint64_t a, uint64_t b) const {
        return (uint64_t)gf_int_mul((long long)a, (long long)b);
    }
};
/* NaN propagates: max(NaN, x) = NaN whichever side it is on. */
struct max_f64 {
    __device__ double operator()(double a, double b) const { return gf_f64_maximum(a, b); }
};
struct min_f64 {
    __device__ double operator()(double a, double b) const { return gf_f64_minimum(a, b); }
};
struct max_i64 {
    __device__ int64_t operator()(int64_t a, int64_t b) const { return gf_int_maximum(a, b); }
};
struct min_i64 {
    __device__ int64_t operator()(int64_t a, int64_t b) const { return gf_int_minimum(a, b); }
};

/* The extreme of two candidates; NaN beats everything, and among equals (two
 * NaNs too) the smaller index wins, so the order of combination is moot. */
template <typename V, bool LARGEST>
struct arg_pick {
    __device__ cu_arg<V> operator()(cu_arg<V> a, cu_arg<V> b) const {
        bool an = a.v != a.v, bn = b.v != b.v;
        if (an || bn) {
            if (an && bn) return a.i < b.i ? a : b;
            return an ? a : b;
        }
        if (a.v == b.v) return a.i < b.i ? a : b;
        return (LARGEST ? a.v > b.v : a.v < b.v) ? a : b;
    }
};

/* Float reductions in double. */
template <int G>
__global__ void k_reduce_float(uint32_t op, cuk_lines l) {
    const int lane = G == 1 ? 0 : threadIdx.x % G;
    const void *x = l.data[0];
    const int32_t xdt = l.dtype[0];
    const int64_t n = l.n_line;
    CU_GROUP_LOOP(G, o, l.n_out) {
        const int64_t base = cu_keep_offset(l, 0, o);
        const int64_t yoff = cu_keep_offset(l, 1, o);
#define LOAD(j) cu_load_f64(x, xdt, base + cu_red_offset(l, 0, (j)))
        double result;
        if (op == GFP_OP_SUM || op == GFP_OP_MEAN || op == GFP_OP_VAR) {
            cu_ksum k = {0, 0};
            for (int64_t j = lane; j < n; j += G) cu_kadd(k, LOAD(j));
            double sum = cu_kvalue(cu_group_reduce<G>(k, add_ksum()));
            if (op == GFP_OP_SUM) {
                result = sum;
            } else if (n == 0) {
                result = NAN;
            } else if (op == GFP_OP_MEAN) {
                result = sum / (double)n;
            } else {
                double mean = sum / (double)n;
                cu_ksum sq = {0, 0}, dev = {0, 0};
                for (int64_t j = lane; j < n; j += G) {
                    double d = LOAD(j) - mean;
                    cu_kadd(sq, d * d);
                    cu_kadd(dev, d);
                }
                double sqs = cu_kvalue(cu_group_reduce<G>(sq, add_ksum()));
                double dsum = cu_kvalue(cu_group_reduce<G>(dev, add_ksum()));
                double m2 = sqs - dsum * dsum / (double)n;
                if (m2 < 0) m2 = 0;
                double divisor = (double)n - l.p0;
                if (divisor < 0) divisor = 0;
                result = m2 / divisor;
            }
        } else if (op == GFP_OP_PROD) {
            double p = 1;
            for (int64_t j = lane; j < n; j += G) p = mul_f64()(p, LOAD(j));
            result = cu_group_reduce<G>(p, mul_f64());
        } else if (op == GFP_OP_AMAX || op == GFP_OP_AMIN || op == GFP_OP_LOGSUMEXP) {
            bool largest = op != GFP_OP_AMIN;
            double m = largest ? -INFINITY : INFINITY;
            for (int64_t j = lane; j < n; j += G) {
                double v = LOAD(j);
                m = largest ? max_f64()(m, v) : min_f64()(m, v);
            }
            m = largest ? cu_group_reduce<G>(m, max_f64()) : cu_group_reduce<G>(m, min_f64());
            if (op != GFP_OP_LOGSUMEXP || isnan(m) || isinf(m)) {
                result = m; /* logsumexp: +inf wins; all -inf (or none) gives -inf */
            } else {
                cu_ksum k = {0, 0};
                for (int64_t j = lane; j < n; j += G) cu_kadd(k, exp(LOAD(j) - m));
                result = m + log(cu_kvalue(cu_group_reduce<G>(k, add_ksum())));
            }
        } else { /* MAX_DIM, MIN_DIM */
            bool largest = op == GFP_OP_MAX_DIM;
            cu_arg<double> best = {largest ? -INFINITY : INFINITY, INT64_MAX};
            for (int64_t j = lane; j < n; j += G) {
                cu_arg<double> c = {LOAD(j), j};
                best = largest ? arg_pick<double, true>()(best, c) : arg_pick<double, false>()(best, c);
            }
            best = largest ? cu_group_reduce<G>(best, arg_pick<double, true>())
                           : cu_group_reduce<G>(best, arg_pick<double, false>());
            if (lane == 0) ((int64_t *)l.data[2])[cu_keep_offset(l, 2, o)] = best.i;
            result = best.v;
        }
#undef LOAD
        if (lane == 0) cu_store_f64(l.data[1], l.dtype[1], yoff, result);
    }
}

/* Integer and bool reductions: exact, wrapping. */
template <int G>
__global__ void k_reduce_int(uint32_t op, cuk_lines l) {
    const int lane = G == 1 ? 0 : threadIdx.x % G;
    const void *x = l.data[0];
    const int32_t xdt = l.dtype[0];
    const int64_t n = l.n_line;
    CU_GROUP_LOOP(G, o, l.n_out) {
        const int64_t base = cu_keep_offset(l, 0, o);
        const int64_t yoff = cu_keep_offset(l, 1, o);
#define LOAD(j) cu_load_i64(x, xdt, base + cu_red_offset(l, 0, (j)))
        int64_t result;
        if (op == GFP_OP_SUM) {
            uint64_t s = 0;
            for (int64_t j = lane; j < n; j += G) s = add_u64()(s, (uint64_t)LOAD(j));
            result = (int64_t)cu_group_reduce<G>(s, add_u64());
        } else if (op == GFP_OP_PROD) {
            uint64_t p = 1;
            for (int64_t j = lane; j < n; j += G) p = mul_u64()(p, (uint64_t)LOAD(j));
            result = (int64_t)cu_group_reduce<G>(p, mul_u64());
        } else if (op == GFP_OP_AMAX || op == GFP_OP_AMIN) {
            bool largest = op == GFP_OP_AMAX;
            int64_t m = largest ? INT64_MIN : INT64_MAX;
            for (int64_t j = lane; j < n; j += G) {
                int64_t v = LOAD(j);
                m = largest ? max_i64()(m, v) : min_i64()(m, v);
            }
            result = largest ? cu_group_reduce<G>(m, max_i64()) : cu_group_reduce<G>(m, min_i64());
        } else { /* MAX_DIM, MIN_DIM */
            bool largest = op == GFP_OP_MAX_DIM;
            cu_arg<int64_t> best = {largest ? INT64_MIN : INT64_MAX, INT64_MAX};
            for (int64_t j = lane; j < n; j += G) {
                cu_arg<int64_t> c = {LOAD(j), j};
                best = largest ? arg_pick<int64_t, true>()(best, c)
                               : arg_pick<int64_t, false>()(best, c);
            }
            best = largest ? cu_group_reduce<G>(best, arg_pick<int64_t, true>())
                           : cu_group_reduce<G>(best, arg_pick<int64_t, false>());
            if (lane == 0) ((int64_t *)l.data[2])[cu_keep_offset(l, 2, o)] = best.i;
            result = best.v;
        }
#undef LOAD
        if (lane == 0) cu_store_i64(l.data[1], l.dtype[1], yoff, result);
    }
}

template <int G>
static void launch_reduce(cudaStream_t s, uint32_t op, const cuk_lines *l) {
    unsigned blocks = cu_group_blocks(l->n_out, G);
    if (pk_is_float(l->dtype[0]))
        k_reduce_float<G><<<blocks, CU_THREADS, 0, s>>>(op, *l);
    else
        k_reduce_int<G><<<blocks, CU_THREADS, 0, s>>>(op, *l);
}

extern "C" cudaError_t cuk_reduce(cudaStream_t s, uint32_t op, const cuk_lines *l) {
    switch (cu_group_size(l->n_line)) {
    case 1: launch_reduce<1>(s, op, l); break;
    case 32: launch_reduce<32>(s, op, l); break;
    default: launch_reduce<CU_THREADS>(s, op, l); break;
    }
    return cu_launched();
}
