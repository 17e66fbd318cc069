/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_device.c — the OpenCL plugin's device, driver and error paths, one
 * scenario per run (the environment of each is set by CMake):
 *
 *   props    opencl:0's properties: type, name, memory, dtypes (c64, and c128
 *            with f64), flags; a too large allocation fails with
 *            OUT_OF_MEMORY naming the limit
 *   noicd    no OpenCL driver (OCL_ICD_VENDORS is an empty directory): the
 *            plugin loads with zero devices and says why, the reference works
 *   nofp64   GRAFT_OPENCL_DISABLE_FP64=1: f64 and c128 are not offered,
 *            random numbers (drawn on the host then) are still the
 *            reference's, and c64 (computed in float then) still agrees
 *            with it: elementwise, sum, matmul, FFT of a prime length
 *   build    GRAFT_OPENCL_FAULT=build: a kernel compile fails; the error names
 *            the plugin, the op, CL_BUILD_PROGRAM_FAILURE and the build log
 *            (the complex and FFT programs too)
 *   enqueue  GRAFT_OPENCL_FAULT=enqueue: launches fail with CL_OUT_OF_RESOURCES
 *            (complex ops and every path of the FFT too)
 *   enqueue_at  GRAFT_OPENCL_FAULT=enqueue-at: each kernel launch of each of
 *            the FFT's routes, in both forms, fails in turn; each failure
 *            is an error naming the op and the fault, and the transform then
 *            runs whole and agrees with the reference
 *   lost     GRAFT_OPENCL_FAULT=lost: reads fail as from a lost device
 *   cache    run twice with GRAFT_OPENCL_CACHE=1 (see check_cache.cmake): draws
 *            random numbers, checks them against the reference */
#define _DEFAULT_SOURCE /* setenv */
#include "xd_test.h"

static gf_plugin_info opencl_info(void) {
    gf_plugin_info p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < gf_plugin_count(); i++)
        if (gf_plugin_get_info(i, &p) == GF_OK && !strcmp(p.name, "opencl")) return p;
    memset(&p, 0, sizeof p);
    return p;
}

static void scenario_props(void) {
    gf_device_info info;
    CHECK(gf_device_get_info(xd_dev, &info) == GF_OK);
    CHECK(!strcmp(info.type, "opencl"));
    CHECK(!strcmp(gf_device_spec(xd_dev), "opencl:0"));
    CHECK(!strcmp(gf_device_plugin(xd_dev), "opencl"));
    CHECK(info.name[0] != '\0');
    CHECK(info.memory_bytes > 0 && info.max_alloc_bytes > 0);
    CHECK(!info.host_addressable);
    uint32_t want = (1u << GF_F32) | (1u << GF_I32) | (1u << GF_I64) | (1u << GF_BOOL);
    CHECK((info.dtypes & want) == want);
    CHECK(info.dtypes & (1u << GF_C64));
    CHECK(!(info.dtypes & (1u << GF_C128)) == !(info.dtypes & (1u << GF_F64)));
    CHECK_CONTAINS(info.driver, "OpenCL");
    /* Larger than one buffer may be: an error, not a crash. */
    int64_t n = (int64_t)(info.max_alloc_bytes / 4) + 1024;
    gf_clear_error();
    gf_tensor *big = gf_empty(&n, 1, GF_F32, xd_dev);
    CHECK(big == NULL);
    CHECK(gf_last_status() == GF_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(gf_last_error(), "opencl:0");
    /* The device keeps working. */
    gf_tensor *a = gf_full(SZ(3), 1, 2.0, GF_F32, xd_dev);
    gf_tensor *s = gf_sum(a, NULL, 0, false);
    double v = 0;
    CHECK(gf_tensor_item(s, &v) == GF_OK && v == 6.0);
    gf_tensor_release(a);
    gf_tensor_release(s);
}

static void scenario_noicd(void) {
    gf_plugin_info p = opencl_info();
    CHECK_MSG(p.loaded, "the opencl plugin is not loaded: %s", p.reason);
    CHECK(p.device_count == 0);
    CHECK_CONTAINS(p.reason, "no OpenCL platform found");
    CHECK(gf_device_find("opencl:0") == NULL);
    CHECK_CONTAINS(gf_last_error(), "opencl");
    /* Everything else keeps working. */
    gf_tensor *a = gf_arange(0, 5, 1, GF_F32, xd_ref);
    gf_tensor *s = gf_sum(a, NULL, 0, false);
    double v = 0;
    CHECK(gf_tensor_item(s, &v) == GF_OK && v == 10.0);
    gf_tensor_release(a);
    gf_tensor_release(s);
}

/* The same c64 values on the device and on the reference device: re + i im
 * from a fixed pattern. */
static void complex_pair(const int64_t *sizes, int rank, gf_tensor **dev, gf_tensor **ref) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    float *v = malloc((size_t)(2 * n) * sizeof *v);
    CHECK(v != NULL);
    if (!v) return;
    for (int64_t i = 0; i < 2 * n; i++) v[i] = (float)sin(0.7 * (double)i + 0.3);
    *dev = gf_from_data(v, sizes, rank, GF_C64, xd_dev);
    *ref = gf_from_data(v, sizes, rank, GF_C64, xd_ref);
    free(v);
    CHECK_MSG(*dev && *ref, "complex inputs: %s", gf_last_error());
}

