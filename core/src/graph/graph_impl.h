/* SPDX-License-Identifier: BSD-3-Clause */
/* graph_impl.h — the recorded graph, shared by capture.c and replay.c. */
#ifndef GRAFT_GRAPH_IMPL_H
#define GRAFT_GRAPH_IMPL_H

#include "graph_internal.h"

typedef enum gnode_kind {
    GN_LAUNCH, /* a kernel: launch(handle, op, pin, n_in, pout, n_out, params) */
    GN_WRITE,  /* host -> device from data (a constant) or from src (live host memory) */
    GN_READ,   /* device -> host memory that lives as long as the graph (fallbacks) */
    GN_COPY,   /* device -> device */
    GN_FILL,   /* a byte pattern */
    GN_HOST,   /* a host step: fn(ctx) */
} gnode_kind;

/* One prepared node: what replay passes, computed at capture. */
typedef struct gnode {
    uint8_t kind;
    uint8_t n_in, n_out;
    uint32_t op;
    gf_device *dev;
    /* The first launch of a run its plugin took whole (graph_create): the
     * plugin's graph, the run's length and the nodes handed over. */
    void *pgraph;
    uint32_t seg_len;
    gfp_graph_node *seg_nodes;
    const gfp_tensor **pin; /* n_in + n_out pointers into descs (inputs may be NULL) */
    gfp_tensor *descs;
    void *params;     /* the op's parameter struct (a copy), or NULL */
    uint64_t rng_n;   /* RANDOM: counters drawn per replay (0: none) */
    /* transfers */
    gfp_buffer buf, buf2;
    uint64_t off, off2, n;
    void *host;       /* WRITE: data or live source; READ: destination */
    /* FILL: the pattern, in memory of its own (a host step rewrites it
     * through a pointer taken at capture, while the node array still
     * grows). WRITE: pattern_size 1 when host is a copy the node owns. */
    unsigned char *pattern;
    uint32_t pattern_size;
    /* host steps */
    gf__graph_host_fn fn;
    void *ctx;
    void (*free_ctx)(void *);
} gnode;

/* An input tensor as the graph saw it: replay checks it is still there. */
typedef struct ginput {
    gf_tensor *t; /* a reference */
    gf_storage *storage;
    gf_dtype dtype;
    int rank;
    int64_t offset;
    int64_t sizes[GF_MAX_RANK], strides[GF_MAX_RANK];
} ginput;

/* Memory made outside the region that it uses: kept alive by the graph;
 * replay refuses to run once the graph is its only holder. */
typedef struct gext {
    gf_storage *s; /* a reference */
    char desc[64]; /* what first used it: "f32[3, 4]" */
} gext;

/* Pointer -> flag map (open addressing; keys never removed). */
typedef struct ptrset {
    const void **keys;
    uint8_t *vals;
    size_t cap, n;
} ptrset;

struct gf_capture {
    uint64_t id;
    gf_device *dev;
    gf_graph_pool *pool;
    gnode *nodes;
    size_t n_nodes, cap_nodes;
    ginput *inputs;
    size_t n_inputs, cap_inputs;
    gext *ext;        /* external storages the graph keeps alive (references) */
    size_t n_ext, cap_ext;
    ptrset buffers;   /* buffer -> 1 (known: pool or kept storage) */
    ptrset tensors;   /* input tensors already recorded */
    void **scratch;
    size_t n_scratch, cap_scratch;
    bool failed;
    gf_status fail_status;
    char fail_msg[1024];
    pthread_mutex_t replay_lock;
};

/* gf_graph is the finished capture. */
struct gf_graph {
    gf_capture c;
};

/* Frees what a capture holds (capture.c). */
void gf__capture_free(gf_capture *c);
/* Hands runs of launches to plugins that take them whole (replay.c). */
void gf__graph_prepare(gf_capture *c);
/* Gives the plugins' graphs back (replay.c). */
void gf__graph_unprepare(gf_capture *c);

#endif
