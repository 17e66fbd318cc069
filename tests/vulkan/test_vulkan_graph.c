/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vulkan_graph.c — the Vulkan plugin's graph slots through the ABI:
 *   - a run of RANDOM, MUL, ADD, SUM, INDEX_SELECT (launched eagerly between
 *     the recorded segments: it checks its indices on the host) and ADD,
 *     launched as a graph three times with the Philox offset moved before
 *     each, equals the same launches made one by one, bit for bit;
 *   - a graph without an eager node records nothing when launched (the
 *     dispatch counter of the eager path stays) and counts its launches;
 *   - long runs span several command buffers (segments) and stay ordered;
 *   - the errors: NULL and empty arguments, a node's short struct_size, a
 *     tensor past its buffer (each INVALID, no graph made); a bad index on
 *     a launch (reported, the graph usable after); new parameters that call
 *     for another pipeline (INVALID, usable after the old ones are back).
 *   - runs of f32 unary and binary launches recorded as one dispatch each
 *     (vk_fuse.c) equal the eager launches bit for bit: aligned and not, a
 *     run cut by a hazard, new scalar parameters between launches, and
 *     GRAFT_VULKAN_FUSE=0 (test_fused_runs).
 * Zero validation messages. The plugin's file comes from
 * GRAFT_TEST_VULKAN_PLUGIN. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_host.h"
#include "check.h"
#include "graft_vulkan_ext.h"

static abi_plugin vk;
static const char *last_error = vk.error;
static const gfp_plugin *T;
static void *ctx, *dev;
static const graft_vulkan_stats_ext *ext;

enum { N = 4096, K = 64 };

/* The buffers of one copy of the run. */
typedef struct set {
    gfp_buffer x, r, y, s, idx, g;
    gfp_tensor tx, tr, ty, ts, tidx, tg;
} set;

static void set_make(set *z, const float *x, const int64_t *idx) {
    void *hp;
    CHECK(T->buffer_alloc(dev, N * 4, &z->x, &hp) == GFP_OK);
    CHECK(T->buffer_alloc(dev, N * 4, &z->r, &hp) == GFP_OK);
    CHECK(T->buffer_alloc(dev, N * 4, &z->y, &hp) == GFP_OK);
    CHECK(T->buffer_alloc(dev, 4, &z->s, &hp) == GFP_OK);
    CHECK(T->buffer_alloc(dev, K * 8, &z->idx, &hp) == GFP_OK);
    CHECK(T->buffer_alloc(dev, K * 4, &z->g, &hp) == GFP_OK);
    CHECK(T->buffer_write(dev, z->x, 0, x, N * 4) == GFP_OK);
    CHECK(T->buffer_write(dev, z->idx, 0, idx, K * 8) == GFP_OK);
    z->tx = abi_vec(z->x, 0, GFP_F32, N);
    z->tr = abi_vec(z->r, 0, GFP_F32, N);
    z->ty = abi_vec(z->y, 0, GFP_F32, N);
    z->tidx = abi_vec(z->idx, 0, GFP_I64, K);
    z->tg = abi_vec(z->g, 0, GFP_F32, K);
    int64_t one = 1;
    z->ts = abi_desc(GFP_F32, 1, &one, NULL);
    z->ts.buffer = z->s;
}

static void set_free(set *z) {
    gfp_buffer *b[] = {&z->x, &z->r, &z->y, &z->s, &z->idx, &z->g};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) T->buffer_free(dev, *b[i]);
}

/* The run's nodes over z (pointer arrays in io, which must outlive them). */
typedef struct run {
    const gfp_tensor *io[6][3];
    gfp_graph_node nodes[6];
} run;

static gfp_random_params rp = {.struct_size = sizeof rp, .kind = GFP_RANDOM_UNIFORM,
                               .seed = 5, .offset = 0, .a = -1, .b = 1};
