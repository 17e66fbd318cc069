/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_pool.c — 2-D pooling (NCHW) and its gradients.
 *
 * Max pooling runs in C loops parallelised over the N*C planes: graft's ABI
 * returns the argmax as a flat h*W+w index per plane (i64), which oneDNN's
 * max pooling does not produce (its workspace is an opaque per-window
 * offset), and recovering the index from oneDNN's output would scan every
 * window again, which is the whole cost of the loop. The semantics are the
 * reference's (ref_pool.c): padding never wins, the first maximum wins, a NaN
 * takes over; the backward scatters through the indices.
 *
 * Average pooling (f32) runs on oneDNN's pooling primitive over graft's
 * strided views. oneDNN's divisor with padding counted is always kh*kw,
 * PyTorch's is the window clipped to the padded input: the two agree unless
 * a ceil-mode window runs past the padding, which stays with the reference. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_internal.h"

/* The geometry, checked by pk_check_pool2d (plugin_kit.h): a failure is
 * the reference's too, so it is reported here rather than falling back. */
typedef pk_pool2d_geom pool_geom;

static bool rank4(const gfp_tensor *t) { return t && t->rank == 4; }

#define AT(t, base, n, c, i, j)                                                           \
    ((base) + (n) * (t)->strides[0] + (c) * (t)->strides[1] + (i) * (t)->strides[2] +     \
     (j) * (t)->strides[3])

/* ------------------------------------------------------------ max pooling */
/* A plane at a time. For kernel column j the outputs whose tap lands inside
 * the input form one range [lo_j, hi_j) of ow (padding excluded exactly, no
 * test per element), computed once per launch; for each tap (i, j) and
 * output row the inner loop is a strided walk the compiler vectorises. Taps
 * are visited in window order for every output at once, which keeps the
 * reference's rules (first maximum wins, a NaN takes over). best / at hold
 * one plane of outputs per thread. */
static int64_t ceil_div(int64_t a, int64_t b) { return -pk_floor_div(-a, b); }

typedef struct tap_range {
    int64_t off, lo, hi; /* iw = ow * sw + off for ow in [lo, hi) */
} tap_range;

/* TAP: the integer type of a tap number, as wide as T so that the compare
 * and the two selects vectorise lane for lane. */
