/* SPDX-License-Identifier: BSD-3-Clause */
/* f16 and bf16 against PyTorch and bit by bit: every one of the 65,536
 * patterns of each dtype widened (to f32 and to f64) and narrowed back, the
 * midpoints between neighbours rounding to the even one (a hair above or
 * below: to that side), the rounding cases of the ABI's rules, and PyTorch's
 * results of 41 ops per dtype (tests/amp/half_expected.h, written by
 * tools/expected/gen_half.py) within a stated number of ulps. Runs on the
 * default device: the reference plugin, and cpu_onednn's cpu:0 (its
 * vectorised conversions and its f32 kernels on widened copies).
 *
 * Tolerances, in ulps of the expected value's dtype (at its binade):
 *  - elementwise: 1 ulp (both round an f32 result once; libm may differ in
 *    the last f32 bit, which can move a tie);
 *  - reductions, softmax: 2 ulps of the result plus 2 ulps of the largest
 *    |input| (sums that cancel: PyTorch adds in f32 in its own order, the
 *    reference in double, cpu_onednn in double then f32 then 16 bits);
 *  - matmul: 2 ulps of the result plus 2 ulps of 6 x the largest |input|
 *    (six products per element; cpu_onednn sums them in f32). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <graft.h>

#include "check.h"
#include "half_expected.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})

static const gf_dtype DT[2] = {GF_BF16, GF_F16};

/* One ulp of dtype at |v| (subnormals: the smallest step). */
static double ulp_of(gf_dtype dt, double v) {
    int p = dt == GF_BF16 ? 8 : 11, emin = dt == GF_BF16 ? -126 : -14;
    int e;
    frexp(fabs(v), &e); /* |v| in [2^(e-1), 2^e) */
    e -= 1;
    if (e < emin || v == 0) e = emin;
    return ldexp(1.0, e - p + 1);
}

static gf_tensor *make(int di, const double *v, int64_t rows, int64_t cols) {
    int64_t sizes[2] = {rows, cols};
    gf_tensor *t64 = gf_from_data(v, sizes, 2, GF_F64, NULL);
    return t64 ? gf_to_dtype(t64, DT[di]) : NULL;
}

/* The values of t (any real dtype) as doubles; caller frees. */
static double *read_any(const gf_tensor *t) {
    gf_tensor *d = t ? gf_to_dtype(t, GF_F64) : NULL;
    gf_tensor *c = d ? gf_contiguous(d) : NULL;
    if (!c) return NULL;
    int64_t n = gf_tensor_numel(c);
    double *v = calloc((size_t)(n ? n : 1), sizeof *v);
    if (v && gf_tensor_to_host(c, v, (size_t)n * sizeof *v) != GF_OK) {
        free(v);
        v = NULL;
    }
    return v;
}

