/* SPDX-License-Identifier: BSD-3-Clause */
/* conv.cl — CONV2D (NCHW) and its two gradient kernels, in gather form:
 * each work-item computes one output element as one sum (in the dtype, with
 * mad), so every element is written once and nothing needs atomics.
 *
 * Geometry (g0, g1): g0 = (N, Ci, H, W, Co, kh, kw, Ho), g1 = (Wo, Ci/groups,
 * Co/groups, sh, sw, ph, pw, dh), and dw; tensors carry their four strides.
 * Input row ih = oh*sh - ph + i*dh feeds output row oh through kernel row i. */
#define GF_CONV_GEOM                                                                       \
    long N = g0.s0, Ci = g0.s1, H = g0.s2, W = g0.s3, Co = g0.s4, KH = g0.s5, KW = g0.s6,  \
         Ho = g0.s7, Wo = g1.s0, CIG = g1.s1, COG = g1.s2, SH = g1.s3, SW = g1.s4,         \
         PH = g1.s5, PW = g1.s6, DH = g1.s7, DW = dw;
#define GF_AT4(s, a, b, c, d) ((a) * (s).s0 + (b) * (s).s1 + (c) * (s).s2 + (d) * (s).s3)

#define GF_CONV(DT, T)                                                                     \
    __kernel void conv2d_##DT(__global const T *x, long ox, long4 xs, __global const T *w, \
                              long owt, long4 wst, __global const T *b, long ob, long bs,  \
                              int has_b, __global T *y, long oy, long4 ys, long8 g0,       \
                              long8 g1, long dw) {                                         \
        GF_CONV_GEOM                                                                       \
        long j = get_global_id(0);                                                         \
        if (j >= N * Co * Ho * Wo) return;                                                 \
        long ow = j % Wo, oh = (j / Wo) % Ho, co = (j / (Wo * Ho)) % Co, n = j / (Wo * Ho * Co); \
        long ci0 = (co / COG) * CIG;                                                       \
        T acc = has_b ? b[ob + co * bs] : (T)0;                                            \
        for (long c = 0; c < CIG; c++)                                                     \
            for (long i = 0; i < KH; i++) {                                                \
                long ih = oh * SH - PH + i * DH;                                           \
                if (ih < 0 || ih >= H) continue;                                           \
                for (long jj = 0; jj < KW; jj++) {                                         \
                    long iw = ow * SW - PW + jj * DW;                                      \
                    if (iw < 0 || iw >= W) continue;                                       \
                    acc = mad(x[ox + GF_AT4(xs, n, ci0 + c, ih, iw)],                      \
                              w[owt + GF_AT4(wst, co, c, i, jj)], acc);                    \
                }                                                                          \
            }                                                                              \
        y[oy + GF_AT4(ys, n, co, oh, ow)] = acc;                                           \
    }                                                                                      \
    /* grad_x[n, ci, ih, iw]: the (co, i, j) whose tap lands on (ih, iw). */               \
    __kernel void conv2d_backward_input_##DT(__global const T *gy, long ogy, long4 gys,    \
                                             __global const T *w, long owt, long4 wst,     \
                                             __global T *gx, long ogx, long4 gxs, long8 g0, \
                                             long8 g1, long dw) {                          \
        GF_CONV_GEOM                                                                       \
        long j = get_global_id(0);                                                         \
        if (j >= N * Ci * H * W) return;                                                   \
        long iw = j % W, ih = (j / W) % H, ci = (j / (W * H)) % Ci, n = j / (W * H * Ci);  \
        long grp = ci / CIG, c = ci % CIG;                                                 \
        T acc = 0;                                                                         \
        for (long co = grp * COG; co < (grp + 1) * COG; co++)                              \
            for (long i = 0; i < KH; i++) {                                                \
                long th = ih + PH - i * DH;                                                \
                if (th < 0 || th % SH != 0 || th / SH >= Ho) continue;                     \
                long oh = th / SH;                                                         \
                for (long jj = 0; jj < KW; jj++) {                                         \
                    long tw = iw + PW - jj * DW;                                           \
                    if (tw < 0 || tw % SW != 0 || tw / SW >= Wo) continue;                 \
                    acc = mad(gy[ogy + GF_AT4(gys, n, co, oh, tw / SW)],                   \
                              w[owt + GF_AT4(wst, co, c, i, jj)], acc);                    \
                }                                                                          \
            }                                                                              \
        gx[ogx + GF_AT4(gxs, n, ci, ih, iw)] = acc;                                        \
    }                                                                                      \
    /* grad_w[co, c, i, j]: over n, oh, ow with the tap inside the input. */               \
    __kernel void conv2d_backward_weight_##DT(__global const T *gy, long ogy, long4 gys,   \
                                              __global const T *x, long ox, long4 xs,      \
                                              __global T *gw, long ogw, long4 gws,         \
                                              long8 g0, long8 g1, long dw) {               \
        GF_CONV_GEOM                                                                       \
        long j = get_global_id(0);                                                         \
        if (j >= Co * CIG * KH * KW) return;                                               \
        long jj = j % KW, i = (j / KW) % KH, c = (j / (KW * KH)) % CIG,                    \
             co = j / (KW * KH * CIG);                                                     \
        long ci0 = (co / COG) * CIG;                                                       \
        T acc = 0;                                                                         \
        for (long n = 0; n < N; n++)                                                       \
            for (long oh = 0; oh < Ho; oh++) {                                             \
                long ih = oh * SH - PH + i * DH;                                           \
                if (ih < 0 || ih >= H) continue;                                           \
                for (long ow = 0; ow < Wo; ow++) {                                         \
                    long iw = ow * SW - PW + jj * DW;                                      \
                    if (iw < 0 || iw >= W) continue;                                       \
                    acc = mad(gy[ogy + GF_AT4(gys, n, co, oh, ow)],                        \
                              x[ox + GF_AT4(xs, n, ci0 + c, ih, iw)], acc);                \
                }                                                                          \
            }                                                                              \
        gw[ogw + GF_AT4(gws, co, c, i, jj)] = acc;                                         \
    }

