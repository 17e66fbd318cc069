/* SPDX-License-Identifier: BSD-3-Clause */
/* fallback.c — running an op a device lacks on another device.
 *
 * gf__launch (dispatch.c) calls gf__fallback_run when the device of the
 * tensors answers GFP_SUPPORT_NONE for an (op, dtypes, layout) or its launch
 * returns GFP_ERR_UNSUPPORTED. The op then runs on the fallback device:
 *   1. every input is copied to a contiguous tensor there (through host
 *      memory; directly from or into a host-addressable buffer);
 *   2. each output gets a tensor there; an output that is an input (an
 *      in-place op) is that input's copy, and the outputs of accumulating ops
 *      (SCATTER_ADD, INDEX_ADD) start from a copy of their current contents;
 *   3. the op runs there through gf__launch, which makes its own contiguous
 *      copies if the fallback device needs them;
 *   4. the outputs, and the inputs the op updates in place (BATCH_NORM's
 *      running statistics in training), are copied back into the original
 *      tensors, whatever their strides.
 * RANDOM's parameters carry the generator's seed and offset, which define the
 * numbers on every device, so a fallen-back draw equals the device's own.
 * A thread inside a fallback never falls back again.
 *
 * Bookkeeping: per device, totals (atomics) and one record per (op, dtypes)
 * kind, which also makes the first fallback of a kind log one warning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/graph_internal.h"
#include "internal.h"
#include "profiler_internal.h"

/* ------------------------------------------------------------ the setting */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
/* 0: not resolved yet; 1: resolved (g_device, NULL = strict); 2: set by
 * gf_fallback_set_device. */
static int g_state;
static gf_device *g_device;
static _Thread_local int tl_inside; /* running an op on the fallback device */
/* Inside gf__fallback_run (its transfers too): a capture records them. */
static _Thread_local int tl_running;

bool gf__fallback_running(void) { return tl_running > 0; }

/* Resolves GRAFT_FALLBACK under g_lock. Returns the device or NULL; *bad
 * receives true when the variable names no device (the error is set). */
static gf_device *resolve_locked(bool *bad) {
    *bad = false;
    if (g_state) return g_device;
    const char *env = gf__getenv("GRAFT_FALLBACK");
    if (env && (!strcmp(env, "off") || !strcmp(env, "none") || !strcmp(env, "0"))) {
        __atomic_store_n(&g_device, NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&g_state, 1, __ATOMIC_RELEASE);
        return NULL;
    }
    gf_device *d = gf_device_find(env && *env ? env : "cpu");
    if (!d) {
        if (env && *env) {
            /* Name the variable; resolve again next time (a fix of the
             * environment cannot come, but the error should not be lost). */
            char msg[900];
            snprintf(msg, sizeof msg, "%s", gf__message());
            gf__error(gf__status(), "GRAFT_FALLBACK: %s; set it to a device string such as "
                      "'cpu' or to 'off' for strict mode", msg);
            *bad = true;
            return NULL;
        }
        /* No cpu device at all: nothing to fall back to. */
        gf_clear_error();
    }
    __atomic_store_n(&g_device, d, __ATOMIC_RELAXED);
    __atomic_store_n(&g_state, 1, __ATOMIC_RELEASE);
    return d;
}

gf_status gf_fallback_set_device(gf_device *dev) {
    gf__ensure_init();
    pthread_mutex_lock(&g_lock);
    __atomic_store_n(&g_device, dev, __ATOMIC_RELAXED);
    __atomic_store_n(&g_state, 2, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_lock);
    return GF_OK;
}

gf_device *gf_fallback_device(void) {
    gf__ensure_init();
    bool bad;
    pthread_mutex_lock(&g_lock);
    gf_device *d = resolve_locked(&bad);
    pthread_mutex_unlock(&g_lock);
    return d;
}

