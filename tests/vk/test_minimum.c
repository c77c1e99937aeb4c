/* The smallest conformant device, which vkbert must run on: `minimum` in VKBERT_LIMITS or the
 * limits option caps every limit vkbert reads at what Vulkan 1.1 requires and turns off what it
 * does not require; each feature switch also works alone. The kernels chosen must fit, and a
 * BERT-base-sized encoder must still match the double-precision reference. Run once per
 * kernel family (VKBERT_KERNELS); the attention and encoder tests also run whole under
 * VKBERT_LIMITS=minimum (tests/CMakeLists.txt). */
#include "nn/attention/attention.h"
#include "nn/encoder/encoder.h"
#include "reference_bert.h"
#include "support.h"
#include "tune/tune.h"
#include "vk/vk.h"

#include <stdlib.h>
#include <string.h>

/* What the driver itself reports, below any cap. */
static VkPhysicalDeviceProperties driver_props(const vkbert_context *ctx)
{
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(ctx->physical, &props);
    return props;
}

static VkSubgroupFeatureFlags driver_subgroup_operations(const vkbert_context *ctx)
{
    VkPhysicalDeviceSubgroupProperties subgroup = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                         .pNext = &subgroup};
    vkGetPhysicalDeviceProperties2(ctx->physical, &props);
    return subgroup.supportedOperations;
}

/* The Vulkan 1.1 specification's required limits ("Required Limits" table; the same numbers
 * are in docs/drivers.md), for each limit vkbert reads. */
#define REQUIRED(field, value)                                                                     \
    {                                                                                              \
#field, offsetof(VkPhysicalDeviceLimits, field), value                                     \
    }
static const struct {
    const char *name;
    size_t offset;
    uint32_t value;
} required[] = {
    REQUIRED(maxStorageBufferRange, 134217728),
    REQUIRED(maxComputeSharedMemorySize, 16384),
    REQUIRED(maxComputeWorkGroupCount[0], 65535),
    REQUIRED(maxComputeWorkGroupCount[1], 65535),
    REQUIRED(maxComputeWorkGroupCount[2], 65535),
    REQUIRED(maxComputeWorkGroupInvocations, 128),
    REQUIRED(maxComputeWorkGroupSize[0], 128),
    REQUIRED(maxComputeWorkGroupSize[1], 128),
    REQUIRED(maxComputeWorkGroupSize[2], 64),
    REQUIRED(maxPerStageDescriptorStorageBuffers, 4),
    REQUIRED(maxPerStageDescriptorSampledImages, 16),
    REQUIRED(maxPerStageResources, 128),
    REQUIRED(maxTexelBufferElements, 65536),
    REQUIRED(maxPushConstantsSize, 128),
    REQUIRED(maxBoundDescriptorSets, 4),
    REQUIRED(maxMemoryAllocationCount, 4096),
};
#undef REQUIRED

static uint32_t limit_at(const VkPhysicalDeviceLimits *limits, size_t offset)
{
    return *(const uint32_t *)((const char *)limits + offset);
}

static void assert_minimum(const vkbert_context *ctx, const char *how)
{
    VkPhysicalDeviceProperties driver = driver_props(ctx);
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        uint32_t own = limit_at(&driver.limits, required[i].offset);
        uint32_t want = own < required[i].value ? own : required[i].value;
        cr_assert_eq(limit_at(&ctx->props.limits, required[i].offset), want, "%s: %s is %u, not %u",
                     how, required[i].name, limit_at(&ctx->props.limits, required[i].offset), want);
    }
    /* Alignments the other way: Vulkan allows devices to demand up to 256. */
    cr_assert_geq(ctx->props.limits.minStorageBufferOffsetAlignment, 256u, "%s", how);
    cr_assert_geq(ctx->props.limits.minTexelBufferOffsetAlignment, 256u, "%s", how);
    cr_assert_leq(ctx->max_allocation, 1ull << 30, "%s: maxMemoryAllocationSize", how);
    cr_assert_eq(ctx->subgroup.supportedOperations,
                 driver_subgroup_operations(ctx) & VK_SUBGROUP_FEATURE_BASIC_BIT, "%s", how);
    cr_assert(!ctx->subgroup_arithmetic, "%s: subgroup arithmetic still on", how);
    cr_assert(!ctx->full_subgroups && !ctx->subgroup_size_control,
              "%s: subgroup size control still on", how);
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    TEST_OK(vkbert_context_device(ctx, &info));
    cr_assert_eq(info.fp16_storage, 0, "%s", how);
    cr_assert_eq(info.fp16_arithmetic, 0, "%s", how);
    cr_assert_leq(info.shared_memory_bytes, 16384u, "%s", how);
    cr_assert_leq(info.max_storage_buffer_range, 134217728u, "%s", how);
    cr_assert_leq(info.max_storage_buffers, 4u, "%s", how);
    cr_assert_leq(info.max_workgroup_invocations, 128u, "%s", how);
}

