/* SPDX-License-Identifier: BSD-3-Clause */
/* alloc.c — the caching allocator per device, and storages.
 *
 * Freed blocks are kept per device and reused for requests of the same
 * rounded size class, so a training step does not call the plugin's
 * buffer_alloc per op. gf_memory_empty_cache returns them to the plugin.
 *
 * The cache is bounded (gf_memory_set_cache_limit, GRAFT_CACHE_LIMIT): when
 * a freed block takes it past its limit, the blocks freed longest ago go
 * back to the plugin first. A training step frees and takes again the same
 * sizes every step, so it keeps its blocks; blocks of sizes that never come
 * back (loading a data set, a one-off evaluation) leave as the cache fills,
 * instead of holding host memory for the rest of the process. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "internal.h"
#include "profiler_internal.h"

struct gf_block {
    gfp_buffer buffer;
    void *host_ptr;
    uint64_t size;
    gf_block *next;                /* in its free list (while cached) */
    gf_block *lru_newer, *lru_older; /* in the allocator's LRU order (while cached) */
    gf_graph_pool *pool;           /* the graph pool that owns it, or NULL */
    gf_device *device;             /* while a pool owns it */
};

/* A graph's private pool (graph/): blocks allocated while a region is
 * captured. A block the region frees goes back to the pool, never to the
 * device's cache, so no tensor made outside the region ever gets memory a
 * replay writes. The pool's blocks count as in use on their devices until
 * the graph is destroyed and the last block an output held is freed. */
struct gf_graph_pool {
    pthread_mutex_t lock;
    gf_block *free;   /* blocks returned while the pool is open (chained by next) */
    uint64_t live;    /* blocks handed out and not returned */
    uint64_t bytes;   /* every block the pool took */
    bool closed;      /* the graph is gone: returned blocks go back to their device */
};

/* The default limit of a device's cache: 256 MiB where the device's memory
 * is host memory (a CPU device: cached blocks are resident memory the rest
 * of the process cannot use), none elsewhere (a GPU's memory serves graft
 * alone, and reuse is what makes its allocation cheap). GRAFT_CACHE_LIMIT
 * sets it for every device: bytes with an optional K, M or G suffix (powers
 * of 1024), 0 to cache nothing, or "none" for no limit. */
#define GF_HOST_CACHE_LIMIT (UINT64_C(256) << 20)

static bool parse_limit(const char *v, uint64_t *out) {
    if (!strcmp(v, "none") || !strcmp(v, "unlimited")) {
        *out = UINT64_MAX;
        return true;
    }
    if (*v < '0' || *v > '9') return false;
    errno = 0;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno) return false;
    int shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10;
    else if (*end == 'M' || *end == 'm') shift = 20;
    else if (*end == 'G' || *end == 'g') shift = 30;
    if (shift) end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end || (shift && n > (UINT64_MAX >> shift))) return false;
    *out = (uint64_t)n << shift;
    return true;
}

void gf__allocator_init(gf_allocator *a, const gfp_device_props *props) {
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->lock, NULL);
    a->cache_limit = props->flags & GFP_DEVICE_FLAG_HOST_ADDRESSABLE ? GF_HOST_CACHE_LIMIT
                                                                    : UINT64_MAX;
    const char *env = gf__getenv("GRAFT_CACHE_LIMIT");
    if (env && *env && !parse_limit(env, &a->cache_limit))
        gf__log(GFP_LOG_WARN, "GRAFT_CACHE_LIMIT='%s' is not a size (bytes, with an optional "
                "K, M or G suffix, 0, or 'none'); %s keeps its default cache limit", env,
                props->name);
}

static void lru_unlink(gf_allocator *a, gf_block *b) {
    if (b->lru_newer) b->lru_newer->lru_older = b->lru_older;
    else a->lru_newest = b->lru_older;
    if (b->lru_older) b->lru_older->lru_newer = b->lru_newer;
    else a->lru_oldest = b->lru_newer;
    b->lru_newer = b->lru_older = NULL;
}

/* Size classes: multiples of 512 bytes up to 1 MiB, then of 1/8 of the
 * request's power of two, so reuse wastes at most ~12%. */
static uint64_t round_size(uint64_t n) {
    if (n == 0) n = 1;
    if (n <= (1u << 20)) return (n + 511) & ~(uint64_t)511;
    uint64_t p = 1;
    while (p < n) p <<= 1;
    uint64_t step = p >> 3;
    return (n + step - 1) / step * step;
}

