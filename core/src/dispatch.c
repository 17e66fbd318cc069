/* SPDX-License-Identifier: BSD-3-Clause */
/* dispatch.c — the only code that calls plugin function pointers.
 *
 * It opens devices lazily, serialises calls into devices that are not
 * thread-safe, applies the documented defaults of optional slots, caches
 * capability answers, makes contiguous copies for kernels that need them, and
 * turns every plugin failure into a graft error naming the plugin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "complex/complex_internal.h"
#include "graft_ops.h"
#include "graph/graph_internal.h"
#include "internal.h"
#include "profiler_internal.h"

static void lock_dev(gf_device *d) {
    if (!d->thread_safe) pthread_mutex_lock(&d->call_lock);
}
static void unlock_dev(gf_device *d) {
    if (!d->thread_safe) pthread_mutex_unlock(&d->call_lock);
}

static gf_status map_status(gfp_status st) {
    switch (st) {
    case GFP_ERR_OUT_OF_MEMORY: return GF_ERR_OUT_OF_MEMORY;
    case GFP_ERR_UNSUPPORTED: return GF_ERR_UNSUPPORTED;
    default: return GF_ERR_PLUGIN;
    }
}

static const char *plugin_status_name(gfp_status st) {
    switch (st) {
    case GFP_OK: return "OK";
    case GFP_ERR_INVALID: return "INVALID";
    case GFP_ERR_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case GFP_ERR_UNSUPPORTED: return "UNSUPPORTED";
    case GFP_ERR_NOT_FOUND: return "NOT_FOUND";
    case GFP_ERR_DEVICE: return "DEVICE";
    case GFP_ERR_VERSION: return "VERSION";
    case GFP_ERR_INTERNAL: return "INTERNAL";
    }
    return "unknown status";
}

/* A failed plugin call as a graft error: "plugin 'x' (device cpu:0): what
 * failed (STATUS): the plugin's own message". */
static gf_status plugin_fail(const gf_device *d, gfp_status st, const char *what) {
    const char *msg = gf__plugin_message();
    return gf__error(map_status(st), "plugin '%s' (device %s): %s failed (%s)%s%s",
                     d->plugin->name, d->spec, what, plugin_status_name(st), msg[0] ? ": " : "",
                     msg);
}