static gfp_reduce_params red = {.struct_size = sizeof red, .dims = 1};
static gfp_dim_params dim0 = {.struct_size = sizeof dim0, .dim = 0};

static void run_make(run *u, set *z) {
    /* r = random; y = r * x; y = y + x; s = sum(y); g = y[idx]; y = y + r */
    const gfp_tensor *io[6][3] = {{&z->tr, NULL, NULL},         {&z->tr, &z->tx, &z->ty},
                                  {&z->ty, &z->tx, &z->ty},     {&z->ty, &z->ts, NULL},
                                  {&z->ty, &z->tidx, &z->tg},   {&z->ty, &z->tr, &z->ty}};
    memcpy(u->io, io, sizeof io);
    const uint32_t ops[6] = {GFP_OP_RANDOM, GFP_OP_MUL, GFP_OP_ADD, GFP_OP_SUM,
                             GFP_OP_INDEX_SELECT, GFP_OP_ADD};
    const uint32_t n_in[6] = {0, 2, 2, 1, 2, 2};
    const void *params[6] = {&rp, NULL, NULL, &red, &dim0, NULL};
    for (int i = 0; i < 6; i++)
        u->nodes[i] = (gfp_graph_node){.struct_size = sizeof(gfp_graph_node), .op = ops[i],
                                       .n_inputs = n_in[i], .n_outputs = 1,
                                       .inputs = n_in[i] ? u->io[i] : NULL,
                                       .outputs = u->io[i] + (i == 0 ? 0 : n_in[i]),
                                       .params = params[i]};
}

