/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_hostdev.c — the one host device of a CPU plugin (the reference and
 * cpu_onednn plugins each link their own copy): its count, the properties
 * every host device shares, the index check, and the leak report at
 * shutdown. The plugin name in messages is ref_hostbuf_self.plugin. */
#define _POSIX_C_SOURCE 200809L /* sysconf */

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ref_internal.h"

static int device_token; /* its address is the device handle */

gfp_status ref_hostdev_count(void *plugin_ctx, uint32_t *count) {
    (void)plugin_ctx;
    if (!count) return pk_fail(GFP_ERR_INVALID, "device_count: count is NULL");
    *count = 1;
    return GFP_OK;
}

gfp_status ref_hostdev_check(const char *what, uint32_t index) {
    if (index == 0) return GFP_OK;
    return pk_fail(GFP_ERR_NOT_FOUND, "%s: device %u does not exist (the %s plugin has one "
                    "device, index 0)", what, (unsigned)index, ref_hostbuf_self.plugin);
}

void *ref_hostdev_handle(void) { return &device_token; }

static uint64_t physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return 0; /* unknown */
    return (uint64_t)pages * (uint64_t)page;
}

gfp_status ref_hostdev_props(uint32_t index, gfp_device_props *props, const char *name,
                             uint32_t dtypes, const char *driver) {
    if (!props) return pk_fail(GFP_ERR_INVALID, "device_props: props is NULL");
    gfp_status st = ref_hostdev_check("device_props", index);
    if (st != GFP_OK) return st;
    gfp_device_props full;
    memset(&full, 0, sizeof full);
    full.flags = GFP_DEVICE_FLAG_HOST_ADDRESSABLE | GFP_DEVICE_FLAG_THREAD_SAFE;
    snprintf(full.name, sizeof full.name, "%s", name);
    snprintf(full.type, sizeof full.type, "%s", "cpu");
    full.memory_bytes = physical_memory();
    full.dtypes = dtypes;
    full.max_rank = GFP_MAX_RANK;
    full.max_alloc_bytes = ref_hostbuf_max_alloc();
    snprintf(full.driver, sizeof full.driver, "%s", driver);
    return pk_copy_props(props, &full);
}

void ref_hostdev_report_leaks(void) {
    long n = ref_hostbuf_live();
    if (n > 0 && pk_host) {
        char msg[160];
        /* The core promises to free everything first; a leak is its bug. */
        snprintf(msg, sizeof msg, "%s: %ld buffer(s) still allocated at shutdown (leaked by the "
                 "caller)", ref_hostbuf_self.plugin, n);
        pk_host->log(pk_host->host_ctx, GFP_LOG_WARN, msg);
    }
}
