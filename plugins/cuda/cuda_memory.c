/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_memory.c — buffers, host transfers, fills and synchronisation.
 *
 * Allocation is stream-ordered (cudaMallocAsync on the device's stream, from
 * the device's default memory pool); the core's caching allocator sits on
 * top, so these calls are rare. Freeing is stream-ordered too: the memory
 * returns to the pool once the work enqueued before the free has run, so a
 * buffer may be freed while kernels that use it are still queued. Devices
 * without memory pools fall back to cudaMalloc / cudaFree.
 *
 * Host transfers go through two pinned staging halves (CU_STAGE_BYTES each)
 * with an event per half: the host waits for a half's event before touching
 * it, the device copies are enqueued on the stream. Writes therefore return
 * once the source is in pinned memory (the ABI only asks that src may be
 * reused); reads wait for the stream, which also waits for every earlier
 * launch, as the ABI requires. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* ------------------------------------------------------------ setup */
gfp_status cu_memory_open(cu_device *dev) {
    for (int h = 0; h < 2; h++) {
        void *p = NULL;
        if (cudaHostAlloc(&p, CU_STAGE_BYTES, cudaHostAllocPortable) != cudaSuccess ||
            cudaEventCreateWithFlags(&dev->stage_done[h], cudaEventDisableTiming) != cudaSuccess) {
            (void)cudaGetLastError();
            if (p) cudaFreeHost(p);
            pk_log(GFP_LOG_WARN, "cuda: device %d: no pinned staging memory; host transfers will be "
                   "synchronous", dev->ordinal);
            cu_memory_close(dev);
            break;
        }
        dev->stage[h] = p;
    }
    gfp_status st = cu_check(cudaMalloc((void **)&dev->scratch, 2 * sizeof(int64_t)),
                             "device_open", "cudaMalloc (scratch)");
    if (st == GFP_OK)
        st = cu_check(cudaHostAlloc((void **)&dev->scratch_host, 2 * sizeof(int64_t), 0),
                      "device_open", "cudaHostAlloc (scratch)");
    return st;
}

void cu_memory_close(cu_device *dev) {
    for (int h = 0; h < 2; h++) {
        if (dev->stage_done[h]) cudaEventDestroy(dev->stage_done[h]);
        if (dev->stage[h]) cudaFreeHost(dev->stage[h]);
        dev->stage_done[h] = NULL;
        dev->stage[h] = NULL;
    }
    if (dev->scratch) cudaFree(dev->scratch);
    if (dev->scratch_host) cudaFreeHost(dev->scratch_host);
    dev->scratch = NULL;
    dev->scratch_host = NULL;
    (void)cudaGetLastError();
}

/* ------------------------------------------------------------ raw memory */
static cudaError_t raw_alloc(cu_device *dev, void **p, uint64_t nbytes) {
    cudaError_t e = dev->async_alloc ? cudaMallocAsync(p, (size_t)nbytes, dev->stream)
                                     : cudaMalloc(p, (size_t)nbytes);
    /* While a graph is captured, no waiting for the stream (cu_temp_alloc
     * refuses first where there are no pools). */
    if (e != cudaErrorMemoryAllocation || dev->capturing) return e;
    /* The pool may hold freed memory that other pools or processes could
     * not reuse: wait for pending frees, give it back, and try once more. */
    (void)cudaGetLastError();
    cudaStreamSynchronize(dev->stream);
    if (dev->async_alloc) {
        cudaMemPool_t pool;
        if (cudaDeviceGetDefaultMemPool(&pool, dev->ordinal) == cudaSuccess)
            cudaMemPoolTrimTo(pool, 0);
    }
    (void)cudaGetLastError();
    return dev->async_alloc ? cudaMallocAsync(p, (size_t)nbytes, dev->stream)
                            : cudaMalloc(p, (size_t)nbytes);
}

static void raw_free(cu_device *dev, void *p) {
    if (!p) return;
    if (dev->async_alloc) cudaFreeAsync(p, dev->stream);
    else cudaFree(p);
    (void)cudaGetLastError(); /* a free never fails the caller */
}

gfp_status cu_temp_alloc(cu_device *dev, uint64_t nbytes, void **ptr, const char *op) {
    *ptr = NULL;
    if (dev->capturing && !dev->async_alloc)
        return cu_capture_refuse(dev, op, "scratch memory without memory pools (cudaMalloc)");
    cudaError_t e = raw_alloc(dev, ptr, nbytes ? nbytes : 1);
    if (e == cudaErrorMemoryAllocation)
        return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                       "%s: out of device memory for %llu bytes of scratch on %s: %s",
                       op, (unsigned long long)nbytes, dev->name, cudaGetErrorName(e));
    return cu_check(e, op, "cudaMallocAsync (scratch)");
}

