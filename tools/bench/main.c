/* SPDX-License-Identifier: BSD-3-Clause */
/* graft-bench — one matched set of workloads on every device graft finds,
 * side by side, with each device's speed relative to a baseline device.
 *
 *   graft-bench [--device SPEC]... [--baseline SPEC] [--only LIST] [--threads N]
 *               [--quick] [--csv | --json] [--svg FILE] ...
 *   graft-bench autograd [--ops N] [--repeats R] [--scalar] [--json]
 *   mpirun -np W graft-bench dist [--repeats R] [--threads N] [--quick]
 *
 * Exit status: 0 when every workload ran or was n/a on a device that lacks
 * an op; 1 when one failed (a graft error, or a result that fails its check)
 * or no device could be used; 2 for a bad command line; 77 when a device
 * named by --device or --baseline is not present (CTest's skip code). */
#define _DEFAULT_SOURCE /* setenv, getloadavg, sysconf(_SC_NPROCESSORS_ONLN) */

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef GRAFT_BENCH_OPENMP
#include <omp.h>
#endif

#include "bench.h"

/* The set, in output order. Sizes: the full run, then --quick. The last
 * column runs on the "host" pseudo-device: the same work done without graft. */
static const bench_workload WORKLOADS[] = {
    {"peak", NULL, 4000000, 100000, bench_peak},
    {"matmul", bench_matmul, 256, 64, bench_host_matmul},
    {"matmul", bench_matmul, 512, 96, bench_host_matmul},
    {"matmul", bench_matmul, 1024, 128, bench_host_matmul},
    /* bf16 against the f32 row above; 2048 on request (--only matmul,matmul_bf16
     * --sizes 1024,2048): the plain-C device would take minutes there */
    {"matmul_bf16", bench_matmul_bf16, 1024, 128, NULL},
    {"matmul64", bench_matmul64, 256, 64, bench_host_matmul64},
    {"matmul64", bench_matmul64, 512, 96, bench_host_matmul64},
    {"matmul64", bench_matmul64, 1024, 128, bench_host_matmul64},
    {"cmatmul", bench_cmatmul, 1024, 128, NULL},
    {"add", bench_add, 1 << 20, 1 << 14, bench_host_add},
    {"add", bench_add, 16 << 20, 1 << 18, bench_host_add},
    {"mul", bench_mul, 1 << 20, 1 << 14, bench_host_mul},
    {"mul", bench_mul, 16 << 20, 1 << 18, bench_host_mul},
    {"cmul", bench_cmul, 16 << 20, 1 << 18, NULL},
    {"fft", bench_fft, 1 << 20, 1 << 14, NULL},
    {"fft", bench_fft_rows, 1000, 60, NULL},
    {"fft", bench_fft_rows, 1031, 13, NULL},
    {"rfft", bench_rfft, 1024, 128, NULL},
    {"stft", bench_stft, 160000, 16000, NULL},
    {"permute", bench_permute_heads, 64, 8, NULL},
    {"permute", bench_permute_rows, 32, 4, NULL},
    {"permute", bench_transpose, 1024, 128, NULL},
    {"exp", bench_exp, 1 << 20, 1 << 14, bench_host_exp},
    {"exp", bench_exp, 16 << 20, 1 << 18, bench_host_exp},
    {"sum", bench_sum_lastdim, 4096, 256, NULL},
    {"sum", bench_sum_all, 4096, 256, NULL},
    {"softmax", bench_softmax, 4096, 64, NULL},
    {"conv2d", bench_conv2d, 16, 2, NULL},
    {"conv2d_bf16", bench_conv2d_bf16, 16, 2, NULL},
    {"conv2d_bwd", bench_conv2d_bwd, 16, 2, NULL},
    {"batch_norm", bench_batch_norm, 64, 2, NULL},
    {"layer_norm", bench_layer_norm, 4096, 64, NULL},
    {"max_pool2d", bench_max_pool2d, 32, 2, NULL},
    {"dispatch", bench_dispatch, 1000, 200, NULL},
    {"autograd", bench_autograd, 1000, 200, NULL},
    {"hvp", bench_hvp, 256, 16, NULL},
    {"jacobian", bench_jacobians, 256, 32, NULL},
    {"graph", bench_graph_add, 1000, 200, NULL},
    {"graph", bench_graph_autograd, 1000, 200, NULL},
    {"graph_chain", bench_graph_chain, 1 << 22, 1 << 16, NULL},
    {"mlp", bench_mlp_step, 256, 32, NULL},
    {"cnn", bench_cnn_step, 64, 8, NULL},
    /* the two steps under autocast bf16: compare with the rows above */
    {"mlp_bf16", bench_mlp_step_bf16, 256, 32, NULL},
    {"cnn_bf16", bench_cnn_step_bf16, 64, 8, NULL},
    {"lstm", bench_lstm_step, 32, 4, NULL},
    {"gru", bench_gru_step, 32, 4, NULL},
    {"encoder", bench_encoder_step, 32, 4, NULL},
};
#define N_WORKLOADS (int)(sizeof WORKLOADS / sizeof WORKLOADS[0])