/* Compares complex results through their real views, then releases them. */
static void check_complex_pair(const char *what, gf_tensor *got, gf_tensor *want, xd_tol tol) {
    CHECK_MSG(got && want, "%s: %s", what, gf_last_error());
    gf_tensor *g = got ? gf_view_as_real(got) : NULL, *w = want ? gf_view_as_real(want) : NULL;
    xd_check_pair_tol(what, g, w, tol);
    gf_tensor_release(got);
    gf_tensor_release(want);
}

/* c64 on a device without doubles: computed in float. */
static void complex_in_float(void) {
    gf_tensor *a, *ar, *b, *br;
    complex_pair(SZ(6, 13), 2, &a, &ar);
    complex_pair(SZ(13, 5), 2, &b, &br);
    CHECK(gf_tensor_device(a) == xd_dev);
    const xd_tol tol = {1e-5, 1e-5};
    check_complex_pair("c64 asin in float", gf_asin(a), gf_asin(ar), tol);
    check_complex_pair("c64 div in float", gf_div(a, a), gf_div(ar, ar), tol);
    const int dim1[1] = {1};
    check_complex_pair("c64 sum in float", gf_sum(a, dim1, 1, false), gf_sum(ar, dim1, 1, false),
                       tol);
    check_complex_pair("c64 matmul in float", gf_matmul(a, b), gf_matmul(ar, br), tol);
    check_complex_pair("c64 fft of 13 (Bluestein) in float",
                       gf_fft(a, GF_FFT_SIZE_DEFAULT, 1, GF_FFT_NORM_BACKWARD),
                       gf_fft(ar, GF_FFT_SIZE_DEFAULT, 1, GF_FFT_NORM_BACKWARD), tol);
    check_complex_pair("c64 ifft of 16 (radix 2) in float",
                       gf_ifft(a, 16, 1, GF_FFT_NORM_ORTHO), gf_ifft(ar, 16, 1, GF_FFT_NORM_ORTHO),
                       tol);
    gf_tensor_release(a);
    gf_tensor_release(ar);
    gf_tensor_release(b);
    gf_tensor_release(br);
}

