/* graft-onednn-bench — graft on the cpu_onednn device against what it is
 * built on, measured in the same run:
 *   matmul f32 NxN (256 ... 2048): gf_matmul against oneDNN's matmul primitive
 *     called directly (created once, plain row-major, executed repeatedly);
 *     GFLOP/s and the fraction of this machine's peak, measured here with an
 *     FMA loop on every thread;
 *   matmul f64 NxN (up to 1024): gf_matmul against a naive i-k-j loop with
 *     OpenMP over rows (oneDNN 2.x has no f64 matmul to compare with);
 *   elementwise add, mul, exp on 16M floats: gf_add / gf_mul / gf_exp against a
 *     plain C loop (one thread, and an OpenMP loop with the same threads); GB/s
 *     counting every byte read and written once;
 *   train: one training step of an MLP and of a small CNN (bench_train.c), the
 *     workloads compare_torch.py also runs in PyTorch.
 * Each figure is the median of --reps timed runs after a warm-up, for each
 * thread count of --threads (OpenMP's, which oneDNN and graft's loops use);
 * the runs of the things compared alternate, and the ratio of their fastest
 * runs is printed too, the figure least disturbed by other load.
 *
 *   graft-onednn-bench [--threads 1,2] [--reps 15] [--sizes 256,512,1024,2048]
 *                      [--elems 16777216] [--only matmul|matmul64|elementwise|train|mlp|cnn]
 * The cpu_onednn device must be loaded (it is cpu:0 when both CPU plugins
 * are; GRAFT_PLUGINS=cpu_onednn selects it alone). */
#define _POSIX_C_SOURCE 200809L

#include <dnnl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_train.h"
#include "graft.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define TRY(cond)                                                                        \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "graft-onednn-bench: %s failed: %s\n", #cond,                \
                    gf_last_error());                                                    \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* ------------------------------------------------------------ peak */
/* Independent FMA chains keep both FMA ports busy: the machine's f32 peak. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx512f"))) static double fma_loop_avx512(long iters) {
    __m512 a[12], m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    for (long k = 0; k < iters; k++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) a[i] = _mm512_fmadd_ps(a[i], m, c);
    }
    float s = 0, out[16];
    for (int i = 0; i < 12; i++) {
        _mm512_storeu_ps(out, a[i]);
        s += out[0];
    }
    return s;
}
__attribute__((target("avx2,fma"))) static double fma_loop_avx2(long iters) {
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

/* GFLOP/s of FMA on `threads` threads (0 when this build cannot tell). */
static double measure_peak(int threads) {
#if defined(__x86_64__) && defined(__GNUC__)
    int wide = __builtin_cpu_supports("avx512f");
    if (!wide && !__builtin_cpu_supports("avx2")) return 0;
    /* The best of many short runs: on a shared machine, the uncontended rate. */
    long iters = 4000000;
    double lanes = wide ? 16 : 8, best = 0, sink = 0;
    for (int rep = 0; rep < 15; rep++) {
        double t0 = now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += wide ? fma_loop_avx512(iters) : fma_loop_avx2(iters);
        double t = now() - t0;
        double gflops = 2.0 * lanes * 12 * (double)iters * threads / t * 1e-9;
        if (gflops > best) best = gflops;
    }
    if (sink == 12345.678) printf("(sink)\n");
    return best;
#else
    (void)threads;
    return 0;
#endif
}

