/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_plugin.c — the Vulkan plugin's entry point, devices and op routing.
 *
 * One graft device per physical device that has a compute queue and what the
 * shaders need (64-bit integers, 8-bit storage for bool). Devices are created
 * on first use; launch checks every tensor against its buffer, then hands the
 * op to its family (vk_ops_*.c), which records dispatches. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graft_vulkan_ext.h"
#include "vk_internal.h"
#include "plugin_negotiate.h"


gfp_status vkp_fail_vk(VkResult r, const char *what) {
    gfp_status st = (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
                        ? GFP_ERR_OUT_OF_MEMORY
                        : GFP_ERR_DEVICE;
    return pk_fail(st, "vulkan: %s failed with %s", what, vkp_result_name(r));
}

/* ------------------------------------------------------------ families */
#define VKP_FAMILY_ENTRY(f, set) {set, vkp_##f##_support, vkp_##f##_launch},
static const vkp_family families[] = {PK_FAMILIES(VKP_FAMILY_ENTRY)
                                          VKP_FAMILY_ENTRY(fft, GFP_FAMILY_BIT(GFP_FAMILY_FFT))};
#undef VKP_FAMILY_ENTRY

/* A live buffer of this plugin: its size. */
static gfp_status buffer_size(const void *ctx, gfp_buffer buffer, uint64_t *size) {
    (void)ctx;
    const vkp_buf *b = buffer;
    if (!b || b->magic != VKP_BUF_MAGIC) return GFP_ERR_INVALID;
    *size = b->size;
    return GFP_OK;
}

/* What a physical device stores: f64 and c128 need shaderFloat64, f16
 * shaderFloat16 and 16-bit storage; c64 is computed on every device
 * (vk_complex.c). */
static uint32_t phys_dtypes(const vkp_physical *ph) {
    uint32_t s = VKP_BIT(GFP_F32) | VKP_BIT(GFP_I32) | VKP_BIT(GFP_I64) | VKP_BIT(GFP_BOOL) |
                 VKP_BIT(GFP_C64);
    if (ph->has_f64) s |= VKP_BIT(GFP_F64) | VKP_BIT(GFP_C128);
    if (ph->has_f16) s |= VKP_BIT(GFP_F16);
    return s;
}

uint32_t vkp_device_dtypes(const vkp_device *d) { return phys_dtypes(d->phys); }

bool vkp_dtype_ok(const vkp_device *d, int32_t dtype) {
    return dtype >= 0 && dtype < GFP_DTYPE_COUNT && (vkp_device_dtypes(d) & VKP_BIT(dtype));
}

/* ------------------------------------------------------------ plugin */
static bool initialised;
atomic_bool vkp_exiting;

static void vkp_device_close(void *device);
static void shutdown_all(void);

/* exit() runs atexit handlers (last registered first), then the destructors
 * of shared objects, where the core shuts plugins down. By then Mesa's own
 * atexit handler has stopped lavapipe's queue threads and the validation
 * layer's C++ statics are destroyed: a fence wait or a submit there crashed.
 * The layer registers some of those statics lazily, on the first submit or
 * wait, so this handler is registered again after the device is created,
 * after the first submit and after the first wait: its last registration
 * runs before all of theirs. It drains and destroys everything while the
 * driver and the layer are alive; afterwards no entry point touches Vulkan
 * or the freed devices (device work fails with a message, frees and closes
 * return at once). */
static void vkp_at_exit(void) {
    if (atomic_load(&vkp_exiting)) return;
    if (initialised) shutdown_all();
    atomic_store(&vkp_exiting, true);
}

/* Occasions registered since init: a re-created instance loads the layer
 * anew, so every init registers again (a few entries per init). */
static _Atomic unsigned at_exit_done;

void vkp_register_at_exit(unsigned which) {
    if (atomic_fetch_or(&at_exit_done, which) & which) return;
    atexit(vkp_at_exit);
}

static gfp_status vkp_init(void **plugin_ctx) {
    if (plugin_ctx) *plugin_ctx = &vkp_ctx;
    atomic_store(&at_exit_done, 0u);
    vkp_instance_init();
    initialised = true;
    if (vkp_ctx.n_phys == 0)
        pk_log(GFP_LOG_INFO, "vulkan: no device: %s", vkp_ctx.reason);
    return GFP_OK;
}

static void vkp_shutdown(void *plugin_ctx) {
    (void)plugin_ctx;
    if (atomic_load(&vkp_exiting)) return; /* done by vkp_at_exit */
    shutdown_all();
}

static void shutdown_all(void) {
    for (uint32_t i = 0; i < vkp_ctx.n_phys; i++)
        if (vkp_ctx.phys[i].open) vkp_device_close(vkp_ctx.phys[i].open);
    long n = atomic_load(&vkp_validation_count);
    if (n > 0)
        pk_log(GFP_LOG_WARN, "vulkan: %ld validation message(s) were reported during the run", n);
    vkp_instance_shutdown();
    initialised = false;
}

static gfp_status vkp_device_count(void *plugin_ctx, uint32_t *count) {
    (void)plugin_ctx;
    if (!count) return pk_fail(GFP_ERR_INVALID, "device_count: count is NULL");
    *count = vkp_ctx.n_phys;
    if (*count == 0 && pk_host)
        pk_host->set_error(pk_host->host_ctx,
                            vkp_ctx.reason[0] ? vkp_ctx.reason : "no Vulkan device");
    return GFP_OK;
}

static gfp_status vkp_device_props(void *plugin_ctx, uint32_t index, gfp_device_props *props) {
    (void)plugin_ctx;
    if (!props) return pk_fail(GFP_ERR_INVALID, "device_props: props is NULL");
    if (index >= vkp_ctx.n_phys)
        return pk_fail(GFP_ERR_NOT_FOUND, "device_props: vulkan device %u does not exist (%u found)",
                        (unsigned)index, (unsigned)vkp_ctx.n_phys);
    const vkp_physical *ph = &vkp_ctx.phys[index];
    gfp_device_props full;
    memset(&full, 0, sizeof full);
    full.flags = 0; /* not host-addressable; calls are serialised by the core */
    snprintf(full.name, sizeof full.name, "%s", ph->props.deviceName);
    snprintf(full.type, sizeof full.type, "vulkan");
    uint64_t mem = 0;
    for (uint32_t h = 0; h < ph->mem.memoryHeapCount; h++)
        if (ph->mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
            mem += ph->mem.memoryHeaps[h].size;
    full.memory_bytes = mem;
    full.dtypes = phys_dtypes(ph);
    full.max_rank = GFP_MAX_RANK;
    /* A descriptor covers at most maxStorageBufferRange bytes: larger tensors
     * are refused at allocation. */
    uint64_t align = ph->props.limits.minStorageBufferOffsetAlignment > 256
                         ? ph->props.limits.minStorageBufferOffsetAlignment
                         : 256;
    /* Rounded down to whole alignment units: a buffer that large is still
     * covered by one descriptor once its size is rounded up to them. */
    full.max_alloc_bytes = (uint64_t)ph->props.limits.maxStorageBufferRange & ~(align - 1);
    uint32_t v = ph->props.apiVersion;
    snprintf(full.driver, sizeof full.driver,
             "Vulkan %u.%u.%u, driver 0x%x, %u heap(s), storage range %u MiB, wg %u%s",
             VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v),
             (unsigned)ph->props.driverVersion, (unsigned)ph->mem.memoryHeapCount,
             (unsigned)(ph->props.limits.maxStorageBufferRange >> 20),
             (unsigned)ph->props.limits.maxComputeWorkGroupInvocations,
             vkp_ctx.validation ? ", validation on" : "");
    return pk_copy_props(props, &full);
}

static uint32_t pick_memory(const vkp_physical *ph, VkMemoryPropertyFlags want,
                            VkMemoryPropertyFlags avoid) {
    for (uint32_t t = 0; t < ph->mem.memoryTypeCount; t++) {
        VkMemoryPropertyFlags f = ph->mem.memoryTypes[t].propertyFlags;
        if ((f & want) == want && !(f & avoid)) return t;
    }
    return UINT32_MAX;
}

static gfp_status create_device(vkp_physical *ph, uint32_t index, vkp_device **out) {
    vkp_device *d = calloc(1, sizeof *d);
    if (!d) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "vulkan: out of host memory opening a device");
    d->phys = ph;
    d->index = index;
    d->has_f64 = ph->has_f64;
    d->has_f16 = ph->has_f16;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = ph->queue_family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkPhysicalDevice16BitStorageFeatures f16s = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        .storageBuffer16BitAccess = ph->has_f16 ? VK_TRUE : VK_FALSE};
    VkPhysicalDevice8BitStorageFeatures f8 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
        .pNext = &f16s,
        .storageBuffer8BitAccess = VK_TRUE};
    VkPhysicalDeviceShaderFloat16Int8Features fi8 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
        .pNext = &f8,
        .shaderFloat16 = ph->has_f16 ? VK_TRUE : VK_FALSE,
        .shaderInt8 = VK_TRUE};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &fi8};
    f2.features.shaderInt64 = VK_TRUE;
    f2.features.shaderFloat64 = ph->has_f64 ? VK_TRUE : VK_FALSE;
    const char *exts[2];
    uint32_t n_ext = 0;
    if (VK_API_VERSION_MINOR(ph->props.apiVersion) < 2) {
        exts[n_ext++] = VK_KHR_8BIT_STORAGE_EXTENSION_NAME;
        exts[n_ext++] = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
    }
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &f2,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci,
                              .enabledExtensionCount = n_ext,
                              .ppEnabledExtensionNames = n_ext ? exts : NULL};
    VkResult r = vk.CreateDevice(ph->pd, &dci, NULL, &d->dev);
    if (r != VK_SUCCESS) {
        free(d);
        return vkp_fail_vk(r, "vkCreateDevice");
    }
    vk.GetDeviceQueue(d->dev, ph->queue_family, 0, &d->queue);
    vkp_register_at_exit(VKP_AT_EXIT_DEVICE);

    /* Tensors: device-local memory; host-visible too where the device has it
     * (integrated GPUs, lavapipe), which saves staging copies. */
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    const VkMemoryPropertyFlags host =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    d->mem_type = pick_memory(ph, local | host, 0);
    d->tensors_mapped = d->mem_type != UINT32_MAX;
    if (!d->tensors_mapped) d->mem_type = pick_memory(ph, local, 0);
    if (d->mem_type == UINT32_MAX) d->mem_type = pick_memory(ph, 0, 0);
    d->host_type = pick_memory(ph, host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
    if (d->host_type == UINT32_MAX) d->host_type = pick_memory(ph, host, 0);
    const VkPhysicalDeviceLimits *lim = &ph->props.limits;
    d->max_range = lim->maxStorageBufferRange;
    d->align = lim->minStorageBufferOffsetAlignment > 256 ? lim->minStorageBufferOffsetAlignment
                                                          : 256;
    for (int i = 0; i < 3; i++) d->max_groups[i] = lim->maxComputeWorkGroupCount[i];
    d->loop_budget = strncmp(ph->props.deviceName, "llvmpipe", 8) == 0 ? 60000u : UINT32_MAX;
    const char *fb = secure_getenv("GRAFT_VULKAN_FFT_BLOCK");
    d->fft_block = !fb || strcmp(fb, "0") != 0;
    d->batch_limit = 256;
    const char *bl = secure_getenv("GRAFT_VULKAN_BATCH");
    if (bl && atoi(bl) > 0) d->batch_limit = (uint32_t)atoi(bl);
    gfp_status st = d->host_type == UINT32_MAX
                        ? pk_fail(GFP_ERR_DEVICE, "vulkan: %s has no host-visible coherent memory "
                                   "for staging", ph->props.deviceName)
                        : GFP_OK;
    if (st == GFP_OK) st = vkp_memory_init(d);
    if (st == GFP_OK) st = vkp_batch_init(d);
    if (st == GFP_OK) st = vkp_pipeline_init(d);
    if (st != GFP_OK) {
        vkp_device_close(d);
        return st;
    }
    ph->open = d;
    *out = d;
    return GFP_OK;
}

