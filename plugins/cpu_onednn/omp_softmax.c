/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_softmax.c — SOFTMAX and LOG_SOFTMAX (f32, f64) in C loops.
 *
 * Not on oneDNN: measured on oneDNN 2.6, its softmax takes exp(NaN) to +inf
 * (a line holding a NaN must become all NaN) and its log is off by ~1.4e-6
 * absolute, so log_softmax of a confident prediction (a value near 0, where
 * the loss lives) loses whole digits. Here a line is: its max (a NaN wins),
 * the sum of exp(x - max) accumulated in double, then exp(x - max) / sum or
 * (x - max) - log(sum), as the reference computes it. f32 uses the vectorised
 * odn_expf; lines along the last, unit-stride dim run vectorised. */
#include <math.h>
#include <omp.h>

#include "onednn_internal.h"
#include "onednn_math.h"

#define SOFTMAX_LINE(NAME, T, EXP, LOG)                                                   \
    ODN_CLONES static void NAME(const T *x, int64_t sx, T *y, int64_t sy, int64_t n,     \
                                bool log_out) {                                          \
        if (sx == 1 && sy == 1) {                                                        \
            NAME##_unit(x, y, n, log_out);                                               \
            return;                                                                      \
        }                                                                                \
        T m = x[0];                                                                      \
        for (int64_t i = 1; i < n; i++) {                                                \
            T v = x[i * sx];                                                             \
            m = (v > m || v != v) && m == m ? v : m;                                     \
        }                                                                                \
        double s = 0;                                                                    \
        for (int64_t i = 0; i < n; i++) s += (double)EXP(x[i * sx] - m);                 \
        if (log_out) {                                                                   \
            T ls = (T)LOG(s);                                                            \
            for (int64_t i = 0; i < n; i++) y[i * sy] = (x[i * sx] - m) - ls;            \
        } else {                                                                         \
            T inv = (T)(1.0 / s);                                                        \
            for (int64_t i = 0; i < n; i++) y[i * sy] = EXP(x[i * sx] - m) * inv;        \
        }                                                                                \
    }

/* A unit-stride line, vectorised: the max as a max reduction with NaN seen
 * apart (a NaN anywhere makes the max NaN, as above), then for softmax ONE
 * pass of exp that stores exp(x - max) into y while it sums (y may be x
 * itself: each element is read before it is written), and a pass scaling
 * y; for log_softmax the exp pass only sums and the last pass writes
 * (x - max) - log(sum). Same operations in the same order per element as
 * the strided form, so both give the same values. */
#define SOFTMAX_UNIT(NAME, T, EXP, LOG, NEG_INF)                                          \
    ODN_CLONES static void NAME(const T *x, T *y, int64_t n, bool log_out) {             \
        T m = NEG_INF;                                                                   \
        int nan = 0;                                                                     \
        _Pragma("omp simd reduction(max : m) reduction(| : nan)")                        \
        for (int64_t i = 0; i < n; i++) {                                                \
            m = x[i] > m ? x[i] : m;                                                     \
            nan |= x[i] != x[i];                                                         \
        }                                                                                \
        if (nan) m = (T)NAN;                                                             \
        double s = 0;                                                                    \
        if (log_out) {                                                                   \
            _Pragma("omp simd reduction(+ : s)")                                         \
            for (int64_t i = 0; i < n; i++) s += (double)EXP(x[i] - m);                  \
            T ls = (T)LOG(s);                                                            \
            _Pragma("omp simd")                                                          \
            for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) - ls;                      \
        } else {                                                                         \
            _Pragma("omp simd reduction(+ : s)")                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                T e = EXP(x[i] - m);                                                     \
                y[i] = e;                                                                \
                s += (double)e;                                                          \
            }                                                                            \
            T inv = (T)(1.0 / s);                                                        \
            _Pragma("omp simd")                                                          \
            for (int64_t i = 0; i < n; i++) y[i] *= inv;                                 \
        }                                                                                \
    }
