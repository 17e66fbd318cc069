/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_graph.c — captured graphs as CUDA graphs (the ABI's graph slots).
 *
 * graph_create records the nodes' launches into CUDA graphs by stream
 * capture: each launch goes through launch() as it would eagerly (the same
 * checks, the same kernels, cuBLAS and cuDNN calls, stream-ordered scratch
 * as graph memory nodes) while the device's stream is capturing, so nothing
 * runs then; graph_launch replays the instantiated graphs with one
 * cudaGraphLaunch each, no per-launch host work.
 *
 * What cannot be captured is refused from inside the launch while the
 * stream captures (dev->capturing): a launch that reads a result back to
 * the host (the index checks of the index ops and of max-pool's gradient),
 * one that uploads host data (the pointer arrays of a batched GEMM whose
 * batch dims do not merge), an allocation without memory pools, and FFT
 * (a cuFFT plan may be replaced in the plan cache while a graph would still
 * use its work area). Such a node splits the graph into segments: the
 * nodes before it are captured on their own, and it is launched eagerly in
 * its place on every graph_launch. Any other failure while capturing makes
 * graph_create answer UNSUPPORTED, and the core replays launch by launch.
 *
 * The core may rewrite a node's parameter struct between launches (the
 * Philox offsets of RANDOM, an optimiser's step constants), while a CUDA
 * graph holds the kernel arguments it was captured with. Each node's
 * parameters are therefore kept as captured; a segment whose nodes' current
 * parameters differ is captured again (and instantiated afresh) before it
 * is launched. A parameter struct larger than CU_GRAPH_MAX_PARAMS makes its
 * node eager. GRAFT_CUDA_GRAPHS=0 turns the slots off (UNSUPPORTED: the
 * core replays launch by launch), to tell the two apart. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define CU_GRAPH_MAX_PARAMS 4096u

typedef struct cu_seg {
    uint32_t first, count;
    bool eager;            /* one node, launched by launch() every time */
    cudaGraphExec_t exec;  /* the captured nodes (NULL when eager) */
} cu_seg;

struct cu_graph {
    struct cu_graph *next; /* the device's live graphs */
    const gfp_graph_node *nodes;
    uint32_t n_nodes;
    unsigned char **snap; /* per node: its parameters as captured (NULL: none) */
    uint32_t *snap_size;
    cu_seg *segs;
    uint32_t n_segs;
};

gfp_status cu_capture_refuse(cu_device *dev, const char *op, const char *what) {
    dev->capture_refused = true;
    return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %s cannot be captured into a CUDA graph", op, what);
}

static bool graphs_wanted(void) {
    const char *v = getenv("GRAFT_CUDA_GRAPHS");
    return !(v && !strcmp(v, "0"));
}

/* The node's parameter bytes (their struct_size), 0 without parameters,
 * UINT32_MAX when too large to keep. */
static uint32_t params_size(const gfp_graph_node *n) {
    if (!n->params) return 0;
    uint32_t s;
    memcpy(&s, n->params, sizeof s);
    return s > CU_GRAPH_MAX_PARAMS ? UINT32_MAX : s;
}

/* Launches nodes [first, first + count) into a new CUDA graph, instantiated
 * into *exec. *refused: the node that refused capture (UINT32_MAX: none). */
static gfp_status capture(cu_device *dev, const gfp_graph_node *nodes, uint32_t first,
                          uint32_t count, cudaGraphExec_t *exec, uint32_t *refused) {
    *exec = NULL;
    *refused = UINT32_MAX;
    gfp_status st = cu_use(dev, "graph_create");
    if (st != GFP_OK) return st;
    cudaError_t e = cudaStreamBeginCapture(dev->stream, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pk_fail(GFP_ERR_UNSUPPORTED, "graph_create: cudaStreamBeginCapture: %s",
                       cudaGetErrorName(e));
    }
    dev->capturing = true;
    dev->capture_refused = false;
    for (uint32_t k = first; k < first + count && st == GFP_OK; k++) {
        const gfp_graph_node *n = &nodes[k];
        st = cu_launch(dev, n->op, n->inputs, n->n_inputs, n->outputs, n->n_outputs, n->params);
        if (st != GFP_OK && dev->capture_refused) *refused = k;
    }
    dev->capturing = false;
    cudaGraph_t graph = NULL;
    e = cudaStreamEndCapture(dev->stream, &graph);
    if (st == GFP_OK && e == cudaSuccess && graph)
        e = cudaGraphInstantiateWithFlags(exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (st == GFP_OK && e != cudaSuccess) {
        st = pk_fail(GFP_ERR_UNSUPPORTED, "graph_create: capturing %u launches: %s", count,
                     cudaGetErrorName(e));
        if (*exec) cudaGraphExecDestroy(*exec);
        *exec = NULL;
    }
    (void)cudaGetLastError();
    return st;
}

static void free_graph(struct cu_graph *g) {
    if (!g) return;
    for (uint32_t i = 0; g->segs && i < g->n_segs; i++)
        if (g->segs[i].exec) cudaGraphExecDestroy(g->segs[i].exec);
    for (uint32_t i = 0; g->snap && i < g->n_nodes; i++) free(g->snap[i]);
    free(g->snap);
    free(g->snap_size);
    free(g->segs);
    free(g);
    (void)cudaGetLastError();
}

static bool add_seg(struct cu_graph *g, uint32_t first, uint32_t count, bool eager,
                    cudaGraphExec_t exec) {
    cu_seg *s = realloc(g->segs, (g->n_segs + 1) * sizeof *s);
    if (!s) return false;
    g->segs = s;
    g->segs[g->n_segs++] = (cu_seg){first, count, eager, exec};
    return true;
}

/* Captures nodes [i, end) as segments, eager nodes where capture refuses. */
static gfp_status capture_run(cu_device *dev, struct cu_graph *g, uint32_t i, uint32_t end) {
    while (i < end) {
        cudaGraphExec_t exec;
        uint32_t refused;
        gfp_status st = capture(dev, g->nodes, i, end - i, &exec, &refused);
        if (st == GFP_OK) {
            if (!add_seg(g, i, end - i, false, exec)) {
                cudaGraphExecDestroy(exec);
                return pk_fail(GFP_ERR_OUT_OF_MEMORY, "graph_create: out of host memory");
            }
            return GFP_OK;
        }
        if (refused == UINT32_MAX) return GFP_ERR_UNSUPPORTED;
        if (refused > i) { /* the nodes before it, on their own */
            uint32_t again;
            st = capture(dev, g->nodes, i, refused - i, &exec, &again);
            if (st != GFP_OK) return GFP_ERR_UNSUPPORTED;
            if (!add_seg(g, i, refused - i, false, exec)) {
                cudaGraphExecDestroy(exec);
                return pk_fail(GFP_ERR_OUT_OF_MEMORY, "graph_create: out of host memory");
            }
        }
        if (!add_seg(g, refused, 1, true, NULL))
            return pk_fail(GFP_ERR_OUT_OF_MEMORY, "graph_create: out of host memory");
        i = refused + 1;
    }
    return GFP_OK;
}

static void keep_params(struct cu_graph *g, uint32_t first, uint32_t count) {
    for (uint32_t k = first; k < first + count; k++)
        if (g->snap[k]) memcpy(g->snap[k], g->nodes[k].params, g->snap_size[k]);
}

gfp_status cu_graph_create(void *device, const gfp_graph_node *nodes, uint32_t n_nodes,
                           void **graph) {
    cu_device *dev = device;
    if (graph) *graph = NULL;
    if (!dev || !graph || (n_nodes && !nodes))
        return pk_fail(GFP_ERR_INVALID, "graph_create: device, nodes or graph is NULL");
    if (!graphs_wanted()) return GFP_ERR_UNSUPPORTED; /* GRAFT_CUDA_GRAPHS=0 */
    for (uint32_t k = 0; k < n_nodes; k++)
        if (nodes[k].struct_size < GFP_GRAPH_NODE_SIZE_V1_3)
            return pk_fail(GFP_ERR_INVALID, "graph_create: node %u has struct_size %u, below "
                           "1.3's %u", (unsigned)k, (unsigned)nodes[k].struct_size,
                           (unsigned)GFP_GRAPH_NODE_SIZE_V1_3);
    struct cu_graph *g = calloc(1, sizeof *g);
    if (!g) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "graph_create: out of host memory");
    g->nodes = nodes;
    g->n_nodes = n_nodes;
    g->snap = calloc(n_nodes ? n_nodes : 1, sizeof *g->snap);
    g->snap_size = calloc(n_nodes ? n_nodes : 1, sizeof *g->snap_size);
    gfp_status st = g->snap && g->snap_size ? GFP_OK
                    : pk_fail(GFP_ERR_OUT_OF_MEMORY, "graph_create: out of host memory");
    /* Runs of nodes whose parameters can be kept are captured; a node with
     * parameters too large to keep is eager. */
    uint32_t i = 0;
    while (st == GFP_OK && i < n_nodes) {
        uint32_t size = params_size(&nodes[i]);
        if (size == UINT32_MAX) {
            if (!add_seg(g, i, 1, true, NULL))
                st = pk_fail(GFP_ERR_OUT_OF_MEMORY, "graph_create: out of host memory");
            i++;
            continue;
        }
        uint32_t end = i;
        while (end < n_nodes && (size = params_size(&nodes[end])) != UINT32_MAX) {
            g->snap_size[end] = size;
            if (size && !(g->snap[end] = malloc(size)))
                st = pk_fail(GFP_ERR_OUT_OF_MEMORY, "graph_create: out of host memory");
            end++;
        }
        if (st == GFP_OK) {
            keep_params(g, i, end - i); /* as they are when captured */
            st = capture_run(dev, g, i, end);
        }
        i = end;
    }
    if (st != GFP_OK) {
        free_graph(g);
        /* the core replays launch by launch, with each launch's own errors */
        return st == GFP_ERR_OUT_OF_MEMORY ? st : GFP_ERR_UNSUPPORTED;
    }
    g->next = dev->graphs;
    dev->graphs = g;
    *graph = g;
    return GFP_OK;
}

/* Whether any node of the segment has parameters other than captured. */
static bool params_changed(const struct cu_graph *g, const cu_seg *s) {
    for (uint32_t k = s->first; k < s->first + s->count; k++)
        if (g->snap[k] && memcmp(g->snap[k], g->nodes[k].params, g->snap_size[k]) != 0)
            return true;
    return false;
}

static gfp_status launch_eagerly(cu_device *dev, const struct cu_graph *g, const cu_seg *s) {
    gfp_status st = GFP_OK;
    for (uint32_t k = s->first; k < s->first + s->count && st == GFP_OK; k++) {
        const gfp_graph_node *n = &g->nodes[k];
        st = cu_launch(dev, n->op, n->inputs, n->n_inputs, n->outputs, n->n_outputs, n->params);
    }
    return st;
}

gfp_status cu_graph_launch(void *device, void *graph) {
    cu_device *dev = device;
    struct cu_graph *g = graph;
    if (!dev || !g) return pk_fail(GFP_ERR_INVALID, "graph_launch: device or graph is NULL");
    gfp_status st = cu_use(dev, "graph_launch");
    for (uint32_t i = 0; i < g->n_segs && st == GFP_OK; i++) {
        cu_seg *s = &g->segs[i];
        if (s->eager) {
            st = launch_eagerly(dev, g, s);
            continue;
        }
        if (params_changed(g, s)) {
            cudaGraphExec_t exec;
            uint32_t refused;
            if (capture(dev, g->nodes, s->first, s->count, &exec, &refused) != GFP_OK) {
                /* this time launch by launch, with the launches' own errors */
                st = launch_eagerly(dev, g, s);
                continue;
            }
            cudaGraphExecDestroy(s->exec);
            s->exec = exec;
            keep_params(g, s->first, s->count);
        }
        st = cu_check(cudaGraphLaunch(s->exec, dev->stream), "graph_launch", "cudaGraphLaunch");
    }
    return st;
}

/* Waits for the stream first: a graph may still run when it is destroyed. */
void cu_graph_destroy(void *device, void *graph) {
    cu_device *dev = device;
    struct cu_graph *g = graph;
    if (!dev || !g) return;
    cudaSetDevice(dev->ordinal);
    cudaStreamSynchronize(dev->stream);
    for (struct cu_graph **p = &dev->graphs; *p; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            break;
        }
    free_graph(g);
}

void cu_graphs_release(cu_device *dev) {
    while (dev->graphs) {
        struct cu_graph *g = dev->graphs;
        dev->graphs = g->next;
        free_graph(g);
    }
}