/* What --threads sets: OpenMP (the oneDNN plugin), PoCL's pthread device
 * (POCL_MAX_PTHREAD_COUNT before PoCL 4, POCL_CPU_MAX_CU_NUM since) and
 * Mesa's lavapipe (LP_NUM_THREADS). Unknown ones are harmless elsewhere. */
static const char *const THREAD_VARS[] = {"OMP_NUM_THREADS", "POCL_MAX_PTHREAD_COUNT",
                                          "POCL_CPU_MAX_CU_NUM", "LP_NUM_THREADS"};
#define N_THREAD_VARS (int)(sizeof THREAD_VARS / sizeof THREAD_VARS[0])

/* Set in the environment of the re-executed process (see threads_reexec),
 * so that it never executes itself a second time. */
#define REEXEC_MARK "GRAFT_BENCH_THREADS_REEXEC"

/* main's argv, for threads_reexec. */
static char **main_argv;

static void usage(FILE *out, const char *argv0) {
    fprintf(out,
        "usage: %s [options]\n"
        "       %s autograd [--ops N] [--repeats R] [--scalar] [--json]\n"
        "       mpirun -np W %s dist [--repeats R] [--threads N] [--quick]\n"
        "Runs one matched set of workloads on every device graft finds (or those named)\n"
        "and prints them side by side: the median time and its spread over repeated runs\n"
        "after a warm-up, GFLOP/s or GB/s, the host<->device transfer of inputs and output\n"
        "timed apart from the kernel, and the speed relative to a baseline device.\n"
        "\n"
        "  --device SPEC    run on this device (\"cpu:1\", \"opencl\"); repeatable; default\n"
        "                   all, and \"host\": the same work without graft (oneDNN called\n"
        "                   directly, plain C loops, the CPU's FMA peak)\n"
        "  --baseline SPEC  the device ratios refer to (default: the first cpu device);\n"
        "                   it is run as well\n"
        "  --only LIST      comma-separated workload families (see --list)\n"
        "  --sizes LIST     run each selected family at these sizes (comma-separated)\n"
        "                   instead of its own, e.g. --only matmul --sizes 512,2048\n"
        "  --cold           kernel caches off (GRAFT_OPENCL_CACHE=0, POCL_KERNEL_CACHE=0):\n"
        "                   the first run compiles from source, as on a new machine\n"
        "  --no-variants    only graft's own choice of kernel, not the variants a plugin\n"
        "                   offers through its extension (Vulkan shaders, OpenCL GEMMs)\n"
        "  --threads N      set OMP_NUM_THREADS, POCL_MAX_PTHREAD_COUNT, POCL_CPU_MAX_CU_NUM\n"
        "                   and LP_NUM_THREADS to N (graft-bench restarts itself with them\n"
        "                   when they differ, as OpenMP reads its variable at start)\n"
        "  --quick          small shapes, 2 timed runs: a smoke test of a few seconds\n"
        "  --warmup N       untimed runs before the timed ones (default 1)\n"
        "  --repeats N      timed runs, at least (default 3; quick 2)\n"
        "  --max-repeats N  timed runs, at most (default 50; quick 2)\n"
        "  --min-time S     repeat until S seconds were timed (default 0.5; quick 0)\n"
        "  --csv, --json    print CSV or JSON instead of the table\n"
        "  --svg FILE       also write a bar chart of the ratios to FILE\n"
        "  --profile DIR    write a profile (Chrome trace JSON) of each workload on each device\n"
        "                   to DIR/<workload>-<device>.json, and print each one's summary\n"
        "  --no-progress    no progress line on stderr (off anyway when it is not a terminal)\n"
        "  --list           list the workloads and exit\n"
        "  autograd         the autograd-overhead workload alone on GRAFT_DEVICE, in the\n"
        "                   form bench_autograd_torch.py compares with PyTorch\n"
        "  dist             under mpirun: data-parallel MLP and CNN steps (global batch\n"
        "                   split over the ranks) and graft's all_reduce against\n"
        "                   MPI_Allreduce (needs libgraft-dist)\n",
        argv0, argv0, argv0);
}

