/* The interop example's own Vulkan setup, written as any Vulkan program would write it: an
 * instance (with the validation layer, synchronization validation and a messenger that counts
 * its messages, when asked), the first device with a compute queue, a host-visible buffer, a
 * command buffer and a submission that waits. Nothing here is vkbert's but the description
 * vkbert_context_create_vulkan takes.
 *
 * tests/api/test_interop.c and tests/api/test_async.c include it too, so that the example and
 * the tests share one copy; they call Vulkan through volk, whose volk.h they include first. Every
 * call returns the VkResult and leaves the reaction to the caller (the example exits, the tests
 * assert). static inline: each includer uses only part of it, without unused warnings. */
#ifndef VKBERT_EXAMPLE_VULKAN_APP_H
#define VKBERT_EXAMPLE_VULKAN_APP_H

#include <vkbert_vulkan.h>

#include <stdio.h>

typedef struct vulkan_app {
    uint32_t api_version; /* the caller's, at least VK_API_VERSION_1_1 (vkbert_vulkan.h) */
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger; /* VK_NULL_HANDLE without validation */
    unsigned messages;                  /* validation messages seen */
    VkPhysicalDevice physical;
    uint32_t family; /* the first with VK_QUEUE_COMPUTE_BIT */
    VkDevice device;
    VkQueue queue;
    float priority;
    VkDeviceQueueCreateInfo queue_info;
    VkDeviceCreateInfo device_info; /* the device's, kept: vkbert reads what it enabled */
} vulkan_app;

static inline VKAPI_ATTR VkBool32 VKAPI_CALL vulkan_app_on_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT type,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    if ((type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) ||
        (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        ((vulkan_app *)user)->messages++;
        fprintf(stderr, "validation: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

/* The instance at a->api_version; with `validation`, the layer and VK_EXT_debug_utils too. The
 * messenger is chained into the instance's creation as well, so that it hears that too. */
static inline VkResult vulkan_app_instance(vulkan_app *a, int validation)
{
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "vkbert interop example",
                             .apiVersion = a->api_version};
    const char *layer = "VK_LAYER_KHRONOS_validation", *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkDebugUtilsMessengerCreateInfoEXT messenger = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = vulkan_app_on_message,
        .pUserData = a};
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .pNext = &messenger,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = &sync};
    VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                 .pApplicationInfo = &app};
    if (validation) {
        info.pNext = &features;
        info.enabledLayerCount = 1, info.ppEnabledLayerNames = &layer;
        info.enabledExtensionCount = 1, info.ppEnabledExtensionNames = &ext;
    }
    VkResult result = vkCreateInstance(&info, NULL, &a->instance);
    if (result != VK_SUCCESS || !validation) return result;
    /* An extension's command: the loader exports no symbol for it. */
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(a->instance,
                                                                  "vkCreateDebugUtilsMessengerEXT");
    return create(a->instance, &messenger, NULL, &a->messenger);
}

/* The first physical device and its first compute family, and a device with one queue of it
 * and `chain` (a feature structure chain, may be NULL) enabled. Again after
 * vkDestroyDevice, for another device on the same instance. */
static inline VkResult vulkan_app_device(vulkan_app *a, void *chain)
{
    uint32_t count = 1;
    vkEnumeratePhysicalDevices(a->instance, &count, &a->physical);
    if (count == 0) return VK_ERROR_INITIALIZATION_FAILED;
    VkQueueFamilyProperties families[16];
    count = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(a->physical, &count, families);
    for (a->family = 0; a->family < count; a->family++)
        if (families[a->family].queueFlags & VK_QUEUE_COMPUTE_BIT) break;
    if (a->family == count) return VK_ERROR_FEATURE_NOT_PRESENT;
    a->priority = 1.0f;
    a->queue_info = (VkDeviceQueueCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                              .queueFamilyIndex = a->family,
                                              .queueCount = 1,
                                              .pQueuePriorities = &a->priority};
    a->device_info = (VkDeviceCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                          .pNext = chain,
                                          .queueCreateInfoCount = 1,
                                          .pQueueCreateInfos = &a->queue_info};
    VkResult result = vkCreateDevice(a->physical, &a->device_info, NULL, &a->device);
    if (result == VK_SUCCESS) vkGetDeviceQueue(a->device, a->family, 0, &a->queue);
    return result;
}

