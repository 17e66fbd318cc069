/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ref_abi_conv_pool.c — the reference plugin's convolution and pooling kernels,
 * called directly through the plugin ABI (no core in between).
 *
 * The plugin is dlopen'ed from argv[1], or from GRAFT_TEST_REFERENCE_PLUGIN.
 * The test plays the core: it offers a host table (capturing set_error text),
 * negotiates, allocates through the table and launches on hand-made
 * descriptors. Expected values are computed by hand in the comments; the
 * gradient kernels are also checked as exact adjoints of the forward ones
 * (<f(x), g> == <x, f^T(g)>), which needs no second implementation. Output
 * buffers start filled with NaN, so an element a kernel forgets to write shows
 * up, and gaps between strided output elements must stay NaN. */
#include <math.h>
#include <stdbool.h>

#include "ref_direct.h"

/* ------------------------------------------------------------ test tensors */
/* A descriptor with its own buffer; the buffer covers offset + the span. */
typedef struct tt {
    gfp_tensor d;
    int64_t count; /* elements in the buffer */
} tt;

static double raw_load(const char *buf, int32_t dt, int64_t e) {
    switch (dt) {
    case GFP_F32: { float v; memcpy(&v, buf + e * 4, 4); return v; }
    case GFP_F64: { double v; memcpy(&v, buf + e * 8, 8); return v; }
    case GFP_I32: { int32_t v; memcpy(&v, buf + e * 4, 4); return v; }
    default: { int64_t v; memcpy(&v, buf + e * 8, 8); return (double)v; }
    }
}

static void raw_store(char *buf, int32_t dt, int64_t e, double v) {
    switch (dt) {
    case GFP_F32: { float f = (float)v; memcpy(buf + e * 4, &f, 4); break; }
    case GFP_F64: memcpy(buf + e * 8, &v, 8); break;
    case GFP_I32: { int32_t i = (int32_t)v; memcpy(buf + e * 4, &i, 4); break; }
    default: { int64_t i = (int64_t)v; memcpy(buf + e * 8, &i, 8); break; }
    }
}

#define I64_SENTINEL (-777777)

/* sizes/strides of rank entries; strides NULL = contiguous; offset in elements. */
static tt tt_make(int32_t dtype, int rank, const int64_t *sizes, const int64_t *strides,
                  int64_t offset) {
    tt t = {.d = rd_desc(dtype, rank, sizes, strides)};
    int64_t span = 1, numel = 1;
    for (int d = 0; d < rank; d++) {
        numel *= sizes[d];
        span += (sizes[d] - 1) * t.d.strides[d];
    }
    t.count = offset + (numel ? span : 0);
    if (t.count < 1) t.count = 1;
    t.d.offset = (uint64_t)offset * rd_esize(dtype);
    void *host_ptr = NULL;
    uint64_t nbytes = (uint64_t)t.count * rd_esize(dtype);
    if (P->buffer_alloc(dev, nbytes, &t.d.buffer, &host_ptr) != GFP_OK) {
        fprintf(stderr, "buffer_alloc of %llu bytes failed: %s\n", (unsigned long long)nbytes,
                last_error);
        exit(1);
    }
    /* Sentinels: NaN for floats, a recognisable number for integers. */
    char *fill = malloc((size_t)nbytes);
    for (int64_t e = 0; e < t.count; e++)
        raw_store(fill, dtype, e, dtype == GFP_F32 || dtype == GFP_F64 ? NAN : I64_SENTINEL);
    CHECK(P->buffer_write(dev, t.d.buffer, 0, fill, nbytes) == GFP_OK);
    free(fill);
    return t;
}

static tt mk4(int32_t dt, int64_t n, int64_t c, int64_t h, int64_t w) {
    return tt_make(dt, 4, (const int64_t[]){n, c, h, w}, NULL, 0);
}

/* Channels-last strides for [N, C, H, W], plus an offset: a permuted view. */
static tt mk4_cl(int32_t dt, int64_t n, int64_t c, int64_t h, int64_t w, int64_t off) {
    return tt_make(dt, 4, (const int64_t[]){n, c, h, w},
                   (const int64_t[]){h * w * c, 1, w * c, c}, off);
}

static void tt_free(tt *t) {
    P->buffer_free(dev, t->d.buffer);
    t->d.buffer = NULL;
}

static int64_t tt_numel(const tt *t) { return rd_numel(&t->d); }

/* Buffer element holding the row-major linear element `lin`. */
static int64_t tt_elem(const tt *t, int64_t lin) { return rd_elem(&t->d, lin); }

static char *tt_read_raw(const tt *t) {
    uint64_t nbytes = (uint64_t)t->count * rd_esize(t->d.dtype);
    char *buf = malloc((size_t)nbytes);
    CHECK(P->buffer_read(dev, t->d.buffer, 0, buf, nbytes) == GFP_OK);
    return buf;
}

static void tt_set(const tt *t, const double *vals) {
    char *buf = tt_read_raw(t);
    for (int64_t i = 0; i < tt_numel(t); i++) raw_store(buf, t->d.dtype, tt_elem(t, i), vals[i]);
    CHECK(P->buffer_write(dev, t->d.buffer, 0, buf, (uint64_t)t->count * rd_esize(t->d.dtype)) ==
          GFP_OK);
    free(buf);
}

/* Returns a malloc'ed array of the logical elements, row-major. */
static double *tt_get(const tt *t) {
    char *buf = tt_read_raw(t);
    int64_t n = tt_numel(t);
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) v[i] = raw_load(buf, t->d.dtype, tt_elem(t, i));
    free(buf);
    return v;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rnd(void) { /* uniform in [-1, 1), deterministic */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static void tt_fill_rand(const tt *t) {
    int64_t n = tt_numel(t);
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) v[i] = rnd();
    tt_set(t, v);
    free(v);
}

static void tt_iota(const tt *t, double start) {
    int64_t n = tt_numel(t);
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) v[i] = start + (double)i;
    tt_set(t, v);
    free(v);
}

static double tt_dot(const tt *a, const tt *b) {
    double *x = tt_get(a), *y = tt_get(b), s = 0.0;
    for (int64_t i = 0; i < tt_numel(a); i++) s += x[i] * y[i];
    free(x);
    free(y);
    return s;
}

/* Number of logical elements differing from want (printed to stderr). */
static int mismatches(const tt *t, const double *want, double tol) {
    double *got = tt_get(t);
    int bad = 0;
    for (int64_t i = 0; i < tt_numel(t); i++)
        if (!check_close_(got[i], want[i], tol, tol)) {
            fprintf(stderr, "  element %lld: got %.17g, want %.17g\n", (long long)i, got[i],
                    want[i]);
            bad++;
        }
    free(got);
    return bad;
}

/* Buffer elements outside the view that no longer hold the sentinel. */
static int gap_writes(const tt *t) {
    char *buf = tt_read_raw(t);
    char *reached = calloc((size_t)t->count, 1);
    for (int64_t i = 0; i < tt_numel(t); i++) reached[tt_elem(t, i)] = 1;
    int bad = 0;
    for (int64_t e = 0; e < t->count; e++) {
        if (reached[e]) continue;
        double v = raw_load(buf, t->d.dtype, e);
        if (t->d.dtype == GFP_F32 || t->d.dtype == GFP_F64 ? !isnan(v) : v != I64_SENTINEL) bad++;
    }
    free(reached);
    free(buf);
    return bad;
}

/* ------------------------------------------------------------ launching */
static gfp_conv2d_params cparams(int g, int sh, int sw, int ph, int pw, int dh, int dw) {
    gfp_conv2d_params p = {sizeof(gfp_conv2d_params), g, {sh, sw}, {ph, pw}, {dh, dw}};
    return p;
}

static gfp_pool2d_params pparams(int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw,
                                 int ceil_mode, int include_pad) {
    gfp_pool2d_params p = {sizeof(gfp_pool2d_params), {kh, kw}, {sh, sw}, {ph, pw}, {dh, dw},
                           (uint32_t)ceil_mode, (uint32_t)include_pad};
    return p;
}