gf_device *gf__fallback_for(gf_device *d) {
    if (tl_inside) return NULL;
    /* g_state is stored (release) after g_device: read it first. */
    int state = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    gf_device *fb = __atomic_load_n(&g_device, __ATOMIC_RELAXED);
    if (!state) {
        bool bad;
        /* A status set here would replace the caller's error: keep it. */
        char saved[1024];
        gf_status saved_status = gf__status();
        snprintf(saved, sizeof saved, "%s", gf__message());
        pthread_mutex_lock(&g_lock);
        fb = resolve_locked(&bad);
        pthread_mutex_unlock(&g_lock);
        if (bad) {
            gf__log(GFP_LOG_ERROR, "%s", gf__message());
            fb = NULL;
        }
        if (saved_status != GF_OK) gf__error(saved_status, "%s", saved);
        else gf_clear_error();
    }
    return fb == d ? NULL : fb;
}

gf_status gf__dtype_not_stored(gf_device *dev, gf_dtype dtype) {
    /* A device without storage for a dtype cannot hold the tensor at all, so
     * no fallback can help: the tensors of an op are all on one device. The
     * message names a device that stores it: the fallback device first. */
    char api[160];
    gf__prof_api_name(api, sizeof api);
    gf_device *other = gf__fallback_for(dev);
    if (!other || !(other->props.dtypes & GFP_DTYPE_BIT(dtype))) {
        other = NULL;
        for (int i = 0; i < gf_device_count() && !other; i++) {
            gf_device *d = gf_device_at(i);
            if (d != dev && (d->props.dtypes & GFP_DTYPE_BIT(dtype))) other = d;
        }
    }
    char eg[80] = "";
    if (other) snprintf(eg, sizeof eg, " (e.g. %s)", other->spec);
    return gf__error(GF_ERR_DTYPE, "%s%sdevice %s (plugin '%s') does not store dtype %s, which %s "
                     "needs there; keep such tensors, and the ops on them, on a device that stores "
                     "%s%s, or use a dtype the device stores", api, api[0] ? ": " : "", dev->spec,
                     dev->plugin->name, gf_dtype_name(dtype), api[0] ? "this call" : "a tensor",
                     gf_dtype_name(dtype), eg);
}

/* ------------------------------------------------------------ bookkeeping */
#define FB_KINDS 128

typedef struct fb_kind {
    uint64_t key; /* op and dtypes: the capability key without the layout */
    char op[32];
    char signature[96];
    char reason[24];
    gf_device *fallback;
    char fallback_spec[48]; /* kept: the report at gf_shutdown outlives devices */
    uint64_t calls;
} fb_kind;

struct gf_fallback_rec {
    struct gf_fallback_rec *next_rec; /* g_records */
    gf_device *device;
    char spec[48];
    atomic_uint_fast64_t ops, bytes_to, bytes_from, nanos;
    int n_kinds;
    bool full_logged;
    fb_kind kinds[FB_KINDS];
};

static struct gf_fallback_rec *g_records; /* every record, freed by reset */

static void report_at_exit(void);

/* The device's record, created on first use (under g_lock). */
static struct gf_fallback_rec *record_locked(gf_device *d) {
    if (d->fallback) return d->fallback;
    struct gf_fallback_rec *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    static bool at_exit_set;
    if (!at_exit_set) {
        at_exit_set = true;
        atexit(report_at_exit);
    }
    r->device = d;
    snprintf(r->spec, sizeof r->spec, "%s", d->spec);
    r->next_rec = g_records;
    g_records = r;
    d->fallback = r;
    return r;
}

/* GRAFT_LOG=info: what fell back, per device, at gf_shutdown or exit. */
static void report_locked(void) {
    if (gf__log_level() < GFP_LOG_INFO) return;
    for (struct gf_fallback_rec *r = g_records; r; r = r->next_rec) {
        uint64_t ops = atomic_load(&r->ops);
        if (!ops) continue;
        gf__log(GFP_LOG_INFO, "fallback from %s: %llu ops of %d kinds, %llu bytes there and "
                "%llu back, %.3f s", r->spec, (unsigned long long)ops, r->n_kinds,
                (unsigned long long)atomic_load(&r->bytes_to),
                (unsigned long long)atomic_load(&r->bytes_from),
                (double)atomic_load(&r->nanos) * 1e-9);
        for (int i = 0; i < r->n_kinds; i++)
            gf__log(GFP_LOG_INFO, "  %s %s on %s: %llu calls (%s)", r->kinds[i].op,
                    r->kinds[i].signature, r->kinds[i].fallback_spec,
                    (unsigned long long)r->kinds[i].calls, r->kinds[i].reason);
    }
}

