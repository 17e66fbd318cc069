/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_memory.c — device memory: large blocks, sub-allocated.
 *
 * vkAllocateMemory is slow and drivers cap the number of allocations, so
 * tensors are carved out of shared blocks (one VkBuffer each, bound whole in
 * descriptors; shaders index it from the tensor's element offset). Only
 * tensors of a quarter block or more get memory of their own. Nothing may
 * exceed maxStorageBufferRange, the most one descriptor can cover: such a
 * request is refused with a message rather than bound partially.
 *
 * Host transfers: where tensor memory is host-visible (integrated GPUs,
 * lavapipe) and no work is pending, writes are plain memcpy; otherwise they
 * go through the batch's staging buffer as a recorded copy, so a write stays
 * in order with the launches around it and returns at once. Reads wait for
 * the queue, then copy (through a staging buffer when not host-visible). */
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

static uint32_t type_for(vkp_device *d, uint32_t bits, uint32_t preferred) {
    if (bits & (1u << preferred)) return preferred;
    VkMemoryPropertyFlags want = d->phys->mem.memoryTypes[preferred].propertyFlags;
    for (uint32_t t = 0; t < d->phys->mem.memoryTypeCount; t++)
        if ((bits & (1u << t)) && (d->phys->mem.memoryTypes[t].propertyFlags & want) == want)
            return t;
    return UINT32_MAX;
}

/* A buffer with memory of its own; map it when host_visible. */
static gfp_status make_buffer(vkp_device *d, uint64_t size, uint32_t mem_type, bool map,
                              VkBuffer *buf, VkDeviceMemory *mem, void **ptr) {
    *buf = VK_NULL_HANDLE;
    *mem = VK_NULL_HANDLE;
    *ptr = NULL;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vk.CreateBuffer(d->dev, &bci, NULL, buf);
    if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkCreateBuffer");
    VkMemoryRequirements req;
    vk.GetBufferMemoryRequirements(d->dev, *buf, &req);
    uint32_t t = type_for(d, req.memoryTypeBits, mem_type);
    if (t == UINT32_MAX) {
        vk.DestroyBuffer(d->dev, *buf, NULL);
        *buf = VK_NULL_HANDLE;
        return pk_fail(GFP_ERR_DEVICE, "vulkan: no memory type suits a storage buffer");
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = t};
    r = vk.AllocateMemory(d->dev, &mai, NULL, mem);
    if (r == VK_SUCCESS) r = vk.BindBufferMemory(d->dev, *buf, *mem, 0);
    if (r == VK_SUCCESS && map) r = vk.MapMemory(d->dev, *mem, 0, VK_WHOLE_SIZE, 0, ptr);
    if (r != VK_SUCCESS) {
        if (*mem) vk.FreeMemory(d->dev, *mem, NULL);
        vk.DestroyBuffer(d->dev, *buf, NULL);
        *buf = VK_NULL_HANDLE;
        *mem = VK_NULL_HANDLE;
        return r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                   ? pk_fail(GFP_ERR_OUT_OF_MEMORY,
                              "vulkan: out of device memory allocating %llu bytes (%s)",
                              (unsigned long long)size, vkp_result_name(r))
                   : vkp_fail_vk(r, "allocating device memory");
    }
    return GFP_OK;
}

gfp_status vkp_hostbuf_create(vkp_device *d, uint64_t size, vkp_hostbuf *hb) {
    memset(hb, 0, sizeof *hb);
    hb->size = size;
    return make_buffer(d, size, d->host_type, true, &hb->buffer, &hb->memory, &hb->map);
}

void vkp_hostbuf_destroy(vkp_device *d, vkp_hostbuf *hb) {
    if (hb->buffer) vk.DestroyBuffer(d->dev, hb->buffer, NULL);
    if (hb->memory) vk.FreeMemory(d->dev, hb->memory, NULL); /* unmaps too */
    memset(hb, 0, sizeof *hb);
}

gfp_status vkp_memory_init(vkp_device *d) {
    /* A block small enough for any descriptor, large enough that a training
     * step needs few of them. */
    d->block_size = 64u << 20;
    if (d->block_size > d->max_range) d->block_size = d->max_range & ~(uint64_t)(d->align - 1);
    return GFP_OK;
}

static void block_destroy(vkp_device *d, vkp_block *b) {
    if (b->buffer) vk.DestroyBuffer(d->dev, b->buffer, NULL);
    if (b->memory) vk.FreeMemory(d->dev, b->memory, NULL);
    d->bytes_in_blocks -= b->size;
    while (b->free) {
        vkp_range *n = b->free->next;
        free(b->free);
        b->free = n;
    }
    free(b);
}

void vkp_memory_shutdown(vkp_device *d) {
    while (d->blocks) {
        vkp_block *n = d->blocks->next;
        block_destroy(d, d->blocks);
        d->blocks = n;
    }
}

static gfp_status block_create(vkp_device *d, uint64_t size, bool dedicated, vkp_block **out) {
    vkp_block *b = calloc(1, sizeof *b);
    if (!b) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    gfp_status st = make_buffer(d, size, d->mem_type, d->tensors_mapped, &b->buffer, &b->memory,
                                &b->map);
    if (st == GFP_OK && !dedicated) {
        b->free = calloc(1, sizeof *b->free);
        if (!b->free) st = pk_fail(GFP_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
        else b->free->size = size;
    }
    if (st != GFP_OK) {
        if (b->buffer) vk.DestroyBuffer(d->dev, b->buffer, NULL);
        if (b->memory) vk.FreeMemory(d->dev, b->memory, NULL);
        free(b);
        return st;
    }
    b->size = size;
    b->dedicated = dedicated;
    b->next = d->blocks;
    d->blocks = b;
    d->bytes_in_blocks += size;
    *out = b;
    return GFP_OK;
}

/* First fit in b; returns the offset or UINT64_MAX. */
static uint64_t block_take(vkp_block *b, uint64_t size) {
    for (vkp_range **p = &b->free; *p; p = &(*p)->next) {
        vkp_range *r = *p;
        if (r->size < size) continue;
        uint64_t off = r->offset;
        r->offset += size;
        r->size -= size;
        if (r->size == 0) {
            *p = r->next;
            free(r);
        }
        b->used += size;
        return off;
    }
    return UINT64_MAX;
}

/* Returns [off, off+size) to b's free list, merging neighbours. */
static void block_give(vkp_block *b, uint64_t off, uint64_t size) {
    b->used -= size;
    vkp_range **p = &b->free;
    while (*p && (*p)->offset < off) p = &(*p)->next;
    vkp_range *next = *p;
    /* The previous range, to merge with. */
    vkp_range *prev = NULL;
    for (vkp_range *r = b->free; r && r != next; r = r->next) prev = r;
    if (prev && prev->offset + prev->size == off) {
        prev->size += size;
        if (next && prev->offset + prev->size == next->offset) {
            prev->size += next->size;
            prev->next = next->next;
            free(next);
        }
        return;
    }
    if (next && off + size == next->offset) {
        next->offset = off;
        next->size += size;
        return;
    }
    vkp_range *n = malloc(sizeof *n);
    if (!n) return; /* leaks the range's space, never corrupts */
    n->offset = off;
    n->size = size;
    n->next = next;
    *p = n;
}

gfp_status vkp_buffer_alloc(void *device, uint64_t nbytes, gfp_buffer *buffer, void **host_ptr) {
    if (atomic_load(&vkp_exiting)) return vkp_exiting_error("buffer_alloc");
    vkp_device *d = device;
    if (!d || !buffer || !host_ptr)
        return pk_fail(GFP_ERR_INVALID, "buffer_alloc: device, buffer or host_ptr is NULL");
    *buffer = NULL;
    *host_ptr = NULL;
    if (nbytes == 0) return pk_fail(GFP_ERR_INVALID, "buffer_alloc: nbytes is 0 (must be > 0)");
    if (d->refreshing) return vkp_graph_scratch(d, nbytes, buffer);
    uint64_t max_bytes = d->max_range & ~(d->align - 1); /* as device_props reports */
    if (nbytes > max_bytes)
        return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                        "buffer_alloc: %llu bytes exceed this Vulkan device's maxStorageBufferRange "
                        "of %llu bytes, the most one shader binding can address; use smaller "
                        "tensors (split them) or another device",
                        (unsigned long long)nbytes, (unsigned long long)max_bytes);
    vkp_buf *h = calloc(1, sizeof *h);
    if (!h) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "buffer_alloc: out of host memory");
    uint64_t size = (nbytes + d->align - 1) & ~(d->align - 1);
    gfp_status st = GFP_OK;
    if (size >= d->block_size / 4) {
        st = block_create(d, size, true, &h->block);
        h->offset = 0;
    } else {
        uint64_t off = UINT64_MAX;
        for (vkp_block *b = d->blocks; b && off == UINT64_MAX; b = b->next) {
            if (b->dedicated) continue;
            off = block_take(b, size);
            if (off != UINT64_MAX) h->block = b;
        }
        if (off == UINT64_MAX) {
            st = block_create(d, d->block_size, false, &h->block);
            if (st == GFP_OK) off = block_take(h->block, size);
        }
        h->offset = off;
    }
    if (st != GFP_OK) {
        free(h);
        return st;
    }
    h->magic = VKP_BUF_MAGIC;
    h->size = nbytes;
    d->live_buffers++;
    *buffer = h;
    if (d->recording && (st = vkp_graph_note_alloc(d, h)) != GFP_OK) {
        vkp_buffer_free(d, h);
        *buffer = NULL;
    }
    return st;
}

