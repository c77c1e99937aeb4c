/* The stable ABI (docs/c-api.md, "ABI"): the version calls, the status values that are never
 * renumbered, and the growable structs: a caller's struct_size decides what is read and what is
 * written, as vkbert.h states the rule. */
#include "st_folder.h"
#include "support.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BAD VKBERT_ERROR_INVALID_ARGUMENT
#define TAIL 64 /* bytes a newer header's struct might add */

/* The message of the last failure names the struct and the macro that sets it right. */
static void assert_names(const char *message, const char *type, const char *macro)
{
    cr_assert(strstr(message, type) && strstr(message, macro), "\"%s\" names neither %s nor %s",
              message, type, macro);
}

Test(abi, version)
{
    cr_assert_eq(vkbert_version(), (unsigned)VKBERT_VERSION_NUMBER);
    cr_assert_eq(VKBERT_VERSION_NUMBER / 10000, VKBERT_VERSION_MAJOR);
    cr_assert_eq(VKBERT_VERSION_NUMBER / 100 % 100, VKBERT_VERSION_MINOR);
    cr_assert_eq(VKBERT_VERSION_NUMBER % 100, VKBERT_VERSION_PATCH);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", VKBERT_VERSION_MAJOR, VKBERT_VERSION_MINOR,
             VKBERT_VERSION_PATCH);
    cr_assert_str_eq(vkbert_version_string(), want);
}

