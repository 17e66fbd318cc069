/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_plugin.c — the cpu_onednn plugin's entry point, device, memory and
 * the routing of launches: accelerated kernel first, reference kernel when it
 * answers ODN_FALLBACK (see onednn_internal.h).
 *
 * One device, host memory, thread-safe. Buffers are the reference plugin's
 * (ref_hostbuf.c, with this plugin's own magic): a handle is the address of
 * byte 0, sizes are known, so reads, writes and launches out of bounds are
 * reported instead of corrupting memory, and memory the caller owns can be
 * adopted without a copy (buffer_wrap_host). */
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_internal.h"
#include "omp_fft.h"
#include "plugin_negotiate.h"

bool odn_bf16;

/* ------------------------------------------------------------ families */
typedef odn_launch_fn launch_fn;

typedef struct family {
    uint32_t families; /* GFP_FAMILY_BIT()s it serves: the kit routes by it */
    uint32_t (*support)(const gfp_op_query *q);
    launch_fn reference;
    launch_fn fast; /* NULL: the reference kernels only */
} family;

/* The reference's families, each with the accelerated kernels in front. */
#define ODN_FAMILY_ENTRY(f, set) {set, ref_##f##_support, ref_##f##_launch, odn_##f##_launch},
static const family families[] = {
    PK_FAMILIES(ODN_FAMILY_ENTRY) ODN_FAMILY_ENTRY(optim, GFP_FAMILY_BIT(GFP_FAMILY_OPTIM))
    ODN_FAMILY_ENTRY(rnn, GFP_FAMILY_BIT(GFP_FAMILY_RNN))
    /* FFT (1.3): Stockham / four-step / Bluestein kernels (omp_fft.c); the
     * longest Bluestein lengths from the reference */
    {GFP_FAMILY_BIT(GFP_FAMILY_FFT), ref_fft_support, ref_fft_launch, odn_fft_launch}};
#undef ODN_FAMILY_ENTRY

/* ------------------------------------------------------------ plugin */

static gfp_status odn_init(void **plugin_ctx) {
    if (plugin_ctx) *plugin_ctx = NULL;
    /* Cheap and without side effects: the engine is made on device_open.
     * DNNL_MAX_CPU_ISA is honoured: oneDNN reads it here. */
    odn_bf16 = odc_cpu_has_bf16();
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init(); /* for __builtin_cpu_supports in a dlopen'ed library */
#endif
    return GFP_OK;
}

static void odn_shutdown(void *plugin_ctx) {
    (void)plugin_ctx;
    odn_runtime_close();
    ref_hostdev_report_leaks();
}

static uint32_t stored_dtypes(void) {
    /* Complex dtypes: every op the reference's kernels take them for (those
     * kernels are compiled in), the hot ones with kernels of their own. */
    uint32_t d = GFP_DTYPE_BIT(GFP_F32) | GFP_DTYPE_BIT(GFP_F64) | GFP_DTYPE_BIT(GFP_I32) |
                 GFP_DTYPE_BIT(GFP_I64) | GFP_DTYPE_BIT(GFP_BOOL) | GFP_DTYPE_BIT(GFP_C64) |
                 GFP_DTYPE_BIT(GFP_C128);
    /* f16 and bf16: every op the reference computes them in (its kernels,
     * compiled in); bf16 matmul and conv natively on CPUs with avx512_bf16. */
    return d | GFP_DTYPE_BIT(GFP_BF16) | GFP_DTYPE_BIT(GFP_F16);
}

static gfp_status odn_device_props(void *plugin_ctx, uint32_t index, gfp_device_props *props) {
    (void)plugin_ctx;
    char name[64], version[96];
    snprintf(name, sizeof name, "CPU (oneDNN, %d threads)", omp_get_max_threads());
    odc_version_text(version, sizeof version);
    return ref_hostdev_props(index, props, name, stored_dtypes(), version);
}

static gfp_status odn_device_open(void *plugin_ctx, uint32_t index, void **device) {
    (void)plugin_ctx;
    if (!device) return pk_fail(GFP_ERR_INVALID, "device_open: device is NULL");
    gfp_status st = ref_hostdev_check("device_open", index);
    if (st == GFP_OK) st = odn_runtime_open();
    if (st != GFP_OK) return st;
    *device = ref_hostdev_handle();
    return GFP_OK;
}

/* ------------------------------------------------------------ memory */
const ref_hostbuf_kind ref_hostbuf_self = {"cpu_onednn", 0x6f646e6e62756621ull /* "odnnbuf!" */};

#define check_range ref_hostbuf_range

/* Large host copies run on every thread: one thread does not saturate the
 * memory bandwidth of a server core complex. */
static void parallel_memcpy(char *dst, const char *src, size_t n) {
    int nt = odn_threads((int64_t)(n / 16));
    if (nt <= 1) {
        memmove(dst, src, n);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        size_t t = (size_t)omp_get_thread_num(), k = (size_t)omp_get_num_threads();
        size_t lo = n / k * t, hi = t + 1 == k ? n : n / k * (t + 1);
        memcpy(dst + lo, src + lo, hi - lo);
    }
}

static gfp_status odn_buffer_write(void *device, gfp_buffer buffer, uint64_t offset,
                                   const void *src, uint64_t n) {
    (void)device;
    gfp_status st = check_range("buffer_write", buffer, offset, n);
    if (st != GFP_OK || n == 0) return st;
    if (!src) return pk_fail(GFP_ERR_INVALID, "buffer_write: src is NULL");
    parallel_memcpy((char *)buffer + offset, src, (size_t)n);
    return GFP_OK;
}

static gfp_status odn_buffer_read(void *device, gfp_buffer buffer, uint64_t offset, void *dst,
                                  uint64_t n) {
    (void)device;
    gfp_status st = check_range("buffer_read", buffer, offset, n);
    if (st != GFP_OK || n == 0) return st;
    if (!dst) return pk_fail(GFP_ERR_INVALID, "buffer_read: dst is NULL");
    parallel_memcpy(dst, (const char *)buffer + offset, (size_t)n);
    return GFP_OK;
}

static gfp_status odn_buffer_copy(void *device, gfp_buffer src, uint64_t src_offset,
                                  gfp_buffer dst, uint64_t dst_offset, uint64_t n) {
    (void)device;
    gfp_status st = check_range("buffer_copy (source)", src, src_offset, n);
    if (st == GFP_OK) st = check_range("buffer_copy (destination)", dst, dst_offset, n);
    if (st != GFP_OK || n == 0) return st;
    char *d = (char *)dst + dst_offset;
    const char *s = (const char *)src + src_offset;
    if (d < s + n && s < d + n) memmove(d, s, (size_t)n); /* outside the contract; survive it */
    else parallel_memcpy(d, s, (size_t)n);
    return GFP_OK;
}

static gfp_status odn_buffer_fill(void *device, gfp_buffer buffer, uint64_t offset, uint64_t n,
                                  const void *pattern, uint32_t pattern_size) {
    (void)device;
    gfp_status pst = pk_check_fill_pattern(n, pattern, pattern_size);
    if (pst != GFP_OK) return pst;
    gfp_status st = check_range("buffer_fill", buffer, offset, n);
    if (st != GFP_OK || n == 0) return st;
    odn_fill_pattern((char *)buffer + offset, n, pattern, pattern_size);
    return GFP_OK;
}

static gfp_status odn_synchronize(void *device) {
    (void)device; /* launches have finished when they return */
    return GFP_OK;
}

/* ------------------------------------------------------------ ops */
static bool is_bf16_pair(int32_t a, int32_t b) {
    bool fa = a == GFP_F32 || a == GFP_F64 || a == GFP_BF16;
    bool fb = b == GFP_F32 || b == GFP_F64 || b == GFP_BF16;
    return fa && fb && (a == GFP_BF16 || b == GFP_BF16);
}

/* bf16 launches with oneDNN's bf16 kernels on CPUs with bf16 arithmetic
 * (run_family says what serves the other f16/bf16 launches). */
static uint32_t bf16_support(const gfp_op_query *q) {
    const int32_t *in = q->input_dtypes, *out = q->output_dtypes;
    switch (q->op) {
    case GFP_OP_COPY:
        return q->n_inputs == 1 && q->n_outputs == 1 && is_bf16_pair(in[0], out[0])
                   ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
    case GFP_OP_FILL:
        return q->n_inputs == 0 && q->n_outputs == 1 && out[0] == GFP_BF16 ? GFP_SUPPORT_STRIDED
                                                                           : GFP_SUPPORT_NONE;
    case GFP_OP_MATMUL:
    case GFP_OP_CONV2D_BACKWARD_INPUT:
    case GFP_OP_CONV2D_BACKWARD_WEIGHT:
        return q->n_inputs == 2 && q->n_outputs == 1 && in[0] == GFP_BF16 &&
                       in[1] == GFP_BF16 && out[0] == GFP_BF16
                   ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
    case GFP_OP_CONV2D:
        return (q->n_inputs == 2 || q->n_inputs == 3) && q->n_outputs == 1 &&
                       in[0] == GFP_BF16 && in[1] == GFP_BF16 &&
                       (q->n_inputs == 2 || in[2] == -1 || in[2] == GFP_BF16) &&
                       out[0] == GFP_BF16
                   ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
    default: return GFP_SUPPORT_NONE;
    }
}

static bool query_has_half(const gfp_op_query *q) {
    for (uint32_t i = 0; i < q->n_inputs && i < 8; i++)
        if (pk_is_half(q->input_dtypes[i])) return true;
    for (uint32_t i = 0; i < q->n_outputs && i < 4; i++)
        if (pk_is_half(q->output_dtypes[i])) return true;
    return false;
}

/* The launch as a query (dtypes only), to ask bf16_support. */
static void launch_query(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, gfp_op_query *q) {
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = op;
    q->layout = GFP_LAYOUT_STRIDED;
    q->n_inputs = n_in;
    q->n_outputs = n_out;
    for (uint32_t i = 0; i < n_in && i < 8; i++) q->input_dtypes[i] = in[i] ? in[i]->dtype : -1;
    for (uint32_t i = 0; i < n_out && i < 4; i++) q->output_dtypes[i] = out[i]->dtype;
}

static gfp_status odn_query_op(void *device, const gfp_op_query *q, uint32_t *support) {
    (void)device;
    gfp_status st = pk_query_begin(q, support);
    if (st != GFP_OK) return st;
    if (query_has_half(q) && odn_bf16 && bf16_support(q) != GFP_SUPPORT_NONE) {
        *support = bf16_support(q);
        return GFP_OK;
    }
    const family *f = PK_ROUTE(families, q->op);
    if (f && pk_query_fits(q, stored_dtypes())) *support = f->support(q);
    return GFP_OK;
}

static bool any_half(const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *const *out,
                     uint32_t n_out) {
    for (uint32_t i = 0; i < n_in; i++)
        if (in[i] && pk_is_half(in[i]->dtype)) return true;
    for (uint32_t i = 0; i < n_out; i++)
        if (pk_is_half(out[i]->dtype)) return true;
    return false;
}

/* The kernels of f for a launch already checked: the accelerated one, else
 * the reference. */
static gfp_status run_family(const family *f, uint32_t op, const gfp_tensor *const *inputs,
                             uint32_t n_inputs, const gfp_tensor *const *outputs,
                             uint32_t n_outputs, const void *params) {
    /* f16/bf16: oneDNN's bf16 primitives where the CPU has bf16 arithmetic
     * (bf16_support); the plugin's own 16-bit loops for copies, fills,
     * selections and bernoulli draws (omp_random.c); 16-bit kernels of their own for
     * ReLU, 2x2 max pooling and sums (omp_half_native.c); the f32 kernels on widened
     * copies for the other ops that compute in f32 and round once (omp_half.c); the
     * reference kernels for the rest. */
    gfp_status st = ODN_FALLBACK;
    if (f->fast && any_half(inputs, n_inputs, outputs, n_outputs)) {
        gfp_op_query q;
        launch_query(op, inputs, n_inputs, outputs, n_outputs, &q);
        if ((odn_bf16 && bf16_support(&q) != GFP_SUPPORT_NONE) || op == GFP_OP_COPY ||
            op == GFP_OP_FILL || op == GFP_OP_WHERE || op == GFP_OP_RANDOM)
            st = f->fast(op, inputs, n_inputs, outputs, n_outputs, params);
        else if (odn_half_widens(op)) {
            st = odn_half_native(op, inputs, n_inputs, outputs, n_outputs, params);
            if (st == ODN_FALLBACK)
                st = odn_half_widened(f->fast, op, inputs, n_inputs, outputs, n_outputs, params);
        }
    } else if (f->fast) {
        st = f->fast(op, inputs, n_inputs, outputs, n_outputs, params);
    }
    odn_ctx_end_launch();
    if (st != ODN_FALLBACK) return st;
    if (pk_host) { /* GRAFT_LOG=debug shows what the accelerated kernels leave */
        char msg[96];
        snprintf(msg, sizeof msg, "cpu_onednn: %s runs on the reference kernel", pk_op_name(op));
        pk_host->log(pk_host->host_ctx, GFP_LOG_DEBUG, msg);
    }
    return f->reference(op, inputs, n_inputs, outputs, n_outputs, params);
}

static gfp_status odn_launch(void *device, uint32_t op, const gfp_tensor *const *inputs,
                             uint32_t n_inputs, const gfp_tensor *const *outputs,
                             uint32_t n_outputs, const void *params) {
    (void)device;
    const pk_device_rules rules = {"cpu_onednn", "oneDNN CPU", stored_dtypes(),
                                   ref_hostbuf_size_of, NULL};
    gfp_status st;
    const family *f = PK_LAUNCH_ROUTE(families, &rules, op, inputs, n_inputs, outputs, n_outputs,
                                      params, &st);
    if (!f) return st;
    return run_family(f, op, inputs, n_inputs, outputs, n_outputs, params);
}

/* ------------------------------------------------------------ captured graphs */
/* A captured run of launches (ABI 1.3 graph slots): each node checked and
 * routed once, at creation; a launch of the graph runs the flat list of
 * kernels with no checks, routing or dispatch, and runs of consecutive
 * elementwise launches as one chunked pass (omp_fuse.c). The parameter
 * structs are read at each launch (the core rewrites random offsets and
 * optimiser constants between launches). */
typedef struct odn_graph_node {
    const family *f;
    gfp_graph_node n;
    bool prepared; /* a BINARY op whose elementwise run is prepared: pe */
    odn_ew_prepared pe;
    odn_fuse_run run; /* run.count >= 2: this node and the next run.count - 1, fused */
} odn_graph_node;

typedef struct odn_graph {
    uint32_t n;
    odn_fuse_step *steps; /* the fused runs' steps, one per node; NULL when none */
    odn_graph_node nodes[];
} odn_graph;

/* Whether node k takes the elementwise engine (the family's launch), and as
 * a step of a fused run: *st. */
static bool fusable(const odn_graph_node *k, odn_fuse_step *st) {
    return k->f->fast == odn_elementwise_launch && odn_fuse_step_of(&k->n, st);
}

/* Marks the maximal runs of consecutive fusable nodes (omp_fuse.c says why
 * their results are the eager launches'). Steps live in g->steps. */
static void find_runs(odn_graph *g) {
    for (uint32_t i = 0; i < g->n;) {
        if (!fusable(&g->nodes[i], &g->steps[i])) {
            i++;
            continue;
        }
        uint32_t j = i + 1;
        while (j < g->n && fusable(&g->nodes[j], &g->steps[j]) &&
               odn_fuse_joins(&g->steps[i], j - i, &g->steps[j]))
            j++;
        if (j - i >= 2) {
            odn_fuse_run *r = &g->nodes[i].run;
            r->count = j - i;
            r->steps = &g->steps[i];
            odn_fuse_finish(r);
        }
        i = j;
    }
}

static gfp_status odn_graph_create(void *device, const gfp_graph_node *nodes, uint32_t n_nodes,
                                   void **graph) {
    (void)device;
    if (!graph) return pk_fail(GFP_ERR_INVALID, "graph_create: graph is NULL");
    *graph = NULL;
    if (!nodes || !n_nodes) return pk_fail(GFP_ERR_INVALID, "graph_create: no nodes");
    const pk_device_rules rules = {"cpu_onednn", "oneDNN CPU", stored_dtypes(),
                                   ref_hostbuf_size_of, NULL};
    odn_graph *g = malloc(sizeof *g + sizeof g->nodes[0] * n_nodes);
    if (!g) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "graph_create: out of host memory");
    g->n = n_nodes;
    g->steps = NULL;
    for (uint32_t i = 0; i < n_nodes; i++) {
        const gfp_graph_node *n = &nodes[i];
        gfp_status st = GFP_OK;
        if (n->struct_size < GFP_GRAPH_NODE_SIZE_V1_3) {
            free(g);
            return pk_fail(GFP_ERR_INVALID, "graph_create: node %u has struct_size %u", i,
                           n->struct_size);
        }
        const family *f = PK_LAUNCH_ROUTE(families, &rules, n->op, n->inputs, n->n_inputs,
                                          n->outputs, n->n_outputs, n->params, &st);
        if (!f) {
            free(g);
            return st;
        }
        odn_graph_node *k = &g->nodes[i];
        k->f = f;
        k->n = *n;
        memset(&k->run, 0, sizeof k->run);
        /* Only where the launch would take the elementwise engine itself. */
        k->prepared = f->fast == odn_elementwise_launch &&
                      odn_binary_prepare(n->op, n->inputs, n->n_inputs, n->outputs,
                                         n->n_outputs, &k->pe);
    }
    /* Without memory for the steps the graph runs unfused: the same results. */
    if (n_nodes >= 2 && odn_fuse_enabled() && (g->steps = malloc(sizeof *g->steps * n_nodes)))
        find_runs(g);
    *graph = g;
    return GFP_OK;
}

