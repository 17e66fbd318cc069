/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_vecmath.c — f32 erf, and GELU_BACKWARD (erf and exp), sixteen lanes
 * at a time through glibc's vector math library (libmvec, glibc >= 2.35:
 * _ZGVeN16v_erff, _ZGVeN16v_expf, AVX-512), where the C loops call libm's
 * erff per element.
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
static vm16_fn vm_erff, vm_expf;
static pthread_once_t vm_once = PTHREAD_ONCE_INIT;

static void vm_init(void) {
    if (!__builtin_cpu_supports("avx512f")) return;
    void *h = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    void *e = dlsym(h, "_ZGVeN16v_erff"), *x = dlsym(h, "_ZGVeN16v_expf");
    if (!e || !x) {
        dlclose(h);
        return;
    }
    /* kept open: the functions live in it */
    memcpy(&vm_erff, &e, sizeof vm_erff);
    memcpy(&vm_expf, &x, sizeof vm_expf);
}

/* GELU_BACKWARD over 16 lanes, op_math.def's order:
 * a * (0.5 * (1 + erf(b * K1)) + b * (exp(-0.5 * b * b) * K2)). */
__attribute__((target("avx512f"))) static void gelu_bw16(float *y, const float *a,
                                                         const float *b) {
    __m512 va = _mm512_loadu_ps(a), vb = _mm512_loadu_ps(b);
    __m512 e = vm_erff(_mm512_mul_ps(vb, _mm512_set1_ps(0.70710678118654752440f)));
    __m512 q = vm_expf(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-0.5f), vb), vb));
    __m512 cdf = _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    __m512 pdf = _mm512_mul_ps(q, _mm512_set1_ps(0.39894228040143267794f));
    _mm512_storeu_ps(y, _mm512_mul_ps(va, _mm512_add_ps(cdf, _mm512_mul_ps(vb, pdf))));
}

/* p[0] = y, p[1] = a, p[2] = b; element strides s (0: broadcast), runs of
 * n, no of them, os in bytes. Every element through 16-lane buffers. */
static void gelu_bw_kernel(char *const *p, const int64_t *s, int64_t n, const int64_t *os,
                           int64_t no, const void *ctx) {
    (void)ctx;
    char *yp = p[0];
    const char *ap = p[1], *bp = p[2];
    for (int64_t o = 0; o < no; o++) {
        float *y = (float *)(void *)yp;
        const float *a = (const float *)(const void *)ap, *b = (const float *)(const void *)bp;
        float ab[16], bb[16], yb[16];
        for (int64_t i = 0; i < n; i += 16) {
            int64_t m = n - i < 16 ? n - i : 16;
            if (m == 16 && s[0] == 1 && s[1] == 1 && s[2] == 1) {
                gelu_bw16(y + i, a + i, b + i);
                continue;
            }
            for (int64_t j = 0; j < 16; j++) {
                ab[j] = j < m ? a[(i + j) * s[1]] : 0.0f;
                bb[j] = j < m ? b[(i + j) * s[2]] : 0.0f;
            }
            gelu_bw16(yb, ab, bb);
            for (int64_t j = 0; j < m; j++) y[(i + j) * s[0]] = yb[j];
        }
        yp += os[0];
        ap += os[1];
        bp += os[2];
    }
}

odn_ew_fn odn_vec_gelu_bw_f32(void) {
    pthread_once(&vm_once, vm_init);
    return vm_erff && vm_expf ? gelu_bw_kernel : NULL;
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
odn_ew_fn odn_vec_gelu_bw_f32(void) { return NULL; }
#endif