/* The GEMM form (ocl_conv_gemm.c): im2col copies the taps of a tile of
 * images and output positions into a matrix the plugin's matmul multiplies;
 * col2im gathers the input gradient back from such a matrix.
 *
 * A tile is images [n0, n0 + nb) and output positions [p0, p0 + np) of the
 * Ho x Wo plane (p = oh * Wo + ow). Element (n, ci, i, jj, q) of a tile, q the
 * position within it, lands at col[ocol + n*s_n + grp*s_g + row*s_row +
 * q*s_q] with grp = ci / CIG and row = (ci % CIG) * KH*KW + i * KW + jj, in
 * the layout [nb, groups, K, np] (s_row = np, s_q = 1). t = (n0, p0, np,
 * s_n, s_g, s_row, s_q, nb). Taps in the padding are 0. */
#define GF_CONV_TILE                                                                       \
    long N0 = t.s0, P0 = t.s1, NP = t.s2, S_N = t.s3, S_G = t.s4, S_ROW = t.s5, S_Q = t.s6, \
         NB = t.s7, KK = KH * KW;

#define GF_CONV_GEMM(DT, T)                                                                \
    /* One item per (tap row (n, ci, i, jj), RPI output rows of the tile):    \
     * per row, the positions of the row in the tile in three runs (left      \
     * padding, inside, right padding), so the inner loops have no division;  \
     * the divisions that place the tap row are paid once for RPI rows. */    \
    __kernel void conv_im2col_##DT(__global const T *x, long ox, long4 xs, __global T *col, \
                                   long ocol, long8 g0, long8 g1, long dw, long8 t,        \
                                   long rpi) {                                             \
        GF_CONV_GEOM                                                                       \
        GF_CONV_TILE                                                                       \
        long oh_first = P0 / Wo, oh_last = (P0 + NP - 1) / Wo;                             \
        long oh0 = oh_first + get_global_id(0) * rpi, r = get_global_id(1);                \
        if (oh0 > oh_last || r >= NB * Ci * KK) return;                                    \
        long oh1 = min(oh0 + rpi - 1, oh_last);                                            \
        long n = r / (Ci * KK), rem = r - n * (Ci * KK);                                   \
        long ci = rem / KK, kk = rem - ci * KK;                                            \
        long i = kk / KW, jj = kk - i * KW;                                                \
        long grp = ci / CIG, row = (ci - grp * CIG) * KK + kk;                             \
        long off = jj * DW - PW, xw = xs.s3;                                               \
        /* Inside: 0 <= ow * SW + off < W. */                                              \
        long a0 = -off <= 0 ? 0 : (-off + SW - 1) / SW;                                    \
        long b0 = W - off <= 0 ? 0 : (W - off + SW - 1) / SW;                              \
        long cr = ocol + n * S_N + grp * S_G + row * S_ROW;                                \
        long xc = ox + GF_AT4(xs, N0 + n, ci, 0, 0) + off * xw;                            \
        for (long oh = oh0; oh <= oh1; oh++) {                                             \
            long lo = oh == oh_first ? P0 - oh * Wo : 0;                                   \
            long hi = oh == oh_last ? P0 + NP - oh * Wo : Wo;                              \
            long ih = oh * SH - PH + i * DH;                                               \
            long a = a0, b = b0;                                                           \
            if (ih < 0 || ih >= H) a = b = lo;                                             \
            a = clamp(a, lo, hi);                                                          \
            b = clamp(b, a, hi);                                                           \
            long c0 = cr + (oh * Wo - P0) * S_Q;                                           \
            long x0 = xc + clamp(ih, 0L, H - 1) * xs.s2;                                   \
            for (long ow = lo; ow < a; ow++) col[c0 + ow * S_Q] = 0;                       \
            for (long ow = a; ow < b; ow++) col[c0 + ow * S_Q] = x[x0 + ow * SW * xw];     \
            for (long ow = b; ow < hi; ow++) col[c0 + ow * S_Q] = 0;                       \
        }                                                                                  \
    }                                                                                      \
    /* grad_y's tile transposed, gt[n, q, co] = gy[n0 + n, co, p0 + q] (the      \
     * right operand of the weight gradient); one item per (output row of the \
     * tile, (n, co)). */                                                                  \
    __kernel void conv_gy_t_##DT(__global const T *gy, long ogy, long4 gys, __global T *gt, \
                                 long ogt, long8 g0, long8 g1, long dw, long8 t) {         \
        GF_CONV_GEOM                                                                       \
        GF_CONV_TILE                                                                       \
        long oh_first = P0 / Wo, oh_last = (P0 + NP - 1) / Wo;                             \
        long oh = oh_first + get_global_id(0), r = get_global_id(1);                       \
        if (oh > oh_last || r >= NB * Co) return;                                          \
        long n = r / Co, co = r - n * Co;                                                  \
        long lo = oh == oh_first ? P0 - oh * Wo : 0;                                       \
        long hi = oh == oh_last ? P0 + NP - oh * Wo : Wo;                                  \
        long src = ogy + GF_AT4(gys, N0 + n, co, oh, 0), dst = ogt + (n * NP + oh * Wo - P0) * Co + co; \
        for (long ow = lo; ow < hi; ow++) gt[dst + ow * Co] = gy[src + ow * gys.s3];       \
    }                                                                                      \
    /* grad_x[n0 + n, ci, ih, :] (+)= the taps of the tile that read them, from a \
     * [nb, groups, K, np] matrix; one item per input row. acc_in adds to what  \
     * grad_x holds (the tiles of positions after an image's first). */                    \
    __kernel void conv_col2im_##DT(__global const T *col, long ocol, __global T *gx,       \
                                   long ogx, long4 gxs, long8 g0, long8 g1, long dw,       \
                                   long8 t, int acc_in) {                                  \
        GF_CONV_GEOM                                                                       \
        GF_CONV_TILE                                                                       \
        long ih = get_global_id(0), r = get_global_id(1);                                  \
        if (ih >= H || r >= NB * Ci) return;                                               \
        long n = r / Ci, ci = r - n * Ci;                                                  \
        long cn = ocol + n * S_N + ci * KK * NP, g = ogx + GF_AT4(gxs, N0 + n, ci, ih, 0); \
        for (long iw = 0; iw < W; iw++) {                                                  \
            T acc = 0;                                                                     \
            for (long i = 0; i < KH; i++) {                                                \
                long th = ih + PH - i * DH;                                                \
                if (th < 0 || th % SH != 0 || th / SH >= Ho) continue;                     \
                long prow = (th / SH) * Wo - P0;                                           \
                for (long jj = 0; jj < KW; jj++) {                                         \
                    long tw = iw + PW - jj * DW;                                           \
                    if (tw < 0 || (SW != 1 && tw % SW != 0) || tw / SW >= Wo) continue;    \
                    long q = prow + tw / SW;                                               \
                    if (q < 0 || q >= NP) continue;                                        \
                    acc += col[cn + (i * KW + jj) * NP + q];                               \
                }                                                                          \
            }                                                                              \
            long at = g + iw * gxs.s3;                                                     \
            gx[at] = acc_in ? gx[at] + acc : acc;                                          \
        }                                                                                  \
    }                                                                                      \
    /* y[n, co, oh, ow] += b[co]; dim 0 walks the plane, dim 1 (n, co). */                 \
    __kernel void conv_bias_##DT(__global T *y, long oy, long4 ys, __global const T *b,    \
                                 long ob, long bs, long4 sz) {                             \
        long j = get_global_id(0), r = get_global_id(1);                                   \
        if (j >= sz.s2 * sz.s3 || r >= sz.s0 * sz.s1) return;                              \
        long h_ = j / sz.s3, w_ = j - h_ * sz.s3, n = r / sz.s1, c = r - n * sz.s1;         \
        long at = oy + GF_AT4(ys, n, c, h_, w_);                                           \
        y[at] = y[at] + b[ob + c * bs];                                                    \
    }                                                                                      \
    /* gw[co, c, i, jj] (+)= sum over s < parts of part[s, grp, k, co % cog] with   \
     * k = (c * kh + i) * kw + jj: the partial products, one per image,       \
     * contiguous [parts, groups, K, cog]. sz = (Co, Ci/groups, kh, kw, cog). */           \
    __kernel void conv_wsum_##DT(__global T *gw, long ogw, long4 gws, __global const T *part, \
                                 long opart, long parts, int acc_in, long4 sz, long cog) { \
        long j = get_global_id(0), co = get_global_id(1);                                  \
        long K = sz.s1 * sz.s2 * sz.s3, all = sz.s0 * K;                                   \
        if (j >= K || co >= sz.s0) return;                                                 \
        long c = j / (sz.s2 * sz.s3), i = (j / sz.s3) % sz.s2, jj = j % sz.s3;              \
        long grp = co / cog, e = opart + (grp * K + j) * cog + (co - grp * cog);           \
        long at = ogw + GF_AT4(gws, co, c, i, jj);                                         \
        T acc = acc_in ? gw[at] : (T)0;                                                    \
        for (long s = 0; s < parts; s++) acc += part[e + s * all];                         \
        gw[at] = acc;                                                                      \
    }

