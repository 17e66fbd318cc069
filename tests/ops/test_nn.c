/* SPDX-License-Identifier: BSD-3-Clause */
/* test_nn.c — conv2d and its backward kernels, pooling, layer/batch norm,
 * dropout and the losses. Small cases are computed by hand in the comments;
 * larger conv cases use a plain host convolution written here. */
#include "ops_test.h"

/* Natural log of (1 + e^-1 + e^-2): the softmax sums of the loss tests. */
#define L3 0.4076059644443804

/* ---------------------------------------------------------------- conv2d */
typedef struct conv_cfg {
    int N, Ci, H, W, Co, kh, kw, sh, sw, ph, pw, dh, dw, g;
} conv_cfg;
static int conv_ho(const conv_cfg *c) { return (c->H + 2 * c->ph - c->dh * (c->kh - 1) - 1) / c->sh + 1; }
static int conv_wo(const conv_cfg *c) { return (c->W + 2 * c->pw - c->dw * (c->kw - 1) - 1) / c->sw + 1; }

/* mode 0: y = conv(x, w) + bias; 1: gx from gy (in y); 2: gw from gy and x. */
static void host_conv(const conv_cfg *c, int mode, double *x, double *w, const double *bias,
                      double *y) {
    int Ho = conv_ho(c), Wo = conv_wo(c), cig = c->Ci / c->g, cog = c->Co / c->g;
    if (mode == 0)
        for (int i = 0; i < c->N * c->Co * Ho * Wo; i++) y[i] = bias ? bias[(i / (Ho * Wo)) % c->Co] : 0;
    if (mode == 1)
        for (int i = 0; i < c->N * c->Ci * c->H * c->W; i++) x[i] = 0;
    if (mode == 2)
        for (int i = 0; i < c->Co * cig * c->kh * c->kw; i++) w[i] = 0;
    for (int n = 0; n < c->N; n++)
        for (int co = 0; co < c->Co; co++) {
            int grp = co / cog;
            for (int oh = 0; oh < Ho; oh++)
                for (int ow = 0; ow < Wo; ow++) {
                    double *yo = &y[((n * c->Co + co) * Ho + oh) * Wo + ow];
                    for (int ci = 0; ci < cig; ci++)
                        for (int i = 0; i < c->kh; i++)
                            for (int j = 0; j < c->kw; j++) {
                                int ih = oh * c->sh - c->ph + i * c->dh;
                                int iw = ow * c->sw - c->pw + j * c->dw;
                                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                                double *xv =
                                    &x[((n * c->Ci + grp * cig + ci) * c->H + ih) * c->W + iw];
                                double *wv = &w[((co * cig + ci) * c->kh + i) * c->kw + j];
                                if (mode == 0) *yo += *xv * *wv;
                                if (mode == 1) *xv += *yo * *wv;
                                if (mode == 2) *wv += *yo * *xv;
                            }
                }
        }
}

