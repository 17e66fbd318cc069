/* SPDX-License-Identifier: BSD-3-Clause */
/* interop_dlpack.c — DLPack export (zero-copy) and import, for both the
 * unversioned DLManagedTensor (DLPack 0.6+) and DLPack 1.x's
 * DLManagedTensorVersioned (declared by graft/dlpack.h when the installed
 * <dlpack/dlpack.h> predates it).
 *
 * Export hands out the storage itself: the managed tensor holds one
 * reference to the storage (not to the tensor, so no autograd graph is kept
 * alive), released by its deleter.
 *
 * Import: a tensor graft exported is recognised by its deleter and comes
 * back as a view of the same storage; other host memory is adopted by the
 * device's plugin (ABI 1.1 buffer_wrap_host) and the producer's deleter runs
 * when the storage goes; what cannot be adopted is copied. */
#include <stdlib.h>
#include <string.h>

#include "interop_internal.h"

#if defined(GRAFT_HAVE_DLPACK)
#include "graft/dlpack.h"

/* kDLBool, which DLPack 0.8 added; older headers lack the name. */
#define GF_DL_BOOL 6

/* One record type serves both struct versions; an export uses one of them. */
typedef struct export_ctx {
    DLManagedTensor managed;
    DLManagedTensorVersioned managed_v;
    gf_storage *storage;
    int64_t shape[GF_MAX_RANK];
    int64_t strides[GF_MAX_RANK];
} export_ctx;

static void export_release(export_ctx *x) {
    gf__storage_release(x->storage);
    free(x);
}

static void export_deleter(DLManagedTensor *self) {
    if (self) export_release(self->manager_ctx);
}

static void export_deleter_v(DLManagedTensorVersioned *self) {
    if (self) export_release(self->manager_ctx);
}

static bool to_dl_dtype(gf_dtype dt, DLDataType *out) {
    out->lanes = 1;
    switch (dt) {
    case GF_F32: out->code = kDLFloat; out->bits = 32; return true;
    case GF_F64: out->code = kDLFloat; out->bits = 64; return true;
    case GF_F16: out->code = kDLFloat; out->bits = 16; return true;
    case GF_BF16: out->code = kDLBfloat; out->bits = 16; return true;
    case GF_I32: out->code = kDLInt; out->bits = 32; return true;
    case GF_I64: out->code = kDLInt; out->bits = 64; return true;
    case GF_BOOL: out->code = GF_DL_BOOL; out->bits = 8; return true;
    case GF_C64: out->code = kDLComplex; out->bits = 64; return true;
    case GF_C128: out->code = kDLComplex; out->bits = 128; return true;
    }
    return false;
}

static bool from_dl_dtype(DLDataType d, gf_dtype *out) {
    if (d.lanes != 1) return false;
    switch (d.code) {
    case kDLFloat:
        if (d.bits == 32) *out = GF_F32;
        else if (d.bits == 64) *out = GF_F64;
        else if (d.bits == 16) *out = GF_F16;
        else return false;
        return true;
    case kDLBfloat:
        if (d.bits != 16) return false;
        *out = GF_BF16;
        return true;
    case kDLInt:
        if (d.bits == 32) *out = GF_I32;
        else if (d.bits == 64) *out = GF_I64;
        else return false;
        return true;
    case GF_DL_BOOL:
        if (d.bits != 8) return false;
        *out = GF_BOOL;
        return true;
    case kDLComplex: /* interleaved (re, im), as C99's float/double complex */
        if (d.bits == 64) *out = GF_C64;
        else if (d.bits == 128) *out = GF_C128;
        else return false;
        return true;
    default:
        return false;
    }
}

static const char *dl_code_name(unsigned code) {
    switch (code) {
    case kDLInt: return "int";
    case kDLUInt: return "uint";
    case kDLFloat: return "float";
    case kDLBfloat: return "bfloat";
    case kDLComplex: return "complex";
    case GF_DL_BOOL: return "bool";
    default: return "code";
    }
}

