/* SPDX-License-Identifier: BSD-3-Clause */
/* graph_internal.h — what the rest of the core tells a capture (graft/graph.h).
 *
 * While a thread captures, dispatch reports each launch, fill, copy and
 * transfer it makes (after it ran), the allocator takes memory from the
 * graph's pool, and the code that keeps host state that changes per step
 * (optimisers, schedules) adds host steps to the graph. Every hook is one
 * thread-local load and a branch when the thread is not capturing. */
#ifndef GRAFT_GRAPH_INTERNAL_H
#define GRAFT_GRAPH_INTERNAL_H

#include "internal.h"

typedef struct gf_capture gf_capture;

/* The calling thread's open capture, NULL when none (or suspended). */
extern _Thread_local gf_capture *gf__tl_capture;

static inline bool gf__capturing(void) { return gf__tl_capture != NULL; }

/* The open capture's id for the records it makes (0 when none). */
uint64_t gf__graph_capture_id(void);
/* The pool allocations of this thread come from (NULL: the device's). */
gf_graph_pool *gf__graph_alloc_pool(void);

/* Stops recording on this thread until gf__graph_resume (nests). Work done
 * meanwhile runs once and is not replayed, and its memory comes from the
 * devices: what a first step creates once (optimiser state). */
int gf__graph_suspend(void);
void gf__graph_resume(int saved);

/* Ends the capture with an error (the region then cannot be replayed):
 * records it as the thread's error and as the reason gf_graph_capture_end
 * gives. Returns the status. */
gf_status gf__graph_refuse(gf_status st, const char *fmt, ...) GF_PRINTF(2, 3);

/* Before a launch on d (dispatch.c): refuses a second device. */
gf_status gf__graph_check_device(gf_device *d, const char *what);
/* After a successful launch (dispatch.c): records it. */
gf_status gf__graph_on_launch(gf_device *d, gfp_op op, const gf_tensor *const *in,
                              const gfp_tensor *const *pin, int n_in, gf_tensor *const *out,
                              const gfp_tensor *const *pout, int n_out, const void *params);
/* The storage whose buffer the next fill, write, copy or read names: the
 * graph keeps external memory alive and knows its pool's. */
void gf__graph_touch(const gf_storage *s);
/* A view is being made of t: a tensor made outside the region is an input. */
void gf__graph_note_source(const gf_tensor *t);
static inline void gf__graph_note(const gf_storage *s) {
    if (__builtin_expect(gf__tl_capture != NULL, 0)) gf__graph_touch(s);
}
/* Before a buffer transfer on d (dispatch.c): refused or recorded. Reads to
 * host are refused outside a fallback. */
gf_status gf__graph_on_write(gf_device *d, gfp_buffer buf, uint64_t off, const void *src,
                             uint64_t n);
gf_status gf__graph_on_read(gf_device *d, gfp_buffer buf, uint64_t off, void *dst, uint64_t n);
gf_status gf__graph_on_copy(gf_device *d, gfp_buffer src, uint64_t soff, gfp_buffer dst,
                            uint64_t doff, uint64_t n);
gf_status gf__graph_on_fill(gf_device *d, gfp_buffer buf, uint64_t off, uint64_t n,
                            const void *pattern, uint32_t pattern_size);
/* Whether this thread is running an op on the fallback device (fallback.c):
 * a second device and host transfers are then part of the op. */
bool gf__fallback_running(void);
/* Host memory that lives as long as the graph (a fallback's staging). */
void *gf__graph_scratch(uint64_t n);

/* A host step: fn(ctx) runs at this point of every replay (not now);
 * free_ctx(ctx) when the graph goes (may be NULL). On failure free_ctx has
 * run. */
typedef gf_status (*gf__graph_host_fn)(void *ctx);
gf_status gf__graph_add_host(gf__graph_host_fn fn, void *ctx, void (*free_ctx)(void *));
/* The parameter struct of the last recorded node when it is a launch of
 * op (a host step updates it before the launch replays), else NULL. */
void *gf__graph_last_params(gfp_op op);
/* The pattern of the last recorded node when it is a fill of pattern_size
 * bytes, else NULL. */
void *gf__graph_last_fill_pattern(uint32_t pattern_size);

#endif
