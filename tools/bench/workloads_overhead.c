/* SPDX-License-Identifier: BSD-3-Clause */
/* workloads_overhead.c — what the library costs per op when the kernel is
 * negligible: chains of ops on 1-element tensors.
 *
 *   dispatch  y = y + one, N times: op dispatch, allocation and the launch
 *             through the plugin, per op;
 *   autograd  y * c and y + d alternately, N ops, with x requiring grad: the
 *             forward with graph recording (per op) and gf_backward through
 *             it (per node). */
#include <math.h>
#include <stdlib.h>

#include "bench.h"

/* ------------------------------------------------------------ dispatch */
typedef struct dispatch_state {
    int ops;
    gf_tensor *x, *one, *y;
} dispatch_state;

static int step_dispatch(void *state) {
    dispatch_state *s = state;
    gf_tensor_release(s->y);
    gf_tensor *y = gf_tensor_retain(s->x);
    for (int i = 0; i < s->ops && y; i++) {
        gf_tensor *ny = gf_add(y, s->one);
        gf_tensor_release(y);
        y = ny;
    }
    s->y = y;
    return y ? 0 : -1;
}

void bench_dispatch(bench_run *run, int device, int64_t ops) {
    char detail[112];
    snprintf(detail, sizeof detail, "chain of %lld gf_add on f32[1], no autograd", (long long)ops);
    bench_result *r = bench_result_add(run, device, "dispatch add", detail);
    if (!r) return;
    r->per = "op";
    gf_device *dev = run->devices[device].dev;
    const int64_t one[1] = {1};
    dispatch_state s = {.ops = (int)ops,
                        .x = gf_zeros(one, 1, GF_F32, dev),
                        .one = gf_ones(one, 1, GF_F32, dev)};
    double got = 0;
    bench_progress(run, "chain");
    if (!s.x || !s.one) {
        bench_result_graft_error(r, "creating the inputs");
    } else if (bench_measure(run, dev, step_dispatch, &s, (double)ops, &r->time) != 0) {
        bench_result_graft_error(r, "the chain");
    } else if (gf_tensor_item(s.y, &got) != GF_OK) {
        bench_result_graft_error(r, "reading the result");
    } else if (got != (double)ops) {
        /* Small integers are exact in f32: N additions of 1 give exactly N. */
        bench_result_wrong(r, "wrong result: the chain gave %.9g, expected %lld", got,
                           (long long)ops);
    }
    gf_tensor_release(s.x);
    gf_tensor_release(s.one);
    gf_tensor_release(s.y);
}

/* ------------------------------------------------------------ autograd */
/* Runs the chain from x; returns the last tensor (a new reference) or NULL.
 * Each intermediate is released as soon as the next exists: in grad mode the
 * graph keeps what backward needs, as it would in a user's program. */