static gfp_status conv(const tt *x, const tt *w, const tt *b, const tt *y,
                       const gfp_conv2d_params *p) {
    if (b) return rd_launch(GFP_OP_CONV2D, TS(&x->d, &w->d, &b->d), 3, TS(&y->d), 1, p);
    return rd_launch(GFP_OP_CONV2D, TS(&x->d, &w->d), 2, TS(&y->d), 1, p);
}

static const int32_t float_dtypes[2] = {GFP_F32, GFP_F64};

/* ------------------------------------------------------------ capability */
static void test_support(void) {
    for (int k = 0; k < 2; k++) {
        int32_t f = float_dtypes[k];
        CHECK(rd_query(GFP_OP_CONV2D, 3, (int32_t[]){f, f, f}, 1, (int32_t[]){f}) ==
              GFP_SUPPORT_STRIDED);
        CHECK(rd_query(GFP_OP_CONV2D, 3, (int32_t[]){f, f, -1}, 1, (int32_t[]){f}) ==
              GFP_SUPPORT_STRIDED);
        CHECK(rd_query(GFP_OP_CONV2D, 2, (int32_t[]){f, f}, 1, (int32_t[]){f}) ==
              GFP_SUPPORT_STRIDED);
        CHECK(rd_query(GFP_OP_CONV2D_BACKWARD_INPUT, 2, (int32_t[]){f, f}, 1, (int32_t[]){f}) ==
              GFP_SUPPORT_STRIDED);
        CHECK(rd_query(GFP_OP_CONV2D_BACKWARD_WEIGHT, 2, (int32_t[]){f, f}, 1, (int32_t[]){f}) ==
              GFP_SUPPORT_STRIDED);
        CHECK(rd_query(GFP_OP_MAX_POOL2D, 1, (int32_t[]){f}, 2, (int32_t[]){f, GFP_I64}) ==
              GFP_SUPPORT_STRIDED);
        CHECK(rd_query(GFP_OP_MAX_POOL2D_BACKWARD, 2, (int32_t[]){f, GFP_I64}, 1, (int32_t[]){f}) ==
              GFP_SUPPORT_STRIDED);
        CHECK(rd_query(GFP_OP_AVG_POOL2D, 1, (int32_t[]){f}, 1, (int32_t[]){f}) ==
              GFP_SUPPORT_STRIDED);
        CHECK(rd_query(GFP_OP_AVG_POOL2D_BACKWARD, 1, (int32_t[]){f}, 1, (int32_t[]){f}) ==
              GFP_SUPPORT_STRIDED);
    }
    int32_t i = GFP_I32, f = GFP_F32, d = GFP_F64;
    CHECK(rd_query(GFP_OP_CONV2D, 2, (int32_t[]){i, i}, 1, (int32_t[]){i}) == GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_CONV2D, 2, (int32_t[]){f, d}, 1, (int32_t[]){f}) == GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_CONV2D_BACKWARD_INPUT, 2, (int32_t[]){GFP_I64, GFP_I64}, 1,
                (int32_t[]){GFP_I64}) == GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_MAX_POOL2D, 1, (int32_t[]){f}, 2, (int32_t[]){f, GFP_I32}) ==
          GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_MAX_POOL2D, 1, (int32_t[]){i}, 2, (int32_t[]){i, GFP_I64}) ==
          GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_AVG_POOL2D, 1, (int32_t[]){GFP_BOOL}, 1, (int32_t[]){GFP_BOOL}) ==
          GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_AVG_POOL2D, 1, (int32_t[]){d}, 1, (int32_t[]){f}) == GFP_SUPPORT_NONE);
}

/* ------------------------------------------------------------ conv2d by hand */
static void test_conv_basic(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        /* x = [[1,2,3],[4,5,6],[7,8,9]], 2x2 ones: window sums 1+2+4+5 = 12, 16, 24, 28. */
        tt x = mk4(dt, 1, 1, 3, 3), w = mk4(dt, 1, 1, 2, 2), y = mk4(dt, 1, 1, 2, 2);
        tt_iota(&x, 1);
        tt_set(&w, (double[]){1, 1, 1, 1});
        gfp_conv2d_params p = cparams(1, 1, 1, 0, 0, 1, 1);
        CHECK(conv(&x, &w, NULL, &y, &p) == GFP_OK);
        CHECK(mismatches(&y, (double[]){12, 16, 24, 28}, 1e-6) == 0);
        /* The same with a NULL third input (absent bias). */
        tt y2 = mk4(dt, 1, 1, 2, 2);
        CHECK(rd_launch(GFP_OP_CONV2D, TS(&x.d, &w.d, NULL), 3, TS(&y2.d), 1, &p) == GFP_OK);
        CHECK(mismatches(&y2, (double[]){12, 16, 24, 28}, 1e-6) == 0);
        tt_free(&y2);
        tt_free(&x);
        tt_free(&w);
        tt_free(&y);
    }
}

static void test_conv_padding(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        /* 3x3 ones over x = 1..9 with padding 1: each output is the sum of the
         * pixel's in-range 3x3 neighbourhood. */
        tt x = mk4(dt, 1, 1, 3, 3), w = mk4(dt, 1, 1, 3, 3), y = mk4(dt, 1, 1, 3, 3);
        tt_iota(&x, 1);
        tt_set(&w, (double[]){1, 1, 1, 1, 1, 1, 1, 1, 1});
        gfp_conv2d_params p = cparams(1, 1, 1, 1, 1, 1, 1);
        CHECK(conv(&x, &w, NULL, &y, &p) == GFP_OK);
        CHECK(mismatches(&y, (double[]){12, 21, 16, 27, 45, 33, 24, 39, 28}, 1e-6) == 0);
        /* Padding on W only, 1x3 kernel [1, 0, -1]: y[h][w] = x[h][w-1] - x[h][w+1]. */
        tt w2 = mk4(dt, 1, 1, 1, 3), y2 = mk4(dt, 1, 1, 3, 3);
        tt_set(&w2, (double[]){1, 0, -1});
        gfp_conv2d_params p2 = cparams(1, 1, 1, 0, 1, 1, 1);
        CHECK(conv(&x, &w2, NULL, &y2, &p2) == GFP_OK);
        CHECK(mismatches(&y2, (double[]){-2, -2, 2, -5, -2, 5, -8, -2, 8}, 1e-6) == 0);
        tt_free(&x);
        tt_free(&w);
        tt_free(&y);
        tt_free(&w2);
        tt_free(&y2);
    }
}

static void test_conv_stride_dilation(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        /* x = 1..16 as 4x4. Stride 2, 2x2 ones: 1+2+5+6 = 14, 3+4+7+8 = 22, 46, 54. */
        tt x = mk4(dt, 1, 1, 4, 4), w = mk4(dt, 1, 1, 2, 2), y = mk4(dt, 1, 1, 2, 2);
        tt_iota(&x, 1);
        tt_set(&w, (double[]){1, 1, 1, 1});
        gfp_conv2d_params p = cparams(1, 2, 2, 0, 0, 1, 1);
        CHECK(conv(&x, &w, NULL, &y, &p) == GFP_OK);
        CHECK(mismatches(&y, (double[]){14, 22, 46, 54}, 1e-6) == 0);
        /* Dilation 2: taps (0,0),(0,2),(2,0),(2,2): 1+3+9+11 = 24, 28, 40, 44. */
        tt yd = mk4(dt, 1, 1, 2, 2);
        gfp_conv2d_params pd = cparams(1, 1, 1, 0, 0, 2, 2);
        CHECK(conv(&x, &w, NULL, &yd, &pd) == GFP_OK);
        CHECK(mismatches(&yd, (double[]){24, 28, 40, 44}, 1e-6) == 0);
        /* Stride 3 on H (Ho = (4-2)/3+1 = 1), stride 1 on W (Wo = 3):
         * 1+2+5+6 = 14, 18, 22. */
        tt ys = mk4(dt, 1, 1, 1, 3);
        gfp_conv2d_params ps = cparams(1, 3, 1, 0, 0, 1, 1);
        CHECK(conv(&x, &w, NULL, &ys, &ps) == GFP_OK);
        CHECK(mismatches(&ys, (double[]){14, 18, 22}, 1e-6) == 0);
        tt_free(&x);
        tt_free(&w);
        tt_free(&y);
        tt_free(&yd);
        tt_free(&ys);
    }
}