/* ------------------------------------------------------------ results */
bench_result *bench_result_add(bench_run *run, int device, const char *name,
                               const char *detail) {
    if (run->n_results >= run->cap_results) return NULL;
    bench_result *r = &run->results[run->n_results++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->detail, sizeof r->detail, "%s", detail);
    r->device = device;
    r->per = "run";
    r->state = BENCH_OK;
    return r;
}

void bench_result_graft_error(bench_result *r, const char *what) {
    if (r->state != BENCH_OK) return; /* keep the first reason */
    gf_status s = gf_last_status();
    /* A device without the op or dtype, or without the memory: not this
     * tool's failure nor graft's, just a row the device cannot run. */
    bool na = s == GF_ERR_UNSUPPORTED || s == GF_ERR_DTYPE || s == GF_ERR_OUT_OF_MEMORY;
    r->state = na ? BENCH_NA : BENCH_FAILED;
    snprintf(r->note, sizeof r->note, "%s: %s (%s)", what, gf_last_error(), gf_status_name(s));
    /* Plugin messages may hold a compiler's build log: one line per note. */
    for (char *p = r->note; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
    gf_clear_error();
}

void bench_result_wrong(bench_result *r, const char *fmt, ...) {
    if (r->state != BENCH_OK) return;
    r->state = BENCH_FAILED;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note, sizeof r->note, fmt, ap);
    va_end(ap);
}

bench_result *bench_result_variant(bench_run *run, const bench_result *r, const char *variant) {
    bench_result *v = bench_result_add(run, r->device, r->name, r->detail);
    if (!v) return NULL;
    snprintf(v->variant, sizeof v->variant, "%s", variant);
    v->per = r->per;
    v->work = r->work;
    v->rate_unit = r->rate_unit;
    v->peak_share = r->peak_share;
    v->peak_bf16 = r->peak_bf16;
    return v;
}

/* The baseline's row of r's name: graft's own choice on the baseline device
 * or, when the baseline is the host, the first host row of that name. */
const bench_result *bench_baseline_of(const bench_run *run, const bench_result *r) {
    bool host = run->devices[run->baseline].dev == NULL;
    for (int i = 0; i < run->n_results; i++) {
        const bench_result *b = &run->results[i];
        if (b->device == run->baseline && !strcmp(b->name, r->name) && (host || !b->variant[0]))
            return b;
    }
    return NULL;
}

double bench_ratio(const bench_run *run, const bench_result *r) {
    const bench_result *b = bench_baseline_of(run, r);
    if (!b || b->state != BENCH_OK || r->state != BENCH_OK || !(r->time.median > 0)) return 0;
    return b->time.median / r->time.median;
}

