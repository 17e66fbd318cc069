/* SPDX-License-Identifier: BSD-3-Clause */
/* pool.cl — MAX_POOL2D, AVG_POOL2D (NCHW) and their gradients, with the
 * reference plugin's semantics: padding never wins a max; the first maximum
 * in window order wins, and a NaN always takes over; indices are flat
 * ih * W + iw within the plane, -1 for a window wholly in padding. An average
 * divides by the window clipped to the padded input (count_include_pad) or to
 * the real input; a window with no real element gives 0.
 *
 * Geometry: g = (N, C, H, W, Ho, Wo, kh, kw), h = (sh, sw, ph, pw, dh, dw,
 * ceil_mode, count_include_pad). */
#define GF_POOL_GEOM                                                                       \
    long N = g.s0, C = g.s1, H = g.s2, W = g.s3, Ho = g.s4, Wo = g.s5, KH = g.s6, KW = g.s7, \
         SH = h.s0, SW = h.s1, PH = h.s2, PW = h.s3, DH = h.s4, DW = h.s5, INCL = h.s7;
#define GF_AT4(s, a, b, c, d) ((a) * (s).s0 + (b) * (s).s1 + (c) * (s).s2 + (d) * (s).s3)

/* Output (oh, ow)'s average window, clipped: [h0, h1) x [w0, w1); returns its
 * divisor, 0 when the window holds no real element. */
long gf_avg_window(long8 g, long8 h, long oh, long ow, long *h0, long *h1, long *w0, long *w1) {
    GF_POOL_GEOM
    long hs = oh * SH - PH, ws = ow * SW - PW;
    long he = min(hs + KH, H + PH), we = min(ws + KW, W + PW);
    long padded = (he - hs) * (we - ws);
    hs = max(hs, 0L);
    ws = max(ws, 0L);
    he = min(he, H);
    we = min(we, W);
    if (hs >= he || ws >= we) return 0;
    *h0 = hs;
    *h1 = he;
    *w0 = ws;
    *w1 = we;
    return INCL ? padded : (he - hs) * (we - ws);
}

/* Index checks for max_pool2d_backward: -1 or inside the plane. The kernels
 * below walk rows: an item per (row, (n, c)) plane, looping along the row,
 * so that no division runs per element. */
__kernel void check_pool_index(__global const long *ind, long oi, long4 is, long8 g,
                               __global long *flag) {
    long N = g.s0, C = g.s1, H = g.s2, W = g.s3, Ho = g.s4, Wo = g.s5;
    long oh = get_global_id(0), r = get_global_id(1);
    if (oh >= Ho || r >= N * C) return;
    long n = r / C, c = r - n * C, row = oi + GF_AT4(is, n, c, oh, 0);
    for (long ow = 0; ow < Wo; ow++) {
        long k = ind[row + ow * is.s3];
        if (k < -1 || k >= H * W) {
            flag[1] = k;
            flag[0] = 1;
        }
    }
}

/* max_pool2d (windows other than 2x2 and 3x3) and the backward pass walk
 * rows the same way. */