static void test_conv_groups_bias(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        /* groups 2, Ci 2, Co 4, 1x1 weights [1, 2, 3, -1], bias [10, 20, 30, 40]:
         * co 0,1 read channel 0 = [1,2,3,4]; co 2,3 read channel 1 = [5,6,7,8]. */
        tt x = mk4(dt, 1, 2, 2, 2), w = mk4(dt, 4, 1, 1, 1), y = mk4(dt, 1, 4, 2, 2);
        tt b = tt_make(dt, 1, (const int64_t[]){4}, (const int64_t[]){2}, 1); /* strided */
        tt_iota(&x, 1);
        tt_set(&w, (double[]){1, 2, 3, -1});
        tt_set(&b, (double[]){10, 20, 30, 40});
        gfp_conv2d_params p = cparams(2, 1, 1, 0, 0, 1, 1);
        CHECK(conv(&x, &w, &b, &y, &p) == GFP_OK);
        CHECK(mismatches(&y, (double[]){11, 12, 13, 14, 22, 24, 26, 28, 45, 48, 51, 54, 35, 34,
                                        33, 32},
                         1e-6) == 0);
        /* groups 2 with two input channels per group: x = [1,2,3,4] (1x1 planes),
         * w[0] = [1, 10] over channels 0,1 -> 21; w[1] = [100, 1000] over 2,3 -> 4300. */
        tt x2 = mk4(dt, 1, 4, 1, 1), w2 = mk4(dt, 2, 2, 1, 1), y2 = mk4(dt, 1, 2, 1, 1);
        tt_iota(&x2, 1);
        tt_set(&w2, (double[]){1, 10, 100, 1000});
        CHECK(conv(&x2, &w2, NULL, &y2, &p) == GFP_OK);
        CHECK(mismatches(&y2, (double[]){21, 4300}, 1e-6) == 0);
        tt_free(&x);
        tt_free(&w);
        tt_free(&y);
        tt_free(&b);
        tt_free(&x2);
        tt_free(&w2);
        tt_free(&y2);
    }
}

static void test_conv_batch_channels(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        /* x[n, c] is a 2x2 plane of the constant (n+1) * 10^c; w[0] = [ones, 0.5s],
         * w[1] = [-ones, zeros]. y[n, 0] = 4 x0 + 2 x1, y[n, 1] = -4 x0. */
        tt x = mk4(dt, 2, 2, 2, 2), w = mk4(dt, 2, 2, 2, 2), y = mk4(dt, 2, 2, 1, 1);
        tt_set(&x, (double[]){1, 1, 1, 1, 10, 10, 10, 10, 2, 2, 2, 2, 20, 20, 20, 20});
        tt_set(&w, (double[]){1, 1, 1, 1, .5, .5, .5, .5, -1, -1, -1, -1, 0, 0, 0, 0});
        gfp_conv2d_params p = cparams(1, 1, 1, 0, 0, 1, 1);
        CHECK(conv(&x, &w, NULL, &y, &p) == GFP_OK);
        CHECK(mismatches(&y, (double[]){24, -4, 48, -8}, 1e-6) == 0);
        tt_free(&x);
        tt_free(&w);
        tt_free(&y);
    }
}

static void test_conv_strided_views(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        /* x = 1..9 stored column-major after 5 unused elements; w = [[1,2],[3,4]]
         * stored transposed; y written into rows of 4 (gaps), bias with stride 3.
         * y[0][0] = 1*1 + 2*2 + 3*4 + 4*5 = 37, then 47, 67, 77; plus bias 0.5. */
        tt x = tt_make(dt, 4, (const int64_t[]){1, 1, 3, 3}, (const int64_t[]){9, 9, 1, 3}, 5);
        tt w = tt_make(dt, 4, (const int64_t[]){1, 1, 2, 2}, (const int64_t[]){4, 4, 1, 2}, 0);
        tt y = tt_make(dt, 4, (const int64_t[]){1, 1, 2, 2}, (const int64_t[]){8, 8, 4, 2}, 1);
        tt b = tt_make(dt, 1, (const int64_t[]){1}, (const int64_t[]){3}, 2);
        tt_iota(&x, 1);
        tt_set(&w, (double[]){1, 2, 3, 4});
        tt_set(&b, (double[]){0.5});
        gfp_conv2d_params p = cparams(1, 1, 1, 0, 0, 1, 1);
        CHECK(conv(&x, &w, &b, &y, &p) == GFP_OK);
        CHECK(mismatches(&y, (double[]){37.5, 47.5, 67.5, 77.5}, 1e-6) == 0);
        CHECK(gap_writes(&y) == 0);
        /* A zero-stride (broadcast) weight: every tap reads the same 1. */
        tt wb = tt_make(dt, 4, (const int64_t[]){1, 1, 2, 2}, (const int64_t[]){0, 0, 0, 0}, 0);
        tt_set(&wb, (double[]){1, 1, 1, 1});
        tt yb = mk4(dt, 1, 1, 2, 2);
        CHECK(conv(&x, &wb, NULL, &yb, &p) == GFP_OK);
        CHECK(mismatches(&yb, (double[]){12, 16, 24, 28}, 1e-6) == 0);
        tt_free(&x);
        tt_free(&w);
        tt_free(&y);
        tt_free(&b);
        tt_free(&wb);
        tt_free(&yb);
    }
}

/* ------------------------------------------------------------ conv2d gradients */
static void test_conv_backward_by_hand(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        gfp_conv2d_params p = cparams(1, 1, 1, 0, 0, 1, 1);
        /* grad_y = [[1,0],[0,10]], w = [[1,2],[3,4]], x is 3x3: grad_x is w placed at
         * (0,0) plus 10 w placed at (1,1): [[1,2,0],[3,14,20],[0,30,40]]. */
        tt gy = mk4(dt, 1, 1, 2, 2), w = mk4(dt, 1, 1, 2, 2), gx = mk4(dt, 1, 1, 3, 3);
        tt_set(&gy, (double[]){1, 0, 0, 10});
        tt_set(&w, (double[]){1, 2, 3, 4});
        CHECK(rd_launch(GFP_OP_CONV2D_BACKWARD_INPUT, TS(&gy.d, &w.d), 2, TS(&gx.d), 1, &p) == GFP_OK);
        CHECK(mismatches(&gx, (double[]){1, 2, 0, 3, 14, 20, 0, 30, 40}, 1e-6) == 0);
        /* grad_w[a][b] = x[a][b] + 10 x[1+a][1+b] with x = 1..9: 51, 62, 84, 95. */
        tt x = mk4(dt, 1, 1, 3, 3), gw = mk4(dt, 1, 1, 2, 2);
        tt_iota(&x, 1);
        CHECK(rd_launch(GFP_OP_CONV2D_BACKWARD_WEIGHT, TS(&gy.d, &x.d), 2, TS(&gw.d), 1, &p) ==
              GFP_OK);
        CHECK(mismatches(&gw, (double[]){51, 62, 84, 95}, 1e-6) == 0);
        /* Stride 2 leaves row/column 2 of a 3x3 input untouched by a 1x1 kernel:
         * grad_x = 2 * grad_y at even positions, 0 elsewhere (written, not NaN). */
        gfp_conv2d_params p2 = cparams(1, 2, 2, 0, 0, 1, 1);
        tt w1 = mk4(dt, 1, 1, 1, 1), gx2 = mk4(dt, 1, 1, 3, 3);
        tt_set(&w1, (double[]){2});
        CHECK(rd_launch(GFP_OP_CONV2D_BACKWARD_INPUT, TS(&gy.d, &w1.d), 2, TS(&gx2.d), 1, &p2) ==
              GFP_OK);
        CHECK(mismatches(&gx2, (double[]){2, 0, 0, 0, 0, 0, 0, 0, 20}, 1e-6) == 0);
        tt_free(&gy);
        tt_free(&w);
        tt_free(&gx);
        tt_free(&x);
        tt_free(&gw);
        tt_free(&w1);
        tt_free(&gx2);
    }
}

