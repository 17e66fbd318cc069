/* SPDX-License-Identifier: BSD-3-Clause */
/* autograd_cmd.c — `graft-bench autograd`: the autograd-overhead workload
 * alone, on the device GRAFT_DEVICE names, with its own options and a JSON
 * form that bench_autograd_torch.py reads to compare with PyTorch.
 *
 * Each repeat times, on a chain of N ops (alternately y * c and y + d) on
 * 1-element f32 tensors:
 *   - the chain in grad mode (forward + recording), per op;
 *   - gf_backward through it, per recorded node;
 *   - the same chain in no-grad mode (forward alone), per op, for reference;
 * and the median, minimum and maximum over the repeats are printed (after
 * one untimed warm-up run, which also checks the gradient). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void fail(const char *what) {
    fprintf(stderr, "graft-bench: %s failed: %s (%s)\n", what, gf_last_error(),
            gf_status_name(gf_last_status()));
}

static void print_stats_json(const char *name, bench_stats s, bool last) {
    printf("  \"%s\": {\"median\": %.1f, \"min\": %.1f, \"max\": %.1f}%s\n", name, s.median, s.min,
           s.max, last ? "" : ",");
}

/* Returns 0, 1 on a graft error, 2 for a bad command line. */
int bench_autograd_command(int argc, char **argv) {
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
    bench_chain ch = {.ops = ops, .scalar = scalar};
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
    char why[200];
    /* Warm-up (caches, allocator), which also checks the result is right. */
    int crc = bench_chain_once(&ch, dev, x, true, &w0, &w1, &w2, why, sizeof why);
    for (int r = 0; r < repeats && crc == 0; r++)
        crc = bench_chain_once(&ch, dev, x, false, &fwd[r], &bwd[r], &ng[r], why, sizeof why);
    if (crc == -2) fprintf(stderr, "graft-bench: %s\n", why);
    if (crc == -1) fail(why);
    if (crc != 0) goto done;
    bench_stats sf = bench_summarise(fwd, repeats), sb = bench_summarise(bwd, repeats);
    bench_stats sn = bench_summarise(ng, repeats);
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