static gfp_status vkp_device_open(void *plugin_ctx, uint32_t index, void **device) {
    (void)plugin_ctx;
    if (!device) return pk_fail(GFP_ERR_INVALID, "device_open: device is NULL");
    *device = NULL;
    if (index >= vkp_ctx.n_phys)
        return pk_fail(GFP_ERR_NOT_FOUND, "device_open: vulkan device %u does not exist (%u found)",
                        (unsigned)index, (unsigned)vkp_ctx.n_phys);
    vkp_physical *ph = &vkp_ctx.phys[index];
    if (ph->open) {
        *device = ph->open;
        return GFP_OK;
    }
    vkp_device *d = NULL;
    gfp_status st = create_device(ph, index, &d);
    if (st == GFP_OK) *device = d;
    return st;
}

static void vkp_device_close(void *device) {
    vkp_device *d = device;
    if (!d || atomic_load(&vkp_exiting)) return; /* freed by vkp_at_exit */
    if (d->dev) {
        while (d->graphs) vkp_graph_destroy(d, d->graphs); /* the core's left over */
        vkp_batch_finish(d);
        vk.DeviceWaitIdle(d->dev);
        if (d->live_buffers > 0)
            pk_log(GFP_LOG_WARN, "vulkan: %ld buffer(s) still allocated when the device closed",
                    d->live_buffers);
        vkp_pipeline_shutdown(d);
        vkp_batch_shutdown(d);
        vkp_memory_shutdown(d);
        vk.DestroyDevice(d->dev, NULL);
    }
    if (d->phys && d->phys->open == d) d->phys->open = NULL;
    free(d);
}

