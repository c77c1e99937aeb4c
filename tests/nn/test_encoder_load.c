/* Loading an encoder (vkb_encoder_new): called without the context's lock and returning without
 * it, whether it succeeds or fails; the same bytes in every device buffer whatever the number
 * of load workers, for F32 and F16 files at fp32, fp16 and int8 precision; a failure inside a
 * worker, or at any device allocation, is a clear error that leaves nothing behind. */
#include "io/bert_model.h"
#include "nn/encoder/encoder.h"
#include "support.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Hidden 36 (padded to 36, 3 heads of 12), intermediate 70 (padded to 72), 5 layers: more
 * tasks than workers. */
static bert_config config(void)
{
    return tiny_bert_config(36, 5, 3, 70, 24, 97);
}

/* The encoder loaded with `threads` workers (VKBERT_LOAD_THREADS as the context read it). */
static vkbert_status load(vkbert_context *ctx, const bert_model *m, vkbert_precision precision,
                          uint32_t threads, vkbert_encoder **out)
{
    ctx->env.load_threads = threads;
    vkbert_status status = vkb_encoder_new(ctx, &m->config, &m->weights, precision, out);
    /* The lock is free again: a public call on this thread would deadlock otherwise. */
    vkbert_tensor *t = NULL;
    int64_t shape[1] = {3};
    TEST_OK(vkbert_tensor_create(ctx, 1, shape, &t));
    vkbert_tensor_destroy(ctx, t);
    return status;
}

/* Every byte of `buffer`, poisoned first. */
static uint8_t *contents(vkbert_context *ctx, const vkb_buffer *buffer)
{
    uint8_t *bytes = malloc(buffer->size);
    cr_assert_not_null(bytes);
    memset(bytes, 0xA5, buffer->size);
    vkb_lock(ctx);
    vkbert_status status = vkb_buffer_download(ctx, buffer, 0, bytes, buffer->size);
    vkb_unlock(ctx);
    TEST_OK(status);
    return bytes;
}

static void same_buffer(vkbert_context *ctx, const vkb_buffer *a, const vkb_buffer *b,
                        const char *what, int index)
{
    cr_assert_eq(a->size, b->size, "%s %d: sizes differ", what, index);
    uint8_t *x = contents(ctx, a), *y = contents(ctx, b);
    size_t first = 0;
    while (first < a->size && x[first] == y[first])
        first++;
    cr_assert_eq(first, a->size, "%s %d: byte %zu of %llu differs", what, index, first,
                 (unsigned long long)a->size);
    free(x);
    free(y);
}

/* Every weight buffer of the two encoders holds the same bytes. */
static void same_weights(vkbert_context *ctx, const vkbert_encoder *a, const vkbert_encoder *b)
{
    cr_assert_eq(a->word_chunks, b->word_chunks);
    for (uint32_t k = 0; k < a->word_chunks; k++)
        same_buffer(ctx, &a->word[k], &b->word[k], "word chunk", (int)k);
    same_buffer(ctx, &a->tables, &b->tables, "tables", 0);
    same_buffer(ctx, &a->dense, &b->dense, "dense", 0);
    same_buffer(ctx, &a->params, &b->params, "params", 0);
    for (int l = 0; l < a->config.num_hidden_layers; l++) {
        same_buffer(ctx, &a->attention[l]->weights, &b->attention[l]->weights, "attention", l);
        same_buffer(ctx, &a->attention[l]->biases, &b->attention[l]->biases, "biases", l);
    }
}

/* A folder written as F32 or F16 and loaded back: weights read through the file's sources. */
static void write_and_read(bert_model *m, int f16, char *dir)
{
    test_dir_make(dir, "load");
    tiny_bert_write(dir, &(tiny_bert){.config = config(), .seed = 31, .f16 = f16, .prefix = ""},
                    NULL);
    char err[256];
    cr_assert_eq(bert_model_load(dir, m, err, sizeof err), 0, "%s", err);
}

static void check_threads_agree(int f16, vkbert_precision precision)
{
    char dir[TEST_DIR_SIZE];
    bert_model m;
    write_and_read(&m, f16, dir);
    vkbert_context *ctx = test_context(0);
    vkbert_encoder *one = NULL, *many = NULL;
    TEST_OK(load(ctx, &m, precision, 1, &one));
    TEST_OK(load(ctx, &m, precision, 3, &many));
    same_weights(ctx, one, many);
    /* And the weights are there: the first word row is not the poison, nor all zeros. */
    uint8_t *word = contents(ctx, &one->word[0]);
    bool nonzero = false;
    for (size_t i = 0; i < 16; i++)
        nonzero = nonzero || word[i];
    cr_assert(nonzero, "the word table was not written");
    free(word);
    vkbert_encoder_destroy(one);
    vkbert_encoder_destroy(many);
    test_context_done(ctx);
    bert_model_free(&m);
    test_dir_remove(dir);
}

Test(encoder_load, workers_write_the_same_bytes_f32)
{
    check_threads_agree(0, VKBERT_PRECISION_FP32);
}

