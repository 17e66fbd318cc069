/* ref_plugin.c — the reference plugin's entry point, device and memory.
 *
 * One device, host memory. A buffer handle is the address of byte 0 of a
 * 64-byte aligned block; a small header in front of it records the size, so
 * reads, writes, copies and fills out of bounds are reported instead of
 * corrupting memory (the reference is the oracle: it should catch the core's
 * mistakes, not hide them). ref_hostbuf.c holds that code; it also adopts
 * memory the caller owns (buffer_wrap_host, ABI 1.1). Kernels live in one
 * file per op family; launch and query_op route to the family that handles
 * the op. */
#define _POSIX_C_SOURCE 200809L /* sysconf */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ref_internal.h"
#include "plugin_negotiate.h"

const gfp_host *ref_host;

/* ------------------------------------------------------------ families */
typedef struct ref_family {
    bool (*handles)(uint32_t op);
    uint32_t (*support)(const gfp_op_query *q);
    gfp_status (*launch)(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params);
} ref_family;

#define REF_FAMILY_ENTRY(f) {ref_##f##_handles, ref_##f##_support, ref_##f##_launch}
static const ref_family families[] = {
    REF_FAMILY_ENTRY(elementwise), REF_FAMILY_ENTRY(random), REF_FAMILY_ENTRY(reduce),
    REF_FAMILY_ENTRY(matmul),      REF_FAMILY_ENTRY(norm),   REF_FAMILY_ENTRY(index),
    REF_FAMILY_ENTRY(conv),        REF_FAMILY_ENTRY(pool),
};
#undef REF_FAMILY_ENTRY

static const ref_family *family_of(uint32_t op) {
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (families[i].handles(op)) return &families[i];
    return NULL;
}

/* ------------------------------------------------------------ plugin */
static int device_token; /* its address is the device handle */

static gfp_status ref_init(void **plugin_ctx) {
    if (plugin_ctx) *plugin_ctx = NULL;
    return GFP_OK;
}

static void ref_shutdown(void *plugin_ctx) {
    (void)plugin_ctx;
    long n = ref_hostbuf_live();
    if (n > 0 && ref_host) {
        char msg[160];
        /* The core promises to free everything first; a leak is its bug. */
        snprintf(msg, sizeof msg,
                 "reference: %ld buffer(s) still allocated at shutdown (leaked by the caller)", n);
        ref_host->log(ref_host->host_ctx, GFP_LOG_WARN, msg);
    }
}

static gfp_status ref_device_count(void *plugin_ctx, uint32_t *count) {
    (void)plugin_ctx;
    if (!count) return ref_fail(GFP_ERR_INVALID, "device_count: count is NULL");
    *count = 1;
    return GFP_OK;
}

static uint64_t physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return 0; /* unknown */
    return (uint64_t)pages * (uint64_t)page;
}

static gfp_status ref_device_props(void *plugin_ctx, uint32_t index, gfp_device_props *props) {
    (void)plugin_ctx;
    if (!props) return ref_fail(GFP_ERR_INVALID, "device_props: props is NULL");
    if (index != 0)
        return ref_fail(GFP_ERR_NOT_FOUND, "device_props: device %u does not exist (the "
                        "reference plugin has one device, index 0)", (unsigned)index);
    gfp_device_props full;
    memset(&full, 0, sizeof full);
    full.flags = GFP_DEVICE_FLAG_HOST_ADDRESSABLE | GFP_DEVICE_FLAG_THREAD_SAFE;
    snprintf(full.name, sizeof full.name, "%s", "Reference CPU (plain C)");
    snprintf(full.type, sizeof full.type, "%s", "cpu");
    full.memory_bytes = physical_memory();
    full.dtypes = GFP_DTYPE_BIT(GFP_F32) | GFP_DTYPE_BIT(GFP_F64) | GFP_DTYPE_BIT(GFP_I32) |
                  GFP_DTYPE_BIT(GFP_I64) | GFP_DTYPE_BIT(GFP_BOOL);
    full.max_rank = GFP_MAX_RANK;
    full.max_alloc_bytes = ref_hostbuf_max_alloc();
    full.driver[0] = '\0';
    /* An older core passes a smaller struct: write only what it covers. */
    uint32_t size = props->struct_size;
    size_t n = size < sizeof full ? size : sizeof full;
    if (n > sizeof full.struct_size)
        memcpy((char *)props + sizeof full.struct_size, (const char *)&full + sizeof full.struct_size,
               n - sizeof full.struct_size);
    return GFP_OK;
}

