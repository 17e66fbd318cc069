/* SPDX-License-Identifier: BSD-3-Clause */
/* f16 and bf16 as compute dtypes: conversions (round to nearest even, NaN
 * kept, f16 overflow and subnormals), PyTorch's promotion, and the ops of
 * every family in f16/bf16 against the same op in f32 on the same (exactly
 * representable) values, rounded once: elementwise within 1 ulp, reductions,
 * matmul, norms, conv, pooling and losses within 2 ulps (the reference sums
 * in double, an f32 sum of these lengths is exact to far below a 16-bit ulp).
 * Gradients in these dtypes: the dtype of the tensor, close to f32's.
 * Every tensor lives in main's scope (gf_scope_begin): none is released here. */
#include "interop/interop_test.h" /* graft.h, check.h, a private temporary directory */


static const gf_dtype LOWS[2] = {GF_BF16, GF_F16};

static gf_tensor *vec(const double *v, int64_t n, gf_dtype dt) {
    gf_tensor *t = gf_from_data(v, &n, 1, GF_F64, NULL);
    gf_tensor *r = gf_to_dtype(t, dt);
    return r;
}

static double item(const gf_tensor *t) {
    double v = NAN;
    CHECK(t && gf_tensor_item(t, &v) == GF_OK);
    return v;
}

/* The elements of t as doubles (t any real dtype); caller frees. */
static double *values(const gf_tensor *t, int64_t *n) {
    gf_tensor *d = gf_to_dtype(t, GF_F64);
    gf_tensor *c = d ? gf_contiguous(d) : NULL;
    *n = c ? gf_tensor_numel(c) : 0;
    double *v = calloc((size_t)(*n ? *n : 1), sizeof *v);
    if (c) CHECK(gf_tensor_to_host(c, v, (size_t)*n * sizeof *v) == GF_OK);
    return v;
}

/* One unit in the last place of a value of dtype dt near b. */
static double ulp(gf_dtype dt, double b) {
    int bits = dt == GF_BF16 ? 8 : 11, min_exp = dt == GF_BF16 ? -126 : -14;
    int e = b == 0 ? min_exp : (int)floor(log2(fabs(b)));
    if (e < min_exp) e = min_exp;
    return ldexp(1.0, e - bits + 1);
}

/* Every element of got (dtype dt) within k ulps of want (f32, rounded to dt). */
static void check_ulps(const char *what, const gf_tensor *got, const gf_tensor *want32, gf_dtype dt,
                       double k) {
    CHECK_MSG(got && gf_tensor_dtype(got) == dt, "%s: dtype", what);
    if (!got || !want32) return;
    gf_tensor *want = gf_to_dtype(want32, dt);
    int64_t n1, n2;
    double *a = values(got, &n1), *b = values(want, &n2);
    CHECK_MSG(n1 == n2, "%s: %lld vs %lld elements", what, (long long)n1, (long long)n2);
    int bad = 0;
    for (int64_t i = 0; i < n1 && i < n2; i++) {
        bool ok = (isnan(a[i]) && isnan(b[i])) || a[i] == b[i] ||
                  fabs(a[i] - b[i]) <= k * ulp(dt, b[i]);
        if (!ok && bad++ < 3)
            fprintf(stderr, "%s (%s) [%lld]: %.9g vs %.9g\n", what, gf_dtype_name(dt),
                    (long long)i, a[i], b[i]);
    }
    CHECK_MSG(bad == 0, "%s (%s): %d elements off", what, gf_dtype_name(dt), bad);
    free(a);
    free(b);
}

/* Random values of shape sizes that dt holds exactly, as dt and as f32. */
static void rand_pair(const int64_t *sizes, int rank, gf_dtype dt, double lo, double hi,
                      gf_tensor **h, gf_tensor **f) {
    gf_tensor *r = gf_rand(sizes, rank, GF_F32, NULL);
    gf_tensor *s = gf_add_scalar(gf_mul_scalar(r, hi - lo), lo);
    *h = gf_to_dtype(s, dt);
    *f = gf_to_dtype(*h, GF_F32);
}

/* conv2d (padding 1) and both of its gradients in dt against f32 on the
 * same values, within 2 ulps; weights drawn from [-wmax, wmax]. */
