/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vulkan_complex.c — the complex dtypes on vulkan:0 against the
 * reference plugin (cpu:0), beyond what graft-plugin-check covers:
 *   - the error of complex exp, log, sqrt, sin, tanh, asin and atan in ulp
 *     of the result's larger part, c64 and c128, over 2^16 inputs each;
 *   - tril, triu and where (bit moves, c64 as i64, c128 part by part);
 *   - sum, mean and prod over lines long enough for several passes;
 *   - matmul through the real GEMM with strided and broadcast operands;
 *   - index_select, gather, index_add and scatter_add on complex data;
 *   - the FFT of power-of-two lengths (norms, inverse, views, 2-D, 2^16;
 *     test_vulkan_fft.c checks every kind and other lengths);
 *   - that none of it fell back to the reference device, and that c128 is
 *     stored exactly when the device has shaderFloat64 (GRAFT_VULKAN_NO_F64=1
 *     runs this program as on a device without it: c64 then computes in
 *     float, c128 is not stored).
 *
 *   test_vulkan_complex            the checks, each held to its bound
 *   test_vulkan_complex --report   every op's max error, no bounds */
#include <float.h>

#include "vk_test.h"

static bool report_only;
static bool has_c128; /* vulkan:0 stores c128 (so it computes in double) */

/* A complex pair of parts drawn in [lo, hi) x [ilo, ihi), in a layout. */
static vt_pair cx_rand(gf_dtype cdt, int rank, const int64_t *sizes, uint32_t seed, double lo,
                       double hi, double ilo, double ihi, int layout) {
    gf_dtype part = cdt == GF_C64 ? GF_F32 : GF_F64;
    vt_pair re = vt_rand(part, rank, sizes, seed, lo, hi, layout);
    vt_pair im = vt_rand(part, rank, sizes, seed + 101, ilo, ihi, layout);
    vt_pair out = {gf_complex(re.c, im.c), gf_complex(re.v, im.v)};
    vt_release(re);
    vt_release(im);
    if (layout == VT_TRANSPOSED && rank == 2) { /* a complex view with strides */
        gf_tensor *tc = gf_transpose(out.c, 0, 1), *tv = gf_transpose(out.v, 0, 1);
        vt_release(out);
        out.c = tc;
        out.v = tv;
    }
    return out;
}

/* got against want (complex), parts compared as reals. */
static void cx_compare(const char *what, const gf_tensor *want, const gf_tensor *got, double atol,
                       double rtol) {
    CHECK_MSG(want && got, "%s: NULL result: %s", what, gf_last_error());
    if (!want || !got) {
        gf_clear_error();
        return;
    }
    CHECK_MSG(gf_tensor_dtype(got) == gf_tensor_dtype(want), "%s: dtype %s, expected %s", what,
              gf_dtype_name(gf_tensor_dtype(got)), gf_dtype_name(gf_tensor_dtype(want)));
    CHECK_MSG(!strcmp(gf_device_spec(gf_tensor_device(got)), "vulkan:0"),
              "%s: the result lives on %s", what, gf_device_spec(gf_tensor_device(got)));
    gf_tensor *rw = gf_view_as_real(want), *rg = gf_view_as_real(got);
    vt_compare(what, rw, rg, atol, rtol);
    gf_tensor_release(rw);
    gf_tensor_release(rg);
}

/* The complex values of t on the host, as doubles (re, im interleaved). */
static double *cx_host(const gf_tensor *t, int64_t *n) {
    gf_tensor *r = gf_view_as_real(t);
    gf_tensor *c = r ? gf_contiguous(r) : NULL;
    xd_host h = {0};
    double *out = NULL;
    *n = 0;
    if (c && xd_host_read(c, &h)) {
        out = malloc((size_t)(h.n > 0 ? h.n : 1) * sizeof *out);
        for (int64_t i = 0; out && i < h.n; i++) out[i] = xd_host_at(&h, i);
        *n = h.n / 2;
    }
    free(h.raw);
    gf_tensor_release(c);
    gf_tensor_release(r);
    return out;
}

/* The error of got against want (the reference's result, rounded once
 * from double for c64) in units of the last place of want's larger part:
 * max(|d re|, |d im|) / ulp(max(|re|, |im|)). Non-finite results must
 * agree in kind. */