static gfp_status run_eager(const run *u, uint32_t first, uint32_t n) {
    for (uint32_t i = first; i < first + n; i++) {
        const gfp_graph_node *g = &u->nodes[i];
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

static void test_equals_eager(void) {
    float x[N];
    int64_t idx[K];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 13) * 0.25f - 1.5f;
    for (int i = 0; i < K; i++) idx[i] = (i * 37) % N;
    set e, g;
    set_make(&e, x, idx);
    set_make(&g, x, idx);
    run ue, ug;
    run_make(&ue, &e);
    run_make(&ug, &g);
    void *graph = NULL;
    rp.offset = 0;
    CHECK_MSG(T->graph_create(dev, ug.nodes, 6, &graph) == GFP_OK && graph, "%s", last_error);
    if (!graph) return;
    uint64_t launches = ext->graph_launches();
    for (int k = 0; k < 3; k++) {
        rp.offset = 1000u * (uint64_t)k + 7u; /* as the core moves it per replay */
        CHECK(run_eager(&ue, 0, 6) == GFP_OK);
        CHECK_MSG(T->graph_launch(dev, graph) == GFP_OK, "%s", last_error);
        CHECK_MSG(same(e.r, g.r, N * 4), "launch %d: the random numbers differ", k);
        CHECK_MSG(same(e.y, g.y, N * 4), "launch %d: y differs", k);
        CHECK_MSG(same(e.s, g.s, 4), "launch %d: the sum differs", k);
        CHECK_MSG(same(e.g, g.g, K * 4), "launch %d: the selected values differ", k);
    }
    CHECK(ext->graph_launches() == launches + 3);

    /* A bad index: the eager node reports it; the graph works again after. */
    int64_t bad = N + 5;
    CHECK(T->buffer_write(dev, g.idx, 8, &bad, 8) == GFP_OK);
    vk.error[0] = '\0';
    CHECK(T->graph_launch(dev, graph) != GFP_OK);
    CHECK_CONTAINS(last_error, "index");
    CHECK(T->buffer_write(dev, g.idx, 8, &idx[1], 8) == GFP_OK);

    /* Parameters that call for another pipeline (the kind is a shader
     * constant): refused; the old ones work again. */
    rp.kind = GFP_RANDOM_NORMAL;
    vk.error[0] = '\0';
    CHECK(T->graph_launch(dev, graph) == GFP_ERR_INVALID);
    CHECK_CONTAINS(last_error, "capture the graph again");
    rp.kind = GFP_RANDOM_UNIFORM;
    rp.offset = 99;
    CHECK(run_eager(&ue, 0, 6) == GFP_OK);
    CHECK_MSG(T->graph_launch(dev, graph) == GFP_OK, "%s", last_error);
    CHECK(same(e.y, g.y, N * 4) && same(e.g, g.g, K * 4));
    T->graph_destroy(dev, graph);
    set_free(&e);
    set_free(&g);
}

/* Without eager nodes a launch records nothing; a long run spans several
 * segments (each holds a few thousand dispatches) and stays in order. */
static void test_recorded_once(void) {
    enum { LEN = 256, CHAIN = 5000 };
    gfp_buffer xb, yb;
    void *hp;
    CHECK(T->buffer_alloc(dev, LEN * 4, &xb, &hp) == GFP_OK);
    CHECK(T->buffer_alloc(dev, LEN * 4, &yb, &hp) == GFP_OK);
    float x[LEN], y[LEN];
    for (int i = 0; i < LEN; i++) {
        x[i] = (float)(i % 5);
        y[i] = 0;
    }
    CHECK(T->buffer_write(dev, xb, 0, x, sizeof x) == GFP_OK);
    CHECK(T->buffer_write(dev, yb, 0, y, sizeof y) == GFP_OK);
    gfp_tensor tx = abi_vec(xb, 0, GFP_F32, LEN), ty = abi_vec(yb, 0, GFP_F32, LEN);
    const gfp_tensor *in[2] = {&ty, &tx}, *out[1] = {&ty};
    gfp_graph_node *nodes = calloc(CHAIN, sizeof *nodes);
    if (!nodes) return;
    for (int i = 0; i < CHAIN; i++)
        nodes[i] = (gfp_graph_node){.struct_size = sizeof *nodes, .op = GFP_OP_ADD,
                                    .n_inputs = 2, .n_outputs = 1, .inputs = in,
                                    .outputs = out};
    void *graph = NULL;
    CHECK_MSG(T->graph_create(dev, nodes, CHAIN, &graph) == GFP_OK && graph, "%s", last_error);
    if (graph) {
        uint64_t d0 = ext->dispatches(dev);
        for (int k = 0; k < 2; k++) CHECK(T->graph_launch(dev, graph) == GFP_OK);
        CHECK(T->buffer_read(dev, yb, 0, y, sizeof y) == GFP_OK);
        for (int i = 0; i < LEN; i++) CHECK_CLOSE(y[i], 2.0 * CHAIN * x[i], 0);
        CHECK_MSG(ext->dispatches(dev) == d0, "%llu dispatches recorded by the launches",
                  (unsigned long long)(ext->dispatches(dev) - d0));
        T->graph_destroy(dev, graph);
    }
    free(nodes);
    T->buffer_free(dev, xb);
    T->buffer_free(dev, yb);
}

/* ------------------------------------------------------------ fused runs */
/* A chain of f32 unary and binary launches: products, a broadcast scalar,
 * scalar-parameter ops (leaky_relu, clamp with one bound), transcendental
 * ones, an in-place op; over n elements in one buffer per tensor (n odd:
 * the vec4 body and its tail). With `shift` the inputs are views one element
 * into their buffers (not 4-aligned: the scalar body). With `hazard` the
 * sixth node reads t1 one element along: a range the run writes, at another
 * element, ends the run there. */
enum { FN = 1001, FT = 8 };
typedef struct fchain {
    gfp_buffer b[FT + 4];
    gfp_tensor t[FT + 4]; /* 0..7 outputs, 8 x, 9 w, 10 z, 11 the broadcast scalar */
    gfp_tensor t1_next;   /* t1 one element along */
    const gfp_tensor *io[FT][3];
    gfp_graph_node nodes[FT];
    gfp_scalar_params slope;
    gfp_clamp_params lo;
} fchain;

static void fchain_make(fchain *c, bool shift, bool hazard) {
    memset(c, 0, sizeof *c);
    void *hp;
    uint64_t off = shift ? 4 : 0;
    for (int i = 0; i < FT + 4; i++) {
        CHECK(T->buffer_alloc(dev, (FN + 1) * 4, &c->b[i], &hp) == GFP_OK);
        c->t[i] = abi_vec(c->b[i], i >= FT && i < FT + 3 ? off : 0, GFP_F32, FN);
    }
    float v[FN + 1];
    memset(v, 0, sizeof v); /* every element defined: t1_next reads one past t1 */
    for (int i = 0; i < FT; i++) CHECK(T->buffer_write(dev, c->b[i], 0, v, sizeof v) == GFP_OK);
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i <= FN; i++) v[i] = (float)((i * (k + 3)) % 17) * 0.125f - 1.0f;
        CHECK(T->buffer_write(dev, c->b[FT + k], 0, v, sizeof v) == GFP_OK);
    }
    float sc = 0.375f;
    CHECK(T->buffer_write(dev, c->b[FT + 3], 0, &sc, 4) == GFP_OK);
    c->t[FT + 3].strides[0] = 0; /* one element, broadcast */
    c->t1_next = abi_vec(c->b[1], 4, GFP_F32, FN);
    c->slope = (gfp_scalar_params){.struct_size = sizeof c->slope, .a = 0.1};
    c->lo = (gfp_clamp_params){.struct_size = sizeof c->lo, .has_min = 1, .min = -0.25};
    const gfp_tensor *x = &c->t[FT], *w = &c->t[FT + 1], *z = &c->t[FT + 2], *s = &c->t[FT + 3];
    const gfp_tensor *T0 = &c->t[0], *T1 = &c->t[1], *T2 = &c->t[2], *T3 = &c->t[3];
    const gfp_tensor *T4 = &c->t[4], *T5 = &c->t[5], *T6 = &c->t[6];
    /* t0 = x * w; t1 = t0 + s; t2 = leaky_relu(t1); t3 = clamp(t2, -0.25, -);
     * t4 = exp(t3); t5 = t4 - z (or t1[1:] - z); t5 = t5 * w; t6 = tanh(t5) */
    const gfp_tensor *io[FT][3] = {{x, w, T0},  {T0, s, T1},
                                   {T1, T2, NULL}, {T2, T3, NULL},
                                   {T3, T4, NULL}, {hazard ? &c->t1_next : T4, z, T5},
                                   {T5, w, T5},  {T5, T6, NULL}};
    memcpy(c->io, io, sizeof io);
    const uint32_t ops[FT] = {GFP_OP_MUL, GFP_OP_ADD, GFP_OP_LEAKY_RELU, GFP_OP_CLAMP,
                              GFP_OP_EXP, GFP_OP_SUB, GFP_OP_MUL, GFP_OP_TANH};
    const uint32_t n_in[FT] = {2, 2, 1, 1, 1, 2, 2, 1};
    for (int i = 0; i < FT; i++) {
        uint32_t nin = n_in[i];
        c->nodes[i] = (gfp_graph_node){.struct_size = sizeof(gfp_graph_node), .op = ops[i],
                                       .n_inputs = nin, .n_outputs = 1, .inputs = c->io[i],
                                       .outputs = c->io[i] + nin,
                                       .params = ops[i] == GFP_OP_LEAKY_RELU ? (const void *)&c->slope
                                                 : ops[i] == GFP_OP_CLAMP ? (const void *)&c->lo
                                                                          : NULL};
    }
}