static void test_conv2d_hand(void) {
    gf_tensor *x = ot_make(GF_F32, 4, SZ(1, 1, 3, 3), DV(1, 2, 3, 4, 5, 6, 7, 8, 9));
    gf_tensor *w = ot_make(GF_F32, 4, SZ(1, 1, 2, 2), DV(1, 0, 0, -1));
    gf_tensor *b = ot_make(GF_F32, 1, SZ(1), DV(0.5));
    /* y[i][j] = x[i][j] - x[i+1][j+1] = -4 */
    gf_tensor *y = gf_conv2d(x, w, NULL, NULL);
    EXPECT_T(y, GF_F32, 4, SZ(1, 1, 2, 2), DV(-4, -4, -4, -4), 0);
    gf_tensor *yb = gf_conv2d(x, w, b, NULL);
    EXPECT_T(yb, GF_F32, 4, SZ(1, 1, 2, 2), DV(-3.5, -3.5, -3.5, -3.5), 0);
    /* padding 1: the zero border enters the differences */
    gf_conv2d_opts pad = {.padding = {1, 1}};
    gf_tensor *yp = gf_conv2d(x, w, NULL, &pad);
    EXPECT_T(yp, GF_F32, 4, SZ(1, 1, 4, 4),
             DV(-1, -2, -3, 0, -4, -4, -4, 3, -7, -4, -4, 6, 0, 7, 8, 9), 0);
    /* stride 2 with a ones kernel: sums of 2x2 blocks of 1..16 */
    gf_tensor *x4 = ot_make(GF_F64, 4, SZ(1, 1, 4, 4),
                            DV(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
    gf_tensor *ones = gf_ones(SZ(1, 1, 2, 2), 4, GF_F64, NULL);
    gf_conv2d_opts st = {.stride = {2, 2}};
    gf_tensor *ys = gf_conv2d(x4, ones, NULL, &st);
    EXPECT_T(ys, GF_F64, 4, SZ(1, 1, 2, 2), DV(14, 22, 46, 54), 0);
    /* dilation 2: taps at (0,0) (0,2) (2,0) (2,2) weighted 1, 2, 3, 4 */
    gf_tensor *wd = ot_make(GF_F64, 4, SZ(1, 1, 2, 2), DV(1, 2, 3, 4));
    gf_conv2d_opts dil = {.dilation = {2, 2}};
    gf_tensor *yd = gf_conv2d(x4, wd, NULL, &dil);
    EXPECT_T(yd, GF_F64, 4, SZ(1, 1, 2, 2), DV(78, 88, 118, 128), 0);
    /* groups 2: each channel scaled by its own 1x1 kernel, plus bias */
    gf_tensor *xg = ot_make(GF_F64, 4, SZ(1, 2, 2, 2), DV(1, 2, 3, 4, 5, 6, 7, 8));
    gf_tensor *wg = ot_make(GF_F64, 4, SZ(2, 1, 1, 1), DV(2, -1));
    gf_tensor *bg = ot_make(GF_F64, 1, SZ(2), DV(1, 10));
    gf_conv2d_opts grp = {.groups = 2};
    gf_tensor *yg = gf_conv2d(xg, wg, bg, &grp);
    EXPECT_T(yg, GF_F64, 4, SZ(1, 2, 2, 2), DV(3, 5, 7, 9, 5, 4, 3, 2), 0);
    /* zeroed options read as stride 1, dilation 1, groups 1 */
    gf_conv2d_opts zero = {0};
    gf_tensor *yz = gf_conv2d(x, w, NULL, &zero);
    EXPECT_T(yz, GF_F32, 4, SZ(1, 1, 2, 2), DV(-4, -4, -4, -4), 0);
    REL(x, w, b, y, yb, yp, x4, ones, ys, wd, yd, xg, wg, bg, yg, yz);
}

static void fill(double *v, int n, int seed) {
    for (int i = 0; i < n; i++) v[i] = (double)(((i + seed) * 37 + seed * 11) % 17) / 8.0 - 1.0;
}

static const conv_cfg conv_cfgs[] = {
    /* N Ci H W Co kh kw sh sw ph pw dh dw g */
    {2, 4, 5, 6, 6, 3, 2, 2, 1, 1, 2, 1, 2, 2},
    {1, 3, 8, 8, 2, 3, 3, 2, 2, 0, 0, 1, 1, 1}, /* stride leaves the last row unused */
    {2, 2, 4, 5, 4, 2, 3, 1, 2, 1, 1, 2, 1, 1},
    {1, 6, 3, 3, 6, 1, 1, 1, 1, 0, 0, 1, 1, 6}, /* depthwise */
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},
};

static void test_conv2d_general(void) {
    for (size_t ci = 0; ci < sizeof conv_cfgs / sizeof conv_cfgs[0]; ci++) {
        const conv_cfg *c = &conv_cfgs[ci];
        int Ho = conv_ho(c), Wo = conv_wo(c), cig = c->Ci / c->g;
        int nx = c->N * c->Ci * c->H * c->W, nw = c->Co * cig * c->kh * c->kw;
        int ny = c->N * c->Co * Ho * Wo;
        double *x = malloc(sizeof(double) * (size_t)nx), *w = malloc(sizeof(double) * (size_t)nw);
        double *y = malloc(sizeof(double) * (size_t)ny), bias[8];
        fill(x, nx, 1);
        fill(w, nw, 2);
        fill(bias, c->Co, 3);
        host_conv(c, 0, x, w, bias, y);
        gf_conv2d_opts o = {{c->sh, c->sw}, {c->ph, c->pw}, {c->dh, c->dw}, c->g};
        int64_t xs[4] = {c->N, c->Ci, c->H, c->W}, ws[4] = {c->Co, cig, c->kh, c->kw};
        int64_t ys[4] = {c->N, c->Co, Ho, Wo};
        for (int k = 0; k < 2; k++) {
            gf_dtype dt = k ? GF_F64 : GF_F32;
            double *xr = malloc(sizeof(double) * (size_t)nx), *wr = malloc(sizeof(double) * (size_t)nw);
            for (int i = 0; i < nx; i++) xr[i] = x[i];
            for (int i = 0; i < nw; i++) wr[i] = w[i];
            for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
                gf_tensor *tx = ot_make_layout(layout, dt, 4, xs, xr);
                gf_tensor *tw = ot_make_layout((layout + 1) % OT_NLAYOUTS, dt, 4, ws, wr);
                gf_tensor *tb = ot_make_layout(layout, dt, 1, SZ(c->Co), bias);
                gf_tensor *ty = gf_conv2d(tx, tw, tb, &o);
                int failed_before = check_failed_;
                EXPECT_T(ty, dt, 4, ys, y, dt == GF_F32 ? 1e-5 : 1e-12);
                if (check_failed_ != failed_before)
                    fprintf(stderr, "  (in conv config %zu, %s, %s x)\n", ci, gf_dtype_name(dt),
                            ot_layout_names[layout]);
                REL(tx, tw, tb, ty);
            }
            free(xr), free(wr);
        }
        free(x), free(w), free(y);
    }
    /* a batch of 0 */
    gf_tensor *x0 = gf_zeros(SZ(0, 2, 4, 4), 4, GF_F32, NULL);
    gf_tensor *w0 = gf_ones(SZ(3, 2, 3, 3), 4, GF_F32, NULL);
    gf_tensor *y0 = gf_conv2d(x0, w0, NULL, NULL);
    EXPECT_T(y0, GF_F32, 4, SZ(0, 3, 2, 2), NULL, 0);
    /* mismatched channels, groups that do not divide, a kernel larger than the input */
    gf_tensor *x3 = gf_zeros(SZ(1, 3, 4, 4), 4, GF_F32, NULL);
    EXPECT_FAIL(gf_conv2d(x3, w0, NULL, NULL), GF_ERR_SHAPE);
    gf_conv2d_opts g2 = {.groups = 2};
    gf_clear_error();
    gf_tensor *bad = gf_conv2d(x3, w0, NULL, &g2);
    CHECK(bad == NULL && gf_last_status() != GF_OK);
    gf_tensor *x1 = gf_zeros(SZ(1, 2, 2, 2), 4, GF_F32, NULL);
    gf_clear_error();
    gf_tensor *bad2 = gf_conv2d(x1, w0, NULL, NULL);
    CHECK(bad2 == NULL && gf_last_status() != GF_OK);
    gf_tensor *wd = gf_ones(SZ(3, 2, 3, 3), 4, GF_F64, NULL);
    EXPECT_FAIL(gf_conv2d(x3, wd, NULL, NULL), GF_ERR_DTYPE);
    REL(x0, w0, y0, x3, bad, x1, bad2, wd);
}

