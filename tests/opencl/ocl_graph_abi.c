/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_graph_abi.c — the OpenCL plugin's graph slots through the ABI.
 *   ocl_graph_abi            a run of RANDOM (launched eagerly: drawn on the
 *                            host for some dtypes), MUL, LEAKY_RELU (its slope
 *                            moved between launches: the kernel's arguments
 *                            set again), SUM, INDEX_SELECT (eager: its
 *                            indices are checked on the host) and ADD equals
 *                            the same launches one by one, bit for bit, over
 *                            three launches; the "opencl.stats" counter moves;
 *                            a bad index is reported and the graph works
 *                            after; NULL and empty arguments, a short
 *                            struct_size and a tensor past its buffer are
 *                            INVALID with no graph made. MUL and LEAKY_RELU
 *                            run as one fused kernel (ocl_fuse.c), whose
 *                            slope argument follows the moves.
 *   ocl_graph_abi enqueue    under GRAFT_OPENCL_FAULT=enqueue: graph_create
 *                            (which enqueues nothing) succeeds, graph_launch
 *                            fails naming the enqueue, and the graph is
 *                            destroyed cleanly.
 * The plugin's file comes from GRAFT_TEST_OPENCL_PLUGIN. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_host.h"
#include "check.h"
#include "graft_opencl_ext.h"

static abi_plugin cl;
static const char *last_error = cl.error;
static const gfp_plugin *T;
static void *dev;

enum { N = 4096, K = 64, NODES = 6 };

typedef struct set {
    gfp_buffer b[6]; /* x r y s idx g */
    gfp_tensor x, r, y, s, idx, g;
    const gfp_tensor *io[NODES][3];
    gfp_graph_node nodes[NODES];
} set;

static gfp_random_params rp = {.struct_size = sizeof rp, .kind = GFP_RANDOM_UNIFORM,
                               .seed = 3, .offset = 0, .a = -1, .b = 1};
static gfp_scalar_params slope = {.struct_size = sizeof slope, .a = 0.125};
static gfp_reduce_params red = {.struct_size = sizeof red, .dims = 1};
static gfp_dim_params dim0 = {.struct_size = sizeof dim0, .dim = 0};

static void set_make(set *z, const float *x, const int64_t *idx) {
    const uint64_t bytes[6] = {N * 4, N * 4, N * 4, 4, K * 8, K * 4};
    void *hp;
    for (int i = 0; i < 6; i++) CHECK(T->buffer_alloc(dev, bytes[i], &z->b[i], &hp) == GFP_OK);
    CHECK(T->buffer_write(dev, z->b[0], 0, x, N * 4) == GFP_OK);
    CHECK(T->buffer_write(dev, z->b[4], 0, idx, K * 8) == GFP_OK);
    z->x = abi_vec(z->b[0], 0, GFP_F32, N);
    z->r = abi_vec(z->b[1], 0, GFP_F32, N);
    z->y = abi_vec(z->b[2], 0, GFP_F32, N);
    z->s = abi_vec(z->b[3], 0, GFP_F32, 1);
    z->idx = abi_vec(z->b[4], 0, GFP_I64, K);
    z->g = abi_vec(z->b[5], 0, GFP_F32, K);
    /* r = random; y = r * x; y = leaky_relu(y); s = sum(y); g = y[idx]; y = y + r */
    const gfp_tensor *io[NODES][3] = {{&z->r, NULL, NULL},     {&z->r, &z->x, &z->y},
                                      {&z->y, &z->y, NULL},     {&z->y, &z->s, NULL},
                                      {&z->y, &z->idx, &z->g},  {&z->y, &z->r, &z->y}};
    memcpy(z->io, io, sizeof io);
    const uint32_t ops[NODES] = {GFP_OP_RANDOM, GFP_OP_MUL, GFP_OP_LEAKY_RELU, GFP_OP_SUM,
                                 GFP_OP_INDEX_SELECT, GFP_OP_ADD};
    const uint32_t n_in[NODES] = {0, 2, 1, 1, 2, 2};
    const void *params[NODES] = {&rp, NULL, &slope, &red, &dim0, NULL};
    for (int i = 0; i < NODES; i++)
        z->nodes[i] = (gfp_graph_node){.struct_size = sizeof(gfp_graph_node), .op = ops[i],
                                       .n_inputs = n_in[i], .n_outputs = 1,
                                       .inputs = n_in[i] ? z->io[i] : NULL,
                                       .outputs = z->io[i] + n_in[i], .params = params[i]};
}

