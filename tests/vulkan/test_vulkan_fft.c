/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vulkan_fft.c — the FFT on vulkan:0 against the reference plugin
 * (cpu:0), every kind the plugin computes (C2C, R2C, C2R) through the
 * public transforms (fft, ifft, rfft, ihfft, irfft, hfft, and their 2-D and
 * n-D forms), c64 and c128 (f32 and f64 real sides):
 *   - 1-D lines of lengths 1, 2, 3, 4, 5, 7, 12, 16, 32, 100, 512, 1000,
 *     1024, 2048 and 4097 (powers of two up to 1024 in shared memory, an
 *     even and an odd count of stages, longer ones by the radix-2 passes,
 *     the others by Bluestein's algorithm), in batches of 3 (a group of two
 *     lines and a partial one), every norm; vulkan.test_vulkan_fft_passes
 *     runs it all with GRAFT_VULKAN_FFT_BLOCK=0 (the passes only);
 *   - C2R inputs random in every bin: the imaginary parts of bins 0 and n/2
 *     must be ignored as the reference ignores them;
 *   - strided inputs (transposed, every other element) along either dim;
 *   - 2-D and 3-D transforms with the dims in any order, the onesided dim
 *     not the last;
 *   - that none of it fell back to the reference device.
 * The error of a result is max |got - want| over max |want| (the parts of
 * complex results compared as reals), held to 1e-5 for c64 (computed in
 * float where the device has no shaderFloat64: GRAFT_VULKAN_NO_F64=1 runs
 * this program so) and 1e-12 for c128.
 *
 *   test_vulkan_fft            the checks, each held to its bound
 *   test_vulkan_fft --report   every case's error and the worst per kind
 *                              and dtype, no bounds, then a few timings of
 *                              vulkan:0 against cpu:0 (the fallback path) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <time.h>

#include "vk_test.h"

static bool report_only;
static bool has_c128;

/* The worst error per kind (c2c, r2c, c2r) and precision (single, double). */
static double worst[3][2];
static const char *const kind_name[3] = {"c2c", "r2c", "c2r"};

/* A real tensor's values (complex: its parts) on the host, contiguous. */
static double *host_values(const gf_tensor *t, int64_t *n) {
    bool cx = gf_tensor_dtype(t) == GF_C64 || gf_tensor_dtype(t) == GF_C128;
    gf_tensor *r = cx ? gf_view_as_real(t) : NULL;
    gf_tensor *c = gf_contiguous(r ? r : t);
    xd_host h = {0};
    double *out = NULL;
    *n = 0;
    if (c && xd_host_read(c, &h)) {
        out = malloc((size_t)(h.n > 0 ? h.n : 1) * sizeof *out);
        for (int64_t i = 0; out && i < h.n; i++) out[i] = xd_host_at(&h, i);
        *n = h.n;
    }
    free(h.raw);
    gf_tensor_release(c);
    gf_tensor_release(r);
    return out;
}

/* got (vulkan:0) against want (cpu:0): dtype, shape, device, and the error
 * max |got - want| / max |want| within the bound of its precision. Releases
 * both. */
static void fft_check(const char *what, int kind, gf_tensor *want, gf_tensor *got) {
    CHECK_MSG(want && got, "%s: NULL result: %s", what, gf_last_error());
    if (!want || !got) {
        gf_clear_error();
        gf_tensor_release(want);
        gf_tensor_release(got);
        return;
    }
    gf_dtype dt = gf_tensor_dtype(want);
    bool single = dt == GF_C64 || dt == GF_F32;
    bool same = gf_tensor_dtype(got) == dt && gf_tensor_rank(got) == gf_tensor_rank(want);
    for (int i = 0; same && i < gf_tensor_rank(want); i++)
        same = gf_tensor_sizes(got)[i] == gf_tensor_sizes(want)[i];
    CHECK_MSG(same, "%s: dtype %s or shape differs from the reference's (%s)", what,
              gf_dtype_name(gf_tensor_dtype(got)), gf_dtype_name(dt));
    CHECK_MSG(!strcmp(gf_device_spec(gf_tensor_device(got)), "vulkan:0"),
              "%s: the result lives on %s", what, gf_device_spec(gf_tensor_device(got)));
    int64_t ng = 0, nw = 0;
    double *g = same ? host_values(got, &ng) : NULL, *w = same ? host_values(want, &nw) : NULL;
    CHECK_MSG(!same || (g && w && ng == nw), "%s: reading the results failed: %s", what,
              gf_last_error());
    if (g && w && ng == nw) {
        double big = 0, diff = 0;
        bool finite = true;
        for (int64_t i = 0; i < nw; i++) {
            finite = finite && isfinite(g[i]);
            big = fmax(big, fabs(w[i]));
            diff = fmax(diff, fabs(g[i] - w[i]));
        }
        double err = finite ? (big > 0 ? diff / big : diff) : INFINITY;
        double bound = single ? 1e-5 : 1e-12;
        if (err > worst[kind][single ? 0 : 1]) worst[kind][single ? 0 : 1] = err;
        if (report_only) printf("  %-44s %-4s %.3g\n", what, gf_dtype_name(dt), err);
        else
            CHECK_MSG(err <= bound, "%s (%s): error %.3g of max |want| %.3g, bound %.1g", what,
                      gf_dtype_name(dt), err, big, bound);
    }
    free(g);
    free(w);
    gf_tensor_release(want);
    gf_tensor_release(got);
}