static void scenario_nofp64(void) {
    gf_device_info info;
    CHECK(gf_device_get_info(xd_dev, &info) == GF_OK);
    CHECK((info.dtypes & (1u << GF_F64)) == 0);
    CHECK((info.dtypes & (1u << GF_C128)) == 0);
    CHECK((info.dtypes & (1u << GF_C64)) != 0);
    gf_clear_error();
    gf_tensor *t = gf_zeros(SZ(4), 1, GF_F64, xd_dev);
    CHECK(t == NULL && gf_last_status() == GF_ERR_DTYPE);
    gf_clear_error();
    t = gf_zeros(SZ(4), 1, GF_C128, xd_dev);
    CHECK(t == NULL && gf_last_status() == GF_ERR_DTYPE);
    complex_in_float();
    for (int kind = 0; kind < 2; kind++) {
        gf_manual_seed(5);
        gf_tensor *o = kind ? gf_randn(SZ(33, 7), 2, GF_F32, xd_dev)
                            : gf_rand(SZ(33, 7), 2, GF_F32, xd_dev);
        gf_manual_seed(5);
        gf_tensor *r = kind ? gf_randn(SZ(33, 7), 2, GF_F32, xd_ref)
                            : gf_rand(SZ(33, 7), 2, GF_F32, xd_ref);
        xd_check_pair_tol(kind ? "randn on the host path" : "rand on the host path", o, r,
                          (xd_tol){0, 0});
    }
    /* A strided output: staged, then copied into place. */
    gf_tensor *base = gf_zeros(SZ(6, 8), 2, GF_F32, xd_dev), *baser = gf_zeros(SZ(6, 8), 2, GF_F32, xd_ref);
    gf_tensor *v = gf_slice(base, 1, 0, 8, 2), *vr = gf_slice(baser, 1, 0, 8, 2);
    gf_tensor *tv = gf_transpose(v, 0, 1), *tvr = gf_transpose(vr, 0, 1);
    gf_manual_seed(6);
    gf_tensor *o = gf_dropout(tv, 0.5, true);
    gf_manual_seed(6);
    gf_tensor *r = gf_dropout(tvr, 0.5, true);
    xd_check_pair_tol("dropout on the host path", o, r, (xd_tol){0, 0});
    gf_tensor_release(tv);
    gf_tensor_release(tvr);
    gf_tensor_release(v);
    gf_tensor_release(vr);
    gf_tensor_release(base);
    gf_tensor_release(baser);
}

/* An op on the device fails; the message carries every word of `want`. */
static void expect_failure(const char *what, const char *const *want, int n_want) {
    gf_tensor *a = gf_ones(SZ(5), 1, GF_F32, xd_dev);
    gf_clear_error();
    gf_tensor *y = a ? gf_exp(a) : NULL, *s = y ? gf_sum(y, NULL, 0, false) : NULL;
    double v = 0;
    gf_status st = s ? gf_tensor_item(s, &v) : gf_last_status();
    gf_tensor_release(s);
    CHECK_MSG(st != GF_OK, "%s: the op succeeded", what);
    for (int i = 0; i < n_want; i++) CHECK_CONTAINS(gf_last_error(), want[i]);
    fprintf(stderr, "%s gave: %s\n", what, gf_last_error());
    gf_tensor_release(y);
    gf_tensor_release(a);
}

/* A complex op and FFTs (radix 2 and Bluestein) on the device fail with
 * every word of `want` and the op's name in the message. */
static void expect_complex_failures(const char *const *want, int n_want) {
    gf_tensor *z = gf_zeros(SZ(3, 12), 2, GF_C64, xd_dev), *z16 = gf_zeros(SZ(3, 16), 2, GF_C64, xd_dev);
    CHECK_MSG(z && z16, "complex tensors on the device: %s", gf_last_error());
    for (int k = 0; k < 3 && z && z16; k++) {
        gf_clear_error();
        gf_tensor *r = k == 0   ? gf_exp(z)
                       : k == 1 ? gf_fft(z16, GF_FFT_SIZE_DEFAULT, 1, GF_FFT_NORM_BACKWARD)
                                : gf_fft(z, GF_FFT_SIZE_DEFAULT, 1, GF_FFT_NORM_BACKWARD);
        double re = 0;
        gf_status st = r ? gf_tensor_get_complex(r, SZ(0, 0), &re, NULL) : gf_last_status();
        CHECK_MSG(st != GF_OK, "complex case %d succeeded", k);
        CHECK_CONTAINS(gf_last_error(), k ? "fft" : "exp");
        for (int i = 0; i < n_want; i++) CHECK_CONTAINS(gf_last_error(), want[i]);
        gf_tensor_release(r);
    }
    gf_tensor_release(z);
    gf_tensor_release(z16);
}

