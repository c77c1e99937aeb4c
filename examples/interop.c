/* vkbert inside a Vulkan program (include/vkbert_vulkan.h). The program makes its own
 * instance (validation with synchronization validation, a messenger that counts), device and
 * queue, and records into one command buffer: its own dispatch x = 2 * x0, vkbert's attention
 * layer y = attention(x), its own dispatch z = y + 0.5; one submission. It then checks y
 * against vkbert_attention_forward_host on 2 * x0, and z against y + 0.5 computed on the host
 * in double precision. Exit status 1 on any mismatch or validation message. */
#include <vkbert_vulkan.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t affine_spirv[] = {
#include "interop_affine.spv.inc"
};

enum { B = 2, S = 7, E = 12, H = 3 };

typedef struct program {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    uint32_t family;
    VkQueue queue;
    VkDeviceCreateInfo device_info;
    VkBuffer buffer; /* x0, x, y, z, each at an aligned offset */
    VkDeviceMemory memory;
    float *mapped;
    VkDeviceSize stride;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    VkDescriptorSet sets[2];
    VkCommandPool command_pool;
    VkCommandBuffer cmd;
} program;

static unsigned messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    (void)user;
    if ((type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) ||
        (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        messages++;
        fprintf(stderr, "validation: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        VkResult result_ = (call);                                                                 \
        if (result_ != VK_SUCCESS) {                                                               \
            fprintf(stderr, "%s failed: %d\n", #call, (int)result_);                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void make_instance(program *p)
{
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "vkbert interop example",
                             .apiVersion = VK_API_VERSION_1_1};
    const char *layer = "VK_LAYER_KHRONOS_validation", *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkDebugUtilsMessengerCreateInfoEXT messenger = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = on_message};
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .pNext = &messenger,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = &sync};
    VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                 .pNext = &features,
                                 .pApplicationInfo = &app,
                                 .enabledLayerCount = 1,
                                 .ppEnabledLayerNames = &layer,
                                 .enabledExtensionCount = 1,
                                 .ppEnabledExtensionNames = &ext};
    CHECK(vkCreateInstance(&info, NULL, &p->instance));
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(p->instance,
                                                                  "vkCreateDebugUtilsMessengerEXT");
    CHECK(create(p->instance, &messenger, NULL, &p->messenger));
}

static void make_device(program *p)
{
    uint32_t count = 1;
    vkEnumeratePhysicalDevices(p->instance, &count, &p->physical);
    if (count == 0) {
        fprintf(stderr, "no Vulkan device\n");
        exit(1);
    }
    VkQueueFamilyProperties families[16];
    count = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(p->physical, &count, families);
    for (p->family = 0; p->family < count; p->family++)
        if (families[p->family].queueFlags & VK_QUEUE_COMPUTE_BIT) break;
    static const float priority = 1.0f;
    static VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                            .queueCount = 1,
                                            .pQueuePriorities = &priority};
    queue.queueFamilyIndex = p->family;
    p->device_info = (VkDeviceCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                          .queueCreateInfoCount = 1,
                                          .pQueueCreateInfos = &queue};
    CHECK(vkCreateDevice(p->physical, &p->device_info, NULL, &p->device));
    vkGetDeviceQueue(p->device, p->family, 0, &p->queue);
}

