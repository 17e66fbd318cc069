/* SPDX-License-Identifier: BSD-3-Clause */
/* workloads_graph.c — eager against captured and replayed (graft/graph.h).
 *
 * Each workload gives a row timed eagerly and its "graph replay" variant:
 * the same work captured once (gf_graph_capture_begin .. _end) and replayed
 * with gf_graph_replay, which calls the plugin's launch for each recorded
 * op and nothing else.
 *
 *   graph add     y = y + one, N times on f32[1] (the "dispatch add" chain):
 *                 per op;
 *   graph autograd  y * c and y + d alternately, N ops, then gf_backward,
 *                 on f32[1] with x requiring grad: per forward op (the
 *                 backward's nodes included in the time).
 *   graph chain   x * w + z, |.|, -, exp, * x, - z, * w: eight elementwise
 *                 ops on f32[N] (the ops' own outputs, no autograd): per
 *                 chain (family graph_chain, so that --sizes reaches it).
 * Each also has the variant "replay unfused": the graph captured with
 * GRAFT_ONEDNN_FUSE=0, GRAFT_VULKAN_FUSE=0 and GRAFT_OPENCL_FUSE=0, so that
 * the cpu_onednn, vulkan and opencl plugins run each launch on its own
 * instead of fusing runs of elementwise launches (the other plugins have no
 * fusion: there the two replay rows are the same work).
 * The training rows (mlp, cnn) add their replay variant in workloads_train.c. */
#define _GNU_SOURCE /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* ------------------------------------------------------------ add chain */
typedef struct add_state {
    int ops;
    gf_tensor *x, *one, *y;
    gf_graph *g;
} add_state;

