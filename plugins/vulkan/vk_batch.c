/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_batch.c — command buffers recorded in batches.
 *
 * A ring of VKP_BATCHES batches, each with its command buffer, fence,
 * descriptor pool, params ring and staging buffer. Launches and transfers are
 * recorded into the open batch, each behind a global barrier (so every
 * command sees the results of all earlier ones: in-order semantics without
 * tracking hazards). A batch is submitted when it holds batch_limit commands,
 * runs out of descriptor sets, params or staging space, or when the host
 * needs a result; the host waits only then. Recycling a batch waits for its
 * own fence, which is long done in a steady stream. */
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

static void release_temps(vkp_device *d, vkp_batch *b) {
    for (uint32_t i = 0; i < b->n_temps; i++) vkp_hostbuf_destroy(d, &b->temps[i]);
    b->n_temps = 0;
}

gfp_status vkp_batch_init(vkp_device *d) {
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->phys->queue_family};
    VkResult r = vk.CreateCommandPool(d->dev, &pci, NULL, &d->cmd_pool);
    if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkCreateCommandPool");
    for (uint32_t i = 0; i < VKP_BATCHES; i++) {
        vkp_batch *b = &d->batches[i];
        VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                           .commandPool = d->cmd_pool,
                                           .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                           .commandBufferCount = 1};
        if ((r = vk.AllocateCommandBuffers(d->dev, &cai, &b->cb)) != VK_SUCCESS)
            return vkp_fail_vk(r, "vkAllocateCommandBuffers");
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        if ((r = vk.CreateFence(d->dev, &fci, NULL, &b->fence)) != VK_SUCCESS)
            return vkp_fail_vk(r, "vkCreateFence");
        VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                   .descriptorCount = VKP_SETS_PER_BATCH * VKP_MAX_BINDINGS};
        VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = VKP_SETS_PER_BATCH,
                                          .poolSizeCount = 1,
                                          .pPoolSizes = &ps};
        if ((r = vk.CreateDescriptorPool(d->dev, &dpi, NULL, &b->pool)) != VK_SUCCESS)
            return vkp_fail_vk(r, "vkCreateDescriptorPool");
        gfp_status st = vkp_hostbuf_create(d, VKP_PARAMS_BYTES, &b->params);
        if (st == GFP_OK) st = vkp_hostbuf_create(d, VKP_STAGING_BYTES, &b->staging);
        if (st != GFP_OK) return st;
    }
    d->current = 0;
    return GFP_OK;
}

void vkp_batch_shutdown(vkp_device *d) {
    for (uint32_t i = 0; i < VKP_BATCHES; i++) {
        vkp_batch *b = &d->batches[i];
        release_temps(d, b);
        free(b->temps);
        b->temps = NULL;
        vkp_hostbuf_destroy(d, &b->params);
        vkp_hostbuf_destroy(d, &b->staging);
        if (b->pool) vk.DestroyDescriptorPool(d->dev, b->pool, NULL);
        if (b->fence) vk.DestroyFence(d->dev, b->fence, NULL);
        b->pool = VK_NULL_HANDLE;
        b->fence = VK_NULL_HANDLE;
    }
    if (d->cmd_pool) vk.DestroyCommandPool(d->dev, d->cmd_pool, NULL); /* frees the buffers */
    d->cmd_pool = VK_NULL_HANDLE;
}

