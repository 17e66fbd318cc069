/* SPDX-License-Identifier: BSD-3-Clause */
/* reduce.cl — SUM MEAN PROD AMAX AMIN VAR LOGSUMEXP and MAX_DIM / MIN_DIM.
 *
 * Output element o reduces the "line" of input elements that share its index
 * in the kept dims. Both are described by (sizes, strides, rank) triples:
 * kept dims (ksz; x strides kxs, y strides kys) and reduced dims (rsz, rxs).
 * Two forms per op: _i, one work-item per output (a serial loop over its
 * line: many short lines), and _g, one work-group of GF_RG items per output
 * (strided partial results, then a tree in local memory: few long lines).
 *
 * Floating sums carry Neumaier compensation (in the dtype: f32 in float), so
 * a long sum stays close to the exact one rounded once, as the reference's.
 * Integer sums and products wrap (ulong); bool reads as 0 or 1, so its
 * amax / amin are any / all. NaN propagates through amax / amin, and wins
 * max_dim / min_dim (the first NaN); ties go to the first index. */
#define GF_RG 64

/* 16-bit storage (f16, bf16 as ushort bits, at the end of this file) with
 * f32 arithmetic: GF_SLOT(T) is the element type in memory for compute type
 * T, GF_LD widens an element read from x, GF_ST rounds a result written to
 * y. They are expanded where a kernel is instantiated, so redefining them
 * before the 16-bit instantiations changes those kernels only. */
#define GF_SLOT(T) T
#define GF_LD(v) (v)
#define GF_ST(v) (v)

#define GF_RED_PARAMS(T)                                                                   \
    __global const T *x, long ox, __global T *y, long oy, long8 ksz, long8 kxs, long8 kys, \
        int krank, long nout, long8 rsz, long8 rxs, int rrank, long nline
/* xb_, yb_: where output o's line starts in x, and where o lives in y. */
#define GF_RED_OUT(o)                                          \
    long xb_ = ox + gf_line_offset((o), ksz, kxs, krank);      \
    long yb_ = oy + gf_line_offset((o), ksz, kys, krank);
#define GF_X(j) GF_LD(x[xb_ + gf_line_offset((j), rsz, rxs, rrank)])

/* Neumaier: the rounding error of each addition is carried in c. */
#define KADD(T, s, c, v)                                                \
    {                                                                    \
        T t_ = (s) + (v);                                                \
        /* Both corrections computed, one kept: no data-dependent branch. */ \
        (c) += fabs(s) >= fabs(v) ? ((s) - t_) + (v) : ((v) - t_) + (s); \
        (s) = t_;                                                        \
    }
#define KVAL(s, c) (isfinite(s) ? (s) + (c) : (s))
/* NaN-propagating extremes. */
#define FMAXN(a, b) (isnan(a) || isnan(b) ? (a) + (b) : fmax((a), (b)))
#define FMINN(a, b) (isnan(a) || isnan(b) ? (a) + (b) : fmin((a), (b)))

/* The group form's skeleton: each item folds its strided share of the line
 * into acc, then the partials meet in local memory. */
#define GF_GROUP_BEGIN(T)                                      \
    long o_ = get_group_id(0);                                 \
    int l_ = get_local_id(0);                                  \
    GF_RED_OUT(o_)
#define GF_TREE(...)                                           \
    barrier(CLK_LOCAL_MEM_FENCE);                              \
    for (int h_ = GF_RG / 2; h_ > 0; h_ >>= 1) {               \
        if (l_ < h_) { __VA_ARGS__ }                           \
        barrier(CLK_LOCAL_MEM_FENCE);                          \
    }

