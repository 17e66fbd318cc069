/* SPDX-License-Identifier: BSD-3-Clause */
/* tensor.c — tensor objects: lifetime, geometry, properties, host transfer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/ag_internal.h"
#include "graph/graph_internal.h"
#include "pk_half.h"

/* ------------------------------------------------------------ geometry */
int64_t gf__checked_numel(const int64_t *sizes, int rank, const char *op) {
    if (rank < 0 || rank > GF_MAX_RANK) {
        gf__error(GF_ERR_INVALID, "%s: rank %d is out of range [0, %d]", op, rank, GF_MAX_RANK);
        return -1;
    }
    if (rank > 0 && !sizes) {
        gf__error(GF_ERR_INVALID, "%s: sizes is NULL for rank %d", op, rank);
        return -1;
    }
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (sizes[i] < 0) {
            gf__error(GF_ERR_INVALID, "%s: size %lld of dim %d is negative; sizes must be >= 0",
                      op, (long long)sizes[i], i);
            return -1;
        }
    }
    /* The product of the sizes with 0 read as 1 bounds both the element
     * count and the contiguous strides (which a zero-size dim does not
     * shrink): keeping it below 2^59 keeps every stride, offset and byte
     * count of the tensor and its views within int64. */
    int64_t span = 1;
    for (int i = 0; i < rank; i++) {
        int64_t s = sizes[i] > 1 ? sizes[i] : 1;
        if (span > INT64_MAX / 16 / s) {
            char buf[200];
            gf__error(GF_ERR_OVERFLOW, "%s: a tensor of sizes %s has more elements (or, with "
                      "a zero-size dim, larger strides) than graft can address; the product of "
                      "the non-zero sizes must stay below 2^59", op,
                      gf__shape_str(sizes, rank, buf, sizeof buf));
            return -1;
        }
        span *= s;
        n *= sizes[i];
    }
    return n;
}

int64_t gf__numel(const gf_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->sizes[i];
    return n;
}

void gf__contiguous_strides(const int64_t *sizes, int rank, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= sizes[i] > 1 ? sizes[i] : 1;
    }
}

bool gf__is_contiguous(const gf_tensor *t) {
    int64_t expect = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->sizes[i] == 0) return true;
        if (t->sizes[i] != 1 && t->strides[i] != expect) return false;
        expect *= t->sizes[i];
    }
    return true;
}

void gf__desc(const gf_tensor *t, gfp_tensor *d) {
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->dtype = (int32_t)t->dtype;
    d->buffer = t->storage->buffer;
    d->offset = (uint64_t)t->offset * gf_dtype_size(t->dtype);
    d->rank = t->rank;
    for (int i = 0; i < t->rank; i++) {
        d->sizes[i] = t->sizes[i];
        d->strides[i] = t->strides[i];
    }
}

