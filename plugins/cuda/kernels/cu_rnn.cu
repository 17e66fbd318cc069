/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_rnn.cu — LSTM_CELL and LSTM_CELL_BACKWARD: the pointwise parts of one
 * LSTM step and of its backward, one thread per (row, hidden unit).
 *
 * graft_ops.def's contract: in the dtype, one rounding per product and sum
 * (nvcc --fmad=false), in the composed ops' order, with the activations
 * this plugin's SIGMOID and TANH compute: the generated formulas of
 * op_math.def (gf_math_cuda.h) the elementwise kernels call, so an LSTM's
 * results do not depend on whether the core composed the step. */
#include "cu_common.cuh"
#include "gf_math_cuda.h"

__device__ __forceinline__ float act_sigmoid(float x) { return gf_f32_sigmoid(x, 0.0f, 0.0f, 0, 0); }
__device__ __forceinline__ double act_sigmoid(double x) { return gf_f64_sigmoid(x, 0.0, 0.0, 0, 0); }
__device__ __forceinline__ float act_tanh(float x) { return gf_f32_tanh(x, 0.0f, 0.0f, 0, 0); }
__device__ __forceinline__ double act_tanh(double x) { return gf_f64_tanh(x, 0.0, 0.0, 0, 0); }

#define AT(k, r, c) ((r) * l.s0[k] + (c) * l.s1[k])

template <typename T>
__global__ void k_lstm_cell(cuk_lstm l) {
    const int64_t H = l.h;
    CU_GRID_LOOP(e, l.n * H) {
        const int64_t r = e / H, j = e - r * H;
        const T *mm = (const T *)l.data[0], *p = (const T *)l.data[1];
        T a[4];
        for (int k = 0; k < 4; k++) {
            T z = mm[AT(0, r, j + k * H)] + p[AT(1, r, j + k * H)];
            a[k] = k == 2 ? act_tanh(z) : act_sigmoid(z);
            ((T *)l.data[3])[AT(3, r, j + k * H)] = a[k];
        }
        T cp = ((const T *)l.data[2])[AT(2, r, j)];
        T fc = a[1] * cp, ig = a[0] * a[2];
        T c = fc + ig;
        T tc = act_tanh(c);
        ((T *)l.data[4])[AT(4, r, j)] = c;
        ((T *)l.data[5])[AT(5, r, j)] = tc;
        ((T *)l.data[6])[AT(6, r, j)] = a[3] * tc;
    }
}

template <typename T>
__global__ void k_lstm_cell_backward(cuk_lstm l) {
    const int64_t H = l.h;
    CU_GRID_LOOP(e, l.n * H) {
        const int64_t r = e / H, j = e - r * H;
        const T *act = (const T *)l.data[0];
        T i = act[AT(0, r, j)], f = act[AT(0, r, j + H)], g = act[AT(0, r, j + 2 * H)];
        T o = act[AT(0, r, j + 3 * H)];
        T cp = ((const T *)l.data[1])[AT(1, r, j)], tc = ((const T *)l.data[2])[AT(2, r, j)];
        T dh = ((const T *)l.data[3])[AT(3, r, j)], dc = ((const T *)l.data[4])[AT(4, r, j)];
        if (l.data[5]) dh = dh + ((const T *)l.data[5])[AT(5, r, j)];
        T u = dh * o;
        T q = tc * tc;
        q = (T)1 - q;
        u = u * q;
        u = u + dc;
        T di = i * i, df = f * f, dg = g * g, dO = o * o;
        di = i - di;
        df = f - df;
        dg = (T)1 - dg;
        dO = o - dO;
        T gi = u * g, gf = u * cp, gg = u * i, go = dh * tc;
        T *dgates = (T *)l.data[6];
        dgates[AT(6, r, j)] = gi * di;
        dgates[AT(6, r, j + H)] = gf * df;
        dgates[AT(6, r, j + 2 * H)] = gg * dg;
        dgates[AT(6, r, j + 3 * H)] = go * dO;
        ((T *)l.data[7])[AT(7, r, j)] = u * f;
    }
}
#undef AT

extern "C" cudaError_t cuk_lstm_cell(cudaStream_t s, const cuk_lstm *l) {
    unsigned g = cu_blocks(l->n * l->h);
    if (l->dtype == GFP_F64) k_lstm_cell<double><<<g, CU_THREADS, 0, s>>>(*l);
    else k_lstm_cell<float><<<g, CU_THREADS, 0, s>>>(*l);
    return cu_launched();
}

extern "C" cudaError_t cuk_lstm_cell_backward(cudaStream_t s, const cuk_lstm *l) {
    unsigned g = cu_blocks(l->n * l->h);
    if (l->dtype == GFP_F64) k_lstm_cell_backward<double><<<g, CU_THREADS, 0, s>>>(*l);
    else k_lstm_cell_backward<float><<<g, CU_THREADS, 0, s>>>(*l);
    return cu_launched();
}
