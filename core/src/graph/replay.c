/* SPDX-License-Identifier: BSD-3-Clause */
/* replay.c — running a captured graph again, and its lifetime.
 *
 * The loop is the whole cost: for a launch, the Philox offsets of a random
 * op are drawn anew, then dispatch's prepared launch passes the descriptors
 * and parameters recorded at capture straight to the plugin (with the
 * device's call lock when it is not thread-safe). A run of launches that a
 * plugin took whole at capture end (its graph slots) is one call. No
 * allocation, no capability query, no reference counting, no autograd. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"
#include "profiler_internal.h"

static const char *shape_of(const int64_t *sizes, int rank, char *buf, size_t len) {
    return gf__shape_str(sizes, rank, buf, len);
}

/* The inputs must be where the launches were prepared for. */
static gf_status check_inputs(const gf_capture *c) {
    for (size_t i = 0; i < c->n_inputs; i++) {
        const ginput *in = &c->inputs[i];
        const gf_tensor *t = in->t;
        char a[200], b[200];
        if (atomic_load_explicit(&t->refcount, memory_order_acquire) <= 1)
            return gf__error(GF_ERR_INVALID, "gf_graph_replay: input %zu of the graph (%s%s, made "
                             "outside the captured region) was released by everything but the "
                             "graph; replaying would read memory its owner gave up. Keep the "
                             "inputs alive while the graph is replayed, or capture again",
                             i, gf_dtype_name(in->dtype),
                             shape_of(in->sizes, in->rank, a, sizeof a));
        bool same = t->storage == in->storage && t->dtype == in->dtype && t->rank == in->rank &&
                    t->offset == in->offset &&
                    !memcmp(t->sizes, in->sizes, sizeof(int64_t) * (size_t)in->rank) &&
                    !memcmp(t->strides, in->strides, sizeof(int64_t) * (size_t)in->rank);
        if (!same)
            return gf__error(GF_ERR_INVALID, "gf_graph_replay: input %zu of the graph changed "
                             "since capture (was %s%s, is now %s%s%s); a graph replays the "
                             "shapes and memory it was captured with. Write new values into "
                             "the input in place (gf_copy_), or capture a new graph for the "
                             "new shape", i, gf_dtype_name(in->dtype),
                             shape_of(in->sizes, in->rank, a, sizeof a), gf_dtype_name(t->dtype),
                             shape_of(t->sizes, t->rank, b, sizeof b),
                             t->storage != in->storage ? " in other memory" : "");
    }
    for (size_t i = 0; i < c->n_ext; i++) {
        const gext *e = &c->ext[i];
        if (atomic_load_explicit(&e->s->refcount, memory_order_acquire) <= 1)
            return gf__error(GF_ERR_INVALID, "gf_graph_replay: input %zu of the graph (%s on %s, "
                             "made outside the captured region) was released by everything but "
                             "the graph; replaying would compute from memory its owner gave up. "
                             "Keep the inputs alive while the graph is replayed, or capture "
                             "again", i, e->desc, e->s->device->spec);
    }
    return GF_OK;
}

/* Draws the Philox offsets of the random ops in nodes[first, first + n). */
static void draw_offsets(gnode *nodes, size_t first, size_t n) {
    for (size_t k = first; k < first + n; k++)
        if (nodes[k].rng_n) {
            gfp_random_params *p = nodes[k].params;
            gf__rng_next(nodes[k].rng_n, &p->seed, &p->offset);
        }
}

static gf_status run_nodes(gf_capture *c) {
    gnode *nodes = c->nodes;
    size_t count = c->n_nodes;
    for (size_t i = 0; i < count; i++) {
        gnode *n = &nodes[i];
        gf_status s = GF_OK;
        switch (n->kind) {
        case GN_LAUNCH:
            if (n->pgraph) { /* the plugin runs the whole run */
                draw_offsets(nodes, i, n->seg_len);
                s = gf__dev_graph_launch(n->dev, n->pgraph);
                i += n->seg_len - 1;
                break;
            }
            if (n->rng_n) draw_offsets(nodes, i, 1);
            s = gf__dev_launch_prepared(n->dev, n->op, n->pin, n->n_in, n->pin + n->n_in,
                                        n->n_out, n->params);
            if (__builtin_expect(s == GF_OK, 1)) continue;
            break;
        case GN_WRITE: s = gf__dev_write(n->dev, n->buf, n->off, n->host, n->n); break;
        case GN_READ: s = gf__dev_read(n->dev, n->buf, n->off, n->host, n->n); break;
        case GN_COPY: s = gf__dev_copy(n->dev, n->buf, n->off, n->buf2, n->off2, n->n); break;
        case GN_FILL:
            s = gf__dev_fill(n->dev, n->buf, n->off, n->n, n->pattern, n->pattern_size);
            break;
        case GN_HOST: s = n->fn(n->ctx); break;
        }
        if (s != GF_OK) {
            char msg[900];
            snprintf(msg, sizeof msg, "%s", gf__message());
            return gf__error(s, "gf_graph_replay: node %zu failed: %s", i, msg);
        }
    }
    return GF_OK;
}

