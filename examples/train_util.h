/* SPDX-License-Identifier: BSD-3-Clause */
/* train_util.h — what the training examples share (header-only): their
 * command line, the device, the training loop (shuffled mini-batches, a
 * cross-entropy step each), predictions and accuracy, the progress display
 * and the end of a run. Each example keeps its data, its model and its main
 * flow; a model enters the loop through its forward function.
 * Include it after defining _POSIX_C_SOURCE >= 200809L (clock_gettime, isatty).
 *
 * Progress: on a terminal, one line per epoch is redrawn in place as batches
 * finish,
 *   epoch   3/30 [##########....................]   10/30  loss 0.4812  5120 img/s
 * and replaced by the epoch's summary line when it ends. When stdout is not
 * a terminal (a log file, CTest), nothing is drawn: only the summary lines
 * are printed, so logs stay one line per epoch.
 *
 * TRAIN_LOSS_LOG=<file> appends every batch's loss to that file with nine
 * significant digits (one "epoch batch loss" line each), which the tests use
 * to compare runs on two devices. At the end, a run on a device from which
 * ops fell back to another device says so (graft/device.h, fallback).
 *
 * Data parallel (--ddp, when graft was built with libgraft-dist): launched
 * by mpirun, every rank trains a replica on its shard of each global batch
 * (gf_dist_shard_indices: rank r takes every world-th example of a shuffled
 * order; --batch is the GLOBAL batch, split evenly), gf_ddp averages the
 * gradients before each step, and only rank 0 prints. The global batches
 * are those of a one-rank run with --ddp, so the accuracy is the same. */
#ifndef GRAFT_EXAMPLES_TRAIN_UTIL_H
#define GRAFT_EXAMPLES_TRAIN_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "graft.h"
#ifdef GRAFT_EXAMPLES_DIST
#include "graft/dist.h"
#endif

#if defined(__GNUC__)
#define TRAIN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TRAIN_PRINTF(a, b)
#endif

/* The data-parallel state of the run (--ddp); world 1 otherwise. */
typedef struct train_dist_state {
    bool on;
    int rank, world;
    uint64_t seed;
#ifdef GRAFT_EXAMPLES_DIST
    gf_ddp *ddp;
#endif
} train_dist_state;
static train_dist_state train_dist = {.world = 1};

/* ------------------------------------------------------------ progress */
#define PROGRESS_WIDTH 30

typedef struct progress {
    bool tty;   /* stdout is a terminal: draw the bar */
    bool drawn; /* a bar is on the current line */
    int epochs;
} progress;

static inline void progress_init(progress *p, int epochs) {
    /* mpirun hands every rank a terminal whatever its own output is: no bar
     * with --ddp. */
    p->tty = isatty(STDOUT_FILENO) == 1 && !train_dist.on;
    p->drawn = false;
    p->epochs = epochs;
}

/* Redraws the bar after `done` of `total` batches of `epoch`; loss is the
 * running mean so far, rate the examples per second so far. */
static inline void progress_update(progress *p, int epoch, int done, int total, double loss,
                                   double rate) {
    if (!p->tty || total <= 0) return;
    int fill = (int)((long long)done * PROGRESS_WIDTH / total);
    char bar[PROGRESS_WIDTH + 1];
    for (int i = 0; i < PROGRESS_WIDTH; i++) bar[i] = i < fill ? '#' : '.';
    bar[PROGRESS_WIDTH] = '\0';
    /* \r goes back to column 0; \033[K clears what a longer line left. */
    printf("\repoch %3d/%d [%s] %4d/%d  loss %.4f  %.0f img/s\033[K", epoch, p->epochs, bar,
           done, total, loss, rate);
    fflush(stdout);
    p->drawn = true;
}

/* Prints a whole line (printf format; the newline is added) over the bar if
 * one is drawn. */
