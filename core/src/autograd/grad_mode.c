/* SPDX-License-Identifier: BSD-3-Clause */
/* grad_mode.c — thread-local grad modes and the process-wide anomaly flag. */
#include "ag_internal.h"

static _Thread_local gf_grad_mode tl_mode = GF_GRAD_MODE_GRAD;
static atomic_bool g_anomaly;

gf_grad_mode gf_grad_mode_set(gf_grad_mode mode) {
    gf_grad_mode prev = tl_mode;
    if (mode == GF_GRAD_MODE_GRAD || mode == GF_GRAD_MODE_NO_GRAD || mode == GF_GRAD_MODE_INFERENCE)
        tl_mode = mode;
    else
        gf__error(GF_ERR_INVALID, "gf_grad_mode_set: unknown mode %d", (int)mode);
    return prev;
}

gf_grad_mode gf_grad_mode_get(void) { return tl_mode; }
bool gf_is_grad_enabled(void) { return tl_mode == GF_GRAD_MODE_GRAD; }
bool gf__ag_grad_enabled(void) { return tl_mode == GF_GRAD_MODE_GRAD; }
bool gf__ag_inference_mode(void) { return tl_mode == GF_GRAD_MODE_INFERENCE; }

void gf_set_anomaly_enabled(bool enabled) { atomic_store(&g_anomaly, enabled); }
bool gf_is_anomaly_enabled(void) { return atomic_load(&g_anomaly); }
bool gf__ag_anomaly(void) { return atomic_load_explicit(&g_anomaly, memory_order_relaxed); }