static void report_at_exit(void) {
    pthread_mutex_lock(&g_lock);
    report_locked();
    /* Reported once: gf_shutdown (if it comes later) finds nothing. */
    while (g_records) {
        struct gf_fallback_rec *r = g_records;
        g_records = r->next_rec;
        if (r->device && r->device->fallback == r) r->device->fallback = NULL;
        free(r);
    }
    pthread_mutex_unlock(&g_lock);
}

void gf__fallback_reset(void) {
    pthread_mutex_lock(&g_lock);
    report_locked();
    while (g_records) {
        struct gf_fallback_rec *r = g_records;
        g_records = r->next_rec;
        free(r);
    }
    __atomic_store_n(&g_state, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_device, NULL, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lock);
}

static void dtype_sig(char *buf, size_t len, const gf_tensor *const *in, int n_in,
                      gf_tensor *const *out, int n_out) {
    size_t used = 0;
    int w = snprintf(buf, len, "(");
    used = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < n_in && used < len; i++) {
        w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                     in[i] ? gf_dtype_name(in[i]->dtype) : "-");
        used += w > 0 ? (size_t)w : 0;
    }
    if (used < len) {
        w = snprintf(buf + used, len - used, ") -> (");
        used += w > 0 ? (size_t)w : 0;
    }
    for (int i = 0; i < n_out && used < len; i++) {
        w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", gf_dtype_name(out[i]->dtype));
        used += w > 0 ? (size_t)w : 0;
    }
    if (used < len) snprintf(buf + used, len - used, ")");
}

static uint64_t kind_key(gfp_op op, const gf_tensor *const *in, int n_in, gf_tensor *const *out,
                         int n_out) {
    uint64_t k = (uint64_t)op & 0xffff;
    int shift = 16;
    for (int i = 0; i < 8; i++, shift += 4)
        k |= (uint64_t)((i < n_in && in[i] ? (unsigned)in[i]->dtype : 0xfu) & 0xf) << shift;
    for (int i = 0; i < 3; i++, shift += 4)
        k |= (uint64_t)((i < n_out ? (unsigned)out[i]->dtype : 0xfu) & 0xf) << shift;
    return k;
}

/* Counts one fallback of a kind; logs the warning when it is the first. */
static void note_kind(gf_device *d, gf_device *fb, gfp_op op, const char *opname,
                      const gf_tensor *const *in, int n_in, gf_tensor *const *out, int n_out,
                      bool at_launch) {
    uint64_t key = kind_key(op, in, n_in, out, n_out);
    char sig[96];
    bool first = false;
    pthread_mutex_lock(&g_lock);
    struct gf_fallback_rec *r = record_locked(d);
    if (r) {
        fb_kind *k = NULL;
        for (int i = 0; i < r->n_kinds; i++)
            if (r->kinds[i].key == key && r->kinds[i].fallback == fb) k = &r->kinds[i];
        if (!k && r->n_kinds < FB_KINDS) {
            k = &r->kinds[r->n_kinds++];
            k->key = key;
            k->fallback = fb;
            snprintf(k->fallback_spec, sizeof k->fallback_spec, "%s", fb->spec);
            snprintf(k->op, sizeof k->op, "%s", opname);
            dtype_sig(k->signature, sizeof k->signature, in, n_in, out, n_out);
            snprintf(k->reason, sizeof k->reason, "%s",
                     at_launch ? "launch refused" : "not provided");
            first = true;
        } else if (!k && !r->full_logged) {
            r->full_logged = true;
            gf__log(GFP_LOG_WARN, "device %s: more than %d kinds of ops fell back; further "
                    "kinds are counted but not listed or logged", d->spec, FB_KINDS);
        }
        if (k) k->calls++;
    }
    pthread_mutex_unlock(&g_lock);
    if (first && gf__log_level() >= GFP_LOG_WARN) {
        dtype_sig(sig, sizeof sig, in, n_in, out, n_out);
        char api[96];
        gf__prof_api_name(api, sizeof api);
        gf__log(GFP_LOG_WARN, "op '%s' %s%s%s is %s by device %s (plugin '%s'): it runs on %s, "
                "with copies each way (shown once per op and dtypes; GRAFT_FALLBACK=off makes "
                "this an error)", opname, sig, api[0] ? " in " : "", api,
                at_launch ? "refused at launch" : "not provided", d->spec, d->plugin->name,
                fb->spec);
    }
}

