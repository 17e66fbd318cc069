/* SPDX-License-Identifier: BSD-3-Clause */
/* abi_host.h — the one harness for tests that drive a plugin through the ABI
 * alone, with no core in between: the test plays the core. It dlopens a
 * plugin file, offers a host table of its own (one per plugin, so two
 * plugins loaded side by side keep their messages apart), negotiates, and
 * initialises and opens device 0; then it launches on hand-made descriptors.
 *
 *   abi_plugin p;
 *   if (abi_load_env(&p, "GRAFT_TEST_REFERENCE_PLUGIN") || abi_open(&p)) return 1;
 *   ... p.t->launch(p.dev, ...), abi_launch(&p, ...), abi_error(&p) ...
 *   abi_close(&p);
 *
 * Users: tests/unit (ref_direct.h, the reference plugin's kernels), the
 * formula checks of tests/opencl and tests/cuda, tests/cuda's load test,
 * tests/vulkan/test_vulkan_abi.c and tests/abi_pair.h (a plugin against
 * the reference, tests/cpu_onednn).
 * tools/plugin_check keeps a host of its own: it is an installed tool that
 * links nothing of graft or its tests, and it records what a plugin does
 * wrong during negotiation as findings rather than failing a test. */
#ifndef GRAFT_TESTS_ABI_HOST_H
#define GRAFT_TESTS_ABI_HOST_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graft_plugin.h"

typedef struct abi_plugin {
    void *dl;                   /* the dlopen handle */
    gfp_negotiate_fn negotiate; /* the plugin's entry point */
    const gfp_plugin *t;        /* its table */
    void *ctx;                  /* its context, after init */
    void *dev;                  /* device 0, after abi_open */
    gfp_host host;              /* the host table given to it (host_ctx: this struct) */
    char error[2048];           /* the last set_error message */
    char log[1024];             /* the last log line */
    int n_logs;                 /* lines logged */
    int log_problems;           /* of those, warnings and errors */
    int errors_logged;          /* of those, errors */
    bool echo_logs;             /* print every log line (default: warnings and errors) */
} abi_plugin;

static inline void abi_host_set_error(void *ctx, const char *message) {
    abi_plugin *p = ctx;
    snprintf(p->error, sizeof p->error, "%s", message ? message : "");
}

/* ABI_LOG=debug prints every line a plugin logs (which launches fell back, ...). */
static inline void abi_host_log(void *ctx, gfp_log_level level, const char *message) {
    abi_plugin *p = ctx;
    p->n_logs++;
    snprintf(p->log, sizeof p->log, "%s", message ? message : "");
    if (level <= GFP_LOG_WARN) p->log_problems++;
    if (level == GFP_LOG_ERROR) p->errors_logged++;
    const char *all = getenv("ABI_LOG");
    if (level <= GFP_LOG_WARN || p->echo_logs || (all && !strcmp(all, "debug")))
        fprintf(stderr, "plugin log (%d): %s\n", (int)level, p->log);
}

/* The last message, as a pointer (for CHECK_CONTAINS). */
static inline const char *abi_error(const abi_plugin *p) { return p->error; }

/* dlopens the plugin at path and negotiates this header's ABI version with
 * it: 0, or 1 after printing why not. */
static inline int abi_load(abi_plugin *p, const char *path) {
    memset(p, 0, sizeof *p);
    p->host = (gfp_host){.struct_size = sizeof(gfp_host),
                         .abi_major = GFP_ABI_MAJOR,
                         .abi_minor = GFP_ABI_MINOR,
                         .host_ctx = p,
                         .set_error = abi_host_set_error,
                         .log = abi_host_log};
    if (!path || !*path) {
        fprintf(stderr, "no plugin path given\n");
        return 1;
    }
    p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        fprintf(stderr, "cannot open %s: %s\n", path, dlerror());
        return 1;
    }
    void *sym = dlsym(p->dl, GFP_ENTRY_SYMBOL);
    if (!sym) {
        fprintf(stderr, "%s does not export %s\n", path, GFP_ENTRY_SYMBOL);
        return 1;
    }
    memcpy(&p->negotiate, &sym, sizeof p->negotiate); /* object to function pointer, as POSIX allows */
    gfp_negotiate_request req = {.struct_size = sizeof req,
                                 .abi_major = GFP_ABI_MAJOR,
                                 .abi_minor = GFP_ABI_MINOR,
                                 .host = &p->host};
    gfp_status st = p->negotiate(&req, &p->t);
    if (st != GFP_OK || !p->t) {
        fprintf(stderr, "negotiation with %s failed (%d): %s\n", path, (int)st, p->error);
        p->t = NULL;
        return 1;
    }
    return 0;
}

/* abi_load of the file named by the environment variable env. */
static inline int abi_load_env(abi_plugin *p, const char *env) {
    const char *path = getenv(env);
    if (!path || !*path) {
        memset(p, 0, sizeof *p);
        fprintf(stderr, "%s is not set: the test needs the plugin's path\n", env);
        return 1;
    }
    return abi_load(p, path);
}

