/* The BERT encoder end to end: a random HuggingFace folder written by the test, loaded by the
 * library, run on padded batches, against the double-precision BertModel reference. */
#include "io/bert_model.h"
#include "nn/encoder/encoder.h"
#include "reference_bert.h"
#include "support.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct model_case {
    bert_config config;
    int batch, seq_len;
} model_case;

static bert_config config(int hidden, int layers, int heads, int inter)
{
    return tiny_bert_config(hidden, layers, heads, inter, 40, 50);
}

/* Random weights written as a HuggingFace folder in a new temp dir (TEST_DIR_SIZE bytes);
 * with f16 the weights are rounded to binary16 as the file holds them, so the reference uses
 * the file's values. */
static void write_model(const bert_config *c, uint64_t seed, int f16, const char *prefix, char *dir,
                        bert_weights *w)
{
    test_dir_make(dir, "encoder");
    tiny_bert spec = {.config = *c, .seed = seed, .f16 = f16, .keep_f16 = 1, .prefix = prefix};
    tiny_bert_write(dir, &spec, w);
}

/* Mean pooling over the unmasked tokens of the reference's hidden states, and normalized. */
static void check_embeddings(vkbert_encoder *encoder, const model_case *mc, const int32_t *ids,
                             const int32_t *types, const int32_t *mask, const double *hidden)
{
    size_t h = (size_t)mc->config.hidden_size, s = (size_t)mc->seq_len;
    float *got = test_poisoned(mc->batch * h);
    double *want = calloc(mc->batch * h, sizeof *want);
    for (int normalize = 0; normalize < 2; normalize++) {
        TEST_OK(vkbert_encoder_embed_host(encoder, mc->batch, mc->seq_len, ids, types, mask,
                                          normalize, got));
        for (size_t b = 0; b < (size_t)mc->batch; b++) {
            double count = 0, norm = 0;
            for (size_t j = 0; j < h; j++)
                want[b * h + j] = 0;
            for (size_t t = 0; t < s; t++) {
                if (!mask[b * s + t]) continue;
                count++;
                for (size_t j = 0; j < h; j++)
                    want[b * h + j] += hidden[(b * s + t) * h + j];
            }
            for (size_t j = 0; j < h; j++) {
                want[b * h + j] = count ? want[b * h + j] / count : 0.0;
                norm += want[b * h + j] * want[b * h + j];
            }
            for (size_t j = 0; normalize && norm > 0 && j < h; j++)
                want[b * h + j] /= sqrt(norm);
        }
        ref_error e = ref_compare(got, want, mc->batch * h);
        cr_assert(e.relative_l2 <= 1e-4, "embeddings (normalize %d): relative L2 %.3g", normalize,
                  e.relative_l2);
    }
    free(got);
    free(want);
}

static void check(vkbert_context *ctx, model_case mc, int f16, const char *prefix, uint64_t seed)
{
    bert_config *c = &mc.config;
    bert_weights w;
    char dir[TEST_DIR_SIZE];
    write_model(c, seed, f16, prefix, dir, &w);
    vkbert_encoder *encoder = NULL;
    vkbert_status status = vkbert_encoder_load(ctx, dir, NULL, &encoder);
    cr_assert_eq(status, VKBERT_OK, "load: %s", vkbert_last_error(ctx));

    size_t n = (size_t)mc.batch * mc.seq_len, h = (size_t)c->hidden_size;
    int32_t *ids = malloc(n * 4), *types = malloc(n * 4), *mask = malloc(n * 4);
    ref_rng rng = {seed * 7};
    for (size_t i = 0; i < n; i++) {
        ids[i] = (int32_t)ref_uniform(&rng, 0, c->vocab_size);
        types[i] = (int32_t)ref_uniform(&rng, 0, 2);
        /* sequence b has seq_len - 2b real tokens; the last batch entry none at all */
        size_t b = i / mc.seq_len, s = i % mc.seq_len;
        mask[i] = b + 1 == (size_t)mc.batch && mc.batch > 2 ? 0 : s + 2 * b < (size_t)mc.seq_len;
    }
    float *hidden = test_poisoned(n * h), *pooled = test_poisoned(mc.batch * h);
    status = vkbert_encoder_forward_host(encoder, mc.batch, mc.seq_len, ids, types, mask, hidden,
                                         pooled);
    cr_assert_eq(status, VKBERT_OK, "forward: %s", vkbert_last_error(ctx));
    double *want = malloc(n * h * 8), *want_pooled = malloc(mc.batch * h * 8);
    ref_bert(c, &w, mc.batch, mc.seq_len, ids, types, mask, want, want_pooled);
    ref_error e = ref_compare(hidden, want, n * h),
              ep = ref_compare(pooled, want_pooled, mc.batch * h);
    cr_assert(e.relative_l2 <= 1e-4, "hidden: relative L2 %.3g > 1e-4 (H %d, %d layers)",
              e.relative_l2, c->hidden_size, c->num_hidden_layers);
    cr_assert(ep.relative_l2 <= 1e-4, "pooled: relative L2 %.3g > 1e-4", ep.relative_l2);
    check_embeddings(encoder, &mc, ids, types, mask, want);

    vkbert_encoder_destroy(encoder);
    bert_weights_free(&w);
    test_dir_remove(dir);
    free(ids), free(types), free(mask), free(hidden), free(pooled), free(want), free(want_pooled);
}

