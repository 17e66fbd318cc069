/* SPDX-License-Identifier: BSD-3-Clause */
/* acme_plugin.c — a device plugin shaped like a vendor's first drop, for the
 * fallback tests.
 *
 * Its memory is not host-addressable (buffers are malloc'ed, but the core
 * only sees handles and must go through buffer_read / buffer_write). It
 * stores every standard dtype but computes in f32 only, and only 15 ops:
 *   COPY (f32 -> f32), FILL, NEG, EXP, LOG, RELU, TANH, SQUARE, ADD, SUB, MUL,
 *   DIV, MAXIMUM: any strides (broadcasts are stride-0 dims);
 *   SUM: contiguous only, and its launch refuses (GFP_ERR_UNSUPPORTED) a
 *        reduction over more than one dim, as a first kernel might;
 *   MATMUL: contiguous only.
 * Everything else is GFP_SUPPORT_NONE: the core runs it on the fallback device.
 *
 * Settings from the environment (read by init):
 *   ACME_DEVICES=N      devices acme:0 .. acme:N-1 (default 1, at most 4)
 *   ACME_BROKEN=I       device I claims every op for any dtype and layout, then
 *                       fails each launch with GFP_ERR_DEVICE, as a faulty
 *                       driver would (for a fallback device that fails)
 *   ACME_BROKEN_ALLOC=I device I fails every allocation (out of memory)
 *   ACME_DTYPES=f32     store f32 only (the dtype-not-stored tests)
 * It counts live buffers per device and reports leaks at device_close on
 * stderr with "ACME LEAK", which the tests look for. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graft_plugin.h"

#define ACME_MAX_DEVICES 4

typedef struct acme_buffer {
    uint64_t size;
    unsigned char *data;
} acme_buffer;

typedef struct acme_device {
    uint32_t index;
    long live;
} acme_device;

static const gfp_host *g_host;
static uint32_t g_n_devices = 1;
static long g_broken = -1, g_broken_alloc = -1;
static bool g_f32_only;
static acme_device g_devices[ACME_MAX_DEVICES];

static gfp_status fail(gfp_status st, const char *msg) {
    if (g_host) g_host->set_error(g_host->host_ctx, msg);
    return st;
}

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

static gfp_status acme_init(void **ctx) {
    long n = env_long("ACME_DEVICES", 1);
    g_n_devices = n < 1 ? 1 : n > ACME_MAX_DEVICES ? ACME_MAX_DEVICES : (uint32_t)n;
    g_broken = env_long("ACME_BROKEN", -1);
    g_broken_alloc = env_long("ACME_BROKEN_ALLOC", -1);
    const char *dt = getenv("ACME_DTYPES");
    g_f32_only = dt && !strcmp(dt, "f32");
    *ctx = NULL;
    return GFP_OK;
}

static gfp_status acme_device_count(void *ctx, uint32_t *count) {
    *count = g_n_devices;
    return GFP_OK;
}

static gfp_status acme_device_props(void *ctx, uint32_t index, gfp_device_props *p) {
    if (index >= g_n_devices) return fail(GFP_ERR_NOT_FOUND, "acme: no such device");
    uint32_t size = p->struct_size;
    memset(p, 0, GFP_DEVICE_PROPS_SIZE_V1_0);
    p->struct_size = size;
    p->flags = 0; /* not host-addressable, not thread-safe */
    snprintf(p->name, sizeof p->name, "Acme Accelerator %u%s", index,
             (long)index == g_broken ? " (faulty)" : "");
    snprintf(p->type, sizeof p->type, "acme");
    p->memory_bytes = 1ull << 30;
    p->dtypes = g_f32_only ? GFP_DTYPE_BIT(GFP_F32)
                           : GFP_DTYPE_BIT(GFP_F32) | GFP_DTYPE_BIT(GFP_F64) |
                                 GFP_DTYPE_BIT(GFP_I32) | GFP_DTYPE_BIT(GFP_I64) |
                                 GFP_DTYPE_BIT(GFP_BOOL);
    p->max_rank = GFP_MAX_RANK;
    snprintf(p->driver, sizeof p->driver, "acme 0.1");
    return GFP_OK;
}

static gfp_status acme_device_open(void *ctx, uint32_t index, void **device) {
    if (index >= g_n_devices) return fail(GFP_ERR_NOT_FOUND, "acme: no such device");
    g_devices[index].index = index;
    g_devices[index].live = 0;
    *device = &g_devices[index];
    return GFP_OK;
}

static void acme_device_close(void *device) {
    acme_device *d = device;
    if (d->live) fprintf(stderr, "ACME LEAK: device %u closed with %ld live buffers\n", d->index,
                         d->live);
}

