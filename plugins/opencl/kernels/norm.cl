/* SPDX-License-Identifier: BSD-3-Clause */
/* norm.cl — SOFTMAX, LOG_SOFTMAX, LAYER_NORM and BATCH_NORM (f32, f64).
 *
 * Each op works on "lines": softmax on the elements along its dim, layer norm
 * on a row of trailing dims, batch norm on every element of one channel. A
 * line is a (sizes, strides, rank) triple walked by gf_line_offset; the lines
 * themselves are indexed by another such triple. Softmax comes in two forms,
 * _i (one work-item per line) and _g (one work-group of GF_NG per line); the
 * normalisations always take a work-group per line.
 *
 * Softmax subtracts the line's max first (a NaN max is kept: the line is
 * NaN). Statistics use Neumaier-compensated sums and the corrected two-pass
 * variance (the mean, then the squared deviations from it, less the square of
 * the deviations' sum), so data far from zero keeps its precision. */
#define GF_NG 64

#define NADD(T, s, c, v)                                                \
    {                                                                    \
        T t_ = (s) + (v);                                                \
        /* Both corrections computed, one kept: no data-dependent branch. */ \
        (c) += fabs(s) >= fabs(v) ? ((s) - t_) + (v) : ((v) - t_) + (s); \
        (s) = t_;                                                        \
    }
#define NVAL(s, c) (isfinite(s) ? (s) + (c) : (s))
#define NMAX(a, b) (isnan(a) || isnan(b) ? (a) + (b) : fmax((a), (b)))

/* A tree over the work-group's GF_NG partials; l_ is the local id. */
#define GF_NTREE(...)                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                             \
    for (int h_ = GF_NG / 2; h_ > 0; h_ >>= 1) {              \
        if (l_ < h_) { __VA_ARGS__ }                          \
        barrier(CLK_LOCAL_MEM_FENCE);                         \
    }
/* Combines compensated partials (ls, lc) at l_ and l_ + h_. */
#define GF_NSUM_STEP(T, ls, lc)                               \
    {                                                         \
        T a_ = ls[l_], ca_ = lc[l_], b_ = ls[l_ + h_];        \
        NADD(T, a_, ca_, b_);                                 \
        ls[l_] = a_;                                          \
        lc[l_] = ca_ + lc[l_ + h_];                           \
    }

/* ---------------------------------------------------------------- softmax */
/* GF_SLOT / GF_LD / GF_ST: 16-bit storage with f32 arithmetic, as in
 * reduce.cl; redefined before the f16 / bf16 softmax at the end of this file. */
#define GF_SLOT(T) T
#define GF_LD(v) (v)
#define GF_ST(v) (v)
#define GF_SOFTMAX_ARGS(T)                                                                 \
    __global const T *x, long ox, __global T *y, long oy, long8 lsz, long8 lxs, long8 lys, \
        int lrank, long nlines, long len, long xs, long ys, int logsm

#define GF_SOFTMAX(DT, T)                                                                  \
    __kernel void softmax_##DT##_i(GF_SOFTMAX_ARGS(GF_SLOT(T))) {                                   \
        long l = get_global_id(0);                                                         \
        if (l >= nlines) return;                                                           \
        long x0 = ox + gf_line_offset(l, lsz, lxs, lrank);                                 \
        long y0 = oy + gf_line_offset(l, lsz, lys, lrank);                                 \
        T m = GF_LD(x[x0]);                                                                       \
        for (long i = 1; i < len; i++) m = NMAX(m, GF_LD(x[x0 + i * xs]));                        \
        T s = 0, c = 0;                                                                    \
        for (long i = 0; i < len; i++) {                                                   \
            T e = exp(GF_LD(x[x0 + i * xs]) - m);                                                 \
            NADD(T, s, c, e);                                                              \
        }                                                                                  \
        s = NVAL(s, c);                                                                    \
        T log_s = log(s);                                                                  \
        for (long i = 0; i < len; i++) {                                                   \
            T z = GF_LD(x[x0 + i * xs]) - m;                                                      \
            y[y0 + i * ys] = GF_ST(logsm ? z - log_s : exp(z) / s);                               \
        }                                                                                  \
    }                                                                                      \
    __kernel void softmax_##DT##_g(GF_SOFTMAX_ARGS(GF_SLOT(T))) {                                   \
        __local T ls[GF_NG], lc[GF_NG];                                                    \
        long l = get_group_id(0);                                                          \
        int l_ = get_local_id(0);                                                          \
        long x0 = ox + gf_line_offset(l, lsz, lxs, lrank);                                 \
        long y0 = oy + gf_line_offset(l, lsz, lys, lrank);                                 \
        T m = GF_LD(x[x0]);                                                                       \
        for (long i = l_; i < len; i += GF_NG) m = NMAX(m, GF_LD(x[x0 + i * xs]));                \
        ls[l_] = m;                                                                        \
        GF_NTREE(ls[l_] = NMAX(ls[l_], ls[l_ + h_]);)                                      \
        m = ls[0];                                                                         \
        barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        T s = 0, c = 0;                                                                    \
        for (long i = l_; i < len; i += GF_NG) {                                           \
            T e = exp(GF_LD(x[x0 + i * xs]) - m);                                                 \
            NADD(T, s, c, e);                                                              \
        }                                                                                  \
        ls[l_] = s;                                                                        \
        lc[l_] = c;                                                                        \
        GF_NTREE(GF_NSUM_STEP(T, ls, lc))                                                  \
        s = NVAL(ls[0], lc[0]);                                                            \
        T log_s = log(s);                                                                  \
        for (long i = l_; i < len; i += GF_NG) {                                           \
            T z = GF_LD(x[x0 + i * xs]) - m;                                                      \
            y[y0 + i * ys] = GF_ST(logsm ? z - log_s : exp(z) / s);                               \
        }                                                                                  \
    }

