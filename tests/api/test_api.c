/* The public API's errors: every bad input gets a status and a message, leaves nothing
 * half-done, and the context keeps working. */
#include "support.h"

#include <stdlib.h>
#include <ctype.h>
#include <string.h>

static vkbert_attention *small_layer(vkbert_context *ctx, test_weights *w)
{
    *w = test_weights_random(8, 1);
    vkbert_attention_weights api = test_weights_api(w);
    vkbert_attention *layer = NULL;
    TEST_OK(vkbert_attention_create(ctx, 8, 2, &api, NULL, &layer));
    return layer;
}

static void expect(vkbert_context *ctx, vkbert_status got, vkbert_status want, const char *words)
{
    cr_assert_eq(got, want, "got %s, want %s (%s)", vkbert_status_name(got),
                 vkbert_status_name(want), vkbert_last_error(ctx));
    cr_assert(strstr(vkbert_last_error(ctx), words), "message \"%s\" lacks \"%s\"",
              vkbert_last_error(ctx), words);
}

Test(api, status_names)
{
    cr_assert_str_eq(vkbert_status_name(VKBERT_OK), "VKBERT_OK");
    cr_assert_str_eq(vkbert_status_name(VKBERT_ERROR_DEVICE_LIMIT), "VKBERT_ERROR_DEVICE_LIMIT");
    cr_assert_str_eq(vkbert_status_name((vkbert_status)99), "VKBERT_ERROR_UNKNOWN");
    cr_assert_str_eq(vkbert_device_type_name(VKBERT_DEVICE_CPU), "cpu");
}

Test(api, lists_devices)
{
    uint32_t count = 0;
    TEST_OK(vkbert_list_devices(NULL, 0, &count));
    cr_assert(count >= 1);
    vkbert_device_info *infos = calloc(count, sizeof *infos);
    for (uint32_t i = 0; i < count; i++)
        infos[i] = (vkbert_device_info)VKBERT_DEVICE_INFO_INIT;
    TEST_OK(vkbert_list_devices(infos, count, &count));
    cr_assert(strlen(infos[0].name) > 0);
    cr_assert(infos[0].subgroup_size >= 1 && infos[0].max_storage_buffers >= 4);
    free(infos);
}

/* Listing makes an instance without VK_EXT_debug_utils while a validated context lives; the
 * context still destroys its messenger (volk's shared table had lost that function). */
Test(api, lists_devices_while_a_validated_context_lives)
{
    vkbert_context_options o = VKBERT_CONTEXT_OPTIONS_INIT;
    o.validation = 1;
    vkbert_context *ctx = NULL;
    TEST_OK(vkbert_context_create(&o, &ctx));
    uint32_t count = 0;
    TEST_OK(vkbert_list_devices(NULL, 0, &count));
    cr_assert_eq(vkbert_validation_messages(ctx, NULL, 0), 0);
    vkbert_context_destroy(ctx);
}

Test(api, device_choice_by_index_name_and_environment)
{
    vkbert_context *ctx = NULL;
    vkbert_context_options by_index = {
        .struct_size = sizeof(vkbert_context_options), .device = "0", .validation = 1};
    TEST_OK(vkbert_context_create(&by_index, &ctx));
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    TEST_OK(vkbert_context_device(ctx, &info));
    vkbert_context_destroy(ctx);

    char fragment[8] = {0}; /* a substring of the name, in other case */
    for (int i = 0; i < 4 && info.name[i]; i++)
        fragment[i] = (char)toupper(info.name[i]);
    vkbert_context_options by_name = {.struct_size = sizeof(vkbert_context_options),
                                      .device = fragment};
    TEST_OK(vkbert_context_create(&by_name, &ctx));
    vkbert_context_destroy(ctx);

    vkbert_context_options missing = {.struct_size = sizeof(vkbert_context_options),
                                      .device = "no-such-gpu"};
    expect(NULL, vkbert_context_create(&missing, &ctx), VKBERT_ERROR_NO_DEVICE, "no-such-gpu");
    cr_assert_null(ctx);
    vkbert_context_options out_of_range = {.struct_size = sizeof(vkbert_context_options),
                                           .device = "57"};
    expect(NULL, vkbert_context_create(&out_of_range, &ctx), VKBERT_ERROR_NO_DEVICE, "\"57\"");

    setenv("VKBERT_DEVICE", "no-such-gpu-either", 1);
    expect(NULL, vkbert_context_create(NULL, &ctx), VKBERT_ERROR_NO_DEVICE, "either");
    unsetenv("VKBERT_DEVICE");
}

Test(api, no_driver_is_a_clear_error)
{
    /* The loader reads only this ICD list: a file that does not exist means no driver. */
    setenv("VK_ICD_FILENAMES", "/nonexistent/vkbert_icd.json", 1);
    setenv("VK_DRIVER_FILES", "/nonexistent/vkbert_icd.json", 1);
    vkbert_context *ctx = NULL;
    vkbert_status status = vkbert_context_create(NULL, &ctx);
    cr_assert_eq(status, VKBERT_ERROR_NO_VULKAN, "%s: %s", vkbert_status_name(status),
                 vkbert_last_error(NULL));
    cr_assert_null(ctx);
    cr_assert(strstr(vkbert_last_error(NULL), "driver"), "%s", vkbert_last_error(NULL));
    uint32_t count = 5;
    cr_assert_eq(vkbert_list_devices(NULL, 0, &count), VKBERT_ERROR_NO_VULKAN);
    cr_assert_eq(count, 0);
}