static gfp_status ref_device_open(void *plugin_ctx, uint32_t index, void **device) {
    (void)plugin_ctx;
    if (!device) return ref_fail(GFP_ERR_INVALID, "device_open: device is NULL");
    if (index != 0)
        return ref_fail(GFP_ERR_NOT_FOUND, "device_open: device %u does not exist (the "
                        "reference plugin has one device, index 0)", (unsigned)index);
    *device = &device_token;
    return GFP_OK;
}

/* ------------------------------------------------------------ memory */
/* 64 bytes in front of byte 0 keep the alignment of the user area. */
const ref_hostbuf_kind ref_hostbuf_self = {"reference", 0x7265666275666621ull /* "refbuff!" */};

#define check_range ref_hostbuf_range

static gfp_status ref_buffer_write(void *device, gfp_buffer buffer, uint64_t offset,
                                   const void *src, uint64_t n) {
    (void)device;
    gfp_status st = check_range("buffer_write", buffer, offset, n);
    if (st != GFP_OK) return st;
    if (n == 0) return GFP_OK;
    if (!src) return ref_fail(GFP_ERR_INVALID, "buffer_write: src is NULL");
    memcpy((char *)buffer + offset, src, (size_t)n);
    return GFP_OK;
}

static gfp_status ref_buffer_read(void *device, gfp_buffer buffer, uint64_t offset, void *dst,
                                  uint64_t n) {
    (void)device;
    gfp_status st = check_range("buffer_read", buffer, offset, n);
    if (st != GFP_OK) return st;
    if (n == 0) return GFP_OK;
    if (!dst) return ref_fail(GFP_ERR_INVALID, "buffer_read: dst is NULL");
    memcpy(dst, (const char *)buffer + offset, (size_t)n);
    return GFP_OK;
}

static gfp_status ref_buffer_copy(void *device, gfp_buffer src, uint64_t src_offset,
                                  gfp_buffer dst, uint64_t dst_offset, uint64_t n) {
    (void)device;
    gfp_status st = check_range("buffer_copy (source)", src, src_offset, n);
    if (st == GFP_OK) st = check_range("buffer_copy (destination)", dst, dst_offset, n);
    if (st != GFP_OK) return st;
    /* memmove: overlap is outside the contract but costs nothing to survive. */
    if (n) memmove((char *)dst + dst_offset, (const char *)src + src_offset, (size_t)n);
    return GFP_OK;
}

static gfp_status ref_buffer_fill(void *device, gfp_buffer buffer, uint64_t offset, uint64_t n,
                                  const void *pattern, uint32_t pattern_size) {
    (void)device;
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8)
        return ref_fail(GFP_ERR_INVALID, "buffer_fill: pattern_size is %u; it must be 1, 2, 4 or 8",
                        (unsigned)pattern_size);
    if (n % pattern_size)
        return ref_fail(GFP_ERR_INVALID,
                        "buffer_fill: %llu bytes is not a multiple of the %u-byte pattern",
                        (unsigned long long)n, (unsigned)pattern_size);
    gfp_status st = check_range("buffer_fill", buffer, offset, n);
    if (st != GFP_OK) return st;
    if (n == 0) return GFP_OK;
    if (!pattern) return ref_fail(GFP_ERR_INVALID, "buffer_fill: pattern is NULL");
    char *p = (char *)buffer + offset;
    if (pattern_size == 1) {
        memset(p, *(const unsigned char *)pattern, (size_t)n);
        return GFP_OK;
    }
    /* Write the pattern once, then double the filled prefix. */
    memcpy(p, pattern, pattern_size);
    size_t done = pattern_size;
    while (done < n) {
        size_t chunk = done < n - done ? done : (size_t)(n - done);
        memcpy(p + done, p, chunk);
        done += chunk;
    }
    return GFP_OK;
}

static gfp_status ref_synchronize(void *device) {
    (void)device; /* every launch has finished when it returns */
    return GFP_OK;
}

/* ------------------------------------------------------------ ops */
static gfp_status ref_query_op(void *device, const gfp_op_query *q, uint32_t *support) {
    (void)device;
    if (!support) return ref_fail(GFP_ERR_INVALID, "query_op: support is NULL");
    *support = GFP_SUPPORT_NONE;
    if (!q) return ref_fail(GFP_ERR_INVALID, "query_op: query is NULL");
    if (q->struct_size < GFP_OP_QUERY_SIZE_V1_0)
        return ref_fail(GFP_ERR_INVALID, "query_op: query struct_size is %u, at least %zu needed",
                        (unsigned)q->struct_size, (size_t)GFP_OP_QUERY_SIZE_V1_0);
    if (q->n_inputs > 8 || q->n_outputs > 4)
        return ref_fail(GFP_ERR_INVALID,
                        "query_op: %u inputs and %u outputs exceed the query's 8 and 4 slots",
                        (unsigned)q->n_inputs, (unsigned)q->n_outputs);
    const ref_family *f = family_of(q->op);
    if (f) *support = f->support(q);
    return GFP_OK;
}