#define MAX_POOL_FWD(NAME, T, TAP)                                                        \
    ODN_CLONES static void NAME##_plane(const pool_geom *g, const tap_range *taps,          \
                                        const T *plane, int64_t sh_, int64_t sw_,           \
                                        T *restrict best, TAP *restrict at) {               \
        const int64_t ho = g->ho, wo = g->wo, kh = g->kh, kw = g->kw, h = g->h;           \
        const int64_t sh = g->sh, ph = g->ph, dh = g->dh, step = g->sw * sw_;             \
        for (int64_t o = 0; o < ho * wo; o++) {                                           \
            best[o] = (T)-INFINITY;                                                       \
            at[o] = -1;                                                                   \
        }                                                                                 \
        for (int64_t i = 0; i < kh; i++)                                                  \
            for (int64_t j = 0; j < kw; j++) {                                            \
                const int64_t off = taps[j].off, lo = taps[j].lo, hi = taps[j].hi;        \
                const TAP tap = (TAP)(i * kw + j);                                        \
                for (int64_t oh = 0; oh < ho; oh++) {                                     \
                    int64_t ih = oh * sh - ph + i * dh;                                   \
                    if (ih < 0 || ih >= h) continue; /* padding never wins */             \
                    const T *restrict src = plane + ih * sh_ + off * sw_;                 \
                    T *restrict b = best + oh * wo;                                       \
                    TAP *restrict a = at + oh * wo;                                       \
                    for (int64_t ow = lo; ow < hi; ow++) {                                \
                        T v = src[ow * step];                                             \
                        bool take = (a[ow] < 0) | (v > b[ow]) | (v != v);                 \
                        b[ow] = take ? v : b[ow];                                         \
                        a[ow] = take ? tap : a[ow];                                       \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
    }                                                                                     \
    static bool NAME(const pool_geom *g, const gfp_tensor *x, const gfp_tensor *y,        \
                     const gfp_tensor *ind) {                                             \
        const T *xb = (const T *)((char *)x->buffer + x->offset);                         \
        T *yb = (T *)((char *)y->buffer + y->offset);                                     \
        int64_t *ib = (int64_t *)(void *)((char *)ind->buffer + ind->offset);             \
        int64_t planes = g->n * g->c, outs = g->ho * g->wo;                               \
        int nt = odn_threads(planes * outs * g->kh * g->kw);                              \
        T *best_all = malloc(sizeof(T) * (size_t)(outs * nt));                            \
        TAP *at_all = malloc(sizeof(TAP) * (size_t)(outs * nt));                          \
        tap_range *taps = malloc(sizeof(tap_range) * (size_t)g->kw);                      \
        int64_t *tap_off = malloc(sizeof(int64_t) * (size_t)(g->kh * g->kw));             \
        if (!best_all || !at_all || !taps || !tap_off) {                                  \
            free(best_all), free(at_all), free(taps), free(tap_off);                      \
            return false;                                                                 \
        }                                                                                 \
        for (int64_t j = 0; j < g->kw; j++) {                                             \
            int64_t off = j * g->dw - g->pw;                                              \
            int64_t lo = ceil_div(-off, g->sw), hi = pk_floor_div(g->w - 1 - off, g->sw) + 1; \
            taps[j].off = off;                                                            \
            taps[j].lo = lo < 0 ? 0 : lo;                                                 \
            taps[j].hi = hi > g->wo ? g->wo : hi;                                         \
            for (int64_t i = 0; i < g->kh; i++) /* flat index of tap (i, j) at output 0 */ \
                tap_off[i * g->kw + j] = i * g->dh * g->w + off;                          \
        }                                                                                 \
        ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t pl = 0; pl < planes; pl++) {  \
            int64_t n = pl / g->c, c = pl % g->c, t = odn_team_thread(nt);                \
            T *best = best_all + t * outs;                                                \
            TAP *at = at_all + t * outs;                                                  \
            const T *plane = xb + n * x->strides[0] + c * x->strides[1];                  \
            NAME##_plane(g, taps, plane, x->strides[2], x->strides[3], best, at);         \
            for (int64_t oh = 0; oh < g->ho; oh++) {                                      \
                T *yr = AT(y, yb, n, c, oh, 0);                                           \
                int64_t *ir = AT(ind, ib, n, c, oh, 0);                                   \
                int64_t row0 = (oh * g->sh - g->ph) * g->w;                               \
                for (int64_t ow = 0; ow < g->wo; ow++) {                                  \
                    int64_t tp = at[oh * g->wo + ow];                                     \
                    yr[ow * y->strides[3]] = best[oh * g->wo + ow];                       \
                    ir[ow * ind->strides[3]] = tp < 0 ? -1 : row0 + tap_off[tp] + ow * g->sw; \
                }                                                                         \
            }                                                                             \
        });                                                                               \
        free(best_all), free(at_all), free(taps), free(tap_off);                          \
        return true;                                                                      \
    }
MAX_POOL_FWD(max_pool_f32, float, int32_t)
MAX_POOL_FWD(max_pool_f64, double, int64_t)

/* The common case, kernel 2x2 with stride 2, every window inside the input
 * and unit-stride rows: one pass, four loads and three selects per output
 * (measured: the general tap-by-tap walk spent ~15% of a small CNN's step). */
#define MAX_POOL_2X2(NAME, T, TAP)                                                        \
    ODN_CLONES static void NAME##_rows(const T *x0, const T *x1, T *y, int64_t *ind,      \
                                       int64_t wo, int64_t base, int64_t w,                \
                                       int64_t ys, int64_t is) {                           \
        TAP tap[256]; /* lanes of T's width: the selects vectorise; indices after */     \
        for (int64_t o0 = 0; o0 < wo; o0 += 256) {                                        \
            int64_t n = wo - o0 < 256 ? wo - o0 : 256;                                    \
            const T *r0 = x0 + 2 * o0, *r1 = x1 + 2 * o0;                                 \
            for (int64_t i = 0; i < n; i++) {                                             \
                T a = r0[2 * i], b = r0[2 * i + 1], c = r1[2 * i], d = r1[2 * i + 1];     \
                /* the tap walk's rule: a tap takes over when greater or NaN (so the   \
                 * first maximum stays, and the last NaN wins) */                         \
                T m = a;                                                                  \
                TAP t = 0;                                                                \
                bool tb = (b > m) | (b != b);                                             \
                t = tb ? 1 : t;                                                           \
                m = tb ? b : m;                                                           \
                bool tc = (c > m) | (c != c);                                             \
                t = tc ? 2 : t;                                                           \
                m = tc ? c : m;                                                           \
                bool td = (d > m) | (d != d);                                             \
                t = td ? 3 : t;                                                           \
                m = td ? d : m;                                                           \
                y[(o0 + i) * ys] = m;                                                     \
                tap[i] = t;                                                               \
            }                                                                             \
            for (int64_t i = 0; i < n; i++)                                               \
                ind[(o0 + i) * is] = base + 2 * (o0 + i) + (tap[i] >> 1) * w + (tap[i] & 1); \
        }                                                                                 \
    }                                                                                     \
    static void NAME(const pool_geom *g, const gfp_tensor *x, const gfp_tensor *y,        \
                     const gfp_tensor *ind) {                                             \
        const T *xb = (const T *)((char *)x->buffer + x->offset);                         \
        T *yb = (T *)((char *)y->buffer + y->offset);                                     \
        int64_t *ib = (int64_t *)(void *)((char *)ind->buffer + ind->offset);             \
        int64_t planes = g->n * g->c;                                                     \
        int nt = odn_threads(planes * g->ho * g->wo * 4);                                 \
        _Pragma("omp parallel for num_threads(nt) if (nt > 1) schedule(static)")          \
        for (int64_t pl = 0; pl < planes; pl++) {                                         \
            int64_t n = pl / g->c, c = pl % g->c;                                         \
            const T *plane = xb + n * x->strides[0] + c * x->strides[1];                  \
            for (int64_t oh = 0; oh < g->ho; oh++)                                        \
                NAME##_rows(plane + 2 * oh * x->strides[2],                               \
                            plane + (2 * oh + 1) * x->strides[2], AT(y, yb, n, c, oh, 0),   \
                            AT(ind, ib, n, c, oh, 0), g->wo, 2 * oh * g->w, g->w,         \
                            y->strides[3], ind->strides[3]);                              \
        }                                                                                 \
    }