Test(minimum, caps_every_limit_at_vulkan_1_1)
{
    vkbert_context *ctx = test_context_limited("minimum");
    assert_minimum(ctx, "the option");
    test_context_done(ctx);
    setenv("VKBERT_LIMITS", "minimum", 1);
    ctx = test_context_limited(NULL);
    assert_minimum(ctx, "VKBERT_LIMITS");
    test_context_done(ctx);
    unsetenv("VKBERT_LIMITS");
}

Test(minimum, combines_with_other_items)
{
    /* Caps only lower: the smaller value wins in either order. */
    const char *lists[] = {"minimum,max_storage_buffer_range=1m",
                           "max_storage_buffer_range=1m,minimum"};
    for (int i = 0; i < 2; i++) {
        vkbert_context *ctx = test_context_limited(lists[i]);
        cr_assert_eq(ctx->props.limits.maxStorageBufferRange, 1u << 20, "%s", lists[i]);
        cr_assert_leq(ctx->props.limits.maxComputeWorkGroupInvocations, 128u, "%s", lists[i]);
        test_context_done(ctx);
    }
    setenv("VKBERT_LIMITS", "minimum", 1);
    vkbert_context *ctx = test_context_limited("max_compute_shared_memory_size=8k");
    cr_assert_eq(ctx->props.limits.maxComputeSharedMemorySize, 8192u);
    cr_assert_leq(ctx->props.limits.maxTexelBufferElements, 65536u);
    test_context_done(ctx);
    unsetenv("VKBERT_LIMITS");
}

/* Each switch turns off its feature and nothing else. */
Test(switches, each_alone)
{
    vkbert_context *plain = test_context_limited(NULL);
    vkbert_device_info own = VKBERT_DEVICE_INFO_INIT;
    TEST_OK(vkbert_context_device(plain, &own));
    bool own_texels = plain->fp16_texels, own_arithmetic = plain->subgroup_arithmetic;
    VkSubgroupFeatureFlags own_ops = plain->subgroup.supportedOperations;
    uint32_t own_range = plain->props.limits.maxStorageBufferRange;
    test_context_done(plain);

    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    vkbert_context *ctx = test_context_limited("fp16_storage=0");
    TEST_OK(vkbert_context_device(ctx, &info));
    cr_assert(!info.fp16_storage && info.fp16_arithmetic == own.fp16_arithmetic);
    cr_assert(ctx->fp16_texels == own_texels && ctx->subgroup.supportedOperations == own_ops);
    cr_assert_eq(ctx->props.limits.maxStorageBufferRange, own_range);
    test_context_done(ctx);

    ctx = test_context_limited("fp16_arithmetic=0");
    TEST_OK(vkbert_context_device(ctx, &info));
    cr_assert(!info.fp16_arithmetic && info.fp16_storage == own.fp16_storage);
    test_context_done(ctx);

    ctx = test_context_limited("fp16_texels=0");
    TEST_OK(vkbert_context_device(ctx, &info));
    cr_assert(!ctx->fp16_texels && info.fp16_storage == own.fp16_storage);
    test_context_done(ctx);

    ctx = test_context_limited("subgroup_operations=basic");
    cr_assert_eq(ctx->subgroup.supportedOperations, own_ops & VK_SUBGROUP_FEATURE_BASIC_BIT);
    cr_assert(!ctx->subgroup_arithmetic);
    TEST_OK(vkbert_context_device(ctx, &info));
    cr_assert(info.fp16_storage == own.fp16_storage);
    test_context_done(ctx);

    ctx = test_context_limited("subgroup_operations=arithmetic+shuffle");
    VkSubgroupFeatureFlags kept = VK_SUBGROUP_FEATURE_BASIC_BIT |
                                  VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                                  VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    cr_assert_eq(ctx->subgroup.supportedOperations, own_ops & kept);
    cr_assert_eq(ctx->subgroup_arithmetic, own_arithmetic);
    test_context_done(ctx);

    ctx = test_context_limited("subgroup_size_control=0");
    cr_assert(!ctx->full_subgroups && !ctx->subgroup_size_control);
    cr_assert(ctx->subgroup.supportedOperations == own_ops && ctx->fp16_texels == own_texels);
    test_context_done(ctx);

    ctx = test_context_limited("fp16_storage=1,fp16_texels=1"); /* 1: as the device has it */
    TEST_OK(vkbert_context_device(ctx, &info));
    cr_assert(info.fp16_storage == own.fp16_storage && ctx->fp16_texels == own_texels);
    test_context_done(ctx);
}

