/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ref_abi_fft.c — the reference plugin's FFT op (ABI 1.3) launched
 * straight through the plugin ABI (no core in between): what query_op
 * answers, a strided C2C, R2C and C2R against a direct DFT, and every
 * refusal of a malformed launch, each with a message that says what is
 * wrong.
 *
 * Usage: test_ref_abi_fft [path/to/libgraft-reference.so]
 * Without an argument the path comes from GRAFT_TEST_REFERENCE_PLUGIN. */
#include <complex.h>
#include <math.h>

#include "ref_direct.h"

#define PI 3.14159265358979323846

static gfp_buffer bufs[16];
static int n_bufs;

/* A descriptor over a fresh buffer of nbytes (zeroed). */
static gfp_tensor over(int32_t dtype, int rank, const int64_t *sizes, const int64_t *strides,
                       uint64_t nbytes) {
    gfp_tensor t = rd_desc(dtype, rank, sizes, strides);
    void *host = NULL;
    if (n_bufs == 16 || P->buffer_alloc(dev, nbytes, &t.buffer, &host) != GFP_OK) {
        fprintf(stderr, "buffer_alloc failed: %s\n", last_error);
        exit(2);
    }
    bufs[n_bufs++] = t.buffer;
    memset(host, 0, (size_t)nbytes);
    return t;
}

static double complex *host_of(const gfp_tensor *t) { return (double complex *)t->buffer; }

static gfp_fft_params params(uint32_t kind, uint32_t inverse, int nd, const int *dims,
                             double scale) {
    gfp_fft_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.kind = kind;
    p.inverse = inverse;
    p.n_dims = (uint32_t)nd;
    for (int i = 0; i < nd; i++) p.dims[i] = dims[i];
    p.scale = scale;
    return p;
}

static void test_query(void) {
    int32_t c64 = GFP_C64, c128 = GFP_C128, f32 = GFP_F32, f64 = GFP_F64, i64 = GFP_I64;
    CHECK(rd_query(GFP_OP_FFT, 1, &c128, 1, &c128) == GFP_SUPPORT_STRIDED);
    CHECK(rd_query(GFP_OP_FFT, 1, &f32, 1, &c64) == GFP_SUPPORT_STRIDED);
    CHECK(rd_query(GFP_OP_FFT, 1, &c128, 1, &f64) == GFP_SUPPORT_STRIDED);
    CHECK(rd_query(GFP_OP_FFT, 1, &f32, 1, &c128) == GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_FFT, 1, &i64, 1, &c128) == GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_FFT, 1, &c64, 1, &c128) == GFP_SUPPORT_NONE);
}

/* C2C along dim 0 of a [5, 3] view with strides {6, 2} (every other
 * element), inverse and scaled, against the direct sum. */
static void test_c2c_strided(void) {
    int64_t sz[2] = {5, 3}, st[2] = {6, 2};
    gfp_tensor x = over(GFP_C128, 2, sz, st, 30 * 16), y = over(GFP_C128, 2, sz, NULL, 15 * 16);
    double complex *xv = host_of(&x);
    for (int i = 0; i < 30; i++) xv[i] = CMPLX(sin(1.3 * i), cos(0.7 * i));
    gfp_fft_params p = params(GFP_FFT_C2C, 1, 1, (const int[]){0}, 0.5);
    const gfp_tensor *in[1] = {&x}, *out[1] = {&y};
    CHECK_MSG(rd_launch(GFP_OP_FFT, in, 1, out, 1, &p) == GFP_OK, "%s", last_error);
    double complex *yv = host_of(&y);
    for (int k = 0; k < 5; k++)
        for (int c = 0; c < 3; c++) {
            double complex s = 0;
            for (int j = 0; j < 5; j++) s += xv[j * 6 + c * 2] * cexp(2 * PI * I * j * k / 5.0);
            CHECK_MSG(cabs(yv[k * 3 + c] - 0.5 * s) < 1e-14, "c2c [%d, %d]", k, c);
        }
}

/* R2C then C2R over dims {1, 0} of a real [4, 6] (the onesided dim is 0):
 * the round trip gives x back with scale 1/24. */
static void test_r2c_c2r(void) {
    int64_t sx[2] = {4, 6}, sy[2] = {3, 6};
    gfp_tensor x = over(GFP_F64, 2, sx, NULL, 24 * 8), y = over(GFP_C128, 2, sy, NULL, 18 * 16);
    gfp_tensor x2 = over(GFP_F64, 2, sx, NULL, 24 * 8);
    double *xv = (double *)x.buffer;
    for (int i = 0; i < 24; i++) xv[i] = sin(0.9 * i) + 0.25 * i;
    gfp_fft_params p = params(GFP_FFT_R2C, 0, 2, (const int[]){1, 0}, 1.0);
    const gfp_tensor *in[1] = {&x}, *out[1] = {&y};
    CHECK_MSG(rd_launch(GFP_OP_FFT, in, 1, out, 1, &p) == GFP_OK, "%s", last_error);
    /* bin (1, 2) against the direct 2-D sum */
    double complex s = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 6; b++) s += xv[a * 6 + b] * cexp(-2 * PI * I * (a / 4.0 + 2 * b / 6.0));
    CHECK(cabs(host_of(&y)[1 * 6 + 2] - s) < 1e-12);
    gfp_fft_params q = params(GFP_FFT_C2R, 1, 2, (const int[]){1, 0}, 1.0 / 24);
    const gfp_tensor *in2[1] = {&y}, *out2[1] = {&x2};
    CHECK_MSG(rd_launch(GFP_OP_FFT, in2, 1, out2, 1, &q) == GFP_OK, "%s", last_error);
    for (int i = 0; i < 24; i++) CHECK_MSG(fabs(((double *)x2.buffer)[i] - xv[i]) < 1e-13, "[%d]", i);
}