gf_status gf__dev_open(gf_device *d) {
    if (__atomic_load_n(&d->opened, __ATOMIC_ACQUIRE)) return GF_OK;
    gf_status result = GF_OK;
    pthread_mutex_lock(&d->open_lock);
    if (!d->opened) {
        gf__plugin_message_clear();
        void *h = NULL;
        gfp_status st = d->plugin->table->device_open(d->plugin->ctx, d->plugin_index, &h);
        if (st != GFP_OK) result = plugin_fail(d, st, "device_open");
        else {
            d->handle = h;
            __atomic_store_n(&d->opened, true, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&d->open_lock);
    return result;
}

#define OPEN_OR_RETURN(d)                       \
    do {                                        \
        gf_status s_ = gf__dev_open(d);         \
        if (s_ != GF_OK) return s_;             \
    } while (0)

gf_status gf__dev_alloc(gf_device *d, uint64_t nbytes, gfp_buffer *buf, void **host_ptr) {
    OPEN_OR_RETURN(d);
    gf__plugin_message_clear();
    *host_ptr = NULL;
    lock_dev(d);
    gfp_status st = d->plugin->table->buffer_alloc(d->handle, nbytes, buf, host_ptr);
    unlock_dev(d);
    if (st != GFP_OK) {
        char what[96];
        snprintf(what, sizeof what, "allocating %llu bytes", (unsigned long long)nbytes);
        return plugin_fail(d, st, what);
    }
    if (!(d->props.flags & GFP_DEVICE_FLAG_HOST_ADDRESSABLE)) *host_ptr = NULL;
    return GF_OK;
}

void gf__dev_free(gf_device *d, gfp_buffer buf) {
    lock_dev(d);
    d->plugin->table->buffer_free(d->handle, buf);
    unlock_dev(d);
}

bool gf__dev_can_adopt(const gf_device *d) {
    return (d->props.flags & GFP_DEVICE_FLAG_HOST_ADDRESSABLE) &&
           GF_SLOT(d->plugin, buffer_wrap_host) != NULL;
}

gf_status gf__dev_wrap_host(gf_device *d, void *host_ptr, uint64_t nbytes, gfp_buffer *buf) {
    *buf = NULL;
    gfp_status (*wrap)(void *, void *, uint64_t, gfp_buffer *) = GF_SLOT(d->plugin, buffer_wrap_host);
    if (!wrap || !(d->props.flags & GFP_DEVICE_FLAG_HOST_ADDRESSABLE))
        return gf__error(GF_ERR_UNSUPPORTED, "device %s cannot adopt host memory (%s); copy the "
                         "data in instead (gf_tensor_from_host)", d->spec,
                         !(d->props.flags & GFP_DEVICE_FLAG_HOST_ADDRESSABLE)
                             ? "its memory is not host-addressable"
                             : "its plugin has no buffer_wrap_host slot (plugin ABI >= 1.1)");
    OPEN_OR_RETURN(d);
    gf__plugin_message_clear();
    lock_dev(d);
    gfp_status st = wrap(d->handle, host_ptr, nbytes, buf);
    unlock_dev(d);
    if (st != GFP_OK) {
        *buf = NULL;
        return plugin_fail(d, st, "buffer_wrap_host");
    }
    return GF_OK;
}

static gf_status write_captured(gf_device *d, gfp_buffer buf, uint64_t off, const void *src,
                                uint64_t n) {
    gf_status s = gf__graph_check_device(d, "a write from the host");
    if (s != GF_OK) return s;
    int saved = gf__graph_suspend();
    s = gf__dev_write(d, buf, off, src, n);
    gf__graph_resume(saved);
    return s == GF_OK ? gf__graph_on_write(d, buf, off, src, n) : s;
}

static gf_status read_captured(gf_device *d, gfp_buffer buf, uint64_t off, void *dst, uint64_t n) {
    gf_status s = gf__graph_on_read(d, buf, off, dst, n); /* refused, or recorded */
    if (s != GF_OK) return s;
    int saved = gf__graph_suspend();
    s = gf__dev_read(d, buf, off, dst, n);
    gf__graph_resume(saved);
    return s;
}

static gf_status copy_captured(gf_device *d, gfp_buffer src, uint64_t soff, gfp_buffer dst,
                               uint64_t doff, uint64_t n) {
    gf_status s = gf__graph_check_device(d, "a copy");
    if (s != GF_OK) return s;
    int saved = gf__graph_suspend(); /* the default goes through the host: one copy */
    s = gf__dev_copy(d, src, soff, dst, doff, n);
    gf__graph_resume(saved);
    return s == GF_OK ? gf__graph_on_copy(d, src, soff, dst, doff, n) : s;
}

static gf_status fill_captured(gf_device *d, gfp_buffer buf, uint64_t off, uint64_t n,
                               const void *pattern, uint32_t pattern_size) {
    gf_status s = gf__graph_check_device(d, "a fill");
    if (s != GF_OK) return s;
    int saved = gf__graph_suspend();
    s = gf__dev_fill(d, buf, off, n, pattern, pattern_size);
    gf__graph_resume(saved);
    return s == GF_OK ? gf__graph_on_fill(d, buf, off, n, pattern, pattern_size) : s;
}

gf_status gf__dev_write(gf_device *d, gfp_buffer buf, uint64_t off, const void *src, uint64_t n) {
    if (n == 0) return GF_OK;
    if (__builtin_expect(gf__tl_capture != NULL, 0)) return write_captured(d, buf, off, src, n);
    OPEN_OR_RETURN(d);
    uint64_t t0 = gf__prof_on() ? gf__prof_now() : 0;
    gf__plugin_message_clear();
    lock_dev(d);
    gfp_status st = d->plugin->table->buffer_write(d->handle, buf, off, src, n);
    unlock_dev(d);
    if (t0) gf__prof_transfer_event(d, true, n, t0);
    return st == GFP_OK ? GF_OK : plugin_fail(d, st, "buffer_write");
}

gf_status gf__dev_read(gf_device *d, gfp_buffer buf, uint64_t off, void *dst, uint64_t n) {
    if (n == 0) return GF_OK;
    if (__builtin_expect(gf__tl_capture != NULL, 0)) return read_captured(d, buf, off, dst, n);
    OPEN_OR_RETURN(d);
    uint64_t t0 = gf__prof_on() ? gf__prof_now() : 0;
    gf__plugin_message_clear();
    lock_dev(d);
    gfp_status st = d->plugin->table->buffer_read(d->handle, buf, off, dst, n);
    unlock_dev(d);
    if (t0) gf__prof_transfer_event(d, false, n, t0);
    return st == GFP_OK ? GF_OK : plugin_fail(d, st, "buffer_read");
}

gf_status gf__dev_copy(gf_device *d, gfp_buffer src, uint64_t soff, gfp_buffer dst, uint64_t doff,
                       uint64_t n) {
    if (n == 0) return GF_OK;
    if (__builtin_expect(gf__tl_capture != NULL, 0))
        return copy_captured(d, src, soff, dst, doff, n);
    OPEN_OR_RETURN(d);
    if (GF_SLOT(d->plugin, buffer_copy)) {
        gf__plugin_message_clear();
        lock_dev(d);
        gfp_status st = d->plugin->table->buffer_copy(d->handle, src, soff, dst, doff, n);
        unlock_dev(d);
        return st == GFP_OK ? GF_OK : plugin_fail(d, st, "buffer_copy");
    }
    /* Default: through host memory. */
    void *tmp = malloc(n);
    if (!tmp)
        return gf__error(GF_ERR_OUT_OF_MEMORY, "copy of %llu bytes through host memory: out of "
                         "host memory", (unsigned long long)n);
    gf_status s = gf__dev_read(d, src, soff, tmp, n);
    if (s == GF_OK) s = gf__dev_write(d, dst, doff, tmp, n);
    free(tmp);
    return s;
}

gf_status gf__dev_fill(gf_device *d, gfp_buffer buf, uint64_t off, uint64_t n, const void *pattern,
                       uint32_t pattern_size) {
    if (n == 0) return GF_OK;
    if (__builtin_expect(gf__tl_capture != NULL, 0))
        return fill_captured(d, buf, off, n, pattern, pattern_size);
    OPEN_OR_RETURN(d);
    if (GF_SLOT(d->plugin, buffer_fill)) {
        gf__plugin_message_clear();
        lock_dev(d);
        gfp_status st = d->plugin->table->buffer_fill(d->handle, buf, off, n, pattern, pattern_size);
        unlock_dev(d);
        return st == GFP_OK ? GF_OK : plugin_fail(d, st, "buffer_fill");
    }
    /* Default: write a host block holding the pattern repeated. */
    uint64_t chunk = n < (1u << 20) ? n : (1u << 20);
    chunk -= chunk % pattern_size;
    unsigned char *tmp = malloc(chunk);
    if (!tmp) return gf__error(GF_ERR_OUT_OF_MEMORY, "fill: out of host memory");
    for (uint64_t i = 0; i < chunk; i += pattern_size) memcpy(tmp + i, pattern, pattern_size);
    gf_status s = GF_OK;
    for (uint64_t done = 0; done < n && s == GF_OK; done += chunk) {
        uint64_t len = n - done < chunk ? n - done : chunk;
        s = gf__dev_write(d, buf, off + done, tmp, len);
    }
    free(tmp);
    return s;
}

gf_status gf__dev_sync(gf_device *d) {
    if (!d->opened || !GF_SLOT(d->plugin, synchronize)) return GF_OK; /* default: nothing */
    gf__plugin_message_clear();
    lock_dev(d);
    gfp_status st = d->plugin->table->synchronize(d->handle);
    unlock_dev(d);
    return st == GFP_OK ? GF_OK : plugin_fail(d, st, "synchronize");
}

/* ------------------------------------------------------------ captured graphs */
gf_status gf__dev_launch_prepared(gf_device *d, uint32_t op, const gfp_tensor *const *in,
                                  uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                  const void *params) {
    lock_dev(d);
    gfp_status st = d->plugin->table->launch(d->handle, op, in, n_in, out, n_out, params);
    unlock_dev(d);
    if (__builtin_expect(st == GFP_OK, 1)) return GF_OK;
    char what[96];
    const char *name = gfp_op_name(op);
    snprintf(what, sizeof what, "op '%s' (replayed)", name ? name : "?");
    return plugin_fail(d, st, what);
}

bool gf__dev_has_graphs(const gf_device *d) {
    return GF_SLOT(d->plugin, graph_create) && GF_SLOT(d->plugin, graph_launch) &&
           GF_SLOT(d->plugin, graph_destroy);
}

gf_status gf__dev_graph_create(gf_device *d, const gfp_graph_node *nodes, uint32_t n,
                               void **graph) {
    *graph = NULL;
    if (!gf__dev_has_graphs(d)) return GF_ERR_UNSUPPORTED;
    gf__plugin_message_clear();
    lock_dev(d);
    gfp_status st = d->plugin->table->graph_create(d->handle, nodes, n, graph);
    unlock_dev(d);
    if (st == GFP_OK && *graph) return GF_OK;
    *graph = NULL;
    if (st == GFP_ERR_UNSUPPORTED) return GF_ERR_UNSUPPORTED; /* launch by launch: no error */
    return plugin_fail(d, st == GFP_OK ? GFP_ERR_INTERNAL : st, "graph_create");
}

gf_status gf__dev_graph_launch(gf_device *d, void *graph) {
    gf__plugin_message_clear();
    lock_dev(d);
    gfp_status st = d->plugin->table->graph_launch(d->handle, graph);
    unlock_dev(d);
    return st == GFP_OK ? GF_OK : plugin_fail(d, st, "graph_launch");
}

void gf__dev_graph_destroy(gf_device *d, void *graph) {
    lock_dev(d);
    d->plugin->table->graph_destroy(d->handle, graph);
    unlock_dev(d);
}

/* ------------------------------------------------------------ extensions */
gf_status gf_device_query_extension(const gf_device *dev, const char *name, void **out) {
    if (out) *out = NULL;
    if (!dev) return gf__null_arg_of("gf_device_query_extension", "dev", GF__ARG_DEVICE);
    if (!name) return gf__null_arg_of("gf_device_query_extension", "name", GF__ARG_STRING);
    if (!out) return gf__null_arg_of("gf_device_query_extension", "out", GF__ARG_OUT);
    if (!*name)
        return gf__error(GF_ERR_INVALID, "gf_device_query_extension: the name is empty; "
                         "extensions are named \"<plugin>.<feature>\"");
    gf_plugin_rec *p = dev->plugin;
    gfp_status (*query)(void *, const char *, void **) = GF_SLOT(p, query_extension);
    if (!query)
        return gf__error(GF_ERR_NOT_FOUND, "plugin '%s' (device %s) has no extensions (its "
                         "table has no query_extension slot); \"%s\" is not available",
                         p->name, dev->spec, name);
    gf__plugin_message_clear();
    void *ptr = NULL;
    gfp_status st = query(p->ctx, name, &ptr);
    if (st == GFP_ERR_NOT_FOUND) {
        const char *msg = gf__plugin_message();
        return gf__error(GF_ERR_NOT_FOUND, "plugin '%s' (device %s) has no extension \"%s\"%s%s",
                         p->name, dev->spec, name, msg[0] ? ": " : "", msg);
    }
    char what[160];
    snprintf(what, sizeof what, "query_extension(\"%.100s\")", name);
    if (st != GFP_OK) return plugin_fail(dev, st, what);
    if (!ptr)
        return gf__error(GF_ERR_PLUGIN, "plugin '%s' (device %s): %s returned OK without a "
                         "pointer (a plugin bug)", p->name, dev->spec, what);
    *out = ptr;
    return GF_OK;
}

/* ------------------------------------------------------------ capabilities */
static uint64_t cap_key(const gfp_op_query *q) {
    /* op: 16 bits, layout: 1 bit, then 4 bits per dtype slot. */
    uint64_t k = (uint64_t)(q->op & 0xffff) | ((uint64_t)(q->layout & 1) << 16);
    int shift = 17;
    for (uint32_t i = 0; i < 8; i++, shift += 4)
        k |= (uint64_t)((i < q->n_inputs ? (uint32_t)q->input_dtypes[i] : 0xfu) & 0xf) << shift;
    /* 17 + 32 = 49 bits so far; three output slots take 12 more (ops have at
     * most three outputs in v1). */
    for (uint32_t i = 0; i < 3; i++, shift += 4)
        k |= (uint64_t)((i < q->n_outputs ? (uint32_t)q->output_dtypes[i] : 0xfu) & 0xf) << shift;
    return k;
}

static inline __attribute__((always_inline)) gf_status query_support(gf_device *d, const gfp_op_query *q,
                                                                   uint32_t *support) {
    uint64_t key = cap_key(q);
    size_t n = sizeof d->caps / sizeof d->caps[0];
    size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 40) % n;
    pthread_mutex_lock(&d->cap_lock);
    for (size_t i = 0; i < n; i++) {
        gf_cap_entry *e = &d->caps[(h + i) % n];
        if (!e->used) break;
        if (e->key == key) {
            *support = e->support;
            pthread_mutex_unlock(&d->cap_lock);
            return GF_OK;
        }
    }
    pthread_mutex_unlock(&d->cap_lock);

    uint32_t s;
    if (GF_SLOT(d->plugin, query_op)) {
        gf__plugin_message_clear();
        s = GFP_SUPPORT_NONE;
        lock_dev(d);
        gfp_status st = d->plugin->table->query_op(d->handle, q, &s);
        unlock_dev(d);
        if (st != GFP_OK) return plugin_fail(d, st, "query_op");
    } else {
        /* Default: every op, any strides, for every dtype the device stores. */
        s = GFP_SUPPORT_STRIDED;
        for (uint32_t i = 0; i < q->n_inputs; i++)
            if (q->input_dtypes[i] >= 0 && !(d->props.dtypes & GFP_DTYPE_BIT(q->input_dtypes[i])))
                s = GFP_SUPPORT_NONE;
        for (uint32_t i = 0; i < q->n_outputs; i++)
            if (!(d->props.dtypes & GFP_DTYPE_BIT(q->output_dtypes[i]))) s = GFP_SUPPORT_NONE;
    }
    pthread_mutex_lock(&d->cap_lock);
    for (size_t i = 0; i < n; i++) {
        gf_cap_entry *e = &d->caps[(h + i) % n];
        if (!e->used || e->key == key) {
            e->used = true;
            e->key = key;
            e->support = s;
            break;
        }
    }
    pthread_mutex_unlock(&d->cap_lock);
    *support = s;
    return GF_OK;
}

bool gf__dev_has_op(gfp_op op, const gf_tensor *const *in, int n_in, gf_tensor *const *out,
                    int n_out) {
    if (n_in < 0 || n_in > 8 || n_out < 1 || n_out > 4 || !out[0]) return false;
    gf_device *d = out[0]->storage->device;
    gfp_op_query q = {.struct_size = sizeof q, .op = (uint32_t)op, .n_inputs = (uint32_t)n_in,
                      .n_outputs = (uint32_t)n_out};
    bool strided = false;
    for (int i = 0; i < n_in; i++) {
        q.input_dtypes[i] = in[i] ? (int32_t)in[i]->dtype : -1;
        if (in[i] && in[i]->storage->device != d) return false;
        if (in[i] && !gf__is_contiguous(in[i])) strided = true;
    }
    for (int i = 0; i < n_out; i++) {
        if (!out[i] || out[i]->storage->device != d) return false;
        q.output_dtypes[i] = (int32_t)out[i]->dtype;
        if (!gf__is_contiguous(out[i])) strided = true;
    }
    q.layout = strided ? GFP_LAYOUT_STRIDED : GFP_LAYOUT_CONTIGUOUS;
    uint32_t support = GFP_SUPPORT_NONE;
    if (gf__dev_open(d) != GF_OK || query_support(d, &q, &support) != GF_OK) return false;
    return support != GFP_SUPPORT_NONE;
}

gf_status gf_device_supports_op(gf_device *dev, const char *op, const int *in_dtypes, int n_in,
                                const int *out_dtypes, int n_out, bool strided, bool *provided) {
    const char *fn = "gf_device_supports_op";
    if (provided) *provided = false;
    if (!dev) return gf__null_arg_of(fn, "dev", GF__ARG_DEVICE);
    if (!op) return gf__null_arg_of(fn, "op", GF__ARG_STRING);
    if (!provided) return gf__null_arg_of(fn, "provided", GF__ARG_OUT);
    if (n_in > 0 && !in_dtypes) return gf__null_arg_of(fn, "in_dtypes", GF__ARG_ARRAY);
    if (n_out > 0 && !out_dtypes) return gf__null_arg_of(fn, "out_dtypes", GF__ARG_ARRAY);
    uint32_t id = gfp_op_by_name(op);
    const gfp_op_info *info = id ? gfp_op_lookup(id) : NULL;
    if (!info)
        return gf__error(GF_ERR_NOT_FOUND, "%s: no op is named \"%.60s\"; the names are the "
                         "ones the profiler and graft-plugin-check print (\"matmul\", "
                         "\"conv2d_backward_weight\"; abi/graft_ops.def lists them)", fn, op);
    if (n_in < info->in_min || n_in > info->in_max || n_out != info->n_out)
        return gf__error(GF_ERR_INVALID, "%s: %s takes %u to %u input(s) and %u output(s); got "
                         "%d and %d", fn, info->name, (unsigned)info->in_min,
                         (unsigned)info->in_max, (unsigned)info->n_out, n_in, n_out);
    gfp_op_query q = {.struct_size = sizeof q, .op = id, .n_inputs = (uint32_t)n_in,
                      .n_outputs = (uint32_t)n_out,
                      .layout = strided ? GFP_LAYOUT_STRIDED : GFP_LAYOUT_CONTIGUOUS};
    for (int i = 0; i < n_in; i++) {
        bool optional = i >= n_in - info->in_optional;
        int dt = in_dtypes[i];
        if ((dt < 0 || gf_dtype_size((gf_dtype)dt) == 0) && !(dt == -1 && optional))
            return gf__error(GF_ERR_INVALID, "%s: in_dtypes[%d] is %d: not a gf_dtype%s", fn, i,
                             dt, optional ? " (or -1 for this optional input left out)" : "");
        q.input_dtypes[i] = dt;
    }
    for (int i = 0; i < n_out; i++) {
        int dt = out_dtypes[i];
        if (dt < 0 || gf_dtype_size((gf_dtype)dt) == 0)
            return gf__error(GF_ERR_INVALID, "%s: out_dtypes[%d] is %d: not a gf_dtype", fn, i,
                             dt);
        q.output_dtypes[i] = dt;
    }
    gf_status st = gf__dev_open(dev);
    if (st != GF_OK) return st;
    uint32_t support = GFP_SUPPORT_NONE;
    if ((st = query_support(dev, &q, &support)) != GF_OK) return st;
    *provided = strided ? support == GFP_SUPPORT_STRIDED : support != GFP_SUPPORT_NONE;
    return GF_OK;
}

/* ------------------------------------------------------------ launch */
static bool same_view(const gf_tensor *a, const gf_tensor *b) {
    if (a->storage != b->storage || a->offset != b->offset || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->sizes[i] != b->sizes[i] || a->strides[i] != b->strides[i]) return false;
    return true;
}

static void dtype_list(char *buf, size_t len, const gf_tensor *const *ts, int n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                         ts[i] ? gf_dtype_name(ts[i]->dtype) : "-");
        if (w < 0) break;
        used += (size_t)w;
    }
}