static double dot(const double *a, const double *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* <conv(x, w), gy> = <x, conv_backward_input(gy, w)> = <w, conv_backward_weight(gy, x)> */
static void test_conv2d_backward_adjoint(void) {
    for (size_t ci = 0; ci < sizeof conv_cfgs / sizeof conv_cfgs[0]; ci++) {
        const conv_cfg *c = &conv_cfgs[ci];
        int Ho = conv_ho(c), Wo = conv_wo(c), cig = c->Ci / c->g;
        int nx = c->N * c->Ci * c->H * c->W, nw = c->Co * cig * c->kh * c->kw;
        int ny = c->N * c->Co * Ho * Wo;
        double *x = malloc(sizeof(double) * (size_t)nx), *w = malloc(sizeof(double) * (size_t)nw);
        double *gy = malloc(sizeof(double) * (size_t)ny), *y = malloc(sizeof(double) * (size_t)ny);
        double *gx = malloc(sizeof(double) * (size_t)nx), *gw = malloc(sizeof(double) * (size_t)nw);
        fill(x, nx, 4);
        fill(w, nw, 5);
        fill(gy, ny, 6);
        host_conv(c, 0, x, w, NULL, y);
        host_conv(c, 1, gx, w, NULL, gy);
        host_conv(c, 2, x, gw, NULL, gy);
        gf_conv2d_opts o = {{c->sh, c->sw}, {c->ph, c->pw}, {c->dh, c->dw}, c->g};
        int64_t xs[4] = {c->N, c->Ci, c->H, c->W}, ws[4] = {c->Co, cig, c->kh, c->kw};
        int64_t ys[4] = {c->N, c->Co, Ho, Wo};
        for (int k = 0; k < 2; k++) {
            gf_dtype dt = k ? GF_F64 : GF_F32;
            double tol = dt == GF_F32 ? 1e-5 : 1e-12;
            gf_tensor *tx = ot_make(dt, 4, xs, x), *tw = ot_make_transposed(dt, 4, ws, w);
            gf_tensor *tgy = ot_make_step(dt, 4, ys, gy);
            gf_tensor *ty = gf_conv2d(tx, tw, NULL, &o);
            gf_tensor *tgx = gf_conv2d_backward_input(tgy, tw, xs, &o);
            gf_tensor *tgw = gf_conv2d_backward_weight(tgy, tx, ws, &o);
            int failed_before = check_failed_;
            EXPECT_T(tgx, dt, 4, xs, gx, tol);
            EXPECT_T(tgw, dt, 4, ws, gw, tol);
            double *ry = ot_read(ty), *rgx = ot_read(tgx), *rgw = ot_read(tgw);
            CHECK(ry && rgx && rgw);
            if (ry && rgx && rgw) {
                double lhs = dot(ry, gy, ny), m1 = dot(x, rgx, nx), m2 = dot(w, rgw, nw);
                CHECK_CLOSE(m1, lhs, dt == GF_F32 ? 1e-4 : 1e-10);
                CHECK_CLOSE(m2, lhs, dt == GF_F32 ? 1e-4 : 1e-10);
            }
            if (check_failed_ != failed_before)
                fprintf(stderr, "  (in conv backward config %zu, %s)\n", ci, gf_dtype_name(dt));
            free(ry), free(rgx), free(rgw);
            REL(tx, tw, tgy, ty, tgx, tgw);
        }
        free(x), free(w), free(gy), free(y), free(gx), free(gw);
    }
}

/* ---------------------------------------------------------------- pooling */
static const double PX[16] = {1, 5, 2, 0, 3, 4, 8, 7, 9, 0, 1, 2, 6, 6, 3, 4};

static void test_max_pool2d(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            gf_tensor *x = ot_make_layout(layout, dt, 4, SZ(1, 1, 4, 4), PX);
            gf_tensor *idx = NULL;
            gf_pool2d_opts k2 = {.kernel = {2, 2}}; /* stride 0 = kernel */
            gf_tensor *y = gf_max_pool2d(x, &k2, &idx);
            EXPECT_T(y, dt, 4, SZ(1, 1, 2, 2), DV(5, 8, 9, 4), 0);
            EXPECT_T(idx, GF_I64, 4, SZ(1, 1, 2, 2), DV(1, 6, 8, 15), 0);
            gf_tensor_release(idx), idx = NULL;
            /* padding 1: padded cells never win */
            gf_pool2d_opts p1 = {.kernel = {2, 2}, .stride = {2, 2}, .padding = {1, 1}};
            gf_tensor *yp = gf_max_pool2d(x, &p1, &idx);
            EXPECT_T(yp, dt, 4, SZ(1, 1, 3, 3), DV(1, 5, 0, 9, 8, 7, 6, 6, 4), 0);
            EXPECT_T(idx, GF_I64, 4, SZ(1, 1, 3, 3), DV(0, 1, 3, 8, 6, 7, 12, 13, 15), 0);
            gf_tensor_release(idx), idx = NULL;
            gf_pool2d_opts k3 = {.kernel = {3, 3}, .stride = {1, 1}};
            gf_tensor *y3 = gf_max_pool2d(x, &k3, &idx);
            EXPECT_T(y3, dt, 4, SZ(1, 1, 2, 2), DV(9, 8, 9, 8), 0);
            EXPECT_T(idx, GF_I64, 4, SZ(1, 1, 2, 2), DV(8, 6, 8, 6), 0);
            /* backward: gradients routed to the argmax cells and summed */
            gf_tensor *gy = ot_make(dt, 4, SZ(1, 1, 2, 2), DV(1, 2, 3, 4));
            gf_tensor *gx = gf_max_pool2d_backward(gy, idx, x, &k3);
            EXPECT_T(gx, dt, 4, SZ(1, 1, 4, 4), DV(0, 0, 0, 0, 0, 0, 6, 0, 4, 0, 0, 0, 0, 0, 0, 0),
                     0);
            gf_tensor_release(idx), idx = NULL;
            gf_pool2d_opts dl = {.kernel = {2, 2}, .stride = {1, 1}, .dilation = {2, 2}};
            gf_tensor *yd = gf_max_pool2d(x, &dl, &idx);
            EXPECT_T(yd, dt, 4, SZ(1, 1, 2, 2), DV(9, 5, 8, 7), 0);
            EXPECT_T(idx, GF_I64, 4, SZ(1, 1, 2, 2), DV(8, 1, 6, 7), 0);
            gf_tensor_release(idx), idx = NULL;
            REL(x, y, yp, y3, gy, gx, yd);
        }
        /* all negative with padding: the border is -inf, not 0 */
        double neg[16];
        for (int i = 0; i < 16; i++) neg[i] = -(i + 1);
        gf_tensor *xn = ot_make(dt, 4, SZ(1, 1, 4, 4), neg);
        gf_pool2d_opts p1 = {.kernel = {2, 2}, .stride = {2, 2}, .padding = {1, 1}};
        gf_tensor *yn = gf_max_pool2d(xn, &p1, NULL);
        EXPECT_T(yn, dt, 4, SZ(1, 1, 3, 3), DV(-1, -2, -4, -5, -6, -8, -13, -14, -16), 0);
        /* ceil_mode on 5x5 (x = flat index): partial last windows */
        double v25[25];
        for (int i = 0; i < 25; i++) v25[i] = i;
        gf_tensor *x5 = ot_make(dt, 4, SZ(1, 1, 5, 5), v25);
        gf_pool2d_opts fl = {.kernel = {2, 2}};
        gf_pool2d_opts ce = {.kernel = {2, 2}, .ceil_mode = true};
        gf_tensor *i5 = NULL;
        gf_tensor *yf = gf_max_pool2d(x5, &fl, NULL), *yc = gf_max_pool2d(x5, &ce, &i5);
        EXPECT_T(yf, dt, 4, SZ(1, 1, 2, 2), DV(6, 8, 16, 18), 0);
        EXPECT_T(yc, dt, 4, SZ(1, 1, 3, 3), DV(6, 8, 9, 16, 18, 19, 21, 23, 24), 0);
        EXPECT_T(i5, GF_I64, 4, SZ(1, 1, 3, 3), DV(6, 8, 9, 16, 18, 19, 21, 23, 24), 0);
        /* [C, H, W] input and several planes: indices are per plane */
        double v2[32];
        for (int i = 0; i < 32; i++) v2[i] = i < 16 ? PX[i] : -PX[i - 16];
        gf_tensor *xc = ot_make(dt, 3, SZ(2, 4, 4), v2);
        gf_tensor *ic = NULL;
        gf_tensor *yc3 = gf_max_pool2d(xc, &fl, &ic);
        EXPECT_T(yc3, dt, 3, SZ(2, 2, 2), DV(5, 8, 9, 4, -1, 0, 0, -1), 0);
        EXPECT_T(ic, GF_I64, 3, SZ(2, 2, 2), DV(1, 6, 8, 15, 0, 3, 9, 10), 0);
        /* a batch of 0 */
        gf_tensor *x0 = gf_zeros(SZ(0, 2, 4, 4), 4, dt, NULL);
        gf_tensor *i0 = NULL;
        gf_tensor *y0 = gf_max_pool2d(x0, &fl, &i0);
        EXPECT_T(y0, dt, 4, SZ(0, 2, 2, 2), NULL, 0);
        EXPECT_T(i0, GF_I64, 4, SZ(0, 2, 2, 2), NULL, 0);
        gf_tensor *a0 = gf_avg_pool2d(x0, &fl);
        EXPECT_T(a0, dt, 4, SZ(0, 2, 2, 2), NULL, 0);
        REL(xn, yn, x5, yf, yc, i5, xc, ic, yc3, x0, i0, y0, a0);
    }
}

