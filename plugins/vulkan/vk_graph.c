/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_graph.c — captured graphs: launches recorded once, resubmitted.
 *
 * graph_create runs each node's family once with the device in recording
 * mode: vkp_dispatch_run then allocates its descriptor set from the graph's
 * segment, writes it and the params words once, and records the barrier and
 * the dispatch into the segment's command buffer (vk_batch.c hands the
 * segment out instead of the batch ring). A segment is a vkp_batch that is
 * never reset; a new one begins when its descriptor pool or params buffer is
 * full. Scratch buffers a family allocates and frees inside a launch are
 * kept by the graph (the recorded commands use them on every run).
 *
 * graph_launch waits for the graph's previous run, rewrites the params words
 * of the nodes whose parameter structs changed (refresh mode: the family
 * runs again, its dispatches are matched one to one with the recorded ones
 * and only their params words are written), then submits the segments.
 * Nodes whose launch must read back to the host (the index family checks
 * its indices on the host) are not recorded: they are launched eagerly
 * between the segments, in their place.
 *
 * Runs of consecutive f32 unary and binary nodes are recorded as one
 * dispatch each (vk_fuse.c; GRAFT_VULKAN_FUSE=0 records them one by one). */
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

/* Descriptor sets and params bytes of one segment. */
#define VKP_GRAPH_SETS 2048u
#define VKP_GRAPH_PARAMS_BYTES (512u * 1024u)
/* A parameter struct larger than this is not snapshotted: its node is
 * launched eagerly on each run. */
#define VKP_GRAPH_MAX_PARAMS 4096u

/* A recorded dispatch: where its params words live. */
typedef struct vkp_gdisp {
    vkp_batch *seg;
    uint64_t offset;
    uint32_t shader;
    uint32_t n_params;
    uint32_t spec[VKP_MAX_SPEC]; /* the pipeline and the geometry recorded */
    uint32_t groups[3];
} vkp_gdisp;

typedef struct vkp_gnode {
    const vkp_family *f;
    gfp_graph_node n;
    bool live; /* launched eagerly on each run */
    uint32_t first_disp, n_disp;
    uint32_t first_scratch, n_scratch;
    uint32_t params_size;
    unsigned char *snap; /* the parameter struct as last recorded or refreshed */
    /* in a fused run (vk_fuse.c) of run_len >= 2 nodes starting at run_head:
     * the head records the run's one dispatch, the others none */
    uint32_t run_head, run_len;
} vkp_gnode;

/* What a run does, in order: submit a segment, or launch a live node. */
typedef struct vkp_gitem {
    bool live;
    uint32_t index; /* into segs or nodes */
} vkp_gitem;

struct vkp_graph {
    vkp_graph *next; /* the device's list of live graphs */
    vkp_gnode *nodes;
    uint32_t n_nodes;
    vkp_batch **segs;
    uint32_t n_segs, cap_segs;
    vkp_batch *open; /* the segment being recorded */
    vkp_gitem *items;
    uint32_t n_items, cap_items;
    vkp_gdisp *disp;
    uint32_t n_disp, cap_disp;
    gfp_buffer *scratch;
    uint32_t n_scratch, cap_scratch;
    /* refresh mode: the node's recorded dispatches and scratch, in order */
    uint32_t cursor, cursor_end, scursor, scursor_end;
};

static gfp_status oom(void) {
    return pk_fail(GFP_ERR_OUT_OF_MEMORY, "vulkan: graph_create: out of host memory");
}

/* Grows *arr (of *cap elements of size sz) to hold n + 1. */
static bool grow(void **arr, uint32_t *cap, uint32_t n, size_t sz) {
    if (n < *cap) return true;
    uint32_t c = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, (size_t)c * sz);
    if (!p) return false;
    *arr = p;
    *cap = c;
    return true;
}

