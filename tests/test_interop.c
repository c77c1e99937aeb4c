/* vkbert on the test's own Vulkan instance, device and queue (vkbert_vulkan.h): features seen
 * as enabled, nothing of the caller's destroyed, wrapped buffers, recording into the test's
 * command buffer against the layer's own forward and the double-precision reference. */
#include "support.h"
#include "vk/vk.h" /* volk first: the test calls Vulkan through the library's loader */

#include "vkbert_vulkan.h"

#include <stdlib.h>
#include <string.h>

/* The test's own program: instance (validation with synchronization validation and a
 * messenger that counts, where the layer is installed), device, queue. */
typedef struct app {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    uint32_t api_version;
} app;

static uint32_t app_messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    (void)user;
    if ((type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) ||
        (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        app_messages++;
        fprintf(stderr, "validation: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static void app_instance(app *a, bool debug_utils)
{
    cr_assert_eq(volkInitialize(), VK_SUCCESS);
    a->api_version =
        volkGetInstanceVersion() >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_1;
    VkApplicationInfo appinfo = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                                 .apiVersion = a->api_version};
    const char *layer = "VK_LAYER_KHRONOS_validation", *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = &sync};
    VkDebugUtilsMessengerCreateInfoEXT messenger = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = on_message};
    VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                 .pApplicationInfo = &appinfo};
    if (debug_utils) {
        features.pNext = &messenger;
        info.pNext = &features;
        info.enabledLayerCount = 1, info.ppEnabledLayerNames = &layer;
        info.enabledExtensionCount = 1, info.ppEnabledExtensionNames = &ext;
    }
    cr_assert_eq(vkCreateInstance(&info, NULL, &a->instance), VK_SUCCESS, "vkCreateInstance");
    volkLoadInstance(a->instance);
    if (debug_utils)
        cr_assert_eq(vkCreateDebugUtilsMessengerEXT(a->instance, &messenger, NULL, &a->messenger),
                     VK_SUCCESS);
    uint32_t count = 1;
    vkEnumeratePhysicalDevices(a->instance, &count, &a->physical);
    cr_assert_geq(count, 1, "no device");
    VkQueueFamilyProperties families[16];
    count = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(a->physical, &count, families);
    for (a->family = 0; a->family < count; a->family++)
        if (families[a->family].queueFlags & VK_QUEUE_COMPUTE_BIT) break;
    cr_assert_lt(a->family, count, "no compute queue");
}

/* The device, with `chain` (a feature structure chain, may be NULL) enabled. */
static VkDeviceCreateInfo app_device(app *a, void *chain, const char *const *extensions,
                                     uint32_t extension_count)
{
    static const float priority = 1.0f;
    static VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                            .queueCount = 1,
                                            .pQueuePriorities = &priority};
    queue.queueFamilyIndex = a->family;
    VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                               .pNext = chain,
                               .queueCreateInfoCount = 1,
                               .pQueueCreateInfos = &queue,
                               .enabledExtensionCount = extension_count,
                               .ppEnabledExtensionNames = extensions};
    cr_assert_eq(vkCreateDevice(a->physical, &info, NULL, &a->device), VK_SUCCESS);
    vkGetDeviceQueue(a->device, a->family, 0, &a->queue);
    return info;
}

static vkbert_vulkan_device app_description(const app *a, const VkDeviceCreateInfo *info)
{
    vkbert_vulkan_device d = VKBERT_VULKAN_DEVICE_INIT;
    d.instance = a->instance;
    d.api_version = a->api_version;
    d.physical_device = a->physical;
    d.device = a->device;
    d.device_info = info;
    d.queue_family = a->family;
    d.queue = a->queue;
    return d;
}

/* Destroys the device and instance; validation reports any child vkbert left on them. */
static void app_close(app *a)
{
    if (a->device) {
        vkDeviceWaitIdle(a->device);
        vkDestroyDevice(a->device, NULL);
    }
    if (a->messenger) vkDestroyDebugUtilsMessengerEXT(a->instance, a->messenger, NULL);
    vkDestroyInstance(a->instance, NULL);
    cr_assert_eq(app_messages, 0, "validation spoke %u times", app_messages);
}