Test(encoder, random_models)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, (model_case){config(20, 2, 4, 36), 3, 7}, 0, "", 1); /* D 5, odd sizes */
    check(ctx, (model_case){config(64, 3, 4, 130), 2, 33}, 0, "bert.", 2);
    check(ctx, (model_case){config(48, 2, 3, 100), 4, 16}, 1, "", 3); /* F16 file */
    test_context_done(ctx);
}

Test(encoder, batches_over_a_limit_run_in_halves)
{
    /* The intermediate activations of 6 x 33 tokens (6 x 33 x 132 floats, 105 KiB) exceed a
     * 64 KiB storage range: forward and embeddings run in halves, still within 1e-4. */
    vkbert_context_options options = {.struct_size = sizeof(vkbert_context_options),
                                      .validation = 1,
                                      .limits = "max_storage_buffer_range=64k"};
    vkbert_context *ctx = NULL;
    TEST_OK(vkbert_context_create(&options, &ctx));
    check(ctx, (model_case){config(64, 2, 4, 130), 6, 33}, 0, "", 5);
    test_context_done(ctx);
}

Test(encoder, twelve_layers_within_1e4)
{
    /* docs/semantics.md's bound is stated for a 12-layer model: errors must not grow past it. */
    vkbert_context *ctx = test_context(0);
    check(ctx, (model_case){config(40, 12, 4, 72), 2, 19}, 0, "", 12);
    test_context_done(ctx);
}

Test(encoder, fp16_weights_within_fp16_bound)
{
    vkbert_context *ctx = test_context(0);
    bert_config c = config(40, 3, 4, 72);
    bert_weights w;
    char dir[TEST_DIR_SIZE];
    write_model(&c, 31, 0, "", dir, &w);
    vkbert_encoder_config fp16 = {sizeof(vkbert_encoder_config), VKBERT_PRECISION_FP16};
    vkbert_encoder *encoder = NULL;
    TEST_OK(vkbert_encoder_load(ctx, dir, &fp16, &encoder));
    int batch = 2, seq = 11;
    size_t n = (size_t)batch * seq, h = 40;
    int32_t ids[22];
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)((i * 13) % 50);
    float *hidden = test_poisoned(n * h);
    double *want = malloc(n * h * sizeof *want);
    TEST_OK(vkbert_encoder_forward_host(encoder, batch, seq, ids, NULL, NULL, hidden, NULL));
    ref_bert(&c, &w, batch, seq, ids, NULL, NULL, want, NULL);
    ref_error e = ref_compare(hidden, want, n * h);
    cr_assert(e.relative_l2 <= 3e-3, "fp16: relative L2 %.3g > 3e-3", e.relative_l2);
    cr_assert(e.relative_l2 > 1e-6, "fp16 weights gave fp32 accuracy: were they fp16?");
    vkbert_encoder_destroy(encoder);
    bert_weights_free(&w);
    test_dir_remove(dir);
    free(hidden);
    free(want);
    test_context_done(ctx);
}

Test(encoder, bad_inputs_are_errors)
{
    vkbert_context *ctx = test_context(0);
    bert_config c = config(16, 1, 2, 24);
    bert_weights w;
    char dir[TEST_DIR_SIZE];
    write_model(&c, 9, 0, "", dir, &w);
    vkbert_encoder *encoder = NULL;
    TEST_OK(vkbert_encoder_load(ctx, dir, NULL, &encoder));
    int32_t ids[41] = {0}, bad[2] = {3, 50};
    float out[41 * 16];
    cr_assert_eq(vkbert_encoder_forward_host(encoder, 1, 41, ids, NULL, NULL, out, NULL),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "max_position_embeddings"), "%s",
              vkbert_last_error(ctx));
    cr_assert_eq(vkbert_encoder_forward_host(encoder, 1, 2, bad, NULL, NULL, out, NULL),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "input_ids[1] = 50"), "%s", vkbert_last_error(ctx));
    TEST_OK(vkbert_encoder_forward_host(encoder, 1, 2, ids, NULL, NULL, out, NULL));
    vkbert_encoder_destroy(encoder);
    cr_assert_eq(vkbert_encoder_load(ctx, "/nonexistent/model", NULL, &encoder),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "config.json"), "%s", vkbert_last_error(ctx));
    char config[300];
    snprintf(config, sizeof config, "%s/model.safetensors", dir);
    FILE *f = fopen(config, "wb"); /* there, but not safetensors */
    cr_assert(f && fputs("not a header", f) >= 0 && fclose(f) == 0);
    cr_assert_eq(vkbert_encoder_load(ctx, dir, NULL, &encoder), VKBERT_ERROR_MALFORMED_FILE);
    cr_assert(strstr(vkbert_last_error(ctx), "model.safetensors"), "%s", vkbert_last_error(ctx));
    bert_weights_free(&w);
    test_dir_remove(dir);
    test_context_done(ctx);
}