/* Nodes [i, end) one by one. */
static gfp_status launch_nodes(const odn_graph *g, uint32_t i, uint32_t end) {
    for (; i < end; i++) {
        const odn_graph_node *k = &g->nodes[i];
        if (k->prepared) {
            odn_prepared_run(&k->pe);
            continue;
        }
        gfp_status st = run_family(k->f, k->n.op, k->n.inputs, k->n.n_inputs, k->n.outputs,
                                   k->n.n_outputs, k->n.params);
        if (st != GFP_OK) return st;
    }
    return GFP_OK;
}

static gfp_status odn_graph_launch(void *device, void *graph) {
    (void)device;
    odn_graph *g = graph;
    for (uint32_t i = 0; i < g->n;) {
        odn_graph_node *k = &g->nodes[i];
        uint32_t end = i + 1;
        if (k->run.count >= 2) {
            end = i + k->run.count;
            if (odn_fuse_launch(&k->run) == GFP_OK) {
                i = end;
                continue;
            }
        }
        gfp_status st = launch_nodes(g, i, end);
        if (st != GFP_OK) return st;
        i = end;
    }
    return GFP_OK;
}

static void odn_graph_destroy(void *device, void *graph) {
    (void)device;
    odn_graph *g = graph;
    if (g) free(g->steps);
    free(g);
}