/* ---------------------------------------------------------------- float sums */
/* FIN(s, n): the result from the compensated sum s and the line length n. */
#define FIN_SUM(s, n) (s)
#define FIN_MEAN(s, n) ((s) / (n))
#define GF_FSUM(NAME, DT, T, FIN)                                                          \
    __kernel void reduce_##NAME##_##DT##_i(GF_RED_PARAMS(GF_SLOT(T))) {                             \
        long o = get_global_id(0);                                                         \
        if (o >= nout) return;                                                             \
        GF_RED_OUT(o)                                                                      \
        T s = 0, c = 0;                                                                    \
        for (long j = 0; j < nline; j++) {                                                 \
            T v = GF_X(j);                                                                 \
            KADD(T, s, c, v);                                                                 \
        }                                                                                  \
        y[yb_] = GF_ST(FIN(KVAL(s, c), (T)nline));                                                \
    }                                                                                      \
    __kernel void reduce_##NAME##_##DT##_g(GF_RED_PARAMS(GF_SLOT(T))) {                             \
        __local T ls[GF_RG], lc[GF_RG];                                                    \
        GF_GROUP_BEGIN(T)                                                                  \
        T s = 0, c = 0;                                                                    \
        for (long j = l_; j < nline; j += GF_RG) {                                         \
            T v = GF_X(j);                                                                 \
            KADD(T, s, c, v);                                                                 \
        }                                                                                  \
        ls[l_] = s;                                                                        \
        lc[l_] = c;                                                                        \
        GF_TREE({                                                                          \
            T a = ls[l_], ca = lc[l_], b = ls[l_ + h_];                                    \
            KADD(T, a, ca, b);                                                                \
            ls[l_] = a;                                                                    \
            lc[l_] = ca + lc[l_ + h_];                                                     \
        })                                                                                 \
        if (l_ == 0) y[yb_] = GF_ST(FIN(KVAL(ls[0], lc[0]), (T)nline));                           \
    }

/* ---------------------------------------------------------------- folds */
/* A plain fold: acc = OP(acc, v) from INIT; CT the accumulator type, LOAD
 * converts an element to it, STORE back. */
#define GF_FOLD(NAME, DT, T, CT, INIT, OP, LOAD, STORE)                                    \
    __kernel void reduce_##NAME##_##DT##_i(GF_RED_PARAMS(GF_SLOT(T))) {                             \
        long o = get_global_id(0);                                                         \
        if (o >= nout) return;                                                             \
        GF_RED_OUT(o)                                                                      \
        CT acc = INIT;                                                                     \
        for (long j = 0; j < nline; j++) acc = OP(acc, LOAD(GF_X(j)));                     \
        y[yb_] = GF_ST(STORE(acc));                                                               \
    }                                                                                      \
    __kernel void reduce_##NAME##_##DT##_g(GF_RED_PARAMS(GF_SLOT(T))) {                             \
        __local CT la[GF_RG];                                                              \
        GF_GROUP_BEGIN(T)                                                                  \
        CT acc = INIT;                                                                     \
        for (long j = l_; j < nline; j += GF_RG) acc = OP(acc, LOAD(GF_X(j)));             \
        la[l_] = acc;                                                                      \
        GF_TREE(la[l_] = OP(la[l_], la[l_ + h_]);)                                         \
        if (l_ == 0) y[yb_] = GF_ST(STORE(la[0]));                                                \
    }

#define OP_MUL(a, b) ((a) * (b))
#define OP_UADD(a, b) ((a) + (b))
#define OP_UMUL(a, b) ((a) * (b))
#define OP_LMAX(a, b) max((a), (b))
#define OP_LMIN(a, b) min((a), (b))
#define LD_SAME(v) (v)
#define LD_U(v) as_ulong((long)(v))
#define LD_L(v) ((long)(v))
#define LD_B(v) ((long)((v) != 0))
#define ST_SAME(v) (v)
#define ST_U_i32(v) as_int((uint)(v))
#define ST_U_i64(v) as_long(v)
#define ST_L_i32(v) ((int)(v))
#define ST_L_i64(v) (v)
#define ST_B(v) ((uchar)((v) != 0))

