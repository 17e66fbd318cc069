/* SPDX-License-Identifier: BSD-3-Clause */
/* interop_adopt.c — tensors over host memory another library owns.
 *
 * The plugin adopts the memory as a buffer (ABI 1.1 buffer_wrap_host), so
 * its kernels run on it in place; the storage calls the owner's release
 * after the plugin let go of it (alloc.c). The buffer spans exactly the
 * bytes the tensor reaches, from element 0: a plugin's bounds checks then
 * hold for the view as they do for its own buffers. */
#include <stdint.h>
#include <string.h>

#include "interop_internal.h"

gf_tensor *gf__adopt_host(void *data, const int64_t *sizes, const int64_t *strides, int rank,
                          gf_dtype dtype, gf_device *dev, void (*release)(void *ctx), void *ctx,
                          const char *op) {
    if (rank < 0 || rank > GF_MAX_RANK) {
        gf__error(GF_ERR_INVALID, "%s: rank %d is out of range [0, %d]", op, rank, GF_MAX_RANK);
        return NULL;
    }
    if (rank > 0 && !sizes) {
        gf__null_arg_of(op, "sizes", GF__ARG_ARRAY);
        return NULL;
    }
    int64_t numel = gf__checked_numel(sizes, rank, op);
    if (numel < 0) return NULL;
    size_t es = gf_dtype_size(dtype);
    if (!es) {
        gf__error(GF_ERR_DTYPE, "%s: unknown dtype %d", op, (int)dtype);
        return NULL;
    }
    int64_t st[GF_MAX_RANK];
    if (strides) memcpy(st, strides, sizeof(int64_t) * (size_t)rank);
    else gf__contiguous_strides(sizes, rank, st);
    if (gf__ensure_init() != GF_OK) return NULL;
    gf_device *target = dev ? dev : gf_device_default();
    if (!target) return NULL;
    /* As gf_empty: a tensor of a dtype the device does not store could be
     * made here, but nothing could compute on it, and a file graft wrote
     * from it would not load back. */
    if (!(target->props.dtypes & GFP_DTYPE_BIT(dtype))) {
        gf__dtype_not_stored(target, dtype);
        return NULL;
    }
    if (numel == 0) {
        /* Nothing to share: an empty tensor, and the memory goes back now. */
        gf_tensor *t = gf__empty(sizes, rank, dtype, target);
        if (t && release) release(ctx);
        return t;
    }
    if (!data) {
        gf__error(GF_ERR_INVALID, "%s: data is NULL for a tensor of %lld elements", op,
                  (long long)numel);
        return NULL;
    }
    if ((uintptr_t)data % es) {
        gf__error(GF_ERR_INVALID, "%s: data %p is not aligned to the %zu bytes of a %s element; "
                  "copy it into an aligned buffer (or use gf_tensor_from_host)", op, data, es,
                  gf_dtype_name(dtype));
        return NULL;
    }
    int64_t last = 0, span;
    for (int i = 0; i < rank; i++) {
        if (st[i] < 0) {
            gf__error(GF_ERR_INVALID, "%s: stride %lld in dim %d is negative; graft views have "
                      "strides >= 0 (copy the data instead)", op, (long long)st[i], i);
            return NULL;
        }
        if (__builtin_mul_overflow(sizes[i] - 1, st[i], &span) ||
            __builtin_add_overflow(last, span, &last)) {
            gf__error(GF_ERR_OVERFLOW, "%s: sizes and strides reach past 2^63 elements", op);
            return NULL;
        }
    }
    uint64_t nbytes;
    if (__builtin_mul_overflow((uint64_t)last + 1, (uint64_t)es, &nbytes)) {
        gf__error(GF_ERR_OVERFLOW, "%s: the memory the tensor reaches exceeds 2^64 bytes", op);
        return NULL;
    }
    gf_storage *s = gf__storage_adopt(target, data, nbytes, release, ctx);
    if (!s) return NULL;
    gf_tensor *t = gf__view_storage(s, dtype, sizes, st, rank, 0);
    if (!t) {
        /* The record could not be made: hand the memory back, but the
         * caller keeps ownership (release must not run on failure). */
        s->release = NULL;
    }
    gf__storage_release(s); /* the view holds its own reference */
    return t;
}

gf_tensor *gf_from_host_memory(void *data, const int64_t *sizes, const int64_t *strides, int rank,
                               gf_dtype dtype, gf_device *dev, void (*release)(void *ctx),
                               void *ctx) {
    return gf__ret(gf__adopt_host(data, sizes, strides, rank, dtype, dev, release, ctx,
                                  "gf_from_host_memory"));
}
