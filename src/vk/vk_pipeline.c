/* Compute pipelines from embedded SPIR-V, one per (shader, specialization, subgroup size the
 * kernel needs), made on first use and kept for the context's life; descriptor pools and sets.
 * Bindings are storage buffers (Vulkan guarantees 4 per stage, and no shader here binds more)
 * or uniform texel buffers, which count separately. */
#include "vk.h"

#include <stdlib.h>
#include <string.h>

static const vkb_pipeline *find(const vkbert_context *ctx, const vkb_kernel *k)
{
    for (uint32_t i = 0; i < ctx->pipeline_count; i++) {
        const vkb_pipeline *p = ctx->pipelines[i];
        if (p->shader == k->shader && p->spec_count == k->spec_count &&
            p->subgroup_size == k->subgroup_size &&
            !memcmp(p->spec, k->spec, k->spec_count * sizeof *k->spec))
            return p;
    }
    return NULL;
}

/* How a workgroup whose x is whole subgroups of `size` lanes is had; false where it cannot
 * be. `invocations` 0: the caller checked maxComputeWorkgroupSubgroups (vkb_subgroup_fits). */
static bool subgroup_request(const vkbert_context *ctx, uint32_t size, uint32_t invocations,
                             VkPipelineShaderStageCreateFlags *flags, uint32_t *required)
{
    const VkPhysicalDeviceSubgroupSizeControlProperties *c = &ctx->subgroup_control;
    *flags = 0, *required = 0;
    if (!size) return true;
    if (size == ctx->subgroup.subgroupSize) {
        /* VUID-VkPipelineShaderStageCreateInfo-flags-02759: full subgroups without a required
         * size need x to be a multiple of subgroupSize, which the kernel's x is. Without
         * computeFullSubgroups Vulkan promises the size only: a pipeline from SPIR-V before
         * 1.6 (ours are 1.3), made without ALLOW_VARYING_SUBGROUP_SIZE_BIT nor a required
         * size, has SubgroupSize == subgroupSize (the SubgroupSize built-in, "Built-In
         * Variables"), and Vulkan before VK_EXT_subgroup_size_control expected devices to
         * behave as if every subgroup had that size (the extension's description). A
         * workgroup of whole subgroups of it is then taken as whole subgroups, the rule
         * Vulkan 1.1 code relies on. */
        if (ctx->full_subgroups)
            *flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
        return true;
    }
    /* VkPipelineShaderStageRequiredSubgroupSizeCreateInfo's valid usage: a power of two in
     * [minSubgroupSize, maxSubgroupSize], compute in requiredSubgroupSizeStages, at most
     * maxComputeWorkgroupSubgroups subgroups (02756); with full subgroups, x a multiple of
     * the required size (02757), which the kernel's x is. */
    bool settable =
        ctx->subgroup_size_control && ctx->full_subgroups &&
        (c->requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) && !(size & (size - 1)) &&
        size >= c->minSubgroupSize && size <= c->maxSubgroupSize &&
        (!invocations || invocations <= (uint64_t)c->maxComputeWorkgroupSubgroups * size);
    if (!settable) return false;
    *flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    *required = size;
    return true;
}

bool vkb_subgroup_fits(const vkbert_context *ctx, uint32_t size, uint32_t invocations,
                       VkSubgroupFeatureFlags operations)
{
    VkPipelineShaderStageCreateFlags flags;
    uint32_t required;
    return size && (ctx->subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
           (ctx->subgroup.supportedOperations & operations) == operations &&
           subgroup_request(ctx, size, invocations, &flags, &required);
}

static vkbert_status create_layouts(vkbert_context *ctx, vkb_pipeline *p, uint32_t push_size)
{
    VkDescriptorSetLayoutBinding bindings[4];
    for (uint32_t i = 0; i < p->binding_count; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = p->types[i],
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = p->binding_count,
        .pBindings = bindings,
    };
    VkResult result = vkCreateDescriptorSetLayout(ctx->device, &set_info, NULL, &p->set_layout);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateDescriptorSetLayout");
    VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size};
    VkPipelineLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &p->set_layout,
        .pushConstantRangeCount = push_size ? 1 : 0,
        .pPushConstantRanges = &range,
    };
    result = vkCreatePipelineLayout(ctx->device, &layout_info, NULL, &p->layout);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreatePipelineLayout");
    return VKBERT_OK;
}