static gf_tensor *run_case(const char *name, const gf_tensor *x, const gf_tensor *y,
                           const gf_tensor *p, const gf_tensor *w) {
    static const struct {
        const char *name;
        gf_tensor *(*fn)(const gf_tensor *);
        int on_p;
    } un[] = {{"neg", gf_neg, 0},     {"abs", gf_abs, 0},       {"exp", gf_exp, 0},
              {"tanh", gf_tanh, 0},   {"sigmoid", gf_sigmoid, 0}, {"silu", gf_silu, 0},
              {"relu", gf_relu, 0},   {"sin", gf_sin, 0},       {"cos", gf_cos, 0},
              {"erf", gf_erf, 0},     {"square", gf_square, 0}, {"expm1", gf_expm1, 0},
              {"log", gf_log, 1},     {"sqrt", gf_sqrt, 1},     {"rsqrt", gf_rsqrt, 1},
              {"reciprocal", gf_reciprocal, 1}, {"log1p", gf_log1p, 1}};
    static const struct {
        const char *name;
        gf_tensor *(*fn)(const gf_tensor *, const gf_tensor *);
    } bin[] = {{"add", gf_add}, {"sub", gf_sub}, {"mul", gf_mul}, {"div", gf_div},
               {"maximum", gf_maximum}, {"minimum", gf_minimum}};
    for (size_t i = 0; i < sizeof un / sizeof un[0]; i++)
        if (!strcmp(name, un[i].name)) return un[i].fn(un[i].on_p ? p : x);
    for (size_t i = 0; i < sizeof bin / sizeof bin[0]; i++)
        if (!strcmp(name, bin[i].name)) return bin[i].fn(x, y);
    int d1[] = {1}, d0[] = {0};
    if (!strcmp(name, "gelu")) return gf_gelu(x, false);
    if (!strcmp(name, "pow")) return gf_pow(p, y);
    if (!strcmp(name, "mul_scalar")) return gf_mul_scalar(x, 2.3);
    if (!strcmp(name, "add_scalar")) return gf_add_scalar(x, 0.1);
    if (!strcmp(name, "pow_scalar")) return gf_pow_scalar(p, 1.7);
    if (!strcmp(name, "sum1")) return gf_sum(x, d1, 1, false);
    if (!strcmp(name, "sum0")) return gf_sum(x, d0, 1, false);
    if (!strcmp(name, "sum_all")) return gf_sum(x, NULL, 0, false);
    if (!strcmp(name, "mean1")) return gf_mean(x, d1, 1, false);
    if (!strcmp(name, "amax1")) return gf_amax(x, d1, 1, false);
    if (!strcmp(name, "amin1")) return gf_amin(x, d1, 1, false);
    if (!strcmp(name, "prod1")) return gf_prod(x, d1, 1, false);
    if (!strcmp(name, "var1")) return gf_var(x, d1, 1, 1.0, false);
    if (!strcmp(name, "std1")) return gf_std(x, d1, 1, 1.0, false);
    if (!strcmp(name, "softmax1")) return gf_softmax(x, 1);
    if (!strcmp(name, "softmax0")) return gf_softmax(x, 0);
    if (!strcmp(name, "log_softmax1")) return gf_log_softmax(x, 1);
    if (!strcmp(name, "matmul")) return gf_matmul(x, w);
    return NULL;
}

static bool is_elementwise(const char *name) {
    return !strstr(name, "1") && !strstr(name, "0") && strcmp(name, "sum_all") &&
           strcmp(name, "matmul");
}

static void test_against_torch(void) {
    int done[2] = {0, 0};
    for (size_t c = 0; c < sizeof half_cases / sizeof half_cases[0]; c++) {
        const half_case *hc = &half_cases[c];
        gf_dtype dt = DT[hc->dt];
        gf_tensor *x = make(hc->dt, half_x[hc->dt], 4, 6), *y = make(hc->dt, half_y[hc->dt], 4, 6);
        gf_tensor *p = make(hc->dt, half_p[hc->dt], 4, 6), *w = make(hc->dt, half_w[hc->dt], 6, 5);
        gf_tensor *r = run_case(hc->name, x, y, p, w);
        CHECK_MSG(r != NULL, "%s %s: %s", hc->name, gf_dtype_name(dt), gf_last_error());
        if (!r) continue;
        CHECK_MSG(gf_tensor_dtype(r) == dt, "%s: dtype %s, expected %s", hc->name,
                  gf_dtype_name(gf_tensor_dtype(r)), gf_dtype_name(dt));
        CHECK_MSG(gf_tensor_numel(r) == hc->n, "%s: %lld elements", hc->name,
                  (long long)gf_tensor_numel(r));
        double *got = read_any(r);
        CHECK(got != NULL);
        bool ew = is_elementwise(hc->name);
        double xmax = 0; /* largest |input|, for sums that cancel */
        for (int i = 0; i < 24; i++) xmax = fmax(xmax, fabs(half_x[hc->dt][i]));
        int bad = 0;
        for (int i = 0; got && i < hc->n && i < gf_tensor_numel(r); i++) {
            double e = hc->v[i];
            double tol = ew ? ulp_of(dt, e) : 2 * ulp_of(dt, e) + 2 * ulp_of(dt, xmax);
            if (!strcmp(hc->name, "matmul")) tol = 2 * ulp_of(dt, e) + 2 * ulp_of(dt, 6 * xmax);
            bool ok = isnan(e) ? isnan(got[i]) : fabs(got[i] - e) <= tol;
            if (!ok && bad++ < 3)
                fprintf(stderr, "%s %s [%d]: %.9g, PyTorch %.9g (tolerance %.3g)\n", hc->name,
                        gf_dtype_name(dt), i, got[i], e, tol);
        }
        CHECK_MSG(bad == 0, "%s %s: %d elements off", hc->name, gf_dtype_name(dt), bad);
        free(got);
        done[hc->dt]++;
    }
    CHECK_MSG(done[0] == 41 && done[1] == 41, "%d bf16 and %d f16 cases ran", done[0], done[1]);
}

