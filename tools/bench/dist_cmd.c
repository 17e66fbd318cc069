/* SPDX-License-Identifier: BSD-3-Clause */
/* dist_cmd.c — `graft-bench dist`: data parallel over MPI, run by mpirun.
 *
 *   mpirun -np 1 graft-bench dist      one rank: the baseline
 *   mpirun -np 2 graft-bench dist      two ranks
 *
 * On the device each rank gets (gf_dist_device: GRAFT_DEVICE, default cpu):
 *   - the MLP and CNN training steps of graft-bench (workloads_train.c) with
 *     a GLOBAL batch of 256 (MLP) and 64 (CNN) split evenly over the ranks,
 *     gradients averaged by gf_ddp between backward and the Adam update;
 *     throughput = global batch / median step time. Compare the samples/s of
 *     the W-rank run with the one-rank run: scaling efficiency =
 *     throughput(W) / (W * throughput(1)). Every rank trains on the same
 *     host-made batch: the timing, not the data, is the point;
 *   - gf_dist_all_reduce (sum, f32) against MPI_Allreduce called directly on
 *     a host buffer of the same size, 4 KiB to 64 MiB: median times, the
 *     algorithm bandwidth (bytes / time) and graft's share of MPI's speed.
 *     A timed run is a barrier (the ranks start together) and 10 calls; the
 *     ratio is MPI's time over graft's (1: as fast as MPI itself).
 * --quick: smaller models and batches (32 and 8), 3 buffer sizes, 1 warm-up.
 * The repeats are a fixed number (--repeats, default 20 after 3 warm-ups):
 * every rank must run the same collectives. Rank 0 prints, with the load
 * average at the start and at the end (other processes skew timings).
 * --threads N sets the plugins' thread variables as graft-bench's option
 * (restarting the process before MPI_Init when they differ). */
#define _DEFAULT_SOURCE /* getloadavg */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifndef GRAFT_BENCH_DIST
int bench_dist_command(int argc, char **argv) {
    fprintf(stderr, "graft-bench: dist needs libgraft-dist, which this build lacks (configure "
            "with MPI: install libopenmpi-dev and openmpi-bin)\n");
    return 1;
}
#else
#include <mpi.h>

#include "graft/dist.h"

typedef struct ddp_state {
    gf_ddp *ddp;
} ddp_state;

static int ddp_attach(gf_tensor *const *params, int n, void *user) {
    ddp_state *st = user;
    st->ddp = gf_ddp_create(params, n, NULL);
    return st->ddp ? 0 : -1;
}
static int ddp_sync(void *user) {
    ddp_state *st = user;
    return gf_ddp_wait(st->ddp) == GF_OK ? 0 : -1;
}
static void ddp_detach(void *user) {
    ddp_state *st = user;
    gf_ddp_destroy(st->ddp);
    st->ddp = NULL;
}

typedef struct ar_state {
    gf_tensor *t;
    float *host;
    int64_t n;
} ar_state;

/* One timed run: a barrier (so the ranks start together), then AR_BATCH
 * calls back to back; the time is divided by AR_BATCH. Both sides do the
 * same, so the comparison is like for like. */
#define AR_BATCH 10
static int step_graft(void *user) {
    ar_state *s = user;
    if (gf_dist_barrier() != GF_OK) return -1;
    for (int i = 0; i < AR_BATCH; i++)
        if (gf_dist_all_reduce(s->t, GF_REDUCE_SUM) != GF_OK) return -1;
    return 0;
}
static int step_mpi(void *user) {
    ar_state *s = user;
    if (gf_dist_barrier() != GF_OK) return -1;
    for (int i = 0; i < AR_BATCH; i++)
        if (MPI_Allreduce(MPI_IN_PLACE, s->host, (int)s->n, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD) != MPI_SUCCESS) {
            gf_set_error(GF_ERR_PLUGIN, "MPI_Allreduce failed");
            return -1;
        }
    return 0;
}

static void fail(const char *what) {
    fprintf(stderr, "graft-bench dist: %s failed: %s (%s)\n", what, gf_last_error(),
            gf_status_name(gf_last_status()));
}