/* SOFTMAX_BACKWARD (soft = 1): grad_x = y (g - sum(g y)); LOG_SOFTMAX_BACKWARD:
 * grad_x = g - exp(y) sum(g), sums along the line, compensated. _i: an item
 * a line; _g: a work-group a line (long lines). Each position's g and y are
 * read before its grad_x is written: an exactly aliased output is fine. */
#define GF_SOFTMAX_BW_ARGS(T)                                                              \
    __global const T *g, long og, __global const T *yv, long oy, __global T *gx, long ogx, \
        long8 lsz, long8 lgs, long8 lys, long8 los, int lrank, long nlines, long len,      \
        long gs, long ys, long os, int soft
#define GF_SOFTMAX_BW_LINE(l)                                                              \
    long g0 = og + gf_line_offset((l), lsz, lgs, lrank);                                   \
    long y0 = oy + gf_line_offset((l), lsz, lys, lrank);                                   \
    long o0 = ogx + gf_line_offset((l), lsz, los, lrank);
#define GF_SOFTMAX_BW_TERM(T, i)                                                           \
    (soft ? GF_LD(g[g0 + (i) * gs]) * GF_LD(yv[y0 + (i) * ys]) : GF_LD(g[g0 + (i) * gs]))
#define GF_SOFTMAX_BW_OUT(T, i, sum)                                                       \
    {                                                                                      \
        T gi_ = GF_LD(g[g0 + (i) * gs]), yi_ = GF_LD(yv[y0 + (i) * ys]);                   \
        gx[o0 + (i) * os] = GF_ST(soft ? yi_ * (gi_ - (sum)) : gi_ - exp(yi_) * (sum));    \
    }
#define GF_SOFTMAX_BW(DT, T)                                                               \
    __kernel void softmax_bw_##DT##_i(GF_SOFTMAX_BW_ARGS(GF_SLOT(T))) {                    \
        long l = get_global_id(0);                                                         \
        if (l >= nlines) return;                                                           \
        GF_SOFTMAX_BW_LINE(l)                                                              \
        T s = 0, c = 0;                                                                    \
        for (long i = 0; i < len; i++) {                                                   \
            T v = GF_SOFTMAX_BW_TERM(T, i);                                                \
            NADD(T, s, c, v);                                                              \
        }                                                                                  \
        s = NVAL(s, c);                                                                    \
        for (long i = 0; i < len; i++) GF_SOFTMAX_BW_OUT(T, i, s)                          \
    }                                                                                      \
    __kernel void softmax_bw_##DT##_g(GF_SOFTMAX_BW_ARGS(GF_SLOT(T))) {                    \
        __local T ls[GF_NG], lc[GF_NG];                                                    \
        long l = get_group_id(0);                                                          \
        int l_ = get_local_id(0);                                                          \
        GF_SOFTMAX_BW_LINE(l)                                                              \
        T s = 0, c = 0;                                                                    \
        for (long i = l_; i < len; i += GF_NG) {                                           \
            T v = GF_SOFTMAX_BW_TERM(T, i);                                                \
            NADD(T, s, c, v);                                                              \
        }                                                                                  \
        ls[l_] = s;                                                                        \
        lc[l_] = c;                                                                        \
        GF_NTREE(GF_NSUM_STEP(T, ls, lc))                                                  \
        s = NVAL(ls[0], lc[0]);                                                            \
        for (long i = l_; i < len; i += GF_NG) GF_SOFTMAX_BW_OUT(T, i, s)                  \
    }

/* LAYER_NORM_BACKWARD over contiguous tensors: g, x, gx [rows, n]; mean,
 * rstd [rows]; w, gw, gb [n] (has_w 0: weight 1). ln_bw_cols: an item per
 * normalised element, its two sums over the rows (gb = sum g, gw = sum g
 * xhat); ln_bw_rows (_i an item a row, _g a work-group a row): grad_x = rstd
 * (g w - mean(g w) - xhat mean(g w xhat)). Sums compensated. */
#define GF_LN_BW(DT, T)                                                                    \
    __kernel void ln_bw_cols_##DT(__global const GF_SLOT(T) *g, long og,                  \
                                  __global const GF_SLOT(T) *x, long ox,                   \
                                  __global const GF_SLOT(T) *mu, long omu,                 \
                                  __global const GF_SLOT(T) *rs, long ors,                 \
                                  __global GF_SLOT(T) *gw, long ogw,                       \
                                  __global GF_SLOT(T) *gb, long ogb, long rows, long n) {  \
        long j = get_global_id(0);                                                         \
        if (j >= n) return;                                                                \
        T sg = 0, cg = 0, sx = 0, cx = 0;                                                  \
        for (long r = 0; r < rows; r++) {                                                  \
            T gi = GF_LD(g[og + r * n + j]);                                               \
            T xh = (GF_LD(x[ox + r * n + j]) - GF_LD(mu[omu + r])) * GF_LD(rs[ors + r]);   \
            T p = gi * xh;                                                                 \
            NADD(T, sg, cg, gi);                                                           \
            NADD(T, sx, cx, p);                                                            \
        }                                                                                  \
        gb[ogb + j] = GF_ST(NVAL(sg, cg));                                                 \
        gw[ogw + j] = GF_ST(NVAL(sx, cx));                                                 \
    }                                                                                      \
    __kernel void ln_bw_rows_##DT##_i(GF_LN_BW_ROWS_ARGS(GF_SLOT(T))) {                    \
        long r = get_global_id(0);                                                         \
        if (r >= rows) return;                                                             \
        GF_LN_BW_ROW_BEGIN(T)                                                              \
        for (long j = 0; j < n; j++) GF_LN_BW_ADD(T, j)                                    \
        GF_LN_BW_MEANS(T, NVAL(sa, ca), NVAL(sb, cb))                                      \
        for (long j = 0; j < n; j++) GF_LN_BW_OUT(T, j)                                    \
    }                                                                                      \
    __kernel void ln_bw_rows_##DT##_g(GF_LN_BW_ROWS_ARGS(GF_SLOT(T))) {                    \
        __local T la[GF_NG], lca[GF_NG], lb[GF_NG], lcb[GF_NG];                            \
        long r = get_group_id(0);                                                          \
        int l_ = get_local_id(0);                                                          \
        GF_LN_BW_ROW_BEGIN(T)                                                              \
        for (long j = l_; j < n; j += GF_NG) GF_LN_BW_ADD(T, j)                            \
        la[l_] = sa;                                                                       \
        lca[l_] = ca;                                                                      \
        lb[l_] = sb;                                                                       \
        lcb[l_] = cb;                                                                      \
        GF_NTREE(GF_NSUM_STEP(T, la, lca) GF_NSUM_STEP(T, lb, lcb))                        \
        GF_LN_BW_MEANS(T, NVAL(la[0], lca[0]), NVAL(lb[0], lcb[0]))                        \
        for (long j = l_; j < n; j += GF_NG) GF_LN_BW_OUT(T, j)                            \
    }