static vkbert_status create_pipeline(vkbert_context *ctx, vkb_pipeline *p, const vkb_spirv *shader)
{
    VkShaderModuleCreateInfo module_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = shader->size,
        .pCode = shader->code,
    };
    VkShaderModule module;
    VkResult result = vkCreateShaderModule(ctx->device, &module_info, NULL, &module);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateShaderModule");
    VkSpecializationMapEntry entries[VKB_MAX_SPEC];
    for (uint32_t i = 0; i < p->spec_count; i++)
        entries[i] = (VkSpecializationMapEntry){i, i * 4, 4};
    VkSpecializationInfo spec = {p->spec_count, entries, p->spec_count * 4, p->spec};
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = p->required_subgroup_size,
    };
    VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .pNext = p->required_subgroup_size ? &required : NULL,
                  .flags = p->stage_flags,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = "main",
                  .pSpecializationInfo = &spec},
        .layout = p->layout,
    };
    double start = plat_now_ms();
    result =
        vkCreateComputePipelines(ctx->device, ctx->pipeline_cache, 1, &info, NULL, &p->pipeline);
    ctx->pipeline_ms += plat_now_ms() - start; /* vkbert_context_startup_ms */
    vkDestroyShaderModule(ctx->device, module, NULL);
    if (result != VK_SUCCESS)
        return vkb_fail(ctx, VKBERT_ERROR_VULKAN, "creating the %s pipeline failed: %s",
                        shader->name, vkb_result_name(result));
    return VKBERT_OK;
}

static void destroy(vkbert_context *ctx, vkb_pipeline *p)
{
    vkDestroyPipeline(ctx->device, p->pipeline, NULL);
    vkDestroyPipelineLayout(ctx->device, p->layout, NULL);
    vkDestroyDescriptorSetLayout(ctx->device, p->set_layout, NULL);
    memset(p, 0, sizeof *p);
}

static vkbert_status get(vkbert_context *ctx, const vkb_kernel *k, const vkb_pipeline **out)
{
    /* An op asked for axes no compiled module answers to (cmake/shader_variants.cmake). */
    if (!k->shader)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "no shader variant for this op");
    *out = find(ctx, k);
    if (*out) return VKBERT_OK;
    if (k->view_count > 4 || k->spec_count > VKB_MAX_SPEC || k->push_size > 128)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "bad pipeline description for %s",
                        k->shader->name);
    vkbert_status status =
        vkb_check_layout(ctx, k->shader->name, k->types, k->view_count, k->push_size);
    if (status) return status;
    /* Dispatches hold pointers to their pipeline: each is allocated alone and never moves. */
    vkb_pipeline **table =
        vkb_table_room(ctx->pipelines, &ctx->pipeline_capacity, ctx->pipeline_count, sizeof *table);
    if (table) ctx->pipelines = table;
    vkb_pipeline *p = table ? calloc(1, sizeof *p) : NULL;
    if (!p)
        return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory for pipeline %u (%s)",
                        ctx->pipeline_count, k->shader->name);
    if (!subgroup_request(ctx, k->subgroup_size, 0, &p->stage_flags, &p->required_subgroup_size))
        return free(p), vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                                 "%s needs subgroups of %u lanes; the device has %u%s",
                                 k->shader->name, k->subgroup_size, ctx->subgroup.subgroupSize,
                                 ctx->subgroup_size_control ? " and cannot require that size"
                                                            : " and no subgroup size control");
    p->shader = k->shader;
    p->spec_count = k->spec_count;
    memcpy(p->spec, k->spec, k->spec_count * sizeof *k->spec);
    p->subgroup_size = k->subgroup_size;
    p->binding_count = k->view_count;
    for (uint32_t i = 0; i < k->view_count; i++)
        p->types[i] = k->types ? k->types[i] : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    status = create_layouts(ctx, p, k->push_size);
    if (!status) status = create_pipeline(ctx, p, k->shader);
    if (status) {
        destroy(ctx, p);
        free(p);
        return status;
    }
    ctx->pipelines[ctx->pipeline_count++] = p;
    *out = p;
    return VKBERT_OK;
}