Test(api, bad_layer_arguments)
{
    vkbert_context *ctx = test_context(0);
    test_weights w = test_weights_random(8, 2);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer = NULL;
    expect(ctx, vkbert_attention_create(ctx, 8, 3, &api, NULL, &layer),
           VKBERT_ERROR_INVALID_ARGUMENT, "multiple");
    expect(ctx, vkbert_attention_create(ctx, 0, 1, &api, NULL, &layer),
           VKBERT_ERROR_INVALID_ARGUMENT, "embed_dim");
    api.k_bias = NULL;
    expect(ctx, vkbert_attention_create(ctx, 8, 2, &api, NULL, &layer),
           VKBERT_ERROR_INVALID_ARGUMENT, "k_bias");
    api = test_weights_api(&w);
    w.w[2][5] = INFINITY;
    expect(ctx, vkbert_attention_create(ctx, 8, 2, &api, NULL, &layer),
           VKBERT_ERROR_INVALID_ARGUMENT, "v_weight[5]");
    cr_assert_null(layer);
    test_weights_free(&w);
    test_context_done(ctx);
}

Test(api, bad_forward_arguments_leave_the_layer_working)
{
    vkbert_context *ctx = test_context(0);
    test_weights w;
    vkbert_attention *layer = small_layer(ctx, &w);
    float x[2 * 3 * 8], y[2 * 3 * 8];
    ref_rng rng = {3};
    ref_fill(&rng, x, 48, -1, 1);
    uint8_t m[16] = {1};
    vkbert_mask bad_shape = {sizeof(vkbert_mask), m, VKBERT_DTYPE_BOOL, 2, {2, 4}};
    expect(ctx, vkbert_attention_forward_host(layer, 2, 3, x, &bad_shape, NULL, y),
           VKBERT_ERROR_INVALID_ARGUMENT,
           "[2, 4] does not broadcast to [B, H, S, S] = [2, 2, 3, 3]");
    vkbert_mask bad_dims = {sizeof(vkbert_mask), m, VKBERT_DTYPE_BOOL, 4, {1, 3, 3, 3}};
    expect(ctx, vkbert_attention_forward_host(layer, 2, 3, x, &bad_dims, NULL, y),
           VKBERT_ERROR_INVALID_ARGUMENT, "does not broadcast");
    vkbert_attention_options opt = {.struct_size = sizeof(vkbert_attention_options),
                                    .dropout = 1.5f};
    expect(ctx, vkbert_attention_forward_host(layer, 2, 3, x, NULL, &opt, y),
           VKBERT_ERROR_INVALID_ARGUMENT, "dropout");
    expect(ctx, vkbert_attention_forward_host(layer, 0, 3, x, NULL, NULL, y),
           VKBERT_ERROR_INVALID_ARGUMENT, "positive");

    int64_t wrong[3] = {2, 3, 7}, right[3] = {2, 3, 8};
    vkbert_tensor *tx, *ty;
    TEST_OK(vkbert_tensor_create(ctx, 3, wrong, &tx));
    TEST_OK(vkbert_tensor_create(ctx, 3, right, &ty));
    expect(ctx, vkbert_attention_forward(layer, tx, NULL, NULL, ty), VKBERT_ERROR_INVALID_ARGUMENT,
           "x must be [B, S, 8]");
    expect(ctx, vkbert_tensor_write(ctx, ty, x, 47), VKBERT_ERROR_INVALID_ARGUMENT, "47");
    int64_t zero[2] = {2, 0};
    vkbert_tensor *tz = NULL;
    expect(ctx, vkbert_tensor_create(ctx, 2, zero, &tz), VKBERT_ERROR_INVALID_ARGUMENT,
           "dimension 1");
    vkbert_tensor_destroy(ctx, tx), vkbert_tensor_destroy(ctx, ty);

    /* After all of that the layer still gives the reference's answer. */
    double want[48];
    ref_layer ref = test_weights_ref(&w, 2);
    TEST_OK(vkbert_attention_forward_host(layer, 2, 3, x, NULL, NULL, y));
    ref_attention(&ref, 2, 3, x, NULL, NULL, want);
    test_assert_fp32_close(y, want, 48, "after errors");
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    test_context_done(ctx);
}

Test(api, device_limit_exceeded_is_reported)
{
    vkbert_context *ctx = test_context(0);
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    TEST_OK(vkbert_context_device(ctx, &info));
    /* The Q, K, V rows (3 x S x E floats) of one sequence beyond maxStorageBufferRange: a
     * batch would be split (tests/vk/test_limits.c), one sequence cannot. */
    int e = 256, batch = 1;
    int s = (int)((uint64_t)info.max_storage_buffer_range / (3ull * e * 4)) + 1;
    test_weights w = test_weights_random(e, 4);
    vkbert_attention_weights api = test_weights_api(&w);
    vkbert_attention *layer = NULL;
    TEST_OK(vkbert_attention_create(ctx, e, 4, &api, NULL, &layer));
    size_t n = (size_t)batch * s * e;
    float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 7) * 0.1f;
    expect(ctx, vkbert_attention_forward_host(layer, batch, s, x, NULL, NULL, y),
           VKBERT_ERROR_DEVICE_LIMIT, "maxStorageBufferRange");
    /* Nothing half-done: a shape that fits still runs. */
    TEST_OK(vkbert_attention_forward_host(layer, 1, 3, x, NULL, NULL, y));
    free(x), free(y);
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    test_context_done(ctx);
}
