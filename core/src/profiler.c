/* SPDX-License-Identifier: BSD-3-Clause */
/* profiler.c — what ran where, for how long: op dispatches, transfers,
 * fallbacks, allocator events, backward nodes and optimiser steps, written
 * as Chrome trace-event JSON, and a summary table per (op, device).
 *
 * Recording is off by default. GRAFT_PROFILE=<file>.json records from the
 * first dispatch and writes the trace (and prints the summary on stderr) at
 * exit; gf_profiler_start / stop / write do the same from code. GRAFT_LOG=debug
 * logs each dispatch. The hooks cost one load and a branch when all are off
 * (profiler_internal.h). */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graft/profiler.h"
#include "json_internal.h"
#include "profiler_internal.h"

int gf__prof_flags = -1;

/* ------------------------------------------------------------ events */
enum ev_kind { EV_OP, EV_TRANSFER, EV_FALLBACK, EV_ALLOC, EV_SPAN };

typedef struct ev {
    uint8_t kind;
    uint32_t tid;
    uint64_t ts, dur, self;
    char name[40];
    char device[48]; /* the device; for a fallen-back op "acme:0>cpu:0" */
    char sig[80];    /* op events: "(f32, f32) -> (f32) contiguous" */
    char *args;      /* a JSON object's members, or NULL */
    const char *cat; /* a literal */
} ev;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ev *g_ev;
static size_t g_n, g_cap, g_dropped;
static uint64_t g_origin;
static const char *g_env_path; /* GRAFT_PROFILE */
#define EV_MAX ((size_t)4 << 20)

static _Thread_local uint32_t tl_tid;
static _Thread_local gf_prof_frame *tl_top;
static _Thread_local const char *tl_node; /* backward node running */
static _Thread_local int tl_fallback;     /* inside a fallback's run */
static _Thread_local gf_device *tl_fb_dev;
static atomic_uint g_next_tid;

uint64_t gf__prof_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t tid(void) {
    if (!tl_tid) tl_tid = atomic_fetch_add(&g_next_tid, 1) + 1;
    return tl_tid;
}

static bool recording(void) { return (gf__prof_on() & GF_PROF_RECORD) != 0; }

/* Appends e (its args are taken over). */
static void push(ev *e) {
    pthread_mutex_lock(&g_lock);
    if (!(gf__prof_flags & GF_PROF_RECORD) || g_n >= EV_MAX) {
        if (g_n >= EV_MAX) g_dropped++;
        pthread_mutex_unlock(&g_lock);
        free(e->args);
        return;
    }
    if (g_n == g_cap) {
        size_t cap = g_cap ? g_cap * 2 : 4096;
        ev *n = realloc(g_ev, cap * sizeof *n);
        if (!n) {
            g_dropped++;
            pthread_mutex_unlock(&g_lock);
            free(e->args);
            return;
        }
        g_ev = n;
        g_cap = cap;
    }
    g_ev[g_n++] = *e;
    pthread_mutex_unlock(&g_lock);
}

static void clear_locked(void) {
    for (size_t i = 0; i < g_n; i++) free(g_ev[i].args);
    free(g_ev);
    g_ev = NULL;
    g_n = g_cap = g_dropped = 0;
}

/* ------------------------------------------------------------ control */
static void at_exit(void) {
    if (!g_env_path) return;
    if (gf_profiler_write(g_env_path) != GF_OK)
        fprintf(stderr, "graft: GRAFT_PROFILE: %s\n", gf_last_error());
    else fprintf(stderr, "graft: profile written to %s\n", g_env_path);
    size_t need = gf_profiler_summary(NULL, 0);
    char *s = malloc(need + 1);
    if (s) {
        gf_profiler_summary(s, need + 1);
        fputs(s, stderr);
        free(s);
    }
    pthread_mutex_lock(&g_lock);
    clear_locked();
    pthread_mutex_unlock(&g_lock);
}

