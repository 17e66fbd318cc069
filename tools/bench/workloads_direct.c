/* SPDX-License-Identifier: BSD-3-Clause */
/* workloads_direct.c — the rows of the "host" pseudo-device: the same work
 * done without graft, the baselines graft is measured against.
 *
 *   peak      the CPU's f32 FMA rate: independent FMA chains (AVX-512 or
 *             AVX2) on every OpenMP thread, GFLOP/s; matmul rows are also
 *             given as a share of it (f64: of half of it)
 *   matmul    oneDNN's matmul primitive called directly (made once, plain
 *             row-major f32), when graft-bench is built with oneDNN
 *   matmul64  the i-k-j loop one would write (unit stride, vectorised), with
 *             OpenMP over rows
 *   add, mul, exp  a plain C loop on one thread, and the same loop split
 *             over the OpenMP threads
 * OpenMP's threads are those of OMP_NUM_THREADS (graft-bench --threads), as
 * for the cpu_onednn plugin. Inputs are the graft workloads' own (the host
 * formula of workloads_ops.c); matmul results are checked the same way. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifdef GRAFT_BENCH_OPENMP
#include <omp.h>
#endif
#ifdef GRAFT_BENCH_ONEDNN
#include <dnnl.h>
#endif

const char *bench_host_libraries(void) {
    static char text[128];
    size_t n = 0;
    text[0] = 0;
#ifdef GRAFT_BENCH_ONEDNN
    const dnnl_version_t *v = dnnl_version();
    n += (size_t)snprintf(text + n, sizeof text - n, "oneDNN %d.%d.%d, ", v->major, v->minor,
                          v->patch);
#endif
#ifdef GRAFT_BENCH_OPENMP
    snprintf(text + n, sizeof text - n, "C loops with OpenMP (%d threads)", omp_get_max_threads());
#else
    snprintf(text + n, sizeof text - n, "C loops (no OpenMP in this build)");
#endif
    return text;
}

static int host_threads(void) {
#ifdef GRAFT_BENCH_OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* ------------------------------------------------------------ peak */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* 12 independent chains of STEP(acc) on 16-lane f32 accumulators, their
 * first lanes summed (so the loop is not optimised away). */
#define PEAK_LOOP_512(NAME, TARGET, SETUP, STEP)                                     \
    __attribute__((target(TARGET))) static float NAME(long iters) {                  \
        __m512 a[12];                                                                \
        SETUP;                                                                       \
        for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);               \
        for (long k = 0; k < iters; k++) {                                           \
            _Pragma("GCC unroll 12") for (int i = 0; i < 12; i++) a[i] = STEP(a[i]); \
        }                                                                            \
        float s = 0, out[16];                                                        \
        for (int i = 0; i < 12; i++) {                                               \
            _mm512_storeu_ps(out, a[i]);                                             \
            s += out[0];                                                             \
        }                                                                            \
        return s;                                                                    \
    }
/* f32 FMA: 12 chains keep both FMA ports busy. */
#define FMA_STEP(acc) _mm512_fmadd_ps(acc, m, c)
PEAK_LOOP_512(fma_avx512, "avx512f",
              __m512 m = _mm512_set1_ps(0.999999f); __m512 c = _mm512_set1_ps(1e-7f), FMA_STEP)
/* bf16 dot products (AVX512_BF16's vdpbf16ps): 16 lanes of two bf16
 * products added to an f32 accumulator. */
#define DPBF16_STEP(acc) _mm512_dpbf16_ps(acc, x, y)
PEAK_LOOP_512(dpbf16_avx512, "avx512f,avx512bf16",
              __m512bh x = (__m512bh)_mm512_set1_epi16(0x3F80);
              __m512bh y = (__m512bh)_mm512_set1_epi16(0x3380), DPBF16_STEP)
__attribute__((target("avx2,fma"))) static float fma_avx2(long iters) {
    __m256 a[12], m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i);
    for (long k = 0; k < iters; k++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) a[i] = _mm256_fmadd_ps(a[i], m, c);
    }
    float s = 0, out[8];
    for (int i = 0; i < 12; i++) {
        _mm256_storeu_ps(out, a[i]);
        s += out[0];
    }
    return s;
}
#endif