static double cx_ulp_error(const double *got, const double *want, int64_t n, bool c64,
                           int64_t *worst) {
    double e = 0;
    *worst = -1;
    for (int64_t i = 0; i < n; i++) {
        double gr = got[2 * i], gi = got[2 * i + 1], wr = want[2 * i], wi = want[2 * i + 1];
        if (!isfinite(wr) || !isfinite(wi) || !isfinite(gr) || !isfinite(gi)) {
            bool same = (isnan(wr) == isnan(gr)) && (isnan(wi) == isnan(gi)) &&
                        (!isinf(wr) || wr == gr) && (!isinf(wi) || wi == gi);
            if (!same) {
                *worst = i;
                return INFINITY;
            }
            continue;
        }
        double m = fmax(fabs(wr), fabs(wi));
        int ex;
        frexp(m, &ex);
        double ulp = c64 ? ldexp(1.0, (ex - 24 < -149 ? -149 : ex - 24))
                         : ldexp(1.0, (ex - 53 < -1074 ? -1074 : ex - 53));
        if (c64 && m < FLT_MIN) ulp = FLT_MIN; /* a device may flush f32 subnormals */
        double d = fmax(fabs(gr - wr), fabs(gi - wi)) / ulp;
        if (d > e) {
            e = d;
            *worst = i;
        }
    }
    return e;
}

typedef gf_tensor *(*unary_fn)(const gf_tensor *);

static void ulp_case(const char *name, unary_fn f, gf_dtype cdt, double lo, double hi, double ilo,
                     double ihi, double bound) {
    int64_t sizes[1] = {1 << 16};
    vt_pair z = cx_rand(cdt, 1, sizes, 11, lo, hi, ilo, ihi, VT_CONTIG);
    gf_tensor *r = f(z.c), *g = f(z.v);
    char what[80];
    snprintf(what, sizeof what, "%s %s", name, gf_dtype_name(cdt));
    CHECK_MSG(r && g, "%s: NULL result: %s", what, gf_last_error());
    int64_t n = 0, ng = 0, worst = -1;
    double *want = r ? cx_host(r, &n) : NULL, *got = g ? cx_host(g, &ng) : NULL;
    if (want && got && n == ng) {
        double e = cx_ulp_error(got, want, n, cdt == GF_C64, &worst);
        double *in = cx_host(z.c, &ng);
        printf("  %-12s max %.3g ulp", what, e);
        if (worst >= 0 && in)
            printf(" at (%.9g, %.9g): got (%.17g, %.17g), reference (%.17g, %.17g)",
                   in[2 * worst], in[2 * worst + 1], got[2 * worst], got[2 * worst + 1],
                   want[2 * worst], want[2 * worst + 1]);
        printf("\n");
        free(in);
        if (!report_only)
            CHECK_MSG(e <= bound, "%s: %.3g ulp exceeds the bound of %g", what, e, bound);
    }
    free(want);
    free(got);
    gf_tensor_release(r);
    gf_tensor_release(g);
    vt_release(z);
}

static void test_ulp(void) {
    gf_dtype dts[2] = {GF_C64, GF_C128};
    for (int t = 0; t < (has_c128 ? 2 : 1); t++) {
        gf_dtype dt = dts[t];
        /* c64 in double (f64 devices): rounded once, as the reference; in
         * float (GRAFT_VULKAN_NO_F64): a few ulp. c128 against glibc's C99
         * complex functions. */
        bool in_float = dt == GF_C64 && !has_c128;
        double b1 = in_float ? 4 : dt == GF_C64 ? 1 : 6; /* exp, log, sqrt */
        double b2 = in_float ? 8 : dt == GF_C64 ? 1 : 12; /* sin, tanh, asin, atan */
        ulp_case("exp", gf_exp, dt, -20, 20, -20, 20, b1);
        ulp_case("log", gf_log, dt, -100, 100, -100, 100, b1);
        ulp_case("log near 1", gf_log, dt, 0.5, 1.5, -0.5, 0.5, b1 * 4);
        ulp_case("sqrt", gf_sqrt, dt, -100, 100, -100, 100, b1);
        ulp_case("sin", gf_sin, dt, -10, 10, -5, 5, b2);
        ulp_case("tanh", gf_tanh, dt, -5, 5, -1.5, 1.5, b2 * 2);
        ulp_case("asin", gf_asin, dt, -3, 3, -3, 3, b2 * 2);
        ulp_case("atan", gf_atan, dt, -3, 3, -3, 3, b2 * 2);
    }
}