typedef struct conv_cfg {
    int n, ci, co, h, w, kh, kw, sh, sw, ph, pw, dh, dw, g;
} conv_cfg;

static const conv_cfg conv_cfgs[] = {
    {2, 3, 4, 5, 6, 3, 2, 1, 1, 0, 0, 1, 1, 1},
    {1, 2, 2, 7, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {2, 4, 6, 8, 7, 3, 2, 2, 3, 2, 1, 2, 1, 2},
    {1, 6, 3, 9, 5, 2, 3, 3, 2, 0, 2, 3, 1, 3},
    {2, 2, 4, 4, 4, 1, 1, 2, 2, 0, 0, 1, 1, 2},
    {1, 4, 4, 6, 6, 3, 3, 1, 1, 3, 3, 2, 2, 4}, /* depthwise, padding > kernel/2 */
};

/* <conv(x, w), gy> == <x, bwd_input(gy, w)> == <w, bwd_weight(gy, x)>. Odd
 * configurations use channels-last views with offsets for every tensor. */
static void conv_adjoint(const conv_cfg *c, int32_t dt, bool permuted, double tol) {
    int ho = (c->h + 2 * c->ph - c->dh * (c->kh - 1) - 1) / c->sh + 1;
    int wo = (c->w + 2 * c->pw - c->dw * (c->kw - 1) - 1) / c->sw + 1;
    int cig = c->ci / c->g;
    tt x, w, y, gy, gx, gw;
    if (permuted) {
        x = mk4_cl(dt, c->n, c->ci, c->h, c->w, 3);
        w = mk4_cl(dt, c->co, cig, c->kh, c->kw, 1);
        y = mk4_cl(dt, c->n, c->co, ho, wo, 2);
        gy = mk4_cl(dt, c->n, c->co, ho, wo, 7);
        gx = mk4_cl(dt, c->n, c->ci, c->h, c->w, 4);
        gw = mk4_cl(dt, c->co, cig, c->kh, c->kw, 5);
    } else {
        x = mk4(dt, c->n, c->ci, c->h, c->w);
        w = mk4(dt, c->co, cig, c->kh, c->kw);
        y = mk4(dt, c->n, c->co, ho, wo);
        gy = mk4(dt, c->n, c->co, ho, wo);
        gx = mk4(dt, c->n, c->ci, c->h, c->w);
        gw = mk4(dt, c->co, cig, c->kh, c->kw);
    }
    tt_fill_rand(&x);
    tt_fill_rand(&w);
    tt_fill_rand(&gy);
    gfp_conv2d_params p = cparams(c->g, c->sh, c->sw, c->ph, c->pw, c->dh, c->dw);
    CHECK(conv(&x, &w, NULL, &y, &p) == GFP_OK);
    CHECK(rd_launch(GFP_OP_CONV2D_BACKWARD_INPUT, TS(&gy.d, &w.d), 2, TS(&gx.d), 1, &p) == GFP_OK);
    CHECK(rd_launch(GFP_OP_CONV2D_BACKWARD_WEIGHT, TS(&gy.d, &x.d), 2, TS(&gw.d), 1, &p) == GFP_OK);
    double d1 = tt_dot(&y, &gy), d2 = tt_dot(&x, &gx), d3 = tt_dot(&w, &gw);
    CHECK_MSG(isfinite(d1) && isfinite(d2) && isfinite(d3) && d1 != 0.0,
              "dots %g %g %g (NaN: an output element was not written)", d1, d2, d3);
    CHECK_CLOSE(d2, d1, tol);
    CHECK_CLOSE(d3, d1, tol);
    tt_free(&x);
    tt_free(&w);
    tt_free(&y);
    tt_free(&gy);
    tt_free(&gx);
    tt_free(&gw);
}

static void test_conv_adjoint(void) {
    for (size_t i = 0; i < sizeof conv_cfgs / sizeof conv_cfgs[0]; i++) {
        conv_adjoint(&conv_cfgs[i], GFP_F64, i % 2 == 1, 1e-12);
        conv_adjoint(&conv_cfgs[i], GFP_F32, i % 2 == 0, 1e-4);
    }
}

/* ------------------------------------------------------------ max pool */
static int index_mismatches(const tt *t, const int64_t *want) {
    double *got = tt_get(t);
    int bad = 0;
    for (int64_t i = 0; i < tt_numel(t); i++)
        if (got[i] != (double)want[i]) {
            fprintf(stderr, "  index %lld: got %.0f, want %lld\n", (long long)i, got[i],
                    (long long)want[i]);
            bad++;
        }
    free(got);
    return bad;
}

static gfp_status max_pool(const tt *x, const tt *y, const tt *ind, const gfp_pool2d_params *p) {
    return rd_launch(GFP_OP_MAX_POOL2D, TS(&x->d), 1, TS(&y->d, &ind->d), 2, p);
}

static const double pool_plane[16] = {1, 5, 2, 0, 3, 4, 8, 7, 9, 6, 1, 1, 2, 0, 3, 11};

static void test_max_pool_by_hand(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        /* Channel 0 = pool_plane, channel 1 = -pool_plane; 2x2 windows, stride 2.
         * ch0: max(1,5,3,4) = 5 @1, max(2,0,8,7) = 8 @6, 9 @8, 11 @15.
         * ch1: -1 @0; 0 @3; 0 @13; -1 @10 (tie with @11: the first wins). */
        tt x = mk4(dt, 1, 2, 4, 4), y = mk4(dt, 1, 2, 2, 2), ind = mk4(GFP_I64, 1, 2, 2, 2);
        double xv[32];
        for (int i = 0; i < 16; i++) {
            xv[i] = pool_plane[i];
            xv[16 + i] = -pool_plane[i];
        }
        tt_set(&x, xv);
        gfp_pool2d_params p = pparams(2, 2, 2, 2, 0, 0, 1, 1, 0, 0);
        CHECK(max_pool(&x, &y, &ind, &p) == GFP_OK);
        CHECK(mismatches(&y, (double[]){5, 8, 9, 11, -1, 0, 0, -1}, 0) == 0);
        CHECK(index_mismatches(&ind, (int64_t[]){1, 6, 8, 15, 0, 3, 13, 10}) == 0);

        /* Padding 1, kernel 3, stride 2 on x = -(1..16): Ho = (4+2-2-1)/2+1 = 2.
         * Padding never wins even though every real value is negative:
         * rows {0,1} x cols {0,1} -> -1 @0; cols {1,2,3} -> -2 @1; rows {1,2,3}: -5 @4, -6 @5. */
        tt xn = mk4(dt, 1, 1, 4, 4), yp = mk4(dt, 1, 1, 2, 2), ip = mk4(GFP_I64, 1, 1, 2, 2);
        double neg[16];
        for (int i = 0; i < 16; i++) neg[i] = -(i + 1);
        tt_set(&xn, neg);
        gfp_pool2d_params pp = pparams(3, 3, 2, 2, 1, 1, 1, 1, 0, 0);
        CHECK(max_pool(&xn, &yp, &ip, &pp) == GFP_OK);
        CHECK(mismatches(&yp, (double[]){-1, -2, -5, -6}, 0) == 0);
        CHECK(index_mismatches(&ip, (int64_t[]){0, 1, 4, 5}) == 0);

        /* Ceil mode on 5x5 = 1..25, kernel 2 stride 2: Ho = ceil(3/2)+1 = 3, the
         * last window holds row/column 4 only. Maxima at rows/cols {1,3,4}. */
        tt x5 = mk4(dt, 1, 1, 5, 5), yc = mk4(dt, 1, 1, 3, 3), ic = mk4(GFP_I64, 1, 1, 3, 3);
        tt_iota(&x5, 1);
        gfp_pool2d_params pc = pparams(2, 2, 2, 2, 0, 0, 1, 1, 1, 0);
        CHECK(max_pool(&x5, &yc, &ic, &pc) == GFP_OK);
        CHECK(mismatches(&yc, (double[]){7, 9, 10, 17, 19, 20, 22, 24, 25}, 0) == 0);
        CHECK(index_mismatches(&ic, (int64_t[]){6, 8, 9, 16, 18, 19, 21, 23, 24}) == 0);
        /* Floor mode gives 2x2 on the same input. */
        tt yf = mk4(dt, 1, 1, 2, 2), iff = mk4(GFP_I64, 1, 1, 2, 2);
        gfp_pool2d_params pf = pparams(2, 2, 2, 2, 0, 0, 1, 1, 0, 0);
        CHECK(max_pool(&x5, &yf, &iff, &pf) == GFP_OK);
        CHECK(mismatches(&yf, (double[]){7, 9, 17, 19}, 0) == 0);

        /* Dilation 2, kernel 2, stride 1 on a 4x4: taps (oh,ow),(oh,ow+2),(oh+2,ow),(oh+2,ow+2).
         * x = [[9,0,0,1],[0,0,0,0],[2,0,3,0],[0,5,0,4]]: 9 @0, 1 @3, 0 @4 (all zero: first), 5 @13. */
        tt xd = mk4(dt, 1, 1, 4, 4), yd = mk4(dt, 1, 1, 2, 2), id = mk4(GFP_I64, 1, 1, 2, 2);
        tt_set(&xd, (double[]){9, 0, 0, 1, 0, 0, 0, 0, 2, 0, 3, 0, 0, 5, 0, 4});
        gfp_pool2d_params pd = pparams(2, 2, 1, 1, 0, 0, 2, 2, 0, 0);
        CHECK(max_pool(&xd, &yd, &id, &pd) == GFP_OK);
        CHECK(mismatches(&yd, (double[]){9, 1, 0, 5}, 0) == 0);
        CHECK(index_mismatches(&id, (int64_t[]){0, 3, 4, 13}) == 0);

        /* NaN wins over larger numbers, as in PyTorch. */
        tt xq = mk4(dt, 1, 1, 2, 2), yq = mk4(dt, 1, 1, 1, 1), iq = mk4(GFP_I64, 1, 1, 1, 1);
        tt_set(&xq, (double[]){1, NAN, 3, 2});
        gfp_pool2d_params pq = pparams(2, 2, 2, 2, 0, 0, 1, 1, 0, 0);
        CHECK(max_pool(&xq, &yq, &iq, &pq) == GFP_OK);
        CHECK(mismatches(&yq, (double[]){NAN}, 0) == 0);
        CHECK(index_mismatches(&iq, (int64_t[]){1}) == 0);

        /* A dilated window that falls wholly in padding (kernel 2, padding 1,
         * dilation 3 on 2x2: taps -1 and 2) gives -inf with index -1. */
        tt xe = mk4(dt, 1, 1, 2, 2), ye = mk4(dt, 1, 1, 1, 1), ie = mk4(GFP_I64, 1, 1, 1, 1);
        tt_set(&xe, (double[]){1, 2, 3, 4});
        gfp_pool2d_params pe = pparams(2, 2, 1, 1, 1, 1, 3, 3, 0, 0);
        CHECK(max_pool(&xe, &ye, &ie, &pe) == GFP_OK);
        CHECK(mismatches(&ye, (double[]){-INFINITY}, 0) == 0);
        CHECK(index_mismatches(&ie, (int64_t[]){-1}) == 0);

        tt *all[] = {&x, &y, &ind, &xn, &yp, &ip, &x5, &yc, &ic, &yf, &iff, &xd, &yd, &id,
                     &xq, &yq, &iq, &xe, &ye, &ie};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_free(all[i]);
    }
}