/* One host-visible buffer for x0, x, y and z, each at an offset vkbert can bind. */
static void make_buffer(program *p, VkDeviceSize tensor_bytes)
{
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(p->physical, &props);
    VkDeviceSize align = props.limits.minStorageBufferOffsetAlignment;
    if (props.limits.minTexelBufferOffsetAlignment > align)
        align = props.limits.minTexelBufferOffsetAlignment;
    p->stride = (tensor_bytes + align - 1) / align * align;
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                               .size = 4 * p->stride,
                               .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                        VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT};
    CHECK(vkCreateBuffer(p->device, &info, NULL, &p->buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(p->device, p->buffer, &req);
    VkPhysicalDeviceMemoryProperties memory;
    vkGetPhysicalDeviceMemoryProperties(p->physical, &memory);
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = 0;
    while (type < memory.memoryTypeCount &&
           (!(req.memoryTypeBits & (1u << type)) ||
            (memory.memoryTypes[type].propertyFlags & want) != want))
        type++;
    VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                  .allocationSize = req.size,
                                  .memoryTypeIndex = type};
    CHECK(vkAllocateMemory(p->device, &alloc, NULL, &p->memory));
    CHECK(vkBindBufferMemory(p->device, p->buffer, p->memory, 0));
    CHECK(vkMapMemory(p->device, p->memory, 0, VK_WHOLE_SIZE, 0, (void **)&p->mapped));
}

static float *part(const program *p, int index)
{
    return p->mapped + index * p->stride / sizeof(float);
}

/* The affine kernel's pipeline, and one descriptor set per dispatch: x0 -> x, y -> z. */
static void make_pipeline(program *p)
{
    VkDescriptorSetLayoutBinding bindings[2] = {
        {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
        {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL}};
    VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 2,
        .pBindings = bindings};
    CHECK(vkCreateDescriptorSetLayout(p->device, &set_info, NULL, &p->set_layout));
    VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 12};
    VkPipelineLayoutCreateInfo layout_info = {.sType =
                                                  VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                              .setLayoutCount = 1,
                                              .pSetLayouts = &p->set_layout,
                                              .pushConstantRangeCount = 1,
                                              .pPushConstantRanges = &push};
    CHECK(vkCreatePipelineLayout(p->device, &layout_info, NULL, &p->layout));
    VkShaderModuleCreateInfo module_info = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                            .codeSize = sizeof affine_spirv,
                                            .pCode = affine_spirv};
    VkShaderModule module;
    CHECK(vkCreateShaderModule(p->device, &module_info, NULL, &module));
    VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = "main"},
        .layout = p->layout};
    CHECK(vkCreateComputePipelines(p->device, VK_NULL_HANDLE, 1, &info, NULL, &p->pipeline));
    vkDestroyShaderModule(p->device, module, NULL);

    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4};
    VkDescriptorPoolCreateInfo pool_info = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                            .maxSets = 2,
                                            .poolSizeCount = 1,
                                            .pPoolSizes = &size};
    CHECK(vkCreateDescriptorPool(p->device, &pool_info, NULL, &p->pool));
    VkDescriptorSetLayout layouts[2] = {p->set_layout, p->set_layout};
    VkDescriptorSetAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                         .descriptorPool = p->pool,
                                         .descriptorSetCount = 2,
                                         .pSetLayouts = layouts};
    CHECK(vkAllocateDescriptorSets(p->device, &alloc, p->sets));
    int parts[2][2] = {{0, 1}, {2, 3}}; /* x0 -> x, y -> z */
    for (int s = 0; s < 2; s++) {
        VkDescriptorBufferInfo buffers[2];
        VkWriteDescriptorSet writes[2];
        for (int b = 0; b < 2; b++) {
            buffers[b] = (VkDescriptorBufferInfo){p->buffer, parts[s][b] * p->stride, p->stride};
            writes[b] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                               .dstSet = p->sets[s],
                                               .dstBinding = (uint32_t)b,
                                               .descriptorCount = 1,
                                               .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                               .pBufferInfo = &buffers[b]};
        }
        vkUpdateDescriptorSets(p->device, 2, writes, 0, NULL);
    }
}