static void check_conv(const char *what, gf_dtype dt, const int64_t *sx, const int64_t *sk,
                       double wmax) {
    gf_tensor *ih, *if_, *kh, *kf;
    rand_pair(sx, 4, dt, -1, 1, &ih, &if_);
    rand_pair(sk, 4, dt, -wmax, wmax, &kh, &kf);
    gf_conv2d_opts co = {.padding = {1, 1}};
    gf_tensor *yf = gf_conv2d(if_, kf, NULL, &co);
    char name[128];
    snprintf(name, sizeof name, "conv2d, %s", what);
    check_ulps(name, gf_conv2d(ih, kh, NULL, &co), yf, dt, 2);
    gf_tensor *gh = gf_to_dtype(yf, dt), *gf = gf_to_dtype(gh, GF_F32);
    snprintf(name, sizeof name, "conv2d_backward_input, %s", what);
    check_ulps(name, gf_conv2d_backward_input(gh, kh, sx, &co),
               gf_conv2d_backward_input(gf, kf, sx, &co), dt, 2);
    snprintf(name, sizeof name, "conv2d_backward_weight, %s", what);
    check_ulps(name, gf_conv2d_backward_weight(gh, ih, sk, &co),
               gf_conv2d_backward_weight(gf, if_, sk, &co), dt, 2);
}

static void test_conversions(void) {
    /* bf16: 1 + 2^-8 is a tie -> even (1.0); 1 + 3*2^-8 a tie -> 1 + 2^-6 */
    double v[] = {1.0 + 1.0 / 256, 1.0 + 3.0 / 256, NAN, -0.0, 3.0e38, 1.0e-40};
    gf_tensor *b = vec(v, 6, GF_BF16);
    int64_t n;
    double *r = values(b, &n);
    CHECK(r[0] == 1.0);
    CHECK(r[1] == 1.0 + 4.0 / 256);
    CHECK(isnan(r[2]));
    CHECK(r[3] == 0 && signbit(r[3]));
    CHECK(r[4] == 2.9975739e38 || fabs(r[4] - 3.0e38) < 2e36);
    CHECK(r[5] > 0 && r[5] < 1.2e-38); /* bf16 keeps f32's subnormals */
    free(r);
    /* f16: max 65504, 65520 rounds to inf, 2^-24 the smallest subnormal,
     * 1 + 2^-11 a tie -> 1.0, 1 + 3*2^-11 -> 1 + 2^-9 */
    double w[] = {65504.0, 65520.0, ldexp(1.0, -24), ldexp(1.0, -26), 1.0 + ldexp(1.0, -11),
                  1.0 + 3 * ldexp(1.0, -11), NAN, -70000.0};
    gf_tensor *h = vec(w, 8, GF_F16);
    r = values(h, &n);
    CHECK(r[0] == 65504.0);
    CHECK(isinf(r[1]) && r[1] > 0);
    CHECK(r[2] == ldexp(1.0, -24));
    CHECK(r[3] == 0.0);
    CHECK(r[4] == 1.0);
    CHECK(r[5] == 1.0 + ldexp(1.0, -9));
    CHECK(isnan(r[6]));
    CHECK(isinf(r[7]) && r[7] < 0);
    free(r);
    /* .item and element reads */
    gf_tensor *one = gf_full(NULL, 0, 0.1, GF_F16, NULL);
    CHECK(item(one) == 0.0999755859375);
    int64_t idx[1] = {5};
    double x = 0;
    CHECK(gf_tensor_get(h, idx, &x) == GF_OK && x == 1.0 + ldexp(1.0, -9));
}

static void test_promotion(void) {
    int64_t n = 3;
    gf_tensor *b = gf_ones(&n, 1, GF_BF16, NULL), *h = gf_ones(&n, 1, GF_F16, NULL);
    gf_tensor *i = gf_ones(&n, 1, GF_I32, NULL), *f = gf_ones(&n, 1, GF_F32, NULL);
    gf_tensor *bh = gf_add(b, h), *ih = gf_mul(i, h), *bs = gf_mul_scalar(b, 0.1);
    gf_tensor *bf = gf_add(b, f), *hb = gf_div(h, i);
    CHECK(bh && gf_tensor_dtype(bh) == GF_F32);    /* bf16 with f16 -> f32 */
    CHECK(ih && gf_tensor_dtype(ih) == GF_F16);    /* integer with f16 -> f16 */
    CHECK(bs && gf_tensor_dtype(bs) == GF_BF16);   /* a double scalar keeps bf16 */
    CHECK(bf && gf_tensor_dtype(bf) == GF_F32);
    CHECK(hb && gf_tensor_dtype(hb) == GF_F16);
    CHECK(bs && item(gf_sum(bs, NULL, 0, false)) == 0.30078125); /* 3 * bf16(0.1), rounded */
}