int gf__prof_resolve(void) {
    pthread_mutex_lock(&g_lock);
    if (gf__prof_flags < 0) {
        int f = 0;
        if (gf__log_level() >= GFP_LOG_DEBUG) f |= GF_PROF_LOG;
        const char *p = gf__getenv("GRAFT_PROFILE");
        const char *sync = gf__getenv("GRAFT_PROFILE_SYNC");
        if (sync && !strcmp(sync, "1")) f |= GF_PROF_SYNC;
        if (p && *p) {
            f |= GF_PROF_RECORD;
            g_env_path = p;
            g_origin = gf__prof_now();
            atexit(at_exit);
        }
        __atomic_store_n(&gf__prof_flags, f, __ATOMIC_RELEASE);
    }
    int f = gf__prof_flags;
    pthread_mutex_unlock(&g_lock);
    return f;
}

gf_status gf_profiler_start(const gf_profiler_opts *opts) {
    gf__prof_on(); /* resolve the environment first */
    pthread_mutex_lock(&g_lock);
    clear_locked();
    g_origin = gf__prof_now();
    int f = (gf__prof_flags & GF_PROF_LOG) | GF_PROF_RECORD;
    const char *sync = gf__getenv("GRAFT_PROFILE_SYNC");
    if ((opts && opts->sync_each_op) || (sync && !strcmp(sync, "1"))) f |= GF_PROF_SYNC;
    __atomic_store_n(&gf__prof_flags, f, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_lock);
    return GF_OK;
}

gf_status gf_profiler_stop(void) {
    gf__prof_on();
    pthread_mutex_lock(&g_lock);
    __atomic_store_n(&gf__prof_flags, gf__prof_flags & GF_PROF_LOG, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_lock);
    return GF_OK;
}

bool gf_profiler_active(void) { return recording(); }

size_t gf_profiler_event_count(void) {
    pthread_mutex_lock(&g_lock);
    size_t n = g_n;
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* ------------------------------------------------------------ the public call */
/* Cache of return addresses: the exported gf_ function each lies in, or "".
 * Names point into libgraft's own dynamic string table, valid while it is
 * loaded. One table for all threads, under its lock (profiling only). */
#define PC_CACHE 4096
typedef struct pc_entry {
    const void *pc;
    const char *name;
} pc_entry;
static pc_entry g_pc[PC_CACHE];
static pthread_mutex_t g_pc_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *exported_name(const void *pc) {
    size_t h = (size_t)(((uintptr_t)pc * 0x9E3779B97F4A7C15ull) >> 52) % PC_CACHE;
    pthread_mutex_lock(&g_pc_lock);
    if (g_pc[h].pc == pc) {
        const char *n = g_pc[h].name;
        pthread_mutex_unlock(&g_pc_lock);
        return n;
    }
    pthread_mutex_unlock(&g_pc_lock);
    static void *self_base;
    if (!__atomic_load_n(&self_base, __ATOMIC_ACQUIRE)) {
        Dl_info me;
        if (dladdr((const void *)&gf__prof_flags, &me))
            __atomic_store_n(&self_base, me.dli_fbase, __ATOMIC_RELEASE);
    }
    const char *name = "";
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1(pc, &info, (void **)&sym, RTLD_DL_SYMENT) &&
        info.dli_fbase == __atomic_load_n(&self_base, __ATOMIC_ACQUIRE) && info.dli_sname && sym &&
        !strncmp(info.dli_sname, "gf_", 3)) {
        uintptr_t a = (uintptr_t)pc - 1, lo = (uintptr_t)info.dli_saddr;
        if (a >= lo && a < lo + sym->st_size) name = info.dli_sname;
    }
    pthread_mutex_lock(&g_pc_lock);
    g_pc[h].pc = pc;
    g_pc[h].name = name;
    pthread_mutex_unlock(&g_pc_lock);
    return name;
}

void gf__prof_api_name(char *buf, size_t len) {
    void *frames[64];
    int k = backtrace(frames, 64);
    const char *outer = "";
    for (int i = 1; i < k; i++) {
        const char *n = exported_name(frames[i]);
        if (n[0]) outer = n;
    }
    if (tl_node && outer[0]) snprintf(buf, len, "%s \xe2\x86\x92 %s", outer, tl_node);
    else snprintf(buf, len, "%s", tl_node ? tl_node : outer);
}