static void test_avg_pool2d(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        double tol = ot_tol(dt);
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            gf_tensor *x = ot_make_layout(layout, dt, 4, SZ(1, 1, 3, 3), DV(1, 2, 3, 4, 5, 6, 7, 8, 9));
            gf_pool2d_opts inc = {.kernel = {2, 2}, .stride = {1, 1}, .padding = {1, 1},
                                  .exclude_pad = false};
            gf_pool2d_opts exc = inc;
            exc.exclude_pad = true;
            gf_tensor *yi = gf_avg_pool2d(x, &inc), *ye = gf_avg_pool2d(x, &exc);
            EXPECT_T(yi, dt, 4, SZ(1, 1, 4, 4),
                     DV(0.25, 0.75, 1.25, 0.75, 1.25, 3, 4, 2.25, 2.75, 6, 7, 3.75, 1.75, 3.75,
                        4.25, 2.25),
                     tol);
            EXPECT_T(ye, dt, 4, SZ(1, 1, 4, 4),
                     DV(1, 1.5, 2.5, 3, 2.5, 3, 4, 4.5, 5.5, 6, 7, 7.5, 7, 7.5, 8.5, 9), tol);
            /* the zero value of the options is PyTorch's default,
             * count_include_pad = True: the padding is counted */
            gf_pool2d_opts zero = {.kernel = {2, 2}, .stride = {1, 1}, .padding = {1, 1}};
            gf_tensor *yz = gf_avg_pool2d(x, &zero);
            EXPECT_T(yz, dt, 4, SZ(1, 1, 4, 4),
                     DV(0.25, 0.75, 1.25, 0.75, 1.25, 3, 4, 2.25, 2.75, 6, 7, 3.75, 1.75, 3.75,
                        4.25, 2.25),
                     tol);
            REL(x, yi, ye, yz);
        }
        /* ceil_mode without padding: partial windows divide by what they cover */
        double v25[25], v16[16];
        for (int i = 0; i < 25; i++) v25[i] = i;
        for (int i = 0; i < 16; i++) v16[i] = i;
        gf_tensor *x5 = ot_make(dt, 4, SZ(1, 1, 5, 5), v25);
        for (int inc = 0; inc < 2; inc++) {
            gf_pool2d_opts ce = {.kernel = {2, 2}, .ceil_mode = true, .exclude_pad = !inc};
            gf_tensor *y = gf_avg_pool2d(x5, &ce);
            EXPECT_T(y, dt, 4, SZ(1, 1, 3, 3), DV(3, 5, 6.5, 13, 15, 16.5, 20.5, 22.5, 24), tol);
            gf_tensor_release(y);
        }
        /* ceil_mode with padding 1, kernel 3, stride 2 on 4x4: the last window
         * covers one real row and one padded row (as PyTorch counts them) */
        gf_tensor *x4 = ot_make(dt, 4, SZ(1, 1, 4, 4), v16);
        gf_pool2d_opts ci = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1},
                             .ceil_mode = true, .exclude_pad = false};
        gf_pool2d_opts cx = ci;
        cx.exclude_pad = true;
        gf_tensor *yci = gf_avg_pool2d(x4, &ci), *ycx = gf_avg_pool2d(x4, &cx);
        EXPECT_T(yci, dt, 4, SZ(1, 1, 3, 3),
                 DV(10.0 / 9, 24.0 / 9, 10.0 / 6, 51.0 / 9, 10, 5.5, 25.0 / 6, 7, 3.75), tol);
        EXPECT_T(ycx, dt, 4, SZ(1, 1, 3, 3), DV(2.5, 4, 5, 8.5, 10, 11, 12.5, 14, 15), tol);
        gf_pool2d_opts fl = ci;
        fl.ceil_mode = false;
        gf_tensor *yfl = gf_avg_pool2d(x4, &fl);
        EXPECT_T(yfl, dt, 4, SZ(1, 1, 2, 2), DV(10.0 / 9, 24.0 / 9, 51.0 / 9, 10), tol);
        /* ceil mode where the extra window would start in the right padding:
         * it is dropped (3x3, kernel 2, stride 2, padding 1 gives 2x2) */
        gf_tensor *x3 = ot_make(dt, 4, SZ(1, 1, 3, 3), DV(1, 2, 3, 4, 5, 6, 7, 8, 9));
        gf_pool2d_opts c3 = {.kernel = {2, 2}, .stride = {2, 2}, .padding = {1, 1},
                             .ceil_mode = true, .exclude_pad = false};
        gf_tensor *y3i = gf_avg_pool2d(x3, &c3);
        EXPECT_T(y3i, dt, 4, SZ(1, 1, 2, 2), DV(0.25, 1.25, 2.75, 7), tol);
        c3.exclude_pad = true;
        gf_tensor *y3x = gf_avg_pool2d(x3, &c3);
        EXPECT_T(y3x, dt, 4, SZ(1, 1, 2, 2), DV(1, 2.5, 5.5, 7), tol);
        gf_tensor *i3 = NULL;
        gf_tensor *y3m = gf_max_pool2d(x3, &c3, &i3);
        EXPECT_T(y3m, dt, 4, SZ(1, 1, 2, 2), DV(1, 3, 7, 9), 0);
        EXPECT_T(i3, GF_I64, 4, SZ(1, 1, 2, 2), DV(0, 2, 6, 8), 0);
        REL(x3, y3i, y3x, i3, y3m);
        /* backward of non-overlapping 2x2 windows: a quarter each */
        gf_pool2d_opts k2 = {.kernel = {2, 2}};
        gf_tensor *gy = gf_ones(SZ(1, 1, 2, 2), 4, dt, NULL);
        gf_tensor *gx = gf_avg_pool2d_backward(gy, x4, &k2);
        double q[16];
        for (int i = 0; i < 16; i++) q[i] = 0.25;
        EXPECT_T(gx, dt, 4, SZ(1, 1, 4, 4), q, tol);
        REL(x5, x4, yci, ycx, yfl, gy, gx);
    }
    gf_tensor *x = gf_zeros(SZ(1, 1, 2, 2), 4, GF_F32, NULL);
    gf_pool2d_opts big = {.kernel = {3, 3}};
    gf_clear_error();
    gf_tensor *bad = gf_avg_pool2d(x, &big); /* kernel larger than the input */
    CHECK(bad == NULL && gf_last_status() != GF_OK);
    gf_pool2d_opts zk = {.kernel = {0, 2}};
    gf_clear_error();
    gf_tensor *bad2 = gf_max_pool2d(x, &zk, NULL);
    CHECK(bad2 == NULL && gf_last_status() != GF_OK);
    REL(x, bad, bad2);
}