#define GF_LN_BW_ROWS_ARGS(S)                                                              \
    __global const S *g, long og, __global const S *x, long ox, __global const S *mu,      \
        long omu, __global const S *rs, long ors, __global const S *w, long ow, int has_w, \
        __global S *gx, long ogx, long rows, long n
#define GF_LN_BW_ROW_BEGIN(T)                                                              \
    T m = GF_LD(mu[omu + r]), rr = GF_LD(rs[ors + r]);                                     \
    long base = r * n;                                                                     \
    T sa = 0, ca = 0, sb = 0, cb = 0;
#define GF_LN_BW_GW(T, j) (GF_LD(g[og + base + (j)]) * (has_w ? GF_LD(w[ow + (j)]) : (T)1))
#define GF_LN_BW_ADD(T, j)                                                                 \
    {                                                                                      \
        T gwi = GF_LN_BW_GW(T, j);                                                         \
        T p = gwi * ((GF_LD(x[ox + base + (j)]) - m) * rr);                                \
        NADD(T, sa, ca, gwi);                                                              \
        NADD(T, sb, cb, p);                                                                \
    }
#define GF_LN_BW_MEANS(T, SA, SB)                                                          \
    T a = (SA) / (T)n, b = (SB) / (T)n;
#define GF_LN_BW_OUT(T, j)                                                                 \
    {                                                                                      \
        T xh = (GF_LD(x[ox + base + (j)]) - m) * rr;                                       \
        gx[ogx + base + (j)] = GF_ST(rr * (GF_LN_BW_GW(T, j) - a - xh * b));               \
    }

/* BATCH_NORM_BACKWARD over contiguous g, x, gx [N, C, S]; mean, invstd, w,
 * gw, gb [C] (has_w 0: weight 1). A work-group per channel: gb = sum g,
 * gw = sum g xhat over its N * S elements (compensated), then grad_x =
 * w invstd (g - gb / M - xhat gw / M). */
#define GF_BN_BW(DT, T)                                                                    \
    __kernel void bn_bw_##DT(__global const GF_SLOT(T) *g, long og,                        \
                             __global const GF_SLOT(T) *x, long ox,                        \
                             __global const GF_SLOT(T) *mu, long omu,                      \
                             __global const GF_SLOT(T) *is, long ois,                      \
                             __global const GF_SLOT(T) *w, long ow, int has_w,             \
                             __global GF_SLOT(T) *gx, long ogx, __global GF_SLOT(T) *gw,   \
                             long ogw, __global GF_SLOT(T) *gb, long ogb, long nb, long ch, \
                             long sp) {                                                    \
        __local T la[GF_NG], lca[GF_NG], lb[GF_NG], lcb[GF_NG];                            \
        long c = get_group_id(0);                                                          \
        int l_ = get_local_id(0);                                                          \
        T m = GF_LD(mu[omu + c]), inv = GF_LD(is[ois + c]);                                \
        long count = nb * sp;                                                              \
        T sa = 0, ca = 0, sb = 0, cb = 0;                                                  \
        for (long k = l_; k < count; k += GF_NG) {                                         \
            long at = ((k / sp) * ch + c) * sp + k % sp;                                   \
            T gi = GF_LD(g[og + at]);                                                      \
            T p = gi * ((GF_LD(x[ox + at]) - m) * inv);                                    \
            NADD(T, sa, ca, gi);                                                           \
            NADD(T, sb, cb, p);                                                            \
        }                                                                                  \
        la[l_] = sa;                                                                       \
        lca[l_] = ca;                                                                      \
        lb[l_] = sb;                                                                       \
        lcb[l_] = cb;                                                                      \
        GF_NTREE(GF_NSUM_STEP(T, la, lca) GF_NSUM_STEP(T, lb, lcb))                        \
        T db = NVAL(la[0], lca[0]), dw = NVAL(lb[0], lcb[0]);                              \
        if (l_ == 0) {                                                                     \
            gb[ogb + c] = GF_ST(db);                                                       \
            gw[ogw + c] = GF_ST(dw);                                                       \
        }                                                                                  \
        if (count == 0) return;                                                            \
        T mg = db / (T)count, mgx = dw / (T)count;                                         \
        T scale = (has_w ? GF_LD(w[ow + c]) : (T)1) * inv;                                 \
        for (long k = l_; k < count; k += GF_NG) {                                         \
            long at = ((k / sp) * ch + c) * sp + k % sp;                                   \
            T xh = (GF_LD(x[ox + at]) - m) * inv;                                          \
            gx[ogx + at] = GF_ST(scale * (GF_LD(g[og + at]) - mg - xh * mgx));             \
        }                                                                                  \
    }