typedef gf_tensor *(*un_fn)(const gf_tensor *);
typedef gf_tensor *(*bin_fn)(const gf_tensor *, const gf_tensor *);

static void test_elementwise(void) {
    static const struct { const char *name; un_fn f; double lo, hi; } un[] = {
        {"exp", gf_exp, -3, 3},   {"log", gf_log, 0.1, 9},       {"tanh", gf_tanh, -3, 3},
        {"sigmoid", gf_sigmoid, -5, 5}, {"sqrt", gf_sqrt, 0, 9}, {"relu", gf_relu, -2, 2},
        {"neg", gf_neg, -2, 2},   {"sin", gf_sin, -3, 3},        {"abs", gf_abs, -2, 2}};
    static const struct { const char *name; bin_fn f; } bin[] = {
        {"add", gf_add}, {"sub", gf_sub}, {"mul", gf_mul}, {"div", gf_div},
        {"maximum", gf_maximum}, {"pow", gf_pow}};
    int64_t sz[2] = {7, 33};
    for (int d = 0; d < 2; d++) {
        gf_dtype dt = LOWS[d];
        for (size_t k = 0; k < sizeof un / sizeof un[0]; k++) {
            gf_tensor *h, *f;
            rand_pair(sz, 2, dt, un[k].lo, un[k].hi, &h, &f);
            gf_tensor *yh = un[k].f(h), *yf = un[k].f(f);
            check_ulps(un[k].name, yh, yf, dt, 1);
        }
        for (size_t k = 0; k < sizeof bin / sizeof bin[0]; k++) {
            gf_tensor *ah, *af, *bh, *bf;
            rand_pair(sz, 2, dt, 0.25, 2, &ah, &af);
            rand_pair(sz + 1, 1, dt, 0.25, 2, &bh, &bf); /* broadcast over rows */
            gf_tensor *yh = bin[k].f(ah, bh), *yf = bin[k].f(af, bf);
            check_ulps(bin[k].name, yh, yf, dt, 1);
        }
        /* comparisons and where on 16-bit values */
        gf_tensor *ah, *af;
        rand_pair(sz, 2, dt, -1, 1, &ah, &af);
        gf_tensor *mh = gf_gt_scalar(ah, 0.0), *mf = gf_gt_scalar(af, 0.0);
        gf_tensor *eq = gf_eq(mh, mf), *all = eq ? gf_all(eq, NULL, 0, false) : NULL;
        CHECK(all && item(all) == 1.0);
        gf_tensor *wh = gf_where(mh, ah, gf_neg(ah));
        check_ulps("where", wh, gf_abs(af), dt, 0);
    }
}

/* Long tensors (a few chunks of cpu_onednn's 16-bit elementwise path, and
 * a ragged last one), a broadcast scalar, an in-place op, a transposed
 * input, and matmul / conv with a broadcast batch and a strided view, each
 * against the same op in f32 rounded once. */
