/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_clblast.c — CLBlast's GEMM, opened at run time.
 *
 * libclblast.so.1 is opened on the first matmul that asks for it (see
 * ocl_matmul.c for when that is), so the plugin neither needs CLBlast to
 * load nor pays for it when graft's own kernel is used. CLBlast compiles its
 * kernels on first use per device and keeps them in its own cache. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "ocl_internal.h"

#if defined(GRAFT_HAVE_CLBLAST_H)
#include <clblast_c.h>

typedef __typeof__(&CLBlastSgemm) sgemm_fn;
typedef __typeof__(&CLBlastDgemm) dgemm_fn;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static sgemm_fn sgemm;
static dgemm_fn dgemm;

static void load(void) {
    void *lib = dlopen("libclblast.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libclblast.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        pk_log(GFP_LOG_INFO, "CLBlast is not available (%s); graft's GEMM kernel is used",
                dlerror());
        return;
    }
    *(void **)&sgemm = dlsym(lib, "CLBlastSgemm");
    *(void **)&dgemm = dlsym(lib, "CLBlastDgemm");
}

bool ocl_clblast_available(void) {
    pthread_once(&once, load);
    return sgemm && dgemm;
}

gfp_status ocl_clblast_gemm(ocl_device *d, int32_t dtype, bool ta, bool tb, uint64_t m,
                            uint64_t n, uint64_t k, cl_mem a, uint64_t a_off, uint64_t lda,
                            cl_mem b, uint64_t b_off, uint64_t ldb, cl_mem y, uint64_t y_off,
                            uint64_t ldy) {
    if (!ocl_clblast_available())
        return pk_fail(GFP_ERR_UNSUPPORTED, "matmul: CLBlast (libclblast.so.1) is not available");
    CLBlastTranspose tra = ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose trb = tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode s;
    if (dtype == GFP_F32)
        s = sgemm(CLBlastLayoutRowMajor, tra, trb, m, n, k, 1.0f, a, a_off, lda, b, b_off, ldb,
                  0.0f, y, y_off, ldy, &d->queue, NULL);
    else
        s = dgemm(CLBlastLayoutRowMajor, tra, trb, m, n, k, 1.0, a, a_off, lda, b, b_off, ldb,
                  0.0, y, y_off, ldy, &d->queue, NULL);
    if (s == CLBlastSuccess) return GFP_OK;
    /* Positive and small negative codes are OpenCL's; CLBlast's own start
     * at -1024. */
    return pk_fail(s <= -1024 ? GFP_ERR_UNSUPPORTED : ocl_status_of((cl_int)s),
                    "matmul: CLBlast %cgemm failed with status %d%s%s", dtype == GFP_F32 ? 'S' : 'D',
                    (int)s, s > -1024 ? ": " : "", s > -1024 ? ocl_error_name((cl_int)s) : "");
}

#else /* no CLBlast header at build time */

bool ocl_clblast_available(void) { return false; }

gfp_status ocl_clblast_gemm(ocl_device *d, int32_t dtype, bool ta, bool tb, uint64_t m,
                            uint64_t n, uint64_t k, cl_mem a, uint64_t a_off, uint64_t lda,
                            cl_mem b, uint64_t b_off, uint64_t ldb, cl_mem y, uint64_t y_off,
                            uint64_t ldy) {
    return pk_fail(GFP_ERR_UNSUPPORTED, "matmul: this build has no CLBlast support");
}

#endif
