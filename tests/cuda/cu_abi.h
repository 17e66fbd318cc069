/* cu_abi.h — driving a plugin through the ABI alone (dlopen, negotiate, init),
 * with no core: how tests/cuda talks to the reference plugin (the oracle of
 * the host-side formula checks) and to the cuda plugin itself (the load and
 * capability checks). The host table records the last message a plugin
 * attached to a failure. */
#ifndef GRAFT_TESTS_CU_ABI_H
#define GRAFT_TESTS_CU_ABI_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graft_plugin.h"

static char cu_abi_msg[1024];
/* The last message, as a pointer (for CHECK_CONTAINS). */
static inline const char *cu_abi_last(void) { return cu_abi_msg; }
static void cu_abi_set_error(void *ctx, const char *m) {
    (void)ctx;
    snprintf(cu_abi_msg, sizeof cu_abi_msg, "%s", m ? m : "");
}
static void cu_abi_log(void *ctx, gfp_log_level level, const char *m) {
    (void)ctx;
    (void)level;
    (void)m;
}
static const gfp_host cu_abi_host = {.struct_size = sizeof(gfp_host),
                                     .abi_major = GFP_ABI_MAJOR,
                                     .abi_minor = GFP_ABI_MINOR,
                                     .host_ctx = NULL,
                                     .set_error = cu_abi_set_error,
                                     .log = cu_abi_log};

typedef struct cu_abi_plugin {
    void *dl;
    gfp_negotiate_fn negotiate;
    const gfp_plugin *t;
    void *ctx;
    void *dev; /* device 0, when opened */
} cu_abi_plugin;

/* dlopens the plugin file named by environment variable env and negotiates
 * with it; 0 on success, otherwise prints why. */
static inline int cu_abi_load(cu_abi_plugin *p, const char *env) {
    memset(p, 0, sizeof *p);
    const char *path = getenv(env);
    if (!path || !path[0]) {
        fprintf(stderr, "%s is not set: the test needs the plugin's path\n", env);
        return 1;
    }
    p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    *(void **)&p->negotiate = dlsym(p->dl, GFP_ENTRY_SYMBOL);
    if (!p->negotiate) {
        fprintf(stderr, "%s has no %s\n", path, GFP_ENTRY_SYMBOL);
        return 1;
    }
    gfp_negotiate_request req = {.struct_size = sizeof req, .abi_major = GFP_ABI_MAJOR,
                                 .abi_minor = GFP_ABI_MINOR, .host = &cu_abi_host};
    if (p->negotiate(&req, &p->t) != GFP_OK || !p->t) {
        fprintf(stderr, "negotiation with %s failed: %s\n", path, cu_abi_msg);
        return 1;
    }
    return 0;
}

/* init() and device_open(0); 0 on success. */
static inline int cu_abi_open(cu_abi_plugin *p) {
    uint32_t n = 0;
    if (p->t->init(&p->ctx) != GFP_OK || p->t->device_count(p->ctx, &n) != GFP_OK || n == 0 ||
        p->t->device_open(p->ctx, 0, &p->dev) != GFP_OK) {
        fprintf(stderr, "plugin %s: no usable device 0: %s\n", p->t->name, cu_abi_msg);
        return 1;
    }
    return 0;
}

static inline void cu_abi_close(cu_abi_plugin *p) {
    if (p->dev && p->t->device_close) p->t->device_close(p->dev);
    if (p->t && p->ctx && p->t->shutdown) p->t->shutdown(p->ctx);
    p->dev = NULL;
    p->ctx = NULL;
}

/* A 1-D contiguous tensor of n elements over buffer b. */
static inline gfp_tensor cu_abi_vec(gfp_buffer b, int32_t dtype, int64_t n) {
    gfp_tensor t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.dtype = dtype;
    t.buffer = b;
    t.rank = 1;
    t.sizes[0] = n;
    t.strides[0] = 1;
    return t;
}

#endif
