/* vkbert inside a Vulkan program (include/vkbert_vulkan.h). The program makes its own
 * instance (validation with synchronization validation, a messenger that counts), device and
 * queue, and records into one command buffer: its own dispatch x = 2 * x0, vkbert's attention
 * layer y = attention(x), its own dispatch z = y + 0.5; one submission. It then checks y
 * against vkbert_attention_forward_host on 2 * x0, and z against y + 0.5 computed on the host
 * in double precision. Exit status 1 on any mismatch or validation message. */
#include "vulkan_app.h" /* the program's own Vulkan setup, beside this file */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t affine_spirv[] = {
#include "interop_affine.spv.inc"
};

enum { B = 2, S = 7, E = 12, H = 3 };

typedef struct program {
    vulkan_app app;
    vulkan_app_buffer buf; /* x0, x, y, z, each at an aligned offset */
    VkDeviceSize stride;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    VkDescriptorSet sets[2];
    VkCommandPool command_pool;
    VkCommandBuffer cmd;
} program;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        VkResult result_ = (call);                                                                 \
        if (result_ != VK_SUCCESS) {                                                               \
            fprintf(stderr, "%s failed: %d\n", #call, (int)result_);                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* One host-visible buffer for x0, x, y and z, each at an offset vkbert can bind. */
static void make_buffer(program *p, VkDeviceSize tensor_bytes)
{
    VkDeviceSize align = vulkan_app_alignment(&p->app);
    p->stride = (tensor_bytes + align - 1) / align * align;
    CHECK(vulkan_app_buffer_new(&p->app, 4 * p->stride, &p->buf));
}

static float *part(const program *p, int index)
{
    return (float *)p->buf.mapped + index * p->stride / sizeof(float);
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
    CHECK(vkCreateDescriptorSetLayout(p->app.device, &set_info, NULL, &p->set_layout));
    VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 12};
    VkPipelineLayoutCreateInfo layout_info = {.sType =
                                                  VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                              .setLayoutCount = 1,
                                              .pSetLayouts = &p->set_layout,
                                              .pushConstantRangeCount = 1,
                                              .pPushConstantRanges = &push};
    CHECK(vkCreatePipelineLayout(p->app.device, &layout_info, NULL, &p->layout));
    VkShaderModuleCreateInfo module_info = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                            .codeSize = sizeof affine_spirv,
                                            .pCode = affine_spirv};
    VkShaderModule module;
    CHECK(vkCreateShaderModule(p->app.device, &module_info, NULL, &module));
    VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = "main"},
        .layout = p->layout};
    CHECK(vkCreateComputePipelines(p->app.device, VK_NULL_HANDLE, 1, &info, NULL, &p->pipeline));
    vkDestroyShaderModule(p->app.device, module, NULL);

    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4};
    VkDescriptorPoolCreateInfo pool_info = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                            .maxSets = 2,
                                            .poolSizeCount = 1,
                                            .pPoolSizes = &size};
    CHECK(vkCreateDescriptorPool(p->app.device, &pool_info, NULL, &p->pool));
    VkDescriptorSetLayout layouts[2] = {p->set_layout, p->set_layout};
    VkDescriptorSetAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                         .descriptorPool = p->pool,
                                         .descriptorSetCount = 2,
                                         .pSetLayouts = layouts};
    CHECK(vkAllocateDescriptorSets(p->app.device, &alloc, p->sets));
    int parts[2][2] = {{0, 1}, {2, 3}}; /* x0 -> x, y -> z */
    for (int s = 0; s < 2; s++) {
        VkDescriptorBufferInfo buffers[2];
        VkWriteDescriptorSet writes[2];
        for (int b = 0; b < 2; b++) {
            buffers[b] =
                (VkDescriptorBufferInfo){p->buf.buffer, parts[s][b] * p->stride, p->stride};
            writes[b] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                               .dstSet = p->sets[s],
                                               .dstBinding = (uint32_t)b,
                                               .descriptorCount = 1,
                                               .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                               .pBufferInfo = &buffers[b]};
        }
        vkUpdateDescriptorSets(p->app.device, 2, writes, 0, NULL);
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
    vulkan_app_barrier(p->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                       dst_stage, dst_access);
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
    CHECK(vulkan_app_commands(p->app.device, p->app.family, &p->command_pool, &p->cmd));
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
    vkDestroyCommandPool(p->app.device, p->command_pool, NULL);
    vkDestroyDescriptorPool(p->app.device, p->pool, NULL);
    vkDestroyPipeline(p->app.device, p->pipeline, NULL);
    vkDestroyPipelineLayout(p->app.device, p->layout, NULL);
    vkDestroyDescriptorSetLayout(p->app.device, p->set_layout, NULL);
    vulkan_app_buffer_free(&p->app, &p->buf);
    vulkan_app_close(&p->app);
}

int main(void)
{
    program p = {0};
    p.app.api_version = VK_API_VERSION_1_1;
    CHECK(vulkan_app_instance(&p.app, 1));
    CHECK(vulkan_app_device(&p.app, NULL));
    vkbert_vulkan_device device = vulkan_app_description(&p.app);
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
    memset(p.buf.mapped, 0, 4 * p.stride);
    for (int r = 0; r < B * S; r++)
        for (int c = 0; c < E; c++)
            part(&p, 0)[r * pitch + c] = x0[r * E + c] = random_uniform(&state);
    vkbert_tensor *x = NULL, *y = NULL;
    if (vkbert_tensor_wrap_vulkan(ctx, p.buf.buffer, p.stride, p.stride, 3, shape, &x) ||
        vkbert_tensor_wrap_vulkan(ctx, p.buf.buffer, 2 * p.stride, p.stride, 3, shape, &y)) {
        fprintf(stderr, "vkbert_tensor_wrap_vulkan: %s\n", vkbert_last_error(ctx));
        return 1;
    }
    record(&p, ctx, layer, x, y);
    CHECK(vulkan_app_submit(p.app.device, p.app.queue, p.cmd));
    int failed = check(&p, layer, x0);
    vkbert_tensor_destroy(ctx, x);
    vkbert_tensor_destroy(ctx, y);
    vkbert_attention_destroy(layer);
    vkbert_context_destroy(ctx);
    release(&p); /* vkbert left nothing on the device, or validation says so here */
    unsigned messages = p.app.messages;
    if (messages) fprintf(stderr, "%u validation messages\n", messages);
    printf("interop: %s, %u validation messages\n", failed ? "MISMATCH" : "matches", messages);
    return failed || messages ? 1 : 0;
}