static vkbert_context *external_context(const app *a, const VkDeviceCreateInfo *info)
{
    vkbert_vulkan_device d = app_description(a, info);
    vkbert_context_options options = VKBERT_CONTEXT_OPTIONS_INIT;
    options.validation = a->messenger != VK_NULL_HANDLE;
    vkbert_context *ctx = NULL;
    vkbert_status status = vkbert_context_create_vulkan(&options, &d, &ctx);
    cr_assert_eq(status, VKBERT_OK, "context: %s", vkbert_last_error(NULL));
    return ctx;
}

Test(interop, sees_only_enabled_features)
{
    app a = {0};
    app_instance(&a, true);
    VkDeviceCreateInfo plain = app_device(&a, NULL, NULL, 0);
    vkbert_context *ctx = external_context(&a, &plain);
    cr_expect(!ctx->subgroup_size_control && !ctx->full_subgroups && !ctx->info.fp16_storage,
              "a device made without features has none in vkbert");
    cr_expect_eq(ctx->device, a.device);
    vkbert_context_destroy(ctx);
    vkDestroyDevice(a.device, NULL);

    /* Everything the device has, enabled: vkbert sees what its own device would have. */
    VkPhysicalDeviceVulkan11Features v11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan13Features v13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, .pNext = &v11};
    VkPhysicalDeviceFeatures2 all = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                     .pNext = a.api_version >= VK_API_VERSION_1_3 ? (void *)&v13
                                                                                  : (void *)&v11};
    vkGetPhysicalDeviceFeatures2(a.physical, &all);
    VkDeviceCreateInfo full = app_device(&a, &all, NULL, 0);
    ctx = external_context(&a, &full);
    vkbert_context *own = test_context(0);
    cr_expect_eq(ctx->info.fp16_storage, own->info.fp16_storage);
    cr_expect_eq(ctx->subgroup_size_control, own->subgroup_size_control);
    cr_expect_eq(ctx->full_subgroups, own->full_subgroups);
    test_context_done(own);
    vkbert_context_destroy(ctx);
    app_close(&a);
}

/* A layer with random weights on `ctx`, x random: the forward's y against the reference. */
static void forward_checked(vkbert_context *ctx, uint64_t seed)
{
    enum { B = 2, S = 5, H = 2, E = 6 };
    test_weights w = test_weights_random(E, seed);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer;
    TEST_OK(vkbert_attention_create(ctx, E, H, &api, NULL, &layer));
    float x[B * S * E], *y = test_poisoned(B * S * E);
    double want[B * S * E];
    ref_rng rng = {seed};
    ref_fill(&rng, x, B * S * E, -1.0, 1.0);
    TEST_OK(vkbert_attention_forward_host(layer, B, S, x, NULL, NULL, y));
    ref_layer ref = test_weights_ref(&w, H);
    ref_attention(&ref, B, S, x, NULL, NULL, want);
    test_assert_fp32_close(y, want, B * S * E, "external device");
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    free(y);
}

Test(interop, destroy_leaves_the_device)
{
    app a = {0};
    app_instance(&a, true);
    VkDeviceCreateInfo info = app_device(&a, NULL, NULL, 0);
    for (int round = 0; round < 2; round++) {
        vkbert_context *ctx = external_context(&a, &info);
        forward_checked(ctx, 11 + round);
        cr_assert_eq(vkbert_validation_messages(ctx, NULL, 0), 0);
        vkbert_context_destroy(ctx);
    }
    app_close(&a); /* vkDestroyDevice with a child left would be reported */
}

/* A host-visible buffer with the usage vkbert_tensor_wrap_vulkan asks for. */
typedef struct app_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped;
} app_buffer;

