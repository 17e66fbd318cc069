/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_loader.c — the Vulkan loader, opened at run time.
 *
 * Nothing of Vulkan is linked: a machine without libvulkan.so.1 still loads
 * the plugin, which then reports zero devices and says what to install. */
#define _GNU_SOURCE /* dlopen flags */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

vkp_fns vk;
static void *loader_lib;

bool vkp_loader_open(char *reason, size_t len) {
    if (loader_lib) return true;
    static const char *const names[] = {"libvulkan.so.1", "libvulkan.so"};
    const char *err;
    loader_lib = pk_dlopen_first(names, sizeof names / sizeof names[0], &err);
    if (!loader_lib) {
        snprintf(reason, len,
                 "the Vulkan loader libvulkan.so.1 could not be opened (%s); install it "
                 "(Debian: libvulkan1) and a driver (mesa-vulkan-drivers)",
                 err);
        return false;
    }
    /* dlsym returns void *; the ABI makes function pointers of the same size. */
    void *sym = dlsym(loader_lib, "vkGetInstanceProcAddr");
    memcpy(&vk.GetInstanceProcAddr, &sym, sizeof sym);
    if (!vk.GetInstanceProcAddr) {
        snprintf(reason, len, "libvulkan.so.1 has no vkGetInstanceProcAddr: not a Vulkan loader");
        dlclose(loader_lib);
        loader_lib = NULL;
        return false;
    }
#define VKP_LOAD_GLOBAL(name) vk.name = (PFN_vk##name)vk.GetInstanceProcAddr(NULL, "vk" #name);
    VKP_GLOBAL_FNS(VKP_LOAD_GLOBAL)
#undef VKP_LOAD_GLOBAL
    if (!vk.CreateInstance || !vk.EnumerateInstanceExtensionProperties) {
        snprintf(reason, len, "the Vulkan loader does not provide vkCreateInstance");
        return false;
    }
    return true;
}

void vkp_loader_instance(VkInstance instance) {
#define VKP_LOAD_INSTANCE(name) \
    vk.name = (PFN_vk##name)vk.GetInstanceProcAddr(instance, "vk" #name);
    VKP_INSTANCE_FNS(VKP_LOAD_INSTANCE)
#undef VKP_LOAD_INSTANCE
}

void vkp_loader_close(void) {
    if (loader_lib) dlclose(loader_lib);
    loader_lib = NULL;
    memset(&vk, 0, sizeof vk);
}

const char *vkp_result_name(VkResult r) {
    switch (r) {
#define R(x) \
    case x: return #x;
        R(VK_SUCCESS)
        R(VK_NOT_READY)
        R(VK_TIMEOUT)
        R(VK_INCOMPLETE)
        R(VK_ERROR_OUT_OF_HOST_MEMORY)
        R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        R(VK_ERROR_INITIALIZATION_FAILED)
        R(VK_ERROR_DEVICE_LOST)
        R(VK_ERROR_MEMORY_MAP_FAILED)
        R(VK_ERROR_LAYER_NOT_PRESENT)
        R(VK_ERROR_EXTENSION_NOT_PRESENT)
        R(VK_ERROR_FEATURE_NOT_PRESENT)
        R(VK_ERROR_INCOMPATIBLE_DRIVER)
        R(VK_ERROR_TOO_MANY_OBJECTS)
        R(VK_ERROR_FORMAT_NOT_SUPPORTED)
        R(VK_ERROR_FRAGMENTED_POOL)
        R(VK_ERROR_OUT_OF_POOL_MEMORY)
        R(VK_ERROR_INVALID_SHADER_NV)
#undef R
    default: return "VK_ERROR_(unknown)";
    }
}