static int step_add(void *state) {
    add_state *s = state;
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

static int step_replay(void *state) {
    gf_graph **g = state;
    return gf_graph_replay(*g) == GF_OK ? 0 : -1;
}

/* The plugins' switches for fusing runs of elementwise launches. */
static const char *const fuse_vars[] = {"GRAFT_ONEDNN_FUSE", "GRAFT_VULKAN_FUSE",
                                        "GRAFT_OPENCL_FUSE"};
#define N_FUSE_VARS (sizeof fuse_vars / sizeof fuse_vars[0])

gf_graph *bench_capture_end(gf_device *dev, bool fuse, bench_result *r) {
    uint64_t runs0, launches0, runs1, launches1;
    bool counted = bench_fused_counts(dev, &runs0, &launches0);
    char *saved[N_FUSE_VARS];
    for (size_t i = 0; i < N_FUSE_VARS; i++) {
        const char *was = getenv(fuse_vars[i]);
        saved[i] = was ? strdup(was) : NULL;
        if (!fuse) setenv(fuse_vars[i], "0", 1);
    }
    gf_graph *g = gf_graph_capture_end();
    for (size_t i = 0; i < N_FUSE_VARS; i++) {
        if (saved[i]) setenv(fuse_vars[i], saved[i], 1);
        else unsetenv(fuse_vars[i]);
        free(saved[i]);
    }
    if (r && counted && bench_fused_counts(dev, &runs1, &launches1)) {
        r->has_fused = true;
        r->fused_runs = runs1 - runs0;
        r->fused_launches = launches1 - launches0;
    }
    return g;
}

/* Captures step(state) on dev; NULL with the graft error set. */
static gf_graph *capture(gf_device *dev, bench_step_fn step, void *state, bool fuse,
                         bench_result *r) {
    if (gf_graph_capture_begin(dev) != GF_OK) return NULL;
    int rc = step(state);
    gf_graph *g = bench_capture_end(dev, fuse, r);
    if (rc != 0 && g) {
        gf_graph_destroy(g);
        return NULL;
    }
    return g;
}

static void check_sum(bench_result *r, const gf_tensor *y, double want) {
    double got = 0;
    if (gf_tensor_item(y, &got) != GF_OK) bench_result_graft_error(r, "reading the result");
    else if (got != want)
        bench_result_wrong(r, "wrong result: the chain gave %.9g, expected %.9g", got, want);
}

void bench_graph_add(bench_run *run, int device, int64_t ops) {
    char detail[112];
    snprintf(detail, sizeof detail, "chain of %lld gf_add on f32[1], no autograd", (long long)ops);
    bench_result *r = bench_result_add(run, device, "graph add", detail);
    bench_result *rv = r ? bench_result_variant(run, r, "graph replay") : NULL;
    bench_result *ru = rv ? bench_result_variant(run, r, "replay unfused") : NULL;
    if (!r || !rv || !ru) return;
    r->per = rv->per = ru->per = "op";
    gf_device *dev = run->devices[device].dev;
    const int64_t one[1] = {1};
    add_state s = {.ops = (int)ops,
                   .x = gf_zeros(one, 1, GF_F32, dev),
                   .one = gf_ones(one, 1, GF_F32, dev)};
    bench_progress(run, "eager chain");
    if (!s.x || !s.one) {
        bench_result_graft_error(r, "creating the inputs");
        bench_result_graft_error(rv, "creating the inputs");
        bench_result_graft_error(ru, "creating the inputs");
        goto done;
    }
    if (bench_measure(run, dev, step_add, &s, (double)ops, &r->time) != 0)
        bench_result_graft_error(r, "the chain");
    else check_sum(r, s.y, (double)ops);
    for (int fuse = 0; fuse < 2; fuse++) {
        bench_result *v = fuse ? rv : ru;
        bench_progress(run, "capture");
        gf_graph_destroy(s.g);
        s.g = capture(dev, step_add, &s, fuse, v);
        if (!s.g) {
            bench_result_graft_error(v, "capturing the chain");
            goto done;
        }
        bench_progress(run, "replays");
        if (bench_measure(run, dev, step_replay, &s.g, (double)ops, &v->time) != 0)
            bench_result_graft_error(v, "replaying the chain");
        else check_sum(v, s.y, (double)ops); /* each replay starts again from x */
    }
done:
    gf_graph_destroy(s.g);
    gf_tensor_release(s.x);
    gf_tensor_release(s.one);
    gf_tensor_release(s.y);
}

/* ------------------------------------------------------------ autograd chain */
typedef struct ag_state {
    int ops;
    gf_tensor *x, *c, *d, *grad;
    gf_graph *g;
} ag_state;

static int step_ag(void *state) {
    ag_state *s = state;
    if (s->grad && gf_zero_(s->grad) != GF_OK) return -1;
    gf_tensor *y = gf_tensor_retain(s->x);
    for (int i = 0; i < s->ops && y; i++) {
        gf_tensor *ny = (i & 1) ? gf_add(y, s->d) : gf_mul(y, s->c);
        gf_tensor_release(y);
        y = ny;
    }
    gf_status st = y ? gf_backward(y, NULL, NULL) : gf_last_status();
    gf_tensor_release(y);
    return st == GF_OK ? 0 : -1;
}

static void check_grad(bench_result *r, const ag_state *s) {
    double want = pow(1.0001, (s->ops + 1) / 2), got = 0;
    if (gf_tensor_item(s->grad, &got) != GF_OK) bench_result_graft_error(r, "reading the gradient");
    else if (!(fabs(got - want) <= 1e-3 * want))
        bench_result_wrong(r, "wrong result: the gradient of the chain is %.7g, expected %.7g",
                           got, want);
}

void bench_graph_autograd(bench_run *run, int device, int64_t ops) {
    char detail[112];
    snprintf(detail, sizeof detail, "chain of %lld gf_mul/gf_add on f32[1] + gf_backward",
             (long long)ops);
    bench_result *r = bench_result_add(run, device, "graph autograd", detail);
    bench_result *rv = r ? bench_result_variant(run, r, "graph replay") : NULL;
    bench_result *ru = rv ? bench_result_variant(run, r, "replay unfused") : NULL;
    if (!r || !rv || !ru) return;
    r->per = rv->per = ru->per = "op";
    gf_device *dev = run->devices[device].dev;
    const int64_t one[1] = {1};
    ag_state s = {.ops = (int)ops,
                  .x = gf_ones(one, 1, GF_F32, dev),
                  .c = gf_full(one, 1, 1.0001, GF_F32, dev),
                  .d = gf_full(one, 1, 1e-4, GF_F32, dev)};
    if (!s.x || !s.c || !s.d || gf_tensor_set_requires_grad(s.x, true) != GF_OK ||
        step_ag(&s) != 0 || !(s.grad = gf_tensor_grad(s.x))) {
        bench_result_graft_error(r, "creating the inputs");
        bench_result_graft_error(rv, "creating the inputs");
        bench_result_graft_error(ru, "creating the inputs");
        goto done;
    }
    bench_progress(run, "eager chain");
    if (bench_measure(run, dev, step_ag, &s, (double)ops, &r->time) != 0)
        bench_result_graft_error(r, "the chain");
    else check_grad(r, &s);
    for (int fuse = 0; fuse < 2; fuse++) {
        bench_result *v = fuse ? rv : ru;
        bench_progress(run, "capture");
        gf_graph_destroy(s.g);
        s.g = capture(dev, step_ag, &s, fuse, v);
        if (!s.g) {
            bench_result_graft_error(v, "capturing the chain");
            goto done;
        }
        bench_progress(run, "replays");
        if (bench_measure(run, dev, step_replay, &s.g, (double)ops, &v->time) != 0)
            bench_result_graft_error(v, "replaying the chain");
        else check_grad(v, &s);
    }
done:
    gf_graph_destroy(s.g);
    gf_tensor_release(s.grad);
    gf_tensor_release(s.x);
    gf_tensor_release(s.c);
    gf_tensor_release(s.d);
}

/* ------------------------------------------------------------ elementwise chain */
typedef struct chain_state {
    gf_tensor *x, *w, *z, *y;
    gf_graph *g;
} chain_state;

static int step_chain(void *state) {
    chain_state *s = state;
    gf_tensor_release(s->y);
    gf_tensor *a = gf_mul(s->x, s->w), *b = gf_add(a, s->z), *c = gf_abs(b), *d = gf_neg(c),
              *e = gf_exp(d), *f = gf_mul(e, s->x), *h = gf_sub(f, s->z);
    s->y = gf_mul(h, s->w);
    gf_tensor *t[7] = {a, b, c, d, e, f, h};
    for (int i = 0; i < 7; i++) gf_tensor_release(t[i]);
    return s->y ? 0 : -1;
}

/* y's sum against the host's f64 evaluation of the same chain. */
static void check_chain(bench_result *r, const chain_state *s, int64_t n) {
    float *y = malloc(sizeof(float) * (size_t)n);
    if (!y || gf_tensor_to_host(s->y, y, sizeof(float) * (size_t)n) != GF_OK) {
        bench_result_graft_error(r, "reading the result");
        free(y);
        return;
    }
    double got = 0, want = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = bench_value((uint64_t)i, 1, -2, 2), w = bench_value((uint64_t)i, 2, -2, 2),
               z = bench_value((uint64_t)i, 3, -2, 2);
        got += y[i];
        want += (exp(-fabs(x * w + z)) * x - z) * w;
    }
    free(y);
    if (!(fabs(got - want) <= 1e-4 * (double)n))
        bench_result_wrong(r, "wrong result: the chain's sum is %.9g, expected %.9g", got, want);
}

