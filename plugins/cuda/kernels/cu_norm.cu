/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_norm.cu — SOFTMAX, LOG_SOFTMAX and their gradients, LAYER_NORM,
 * BATCH_NORM (f32, f64).
 *
 * Each output line is owned by one group of threads (cu_group.cuh). The
 * statistics are the reference's (plugins/reference/ref_norm.c): softmax
 * subtracts the line's max (NaN propagates), the normalisations use the
 * corrected two-pass variance with compensated sums in double, and results
 * round once into the output dtype. Softmax of f32 computes exp in float (the
 * sum stays in double), which keeps it within a few ulp of the reference.
 *
 * Slots of cuk_lines:
 *   softmax     0 x, 1 y                       (the line: the softmax dim)
 *   layer_norm  0 x, 1 y, 2 weight, 3 bias, 4 mean, 5 rstd; p1 = eps
 *               (kept: the leading dims; the line: the normalised dims)
 *   batch_norm  0 x, 1 y, 2 weight, 3 bias, 4 running_mean, 5 running_var,
 *               6 save_mean, 7 save_invstd; p1 = eps, p2 = momentum,
 *               flag = training (kept: the channel; the line: the rest)
 * Absent optional tensors have a NULL data pointer. Every line element is read
 * before the same thread writes it, and the reading passes end at a group
 * barrier, so an exactly aliased output (in place) is safe. */
#include <math.h>

#include "cu_group.cuh"
#include "gf_math_cuda.h"

struct add_ksum_n {
    __device__ cu_ksum operator()(cu_ksum a, cu_ksum b) const { return cu_ksum_combine(a, b); }
};
/* The table's maximum (op_math.def): NaN propagates. */
struct max_nan {
    __device__ double operator()(double a, double b) const { return gf_f64_maximum(a, b); }
};

template <int G, typename T>
__global__ void k_softmax(int log_form, cuk_lines l) {
    const int lane = G == 1 ? 0 : threadIdx.x % G;
    const int64_t n = l.n_line;
    const T *x = (const T *)l.data[0];
    T *y = (T *)l.data[1];
    CU_GROUP_LOOP(G, o, l.n_out) {
        const int64_t xb = cu_keep_offset(l, 0, o), yb = cu_keep_offset(l, 1, o);
        double m = -INFINITY;
        for (int64_t j = lane; j < n; j += G) m = max_nan()(m, (double)x[xb + cu_red_offset(l, 0, j)]);
        m = cu_group_reduce<G>(m, max_nan());
        const T mt = (T)m; /* exact: m is one of the line's values */
        cu_ksum k = {0, 0};
        for (int64_t j = lane; j < n; j += G) cu_kadd(k, (double)exp(x[xb + cu_red_offset(l, 0, j)] - mt));
        const double s = cu_kvalue(cu_group_reduce<G>(k, add_ksum_n()));
        const double log_s = log(s);
        for (int64_t j = lane; j < n; j += G) {
            T z = x[xb + cu_red_offset(l, 0, j)] - mt;
            double v = log_form ? (double)z - log_s : (double)exp(z) / s;
            y[yb + cu_red_offset(l, 1, j)] = (T)v;
        }
    }
}

/* SOFTMAX_BACKWARD (soft) and LOG_SOFTMAX_BACKWARD from the forward's
 * output, as graft_ops.def defines them and the reference computes them: in
 * double, the line's sum compensated, one rounding on store. Slots: 0
 * grad_y, 1 y, 2 grad_x. Every element is read in the sum pass, which ends
 * at the group's reduction, before any is written, and the writing pass
 * reads an element's grad_y and y before writing its grad_x: an exactly
 * aliased grad_x is safe. */