static gf_status raw_launch(gf_device *d, gfp_op op, const char *opname,
                            const gf_tensor *const *in, int n_in, gf_tensor *const *out, int n_out,
                            const void *params) {
    gfp_tensor din[8], dout[4];
    const gfp_tensor *pin[8], *pout[4];
    for (int i = 0; i < n_in; i++) {
        if (in[i]) {
            gf__desc(in[i], &din[i]);
            pin[i] = &din[i];
        } else pin[i] = NULL;
    }
    for (int i = 0; i < n_out; i++) {
        gf__desc(out[i], &dout[i]);
        pout[i] = &dout[i];
    }
    if (__builtin_expect(gf__tl_capture != NULL, 0)) {
        gf_status g = gf__graph_check_device(d, "an op");
        if (g != GF_OK) return g;
    }
    gf__plugin_message_clear();
    lock_dev(d);
    gfp_status st = d->plugin->table->launch(d->handle, (uint32_t)op, pin, (uint32_t)n_in, pout,
                                             (uint32_t)n_out, params);
    unlock_dev(d);
    if (st == GFP_OK) {
        if (__builtin_expect(gf__tl_capture != NULL, 0))
            return gf__graph_on_launch(d, op, in, pin, n_in, out, pout, n_out, params);
        return GF_OK;
    }
    char what[96];
    snprintf(what, sizeof what, "op '%s'", opname);
    return plugin_fail(d, st, what);
}