static void scenario_build(void) {
    static const char *const want[] = {"opencl", "exp", "CL_BUILD_PROGRAM_FAILURE", "build log",
                                       "GRAFT_OPENCL_FAULT"};
    expect_failure("a failed build", want, 5);
    /* The second launch fails at once, with the same message. */
    expect_failure("a second launch after a failed build", want, 5);
    expect_complex_failures(want + 2, 3);
}

static void scenario_enqueue(void) {
    static const char *const want[] = {"opencl", "exp", "CL_OUT_OF_RESOURCES"};
    expect_failure("a failed enqueue", want, 3);
    expect_complex_failures(want + 2, 1);
    /* Every form of the convolution and its gradients reports the failed
     * launch (GRAFT_OPENCL_CONV is read at each launch). */
    static const char *const forms[] = {"igemm", "gemm", "direct", "auto"};
    gf_tensor *x = gf_ones(SZ(2, 16, 9, 9), 4, GF_F32, xd_dev);
    gf_tensor *w = gf_ones(SZ(16, 16, 3, 3), 4, GF_F32, xd_dev);
    gf_tensor *gy = gf_ones(SZ(2, 16, 9, 9), 4, GF_F32, xd_dev);
    const gf_conv2d_opts o = {.padding = {1, 1}};
    CHECK(x && w && gy);
    for (int f = 0; f < 4 && x && w && gy; f++) {
        setenv("GRAFT_OPENCL_CONV", forms[f], 1);
        for (int op = 0; op < 3; op++) {
            gf_clear_error();
            gf_tensor *r = op == 0   ? gf_conv2d(x, w, NULL, &o)
                           : op == 1 ? gf_conv2d_backward_input(gy, w, SZ(2, 16, 9, 9), &o)
                                     : gf_conv2d_backward_weight(gy, x, SZ(16, 16, 3, 3), &o);
            CHECK_MSG(r == NULL, "conv op %d in form %s succeeded", op, forms[f]);
            CHECK_CONTAINS(gf_last_error(), "conv2d");
            CHECK_CONTAINS(gf_last_error(), "CL_OUT_OF_RESOURCES");
            gf_tensor_release(r);
        }
    }
    unsetenv("GRAFT_OPENCL_CONV");
    gf_tensor_release(x);
    gf_tensor_release(w);
    gf_tensor_release(gy);
}

/* Largest |a - b| over largest |b| of two results (xd_err_of); releases
 * both. */
static double rel_err(gf_tensor *a, gf_tensor *b) {
    xd_err e = xd_err_of(a, b);
    gf_tensor_release(a);
    gf_tensor_release(b);
    return !e.ok ? INFINITY : e.top > 0 ? e.err / e.top : e.err;
}

typedef struct fault_case {
    const char *name, *form; /* form: GRAFT_OPENCL_FFT */
    int64_t s0, s1;
    int dim, kind; /* kind 0: fft, 1: rfft, 2: irfft to 2 (s1 - 1) */
} fault_case;

static gf_tensor *fault_op(const fault_case *c, const gf_tensor *x) {
    if (c->kind == 1) return gf_rfft(x, GF_FFT_SIZE_DEFAULT, c->dim, GF_FFT_NORM_BACKWARD);
    if (c->kind == 2) return gf_irfft(x, 2 * (c->s1 - 1), c->dim, GF_FFT_NORM_BACKWARD);
    return gf_fft(x, GF_FFT_SIZE_DEFAULT, c->dim, GF_FFT_NORM_BACKWARD);
}