/* The export record for t, with the DLTensor of the chosen struct filled in. */
static export_ctx *export_common(const gf_tensor *t, const char *op, bool versioned) {
    if (!t) {
        gf__null_arg(op, "t");
        return NULL;
    }
    if (gf_tensor_requires_grad(t)) {
        gf__error(GF_ERR_AUTOGRAD, "%s: the tensor requires grad; DLPack carries no autograd "
                  "history, so export gf_detach(t) instead", op);
        return NULL;
    }
    gf_device *dev = t->storage->device;
    if (!t->storage->host_ptr) {
        gf__error(GF_ERR_DEVICE, "%s: the tensor is on %s, whose memory the host cannot address; "
                  "copy it to a cpu device first (gf_to_device(t, gf_device_find(\"cpu\")))", op,
                  dev->spec);
        return NULL;
    }
    DLDataType dt;
    if (!to_dl_dtype(t->dtype, &dt)) {
        gf__error(GF_ERR_DTYPE, "%s: unknown dtype %d", op, (int)t->dtype);
        return NULL;
    }
    /* The consumer reads the memory directly: work queued on it must be done. */
    if (gf__dev_sync(dev) != GF_OK) return NULL;
    export_ctx *x = calloc(1, sizeof *x);
    if (!x) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        return NULL;
    }
    gf__storage_retain(t->storage);
    x->storage = t->storage;
    for (int i = 0; i < t->rank; i++) {
        x->shape[i] = t->sizes[i];
        x->strides[i] = t->strides[i];
    }
    DLTensor *d = versioned ? &x->managed_v.dl_tensor : &x->managed.dl_tensor;
    d->data = t->storage->host_ptr;
    d->device.device_type = kDLCPU;
    d->device.device_id = 0;
    d->ndim = t->rank;
    d->dtype = dt;
    d->shape = x->shape;
    d->strides = x->strides;
    d->byte_offset = (uint64_t)t->offset * gf_dtype_size(t->dtype);
    return x;
}

struct DLManagedTensor *gf_to_dlpack(const gf_tensor *t) {
    export_ctx *x = export_common(t, "gf_to_dlpack", false);
    if (!x) return NULL;
    x->managed.manager_ctx = x;
    x->managed.deleter = export_deleter;
    return &x->managed;
}

struct DLManagedTensorVersioned *gf_to_dlpack_versioned(const gf_tensor *t) {
    export_ctx *x = export_common(t, "gf_to_dlpack_versioned", true);
    if (!x) return NULL;
    x->managed_v.version.major = GRAFT_DLPACK_MAJOR;
    x->managed_v.version.minor = GRAFT_DLPACK_MINOR;
    x->managed_v.flags = 0; /* writable, shared */
    x->managed_v.manager_ctx = x;
    x->managed_v.deleter = export_deleter_v;
    return &x->managed_v;
}

/* The element offset of a graft export's geometry within its storage, or -1
 * when the fields do not describe a region inside it (then it is copied). */
static int64_t shared_offset(const DLTensor *d, const gf_storage *st, size_t es,
                             const int64_t *strides) {
    const char *base = (const char *)st->host_ptr;
    if (!d->data || !base) return -1;
    uintptr_t first = (uintptr_t)d->data + d->byte_offset; /* as integers: no pointer overflow */
    if (first < (uintptr_t)base) return -1;
    uint64_t off = (uint64_t)(first - (uintptr_t)base);
    if (off % es) return -1;
    int64_t last = (int64_t)(off / es), span;
    for (int i = 0; i < d->ndim; i++) {
        if (d->shape[i] == 0) return (int64_t)(off / es);
        if (strides[i] < 0 || __builtin_mul_overflow(d->shape[i] - 1, strides[i], &span) ||
            __builtin_add_overflow(last, span, &last))
            return -1;
    }
    if ((uint64_t)last >= st->nbytes / es) return -1;
    return (int64_t)(off / es);
}

/* Gathers the elements (any strides) into row-major host memory. */
static void gather(const DLTensor *d, const int64_t *strides, size_t es, int64_t numel,
                   unsigned char *dst) {
    if (numel == 0) return; /* data may be NULL */
    const char *first = (const char *)d->data + d->byte_offset;
    int64_t idx[GF_MAX_RANK] = {0};
    for (int64_t n = 0; n < numel; n++) {
        int64_t off = 0;
        for (int i = 0; i < d->ndim; i++) off += idx[i] * strides[i];
        memcpy(dst + (size_t)n * es, first + off * (int64_t)es, es);
        for (int i = d->ndim - 1; i >= 0; i--) {
            if (++idx[i] < d->shape[i]) break;
            idx[i] = 0;
        }
    }
}

