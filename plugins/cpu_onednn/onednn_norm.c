/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_norm.c — LAYER_NORM in f32 on oneDNN's primitive and BATCH_NORM in
 * f32 in C loops (f64 of both in C loops: omp_norm_f64.c); SOFTMAX and
 * LOG_SOFTMAX are routed to omp_softmax.c.
 *
 * The ABI's statistics are mean and rstd = 1/sqrt(var + eps); oneDNN's are
 * mean and variance, so they land in scratch and a small loop writes graft's
 * outputs (batch norm in training also updates the running statistics, with
 * the unbiased variance as PyTorch does). Layer norm normalises the last
 * normalized_rank dims: they are merged into the one last dim oneDNN
 * normalises, which needs them to form one strided run. */
#include <math.h>
#include <string.h>

#include "omp_f64.h"

/* ------------------------------------------------------------ layer norm */
typedef struct ln_plan {
    int64_t outer, inner;
    float eps;
    unsigned flags;
} ln_plan;

/* oneDNN's layer norm reads and writes dense rows (measured: with other
 * strides its results land in the wrong places), so x and y are handled as
 * contiguous [outer, inner] matrices, packed when they are not. The
 * statistics are computed here in double (row_moments) and given to oneDNN,
 * which normalises: its own f32 statistics leave a row of equal values with a
 * mean an ulp off, magnified by 1/sqrt(eps) into outputs far from 0. */
static dnnl_status_t build_ln(odn_prim *e, const void *ctx) {
    const ln_plan *p = ctx;
    int64_t dims[2] = {p->outer, p->inner}, strides[2] = {p->inner, 1}, one = 1;
    dnnl_status_t st = odc_md_strided(&e->md[0], 2, dims, strides, dnnl_f32);
    if (st == dnnl_success) st = odc_md_strided(&e->md[2], 1, &p->outer, &one, dnnl_f32);
    if (st == dnnl_success) st = odc_md_strided(&e->md[3], 1, &p->inner, &one, dnnl_f32);
    dnnl_primitive_desc_t pd = NULL;
    if (st == dnnl_success) st = odc_layer_norm_pd(&pd, odn_engine(), &e->md[0], &e->md[2],
                                                   p->eps, p->flags | ODC_NORM_GLOBAL_STATS);
    if (st == dnnl_success && odc_pd_is_slow(pd)) st = dnnl_unimplemented;
    if (st == dnnl_success) st = odn_prim_set(e, 0, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

/* Sum of row[0, n) in double, and the sums of d and d^2 for d = row[i] - m
 * (the reference's corrected two-pass formula). */
static double row_sum_c(const float *row, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)row[i];
    return s;
}
static void row_dev_c(const float *row, int64_t n, double m, double *d1, double *d2) {
    double a = 0, b = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)row[i] - m;
        a += d;
        b += d * d;
    }
    *d1 = a, *d2 = b;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define LN_AVX512 __attribute__((target("avx512f,avx512vl")))
/* Sixteen lanes a step into two double accumulators (a short row's sums
 * end in one tree, not in the chain of scalar adds an omp simd reduction
 * leaves: ~100 cycles a reduction on rows of 48). */
LN_AVX512 static double row_sum_avx512(const float *row, int64_t n) {
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 f = _mm512_maskz_loadu_ps(k, row + i);
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(
                                   _mm512_extractf64x4_pd(_mm512_castps_pd(f), 1))));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}
LN_AVX512 static void row_dev_avx512(const float *row, int64_t n, double m, double *d1,
                                     double *d2) {
    __m512d a = _mm512_setzero_pd(), b = _mm512_setzero_pd(), vm = _mm512_set1_pd(m);
    for (int64_t i = 0; i < n; i += 8) {
        __mmask8 k = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1);
        __m512d d = _mm512_maskz_sub_pd(k, _mm512_cvtps_pd(_mm256_maskz_loadu_ps(k, row + i)), vm);
        a = _mm512_add_pd(a, d);
        b = _mm512_add_pd(b, _mm512_mul_pd(d, d));
    }
    *d1 = _mm512_reduce_add_pd(a), *d2 = _mm512_reduce_add_pd(b);
}
static bool ln_avx512(void) {
    static int have = -1;
    if (have < 0) have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
    return have;
}
#define LN_VEC(call_vec, call_c) (ln_avx512() ? call_vec : call_c)
#else
#define LN_VEC(call_vec, call_c) (call_c)
#endif

/* Mean and biased variance of rows r0 .. r0 + cnt - 1 (cnt <= 8) of the
 * dense [outer, inner] x, in double; f32 copies for oneDNN (mean32 and
 * var32, none when NULL). Each step runs
 * over the block's rows before the next step, so that short rows' sums and
 * divisions overlap instead of forming one chain per row. */
static void row_moments_block(const float *x, int64_t r0, int cnt, int64_t inner, double *mean,
                              double *var, float *mean32, float *var32) {
    double m[8], d1[8], d2[8];
    for (int k = 0; k < cnt; k++) {
        const float *row = x + (r0 + k) * inner;
        m[k] = LN_VEC(row_sum_avx512(row, inner), row_sum_c(row, inner));
    }
    for (int k = 0; k < cnt; k++) m[k] /= (double)inner;
    for (int k = 0; k < cnt; k++) {
        const float *row = x + (r0 + k) * inner;
        LN_VEC(row_dev_avx512(row, inner, m[k], &d1[k], &d2[k]),
               row_dev_c(row, inner, m[k], &d1[k], &d2[k]));
    }
    for (int k = 0; k < cnt; k++) {
        double v = (d2[k] - d1[k] * d1[k] / (double)inner) / (double)inner;
        int64_t r = r0 + k;
        mean[r] = m[k];
        var[r] = v < 0 ? 0 : v;
        if (!mean32) continue;
        mean32[r] = (float)m[k];
        var32[r] = (float)var[r];
    }
}