static void fchain_free(fchain *c) {
    for (int i = 0; i < FT + 4; i++) T->buffer_free(dev, c->b[i]);
}

static bool fchain_same(const fchain *a, const fchain *b) {
    bool ok = true;
    for (int i = 0; i < FT - 1; i++) { /* t0 .. t6 (t5 is written twice) */
        bool s = same(a->b[i], b->b[i], FN * 4);
        if (!s && getenv("DBG")) {
            float va[FN], vb[FN];
            T->buffer_read(dev, a->b[i], 0, va, sizeof va);
            T->buffer_read(dev, b->b[i], 0, vb, sizeof vb);
            int shown = 0;
            for (int j = 0; j < FN && shown < 4; j++)
                if (memcmp(&va[j], &vb[j], 4)) {
                    fprintf(stderr, "t%d[%d]: eager %.9g fused %.9g\n", i, j, va[j], vb[j]);
                    shown++;
                }
        }
        CHECK_MSG(s, "output t%d differs from the eager launches' in its bits", i);
        ok = ok && s;
    }
    return ok;
}

static void fused_case(bool shift, bool hazard, uint64_t want_launches) {
    fchain e, g;
    fchain_make(&e, shift, hazard);
    fchain_make(&g, shift, hazard);
    uint64_t r0 = ext->fused_runs(), l0 = ext->fused_launches();
    void *graph = NULL;
    CHECK_MSG(T->graph_create(dev, g.nodes, FT, &graph) == GFP_OK && graph, "%s", last_error);
    CHECK_MSG(ext->fused_launches() - l0 == want_launches,
              "%llu launches fused, expected %llu (shift %d, hazard %d)",
              (unsigned long long)(ext->fused_launches() - l0),
              (unsigned long long)want_launches, shift, hazard);
    CHECK_MSG(ext->fused_runs() - r0 == (hazard ? 2u : want_launches ? 1u : 0u), "%llu runs",
              (unsigned long long)(ext->fused_runs() - r0));
    /* twice, and again with a new slope and bound (the run's params rewritten) */
    for (int k = 0; k < 3 && graph; k++) {
        if (k == 2) {
            e.slope.a = g.slope.a = 0.3;
            e.lo.min = g.lo.min = 0.5;
        }
        CHECK_MSG(T->graph_launch(dev, graph) == GFP_OK, "%s", last_error);
        for (int i = 0; i < FT; i++) {
            const gfp_graph_node *n = &e.nodes[i];
            CHECK(T->launch(dev, n->op, n->inputs, n->n_inputs, n->outputs, n->n_outputs,
                            n->params) == GFP_OK);
        }
        CHECK(T->synchronize(dev) == GFP_OK);
        fchain_same(&e, &g);
    }
    if (graph) T->graph_destroy(dev, graph);
    fchain_free(&e);
    fchain_free(&g);
}

