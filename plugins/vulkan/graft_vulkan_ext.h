/* SPDX-License-Identifier: BSD-3-Clause */
/* graft_vulkan_ext.h — the Vulkan plugin's extension, by name through the
 * ABI's query_extension slot (no ABI change needed), or from an application
 * through gf_device_query_extension:
 *
 *   const graft_vulkan_stats_ext *ext;
 *   gf_device_query_extension(dev, "vulkan.stats", (void **)&ext);
 *
 * Check ext->struct_size before reading a field (fields are only appended).
 * The counters let tests demand zero validation messages and check that
 * launches are batched and memory sub-allocated; the matmul mode lets
 * graft-bench compare the shaders. */
#ifndef GRAFT_VULKAN_EXT_H
#define GRAFT_VULKAN_EXT_H

#include <stdint.h>

typedef struct graft_vulkan_stats_ext {
    uint32_t struct_size;
    uint32_t reserved0;
    long (*validation_messages)(void);       /* warnings and errors since init */
    int (*validation_enabled)(void);         /* 1 when the Khronos layer is on */
    uint64_t (*dispatches)(void *device);    /* dispatches recorded since open */
    uint64_t (*submits)(void *device);       /* queue submissions since open */
    void (*set_matmul_mode)(int mode); /* 0 by size and device, 1 naive, 2 tiled, 3 register-blocked */
    uint64_t (*memory_blocks)(void *device); /* VkDeviceMemory allocations held */
    /* Runs of captured graphs through the graph slots on every device since
     * init (each resubmits command buffers recorded at graph_create). */
    uint64_t (*graph_launches)(void);
    /* Fused runs of elementwise launches recorded by graph_create, and the
     * launches they cover, since the plugin loaded (GRAFT_VULKAN_FUSE=0: none). */
    uint64_t (*fused_runs)(void);
    uint64_t (*fused_launches)(void);
} graft_vulkan_stats_ext;

#endif