/* Entry points that would call Vulkan fail once the process is exiting. */
gfp_status vkp_exiting_error(const char *what) {
    return pk_fail(GFP_ERR_DEVICE, "vulkan: %s after exit() began: the driver may be torn down "
                    "already; finish device work before exit", what);
}

static gfp_status vkp_synchronize(void *device) {
    if (!device) return pk_fail(GFP_ERR_INVALID, "synchronize: device is NULL");
    if (atomic_load(&vkp_exiting)) return vkp_exiting_error("synchronize");
    return vkp_batch_finish(device);
}

/* ------------------------------------------------------------ ops */
static gfp_status vkp_query_op(void *device, const gfp_op_query *q, uint32_t *support) {
    vkp_device *d = device;
    if (!d) return pk_fail(GFP_ERR_INVALID, "query_op: device is NULL");
    if (atomic_load(&vkp_exiting)) { /* none: the device is gone */
        if (support) *support = GFP_SUPPORT_NONE;
        return GFP_OK;
    }
    gfp_status st;
    const vkp_family *f = PK_QUERY_ROUTE(families, q, support, vkp_device_dtypes(d), &st);
    if (f) *support = f->support(d, q);
    return st;
}

const vkp_family *vkp_route(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params, gfp_status *st) {
    const pk_device_rules rules = {"vulkan", d->phys ? d->phys->props.deviceName : "vulkan",
                                   vkp_device_dtypes(d), buffer_size, NULL};
    return PK_LAUNCH_ROUTE(families, &rules, op, in, n_in, out, n_out, params, st);
}