MAX_POOL_2X2(max_pool_2x2_f32_any, float, int32_t)
MAX_POOL_2X2(max_pool_2x2_f64, double, int64_t)

/* f32 rows are short (a small CNN's are 28 and 14 outputs): the loop above
 * runs them in its scalar remainder, branching on every compare (measured:
 * 14% of that CNN's step on two threads). With AVX-512, 16 outputs a step
 * and masked tails: two rows of 32 inputs loaded, split into the four taps
 * of each window by permutes, the same selects as masks. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#include <immintrin.h>

#include "omp_half_vec.h"
#define ODN_POOL_AVX512 1
#define POOL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))
/* half: 0 for f32 rows, else the 16-bit dtype (widened as loaded, the
 * maxima rounded back as stored: exact, each is one of the inputs). */
POOL_AVX512 static inline __attribute__((always_inline)) void
pool_row(const void *x0v, const void *x1v, void *yv, int64_t *ind, int64_t wo, int64_t base,
         int64_t w, int32_t half) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4,
                                          2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512i lanes = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i one = _mm512_set1_epi64(1), two = _mm512_set1_epi64(2);
    const __m512i vw = _mm512_set1_epi64(w);
    for (int64_t o0 = 0; o0 < wo; o0 += 16) {
        int64_t n = wo - o0 < 16 ? wo - o0 : 16, ni = 2 * n;
        __mmask16 mo = (__mmask16)((1u << n) - 1);
        __m512 p0, p1, q0, q1;
        if (half) {
            __mmask32 mi = (__mmask32)(ni >= 32 ? 0xffffffffu : (1u << ni) - 1);
            const uint16_t *r0 = (const uint16_t *)x0v + 2 * o0;
            const uint16_t *r1 = (const uint16_t *)x1v + 2 * o0;
            __m512i a = _mm512_maskz_loadu_epi16(mi, r0), b = _mm512_maskz_loadu_epi16(mi, r1);
            p0 = odn_hv_to_f32(_mm512_castsi512_si256(a), half);
            p1 = odn_hv_to_f32(_mm512_extracti64x4_epi64(a, 1), half);
            q0 = odn_hv_to_f32(_mm512_castsi512_si256(b), half);
            q1 = odn_hv_to_f32(_mm512_extracti64x4_epi64(b, 1), half);
        } else {
            __mmask16 mlo = (__mmask16)(ni >= 16 ? 0xffffu : (1u << ni) - 1);
            __mmask16 mhi = (__mmask16)(ni <= 16 ? 0u : (1u << (ni - 16)) - 1);
            const float *r0 = (const float *)x0v + 2 * o0, *r1 = (const float *)x1v + 2 * o0;
            p0 = _mm512_maskz_loadu_ps(mlo, r0), p1 = _mm512_maskz_loadu_ps(mhi, r0 + 16);
            q0 = _mm512_maskz_loadu_ps(mlo, r1), q1 = _mm512_maskz_loadu_ps(mhi, r1 + 16);
        }
        __m512 taps[4] = {_mm512_permutex2var_ps(p0, even, p1), _mm512_permutex2var_ps(p0, odd, p1),
                          _mm512_permutex2var_ps(q0, even, q1), _mm512_permutex2var_ps(q0, odd, q1)};
        /* the tap walk's rule: a tap takes over when greater or NaN */
        __m512 m = taps[0];
        __m512i t = _mm512_setzero_si512();
        for (int k = 1; k < 4; k++) {
            __mmask16 take = _mm512_cmp_ps_mask(taps[k], m, _CMP_GT_OQ) |
                             _mm512_cmp_ps_mask(taps[k], taps[k], _CMP_UNORD_Q);
            m = _mm512_mask_mov_ps(m, take, taps[k]);
            t = _mm512_mask_mov_epi32(t, take, _mm512_set1_epi32(k));
        }
        if (half)
            _mm256_mask_storeu_epi16((uint16_t *)yv + o0, mo, odn_hv_exact_from_f32(m, half));
        else
            _mm512_mask_storeu_ps((float *)yv + o0, mo, m);
        /* index: base + 2 * ow + (tap & 1) + (tap & 2 ? w : 0), 8 lanes at a time */
        for (int h = 0; h < 2; h++) {
            __m512i th = _mm512_cvtepi32_epi64(h ? _mm512_extracti64x4_epi64(t, 1)
                                                 : _mm512_castsi512_si256(t));
            __m512i idx = _mm512_add_epi64(_mm512_set1_epi64(base + 2 * o0 + 16 * h), lanes);
            idx = _mm512_add_epi64(idx, _mm512_and_si512(th, one));
            idx = _mm512_mask_add_epi64(idx, _mm512_test_epi64_mask(th, two), idx, vw);
            _mm512_mask_storeu_epi64(ind + o0 + 8 * h, (__mmask8)(mo >> (8 * h)), idx);
        }
    }
}