/* ------------------------------------------------------------ hooks */
void gf__prof_op_begin(gf_prof_frame *f, int flags) {
    f->flags = flags;
    f->child_ns = 0;
    f->skip = tl_fallback > 0;
    f->parent = tl_top;
    tl_top = f;
    f->t0 = gf__prof_now();
}

static void dtype_sig(char *buf, size_t len, const gf_tensor *const *in, int n_in,
                      gf_tensor *const *out, int n_out, bool strided) {
    gf__sbuf b = {0};
    gf__sb_printf(&b, "(");
    for (int i = 0; i < n_in; i++)
        gf__sb_printf(&b, "%s%s", i ? ", " : "", in[i] ? gf_dtype_name(in[i]->dtype) : "-");
    gf__sb_printf(&b, ") -> (");
    for (int i = 0; i < n_out; i++) gf__sb_printf(&b, "%s%s", i ? ", " : "", gf_dtype_name(out[i]->dtype));
    gf__sb_printf(&b, ") %s", strided ? "strided" : "contiguous");
    snprintf(buf, len, "%s", b.p ? b.p : "");
    free(b.p);
}

static void tensor_list(gf__sbuf *b, const gf_tensor *const *ts, int n) {
    for (int i = 0; i < n; i++) {
        if (i) gf__sb_printf(b, ", ");
        if (!ts[i]) {
            gf__sb_printf(b, "-");
            continue;
        }
        gf__sb_printf(b, "%s[", gf_dtype_name(ts[i]->dtype));
        for (int k = 0; k < ts[i]->rank; k++)
            gf__sb_printf(b, "%s%lld", k ? ", " : "", (long long)ts[i]->sizes[k]);
        gf__sb_printf(b, "]");
    }
}

void gf__prof_op_end(gf_prof_frame *f, gf_device *d, const char *opname,
                     const gf_tensor *const *in, int n_in, gf_tensor *const *out, int n_out,
                     bool strided, gf_status status) {
    uint64_t t1 = gf__prof_now();
    tl_top = f->parent;
    uint64_t dur = t1 - f->t0;
    if (f->parent) f->parent->child_ns += dur;
    gf_device *ran_on = tl_fb_dev;
    if (!f->parent) tl_fb_dev = NULL;
    if (f->skip) return;
    char api[160];
    gf__prof_api_name(api, sizeof api);
    gf__sbuf ins = {0}, outs = {0};
    tensor_list(&ins, in, n_in);
    tensor_list(&outs, (const gf_tensor *const *)out, n_out);
    if (f->flags & GF_PROF_LOG)
        gf__log(GFP_LOG_DEBUG, "dispatch %s%s%s on %s%s%s: (%s) -> (%s)%s, %.1f us%s", api,
                api[0] ? " \xe2\x86\x92 " : "", opname, d->spec, ran_on ? " via " : "",
                ran_on ? ran_on->spec : "", ins.p ? ins.p : "", outs.p ? outs.p : "",
                strided ? " strided" : "", (double)dur * 1e-3,
                status == GF_OK ? "" : " (failed)");
    if (f->flags & GF_PROF_RECORD) {
        ev e = {.kind = EV_OP, .cat = "op", .tid = tid(), .ts = f->t0, .dur = dur,
                .self = dur > f->child_ns ? dur - f->child_ns : 0};
        snprintf(e.name, sizeof e.name, "%s", opname);
        dtype_sig(e.sig, sizeof e.sig, in, n_in, out, n_out, strided);
        if (ran_on) snprintf(e.device, sizeof e.device, "%s>%s", d->spec, ran_on->spec);
        else snprintf(e.device, sizeof e.device, "%s", d->spec);
        gf__sbuf a = {0};
        gf__sb_printf(&a, "\"call\": \"");
        gf__sb_json_chars(&a, api);
        gf__sb_printf(&a, "%s", api[0] ? " \xe2\x86\x92 " : "");
        gf__sb_json_chars(&a, opname);
        gf__sb_printf(&a, "\", \"device\": \"%s\", \"plugin\": \"", d->spec);
        gf__sb_json_chars(&a, d->plugin->name);
        gf__sb_printf(&a, "\", \"inputs\": \"%s\", \"outputs\": \"%s\", \"layout\": \"%s\"",
               ins.p ? ins.p : "", outs.p ? outs.p : "", strided ? "strided" : "contiguous");
        if (ran_on) gf__sb_printf(&a, ", \"ran_on\": \"%s\"", ran_on->spec);
        if (status != GF_OK) gf__sb_printf(&a, ", \"status\": \"%s\"", gf_status_name(status));
        if (f->flags & GF_PROF_SYNC) gf__sb_printf(&a, ", \"synchronized\": true");
        e.args = a.oom ? (free(a.p), NULL) : a.p;
        push(&e);
    }
    free(ins.p);
    free(outs.p);
}

