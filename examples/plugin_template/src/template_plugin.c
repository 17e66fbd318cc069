/* SPDX-License-Identifier: BSD-3-Clause */
/* template_plugin.c — the template plugin's entry point, table, device,
 * memory, and the table of what it supports.
 *
 * Rename the plugin: TP_NAME below (the name GRAFT_PLUGINS lists), TP_TYPE
 * (the device type GRAFT_DEVICE names) and the library's name in
 * CMakeLists.txt. To add an op: a row in `rows`, a kernel in one of the
 * template_*.c files. To move to a real device: replace the memory slots
 * (buffer_*) with your runtime's allocations and copies, and the kernels
 * with launches; keep the checks. */
#define _POSIX_C_SOURCE 200809L /* snprintf, vsnprintf */

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template.h"

#define TP_NAME "template"
#define TP_TYPE "template"
#define TP_VERSION "0.1.0"

const gfp_host *tp_host;

gfp_status tp_fail(gfp_status status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (tp_host) tp_host->set_error(tp_host->host_ctx, msg);
    return status;
}

/* ------------------------------------------------------------ tensors */
static size_t dtype_size(int32_t dt) {
    switch (dt) {
    case GFP_F32: return 4;
    case GFP_I64: return 8;
    case GFP_BOOL: return 1;
    default: return 0;
    }
}

int64_t tp_numel(const gfp_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    return n;
}

char *tp_at(const gfp_tensor *t, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < t->rank; d++) off += idx[d] * t->strides[d];
    return (char *)t->buffer + t->offset + off * (int64_t)dtype_size(t->dtype);
}

bool tp_next(int64_t *idx, const int64_t *sizes, int rank) {
    for (int d = rank - 1; d >= 0; d--) {
        if (++idx[d] < sizes[d]) return true;
        idx[d] = 0;
    }
    return false;
}

bool tp_same_shape(const gfp_tensor *a, const gfp_tensor *b) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->sizes[d] != b->sizes[d]) return false;
    return true;
}

gfp_status tp_params(const void *params, size_t size, const char *op) {
    if (!params) return tp_fail(GFP_ERR_INVALID, "%s: the parameter struct is NULL", op);
    uint32_t have;
    memcpy(&have, params, sizeof have); /* every params struct starts with struct_size */
    if (have < size)
        return tp_fail(GFP_ERR_INVALID, "%s: parameter struct_size %u, at least %zu needed", op,
                       (unsigned)have, size);
    return GFP_OK;
}

/* ------------------------------------------------------------ what is supported */
#define F GFP_F32
#define L GFP_I64
#define B GFP_BOOL
#define S GFP_SUPPORT_STRIDED
#define C GFP_SUPPORT_CONTIGUOUS /* the core makes strided tensors contiguous first */

typedef struct row {
    uint32_t op;
    uint32_t n_in, n_out;
    int32_t in[3], out[2];
    uint32_t support;
    tp_kernel kernel;
} row;