static void test_max_pool_strided(void) {
    /* Input as a channels-last view, outputs with gaps: same values as by hand. */
    tt x = mk4_cl(GFP_F64, 1, 2, 4, 4, 3);
    tt y = tt_make(GFP_F64, 4, (const int64_t[]){1, 2, 2, 2}, (const int64_t[]){20, 10, 4, 2}, 1);
    tt ind = tt_make(GFP_I64, 4, (const int64_t[]){1, 2, 2, 2}, (const int64_t[]){16, 8, 3, 1}, 2);
    double xv[32];
    for (int i = 0; i < 16; i++) {
        xv[i] = pool_plane[i];
        xv[16 + i] = -pool_plane[i];
    }
    tt_set(&x, xv);
    gfp_pool2d_params p = pparams(2, 2, 2, 2, 0, 0, 1, 1, 0, 0);
    CHECK(max_pool(&x, &y, &ind, &p) == GFP_OK);
    CHECK(mismatches(&y, (double[]){5, 8, 9, 11, -1, 0, 0, -1}, 0) == 0);
    CHECK(index_mismatches(&ind, (int64_t[]){1, 6, 8, 15, 0, 3, 13, 10}) == 0);
    CHECK(gap_writes(&y) == 0);
    CHECK(gap_writes(&ind) == 0);
    tt_free(&x);
    tt_free(&y);
    tt_free(&ind);
}

static void test_max_pool_backward(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        /* The indices of the 2-channel hand case: each gradient lands on its argmax. */
        tt gy = mk4(dt, 1, 2, 2, 2), ind = mk4(GFP_I64, 1, 2, 2, 2), gx = mk4(dt, 1, 2, 4, 4);
        tt_set(&gy, (double[]){1, 2, 3, 4, 10, 20, 30, 40});
        tt_set(&ind, (double[]){1, 6, 8, 15, 0, 3, 13, 10});
        CHECK(rd_launch(GFP_OP_MAX_POOL2D_BACKWARD, TS(&gy.d, &ind.d), 2, TS(&gx.d), 1, NULL) ==
              GFP_OK);
        double want[32] = {0};
        want[1] = 1, want[6] = 2, want[8] = 3, want[15] = 4;
        want[16 + 0] = 10, want[16 + 3] = 20, want[16 + 13] = 30, want[16 + 10] = 40;
        CHECK(mismatches(&gx, want, 0) == 0);

        /* Overlapping windows sharing an argmax accumulate; -1 is skipped. A
         * strided grad_x keeps its gaps. */
        tt gy2 = mk4(dt, 1, 1, 2, 2), ind2 = mk4(GFP_I64, 1, 1, 2, 2);
        tt gx2 = tt_make(dt, 4, (const int64_t[]){1, 1, 3, 3}, (const int64_t[]){18, 18, 6, 2}, 1);
        tt_set(&gy2, (double[]){1, 2, 3, 4});
        tt_set(&ind2, (double[]){5, 5, 0, -1});
        gfp_pool2d_params p = pparams(2, 2, 1, 1, 0, 0, 1, 1, 0, 0); /* passed, not needed */
        CHECK(rd_launch(GFP_OP_MAX_POOL2D_BACKWARD, TS(&gy2.d, &ind2.d), 2, TS(&gx2.d), 1, &p) ==
              GFP_OK);
        CHECK(mismatches(&gx2, (double[]){3, 0, 0, 0, 0, 3, 0, 0, 0}, 0) == 0);
        CHECK(gap_writes(&gx2) == 0);

        /* An index outside the plane is an error naming the op. */
        tt_set(&ind2, (double[]){5, 9, 0, 1});
        CHECK(rd_launch(GFP_OP_MAX_POOL2D_BACKWARD, TS(&gy2.d, &ind2.d), 2, TS(&gx2.d), 1, NULL) ==
              GFP_ERR_INVALID);
        CHECK_CONTAINS(error_text(), "max_pool2d_backward");
        CHECK_CONTAINS(error_text(), "9");
        tt *all[] = {&gy, &ind, &gx, &gy2, &ind2, &gx2};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_free(all[i]);
    }
}

