/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_instance.c — the Vulkan instance, validation messages, physical devices.
 *
 * The instance is created at init (enumerating drivers is allowed there),
 * devices lazily at device_open. GRAFT_VULKAN_VALIDATION=1 enables the
 * Khronos validation layer; whenever VK_EXT_debug_utils is present (the layer
 * also comes through VK_INSTANCE_LAYERS) every warning or error message is
 * logged at ERROR and counted, and the count is exposed through the
 * "vulkan.validation_messages" extension so tests can demand zero. */
#define _GNU_SOURCE /* secure_getenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <link.h>

/* Sanitizer builds only. lavapipe (Mesa 22.3.6-1+deb12u2) keeps a small block
 * in a global for the life of the process, and the Vulkan loader unloads the
 * driver when the instance is destroyed at exit; LeakSanitizer then reports
 * that block as a leak from an unknown module in every process that loads
 * this plugin. Pinning the loaded drivers (RTLD_NODELETE) keeps them mapped,
 * so their globals stay visible and any real leak is still reported. */
static int pin_driver(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    const char *name = info->dlpi_name;
    if (name && strstr(name, "libvulkan_")) {
        void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
        (void)h; /* the extra reference is the point: never closed */
    }
    return 0;
}
#endif

vkp_plugin vkp_ctx;
atomic_long vkp_validation_count;

static const char *VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation";

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user) {
    (void)user;
    if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
    const char *text = data && data->pMessage ? data->pMessage : "(no message)";
    if (!(types & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT))) {
        /* The loader's own notes (no driver found, a bad manifest). */
        pk_log(GFP_LOG_WARN, "vulkan: loader: %s", text);
        return VK_FALSE;
    }
    atomic_fetch_add(&vkp_validation_count, 1);
    pk_log(GFP_LOG_ERROR, "vulkan: validation: %s", text);
    return VK_FALSE; /* never abort the call that triggered it */
}