/* _v: one work-item per line, the line contiguous in x and y, vectorized by
 * hand (VW lanes; the tail of a line goes scalar). Softmax writes each exp to
 * y as it sums them and then divides y in place, so an element costs one exp
 * (the same value as before, the same quotient) and the last pass reads a
 * line that is still in cache. */
#define GF_NVMAXN(a, b) select(fmax((a), (b)), (a) + (b), isnan(a) | isnan(b))
#define GF_SOFTMAX_V(DT, T, VT, VW, VLOAD, VSTORE)                                         \
    __kernel void softmax_##DT##_v(GF_SOFTMAX_ARGS(T)) {                                   \
        long l = get_global_id(0);                                                         \
        if (l >= nlines) return;                                                           \
        const __global T *xl = x + ox + gf_line_offset(l, lsz, lxs, lrank);                \
        __global T *yl = y + oy + gf_line_offset(l, lsz, lys, lrank);                      \
        long full = len / VW * VW;                                                         \
        VT vm = (VT)(-INFINITY);                                                           \
        for (long i = 0; i < full; i += VW) vm = GF_NVMAXN(vm, VLOAD(0, xl + i));          \
        T m = -INFINITY, lm[VW];                                                           \
        VSTORE(vm, 0, lm);                                                                 \
        for (int i = 0; i < VW; i++) m = NMAX(m, lm[i]);                                   \
        for (long i = full; i < len; i++) m = NMAX(m, xl[i]);                              \
        VT vs = 0, vc = 0;                                                                 \
        for (long i = 0; i < full; i += VW) {                                              \
            VT e = exp(VLOAD(0, xl + i) - m), t = vs + e;                                  \
            vc += select((e - t) + vs, (vs - t) + e, fabs(vs) >= fabs(e));                 \
            vs = t;                                                                        \
            if (!logsm) VSTORE(e, 0, yl + i); /* kept for the last pass */                 \
        }                                                                                  \
        T s = 0, c = 0, ls[VW], lcs[VW];                                                   \
        VSTORE(vs, 0, ls);                                                                 \
        VSTORE(vc, 0, lcs);                                                                \
        for (int i = 0; i < VW; i++) {                                                     \
            NADD(T, s, c, ls[i]);                                                          \
            c += lcs[i];                                                                   \
        }                                                                                  \
        for (long i = full; i < len; i++) {                                                \
            T e = exp(xl[i] - m);                                                          \
            NADD(T, s, c, e);                                                              \
            if (!logsm) yl[i] = e;                                                         \
        }                                                                                  \
        s = NVAL(s, c);                                                                    \
        if (!logsm) { /* y holds each exp, read back while the line is in cache */          \
            for (long i = 0; i < full; i += VW) VSTORE(VLOAD(0, yl + i) / s, 0, yl + i);   \
            for (long i = full; i < len; i++) yl[i] = yl[i] / s;                           \
            return;                                                                        \
        }                                                                                  \
        T log_s = log(s);                                                                  \
        for (long i = 0; i < full; i += VW) {                                              \
            VT z = VLOAD(0, xl + i) - m;                                                   \
            VSTORE(z - log_s, 0, yl + i);                                                  \
        }                                                                                  \
        for (long i = full; i < len; i++) yl[i] = xl[i] - m - log_s;                       \
    }
GF_SOFTMAX_BW(f32, float)
GF_LN_BW(f32, float)
GF_BN_BW(f32, float)
GF_SOFTMAX_V(f32, float, float16, 16, vload16, vstore16)
#if GF_HAS_FP64
GF_SOFTMAX_BW(f64, double)
GF_LN_BW(f64, double)
GF_BN_BW(f64, double)
GF_SOFTMAX_V(f64, double, double8, 8, vload8, vstore8)
#endif

/* ---------------------------------------------------------------- moments */
/* The work-group's mean and sum of squared deviations (m2) of the n
 * elements at x0 + gf_line_offset(j, sz, st, rank). Every item gets both. */
#define GF_MOMENTS(DT, T)                                                                  \
    void gf_moments_##DT(__global const T *x, long x0, long8 sz, long8 st, int rank, long n, \
                         __local T *ls, __local T *lc, __local T *ld, __local T *le,      \
                         T *mean_out, T *m2_out) {                                         \
        int l_ = get_local_id(0);                                                          \
        T s = 0, c = 0;                                                                    \
        for (long j = l_; j < n; j += GF_NG) {                                             \
            T v = x[x0 + gf_line_offset(j, sz, st, rank)];                                 \
            NADD(T, s, c, v);                                                              \
        }                                                                                  \
        ls[l_] = s;                                                                        \
        lc[l_] = c;                                                                        \
        GF_NTREE(GF_NSUM_STEP(T, ls, lc))                                                  \
        T mean = NVAL(ls[0], lc[0]) / (T)n;                                                \
        barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        T sq = 0, sqc = 0, dv = 0, dvc = 0;                                                \
        for (long j = l_; j < n; j += GF_NG) {                                             \
            T d = x[x0 + gf_line_offset(j, sz, st, rank)] - mean, d2 = d * d;              \
            NADD(T, sq, sqc, d2);                                                          \
            NADD(T, dv, dvc, d);                                                           \
        }                                                                                  \
        ls[l_] = sq;                                                                       \
        lc[l_] = sqc;                                                                      \
        ld[l_] = dv;                                                                       \
        le[l_] = dvc;                                                                      \
        GF_NTREE(GF_NSUM_STEP(T, ls, lc) GF_NSUM_STEP(T, ld, le))                          \
        T dsum = NVAL(ld[0], le[0]);                                                       \
        T m2 = NVAL(ls[0], lc[0]) - dsum * dsum / (T)n;                                    \
        barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        *mean_out = mean;                                                                  \
        *m2_out = m2 < 0 ? (T)0 : m2;                                                      \
    }

/* ---------------------------------------------------------------- layer norm */
/* Rows are indexed by the leading dims (osz; strides of x, y, mean, rstd),
 * the row by the trailing ones (isz; strides of x, y, weight, bias). */
