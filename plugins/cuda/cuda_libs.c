/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_libs.c — opens cuBLAS, cuDNN and cuFFT on first use (see cuda_libs.h). */
#define _GNU_SOURCE /* POSIX declarations under -std=c11 */
#include "cuda_libs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "plugin_kit.h"

/* From CMake: the SONAMEs of the libraries the build found and the
 * directories they were found in. The plain names are a fallback for a build
 * that could not read a SONAME. */
#ifndef GRAFT_CUDA_CUBLAS_SONAME
#define GRAFT_CUDA_CUBLAS_SONAME "libcublas.so"
#endif
#ifndef GRAFT_CUDA_CUBLAS_DIR
#define GRAFT_CUDA_CUBLAS_DIR ""
#endif
#ifndef GRAFT_CUDA_CUDNN_SONAME
#define GRAFT_CUDA_CUDNN_SONAME "libcudnn.so"
#endif
#ifndef GRAFT_CUDA_CUDNN_DIR
#define GRAFT_CUDA_CUDNN_DIR ""
#endif
#ifndef GRAFT_CUDA_CUFFT_SONAME
#define GRAFT_CUDA_CUFFT_SONAME "libcufft.so"
#endif
#ifndef GRAFT_CUDA_CUFFT_DIR
#define GRAFT_CUDA_CUFFT_DIR ""
#endif

/* A macro argument's spelling after expansion: cublasCreate -> "cublasCreate_v2". */
#define CU_STR_(s) #s
#define CU_STR(s) CU_STR_(s)
#define CU_LIBS_NAME(f) CU_STR(f),
/* Copies the next resolved address into member f of the table t (memcpy:
 * dlsym's void * into a function pointer, as POSIX allows). */
#define CU_LIBS_FILL(t, f, resolved, i) memcpy(&(t).f, &(resolved)[(i)++], sizeof(void *));

/* One library: where to look, and the symbols to resolve. */
typedef struct lib_spec {
    const char *what; /* "cuBLAS", for the log */
    const char *soname;
    const char *dir; /* "" when unknown */
    const char *const *symbols;
    void **resolved; /* receives each symbol's address, in order */
    size_t count;
} lib_spec;

/* Opens spec's library and resolves every symbol, or writes why not into why
 * (resolved is then partly filled: the caller copies it out only on success).
 * A library that opened but lacks a symbol is left open: it ran its
 * initialisers, and unloading cuBLAS or cuDNN again is not worth the risk. */
static bool open_lib(const lib_spec *spec, char *why, size_t len) {
    char in_dir[1024];
    const char *names[2] = {spec->soname, NULL};
    size_t n = 1;
    if (spec->dir[0]) {
        int w = snprintf(in_dir, sizeof in_dir, "%s/%s", spec->dir, spec->soname);
        if (w > 0 && (size_t)w < sizeof in_dir) names[n++] = in_dir;
    }
    const char *err;
    void *lib = pk_dlopen_first(names, n, &err);
    if (!lib) {
        snprintf(why, len, "%s", err);
        return false;
    }
    for (size_t i = 0; i < spec->count; i++) {
        (void)dlerror();
        spec->resolved[i] = dlsym(lib, spec->symbols[i]);
        if (!spec->resolved[i]) {
            const char *e = dlerror(); /* names the library and the symbol */
            snprintf(why, len, "%s", e ? e : spec->symbols[i]);
            return false;
        }
    }
    pk_log(GFP_LOG_DEBUG, "cuda: %s opened (%s)", spec->what, spec->soname);
    return true;
}

/* ------------------------------------------------------------ cuBLAS */
cu_blas_api cu_blas;

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static bool blas_ok;
static char blas_why[512];