/* Conversions round once to nearest even and keep NaN and infinities. */
static void test_rounding(void) {
    /* bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1; 1 + 3*2^-8
     * goes up to 1 + 2^-6; f16: 2049 ties to 2048, 2051 to 2052; 65520 -> inf */
    double in[] = {1.0 + 1.0 / 256, 1.0 + 3.0 / 256, 2049, 2051, 65520, 65519, NAN, -INFINITY,
                   1e-8, -0.0, 1.0 + 1.0 / 256 + 1e-12};
    gf_tensor *t = gf_from_data(in, SZ(11), 1, GF_F64, NULL);
    gf_tensor *b = gf_to_dtype(t, GF_BF16), *h = gf_to_dtype(t, GF_F16);
    double *vb = read_any(b), *vh = read_any(h);
    CHECK(vb && vh);
    if (vb && vh) {
        CHECK(vb[0] == 1.0 && vb[1] == 1.0 + 4.0 / 256 && vb[4] == 65536 && isnan(vb[6]));
        CHECK(vb[7] == -INFINITY && vb[10] == 1.0 + 2.0 / 256); /* above the tie: up */
        CHECK(vh[2] == 2048 && vh[3] == 2052 && isinf(vh[4]) && vh[5] == 65504 && isnan(vh[6]));
        CHECK(vh[8] == 0 && fabs(vb[8] - 1e-8) < 1e-10); /* f16: under 2^-25; bf16 keeps it */
        CHECK(vh[9] == 0 && signbit(vh[9]));
    }
    free(vb);
    free(vh);
    /* f32 -> bf16: one rounding from just above the tie */
    float f = 1.0f + 1.0f / 256 + 1.0f / 65536;
    gf_tensor *t32 = gf_from_data(&f, SZ(1), 1, GF_F32, NULL);
    gf_tensor *b32 = gf_to_dtype(t32, GF_BF16);
    double *v = read_any(b32);
    CHECK(v && v[0] == 1.0 + 2.0 / 256);
    free(v);
    /* gf_tensor_get / gf_tensor_item read 16-bit elements directly */
    double one = 0, inf = 0, sub = 0;
    CHECK(gf_tensor_get(b, (const int64_t[]){1}, &one) == GF_OK && one == 1.0 + 4.0 / 256);
    CHECK(gf_tensor_get(h, (const int64_t[]){4}, &inf) == GF_OK && isinf(inf));
    gf_tensor *tiny = gf_scalar(ldexp(3.0, -24), GF_F16, NULL); /* an f16 subnormal */
    CHECK(tiny && gf_tensor_item(tiny, &sub) == GF_OK && sub == ldexp(3.0, -24));
}

