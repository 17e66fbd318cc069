/* SPDX-License-Identifier: BSD-3-Clause */
/* capture.c — recording a region: gf_graph_capture_begin / _end and the
 * hooks dispatch, the allocator and the optimisers call while a thread
 * captures (graph_internal.h).
 *
 * The region runs eagerly; what it asks of the devices is recorded as
 * prepared nodes (the device, the op, its descriptors, a copy of its
 * parameters), so replay.c has nothing left to decide. Memory
 * it allocates comes from the graph's pool (alloc.c); memory it uses that was
 * allocated outside is kept alive by the graph, and the tensors it reads that
 * were made outside are its inputs, checked before each replay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"
#include "profiler_internal.h"

_Thread_local gf_capture *gf__tl_capture;
static _Thread_local gf_capture *tl_held; /* suspended */
static atomic_uint_fast64_t g_next_id = 1;

uint64_t gf__graph_capture_id(void) { return gf__tl_capture ? gf__tl_capture->id : 0; }

gf_graph_pool *gf__graph_alloc_pool(void) { return gf__tl_capture ? gf__tl_capture->pool : NULL; }

int gf__graph_suspend(void) {
    if (!gf__tl_capture) return 0;
    tl_held = gf__tl_capture;
    gf__tl_capture = NULL;
    return 1;
}

void gf__graph_resume(int saved) {
    if (!saved) return;
    gf__tl_capture = tl_held;
    tl_held = NULL;
}

bool gf_graph_capturing(void) { return gf__tl_capture != NULL || tl_held != NULL; }

/* ------------------------------------------------------------ small containers */
static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static size_t ptr_hash(const void *p, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 32) & (cap - 1);
}

static bool ptrset_has(const ptrset *s, const void *p) {
    if (!s->cap) return false;
    for (size_t i = ptr_hash(p, s->cap);; i = (i + 1) & (s->cap - 1)) {
        if (!s->keys[i]) return false;
        if (s->keys[i] == p) return true;
    }
}

static bool ptrset_add(ptrset *s, const void *p) {
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        const void **keys = calloc(cap, sizeof *keys);
        if (!keys) return false;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->keys[i]) continue;
            size_t j = ptr_hash(s->keys[i], cap);
            while (keys[j]) j = (j + 1) & (cap - 1);
            keys[j] = s->keys[i];
        }
        free(s->keys);
        s->keys = keys;
        s->cap = cap;
    }
    size_t i = ptr_hash(p, s->cap);
    while (s->keys[i]) {
        if (s->keys[i] == p) return true;
        i = (i + 1) & (s->cap - 1);
    }
    s->keys[i] = p;
    s->n++;
    return true;
}

/* ------------------------------------------------------------ refusals */
gf_status gf__graph_refuse(gf_status st, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gf_capture *c = gf__tl_capture ? gf__tl_capture : tl_held;
    if (c && !c->failed) {
        c->failed = true;
        c->fail_status = st;
        snprintf(c->fail_msg, sizeof c->fail_msg, "%s", msg);
    }
    return gf__error(st, "%s", msg);
}

static gf_status out_of_memory(void) {
    return gf__graph_refuse(GF_ERR_OUT_OF_MEMORY, "graph capture: out of host memory for the "
                            "recorded launches");
}

/* The public call the region is in, for messages ("gf_tensor_to_host"). */
static const char *api_name(char *buf, size_t len) {
    gf__prof_api_name(buf, len);
    if (!buf[0]) snprintf(buf, len, "a call");
    return buf;
}

gf_status gf__graph_check_device(gf_device *d, const char *what) {
    gf_capture *c = gf__tl_capture;
    if (!c || d == c->dev || gf__fallback_running()) return GF_OK;
    char api[160];
    return gf__graph_refuse(GF_ERR_DEVICE, "%s: %s on device %s inside a region captured on "
                            "%s; a graph replays on one device. Capture one graph per device, "
                            "or move the data with gf_to_device outside the region",
                            api_name(api, sizeof api), what, d->spec, c->dev->spec);
}