void gf__prof_transfer_event(gf_device *d, bool to_device, uint64_t bytes, uint64_t t0) {
    if (!recording()) return;
    uint64_t t1 = gf__prof_now();
    if (tl_top) tl_top->child_ns += t1 - t0;
    ev e = {.kind = EV_TRANSFER, .cat = "transfer", .tid = tid(), .ts = t0, .dur = t1 - t0};
    e.self = e.dur;
    snprintf(e.name, sizeof e.name, "%s", to_device ? "host_to_device" : "device_to_host");
    snprintf(e.device, sizeof e.device, "%s", d->spec);
    gf__sbuf a = {0};
    gf__sb_printf(&a, "\"bytes\": %llu, \"device\": \"%s\"", (unsigned long long)bytes, d->spec);
    e.args = a.oom ? (free(a.p), NULL) : a.p;
    push(&e);
}

static _Thread_local uint64_t tl_fb_t0, tl_fb_bytes_to, tl_fb_bytes_back;
static _Thread_local gf_device *tl_fb_from;
static _Thread_local char tl_fb_op[40];

void gf__prof_transfer(gf_device *from, gf_device *to, uint64_t bytes) {
    if (!gf__prof_on()) return;
    if (tl_fb_from && from == tl_fb_from) tl_fb_bytes_to += bytes;
    else tl_fb_bytes_back += bytes;
}

void gf__prof_fallback_begin(gf_device *d, gf_device *fb, const char *opname) {
    tl_fallback++;
    if (!gf__prof_on()) return;
    tl_fb_dev = fb;
    tl_fb_from = d;
    tl_fb_t0 = gf__prof_now();
    snprintf(tl_fb_op, sizeof tl_fb_op, "%s", opname);
}

void gf__prof_fallback_end(void) {
    tl_fallback--;
    if (!recording() || !tl_fb_from) return;
    uint64_t t1 = gf__prof_now();
    ev e = {.kind = EV_FALLBACK, .cat = "fallback", .tid = tid(), .ts = tl_fb_t0,
            .dur = t1 - tl_fb_t0};
    snprintf(e.name, sizeof e.name, "fallback %s", tl_fb_op);
    snprintf(e.device, sizeof e.device, "%s>%s", tl_fb_from->spec, tl_fb_dev ? tl_fb_dev->spec : "?");
    gf__sbuf a = {0};
    gf__sb_printf(&a, "\"op\": \"");
    gf__sb_json_chars(&a, tl_fb_op);
    gf__sb_printf(&a, "\", \"from\": \"%s\", \"to\": \"%s\", \"bytes_to_fallback\": %llu, "
           "\"bytes_from_fallback\": %llu", tl_fb_from->spec, tl_fb_dev ? tl_fb_dev->spec : "?",
           (unsigned long long)tl_fb_bytes_to, (unsigned long long)tl_fb_bytes_back);
    e.args = a.oom ? (free(a.p), NULL) : a.p;
    push(&e);
    tl_fb_from = NULL;
    tl_fb_bytes_to = tl_fb_bytes_back = 0;
}

void gf__prof_alloc(gf_device *d, uint64_t bytes, int what, uint64_t in_use, uint64_t cached) {
    if (!recording()) return;
    static const char *names[] = {"alloc (cache)", "alloc (plugin)", "free (to cache)"};
    ev e = {.kind = EV_ALLOC, .cat = "memory", .tid = tid(), .ts = gf__prof_now()};
    snprintf(e.name, sizeof e.name, "%s", names[what]);
    snprintf(e.device, sizeof e.device, "%s", d->spec);
    gf__sbuf a = {0};
    gf__sb_printf(&a, "\"bytes\": %llu, \"device\": \"%s\", \"in_use\": %llu, \"cached\": %llu",
           (unsigned long long)bytes, d->spec, (unsigned long long)in_use,
           (unsigned long long)cached);
    e.args = a.oom ? (free(a.p), NULL) : a.p;
    push(&e);
}

