/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_libs.c — cuda_libs.c alone: cuBLAS, cuDNN and cuFFT open on first use.
 *
 * Needs no GPU: opening the libraries and resolving their symbols does not
 * touch the driver, nor do the status-name functions called here. Built
 * twice: cuda.libs with the SONAMEs CMake found (every member of the tables
 * resolves), cuda.libs_missing with names that exist nowhere (CU_LIBS_MISSING:
 * a clear error, never a crash, and the same answer on a second call). */
#include <stdarg.h>

#include "check.h"
#include "cuda_libs.h"
#include "plugin_kit.h"

static char last_error[1024];

/* The message of the latest failure (a function: CHECK_CONTAINS tests its
 * argument for NULL). */
static const char *error_text(void) { return last_error; }

static void on_error(void *ctx, const char *message) {
    (void)ctx;
    snprintf(last_error, sizeof last_error, "%s", message);
}

static void on_log(void *ctx, gfp_log_level level, const char *message) {
    (void)ctx;
    (void)level;
    fprintf(stderr, "  log: %s\n", message);
}

static const gfp_host host = {.struct_size = sizeof(gfp_host),
                              .abi_major = GFP_ABI_MAJOR,
                              .abi_minor = GFP_ABI_MINOR,
                              .set_error = on_error,
                              .log = on_log};

#ifndef CU_LIBS_MISSING
static void test_blas_resolves(void) {
    CHECK(cu_blas_load("test") == GFP_OK);
#define X(f) CHECK_MSG(cu_blas.f != NULL, "%s", #f);
    CU_BLAS_FUNCTIONS(X)
#undef X
    CHECK(!strcmp(cu_blas.cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED),
                  "CUBLAS_STATUS_NOT_SUPPORTED"));
    CHECK(cu_blas.cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED) != NULL);
    CHECK(cu_blas_load("test") == GFP_OK); /* once */
}

#ifdef GRAFT_CUDA_HAVE_CUDNN
static void test_dnn_resolves(void) {
    const char *why = cu_dnn_load();
    CHECK_MSG(why == NULL, "%s", why);
    if (why) return;
#define X(f) CHECK_MSG(cu_dnn.f != NULL, "%s", #f);
    CU_DNN_FUNCTIONS(X)
#undef X
    CHECK_CONTAINS(cu_dnn.cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "BAD_PARAM");
    CHECK(cu_dnn_load() == NULL);
}
#endif

#ifdef GRAFT_CUDA_HAVE_CUFFT
static void test_fft_resolves(void) {
    const char *why = cu_fft_load();
    CHECK_MSG(why == NULL, "%s", why);
    if (why) return;
#define X(f) CHECK_MSG(cu_fft.f != NULL, "%s", #f);
    CU_FFT_FUNCTIONS(X)
#undef X
    int version = 0;
    CHECK(cu_fft.cufftGetVersion(&version) == CUFFT_SUCCESS);
    CHECK_MSG(version / 1000 == CUFFT_VER_MAJOR, "cuFFT %d, built against %d", version,
              CUFFT_VER_MAJOR);
    CHECK(cu_fft_load() == NULL);
}
#endif

#else /* CU_LIBS_MISSING */
static void test_blas_missing(void) {
    last_error[0] = '\0';
    CHECK(cu_blas_load("device_open") == GFP_ERR_DEVICE);
    fprintf(stderr, "  %s\n", last_error);
    CHECK_CONTAINS(error_text(), "device_open: cuBLAS could not be loaded: ");
    CHECK_CONTAINS(error_text(), GRAFT_CUDA_CUBLAS_SONAME); /* dlerror names the file */
    CHECK_CONTAINS(error_text(), "install libcublas");
    CHECK_CONTAINS(error_text(), "LD_LIBRARY_PATH");
    last_error[0] = '\0';
    CHECK(cu_blas_load("matmul") == GFP_ERR_DEVICE);
    CHECK_CONTAINS(error_text(), "matmul: cuBLAS could not be loaded: ");
}

#ifdef GRAFT_CUDA_HAVE_CUDNN
static void test_dnn_missing(void) {
    last_error[0] = '\0';
    const char *why = cu_dnn_load();
    CHECK(why != NULL);
    if (!why) return;
    fprintf(stderr, "  %s\n", why);
    CHECK_CONTAINS(why, "cuDNN could not be loaded: ");
    CHECK_CONTAINS(why, GRAFT_CUDA_CUDNN_SONAME);
    CHECK_CONTAINS(why, "install libcudnn");
    CHECK(last_error[0] == '\0'); /* not an error of its own: device_open goes on */
    CHECK(cu_dnn_load() == why);
}
#endif

#ifdef GRAFT_CUDA_HAVE_CUFFT
static void test_fft_missing(void) {
    last_error[0] = '\0';
    const char *why = cu_fft_load();
    CHECK(why != NULL);
    if (!why) return;
    fprintf(stderr, "  %s\n", why);
    CHECK_CONTAINS(why, "cuFFT could not be loaded: ");
    CHECK_CONTAINS(why, GRAFT_CUDA_CUFFT_SONAME);
    CHECK_CONTAINS(why, "install libcufft");
    CHECK(last_error[0] == '\0');
    CHECK(cu_fft_load() == why);
}
#endif
#endif

int main(void) {
    pk_host = &host;
#ifndef CU_LIBS_MISSING
    RUN(test_blas_resolves);
#ifdef GRAFT_CUDA_HAVE_CUDNN
    RUN(test_dnn_resolves);
#endif
#ifdef GRAFT_CUDA_HAVE_CUFFT
    RUN(test_fft_resolves);
#endif
#else
    RUN(test_blas_missing);
#ifdef GRAFT_CUDA_HAVE_CUDNN
    RUN(test_dnn_missing);
#endif
#ifdef GRAFT_CUDA_HAVE_CUFFT
    RUN(test_fft_missing);
#endif
#endif
    return check_report_();
}
