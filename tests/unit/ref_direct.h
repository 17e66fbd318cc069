/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_direct.h — the host side of the tests that call the reference plugin
 * through its ABI alone (tests/unit/test_ref_abi_*.c,
 * tests/opencl/op_math_formulas.c): the test plays the core through
 * tests/abi_host.h, on the reference plugin's device 0, with the names
 * these tests use (P, dev, last_error, rd_launch, ...).
 *
 * Plugin path: argv[1], else $GRAFT_TEST_REFERENCE_PLUGIN. */
#ifndef GRAFT_TESTS_UNIT_REF_DIRECT_H
#define GRAFT_TESTS_UNIT_REF_DIRECT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_host.h"
#include "check.h"

/* ------------------------------------------------------------ host side */
/* The plugin, through the tests' one ABI host (abi_host.h). The names below
 * are what these tests have always used. */
static abi_plugin rd_p;
#define last_error (rd_p.error)       /* the plugin's last set_error message */
#define last_log (rd_p.log)           /* ... and its last log line */
#define n_logs (rd_p.n_logs)          /* lines the plugin logged */
#define log_problems (rd_p.log_problems) /* of those, warnings and errors */

/* Functions, so that CHECK_CONTAINS tests a pointer rather than an array's
 * address. */
static inline const char *error_text(void) { return rd_p.error; }
static inline const char *log_text(void) { return rd_p.log; }

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
    if (abi_load(&rd_p, path) != 0 || abi_open(&rd_p) != 0) return 0;
    negotiate = rd_p.negotiate;
    P = rd_p.t;
    plugin_ctx = rd_p.ctx;
    dev = rd_p.dev;
    return 1;
}

/* Closes device 0, shuts the plugin down and unloads it. */
static inline void rd_close(void) { abi_unload(&rd_p); }

/* ------------------------------------------------------------ launching */
#define TS ABI_TS
#define rd_esize abi_esize
#define rd_desc abi_desc
#define rd_numel abi_numel
#define rd_elem abi_elem

/* Launches op and waits for it; last_error holds only what this launch
 * said. */
static inline gfp_status rd_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                   const gfp_tensor *const *out, uint32_t n_out,
                                   const void *params) {
    return abi_launch(&rd_p, op, in, n_in, out, n_out, params);
}

/* The plugin's answer to query_op for op on these dtypes in the strided
 * layout (the query itself must succeed). */
static inline uint32_t rd_query(uint32_t op, uint32_t n_in, const int32_t *in_dt, uint32_t n_out,
                                const int32_t *out_dt) {
    bool ok = false;
    uint32_t support = abi_query(&rd_p, op, n_in, in_dt, n_out, out_dt, &ok);
    CHECK(ok);
    return support;
}

#endif