static gfp_status vkp_launch(void *device, uint32_t op, const gfp_tensor *const *inputs,
                             uint32_t n_inputs, const gfp_tensor *const *outputs,
                             uint32_t n_outputs, const void *params) {
    vkp_device *d = device;
    if (!d) return pk_fail(GFP_ERR_INVALID, "launch: device is NULL");
    if (atomic_load(&vkp_exiting)) return vkp_exiting_error(pk_op_name(op));
    gfp_status st;
    const vkp_family *f = vkp_route(d, op, inputs, n_inputs, outputs, n_outputs, params, &st);
    return f ? f->launch(d, op, inputs, n_inputs, outputs, n_outputs, params) : st;
}

/* ------------------------------------------------------------ extension */
/* "vulkan.stats": see graft_vulkan_ext.h. */
static long ext_messages(void) { return atomic_load(&vkp_validation_count); }
static int ext_validation(void) { return vkp_ctx.validation ? 1 : 0; }
static uint64_t ext_dispatches(void *device) {
    return device ? ((vkp_device *)device)->dispatches : 0;
}
static uint64_t ext_submits(void *device) { return device ? ((vkp_device *)device)->submits : 0; }
static uint64_t ext_graph_launches(void) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < vkp_ctx.n_phys; i++)
        if (vkp_ctx.phys[i].open) n += vkp_ctx.phys[i].open->graph_launches;
    return n;
}
static uint64_t ext_blocks(void *device) {
    uint64_t n = 0;
    if (device)
        for (const vkp_block *b = ((vkp_device *)device)->blocks; b; b = b->next) n++;
    return n;
}
static void ext_matmul_mode(int mode) { vkp_matmul_mode = mode >= 0 && mode <= 3 ? mode : 0; }