/* ------------------------------------------------------------ segments */
static void seg_free(vkp_device *d, vkp_batch *b) {
    if (!b) return;
    if (b->submitted) vk.WaitForFences(d->dev, 1, &b->fence, VK_TRUE, UINT64_MAX);
    if (b->recording) vk.EndCommandBuffer(b->cb);
    if (b->cb) vk.FreeCommandBuffers(d->dev, d->cmd_pool, 1, &b->cb);
    if (b->fence) vk.DestroyFence(d->dev, b->fence, NULL);
    if (b->pool) vk.DestroyDescriptorPool(d->dev, b->pool, NULL);
    vkp_hostbuf_destroy(d, &b->params);
    free(b);
}

static gfp_status seg_begin(vkp_device *d, vkp_graph *g) {
    if (!grow((void **)&g->segs, &g->cap_segs, g->n_segs, sizeof *g->segs) ||
        !grow((void **)&g->items, &g->cap_items, g->n_items, sizeof *g->items))
        return oom();
    vkp_batch *b = calloc(1, sizeof *b);
    if (!b) return oom();
    g->segs[g->n_segs++] = b; /* freed with the graph from here on */
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = d->cmd_pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    VkResult r = vk.AllocateCommandBuffers(d->dev, &cai, &b->cb);
    if (r != VK_SUCCESS) {
        b->cb = VK_NULL_HANDLE;
        return vkp_fail_vk(r, "vkAllocateCommandBuffers");
    }
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = vk.CreateFence(d->dev, &fci, NULL, &b->fence)) != VK_SUCCESS) {
        b->fence = VK_NULL_HANDLE;
        return vkp_fail_vk(r, "vkCreateFence");
    }
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                               .descriptorCount = VKP_GRAPH_SETS * VKP_MAX_BINDINGS};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = VKP_GRAPH_SETS,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &ps};
    if ((r = vk.CreateDescriptorPool(d->dev, &dpi, NULL, &b->pool)) != VK_SUCCESS) {
        b->pool = VK_NULL_HANDLE;
        return vkp_fail_vk(r, "vkCreateDescriptorPool");
    }
    gfp_status st = vkp_hostbuf_create(d, VKP_GRAPH_PARAMS_BYTES, &b->params);
    if (st != GFP_OK) return st;
    /* Resubmitted as it is: no one-time-submit flag. */
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    if ((r = vk.BeginCommandBuffer(b->cb, &bi)) != VK_SUCCESS)
        return vkp_fail_vk(r, "vkBeginCommandBuffer");
    b->recording = true;
    g->open = b;
    g->items[g->n_items++] = (vkp_gitem){.live = false, .index = g->n_segs - 1};
    return GFP_OK;
}