static gf_status launch_contiguous(gf_device *d, gfp_op op, const char *opname,
                                   const gf_tensor *const *in, int n_in, gf_tensor *const *out,
                                   int n_out, const void *params) {
    /* The kernel needs contiguous tensors: copy in, launch, copy back. The
     * copies themselves need a strided COPY; without one, copy on the host. */
    gf_status s = GF_OK;
    if (op == GFP_OP_COPY) return gf__host_copy(out[0], in[0]);
    const gf_tensor *cin[8] = {0};
    gf_tensor *cout[4] = {0};
    gf_tensor *owned[12] = {0};
    int n_owned = 0;
    for (int i = 0; i < n_in && s == GF_OK; i++) {
        cin[i] = in[i];
        if (in[i] && !gf__is_contiguous(in[i])) {
            gf_tensor *c = gf__empty(in[i]->sizes, in[i]->rank, in[i]->dtype, d);
            if (!c || (s = gf__copy_into(c, in[i])) != GF_OK) {
                if (c) gf_tensor_release(c);
                s = gf__status();
                break;
            }
            owned[n_owned++] = c;
            cin[i] = c;
        }
    }
    for (int i = 0; i < n_out && s == GF_OK; i++) {
        cout[i] = out[i];
        if (gf__is_contiguous(out[i])) continue;
        gf_tensor *alias = NULL;
        for (int k = 0; k < n_in; k++)
            if (in[k] && same_view(in[k], out[i])) alias = (gf_tensor *)cin[k];
        if (alias) {
            cout[i] = alias;
            continue;
        }
        gf_tensor *c = gf__empty(out[i]->sizes, out[i]->rank, out[i]->dtype, d);
        /* Existing contents matter for accumulating ops (SCATTER_ADD...). */
        if (!c || (s = gf__copy_into(c, out[i])) != GF_OK) {
            if (c) gf_tensor_release(c);
            s = gf__status();
            break;
        }
        owned[n_owned++] = c;
        cout[i] = c;
    }
    if (s == GF_OK) s = raw_launch(d, op, opname, cin, n_in, cout, n_out, params);
    for (int i = 0; i < n_out && s == GF_OK; i++)
        if (cout[i] != out[i]) s = gf__copy_into(out[i], cout[i]);
    for (int i = 0; i < n_owned; i++) gf_tensor_release(owned[i]);
    return s;
}