gf_status gf_fallback_get_stats(const gf_device *dev, gf_fallback_stats *stats) {
    if (!dev || !stats) return gf__error(GF_ERR_INVALID, "gf_fallback_get_stats: NULL argument");
    memset(stats, 0, sizeof *stats);
    pthread_mutex_lock(&g_lock);
    const struct gf_fallback_rec *r = dev->fallback;
    if (r) {
        stats->ops = atomic_load(&r->ops);
        stats->bytes_to_fallback = atomic_load(&r->bytes_to);
        stats->bytes_from_fallback = atomic_load(&r->bytes_from);
        stats->seconds = (double)atomic_load(&r->nanos) * 1e-9;
        stats->distinct_ops = r->n_kinds;
    }
    pthread_mutex_unlock(&g_lock);
    return GF_OK;
}

gf_status gf_fallback_reset_stats(gf_device *dev) {
    if (!dev) return gf__null_arg_of("gf_fallback_reset_stats", "dev", GF__ARG_DEVICE);
    pthread_mutex_lock(&g_lock);
    struct gf_fallback_rec *r = dev->fallback;
    if (r) {
        atomic_store(&r->ops, 0);
        atomic_store(&r->bytes_to, 0);
        atomic_store(&r->bytes_from, 0);
        atomic_store(&r->nanos, 0);
        for (int i = 0; i < r->n_kinds; i++) r->kinds[i].calls = 0;
    }
    pthread_mutex_unlock(&g_lock);
    return GF_OK;
}

int gf_fallback_op_count(const gf_device *dev) {
    if (!dev) return 0;
    pthread_mutex_lock(&g_lock);
    int n = dev->fallback ? dev->fallback->n_kinds : 0;
    pthread_mutex_unlock(&g_lock);
    return n;
}

gf_status gf_fallback_get_op(const gf_device *dev, int i, gf_fallback_op_info *info) {
    if (!dev || !info) return gf__error(GF_ERR_INVALID, "gf_fallback_get_op: NULL argument");
    pthread_mutex_lock(&g_lock);
    const struct gf_fallback_rec *r = dev->fallback;
    int n = r ? r->n_kinds : 0;
    if (i < 0 || i >= n) {
        pthread_mutex_unlock(&g_lock);
        return gf__error(GF_ERR_INDEX, "gf_fallback_get_op: index %d out of range [0, %d) for "
                         "device %s", i, n, dev->spec);
    }
    const fb_kind *k = &r->kinds[i];
    memset(info, 0, sizeof *info);
    snprintf(info->op, sizeof info->op, "%s", k->op);
    snprintf(info->signature, sizeof info->signature, "%s", k->signature);
    snprintf(info->fallback, sizeof info->fallback, "%s", k->fallback_spec);
    snprintf(info->reason, sizeof info->reason, "%s", k->reason);
    info->calls = k->calls;
    pthread_mutex_unlock(&g_lock);
    return GF_OK;
}