/* Max pooling is linear in x for fixed argmax: <y, gy> == <x, bwd(gy, ind)>. */
static void test_max_pool_adjoint(void) {
    static const int cfgs[][10] = {
        /* n c h w kh kw sh sw ph pw; dilation and ceil below */
        {2, 3, 7, 6, 3, 2, 2, 1, 1, 1},
        {1, 2, 9, 8, 3, 3, 2, 3, 1, 0},
        {2, 1, 5, 7, 2, 3, 1, 2, 0, 1},
    };
    static const int extra[][3] = {{1, 1, 1}, {2, 1, 0}, {2, 2, 1}}; /* dh dw ceil */
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        const int *c = cfgs[i];
        int dh = extra[i][0], dw = extra[i][1], ceil_mode = extra[i][2];
        int64_t ho = 0, wo = 0;
        /* PyTorch's size rule, computed here independently. */
        for (int a = 0; a < 2; a++) {
            int64_t in = c[2 + a], kk = c[4 + a], s = c[6 + a], pad = c[8 + a], d = a ? dw : dh;
            int64_t num = in + 2 * pad - d * (kk - 1) - 1 + (ceil_mode ? s - 1 : 0);
            int64_t o = num / s + 1; /* num >= 0 in these configurations */
            if (ceil_mode && (o - 1) * s >= in + pad) o--;
            *(a ? &wo : &ho) = o;
        }
        tt x = mk4(GFP_F64, c[0], c[1], c[2], c[3]), y = mk4(GFP_F64, c[0], c[1], ho, wo);
        tt ind = mk4(GFP_I64, c[0], c[1], ho, wo), gy = mk4(GFP_F64, c[0], c[1], ho, wo);
        tt gx = mk4_cl(GFP_F64, c[0], c[1], c[2], c[3], 2);
        tt_fill_rand(&x);
        tt_fill_rand(&gy);
        gfp_pool2d_params p = pparams(c[4], c[5], c[6], c[7], c[8], c[9], dh, dw, ceil_mode, 0);
        CHECK(max_pool(&x, &y, &ind, &p) == GFP_OK);
        CHECK(rd_launch(GFP_OP_MAX_POOL2D_BACKWARD, TS(&gy.d, &ind.d), 2, TS(&gx.d), 1, &p) == GFP_OK);
        double d1 = tt_dot(&y, &gy), d2 = tt_dot(&x, &gx);
        CHECK(isfinite(d1) && d1 != 0.0);
        CHECK_CLOSE(d2, d1, 1e-12);
        tt *all[] = {&x, &y, &ind, &gy, &gx};
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++) tt_free(all[j]);
    }
}

/* ------------------------------------------------------------ avg pool */
static gfp_status avg_pool(const tt *x, const tt *y, const gfp_pool2d_params *p) {
    return rd_launch(GFP_OP_AVG_POOL2D, TS(&x->d), 1, TS(&y->d), 1, p);
}

static void test_avg_pool_by_hand(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        /* x = 1..9 (3x3), kernel 2 stride 1: means of 1,2,4,5 = 3, then 4, 6, 7. */
        tt x = mk4(dt, 1, 1, 3, 3), y = mk4(dt, 1, 1, 2, 2);
        tt_iota(&x, 1);
        gfp_pool2d_params p = pparams(2, 2, 1, 1, 0, 0, 1, 1, 0, 1);
        CHECK(avg_pool(&x, &y, &p) == GFP_OK);
        CHECK(mismatches(&y, (double[]){3, 4, 6, 7}, 1e-6) == 0);

        /* Kernel 2, stride 2, padding 1: windows rows {-1,0},{1,2} x the same cols.
         * Sums 1, 2+3 = 5, 4+7 = 11, 5+6+8+9 = 28. Including the padding every
         * divisor is 4; excluding it the divisors are 1, 2, 2, 4. */
        tt yi = mk4(dt, 1, 1, 2, 2), ye = mk4(dt, 1, 1, 2, 2);
        gfp_pool2d_params pi = pparams(2, 2, 2, 2, 1, 1, 1, 1, 0, 1);
        gfp_pool2d_params pe = pparams(2, 2, 2, 2, 1, 1, 1, 1, 0, 0);
        CHECK(avg_pool(&x, &yi, &pi) == GFP_OK);
        CHECK(mismatches(&yi, (double[]){0.25, 1.25, 2.75, 7}, 1e-6) == 0);
        CHECK(avg_pool(&x, &ye, &pe) == GFP_OK);
        CHECK(mismatches(&ye, (double[]){1, 2.5, 5.5, 7}, 1e-6) == 0);

        /* Ceil mode past the padded edge: one row x = 1..6, kernel (1,3), stride
         * (1,2), padding (0,1): Wo = (6+2-3+1)/2+1 = 4 (last start 5 < 6+1).
         * Windows [-1,2) [1,4) [3,6) [5,8); the last is clipped to [5,7) for the
         * padded divisor (2) and to [5,6) for the real one (1).
         * Include pad: 3/3, 9/3, 15/3, 6/2. Exclude: 3/2, 9/3, 15/3, 6/1. */
        tt x6 = mk4(dt, 1, 1, 1, 6), yci = mk4(dt, 1, 1, 1, 4), yce = mk4(dt, 1, 1, 1, 4);
        tt_iota(&x6, 1);
        gfp_pool2d_params pci = pparams(1, 3, 1, 2, 0, 1, 1, 1, 1, 1);
        gfp_pool2d_params pce = pparams(1, 3, 1, 2, 0, 1, 1, 1, 1, 0);
        CHECK(avg_pool(&x6, &yci, &pci) == GFP_OK);
        CHECK(mismatches(&yci, (double[]){1, 3, 5, 3}, 1e-6) == 0);
        CHECK(avg_pool(&x6, &yce, &pce) == GFP_OK);
        CHECK(mismatches(&yce, (double[]){1.5, 3, 5, 6}, 1e-6) == 0);

        /* The same along H: a column x = 1..6. */
        tt xc = mk4(dt, 1, 1, 6, 1), yhi = mk4(dt, 1, 1, 4, 1), yhe = mk4(dt, 1, 1, 4, 1);
        tt_iota(&xc, 1);
        gfp_pool2d_params phi = pparams(3, 1, 2, 1, 1, 0, 1, 1, 1, 1);
        gfp_pool2d_params phe = pparams(3, 1, 2, 1, 1, 0, 1, 1, 1, 0);
        CHECK(avg_pool(&xc, &yhi, &phi) == GFP_OK);
        CHECK(mismatches(&yhi, (double[]){1, 3, 5, 3}, 1e-6) == 0);
        CHECK(avg_pool(&xc, &yhe, &phe) == GFP_OK);
        CHECK(mismatches(&yhe, (double[]){1.5, 3, 5, 6}, 1e-6) == 0);

        /* Avg pool ignores the dilation field (max pool only): 0 is accepted. */
        gfp_pool2d_params pz = pparams(2, 2, 1, 1, 0, 0, 0, 0, 0, 1);
        tt yz = mk4(dt, 1, 1, 2, 2);
        CHECK(avg_pool(&x, &yz, &pz) == GFP_OK);
        CHECK(mismatches(&yz, (double[]){3, 4, 6, 7}, 1e-6) == 0);

        tt *all[] = {&x, &y, &yi, &ye, &x6, &yci, &yce, &xc, &yhi, &yhe, &yz};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_free(all[i]);
    }
}

static void test_avg_pool_backward_by_hand(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = float_dtypes[k];
        /* Kernel 2 stride 1 on 3x3, grad_y = ones: each input gets 1/4 per window
         * that covers it: [[.25,.5,.25],[.5,1,.5],[.25,.5,.25]]. */
        tt gy = mk4(dt, 1, 1, 2, 2), gx = mk4(dt, 1, 1, 3, 3);
        tt_set(&gy, (double[]){1, 1, 1, 1});
        gfp_pool2d_params p = pparams(2, 2, 1, 1, 0, 0, 1, 1, 0, 1);
        CHECK(rd_launch(GFP_OP_AVG_POOL2D_BACKWARD, TS(&gy.d), 1, TS(&gx.d), 1, &p) == GFP_OK);
        CHECK(mismatches(&gx, (double[]){.25, .5, .25, .5, 1, .5, .25, .5, .25}, 1e-6) == 0);
        /* The ceil-mode row above, padding excluded, grad_y = [2, 3, 6, 5]:
         * x0 += 2/2, x1 += 2/2 + 3/3, x2 += 1, x3 += 1 + 2, x4 += 2, x5 += 2 + 5. */
        tt gy4 = mk4(dt, 1, 1, 1, 4), gx6 = mk4(dt, 1, 1, 1, 6);
        tt_set(&gy4, (double[]){2, 3, 6, 5});
        gfp_pool2d_params pce = pparams(1, 3, 1, 2, 0, 1, 1, 1, 1, 0);
        CHECK(rd_launch(GFP_OP_AVG_POOL2D_BACKWARD, TS(&gy4.d), 1, TS(&gx6.d), 1, &pce) == GFP_OK);
        CHECK(mismatches(&gx6, (double[]){1, 2, 1, 3, 2, 7}, 1e-6) == 0);
        tt *all[] = {&gy, &gx, &gy4, &gx6};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_free(all[i]);
    }
}