#define GF_LAYER_NORM(DT, T)                                                               \
    __kernel void layer_norm_##DT(                                                         \
        __global const T *x, long ox, __global T *y, long oy, __global const T *w, long ow, \
        int has_w, __global const T *b, long obias, int has_b, __global T *mean, long omean, \
        __global T *rstd, long orstd, long8 osz, long8 oxs, long8 oys, long8 oms, long8 ors, \
        int orank, long8 isz, long8 ixs, long8 iys, long8 iws, long8 ibs, int irank,        \
        long ninner, T eps) {                                                              \
        __local T ls[GF_NG], lc[GF_NG], ld[GF_NG], le[GF_NG];                              \
        long row = get_group_id(0);                                                        \
        int l_ = get_local_id(0);                                                          \
        long x0 = ox + gf_line_offset(row, osz, oxs, orank);                               \
        long y0 = oy + gf_line_offset(row, osz, oys, orank);                               \
        T mu, m2;                                                                          \
        gf_moments_##DT(x, x0, isz, ixs, irank, ninner, ls, lc, ld, le, &mu, &m2);          \
        T r = (T)1 / sqrt(m2 / (T)ninner + eps);                                           \
        if (l_ == 0) {                                                                     \
            mean[omean + gf_line_offset(row, osz, oms, orank)] = mu;                       \
            rstd[orstd + gf_line_offset(row, osz, ors, orank)] = r;                        \
        }                                                                                  \
        for (long j = l_; j < ninner; j += GF_NG) {                                        \
            T v = (x[x0 + gf_line_offset(j, isz, ixs, irank)] - mu) * r;                   \
            if (has_w) v *= w[ow + gf_line_offset(j, isz, iws, irank)];                    \
            if (has_b) v += b[obias + gf_line_offset(j, isz, ibs, irank)];                 \
            y[y0 + gf_line_offset(j, isz, iys, irank)] = v;                                \
        }                                                                                  \
    }

/* ---------------------------------------------------------------- batch norm */
/* One work-group per channel c; the channel's elements are every dim but 1
 * (lsz; strides of x and y), starting at c * xc / c * yc. Per-channel tensors
 * are 1-D with their own strides. Training and evaluation are separate
 * kernels: a barrier under a branch, even a uniform one, is where some
 * compilers go wrong (PoCL ran the guarded update once per work-item). */
#define GF_BN_ARGS(T)                                                                      \
    __global const T *x, long ox, long xc, __global T *y, long oy, long yc,                \
        __global const T *w, long ow, long ws, int has_w, __global const T *b, long ob,    \
        long bs, int has_b, __global T *rm, long orm, long rms, int has_rm, __global T *rv, \
        long orv, long rvs, int has_rv, __global T *sm, long osm, long sms, __global T *si, \
        long osi, long sis, long8 lsz, long8 lxs, long8 lys, int lrank, long nline,        \
        T momentum, T eps
#define GF_BN_APPLY(T)                                                                     \
    if (l_ == 0) {                                                                         \
        sm[osm + c * sms] = mu;                                                            \
        si[osi + c * sis] = invstd;                                                        \
    }                                                                                      \
    T scale = has_w ? w[ow + c * ws] : (T)1, shift = has_b ? b[ob + c * bs] : (T)0;        \
    for (long j = l_; j < nline; j += GF_NG) {                                             \
        T v = x[x0 + gf_line_offset(j, lsz, lxs, lrank)];                                  \
        y[y0 + gf_line_offset(j, lsz, lys, lrank)] = (v - mu) * invstd * scale + shift;    \
    }
#define GF_BATCH_NORM(DT, T)                                                               \
    __kernel void batch_norm_train_##DT(GF_BN_ARGS(T)) {                                   \
        __local T ls[GF_NG], lc[GF_NG], ld[GF_NG], le[GF_NG];                              \
        long c = get_group_id(0);                                                          \
        int l_ = get_local_id(0);                                                          \
        long x0 = ox + c * xc, y0 = oy + c * yc;                                           \
        T mu, m2;                                                                          \
        gf_moments_##DT(x, x0, lsz, lxs, lrank, nline, ls, lc, ld, le, &mu, &m2);           \
        T invstd = (T)1 / sqrt(m2 / (T)nline + eps);                                       \
        /* Without elements there are no statistics to fold in. */                         \
        if (l_ == 0 && nline > 0 && has_rm)                                                \
            rm[orm + c * rms] = (1 - momentum) * rm[orm + c * rms] + momentum * mu;        \
        if (l_ == 0 && nline > 0 && has_rv)                                                \
            rv[orv + c * rvs] =                                                            \
                (1 - momentum) * rv[orv + c * rvs] + momentum * (m2 / (T)(nline - 1));     \
        GF_BN_APPLY(T)                                                                     \
    }                                                                                      \
    __kernel void batch_norm_eval_##DT(GF_BN_ARGS(T)) {                                    \
        long c = get_group_id(0);                                                          \
        int l_ = get_local_id(0);                                                          \
        long x0 = ox + c * xc, y0 = oy + c * yc;                                           \
        T mu = rm[orm + c * rms], invstd = (T)1 / sqrt(rv[orv + c * rvs] + eps);           \
        GF_BN_APPLY(T)                                                                     \
    }

#define GF_NORMS(DT, T)   \
    GF_SOFTMAX(DT, T)     \
    GF_MOMENTS(DT, T)     \
    GF_LAYER_NORM(DT, T)  \
    GF_BATCH_NORM(DT, T)
GF_NORMS(f32, float)
#if GF_HAS_FP64
GF_NORMS(f64, double)
#endif