static void scenario_enqueue_at(void) {
    static const fault_case cases[] = {
        {"lines in local memory", "local", 3, 16, 1, 0},
        {"lines in local memory along dim 0", "local", 64, 6, 0, 0},
        {"the four-step split", "local", 1, 2048, 1, 0},
        {"Bluestein in launches", "local", 5, 13, 1, 0},
        {"Bluestein over a split", "local", 2, 1000, 1, 0},
        {"an item per line", "lines", 40, 64, 1, 0},
        {"Bluestein an item per line", "lines", 40, 13, 1, 0},
        {"a launch per stage", "lines", 2048, 3, 0, 0},
        {"rfft", "auto", 4, 64, 1, 1},
        {"irfft", "auto", 4, 33, 1, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const fault_case *c = &cases[i];
        setenv("GRAFT_OPENCL_FFT", c->form, 1);
        int64_t s[2] = {c->s0, c->s1}, n = c->s0 * c->s1;
        float *v = malloc((size_t)(2 * n) * sizeof *v);
        CHECK(v != NULL);
        if (!v) continue;
        for (int64_t j = 0; j < 2 * n; j++) v[j] = (float)sin(0.37 * (double)j + 0.5);
        gf_dtype dt = c->kind == 1 ? GF_F32 : GF_C64;
        gf_tensor *x = gf_from_data(v, s, 2, dt, xd_dev), *xr = gf_from_data(v, s, 2, dt, xd_ref);
        free(v);
        CHECK_MSG(x && xr, "%s: inputs: %s", c->name, gf_last_error());
        int failed = 0;
        bool whole = false;
        for (int k = 1; k <= 400 && x && xr && !whole; k++) {
            char at[16];
            snprintf(at, sizeof at, "%d", k);
            setenv("GRAFT_OPENCL_FAULT_AT", at, 1);
            gf_clear_error();
            gf_tensor *r = fault_op(c, x);
            if (r) {
                whole = true;
                setenv("GRAFT_OPENCL_FAULT_AT", "", 1);
                double e = rel_err(r, fault_op(c, xr));
                CHECK_MSG(e <= 1e-5, "%s: after %d failed runs the result is off by %.3g",
                          c->name, failed, e);
                break;
            }
            failed++;
            CHECK_CONTAINS(gf_last_error(), "fft");
            CHECK_CONTAINS(gf_last_error(), "CL_OUT_OF_RESOURCES");
            CHECK_CONTAINS(gf_last_error(), "enqueue-at");
        }
        CHECK_MSG(whole && failed >= 2, "%s: %d launches failed in turn, then %s", c->name,
                  failed, whole ? "it ran" : "it never ran");
        fprintf(stderr, "%s (%s): %d launches, each failed in turn\n", c->name, c->form,
                failed);
        gf_tensor_release(x);
        gf_tensor_release(xr);
    }
    unsetenv("GRAFT_OPENCL_FFT");
    unsetenv("GRAFT_OPENCL_FAULT_AT");
}

static void scenario_lost(void) {
    gf_tensor *a = gf_ones(SZ(5), 1, GF_F32, xd_dev);
    float buf[5];
    gf_clear_error();
    CHECK(gf_tensor_to_host(a, buf, sizeof buf) != GF_OK);
    CHECK_CONTAINS(gf_last_error(), "opencl");
    CHECK_CONTAINS(gf_last_error(), "CL_DEVICE_NOT_AVAILABLE");
    gf_tensor_release(a);
}

static void scenario_cache(void) {
    gf_manual_seed(11);
    gf_tensor *o = gf_rand(SZ(100), 1, GF_F32, xd_dev);
    gf_manual_seed(11);
    gf_tensor *r = gf_rand(SZ(100), 1, GF_F32, xd_ref);
    xd_check_pair_tol("rand through the kernel cache", o, r, (xd_tol){0, 0});
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s props|noicd|nofp64|build|enqueue|enqueue_at|lost|cache\n",
                argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    int rc = xd_init();
    if (!strcmp(mode, "noicd")) {
        if (rc == 1) return 1;
        RUN(scenario_noicd);
        return CHECK_REPORT();
    }
    if (rc) return rc;
    if (!strcmp(mode, "props")) RUN(scenario_props);
    else if (!strcmp(mode, "nofp64")) RUN(scenario_nofp64);
    else if (!strcmp(mode, "build")) RUN(scenario_build);
    else if (!strcmp(mode, "enqueue")) RUN(scenario_enqueue);
    else if (!strcmp(mode, "enqueue_at")) RUN(scenario_enqueue_at);
    else if (!strcmp(mode, "lost")) RUN(scenario_lost);
    else if (!strcmp(mode, "cache")) RUN(scenario_cache);
    else {
        fprintf(stderr, "unknown scenario '%s'\n", mode);
        return 2;
    }
    return CHECK_REPORT();
}
