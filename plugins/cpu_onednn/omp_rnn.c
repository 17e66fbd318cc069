/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_rnn.c — LSTM_CELL_BACKWARD as one vectorised pass: per element, read
 * the four gate activations, c_prev, tanh(c), dh, dc (and dy) and write the
 * four gate gradients and dc_prev once, where the composed step makes 18
 * launches over [N, H] and [N, 4H] views (measured: they took ~40 us of
 * each step of a [32, 256] LSTM's backward, 5 ms of a 2-layer, 64-step
 * training step).
 *
 * The arithmetic is the reference's (ref_rnn.c), operation for operation,
 * in the tensors' dtype; ISO C mode contracts no multiply-add, so the
 * results are the reference's bit for bit. Taken: every tensor's rows
 * unit-stride (any row stride: the core passes slices of [T, N, H]
 * buffers and column blocks), outputs in buffers no input uses; anything
 * else goes to the reference. */
#include <omp.h>

#include "onednn_internal.h"

enum { A_ACT, A_CP, A_TC, A_DH, A_DC, A_DY, A_IN };
enum { O_DG, O_DCP, O_OUT };

/* Outputs and inputs never share a buffer here (launch checks it), which is
 * what ivdep asserts: the loops vectorise without overlap checks. */
#if defined(__GNUC__) && !defined(__clang__)
#define CELL_IVDEP _Pragma("GCC ivdep")
#else
#define CELL_IVDEP
#endif

/* One row of H elements: p[k] points at the row of input k, y[k] of output
 * k (act and dgates: the row's first block; the others at H, 2H, 3H). */
#define CELL_ROW(NAME, T)                                                                 \
    ODN_CLONES static void NAME(const T *act, const T *cp, const T *tc, const T *dhin,     \
                                const T *dc, const T *dy, T *dg, T *dcp, int64_t H) {     \
        CELL_IVDEP                                                                        \
        for (int64_t j = 0; j < H; j++) {                                                 \
            T i = act[j], f = act[j + H], g = act[j + 2 * H], o = act[j + 3 * H];         \
            T dh = dy ? dhin[j] + dy[j] : dhin[j];                                        \
            T u = dh * o;                                                                 \
            T q = tc[j] * tc[j];                                                          \
            q = (T)1 - q;                                                                 \
            u = u * q;                                                                    \
            u = u + dc[j];                                                                \
            T di = i * i, df = f * f, dgg = g * g, dO = o * o;                            \
            di = i - di, df = f - df, dgg = (T)1 - dgg, dO = o - dO;                      \
            T gi = u * g, gf = u * cp[j], gg = u * i, go = dh * tc[j];                    \
            dg[j] = gi * di;                                                              \
            dg[j + H] = gf * df;                                                          \
            dg[j + 2 * H] = gg * dgg;                                                     \
            dg[j + 3 * H] = go * dO;                                                      \
            dcp[j] = u * f;                                                               \
        }                                                                                 \
    }
CELL_ROW(cell_row_f32, float)
CELL_ROW(cell_row_f64, double)
#undef CELL_ROW

/* Rank 2, [N, w], unit-stride rows. */
static bool rows_ok(const gfp_tensor *t, int32_t dt, int64_t n, int64_t w) {
    return t->dtype == dt && t->rank == 2 && t->sizes[0] == n && t->sizes[1] == w &&
           (t->strides[1] == 1 || w == 1) && (t->strides[0] >= w || n == 1);
}

static gfp_status cell_backward(const gfp_tensor *const *in, uint32_t n_in,
                                const gfp_tensor *const *out, uint32_t n_out) {
    if (n_in < 5 || n_in > 6 || n_out != 2) return ODN_FALLBACK;
    for (uint32_t i = 0; i < 5; i++)
        if (!in[i]) return ODN_FALLBACK;
    if (!out[O_DG] || !out[O_DCP]) return ODN_FALLBACK;
    const gfp_tensor *act = in[A_ACT];
    int32_t dt = act->dtype;
    if ((dt != GFP_F32 && dt != GFP_F64) || act->rank != 2 || act->sizes[1] % 4 != 0)
        return ODN_FALLBACK;
    int64_t N = act->sizes[0], H = act->sizes[1] / 4;
    const gfp_tensor *dy = n_in == 6 ? in[A_DY] : NULL;
    const gfp_tensor *ts[A_IN + O_OUT] = {act, in[A_CP], in[A_TC], in[A_DH], in[A_DC], dy,
                                          out[O_DG], out[O_DCP]};
    for (int k = 0; k < A_IN + O_OUT; k++) {
        if (!ts[k]) continue;
        int64_t w = (k == A_ACT || k == A_IN + O_DG) ? 4 * H : H;
        if (!rows_ok(ts[k], dt, N, w)) return ODN_FALLBACK;
    }
    for (int o = A_IN; o < A_IN + O_OUT; o++)
        for (int k = 0; k < A_IN + O_OUT; k++)
            if (k != o && ts[k] && ts[k]->buffer == ts[o]->buffer) return ODN_FALLBACK;
    if (N == 0 || H == 0) return GFP_OK;
    size_t es = pk_dtype_size(dt);
    char *base[A_IN + O_OUT];
    int64_t rs[A_IN + O_OUT]; /* row strides in bytes */
    for (int k = 0; k < A_IN + O_OUT; k++) {
        base[k] = ts[k] ? (char *)ts[k]->buffer + ts[k]->offset : NULL;
        rs[k] = ts[k] ? ts[k]->strides[0] * (int64_t)es : 0;
    }
    /* about twenty operations an element: weigh it as a few copies */
    int nt = odn_threads(N * H * 8);
    ODN_PARALLEL(nt, t, tn, {
        int64_t lo = N * t / tn, hi = N * (t + 1) / tn;
        for (int64_t n = lo; n < hi; n++) {
            char *p[A_IN + O_OUT];
            for (int k = 0; k < A_IN + O_OUT; k++) p[k] = base[k] ? base[k] + n * rs[k] : NULL;
            if (dt == GFP_F32)
                cell_row_f32((const float *)p[0], (const float *)p[1], (const float *)p[2],
                             (const float *)p[3], (const float *)p[4], (const float *)p[5],
                             (float *)p[6], (float *)p[7], H);
            else
                cell_row_f64((const double *)p[0], (const double *)p[1], (const double *)p[2],
                             (const double *)p[3], (const double *)p[4], (const double *)p[5],
                             (double *)p[6], (double *)p[7], H);
        }
    });
    return GFP_OK;
}

gfp_status odn_rnn_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                          const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    (void)params;
    if (op == GFP_OP_LSTM_CELL_BACKWARD) return cell_backward(in, n_in, out, n_out);
    return ODN_FALLBACK;
}