/* ---------------------------------------------------------------- by runs */
/* The forms for data in contiguous runs: a batch-norm channel of [N, C, H, W]
 * is N runs of H * W elements, a layer-norm row one run. A work-group per
 * channel (row) walks its R runs of L elements, each run indexed by (rsz,
 * rxs / rys, rrank); its items take VW-lane vectors of each run in turn (no
 * division per element, one per run), the last L % VW elements go one by
 * one. Sums stay Neumaier-compensated in every lane, then across lanes and
 * items (the tree); the variance is the same two-pass formula as above. */
#define GF_VNADD(VT, s, c, v)                                                              \
    {                                                                                      \
        VT t_ = (s) + (v);                                                                 \
        (c) += select(((v) - t_) + (s), ((s) - t_) + (v), fabs(s) >= fabs(v));            \
        (s) = t_;                                                                          \
    }
/* Folds the lanes of (vs, vc) into the scalar pair (s, c). */
#define GF_VFOLD(T, VW, VSTORE, vs, vc, s, c)                                              \
    {                                                                                      \
        T ls_[VW], lc_[VW];                                                                \
        VSTORE(vs, 0, ls_);                                                                \
        VSTORE(vc, 0, lc_);                                                                \
        for (int i_ = 0; i_ < VW; i_++) {                                                  \
            NADD(T, s, c, ls_[i_]);                                                        \
            c += lc_[i_];                                                                  \
        }                                                                                  \
    }
/* Opens the loops over the runs of x and, in each, the item's vectors
 * (i_ their first element); GF_RUNS_TAIL switches to the tail elements,
 * GF_RUNS_END closes. With GF_NG runs or more, each item walks whole runs
 * (contiguous reads); with fewer, the items share each run. */
#define GF_RUNS_STEPS(VW)                                                                  \
    bool by_run_ = R >= GF_NG;                                                             \
    long r_lo_ = by_run_ ? l_ : 0, r_st_ = by_run_ ? GF_NG : 1;                            \
    long i_lo_ = by_run_ ? 0 : (long)l_ * VW, i_st_ = by_run_ ? VW : GF_NG * VW;           \
    long t_lo_ = by_run_ ? full_ : full_ + l_, t_st_ = by_run_ ? 1 : GF_NG;
#define GF_RUNS_BEGIN(T, VW)                                                               \
    for (long r_ = r_lo_; r_ < R; r_ += r_st_) {                                           \
        const __global T *xr_ = x + x0 + gf_line_offset(r_, rsz, rxs, rrank);              \
        for (long i_ = i_lo_; i_ < full_; i_ += i_st_) {
#define GF_RUNS_TAIL                                                                       \
        }                                                                                  \
        for (long i_ = t_lo_; i_ < L; i_ += t_st_) {
#define GF_RUNS_END                                                                        \
        }                                                                                  \
    }