/* Copies the elements (any strides) into a new contiguous tensor on target. */
static gf_tensor *import_copy(const DLTensor *d, const int64_t *strides, gf_dtype dtype,
                              int64_t numel, gf_device *target, const char *op) {
    size_t es = gf_dtype_size(dtype);
    unsigned char *host = malloc(numel ? (size_t)numel * es : 1);
    if (!host) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory for %lld elements", op,
                  (long long)numel);
        return NULL;
    }
    gather(d, strides, es, numel, host);
    if (dtype == GF_BOOL)
        for (int64_t i = 0; i < numel; i++) host[i] = host[i] != 0;
    gf_tensor *t = gf__empty(d->shape, d->ndim, dtype, target);
    if (t && numel &&
        gf__dev_write(target, t->storage->buffer, 0, host, (uint64_t)numel * es) != GF_OK) {
        gf_tensor_release(t);
        t = NULL;
    }
    free(host);
    return t;
}

/* The import of either struct: d its tensor, own the export record when
 * graft made it, release(ctx) hands the producer's memory back. On success
 * release has run or belongs to the result's storage; on failure it has not. */
static gf_tensor *import_common(const DLTensor *d, gf_device *dev, const export_ctx *own,
                                bool read_only, void (*release)(void *), void *ctx,
                                const char *op) {
    DLDeviceType dt = d->device.device_type;
    if (dt != kDLCPU && dt != kDLCUDAHost && dt != kDLROCMHost) {
        gf__error(GF_ERR_DEVICE, "%s: the tensor lives on DLPack device type %d (id %d), which "
                  "the host cannot address; graft imports host memory (kDLCPU): copy it to the "
                  "CPU first", op, (int)dt, d->device.device_id);
        return NULL;
    }
    if (d->ndim < 0 || d->ndim > GF_MAX_RANK || (d->ndim > 0 && !d->shape)) {
        gf__error(GF_ERR_INVALID, "%s: ndim %d is out of range [0, %d] or shape is NULL", op,
                  d->ndim, GF_MAX_RANK);
        return NULL;
    }
    gf_dtype dtype;
    if (!from_dl_dtype(d->dtype, &dtype)) {
        gf__error(d->dtype.lanes != 1 ? GF_ERR_INVALID : GF_ERR_DTYPE,
                  "%s: DLPack dtype %s%u (code %u) with %u lanes has no graft dtype; graft takes "
                  "float16/32/64, bfloat16, complex64/128, int32/64 and bool, one lane", op,
                  dl_code_name(d->dtype.code), (unsigned)d->dtype.bits,
                  (unsigned)d->dtype.code, (unsigned)d->dtype.lanes);
        return NULL;
    }
    int64_t numel = gf__checked_numel(d->shape, d->ndim, op);
    if (numel < 0) return NULL;
    if (numel > 0 && !d->data) {
        gf__error(GF_ERR_INVALID, "%s: data is NULL for a tensor of %lld elements", op,
                  (long long)numel);
        return NULL;
    }
    size_t es = gf_dtype_size(dtype);
    int64_t strides[GF_MAX_RANK];
    if (d->strides) memcpy(strides, d->strides, sizeof(int64_t) * (size_t)d->ndim);
    else gf__contiguous_strides(d->shape, d->ndim, strides); /* NULL: compact row-major */
    /* The byte distance from the first element to the farthest must fit in
     * int64 (the copy walks it), whatever the producer's strides. */
    int64_t reach = 0, span;
    for (int i = 0; numel > 0 && i < d->ndim; i++) {
        if (strides[i] == INT64_MIN ||
            !gf__mul_ok(d->shape[i] - 1, strides[i] < 0 ? -strides[i] : strides[i], &span) ||
            !gf__add_ok(reach, span, &reach) ||
            !gf__mul_ok(reach, (int64_t)es, &span)) {
            gf__error(GF_ERR_OVERFLOW, "%s: shape and strides reach past 2^63 bytes", op);
            return NULL;
        }
    }

    if (gf__ensure_init() != GF_OK) return NULL;
    gf_tensor *t = NULL;
    if (own) {
        int64_t off = shared_offset(d, own->storage, es, strides);
        if ((!dev || dev == own->storage->device) && off >= 0) {
            t = gf__view_storage(own->storage, dtype, d->shape, strides, d->ndim, off);
            if (!t) return NULL;
            if (release) release(ctx); /* the view holds its own reference */
            return t;
        }
        dev = dev ? dev : own->storage->device;
    }
    gf_device *target = dev ? dev : gf_device_default();
    if (!target) return NULL;
    /* An empty tensor's data may be NULL: no pointer is formed from it. */
    char *first = numel > 0 ? (char *)d->data + d->byte_offset : NULL;
    bool adoptable = numel > 0 && !read_only && dtype != GF_BOOL &&
                     (uintptr_t)first % es == 0 && gf__dev_can_adopt(target);
    for (int i = 0; adoptable && i < d->ndim; i++) adoptable = strides[i] >= 0;
    if (adoptable)
        return gf__adopt_host(first, d->shape, strides, d->ndim, dtype, target, release, ctx, op);
    t = import_copy(d, strides, dtype, numel, target, op);
    if (t && release) release(ctx); /* copied: the producer's memory is not needed */
    return t;
}