/* What vkbert_context_create_vulkan needs to know of the app's device. */
static inline vkbert_vulkan_device vulkan_app_description(const vulkan_app *a)
{
    vkbert_vulkan_device d = VKBERT_VULKAN_DEVICE_INIT;
    d.instance = a->instance;
    d.api_version = a->api_version;
    d.physical_device = a->physical;
    d.device = a->device;
    d.device_info = &a->device_info;
    d.queue_family = a->family;
    d.queue = a->queue;
    return d;
}

/* Destroys the device and instance: validation then reports any child left on them. */
static inline void vulkan_app_close(vulkan_app *a)
{
    if (a->device) {
        vkDeviceWaitIdle(a->device);
        vkDestroyDevice(a->device, NULL);
    }
    if (a->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                a->instance, "vkDestroyDebugUtilsMessengerEXT");
        destroy(a->instance, a->messenger, NULL);
    }
    vkDestroyInstance(a->instance, NULL);
}

/* An offset vkbert_tensor_wrap_vulkan accepts: storage and texel views both start there. */
static inline VkDeviceSize vulkan_app_alignment(const vulkan_app *a)
{
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(a->physical, &p);
    VkDeviceSize s = p.limits.minStorageBufferOffsetAlignment;
    VkDeviceSize t = p.limits.minTexelBufferOffsetAlignment;
    return s > t ? s : t;
}

/* A host-visible, coherent, mapped buffer with the usage vkbert_tensor_wrap_vulkan asks for. */
typedef struct vulkan_app_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped;
} vulkan_app_buffer;

static inline VkResult vulkan_app_buffer_new(const vulkan_app *a, VkDeviceSize size,
                                             vulkan_app_buffer *b)
{
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                               .size = size,
                               .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                        VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT};
    VkResult result = vkCreateBuffer(a->device, &info, NULL, &b->buffer);
    if (result != VK_SUCCESS) return result;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(a->device, b->buffer, &req);
    VkPhysicalDeviceMemoryProperties props;
    vkGetPhysicalDeviceMemoryProperties(a->physical, &props);
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = 0;
    while (type < props.memoryTypeCount && (!(req.memoryTypeBits & (1u << type)) ||
                                            (props.memoryTypes[type].propertyFlags & want) != want))
        type++;
    if (type == props.memoryTypeCount) return VK_ERROR_FEATURE_NOT_PRESENT;
    VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                  .allocationSize = req.size,
                                  .memoryTypeIndex = type};
    result = vkAllocateMemory(a->device, &alloc, NULL, &b->memory);
    if (result == VK_SUCCESS) result = vkBindBufferMemory(a->device, b->buffer, b->memory, 0);
    if (result == VK_SUCCESS)
        result = vkMapMemory(a->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
    return result;
}

static inline void vulkan_app_buffer_free(const vulkan_app *a, vulkan_app_buffer *b)
{
    vkDestroyBuffer(a->device, b->buffer, NULL);
    vkFreeMemory(a->device, b->memory, NULL);
}

/* A command pool of `family` on `device` and one primary command buffer of it, begun. Raw
 * handles: tests/api/test_async.c records on a vkbert context's own device. */
static inline VkResult vulkan_app_commands(VkDevice device, uint32_t family, VkCommandPool *pool,
                                           VkCommandBuffer *cmd)
{
    VkCommandPoolCreateInfo pool_info = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                         .queueFamilyIndex = family};
    VkResult result = vkCreateCommandPool(device, &pool_info, NULL, pool);
    if (result != VK_SUCCESS) return result;
    VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .commandPool = *pool,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                         .commandBufferCount = 1};
    result = vkAllocateCommandBuffers(device, &alloc, cmd);
    if (result != VK_SUCCESS) return result;
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    return vkBeginCommandBuffer(*cmd, &begin);
}

/* A global memory barrier: the kind vkbert_vulkan.h says the caller owes around vkbert's
 * recordings. */
static inline void vulkan_app_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage,
                                      VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
                                      VkAccessFlags dst_access)
{
    VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                         .srcAccessMask = src_access,
                         .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &b, 0, NULL, 0, NULL);
}

/* Submits the ended `cmd` on `queue` and waits for it on a fence of its own. */
static inline VkResult vulkan_app_submit(VkDevice device, VkQueue queue, VkCommandBuffer cmd)
{
    VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    VkResult result = vkCreateFence(device, &fence_info, NULL, &fence);
    if (result != VK_SUCCESS) return result;
    VkSubmitInfo info = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    result = vkQueueSubmit(queue, 1, &info, fence);
    if (result == VK_SUCCESS) result = vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX);
    vkDestroyFence(device, fence, NULL);
    return result;
}

#endif