SOFTMAX_UNIT(line_f32_unit, float, odn_expf, log, -INFINITY)

/* Many short lines one after the other (attention's rows of 8 to 32
 * elements), f32: the per-line vector loops above cost ~70 ns a line of 8
 * there (their set-up, not the arithmetic: [64, 4, 8, 8] took 143 us).
 * Here each line's max and x - max are scalar, exp runs vectorised over
 * the whole block, then each line's sum (double, in order) and scale. The
 * same formula as the line kernels: max with NaN winning, exp(x - max),
 * then e / sum or (x - max) - log(sum). y is not x (the caller checks). */
#define SHORT_BLOCK 256
ODN_CLONES static void short_lines_f32(const float *x, float *y, int64_t lines, int64_t n,
                                       bool log_out) {
    float mx[SHORT_BLOCK];
    for (int64_t l0 = 0; l0 < lines; l0 += SHORT_BLOCK) {
        int64_t nl = lines - l0 < SHORT_BLOCK ? lines - l0 : SHORT_BLOCK;
        const float *xb = x + l0 * n;
        float *yb = y + l0 * n;
        for (int64_t l = 0; l < nl; l++) {
            const float *xl = xb + l * n;
            float m = -INFINITY;
            int nan = 0;
            for (int64_t i = 0; i < n; i++) {
                m = xl[i] > m ? xl[i] : m;
                nan |= xl[i] != xl[i];
            }
            mx[l] = nan ? (float)NAN : m;
            for (int64_t i = 0; i < n; i++) yb[l * n + i] = xl[i] - mx[l];
        }
        int64_t ne = nl * n;
#pragma omp simd
        for (int64_t k = 0; k < ne; k++) yb[k] = odn_expf(yb[k]);
        for (int64_t l = 0; l < nl; l++) {
            float *yl = yb + l * n;
            double s = 0;
            for (int64_t i = 0; i < n; i++) s += (double)yl[i];
            if (log_out) {
                float ls = (float)log(s);
                const float *xl = xb + l * n;
                for (int64_t i = 0; i < n; i++) yl[i] = (xl[i] - mx[l]) - ls;
            } else {
                float inv = (float)(1.0 / s);
                for (int64_t i = 0; i < n; i++) yl[i] *= inv;
            }
        }
    }
}
#undef SHORT_BLOCK
SOFTMAX_UNIT(line_f64_unit, double, exp, log, -INFINITY)
SOFTMAX_LINE(line_f32, float, odn_expf, log)
SOFTMAX_LINE(line_f64, double, exp, log)