template <int G, typename T>
__global__ void k_softmax_backward(int soft, cuk_lines l) {
    const int lane = G == 1 ? 0 : threadIdx.x % G;
    const int64_t n = l.n_line;
    const T *gy = (const T *)l.data[0], *y = (const T *)l.data[1];
    T *gx = (T *)l.data[2];
    CU_GROUP_LOOP(G, o, l.n_out) {
        const int64_t gb = cu_keep_offset(l, 0, o), yb = cu_keep_offset(l, 1, o),
                      xb = cu_keep_offset(l, 2, o);
        cu_ksum k = {0, 0};
        for (int64_t j = lane; j < n; j += G) {
            double gi = (double)gy[gb + cu_red_offset(l, 0, j)];
            cu_kadd(k, soft ? gi * (double)y[yb + cu_red_offset(l, 1, j)] : gi);
        }
        const double sum = cu_kvalue(cu_group_reduce<G>(k, add_ksum_n()));
        for (int64_t j = lane; j < n; j += G) {
            double gi = (double)gy[gb + cu_red_offset(l, 0, j)];
            double yi = (double)y[yb + cu_red_offset(l, 1, j)];
            gx[xb + cu_red_offset(l, 2, j)] = (T)(soft ? yi * (gi - sum) : gi - exp(yi) * sum);
        }
    }
}

/* The sums of a norm's gradient over one line (compensated, in double):
 * sg = sum(g), sgx = sum(g * w * (x - mean) * rstd), with w from slot 5
 * when present and wanted, mean and rstd the line's own (m, r). Slots: 0
 * grad_y, 1 x, 5 weight. Every lane receives both. */
template <int G>
__device__ void grad_sums(const cuk_lines &l, int64_t gb, int64_t xb, int64_t wb, bool use_w,
                          double m, double r, int lane, double *sg, double *sgx) {
    cu_ksum a = {0, 0}, b = {0, 0};
    for (int64_t j = lane; j < l.n_line; j += G) {
        double gi = cu_load_f64(l.data[0], l.dtype[0], gb + cu_red_offset(l, 0, j));
        if (use_w) gi *= cu_load_f64(l.data[5], l.dtype[5], wb + cu_red_offset(l, 5, j));
        double xh = (cu_load_f64(l.data[1], l.dtype[1], xb + cu_red_offset(l, 1, j)) - m) * r;
        cu_kadd(a, gi);
        cu_kadd(b, gi * xh);
    }
    *sg = cu_kvalue(cu_group_reduce<G>(a, add_ksum_n()));
    *sgx = cu_kvalue(cu_group_reduce<G>(b, add_ksum_n()));
}

/* BATCH_NORM_BACKWARD (training), as graft_ops.def and the reference define
 * it. Kept: the channel; the line: the rest. Slots: 0 grad_y, 1 x, 2 grad_x;
 * per channel 3 save_mean, 4 save_invstd, 5 weight (NULL: 1), 6
 * grad_weight, 7 grad_bias. */
template <int G>
__global__ void k_batch_norm_backward(cuk_lines l) {
    const int lane = G == 1 ? 0 : threadIdx.x % G;
    const int64_t n = l.n_line;
    CU_GROUP_LOOP(G, o, l.n_out) {
        const int64_t gb = cu_keep_offset(l, 0, o), xb = cu_keep_offset(l, 1, o),
                      ob = cu_keep_offset(l, 2, o);
        const double m = cu_load_f64(l.data[3], l.dtype[3], cu_keep_offset(l, 3, o));
        const double rs = cu_load_f64(l.data[4], l.dtype[4], cu_keep_offset(l, 4, o));
        const double wc =
            l.data[5] ? cu_load_f64(l.data[5], l.dtype[5], cu_keep_offset(l, 5, o)) : 1.0;
        double db, dw;
        grad_sums<G>(l, gb, xb, 0, false, m, rs, lane, &db, &dw);
        if (lane == 0) {
            cu_store_f64(l.data[6], l.dtype[6], cu_keep_offset(l, 6, o), dw);
            cu_store_f64(l.data[7], l.dtype[7], cu_keep_offset(l, 7, o), db);
        }
        if (n == 0) continue;
        const double mg = db / (double)n, mgx = dw / (double)n;
        for (int64_t j = lane; j < n; j += G) {
            double gi = cu_load_f64(l.data[0], l.dtype[0], gb + cu_red_offset(l, 0, j));
            double xh = (cu_load_f64(l.data[1], l.dtype[1], xb + cu_red_offset(l, 1, j)) - m) * rs;
            cu_store_f64(l.data[2], l.dtype[2], ob + cu_red_offset(l, 2, j),
                         wc * rs * (gi - mg - xh * mgx));
        }
    }
}