#define GF_NORM_RUNS(DT, T, VT, VW, VLOAD, VSTORE)                                         \
    void gf_moments_runs_##DT(__global const T *x, long x0, long8 rsz, long8 rxs,          \
                              int rrank, long R, long L, __local T *ls, __local T *lc,     \
                              __local T *ld, __local T *le, T *mean_out, T *m2_out) {      \
        int l_ = get_local_id(0);                                                          \
        long full_ = L / VW * VW;                                                          \
        GF_RUNS_STEPS(VW)                                                                  \
        VT vs = 0, vc = 0;                                                                 \
        T s = 0, c = 0;                                                                    \
        GF_RUNS_BEGIN(T, VW)                                                               \
            VT v = VLOAD(0, xr_ + i_);                                                     \
            GF_VNADD(VT, vs, vc, v);                                                       \
        GF_RUNS_TAIL                                                                       \
            T v = xr_[i_];                                                                 \
            NADD(T, s, c, v);                                                              \
        GF_RUNS_END                                                                        \
        GF_VFOLD(T, VW, VSTORE, vs, vc, s, c)                                              \
        ls[l_] = s;                                                                        \
        lc[l_] = c;                                                                        \
        GF_NTREE(GF_NSUM_STEP(T, ls, lc))                                                  \
        T n = (T)R * (T)L, mean = NVAL(ls[0], lc[0]) / n;                                  \
        barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        VT vq = 0, vqc = 0, vd = 0, vdc = 0;                                               \
        T sq = 0, sqc = 0, dv = 0, dvc = 0;                                                \
        GF_RUNS_BEGIN(T, VW)                                                               \
            VT d = VLOAD(0, xr_ + i_) - mean, d2 = d * d;                                  \
            GF_VNADD(VT, vq, vqc, d2);                                                     \
            GF_VNADD(VT, vd, vdc, d);                                                      \
        GF_RUNS_TAIL                                                                       \
            T d = xr_[i_] - mean, d2 = d * d;                                              \
            NADD(T, sq, sqc, d2);                                                          \
            NADD(T, dv, dvc, d);                                                           \
        GF_RUNS_END                                                                        \
        GF_VFOLD(T, VW, VSTORE, vq, vqc, sq, sqc)                                          \
        GF_VFOLD(T, VW, VSTORE, vd, vdc, dv, dvc)                                          \
        ls[l_] = sq;                                                                       \
        lc[l_] = sqc;                                                                      \
        ld[l_] = dv;                                                                       \
        le[l_] = dvc;                                                                      \
        GF_NTREE(GF_NSUM_STEP(T, ls, lc) GF_NSUM_STEP(T, ld, le))                          \
        T dsum = NVAL(ld[0], le[0]);                                                       \
        T m2 = NVAL(ls[0], lc[0]) - dsum * dsum / n;                                       \
        barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        *mean_out = mean;                                                                  \
        *m2_out = m2 < 0 ? (T)0 : m2;                                                      \
    }                                                                                      \
    /* y = (x - mu) * a * b + s over the runs (y's runs by rys). */                       \
    void gf_apply_runs_##DT(__global const T *x, long x0, __global T *y, long y0,          \
                            long8 rsz, long8 rxs, long8 rys, int rrank, long R, long L,    \
                            T mu, T a, T b, T sh) {                                        \
        int l_ = get_local_id(0);                                                          \
        long full_ = L / VW * VW;                                                          \
        GF_RUNS_STEPS(VW)                                                                  \
        for (long r_ = r_lo_; r_ < R; r_ += r_st_) {                                       \
            const __global T *xr_ = x + x0 + gf_line_offset(r_, rsz, rxs, rrank);          \
            __global T *yr_ = y + y0 + gf_line_offset(r_, rsz, rys, rrank);                \
            for (long i_ = i_lo_; i_ < full_; i_ += i_st_)                                 \
                VSTORE((VLOAD(0, xr_ + i_) - mu) * a * b + sh, 0, yr_ + i_);               \
            for (long i_ = t_lo_; i_ < L; i_ += t_st_)                                     \
                yr_[i_] = (xr_[i_] - mu) * a * b + sh;                                     \
        }                                                                                  \
    }                                                                                      \
    /* Batch norm by runs: the arguments of GF_BN_ARGS, with (lsz, lxs, lys,  \
     * lrank) the runs of a channel, nline their count R and L their length. */              \
    __kernel void batch_norm_train_##DT##_r(GF_BN_ARGS(T), long L) {                       \
        __local T ls[GF_NG], lc[GF_NG], ld[GF_NG], le[GF_NG];                              \
        long c = get_group_id(0), R = nline, n = R * L;                                    \
        int l_ = get_local_id(0);                                                          \
        long x0 = ox + c * xc, y0 = oy + c * yc;                                           \
        T mu, m2;                                                                          \
        gf_moments_runs_##DT(x, x0, lsz, lxs, lrank, R, L, ls, lc, ld, le, &mu, &m2);       \
        T invstd = (T)1 / sqrt(m2 / (T)n + eps);                                           \
        if (l_ == 0 && n > 0 && has_rm)                                                    \
            rm[orm + c * rms] = (1 - momentum) * rm[orm + c * rms] + momentum * mu;        \
        if (l_ == 0 && n > 0 && has_rv)                                                    \
            rv[orv + c * rvs] =                                                            \
                (1 - momentum) * rv[orv + c * rvs] + momentum * (m2 / (T)(n - 1));         \
        if (l_ == 0) {                                                                     \
            sm[osm + c * sms] = mu;                                                        \
            si[osi + c * sis] = invstd;                                                    \
        }                                                                                  \
        T scale = has_w ? w[ow + c * ws] : (T)1, shift = has_b ? b[ob + c * bs] : (T)0;    \
        gf_apply_runs_##DT(x, x0, y, y0, lsz, lxs, lys, lrank, R, L, mu, invstd, scale,    \
                           shift);                                                         \
    }                                                                                      \
    __kernel void batch_norm_eval_##DT##_r(GF_BN_ARGS(T), long L) {                        \
        long c = get_group_id(0);                                                          \
        long x0 = ox + c * xc, y0 = oy + c * yc;                                           \
        T mu = rm[orm + c * rms], invstd = (T)1 / sqrt(rv[orv + c * rvs] + eps);           \
        if (get_local_id(0) == 0) {                                                        \
            sm[osm + c * sms] = mu;                                                        \
            si[osi + c * sis] = invstd;                                                    \
        }                                                                                  \
        T scale = has_w ? w[ow + c * ws] : (T)1, shift = has_b ? b[ob + c * bs] : (T)0;    \
        gf_apply_runs_##DT(x, x0, y, y0, lsz, lxs, lys, lrank, nline, L, mu, invstd, scale, \
                           shift);                                                         \
    }
#define GF_LAYER_NORM_RUNS(DT, T, VT, VW, VLOAD, VSTORE)                                   \
    /* Layer norm by runs: a row is R runs of L (rsz, rxs / rys, rrank); the \
     * weight and bias, when there, are contiguous over the row. */             \
    __kernel void layer_norm_##DT##_r(                                                     \
        __global const T *x, long ox, __global T *y, long oy, __global const T *w, long ow, \
        int has_w, __global const T *b, long obias, int has_b, __global T *mean, long omean, \
        __global T *rstd, long orstd, long8 osz, long8 oxs, long8 oys, long8 oms, long8 ors, \
        int orank, long8 rsz, long8 rxs, long8 rys, int rrank, long R, long L, T eps) {    \
        __local T ls[GF_NG], lc[GF_NG], ld[GF_NG], le[GF_NG];                              \
        long row = get_group_id(0);                                                        \
        int l_ = get_local_id(0);                                                          \
        long x0 = ox + gf_line_offset(row, osz, oxs, orank);                               \
        long y0 = oy + gf_line_offset(row, osz, oys, orank);                               \
        T mu, m2;                                                                          \
        gf_moments_runs_##DT(x, x0, rsz, rxs, rrank, R, L, ls, lc, ld, le, &mu, &m2);       \
        T rs = (T)1 / sqrt(m2 / ((T)R * (T)L) + eps);                                      \
        if (l_ == 0) {                                                                     \
            mean[omean + gf_line_offset(row, osz, oms, orank)] = mu;                       \
            rstd[orstd + gf_line_offset(row, osz, ors, orank)] = rs;                       \
        }                                                                                  \
        long full_ = L / VW * VW;                                                          \
        GF_RUNS_STEPS(VW)                                                                  \
        for (long r_ = r_lo_; r_ < R; r_ += r_st_) {                                       \
            const __global T *xr_ = x + x0 + gf_line_offset(r_, rsz, rxs, rrank);          \
            __global T *yr_ = y + y0 + gf_line_offset(r_, rsz, rys, rrank);                \
            const __global T *wr_ = w + ow + r_ * L, *br_ = b + obias + r_ * L;            \
            for (long i_ = i_lo_; i_ < full_; i_ += i_st_) {                               \
                VT v = (VLOAD(0, xr_ + i_) - mu) * rs;                                     \
                if (has_w) v *= VLOAD(0, wr_ + i_);                                        \
                if (has_b) v += VLOAD(0, br_ + i_);                                        \
                VSTORE(v, 0, yr_ + i_);                                                    \
            }                                                                              \
            for (long i_ = t_lo_; i_ < L; i_ += t_st_) {                                   \
                T v = (xr_[i_] - mu) * rs;                                                 \
                if (has_w) v *= wr_[i_];                                                   \
                if (has_b) v += br_[i_];                                                   \
                yr_[i_] = v;                                                               \
            }                                                                              \
        }                                                                                  \
    }