/* ------------------------------------------------------------ recording */
static gnode *new_node(gf_capture *c, gnode_kind kind, gf_device *d) {
    if (!grow((void **)&c->nodes, &c->cap_nodes, c->n_nodes + 1, sizeof *c->nodes)) return NULL;
    gnode *n = &c->nodes[c->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->dev = d;
    return n;
}

static void touch(gf_capture *c, const gf_storage *s, const gf_tensor *t) {
    if (c->failed || ptrset_has(&c->buffers, s->buffer)) return;
    if (gf__storage_pool(s) != c->pool) {
        if (!grow((void **)&c->ext, &c->cap_ext, c->n_ext + 1, sizeof *c->ext)) {
            out_of_memory();
            return;
        }
        gext *e = &c->ext[c->n_ext++];
        gf__storage_retain((gf_storage *)s);
        e->s = (gf_storage *)s;
        if (t) {
            char shape[48];
            snprintf(e->desc, sizeof e->desc, "%s%s", gf_dtype_name(t->dtype),
                     gf__shape_str(t->sizes, t->rank, shape, sizeof shape));
        } else {
            snprintf(e->desc, sizeof e->desc, "%llu bytes", (unsigned long long)s->nbytes);
        }
    }
    if (!ptrset_add(&c->buffers, s->buffer)) out_of_memory();
}

void gf__graph_touch(const gf_storage *s) {
    if (gf__tl_capture) touch(gf__tl_capture, s, NULL);
}

/* A tensor made outside the region: an input, kept and checked on replay. */
static gf_status note_input(gf_capture *c, const gf_tensor *t) {
    if (t->capture_id == c->id || ptrset_has(&c->tensors, t)) return GF_OK;
    if (!grow((void **)&c->inputs, &c->cap_inputs, c->n_inputs + 1, sizeof *c->inputs) ||
        !ptrset_add(&c->tensors, t))
        return out_of_memory();
    ginput *in = &c->inputs[c->n_inputs++];
    /* graft's own hold (gf__hold_adopt): a caller's release of a reference
     * that was not theirs (a scope's) is refused while the graph holds t,
     * instead of taking the graph's and leaving it a freed tensor */
    in->t = gf__hold_adopt(gf_tensor_retain((gf_tensor *)t));
    in->storage = t->storage;
    in->dtype = t->dtype;
    in->rank = t->rank;
    in->offset = t->offset;
    memcpy(in->sizes, t->sizes, sizeof in->sizes);
    memcpy(in->strides, t->strides, sizeof in->strides);
    return GF_OK;
}

void gf__graph_note_source(const gf_tensor *t) {
    gf_capture *c = gf__tl_capture;
    if (c && !c->failed) note_input(c, t);
}

static gf_status note_tensor(gf_capture *c, const gf_tensor *t) {
    touch(c, t->storage, t);
    if (c->failed) return c->fail_status;
    return note_input(c, t);
}

gf_status gf__graph_on_launch(gf_device *d, gfp_op op, const gf_tensor *const *in,
                              const gfp_tensor *const *pin, int n_in, gf_tensor *const *out,
                              const gfp_tensor *const *pout, int n_out, const void *params) {
    gf_capture *c = gf__tl_capture;
    if (!c || c->failed) return GF_OK;
    size_t psize = 0;
    if (params) {
        uint32_t sz;
        memcpy(&sz, params, sizeof sz);
        if (sz < sizeof sz || sz > 4096)
            return gf__graph_refuse(GF_ERR_INVALID, "graph capture: op %u has a parameter "
                                    "struct of %u bytes (its struct_size); cannot record it",
                                    (unsigned)op, (unsigned)sz);
        psize = sz;
    }
    for (int i = 0; i < n_in; i++)
        if (in[i] && note_tensor(c, in[i]) != GF_OK) return c->fail_status;
    for (int i = 0; i < n_out; i++)
        if (note_tensor(c, out[i]) != GF_OK) return c->fail_status;
    int nt = n_in + n_out;
    size_t ptr_bytes = (sizeof(gfp_tensor *) * (size_t)nt + 15) & ~(size_t)15;
    unsigned char *mem = malloc(ptr_bytes + sizeof(gfp_tensor) * (size_t)nt + psize);
    gnode *n = mem ? new_node(c, GN_LAUNCH, d) : NULL;
    if (!n) {
        free(mem);
        return out_of_memory();
    }
    n->op = (uint32_t)op;
    n->n_in = (uint8_t)n_in;
    n->n_out = (uint8_t)n_out;
    n->pin = (const gfp_tensor **)mem;
    n->descs = (gfp_tensor *)(mem + ptr_bytes);
    for (int i = 0; i < nt; i++) {
        const gfp_tensor *src = i < n_in ? pin[i] : pout[i - n_in];
        if (src) {
            n->descs[i] = *src;
            n->pin[i] = &n->descs[i];
        } else n->pin[i] = NULL;
    }
    if (params) {
        n->params = (unsigned char *)n->descs + sizeof(gfp_tensor) * (size_t)nt;
        memcpy(n->params, params, psize);
    }
    if (op == GFP_OP_RANDOM) n->rng_n = (uint64_t)gf__numel(out[0]);
    c->n_nodes++;
    return GF_OK;
}

static gf_status unknown_buffer(const char *what) {
    return gf__graph_refuse(GF_ERR_INVALID, "graph capture: a %s names memory the capture does "
                            "not know (a core path that does not report its storage); this "
                            "region cannot be captured", what);
}

gf_status gf__graph_on_write(gf_device *d, gfp_buffer buf, uint64_t off, const void *src,
                             uint64_t n) {
    gf_capture *c = gf__tl_capture;
    if (!c || c->failed) return GF_OK;
    if (!ptrset_has(&c->buffers, buf)) return unknown_buffer("host-to-device write");
    bool live = gf__fallback_running();
    void *data = NULL;
    if (!live && !(data = malloc(n))) return out_of_memory();
    gnode *g = new_node(c, GN_WRITE, d);
    if (!g) {
        free(data);
        return out_of_memory();
    }
    g->buf = buf;
    g->off = off;
    g->n = n;
    if (live) g->host = (void *)src; /* a staging buffer the graph keeps */
    else {
        memcpy(data, src, n); /* host data written in a region is a constant of it */
        g->host = data;
        g->pattern_size = 1;  /* owns host */
    }
    c->n_nodes++;
    return GF_OK;
}

gf_status gf__graph_on_read(gf_device *d, gfp_buffer buf, uint64_t off, void *dst, uint64_t n) {
    gf_capture *c = gf__tl_capture;
    if (!c) return GF_OK;
    if (!gf__fallback_running()) {
        char api[160];
        return gf__graph_refuse(GF_ERR_INVALID, "%s: reads a tensor of device %s to the host "
                                "inside a captured region; a replay would not read it again, "
                                "so the host would keep the first run's value. Read results "
                                "after gf_graph_capture_end or after gf_graph_replay",
                                api_name(api, sizeof api), d->spec);
    }
    if (c->failed) return GF_OK;
    if (!ptrset_has(&c->buffers, buf)) return unknown_buffer("device-to-host read");
    gnode *g = new_node(c, GN_READ, d);
    if (!g) return out_of_memory();
    g->buf = buf;
    g->off = off;
    g->n = n;
    g->host = dst;
    c->n_nodes++;
    return GF_OK;
}

gf_status gf__graph_on_copy(gf_device *d, gfp_buffer src, uint64_t soff, gfp_buffer dst,
                            uint64_t doff, uint64_t n) {
    gf_capture *c = gf__tl_capture;
    if (!c || c->failed) return GF_OK;
    if (!ptrset_has(&c->buffers, src) || !ptrset_has(&c->buffers, dst))
        return unknown_buffer("device copy");
    gnode *g = new_node(c, GN_COPY, d);
    if (!g) return out_of_memory();
    g->buf = src;
    g->off = soff;
    g->buf2 = dst;
    g->off2 = doff;
    g->n = n;
    c->n_nodes++;
    return GF_OK;
}

gf_status gf__graph_on_fill(gf_device *d, gfp_buffer buf, uint64_t off, uint64_t n,
                            const void *pattern, uint32_t pattern_size) {
    gf_capture *c = gf__tl_capture;
    if (!c || c->failed) return GF_OK;
    if (!ptrset_has(&c->buffers, buf)) return unknown_buffer("fill");
    if (pattern_size == 0 || pattern_size > 16)
        return gf__graph_refuse(GF_ERR_INVALID, "graph capture: a fill pattern of %u bytes "
                                "cannot be recorded (at most 16)", (unsigned)pattern_size);
    unsigned char *pat = malloc(16);
    gnode *g = pat ? new_node(c, GN_FILL, d) : NULL;
    if (!g) {
        free(pat);
        return out_of_memory();
    }
    g->buf = buf;
    g->off = off;
    g->n = n;
    g->pattern = pat;
    memcpy(g->pattern, pattern, pattern_size);
    g->pattern_size = pattern_size;
    c->n_nodes++;
    return GF_OK;
}

void *gf__graph_scratch(uint64_t n) {
    gf_capture *c = gf__tl_capture;
    if (!c) return NULL;
    void *p = malloc(n ? n : 1);
    if (!p || !grow((void **)&c->scratch, &c->cap_scratch, c->n_scratch + 1, sizeof(void *))) {
        free(p);
        out_of_memory();
        return NULL;
    }
    c->scratch[c->n_scratch++] = p;
    return p;
}

gf_status gf__graph_add_host(gf__graph_host_fn fn, void *ctx, void (*free_ctx)(void *)) {
    gf_capture *c = gf__tl_capture;
    gnode *g = c && !c->failed ? new_node(c, GN_HOST, NULL) : NULL;
    if (!g) {
        if (free_ctx) free_ctx(ctx);
        if (!c) return gf__error(GF_ERR_INVALID, "internal: a host step outside a capture");
        return c->failed ? c->fail_status : out_of_memory();
    }
    g->fn = fn;
    g->ctx = ctx;
    g->free_ctx = free_ctx;
    c->n_nodes++;
    return GF_OK;
}

void *gf__graph_last_params(gfp_op op) {
    gf_capture *c = gf__tl_capture;
    if (!c || c->failed || !c->n_nodes) return NULL;
    gnode *g = &c->nodes[c->n_nodes - 1];
    return g->kind == GN_LAUNCH && g->op == (uint32_t)op ? g->params : NULL;
}

void *gf__graph_last_fill_pattern(uint32_t pattern_size) {
    gf_capture *c = gf__tl_capture;
    if (!c || c->failed || !c->n_nodes) return NULL;
    gnode *g = &c->nodes[c->n_nodes - 1];
    return g->kind == GN_FILL && g->pattern_size == pattern_size ? g->pattern : NULL;
}

/* ------------------------------------------------------------ begin / end */
void gf__capture_free(gf_capture *c) {
    gf__graph_unprepare(c);
    for (size_t i = 0; i < c->n_nodes; i++) {
        gnode *g = &c->nodes[i];
        if (g->kind == GN_LAUNCH) free(g->pin);
        else if (g->kind == GN_WRITE && g->pattern_size) free(g->host);
        else if (g->kind == GN_FILL) free(g->pattern);
        else if (g->kind == GN_HOST && g->free_ctx) g->free_ctx(g->ctx);
    }
    free(c->nodes);
    for (size_t i = 0; i < c->n_inputs; i++) gf__hold_release(c->inputs[i].t);
    free(c->inputs);
    for (size_t i = 0; i < c->n_ext; i++) gf__storage_release(c->ext[i].s);
    free(c->ext);
    for (size_t i = 0; i < c->n_scratch; i++) free(c->scratch[i]);
    free(c->scratch);
    free(c->buffers.keys);
    free(c->tensors.keys);
    gf__pool_close(c->pool);
    pthread_mutex_destroy(&c->replay_lock);
}

gf_status gf_graph_capture_begin(gf_device *dev) {
    if (gf_graph_capturing())
        return gf__error(GF_ERR_INVALID, "gf_graph_capture_begin: this thread is already "
                         "capturing a region (nested capture); end it with "
                         "gf_graph_capture_end first");
    if (!dev) {
        dev = gf_device_default();
        if (!dev) return gf__status();
    }
    gf_status s = gf__dev_open(dev);
    if (s != GF_OK) return s;
    gf_graph *g = calloc(1, sizeof *g);
    if (!g)
        return gf__error(GF_ERR_OUT_OF_MEMORY, "gf_graph_capture_begin: out of host memory");
    gf_capture *c = &g->c;
    c->pool = gf__pool_create();
    if (!c->pool) {
        free(g);
        return gf__status();
    }
    pthread_mutex_init(&c->replay_lock, NULL);
    c->id = atomic_fetch_add(&g_next_id, 1);
    c->dev = dev;
    gf__tl_capture = c;
    return GF_OK;
}

gf_graph *gf_graph_capture_end(void) {
    gf_capture *c = gf__tl_capture ? gf__tl_capture : tl_held;
    if (!c) {
        gf__error(GF_ERR_INVALID, "gf_graph_capture_end: this thread is not capturing (call "
                  "gf_graph_capture_begin first)");
        return NULL;
    }
    if (tl_held) {
        gf__error(GF_ERR_INVALID, "gf_graph_capture_end: called from inside work the capture "
                  "does not record (internal)");
        return NULL;
    }
    gf__tl_capture = NULL;
    gf_graph *g = (gf_graph *)c; /* c is g's first member */
    if (!c->failed) gf__graph_prepare(c);
    if (c->failed) {
        gf_status st = c->fail_status;
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", c->fail_msg);
        gf__capture_free(c);
        free(g);
        gf__error(st, "gf_graph_capture_end: the region cannot be replayed: %s", msg);
        return NULL;
    }
    return g;
}
