/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_vecmath.c — f32 erf sixteen lanes at a time through glibc's vector
 * math library (libmvec, glibc >= 2.35: _ZGVeN16v_erff, AVX-512), where the
 * C loop calls libm's erff per element.
 *
 * Measured (Zen 5, 1 thread): erf on [64, 8, 96] f32 took 410 us with erff
 * per element, 8 ns an element; GELU's gradient (which calls erf) was the
 * largest kernel of the transformer example's step. libmvec's erff is
 * within glibc's documented ulps of erff (graft-plugin-check's
 * transcendental tolerance and the ops tests check it against the
 * reference). Looked up once with dlopen/dlsym: a system without libmvec's
 * erf, or a CPU without AVX-512, keeps the C loop. Every element goes
 * through the vector function (a run's tail and strided runs through a
 * 16-lane buffer), so a value's erf does not depend on where it sits. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "onednn_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

typedef __m512 (*vm16_fn)(__m512);
static vm16_fn vm_erff;
static pthread_once_t vm_once = PTHREAD_ONCE_INIT;

static void vm_init(void) {
    if (!__builtin_cpu_supports("avx512f")) return;
    void *h = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    void *f = dlsym(h, "_ZGVeN16v_erff");
    if (!f) {
        dlclose(h);
        return;
    }
    /* kept open: the function lives in it */
    memcpy(&vm_erff, &f, sizeof vm_erff);
}

__attribute__((target("avx512f"))) static void erf_run(float *y, int64_t sy, const float *x,
                                                       int64_t sx, int64_t n) {
    int64_t i = 0;
    if (sx == 1 && sy == 1) {
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, vm_erff(_mm512_loadu_ps(x + i)));
    }
    float buf[16];
    while (i < n) {
        int64_t m = n - i < 16 ? n - i : 16;
        for (int64_t j = 0; j < 16; j++) buf[j] = j < m ? x[(i + j) * sx] : 0.0f;
        _mm512_storeu_ps(buf, vm_erff(_mm512_loadu_ps(buf)));
        for (int64_t j = 0; j < m; j++) y[(i + j) * sy] = buf[j];
        i += m;
    }
}

/* The odn_ew_fn of a unary op: p[0] = y, p[1] = x; runs of n, no of them. */
static void erf_kernel(char *const *p, const int64_t *s, int64_t n, const int64_t *os,
                       int64_t no, const void *ctx) {
    (void)ctx;
    char *y = p[0];
    const char *x = p[1];
    for (int64_t o = 0; o < no; o++) {
        erf_run((float *)(void *)y, s[0], (const float *)(const void *)x, s[1], n);
        y += os[0];
        x += os[1];
    }
}

odn_ew_fn odn_vec_erf_f32(void) {
    pthread_once(&vm_once, vm_init);
    return vm_erff ? erf_kernel : NULL;
}
#else
odn_ew_fn odn_vec_erf_f32(void) { return NULL; }
#endif
