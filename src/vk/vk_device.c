/* Loading Vulkan, the instance, choosing the device, and the one compute queue. */
#include "vk.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation";

/* load_result and volk's function pointers are guarded by the platform's process lock. */
static VkResult load_result = VK_NOT_READY;
static uint32_t instance_version = VK_API_VERSION_1_1; /* what instances are created with */

/* volk keeps global function pointers: load the loader once, and reload instance functions
 * under the lock. The functions it loads are the loader's trampolines, valid for any
 * instance and device, so several contexts can live side by side. */
vkbert_status vkb_load_vulkan(void)
{
    plat_process_lock();
    if (load_result != VK_SUCCESS) load_result = volkInitialize();
    VkResult result = load_result;
    plat_process_unlock();
    if (result != VK_SUCCESS)
        return vkb_fail_global(VKBERT_ERROR_NO_VULKAN,
                               "no Vulkan loader found (" PLAT_VULKAN_LOADER "): install a "
                               "Vulkan driver, for example " PLAT_DRIVER_HINT);
    /* Wine's loader with no driver behind it (no display) also says 1.0. */
    uint32_t version = volkGetInstanceVersion();
    if (version < VK_API_VERSION_1_1)
        return vkb_fail_global(VKBERT_ERROR_NO_VULKAN,
                               "no Vulkan 1.1: the loader (" PLAT_VULKAN_LOADER
                               ") offers Vulkan %u.%u; install a Vulkan 1.1 driver",
                               VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
    instance_version = version < VK_API_VERSION_1_3 ? version : VK_API_VERSION_1_3;
    return VKBERT_OK;
}

atomic_uint vkb_validation_total;
char vkb_validation_last[VKB_ERROR_SIZE];

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT type,
              const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    vkbert_context *ctx = user;
    bool counts = (type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) ||
                  (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT);
    if (counts) {
        /* Process-wide too: messages while a context is destroyed (objects left alive) arrive
         * after its count can be read. */
        atomic_fetch_add(&vkb_validation_total, 1);
        snprintf(vkb_validation_last, sizeof vkb_validation_last, "%s",
                 data->pMessage ? data->pMessage : "(no text)");
        if (ctx->validation_count++ == 0)
            snprintf(ctx->validation_first, sizeof ctx->validation_first, "%s",
                     data->pMessage ? data->pMessage : "(no text)");
    }
    return VK_FALSE;
}

static bool instance_has_layer(const char *name)
{
    uint32_t count = 0;
    vkEnumerateInstanceLayerProperties(&count, NULL);
    VkLayerProperties *layers = calloc(count ? count : 1, sizeof *layers);
    if (!layers) return false;
    vkEnumerateInstanceLayerProperties(&count, layers);
    bool found = false;
    for (uint32_t i = 0; i < count && !found; i++)
        found = !strcmp(layers[i].layerName, name);
    free(layers);
    return found;
}

static bool instance_has_extension(const char *name)
{
    uint32_t count = 0;
    vkEnumerateInstanceExtensionProperties(NULL, &count, NULL);
    VkExtensionProperties *ext = calloc(count ? count : 1, sizeof *ext);
    if (!ext) return false;
    vkEnumerateInstanceExtensionProperties(NULL, &count, ext);
    bool found = false;
    for (uint32_t i = 0; i < count && !found; i++)
        found = !strcmp(ext[i].extensionName, name);
    free(ext);
    return found;
}

VkDebugUtilsMessengerCreateInfoEXT vkb_messenger_info(vkbert_context *ctx)
{
    return (VkDebugUtilsMessengerCreateInfoEXT){
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = on_validation,
        .pUserData = ctx,
    };
}