void cu_temp_free(cu_device *dev, void *ptr) { raw_free(dev, ptr); }

/* ------------------------------------------------------------ buffers */
gfp_status cu_buffer_alloc(void *device, uint64_t nbytes, gfp_buffer *buffer, void **host_ptr) {
    cu_device *dev = device;
    if (!buffer || !host_ptr)
        return pk_fail(GFP_ERR_INVALID, "buffer_alloc: buffer or host_ptr is NULL");
    *buffer = NULL;
    *host_ptr = NULL; /* device memory is not host-addressable */
    if (nbytes == 0) return pk_fail(GFP_ERR_INVALID, "buffer_alloc: nbytes is 0 (the ABI requires > 0)");
    if (nbytes > (uint64_t)SIZE_MAX / 2)
        return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                       "buffer_alloc: %llu bytes is more than any device holds; the size is "
                       "probably miscomputed",
                       (unsigned long long)nbytes);
    gfp_status st = cu_use(dev, "buffer_alloc");
    if (st != GFP_OK) return st;
    cu_buffer *b = malloc(sizeof *b);
    if (!b) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "buffer_alloc: out of host memory");
    void *p = NULL;
    cudaError_t e = raw_alloc(dev, &p, nbytes);
    if (e != cudaSuccess) {
        free(b);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            size_t free_b = 0, total_b = 0;
            cudaMemGetInfo(&free_b, &total_b);
            (void)cudaGetLastError();
            return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                           "buffer_alloc: out of device memory allocating %llu bytes on %s "
                           "(%llu of %llu MiB free): cudaErrorMemoryAllocation",
                           (unsigned long long)nbytes, dev->name,
                           (unsigned long long)(free_b >> 20), (unsigned long long)(total_b >> 20));
        }
        return cu_check(e, "buffer_alloc", "cudaMallocAsync");
    }
    if ((uintptr_t)p % 64 != 0) { /* the runtime aligns to 256; the ABI asks 64 */
        raw_free(dev, p);
        free(b);
        return pk_fail(GFP_ERR_INTERNAL, "buffer_alloc: the CUDA runtime returned an address "
                       "that is not 64-byte aligned");
    }
    *b = (cu_buffer){.magic = CU_BUFFER_MAGIC, .ptr = p, .nbytes = nbytes, .dev = dev};
    *buffer = b;
    return GFP_OK;
}

void cu_buffer_free(void *device, gfp_buffer buffer) {
    cu_device *dev = device;
    cu_buffer *b = buffer;
    if (!b) return;
    if (b->magic != CU_BUFFER_MAGIC) {
        pk_log(GFP_LOG_ERROR, "cuda: buffer_free of a handle that is not a live buffer (double "
               "free?); ignored");
        return;
    }
    b->magic = 0;
    if (cudaSetDevice(dev->ordinal) == cudaSuccess) raw_free(dev, b->ptr);
    (void)cudaGetLastError();
    free(b);
}

/* Checks buffer + offset .. + n against the allocation. */
static gfp_status check_range(const char *what, const cu_device *dev, gfp_buffer buffer,
                              uint64_t offset, uint64_t n) {
    const cu_buffer *b = buffer;
    if (!b) return pk_fail(GFP_ERR_INVALID, "%s: buffer is NULL", what);
    if (b->magic != CU_BUFFER_MAGIC)
        return pk_fail(GFP_ERR_INVALID, "%s: the buffer is not a live cuda buffer (freed "
                       "already, or from another plugin)", what);
    if (b->dev != dev)
        return pk_fail(GFP_ERR_INVALID, "%s: the buffer belongs to another cuda device", what);
    return pk_check_range(what, b->nbytes, offset, n);
}

static char *dptr(gfp_buffer buffer, uint64_t offset) {
    return (char *)((const cu_buffer *)buffer)->ptr + offset;
}