static void blas_open(void) {
    static const char *const symbols[] = {CU_BLAS_FUNCTIONS(CU_LIBS_NAME)};
    void *resolved[sizeof symbols / sizeof symbols[0]];
    _Static_assert(sizeof(cu_blas_api) == sizeof resolved, "one pointer per symbol");
    lib_spec spec = {"cuBLAS", GRAFT_CUDA_CUBLAS_SONAME, GRAFT_CUDA_CUBLAS_DIR, symbols, resolved,
                     sizeof symbols / sizeof symbols[0]};
    blas_ok = open_lib(&spec, blas_why, sizeof blas_why);
    if (!blas_ok) return;
    size_t i = 0;
#define X(f) CU_LIBS_FILL(cu_blas, f, resolved, i)
    CU_BLAS_FUNCTIONS(X)
#undef X
}

gfp_status cu_blas_load(const char *op) {
    pthread_once(&blas_once, blas_open);
    if (blas_ok) return GFP_OK;
    return pk_fail(GFP_ERR_DEVICE,
                   "%s: cuBLAS could not be loaded: %s; install libcublas %d or set "
                   "LD_LIBRARY_PATH",
                   op, blas_why, (int)CUBLAS_VER_MAJOR);
}

/* ------------------------------------------------------------ cuDNN */
#ifdef GRAFT_CUDA_HAVE_CUDNN
cu_dnn_api cu_dnn;

static pthread_once_t dnn_once = PTHREAD_ONCE_INIT;
static bool dnn_ok;
static char dnn_why[512];

static void dnn_open(void) {
    static const char *const symbols[] = {CU_DNN_FUNCTIONS(CU_LIBS_NAME)};
    void *resolved[sizeof symbols / sizeof symbols[0]];
    _Static_assert(sizeof(cu_dnn_api) == sizeof resolved, "one pointer per symbol");
    lib_spec spec = {"cuDNN", GRAFT_CUDA_CUDNN_SONAME, GRAFT_CUDA_CUDNN_DIR, symbols, resolved,
                     sizeof symbols / sizeof symbols[0]};
    char why[384];
    dnn_ok = open_lib(&spec, why, sizeof why);
    if (!dnn_ok) {
        snprintf(dnn_why, sizeof dnn_why,
                 "cuDNN could not be loaded: %s; install libcudnn %d or set LD_LIBRARY_PATH", why,
                 (int)CUDNN_MAJOR);
        return;
    }
    size_t i = 0;
#define X(f) CU_LIBS_FILL(cu_dnn, f, resolved, i)
    CU_DNN_FUNCTIONS(X)
#undef X
}

const char *cu_dnn_load(void) {
    pthread_once(&dnn_once, dnn_open);
    if (dnn_ok) return NULL;
    return dnn_why;
}
#endif

/* ------------------------------------------------------------ cuFFT */
#ifdef GRAFT_CUDA_HAVE_CUFFT
cu_fft_api cu_fft;

static pthread_once_t fft_once = PTHREAD_ONCE_INIT;
static bool fft_ok;
static char fft_why[512];

static void fft_open(void) {
    static const char *const symbols[] = {CU_FFT_FUNCTIONS(CU_LIBS_NAME)};
    void *resolved[sizeof symbols / sizeof symbols[0]];
    _Static_assert(sizeof(cu_fft_api) == sizeof resolved, "one pointer per symbol");
    lib_spec spec = {"cuFFT", GRAFT_CUDA_CUFFT_SONAME, GRAFT_CUDA_CUFFT_DIR, symbols, resolved,
                     sizeof symbols / sizeof symbols[0]};
    char why[384];
    fft_ok = open_lib(&spec, why, sizeof why);
    if (!fft_ok) {
        snprintf(fft_why, sizeof fft_why,
                 "cuFFT could not be loaded: %s; install libcufft %d or set LD_LIBRARY_PATH", why,
                 (int)CUFFT_VER_MAJOR);
        return;
    }
    size_t i = 0;
#define X(f) CU_LIBS_FILL(cu_fft, f, resolved, i)
    CU_FFT_FUNCTIONS(X)
#undef X
}

const char *cu_fft_load(void) {
    pthread_once(&fft_once, fft_open);
    if (fft_ok) return NULL;
    return fft_why;
}
#endif