/* A complex pair (parts in [-1, 1)) of logical shape sizes (rank 2 for the
 * strided layouts): VT_TRANSPOSED is the transpose of a contiguous
 * complex tensor, VT_STEP2 every other element of one twice as wide. */
static vt_pair cx_rand(gf_dtype cdt, int rank, const int64_t *sizes, uint32_t seed, int layout) {
    gf_dtype part = cdt == GF_C64 ? GF_F32 : GF_F64;
    int64_t s[8];
    for (int i = 0; i < rank; i++) s[i] = sizes[i];
    if (layout == VT_TRANSPOSED) s[0] = sizes[1], s[1] = sizes[0];
    if (layout == VT_STEP2) s[rank - 1] *= 2;
    vt_pair re = vt_rand(part, rank, s, seed, -1, 1, VT_CONTIG);
    vt_pair im = vt_rand(part, rank, s, seed + 101, -1, 1, VT_CONTIG);
    vt_pair out = {gf_complex(re.c, im.c), gf_complex(re.v, im.v)};
    vt_release(re);
    vt_release(im);
    gf_tensor *c = out.c, *v = out.v;
    if (layout == VT_TRANSPOSED) {
        out.c = gf_transpose(c, 0, 1);
        out.v = gf_transpose(v, 0, 1);
    } else if (layout == VT_STEP2) {
        out.c = gf_slice(c, rank - 1, 0, s[rank - 1], 2);
        out.v = gf_slice(v, rank - 1, 0, s[rank - 1], 2);
    } else {
        return out;
    }
    gf_tensor_release(c);
    gf_tensor_release(v);
    return out;
}

typedef gf_tensor *(*fft1_fn)(const gf_tensor *, int64_t, int, gf_fft_norm);

/* One 1-D transform of x.c and x.v along dim, compared. */
static void one(const char *name, int kind, fft1_fn f, vt_pair x, int64_t n, int dim,
                gf_fft_norm norm, const char *shape) {
    char what[96];
    static const char *const norms[3] = {"backward", "ortho", "forward"};
    snprintf(what, sizeof what, "%s n=%lld dim %d %s %s", name, (long long)n, dim, norms[norm],
             shape);
    fft_check(what, kind, f(x.c, n, dim, norm), f(x.v, n, dim, norm));
}

static const int64_t lengths[] = {1, 2, 3, 4, 5, 7, 12, 16, 32, 100, 512, 1000, 1024, 2048, 4097};
#define N_LENGTHS (int)(sizeof lengths / sizeof lengths[0])

static int precisions(void) { return has_c128 ? 2 : 1; }
static gf_dtype real_dt(int t) { return t ? GF_F64 : GF_F32; }
static gf_dtype cx_dt(int t) { return t ? GF_C128 : GF_C64; }

/* Every kind over lines of each length, batches of 3, each norm. */
static void test_lengths(void) {
    for (int t = 0; t < precisions(); t++)
        for (int li = 0; li < N_LENGTHS; li++) {
            int64_t n = lengths[li], h = n / 2 + 1;
            int64_t full[2] = {3, n}, half[2] = {3, h};
            gf_fft_norm norm = (gf_fft_norm)(li % 3);
            vt_pair xr = vt_rand(real_dt(t), 2, full, 40 + (uint32_t)li, -1, 1, VT_CONTIG);
            vt_pair xc = cx_rand(cx_dt(t), 2, full, 60 + (uint32_t)li, VT_CONTIG);
            vt_pair xh = cx_rand(cx_dt(t), 2, half, 80 + (uint32_t)li, VT_CONTIG);
            one("fft", 0, gf_fft, xc, n, 1, norm, "[3, n]");
            one("ifft", 0, gf_ifft, xc, n, 1, (gf_fft_norm)((li + 1) % 3), "[3, n]");
            one("fft of real", 0, gf_fft, xr, n, 1, norm, "[3, n]");
            one("rfft", 1, gf_rfft, xr, n, 1, norm, "[3, n]");
            one("ihfft", 1, gf_ihfft, xr, n, 1, (gf_fft_norm)((li + 2) % 3), "[3, n]");
            one("irfft", 2, gf_irfft, xh, n, 1, norm, "[3, n/2+1]");
            one("hfft", 2, gf_hfft, xh, n, 1, (gf_fft_norm)((li + 1) % 3), "[3, n/2+1]");
            vt_release(xr);
            vt_release(xc);
            vt_release(xh);
        }
}

