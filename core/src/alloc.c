/* alloc.c — the caching allocator per device, and storages.
 *
 * Freed blocks are kept per device and reused for requests of the same
 * rounded size class, so a training step does not call the plugin's
 * buffer_alloc per op. gf_memory_empty_cache returns them to the plugin. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "profiler_internal.h"

struct gf_block {
    gfp_buffer buffer;
    void *host_ptr;
    uint64_t size;
    gf_block *next;
};

void gf__allocator_init(gf_allocator *a) {
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->lock, NULL);
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
            a->bytes_cached -= b->size;
            return b;
        }
    }
    return NULL;
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
}

gf_status gf__alloc_block(gf_device *dev, uint64_t nbytes, gf_block **out, gfp_buffer *buf,
                          void **host_ptr) {
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

void gf__free_block(gf_device *dev, gf_block *b) {
    gf_allocator *a = &dev->alloc;
    pthread_mutex_lock(&a->lock);
    a->bytes_in_use -= b->size;
    a->live_blocks--;
    gf_block **head = &a->free_lists[bucket_of(b->size)];
    b->next = *head;
    *head = b;
    a->bytes_cached += b->size;
    uint64_t size = b->size, in_use = a->bytes_in_use, cached = a->bytes_cached;
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

gf_status gf_memory_empty_cache(gf_device *dev) {
    if (!dev) return gf__error(GF_ERR_INVALID, "gf_memory_empty_cache: dev is NULL");
    gf__allocator_release_all(dev);
    return GF_OK;
}