#define GF_FLOAT_REDUCTIONS(DT, T)                                                         \
    GF_FSUM(sum, DT, T, FIN_SUM)                                                           \
    GF_FSUM(mean, DT, T, FIN_MEAN)                                                         \
    GF_FOLD(prod, DT, T, T, (T)1, OP_MUL, LD_SAME, ST_SAME)                                \
    GF_FOLD(amax, DT, T, T, (T)-INFINITY, FMAXN, LD_SAME, ST_SAME)                         \
    GF_FOLD(amin, DT, T, T, (T)INFINITY, FMINN, LD_SAME, ST_SAME)
#define GF_INT_REDUCTIONS(DT, T)                                                           \
    GF_FOLD(sum, DT, T, ulong, 0, OP_UADD, LD_U, ST_U_##DT)                                \
    GF_FOLD(prod, DT, T, ulong, 1, OP_UMUL, LD_U, ST_U_##DT)                               \
    GF_FOLD(amax, DT, T, long, LONG_MIN, OP_LMAX, LD_L, ST_L_##DT)                         \
    GF_FOLD(amin, DT, T, long, LONG_MAX, OP_LMIN, LD_L, ST_L_##DT)

GF_FLOAT_REDUCTIONS(f32, float)
GF_INT_REDUCTIONS(i32, int)
GF_INT_REDUCTIONS(i64, long)
GF_FOLD(amax, b8, uchar, long, 0, OP_LMAX, LD_B, ST_B)
GF_FOLD(amin, b8, uchar, long, 1, OP_LMIN, LD_B, ST_B)
#if GF_HAS_FP64
GF_FLOAT_REDUCTIONS(f64, double)
#endif

/* ---------------------------------------------------------------- var, logsumexp */
/* var: the mean, then the squared deviations from it and their plain sum,
 * whose square corrects the rounding error of the mean (corrected two-pass).
 * The divisor is n - correction, clamped at 0. */
#define GF_VAR_FINISH(DT, T)                                                               \
    T gf_var_finish_##DT(T sq, T dsum, T n, T corr) {                                      \
        T m2 = sq - dsum * dsum / n;                                                       \
        if (m2 < 0) m2 = 0;                                                                \
        T div = n - corr;                                                                  \
        if (div < 0) div = 0;                                                              \
        return n == 0 ? (T)NAN : m2 / div;                                                 \
    }
#define GF_VAR(DT, T)                                                                      \
    GF_VAR_FINISH(DT, T)                                                                   \
    __kernel void reduce_var_##DT##_i(GF_RED_PARAMS(GF_SLOT(T)), T corr) {                          \
        long o = get_global_id(0);                                                         \
        if (o >= nout) return;                                                             \
        GF_RED_OUT(o)                                                                      \
        T s = 0, c = 0, n = (T)nline;                                                      \
        for (long j = 0; j < nline; j++) {                                                 \
            T v = GF_X(j);                                                                 \
            KADD(T, s, c, v);                                                                 \
        }                                                                                  \
        T mean = KVAL(s, c) / n;                                                           \
        T sq = 0, sqc = 0, dv = 0, dvc = 0;                                                \
        for (long j = 0; j < nline; j++) {                                                 \
            T d = GF_X(j) - mean, d2 = d * d;                                              \
            KADD(T, sq, sqc, d2);                                                             \
            KADD(T, dv, dvc, d);                                                              \
        }                                                                                  \
        y[yb_] = GF_ST(gf_var_finish_##DT(KVAL(sq, sqc), KVAL(dv, dvc), n, corr));                \
    }                                                                                      \
    __kernel void reduce_var_##DT##_g(GF_RED_PARAMS(GF_SLOT(T)), T corr) {                          \
        __local T la[GF_RG], lb[GF_RG], lc[GF_RG], ld[GF_RG];                              \
        GF_GROUP_BEGIN(T)                                                                  \
        T n = (T)nline, s = 0, c = 0;                                                      \
        for (long j = l_; j < nline; j += GF_RG) {                                         \
            T v = GF_X(j);                                                                 \
            KADD(T, s, c, v);                                                                 \
        }                                                                                  \
        la[l_] = s;                                                                        \
        lb[l_] = c;                                                                        \
        GF_TREE({                                                                          \
            T a = la[l_], ca = lb[l_], b = la[l_ + h_];                                    \
            KADD(T, a, ca, b);                                                                \
            la[l_] = a;                                                                    \
            lb[l_] = ca + lb[l_ + h_];                                                     \
        })                                                                                 \
        T mean = KVAL(la[0], lb[0]) / n;                                                   \
        barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        T sq = 0, sqc = 0, dv = 0, dvc = 0;                                                \
        for (long j = l_; j < nline; j += GF_RG) {                                         \
            T d = GF_X(j) - mean, d2 = d * d;                                              \
            KADD(T, sq, sqc, d2);                                                             \
            KADD(T, dv, dvc, d);                                                              \
        }                                                                                  \
        la[l_] = sq;                                                                       \
        lb[l_] = sqc;                                                                      \
        lc[l_] = dv;                                                                       \
        ld[l_] = dvc;                                                                      \
        GF_TREE({                                                                          \
            T a = la[l_], ca = lb[l_], b = la[l_ + h_];                                    \
            KADD(T, a, ca, b);                                                                \
            la[l_] = a;                                                                    \
            lb[l_] = ca + lb[l_ + h_];                                                     \
            T e = lc[l_], ce = ld[l_], f = lc[l_ + h_];                                    \
            KADD(T, e, ce, f);                                                                \
            lc[l_] = e;                                                                    \
            ld[l_] = ce + ld[l_ + h_];                                                     \
        })                                                                                 \
        if (l_ == 0)                                                                       \
            y[yb_] = GF_ST(gf_var_finish_##DT(KVAL(la[0], lb[0]), KVAL(lc[0], ld[0]), n, corr));  \
    }

/* logsumexp = m + log(sum(exp(x - m))), m the max: no term overflows. A NaN
 * or infinite max is the answer itself (n = 0 gives -inf). */
#define GF_LSE(DT, T)                                                                      \
    __kernel void reduce_logsumexp_##DT##_i(GF_RED_PARAMS(GF_SLOT(T))) {                            \
        long o = get_global_id(0);                                                         \
        if (o >= nout) return;                                                             \
        GF_RED_OUT(o)                                                                      \
        T m = (T)-INFINITY;                                                                \
        for (long j = 0; j < nline; j++) m = FMAXN(m, GF_X(j));                            \
        if (isnan(m) || isinf(m)) {                                                        \
            y[yb_] = GF_ST(m);                                                                    \
            return;                                                                        \
        }                                                                                  \
        T s = 0, c = 0;                                                                    \
        for (long j = 0; j < nline; j++) {                                                 \
            T v = exp(GF_X(j) - m);                                                        \
            KADD(T, s, c, v);                                                                 \
        }                                                                                  \
        y[yb_] = GF_ST(m + log(KVAL(s, c)));                                                      \
    }                                                                                      \
    __kernel void reduce_logsumexp_##DT##_g(GF_RED_PARAMS(GF_SLOT(T))) {                            \
        __local T la[GF_RG], lb[GF_RG];                                                    \
        GF_GROUP_BEGIN(T)                                                                  \
        T m = (T)-INFINITY;                                                                \
        for (long j = l_; j < nline; j += GF_RG) m = FMAXN(m, GF_X(j));                    \
        la[l_] = m;                                                                        \
        GF_TREE(la[l_] = FMAXN(la[l_], la[l_ + h_]);)                                      \
        m = la[0];                                                                         \
        barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        /* No early return: every item must reach every barrier. */                        \
        bool special = isnan(m) || isinf(m);                                               \
        T s = 0, c = 0;                                                                    \
        for (long j = l_; j < nline && !special; j += GF_RG) {                             \
            T v = exp(GF_X(j) - m);                                                        \
            KADD(T, s, c, v);                                                              \
        }                                                                                  \
        la[l_] = s;                                                                        \
        lb[l_] = c;                                                                        \
        GF_TREE({                                                                          \
            T a = la[l_], ca = lb[l_], b = la[l_ + h_];                                    \
            KADD(T, a, ca, b);                                                                \
            la[l_] = a;                                                                    \
            lb[l_] = ca + lb[l_ + h_];                                                     \
        })                                                                                 \
        if (l_ == 0) y[yb_] = GF_ST(special ? m : m + log(KVAL(la[0], lb[0])));                   \
    }

GF_VAR(f32, float)
GF_LSE(f32, float)
#if GF_HAS_FP64
GF_VAR(f64, double)
GF_LSE(f64, double)
#endif

/* ---------------------------------------------------------------- max_dim, min_dim */
/* BETTER(v, j, b, bj): v at index j beats the best b at index bj. Indices
 * only grow within an item, so ties keep the earlier one; across items the
 * index decides. A NaN beats everything but an earlier NaN. */
#define GF_BETTER_F(v, j, b, bj, CMP)                                                      \
    ((bj) < 0 ||                                                                           \
     (isnan(v) ? (!isnan(b) || (j) < (bj))                                                 \
               : (!isnan(b) && ((v)CMP(b) || ((v) == (b) && (j) < (bj))))))
#define GF_BETTER_I(v, j, b, bj, CMP) ((bj) < 0 || (v)CMP(b) || ((v) == (b) && (j) < (bj)))

#define GF_ARGX(NAME, DT, T, CMP, BETTER)                                                  \
    __kernel void reduce_##NAME##_##DT##_i(GF_RED_PARAMS(GF_SLOT(T)), __global long *ind, long oi,  \
                                           long8 kis) {                                    \
        long o = get_global_id(0);                                                         \
        if (o >= nout) return;                                                             \
        GF_RED_OUT(o)                                                                      \
        T b = 0;                                                                           \
        long bj = -1;                                                                      \
        for (long j = 0; j < nline; j++) {                                                 \
            T v = GF_X(j);                                                                 \
            if (BETTER(v, j, b, bj, CMP)) {                                                \
                b = v;                                                                     \
                bj = j;                                                                    \
            }                                                                              \
        }                                                                                  \
        y[yb_] = GF_ST(b);                                                                        \
        ind[oi + gf_line_offset(o, ksz, kis, krank)] = bj;                                 \
    }                                                                                      \
    __kernel void reduce_##NAME##_##DT##_g(GF_RED_PARAMS(GF_SLOT(T)), __global long *ind, long oi,  \
                                           long8 kis) {                                    \
        __local T lv[GF_RG];                                                               \
        __local long lj[GF_RG];                                                            \
        GF_GROUP_BEGIN(T)                                                                  \
        T b = 0;                                                                           \
        long bj = -1;                                                                      \
        for (long j = l_; j < nline; j += GF_RG) {                                         \
            T v = GF_X(j);                                                                 \
            if (BETTER(v, j, b, bj, CMP)) {                                                \
                b = v;                                                                     \
                bj = j;                                                                    \
            }                                                                              \
        }                                                                                  \
        lv[l_] = b;                                                                        \
        lj[l_] = bj;                                                                       \
        GF_TREE({                                                                          \
            T v = lv[l_ + h_];                                                             \
            long j = lj[l_ + h_];                                                          \
            if (j >= 0 && BETTER(v, j, lv[l_], lj[l_], CMP)) {                             \
                lv[l_] = v;                                                                \
                lj[l_] = j;                                                                \
            }                                                                              \
        })                                                                                 \
        if (l_ == 0) {                                                                     \
            y[yb_] = GF_ST(lv[0]);                                                                \
            ind[oi + gf_line_offset(o_, ksz, kis, krank)] = lj[0];                         \
        }                                                                                  \
    }

