/* SPDX-License-Identifier: BSD-3-Clause */
/* stub_plugin.c — a device plugin for the loader and ABI tests.
 *
 * It needs no hardware: buffers are malloc'ed host memory, and it runs FILL,
 * COPY and ADD on f32 tensors of any strides, which is enough for gf_full,
 * gf_from_data, gf_add, gf_clone and gf_tensor_to_host. Everything else is
 * refused with GFP_ERR_UNSUPPORTED.
 *
 * It logs every ABI call, one line each, to the file named by STUB_LOG, and
 * checks what the core passes in: a broken rule of the ABI (a tensor outside
 * its buffer, an unknown buffer, a slot called after shutdown, concurrent
 * calls into a device that is not thread-safe...) is logged as a line starting
 * with STUB_LOG_VIOLATION, which the tests look for.
 *
 * One source, built once per test scenario with one STUB_VARIANT_* switch:
 *   (none)        a working plugin
 *   WRONG_MAJOR   answers negotiation with a table that says ABI major 2
 *   NO_ENTRY      exports a misspelt entry symbol instead of the real one
 *   REFUSE        refuses negotiation with GFP_ERR_VERSION and a message
 *   INIT_FAIL     init fails with a message
 *   TRUNCATED     a table too short to hold the REQUIRED launch slot
 *   OLDER_MINOR   a table that ends with launch (no query_op, query_extension)
 *   NEWER_MINOR   a longer table: gfp_plugin followed by slots of a future minor
 *   NULL_SLOTS    every OPTIONAL slot NULL, and buffers not host-addressable
 *   ZERO_DEVICES  no devices, explained through host->set_error
 * Slots beyond a table's struct_size hold trap functions that log a violation.
 *
 * Settings from the environment. STUB_DEVICES is read by init; the others at
 * every call, so a test may change them while it runs:
 *   STUB_FAIL_ALLOC_AT=N     buffer_alloc calls N .. N+K-1 (counted from 1 since
 *   STUB_FAIL_ALLOC_COUNT=K  init; K defaults to 1) fail with GFP_ERR_OUT_OF_MEMORY
 *   STUB_FAIL_OP=add|fill|copy|<number>   launch of that op fails
 *   STUB_DEVICES=N           number of devices (default 1, at most 4)
 *   STUB_LAUNCH_DELAY_US=N   launch sleeps, to widen races in thread tests */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graft_plugin.h"
#include "stub_messages.h"

#if defined(STUB_VARIANT_WRONG_MAJOR)
#define STUB_VARIANT "wrong-major"
#elif defined(STUB_VARIANT_NO_ENTRY)
#define STUB_VARIANT "no-entry"
#elif defined(STUB_VARIANT_REFUSE)
#define STUB_VARIANT "refuse"
#elif defined(STUB_VARIANT_INIT_FAIL)
#define STUB_VARIANT "init-fail"
#elif defined(STUB_VARIANT_TRUNCATED)
#define STUB_VARIANT "truncated"
#elif defined(STUB_VARIANT_OLDER_MINOR)
#define STUB_VARIANT "older-minor"
#elif defined(STUB_VARIANT_NEWER_MINOR)
#define STUB_VARIANT "newer-minor"
#elif defined(STUB_VARIANT_NULL_SLOTS)
#define STUB_VARIANT "null-slots"
#elif defined(STUB_VARIANT_ZERO_DEVICES)
#define STUB_VARIANT "zero-devices"
#else
#define STUB_VARIANT "working"
#endif

#define STUB_MAX_DEVICES 4
#define STUB_BUFFER_MAGIC 0x5354554242554631ull /* "STUBBUF1" */
#define STUB_DEVICE_MAGIC 0x5354554244455631ull /* "STUBDEV1" */

typedef struct stub_device {
    uint64_t magic;
    uint32_t index;
    atomic_int in_flight; /* calls running now: must stay <= 1 (not thread-safe) */
    atomic_long live_buffers;
} stub_device;

typedef struct stub_buffer {
    uint64_t magic;
    uint64_t id;
    uint64_t nbytes;
    stub_device *dev;
    unsigned char *data;
} stub_buffer;

typedef struct stub_state {
    bool initialised;
    bool shut_down;
    uint32_t n_devices;
    stub_device *open[STUB_MAX_DEVICES];
} stub_state;

