/* graft-bench — timings of graft workloads on the device GRAFT_DEVICE names.
 *
 *   graft-bench autograd [--ops N] [--repeats R] [--scalar] [--json]
 *
 * autograd: the overhead of recording and running the graph, measured on a
 * chain of N ops (alternately y * c and y + d) on 1-element f32 tensors,
 * where kernel time is negligible and what remains is the library: op
 * dispatch, allocation, node creation, the engine. Each repeat times
 *   - the chain in grad mode (forward + recording), per op;
 *   - gf_backward through it, per recorded node;
 *   - the same chain in no-grad mode (forward alone), per op, for reference;
 * and the tool prints the median, minimum and maximum over the repeats
 * (after one untimed warm-up run).
 *
 * Exit status: 0 on success, 1 on a graft error, 2 for a bad command line. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graft.h"

static void usage(FILE *out, const char *argv0) {
    fprintf(out,
            "usage: %s autograd [--ops N] [--repeats R] [--scalar] [--json]\n"
            "Measures graft on the device GRAFT_DEVICE names (default cpu).\n"
            "\n"
            "  autograd      autograd overhead: a chain of N ops on 1-element f32 tensors\n"
            "                (alternately y * c and y + d), timed forward with recording, through\n"
            "                gf_backward, and forward with grad mode off\n"
            "  --ops N       length of the chain (default 1000)\n"
            "  --repeats R   timed runs; the median, min and max are reported (default 20)\n"
            "  --scalar      use gf_mul_scalar / gf_add_scalar instead of 1-element tensor\n"
            "                operands\n"
            "  --json        print the results as one JSON object\n",
            argv0);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct stats {
    double median, min, max;
} stats;

static stats summarise(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    stats s = {.min = v[0], .max = v[n - 1]};
    s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return s;
}

static void fail(const char *what) {
    fprintf(stderr, "graft-bench: %s failed: %s (%s)\n", what, gf_last_error(),
            gf_status_name(gf_last_status()));
}

/* ------------------------------------------------------------ autograd */
typedef struct chain {
    int ops;
    bool scalar;
    gf_tensor *c, *d; /* the constant operands (no grad) */
} chain;

/* Runs the chain from x; returns the last tensor (a new reference) or NULL.
 * Each intermediate is released as soon as the next exists: in grad mode the
 * graph keeps what backward needs, as it would in a user's program. */
static gf_tensor *run_chain(const chain *ch, gf_tensor *x) {
    gf_tensor *y = gf_tensor_retain(x);
    for (int i = 0; i < ch->ops && y; i++) {
        gf_tensor *ny;
        if (ch->scalar) ny = (i & 1) ? gf_add_scalar(y, 1e-4) : gf_mul_scalar(y, 1.0001);
        else ny = (i & 1) ? gf_add(y, ch->d) : gf_mul(y, ch->c);
        gf_tensor_release(y);
        y = ny;
    }
    return y;
}

/* One timed run: fills the three per-op figures (ns). check: also verify x's gradient. */
static int time_once(const chain *ch, gf_device *dev, gf_tensor *x, bool check, double *fwd,
                     double *bwd, double *nograd) {
    double t0 = now_ns();
    gf_tensor *y = run_chain(ch, x);
    if (!y || gf_device_synchronize(dev) != GF_OK) {
        fail("the recorded forward chain");
        gf_tensor_release(y);
        return -1;
    }
    double t1 = now_ns();
    if (gf_backward(y, NULL, NULL) != GF_OK || gf_device_synchronize(dev) != GF_OK) {
        fail("gf_backward");
        gf_tensor_release(y);
        return -1;
    }
    double t2 = now_ns();
    gf_tensor_release(y);
    if (check) {
        /* d y / d x is the product of the multipliers: 1.0001^ceil(N/2). */
        double want = pow(1.0001, (ch->ops + 1) / 2), got = 0;
        gf_tensor *g = gf_tensor_grad(x);
        gf_status s = g ? gf_tensor_item(g, &got) : GF_ERR_INVALID;
        gf_tensor_release(g);
        if (s != GF_OK || !(fabs(got - want) <= 1e-3 * want)) {
            fprintf(stderr, "graft-bench: wrong gradient from the chain: %.7g, expected %.7g\n",
                    got, want);
            return -1;
        }
    }
    if (gf_tensor_set_grad(x, NULL) != GF_OK) {
        fail("gf_tensor_set_grad");
        return -1;
    }

    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    double t3 = now_ns();
    y = run_chain(ch, x);
    int ok = y && gf_device_synchronize(dev) == GF_OK;
    double t4 = now_ns();
    gf_grad_mode_set(prev);
    gf_tensor_release(y);
    if (!ok) {
        fail("the no-grad forward chain");
        return -1;
    }
    *fwd = (t1 - t0) / ch->ops;
    *bwd = (t2 - t1) / ch->ops;
    *nograd = (t4 - t3) / ch->ops;
    return 0;
}

