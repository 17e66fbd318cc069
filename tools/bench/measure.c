/* SPDX-License-Identifier: BSD-3-Clause */
/* measure.c — the clock, the statistics of repeated runs, the repeat policy
 * and the progress line. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long minor_faults(void) {
    struct rusage r;
    return getrusage(RUSAGE_SELF, &r) == 0 ? r.ru_minflt : 0;
}

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile q of sorted v by linear interpolation between order statistics
 * (NumPy's default), so the quartiles of few runs are still defined. */
static double quantile(const double *v, int n, double q) {
    double pos = q * (n - 1);
    int lo = (int)pos;
    if (lo >= n - 1) return v[n - 1];
    double frac = pos - lo;
    return v[lo] + frac * (v[lo + 1] - v[lo]);
}

bench_stats bench_summarise(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (bench_stats){.median = quantile(v, n, 0.5),
                         .min = v[0],
                         .max = v[n - 1],
                         .q1 = quantile(v, n, 0.25),
                         .q3 = quantile(v, n, 0.75),
                         .runs = n};
}

/* At least min_repeats; then more while less than min_time was timed, up to
 * max_repeats. A slow workload (a 5 s matmul on the plain-C device) thus gets
 * the minimum and a fast one many runs, without a fixed total. */
bool bench_more_runs(const bench_run *run, int done, double timed_seconds) {
    const bench_opts *o = &run->opts;
    if (done < o->min_repeats) return true;
    return done < o->max_repeats && timed_seconds < o->min_time;
}

static void progress_line(bench_run *run, const char *what, const char *run_text) {
    /* \r returns to the start of the line and \033[K clears what a longer
     * earlier line left behind. */
    fprintf(stderr, "\r[%d/%d] %s %s%s%s%s\033[K", run->task, run->n_tasks,
            run->task_device ? run->task_device : "", run->task_name ? run->task_name : "",
            what && *what ? ": " : "", what ? what : "", run_text);
    fflush(stderr);
    run->progress_shown = true;
}

void bench_progress(bench_run *run, const char *what) {
    run->task_phase = what;
    if (run->opts.progress) progress_line(run, what, "");
}

/* The run number, for long runs (a 10 s matmul on the plain-C device). */
static void progress_run(bench_run *run, int i, bool warmup) {
    if (!run->opts.progress) return;
    char text[32];
    snprintf(text, sizeof text, warmup ? ", warm-up" : ", run %d", i + 1);
    progress_line(run, run->task_phase, text);
}

/* One run, ended by a synchronize of dev (none for the host rows). */
static int one_run(gf_device *dev, bench_step_fn step, void *state) {
    if (step(state) != 0) return -1;
    return !dev || gf_device_synchronize(dev) == GF_OK ? 0 : -1;
}

int bench_measure(bench_run *run, gf_device *dev, bench_step_fn step, void *state, double units,
                  bench_stats *out) {
    double first = 0;
    for (int i = 0; i < run->opts.warmup; i++) {
        progress_run(run, i, true);
        double t0 = bench_now();
        if (one_run(dev, step, state) != 0) return -1;
        if (i == 0) first = (bench_now() - t0) / units;
    }
    double t[BENCH_MAX_REPEATS], c[BENCH_MAX_REPEATS], total = 0;
    int cap = run->opts.max_repeats < BENCH_MAX_REPEATS ? run->opts.max_repeats : BENCH_MAX_REPEATS;
    int n = 0;
    long faults = minor_faults();
    while (n < cap && bench_more_runs(run, n, total)) {
        progress_run(run, n, false);
        double t0 = bench_now(), c0 = cpu_now();
        if (one_run(dev, step, state) != 0) return -1;
        t[n] = bench_now() - t0;
        c[n] = (cpu_now() - c0) / units;
        total += t[n];
        t[n] /= units;
        n++;
    }
    faults = minor_faults() - faults;
    *out = bench_summarise(t, n);
    out->first = first;
    out->cpu = bench_summarise(c, n).median;
    out->faults = (double)faults / n / units;
    return 0;
}

void bench_progress_clear(bench_run *run) {
    if (!run->progress_shown) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    run->progress_shown = false;
}
