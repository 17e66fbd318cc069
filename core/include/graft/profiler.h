/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/profiler.h — what ran where and for how long.
 *
 * The profiler records every op dispatch (the op, the public function that
 * asked for it, e.g. "gf_mse_loss → square", the device and plugin, input and
 * output shapes and dtypes, the wall time of the launch), host↔device
 * transfers with their bytes, fallbacks (graft/device.h), allocator events
 * with the pool's state, each backward node by its name and each optimiser
 * step. gf_profiler_write saves them as Chrome trace-event JSON (Perfetto,
 * chrome://tracing); gf_profiler_summary gives a table per (op, device) sorted
 * by total time, like torch.profiler's key_averages().
 *
 * Environment: GRAFT_PROFILE=<file>.json records from the start and writes
 * the trace, and prints the summary on stderr, at exit. GRAFT_PROFILE_SYNC=1
 * synchronizes the device after each op so that each op's time is its time
 * to completion on asynchronous devices; this perturbs what it measures
 * (the device can no longer overlap work with the host). GRAFT_LOG=debug
 * logs each dispatch (op, call, device, shapes, time) on stderr.
 *
 * Off by default; when off, each dispatch pays one load and a branch.
 * Recording holds every event in memory (about 300 bytes each, at most
 * 4M events; later ones are counted as dropped). */
#ifndef GRAFT_PROFILER_H
#define GRAFT_PROFILER_H

#include "graft/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gf_profiler_opts {
    /* Synchronize after each op (as GRAFT_PROFILE_SYNC=1, which also sets it). */
    bool sync_each_op;
} gf_profiler_opts;

/* Starts recording, dropping the events recorded so far. opts may be NULL. */
GF_API gf_status gf_profiler_start(const gf_profiler_opts *opts);
/* Stops recording; the events stay until the next start. */
GF_API gf_status gf_profiler_stop(void);
GF_API bool gf_profiler_active(void);
/* Events recorded since the last start. */
GF_API size_t gf_profiler_event_count(void);
/* Writes the events as Chrome trace-event JSON. Fails: INVALID when the file
 * cannot be written. */
GF_API gf_status gf_profiler_write(const char *path);
/* The summary table into buf (always terminated when len > 0); returns its
 * full length, so gf_profiler_summary(NULL, 0) + 1 is the size to pass. */
GF_API size_t gf_profiler_summary(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