/* ---------------------------------------------------------------- norms */
static void test_layer_norm(void) {
    const double eps = 1e-5;
    const double r0 = 1 / sqrt(2.0 / 3 + eps), r1 = 1 / sqrt(8.0 / 3 + eps);
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        double tol = dt == GF_F32 ? 1e-5 : 1e-12;
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            /* rows [1, 2, 3] (mean 2, var 2/3) and [4, 6, 8] (mean 6, var 8/3) */
            gf_tensor *x = ot_make_layout(layout, dt, 2, SZ(2, 3), DV(1, 2, 3, 4, 6, 8));
            gf_tensor *w = ot_make(dt, 1, SZ(3), DV(1, 2, -1));
            gf_tensor *b = ot_make(dt, 1, SZ(3), DV(0, 0.5, 1));
            gf_tensor *mean = NULL, *rstd = NULL;
            gf_tensor *y = gf_layer_norm(x, 1, w, b, eps, &mean, &rstd);
            EXPECT_T(y, dt, 2, SZ(2, 3),
                     DV(-r0, 0.5, 1 - r0, -2 * r1, 0.5, 1 - 2 * r1), tol);
            CHECK(mean && gf_tensor_numel(mean) == 2 && gf_tensor_size(mean, 0) == 2);
            CHECK(rstd && gf_tensor_numel(rstd) == 2 && gf_tensor_size(rstd, 0) == 2);
            double *mv = ot_read(mean), *rv = ot_read(rstd);
            CHECK(mv && rv);
            if (mv && rv) {
                CHECK_CLOSE(mv[0], 2, tol);
                CHECK_CLOSE(mv[1], 6, tol);
                CHECK_CLOSE(rv[0], r0, tol);
                CHECK_CLOSE(rv[1], r1, tol);
            }
            free(mv), free(rv);
            gf_tensor *yn = gf_layer_norm(x, 1, NULL, NULL, eps, NULL, NULL);
            EXPECT_T(yn, dt, 2, SZ(2, 3), DV(-r0, 0, r0, -2 * r1, 0, 2 * r1), tol);
            REL(x, w, b, mean, rstd, y, yn);
        }
        /* two normalised dims: [2, 2, 2], each [2, 2] block on its own */
        gf_tensor *x3 = ot_make_transposed(dt, 3, SZ(2, 2, 2), DV(1, 2, 3, 4, 0, 0, 0, 4));
        gf_tensor *y3 = gf_layer_norm(x3, 2, NULL, NULL, 0, NULL, NULL);
        /* block 1: mean 2.5, var 1.25; block 2: mean 1, var 3 */
        const double a = 1 / sqrt(1.25), c = 1 / sqrt(3.0);
        EXPECT_T(y3, dt, 3, SZ(2, 2, 2),
                 DV(-1.5 * a, -0.5 * a, 0.5 * a, 1.5 * a, -c, -c, -c, 3 * c), tol);
        /* 0-size leading dim */
        gf_tensor *z = gf_zeros(SZ(0, 3), 2, dt, NULL);
        gf_tensor *yz = gf_layer_norm(z, 1, NULL, NULL, eps, NULL, NULL);
        EXPECT_T(yz, dt, 2, SZ(0, 3), NULL, 0);
        gf_tensor *wbad = gf_ones(SZ(4), 1, dt, NULL);
        gf_tensor *xx = gf_ones(SZ(2, 3), 2, dt, NULL);
        EXPECT_FAIL(gf_layer_norm(xx, 1, wbad, NULL, eps, NULL, NULL), GF_ERR_SHAPE);
        REL(x3, y3, z, yz, wbad, xx);
    }
}