/* The moments of every row. */
static void row_moments(const float *x, int64_t outer, int64_t inner, double *mean, double *var,
                        float *mean32, float *var32) {
    int64_t blocks = (outer + 7) / 8;
    int nt = odn_threads(outer * inner * 2);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t bl = 0; bl < blocks; bl++) {
        int64_t r0 = bl * 8;
        row_moments_block(x, r0, outer - r0 < 8 ? (int)(outer - r0) : 8, inner, mean, var, mean32,
                          var32);
    });
}

/* graft's outputs mean and rstd from the row statistics. */
static void write_stats(const gfp_tensor *mean, const gfp_tensor *rstd, const double *m,
                        const double *var, int64_t count, double eps) {
    int64_t idx[GFP_MAX_RANK] = {0};
    char *mb = (char *)mean->buffer + mean->offset, *rb = (char *)rstd->buffer + rstd->offset;
    if (odn_is_contiguous(mean) && odn_is_contiguous(rstd)) {
        for (int64_t i = 0; i < count; i++) {
            ((float *)(void *)mb)[i] = (float)m[i];
            ((float *)(void *)rb)[i] = (float)(1.0 / sqrt(var[i] + eps));
        }
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t mo = 0, ro = 0;
        for (int d = 0; d < rstd->rank; d++) {
            mo += idx[d] * mean->strides[d];
            ro += idx[d] * rstd->strides[d];
        }
        ((float *)(void *)mb)[mo] = (float)m[i];
        ((float *)(void *)rb)[ro] = (float)(1.0 / sqrt(var[i] + eps));
        ref_next_index(idx, rstd->sizes, rstd->rank);
    }
}

bool odn_layer_norm_args(const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *const *out,
                         uint32_t n_out, const void *params, int32_t dtype, int64_t *outer,
                         int64_t *inner) {
    const gfp_layer_norm_params *lp = params;
    if (n_in != 3 || n_out != 3 || !in[0] || !lp ||
        lp->struct_size < GFP_LAYER_NORM_PARAMS_SIZE_V1_0)
        return false;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *y = out[0], *mean = out[1],
                     *rstd = out[2];
    int nr = lp->normalized_rank, outer_rank = x->rank - nr;
    if (nr < 1 || outer_rank < 0 || !pk_same_shape(x, y)) return false;
    if (x->dtype != dtype || y->dtype != dtype || (w && w->dtype != dtype) ||
        (b && b->dtype != dtype) || mean->dtype != dtype || rstd->dtype != dtype ||
        !odn_writable(y))
        return false;
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < outer_rank; d++) *outer *= x->sizes[d];
    for (int d = outer_rank; d < x->rank; d++) *inner *= x->sizes[d];
    const gfp_tensor *stats[2] = {mean, rstd};
    for (int k = 0; k < 2; k++) {
        if (stats[k]->rank != outer_rank || !odn_writable(stats[k])) return false;
        for (int d = 0; d < outer_rank; d++)
            if (stats[k]->sizes[d] != x->sizes[d]) return false;
    }
    const gfp_tensor *wb[2] = {w, b};
    for (int k = 0; k < 2; k++) {
        if (!wb[k]) continue;
        if (wb[k]->rank != nr) return false;
        for (int d = 0; d < nr; d++)
            if (wb[k]->sizes[d] != x->sizes[outer_rank + d]) return false;
    }
    return true;
}

/* One row of y = (x - mean) * rstd * w + b (w, b dense or NULL), the
 * normalised value formed as the backward forms it (lnb_row). */
ODN_CLONES static void ln_row(const float *x, float *y, const float *w, const float *b, int64_t n,
                              float m, float rs) {
    if (w && b) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) * rs * w[i] + b[i];
    } else if (w) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) * rs * w[i];
    } else if (b) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) * rs + b[i];
    } else {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) * rs;
    }
}

/* LAYER_NORM f32 with x and y contiguous: the statistics as below, then one
 * pass per row in C loops. oneDNN's primitive (kept for strided tensors)
 * spends ~35 ns a row before its loop: a transformer's [64, 8, 48] took 18.2
 * us there, 7.7 here (1 thread). */
static gfp_status layer_norm_rows(const gfp_tensor *x, const gfp_tensor *w, const gfp_tensor *b,
                                  const gfp_tensor *y, const gfp_tensor *mean,
                                  const gfp_tensor *rstd, int64_t outer, int64_t inner,
                                  double eps) {
    odn_ctx *c;
    gfp_status st = odn_ctx_acquire(&c);
    if (st != GFP_OK) return st;
    double *dm = odn_arena_alloc(c, (size_t)outer * 8), *dv = odn_arena_alloc(c, (size_t)outer * 8);
    gfp_tensor wt, bt;
    if (!dm || !dv || (w && !odn_packed(c, w, true, &wt)) || (b && !odn_packed(c, b, true, &bt)))
        return GFP_ERR_OUT_OF_MEMORY;
    const float *xp = odn_f32(x), *wp = w ? odn_f32(&wt) : NULL, *bp = b ? odn_f32(&bt) : NULL;
    float *yp = odn_f32_mut(y);
    row_moments(xp, outer, inner, dm, dv, NULL, NULL);
    int nt = odn_threads(outer * inner * 2);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t r = 0; r < outer; r++) {
        ln_row(xp + r * inner, yp + r * inner, wp, bp, inner, (float)dm[r],
               (float)(1.0 / sqrt(dv[r] + eps)));
    });
    write_stats(mean, rstd, dm, dv, outer, eps);
    return GFP_OK;
}