/* tril, triu and where: bit moves, equal to the reference exactly. */
static void test_moves(void) {
    gf_dtype dts[2] = {GF_C64, GF_C128};
    int64_t sizes[2] = {7, 9};
    for (int t = 0; t < (has_c128 ? 2 : 1); t++)
        for (int l = 0; l < 2; l++) {
            int layout = l ? VT_TRANSPOSED : VT_CONTIG;
            vt_pair a = cx_rand(dts[t], 2, sizes, 3, -5, 5, -5, 5, layout);
            vt_pair b = cx_rand(dts[t], 2, sizes, 5, -5, 5, -5, 5, layout);
            gf_tensor *r = gf_tril(a.c, 1), *g = gf_tril(a.v, 1);
            cx_compare("tril", r, g, 0, 0);
            gf_tensor_release(r);
            gf_tensor_release(g);
            r = gf_triu(a.c, -2);
            g = gf_triu(a.v, -2);
            cx_compare("triu", r, g, 0, 0);
            gf_tensor_release(r);
            gf_tensor_release(g);
            int64_t cs[2] = {sizes[l], sizes[1 - l]};
            vt_pair c = vt_rand(GF_BOOL, 2, cs, 9, 0, 1, layout);
            r = gf_where(c.c, a.c, b.c);
            g = gf_where(c.v, a.v, b.v);
            cx_compare("where", r, g, 0, 0);
            gf_tensor_release(r);
            gf_tensor_release(g);
            vt_release(c);
            vt_release(a);
            vt_release(b);
        }
}

/* sum, mean and prod: short lines (one pass), long lines (two and three
 * passes of 1024-element chunks), over several dims of a strided view. */
static void test_reduce(void) {
    gf_dtype dts[2] = {GF_C64, GF_C128};
    struct { int rank; int64_t s[3]; int dims[2], nd; } c[] = {
        {2, {5, 7}, {1}, 1},
        {2, {3, 5000}, {1}, 1},
        {1, {1100000}, {0}, 1},
        {3, {40, 3, 60}, {0, 2}, 2},
        {2, {4, 0}, {1}, 1},
    };
    for (int t = 0; t < (has_c128 ? 2 : 1); t++)
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            double tol = t == 0 ? 2e-5 : 1e-12;
            int layout = c[i].rank == 2 ? VT_TRANSPOSED : VT_CONTIG;
            vt_pair x = cx_rand(dts[t], c[i].rank, c[i].s, 7, -1, 1, -1, 1, layout);
            int nd = c[i].nd;
            int dims[2] = {c[i].dims[0], c[i].dims[1]};
            gf_tensor *r = gf_sum(x.c, dims, nd, false), *g = gf_sum(x.v, dims, nd, false);
            cx_compare("sum", r, g, tol, tol);
            gf_tensor_release(r);
            gf_tensor_release(g);
            r = gf_mean(x.c, dims, nd, true);
            g = gf_mean(x.v, dims, nd, true);
            cx_compare("mean", r, g, tol, tol);
            gf_tensor_release(r);
            gf_tensor_release(g);
            vt_release(x);
            /* prod: factors near the unit circle keep long products finite */
            x = cx_rand(dts[t], c[i].rank, c[i].s, 8, 0.999, 1.001, -0.01, 0.01, layout);
            r = gf_prod(x.c, dims, nd, false);
            g = gf_prod(x.v, dims, nd, false);
            cx_compare("prod", r, g, t == 0 ? 1e-3 : 1e-10, t == 0 ? 1e-3 : 1e-10);
            gf_tensor_release(r);
            gf_tensor_release(g);
            vt_release(x);
        }
}

/* matmul: the real GEMM on interleaved parts; a transposed (copied to a
 * unit column stride first), b strided, batches broadcast. */