static size_t bucket_of(uint64_t size) {
    uint64_t x = size * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 58) % GF_ALLOC_BUCKETS;
}

static gf_block *take_cached(gf_allocator *a, uint64_t size) {
    gf_block **head = &a->free_lists[bucket_of(size)];
    gf_block **pp = head;
    for (gf_block *b = *head; b; pp = &b->next, b = b->next) {
        if (b->size == size) {
            *pp = b->next;
            lru_unlink(a, b);
            a->bytes_cached -= b->size;
            return b;
        }
    }
    return NULL;
}

/* Gives the oldest cached blocks back to the plugin until the cache is
 * within its limit. Under the allocator's lock. */
static void trim_locked(gf_device *dev) {
    gf_allocator *a = &dev->alloc;
    while (a->bytes_cached > a->cache_limit && a->lru_oldest) {
        gf_block *b = a->lru_oldest;
        gf_block **pp = &a->free_lists[bucket_of(b->size)];
        while (*pp != b) pp = &(*pp)->next;
        *pp = b->next;
        lru_unlink(a, b);
        a->bytes_cached -= b->size;
        gf__dev_free(dev, b->buffer);
        a->plugin_frees++;
        free(b);
    }
}

static void release_cache_locked(gf_device *dev) {
    gf_allocator *a = &dev->alloc;
    for (size_t k = 0; k < GF_ALLOC_BUCKETS; k++) {
        gf_block *b = a->free_lists[k];
        a->free_lists[k] = NULL;
        while (b) {
            gf_block *next = b->next;
            gf__dev_free(dev, b->buffer);
            a->plugin_frees++;
            a->bytes_cached -= b->size;
            free(b);
            b = next;
        }
    }
    a->lru_newest = a->lru_oldest = NULL;
}

static gf_status alloc_block_device(gf_device *dev, uint64_t nbytes, gf_block **out,
                                    gfp_buffer *buf, void **host_ptr);

/* A block from the capturing thread's pool: one it returned of the same
 * size on the same device, else a new one from the device. */
static gf_status alloc_block_pool(gf_graph_pool *gp, gf_device *dev, uint64_t nbytes,
                                  gf_block **out, gfp_buffer *buf, void **host_ptr) {
    uint64_t size = round_size(nbytes);
    pthread_mutex_lock(&gp->lock);
    for (gf_block **pp = &gp->free; *pp; pp = &(*pp)->next) {
        gf_block *b = *pp;
        if (b->device == dev && b->size == size) {
            *pp = b->next;
            b->next = NULL;
            gp->live++;
            pthread_mutex_unlock(&gp->lock);
            *out = b;
            *buf = b->buffer;
            *host_ptr = b->host_ptr;
            return GF_OK;
        }
    }
    pthread_mutex_unlock(&gp->lock);
    gf_status s = alloc_block_device(dev, nbytes, out, buf, host_ptr);
    if (s != GF_OK) return s;
    pthread_mutex_lock(&gp->lock);
    (*out)->pool = gp;
    (*out)->device = dev;
    gp->live++;
    gp->bytes += (*out)->size;
    pthread_mutex_unlock(&gp->lock);
    return GF_OK;
}

gf_status gf__alloc_block(gf_device *dev, uint64_t nbytes, gf_block **out, gfp_buffer *buf,
                          void **host_ptr) {
    gf_graph_pool *gp = gf__graph_alloc_pool();
    if (gp) return alloc_block_pool(gp, dev, nbytes, out, buf, host_ptr);
    return alloc_block_device(dev, nbytes, out, buf, host_ptr);
}

