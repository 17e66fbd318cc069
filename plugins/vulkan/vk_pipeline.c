/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_pipeline.c — shaders, layouts, pipelines, and recording one dispatch.
 *
 * The SPIR-V of every shader is compiled at build time (glslc) and embedded
 * (vk_shaders.c, generated), in builds of the same source: with f64
 * paths for devices that have shaderFloat64, and without; the shaders that
 * have f16 paths also with them, for devices with 16-bit storage. Pipelines are
 * created on first use per (shader, specialisation constants) and cached,
 * with a VkPipelineCache behind them. Descriptor-set layouts are shared by
 * all shaders with the same number of bindings (binding 0 = params). */
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

gfp_status vkp_pipeline_init(vkp_device *d) {
    d->pipes = calloc(VKP_PIPE_SLOTS, sizeof *d->pipes);
    if (!d->pipes) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    VkPipelineCacheCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    VkResult r = vk.CreatePipelineCache(d->dev, &pci, NULL, &d->cache);
    if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkCreatePipelineCache");
    for (uint32_t n = 1; n <= VKP_MAX_BINDINGS; n++) {
        VkDescriptorSetLayoutBinding b[VKP_MAX_BINDINGS];
        for (uint32_t i = 0; i < n; i++)
            b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                  .descriptorCount = 1,
                                                  .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
        VkDescriptorSetLayoutCreateInfo lci = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
            .bindingCount = n,
            .pBindings = b};
        if ((r = vk.CreateDescriptorSetLayout(d->dev, &lci, NULL, &d->set_layouts[n])) != VK_SUCCESS)
            return vkp_fail_vk(r, "vkCreateDescriptorSetLayout");
        VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                           .setLayoutCount = 1,
                                           .pSetLayouts = &d->set_layouts[n]};
        if ((r = vk.CreatePipelineLayout(d->dev, &plci, NULL, &d->pipe_layouts[n])) != VK_SUCCESS)
            return vkp_fail_vk(r, "vkCreatePipelineLayout");
    }
    return GFP_OK;
}

void vkp_pipeline_shutdown(vkp_device *d) {
    if (d->pipes)
        for (uint32_t i = 0; i < VKP_PIPE_SLOTS; i++)
            if (d->pipes[i].used) vk.DestroyPipeline(d->dev, d->pipes[i].pipeline, NULL);
    free(d->pipes);
    d->pipes = NULL;
    for (uint32_t s = 0; s < VKP_SHADER_COUNT; s++)
        if (d->modules[s]) vk.DestroyShaderModule(d->dev, d->modules[s], NULL);
    for (uint32_t n = 1; n <= VKP_MAX_BINDINGS; n++) {
        if (d->pipe_layouts[n]) vk.DestroyPipelineLayout(d->dev, d->pipe_layouts[n], NULL);
        if (d->set_layouts[n]) vk.DestroyDescriptorSetLayout(d->dev, d->set_layouts[n], NULL);
    }
    if (d->cache) vk.DestroyPipelineCache(d->dev, d->cache, NULL);
}

static gfp_status module_of(vkp_device *d, uint32_t shader, VkShaderModule *out) {
    if (d->modules[shader]) {
        *out = d->modules[shader];
        return GFP_OK;
    }
    /* The f16 build where the shader has one and the device stores f16. */
    int variant = d->has_f64 ? 1 : 0;
    if (d->has_f16 && vkp_spirv[variant + 2][shader].size) variant += 2;
    const vkp_spirv_blob *blob = &vkp_spirv[variant][shader];
    if (!blob->size)
        return pk_fail(GFP_ERR_UNSUPPORTED,
                        "vulkan: shader %s needs 64-bit floats, which %s does not have",
                        vkp_shader_names[shader], d->phys->props.deviceName);
    VkShaderModuleCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = blob->size,
                                   .pCode = blob->words};
    VkResult r = vk.CreateShaderModule(d->dev, &ci, NULL, &d->modules[shader]);
    if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkCreateShaderModule");
    *out = d->modules[shader];
    return GFP_OK;
}

static gfp_status pipeline_of(vkp_device *d, const vkp_dispatch *dp, VkPipeline *out) {
    uint64_t h = dp->shader * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < VKP_MAX_SPEC; i++) h = (h ^ dp->spec[i]) * 0x100000001B3ull;
    uint32_t slot = (uint32_t)(h >> 32) % VKP_PIPE_SLOTS;
    vkp_pipe_entry *e = NULL;
    for (uint32_t k = 0; k < VKP_PIPE_SLOTS; k++) {
        vkp_pipe_entry *c = &d->pipes[(slot + k) % VKP_PIPE_SLOTS];
        if (!c->used) {
            e = c;
            break;
        }
        if (c->shader == dp->shader && !memcmp(c->spec, dp->spec, sizeof c->spec)) {
            *out = c->pipeline;
            return GFP_OK;
        }
    }
    if (!e)
        return pk_fail(GFP_ERR_INTERNAL, "vulkan: more than %d pipelines", VKP_PIPE_SLOTS);
    VkShaderModule module = VK_NULL_HANDLE;
    gfp_status st = module_of(d, dp->shader, &module);
    if (st != GFP_OK) return st;
    VkSpecializationMapEntry map[VKP_MAX_SPEC];
    for (uint32_t i = 0; i < VKP_MAX_SPEC; i++)
        map[i] = (VkSpecializationMapEntry){.constantID = i,
                                            .offset = i * (uint32_t)sizeof(uint32_t),
                                            .size = sizeof(uint32_t)};
    VkSpecializationInfo spec = {.mapEntryCount = dp->n_spec,
                                 .pMapEntries = map,
                                 .dataSize = dp->n_spec * sizeof(uint32_t),
                                 .pData = dp->spec};
    uint32_t nb = vkp_shader_bindings[dp->shader];
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = "main",
                  .pSpecializationInfo = &spec},
        .layout = d->pipe_layouts[nb]};
    VkPipeline p;
    VkResult r = vk.CreateComputePipelines(d->dev, d->cache, 1, &ci, NULL, &p);
    if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkCreateComputePipelines");
    e->used = true;
    e->shader = dp->shader;
    memcpy(e->spec, dp->spec, sizeof e->spec);
    e->pipeline = p;
    *out = p;
    return GFP_OK;
}