const char *gf__shape_str(const int64_t *sizes, int rank, char *buf, size_t len) {
    size_t used = 0;
    int w = snprintf(buf, len, "[");
    used = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < rank && used < len; i++) {
        w = snprintf(buf + used, len - used, "%s%lld", i ? ", " : "", (long long)sizes[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used < len) snprintf(buf + used, len - used, "]");
    return buf;
}

int gf__norm_dim(int dim, int rank, const char *op) {
    int r = rank > 0 ? rank : 1;
    if (dim < -r || dim >= r) {
        gf__error(GF_ERR_INDEX, "%s: dim %d is out of range for a tensor of rank %d (expected "
                  "a dim in [%d, %d])", op, dim, rank, -r, r - 1);
        return -1;
    }
    return dim < 0 ? dim + r : dim;
}

bool gf__same_device(const gf_tensor *a, const gf_tensor *b, const char *op) {
    if (a->storage->device == b->storage->device) return true;
    gf__error(GF_ERR_DEVICE, "%s: tensors are on different devices (%s and %s); move one with "
              "gf_to_device", op, a->storage->device->spec, b->storage->device->spec);
    return false;
}

/* ------------------------------------------------------------ lifetime */
static gf_tensor *alloc_tensor(void) {
    gf_tensor *t = calloc(1, sizeof *t);
    if (!t) gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for a tensor record");
    else {
        atomic_init(&t->refcount, 1);
        atomic_init(&t->scope_refs, 0);
        atomic_init(&t->held_refs, 0);
        t->capture_id = gf__graph_capture_id();
    }
    return t;
}

gf_tensor *gf__empty(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev) {
    int64_t n = gf__checked_numel(sizes, rank, "gf_empty");
    if (n < 0) return NULL;
    size_t es = gf_dtype_size(dtype);
    if (es == 0) {
        gf__error(GF_ERR_DTYPE, "unknown dtype %d", (int)dtype);
        return NULL;
    }
    if (!(dev->props.dtypes & GFP_DTYPE_BIT(dtype))) {
        gf__dtype_not_stored(dev, dtype);
        return NULL;
    }
    gf_tensor *t = alloc_tensor();
    if (!t) return NULL;
    t->storage = gf__storage_new(dev, (uint64_t)n * es);
    if (!t->storage) {
        free(t);
        return NULL;
    }
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->sizes[i] = sizes[i];
    gf__contiguous_strides(sizes, rank, t->strides);
    return t;
}

gf_tensor *gf__view(const gf_tensor *base, const int64_t *sizes, const int64_t *strides, int rank,
                    int64_t offset) {
    /* A view made in a captured region of a tensor made outside it: that
     * tensor is an input of the graph (checked on replay). */
    if (__builtin_expect(gf__tl_capture != NULL, 0)) gf__graph_note_source(base);
    return gf__view_storage(base->storage, base->dtype, sizes, strides, rank, offset);
}

gf_tensor *gf__view_storage(gf_storage *s, gf_dtype dtype, const int64_t *sizes,
                            const int64_t *strides, int rank, int64_t offset) {
    gf_tensor *t = alloc_tensor();
    if (!t) return NULL;
    gf__storage_retain(s);
    t->storage = s;
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++) {
        t->sizes[i] = sizes[i];
        t->strides[i] = strides[i];
    }
    t->offset = offset;
    return t;
}

void gf__tensor_set_data(gf_tensor *t, const gf_tensor *src) {
    if (t == src) return;
    gf__storage_retain(src->storage);
    gf__storage_release(t->storage);
    t->storage = src->storage;
    t->dtype = src->dtype;
    t->rank = src->rank;
    for (int i = 0; i < src->rank; i++) {
        t->sizes[i] = src->sizes[i];
        t->strides[i] = src->strides[i];
    }
    t->offset = src->offset;
}

gf_tensor *gf_tensor_retain(gf_tensor *t) {
    if (t) atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
    return t;
}

/* Over-releases (a reference released that an open scope holds: the scope
 * would release it again at its end) are refused with an error instead of
 * corrupting the heap. Always on, not only in debug builds: it costs one
 * atomic load next to the decrement, and the heap corruption it prevents
 * shows up, far from its cause, in the release builds users run.
 *
 * What it catches, reliably: a release that would leave fewer references
 * than the open scopes hold, i.e. the user releasing by hand a tensor that
 * a scope recorded and nobody else holds (a result, or an out-parameter such
 * as gf_max_dim's values). Nothing here reads freed memory: a freed tensor's
 * record may already be reused by malloc, so a poisoned header checked on a
 * second release would be undefined behaviour, and unreliable besides.
 * What it cannot tell: a release of a reference that graft itself holds too
 * (a leaf kept by its graph, a .grad) looks like any other. */
static void over_release(gf_tensor *t, long scoped, long held) {
    char shape[200];
    if (scoped == 0) {
        gf__error(GF_ERR_INVALID, "gf_tensor_release: %s%s tensor: no reference of the caller's "
                  "is left (%ld held by graft itself, e.g. as a .grad): a reference released "
                  "twice; the release was ignored. Release each reference once: "
                  "gf_tensor_grad's result is one reference",
                  gf_dtype_name(t->dtype), gf__shape_str(t->sizes, t->rank, shape, sizeof shape),
                  held);
        gf__log(GFP_LOG_ERROR, "%s", gf__message());
        return;
    }
    gf__error(GF_ERR_INVALID, "gf_tensor_release: %s%s tensor: this reference belongs to the open "
              "scope that recorded it (%ld held by scopes, %ld by graft itself, e.g. as a "
              ".grad), which releases it at gf_scope_end; the release was ignored. Inside a "
              "scope, do not release what graft returned (gf_tensor_grad's result and "
              "out-parameters too), or take it out with gf_scope_keep first",
              gf_dtype_name(t->dtype), gf__shape_str(t->sizes, t->rank, shape, sizeof shape),
              scoped, held);
    gf__log(GFP_LOG_ERROR, "%s", gf__message());
}