static inline void progress_line(progress *p, const char *fmt, ...) TRAIN_PRINTF(2, 3);
static inline void progress_line(progress *p, const char *fmt, ...) {
    if (p->drawn) printf("\r\033[K");
    p->drawn = false;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* Ends a bar left on screen, before an error message goes to stderr. */
static inline void progress_abort(progress *p) {
    if (p->drawn) putchar('\n');
    p->drawn = false;
    fflush(stdout);
}

/* ------------------------------------------------------------ helpers */

/* A permutation of 0..n-1 on dev (Fisher-Yates driven by graft's generator,
 * so a seed gives the same order on every device). perm and u are scratch
 * arrays of n entries. Returns a new reference, NULL on error. */
static inline gf_tensor *shuffled_index(gf_device *dev, int64_t *perm, float *u, int n) {
    gf_tensor *r = gf_rand((const int64_t[]){n}, 1, GF_F32, dev);
    gf_status s = r ? gf_tensor_to_host(r, u, (size_t)n * sizeof *u) : gf_last_status();
    gf_tensor_release(r);
    if (s != GF_OK) return NULL;
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(u[i] * (float)(i + 1));
        if (j > i) j = i; /* u may round up to 1.0 in f32 */
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    return gf_from_data(perm, (const int64_t[]){n}, 1, GF_I64, dev);
}

static inline double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Parses the whole of s as a number in [lo, hi]; -1 otherwise. */
static inline int parse_num(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ command line */
typedef struct train_options {
    int epochs;
    int batch;
    double lr;
    uint64_t seed;
    double min_accuracy; /* < 0: not checked */
    bool ddp;            /* --ddp: data parallel over the ranks of mpirun */
} train_options;

/* A program's own options: called with an option and its value; returns 1
 * when it took them, 0 when the option is not one of its own, -1 for a bad
 * value (the parser then says so). */
typedef int (*train_extra_fn)(const char *opt, const char *val, void *ctx);

/* Parses --epochs N, --batch B (at most max_batch), --lr X, --seed S and
 * --min-accuracy A into o, which holds the defaults on entry, and hands
 * every other option with its value to extra (may be NULL). Returns -1 to
 * go on; otherwise the program's exit status: 0 after --help (or -h), with
 * usage on stdout; 2 for a bad command line, said on stderr with the usage.
 * prog is the program's name in messages. */
static inline int train_parse_args(int argc, char **argv, const char *prog, int max_batch,
                                   void (*usage)(FILE *out, const char *argv0),
                                   train_options *o, train_extra_fn extra, void *ctx) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout, argv[0]);
            return 0;
        }
        if (!strcmp(a, "--ddp")) {
#ifdef GRAFT_EXAMPLES_DIST
            o->ddp = true;
            continue;
#else
            fprintf(stderr, "%s: --ddp needs graft's MPI library (libgraft-dist), which this "
                    "build lacks: install Open MPI (libopenmpi-dev) and reconfigure\n", prog);
            return 2;
#endif
        }
        double v;
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: unknown option or missing value: %s\n", prog, a);
            usage(stderr, argv[0]);
            return 2;
        }
        const char *val = argv[++i];
        int took = 0;
        if (!strcmp(a, "--epochs") && !parse_num(val, 1, 100000, &v)) o->epochs = (int)v;
        else if (!strcmp(a, "--batch") && !parse_num(val, 1, max_batch, &v)) o->batch = (int)v;
        else if (!strcmp(a, "--lr") && !parse_num(val, 1e-12, 10, &v)) o->lr = v;
        else if (!strcmp(a, "--seed") && !parse_num(val, 0, 9007199254740992.0, &v))
            o->seed = (uint64_t)v;
        else if (!strcmp(a, "--min-accuracy") && !parse_num(val, 0, 1, &v)) o->min_accuracy = v;
        else if (!extra || (took = extra(a, val, ctx)) != 1) {
            if (took == 0 && strncmp(a, "--", 2) == 0 && strcmp(a, "--epochs") &&
                strcmp(a, "--batch") && strcmp(a, "--lr") && strcmp(a, "--seed") &&
                strcmp(a, "--min-accuracy"))
                fprintf(stderr, "%s: unknown option %s\n", prog, a);
            else
                fprintf(stderr, "%s: bad option %s %s\n", prog, a, val);
            usage(stderr, argv[0]);
            return 2;
        }
    }
    return -1;
}