static gf_tensor *run_chain(const bench_chain *ch, gf_tensor *x) {
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

int bench_chain_once(const bench_chain *ch, gf_device *dev, gf_tensor *x, bool check,
                     double *fwd, double *bwd, double *nograd, char *why, size_t why_len) {
    double t0 = bench_now();
    gf_tensor *y = run_chain(ch, x);
    if (!y || gf_device_synchronize(dev) != GF_OK) {
        snprintf(why, why_len, "the recorded forward chain");
        gf_tensor_release(y);
        return -1;
    }
    double t1 = bench_now();
    if (gf_backward(y, NULL, NULL) != GF_OK || gf_device_synchronize(dev) != GF_OK) {
        snprintf(why, why_len, "gf_backward");
        gf_tensor_release(y);
        return -1;
    }
    double t2 = bench_now();
    gf_tensor_release(y);
    if (check) {
        /* d y / d x is the product of the multipliers: 1.0001^ceil(N/2). */
        double want = pow(1.0001, (ch->ops + 1) / 2), got = 0;
        gf_tensor *g = gf_tensor_grad(x);
        if (!g) {
            snprintf(why, why_len, "wrong result: the chain left no gradient in x");
            return -2;
        }
        gf_status s = gf_tensor_item(g, &got);
        gf_tensor_release(g);
        if (s != GF_OK) {
            snprintf(why, why_len, "reading the gradient");
            return -1;
        }
        if (!(fabs(got - want) <= 1e-3 * want)) {
            snprintf(why, why_len, "wrong result: the gradient of the chain is %.7g, expected "
                     "%.7g", got, want);
            return -2;
        }
    }
    if (gf_tensor_set_grad(x, NULL) != GF_OK) {
        snprintf(why, why_len, "gf_tensor_set_grad");
        return -1;
    }

    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    double t3 = bench_now();
    y = run_chain(ch, x);
    int ok = y && gf_device_synchronize(dev) == GF_OK;
    double t4 = bench_now();
    gf_grad_mode_set(prev);
    gf_tensor_release(y);
    if (!ok) {
        snprintf(why, why_len, "the no-grad forward chain");
        return -1;
    }
    *fwd = 1e9 * (t1 - t0) / ch->ops;
    *bwd = 1e9 * (t2 - t1) / ch->ops;
    *nograd = 1e9 * (t4 - t3) / ch->ops;
    return 0;
}

/* Marks both rows from one failure of the chain (rc -1: graft error). */
static void chain_failed(bench_result *rf, bench_result *rb, int rc, const char *why) {
    if (rc == -2) bench_result_wrong(rf, "%s", why);
    else bench_result_graft_error(rf, why);
    rb->state = rf->state;
    snprintf(rb->note, sizeof rb->note, "%s", rf->note);
}

/* Two rows: the recording forward (per op) and backward (per node). */
void bench_autograd(bench_run *run, int device, int64_t ops) {
    char detail[112];
    snprintf(detail, sizeof detail, "chain of %lld gf_mul/gf_add on f32[1], x requires grad",
             (long long)ops);
    bench_result *rf = bench_result_add(run, device, "autograd fwd+record", detail);
    bench_result *rb = bench_result_add(run, device, "autograd backward", detail);
    if (!rf || !rb) return;
    rf->per = "op";
    rb->per = "node";
    gf_device *dev = run->devices[device].dev;
    const int64_t one[1] = {1};
    bench_chain ch = {.ops = (int)ops,
                      .c = gf_full(one, 1, 1.0001, GF_F32, dev),
                      .d = gf_full(one, 1, 1e-4, GF_F32, dev)};
    gf_tensor *x = gf_ones(one, 1, GF_F32, dev);
    double fwd[BENCH_MAX_REPEATS], bwd[BENCH_MAX_REPEATS], ng, total = 0;
    char why[200];
    int n = 0;
    if (!x || !ch.c || !ch.d || gf_tensor_set_requires_grad(x, true) != GF_OK) {
        chain_failed(rf, rb, -1, "creating the inputs");
        goto done;
    }
    bench_progress(run, "chain");
    /* One checked warm-up run at least: the gradient must be right. */
    for (int w = 0; w < (run->opts.warmup > 1 ? run->opts.warmup : 1); w++) {
        int rc = bench_chain_once(&ch, dev, x, w == 0, &fwd[0], &bwd[0], &ng, why, sizeof why);
        if (rc != 0) {
            chain_failed(rf, rb, rc, why);
            goto done;
        }
    }
    int cap = run->opts.max_repeats < BENCH_MAX_REPEATS ? run->opts.max_repeats
                                                        : BENCH_MAX_REPEATS;
    while (n < cap && bench_more_runs(run, n, total)) {
        int rc = bench_chain_once(&ch, dev, x, false, &fwd[n], &bwd[n], &ng, why, sizeof why);
        if (rc != 0) {
            chain_failed(rf, rb, rc, why);
            goto done;
        }
        total += 1e-9 * (fwd[n] + bwd[n] + ng) * (double)ops;
        fwd[n] *= 1e-9; /* back to seconds per op, as every row */
        bwd[n] *= 1e-9;
        n++;
    }
    rf->time = bench_summarise(fwd, n);
    rb->time = bench_summarise(bwd, n);
done:
    gf_tensor_release(x);
    gf_tensor_release(ch.c);
    gf_tensor_release(ch.d);
}