static void test_long(void) {
    const int64_t n = 3 * 16384 + 1234;
    for (int d = 0; d < 2; d++) {
        gf_dtype dt = LOWS[d];
        gf_tensor *ah, *af, *bh, *bf;
        rand_pair(&n, 1, dt, -2, 2, &ah, &af);
        rand_pair(&n, 1, dt, 0.25, 2, &bh, &bf);
        check_ulps("long relu", gf_relu(ah), gf_relu(af), dt, 1);
        check_ulps("long tanh", gf_tanh(ah), gf_tanh(af), dt, 1);
        check_ulps("long exp", gf_exp(ah), gf_exp(af), dt, 1);
        check_ulps("long add", gf_add(ah, bh), gf_add(af, bf), dt, 1);
        check_ulps("long div", gf_div(ah, bh), gf_div(af, bf), dt, 1);
        check_ulps("long mul_scalar", gf_mul_scalar(ah, 1.7), gf_mul_scalar(af, 1.7), dt, 1);
        check_ulps("long le", gf_to_dtype(gf_le(ah, bh), dt),
                   gf_to_dtype(gf_le(af, bf), GF_F32), dt, 0);
        gf_tensor *ch = gf_clone(ah), *cf = gf_clone(af);
        CHECK(ch && cf && gf_mul_(ch, bh) == GF_OK && gf_mul_(cf, bf) == GF_OK);
        check_ulps("long mul_", ch, cf, dt, 1);
        /* a transposed view: the whole-tensor path */
        int64_t s2[2] = {130, 420};
        gf_tensor *mh, *mf;
        rand_pair(s2, 2, dt, -2, 2, &mh, &mf);
        gf_tensor *th = gf_transpose(mh, 0, 1), *tf = gf_transpose(mf, 0, 1);
        check_ulps("transposed sigmoid", gf_sigmoid(th), gf_sigmoid(tf), dt, 1);
        check_ulps("transposed sum", gf_sum(th, (int[]){1}, 1, false),
                   gf_sum(tf, (int[]){1}, 1, false), dt, 1);
        /* matmul: a batch broadcast, a transposed operand */
        int64_t sa[3] = {3, 40, 130}, sb[2] = {130, 50};
        gf_tensor *xh, *xf, *wh, *wf;
        rand_pair(sa, 3, dt, -1, 1, &xh, &xf);
        rand_pair(sb, 2, dt, -1, 1, &wh, &wf);
        check_ulps("batched matmul", gf_matmul(xh, wh), gf_matmul(xf, wf), dt, 2);
        check_ulps("matmul x^T", gf_matmul(th, wh), gf_matmul(tf, wf), dt, 2);
        /* conv2d and both gradients */
        check_conv("8 channels", dt, (const int64_t[]){4, 8, 12, 12},
                   (const int64_t[]){6, 8, 3, 3}, 1);
    }
}

static void test_families(void) {
    for (int d = 0; d < 2; d++) {
        gf_dtype dt = LOWS[d];
        int64_t s2[2] = {6, 40}, sw[2] = {40, 9};
        gf_tensor *xh, *xf, *wh, *wf;
        rand_pair(s2, 2, dt, -1, 1, &xh, &xf);
        rand_pair(sw, 2, dt, -1, 1, &wh, &wf);
        int dims1[1] = {1};
        struct { const char *name; gf_tensor *h, *f; double k; } c[] = {
            {"sum", gf_sum(xh, dims1, 1, false), gf_sum(xf, dims1, 1, false), 1},
            {"mean", gf_mean(xh, NULL, 0, false), gf_mean(xf, NULL, 0, false), 1},
            {"amax", gf_amax(xh, dims1, 1, false), gf_amax(xf, dims1, 1, false), 0},
            {"matmul", gf_matmul(xh, wh), gf_matmul(xf, wf), 1},
            {"softmax", gf_softmax(xh, 1), gf_softmax(xf, 1), 2},
            {"log_softmax", gf_log_softmax(xh, 1), gf_log_softmax(xf, 1), 2},
            {"layer_norm", gf_layer_norm(xh, 1, NULL, NULL, 1e-5, NULL, NULL),
             gf_layer_norm(xf, 1, NULL, NULL, 1e-5, NULL, NULL), 2},
            {"cumsum", gf_cumsum(xh, 1), gf_cumsum(xf, 1), 1},
            {"mse_loss", gf_mse_loss(xh, gf_neg(xh), GF_REDUCTION_MEAN),
             gf_mse_loss(xf, gf_neg(xf), GF_REDUCTION_MEAN), 2},
        };
        for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
            check_ulps(c[k].name, c[k].h, c[k].f, dt, c[k].k);
        }
        /* conv2d and pooling */
        int64_t sx[4] = {2, 3, 8, 8}, sk[4] = {4, 3, 3, 3}, sb[1] = {4};
        gf_tensor *ih, *if_, *kh, *kf, *bh, *bf;
        rand_pair(sx, 4, dt, -1, 1, &ih, &if_);
        rand_pair(sk, 4, dt, -1, 1, &kh, &kf);
        rand_pair(sb, 1, dt, -1, 1, &bh, &bf);
        gf_conv2d_opts co = {.padding = {1, 1}};
        gf_tensor *ch = gf_conv2d(ih, kh, bh, &co), *cf = gf_conv2d(if_, kf, bf, &co);
        check_ulps("conv2d", ch, cf, dt, 2);
        /* 27 taps: cpu_onednn's direct kernel for few input taps, both ways */
        gf_tensor *gyh = gf_to_dtype(cf, dt), *gyf = gf_to_dtype(gyh, GF_F32);
        check_ulps("conv2d_backward_weight, few taps", gf_conv2d_backward_weight(gyh, ih, sk, &co),
                   gf_conv2d_backward_weight(gyf, if_, sk, &co), dt, 2);
        gf_pool2d_opts po = {.kernel = {2, 2}};
        gf_tensor *ph = gf_max_pool2d(ih, &po, NULL), *pf = gf_max_pool2d(if_, &po, NULL);
        check_ulps("max_pool2d", ph, pf, dt, 0);
        gf_tensor *ah = gf_avg_pool2d(ih, &po), *af = gf_avg_pool2d(if_, &po);
        check_ulps("avg_pool2d", ah, af, dt, 1);
        /* cross entropy: logits in dt, i64 targets */
        double tv[6] = {0, 3, 8, 1, 2, 5};
        gf_tensor *tt = vec(tv, 6, GF_I64);
        gf_tensor *eh = gf_cross_entropy(xh, tt, NULL, GF_REDUCTION_MEAN, -100, 0.0);
        gf_tensor *ef = gf_cross_entropy(xf, tt, NULL, GF_REDUCTION_MEAN, -100, 0.0);
        check_ulps("cross_entropy", eh, ef, dt, 2);
    }
}