/* Layer norm with an item per row (CPU devices, many rows): the row one
 * contiguous run of L in x and y, weight and bias contiguous; no barrier, so
 * no work-group loop of the driver's around each step. */
#define GF_LAYER_NORM_V(DT, T, VT, VW, VLOAD, VSTORE)                                      \
    __kernel void layer_norm_##DT##_v(                                                     \
        __global const T *x, long ox, __global T *y, long oy, __global const T *w, long ow, \
        int has_w, __global const T *b, long obias, int has_b, __global T *mean, long omean, \
        __global T *rstd, long orstd, long8 osz, long8 oxs, long8 oys, long8 oms, long8 ors, \
        int orank, long nouter, long L, T eps) {                                           \
        long row = get_global_id(0);                                                       \
        if (row >= nouter) return;                                                         \
        const __global T *xr = x + ox + gf_line_offset(row, osz, oxs, orank);              \
        __global T *yr = y + oy + gf_line_offset(row, osz, oys, orank);                    \
        long full = L / VW * VW;                                                           \
        VT vs = 0, vc = 0;                                                                 \
        T s = 0, c = 0;                                                                    \
        for (long i = 0; i < full; i += VW) {                                              \
            VT v = VLOAD(0, xr + i);                                                       \
            GF_VNADD(VT, vs, vc, v);                                                       \
        }                                                                                  \
        for (long i = full; i < L; i++) NADD(T, s, c, xr[i]);                              \
        GF_VFOLD(T, VW, VSTORE, vs, vc, s, c)                                              \
        T mu = NVAL(s, c) / (T)L;                                                          \
        VT vq = 0, vqc = 0, vd = 0, vdc = 0;                                               \
        T sq = 0, sqc = 0, dv = 0, dvc = 0;                                                \
        for (long i = 0; i < full; i += VW) {                                              \
            VT d = VLOAD(0, xr + i) - mu, d2 = d * d;                                      \
            GF_VNADD(VT, vq, vqc, d2);                                                     \
            GF_VNADD(VT, vd, vdc, d);                                                      \
        }                                                                                  \
        for (long i = full; i < L; i++) {                                                  \
            T d = xr[i] - mu, d2 = d * d;                                                  \
            NADD(T, sq, sqc, d2);                                                          \
            NADD(T, dv, dvc, d);                                                           \
        }                                                                                  \
        GF_VFOLD(T, VW, VSTORE, vq, vqc, sq, sqc)                                          \
        GF_VFOLD(T, VW, VSTORE, vd, vdc, dv, dvc)                                          \
        T dsum = NVAL(dv, dvc), m2 = NVAL(sq, sqc) - dsum * dsum / (T)L;                   \
        T rs = (T)1 / sqrt((m2 < 0 ? (T)0 : m2) / (T)L + eps);                             \
        mean[omean + gf_line_offset(row, osz, oms, orank)] = mu;                           \
        rstd[orstd + gf_line_offset(row, osz, ors, orank)] = rs;                           \
        const __global T *wr = w + ow, *br = b + obias;                                    \
        for (long i = 0; i < full; i += VW) {                                              \
            VT v = (VLOAD(0, xr + i) - mu) * rs;                                           \
            if (has_w) v *= VLOAD(0, wr + i);                                              \
            if (has_b) v += VLOAD(0, br + i);                                              \
            VSTORE(v, 0, yr + i);                                                          \
        }                                                                                  \
        for (long i = full; i < L; i++) {                                                  \
            T v = (xr[i] - mu) * rs;                                                       \
            if (has_w) v *= wr[i];                                                         \
            if (has_b) v += br[i];                                                         \
            yr[i] = v;                                                                     \
        }                                                                                  \
    }
GF_NORM_RUNS(f32, float, float16, 16, vload16, vstore16)
GF_LAYER_NORM_RUNS(f32, float, float16, 16, vload16, vstore16)
GF_LAYER_NORM_V(f32, float, float16, 16, vload16, vstore16)
#if GF_HAS_FP64
GF_NORM_RUNS(f64, double, double8, 8, vload8, vstore8)
GF_LAYER_NORM_RUNS(f64, double, double8, 8, vload8, vstore8)
GF_LAYER_NORM_V(f64, double, double8, 8, vload8, vstore8)
#endif

/* ---------------------------------------------------------------- f16, bf16 */
/* SOFTMAX / LOG_SOFTMAX and their gradients over ushort storage in f32, one
 * rounding on store
 * (the hand-vectorized _v form and the norms are f32 / f64 only). */
#undef GF_SLOT
#undef GF_LD
#undef GF_ST
#define GF_SLOT(T) ushort
#define GF_LD(v) gf_h2f(v)
#define GF_ST(v) gf_f2h(v)
GF_SOFTMAX(f16, float)
GF_SOFTMAX_BW(f16, float)
GF_LN_BW(f16, float)
GF_BN_BW(f16, float)
#undef GF_LD
#undef GF_ST
#define GF_LD(v) gf_b2f(v)
#define GF_ST(v) gf_f2b(v)
GF_SOFTMAX(bf16, float)
GF_SOFTMAX_BW(bf16, float)
GF_LN_BW(bf16, float)
GF_BN_BW(bf16, float)