/* With ctx NULL: a plain instance for listing devices. */
static VkResult create_instance(vkbert_context *ctx, bool validation, VkInstance *out)
{
    const char *extensions[2];
    uint32_t extension_count = 0;
    VkInstanceCreateFlags flags = 0;
    /* MoltenVK devices are only listed when portability enumeration is asked for. */
    if (instance_has_extension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        extensions[extension_count++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "vkbert",
        .pEngineName = "vkbert",
        .apiVersion = instance_version,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .flags = flags,
        .pApplicationInfo = &app,
    };
    VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = enables,
    };
    VkDebugUtilsMessengerCreateInfoEXT messenger;
    if (validation) {
        extensions[extension_count++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        messenger = vkb_messenger_info(ctx);
        features.pNext = &messenger; /* also catches messages from instance creation */
        info.pNext = &features;
        info.enabledLayerCount = 1;
        info.ppEnabledLayerNames = &VALIDATION_LAYER;
    }
    info.enabledExtensionCount = extension_count;
    info.ppEnabledExtensionNames = extensions;
    VkResult result = vkCreateInstance(&info, NULL, out);
    if (result == VK_SUCCESS) {
        plat_process_lock();
        volkLoadInstance(*out);
        plat_process_unlock();
    }
    return result;
}

static const char *instance_failure(VkResult result)
{
    return result == VK_ERROR_INCOMPATIBLE_DRIVER
               ? "vkCreateInstance found no Vulkan 1.1 driver (VK_ERROR_INCOMPATIBLE_DRIVER): "
                 "install one, for example " PLAT_DRIVER_HINT
               : vkb_result_name(result);
}

static int find_compute_queue(VkPhysicalDevice device)
{
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, NULL);
    VkQueueFamilyProperties families[32];
    if (count > 32) count = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families);
    int any = -1;
    for (uint32_t i = 0; i < count; i++) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        /* Prefer a queue whose timestamps are valid. */
        if (families[i].timestampValidBits) return (int)i;
        if (any < 0) any = (int)i;
    }
    return any;
}

bool vkb_queue_has_timestamps(const vkbert_context *ctx)
{
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &count, NULL);
    VkQueueFamilyProperties families[32];
    if (count > 32) count = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &count, families);
    return ctx->queue_family < count && families[ctx->queue_family].timestampValidBits > 0 &&
           ctx->props.limits.timestampPeriod > 0.0f;
}

static vkbert_device_type device_type(VkPhysicalDeviceType type)
{
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return VKBERT_DEVICE_INTEGRATED_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return VKBERT_DEVICE_DISCRETE_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return VKBERT_DEVICE_VIRTUAL_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return VKBERT_DEVICE_CPU;
    default:
        return VKBERT_DEVICE_OTHER;
    }
}

bool vkb_device_has_extension(VkPhysicalDevice device, const char *name)
{
    uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(device, NULL, &count, NULL);
    VkExtensionProperties *ext = calloc(count ? count : 1, sizeof *ext);
    if (!ext) return false;
    vkEnumerateDeviceExtensionProperties(device, NULL, &count, ext);
    bool found = false;
    for (uint32_t i = 0; i < count && !found; i++)
        found = !strcmp(ext[i].extensionName, name);
    free(ext);
    return found;
}

/* Subgroup size control is core where both the instance and the device have Vulkan 1.3
 * (its features are then required); before, VK_EXT_subgroup_size_control brings it. */
static bool subgroup_control_core(uint32_t device_version, uint32_t instance_api)
{
    return device_version >= VK_API_VERSION_1_3 && instance_api >= VK_API_VERSION_1_3;
}

/* The device's subgroup size control features and properties, all zero without it. */
static void query_subgroup_control(VkPhysicalDevice device, uint32_t device_version,
                                   uint32_t instance_api,
                                   VkPhysicalDeviceSubgroupSizeControlFeatures *features,
                                   VkPhysicalDeviceSubgroupSizeControlProperties *props)
{
    memset(features, 0, sizeof *features);
    memset(props, 0, sizeof *props);
    if (!subgroup_control_core(device_version, instance_api) &&
        !vkb_device_has_extension(device, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME))
        return;
    features->sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES;
    VkPhysicalDeviceFeatures2 features2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                           .pNext = features};
    vkGetPhysicalDeviceFeatures2(device, &features2);
    features->pNext = NULL;
    props->sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES;
    VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = props};
    vkGetPhysicalDeviceProperties2(device, &props2);
    props->pNext = NULL;
}