static gfp_status layer_norm(const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    ln_plan p = {.outer = 0};
    if (!odn_layer_norm_args(in, n_in, out, n_out, params, GFP_F32, &p.outer, &p.inner))
        return ODN_FALLBACK;
    const gfp_layer_norm_params *lp = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *y = out[0], *mean = out[1],
                     *rstd = out[2];
    p.eps = (float)lp->eps;
    if (p.outer == 0) return GFP_OK;
    if (p.inner == 0) return ODN_FALLBACK;
    if (odn_is_contiguous(x) && odn_is_contiguous(y) && x->buffer != y->buffer)
        return layer_norm_rows(x, w, b, y, mean, rstd, p.outer, p.inner, lp->eps);
    p.flags = (w ? ODC_NORM_SCALE : 0) | (b ? ODC_NORM_SHIFT : 0);
    odn_key key;
    odn_key_init(&key, GFP_OP_LAYER_NORM);
    odn_key_add(&key, p.outer);
    odn_key_add(&key, p.inner);
    int32_t eps_bits;
    memcpy(&eps_bits, &p.eps, 4);
    odn_key_add(&key, eps_bits);
    odn_key_add(&key, p.flags);
    odn_ctx *c;
    gfp_status cst = odn_ctx_acquire(&c);
    if (cst != GFP_OK) return cst;
    odn_team team = odn_team_begin(p.outer * p.inner * 2);
    const odn_prim *e = odn_cache_get(&key, build_ln, &p);
    if (!e) {
        odn_team_end(team);
        return ODN_FALLBACK;
    }
    float *m = odn_arena_alloc(c, (size_t)p.outer * 4), *v = odn_arena_alloc(c, (size_t)p.outer * 4);
    double *dm = odn_arena_alloc(c, (size_t)p.outer * 8), *dv = odn_arena_alloc(c, (size_t)p.outer * 8);
    size_t bytes = (size_t)(p.outer * p.inner) * 4;
    void *xp = (char *)x->buffer + x->offset, *yp = (char *)y->buffer + y->offset;
    bool pack_x = !odn_is_contiguous(x), pack_y = !odn_is_contiguous(y);
    if (pack_x) xp = odn_arena_alloc(c, bytes);
    if (pack_y) yp = odn_arena_alloc(c, bytes);
    gfp_tensor wt, bt; /* oneDNN reads scale and shift as dense vectors */
    bool wb_ok = (!w || odn_packed(c, w, true, &wt)) && (!b || odn_packed(c, b, true, &bt));
    gfp_status st = m && v && dm && dv && xp && yp && wb_ok ? GFP_OK : GFP_ERR_OUT_OF_MEMORY;
    gfp_tensor xt = odn_temp_like(x, GFP_F32, xp), yt = odn_temp_like(y, GFP_F32, yp);
    if (st == GFP_OK && pack_x) st = odn_copy(&xt, x);
    if (st == GFP_OK) row_moments(xp, p.outer, p.inner, dm, dv, m, v);
    if (st == GFP_OK) {
        odn_arg a[6] = {{DNNL_ARG_SRC, &e->md[0], xp},
                        {DNNL_ARG_DST, &e->md[0], yp},
                        {DNNL_ARG_MEAN, &e->md[2], m},
                        {DNNL_ARG_VARIANCE, &e->md[2], v}};
        int n = 4;
        if (w) a[n++] = (odn_arg){DNNL_ARG_SCALE, &e->md[3], (char *)wt.buffer + wt.offset};
        if (b) a[n++] = (odn_arg){DNNL_ARG_SHIFT, &e->md[3], (char *)bt.buffer + bt.offset};
        st = odn_exec(c, e, 0, a, n, "layer_norm");
    }
    if (st == GFP_OK && pack_y) st = odn_copy(y, &yt);
    if (st == GFP_OK) write_stats(mean, rstd, dm, dv, p.outer, lp->eps);
    odn_prim_release(e);
    odn_team_end(team);
    return st == ODN_FALLBACK ? GFP_ERR_INTERNAL : st;
}

/* ------------------------------------------------------------ batch norm */
/* Batch norm in f32 is two passes of C loops over each channel: the
 * statistics, then y = (x - mean) * a + shift. oneDNN's primitive with
 * given statistics (its ncsp kernel, the one it has for graft's NCHW) took
 * 8 ms on a 128x32x28x28 batch here, four times a pass over the memory. */

/* The contiguous runs' loops, built for each vector width (ODN_CLONES: the
 * plugin's baseline is SSE2, where a double accumulator holds two lanes). */
ODN_CLONES static void bn_moments_run(const float *p, int64_t n, double k, double *sa,
                                      double *sb) {
    double a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
    for (int64_t i = 0; i < n; i++) {
        double v = (double)p[i] - k;
        a += v;
        b += v * v;
    }
    *sa += a;
    *sb += b;
}

ODN_CLONES static void bn_apply_run(const float *x, float *y, int64_t n, float m, float a,
                                    float s) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - m) * a + s;
}

ODN_CLONES static void bn_grad_sums_run(const float *g, const float *x, int64_t n, double m,
                                        double *sa, double *sb) {
    double a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
    for (int64_t i = 0; i < n; i++) {
        double gi = g[i];
        a += gi;
        b += gi * ((double)x[i] - m);
    }
    *sa += a;
    *sb += b;
}