gf_tensor *gf__hold_adopt(gf_tensor *t) {
    if (t) atomic_fetch_add_explicit(&t->held_refs, 1, memory_order_relaxed);
    return t;
}

void gf__hold_release(gf_tensor *t) {
    if (!t) return;
    /* Release: a releaser that sees the reference gone sees the hold gone. */
    atomic_fetch_sub_explicit(&t->held_refs, 1, memory_order_release);
    gf_tensor_release(t);
}

void gf_tensor_release(gf_tensor *t) {
    if (!t) return;
    /* Acquire: a scope's end gives up its reference (scope_refs) before it
     * releases it, so seeing that release means seeing scope_refs lowered. */
    long rc = atomic_load_explicit(&t->refcount, memory_order_acquire);
    for (;;) {
        /* References that are not the releaser's to give: the scopes' and
         * graft's own holds. Only a scope's end or a hold's release takes
         * them, and each lowers its count first. */
        long scoped = atomic_load_explicit(&t->scope_refs, memory_order_acquire);
        long held = atomic_load_explicit(&t->held_refs, memory_order_acquire);
        if (rc - 1 < scoped + held) {
            over_release(t, scoped, held);
            return;
        }
        if (atomic_compare_exchange_weak_explicit(&t->refcount, &rc, rc - 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            break;
    }
    if (rc != 1) return;
    if (t->autograd) gf__ag_meta_free(t);
    gf__storage_release(t->storage);
    free(t);
}

void gf__bump_version(gf_tensor *t) {
    /* Inference tensors have no version counter (AUTOGRAD.md rule 10): no
     * graph ever saves one, so nothing could read it. */
    if (t->storage->inference) return;
    atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------ properties */
int gf_tensor_rank(const gf_tensor *t) { return t ? t->rank : 0; }
const int64_t *gf_tensor_sizes(const gf_tensor *t) { return t ? t->sizes : NULL; }
const int64_t *gf_tensor_strides(const gf_tensor *t) { return t ? t->strides : NULL; }
int64_t gf_tensor_numel(const gf_tensor *t) { return t ? gf__numel(t) : 0; }
int64_t gf_tensor_offset(const gf_tensor *t) { return t ? t->offset : 0; }
gf_dtype gf_tensor_dtype(const gf_tensor *t) { return t ? t->dtype : GF_F32; }
gf_device *gf_tensor_device(const gf_tensor *t) { return t ? t->storage->device : NULL; }
bool gf_tensor_is_contiguous(const gf_tensor *t) { return t ? gf__is_contiguous(t) : false; }
uint64_t gf_tensor_version(const gf_tensor *t) {
    return t ? atomic_load_explicit(&t->storage->version, memory_order_relaxed) : 0;
}
bool gf_tensor_shares_storage(const gf_tensor *a, const gf_tensor *b) {
    return a && b && a->storage == b->storage;
}

int64_t gf_tensor_size(const gf_tensor *t, int dim) {
    if (!t) {
        gf__null_arg("gf_tensor_size", "t");
        return -1;
    }
    int d = gf__norm_dim(dim, t->rank, "gf_tensor_size");
    if (d < 0) return -1;
    return t->rank == 0 ? 1 : t->sizes[d];
}

const char *gf_tensor_describe(const gf_tensor *t, char *buf, size_t len) {
    if (!buf || len == 0) return "";
    if (!t) {
        snprintf(buf, len, "(null tensor)");
        return buf;
    }
    char shape[200];
    snprintf(buf, len, "%s%s on %s", gf_dtype_name(t->dtype),
             gf__shape_str(t->sizes, t->rank, shape, sizeof shape), t->storage->device->spec);
    return buf;
}

/* ------------------------------------------------------------ host transfer */
gf_status gf_tensor_to_host(const gf_tensor *t, void *dst, size_t nbytes) {
    if (!t) return gf__null_arg("gf_tensor_to_host", "t");
    if (!dst && nbytes) return gf__null_arg_of("gf_tensor_to_host", "dst", GF__ARG_OUT);
    size_t want = (size_t)gf__numel(t) * gf_dtype_size(t->dtype);
    if (nbytes != want)
        return gf__error(GF_ERR_INVALID, "gf_tensor_to_host: nbytes is %zu but the tensor holds "
                         "%zu bytes (numel * dtype size)", nbytes, want);
    if (want == 0) return GF_OK;
    gf_tensor *c = gf__contig(t);
    if (!c) return gf__status();
    gf_status s = gf__dev_read(c->storage->device, c->storage->buffer,
                               (uint64_t)c->offset * gf_dtype_size(c->dtype), dst, want);
    gf_tensor_release(c);
    return s;
}

gf_status gf_tensor_from_host(gf_tensor *t, const void *src, size_t nbytes) {
    if (!t) return gf__null_arg("gf_tensor_from_host", "t");
    if (!src && nbytes) return gf__null_arg_of("gf_tensor_from_host", "src", GF__ARG_HOST);
    size_t want = (size_t)gf__numel(t) * gf_dtype_size(t->dtype);
    if (nbytes != want)
        return gf__error(GF_ERR_INVALID, "gf_tensor_from_host: nbytes is %zu but the tensor "
                         "holds %zu bytes (numel * dtype size)", nbytes, want);
    gf_status s = GF_OK;
    if (want && gf__is_contiguous(t)) {
        gf__graph_note(t->storage);
        s = gf__dev_write(t->storage->device, t->storage->buffer,
                          (uint64_t)t->offset * gf_dtype_size(t->dtype), src, want);
    } else if (want) {
        gf_tensor *tmp = gf__empty(t->sizes, t->rank, t->dtype, t->storage->device);
        if (!tmp) return gf__status();
        gf__graph_note(tmp->storage);
        s = gf__dev_write(tmp->storage->device, tmp->storage->buffer, 0, src, want);
        if (s == GF_OK) s = gf__copy_into(t, tmp);
        gf_tensor_release(tmp);
    }
    if (s == GF_OK) gf__bump_version(t);
    return s;
}

static double load_as_double(const void *p, gf_dtype dt) {
    switch (dt) {
    case GF_F32: return *(const float *)p;
    case GF_F64: return *(const double *)p;
    case GF_I32: return *(const int32_t *)p;
    case GF_I64: return (double)*(const int64_t *)p;
    case GF_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    case GF_F16: { uint16_t h; memcpy(&h, p, 2); return pk_f16_to_f32(h); }
    case GF_BF16: { uint16_t h; memcpy(&h, p, 2); return pk_bf16_to_f32(h); }
    default: return 0.0;
    }
}

gf_status gf_tensor_item(const gf_tensor *t, double *value) {
    if (!t) return gf__null_arg("gf_tensor_item", "t");
    if (!value) return gf__null_arg_of("gf_tensor_item", "value", GF__ARG_OUT);
    if (gf__numel(t) != 1) {
        char buf[200];
        return gf__error(GF_ERR_SHAPE, "gf_tensor_item: the tensor has %lld elements (sizes %s); "
                         "item needs exactly one", (long long)gf__numel(t),
                         gf__shape_str(t->sizes, t->rank, buf, sizeof buf));
    }
    int64_t zero[GF_MAX_RANK] = {0};
    return gf_tensor_get(t, zero, value);
}

gf_status gf_tensor_get(const gf_tensor *t, const int64_t *index, double *value) {
    if (!t) return gf__null_arg("gf_tensor_get", "t");
    if ((!index && t->rank) || !value) return gf__null_arg_of("gf_tensor_get", !value ? "value" : "index",
                        !value ? GF__ARG_OUT : GF__ARG_ARRAY);
    if (gf_dtype_is_complex(t->dtype))
        return gf__error(GF_ERR_DTYPE, "gf_tensor_get: dtype %s is complex and cannot be read as "
                         "one double; use gf_tensor_get_complex or gf_tensor_item_complex",
                         gf_dtype_name(t->dtype));
    if (gf_dtype_size(t->dtype) > 8)
        return gf__error(GF_ERR_DTYPE, "gf_tensor_get: dtype %s cannot be read as a double",
                         gf_dtype_name(t->dtype));
    int64_t off = t->offset;
    for (int i = 0; i < t->rank; i++) {
        if (index[i] < 0 || index[i] >= t->sizes[i])
            return gf__error(GF_ERR_INDEX, "gf_tensor_get: index %lld is out of range for dim %d "
                             "of size %lld", (long long)index[i], i, (long long)t->sizes[i]);
        off += index[i] * t->strides[i];
    }
    unsigned char buf[8];
    size_t es = gf_dtype_size(t->dtype);
    gf_status s = gf__dev_read(t->storage->device, t->storage->buffer, (uint64_t)off * es, buf, es);
    if (s != GF_OK) return s;
    *value = load_as_double(buf, t->dtype);
    return GF_OK;
}