/* ------------------------------------------------------------ command line */
typedef struct cli {
    bench_opts opts;
    const char *devices[BENCH_MAX_DEVICES];
    int n_devices;
    const char *baseline;
    const char *only;
    long threads; /* 0 = leave the environment alone */
    enum { OUT_TABLE, OUT_CSV, OUT_JSON } format;
    const char *svg;
    const char *profile; /* directory for --profile */
    bool list;
    bool no_progress;
    bool host; /* run the host pseudo-device */
} cli;

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "graft-bench: %s needs a whole number from %ld to %ld, not '%s'\n", opt,
                lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* --sizes: up to BENCH_MAX_SIZES whole numbers from 1 to 2^31. */
static int parse_sizes(const char *s, bench_opts *o) {
    o->n_sizes = 0;
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || end == p || v < 1 || v > (1ll << 31) || (*end && *end != ',') ||
            o->n_sizes == BENCH_MAX_SIZES) {
            fprintf(stderr, "graft-bench: --sizes needs up to %d comma-separated whole numbers "
                    "from 1 to 2147483648, not '%s'\n", BENCH_MAX_SIZES, s);
            return -1;
        }
        o->sizes[o->n_sizes++] = v;
        if (!*end) return 0;
        p = end + 1;
    }
}

static int parse_cli(int argc, char **argv, cli *c) {
    memset(c, 0, sizeof *c);
    int warmup = -1, min_rep = -1, max_rep = -1;
    double min_time = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        long v;
        if (!strcmp(a, "--quick")) c->opts.quick = true;
        else if (!strcmp(a, "--csv")) c->format = OUT_CSV;
        else if (!strcmp(a, "--json")) c->format = OUT_JSON;
        else if (!strcmp(a, "--list")) c->list = true;
        else if (!strcmp(a, "--no-progress")) c->no_progress = true;
        else if (!strcmp(a, "--cold")) c->opts.cold = true;
        else if (!strcmp(a, "--no-variants")) c->opts.no_variants = true;
        else if (!strcmp(a, "--sizes") && has_val) {
            if (parse_sizes(argv[++i], &c->opts) != 0) return -1;
        }
        else if (!strcmp(a, "--device") && has_val) {
            if (c->n_devices == BENCH_MAX_DEVICES) {
                fprintf(stderr, "graft-bench: at most %d --device options\n", BENCH_MAX_DEVICES);
                return -1;
            }
            c->devices[c->n_devices++] = argv[++i];
        } else if (!strcmp(a, "--baseline") && has_val) c->baseline = argv[++i];
        else if (!strcmp(a, "--only") && has_val) c->only = argv[++i];
        else if (!strcmp(a, "--svg") && has_val) c->svg = argv[++i];
        else if (!strcmp(a, "--profile") && has_val) c->profile = argv[++i];
        else if (!strcmp(a, "--threads") && has_val) {
            if (parse_long(a, argv[++i], 1, 4096, &c->threads)) return -1;
        } else if (!strcmp(a, "--warmup") && has_val) {
            if (parse_long(a, argv[++i], 0, 1000, &v)) return -1;
            warmup = (int)v;
        } else if (!strcmp(a, "--repeats") && has_val) {
            if (parse_long(a, argv[++i], 1, BENCH_MAX_REPEATS, &v)) return -1;
            min_rep = (int)v;
        } else if (!strcmp(a, "--max-repeats") && has_val) {
            if (parse_long(a, argv[++i], 1, BENCH_MAX_REPEATS, &v)) return -1;
            max_rep = (int)v;
        } else if (!strcmp(a, "--min-time") && has_val) {
            char *end;
            errno = 0;
            min_time = strtod(argv[++i], &end);
            if (errno || end == argv[i] || *end || !(min_time >= 0 && min_time <= 3600)) {
                fprintf(stderr, "graft-bench: --min-time needs seconds from 0 to 3600, not "
                        "'%s'\n", argv[i]);
                return -1;
            }
        } else {
            fprintf(stderr, "graft-bench: unknown option or missing value: %s\n", a);
            return -1;
        }
    }
    bench_opts *o = &c->opts;
    o->warmup = warmup >= 0 ? warmup : 1;
    o->min_repeats = min_rep > 0 ? min_rep : o->quick ? 2 : 3;
    o->max_repeats = max_rep > 0 ? max_rep : o->quick ? 2 : 50;
    if (o->max_repeats < o->min_repeats) o->max_repeats = o->min_repeats;
    o->min_time = min_time >= 0 ? min_time : o->quick ? 0 : 0.5;
    return 0;
}