static const row rows[] = {
    {GFP_OP_COPY, 1, 1, {F}, {F}, S, tp_copy},    {GFP_OP_COPY, 1, 1, {F}, {L}, S, tp_copy},
    {GFP_OP_COPY, 1, 1, {F}, {B}, S, tp_copy},    {GFP_OP_COPY, 1, 1, {L}, {F}, S, tp_copy},
    {GFP_OP_COPY, 1, 1, {L}, {L}, S, tp_copy},    {GFP_OP_COPY, 1, 1, {L}, {B}, S, tp_copy},
    {GFP_OP_COPY, 1, 1, {B}, {F}, S, tp_copy},    {GFP_OP_COPY, 1, 1, {B}, {L}, S, tp_copy},
    {GFP_OP_COPY, 1, 1, {B}, {B}, S, tp_copy},
    {GFP_OP_FILL, 0, 1, {0}, {F}, S, tp_fill},    {GFP_OP_FILL, 0, 1, {0}, {L}, S, tp_fill},
    {GFP_OP_FILL, 0, 1, {0}, {B}, S, tp_fill},
    {GFP_OP_RANDOM, 0, 1, {0}, {F}, C, tp_random},
    {GFP_OP_NEG, 1, 1, {F}, {F}, S, tp_unary},    {GFP_OP_EXP, 1, 1, {F}, {F}, S, tp_unary},
    {GFP_OP_LOG, 1, 1, {F}, {F}, S, tp_unary},    {GFP_OP_SQRT, 1, 1, {F}, {F}, S, tp_unary},
    {GFP_OP_TANH, 1, 1, {F}, {F}, S, tp_unary},   {GFP_OP_SIGMOID, 1, 1, {F}, {F}, S, tp_unary},
    {GFP_OP_RELU, 1, 1, {F}, {F}, S, tp_unary},
    {GFP_OP_ADD, 2, 1, {F, F}, {F}, S, tp_binary}, {GFP_OP_SUB, 2, 1, {F, F}, {F}, S, tp_binary},
    {GFP_OP_MUL, 2, 1, {F, F}, {F}, S, tp_binary}, {GFP_OP_DIV, 2, 1, {F, F}, {F}, S, tp_binary},
    {GFP_OP_MAXIMUM, 2, 1, {F, F}, {F}, S, tp_binary},
    {GFP_OP_EQ, 2, 1, {F, F}, {B}, S, tp_compare}, {GFP_OP_EQ, 2, 1, {L, L}, {B}, S, tp_compare},
    {GFP_OP_NE, 2, 1, {F, F}, {B}, S, tp_compare}, {GFP_OP_NE, 2, 1, {L, L}, {B}, S, tp_compare},
    {GFP_OP_GT, 2, 1, {F, F}, {B}, S, tp_compare}, {GFP_OP_GT, 2, 1, {L, L}, {B}, S, tp_compare},
    {GFP_OP_LT, 2, 1, {F, F}, {B}, S, tp_compare}, {GFP_OP_LT, 2, 1, {L, L}, {B}, S, tp_compare},
    {GFP_OP_WHERE, 3, 1, {B, F, F}, {F}, S, tp_where},
    {GFP_OP_WHERE, 3, 1, {B, L, L}, {L}, S, tp_where},
    {GFP_OP_SUM, 1, 1, {F}, {F}, S, tp_reduce},   {GFP_OP_MEAN, 1, 1, {F}, {F}, S, tp_reduce},
    {GFP_OP_AMAX, 1, 1, {F}, {F}, S, tp_reduce},  {GFP_OP_MAX_DIM, 1, 2, {F}, {F, L}, S, tp_reduce},
    {GFP_OP_SOFTMAX, 1, 1, {F}, {F}, S, tp_softmax},
    {GFP_OP_LOG_SOFTMAX, 1, 1, {F}, {F}, S, tp_softmax},
    {GFP_OP_MATMUL, 2, 1, {F, F}, {F}, C, tp_matmul},
    {GFP_OP_INDEX_SELECT, 2, 1, {F, L}, {F}, S, tp_index},
    {GFP_OP_INDEX_SELECT, 2, 1, {L, L}, {L}, S, tp_index},
    {GFP_OP_GATHER, 2, 1, {F, L}, {F}, S, tp_index},
    {GFP_OP_SCATTER_ADD, 2, 1, {F, L}, {F}, S, tp_index},
    {GFP_OP_INDEX_ADD, 2, 1, {F, L}, {F}, S, tp_index},
};
#undef F
#undef L
#undef B
#undef S
#undef C

/* The row for these dtypes, or NULL: query_op and launch both use it, so
 * what is declared and what runs never disagree. */
static const row *find_row(uint32_t op, uint32_t n_in, const int32_t *in, uint32_t n_out,
                           const int32_t *out) {
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const row *w = &rows[r];
        if (w->op != op || w->n_in != n_in || w->n_out != n_out) continue;
        bool same = true;
        for (uint32_t i = 0; i < n_in; i++) same = same && w->in[i] == in[i];
        for (uint32_t i = 0; i < n_out; i++) same = same && w->out[i] == out[i];
        if (same) return w;
    }
    return NULL;
}

/* ------------------------------------------------------------ plugin and device */
static atomic_long live_buffers; /* the only state: so THREAD_SAFE holds */
static int device_token;         /* its address is the device handle */

static gfp_status tp_init(void **plugin_ctx) {
    *plugin_ctx = NULL;
    return GFP_OK;
}

/* Reports buffers still allocated: graft-plugin-check treats a warning at
 * shutdown as a leak. */
static void tp_shutdown(void *plugin_ctx) {
    (void)plugin_ctx;
    long n = atomic_load(&live_buffers);
    if (n > 0 && tp_host) {
        char msg[128];
        snprintf(msg, sizeof msg, TP_NAME ": %ld buffer(s) still allocated at shutdown", n);
        tp_host->log(tp_host->host_ctx, GFP_LOG_WARN, msg);
    }
}

static gfp_status tp_device_count(void *plugin_ctx, uint32_t *count) {
    (void)plugin_ctx;
    *count = 1;
    return GFP_OK;
}