/* Strict mode's note for the UNSUPPORTED message: how to run such ops. */
static const char *strict_note(void) {
    const char *env = gf__getenv("GRAFT_FALLBACK");
    if (env && (!strcmp(env, "off") || !strcmp(env, "none") || !strcmp(env, "0")))
        return "; or unset GRAFT_FALLBACK=off (strict mode) to run such ops on the fallback "
               "device";
    return "";
}

const char *gf__op_display(gfp_op op, const char *opname) {
    if (op == GFP_OP_RANDOM) return "random";
    return strncmp(opname, "gf_", 3) ? opname : opname + 3;
}

gf_status gf__unsupported_error(gf_device *d, gfp_op op, const char *opname,
                                const gf_tensor *const *in, int n_in, gf_tensor *const *out,
                                int n_out, bool strided, const char *why) {
    char ins[160], outs[80], api[160];
    opname = gf__op_display(op, opname);
    dtype_list(ins, sizeof ins, in, n_in);
    dtype_list(outs, sizeof outs, (const gf_tensor *const *)out, n_out);
    gf__prof_api_name(api, sizeof api);
    bool has_inputs = false;
    for (int i = 0; i < n_in; i++) has_inputs |= in[i] != NULL;
    /* The remedy fits the case: converting dtypes helps an op with inputs
     * other than a conversion itself; moving helps an op with inputs. */
    const char *convert = has_inputs && op != GFP_OP_COPY
                              ? ", or convert the inputs with gf_to_dtype to a dtype it provides"
                              : "";
    const char *move = has_inputs ? "move the tensors with gf_to_device to a device that provides "
                                    "it"
                                  : "create the tensor on a device that provides it";
    return gf__error(GF_ERR_UNSUPPORTED,
                     "%s%sdevice %s (plugin '%s') does not provide op '%s' for dtypes (%s) -> "
                     "(%s)%s%s%s; %s%s%s", api, api[0] ? ": " : "", d->spec, d->plugin->name,
                     opname, ins, outs, strided ? " with strided tensors" : "", why[0] ? ": " : "",
                     why, move, convert, strict_note());
}

