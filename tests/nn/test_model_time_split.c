/* vkbert_model_time_split: where a model's time went, summed over its calls. Every phase a text
 * call goes through is counted, the sums only grow, the passes are the batches run, the
 * device's own time is there exactly when the context records timestamps, and bad structs are
 * clear errors. */
#define _POSIX_C_SOURCE 200809L

#include "model_check.h"
#include "support.h"

#include <stdlib.h>
#include <string.h>

TestSuite(time_split, .init = test_tmpdir_setup, .fini = test_tmpdir_teardown, .timeout = 300);

/* 70 texts: three batches of sentence-transformers' 32, the last not full. */
enum { TEXTS = 70, BATCHES = 3 };

static void load_folder(vkbert_context *ctx, vkbert_model **model, char *dir)
{
    bert_config c = tiny_bert_small(MODEL_VOCAB_SIZE, 0);
    bert_weights w;
    st_folder_spec spec = {.pool_modes = ST_POOL_MEAN,
                           .word_embedding_dimension = c.hidden_size,
                           .include_prompt = 1,
                           .do_lower_case = -1};
    model_write_st(test_tmpdir, "split", &spec, &c, &w, dir);
    bert_weights_free(&w);
    *model = model_load(ctx, dir);
}

static vkbert_time_split split_of(const vkbert_model *model)
{
    vkbert_time_split s = VKBERT_TIME_SPLIT_INIT;
    cr_assert_eq(vkbert_model_time_split(model, &s), VKBERT_OK, "%s", vkbert_last_error(NULL));
    return s;
}

static void embed_texts(vkbert_model *model)
{
    const char *texts[TEXTS];
    for (int i = 0; i < TEXTS; i++)
        texts[i] = model_texts[i % MODEL_TEXT_COUNT];
    float *out = test_poisoned((size_t)TEXTS * (size_t)vkbert_model_dimension(model));
    cr_assert_eq(vkbert_model_embed(model, texts, TEXTS, NULL, out), VKBERT_OK);
    free(out);
}

/* Each phase of `after` at least `before`'s; the ones a text call always takes, more. */
static void assert_grew(const vkbert_time_split *before, const vkbert_time_split *after)
{
    cr_assert_eq(after->load_ms, before->load_ms, "load is counted once");
    cr_assert_gt(after->tokenize_ms, before->tokenize_ms);
    cr_assert_gt(after->prepare_ms, before->prepare_ms);
    cr_assert_gt(after->wait_ms + after->read_ms, before->wait_ms + before->read_ms);
    cr_assert_geq(after->wait_ms, before->wait_ms);
    cr_assert_geq(after->read_ms, before->read_ms);
    cr_assert_geq(after->gpu_ms, before->gpu_ms);
    cr_assert_eq(after->passes, before->passes + BATCHES);
}

static void check_calls(vkbert_context *ctx, int timestamps)
{
    vkbert_model *model;
    char dir[256];
    load_folder(ctx, &model, dir);
    vkbert_time_split loaded = split_of(model);
    cr_assert_gt(loaded.load_ms, 0.0);
    cr_assert(loaded.tokenize_ms == 0 && loaded.prepare_ms == 0 && loaded.wait_ms == 0 &&
              loaded.read_ms == 0 && loaded.gpu_ms == 0 && loaded.passes == 0);
    embed_texts(model);
    vkbert_time_split once = split_of(model);
    assert_grew(&loaded, &once);
    embed_texts(model);
    vkbert_time_split twice = split_of(model);
    assert_grew(&once, &twice);
    if (timestamps)
        cr_assert_gt(twice.gpu_ms, once.gpu_ms, "the device's time of the second call");
    else
        cr_assert_eq(twice.gpu_ms, 0.0, "no timestamps, no device time");
    vkbert_model_destroy(model);
}

Test(time_split, text_calls_without_timestamps)
{
    vkbert_context *ctx = test_context(0);
    check_calls(ctx, 0);
    test_context_done(ctx);
}

Test(time_split, text_calls_with_timestamps)
{
    vkbert_context_options o = VKBERT_CONTEXT_OPTIONS_INIT;
    o.timestamps = 1;
    vkbert_context *ctx = NULL;
    vkbert_status status = vkbert_context_create(&o, &ctx);
    if (status == VKBERT_ERROR_DEVICE_LIMIT)
        cr_skip_test("the device has no timestamps on its compute queue: %s",
                     vkbert_last_error(NULL));
    cr_assert_eq(status, VKBERT_OK, "%s", vkbert_last_error(NULL));
    check_calls(ctx, 1);
    test_context_done(ctx);
}

/* An older caller's shorter struct is written no further than its size; bad ones are refused. */
Test(time_split, struct_sizes)
{
    vkbert_context *ctx = test_context(0);
    vkbert_model *model;
    char dir[256];
    load_folder(ctx, &model, dir);
    embed_texts(model);
    cr_assert_eq(vkbert_model_time_split(model, NULL), VKBERT_ERROR_INVALID_ARGUMENT);
    vkbert_time_split s;
    memset(&s, 0, sizeof s);
    cr_assert_eq(vkbert_model_time_split(model, &s), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(vkbert_last_error(ctx), "VKBERT_TIME_SPLIT_INIT"));
    unsigned char bytes[sizeof s + 16];
    memset(bytes, 0xAB, sizeof bytes);
    uint32_t first = (uint32_t)offsetof(vkbert_time_split, gpu_ms);
    memcpy(bytes, &first, sizeof first);
    cr_assert_eq(vkbert_model_time_split(model, (vkbert_time_split *)(void *)bytes),
                 VKBERT_ERROR_INVALID_ARGUMENT, "smaller than the first version's");
    uint32_t bigger = (uint32_t)sizeof bytes;
    memcpy(bytes, &bigger, sizeof bigger);
    cr_assert_eq(vkbert_model_time_split(model, (vkbert_time_split *)(void *)bytes), VKBERT_OK);
    for (size_t i = sizeof s; i < sizeof bytes; i++)
        cr_assert_eq(bytes[i], 0, "byte %zu past the struct this library knows", i);
    memcpy(&s, bytes, sizeof s);
    cr_assert_eq(s.struct_size, sizeof bytes, "the caller's struct_size is kept");
    cr_assert_eq(s.passes, BATCHES);
    vkbert_model_destroy(model);
    test_context_done(ctx);
}