static void test_batch_norm(void) {
    const double eps = 1e-5, m = 0.1;
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        double tol = dt == GF_F32 ? 1e-5 : 1e-12;
        /* x [4, 2]: channel 0 = 1..4 (mean 2.5, var 1.25, unbiased 5/3),
         * channel 1 = 2, 4, 6, 8 (mean 5, var 5, unbiased 20/3) */
        gf_tensor *x = ot_make_transposed(dt, 2, SZ(4, 2), DV(1, 2, 2, 4, 3, 6, 4, 8));
        gf_tensor *rm = gf_zeros(SZ(2), 1, dt, NULL), *rv = gf_ones(SZ(2), 1, dt, NULL);
        gf_tensor *w = ot_make(dt, 1, SZ(2), DV(2, 1)), *b = ot_make(dt, 1, SZ(2), DV(0, -1));
        gf_tensor *sm = NULL, *si = NULL;
        uint64_t v0 = gf_tensor_version(rm);
        gf_tensor *y = gf_batch_norm(x, rm, rv, w, b, true, m, eps, &sm, &si);
        const double i0 = 1 / sqrt(1.25 + eps), i1 = 1 / sqrt(5 + eps);
        EXPECT_T(y, dt, 2, SZ(4, 2),
                 DV(2 * -1.5 * i0, -3 * i1 - 1, 2 * -0.5 * i0, -1 * i1 - 1, 2 * 0.5 * i0,
                    1 * i1 - 1, 2 * 1.5 * i0, 3 * i1 - 1),
                 tol);
        EXPECT_T(sm, dt, 1, SZ(2), DV(2.5, 5), tol);
        EXPECT_T(si, dt, 1, SZ(2), DV(i0, i1), tol);
        EXPECT_T(rm, dt, 1, SZ(2), DV(0.25, 0.5), tol);
        EXPECT_T(rv, dt, 1, SZ(2), DV(0.9 + 0.1 * 5.0 / 3, 0.9 + 0.1 * 20.0 / 3), tol);
        CHECK(gf_tensor_version(rm) > v0);

        /* eval: the running statistics, left unchanged */
        gf_tensor *ye = gf_batch_norm(x, rm, rv, NULL, NULL, false, m, eps, NULL, NULL);
        const double rv0 = 0.9 + 0.1 * 5.0 / 3, rv1 = 0.9 + 0.1 * 20.0 / 3;
        const double e0 = 1 / sqrt(rv0 + eps), e1 = 1 / sqrt(rv1 + eps);
        EXPECT_T(ye, dt, 2, SZ(4, 2),
                 DV(0.75 * e0, 1.5 * e1, 1.75 * e0, 3.5 * e1, 2.75 * e0, 5.5 * e1, 3.75 * e0,
                    7.5 * e1),
                 tol);
        EXPECT_T(rm, dt, 1, SZ(2), DV(0.25, 0.5), tol);

        /* [N, C, H, W]: statistics over N, H and W */
        gf_tensor *x4 = ot_make(dt, 4, SZ(2, 2, 1, 2), DV(1, 3, 10, 10, 5, 7, 20, 40));
        gf_tensor *sm4 = NULL;
        gf_tensor *y4 = gf_batch_norm(x4, NULL, NULL, NULL, NULL, true, m, 0, &sm4, NULL);
        /* channel 0: 1, 3, 5, 7 (mean 4, var 5); channel 1: 10, 10, 20, 40 (mean 20, var 150) */
        const double c0 = 1 / sqrt(5.0), c1 = 1 / sqrt(150.0);
        EXPECT_T(y4, dt, 4, SZ(2, 2, 1, 2),
                 DV(-3 * c0, -1 * c0, -10 * c1, -10 * c1, 1 * c0, 3 * c0, 0, 20 * c1), tol);
        EXPECT_T(sm4, dt, 1, SZ(2), DV(4, 20), tol);
        /* eval without running statistics is refused */
        gf_clear_error();
        gf_tensor *bad = gf_batch_norm(x, NULL, NULL, NULL, NULL, false, m, eps, NULL, NULL);
        CHECK(bad == NULL && gf_last_status() != GF_OK);
        gf_tensor *rbad = gf_zeros(SZ(3), 1, dt, NULL);
        gf_clear_error();
        gf_tensor *bad2 = gf_batch_norm(x, rbad, rv, NULL, NULL, true, m, eps, NULL, NULL);
        CHECK(bad2 == NULL && gf_last_status() != GF_OK);
        REL(x, rm, rv, w, b, sm, si, y, ye, x4, sm4, y4, bad, rbad, bad2);
    }
}