GF_ARGX(max_dim, f32, float, >, GF_BETTER_F)
GF_ARGX(min_dim, f32, float, <, GF_BETTER_F)
GF_ARGX(max_dim, i32, int, >, GF_BETTER_I)
GF_ARGX(min_dim, i32, int, <, GF_BETTER_I)
GF_ARGX(max_dim, i64, long, >, GF_BETTER_I)
GF_ARGX(min_dim, i64, long, <, GF_BETTER_I)
#if GF_HAS_FP64
GF_ARGX(max_dim, f64, double, >, GF_BETTER_F)
GF_ARGX(min_dim, f64, double, <, GF_BETTER_F)
#endif

/* ---------------------------------------------------------------- long lines */
/* The first pass of a long contiguous line (SUM, MEAN, PROD, AMAX, AMIN in
 * f32 / f64): the line of each output is cut into P chunks of Q elements,
 * one work-item per chunk, and each writes one partial to part[o * P + p];
 * a second pass reduces the partials. Several work-groups share a line, and
 * the loop is vectorized by hand (VW lanes): a CPU driver vectorizes only
 * loop-free kernels itself. Sums keep Neumaier compensation in every lane.
 * MEAN's partials are sums scaled by 1/n, so the second pass is a SUM. */
#define GF_VSUM_STEP(VT, s, c, v)                                                          \
    {                                                                                      \
        VT t_ = (s) + (v);                                                                 \
        (c) += select(((v) - t_) + (s), ((s) - t_) + (v), fabs(s) >= fabs(v));            \
        (s) = t_;                                                                          \
    }