/* The status values are part of the ABI: a renumbering breaks every program built before it. */
Test(abi, status_values)
{
    static const struct {
        vkbert_status status;
        int value;
        const char *name;
    } fixed[] = {
        {VKBERT_OK, 0, "VKBERT_OK"},
        {VKBERT_ERROR_INVALID_ARGUMENT, 1, "VKBERT_ERROR_INVALID_ARGUMENT"},
        {VKBERT_ERROR_NO_VULKAN, 2, "VKBERT_ERROR_NO_VULKAN"},
        {VKBERT_ERROR_NO_DEVICE, 3, "VKBERT_ERROR_NO_DEVICE"},
        {VKBERT_ERROR_DEVICE_LIMIT, 4, "VKBERT_ERROR_DEVICE_LIMIT"},
        {VKBERT_ERROR_OUT_OF_MEMORY, 5, "VKBERT_ERROR_OUT_OF_MEMORY"},
        {VKBERT_ERROR_VULKAN, 6, "VKBERT_ERROR_VULKAN"},
        {VKBERT_ERROR_VALIDATION, 7, "VKBERT_ERROR_VALIDATION"},
        {VKBERT_ERROR_DEVICE_LOST, 8, "VKBERT_ERROR_DEVICE_LOST"},
        {VKBERT_ERROR_MALFORMED_FILE, 9, "VKBERT_ERROR_MALFORMED_FILE"},
        {VKBERT_NOT_READY, 10, "VKBERT_NOT_READY"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        cr_assert_eq((int)fixed[i].status, fixed[i].value, "%s", fixed[i].name);
        cr_assert_str_eq(vkbert_status_name(fixed[i].status), fixed[i].name);
    }
}

Test(abi, input_struct_size)
{
    vkbert_context *ctx = NULL;
    vkbert_context_options unset = {0};
    cr_assert_eq(vkbert_context_create(&unset, &ctx), BAD);
    cr_assert_null(ctx);
    assert_names(vkbert_last_error(NULL), "vkbert_context_options", "VKBERT_CONTEXT_OPTIONS_INIT");
    vkbert_context_options small = VKBERT_CONTEXT_OPTIONS_INIT;
    small.struct_size = offsetof(vkbert_context_options, timeout_ms);
    cr_assert_eq(vkbert_context_create(&small, &ctx), BAD);
    assert_names(vkbert_last_error(NULL), "vkbert_context_options", "VKBERT_CONTEXT_OPTIONS_INIT");

    /* A newer caller's struct: accepted while what this library does not know is 0. */
    struct {
        vkbert_context_options o;
        unsigned char more[TAIL];
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.o.struct_size = sizeof newer;
    newer.o.validation = 1;
    TEST_OK(vkbert_context_create(&newer.o, &ctx));
    test_context_done(ctx);
    ctx = NULL;
    newer.o.struct_size = 0xdeadbeefu; /* never set: refused before it is used */
    cr_assert_eq(vkbert_context_create(&newer.o, &ctx), BAD);
    newer.o.struct_size = sizeof newer;
    newer.more[TAIL - 1] = 1;
    cr_assert_eq(vkbert_context_create(&newer.o, &ctx), BAD);
    cr_assert_null(ctx);
    cr_assert(strstr(vkbert_last_error(NULL), "newer"), "%s", vkbert_last_error(NULL));
}

/* Structs passed on a context: the message is the context's. */
Test(abi, layer_structs)
{
    vkbert_context *ctx = test_context(0);
    test_weights w = test_weights_random(16, 3);
    vkbert_attention_weights api = test_weights_api(&w), unset = api;
    unset.struct_size = 0;
    vkbert_attention *layer = NULL;
    cr_assert_eq(vkbert_attention_create(ctx, 16, 2, &unset, NULL, &layer), BAD);
    assert_names(vkbert_last_error(ctx), "vkbert_attention_weights",
                 "VKBERT_ATTENTION_WEIGHTS_INIT");
    vkbert_attention_config config = {0};
    cr_assert_eq(vkbert_attention_create(ctx, 16, 2, &api, &config, &layer), BAD);
    assert_names(vkbert_last_error(ctx), "vkbert_attention_config", "VKBERT_ATTENTION_CONFIG_INIT");
    cr_assert_null(layer);
    TEST_OK(vkbert_attention_create(ctx, 16, 2, &api, NULL, &layer));

    float x[2 * 16] = {0}, y[2 * 16];
    uint8_t keep[2] = {1, 1};
    vkbert_mask mask = VKBERT_MASK_INIT;
    mask.data = keep, mask.dtype = VKBERT_DTYPE_UINT8, mask.ndim = 1, mask.shape[0] = 2;
    mask.struct_size = 0;
    cr_assert_eq(vkbert_attention_forward_host(layer, 1, 2, x, &mask, NULL, y), BAD);
    assert_names(vkbert_last_error(ctx), "vkbert_mask", "VKBERT_MASK_INIT");
    vkbert_attention_options options = {0};
    cr_assert_eq(vkbert_attention_forward_host(layer, 1, 2, x, NULL, &options, y), BAD);
    assert_names(vkbert_last_error(ctx), "vkbert_attention_options",
                 "VKBERT_ATTENTION_OPTIONS_INIT");
    vkbert_encoder_config encoder = {0};
    vkbert_encoder *e = NULL;
    cr_assert_eq(vkbert_encoder_load(ctx, "/nonexistent", &encoder, &e), BAD);
    assert_names(vkbert_last_error(ctx), "vkbert_encoder_config", "VKBERT_ENCODER_CONFIG_INIT");
    vkbert_model_config model = {0};
    vkbert_model *m = NULL;
    cr_assert_eq(vkbert_model_load(ctx, "/nonexistent", &model, &m), BAD);
    assert_names(vkbert_last_error(ctx), "vkbert_model_config", "VKBERT_MODEL_CONFIG_INIT");
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    test_context_done(ctx);
}

/* A struct the library fills in, `TAIL` bytes larger than this header's, the tail poisoned. */
typedef struct {
    vkbert_device_info info;
    unsigned char more[TAIL];
} newer_info;

static void assert_tail(const unsigned char *tail, unsigned char want, const char *what)
{
    for (int i = 0; i < TAIL; i++)
        cr_assert_eq(tail[i], want, "%s: byte %d of the tail is 0x%02x", what, i, tail[i]);
}

static void assert_same_device(const vkbert_device_info *a, const vkbert_device_info *b)
{
    cr_assert_str_eq(a->name, b->name);
    cr_assert_str_eq(a->driver, b->driver);
    cr_assert_eq(a->subgroup_size, b->subgroup_size);
    cr_assert_eq(a->subgroup_size_control, b->subgroup_size_control);
    cr_assert_eq(a->max_subgroup_size, b->max_subgroup_size);
}

Test(abi, output_struct_size)
{
    vkbert_context *ctx = test_context(0);
    vkbert_device_info plain = VKBERT_DEVICE_INFO_INIT;
    TEST_OK(vkbert_context_device(ctx, &plain));
    cr_assert_eq(plain.struct_size, sizeof plain, "the caller's struct_size is kept");

    newer_info newer;
    memset(&newer, 0xab, sizeof newer);
    newer.info.struct_size = sizeof newer;
    TEST_OK(vkbert_context_device(ctx, &newer.info));
    assert_same_device(&newer.info, &plain);
    assert_tail(newer.more, 0, "fields this library does not know read as 0");

    memset(&newer, 0xab, sizeof newer);
    newer.info.struct_size = sizeof newer.info;
    TEST_OK(vkbert_context_device(ctx, &newer.info));
    assert_tail(newer.more, 0xab, "nothing is written past struct_size");

    newer.info.struct_size = offsetof(vkbert_device_info, usable);
    cr_assert_eq(vkbert_context_device(ctx, &newer.info), BAD);
    assert_names(vkbert_last_error(ctx), "vkbert_device_info", "VKBERT_DEVICE_INFO_INIT");
    test_context_done(ctx);
}

/* The stride of vkbert_list_devices' array is its entries' struct_size. */
Test(abi, list_devices_stride)
{
    uint32_t count = 0;
    TEST_OK(vkbert_list_devices(NULL, 0, &count));
    cr_assert_geq(count, 1);
    vkbert_device_info *plain = calloc(count, sizeof *plain);
    newer_info *newer = calloc(count, sizeof *newer);
    memset(newer, 0xab, count * sizeof *newer);
    for (uint32_t i = 0; i < count; i++) {
        plain[i] = (vkbert_device_info)VKBERT_DEVICE_INFO_INIT;
        newer[i].info.struct_size = sizeof *newer;
    }
    TEST_OK(vkbert_list_devices(plain, count, &count));
    TEST_OK(vkbert_list_devices(&newer[0].info, count, &count));
    for (uint32_t i = 0; i < count; i++) {
        assert_same_device(&newer[i].info, &plain[i]);
        assert_tail(newer[i].more, 0, "a larger entry's tail");
    }
    if (count > 1) {
        plain[1].struct_size = 0;
        uint32_t again = 99;
        cr_assert_eq(vkbert_list_devices(plain, count, &again), BAD);
        cr_assert_eq(again, 0);
        cr_assert(strstr(vkbert_last_error(NULL), "infos[1]"), "%s", vkbert_last_error(NULL));
    }
    plain[0].struct_size = 0;
    cr_assert_eq(vkbert_list_devices(plain, count, &count), BAD);
    assert_names(vkbert_last_error(NULL), "vkbert_device_info", "VKBERT_DEVICE_INFO_INIT");
    free(plain);
    free(newer);
}

/* The subgroup fields against Vulkan's own answer for the same physical device, and the
 * context's report once its options switch subgroup size control off. */
Test(abi, subgroup_size_control)
{
    vkbert_context *ctx = test_context(0);
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    TEST_OK(vkbert_context_device(ctx, &info));
    cr_assert(info.subgroup_size_control == 0 || info.subgroup_size_control == 1);
    if (info.subgroup_size_control) {
        VkPhysicalDeviceSubgroupSizeControlProperties sizes = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
        VkPhysicalDeviceProperties2 props = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sizes};
        vkGetPhysicalDeviceProperties2(ctx->physical, &props);
        cr_assert_eq(info.min_subgroup_size, sizes.minSubgroupSize);
        cr_assert_eq(info.max_subgroup_size, sizes.maxSubgroupSize);
        cr_assert(info.min_subgroup_size <= info.subgroup_size &&
                  info.subgroup_size <= info.max_subgroup_size);
    }
    test_context_done(ctx);
    ctx = test_context_limited("subgroup_size_control=0");
    TEST_OK(vkbert_context_device(ctx, &info));
    cr_assert_eq(info.subgroup_size_control, 0);
    test_context_done(ctx);
}

/* vkbert_encoding: filled in no further than its struct_size, and reusable after a free. */
Test(abi, encoding_struct_size)
{
    char dir[TEST_DIR_SIZE], path[TEST_DIR_SIZE + 16];
    test_dir_make(dir, "abi");
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n", f);
    fclose(f);
    vkbert_tokenizer *t = NULL;
    TEST_OK(vkbert_tokenizer_load(dir, &t));
    struct {
        vkbert_encoding e;
        unsigned char more[TAIL];
    } newer;
    memset(&newer, 0xab, sizeof newer);
    newer.e.struct_size = sizeof newer;
    TEST_OK(vkbert_tokenizer_encode(t, "hello world", NULL, 0, &newer.e));
    const int32_t want[] = {2, 5, 6, 3}; /* [CLS] hello world [SEP], by the vocab's lines */
    cr_assert_eq(newer.e.count, 4);
    for (int i = 0; i < 4; i++)
        cr_assert(newer.e.ids[i] == want[i] && newer.e.type_ids[i] == 0, "id %d", i);
    cr_assert(newer.e.prompt_tokens == 0 && newer.e.full_count == 4);
    assert_tail(newer.more, 0, "an encoding's tail");
    vkbert_encoding_free(&newer.e);
    cr_assert_eq(newer.e.struct_size, sizeof newer, "a freed encoding keeps its struct_size");
    cr_assert(newer.e.ids == NULL && newer.e.count == 0);
    /* The tokenizer says what truncation cut, as vkbert_model_encode does. */
    TEST_OK(vkbert_tokenizer_encode(t, "hello world", NULL, 3, &newer.e));
    cr_assert(newer.e.count == 3 && newer.e.full_count == 4 && newer.e.ids[2] == 3);
    vkbert_encoding_free(&newer.e);
    vkbert_encoding unset = {0};
    cr_assert_eq(vkbert_tokenizer_encode(t, "hello", NULL, 0, &unset), BAD);
    assert_names(vkbert_last_error(NULL), "vkbert_encoding", "VKBERT_ENCODING_INIT");
    vkbert_tokenizer_destroy(t);
    test_dir_remove(dir);
}

static void assert_bytes(const unsigned char *at, size_t n, unsigned char want, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(at[i], want, "%s: byte %zu is 0x%02x", what, i, at[i]);
}

/* A 0.3 caller's vkbert_encoding ends before the fields added in 0.4: nothing is written
 * there, and the arrays it cannot see are not left allocated (the leak checker's part). */
Test(abi, encoding_older_size)
{
    char dir[TEST_DIR_SIZE], path[TEST_DIR_SIZE + 16];
    test_dir_make(dir, "abi");
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n", f);
    fclose(f);
    vkbert_tokenizer *t = NULL;
    TEST_OK(vkbert_tokenizer_load(dir, &t));
    vkbert_encoding e;
    const size_t older = offsetof(vkbert_encoding, special_tokens_mask);
    memset(&e, 0xab, sizeof e);
    e.struct_size = (uint32_t)older;
    TEST_OK(vkbert_tokenizer_encode(t, "hello world", NULL, 0, &e));
    cr_assert(e.count == 4 && e.ids[1] == 5 && e.full_count == 4);
    assert_bytes((const unsigned char *)&e + older, sizeof e - older, 0xab, "past 0.3's size");
    vkbert_encoding_free(&e);
    cr_assert(e.ids == NULL && e.count == 0 && e.struct_size == older);
    assert_bytes((const unsigned char *)&e + older, sizeof e - older, 0xab, "freed, past it");
    vkbert_tokenizer_destroy(t);
    test_dir_remove(dir);
}