static bool has_instance_extension(const char *name) {
    uint32_t n = 0;
    if (vk.EnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkExtensionProperties *p = calloc(n, sizeof *p);
    bool found = false;
    if (p && vk.EnumerateInstanceExtensionProperties(NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = !strcmp(p[i].extensionName, name);
    free(p);
    return found;
}

static bool has_layer(const char *name) {
    uint32_t n = 0;
    if (!vk.EnumerateInstanceLayerProperties ||
        vk.EnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkLayerProperties *p = calloc(n, sizeof *p);
    bool found = false;
    if (p && vk.EnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = !strcmp(p[i].layerName, name);
    free(p);
    return found;
}

static bool device_has_extension(VkPhysicalDevice pd, const char *name) {
    uint32_t n = 0;
    if (vk.EnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkExtensionProperties *p = calloc(n, sizeof *p);
    bool found = false;
    if (p && vk.EnumerateDeviceExtensionProperties(pd, NULL, &n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = !strcmp(p[i].extensionName, name);
    free(p);
    return found;
}

/* Fills what graft needs to know of one physical device. */
static void describe(vkp_physical *ph) {
    vk.GetPhysicalDeviceProperties(ph->pd, &ph->props);
    vk.GetPhysicalDeviceMemoryProperties(ph->pd, &ph->mem);
    uint32_t nq = 0;
    vk.GetPhysicalDeviceQueueFamilyProperties(ph->pd, &nq, NULL);
    VkQueueFamilyProperties qf[32];
    if (nq > 32) nq = 32;
    vk.GetPhysicalDeviceQueueFamilyProperties(ph->pd, &nq, qf);
    ph->queue_family = UINT32_MAX;
    /* Prefer a compute-only family (an async compute queue), else any. */
    for (uint32_t i = 0; i < nq; i++)
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
            ph->queue_family = i;
    for (uint32_t i = 0; i < nq && ph->queue_family == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) ph->queue_family = i;

    VkPhysicalDevice16BitStorageFeatures f16s = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDevice8BitStorageFeatures f8 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES, .pNext = &f16s};
    VkPhysicalDeviceShaderFloat16Int8Features fi8 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .pNext = &f8};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &fi8};
    bool ext8 = VK_API_VERSION_MINOR(ph->props.apiVersion) >= 2 ||
                (device_has_extension(ph->pd, VK_KHR_8BIT_STORAGE_EXTENSION_NAME) &&
                 device_has_extension(ph->pd, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME));
    if (vk.GetPhysicalDeviceFeatures2 && ext8) vk.GetPhysicalDeviceFeatures2(ph->pd, &f2);
    ph->has_f64 = f2.features.shaderFloat64;
    /* GRAFT_VULKAN_NO_F64=1: as on a device without shaderFloat64 (no f64,
     * no c128, c64 computed in float), for tests. */
    const char *no_f64 = secure_getenv("GRAFT_VULKAN_NO_F64");
    if (no_f64 && no_f64[0] && strcmp(no_f64, "0") != 0) ph->has_f64 = false;
    /* 16-bit storage is core in Vulkan 1.1 (the feature may still be off). */
    ph->has_f16 = ext8 && fi8.shaderFloat16 && f16s.storageBuffer16BitAccess;
    const char *no_f16 = secure_getenv("GRAFT_VULKAN_NO_F16");
    if (no_f16 && no_f16[0] && strcmp(no_f16, "0") != 0) ph->has_f16 = false;
    /* The FFT shaders stream the whole array through memory once per
     * radix-2 pass: bandwidth a GPU has, but on a CPU-type device
     * (lavapipe) a 1M-point transform took 1.38 s against 19.8 ms on the
     * fallback device (docs/benchmarks.md). There the FFT is left to the
     * fallback device unless GRAFT_VULKAN_FFT=1 (the tests set it);
     * GRAFT_VULKAN_FFT=0 turns it off anywhere. */
    ph->has_fft = ph->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    const char *fft = secure_getenv("GRAFT_VULKAN_FFT");
    if (fft && fft[0]) ph->has_fft = strcmp(fft, "0") != 0;
    VkPhysicalDeviceSubgroupProperties sg = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sg};
    if (vk.GetPhysicalDeviceProperties2 && VK_API_VERSION_MINOR(ph->props.apiVersion) >= 1)
        vk.GetPhysicalDeviceProperties2(ph->pd, &p2);
    ph->subgroup_size = sg.subgroupSize;
    ph->has_subgroups = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                        (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                        sg.subgroupSize >= 1;
    const char *no_sg = secure_getenv("GRAFT_VULKAN_NO_SUBGROUPS");
    if (no_sg && no_sg[0] && strcmp(no_sg, "0") != 0) ph->has_subgroups = false;
    char *m = ph->missing;
    size_t len = sizeof ph->missing, used = 0;
    m[0] = '\0';
#define MISSING(cond, what)                                                        \
    if (!(cond) && used < len)                                                     \
        used += (size_t)snprintf(m + used, len - used, "%s%s", used ? ", " : "", what);
    MISSING(ph->queue_family != UINT32_MAX, "a compute queue")
    MISSING(f2.features.shaderInt64, "shaderInt64")
    MISSING(fi8.shaderInt8, "shaderInt8")
    MISSING(f8.storageBuffer8BitAccess, "storageBuffer8BitAccess")
#undef MISSING
    ph->usable = m[0] == '\0';
}

void vkp_instance_init(void) {
    vkp_plugin *p = &vkp_ctx;
    memset(p, 0, sizeof *p);
    atomic_store(&vkp_validation_count, 0);
    if (!vkp_loader_open(p->reason, sizeof p->reason)) return;
    p->loader_open = true;

    uint32_t api = VK_API_VERSION_1_0;
    if (vk.EnumerateInstanceVersion) vk.EnumerateInstanceVersion(&api);
    if (api < VK_API_VERSION_1_1) {
        snprintf(p->reason, sizeof p->reason,
                 "the Vulkan loader offers version %u.%u; graft needs Vulkan 1.1",
                 VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
        return;
    }
    const char *want = secure_getenv("GRAFT_VULKAN_VALIDATION");
    bool validation = want && want[0] && strcmp(want, "0") != 0;
    if (validation && !has_layer(VALIDATION_LAYER)) {
        pk_log(GFP_LOG_WARN,
                "vulkan: GRAFT_VULKAN_VALIDATION is set but %s is not installed "
                "(Debian: vulkan-validationlayers); running without it",
                VALIDATION_LAYER);
        validation = false;
    }
    bool debug_utils = has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);

    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "graft",
                             .pEngineName = "graft",
                             .apiVersion = api >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2
                                                                     : VK_API_VERSION_1_1};
    const char *exts[1] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_message};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               /* also catches messages of instance creation itself */
                               .pNext = debug_utils ? &mci : NULL,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = validation ? 1 : 0,
                               .ppEnabledLayerNames = validation ? &VALIDATION_LAYER : NULL,
                               .enabledExtensionCount = debug_utils ? 1 : 0,
                               .ppEnabledExtensionNames = debug_utils ? exts : NULL};
    VkResult r = vk.CreateInstance(&ci, NULL, &p->instance);
    if (r != VK_SUCCESS) {
        snprintf(p->reason, sizeof p->reason,
                 "vkCreateInstance failed with %s: no usable Vulkan driver (ICD) was found; "
                 "install one (Debian: mesa-vulkan-drivers for lavapipe) or check "
                 "VK_DRIVER_FILES / VK_ICD_FILENAMES",
                 vkp_result_name(r));
        p->instance = VK_NULL_HANDLE;
        return;
    }
    p->validation = validation;
#if defined(__SANITIZE_ADDRESS__)
    dl_iterate_phdr(pin_driver, NULL);
#endif
    vkp_loader_instance(p->instance);
    if (debug_utils && vk.CreateDebugUtilsMessengerEXT)
        vk.CreateDebugUtilsMessengerEXT(p->instance, &mci, NULL, &p->messenger);

    uint32_t n = 0;
    r = vk.EnumeratePhysicalDevices(p->instance, &n, NULL);
    VkPhysicalDevice pds[VKP_MAX_PHYS];
    if (n > VKP_MAX_PHYS) n = VKP_MAX_PHYS;
    if (r == VK_SUCCESS || r == VK_INCOMPLETE) r = vk.EnumeratePhysicalDevices(p->instance, &n, pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) n = 0;
    if (n == 0) {
        snprintf(p->reason, sizeof p->reason,
                 "the Vulkan loader found no physical device (%s); install a driver "
                 "(Debian: mesa-vulkan-drivers for lavapipe)",
                 vkp_result_name(r));
        return;
    }
    size_t used = 0;
    for (uint32_t i = 0; i < n; i++) {
        vkp_physical ph = {.pd = pds[i]};
        describe(&ph);
        if (ph.usable) {
            p->phys[p->n_phys++] = ph;
            continue;
        }
        /* Listed in the reason rather than hidden silently. */
        if (used < sizeof p->reason)
            used += (size_t)snprintf(p->reason + used, sizeof p->reason - used,
                                     "%s\"%s\" skipped: it lacks %s", used ? "; " : "",
                                     ph.props.deviceName, ph.missing);
    }
}

void vkp_instance_shutdown(void) {
    vkp_plugin *p = &vkp_ctx;
    if (p->instance) {
        if (p->messenger && vk.DestroyDebugUtilsMessengerEXT)
            vk.DestroyDebugUtilsMessengerEXT(p->instance, p->messenger, NULL);
        vk.DestroyInstance(p->instance, NULL);
    }
    p->instance = VK_NULL_HANDLE;
    p->messenger = VK_NULL_HANDLE;
    p->n_phys = 0;
    vkp_loader_close();
}