static app_buffer app_buffer_new(const app *a, VkDeviceSize size)
{
    app_buffer b = {0};
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                               .size = size,
                               .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                        VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT};
    cr_assert_eq(vkCreateBuffer(a->device, &info, NULL, &b.buffer), VK_SUCCESS);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(a->device, b.buffer, &req);
    VkPhysicalDeviceMemoryProperties props;
    vkGetPhysicalDeviceMemoryProperties(a->physical, &props);
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = 0;
    while (type < props.memoryTypeCount && (!(req.memoryTypeBits & (1u << type)) ||
                                            (props.memoryTypes[type].propertyFlags & want) != want))
        type++;
    cr_assert_lt(type, props.memoryTypeCount, "no host-visible memory");
    VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                  .allocationSize = req.size,
                                  .memoryTypeIndex = type};
    cr_assert_eq(vkAllocateMemory(a->device, &alloc, NULL, &b.memory), VK_SUCCESS);
    cr_assert_eq(vkBindBufferMemory(a->device, b.buffer, b.memory, 0), VK_SUCCESS);
    cr_assert_eq(vkMapMemory(a->device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), VK_SUCCESS);
    return b;
}

static void app_buffer_free(const app *a, app_buffer *b)
{
    vkDestroyBuffer(a->device, b->buffer, NULL);
    vkFreeMemory(a->device, b->memory, NULL);
}

static VkDeviceSize alignment(const app *a)
{
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(a->physical, &p);
    VkDeviceSize s = p.limits.minStorageBufferOffsetAlignment;
    VkDeviceSize t = p.limits.minTexelBufferOffsetAlignment;
    return s > t ? s : t;
}