static void set_free(set *z) {
    for (int i = 0; i < 6; i++) T->buffer_free(dev, z->b[i]);
}

static gfp_status run_eager(const set *z) {
    for (int i = 0; i < NODES; i++) {
        const gfp_graph_node *g = &z->nodes[i];
        gfp_status st = T->launch(dev, g->op, g->inputs, g->n_inputs, g->outputs, g->n_outputs,
                                  g->params);
        if (st != GFP_OK) return st;
    }
    return GFP_OK;
}

static bool same(gfp_buffer a, gfp_buffer b, size_t n) {
    unsigned char *va = malloc(n), *vb = malloc(n);
    bool ok = va && vb && T->buffer_read(dev, a, 0, va, n) == GFP_OK &&
              T->buffer_read(dev, b, 0, vb, n) == GFP_OK && !memcmp(va, vb, n);
    free(va);
    free(vb);
    return ok;
}

static void inputs(float *x, int64_t *idx) {
    for (int i = 0; i < N; i++) x[i] = (float)(i % 11) * 0.375f - 1.75f;
    for (int i = 0; i < K; i++) idx[i] = (i * 53) % N;
}

static void test_equals_eager(void) {
    float x[N];
    int64_t idx[K];
    inputs(x, idx);
    set e, g;
    set_make(&e, x, idx);
    set_make(&g, x, idx);
    const graft_opencl_stats_ext *ext = NULL;
    CHECK(T->query_extension(cl.ctx, "opencl.stats", (void **)&ext) == GFP_OK && ext &&
          ext->struct_size >= sizeof *ext);
    void *graph = NULL;
    uint64_t runs0 = ext ? ext->fused_runs() : 0, fused0 = ext ? ext->fused_launches() : 0;
    CHECK_MSG(T->graph_create(dev, g.nodes, NODES, &graph) == GFP_OK && graph, "%s", last_error);
    if (!graph || !ext) return;
    /* MUL and LEAKY_RELU are one kernel (ocl_fuse.c): the slope's moves below
     * must reach the fused kernel's arguments */
    CHECK(ext->fused_runs() == runs0 + 1 && ext->fused_launches() == fused0 + 2);
    uint64_t launches = ext->graph_launches();
    for (int k = 0; k < 3; k++) {
        rp.offset = 500u * (uint64_t)k + 1u;
        slope.a = 0.125 * (k + 1);
        CHECK(run_eager(&e) == GFP_OK);
        CHECK_MSG(T->graph_launch(dev, graph) == GFP_OK, "%s", last_error);
        const char *what[6] = {"x", "r", "y", "s", "idx", "g"};
        const size_t bytes[6] = {N * 4, N * 4, N * 4, 4, K * 8, K * 4};
        for (int i = 1; i < 6; i++)
            CHECK_MSG(same(e.b[i], g.b[i], bytes[i]), "launch %d: %s differs", k, what[i]);
    }
    CHECK(ext->graph_launches() == launches + 3);
    int64_t bad = -3;
    CHECK(T->buffer_write(dev, g.b[4], 16, &bad, 8) == GFP_OK);
    cl.error[0] = '\0';
    CHECK(T->graph_launch(dev, graph) != GFP_OK);
    CHECK_CONTAINS(last_error, "index");
    CHECK(T->buffer_write(dev, g.b[4], 16, &idx[2], 8) == GFP_OK);
    CHECK(run_eager(&e) == GFP_OK);
    CHECK_MSG(T->graph_launch(dev, graph) == GFP_OK, "%s", last_error);
    CHECK(same(e.b[2], g.b[2], N * 4) && same(e.b[5], g.b[5], K * 4));
    T->graph_destroy(dev, graph);
    set_free(&e);
    set_free(&g);
}