#define GF_POOL(DT, T)                                                                     \
    __kernel void max_pool2d_##DT(__global const T *x, long ox, long4 xs, __global T *y,   \
                                  long oy, long4 ys, __global long *ind, long oi, long4 is, \
                                  long8 g, long8 h) {                                      \
        GF_POOL_GEOM                                                                       \
        long oh = get_global_id(0), r = get_global_id(1);                                  \
        if (oh >= Ho || r >= N * C) return;                                                \
        long n = r / C, c = r - n * C;                                                     \
        long xp = ox + GF_AT4(xs, n, c, 0, 0), yr = oy + GF_AT4(ys, n, c, oh, 0);          \
        long ir = oi + GF_AT4(is, n, c, oh, 0);                                            \
        for (long ow = 0; ow < Wo; ow++) {                                                 \
            T best = (T)-INFINITY;                                                         \
            long bi = -1;                                                                  \
            for (long i = 0; i < KH; i++) {                                                \
                long ih = oh * SH - PH + i * DH;                                           \
                if (ih < 0 || ih >= H) continue;                                           \
                for (long jj = 0; jj < KW; jj++) {                                         \
                    long iw = ow * SW - PW + jj * DW;                                      \
                    if (iw < 0 || iw >= W) continue;                                       \
                    T v = x[xp + ih * xs.s2 + iw * xs.s3];                                 \
                    if (bi < 0 || v > best || v != v) {                                    \
                        best = v;                                                          \
                        bi = ih * W + iw;                                                  \
                    }                                                                      \
                }                                                                          \
            }                                                                              \
            y[yr + ow * ys.s3] = best;                                                     \
            ind[ir + ow * is.s3] = bi;                                                     \
        }                                                                                  \
    }                                                                                      \
    /* grad_x is zeroed first (pool_zero, rows of the input); each grad_y     \
     * element adds itself at its argmax (rows of the output). */                          \
    __kernel void pool_zero_##DT(__global T *gx, long ogx, long4 gxs, long8 g) {           \
        long N = g.s0, C = g.s1, H = g.s2, W = g.s3;                                       \
        long ih = get_global_id(0), r = get_global_id(1);                                  \
        if (ih >= H || r >= N * C) return;                                                 \
        long n = r / C, c = r - n * C, row = ogx + GF_AT4(gxs, n, c, ih, 0);               \
        for (long iw = 0; iw < W; iw++) gx[row + iw * gxs.s3] = 0;                         \
    }                                                                                      \
    /* Rows [oh0, oh1) of plane r: each gy element added at its index, with an \
     * atomic add where other items write the same plane (atomic). */           \
    void max_pool2d_backward_rows_##DT(__global const T *gy, long ogy, long4 gys,          \
                                       __global const long *ind, long oi, long4 is,        \
                                       __global T *gx, long ogx, long4 gxs, long8 g,       \
                                       long r, long oh0, long oh1, bool atomic) {          \
        long C = g.s1, H = g.s2, W = g.s3, Wo = g.s5;                                      \
        long n = r / C, c = r - n * C;                                                     \
        long xp = ogx + GF_AT4(gxs, n, c, 0, 0);                                           \
        /* a row-major plane: the flat index is the offset */                              \
        bool flat = gxs.s2 == W * gxs.s3;                                                  \
        for (long oh = oh0; oh < oh1; oh++) {                                              \
            long ir = oi + GF_AT4(is, n, c, oh, 0), gr = ogy + GF_AT4(gys, n, c, oh, 0);   \
            for (long ow = 0; ow < Wo; ow++) {                                             \
                long k = ind[ir + ow * is.s3];                                             \
                /* -1: no maximum; past the plane: refused by the check before \
                 * an eager launch, skipped inside a replayed graph (which     \
                 * reads no flag back) */                                      \
                if (k < 0 || k >= H * W) continue;                                         \
                long at = flat ? xp + k * gxs.s3 : xp + (k / W) * gxs.s2 + (k % W) * gxs.s3; \
                T v = gy[gr + ow * gys.s3];                                                \
                if (atomic) gf_atomic_add_##DT(gx + at, v);                                \
                else gx[at] += v;                                                          \
            }                                                                              \
        }                                                                                  \
    }                                                                                      \
    /* An item per row of gy: two rows' windows may share an input element. */            \
    __kernel void max_pool2d_backward_##DT(__global const T *gy, long ogy, long4 gys,      \
                                           __global const long *ind, long oi, long4 is,    \
                                           __global T *gx, long ogx, long4 gxs, long8 g) { \
        long oh = get_global_id(0), r = get_global_id(1);                                  \
        if (oh >= g.s4 || r >= g.s0 * g.s1) return;                                        \
        max_pool2d_backward_rows_##DT(gy, ogy, gys, ind, oi, is, gx, ogx, gxs, g, r, oh,   \
                                      oh + 1, true);                                       \
    }                                                                                      \
    /* An item per plane (CPU devices, ocl_pool.c): indices stay inside their \
     * plane, so nothing else writes it and plain adds do (PoCL's atomic add   \
     * is a compare-and-swap loop, 11% of a small CNN's step). */              \
    __kernel void max_pool2d_backward_plane_##DT(__global const T *gy, long ogy, long4 gys, \
                                                 __global const long *ind, long oi, long4 is, \
                                                 __global T *gx, long ogx, long4 gxs, long8 g) { \
        long r = get_global_id(1);                                                         \
        if (get_global_id(0) > 0 || r >= g.s0 * g.s1) return;                              \
        max_pool2d_backward_rows_##DT(gy, ogy, gys, ind, oi, is, gx, ogx, gxs, g, r, 0, g.s4, \
                                      false);                                              \
    }                                                                                      \
    __kernel void avg_pool2d_##DT(__global const T *x, long ox, long4 xs, __global T *y,   \
                                  long oy, long4 ys, long8 g, long8 h) {                   \
        GF_POOL_GEOM                                                                       \
        long j = get_global_id(0);                                                         \
        if (j >= N * C * Ho * Wo) return;                                                  \
        long ow = j % Wo, oh = (j / Wo) % Ho, c = (j / (Wo * Ho)) % C, n = j / (Wo * Ho * C); \
        long h0 = 0, h1 = 0, w0 = 0, w1 = 0;                                               \
        long div = gf_avg_window(g, h, oh, ow, &h0, &h1, &w0, &w1);                        \
        T acc = 0;                                                                         \
        for (long ih = h0; ih < h1; ih++)                                                  \
            for (long iw = w0; iw < w1; iw++) acc += x[ox + GF_AT4(xs, n, c, ih, iw)];     \
        y[oy + GF_AT4(ys, n, c, oh, ow)] = div ? acc / (T)div : (T)0;                      \
    }                                                                                      \
    /* grad_x[n, c, ih, iw]: every window holding (ih, iw) gives grad_y / its  \
     * divisor (gather form: no atomics). */                                               \
    __kernel void avg_pool2d_backward_##DT(__global const T *gy, long ogy, long4 gys,      \
                                           __global T *gx, long ogx, long4 gxs, long8 g,   \
                                           long8 h) {                                      \
        GF_POOL_GEOM                                                                       \
        long j = get_global_id(0);                                                         \
        if (j >= N * C * H * W) return;                                                    \
        long iw = j % W, ih = (j / W) % H, c = (j / (W * H)) % C, n = j / (W * H * C);     \
        T acc = 0;                                                                         \
        long oh_lo = max(0L, (ih + PH - KH + SH) / SH), oh_hi = min(Ho - 1, (ih + PH) / SH); \
        long ow_lo = max(0L, (iw + PW - KW + SW) / SW), ow_hi = min(Wo - 1, (iw + PW) / SW); \
        for (long oh = oh_lo; oh <= oh_hi; oh++)                                           \
            for (long ow = ow_lo; ow <= ow_hi; ow++) {                                     \
                long h0 = 0, h1 = 0, w0 = 0, w1 = 0;                                       \
                long div = gf_avg_window(g, h, oh, ow, &h0, &h1, &w0, &w1);                \
                if (div && ih >= h0 && ih < h1 && iw >= w0 && iw < w1)                     \
                    acc += gy[ogy + GF_AT4(gys, n, c, oh, ow)] / (T)div;                   \
            }                                                                              \
        gx[ogx + GF_AT4(gxs, n, c, ih, iw)] = acc;                                         \
    }