static void affine(const program *p, int set, float scale, float shift)
{
    struct {
        uint32_t n;
        float scale, shift;
    } push = {(uint32_t)(p->stride / sizeof(float)), scale, shift};
    vkCmdBindPipeline(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
    vkCmdBindDescriptorSets(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &p->sets[set],
                            0, NULL);
    vkCmdPushConstants(p->cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
    vkCmdDispatch(p->cmd, (push.n + 63) / 64, 1, 1);
}

static void barrier(const program *p, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access)
{
    VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                         .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                         .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(p->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, dst_stage, 0, 1, &b, 0, NULL,
                         0, NULL);
}

static float random_uniform(uint64_t *state) /* in [-0.5, 0.5) */
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*state >> 40) / (double)(1ull << 24)) - 0.5f;
}

static vkbert_attention *make_layer(vkbert_context *ctx, float *storage)
{
    uint64_t state = 7;
    for (int i = 0; i < 4 * (E * E + E); i++)
        storage[i] = random_uniform(&state);
    vkbert_attention_weights w = VKBERT_ATTENTION_WEIGHTS_INIT;
    const float **fields[8] = {&w.q_weight, &w.q_bias, &w.k_weight,   &w.k_bias,
                               &w.v_weight, &w.v_bias, &w.out_weight, &w.out_bias};
    for (int i = 0; i < 8; i++)
        *fields[i] = storage + (i / 2) * (E * E + E) + (i % 2) * E * E;
    vkbert_attention *layer = NULL;
    if (vkbert_attention_create(ctx, E, H, &w, NULL, &layer) != VKBERT_OK) {
        fprintf(stderr, "vkbert_attention_create: %s\n", vkbert_last_error(ctx));
        exit(1);
    }
    return layer;
}

/* One command buffer: x = 2 * x0 (ours), y = attention(x) (vkbert's), z = y + 0.5 (ours). */
static void record(program *p, vkbert_context *vkbert_ctx, vkbert_attention *layer,
                   vkbert_tensor *x, vkbert_tensor *y)
{
    VkCommandPoolCreateInfo pool_info = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                         .queueFamilyIndex = p->family};
    CHECK(vkCreateCommandPool(p->device, &pool_info, NULL, &p->command_pool));
    VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .commandPool = p->command_pool,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                         .commandBufferCount = 1};
    CHECK(vkAllocateCommandBuffers(p->device, &alloc, &p->cmd));
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK(vkBeginCommandBuffer(p->cmd, &begin));
    affine(p, 0, 2.0f, 0.0f);
    /* The barriers vkbert_vulkan.h says the caller owes, before and after. */
    barrier(p, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    vkbert_status status = vkbert_attention_record(layer, p->cmd, x, NULL, NULL, y);
    if (status != VKBERT_OK) {
        fprintf(stderr, "vkbert_attention_record: %s\n", vkbert_last_error(vkbert_ctx));
        exit(1);
    }
    barrier(p, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    affine(p, 1, 1.0f, 0.5f); /* rebinds its own pipeline: vkbert bound others */
    barrier(p, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    CHECK(vkEndCommandBuffer(p->cmd));
}

static void submit(const program *p)
{
    VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    CHECK(vkCreateFence(p->device, &fence_info, NULL, &fence));
    VkSubmitInfo info = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                         .commandBufferCount = 1,
                         .pCommandBuffers = &p->cmd};
    CHECK(vkQueueSubmit(p->queue, 1, &info, fence));
    CHECK(vkWaitForFences(p->device, 1, &fence, VK_TRUE, UINT64_MAX));
    vkDestroyFence(p->device, fence, NULL);
}

/* y against vkbert's own forward of 2 * x0; z against y + 0.5 in double precision. */
static int check(const program *p, vkbert_attention *layer, const float *x0)
{
    static float x2[B * S * E], want[B * S * E];
    for (int i = 0; i < B * S * E; i++)
        x2[i] = 2.0f * x0[i];
    if (vkbert_attention_forward_host(layer, B, S, x2, NULL, NULL, want) != VKBERT_OK) {
        fprintf(stderr, "forward_host failed\n");
        return 1;
    }
    int pitch = (E + 3) / 4 * 4, bad = 0;
    for (int r = 0; r < B * S; r++)
        for (int c = 0; c < E; c++) {
            double y = part(p, 2)[r * pitch + c], z = part(p, 3)[r * pitch + c];
            double w = want[r * E + c];
            if (!(fabs(y - w) <= 1e-5 * (1.0 + fabs(w))) || !(fabs(z - (y + 0.5)) <= 1e-6)) bad++;
        }
    if (bad) fprintf(stderr, "%d of %d values differ\n", bad, B * S * E);
    return bad != 0;
}

static void release(program *p)
{
    vkDestroyCommandPool(p->device, p->command_pool, NULL);
    vkDestroyDescriptorPool(p->device, p->pool, NULL);
    vkDestroyPipeline(p->device, p->pipeline, NULL);
    vkDestroyPipelineLayout(p->device, p->layout, NULL);
    vkDestroyDescriptorSetLayout(p->device, p->set_layout, NULL);
    vkDestroyBuffer(p->device, p->buffer, NULL);
    vkFreeMemory(p->device, p->memory, NULL);
    vkDestroyDevice(p->device, NULL);
    PFN_vkDestroyDebugUtilsMessengerEXT destroy =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            p->instance, "vkDestroyDebugUtilsMessengerEXT");
    destroy(p->instance, p->messenger, NULL);
    vkDestroyInstance(p->instance, NULL);
}