uint64_t gf__prof_span_begin(const char *cat, const char *name) {
    if (!strcmp(cat, "backward")) tl_node = name;
    return gf__prof_now();
}

void gf__prof_span_end(const char *cat, const char *name, uint64_t t0) {
    if (!strcmp(cat, "backward")) tl_node = NULL;
    if (!recording()) return;
    ev e = {.kind = EV_SPAN, .cat = cat, .tid = tid(), .ts = t0};
    e.dur = gf__prof_now() - t0;
    snprintf(e.name, sizeof e.name, "%s", name);
    push(&e);
}

/* ------------------------------------------------------------ output */
gf_status gf_profiler_write(const char *path) {
    if (!path) return gf__null_arg_of("gf_profiler_write", "path", GF__ARG_STRING);
    FILE *f = fopen(path, "w");
    if (!f)
        return gf__error(GF_ERR_INVALID, "gf_profiler_write: cannot open '%s' for writing; check "
                         "that its directory exists and is writable", path);
    pthread_mutex_lock(&g_lock);
    fprintf(f, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"producer\": \"graft\", "
               "\"dropped_events\": %zu},\n\"traceEvents\": [\n", g_dropped);
    fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, "
               "\"args\": {\"name\": \"graft\"}}");
    for (size_t i = 0; i < g_n; i++) {
        const ev *e = &g_ev[i];
        double ts = (double)(e->ts - g_origin) * 1e-3;
        gf__sbuf nm = {0};
        gf__sb_json_chars(&nm, e->name);
        if (e->kind == EV_ALLOC) {
            fprintf(f, ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"i\", \"s\": \"t\", "
                    "\"ts\": %.3f, \"pid\": 1, \"tid\": %u, \"args\": {%s}}", nm.p ? nm.p : "",
                    e->cat, ts, e->tid, e->args ? e->args : "");
            /* The pool as a counter track per device. */
            const char *iu = e->args ? strstr(e->args, "\"in_use\"") : NULL;
            if (iu)
                fprintf(f, ",\n{\"name\": \"memory %s\", \"ph\": \"C\", \"ts\": %.3f, \"pid\": 1, "
                        "\"args\": {%s}}", e->device, ts, iu);
        } else {
            fprintf(f, ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, "
                    "\"dur\": %.3f, \"pid\": 1, \"tid\": %u, \"args\": {%s}}", nm.p ? nm.p : "",
                    e->cat, ts, (double)e->dur * 1e-3, e->tid, e->args ? e->args : "");
        }
        free(nm.p);
    }
    fprintf(f, "\n]}\n");
    pthread_mutex_unlock(&g_lock);
    if (fclose(f) != 0)
        return gf__error(GF_ERR_INVALID, "gf_profiler_write: writing '%s' failed (disk full?)",
                         path);
    return GF_OK;
}

typedef struct row {
    char name[40], device[48];
    uint64_t calls, total, self;
} row;

static int by_total(const void *a, const void *b) {
    const row *x = a, *y = b;
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->device, y->device);
}