#define GF_VMAXN(a, b) select(fmax((a), (b)), (a) + (b), isnan(a) | isnan(b))
#define GF_VMINN(a, b) select(fmin((a), (b)), (a) + (b), isnan(a) | isnan(b))

#define GF_PART_ARGS(T)                                                                    \
    __global const T *x, long ox, long8 ksz, long8 kxs, int krank, long nout, long len,    \
        long q, long p_count, __global T *part, long opart, T scale
#define GF_PART_BEGIN(T)                                                                   \
    long j_ = get_global_id(0);                                                            \
    if (j_ >= nout * p_count) return;                                                      \
    long o_ = j_ / p_count, p_ = j_ % p_count;                                             \
    long lo_ = p_ * q, hi_ = min(lo_ + q, len);                                            \
    const __global T *xl_ = x + ox + gf_line_offset(o_, ksz, kxs, krank);

#define GF_PART_SUM(NAME, DT, T, VT, VW, VLOAD)                                            \
    __kernel void reduce_part_##NAME##_##DT(GF_PART_ARGS(T)) {                             \
        GF_PART_BEGIN(T)                                                                   \
        VT vs = 0, vc = 0;                                                                 \
        long k = lo_;                                                                      \
        for (; k + VW <= hi_; k += VW) {                                                   \
            VT v = VLOAD(0, xl_ + k);                                                      \
            GF_VSUM_STEP(VT, vs, vc, v);                                                   \
        }                                                                                  \
        T s = 0, c = 0, ls[VW], lc[VW];                                                    \
        for (; k < hi_; k++) KADD(T, s, c, xl_[k]);                                        \
        vstore##VW(vs, 0, ls);                                                             \
        vstore##VW(vc, 0, lc);                                                             \
        for (int i = 0; i < VW; i++) {                                                     \
            KADD(T, s, c, ls[i]);                                                          \
            c += lc[i];                                                                    \
        }                                                                                  \
        part[opart + j_] = KVAL(s, c) * scale;                                             \
    }
