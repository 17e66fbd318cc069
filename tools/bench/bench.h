/* SPDX-License-Identifier: BSD-3-Clause */
/* bench.h — graft-bench's shared types: options, devices, results, and the
 * interfaces between its parts.
 *
 *   main.c               command line, threads, devices, the run loop
 *   measure.c            clock, statistics, the repeat policy, progress line
 *   workloads_ops.c      matmul, elementwise, reductions, softmax, conv2d,
 *                        batch_norm, layer_norm, max_pool2d
 *   workloads_train.c    MLP and CNN training steps
 *   workloads_overhead.c per-op dispatch and autograd overhead
 *   workloads_fwad.c     forward against reverse mode: jacfwd and jacrev,
 *                        Hessian-vector products by forward-over-reverse
 *                        and by double backward
 *   workloads_graph.c    eager against captured and replayed (graft/graph.h)
 *   workloads_direct.c   the "host" rows: oneDNN and plain C loops called
 *                        directly (no graft), and the CPU's FMA peak
 *   variants.c           a plugin's own variants of a workload (Vulkan's
 *                        matmul shaders, OpenCL's GEMMs), forced through
 *                        gf_device_query_extension
 *   autograd_cmd.c       `graft-bench autograd`, the single-workload mode
 *   dist_cmd.c           `graft-bench dist`, under mpirun (with libgraft-dist)
 *   output_text.c        terminal table, CSV, JSON
 *   output_svg.c         the bar chart
 *
 * Every workload runs on one device at a time and appends one or more result
 * rows; a row's name ("matmul 1024") is the same on every device, so rows of
 * one name are compared with the baseline device's row of that name. A row
 * may carry a variant ("shader naive", "oneDNN direct"): another way of
 * doing the same work on that device, compared with the same baseline row.
 * The pseudo-device "host" (no gf_device) holds the rows of libraries and
 * loops called directly, the baselines graft itself is measured against. */
#ifndef GRAFT_BENCH_H
#define GRAFT_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "graft.h"

#define BENCH_MAX_DEVICES 16
#define BENCH_MAX_ROWS_PER_DEVICE 160
#define BENCH_MAX_REPEATS 1000 /* bound of --max-repeats */

#define BENCH_MAX_SIZES 8

typedef struct bench_opts {
    bool quick;       /* smaller shapes, fewer runs: a smoke test */
    int64_t sizes[BENCH_MAX_SIZES]; /* --sizes: replace each family's sizes */
    int n_sizes;
    int warmup;       /* untimed runs before the timed ones */
    int min_repeats;  /* timed runs, at least */
    int max_repeats;  /* timed runs, at most */
    double min_time;  /* seconds: repeat until this much was timed (within the bounds) */
    bool progress;    /* progress line on stderr */
    bool cold;        /* --cold: kernel caches off */
    bool no_variants; /* --no-variants: graft's own choice only */
} bench_opts;

/* Figures over the timed runs, in seconds per unit (see bench_result.per). */
typedef struct bench_stats {
    double median, min, max, q1, q3;
    int runs;
    double first;  /* the first warm-up run, 0 without one (compiles, first touches) */
    double cpu;    /* median process CPU time per run (every thread), 0 when not measured */
    double faults; /* minor page faults per timed run (memory touched fresh) */
} bench_stats;

typedef enum bench_state {
    BENCH_OK = 0,
    BENCH_NA = 1,    /* the device lacks an op or a dtype: not a failure */
    BENCH_FAILED = 2 /* a graft error, or a result that fails its check */
} bench_state;