/* Inlined into both paths of gf__launch, so that the path without the
 * profiler is what it was before the profiler existed. */
static inline __attribute__((always_inline)) gf_status
launch_impl(gfp_op op, const char *opname, const gf_tensor *const *in, int n_in,
            gf_tensor *const *out, int n_out, const void *params, bool *strided_out,
            bool own_device) {
    if (n_in < 0 || n_in > 8 || n_out < 1 || n_out > 4)
        return gf__error(GF_ERR_INVALID, "%s: internal: bad tensor counts", opname);
    gf_device *d = out[0]->storage->device;
    bool strided = false, any_out = false, cx = false;
    gfp_op_query q = {.struct_size = sizeof q, .op = (uint32_t)op, .n_inputs = (uint32_t)n_in,
                      .n_outputs = (uint32_t)n_out};
    for (int i = 0; i < n_in; i++) {
        q.input_dtypes[i] = in[i] ? (int32_t)in[i]->dtype : -1;
        if (!in[i]) continue;
        cx = cx || gf_dtype_is_complex(in[i]->dtype);
        if (in[i]->storage->device != d)
            return gf__error(GF_ERR_DEVICE, "%s: inputs are on %s and %s; move them to one "
                             "device with gf_to_device", opname, in[i]->storage->device->spec,
                             d->spec);
        if (!gf__is_contiguous(in[i])) strided = true;
    }
    for (int i = 0; i < n_out; i++) {
        q.output_dtypes[i] = (int32_t)out[i]->dtype;
        cx = cx || gf_dtype_is_complex(out[i]->dtype);
        if (out[i]->storage->device != d)
            return gf__error(GF_ERR_DEVICE, "%s: outputs on different devices", opname);
        if (!gf__is_contiguous(out[i])) strided = true;
        if (gf__numel(out[i]) > 0) any_out = true;
    }
    if (strided_out) *strided_out = strided;
    if (__builtin_expect(cx, 0)) {
        gf_status cs = gf__complex_check_launch(op, opname, &q);
        if (cs != GF_OK) return cs;
    }
    if (!any_out) return GF_OK; /* nothing to write */
    q.layout = strided ? GFP_LAYOUT_STRIDED : GFP_LAYOUT_CONTIGUOUS;
    gf_status s = gf__dev_open(d);
    if (s != GF_OK) return s;
    uint32_t support = GFP_SUPPORT_NONE;
    s = query_support(d, &q, &support);
    if (s != GF_OK) return s;
    if (support == GFP_SUPPORT_NONE) {
        gf_device *fb = own_device ? NULL : gf__fallback_for(d);
        if (fb) return gf__fallback_run(d, fb, op, opname, in, n_in, out, n_out, params, false);
        return gf__unsupported_error(d, op, opname, in, n_in, out, n_out, strided, "");
    }
    if (!strided || (support & 2u)) s = raw_launch(d, op, opname, in, n_in, out, n_out, params);
    else s = launch_contiguous(d, op, opname, in, n_in, out, n_out, params);
    if (s == GF_ERR_UNSUPPORTED) {
        /* The launch itself refused (a size, a parameter the kernel lacks). */
        gf_device *fb = own_device ? NULL : gf__fallback_for(d);
        if (fb) return gf__fallback_run(d, fb, op, opname, in, n_in, out, n_out, params, true);
    }
    return s;
}