static void refused(const gfp_tensor *x, const gfp_tensor *y, const void *p, gfp_status want,
                    const char *needle, const char *what) {
    const gfp_tensor *in[1] = {x}, *out[1] = {y};
    gfp_status st = rd_launch(GFP_OP_FFT, in, 1, out, 1, p);
    CHECK_MSG(st == want, "%s: status %d, expected %d (%s)", what, (int)st, (int)want, last_error);
    CHECK_CONTAINS(error_text(), needle);
}

static void test_refusals(void) {
    int64_t s46[2] = {4, 6}, s36[2] = {3, 6}, s44[2] = {4, 4}, s06[2] = {0, 6}, s4[1] = {4};
    gfp_tensor zc = over(GFP_C128, 2, s46, NULL, 24 * 16), zc2 = over(GFP_C128, 2, s46, NULL, 24 * 16);
    gfp_tensor rf = over(GFP_F64, 2, s46, NULL, 24 * 8), half = over(GFP_C128, 2, s36, NULL, 18 * 16);
    gfp_tensor sq = over(GFP_C128, 2, s44, NULL, 16 * 16), v4 = over(GFP_C128, 1, s4, NULL, 64);
    gfp_tensor c64 = over(GFP_C64, 2, s46, NULL, 24 * 8), empty = over(GFP_C128, 2, s06, NULL, 16);
    const int d1[1] = {1}, d0[1] = {0};
    gfp_fft_params ok = params(GFP_FFT_C2C, 0, 1, d1, 1.0), p;

    p = ok;
    p.struct_size = 8;
    refused(&zc, &zc2, &p, GFP_ERR_INVALID, "struct_size is 8", "short params");
    refused(&zc, &zc2, NULL, GFP_ERR_INVALID, "parameter struct is NULL", "NULL params");
    p = ok;
    p.kind = 3;
    refused(&zc, &zc2, &p, GFP_ERR_INVALID, "kind 3 is not", "bad kind");
    p = ok;
    p.inverse = 2;
    refused(&zc, &zc2, &p, GFP_ERR_INVALID, "inverse is 2", "bad inverse");
    p = ok;
    p.n_dims = 0;
    refused(&zc, &zc2, &p, GFP_ERR_INVALID, "n_dims is 0", "no dims");
    p = params(GFP_FFT_C2C, 0, 2, (const int[]){1, 1}, 1.0);
    refused(&zc, &zc2, &p, GFP_ERR_INVALID, "out of [0, 2) or repeated", "repeated dim");
    p = params(GFP_FFT_C2C, 0, 1, (const int[]){2}, 1.0);
    refused(&zc, &zc2, &p, GFP_ERR_INVALID, "dims[0] = 2", "dim out of range");
    refused(&zc, &v4, &ok, GFP_ERR_INVALID, "rank 2 and y rank 1", "ranks differ");
    refused(&zc, &c64, &ok, GFP_ERR_INVALID, "C2C takes c64/c128", "c2c dtypes differ");
    p = params(GFP_FFT_R2C, 0, 1, d0, 1.0);
    refused(&zc, &half, &p, GFP_ERR_INVALID, "R2C takes f32/f64", "r2c of complex");
    refused(&rf, &zc, &p, GFP_ERR_INVALID, "onesided dim holds n/2 + 1", "r2c full output");
    p = params(GFP_FFT_C2R, 1, 1, d0, 1.0);
    refused(&zc, &rf, &p, GFP_ERR_INVALID, "onesided dim", "c2r without the half");
    refused(&half, &zc, &p, GFP_ERR_INVALID, "C2R takes c64/c128", "c2r to complex");
    refused(&sq, &zc2, &ok, GFP_ERR_INVALID, "dim 1 has size 4 in x and 6 in y", "c2c sizes");
    p = params(GFP_FFT_C2C, 0, 1, d0, 1.0);
    refused(&empty, &empty, &p, GFP_ERR_INVALID, "signal length 0", "empty signal");
    /* an empty batch is fine: nothing to write */
    const gfp_tensor *in[1] = {&empty}, *out[1] = {&empty};
    CHECK_MSG(rd_launch(GFP_OP_FFT, in, 1, out, 1, &ok) == GFP_OK, "%s", last_error);
}

int main(int argc, char **argv) {
    if (!rd_open(argc, argv)) return 1;
    RUN(test_query);
    RUN(test_c2c_strided);
    RUN(test_r2c_c2r);
    RUN(test_refusals);
    for (int i = 0; i < n_bufs; i++) P->buffer_free(dev, bufs[i]);
    rd_close();
    return CHECK_REPORT();
}