/* got and want (both dt) hold the same bits. */
static void check_bits(const char *what, const gf_tensor *got, const gf_tensor *want, gf_dtype dt) {
    CHECK_MSG(got && want && gf_tensor_dtype(got) == dt && gf_tensor_dtype(want) == dt, "%s: dtype",
              what);
    if (!got || !want) return;
    gf_tensor *a = gf_contiguous(got), *b = gf_contiguous(want);
    int64_t n = gf_tensor_numel(a);
    CHECK_MSG(n == gf_tensor_numel(b), "%s: sizes", what);
    uint16_t *x = calloc((size_t)n + 1, 2), *y = calloc((size_t)n + 1, 2);
    CHECK(gf_tensor_to_host(a, x, (size_t)n * 2) == GF_OK);
    CHECK(gf_tensor_to_host(b, y, (size_t)n * 2) == GF_OK);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (x[i] != y[i] && bad++ < 3)
            fprintf(stderr, "%s (%s) [%lld]: 0x%04x vs 0x%04x\n", what, gf_dtype_name(dt),
                    (long long)i, x[i], y[i]);
    CHECK_MSG(bad == 0, "%s (%s): %d elements differ", what, gf_dtype_name(dt), bad);
    free(x), free(y);
}

/* The 16-bit kernels a plugin may run on 16-bit storage itself (cpu_onednn:
 * ReLU and its gradient, 2x2 max pooling both ways, bias sums, the nChw16c
 * transposes around its bf16 convolutions), on shapes that leave partial
 * vectors and channel blocks, and on signed zeros, infinities and NaN: the
 * exact ops bit for bit against the f32 op on the same values, rounded. */