/* ------------------------------------------------------------ a run */

/* The device GRAFT_DEVICE names (default cpu), announced on stdout; NULL on
 * error. */
static inline gf_device *train_device(void) {
    gf_device *dev = gf_device_default();
    if (dev)
        printf("device %s (%s), plugin %s\n", gf_device_spec(dev), gf_device_name(dev),
               gf_device_plugin(dev));
    return dev;
}

/* train_device, and with --ddp: joins the MPI job first, silences stdout on
 * every rank but 0, and takes the rank's device (gf_dist_device). */
static inline gf_device *train_device_for(const train_options *o) {
    if (!o->ddp) return train_device();
    gf_device *dev = NULL;
#ifdef GRAFT_EXAMPLES_DIST
    if (o->ddp) {
        if (gf_dist_init(NULL, NULL) != GF_OK) return NULL;
        train_dist.on = true;
        train_dist.rank = gf_dist_rank();
        train_dist.world = gf_dist_world_size();
        train_dist.seed = o->seed;
        if (train_dist.rank != 0 && !freopen("/dev/null", "w", stdout)) return NULL;
        if (o->batch % train_dist.world) {
            fprintf(stderr, "train: --batch %d is the global batch: it must split evenly "
                    "over the %d ranks\n", o->batch, train_dist.world);
            gf_set_error(GF_ERR_INVALID, "batch does not split over the ranks");
            return NULL;
        }
        dev = gf_dist_device(NULL);
        if (dev)
            printf("data parallel: %d rank(s), global batch %d = %d per rank\n",
                   train_dist.world, o->batch, o->batch / train_dist.world);
    }
#endif
    if (dev)
        printf("device %s (%s), plugin %s\n", gf_device_spec(dev), gf_device_name(dev),
               gf_device_plugin(dev));
    return dev;
}

/* With --ddp: keeps the gradients of params equal on every rank (and
 * starts every replica from rank 0's values). */
static inline gf_status train_ddp_create(gf_tensor *const *params, int n) {
#ifdef GRAFT_EXAMPLES_DIST
    if (train_dist.on) {
        train_dist.ddp = gf_ddp_create(params, n, NULL);
        if (!train_dist.ddp) return gf_last_status();
    }
#endif
    return GF_OK;
}

/* Reports the pending graft error: `what` failed, with graft's message. */
static inline void train_error(progress *p, const char *prog, const char *what) {
    progress_abort(p);
    fprintf(stderr, "%s: %s failed: %s (%s)\n", prog, what, gf_last_error(),
            gf_status_name(gf_last_status()));
}

/* Reports the pending graft error and fails: when cond is false, says so
 * (train_error) and jumps to the `fail` label of the function. Uses the
 * program's TRAIN_PROG (its name) and its progress display `bar`. */