vkp_buf *vkp_buf_check(vkp_device *d, gfp_buffer buffer, const char *what) {
    vkp_buf *b = buffer;
    if (!b) {
        pk_fail(GFP_ERR_INVALID, "%s: buffer is NULL", what);
        return NULL;
    }
    if (b->magic != VKP_BUF_MAGIC) {
        pk_fail(GFP_ERR_INVALID, "%s: the buffer is not a live vulkan buffer (freed already, or "
                 "from another plugin)", what);
        return NULL;
    }
    (void)d;
    return b;
}

void vkp_buffer_free(void *device, gfp_buffer buffer) {
    vkp_device *d = device;
    vkp_buf *h = buffer;
    if (!d || !h) return;
    if (atomic_load(&vkp_exiting)) { /* the device and its blocks are freed already */
        if (h->magic == VKP_BUF_MAGIC) {
            h->magic = 0;
            free(h);
        }
        return;
    }
    if (h->magic != VKP_BUF_MAGIC) {
        pk_log(GFP_LOG_ERROR, "vulkan: buffer_free of a handle that is not a live buffer "
                "(double free?); ignored");
        return;
    }
    /* A graph's scratch: kept for its recorded commands, freed with it. */
    if (d->refreshing || (d->recording && vkp_graph_keep(d, h))) return;
    vkp_block *b = h->block;
    uint64_t size = (h->size + d->align - 1) & ~(d->align - 1);
    uint64_t off = h->offset;
    h->magic = 0;
    free(h);
    d->live_buffers--;
    if (!b->dedicated) {
        /* Reusing the range needs no wait: later work is queued after the
         * work that still reads it. */
        block_give(b, off, size);
        if (b->used > 0) return;
        /* Keep one empty block for the next allocations, free the others. */
        bool other_empty = false;
        for (vkp_block *o = d->blocks; o && !other_empty; o = o->next)
            other_empty = o != b && !o->dedicated && o->used == 0;
        if (!other_empty) return;
    }
    vkp_batch_finish(d); /* queued work may still use the memory */
    for (vkp_block **p = &d->blocks; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            break;
        }
    block_destroy(d, b);
}