typedef struct bench_result {
    char name[40];      /* the row's name, the same on every device */
    char variant[40];   /* "" for graft's own choice; else how this row differs */
    char detail[112];   /* shapes and dtype */
    int device;         /* index into bench_run.devices */
    bench_state state;
    char note[400];     /* why n/a or failed */
    const char *per;    /* one timed unit: "run", "op", "node", "step" */
    bench_stats time;   /* seconds per unit */
    double work;        /* per unit, in rate_unit's base (flop, byte, sample); 0 = no rate */
    const char *rate_unit; /* "GFLOP/s", "GB/s", "samples/s", or NULL */
    bool has_transfer;
    bench_stats h2d, d2h; /* seconds: inputs host -> device, output device -> host */
    double h2d_bytes, d2h_bytes;
    /* Ops of the workload (all its runs, warm-up included) that ran on the
     * fallback device, and the bytes copied each way for them. */
    uint64_t fallback_ops, fallback_bytes;
    /* Share of the CPU's FMA peak (the "peak" row) this row's GFLOP/s is
     * measured against: 1 for f32, 0.5 for f64, 0 for rows without one. */
    double peak_share;
    /* bf16 rows: their share of the "peak bf16" row (vdpbf16ps) instead,
     * where the CPU has one. */
    bool peak_bf16;
    /* Replay rows: the launches of the captured graph that the plugin fused,
     * into how many runs (has_fused: the plugin counts them). */
    bool has_fused;
    uint64_t fused_runs, fused_launches;
    /* Training rows: the loss at the first and the last step. */
    bool has_loss;
    double loss_first, loss_last;
    /* Training rows: the floating-point operations of one step (the matmuls
     * and convolutions, forward and backward: what the FMA peak bounds),
     * 0 when not counted. */
    double step_flops;
} bench_result;

typedef struct bench_device {
    gf_device *dev; /* NULL for "host": libraries called directly */
    char spec[32];
    char name[128];
    char plugin[64];
    char driver[128];
} bench_device;

typedef struct bench_run {
    bench_opts opts;
    bench_device devices[BENCH_MAX_DEVICES];
    int n_devices;
    int baseline; /* index into devices */
    bench_result *results;
    int n_results, cap_results;
    char threads[512]; /* what the thread settings were, for the outputs */
    int cpus_online;
    int openmp_threads; /* omp_get_max_threads() after --threads; 0 without OpenMP */
    double load_start, load_end; /* 1-minute load average, -1 when unknown */
    /* progress line */
    int task, n_tasks;
    const char *task_device, *task_name, *task_phase;
    bool progress_shown;
} bench_run;

/* ---- measure.c */
double bench_now(void); /* seconds, monotonic */
/* Sorts v[0..n) and summarises it (n >= 1). */
bench_stats bench_summarise(double *v, int n);
/* A step of a timed workload: 0 on success, -1 with the graft error set. */
typedef int (*bench_step_fn)(void *state);
/* Runs step opts.warmup times untimed, then timed (each run ends with
 * gf_device_synchronize) as the repeat policy says; each time is divided by
 * units. Returns 0, or -1 with the graft error set. */
int bench_measure(bench_run *run, gf_device *dev, bench_step_fn step, void *state, double units,
                  bench_stats *out);
/* The repeat policy, for workloads that time several phases per run. */
bool bench_more_runs(const bench_run *run, int done, double timed_seconds);
/* The progress line (no-op unless run->opts.progress): what the current task
 * is doing (NULL: just starting); bench_measure adds the run number. */
void bench_progress(bench_run *run, const char *what);
void bench_progress_clear(bench_run *run);

/* ---- results (main.c) */
/* A new row for the device, named and described; NULL when the table is full. */
bench_result *bench_result_add(bench_run *run, int device, const char *name, const char *detail);
/* A row of another variant of the workload of r (same device, name, detail,
 * work and units), or NULL when the table is full. */