vkbert_status vkb_pipeline_get(vkbert_context *ctx, const vkb_spirv *shader,
                               const VkDescriptorType *types, uint32_t binding_count,
                               uint32_t push_size, const uint32_t *spec, uint32_t spec_count,
                               const vkb_pipeline **out)
{
    vkb_kernel k = {.shader = shader,
                    .types = types,
                    .spec = spec,
                    .spec_count = spec_count,
                    .view_count = binding_count,
                    .push_size = push_size};
    return get(ctx, &k, out);
}

void vkb_pipelines_release(vkbert_context *ctx)
{
    for (uint32_t i = 0; i < ctx->pipeline_count; i++) {
        destroy(ctx, ctx->pipelines[i]);
        free(ctx->pipelines[i]);
    }
    free(ctx->pipelines);
    ctx->pipelines = NULL;
    ctx->pipeline_count = ctx->pipeline_capacity = 0;
}

vkbert_status vkb_descriptor_pool(vkbert_context *ctx, uint32_t sets, VkDescriptorPool *out)
{
    VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4 * sets},
                                     {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, 4 * sets}};
    VkDescriptorPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = sets,
        .poolSizeCount = 2,
        .pPoolSizes = sizes,
    };
    VkResult result = vkCreateDescriptorPool(ctx->device, &info, NULL, out);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateDescriptorPool");
    return VKBERT_OK;
}

static vkbert_status texel_view(vkbert_context *ctx, vkb_view view, VkBufferView *out)
{
    VkFormat format = view.format ? view.format : VK_FORMAT_R32G32B32A32_SFLOAT;
    uint64_t texel_bytes = format == VK_FORMAT_R16G16B16A16_SFLOAT ? 8 : 16;
    uint64_t texels = view.size / texel_bytes;
    if (texels > ctx->props.limits.maxTexelBufferElements)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "a texel buffer of %llu vec4 exceeds maxTexelBufferElements %u",
                        (unsigned long long)texels, ctx->props.limits.maxTexelBufferElements);
    VkBufferViewCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
        .buffer = view.buffer,
        .format = format,
        .offset = view.offset,
        .range = texels * texel_bytes,
    };
    VkResult result = vkCreateBufferView(ctx->device, &info, NULL, out);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateBufferView");
    return VKBERT_OK;
}

void vkb_dispatch_release(vkbert_context *ctx, vkb_dispatch *d)
{
    for (int i = 0; i < 4; i++) {
        vkDestroyBufferView(ctx->device, d->texel_views[i], NULL);
        d->texel_views[i] = VK_NULL_HANDLE;
    }
}

vkbert_status vkb_descriptor_set(vkbert_context *ctx, VkDescriptorPool pool, const vkb_view *views,
                                 vkb_dispatch *d)
{
    const vkb_pipeline *p = d->pipeline;
    VkDescriptorSetAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &p->set_layout,
    };
    VkResult result = vkAllocateDescriptorSets(ctx->device, &alloc, &d->set);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkAllocateDescriptorSets");
    VkDescriptorBufferInfo infos[4];
    VkWriteDescriptorSet writes[4];
    for (uint32_t i = 0; i < p->binding_count; i++) {
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = d->set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = p->types[i],
        };
        if (p->types[i] == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER) {
            vkbert_status status = texel_view(ctx, views[i], &d->texel_views[i]);
            if (status) return status;
            writes[i].pTexelBufferView = &d->texel_views[i];
        } else {
            /* The last guard against a binding over the limit, lowered ones included. */
            const char *what = d->name ? d->name : "a binding";
            vkbert_status status = vkb_check_range(ctx, views[i].size, what);
            if (status) return status;
            infos[i] = (VkDescriptorBufferInfo){views[i].buffer, views[i].offset, views[i].size};
            writes[i].pBufferInfo = &infos[i];
        }
    }
    vkUpdateDescriptorSets(ctx->device, p->binding_count, writes, 0, NULL);
    return VKBERT_OK;
}

vkbert_status vkb_dispatch_prepare(vkbert_context *ctx, VkDescriptorPool pool, const vkb_kernel *k,
                                   vkb_dispatch *out)
{
    vkbert_status status = get(ctx, k, &out->pipeline);
    if (status) return status;
    status = vkb_descriptor_set(ctx, pool, k->views, out);
    if (status) return status;
    memcpy(out->push, k->push, k->push_size);
    out->push_size = k->push_size;
    if (!out->name) out->name = k->shader->name;
    return VKBERT_OK;
}