/* Checks what every kernel relies on, so a malformed descriptor is an error
 * rather than a wild read: struct_size, rank, dtype, sizes and strides. */
static gfp_status check_tensor(uint32_t op, const char *role, uint32_t i, const gfp_tensor *t) {
    if (t->struct_size < GFP_TENSOR_SIZE_V1_0)
        return ref_fail(GFP_ERR_INVALID, "op %u: %s %u has struct_size %u, at least %zu needed",
                        (unsigned)op, role, (unsigned)i, (unsigned)t->struct_size,
                        (size_t)GFP_TENSOR_SIZE_V1_0);
    if (t->rank < 0 || t->rank > GFP_MAX_RANK)
        return ref_fail(GFP_ERR_INVALID, "op %u: %s %u has rank %d, outside [0, %d]",
                        (unsigned)op, role, (unsigned)i, (int)t->rank, GFP_MAX_RANK);
    if (t->dtype < 0 || t->dtype > GFP_BOOL)
        return ref_fail(GFP_ERR_UNSUPPORTED,
                        "op %u: %s %u has dtype %d; the reference device stores only f32, f64, "
                        "i32, i64 and bool",
                        (unsigned)op, role, (unsigned)i, (int)t->dtype);
    return ref_hostbuf_check_view(op, role, i, t);
}

static gfp_status ref_launch(void *device, uint32_t op, const gfp_tensor *const *inputs,
                             uint32_t n_inputs, const gfp_tensor *const *outputs,
                             uint32_t n_outputs, const void *params) {
    (void)device;
    const ref_family *f = family_of(op);
    if (!f)
        return ref_fail(GFP_ERR_UNSUPPORTED,
                        "op id %u is not an op the reference plugin knows (unknown or newer "
                        "than ABI %d.%d)",
                        (unsigned)op, GFP_ABI_MAJOR, GFP_ABI_MINOR);
    if ((n_inputs && !inputs) || (n_outputs && !outputs))
        return ref_fail(GFP_ERR_INVALID, "op %u: the inputs or outputs array is NULL",
                        (unsigned)op);
    gfp_status st = GFP_OK;
    for (uint32_t i = 0; i < n_inputs && st == GFP_OK; i++)
        if (inputs[i]) st = check_tensor(op, "input", i, inputs[i]);
    for (uint32_t i = 0; i < n_outputs && st == GFP_OK; i++) {
        if (!outputs[i])
            return ref_fail(GFP_ERR_INVALID, "op %u: output %u is NULL", (unsigned)op,
                            (unsigned)i);
        st = check_tensor(op, "output", i, outputs[i]);
    }
    if (st != GFP_OK) return st;
    return f->launch(op, inputs, n_inputs, outputs, n_outputs, params);
}

static gfp_status ref_query_extension(void *plugin_ctx, const char *name, void **out) {
    (void)plugin_ctx;
    if (out) *out = NULL;
    return ref_fail(GFP_ERR_NOT_FOUND, "the reference plugin has no extension \"%s\"",
                    name ? name : "(null)");
}

/* ------------------------------------------------------------ negotiation */
static const gfp_plugin ref_table = {
    .struct_size = sizeof(gfp_plugin),
    .abi_major = GFP_ABI_MAJOR,
    .abi_minor = GFP_ABI_MINOR,
    .name = "reference",
    .version = "1.0.0",
    .init = ref_init,
    .shutdown = ref_shutdown,
    .device_count = ref_device_count,
    .device_props = ref_device_props,
    .device_open = ref_device_open,
    .device_close = NULL, /* nothing to close */
    .buffer_alloc = ref_hostbuf_alloc,
    .buffer_free = ref_hostbuf_free,
    .buffer_write = ref_buffer_write,
    .buffer_read = ref_buffer_read,
    .buffer_copy = ref_buffer_copy,
    .buffer_fill = ref_buffer_fill,
    .synchronize = ref_synchronize,
    .query_op = ref_query_op,
    .launch = ref_launch,
    .query_extension = ref_query_extension,
    .buffer_wrap_host = ref_hostbuf_wrap,
};

GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,
                                             const gfp_plugin **table);

GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,
                                             const gfp_plugin **table) {
    return gfp_plugin_negotiate_common(request, table, &ref_table, &ref_host);
}