/* Extensions:
 *  "cpu_onednn.primitive_builds": *out = a uint64_t (*)(void) counting the
 *  oneDNN primitives created so far (a training loop creates none after its
 *  first step). */
static uint64_t builds_fn(void) { return odn_cache_builds(); }

/*  "cpu_onednn.fused_runs", "cpu_onednn.fused_launches": the same kind of
 *  counter: the runs of elementwise launches that the graphs created so far
 *  fuse (omp_fuse.c), and the launches those runs cover; each replay of a
 *  graph then runs fused_launches - fused_runs fewer kernels. */
static const struct {
    const char *name;
    uint64_t (*fn)(void);
} counters[] = {
    {"cpu_onednn.primitive_builds", builds_fn},
    {"cpu_onednn.fused_runs", odn_fuse_runs},
    {"cpu_onednn.fused_launches", odn_fuse_launches},
};

static gfp_status odn_query_extension(void *plugin_ctx, const char *name, void **out) {
    (void)plugin_ctx;
    if (out) *out = NULL;
    for (size_t i = 0; name && out && i < sizeof counters / sizeof counters[0]; i++)
        if (!strcmp(name, counters[i].name)) {
            uint64_t (*fn)(void) = counters[i].fn;
            memcpy(out, &fn, sizeof fn);
            return GFP_OK;
        }
    return pk_fail(GFP_ERR_NOT_FOUND, "the cpu_onednn plugin has no extension \"%s\"",
                    name ? name : "(null)");
}

/* ------------------------------------------------------------ negotiation */
static const gfp_plugin odn_table = {
    .struct_size = sizeof(gfp_plugin),
    .abi_major = GFP_ABI_MAJOR,
    .abi_minor = GFP_ABI_MINOR,
    .name = "cpu_onednn",
    .version = "1.0.0",
    .init = odn_init,
    .shutdown = odn_shutdown,
    .device_count = ref_hostdev_count,
    .device_props = odn_device_props,
    .device_open = odn_device_open,
    .device_close = NULL, /* the engine lives until shutdown */
    .buffer_alloc = ref_hostbuf_alloc,
    .buffer_free = ref_hostbuf_free,
    .buffer_write = odn_buffer_write,
    .buffer_read = odn_buffer_read,
    .buffer_copy = odn_buffer_copy,
    .buffer_fill = odn_buffer_fill,
    .synchronize = odn_synchronize,
    .launch = odn_launch,
    .query_op = odn_query_op,
    .query_extension = odn_query_extension,
    .buffer_wrap_host = ref_hostbuf_wrap,
    .graph_create = odn_graph_create,
    .graph_launch = odn_graph_launch,
    .graph_destroy = odn_graph_destroy,
};

PK_DEFINE_NEGOTIATE(odn_table)