static void release_unversioned(void *ctx) {
    DLManagedTensor *m = ctx;
    if (m->deleter) m->deleter(m);
}

static void release_versioned(void *ctx) {
    DLManagedTensorVersioned *m = ctx;
    if (m->deleter) m->deleter(m);
}

gf_tensor *gf_from_dlpack(struct DLManagedTensor *managed, gf_device *dev) {
    if (!managed) {
        gf__error(GF_ERR_INVALID, "gf_from_dlpack: managed is NULL");
        return NULL;
    }
    const export_ctx *own = managed->deleter == export_deleter ? managed->manager_ctx : NULL;
    return gf__ret(import_common(&managed->dl_tensor, dev, own, false, release_unversioned,
                                 managed, "gf_from_dlpack"));
}

gf_tensor *gf_from_dlpack_versioned(struct DLManagedTensorVersioned *managed, gf_device *dev) {
    const char *op = "gf_from_dlpack_versioned";
    if (!managed) {
        gf__error(GF_ERR_INVALID, "%s: managed is NULL", op);
        return NULL;
    }
    if (managed->version.major != 1) {
        gf__error(GF_ERR_INVALID, "%s: the tensor follows DLPack %u.%u, whose layout this graft "
                  "does not know (it reads DLPack 1.x); ask the producer for version 1.x (in "
                  "Python: __dlpack__(max_version=(1, 0)))", op,
                  (unsigned)managed->version.major, (unsigned)managed->version.minor);
        return NULL;
    }
    const export_ctx *own = managed->deleter == export_deleter_v ? managed->manager_ctx : NULL;
    bool read_only = (managed->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    return gf__ret(import_common(&managed->dl_tensor, dev, own, read_only, release_versioned,
                                 managed, op));
}

#else /* !GRAFT_HAVE_DLPACK */

struct DLManagedTensor *gf_to_dlpack(const gf_tensor *t) {
    (void)t;
    gf__error(GF_ERR_UNSUPPORTED, "gf_to_dlpack: this graft was built without <dlpack/dlpack.h>; "
              "install DLPack (e.g. libdlpack-dev) and rebuild");
    return NULL;
}

gf_tensor *gf_from_dlpack(struct DLManagedTensor *managed, gf_device *dev) {
    (void)managed;
    (void)dev;
    gf__error(GF_ERR_UNSUPPORTED, "gf_from_dlpack: this graft was built without "
              "<dlpack/dlpack.h>; install DLPack (e.g. libdlpack-dev) and rebuild");
    return NULL;
}

struct DLManagedTensorVersioned *gf_to_dlpack_versioned(const gf_tensor *t) {
    (void)t;
    gf__error(GF_ERR_UNSUPPORTED, "gf_to_dlpack_versioned: this graft was built without "
              "<dlpack/dlpack.h>; install DLPack (e.g. libdlpack-dev) and rebuild");
    return NULL;
}

gf_tensor *gf_from_dlpack_versioned(struct DLManagedTensorVersioned *managed, gf_device *dev) {
    (void)managed;
    (void)dev;
    gf__error(GF_ERR_UNSUPPORTED, "gf_from_dlpack_versioned: this graft was built without "
              "<dlpack/dlpack.h>; install DLPack (e.g. libdlpack-dev) and rebuild");
    return NULL;
}

#endif