static void test_native16(void) {
    for (int d = 0; d < 2; d++) {
        gf_dtype dt = LOWS[d];
        /* special values, 37 of them (a vector and a tail) */
        double sp[37];
        const double base[9] = {-0.0, 0.0, -1.5, 2.0, NAN, -NAN, INFINITY, -INFINITY, 1e-3};
        for (int i = 0; i < 37; i++) sp[i] = base[i % 9] * (i % 2 ? 1 : 3);
        gf_tensor *sh = vec(sp, 37, dt), *sf = gf_to_dtype(sh, GF_F32);
        check_bits("relu, special values", gf_relu(sh), gf_to_dtype(gf_relu(sf), dt), dt);
        gf_tensor *gsh = gf_ones_like(sh), *gsf = gf_to_dtype(gsh, GF_F32);
        gf_tensor_set_requires_grad(sh, true);
        gf_tensor_set_requires_grad(sf, true);
        CHECK(gf_backward(gf_relu(sh), gsh, NULL) == GF_OK);
        CHECK(gf_backward(gf_relu(sf), gsf, NULL) == GF_OK);
        check_bits("relu_backward, special values", gf_tensor_grad(sh),
                   gf_to_dtype(gf_tensor_grad(sf), dt), dt);

        int64_t sx[4] = {3, 20, 8, 10}; /* 20 channels, planes of 80 and 20 */
        gf_tensor *xh, *xf;
        rand_pair(sx, 4, dt, -1, 1, &xh, &xf);
        gf_tensor *gyh, *gyf;
        rand_pair(sx, 4, dt, -1, 1, &gyh, &gyf);
        gf_tensor_set_requires_grad(xh, true);
        gf_tensor_set_requires_grad(xf, true);
        gf_pool2d_opts po = {.kernel = {2, 2}};
        gf_tensor *rh = gf_relu(xh), *rf = gf_relu(xf);
        check_bits("relu", rh, gf_to_dtype(rf, dt), dt);
        gf_tensor *ph = gf_max_pool2d(rh, &po, NULL), *pf = gf_max_pool2d(rf, &po, NULL);
        check_bits("max_pool2d 2x2", ph, gf_to_dtype(pf, dt), dt);
        gf_tensor *pgh = gf_contiguous(gf_slice(gf_slice(gyh, 2, 0, 4, 1), 3, 0, 5, 1));
        gf_tensor *pgf = gf_to_dtype(pgh, GF_F32);
        CHECK(gf_backward(ph, pgh, NULL) == GF_OK);
        CHECK(gf_backward(pf, pgf, NULL) == GF_OK);
        check_bits("max_pool2d and relu backward", gf_tensor_grad(xh),
                   gf_to_dtype(gf_tensor_grad(xf), dt), dt);
        int bias_dims[3] = {0, 2, 3}, col_dims[1] = {0};
        check_ulps("sum over N, H, W", gf_sum(gyh, bias_dims, 3, true),
                   gf_sum(gyf, bias_dims, 3, true), dt, 0);
        int64_t sm[2] = {70, 300};
        gf_tensor *mh, *mf;
        rand_pair(sm, 2, dt, -1, 1, &mh, &mf);
        check_ulps("sum over rows", gf_sum(mh, col_dims, 1, false), gf_sum(mf, col_dims, 1, false),
                   dt, 0);
        check_ulps("mean over rows", gf_mean(mh, col_dims, 1, false),
                   gf_mean(mf, col_dims, 1, false), dt, 0);

        /* a convolution whose tensors leave partial blocks of 16 channels
         * and of 16 pixels, both gradients */
        check_conv("partial blocks", dt, (const int64_t[]){2, 20, 7, 7},
                   (const int64_t[]){18, 20, 3, 3}, 0.3);
        /* few taps (cpu_onednn's direct kernel; bf16 dot products where the
         * CPU has them): rows of 37 (a vector of 32 and a tail), 5 output
         * channels (pairs and one), 18 taps (blocks of 8, 8 and 2) */
        check_conv("few taps, long rows", dt, (const int64_t[]){2, 2, 6, 37},
                   (const int64_t[]){5, 2, 3, 3}, 1);
    }
}

/* A small MLP in dt: gradients have the tensor's dtype and match f32's run
 * on the same values within a 16-bit tolerance. */