static const gfp_host *stub_host;
static stub_state stub_ctx;
/* Static, so a variant without device_close leaks nothing. */
static stub_device stub_devices[STUB_MAX_DEVICES];
static atomic_long stub_alloc_calls;
static atomic_ulong stub_next_buffer_id;
static atomic_flag stub_log_lock = ATOMIC_FLAG_INIT;

/* ------------------------------------------------------------------ log */
static void stub_log(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static void stub_log(const char *fmt, ...) {
    const char *path = getenv("STUB_LOG");
    if (!path || !*path) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    while (atomic_flag_test_and_set(&stub_log_lock)) {
    }
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s\n", line);
        fclose(f);
    }
    atomic_flag_clear(&stub_log_lock);
}

/* Slots some variants leave out of their table. */
#if defined(__GNUC__)
#define STUB_MAYBE_UNUSED __attribute__((unused))
#else
#define STUB_MAYBE_UNUSED
#endif

#define VIOLATION(...) stub_log(STUB_LOG_VIOLATION " " __VA_ARGS__)

static long env_long(const char *name, long fallback) {
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? fallback : x;
}

static gfp_status fail(gfp_status status, const char *message) {
    if (stub_host) stub_host->set_error(stub_host->host_ctx, message);
    return status;
}

/* Every slot but negotiate, init and the traps starts here. */
static void check_alive(const char *slot) {
    if (!stub_ctx.initialised) VIOLATION("%s called before init succeeded", slot);
    if (stub_ctx.shut_down) VIOLATION("%s called after shutdown", slot);
}

static stub_device *device_enter(void *device, const char *slot) {
    check_alive(slot);
    stub_device *d = device;
    if (!d || d->magic != STUB_DEVICE_MAGIC) {
        VIOLATION("%s: not a device from device_open", slot);
        return NULL;
    }
    if (atomic_fetch_add(&d->in_flight, 1) != 0)
        VIOLATION("%s: concurrent calls into device %u, which is not thread-safe", slot, d->index);
    return d;
}

static void device_leave(stub_device *d) {
    if (d) atomic_fetch_sub(&d->in_flight, 1);
}

static stub_buffer *buffer_of(stub_device *d, gfp_buffer buffer, const char *slot) {
    stub_buffer *b = buffer;
    if (!b || b->magic != STUB_BUFFER_MAGIC) {
        VIOLATION("%s: not a live buffer from buffer_alloc", slot);
        return NULL;
    }
    if (b->dev != d)
        VIOLATION("%s: buffer %llu belongs to another device", slot, (unsigned long long)b->id);
    return b;
}