void bench_graph_chain(bench_run *run, int device, int64_t n) {
    char detail[112];
    snprintf(detail, sizeof detail, "8 elementwise ops on f32[%lld] (x*w+z, |.|, -, exp, ...)",
             (long long)n);
    bench_result *r = bench_result_add(run, device, "graph chain", detail);
    bench_result *rv = r ? bench_result_variant(run, r, "graph replay") : NULL;
    bench_result *ru = rv ? bench_result_variant(run, r, "replay unfused") : NULL;
    if (!r || !rv || !ru) return;
    r->per = rv->per = ru->per = "run";
    gf_device *dev = run->devices[device].dev;
    chain_state s = {0};
    float *v[3] = {NULL, NULL, NULL};
    gf_tensor **t[3] = {&s.x, &s.w, &s.z};
    for (int k = 0; k < 3; k++) {
        v[k] = bench_host_values(n, (uint32_t)k + 1, -2, 2);
        *t[k] = v[k] ? gf_from_data(v[k], &n, 1, GF_F32, dev) : NULL;
        free(v[k]);
    }
    bench_progress(run, "eager chain");
    if (!s.x || !s.w || !s.z) {
        bench_result_graft_error(r, "creating the inputs");
        bench_result_graft_error(rv, "creating the inputs");
        bench_result_graft_error(ru, "creating the inputs");
        goto done;
    }
    if (bench_measure(run, dev, step_chain, &s, 1, &r->time) != 0)
        bench_result_graft_error(r, "the chain");
    else check_chain(r, &s, n);
    for (int fuse = 0; fuse < 2; fuse++) {
        bench_result *vr = fuse ? rv : ru;
        bench_progress(run, "capture");
        gf_graph_destroy(s.g);
        s.g = capture(dev, step_chain, &s, fuse, vr);
        if (!s.g) {
            bench_result_graft_error(vr, "capturing the chain");
            goto done;
        }
        bench_progress(run, "replays");
        if (bench_measure(run, dev, step_replay, &s.g, 1, &vr->time) != 0)
            bench_result_graft_error(vr, "replaying the chain");
        else check_chain(vr, &s, n);
    }
done:
    gf_graph_destroy(s.g);
    gf_tensor_release(s.x);
    gf_tensor_release(s.w);
    gf_tensor_release(s.z);
    gf_tensor_release(s.y);
}