static void test_autograd(void) {
    for (int d = 0; d < 2; d++) {
        gf_dtype dt = LOWS[d];
        int64_t sx[2] = {4, 16}, sw1[2] = {16, 12}, sw2[2] = {12, 3};
        gf_tensor *xh, *xf, *w1h, *w1f, *w2h, *w2f;
        rand_pair(sx, 2, dt, -1, 1, &xh, &xf);
        rand_pair(sw1, 2, dt, -0.5, 0.5, &w1h, &w1f);
        rand_pair(sw2, 2, dt, -0.5, 0.5, &w2h, &w2f);
        gf_tensor *ws[4] = {w1h, w2h, w1f, w2f};
        for (int i = 0; i < 4; i++) gf_tensor_set_requires_grad(ws[i], true);
        for (int run = 0; run < 2; run++) {
            gf_tensor *x = run ? xf : xh, *a = ws[2 * run], *b = ws[2 * run + 1];
            gf_tensor *h = gf_tanh(gf_matmul(x, a));
            gf_tensor *y = gf_sum(gf_mul(gf_matmul(h, b), gf_matmul(h, b)), NULL, 0, false);
            CHECK(y && gf_backward(y, NULL, NULL) == GF_OK);
        }
        for (int i = 0; i < 2; i++) {
            gf_tensor *gh = gf_tensor_grad(ws[i]), *gf = gf_tensor_grad(ws[i + 2]);
            CHECK(gh && gf_tensor_dtype(gh) == dt);
            CHECK(gf && gf_tensor_dtype(gf) == GF_F32);
            int64_t n1, n2;
            double *a = values(gh, &n1), *b = values(gf, &n2), scale = 0, err = 0;
            for (int64_t j = 0; j < n2; j++) scale = fmax(scale, fabs(b[j]));
            for (int64_t j = 0; j < n1 && j < n2; j++) err = fmax(err, fabs(a[j] - b[j]));
            /* 16-bit rounding of inputs to each op: 5% of the largest gradient */
            CHECK_MSG(err <= 0.05 * scale, "grad %d in %s: max error %g, scale %g", i,
                      gf_dtype_name(dt), err, scale);
            free(a), free(b);
        }
    }
}

/* Printing, .npy (f16; bf16 has no NumPy dtype) and safetensors (F16, BF16)
 * keep the values bit for bit. */
static void test_io(void) {
    double v[4] = {1.5, -2.0, 0.1, 65504.0};
    gf_tensor *h = vec(v, 4, GF_F16), *b = vec(v, 4, GF_BF16);
    char buf[256];
    const char *txt = gf_tensor_format(b, buf, sizeof buf);
    CHECK_CONTAINS(txt, "1.5");
    CHECK_CONTAINS(txt, "dtype=bf16");
    txt = gf_tensor_format(h, buf, sizeof buf);
    CHECK_CONTAINS(txt, "65504");
    CHECK_CONTAINS(txt, "dtype=f16");
    it_setup("amp");
    const char *path = it_path("h.npy");
    CHECK(gf_save_npy(h, path) == GF_OK);
    gf_tensor *hl = gf_load_npy(path, NULL);
    CHECK(hl && gf_tensor_dtype(hl) == GF_F16);
    if (hl) check_ulps("npy f16", hl, gf_to_dtype(h, GF_F32), GF_F16, 0);
    CHECK(gf_save_npy(b, path) == GF_ERR_DTYPE); /* NumPy has no bf16 */
    path = it_path("hb.safetensors");
    const char *names[2] = {"h", "b"};
    const gf_tensor *ts[2] = {h, b};
    CHECK(gf_save_safetensors(names, ts, 2, path) == GF_OK);
    gf_tensor_dict *d = gf_load_safetensors(path, NULL);
    CHECK(d && gf_tensor_dict_size(d) == 2);
    gf_tensor *hd = d ? gf_tensor_dict_get(d, "h") : NULL, *bd = d ? gf_tensor_dict_get(d, "b") : NULL;
    CHECK(hd && gf_tensor_dtype(hd) == GF_F16 && bd && gf_tensor_dtype(bd) == GF_BF16);
    if (hd && bd) {
        check_ulps("safetensors f16", hd, gf_to_dtype(h, GF_F32), GF_F16, 0);
        check_ulps("safetensors bf16", bd, gf_to_dtype(b, GF_F32), GF_BF16, 0);
    }
    gf_tensor_dict_destroy(d);
    it_teardown();
}

int main(void) {
    /* GRAFT_DEVICE names no device here (cuda without a GPU): say why and
     * stop; CTest reads the message as a skip where it expects one. */
    if (!gf_device_default()) {
        printf("%s\n", gf_last_error());
        return 1;
    }
    gf_manual_seed(28);
    gf_scope_begin();
    RUN(test_conversions);
    RUN(test_promotion);
    RUN(test_elementwise);
    RUN(test_families);
    RUN(test_long);
    RUN(test_native16);
    RUN(test_autograd);
    RUN(test_io);
    gf_scope_end();
    return CHECK_REPORT();
}