static const graft_vulkan_stats_ext stats_ext = {
    .struct_size = sizeof(graft_vulkan_stats_ext),
    .validation_messages = ext_messages,
    .validation_enabled = ext_validation,
    .dispatches = ext_dispatches,
    .submits = ext_submits,
    .set_matmul_mode = ext_matmul_mode,
    .memory_blocks = ext_blocks,
    .graph_launches = ext_graph_launches,
    .fused_runs = vkp_fused_runs,
    .fused_launches = vkp_fused_launches,
};

static gfp_status vkp_query_extension(void *plugin_ctx, const char *name, void **out) {
    (void)plugin_ctx;
    if (out) *out = NULL;
    if (name && out && !strcmp(name, "vulkan.stats")) {
        *out = (void *)&stats_ext;
        return GFP_OK;
    }
    return pk_fail(GFP_ERR_NOT_FOUND, "the vulkan plugin has no extension \"%s\" (it has "
                    "\"vulkan.stats\")", name ? name : "(null)");
}

/* ------------------------------------------------------------ negotiation */
static const gfp_plugin vkp_table = {
    .struct_size = sizeof(gfp_plugin),
    .abi_major = GFP_ABI_MAJOR,
    .abi_minor = GFP_ABI_MINOR,
    .name = "vulkan",
    .version = "1.0.0",
    .init = vkp_init,
    .shutdown = vkp_shutdown,
    .device_count = vkp_device_count,
    .device_props = vkp_device_props,
    .device_open = vkp_device_open,
    .device_close = vkp_device_close,
    .buffer_alloc = vkp_buffer_alloc,
    .buffer_free = vkp_buffer_free,
    .buffer_write = vkp_buffer_write,
    .buffer_read = vkp_buffer_read,
    .buffer_copy = vkp_buffer_copy,
    .buffer_fill = vkp_buffer_fill,
    .synchronize = vkp_synchronize,
    .launch = vkp_launch,
    .query_op = vkp_query_op,
    .query_extension = vkp_query_extension,
    .graph_create = vkp_graph_create,
    .graph_launch = vkp_graph_launch,
    .graph_destroy = vkp_graph_destroy,
};

GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,
                                             const gfp_plugin **table);

GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,
                                             const gfp_plugin **table) {
    const gfp_host *host = NULL;
    gfp_status st = gfp_plugin_negotiate_common(request, table, &vkp_table, &host);
    if (st == GFP_OK) pk_host = host;
    return st;
}