/* ---------------------------------------------------------------- dropout */
static void test_dropout(void) {
    gf_manual_seed(99);
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        gf_tensor *x = ot_make(dt, 1, SZ(4), DV(1, -2, 3, 0.5));
        gf_tensor *y0 = gf_dropout(x, 0, true);
        EXPECT_T(y0, dt, 1, SZ(4), DV(1, -2, 3, 0.5), 0);
        gf_tensor *ye = gf_dropout(x, 0.5, false);
        CHECK(ye == x); /* documented: a new reference to x */
        gf_tensor *y1 = gf_dropout(x, 1, true);
        EXPECT_T(y1, dt, 1, SZ(4), DV(0, 0, 0, 0), 0);
        /* p = 0.5 on 10000 ones (strided): about half zero, the rest 2 */
        gf_tensor *base = gf_ones(SZ(100, 200), 2, dt, NULL);
        gf_tensor *ones = gf_slice(base, 1, 0, 200, 2);
        gf_tensor *yh = gf_dropout(ones, 0.5, true);
        CHECK(yh && ot_same_shape(yh, 2, SZ(100, 100)));
        double *v = ot_read(yh);
        int zeros = 0, twos = 0;
        for (int i = 0; v && i < 10000; i++) zeros += v[i] == 0, twos += v[i] == 2;
        CHECK(v != NULL);
        CHECK(zeros + twos == 10000);
        CHECK_MSG(zeros > 4500 && zeros < 5500, "%d zeros of 10000", zeros);
        free(v);
        /* p = 0.2: survivors scaled by 1.25 */
        gf_tensor *y2 = gf_dropout(ones, 0.2, true);
        v = ot_read(y2);
        int z2 = 0, s2 = 0;
        for (int i = 0; v && i < 10000; i++) z2 += v[i] == 0, s2 += v[i] == 1.25;
        CHECK(v && z2 + s2 == 10000);
        CHECK_MSG(z2 > 1600 && z2 < 2400, "%d zeros of 10000", z2);
        free(v);
        /* 0-dim and 0-size */
        gf_tensor *s = gf_scalar(3, dt, NULL);
        gf_tensor *ys = gf_dropout(s, 0, true);
        EXPECT_T(ys, dt, 0, NULL, DV(3), 0);
        gf_tensor *z = gf_zeros(SZ(0), 1, dt, NULL);
        gf_tensor *yz = gf_dropout(z, 0.5, true);
        EXPECT_T(yz, dt, 1, SZ(0), NULL, 0);
        EXPECT_FAIL(gf_dropout(x, 1.5, true), GF_ERR_INVALID);
        EXPECT_FAIL(gf_dropout(x, -0.1, true), GF_ERR_INVALID);
        REL(x, y0, ye, y1, base, ones, yh, y2, s, ys, z, yz);
    }
}

/* ---------------------------------------------------------------- losses */
static void test_cross_entropy(void) {
    /* logits [[1, 2, 3], [1, 0, -1]]: log-sum-exp 3 + L3 and 1 + L3.
     * Targets [0, 1]: losses 2 + L3 and 1 + L3. */
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        double tol = dt == GF_F32 ? 2e-6 : 1e-12;
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            gf_tensor *lg = ot_make_layout(layout, dt, 2, SZ(2, 3), DV(1, 2, 3, 1, 0, -1));
            gf_tensor *t = ot_make(GF_I64, 1, SZ(2), DV(0, 1));
            gf_tensor *r[4];
            r[0] = gf_cross_entropy(lg, t, NULL, GF_REDUCTION_NONE, -100, 0);
            EXPECT_T(r[0], dt, 1, SZ(2), DV(2 + L3, 1 + L3), tol);
            r[1] = gf_cross_entropy(lg, t, NULL, GF_REDUCTION_MEAN, -100, 0);
            EXPECT_T(r[1], dt, 0, NULL, DV(1.5 + L3), tol);
            r[2] = gf_cross_entropy(lg, t, NULL, GF_REDUCTION_SUM, -100, 0);
            EXPECT_T(r[2], dt, 0, NULL, DV(3 + 2 * L3), tol);
            /* label smoothing 0.1 over 3 classes:
             * (1 - 0.1) * nll + 0.1 / 3 * sum_c(-log p_c), sum_c(-log p_c) = 3 + 3 L3 */
            r[3] = gf_cross_entropy(lg, t, NULL, GF_REDUCTION_NONE, -100, 0.1);
            EXPECT_T(r[3], dt, 1, SZ(2), DV(1.9 + L3, 1.0 + L3), tol);
            for (int i = 0; i < 4; i++) gf_tensor_release(r[i]);
            REL(lg, t);
        }
        gf_tensor *lg = ot_make(dt, 2, SZ(2, 3), DV(1, 2, 3, 1, 0, -1));
        gf_tensor *t = ot_make(GF_I64, 1, SZ(2), DV(0, 1));
        gf_tensor *w = ot_make(dt, 1, SZ(3), DV(2, 0.5, 1));
        gf_tensor *r[8];
        /* class weights: mean divides by the sum of the targets' weights */
        r[0] = gf_cross_entropy(lg, t, w, GF_REDUCTION_NONE, -100, 0);
        EXPECT_T(r[0], dt, 1, SZ(2), DV(2 * (2 + L3), 0.5 * (1 + L3)), tol);
        r[1] = gf_cross_entropy(lg, t, w, GF_REDUCTION_MEAN, -100, 0);
        EXPECT_T(r[1], dt, 0, NULL, DV(1.8 + L3), tol);
        r[2] = gf_cross_entropy(lg, t, w, GF_REDUCTION_SUM, -100, 0);
        EXPECT_T(r[2], dt, 0, NULL, DV(4.5 + 2.5 * L3), tol);
        /* ignore_index: the second sample counts for nothing */
        gf_tensor *ti = ot_make(GF_I64, 1, SZ(2), DV(0, -100));
        r[3] = gf_cross_entropy(lg, ti, NULL, GF_REDUCTION_NONE, -100, 0);
        EXPECT_T(r[3], dt, 1, SZ(2), DV(2 + L3, 0), tol);
        r[4] = gf_cross_entropy(lg, ti, NULL, GF_REDUCTION_MEAN, -100, 0);
        EXPECT_T(r[4], dt, 0, NULL, DV(2 + L3), tol);
        r[5] = gf_cross_entropy(lg, ti, NULL, GF_REDUCTION_MEAN, -100, 0.1);
        EXPECT_T(r[5], dt, 0, NULL, DV(1.9 + L3), tol);
        gf_tensor *t2 = ot_make(GF_I64, 1, SZ(2), DV(2, 1)); /* ignore_index 2 */
        r[6] = gf_cross_entropy(lg, t2, NULL, GF_REDUCTION_SUM, 2, 0);
        EXPECT_T(r[6], dt, 0, NULL, DV(1 + L3), tol);
        /* [N, C, d]: logits[0, :, 0] = [0, 0], logits[0, :, 1] = [1, 0]; targets [[0, 0]] */
        gf_tensor *lk = ot_make(dt, 3, SZ(1, 2, 2), DV(0, 1, 0, 0));
        gf_tensor *tk = ot_make(GF_I64, 2, SZ(1, 2), DV(0, 0));
        r[7] = gf_cross_entropy(lk, tk, NULL, GF_REDUCTION_NONE, -100, 0);
        EXPECT_T(r[7], dt, 2, SZ(1, 2), DV(0.6931471805599453, 0.31326168751822286), tol);
        gf_tensor *rk = gf_cross_entropy(lk, tk, NULL, GF_REDUCTION_MEAN, -100, 0);
        EXPECT_T(rk, dt, 0, NULL, DV((0.6931471805599453 + 0.31326168751822286) / 2), tol);
        for (int i = 0; i < 8; i++) gf_tensor_release(r[i]);
        /* a target out of range */
        gf_tensor *tb = ot_make(GF_I64, 1, SZ(2), DV(0, 3));
        EXPECT_FAIL(gf_cross_entropy(lg, tb, NULL, GF_REDUCTION_MEAN, -100, 0), GF_ERR_INDEX);
        gf_tensor *ts = ot_make(GF_I64, 1, SZ(3), DV(0, 1, 2));
        EXPECT_FAIL(gf_cross_entropy(lg, ts, NULL, GF_REDUCTION_MEAN, -100, 0), GF_ERR_SHAPE);
        REL(lg, t, w, ti, t2, lk, tk, rk, tb, ts);
    }
}

