/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_hostbuf.c — host-memory buffers, shared by the reference and cpu_onednn
 * plugins (each links its own copy, so each has its own registry).
 *
 * A handle is the address of byte 0, so kernels use it as a pointer.
 *  - Own buffers (buffer_alloc): a 64-byte aligned block with a header in
 *    front recording a magic number and the size. The magic differs per
 *    plugin, so a buffer of another plugin is named as such, and sizes let
 *    every read, write, copy, fill and launch be checked against the end.
 *  - Adopted buffers (buffer_wrap_host, ABI 1.1): memory the caller owns has
 *    no room for a header, so such handles are kept in a small hash table
 *    (address -> size). The table is consulted first, and only when it is
 *    not empty: buffers that were never adopted cost one atomic load.
 *  - Freed blocks go back to the C library at once: reuse is the core's
 *    caching allocator's (core/src/alloc.c), which keeps the blocks a
 *    training step takes again and bounds what it keeps, so a second cache
 *    here would only hold memory past that bound. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_internal.h"

#define HB_HEADER 64
/* Largest size buffer_alloc accepts: anything above is a size computation
 * gone wrong, reported as out of memory rather than attempted. */
#define HB_MAX_ALLOC ((uint64_t)1 << 62)

typedef struct hb_header {
    uint64_t magic;
    uint64_t nbytes;
} hb_header;

typedef struct hb_wrapped {
    const void *ptr;
    uint64_t nbytes;
    struct hb_wrapped *next;
} hb_wrapped;

#define HB_BUCKETS 256
static hb_wrapped *wrapped[HB_BUCKETS];
static pthread_mutex_t wrapped_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_long wrapped_count;
static atomic_long live_own;

static hb_header *header_of(gfp_buffer buffer) { return (hb_header *)((char *)buffer - HB_HEADER); }

static size_t bucket_of(const void *p) {
    uintptr_t v = (uintptr_t)p;
    return (size_t)((v >> 6) ^ (v >> 14) ^ (v >> 22)) % HB_BUCKETS;
}

uint64_t ref_hostbuf_max_alloc(void) { return HB_MAX_ALLOC; }

long ref_hostbuf_live(void) { return atomic_load(&live_own) + atomic_load(&wrapped_count); }

/* Size of an adopted buffer, or false when the handle is not one. */
static bool wrapped_size(gfp_buffer buffer, uint64_t *nbytes) {
    if (atomic_load_explicit(&wrapped_count, memory_order_acquire) == 0) return false;
    bool found = false;
    pthread_mutex_lock(&wrapped_lock);
    for (hb_wrapped *w = wrapped[bucket_of(buffer)]; w; w = w->next)
        if (w->ptr == buffer) {
            /* The same memory adopted twice: the larger view bounds both. */
            if (!found || w->nbytes > *nbytes) *nbytes = w->nbytes;
            found = true;
        }
    pthread_mutex_unlock(&wrapped_lock);
    return found;
}

gfp_status ref_hostbuf_alloc(void *device, uint64_t nbytes, gfp_buffer *buffer, void **host_ptr) {
    (void)device;
    if (!buffer || !host_ptr)
        return pk_fail(GFP_ERR_INVALID, "buffer_alloc: buffer or host_ptr is NULL");
    *buffer = NULL;
    *host_ptr = NULL;
    if (nbytes == 0)
        return pk_fail(GFP_ERR_INVALID, "buffer_alloc: nbytes is 0 (the ABI requires > 0)");
    if (nbytes > HB_MAX_ALLOC)
        return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                        "buffer_alloc: %llu bytes is more than the %s device allows (2^62); the "
                        "size is probably miscomputed",
                        (unsigned long long)nbytes, ref_hostbuf_self.plugin);
    uint64_t rounded = (nbytes + 63) & ~(uint64_t)63; /* aligned_alloc wants a multiple */
    if (rounded + HB_HEADER > (uint64_t)SIZE_MAX)
        return pk_fail(GFP_ERR_OUT_OF_MEMORY, "buffer_alloc: %llu bytes do not fit in memory",
                        (unsigned long long)nbytes);
    char *block = aligned_alloc(64, (size_t)(rounded + HB_HEADER));
    if (!block)
        return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                        "buffer_alloc: out of host memory allocating %llu bytes",
                        (unsigned long long)nbytes);
    hb_header *h = (hb_header *)block;
    h->magic = ref_hostbuf_self.magic;
    h->nbytes = nbytes;
    atomic_fetch_add(&live_own, 1);
    *buffer = block + HB_HEADER;
    *host_ptr = block + HB_HEADER;
    return GFP_OK;
}