/* ------------------------------------------------------------ plugin graphs */
/* A run: consecutive launches on one device whose plugin has the graph slots. */
static size_t run_length(const gnode *nodes, size_t i, size_t count) {
    const gnode *n = &nodes[i];
    if (n->kind != GN_LAUNCH || !gf__dev_has_graphs(n->dev)) return 0;
    size_t k = i + 1;
    while (k < count && nodes[k].kind == GN_LAUNCH && nodes[k].dev == n->dev) k++;
    return k - i;
}

void gf__graph_prepare(gf_capture *c) {
    for (size_t i = 0; i < c->n_nodes;) {
        size_t len = run_length(c->nodes, i, c->n_nodes);
        if (len < 2 || len > UINT32_MAX) {
            i += len ? len : 1;
            continue;
        }
        gfp_graph_node *gn = calloc(len, sizeof *gn);
        if (!gn) return; /* launch by launch */
        for (size_t k = 0; k < len; k++) {
            const gnode *n = &c->nodes[i + k];
            gn[k] = (gfp_graph_node){.struct_size = (uint32_t)sizeof *gn, .op = n->op,
                                     .n_inputs = n->n_in, .n_outputs = n->n_out,
                                     .inputs = n->pin, .outputs = n->pin + n->n_in,
                                     .params = n->params};
        }
        gnode *first = &c->nodes[i];
        void *pg = NULL;
        gf_status s = gf__dev_graph_create(first->dev, gn, (uint32_t)len, &pg);
        if (s == GF_OK) {
            first->pgraph = pg;
            first->seg_len = (uint32_t)len;
            first->seg_nodes = gn;
        } else {
            free(gn);
            if (s != GF_ERR_UNSUPPORTED) {
                /* Not fatal: the launches replay one by one. */
                gf__log(GFP_LOG_WARN, "graph capture: %s; replaying launch by launch",
                        gf__message());
                gf_clear_error();
            }
        }
        i += len;
    }
}

void gf__graph_unprepare(gf_capture *c) {
    for (size_t i = 0; i < c->n_nodes; i++) {
        gnode *n = &c->nodes[i];
        if (!n->pgraph) continue;
        gf__dev_graph_destroy(n->dev, n->pgraph);
        free(n->seg_nodes);
        n->pgraph = NULL;
        n->seg_nodes = NULL;
    }
}

gf_status gf_graph_replay(gf_graph *g) {
    if (!g) return gf__error(GF_ERR_INVALID, "gf_graph_replay: the graph is NULL");
    if (gf_graph_capturing())
        return gf__graph_refuse(GF_ERR_INVALID, "gf_graph_replay: called inside a captured "
                                "region; a graph's replay cannot be captured into another "
                                "(end the capture first)");
    gf_capture *c = &g->c;
    pthread_mutex_lock(&c->replay_lock);
    gf_status s = check_inputs(c);
    gf__plugin_message_clear();
    if (s == GF_OK) {
        uint64_t t0 = gf__prof_on() ? gf__prof_span_begin("graph", "gf_graph_replay") : 0;
        s = run_nodes(c);
        if (t0) gf__prof_span_end("graph", "gf_graph_replay", t0);
    }
    pthread_mutex_unlock(&c->replay_lock);
    return s;
}

size_t gf_graph_node_count(const gf_graph *g) { return g ? g->c.n_nodes : 0; }

size_t gf_graph_input_count(const gf_graph *g) { return g ? g->c.n_ext : 0; }

uint64_t gf_graph_pool_bytes(const gf_graph *g) { return g ? gf__pool_bytes(g->c.pool) : 0; }

void gf_graph_destroy(gf_graph *g) {
    if (!g) return;
    pthread_mutex_lock(&g->c.replay_lock);
    pthread_mutex_unlock(&g->c.replay_lock);
    gf__capture_free(&g->c);
    free(g);
}