/* ------------------------------------------------------------ copies */
static void count_bytes(gf_device *d, bool to_fallback, uint64_t n) {
    pthread_mutex_lock(&g_lock);
    struct gf_fallback_rec *r = record_locked(d);
    pthread_mutex_unlock(&g_lock);
    if (r) atomic_fetch_add(to_fallback ? &r->bytes_to : &r->bytes_from, n);
}

/* Writes src into dst (same sizes and dtype, different devices). Dense both:
 * one copy, straight from or into a host-addressable buffer when there is
 * one, else through a host block. Otherwise the strided host copy. */
static gf_status transfer(gf_tensor *dst, const gf_tensor *src) {
    size_t es = gf_dtype_size(src->dtype);
    uint64_t n = (uint64_t)gf__numel(src) * es;
    if (n == 0) return GF_OK;
    gf_status s;
    gf_storage *ss = src->storage, *ds = dst->storage;
    gf__graph_note(ss);
    gf__graph_note(ds);
    if (gf__is_contiguous(src) && gf__is_contiguous(dst)) {
        uint64_t soff = (uint64_t)src->offset * es, doff = (uint64_t)dst->offset * es;
        if (ds->host_ptr) {
            s = gf__dev_sync(ds->device); /* nothing pending may touch it */
            if (s == GF_OK)
                s = gf__dev_read(ss->device, ss->buffer, soff, (char *)ds->host_ptr + doff, n);
        } else if (ss->host_ptr) {
            s = gf__dev_sync(ss->device);
            if (s == GF_OK)
                s = gf__dev_write(ds->device, ds->buffer, doff, (char *)ss->host_ptr + soff, n);
        } else {
            /* Captured: staging that lives as long as the graph (replay
             * reads into it and writes from it again). */
            bool captured = gf__capturing();
            void *tmp = captured ? gf__graph_scratch(n) : malloc(n);
            if (!tmp)
                return captured ? gf__status()
                                : gf__error(GF_ERR_OUT_OF_MEMORY, "fallback: out of host memory "
                                            "for a copy of %llu bytes", (unsigned long long)n);
            s = gf__dev_read(ss->device, ss->buffer, soff, tmp, n);
            if (s == GF_OK) s = gf__dev_write(ds->device, ds->buffer, doff, tmp, n);
            if (!captured) free(tmp);
        }
    } else {
        s = gf__host_copy(dst, src);
    }
    if (s == GF_OK && gf__prof_on()) gf__prof_transfer(ss->device, ds->device, n);
    return s;
}

/* A contiguous copy of t on fb. */
static gf_tensor *copy_to(const gf_tensor *t, gf_device *fb, gf_device *d) {
    gf_tensor *c = gf__empty(t->sizes, t->rank, t->dtype, fb);
    if (!c) return NULL;
    if (transfer(c, t) != GF_OK) {
        gf_tensor_release(c);
        return NULL;
    }
    count_bytes(d, true, (uint64_t)gf__numel(t) * gf_dtype_size(t->dtype));
    return c;
}

static bool same_view(const gf_tensor *a, const gf_tensor *b) {
    if (a->storage != b->storage || a->offset != b->offset || a->rank != b->rank ||
        a->dtype != b->dtype)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->sizes[i] != b->sizes[i] || a->strides[i] != b->strides[i]) return false;
    return true;
}

/* Ops whose outputs are accumulated into: their current contents go along. */
static bool accumulates(gfp_op op) { return op == GFP_OP_SCATTER_ADD || op == GFP_OP_INDEX_ADD; }