static void test_matmul(void) {
    gf_dtype dts[2] = {GF_C64, GF_C128};
    struct { int ra, rb; int64_t a[3], b[3]; } c[] = {
        {2, 2, {7, 5}, {5, 3}},
        {2, 2, {65, 70}, {70, 129}},
        {3, 2, {3, 20, 17}, {17, 9}},
        {2, 2, {4, 0}, {0, 5}},
    };
    for (int t = 0; t < (has_c128 ? 2 : 1); t++)
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
            for (int l = 0; l < 2; l++) {
                int la = l && c[i].ra == 2 ? VT_TRANSPOSED : VT_CONTIG;
                int lb = !l && c[i].rb == 2 ? VT_TRANSPOSED : VT_CONTIG;
                int64_t as[3], bs[3];
                memcpy(as, c[i].a, sizeof as);
                memcpy(bs, c[i].b, sizeof bs);
                if (la == VT_TRANSPOSED) as[0] = c[i].a[1], as[1] = c[i].a[0];
                if (lb == VT_TRANSPOSED) bs[0] = c[i].b[1], bs[1] = c[i].b[0];
                vt_pair a = cx_rand(dts[t], c[i].ra, as, 3, -1, 1, -1, 1, la);
                vt_pair b = cx_rand(dts[t], c[i].rb, bs, 4, -1, 1, -1, 1, lb);
                gf_tensor *r = gf_matmul(a.c, b.c), *g = gf_matmul(a.v, b.v);
                double tol = t == 0 ? 1e-4 : 1e-12;
                cx_compare("matmul", r, g, tol, tol);
                gf_tensor_release(r);
                gf_tensor_release(g);
                vt_release(a);
                vt_release(b);
            }
}

/* The index ops on complex data (part by part on the device). */
static void test_index(void) {
    gf_dtype dts[2] = {GF_C64, GF_C128};
    int64_t xs[2] = {6, 5}, is[1] = {7}, gs[2] = {4, 5};
    double sel[7] = {5, 0, 2, 2, 4, 1, 3}, gat[20];
    for (int i = 0; i < 20; i++) gat[i] = (double)((i * 7 + 3) % 6);
    vt_pair idx = vt_make(GF_I64, 1, is, sel, 0, 0, 0, VT_CONTIG);
    vt_pair gidx = vt_make(GF_I64, 2, gs, gat, 0, 0, 0, VT_CONTIG);
    for (int t = 0; t < (has_c128 ? 2 : 1); t++)
        for (int l = 0; l < 2; l++) {
            int layout = l ? VT_TRANSPOSED : VT_CONTIG;
            int64_t s[2] = {xs[l], xs[1 - l]};
            vt_pair x = cx_rand(dts[t], 2, s, 21, -3, 3, -3, 3, layout);
            int64_t srcs[2] = {7, 5};
            vt_pair src = cx_rand(dts[t], 2, srcs, 22, -3, 3, -3, 3, VT_CONTIG);
            vt_pair gsrc = cx_rand(dts[t], 2, gs, 23, -3, 3, -3, 3, VT_CONTIG);
            gf_tensor *r = gf_index_select(x.c, 0, idx.c), *g = gf_index_select(x.v, 0, idx.v);
            cx_compare("index_select", r, g, 0, 0);
            gf_tensor_release(r);
            gf_tensor_release(g);
            r = gf_gather(x.c, 0, gidx.c);
            g = gf_gather(x.v, 0, gidx.v);
            cx_compare("gather", r, g, 0, 0);
            gf_tensor_release(r);
            gf_tensor_release(g);
            r = gf_index_add(x.c, 0, idx.c, src.c);
            g = gf_index_add(x.v, 0, idx.v, src.v);
            cx_compare("index_add", r, g, 1e-6, 1e-6);
            gf_tensor_release(r);
            gf_tensor_release(g);
            r = gf_scatter_add(x.c, 0, gidx.c, gsrc.c);
            g = gf_scatter_add(x.v, 0, gidx.v, gsrc.v);
            cx_compare("scatter_add", r, g, 1e-6, 1e-6);
            gf_tensor_release(r);
            gf_tensor_release(g);
            vt_release(x);
            vt_release(src);
            vt_release(gsrc);
        }
    vt_release(idx);
    vt_release(gidx);
}