bench_result *bench_result_variant(bench_run *run, const bench_result *r, const char *variant);
/* Marks r n/a or failed from the pending graft error, prefixed with what. */
void bench_result_graft_error(bench_result *r, const char *what);
/* Marks r failed: its result did not pass the check. */
void bench_result_wrong(bench_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The baseline's row of r's name (its default variant), or NULL. */
const bench_result *bench_baseline_of(const bench_run *run, const bench_result *r);
/* The speed ratio baseline time / r's time (> 1: r is faster), or 0 when
 * there is none. */
double bench_ratio(const bench_run *run, const bench_result *r);

/* ---- deterministic inputs, computable on the host (workloads_ops.c) */
/* A value in [lo, hi) from the index i and a salt: the same on every run. */
float bench_value(uint64_t i, uint32_t salt, float lo, float hi);
float *bench_host_values(int64_t n, uint32_t salt, float lo, float hi);

/* ---- a plugin's variants of a workload (variants.c) */
typedef struct bench_variant {
    char label[40];
    void *ext;                         /* the extension's table */
    void (*select)(void *ext, int on); /* on: force this variant; 0: back to the default */
    int mode;
} bench_variant;
/* The variants the device's plugin offers for the family, through
 * gf_device_query_extension; returns how many (at most max). */
int bench_variants(gf_device *dev, const char *family, bench_variant *out, int max);
void bench_variant_select(const bench_variant *v, bool on);

/* ---- the host rows (workloads_direct.c); device is the host pseudo-device.
 * Each appends nothing when this build lacks the library it calls. */
void bench_host_matmul(bench_run *run, int device, int64_t n);   /* oneDNN's primitive */
void bench_host_matmul64(bench_run *run, int device, int64_t n); /* i-k-j loop, OpenMP */
void bench_host_add(bench_run *run, int device, int64_t n);      /* C loops: 1 thread, OpenMP */
void bench_host_mul(bench_run *run, int device, int64_t n);
void bench_host_exp(bench_run *run, int device, int64_t n);
void bench_peak(bench_run *run, int device, int64_t iters);      /* FMA loop, every thread */
/* What the host rows call, for the header ("oneDNN 3.0.0, OpenMP 4.5"). */
const char *bench_host_libraries(void);
/* The host row "peak" (GFLOP/s of the FMA loop), 0 when not measured. */
double bench_peak_gflops(const bench_run *run);

/* ---- workloads. quick selects the small shapes. Each appends its rows. */
typedef struct bench_workload {
    const char *family; /* for --only */
    void (*run)(bench_run *run, int device, int64_t size);  /* on a graft device; may be NULL */
    int64_t size, quick_size;
    void (*host)(bench_run *run, int device, int64_t size); /* on "host"; may be NULL */
} bench_workload;

void bench_matmul(bench_run *run, int device, int64_t n);
void bench_matmul64(bench_run *run, int device, int64_t n);
void bench_matmul_bf16(bench_run *run, int device, int64_t n); /* bf16 in and out, f32 sums */
void bench_conv2d_bf16(bench_run *run, int device, int64_t batch); /* bf16 in and out */
/* The mlp and cnn steps with the forward and the loss under
 * gf_autocast_begin(<the device's type>, GF_BF16) (f32 master weights). */
void bench_mlp_step_bf16(bench_run *run, int device, int64_t batch);
void bench_cnn_step_bf16(bench_run *run, int device, int64_t batch);
void bench_cmatmul(bench_run *run, int device, int64_t n); /* c64, real-flop rated */
void bench_cmul(bench_run *run, int device, int64_t n);    /* c64 gf_mul */
/* workloads_fft.c: c64 fft of n points, rfft of [n, n] f32, stft of n samples */
void bench_fft(bench_run *run, int device, int64_t n);
void bench_fft_rows(bench_run *run, int device, int64_t n);
void bench_rfft(bench_run *run, int device, int64_t n);
void bench_stft(bench_run *run, int device, int64_t n);
void bench_add(bench_run *run, int device, int64_t n);
void bench_permute_heads(bench_run *run, int device, int64_t n);
void bench_permute_rows(bench_run *run, int device, int64_t n);
void bench_transpose(bench_run *run, int device, int64_t n);
void bench_mul(bench_run *run, int device, int64_t n);
void bench_exp(bench_run *run, int device, int64_t n);
void bench_sum_lastdim(bench_run *run, int device, int64_t side);
void bench_sum_all(bench_run *run, int device, int64_t side);
void bench_softmax(bench_run *run, int device, int64_t rows);
void bench_conv2d(bench_run *run, int device, int64_t batch);
void bench_conv2d_bwd(bench_run *run, int device, int64_t batch);
void bench_batch_norm(bench_run *run, int device, int64_t batch);
void bench_layer_norm(bench_run *run, int device, int64_t rows);
void bench_max_pool2d(bench_run *run, int device, int64_t batch);
void bench_dispatch(bench_run *run, int device, int64_t ops);
void bench_autograd(bench_run *run, int device, int64_t ops);
void bench_hvp(bench_run *run, int device, int64_t batch); /* two rows: the two ways */
/* jacfwd and jacrev (batched, looped; jacrev chunked too): 4->n, n->4 */
void bench_jacobians(bench_run *run, int device, int64_t n);
void bench_graph_add(bench_run *run, int device, int64_t ops);      /* workloads_graph.c */
void bench_graph_autograd(bench_run *run, int device, int64_t ops);
void bench_graph_chain(bench_run *run, int device, int64_t n); /* f32[n], 8 ops */
/* Ends a capture on dev (GRAFT_ONEDNN_FUSE / _VULKAN_FUSE / _OPENCL_FUSE = 0 around
 * it when !fuse) and notes in r (may be NULL) the launches the plugin fused. */
gf_graph *bench_capture_end(gf_device *dev, bool fuse, bench_result *r);
/* The plugin's totals of fused runs and the launches they cover, when it
 * counts them (variants.c). */
bool bench_fused_counts(gf_device *dev, uint64_t *runs, uint64_t *launches);
void bench_mlp_step(bench_run *run, int device, int64_t batch);
void bench_cnn_step(bench_run *run, int device, int64_t batch);
void bench_lstm_step(bench_run *run, int device, int64_t batch);
void bench_gru_step(bench_run *run, int device, int64_t batch);
void bench_encoder_step(bench_run *run, int device, int64_t batch);
/* Data-parallel training steps (graft-bench dist): when set, the training
 * workloads call attach once with their parameters, sync after each
 * backward (before the update), detach at the end. attach and sync return 0,
 * or -1 with the graft error set. */
typedef struct bench_train_dist {
    int (*attach)(gf_tensor *const *params, int n, void *user);
    int (*sync)(void *user);
    void (*detach)(void *user);
    void *user;
} bench_train_dist;
extern const bench_train_dist *bench_train_dist_active;

/* ---- the autograd chain, shared with `graft-bench autograd` (workloads_overhead.c) */
typedef struct bench_chain {
    int ops;
    bool scalar;
    gf_tensor *c, *d; /* the constant operands (no grad) */
} bench_chain;
/* One run of the chain from x (f32[1], requires grad): times the forward
 * with recording, gf_backward, and the forward in no-grad mode, in ns per op.
 * check: also verify x's gradient. Returns 0; -1 on a graft error (why
 * names the stage); -2 when the gradient is wrong (why says how). */
int bench_chain_once(const bench_chain *ch, gf_device *dev, gf_tensor *x, bool check,
                     double *fwd, double *bwd, double *nograd, char *why, size_t why_len);
int bench_autograd_command(int argc, char **argv); /* autograd_cmd.c */
int bench_dist_command(int argc, char **argv);     /* dist_cmd.c */
/* Sets the thread variables of --threads (threads > 0), restarting the
 * process when they differ (OpenMP reads its variable at start, main.c), and
 * describes them into run->threads. Call it before anything else. */
void bench_setup_threads(bench_run *run, long threads);

/* ---- outputs */
void bench_print_table(const bench_run *run, FILE *out);
void bench_print_csv(const bench_run *run, FILE *out);
void bench_print_json(const bench_run *run, FILE *out);
/* 0, or -1 with a message on stderr. */
int bench_write_svg(const bench_run *run, const char *path);
/* Formats seconds with a unit that keeps 3-4 significant digits ("12.3 ms"). */
const char *bench_fmt_time(double seconds, char *buf, size_t len);

#endif