/* Every plane's rows, f32 (half 0) or 16-bit; x's, y's and the indices'
 * rows unit-stride (the caller checks). */
POOL_AVX512 static inline __attribute__((always_inline)) void
pool_planes(const pool_geom *g, const gfp_tensor *x, const gfp_tensor *y, const gfp_tensor *ind,
            int32_t half) {
    size_t es = half ? 2 : 4;
    const char *xb = (const char *)x->buffer + x->offset;
    char *yb = (char *)y->buffer + y->offset;
    int64_t *ib = (int64_t *)(void *)((char *)ind->buffer + ind->offset);
    int64_t planes = g->n * g->c;
    int nt = odn_threads(planes * g->ho * g->wo * 4);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t pl = 0; pl < planes; pl++) {
        int64_t n = pl / g->c, c = pl % g->c;
        const char *plane = xb + (size_t)(n * x->strides[0] + c * x->strides[1]) * es;
        size_t row = (size_t)x->strides[2] * es;
        for (int64_t oh = 0; oh < g->ho; oh++) {
            /* the row pair two output rows down (the hardware's stream
             * prefetch lags on these short rows) */
            const char *ahead = plane + (size_t)(2 * oh + 4) * row;
            for (int64_t b = 0; b < (int64_t)(2 * row) && oh + 2 < g->ho; b += 64)
                _mm_prefetch(ahead + b, _MM_HINT_T0);
            pool_row(plane + (size_t)(2 * oh) * row, plane + (size_t)(2 * oh + 1) * row,
                     yb + (size_t)(n * y->strides[0] + c * y->strides[1] + oh * y->strides[2]) * es,
                     AT(ind, ib, n, c, oh, 0), g->wo, 2 * oh * g->w, g->w, half);
        }
    });
}
POOL_AVX512 static void pool_planes_f32(const pool_geom *g, const gfp_tensor *x,
                                        const gfp_tensor *y, const gfp_tensor *ind) {
    pool_planes(g, x, y, ind, 0);
}
POOL_AVX512 static void pool_planes_bf16(const pool_geom *g, const gfp_tensor *x,
                                         const gfp_tensor *y, const gfp_tensor *ind) {
    pool_planes(g, x, y, ind, GFP_BF16);
}
POOL_AVX512 static void pool_planes_f16(const pool_geom *g, const gfp_tensor *x,
                                        const gfp_tensor *y, const gfp_tensor *ind) {
    pool_planes(g, x, y, ind, GFP_F16);
}
static bool pool_avx512(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}
#endif

/* The 2x2 case with AVX-512 rows, f32 or 16-bit (omp_half_native.c): true
 * when it ran; false (nothing written) when the CPU or the output strides
 * do not allow it. */
static bool max_pool_2x2_vec(const pool_geom *g, const gfp_tensor *x, const gfp_tensor *y,
                             const gfp_tensor *ind) {
#ifdef ODN_POOL_AVX512
    if (y->strides[3] != 1 || ind->strides[3] != 1 || !pool_avx512()) return false;
    if (x->dtype == GFP_F32) pool_planes_f32(g, x, y, ind);
    else if (x->dtype == GFP_BF16) pool_planes_bf16(g, x, y, ind);
    else if (x->dtype == GFP_F16) pool_planes_f16(g, x, y, ind);
    else return false;
    return true;
#else
    (void)g, (void)x, (void)y, (void)ind;
    return false;
#endif
}

/* grad_x zeroed, then each grad_y element added at its index. Every index
 * was checked first (indices_valid), so a bad one leaves grad_x untouched. */
