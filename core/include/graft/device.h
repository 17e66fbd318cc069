/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/device.h — devices, plugins, memory statistics. */
#ifndef GRAFT_DEVICE_H
#define GRAFT_DEVICE_H

#include "graft/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device is owned by the library and lives until gf_shutdown. */
typedef struct gf_device gf_device;

/* Number of devices of every loaded plugin. */
GF_API int gf_device_count(void);
/* The i-th device in discovery order, NULL (INDEX) when out of range. */
GF_API gf_device *gf_device_at(int i);
/* A device by string: "cpu", "opencl:1", or a priority list
 * "cuda:0,vulkan,cpu" (the first available wins). "type" alone is "type:0".
 * Fails: NOT_FOUND with a message listing the available devices;
 * INVALID for a malformed string. */
GF_API gf_device *gf_device_find(const char *spec);
/* The device named by GRAFT_DEVICE (unset: "cpu"). Fails as gf_device_find. */
GF_API gf_device *gf_device_default(void);

GF_API const char *gf_device_name(const gf_device *dev);   /* "Reference CPU" */
GF_API const char *gf_device_type(const gf_device *dev);   /* "cpu" */
GF_API int gf_device_index(const gf_device *dev);          /* index within its type */
GF_API const char *gf_device_plugin(const gf_device *dev); /* plugin name */
/* "cpu:0": the string gf_device_find accepts for this device. */
GF_API const char *gf_device_spec(const gf_device *dev);

typedef struct gf_device_info {
    char name[128];
    char type[32];
    char driver[128];
    uint64_t memory_bytes;
    uint64_t max_alloc_bytes;
    uint32_t dtypes;   /* bit (1 << gf_dtype) per dtype the device stores */
    bool host_addressable;
    bool thread_safe;
} gf_device_info;
/* Fails: INVALID for NULL arguments. */
GF_API gf_status gf_device_get_info(const gf_device *dev, gf_device_info *info);

/* A plugin's extension by name: features of one plugin that the portable
 * API does not have (counters, a kernel variant to force), reached through
 * the plugin ABI's query_extension slot. *out receives a pointer whose type
 * the extension's own header defines (plugins/vulkan/graft_vulkan_ext.h for
 * "vulkan.stats"); it lives until gf_shutdown. Names are the plugin's,
 * conventionally "<plugin>.<feature>". The answer concerns dev's plugin, so
 * every device of one plugin gives the same pointer.
 * Fails: INVALID for a NULL argument or an empty name; NOT_FOUND when the
 * plugin has no extension of that name (or no extensions at all: a plugin
 * of ABI 1.0 without the slot), with the plugin's message when it gave one;
 * PLUGIN when the plugin's answer is an error or a NULL pointer. On failure
 * *out is NULL. */
GF_API gf_status gf_device_query_extension(const gf_device *dev, const char *name, void **out);

/* Whether dev runs an op itself, without the fallback device, for tensors
 * of the given dtypes: the plugin's own answer, as the dispatcher gets it
 * (graft-info lists it for the ops of a mixed-precision step). op is the
 * op's name as the profiler and graft-plugin-check print it ("matmul",
 * "conv2d_backward_weight"; abi/graft_ops.def lists them); in_dtypes and
 * out_dtypes hold the gf_dtype of each of its tensors in the op's order,
 * n_in and n_out as many as it takes, -1 for an optional input left out.
 * *provided answers for tensors of any strides when strided is true, else
 * for contiguous ones. Fails: INVALID (a NULL argument, counts or dtypes
 * the op cannot take), NOT_FOUND (no op of that name), DEVICE or PLUGIN
 * (the device could not be opened or its plugin's query failed); *provided
 * is false on failure. */
GF_API gf_status gf_device_supports_op(gf_device *dev, const char *op, const int *in_dtypes,
                                       int n_in, const int *out_dtypes, int n_out, bool strided,
                                       bool *provided);

/* Waits for all work launched on the device. Fails: PLUGIN. */
GF_API gf_status gf_device_synchronize(gf_device *dev);

/* The caching allocator's figures for one device. */
typedef struct gf_memory_stats {
    uint64_t bytes_in_use;       /* held by live storages */
    uint64_t peak_bytes_in_use;  /* since start or the last reset */
    uint64_t bytes_cached;       /* freed by graft, kept for reuse */
    uint64_t plugin_allocations; /* calls of the plugin's buffer_alloc so far */
    uint64_t plugin_frees;
} gf_memory_stats;
GF_API gf_status gf_memory_get_stats(const gf_device *dev, gf_memory_stats *stats);
GF_API gf_status gf_memory_reset_peak(gf_device *dev);
/* Returns every cached block to the plugin. */
GF_API gf_status gf_memory_empty_cache(gf_device *dev);
/* The most bytes the device's cache keeps (blocks freed by graft, kept for
 * reuse): when a freed block takes it past the limit, the blocks freed
 * longest ago go back to the plugin. 0 caches nothing; UINT64_MAX sets no
 * limit. Default: 256 MiB on a device whose memory is host memory
 * (GFP_DEVICE_FLAG_HOST_ADDRESSABLE: the CPU plugins), no limit elsewhere;
 * the environment variable GRAFT_CACHE_LIMIT ("512M", "0", "none") sets it for
 * every device when graft starts. Lowering it gives the excess back at once.
 * Fails: INVALID (NULL argument). */