static void test_errors(void) {
    gfp_buffer b;
    void *hp;
    CHECK(T->buffer_alloc(dev, 64, &b, &hp) == GFP_OK);
    gfp_tensor ok = abi_vec(b, 0, GFP_F32, 16), past = abi_vec(b, 0, GFP_F32, 100);
    const gfp_tensor *in[1] = {&ok}, *out[1] = {&ok}, *bad[1] = {&past};
    gfp_graph_node n = {.struct_size = sizeof n, .op = GFP_OP_NEG, .n_inputs = 1,
                        .n_outputs = 1, .inputs = in, .outputs = out};
    void *graph = (void *)1;
    CHECK(T->graph_create(dev, &n, 1, NULL) == GFP_ERR_INVALID);
    CHECK(T->graph_create(dev, NULL, 1, &graph) == GFP_ERR_INVALID && graph == NULL);
    graph = (void *)1;
    CHECK(T->graph_create(dev, &n, 0, &graph) == GFP_ERR_INVALID && graph == NULL);
    gfp_graph_node m = n;
    m.struct_size = 8;
    cl.error[0] = '\0';
    CHECK(T->graph_create(dev, &m, 1, &graph) == GFP_ERR_INVALID && graph == NULL);
    CHECK_CONTAINS(last_error, "struct_size");
    m = n;
    m.outputs = bad;
    cl.error[0] = '\0';
    CHECK(T->graph_create(dev, &m, 1, &graph) == GFP_ERR_INVALID && graph == NULL);
    CHECK_CONTAINS(last_error, "past the end");
    CHECK(T->graph_launch(dev, NULL) == GFP_ERR_INVALID);
    T->graph_destroy(dev, NULL);
    CHECK(T->graph_create(dev, &n, 1, &graph) == GFP_OK && graph);
    if (graph) {
        CHECK(T->graph_launch(dev, graph) == GFP_OK);
        T->graph_destroy(dev, graph);
    }
    T->buffer_free(dev, b);
}

/* GRAFT_OPENCL_FAULT=enqueue: every enqueue fails. */
static void test_enqueue_fault(void) {
    gfp_buffer b;
    void *hp;
    CHECK(T->buffer_alloc(dev, 64, &b, &hp) == GFP_OK);
    gfp_tensor t = abi_vec(b, 0, GFP_F32, 16);
    const gfp_tensor *in[1] = {&t}, *out[1] = {&t};
    gfp_graph_node n[2] = {{.struct_size = sizeof n[0], .op = GFP_OP_NEG, .n_inputs = 1,
                            .n_outputs = 1, .inputs = in, .outputs = out},
                           {.struct_size = sizeof n[0], .op = GFP_OP_EXP, .n_inputs = 1,
                            .n_outputs = 1, .inputs = in, .outputs = out}};
    void *graph = NULL;
    CHECK_MSG(T->graph_create(dev, n, 2, &graph) == GFP_OK && graph, "%s", last_error);
    if (graph) {
        cl.error[0] = '\0';
        CHECK(T->graph_launch(dev, graph) == GFP_ERR_DEVICE);
        CHECK_CONTAINS(last_error, "clEnqueueNDRangeKernel (graph)");
        T->graph_destroy(dev, graph);
    }
    T->buffer_free(dev, b);
}

int main(int argc, char **argv) {
    if (abi_load_env(&cl, "GRAFT_TEST_OPENCL_PLUGIN") != 0) return 1;
    T = cl.t;
    if (abi_open(&cl) != 0) {
        fprintf(stderr, "SKIP: no opencl device\n");
        return 77;
    }
    dev = cl.dev;
    CHECK(T->graph_create && T->graph_launch && T->graph_destroy);
    if (!T->graph_create) return CHECK_REPORT();
    if (argc > 1 && !strcmp(argv[1], "enqueue")) {
        RUN(test_enqueue_fault);
    } else {
        RUN(test_equals_eager);
        RUN(test_errors);
    }
    abi_close(&cl);
    return CHECK_REPORT();
}