/* init, then device_open(0): 0, or 1 after printing why not. */
static inline int abi_open(abi_plugin *p) {
    uint32_t n = 0;
    if (p->t->init(&p->ctx) != GFP_OK) {
        fprintf(stderr, "plugin %s: init failed: %s\n", p->t->name, p->error);
        return 1;
    }
    if (p->t->device_count(p->ctx, &n) != GFP_OK || n == 0 ||
        p->t->device_open(p->ctx, 0, &p->dev) != GFP_OK) {
        fprintf(stderr, "plugin %s: no usable device 0: %s\n", p->t->name, p->error);
        p->dev = NULL;
        return 1;
    }
    return 0;
}

/* Closes device 0 and shuts the plugin down (the library stays loaded:
 * abi_unload closes it). */
static inline void abi_close(abi_plugin *p) {
    if (p->t && p->dev && p->t->device_close) p->t->device_close(p->dev);
    if (p->t && p->ctx && p->t->shutdown) p->t->shutdown(p->ctx);
    p->dev = NULL;
    p->ctx = NULL;
}

static inline void abi_unload(abi_plugin *p) {
    abi_close(p);
    if (p->dl) dlclose(p->dl);
    p->dl = NULL;
    p->t = NULL;
}

/* ------------------------------------------------------------ descriptors */
#define ABI_TS(...) ((const gfp_tensor *const[]){__VA_ARGS__})

/* Bytes per element of a dtype. */
static inline size_t abi_esize(int32_t dt) {
    switch (dt) {
    case GFP_F64:
    case GFP_I64:
    case GFP_C64: return 8;
    case GFP_C128: return 16;
    case GFP_BOOL: return 1;
    case GFP_F16:
    case GFP_BF16: return 2;
    default: return 4;
    }
}

/* A descriptor of dtype with these sizes and strides (NULL: contiguous,
 * row-major), offset 0 and no buffer yet. */
static inline gfp_tensor abi_desc(int32_t dtype, int rank, const int64_t *sizes,
                                  const int64_t *strides) {
    gfp_tensor t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.dtype = dtype;
    t.rank = rank;
    int64_t run = 1;
    for (int d = rank - 1; d >= 0; d--) {
        t.sizes[d] = sizes[d];
        t.strides[d] = strides ? strides[d] : run;
        run *= sizes[d];
    }
    return t;
}

/* A 1-D contiguous tensor of n elements over buffer b at byte offset off. */
static inline gfp_tensor abi_vec(gfp_buffer b, uint64_t off, int32_t dtype, int64_t n) {
    gfp_tensor t = abi_desc(dtype, 1, &n, NULL);
    t.buffer = b;
    t.offset = off;
    return t;
}

static inline int64_t abi_numel(const gfp_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    return n;
}

/* The buffer element (counted from the buffer's start, t's offset included)
 * that holds t's element number flat, row-major over its sizes. */
static inline int64_t abi_elem(const gfp_tensor *t, int64_t flat) {
    int64_t e = (int64_t)(t->offset / abi_esize(t->dtype));
    for (int d = t->rank - 1; d >= 0; d--) {
        e += (flat % t->sizes[d]) * t->strides[d];
        flat /= t->sizes[d];
    }
    return e;
}

/* ------------------------------------------------------------ calls */
/* Launches op on device 0 and waits for it; p->error holds only what this
 * launch said. */
static inline gfp_status abi_launch(abi_plugin *p, uint32_t op, const gfp_tensor *const *in,
                                    uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                    const void *params) {
    p->error[0] = '\0';
    gfp_status st = p->t->launch(p->dev, op, in, n_in, out, n_out, params);
    if (st == GFP_OK && p->t->synchronize) st = p->t->synchronize(p->dev);
    if (st != GFP_OK && !p->error[0])
        fprintf(stderr, "  plugin %s: launch of op %u failed without a message\n", p->t->name, op);
    return st;
}

/* The plugin's answer to query_op for op on these dtypes in the strided
 * layout; *ok is false when the query itself failed. */
static inline uint32_t abi_query(abi_plugin *p, uint32_t op, uint32_t n_in, const int32_t *in_dt,
                                 uint32_t n_out, const int32_t *out_dt, bool *ok) {
    gfp_op_query q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = op;
    q.layout = GFP_LAYOUT_STRIDED;
    q.n_inputs = n_in;
    q.n_outputs = n_out;
    for (uint32_t i = 0; i < n_in; i++) q.input_dtypes[i] = in_dt[i];
    for (uint32_t i = 0; i < n_out; i++) q.output_dtypes[i] = out_dt[i];
    uint32_t support = 12345;
    *ok = p->t->query_op && p->t->query_op(p->dev, &q, &support) == GFP_OK;
    return support;
}

#endif
