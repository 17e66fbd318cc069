/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_graph.c — captured graphs: kernels with their arguments set once.
 *
 * graph_create runs each node's family once in recording mode: each kernel
 * call (ocl_call_begin .. ocl_call_run) gets a cl_kernel of its own, made
 * from the program the shared kernel came from, its arguments are set on it
 * once, and the launch geometry is noted instead of enqueued. graph_launch
 * enqueues the list, in order, on the device's in-order queue: no routing,
 * no checks, no clSetKernelArg. clSetKernelArg captures values at enqueue,
 * so a node whose parameter struct changed (the optimisers' step constants)
 * has its arguments set again on its own kernels (refresh mode) without
 * waiting for the previous launch.
 *
 * The scratch and pack buffers a kernel was given may be replaced by larger
 * ones later (ocl_scratch, ocl_pack_buffer): the graph holds a reference to
 * each one its kernels use. Nodes whose launch enqueues other than kernels (random numbers drawn
 * on the host, fills, index checks read back, CLBlast's GEMM) are launched
 * eagerly in their place. */
#define _GNU_SOURCE /* strdup */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

/* A parameter struct larger than this is not snapshotted: its node is
 * launched eagerly on each run. */
#define OCL_GRAPH_MAX_PARAMS 4096u

typedef struct ocl_gentry {
    cl_kernel k;   /* the graph's own */
    int prog;
    char *name;
    cl_uint dims;  /* 0: not run (an empty launch) */
    size_t global[3], local[3];
} ocl_gentry;

typedef struct ocl_gnode {
    const ocl_family *f;
    gfp_graph_node n;
    bool live;
    int32_t run;           /* the fused run it belongs to (ocl_fuse.c), -1: none */
    uint32_t first, count; /* its entries */
    uint32_t params_size;
    unsigned char *snap;
} ocl_gnode;

struct ocl_graph {
    ocl_graph *next;
    ocl_gnode *nodes;
    uint32_t n_nodes;
    ocl_gentry *entries;
    uint32_t n_entries, cap_entries;
    cl_mem *mems; /* scratch buffers referenced by the kernels */
    uint32_t n_mems, cap_mems;
    uint32_t cursor, cursor_end; /* refresh: the node's entries */
    ocl_fuse_run *runs;           /* fused runs of consecutive nodes */
    ocl_fuse_step *steps;         /* their steps */
    uint32_t n_runs;
};

static _Atomic uint64_t launches;

uint64_t ocl_graph_launches(void) { return atomic_load(&launches); }

static gfp_status oom(void) {
    return pk_fail(GFP_ERR_OUT_OF_MEMORY, "opencl: graph_create: out of host memory");
}

static bool grow(void **arr, uint32_t *cap, uint32_t n, size_t sz) {
    if (n < *cap) return true;
    uint32_t c = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, (size_t)c * sz);
    if (!p) return false;
    *arr = p;
    *cap = c;
    return true;
}

/* ------------------------------------------------------------ recording hooks */
gfp_status ocl_graph_kernel(ocl_call *c, ocl_prog_id prog) {
    ocl_device *d = c->dev;
    if (d->refreshing) {
        ocl_graph *g = d->refreshing;
        const ocl_gentry *e = g->cursor < g->cursor_end ? &g->entries[g->cursor] : NULL;
        if (!e || e->prog != (int)prog || strcmp(e->name, c->kname))
            return pk_fail(GFP_ERR_INVALID, "opencl: graph_launch: the new parameters of a "
                           "node call for other kernels than recorded (%s); capture the graph "
                           "again", c->kname);
        c->entry = g->cursor++;
        c->k = e->k;
        return GFP_OK;
    }
    ocl_graph *g = d->recording;
    if (!grow((void **)&g->entries, &g->cap_entries, g->n_entries, sizeof *g->entries))
        return oom();
    char *name = strdup(c->kname);
    if (!name) return oom();
    cl_int err = CL_SUCCESS;
    cl_kernel k = ocl.CreateKernel(d->progs[prog], c->kname, &err);
    if (!k) {
        free(name);
        return ocl_cl_fail(err, c->op, "clCreateKernel (a graph's own)");
    }
    c->entry = g->n_entries;
    g->entries[g->n_entries++] = (ocl_gentry){.k = k, .prog = (int)prog, .name = name};
    c->k = k;
    return GFP_OK;
}

/* Holds m (the device's scratch or pack buffer, which the call's kernel
 * may use). */
static gfp_status hold_mem(ocl_graph *g, cl_mem m) {
    if (!m) return GFP_OK;
    for (uint32_t i = 0; i < g->n_mems; i++)
        if (g->mems[i] == m) return GFP_OK;
    if (!grow((void **)&g->mems, &g->cap_mems, g->n_mems, sizeof *g->mems)) return oom();
    cl_int err = ocl.RetainMemObject(m);
    if (err != CL_SUCCESS) return ocl_cl_fail(err, "graph", "clRetainMemObject (scratch)");
    g->mems[g->n_mems++] = m;
    return GFP_OK;
}

static gfp_status hold_scratch(ocl_device *d, ocl_graph *g) {
    gfp_status st = hold_mem(g, d->scratch.mem);
    return st == GFP_OK ? hold_mem(g, d->pack.mem) : st;
}

gfp_status ocl_graph_run(ocl_call *c, cl_uint dims, const size_t *global, const size_t *local) {
    ocl_device *d = c->dev;
    ocl_graph *g = d->recording ? d->recording : d->refreshing;
    ocl_gentry *e = &g->entries[c->entry];
    if (d->refreshing) {
        bool same = e->dims == dims;
        for (cl_uint i = 0; i < dims && same; i++)
            same = e->global[i] == global[i] && e->local[i] == local[i];
        if (!same)
            return pk_fail(GFP_ERR_INVALID, "opencl: graph_launch: the new parameters of a "
                           "node call for another geometry of %s than recorded; capture the "
                           "graph again", c->kname);
    } else {
        e->dims = dims;
        for (cl_uint i = 0; i < dims; i++) {
            e->global[i] = global[i];
            e->local[i] = local[i];
        }
    }
    return hold_scratch(d, g);
}

/* ------------------------------------------------------------ the slots */
static void graph_free(ocl_graph *g) {
    ocl_fuse_release(g->runs, g->n_runs);
    free(g->runs);
    free(g->steps);
    for (uint32_t i = 0; i < g->n_entries; i++) {
        ocl.ReleaseKernel(g->entries[i].k);
        free(g->entries[i].name);
    }
    for (uint32_t i = 0; i < g->n_mems; i++) ocl.ReleaseMemObject(g->mems[i]);
    for (uint32_t i = 0; i < g->n_nodes; i++) free(g->nodes[i].snap);
    free(g->nodes);
    free(g->entries);
    free(g->mems);
    free(g);
}

/* Nodes whose launch enqueues other than kernels, or gives its kernels
 * buffers of its own that it releases on return (the FFT's work arrays, the
 * f32 copies of 16-bit convolutions, pooling and norms): launched eagerly. */
static bool must_run_eagerly(const ocl_device *d, const ocl_family *f, const gfp_graph_node *n) {
    uint32_t op = n->op;
    bool widens = f->launch == ocl_conv_launch || f->launch == ocl_pool_launch ||
                  (f->launch == ocl_norm_launch && ocl_norm_widens(op));
    bool widened = widens && pk_widen_operands(n->inputs, n->n_inputs, n->outputs, n->n_outputs);
    return widened || f->launch == ocl_index_launch || f->launch == ocl_random_launch ||
           f->launch == ocl_fft_launch ||
           op == GFP_OP_FILL || (f->launch == ocl_matmul_launch && ocl_matmul_may_use_clblast(d));
}

/* Marks the maximal runs of consecutive fusable nodes (at most
 * OCL_FUSE_MAX_STEPS each) and builds their kernels. Without memory, or
 * when the driver cannot build them, the nodes run one by one: the same
 * results (a failed build is logged). */
static void fuse(ocl_device *d, ocl_graph *g) {
    uint32_t n = g->n_nodes;
    if (n < 2 || !ocl_fuse_enabled()) return;
    g->steps = calloc(n, sizeof *g->steps);
    g->runs = calloc(n / 2, sizeof *g->runs);
    if (!g->steps || !g->runs) goto none;
    for (uint32_t i = 0; i < n;) {
        ocl_gnode *gn = &g->nodes[i];
        if (gn->live || gn->f->launch != ocl_elementwise_launch ||
            !ocl_fuse_step_of(&gn->n, &g->steps[i])) {
            i++;
            continue;
        }
        uint32_t j = i + 1;
        while (j < n && !g->nodes[j].live && g->nodes[j].f->launch == ocl_elementwise_launch &&
               ocl_fuse_step_of(&g->nodes[j].n, &g->steps[j]) &&
               ocl_fuse_joins(&g->steps[i], j - i, &g->steps[j]))
            j++;
        if (j - i >= 2) {
            ocl_fuse_run *r = &g->runs[g->n_runs];
            r->count = j - i;
            r->steps = &g->steps[i];
            for (uint32_t k = i; k < j; k++) g->nodes[k].run = (int32_t)g->n_runs;
            g->n_runs++;
        }
        i = j;
    }
    if (!g->n_runs) goto none;
    if (ocl_fuse_build(d, g->runs, g->n_runs) == GFP_OK) return;
    pk_log(GFP_LOG_WARN, "%s; the graph's elementwise launches run one by one", pk_last_message());
    for (uint32_t i = 0; i < n; i++) g->nodes[i].run = -1;
none:
    free(g->runs);
    free(g->steps);
    g->runs = NULL;
    g->steps = NULL;
    g->n_runs = 0;
}

gfp_status ocl_graph_create(void *device, const gfp_graph_node *nodes, uint32_t n_nodes,
                            void **graph) {
    ocl_device *d = device;
    if (!graph) return pk_fail(GFP_ERR_INVALID, "graph_create: graph is NULL");
    *graph = NULL;
    if (!d) return pk_fail(GFP_ERR_INVALID, "graph_create: device is NULL");
    if (!nodes || !n_nodes) return pk_fail(GFP_ERR_INVALID, "graph_create: no nodes");
    if (d->recording || d->refreshing)
        return pk_fail(GFP_ERR_INTERNAL, "graph_create: called while a graph is recorded");
    ocl_graph *g = calloc(1, sizeof *g);
    if (!g || !(g->nodes = calloc(n_nodes, sizeof *g->nodes))) {
        free(g);
        return oom();
    }
    g->n_nodes = n_nodes;
    gfp_status st = GFP_OK;
    for (uint32_t i = 0; i < n_nodes && st == GFP_OK; i++) {
        const gfp_graph_node *n = &nodes[i];
        ocl_gnode *gn = &g->nodes[i];
        if (n->struct_size < GFP_GRAPH_NODE_SIZE_V1_3) {
            st = pk_fail(GFP_ERR_INVALID, "graph_create: node %u has struct_size %u", i,
                         n->struct_size);
            break;
        }
        gn->f = ocl_route(d, n->op, n->inputs, n->n_inputs, n->outputs, n->n_outputs,
                          n->params, &st);
        if (!gn->f) break;
        gn->n = *n;
        gn->run = -1;
        gn->live = must_run_eagerly(d, gn->f, n);
        if (n->params && !gn->live) {
            uint32_t size;
            memcpy(&size, n->params, sizeof size); /* every parameter struct starts with it */
            if (size < sizeof size || size > OCL_GRAPH_MAX_PARAMS) {
                gn->live = true;
            } else if (!(gn->snap = malloc(size))) {
                st = oom();
                break;
            } else {
                memcpy(gn->snap, n->params, size);
                gn->params_size = size;
            }
        }
    }
    if (st == GFP_OK) fuse(d, g);
    d->recording = g;
    for (uint32_t i = 0; i < n_nodes && st == GFP_OK; i++) {
        ocl_gnode *gn = &g->nodes[i];
        if (gn->live || gn->run >= 0) continue;
        const gfp_graph_node *n = &gn->n;
        gn->first = g->n_entries;
        st = gn->f->launch(d, n->op, n->inputs, n->n_inputs, n->outputs, n->n_outputs,
                           n->params);
        gn->count = g->n_entries - gn->first;
    }
    d->recording = NULL;
    if (st != GFP_OK) {
        graph_free(g);
        return st;
    }
    g->next = d->graphs;
    d->graphs = g;
    *graph = g;
    return GFP_OK;
}

/* Sets again the arguments of the nodes whose parameter structs moved. */
static gfp_status refresh(ocl_device *d, ocl_graph *g) {
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        ocl_gnode *gn = &g->nodes[i];
        if (gn->run >= 0 || !gn->snap || !memcmp(gn->snap, gn->n.params, gn->params_size))
            continue; /* a fused run sets its scalars itself */
        memcpy(gn->snap, gn->n.params, gn->params_size);
        const gfp_graph_node *n = &gn->n;
        gfp_status st = GFP_OK;
        const ocl_family *f = ocl_route(d, n->op, n->inputs, n->n_inputs, n->outputs,
                                        n->n_outputs, n->params, &st);
        if (f) {
            g->cursor = gn->first;
            g->cursor_end = gn->first + gn->count;
            d->refreshing = g;
            st = f->launch(d, n->op, n->inputs, n->n_inputs, n->outputs, n->n_outputs,
                           n->params);
            d->refreshing = NULL;
            if (st == GFP_OK && g->cursor != g->cursor_end)
                st = pk_fail(GFP_ERR_INVALID, "opencl: graph_launch: the new parameters of node "
                             "%u (%s) call for fewer kernels than recorded; capture the graph "
                             "again", i, pk_op_name(n->op));
        }
        if (st != GFP_OK) {
            memset(gn->snap, 0, gn->params_size); /* the next launch tries again */
            return st;
        }
    }
    return GFP_OK;
}