static gf_status alloc_block_device(gf_device *dev, uint64_t nbytes, gf_block **out,
                                    gfp_buffer *buf, void **host_ptr) {
    gf_allocator *a = &dev->alloc;
    uint64_t size = round_size(nbytes);
    /* Rounding up for the cache must not push a request the device can
     * take over its limit: such a block is made at the limit instead. */
    if (dev->props.max_alloc_bytes && size > dev->props.max_alloc_bytes &&
        nbytes <= dev->props.max_alloc_bytes)
        size = dev->props.max_alloc_bytes;
    if (dev->props.max_alloc_bytes && size > dev->props.max_alloc_bytes)
        return gf__error(GF_ERR_OUT_OF_MEMORY,
                         "allocating %llu bytes on %s: the device's largest allocation is %llu "
                         "bytes; use smaller tensors",
                         (unsigned long long)nbytes, dev->spec,
                         (unsigned long long)dev->props.max_alloc_bytes);
    pthread_mutex_lock(&a->lock);
    gf_block *b = take_cached(a, size);
    int what = b ? GF_PROF_ALLOC_CACHE : GF_PROF_ALLOC_PLUGIN;
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b) {
            pthread_mutex_unlock(&a->lock);
            return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for a block record");
        }
        b->size = size;
        gf_status s = gf__dev_alloc(dev, size, &b->buffer, &b->host_ptr);
        if (s == GF_ERR_OUT_OF_MEMORY && a->bytes_cached) {
            /* Give the cache back and try once more before failing. */
            release_cache_locked(dev);
            s = gf__dev_alloc(dev, size, &b->buffer, &b->host_ptr);
        }
        if (s != GF_OK) {
            free(b);
            pthread_mutex_unlock(&a->lock);
            return s;
        }
        a->plugin_allocs++;
    }
    a->bytes_in_use += b->size;
    if (a->bytes_in_use > a->peak) a->peak = a->bytes_in_use;
    a->live_blocks++;
    uint64_t in_use = a->bytes_in_use, cached = a->bytes_cached;
    pthread_mutex_unlock(&a->lock);
    if (gf__prof_on()) gf__prof_alloc(dev, b->size, what, in_use, cached);
    *out = b;
    *buf = b->buffer;
    *host_ptr = b->host_ptr;
    return GF_OK;
}

static void free_block_device(gf_device *dev, gf_block *b);

void gf__free_block(gf_device *dev, gf_block *b) {
    gf_graph_pool *gp = b->pool;
    if (gp) {
        pthread_mutex_lock(&gp->lock);
        gp->live--;
        if (!gp->closed) {
            b->next = gp->free;
            gp->free = b;
            pthread_mutex_unlock(&gp->lock);
            return;
        }
        bool last = gp->live == 0;
        pthread_mutex_unlock(&gp->lock);
        b->pool = NULL;
        free_block_device(dev, b);
        if (last) {
            pthread_mutex_destroy(&gp->lock);
            free(gp);
        }
        return;
    }
    free_block_device(dev, b);
}

gf_graph_pool *gf__pool_create(void) {
    gf_graph_pool *gp = calloc(1, sizeof *gp);
    if (!gp) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "gf_graph_capture_begin: out of host memory for the "
                  "graph's pool");
        return NULL;
    }
    pthread_mutex_init(&gp->lock, NULL);
    return gp;
}

gf_graph_pool *gf__storage_pool(const gf_storage *s) { return s->block ? s->block->pool : NULL; }

uint64_t gf__pool_bytes(gf_graph_pool *gp) {
    pthread_mutex_lock(&gp->lock);
    uint64_t n = gp->bytes;
    pthread_mutex_unlock(&gp->lock);
    return n;
}

void gf__pool_close(gf_graph_pool *gp) {
    if (!gp) return;
    pthread_mutex_lock(&gp->lock);
    gp->closed = true;
    gf_block *b = gp->free;
    gp->free = NULL;
    bool last = gp->live == 0;
    pthread_mutex_unlock(&gp->lock);
    while (b) {
        gf_block *next = b->next;
        b->pool = NULL;
        free_block_device(b->device, b);
        b = next;
    }
    if (last) {
        pthread_mutex_destroy(&gp->lock);
        free(gp);
    }
}

static void free_block_device(gf_device *dev, gf_block *b) {
    gf_allocator *a = &dev->alloc;
    pthread_mutex_lock(&a->lock);
    a->bytes_in_use -= b->size;
    a->live_blocks--;
    uint64_t size = b->size;
    gf_block **head = &a->free_lists[bucket_of(b->size)];
    b->next = *head;
    *head = b;
    b->lru_older = a->lru_newest;
    b->lru_newer = NULL;
    if (a->lru_newest) a->lru_newest->lru_newer = b;
    else a->lru_oldest = b;
    a->lru_newest = b;
    a->bytes_cached += b->size;
    trim_locked(dev); /* b itself goes when it alone is over the limit */
    uint64_t in_use = a->bytes_in_use, cached = a->bytes_cached;
    pthread_mutex_unlock(&a->lock);
    if (gf__prof_on()) gf__prof_alloc(dev, size, GF_PROF_FREE, in_use, cached);
}

void gf__allocator_release_all(gf_device *dev) {
    pthread_mutex_lock(&dev->alloc.lock);
    release_cache_locked(dev);
    pthread_mutex_unlock(&dev->alloc.lock);
}