Test(switches, bad_values_are_refused)
{
    test_limits_refused("fp16_storage=2", "fp16_storage takes 0 (off) or 1");
    test_limits_refused("fp16_texels=", "fp16_texels takes 0");
    test_limits_refused("subgroup_size_control=yes", "subgroup_size_control takes 0");
    test_limits_refused("subgroup_operations=basic+nonsense",
                        "unknown subgroup operation \"nonsense\"");
    test_limits_refused("subgroup_operations=", "unknown subgroup operation \"\"");
    test_limits_refused("subgroup_operations=shuffle+", "unknown subgroup operation \"\"");
    test_limits_refused("min_storage_buffer_offset_alignment=48", "a power of two up to 256");
    test_limits_refused("min_texel_buffer_offset_alignment=512", "a power of two up to 256");
    test_limits_refused("minimum=1", "unknown limit \"minimum\"");
    test_limits_refused("minimal", "not name=value");
    test_limits_refused("fp16=0", "unknown limit \"fp16\"");
}

/* ---- the kernels chosen ---- */

/* Whether a pipeline's module declares a SPIR-V capability. Capabilities open every module,
 * right after its five-word header (SPIR-V 2.4, logical layout); OpCapability is opcode 17,
 * two words. */
static bool declares(const vkb_pipeline *p, uint32_t capability)
{
    const uint32_t *w = p->shader->code;
    for (size_t i = 5; (w[i] & 0xffff) == 17; i += w[i] >> 16)
        if (w[i + 1] == capability) return true;
    return false;
}

enum {
    CAP_FLOAT16 = 9,
    CAP_SUBGROUP_VOTE = 62, /* GroupNonUniformVote ... Quad: 62 to 68 */
    CAP_SUBGROUP_ARITHMETIC = 63,
    CAP_SUBGROUP_QUAD = 68,
    CAP_STORAGE_BUFFER_16BIT = 4433
};

typedef struct kernels_seen {
    int arithmetic, beyond_basic, fp16;
    int over_128, shared_over_16k;
} kernels_seen;

/* Workgroup sizes and shared memory from the shaders' declarations. The matmul modules (by
 * name) have the workgroup (0) x (1) (src/ops/matmul.c); matmul_gpu,
 * with a slice depth BK (6) > 0, holds As[BK * (WG_Y * TM / 4 + 1)] and Bs[BK * (WG_X * TN4 +
 * 1)] vec4 (1, 2, 0, 3). Every other kernel is (0) wide, with at most one float of shared
 * memory per invocation (shaders/reduce.glsl). */