/* Host -> device through the staging halves. */
gfp_status cu_upload(cu_device *dev, void *dst, const void *src, uint64_t n, const char *op) {
    /* A graph would copy the staging memory as it is at replay. */
    if (dev->capturing) return cu_capture_refuse(dev, op, "an upload of host data");
    if (!dev->stage[0]) {
        /* Pageable source: on the device's stream (the legacy stream does
         * not order with it), and waited for, since src is the caller's. */
        gfp_status st = cu_check(cudaMemcpyAsync(dst, src, (size_t)n, cudaMemcpyHostToDevice,
                                                 dev->stream),
                                 op, "cudaMemcpyAsync (host to device)");
        if (st != GFP_OK) return st;
        return cu_check(cudaStreamSynchronize(dev->stream), op, "cudaStreamSynchronize");
    }
    uint64_t done = 0;
    while (done < n) {
        int h = dev->stage_next;
        dev->stage_next ^= 1;
        size_t len = (size_t)(n - done < CU_STAGE_BYTES ? n - done : CU_STAGE_BYTES);
        gfp_status st = cu_check(cudaEventSynchronize(dev->stage_done[h]), op,
                                 "waiting for a staging buffer");
        if (st != GFP_OK) return st;
        memcpy(dev->stage[h], (const char *)src + done, len);
        st = cu_check(cudaMemcpyAsync((char *)dst + done, dev->stage[h], len,
                                      cudaMemcpyHostToDevice, dev->stream),
                      op, "cudaMemcpyAsync (host to device)");
        if (st == GFP_OK)
            st = cu_check(cudaEventRecord(dev->stage_done[h], dev->stream), op, "cudaEventRecord");
        if (st != GFP_OK) return st;
        done += len;
    }
    return GFP_OK;
}

gfp_status cu_buffer_write(void *device, gfp_buffer buffer, uint64_t offset, const void *src,
                           uint64_t n) {
    cu_device *dev = device;
    gfp_status st = check_range("buffer_write", dev, buffer, offset, n);
    if (st != GFP_OK || n == 0) return st;
    if (!src) return pk_fail(GFP_ERR_INVALID, "buffer_write: src is NULL");
    if ((st = cu_use(dev, "buffer_write")) != GFP_OK) return st;
    return cu_upload(dev, dptr(buffer, offset), src, n, "buffer_write");
}

gfp_status cu_buffer_read(void *device, gfp_buffer buffer, uint64_t offset, void *dst,
                          uint64_t n) {
    cu_device *dev = device;
    gfp_status st = check_range("buffer_read", dev, buffer, offset, n);
    if (st != GFP_OK || n == 0) return st;
    if (!dst) return pk_fail(GFP_ERR_INVALID, "buffer_read: dst is NULL");
    if ((st = cu_use(dev, "buffer_read")) != GFP_OK) return st;
    const char *src = dptr(buffer, offset);
    if (!dev->stage[0]) {
        st = cu_check(cudaMemcpyAsync(dst, src, (size_t)n, cudaMemcpyDeviceToHost, dev->stream),
                      "buffer_read", "cudaMemcpyAsync (device to host)");
        if (st != GFP_OK) return st;
        return cu_check(cudaStreamSynchronize(dev->stream), "buffer_read",
                        "waiting for the device (earlier work or the copy)");
    }
    /* Chunk i goes to half i % 2; the host copies chunk i - 1 out while the
     * device copies chunk i in. */
    uint64_t chunks = (n + CU_STAGE_BYTES - 1) / CU_STAGE_BYTES;
    for (uint64_t i = 0; i <= chunks; i++) {
        if (i < chunks) {
            int h = (int)(i & 1);
            size_t len = (size_t)(n - i * CU_STAGE_BYTES < CU_STAGE_BYTES ? n - i * CU_STAGE_BYTES
                                                                          : CU_STAGE_BYTES);
            /* The half may still feed an earlier upload: the stream orders the
             * device side, the event only guards the host's use. */
            st = cu_check(cudaMemcpyAsync(dev->stage[h], src + i * CU_STAGE_BYTES, len,
                                          cudaMemcpyDeviceToHost, dev->stream),
                          "buffer_read", "cudaMemcpyAsync (device to host)");
            if (st == GFP_OK)
                st = cu_check(cudaEventRecord(dev->stage_done[h], dev->stream), "buffer_read",
                              "cudaEventRecord");
            if (st != GFP_OK) return st;
        }
        if (i > 0) {
            uint64_t j = i - 1;
            int h = (int)(j & 1);
            size_t len = (size_t)(n - j * CU_STAGE_BYTES < CU_STAGE_BYTES ? n - j * CU_STAGE_BYTES
                                                                          : CU_STAGE_BYTES);
            st = cu_check(cudaEventSynchronize(dev->stage_done[h]), "buffer_read",
                          "waiting for the device (earlier work or the copy)");
            if (st != GFP_OK) return st;
            memcpy((char *)dst + j * CU_STAGE_BYTES, dev->stage[h], len);
        }
    }
    dev->stage_next = (int)(chunks & 1);
    return GFP_OK;
}