#define MAX_POOL_BWD(NAME, T)                                                             \
    static void NAME(const pool_geom *g, const gfp_tensor *gy, const gfp_tensor *ind,     \
                     const gfp_tensor *gx) {                                              \
        const T *gyb = (const T *)((char *)gy->buffer + gy->offset);                      \
        const int64_t *ib = (const int64_t *)(const void *)((char *)ind->buffer +         \
                                                            ind->offset);                 \
        T *gxb = (T *)((char *)gx->buffer + gx->offset);                                  \
        int64_t planes = g->n * g->c;                                                     \
        int64_t sh_ = gx->strides[2], sw_ = gx->strides[3];                               \
        bool dense = sw_ == 1 && (sh_ == g->w || g->h == 1);                              \
        int nt = odn_threads(planes * (g->h * g->w + g->ho * g->wo));                     \
        _Pragma("omp parallel for num_threads(nt) if (nt > 1) schedule(static)")          \
        for (int64_t pl = 0; pl < planes; pl++) {                                         \
            int64_t n = pl / g->c, c = pl % g->c;                                         \
            T *plane = gxb + n * gx->strides[0] + c * gx->strides[1];                     \
            if (dense) memset(plane, 0, sizeof(T) * (size_t)(g->h * g->w));               \
            else                                                                          \
                for (int64_t i = 0; i < g->h; i++)                                        \
                    for (int64_t j = 0; j < g->w; j++) plane[i * sh_ + j * sw_] = 0;       \
            for (int64_t oh = 0; oh < g->ho; oh++) {                                      \
                const T *gr = AT(gy, gyb, n, c, oh, 0);                                   \
                const int64_t *ir = AT(ind, ib, n, c, oh, 0);                             \
                for (int64_t ow = 0; ow < g->wo; ow++) {                                  \
                    int64_t k = ir[ow * ind->strides[3]];                                 \
                    if (k < 0) continue;                                                  \
                    /* a dense plane takes the flat index as it is */                     \
                    int64_t at = dense ? k : (k / g->w) * sh_ + (k % g->w) * sw_;         \
                    plane[at] += gr[ow * gy->strides[3]];                                 \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    }
MAX_POOL_BWD(max_pool_bwd_f32, float)
MAX_POOL_BWD(max_pool_bwd_f64, double)

#ifdef ODN_POOL_AVX512
/* The backward of a 2x2, stride-2 max pool (what max_pool2d's indices say
 * when each lies in its own window or is -1): every grad_x element belongs to
 * at most one window, so grad_x can be written window by window, in memory
 * order, without the zeroing pass and the scatter. Dense f32 tensors; a
 * check pass first (read only), so any other indices take the general path
 * with grad_x untouched. */

/* How many of a plane's indices lie outside their window (and are not -1):
 * own[i] is output i's window corner, 2 * oh * w + 2 * ow. */
ODN_CLONES static int64_t windows_bad(const int64_t *ip, const int64_t *own, int64_t n,
                                      int64_t w) {
    int64_t bad = 0;
#pragma omp simd reduction(+ : bad)
    for (int64_t i = 0; i < n; i++) {
        int64_t k = ip[i], d = k - own[i];
        bad += (k != -1) & (d != 0) & (d != 1) & (d != w) & (d != w + 1); /* no branches */
    }
    return bad;
}

/* One plane: each grad_y row into the two grad_x rows under it, eight
 * windows a step: each index's offset in its window chooses, by masks,
 * which of the four positions takes the gradient (the others 0); the rows'
 * pairs are interleaved by permutes. An odd last column or row is zeroed.
 * half: 0 for f32, else the 16-bit dtype (widened as loaded, rounded back as
 * stored: exact, each element is 0 or one gradient, "0 + g" included). */
POOL_AVX512 static inline __attribute__((always_inline)) void
windows_plane(const void *gp, const int64_t *ip, void *xp, int64_t h, int64_t w, int64_t ho,
              int64_t wo, int32_t half) {
    const __m512i lane2 = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i pairs = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i one = _mm512_set1_epi64(1), vw = _mm512_set1_epi64(w);
    const __m512i vw1 = _mm512_set1_epi64(w + 1);
    size_t es = half ? 2 : 4;
    for (int64_t oh = 0; oh < ho; oh++) {
        const char *gr = (const char *)gp + (size_t)(oh * wo) * es;
        const int64_t *ir = ip + oh * wo;
        char *r0 = (char *)xp + (size_t)(2 * oh * w) * es, *r1 = r0 + (size_t)w * es;
        /* two window rows ahead: the grad_x lines about to be written (each
         * row is written in parts, so each line is read first) and the
         * indices; within the plane and the next one */
        for (int64_t b = 0; b < (int64_t)(2 * (size_t)w * es); b += 64)
            _mm_prefetch(r0 + 4 * (size_t)w * es + b, _MM_HINT_T0);
        for (int64_t b = 0; b < wo; b += 8)
            _mm_prefetch((const char *)(ir + 2 * wo + b), _MM_HINT_T0);
        for (int64_t o0 = 0; o0 < wo; o0 += 8) {
            int64_t len = wo - o0 < 8 ? wo - o0 : 8;
            __mmask8 m = (__mmask8)((1u << len) - 1);
            __mmask16 m2 = (__mmask16)((1u << (2 * len)) - 1);
            __m512i k = _mm512_maskz_loadu_epi64(m, ir + o0);
            __m512i d = _mm512_sub_epi64(
                k, _mm512_add_epi64(_mm512_set1_epi64(2 * oh * w + 2 * o0), lane2));
            __m512 g;
            if (half)
                g = odn_hv_to_f32(_mm256_zextsi128_si256(_mm_maskz_loadu_epi16(
                                      m, (const uint16_t *)(const void *)gr + o0)),
                                  half);
            else
                g = _mm512_maskz_loadu_ps((__mmask16)m, (const float *)(const void *)gr + o0);
            /* 0 + g, as the scatter into zeros: a -0 gradient lands as +0 */
            __m512 v = _mm512_add_ps(_mm512_setzero_ps(), g);
            __m512 p0 = _mm512_maskz_mov_ps((__mmask16)_mm512_cmpeq_epi64_mask(d, _mm512_setzero_si512()), v);
            __m512 p1 = _mm512_maskz_mov_ps((__mmask16)_mm512_cmpeq_epi64_mask(d, one), v);
            __m512 p2 = _mm512_maskz_mov_ps((__mmask16)_mm512_cmpeq_epi64_mask(d, vw), v);
            __m512 p3 = _mm512_maskz_mov_ps((__mmask16)_mm512_cmpeq_epi64_mask(d, vw1), v);
            __m512 top = _mm512_permutex2var_ps(p0, pairs, p1);
            __m512 bottom = _mm512_permutex2var_ps(p2, pairs, p3);
            if (half) {
                _mm256_mask_storeu_epi16((uint16_t *)(void *)r0 + 2 * o0, m2,
                                         odn_hv_exact_from_f32(top, half));
                _mm256_mask_storeu_epi16((uint16_t *)(void *)r1 + 2 * o0, m2,
                                         odn_hv_exact_from_f32(bottom, half));
            } else {
                _mm512_mask_storeu_ps((float *)(void *)r0 + 2 * o0, m2, top);
                _mm512_mask_storeu_ps((float *)(void *)r1 + 2 * o0, m2, bottom);
            }
        }
        if (w > 2 * wo) {
            memset(r0 + (size_t)(w - 1) * es, 0, es);
            memset(r1 + (size_t)(w - 1) * es, 0, es);
        }
    }
    if (h > 2 * ho) memset((char *)xp + (size_t)((h - 1) * w) * es, 0, es * (size_t)w);
}
POOL_AVX512 static void windows_planes(const void *gy, const int64_t *ib, void *gx, int64_t planes,
                                       int64_t h, int64_t w, int64_t ho, int64_t wo, int32_t half,
                                       int nt) {
    size_t es = half ? 2 : 4;
    int64_t P = ho * wo;
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t pl = 0; pl < planes; pl++) {
        const char *g = (const char *)gy + (size_t)(pl * P) * es;
        char *x = (char *)gx + (size_t)(pl * h * w) * es;
        if (half == GFP_BF16) windows_plane(g, ib + pl * P, x, h, w, ho, wo, GFP_BF16);
        else if (half) windows_plane(g, ib + pl * P, x, h, w, ho, wo, GFP_F16);
        else windows_plane(g, ib + pl * P, x, h, w, ho, wo, 0);
    });
}

/* True when the window path applies and has written grad_x. */
static bool max_pool_bwd_windows(const pool_geom *g, const gfp_tensor *gy, const gfp_tensor *ind,
                                 const gfp_tensor *gx) {
    if (!pool_avx512()) return false;
    int64_t h = g->h, w = g->w, ho = g->ho, wo = g->wo, P = ho * wo, planes = g->n * g->c;
    bool half = pk_is_half(gy->dtype);
    if ((gy->dtype != GFP_F32 && !half) || 2 * ho > h || 2 * wo > w || h > 2 * ho + 1 ||
        w > 2 * wo + 1)
        return false;
    if (!odn_is_contiguous(gy) || !odn_is_contiguous(ind) || !odn_is_contiguous(gx)) return false;
    odn_ctx *c;
    if (odn_ctx_acquire(&c) != GFP_OK) return false;
    int64_t *own = odn_arena_alloc(c, sizeof(int64_t) * (size_t)P);
    if (!own) return false;
    for (int64_t oh = 0; oh < ho; oh++)
        for (int64_t ow = 0; ow < wo; ow++) own[oh * wo + ow] = 2 * oh * w + 2 * ow;
    const int64_t *ib = (const int64_t *)(const void *)((char *)ind->buffer + ind->offset);
    int64_t bad = 0;
    int nt = odn_threads(planes * P);
    ODN_PARALLEL_FOR(nt, schedule(static) reduction(+ : bad), for (int64_t pl = 0; pl < planes; pl++) {
        bad += windows_bad(ib + pl * P, own, P, w);
    });
    if (bad) return false;
    windows_planes((const char *)gy->buffer + gy->offset, ib, (char *)gx->buffer + gx->offset,
                   planes, h, w, ho, wo, half ? gy->dtype : 0, odn_threads(planes * (h * w + P)));
    return true;
}

#endif

static bool indices_valid(const pool_geom *g, const gfp_tensor *ind) {
    const int64_t *ib = (const int64_t *)(const void *)((char *)ind->buffer + ind->offset);
    int64_t plane = g->h * g->w, planes = g->n * g->c, bad = 0;
    int nt = odn_threads(planes * g->ho * g->wo);
    if (ind->strides[3] == 1 && ind->strides[2] == g->wo && ind->strides[1] == g->ho * g->wo &&
        ind->strides[0] == g->c * g->ho * g->wo) {
        /* dense (as max_pool2d makes them): one vectorisable pass */
        int64_t total = planes * g->ho * g->wo;
        if (nt > 1) {
#pragma omp parallel for simd num_threads(nt) reduction(+ : bad)
            for (int64_t i = 0; i < total; i++) bad += (ib[i] < -1) | (ib[i] >= plane);
        } else { /* no region for one thread (ODN_PARALLEL_FOR) */
#pragma omp simd reduction(+ : bad)
            for (int64_t i = 0; i < total; i++) bad += (ib[i] < -1) | (ib[i] >= plane);
        }
        return bad == 0;
    }
    ODN_PARALLEL_FOR(nt, reduction(+ : bad), for (int64_t pl = 0; pl < planes; pl++) {
        int64_t n = pl / g->c, c = pl % g->c;
        for (int64_t oh = 0; oh < g->ho; oh++)
            for (int64_t ow = 0; ow < g->wo; ow++) {
                int64_t k = *AT(ind, ib, n, c, oh, ow);
                if (k < -1 || k >= plane) bad++;
            }
    });
    return bad == 0;
}

static gfp_status max_pool(const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (n_in != 1 || n_out != 2 || !in[0]) return ODN_FALLBACK;
    const gfp_tensor *x = in[0], *y = out[0], *ind = out[1];
    pool_geom g;
    gfp_status st = pk_check_pool2d(GFP_OP_MAX_POOL2D, params, x, "x", y, "y", &g);
    if (st != GFP_OK) return st;
    if (!rank4(ind) || !pk_same_shape(ind, y)) return ODN_FALLBACK;
    bool half = pk_is_half(x->dtype); /* omp_half_native.c: the 2x2 case only */
    if ((x->dtype != GFP_F32 && x->dtype != GFP_F64 && !half) || y->dtype != x->dtype ||
        ind->dtype != GFP_I64 || !odn_writable(y) || !odn_writable(ind))
        return ODN_FALLBACK;
    if (pk_numel(y) == 0) return GFP_OK;
    if (g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 &&
        g.dh == 1 && g.dw == 1 && 2 * g.ho <= g.h && 2 * g.wo <= g.w && x->strides[3] == 1) {
        if (max_pool_2x2_vec(&g, x, y, ind)) return GFP_OK;
        if (half) return ODN_FALLBACK;
        if (x->dtype == GFP_F32) max_pool_2x2_f32_any(&g, x, y, ind);
        else max_pool_2x2_f64(&g, x, y, ind);
        return GFP_OK;
    }
    if (half) return ODN_FALLBACK;
    /* Taps past (h - 1 + ph) / dh land below the input for every output (the
     * windows only move down): dropping them changes nothing, and a kernel
     * far larger than the input (a ceil-mode window) costs no scratch. */
    int64_t reach_h = (g.h - 1 + g.ph) / g.dh + 1, reach_w = (g.w - 1 + g.pw) / g.dw + 1;
    if (g.kh > reach_h) g.kh = reach_h;
    if (g.kw > reach_w) g.kw = reach_w;
    bool ok = x->dtype == GFP_F32 ? max_pool_f32(&g, x, y, ind) : max_pool_f64(&g, x, y, ind);
    return ok ? GFP_OK
              : pk_fail(GFP_ERR_OUT_OF_MEMORY, "max_pool2d: out of host memory for row scratch");
}

static gfp_status max_pool_backward(const gfp_tensor *const *in, uint32_t n_in,
                                    const gfp_tensor *const *out, uint32_t n_out) {
    if (n_in != 2 || n_out != 1 || !in[0] || !in[1]) return ODN_FALLBACK;
    const gfp_tensor *gy = in[0], *ind = in[1], *gx = out[0];
    if (!rank4(gy) || !rank4(ind) || !rank4(gx) || !pk_same_shape(gy, ind)) return ODN_FALLBACK;
    if (gy->sizes[0] != gx->sizes[0] || gy->sizes[1] != gx->sizes[1]) return ODN_FALLBACK;
    bool half = pk_is_half(gy->dtype); /* omp_half_native.c: the window path only */
    if ((gy->dtype != GFP_F32 && gy->dtype != GFP_F64 && !half) || gx->dtype != gy->dtype ||
        ind->dtype != GFP_I64 || !odn_writable(gx))
        return ODN_FALLBACK;
    pool_geom g = {.n = gx->sizes[0], .c = gx->sizes[1], .h = gx->sizes[2], .w = gx->sizes[3],
                   .ho = gy->sizes[2], .wo = gy->sizes[3]};
    if (pk_numel(gx) == 0) return GFP_OK;
#ifdef ODN_POOL_AVX512
    if (max_pool_bwd_windows(&g, gy, ind, gx)) return GFP_OK;
#endif
    if (half) return ODN_FALLBACK;
    if (!indices_valid(&g, ind)) return ODN_FALLBACK; /* the reference names the bad one */
    if (gy->dtype == GFP_F32) max_pool_bwd_f32(&g, gy, ind, gx);
    else max_pool_bwd_f64(&g, gy, ind, gx);
    return GFP_OK;
}

/* ------------------------------------------------------------ average pooling */
typedef struct avg_plan {
    bool backward;
    odc_pool_geom geom;
    const gfp_tensor *src, *dst; /* input-shaped, output-shaped */
} avg_plan;

static dnnl_status_t build_avg(odn_prim *e, const void *ctx) {
    const avg_plan *p = ctx;
    dnnl_status_t st = odc_md_strided(&e->md[0], 4, p->src->sizes, p->src->strides, dnnl_f32);
    if (st == dnnl_success)
        st = odc_md_strided(&e->md[1], 4, p->dst->sizes, p->dst->strides, dnnl_f32);
    dnnl_primitive_desc_t pd = NULL, hint = NULL;
    if (st == dnnl_success && !p->backward) {
        st = odc_avg_pool_fwd_pd(&pd, odn_engine(), &e->md[0], &e->md[1], &p->geom);
    } else if (st == dnnl_success) {
        st = odc_avg_pool_fwd_pd(&hint, odn_engine(), &e->md[0], &e->md[1], &p->geom);
        if (st == dnnl_success)
            st = odc_avg_pool_bwd_pd(&pd, odn_engine(), &e->md[0], &e->md[1], &p->geom, hint);
    }
    if (st == dnnl_success && odc_pd_is_slow(pd)) st = dnnl_unimplemented;
    if (st == dnnl_success) st = odn_prim_set(e, 0, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (hint) dnnl_primitive_desc_destroy(hint);
    return st;
}

static gfp_status avg_pool(bool backward, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (n_in != 1 || n_out != 1 || !in[0]) return ODN_FALLBACK;
    avg_plan p = {.backward = backward};
    p.src = backward ? out[0] : in[0];
    p.dst = backward ? in[0] : out[0];
    pool_geom g;
    gfp_status st = pk_check_pool2d(backward ? GFP_OP_AVG_POOL2D_BACKWARD : GFP_OP_AVG_POOL2D,
                                    params, p.src, backward ? "grad_x" : "x", p.dst,
                                    backward ? "grad_y" : "y", &g);
    if (st != GFP_OK) return st;
    if (p.src->dtype != GFP_F32 || p.dst->dtype != GFP_F32 || !odn_writable(out[0]))
        return ODN_FALLBACK;
    if (pk_numel(p.src) == 0 || pk_numel(p.dst) == 0) return ODN_FALLBACK;
    int64_t k[2] = {g.kh, g.kw}, s[2] = {g.sh, g.sw}, pad[2] = {g.ph, g.pw};
    int64_t in_sz[2] = {g.h, g.w}, out_sz[2] = {g.ho, g.wo};
    for (int a = 0; a < 2; a++) {
        /* Right padding that makes oneDNN's output size graft's. */
        int64_t pr = (out_sz[a] - 1) * s[a] + k[a] - in_sz[a] - pad[a];
        if (pr < pad[a]) pr = pad[a];
        if ((in_sz[a] + pad[a] + pr - k[a]) / s[a] + 1 != out_sz[a]) return ODN_FALLBACK;
        /* Windows reaching past the symmetric padding: divisors differ. */
        if (pr > pad[a] && g.include_pad) return ODN_FALLBACK;
        p.geom.kernel[a] = k[a];
        p.geom.stride[a] = s[a];
        p.geom.pad_l[a] = pad[a];
        p.geom.pad_r[a] = pr;
    }
    p.geom.include_padding = g.include_pad;
    /* oneDNN's fast pooling kernels take dense NCHW only (measured: other
     * strides get its reference implementation): views are packed. */
    odn_ctx *c;
    gfp_status cst = odn_ctx_acquire(&c);
    if (cst != GFP_OK) return cst;
    const gfp_tensor *user_in = backward ? p.dst : p.src, *user_out = out[0];
    gfp_tensor in_t, out_t;
    if (!odn_packed(c, user_in, true, &in_t) || !odn_packed(c, user_out, false, &out_t))
        return GFP_ERR_OUT_OF_MEMORY;
    p.src = backward ? &out_t : &in_t;
    p.dst = backward ? &in_t : &out_t;
    odn_key key;
    odn_key_init(&key, backward ? GFP_OP_AVG_POOL2D_BACKWARD : GFP_OP_AVG_POOL2D);
    for (int a = 0; a < 2; a++) {
        odn_key_add(&key, p.geom.kernel[a]);
        odn_key_add(&key, p.geom.stride[a]);
        odn_key_add(&key, p.geom.pad_l[a]);
        odn_key_add(&key, p.geom.pad_r[a]);
    }
    odn_key_add(&key, p.geom.include_padding);
    odn_key_tensor(&key, p.src);
    odn_key_tensor(&key, p.dst);
    odn_team team = odn_team_begin(pk_numel(p.src) + pk_numel(p.dst));
    const odn_prim *e = odn_cache_get(&key, build_avg, &p);
    st = ODN_FALLBACK;
    if (e) {
        void *src = (char *)p.src->buffer + p.src->offset;
        void *dst = (char *)p.dst->buffer + p.dst->offset;
        odn_arg a[2] = {{backward ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC, &e->md[0], src},
                        {backward ? DNNL_ARG_DIFF_DST : DNNL_ARG_DST, &e->md[1], dst}};
        st = odn_exec(c, e, 0, a, 2, backward ? "avg_pool2d_backward" : "avg_pool2d");
        odn_prim_release(e);
    }
    odn_team_end(team);
    if (st == ODN_FALLBACK) return st;
    if (st == GFP_OK && out_t.buffer != user_out->buffer) st = odn_copy(user_out, &out_t);
    return st == ODN_FALLBACK ? GFP_ERR_INTERNAL : st;
}

gfp_status odn_pool_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    switch (op) {
    case GFP_OP_MAX_POOL2D: return max_pool(in, n_in, out, n_out, params);
    case GFP_OP_MAX_POOL2D_BACKWARD: return max_pool_backward(in, n_in, out, n_out);
    case GFP_OP_AVG_POOL2D: return avg_pool(false, in, n_in, out, n_out, params);
    case GFP_OP_AVG_POOL2D_BACKWARD: return avg_pool(true, in, n_in, out, n_out, params);
    default: return ODN_FALLBACK;
    }
}