void vkb_describe_device(VkPhysicalDevice device, vkbert_device_info *info)
{
    vkb_describe_device_at(device, instance_version, info);
}

void vkb_describe_device_at(VkPhysicalDevice device, uint32_t instance_api,
                            vkbert_device_info *info)
{
    memset(info, 0, sizeof *info);
    VkPhysicalDeviceSubgroupProperties subgroup = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                         .pNext = &subgroup};
    vkGetPhysicalDeviceProperties2(device, &props);
    const VkPhysicalDeviceProperties *p = &props.properties;
    snprintf(info->name, sizeof info->name, "%s", p->deviceName);
    info->type = device_type(p->deviceType);
    info->api_version = p->apiVersion;
    info->vendor_id = p->vendorID;
    info->device_id = p->deviceID;
    info->subgroup_size = subgroup.subgroupSize;
    info->shared_memory_bytes = p->limits.maxComputeSharedMemorySize;
    info->max_storage_buffer_range = p->limits.maxStorageBufferRange;
    info->max_storage_buffers = p->limits.maxPerStageDescriptorStorageBuffers;
    info->max_workgroup_invocations = p->limits.maxComputeWorkGroupInvocations;

    /* Vulkan 1.2 structures are valid only where both the instance and the device have 1.2. */
    if (p->apiVersion >= VK_API_VERSION_1_2 && instance_api >= VK_API_VERSION_1_2) {
        VkPhysicalDeviceVulkan12Properties v12 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
        VkPhysicalDeviceProperties2 props12 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &v12};
        vkGetPhysicalDeviceProperties2(device, &props12);
        const char *end = memchr(v12.driverName, '\0', sizeof v12.driverName);
        size_t n = end ? (size_t)(end - v12.driverName) : sizeof v12.driverName;
        memcpy(info->driver, v12.driverName, n);
        info->driver[n] = ' ';
        snprintf(info->driver + n + 1, sizeof info->driver - n - 1, "%.*s",
                 (int)(sizeof info->driver - n - 2), v12.driverInfo);
    } else {
        snprintf(info->driver, sizeof info->driver, "driver version 0x%x", p->driverVersion);
    }

    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, .pNext = &f16};
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                          .pNext = &s16};
    vkGetPhysicalDeviceFeatures2(device, &features);
    info->fp16_storage = s16.storageBuffer16BitAccess != 0;
    info->fp16_arithmetic = f16.shaderFloat16 != 0;

    VkPhysicalDeviceMemoryProperties memory;
    vkGetPhysicalDeviceMemoryProperties(device, &memory);
    for (uint32_t i = 0; i < memory.memoryHeapCount; i++)
        if ((memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            memory.memoryHeaps[i].size > info->device_local_bytes)
            info->device_local_bytes = memory.memoryHeaps[i].size;
    info->usable = p->apiVersion >= VK_API_VERSION_1_1 && find_compute_queue(device) >= 0;
    VkPhysicalDeviceSubgroupSizeControlFeatures control;
    VkPhysicalDeviceSubgroupSizeControlProperties sizes;
    query_subgroup_control(device, p->apiVersion, instance_api, &control, &sizes);
    info->subgroup_size_control = control.subgroupSizeControl != 0;
    info->min_subgroup_size = sizes.minSubgroupSize;
    info->max_subgroup_size = sizes.maxSubgroupSize;
}