gfp_status cu_buffer_copy(void *device, gfp_buffer src, uint64_t src_offset, gfp_buffer dst,
                          uint64_t dst_offset, uint64_t n) {
    cu_device *dev = device;
    gfp_status st = check_range("buffer_copy (source)", dev, src, src_offset, n);
    if (st == GFP_OK) st = check_range("buffer_copy (destination)", dev, dst, dst_offset, n);
    if (st != GFP_OK || n == 0) return st;
    if ((st = cu_use(dev, "buffer_copy")) != GFP_OK) return st;
    return cu_check(cudaMemcpyAsync(dptr(dst, dst_offset), dptr(src, src_offset), (size_t)n,
                                    cudaMemcpyDeviceToDevice, dev->stream),
                    "buffer_copy", "cudaMemcpyAsync (device to device)");
}

gfp_status cu_buffer_fill(void *device, gfp_buffer buffer, uint64_t offset, uint64_t n,
                          const void *pattern, uint32_t pattern_size) {
    cu_device *dev = device;
    gfp_status pst = pk_check_fill_pattern(n, pattern, pattern_size);
    if (pst != GFP_OK) return pst;
    gfp_status st = check_range("buffer_fill", dev, buffer, offset, n);
    if (st != GFP_OK || n == 0) return st;
    if ((st = cu_use(dev, "buffer_fill")) != GFP_OK) return st;
    const unsigned char *p = pattern;
    bool bytewise = true; /* every byte alike: cudaMemsetAsync does it */
    for (uint32_t i = 1; i < pattern_size; i++) bytewise = bytewise && p[i] == p[0];
    if (bytewise)
        return cu_check(cudaMemsetAsync(dptr(buffer, offset), p[0], (size_t)n, dev->stream),
                        "buffer_fill", "cudaMemsetAsync");
    uint64_t bits = 0;
    memcpy(&bits, pattern, pattern_size);
    /* The pattern's alignment: offsets of views are multiples of their
     * element size, which is what the core fills with. */
    if (((uintptr_t)dptr(buffer, offset)) % pattern_size)
        return pk_fail(GFP_ERR_INVALID, "buffer_fill: offset %llu is not a multiple of the "
                       "%u-byte pattern", (unsigned long long)offset, (unsigned)pattern_size);
    return cu_check(cuk_fill_bytes(dev->stream, dptr(buffer, offset), n / pattern_size, bits,
                                   (int)pattern_size),
                    "buffer_fill", "the fill kernel launch");
}

gfp_status cu_synchronize(void *device) {
    cu_device *dev = device;
    gfp_status st = cu_use(dev, "synchronize");
    if (st != GFP_OK) return st;
    return cu_check(cudaStreamSynchronize(dev->stream), "synchronize",
                    "cudaStreamSynchronize (an earlier launch failed on the device)");
}

gfp_status cu_read_scratch(cu_device *dev, int64_t out[2], const char *op) {
    if (dev->capturing) return cu_capture_refuse(dev, op, "a result read back to the host");
    gfp_status st = cu_check(cudaMemcpyAsync(dev->scratch_host, dev->scratch, 2 * sizeof(int64_t),
                                             cudaMemcpyDeviceToHost, dev->stream),
                             op, "cudaMemcpyAsync (check result)");
    if (st == GFP_OK)
        st = cu_check(cudaStreamSynchronize(dev->stream), op, "cudaStreamSynchronize");
    if (st == GFP_OK) memcpy(out, dev->scratch_host, 2 * sizeof(int64_t));
    return st;
}
