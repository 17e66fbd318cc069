/* ref_direct.h — the host side of the tests that call the reference plugin
 * through its ABI alone (tests/unit/test_ref_abi_*.c,
 * tests/opencl/op_math_formulas.c): the test plays the core. It dlopens the
 * plugin, offers a host table that keeps what the plugin reports,
 * negotiates, opens device 0, and launches on hand-made descriptors.
 *
 * Plugin path: argv[1], else $GRAFT_TEST_REFERENCE_PLUGIN. */
#ifndef GRAFT_TESTS_UNIT_REF_DIRECT_H
#define GRAFT_TESTS_UNIT_REF_DIRECT_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graft_plugin.h"

/* ------------------------------------------------------------ host side */
static char last_error[2048]; /* the plugin's last set_error message */
static char last_log[1024];   /* ... and its last log line */
static int n_logs;            /* lines the plugin logged */
static int log_problems;      /* of those, warnings and errors */

/* Functions, so that CHECK_CONTAINS tests a pointer rather than an array's
 * address. */
static inline const char *error_text(void) { return last_error; }
static inline const char *log_text(void) { return last_log; }

static inline void rd_set_error(void *ctx, const char *message) {
    (void)ctx;
    snprintf(last_error, sizeof last_error, "%s", message ? message : "");
}

static inline void rd_log(void *ctx, gfp_log_level level, const char *message) {
    (void)ctx;
    n_logs++;
    snprintf(last_log, sizeof last_log, "%s", message ? message : "");
    if (level <= GFP_LOG_WARN) {
        log_problems++;
        fprintf(stderr, "plugin log: %s\n", last_log);
    }
}

static const gfp_host host = {
    .struct_size = sizeof(gfp_host),
    .abi_major = GFP_ABI_MAJOR,
    .abi_minor = GFP_ABI_MINOR,
    .host_ctx = NULL,
    .set_error = rd_set_error,
    .log = rd_log,
};

static void *rd_lib;              /* the dlopen handle */
static gfp_negotiate_fn negotiate; /* the plugin's entry point */
static const gfp_plugin *P;        /* its table */
static void *plugin_ctx, *dev;     /* its context and device 0 */

/* Loads the plugin named by argv[1] or $GRAFT_TEST_REFERENCE_PLUGIN,
 * negotiates and opens device 0: 1, or 0 after printing why not. */
static inline int rd_open(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : getenv("GRAFT_TEST_REFERENCE_PLUGIN");
    if (!path || !*path) {
        fprintf(stderr, "usage: %s <path to libgraft-reference.so> "
                        "(or set GRAFT_TEST_REFERENCE_PLUGIN)\n", argv[0]);
        return 0;
    }
    rd_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!rd_lib) {
        fprintf(stderr, "cannot open %s: %s\n", path, dlerror());
        return 0;
    }
    void *sym = dlsym(rd_lib, GFP_ENTRY_SYMBOL);
    if (!sym) {
        fprintf(stderr, "%s does not export %s\n", path, GFP_ENTRY_SYMBOL);
        return 0;
    }
    memcpy(&negotiate, &sym, sizeof negotiate); /* object to function pointer, as POSIX allows */
    gfp_negotiate_request req = {.struct_size = sizeof req,
                                 .abi_major = GFP_ABI_MAJOR,
                                 .abi_minor = GFP_ABI_MINOR,
                                 .host = &host};
    gfp_status st = negotiate(&req, &P);
    if (st != GFP_OK || !P) {
        fprintf(stderr, "negotiation with %s failed (%d): %s\n", path, (int)st, last_error);
        return 0;
    }
    uint32_t count = 0;
    if (P->init(&plugin_ctx) != GFP_OK || P->device_count(plugin_ctx, &count) != GFP_OK ||
        count < 1 || P->device_open(plugin_ctx, 0, &dev) != GFP_OK) {
        fprintf(stderr, "%s did not open device 0: %s\n", path, last_error);
        return 0;
    }
    return 1;
}

/* Closes device 0, shuts the plugin down and unloads it. */
static inline void rd_close(void) {
    if (P->device_close) P->device_close(dev);
    if (P->shutdown) P->shutdown(plugin_ctx);
    dlclose(rd_lib);
}

/* ------------------------------------------------------------ launching */
#define TS(...) ((const gfp_tensor *const[]){__VA_ARGS__})

/* Bytes per element of a dtype. */
static inline size_t rd_esize(int32_t dt) {
    return dt == GFP_F64 || dt == GFP_I64 ? 8 : dt == GFP_BOOL ? 1 : 4;
}

/* A descriptor of dtype with these sizes and strides (NULL: contiguous,
 * row-major), offset 0 and no buffer yet. */
static inline gfp_tensor rd_desc(int32_t dtype, int rank, const int64_t *sizes,
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

static inline int64_t rd_numel(const gfp_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    return n;
}

/* The buffer element (counted from the buffer's start, t's offset included)
 * that holds t's element number flat, row-major over its sizes. */
static inline int64_t rd_elem(const gfp_tensor *t, int64_t flat) {
    int64_t e = (int64_t)(t->offset / rd_esize(t->dtype));
    for (int d = t->rank - 1; d >= 0; d--) {
        e += (flat % t->sizes[d]) * t->strides[d];
        flat /= t->sizes[d];
    }
    return e;
}

/* Launches op and waits for it; last_error holds only what this launch
 * said. */
static inline gfp_status rd_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                   const gfp_tensor *const *out, uint32_t n_out,
                                   const void *params) {
    last_error[0] = '\0';
    gfp_status st = P->launch(dev, op, in, n_in, out, n_out, params);
    if (st == GFP_OK && P->synchronize) st = P->synchronize(dev);
    if (st != GFP_OK && !last_error[0])
        fprintf(stderr, "  launch %u failed without a message\n", op);
    return st;
}

/* The plugin's answer to query_op for op on these dtypes in the strided
 * layout (the query itself must succeed). */
static inline uint32_t rd_query(uint32_t op, uint32_t n_in, const int32_t *in_dt, uint32_t n_out,
                                const int32_t *out_dt) {
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
    CHECK(P->query_op(dev, &q, &support) == GFP_OK);
    return support;
}

#endif