static gfp_status seg_end(vkp_graph *g) {
    vkp_batch *b = g->open;
    if (!b) return GFP_OK;
    g->open = NULL;
    /* The device's writes become visible to the host after the fence, as
     * at the end of an eager batch. */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vk.CmdPipelineBarrier(b->cb,
                          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    VkResult r = vk.EndCommandBuffer(b->cb);
    b->recording = false;
    return r == VK_SUCCESS ? GFP_OK : vkp_fail_vk(r, "vkEndCommandBuffer");
}

/* Waits for a submitted segment. */
static gfp_status seg_retire(vkp_device *d, vkp_batch *b) {
    if (!b->submitted) return GFP_OK;
    VkResult r = vk.WaitForFences(d->dev, 1, &b->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkWaitForFences");
    vkp_register_at_exit(VKP_AT_EXIT_WAIT);
    vk.ResetFences(d->dev, 1, &b->fence);
    b->submitted = false;
    return GFP_OK;
}

static gfp_status graph_retire(vkp_device *d, vkp_graph *g) {
    gfp_status st = GFP_OK;
    for (uint32_t i = 0; i < g->n_segs; i++) {
        gfp_status s2 = seg_retire(d, g->segs[i]);
        if (st == GFP_OK) st = s2;
    }
    return st;
}

/* ------------------------------------------------------------ recording hooks */
gfp_status vkp_graph_params(vkp_device *d, uint32_t bytes, vkp_batch **out, uint64_t *offset) {
    vkp_graph *g = d->recording;
    uint64_t need = ((uint64_t)bytes + d->align - 1) & ~(d->align - 1);
    for (int attempt = 0; attempt < 2; attempt++) {
        gfp_status st = GFP_OK;
        if (!g->open && (st = seg_begin(d, g)) != GFP_OK) return st;
        vkp_batch *b = g->open;
        if (!bytes) { /* a transfer: the segment only */
            *out = b;
            *offset = 0;
            return GFP_OK;
        }
        if (b->params_used + need <= b->params.size && b->sets_used < VKP_GRAPH_SETS) {
            *offset = b->params_used;
            b->params_used += need;
            *out = b;
            return GFP_OK;
        }
        /* Full: the rest of the run goes to a new segment (the barrier in
         * front of every dispatch orders it after this one). */
        if ((st = seg_end(g)) != GFP_OK) return st;
    }
    return pk_fail(GFP_ERR_INTERNAL, "vulkan: %u bytes of parameters do not fit a graph segment",
                   (unsigned)bytes);
}

gfp_status vkp_graph_dispatched(vkp_device *d, const vkp_dispatch *dp, uint64_t poff) {
    vkp_graph *g = d->recording;
    if (!grow((void **)&g->disp, &g->cap_disp, g->n_disp, sizeof *g->disp)) return oom();
    vkp_gdisp *e = &g->disp[g->n_disp++];
    *e = (vkp_gdisp){.seg = g->open, .offset = poff, .shader = dp->shader,
                     .n_params = dp->n_params};
    memcpy(e->spec, dp->spec, sizeof e->spec);
    memcpy(e->groups, dp->groups, sizeof e->groups);
    return GFP_OK;
}

gfp_status vkp_graph_refresh(vkp_device *d, const vkp_dispatch *dp) {
    vkp_graph *g = d->refreshing;
    const vkp_gdisp *c = g->cursor < g->cursor_end ? &g->disp[g->cursor] : NULL;
    if (!c || c->shader != dp->shader || c->n_params != dp->n_params ||
        memcmp(c->spec, dp->spec, sizeof c->spec) || memcmp(c->groups, dp->groups, sizeof c->groups))
        return pk_fail(GFP_ERR_INVALID, "vulkan: graph_launch: the new parameters of a node "
                       "call for other dispatches than recorded (shader %s, its constants or "
                       "its geometry); capture the graph again", vkp_shader_names[dp->shader]);
    const vkp_gdisp *e = &g->disp[g->cursor++];
    if (dp->n_params) memcpy((char *)e->seg->params.map + e->offset, dp->params, dp->n_params * 4u);
    return GFP_OK;
}

gfp_status vkp_graph_note_alloc(vkp_device *d, gfp_buffer buffer) {
    vkp_graph *g = d->recording;
    if (!grow((void **)&g->scratch, &g->cap_scratch, g->n_scratch, sizeof *g->scratch))
        return oom();
    g->scratch[g->n_scratch++] = buffer;
    return GFP_OK;
}

bool vkp_graph_keep(vkp_device *d, gfp_buffer buffer) {
    vkp_graph *g = d->recording;
    for (uint32_t i = g->n_scratch; i-- > 0;)
        if (g->scratch[i] == buffer) return true;
    return false;
}

gfp_status vkp_graph_scratch(vkp_device *d, uint64_t nbytes, gfp_buffer *buffer) {
    vkp_graph *g = d->refreshing;
    if (g->scursor >= g->scursor_end ||
        ((const vkp_buf *)g->scratch[g->scursor])->size < nbytes)
        return pk_fail(GFP_ERR_INVALID, "vulkan: graph_launch: the new parameters of a node "
                       "call for other scratch memory than recorded; capture the graph again");
    *buffer = g->scratch[g->scursor++];
    return GFP_OK;
}

gfp_status vkp_graph_wait(vkp_device *d) {
    gfp_status st = GFP_OK;
    for (vkp_graph *g = d->graphs; g; g = g->next) {
        gfp_status s2 = graph_retire(d, g);
        if (st == GFP_OK) st = s2;
    }
    return st;
}

bool vkp_graph_idle(vkp_device *d) {
    for (vkp_graph *g = d->graphs; g; g = g->next)
        for (uint32_t i = 0; i < g->n_segs; i++) {
            vkp_batch *b = g->segs[i];
            if (!b->submitted) continue;
            if (vk.GetFenceStatus(d->dev, b->fence) != VK_SUCCESS) return false;
            seg_retire(d, b);
        }
    return true;
}

/* ------------------------------------------------------------ the slots */
static void graph_free(vkp_device *d, vkp_graph *g) {
    for (uint32_t i = 0; i < g->n_segs; i++) seg_free(d, g->segs[i]);
    for (uint32_t i = 0; i < g->n_scratch; i++) vkp_buffer_free(d, g->scratch[i]);
    for (uint32_t i = 0; i < g->n_nodes; i++) free(g->nodes[i].snap);
    free(g->nodes);
    free(g->segs);
    free(g->items);
    free(g->disp);
    free(g->scratch);
    free(g);
}

/* ------------------------------------------------------------ fused runs */
static _Atomic uint64_t fused_runs, fused_launches;

uint64_t vkp_fused_runs(void) { return atomic_load(&fused_runs); }
uint64_t vkp_fused_launches(void) { return atomic_load(&fused_launches); }

/* Marks the maximal runs of two or more consecutive nodes that vk_fuse.c
 * can run as one dispatch. */
static void plan_fusion(vkp_graph *g) {
    vkp_fuse_step steps[VKP_FUSE_MAX_STEPS];
    for (uint32_t i = 0; i < g->n_nodes;) {
        uint32_t count = 0;
        for (uint32_t k = i; k < g->n_nodes; k++) {
            const vkp_gnode *gn = &g->nodes[k];
            vkp_fuse_step st;
            if (gn->live || gn->f->launch != vkp_elementwise_launch ||
                !vkp_fuse_step_of(&gn->n, &st) || (count && !vkp_fuse_joins(steps, count, &st)))
                break;
            steps[count++] = st;
        }
        if (count < 2) {
            i++;
            continue;
        }
        for (uint32_t k = i; k < i + count; k++) {
            g->nodes[k].run_head = i;
            g->nodes[k].run_len = count;
        }
        atomic_fetch_add(&fused_runs, 1);
        atomic_fetch_add(&fused_launches, count);
        i += count;
    }
}

/* The run starting at node head as one dispatch: recorded, or (refreshing)
 * its program rewritten from the nodes' current parameters. */
static gfp_status fuse_run(vkp_device *d, vkp_graph *g, uint32_t head) {
    vkp_fuse_step steps[VKP_FUSE_MAX_STEPS];
    uint32_t len = g->nodes[head].run_len;
    for (uint32_t i = 0; i < len; i++)
        if (!vkp_fuse_step_of(&g->nodes[head + i].n, &steps[i]))
            return pk_fail(GFP_ERR_INVALID, "vulkan: graph_launch: the new parameters of node "
                           "%u (%s) take it out of its fused run; capture the graph again",
                           head + i, pk_op_name(g->nodes[head + i].n.op));
    return vkp_fuse_dispatch(d, steps, len);
}

/* Records node k (recording mode is on). */
static gfp_status record_node(vkp_device *d, vkp_graph *g, uint32_t k) {
    vkp_gnode *gn = &g->nodes[k];
    const gfp_graph_node *n = &gn->n;
    if (gn->run_len >= 2) {
        gn->first_disp = g->n_disp;
        gn->first_scratch = g->n_scratch;
        gfp_status st = gn->run_head == k ? fuse_run(d, g, k) : GFP_OK;
        gn->n_disp = g->n_disp - gn->first_disp;
        return st;
    }
    if (gn->live) {
        gfp_status st = seg_end(g);
        if (st != GFP_OK) return st;
        if (!grow((void **)&g->items, &g->cap_items, g->n_items, sizeof *g->items)) return oom();
        g->items[g->n_items++] = (vkp_gitem){.live = true, .index = k};
        return GFP_OK;
    }
    gn->first_disp = g->n_disp;
    gn->first_scratch = g->n_scratch;
    gfp_status st = gn->f->launch(d, n->op, n->inputs, n->n_inputs, n->outputs, n->n_outputs,
                                  n->params);
    gn->n_disp = g->n_disp - gn->first_disp;
    gn->n_scratch = g->n_scratch - gn->first_scratch;
    return st;
}

gfp_status vkp_graph_create(void *device, const gfp_graph_node *nodes, uint32_t n_nodes,
                            void **graph) {
    vkp_device *d = device;
    if (!graph) return pk_fail(GFP_ERR_INVALID, "graph_create: graph is NULL");
    *graph = NULL;
    if (!d) return pk_fail(GFP_ERR_INVALID, "graph_create: device is NULL");
    if (!nodes || !n_nodes) return pk_fail(GFP_ERR_INVALID, "graph_create: no nodes");
    if (atomic_load(&vkp_exiting)) return vkp_exiting_error("graph_create");
    if (d->recording || d->refreshing)
        return pk_fail(GFP_ERR_INTERNAL, "graph_create: called while a graph is recorded");
    vkp_graph *g = calloc(1, sizeof *g);
    if (!g || !(g->nodes = calloc(n_nodes, sizeof *g->nodes))) {
        free(g);
        return oom();
    }
    g->n_nodes = n_nodes;
    gfp_status st = GFP_OK;
    for (uint32_t i = 0; i < n_nodes && st == GFP_OK; i++) {
        const gfp_graph_node *n = &nodes[i];
        vkp_gnode *gn = &g->nodes[i];
        if (n->struct_size < GFP_GRAPH_NODE_SIZE_V1_3) {
            st = pk_fail(GFP_ERR_INVALID, "graph_create: node %u has struct_size %u", i,
                         n->struct_size);
            break;
        }
        gn->f = vkp_route(d, n->op, n->inputs, n->n_inputs, n->outputs, n->n_outputs,
                          n->params, &st);
        if (!gn->f) break;
        gn->n = *n;
        gn->live = gn->f->launch == vkp_index_launch;
        if (n->params) {
            uint32_t size;
            memcpy(&size, n->params, sizeof size); /* every parameter struct starts with it */
            if (size < sizeof size || size > VKP_GRAPH_MAX_PARAMS) {
                gn->live = true;
            } else if (!gn->live) {
                if (!(gn->snap = malloc(size))) {
                    st = oom();
                    break;
                }
                memcpy(gn->snap, n->params, size);
                gn->params_size = size;
            }
        }
    }
    if (st == GFP_OK && vkp_fuse_enabled()) plan_fusion(g);
    if (st == GFP_OK) {
        d->recording = g;
        for (uint32_t i = 0; i < n_nodes && st == GFP_OK; i++) st = record_node(d, g, i);
        gfp_status s2 = seg_end(g);
        if (st == GFP_OK) st = s2;
        d->recording = NULL;
    }
    if (st != GFP_OK) {
        graph_free(d, g);
        return st;
    }
    g->next = d->graphs;
    d->graphs = g;
    *graph = g;
    return GFP_OK;
}

/* Rewrites the params words of the nodes whose parameter structs moved. */
static gfp_status refresh(vkp_device *d, vkp_graph *g) {
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        vkp_gnode *gn = &g->nodes[i];
        if (!gn->snap || !memcmp(gn->snap, gn->n.params, gn->params_size)) continue;
        memcpy(gn->snap, gn->n.params, gn->params_size);
        g->cursor = gn->first_disp;
        g->cursor_end = gn->first_disp + gn->n_disp;
        g->scursor = gn->first_scratch;
        g->scursor_end = gn->first_scratch + gn->n_scratch;
        const gfp_graph_node *n = &gn->n;
        if (gn->run_len >= 2) { /* the run's program, from its head's dispatch */
            const vkp_gnode *h = &g->nodes[gn->run_head];
            g->cursor = h->first_disp;
            g->cursor_end = h->first_disp + h->n_disp;
        }
        /* The new parameters are checked as launch() would check them. */
        gfp_status st = GFP_OK;
        const vkp_family *f = vkp_route(d, n->op, n->inputs, n->n_inputs, n->outputs,
                                        n->n_outputs, n->params, &st);
        if (f) {
            d->refreshing = g;
            st = gn->run_len >= 2 ? fuse_run(d, g, gn->run_head)
                                  : f->launch(d, n->op, n->inputs, n->n_inputs, n->outputs,
                                              n->n_outputs, n->params);
            d->refreshing = NULL;
        }
        if (st == GFP_OK && g->cursor != g->cursor_end)
            st = pk_fail(GFP_ERR_INVALID, "vulkan: graph_launch: the new parameters of node "
                         "%u (%s) call for fewer dispatches than recorded; capture the graph "
                         "again", i,
                         pk_op_name(n->op));
        if (st != GFP_OK) {
            /* The next launch tries again. */
            memset(gn->snap, 0, gn->params_size);
            return st;
        }
    }
    return GFP_OK;
}

gfp_status vkp_graph_launch(void *device, void *graph) {
    vkp_device *d = device;
    vkp_graph *g = graph;
    if (!d || !g) return pk_fail(GFP_ERR_INVALID, "graph_launch: device or graph is NULL");
    if (atomic_load(&vkp_exiting)) return vkp_exiting_error("graph_launch");
    /* The params words of the last run are read until it completes. */
    gfp_status st = graph_retire(d, g);
    if (st == GFP_OK) st = refresh(d, g);
    for (uint32_t i = 0; i < g->n_items && st == GFP_OK; i++) {
        const vkp_gitem *it = &g->items[i];
        if (it->live) {
            const gfp_graph_node *n = &g->nodes[it->index].n;
            st = g->nodes[it->index].f->launch(d, n->op, n->inputs, n->n_inputs, n->outputs,
                                               n->n_outputs, n->params);
            continue;
        }
        /* What was recorded eagerly before goes first, in queue order. */
        if ((st = vkp_batch_submit(d)) != GFP_OK) break;
        vkp_batch *b = g->segs[it->index];
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &b->cb};
        VkResult r = vk.QueueSubmit(d->queue, 1, &si, b->fence);
        if (r != VK_SUCCESS) {
            st = vkp_fail_vk(r, "vkQueueSubmit");
            break;
        }
        vkp_register_at_exit(VKP_AT_EXIT_SUBMIT);
        b->submitted = true;
        d->submits++;
    }
    if (st == GFP_OK) d->graph_launches++;
    return st;
}

void vkp_graph_destroy(void *device, void *graph) {
    vkp_device *d = device;
    vkp_graph *g = graph;
    if (!d || !g) return;
    for (vkp_graph **p = &d->graphs; *p; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            break;
        }
    if (atomic_load(&vkp_exiting)) { /* the device is gone: host memory only */
        for (uint32_t i = 0; i < g->n_nodes; i++) free(g->nodes[i].snap);
        for (uint32_t i = 0; i < g->n_segs; i++) free(g->segs[i]);
        for (uint32_t i = 0; i < g->n_scratch; i++) vkp_buffer_free(d, g->scratch[i]);
        free(g->nodes);
        free(g->segs);
        free(g->items);
        free(g->disp);
        free(g->scratch);
        free(g);
        return;
    }
    graph_retire(d, g);
    graph_free(d, g);
}