/* Waits for a submitted batch and makes it reusable. */
static gfp_status retire(vkp_device *d, vkp_batch *b) {
    if (!b->submitted) return GFP_OK;
    VkResult r = vk.WaitForFences(d->dev, 1, &b->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkWaitForFences");
    vkp_register_at_exit(VKP_AT_EXIT_WAIT);
    vk.ResetFences(d->dev, 1, &b->fence);
    b->submitted = false;
    release_temps(d, b);
    return GFP_OK;
}

/* What a family may not do while a graph records or refreshes it. */
static gfp_status graph_refuses(vkp_device *d, const char *what) {
    if (d->refreshing)
        return pk_fail(GFP_ERR_INTERNAL, "vulkan: a launch %s while its graph's parameters were "
                       "refreshed", what);
    return pk_fail(GFP_ERR_UNSUPPORTED, "vulkan: a launch %s while recorded into a graph",
                   what);
}

gfp_status vkp_batch_open(vkp_device *d, vkp_batch **out) {
    if (d->refreshing) return graph_refuses(d, "recorded a transfer");
    if (d->recording) {
        uint64_t unused;
        return vkp_graph_params(d, 0, out, &unused);
    }
    vkp_batch *b = &d->batches[d->current];
    if (!b->recording) {
        gfp_status st = retire(d, b);
        if (st != GFP_OK) return st;
        vk.ResetDescriptorPool(d->dev, b->pool, 0);
        vk.ResetCommandBuffer(b->cb, 0);
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        VkResult r = vk.BeginCommandBuffer(b->cb, &bi);
        if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkBeginCommandBuffer");
        b->recording = true;
        b->n_cmds = 0;
        b->sets_used = 0;
        b->params_used = 0;
        b->staging_used = 0;
    }
    *out = b;
    return GFP_OK;
}

void vkp_batch_barrier(vkp_batch *b) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT |
                                           VK_ACCESS_TRANSFER_WRITE_BIT};
    VkPipelineStageFlags stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vk.CmdPipelineBarrier(b->cb, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

gfp_status vkp_batch_submit(vkp_device *d) {
    if (d->recording || d->refreshing) return graph_refuses(d, "waited for the device");
    vkp_batch *b = &d->batches[d->current];
    if (!b->recording) return GFP_OK;
    /* Device writes become visible to host reads after the fence. */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vk.CmdPipelineBarrier(b->cb,
                          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    VkResult r = vk.EndCommandBuffer(b->cb);
    b->recording = false;
    if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkEndCommandBuffer");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &b->cb};
    r = vk.QueueSubmit(d->queue, 1, &si, b->fence);
    if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkQueueSubmit");
    vkp_register_at_exit(VKP_AT_EXIT_SUBMIT);
    b->submitted = true;
    d->submits++;
    d->current = (d->current + 1) % VKP_BATCHES;
    return GFP_OK;
}

gfp_status vkp_batch_recorded(vkp_device *d) {
    if (d->recording) return GFP_OK; /* a graph's segment is submitted by graph_launch */
    vkp_batch *b = &d->batches[d->current];
    b->n_cmds++;
    if (b->n_cmds >= d->batch_limit) return vkp_batch_submit(d);
    return GFP_OK;
}

gfp_status vkp_batch_finish(vkp_device *d) {
    gfp_status st = vkp_batch_submit(d);
    if (d->recording || d->refreshing) return st;
    /* Oldest first: current is the next to reuse, so the oldest. */
    for (uint32_t k = 0; k < VKP_BATCHES; k++) {
        gfp_status s2 = retire(d, &d->batches[(d->current + k) % VKP_BATCHES]);
        if (st == GFP_OK) st = s2;
    }
    gfp_status s3 = vkp_graph_wait(d); /* graphs' runs, submitted in between */
    return st == GFP_OK ? s3 : st;
}

bool vkp_batch_idle(vkp_device *d) {
    for (uint32_t i = 0; i < VKP_BATCHES; i++) {
        vkp_batch *b = &d->batches[i];
        if (b->recording && b->n_cmds > 0) return false;
        if (b->submitted) {
            if (vk.GetFenceStatus(d->dev, b->fence) != VK_SUCCESS) return false;
            retire(d, b);
        }
    }
    return vkp_graph_idle(d);
}

gfp_status vkp_batch_params(vkp_device *d, uint32_t bytes, vkp_batch **out, uint64_t *offset) {
    if (d->recording) return vkp_graph_params(d, bytes ? bytes : 4, out, offset);
    uint64_t need = (bytes + d->align - 1) & ~(d->align - 1);
    for (int attempt = 0; attempt < 2; attempt++) {
        vkp_batch *b = NULL;
        gfp_status st = vkp_batch_open(d, &b);
        if (st != GFP_OK) return st;
        if (b->params_used + need <= b->params.size && b->sets_used < VKP_SETS_PER_BATCH) {
            *offset = b->params_used;
            b->params_used += need;
            *out = b;
            return GFP_OK;
        }
        if ((st = vkp_batch_submit(d)) != GFP_OK) return st;
    }
    return pk_fail(GFP_ERR_INTERNAL, "vulkan: %u bytes of parameters do not fit a batch",
                    (unsigned)bytes);
}

gfp_status vkp_batch_staging(vkp_device *d, uint64_t bytes, vkp_batch **out, VkBuffer *buffer,
                             uint64_t *offset, void **map) {
    gfp_status st;
    vkp_batch *b;
    if (d->recording || d->refreshing) return graph_refuses(d, "staged host data");
    if (bytes > VKP_STAGING_BYTES / 2) {
        /* Large: a buffer of its own, freed when the batch completes. */
        if ((st = vkp_batch_open(d, &b)) != GFP_OK) return st;
        if (b->n_temps == b->cap_temps) {
            uint32_t cap = b->cap_temps ? 2 * b->cap_temps : 4;
            vkp_hostbuf *t = realloc(b->temps, cap * sizeof *t);
            if (!t) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
            b->temps = t;
            b->cap_temps = cap;
        }
        vkp_hostbuf *hb = &b->temps[b->n_temps];
        if ((st = vkp_hostbuf_create(d, bytes, hb)) != GFP_OK) return st;
        b->n_temps++;
        *out = b;
        *buffer = hb->buffer;
        *offset = 0;
        *map = hb->map;
        return GFP_OK;
    }
    uint64_t need = (bytes + 15) & ~(uint64_t)15;
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((st = vkp_batch_open(d, &b)) != GFP_OK) return st;
        if (b->staging_used + need <= b->staging.size) {
            *offset = b->staging_used;
            *map = (char *)b->staging.map + b->staging_used;
            *buffer = b->staging.buffer;
            b->staging_used += need;
            *out = b;
            return GFP_OK;
        }
        if ((st = vkp_batch_submit(d)) != GFP_OK) return st;
    }
    return pk_fail(GFP_ERR_INTERNAL, "vulkan: staging space exhausted");
}