/* ------------------------------------------------------------ matmul */
static void fill_host(float *v, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

/* oneDNN's matmul of n x n called directly: the primitive made once. */
typedef struct direct_mm {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[3];
    dnnl_exec_arg_t args[3];
} direct_mm;

static int direct_init(direct_mm *d, int64_t n, const float *a, const float *b, float *y) {
    if (dnnl_engine_create(&d->eng, dnnl_cpu, 0) || dnnl_stream_create(&d->stream, d->eng, 0))
        return 0;
    dnnl_dims_t dims = {n, n};
    dnnl_memory_desc_t md;
    dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_f32, dnnl_ab);
    dnnl_matmul_desc_t mm;
    if (dnnl_matmul_desc_init(&mm, &md, &md, NULL, &md) ||
        dnnl_primitive_desc_create(&d->pd, &mm, NULL, d->eng, NULL) ||
        dnnl_primitive_create(&d->prim, d->pd))
        return 0;
    void *ptr[3] = {(void *)a, (void *)b, y};
    int arg[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    for (int i = 0; i < 3; i++) {
        dnnl_memory_create(&d->mem[i], &md, d->eng, ptr[i]);
        d->args[i] = (dnnl_exec_arg_t){arg[i], d->mem[i]};
    }
    return 1;
}

static void direct_run(direct_mm *d) {
    dnnl_primitive_execute(d->prim, d->stream, 3, d->args);
    dnnl_stream_wait(d->stream);
}

static void direct_free(direct_mm *d) {
    for (int i = 0; i < 3; i++) dnnl_memory_destroy(d->mem[i]);
    dnnl_primitive_destroy(d->prim);
    dnnl_primitive_desc_destroy(d->pd);
    dnnl_stream_destroy(d->stream);
    dnnl_engine_destroy(d->eng);
}

/* The two are timed alternately, run after run, so that a change in the
 * machine's load falls on both (the machine may be shared). */
static void bench_matmul(gf_device *dev, const int64_t *sizes, int n_sizes, int reps, int threads,
                         double peak) {
    printf("\nmatmul f32, %d thread(s); peak (FMA loop) %.1f GFLOP/s\n", threads, peak);
    printf("%6s %14s %14s %8s %10s %10s %10s\n", "n", "graft GFLOP/s", "oneDNN GFLOP/s", "ratio",
           "graft/peak", "oneDNN/peak", "ratio(min)");
    for (int i = 0; i < n_sizes; i++) {
        int64_t n = sizes[i];
        size_t count = (size_t)(n * n);
        float *a = malloc(count * 4), *b = malloc(count * 4), *y = malloc(count * 4),
              *yg = malloc(count * 4);
        fill_host(a, count, 1), fill_host(b, count, 2);
        int r = n >= 2048 ? (reps + 2) / 3 : reps;
        direct_mm d;
        TRY(direct_init(&d, n, a, b, y));
        int64_t sz[2] = {n, n};
        gf_tensor *ta = gf_from_data(a, sz, 2, GF_F32, dev), *tb = gf_from_data(b, sz, 2, GF_F32, dev);
        TRY(ta && tb);
        double *td = malloc(sizeof(double) * (size_t)r), *tg = malloc(sizeof(double) * (size_t)r);
        for (int k = -1; k < r; k++) { /* k = -1: warm-up (primitives made, memory cached) */
            double t0 = now();
            direct_run(&d);
            double t1 = now();
            gf_tensor *out = gf_matmul(ta, tb);
            TRY(out && gf_device_synchronize(dev) == GF_OK);
            double t2 = now();
            if (k >= 0) td[k] = t1 - t0, tg[k] = t2 - t1;
            if (k == r - 1) TRY(gf_tensor_to_host(out, yg, count * 4) == GF_OK);
            gf_tensor_release(out);
        }
        double mg = median(tg, r), md = median(td, r);
        double diff = 0;
        for (size_t k = 0; k < count; k++) diff = fmax(diff, fabs((double)y[k] - yg[k]));
        double flop = 2.0 * (double)n * (double)n * (double)n;
        double gg = flop / mg * 1e-9, gd = flop / md * 1e-9;
        printf("%6lld %14.1f %14.1f %8.3f %9.1f%% %9.1f%% %10.3f%s\n", (long long)n, gg, gd,
               md / mg, peak > 0 ? 100 * gg / peak : 0, peak > 0 ? 100 * gd / peak : 0,
               td[0] / tg[0], diff > 1e-3 ? "  RESULTS DIFFER" : "");
        free(td), free(tg);
        gf_tensor_release(ta), gf_tensor_release(tb);
        direct_free(&d);
        free(a), free(b), free(y), free(yg);
    }
}

/* f64 (oneDNN 2.x has none: the plugin's blocked C GEMM) against the loop one
 * would write, i-k-j order (unit stride, vectorised) with OpenMP over rows on
 * the same threads. The naive loop's 2048 is left out (seconds per run). */
static void naive_f64(int64_t n, const double *a, const double *b, double *y, int threads) {
#pragma omp parallel for num_threads(threads)
    for (int64_t i = 0; i < n; i++) {
        double *yr = y + i * n;
        for (int64_t j = 0; j < n; j++) yr[j] = 0;
        for (int64_t k = 0; k < n; k++) {
            double aik = a[i * n + k];
            const double *br = b + k * n;
            for (int64_t j = 0; j < n; j++) yr[j] += aik * br[j];
        }
    }
}

static void bench_matmul_f64(gf_device *dev, const int64_t *sizes, int n_sizes, int reps,
                             int threads, double peak) {
    printf("\nmatmul f64, %d thread(s); f64 peak (half the f32 FMA loop's) %.1f GFLOP/s\n",
           threads, peak / 2);
    printf("%6s %14s %14s %8s %10s\n", "n", "graft GFLOP/s", "naive GFLOP/s", "ratio",
           "graft/peak");
    for (int i = 0; i < n_sizes; i++) {
        int64_t n = sizes[i];
        if (n > 1024) continue;
        size_t count = (size_t)(n * n);
        float *f = malloc(count * 4);
        double *a = malloc(count * 8), *b = malloc(count * 8), *y = malloc(count * 8),
               *yg = malloc(count * 8);
        TRY(f && a && b && y && yg);
        fill_host(f, count, 1);
        for (size_t k = 0; k < count; k++) a[k] = f[k];
        fill_host(f, count, 2);
        for (size_t k = 0; k < count; k++) b[k] = f[k];
        int r = n >= 1024 ? (reps + 4) / 5 : reps;
        int64_t sz[2] = {n, n};
        gf_tensor *ta = gf_from_data(a, sz, 2, GF_F64, dev), *tb = gf_from_data(b, sz, 2, GF_F64, dev);
        TRY(ta && tb);
        double *tn = malloc(sizeof(double) * (size_t)r), *tg = malloc(sizeof(double) * (size_t)r);
        for (int k = -1; k < r; k++) {
            double t0 = now();
            naive_f64(n, a, b, y, threads);
            double t1 = now();
            gf_tensor *out = gf_matmul(ta, tb);
            TRY(out && gf_device_synchronize(dev) == GF_OK);
            double t2 = now();
            if (k >= 0) tn[k] = t1 - t0, tg[k] = t2 - t1;
            if (k == r - 1) TRY(gf_tensor_to_host(out, yg, count * 8) == GF_OK);
            gf_tensor_release(out);
        }
        double mg = median(tg, r), mn = median(tn, r);
        double diff = 0;
        for (size_t k = 0; k < count; k++) diff = fmax(diff, fabs(y[k] - yg[k]));
        double flop = 2.0 * (double)n * (double)n * (double)n;
        double gg = flop / mg * 1e-9, gn = flop / mn * 1e-9;
        printf("%6lld %14.1f %14.1f %8.2f %9.1f%%%s\n", (long long)n, gg, gn, mn / mg,
               peak > 0 ? 200 * gg / peak : 0, diff > 1e-9 ? "  RESULTS DIFFER" : "");
        free(tn), free(tg);
        gf_tensor_release(ta), gf_tensor_release(tb);
        free(f), free(a), free(b), free(y), free(yg);
    }
}

/* ------------------------------------------------------------ elementwise */
typedef enum { EW_ADD, EW_MUL, EW_EXP } ew_op;
static const char *const ew_names[] = {"add", "mul", "exp"};

/* The plain loops graft is compared with. */
static void plain(ew_op op, const float *a, const float *b, float *y, long n) {
    switch (op) {
    case EW_ADD: for (long i = 0; i < n; i++) y[i] = a[i] + b[i]; break;
    case EW_MUL: for (long i = 0; i < n; i++) y[i] = a[i] * b[i]; break;
    case EW_EXP: for (long i = 0; i < n; i++) y[i] = expf(a[i]); break;
    }
}

static void plain_omp(ew_op op, const float *a, const float *b, float *y, long n, int threads) {
#pragma omp parallel num_threads(threads)
    {
        long k = omp_get_num_threads(), t = omp_get_thread_num();
        long lo = n / k * t, hi = t + 1 == k ? n : n / k * (t + 1);
        plain(op, a + lo, b + lo, y + lo, hi - lo);
    }
}

static void bench_elementwise(gf_device *dev, long n, int reps, int threads) {
    printf("\nelementwise f32, %ld elements, %d thread(s) (GB/s: bytes read + written)\n", n,
           threads);
    printf("%6s %10s %12s %12s %10s %10s %14s\n", "op", "graft", "plain 1 thr", "plain OpenMP",
           "vs plain", "vs OpenMP", "vs plain(min)");
    float *a = aligned_alloc(64, (size_t)n * 4), *b = aligned_alloc(64, (size_t)n * 4),
          *y = aligned_alloc(64, (size_t)n * 4), *yg = malloc((size_t)n * 4);
    fill_host(a, (size_t)n, 3), fill_host(b, (size_t)n, 4);
    int64_t sz[1] = {n};
    gf_tensor *ta = gf_from_data(a, sz, 1, GF_F32, dev), *tb = gf_from_data(b, sz, 1, GF_F32, dev);
    TRY(ta && tb);
    double *t[3];
    for (int impl = 0; impl < 3; impl++) t[impl] = malloc(sizeof(double) * (size_t)reps);
    for (int op = EW_ADD; op <= EW_EXP; op++) {
        double bytes = (op == EW_EXP ? 2.0 : 3.0) * 4.0 * (double)n;
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up; the three alternate */
            for (int impl = 0; impl < 3; impl++) {
                gf_tensor *out = NULL;
                double t0 = now();
                if (impl == 0) {
                    out = op == EW_ADD ? gf_add(ta, tb) : op == EW_MUL ? gf_mul(ta, tb) : gf_exp(ta);
                    TRY(out && gf_device_synchronize(dev) == GF_OK);
                } else if (impl == 1) {
                    plain((ew_op)op, a, b, y, n);
                } else {
                    plain_omp((ew_op)op, a, b, y, n, threads);
                }
                double dt = now() - t0;
                if (r >= 0) t[impl][r] = dt;
                if (out && r == reps - 1)
                    TRY(gf_tensor_to_host(out, yg, (size_t)n * 4) == GF_OK);
                gf_tensor_release(out);
            }
        }
        double tm[3];
        for (int impl = 0; impl < 3; impl++) tm[impl] = median(t[impl], reps);
        double diff = 0;
        for (long i = 0; i < n; i++)
            diff = fmax(diff, fabs((double)y[i] - yg[i]) / fmax(1.0, fabs((double)y[i])));
        printf("%6s %10.1f %12.1f %12.1f %10.3f %10.3f %14.3f%s\n", ew_names[op],
               bytes / tm[0] * 1e-9, bytes / tm[1] * 1e-9, bytes / tm[2] * 1e-9, tm[1] / tm[0],
               tm[2] / tm[0], t[1][0] / t[0][0], diff > 1e-5 ? "  RESULTS DIFFER" : "");
    }
    for (int impl = 0; impl < 3; impl++) free(t[impl]);
    gf_tensor_release(ta), gf_tensor_release(tb);
    free(a), free(b), free(y), free(yg);
}

