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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    REF_FAMILY_ENTRY(conv),        REF_FAMILY_ENTRY(pool),   REF_FAMILY_ENTRY(norm_bw),
};
#undef REF_FAMILY_ENTRY

static const ref_family *family_of(uint32_t op) {
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (families[i].handles(op)) return &families[i];
    return NULL;
}

/* ------------------------------------------------------------ plugin */

static gfp_status ref_init(void **plugin_ctx) {
    if (plugin_ctx) *plugin_ctx = NULL;
    return GFP_OK;
}

static void ref_shutdown(void *plugin_ctx) {
    (void)plugin_ctx;
    ref_hostdev_report_leaks();
}

static gfp_status ref_device_props(void *plugin_ctx, uint32_t index, gfp_device_props *props) {
    (void)plugin_ctx;
    return ref_hostdev_props(index, props, "Reference CPU (plain C)",
                             GFP_DTYPE_BIT(GFP_F32) | GFP_DTYPE_BIT(GFP_F64) |
                                 GFP_DTYPE_BIT(GFP_I32) | GFP_DTYPE_BIT(GFP_I64) |
                                 GFP_DTYPE_BIT(GFP_BOOL),
                             "");
}

static gfp_status ref_device_open(void *plugin_ctx, uint32_t index, void **device) {
    (void)plugin_ctx;
    if (!device) return ref_fail(GFP_ERR_INVALID, "device_open: device is NULL");
    gfp_status st = ref_hostdev_check("device_open", index);
    if (st != GFP_OK) return st;
    *device = ref_hostdev_handle();
    return GFP_OK;
}

/* ------------------------------------------------------------ memory */
/* 64 bytes in front of byte 0 keep the alignment of the user area. */
const ref_hostbuf_kind ref_hostbuf_self = {"reference", 0x7265666275666621ull /* "refbuff!" */,
                                           false};

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
    .device_count = ref_hostdev_count,
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
