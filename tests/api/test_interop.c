/* vkbert on the test's own Vulkan instance, device and queue (vkbert_vulkan.h): features seen
 * as enabled, nothing of the caller's destroyed, wrapped buffers, recording into the test's
 * command buffer against the layer's own forward and the double-precision reference. */
#include "support.h"
#include "vk/vk.h" /* volk first: the test calls Vulkan through the library's loader */

#include "vulkan_app.h" /* examples/ */

#include <stdlib.h>
#include <string.h>

/* A device with `chain` (a feature structure chain, may be NULL) enabled, and its queue. */
static void app_device(vulkan_app *a, void *chain)
{
    VkResult result = vulkan_app_device(a, chain);
    cr_assert_eq(result, VK_SUCCESS, "no device with a compute queue: %d", (int)result);
}

/* The test's own program (the example's, examples/vulkan_app.h): an instance, with validation
 * where asked, and a device without features. */
static void app_open(vulkan_app *a, bool debug_utils)
{
    cr_assert_eq(volkInitialize(), VK_SUCCESS);
    a->api_version =
        volkGetInstanceVersion() >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_1;
    cr_assert_eq(vulkan_app_instance(a, debug_utils), VK_SUCCESS, "vkCreateInstance");
    volkLoadInstance(a->instance);
    app_device(a, NULL);
}

static void app_close(vulkan_app *a)
{
    vulkan_app_close(a);
    cr_assert_eq(a->messages, 0, "validation spoke %u times", a->messages);
}

static vkbert_context *external_context(const vulkan_app *a)
{
    vkbert_vulkan_device d = vulkan_app_description(a);
    vkbert_context_options options = VKBERT_CONTEXT_OPTIONS_INIT;
    options.validation = a->messenger != VK_NULL_HANDLE;
    vkbert_context *ctx = NULL;
    vkbert_status status = vkbert_context_create_vulkan(&options, &d, &ctx);
    cr_assert_eq(status, VKBERT_OK, "context: %s", vkbert_last_error(NULL));
    return ctx;
}

Test(interop, sees_only_enabled_features)
{
    vulkan_app a = {0};
    app_open(&a, true);
    vkbert_context *ctx = external_context(&a);
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
    app_device(&a, &all);
    ctx = external_context(&a);
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
    vulkan_app a = {0};
    app_open(&a, true);
    for (int round = 0; round < 2; round++) {
        vkbert_context *ctx = external_context(&a);
        forward_checked(ctx, 11 + round);
        cr_assert_eq(vkbert_validation_messages(ctx, NULL, 0), 0);
        vkbert_context_destroy(ctx);
    }
    app_close(&a); /* vkDestroyDevice with a child left would be reported */
}

static vulkan_app_buffer app_buffer(const vulkan_app *a, VkDeviceSize size)
{
    vulkan_app_buffer b = {0};
    cr_assert_eq(vulkan_app_buffer_new(a, size, &b), VK_SUCCESS, "no host-visible buffer");
    return b;
}

/* vkbert_context_create_vulkan refuses `d` with `status`, a message naming `what`, no context. */
static void expect_refused(const vkbert_vulkan_device *d, vkbert_status status, const char *what)
{
    vkbert_context *none = (vkbert_context *)1;
    cr_expect_eq(vkbert_context_create_vulkan(NULL, d, &none), status, "%s", what);
    cr_expect_eq(none, NULL);
    cr_expect(strstr(vkbert_last_error(NULL), what), "%s", vkbert_last_error(NULL));
}

Test(interop, wrap_round_trip_and_bad_arguments)
{
    vulkan_app a = {0};
    app_open(&a, true);
    vkbert_context *ctx = external_context(&a);
    int64_t shape[3] = {2, 3, 5}; /* rows of 5 padded to 8 floats */
    uint64_t bytes = vkbert_tensor_bytes(3, shape);
    cr_assert_eq(bytes, 2 * 3 * 8 * 4);
    VkDeviceSize align = vulkan_app_alignment(&a);
    vulkan_app_buffer b = app_buffer(&a, align + bytes);
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

    expect_refused(NULL, VKBERT_ERROR_INVALID_ARGUMENT, "VKBERT_VULKAN_DEVICE_INIT");
    vkbert_vulkan_device d = vulkan_app_description(&a);
    d.struct_size = 0;
    expect_refused(&d, VKBERT_ERROR_INVALID_ARGUMENT, "VKBERT_VULKAN_DEVICE_INIT");
    d = vulkan_app_description(&a);
    d.queue = VK_NULL_HANDLE;
    expect_refused(&d, VKBERT_ERROR_INVALID_ARGUMENT, "vkbert_vulkan_device.queue");
    d = vulkan_app_description(&a);
    d.queue_family = 99;
    expect_refused(&d, VKBERT_ERROR_INVALID_ARGUMENT, "queue_family 99");
    d = vulkan_app_description(&a);
    d.api_version = VK_API_VERSION_1_0;
    expect_refused(&d, VKBERT_ERROR_NO_DEVICE, "api_version");
    vulkan_app_buffer_free(&a, &b);
    app_close(&a);
}

Test(interop, validation_needs_debug_utils)
{
    vulkan_app a = {0};
    app_open(&a, false);
    vkbert_vulkan_device d = vulkan_app_description(&a);
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

/* Two recordings of one layer in one command buffer, x -> y -> z, with a key-padding mask:
 * y against the reference and the layer's own forward, z against its forward of y. */
Test(interop, record_matches_forward)
{
    enum { B = 2, S = 5, H = 2, E = 6, P = 8, N = B * S * E };
    vulkan_app a = {0};
    app_open(&a, true);
    vkbert_context *ctx = external_context(&a);
    test_weights w = test_weights_random(E, 21);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer;
    TEST_OK(vkbert_attention_create(ctx, E, H, &api, NULL, &layer));
    float x[N], mask[B * S] = {1, 1, 1, 0, 0, 1, 1, 1, 1, 1};
    ref_rng rng = {21};
    ref_fill(&rng, x, N, -1.0, 1.0);

    int64_t shape[3] = {B, S, E}, mask_shape[2] = {B, S};
    VkDeviceSize bytes = vkbert_tensor_bytes(3, shape), align = vulkan_app_alignment(&a);
    VkDeviceSize stride = (bytes + align - 1) / align * align;
    vulkan_app_buffer buf = app_buffer(&a, 3 * stride);
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

    VkCommandPool pool;
    VkCommandBuffer cmd;
    cr_assert_eq(vulkan_app_commands(a.device, a.family, &pool, &cmd), VK_SUCCESS);
    /* No barrier between: vkbert's own leading barrier orders the second after the first. */
    TEST_OK(vkbert_attention_record(layer, cmd, tx, tmask, NULL, ty));
    TEST_OK(vkbert_attention_record(layer, cmd, ty, tmask, NULL, tz));
    vulkan_app_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    cr_assert_eq(vkEndCommandBuffer(cmd), VK_SUCCESS);
    cr_assert_eq(vulkan_app_submit(a.device, a.queue, cmd), VK_SUCCESS);
    cr_assert_eq(vulkan_app_submit(a.device, a.queue, cmd), VK_SUCCESS); /* a recording replays */

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
    vulkan_app_buffer_free(&a, &buf);
    app_close(&a);
}