static gfp_status tp_device_props(void *plugin_ctx, uint32_t index, gfp_device_props *props) {
    (void)plugin_ctx;
    if (index != 0)
        return tp_fail(GFP_ERR_NOT_FOUND, TP_NAME ": device %u does not exist (one device, 0)",
                       (unsigned)index);
    gfp_device_props p;
    memset(&p, 0, sizeof p);
    p.flags = GFP_DEVICE_FLAG_HOST_ADDRESSABLE | GFP_DEVICE_FLAG_THREAD_SAFE;
    snprintf(p.name, sizeof p.name, "Template device (host memory)");
    snprintf(p.type, sizeof p.type, TP_TYPE);
    p.dtypes = GFP_DTYPE_BIT(GFP_F32) | GFP_DTYPE_BIT(GFP_I64) | GFP_DTYPE_BIT(GFP_BOOL);
    p.max_rank = GFP_MAX_RANK;
    snprintf(p.driver, sizeof p.driver, TP_NAME " " TP_VERSION);
    /* Write no more than the caller's struct holds (an older core's is smaller). */
    size_t n = props->struct_size < sizeof p ? props->struct_size : sizeof p;
    if (n > sizeof p.struct_size)
        memcpy((char *)props + sizeof p.struct_size, (char *)&p + sizeof p.struct_size,
               n - sizeof p.struct_size);
    return GFP_OK;
}

static gfp_status tp_device_open(void *plugin_ctx, uint32_t index, void **device) {
    (void)plugin_ctx;
    if (index != 0)
        return tp_fail(GFP_ERR_NOT_FOUND, TP_NAME ": device %u does not exist (one device, 0)",
                       (unsigned)index);
    *device = &device_token;
    return GFP_OK;
}

/* ------------------------------------------------------------ memory */
/* A 64-byte header in front of byte 0 records the size, so that reads,
 * writes and kernels out of bounds are refused, not carried out. */
#define HEADER 64
#define MAX_ALLOC ((uint64_t)1 << 40)

static uint64_t size_of(gfp_buffer b) {
    uint64_t n;
    memcpy(&n, (char *)b - HEADER, sizeof n);
    return n;
}

static gfp_status tp_buffer_alloc(void *device, uint64_t nbytes, gfp_buffer *buffer,
                                  void **host_ptr) {
    (void)device;
    *buffer = NULL;
    *host_ptr = NULL;
    if (nbytes == 0) return tp_fail(GFP_ERR_INVALID, "buffer_alloc: 0 bytes");
    if (nbytes > MAX_ALLOC)
        return tp_fail(GFP_ERR_OUT_OF_MEMORY, "buffer_alloc: %llu bytes is more than the "
                       TP_NAME " device allows", (unsigned long long)nbytes);
    char *block = aligned_alloc(64, (size_t)(HEADER + ((nbytes + 63) & ~(uint64_t)63)));
    if (!block)
        return tp_fail(GFP_ERR_OUT_OF_MEMORY, "buffer_alloc: out of host memory for %llu bytes",
                       (unsigned long long)nbytes);
    memcpy(block, &nbytes, sizeof nbytes);
    atomic_fetch_add(&live_buffers, 1);
    *buffer = *host_ptr = block + HEADER;
    return GFP_OK;
}

static void tp_buffer_free(void *device, gfp_buffer buffer) {
    (void)device;
    if (!buffer) return;
    atomic_fetch_sub(&live_buffers, 1);
    free((char *)buffer - HEADER);
}

static gfp_status in_bounds(const char *what, gfp_buffer b, uint64_t offset, uint64_t n) {
    if (!b) return tp_fail(GFP_ERR_INVALID, "%s: NULL buffer", what);
    uint64_t size = size_of(b);
    if (offset > size || n > size - offset)
        return tp_fail(GFP_ERR_INVALID, "%s: %llu bytes at offset %llu pass the end of a %llu-byte "
                       "buffer", what, (unsigned long long)n, (unsigned long long)offset,
                       (unsigned long long)size);
    return GFP_OK;
}

static gfp_status tp_buffer_write(void *device, gfp_buffer b, uint64_t offset, const void *src,
                                  uint64_t n) {
    (void)device;
    gfp_status st = in_bounds("buffer_write", b, offset, n);
    if (st == GFP_OK && n) memcpy((char *)b + offset, src, (size_t)n);
    return st;
}

static gfp_status tp_buffer_read(void *device, gfp_buffer b, uint64_t offset, void *dst,
                                 uint64_t n) {
    (void)device;
    gfp_status st = in_bounds("buffer_read", b, offset, n);
    if (st == GFP_OK && n) memcpy(dst, (char *)b + offset, (size_t)n);
    return st;
}

/* ------------------------------------------------------------ ops */
static gfp_status tp_query_op(void *device, const gfp_op_query *q, uint32_t *support) {
    (void)device;
    *support = GFP_SUPPORT_NONE;
    if (q->struct_size < GFP_OP_QUERY_SIZE_V1_0 || q->n_inputs > 8 || q->n_outputs > 4)
        return tp_fail(GFP_ERR_INVALID, "query_op: malformed query");
    const row *w = find_row(q->op, q->n_inputs, q->input_dtypes, q->n_outputs, q->output_dtypes);
    if (w) *support = w->support;
    return GFP_OK;
}