/* ------------------------------------------------------------ storages */
/* A storage record whose memory the caller then attaches; NULL with the
 * error set when the host is out of memory. */
static gf_storage *storage_record(gf_device *dev, uint64_t nbytes) {
    gf_storage *s = calloc(1, sizeof *s);
    if (!s) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for a storage record");
        return NULL;
    }
    atomic_init(&s->refcount, 1);
    atomic_init(&s->version, 0);
    s->device = dev;
    s->nbytes = nbytes;
    s->inference = gf_grad_mode_get() == GF_GRAD_MODE_INFERENCE;
    return s;
}

gf_storage *gf__storage_new(gf_device *dev, uint64_t nbytes) {
    gf_storage *s = storage_record(dev, nbytes);
    if (s && gf__alloc_block(dev, nbytes, &s->block, &s->buffer, &s->host_ptr) != GF_OK) {
        free(s);
        return NULL;
    }
    return s;
}

gf_storage *gf__storage_adopt(gf_device *dev, void *host_ptr, uint64_t nbytes,
                              void (*release)(void *ctx), void *ctx) {
    gf_storage *s = storage_record(dev, nbytes);
    if (s && gf__dev_wrap_host(dev, host_ptr, nbytes, &s->buffer) != GF_OK) {
        free(s);
        return NULL;
    }
    if (s) {
        s->host_ptr = host_ptr;
        s->release = release;
        s->release_ctx = ctx;
    }
    return s;
}

void gf__storage_retain(gf_storage *s) { atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed); }

void gf__storage_release(gf_storage *s) {
    if (!s) return;
    if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1) return;
    if (s->block) {
        gf__free_block(s->device, s->block);
    } else {
        /* Adopted memory: work queued on it must finish before its owner
         * gets it back (a failure here has no caller to go to; the wait is
         * what matters). */
        (void)gf__dev_sync(s->device);
        gf__dev_free(s->device, s->buffer);
        if (s->release) s->release(s->release_ctx);
    }
    free(s);
}

/* ------------------------------------------------------------ public stats */
gf_status gf_memory_get_stats(const gf_device *dev, gf_memory_stats *st) {
    if (!dev || !st) return gf__error(GF_ERR_INVALID, "gf_memory_get_stats: NULL argument");
    gf_allocator *a = (gf_allocator *)&dev->alloc;
    pthread_mutex_lock(&a->lock);
    st->bytes_in_use = a->bytes_in_use;
    st->peak_bytes_in_use = a->peak;
    st->bytes_cached = a->bytes_cached;
    st->plugin_allocations = a->plugin_allocs;
    st->plugin_frees = a->plugin_frees;
    pthread_mutex_unlock(&a->lock);
    return GF_OK;
}

gf_status gf_memory_reset_peak(gf_device *dev) {
    if (!dev) return gf__error(GF_ERR_INVALID, "gf_memory_reset_peak: dev is NULL");
    pthread_mutex_lock(&dev->alloc.lock);
    dev->alloc.peak = dev->alloc.bytes_in_use;
    pthread_mutex_unlock(&dev->alloc.lock);
    return GF_OK;
}

gf_status gf_memory_set_cache_limit(gf_device *dev, uint64_t bytes) {
    if (!dev) return gf__error(GF_ERR_INVALID, "gf_memory_set_cache_limit: dev is NULL (pass a device)");
    pthread_mutex_lock(&dev->alloc.lock);
    dev->alloc.cache_limit = bytes;
    trim_locked(dev);
    pthread_mutex_unlock(&dev->alloc.lock);
    return GF_OK;
}

gf_status gf_memory_get_cache_limit(const gf_device *dev, uint64_t *bytes) {
    if (!dev) return gf__error(GF_ERR_INVALID, "gf_memory_get_cache_limit: dev is NULL (pass a device)");
    if (!bytes)
        return gf__error(GF_ERR_INVALID, "gf_memory_get_cache_limit: bytes is NULL (pass where "
                         "to write the limit)");
    gf_allocator *a = (gf_allocator *)&dev->alloc;
    pthread_mutex_lock(&a->lock);
    *bytes = a->cache_limit;
    pthread_mutex_unlock(&a->lock);
    return GF_OK;
}

gf_status gf_memory_empty_cache(gf_device *dev) {
    if (!dev) return gf__error(GF_ERR_INVALID, "gf_memory_empty_cache: dev is NULL");
    gf__allocator_release_all(dev);
    return GF_OK;
}