static void print_stats_json(const char *name, stats s, bool last) {
    printf("  \"%s\": {\"median\": %.1f, \"min\": %.1f, \"max\": %.1f}%s\n", name, s.median, s.min,
           s.max, last ? "" : ",");
}

static int bench_autograd(int argc, char **argv) {
    int ops = 1000, repeats = 20;
    bool json = false, scalar = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--scalar")) {
            scalar = true;
        } else if ((!strcmp(a, "--ops") || !strcmp(a, "--repeats")) && i + 1 < argc) {
            char *end;
            errno = 0;
            long v = strtol(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || v < 1 || v > 10000000) {
                fprintf(stderr, "graft-bench: %s needs a whole number from 1 to 10000000, not "
                        "'%s'\n", a, argv[i]);
                return 2;
            }
            if (a[2] == 'o') ops = (int)v;
            else repeats = (int)v;
        } else {
            fprintf(stderr, "graft-bench: autograd: unknown option or missing value: %s\n", a);
            return 2;
        }
    }

    int rc = 1;
    chain ch = {.ops = ops, .scalar = scalar};
    gf_tensor *x = NULL;
    double *fwd = calloc((size_t)repeats, sizeof *fwd);
    double *bwd = calloc((size_t)repeats, sizeof *bwd);
    double *ng = calloc((size_t)repeats, sizeof *ng);
    gf_device *dev = gf_device_default();
    if (!fwd || !bwd || !ng) {
        fprintf(stderr, "graft-bench: out of memory\n");
        goto done;
    }
    if (!dev) {
        fail("gf_device_default");
        goto done;
    }
    const int64_t one[1] = {1};
    x = gf_ones(one, 1, GF_F32, dev);
    ch.c = gf_full(one, 1, 1.0001, GF_F32, dev);
    ch.d = gf_full(one, 1, 1e-4, GF_F32, dev);
    if (!x || !ch.c || !ch.d || gf_tensor_set_requires_grad(x, true) != GF_OK) {
        fail("creating the inputs");
        goto done;
    }
    double w0, w1, w2;
    /* Warm-up (caches, allocator), which also checks the result is right. */
    if (time_once(&ch, dev, x, true, &w0, &w1, &w2) != 0) goto done;
    for (int r = 0; r < repeats; r++)
        if (time_once(&ch, dev, x, false, &fwd[r], &bwd[r], &ng[r]) != 0) goto done;
    stats sf = summarise(fwd, repeats), sb = summarise(bwd, repeats), sn = summarise(ng, repeats);
    const char *form =
        scalar ? "gf_mul_scalar/gf_add_scalar" : "gf_mul/gf_add with a 1-element tensor";
    if (json) {
        printf("{\n  \"benchmark\": \"autograd\",\n  \"device\": \"%s\",\n"
               "  \"device_name\": \"%s\",\n"
               "  \"plugin\": \"%s\",\n  \"ops\": %d,\n  \"repeats\": %d,\n  \"form\": \"%s\",\n",
               gf_device_spec(dev), gf_device_name(dev), gf_device_plugin(dev), ops, repeats,
               scalar ? "scalar" : "tensor");
        print_stats_json("forward_record_ns_per_op", sf, false);
        print_stats_json("backward_ns_per_node", sb, false);
        print_stats_json("forward_no_grad_ns_per_op", sn, true);
        printf("}\n");
    } else {
        printf("graft-bench autograd on %s (%s, plugin %s)\n", gf_device_spec(dev),
               gf_device_name(dev), gf_device_plugin(dev));
        printf("chain of %d ops (%s) on f32[1], %d repeats\n\n", ops, form, repeats);
        printf("%-28s %10s %10s %10s\n", "", "median", "min", "max");
        const char *row = "%-28s %10.1f %10.1f %10.1f\n";
        printf(row, "forward + record (ns/op)", sf.median, sf.min, sf.max);
        printf(row, "backward (ns/node)", sb.median, sb.min, sb.max);
        printf(row, "forward, no grad (ns/op)", sn.median, sn.min, sn.max);
    }
    rc = 0;
done:
    gf_tensor_release(x);
    gf_tensor_release(ch.c);
    gf_tensor_release(ch.d);
    free(fwd);
    free(bwd);
    free(ng);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr, argv[0]);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout, argv[0]);
        return 0;
    }
    int rc;
    if (!strcmp(argv[1], "autograd")) {
        rc = bench_autograd(argc - 2, argv + 2);
    } else {
        fprintf(stderr, "graft-bench: unknown workload '%s'\n", argv[1]);
        usage(stderr, argv[0]);
        return 2;
    }
    if (rc == 2) usage(stderr, argv[0]);
    gf_shutdown();
    return rc;
}
