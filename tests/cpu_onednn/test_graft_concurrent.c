/* SPDX-License-Identifier: BSD-3-Clause */
/* test_graft_concurrent.c — the cpu_onednn plugin runs a captured graph's
 * small launches side by side (omp_graph_par.c); a replay must still equal
 * the eager ops bit for bit.
 *
 * The graph: eight independent branches (a matmul, a softmax, GELU, a
 * layer norm, a column sum: launches of the plugin's own loops and of
 * oneDNN primitives, each on one thread eagerly), every branch then folding
 * its sum into one accumulator in place (acc = acc * 0.5 + s, an order the
 * result depends on), and a chain of in-place ops on one input. Captured on
 * one set of inputs; replayed (the first replay is the plugin's probe, the
 * later ones share the cores) on new values written in place; the same ops
 * run eagerly on a copy of those values. Every output and every input must
 * have the eager bits after each replay, and the plugin's counters must
 * show units run inside shared regions, some of them by a helper thread.
 *
 * Also: GRAFT_ONEDNN_CONCURRENT=0 shares nothing; a unit failing on a
 * helper thread (GRAFT_ONEDNN_FAULT=helper) fails the replay with its own
 * message, on the caller's thread, and leaves graft usable. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_xd.h"
#include <graft/graph.h>

#define BRANCHES 8
#define ROWS 64
#define COLS 48
#define REPLAYS 6

static gf_device *dev;

typedef struct io {
    gf_tensor *a[BRANCHES], *w[BRANCHES], *acc, *chain; /* inputs */
    gf_tensor *y[BRANCHES];                             /* outputs */
} io;

static uint64_t counter(const char *name) {
    void *fn = NULL;
    if (gf_device_query_extension(dev, name, &fn) != GF_OK || !fn) return UINT64_MAX;
    uint64_t (*c)(void);
    memcpy(&c, &fn, sizeof c);
    return c();
}

static int device_threads(void) {
    const char *name = gf_device_name(dev);
    const char *at = name ? strstr(name, "oneDNN, ") : NULL;
    return at ? atoi(at + 8) : 0;
}

static void fill(gf_tensor *t, unsigned seed) {
    int64_t n = gf_tensor_numel(t);
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)(sin(0.37 * (double)i + 1.7 * seed) * cos(0.013 * (double)i * (seed + 1)));
    CHECK(gf_tensor_from_host(t, v, sizeof(float) * (size_t)n) == GF_OK);
    free(v);
}

static void make_inputs(io *x, unsigned seed) {
    const int64_t as[2] = {ROWS, COLS}, ws[2] = {COLS, COLS}, cs[1] = {COLS};
    for (int b = 0; b < BRANCHES; b++) {
        if (!x->a[b]) x->a[b] = gf_zeros(as, 2, GF_F32, dev);
        if (!x->w[b]) x->w[b] = gf_zeros(ws, 2, GF_F32, dev);
        fill(x->a[b], seed * 31u + (unsigned)b);
        fill(x->w[b], seed * 37u + (unsigned)b + 100u);
    }
    if (!x->acc) x->acc = gf_zeros(cs, 1, GF_F32, dev);
    if (!x->chain) x->chain = gf_zeros(as, 2, GF_F32, dev);
    fill(x->acc, seed + 200u);
    fill(x->chain, seed + 300u);
}

/* The ops: outputs into x->y (new references), inputs updated in place. */
static void build(io *x) {
    const int dim0[1] = {0};
    for (int b = 0; b < BRANCHES; b++) {
        gf_tensor *m = gf_matmul(x->a[b], x->w[b]), *s = gf_softmax(m, 1), *g = gf_gelu(m, false),
                  *t = gf_add(s, g);
        x->y[b] = gf_layer_norm(t, 1, NULL, NULL, 1e-5, NULL, NULL);
        gf_tensor *c = gf_sum(x->y[b], dim0, 1, false);
        CHECK(gf_mul_scalar_(x->acc, 0.5) == GF_OK);
        CHECK(gf_add_(x->acc, c) == GF_OK);
        gf_tensor *r[5] = {m, s, g, t, c};
        for (int i = 0; i < 5; i++) gf_tensor_release(r[i]);
        /* the chain: in place, in an order its values depend on */
        CHECK(gf_add_(x->chain, x->a[b]) == GF_OK);
        CHECK(gf_mul_scalar_(x->chain, 0.75) == GF_OK);
    }
}

static void release_io(io *x) {
    for (int b = 0; b < BRANCHES; b++) {
        gf_tensor_release(x->a[b]);
        gf_tensor_release(x->w[b]);
        gf_tensor_release(x->y[b]);
    }
    gf_tensor_release(x->acc);
    gf_tensor_release(x->chain);
    memset(x, 0, sizeof *x);
}

static int64_t differing(const gf_tensor *a, const gf_tensor *b) {
    int64_t n = gf_tensor_numel(a);
    if (n != gf_tensor_numel(b)) return -1;
    float *va = malloc(sizeof(float) * (size_t)n), *vb = malloc(sizeof(float) * (size_t)n);
    int64_t bad = -1;
    if (gf_tensor_to_host(a, va, sizeof(float) * (size_t)n) == GF_OK &&
        gf_tensor_to_host(b, vb, sizeof(float) * (size_t)n) == GF_OK) {
        bad = 0;
        for (int64_t i = 0; i < n; i++) bad += memcmp(&va[i], &vb[i], sizeof(float)) != 0;
    }
    free(va);
    free(vb);
    return bad;
}