gfp_status odn_softmax_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                              const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    const gfp_dim_params *dp = params;
    if (n_in != 1 || n_out != 1 || !in[0] || !dp || dp->struct_size < GFP_DIM_PARAMS_SIZE_V1_0)
        return ODN_FALLBACK;
    const gfp_tensor *x = in[0], *y = out[0];
    int dim = dp->dim;
    if (x->rank < 1 || dim < 0 || dim >= x->rank || !pk_same_shape(x, y)) return ODN_FALLBACK;
    if ((x->dtype != GFP_F32 && x->dtype != GFP_F64) || y->dtype != x->dtype || !odn_writable(y))
        return ODN_FALLBACK;
    int64_t total = pk_numel(x);
    if (total == 0) return GFP_OK;
    int64_t n = x->sizes[dim], lines = total / n;
    /* The line index walks every dim but dim, row-major. */
    int64_t osz[GFP_MAX_RANK], oxs[GFP_MAX_RANK], oys[GFP_MAX_RANK];
    int orank = 0;
    for (int d = 0; d < x->rank; d++) {
        if (d == dim) continue;
        osz[orank] = x->sizes[d];
        oxs[orank] = x->strides[d];
        oys[orank] = y->strides[d];
        orank++;
    }
    bool log_out = op == GFP_OP_LOG_SOFTMAX, f32 = x->dtype == GFP_F32;
    size_t es = f32 ? 4 : 8;
    const char *xb = (const char *)x->buffer + x->offset;
    char *yb = (char *)y->buffer + y->offset;
    int64_t sx = x->strides[dim], sy = y->strides[dim];
    int nt = odn_threads(total * 4);
    if (f32 && n <= 32 && dim == x->rank - 1 && pk_is_contiguous(x) && pk_is_contiguous(y) &&
        x->buffer != y->buffer) {
        ODN_PARALLEL(nt, t, tn, {
            int64_t lo = lines * t / tn, hi = lines * (t + 1) / tn;
            short_lines_f32((const float *)(const void *)xb + lo * n, (float *)(void *)yb + lo * n,
                            hi - lo, n, log_out);
        });
        return GFP_OK;
    }
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t l = 0; l < lines; l++) {
        int64_t xo = 0, yo = 0, j = l;
        for (int d = orank - 1; d >= 0; d--) {
            xo += (j % osz[d]) * oxs[d];
            yo += (j % osz[d]) * oys[d];
            j /= osz[d];
        }
        const void *xp = xb + xo * (int64_t)es;
        void *yp = yb + yo * (int64_t)es;
        if (f32) line_f32(xp, sx, yp, sy, n, log_out);
        else line_f64(xp, sx, yp, sy, n, log_out);
    });
    return GFP_OK;
}

/* SOFTMAX_BACKWARD / LOG_SOFTMAX_BACKWARD in f32 on unit-stride lines (the
 * last dim of contiguous tensors, as attention produces them): the line's
 * sum (double accumulator), then the line. Others: the reference kernels. */
ODN_CLONES static void softmax_bw_line(const float *g, const float *y, float *o, int64_t n,
                                       bool soft) {
    double s = 0;
    if (soft) {
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < n; i++) s += (double)(g[i] * y[i]);
        float sf = (float)s;
#pragma omp simd
        for (int64_t i = 0; i < n; i++) o[i] = y[i] * (g[i] - sf);
    } else {
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < n; i++) s += (double)g[i];
        float sf = (float)s;
#pragma omp simd
        for (int64_t i = 0; i < n; i++) o[i] = g[i] - odn_expf(y[i]) * sf;
    }
}

gfp_status odn_softmax_backward_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                       const gfp_tensor *const *out, uint32_t n_out,
                                       const void *params) {
    const gfp_dim_params *dp = params;
    if (n_in != 2 || n_out != 1 || !in[0] || !in[1] || !dp ||
        dp->struct_size < GFP_DIM_PARAMS_SIZE_V1_0)
        return ODN_FALLBACK;
    const gfp_tensor *g = in[0], *y = in[1], *o = out[0];
    if (g->dtype != GFP_F32 || y->dtype != GFP_F32 || o->dtype != GFP_F32 || y->rank < 1 ||
        dp->dim != y->rank - 1 || !pk_same_shape(g, y) || !pk_same_shape(g, o) ||
        !pk_is_contiguous(g) || !pk_is_contiguous(y) || !pk_is_contiguous(o) || !odn_writable(o))
        return ODN_FALLBACK;
    int64_t total = pk_numel(y), n = y->sizes[y->rank - 1];
    if (total == 0 || n == 0) return ODN_FALLBACK;
    const float *gp = (const float *)(const void *)((const char *)g->buffer + g->offset);
    const float *yp = (const float *)(const void *)((const char *)y->buffer + y->offset);
    float *op_ = (float *)(void *)((char *)o->buffer + o->offset);
    bool soft = op == GFP_OP_SOFTMAX_BACKWARD;
    int64_t lines = total / n;
    int nt = odn_threads(total * 3);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t l = 0; l < lines; l++) {
        softmax_bw_line(gp + l * n, yp + l * n, op_ + l * n, n, soft);
    });
    return GFP_OK;
}