static gfp_status acme_alloc(void *device, uint64_t n, gfp_buffer *buffer, void **host_ptr) {
    acme_device *d = device;
    *host_ptr = NULL;
    if ((long)d->index == g_broken_alloc) return fail(GFP_ERR_OUT_OF_MEMORY, "acme: simulated "
                                                      "out of device memory");
    acme_buffer *b = malloc(sizeof *b);
    if (!b) return fail(GFP_ERR_OUT_OF_MEMORY, "acme: out of memory");
    b->size = n;
    b->data = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!b->data) {
        free(b);
        return fail(GFP_ERR_OUT_OF_MEMORY, "acme: out of memory");
    }
    memset(b->data, 0xA5, n); /* uninitialised memory is garbage, not zeros */
    *buffer = b;
    d->live++;
    return GFP_OK;
}

static void acme_free(void *device, gfp_buffer buffer) {
    acme_device *d = device;
    acme_buffer *b = buffer;
    free(b->data);
    free(b);
    d->live--;
}

static gfp_status acme_write(void *device, gfp_buffer buffer, uint64_t off, const void *src,
                             uint64_t n) {
    acme_buffer *b = buffer;
    if (off > b->size || n > b->size - off) return fail(GFP_ERR_INVALID, "acme: write out of range");
    memcpy(b->data + off, src, n);
    return GFP_OK;
}

static gfp_status acme_read(void *device, gfp_buffer buffer, uint64_t off, void *dst, uint64_t n) {
    acme_buffer *b = buffer;
    if (off > b->size || n > b->size - off) return fail(GFP_ERR_INVALID, "acme: read out of range");
    memcpy(dst, b->data + off, n);
    return GFP_OK;
}

/* ------------------------------------------------------------------ ops */
static bool elementwise(uint32_t op) {
    switch (op) {
    case GFP_OP_COPY: case GFP_OP_FILL: case GFP_OP_NEG: case GFP_OP_EXP: case GFP_OP_LOG:
    case GFP_OP_RELU: case GFP_OP_TANH: case GFP_OP_SQUARE: case GFP_OP_ADD: case GFP_OP_SUB:
    case GFP_OP_MUL: case GFP_OP_DIV: case GFP_OP_MAXIMUM: return true;
    default: return false;
    }
}

static gfp_status acme_query(void *device, const gfp_op_query *q, uint32_t *support) {
    acme_device *d = device;
    *support = GFP_SUPPORT_NONE;
    if ((long)d->index == g_broken) {
        *support = GFP_SUPPORT_STRIDED;
        return GFP_OK;
    }
    for (uint32_t i = 0; i < q->n_inputs; i++)
        if (q->input_dtypes[i] != GFP_F32) return GFP_OK;
    for (uint32_t i = 0; i < q->n_outputs; i++)
        if (q->output_dtypes[i] != GFP_F32) return GFP_OK;
    if (elementwise(q->op)) *support = GFP_SUPPORT_STRIDED;
    else if (q->op == GFP_OP_SUM || q->op == GFP_OP_MATMUL) *support = GFP_SUPPORT_CONTIGUOUS;
    return GFP_OK;
}

static float *at(const gfp_tensor *t, const int64_t *idx) {
    int64_t off = 0;
    for (int i = 0; i < t->rank; i++) off += idx[i] * t->strides[i];
    return (float *)(((acme_buffer *)t->buffer)->data + t->offset) + off;
}

static bool next(int64_t *idx, const int64_t *sizes, int rank) {
    for (int i = rank - 1; i >= 0; i--) {
        if (++idx[i] < sizes[i]) return true;
        idx[i] = 0;
    }
    return false;
}

static int64_t numel(const gfp_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->sizes[i];
    return n;
}

static float unary(uint32_t op, float x) {
    switch (op) {
    case GFP_OP_NEG: return -x;
    case GFP_OP_EXP: return expf(x);
    case GFP_OP_LOG: return logf(x);
    case GFP_OP_RELU: return x > 0 ? x : 0;
    case GFP_OP_TANH: return tanhf(x);
    case GFP_OP_SQUARE: return x * x;
    default: return x; /* COPY */
    }
}

static float binary(uint32_t op, float a, float b) {
    switch (op) {
    case GFP_OP_ADD: return a + b;
    case GFP_OP_SUB: return a - b;
    case GFP_OP_MUL: return a * b;
    case GFP_OP_DIV: return a / b;
    default: return (a != a || a > b) ? a : b; /* MAXIMUM: NaN propagates */
    }
}