ODN_CLONES static void bn_grad_x_run(const float *g, const float *x, float *o, int64_t n,
                                     float m, float a, float b, float k) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) o[i] = a * g[i] + b * (x[i] - m) + k;
}

static void store_c(const gfp_tensor *t, int64_t i, double v) {
    ((float *)(void *)((char *)t->buffer + t->offset))[i * t->strides[0]] = (float)v;
}
static double load_c(const gfp_tensor *t, int64_t i) {
    return ((const float *)(const void *)((const char *)t->buffer + t->offset))[i * t->strides[0]];
}

/* The dims of x [N, C, ...] but the channels, as runs: `inner` elements at
 * `step` (the last dim), `runs` of them, run k starting at offset(k). */
typedef struct chan_walk {
    int r;
    int64_t sizes[GFP_MAX_RANK], xs[GFP_MAX_RANK], ys[GFP_MAX_RANK];
    int64_t inner, xstep, ystep, runs;
} chan_walk;

static void walk_init(chan_walk *w, const gfp_tensor *x, const gfp_tensor *y) {
    w->r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (d == 1) continue;
        w->sizes[w->r] = x->sizes[d];
        w->xs[w->r] = x->strides[d];
        w->ys[w->r++] = y ? y->strides[d] : 0;
    }
    w->inner = w->sizes[w->r - 1];
    w->xstep = w->xs[w->r - 1];
    w->ystep = w->ys[w->r - 1];
    w->runs = 1;
    for (int d = 0; d < w->r - 1; d++) w->runs *= w->sizes[d];
}

static void walk_offsets(const chan_walk *w, int64_t k, int64_t *xo, int64_t *yo) {
    int64_t a = 0, b = 0, j = k;
    for (int d = w->r - 2; d >= 0; d--) {
        int64_t i = j % w->sizes[d];
        a += i * w->xs[d];
        b += i * w->ys[d];
        j /= w->sizes[d];
    }
    *xo = a;
    *yo = b;
}

/* Mean and m2 (the sum of squared deviations) of channel c, in one pass:
 * sums of (x - k) and its square in double, k the channel's first element.
 * Exact for a channel of equal values, and k lies within sqrt(n) standard
 * deviations of the mean, so the cancellation in m2 costs at most log10(n)
 * of double's digits. */
static void channel_moments(const gfp_tensor *x, const chan_walk *w, int64_t c, double *mean,
                            double *m2) {
    const float *base = (const float *)(const void *)((const char *)x->buffer + x->offset) +
                        c * x->strides[1];
    double k = base[0], a = 0, b = 0;
    for (int64_t run = 0; run < w->runs; run++) {
        int64_t xo, yo;
        walk_offsets(w, run, &xo, &yo);
        const float *p = base + xo;
        if (w->xstep == 1) {
            bn_moments_run(p, w->inner, k, &a, &b);
        } else {
            for (int64_t i = 0; i < w->inner; i++) {
                double v = (double)p[i * w->xstep] - k;
                a += v;
                b += v * v;
            }
        }
    }
    double n = (double)(w->runs * w->inner), v = b - a * a / n;
    *mean = k + a / n;
    *m2 = v < 0 ? 0 : v;
}

/* y = (x - m) * a + s over channel c. */
static void channel_apply(const gfp_tensor *x, const gfp_tensor *y, const chan_walk *w, int64_t c,
                          float m, float a, float s) {
    const float *xb = (const float *)(const void *)((const char *)x->buffer + x->offset) +
                      c * x->strides[1];
    float *yb = (float *)(void *)((char *)y->buffer + y->offset) + c * y->strides[1];
    for (int64_t run = 0; run < w->runs; run++) {
        int64_t xo, yo;
        walk_offsets(w, run, &xo, &yo);
        const float *xp = xb + xo;
        float *yp = yb + yo;
        if (w->xstep == 1 && w->ystep == 1) {
            bn_apply_run(xp, yp, w->inner, m, a, s);
        } else {
            for (int64_t i = 0; i < w->inner; i++)
                yp[i * w->ystep] = (xp[i * w->xstep] - m) * a + s;
        }
    }
}

/* The planar path: x (and y / g / grad_x) contiguous [N, C, S...] with
 * planes of S >= BN_PLANE_MIN elements. The channel walk above reads a
 * channel's N runs at a stride of C * S: 128 runs of 3 KB 100 KB apart on a
 * [128, 32, 28, 28] batch, each starting cold for the prefetchers (2.7 ms
 * a forward pass, 0.4 ns an element). Here every pass goes through memory
 * in order, a plane at a time: each plane's sums in double into a slot of
 * its own, the slots added over N in order per channel, so the result does
 * not depend on the thread count. */
#define BN_PLANE_MIN 64

static bool bn_planar(const gfp_tensor *x, const gfp_tensor *const *others, int n_others) {
    if (x->rank < 3 || !odn_is_contiguous(x)) return false;
    for (int i = 0; i < n_others; i++)
        if (others[i] && !odn_is_contiguous(others[i])) return false;
    return pk_numel(x) / (x->sizes[0] * x->sizes[1]) >= BN_PLANE_MIN;
}

/* Per channel c: the sums of the planes' slots sa / sb over the N samples. */
static void bn_fold(const double *sa, const double *sb, int64_t n, int64_t ch, int64_t c,
                    double *a, double *b) {
    double x = 0, y = 0;
    for (int64_t i = 0; i < n; i++) {
        x += sa[i * ch + c];
        y += sb[i * ch + c];
    }
    *a = x;
    *b = y;
}