static void test_avg_pool_adjoint(void) {
    /* n c h w kh kw sh sw ph pw ceil include_pad */
    static const int cfgs[][12] = {
        {2, 3, 7, 6, 3, 2, 2, 1, 1, 1, 0, 1}, {2, 3, 7, 6, 3, 2, 2, 1, 1, 1, 0, 0},
        {1, 2, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1}, {1, 2, 9, 8, 3, 3, 2, 2, 1, 1, 1, 0},
        {1, 2, 6, 7, 4, 3, 3, 2, 2, 1, 1, 1}, {2, 1, 5, 5, 2, 2, 3, 3, 1, 0, 1, 0},
        /* ceil-mode windows that run past the padded edge */
        {1, 2, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1}, {1, 2, 6, 6, 3, 3, 2, 2, 1, 1, 1, 0},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        const int *c = cfgs[i];
        int64_t o[2];
        for (int a = 0; a < 2; a++) {
            int64_t in = c[2 + a], kk = c[4 + a], s = c[6 + a], pad = c[8 + a];
            int64_t num = in + 2 * pad - (kk - 1) - 1 + (c[10] ? s - 1 : 0);
            o[a] = num / s + 1;
            if (c[10] && (o[a] - 1) * s >= in + pad) o[a]--;
        }
        tt x = mk4(GFP_F64, c[0], c[1], c[2], c[3]), y = mk4_cl(GFP_F64, c[0], c[1], o[0], o[1], 1);
        tt gy = mk4(GFP_F64, c[0], c[1], o[0], o[1]);
        tt gx = tt_make(GFP_F64, 4, (const int64_t[]){c[0], c[1], c[2], c[3]},
                        (const int64_t[]){2 * c[1] * c[2] * c[3], 2 * c[2] * c[3], 2 * c[3], 2}, 1);
        tt_fill_rand(&x);
        tt_fill_rand(&gy);
        gfp_pool2d_params p = pparams(c[4], c[5], c[6], c[7], c[8], c[9], 1, 1, c[10], c[11]);
        CHECK(avg_pool(&x, &y, &p) == GFP_OK);
        CHECK(rd_launch(GFP_OP_AVG_POOL2D_BACKWARD, TS(&gy.d), 1, TS(&gx.d), 1, &p) == GFP_OK);
        double d1 = tt_dot(&y, &gy), d2 = tt_dot(&x, &gx);
        CHECK_MSG(isfinite(d1) && isfinite(d2) && d1 != 0.0, "config %zu: dots %g %g", i, d1, d2);
        CHECK_CLOSE(d2, d1, 1e-12);
        CHECK(gap_writes(&gx) == 0);
        tt *all[] = {&x, &y, &gy, &gx};
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++) tt_free(all[j]);
    }
}

/* ------------------------------------------------------------ errors */
#define EXPECT_FAIL(call, status, text)          \
    do {                                         \
        CHECK((call) == (status));               \
        CHECK_CONTAINS(error_text(), (text));      \
    } while (0)