static void look_at(const vkb_dispatch *d, uint32_t count, kernels_seen *seen)
{
    for (uint32_t i = 0; i < count; i++) {
        const vkb_pipeline *p = d[i].pipeline;
        const uint32_t *spec = p->spec;
        bool matmul = !strncmp(p->shader->name, "matmul", 6);
        uint32_t invocations = matmul ? spec[0] * spec[1] : spec[0];
        uint64_t shared = 4ull * invocations;
        if (matmul)
            shared = (uint64_t)spec[6] * (spec[1] * spec[2] / 4 + 1 + spec[0] * spec[3] + 1) * 16;
        seen->arithmetic += declares(p, CAP_SUBGROUP_ARITHMETIC);
        for (uint32_t c = CAP_SUBGROUP_VOTE; c <= CAP_SUBGROUP_QUAD; c++)
            seen->beyond_basic += declares(p, c);
        seen->fp16 += declares(p, CAP_FLOAT16) || declares(p, CAP_STORAGE_BUFFER_16BIT);
        seen->over_128 += invocations > 128;
        seen->shared_over_16k += shared > 16384;
    }
}

/* A small random encoder over a padded batch against the double reference; what its plan
 * dispatched goes to `seen`. */
static void check_small_encoder(vkbert_context *ctx, kernels_seen *seen)
{
    bert_config c = tiny_bert_config(64, 2, 4, 132, 16, 60);
    bert_weights w;
    cr_assert_eq(bert_weights_random(&c, 21, &w), 0);
    vkbert_encoder *encoder = NULL;
    vkbert_status loaded = vkb_encoder_new(ctx, &c, &w, VKBERT_PRECISION_FP32, &encoder);
    TEST_OK(loaded);
    enum { batch = 2, seq = 11, n = batch * seq };
    int32_t ids[n], mask[n];
    for (int i = 0; i < n; i++) {
        ids[i] = (i * 17 + 3) % c.vocab_size;
        mask[i] = i % seq < seq - 4 * (i / seq); /* the second sequence is 4 tokens shorter */
    }
    float *hidden = test_poisoned(n * 64);
    double *want = malloc(n * 64 * sizeof *want);
    TEST_OK(vkbert_encoder_forward_host(encoder, batch, seq, ids, NULL, mask, hidden, NULL));
    ref_bert(&c, &w, batch, seq, ids, NULL, mask, want, NULL);
    ref_error e = ref_compare(hidden, want, n * 64);
    cr_assert(e.relative_l2 <= 1e-4, "relative L2 %.3g > 1e-4", e.relative_l2);
    look_at(encoder->plan->dispatches, encoder->plan->dispatch_count, seen);
    vkbert_encoder_destroy(encoder);
    bert_weights_free(&w);
    free(hidden), free(want);
}

/* Where the device has subgroup arithmetic, the reductions use it; with the operations
 * beyond basic switched off, no kernel uses any (arithmetic, nor the shuffles that share rows
 * in the simd family), and the answers stay right. */
Test(switches, subgroup_operations_choose_the_kernels)
{
    vkbert_context *ctx = test_context_limited(NULL);
    bool arithmetic = ctx->subgroup_arithmetic;
    kernels_seen seen = {0};
    check_small_encoder(ctx, &seen);
    test_context_done(ctx);
    cr_assert_eq(seen.arithmetic > 0, arithmetic, "%d kernels with subgroup arithmetic",
                 seen.arithmetic);

    ctx = test_context_limited("subgroup_operations=basic");
    seen = (kernels_seen){0};
    check_small_encoder(ctx, &seen);
    test_context_done(ctx);
    cr_assert_eq(seen.beyond_basic, 0, "a kernel used subgroup operations beyond basic");
}

/* Texel buffers count as sampled images: a device allowing one per stage cannot run the simd
 * matmul (two), which falls back to the storage-buffer kernel; one allowing too few resources
 * per stage for any kernel refuses the work, naming the limit. */
Test(limits, texel_and_resource_counts)
{
    vkbert_context *ctx = test_context_limited("max_per_stage_descriptor_sampled_images=1");
    vkb_matmul_tiles t = vkb_tune_matmul(ctx, 64, 64, 64, 1024, 1024);
    cr_assert_eq(t.family, VKB_FAMILY_GPU, "the simd matmul chosen with one texel binding");
    kernels_seen seen = {0};
    check_small_encoder(ctx, &seen);
    test_context_done(ctx);

    ctx = test_context_limited("max_per_stage_resources=2");
    test_weights w = test_weights_random(32, 4);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer = NULL;
    TEST_OK(vkbert_attention_create(ctx, 32, 2, &api, NULL, &layer));
    float x[3 * 32] = {0}, y[3 * 32];
    cr_assert_eq(vkbert_attention_forward_host(layer, 1, 3, x, NULL, NULL, y),
                 VKBERT_ERROR_DEVICE_LIMIT);
    cr_assert(strstr(vkbert_last_error(ctx), "maxPerStageResources"), "%s", vkbert_last_error(ctx));
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    test_context_done(ctx);
}

