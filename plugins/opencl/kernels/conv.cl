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

GF_CONV(f32, float)
#if GF_HAS_FP64
GF_CONV(f64, double)
#endif