/* LAYER_NORM_BACKWARD's grad_x, per row. Kept: the leading dims; the line:
 * the normalised dims. Slots: 0 grad_y, 1 x, 2 grad_x, 3 mean, 4 rstd (per
 * row), 5 weight (per normalised element; NULL: 1). */
template <int G>
__global__ void k_layer_norm_backward_rows(cuk_lines l) {
    const int lane = G == 1 ? 0 : threadIdx.x % G;
    const int64_t n = l.n_line;
    CU_GROUP_LOOP(G, o, l.n_out) {
        const int64_t gb = cu_keep_offset(l, 0, o), xb = cu_keep_offset(l, 1, o),
                      ob = cu_keep_offset(l, 2, o);
        const double m = cu_load_f64(l.data[3], l.dtype[3], cu_keep_offset(l, 3, o));
        const double r = cu_load_f64(l.data[4], l.dtype[4], cu_keep_offset(l, 4, o));
        const bool w = l.data[5] != NULL;
        double sa, sb;
        grad_sums<G>(l, gb, xb, 0, w, m, r, lane, &sa, &sb);
        const double a = sa / (double)n, b = sb / (double)n;
        for (int64_t j = lane; j < n; j += G) {
            double gwi = cu_load_f64(l.data[0], l.dtype[0], gb + cu_red_offset(l, 0, j));
            if (w) gwi *= cu_load_f64(l.data[5], l.dtype[5], cu_red_offset(l, 5, j));
            double xh = (cu_load_f64(l.data[1], l.dtype[1], xb + cu_red_offset(l, 1, j)) - m) * r;
            cu_store_f64(l.data[2], l.dtype[2], ob + cu_red_offset(l, 2, j), r * (gwi - a - xh * b));
        }
    }
}

/* LAYER_NORM_BACKWARD's grad_weight and grad_bias, per normalised element
 * over the rows. Kept: the normalised dims; the line: the leading dims.
 * Slots: 0 grad_y, 1 x, 3 mean, 4 rstd (along the line), 6 grad_weight,
 * 7 grad_bias. No rows: both 0. */
template <int G>
__global__ void k_layer_norm_backward_cols(cuk_lines l) {
    const int lane = G == 1 ? 0 : threadIdx.x % G;
    CU_GROUP_LOOP(G, o, l.n_out) {
        const int64_t gb = cu_keep_offset(l, 0, o), xb = cu_keep_offset(l, 1, o);
        cu_ksum a = {0, 0}, b = {0, 0};
        for (int64_t j = lane; j < l.n_line; j += G) {
            double gi = cu_load_f64(l.data[0], l.dtype[0], gb + cu_red_offset(l, 0, j));
            double m = cu_load_f64(l.data[3], l.dtype[3], cu_red_offset(l, 3, j));
            double r = cu_load_f64(l.data[4], l.dtype[4], cu_red_offset(l, 4, j));
            double xh = (cu_load_f64(l.data[1], l.dtype[1], xb + cu_red_offset(l, 1, j)) - m) * r;
            cu_kadd(a, gi);
            cu_kadd(b, gi * xh);
        }
        double sg = cu_kvalue(cu_group_reduce<G>(a, add_ksum_n()));
        double sgx = cu_kvalue(cu_group_reduce<G>(b, add_ksum_n()));
        if (lane == 0) {
            cu_store_f64(l.data[6], l.dtype[6], cu_keep_offset(l, 6, o), sgx);
            cu_store_f64(l.data[7], l.dtype[7], cu_keep_offset(l, 7, o), sg);
        }
    }
}

/* Mean and sum of squared deviations of slot 0's line at base, over the
 * group: the corrected two-pass algorithm of the reference. */