size_t gf_profiler_summary(char *buf, size_t len) {
    pthread_mutex_lock(&g_lock);
    row *rows = NULL;
    size_t n_rows = 0, cap = 0;
    uint64_t all_self = 0;
    uint64_t xfer_bytes[2] = {0, 0}, xfer_n[2] = {0, 0}, fb_n = 0;
    for (size_t i = 0; i < g_n; i++) {
        const ev *e = &g_ev[i];
        if (e->kind == EV_TRANSFER) {
            int k = e->name[0] == 'h' ? 0 : 1;
            xfer_n[k]++;
            const char *b = e->args ? strstr(e->args, "\"bytes\": ") : NULL;
            if (b) xfer_bytes[k] += strtoull(b + 9, NULL, 10);
        }
        if (e->kind == EV_FALLBACK) fb_n++;
        if (e->kind != EV_OP) continue;
        all_self += e->self;
        size_t r = 0;
        while (r < n_rows && (strcmp(rows[r].name, e->name) || strcmp(rows[r].device, e->device)))
            r++;
        if (r == n_rows) {
            if (n_rows == cap) {
                size_t nc = cap ? cap * 2 : 64;
                row *nr = realloc(rows, nc * sizeof *nr);
                if (!nr) break;
                rows = nr;
                cap = nc;
            }
            memset(&rows[r], 0, sizeof rows[r]);
            snprintf(rows[r].name, sizeof rows[r].name, "%s", e->name);
            snprintf(rows[r].device, sizeof rows[r].device, "%s", e->device);
            n_rows++;
        }
        rows[r].calls++;
        rows[r].total += e->dur;
        rows[r].self += e->self;
    }
    size_t n_events = g_n;
    pthread_mutex_unlock(&g_lock);
    if (n_rows) qsort(rows, n_rows, sizeof *rows, by_total);
    gf__sbuf s = {0};
    gf__sb_printf(&s, "graft profile: %zu events; ops by total time (self excludes nested ops and "
               "transfers; share is of all self time)\n", n_events);
    gf__sb_printf(&s, "%-24s %-16s %8s %12s %12s %11s %7s\n", "op", "device", "calls", "total ms",
           "self ms", "mean us", "share");
    for (size_t r = 0; r < n_rows; r++)
        gf__sb_printf(&s, "%-24s %-16s %8llu %12.3f %12.3f %11.2f %6.1f%%\n", rows[r].name,
               rows[r].device, (unsigned long long)rows[r].calls, (double)rows[r].total * 1e-6,
               (double)rows[r].self * 1e-6, (double)rows[r].total * 1e-3 / (double)rows[r].calls,
               all_self ? 100.0 * (double)rows[r].self / (double)all_self : 0.0);
    /* What each device was asked to run: the (op, dtypes, layout) kinds a
     * plugin must provide to run this without fallback. */
    pthread_mutex_lock(&g_lock);
    typedef struct kind {
        const char *name, *device, *sig;
        uint64_t calls;
    } kind;
    kind *kinds = NULL;
    size_t n_kinds = 0, kcap = 0;
    for (size_t i = 0; i < g_n; i++) {
        const ev *e = &g_ev[i];
        if (e->kind != EV_OP) continue;
        size_t k = 0;
        while (k < n_kinds && (strcmp(kinds[k].name, e->name) || strcmp(kinds[k].device, e->device) ||
                               strcmp(kinds[k].sig, e->sig)))
            k++;
        if (k == n_kinds) {
            if (n_kinds == kcap) {
                size_t nc = kcap ? kcap * 2 : 64;
                kind *nk = realloc(kinds, nc * sizeof *nk);
                if (!nk) break;
                kinds = nk;
                kcap = nc;
            }
            kinds[k] = (kind){e->name, e->device, e->sig, 0};
            n_kinds++;
        }
        kinds[k].calls++;
    }
    gf__sb_printf(&s, "dispatched (op, dtypes, layout) per device: what a plugin provides to run this "
               "without fallback\n");
    for (size_t k = 0; k < n_kinds; k++)
        gf__sb_printf(&s, "  %-16s %-22s %-40s %8llu calls\n", kinds[k].device, kinds[k].name,
               kinds[k].sig, (unsigned long long)kinds[k].calls);
    pthread_mutex_unlock(&g_lock);
    free(kinds);
    gf__sb_printf(&s, "transfers: %llu host->device (%llu bytes), %llu device->host (%llu bytes); "
               "fallbacks: %llu\n", (unsigned long long)xfer_n[0],
           (unsigned long long)xfer_bytes[0], (unsigned long long)xfer_n[1],
           (unsigned long long)xfer_bytes[1], (unsigned long long)fb_n);
    free(rows);
    size_t need = s.n;
    if (buf && len) snprintf(buf, len, "%s", s.p ? s.p : "");
    free(s.p);
    return need;
}