/* Strided inputs, the transformed dim either the strided one or not. */
static void test_strided(void) {
    static const int64_t ns[3] = {8, 9, 100};
    for (int t = 0; t < precisions(); t++)
        for (int layout = VT_TRANSPOSED; layout <= VT_STEP2; layout++)
            for (int k = 0; k < 3; k++)
                for (int dim = 0; dim < 2; dim++) {
                    int64_t n = ns[k], m = 5 + k;
                    int64_t full[2] = {dim ? m : n, dim ? n : m};
                    int64_t half[2] = {full[0], full[1]};
                    half[dim] = n / 2 + 1;
                    const char *shape = vt_layout_name[layout];
                    vt_pair xr = vt_rand(real_dt(t), 2, full, 7 + (uint32_t)k, -1, 1, layout);
                    vt_pair xc = cx_rand(cx_dt(t), 2, full, 17 + (uint32_t)k, layout);
                    vt_pair xh = cx_rand(cx_dt(t), 2, half, 27 + (uint32_t)k, layout);
                    one("fft", 0, gf_fft, xc, n, dim, GF_FFT_NORM_BACKWARD, shape);
                    one("rfft", 1, gf_rfft, xr, n, dim, GF_FFT_NORM_ORTHO, shape);
                    one("irfft", 2, gf_irfft, xh, n, dim, GF_FFT_NORM_BACKWARD, shape);
                    vt_release(xr);
                    vt_release(xc);
                    vt_release(xh);
                }
}

typedef gf_tensor *(*fftn_fn)(const gf_tensor *, const int64_t *, int, const int *, int,
                              gf_fft_norm);

static void many(const char *name, int kind, fftn_fn f, vt_pair x, const int64_t *s, int n_s,
                 const int *dims, int n_dims, gf_fft_norm norm) {
    char what[96];
    int at = snprintf(what, sizeof what, "%s dims", name);
    for (int i = 0; i < n_dims && at < (int)sizeof what; i++)
        at += snprintf(what + at, sizeof what - (size_t)at, "%s%d", i ? "," : " ", dims[i]);
    fft_check(what, kind, f(x.c, s, n_s, dims, n_dims, norm), f(x.v, s, n_s, dims, n_dims, norm));
}