int main(void)
{
    program p = {0};
    make_instance(&p);
    make_device(&p);
    vkbert_vulkan_device device = VKBERT_VULKAN_DEVICE_INIT;
    device.instance = p.instance;
    device.api_version = VK_API_VERSION_1_1;
    device.physical_device = p.physical;
    device.device = p.device;
    device.device_info = &p.device_info;
    device.queue_family = p.family;
    device.queue = p.queue;
    vkbert_context_options options = VKBERT_CONTEXT_OPTIONS_INIT;
    options.validation = 1; /* counts our instance's messages */
    vkbert_context *ctx = NULL;
    if (vkbert_context_create_vulkan(&options, &device, &ctx) != VKBERT_OK) {
        fprintf(stderr, "vkbert_context_create_vulkan: %s\n", vkbert_last_error(NULL));
        return 1;
    }
    static float weights[4 * (E * E + E)], x0[B * S * E];
    vkbert_attention *layer = make_layer(ctx, weights);
    int64_t shape[3] = {B, S, E};
    make_buffer(&p, vkbert_tensor_bytes(3, shape));
    make_pipeline(&p);
    uint64_t state = 11;
    int pitch = (E + 3) / 4 * 4;
    memset(p.mapped, 0, 4 * p.stride);
    for (int r = 0; r < B * S; r++)
        for (int c = 0; c < E; c++)
            part(&p, 0)[r * pitch + c] = x0[r * E + c] = random_uniform(&state);
    vkbert_tensor *x = NULL, *y = NULL;
    if (vkbert_tensor_wrap_vulkan(ctx, p.buffer, p.stride, p.stride, 3, shape, &x) ||
        vkbert_tensor_wrap_vulkan(ctx, p.buffer, 2 * p.stride, p.stride, 3, shape, &y)) {
        fprintf(stderr, "vkbert_tensor_wrap_vulkan: %s\n", vkbert_last_error(ctx));
        return 1;
    }
    record(&p, ctx, layer, x, y);
    submit(&p);
    int failed = check(&p, layer, x0);
    vkbert_tensor_destroy(ctx, x);
    vkbert_tensor_destroy(ctx, y);
    vkbert_attention_destroy(layer);
    vkbert_context_destroy(ctx);
    release(&p); /* vkbert left nothing on the device, or validation says so here */
    if (messages) fprintf(stderr, "%u validation messages\n", messages);
    printf("interop: %s, %u validation messages\n", failed ? "MISMATCH" : "matches", messages);
    return failed || messages ? 1 : 0;
}
