/* SPDX-License-Identifier: BSD-3-Clause */
/* profiler_internal.h — the profiler's hooks in the core (profiler.c).
 *
 * Every hook is guarded by gf__prof_on(): one load of a global and a branch
 * when neither GRAFT_PROFILE, gf_profiler_start nor GRAFT_LOG=debug is in
 * effect, which is the whole cost of the profiler when it is off. */
#ifndef GRAFT_PROFILER_INTERNAL_H
#define GRAFT_PROFILER_INTERNAL_H

#include "internal.h"

/* Bit 0: recording; bit 1: GRAFT_LOG=debug logs each dispatch; bit 2: sync
 * after each op; -1: not yet resolved from the environment. */
extern int gf__prof_flags;
int gf__prof_resolve(void);
#define GF_PROF_RECORD 1
#define GF_PROF_LOG 2
#define GF_PROF_SYNC 4

static inline int gf__prof_on(void) {
    int f = __atomic_load_n(&gf__prof_flags, __ATOMIC_RELAXED);
    if (__builtin_expect(f == 0, 1)) return 0;
    return f < 0 ? gf__prof_resolve() : f;
}

/* One op dispatch (gf__launch), begun before and ended after the launch. */
typedef struct gf_prof_frame {
    uint64_t t0;
    uint64_t child_ns; /* time of nested ops, for self time */
    struct gf_prof_frame *parent;
    int flags;
    bool skip; /* inside a fallback: the outer op holds the time */
} gf_prof_frame;
void gf__prof_op_begin(gf_prof_frame *f, int flags);
void gf__prof_op_end(gf_prof_frame *f, gf_device *d, const char *opname,
                     const gf_tensor *const *in, int n_in, gf_tensor *const *out, int n_out,
                     bool strided, gf_status status);

/* The outermost public function (gf_...) on the calling thread's stack, and
 * the backward node running, as "gf_backward → MulBackward"; "" when none.
 * Costly (a backtrace): for profiles, logs and cold error paths. */
void gf__prof_api_name(char *buf, size_t len);

/* A host↔device transfer of bytes through the plugin, timed from t0. */
void gf__prof_transfer_event(gf_device *d, bool to_device, uint64_t bytes, uint64_t t0);
/* A copy between devices made by the fallback (after gf__prof_on()). */
void gf__prof_transfer(gf_device *from, gf_device *to, uint64_t bytes);
/* Brackets the run of an op on the fallback device. */
void gf__prof_fallback_begin(gf_device *d, gf_device *fb, const char *opname);
void gf__prof_fallback_end(void);
/* An allocator event: bytes handed out (from the cache or the plugin) or
 * returned, and the pool's state after it. */
void gf__prof_alloc(gf_device *d, uint64_t bytes, int what, uint64_t in_use, uint64_t cached);
#define GF_PROF_ALLOC_CACHE 0
#define GF_PROF_ALLOC_PLUGIN 1
#define GF_PROF_FREE 2
/* A named span: a backward node (cat "backward"), an optimiser step
 * (cat "optimizer"). end takes the begin's time. */
uint64_t gf__prof_span_begin(const char *cat, const char *name);
void gf__prof_span_end(const char *cat, const char *name, uint64_t t0);
uint64_t gf__prof_now(void);

#endif