uint32_t vkp_groups(const vkp_device *d, uint64_t n, uint32_t per_group) {
    uint64_t g = (n + per_group - 1) / per_group;
    if (g > d->max_groups[0]) g = d->max_groups[0];
    if (g > 65535) g = 65535;
    return g ? (uint32_t)g : 1;
}

uint32_t vkp_pick_wg(const vkp_device *d, uint64_t iterations, uint32_t least, uint32_t most) {
    static const uint32_t sizes[] = {64, 256, 1024};
    uint32_t max_inv = d->phys->props.limits.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; i++) {
        uint32_t wg = sizes[i];
        if (wg < least || wg > most || wg > max_inv || wg > d->phys->props.limits.maxComputeWorkGroupSize[0])
            continue;
        if ((iterations + wg - 1) / wg + 64 <= d->loop_budget) return wg;
    }
    return 0;
}

gfp_status vkp_dispatch_run(vkp_device *d, const vkp_dispatch *dp) {
    if (dp->shader >= VKP_SHADER_COUNT)
        return pk_fail(GFP_ERR_INTERNAL, "vulkan: no shader %u", (unsigned)dp->shader);
    uint32_t nb = vkp_shader_bindings[dp->shader];
    if (dp->n_tensors + 1 != nb || nb > VKP_MAX_BINDINGS)
        return pk_fail(GFP_ERR_INTERNAL, "vulkan: shader %s takes %u bindings, given %u",
                        vkp_shader_names[dp->shader], (unsigned)nb, (unsigned)dp->n_tensors + 1);
    /* An f16 tensor given to a shader without f16 paths would be skipped
     * silently by the shader: refuse (a family declaring f16 by mistake). */
    for (uint32_t i = 0; i < dp->n_tensors; i++)
        if (dp->tensors[i] && dp->tensors[i]->dtype == GFP_F16 &&
            !vkp_spirv[(d->has_f64 ? 1 : 0) + 2][dp->shader].size)
            return pk_fail(GFP_ERR_INTERNAL, "vulkan: shader %s has no f16 build",
                            vkp_shader_names[dp->shader]);
    if (d->refreshing) return vkp_graph_refresh(d, dp); /* the params words only */
    VkPipeline pipeline = VK_NULL_HANDLE;
    gfp_status st = pipeline_of(d, dp, &pipeline);
    if (st != GFP_OK) return st;
    uint32_t bytes = dp->n_params ? dp->n_params * 4 : 4;
    vkp_batch *b;
    uint64_t poff;
    if ((st = vkp_batch_params(d, bytes, &b, &poff)) != GFP_OK) return st;
    if (dp->n_params) memcpy((char *)b->params.map + poff, dp->params, dp->n_params * 4u);
    else memset((char *)b->params.map + poff, 0, 4);

    VkDescriptorSet set;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = b->pool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &d->set_layouts[nb]};
    VkResult r = vk.AllocateDescriptorSets(d->dev, &ai, &set);
    if (r != VK_SUCCESS) return vkp_fail_vk(r, "vkAllocateDescriptorSets");
    b->sets_used++;
    VkDescriptorBufferInfo info[VKP_MAX_BINDINGS];
    VkWriteDescriptorSet w[VKP_MAX_BINDINGS];
    info[0] = (VkDescriptorBufferInfo){.buffer = b->params.buffer, .offset = poff, .range = bytes};
    VkBuffer fallback = b->params.buffer;
    for (uint32_t i = 0; i < dp->n_tensors; i++)
        if (dp->tensors[i] && dp->tensors[i]->buffer) {
            fallback = ((const vkp_buf *)dp->tensors[i]->buffer)->block->buffer;
            break;
        }
    for (uint32_t i = 0; i < dp->n_tensors; i++) {
        const gfp_tensor *t = dp->tensors[i];
        VkBuffer buf = t && t->buffer ? ((const vkp_buf *)t->buffer)->block->buffer : fallback;
        info[i + 1] = (VkDescriptorBufferInfo){.buffer = buf, .offset = 0, .range = VK_WHOLE_SIZE};
    }
    for (uint32_t i = 0; i < nb; i++)
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set,
                                      .dstBinding = i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &info[i]};
    vk.UpdateDescriptorSets(d->dev, nb, w, 0, NULL);
    vkp_batch_barrier(b);
    vk.CmdBindPipeline(b->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vk.CmdBindDescriptorSets(b->cb, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipe_layouts[nb], 0, 1,
                             &set, 0, NULL);
    vk.CmdDispatch(b->cb, dp->groups[0] ? dp->groups[0] : 1, dp->groups[1] ? dp->groups[1] : 1,
                   dp->groups[2] ? dp->groups[2] : 1);
    if (d->recording) return vkp_graph_dispatched(d, dp, poff);
    d->dispatches++;
    return vkp_batch_recorded(d);
}