static void test_conv_errors(void) {
    int32_t f = GFP_F32;
    tt x = mk4(f, 1, 2, 3, 3), w = mk4(f, 2, 2, 2, 2), y = mk4(f, 1, 2, 2, 2);
    tt_fill_rand(&x);
    tt_fill_rand(&w);
    gfp_conv2d_params p = cparams(1, 1, 1, 0, 0, 1, 1);
    CHECK(conv(&x, &w, NULL, &y, &p) == GFP_OK);

    gfp_conv2d_params bad = cparams(0, 1, 1, 0, 0, 1, 1);
    EXPECT_FAIL(conv(&x, &w, NULL, &y, &bad), GFP_ERR_INVALID, "groups");
    CHECK_CONTAINS(error_text(), "conv2d");
    bad = cparams(1, 0, 1, 0, 0, 1, 1);
    EXPECT_FAIL(conv(&x, &w, NULL, &y, &bad), GFP_ERR_INVALID, "stride");
    bad = cparams(1, 1, 1, 0, 0, 1, 0);
    EXPECT_FAIL(conv(&x, &w, NULL, &y, &bad), GFP_ERR_INVALID, "dilation");
    bad = cparams(1, 1, 1, -1, 0, 1, 1);
    EXPECT_FAIL(conv(&x, &w, NULL, &y, &bad), GFP_ERR_INVALID, "padding");
    EXPECT_FAIL(conv(&x, &w, NULL, &y, NULL), GFP_ERR_INVALID, "conv2d");
    gfp_conv2d_params small = p;
    small.struct_size = 8;
    EXPECT_FAIL(conv(&x, &w, NULL, &y, &small), GFP_ERR_INVALID, "struct_size");

    /* Output sizes that do not match the formula (2x2 expected). */
    tt y3 = mk4(f, 1, 2, 3, 3);
    EXPECT_FAIL(conv(&x, &w, NULL, &y3, &p), GFP_ERR_INVALID, "[1, 2, 2, 2]");
    CHECK_CONTAINS(error_text(), "y");
    /* Ci = 2 with groups 2 needs w dim 1 = 1, and Co = 3 is not divisible by 2. */
    gfp_conv2d_params g2 = cparams(2, 1, 1, 0, 0, 1, 1);
    EXPECT_FAIL(conv(&x, &w, NULL, &y, &g2), GFP_ERR_INVALID, "Ci/groups");
    tt w3 = mk4(f, 3, 1, 2, 2), y32 = mk4(f, 1, 3, 2, 2);
    EXPECT_FAIL(conv(&x, &w3, NULL, &y32, &g2), GFP_ERR_INVALID, "divisible");
    tt x3 = mk4(f, 1, 3, 3, 3);
    gfp_conv2d_params g3 = cparams(2, 1, 1, 0, 0, 1, 1);
    EXPECT_FAIL(conv(&x3, &w3, NULL, &y32, &g3), GFP_ERR_INVALID, "divisible");
    /* A kernel larger than the padded input. */
    tt wbig = mk4(f, 2, 2, 4, 4);
    EXPECT_FAIL(conv(&x, &wbig, NULL, &y, &p), GFP_ERR_INVALID, "larger than the padded input");
    /* A bias of the wrong length, a rank-3 input. */
    tt b3 = tt_make(f, 1, (const int64_t[]){3}, NULL, 0);
    EXPECT_FAIL(conv(&x, &w, &b3, &y, &p), GFP_ERR_INVALID, "bias");
    tt x3d = tt_make(f, 3, (const int64_t[]){2, 3, 3}, NULL, 0);
    EXPECT_FAIL(conv(&x3d, &w, NULL, &y, &p), GFP_ERR_INVALID, "rank 4");
    /* Wrong input count. */
    EXPECT_FAIL(rd_launch(GFP_OP_CONV2D, TS(&x.d), 1, TS(&y.d), 1, &p), GFP_ERR_INVALID, "conv2d");
    /* Backward: grad_y must have the size the formula gives for grad_x. */
    tt gx = mk4(f, 1, 2, 4, 4);
    EXPECT_FAIL(rd_launch(GFP_OP_CONV2D_BACKWARD_INPUT, TS(&y.d, &w.d), 2, TS(&gx.d), 1, &p),
                GFP_ERR_INVALID, "grad_y");
    CHECK_CONTAINS(error_text(), "conv2d_backward_input");
    tt gw = mk4(f, 2, 2, 3, 3);
    EXPECT_FAIL(rd_launch(GFP_OP_CONV2D_BACKWARD_WEIGHT, TS(&y.d, &x.d), 2, TS(&gw.d), 1, &p),
                GFP_ERR_INVALID, "conv2d_backward_weight");

    /* Unsupported dtypes: integer tensors and mixed precision. */
    tt xi = mk4(GFP_I32, 1, 2, 3, 3), wi = mk4(GFP_I32, 2, 2, 2, 2), yi = mk4(GFP_I32, 1, 2, 2, 2);
    EXPECT_FAIL(conv(&xi, &wi, NULL, &yi, &p), GFP_ERR_UNSUPPORTED, "conv2d");
    CHECK_CONTAINS(error_text(), "i32");
    tt wd = mk4(GFP_F64, 2, 2, 2, 2);
    EXPECT_FAIL(conv(&x, &wd, NULL, &y, &p), GFP_ERR_UNSUPPORTED, "f64");
    EXPECT_FAIL(rd_launch(GFP_OP_CONV2D_BACKWARD_INPUT, TS(&yi.d, &wi.d), 2, TS(&xi.d), 1, &p),
                GFP_ERR_UNSUPPORTED, "i32");
    CHECK_CONTAINS(error_text(), "conv2d_backward_input");

    tt *all[] = {&x, &w, &y, &y3, &w3, &y32, &x3, &wbig, &b3, &x3d, &gx, &gw, &xi, &wi, &yi, &wd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_free(all[i]);
}

static void test_pool_errors(void) {
    int32_t f = GFP_F64;
    tt x = mk4(f, 1, 1, 4, 4), y = mk4(f, 1, 1, 2, 2), ind = mk4(GFP_I64, 1, 1, 2, 2);
    tt_fill_rand(&x);
    gfp_pool2d_params p = pparams(2, 2, 2, 2, 0, 0, 1, 1, 0, 0);
    CHECK(max_pool(&x, &y, &ind, &p) == GFP_OK);

    /* Padding over half the kernel (PyTorch's rule), for both kinds. */
    gfp_pool2d_params bad = pparams(3, 3, 2, 2, 2, 0, 1, 1, 0, 0);
    EXPECT_FAIL(max_pool(&x, &y, &ind, &bad), GFP_ERR_INVALID, "half the kernel");
    CHECK_CONTAINS(error_text(), "max_pool2d");
    EXPECT_FAIL(avg_pool(&x, &y, &bad), GFP_ERR_INVALID, "half the kernel");
    CHECK_CONTAINS(error_text(), "avg_pool2d");
    bad = pparams(2, 2, 2, 2, 0, 2, 1, 1, 0, 0);
    EXPECT_FAIL(max_pool(&x, &y, &ind, &bad), GFP_ERR_INVALID, "padding");
    bad = pparams(0, 2, 2, 2, 0, 0, 1, 1, 0, 0);
    EXPECT_FAIL(max_pool(&x, &y, &ind, &bad), GFP_ERR_INVALID, "kernel");
    bad = pparams(2, 2, 2, 0, 0, 0, 1, 1, 0, 0);
    EXPECT_FAIL(avg_pool(&x, &y, &bad), GFP_ERR_INVALID, "stride");
    bad = pparams(2, 2, 2, 2, 0, 0, 0, 1, 0, 0);
    EXPECT_FAIL(max_pool(&x, &y, &ind, &bad), GFP_ERR_INVALID, "dilation");
    EXPECT_FAIL(max_pool(&x, &y, &ind, NULL), GFP_ERR_INVALID, "max_pool2d");

    /* Output sizes: 3x3 given, 2x2 needed. The ceil-mode rule: H = W = 3,
     * kernel 2, stride 2, padding 1 gives 2, not 3 (a third window would start
     * in the right padding). */
    tt y3 = mk4(f, 1, 1, 3, 3), i3 = mk4(GFP_I64, 1, 1, 3, 3);
    EXPECT_FAIL(max_pool(&x, &y3, &i3, &p), GFP_ERR_INVALID, "[1, 1, 2, 2]");
    EXPECT_FAIL(avg_pool(&x, &y3, &p), GFP_ERR_INVALID, "[1, 1, 2, 2]");
    tt x33 = mk4(f, 1, 1, 3, 3);
    tt_fill_rand(&x33);
    gfp_pool2d_params pc = pparams(2, 2, 2, 2, 1, 1, 1, 1, 1, 0);
    EXPECT_FAIL(max_pool(&x33, &y3, &i3, &pc), GFP_ERR_INVALID, "[1, 1, 2, 2]");
    CHECK(max_pool(&x33, &y, &ind, &pc) == GFP_OK);
    /* Input too small for the kernel. */
    tt x11 = mk4(f, 1, 1, 1, 1);
    gfp_pool2d_params p3 = pparams(3, 3, 1, 1, 0, 0, 1, 1, 0, 0);
    tt y11 = mk4(f, 1, 1, 1, 1), i11 = mk4(GFP_I64, 1, 1, 1, 1);
    EXPECT_FAIL(max_pool(&x11, &y11, &i11, &p3), GFP_ERR_INVALID, "too small");
    /* Backward shape checks. */
    tt gx_bad = mk4(f, 1, 2, 4, 4);
    EXPECT_FAIL(rd_launch(GFP_OP_MAX_POOL2D_BACKWARD, TS(&y.d, &ind.d), 2, TS(&gx_bad.d), 1, NULL),
                GFP_ERR_INVALID, "max_pool2d_backward");
    EXPECT_FAIL(rd_launch(GFP_OP_MAX_POOL2D_BACKWARD, TS(&y.d, &i3.d), 2, TS(&x.d), 1, NULL),
                GFP_ERR_INVALID, "indices");
    EXPECT_FAIL(rd_launch(GFP_OP_AVG_POOL2D_BACKWARD, TS(&y3.d), 1, TS(&x.d), 1, &p), GFP_ERR_INVALID,
                "avg_pool2d_backward");

    /* Unsupported dtypes. */
    tt xi = mk4(GFP_I32, 1, 1, 4, 4), yi = mk4(GFP_I32, 1, 1, 2, 2);
    EXPECT_FAIL(max_pool(&xi, &yi, &ind, &p), GFP_ERR_UNSUPPORTED, "max_pool2d");
    CHECK_CONTAINS(error_text(), "i32");
    EXPECT_FAIL(avg_pool(&xi, &yi, &p), GFP_ERR_UNSUPPORTED, "avg_pool2d");
    CHECK_CONTAINS(error_text(), "i32");
    tt i32ind = mk4(GFP_I32, 1, 1, 2, 2);
    EXPECT_FAIL(max_pool(&x, &y, &i32ind, &p), GFP_ERR_UNSUPPORTED, "i64");
    tt yf = mk4(GFP_F32, 1, 1, 2, 2);
    EXPECT_FAIL(avg_pool(&x, &yf, &p), GFP_ERR_UNSUPPORTED, "f32");
    /* Wrong counts. */
    EXPECT_FAIL(rd_launch(GFP_OP_MAX_POOL2D, TS(&x.d), 1, TS(&y.d), 1, &p), GFP_ERR_INVALID,
                "max_pool2d");

    tt *all[] = {&x, &y, &ind, &y3, &i3, &x33, &x11, &y11, &i11, &gx_bad, &xi, &yi, &i32ind, &yf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_free(all[i]);
}

/* ------------------------------------------------------------ main */
int main(int argc, char **argv) {
    if (!rd_open(argc, argv)) return 1;
    RUN(test_support);
    RUN(test_conv_basic);
    RUN(test_conv_padding);
    RUN(test_conv_stride_dilation);
    RUN(test_conv_groups_bias);
    RUN(test_conv_batch_channels);
    RUN(test_conv_strided_views);
    RUN(test_conv_backward_by_hand);
    RUN(test_conv_adjoint);
    RUN(test_max_pool_by_hand);
    RUN(test_max_pool_strided);
    RUN(test_max_pool_backward);
    RUN(test_max_pool_adjoint);
    RUN(test_avg_pool_by_hand);
    RUN(test_avg_pool_backward_by_hand);
    RUN(test_avg_pool_adjoint);
    RUN(test_conv_errors);
    RUN(test_pool_errors);

    rd_close();
    CHECK_MSG(log_problems == 0, "the plugin logged %d warning(s)/error(s), e.g. leaked buffers",
              log_problems);
    return CHECK_REPORT();
}