/* Training statistics of every channel: dmean and dm2 as channel_moments. */
static void bn_planar_moments(const gfp_tensor *x, double *sa, double *sb, double *dmean,
                              double *dm2, int nt) {
    int64_t n = x->sizes[0], ch = x->sizes[1], planes = n * ch, S = pk_numel(x) / planes;
    const float *xb = odn_f32(x);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t p = 0; p < planes; p++) {
        sa[p] = sb[p] = 0;
        bn_moments_run(xb + p * S, S, xb[(p % ch) * S], &sa[p], &sb[p]);
    });
    double cnt = (double)(n * S);
    for (int64_t c = 0; c < ch; c++) {
        double a, b, k = xb[c * S];
        bn_fold(sa, sb, n, ch, c, &a, &b);
        double v = b - a * a / cnt;
        dmean[c] = k + a / cnt;
        dm2[c] = v < 0 ? 0 : v;
    }
}

static gfp_status batch_norm(const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    const gfp_batch_norm_params *bp = params;
    if (n_in != 5 || n_out != 3 || !in[0] || !bp ||
        bp->struct_size < GFP_BATCH_NORM_PARAMS_SIZE_V1_0 || bp->training > 1)
        return ODN_FALLBACK;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *rm = in[3], *rv = in[4];
    const gfp_tensor *y = out[0], *smean = out[1], *sinv = out[2];
    if (x->rank < 2 || x->rank > 5 || !pk_same_shape(x, y)) return ODN_FALLBACK;
    if (!bp->training && (!rm || !rv)) return ODN_FALLBACK;
    int64_t ch = x->sizes[1];
    const gfp_tensor *per[6] = {w, b, rm, rv, smean, sinv};
    for (int i = 0; i < 6; i++) {
        if (!per[i]) continue;
        if (per[i]->dtype != GFP_F32 || per[i]->rank != 1 || per[i]->sizes[0] != ch)
            return ODN_FALLBACK;
        if (i >= 2 && per[i]->strides[0] == 0 && ch > 1) return ODN_FALLBACK; /* written */
    }
    if (x->dtype != GFP_F32 || y->dtype != GFP_F32 || !odn_writable(y)) return ODN_FALLBACK;
    /* y overlapping x other than exactly (in place) would be read after
     * being written. */
    if (y->buffer == x->buffer && (y->offset != x->offset ||
                                   memcmp(x->strides, y->strides, sizeof x->strides)))
        return ODN_FALLBACK;
    if (pk_numel(x) == 0) return ODN_FALLBACK; /* no statistics: the reference's rules */
    double count = (double)(pk_numel(x) / ch);
    odn_ctx *c;
    gfp_status cst = odn_ctx_acquire(&c);
    if (cst != GFP_OK) return cst;
    double *dmean = odn_arena_alloc(c, (size_t)ch * 8), *dm2 = odn_arena_alloc(c, (size_t)ch * 8);
    if (!dmean || !dm2) return GFP_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < ch && !bp->training; i++) {
        dmean[i] = load_c(rm, i);
        dm2[i] = load_c(rv, i); /* the variance itself: count plays no part */
    }
    double div = bp->training ? count : 1.0;
    int nt = odn_threads(pk_numel(x) * 2);
    if (bn_planar(x, &y, 1)) {
        int64_t planes = x->sizes[0] * ch, S = pk_numel(x) / planes;
        float *coef = odn_arena_alloc(c, (size_t)ch * 3 * sizeof(float));
        if (!coef) return GFP_ERR_OUT_OF_MEMORY;
        if (bp->training) { /* the statistics, from per-plane slots */
            double *sa = odn_arena_alloc(c, (size_t)planes * 8);
            double *sb = odn_arena_alloc(c, (size_t)planes * 8);
            if (!sa || !sb) return GFP_ERR_OUT_OF_MEMORY;
            bn_planar_moments(x, sa, sb, dmean, dm2, nt);
        }
        for (int64_t i = 0; i < ch; i++) {
            double inv = 1.0 / sqrt(dm2[i] / div + bp->eps);
            double scale = w ? load_c(w, i) : 1.0, shift = b ? load_c(b, i) : 0.0;
            coef[3 * i] = (float)dmean[i];
            coef[3 * i + 1] = (float)(scale * inv);
            coef[3 * i + 2] = (float)shift;
        }
        const float *xb = odn_f32(x);
        float *yb = odn_f32_mut(y);
        ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t p = 0; p < planes; p++) {
            const float *k = coef + 3 * (p % ch);
            bn_apply_run(xb + p * S, yb + p * S, S, k[0], k[1], k[2]);
        });
    } else {
        chan_walk wk;
        walk_init(&wk, x, y);
        /* Channels are independent: each thread reads and writes whole ones. */
        ODN_PARALLEL_FOR(nt, schedule(dynamic, 1), for (int64_t i = 0; i < ch; i++) {
            if (bp->training) channel_moments(x, &wk, i, &dmean[i], &dm2[i]);
            double inv = 1.0 / sqrt(dm2[i] / div + bp->eps);
            double scale = w ? load_c(w, i) : 1.0, shift = b ? load_c(b, i) : 0.0;
            channel_apply(x, y, &wk, i, (float)dmean[i], (float)(scale * inv), (float)shift);
        });
    }
    double mom = bp->momentum;
    for (int64_t i = 0; i < ch; i++) {
        store_c(smean, i, dmean[i]);
        store_c(sinv, i, 1.0 / sqrt(dm2[i] / div + bp->eps));
        if (!bp->training) continue;
        /* unbiased variance, as PyTorch (n = 1: NaN) */
        if (rm) store_c(rm, i, (1 - mom) * load_c(rm, i) + mom * dmean[i]);
        if (rv) store_c(rv, i, (1 - mom) * load_c(rv, i) + mom * (dm2[i] / (count - 1)));
    }
    return GFP_OK;
}