/* What every kernel relies on: a descriptor it can read, inside its buffer. */
static gfp_status check_tensor(uint32_t op, const char *role, uint32_t i, const gfp_tensor *t) {
    if (!t) return tp_fail(GFP_ERR_INVALID, "op %u: %s %u is NULL", (unsigned)op, role, (unsigned)i);
    if (t->struct_size < GFP_TENSOR_SIZE_V1_0 || t->rank < 0 || t->rank > GFP_MAX_RANK)
        return tp_fail(GFP_ERR_INVALID, "op %u: %s %u: struct_size %u or rank %d is invalid",
                       (unsigned)op, role, (unsigned)i, (unsigned)t->struct_size, (int)t->rank);
    uint64_t last = 0;
    for (int d = 0; d < t->rank; d++) {
        if (t->sizes[d] < 0 || t->strides[d] < 0)
            return tp_fail(GFP_ERR_INVALID, "op %u: %s %u: negative size or stride", (unsigned)op,
                           role, (unsigned)i);
        if (t->sizes[d] > 0) last += (uint64_t)(t->sizes[d] - 1) * (uint64_t)t->strides[d];
    }
    if (tp_numel(t) == 0) return GFP_OK;
    return in_bounds("launch", t->buffer, t->offset, (last + 1) * dtype_size(t->dtype));
}

static gfp_status tp_launch(void *device, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params) {
    (void)device;
    if (n_in > 3 || n_out > 2)
        return tp_fail(GFP_ERR_INVALID, "op %u: %u inputs and %u outputs", (unsigned)op,
                       (unsigned)n_in, (unsigned)n_out);
    int32_t in_dt[3] = {-1, -1, -1}, out_dt[2] = {-1, -1};
    gfp_status st = GFP_OK;
    for (uint32_t i = 0; i < n_in && st == GFP_OK; i++) {
        st = check_tensor(op, "input", i, in[i]);
        if (st == GFP_OK) in_dt[i] = in[i]->dtype;
    }
    for (uint32_t i = 0; i < n_out && st == GFP_OK; i++) {
        st = check_tensor(op, "output", i, out[i]);
        if (st == GFP_OK) out_dt[i] = out[i]->dtype;
    }
    if (st != GFP_OK) return st;
    const row *w = find_row(op, n_in, in_dt, n_out, out_dt);
    if (!w) {
        /* Is it the op or the tensor count that does not fit? */
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
            if (rows[r].op == op && (rows[r].n_in != n_in || rows[r].n_out != n_out))
                return tp_fail(GFP_ERR_INVALID, "op %u takes %u input(s) and %u output(s), got "
                               "%u and %u", (unsigned)op, (unsigned)rows[r].n_in,
                               (unsigned)rows[r].n_out, (unsigned)n_in, (unsigned)n_out);
        return tp_fail(GFP_ERR_UNSUPPORTED, TP_NAME ": op %u is not provided for these dtypes",
                       (unsigned)op);
    }
    return w->kernel(op, in, out, params);
}

/* ------------------------------------------------------------ negotiation */
static const gfp_plugin table = {
    .struct_size = sizeof(gfp_plugin),
    .abi_major = GFP_ABI_MAJOR,
    .abi_minor = GFP_ABI_MINOR,
    .name = TP_NAME,
    .version = TP_VERSION,
    .init = tp_init,
    .shutdown = tp_shutdown,
    .device_count = tp_device_count,
    .device_props = tp_device_props,
    .device_open = tp_device_open,
    .buffer_alloc = tp_buffer_alloc,
    .buffer_free = tp_buffer_free,
    .buffer_write = tp_buffer_write,
    .buffer_read = tp_buffer_read,
    /* buffer_copy, buffer_fill, synchronize, device_close, query_extension:
     * NULL, so the core's defaults apply (read + write, a host pattern,
     * nothing to wait for, nothing to close, no extensions). */
    .launch = tp_launch,
    .query_op = tp_query_op,
};

GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,
                                             const gfp_plugin **out);

/* No side effects but remembering the host: no device work here. */
GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,
                                             const gfp_plugin **out) {
    if (!request || !out || request->struct_size < GFP_NEGOTIATE_REQUEST_SIZE_V1_0 ||
        !request->host || request->host->struct_size < GFP_HOST_SIZE_V1_0)
        return GFP_ERR_INVALID;
    *out = NULL;
    const gfp_host *host = request->host;
    if (request->abi_major != GFP_ABI_MAJOR) {
        char msg[160];
        snprintf(msg, sizeof msg, TP_NAME " implements plugin ABI %d.x; the core offers %u.%u",
                 GFP_ABI_MAJOR, (unsigned)request->abi_major, (unsigned)request->abi_minor);
        host->set_error(host->host_ctx, msg);
        return GFP_ERR_VERSION;
    }
    tp_host = host;
    *out = &table;
    return GFP_OK;
}