/* The value of 16-bit pattern h (host-side, independent of graft). */
static double widen(gf_dtype dt, uint16_t h) {
    if (dt == GF_BF16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0x1f ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return (h & 0x8000) ? -v : v;
}

/* values (n of them, as f64) narrowed to dt through `via` (f64 or f32);
 * caller frees. */
static uint16_t *narrow(const double *values, int64_t n, gf_dtype via, gf_dtype dt) {
    gf_tensor *t = gf_from_data(values, &n, 1, GF_F64, NULL);
    gf_tensor *v = t ? gf_to_dtype(t, via) : NULL, *r = v ? gf_to_dtype(v, dt) : NULL;
    uint16_t *got = malloc((size_t)n * 2);
    CHECK_MSG(r && got && gf_tensor_to_host(r, got, (size_t)n * 2) == GF_OK, "%s",
              gf_last_error());
    return got;
}

/* Every pattern: widening to f32 / f64 gives its value and narrowing back
 * the same pattern (NaN stays NaN, with its sign); the midpoint of two
 * neighbours rounds to the even one, a hair above / below it to the upper /
 * lower one (from f64, and from f32: every midpoint is an f32, and so are
 * its f32 neighbours). */
static void test_all_patterns(void) {
    enum { N = 65536 };
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = DT[di];
        uint16_t *bits = malloc(N * 2), *back = malloc(N * 2);
        double *wide = malloc(N * sizeof(double));
        CHECK(bits && back && wide);
        if (!bits || !back || !wide) return;
        for (int i = 0; i < N; i++) bits[i] = (uint16_t)i;
        gf_tensor *t = gf_from_data(bits, SZ(N), 1, dt, NULL);
        const gf_dtype vias[2] = {GF_F32, GF_F64};
        for (int k = 0; k < 2; k++) {
            gf_tensor *w = t ? gf_to_dtype(t, vias[k]) : NULL;
            gf_tensor *w64 = w ? gf_to_dtype(w, GF_F64) : NULL, *r = w ? gf_to_dtype(w, dt) : NULL;
            CHECK(w64 && gf_tensor_to_host(w64, wide, N * sizeof(double)) == GF_OK);
            CHECK(r && gf_tensor_to_host(r, back, N * 2) == GF_OK);
            int bad = 0;
            for (int i = 0; i < N; i++) {
                double want = widen(dt, (uint16_t)i);
                bool nan = isnan(want);
                bool ok = nan ? isnan(wide[i]) && signbit(wide[i]) == signbit(want) &&
                                    isnan(widen(dt, back[i])) && (back[i] & 0x8000) == (i & 0x8000)
                              : wide[i] == want && signbit(wide[i]) == signbit(want) && back[i] == i;
                if (!ok && bad++ < 5)
                    fprintf(stderr, "%s pattern 0x%04x via %s: %.9g, back as 0x%04x\n",
                            gf_dtype_name(dt), i, gf_dtype_name(vias[k]), wide[i], back[i]);
            }
            CHECK_MSG(bad == 0, "%s via %s: %d patterns off", gf_dtype_name(dt),
                      gf_dtype_name(vias[k]), bad);
        }
        /* midpoints of the finite neighbours (i, i + 1), both signs */
        double *mids = malloc((size_t)N * 5 * sizeof(double));
        int32_t *lo_of = malloc((size_t)N * sizeof(int32_t));
        int m = 0;
        for (int s = 0; s < 2 && mids && lo_of; s++) {
            for (int i = 0; i < 0x7fff; i++) {
                uint16_t a = (uint16_t)(i | (s << 15)), b = (uint16_t)((i + 1) | (s << 15));
                double lo = widen(dt, a), hi = widen(dt, b);
                if (!isfinite(lo) || !isfinite(hi)) break;
                double mid = lo + (hi - lo) / 2, up = s ? -INFINITY : INFINITY;
                /* a hair: the next f32 toward each side, then the next f64 (which
                 * only the f64 path keeps: one rounding, not two) */
                mids[5 * m] = mid;
                mids[5 * m + 1] = nextafterf((float)mid, (float)up);
                mids[5 * m + 2] = nextafterf((float)mid, (float)-up);
                mids[5 * m + 3] = nextafter(mid, up);
                mids[5 * m + 4] = nextafter(mid, -up);
                lo_of[m++] = i | (s << 15);
            }
        }
        for (int k = 0; k < 2 && mids && lo_of; k++) {
            uint16_t *got = narrow(mids, 5 * (int64_t)m, vias[k], dt);
            int bad = 0;
            for (int j = 0; got && j < m; j++) {
                int i = lo_of[j];
                uint16_t even = (i & 1) ? (uint16_t)(i + 1) : (uint16_t)i;
                const uint16_t *g = got + 5 * j;
                bool ok = g[0] == even && g[1] == (uint16_t)(i + 1) && g[2] == (uint16_t)i;
                if (vias[k] == GF_F64) ok = ok && g[3] == (uint16_t)(i + 1) && g[4] == (uint16_t)i;
                else ok = ok && g[3] == even && g[4] == even; /* f32 has no such hair */
                if (!ok && bad++ < 5)
                    fprintf(stderr, "%s via %s between 0x%04x and 0x%04x: %04x %04x %04x %04x %04x\n",
                            gf_dtype_name(dt), gf_dtype_name(vias[k]), i, i + 1, g[0], g[1], g[2],
                            g[3], g[4]);
            }
            CHECK_MSG(bad == 0, "%s via %s: %d midpoints off", gf_dtype_name(dt),
                      gf_dtype_name(vias[k]), bad);
            free(got);
        }
        CHECK(m > 60000);
        free(mids);
        free(lo_of);
        free(bits);
        free(back);
        free(wide);
    }
}

int main(void) {
    gf_scope_begin();
    RUN(test_rounding);
    RUN(test_all_patterns);
    RUN(test_against_torch);
    gf_scope_end();
    return CHECK_REPORT();
}