GF_CONV(f32, float)
GF_CONV_GEMM(f32, float)
#if GF_HAS_FP64
GF_CONV(f64, double)
GF_CONV_GEMM(f64, double)
#endif

/* Implicit GEMM for CPU devices (ocl_conv_gemm.c): the matmul_vec kernel's
 * inner loop (kernels/matmul.cl) with the right operand read from x in
 * place instead of from an im2col matrix. An item computes GF_CRB output
 * channels of one group by VW consecutive outputs of one row (n, oh); per
 * tap (c, i, jj), one vector of x (a vload where the taps are unit-strided
 * and inside the buffer, lanes outside the row masked to 0) and GF_CRB
 * vector multiply-adds (the loops over the GF_CRB channels unrolled, so
 * that a CPU driver keeps the accumulators in registers). x_elems is the length of x's buffer in elements. The input
 * gradient at stride 1 and groups 1 is this kernel on grad_y with the
 * weight's two channel dims swapped and its taps reversed (negative
 * strides, set by the host). */
#define GF_CRB 8
#define GF_CONV_IGEMM(DT, T, VW, VT, VLOAD, VSTORE, MT, IOTA)                              \
    __kernel void conv2d_igemm_##DT(__global const T *x, long ox, long4 xs, long x_elems,  \
                                    __global const T *w, long owt, long4 wst,              \
                                    __global const T *b, long ob, long bs, int has_b,      \
                                    __global T *y, long oy, long4 ys, long8 g0, long8 g1,  \
                                    long dw) {                                             \
        GF_CONV_GEOM                                                                       \
        long nblk = (COG + GF_CRB - 1) / GF_CRB;                                           \
        long ow0 = get_global_id(0) * VW, r1 = get_global_id(1), r2 = get_global_id(2);     \
        if (ow0 >= Wo || r1 >= N * Ho || r2 >= (Co / COG) * nblk) return;                  \
        long n = r1 / Ho, oh = r1 - n * Ho, grp = r2 / nblk;                               \
        long cl0 = (r2 - grp * nblk) * GF_CRB, co0 = grp * COG + cl0;                      \
        int rows = (int)min((long)GF_CRB, COG - cl0);                                      \
        bool unit = SW == 1 && xs.s3 == 1;                                                 \
        VT acc[GF_CRB];                                                                    \
        _Pragma("unroll") for (int r = 0; r < GF_CRB; r++) acc[r] = (VT)0;                 \
        long wr[GF_CRB];                                                                   \
        _Pragma("unroll") for (int r = 0; r < GF_CRB; r++)                                 \
            wr[r] = owt + (co0 + min(r, rows - 1)) * wst.s0;                               \
        for (long c = 0; c < CIG; c++) {                                                   \
            long xc = ox + n * xs.s0 + (grp * CIG + c) * xs.s1;                            \
            for (long i = 0; i < KH; i++) {                                                \
                long ih = oh * SH - PH + i * DH;                                           \
                if (ih < 0 || ih >= H) continue;                                           \
                long xrow = xc + ih * xs.s2, wci = c * wst.s1 + i * wst.s2;                \
                for (long jj = 0; jj < KW; jj++) {                                         \
                    long iw0 = ow0 * SW - PW + jj * DW;                                    \
                    VT xv;                                                                 \
                    if (unit && iw0 >= 0 && iw0 + VW <= W) {                               \
                        xv = VLOAD(0, x + xrow + iw0);                                     \
                    } else if (unit && xrow + iw0 >= 0 && xrow + iw0 + VW <= x_elems) {    \
                        MT lane = IOTA + (MT)((int)iw0);                                   \
                        xv = select((VT)0, VLOAD(0, x + xrow + iw0),                       \
                                    lane >= (MT)0 && lane < (MT)((int)W));                 \
                    } else {                                                               \
                        T part[VW];                                                        \
                        for (int l = 0; l < VW; l++) {                                     \
                            long iw = iw0 + l * SW;                                        \
                            part[l] = iw >= 0 && iw < W ? x[xrow + iw * xs.s3] : (T)0;     \
                        }                                                                  \
                        xv = VLOAD(0, part);                                               \
                    }                                                                      \
                    long wo_ = wci + jj * wst.s3;                                          \
                    _Pragma("unroll") for (int r = 0; r < GF_CRB; r++)                     \
                        acc[r] = GF_VMAD((VT)(w[wr[r] + wo_]), xv, acc[r]);                \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        bool full = ow0 + VW <= Wo && ys.s3 == 1;                                          \
        _Pragma("unroll") for (int r = 0; r < GF_CRB; r++) {                               \
            if (r >= rows) break;                                                          \
            long co = co0 + r;                                                             \
            VT v = acc[r];                                                                 \
            if (has_b) v += (VT)(b[ob + co * bs]);                                         \
            long at = oy + GF_AT4(ys, n, co, oh, ow0);                                     \
            if (full) {                                                                    \
                VSTORE(v, 0, y + at);                                                      \
            } else {                                                                       \
                T part[VW];                                                                \
                VSTORE(v, 0, part);                                                        \
                for (int l = 0; ow0 + l < Wo && l < VW; l++) y[at + l * ys.s3] = part[l];  \
            }                                                                              \
        }                                                                                  \
    }
GF_CONV_IGEMM(f32, float, 16, float16, vload16, vstore16, int16,
              ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)))
#if GF_HAS_FP64
GF_CONV_IGEMM(f64, double, 8, double8, vload8, vstore8, long8, ((long8)(0, 1, 2, 3, 4, 5, 6, 7)))
#endif