/* 2-D and 3-D transforms, dims in either order, the onesided dim first. */
static void test_nd(void) {
    for (int t = 0; t < precisions(); t++) {
        int64_t s2[2] = {6, 10}, s3[3] = {4, 7, 9};
        int d01[2] = {0, 1}, d10[2] = {1, 0}, d3[3] = {1, 2, 0};
        vt_pair xr = vt_rand(real_dt(t), 2, s2, 91, -1, 1, VT_TRANSPOSED);
        vt_pair xc = cx_rand(cx_dt(t), 2, s2, 92, VT_CONTIG);
        many("fft2 [6, 10]", 0, gf_fftn, xc, NULL, 0, d10, 2, GF_FFT_NORM_ORTHO);
        many("ifft2 [6, 10]", 0, gf_ifftn, xc, NULL, 0, d01, 2, GF_FFT_NORM_BACKWARD);
        many("rfft2 [6, 10] transposed", 1, gf_rfftn, xr, NULL, 0, d01, 2, GF_FFT_NORM_BACKWARD);
        many("rfft2 [6, 10] onesided dim 0", 1, gf_rfftn, xr, NULL, 0, d10, 2,
             GF_FFT_NORM_FORWARD);
        int64_t sh[2] = {6, 6}, s_out[2] = {6, 10}, s_odd[2] = {6, 9}; /* dims {1, 0}: dim 1 6, dim 0 9 */
        vt_pair xh = cx_rand(cx_dt(t), 2, sh, 93, VT_CONTIG);
        many("irfft2 [6, 6] -> [6, 10]", 2, gf_irfftn, xh, s_out, 2, d01, 2,
             GF_FFT_NORM_BACKWARD);
        many("irfft2 [6, 6] -> [11, 6] onesided dim 0", 2, gf_irfftn, xh, (int64_t[2]){6, 11}, 2,
             d10, 2, GF_FFT_NORM_ORTHO);
        many("hfftn [6, 6] -> [9, 6]", 2, gf_hfftn, xh, s_odd, 2, d10, 2, GF_FFT_NORM_BACKWARD);
        vt_release(xr);
        vt_release(xc);
        vt_release(xh);
        vt_pair yr = vt_rand(real_dt(t), 3, s3, 94, -1, 1, VT_CONTIG);
        vt_pair yc = cx_rand(cx_dt(t), 3, s3, 95, VT_CONTIG);
        many("fftn [4, 7, 9]", 0, gf_fftn, yc, NULL, 0, d3, 3, GF_FFT_NORM_ORTHO);
        many("rfftn [4, 7, 9]", 1, gf_rfftn, yr, NULL, 0, d3, 3, GF_FFT_NORM_BACKWARD);
        int64_t s3h[3] = {3, 7, 9}, s3n[3] = {7, 9, 4}; /* s in dims' order, dim 0 onesided */
        vt_pair yh = cx_rand(cx_dt(t), 3, s3h, 96, VT_CONTIG);
        many("irfftn [3, 7, 9] -> [4, 7, 9]", 2, gf_irfftn, yh, s3n, 3, d3, 3,
             GF_FFT_NORM_FORWARD);
        vt_release(yr);
        vt_release(yc);
        vt_release(yh);
    }
}

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wall time of f(x) to a result on the host, the best of 3. */
static double time_one(fft1_fn f, const gf_tensor *x, int64_t n) {
    double best = INFINITY;
    for (int r = 0; r < 3; r++) {
        double t0 = seconds();
        gf_tensor *y = f(x, n, -1, GF_FFT_NORM_BACKWARD);
        int64_t cnt = 0;
        double *v = y ? host_values(y, &cnt) : NULL;
        double dt = seconds() - t0;
        free(v);
        gf_tensor_release(y);
        if (dt < best) best = dt;
    }
    return best;
}

static void report_timings(void) {
    static const struct {
        const char *name;
        fft1_fn f;
        int64_t n;
        bool real;
    } cases[] = {{"fft", gf_fft, 1024, false},  {"fft", gf_fft, 1000, false},
                 {"rfft", gf_rfft, 4096, true}, {"rfft", gf_rfft, 4097, true},
                 {"irfft", gf_irfft, 4096, false}};
    printf("timings, 64 lines each (vulkan:0 / cpu:0, ms):\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t n = cases[i].n, s[2] = {64, cases[i].f == gf_irfft ? n / 2 + 1 : n};
        vt_pair x = cases[i].real ? vt_rand(GF_F32, 2, s, 5, -1, 1, VT_CONTIG)
                                  : cx_rand(GF_C64, 2, s, 5, VT_CONTIG);
        double tv = time_one(cases[i].f, x.v, n), tc = time_one(cases[i].f, x.c, n);
        printf("  %-6s n=%-5lld c64  %8.2f / %8.2f\n", cases[i].name, (long long)n, tv * 1e3,
               tc * 1e3);
        vt_release(x);
    }
}

int main(int argc, char **argv) {
    report_only = argc > 1 && !strcmp(argv[1], "--report");
    int rc = vt_setup();
    if (rc) return rc;
    gf_device_info info;
    CHECK(gf_device_get_info(vt_vk, &info) == GF_OK);
    has_c128 = (info.dtypes & (1u << GF_C128)) != 0;
    printf("vulkan:0 stores c64%s\n", has_c128 ? " and c128" : " (no shaderFloat64: no c128)");
    gf_fallback_reset_stats(vt_vk);
    RUN(test_lengths);
    RUN(test_strided);
    RUN(test_nd);
    gf_fallback_stats fs;
    CHECK(gf_fallback_get_stats(vt_vk, &fs) == GF_OK);
    CHECK_MSG(fs.ops == 0, "%llu op(s) of %d kind(s) fell back from vulkan:0",
              (unsigned long long)fs.ops, fs.distinct_ops);
    if (report_only) {
        printf("worst error (max |got - want| / max |want|):\n");
        for (int k = 0; k < 3; k++)
            printf("  %s  single %.3g  double %.3g\n", kind_name[k], worst[k][0], worst[k][1]);
        report_timings();
    }
    return xd_finish();
}