GF_API gf_status gf_memory_set_cache_limit(gf_device *dev, uint64_t bytes);
GF_API gf_status gf_memory_get_cache_limit(const gf_device *dev, uint64_t *bytes);

/* ---- fallback: ops a device lacks run on another device
 *
 * When a device's plugin does not provide an (op, dtypes, layout), because
 * query_op answers GFP_SUPPORT_NONE or launch returns GFP_ERR_UNSUPPORTED,
 * the core runs that one op on the fallback device: the inputs are copied
 * there (through host memory, or directly when one side is host-addressable),
 * the op runs, and the outputs are copied back, so the result is where it
 * would have been. Ops that write into existing memory (in-place ops,
 * scatter_add, index_add, batch_norm's running statistics) keep their
 * meaning; RANDOM gives the same numbers (the ABI defines them); ops inside
 * backward and double backward fall back alike.
 *
 * The fallback device is GRAFT_FALLBACK's device string (default "cpu": the
 * first cpu device); GRAFT_FALLBACK=off is strict mode, where such an op fails
 * with GF_ERR_UNSUPPORTED as it names. An op never falls back from the
 * fallback device itself, nor when the fallback device lacks it too (then the
 * error names both devices). The first fallback of each (device, op, dtypes)
 * logs a warning at GRAFT_LOG=warn. */

/* Sets the fallback device for the whole process; NULL is strict mode. It
 * overrides GRAFT_FALLBACK until gf_shutdown. Never fails for a valid dev. */
GF_API gf_status gf_fallback_set_device(gf_device *dev);
/* The fallback device, NULL in strict mode. NULL with an error
 * (NOT_FOUND, INVALID) when GRAFT_FALLBACK names no device. */
GF_API gf_device *gf_fallback_device(void);

/* What fell back from one device since start or the last reset. */
typedef struct gf_fallback_stats {
    uint64_t ops;                 /* launches that ran on the fallback device */
    uint64_t bytes_to_fallback;   /* copied from this device's tensors */
    uint64_t bytes_from_fallback; /* copied back into this device's tensors */
    double seconds;               /* wall time of those launches, copies included */
    int distinct_ops;             /* (op, dtypes) kinds, as gf_fallback_op_count */
} gf_fallback_stats;
/* Fails: INVALID for NULL arguments. */
GF_API gf_status gf_fallback_get_stats(const gf_device *dev, gf_fallback_stats *stats);
GF_API gf_status gf_fallback_reset_stats(gf_device *dev);

/* One (op, dtypes) that fell back from a device. */
typedef struct gf_fallback_op_info {
    char op[32];           /* the op's name, e.g. "softmax" */
    char signature[96];    /* "(f32) -> (f32)" */
    char fallback[48];     /* the device it ran on, e.g. "cpu:0" */
    char reason[24];       /* "not provided" (query_op) or "launch refused" */
    uint64_t calls;
} gf_fallback_op_info;
/* Number of (op, dtypes) kinds that fell back from dev (in first-seen order). */
GF_API int gf_fallback_op_count(const gf_device *dev);
/* Fails: INVALID for NULL arguments, INDEX when i is out of range. */
GF_API gf_status gf_fallback_get_op(const gf_device *dev, int i, gf_fallback_op_info *info);

/* What graft-info shows: every plugin file found and what became of it, as
 * decided when the plugins were loaded: a skipped plugin, or one whose device
 * enumeration failed, is tried again only after gf_shutdown and gf_init. */
typedef struct gf_plugin_info {
    char path[1024];
    char name[64];       /* "" when it could not be read */
    char version[64];
    uint32_t abi_major, abi_minor; /* of the plugin's table, 0 when unknown */
    bool loaded;
    char reason[512];    /* why it was skipped, or the plugin's note (e.g. why
                            it has zero devices); may be "" */
    int device_count;
} gf_plugin_info;
GF_API int gf_plugin_count(void);
GF_API gf_status gf_plugin_get_info(int i, gf_plugin_info *info);

#ifdef __cplusplus
}
#endif
#endif
