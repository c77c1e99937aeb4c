/* A context on the caller's instance, device and queue: vkbert uses the optional features the
 * caller's VkDeviceCreateInfo enabled, makes its own objects on the device, and destroys
 * nothing of the caller's. */
#include "vk.h"

#include "vkbert_vulkan.h"

#include <stdlib.h>
#include <string.h>

/* The optional features the caller enabled, from its VkDeviceCreateInfo. */
typedef struct enabled_features {
    bool storage16, float16, size_control, full_subgroups, size_control_extension;
} enabled_features;

static void read_chain(const VkDeviceCreateInfo *info, enabled_features *f)
{
    for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES) {
            const VkPhysicalDeviceVulkan11Features *v11 = (const void *)s;
            f->storage16 |= v11->storageBuffer16BitAccess != 0;
        } else if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES) {
            const VkPhysicalDevice16BitStorageFeatures *s16 = (const void *)s;
            f->storage16 |= s16->storageBuffer16BitAccess != 0;
        } else if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
            const VkPhysicalDeviceVulkan12Features *v12 = (const void *)s;
            f->float16 |= v12->shaderFloat16 != 0;
        } else if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES) {
            const VkPhysicalDeviceShaderFloat16Int8Features *f16 = (const void *)s;
            f->float16 |= f16->shaderFloat16 != 0;
        } else if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES) {
            const VkPhysicalDeviceVulkan13Features *v13 = (const void *)s;
            f->size_control |= v13->subgroupSizeControl != 0;
            f->full_subgroups |= v13->computeFullSubgroups != 0;
        } else if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES) {
            const VkPhysicalDeviceSubgroupSizeControlFeatures *sc = (const void *)s;
            f->size_control |= sc->subgroupSizeControl != 0;
            f->full_subgroups |= sc->computeFullSubgroups != 0;
        }
    }
    for (uint32_t i = 0; i < info->enabledExtensionCount; i++)
        if (!strcmp(info->ppEnabledExtensionNames[i], VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME))
            f->size_control_extension = true;
}

/* What the device has (vkb_read_device) and the caller enabled; the limits' switches then
 * turn off more. Subgroup size control needs its extension, or Vulkan 1.3 on both sides. */
static void keep_enabled(vkbert_context *ctx, const VkDeviceCreateInfo *info)
{
    enabled_features f = {0};
    if (info) read_chain(info, &f);
    bool core13 =
        ctx->props.apiVersion >= VK_API_VERSION_1_3 && ctx->instance_version >= VK_API_VERSION_1_3;
    bool control = f.size_control_extension || core13;
    ctx->info.fp16_storage = ctx->info.fp16_storage && f.storage16;
    ctx->info.fp16_arithmetic = ctx->info.fp16_arithmetic && f.float16;
    ctx->subgroup_size_control = ctx->subgroup_size_control && f.size_control && control;
    ctx->full_subgroups = ctx->full_subgroups && f.full_subgroups && control;
    if (!ctx->subgroup_size_control && !ctx->full_subgroups)
        memset(&ctx->subgroup_control, 0, sizeof ctx->subgroup_control);
}

static vkbert_status check_handles(vkbert_context *ctx, const vkbert_vulkan_device *d)
{
    const char *missing = !d->instance          ? "instance"
                          : !d->physical_device ? "physical_device"
                          : !d->device          ? "device"
                          : !d->queue           ? "queue"
                                                : NULL;
    if (missing)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "vkbert_vulkan_device.%s is NULL",
                        missing);
    if (d->api_version < VK_API_VERSION_1_1)
        return vkb_fail(ctx, VKBERT_ERROR_NO_DEVICE,
                        "vkbert_vulkan_device.api_version is %u.%u: vkbert needs an instance "
                        "made with Vulkan 1.1 or later",
                        VK_API_VERSION_MAJOR(d->api_version), VK_API_VERSION_MINOR(d->api_version));
    return VKBERT_OK;
}

/* volk's instance-level pointers are the loader's trampolines, good for every instance and
 * device once loaded from any (vkb_load_vulkan). They are loaded from the caller's instance only
 * when none is loaded: reloading from an instance without VK_EXT_debug_utils would clear the
 * messenger functions that another context's destruction still needs. */
static vkbert_status load_functions(vkbert_context *ctx, VkInstance instance)
{
    vkbert_status status = vkb_load_vulkan();
    if (status) return vkb_fail(ctx, status, "%s", vkb_global_error());
    plat_process_lock();
    if (!volkGetLoadedInstance()) volkLoadInstance(instance);
    plat_process_unlock();
    return VKBERT_OK;
}