Test(encoder_load, workers_write_the_same_bytes_f16_file)
{
    check_threads_agree(1, VKBERT_PRECISION_FP32);
}

Test(encoder_load, workers_write_the_same_bytes_fp16)
{
    check_threads_agree(1, VKBERT_PRECISION_FP16);
}

Test(encoder_load, workers_write_the_same_bytes_int8)
{
    check_threads_agree(0, VKBERT_PRECISION_INT8);
}

/* Device memory in use after a load of these weights came and went: with staged copies
 * (VKBERT_FORCE_STAGING=1) the context's staging buffer, made on first use and kept, is part
 * of it; a failed load must leave the same. */
static VkDeviceSize warm_load(vkbert_context *ctx, const bert_config *c, const bert_weights *w,
                              vkbert_precision precision)
{
    vkbert_encoder *e = NULL;
    TEST_OK(vkb_encoder_new(ctx, c, w, precision, &e));
    vkbert_encoder_destroy(e);
    return ctx->in_use_bytes;
}

/* A non-finite weight in the last layer: found by a worker (the attention's check, or int8's
 * quantizing), reported as the load's error, and nothing is left of the load. */
static void check_worker_failure(vkbert_precision precision, uint32_t threads)
{
    bert_config c = config();
    bert_weights w;
    cr_assert_eq(bert_weights_random(&c, 7, &w), 0);
    int last = c.num_hidden_layers - 1;
    bool q8 = precision == VKBERT_PRECISION_INT8;
    float *poisoned = q8 ? w.layers[last].inter_w : w.layers[last].k_w, kept = poisoned[5];
    vkbert_context *ctx = test_context(0);
    ctx->env.load_threads = threads;
    VkDeviceSize in_use = warm_load(ctx, &c, &w, precision);
    poisoned[5] = NAN;
    vkbert_encoder *e = (vkbert_encoder *)&e; /* must be reset */
    cr_assert_eq(vkb_encoder_new(ctx, &c, &w, precision, &e), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(e);
    const char *message = vkbert_last_error(ctx);
    cr_assert(strstr(message, q8 ? "intermediate.dense.weight" : "k_weight[5] is not finite"), "%s",
              message);
    cr_assert_eq(ctx->in_use_bytes, in_use, "buffers left behind");
    /* The context works on, and the same weights, finite again, load. */
    poisoned[5] = kept;
    TEST_OK(vkb_encoder_new(ctx, &c, &w, precision, &e));
    vkbert_encoder_destroy(e);
    test_context_done(ctx);
    bert_weights_free(&w);
}

Test(encoder_load, a_worker_failure_is_the_load_error)
{
    check_worker_failure(VKBERT_PRECISION_FP32, 1);
    check_worker_failure(VKBERT_PRECISION_FP32, 3);
    check_worker_failure(VKBERT_PRECISION_INT8, 1);
    check_worker_failure(VKBERT_PRECISION_INT8, 3);
}

/* Out of device memory at each allocation a load makes, in turn: the error, nothing left. */
Test(encoder_load, out_of_memory_at_every_allocation_of_a_load)
{
    bert_config c = config();
    bert_weights w;
    cr_assert_eq(bert_weights_random(&c, 9, &w), 0);
    vkbert_context *ctx = test_context(0);
    ctx->env.load_threads = 2;
    VkDeviceSize in_use = warm_load(ctx, &c, &w, VKBERT_PRECISION_FP32);
    uint32_t failures = 0;
    for (uint32_t n = 1;; n++) {
        ctx->allocation_count = 0;
        ctx->fail_allocation_at = n;
        vkbert_encoder *e = NULL;
        vkbert_status status = vkb_encoder_new(ctx, &c, &w, VKBERT_PRECISION_FP32, &e);
        ctx->fail_allocation_at = 0;
        if (status == VKBERT_OK) {
            vkbert_encoder_destroy(e);
            break;
        }
        failures++;
        cr_assert_eq(status, VKBERT_ERROR_OUT_OF_MEMORY, "%s", vkbert_last_error(ctx));
        cr_assert(strstr(vkbert_last_error(ctx), "injected"), "%s", vkbert_last_error(ctx));
        cr_assert_null(e);
        cr_assert_eq(ctx->in_use_bytes, in_use, "allocation %u: buffers left behind", n);
        cr_assert_lt(n, 200);
    }
    cr_assert_geq(failures, 2u + (uint32_t)c.num_hidden_layers * 2);
    test_context_done(ctx);
    bert_weights_free(&w);
}

/* A bad config fails before anything is made, and the lock is let go on that path too. */
Test(encoder_load, a_refused_load_returns_without_the_lock)
{
    bert_config c = config();
    bert_weights w;
    cr_assert_eq(bert_weights_random(&c, 3, &w), 0);
    strcpy(c.hidden_act, "relu");
    vkbert_context *ctx = test_context(0);
    vkbert_encoder *e = NULL;
    cr_assert_eq(load(ctx, &(bert_model){.config = c, .weights = w}, VKBERT_PRECISION_FP32, 2, &e),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_null(e);
    test_context_done(ctx);
    bert_weights_free(&w);
}