/* gf__launch with the profiler's hooks around it (out of line). */
static __attribute__((noinline, cold)) gf_status
launch_observed(int prof, gfp_op op, const char *opname, const gf_tensor *const *in, int n_in,
                gf_tensor *const *out, int n_out, const void *params, bool own_device) {
    bool strided = false;
    gf_prof_frame f;
    gf__prof_op_begin(&f, prof);
    gf_status s = launch_impl(op, opname, in, n_in, out, n_out, params, &strided, own_device);
    gf_device *d = n_out > 0 && out[0] ? out[0]->storage->device : NULL;
    if ((prof & GF_PROF_SYNC) && s == GF_OK && d) s = gf__dev_sync(d);
    if (d) gf__prof_op_end(&f, d, gf__op_display(op, opname), in, n_in, out, n_out, strided, s);
    return s;
}

gf_status gf__launch(gfp_op op, const char *opname, const gf_tensor *const *in, int n_in,
                     gf_tensor *const *out, int n_out, const void *params) {
    if (__builtin_expect(__atomic_load_n(&gf__prof_flags, __ATOMIC_RELAXED) != 0, 0)) {
        int prof = gf__prof_on();
        if (prof) return launch_observed(prof, op, opname, in, n_in, out, n_out, params, false);
    }
    return launch_impl(op, opname, in, n_in, out, n_out, params, NULL, false);
}

gf_status gf__launch_own(gfp_op op, const char *opname, const gf_tensor *const *in, int n_in,
                         gf_tensor *const *out, int n_out, const void *params) {
    if (__builtin_expect(__atomic_load_n(&gf__prof_flags, __ATOMIC_RELAXED) != 0, 0)) {
        int prof = gf__prof_on();
        if (prof) return launch_observed(prof, op, opname, in, n_in, out, n_out, params, true);
    }
    return launch_impl(op, opname, in, n_in, out, n_out, params, NULL, true);
}