int bench_dist_command(int argc, char **argv) {
    long repeats = 20, threads = 0;
    bool quick = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quick")) {
            quick = true;
        } else if ((!strcmp(a, "--repeats") || !strcmp(a, "--threads")) && i + 1 < argc) {
            char *end;
            errno = 0;
            long v = strtol(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || v < 1 || v > 10000) {
                fprintf(stderr, "graft-bench: %s needs a whole number from 1 to 10000, not "
                        "'%s'\n", a, argv[i]);
                return 2;
            }
            if (a[2] == 'r') repeats = v;
            else threads = v;
        } else {
            fprintf(stderr, "graft-bench: dist: unknown option or missing value: %s\n", a);
            return 2;
        }
    }
    bench_run run = {.opts = {.quick = quick, .warmup = quick ? 1 : 3, .min_repeats = (int)repeats,
                              .max_repeats = (int)repeats, .min_time = 0}};
    bench_setup_threads(&run, threads); /* before a plugin loads */
    if (gf_dist_init(NULL, NULL) != GF_OK) {
        fail("gf_dist_init");
        return 1;
    }
    int rank = gf_dist_rank(), world = gf_dist_world_size(), rc = 1;
    double load0 = -1, load1 = -1;
    getloadavg(&load0, 1);
    gf_device *dev = gf_dist_device(NULL);
    if (!dev) {
        fail("gf_dist_device");
        goto out;
    }
    run.n_devices = 1;
    run.devices[0].dev = dev;
    snprintf(run.devices[0].spec, sizeof run.devices[0].spec, "%s", gf_device_spec(dev));
    run.cap_results = 8;
    run.results = calloc((size_t)run.cap_results, sizeof *run.results);
    if (!run.results) goto out;
    if (rank == 0) {
        printf("graft-bench dist: %d rank(s) on %s (%s, plugin %s); %s\n", world,
               gf_device_spec(dev), gf_device_name(dev), gf_device_plugin(dev), run.threads);
        printf("%ld timed runs after %d warm-ups, medians\n\n", repeats, run.opts.warmup);
    }

    /* ---- training steps */
    ddp_state st = {0};
    const bench_train_dist hooks = {ddp_attach, ddp_sync, ddp_detach, &st};
    bench_train_dist_active = &hooks;
    /* --quick (a smoke test): small batches too. */
    const int64_t global[2] = {quick ? 32 : 256, quick ? 8 : 64};
    if (global[0] % world || global[1] % world) {
        if (rank == 0)
            fprintf(stderr, "graft-bench dist: the ranks must divide the global batches %lld "
                    "and %lld\n", (long long)global[0], (long long)global[1]);
        goto out;
    }
    bench_mlp_step(&run, 0, global[0] / world);
    bench_cnn_step(&run, 0, global[1] / world);
    bench_train_dist_active = NULL;
    /* cpu: rank 0's process CPU time per step (every thread of it). */
    if (rank == 0)
        printf("%-16s %-62s %10s %12s %18s\n", "step", "per rank", "median", "samples/s",
               "cpu (x wall)");
    for (int i = 0; i < run.n_results; i++) {
        const bench_result *r = &run.results[i];
        char tb[32], cb[32], cpu[48];
        if (r->state != BENCH_OK) {
            if (rank == 0) printf("%-16s failed: %s\n", r->name, r->note);
            goto out;
        }
        snprintf(cpu, sizeof cpu, "%s (%.2fx)", bench_fmt_time(r->time.cpu, cb, sizeof cb),
                 r->time.median > 0 ? r->time.cpu / r->time.median : 0.0);
        if (rank == 0)
            printf("%-16s %-62s %10s %12.1f %18s\n", r->name, r->detail,
                   bench_fmt_time(r->time.median, tb, sizeof tb),
                   (double)global[i] / r->time.median, cpu);
    }

    /* ---- all_reduce: graft against MPI */
    if (world > 1) {
        if (rank == 0)
            printf("\n%-10s %12s %12s %10s %10s %8s\n", "all_reduce", "graft", "MPI",
                   "graft MB/s", "MPI MB/s", "ratio");
        const int64_t kib[] = {4, 64, 1024, 16384, 65536};
        int n_sizes = quick ? 3 : 5;
        for (int k = 0; k < n_sizes; k++) {
            ar_state a = {.n = kib[k] * 1024 / 4};
            a.t = gf_ones(&a.n, 1, GF_F32, dev);
            a.host = calloc((size_t)a.n, sizeof(float));
            bench_stats sg, sm;
            int bad = !a.t || !a.host;
            if (!bad) bad = bench_measure(&run, dev, step_graft, &a, AR_BATCH, &sg) != 0;
            if (!bad) bad = bench_measure(&run, dev, step_mpi, &a, AR_BATCH, &sm) != 0;
            gf_tensor_release(a.t);
            free(a.host);
            if (bad) {
                fail("all_reduce");
                goto out;
            }
            double bytes = (double)a.n * 4;
            if (rank == 0) {
                char t1[32], t2[32], sz[32];
                if (kib[k] >= 1024) snprintf(sz, sizeof sz, "%lld MiB", (long long)kib[k] / 1024);
                else snprintf(sz, sizeof sz, "%lld KiB", (long long)kib[k]);
                printf("%-10s %12s %12s %10.1f %10.1f %8.2f\n", sz,
                       bench_fmt_time(sg.median, t1, sizeof t1),
                       bench_fmt_time(sm.median, t2, sizeof t2), bytes / sg.median / 1e6,
                       bytes / sm.median / 1e6, sm.median / sg.median);
            }
        }
    }
    getloadavg(&load1, 1);
    if (rank == 0) printf("\nload average (1 min): %.2f at the start, %.2f at the end\n", load0,
                          load1);
    rc = 0;
out:
    bench_train_dist_active = NULL;
    free(run.results);
    gf_shutdown();
    if (gf_dist_finalize() != GF_OK && rc == 0) {
        fail("gf_dist_finalize");
        rc = 1;
    }
    return rc;
}
#endif