#define GF_PART_FOLD(NAME, DT, T, VT, VW, VLOAD, INIT, VOP, SOP)                           \
    __kernel void reduce_part_##NAME##_##DT(GF_PART_ARGS(T)) {                             \
        GF_PART_BEGIN(T)                                                                   \
        VT va = INIT;                                                                      \
        long k = lo_;                                                                      \
        for (; k + VW <= hi_; k += VW) va = VOP(va, VLOAD(0, xl_ + k));                    \
        T a = INIT, la[VW];                                                                \
        for (; k < hi_; k++) a = SOP(a, xl_[k]);                                           \
        vstore##VW(va, 0, la);                                                             \
        for (int i = 0; i < VW; i++) a = SOP(a, la[i]);                                    \
        part[opart + j_] = a;                                                              \
    }
#define GF_VMUL(a, b) ((a) * (b))
#define GF_PARTS(DT, T, VT, VW, VLOAD)                                                     \
    GF_PART_SUM(sum, DT, T, VT, VW, VLOAD)                                                 \
    GF_PART_FOLD(prod, DT, T, VT, VW, VLOAD, (T)1, GF_VMUL, OP_MUL)                        \
    GF_PART_FOLD(amax, DT, T, VT, VW, VLOAD, (T)-INFINITY, GF_VMAXN, FMAXN)                \
    GF_PART_FOLD(amin, DT, T, VT, VW, VLOAD, (T)INFINITY, GF_VMINN, FMINN)