/* ------------------------------------------------------------ main */
static int parse_list(const char *s, int64_t *out, int max) {
    int n = 0;
    while (*s && n < max) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0) return -1;
        out[n++] = v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n;
}

static void usage(FILE *f) {
    fprintf(f, "usage: graft-onednn-bench [--threads 1,2] [--reps 15] [--sizes 256,512,1024,2048]\n"
               "                          [--elems 16777216] [--only matmul|matmul64|elementwise|train|mlp|cnn]\n");
}

int main(int argc, char **argv) {
    int64_t threads[8] = {1, omp_get_num_procs()}, sizes[8] = {256, 512, 1024, 2048};
    int n_threads = threads[1] > 1 ? 2 : 1, n_sizes = 4, reps = 15;
    long elems = 16L << 20;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--threads") && v) {
            n_threads = parse_list(v, threads, 8), i++;
        } else if (!strcmp(argv[i], "--sizes") && v) {
            n_sizes = parse_list(v, sizes, 8), i++;
        } else if (!strcmp(argv[i], "--reps") && v) {
            reps = atoi(v), i++;
        } else if (!strcmp(argv[i], "--elems") && v) {
            elems = atol(v), i++;
        } else if (!strcmp(argv[i], "--only") && v) {
            only = v, i++;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (n_threads < 1 || n_sizes < 1 || reps < 1 || elems < 1) {
        usage(stderr);
        return 2;
    }
    gf_device *dev = gf_device_find("cpu");
    TRY(dev);
    if (strcmp(gf_device_plugin(dev), "cpu_onednn") != 0) {
        fprintf(stderr, "graft-onednn-bench: device cpu is plugin '%s', not cpu_onednn; build "
                        "with GRAFT_WITH_ONEDNN and run with GRAFT_PLUGINS=cpu_onednn\n",
                gf_device_plugin(dev));
        return 1;
    }
    const dnnl_version_t *ver = dnnl_version();
    printf("graft-onednn-bench: device %s (%s), oneDNN %d.%d.%d, %d cores\n", gf_device_spec(dev),
           gf_device_name(dev), ver->major, ver->minor, ver->patch, omp_get_num_procs());
    for (int k = 0; k < n_threads; k++) {
        /* Sets the calling thread's OpenMP threads, which both oneDNN and the
         * plugin's loops follow. */
        omp_set_num_threads((int)threads[k]);
        double peak = !only || !strncmp(only, "matmul", 6) ? measure_peak((int)threads[k]) : 0;
        if (!only || !strcmp(only, "matmul"))
            bench_matmul(dev, sizes, n_sizes, reps, (int)threads[k], peak);
        if (!only || !strcmp(only, "matmul64"))
            bench_matmul_f64(dev, sizes, n_sizes, reps, (int)threads[k], peak);
        if (!only || !strcmp(only, "elementwise")) bench_elementwise(dev, elems, reps, (int)threads[k]);
        if (!only || !strcmp(only, "train") || !strcmp(only, "mlp") || !strcmp(only, "cnn")) {
            printf("\ntraining step, %d thread(s) (median of %d steps)\n", (int)threads[k], reps);
            for (int cnn = 0; cnn < 2; cnn++) {
                if (only && !strcmp(only, cnn ? "mlp" : "cnn")) continue;
                train_result r;
                if (!bench_train_step(dev, cnn, reps, &r)) return 1;
                printf("train %s threads %d: median %.3f ms, min %.3f ms, loss %.4f -> %.4f, "
                       "%.0f page faults/step, cpu %.3f ms\n", cnn ? "cnn" : "mlp",
                       (int)threads[k], 1e3 * r.median, 1e3 * r.min, r.first_loss, r.last_loss,
                       r.faults_per_step, 1e3 * r.cpu);
            }
        }
    }
    return 0;
}