/* True when family is in the comma-separated list (NULL: every family). */
static bool selected(const char *only, const char *family) {
    if (!only) return true;
    size_t n = strlen(family);
    for (const char *p = only; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, family, n)) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

static int check_only(const char *only) {
    if (!only) return 0;
    for (const char *p = only; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        bool known = false;
        for (int w = 0; w < N_WORKLOADS; w++)
            known |= strlen(WORKLOADS[w].family) == len && !strncmp(p, WORKLOADS[w].family, len);
        if (!known) {
            fprintf(stderr, "graft-bench: --only: no workload family '%.*s' (see --list)\n",
                    (int)len, p);
            return -1;
        }
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static void list_workloads(void) {
    printf("workload families (--only) and sizes (full run; --quick); \"peak\" runs on the\n"
           "host only, the others on every device (and on the host where a library or a\n"
           "plain loop does the same work):\n");
    for (int w = 0; w < N_WORKLOADS; w++) {
        if (w && !strcmp(WORKLOADS[w].family, WORKLOADS[w - 1].family)) continue;
        printf("  %-9s", WORKLOADS[w].family);
        for (int v = w; v < N_WORKLOADS && !strcmp(WORKLOADS[v].family, WORKLOADS[w].family); v++)
            printf(" %lld (%lld)", (long long)WORKLOADS[v].size, (long long)WORKLOADS[v].quick_size);
        printf("\n");
    }
}

/* ------------------------------------------------------------ threads and devices */
/* graft-bench links libgomp (and oneDNN) itself, and libgomp reads
 * OMP_NUM_THREADS once, when it loads, before main runs: a setenv in main
 * comes too late for it. So when the environment does not hold the values of
 * --threads yet, they are set and graft-bench executes itself again with the
 * same arguments, before anything else happened (no plugin loaded, no
 * MPI_Init: under mpirun the rank stays the same process). Returns only when
 * that was not needed or not possible; the variables are set either way. */
static void threads_reexec(const char *val) {
    bool held = true;
    for (int i = 0; i < N_THREAD_VARS; i++) {
        const char *v = getenv(THREAD_VARS[i]);
        held &= v && !strcmp(v, val);
    }
    if (held) return;
    for (int i = 0; i < N_THREAD_VARS; i++) setenv(THREAD_VARS[i], val, 1);
    if (!main_argv || getenv(REEXEC_MARK)) return; /* once, never in a loop */
    setenv(REEXEC_MARK, "1", 1);
    fflush(NULL);
    execv("/proc/self/exe", main_argv);
    /* No /proc: OpenMP is told in this process instead (bench_setup_threads). */
    fprintf(stderr, "graft-bench: --threads: could not restart with the thread variables set "
            "(%s); OpenMP's count is set by omp_set_num_threads instead\n", strerror(errno));
    unsetenv(REEXEC_MARK);
}

void bench_setup_threads(bench_run *run, long threads) {
    char val[24];
    snprintf(val, sizeof val, "%ld", threads);
    if (threads > 0) {
        threads_reexec(val);
#ifdef GRAFT_BENCH_OPENMP
        /* Already so after the restart; what holds where it was not possible. */
        omp_set_num_threads((int)threads);
#endif
    }
    unsetenv(REEXEC_MARK); /* not for the processes this one starts */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    run->cpus_online = cpus > 0 ? (int)cpus : 0;
#ifdef GRAFT_BENCH_OPENMP
    /* What the OpenMP runtime of this process (the one oneDNN and the
     * cpu_onednn plugin use) will run a parallel region with. */
    run->openmp_threads = omp_get_max_threads();
#endif
    size_t len = 0, cap = sizeof run->threads;
    for (int i = 0; i < N_THREAD_VARS && len < cap; i++) {
        const char *v = getenv(THREAD_VARS[i]);
        len += (size_t)snprintf(run->threads + len, cap - len, "%s%s=%s", i ? ", " : "",
                                THREAD_VARS[i], v ? v : "(unset)");
    }
    if (len < cap)
        len += (size_t)snprintf(run->threads + len, cap - len, "%s",
                                threads > 0 ? " (set by --threads)" : "");
    if (len < cap && run->openmp_threads > 0) {
        /* How its idle threads wait decides what a parallel region costs
         * (and, on cpu_onednn, from what size a loop is split). */
        const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
        len += (size_t)snprintf(run->threads + len, cap - len,
                                "; OpenMP runs %d thread%s, OMP_WAIT_POLICY=%s%s%s",
                                run->openmp_threads, run->openmp_threads == 1 ? "" : "s",
                                policy ? policy : "(unset)", spin ? ", GOMP_SPINCOUNT=" : "",
                                spin ? spin : "");
    }
    if (len < cap) snprintf(run->threads + len, cap - len, "; %d CPUs online", run->cpus_online);
}

static void fill_device(bench_device *d, gf_device *dev) {
    memset(d, 0, sizeof *d);
    d->dev = dev;
    snprintf(d->spec, sizeof d->spec, "%s", gf_device_spec(dev));
    snprintf(d->name, sizeof d->name, "%s", gf_device_name(dev));
    snprintf(d->plugin, sizeof d->plugin, "%s", gf_device_plugin(dev));
    gf_device_info info;
    if (gf_device_get_info(dev, &info) == GF_OK)
        snprintf(d->driver, sizeof d->driver, "%s", info.driver);
}

static void fill_host(bench_device *d) {
    memset(d, 0, sizeof *d);
    snprintf(d->spec, sizeof d->spec, "host");
    snprintf(d->name, sizeof d->name, "no graft: libraries and loops called directly");
    snprintf(d->plugin, sizeof d->plugin, "-");
    snprintf(d->driver, sizeof d->driver, "%s", bench_host_libraries());
}

static bool is_host_spec(const char *spec) { return spec && !strcmp(spec, "host"); }

static void add_device(bench_run *run, gf_device *dev) {
    for (int i = 0; i < run->n_devices; i++)
        if (run->devices[i].dev == dev) return;
    if (run->n_devices >= BENCH_MAX_DEVICES) return;
    if (dev) fill_device(&run->devices[run->n_devices++], dev);
    else fill_host(&run->devices[run->n_devices++]);
}

static int pick_devices(bench_run *run, const cli *c) {
    gf_device *base = NULL;
    bool base_host = is_host_spec(c->baseline);
    if (c->baseline && !base_host) {
        base = gf_device_find(c->baseline);
        if (!base) {
            fprintf(stderr, "graft-bench: --baseline %s: %s\n", c->baseline, gf_last_error());
            return gf_last_status() == GF_ERR_NOT_FOUND ? -2 : -1;
        }
    } else if (!base_host) {
        for (int i = 0; i < gf_device_count() && !base; i++)
            if (!strcmp(gf_device_type(gf_device_at(i)), "cpu")) base = gf_device_at(i);
    }
    if (c->n_devices == 0) {
        for (int i = 0; i < gf_device_count(); i++)
            add_device(run, gf_device_at(i));
        if (run->n_devices > 0) add_device(run, NULL); /* the host rows last */
    } else {
        for (int i = 0; i < c->n_devices; i++) {
            if (is_host_spec(c->devices[i])) {
                add_device(run, NULL);
                continue;
            }
            gf_device *d = gf_device_find(c->devices[i]);
            if (!d) {
                fprintf(stderr, "graft-bench: --device %s: %s\n", c->devices[i], gf_last_error());
                return gf_last_status() == GF_ERR_NOT_FOUND ? -2 : -1;
            }
            add_device(run, d);
        }
    }
    if (run->n_devices == 0) {
        fprintf(stderr, "graft-bench: no device found (graft-info tells why): %s\n",
                gf_last_error());
        return -1;
    }
    if (!base && !base_host) base = run->devices[0].dev; /* no cpu device: the first one */
    int b = -1;
    for (int i = 0; i < run->n_devices; i++)
        if (run->devices[i].dev == base) b = i;
    if (b < 0) { /* named by --baseline but not by --device: it runs first */
        if (run->n_devices == BENCH_MAX_DEVICES) run->n_devices--;
        memmove(&run->devices[1], &run->devices[0],
                (size_t)run->n_devices * sizeof run->devices[0]);
        run->n_devices++;
        if (base) fill_device(&run->devices[0], base);
        else fill_host(&run->devices[0]);
        b = 0;
    }
    run->baseline = b;
    return 0;
}

/* --profile: stops the profiler and writes DIR/<family>-<device>.json (":" in
 * the device's spec becomes "_"), then prints its summary on stderr. */
static int write_profile(const cli *c, const char *family, const char *spec) {
    gf_profiler_stop();
    char path[1024], dev[64];
    snprintf(dev, sizeof dev, "%s", spec);
    for (char *p = dev; *p; p++)
        if (*p == ':') *p = '_';
    snprintf(path, sizeof path, "%s/%s-%s.json", c->profile, family, dev);
    if (gf_profiler_write(path) != GF_OK) {
        fprintf(stderr, "graft-bench: --profile: %s\n", gf_last_error());
        return -1;
    }
    size_t need = gf_profiler_summary(NULL, 0);
    char *text = malloc(need + 1);
    if (text) {
        gf_profiler_summary(text, need + 1);
        fprintf(stderr, "graft-bench: profile of %s on %s: %s\n%s", family, spec, path, text);
        free(text);
    }
    return 0;
}

/* ------------------------------------------------------------ main */
int main(int argc, char **argv) {
    main_argv = argv;
    if (argc >= 2 && !strcmp(argv[1], "dist")) {
        int rc = bench_dist_command(argc - 2, argv + 2);
        if (rc == 2) usage(stderr, argv[0]);
        return rc;
    }
    if (argc >= 2 && !strcmp(argv[1], "autograd")) {
        int rc = bench_autograd_command(argc - 2, argv + 2);
        if (rc == 2) usage(stderr, argv[0]);
        gf_shutdown();
        return rc;
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout, argv[0]);
            return 0;
        }
    cli c;
    if (parse_cli(argc, argv, &c) != 0 || check_only(c.only) != 0) {
        fprintf(stderr, "usage: %s [options]; %s --help lists them\n", argv[0], argv[0]);
        return 2;
    }
    if (c.list) {
        list_workloads();
        return 0;
    }
    bench_run run = {.opts = c.opts};
    run.opts.progress = !c.no_progress && isatty(STDERR_FILENO);
    bench_setup_threads(&run, c.threads); /* before anything loads a plugin */
    if (c.opts.cold) {
        /* Before any driver is loaded: first runs then compile from source. */
        setenv("GRAFT_OPENCL_CACHE", "0", 1);
        setenv("POCL_KERNEL_CACHE", "0", 1);
    }

    int rc = 1;
    if (gf_init() != GF_OK) {
        fprintf(stderr, "graft-bench: %s\n", gf_last_error());
        goto out;
    }
    int picked = pick_devices(&run, &c);
    if (picked == -2) rc = 77; /* a device named is not here: CTest's skip code */
    if (picked != 0) goto out;
    run.cap_results = run.n_devices * BENCH_MAX_ROWS_PER_DEVICE;
    run.results = calloc((size_t)run.cap_results, sizeof *run.results);
    if (!run.results) {
        fprintf(stderr, "graft-bench: out of memory\n");
        goto out;
    }
    int rc_profile = 0;
    /* The tasks: each selected workload at its size, or each family once
     * per --sizes entry. */
    typedef struct task { const bench_workload *wl; int64_t size; } task;
    task tasks[N_WORKLOADS * BENCH_MAX_SIZES];
    int n_tasks = 0;
    for (int w = 0; w < N_WORKLOADS; w++) {
        const bench_workload *wl = &WORKLOADS[w];
        if (!selected(c.only, wl->family)) continue;
        if (run.opts.n_sizes == 0) {
            tasks[n_tasks++] = (task){wl, run.opts.quick ? wl->quick_size : wl->size};
        } else if (w == 0 || strcmp(WORKLOADS[w - 1].family, wl->family)) {
            for (int k = 0; k < run.opts.n_sizes; k++) tasks[n_tasks++] = (task){wl, run.opts.sizes[k]};
        }
    }
    for (int d = 0; d < run.n_devices; d++)
        for (int t = 0; t < n_tasks; t++)
            run.n_tasks += (run.devices[d].dev ? tasks[t].wl->run : tasks[t].wl->host) != NULL;
    /* Other processes' load skews timings; the outputs say how busy the machine was. */
    double load;
    run.load_start = getloadavg(&load, 1) == 1 ? load : -1;
    /* Device by device, so one device's work does not wait on another's queue. */
    for (int d = 0; d < run.n_devices; d++) {
        gf_device *dev = run.devices[d].dev;
        for (int t = 0; t < n_tasks; t++) {
            const bench_workload *wl = tasks[t].wl;
            void (*fn)(bench_run *, int, int64_t) = dev ? wl->run : wl->host;
            if (!fn) continue;
            char label[48];
            int64_t size = tasks[t].size;
            if (size >= (1 << 20) && size % (1 << 20) == 0)
                snprintf(label, sizeof label, "%s %lldM", wl->family, (long long)(size >> 20));
            else snprintf(label, sizeof label, "%s %lld", wl->family, (long long)size);
            run.task++;
            run.task_device = run.devices[d].spec;
            run.task_name = label;
            bench_progress(&run, NULL);
            int first_row = run.n_results;
            if (dev) gf_fallback_reset_stats(dev);
            if (c.profile && dev) gf_profiler_start(NULL);
            fn(&run, d, size);
            if (c.profile && dev && write_profile(&c, wl->family, run.devices[d].spec) != 0)
                rc_profile = 1;
            gf_fallback_stats fs;
            if (dev && gf_fallback_get_stats(dev, &fs) == GF_OK)
                for (int i = first_row; i < run.n_results; i++) {
                    run.results[i].fallback_ops = fs.ops;
                    run.results[i].fallback_bytes = fs.bytes_to_fallback + fs.bytes_from_fallback;
                }
            /* Hand the cached blocks back, so the devices run one after the
             * other do not hold each other's memory. */
            if (dev) gf_memory_empty_cache(dev);
        }
    }
    bench_progress_clear(&run);
    run.load_end = getloadavg(&load, 1) == 1 ? load : -1;

    if (c.format == OUT_CSV) bench_print_csv(&run, stdout);
    else if (c.format == OUT_JSON) bench_print_json(&run, stdout);
    else bench_print_table(&run, stdout);
    fflush(stdout);
    rc = rc_profile;
    if (c.svg && bench_write_svg(&run, c.svg) != 0) rc = 1;
    int failed = 0;
    for (int i = 0; i < run.n_results; i++) failed += run.results[i].state == BENCH_FAILED;
    if (failed) {
        fprintf(stderr, "graft-bench: %d workload row%s failed (see the notes above)\n", failed,
                failed == 1 ? "" : "s");
        rc = 1;
    }
out:
    free(run.results);
    gf_shutdown();
    return rc;
}