gfp_status ref_hostbuf_wrap(void *device, void *host_ptr, uint64_t nbytes, gfp_buffer *buffer) {
    (void)device;
    if (!buffer) return pk_fail(GFP_ERR_INVALID, "buffer_wrap_host: buffer is NULL");
    *buffer = NULL;
    if (!host_ptr) return pk_fail(GFP_ERR_INVALID, "buffer_wrap_host: host_ptr is NULL");
    if (nbytes == 0)
        return pk_fail(GFP_ERR_INVALID, "buffer_wrap_host: nbytes is 0 (the ABI requires > 0)");
    if (nbytes > HB_MAX_ALLOC || (uintptr_t)host_ptr + nbytes < (uintptr_t)host_ptr)
        return pk_fail(GFP_ERR_INVALID,
                        "buffer_wrap_host: %llu bytes from %p run past the end of the address "
                        "space; the size is probably miscomputed",
                        (unsigned long long)nbytes, host_ptr);
    hb_wrapped *w = malloc(sizeof *w);
    if (!w) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "buffer_wrap_host: out of host memory");
    w->ptr = host_ptr;
    w->nbytes = nbytes;
    size_t b = bucket_of(host_ptr);
    pthread_mutex_lock(&wrapped_lock);
    w->next = wrapped[b];
    wrapped[b] = w;
    atomic_fetch_add_explicit(&wrapped_count, 1, memory_order_release);
    pthread_mutex_unlock(&wrapped_lock);
    *buffer = host_ptr;
    return GFP_OK;
}

/* Forgets an adopted handle; false when buffer is not one. */
static bool unwrap(gfp_buffer buffer) {
    if (atomic_load_explicit(&wrapped_count, memory_order_acquire) == 0) return false;
    hb_wrapped *found = NULL;
    pthread_mutex_lock(&wrapped_lock);
    for (hb_wrapped **p = &wrapped[bucket_of(buffer)]; *p; p = &(*p)->next)
        if ((*p)->ptr == buffer) {
            found = *p;
            *p = found->next;
            atomic_fetch_sub_explicit(&wrapped_count, 1, memory_order_release);
            break;
        }
    pthread_mutex_unlock(&wrapped_lock);
    free(found);
    return found != NULL;
}

void ref_hostbuf_free(void *device, gfp_buffer buffer) {
    (void)device;
    if (!buffer || unwrap(buffer)) return; /* adopted memory stays its owner's */
    hb_header *h = header_of(buffer);
    if (h->magic != ref_hostbuf_self.magic) {
        /* Freeing it would corrupt the heap; leaking is the lesser harm. */
        if (pk_host) {
            char msg[200];
            snprintf(msg, sizeof msg, "%s: buffer_free of a handle that is not a live buffer "
                     "(double free?); ignored", ref_hostbuf_self.plugin);
            pk_host->log(pk_host->host_ctx, GFP_LOG_ERROR, msg);
        }
        return;
    }
    atomic_fetch_sub(&live_own, 1);
    h->magic = 0;
    free(h);
}

gfp_status ref_hostbuf_size(gfp_buffer buffer, uint64_t *nbytes) {
    if (wrapped_size(buffer, nbytes)) return GFP_OK;
    const hb_header *h = header_of(buffer);
    if (h->magic != ref_hostbuf_self.magic)
        return pk_fail(GFP_ERR_INVALID, "the buffer is not a live %s buffer (freed already, "
                        "or from another plugin)", ref_hostbuf_self.plugin);
    *nbytes = h->nbytes;
    return GFP_OK;
}

gfp_status ref_hostbuf_size_of(const void *ctx, gfp_buffer buffer, uint64_t *nbytes) {
    (void)ctx;
    if (!buffer) return GFP_ERR_INVALID;
    return ref_hostbuf_size(buffer, nbytes);
}

gfp_status ref_hostbuf_range(const char *what, gfp_buffer buffer, uint64_t offset, uint64_t n) {
    if (!buffer) return pk_fail(GFP_ERR_INVALID, "%s: buffer is NULL", what);
    uint64_t size = 0;
    if (ref_hostbuf_size(buffer, &size) != GFP_OK)
        return pk_fail(GFP_ERR_INVALID, "%s: the buffer is not a live %s buffer (freed "
                        "already, or from another plugin)", what, ref_hostbuf_self.plugin);
    return pk_check_range(what, size, offset, n);
}