typedef struct peak_state {
    long iters;
    bool wide, bf16;
    volatile float sink;
} peak_state;

static int step_peak(void *state) {
#if defined(__x86_64__) && defined(__GNUC__)
    peak_state *p = state;
    float sink = 0;
#ifdef GRAFT_BENCH_OPENMP
#pragma omp parallel reduction(+ : sink)
#endif
    sink += p->bf16 ? dpbf16_avx512(p->iters) : p->wide ? fma_avx512(p->iters)
                                                         : fma_avx2(p->iters);
    p->sink = sink;
#else
    (void)state;
#endif
    return 0;
}

void bench_peak(bench_run *run, int device, int64_t iters) {
#if defined(__x86_64__) && defined(__GNUC__)
    bool wide = __builtin_cpu_supports("avx512f");
    if (!wide && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return;
    char detail[112];
    int threads = host_threads();
    snprintf(detail, sizeof detail, "f32 FMA, %s, %d thread%s, %lld iterations",
             wide ? "AVX-512" : "AVX2", threads, threads == 1 ? "" : "s", (long long)iters);
    bench_result *r = bench_result_add(run, device, "peak fma", detail);
    if (!r) return;
    peak_state p = {.iters = (long)iters, .wide = wide};
    r->work = 2.0 * (wide ? 16 : 8) * 12 * (double)iters * threads;
    r->rate_unit = "GFLOP/s";
    bench_progress(run, "FMA loop");
    if (bench_measure(run, NULL, step_peak, &p, 1, &r->time) != 0)
        bench_result_wrong(r, "the FMA loop failed");
    /* The bf16 peak the bf16 rows are measured against, where the CPU has
     * vdpbf16ps: 64 flops an instruction (16 lanes, two products each). */
    if (!wide || !__builtin_cpu_supports("avx512bf16")) return;
    snprintf(detail, sizeof detail, "bf16 dot products (vdpbf16ps), %d thread%s, %lld iterations",
             threads, threads == 1 ? "" : "s", (long long)iters);
    bench_result *rb = bench_result_add(run, device, "peak bf16", detail);
    if (!rb) return;
    peak_state pb = {.iters = (long)iters, .wide = true, .bf16 = true};
    rb->work = 64.0 * 12 * (double)iters * threads;
    rb->rate_unit = "GFLOP/s";
    bench_progress(run, "vdpbf16ps loop");
    if (bench_measure(run, NULL, step_peak, &pb, 1, &rb->time) != 0)
        bench_result_wrong(rb, "the vdpbf16ps loop failed");
#else
    (void)run, (void)device, (void)iters; /* no peak figure on this machine */
#endif
}

/* ------------------------------------------------------------ matmul */
typedef struct mm_state {
    int64_t n;
    const float *a, *b;
    float *y;
    double *a64, *b64, *y64;
#ifdef GRAFT_BENCH_ONEDNN
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[3];
    dnnl_exec_arg_t args[3];
#endif
} mm_state;

/* y's sampled entries against a double-precision dot product (as graft's
 * rows are checked). */
static void check_mm(bench_result *r, const mm_state *s, bool f64) {
    int64_t n = s->n;
    for (int k = 0; k < 64; k++) {
        int64_t i = (k * 37 + 3) % n, j = (k * 101 + 7) % n;
        double want = 0, mag = 0;
        for (int64_t q = 0; q < n; q++) {
            double t = (double)s->a[i * n + q] * s->b[q * n + j];
            want += t;
            mag += fabs(t);
        }
        double got = f64 ? s->y64[i * n + j] : s->y[i * n + j];
        if (!(fabs(got - want) <= 1e-4 * mag + 1e-6)) {
            bench_result_wrong(r, "wrong result: y[%lld][%lld] = %.7g, expected %.7g",
                               (long long)i, (long long)j, got, want);
            return;
        }
    }
}

#ifdef GRAFT_BENCH_ONEDNN
static bool dnnl_setup(mm_state *s) {
    if (dnnl_engine_create(&s->eng, dnnl_cpu, 0) || dnnl_stream_create(&s->stream, s->eng, 0))
        return false;
    dnnl_dims_t dims = {s->n, s->n};
    dnnl_memory_desc_t md;
    dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_f32, dnnl_ab);
    dnnl_matmul_desc_t mm;
    if (dnnl_matmul_desc_init(&mm, &md, &md, NULL, &md) ||
        dnnl_primitive_desc_create(&s->pd, &mm, NULL, s->eng, NULL) ||
        dnnl_primitive_create(&s->prim, s->pd))
        return false;
    void *ptr[3] = {(void *)s->a, (void *)s->b, s->y};
    int arg[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    for (int i = 0; i < 3; i++) {
        if (dnnl_memory_create(&s->mem[i], &md, s->eng, ptr[i])) return false;
        s->args[i] = (dnnl_exec_arg_t){arg[i], s->mem[i]};
    }
    return true;
}

static void dnnl_teardown(mm_state *s) {
    for (int i = 0; i < 3; i++)
        if (s->mem[i]) dnnl_memory_destroy(s->mem[i]);
    if (s->prim) dnnl_primitive_destroy(s->prim);
    if (s->pd) dnnl_primitive_desc_destroy(s->pd);
    if (s->stream) dnnl_stream_destroy(s->stream);
    if (s->eng) dnnl_engine_destroy(s->eng);
}

static int step_dnnl(void *state) {
    mm_state *s = state;
    if (dnnl_primitive_execute(s->prim, s->stream, 3, s->args) != dnnl_success) return -1;
    return dnnl_stream_wait(s->stream) == dnnl_success ? 0 : -1;
}
#endif

static int step_ikj64(void *state) {
    mm_state *s = state;
    int64_t n = s->n;
    const double *a = s->a64, *b = s->b64;
    double *y = s->y64;
#ifdef GRAFT_BENCH_OPENMP
#pragma omp parallel for
#endif
    for (int64_t i = 0; i < n; i++) {
        double *yr = y + i * n;
        for (int64_t j = 0; j < n; j++) yr[j] = 0;
        for (int64_t k = 0; k < n; k++) {
            double aik = a[i * n + k];
            const double *br = b + k * n;
            for (int64_t j = 0; j < n; j++) yr[j] += aik * br[j];
        }
    }
    return 0;
}

static void host_matmul(bench_run *run, int device, int64_t n, bool f64) {
#ifndef GRAFT_BENCH_ONEDNN
    if (!f64) return; /* no oneDNN in this build: no f32 row */
#endif
    char name[40], detail[112];
    snprintf(name, sizeof name, "%s %lld", f64 ? "matmul64" : "matmul", (long long)n);
    snprintf(detail, sizeof detail, "%s [%lld,%lld] @ [%lld,%lld]", f64 ? "f64" : "f32",
             (long long)n, (long long)n, (long long)n, (long long)n);
    bench_result *r = bench_result_add(run, device, name, detail);
    if (!r) return;
    snprintf(r->variant, sizeof r->variant, "%s", f64 ? "C loop i-k-j, OpenMP" : "oneDNN direct");
    r->work = 2.0 * (double)n * (double)n * (double)n;
    r->rate_unit = "GFLOP/s";
    r->peak_share = f64 ? 0.5 : 1.0;
    size_t count = (size_t)n * (size_t)n;
    mm_state s = {.n = n};
    float *a = bench_host_values(n * n, 1, -1, 1), *b = bench_host_values(n * n, 2, -1, 1);
    s.a = a, s.b = b;
    s.y = malloc(count * sizeof(float));
    if (f64) {
        s.a64 = malloc(count * sizeof(double));
        s.b64 = malloc(count * sizeof(double));
        s.y64 = malloc(count * sizeof(double));
    }
    if (!a || !b || !s.y || (f64 && (!s.a64 || !s.b64 || !s.y64))) {
        bench_result_wrong(r, "out of host memory");
        goto done;
    }
    bench_progress(run, f64 ? "C loop" : "oneDNN");
    if (f64) {
        for (size_t i = 0; i < count; i++) s.a64[i] = a[i], s.b64[i] = b[i];
        if (bench_measure(run, NULL, step_ikj64, &s, 1, &r->time) != 0) goto done;
    } else {
#ifdef GRAFT_BENCH_ONEDNN
        if (!dnnl_setup(&s) || bench_measure(run, NULL, step_dnnl, &s, 1, &r->time) != 0) {
            bench_result_wrong(r, "oneDNN's matmul primitive could not be made or run");
            dnnl_teardown(&s);
            goto done;
        }
        dnnl_teardown(&s);
#endif
    }
    check_mm(r, &s, f64);
done:
    free(a), free(b), free(s.y), free(s.a64), free(s.b64), free(s.y64);
}

void bench_host_matmul(bench_run *run, int device, int64_t n) { host_matmul(run, device, n, false); }
void bench_host_matmul64(bench_run *run, int device, int64_t n) { host_matmul(run, device, n, true); }

/* ------------------------------------------------------------ elementwise */
typedef struct ew_state {
    int kind; /* 0 add, 1 mul, 2 exp */
    int64_t n;
    const float *a, *b;
    float *y;
    bool parallel;
} ew_state;

static void ew_loop(int kind, const float *a, const float *b, float *y, int64_t n) {
    switch (kind) {
    case 0: for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i]; break;
    case 1: for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i]; break;
    default: for (int64_t i = 0; i < n; i++) y[i] = expf(a[i]); break;
    }
}