static void test_nll_loss(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        gf_tensor *lp = ot_make_transposed(dt, 2, SZ(2, 3), DV(-1, -2, -3, -0.5, -1.5, -2.5));
        gf_tensor *t = ot_make(GF_I64, 1, SZ(2), DV(2, 0));
        gf_tensor *w = ot_make(dt, 1, SZ(3), DV(1, 1, 2));
        gf_tensor *r[6];
        r[0] = gf_nll_loss(lp, t, NULL, GF_REDUCTION_NONE, -100);
        EXPECT_T(r[0], dt, 1, SZ(2), DV(3, 0.5), 0);
        r[1] = gf_nll_loss(lp, t, NULL, GF_REDUCTION_MEAN, -100);
        EXPECT_T(r[1], dt, 0, NULL, DV(1.75), 0);
        r[2] = gf_nll_loss(lp, t, NULL, GF_REDUCTION_SUM, -100);
        EXPECT_T(r[2], dt, 0, NULL, DV(3.5), 0);
        r[3] = gf_nll_loss(lp, t, w, GF_REDUCTION_NONE, -100);
        EXPECT_T(r[3], dt, 1, SZ(2), DV(6, 0.5), 0);
        r[4] = gf_nll_loss(lp, t, w, GF_REDUCTION_MEAN, -100); /* (6 + 0.5) / (2 + 1) */
        EXPECT_T(r[4], dt, 0, NULL, DV(6.5 / 3), ot_tol(dt));
        r[5] = gf_nll_loss(lp, t, NULL, GF_REDUCTION_MEAN, 0); /* ignores the second */
        EXPECT_T(r[5], dt, 0, NULL, DV(3), 0);
        for (int i = 0; i < 6; i++) gf_tensor_release(r[i]);
        REL(lp, t, w);
    }
}

static void test_mse_loss(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
            gf_tensor *a = ot_make_layout(layout, dt, 2, SZ(2, 2), DV(1, 2, 3, 4));
            gf_tensor *b = ot_make(dt, 2, SZ(2, 2), DV(1.5, 2, 2, 6));
            gf_tensor *n = gf_mse_loss(a, b, GF_REDUCTION_NONE);
            EXPECT_T(n, dt, 2, SZ(2, 2), DV(0.25, 0, 1, 4), 0);
            gf_tensor *m = gf_mse_loss(a, b, GF_REDUCTION_MEAN);
            EXPECT_T(m, dt, 0, NULL, DV(1.3125), 0);
            gf_tensor *s = gf_mse_loss(b, a, GF_REDUCTION_SUM);
            EXPECT_T(s, dt, 0, NULL, DV(5.25), 0);
            REL(a, b, n, m, s);
        }
        gf_tensor *s0 = gf_scalar(3, dt, NULL), *s1 = gf_scalar(1, dt, NULL);
        gf_tensor *ms = gf_mse_loss(s0, s1, GF_REDUCTION_MEAN);
        EXPECT_T(ms, dt, 0, NULL, DV(4), 0);
        gf_tensor *z = gf_zeros(SZ(0), 1, dt, NULL);
        gf_tensor *mz = gf_mse_loss(z, z, GF_REDUCTION_SUM);
        EXPECT_T(mz, dt, 0, NULL, DV(0), 0);
        gf_tensor *mzm = gf_mse_loss(z, z, GF_REDUCTION_MEAN); /* as PyTorch: NaN */
        EXPECT_T(mzm, dt, 0, NULL, DV(NAN), 0);
        REL(s0, s1, ms, z, mz, mzm);
    }
}

int main(void) {
    CHECK(gf_init() == GF_OK);
    RUN(test_conv2d_hand);
    RUN(test_conv2d_general);
    RUN(test_conv2d_backward_adjoint);
    RUN(test_max_pool2d);
    RUN(test_avg_pool2d);
    RUN(test_layer_norm);
    RUN(test_batch_norm);
    RUN(test_dropout);
    RUN(test_cross_entropy);
    RUN(test_nll_loss);
    RUN(test_mse_loss);
    return ot_finish();
}