template <int G>
__device__ void line_moments(const cuk_lines &l, int64_t base, int lane, double *mean,
                             double *m2) {
    const int64_t n = l.n_line;
    cu_ksum k = {0, 0};
    for (int64_t j = lane; j < n; j += G)
        cu_kadd(k, cu_load_f64(l.data[0], l.dtype[0], base + cu_red_offset(l, 0, j)));
    double mu = cu_kvalue(cu_group_reduce<G>(k, add_ksum_n())) / (double)n;
    cu_ksum sq = {0, 0}, dev = {0, 0};
    for (int64_t j = lane; j < n; j += G) {
        double d = cu_load_f64(l.data[0], l.dtype[0], base + cu_red_offset(l, 0, j)) - mu;
        cu_kadd(sq, d * d);
        cu_kadd(dev, d);
    }
    double sqs = cu_kvalue(cu_group_reduce<G>(sq, add_ksum_n()));
    double dsum = cu_kvalue(cu_group_reduce<G>(dev, add_ksum_n()));
    double r = sqs - dsum * dsum / (double)n;
    *mean = mu;
    *m2 = r < 0 ? 0 : r;
}

template <int G>
__global__ void k_layer_norm(cuk_lines l) {
    const int lane = G == 1 ? 0 : threadIdx.x % G;
    const int64_t n = l.n_line;
    CU_GROUP_LOOP(G, o, l.n_out) {
        const int64_t xb = cu_keep_offset(l, 0, o), yb = cu_keep_offset(l, 1, o);
        double mean = NAN, m2 = NAN;
        if (n > 0) line_moments<G>(l, xb, lane, &mean, &m2);
        const double r = 1.0 / sqrt(m2 / (double)n + l.p1); /* biased variance */
        if (lane == 0) {
            cu_store_f64(l.data[4], l.dtype[4], cu_keep_offset(l, 4, o), mean);
            cu_store_f64(l.data[5], l.dtype[5], cu_keep_offset(l, 5, o), r);
        }
        for (int64_t j = lane; j < n; j += G) {
            double v = (cu_load_f64(l.data[0], l.dtype[0], xb + cu_red_offset(l, 0, j)) - mean) * r;
            if (l.data[2]) v *= cu_load_f64(l.data[2], l.dtype[2], cu_red_offset(l, 2, j));
            if (l.data[3]) v += cu_load_f64(l.data[3], l.dtype[3], cu_red_offset(l, 3, j));
            cu_store_f64(l.data[1], l.dtype[1], yb + cu_red_offset(l, 1, j), v);
        }
    }
}

/* One group per channel. */
template <int G>
__global__ void k_batch_norm(cuk_lines l) {
    const int lane = G == 1 ? 0 : threadIdx.x % G;
    const int64_t n = l.n_line;
    CU_GROUP_LOOP(G, c, l.n_out) {
        const int64_t xb = cu_keep_offset(l, 0, c), yb = cu_keep_offset(l, 1, c);
#define PER_C(slot) cu_keep_offset(l, (slot), c)
        double mean, invstd;
        if (l.flag) {
            double m2 = NAN;
            mean = NAN;
            if (n > 0) line_moments<G>(l, xb, lane, &mean, &m2);
            invstd = 1.0 / sqrt(m2 / (double)n + l.p1);
            /* Without elements there is nothing to fold into the running stats. */
            if (lane == 0 && n > 0) {
                double mom = l.p2;
                if (l.data[4]) {
                    double rm = cu_load_f64(l.data[4], l.dtype[4], PER_C(4));
                    cu_store_f64(l.data[4], l.dtype[4], PER_C(4), (1 - mom) * rm + mom * mean);
                }
                if (l.data[5]) {
                    double unbiased = m2 / ((double)n - 1); /* n = 1: NaN, as PyTorch */
                    double rv = cu_load_f64(l.data[5], l.dtype[5], PER_C(5));
                    cu_store_f64(l.data[5], l.dtype[5], PER_C(5), (1 - mom) * rv + mom * unbiased);
                }
            }
        } else {
            mean = cu_load_f64(l.data[4], l.dtype[4], PER_C(4));
            invstd = 1.0 / sqrt(cu_load_f64(l.data[5], l.dtype[5], PER_C(5)) + l.p1);
        }
        if (lane == 0) {
            cu_store_f64(l.data[6], l.dtype[6], PER_C(6), mean);
            cu_store_f64(l.data[7], l.dtype[7], PER_C(7), invstd);
        }
        const double scale = l.data[2] ? cu_load_f64(l.data[2], l.dtype[2], PER_C(2)) : 1.0;
        const double shift = l.data[3] ? cu_load_f64(l.data[3], l.dtype[3], PER_C(3)) : 0.0;
#undef PER_C
        for (int64_t j = lane; j < n; j += G) {
            double v = (cu_load_f64(l.data[0], l.dtype[0], xb + cu_red_offset(l, 0, j)) - mean) *
                           invstd * scale + shift;
            cu_store_f64(l.data[1], l.dtype[1], yb + cu_red_offset(l, 1, j), v);
        }
    }
}