static int step_ew(void *state) {
    ew_state *s = state;
    if (!s->parallel) {
        ew_loop(s->kind, s->a, s->b, s->y, s->n);
        return 0;
    }
#ifdef GRAFT_BENCH_OPENMP
#pragma omp parallel
    {
        int64_t k = omp_get_num_threads(), t = omp_get_thread_num();
        int64_t lo = s->n / k * t, hi = t + 1 == k ? s->n : s->n / k * (t + 1);
        ew_loop(s->kind, s->a + lo, s->b + lo, s->y + lo, hi - lo);
    }
#endif
    return 0;
}

static void host_elementwise(bench_run *run, int device, int64_t n, int kind) {
    static const char *names[] = {"add", "mul", "exp"};
    char name[40], detail[112];
    if (n >= (1 << 20) && n % (1 << 20) == 0)
        snprintf(name, sizeof name, "%s %lldM", names[kind], (long long)(n >> 20));
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(name, sizeof name, "%s %lldK", names[kind], (long long)(n >> 10));
    else snprintf(name, sizeof name, "%s %lld", names[kind], (long long)n);
    snprintf(detail, sizeof detail, kind == 2 ? "f32 [%lld]" : "f32 [%lld] and [%lld]",
             (long long)n, (long long)n);
    float *a = bench_host_values(n, 3, -1, 1), *b = bench_host_values(n, 4, -1, 1);
    float *y = malloc((size_t)(n > 0 ? n : 1) * sizeof *y);
#ifdef GRAFT_BENCH_OPENMP
    int n_rows = 2;
#else
    int n_rows = 1;
#endif
    for (int p = 0; p < n_rows; p++) {
        bench_result *r = bench_result_add(run, device, name, detail);
        if (!r) break;
        snprintf(r->variant, sizeof r->variant, "%s", p ? "C loop, OpenMP" : "C loop, 1 thread");
        r->work = (kind == 2 ? 2.0 : 3.0) * (double)n * sizeof(float);
        r->rate_unit = "GB/s";
        if (!a || !b || !y) {
            bench_result_wrong(r, "out of host memory");
            continue;
        }
        ew_state s = {.kind = kind, .n = n, .a = a, .b = b, .y = y, .parallel = p == 1};
        bench_progress(run, r->variant);
        if (bench_measure(run, NULL, step_ew, &s, 1, &r->time) != 0)
            bench_result_wrong(r, "the loop failed");
    }
    free(a), free(b), free(y);
}

void bench_host_add(bench_run *run, int device, int64_t n) { host_elementwise(run, device, n, 0); }
void bench_host_mul(bench_run *run, int device, int64_t n) { host_elementwise(run, device, n, 1); }
void bench_host_exp(bench_run *run, int device, int64_t n) { host_elementwise(run, device, n, 2); }