/* A workgroup-size limit that is not a power of two (24 here) must not make one: the
 * reductions' shared-memory trees need powers of two. With subgroup arithmetic off, every
 * reduction takes that tree. */
Test(limits, workgroup_size_not_a_power_of_two)
{
    vkbert_context *ctx =
        test_context_limited("max_compute_work_group_size=24,subgroup_operations=basic");
    uint32_t size = vkb_tune_softmax_workgroup(ctx, 768);
    cr_assert(size <= 24 && (size & (size - 1)) == 0, "workgroup of %u", size);
    kernels_seen seen = {0};
    check_small_encoder(ctx, &seen);
    test_context_done(ctx);
}

/* ---- BERT-base on the smallest device ---- */

/* Hidden 768, 12 heads, intermediate 3072, 12 layers, on short padded sequences, against the
 * double reference. Two random layers repeat six times each, which keeps the host's copy of
 * the weights (and the reference's time) small; the device still holds all twelve (340 MB). */
Test(minimum, bert_base_encoder, .timeout = 600)
{
    vkbert_context *ctx = test_context_limited("minimum");
    bert_config c = tiny_bert_config(768, 2, 12, 3072, 64, 200);
    bert_weights two;
    cr_assert_eq(bert_weights_random(&c, 12, &two), 0);
    bert_weights w = two;
    c.num_hidden_layers = w.num_layers = 12;
    w.layers = malloc(12 * sizeof *w.layers);
    for (int i = 0; i < 12; i++)
        w.layers[i] = two.layers[i % 2];
    vkbert_encoder *encoder = NULL;
    vkbert_status loaded = vkb_encoder_new(ctx, &c, &w, VKBERT_PRECISION_FP32, &encoder);
    TEST_OK(loaded);

    enum { batch = 2, seq = 13, n = batch * seq, h = 768 };
    int32_t ids[n], types[n], mask[n];
    ref_rng rng = {5};
    for (int i = 0; i < n; i++) {
        ids[i] = (int32_t)ref_uniform(&rng, 0, c.vocab_size);
        types[i] = i % seq > 6;
        mask[i] = i % seq < seq - 5 * (i / seq);
    }
    float *hidden = test_poisoned(n * h), *pooled = test_poisoned(batch * h);
    double *want = malloc(n * h * sizeof *want), *want_pooled = malloc(batch * h * sizeof *want);
    vkbert_status status =
        vkbert_encoder_forward_host(encoder, batch, seq, ids, types, mask, hidden, pooled);
    cr_assert_eq(status, VKBERT_OK, "forward: %s", vkbert_last_error(ctx));
    ref_bert(&c, &w, batch, seq, ids, types, mask, want, want_pooled);
    ref_error e = ref_compare(hidden, want, n * h),
              ep = ref_compare(pooled, want_pooled, batch * h);
    cr_assert(e.relative_l2 <= 1e-4, "hidden: relative L2 %.3g > 1e-4", e.relative_l2);
    cr_assert(ep.relative_l2 <= 1e-4, "pooled: relative L2 %.3g > 1e-4", ep.relative_l2);

    kernels_seen seen = {0};
    look_at(encoder->plan->dispatches, encoder->plan->dispatch_count, &seen);
    cr_assert_eq(seen.over_128, 0, "%d kernels over 128 invocations", seen.over_128);
    cr_assert_eq(seen.shared_over_16k, 0, "%d kernels over 16 KiB of shared memory",
                 seen.shared_over_16k);
    cr_assert_eq(seen.beyond_basic, 0, "subgroup operations beyond basic");
    cr_assert_eq(seen.fp16, 0, "16-bit storage or arithmetic");

    vkbert_encoder_destroy(encoder);
    free(w.layers);
    bert_weights_free(&two);
    free(hidden), free(pooled), free(want), free(want_pooled);
    test_context_done(ctx);
}