/* BATCH_NORM_BACKWARD in f32: per channel, one pass for the two sums
 * (double accumulators) and one for grad_x = a * g + b * (x - mean) + c,
 * where the composed formula made ~12 passes and as many allocations. */
static void channel_grad_sums(const gfp_tensor *g, const gfp_tensor *x, const chan_walk *w,
                              int64_t c, double m, double *sg, double *sgx) {
    const float *gb = (const float *)(const void *)((const char *)g->buffer + g->offset) +
                      c * g->strides[1];
    const float *xb = (const float *)(const void *)((const char *)x->buffer + x->offset) +
                      c * x->strides[1];
    double a = 0, b = 0;
    for (int64_t run = 0; run < w->runs; run++) {
        int64_t go, xo; /* the walk's "y" strides are g's */
        walk_offsets(w, run, &xo, &go);
        const float *gp = gb + go, *xp = xb + xo;
        if (w->xstep == 1 && w->ystep == 1) {
            bn_grad_sums_run(gp, xp, w->inner, m, &a, &b);
        } else {
            for (int64_t i = 0; i < w->inner; i++) {
                double gi = gp[i * w->ystep];
                a += gi;
                b += gi * ((double)xp[i * w->xstep] - m);
            }
        }
    }
    *sg = a;
    *sgx = b;
}

static void channel_grad_x(const gfp_tensor *g, const gfp_tensor *x, const gfp_tensor *gx,
                           const chan_walk *wg, const chan_walk *wx, int64_t c, float m, float a,
                           float b, float k) {
    const float *gb = (const float *)(const void *)((const char *)g->buffer + g->offset) +
                      c * g->strides[1];
    const float *xb = (const float *)(const void *)((const char *)x->buffer + x->offset) +
                      c * x->strides[1];
    float *ob = (float *)(void *)((char *)gx->buffer + gx->offset) + c * gx->strides[1];
    for (int64_t run = 0; run < wg->runs; run++) {
        int64_t go, oo, xo, unused;
        walk_offsets(wg, run, &go, &oo); /* wg: g and grad_x; wx: x */
        walk_offsets(wx, run, &xo, &unused);
        const float *gp = gb + go, *xp = xb + xo;
        float *op = ob + oo;
        if (wg->xstep == 1 && wg->ystep == 1 && wx->xstep == 1) {
            bn_grad_x_run(gp, xp, op, wg->inner, m, a, b, k);
        } else {
            for (int64_t i = 0; i < wg->inner; i++)
                op[i * wg->ystep] = a * gp[i * wg->xstep] + b * (xp[i * wx->xstep] - m) + k;
        }
    }
}

/* BATCH_NORM_BACKWARD on the planar path: the per-plane sums, folded per
 * channel as the forward's; then grad_x a plane at a time. */
static gfp_status batch_norm_backward_planar(const gfp_tensor *g, const gfp_tensor *x,
                                             const gfp_tensor *mean, const gfp_tensor *invstd,
                                             const gfp_tensor *w, const gfp_tensor *gx,
                                             const gfp_tensor *gw, const gfp_tensor *gb) {
    int64_t n = x->sizes[0], ch = x->sizes[1], planes = n * ch, S = pk_numel(x) / planes;
    odn_ctx *ctx;
    gfp_status cst = odn_ctx_acquire(&ctx);
    if (cst != GFP_OK) return cst;
    double *sa = odn_arena_alloc(ctx, (size_t)planes * 8), *sb = odn_arena_alloc(ctx, (size_t)planes * 8);
    double *dm = odn_arena_alloc(ctx, (size_t)ch * 8);
    float *coef = odn_arena_alloc(ctx, (size_t)ch * 4 * sizeof(float));
    if (!sa || !sb || !dm || !coef) return GFP_ERR_OUT_OF_MEMORY;
    for (int64_t c = 0; c < ch; c++) dm[c] = load_c(mean, c);
    const float *gp = odn_f32(g), *xp = odn_f32(x);
    float *op = odn_f32_mut(gx);
    int nt = odn_threads(pk_numel(x) * 3);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t p = 0; p < planes; p++) {
        sa[p] = sb[p] = 0;
        bn_grad_sums_run(gp + p * S, xp + p * S, S, dm[p % ch], &sa[p], &sb[p]);
    });
    double cnt = (double)(n * S);
    for (int64_t c = 0; c < ch; c++) {
        double sg, sgx;
        bn_fold(sa, sb, n, ch, c, &sg, &sgx);
        double rs = load_c(invstd, c), wc = w ? load_c(w, c) : 1.0;
        double dw = sgx * rs, mg = sg / cnt, mgx = dw / cnt;
        if (gb) store_c(gb, c, sg);
        if (gw) store_c(gw, c, dw);
        coef[4 * c] = (float)dm[c];
        coef[4 * c + 1] = (float)(wc * rs);
        coef[4 * c + 2] = (float)(-wc * rs * rs * mgx);
        coef[4 * c + 3] = (float)(-wc * rs * mg);
    }
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t p = 0; p < planes; p++) {
        const float *k = coef + 4 * (p % ch);
        bn_grad_x_run(gp + p * S, xp + p * S, op + p * S, S, k[0], k[1], k[2], k[3]);
    });
    return GFP_OK;
}