/* FFT of power-of-two lengths on the device (radix-2 Stockham passes):
 * every norm, inverse, strided views, 2-D, a long line. */
static void test_fft(void) {
    gf_dtype dts[2] = {GF_C64, GF_C128};
    for (int t = 0; t < (has_c128 ? 2 : 1); t++) {
        double tol = t == 0 ? 2e-5 : 1e-12;
        for (int l = 0; l < 2; l++) {
            int layout = l ? VT_TRANSPOSED : VT_CONTIG;
            int64_t s[2] = {l ? 64 : 8, l ? 8 : 64};
            vt_pair x = cx_rand(dts[t], 2, s, 31, -1, 1, -1, 1, layout);
            for (int norm = 0; norm < 3; norm++) {
                gf_tensor *r = gf_fft(x.c, GF_FFT_SIZE_DEFAULT, 1, (gf_fft_norm)norm);
                gf_tensor *g = gf_fft(x.v, GF_FFT_SIZE_DEFAULT, 1, (gf_fft_norm)norm);
                cx_compare("fft", r, g, tol, tol);
                gf_tensor_release(r);
                gf_tensor_release(g);
                r = gf_ifft(x.c, GF_FFT_SIZE_DEFAULT, 0, (gf_fft_norm)norm);
                g = gf_ifft(x.v, GF_FFT_SIZE_DEFAULT, 0, (gf_fft_norm)norm);
                cx_compare("ifft", r, g, tol, tol);
                gf_tensor_release(r);
                gf_tensor_release(g);
            }
            int dims[2] = {1, 0};
            gf_tensor *r = gf_fft2(x.c, NULL, 0, dims, 2, GF_FFT_NORM_ORTHO);
            gf_tensor *g = gf_fft2(x.v, NULL, 0, dims, 2, GF_FFT_NORM_ORTHO);
            cx_compare("fft2", r, g, tol, tol);
            gf_tensor_release(r);
            gf_tensor_release(g);
            vt_release(x);
        }
        int64_t long_line[1] = {1 << 16};
        vt_pair x = cx_rand(dts[t], 1, long_line, 32, -1, 1, -1, 1, VT_CONTIG);
        gf_tensor *r = gf_fft(x.c, GF_FFT_SIZE_DEFAULT, 0, GF_FFT_NORM_ORTHO);
        gf_tensor *g = gf_fft(x.v, GF_FFT_SIZE_DEFAULT, 0, GF_FFT_NORM_ORTHO);
        cx_compare("fft 2^16", r, g, tol * 4, tol * 4);
        gf_tensor_release(r);
        gf_tensor_release(g);
        vt_release(x);
    }
}

int main(int argc, char **argv) {
    report_only = argc > 1 && !strcmp(argv[1], "--report");
    int rc = vt_setup();
    if (rc) return rc;
    gf_device_info info;
    CHECK(gf_device_get_info(vt_vk, &info) == GF_OK);
    bool f64 = (info.dtypes & (1u << GF_F64)) != 0;
    has_c128 = (info.dtypes & (1u << GF_C128)) != 0;
    CHECK_MSG(info.dtypes & (1u << GF_C64), "vulkan:0 does not store c64");
    CHECK_MSG(has_c128 == f64, "vulkan:0 stores c128 %s, f64 %s: they go together",
              has_c128 ? "yes" : "no", f64 ? "yes" : "no");
    printf("vulkan:0 stores c64%s\n", has_c128 ? " and c128" : " (no shaderFloat64: no c128)");
    gf_fallback_reset_stats(vt_vk);
    RUN(test_ulp);
    RUN(test_moves);
    RUN(test_reduce);
    RUN(test_matmul);
    RUN(test_index);
    RUN(test_fft);
    gf_fallback_stats fs;
    CHECK(gf_fallback_get_stats(vt_vk, &fs) == GF_OK);
    CHECK_MSG(fs.ops == 0, "%llu op(s) of %d kind(s) fell back from vulkan:0",
              (unsigned long long)fs.ops, fs.distinct_ops);
    return xd_finish();
}