/* Inputs the op writes in place: BATCH_NORM's running statistics in training. */
static bool input_written(gfp_op op, int i, const void *params) {
    if (op != GFP_OP_BATCH_NORM || (i != 3 && i != 4) || !params) return false;
    const gfp_batch_norm_params *p = params;
    return p->training != 0;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

gf_status gf__fallback_run(gf_device *d, gf_device *fb, gfp_op op, const char *opname,
                           const gf_tensor *const *in, int n_in, gf_tensor *const *out,
                           int n_out, const void *params, bool refused_at_launch) {
    /* A launch's refusal, kept for the message when fb fails too. */
    opname = gf__op_display(op, opname);
    char why[600] = "";
    /* The launch's refusal is this op's, and goes on success; an error
     * pending from an earlier call stays (NULL propagation reports it). */
    if (refused_at_launch) {
        snprintf(why, sizeof why, "%s", gf__message());
        gf_clear_error();
    }
    uint64_t t0 = now_ns();
    tl_running++;

    gf_tensor *fin[8] = {0}, *fout[4] = {0};
    gf_status s = GF_OK;
    gf__prof_fallback_begin(d, fb, opname);
    for (int i = 0; i < n_in && s == GF_OK; i++) {
        if (!in[i]) continue;
        for (int k = 0; k < i && !fin[i]; k++)
            if (in[k] && same_view(in[k], in[i])) fin[i] = gf_tensor_retain(fin[k]);
        if (!fin[i] && !(fin[i] = copy_to(in[i], fb, d))) s = gf__status();
    }
    for (int i = 0; i < n_out && s == GF_OK; i++) {
        for (int k = 0; k < n_in && !fout[i]; k++)
            if (in[k] && same_view(in[k], out[i])) fout[i] = gf_tensor_retain(fin[k]);
        if (fout[i]) continue;
        if (accumulates(op)) fout[i] = copy_to(out[i], fb, d);
        else fout[i] = gf__empty(out[i]->sizes, out[i]->rank, out[i]->dtype, fb);
        if (!fout[i]) s = gf__status();
    }
    if (s == GF_OK) {
        tl_inside++;
        s = gf__launch(op, opname, (const gf_tensor *const *)fin, n_in, fout, n_out, params);
        tl_inside--;
    }
    for (int i = 0; i < n_out && s == GF_OK; i++) {
        s = transfer(out[i], fout[i]);
        if (s == GF_OK) count_bytes(d, false, (uint64_t)gf__numel(out[i]) * gf_dtype_size(out[i]->dtype));
    }
    for (int i = 0; i < n_in && s == GF_OK; i++) {
        if (!in[i] || !input_written(op, i, params)) continue;
        s = transfer((gf_tensor *)in[i], fin[i]);
        if (s == GF_OK) count_bytes(d, false, (uint64_t)gf__numel(in[i]) * gf_dtype_size(in[i]->dtype));
    }
    for (int i = 0; i < n_in; i++) gf_tensor_release(fin[i]);
    for (int i = 0; i < n_out; i++) gf_tensor_release(fout[i]);
    gf__prof_fallback_end();
    tl_running--;

    if (s != GF_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", gf__message());
        if (!refused_at_launch) {
            bool strided = false;
            for (int i = 0; i < n_in; i++) strided |= in[i] && !gf__is_contiguous(in[i]);
            for (int i = 0; i < n_out; i++) strided |= !gf__is_contiguous(out[i]);
            gf__unsupported_error(d, op, opname, in, n_in, out, n_out, strided, "");
            snprintf(why, sizeof why, "%s", gf__message());
        }
        if (s == GF_ERR_UNSUPPORTED)
            return gf__error(s, "%s; the fallback device %s lacks it too: %s (set GRAFT_FALLBACK "
                             "to a device that provides it, or convert the tensors with "
                             "gf_to_dtype)", why, fb->spec, msg);
        return gf__error(s, "op '%s' ran on the fallback device %s because device %s lacks it, "
                         "and failed there: %s", opname, fb->spec, d->spec, msg);
    }
    note_kind(d, fb, op, opname, in, n_in, out, n_out, refused_at_launch);
    pthread_mutex_lock(&g_lock);
    struct gf_fallback_rec *r = record_locked(d);
    pthread_mutex_unlock(&g_lock);
    if (r) {
        atomic_fetch_add(&r->ops, 1);
        atomic_fetch_add(&r->nanos, now_ns() - t0);
    }
    return GF_OK;
}