static gfp_status check_range(vkp_device *d, const char *what, gfp_buffer buffer, uint64_t offset,
                              uint64_t n, vkp_buf **out) {
    vkp_buf *b = vkp_buf_check(d, buffer, what);
    if (!b) return GFP_ERR_INVALID;
    *out = b;
    return pk_check_range(what, b->size, offset, n);
}

static void record_copy(vkp_batch *bt, VkBuffer src, uint64_t soff, VkBuffer dst, uint64_t doff,
                        uint64_t n) {
    vkp_batch_barrier(bt);
    VkBufferCopy region = {.srcOffset = soff, .dstOffset = doff, .size = n};
    vk.CmdCopyBuffer(bt->cb, src, dst, 1, &region);
}

gfp_status vkp_buffer_write(void *device, gfp_buffer buffer, uint64_t offset, const void *src,
                            uint64_t n) {
    if (atomic_load(&vkp_exiting)) return vkp_exiting_error("buffer_write");
    vkp_device *d = device;
    vkp_buf *b;
    gfp_status st = check_range(d, "buffer_write", buffer, offset, n, &b);
    if (st != GFP_OK || n == 0) return st;
    if (!src) return pk_fail(GFP_ERR_INVALID, "buffer_write: src is NULL");
    if (d->recording || d->refreshing)
        return pk_fail(GFP_ERR_UNSUPPORTED, "vulkan: buffer_write inside a graph's recording");
    if (b->block->map && vkp_batch_idle(d)) {
        memcpy((char *)b->block->map + b->offset + offset, src, n);
        return GFP_OK;
    }
    vkp_batch *bt;
    VkBuffer sbuf;
    uint64_t soff;
    void *map;
    if ((st = vkp_batch_staging(d, n, &bt, &sbuf, &soff, &map)) != GFP_OK) return st;
    memcpy(map, src, n);
    record_copy(bt, sbuf, soff, b->block->buffer, b->offset + offset, n);
    return vkp_batch_recorded(d);
}