static gfp_status run_elementwise(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *y,
                                  const void *params) {
    if (numel(y) == 0) return GFP_OK;
    int64_t idx[GFP_MAX_RANK] = {0};
    /* An in-place op may read and write one element: read first, then write. */
    do {
        float v;
        if (op == GFP_OP_FILL) v = (float)((const gfp_fill_params *)params)->value;
        else if (in[1]) v = binary(op, *at(in[0], idx), *at(in[1], idx));
        else v = unary(op, *at(in[0], idx));
        *at(y, idx) = v;
    } while (next(idx, y->sizes, y->rank));
    return GFP_OK;
}

static gfp_status run_sum(const gfp_tensor *x, const gfp_tensor *y, const gfp_reduce_params *p) {
    int dim = -1, count = 0;
    for (int i = 0; i < x->rank; i++)
        if (p->dims & (1u << i)) dim = i, count++;
    if (count > 1)
        return fail(GFP_ERR_UNSUPPORTED, "acme: SUM reduces one dim at a time in this release");
    const float *xs = (const float *)(((acme_buffer *)x->buffer)->data + x->offset);
    float *ys = (float *)(((acme_buffer *)y->buffer)->data + y->offset);
    if (dim < 0) { /* no dims: a copy */
        for (int64_t i = 0; i < numel(x); i++) ys[i] = xs[i];
        return GFP_OK;
    }
    int64_t outer = 1, inner = 1, n = x->sizes[dim];
    for (int i = 0; i < dim; i++) outer *= x->sizes[i];
    for (int i = dim + 1; i < x->rank; i++) inner *= x->sizes[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            double s = 0;
            for (int64_t j = 0; j < n; j++) s += xs[(o * n + j) * inner + k];
            ys[o * inner + k] = (float)s;
        }
    return GFP_OK;
}

static gfp_status run_matmul(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y) {
    int r = y->rank;
    int64_t m = y->sizes[r - 2], n = y->sizes[r - 1], k = a->sizes[r - 1];
    int64_t batch = 1;
    for (int i = 0; i < r - 2; i++) batch *= y->sizes[i];
    if (batch != 1) {
        /* Batched inputs may be broadcast (stride 0), which is not contiguous:
         * the core only passes contiguous tensors, so equal batches here. */
        for (int i = 0; i < r - 2; i++)
            if (a->sizes[i] != y->sizes[i] || b->sizes[i] != y->sizes[i])
                return fail(GFP_ERR_INVALID, "acme: matmul batch mismatch");
    }
    const float *as = (const float *)(((acme_buffer *)a->buffer)->data + a->offset);
    const float *bs = (const float *)(((acme_buffer *)b->buffer)->data + b->offset);
    float *ys = (float *)(((acme_buffer *)y->buffer)->data + y->offset);
    for (int64_t t = 0; t < batch; t++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++) s += (double)as[(t * m + i) * k + p] * bs[(t * k + p) * n + j];
                ys[(t * m + i) * n + j] = (float)s;
            }
    return GFP_OK;
}

static gfp_status acme_launch(void *device, uint32_t op, const gfp_tensor *const *in,
                              uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                              const void *params) {
    acme_device *d = device;
    if ((long)d->index == g_broken) return fail(GFP_ERR_DEVICE, "acme: simulated device fault");
    if (op == GFP_OP_SUM) return run_sum(in[0], out[0], params);
    if (op == GFP_OP_MATMUL) return run_matmul(in[0], in[1], out[0]);
    if (!elementwise(op)) return fail(GFP_ERR_UNSUPPORTED, "acme: op not provided");
    const gfp_tensor *ins[2] = {n_in > 0 ? in[0] : NULL, n_in > 1 ? in[1] : NULL};
    return run_elementwise(op, ins, out[0], params);
}

static const gfp_plugin g_table = {
    .struct_size = sizeof(gfp_plugin),
    .abi_major = GFP_ABI_MAJOR,
    .abi_minor = GFP_ABI_MINOR,
    .name = "acme",
    .version = "0.1",
    .init = acme_init,
    .device_count = acme_device_count,
    .device_props = acme_device_props,
    .device_open = acme_device_open,
    .device_close = acme_device_close,
    .buffer_alloc = acme_alloc,
    .buffer_free = acme_free,
    .buffer_write = acme_write,
    .buffer_read = acme_read,
    .launch = acme_launch,
    .query_op = acme_query,
};

GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *req,
                                             const gfp_plugin **table);
GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *req,
                                             const gfp_plugin **table) {
    if (req->abi_major != GFP_ABI_MAJOR) return GFP_ERR_VERSION;
    g_host = req->host;
    *table = &g_table;
    return GFP_OK;
}