static vkbert_status check_queue_family(vkbert_context *ctx)
{
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &count, NULL);
    VkQueueFamilyProperties families[32];
    if (count > 32) count = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &count, families);
    if (ctx->queue_family >= count ||
        !(families[ctx->queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "vkbert_vulkan_device.queue_family %u is not a compute queue family of "
                        "%s (%u families)",
                        ctx->queue_family, ctx->info.name, count);
    return VKBERT_OK;
}

/* vkbert cannot enable the validation layer on the caller's instance; it can only listen, and
 * only where the instance has VK_EXT_debug_utils, whose functions the loader gives out for an
 * instance that enabled it and no other. The messenger is vkbert's own object. */
static vkbert_status listen(vkbert_context *ctx, bool asked)
{
    PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)(void (*)(
        void))vkGetInstanceProcAddr(ctx->instance, "vkCreateDebugUtilsMessengerEXT");
    if (!create && asked)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "vkbert_context_options.validation: the caller's instance has no "
                        "VK_EXT_debug_utils, so vkbert cannot hear its validation messages; "
                        "enable that extension (and VK_LAYER_KHRONOS_validation) on the "
                        "instance, or leave validation off");
    if (!create) return VKBERT_OK; /* VKBERT_VALIDATION alone: the instance is the caller's */
    VkDebugUtilsMessengerCreateInfoEXT info = vkb_messenger_info(ctx);
    VkResult result = create(ctx->instance, &info, NULL, &ctx->messenger);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateDebugUtilsMessengerEXT");
    return VKBERT_OK;
}

static bool validation_wanted(const vkbert_context *ctx, const vkbert_context_options *options,
                              bool *asked)
{
    *asked = options && options->validation;
    return *asked || ctx->env.validation;
}

vkbert_status vkb_context_init_external(vkbert_context *ctx, const vkbert_context_options *options,
                                        const vkbert_vulkan_device *d)
{
    ctx->external = true; /* from here on, a failure's release leaves the caller's objects */
    vkbert_status status = vkb_env_read(ctx, options ? options->cache_dir : NULL);
    if (!status) status = check_handles(ctx, d);
    if (!status) status = load_functions(ctx, d->instance);
    if (status) return status;
    ctx->instance = d->instance;
    ctx->physical = d->physical_device;
    ctx->device = d->device;
    ctx->queue = d->queue;
    ctx->queue_family = d->queue_family;
    ctx->instance_version =
        d->api_version < VK_API_VERSION_1_3 ? d->api_version : VK_API_VERSION_1_3;
    bool asked;
    if (validation_wanted(ctx, options, &asked)) status = listen(ctx, asked);
    if (status) return status;
    vkb_read_device(ctx);
    if (ctx->props.apiVersion < VK_API_VERSION_1_1)
        return vkb_fail(ctx, VKBERT_ERROR_NO_DEVICE, "%s has Vulkan %u.%u; vkbert needs 1.1",
                        ctx->info.name, VK_API_VERSION_MAJOR(ctx->props.apiVersion),
                        VK_API_VERSION_MINOR(ctx->props.apiVersion));
    status = check_queue_family(ctx);
    if (status) return status;
    keep_enabled(ctx, d->device_info);
    status = vkb_limits_init(ctx, options ? options->limits : NULL);
    if (status) return status;
    ctx->timeout_ns = vkb_timeout_ns(ctx, options);
    ctx->timestamps = options && options->timestamps;
    if (ctx->timestamps && !vkb_queue_has_timestamps(ctx))
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "timestamps: queue family %u of %s has no timestamps", ctx->queue_family,
                        ctx->info.name);
    return vkb_create_device_objects(ctx);
}

void vkb_external_release(vkbert_context *ctx)
{
    if (!ctx->messenger) return;
    PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)(void (*)(
        void))vkGetInstanceProcAddr(ctx->instance, "vkDestroyDebugUtilsMessengerEXT");
    if (destroy) destroy(ctx->instance, ctx->messenger, NULL);
    ctx->messenger = VK_NULL_HANDLE;
}

void vkb_wait_idle(vkbert_context *ctx)
{
    if (ctx->external)
        vkQueueWaitIdle(ctx->queue);
    else
        vkDeviceWaitIdle(ctx->device);
}