static void compare(const io *g, const io *e, int replay) {
    for (int b = 0; b < BRANCHES; b++)
        CHECK_MSG(differing(g->y[b], e->y[b]) == 0, "replay %d: output %d differs from eager",
                  replay, b);
    CHECK_MSG(differing(g->acc, e->acc) == 0, "replay %d: the accumulator differs", replay);
    CHECK_MSG(differing(g->chain, e->chain) == 0, "replay %d: the in-place chain differs",
              replay);
}

/* Captures the graph on seed 1, then replays it REPLAYS times on seeds 2, 3,
 * ..., each against the eager ops on the same values. */
static void run_replays(void) {
    io g = {0}, e = {0};
    make_inputs(&g, 1);
    CHECK(gf_graph_capture_begin(dev) == GF_OK);
    build(&g);
    gf_graph *graph = gf_graph_capture_end();
    CHECK_MSG(graph != NULL, "capture: %s", gf_last_error());
    for (int r = 0; graph && r < REPLAYS; r++) {
        make_inputs(&g, 2u + (unsigned)r);
        make_inputs(&e, 2u + (unsigned)r);
        CHECK_MSG(gf_graph_replay(graph) == GF_OK, "replay %d: %s", r, gf_last_error());
        for (int b = 0; b < BRANCHES; b++) gf_tensor_release(e.y[b]);
        build(&e);
        compare(&g, &e, r);
    }
    gf_graph_destroy(graph);
    release_io(&g);
    release_io(&e);
}

static void test_shared(void) {
    unsetenv("GRAFT_ONEDNN_CONCURRENT");
    setenv("GRAFT_ONEDNN_CONCURRENT", "1", 1);
    uint64_t shared0 = counter("cpu_onednn.shared_units");
    uint64_t helper0 = counter("cpu_onednn.helper_units");
    CHECK(shared0 != UINT64_MAX && helper0 != UINT64_MAX);
    run_replays();
    uint64_t shared = counter("cpu_onednn.shared_units") - shared0;
    uint64_t helper = counter("cpu_onednn.helper_units") - helper0;
    printf("  %d thread(s): %llu units run side by side, %llu of them by a helper thread\n",
           device_threads(), (unsigned long long)shared, (unsigned long long)helper);
    if (device_threads() >= 2) {
        CHECK_MSG(shared > 0, "no unit ran in a shared region on %d threads", device_threads());
        CHECK_MSG(helper > 0, "no unit ran on a helper thread in %d replays", REPLAYS);
    } else {
        CHECK_MSG(shared == 0, "one thread: nothing may be shared");
    }
}

static void test_switch_off(void) {
    setenv("GRAFT_ONEDNN_CONCURRENT", "0", 1);
    uint64_t shared0 = counter("cpu_onednn.shared_units");
    run_replays();
    CHECK_MSG(counter("cpu_onednn.shared_units") == shared0,
              "GRAFT_ONEDNN_CONCURRENT=0, yet units were shared");
    unsetenv("GRAFT_ONEDNN_CONCURRENT");
}

/* A helper thread's unit fails: the replay reports that failure with its
 * message; the graph can be destroyed and graft goes on. */
static void test_helper_failure(void) {
    if (device_threads() < 2) {
        printf("  one thread: no helper thread to fail (the _threads run covers it)\n");
        return;
    }
    setenv("GRAFT_ONEDNN_CONCURRENT", "1", 1);
    setenv("GRAFT_ONEDNN_FAULT", "helper", 1);
    io g = {0};
    make_inputs(&g, 1);
    CHECK(gf_graph_capture_begin(dev) == GF_OK);
    build(&g);
    gf_graph *graph = gf_graph_capture_end();
    unsetenv("GRAFT_ONEDNN_FAULT");
    CHECK_MSG(graph != NULL, "capture: %s", gf_last_error());
    gf_status st = GF_OK;
    for (int r = 0; graph && r < 50 && st == GF_OK; r++) st = gf_graph_replay(graph);
    CHECK_MSG(st != GF_OK, "no replay in 50 gave a unit to a helper thread");
    if (st != GF_OK) {
        const char *msg = gf_last_error();
        CHECK_MSG(strstr(msg, "GRAFT_ONEDNN_FAULT=helper") && strstr(msg, "helper thread"),
                  "the helper's message did not reach the caller: %s", msg);
        gf_clear_error();
    }
    gf_graph_destroy(graph);
    release_io(&g);
    unsetenv("GRAFT_ONEDNN_CONCURRENT");
    run_replays(); /* graft goes on, and a new graph replays right */
}

int main(void) {
    /* Two threads unless the run says otherwise (the leak-checked runs of a
     * sanitizer build ask for one); read by OpenMP when the plugin loads. */
    setenv("OMP_NUM_THREADS", "2", 0);
    int rc = xd_init(); /* needs GRAFT_PLUGINS=cpu_onednn,reference */
    if (rc) return rc;
    dev = xd_dev;
    RUN(test_shared);
    RUN(test_switch_off);
    RUN(test_helper_failure);
    return xd_finish();
}