static void test_fused_runs(void) {
    fused_case(false, false, FT); /* one run of eight: vec4 body and tail */
    fused_case(true, false, FT);  /* inputs not 4-aligned: the scalar body */
    fused_case(false, true, FT);  /* runs of five and three */
    /* Above 65,536 elements the launches stay apart (fusing saves dispatches,
     * not memory traffic: it stops paying on large tensors). */
    enum { BIG = 65537 };
    gfp_buffer bb;
    void *hp;
    CHECK(T->buffer_alloc(dev, BIG * 4, &bb, &hp) == GFP_OK);
    gfp_tensor tb = abi_vec(bb, 0, GFP_F32, BIG);
    const gfp_tensor *bin[2] = {&tb, &tb}, *bout[1] = {&tb};
    gfp_graph_node big[2];
    for (int i = 0; i < 2; i++)
        big[i] = (gfp_graph_node){.struct_size = sizeof big[0], .op = i ? GFP_OP_ADD : GFP_OP_MUL,
                                  .n_inputs = 2, .n_outputs = 1, .inputs = bin, .outputs = bout};
    uint64_t l0 = ext->fused_launches();
    void *graph = NULL;
    CHECK_MSG(T->graph_create(dev, big, 2, &graph) == GFP_OK && graph, "%s", last_error);
    CHECK(ext->fused_launches() == l0);
    if (graph) T->graph_destroy(dev, graph);
    T->buffer_free(dev, bb);
    /* GRAFT_VULKAN_FUSE=0: nothing fused, the same results */
    setenv("GRAFT_VULKAN_FUSE", "0", 1);
    fused_case(false, false, 0);
    unsetenv("GRAFT_VULKAN_FUSE");
}