static gfp_status batch_norm_backward(const gfp_tensor *const *in, uint32_t n_in,
                                      const gfp_tensor *const *out, uint32_t n_out) {
    if (n_in != 5 || n_out != 3) return ODN_FALLBACK;
    const gfp_tensor *g = in[0], *x = in[1], *mean = in[2], *invstd = in[3], *w = in[4];
    const gfp_tensor *gx = out[0], *gw = out[1], *gb = out[2];
    if (!g || !x || !mean || !invstd || x->rank < 2 || x->rank > 5) return ODN_FALLBACK;
    if (!pk_same_shape(x, g) || !pk_same_shape(x, gx)) return ODN_FALLBACK;
    int64_t ch = x->sizes[1];
    const gfp_tensor *all[8] = {g, x, mean, invstd, w, gx, gw, gb};
    for (int i = 0; i < 8; i++) {
        if (!all[i]) continue;
        if (all[i]->dtype != GFP_F32) return ODN_FALLBACK;
        if (i >= 2 && i != 5 && (all[i]->rank != 1 || all[i]->sizes[0] != ch)) return ODN_FALLBACK;
    }
    if (!odn_writable(gx) || !odn_writable(gw) || !odn_writable(gb)) return ODN_FALLBACK;
    /* grad_x sharing memory with an input would be read after being written. */
    if (gx->buffer == g->buffer || gx->buffer == x->buffer) return ODN_FALLBACK;
    if (pk_numel(x) == 0) return ODN_FALLBACK; /* the reference's rules */
    int64_t count = pk_numel(x) / ch;
    if (bn_planar(x, (const gfp_tensor *[]){g, gx}, 2))
        return batch_norm_backward_planar(g, x, mean, invstd, w, gx, gw, gb);
    chan_walk wg, wx;
    walk_init(&wg, g, gx);
    walk_init(&wx, x, NULL);
    chan_walk wgx = wx; /* x's walk with g's strides, for the sums */
    for (int d = 0; d < wgx.r; d++) wgx.ys[d] = wg.xs[d];
    wgx.ystep = wg.xstep;
    int nt = odn_threads(pk_numel(x) * 3);
    ODN_PARALLEL_FOR(nt, schedule(dynamic, 1), for (int64_t c = 0; c < ch; c++) {
        double m = load_c(mean, c), rs = load_c(invstd, c), wc = w ? load_c(w, c) : 1.0;
        double sg, sgx;
        channel_grad_sums(g, x, &wgx, c, m, &sg, &sgx);
        double dw = sgx * rs, mg = sg / (double)count, mgx = dw / (double)count;
        store_c(gb, c, sg);
        store_c(gw, c, dw);
        channel_grad_x(g, x, gx, &wg, &wx, c, (float)m, (float)(wc * rs),
                       (float)(-wc * rs * rs * mgx), (float)(-wc * rs * mg));
    });
    return GFP_OK;
}

/* LAYER_NORM_BACKWARD in f32 on contiguous tensors: per row one pass for
 * the two means (double accumulators) and one writing grad_x; then
 * grad_weight and grad_bias over the rows, a block of columns per thread
 * (double accumulators). The composed formula took about a dozen passes
 * and as many allocations. Anything else goes to the reference kernel. */
#define LNB_COLS 256
/* The two sums of a row of grad_x's formula: of g w, and of g w times the
 * normalised x, in double. */
static void lnb_sums_c(const float *gr, const float *xr, const float *wp, int64_t n, float m,
                       float rs, double *sa, double *sb) {
    double a = 0, b = 0;
    for (int64_t i = 0; i < n; i++) {
        float gwi = wp ? gr[i] * wp[i] : gr[i];
        a += gwi;
        b += (double)gwi * (double)((xr[i] - m) * rs);
    }
    *sa = a, *sb = b;
}

#ifdef LN_AVX512
/* Sixteen lanes a step, the sums ending in one tree (row_sum_avx512). */
LN_AVX512 static void lnb_sums_avx512(const float *gr, const float *xr, const float *wp, int64_t n,
                                      float m, float rs, double *sa, double *sb) {
    __m512d a0 = _mm512_setzero_pd(), a1 = a0, b0 = a0, b1 = a0;
    __m512 vm = _mm512_set1_ps(m), vr = _mm512_set1_ps(rs);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 g = _mm512_maskz_loadu_ps(k, gr + i);
        if (wp) g = _mm512_mul_ps(g, _mm512_maskz_loadu_ps(k, wp + i));
        __m512 xh = _mm512_maskz_mul_ps(k, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, xr + i), vm), vr);
        __m512d glo = _mm512_cvtps_pd(_mm512_castps512_ps256(g));
        __m512d ghi = _mm512_cvtps_pd(
            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(g), 1)));
        __m512d xlo = _mm512_cvtps_pd(_mm512_castps512_ps256(xh));
        __m512d xhi = _mm512_cvtps_pd(
            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(xh), 1)));
        a0 = _mm512_add_pd(a0, glo), a1 = _mm512_add_pd(a1, ghi);
        b0 = _mm512_fmadd_pd(glo, xlo, b0), b1 = _mm512_fmadd_pd(ghi, xhi, b1);
    }
    *sa = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
    *sb = _mm512_reduce_add_pd(_mm512_add_pd(b0, b1));
}
#endif

/* grad_x's row from the two means. */
ODN_CLONES static void lnb_out(const float *gr, const float *xr, const float *wp, float *o,
                               int64_t n, float m, float rs, float a, float b) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        float gwi = wp ? gr[i] * wp[i] : gr[i];
        o[i] = rs * (gwi - a - (xr[i] - m) * rs * b);
    }
}