static bool range_ok(const stub_buffer *b, uint64_t offset, uint64_t n, const char *slot) {
    if (offset > b->nbytes || n > b->nbytes - offset) {
        VIOLATION("%s: bytes [%llu, %llu) outside buffer %llu of %llu bytes", slot,
                  (unsigned long long)offset, (unsigned long long)(offset + n),
                  (unsigned long long)b->id, (unsigned long long)b->nbytes);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ plugin and devices */
static gfp_status stub_init(void **plugin_ctx) {
    stub_log("init");
    if (stub_ctx.initialised && !stub_ctx.shut_down) VIOLATION("init called twice");
#if defined(STUB_VARIANT_INIT_FAIL)
    (void)plugin_ctx;
    return fail(GFP_ERR_DEVICE, STUB_MSG_INIT_FAIL);
#else
    memset(&stub_ctx, 0, sizeof stub_ctx);
    long n = env_long("STUB_DEVICES", 1);
    stub_ctx.n_devices = n < 0 ? 0 : n > STUB_MAX_DEVICES ? STUB_MAX_DEVICES : (uint32_t)n;
    stub_ctx.initialised = true;
    atomic_store(&stub_alloc_calls, 0);
    *plugin_ctx = &stub_ctx;
    return GFP_OK;
#endif
}

STUB_MAYBE_UNUSED static void stub_shutdown(void *plugin_ctx) {
    check_alive("shutdown");
    stub_log("shutdown");
    if (plugin_ctx != &stub_ctx) VIOLATION("shutdown: wrong plugin_ctx");
    for (uint32_t i = 0; i < STUB_MAX_DEVICES; i++) {
        stub_device *d = stub_ctx.open[i];
        if (!d) continue;
        if (atomic_load(&d->live_buffers))
            VIOLATION("shutdown: device %u still holds %ld buffers", i,
                      atomic_load(&d->live_buffers));
#if !defined(STUB_VARIANT_NULL_SLOTS)
        VIOLATION("shutdown: device %u was never closed", i);
#endif
        d->magic = 0;
        stub_ctx.open[i] = NULL;
    }
    stub_ctx.shut_down = true;
}

static gfp_status stub_device_count(void *plugin_ctx, uint32_t *count) {
    check_alive("device_count");
    stub_log("device_count");
    if (plugin_ctx != &stub_ctx) VIOLATION("device_count: wrong plugin_ctx");
#if defined(STUB_VARIANT_ZERO_DEVICES)
    *count = 0;
    stub_host->set_error(stub_host->host_ctx, STUB_MSG_ZERO_DEVICES);
#else
    *count = stub_ctx.n_devices;
#endif
    return GFP_OK;
}

static gfp_status stub_device_props(void *plugin_ctx, uint32_t index, gfp_device_props *props) {
    check_alive("device_props");
    stub_log("device_props index=%u", index);
    if (index >= stub_ctx.n_devices) {
        VIOLATION("device_props: index %u of %u devices", index, stub_ctx.n_devices);
        return fail(GFP_ERR_NOT_FOUND, "stub: no such device");
    }
    if (!props || props->struct_size < GFP_DEVICE_PROPS_SIZE_V1_0) {
        VIOLATION("device_props: struct_size not set to cover v1.0");
        return fail(GFP_ERR_INVALID, "stub: device_props struct_size too small");
    }
    uint32_t size = props->struct_size;
    memset(props, 0, GFP_DEVICE_PROPS_SIZE_V1_0);
    props->struct_size = size;
#if defined(STUB_VARIANT_NULL_SLOTS)
    props->flags = 0; /* the core must go through buffer_read/buffer_write */
#else
    props->flags = GFP_DEVICE_FLAG_HOST_ADDRESSABLE;
#endif
    snprintf(props->name, sizeof props->name, "Stub Device %u", index);
    snprintf(props->type, sizeof props->type, "%s", STUB_DEVICE_TYPE);
    props->memory_bytes = 1ull << 30;
    props->dtypes = GFP_DTYPE_BIT(GFP_F32);
    props->max_rank = GFP_MAX_RANK;
    props->max_alloc_bytes = 1ull << 28;
    snprintf(props->driver, sizeof props->driver, "stub driver (%s)", STUB_VARIANT);
    return GFP_OK;
}

static gfp_status stub_device_open(void *plugin_ctx, uint32_t index, void **device) {
    check_alive("device_open");
    stub_log("device_open index=%u", index);
    if (index >= stub_ctx.n_devices) {
        VIOLATION("device_open: index %u of %u devices", index, stub_ctx.n_devices);
        return fail(GFP_ERR_NOT_FOUND, "stub: no such device");
    }
    if (stub_ctx.open[index]) VIOLATION("device_open: device %u opened twice", index);
    stub_device *d = &stub_devices[index];
    memset(d, 0, sizeof *d);
    d->magic = STUB_DEVICE_MAGIC;
    d->index = index;
    stub_ctx.open[index] = d;
    *device = d;
    return GFP_OK;
}

STUB_MAYBE_UNUSED static void stub_device_close(void *device) {
    stub_device *d = device_enter(device, "device_close");
    stub_log("device_close index=%u", d ? d->index : 99u);
    if (!d) return;
    if (atomic_load(&d->live_buffers))
        VIOLATION("device_close: device %u still holds %ld buffers", d->index,
                  atomic_load(&d->live_buffers));
    stub_ctx.open[d->index] = NULL;
    d->magic = 0;
}

/* ------------------------------------------------------------------ memory */
static gfp_status stub_buffer_alloc(void *device, uint64_t nbytes, gfp_buffer *buffer,
                                    void **host_ptr) {
    stub_device *d = device_enter(device, "buffer_alloc");
    long call = atomic_fetch_add(&stub_alloc_calls, 1) + 1;
    gfp_status st = GFP_OK;
    long at = env_long("STUB_FAIL_ALLOC_AT", 0), count = env_long("STUB_FAIL_ALLOC_COUNT", 1);
    if (!d) {
        st = fail(GFP_ERR_INVALID, "stub: buffer_alloc on an unknown device");
    } else if (nbytes == 0) {
        VIOLATION("buffer_alloc of 0 bytes");
        st = fail(GFP_ERR_INVALID, "stub: buffer_alloc of 0 bytes");
    } else if (at > 0 && call >= at && call < at + count) {
        st = fail(GFP_ERR_OUT_OF_MEMORY, STUB_MSG_OOM);
    }
    stub_buffer *b = NULL;
    if (st == GFP_OK) {
        b = calloc(1, sizeof *b);
        uint64_t rounded = (nbytes + 63) / 64 * 64;
        unsigned char *data = b ? aligned_alloc(64, rounded) : NULL;
        if (!data) {
            free(b);
            b = NULL;
            st = fail(GFP_ERR_OUT_OF_MEMORY, "stub: out of host memory");
        } else {
            /* Garbage, so a missing initialisation shows (0xff.. is a NaN). */
            memset(data, 0xff, rounded);
            b->magic = STUB_BUFFER_MAGIC;
            b->id = atomic_fetch_add(&stub_next_buffer_id, 1) + 1;
            b->nbytes = nbytes;
            b->dev = d;
            b->data = data;
            atomic_fetch_add(&d->live_buffers, 1);
        }
    }
    if (b) {
        stub_log("buffer_alloc call=%ld n=%llu -> id=%llu", call, (unsigned long long)nbytes,
                 (unsigned long long)b->id);
        *buffer = b;
#if defined(STUB_VARIANT_NULL_SLOTS)
        *host_ptr = NULL;
#else
        *host_ptr = b->data;
#endif
    } else {
        stub_log("buffer_alloc call=%ld n=%llu -> failed %d", call, (unsigned long long)nbytes,
                 (int)st);
    }
    device_leave(d);
    return st;
}

static void stub_buffer_free(void *device, gfp_buffer buffer) {
    stub_device *d = device_enter(device, "buffer_free");
    stub_buffer *b = buffer_of(d, buffer, "buffer_free");
    stub_log("buffer_free id=%llu", b ? (unsigned long long)b->id : 0ull);
    if (b) {
        b->magic = 0;
        if (b->dev) atomic_fetch_sub(&b->dev->live_buffers, 1);
        free(b->data);
        free(b);
    }
    device_leave(d);
}

static gfp_status stub_buffer_write(void *device, gfp_buffer buffer, uint64_t offset,
                                    const void *src, uint64_t n) {
    stub_device *d = device_enter(device, "buffer_write");
    stub_buffer *b = buffer_of(d, buffer, "buffer_write");
    stub_log("buffer_write id=%llu offset=%llu n=%llu", b ? (unsigned long long)b->id : 0ull,
             (unsigned long long)offset, (unsigned long long)n);
    gfp_status st = GFP_OK;
    if (!b || !range_ok(b, offset, n, "buffer_write"))
        st = fail(GFP_ERR_INVALID, "stub: bad buffer_write");
    else
        memcpy(b->data + offset, src, n);
    device_leave(d);
    return st;
}

static gfp_status stub_buffer_read(void *device, gfp_buffer buffer, uint64_t offset, void *dst,
                                   uint64_t n) {
    stub_device *d = device_enter(device, "buffer_read");
    stub_buffer *b = buffer_of(d, buffer, "buffer_read");
    stub_log("buffer_read id=%llu offset=%llu n=%llu", b ? (unsigned long long)b->id : 0ull,
             (unsigned long long)offset, (unsigned long long)n);
    gfp_status st = GFP_OK;
    if (!b || !range_ok(b, offset, n, "buffer_read"))
        st = fail(GFP_ERR_INVALID, "stub: bad buffer_read");
    else
        memcpy(dst, b->data + offset, n);
    device_leave(d);
    return st;
}

STUB_MAYBE_UNUSED static gfp_status stub_buffer_copy(void *device, gfp_buffer src,
                                                     uint64_t src_offset, gfp_buffer dst,
                                                     uint64_t dst_offset, uint64_t n) {
    stub_device *d = device_enter(device, "buffer_copy");
    stub_buffer *s = buffer_of(d, src, "buffer_copy"), *t = buffer_of(d, dst, "buffer_copy");
    stub_log("buffer_copy src=%llu dst=%llu n=%llu", s ? (unsigned long long)s->id : 0ull,
             t ? (unsigned long long)t->id : 0ull, (unsigned long long)n);
    gfp_status st = GFP_OK;
    if (!s || !t || !range_ok(s, src_offset, n, "buffer_copy") ||
        !range_ok(t, dst_offset, n, "buffer_copy"))
        st = fail(GFP_ERR_INVALID, "stub: bad buffer_copy");
    else
        memmove(t->data + dst_offset, s->data + src_offset, n);
    device_leave(d);
    return st;
}

STUB_MAYBE_UNUSED static gfp_status stub_buffer_fill(void *device, gfp_buffer buffer,
                                                     uint64_t offset, uint64_t n,
                                                     const void *pattern, uint32_t pattern_size) {
    stub_device *d = device_enter(device, "buffer_fill");
    stub_buffer *b = buffer_of(d, buffer, "buffer_fill");
    stub_log("buffer_fill id=%llu n=%llu pattern_size=%u", b ? (unsigned long long)b->id : 0ull,
             (unsigned long long)n, pattern_size);
    gfp_status st = GFP_OK;
    bool size_ok = pattern_size == 1 || pattern_size == 2 || pattern_size == 4 || pattern_size == 8;
    if (!size_ok || n % pattern_size)
        VIOLATION("buffer_fill: pattern_size %u, n %llu", pattern_size, (unsigned long long)n);
    if (!b || !size_ok || !range_ok(b, offset, n, "buffer_fill"))
        st = fail(GFP_ERR_INVALID, "stub: bad buffer_fill");
    else
        for (uint64_t i = 0; i + pattern_size <= n; i += pattern_size)
            memcpy(b->data + offset + i, pattern, pattern_size);
    device_leave(d);
    return st;
}

STUB_MAYBE_UNUSED static gfp_status stub_synchronize(void *device) {
    stub_device *d = device_enter(device, "synchronize");
    stub_log("synchronize");
    device_leave(d);
    return GFP_OK;
}

/* ------------------------------------------------------------------ kernels */
static const char *op_name(uint32_t op) {
    switch (op) {
    case GFP_OP_COPY: return "copy";
    case GFP_OP_FILL: return "fill";
    case GFP_OP_ADD: return "add";
    default: return "other";
    }
}

static bool op_selected(uint32_t op, const char *sel) {
    if (!sel || !*sel) return false;
    char *end;
    long n = strtol(sel, &end, 10);
    if (!*end) return n == (long)op;
    return strcmp(sel, op_name(op)) == 0;
}

static int64_t numel(const gfp_tensor *t) {
    int64_t n = 1;
    for (int32_t i = 0; i < t->rank; i++)
        n *= t->sizes[i];
    return n;
}

/* Validates a tensor the core passes to launch. Returns UNSUPPORTED for a
 * dtype other than f32, INVALID (and logs a violation) for a broken one. */
static gfp_status check_tensor(stub_device *d, const gfp_tensor *t, const char *what) {
    if (!t) {
        VIOLATION("launch: %s is NULL", what);
        return fail(GFP_ERR_INVALID, "stub: NULL tensor");
    }
    if (t->struct_size < GFP_TENSOR_SIZE_V1_0) {
        VIOLATION("launch: %s struct_size %u", what, t->struct_size);
        return fail(GFP_ERR_INVALID, "stub: tensor struct_size too small");
    }
    if (t->rank < 0 || t->rank > GFP_MAX_RANK) {
        VIOLATION("launch: %s rank %d", what, t->rank);
        return fail(GFP_ERR_INVALID, "stub: bad rank");
    }
    stub_buffer *b = buffer_of(d, t->buffer, "launch");
    if (!b) return fail(GFP_ERR_INVALID, "stub: bad buffer");
    if (t->dtype != GFP_F32) return fail(GFP_ERR_UNSUPPORTED, STUB_MSG_UNSUPPORTED);
    uint64_t last = 0;
    for (int32_t i = 0; i < t->rank; i++) {
        if (t->sizes[i] < 0 || t->strides[i] < 0) {
            VIOLATION("launch: %s dim %d size %lld stride %lld", what, i, (long long)t->sizes[i],
                      (long long)t->strides[i]);
            return fail(GFP_ERR_INVALID, "stub: negative size or stride");
        }
        if (t->sizes[i] > 0) last += (uint64_t)(t->sizes[i] - 1) * (uint64_t)t->strides[i];
    }
    if (numel(t) > 0 && (t->offset % 4 || !range_ok(b, t->offset, (last + 1) * 4, "launch")))
        return fail(GFP_ERR_INVALID, "stub: tensor outside its buffer");
    return GFP_OK;
}

static float *elem(const gfp_tensor *t, const int64_t *idx) {
    const stub_buffer *b = t->buffer;
    int64_t off = 0;
    for (int32_t i = 0; i < t->rank; i++)
        off += idx[i] * t->strides[i];
    return (float *)(b->data + t->offset) + off;
}

static bool next_index(int64_t *idx, const int64_t *sizes, int32_t rank) {
    for (int32_t i = rank - 1; i >= 0; i--) {
        if (++idx[i] < sizes[i]) return true;
        idx[i] = 0;
    }
    return false;
}

static bool same_shape(const gfp_tensor *a, const gfp_tensor *b) {
    if (a->rank != b->rank) return false;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->sizes[i] != b->sizes[i]) return false;
    return true;
}

static gfp_status run_op(stub_device *d, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    uint32_t want_in = op == GFP_OP_ADD ? 2 : op == GFP_OP_COPY ? 1 : 0;
    if (op != GFP_OP_ADD && op != GFP_OP_COPY && op != GFP_OP_FILL)
        return fail(GFP_ERR_UNSUPPORTED, STUB_MSG_UNSUPPORTED);
    if (n_in != want_in || n_out != 1 || (n_in && !in) || !out) {
        VIOLATION("launch %s: %u inputs, %u outputs", op_name(op), n_in, n_out);
        return fail(GFP_ERR_INVALID, "stub: wrong tensor counts");
    }
    gfp_status st;
    for (uint32_t i = 0; i < n_in; i++)
        if ((st = check_tensor(d, in[i], "input")) != GFP_OK) return st;
    if ((st = check_tensor(d, out[0], "output")) != GFP_OK) return st;
    const gfp_tensor *y = out[0];
    if (numel(y) == 0) VIOLATION("launch %s with an empty output", op_name(op));
    for (uint32_t i = 0; i < n_in; i++)
        if (!same_shape(in[i], y)) {
            VIOLATION("launch %s: input %u and output shapes differ", op_name(op), i);
            return fail(GFP_ERR_INVALID, "stub: shapes differ");
        }
    float value = 0.0f;
    if (op == GFP_OP_FILL) {
        const gfp_fill_params *p = params;
        if (!p || p->struct_size < GFP_FILL_PARAMS_SIZE_V1_0) {
            VIOLATION("launch fill: missing or short gfp_fill_params");
            return fail(GFP_ERR_INVALID, "stub: bad fill params");
        }
        value = (float)p->value;
    }
    int64_t idx[GFP_MAX_RANK] = {0};
    if (numel(y) == 0) return GFP_OK;
    do {
        float *dst = elem(y, idx);
        if (op == GFP_OP_FILL)
            *dst = value;
        else if (op == GFP_OP_COPY)
            *dst = *elem(in[0], idx);
        else
            *dst = *elem(in[0], idx) + *elem(in[1], idx);
    } while (next_index(idx, y->sizes, y->rank));
    return GFP_OK;
}

STUB_MAYBE_UNUSED static gfp_status stub_launch(void *device, uint32_t op,
                                                const gfp_tensor *const *inputs, uint32_t n_inputs,
                                                const gfp_tensor *const *outputs,
                                                uint32_t n_outputs, const void *params) {
    stub_device *d = device_enter(device, "launch");
    stub_log("launch op=%u n_in=%u n_out=%u", op, n_inputs, n_outputs);
    long delay_us = env_long("STUB_LAUNCH_DELAY_US", 0);
    if (delay_us > 0) {
        struct timespec ts = {delay_us / 1000000, (delay_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    gfp_status st;
    if (!d)
        st = fail(GFP_ERR_INVALID, "stub: launch on an unknown device");
    else if (op_selected(op, getenv("STUB_FAIL_OP")))
        st = fail(GFP_ERR_DEVICE, STUB_MSG_KERNEL);
    else
        st = run_op(d, op, inputs, n_inputs, outputs, n_outputs, params);
    device_leave(d);
    return st;
}

STUB_MAYBE_UNUSED static gfp_status stub_query_op(void *device, const gfp_op_query *q,
                                                  uint32_t *support) {
    stub_device *d = device_enter(device, "query_op");
    gfp_status st = GFP_OK;
    if (!q || q->struct_size < GFP_OP_QUERY_SIZE_V1_0 || q->n_inputs > 8 || q->n_outputs > 4) {
        VIOLATION("query_op: malformed query");
        st = fail(GFP_ERR_INVALID, "stub: malformed query");
    } else {
        stub_log("query_op op=%u layout=%u", q->op, q->layout);
        bool ok = q->op == GFP_OP_ADD || q->op == GFP_OP_COPY || q->op == GFP_OP_FILL;
        for (uint32_t i = 0; i < q->n_inputs; i++)
            ok = ok && q->input_dtypes[i] == GFP_F32;
        for (uint32_t i = 0; i < q->n_outputs; i++)
            ok = ok && q->output_dtypes[i] == GFP_F32;
        *support = ok ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
    }
    device_leave(d);
    return st;
}

STUB_MAYBE_UNUSED static gfp_status stub_query_extension(void *plugin_ctx, const char *name,
                                                         void **out) {
    check_alive("query_extension");
    stub_log("query_extension name=%s", name ? name : "(null)");
    /* Extensions for the core's gf_device_query_extension: "stub.answer"
     * points at 42; "stub.null" is a buggy answer (OK without a pointer);
     * "stub.broken" fails outright; "stub.quiet" is unknown without a
     * message; any other name is unknown, said through set_error. */
    static const int answer = 42;
    *out = NULL;
    if (!strcmp(name, "stub.answer")) {
        *out = (void *)&answer;
        return GFP_OK;
    }
    if (!strcmp(name, "stub.null")) return GFP_OK;
    if (!strcmp(name, "stub.broken")) return fail(GFP_ERR_INTERNAL, "stub.broken always fails");
    if (!strcmp(name, "stub.quiet")) return GFP_ERR_NOT_FOUND;
    return fail(GFP_ERR_NOT_FOUND, "the stub has stub.answer, stub.null and stub.broken");
}

/* ------------------------------------------------------------------ traps */
/* Placed in slots beyond a table's struct_size: the core must never read them. */
#if defined(STUB_VARIANT_TRUNCATED) || defined(STUB_VARIANT_OLDER_MINOR) ||                        \
    defined(STUB_VARIANT_NEWER_MINOR)
static gfp_status trap_query_op(void *device, const gfp_op_query *q, uint32_t *support) {
    VIOLATION("query_op lies beyond struct_size and was called");
    *support = GFP_SUPPORT_NONE;
    return GFP_ERR_INTERNAL;
}
static gfp_status trap_query_extension(void *plugin_ctx, const char *name, void **out) {
    VIOLATION("query_extension lies beyond struct_size and was called");
    return GFP_ERR_INTERNAL;
}
#endif
#if defined(STUB_VARIANT_TRUNCATED)
static gfp_status trap_launch(void *device, uint32_t op, const gfp_tensor *const *inputs,
                              uint32_t n_inputs, const gfp_tensor *const *outputs,
                              uint32_t n_outputs, const void *params) {
    VIOLATION("launch lies beyond struct_size and was called");
    return GFP_ERR_INTERNAL;
}
#endif

/* ------------------------------------------------------------------ the table */
#if defined(STUB_VARIANT_NULL_SLOTS)
#define STUB_OPTIONAL_SLOTS                                                                        \
    .shutdown = NULL, .device_close = NULL, .buffer_copy = NULL, .buffer_fill = NULL,              \
    .synchronize = NULL, .query_op = NULL, .query_extension = NULL
#elif defined(STUB_VARIANT_TRUNCATED) || defined(STUB_VARIANT_OLDER_MINOR)
#define STUB_OPTIONAL_SLOTS                                                                        \
    .shutdown = stub_shutdown, .device_close = stub_device_close, .buffer_copy = stub_buffer_copy, \
    .buffer_fill = stub_buffer_fill, .synchronize = stub_synchronize, .query_op = trap_query_op,   \
    .query_extension = trap_query_extension
#else
#define STUB_OPTIONAL_SLOTS                                                                        \
    .shutdown = stub_shutdown, .device_close = stub_device_close, .buffer_copy = stub_buffer_copy, \
    .buffer_fill = stub_buffer_fill, .synchronize = stub_synchronize, .query_op = stub_query_op,   \
    .query_extension = stub_query_extension
#endif

#if defined(STUB_VARIANT_TRUNCATED)
/* Ends just before the REQUIRED launch slot. */
#define STUB_TABLE_SIZE ((uint32_t)offsetof(gfp_plugin, launch))
#define STUB_LAUNCH trap_launch
#elif defined(STUB_VARIANT_OLDER_MINOR)
/* What a plugin of a minor that predates query_op and query_extension declares. */
#define STUB_TABLE_SIZE ((uint32_t)GFP_SIZE_THROUGH(gfp_plugin, launch))
#define STUB_LAUNCH stub_launch
#else
#define STUB_TABLE_SIZE ((uint32_t)sizeof(gfp_plugin))
#define STUB_LAUNCH stub_launch
#endif

#if defined(STUB_VARIANT_WRONG_MAJOR)
#define STUB_TABLE_MAJOR 2u
#else
#define STUB_TABLE_MAJOR GFP_ABI_MAJOR
#endif

#define STUB_TABLE_INIT(size, minor)                                                               \
    {                                                                                              \
        .struct_size = (size), .abi_major = STUB_TABLE_MAJOR, .abi_minor = (minor),                \
        .name = STUB_NAME, .version = "1.0-" STUB_VARIANT, .init = stub_init,                      \
        .device_count = stub_device_count, .device_props = stub_device_props,                      \
        .device_open = stub_device_open, .buffer_alloc = stub_buffer_alloc,                        \
        .buffer_free = stub_buffer_free, .buffer_write = stub_buffer_write,                        \
        .buffer_read = stub_buffer_read, .launch = STUB_LAUNCH, STUB_OPTIONAL_SLOTS                \
    }

#if defined(STUB_VARIANT_NEWER_MINOR)
/* A table of a future minor: v1.0 followed by slots this core does not know. */
typedef struct stub_plugin_next {
    gfp_plugin v1;
    gfp_status (*future_query_op)(void *device, const gfp_op_query *q, uint32_t *support);
    gfp_status (*future_extension)(void *plugin_ctx, const char *name, void **out);
    uint64_t future_flags;
} stub_plugin_next;
static const stub_plugin_next stub_table_next = {
    .v1 = STUB_TABLE_INIT((uint32_t)sizeof(stub_plugin_next), GFP_ABI_MINOR + 1),
    .future_query_op = trap_query_op,
    .future_extension = trap_query_extension,
    .future_flags = ~0ull,
};
#define STUB_TABLE (&stub_table_next.v1)
#else
STUB_MAYBE_UNUSED static const gfp_plugin stub_table =
    STUB_TABLE_INIT(STUB_TABLE_SIZE, GFP_ABI_MINOR);
#define STUB_TABLE (&stub_table)
#endif

/* ------------------------------------------------------------------ the entry */
#if defined(STUB_VARIANT_NO_ENTRY)
#define STUB_ENTRY graft_plugin_negotiate_v0 /* misspelt: the core must not find it */
#else
#define STUB_ENTRY graft_plugin_negotiate
#endif

GFP_EXPORT gfp_status STUB_ENTRY(const gfp_negotiate_request *request, const gfp_plugin **table);

GFP_EXPORT gfp_status STUB_ENTRY(const gfp_negotiate_request *request, const gfp_plugin **table) {
    if (!request || request->struct_size < GFP_NEGOTIATE_REQUEST_SIZE_V1_0 || !table) {
        stub_log("negotiate");
        VIOLATION("negotiate: malformed request");
        return GFP_ERR_INVALID;
    }
    stub_log("negotiate major=%u minor=%u", request->abi_major, request->abi_minor);
    const gfp_host *h = request->host;
    if (!h || h->struct_size < GFP_HOST_SIZE_V1_0 || !h->set_error || !h->log) {
        VIOLATION("negotiate: host table missing or short");
        return GFP_ERR_INVALID;
    }
    if (h->abi_major != request->abi_major) VIOLATION("negotiate: host and request disagree");
    stub_host = h;
#if defined(STUB_VARIANT_REFUSE)
    return fail(GFP_ERR_VERSION, STUB_MSG_REFUSE);
#else
    *table = STUB_TABLE;
    return GFP_OK;
#endif
}

/* The entry must keep the ABI's type. */
STUB_MAYBE_UNUSED static const gfp_negotiate_fn stub_entry_type_check = STUB_ENTRY;