static void test_errors(void) {
    gfp_buffer b;
    void *hp;
    CHECK(T->buffer_alloc(dev, 64, &b, &hp) == GFP_OK);
    gfp_tensor ok = abi_vec(b, 0, GFP_F32, 16), past = abi_vec(b, 0, GFP_F32, 100);
    const gfp_tensor *in[1] = {&ok}, *out[1] = {&ok};
    gfp_graph_node n = {.struct_size = sizeof n, .op = GFP_OP_NEG, .n_inputs = 1,
                        .n_outputs = 1, .inputs = in, .outputs = out};
    void *graph = (void *)1;
    CHECK(T->graph_create(dev, &n, 1, NULL) == GFP_ERR_INVALID);
    CHECK(T->graph_create(dev, NULL, 1, &graph) == GFP_ERR_INVALID && graph == NULL);
    graph = (void *)1;
    CHECK(T->graph_create(dev, &n, 0, &graph) == GFP_ERR_INVALID && graph == NULL);
    gfp_graph_node m = n;
    m.struct_size = 8;
    vk.error[0] = '\0';
    CHECK(T->graph_create(dev, &m, 1, &graph) == GFP_ERR_INVALID && graph == NULL);
    CHECK_CONTAINS(last_error, "struct_size");
    const gfp_tensor *bad[1] = {&past};
    m = n;
    m.outputs = bad;
    vk.error[0] = '\0';
    CHECK(T->graph_create(dev, &m, 1, &graph) == GFP_ERR_INVALID && graph == NULL);
    CHECK_CONTAINS(last_error, "past the end");
    CHECK(T->graph_launch(dev, NULL) == GFP_ERR_INVALID);
    T->graph_destroy(dev, NULL);
    /* The device still works. */
    CHECK(T->graph_create(dev, &n, 1, &graph) == GFP_OK && graph);
    if (graph) {
        CHECK(T->graph_launch(dev, graph) == GFP_OK);
        T->graph_destroy(dev, graph);
    }
    T->buffer_free(dev, b);
}

int main(void) {
    if (abi_load_env(&vk, "GRAFT_TEST_VULKAN_PLUGIN") != 0 || vk.t->init(&vk.ctx) != GFP_OK) {
        fprintf(stderr, "the vulkan plugin did not load or initialise\n");
        return 1;
    }
    vk.echo_logs = true;
    T = vk.t;
    ctx = vk.ctx;
    uint32_t n = 0;
    CHECK(T->device_count(ctx, &n) == GFP_OK);
    if (n == 0) {
        fprintf(stderr, "SKIP: no vulkan device: %s\n", last_error);
        return 77;
    }
    CHECK(T->graph_create && T->graph_launch && T->graph_destroy);
    CHECK(T->query_extension(ctx, "vulkan.stats", (void **)&ext) == GFP_OK && ext);
    if (!ext || ext->struct_size < sizeof *ext || !T->graph_create) return CHECK_REPORT();
    CHECK(T->device_open(ctx, 0, &dev) == GFP_OK && dev);
    gfp_device_props props = {.struct_size = sizeof props};
    CHECK(T->device_props(ctx, 0, &props) == GFP_OK);
    if (props.dtypes & GFP_DTYPE_BIT(GFP_F64)) RUN(test_equals_eager); /* RANDOM needs f64 */
    RUN(test_recorded_once);
    RUN(test_fused_runs);
    RUN(test_errors);
    T->synchronize(dev);
    T->device_close(dev);
    long msgs = ext->validation_messages();
    CHECK_MSG(msgs == 0, "%ld validation messages", msgs);
    T->shutdown(ctx);
    return CHECK_REPORT();
}