/* One row of grad_x: the two means, then the row. */
static void lnb_row(const float *gr, const float *xr, const float *wp, float *o, int64_t n,
                    float m, float rs) {
    double sa, sb;
    LN_VEC(lnb_sums_avx512(gr, xr, wp, n, m, rs, &sa, &sb),
           lnb_sums_c(gr, xr, wp, n, m, rs, &sa, &sb));
    lnb_out(gr, xr, wp, o, n, m, rs, (float)(sa / (double)n), (float)(sb / (double)n));
}

/* cols columns (from g and x, row length n) of grad_weight and grad_bias. */
ODN_CLONES static void lnb_cols(const float *g, const float *x, const float *mean, const float *rstd,
                     int64_t rows, int64_t n, int64_t cols, float *gw, float *gb) {
    double acc_w[LNB_COLS], acc_b[LNB_COLS];
    for (int64_t j = 0; j < cols; j++) acc_w[j] = acc_b[j] = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *gr = g + r * n, *xr = x + r * n;
        float m = mean[r], rs = rstd[r];
#pragma omp simd
        for (int64_t j = 0; j < cols; j++) {
            acc_b[j] += gr[j];
            acc_w[j] += (double)gr[j] * (double)((xr[j] - m) * rs);
        }
    }
    for (int64_t j = 0; j < cols; j++) {
        gw[j] = (float)acc_w[j];
        gb[j] = (float)acc_b[j];
    }
}

static gfp_status layer_norm_backward(const gfp_tensor *const *in, uint32_t n_in,
                                      const gfp_tensor *const *out, uint32_t n_out,
                                      const void *params) {
    const gfp_layer_norm_params *p = params;
    if (n_in != 5 || n_out != 3 || !p || p->struct_size < GFP_LAYER_NORM_PARAMS_SIZE_V1_0)
        return ODN_FALLBACK;
    const gfp_tensor *g = in[0], *x = in[1], *mean = in[2], *rstd = in[3], *w = in[4];
    const gfp_tensor *gx = out[0], *gw = out[1], *gb = out[2];
    const gfp_tensor *all[8] = {g, x, mean, rstd, w, gx, gw, gb};
    for (int i = 0; i < 8; i++) {
        if (!all[i]) {
            if (i == 4) continue;
            return ODN_FALLBACK;
        }
        if (all[i]->dtype != GFP_F32 || !pk_is_contiguous(all[i])) return ODN_FALLBACK;
    }
    int nr = p->normalized_rank;
    if (nr < 1 || nr > x->rank || !pk_same_shape(x, g) || !pk_same_shape(x, gx))
        return ODN_FALLBACK;
    int64_t rows = pk_numel(mean), total = pk_numel(x);
    if (rows == 0 || total == 0 || pk_numel(rstd) != rows || total % rows) return ODN_FALLBACK;
    int64_t n = total / rows;
    if (pk_numel(gw) != n || pk_numel(gb) != n || (w && pk_numel(w) != n)) return ODN_FALLBACK;
    /* grad_x sharing memory with an input would be read after being written. */
    if (!odn_writable(gx) || !odn_writable(gw) || !odn_writable(gb) ||
        gx->buffer == g->buffer || gx->buffer == x->buffer)
        return ODN_FALLBACK;
    const float *gp = odn_f32(g), *xp = odn_f32(x), *mp = odn_f32(mean), *rp = odn_f32(rstd);
    const float *wp = w ? odn_f32(w) : NULL;
    float *gxp = odn_f32_mut(gx), *gwp = odn_f32_mut(gw), *gbp = odn_f32_mut(gb);
    int nt = odn_threads(total * 4);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t r = 0; r < rows; r++) {
        lnb_row(gp + r * n, xp + r * n, wp, gxp + r * n, n, mp[r], rp[r]);
    });
    int64_t blocks = (n + LNB_COLS - 1) / LNB_COLS;
    nt = odn_threads(total * 2);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t bl = 0; bl < blocks; bl++) {
        int64_t j0 = bl * LNB_COLS;
        lnb_cols(gp + j0, xp + j0, mp, rp, rows, n, n - j0 < LNB_COLS ? n - j0 : LNB_COLS,
                 gwp + j0, gbp + j0);
    });
    return GFP_OK;
}

gfp_status odn_norm_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    for (uint32_t i = 0; i < n_out; i++)
        if (!out[i]) return ODN_FALLBACK;
    if ((op == GFP_OP_LAYER_NORM || op == GFP_OP_BATCH_NORM) && n_in > 0 && in[0] &&
        in[0]->dtype == GFP_F64)
        return odn_norm_f64(op, in, n_in, out, n_out, params);
    switch (op) {
    case GFP_OP_SOFTMAX:
    case GFP_OP_LOG_SOFTMAX: return odn_softmax_launch(op, in, n_in, out, n_out, params);
    case GFP_OP_LAYER_NORM: return layer_norm(in, n_in, out, n_out, params);
    case GFP_OP_BATCH_NORM: return batch_norm(in, n_in, out, n_out, params);
    case GFP_OP_BATCH_NORM_BACKWARD: return batch_norm_backward(in, n_in, out, n_out);
    case GFP_OP_LAYER_NORM_BACKWARD: return layer_norm_backward(in, n_in, out, n_out, params);
    case GFP_OP_SOFTMAX_BACKWARD:
    case GFP_OP_LOG_SOFTMAX_BACKWARD:
        return odn_softmax_backward_launch(op, in, n_in, out, n_out, params);
    default: return ODN_FALLBACK;
    }
}