static vkbert_status enumerate(VkInstance instance, VkPhysicalDevice **out, uint32_t *count)
{
    *count = 0;
    VkResult result = vkEnumeratePhysicalDevices(instance, count, NULL);
    if (result != VK_SUCCESS || *count == 0)
        return vkb_fail_global(VKBERT_ERROR_NO_VULKAN,
                               "the Vulkan loader found no device: install a driver, for "
                               "example mesa-vulkan-drivers for the CPU device lavapipe");
    *out = calloc(*count, sizeof **out);
    if (!*out) return vkb_fail_global(VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    vkEnumeratePhysicalDevices(instance, count, *out);
    return VKBERT_OK;
}

vkbert_status vkb_list_devices(vkbert_device_info **infos, uint32_t *count)
{
    *infos = NULL;
    *count = 0;
    vkbert_status status = vkb_load_vulkan();
    if (status) return status;
    VkInstance instance;
    VkResult result = create_instance(NULL, false, &instance);
    if (result != VK_SUCCESS)
        return vkb_fail_global(VKBERT_ERROR_NO_VULKAN, "%s", instance_failure(result));
    VkPhysicalDevice *devices = NULL;
    status = enumerate(instance, &devices, count);
    if (!status) *infos = calloc(*count, sizeof **infos);
    if (!status && !*infos)
        status = vkb_fail_global(VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (uint32_t i = 0; status == VKBERT_OK && i < *count; i++)
        vkb_describe_device(devices[i], &(*infos)[i]);
    free(devices);
    vkDestroyInstance(instance, NULL);
    if (status) *count = 0;
    return status;
}

static bool contains_ignoring_case(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    for (; *haystack; haystack++) {
        size_t i = 0;
        while (i < n && haystack[i] &&
               tolower((unsigned char)haystack[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return true;
    }
    return n == 0;
}

static int type_rank(vkbert_device_type type)
{
    static const int rank[] = {[VKBERT_DEVICE_DISCRETE_GPU] = 0,
                               [VKBERT_DEVICE_INTEGRATED_GPU] = 1,
                               [VKBERT_DEVICE_VIRTUAL_GPU] = 2,
                               [VKBERT_DEVICE_CPU] = 3,
                               [VKBERT_DEVICE_OTHER] = 4};
    return rank[type];
}

static vkbert_status choose_device(vkbert_context *ctx, const char *wanted,
                                   VkPhysicalDevice *devices, uint32_t count, uint32_t *chosen)
{
    vkbert_device_info info;
    if (wanted && *wanted) {
        char *end;
        unsigned long index = strtoul(wanted, &end, 10);
        bool numeric = *end == '\0' && isdigit((unsigned char)wanted[0]);
        for (uint32_t i = 0; i < count; i++) {
            vkb_describe_device(devices[i], &info);
            bool match = numeric ? index == i : contains_ignoring_case(info.name, wanted);
            if (!match) continue;
            if (!info.usable)
                return vkb_fail(ctx, VKBERT_ERROR_NO_DEVICE,
                                "device %u (%s) lacks Vulkan 1.1 or a compute queue", i, info.name);
            *chosen = i;
            return VKBERT_OK;
        }
        return vkb_fail(ctx, VKBERT_ERROR_NO_DEVICE,
                        "no Vulkan device matches \"%s\" (%u devices; `vkbert devices` lists "
                        "them)",
                        wanted, count);
    }
    int best = -1, best_rank = 99;
    for (uint32_t i = 0; i < count; i++) {
        vkb_describe_device(devices[i], &info);
        if (info.usable && type_rank(info.type) < best_rank) {
            best = (int)i;
            best_rank = type_rank(info.type);
        }
    }
    if (best < 0)
        return vkb_fail(ctx, VKBERT_ERROR_NO_DEVICE,
                        "none of the %u Vulkan devices has Vulkan 1.1 and a compute queue", count);
    *chosen = (uint32_t)best;
    return VKBERT_OK;
}

static void read_subgroup_control(vkbert_context *ctx)
{
    VkPhysicalDeviceSubgroupSizeControlFeatures features;
    query_subgroup_control(ctx->physical, ctx->props.apiVersion, ctx->instance_version, &features,
                           &ctx->subgroup_control);
    ctx->subgroup_size_control = features.subgroupSizeControl != 0;
    ctx->full_subgroups = features.computeFullSubgroups != 0;
}

static vkbert_status create_device(vkbert_context *ctx)
{
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = ctx->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    const char *extensions[3];
    uint32_t extension_count = 0;
    if (vkb_device_has_extension(ctx->physical, "VK_KHR_portability_subset"))
        extensions[extension_count++] = "VK_KHR_portability_subset";
    /* Subgroup size control only where the device has it and no switch turned it off
     * (vk_limits.c): the pipelines' flags follow these same fields. */
    bool control = ctx->subgroup_size_control || ctx->full_subgroups;
    if (control && !subgroup_control_core(ctx->props.apiVersion, ctx->instance_version))
        extensions[extension_count++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
    VkPhysicalDeviceSubgroupSizeControlFeatures subgroup_control = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
        .subgroupSizeControl = ctx->subgroup_size_control ? VK_TRUE : VK_FALSE,
        .computeFullSubgroups = ctx->full_subgroups ? VK_TRUE : VK_FALSE,
    };
    /* 16-bit storage, where the device has it, for fp16 weights. */
    VkPhysicalDevice16BitStorageFeatures storage16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        .pNext = control ? &subgroup_control : NULL,
        .storageBuffer16BitAccess = ctx->info.fp16_storage ? VK_TRUE : VK_FALSE,
    };
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot;
    const void *chain = vkb_int8_dot_chain(ctx, &dot, &storage16, extensions, &extension_count);
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = chain,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
        .enabledExtensionCount = extension_count,
        .ppEnabledExtensionNames = extensions,
    };
    VkResult result = vkCreateDevice(ctx->physical, &info, NULL, &ctx->device);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateDevice");
    vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);
    return VKBERT_OK;
}

vkbert_status vkb_create_device_objects(vkbert_context *ctx)
{
    VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = ctx->queue_family,
    };
    VkResult result = vkCreateCommandPool(ctx->device, &pool, NULL, &ctx->command_pool);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = ctx->command_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    result = vkAllocateCommandBuffers(ctx->device, &alloc, &ctx->transfer_cmd);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    result = vkCreateFence(ctx->device, &fence, NULL, &ctx->fence);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateFence");
    return vkb_pipeline_cache_create(ctx); /* from disk where a valid file exists */
}

void vkb_read_device(vkbert_context *ctx)
{
    vkb_describe_device_at(ctx->physical, ctx->instance_version, &ctx->info);
    vkGetPhysicalDeviceProperties(ctx->physical, &ctx->props);
    vkGetPhysicalDeviceMemoryProperties(ctx->physical, &ctx->memory_props);
    ctx->subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                         .pNext = &ctx->subgroup};
    vkGetPhysicalDeviceProperties2(ctx->physical, &props);
    ctx->subgroup.pNext = NULL;
    ctx->subgroup_arithmetic =
        (ctx->subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
        (ctx->subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    ctx->timestamp_ns = ctx->props.limits.timestampPeriod;
    VkFormatProperties half4;
    vkGetPhysicalDeviceFormatProperties(ctx->physical, VK_FORMAT_R16G16B16A16_SFLOAT, &half4);
    ctx->fp16_texels = (half4.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
    read_subgroup_control(ctx);
    vkb_memory_init(ctx);
}

static vkbert_status create_instance_for(vkbert_context *ctx, bool validation)
{
    if (validation && !instance_has_layer(VALIDATION_LAYER))
        return vkb_fail(ctx, VKBERT_ERROR_NO_VULKAN,
                        "validation was asked for but %s is not installed "
                        "(Debian: vulkan-validationlayers)",
                        VALIDATION_LAYER);
    VkResult result = create_instance(ctx, validation, &ctx->instance);
    if (result != VK_SUCCESS)
        return vkb_fail(ctx, VKBERT_ERROR_NO_VULKAN, "%s", instance_failure(result));
    if (!validation) return VKBERT_OK;
    VkDebugUtilsMessengerCreateInfoEXT info = vkb_messenger_info(ctx);
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(ctx->instance,
                                                                  "vkCreateDebugUtilsMessengerEXT");
    result = create(ctx->instance, &info, NULL, &ctx->messenger);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateDebugUtilsMessengerEXT");
    return VKBERT_OK;
}

/* The fence timeout: the option, else VKBERT_TIMEOUT_MS, else ten minutes (a whole large
 * batch on a CPU device takes minutes; a GPU's own watchdog fires long before). */
uint64_t vkb_timeout_ns(const vkbert_context *ctx, const vkbert_context_options *options)
{
    uint64_t ms = options ? options->timeout_ms : 0;
    if (!ms) ms = ctx->env.timeout_ms;
    if (!ms) ms = 600000;
    if (ms > UINT64_MAX / 1000000ull) return UINT64_MAX; /* no timeout */
    return ms * 1000000ull;
}

vkbert_status vkb_context_init(vkbert_context *ctx, const vkbert_context_options *options)
{
    vkbert_status status = vkb_env_read(ctx, options ? options->cache_dir : NULL);
    if (status) return status;
    status = vkb_load_vulkan();
    if (status) return vkb_fail(ctx, status, "%s", vkb_global_error());
    bool validation = (options && options->validation) || ctx->env.validation;
    ctx->instance_version = instance_version;
    status = create_instance_for(ctx, validation);
    if (status) return status;

    VkPhysicalDevice *devices = NULL;
    uint32_t count = 0;
    status = enumerate(ctx->instance, &devices, &count);
    if (status) return vkb_fail(ctx, status, "%s", vkb_global_error());
    const char *wanted = options && options->device && *options->device ? options->device
                         : ctx->env.device[0]                           ? ctx->env.device
                                                                        : NULL;
    uint32_t chosen = 0;
    status = choose_device(ctx, wanted, devices, count, &chosen);
    if (status == VKBERT_OK) ctx->physical = devices[chosen];
    free(devices);
    if (status) return status;

    vkb_read_device(ctx);
    vkb_read_int8_dot(ctx);
    status = vkb_limits_init(ctx, options ? options->limits : NULL);
    if (status) return status;
    ctx->timeout_ns = vkb_timeout_ns(ctx, options);
    ctx->queue_family = (uint32_t)find_compute_queue(ctx->physical);
    ctx->timestamps = options && options->timestamps;
    if (ctx->timestamps && !vkb_queue_has_timestamps(ctx))
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT, "%s has no timestamps on its compute queue",
                        ctx->info.name);
    status = create_device(ctx);
    if (status) return status;
    return vkb_create_device_objects(ctx);
}

void vkb_context_release(vkbert_context *ctx)
{
    if (ctx->device) {
        vkb_wait_idle(ctx);
        vkb_pipeline_cache_save(ctx); /* while pipeline_count still says whether any were made */
        vkb_pipelines_release(ctx);
        vkb_memory_release(ctx);
        vkDestroyPipelineCache(ctx->device, ctx->pipeline_cache, NULL);
        vkDestroyFence(ctx->device, ctx->fence, NULL);
        vkDestroyCommandPool(ctx->device, ctx->command_pool, NULL);
        if (!ctx->external) vkDestroyDevice(ctx->device, NULL);
    }
    if (ctx->external) { /* the caller's instance and device: only vkbert's messenger goes */
        vkb_external_release(ctx);
        return;
    }
    /* volk's one table of instance functions comes from the newest instance: after one without
     * VK_EXT_debug_utils (vkbert_list_devices, a context without validation) its debug-utils
     * entries are NULL, so the messenger's functions come from this context's own instance. */
    PFN_vkDestroyDebugUtilsMessengerEXT destroy =
        ctx->messenger ? (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                             ctx->instance, "vkDestroyDebugUtilsMessengerEXT")
                       : NULL;
    if (destroy) destroy(ctx->instance, ctx->messenger, NULL);
    if (ctx->instance) vkDestroyInstance(ctx->instance, NULL);
}