#define TRY(cond)                                    \
    do {                                             \
        if (!(cond)) {                               \
            train_error(&bar, TRAIN_PROG, #cond);    \
            goto fail;                               \
        }                                            \
    } while (0)

/* A model's forward pass: the logits [N, classes] of the inputs x [N, ...].
 * Intermediates belong to the caller's scope. */
typedef gf_tensor *(*train_forward_fn)(const void *model, const gf_tensor *x);

/* Appends one loss to the file TRAIN_LOSS_LOG names, if any. */
static inline void train_log_loss(int epoch, int batch, double loss) {
    const char *path = getenv("TRAIN_LOSS_LOG");
    if (!path || !*path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "%d %d %.9g\n", epoch, batch, loss);
    fclose(f);
}

/* What the training loop works on. */
typedef struct train_loop {
    gf_device *dev;         /* where the model computes */
    const gf_tensor *x, *y; /* inputs and their classes (i64), n along dim 0: on dev, or
                             * on another device (the host) that keeps a data set too
                             * big for dev; each batch is then copied to dev */
    int n, batch;
    train_forward_fn forward;
    const void *model;
    gf_optimizer *opt;  /* over the model's parameters */
    int64_t *perm;      /* scratch: n entries */
    float *u;           /* scratch: n entries */
    progress *bar;
} train_loop;

/* One epoch: the n examples in a fresh shuffled order, in mini-batches
 * gathered with gf_index_select (on the data's device, then copied to
 * t->dev), a cross-entropy step on each. The bar follows the batches;
 * *mean_loss is the mean of their losses. */
static inline gf_status train_epoch(const train_loop *t, int epoch, double *mean_loss) {
    double t0 = now_seconds();
    gf_device *data_dev = gf_tensor_device(t->x);
    gf_tensor *order = NULL;
    int n = t->n, batch = t->batch;
#ifdef GRAFT_EXAMPLES_DIST
    if (train_dist.on) { /* this rank's shard, in the epoch's shared order */
        int64_t count = 0;
        gf_status s = gf_dist_shard_indices(t->n, train_dist.seed, epoch, true, false,
                                            train_dist.rank, train_dist.world, t->perm, t->n,
                                            &count);
        if (s != GF_OK) return s;
        n = (int)count;
        batch = t->batch / train_dist.world;
        order = gf_from_data(t->perm, (const int64_t[]){n}, 1, GF_I64, data_dev);
    }
#endif
    if (!train_dist.on) order = shuffled_index(data_dev, t->perm, t->u, t->n);
    if (!order) return gf_last_status();
    int n_batches = (n + batch - 1) / batch, batches = 0, seen = 0;
    double loss_sum = 0;
    gf_status s = GF_OK;
    for (int start = 0; start < n && s == GF_OK; start += batch) {
        int len = n - start < batch ? n - start : batch;
        /* Every tensor made in the step is released by gf_scope_end;
         * gradients live on in the parameters' .grad. */
        gf_scope_begin();
        gf_tensor *idx = gf_narrow(order, 0, start, len);
        gf_tensor *xb = gf_to_device(gf_index_select(t->x, 0, idx), t->dev);
        gf_tensor *yb = gf_to_device(gf_index_select(t->y, 0, idx), t->dev);
        gf_tensor *loss =
            gf_cross_entropy(t->forward(t->model, xb), yb, NULL, GF_REDUCTION_MEAN, -100, 0.0);
        double lv = 0;
        s = loss ? GF_OK : gf_last_status();
        if (s == GF_OK) s = gf_optimizer_zero_grad(t->opt);
        if (s == GF_OK) s = gf_backward(loss, NULL, NULL);
#ifdef GRAFT_EXAMPLES_DIST
        /* The mean gradient of the global batch, before the step. */
        if (s == GF_OK && train_dist.ddp) s = gf_ddp_wait(train_dist.ddp);
#endif
        if (s == GF_OK) s = gf_optimizer_step(t->opt);
        if (s == GF_OK) s = gf_tensor_item(loss, &lv);
        gf_scope_end();
        if (s != GF_OK) break;
        loss_sum += lv;
        batches++;
        train_log_loss(epoch, batches, lv);
        seen += len;
        progress_update(t->bar, epoch, batches, n_batches, loss_sum / batches,
                        seen / (now_seconds() - t0 + 1e-9));
    }
    gf_tensor_release(order);
    *mean_loss = batches ? loss_sum / batches : 0;
#ifdef GRAFT_EXAMPLES_DIST
    if (s == GF_OK && train_dist.on) { /* the mean over ranks, for the display */
        gf_tensor *l = gf_scalar(*mean_loss, GF_F32, t->dev);
        s = l ? gf_dist_all_reduce(l, GF_REDUCE_MEAN) : gf_last_status();
        if (s == GF_OK) s = gf_tensor_item(l, mean_loss);
        gf_tensor_release(l);
    }
#endif
    return s;
}

/* The predicted classes (argmax of the logits) of the n inputs of x from
 * `first` on, to pred; no gradients are recorded. */
static inline gf_status train_predict(train_forward_fn forward, const void *model,
                                      const gf_tensor *x, int first, int n, int64_t *pred) {
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_scope_begin();
    gf_tensor *cls = gf_argmax(forward(model, gf_narrow(x, 0, first, n)), 1, false);
    gf_status s = cls ? gf_tensor_to_host(cls, pred, (size_t)n * sizeof *pred) : gf_last_status();
    gf_scope_end();
    gf_grad_mode_set(prev);
    return s;
}

/* The fraction of the n predictions equal to labels; per class too, into
 * per_class[n_classes], when per_class is not NULL. */
static inline double train_accuracy(const int64_t *pred, const int64_t *labels, int n,
                                    int n_classes, double *per_class) {
    int hit = 0;
    for (int i = 0; i < n; i++) hit += pred[i] == labels[i];
    for (int k = 0; per_class && k < n_classes; k++) {
        int hit_k = 0, n_k = 0;
        for (int i = 0; i < n; i++) {
            if (labels[i] != k) continue;
            n_k++;
            hit_k += pred[i] == k;
        }
        per_class[k] = n_k ? (double)hit_k / n_k : 0;
    }
    return n ? (double)hit / n : 0;
}

/* 1 after saying so when acc is below min (min < 0: not checked), else 0. */
static inline int train_check_accuracy(const char *prog, const char *what, double acc,
                                       double min) {
    if (min < 0 || acc >= min) return 0;
    fprintf(stderr, "%s: %s %.4f is below the required %.4f\n", prog, what, acc, min);
    return 1;
}

/* Shuts graft down once every tensor is released: rc, or 1 when graft
 * refuses (a tensor leaked). */
static inline int train_shutdown(const char *prog, int rc) {
#ifdef GRAFT_EXAMPLES_DIST
    gf_ddp_destroy(train_dist.ddp); /* it holds the parameters */
    train_dist.ddp = NULL;
#endif
    gf_device *dev = gf_device_default();
    gf_fallback_stats fs;
    if (dev && gf_fallback_get_stats(dev, &fs) == GF_OK && fs.ops) {
        printf("fallback: %llu ops of %d kinds ran on another device (%.3f s; %llu bytes "
               "there, %llu back):\n", (unsigned long long)fs.ops, fs.distinct_ops, fs.seconds,
               (unsigned long long)fs.bytes_to_fallback, (unsigned long long)fs.bytes_from_fallback);
        for (int i = 0; i < gf_fallback_op_count(dev); i++) {
            gf_fallback_op_info oi;
            if (gf_fallback_get_op(dev, i, &oi) == GF_OK)
                printf("  %-22s %-28s on %-8s %8llu calls (%s)\n", oi.op, oi.signature,
                       oi.fallback, (unsigned long long)oi.calls, oi.reason);
        }
    }
    gf_clear_error();
    if (gf_shutdown() != GF_OK && rc == 0) {
        fprintf(stderr, "%s: gf_shutdown failed: %s\n", prog, gf_last_error());
        rc = 1;
    }
#ifdef GRAFT_EXAMPLES_DIST
    if (train_dist.on && gf_dist_finalize() != GF_OK && rc == 0) {
        fprintf(stderr, "%s: gf_dist_finalize failed: %s\n", prog, gf_last_error());
        rc = 1;
    }
#endif
    return rc;
}

#endif