/* Windows of K x K (2 and 3, the common ones), any stride, padding and
 * dilation: an item per output (dim 0 ow, dim 1 oh, dim 2 the plane), no
 * loop left once the window's is unrolled, so a CPU driver vectorizes
 * across neighbouring outputs. Same order, ties and NaN rule as above. */
#define GF_POOL_K(DT, T, K)                                                                \
    __kernel void max_pool2d_k##K##_##DT(__global const T *x, long ox, long4 xs,          \
                                         __global T *y, long oy, long4 ys,                 \
                                         __global long *ind, long oi, long4 is, long8 g,   \
                                         long8 h) {                                        \
        GF_POOL_GEOM                                                                       \
        long ow = get_global_id(0), oh = get_global_id(1), r = get_global_id(2);           \
        if (ow >= Wo || oh >= Ho || r >= N * C) return;                                    \
        long n = r / C, c = r - n * C, xp = ox + GF_AT4(xs, n, c, 0, 0);                   \
        long ih0 = oh * SH - PH, iw0 = ow * SW - PW;                                       \
        T best = (T)-INFINITY;                                                             \
        long bi = -1;                                                                      \
        _Pragma("unroll") for (int i = 0; i < K; i++) {                                    \
            long ih = ih0 + i * DH;                                                        \
            bool row_in = ih >= 0 && ih < H;                                               \
            _Pragma("unroll") for (int jj = 0; jj < K; jj++) {                             \
                long iw = iw0 + jj * DW;                                                   \
                if (row_in && iw >= 0 && iw < W) {                                         \
                    T v = x[xp + ih * xs.s2 + iw * xs.s3];                                 \
                    if (bi < 0 || v > best || v != v) {                                    \
                        best = v;                                                          \
                        bi = ih * W + iw;                                                  \
                    }                                                                      \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        y[oy + GF_AT4(ys, n, c, oh, ow)] = best;                                           \
        ind[oi + GF_AT4(is, n, c, oh, ow)] = bi;                                           \
    }

GF_POOL(f32, float)
GF_POOL_K(f32, float, 2)
GF_POOL_K(f32, float, 3)
#if GF_HAS_FP64
GF_POOL(f64, double)
GF_POOL_K(f64, double, 2)
GF_POOL_K(f64, double, 3)
#endif