/* A forward pass over ids on both sides of every edge between word chunks of `chunk_rows`
 * rows, then 0, the last id and random ones, against the double reference. */
static void check_chunk_edges(vkbert_encoder *encoder, const bert_config *c, const bert_weights *w,
                              uint32_t chunk_rows, double bound)
{
    enum { batch = 2, seq = 12, n = batch * seq };
    int32_t ids[n], types[n];
    int m = 0;
    for (uint32_t edge = chunk_rows; edge < (uint32_t)c->vocab_size && m + 2 <= n - 2;
         edge += chunk_rows) {
        ids[m++] = (int32_t)edge - 1;
        ids[m++] = (int32_t)edge;
    }
    ids[m++] = 0;
    ids[m++] = c->vocab_size - 1;
    ref_rng rng = {77};
    for (; m < n; m++)
        ids[m] = (int32_t)ref_uniform(&rng, 0, c->vocab_size);
    for (m = 0; m < n; m++)
        types[m] = m % 3 == 0;
    size_t h = (size_t)c->hidden_size;
    float *hidden = test_poisoned(n * h);
    double *want = malloc(n * h * sizeof *want);
    TEST_OK(vkbert_encoder_forward_host(encoder, batch, seq, ids, types, NULL, hidden, NULL));
    ref_bert(c, w, batch, seq, ids, types, NULL, want, NULL);
    ref_error e = ref_compare(hidden, want, n * h);
    cr_assert(e.relative_l2 <= bound, "%u word chunks: relative L2 %.3g > %.3g",
              encoder->word_chunks, e.relative_l2, bound);
    free(hidden);
    free(want);
}

/* 3000 x 32 floats (375 KiB) under a 64 KiB range: 512 rows a chunk as fp32, 1024 as fp16,
 * so 6 and 3 chunks; every other buffer of the model fits the range. */
static void check_word_table_over_the_range(int half)
{
    vkbert_context_options options = {.struct_size = sizeof(vkbert_context_options),
                                      .validation = 1,
                                      .limits = "max_storage_buffer_range=64k"};
    vkbert_context *ctx = NULL;
    TEST_OK(vkbert_context_create(&options, &ctx));
    bert_config c = config(32, 2, 4, 64);
    c.vocab_size = 3000;
    bert_weights w;
    char dir[TEST_DIR_SIZE];
    write_model(&c, 41, 0, "", dir, &w);
    vkbert_encoder_config precision = {sizeof(vkbert_encoder_config),
                                       half ? VKBERT_PRECISION_FP16 : VKBERT_PRECISION_FP32};
    vkbert_encoder *encoder = NULL;
    TEST_OK(vkbert_encoder_load(ctx, dir, &precision, &encoder));
    cr_assert_geq(encoder->word_chunks, 3u);
    /* fp16: docs/semantics.md's bound for fp16 weights, as fp16_weights_within_fp16_bound */
    check_chunk_edges(encoder, &c, &w, half ? 1024 : 512, half ? 3e-3 : 1e-4);
    vkbert_encoder_destroy(encoder);
    bert_weights_free(&w);
    test_dir_remove(dir);
    test_context_done(ctx);
}

Test(encoder, word_table_over_the_storage_range)
{
    check_word_table_over_the_range(0);
}

Test(encoder, word_table_over_the_storage_range_fp16)
{
    check_word_table_over_the_range(1);
}

Test(encoder, multilingual_vocabulary_over_the_devices_range)
{
    /* bert-base-multilingual-cased's 119547 words at H 288: a 138 MB table, over lavapipe's
     * (and the Vulkan minimum's) 128 MiB range. One small layer keeps the test's memory to
     * the table twice (host weights, device chunks); the model goes straight from memory. */
    vkbert_context *ctx = test_context(0);
    bert_config c = config(288, 1, 4, 64);
    c.vocab_size = 119547;
    bert_weights w;
    cr_assert_eq(bert_weights_random(&c, 43, &w), 0);
    vkbert_encoder *encoder = NULL;
    vkbert_status loaded = vkb_encoder_new(ctx, &c, &w, VKBERT_PRECISION_FP32, &encoder);
    TEST_OK(loaded);
    uint64_t row = 288 * 4, range = ctx->props.limits.maxStorageBufferRange;
    if (range < (uint64_t)c.vocab_size * row) cr_assert_geq(encoder->word_chunks, 2u);
    check_chunk_edges(encoder, &c, &w, encoder->word_rows, 1e-4);
    vkbert_encoder_destroy(encoder);
    bert_weights_free(&w);
    test_context_done(ctx);
}
