/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ocl_fft.c — every route of the OpenCL plugin's FFT (ocl_fft.c)
 * against the reference plugin:
 *   - lines held in local memory (fx_block): every power of two from 4 to
 *     the block's limit, an odd and an even count of stages, a line count
 *     that does not fill the last group, along the last dim and a middle one;
 *   - lines of 2 (one item per line);
 *   - contiguous lines longer than a block: the four-step split (odd and
 *     even splits, few lines and many);
 *   - long lines along a strided dim: a launch per stage (few lines) and an
 *     item per line (many);
 *   - Bluestein for other lengths, its padded transforms in a block or split;
 *   - inverse, R2C, C2R and a 2-D transform.
 * Computed in double where the device has doubles (c128 compared to 1e-12 of
 * the largest bin), else in float (c64, 2e-6); run both ways by CTest
 * (test_ocl_fft, and test_ocl_fft_nofp64 with GRAFT_OPENCL_DISABLE_FP64=1). */
#include "xd_test.h"

static gf_dtype cdt; /* c128 where the device stores it, else c64 */
static double rel_tol;

/* A pair of the same complex values (a smooth pattern with a kink, so every
 * bin matters) on the device and the reference. */
static void pair(const int64_t *sizes, int rank, gf_tensor **dev, gf_tensor **ref) {
    int64_t n = xd_numel(rank, sizes);
    double *v = malloc((size_t)(2 * n) * sizeof *v);
    CHECK(v != NULL);
    if (!v) return;
    for (int64_t i = 0; i < 2 * n; i++)
        v[i] = sin(0.37 * (double)i + 0.3) + (double)((i * 7919) % 17) / 17.0 - 0.5;
    gf_tensor *d128 = gf_from_data(v, sizes, rank, GF_C128, xd_ref);
    *ref = d128 ? gf_to_dtype(d128, cdt) : NULL;
    *dev = *ref ? gf_to_device(*ref, xd_dev) : NULL;
    gf_tensor_release(d128);
    free(v);
    CHECK_MSG(*dev && *ref, "inputs: %s", gf_last_error());
}

/* max |got - want| <= rel_tol * max |want| over the real and imaginary
 * parts (or the real values of a C2R); releases both. */
static void compare(const char *what, gf_tensor *got, gf_tensor *want) {
    CHECK_MSG(got && want, "%s: %s", what, gf_last_error());
    xd_err e = xd_err_of(got, want);
    CHECK_MSG(e.ok, "%s: results of different sizes, or unreadable: %s", what, gf_last_error());
    CHECK_MSG(e.ok && e.err <= rel_tol * e.top, "%s: error %.3g at element %lld, %.3g of the "
              "largest value %.3g (allowed %.1g)", what, e.err, (long long)e.at,
              e.top > 0 ? e.err / e.top : e.err, e.top, rel_tol);
    gf_tensor_release(got);
    gf_tensor_release(want);
}

#define BW GF_FFT_NORM_BACKWARD
#define DEF GF_FFT_SIZE_DEFAULT

/* fft (and ifft) of x [sizes] along dim, device against reference. */
static void fft_case(const char *what, const int64_t *sizes, int rank, int dim) {
    gf_tensor *x, *xr;
    pair(sizes, rank, &x, &xr);
    char name[160];
    snprintf(name, sizeof name, "fft %s", what);
    compare(name, gf_fft(x, DEF, dim, BW), gf_fft(xr, DEF, dim, BW));
    snprintf(name, sizeof name, "ifft %s", what);
    compare(name, gf_ifft(x, DEF, dim, GF_FFT_NORM_ORTHO), gf_ifft(xr, DEF, dim, GF_FFT_NORM_ORTHO));
    gf_tensor_release(x);
    gf_tensor_release(xr);
}

static void test_block_lengths(void) {
    for (int64_t n = 2; n <= 1024; n *= 2) { /* 2: an item per line; 4..: fx_block */
        char what[64];
        snprintf(what, sizeof what, "of %lld, 1 line", (long long)n);
        fft_case(what, SZ(1, n), 2, 1);
        snprintf(what, sizeof what, "of %lld, 37 lines", (long long)n);
        fft_case(what, SZ(37, n), 2, 1); /* the last group not full */
    }
    fft_case("of 128 along a middle dim [3, 128, 5]", SZ(3, 128, 5), 3, 1);
    fft_case("of 64 along the first dim [64, 70]", SZ(64, 70), 2, 0);
    fft_case("of 1024 along a middle dim [2, 1024, 3]", SZ(2, 1024, 3), 3, 1);
}

static void test_long_lines(void) {
    fft_case("of 2048 (split 32 x 64), 1 line", SZ(1, 2048), 2, 1);
    fft_case("of 2048, 40 lines (split, many lines)", SZ(40, 2048), 2, 1);
    fft_case("of 2^14 (split 128 x 128), 3 lines", SZ(3, 16384), 2, 1);
    fft_case("of 2^17 (split 256 x 512)", SZ(1, 131072), 2, 1);
    fft_case("of 2048 along a strided dim, 3 lines (a launch per stage)", SZ(2048, 3), 2, 0);
    fft_case("of 2048 along a strided dim, 40 lines (an item per line)", SZ(2048, 40), 2, 0);
}

static void test_bluestein(void) {
    fft_case("of 13, 5 lines (padded to 32)", SZ(5, 13), 2, 1);
    fft_case("of 13 along a middle dim [4, 13, 3]", SZ(4, 13, 3), 3, 1);
    fft_case("of 300, 9 lines (padded to 1024)", SZ(9, 300), 2, 1);
    fft_case("of 1000, 3 lines (padded to 2048: split)", SZ(3, 1000), 2, 1);
    fft_case("of 1031 (a prime) along a strided dim", SZ(1031, 2), 2, 0);
}

static void test_real_and_2d(void) {
    int64_t n = 1024;
    gf_tensor *x, *xr;
    pair(SZ(6, n), 2, &x, &xr);
    gf_tensor *re = gf_real(x), *rr = gf_real(xr);
    compare("rfft of 1024", gf_rfft(re, DEF, 1, BW), gf_rfft(rr, DEF, 1, BW));
    compare("rfft of 1000 (n given)", gf_rfft(re, 1000, 1, BW), gf_rfft(rr, 1000, 1, BW));
    compare("irfft to 1024", gf_irfft(x, 1024, 1, BW), gf_irfft(xr, 1024, 1, BW));
    compare("irfft to 999", gf_irfft(x, 999, 1, GF_FFT_NORM_FORWARD),
            gf_irfft(xr, 999, 1, GF_FFT_NORM_FORWARD));
    gf_tensor_release(re);
    gf_tensor_release(rr);
    gf_tensor_release(x);
    gf_tensor_release(xr);
    pair(SZ(64, 96), 2, &x, &xr);
    const int dims[2] = {0, 1};
    compare("fft2 of [64, 96]", gf_fftn(x, NULL, 0, dims, 2, BW), gf_fftn(xr, NULL, 0, dims, 2, BW));
    gf_tensor_release(x);
    gf_tensor_release(xr);
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    cdt = xd_stores(GF_C128) ? GF_C128 : GF_C64;
    rel_tol = cdt == GF_C128 ? 1e-12 : 2e-6;
    printf("computing in %s\n", gf_dtype_name(cdt));
    RUN(test_block_lengths);
    RUN(test_long_lines);
    RUN(test_bluestein);
    RUN(test_real_and_2d);
    return xd_finish();
}