GF_PARTS(f32, float, float16, 16, vload16)
#if GF_HAS_FP64
GF_PARTS(f64, double, double8, 8, vload8)
#endif

/* Column sums (SUM, MEAN in f32 / f64): the outputs are contiguous in x (one
 * kept dim of stride 1) and each line walks the reduced dims, as when a
 * gradient is summed over the batch. Each work-item takes VW neighbouring
 * outputs as the lanes of one vector; the last, partial block goes scalar. */
#define GF_COLS(DT, T, VT, VW, VLOAD)                                                      \
    __kernel void reduce_cols_sum_##DT(__global const T *x, long ox, long nout,            \
                                       __global T *y, long oy, long ys, long8 rsz,        \
                                       long8 rxs, int rrank, long nline, T scale) {        \
        long o0 = get_global_id(0) * VW;                                                   \
        if (o0 >= nout) return;                                                            \
        const __global T *xb = x + ox + o0;                                                \
        if (o0 + VW <= nout) {                                                             \
            VT vs = 0, vc = 0;                                                             \
            for (long j = 0; j < nline; j++) {                                             \
                VT v = VLOAD(0, xb + gf_line_offset(j, rsz, rxs, rrank));                  \
                GF_VSUM_STEP(VT, vs, vc, v);                                               \
            }                                                                              \
            T ls[VW], lc[VW];                                                              \
            vstore##VW(vs, 0, ls);                                                         \
            vstore##VW(vc, 0, lc);                                                         \
            for (int i = 0; i < VW; i++) y[oy + (o0 + i) * ys] = KVAL(ls[i], lc[i]) * scale; \
            return;                                                                        \
        }                                                                                  \
        for (long o = o0; o < nout; o++) {                                                 \
            T s = 0, c = 0;                                                                \
            for (long j = 0; j < nline; j++) KADD(T, s, c, xb[o - o0 + gf_line_offset(j, rsz, rxs, rrank)]); \
            y[oy + o * ys] = KVAL(s, c) * scale;                                           \
        }                                                                                  \
    }
GF_COLS(f32, float, float16, 16, vload16)
#if GF_HAS_FP64
GF_COLS(f64, double, double8, 8, vload8)
#endif

/* ---------------------------------------------------------------- f16, bf16 */
/* The float reductions over ushort storage, in f32, one rounding on store
 * (the long-line and column forms above are f32 / f64 only). */
#undef GF_SLOT
#undef GF_LD
#undef GF_ST
#define GF_SLOT(T) ushort
#define GF_HALF_REDUCTIONS(DT)                                                             \
    GF_FLOAT_REDUCTIONS(DT, float)                                                         \
    GF_VAR(DT, float)                                                                      \
    GF_LSE(DT, float)                                                                      \
    GF_ARGX(max_dim, DT, float, >, GF_BETTER_F)                                            \
    GF_ARGX(min_dim, DT, float, <, GF_BETTER_F)
#define GF_LD(v) gf_h2f(v)
#define GF_ST(v) gf_f2h(v)
GF_HALF_REDUCTIONS(f16)
#undef GF_LD
#undef GF_ST
#define GF_LD(v) gf_b2f(v)
#define GF_ST(v) gf_f2b(v)
GF_HALF_REDUCTIONS(bf16)
