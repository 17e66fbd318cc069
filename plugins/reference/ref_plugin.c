/* SPDX-License-Identifier: BSD-3-Clause */
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


/* ------------------------------------------------------------ families */
typedef struct ref_family {
    uint32_t families; /* GFP_FAMILY_BIT()s it serves: the kit routes by it */
    uint32_t (*support)(const gfp_op_query *q);
    gfp_status (*launch)(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params);
} ref_family;

#define REF_FAMILY_ENTRY(f, set) {set, ref_##f##_support, ref_##f##_launch},
static const ref_family families[] = {
    PK_FAMILIES(REF_FAMILY_ENTRY) REF_FAMILY_ENTRY(optim, GFP_FAMILY_BIT(GFP_FAMILY_OPTIM))
        REF_FAMILY_ENTRY(fft, GFP_FAMILY_BIT(GFP_FAMILY_FFT))
            REF_FAMILY_ENTRY(rnn, GFP_FAMILY_BIT(GFP_FAMILY_RNN))};
#undef REF_FAMILY_ENTRY

#define REF_DTYPES                                                                        \
    (GFP_DTYPE_BIT(GFP_F32) | GFP_DTYPE_BIT(GFP_F64) | GFP_DTYPE_BIT(GFP_I32) |           \
     GFP_DTYPE_BIT(GFP_I64) | GFP_DTYPE_BIT(GFP_BOOL) | GFP_DTYPE_BIT(GFP_C64) |          \
     GFP_DTYPE_BIT(GFP_C128) | GFP_DTYPE_BIT(GFP_F16) | GFP_DTYPE_BIT(GFP_BF16))
#define REF_DEVICE_NAME "Reference CPU (plain C)"

static const pk_device_rules rules = {"reference", REF_DEVICE_NAME, REF_DTYPES,
                                      ref_hostbuf_size_of, NULL};

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
    return ref_hostdev_props(index, props, REF_DEVICE_NAME, REF_DTYPES, "");
}

static gfp_status ref_device_open(void *plugin_ctx, uint32_t index, void **device) {
    (void)plugin_ctx;
    if (!device) return pk_fail(GFP_ERR_INVALID, "device_open: device is NULL");
    gfp_status st = ref_hostdev_check("device_open", index);
    if (st != GFP_OK) return st;
    *device = ref_hostdev_handle();
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
    if (!src) return pk_fail(GFP_ERR_INVALID, "buffer_write: src is NULL");
    memcpy((char *)buffer + offset, src, (size_t)n);
    return GFP_OK;
}

static gfp_status ref_buffer_read(void *device, gfp_buffer buffer, uint64_t offset, void *dst,
                                  uint64_t n) {
    (void)device;
    gfp_status st = check_range("buffer_read", buffer, offset, n);
    if (st != GFP_OK) return st;
    if (n == 0) return GFP_OK;
    if (!dst) return pk_fail(GFP_ERR_INVALID, "buffer_read: dst is NULL");
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
    gfp_status pst = pk_check_fill_pattern(n, pattern, pattern_size);
    if (pst != GFP_OK) return pst;
    gfp_status st = check_range("buffer_fill", buffer, offset, n);
    if (st != GFP_OK) return st;
    if (n == 0) return GFP_OK;
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
    gfp_status st;
    const ref_family *f = PK_QUERY_ROUTE(families, q, support, REF_DTYPES, &st);
    if (f) *support = f->support(q);
    return st;
}

static gfp_status ref_launch(void *device, uint32_t op, const gfp_tensor *const *inputs,
                             uint32_t n_inputs, const gfp_tensor *const *outputs,
                             uint32_t n_outputs, const void *params) {
    (void)device;
    gfp_status st;
    const ref_family *f = PK_LAUNCH_ROUTE(families, &rules, op, inputs, n_inputs, outputs,
                                          n_outputs, params, &st);
    return f ? f->launch(op, inputs, n_inputs, outputs, n_outputs, params) : st;
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
    .query_extension = pk_no_extension,
    .buffer_wrap_host = ref_hostbuf_wrap,
};

PK_DEFINE_NEGOTIATE(ref_table)
