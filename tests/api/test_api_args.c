/* Every public entry point with bad arguments: NULL pointers, zero and negative sizes, E not
 * divisible by H, mismatched shapes, sizes whose products overflow. Each returns an error
 * status and a message, never crashes, and leaves the context working. */
#include "support.h"
#include "io/safetensors.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT(ctx, call, want)                                                                    \
    do {                                                                                           \
        vkbert_status got_ = (call);                                                               \
        cr_assert_eq(got_, (want), "%s: %s, not %s", #call, vkbert_status_name(got_),              \
                     vkbert_status_name(want));                                                    \
        cr_assert(strlen(vkbert_last_error(ctx)) > 0, "%s: no message", #call);                    \
    } while (0)

#define BAD VKBERT_ERROR_INVALID_ARGUMENT

Test(api_args, context_calls)
{
    EXPECT(NULL, vkbert_context_create(NULL, NULL), BAD);
    EXPECT(NULL, vkbert_list_devices(NULL, 4, NULL), BAD);
    cr_assert_eq(vkbert_context_device(NULL, NULL), BAD);
    cr_assert_eq(vkbert_context_startup_ms(NULL, NULL, NULL), BAD);
    cr_assert_eq(vkbert_context_memory(NULL, NULL, NULL), BAD);
    cr_assert_eq(vkbert_validation_messages(NULL, NULL, 0), 0);
    vkbert_context_destroy(NULL);
    cr_assert_str_eq(vkbert_status_name((vkbert_status)99), "VKBERT_ERROR_UNKNOWN");
    cr_assert_str_eq(vkbert_device_type_name((vkbert_device_type)99), "other");
    /* A failed creation's message stays with it: a new context at the same address starts
     * with none. */
    vkbert_context_options bad = {.struct_size = sizeof(vkbert_context_options),
                                  .limits = "no_such_limit=1"};
    vkbert_context *failed = NULL;
    EXPECT(NULL, vkbert_context_create(&bad, &failed), BAD);
    vkbert_context *ctx = test_context(0);
    cr_assert_str_eq(vkbert_last_error(ctx), "", "a new context says \"%s\"",
                     vkbert_last_error(ctx));
    EXPECT(ctx, vkbert_context_device(ctx, NULL), BAD);
    EXPECT(ctx, vkbert_tune_save(ctx, NULL, NULL, 0), BAD);
    EXPECT(ctx, vkbert_tune_save(ctx, "{not json", NULL, 0), BAD);
    cr_assert_eq(vkbert_tune_save(NULL, "{}", NULL, 0), BAD);
    test_context_done(ctx);
}

Test(api_args, tensor_calls)
{
    vkbert_context *ctx = test_context(0);
    vkbert_tensor *t = NULL;
    int64_t ok[2] = {3, 5}, zero[2] = {3, 0}, negative[2] = {-3, 5};
    int64_t overflow[4] = {INT64_MAX / 2, 4, 4, 4}, wrap[4] = {1 << 20, 1 << 20, 1 << 20, 1 << 20};
    cr_assert_eq(vkbert_tensor_create(NULL, 2, ok, &t), BAD);
    EXPECT(ctx, vkbert_tensor_create(ctx, 2, ok, NULL), BAD);
    EXPECT(ctx, vkbert_tensor_create(ctx, 2, NULL, &t), BAD);
    EXPECT(ctx, vkbert_tensor_create(ctx, 0, ok, &t), BAD);
    EXPECT(ctx, vkbert_tensor_create(ctx, 5, ok, &t), BAD);
    EXPECT(ctx, vkbert_tensor_create(ctx, 2, zero, &t), BAD);
    EXPECT(ctx, vkbert_tensor_create(ctx, 2, negative, &t), BAD);
    vkbert_status status = vkbert_tensor_create(ctx, 4, overflow, &t);
    cr_assert(status == BAD || status == VKBERT_ERROR_DEVICE_LIMIT, "%s",
              vkbert_status_name(status));
    status = vkbert_tensor_create(ctx, 4, wrap, &t);
    cr_assert(status == BAD || status == VKBERT_ERROR_DEVICE_LIMIT, "%s",
              vkbert_status_name(status));
    TEST_OK(vkbert_tensor_create(ctx, 2, ok, &t));
    float data[15] = {0};
    EXPECT(ctx, vkbert_tensor_write(ctx, t, data, 14), BAD);
    EXPECT(ctx, vkbert_tensor_write(ctx, t, NULL, 15), BAD);
    EXPECT(ctx, vkbert_tensor_write(ctx, NULL, data, 15), BAD);
    EXPECT(ctx, vkbert_tensor_read(ctx, t, data, 16), BAD);
    EXPECT(ctx, vkbert_tensor_read(ctx, t, NULL, 15), BAD);
    cr_assert_eq(vkbert_tensor_read(NULL, t, data, 15), BAD);
    cr_assert_eq(vkbert_tensor_shape(NULL, NULL), 0);
    TEST_OK(vkbert_tensor_write(ctx, t, data, 15));
    vkbert_tensor_destroy(ctx, t);
    vkbert_tensor_destroy(ctx, NULL);
    test_context_done(ctx);
}

Test(api_args, attention_calls)
{
    vkbert_context *ctx = test_context(0);
    test_weights w = test_weights_random(32, 1);
    vkbert_attention_weights api = test_weights_api(&w), missing = api;
    missing.v_bias = NULL;
    vkbert_attention *layer = NULL;
    cr_assert_eq(vkbert_attention_create(NULL, 32, 4, &api, NULL, &layer), BAD);
    EXPECT(ctx, vkbert_attention_create(ctx, 32, 4, NULL, NULL, &layer), BAD);
    EXPECT(ctx, vkbert_attention_create(ctx, 32, 4, &api, NULL, NULL), BAD);
    EXPECT(ctx, vkbert_attention_create(ctx, 32, 4, &missing, NULL, &layer), BAD);
    EXPECT(ctx, vkbert_attention_create(ctx, 32, 5, &api, NULL, &layer), BAD);
    EXPECT(ctx, vkbert_attention_create(ctx, 0, 4, &api, NULL, &layer), BAD);
    EXPECT(ctx, vkbert_attention_create(ctx, -32, 4, &api, NULL, &layer), BAD);
    EXPECT(ctx, vkbert_attention_create(ctx, 32, 0, &api, NULL, &layer), BAD);
    EXPECT(ctx, vkbert_attention_create(ctx, 32, -4, &api, NULL, &layer), BAD);
    vkbert_status huge = vkbert_attention_create(ctx, 1 << 30, 1, &api, NULL, &layer);
    cr_assert_null(layer);
    cr_assert(huge == BAD || huge == VKBERT_ERROR_DEVICE_LIMIT, "%s", vkbert_status_name(huge));
    vkbert_attention_config odd = {sizeof(vkbert_attention_config), (vkbert_precision)7};
    EXPECT(ctx, vkbert_attention_create(ctx, 32, 4, &api, &odd, &layer), BAD);
    cr_assert_null(layer);
    TEST_OK(vkbert_attention_create(ctx, 32, 4, &api, NULL, &layer));

    float x[2 * 3 * 32] = {0}, y[2 * 3 * 32];
    cr_assert_eq(vkbert_attention_forward_host(NULL, 2, 3, x, NULL, NULL, y), BAD);
    EXPECT(ctx, vkbert_attention_forward_host(layer, 0, 3, x, NULL, NULL, y), BAD);
    EXPECT(ctx, vkbert_attention_forward_host(layer, 2, -1, x, NULL, NULL, y), BAD);
    EXPECT(ctx, vkbert_attention_forward_host(layer, 2, 3, NULL, NULL, NULL, y), BAD);
    EXPECT(ctx, vkbert_attention_forward_host(layer, 2, 3, x, NULL, NULL, NULL), BAD);
    /* B*S*E overflows 32 and 64-bit byte counts on the way: refused, never run. */
    huge = vkbert_attention_forward_host(layer, 1 << 30, 1 << 30, x, NULL, NULL, y);
    cr_assert(huge == BAD || huge == VKBERT_ERROR_DEVICE_LIMIT, "%s: %s", vkbert_status_name(huge),
              vkbert_last_error(ctx));
    huge = vkbert_attention_forward_host(layer, INT32_MAX, INT32_MAX, x, NULL, NULL, y);
    cr_assert(huge == BAD || huge == VKBERT_ERROR_DEVICE_LIMIT, "%s: %s", vkbert_status_name(huge),
              vkbert_last_error(ctx));
    uint8_t keep[6] = {1, 1, 1, 1, 1, 1};
    vkbert_mask wrong = {sizeof(vkbert_mask), keep, VKBERT_DTYPE_UINT8, 2, {3, 2}};
    EXPECT(ctx, vkbert_attention_forward_host(layer, 2, 3, x, &wrong, NULL, y), BAD);
    vkbert_mask no_data = {sizeof(vkbert_mask), NULL, VKBERT_DTYPE_UINT8, 2, {2, 3}};
    EXPECT(ctx, vkbert_attention_forward_host(layer, 2, 3, x, &no_data, NULL, y), BAD);
    vkbert_mask bad_dtype = {sizeof(vkbert_mask), keep, (vkbert_dtype)42, 2, {2, 3}};
    EXPECT(ctx, vkbert_attention_forward_host(layer, 2, 3, x, &bad_dtype, NULL, y), BAD);
    vkbert_mask bad_ndim = {sizeof(vkbert_mask), keep, VKBERT_DTYPE_UINT8, 7, {2, 3}};
    EXPECT(ctx, vkbert_attention_forward_host(layer, 2, 3, x, &bad_ndim, NULL, y), BAD);
    vkbert_attention_options nan_dropout = {.struct_size = sizeof(vkbert_attention_options),
                                            .dropout = NAN};
    EXPECT(ctx, vkbert_attention_forward_host(layer, 2, 3, x, NULL, &nan_dropout, y), BAD);
    vkbert_attention_options big_dropout = {.struct_size = sizeof(vkbert_attention_options),
                                            .dropout = 1.5f};
    EXPECT(ctx, vkbert_attention_forward_host(layer, 2, 3, x, NULL, &big_dropout, y), BAD);

    vkbert_tensor *tx = NULL, *ty = NULL, *other = NULL;
    int64_t shape[3] = {2, 3, 32}, shorter[3] = {2, 4, 32}, wide[3] = {2, 3, 16};
    TEST_OK(vkbert_tensor_create(ctx, 3, shape, &tx));
    TEST_OK(vkbert_tensor_create(ctx, 3, shorter, &ty));
    TEST_OK(vkbert_tensor_create(ctx, 3, wide, &other));
    EXPECT(ctx, vkbert_attention_forward(layer, NULL, NULL, NULL, ty), BAD);
    EXPECT(ctx, vkbert_attention_forward(layer, tx, NULL, NULL, NULL), BAD);
    EXPECT(ctx, vkbert_attention_forward(layer, tx, NULL, NULL, ty), BAD);
    EXPECT(ctx, vkbert_attention_forward(layer, other, NULL, NULL, other), BAD);
    cr_assert_eq(vkbert_attention_forward(NULL, tx, NULL, NULL, tx), BAD);
    uint32_t count = 0;
    EXPECT(ctx, vkbert_attention_timings(layer, NULL, 0, &count), BAD); /* no timestamps */
    cr_assert_eq(vkbert_attention_timings(layer, NULL, 0, NULL), BAD);
    TEST_OK(vkbert_attention_forward_host(layer, 2, 3, x, NULL, NULL, y));
    vkbert_tensor_destroy(ctx, tx), vkbert_tensor_destroy(ctx, ty),
        vkbert_tensor_destroy(ctx, other);
    vkbert_attention_destroy(layer);
    vkbert_attention_destroy(NULL);
    test_weights_free(&w);
    test_context_done(ctx);
}

/* A layer written with a prefix and read back through the public call, then its bad
 * arguments and files: each a status and a message, with no context. */
Test(api_args, attention_weights_load, .init = test_tmpdir_setup, .fini = test_tmpdir_teardown)
{
    static const char *const suffixes[8] = {"q_proj.weight",   "q_proj.bias",   "k_proj.weight",
                                            "k_proj.bias",     "v_proj.weight", "v_proj.bias",
                                            "out_proj.weight", "out_proj.bias"};
    test_weights w = test_weights_random(8, 3);
    vkbert_attention_weights api = test_weights_api(&w);
    const float *data[8] = {api.q_weight, api.q_bias, api.k_weight,   api.k_bias,
                            api.v_weight, api.v_bias, api.out_weight, api.out_bias};
    char names[8][64], path[256], err[512];
    const char *name_ptrs[8];
    st_dtype dtypes[8];
    int ndims[8];
    int64_t weight_shape[2] = {8, 8}, bias_shape[1] = {8};
    const int64_t *shapes[8];
    for (int i = 0; i < 8; i++) {
        snprintf(names[i], sizeof names[i], "attn.%s", suffixes[i]);
        name_ptrs[i] = names[i], dtypes[i] = ST_F32, ndims[i] = i % 2 ? 1 : 2;
        shapes[i] = i % 2 ? bias_shape : weight_shape;
    }
    test_tmp_path(path, "layer.safetensors");
    cr_assert_eq(st_save(path, 8, name_ptrs, dtypes, ndims, shapes, data, err, sizeof err), 0, "%s",
                 err);
    vkbert_attention_weights got = VKBERT_ATTENTION_WEIGHTS_INIT;
    int e = 0;
    cr_assert_eq(vkbert_attention_weights_load(path, &got, &e), VKBERT_OK, "%s",
                 vkbert_last_error(NULL));
    cr_assert_eq(e, 8);
    const float *read[8] = {got.q_weight, got.q_bias, got.k_weight,   got.k_bias,
                            got.v_weight, got.v_bias, got.out_weight, got.out_bias};
    for (int i = 0; i < 8; i++)
        cr_assert_arr_eq(read[i], data[i], (i % 2 ? 8 : 64) * sizeof(float), "%s", names[i]);
    vkbert_attention_weights_free(&got);
    cr_assert_null(got.q_weight);
    cr_assert_eq(got.struct_size, sizeof got);
    vkbert_attention_weights_free(NULL);

    vkbert_attention_weights unset = {0};
    EXPECT(NULL, vkbert_attention_weights_load(NULL, &got, &e), BAD);
    EXPECT(NULL, vkbert_attention_weights_load(path, NULL, &e), BAD);
    EXPECT(NULL, vkbert_attention_weights_load(path, &got, NULL), BAD);
    EXPECT(NULL, vkbert_attention_weights_load(path, &unset, &e), BAD);
    test_tmp_path(path, "absent.safetensors");
    EXPECT(NULL, vkbert_attention_weights_load(path, &got, &e), BAD);
    cr_assert(strstr(vkbert_last_error(NULL), path), "%s", vkbert_last_error(NULL));
    test_weights_free(&w);
}

Test(api_args, encoder_and_bench_calls)
{
    vkbert_context *ctx = test_context(1);
    vkbert_encoder *e = NULL;
    cr_assert_eq(vkbert_encoder_load(NULL, "/nonexistent", NULL, &e), BAD);
    EXPECT(ctx, vkbert_encoder_load(ctx, NULL, NULL, &e), BAD);
    EXPECT(ctx, vkbert_encoder_load(ctx, "/nonexistent", NULL, NULL), BAD);
    EXPECT(ctx, vkbert_encoder_load(ctx, "/nonexistent", NULL, &e), BAD);
    cr_assert(strstr(vkbert_last_error(ctx), "/nonexistent"), "%s", vkbert_last_error(ctx));
    vkbert_encoder_config odd = {sizeof(vkbert_encoder_config), (vkbert_precision)9};
    EXPECT(ctx, vkbert_encoder_load(ctx, "/nonexistent", &odd, &e), BAD);
    cr_assert_null(e);
    int32_t ids[4] = {0};
    float out[64];
    cr_assert_eq(vkbert_encoder_forward_host(NULL, 1, 4, ids, NULL, NULL, out, NULL), BAD);
    cr_assert_eq(vkbert_encoder_embed_host(NULL, 1, 4, ids, NULL, NULL, 1, out), BAD);
    cr_assert_eq(vkbert_encoder_hidden_size(NULL), 0);
    vkbert_encoder_destroy(NULL);

    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    vkbert_peaks peaks = VKBERT_PEAKS_INIT;
    cr_assert_eq(vkbert_measure_peaks(NULL, &peaks), BAD);
    EXPECT(ctx, vkbert_measure_peaks(ctx, NULL), BAD);
    EXPECT(ctx, vkbert_bench_matmul(ctx, 0, 8, 8, VKBERT_PRECISION_FP32, 1, &r), BAD);
    EXPECT(ctx, vkbert_bench_matmul(ctx, 8, -8, 8, VKBERT_PRECISION_FP32, 1, &r), BAD);
    EXPECT(ctx, vkbert_bench_matmul(ctx, 8, 8, 8, VKBERT_PRECISION_FP32, 0, &r), BAD);
    EXPECT(ctx, vkbert_bench_matmul(ctx, 8, 8, 8, VKBERT_PRECISION_FP32, 1, NULL), BAD);
    EXPECT(ctx, vkbert_bench_matmul(ctx, 8, 8, 8, (vkbert_precision)5, 1, &r), BAD);
    EXPECT(ctx, vkbert_bench_attention(ctx, 1, 8, 30, 4, VKBERT_PRECISION_FP32, 1, &r), BAD);
    EXPECT(ctx, vkbert_bench_attention(ctx, 0, 8, 32, 4, VKBERT_PRECISION_FP32, 1, &r), BAD);
    EXPECT(ctx, vkbert_bench_encoder(ctx, NULL, VKBERT_PRECISION_FP32, 1, &r), BAD);
    vkbert_bench_encoder_shape bad = {
        sizeof(vkbert_bench_encoder_shape), 2, 30, 4, 64, 100, 1, 8, NULL, 0, 0};
    EXPECT(ctx, vkbert_bench_encoder(ctx, &bad, VKBERT_PRECISION_FP32, 1, &r), BAD);
    test_context_done(ctx);
}

/* A NULL handle that would name the context: the thread's message, naming the call. */
#define EXPECT_NULL_HANDLE(call, want, function)                                                   \
    do {                                                                                           \
        vkb_fail_global(VKBERT_OK, "stale");                                                       \
        cr_assert_eq((call), (want), "%s", #call);                                                 \
        cr_assert(strstr(vkbert_last_error(NULL), function), "%s: \"%s\"", #call,                  \
                  vkbert_last_error(NULL));                                                        \
    } while (0)

Test(api_args, null_handles_leave_a_message)
{
    char text[8];
    uint64_t bytes;
    double ms;
    int64_t shape[4] = {1, 1, 1, 4};
    float data[4] = {0};
    int32_t ids[1] = {0};
    const char *texts[1] = {"a"};
    vkbert_tensor *t = NULL;
    vkbert_attention *layer = NULL;
    vkbert_encoder *encoder = NULL;
    vkbert_model *model = NULL;
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    vkbert_encoding encoding = VKBERT_ENCODING_INIT;
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    vkbert_peaks peaks = VKBERT_PEAKS_INIT;
    vkbert_bench_encoder_shape es = VKBERT_BENCH_ENCODER_SHAPE_INIT;
    uint32_t count;
    char *json;
    EXPECT_NULL_HANDLE(vkbert_context_device(NULL, &info), BAD, "vkbert_context_device");
    EXPECT_NULL_HANDLE(vkbert_context_startup_ms(NULL, &ms, &ms), BAD, "startup_ms");
    EXPECT_NULL_HANDLE(vkbert_context_memory(NULL, &bytes, &bytes), BAD, "context_memory");
    EXPECT_NULL_HANDLE(vkbert_validation_messages(NULL, text, 8), 0, "validation_messages");
    EXPECT_NULL_HANDLE(vkbert_tune_save(NULL, "{}", NULL, 0), BAD, "vkbert_tune_save");
    EXPECT_NULL_HANDLE(vkbert_tensor_create(NULL, 4, shape, &t), BAD, "vkbert_tensor_create");
    EXPECT_NULL_HANDLE(vkbert_tensor_write(NULL, t, data, 4), BAD, "vkbert_tensor_write");
    EXPECT_NULL_HANDLE(vkbert_tensor_read(NULL, t, data, 4), BAD, "vkbert_tensor_read");
    EXPECT_NULL_HANDLE(vkbert_tensor_shape(NULL, shape), 0, "vkbert_tensor_shape");
    vkbert_attention_weights w = VKBERT_ATTENTION_WEIGHTS_INIT;
    EXPECT_NULL_HANDLE(vkbert_attention_create(NULL, 4, 1, &w, NULL, &layer), BAD,
                       "vkbert_attention_create");
    EXPECT_NULL_HANDLE(vkbert_attention_forward(NULL, t, NULL, NULL, t), BAD,
                       "vkbert_attention_forward");
    EXPECT_NULL_HANDLE(vkbert_attention_forward_host(NULL, 1, 1, data, NULL, NULL, data), BAD,
                       "vkbert_attention_forward_host");
    EXPECT_NULL_HANDLE(vkbert_attention_timings(NULL, NULL, 0, &count), BAD,
                       "vkbert_attention_timings");
    EXPECT_NULL_HANDLE(vkbert_encoder_load(NULL, "/nonexistent", NULL, &encoder), BAD,
                       "vkbert_encoder_load");
    EXPECT_NULL_HANDLE(vkbert_encoder_hidden_size(NULL), 0, "vkbert_encoder_hidden_size");
    EXPECT_NULL_HANDLE(vkbert_encoder_forward_host(NULL, 1, 1, ids, NULL, NULL, data, NULL), BAD,
                       "vkbert_encoder_forward_host");
    EXPECT_NULL_HANDLE(vkbert_encoder_embed_host(NULL, 1, 1, ids, NULL, NULL, 1, data), BAD,
                       "vkbert_encoder_embed_host");
    EXPECT_NULL_HANDLE(vkbert_tokenizer_max_length(NULL), 0, "vkbert_tokenizer_max_length");
    EXPECT_NULL_HANDLE(vkbert_tokenizer_encode(NULL, "a", NULL, 0, &encoding), BAD,
                       "vkbert_tokenizer_encode");
    char *decoded = NULL;
    EXPECT_NULL_HANDLE(vkbert_tokenizer_decode(NULL, ids, 1, 1, &decoded), BAD,
                       "vkbert_tokenizer_decode");
    cr_assert_null(decoded);
    EXPECT_NULL_HANDLE(vkbert_tokenizer_token(NULL, 0), NULL, "vkbert_tokenizer_token");
    EXPECT_NULL_HANDLE(vkbert_tokenizer_token_id(NULL, "a"), -1, "vkbert_tokenizer_token_id");
    EXPECT_NULL_HANDLE(vkbert_model_load(NULL, "/nonexistent", NULL, &model), BAD,
                       "vkbert_model_load");
    EXPECT_NULL_HANDLE(vkbert_model_dimension(NULL), 0, "vkbert_model_dimension");
    EXPECT_NULL_HANDLE(vkbert_model_tokenizer(NULL), NULL, "vkbert_model_tokenizer");
    EXPECT_NULL_HANDLE(vkbert_model_labels(NULL), 0, "vkbert_model_labels");
    EXPECT_NULL_HANDLE(vkbert_model_label(NULL, 0), NULL, "vkbert_model_label");
    EXPECT_NULL_HANDLE(vkbert_model_embed(NULL, texts, 1, NULL, data), BAD, "vkbert_model_embed");
    EXPECT_NULL_HANDLE(vkbert_model_rerank(NULL, "q", texts, 1, 0, data), BAD,
                       "vkbert_model_rerank");
    EXPECT_NULL_HANDLE(vkbert_model_classify(NULL, texts, 1, data), BAD, "vkbert_model_classify");
    vkbert_encoding input = VKBERT_ENCODING_INIT;
    EXPECT_NULL_HANDLE(vkbert_model_encode(NULL, "a", NULL, NULL, &input), BAD,
                       "vkbert_model_encode");
    input.ids = ids, input.count = 1;
    EXPECT_NULL_HANDLE(vkbert_model_embed_inputs(NULL, &input, 1, 0, data), BAD,
                       "vkbert_model_embed_inputs");
    EXPECT_NULL_HANDLE(vkbert_model_score_inputs(NULL, &input, 1, 0, data), BAD,
                       "vkbert_model_score_inputs");
    vkbert_encoding_free(NULL); /* nothing to free, no crash */
    EXPECT_NULL_HANDLE(vkbert_bench_override(NULL, "VKBERT_KERNELS", "gpu"), BAD,
                       "vkbert_bench_override");
    EXPECT_NULL_HANDLE(vkbert_tensor_create_typed(NULL, VKBERT_DTYPE_INT32, 4, shape, &t), BAD,
                       "vkbert_tensor_create_typed");
    EXPECT_NULL_HANDLE(vkbert_tensor_write_int32(NULL, t, ids, 1), BAD,
                       "vkbert_tensor_write_int32");
    EXPECT_NULL_HANDLE(vkbert_tensor_read_int32(NULL, t, ids, 1), BAD, "vkbert_tensor_read_int32");
    EXPECT_NULL_HANDLE(vkbert_encoder_forward(NULL, t, NULL, NULL, t, NULL), BAD,
                       "vkbert_encoder_forward");
    EXPECT_NULL_HANDLE(vkbert_encoder_embed(NULL, t, NULL, NULL, 1, t), BAD,
                       "vkbert_encoder_embed");
    vkbert_job *job = NULL;
    EXPECT_NULL_HANDLE(vkbert_encoder_embed_submit(NULL, 1, 1, ids, NULL, NULL, 1, data, &job), BAD,
                       "vkbert_encoder_embed_submit");
    EXPECT_NULL_HANDLE(vkbert_encoder_forward_submit(NULL, 1, 1, ids, NULL, NULL, data, NULL, &job),
                       BAD, "vkbert_encoder_forward_submit");
    EXPECT_NULL_HANDLE(vkbert_job_poll(NULL), BAD, "job");
    EXPECT_NULL_HANDLE(vkbert_job_wait(NULL), BAD, "job");
    EXPECT_NULL_HANDLE(vkbert_model_describe(NULL, &json), BAD, "vkbert_model_describe");
    EXPECT_NULL_HANDLE(vkbert_measure_peaks(NULL, &peaks), BAD, "vkbert_measure_peaks");
    EXPECT_NULL_HANDLE(vkbert_bench_matmul(NULL, 8, 8, 8, VKBERT_PRECISION_FP32, 1, &r), BAD,
                       "vkbert_bench_matmul");
    EXPECT_NULL_HANDLE(vkbert_bench_attention(NULL, 1, 8, 32, 4, VKBERT_PRECISION_FP32, 1, &r), BAD,
                       "vkbert_bench_attention");
    EXPECT_NULL_HANDLE(vkbert_bench_encoder(NULL, &es, VKBERT_PRECISION_FP32, 1, &r), BAD,
                       "vkbert_bench_encoder");
}