gfp_status ocl_graph_launch(void *device, void *graph) {
    ocl_device *d = device;
    ocl_graph *g = graph;
    if (!d || !g) return pk_fail(GFP_ERR_INVALID, "graph_launch: device or graph is NULL");
    gfp_status st = refresh(d, g);
    for (uint32_t i = 0; i < g->n_nodes && st == GFP_OK; i++) {
        const ocl_gnode *gn = &g->nodes[i];
        if (gn->run >= 0) {
            ocl_fuse_run *r = &g->runs[gn->run];
            st = ocl_fuse_enqueue(d, r);
            i += r->count - 1;
            continue;
        }
        if (gn->live) {
            const gfp_graph_node *n = &gn->n;
            st = gn->f->launch(d, n->op, n->inputs, n->n_inputs, n->outputs, n->n_outputs,
                               n->params);
            continue;
        }
        for (uint32_t k = gn->first; k < gn->first + gn->count; k++) {
            const ocl_gentry *e = &g->entries[k];
            if (!e->dims) continue;
            const char *why;
            cl_int err = ocl_fault_launch(d, &why)
                             ? CL_OUT_OF_RESOURCES
                             : ocl.EnqueueNDRangeKernel(d->queue, e->k, e->dims, NULL, e->global,
                                                        e->local, 0, NULL, NULL);
            if (err != CL_SUCCESS) {
                char what[160];
                snprintf(what, sizeof what, "clEnqueueNDRangeKernel (graph)%s", why);
                st = ocl_cl_fail(err, pk_op_name(gn->n.op), what);
                break;
            }
        }
    }
    ocl.Flush(d->queue);
    if (st == GFP_OK) atomic_fetch_add(&launches, 1);
    return st;
}

void ocl_graph_destroy(void *device, void *graph) {
    ocl_device *d = device;
    ocl_graph *g = graph;
    if (!d || !g) return;
    for (ocl_graph **p = &d->graphs; *p; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            break;
        }
    graph_free(g);
}

void ocl_graphs_release(ocl_device *d) {
    while (d->graphs) ocl_graph_destroy(d, d->graphs);
}