/* Launches KERNEL<G> over the lines of l for the group size G their length
 * asks for (cu_group.cuh), with *l as its argument. */
#define CU_LAUNCH_LINES(KERNEL, l, s)                                                          \
    switch (cu_group_size((l)->n_line)) {                                                      \
    case 1: KERNEL<1><<<cu_group_blocks((l)->n_out, 1), CU_THREADS, 0, s>>>(*(l)); break;     \
    case 32: KERNEL<32><<<cu_group_blocks((l)->n_out, 32), CU_THREADS, 0, s>>>(*(l)); break;  \
    default:                                                                                   \
        KERNEL<CU_THREADS><<<cu_group_blocks((l)->n_out, CU_THREADS), CU_THREADS, 0, s>>>(*(l)); \
        break;                                                                                 \
    }

/* The same for KERNEL<G, T>(flag, *l), T the float type of slot 0. */
#define CU_LAUNCH_FLOAT_LINES_G(KERNEL, G, flag, l, s)                                          \
    if ((l)->dtype[0] == GFP_F64)                                                               \
        KERNEL<G, double><<<cu_group_blocks((l)->n_out, G), CU_THREADS, 0, s>>>(flag, *(l));    \
    else                                                                                        \
        KERNEL<G, float><<<cu_group_blocks((l)->n_out, G), CU_THREADS, 0, s>>>(flag, *(l));
#define CU_LAUNCH_FLOAT_LINES(KERNEL, flag, l, s)                                               \
    switch (cu_group_size((l)->n_line)) {                                                       \
    case 1: CU_LAUNCH_FLOAT_LINES_G(KERNEL, 1, flag, l, s) break;                               \
    case 32: CU_LAUNCH_FLOAT_LINES_G(KERNEL, 32, flag, l, s) break;                             \
    default: CU_LAUNCH_FLOAT_LINES_G(KERNEL, CU_THREADS, flag, l, s) break;                     \
    }

extern "C" cudaError_t cuk_softmax(cudaStream_t s, uint32_t op, const cuk_lines *l) {
    CU_LAUNCH_FLOAT_LINES(k_softmax, op == GFP_OP_LOG_SOFTMAX, l, s)
    return cu_launched();
}

extern "C" cudaError_t cuk_softmax_backward(cudaStream_t s, uint32_t op, const cuk_lines *l) {
    CU_LAUNCH_FLOAT_LINES(k_softmax_backward, op == GFP_OP_SOFTMAX_BACKWARD, l, s)
    return cu_launched();
}

extern "C" cudaError_t cuk_batch_norm_backward(cudaStream_t s, const cuk_lines *l) {
    CU_LAUNCH_LINES(k_batch_norm_backward, l, s)
    return cu_launched();
}

extern "C" cudaError_t cuk_layer_norm_backward(cudaStream_t s, const cuk_lines *rows,
                                               const cuk_lines *cols) {
    if (cols->n_out > 0) CU_LAUNCH_LINES(k_layer_norm_backward_cols, cols, s)
    if (rows->n_out > 0 && rows->n_line > 0) CU_LAUNCH_LINES(k_layer_norm_backward_rows, rows, s)
    return cu_launched();
}

extern "C" cudaError_t cuk_layer_norm(cudaStream_t s, const cuk_lines *l) {
    CU_LAUNCH_LINES(k_layer_norm, l, s)
    return cu_launched();
}

extern "C" cudaError_t cuk_batch_norm(cudaStream_t s, const cuk_lines *l) {
    CU_LAUNCH_LINES(k_batch_norm, l, s)
    return cu_launched();
}