gfp_status vkp_buffer_read(void *device, gfp_buffer buffer, uint64_t offset, void *dst,
                           uint64_t n) {
    if (atomic_load(&vkp_exiting)) return vkp_exiting_error("buffer_read");
    vkp_device *d = device;
    vkp_buf *b;
    gfp_status st = check_range(d, "buffer_read", buffer, offset, n, &b);
    if (st != GFP_OK) return st;
    if (n && !dst) return pk_fail(GFP_ERR_INVALID, "buffer_read: dst is NULL");
    if ((st = vkp_batch_finish(d)) != GFP_OK || n == 0) return st;
    if (b->block->map) {
        memcpy(dst, (const char *)b->block->map + b->offset + offset, n);
        return GFP_OK;
    }
    vkp_hostbuf tmp;
    if ((st = vkp_hostbuf_create(d, n, &tmp)) != GFP_OK) return st;
    vkp_batch *bt;
    st = vkp_batch_open(d, &bt);
    if (st == GFP_OK) {
        record_copy(bt, b->block->buffer, b->offset + offset, tmp.buffer, 0, n);
        st = vkp_batch_finish(d);
    }
    if (st == GFP_OK) memcpy(dst, tmp.map, n);
    vkp_hostbuf_destroy(d, &tmp);
    return st;
}

gfp_status vkp_buffer_copy(void *device, gfp_buffer src, uint64_t src_offset, gfp_buffer dst,
                           uint64_t dst_offset, uint64_t n) {
    if (atomic_load(&vkp_exiting)) return vkp_exiting_error("buffer_copy");
    vkp_device *d = device;
    vkp_buf *s, *t;
    gfp_status st = check_range(d, "buffer_copy (source)", src, src_offset, n, &s);
    if (st == GFP_OK) st = check_range(d, "buffer_copy (destination)", dst, dst_offset, n, &t);
    if (st != GFP_OK || n == 0) return st;
    vkp_batch *bt;
    if ((st = vkp_batch_open(d, &bt)) != GFP_OK) return st;
    record_copy(bt, s->block->buffer, s->offset + src_offset, t->block->buffer,
                t->offset + dst_offset, n);
    return vkp_batch_recorded(d);
}

gfp_status vkp_buffer_fill(void *device, gfp_buffer buffer, uint64_t offset, uint64_t n,
                           const void *pattern, uint32_t pattern_size) {
    if (atomic_load(&vkp_exiting)) return vkp_exiting_error("buffer_fill");
    vkp_device *d = device;
    gfp_status pst = pk_check_fill_pattern(n, pattern, pattern_size);
    if (pst != GFP_OK) return pst;
    vkp_buf *b;
    gfp_status st = check_range(d, "buffer_fill", buffer, offset, n, &b);
    if (st != GFP_OK || n == 0) return st;
    unsigned char p8[8];
    for (uint32_t i = 0; i < 8; i++) p8[i] = ((const unsigned char *)pattern)[i % pattern_size];
    uint64_t at = b->offset + offset;
    /* vkCmdFillBuffer repeats one 4-byte word at 4-byte granularity. */
    if (at % 4 == 0 && n % 4 == 0 && !memcmp(p8, p8 + 4, 4)) {
        uint32_t word;
        memcpy(&word, p8, 4);
        vkp_batch *bt;
        if ((st = vkp_batch_open(d, &bt)) != GFP_OK) return st;
        vkp_batch_barrier(bt);
        vk.CmdFillBuffer(bt->cb, b->block->buffer, at, n, word);
        return vkp_batch_recorded(d);
    }
    /* Anything else: the pattern built on the host, written in pieces. */
    enum { CHUNK = 1 << 20 };
    /* Only as much pattern as the fill needs: small fills are the common case. */
    size_t chunk = n < CHUNK ? (size_t)n : CHUNK;
    unsigned char *host = malloc(chunk);
    if (!host) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "buffer_fill: out of host memory");
    for (size_t i = 0; i < chunk; i++) host[i] = p8[i % 8];
    for (uint64_t done = 0; done < n && st == GFP_OK; done += chunk) {
        uint64_t len = n - done < chunk ? n - done : chunk; /* CHUNK is a multiple of 8 */
        st = vkp_buffer_write(d, buffer, offset + done, host, len);
    }
    free(host);
    return st;
}
