/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vulkan_f16.c — f16 on the Vulkan device (storage only: the shaders
 * compute in f32 and round the result to f16, as PyTorch's half on GPUs).
 *
 * The reference plugin has no f16, so each case builds inputs whose values
 * f16 holds exactly (multiples of 1/64 below 32, so both devices see the
 * same numbers), runs the op in f16 on vulkan:0 and in f32 on cpu:0, and
 * compares within one f16 rounding of the result (2^-11 relative) plus the
 * f32 computation's error. Conversions are checked bit for bit against
 * hand-computed binary16 values. Skips when the device has no f16. */
#include "vk_test.h"

static bool has_f16(void) {
    gf_device_info info;
    return gf_device_get_info(vt_vk, &info) == GF_OK && (info.dtypes & (1u << GF_F16));
}

/* A pair: the f32 tensor on cpu:0, the f16 one on vulkan:0, same values:
 * k/64 for k in [-lo64, hi64) from a hash, exact in f16. */
static vt_pair make16(int rank, const int64_t *sizes, uint32_t seed, double lo, double hi) {
    int64_t n = vt_numel(rank, sizes);
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    vt_pair p = {NULL, NULL};
    if (!v) return p;
    for (int64_t i = 0; i < n; i++) {
        double u = vt_value(GF_F64, i, seed, lo, hi);
        v[i] = (float)(floor(u * 64.0) / 64.0);
    }
    p.c = gf_from_data(v, sizes, rank, GF_F32, vt_cpu);
    gf_tensor *f = gf_from_data(v, sizes, rank, GF_F32, vt_vk);
    p.v = f ? gf_to_dtype(f, GF_F16) : NULL;
    gf_tensor_release(f);
    free(v);
    return p;
}

/* Compares an f16 vulkan result with the reference's f32 one. */
static void cmp16(const char *what, gf_tensor *ref, gf_tensor *got, double atol, double rtol) {
    CHECK_MSG(got && gf_tensor_dtype(got) == GF_F16, "%s: %s", what,
              got ? "the result is not f16" : gf_last_error());
    gf_tensor *g32 = got ? gf_to_dtype(got, GF_F32) : NULL;
    VT_COMPARE(what, ref, g32, atol, rtol);
    gf_tensor_release(g32);
    gf_tensor_release(ref);
    gf_tensor_release(got);
}

/* One f16 rounding of the result on top of f32: 2^-11 relative, and the
 * inputs' own f32 evaluation (a few ulp of f32, negligible here). */
#define H_RTOL 1.0e-3
#define H_ATOL 1.0e-4

/* Bits of a host float read back from an f16 tensor through f32. */
static bool read16(gf_tensor *t16, float *out, int64_t n) {
    gf_tensor *f = t16 ? gf_to_dtype(t16, GF_F32) : NULL;
    bool ok = f && gf_tensor_to_host(f, out, (size_t)n * sizeof *out) == GF_OK;
    gf_tensor_release(f);
    return ok;
}

static void test_conversions(void) {
    /* f32 -> f16: round to nearest even, overflow to inf, denormals. */
    const float in[] = {1.0f + 0x1p-11f,  1.0f + 3 * 0x1p-11f, 65504.0f,   65519.0f,
                        65520.0f,         -1e-8f,              0x1p-24f,   3e-8f,
                        0x1p-14f - 0x1p-25f, NAN,              -0.0f,      0.1f,
                        -2.5f,            1e9f};
    const float want[] = {1.0f,       1.0f + 0x1p-9f, 65504.0f, 65504.0f, INFINITY, -0.0f, 0x1p-24f,
                          0x1p-24f,   0x1p-14f,       NAN,      -0.0f,
                          0.0999755859375f, -2.5f,   INFINITY};
    int64_t n = (int64_t)(sizeof in / sizeof in[0]);
    gf_tensor *x = gf_from_data(in, &n, 1, GF_F32, vt_vk);
    gf_tensor *h = x ? gf_to_dtype(x, GF_F16) : NULL;
    float got[16] = {0};
    CHECK_MSG(h && read16(h, got, n), "%s", gf_last_error());
    for (int64_t i = 0; i < n; i++) {
        bool ok = isnan(want[i]) ? isnan(got[i])
                                 : got[i] == want[i] && signbit(got[i]) == signbit(want[i]);
        CHECK_MSG(ok, "f32 %.9g -> f16 gave %.9g, want %.9g", in[i], got[i], want[i]);
    }
    /* f16 -> integers truncate (NaN -> 0, inf saturates), -> bool is != 0. */
    gf_tensor *i32 = h ? gf_to_dtype(h, GF_I32) : NULL, *b = h ? gf_to_dtype(h, GF_BOOL) : NULL;
    int32_t gi[16];
    uint8_t gb[16];
    CHECK(i32 && gf_tensor_to_host(i32, gi, (size_t)n * 4) == GF_OK);
    CHECK(b && gf_tensor_to_host(b, gb, (size_t)n) == GF_OK);
    const int32_t wi[] = {1, 1, 65504, 65504, INT32_MAX, 0, 0, 0, 0, 0, 0, 0, -2, INT32_MAX};
    const uint8_t wb[] = {1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1};
    for (int64_t i = 0; i < n; i++) {
        CHECK_MSG(gi[i] == wi[i], "f16 %g -> i32 gave %d, want %d", got[i], gi[i], wi[i]);
        CHECK_MSG(gb[i] == wb[i], "f16 %g -> bool gave %d, want %d", got[i], gb[i], wb[i]);
    }
    gf_tensor_release(i32);
    gf_tensor_release(b);
    /* f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 is above the tie, so it
     * goes up (through an f32 rounded to nearest it would tie to 1). */
    if (gf_device_get_info(vt_vk, &(gf_device_info){0}) == GF_OK) {
        gf_device_info info;
        gf_device_get_info(vt_vk, &info);
        if (info.dtypes & (1u << GF_F64)) {
            const double dv[3] = {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11, -65519.99};
            const float dw[3] = {1.0f + 0x1p-10f, 1.0f, -65504.0f};
            int64_t n3 = 3;
            gf_tensor *d = gf_from_data(dv, &n3, 1, GF_F64, vt_vk);
            gf_tensor *dh = d ? gf_to_dtype(d, GF_F16) : NULL;
            float g3[3] = {0};
            CHECK(dh && read16(dh, g3, 3));
            for (int i = 0; i < 3; i++)
                CHECK_MSG(g3[i] == dw[i], "f64 %.17g -> f16 gave %.9g, want %.9g", dv[i], g3[i], dw[i]);
            gf_tensor *back = dh ? gf_to_dtype(dh, GF_F64) : NULL;
            double b3[3] = {0};
            CHECK(back && gf_tensor_to_host(back, b3, sizeof b3) == GF_OK);
            for (int i = 0; i < 3; i++) CHECK(b3[i] == (double)dw[i]);
            gf_tensor_release(back);
            gf_tensor_release(dh);
            gf_tensor_release(d);
        }
    }
    /* i32 -> f16 and fill. */
    const int32_t iv[4] = {3, -2048, 2049, 70000};
    const float iw[4] = {3.0f, -2048.0f, 2048.0f, INFINITY}; /* 2049 ties to even 2048 */
    int64_t n4 = 4;
    gf_tensor *it = gf_from_data(iv, &n4, 1, GF_I32, vt_vk);
    gf_tensor *ih = it ? gf_to_dtype(it, GF_F16) : NULL;
    float g4[4] = {0};
    CHECK(ih && read16(ih, g4, 4));
    for (int i = 0; i < 4; i++) CHECK_MSG(g4[i] == iw[i], "i32 %d -> f16 gave %g", iv[i], g4[i]);
    gf_tensor *full = gf_full(&n4, 1, 0.1, GF_F16, vt_vk);
    CHECK(full && read16(full, g4, 4));
    for (int i = 0; i < 4; i++) CHECK(g4[i] == 0.0999755859375f);
    gf_tensor_release(full);
    gf_tensor_release(ih);
    gf_tensor_release(it);
    gf_tensor_release(h);
    gf_tensor_release(x);
}

typedef gf_tensor *(*unary_fn)(const gf_tensor *);
static gf_tensor *gelu_exact(const gf_tensor *x) { return gf_gelu(x, false); }
typedef gf_tensor *(*binary_fn)(const gf_tensor *, const gf_tensor *);

static void test_elementwise(void) {
    static const struct {
        const char *name;
        unary_fn f;
        double lo, hi;
    } un[] = {{"neg", gf_neg, -4, 4},         {"abs", gf_abs, -4, 4},
              {"exp", gf_exp, -4, 4},         {"log", gf_log, 0.05, 8},
              {"sqrt", gf_sqrt, 0, 8},        {"tanh", gf_tanh, -4, 4},
              {"sigmoid", gf_sigmoid, -6, 6}, {"relu", gf_relu, -4, 4},
              {"gelu", gelu_exact, -4, 4},       {"sin", gf_sin, -4, 4},
              {"reciprocal", gf_reciprocal, 0.5, 8}};
    int64_t sz[2] = {37, 29};
    for (size_t k = 0; k < sizeof un / sizeof un[0]; k++) {
        vt_pair x = make16(2, sz, 11 + (uint32_t)k, un[k].lo, un[k].hi);
        char what[64];
        snprintf(what, sizeof what, "%s f16", un[k].name);
        cmp16(what, un[k].f(x.c), un[k].f(x.v), H_ATOL, H_RTOL);
        vt_release(x);
    }
    static const struct {
        const char *name;
        binary_fn f;
    } bin[] = {{"add", gf_add}, {"sub", gf_sub}, {"mul", gf_mul}, {"div", gf_div},
               {"maximum", gf_maximum}};
    int64_t sb[2] = {1, 29}; /* broadcast along rows */
    for (size_t k = 0; k < sizeof bin / sizeof bin[0]; k++) {
        vt_pair a = make16(2, sz, 40 + (uint32_t)k, -8, 8);
        vt_pair b = make16(2, sb, 50 + (uint32_t)k, 0.5, 4);
        char what[64];
        snprintf(what, sizeof what, "%s f16 (broadcast)", bin[k].name);
        cmp16(what, bin[k].f(a.c, b.c), bin[k].f(a.v, b.v), H_ATOL, H_RTOL);
        /* A transposed (strided) operand. */
        gf_tensor *tc = gf_transpose(a.c, 0, 1), *tv = gf_transpose(a.v, 0, 1);
        gf_tensor *tc2 = gf_contiguous(tc), *tv2 = gf_contiguous(tv);
        snprintf(what, sizeof what, "%s f16 (transposed)", bin[k].name);
        cmp16(what, bin[k].f(tc, tc2), bin[k].f(tv, tv2), H_ATOL, H_RTOL);
        gf_tensor *tmp[4] = {tc, tv, tc2, tv2};
        for (int i = 0; i < 4; i++) gf_tensor_release(tmp[i]);
        vt_release(a);
        vt_release(b);
    }
    /* Comparisons give bool (exact); where copies f16 bits. */
    vt_pair a = make16(2, sz, 61, -2, 2), b = make16(2, sz, 62, -2, 2);
    gf_tensor *lc = gf_lt(a.c, b.c), *lv = gf_lt(a.v, b.v);
    VT_COMPARE("lt f16", lc, lv, 0, 0);
    gf_tensor *wc = gf_where(lc, a.c, b.c), *wv = gf_where(lv, a.v, b.v);
    cmp16("where f16", wc, wv, 0, 0);
    gf_tensor *trc = gf_tril(a.c, 1), *trv = gf_tril(a.v, 1);
    cmp16("tril f16", trc, trv, 0, 0);
    gf_tensor_release(lc);
    gf_tensor_release(lv);
    vt_release(a);
    vt_release(b);
}


static void test_reductions(void) {
    int64_t sz[3] = {6, 300, 5}; /* long lines (300, 1500) and short ones (6, 5) */
    vt_pair x = make16(3, sz, 71, -4, 4);
    static const int dsets[3][2] = {{1, -1}, {0, 2}, {2, -1}};
    static const int nd[3] = {1, 2, 1};
    for (int s = 0; s < 3; s++) {
        char what[64];
        snprintf(what, sizeof what, "sum f16 (dims set %d)", s);
        cmp16(what, gf_sum(x.c, dsets[s], nd[s], false), gf_sum(x.v, dsets[s], nd[s], false), 1e-3,
              H_RTOL);
        snprintf(what, sizeof what, "mean f16 (dims set %d)", s);
        cmp16(what, gf_mean(x.c, dsets[s], nd[s], true), gf_mean(x.v, dsets[s], nd[s], true), H_ATOL,
              H_RTOL);
        snprintf(what, sizeof what, "amax f16 (dims set %d)", s);
        cmp16(what, gf_amax(x.c, dsets[s], nd[s], false), gf_amax(x.v, dsets[s], nd[s], false), 0, 0);
        snprintf(what, sizeof what, "var f16 (dims set %d)", s);
        cmp16(what, gf_var(x.c, dsets[s], nd[s], 1.0, false), gf_var(x.v, dsets[s], nd[s], 1.0, false),
              H_ATOL, H_RTOL);
        snprintf(what, sizeof what, "logsumexp f16 (dims set %d)", s);
        cmp16(what, gf_logsumexp(x.c, dsets[s], nd[s], false),
              gf_logsumexp(x.v, dsets[s], nd[s], false), H_ATOL, H_RTOL);
    }
    gf_tensor *vc = NULL, *ic = NULL, *vv = NULL, *iv = NULL;
    CHECK(gf_max_dim(x.c, 1, false, &vc, &ic) == GF_OK);
    CHECK(gf_max_dim(x.v, 1, false, &vv, &iv) == GF_OK);
    /* Values of k/64 have ties: the first index wins on both devices. */
    VT_COMPARE("max_dim f16 indices", ic, iv, 0, 0);
    cmp16("max_dim f16 values", vc, vv, 0, 0);
    gf_tensor_release(ic);
    gf_tensor_release(iv);
    vt_release(x);
    /* The sum accumulates in f32: 3000 ones give 3000 (an f16 running sum
     * stops at 2048, where adding 1 rounds back to 2048). */
    int64_t n = 3000;
    gf_tensor *ones = gf_ones(&n, 1, GF_F16, vt_vk);
    gf_tensor *s = ones ? gf_sum(ones, NULL, 0, false) : NULL;
    float got = 0;
    CHECK(s && read16(s, &got, 1));
    CHECK_MSG(got == 3000.0f, "sum of 3000 f16 ones gave %g", got);
    gf_tensor_release(s);
    gf_tensor_release(ones);
}

static void test_matmul(void) {
    /* Small (the naive shader), large enough for the tiled one, batched and
     * transposed operands. */
    static const int64_t shapes[][3] = {{5, 7, 3}, {96, 80, 72}, {130, 33, 65}};
    for (int k = 0; k < 3; k++) {
        int64_t M = shapes[k][0], K = shapes[k][1], N = shapes[k][2];
        int64_t sa[3] = {2, M, K}, sb[3] = {2, K, N};
        vt_pair a = make16(3, sa, 80 + (uint32_t)k, -2, 2), b = make16(3, sb, 90 + (uint32_t)k, -2, 2);
        char what[64];
        snprintf(what, sizeof what, "matmul f16 %lldx%lldx%lld", (long long)M, (long long)K,
                 (long long)N);
        cmp16(what, gf_matmul(a.c, b.c), gf_matmul(a.v, b.v), 2e-3, H_RTOL);
        gf_tensor *tc = gf_transpose(b.c, 1, 2), *tv = gf_transpose(b.v, 1, 2);
        gf_tensor *tc2 = gf_contiguous(tc), *tv2 = gf_contiguous(tv);
        gf_tensor *bc = gf_transpose(tc2, 1, 2), *bv = gf_transpose(tv2, 1, 2);
        snprintf(what, sizeof what, "matmul f16 %lldx%lldx%lld (b transposed)", (long long)M,
                 (long long)K, (long long)N);
        cmp16(what, gf_matmul(a.c, bc), gf_matmul(a.v, bv), 2e-3, H_RTOL);
        gf_tensor *tmp[6] = {tc, tv, tc2, tv2, bc, bv};
        for (int i = 0; i < 6; i++) gf_tensor_release(tmp[i]);
        vt_release(a);
        vt_release(b);
    }
    /* f32 accumulation: a row of 3000 ones times a column of 3000 ones. */
    gf_device *dev = vt_vk;
    for (int tiled = 0; tiled < 2; tiled++) {
        int64_t rows = tiled ? 64 : 1;
        int64_t sa[2] = {rows, 3000}, sb[2] = {3000, rows};
        gf_tensor *a = gf_ones(sa, 2, GF_F16, dev), *b = gf_ones(sb, 2, GF_F16, dev);
        gf_tensor *y = a && b ? gf_matmul(a, b) : NULL;
        float *got = calloc((size_t)(rows * rows), sizeof *got);
        CHECK(y && got && read16(y, got, rows * rows));
        int bad = 0;
        for (int64_t i = 0; got && i < rows * rows; i++) bad += got[i] != 3000.0f;
        CHECK_MSG(bad == 0, "ones(%lld, 3000) @ ones(3000, %lld) in f16: %d elements are not 3000",
                  (long long)rows, (long long)rows, bad);
        free(got);
        gf_tensor_release(y);
        gf_tensor_release(a);
        gf_tensor_release(b);
    }
}

static void test_softmax(void) {
    int64_t sz[2] = {33, 517};
    vt_pair x = make16(2, sz, 101, -8, 8);
    for (int dim = 0; dim < 2; dim++) {
        char what[64];
        snprintf(what, sizeof what, "softmax f16 dim %d", dim);
        cmp16(what, gf_softmax(x.c, dim), gf_softmax(x.v, dim), 1e-6, H_RTOL);
        snprintf(what, sizeof what, "log_softmax f16 dim %d", dim);
        cmp16(what, gf_log_softmax(x.c, dim), gf_log_softmax(x.v, dim), H_ATOL, H_RTOL);
    }
    vt_release(x);
}

/* What the device does not provide in f16 (RANDOM) runs on the fallback
 * device, not computed wrong: the reference's numbers for the same seed. */
static void test_fallback_random(void) {
    int64_t n = 64;
    gf_manual_seed(77);
    gf_tensor *r = gf_rand(&n, 1, GF_F16, vt_vk);
    gf_manual_seed(77);
    gf_tensor *w = gf_rand(&n, 1, GF_F16, vt_cpu);
    CHECK_MSG(r && w, "%s", gf_last_error());
    uint16_t got[64], want[64];
    if (r && w) {
        CHECK(gf_tensor_device(r) == vt_vk);
        CHECK(gf_tensor_to_host(r, got, sizeof got) == GF_OK);
        CHECK(gf_tensor_to_host(w, want, sizeof want) == GF_OK);
        CHECK(memcmp(got, want, sizeof got) == 0);
    }
    gf_tensor_release(r);
    gf_tensor_release(w);
}

int main(void) {
    int rc = vt_setup();
    if (rc) return rc;
    if (!has_f16()) {
        fprintf(stderr, "SKIP: %s stores no f16 (shaderFloat16 and storageBuffer16BitAccess)\n",
                gf_device_name(vt_vk));
        return 77;
    }
    RUN(test_conversions);
    RUN(test_elementwise);
    RUN(test_reductions);
    RUN(test_matmul);
    RUN(test_softmax);
    RUN(test_fallback_random);
    CHECK_MSG(gf_shutdown() == GF_OK, "gf_shutdown: %s", gf_last_error());
    return CHECK_REPORT();
}