Test(interop, wrap_round_trip_and_bad_arguments)
{
    app a = {0};
    app_instance(&a, true);
    VkDeviceCreateInfo info = app_device(&a, NULL, NULL, 0);
    vkbert_context *ctx = external_context(&a, &info);
    int64_t shape[3] = {2, 3, 5}; /* rows of 5 padded to 8 floats */
    uint64_t bytes = vkbert_tensor_bytes(3, shape);
    cr_assert_eq(bytes, 2 * 3 * 8 * 4);
    VkDeviceSize align = alignment(&a);
    app_buffer b = app_buffer_new(&a, align + bytes);
    vkbert_tensor *t;
    TEST_OK(vkbert_tensor_wrap_vulkan(ctx, b.buffer, align, bytes, 3, shape, &t));
    VkBuffer got;
    VkDeviceSize offset, size;
    TEST_OK(vkbert_tensor_vulkan_buffer(t, &got, &offset, &size));
    cr_expect(got == b.buffer && offset == align && size == bytes);
    float host[30];
    cr_expect_eq(vkbert_tensor_read(ctx, t, host, 30), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(vkbert_last_error(ctx), "vkbert_tensor_wrap_vulkan"));
    vkbert_tensor_destroy(ctx, t); /* leaves the buffer: freed below, validation silent */

    vkbert_tensor *own;
    TEST_OK(vkbert_tensor_create(ctx, 3, shape, &own));
    TEST_OK(vkbert_tensor_vulkan_buffer(own, &got, &offset, &size));
    cr_expect(got != VK_NULL_HANDLE && size == bytes);
    vkbert_tensor_destroy(ctx, own);

    if (align > 4) {
        cr_expect_eq(vkbert_tensor_wrap_vulkan(ctx, b.buffer, 4, bytes, 3, shape, &t),
                     VKBERT_ERROR_INVALID_ARGUMENT);
        cr_expect(strstr(vkbert_last_error(ctx), "minStorageBufferOffsetAlignment"));
    }
    cr_expect_eq(vkbert_tensor_wrap_vulkan(ctx, b.buffer, 0, bytes - 4, 3, shape, &t),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(vkbert_last_error(ctx), "bytes the shape needs"), "%s",
              vkbert_last_error(ctx));
    cr_expect_eq(vkbert_tensor_wrap_vulkan(ctx, VK_NULL_HANDLE, 0, bytes, 3, shape, &t),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(t, NULL);
    vkbert_context_destroy(ctx);

    vkbert_context *none = (vkbert_context *)1;
    cr_expect_eq(vkbert_context_create_vulkan(NULL, NULL, &none), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_expect_eq(none, NULL);
    cr_expect(strstr(vkbert_last_error(NULL), "VKBERT_VULKAN_DEVICE_INIT"));
    vkbert_vulkan_device d = app_description(&a, &info);
    d.struct_size = 0;
    cr_expect_eq(vkbert_context_create_vulkan(NULL, &d, &none), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(vkbert_last_error(NULL), "VKBERT_VULKAN_DEVICE_INIT"));
    d = app_description(&a, &info);
    d.queue = VK_NULL_HANDLE;
    cr_expect_eq(vkbert_context_create_vulkan(NULL, &d, &none), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(vkbert_last_error(NULL), "vkbert_vulkan_device.queue"));
    d = app_description(&a, &info);
    d.queue_family = 99;
    cr_expect_eq(vkbert_context_create_vulkan(NULL, &d, &none), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(vkbert_last_error(NULL), "queue_family 99"));
    d = app_description(&a, &info);
    d.api_version = VK_API_VERSION_1_0;
    cr_expect_eq(vkbert_context_create_vulkan(NULL, &d, &none), VKBERT_ERROR_NO_DEVICE);
    cr_expect(strstr(vkbert_last_error(NULL), "api_version"));
    app_buffer_free(&a, &b);
    app_close(&a);
}

Test(interop, validation_needs_debug_utils)
{
    app a = {0};
    app_instance(&a, false);
    VkDeviceCreateInfo info = app_device(&a, NULL, NULL, 0);
    vkbert_vulkan_device d = app_description(&a, &info);
    vkbert_context_options options = VKBERT_CONTEXT_OPTIONS_INIT;
    options.validation = 1;
    vkbert_context *ctx = NULL;
    cr_expect_eq(vkbert_context_create_vulkan(&options, &d, &ctx), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_expect(strstr(vkbert_last_error(NULL), "VK_EXT_debug_utils"));
    TEST_OK(vkbert_context_create_vulkan(NULL, &d, &ctx)); /* VKBERT_VALIDATION is ignored */
    forward_checked(ctx, 5);
    vkbert_context_destroy(ctx);
    app_close(&a);
}

/* Padded rows of the tensor layout, to and from dense host arrays. */
static void to_rows(float *rows, const float *dense, size_t count, int cols, int pitch)
{
    for (size_t r = 0; r < count / cols; r++)
        memcpy(rows + r * pitch, dense + r * cols, cols * sizeof *dense);
}

static void from_rows(float *dense, const float *rows, size_t count, int cols, int pitch)
{
    for (size_t r = 0; r < count / cols; r++)
        memcpy(dense + r * cols, rows + r * pitch, cols * sizeof *dense);
}

static void submit_and_wait(const app *a, VkCommandBuffer cmd)
{
    VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    cr_assert_eq(vkCreateFence(a->device, &fence_info, NULL, &fence), VK_SUCCESS);
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    cr_assert_eq(vkQueueSubmit(a->queue, 1, &submit, fence), VK_SUCCESS);
    cr_assert_eq(vkWaitForFences(a->device, 1, &fence, VK_TRUE, UINT64_MAX), VK_SUCCESS);
    vkDestroyFence(a->device, fence, NULL);
}

/* Two recordings of one layer in one command buffer, x -> y -> z, with a key-padding mask:
 * y against the reference and the layer's own forward, z against its forward of y. */
Test(interop, record_matches_forward)
{
    enum { B = 2, S = 5, H = 2, E = 6, P = 8, N = B * S * E };
    app a = {0};
    app_instance(&a, true);
    VkDeviceCreateInfo info = app_device(&a, NULL, NULL, 0);
    vkbert_context *ctx = external_context(&a, &info);
    test_weights w = test_weights_random(E, 21);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer;
    TEST_OK(vkbert_attention_create(ctx, E, H, &api, NULL, &layer));
    float x[N], mask[B * S] = {1, 1, 1, 0, 0, 1, 1, 1, 1, 1};
    ref_rng rng = {21};
    ref_fill(&rng, x, N, -1.0, 1.0);

    int64_t shape[3] = {B, S, E}, mask_shape[2] = {B, S};
    VkDeviceSize bytes = vkbert_tensor_bytes(3, shape), align = alignment(&a);
    VkDeviceSize stride = (bytes + align - 1) / align * align;
    app_buffer buf = app_buffer_new(&a, 3 * stride);
    float *rows = buf.mapped;
    for (size_t i = 0; i < 3 * stride / 4; i++)
        rows[i] = NAN; /* poisoned: y and z must be written */
    to_rows(rows, x, N, E, P);
    vkbert_tensor *tx, *ty, *tz, *tmask;
    TEST_OK(vkbert_tensor_wrap_vulkan(ctx, buf.buffer, 0, bytes, 3, shape, &tx));
    TEST_OK(vkbert_tensor_wrap_vulkan(ctx, buf.buffer, stride, bytes, 3, shape, &ty));
    TEST_OK(vkbert_tensor_wrap_vulkan(ctx, buf.buffer, 2 * stride, bytes, 3, shape, &tz));
    TEST_OK(vkbert_tensor_create(ctx, 2, mask_shape, &tmask));
    TEST_OK(vkbert_tensor_write(ctx, tmask, mask, B * S));

    VkCommandPoolCreateInfo pool_info = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                         .queueFamilyIndex = a.family};
    VkCommandPool pool;
    cr_assert_eq(vkCreateCommandPool(a.device, &pool_info, NULL, &pool), VK_SUCCESS);
    VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .commandPool = pool,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                         .commandBufferCount = 1};
    VkCommandBuffer cmd;
    cr_assert_eq(vkAllocateCommandBuffers(a.device, &alloc, &cmd), VK_SUCCESS);
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    cr_assert_eq(vkBeginCommandBuffer(cmd, &begin), VK_SUCCESS);
    /* No barrier between: vkbert's own leading barrier orders the second after the first. */
    TEST_OK(vkbert_attention_record(layer, cmd, tx, tmask, NULL, ty));
    TEST_OK(vkbert_attention_record(layer, cmd, ty, tmask, NULL, tz));
    VkMemoryBarrier to_host = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                               .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                               .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                         1, &to_host, 0, NULL, 0, NULL);
    cr_assert_eq(vkEndCommandBuffer(cmd), VK_SUCCESS);
    submit_and_wait(&a, cmd);
    submit_and_wait(&a, cmd); /* a recording replays */

    float y[N], z[N], *want_y = test_poisoned(N), *want_z = test_poisoned(N);
    from_rows(y, rows + stride / 4, N, E, P);
    from_rows(z, rows + 2 * stride / 4, N, E, P);
    vkbert_mask host_mask = VKBERT_MASK_INIT;
    host_mask.data = mask;
    host_mask.ndim = 2;
    host_mask.shape[0] = B;
    host_mask.shape[1] = S;
    TEST_OK(vkbert_attention_forward_host(layer, B, S, x, &host_mask, NULL, want_y));
    TEST_OK(vkbert_attention_forward_host(layer, B, S, y, &host_mask, NULL, want_z));
    cr_expect_arr_eq(y, want_y, sizeof y, "recorded y differs from forward_host's");
    cr_expect_arr_eq(z, want_z, sizeof z, "recorded z differs from forward_host's");
    double ref_y[N];
    ref_layer ref = test_weights_ref(&w, H);
    ref_mask rmask = {mask, {S, 0, 0, 1}};
    ref_attention(&ref, B, S, x, &rmask, NULL, ref_y);
    test_assert_fp32_close(y, ref_y, N, "recorded y");

    vkFreeCommandBuffers(a.device, pool, 1, &cmd);
    vkDestroyCommandPool(a.device, pool, NULL);
    vkbert_tensor_destroy(ctx, tx), vkbert_tensor_destroy(ctx, ty);
    vkbert_tensor_destroy(ctx, tz), vkbert_tensor_destroy(ctx, tmask);
    vkbert_attention_destroy(layer);
    cr_expect_eq(vkbert_validation_messages(ctx, NULL, 0), 0);
    vkbert_context_destroy(ctx);
    test_weights_free(&w);
    free(want_y), free(want_z);
    app_buffer_free(&a, &buf);
    app_close(&a);
}
